# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part sys (ringtrace sql's syscall, wakeup, irq, softirq,
marker tables and the shipped queries) against report of the same trace:
each shipped query of --stat (`sql -q NAME`) prints report --stat's section
to the last digit -- events by name and CPU, losses per CPU, system calls
by count and by total latency (name, count, total_us, avg_us, max_us, in
report's order, its top 25), threads by on-CPU time (comm, cgroup, tid,
pid, on_cpu_ms, switches, its top 25), the wakeup-to-run percentiles -- and irq,
softirq and marker have a row per entry (marker) event.  test_sql.py runs
the same checks on synthetic traces (shipped_equal_report())."""

import json

from sql_check import check, run, stat_events, stat_losses
from lttng_check import section, sections

WAKE_TITLE = 'wakeup to run latency'


def shipped(d, name, status):
    """The rows of shipped query @name on trace @d, as lists of strings."""
    r = run(['sql', '--json', '-q', name, d])
    check(r.returncode == status, 'sql -q %s: exit %d, expected %d: %s' %
          (name, r.returncode, status, r.stderr[-1000:]))
    rows = json.loads(r.stdout) if r.stdout.strip() else []
    return [[str(v) for v in row.values()] for row in rows]


def shipped_equal_report(d, stat, status=0):
    """Every --stat query's rows on @d are report --stat's @stat text's
    section; returns (syscall rows by count, the wakeup line's words)."""
    got = {(r[0], int(r[1])): int(r[2]) for r in shipped(d, 'events', status)}
    want = stat_events(stat)
    check(got == want, 'events differ from report: %s' %
          sorted(set(got.items()) ^ set(want.items()))[:10])
    got = {int(r[0]): tuple(int(x) for x in r[1:]) for r in shipped(d, 'losses', status)}
    for cpu, v in stat_losses(stat).items():
        g = got.pop(cpu, (0, 0, 0))
        check(g == v, 'losses of cpu%d: %s, report %s' % (cpu, g, v))
    check(not got, 'losses of CPUs report does not have: %s' % got)
    secs = sections(stat)
    by_count = None
    for name, title in (('syscalls_by_count', 'system calls by count'),
                        ('syscalls_by_total', 'system calls by total latency')):
        got, want = shipped(d, name, status), section(secs, title)
        check(got == want, '%s differs from report:\n  sql    %s\n  report %s' % (
            name, got[:5], want[:5]) if len(got) == len(want) else
            '%s: %d rows, report %d' % (name, len(got), len(want)))
        by_count = by_count or got
    threads_on_cpu_equal_report(d, stat, status)
    line = next((v for k, v in secs.items() if k.startswith(WAKE_TITLE)), None)
    check(line is not None and len(line) == 1, 'report has no wakeup line: %s' % line)
    line = line[0]
    got = shipped(d, 'wakeup_latency', status)
    if line[:2] == ['no', 'wakeup']:
        check(got == [], 'wakeup_latency with no sample: %s' % got)
        return by_count, line
    # samples N  p50 X us  p90 X us  p99 X us  p99.9 X us  p100 X us
    want = [line[1]] + line[3::3]
    check(len(got) == 1 and got[0] == want, 'wakeup_latency %s, report %s' % (got, line))
    return by_count, line


def stat_threads_on_cpu(stat):
    """report --stat's "threads by on-CPU time" rows: [comm, cgroup or
    '-' (None where the trace has no cgroup ids, or report names it by
    path), tid, pid, on_cpu_ms, switches] as printed."""
    lines = stat.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('threads by on-CPU time'))
    cg = 'cgroup' in lines[head + 1]
    out = []
    for l in lines[head + 2:]:
        if not l.startswith('  '):
            break
        # "  %-20s[ %-24s] %8d %8s %14.3f %10u": comm and cgroup may hold spaces.
        cgroup = l[23:47].strip() if cg else None
        if cgroup is not None and cgroup != '-' and not cgroup.isdigit():
            cgroup = None           # a path: this machine's name for the id
        out.append([l[2:22].rstrip(), cgroup] + l.split()[-4:])
    return out


def threads_on_cpu_equal_report(d, stat, status):
    """threads_on_cpu (-q) prints report --stat's "threads by on-CPU time"
    row for row: comm, cgroup id, tid, pid, on_cpu_ms, switches."""
    want = stat_threads_on_cpu(stat)
    got = [['-' if v == 'None' else v for v in r] for r in shipped(d, 'threads_on_cpu', status)]
    got = [[r[0], r[1] if w[1] is not None else None] + r[2:] for r, w in zip(got, want)] + \
        got[len(want):]
    check(got == want, 'threads_on_cpu differs from report:\n  sql    %s\n  report %s' % (
        got[:4], want[:4]) if len(got) == len(want) else
        'threads_on_cpu: %d rows, report %d: %s %s' % (len(got), len(want), got[:3], want[:3]))


def check_sys(db):
    stat = db.report_stat()
    shipped_equal_report(db.dir, stat, db.status)
    ev = stat_events(stat)

    def total(name):
        return sum(n for (e, _), n in ev.items() if e == name)
    for table, event in (('irq', 'irq_handler_entry'), ('softirq', 'irq_softirq_entry'),
                         ('marker', 'ringtrace_marker')):
        n = db.rows('SELECT count(*) n FROM %s' % table)[0]['n']
        check(n == total(event), '%s has %d rows, report %d %s' % (table, n, total(event), event))
    # Every entry is a row; the paired ones are report's count.
    n = db.rows('SELECT count(*) n, count(dur) p FROM syscall')[0]
    check(n['n'] == total('syscall_entry'), 'syscall has %d rows, report %d entries' %
          (n['n'], total('syscall_entry')))
    want = sum(int(r[1]) for r in section(sections(stat), 'system calls by count'))
    if len(section(sections(stat), 'system calls by count')) < 25:
        check(n['p'] == want, 'syscall has %d paired rows, report counts %d' % (n['p'], want))
