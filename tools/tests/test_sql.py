#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of `ringtrace sql` (no kernel needed), report as the oracle.

  - raw's and event_count's events per name and CPU, and lost's sums per
    CPU, are report --stat's, on synthetic traces, on the committed
    tools/tests/real-trace, and on it with one damaged header (exit 3,
    the damage on stderr, a lost row that says damaged);
  - every raw row is report's event line: time, CPU, thread, name;
  - a ts window gives the same rows seeking and with RINGTRACE_SEEK=0,
    and they are the full scan's rows filtered here;
  - pushdown, proven by scan_stats: a window reads few frames, cpu = 1
    opens one stream, name = 'ringtrace_marker' decodes only markers, IN lists come
    in one xFilter, LIMIT stops the scan only where it may;
  - --csv and --json read back with Python's csv and json as the same
    rows; several traces are told apart by trace and host; bad
    statements get SQLite's message and exit 1;
  - sched_slice and thread_state row for row on a hand-built switch and
    wakeup trace, their sums per thread report --stat's on_cpu_ms
    (sql.d/sched.py), windows of them the full table filtered; thread
    and process row for row on a hand-built fork/exec/rename trace, names
    and pids report --stat's (sql.d/threads.py), process after thread
    reading nothing again;
  - the shipped queries (sql -q, --stat) print report --stat's sections to
    the last digit (sql.d/sys.py's checks, also run on recordings by
    sql_check.py); syscall, irq/softirq rows of hand-built sequences
    (pairing, nesting, losses); wakeup percentiles by report's rank rule;
    --list's SQL gives -q's rows; marker and the slice view;
  - the stacks (sql.d/stacks.py): top_functions prints report --stat's
    top functions and sample's stacks are its N, on samples, interned
    and inline stacks and 300 random ones; stack_id is the same in two
    windows and in another trace holding the same frames;
    thread_state.blocked_function on hand-built switches with kernel
    stacks; a damaged stack record costs its packet alone; sample's ts,
    cpu and utid windows the full table filtered on a trace whose
    mappings change as it runs (interned and inline stacks), reading the
    window and, before it, the mapping events alone (scan_stats); a
    trace with no stacks read once by the three stack tables.
  - critical_path() row for row on hand-built wakeup chains (A <- B <- C
    <- idle, a cycle of wakers, the 32-deep limit, a wakeup in a softirq
    ending the walk), its rows partitioning
    the interval with shares summing to 1, report --critical-path and
    --folded printing the same numbers (sql.d/critpath.py's checks too);
    report --critical-path COMM --strict on a damaged trace fails on the
    damage, not on the name; critical_path(utid, ts, dur) on a long trace
    the walk done here over the whole thread_state, reading the window's
    frames (scan_stats).
  - raw's utid = X through run lists: the rows of utid + 0 = X and of
    RINGTRACE_SEEK=0 for threads that migrate, ran once, never ran, also
    on a trace with a damaged frame; a thread that ran once reads a few
    frames, one that never ran none (scan_stats).
  - utid = X on thread_state, sched_slice and syscall, wakee_utid = X on
    wakeup: the rows of the unpushed term (+ 0) for threads that ran
    often, once, never, and the idle task, with windows; a thread named
    in few places reads under a quarter of the frames; the run lists
    kept in the cache directory and read back, a damaged cache file a
    miss (sql.d/utid.py's checks run on recordings).
  - the stack index: sample JOIN stack JOIN frame as written reads the
    trace twice (sample's scan, the index's pass), its rows the
    materialized join's; stack_id = and frame_id = (and IN) the rows of
    the unpushed terms, reading nothing once the index is built; the
    index kept in the cache and read back, a damaged file or changed
    symbols a miss, a damaged trace's not kept; 80 damaged files under
    ASan.
  - sample's utid = X and tid = X, wakeup's and thread_state's
    waker_utid = X: the rows of the unpushed term, a thread seen late
    decodes under half the events, a waker that ran once reads under a
    quarter of the frames.
  - --max-memory: a GROUP BY that keeps every event fails under 16M with
    a clear message, exit 1, and runs without the bound; what SQLite can
    spill (GROUP BY name, GROUP BY ts) runs under it; bad sizes exit 2.

Synthetic traces come from test_decoder.py's helpers (gentrace.py's TSDL).

Usage: test_sql.py [-k SUBSTRING] [-v] [--keep]
Last line: `sql: N passed, M failed`.
"""

import csv
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_decoder as td  # noqa: E402
from test_decoder import Fail, check, marker, sys_entry, sys_exit, kswitch  # noqa: E402
from sql_check import report_lines, stat_events, stat_losses  # noqa: E402
from sql_check import Db as SqlDb, Fail as SqlFail, load_parts  # noqa: E402

TESTS, test = td.registry()
REAL_TRACE = os.path.join(HERE, 'real-trace')


Ctx = td.PathCtx


def sql(dirs, query, *opts, env=None, status=0, asan=False):
    """`ringtrace sql OPTS DIRS QUERY`, checked to exit with @status."""
    dirs = [dirs] if isinstance(dirs, str) else list(dirs)
    r = td.rt_env(env or {}, 'sql', *(list(opts) + dirs + [query]), asan=asan)
    check('runtime error' not in r.stderr and 'Sanitizer' not in r.stderr,
          'sql %r: sanitizer:\n%s' % (query, r.stderr[-3000:]))
    check(r.returncode == status, 'sql %r: exit %d, expected %d: %s' %
          (query, r.returncode, status, r.stderr[-1500:]))
    return r


def arrays(text):
    """The JSON arrays --json printed, one per statement."""
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        v, i = dec.raw_decode(text, i)
        out.append(v)


def rows(dirs, query, *opts, env=None, status=0):
    """The rows of one statement, as dicts (through --json)."""
    a = arrays(sql(dirs, query, '--json', *opts, env=env, status=status).stdout)
    check(len(a) == 1, '%r printed %d arrays' % (query, len(a)))
    return a[0]


def stats(dirs, query, env=None, status=0):
    """(rows of @query, scan_stats of it) from one run."""
    a = arrays(sql(dirs, query + '; SELECT * FROM scan_stats', '--json', env=env,
                   status=status).stdout)
    check(len(a) == 2, '%r then scan_stats printed %d arrays' % (query, len(a)))
    return a[0], a[1]


def report_stat(d, status=0):
    r = td.rt('report', '--stat', d)
    check(r.returncode == status, 'report --stat exit %d: %s' % (r.returncode, r.stderr))
    return r.stdout


def sql_losses(d, status=0):
    got = rows(d, 'SELECT cpu, sum(events) e, sum(packets) p, sum(damaged) g '
                  'FROM lost WHERE cpu IS NOT NULL GROUP BY cpu', status=status)
    return {r['cpu']: (r['e'], r['p'], r['g']) for r in got}


def agrees_with_report(d, status=0):
    """event_count, raw grouped and lost equal report --stat of @d."""
    text = report_stat(d, status=status)
    want = stat_events(text)
    check(want, 'report --stat of %s has no events' % d)
    ec = {(r['name'], r['cpu']): r['count'] for r in
          rows(d, 'SELECT name, cpu, count FROM event_count', status=status)}
    check(ec == want, 'event_count %s\n  report %s' % (sorted(ec.items()), sorted(want.items())))
    grp = {(r['name'], r['cpu']): r['n'] for r in
           rows(d, 'SELECT name, cpu, count(*) n FROM raw GROUP BY name, cpu', status=status)}
    check(grp == want, 'raw grouped %s\n  report %s' % (sorted(grp.items()), sorted(want.items())))
    losses = stat_losses(text)
    got = sql_losses(d, status=status)
    for cpu, v in losses.items():
        check(got.get(cpu, (0, 0, 0)) == v, 'lost of cpu%d: %s, report %s' %
              (cpu, got.get(cpu), v))
    return want


# ---- synthetic traces ----------------------------------------------------------------

def mixed_trace(d, cpus=2, packets=6, per_packet=10, seed=1, text=None):
    """A kernel trace: switches among a few threads, system calls and
    markers on every CPU, events discarded and packets lost on CPU 1."""
    rng = random.Random(seed)
    streams = {}
    for cpu in range(cpus):
        pk, tid, disc, seq = [], 100 + cpu, 0, 0
        for p in range(packets):
            begin = 10**9 + p * 10**6 + cpu * 1000
            evs = []
            for i in range(per_packet):
                ts = begin + (i + 1) * 10**6 // (per_packet + 1)
                k = rng.randrange(3)
                if k == 0:
                    nxt = 100 + rng.randrange(6)
                    evs.append((ts, 1, kswitch('task%d' % tid, tid, 'task%d' % nxt, nxt)))
                    tid = nxt
                elif k == 1:
                    evs.append((ts, 11, sys_entry(rng.choice((0, 4, 110)), 1, 2)))
                else:
                    evs.append((ts, 0, marker(text if text and i == 3 else
                                              b'c%d p%d e%d' % (cpu, p, i))))
            if cpu == 1 and p in (2, 4):
                disc += 5
                seq += 1        # a packet overwritten
            pk.append((begin, begin + 10**6 - 1, disc, seq, evs))
            seq += 1
        streams[cpu] = pk
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    meta = td.gentrace.metadata(uuid, 1700000000, 500000000, td.KERNEL_EVENTS)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta.replace('fields := struct { int32_t id;',
                             'fields := struct { %s' % td.SYSCALL_ENUM))
    for cpu, pk in streams.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            for b, e, disc, seq, evs in pk:
                f.write(td.kpacket(uuid, cpu, seq, evs, b, e, disc))
    return d


@test
def counts_equal_report_synthetic(ctx):
    """A synthetic trace (and its seek_trace sibling, rotated stored
    chunks): events per name and CPU from event_count and from raw
    grouped, and losses per CPU, are report --stat's."""
    d = mixed_trace(ctx.path('mixed'))
    want = agrees_with_report(d)
    check(('ringtrace_marker', 0) in want and ('sched_switch', 1) in want, 'trace lacks events: %s' % want)
    check(stat_losses(report_stat(d))[1][0] == 10, 'cpu1 does not lose 10 events')
    agrees_with_report(td.seek_trace(ctx.path('seek'), packets=20))


@test
def counts_equal_report_real_trace(ctx):
    """The committed 6.12 recording (tools/tests/real-trace): the same."""
    want = agrees_with_report(REAL_TRACE)
    check(want[('sched_switch', 0)] > 100, 'few switches: %s' % want)


@test
def damaged_header_real_trace(ctx):
    """The real trace with one packet header damaged: exit 3, the damage
    said on stderr, a lost row of that CPU says damaged, and every count
    is report --stat's of the same damaged copy."""
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, ref, off = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    r = sql(bad, 'SELECT count(*) FROM raw', status=3)
    check(re.search(r'damaged: .*cpu0.*offset %d' % off, r.stderr),
          'the damage is not said: %r' % r.stderr)
    agrees_with_report(bad, status=3)
    dmg = rows(bad, "SELECT cpu, kind, damaged FROM lost WHERE damaged > 0", status=3)
    check(dmg == [{'cpu': 0, 'kind': 'damaged', 'damaged': 1}], 'damaged rows %s' % dmg)
    # Undamaged, the copy answers exit 0 and no lost row says damaged.
    check(rows(ref, 'SELECT count(*) n FROM lost WHERE damaged > 0') == [{'n': 0}],
          'the undamaged copy has damaged rows')


def ctx_copy(ctx):
    """What td.damaged_copy() wants of a context: copy()."""
    class C:
        def copy(self, d):
            n = ctx.path('copy')
            shutil.copytree(d, n)
            return n
    return C()


# ---- every row is report's line ------------------------------------------------------

def report_events(d, *args):
    r = td.rt('report', *(list(args) + [d]))
    check(r.returncode == 0, 'report: %s' % r.stderr)
    return report_lines(r.stdout)


def sql_events(d, where='', env=None):
    got = rows(d, 'SELECT ts, cpu, utid, name FROM raw ' + where, env=env)
    return sorted(((r['ts'], r['cpu'], r['utid'], r['name']) for r in got), key=repr)


@test
def rows_are_report_lines(ctx):
    """Each raw row is an event line of report: time, CPU, the thread it
    belongs to (utid == tid for one trace; NULL where report prints -),
    name -- the whole real trace, and a window of a chunked trace whose
    threads are learnt from the frames before it."""
    want = report_events(REAL_TRACE)
    check(len(want) > 5000, 'report printed %d events' % len(want))
    check(sql_events(REAL_TRACE) == want, 'raw differs from report')
    d = td.seek_trace(ctx.path('seek'), packets=30, dump=True)
    td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    b, e = td.SEEK_T0 + 41 * td.SEEK_PACKET_NS + 77, td.SEEK_T0 + 63 * td.SEEK_PACKET_NS
    want = report_events(d, '--begin', td.seek_secs(b), '--end', td.seek_secs(e))
    check(len(want) > 100 and any(w[2] is not None for w in want), 'window: %d events' % len(want))
    got = sql_events(d, 'WHERE ts BETWEEN %d AND %d' % (b, e))
    check(got == want, 'the window differs from report --begin/--end:\n%s' %
          next(('  sql %s\n  report %s' % (x, y) for x, y in zip(got, want) if x != y),
               '%d rows, %d lines' % (len(got), len(want))))


# ---- windows and pushdown ------------------------------------------------------------

def packed(ctx, name='packed', frame='4K', **kw):
    d = td.seek_trace(ctx.path(name), **kw)
    r = td.rt('compress', '--frame-size', frame, '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


@test
def windows_seek_equal_full_scan(ctx):
    """20 random ts windows (BETWEEN, >, <, = and one-sided) of a packed
    chunked trace: the rows seeking, the rows with RINGTRACE_SEEK=0 and
    the full scan's rows filtered here are the same."""
    d = packed(ctx)
    q = 'SELECT ts, cpu, name, args, utid FROM raw'
    full = rows(d, q)
    check(len(full) > 2000, 'the trace has %d events' % len(full))
    lo, hi = full[0]['ts'], max(r['ts'] for r in full)
    rng = random.Random(31)
    cases = []
    for i in range(20):
        a = rng.randrange(lo - 10**6, hi + 10**6)
        b = a + rng.choice((0, 1, 10**5, 10**6, 3 * 10**7, 10**9))
        k = i % 5
        if k == 0:
            cases.append(('ts BETWEEN %d AND %d' % (a, b), lambda t, a=a, b=b: a <= t <= b))
        elif k == 1:
            cases.append(('ts > %d AND ts < %d' % (a, b), lambda t, a=a, b=b: a < t < b))
        elif k == 2:
            cases.append(('ts >= %d' % a, lambda t, a=a: t >= a))
        elif k == 3:
            cases.append(('ts <= %d' % b, lambda t, b=b: t <= b))
        else:
            t = rng.choice(full)['ts']
            cases.append(('ts = %d' % t, lambda x, t=t: x == t))
    text = ';'.join('%s WHERE %s' % (q, w) for w, _ in cases)
    seek = arrays(sql(d, text, '--json').stdout)
    nseek = arrays(sql(d, text, '--json', env={'RINGTRACE_SEEK': '0'}).stdout)
    key = lambda r: (r['ts'], r['cpu'], r['args'])  # noqa: E731
    for (w, keep), s, n in zip(cases, seek, nseek):
        want = sorted((r for r in full if keep(r['ts'])), key=key)
        check(sorted(s, key=key) == want, '%s: seeking gives %d rows, the full scan %d' %
              (w, len(s), len(want)))
        check(sorted(n, key=key) == want, '%s: RINGTRACE_SEEK=0 gives %d rows, expected %d' %
              (w, len(n), len(want)))


@test
def pushdown_by_scan_stats(ctx):
    """scan_stats proves what was not read: the last 1 % of a 64-frame
    packed trace decodes at most 3 frames per CPU (64 for the whole);
    cpu = 1 opens one stream of two; name = 'ringtrace_marker' decodes the markers
    alone; an IN list on cpu and one on name come in one xFilter."""
    d = packed(ctx, packets=288, files=1, per_packet=30)
    full, st = stats(d, 'SELECT count(*) n, max(ts) last, min(ts) first FROM raw')
    check(st[0]['frames_read'] >= 2 * 64, 'the whole trace decodes %d frames' % st[0]['frames_read'])
    first, last = full[0]['first'], full[0]['last']
    cut = last - (last - first) // 100
    r, st = stats(d, 'SELECT count(*) n FROM raw WHERE ts >= %d' % cut)
    want = rows(d, 'SELECT count(*) n FROM raw WHERE ts + 0 >= %d' % cut)
    check(r == want and want[0]['n'] > 0, 'window count %s, unpushed %s' % (r, want))
    check(st[0]['plan'] == 'ts>=' and st[0]['frames_read'] <= 6,
          'the last 1%% decoded %d frames (plan %r)' % (st[0]['frames_read'], st[0]['plan']))
    r, st = stats(d, 'SELECT count(*) n FROM raw WHERE cpu = 1')
    check(st[0]['cpus'] == 1 and st[0]['plan'] == 'cpu=', 'cpu = 1 opened %d streams' % st[0]['cpus'])
    check(r[0]['n'] == rows(d, 'SELECT count(*) n FROM raw WHERE cpu + 0 = 1')[0]['n'],
          'cpu = 1 counts differ')
    markers = rows(d, "SELECT count(*) n FROM raw WHERE name || '' = 'ringtrace_marker'")[0]['n']
    r, st = stats(d, "SELECT count(*) n FROM raw WHERE name = 'ringtrace_marker'")
    check(r[0]['n'] == markers and st[0]['events_decoded'] == markers,
          "name = 'ringtrace_marker': %d rows, %d events decoded, %d markers" %
          (r[0]['n'], st[0]['events_decoded'], markers))
    r, st = stats(d, "SELECT name, cpu, count(*) n FROM raw WHERE cpu IN (0, 1) AND "
                  "name IN ('sched_switch', 'ringtrace_marker') GROUP BY 1, 2")
    want = rows(d, "SELECT name, cpu, count(*) n FROM raw WHERE cpu + 0 IN (0, 1) AND "
                "name || '' IN ('sched_switch', 'ringtrace_marker') GROUP BY 1, 2")
    check(r == want and len(r) == 4, 'IN lists: %s, expected %s' % (r, want))
    check(st[0]['filters'] == 1 and 'cpu=in' in st[0]['plan'] and 'name=in' in st[0]['plan'],
          'IN lists: %d xFilter calls, plan %r' % (st[0]['filters'], st[0]['plan']))
    # Nothing to read: no stream is opened.
    r, st = stats(d, 'SELECT count(*) n FROM raw WHERE cpu = 7')
    check(r[0]['n'] == 0 and st[0]['cpus'] == 0, 'cpu = 7: %s %s' % (r, st))


@test
def limit_only_where_allowed(ctx):
    """LIMIT stops the scan when SQLite's answer is the first rows it
    gives (every term pushed, no ORDER BY but ORDER BY ts of one trace,
    the order rows come in); with another ORDER BY, or a term the table
    does not apply, the answer is still the right rows."""
    d = packed(ctx, packets=20, files=1)
    full = rows(d, 'SELECT ts, cpu, name FROM raw')
    r, st = stats(d, 'SELECT ts, cpu, name FROM raw LIMIT 5')
    check(len(r) == 5 and st[0]['rows'] == 5 and 'limit' in st[0]['plan'],
          'LIMIT 5 gave %d rows, the scan %d (plan %r)' % (len(r), st[0]['rows'], st[0]['plan']))
    check(st[0]['events_decoded'] < len(full) // 4,
          'LIMIT 5 decoded %d of %d events' % (st[0]['events_decoded'], len(full)))
    r, st = stats(d, 'SELECT ts, cpu, name FROM raw WHERE cpu = 1 LIMIT 3 OFFSET 4')
    want = [x for x in full if x['cpu'] == 1][4:7]
    check(r == want and st[0]['rows'] == 7, 'LIMIT 3 OFFSET 4: %s (%d scanned), expected %s' %
          (r, st[0]['rows'], want))
    r, st = stats(d, 'SELECT ts, cpu, name FROM raw ORDER BY cpu DESC, ts LIMIT 4')
    want = sorted(full, key=lambda x: (-x['cpu'], x['ts']))[:4]
    check(r == want and 'limit' not in st[0]['plan'], 'ORDER BY cpu LIMIT 4: %s, expected %s' %
          (r, want))
    # ORDER BY ts is the order rows come in (one trace): consumed, and
    # the LIMIT with it; DESC is SQLite's sort.
    r, st = stats(d, 'SELECT ts FROM raw WHERE cpu IN (0, 1) ORDER BY ts LIMIT 6')
    want = sorted(x['ts'] for x in full)[:6]
    check([x['ts'] for x in r] == want and st[0]['plan'] == 'cpu=in order limit' and
          st[0]['rows'] == 6, 'ORDER BY ts LIMIT 6: %s (plan %r, %d scanned), expected %s' %
          (r, st[0]['plan'], st[0]['rows'], want))
    r, st = stats(d, 'SELECT ts FROM raw ORDER BY ts DESC LIMIT 3')
    want = sorted((x['ts'] for x in full), reverse=True)[:3]
    check([x['ts'] for x in r] == want and 'order' not in st[0]['plan'],
          'ORDER BY ts DESC LIMIT 3: %s, expected %s' % (r, want))
    eqp = sql(d, "EXPLAIN QUERY PLAN SELECT * FROM raw WHERE ts > 5 AND cpu IN (0, 1) "
                 "AND name = 'x' ORDER BY ts").stdout
    check(re.search(r'SCAN raw VIRTUAL TABLE INDEX \d+:ts> cpu=in name= order', eqp),
          'EXPLAIN QUERY PLAN: %s' % eqp)
    r, st = stats(d, "SELECT ts, cpu, name FROM raw WHERE name LIKE 'sys%' LIMIT 2")
    want = [x for x in full if x['name'].startswith('sys')][:2]
    check(r == want and 'limit' not in st[0]['plan'], 'LIKE ... LIMIT 2: %s, expected %s' %
          (r, want))


# ---- output, several traces, errors -------------------------------------------------

@test
def csv_json_round_trip(ctx):
    """The same statement as --csv, --json and a table: csv and json read
    back as the same values, text with commas, quotes and line breaks
    included; NULL is empty in CSV, null in JSON, NULL in the table."""
    d = mixed_trace(ctx.path('mixed'), text=b'a,"b"\nc\\d')
    q = 'SELECT ts, cpu, name, utid, args, NULL AS empty, 1.5 AS half FROM raw'
    js = rows(d, q)
    c = list(csv.reader(io.StringIO(sql(d, q, '--csv').stdout, newline='')))
    check(c[0] == ['ts', 'cpu', 'name', 'utid', 'args', 'empty', 'half'], 'csv header %s' % c[0])
    check(len(c) - 1 == len(js) and len(js) > 50, 'csv %d rows, json %d' % (len(c) - 1, len(js)))
    for row, j in zip(c[1:], js):
        want = ['' if j[k] is None else str(j[k]) for k in
                ('ts', 'cpu', 'name', 'utid', 'args', 'empty', 'half')]
        check(row == want, 'csv %s\n  json %s' % (row, want))
    odd = [j for j in js if j['name'] == 'ringtrace_marker' and 'a,' in j['args']]
    check(odd and json.loads(odd[0]['args']) == {'len': 9, 'data': 'a,"b"\nc\\d'},
          'marker text through JSON: %s' % odd[:1])
    table = sql(d, 'SELECT ts, utid, NULL AS x FROM raw LIMIT 2').stdout.splitlines()
    check(table[0].split() == ['ts', 'utid', 'x'] and set(table[1]) <= {'-', ' '} and
          table[2].split()[-1] == 'NULL', 'the table: %s' % table[:3])


@test
def two_traces(ctx):
    """Two trace directories are one database: trace lists both (host
    from each trace's metadata), rows carry trace and host, each trace's
    counts are its own report --stat's, and trace = 1 opens only it."""
    a = mixed_trace(ctx.path('a'), seed=1)
    b = mixed_trace(ctx.path('b'), seed=2, packets=4)
    tr = rows([a, b], 'SELECT trace, host, dir FROM trace')
    check([(t['trace'], t['dir']) for t in tr] == [(0, a), (1, b)], 'trace table %s' % tr)
    for i, d in enumerate((a, b)):
        want = stat_events(report_stat(d))
        got = {(r['name'], r['cpu']): r['n'] for r in rows(
            [a, b], 'SELECT name, cpu, count(*) n FROM raw WHERE trace = %d GROUP BY 1, 2' % i)}
        check(got == want, 'trace %d: %s, report %s' % (i, got, want))
    r, st = stats([a, b], 'SELECT count(*) n, min(trace) t, max(host) h FROM raw WHERE trace = 1')
    check(st[0]['members'] == 1 and r[0]['t'] == 1 and r[0]['h'] == tr[1]['host'],
          'trace = 1: %s, %d members opened' % (r, st[0]['members']))
    # Traces are read one after the other: ORDER BY ts is SQLite's.
    r, st = stats([a, b], 'SELECT ts FROM raw ORDER BY ts LIMIT 7')
    want = sorted(x['ts'] for x in rows([a, b], 'SELECT ts FROM raw'))[:7]
    check([x['ts'] for x in r] == want and 'order' not in st[0]['plan'],
          'two traces ORDER BY ts LIMIT 7: %s, expected %s' % (r, want))
    r, st = stats([a, b], "SELECT count(*) n FROM raw WHERE host = 'no such host'")
    check(r[0]['n'] == 0 and st[0]['members'] == 0, 'an unknown host read %s' % st)


@test
def chunk_sets_one_trace(ctx):
    """The chunk sets of one recording, the first and one between them
    missing, are one trace (host from their manifests, nr_sets 2, nr_gaps
    2): each missing run is a lost row of kind missing_sets with no CPU,
    the one between two sets with the time it covers; the
    counts are report --stat's of the same sets, and a window across the
    sets gives report --begin/--end's events."""
    d = td.seek_trace(ctx.path('rot'), files=3, packets=30)
    sets = td.chunk_sets(ctx, d, host='web3')
    check(len(sets) == 3, '%d sets' % len(sets))
    two = [sets[0], sets[2]]
    tr = rows(two, 'SELECT host, nr_sets, nr_gaps FROM trace')
    check(tr == [{'host': 'web3', 'nr_sets': 2, 'nr_gaps': 2}], 'trace %s' % tr)
    gaps = rows(two, "SELECT ts, dur, cpu FROM lost WHERE kind = 'missing_sets'")
    mid = td.SEEK_T0 + 45 * td.SEEK_PACKET_NS      # inside set 2's time
    timed = [g for g in gaps if g['dur'] is not None]
    check(len(gaps) == 2 and all(g['cpu'] is None for g in gaps) and len(timed) == 1 and
          timed[0]['ts'] < mid < timed[0]['ts'] + timed[0]['dur'], 'gap rows %s' % gaps)
    r = td.rt('report', '--stat', *two)
    want = stat_events(r.stdout)
    got = {(x['name'], x['cpu']): x['count'] for x in
           rows(two, "SELECT name, cpu, count FROM event_count WHERE host = 'web3'")}
    check(got == want and want, 'event_count %s, report %s' % (got, want))
    b, e = td.SEEK_T0 + 20 * td.SEEK_PACKET_NS + 5, td.SEEK_T0 + 70 * td.SEEK_PACKET_NS
    r = td.rt('report', '--begin', td.seek_secs(b), '--end', td.seek_secs(e), *two)
    check(r.returncode == 0, 'report window: %s' % r.stderr)
    want = sorted((td.ts_ns(l), int(l.split()[1][3:])) for l in r.stdout.splitlines()
                  if l.startswith('[') and ' -- ' not in l and ': ' in l)
    got = sorted((x['ts'], x['cpu']) for x in
                 rows(two, 'SELECT ts, cpu FROM raw WHERE ts BETWEEN %d AND %d' % (b, e)))
    check(got == want and len(want) > 100, 'window across sets: %d rows, report %d' %
          (len(got), len(want)))


def metadata_offset(d):
    """The wall-clock offset of @d's metadata's clock, in ns."""
    with open(os.path.join(d, 'metadata')) as f:
        m = re.search(r'offset_s = (-?\d+);\s*offset = (\d+);', f.read())
    return int(m.group(1)) * 10**9 + int(m.group(2))


CLOCK_Q = ('SELECT wall_offset_ns, wall_offset_start_ns, wall_offset_end_ns, clock_drift_ns '
           'FROM trace')


@test
def clock_start_end_drift(ctx):
    """trace's wall_offset_start_ns is the metadata's clock offset (the
    recording's start), wall_offset_end_ns its end -- a trace directory's
    .ringtrace-clock.json, or the last chunk set's manifest -- and
    clock_drift_ns the end minus the start; both NULL when the directory
    has no end.  A clock file that cannot be read is said on stderr and
    the trace is read all the same."""
    d = td.seek_trace(ctx.path('plain'), files=1, packets=10)
    start = metadata_offset(d)
    got = rows(d, CLOCK_Q)
    want = [{'wall_offset_ns': start, 'wall_offset_start_ns': start,
             'wall_offset_end_ns': None, 'clock_drift_ns': None}]
    check(got == want, 'no clock file: %s, want %s' % (got, want))
    clock = os.path.join(d, '.ringtrace-clock.json')
    with open(clock, 'w') as f:
        json.dump({'format': 'ringtrace-clock', 'format_version': 1,
                   'end': {'monotonic_ns': 5, 'realtime_ns': start + 1234572,
                           'boottime_ns': 5, 'realtime_offset_ns': start + 1234567,
                           'boottime_offset_ns': 0}}, f)
    got = rows(d, CLOCK_Q)
    want[0].update(wall_offset_end_ns=start + 1234567, clock_drift_ns=1234567)
    check(got == want, 'clock file: %s, want %s' % (got, want))
    want[0].update(wall_offset_end_ns=None, clock_drift_ns=None)
    for bad in ('{"format": "ringtrace-clock", "format_version": 1, "end": {',
                '{"format": "ringtrace-clock", "format_version": 2, '
                '"end": {"realtime_offset_ns": 5}}',
                '{"format": "ringtrace-clock", "format_version": 1, "end": {}}'):
        with open(clock, 'w') as f:
            f.write(bad)
        r = sql(d, CLOCK_Q, '--json')
        got = arrays(r.stdout)[0]
        check(got == want and '.ringtrace-clock.json' in r.stderr and
              'clock drift is not known' in r.stderr,
              'clock file %r: %s (want %s), stderr %r' % (bad, got, want, r.stderr))
    os.unlink(clock)
    os.mkdir(clock)
    r = sql(d, CLOCK_Q, '--json')
    check(arrays(r.stdout)[0] == want and 'not a clock file' in r.stderr,
          'a directory for a clock file: %s, stderr %r' % (r.stdout, r.stderr))
    os.rmdir(clock)
    os.mkfifo(clock)          # opened as it is, it would hang the read
    r = sql(d, CLOCK_Q, '--json')
    check(arrays(r.stdout)[0] == want and 'not a clock file' in r.stderr,
          'a FIFO for a clock file: %s, stderr %r' % (r.stdout, r.stderr))
    os.unlink(clock)
    # An unpacked directory (plain cpuN streams) keeps its start and its end.
    with open(clock, 'w') as f:
        json.dump({'format': 'ringtrace-clock', 'format_version': 1,
                   'end': {'realtime_offset_ns': start - 55}}, f)
    u = ctx.path('unpacked')
    r = td.rt('unpack', d, u)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    got = rows(u, CLOCK_Q)
    want[0].update(wall_offset_end_ns=start - 55, clock_drift_ns=-55)
    check(got == want, 'unpacked: %s, want %s' % (got, want))

    d2 = td.seek_trace(ctx.path('rot'), files=3, packets=30)
    sets = td.chunk_sets(ctx, d2, host='web3')
    start = metadata_offset(d2)

    def man_offset(s, delta=None):
        path = os.path.join(s, 'manifest.json')
        with open(path) as f:
            man = json.load(f)
        if delta is not None:
            man['clock']['realtime_offset_ns'] = start + delta
            with open(path, 'w') as f:
                json.dump(man, f)
        return man['clock']['realtime_offset_ns']

    man_offset(sets[0], 100)
    man_offset(sets[2], -777)
    got = rows(sets, CLOCK_Q)
    want = [{'wall_offset_ns': start + 100, 'wall_offset_start_ns': start,
             'wall_offset_end_ns': start - 777, 'clock_drift_ns': -777}]
    check(got == want, 'sets: %s, want %s' % (got, want))
    got = rows(sets[1], CLOCK_Q)
    want = [{'wall_offset_ns': start, 'wall_offset_start_ns': start,
             'wall_offset_end_ns': start, 'clock_drift_ns': 0}]
    check(got == want, 'the middle set alone: %s, want %s' % (got, want))
    # A set recover finished: its clocks were made, not read.  The newest
    # set that was not recovered is the end; none, NULL.
    path = os.path.join(sets[2], 'manifest.json')
    with open(path) as f:
        man = json.load(f)
    man['recovered'] = True
    with open(path, 'w') as f:
        json.dump(man, f)
    got = rows(sets, CLOCK_Q)
    want = [{'wall_offset_ns': start + 100, 'wall_offset_start_ns': start,
             'wall_offset_end_ns': start, 'clock_drift_ns': 0}]
    check(got == want, 'the last set recovered: %s, want %s' % (got, want))
    got = rows(sets[2], CLOCK_Q)
    want = [{'wall_offset_ns': start - 777, 'wall_offset_start_ns': start,
             'wall_offset_end_ns': None, 'clock_drift_ns': None}]
    check(got == want, 'the recovered set alone: %s, want %s' % (got, want))


@test
def prompt_on_a_terminal(ctx):
    """No statement and a terminal on stdin: a prompt that runs each
    statement once it is complete (a second line's prompt until then),
    says a bad one and goes on, and ends at end of file."""
    import pty
    import select
    import subprocess
    import time
    master, slave = pty.openpty()
    p = subprocess.Popen([td.RINGTRACE, 'sql', REAL_TRACE], stdin=slave, stdout=slave,
                         stderr=slave, close_fds=True)
    os.close(slave)
    out = b''
    deadline = time.time() + 20

    def until(text):
        nonlocal out
        while text not in out and time.time() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    return
    until(b'sql> ')
    os.write(master, b'SELECT count(*) AS n\n')
    until(b'...> ')
    os.write(master, b'FROM raw;\n')
    until(b'5601')
    os.write(master, b'SELEC 1;\n')
    until(b'syntax error')
    os.write(master, b"SELECT name FROM raw WHERE name = 'task_rename';\n")
    until(b'task_rename\r\n')
    os.write(master, b'\x04')
    until(b'never')
    p.wait(timeout=10)
    os.close(master)
    text = out.decode(errors='replace')
    check(b'5601' in out and 'near "SELEC": syntax error' in text and
          text.count('sql> ') >= 4 and 'task_rename' in text.split('syntax error')[1],
          'the prompt printed %r' % text[-1500:])
    check(p.returncode == 1, 'the prompt ended with exit %d after a bad statement' % p.returncode)


@test
def bad_statements(ctx):
    """A syntax error, an unknown table, an unknown column, a statement
    that fails part way: SQLite's message, exit 1; a usage error exits 2."""
    for q, msg in (('SELEC 1', 'near "SELEC": syntax error'),
                   ('SELECT * FROM nosuch', 'no such table: nosuch'),
                   ('SELECT nosuch FROM raw', 'no such column: nosuch'),
                   ('INSERT INTO raw VALUES (1)', 'table raw may not be modified'),
                   ("SELECT json_extract(args, '$[') FROM raw", 'JSON path error')):
        r = sql(REAL_TRACE, q, status=1)
        check(msg in r.stderr and r.stderr.startswith('ringtrace: '),
              '%r: stderr %r, expected %r' % (q, r.stderr, msg))
    r = td.rt('sql', 'SELECT 1')
    check(r.returncode == 2 and 'a trace directory is needed' in r.stderr,
          'no directory: exit %d %r' % (r.returncode, r.stderr))
    r = td.rt('sql', os.path.join(ctx.tmp, 'none'), 'SELECT 1')
    check(r.returncode == 1, 'a missing directory: exit %d %r' % (r.returncode, r.stderr))


# ---- scheduling: sched_slice, thread_state (issue 31 P3) ---------------------------------

def sql_part(name):
    """check_<name> of sql.d/<name>.py, its failures this suite's."""
    fn = dict(load_parts([name]))[name]

    def run(d, status=0):
        try:
            fn(SqlDb(d, status=status))
        except SqlFail as e:
            raise Fail(str(e))
    return run


SCHED_EVENTS = td.KERNEL_EVENTS + [(3, 'sched_waking', td.MODULE_LAYOUTS['sched_waking']),
                                   (6, 'sched_wakeup_new', td.MODULE_LAYOUTS['sched_waking'])]
US = 1000                       # the hand-built trace's time unit, ns
T0 = 10**9


def sw(prev, prev_state, nxt, next_prio=20):
    """sched_switch from tid @prev (in @prev_state) to @nxt."""
    return struct.pack('<16siiq16sii', b'p%d' % prev, prev, 20, prev_state,
                       b'n%d' % nxt, nxt, next_prio)


def wk(tid, target_cpu):
    return struct.pack('<16siii', b'w%d' % tid, tid, 20, target_cpu)


def sched_trace(d):
    """Two CPUs, times in µs after T0.  CPU 0: idle -> 100 (A), A blocks
    (S) for 101 (B), B wakes A (sched_waking, then sched_wakeup: one
    wakeup), A preempts B (R+), A waits in D, 3 events lost, B sleeps,
    idle wakes A (an interrupt), A runs to the end.  CPU 1: 200 runs from
    the CPU's first switch, whose prev is 300 (the chain broken), 300
    sleeps from there, 400 is new (sched_wakeup_new) and runs to the
    end; a marker at 9500 is the trace's last item."""
    ev = lambda t, eid, p: (T0 + t * US, eid, p)  # noqa: E731
    cpu0 = [(T0, T0 + 5500 * US, 0, [
        ev(1000, 1, sw(0, 0, 100)), ev(2000, 1, sw(100, 1, 101)),
        ev(3000, 3, wk(100, 1)), ev(3500, 2, wk(100, 1)),
        ev(4000, 1, sw(101, 256, 100)), ev(5000, 1, sw(100, 2, 101))]),
        (T0 + 6000 * US, T0 + 10000 * US, 3, [
        ev(7000, 1, sw(101, 1, 0)), ev(8000, 2, wk(100, 0)), ev(9000, 1, sw(0, 0, 100))])]
    cpu1 = [(T0 + 1000 * US, T0 + 10000 * US, 0, [
        ev(1500, 1, sw(0, 0, 200)), ev(2500, 1, sw(300, 1, 0)),
        ev(6000, 6, wk(400, 1)), ev(6500, 1, sw(0, 0, 400, next_prio=10)),
        ev(9500, 0, marker(b'end'))])]
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, SCHED_EVENTS))
    for cpu, pk in ((0, cpu0), (1, cpu1)):
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            for seq, (b, e, disc, evs) in enumerate(pk):
                f.write(td.kpacket(uuid, cpu, seq, evs, b, e, disc))
    return d


