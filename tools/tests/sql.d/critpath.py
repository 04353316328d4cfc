# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part critpath (issue 31 P6): critical_path() and report
--critical-path on recorded traces.

On every trace: thread_state has one S span for each time report shows
a thread switched out asleep; the critical path of the thread that slept
most often (of the one with the most spans if none slept), over its
life, partitions that time (rows one after another, shares
summing to 1), and report --critical-path TID prints the same rows.

On profile.d/critpath.sh's recording (its record.out beside the trace
gives the tids of critpath-workload's cp-A, cp-B, cp-C and the times
cp-C's clock_nanosleep(100 ms) was called and returned): over cp-A's
read(), the path goes cp-A -> cp-B -> cp-C, and cp-C's sleep (one row in
state S at depth 2) lies within the call, at least 90 ms long -- within
10% of the 100 ms asked for, or of what the call took when a loaded host
made TCG's timer late (the guest's clock is the host's); report
--critical-path cp-A over the read prints the table's rows, and --folded
has the line cp-A;cp-B;cp-C;S with the same nanoseconds."""

import os
import re

from sql_check import check, run

SLEEP_NS = 100 * 10**6


def report_rows(text):
    """report --critical-path's lines: [(ts ns, dur ns, state, chain)]."""
    out = []
    for l in text.splitlines()[2:]:
        f = l.split()
        sec, ns = f[0].split('.')
        ms, frac = f[1].split('.')
        out.append((int(sec) * 10**9 + int(ns), int(ms) * 10**6 + int(frac), f[3], f[4]))
    return out


def fmt(ns):
    return '%d.%09d' % (ns // 10**9, ns % 10**9)


def partition(db, args):
    """critical_path(@args)'s rows, checked to partition its interval."""
    got = db.rows('SELECT ts, dur, state, chain, share, arg_ts, arg_dur '
                  'FROM critical_path(%s)' % args)
    check(got, 'critical_path(%s) of %s has no row' % (args, db.dir))
    at = got[0]['arg_ts']
    for r in got:
        check(r['ts'] == at and r['dur'] > 0, 'critical_path(%s): a row at %d (dur %d) '
              'after one ending at %d' % (args, r['ts'], r['dur'], at))
        at += r['dur']
    check(at == got[0]['arg_ts'] + got[0]['arg_dur'],
          'critical_path(%s): rows end at %d, not at the interval\'s end' % (args, at))
    total = sum(r['share'] for r in got)
    check(abs(total - 1) < 1e-6, 'critical_path(%s): shares sum to %r' % (args, total))
    return got


def report_agrees(db, who, got, *args):
    r = run(['report', '--critical-path', who] + list(args) + [db.dir])
    check(r.returncode == db.status, 'report --critical-path %s: exit %d: %s' %
          (who, r.returncode, r.stderr[-500:]))
    want = [(x['ts'], x['dur'], x['state'], x['chain']) for x in got]
    mine = report_rows(r.stdout)
    check(mine == want, 'report --critical-path %s: %d lines, the table %d rows; first '
          'different: %s' % (who, len(mine), len(want),
                             next(((a, b) for a, b in zip(mine, want) if a != b), None)))


def workload_tids(db):
    """{'A': tid, 'B': tid, 'C': tid, 'sleep': (t0, t1)} from the workload's
    output kept beside the trace, or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(db.dir)), 'record.out')
    if not os.path.exists(path):
        return None
    text = open(path).read()
    tids = {k: int(v) for k, v in re.findall(r'^([ABC]) (\d+)$', text, re.M)}
    sleep = re.findall(r'^sleep (\d+) (\d+)$', text, re.M)
    check(len(tids) == 3 and len(sleep) == 1, '%s: not the three tids and the sleep: %r' %
          (path, text[-300:]))
    tids['sleep'] = tuple(map(int, sleep[0]))
    return tids


def check_workload(db, tids):
    a, b, c = tids['A'], tids['B'], tids['C']
    reads = db.rows("SELECT ts, dur FROM syscall WHERE utid = %d AND name = 'read' "
                    "AND dur IS NOT NULL ORDER BY dur DESC LIMIT 1" % a)
    check(reads, 'cp-A (%d) has no read() with an exit' % a)
    ts, dur = reads[0]['ts'], reads[0]['dur']
    got = partition(db, '%d, %d, %d' % (a, ts, dur))
    path = db.rows('SELECT ts, utid, depth, state, dur FROM critical_path(%d, %d, %d)' %
                   (a, ts, dur))
    found = {(r['depth'], r['utid']) for r in path}
    check((1, b) in found and (2, c) in found, 'cp-A\'s path over its read (%d ns) does not '
          'go through cp-B (%d) to cp-C (%d): %s' % (dur, b, c, sorted(found)))
    rows = [r for r in path if r['depth'] == 2 and r['utid'] == c and r['state'] == 'S']
    deeper = sorted({(r['depth'], r['utid']) for r in path if r['depth'] > 2})
    t0, t1 = tids['sleep']
    print('# critpath %s: read %.3f ms, clock_nanosleep %.3f ms, cp-C S %s ms, past cp-C: %s' %
          (db.dir, dur / 1e6, (t1 - t0) / 1e6, ['%.3f' % (r['dur'] / 1e6) for r in rows],
           deeper))
    check(len(rows) == 1, 'cp-C\'s sleep on cp-A\'s path: %d rows in S (past cp-C: %s)' %
          (len(rows), deeper))
    s = rows[0]
    check(t0 <= s['ts'] and s['ts'] + s['dur'] <= t1 and s['dur'] >= SLEEP_NS * 9 // 10,
          'cp-C\'s S on cp-A\'s path, [%d, +%d ns), is not at least 90 ms within its '
          'clock_nanosleep [%d, %d]' % (s['ts'], s['dur'], t0, t1))
    sleep = [s['dur']]
    args = ['--begin', fmt(ts), '--end', fmt(ts + dur)]
    report_agrees(db, 'cp-A', got, *args)
    r = run(['report', '--critical-path', 'cp-A', '--folded'] + args + [db.dir])
    check(r.returncode == db.status, 'report --critical-path --folded: exit %d' % r.returncode)
    line = 'cp-A;cp-B;cp-C;S %d' % sleep[0]
    check(line in r.stdout.splitlines(), '--folded has no line %r:\n%s' % (line, r.stdout))


def report_sleeps(db):
    """How often report shows a thread other than the idle task switched
    out asleep (prev_state=1, S): each such switch starts one S span."""
    return sum(1 for l in db.report().splitlines()
               if ' sched_switch: ' in l and ' prev_state=1,' in l and ' prev_tid=0,' not in l)


def check_critpath(db):
    n = db.rows("SELECT count(*) n FROM thread_state WHERE utid & 0xffffffff > 0 "
                "AND state = 'S'")[0]['n']
    want = report_sleeps(db)
    check(n == want, '%s: %d spans in S, report shows %d switches out asleep' %
          (db.dir, n, want))
    # A damaged copy may have lost every sleep with its packet (a CPU
    # recorded in one packet): then the thread with the most spans.
    busiest = db.rows("SELECT utid, count(*) n FROM thread_state WHERE utid & 0xffffffff > 0 "
                      "%s GROUP BY utid ORDER BY n DESC, utid LIMIT 1" %
                      ("AND state = 'S'" if want else ''))
    check(busiest, '%s: no thread has a state' % db.dir)
    utid = busiest[0]['utid']
    got = partition(db, str(utid))
    report_agrees(db, str(utid & 0xffffffff), got)
    tids = workload_tids(db)
    if tids is not None:
        check_workload(db, tids)
