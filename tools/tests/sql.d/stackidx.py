# SPDX-License-Identifier: GPL-2.0
"""The stack index (issue 31): stack and frame answered from one pass
over a trace's stacks, kept for the run and in the cache.  On a
recording:

  - stack WHERE stack_id = X and frame WHERE frame_id = X (lookups in the
    index), and IN lists of them, give the rows of stack_id + 0 = X
    (frame_id + 0: the whole table, filtered by SQLite), for stacks of the
    samples and frames spread over the trace, and an id none has;
  - sample JOIN stack ON stack_id JOIN frame ON frame_id, as a user writes
    it (SQLite looks each stack and frame up), gives the rows of the same
    join of the tables materialized;
  - stack and frame read back from a cache directory (a second process)
    are row for row those of a run without cache.

On lttng_guest.sh's `t` (no stacks) every table is empty and so are the
answers; on its `su` the samples' kernel and user stacks."""

import shutil
import tempfile

from sql_check import check

JOIN = ('SELECT s.ts, s.stack_id, k.depth, k.frame_id, f.symbol FROM sample s '
        'JOIN stack k ON k.stack_id = s.stack_id JOIN frame f ON f.frame_id = k.frame_id')
JOIN_MAT = ('WITH s AS MATERIALIZED (SELECT ts, stack_id FROM sample), '
            'k AS MATERIALIZED (SELECT stack_id, depth, frame_id FROM stack), '
            'f AS MATERIALIZED (SELECT frame_id, symbol FROM frame) '
            'SELECT s.ts, s.stack_id, k.depth, k.frame_id, f.symbol FROM s '
            'JOIN k ON k.stack_id = s.stack_id JOIN f ON f.frame_id = k.frame_id')
# Ids looked up one by one at most (spread over the trace's).
SOME = 60


def key(r):
    return tuple(repr(v) for v in r.values())


def spread(xs):
    xs = sorted(xs)
    step = max(1, len(xs) // SOME)
    return xs[::step][:SOME]


def by_id(db, table, col, ids):
    text = ''
    for x in ids:
        text += 'SELECT * FROM %s WHERE %s = %d; ' % (table, col, x)
        text += 'SELECT * FROM %s WHERE %s + 0 = %d; ' % (table, col, x)
    a = db.statements(text)
    check(len(a) == 2 * len(ids), '%s: %d arrays printed' % (table, len(a)))
    for i, x in enumerate(ids):
        got, full = sorted(a[2 * i], key=key), sorted(a[2 * i + 1], key=key)
        check(got == full, '%s %s = %d: %d rows, + 0: %d' % (table, col, x, len(got), len(full)))


def check_stackidx(db):
    sids = {r['stack_id'] for r in db.rows('SELECT DISTINCT stack_id FROM sample '
                                            'WHERE stack_id IS NOT NULL')}
    fids = {r['frame_id'] for r in db.rows('SELECT frame_id FROM frame')}
    by_id(db, 'stack', 'stack_id', spread(sids) + [4242])
    by_id(db, 'frame', 'frame_id', spread(fids) + [4242])
    some = ', '.join(str(x) for x in sorted(sids)[::3] + [4242])
    a = db.statements('SELECT * FROM stack WHERE stack_id IN (%s); '
                       'SELECT * FROM stack WHERE stack_id + 0 IN (%s); %s; %s' %
                   (some, some, JOIN, JOIN_MAT))
    check(sorted(a[0], key=key) == sorted(a[1], key=key),
          'stack_id IN: %d rows, + 0: %d' % (len(a[0]), len(a[1])))
    check(sorted(a[2], key=key) == sorted(a[3], key=key) and (len(a[2]) > 0) == (len(sids) > 0),
          'sample JOIN stack JOIN frame: %d rows, materialized %d, %d stacks' %
          (len(a[2]), len(a[3]), len(sids)))
    cache = tempfile.mkdtemp(prefix='rt-sql-stackidx-')
    try:
        q = 'SELECT * FROM stack; SELECT * FROM frame'
        ref = db.statements(q, env={'RINGTRACE_SQL_CACHE': ''})
        for what in ('built', 'read back'):
            got = db.statements(q, env={'RINGTRACE_SQL_CACHE': cache})
            check(got == ref, 'stack and frame, index %s: %s rows, without cache %s' %
                  (what, list(map(len, got)), list(map(len, ref))))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