def rel(rows):
    """Rows with ts in µs after T0 and dur in µs, as tuples."""
    out = []
    for r in rows:
        r = dict(r)
        r['ts'] = (r['ts'] - T0) / US
        r['dur'] = r['dur'] / US
        out.append(tuple(r.values()))
    return sorted(out, key=repr)


@test
def sched_hand_built_rows(ctx):
    """A hand-built switch/wakeup sequence (sched_trace()): every
    thread_state and sched_slice row exactly -- Running where report
    counts on-CPU time, S/D/R+ from prev_state, R from a blocked thread's
    first wakeup with the waker (sched_waking's owner; idle's for an
    interrupt's wakeup; a second wakeup changes nothing), a loss inside a
    slice keeps it, a broken chain is state NULL and no slice, open spans
    end at the trace's last item; and the sums are report --stat's."""
    d = sched_trace(ctx.path('sched'))
    got = rel(rows(d, 'SELECT ts, dur, utid, state, cpu, waker_utid FROM thread_state'))
    want = sorted([
        (1000, 1000, 100, 'Running', 0, None), (2000, 1000, 100, 'S', 0, None),
        (3000, 1000, 100, 'R', 1, 101), (4000, 1000, 100, 'Running', 0, None),
        (5000, 3000, 100, 'D', 0, None), (8000, 1000, 100, 'R', 0, 0),
        (9000, 500, 100, 'Running', 0, None),
        (2000, 2000, 101, 'Running', 0, None), (4000, 1000, 101, 'R+', 0, None),
        (5000, 2000, 101, 'Running', 0, None), (7000, 2500, 101, 'S', 0, None),
        (7000, 2000, 0, 'Running', 0, None), (2500, 4000, 0, 'Running', 1, None),
        (1500, 1000, 200, None, 1, None), (2500, 7000, 300, 'S', 1, None),
        (6000, 500, 400, 'R', 1, 0), (6500, 3000, 400, 'Running', 1, None),
    ], key=repr)
    check(got == want, 'thread_state:\n  got  %s\n  want %s\n  differ %s' %
          (got, want, sorted(set(got) ^ set(want), key=repr)))
    got = rel(rows(d, 'SELECT ts, dur, cpu, utid, end_state, priority FROM sched_slice'))
    want = sorted([
        (1000, 1000, 0, 100, 'S', 120), (2000, 2000, 0, 101, 'R+', 120),
        (4000, 1000, 0, 100, 'D', 120), (5000, 2000, 0, 101, 'S', 120),
        (7000, 2000, 0, 0, 'R', 120), (9000, 500, 0, 100, None, 120),
        (2500, 4000, 1, 0, 'R', 120), (6500, 3000, 1, 400, None, 110),
    ], key=repr)
    check(got == want, 'sched_slice:\n  got  %s\n  want %s' % (got, want))
    check(stat_losses(report_stat(d))[0][0] == 3, 'CPU 0 does not lose 3 events')
    sql_part('sched')(d)
    # Two traces: each one's spans as alone, its utids carrying its number.
    q = ('SELECT trace, count(*) n, sum(dur) d, sum(utid >> 32 != trace) bad, '
         'sum(waker_utid >> 32 != trace) wbad FROM thread_state GROUP BY trace')
    got = rows([d, REAL_TRACE], q)
    want = [dict(r, trace=i) for i, x in enumerate((d, REAL_TRACE)) for r in rows(x, q)]
    check(got == want and all(r['bad'] == r['wbad'] == 0 for r in got) and got[1]['n'] > 1000,
          'two traces: %s, alone %s' % (got, want))


@test
def sched_agrees_with_report(ctx):
    """Σ thread_state Running and Σ sched_slice per thread are report
    --stat's on_cpu_ms (every thread it lists, at its rounding), and the
    slices are the Running spans one for one: on synthetic traces with
    losses (one file, rotated stored chunks, packed), on the real trace,
    and on it with a damaged header (exit 3)."""
    check_sched = sql_part('sched')
    check_sched(mixed_trace(ctx.path('mixed')))
    check_sched(td.seek_trace(ctx.path('seek'), packets=20))
    check_sched(packed(ctx, packets=20))
    check_sched(REAL_TRACE)
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    check_sched(bad, status=3)


@test
def sched_windows_equal_full_scan(ctx):
    """12 random windows of the real trace (end_ts >= a AND ts <= b, the
    spans that touch [a, b]): thread_state's and sched_slice's rows are
    the whole table's filtered here."""
    for table in ('thread_state', 'sched_slice'):
        q = 'SELECT ts, dur, end_ts, utid, cpu FROM ' + table
        full = rows(REAL_TRACE, q)
        check(len(full) > 500, '%s has %d rows' % (table, len(full)))
        lo, hi = min(r['ts'] for r in full), max(r['end_ts'] for r in full)
        rng = random.Random(table)
        cases = []
        for _ in range(6):
            a = rng.randrange(lo - 10**6, hi)
            cases.append((a, a + rng.choice((0, 10**5, 10**7, 10**9))))
        text = ';'.join('%s WHERE end_ts >= %d AND ts <= %d' % (q, a, b) for a, b in cases)
        key = lambda r: (r['ts'], r['utid'], r['cpu'], r['dur'])  # noqa: E731
        for (a, b), got in zip(cases, arrays(sql(REAL_TRACE, text, '--json').stdout)):
            want = sorted((r for r in full if r['end_ts'] >= a and r['ts'] <= b), key=key)
            check(sorted(got, key=key) == want, '%s [%d, %d]: %d rows, the full scan %d' %
                  (table, a, b, len(got), len(want)))


def sched_mix_trace(d, cpus=2, threads=24, n=24000, per_packet=40, seed=5, visitor=None,
                    visitor_wakes=False, waker_ctx=False):
    """A scheduler at work as rotated stored chunks, three a CPU: threads
    switched out in R, S, D or preempted (R+), sleepers woken
    (sched_waking, then sometimes sched_wakeup), markers between, events
    discarded and packets lost now and then; system calls, irqs and
    softirqs entered and left at random (nested, unpaired, left open);
    thread 99 sleeps from the first event to the end (a span as long as
    the trace); tid @visitor (if given) runs once, on the last CPU halfway
    through, for two markers (@visitor_wakes: and wakes a sleeper between
    them); @waker_ctx: sched_waking carries waker_ctx, a third of them
    1 to 3 (in an interrupt, recorded or not)."""
    rng = random.Random(seed)
    ctx_rng = random.Random(seed + 1)
    events = SCHED_EVENTS
    if waker_ctx:
        events = [e if e[1] != 'sched_waking' else (3, 'sched_waking', td.SCHED_WAKING_CTX)
                  for e in SCHED_EVENTS]

    def waking(tid, target_cpu):
        if not waker_ctx:
            return wk(tid, target_cpu)
        return wk(tid, target_cpu) + struct.pack('<B', ctx_rng.choice((0, 0, 0, 0, 0, 0, 1, 2, 3)))
    cur = {c: 0 for c in range(cpus)}
    runnable = set(range(100, 100 + threads))
    sleeping = set()
    evs = {c: [] for c in range(cpus)}
    t = T0
    evs[0].append((t, 1, sw(99, 1, 0)))
    for i in range(n):
        if visitor is not None and i == n // 2:
            c = cpus - 1
            evs[c] += [(t + 10, 1, sw(cur[c], 256, visitor)), (t + 20, 0, td.marker(b'v1'))]
            if visitor_wakes and sleeping:
                w = min(sleeping)
                sleeping.discard(w)
                runnable.add(w)
                evs[c].append((t + 25, 3, waking(w, 0)))
            evs[c] += [(t + 30, 0, td.marker(b'v2')), (t + 40, 1, sw(visitor, 1, cur[c]))]
            t += 40
        t += rng.randrange(200, 3000)
        c = rng.randrange(cpus)
        r = rng.random()
        if r < 0.35:
            prev = cur[c]
            state = 0 if prev == 0 else rng.choice((0, 1, 1, 2, 256))
            if prev and state & 3:
                sleeping.add(prev)
            elif prev:
                runnable.add(prev)
            nxt = rng.choice(sorted(runnable)) if runnable and rng.random() < 0.8 else 0
            runnable.discard(nxt)
            evs[c].append((t, 1, sw(prev, state, nxt, rng.randrange(20))))
            cur[c] = nxt
        elif r < 0.55 and sleeping:
            w = rng.choice(sorted(sleeping))
            sleeping.discard(w)
            runnable.add(w)
            evs[c].append((t, 3, waking(w, rng.randrange(cpus))))
            if rng.random() < 0.5:
                t += 10
                evs[c].append((t, 2, wk(w, rng.randrange(cpus))))
        elif r < 0.65:
            nr = rng.choice((0, 4, 110))
            evs[c].append((t, 11, sys_entry(nr, i, 2)) if rng.random() < 0.55 else
                          (t, 12, sys_exit(nr, -i)))
        elif r < 0.75:
            num = rng.choice((5, 7))
            evs[c].append((t, 7, irq_entry(num, b'eth%d' % num)) if rng.random() < 0.5 else
                          (t, 8, struct.pack('<ii', num, 1)))
        elif r < 0.82:
            evs[c].append((t, rng.choice((9, 10)), struct.pack('<I', rng.choice((1, 3)))))
        else:
            evs[c].append((t, 0, td.marker(b'm%d' % i)))
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, events))
    for c in range(cpus):
        disc = seq = 0
        e = evs[c]
        pks = []
        for k in range(0, len(e), per_packet):
            pk = e[k:k + per_packet]
            if rng.random() < 0.03:
                disc += rng.randrange(1, 5)
            if rng.random() < 0.02:
                seq += 1
            pks.append(td.kpacket(uuid, c, seq, pk, pk[0][0] - 5, pk[-1][0] + 5, disc))
            seq += 1
        third = (len(pks) + 2) // 3
        for k in range(3):
            with open(os.path.join(d, 'cpu%d-%06d.zst' % (c, k + 1)), 'wb') as f:
                f.write(td.stored_chunk(pks[k * third:(k + 1) * third]))
    return d


SCHEDREC = re.compile(r'schedrec check: member 0: (\d+) points: (\d+) equal, (\d+) not told, '
                      r'(\d+) differ; .* (\d+) frames read: (\d+) differ, (\d+) unlearnt')


def real_packed(d, damage=None):
    """The recorded trace (6.12, 2 CPUs, a state dump, irqs, wakeups and
    cpu1's full-buffer losses) as three stored chunks a CPU, packed in
    4 KiB frames; @damage=(cpu, k): packet k of that CPU gets an unknown
    event id first.  Returns it and {file: the packets it holds}."""
    plain = d + '-plain'
    r = td.rt('unpack', REAL_TRACE, plain)
    check(r.returncode == 0, 'unpack: ' + r.stderr)
    os.makedirs(d)
    shutil.copy(os.path.join(plain, 'metadata'), d)
    want = {}
    for cpu in (0, 1):
        data = bytearray(open(os.path.join(plain, 'cpu%d' % cpu), 'rb').read())
        offs = td.packets_of(data) + [len(data)]
        if damage and damage[0] == cpu:
            struct.pack_into('<I', data, offs[damage[1]] + 88, 29)
        pks = [bytes(data[offs[i]:offs[i + 1]]) for i in range(len(offs) - 1)]
        third = (len(pks) + 2) // 3
        for k in range(3):
            name = 'cpu%d-%06d.zst' % (cpu, k + 1)
            want[name] = b''.join(pks[k * third:(k + 1) * third])
            with open(os.path.join(d, name), 'wb') as f:
                f.write(td.stored_chunk(pks[k * third:(k + 1) * third]))
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d, want


def schedrec_check(d, status=0):
    """The records' check of @d's checkpoints (RINGTRACE_SQL_SCHEDREC_CHECK;
    the window reads the trace as without records, which builds them):
    (points, equal, not told, differ, frames, frames differ, unlearnt)."""
    r = sql(d, 'SELECT count(*) FROM thread_state WHERE ts > 1', '--no-cache',
            env=dict(NO_RECORDS, RINGTRACE_SQL_SCHEDREC_CHECK='1'), status=status)
    m = SCHEDREC.search(r.stderr)
    check(m, '%s: no check of the scheduler records: %s' % (d, r.stderr[-1500:]))
    return tuple(map(int, m.groups()))


@test
def sched_records_are_the_walks(ctx):
    """Packed chunks carry scheduler records (issue 31): at every
    checkpoint the walk that builds thread_state's checkpoints takes, and
    at its end, the state the records of every CPU give -- the frames
    they cannot tell about decoded, as a reader decodes the frame a point
    lies in -- is the walk's, each CPU and thread; and each frame's record
    is the one its items make.  On the scheduler mix (wakeups, irqs
    nested and left open, losses; three chunks a CPU; frames of 4 and 16
    KiB; and with sched_waking's waker_ctx naming interrupts no entry
    recorded, which the walk counts as in one), on the recorded 6.12
    trace packed, and on it with a damaged
    packet (its frame's record says to decode it: it is, and the states
    are still the walk's).  zstd -d of a packed chunk is its packets alone
    (what babeltrace2 reads); a trace without records is read as before."""
    cases = []
    for frame, ctxs in (('4K', False), ('16K', False), ('4K', True)):
        d = ctx.path('mix%s%s' % (frame, '-ctx' if ctxs else ''))
        sched_mix_trace(d, waker_ctx=ctxs)
        r = td.rt('compress', '--frame-size', frame, '-j', '1', d)
        check(r.returncode == 0, 'compress: ' + r.stderr)
        cases.append((d, 0, 0))
    real, want = real_packed(ctx.path('real'))
    cases.append((real, 0, 0))
    cases.append((real_packed(ctx.path('real-damaged'), (1, 3))[0], 3, 1))
    for d, status, unlearnt in cases:
        pts, eq, untold, differ, frames, fdiffer, unl = schedrec_check(d, status)
        check(pts > 500 and eq == pts and not untold and not differ,
              '%s: %d points, %d equal, %d not told, %d differ' % (d, pts, eq, untold, differ))
        check(frames > 20 and not fdiffer and unl == unlearnt,
              '%s: %d frames read, %d records differ from their items\', %d unlearnt (want %d)' %
              (d, frames, fdiffer, unl, unlearnt))
    for name, packets in sorted(want.items()):
        path = os.path.join(real, name)
        check(struct.pack('<I', 0x184D2A5D) in open(path, 'rb').read(),
              '%s: no scheduler records' % name)
        out = subprocess.run(['zstd', '-dcq', path], stdout=subprocess.PIPE, check=True).stdout
        check(out == packets, '%s: zstd -d gives more than its packets' % name)
    r = sql(REAL_TRACE, 'SELECT count(*) FROM thread_state WHERE ts > 1', '--no-cache',
            env={'RINGTRACE_SQL_SCHEDREC_CHECK': '1'})
    check('no scheduler records' in r.stderr and not SCHEDREC.search(r.stderr),
          'a trace without records: %s' % r.stderr[-800:])


