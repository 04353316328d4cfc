# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part threads (issue 31 P2): thread and process against
report --stat of the same trace -- every thread report lists by on-CPU
time has that name and pid in thread (utid == tid for one trace, upid ==
pid), every utid raw gives an event is a thread row, and every upid of a
thread is a process row whose name is its leader's."""

from sql_check import check


def stat_names(text):
    """report --stat's threads table: {tid: (comm, pid or None)}."""
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines)
                if l.startswith('threads by on-CPU time'))
    out = {}
    for l in lines[head + 2:]:
        if not l.startswith('  '):
            break
        tid, pid = l.split()[-4:-2]
        # comm is printed in 20 columns (a comm holds at most 15 bytes).
        out[int(tid)] = (l[2:22].rstrip(), None if pid == '-' else int(pid))
    return out


def check_threads(db):
    want = stat_names(db.report_stat())
    check(want, 'report --stat of %s lists no thread' % db.dir)
    rows = db.rows('SELECT utid, tid, name, upid, is_idle FROM thread')
    got = {r['tid']: r for r in rows}
    check(len(got) == len(rows), 'thread has a tid twice')
    check(all(r['utid'] == r['tid'] for r in rows), 'utid != tid in one trace')
    for tid, (comm, pid) in want.items():
        r = got.get(tid)
        check(r and r['name'] == comm and r['upid'] == pid,
              'tid %d: thread says %s, report --stat %r pid %s' % (tid, r, comm, pid))
    check(got.get(0, {}).get('is_idle') == 1 and
          sum(r['is_idle'] for r in rows) == 1, 'the idle task is not one row')
    owners = {r['utid'] for r in db.rows('SELECT DISTINCT utid FROM raw WHERE utid IS NOT NULL')}
    check(owners <= set(got), 'threads of events missing from thread: %s' %
          sorted(owners - set(got))[:10])
    procs = {r['upid']: r for r in db.rows('SELECT upid, pid, name FROM process')}
    for r in rows:
        if r['upid'] is None:
            continue
        p = procs.get(r['upid'])
        check(p is not None, 'tid %d: upid %d not in process' % (r['tid'], r['upid']))
        lead = got.get(p['pid'])
        check(p['name'] == (lead['name'] if lead else None),
              'process %d named %r, its leader %r' % (p['pid'], p['name'], lead))
