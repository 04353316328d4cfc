#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of `ringtrace ship --clickhouse` against real clickhouse-server
instances on loopback (tools/tests/clickhouse.py: private configs, random
ports, killed at the end), ClickHouse's own answers as the check and
`ringtrace sql` on the same trace as the oracle:

  - per table row counts and aggregates (events per name and CPU; syscall
    count, total and max per name; on-CPU per thread; wakeup latencies;
    lost sums) equal sql's, on the committed tools/tests/real-trace, on
    synthetic traces (test_sql.py's builders, stacks too) and on chunk sets (each set
    its own set_id, the sums over sets sql's of each set);
  - a set shipped twice: the same counts, and stdout says "shipped before";
  - the bytes sent said on stderr ("N bytes sent (M before lz4)"): M the
    RowBinary of the rows on the server, N compressed below it;
  - --compress lz4, zstd, gzip and none: the same rows, all columns, row
    for row, and sql's answers; a compression ship does not know: exit 2;
  - the tables' passes share the frames the first decoded (--cache): each
    packed frame of the trace decoded once, as the stderr line says, the
    rows sql's; with a cache too small for a frame, every pass decodes
    each frame again and the rows are the same;
  - a ship SIGKILLed between two batches (RINGTRACE_SHIP_BATCH small), its
    partial rows seen on the server, then run again: every row exactly once;
  - a trace with a damaged packet header: exit 3, the damage said, what
    is shipped sql's answer on the same copy;
  - the same under --strict, another trace after it: the first said not
    read (its table and stream named), the second shipped, exit 1;
  - a server SIGKILLed mid-ship: exit 1 said; restarted, the same ship
    again: every row exactly once;
  - refused credentials (HTTP 401, ClickHouse's "Wrong password"), a server
    down, a table of another shape: the server's answer said, exit 1, the
    password not printed, nothing recorded as done; the right password
    ships;
  - two servers as two shards of a Distributed table: the fleet's events
    per host and name are the union of sql on each trace.
  - ringtraced's hand-off (daemon/tests/rt-handoff ship, no module) with
    --on-chunk 'ringtrace ship --clickhouse URL': sets a down server
    refused are shipped by the next start, each row once; a set given as
    SETDIR MANIFEST, or in RINGTRACE_CHUNK_DIR, ships once;
  - sql --clickhouse prints as sql does (table, CSV, JSON), says the
    server's errors, and its --stat equals sql --stat on the same trace,
    query by query.

No clickhouse-server binary: a failure, not a skip.
Usage: test_ship.py [-k SUBSTRING] [-v] [--keep]
Last line: `ship: N passed, M failed`.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_decoder as td  # noqa: E402
from test_decoder import Fail, check  # noqa: E402
import test_sql as ts  # noqa: E402
import clickhouse  # noqa: E402

TESTS, test = td.registry()
REAL_TRACE = os.path.join(HERE, 'real-trace')
SERVERS = []                    # started by main(): two shards


class Ctx(ts.Ctx):
    dbs = 0

    def db(self):
        """A database name of its own."""
        Ctx.dbs += 1
        return 'rt%d' % Ctx.dbs


def ship(url, db, *dirs, env=None, status=0, opts=()):
    r = td.rt_env(env or {}, 'ship', '--clickhouse', url, '--database', db,
                  *(list(opts) + list(dirs)), asan=False)
    check(r.returncode == status, 'ship %s: exit %d, expected %d:\n%s%s' %
          (' '.join(dirs), r.returncode, status, r.stdout[-1500:], r.stderr[-1500:]))
    return r


# The tables shipped, and the aggregates compared: {t} is the table's name
# (sql) or db.table (ClickHouse); both dialects read them alike.
TABLES = ('raw', 'thread', 'process', 'sched_slice', 'thread_state', 'syscall',
          'wakeup', 'irq', 'softirq', 'marker', 'lost', 'sample', 'stack', 'frame', 'trace')
AGGREGATES = (
    ('raw', 'SELECT name, cpu, count(*) FROM {t} GROUP BY name, cpu'),
    ('syscall', 'SELECT name, count(*), sum(ifNull(dur, 0)), max(ifNull(dur, -1)), '
                'count(dur) FROM {t} GROUP BY name'),
    ('sched_slice', 'SELECT utid, sum(dur), count(*) FROM {t} GROUP BY utid'),
    ('thread_state', 'SELECT utid, ifNull(state, \'?\'), sum(ifNull(dur, 0)), count(*) '
                     'FROM {t} GROUP BY utid, state'),
    ('wakeup', 'SELECT count(latency), sum(ifNull(latency, 0)), max(ifNull(latency, -1)), '
               'count(*) FROM {t}'),
    ('lost', 'SELECT ifNull(cpu, -1), sum(ifNull(events, 0)), sum(ifNull(packets, 0)), '
             'sum(ifNull(damaged, 0)) FROM {t} GROUP BY cpu'),
    ('thread', 'SELECT tid, ifNull(name, \'\'), ifNull(upid, -1) FROM {t}'),
    ('marker', 'SELECT cpu, text FROM {t}'),
    ('sample', 'SELECT utid, event, ifNull(stack_id, -1), count(*) FROM {t} '
               'GROUP BY utid, event, stack_id'),
    ('frame', 'SELECT frame_id, kind, ifNull(name, \'?\'), ifNull(module, \'?\') FROM {t}'),
    ('stack', 'SELECT stack_id, depth, frame_id FROM {t}'),
    ('trace', 'SELECT uuid, nr_sets, nr_gaps, nr_cpus, clock_freq, wall_offset_ns, first_ts, '
              'last_ts, wall_offset_start_ns, wall_offset_end_ns, clock_drift_ns FROM {t}'),
)


def set_key(set_id):
    """A set's set_key: XXH64 (seed 0) of its set_id, as xxhsum computes it."""
    out = subprocess.run(['xxhsum', '-H64', '-'], input=set_id.encode(), check=True,
                         capture_output=True).stdout
    return int(out.split()[0], 16)


def norm(v):
    return '\\N' if v is None else str(v)


def sql_rows(d, query, status=0):
    return sorted(tuple(norm(v) for v in r.values()) for r in ts.rows(d, query, status=status))


def ch_rows(server, query):
    return sorted(tuple(r) for r in server.rows(query))


def add(acc, rows):
    """The last column of @rows summed into @acc by the others (several
    sets into one)."""
    for r in rows:
        acc[r[:-1]] = acc.get(r[:-1], 0) + int(r[-1])
    return acc


def counts(server, db):
    return {t: int(server.query('SELECT count() FROM %s.%s' % (db, t)) or 0) for t in TABLES}


def sql_counts(d, status=0):
    """Every table's count, in one run of sql."""
    r = ts.rows(d, 'SELECT ' + ', '.join('(SELECT count(*) FROM %s) AS %s' % (t, t)
                                         for t in TABLES), status=status)[0]
    return {t: r[t] for t in TABLES}


def same_as_sql(server, db, d, status=0):
    """@d alone in @db: every table's count and every aggregate is sql's."""
    want = sql_counts(d, status)
    got = counts(server, db)
    check(got == want, 'row counts on the server %s\n  sql %s' % (got, want))
    check(want['raw'] > 0, 'no raw rows in %s' % d)
    for table, q in AGGREGATES:
        if not want[table]:        # sum() of nothing: NULL in SQLite, 0 here
            continue
        w = sql_rows(d, q.format(t=table), status)
        g = ch_rows(server, q.format(t='%s.%s' % (db, table)))
        check(g == w, '%s on the server:\n  %s\n  sql:\n  %s' % (q, g[:20], w[:20]))
    return want


def synthetic(ctx):
    return [ts.mixed_trace(ctx.path('mixed')), ts.sched_trace(ctx.path('sched')),
            ts.syscall_trace(ctx.path('sys')), ts.thread_trace(ctx.path('thr')),
            ts.wakeup_trace(ctx.path('wk'), [5000, 20000, 7000, 90000]),
            ts.rich_stack_trace(ctx.path('stacks'))]


@test
def real_trace_equals_sql(ctx):
    """tools/tests/real-trace shipped: counts and aggregates are sql's, each
    row has the trace's host, its set_key (XXH64 of the trace uuid, its
    set_id in ringtrace_sets) and wall_ts =
    ts + the trace's wall offset; ringtrace_sets says every table once."""
    s, db = SERVERS[0], ctx.db()
    r = ship(s.url, db, REAL_TRACE)
    want = same_as_sql(s, db, REAL_TRACE)
    check('real-trace: raw: %d rows' % want['raw'] in r.stdout, 'stdout: %s' % r.stdout)
    off = ts.rows(REAL_TRACE, 'SELECT wall_offset_ns o, uuid FROM trace')[0]
    key = set_key(off['uuid'])
    bad = s.query("SELECT count() FROM %s.raw WHERE host != 'rtvm' OR set_key != %d "
                  "OR wall_ts != ts + %d OR day != toDate(intDiv(wall_ts, 1000000000))"
                  % (db, key, off['o']))
    check(bad.strip() == '0', '%s rows with another host, set_key or wall_ts' % bad.strip())
    sets = ch_rows(s, 'SELECT table, toString(rows), set_id, toString(set_key) '
                      'FROM %s.ringtrace_sets' % db)
    check(sets == sorted((t, str(want[t]), off['uuid'], str(key)) for t in TABLES),
          'ringtrace_sets: %s' % sets)


@test
def synthetic_traces_equal_sql(ctx):
    """The synthetic traces of test_sql.py (mixed, switches, system calls,
    threads, wakeups, kernel stacks), each in a database of its own: sql's
    answers; between them every table but irq and softirq (real-trace's)
    has rows."""
    seen = set()
    for d in synthetic(ctx):
        db = ctx.db()
        ship(SERVERS[0].url, db, d)
        seen |= {t for t, n in same_as_sql(SERVERS[0], db, d).items() if n}
    check(seen >= set(TABLES) - {'irq', 'softirq'}, 'no rows of %s in any trace' %
          (set(TABLES) - seen))


@test
def ship_keeps_no_index(ctx):
    """ship reads each table of a set once: the stack index that stack
    and frame read is built (a trace with kernel stacks) but not kept in
    the sql cache directory, which stays empty; the rows are sql's."""
    d = ts.rich_stack_trace(ctx.path('stacks'))
    cache = ctx.path('cache')
    os.makedirs(cache)
    db = ctx.db()
    ship(SERVERS[0].url, db, d, env={'RINGTRACE_SQL_CACHE': cache})
    check(os.listdir(cache) == [], 'ship left %s in the cache' % os.listdir(cache))
    n = same_as_sql(SERVERS[0], db, d)
    check(n['stack'] > 300 and n['frame'] > 0, 'shipped rows: %s' % n)


@test
def chunk_sets_each_a_set(ctx):
    """One recording's three chunk sets shipped at once: three set_ids
    (uuid:seq-seq, ringtrace_sets' for the rows' set_key), host and
    boot_id from the manifests, and each table's
    count and aggregates the sum of sql's on each set alone."""
    s, db = SERVERS[0], ctx.db()
    d = td.seek_trace(ctx.path('rot'), files=3, packets=30)
    sets = td.chunk_sets(ctx, d, host='web3', boot='boot-7')
    check(len(sets) == 3, '%d sets' % len(sets))
    ship(s.url, db, *sets)
    want = {t: sum(sql_counts(x)[t] for x in sets) for t in ('raw', 'lost', 'thread')}
    got = counts(s, db)
    check({t: got[t] for t in want} == want and want['raw'] > 0,
          'counts %s, sql per set summed %s' % (got, want))
    # A row's set_id is ringtrace_sets' for its set_key.
    ids = ch_rows(s, 'SELECT DISTINCT set_id, host, boot_id FROM %s.raw ANY INNER JOIN '
                     '(SELECT set_key, any(set_id) AS set_id FROM %s.ringtrace_sets '
                     'GROUP BY set_key) USING set_key' % (db, db))
    seqs = []
    for x in sets:
        with open(os.path.join(x, 'manifest.json')) as f:
            seqs.append('%d-%d' % ((json.load(f)['sequence'],) * 2))
    check(len(ids) == 3 and all(i[1:] == ('web3', 'boot-7') for i in ids) and
          sorted(i[0].split(':')[1] for i in ids) == sorted(seqs),
          'sets %s, manifests %s' % (ids, seqs))
    q = AGGREGATES[0][1]
    w = {}
    for x in sets:
        add(w, sql_rows(x, q.format(t='raw')))
    g = add({}, ch_rows(s, q.format(t='%s.raw' % db)))
    check(g == w, 'events per name and CPU %s, sql %s' % (g, w))


@test
def clock_drift_per_host(ctx):
    """Each set's trace row carries its recording's clock: the metadata's
    offset (start), its manifest's (end: the set's close) or a trace
    directory's .ringtrace-clock.json, and the drift between them, as sql
    has them; a query over the fleet sees each host's uncertainty."""
    s, db = SERVERS[0], ctx.db()
    d = td.seek_trace(ctx.path('rot'), files=3, packets=30)
    sets = td.chunk_sets(ctx, d, host='web3', boot='boot-7')
    start = ts.metadata_offset(d)
    for k, delta in enumerate((40, -900, 2500)):
        path = os.path.join(sets[k], 'manifest.json')
        with open(path) as f:
            man = json.load(f)
        man['clock']['realtime_offset_ns'] = start + delta
        with open(path, 'w') as f:
            json.dump(man, f)
    plain = td.seek_trace(ctx.path('plain'), files=1, packets=10)
    pstart = ts.metadata_offset(plain)
    with open(os.path.join(plain, '.ringtrace-clock.json'), 'w') as f:
        json.dump({'format': 'ringtrace-clock', 'format_version': 1,
                   'end': {'monotonic_ns': 9, 'realtime_ns': pstart + 9 + 70000,
                           'boottime_ns': 9, 'realtime_offset_ns': pstart + 70000,
                           'boottime_offset_ns': 0}}, f)
    ship(s.url, db, *sets)
    ship(s.url, db, plain)
    q = ('SELECT wall_offset_ns, wall_offset_start_ns, wall_offset_end_ns, clock_drift_ns '
         'FROM {t}')
    want = sorted(sum((sql_rows(x, q.format(t='trace')) for x in sets + [plain]), []))
    got = ch_rows(s, q.format(t='%s.trace' % db))
    check(got == want and len(got) == 4, 'trace rows %s\n  sql %s' % (got, want))
    drift = [int(r[3]) for r in want]
    check(sorted(drift) == [-900, 40, 2500, 70000], 'drifts %s' % drift)
    got = ch_rows(s, 'SELECT host, max(abs(clock_drift_ns)) FROM %s.trace GROUP BY host' % db)
    host = ts.rows(plain, 'SELECT host FROM trace')[0]['host']
    want = sorted([('web3', '2500'), (host, '70000')])
    check(got == want, 'the drift per host %s, want %s' % (got, want))


@test
def hook_arguments_one_set(ctx):
    """A chunk set given as a hook program gets it, SETDIR and
    SETDIR/manifest.json: shipped once (one "rows shipped" line, the
    counts sql's of the set); with no operand, RINGTRACE_CHUNK_DIR's set."""
    s = SERVERS[0]
    d = td.seek_trace(ctx.path('rot'), files=2, packets=30)
    sets = td.chunk_sets(ctx, d, host='web4', boot='boot-8')
    db = ctx.db()
    r = ship(s.url, db, sets[0], os.path.join(sets[0], 'manifest.json'))
    check(r.stdout.count('rows shipped') == 1, 'stdout: %s' % r.stdout)
    check(counts(s, db) == sql_counts(sets[0]), 'counts %s, sql %s' %
          (counts(s, db), sql_counts(sets[0])))
    db = ctx.db()
    r = ship(s.url, db, env={'RINGTRACE_CHUNK_DIR': sets[1]})
    check(r.stdout.count('rows shipped') == 1 and sets[1] in r.stdout, 'stdout: %s' % r.stdout)
    check(counts(s, db) == sql_counts(sets[1]), 'counts %s, sql %s' %
          (counts(s, db), sql_counts(sets[1])))


@test
def shipped_twice_same_counts(ctx):
    """real-trace shipped twice, and a synthetic trace with it the second
    time: the same counts as once, "shipped before" said per table."""
    s, db = SERVERS[0], ctx.db()
    m = ts.mixed_trace(ctx.path('mixed'))
    ship(s.url, db, REAL_TRACE)
    once = counts(s, db)
    r = ship(s.url, db, REAL_TRACE, m)
    twice = counts(s, db)
    mc = sql_counts(m)
    check(twice == {t: once[t] + mc[t] for t in TABLES},
          'after the second ship %s, once %s + the new trace %s' % (twice, once, mc))
    check(r.stdout.count('shipped before') == len(TABLES), 'stdout: %s' % r.stdout)
    sets = s.query('SELECT count() FROM %s.ringtrace_sets' % db).strip()
    check(sets == str(2 * len(TABLES)), 'ringtrace_sets has %s rows' % sets)


def sent_summary(stderr):
    """ship's last stderr line, "N bytes sent (M before zstd|gzip)" or
    "N bytes sent (not compressed)": (N, M, how), M = N uncompressed."""
    m = re.findall(r'^ringtrace(?: ship)?: (\d+) bytes sent '
                   r'\((?:(\d+) before (lz4|zstd|gzip)|(not compressed))\)$', stderr, re.M)
    check(len(m) == 1, 'no single "N bytes sent (M before lz4|zstd|gzip)" line on stderr:\n%s'
          % stderr[-1500:])
    n, raw, how, plain = m[0]
    return int(n), int(raw or n), how or plain


def rowbinary_bytes(server, table):
    """The length of SELECT * FROM @table FORMAT RowBinary: every row's
    bytes as an INSERT of all columns sends them."""
    import urllib.request
    req = urllib.request.Request(server.url, method='POST',
                                 data=('SELECT * FROM %s FORMAT RowBinary' % table).encode())
    with urllib.request.urlopen(req, timeout=60) as r:
        return len(r.read())


@test
def bytes_sent_said(ctx):
    """ship's stderr ends with "N bytes sent (M before lz4)" (the default
    compression): M is the
    RowBinary of every row on the server (SELECT * ... FORMAT RowBinary of
    each table and of ringtrace_sets, the bytes an INSERT of all columns
    sends), 0 < N < M (the
    bodies compressed, several batches of RINGTRACE_SHIP_BATCH); shipped again,
    nothing is sent: 0 bytes (0 before zstd)."""
    s, db = SERVERS[0], ctx.db()
    r = ship(s.url, db, REAL_TRACE, env={'RINGTRACE_SHIP_BATCH': '65536'})
    sent, raw, how = sent_summary(r.stderr)
    check(how == 'lz4', 'the default compression is %s, not lz4' % how)
    check(r.stderr.count('rows sent') > 2, 'one batch only:\n%s' % r.stderr[-1500:])
    want = sum(rowbinary_bytes(s, '%s.%s' % (db, t)) for t in TABLES + ('ringtrace_sets',))
    check(raw == want, '%d bytes before gzip said, the rows on the server are %d' % (raw, want))
    check(0 < sent < raw, '%d bytes sent, %d before gzip' % (sent, raw))
    r = ship(s.url, db, REAL_TRACE)
    check(sent_summary(r.stderr) == (0, 0, 'lz4'), 'shipped again: %s' % r.stderr[-500:])


@test
def each_compression_same_rows(ctx):
    """--compress lz4 and zstd (ClickHouse's native compressed blocks,
    several to a POST), gzip and none, each into a database of its own:
    every table's rows, all columns, are the same row for row in the four
    and sql's answers; the bytes line says the compression, the RowBinary
    on the server before it, and fewer bytes sent for lz4, zstd and gzip,
    as many for none; --compress brotli is a usage error (exit 2) that
    sends nothing."""
    s = SERVERS[0]
    got = {}
    for how in ('lz4', 'zstd', 'gzip', 'none'):
        db = ctx.db()
        r = ship(s.url, db, REAL_TRACE, opts=('--compress', how))
        same_as_sql(s, db, REAL_TRACE)
        sent, raw, said = sent_summary(r.stderr)
        want = sum(rowbinary_bytes(s, '%s.%s' % (db, t)) for t in TABLES + ('ringtrace_sets',))
        check(raw == want, '%s: %d bytes before it said, the rows on the server are %d'
              % (how, raw, want))
        if how == 'none':
            check(said == 'not compressed' and sent == raw, 'none: %s' % r.stderr[-300:])
        else:
            check(said == how and 0 < sent < raw, '%s: %s' % (how, r.stderr[-300:]))
        got[how] = {t: ch_rows(s, 'SELECT * FROM %s.%s' % (db, t)) for t in TABLES}
    # raw went in one POST (4 MiB batches) of several native blocks (256 KiB each).
    check(rowbinary_bytes(s, '%s.raw' % db) > 512 << 10, 'real-trace raw below 512 KiB')
    for how in ('lz4', 'gzip', 'none'):
        for t in TABLES:
            check(got[how][t] == got['zstd'][t], '%s: %s differs from zstd\'s: %d rows, %d'
                  % (t, how, len(got[how][t]), len(got['zstd'][t])))
    db = ctx.db()
    r = td.rt_env({}, 'ship', '--clickhouse', s.url, '--database', db, '--compress', 'brotli',
                  REAL_TRACE, asan=False)
    check(r.returncode == 2 and '--compress brotli' in r.stderr,
          'brotli: exit %d: %s' % (r.returncode, r.stderr[-300:]))
    check(s.query("SELECT count() FROM system.databases WHERE name = '%s'" % db).strip() == '0',
          'brotli made the database')


def zstd_frames(d):
    """The zstd frames of @d's stream files, as `zstd -lv` counts them."""
    n = 0
    for f in sorted(os.listdir(d)):
        if f.endswith('.zst') and not f.startswith('.'):    # not .ringtrace-ksyms.zst
            out = subprocess.run(['zstd', '-lv', os.path.join(d, f)], capture_output=True,
                                 text=True, check=True).stdout
            n += int(re.search(r'^# Zstandard Frames: (\d+)$', out, re.M).group(1))
    return n


def frames_said(stderr, d):
    """ship's "DIR: N packed frames decoded, M taken from the cache (K bytes
    kept)" line for @d: (N, M, K)."""
    m = re.findall(r'^ringtrace(?: ship)?: %s: (\d+) packed frames decoded, (\d+) taken '
                   r'from the cache \((\d+) bytes kept\)$' % re.escape(d), stderr, re.M)
    check(len(m) == 1, 'no single frames line for %s on stderr:\n%s' % (d, stderr[-1500:]))
    return tuple(int(x) for x in m[0])


def stacks_zst(ctx):
    """test_sql.py's trace with kernel stacks, its stream a chunk of one
    zstd frame (zstd(1): the content checksum a packed frame has)."""
    d = ts.rich_stack_trace(ctx.path('stacks-zst'))
    subprocess.run(['zstd', '-q', '--rm', os.path.join(d, 'cpu0'), '-o',
                    os.path.join(d, 'cpu0-000001.zst')], check=True)
    return d


@test
def passes_share_frames(ctx):
    """The passes ship still makes over a trace with stacks (the shared
    read, sample's, the stack index's) share what the first decoded: with
    the default --cache its zstd frame is decoded once (zstd -lv's count),
    every other read of it is taken from the cache, and the rows are
    sql's.  With --cache 1 (a byte: less than any frame) nothing is kept,
    each pass decodes the frame again (as many reads as with the cache),
    and every table's rows are the same, row for row."""
    s = SERVERS[0]
    d = stacks_zst(ctx)
    frames = zstd_frames(d)
    db = ctx.db()
    r = ship(s.url, db, d)
    same_as_sql(s, db, d)
    decoded, taken, kept = frames_said(r.stderr, d)
    check(decoded == frames, '%d frames decoded, the trace has %d' % (decoded, frames))
    check(taken > 0 and taken % frames == 0 and kept > 0,
          '%d frames taken from the cache (%d bytes kept), %d in the trace'
          % (taken, kept, frames))
    db2 = ctx.db()
    r = ship(s.url, db2, d, opts=('--cache', '1'))
    same_as_sql(s, db2, d)
    check(frames_said(r.stderr, d) == (decoded + taken, 0, 0),
          'a cache of 1 byte: %s, with the default %s'
          % (frames_said(r.stderr, d), (decoded, taken, kept)))
    for t in TABLES:
        a = ch_rows(s, 'SELECT * FROM %s.%s' % (db, t))
        b = ch_rows(s, 'SELECT * FROM %s.%s' % (db2, t))
        check(a == b, '%s: %d rows with the cache, %d without' % (t, len(a), len(b)))


@test
def passes_counted(ctx):
    """ship reads real-trace (system calls, wakeups, interrupts, losses, no
    stacks) in one pass, not ten: one read feeds raw, thread_state's walk
    (which hands sched_slice its spans on a CPU), the queues of syscall,
    wakeup, irq and softirq, the thread index (thread, then process from
    it) and lost.  sample, stack and frame read nothing: that read found
    no event a stack pair is made of.  Counted as the frames read
    (decoded, or taken from the cache): zstd -lv's count decoded, and the
    same taken from the cache once more by trace's span (its first and
    last item: no payload decoded).  The rows are sql's."""
    s, db = SERVERS[0], ctx.db()
    frames = zstd_frames(REAL_TRACE)
    r = ship(s.url, db, REAL_TRACE)
    same_as_sql(s, db, REAL_TRACE)
    decoded, taken, _ = frames_said(r.stderr, REAL_TRACE)
    check(decoded == frames and taken == frames,
          '%d frames read (%d decoded, %d from the cache): %g passes over the %d '
          'frames, not one decoding and trace\'s span from the cache' %
          (decoded + taken, decoded, taken, (decoded + taken) / frames, frames))


@test
def killed_mid_ship_then_retry(ctx):
    """A ship SIGKILLed after its second batch of raw (batches of 2 KiB):
    the server holds some raw rows and no ringtrace_sets row for raw; the
    same ship again ends with every table's count and aggregates sql's."""
    s, db = SERVERS[0], ctx.db()
    p = subprocess.Popen([td.RINGTRACE, 'ship', '--clickhouse', s.url, '--database', db,
                          REAL_TRACE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=dict(os.environ, RINGTRACE_SHIP_BATCH='2048'), text=True)
    sent = 0
    for line in p.stderr:
        if ': raw: ' in line and 'rows sent' in line:
            sent += 1
            if sent == 2:
                p.send_signal(signal.SIGKILL)
                break
    p.wait()
    check(p.returncode == -signal.SIGKILL, 'ship ended by itself (exit %d) after %d '
          'batches' % (p.returncode, sent))
    total = sql_counts(REAL_TRACE)['raw']
    part = int(s.query('SELECT count() FROM %s.raw' % db))
    done = s.query("SELECT count() FROM %s.ringtrace_sets WHERE table = 'raw'" % db).strip()
    check(0 < part < total and done == '0', 'after the kill: %d of %d raw rows, %s '
          'ringtrace_sets rows: not a partial ship' % (part, total, done))
    r = ship(s.url, db, REAL_TRACE)
    same_as_sql(s, db, REAL_TRACE)
    check('raw: %d rows of an unfinished ship: deleted first' % part in r.stderr,
          'stderr: %s' % r.stderr)


@test
def server_killed_mid_ship_then_retry(ctx):
    """A server of its own SIGKILLed after the ship's second batch of raw:
    the ship exits 1 saying so (libcurl's reason, "run the same ship
    again"); the server restarted on its data holds some raw rows and no
    ringtrace_sets row for raw; the same ship again: every count and
    aggregate sql's."""
    c = clickhouse.Server(os.path.join(ctx.tmp, 'server'))
    c.start()
    try:
        db = ctx.db()
        p = subprocess.Popen([td.RINGTRACE, 'ship', '--clickhouse', c.url, '--database', db,
                              REAL_TRACE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, RINGTRACE_SHIP_BATCH='2048'), text=True)
        sent, err = 0, ''
        for line in p.stderr:
            err += line
            if ': raw: ' in line and 'rows sent' in line:
                sent += 1
                if sent == 2:
                    c.stop()
        err += p.stderr.read()
        p.wait()
        check(p.returncode == 1 and c.url in err and 'run the same ship again' in err,
              'ship after the server died: exit %d, %d batches:\n%s' %
              (p.returncode, sent, err[-1500:]))
        c.start()
        total = sql_counts(REAL_TRACE)['raw']
        part = int(c.query('SELECT count() FROM %s.raw' % db))
        done = c.query("SELECT count() FROM %s.ringtrace_sets WHERE table = 'raw'"
                       % db).strip()
        check(0 < part < total and done == '0', 'after the kill: %d of %d raw rows, %s '
              'ringtrace_sets rows: not a partial ship' % (part, total, done))
        ship(c.url, db, REAL_TRACE)
        same_as_sql(c, db, REAL_TRACE)
    finally:
        c.stop()


@test
def damaged_trace_exit_3(ctx):
    """real-trace with one packet header damaged (test_sql's copy): exit
    3, the damage said on stderr, and what is shipped is sql's answer on
    the same copy, a lost row of kind damaged among it."""
    s, db = SERVERS[0], ctx.db()
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, off = td.damaged_copy(ts.ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    r = ship(s.url, db, bad, status=3)
    check(re.search(r'damaged: .*cpu0.*offset %d' % off, r.stderr), 'stderr: %s' % r.stderr)
    same_as_sql(s, db, bad, status=3)
    n = s.query("SELECT count() FROM %s.lost WHERE kind = 'damaged'" % db).strip()
    check(n == '1', '%s damaged rows' % n)


def set_counts(server, db, key):
    """Every table's count of the rows of set_key @key in @db."""
    return {t: int(server.query('SELECT count() FROM %s.%s WHERE set_key = %d'
                                % (db, t, key)) or 0) for t in TABLES}


@test
def strict_damage_next_dir_shipped(ctx):
    """--strict, two directories: real-trace with a damaged packet header
    (damaged_trace_exit_3's copy), then a synthetic trace.  The first
    cannot be read: said, naming the table whose read failed and the
    damaged stream, not "run the same ship again" (it would fail the
    same); the second is shipped whole (every table's count sql's, its
    ringtrace_sets rows the only ones); exit 1."""
    s, db = SERVERS[0], ctx.db()
    d = os.path.join(ctx.tmp, 'real')
    r = td.rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack: %s' % r.stderr)
    bad, _, _ = td.damaged_copy(ts.ctx_copy(ctx), d, 7, 'end', lambda v: v ^ 1 << 40)
    good = ts.mixed_trace(ctx.path('mixed'))
    r = ship(s.url, db, bad, good, status=1, opts=('--strict',))
    check('run the same ship again' not in r.stderr and
          re.search(r'^ringtrace(?: ship)?: %s: raw and the tables that share its read: '
                    r'.*cpu0' % re.escape(bad), r.stderr, re.M),
          'stderr: %s' % r.stderr[-1500:])
    uuid = ts.rows(good, 'SELECT uuid FROM trace')[0]['uuid']
    want = sql_counts(good)
    got = set_counts(s, db, set_key(uuid))
    check(got == want and want['raw'] > 0, 'the second directory: %s on the server, '
          'sql %s' % (got, want))
    sets = ch_rows(s, 'SELECT set_id, count() FROM %s.ringtrace_sets GROUP BY set_id' % db)
    check(sets == [(uuid, str(len(TABLES)))], 'ringtrace_sets: %s' % sets)
    check('%s: set %s: %d rows shipped' % (good, uuid, sum(want.values())) in r.stdout,
          'stdout: %s' % r.stdout)


@test
def directory_of_two_recordings_refused(ctx):
    """A directory holding the chunk sets of two recordings (two hosts'):
    shipped as one, every row would carry the first's host and set_key.
    Refused in one line naming it, nothing of it shipped, the next
    directory shipped (exit 1); each set's directory ships alone."""
    s, db = SERVERS[0], ctx.db()
    d = td.seek_trace(ctx.path('rec'), files=2, packets=10)
    both = ctx.path('both')
    os.makedirs(both)
    for host in ('web3', 'web4'):
        for x in td.chunk_sets(ctx, d, host=host):
            shutil.move(x, os.path.join(both, os.path.basename(x)))
    good = ts.mixed_trace(ctx.path('mixed'))
    r = ship(s.url, db, both, good, status=1)
    lines = [l for l in r.stderr.splitlines() if both in l]
    check(len(lines) == 1 and re.search(r'%s: holds 2 recordings' % re.escape(both), lines[0]),
          'stderr: %s' % r.stderr[-1500:])
    want = sql_counts(good)
    check(counts(s, db) == want, 'on the server %s, the second directory\'s %s' %
          (counts(s, db), want))
    one = sorted(os.path.join(both, x) for x in os.listdir(both))[0]
    ship(s.url, ctx.db(), one)


@test
def refused_credentials(ctx):
    """A wrong password (in the URL, and with --user/--password): exit 1,
    ClickHouse's answer said, the password never printed, nothing on the
    server; the right one ships."""
    s, db = SERVERS[0], ctx.db()
    for url, opts in ((s.url.replace('//', '//shipper:hunter2@'), ()),
                      (s.url, ('--user', 'shipper', '--password', 'hunter2'))):
        r = ship(url, db, REAL_TRACE, status=1, opts=opts)
        check('Wrong password for user shipper' in r.stderr and 'HTTP 401' in r.stderr
              and 'hunter2' not in r.stderr + r.stdout, 'stderr: %s' % r.stderr)
    there = s.query("SELECT count() FROM system.databases WHERE name = '%s'" % db).strip()
    check(there == '0', 'a refused ship made the database')
    ship(s.url, db, REAL_TRACE, opts=('--user', 'shipper', '--password', 'secret'))
    check(counts(s, db)['raw'] == sql_counts(REAL_TRACE)['raw'], 'the right password')


@test
def server_down(ctx):
    """A port nobody listens on: exit 1, libcurl's reason with the URL."""
    port = clickhouse.free_port()
    r = ship('http://127.0.0.1:%d/' % port, 'x', REAL_TRACE, status=1)
    check("Couldn't connect to server" in r.stderr and str(port) in r.stderr,
          'stderr: %s' % r.stderr)


@test
def table_of_another_shape(ctx):
    """raw made beforehand with other columns: exit 1, the column that
    differs named, no rows and no ringtrace_sets row for raw; the tables
    before it (none) and after it untouched."""
    s, db = SERVERS[0], ctx.db()
    s.query('CREATE DATABASE %s' % db)
    s.query('CREATE TABLE %s.raw (host String, boot_id String, set_key UInt64, day Date, '
            'wall_ts UInt64, ts Int64) ENGINE = MergeTree() PARTITION BY day '
            'ORDER BY (host, wall_ts)' % db)
    r = ship(s.url, db, REAL_TRACE, status=1)
    check('%s.raw on the server has another shape: column 6 is ts Int64, ship writes '
          'ts Nullable(Int64)' % db in r.stderr, 'stderr: %s' % r.stderr)
    n = s.query('SELECT (SELECT count() FROM %s.raw) + (SELECT count() FROM '
                '%s.ringtrace_sets)' % (db, db)).strip()
    check(n == '0', '%s rows after a refused ship' % n)


# The tables of ship before set_key: a set_id String in each row (and no
# set_key in ringtrace_sets).
OLD_COMMON = 'host String, boot_id String, set_id String, day Date, wall_ts UInt64'
OLD_SETS = ('set_id String, table String, rows UInt64, host String, boot_id String, '
            'dir String, shipped_at DateTime')


@test
def older_tables_refused(ctx):
    """A database whose tables an older ship made (rows with a set_id
    String, ringtrace_sets without set_key), holding a row: exit 1, the
    message says the table was made by an older ringtrace ship and is not
    migrated, naming the column; the old row is still there, nothing
    added.  Once for ringtrace_sets of the old shape, once for raw of
    the old shape under a ringtrace_sets of the new."""
    s = SERVERS[0]
    olds = (('ringtrace_sets', OLD_SETS, 'ORDER BY (set_id, table)',
             "('x', 'raw', 1, 'h', '', '/d', now())", 'column 2 is table String'),
            ('raw', OLD_COMMON + ', ts Nullable(Int64)',
             'PARTITION BY day ORDER BY (host, wall_ts)', "('h', '', 'x', today(), 1, 1)",
             'column 3 is set_id String'))
    for table, columns, order, row, said in olds:
        db = ctx.db()
        s.query('CREATE DATABASE %s' % db)
        s.query('CREATE TABLE %s.%s (%s) ENGINE = MergeTree() %s' % (db, table, columns, order))
        s.query('INSERT INTO %s.%s VALUES %s' % (db, table, row))
        r = ship(s.url, db, REAL_TRACE, status=1)
        check('%s.%s on the server was made by an older ringtrace ship (%s, where set_key '
              'UInt64 is now): not migrated' % (db, table, said) in r.stderr,
              'stderr: %s' % r.stderr)
        n = s.query('SELECT (SELECT count() FROM %s.%s) * 10 + (SELECT count() FROM '
                    '%s.ringtrace_sets)' % (db, table, db)).strip()
        check(n == ('11' if table == 'ringtrace_sets' else '10'),
              '%s and ringtrace_sets: %s after a refused ship (10 x rows + rows)' % (table, n))


@test
def two_shards_distributed(ctx):
    """real-trace into shard 1, a synthetic mix of another host (system
    calls, wakeups, interrupts) into shard 2 (their own servers),
    Distributed tables over both: events per host and name, the top system
    calls across hosts and the p99 wakeup latency per host are what sql
    answers over the two traces."""
    s1, s2 = SERVERS
    db = ctx.db()
    m = ts.sched_mix_trace(ctx.path('mix'))
    ship(s1.url, db, REAL_TRACE)
    ship(s2.url, db, m)
    every = [REAL_TRACE, m]
    for t in ('raw', 'syscall', 'wakeup'):
        s1.query('CREATE TABLE %s.%s_fleet AS %s.%s ENGINE = Distributed(fleet, %s, %s, '
                 'cityHash64(host))' % (db, t, db, t, db, t))
    q = 'SELECT host, name, count(*) FROM {t} GROUP BY host, name'
    g = ch_rows(s1, q.format(t='%s.raw_fleet' % db))
    w = sorted(sql_rows(every, q.format(t='raw')))
    check(g == w and len({r[0] for r in g}) == 2, 'fleet %s\n  sql %s' % (g, w))
    # The top system calls across hosts, in order.
    q = ('SELECT name, count(*), sum(dur) FROM {t} WHERE dur IS NOT NULL GROUP BY name '
         'ORDER BY count(*) DESC, name LIMIT 8')
    g = [tuple(r) for r in s1.rows(q.format(t='%s.syscall_fleet' % db))]
    w = [tuple(norm(v) for v in r.values()) for r in ts.rows(every, q.format(t='syscall'))]
    check(g == w and len(g) == 8, 'top system calls %s\n  sql %s' % (g, w))
    # p99 wakeup latency per host, report's rank: the ceil(0.99 n)-th smallest.
    g = ch_rows(s1, 'SELECT host, arrayElement(arraySort(groupArray(latency)), '
                    'toUInt64(ceil(0.99 * count()))) FROM %s.wakeup_fleet '
                    'WHERE latency IS NOT NULL GROUP BY host' % db)
    lat = {}
    for r in ts.rows(every, 'SELECT host, latency FROM wakeup WHERE latency IS NOT NULL'):
        lat.setdefault(r['host'], []).append(r['latency'])
    w = sorted((h, str(sorted(v)[-(-99 * len(v) // 100) - 1])) for h, v in lat.items())
    check(g == w and len(w) == 2, 'p99 wakeup latency per host %s\n  sql %s' % (g, w))


def ch_sql(server, db, *args, status=0):
    r = td.rt_env({}, 'sql', '--clickhouse', server.url, '--database', db, *args, asan=False)
    check(r.returncode == status, 'sql --clickhouse %s: exit %d, expected %d:\n%s%s' %
          (' '.join(args), r.returncode, status, r.stdout[-1500:], r.stderr[-1500:]))
    return r


@test
def sql_clickhouse_prints_as_sql(ctx):
    """sql --clickhouse: a query on the shipped tables printed as sql
    prints the same query on the trace, byte for byte, as a table, CSV
    and JSON (integers, text, NULLs); two statements, two tables."""
    s, db = SERVERS[0], ctx.db()
    ship(s.url, db, REAL_TRACE)
    for q in ('SELECT name, cpu, count(*) AS count FROM raw GROUP BY name, cpu '
              'ORDER BY name, cpu',
              'SELECT tid, name, cgroup, upid, is_main_thread FROM thread ORDER BY tid, name'):
        for fmt in ((), ('--csv',), ('--json',)):
            want = td.rt('sql', *fmt, REAL_TRACE, q)
            got = ch_sql(s, db, *(fmt + (q.replace('count(*)', 'count()'),)))
            check(want.returncode == 0 and got.stdout == want.stdout and want.stdout.count('\n') > 5,
                  '%s %s:\n%s\n  sql:\n%s' % (fmt, q, got.stdout[:800], want.stdout[:800]))
    got = ch_sql(s, db, "SELECT 'a\tb' AS t, 1.5 AS f; SELECT NULL AS z")
    check(got.stdout == 't    f\n---  ---\na\tb  1.5\n\nz\n----\nNULL\n',
          'two statements: %r' % got.stdout)


@test
def sql_clickhouse_errors(ctx):
    """A statement the server refuses: its message, exit 1; a server
    down: libcurl's reason, exit 1; a directory given: usage, exit 2; a
    FORMAT of the statement's own: said, nothing printed, exit 1."""
    s, db = SERVERS[0], ctx.db()
    r = ch_sql(s, 'default', 'SELECT nope FROM system.one', status=1)
    check('Unknown identifier: nope' in r.stderr and 'HTTP' in r.stderr, 'stderr: %s' % r.stderr)
    port = clickhouse.free_port()
    r = td.rt_env({}, 'sql', '--clickhouse', 'http://127.0.0.1:%d/' % port, 'SELECT 1',
                  asan=False)
    check(r.returncode == 1 and "Couldn't connect to server" in r.stderr, 'down: %d %s' %
          (r.returncode, r.stderr))
    r = ch_sql(s, db, REAL_TRACE, 'SELECT 1', status=2)
    for q in ('SELECT 1 AS a, 2 AS b FORMAT JSON', 'SELECT 1 FORMAT TSV'):
        r = ch_sql(s, 'default', q, status=1)
        check('not TabSeparatedWithNamesAndTypes (a FORMAT clause' in r.stderr and not r.stdout,
              '%s: %s %s' % (q, r.stdout, r.stderr))


def stat_sections(text):
    """--stat's output by query name: its lines."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r'-- (\w+): ', line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name and line:
            out[name].append(line)
    return out


@test
def sql_clickhouse_stat_equals_sql(ctx):
    """sql --clickhouse --stat on a trace shipped alone equals sql --stat
    on the trace, query by query, to the last digit (the us figures are
    fixed()'s strings): losses, system calls by count and by total, threads
    by on-CPU time, wakeup percentiles exactly; events per name and CPU the
    same rows (ClickHouse orders them by name: the metadata's order is not
    shipped).  real-trace, and synthetic traces with system calls and
    wakeups; top_functions has no ClickHouse version."""
    s = SERVERS[0]
    traces = [REAL_TRACE, ts.syscall_trace(ctx.path('sys')),
              ts.wakeup_trace(ctx.path('wk'), [5000, 20000, 7000, 90000, 1005, 2015, 3025])]
    seen = set()
    for d in traces:
        db = ctx.db()
        ship(s.url, db, d)
        want = stat_sections(td.rt('sql', '--stat', d).stdout)
        got = stat_sections(ch_sql(s, db, '--stat').stdout)
        check(set(got) == set(want) - {'top_functions'}, 'sections %s, sql %s' %
              (sorted(got), sorted(want)))
        for name, lines in got.items():
            w = want[name]
            if name == 'events':
                lines, w = lines[:2] + sorted(lines[2:]), w[:2] + sorted(w[2:])
            check(lines == w, '%s of %s:\n%s\n  sql:\n%s' % (name, d, '\n'.join(lines[:30]),
                                                            '\n'.join(w[:30])))
            if len(w) > 2:
                seen.add(name)
        j = ch_sql(s, db, '--json', '-q', 'syscalls_by_total').stdout
        check(j == td.rt('sql', '--json', '-q', 'syscalls_by_total', d).stdout, 'json: %s' % j)
    check(seen >= set(got), 'queries with no rows in any trace: %s' % (set(got) - seen))


ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
RT_HANDOFF = os.path.join(ROOT, 'daemon', 'tests', 'rt-handoff')


@test
def on_chunk_hook_retried(ctx):
    """ringtraced's hand-off (daemon/tests/rt-handoff ship: the daemon's own
    code, no module) with --on-chunk 'ringtrace ship --clickhouse URL':
    three sets of real-trace's chunks made while the server is down, each
    hook exits 1 and the set stays unmarked; the next start hands them over
    again and ships them; a third hands nothing.  On the server: each
    table's count is the sum of sql's on each set, three set_ids, and
    ringtrace_sets says every table of every set once."""
    s, db = SERVERS[0], ctx.db()
    r = subprocess.run(['make', '-s', '-C', os.path.join(ROOT, 'daemon'), 'tests/rt-handoff'],
                       capture_output=True, text=True)
    check(r.returncode == 0, 'make rt-handoff: %s' % r.stderr)
    out = os.path.join(ctx.tmp, 'traces')
    r = subprocess.run([RT_HANDOFF, 'ship'], capture_output=True, text=True, env=dict(
        os.environ, RT_SHIP_CLI=td.RINGTRACE, RT_SHIP_SRC=REAL_TRACE, RT_SHIP_OUT=out,
        RT_SHIP_DOWN_URL='http://127.0.0.1:%d/' % clickhouse.free_port(),
        RT_SHIP_URL=s.url))
    check(r.returncode == 0 and 'handoff: 6 passed, 0 failed' in r.stdout,
          'rt-handoff ship:\n%s\n%s' % ('\n'.join(l[:300] for l in r.stdout.splitlines()
                                                 if not l.startswith('#   ')),
                                       r.stderr[-1000:]))
    sets = sorted(os.path.join(out, 't1', x) for x in os.listdir(os.path.join(out, 't1'))
                  if x.startswith('chunk-'))
    check(len(sets) == 3, 'sets %s' % sets)
    want = {t: sum(sql_counts(x)[t] for x in sets) for t in TABLES}
    got = counts(s, 'ringtrace')
    check(got == want and want['raw'] > 0, 'on the server %s, sql per set summed %s' % (got, want))
    ids = s.rows('SELECT set_id, count() FROM ringtrace.ringtrace_sets GROUP BY set_id '
                 'ORDER BY set_id')
    check(len(ids) == 3 and all(int(n) == len(TABLES) for _, n in ids), 'ringtrace_sets %s' % ids)


def main():
    args = td.suite_args(__doc__, 'RT_SHIP_BIN')
    # sql's answers compared keep no index in the user's ~/.cache.
    os.environ['RINGTRACE_SQL_CACHE'] = ''
    if td.missing('ship', [clickhouse.BINARY], 'tools/install-deps installs clickhouse-server'):
        return 1
    root = tempfile.mkdtemp(prefix='rt-clickhouse-')
    try:
        a = clickhouse.Server(os.path.join(root, 'a'))
        b = clickhouse.Server(os.path.join(root, 'b'))
        a.shards = [a, b]
        SERVERS.extend((a, b))
        for s in SERVERS:
            s.start()
        return td.run_suite('ship', TESTS, lambda tmp: Ctx(tmp), args)
    except clickhouse.Error as e:
        print('ship: %s' % e)
        print('ship: 0 passed, 1 failed')
        return 1
    finally:
        for s in SERVERS:
            s.stop()
        if not args.keep:
            subprocess.run(['rm', '-rf', root])


if __name__ == '__main__':
    sys.exit(main())