# A packed trace read as without its scheduler records: windows of the span
# tables need the checkpoints (what a trace packed before them gets).
NO_RECORDS = {'RINGTRACE_SQL_SCHEDREC': '0'}

SPAN_TABLES = {
    'thread_state': 'ts, dur, end_ts, utid, state, cpu, waker_utid, irq_context',
    'sched_slice': 'ts, dur, end_ts, cpu, utid, end_state, priority',
    'syscall': 'ts, dur, end_ts, utid, cpu, id, name, args, ret',
    'wakeup': 'ts, cpu, waker_utid, wakee_utid, target_cpu, event, latency, waker_ctx',
    'irq': 'ts, dur, end_ts, cpu, utid, irq, name, depth, ret',
    'softirq': 'ts, dur, end_ts, cpu, utid, vec, name, depth',
}


def span_windows(rng, lo, hi, end, n=20):
    """@n (where, keep(row)) of random windows of [lo, hi]: the forms a
    span's time is asked by (overlap, one-sided, BETWEEN, =); @end: the
    table's end column ('ts' for wakeup, whose rows are instants).  SQL's
    NULL compares false, as keep() does."""
    def cmp(r, col, op, x):
        v = r[col]
        return v is not None and (v >= x if op == '>=' else v <= x if op == '<=' else
                                  v > x if op == '>' else v < x if op == '<' else v == x)
    forms = [(('%s >= {a} AND ts <= {b}' % end), lambda r, a, b: cmp(r, end, '>=', a) and
              cmp(r, 'ts', '<=', b)),
             ('ts BETWEEN {a} AND {b}', lambda r, a, b: cmp(r, 'ts', '>=', a) and
              cmp(r, 'ts', '<=', b)),
             (('%s > {a} AND %s < {b}' % (end, end)), lambda r, a, b: cmp(r, end, '>', a) and
              cmp(r, end, '<', b)),
             ('ts >= {a}', lambda r, a, b: cmp(r, 'ts', '>=', a)),
             (('%s <= {b}' % end), lambda r, a, b: cmp(r, end, '<=', b)),
             (('%s >= {a} AND ts < {b} AND cpu = 1' % end), lambda r, a, b:
              cmp(r, end, '>=', a) and cmp(r, 'ts', '<', b) and r['cpu'] == 1),
             ('ts = {a}', lambda r, a, b: cmp(r, 'ts', '=', a))]
    out = []
    for i in range(n):
        a = rng.randrange(lo - 10**6, hi)
        b = a + rng.choice((0, 10**4, 10**5, 10**6, 10**7))
        w, keep = forms[i % len(forms)]
        out.append((w.format(a=a, b=b), lambda r, a=a, b=b, keep=keep: keep(r, a, b)))
    return out


def mix_packed(ctx):
    d = sched_mix_trace(ctx.path('mix'))
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


@test
def span_windows_equal_full_scan(ctx):
    """Every span table (thread_state, sched_slice, syscall, wakeup, irq,
    softirq) over 20 random windows each of a packed trace of a scheduler
    at work (sched_mix_trace(): sleepers, wakeups, losses, calls and
    interrupts left open, a thread asleep for the whole trace): the rows
    read through the checkpoints, the same with RINGTRACE_SEEK=0 and the
    full table filtered here are the same, column for column."""
    d = mix_packed(ctx)
    for table, cols in SPAN_TABLES.items():
        q = 'SELECT %s FROM %s' % (cols, table)
        full = rows(d, q)
        end = 'ts' if table == 'wakeup' else 'end_ts'
        check(len(full) > 500, '%s has %d rows' % (table, len(full)))
        lo = min(r['ts'] for r in full)
        hi = max(r[end] for r in full if r[end] is not None)
        cases = span_windows(random.Random(table), lo, hi, end)
        text = ';'.join('%s WHERE %s' % (q, w) for w, _ in cases)
        seek = arrays(sql(d, text, '--json').stdout)
        nseek = arrays(sql(d, text, '--json', env={'RINGTRACE_SEEK': '0'}).stdout)
        key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
        for (w, keep), s, n in zip(cases, seek, nseek):
            want = sorted((r for r in full if keep(r)), key=key)
            got = sorted(s, key=key)
            if got != want:
                g, x = set(map(key, got)), set(map(key, want))
                check(False, '%s WHERE %s: %d rows, the full scan filtered %d; only in '
                      'one %s' % (table, w, len(got), len(want), sorted(g ^ x)[:6]))
            check(sorted(n, key=key) == want, '%s WHERE %s: RINGTRACE_SEEK=0 gives %d rows, '
                  'expected %d' % (table, w, len(n), len(want)))


