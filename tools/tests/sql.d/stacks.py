# SPDX-License-Identifier: GPL-2.0
"""sql_check.py part stacks (issue 31 P5): sample, stack, frame and
thread_state.blocked_function against report of the same trace.

  - the shipped query top_functions (`sql -q top_functions`) prints
    report --stat's top functions, row for row (self, total, function),
    and the samples with a stack are its "of N stacks"; a trace without
    stacks has neither;
  - the tables hold together: every sample's stack is in stack, its
    depths 0..n-1, every frame of a stack in frame, once;
  - every blocked_function is on a blocked span (not Running, R or R+)
    that began with a sched_switch of that thread whose stack (sample)
    holds a frame of that name, and is no scheduler entry point.

On lttng_guest.sh's `t` (no stacks) the first point checks the absence;
on its `su` (record --stack --ustack sched_switch --sample 199 of
ustack-workload: kernel and user frames, named from the trace's symbols
and symbol store) it checks the counts.  test_sql.py runs the same on
synthetic traces."""

import json
import re

from sql_check import check, run

TOP = re.compile(r'^top functions \(of (\d+) stacks?: ')
ROW = re.compile(r'^  +(\d+) +(\d+)  (.*)$')
SCHED = re.compile(r'^(__schedule|schedule|io_schedule|preempt_schedule|_+cond_resched)')


def report_top(stat):
    """report --stat's top functions: (N stacks or 0, [[self, total, fn]])."""
    lines = stat.splitlines()
    head = next((i for i, l in enumerate(lines) if TOP.match(l)), None)
    if head is None:
        return 0, []
    rows = []
    # The column names (or "no frame resolved"), then rows to a blank line.
    for l in lines[head + 2:]:
        m = ROW.match(l)
        if not m:
            break
        rows.append([m.group(1), m.group(2), m.group(3)])
    return int(TOP.match(lines[head]).group(1)), rows


def shipped_top(d, status):
    r = run(['sql', '--json', '-q', 'top_functions', d])
    check(r.returncode == status, 'sql -q top_functions: exit %d, expected %d: %s' %
          (r.returncode, status, r.stderr[-1000:]))
    rows = json.loads(r.stdout) if r.stdout.strip() else []
    return [[str(v) for v in row.values()] for row in rows]


def top_equal_report(db):
    """top_functions == report --stat's top functions; the N stacks."""
    n, want = report_top(db.report_stat())
    got = shipped_top(db.dir, db.status)
    check(got == want, 'top_functions differs from report --stat:\n  sql    %s\n  report %s' %
          (got[:6], want[:6]) if len(got) == len(want) else
          'top_functions: %d rows, report --stat %d: %s / %s' % (len(got), len(want),
                                                                 got[:3], want[:3]))
    stacks = db.rows('SELECT count(*) n FROM sample WHERE stack_id IS NOT NULL')[0]['n']
    check(stacks == n, 'samples with a stack: %d, report --stat counts %d stacks' % (stacks, n))
    return n, got


def tables_hold_together(db):
    bad = db.rows('SELECT count(*) n FROM (SELECT stack_id, count(*) c, min(depth) lo, '
                  'max(depth) hi, count(DISTINCT depth) dd FROM stack GROUP BY trace, stack_id) '
                  'WHERE lo != 0 OR hi != c - 1 OR dd != c')[0]['n']
    check(bad == 0, '%d stacks whose depths are not 0..n-1 once each' % bad)
    bad = db.rows('SELECT count(*) n FROM (SELECT DISTINCT trace, frame_id FROM stack) k '
                  'WHERE NOT EXISTS (SELECT 1 FROM (SELECT trace, frame_id FROM frame) f '
                  'WHERE f.trace = k.trace AND f.frame_id = k.frame_id)')[0]['n']
    check(bad == 0, '%d frames of stacks not in frame' % bad)
    dup = db.rows('SELECT count(*) - count(DISTINCT trace || \'.\' || frame_id) n '
                  'FROM frame')[0]['n']
    check(dup == 0, 'frame lists %d frames twice' % dup)
    # A stack recorded without a frame has no row: one id, whatever its event.
    lost = db.rows('WITH k AS MATERIALIZED (SELECT DISTINCT trace, stack_id FROM stack) '
                   'SELECT count(DISTINCT stack_id) n FROM sample s WHERE stack_id IS NOT NULL '
                   'AND NOT EXISTS (SELECT 1 FROM k WHERE k.trace = s.trace AND '
                   'k.stack_id = s.stack_id)')[0]['n']
    check(lost <= 1, '%d stacks of samples not in stack' % lost)


def blocked_from_switch_stacks(db):
    """Every blocked_function is a frame of its switch's stack; how many."""
    rows = db.rows(
        'WITH b AS MATERIALIZED (SELECT ts, utid, state, blocked_function fn, trace '
        '  FROM thread_state WHERE blocked_function IS NOT NULL),\n'
        's AS MATERIALIZED (SELECT ts, utid, stack_id, trace FROM sample '
        '  WHERE event = \'sched_switch\' AND stack_id IS NOT NULL),\n'
        'k AS MATERIALIZED (SELECT trace, stack_id, frame_id FROM stack),\n'
        'f AS MATERIALIZED (SELECT trace, frame_id, name FROM frame)\n'
        'SELECT b.ts, b.utid, b.state, b.fn, EXISTS (SELECT 1 FROM s JOIN k ON '
        '  k.trace = s.trace AND k.stack_id = s.stack_id JOIN f ON f.trace = k.trace '
        '  AND f.frame_id = k.frame_id WHERE s.trace = b.trace AND s.ts = b.ts '
        '  AND s.utid = b.utid AND (f.name = b.fn OR '
        '  (f.name IS NULL AND b.fn LIKE \'0x%\'))) AS found FROM b')
    for r in rows:
        check(r['state'] not in ('Running', 'R', 'R+'),
              'blocked_function %s on a %s span' % (r['fn'], r['state']))
        check(r['found'], 'blocked_function %s at %d (utid %d): no such frame in the '
              'stack of its switch' % (r['fn'], r['ts'], r['utid']))
        check(not SCHED.match(r['fn']), 'blocked_function %s is a scheduler function' % r['fn'])
    return len(rows)


def check_stacks(db):
    n, _ = top_equal_report(db)
    tables_hold_together(db)
    b = blocked_from_switch_stacks(db)
    if n == 0:
        check(b == 0, 'blocked functions in a trace without stacks: %d' % b)
