# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part sched (issue 31 P3): sched_slice and thread_state
against report --stat of the same trace -- the Running spans of each
thread summed are its on_cpu_ms in "threads by on-CPU time" (at report's
rounding, every thread report lists, and no thread report leaves out
runs longer than the last it lists), sched_slice sums to the same, and
the slices are thread_state's Running spans one for one."""

from sql_check import check


def stat_threads(text):
    """report --stat's threads by on-CPU time: {tid: (pid or None,
    on_cpu_ms as printed)}, and whether the table was cut at 25."""
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines)
                if l.startswith('threads by on-CPU time'))
    out = {}
    for l in lines[head + 2:]:
        if not l.startswith('  '):
            break
        # comm and cgroup may hold spaces: tid, pid, ms, switches are the last four.
        tid, pid, ms = l.split()[-4:-1]
        out[int(tid)] = (None if pid == '-' else int(pid), ms)
    return out, len(out) == 25


def on_cpu(db, table, where=''):
    """{utid: total dur} of @table's rows."""
    return {r['utid']: r['d'] for r in db.rows(
        'SELECT utid, sum(dur) d FROM %s %s GROUP BY utid' % (table, where))}


def agrees_on_cpu(name, got, text):
    want, cut = stat_threads(text)
    mine = {u: d for u, d in got.items() if u is not None and u & 0xffffffff}
    for tid, (_, ms) in want.items():
        check('%.3f' % (mine.get(tid, 0) / 1e6) == ms,
              '%s: tid %d runs %s ms, report --stat %s ms' %
              (name, tid, '%.3f' % (mine.get(tid, 0) / 1e6), ms))
    rest = {u: d for u, d in mine.items() if u not in want and d}
    if cut:
        least = min(float(ms) for _, ms in want.values())
        over = {u: d for u, d in rest.items() if round(d / 1e6, 3) > least}
        check(not over, '%s: threads report leaves out run longer: %s' % (name, over))
    else:
        check(not rest, '%s: threads report does not list: %s' % (name, sorted(rest.items())))
    return len(want)


def check_sched(db):
    text = db.report_stat()
    running = on_cpu(db, 'thread_state', "WHERE state = 'Running'")
    n = agrees_on_cpu('thread_state Running', running, text)
    check(n, 'report --stat of %s lists no thread on a CPU' % db.dir)
    agrees_on_cpu('sched_slice', on_cpu(db, 'sched_slice'), text)
    key = lambda r: (r['ts'], r['dur'], r['cpu'], r['utid'])  # noqa: E731
    slices = sorted(map(key, db.rows('SELECT ts, dur, cpu, utid FROM sched_slice')))
    spans = sorted(map(key, db.rows("SELECT ts, dur, cpu, utid FROM thread_state "
                                    "WHERE state = 'Running'")))
    check(slices == spans, 'sched_slice (%d rows) is not thread_state Running (%d rows): %s' %
          (len(slices), len(spans), sorted(set(slices) ^ set(spans))[:5]))
    bad = db.rows('SELECT count(*) n FROM thread_state WHERE dur < 0 OR ts + dur != end_ts')
    check(bad == [{'n': 0}], 'thread_state spans with dur < 0 or end_ts != ts + dur: %s' % bad)