@test
def span_windows_read_the_window(ctx):
    """scan_stats, for every span table: a window reads no more frames
    than raw's window of the same [a, b] and 2 a CPU (the checkpoint
    before a, the one after b), over 5 random windows and the last 1 %;
    the checkpoints are built once per run (row 'sched index' or 'span
    index': every frame), not again for the next statement (the trace
    read as without scheduler records: first_window_from_sched_records
    has them)."""
    d = mix_packed(ctx)
    full, st = stats(d, 'SELECT min(ts) lo, max(end_ts) hi FROM thread_state')
    whole = st[0]['frames_read']
    check(len(st) == 1 and whole > 100, 'the whole table: %s' % st)
    lo, hi = full[0]['lo'], full[0]['hi']
    rng = random.Random(7)
    wins = [(a, a + (hi - lo) // 100) for a in (rng.randrange(lo, hi) for _ in range(5))]
    wins.append((hi - (hi - lo) // 100, hi))
    for table in SPAN_TABLES:
        end = 'ts' if table == 'wakeup' else 'end_ts'
        index = 'sched index' if table in ('thread_state', 'sched_slice') else 'span index'
        for a, b in wins:
            q = ('SELECT count(*) n FROM %s WHERE %s >= %d AND ts <= %d; '
                 'SELECT * FROM scan_stats; '
                 'SELECT count(*) n FROM raw WHERE ts BETWEEN %d AND %d; '
                 'SELECT * FROM scan_stats' % (table, end, a, b, a, b))
            got, st, _, raw = arrays(sql(d, q, '--json', env=NO_RECORDS).stdout)
            cur = [x for x in st if x['tbl'] == table]
            idx = [x for x in st if x['tbl'] == index]
            check(len(cur) == 1 and cur[0]['plan'] == '%s>= ts<=' % end,
                  '%s [%d, %d]: scan_stats %s' % (table, a, b, st))
            check(len(idx) == 1 and idx[0]['frames_read'] == whole,
                  '%s: the checkpoints read %s frames, the whole trace %d' % (table, idx, whole))
            check(cur[0]['frames_read'] <= raw[0]['frames_read'] + 2 * 2,
                  '%s [%d, %d]: %d frames read, raw\'s window %d (of %d)' %
                  (table, a, b, cur[0]['frames_read'], raw[0]['frames_read'], whole))
            want = rows(d, 'SELECT count(*) n FROM %s WHERE %s + 0 >= %d AND ts + 0 <= %d' %
                        (table, end, a, b))
            check(got == want, '%s [%d, %d]: %s, unpushed %s' % (table, a, b, got, want))
        # Two windows in one run: the second reads its window alone.
        q = ('SELECT count(*) FROM %s WHERE %s >= %d AND ts <= %d; '
             'SELECT count(*) FROM %s WHERE %s >= %d AND ts <= %d; SELECT * FROM scan_stats' %
             ((table, end) + wins[0] + (table, end) + wins[1]))
        st = arrays(sql(d, q, '--json', env=NO_RECORDS).stdout)[2]
        check([x['tbl'] for x in st] == [table] and st[0]['frames_read'] < whole // 10,
              '%s: a second window in the same run: %s' % (table, st))

def stats_damaged(d, query, env=None, damaged=False):
    """stats(), exit 3 allowed when @damaged (damage read past: a window
    may not reach it)."""
    r = td.rt_env(env or {}, 'sql', '--json', d, query + '; SELECT * FROM scan_stats',
                  asan=False)
    check(r.returncode in ((0, 3) if damaged else (0,)) and 'Sanitizer' not in r.stderr,
          'sql %r: exit %d: %s' % (query, r.returncode, r.stderr[-1500:]))
    a = arrays(r.stdout)
    check(len(a) == 2, '%r then scan_stats printed %d arrays' % (query, len(a)))
    return a[0], a[1]


def first_window_check(d, wins, tight, damaged=False, cpus=2):
    """thread_state and sched_slice over each [a, b] of @wins (b None: to
    the end) in a fresh process each: no 'sched index' row (the records
    give the window its start), fewer frames read than the checkpoints'
    way (RINGTRACE_SQL_SCHEDREC=0: a pass over every frame, then the
    window), and its rows, which are the whole table's filtered.  @tight:
    a window to the end reads raw's frames of it and at most 3 a CPU more
    (the frame each CPU is in at a, read up to a for the records and again
    by the window, and the packet before), one with an end under a fifth
    of the whole trace's frames (past b, the frames where the spans still
    open end, and the last ones, where those nothing ends close).
    Returns the rows compared; @damaged: a trace with damage."""
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    n = 0
    for table in ('thread_state', 'sched_slice'):
        cols = SPAN_TABLES[table]
        full, fst = stats_damaged(d, 'SELECT %s FROM %s' % (cols, table), damaged=damaged)
        whole = fst[0]['frames_read']
        for a, b in wins:
            where = 'end_ts >= %d' % a + ('' if b is None else ' AND ts <= %d' % b)
            q = 'SELECT %s FROM %s WHERE %s' % (cols, table, where)
            got, st = stats_damaged(d, q, damaged=damaged)
            ref, rst = stats_damaged(d, q, env=NO_RECORDS, damaged=damaged)
            frames = sum(x['frames_read'] for x in st)
            check([x['tbl'] for x in st] == [table] and
                  frames < sum(x['frames_read'] for x in rst),
                  '%s WHERE %s: scan_stats %s, without records %s' % (table, where, st, rst))
            check(sorted(x['tbl'] for x in rst) == ['sched index', table],
                  '%s WHERE %s without records: scan_stats %s' % (table, where, rst))
            if tight:
                raw = stats(d, 'SELECT count(*) FROM raw WHERE ts >= %d' % a +
                            ('' if b is None else ' AND ts <= %d' % b))[1][0]['frames_read']
                check(frames <= (raw + 3 * cpus if b is None else whole // 5),
                      '%s WHERE %s: %d frames read, raw\'s window %d, the whole %d' %
                      (table, where, frames, raw, whole))
            want = sorted((r for r in full if r['end_ts'] is not None and r['end_ts'] >= a and
                           (b is None or r['ts'] <= b)), key=key)
            check(sorted(got, key=key) == want and sorted(ref, key=key) == want,
                  '%s WHERE %s: %d rows from the records, %d from the checkpoints, %d of the '
                  'whole table' % (table, where, len(got), len(ref), len(want)))
            n += len(want)
    return n


@test
def first_window_from_sched_records(ctx):
    """A packed trace's scheduler records start a process's first window
    of thread_state and sched_slice (issue 31): no pass over the trace
    for the checkpoints, the rows of the checkpoints' way and of the whole
    table filtered (first_window_check()): the last 1 % (to the end), a
    window in the middle and one near the start, on the scheduler mix
    packed in 4 KiB frames (thread 99 asleep for the whole trace: its
    span ends at the last item, found without reading up to there), with
    waker_ctx, on the recorded 6.12 trace packed, and on it with a
    damaged packet (its frame decoded)."""
    cases = [(mix_packed(ctx), True, False)]
    d = ctx.path('mixctx')
    sched_mix_trace(d, waker_ctx=True)
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    cases.append((d, True, False))
    cases.append((real_packed(ctx.path('real'))[0], False, False))
    cases.append((real_packed(ctx.path('real-damaged'), (1, 3))[0], False, True))
    for d, tight, damaged in cases:
        ext = stats_damaged(d, 'SELECT min(ts) lo, max(end_ts) hi FROM thread_state',
                            damaged=damaged)[0][0]
        lo, hi = ext['lo'], ext['hi']
        span = hi - lo
        mid = lo + span // 2
        n = first_window_check(d, [(hi - span // 100, None), (mid, mid + span // 100),
                                   (lo + span // 10, lo + span // 10 + span // 50)], tight,
                               damaged)
        check(n > 100, '%s: %d rows in the windows' % (d, n))


# ---- the checkpoints kept on disk (plan-31 D5) ---------------------------------------

def mix_at(d, n, seed=5, frame='4K'):
    """sched_mix_trace() of @n events packed at @d (zstd frames of
    @frame), whatever was there before (the same file names: chunks 1-3 of
    each CPU)."""
    shutil.rmtree(d, ignore_errors=True)
    sched_mix_trace(d, n=n, seed=seed)
    r = td.rt('compress', '--frame-size', frame, '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


def extent(d):
    """(first ts, last end_ts, frames of the whole) of thread_state, no cache."""
    full, st = stats(d, 'SELECT min(ts) lo, max(end_ts) hi FROM thread_state',
                     env={'RINGTRACE_SQL_CACHE': ''})
    return full[0]['lo'], full[0]['hi'], st[0]['frames_read']


def cache_windows(lo, hi, per=100):
    """A window of 1/@per of the trace in the middle (spans open at its
    far checkpoint come from the index) and the last 1/@per."""
    w = (hi - lo) // per
    return [((lo + hi) // 2, (lo + hi) // 2 + w), (hi - w, hi)]


def cache_setup(ctx, d, per=100):
    """(the cache directory, the environment that names it, frames of the
    whole trace @d, cache_windows() of it) for a cache test."""
    cache = ctx.path('cache')
    lo, hi, whole = extent(d)
    return cache, {'RINGTRACE_SQL_CACHE': cache}, whole, cache_windows(lo, hi, per)


def cache_run(d, wins, env, *opts, asan=False):
    """One process: thread_state and sched_slice over @wins (their rows),
    scan_stats of the first window, and raw's frames over it; the packed
    trace read as without scheduler records (RINGTRACE_SQL_SCHEDREC=0:
    the windows need the checkpoints)."""
    env = dict(env, **NO_RECORDS)
    ts = 'SELECT %s FROM thread_state WHERE end_ts >= %%d AND ts <= %%d' % \
        SPAN_TABLES['thread_state']
    ss = 'SELECT %s FROM sched_slice WHERE end_ts >= %%d AND ts <= %%d' % \
        SPAN_TABLES['sched_slice']
    q = '; '.join([ts % wins[0], 'SELECT * FROM scan_stats',
                   'SELECT count(*) n FROM raw WHERE ts BETWEEN %d AND %d' % wins[0],
                   'SELECT * FROM scan_stats', ts % wins[1], ss % wins[0], ss % wins[1]])
    r = sql(d, q, '--json', *opts, env=env, asan=asan)
    a = arrays(r.stdout)
    check(len(a) == 7, 'printed %d arrays' % len(a))
    return {'rows': [a[0], a[4], a[5], a[6]], 'st': a[1], 'raw': a[3][0]['frames_read'],
            'stderr': r.stderr}


def index_row(run):
    idx = [x for x in run['st'] if x['tbl'] == 'sched index']
    check(len(idx) == 1, 'scan_stats has %d sched index rows: %s' % (len(idx), run['st']))
    return idx[0]


def check_built(run, whole, what):
    idx = index_row(run)
    check(idx['plan'] != 'cache' and idx['frames_read'] == whole,
          '%s: the checkpoints should be built (%d frames), scan_stats: %s' %
          (what, whole, run['st']))


def check_cached(run, what, cpus=2):
    idx = index_row(run)
    cur = [x for x in run['st'] if x['tbl'] == 'thread_state']
    check(idx['plan'] == 'cache' and idx['frames_read'] == 0,
          '%s: the checkpoints should come from the cache, scan_stats: %s' % (what, run['st']))
    check(len(cur) == 1 and cur[0]['frames_read'] <= run['raw'] + 2 * cpus,
          '%s: the window read %s frames, raw\'s %d' % (what, cur, run['raw']))


def cache_files(cache):
    return sorted(f for f in os.listdir(cache)) if os.path.isdir(cache) else []


@test
def cache_next_process_reads_the_window(ctx):
    """A process's first window builds the sched checkpoints (scan_stats
    row 'sched index': every frame) and keeps them in RINGTRACE_SQL_CACHE,
    one file; the next process's windows read them from there (the row's
    plan 'cache', no frame) and then no more frames than raw's window and
    2 a CPU; thread_state and sched_slice give the rows of a run without
    the cache.  --no-cache and RINGTRACE_SQL_CACHE='' neither read nor
    write it; a cache directory that cannot be made is one note on stderr
    and the same rows."""
    d = mix_packed(ctx)
    cache, env, whole, wins = cache_setup(ctx, d)
    ref = cache_run(d, wins, {'RINGTRACE_SQL_CACHE': ''})
    check_built(ref, whole, 'RINGTRACE_SQL_CACHE=\'\'')
    check(sum(map(len, ref['rows'])) > 50, 'the windows have %s rows' % list(map(len, ref['rows'])))
    first = cache_run(d, wins, env)
    check_built(first, whole, 'the first process')
    files = cache_files(cache)
    check(len(files) == 1 and files[0].endswith('.sched.rtidx'), 'the cache holds %s' % files)
    second = cache_run(d, wins, env)
    check_cached(second, 'the second process')
    for what, run in (('the first', first), ('the second', second)):
        check(run['rows'] == ref['rows'], '%s process\'s rows differ from a run without cache' %
              what)
    path = os.path.join(cache, files[0])
    before = open(path, 'rb').read(), os.stat(path).st_mtime_ns
    third = cache_run(d, wins, env, '--no-cache')
    check_built(third, whole, '--no-cache')
    check(third['rows'] == ref['rows'], '--no-cache: other rows')
    check((open(path, 'rb').read(), os.stat(path).st_mtime_ns) == before and
          cache_files(cache) == files, '--no-cache touched the cache')
    bad = os.path.join(d, 'metadata', 'cache')
    run = cache_run(d, wins, {'RINGTRACE_SQL_CACHE': bad})
    check_built(run, whole, 'an unusable cache directory')
    notes = [l for l in run['stderr'].splitlines() if l.strip()]
    check(run['rows'] == ref['rows'] and len(notes) == 1 and 'note: sql cache' in notes[0],
          'an unusable cache directory: stderr %r' % run['stderr'])


@test
def cache_changed_trace_rebuilt(ctx):
    """The same trace directory made again with more events (appended)
    and then fewer (truncated) -- same uuid, same file names: each time
    the next window builds the checkpoints again (the cached ones were of
    other files) and gives the rows of a run without the cache; the run
    after it uses the new file."""
    d = ctx.path('grow')
    cache = ctx.path('cache')
    env = {'RINGTRACE_SQL_CACHE': cache}
    for n in (16000, 20000, 12000):
        mix_at(d, n)
        lo, hi, whole = extent(d)
        wins = cache_windows(lo, hi)
        ref = cache_run(d, wins, {'RINGTRACE_SQL_CACHE': ''})
        got = cache_run(d, wins, env)
        check_built(got, whole, '%d events' % n)
        check(got['rows'] == ref['rows'], '%d events: rows of a stale cache' % n)
        again = cache_run(d, wins, env)
        check_cached(again, '%d events, again' % n)
        check(again['rows'] == ref['rows'], '%d events: other rows from the cache' % n)
        check(len(cache_files(cache)) == 1, 'the cache holds %s' % cache_files(cache))


def xxh64(data):
    import ctypes
    lib = ctypes.CDLL('libxxhash.so.0')
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64)
    return lib.XXH64(data, len(data), 0)


def resum(b):
    """A cache file @b with its checksum made right again (sqlcache.c's header)."""
    b = bytearray(b)
    b[32:40] = struct.pack('<Q', xxh64(bytes(b[:32]) + bytes(b[48:])))
    return bytes(b)


def flip(b, *offs):
    b = bytearray(b)
    for o in offs:
        b[o] ^= 0x5a
    return bytes(b)


def cache_damages(good, count_at=56):
    """(what, bytes) of a damaged cache file whose checkpoints' count is
    at byte @count_at."""
    n = len(good)
    plen = struct.unpack_from('<Q', good, 24)[0]
    huge = bytearray(good)
    huge[count_at:count_at + 8] = struct.pack('<Q', 1 << 60)
    return [('magic', flip(good, 0)), ('version', flip(good, 8)), ('key', flip(good, 17)),
            ('size', flip(good, 25)), ('checksum', flip(good, 33)),
            ('payload start', flip(good, 48)), ('middle', flip(good, n // 2)),
            ('last byte', flip(good, n - 1)), ('one byte short', good[:-1]),
            ('half', good[:n // 2]), ('header only', good[:48]), ('short header', good[:20]),
            ('empty', b''), ('a byte more', good + b'\0'),
            ('version 2, checksum right', resum(good[:8] + struct.pack('<I', 2) + good[12:])),
            ('another trace\'s key, checksum right', resum(flip(good, 16))),
            ('2^60 checkpoints, checksum right', resum(bytes(huge))),
            ('payload cut, size and checksum right',
             resum(good[:24] + struct.pack('<Q', plen - 8) + good[32:-8]))]


@test
def cache_damaged_file_rebuilt(ctx):
    """A cache file damaged in every part (magic, version, key, size,
    checksum, payload; cut short, emptied, grown; a wrong version, another
    trace's key, an absurd count and a cut payload with the checksum made
    right): the next window builds the checkpoints again, its rows those
    of a run without the cache, and the file is rewritten whole."""
    d = mix_packed(ctx)
    cache, env, whole, wins = cache_setup(ctx, d)
    ref = cache_run(d, wins, env)
    check_built(ref, whole, 'the first process')
    check(len(cache_files(cache)) == 1, 'the cache holds %s' % cache_files(cache))
    path = os.path.join(cache, cache_files(cache)[0])
    good = open(path, 'rb').read()
    for what, bad in cache_damages(good):
        with open(path, 'wb') as f:
            f.write(bad)
        run = cache_run(d, wins, env)
        check_built(run, whole, 'cache file damaged (%s)' % what)
        check(run['rows'] == ref['rows'], 'cache file damaged (%s): other rows' % what)
        check(open(path, 'rb').read() == good,
              'cache file damaged (%s): not rewritten as it was' % what)


def fuzzed(good, rng, i):
    """Cache file @good with 1 to 8 random bytes changed; odd @i: past the
    header, the checksum made right again (the payload's own checks
    stand)."""
    b = bytearray(good)
    for _ in range(rng.randrange(1, 9)):
        o = rng.randrange(48 if i % 2 else 0, len(b))
        b[o] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
    return resum(bytes(b)) if i % 2 else bytes(b)


@test
def cache_fuzz_asan(ctx):
    """200 runs of the ASan build over a cache file with 1 to 8 random
    bytes changed: every other run with the checksum made right again (so
    that the payload's own checks are what stands).  No sanitizer report,
    exit 0; a file whose checksum fails is rebuilt, the rows those of a run
    without the cache."""
    d = ctx.path('small')
    mix_at(d, 3000)
    cache, env, whole, wins = cache_setup(ctx, d)
    ref = cache_run(d, wins, env, asan=True)
    check(len(cache_files(cache)) == 1, 'the cache holds %s' % cache_files(cache))
    path = os.path.join(cache, cache_files(cache)[0])
    good = open(path, 'rb').read()
    rng = random.Random(31)
    loaded = 0
    for i in range(200):
        b = fuzzed(good, rng, i)
        with open(path, 'wb') as f:
            f.write(b)
        run = cache_run(d, wins, env, asan=True)
        if b != good and not i % 2:
            check_built(run, whole, 'fuzz run %d' % i)
            check(run['rows'] == ref['rows'], 'fuzz run %d: other rows' % i)
        loaded += i % 2 and index_row(run)['plan'] == 'cache'
    # The payload's checks are what the runs with the checksum right met:
    # some files pass them (values changed), some not (counts, keys).
    check(10 <= loaded <= 90, '%d of 100 files with the checksum right were read' % loaded)

# ---- the span tables' checkpoints kept on disk ----------------------------------------------

SPAN_CACHED = ('syscall', 'wakeup', 'irq', 'softirq')
# Where a span file's checkpoint count is: the header, spacing, rows fed.
SPAN_COUNT_AT = 48 + 16


def span_run(d, table, wins, env, *opts, asan=False):
    """One process: @table over @wins (its rows), scan_stats of the first
    window, and raw's frames over it."""
    end = 'ts' if table == 'wakeup' else 'end_ts'
    q = 'SELECT %s FROM %s WHERE %s >= %%d AND ts <= %%d' % (SPAN_TABLES[table], table, end)
    text = '; '.join([q % wins[0], 'SELECT * FROM scan_stats',
                      'SELECT count(*) n FROM raw WHERE ts BETWEEN %d AND %d' % wins[0],
                      'SELECT * FROM scan_stats', q % wins[1]])
    r = sql(d, text, '--json', *opts, env=env, asan=asan)
    a = arrays(r.stdout)
    check(len(a) == 5, 'printed %d arrays' % len(a))
    return {'rows': [a[0], a[4]], 'st': a[1], 'raw': a[3][0]['frames_read'],
            'stderr': r.stderr, 'table': table}


def span_index_row(run):
    idx = [x for x in run['st'] if x['tbl'] == 'span index']
    check(len(idx) == 1, '%s: scan_stats has %d span index rows: %s' %
          (run['table'], len(idx), run['st']))
    return idx[0]


def span_built(run, whole, what):
    idx = span_index_row(run)
    check(idx['plan'] == run['table'] and idx['frames_read'] == whole,
          '%s, %s: the checkpoints should be built (%d frames), scan_stats: %s' %
          (run['table'], what, whole, run['st']))


def span_cached(run, what, cpus=2):
    idx = span_index_row(run)
    cur = [x for x in run['st'] if x['tbl'] == run['table']]
    check(idx['plan'] == 'cache' and idx['frames_read'] == 0,
          '%s, %s: the checkpoints should come from the cache, scan_stats: %s' %
          (run['table'], what, run['st']))
    check(len(cur) == 1 and cur[0]['frames_read'] <= run['raw'] + 2 * cpus,
          '%s, %s: the window read %s frames, raw\'s %d' % (run['table'], what, cur, run['raw']))


def span_file(cache, table):
    files = [f for f in cache_files(cache) if f.endswith('.span-%s.rtidx' % table)]
    check(len(files) == 1, '%s: the cache holds %s' % (table, cache_files(cache)))
    return os.path.join(cache, files[0])


@test
def span_cache_next_process_reads_the_window(ctx):
    """syscall, wakeup, irq and softirq: a process's first window builds
    the table's checkpoints (scan_stats row 'span index', plan the table:
    every frame) and keeps them in RINGTRACE_SQL_CACHE, a file
    *.span-TABLE.rtidx each; the next process (the ASan build) reads them
    from there (the row's plan 'cache', no frame) and then no more frames
    than raw's window and 2 a CPU, and gives the rows of a run without the
    cache.  --no-cache neither reads nor writes the file.  irq asked of
    CPU 1 has checkpoints of its own, a file of their own, read back."""
    d = mix_packed(ctx)
    cache, env, whole, wins = cache_setup(ctx, d, 10)
    for table in SPAN_CACHED:
        ref = span_run(d, table, wins, {'RINGTRACE_SQL_CACHE': ''})
        span_built(ref, whole, 'RINGTRACE_SQL_CACHE=\'\'')
        check(sum(map(len, ref['rows'])) > 50, '%s: the windows have %s rows' %
              (table, list(map(len, ref['rows']))))
        first = span_run(d, table, wins, env)
        span_built(first, whole, 'the first process')
        path = span_file(cache, table)
        second = span_run(d, table, wins, env, asan=True)
        span_cached(second, 'the second process')
        for what, run in (('the first', first), ('the second', second)):
            check(run['rows'] == ref['rows'], '%s: %s process\'s rows differ from a run '
                  'without cache' % (table, what))
        before = open(path, 'rb').read(), os.stat(path).st_mtime_ns
        third = span_run(d, table, wins, env, '--no-cache')
        span_built(third, whole, '--no-cache')
        check(third['rows'] == ref['rows'], '%s, --no-cache: other rows' % table)
        check((open(path, 'rb').read(), os.stat(path).st_mtime_ns) == before,
              '%s: --no-cache touched the cache' % table)
    check(len(cache_files(cache)) == len(SPAN_CACHED), 'the cache holds %s' % cache_files(cache))
    # irq's checkpoints of CPU 1 alone: a file of their own, read back.
    a, b = wins[0]
    q = ('SELECT %s FROM irq WHERE cpu %%s= 1 AND end_ts %%s>= %d AND ts %%s<= %d' %
         (SPAN_TABLES['irq'], a, b))
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    want = sorted(rows(d, q % ('+ 0 ', '+ 0 ', '+ 0 ')), key=key)
    check(len(want) > 5, 'irq on CPU 1: %d rows' % len(want))
    for what, plan in (('built', 'irq'), ('read back', 'cache')):
        got, st = stats(d, q % ('', '', ''), env=env)
        got = sorted(got, key=key)
        idx = [x for x in st if x['tbl'] == 'span index']
        check(got == want and len(idx) == 1 and idx[0]['plan'] == plan,
              'irq on CPU 1, %s: %d rows, want %d; scan_stats %s' % (what, len(got), len(want), st))
    check(len([f for f in cache_files(cache) if '.span-irq-' in f]) == 1,
          'irq of CPU 1: the cache holds %s' % cache_files(cache))


@test
def span_cache_changed_trace_rebuilt(ctx):
    """The same trace directory made again with more events (appended),
    then fewer (truncated), then the same events packed again in other
    frames (repacked) -- same uuid, same file names: each time the next
    window of each span table builds its checkpoints again and gives the
    rows of a run without the cache; the run after it uses the new file."""
    d = ctx.path('grow')
    cache = ctx.path('cache')
    env = {'RINGTRACE_SQL_CACHE': cache}
    for n, frame in ((16000, '4K'), (20000, '4K'), (12000, '4K'), (12000, '8K')):
        mix_at(d, n, frame=frame)
        lo, hi, whole = extent(d)
        wins = cache_windows(lo, hi, 10)
        for table in SPAN_CACHED:
            what = '%d events, %s frames' % (n, frame)
            ref = span_run(d, table, wins, {'RINGTRACE_SQL_CACHE': ''})
            got = span_run(d, table, wins, env)
            span_built(got, whole, what)
            check(got['rows'] == ref['rows'], '%s, %s: rows of a stale cache' % (table, what))
            again = span_run(d, table, wins, env)
            span_cached(again, what + ', again')
            check(again['rows'] == ref['rows'], '%s, %s: other rows from the cache' %
                  (table, what))
            span_file(cache, table)


@test
def span_cache_damaged_file_rebuilt(ctx):
    """A span table's cache file damaged in every part (magic, version,
    key, size, checksum, payload; cut short, emptied, grown; a wrong
    version, another trace's key, an absurd count and a cut payload with
    the checksum made right), for each of syscall, wakeup, irq and
    softirq: the next window (the ASan build) builds the checkpoints
    again, its rows those of a run without the cache, and the file is
    rewritten whole."""
    d = mix_packed(ctx)
    cache, env, whole, wins = cache_setup(ctx, d, 10)
    for table in SPAN_CACHED:
        ref = span_run(d, table, wins, env)
        span_built(ref, whole, 'the first process')
        path = span_file(cache, table)
        good = open(path, 'rb').read()
        for what, bad in cache_damages(good, SPAN_COUNT_AT):
            with open(path, 'wb') as f:
                f.write(bad)
            run = span_run(d, table, wins, env, asan=True)
            span_built(run, whole, 'cache file damaged (%s)' % what)
            check(run['rows'] == ref['rows'], '%s, cache file damaged (%s): other rows' %
                  (table, what))
            check(open(path, 'rb').read() == good,
                  '%s, cache file damaged (%s): not rewritten as it was' % (table, what))


@test
def span_cache_fuzz_asan(ctx):
    """40 runs a table (syscall, wakeup, irq, softirq) of the ASan build
    over its cache file with 1 to 8 random bytes of the payload changed and
    the checksum made right again, so that the checks of the payload and
    of each row are what stands: no sanitizer report, exit 0, each run
    either reads the file or builds the checkpoints again."""
    d = ctx.path('small')
    mix_at(d, 3000)
    cache, env, whole, wins = cache_setup(ctx, d)
    rng = random.Random(31)
    for table in SPAN_CACHED:
        span_run(d, table, wins, env, asan=True)
        path = span_file(cache, table)
        good = open(path, 'rb').read()
        plans = set()
        for i in range(40):
            b = bytearray(good)
            for _ in range(rng.randrange(1, 9)):
                o = rng.randrange(48, len(b))
                b[o] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
            with open(path, 'wb') as f:
                f.write(resum(bytes(b)))
            run = span_run(d, table, wins, env, asan=True)
            plans.add(span_index_row(run)['plan'])
        check(plans <= {'cache', table}, '%s: span index plans %s' % (table, plans))


# ---- utid pushed down through run lists (issue 31 P3c) ------------------------------------

RUN_COLS = 'ts, cpu, name, utid, args'
# 7777 runs once (visitor), 99 owns the first event alone, 4242 never runs, 0 is idle.
RUN_TIDS = (7777, 99, 4242, 100, 105, 117, 123, 0)


def runs_packed(ctx):
    d = sched_mix_trace(ctx.path('runs'), visitor=7777)
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


def utid_rows(d, x, extra='', status=0):
    """raw's rows of utid @x pushed down, not pushed (utid + 0) and with
    RINGTRACE_SEEK=0, and the two runs' scan_stats."""
    q = 'SELECT %s FROM raw WHERE utid = %d%s' % (RUN_COLS, x, extra)
    u = 'SELECT %s FROM raw WHERE utid + 0 = %d%s' % (RUN_COLS, x, extra)
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    a = arrays(sql(d, q + '; SELECT * FROM scan_stats; ' + u + '; SELECT * FROM scan_stats',
                   '--json', status=status).stdout)
    n = arrays(sql(d, q, '--json', env={'RINGTRACE_SEEK': '0'}, status=status).stdout)
    check(len(a) == 4 and len(n) == 1, 'utid %d: printed %d and %d arrays' % (x, len(a), len(n)))
    return sorted(a[0], key=key), sorted(a[2], key=key), sorted(n[0], key=key), a[1], a[3]


@test
def utid_reads_its_runs(ctx):
    """raw WHERE utid = X on a packed trace whose threads migrate between
    two CPUs: the rows are those of utid + 0 = X (not pushed) and of
    RINGTRACE_SEEK=0, for threads that ran often, 99 (its first event
    alone), 7777 (two markers halfway), 4242 (never ran) and the idle
    task, also with a ts window and cpu = 1; scan_stats: the run lists
    are built once per run by a pass over every frame ('run index'), a
    thread that ran once reads a few frames, one that never ran none,
    and the next statement builds nothing again."""
    d = runs_packed(ctx)
    for x in RUN_TIDS:
        got, full, nseek, st, ust = utid_rows(d, x)
        check(got == full, 'utid %d: %d rows pushed down, the full scan %d; only in one: %s' %
              (x, len(got), len(full), sorted(set(map(repr, got)) ^ set(map(repr, full)))[:4]))
        check(nseek == full, 'utid %d: RINGTRACE_SEEK=0 gives %d rows, expected %d' %
              (x, len(nseek), len(full)))
        check(x == 4242 or len(full) > 0, 'utid %d has no rows' % x)
        raw = [r for r in st if r['tbl'] == 'raw']
        whole = ust[0]['frames_read']
        check(len(raw) == 1 and raw[0]['plan'] == 'utid=' and whole > 100,
              'utid %d: scan_stats %s, the full scan %s' % (x, st, ust))
        if x == 7777:
            check(len(full) == 3 and raw[0]['frames_read'] <= 4,
                  'utid 7777: %d rows, %d frames read of %d' %
                  (len(full), raw[0]['frames_read'], whole))
        if x == 99:
            check(raw[0]['frames_read'] <= 2 and raw[0]['cpus'] == 1,
                  'utid 99: %s' % raw)
        if x == 4242:
            check(raw[0]['frames_read'] == 0 and raw[0]['cpus'] == 0,
                  'utid 4242 (never ran): %s' % raw)
        idx = [r for r in st if r['tbl'] == 'run index']
        check(len(idx) == 1 and idx[0]['frames_read'] == whole,
              'utid %d: the run index %s, the full scan read %d frames' % (x, idx, whole))
    lo = min(r['ts'] for r in rows(d, 'SELECT ts FROM raw WHERE utid = 105'))
    for extra in (' AND cpu = 1', ' AND ts BETWEEN %d AND %d' % (lo + 10**7, lo + 3 * 10**7),
                  ' AND ts > %d AND cpu = 0' % (lo + 10**7)):
        got, full, nseek, _, _ = utid_rows(d, 105, extra)
        check(got == full == nseek and len(full) > 0,
              'utid 105%s: %d rows pushed, %d not, %d RINGTRACE_SEEK=0' %
              (extra, len(got), len(full), len(nseek)))
    st = arrays(sql(d, 'SELECT count(*) FROM raw WHERE utid = 100; '
                       'SELECT count(*) FROM raw WHERE utid = 7777; SELECT * FROM scan_stats',
                    '--json').stdout)[2]
    check([r['tbl'] for r in st] == ['raw'] and st[0]['frames_read'] <= 4,
          'a second utid in one run: %s' % st)


@test
def utid_runs_damaged_frame(ctx):
    """The packed trace of utid_reads_its_runs with one frame of cpu1's
    middle chunk damaged: raw WHERE utid = X gives the rows of the full
    scan (utid + 0 = X, exit 3) for each X; exit 3 where it read the
    damage, 0 where it did not."""
    d = runs_packed(ctx)
    name = sorted(f for f in os.listdir(d) if f.startswith('cpu1-'))[1]
    data = bytearray(open(os.path.join(d, name), 'rb').read())
    # Inside its middle frame (the records and the table after the frames are not read).
    ents = td.index_of(os.path.join(d, name))[1]
    data[ents[len(ents) // 2][0] + 64] ^= 0x55
    open(os.path.join(d, name), 'wb').write(data)
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    for x in RUN_TIDS:
        u = 'SELECT %s FROM raw WHERE utid + 0 = %d' % (RUN_COLS, x)
        full = sorted(rows(d, u, status=3), key=key)
        r = td.rt_env({}, 'sql', '--json', d, u.replace(' + 0', ''))
        check(r.returncode in (0, 3) and 'runtime error' not in r.stderr,
              'utid %d: exit %d %s' % (x, r.returncode, r.stderr[-800:]))
        got = sorted(arrays(r.stdout)[0], key=key)
        check(got == full, 'utid %d on the damaged trace: %d rows, the full scan %d' %
              (x, len(got), len(full)))


# ---- threads and processes (issue 31 P2) -------------------------------------------------

def thread_trace(d):
    """One CPU, times in µs after T0: the state dump names 50 (shell,
    parent 1) and its thread 51; 50 forks 60, 60 makes thread 61, 60
    execs /usr/bin/tool, 61 is renamed tool-io and exits."""
    c = td.comm
    evs = [
        (1, 13, struct.pack('<iii', 50, 50, 1) + c('shell')),
        (2, 13, struct.pack('<iii', 51, 50, 1) + c('shell-worker')),
        (3, 4, c('shell') + struct.pack('<ii', 50, 50) + c('shell') + struct.pack('<ii', 60, 60)),
        (4, 4, c('shell') + struct.pack('<ii', 60, 60) + c('shell') + struct.pack('<ii', 61, 60)),
        (5, 5, struct.pack('<iiH', 60, 60, 13) + b'/usr/bin/tool'),
        (6, 15, struct.pack('<i', 61) + c('tool') + c('tool-io') + struct.pack('<h', 0)),
        (7, 3, c('tool-io') + struct.pack('<ii', 61, 20)),
        (8, 0, marker(b'end')),
    ]
    events = td.KERNEL_EVENTS + [(3, 'sched_process_exit', td.MODULE_LAYOUTS['sched_process_exit'])]
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, events))
    with open(os.path.join(d, 'cpu0'), 'wb') as f:
        f.write(td.kpacket(uuid, 0, 0, [(T0 + t * US, e, p) for t, e, p in evs],
                           T0, T0 + 10 * US))
    return d


@test
def thread_and_process_read_once(ctx):
    """thread then process in one run (as ringtrace ship reads them): the
    second takes the tables the first built and reads nothing (its
    members in scan_stats 0), with the rows each gives alone; tables
    without the times do not serve a cursor that wants them (it reads
    the trace)."""
    d = thread_trace(ctx.path('threads'))
    q_t = 'SELECT * FROM thread ORDER BY utid'
    q_p = 'SELECT * FROM process ORDER BY upid'
    q_names = 'SELECT utid, name FROM thread ORDER BY utid'
    for first, then, read in ((q_t, q_p, 0), (q_p, q_t, 0), (q_names, q_p, 1)):
        a = arrays(sql(d, '%s; %s; SELECT * FROM scan_stats' % (first, then), '--json').stdout)
        check(len(a) == 3 and a[0] == rows(d, first) and a[1] == rows(d, then) and a[1] and
              [x['members'] for x in a[2]] == [read],
              '%s then %s: %s' % (first, then, a))


@test
def threads_hand_built_rows(ctx):
    """Fork, a thread of it, exec, rename, exit and the state dump
    (thread_trace()): every thread and process row exactly -- names and
    pids as report knows them at the end, the exec's file name as
    cmdline, parents, fork and exit times, the idle task one row; and for
    two traces utid and upid carry the trace's number."""
    d = thread_trace(ctx.path('threads'))
    t = lambda us: None if us is None else T0 + us * US  # noqa: E731
    got = [tuple(r.values()) for r in rows(
        d, 'SELECT utid, tid, name, upid, start_ts, end_ts, is_main_thread, is_idle '
           'FROM thread ORDER BY utid')]
    want = [(0, 0, 'swapper', 0, None, None, None, 1),
            (50, 50, 'shell', 50, None, None, 1, 0),
            (51, 51, 'shell-worker', 50, None, None, 0, 0),
            (60, 60, 'tool', 60, t(3), None, 1, 0),
            (61, 61, 'tool-io', 60, t(4), t(7), 0, 0)]
    check(got == want, 'thread:\n  got  %s\n  want %s' % (got, want))
    got = [tuple(r.values()) for r in rows(
        d, 'SELECT upid, pid, name, cmdline, parent_upid, start_ts, end_ts '
           'FROM process ORDER BY upid')]
    want = [(0, 0, 'swapper', None, None, None, None),
            (50, 50, 'shell', None, 1, None, None),
            (60, 60, 'tool', '/usr/bin/tool', 50, t(3), None)]
    check(got == want, 'process:\n  got  %s\n  want %s' % (got, want))
    two = rows([d, REAL_TRACE], 'SELECT trace, utid, tid, upid FROM thread '
                                'WHERE tid IN (61, 176) ORDER BY trace')
    check([tuple(r.values()) for r in two] == [(0, 61, 61, 60), (1, 1 << 32 | 176, 176, 1 << 32 | 176)],
          'two traces: %s' % two)


@test
def threads_agree_with_report(ctx):
    """thread's names and pids are report --stat's for every thread it
    lists, every event's utid is a thread, every thread's upid a process
    named after its leader: synthetic traces, the real trace, and it
    damaged (exit 3)."""
    check_threads = sql_part('threads')
    check_threads(mixed_trace(ctx.path('mixed')))
    check_threads(td.seek_trace(ctx.path('seek'), packets=20, dump=True))
    check_threads(REAL_TRACE)
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    check_threads(bad, status=3)


@test
def threads_decode_only_theirs(ctx):
    """thread decodes the events threads are learnt from and the process
    events, nothing else (scan_stats): on the real trace, its events
    decoded are the count of those names, fewer than the trace's events."""
    names = ('sched_switch', 'sched_wakeup', 'sched_wakeup_new', 'sched_process_fork',
             'sched_process_exec', 'sched_process_exit', 'sched_process_free',
             'task_rename', 'ringtrace_statedump_task', 'ringtrace_statedump_cpu')
    counts = rows(REAL_TRACE, 'SELECT name, sum(count) n FROM event_count GROUP BY name')
    want = sum(r['n'] for r in counts if r['name'] in names)
    total = sum(r['n'] for r in counts)
    r, st = stats(REAL_TRACE, 'SELECT count(*) n FROM thread')
    check(r[0]['n'] > 10 and st[0]['events_decoded'] == want and want < total,
          'thread: %d rows, %d events decoded, expected %d of %d' %
          (r[0]['n'], st[0]['events_decoded'], want, total))


@test
def threads_from_thread_tables(ctx):
    """thread and process without their times (start_ts, end_ts, cmdline)
    come from packed chunks' thread tables: no frame decompressed
    (scan_stats bytes_decompressed == 0), the same rows as the tables
    read with those columns asked (every frame decoded) and as
    RINGTRACE_SEEK=0 (process after thread reading nothing); a table that is damaged, of another version, says a
    fact outside its frame (test_threads' cases) is not trusted: its
    file's frames are decoded, the note said, the rows the same."""
    import test_threads as tt
    d = tt.packed(tt.scenario_trace(ctx.path('threads')))
    tq = 'SELECT utid, tid, name, upid, is_main_thread, is_idle, cgroup FROM thread'
    pq = 'SELECT upid, pid, name, parent_upid, cgroup FROM process'
    times = ' WHERE start_ts IS NULL OR start_ts IS NOT NULL'
    ptimes = ' WHERE cmdline IS NULL OR cmdline IS NOT NULL'

    def check_all(expect_decoded, note=None):
        r = sql(d, '%s; SELECT * FROM scan_stats; %s; SELECT * FROM scan_stats; %s; %s' %
                (tq, pq, tq + times, pq + ptimes), '--json')
        t, tst, pr, pst, tfull, pfull = arrays(r.stdout)
        nseek = arrays(sql(d, '%s; %s' % (tq, pq), '--json',
                           env={'RINGTRACE_SEEK': '0'}).stdout)
        check(len(t) > 3 and t == tfull == nseek[0], 'thread from tables %s, decoded %s, '
              'RINGTRACE_SEEK=0 %s' % (t, tfull, nseek[0]))
        check(len(pr) > 1 and pr == pfull == nseek[1], 'process from tables %s, decoded %s, '
              'RINGTRACE_SEEK=0 %s' % (pr, pfull, nseek[1]))
        ok = (tst[0]['bytes_decompressed'] > 0 if expect_decoded else
              tst[0]['bytes_decompressed'] == tst[0]['events_decoded'] == 0)
        check(len(tst) == 1 and ok, '%s: scan_stats %s' % (note or 'good tables', tst))
        # process takes what thread read (thread_and_process_read_once).
        check(len(pst) == 1 and pst[0]['members'] == pst[0]['bytes_decompressed'] == 0,
              '%s: process read again: scan_stats %s' % (note or 'good tables', pst))
        if note:
            check(note in r.stderr and 'its thread table is ignored' in r.stderr,
                  'no note "%s": %s' % (note, r.stderr))
    check_all(False)
    path = os.path.join(d, 'cpu0-000001.zst')
    with open(path, 'rb') as f:
        good = f.read()

    def bad(fn, note):
        with open(path, 'wb') as f:
            f.write(good)
        tt.rewrite_table(path, fn)
        check_all(True, note)

    def flip(fr):
        fr[60] ^= 0x40
        return fr
    bad(flip, 'its checksum does not match its records')

    def version(fr):
        struct.pack_into('<I', fr, len(fr) - 12, 4)
        return fr
    bad(version, 'not a thread table of versions 1 to 3')

    def late(fr):
        struct.pack_into('<Q', fr, 8 + 48, struct.unpack_from('<Q', fr, 8 + 48)[0] + 10**9)
        return tt.reseal(fr)
    bad(late, 'fact 0 is not one of the frame\'s')


@test
def utid_reads_its_trace(ctx):
    """utid = X (upid = X of process) reads only the trace X names (its
    high half): scan_stats opens one member of two, and the rows are
    the unpushed term's (utid + 0 = X), for every table with the column;
    an IN list of utids of both traces reads each once."""
    d = sched_trace(ctx.path('sched'))
    dirs = [d, REAL_TRACE]
    x = 1 << 32 | 181               # the real trace's ls
    for table, col in (('raw', 'utid'), ('thread_state', 'utid'), ('sched_slice', 'utid'),
                       ('syscall', 'utid'), ('thread', 'utid'), ('marker', 'utid'),
                       ('irq', 'utid'), ('process', 'upid')):
        v = x if col == 'utid' else 1 << 32 | rows(REAL_TRACE, 'SELECT max(pid) p FROM '
                                                   'process')[0]['p']
        q = 'SELECT count(*) n, sum(trace) t FROM %s WHERE %s %%s= %d' % (table, col, v)
        got, st = stats(dirs, q % '')
        want = rows(dirs, q % '+ 0 ')
        check(got == want and (table not in ('raw', 'thread_state') or got[0]['n'] > 100),
              '%s.%s = %d: %s, unpushed %s' % (table, col, v, got, want))
        # The run lists (raw, syscall: utid_reads_its_runs) and the span
        # tables' checkpoints (thread_state, sched_slice: their stretches
        # naming X, a view each) are built of that trace alone.
        idx = [s for s in st if s['tbl'] in ('run index', 'sched index')]
        st = [s for s in st if s not in idx]
        stretches = table in ('thread_state', 'sched_slice')
        check(len(st) == 1 and (st[0]['members'] == 1 or stretches) and
              st[0]['plan'].startswith(col + '=') and
              len(idx) == (table in ('raw', 'syscall')) + 2 * stretches and
              all(s['members'] == 1 for s in idx),
              '%s.%s = %d: scan_stats %s' % (table, col, v, st + idx))
    got, st = stats(dirs, 'SELECT trace, count(*) n FROM thread_state WHERE utid IN (100, %d) '
                    'GROUP BY trace' % x)
    want = rows(dirs, 'SELECT trace, count(*) n FROM thread_state WHERE utid + 0 IN (100, %d) '
                'GROUP BY trace' % x)
    # One xFilter a utid, each trace's checkpoints and run lists built once.
    idx = sorted(s['tbl'] for s in st[1:] if s['members'] == 1)
    check(got == want and len(got) == 2 and st[0]['filters'] == 2 and
          idx == ['run index'] * 2 + ['sched index'] * 2 and len(st) == 5,
          'utid IN: %s, unpushed %s, scan_stats %s' % (got, want, st))


# ---- syscall, wakeup, irq, softirq, marker, the shipped queries (sql.d/sys.py) ---------

def sys_part():
    """sql.d/sys.py, whose checks sql_check.py runs on recordings."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('sql_d_sys', os.path.join(HERE, 'sql.d', 'sys.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.check = check       # its failures this suite's (FAIL, not ERROR)
    return mod


def kwakeup(tid, cpu=0):
    return td.comm('w%d' % tid) + struct.pack('<iii', tid, 120, cpu)


def shipped_agree(d, status=0):
    return sys_part().shipped_equal_report(d, report_stat(d, status=status), status)


@test
def shipped_queries_equal_report_real_trace(ctx):
    """sql -q of every --stat query prints report --stat's sections to the
    last digit (events, losses, both system call tables, the wakeup
    percentiles) on the real trace, and on it with one damaged header
    (exit 3 for both); the tables' rows are the entry events' counts."""
    by_count, line = shipped_agree(REAL_TRACE)
    check(len(by_count) == 25 and int(line[1]) > 600, 'few calls or wakeups: %s %s' %
          (len(by_count), line))
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    by_bad, line_bad = shipped_agree(bad, status=3)
    check((by_bad, line_bad) != (by_count, line), 'the damage changed no number')
    sys_part().check_sys(sys.modules['sql_check'].Db(REAL_TRACE))


def syscall_trace(d):
    """One CPU: A (100) calls read (pairs), stat then getppid (a second
    entry before stat's exit), read again with stat's exit (another id)
    before its own; 3 events lost;
    stat's exit with no thread known (after the loss), B (200) switched in,
    an exit with no entry, and a read whose exit never comes."""
    return td.kernel_trace(d, {0: [
        (1000, 2000, 0, [(1000, 1, kswitch('swapper', 0, 'A', 100)),
                         (1100, 11, sys_entry(0, 3, 4096)),
                         (1300, 12, sys_exit(0, 5)),
                         (1400, 11, sys_entry(4, 7)),
                         (1500, 11, sys_entry(110)),
                         (1800, 12, sys_exit(110, 7)),
                         (1850, 11, sys_entry(0, 8)),
                         (1900, 12, sys_exit(4, -1)),
                         (1950, 12, sys_exit(0, 2))]),
        (3000, 4000, 3, [(3000, 12, sys_exit(4, 0)),
                         (3100, 1, kswitch('A', 100, 'B', 200)),
                         (3200, 12, sys_exit(0, 9)),
                         (3300, 11, sys_entry(0, 1, 2, 3))]),
    ]})


@test
def syscall_rows_hand_built(ctx):
    """syscall_trace()'s rows exactly: read paired (dur 200, ret 5, its
    args); stat's row dur NULL (getppid's entry came first, stat's exit
    after the loss has no thread); getppid paired; the second read paired
    with its own exit, not stat's that came between; the exits with no open
    entry (B's read after the loss) are no rows; B's read at the end: dur
    NULL.  report --stat counts the same three calls, and the shipped
    queries print them."""
    d = syscall_trace(ctx.path('sys'))
    got = rows(d, 'SELECT ts, dur, end_ts, utid, cpu, id, name, args, ret FROM syscall ORDER BY ts')
    want = [
        {'ts': 1100, 'dur': 200, 'end_ts': 1300, 'utid': 100, 'cpu': 0, 'id': 0,
         'name': 'read', 'args': '[3,4096]', 'ret': 5},
        {'ts': 1400, 'dur': None, 'end_ts': None, 'utid': 100, 'cpu': 0, 'id': 4,
         'name': 'stat', 'args': '[7]', 'ret': None},
        {'ts': 1500, 'dur': 300, 'end_ts': 1800, 'utid': 100, 'cpu': 0, 'id': 110,
         'name': 'getppid', 'args': '[]', 'ret': 7},
        {'ts': 1850, 'dur': 100, 'end_ts': 1950, 'utid': 100, 'cpu': 0, 'id': 0,
         'name': 'read', 'args': '[8]', 'ret': 2},
        {'ts': 3300, 'dur': None, 'end_ts': None, 'utid': 200, 'cpu': 0, 'id': 0,
         'name': 'read', 'args': '[1,2,3]', 'ret': None},
    ]
    check(got == want, 'syscall rows:\n  %s\nwant\n  %s' % ('\n  '.join(map(str, got)),
                                                         '\n  '.join(map(str, want))))
    by_count, _ = shipped_agree(d)
    check(by_count == [['read', '2', '0.3', '0.15', '0.20'],
                       ['getppid', '1', '0.3', '0.30', '0.30']], 'by count %s' % by_count)


def wakeup_trace(d, lats, seed=3):
    """One CPU: thread W (300) woken and switched in once per latency of
    @lats (ns), in a shuffled order, a second wakeup while it waits (no
    sample), and at the end a wakeup of 301 that never runs."""
    rng = random.Random(seed)
    lats = list(lats)
    rng.shuffle(lats)
    evs, t = [], 10**6
    for i, lat in enumerate(lats):
        evs.append((t, 2, kwakeup(300)))
        if i % 7 == 0:
            evs.append((t + 1, 2, kwakeup(300)))
        evs.append((t + lat, 1, kswitch('X', 50, 'W', 300)))
        evs.append((t + lat + 10, 1, kswitch('W', 300, 'X', 50)))
        t += lat + 1000
    evs.append((t, 2, kwakeup(301)))
    packets = []
    for k in range(0, len(evs), 100):
        part = evs[k:k + 100]
        packets.append((part[0][0], part[-1][0], 0, part))
    return td.kernel_trace(d, {0: packets})


@test
def wakeup_percentiles_index_rule(ctx):
    """1001 wakeup-to-run latencies 1..1001 us: wakeup_latency gives p50
    501.00 (rank ceil(0.5 * 1001) = 501, not 500), p90 901.00, p99 991.00,
    p99.9 1000.00 (ceil(999.999) = 1000: floor would take rank 999),
    p100 1001.00 -- report's line (and 7 samples, where round() of the
    rank would differ at p90); the wakeup table
    has a row per sched_wakeup, latency on the 1001 samples only, the
    second wakeup and the one never followed by a switch in NULL."""
    d = wakeup_trace(ctx.path('wake'), [k * 1000 for k in range(1, 1002)])
    _, line = shipped_agree(d)
    want = ['samples', '1001', 'p50', '501.00', 'us', 'p90', '901.00', 'us', 'p99', '991.00',
            'us', 'p99.9', '1000.00', 'us', 'p100', '1001.00', 'us']
    check(line == want, 'report says %s' % line)
    got = rows(d, 'SELECT count(*) n, count(latency) s, sum(latency) t, '
                  'count(DISTINCT wakee_utid) w, min(waker_utid) k FROM wakeup')[0]
    check(got == {'n': 1001 + 143 + 1, 's': 1001, 't': sum(range(1, 1002)) * 1000,
                  'w': 2, 'k': 50}, 'wakeup rows %s' % got)
    # 7 samples: p90 is rank ceil(6.3) = 7 (round: 6), p50 ceil(3.5) = 4 (floor: 3).
    _, line = shipped_agree(wakeup_trace(ctx.path('wake7'), [k * 1000 for k in range(1, 8)]))
    check([line[1]] + line[3::3] == ['7', '4.00', '7.00', '7.00', '7.00', '7.00'], 'report says %s' % line)


@test
def list_stat_and_copied_queries(ctx):
    """--list prints every shipped query's name and SQL; that SQL, copied
    and run as statements, gives -q's rows; --stat runs report --stat's
    queries in its order; an unknown -q name is a usage error (exit 2)."""
    r = td.rt('sql', '--list')
    check(r.returncode == 0, 'sql --list: exit %d %s' % (r.returncode, r.stderr))
    blocks = re.findall(r'^-- (\w+): .*\n((?:(?!-- ).*\n)+)', r.stdout, re.M)
    names = [b[0] for b in blocks]
    check(names[:6] == ['events', 'losses', 'syscalls_by_count', 'syscalls_by_total',
                        'threads_on_cpu', 'wakeup_latency'] and 'irqs' in names,
          'listed %s' % names)
    for name, text in blocks:
        a = rows(REAL_TRACE, text.strip())
        b = arrays(td.rt('sql', '--json', '-q', name, REAL_TRACE).stdout)[0]
        # The real trace recorded no stack: top_functions has no row there.
        check(a == b and (a or name == 'top_functions'),
              '%s: its listed SQL gives %d rows, -q %d' % (name, len(a), len(b)))
    r = td.rt('sql', '--stat', REAL_TRACE)
    check(r.returncode == 0, 'sql --stat: exit %d %s' % (r.returncode, r.stderr))
    heads = re.findall(r'^-- (\w+):', r.stdout, re.M)
    check(heads == names[:6] + ['top_functions'], '--stat ran %s' % heads)
    r = td.rt('sql', '-q', 'nosuch', REAL_TRACE)
    check(r.returncode == 2 and 'no shipped query nosuch' in r.stderr,
          '-q nosuch: exit %d %r' % (r.returncode, r.stderr))


# ---- waker_ctx, lost.dur, trace's span, threads_on_cpu, Ctrl-C, stdin (issue 31 P8 & rest) ----

def waking_trace(d, layout):
    """CPU 0: 100 runs, sched_waking of 200, 201, 202, 203 -- with
    @layout SCHED_WAKING_CTX from a task, a softirq, a hard interrupt and
    an NMI (waker_ctx 0 to 3) -- and a sched_wakeup of 200."""
    ctx = layout == td.SCHED_WAKING_CTX
    events = td.KERNEL_EVENTS + [(3, 'sched_waking', layout)]
    evs = [(1000, 1, kswitch('swapper', 0, 'A', 100))]
    for i in range(4):
        evs.append((2000 + i * 100, 3, wk(200 + i, 0) + (struct.pack('<B', i) if ctx else b'')))
    evs.append((3000, 2, wk(200, 0)))
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, events))
    with open(os.path.join(d, 'cpu0'), 'wb') as f:
        f.write(td.kpacket(uuid, 0, 0, evs, 1000, 4000))
    return d


@test
def wakeup_waker_ctx_by_name(ctx):
    """wakeup.waker_ctx is sched_waking's field, found by name: 0..3 as
    recorded, NULL on sched_wakeup; a trace recorded before the field
    (sched_waking without it) reads NULL on every row and answers the
    rest as before; report, raw's args and babeltrace2 show the field;
    export -f lttng, perfetto and systrace take the trace as before."""
    q = 'SELECT ts, event, wakee_utid & 0xffffffff AS tid, waker_ctx FROM wakeup ORDER BY ts'
    d = waking_trace(ctx.path('ctx'), td.SCHED_WAKING_CTX)
    got = rows(d, q)
    want = [{'ts': 2000 + i * 100, 'event': 'sched_waking', 'tid': 200 + i, 'waker_ctx': i}
            for i in range(4)] + [{'ts': 3000, 'event': 'sched_wakeup', 'tid': 200,
                                   'waker_ctx': None}]
    check(got == want, 'waker_ctx recorded:\n  got  %s\n  want %s' % (got, want))
    args = rows(d, "SELECT json_extract(args, '$.waker_ctx') c FROM raw "
                   "WHERE name = 'sched_waking'")
    check([r['c'] for r in args] == [0, 1, 2, 3], 'raw args waker_ctx: %s' % args)
    text = td.rt('report', d).stdout
    check(len(re.findall(r'sched_waking: .*waker_ctx=[0-3]', text)) == 4,
          'report prints waker_ctx: %s' % text)
    # The exporters find sched_waking's fields by name: the new one changes nothing.
    for fmt in ('lttng', 'perfetto', 'systrace'):
        out = os.path.join(ctx.tmp, 'export.' + fmt)
        r = td.rt('export', '-f', fmt, '-o', out, d)
        check(r.returncode == 0, 'export -f %s: exit %d %s' % (fmt, r.returncode, r.stderr))
    r = td.run(['babeltrace2', os.path.join(ctx.tmp, 'export.lttng')])
    check(r.returncode == 0 and not r.stderr and r.stdout.count(' sched_waking: ') == 4,
          'babeltrace2 of the LTTng export: %r %r' % (r.stdout[-600:], r.stderr))
    r = td.run(['babeltrace2', d])
    check(r.returncode == 0 and r.stdout.count('waker_ctx = ') == 4, 'babeltrace2: %r %r' %
          (r.stdout[-600:], r.stderr))
    old = waking_trace(ctx.path('old'), td.MODULE_LAYOUTS['sched_waking'])
    got = rows(old, q)
    check(got == [dict(r, waker_ctx=None) for r in want],
          'an older trace:\n  got  %s\n  want waker_ctx NULL' % got)


def lost_trace(d):
    """CPU 0: a first packet that already counts 2 events discarded
    (before_first), packets at 1000-2000 and 5000-6000 with 3 events
    discarded between them; CPU 1: 1500-1600 and 9000-9500, 4 discarded
    between."""
    e = lambda t: (t, 0, marker(b'm%d' % t))  # noqa: E731
    return td.kernel_trace(d, {0: [(500, 900, 2, [e(600)]), (1000, 2000, 2, [e(1500)]),
                                   (5000, 6000, 5, [e(5500)])],
                               1: [(1500, 1600, 0, [e(1550)]), (9000, 9500, 4, [e(9100)])]})


@test
def lost_dur_and_trace_span(ctx):
    """lost.dur: the time back from a loss row's ts (the packet after) to
    the end of the CPU's packet before; NULL for before_first.  trace's
    first_ts and last_ts: the first and last item (a loss at the first
    packet's start counts), report --stat's span, --wall adds the trace's
    offset; on the real trace the same span as report's first line."""
    d = lost_trace(ctx.path('lost'))
    got = rows(d, 'SELECT ts, dur, cpu, kind, events FROM lost ORDER BY ts')
    want = [{'ts': 500, 'dur': None, 'cpu': 0, 'kind': 'before_first', 'events': 2},
            {'ts': 5000, 'dur': 3000, 'cpu': 0, 'kind': 'lost', 'events': 3},
            {'ts': 9000, 'dur': 7400, 'cpu': 1, 'kind': 'lost', 'events': 4}]
    check(got == want, 'lost rows:\n  got  %s\n  want %s' % (got, want))
    got = rows(d, 'SELECT first_ts, last_ts FROM trace')
    check(got == [{'first_ts': 500, 'last_ts': 9100}], 'trace span %s, want 500..9100' % got)
    wall = rows(d, 'SELECT first_ts, last_ts, wall_offset_ns w FROM trace', '--wall')[0]
    check(wall['w'] > 0 and (wall['first_ts'] - wall['w'], wall['last_ts'] - wall['w']) ==
          (500, 9100), '--wall span %s' % wall)
    span = re.search(r'events by name and CPU \(([0-9.]+) s\)', report_stat(d)).group(1)
    check(span == '0.000009', 'report says the span is %s s' % span)
    got = rows([REAL_TRACE, d], 'SELECT trace, (last_ts - first_ts) / 1e9 s FROM trace')
    span = re.search(r'events by name and CPU \(([0-9.]+) s\)',
                     report_stat(REAL_TRACE)).group(1)
    check(len(got) == 2 and '%.6f' % got[0]['s'] == span and got[1]['s'] == 8600 / 1e9,
          'spans %s, report %s s for the real trace' % (got, span))


@test
def threads_on_cpu_hand_built(ctx):
    """threads_on_cpu on sched_trace(): 101 4 ms (2 switches in), 400
    3 ms (1), 100 2.5 ms (3); 200, whose chain broke, and idle are not
    listed -- report --stat's table row for row (and every other --stat
    query its section)."""
    d = sched_trace(ctx.path('sched'))
    r = td.rt('sql', '--json', '-q', 'threads_on_cpu', d)
    check(r.returncode == 0, 'sql -q threads_on_cpu: exit %d %s' % (r.returncode, r.stderr))
    got = [(r['tid'], r['on_cpu_ms'], r['switches']) for r in arrays(r.stdout)[0]]
    check(got == [(101, '4.000', 2), (400, '3.000', 1), (100, '2.500', 3)],
          'threads_on_cpu %s' % got)
    shipped_agree(d)


@test
def statements_from_a_pipe(ctx):
    """No statement argument, stdin a pipe: its statements run in order
    (one over two lines), no prompt printed; a failing one ends the run
    with SQLite's message, exit 1, the rows before it printed."""
    def piped(text):
        return td.run([td.RINGTRACE, 'sql', '--json', REAL_TRACE], input=text)
    r = piped('SELECT count(*) AS n\nFROM raw;\nSELECT 7 AS x;\n')
    check(r.returncode == 0 and 'sql>' not in r.stdout + r.stderr, 'a pipe: exit %d %r %r' %
          (r.returncode, r.stdout[-300:], r.stderr[-300:]))
    check(arrays(r.stdout) == [[{'n': 5601}], [{'x': 7}]], 'a pipe printed %r' % r.stdout)
    r = piped('SELECT 1 AS a; SELEC 2; SELECT 3;')
    check(r.returncode == 1 and arrays(r.stdout) == [[{'a': 1}]] and
          'near "SELEC": syntax error' in r.stderr, 'a pipe with a bad statement: exit %d %r %r'
          % (r.returncode, r.stdout, r.stderr))


@test
def ctrl_c_stops_a_long_query(ctx):
    """SIGINT while a long statement prints (a join of raw with itself,
    31 million rows): it stops at once, exit 130, "interrupted" on stderr,
    and what was printed is a whole JSON array of whole rows (--csv: whole
    lines); the same at the prompt goes on to the next statement."""
    import signal
    import subprocess
    import time
    for mode in ('--json', '--csv'):
        path = os.path.join(ctx.tmp, 'cc' + mode)
        with open(path, 'w') as out:
            p = subprocess.Popen([td.RINGTRACE, 'sql', mode, REAL_TRACE,
                                  'SELECT a.ts, b.name FROM raw a, raw b'],
                                 stdout=out, stderr=subprocess.PIPE)
            deadline = time.time() + 30
            while os.path.getsize(path) < 200000 and time.time() < deadline:
                time.sleep(0.02)
            p.send_signal(signal.SIGINT)
            try:
                _, err = p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                raise Fail('%s: still running 20 s after SIGINT' % mode)
        text = open(path).read()
        check(p.returncode == 130 and err.decode() == 'ringtrace sql: interrupted\n',
              '%s: exit %d, stderr %r' % (mode, p.returncode, err))
        if mode == '--json':
            try:
                got = json.loads(text)
            except ValueError as e:
                raise Fail('--json after SIGINT is not JSON (%s): ...%r' % (e, text[-200:]))
            check(200000 // 60 < len(got) < 5601 ** 2 and
                  all(set(r) == {'ts', 'name'} for r in got), '--json: %d rows' % len(got))
        else:
            lines = text.split('\n')
            check(lines[0] == 'ts,name' and lines[-1] == '' and
                  all(re.fullmatch(r'\d+,\w+', l) for l in lines[1:-1]),
                  '--csv after SIGINT: ...%r' % text[-200:])
    # At the prompt: the statement stops, the next one runs, exit 0 at EOF.
    import pty
    import select
    master, slave = pty.openpty()
    p = subprocess.Popen([td.RINGTRACE, 'sql', '--csv', REAL_TRACE], stdin=slave,
                         stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out, deadline = b'', time.time() + 30

    def until(text):
        nonlocal out
        while text not in out and time.time() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    return
    until(b'sql> ')
    os.write(master, b'SELECT a.ts, b.name FROM raw a, raw b;\n')
    until(b'sched_switch')
    p.send_signal(signal.SIGINT)
    until(b'interrupted')
    os.write(master, b'SELECT 6 * 7 AS y;\n')
    until(b'\n42\r')   # CSV's line end, the terminal's \r before its \n
    os.write(master, b'\x04')
    try:
        p.wait(timeout=20)
    finally:
        p.kill()
        os.close(master)
    text = out.decode(errors='replace')
    check(p.returncode == 0 and 'ringtrace sql: interrupted' in text and
          '42' in text.split('interrupted')[-1], 'the prompt after SIGINT: exit %s, ...%r' %
          (p.returncode, text[-300:]))


@test
def mistyped_trace_and_help(ctx):
    """A last argument that reads as a path but is no directory is a
    mistyped trace (exit 1, said so), not a statement SQLite calls a
    syntax error; a blank makes it a statement again.  --help (exit 0,
    stdout) says Ctrl-C's exit status and what --stat runs."""
    for arg in ('/nonexistent', './trace2', os.path.join(REAL_TRACE, 'metadata')):
        r = td.rt('sql', REAL_TRACE, arg)
        check(r.returncode == 1 and r.stderr == 'ringtrace: %s: not a trace directory\n' % arg,
              '%s: exit %d %r' % (arg, r.returncode, r.stderr))
    r = sql(REAL_TRACE, 'SELECT 6 / 3 AS x')
    check(r.stdout.split() == ['x', '-', '2'], 'SELECT 6 / 3: %r' % r.stdout)
    r = td.rt('sql', '--help')
    check(r.returncode == 0 and not r.stderr and '130 Ctrl-C stopped a statement' in r.stdout
          and 'threads by\n                   on-CPU time' in r.stdout and
          'wakeup ' in r.stdout, '--help: exit %d %r' % (r.returncode, r.stdout[-800:]))


def irq_entry(irq, name):
    return struct.pack('<iH', irq, len(name)) + name


@test
def irq_softirq_slices_hand_built(ctx):
    """One CPU: irq 5 with irq 7 nested in it (both closed, depth 0 and 1);
    5 again with 7 inside whose exit never comes (7 ends dur NULL when 5's
    exit closes it); an exit with no entry (no row); 5 open at a loss (dur
    NULL: the exit of 5 after the loss is not taken for its); 5 open at
    the end; softirq TIMER closed, NET_RX open at the end.
    A row per entry event, report's counts; the slice view holds the
    three tables, and its cpu = 1 reaches irq's and softirq's cursors."""
    d = td.kernel_trace(ctx.path('irq'), {0: [
        (1000, 2000, 0, [(1000, 1, kswitch('swapper', 0, 'A', 100)),
                         (1100, 7, irq_entry(5, b'eth0')),
                         (1150, 7, irq_entry(7, b'timer')),
                         (1200, 8, struct.pack('<ii', 7, 1)),
                         (1300, 8, struct.pack('<ii', 5, 1)),
                         (1400, 7, irq_entry(5, b'eth0')),
                         (1450, 7, irq_entry(7, b'timer')),
                         (1500, 8, struct.pack('<ii', 5, 0)),
                         (1600, 8, struct.pack('<ii', 9, 1)),
                         (1650, 9, struct.pack('<I', 1)),
                         (1680, 10, struct.pack('<I', 1)),
                         (1700, 7, irq_entry(5, b'eth0'))]),
        (3000, 4000, 2, [(3050, 8, struct.pack('<ii', 5, 1)),
                         (3100, 7, irq_entry(5, b'eth0')),
                         (3200, 9, struct.pack('<I', 3))]),
    ]})
    got = [tuple(r.values()) for r in
           rows(d, 'SELECT ts, dur, end_ts, cpu, utid, irq, name, depth, ret FROM irq ORDER BY ts')]
    want = [(1100, 200, 1300, 0, 100, 5, 'eth0', 0, 1), (1150, 50, 1200, 0, 100, 7, 'timer', 1, 1),
            (1400, 100, 1500, 0, 100, 5, 'eth0', 0, 0),
            (1450, None, None, 0, 100, 7, 'timer', 1, None),
            (1700, None, None, 0, 100, 5, 'eth0', 0, None),
            (3100, None, None, 0, None, 5, 'eth0', 0, None)]
    check(got == want, 'irq rows\n  %s\nwant\n  %s' % (got, want))
    got = [tuple(r.values()) for r in
           rows(d, 'SELECT ts, dur, vec, name, depth FROM softirq ORDER BY ts')]
    check(got == [(1650, 30, 1, 'TIMER', 0), (3200, None, 3, 'NET_RX', 0)], 'softirq %s' % got)
    ev = stat_events(report_stat(d))
    check(ev[('irq_handler_entry', 0)] == 6 and ev[('irq_softirq_entry', 0)] == 2,
          'report counts %s' % ev)
    got = rows(d, 'SELECT category, count(*) n FROM slice GROUP BY 1 ORDER BY 1')
    check(got == [{'category': 'irq', 'n': 6}, {'category': 'softirq', 'n': 2}], 'slice %s' % got)
    got, st = stats(d, 'SELECT count(*) n FROM slice WHERE cpu = 1')
    plans = sorted((s['tbl'], s['plan'], s['cpus']) for s in st)
    check(got == [{'n': 0}] and plans == [('irq', 'cpu=', 0), ('softirq', 'cpu=', 0),
                                         ('syscall', '', 1)], 'slice cpu = 1: %s %s' % (got, plans))


@test
def marker_rows(ctx):
    """marker: a row per ringtrace_marker with raw's ts, cpu, thread and
    data (a text with a quote and a comma included), report's count, and
    reading it decodes the markers alone (scan_stats)."""
    d = mixed_trace(ctx.path('mixed'), text=b'he said "hi", twice')
    got = rows(d, 'SELECT ts, cpu, utid, text FROM marker')
    want = rows(d, "SELECT ts, cpu, utid, json_extract(args, '$.data') text FROM raw "
                   "WHERE name = 'ringtrace_marker'")
    n = sum(v for (e, _), v in stat_events(report_stat(d)).items() if e == 'ringtrace_marker')
    check(got == want and len(got) == n and n > 10, 'marker %d rows, raw %d, report %d' %
          (len(got), len(want), n))
    check(any(r['text'] == 'he said "hi", twice' for r in got), 'the text is not a row')
    _, st = stats(d, 'SELECT count(*) FROM marker')
    check(st[0]['events_decoded'] == n, 'marker decoded %d events for %d markers' %
          (st[0]['events_decoded'], n))


# ---- stacks: sample, stack, frame, blocked_function, top_functions (issue 31 P5) ------

KT = td.KTEXT


def stacks_part():
    """sql.d/stacks.py as a module (its helpers)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('sql_d_stacks',
                                                  os.path.join(HERE, 'sql.d', 'stacks.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
# Thirty functions 0x100 apart after entry_SYSCALL_64, then _etext: a frame
# past it is unresolved.
KSYMS_RICH = ('ringtrace-ksyms 1\nK %x\n0 _text\n1000 entry_SYSCALL_64\n' % KT +
              ''.join('100 fn%02d\n' % i for i in range(30)) + '5000 _etext\n')


def rich_stack_trace(d, n=300, seed=7):
    """One CPU of @n switch-outs, each with a kernel stack of 1 to 8 frames
    drawn from KSYMS_RICH's functions (recursion: the same function twice
    at different offsets), a leaf unresolved one time in five: ties in
    self and total, more functions than report's top 20."""
    rng = random.Random(seed)
    evs = []
    for i in range(n):
        ts = 1000 * (i + 1)
        frames = []
        for _ in range(rng.randint(1, 8)):
            fn = min(int(rng.expovariate(0.15)), 29)
            frames.append(KT + 0x1100 + 0x100 * fn + rng.choice((0x8, 0x10, 0x40)))
        if rng.random() < 0.2:
            frames.insert(0, KT + 0x9000 + rng.randrange(0x100))
        evs.append((ts, 1, kswitch('t%d' % (i % 5), 100 + i % 5, 'swapper/0', 0)))
        evs.append((ts, td.STACK_ID, td.kstack(*frames)))
    return td.stack_trace(d, evs, KSYMS_RICH)


@test
def top_functions_equal_report(ctx):
    """The shipped query top_functions prints report --stat's top
    functions row for row and the samples with a stack are its N
    (sql.d/stacks.py), on: the profiler's samples (a kernel and user
    stack, user frames alone, samples without a stack), interned stacks
    (refs to defs of their packet, defined again in the next) and the
    same inline, and 300 random kernel stacks with recursion, unresolved
    leaves and ties (only the top 20); frame self counts from the tables
    themselves are report's for every function it lists."""
    part = sql_part('stacks')
    d = td.hex_stack_trace(ctx.path('samples'), td.SAMPLE_EVENTS, td.SAMPLE_EVENTS_OF_A_RUN)
    part(d)
    got = rows(d, 'SELECT event, tid, stack_id IS NOT NULL s FROM sample ORDER BY ts')
    check([(r['event'], r['tid'], r['s']) for r in got] == [
        ('cpu_sample', 100, 1), ('cpu_sample', 100, 1), ('cpu_sample', 0, 0),
        ('cpu_sample', 100, 0), ('cpu_sample', 200, 0)], 'samples: %s' % got)
    part(td.intern_trace(ctx.path('interned'), td.INTERNED_RUN))
    part(td.hex_stack_trace(ctx.path('inline'), td.USTACK_EVENTS, td.INLINE_RUN))
    d = rich_stack_trace(ctx.path('rich'))
    try:
        n, top = stacks_part().top_equal_report(SqlDb(d))
    except SqlFail as e:
        raise Fail(str(e))
    fns = rows(d, 'SELECT count(DISTINCT symbol) n FROM frame')[0]['n']
    ties = sum(a[:2] == b[:2] for a, b in zip(top, top[1:]))
    unnamed = rows(d, 'SELECT count(*) n FROM sample s JOIN stack k ON k.stack_id = s.stack_id '
                      'AND k.depth = 0 JOIN frame f ON f.frame_id = k.frame_id '
                      'WHERE f.symbol IS NULL')[0]['n']
    check(n == 300 and len(top) == 20 and fns == 30 and ties and unnamed > 20,
          'rich: %d stacks, %d rows of %d functions, %d ties, %d unresolved leaves: %s' %
          (n, len(top), fns, ties, unnamed, top))
    selfs = {r['symbol']: r['n'] for r in rows(
        d, 'SELECT f.symbol, count(*) n FROM sample s JOIN stack k ON k.stack_id = s.stack_id '
           'AND k.depth = 0 JOIN frame f ON f.frame_id = k.frame_id '
           'WHERE f.symbol IS NOT NULL GROUP BY f.symbol')}
    for self_, total, fn in top:
        check(selfs.get(fn, 0) == int(self_), 'self of %s: frame says %s, report %s' %
              (fn, selfs.get(fn), self_))


@test
def tables_skip_events_a_trace_lacks(ctx):
    """After raw read a trace whole, a table whose rows are events the
    trace does not hold (marker on tools/tests/real-trace, irq and
    softirq on a trace with none and no loss) opens nothing (scan_stats members 0),
    as ringtrace ship reads them; one whose events it holds reads it and
    gives the rows it gives alone; before raw, marker reads it."""
    q = ('SELECT (SELECT count(*) FROM marker) m, (SELECT count(*) FROM irq) i, '
         '(SELECT count(*) FROM softirq) s, (SELECT count(*) FROM syscall) c')
    alone = rows(REAL_TRACE, q)
    a = arrays(sql(REAL_TRACE, 'SELECT count(*) FROM raw; %s; SELECT * FROM scan_stats' % q,
                   '--json').stdout)
    opened = {x['tbl']: x['members'] for x in a[2]}
    check(a[1] == alone and alone[0]['m'] == 0 and alone[0]['i'] > 0 and
          opened == {'marker': 0, 'irq': 1, 'softirq': 1, 'syscall': 1},
          'real trace: %s alone, %s after raw, scan_stats %s' % (alone, a[1], a[2]))
    _, st = stats(REAL_TRACE, 'SELECT count(*) FROM marker')
    check([x['members'] for x in st] == [1], 'marker first: scan_stats %s' % st)
    d = thread_trace(ctx.path('threads'))
    alone = rows(d, q)
    a = arrays(sql(d, 'SELECT count(*) FROM raw; %s; SELECT * FROM scan_stats' % q,
                   '--json').stdout)
    opened = {x['tbl']: x['members'] for x in a[2]}
    check(a[1] == alone and alone[0]['i'] == alone[0]['s'] == 0 and
          opened['irq'] == opened['softirq'] == 0,
          'no irq, no loss: %s alone, %s after raw, scan_stats %s' % (alone, a[1], a[2]))


@test
def stack_tables_without_pairs_read_once(ctx):
    """sample, stack and frame of a trace with no stack read it once
    between them (the scans after the first open no member: scan_stats),
    as ringtrace ship reads each; with stacks, twice: sample's scan and
    the stack index's pass ('stack index'), which stack and frame both
    answer from (they open no member)."""
    q = ('SELECT (SELECT count(*) FROM sample) s, (SELECT count(*) FROM stack) k, '
         '(SELECT count(*) FROM frame) f')
    r, st = stats(packed(ctx), q)
    read = sorted((x['tbl'], x['members'], x['bytes_decompressed'] > 0) for x in st)
    check(r == [{'s': 0, 'k': 0, 'f': 0}] and read == [
        ('frame', 0, False), ('sample', 1, True), ('stack', 0, False),
        ('stack index', 0, False)], 'no stacks: rows %s, scan_stats %s' % (r, st))
    r, st = stats(rich_stack_trace(ctx.path('rich')), q)
    read = sorted((x['tbl'], x['members'], x['bytes_decompressed'] > 0) for x in st)
    check(r[0]['s'] == 300 and r[0]['k'] > 300 and r[0]['f'] > 0 and read == [
        ('frame', 0, False), ('sample', 1, True), ('stack', 0, False),
        ('stack index', 1, True)], 'stacks: rows %s, scan_stats %s' % (r, st))


def stacks_two_packets(d, packets, ksyms=td.KSYMS):
    td.write_trace(d, td.STACK_EVENTS, packets)
    return td.hex_ips(d, ksyms)


STACK_A = td.STACK_LEAF
STACK_B = (KT + 0x2010, KT + 0x2134, KT + 0x1008)


def switch_out(ts, stack, tid=100):
    return [(ts, 1, kswitch('t%d' % tid, tid, 'swapper/0', 0)),
            (ts, td.STACK_ID, td.kstack(*stack))]


@test
def stack_ids_same_in_windows(ctx):
    """stack_id and frame_id are what the frames are: the same stack has
    the same id in two windows of a trace (A B | B A, the halves seen
    first in another order), and in a trace of its second half alone read
    beside it (another member, whose first stack is B); the stack table's
    rows of a stack are the same in both; A and B differ."""
    p1 = switch_out(1000, STACK_A) + switch_out(2000, STACK_B)
    p2 = switch_out(3000, STACK_B) + switch_out(4000, STACK_A)
    full = stacks_two_packets(ctx.path('full'), [p1, p2])
    half = stacks_two_packets(ctx.path('half'), [p2])
    got = rows([full, half], 'SELECT trace, ts, stack_id FROM sample ORDER BY trace, ts')
    ids = [(r['trace'], r['stack_id']) for r in got]
    check(len(ids) == 6, 'samples: %s' % got)
    a, b = ids[0][1], ids[1][1]
    check(a != b, 'two stacks, one id: %s' % got)
    check([i for _, i in ids] == [a, b, b, a, b, a], 'ids by time: %s (A %d, B %d)' % (ids, a, b))
    mid = got[2]['ts']
    w1 = rows(full, 'SELECT stack_id FROM sample WHERE ts < %d' % mid)
    w2 = rows(full, 'SELECT stack_id FROM sample WHERE ts >= %d' % mid)
    check([r['stack_id'] for r in w1] == [a, b] and [r['stack_id'] for r in w2] == [b, a],
          'windows: %s | %s' % (w1, w2))
    st = rows([full, half], 'SELECT trace, stack_id, depth, frame_id FROM stack')
    by = {t: sorted((r['stack_id'], r['depth'], r['frame_id']) for r in st if r['trace'] == t)
          for t in (0, 1)}
    check(by[0] == by[1] and len(by[0]) == len(STACK_A) + len(STACK_B),
          'stack rows differ between the trace and its half: %s' % by)
    fr = rows([full, half], 'SELECT trace, frame_id, name, module FROM frame')
    check(sorted((r['frame_id'], r['name']) for r in fr if r['trace'] == 0) ==
          sorted((r['frame_id'], r['name']) for r in fr if r['trace'] == 1),
          'frames differ: %s' % fr)


# A profiler's trace: samples with user stacks named by mappings that
# change while it runs (stack_def/stack_ref and inline stacks mixed).
UMIX_MMAP, UMIX_FORK, UMIX_EXEC = 24, 4, 5
UMIX_EVENTS = td.SAMPLE_EVENTS + [
    (td.DEF_ID, 'stack_def', td.gentrace.STACK_DEF),
    (td.REF_ID, 'stack_ref', td.gentrace.STACK_REF),
    (UMIX_MMAP, 'user_mmap', td.MMAP_FIELDS),
    (UMIX_FORK, 'sched_process_fork', td.MODULE_LAYOUTS['sched_process_fork']),
    (UMIX_EXEC, 'sched_process_exec', td.MODULE_LAYOUTS['sched_process_exec'])]


def umix_trace(d, cpus=2, n=12000, per_packet=60, seed=11, late=None):
    """Stored chunks, three a CPU, of @n events after T0: the state dump
    maps the text of processes 300-303 (/bin/a300...) on CPU 0 first;
    then cpu_samples (user stack alone, or kernel and user) and switches
    out with both stacks, on random CPUs, their stacks interned in one
    packet of two (a def once per packet, referred to again later in
    it) and inline in the other; now and then a process's text mapped
    again from another file (user_mmap on any CPU), a fork (the child
    samples with its parent's mappings), an exec (its mappings gone until
    the next user_mmap); markers between.  @late: a thread of that tid
    cloned into process 300 nine tenths through, on the last CPU, and
    sampled from then on on the others (its process known only from that
    CPU's events)."""
    rng = random.Random(seed)
    evs = {c: [] for c in range(cpus)}
    t = T0
    procs = [300, 301, 302, 303]
    ustacks = [tuple(td.UTEXT + rng.randrange(0x10000) for _ in range(rng.randint(1, 5)))
               for _ in range(12)]
    kstacks = [tuple(KT + 0x1000 + rng.randrange(0x6000) for _ in range(rng.randint(1, 4)))
               for _ in range(6)]

    def mmap(pid, path, dump=0):
        return (UMIX_MMAP, td.user_mmap(pid, dump, td.UTEXT - 0x1000, td.UTEXT + 0x10000,
                                        rng.choice((0, 0x1000, 0x3000)),
                                        bytes([pid & 0xff]) * 20, path))
    for p in procs:
        t += 100
        evs[0].append((t,) + mmap(p, '/bin/a%d' % p, 1))
    for i in range(n):
        t += rng.randrange(300, 3000)
        c = rng.randrange(cpus)
        if late is not None and i == 9 * n // 10:
            procs.append(late)
            evs[cpus - 1].append((t, UMIX_FORK, td.comm('a300') + struct.pack('<ii', 300, 300) +
                                  td.comm('a300') + struct.pack('<ii', late, 300)))
            t += 10
        r = rng.random()
        if r < 0.03:
            p = rng.choice(procs)
            evs[c].append((t,) + mmap(p, '/lib/v%d-%d.so' % (p, i)))
        elif r < 0.04 and len(procs) < 12:
            parent = rng.choice(procs)
            child = 400 + i
            procs.append(child)
            evs[c].append((t, UMIX_FORK, td.comm('a%d' % parent) +
                           struct.pack('<ii', parent, parent) + td.comm('a%d' % parent) +
                           struct.pack('<ii', child, child)))
        elif r < 0.05:
            p = rng.choice(procs)
            f = b'/bin/e%d' % i
            evs[c].append((t, UMIX_EXEC, struct.pack('<iiH', p, p, len(f)) + f))
        elif r < 0.15:
            evs[c].append((t, 0, td.marker(b'm%d' % i)))
        else:
            p = rng.choice(procs)
            if p == late and c == cpus - 1:
                p = 300
            k = rng.choice(kstacks) if rng.random() < 0.5 else None
            u = rng.choice(ustacks)
            if rng.random() < 0.75:
                ev = (t, td.SAMPLE_ID, struct.pack('<iiB', p, 300 if p == late else p,
                                                   1 if k else 0))
            else:
                ev = (t, 1, td.kswitch('a%d' % p, p, 'swapper/0', 0))
                if p == late:
                    # Switched in first: the CPU's owner, its process the threads' table's.
                    evs[c].append((t - 5, 1, td.kswitch('swapper/0', 0, 'a300', late)))
            evs[c].append((ev, k, u))
    uuid = bytes(range(48, 64))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, UMIX_EVENTS))
    for c in range(cpus):
        pks = []
        e = evs[c]
        for seq, k in enumerate(range(0, len(e), per_packet)):
            recs, interned, defs = [], seq % 2 == 0, {}
            for x in e[k:k + per_packet]:
                if not isinstance(x[0], tuple):
                    recs.append(x)
                    continue
                ev, ks, us = x
                recs.append(ev)
                ts = ev[0]
                if not interned:
                    if ks:
                        recs.append((ts, td.STACK_ID, td.kstack(*ks)))
                    recs.append((ts, td.USTACK_ID, td.ustack(0, *us)))
                    continue
                names = []
                for kind, s in ((0, ks), (1, us)):
                    if s is None:
                        names.append(None)
                        continue
                    name = '%d%r' % (kind, s)
                    if name not in defs:
                        defs[name] = True
                        recs.append((ts, 'def', name, kind, 0, s))
                    names.append(name)
                recs.append((ts, 'ref', names[0], names[1]))
            pk = td.intern_packet(recs)
            pks.append(td.kpacket(uuid, c, seq, pk, pk[0][0] - 5, pk[-1][0] + 5))
        third = (len(pks) + 2) // 3
        for k in range(3):
            with open(os.path.join(d, 'cpu%d-%06d.zst' % (c, k + 1)), 'wb') as f:
                f.write(td.stored_chunk(pks[k * third:(k + 1) * third]))
    td.hex_ips(d, KSYMS_RICH)
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


@test
def sample_windows_equal_full_scan(ctx):
    """sample's ts, cpu and utid terms pushed down (umix_trace(): user
    stacks named by mappings that change mid-trace, forks and execs,
    interned and inline stacks, packed): 24 random windows, one-sided,
    with cpu = and IN, with utid =, give the full table's rows filtered
    here, column for column (stack_id names the user frames by the
    mappings of the sample's time: another mapping, another id), the
    same with RINGTRACE_SEEK=0; the stack and frame rows of a window's
    stacks are the full table's."""
    d = umix_trace(ctx.path('umix'))
    cols = 'ts, cpu, utid, tid, pid, event, stack_id'
    full = rows(d, 'SELECT %s FROM sample' % cols)
    ids = {r['stack_id'] for r in full}
    check(len(full) > 8000 and len(ids) > 200,
          'the trace: %d samples, %d stacks' % (len(full), len(ids)))
    lo, hi = full[0]['ts'], full[-1]['ts']
    rng = random.Random(5)
    cases = []
    for i in range(24):
        a = rng.randrange(lo - 10**5, hi)
        b = a + rng.choice((0, 10**5, 10**6, 10**7, 10**8))
        u = rng.choice(sorted({r['utid'] for r in full}))
        form = [('ts BETWEEN %d AND %d' % (a, b), lambda r, a=a, b=b: a <= r['ts'] <= b),
                ('ts >= %d' % a, lambda r, a=a: r['ts'] >= a),
                ('ts < %d' % b, lambda r, b=b: r['ts'] < b),
                ('ts >= %d AND ts <= %d AND cpu = 1' % (a, b),
                 lambda r, a=a, b=b: a <= r['ts'] <= b and r['cpu'] == 1),
                ('cpu IN (0) AND ts > %d' % a, lambda r, a=a: r['cpu'] == 0 and r['ts'] > a),
                ('cpu = 1', lambda r: r['cpu'] == 1),
                ('utid = %d AND ts >= %d' % (u, a), lambda r, a=a, u=u: r['utid'] == u and
                 r['ts'] >= a),
                ('ts = %d' % full[i * 300]['ts'], lambda r, i=i: r['ts'] == full[i * 300]['ts'])]
        cases.append(form[i % len(form)])
    q = 'SELECT %s FROM sample WHERE ' % cols
    text = ';'.join(q + w for w, _ in cases)
    for env in ({}, {'RINGTRACE_SEEK': '0'}):
        for (w, keep), got in zip(cases, arrays(sql(d, text, '--json', env=env).stdout)):
            want = [r for r in full if keep(r)]
            if got != want:
                g = [x for x, y in zip(got, want) if x != y][:2]
                check(False, '%s%s%s: %d rows, the full table filtered %d; first different: '
                      '%s, want %s' % (env and 'RINGTRACE_SEEK=0 ' or '', q, w, len(got),
                                       len(want), g, [y for x, y in zip(got, want)
                                                      if x != y][:2]))
    a, b = full[len(full) // 2]['ts'], full[len(full) // 2 + 300]['ts']
    win = rows(d, 'SELECT DISTINCT stack_id FROM sample WHERE ts BETWEEN %d AND %d '
               'AND stack_id IS NOT NULL' % (a, b))
    st = rows(d, 'WITH w AS MATERIALIZED (SELECT DISTINCT stack_id FROM sample WHERE ts '
              'BETWEEN %d AND %d), s AS MATERIALIZED (SELECT * FROM stack) SELECT s.stack_id, '
              'depth, frame_id FROM s JOIN w USING (stack_id) ORDER BY 1, 2' % (a, b))
    check(win and {r['stack_id'] for r in st} <= {r['stack_id'] for r in win} and
          len({r['stack_id'] for r in st}) == len(win),
          'stack rows of the window\'s %d stacks: %d stacks' % (len(win), len(st)))


@test
def sample_window_reads_the_window(ctx):
    """scan_stats of sample over a window of umix_trace(): no more frames
    than raw's window and the prologue's (whole frames before the window,
    every CPU), and the events decoded are the window's (raw's count) and
    at most the mapping events up to 1 ms past it (user_mmap, fork, exec:
    raw's count of those names), fewer than a quarter of the events
    before it -- no other event before the window is decoded; cpu = 1
    opens one CPU's window and the prologue; a window at the start reads
    no prologue."""
    d = umix_trace(ctx.path('umix'))
    span = rows(d, 'SELECT min(ts) lo, max(ts) hi FROM raw')[0]
    lo, hi = span['lo'], span['hi']
    maps = "('user_mmap', 'sched_process_fork', 'sched_process_exec')"
    for a, b, cpu in ((lo + (hi - lo) // 2, lo + (hi - lo) // 2 + (hi - lo) // 50, None),
                      (hi - (hi - lo) // 50, hi, None), (lo + (hi - lo) // 3,
                                                         lo + (hi - lo) // 3 + 10**6, 1)):
        where = 'ts BETWEEN %d AND %d%s' % (a, b, '' if cpu is None else ' AND cpu = %d' % cpu)
        got, st = stats(d, 'SELECT count(*) n FROM sample WHERE ' + where)
        _, raw = stats(d, 'SELECT count(*) n FROM raw WHERE ' + where)
        _, before = stats(d, 'SELECT count(*) n FROM raw WHERE ts < %d' % a)
        # The prologue reads its streams a packet or so past b (a packet:
        # ~0.2 ms here): bounded by 1 ms.
        nmaps = rows(d, 'SELECT count(*) n FROM raw WHERE name IN %s AND ts <= %d' %
                     (maps, b + 10**6))[0]['n']
        want = rows(d, 'SELECT count(*) n FROM sample WHERE ts + 0 BETWEEN %d AND %d%s' %
                    (a, b, '' if cpu is None else ' AND cpu + 0 = %d' % cpu))
        check(got == want and got[0]['n'] > 10, '%s: %s, unpushed %s' % (where, got, want))
        s, r, p = st[0], raw[0], before[0]
        check(set(s['plan'].split()) == {'ts>=', 'ts<='} | ({'cpu='} if cpu else set()),
              '%s: plan %s' % (where, s['plan']))
        check(s['events_decoded'] <= r['events_decoded'] + nmaps and
              s['events_decoded'] < r['events_decoded'] + p['events_decoded'] // 4,
              '%s: %d events decoded, the window %d, mapping events before it %d, every '
              'event before it %d' % (where, s['events_decoded'], r['events_decoded'], nmaps,
                                      p['events_decoded']))
        check(s['frames_read'] <= r['frames_read'] + p['frames_read'] + 2 * 2,
              '%s: %d frames, the window %d and before it %d' %
              (where, s['frames_read'], r['frames_read'], p['frames_read']))
    _, st = stats(d, 'SELECT count(*) FROM sample WHERE ts <= %d' % (lo + (hi - lo) // 50))
    _, raw = stats(d, 'SELECT count(*) FROM raw WHERE ts <= %d' % (lo + (hi - lo) // 50))
    check(st[0]['frames_read'] <= raw[0]['frames_read'] and
          st[0]['events_decoded'] == raw[0]['events_decoded'],
          'a window at the start: %s, raw\'s %s' % (st, raw))

# Symbols with the scheduler's section: do_nanosleep is __sched, as in
# the kernel; a tracepoint's frame before it (a walk from the probe).
KSYMS_SCHED = ('ringtrace-ksyms 1\nK %x\n0 _text\n1000 entry_SYSCALL_64\n'
               '1000 __sched_text_start\n8 schedule\n100 do_nanosleep\n'
               '100 __sched_text_end\n10 hrtimer_nanosleep\n'
               '1000 __traceiter_sched_switch\n5de8 _etext\n') % KT
KSYMS_NO_SECTION = ('ringtrace-ksyms 1\nK %x\n0 _text\n1000 entry_SYSCALL_64\n'
                    '1008 schedule\n100 do_nanosleep\n110 hrtimer_nanosleep\n'
                    '1000 __traceiter_sched_switch\n5de8 _etext\n') % KT
BLOCK_EVENTS = td.STACK_EVENTS + [td.KERNEL_EVENTS[2]]
SLEEP = (KT + 0x3228, KT + 0x2018, KT + 0x2140, KT + 0x2220, KT + 0x1008)
PAST = KT + 0x9100


def ksw(prev, state, nxt):
    return struct.pack('<16siiq16sii', b'p%d' % prev, prev, 20, state, b'n%d' % nxt, nxt, 20)


def blocked_trace(d, ksyms):
    """One CPU: 100 sleeps (S) in hrtimer_nanosleep, is woken, preempts
    200 (R+, a stack), waits in D with a stack whose first frame past the
    scheduler is unresolved, 200 sleeps without a stack, 100 is switched
    out runnable (R) with a stack."""
    evs = [(1000, 1, ksw(0, 0, 100)),
           (2000, 1, ksw(100, 1, 200)), (2000, td.STACK_ID, td.kstack(*SLEEP)),
           (3000, 2, kwakeup(100)),
           (4000, 1, ksw(200, 256, 100)), (4000, td.STACK_ID, td.kstack(*SLEEP)),
           (5000, 1, ksw(100, 2, 0)),
           (5000, td.STACK_ID, td.kstack(KT + 0x3228, KT + 0x2018, PAST, KT + 0x1008)),
           (6000, 1, ksw(0, 0, 200)),
           (7000, 1, ksw(200, 1, 0)),
           (8000, 1, ksw(0, 0, 100)),
           (9000, 1, ksw(100, 0, 0)), (9000, td.STACK_ID, td.kstack(*SLEEP)),
           (10000, 0, marker(b'end'))]
    return td.hex_stack_trace(d, BLOCK_EVENTS, evs, ksyms)


def blocked_rows(d):
    got = rows(d, "SELECT ts, utid, state, blocked_function b FROM thread_state "
                  "WHERE state != 'Running' ORDER BY ts, utid")
    t0 = rows(d, 'SELECT min(ts) t FROM raw')[0]['t'] - 1000
    return [(r['ts'] - t0, r['utid'], r['state'], r['b']) for r in got]


@test
def blocked_function_of_switch_stacks(ctx):
    """thread_state.blocked_function on hand-built switches with a
    kernel_stack trailer: S gets the first frame past the scheduler's
    (its .sched.text by the trace's symbols: not the tracepoint's frame
    before it, not do_nanosleep, a __sched function), D an unresolved one
    as 0xADDR, R, R+, the R after a wakeup and a switch without a stack
    none; symbols without the section's bounds: the first function past
    those named schedule* (do_nanosleep)."""
    want = [(2000, 100, 'S', 'hrtimer_nanosleep'), (3000, 100, 'R', None),
            (4000, 200, 'R+', None), (5000, 100, 'D', '0x%x' % PAST),
            (7000, 200, 'S', None), (9000, 100, 'R', None)]
    got = blocked_rows(blocked_trace(ctx.path('sched'), KSYMS_SCHED))
    check(got == want, 'blocked functions:\n  got  %s\n  want %s' % (got, want))
    want[0] = (2000, 100, 'S', 'do_nanosleep')
    got = blocked_rows(blocked_trace(ctx.path('names'), KSYMS_NO_SECTION))
    check(got == want, 'by name:\n  got  %s\n  want %s' % (got, want))
    d = blocked_trace(ctx.path('nosyms'), None)
    got = blocked_rows(d)
    check(got[0][3] is None and all(r[3] is None for r in got),
          'no symbols: no scheduler frame known, no blocked function: %s' % got)


@test
def damaged_stack_costs_its_packet(ctx):
    """A kernel_stack whose depth runs past its packet is that packet's
    damage: exit 3, a lost row that says damaged, the other packet's
    samples with the ids an undamaged trace gives them, top_functions
    still report --stat's of the same damaged trace."""
    p1 = switch_out(1000, STACK_B) + [
        (2000, 1, kswitch('t100', 100, 'swapper/0', 0)),
        (2000, td.STACK_ID, struct.pack('<H', 1000) + struct.pack('<QQ', KT, KT))]
    p2 = switch_out(3000, STACK_B) + switch_out(4000, STACK_A)
    d = stacks_two_packets(ctx.path('damaged'), [p1, p2])
    good = stacks_two_packets(ctx.path('good'), [switch_out(1000, STACK_A), p2])
    got = rows(d, 'SELECT ts, stack_id FROM sample ORDER BY ts', status=3)
    want = rows(good, 'SELECT ts, stack_id FROM sample ORDER BY ts')[1:]
    check([r['stack_id'] for r in got] == [r['stack_id'] for r in want] and len(got) == 2,
          'the damaged packet cost more or less than itself: %s, want %s' % (got, want))
    lost = rows(d, 'SELECT sum(damaged) g FROM lost', status=3)
    check(lost[0]['g'] == 1, 'lost: %s' % lost)
    sql_part('stacks')(d, status=3)
# ---- the stack index: stack and frame by id (issue 31) ------------------------------------

JOIN3 = ('SELECT s.ts, s.stack_id, k.depth, k.frame_id, f.symbol FROM sample s '
         'JOIN stack k ON k.stack_id = s.stack_id JOIN frame f ON f.frame_id = k.frame_id')
JOIN3_MAT = ('WITH s AS MATERIALIZED (SELECT ts, stack_id FROM sample), '
             'k AS MATERIALIZED (SELECT stack_id, depth, frame_id FROM stack), '
             'f AS MATERIALIZED (SELECT frame_id, symbol FROM frame) '
             'SELECT s.ts, s.stack_id, k.depth, k.frame_id, f.symbol FROM s '
             'JOIN k ON k.stack_id = s.stack_id JOIN f ON f.frame_id = k.frame_id')


def row_key(r):
    return tuple(repr(v) for v in r.values())


@test
def stack_join_reads_the_trace_once(ctx):
    """sample JOIN stack ON stack_id JOIN frame ON frame_id as a user
    writes it (no MATERIALIZED): SQLite looks each stack and frame up by
    its id (the plans stack_id= and frame_id=, EXPLAIN QUERY PLAN says
    so), and the trace is read twice in all -- sample's scan, and the one
    pass that builds the stack index (scan_stats row 'stack index'), the
    lookups reading nothing -- where the stack table read again for each
    of the 300 samples read the trace 300 times; the rows are the
    materialized join's, and those of the packed umix_trace's too."""
    d = rich_stack_trace(ctx.path('rich'))
    got, st = stats(d, JOIN3)
    want = rows(d, JOIN3_MAT)
    check(len(want) > 300 and sorted(got, key=row_key) == sorted(want, key=row_key),
          'the join: %d rows, materialized %d' % (len(got), len(want)))
    by = {}
    for x in st:
        by.setdefault(x['tbl'], []).append(x)
    whole = by['sample'][0]['bytes_decompressed']
    total = sum(x['bytes_decompressed'] for x in st)
    check(whole > 0 and total == 2 * whole and len(by.get('stack index', [])) == 1 and
          by['stack'][0]['plan'] == 'stack_id=' and by['frame'][0]['plan'] == 'frame_id=' and
          by['stack'][0]['filters'] >= 300 and
          by['stack'][0]['bytes_decompressed'] == by['frame'][0]['bytes_decompressed'] == 0,
          'the join read %d bytes, sample\'s scan %d: scan_stats %s' % (total, whole, st))
    plan = sql(d, 'EXPLAIN QUERY PLAN ' + JOIN3).stdout
    check(':stack_id=' in plan and ':frame_id=' in plan, 'EXPLAIN QUERY PLAN: %s' % plan)
    d = umix_trace(ctx.path('umix'))
    got, st = stats(d, JOIN3)
    want = rows(d, JOIN3_MAT)
    check(len(want) > 8000 and sorted(got, key=row_key) == sorted(want, key=row_key),
          'umix: the join %d rows, materialized %d' % (len(got), len(want)))
    frames = sum(x['frames_read'] for x in st)
    whole = [x for x in st if x['tbl'] == 'sample'][0]['frames_read']
    check(frames == 2 * whole, 'umix: the join read %d frames, sample\'s scan %d: %s' %
          (frames, whole, st))


def id_statements(ids, table, col):
    """@table WHERE @col = X and @col + 0 = X for each of @ids, then IN."""
    text = ''
    for x in ids:
        text += 'SELECT * FROM %s WHERE %s = %d; ' % (table, col, x)
        text += 'SELECT * FROM %s WHERE %s + 0 = %d; ' % (table, col, x)
    some = ', '.join(str(x) for x in ids[::7])
    text += 'SELECT * FROM %s WHERE %s + 0 IN (%s); ' % (table, col, some)
    text += 'SELECT * FROM %s WHERE %s IN (%s); ' % (table, col, some)
    return text


def stack_and_frame_ids(d):
    ids = sorted({r['stack_id'] for r in rows(d, 'SELECT stack_id FROM sample '
                                                 'WHERE stack_id IS NOT NULL')})
    fids = sorted({r['frame_id'] for r in rows(d, 'SELECT frame_id FROM frame')})
    return ids + [4242, -1, 0], fids + [4242, -1]


@test
def stack_and_frame_by_id(ctx):
    """stack WHERE stack_id = X and frame WHERE frame_id = X, and IN
    lists, give the rows of the unpushed term (+ 0: the whole table
    filtered by SQLite), for every stack of the samples and every frame
    of two traces read as one (umix_trace's interned and inline user
    stacks, rich_stack_trace's kernel ones), and none for an id no stack
    has; after the first, a statement reads no frame (the stack index is
    the run's: no 'stack index' row, the cursor no byte)."""
    dirs = [umix_trace(ctx.path('umix')), rich_stack_trace(ctx.path('rich'))]
    ids, fids = stack_and_frame_ids(dirs)
    check(len(ids) > 300 and len(fids) > 100, '%d stacks, %d frames' % (len(ids), len(fids)))
    for table, col, xs in (('stack', 'stack_id', ids), ('frame', 'frame_id', fids)):
        path = ctx.path('%s.sql' % table)
        with open(path, 'w') as f:
            f.write(id_statements(xs, table, col) + 'SELECT * FROM scan_stats')
        r = td.rt('sql', '--json', '-f', path, *dirs)
        check(r.returncode == 0, 'sql -f: exit %d: %s' % (r.returncode, r.stderr[-500:]))
        a = arrays(r.stdout)
        check(len(a) == 2 * len(xs) + 3, '%s: %d arrays' % (table, len(a)))
        found = 0
        for i, x in enumerate(xs + ['IN']):
            got, full = a[2 * i], a[2 * i + 1]
            if x == 'IN':
                got, full = full, got
            check(sorted(got, key=row_key) == sorted(full, key=row_key) and
                  not (full and x in (4242, -1, 0)),
                  '%s %s = %s: %d rows, + 0: %d' % (table, col, x, len(got), len(full)))
            found += bool(full)
        # A stack recorded without a frame has an id and no row.
        check(found >= len(xs) - 4, '%s: %d of %d ids found' % (table, found, len(xs)))
        st = a[-1]
        check([x['tbl'] for x in st] == [table] and st[0]['bytes_decompressed'] == 0 and
              st[0]['plan'] == col + '=in',
              'the last lookup read the trace again: scan_stats %s' % st)


STACK_Q = ('SELECT * FROM stack; SELECT * FROM scan_stats; SELECT * FROM frame; '
           'SELECT * FROM stack WHERE stack_id IN (SELECT stack_id FROM sample)')


def stack_cache_run(d, env, status=0, asan=False):
    """stack, frame, the stacks of the samples by id: (their rows, the
    'stack index' row of scan_stats, stderr)."""
    r = sql(d, STACK_Q, '--json', env=env, status=status, asan=asan)
    a = arrays(r.stdout)
    check(len(a) == 4, 'printed %d arrays' % len(a))
    idx = [x for x in a[1] if x['tbl'] == 'stack index']
    return [a[0]] + a[2:], idx, r.stderr


def stack_files(cache):
    return [f for f in cache_files(cache) if f.endswith('.stacks.rtidx')]


@test
def stack_index_cached(ctx):
    """The stack index kept in RINGTRACE_SQL_CACHE (*.stacks.rtidx): the
    first process builds it (its pass reads the trace), the next reads it
    back (plan 'cache', no frame) and gives stack and frame row for row
    as a run without the cache; a cache file damaged anywhere (cut, bytes
    flipped, an absurd count with the checksum right) is a miss, built
    again, the same rows; the trace's symbols changed (their names
    renamed) is a miss, the new names given; a pass that read past
    damage is not kept (the next run says the damage again, exit 3)."""
    d = umix_trace(ctx.path('umix'))
    cache = ctx.path('cache')
    env = {'RINGTRACE_SQL_CACHE': cache}
    ref, idx, _ = stack_cache_run(d, {'RINGTRACE_SQL_CACHE': ''})
    check(len(ref[0]) > 300 and len(ref[1]) > 100 and len(idx) == 1,
          'no cache: %s rows, index %s' % (list(map(len, ref)), idx))
    got, idx, _ = stack_cache_run(d, env)
    files = stack_files(cache)
    check(got == ref and len(idx) == 1 and idx[0]['plan'] != 'cache' and
          idx[0]['frames_read'] > 10 and len(files) == 1,
          'the first process: rows %s, want %s; index %s; cache %s' %
          (list(map(len, got)), list(map(len, ref)), idx, cache_files(cache)))
    got, idx, _ = stack_cache_run(d, env)
    check(got == ref and len(idx) == 1 and idx[0]['plan'] == 'cache' and
          idx[0]['frames_read'] == 0, 'the second process: rows %s; index %s' %
          (list(map(len, got)), idx))
    path = os.path.join(cache, files[0])
    good = open(path, 'rb').read()
    rng = random.Random(33)
    # The last record is the last stack's: id, innermost node, depth.
    bad = [good[:len(good) // 2], good[:-3],
           resum(good[:48] + struct.pack('<Q', 1 << 60) + good[56:]),
           resum(flip(good, len(good) - 16)), resum(flip(good, len(good) - 4)),
           resum(good[:-8] + struct.pack('<I', 1 << 30) + good[-4:])] + \
        [flip(good, i) for i in sorted(rng.sample(range(len(good)), 6))]
    for b in bad:
        open(path, 'wb').write(b)
        got, idx, _ = stack_cache_run(d, env)
        check(got == ref and len(idx) == 1 and idx[0]['plan'] != 'cache',
              'a damaged cache file (%d bytes): rows %s, index %s' %
              (len(b), list(map(len, got)), idx))
    r = rich_stack_trace(ctx.path('rich'))
    names = lambda: {x['name'] for x in rows(r, 'SELECT name FROM frame', env=env)}  # noqa: E731
    before = names()
    td.hex_ips(r, KSYMS_RICH.replace(' fn', ' gn'))
    after = names()
    check('fn03' in before and 'gn03' in after and not any(n and n.startswith('fn')
                                                         for n in after),
          'the symbols renamed: frame names %s, before %s' % (sorted(after, key=str)[:5],
                                                            sorted(before, key=str)[:5]))
    p1 = switch_out(1000, STACK_B) + [
        (2000, 1, kswitch('t100', 100, 'swapper/0', 0)),
        (2000, td.STACK_ID, struct.pack('<H', 1000) + struct.pack('<QQ', KT, KT))]
    p2 = switch_out(3000, STACK_B) + switch_out(4000, STACK_A)
    dmg = stacks_two_packets(ctx.path('damaged'), [p1, p2])
    for i in range(2):
        got, idx, err = stack_cache_run(dmg, env, status=3)
        check(len(got[0]) == len(STACK_A) + len(STACK_B) and 'damaged' in err and
              idx and idx[0]['plan'] != 'cache',
              'a damaged trace, run %d: rows %s, index %s, stderr %r' %
              (i, list(map(len, got)), idx, err[-300:]))
    check(len(stack_files(cache)) == 2, 'the cache holds %s' % cache_files(cache))


@test
def stack_cache_fuzz_asan(ctx):
    """80 runs of the ASan build over a stack index file with 1 to 8
    random bytes changed, every other one with the checksum made right
    again (the payload's own checks stand): no sanitizer report, exit 0;
    a file whose checksum fails is built again, the rows those of a run
    without the cache."""
    d = rich_stack_trace(ctx.path('rich'))
    cache = ctx.path('cache')
    env = {'RINGTRACE_SQL_CACHE': cache}
    ref, _, _ = stack_cache_run(d, env, asan=True)
    path = os.path.join(cache, stack_files(cache)[0])
    good = open(path, 'rb').read()
    rng = random.Random(37)
    loaded = 0
    for i in range(80):
        b = fuzzed(good, rng, i)
        with open(path, 'wb') as f:
            f.write(b)
        got, idx, _ = stack_cache_run(d, env, asan=True)
        if b != good and not i % 2:
            check(got == ref and idx and idx[0]['plan'] != 'cache',
                  'fuzz run %d: rows %s, index %s' % (i, list(map(len, got)), idx))
        loaded += bool(i % 2 and idx and idx[0]['plan'] == 'cache')
    # Some files with the checksum right pass the checks (a name's byte
    # changed), most not (ids, counts, chains).
    check(loaded <= 30, '%d of 40 files with the checksum right were read' % loaded)


# ---- critical path (issue 31 P6) ---------------------------------------------------------

def csw(prev, prev_state, nxt):
    """sched_switch from @prev (in @prev_state) to @nxt, each named T<tid>."""
    return struct.pack('<16siiq16sii', b'T%d' % prev, prev, 20, prev_state,
                       b'T%d' % nxt, nxt, 20)


def cp_trace(d, cpus, last=9000, events=SCHED_EVENTS):
    """A trace of @cpus {cpu: [(µs after T0, event id, payload)]}, one packet
    each, its last item a marker at @last µs on CPU 0."""
    uuid = bytes(range(32, 48))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(td.gentrace.metadata(uuid, 1700000000, 500000000, events))
    for cpu, evs in sorted(cpus.items()):
        evs = [(T0 + t * US, eid, p) for t, eid, p in evs]
        if cpu == 0:
            evs.append((T0 + last * US, 0, marker(b'end')))
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            f.write(td.kpacket(uuid, cpu, 0, evs, T0, T0 + 10000 * US, 0))
    return d


def chain_trace(d):
    """CPU 0, times in µs after T0: A (10) runs, sleeps for B (11), which
    sleeps for C (12), which sleeps until idle wakes it (an interrupt) at
    5000; C wakes B at 5200, B wakes A at 5400, A runs to the end (9000)."""
    return cp_trace(d, {0: [
        (1000, 1, csw(0, 0, 10)), (1100, 1, csw(10, 1, 11)), (1200, 1, csw(11, 1, 12)),
        (1300, 1, csw(12, 1, 0)), (5000, 3, wk(12, 0)), (5100, 1, csw(0, 0, 12)),
        (5200, 2, wk(11, 0)), (5300, 1, csw(12, 1, 11)), (5400, 2, wk(10, 0)),
        (5500, 1, csw(11, 1, 10))]})


CP_COLS = 'ts, dur, utid, state, depth, chain'


def cp_rows(d, args):
    """critical_path(@args)'s rows, ts and dur in µs, as tuples in order."""
    got = rows(d, 'SELECT %s FROM critical_path(%s)' % (CP_COLS, args))
    return [((r['ts'] - T0) / US, r['dur'] / US, r['utid'], r['state'], r['depth'],
             r['chain']) for r in got]


def cp_partition(d, args):
    """The rows of critical_path(@args) partition [arg_ts, arg_ts + arg_dur)
    one after another and their shares sum to 1: their number."""
    got = rows(d, 'SELECT ts, dur, share, arg_ts, arg_dur FROM critical_path(%s)' % args)
    check(got, 'critical_path(%s) has no row' % args)
    at = got[0]['arg_ts']
    for r in got:
        check(r['ts'] == at and r['dur'] > 0, 'critical_path(%s): a row at %d (dur %d), '
              'the one before ended at %d' % (args, r['ts'], r['dur'], at))
        at += r['dur']
    check(at == got[0]['arg_ts'] + got[0]['arg_dur'], 'critical_path(%s): rows end at %d, '
          'the interval at %d' % (args, at, got[0]['arg_ts'] + got[0]['arg_dur']))
    total = sum(r['share'] for r in got)
    check(abs(total - 1) < 1e-9, 'critical_path(%s): shares sum to %r' % (args, total))
    return len(got)


@test
def critical_path_chain_rows(ctx):
    """A <- B <- C <- idle (chain_trace()): critical_path(A) over [500,
    6000) µs, row for row -- Unknown before A's first span, A's own
    Running and R, B's and C's spans while A waited, C's sleep ended by
    the idle task (an interrupt) stops the walk at C's S -- and they
    partition the interval, shares summing to 1; without ts and dur: A's
    life; the same rows in two traces carry the trace's number."""
    d = chain_trace(ctx.path('chain'))
    got = cp_rows(d, '10, %d, %d' % (T0 + 500 * US, 5500 * US))
    a, ab, abc = 'T10', 'T10;T11', 'T10;T11;T12'
    want = [
        (500, 500, 10, 'Unknown', 0, a), (1000, 100, 10, 'Running', 0, a),
        (1100, 100, 11, 'Running', 1, ab), (1200, 100, 12, 'Running', 2, abc),
        (1300, 3700, 12, 'S', 2, abc), (5000, 100, 12, 'R', 2, abc),
        (5100, 100, 12, 'Running', 2, abc), (5200, 100, 11, 'R', 1, ab),
        (5300, 100, 11, 'Running', 1, ab), (5400, 100, 10, 'R', 0, a),
        (5500, 500, 10, 'Running', 0, a)]
    check(got == want, 'critical_path(A):\n  got  %s\n  want %s' % (got, want))
    check(cp_partition(d, '10, %d, %d' % (T0 + 500 * US, 5500 * US)) == len(want),
          'partition')
    life = cp_rows(d, '10')
    check(life == want[1:-1] + [(5500, 3500, 10, 'Running', 0, a)],
          'critical_path(A) without ts, dur (A\'s life, 1000 to 9000): %s' % life)
    cp_partition(d, '10')
    cp_partition(d, '11')
    got = rows([REAL_TRACE, d], 'SELECT trace, utid, root_utid, count(*) n FROM '
               'critical_path(1 << 32 | 10) GROUP BY trace, utid ORDER BY utid')
    check(got == [{'trace': 1, 'utid': (1 << 32) | t, 'root_utid': (1 << 32) | 10, 'n': n}
                  for t, n in ((10, 3), (11, 3), (12, 4))], 'second trace: %s' % got)


@test
def critical_path_cycle(ctx):
    """A cycle of wakers ends the walk: a trace where A (10) is switched
    out on CPU 0 (S) while CPU 1 still runs it (its switch out there never
    recorded), so that A wakes B (11) at 2000 while A waits for B: over
    [1100, 3000) µs A's path goes to B, whose S was ended by A, already in
    the chain -- B's S is the row, not A again (and B again, 32 deep)."""
    d = cp_trace(ctx.path('cycle'), {
        0: [(900, 1, csw(0, 0, 10)), (1100, 1, csw(10, 1, 0)), (3100, 1, csw(0, 0, 10))],
        1: [(500, 1, csw(11, 1, 10)), (2000, 2, wk(11, 1)), (2100, 1, csw(0, 0, 11)),
            (3000, 2, wk(10, 0))]})
    got = cp_rows(d, '10, %d, %d' % (T0 + 1100 * US, 1900 * US))
    ab = 'T10;T11'
    want = [(1100, 900, 11, 'S', 1, ab), (2000, 100, 11, 'R', 1, ab),
            (2100, 900, 11, 'Running', 1, ab)]
    check(got == want, 'critical_path(A) of the cycle:\n  got  %s\n  want %s' % (got, want))
    cp_partition(d, '10, %d, %d' % (T0 + 1100 * US, 1900 * US))


@test
def critical_path_depth_limit(ctx):
    """35 threads (101..135) on CPU 0 each sleep in turn; idle wakes the
    last, each wakes the one before: thread 101's path follows 32 wakers
    (depth 0..32) and stops there, at 133's S, not at 135's; the rows still
    partition the interval."""
    evs, t, prev = [], 1000, 0
    for tid in range(101, 136):
        evs.append((t, 1, csw(prev, 1 if prev else 0, tid)))
        prev, t = tid, t + 10
    evs.append((t, 1, csw(135, 1, 0)))
    t = 2000
    evs.append((t, 3, wk(135, 0)))
    evs.append((t + 5, 1, csw(0, 0, 135)))
    for tid in range(135, 101, -1):
        t += 50
        evs.append((t, 2, wk(tid - 1, 0)))
        evs.append((t + 5, 1, csw(tid, 1, tid - 1)))
    d = cp_trace(ctx.path('deep'), {0: evs})
    got = rows(d, 'SELECT max(depth) m FROM critical_path(101)')
    check(got == [{'m': 32}], 'max depth %s, not 32' % got)
    deep = rows(d, 'SELECT utid, state, chain, dur FROM critical_path(101) WHERE depth = 32')
    names = ';'.join('T%d' % x for x in range(101, 134))
    check(deep and all(r['utid'] == 133 and r['chain'] == names for r in deep) and
          [r['state'] for r in deep if r['dur'] > 100 * US] == ['S'],
          'depth 32: %s' % deep)
    cp_partition(d, '101')


@test
def critical_path_softirq_waker(ctx):
    """chain_trace()'s C woken instead by a softirq that ran in thread K
    (50) on CPU 1 (irq_softirq_entry .. sched_waking .. exit, as
    PREEMPT_RT runs timers in ktimers/N): thread_state's R says
    irq_context 1 and waker K, and A's path stops at C's S rather than
    going on into K; B's wakeup by C, outside any, is irq_context NULL, as
    is 70's by thread 60, which runs after K was preempted (R+) inside a
    second softirq: a switch is never inside an interrupt."""
    soft = struct.pack('<I', 8)
    d = cp_trace(ctx.path('soft'), {
        0: [(1000, 1, csw(0, 0, 10)), (1100, 1, csw(10, 1, 11)), (1200, 1, csw(11, 1, 12)),
            (1300, 1, csw(12, 1, 0)), (5100, 1, csw(0, 0, 12)),
            (5200, 2, wk(11, 0)), (5300, 1, csw(12, 1, 11)), (5400, 2, wk(10, 0)),
            (5500, 1, csw(11, 1, 10))],
        1: [(800, 1, csw(70, 1, 50)), (900, 1, csw(50, 1, 0)), (4900, 2, wk(50, 1)),
            (4950, 1, csw(0, 0, 50)), (4980, 9, soft), (5000, 3, wk(12, 0)),
            (5010, 10, soft), (5020, 9, soft), (5030, 1, csw(50, 256, 60)),
            (5040, 2, wk(70, 1)), (5045, 1, csw(60, 1, 50)), (5048, 10, soft),
            (5050, 1, csw(50, 1, 0))]})
    got = rows(d, 'SELECT ts, utid, waker_utid, irq_context FROM thread_state '
                  "WHERE state = 'R' AND utid IN (11, 12, 70)")
    want = [{'ts': T0 + 5000 * US, 'utid': 12, 'waker_utid': 50, 'irq_context': 1},
            {'ts': T0 + 5040 * US, 'utid': 70, 'waker_utid': 60, 'irq_context': None},
            {'ts': T0 + 5200 * US, 'utid': 11, 'waker_utid': 12, 'irq_context': None}]
    check(sorted(got, key=lambda r: r['ts']) == want, 'thread_state R: %s' % got)
    got = cp_rows(d, '10, %d, %d' % (T0 + 1000 * US, 5000 * US))
    check((1300, 3700, 12, 'S', 2, 'T10;T11;T12') in got and
          not any(r[2] == 50 for r in got), 'critical_path(A): %s' % got)
    cp_partition(d, '10, %d, %d' % (T0 + 1000 * US, 5000 * US))


@test
def critical_path_timer_waker(ctx):
    """chain_trace()'s C woken instead by a timer's interrupt on CPU 1
    while thread K (50) runs there: sched_waking with waker_ctx 2 and no
    irq entry recorded (a timer's interrupt records none).  thread_state's
    R says irq_context 1 and waker K, and A's path stops at C's S rather
    than going on into K's time; C's wakeup of B (waker_ctx 0) is
    irq_context NULL and followed."""
    events = td.KERNEL_EVENTS + [(3, 'sched_waking', td.SCHED_WAKING_CTX)]

    def wkc(tid, target_cpu, waker_ctx):
        return wk(tid, target_cpu) + struct.pack('<B', waker_ctx)

    d = cp_trace(ctx.path('timer'), {
        0: [(1000, 1, csw(0, 0, 10)), (1100, 1, csw(10, 1, 11)), (1200, 1, csw(11, 1, 12)),
            (1300, 1, csw(12, 1, 0)), (5100, 1, csw(0, 0, 12)),
            (5200, 3, wkc(11, 0, 0)), (5300, 1, csw(12, 1, 11)), (5400, 3, wkc(10, 0, 0)),
            (5500, 1, csw(11, 1, 10))],
        1: [(900, 1, csw(0, 0, 50)), (5000, 3, wkc(12, 0, 2)), (5050, 1, csw(50, 1, 0))]},
        events=events)
    got = rows(d, 'SELECT ts, utid, waker_utid, irq_context FROM thread_state '
                  "WHERE state = 'R' AND utid IN (11, 12)")
    want = [{'ts': T0 + 5000 * US, 'utid': 12, 'waker_utid': 50, 'irq_context': 1},
            {'ts': T0 + 5200 * US, 'utid': 11, 'waker_utid': 12, 'irq_context': None}]
    check(sorted(got, key=lambda r: r['ts']) == want, 'thread_state R: %s' % got)
    got = cp_rows(d, '10, %d, %d' % (T0 + 1000 * US, 5000 * US))
    check((1300, 3700, 12, 'S', 2, 'T10;T11;T12') in got and
          not any(r[2] == 50 for r in got), 'critical_path(A): %s' % got)
    cp_partition(d, '10, %d, %d' % (T0 + 1000 * US, 5000 * US))


def report_cp(d, *args, status=0):
    r = td.rt('report', '--critical-path', *(list(args) + [d]))
    check(r.returncode == status, 'report --critical-path %s: exit %d: %s' %
          (' '.join(args), r.returncode, r.stderr))
    return r


@test
def critical_path_report_and_folded(ctx):
    """report --critical-path of chain_trace()'s A, by tid and by name,
    --begin/--end as report prints times: a line per critical_path() row,
    the same start, duration (every ns), share, state and chain; --folded:
    the rows summed by chain;state in ns, in the order they first come;
    a name no thread has, or the idle task, is an error (exit 1)."""
    d = chain_trace(ctx.path('chain'))
    begin, end = '1.000500000', '1.006000000'
    want = rows(d, 'SELECT ts, dur, share, state, chain FROM critical_path(10, %d, %d)' %
                (T0 + 500 * US, 5500 * US))
    for who in ('10', 'T10'):
        out = report_cp(d, who, '--begin', begin, '--end', end).stdout.splitlines()
        check(out[0] == 'critical path of tid 10 from %s to %s (5.500000 ms)' % (begin, end),
              'header %r' % out[0])
        got = []
        for l in out[2:]:
            f = l.split()
            sec, ns = f[0].split('.')
            ms, frac = f[1].split('.')
            got.append({'ts': int(sec) * 10**9 + int(ns), 'dur': int(ms) * 10**6 + int(frac),
                        'share': f[2], 'state': f[3], 'chain': f[4]})
        exp = [dict(r, share='%.2f%%' % (100 * r['share'])) for r in want]
        check(got == exp, 'report --critical-path %s:\n  got  %s\n  want %s' % (who, got, exp))
    out = report_cp(d, 'T10', '--begin', begin, '--end', end, '--folded').stdout
    fold = ['T10;Unknown 500000', 'T10;Running 600000', 'T10;T11;Running 200000',
            'T10;T11;T12;Running 200000', 'T10;T11;T12;S 3700000', 'T10;T11;T12;R 100000',
            'T10;T11;R 100000', 'T10;R 100000']
    check(out.splitlines() == fold, 'report --critical-path --folded:\n%s' % out)
    r = report_cp(d, 'nobody', status=1)
    check("no thread named 'nobody'" in r.stderr, 'unknown name: %r' % r.stderr)
    r = report_cp(d, '0', status=1)
    check('idle task' in r.stderr, 'idle: %r' % r.stderr)
    r = report_cp(d, 'T10', '--stat', status=2)
    r = sql(d, 'SELECT * FROM critical_path', status=1)
    check('critical_path(utid' in r.stderr, 'no argument: %r' % r.stderr)
    r = sql(d, "SELECT * FROM critical_path('x')", status=1)
    check('utid must be an integer' in r.stderr, 'text argument: %r' % r.stderr)


@test
def critical_path_part_real_trace(ctx):
    """sql.d/critpath.py's checks (run by sql_check.py on every
    recording) on the real trace, on it damaged (exit 3), and on
    chain_trace(): the critical path of the thread that sleeps most
    partitions its life, report --critical-path prints its rows."""
    part = sql_part('critpath')
    part(REAL_TRACE)
    part(chain_trace(ctx.path('chain')))
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    part(bad, status=3)


def cp_oracle(spans, names, root, begin, end):
    """critical_path(@root, @begin, @end - @begin) computed here from
    @spans, thread_state's rows of the whole trace (critpath.h's walk):
    rows (ts, dur, utid, state, depth, chain)."""
    threads = {}
    for r in spans:
        if r['utid'] > 0 and r['ts'] <= end and r['end_ts'] > begin:
            threads.setdefault(r['utid'], []).append(r)
    for v in threads.values():
        v.sort(key=lambda r: (r['ts'], r['end_ts']))

    def blocked(state):
        return state not in (None, 'Running') and not state.startswith('R')

    def waker(v, k):
        n = v[k + 1] if k + 1 < len(v) else None
        if not n or n['ts'] != v[k]['end_ts'] or n['state'] != 'R' or n['waker_utid'] is None:
            return -1
        return -1 if n['irq_context'] else n['waker_utid']

    out = []

    def emit(chain, ts, e, state):
        if e > ts:
            out.append((ts, e - ts, chain[-1], state, len(chain) - 1,
                        ';'.join(names.get(t, str(t)) for t in chain)))

    def walk(chain, s, e):
        v = threads.get(chain[-1], [])
        at = s
        i = max([k for k, r in enumerate(v) if r['ts'] <= s] or [0])
        while i < len(v) and at < e:
            r = v[i]
            a, b = max(r['ts'], at), min(r['end_ts'], e)
            i += 1
            if a >= e:
                break
            if b <= a:
                continue
            emit(chain, at, a, 'Unknown')
            w = waker(v, i - 1) if blocked(r['state']) else -1
            if w > 0 and len(chain) <= 32 and w not in chain:
                walk(chain + [w], a, b)
            else:
                emit(chain, a, b, r['state'] or 'Unknown')
            at = b
        emit(chain, at, e, 'Unknown')
    walk([root], begin, end)
    return out


@test
def critical_path_window_reads_the_window(ctx):
    """critical_path(utid, ts, dur) on a packed trace of a scheduler at
    work (sched_mix_trace()), 6 windows of 1 % of it (the last one at the
    trace's end) for threads that run in them: the rows are the walk of
    critpath.h done here over the whole trace's thread_state; scan_stats:
    read as without scheduler records (RINGTRACE_SQL_SCHEDREC=0), the
    checkpoints read the trace once, critical_path no more frames than
    raw's window of [ts, ts + dur] and 2 a CPU (a checkpoint interval
    either side), and a second call in the same run the same, the index
    not rebuilt; with them, the same rows and no pass for the checkpoints
    (no 'sched index' row), each call under a fifth of the trace's frames
    (past the window, the frames where the spans it touches end)."""
    d = mix_packed(ctx)
    spans = rows(d, 'SELECT ts, end_ts, utid, state, waker_utid, irq_context '
                 'FROM thread_state')
    names = {r['utid']: r['name'] for r in rows(d, 'SELECT utid, name FROM thread')}
    lo = min(r['ts'] for r in spans)
    hi = max(r['end_ts'] for r in spans)
    dur = (hi - lo) // 100
    rng = random.Random(31)
    cols = 'ts, dur, utid, state, depth, chain'
    deep = 0
    for n in range(6):
        a = rng.randrange(lo, hi - dur) if n < 5 else hi - dur
        ran = sorted({r['utid'] for r in spans if r['state'] == 'Running' and r['utid'] > 0
                      and r['end_ts'] >= a and r['ts'] <= a + dur})
        check(ran, '[%d, %d]: no thread runs' % (a, a + dur))
        u = ran[n % len(ran)]
        q = ('SELECT %s FROM critical_path(%d, %d, %d); SELECT * FROM scan_stats; '
             'SELECT %s FROM critical_path(%d, %d, %d); SELECT * FROM scan_stats; '
             'SELECT count(*) FROM raw WHERE ts BETWEEN %d AND %d; SELECT * FROM scan_stats' %
             (cols, u, a, dur, cols, u, a + dur // 2, dur, a, a + dur))
        whole = None
        for env in (NO_RECORDS, {}):
            got, st, got2, st2, _, raw = arrays(sql(d, q, '--json', env=env).stdout)
            for b, g in ((a, got), (a + dur // 2, got2)):
                g = [tuple(r[k] for k in ('ts', 'dur', 'utid', 'state', 'depth', 'chain'))
                     for r in g]
                want = cp_oracle(spans, names, u, b, b + dur)
                deep = max([deep] + [r[4] for r in want])
                check(g == want, 'critical_path(%d, %d, %d) %s: %d rows, the walk of the '
                      'whole thread_state %d; first different %s' %
                      (u, b, dur, env, len(g), len(want), [(x, y) for x, y in zip(g, want)
                                                           if x != y][:2]))
            idx = [x for x in st if x['tbl'] == 'sched index']
            check(len(idx) == (1 if env else 0) and (not env or idx[0]['frames_read'] > 100),
                  '[%d, %d] %s: scan_stats %s' % (a, a + dur, env, st))
            whole = idx[0]['frames_read'] if env else whole
            for s in (st, st2):
                cp = [x for x in s if x['tbl'] == 'critical_path']
                most = raw[0]['frames_read'] + 2 * 2 if env else whole // 5
                check(len(cp) == 1 and cp[0]['frames_read'] <= most,
                      'critical_path(%d, %d, %d) %s: %s frames read, raw\'s window %d, the '
                      'trace %d' % (u, a, dur, env, [x['frames_read'] for x in cp],
                                    raw[0]['frames_read'], whole))
            check(not [x for x in st2 if x['tbl'] == 'sched index'],
                  'the second call built the checkpoints again: %s' % st2)
    check(deep >= 2, 'no window followed a waker\'s waker (depth %d)' % deep)


# ---- --max-memory (issue 31 P7) ----------------------------------------------------------

def big_trace(ctx):
    """400 000 events on 2 CPUs (16 MiB): enough that keeping every
    event's args per CPU takes more than 8 MiB, half of --max-memory 16M."""
    return mixed_trace(ctx.path('big'), packets=400, per_packet=500, seed=5)


@test
def max_memory_refuses_what_needs_memory(ctx):
    """A GROUP BY over all events that keeps every event (group_concat of
    their args per CPU) fails under --max-memory 16M with the message that
    says so, exit 1, no row printed; without the option (1G) and with 0 it
    gives every CPU's whole length, the streamed sum of the same."""
    d = big_trace(ctx)
    q = 'SELECT cpu, length(group_concat(args)) n FROM raw GROUP BY cpu'
    want = {r['cpu']: r['n'] for r in
            rows(d, 'SELECT cpu, sum(length(args)) + count(*) - 1 n FROM raw GROUP BY cpu')}
    check(len(want) == 2 and min(want.values()) > 8 << 20,
          'the trace keeps too little per CPU to need 8 MiB: %s' % want)
    r = sql(d, q, '--csv', '--max-memory', '16M', status=1)
    msg = 'ringtrace: the statement needs more memory than --max-memory 16M allows'
    check(r.stderr.startswith(msg) and 'raise --max-memory' in r.stderr,
          '--max-memory 16M: stderr %r' % r.stderr)
    check(r.stdout.strip() in ('', 'cpu,n'), '--max-memory 16M printed rows: %r' %
          r.stdout[:200])
    for opts in ((), ('--max-memory', '0')):
        got = {x['cpu']: x['n'] for x in rows(d, q, *opts)}
        check(got == want, '%s: %s, expected %s' % (opts or 'default', got, want))


@test
def max_memory_lets_sorts_spill(ctx):
    """Under --max-memory 16M what SQLite can spill to its temporary files
    still runs: GROUP BY name, cpu is report --stat's counts, and GROUP BY
    ts (a group per event: a sort of all 400 000) has a row per event."""
    d = big_trace(ctx)
    want = stat_events(report_stat(d))
    got = {(r['name'], r['cpu']): r['n'] for r in
           rows(d, 'SELECT name, cpu, count(*) n FROM raw GROUP BY name, cpu',
                '--max-memory', '16M')}
    check(got == want, 'grouped under 16M %s\n  report %s' % (sorted(got.items()),
                                                               sorted(want.items())))
    got = rows(d, 'SELECT count(*) g, sum(n) n FROM '
                  '(SELECT ts, count(*) n FROM raw GROUP BY ts)', '--max-memory', '16M')
    check(got == [{'g': 400000, 'n': 400000}], 'GROUP BY ts under 16M: %s' % got)


@test
def max_memory_bad_values(ctx):
    """--max-memory takes a size of at least 1M, or 0: anything else is a
    usage error (exit 2) that names it."""
    for v in ('1k', 'lots', '-1', '16Q', ''):
        r = td.rt('sql', '--max-memory', v, REAL_TRACE, 'SELECT 1')
        check(r.returncode == 2 and "--max-memory wants a size" in r.stderr and
              repr(v) in r.stderr.replace('"', "'"),
              '--max-memory %r: exit %d %r' % (v, r.returncode, r.stderr))
    r = sql(REAL_TRACE, 'SELECT count(*) n FROM raw', '--json', '--max-memory', '1M')
    check(json.loads(r.stdout)[0]['n'] > 100, '--max-memory 1M: %r' % r.stdout)


def damaged_real_copy(ctx):
    """tools/tests/real-trace unpacked, one packet header of cpu0 damaged."""
    d = ctx.path('real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    return bad


@test
def critical_path_name_on_strict_damage(ctx):
    """report --critical-path COMM --strict on a damaged trace: the thread
    table's read fails on the damage, and that is the error (exit 1), not
    "no thread named"."""
    bad = damaged_real_copy(ctx)
    r = report_cp(bad, 'ls', '--strict', status=1)
    check('damaged header' in r.stderr and 'no thread named' not in r.stderr,
          'report --critical-path ls --strict: %r' % r.stderr)
    # Without --strict: the name is found (twice in this trace), exit 1 said.
    r = report_cp(bad, 'ls', status=1)
    check("2 threads named 'ls'" in r.stderr, 'report --critical-path ls: %r' % r.stderr)


# ---- utid on the span tables, tid on sample (issue 31, gaps 2 and 3) ----------------------

# The span tables' utid columns (thread_state and sched_slice, syscall, and wakeup's
# wakee): (table, the pushed column, the columns compared).
UTID_TABLES = (
    ('thread_state', 'utid', SPAN_TABLES['thread_state']),
    ('sched_slice', 'utid', SPAN_TABLES['sched_slice']),
    ('syscall', 'utid', SPAN_TABLES['syscall']),
    ('wakeup', 'wakee_utid', SPAN_TABLES['wakeup']),
)


def utid_span_rows(d, table, col, cols, x, extra='', status=0, env=None):
    """@table's rows of @col = @x pushed down and not (@col + 0 = @x, which
    SQLite cannot push), sorted, and the pushed cursor's scan_stats row."""
    q = 'SELECT %s FROM %s WHERE %s = %d%s' % (cols, table, col, x, extra)
    u = 'SELECT %s FROM %s WHERE %s + 0 = %d%s' % (cols, table, col, x, extra)
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731
    a = arrays(sql(d, q + '; SELECT * FROM scan_stats; ' + u + '; SELECT * FROM scan_stats',
                   '--json', status=status, env=env).stdout)
    check(len(a) == 4, '%s %s %d: printed %d arrays' % (table, col, x, len(a)))
    own = [r for r in a[1] if r['tbl'] == table]
    whole = [r for r in a[3] if r['tbl'] == table]
    check(len(own) == 1 and len(whole) == 1, '%s: scan_stats %s / %s' % (table, a[1], a[3]))
    return sorted(a[0], key=key), sorted(a[2], key=key), own[0], whole[0]


@test
def utid_span_tables_equal_unpushed(ctx):
    """thread_state, sched_slice and syscall WHERE utid = X, and wakeup
    WHERE wakee_utid = X, on the packed
    scheduler trace of utid_reads_its_runs (threads migrating, sleepers
    woken across CPUs, calls left open, thread 99 asleep from the first
    event to the end, 7777 running once halfway): the rows are exactly
    those of utid + 0 = X (SQLite's filter of the whole table), column for
    column, for busy threads, 99, 7777, 4242 (never ran) and the idle
    task, also with ts windows; and where X is named in a few places (7777,
    99, 4242) the pushed cursor reads under a quarter of the whole
    table's frames."""
    d = runs_packed(ctx)
    for table, col, cols in UTID_TABLES:
        for x in RUN_TIDS:
            got, full, st, whole = utid_span_rows(d, table, col, cols, x)
            check(got == full, '%s utid %d: %d rows pushed down, %d not; only in one: %s' %
                  (table, x, len(got), len(full),
                   sorted(set(map(repr, got)) ^ set(map(repr, full)))[:4]))
            check(x in (4242, 0, 99) or table in ('syscall', 'wakeup') or len(full) > 0,
                  '%s utid %d has no rows' % (table, x))
            if x in (7777, 4242, 99):
                check(st['frames_read'] * 4 < whole['frames_read'],
                      '%s utid %d read %d frames, the whole table %d' %
                      (table, x, st['frames_read'], whole['frames_read']))
        ts = [r['ts'] for r in rows(d, 'SELECT ts FROM %s WHERE %s + 0 = 105' % (table, col))]
        lo = min(ts)
        for extra in (' AND ts BETWEEN %d AND %d' % (lo + 10**7, lo + 3 * 10**7),
                      ' AND ts > %d' % (lo + 10**7), ' AND ts < %d' % (lo + 10**6)):
            got, full, _, _ = utid_span_rows(d, table, col, cols, 105, extra)
            check(got == full and len(full) > 0, '%s utid 105%s: %d rows pushed, %d not' %
                  (table, extra, len(got), len(full)))



@test
def utid_window_leaving_out_a_cpu(ctx):
    """utid = X (wakee_utid = X on wakeup) with a ts range that leaves out
    one of the CPUs X is on -- after its last event there, or before its
    first --: raw and the span tables give the rows of utid + 0 = X, for
    every thread of the packed scheduler trace on two CPUs or more.  (The
    per-CPU read once kept only the last CPU's verdict: a range missing
    the last CPU read nothing, 0 rows for 148 on 6.12-rt's recording.)"""
    d = runs_packed(ctx)
    tables = UTID_TABLES + (('raw', 'utid', 'ts, cpu, utid, name, args'),)
    some = 0
    for x in RUN_TIDS:
        spans = rows(d, 'SELECT cpu, min(ts) lo, max(ts) hi FROM raw WHERE utid + 0 = %d '
                        'GROUP BY cpu' % x)
        if len(spans) < 2:
            continue
        for sp in spans:
            for extra in (' AND ts > %d' % sp['hi'], ' AND ts < %d' % sp['lo']):
                for table, col, cols in tables:
                    q = 'SELECT %s FROM %s WHERE %s %%s %d%s' % (cols, table, col, x, extra)
                    got = sorted(map(repr, rows(d, q % '=')))
                    full = sorted(map(repr, rows(d, q % '+ 0 =')))
                    check(got == full, '%s %s = %d%s: %d rows pushed down, %d not' %
                          (table, col, x, extra, len(got), len(full)))
                    some += len(full) > 0
    check(some > 20, 'only %d of the windows have rows' % some)


@test
def utid_run_index_cached(ctx):
    """The run lists (and named-in lists) kept in RINGTRACE_SQL_CACHE: the
    first process builds them ('run index', every frame) and writes
    DIR/*.runs.rtidx; the next reads them (plan 'cache', no frame) and
    gives the same rows of thread_state, sched_slice and syscall WHERE
    utid = X and wakeup WHERE wakee_utid = X; a cache file damaged anywhere (a byte flipped, cut short) is
    a miss: built again, the same rows."""
    d = runs_packed(ctx)
    cache = ctx.path('cache')
    env = {'RINGTRACE_SQL_CACHE': cache}
    # scan_stats after the first statement: the one that read the lists.
    q = '; '.join('SELECT %s FROM %s WHERE %s = 105' % (cols, t, col)
                  for t, col, cols in UTID_TABLES[:1]) + '; SELECT * FROM scan_stats; ' + \
        '; '.join('SELECT %s FROM %s WHERE %s = 105' % (cols, t, col)
                  for t, col, cols in UTID_TABLES[1:])
    key = lambda r: tuple(repr(v) for v in r.values())  # noqa: E731

    def one(what):
        a = arrays(sql(d, q, '--json', env=env).stdout)
        check(len(a) == len(UTID_TABLES) + 1, '%s: %d arrays' % (what, len(a)))
        idx = [r for r in a[1] if r['tbl'] == 'run index']
        return [sorted(x, key=key) for x in a[:1] + a[2:]], idx

    ref = [sorted(rows(d, 'SELECT %s FROM %s WHERE %s + 0 = 105' % (cols, t, col)), key=key)
           for t, col, cols in UTID_TABLES]
    got, idx = one('the first process')
    files = [f for f in cache_files(cache) if f.endswith('.runs.rtidx')]
    check(got == ref and len(idx) == 1 and idx[0]['plan'] != 'cache' and
          idx[0]['frames_read'] > 100 and len(files) == 1,
          'the first process: rows %s, want %s; run index %s; cache %s' %
          (list(map(len, got)), list(map(len, ref)), idx, os.listdir(cache)))
    got, idx = one('the second process')
    check(got == ref and len(idx) == 1 and idx[0]['plan'] == 'cache' and
          idx[0]['frames_read'] == 0, 'the second process: rows %s, want %s; run index %s' %
          (list(map(len, got)), list(map(len, ref)), idx))
    path = os.path.join(cache, files[0])
    good = open(path, 'rb').read()
    rng = random.Random(31)
    for bad in [good[:len(good) // 2], good[:-3]] + \
            [good[:i] + bytes([good[i] ^ 0x40]) + good[i + 1:]
             for i in sorted(rng.sample(range(len(good)), 6))]:
        open(path, 'wb').write(bad)
        got, idx = one('a damaged cache file')
        check(got == ref and len(idx) == 1 and idx[0]['plan'] != 'cache',
              'a damaged cache file (%d bytes): rows %s, run index %s' %
              (len(bad), list(map(len, got)), idx))



# wakeup's and thread_state's waker_utid: (table, the columns compared).
WAKER_TABLES = (
    ('wakeup', SPAN_TABLES['wakeup']),
    ('thread_state', SPAN_TABLES['thread_state']),
)


@test
def waker_utid_reads_its_time(ctx):
    """wakeup and thread_state WHERE waker_utid = X on the packed
    scheduler trace of utid_reads_its_runs, its visitor 7777 waking a
    sleeper between its two markers halfway: the rows are exactly those
    of waker_utid + 0 = X (SQLite's filter of the whole table), column for
    column, for busy threads, 7777, 99 (asleep throughout: wakes no one),
    4242 (never ran) and the idle task, also with ts windows and with
    utid = (wakee_utid =) beside it; 7777 has its one row, and where X ran
    in a short time (7777) or never (4242) the pushed cursor reads under a
    quarter of the whole table's frames."""
    d = sched_mix_trace(ctx.path('runs'), visitor=7777, visitor_wakes=True)
    r = td.rt('compress', '--frame-size', '4K', '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    for table, cols in WAKER_TABLES:
        for x in RUN_TIDS:
            got, full, st, whole = utid_span_rows(d, table, 'waker_utid', cols, x)
            check(got == full, '%s waker_utid %d: %d rows pushed down, %d not; only in one: %s' %
                  (table, x, len(got), len(full),
                   sorted(set(map(repr, got)) ^ set(map(repr, full)))[:4]))
            check(x in (4242, 99) or len(full) > 0, '%s waker_utid %d has no rows' % (table, x))
            check(x != 7777 or len(full) == 1, '%s waker_utid 7777: %d rows' % (table, len(full)))
            if x in (7777, 4242):
                check(st['frames_read'] * 4 < whole['frames_read'],
                      '%s waker_utid %d read %d frames, the whole table %d' %
                      (table, x, st['frames_read'], whole['frames_read']))
        ts = [r['ts'] for r in rows(d, 'SELECT ts FROM %s WHERE waker_utid + 0 = 105' % table)]
        lo = min(ts)
        wakee = 'wakee_utid' if table == 'wakeup' else 'utid'
        for extra in (' AND ts BETWEEN %d AND %d' % (lo + 10**7, lo + 3 * 10**7),
                      ' AND ts > %d' % (lo + 10**7), ' AND ts < %d' % (lo + 10**6),
                      ' AND %s = 117' % wakee):
            got, full, _, _ = utid_span_rows(d, table, 'waker_utid', cols, 105, extra)
            check(got == full and len(full) > 0, '%s waker_utid 105%s: %d rows pushed, %d not' %
                  (table, extra, len(got), len(full)))


@test
def sample_utid_and_tid_read_their_runs(ctx):
    """sample WHERE utid = X and WHERE tid = X on umix_trace() (the
    profiler's samples name a process while the switches say swapper runs
    there: a sample's thread is not the CPU's owner; forks mid-trace; user
    stacks named by mappings that change; a thread of process 300 cloned
    nine tenths through on a CPU it never runs on, so that its switches'
    samples are named process 300 by that CPU's events alone): the rows
    are those of utid + 0 = X and tid + 0 = X, column for column (pid and
    stack_id included: the process and the user frames named by every
    CPU's events), whole and in a window, for a process of the state
    dump, that thread, the idle task and a tid never seen; that thread
    decodes under half the events of the unpushed scan, and a tid never
    seen opens no CPU."""
    d = umix_trace(ctx.path('umix'), cpus=3, late=9999)
    cols = 'ts, cpu, utid, tid, pid, event, stack_id'
    born = rows(d, 'SELECT tid, min(ts) ts FROM sample WHERE tid > 0 GROUP BY tid '
                   'ORDER BY ts DESC')
    span = rows(d, 'SELECT min(ts) lo, max(ts) hi FROM raw')[0]
    late = born[0]
    check(late['ts'] > span['lo'] + 2 * (span['hi'] - span['lo']) // 3 and
          any(b['tid'] == 300 for b in born),
          'the last process forked samples first at %d of [%d, %d]: %s' %
          (late['ts'], span['lo'], span['hi'], born[:3]))
    mid = (span['lo'] + span['hi']) // 2
    for x in (300, late['tid'], 0, 4242):
        for col in ('utid', 'tid'):
            for extra in ('', ' AND ts >= %d' % mid):
                got, full, st, whole = utid_span_rows(d, 'sample', col, cols, x, extra)
                check(got == full, 'sample %s = %d%s: %d rows pushed down, %d not; only in '
                      'one: %s' % (col, x, extra, len(got), len(full),
                                   sorted(set(map(repr, got)) ^ set(map(repr, full)))[:4]))
                check(x in (4242, 0) or len(full) > 0, 'sample %s = %d%s: no rows' % (col, x, extra))
                if x == late['tid'] and not extra:
                    check(st['events_decoded'] * 2 < whole['events_decoded'],
                          'sample %s = %d decoded %d events, the whole table %d' %
                          (col, x, st['events_decoded'], whole['events_decoded']))
                if x == 4242:
                    check(st['cpus'] == 0 and st['frames_read'] == 0,
                          'sample %s = 4242 (never seen): %s' % (col, st))

def main():
    args = td.suite_args(__doc__, 'RT_SQL_BIN')
    if td.missing('sql', [td.RINGTRACE], 'run make -C tools ringtrace'):
        return 1
    # The span tables' checkpoints are not kept between runs (the cache_*
    # tests give RINGTRACE_SQL_CACHE a directory): every test sees what
    # one process reads, and nothing lands in the user's ~/.cache.
    os.environ['RINGTRACE_SQL_CACHE'] = ''
    return td.run_suite('sql', TESTS, lambda tmp: Ctx(tmp), args)


if __name__ == '__main__':
    sys.exit(main())
