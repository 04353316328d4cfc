# SPDX-License-Identifier: GPL-2.0
"""utid = X pushed down (issue 31): thread_state, sched_slice and syscall
give for `utid = X`, wakeup for `wakee_utid = X` (read through the run
index's lists: X's runs, the stretches whose scheduler events name X),
sample for `utid = X` and `tid = X` (X's runs), wakeup and thread_state
for `waker_utid = X` (the time from X's first run to its last) exactly
the rows of `utid + 0 = X` (`tid + 0`, `waker_utid + 0`), which SQLite
cannot push down and answers by filtering the whole table; for the
busiest threads, one seen once, the idle task and a tid the trace never
names, whole and in a window of the trace's middle."""

from sql_check import check

TABLES = (('thread_state', 'utid'), ('sched_slice', 'utid'), ('syscall', 'utid'),
          ('wakeup', 'wakee_utid'), ('sample', 'utid'), ('sample', 'tid'),
          ('wakeup', 'waker_utid'), ('thread_state', 'waker_utid'))
# The tables whose rows are instants: a window on ts alone.
INSTANTS = ('wakeup', 'sample')


def threads(db):
    """The utids asked: the three with the most thread_state spans, one
    with a single span, the idle task, one no event names."""
    n = db.rows('SELECT utid, count(*) n FROM thread_state WHERE utid IS NOT NULL '
                'GROUP BY utid ORDER BY n DESC, utid')
    check(len(n) >= 4, '%s: %d threads in thread_state' % (db.dir, len(n)))
    busy = [r['utid'] for r in n if r['utid'] & 0xffffffff][:3]
    once = [r['utid'] for r in n if r['n'] == 1][:1]
    never = max(r['utid'] for r in n) + 12345
    return busy + once + [0, never]


def check_utid(db):
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    span = db.rows('SELECT min(ts) a, max(ts) b FROM raw')[0]
    mid = (span['a'] + span['b']) // 2
    third = (span['b'] - span['a']) // 6
    window = ' AND end_ts >= %d AND ts <= %d' % (mid - third, mid + third)
    for x in threads(db):
        for extra in ('', window):
            text = ''
            for t, col in TABLES:
                w = extra.replace('end_ts', 'ts') if t in INSTANTS else extra
                text += 'SELECT * FROM %s WHERE %s = %d%s; ' % (t, col, x, w)
                text += 'SELECT * FROM %s WHERE %s + 0 = %d%s; ' % (t, col, x, w)
            a = db.statements(text)
            check(len(a) == 2 * len(TABLES), 'utid %d: %d arrays printed' % (x, len(a)))
            for i, (t, col) in enumerate(TABLES):
                got = sorted(a[2 * i], key=key)
                full = sorted(a[2 * i + 1], key=key)
                check(got == full, '%s %s = %d%s: %d rows, + 0: %d; only in one: %s' %
                      (t, col, x, extra, len(got), len(full),
                       sorted(set(map(key, got)) ^ set(map(key, full)))[:3]))
