#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of the trace decoder and the ringtrace CLI (no kernel needed).

Synthetic traces from gentrace.py are read by `ringtrace` and compared with
what the generator says they hold, and with what babeltrace2 reads from the
same files (or from `ringtrace unpack` output).  Corrupt traces must give a
clean error; random corruption must never crash the ASan/UBSan build.

Usage: test_decoder.py [--fuzz N] [-k SUBSTRING] [-v]
Last line: `decoder: N passed, M failed`.
"""

import argparse
import json
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS)
RINGTRACE = os.path.join(TOOLS, 'ringtrace')
RINGTRACE_ASAN = os.path.join(TOOLS, 'ringtrace-asan')
GENTRACE = os.path.join(HERE, 'gentrace.py')
HEADER = struct.Struct('<I16sIQQQQQQQII')
OFF = {'magic': 0, 'uuid': 4, 'stream_id': 20, 'instance': 24, 'begin': 32,
       'end': 40, 'content': 48, 'size': 56, 'seq': 64, 'discarded': 72,
       'cpu': 80, 'events': 84}

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors='replace', **kw)


class Ctx:
    def __init__(self, tmp, args):
        self.tmp = tmp
        self.args = args
        self.n = 0

    def gen(self, *opts, events=400, cpus=3, subbuf=1024, seed=None):
        """Generates a trace; returns (dir, expect dir)."""
        self.n += 1
        d = os.path.join(self.tmp, 't%03d' % self.n)
        e = d + '.expect'
        args = [sys.executable, GENTRACE, d, '--expect-dir', e,
                '--events', str(events), '--cpus', str(cpus),
                '--subbuf', str(subbuf), '--seed', str(seed or self.n)]
        r = run(args + list(opts))
        check(r.returncode == 0, 'gentrace failed: ' + r.stderr)
        return d, e

    def copy(self, d):
        self.n += 1
        n = os.path.join(self.tmp, 'c%03d' % self.n)
        shutil.copytree(d, n)
        return n


def rt(*args, asan=False):
    r = run([RINGTRACE_ASAN if asan else RINGTRACE] + [str(a) for a in args])
    # Messages name the command ("ringtrace report: ..."); the checks
    # compare what follows.
    r.stderr = re.sub(r'^ringtrace [a-z]+: ', 'ringtrace: ', r.stderr,
                      flags=re.M)
    return r


def expected(e):
    with open(os.path.join(e, 'expected.txt')) as f:
        lines = f.read().splitlines()
    with open(os.path.join(e, 'expected-summary.txt')) as f:
        summary = f.read().splitlines()
    with open(os.path.join(e, 'expected.json')) as f:
        info = json.load(f)
    return lines, summary, info


def report_ok(d, e, *extra, status=0):
    """`ringtrace report` prints exactly the expected lines and summary
    (and exits with @status: 3 when it read past damage)."""
    r = rt('report', *extra, d, asan=True)
    check(r.returncode == status, 'report exit %d: %s' % (r.returncode, r.stderr[-2000:]))
    check('runtime error' not in r.stderr, 'UBSan: ' + r.stderr)
    out = r.stdout.splitlines()
    lines, summary, info = expected(e)
    got = [l for l in out if l.startswith('[')]
    if got != lines:
        for i, (a, b) in enumerate(zip(got, lines)):
            if a != b:
                raise Fail('report line %d:\n  got      %s\n  expected %s' % (i, a, b))
        raise Fail('report has %d event lines, expected %d' % (len(got), len(lines)))
    got_sum = [l for l in out if re.match(r'cpu\d+: packets=', l)]
    check(got_sum == summary, 'summary differs:\n%s\nexpected\n%s' %
          ('\n'.join(got_sum), '\n'.join(summary)))
    trunc = {l.split(':')[0] for l in out if ': truncated: ' in l}
    want = {c for c, v in info['cpus'].items() if v['truncated']}
    check(trunc == want, 'truncation notes for %s, expected %s' %
          (sorted(trunc), sorted(want)))
    return r


# ---- babeltrace2 -------------------------------------------------------------

BT_EVENT = re.compile(r'^\[(\d+)\] (?:\S+ )?(\w+): \{ cpu_id = (\d+)[,} ]')
BT_WARN = re.compile(r'stream "[^"]*/cpu(\d+)"')


def bt2(d, *opts):
    r = run(['babeltrace2', '--clock-cycles', '--no-delta'] + list(opts) + [d])
    check(r.returncode == 0, 'babeltrace2 failed on %s: %s' %
          (d, r.stderr[-2000:]))
    events = []
    for l in r.stdout.splitlines():
        m = BT_EVENT.match(l)
        check(m, 'unexpected babeltrace2 line: ' + l)
        events.append((int(m.group(1)), int(m.group(3)), m.group(2)))
    lost = {}
    for l in r.stderr.splitlines():
        m = BT_WARN.search(l)
        if not m or not l.startswith('WARNING'):
            continue
        c = lost.setdefault(int(m.group(1)), {'events': 0, 'may': 0, 'packets': 0})
        m2 = re.search(r'Tracer discarded (\d+) events?', l)
        m3 = re.search(r'Tracer discarded (\d+) packets?', l)
        if m2:
            c['events'] += int(m2.group(1))
        elif m3:
            c['packets'] += int(m3.group(1))
        elif 'may have discarded events' in l:
            c['may'] += 1
        else:
            raise Fail('unexpected babeltrace2 warning: ' + l)
    return events, lost


def parse_ts(s):
    sec, ns = s.strip('[]').split('.')
    return int(sec) * 1000000000 + int(ns)


def bt2_agrees(d, e):
    """babeltrace2 sees the same events, in the same order, at the same
    times, and the same losses as the generator (and so as ringtrace)."""
    events, lost = bt2(d)
    lines, _, info = expected(e)
    want = []
    for l in lines:
        if ' -- lost ' in l:
            continue
        ts, cpu, _, name = l.split(' ')[:4]
        want.append((parse_ts(ts), int(cpu[3:]), name.rstrip(':')))
    check(len(events) == len(want), 'babeltrace2 read %d events, expected %d' %
          (len(events), len(want)))
    for i, (a, b) in enumerate(zip(events, want)):
        check(a == b, 'babeltrace2 event %d is %s, expected %s' % (i, a, b))
    for cpu, v in info['cpus'].items():
        c = lost.get(int(cpu[3:]), {'events': 0, 'may': 0, 'packets': 0})
        steps = v['discard_steps']
        # babeltrace2 cannot count what was lost before the first packet.
        check(c['events'] == sum(steps[1:]),
              '%s: babeltrace2 reports %d discarded events, expected %d' %
              (cpu, c['events'], sum(steps[1:])))
        check(c['may'] == (1 if steps and steps[0] else 0),
              '%s: babeltrace2 "may have discarded" %d times' % (cpu, c['may']))
        check(c['packets'] == v['lost_packets'],
              '%s: babeltrace2 reports %d discarded packets, expected %d' %
              (cpu, c['packets'], v['lost_packets']))
    return len(events)


# ---- hand-made traces --------------------------------------------------------

sys.path.insert(0, HERE)
import gentrace  # noqa: E402  (its metadata() writes module/ctf.c's TSDL)
import perfetto_schema  # noqa: E402
import perfetto_stacks  # noqa: E402

SCHED_SWITCH = [('utf8_t', 'prev_comm', 16), ('int32_t', 'prev_tid', None),
                ('int32_t', 'prev_prio', None), ('int64_t', 'prev_state', None),
                ('utf8_t', 'next_comm', 16), ('int32_t', 'next_tid', None),
                ('int32_t', 'next_prio', None)]


def make_packet(uuid, cpu, seq, events, begin=None, untimed=None):
    """One packet (packet_size == content_size) of EVENTS, each
    (time, id, payload), with extended headers, but those of id UNTIMED:
    untimed (gentrace.tsdl_stream())."""
    body = b''.join((struct.pack('<I', eid | eid << 5) if eid == untimed else
                     struct.pack('<IQ', 31 | eid << 5, ts)) + payload
                    for ts, eid, payload in events)
    size = HEADER.size + len(body)
    begin = events[0][0] if begin is None else begin
    return HEADER.pack(0xC1FC1FC1, uuid, 0, cpu, begin, events[-1][0],
                       size * 8, size * 8, seq, 0, cpu, len(events)) + body


def write_trace(d, events, packets, cpu=0, untimed=None):
    """A trace directory of one CPU: gentrace's metadata of EVENTS (its
    EVENTS list format) and a stream of PACKETS (lists of events), the
    records of id UNTIMED untimed."""
    uuid = bytes(range(16))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(gentrace.metadata(uuid, 1700000000, 0, events, untimed))
    with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
        for seq, p in enumerate(packets):
            f.write(make_packet(uuid, cpu, seq, p, untimed=untimed))
    return d


def clean_run(r, what):
    """No sanitizer report, and an exit status a reader may give."""
    check('Sanitizer' not in r.stderr and 'runtime error' not in r.stderr,
          '%s: sanitizer:\n%s' % (what, r.stderr[-3000:]))
    check(r.returncode in (0, 1, 3), '%s: exit %d: %s' % (what, r.returncode,
                                                          r.stderr[-1000:]))



# zstd frames by hand: raw blocks and a content checksum, so that a test
# knows which decompressed byte a flipped byte is (RFC 8878).
XXH_P = (11400714785074694791, 14029467366897019727, 1609587929392839161,
         9650029242287828579, 2870177450012600261)
M64 = (1 << 64) - 1


def xxh64(data):
    """XXH64 with seed 0 (zstd's content checksum is its low 32 bits)."""
    p1, p2, p3, p4, p5 = XXH_P

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M64

    def rnd(acc, v):
        return rotl((acc + v * p2) & M64, 31) * p1 & M64

    n, i = len(data), 0
    if n >= 32:
        v = [(p1 + p2) & M64, p2, 0, -p1 & M64]
        while i + 32 <= n:
            v = [rnd(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], 'little'))
                 for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ rnd(0, x)) * p1 + p4) & M64
    else:
        h = p5
    h = (h + n) & M64
    while i + 8 <= n:
        h ^= rnd(0, int.from_bytes(data[i:i + 8], 'little'))
        h = (rotl(h, 27) * p1 + p4) & M64
        i += 8
    if i + 4 <= n:
        h ^= int.from_bytes(data[i:i + 4], 'little') * p1 & M64
        h = (rotl(h, 23) * p2 + p3) & M64
        i += 4
    while i < n:
        h ^= data[i] * p5 & M64
        h = rotl(h, 11) * p1 & M64
        i += 1
    h ^= h >> 33
    h = h * p2 & M64
    h ^= h >> 29
    h = h * p3 & M64
    return h ^ (h >> 32)


def file_xxh64(path):
    """A file's XXH64 as a chunk set's manifest gives it (xxhsum -H1)."""
    with open(path, 'rb') as f:
        return '%016x' % xxh64(f.read())


def raw_zstd_frame(data):
    """One frame: 4-byte content size, raw blocks, content checksum."""
    out = struct.pack('<IBI', 0xFD2FB528, 0xA4, len(data))
    blocks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b'']
    for k, b in enumerate(blocks):
        last = k == len(blocks) - 1
        out += struct.pack('<I', len(b) << 3 | last)[:3] + b
    return out + struct.pack('<I', xxh64(data) & 0xffffffff)


# ---- tests -------------------------------------------------------------------

@test
def generator_tsdl_is_the_modules(ctx):
    """gentrace.py writes the TSDL of module/ctf.c, string for string (the
    stream block with stack_ref's id untimed, as the module writes it)."""
    path = os.path.join(REPO, 'module', 'ctf.c')
    check(os.path.exists(path), 'module/ctf.c missing')
    src = open(path).read()
    d, _ = ctx.gen(events=10, cpus=1)
    meta = open(os.path.join(d, 'metadata')).read()
    umeta = gentrace.metadata(bytes(16), 0, 0, [], untimed=20)
    for var, into in (('rtr_tsdl_types', meta), ('rtr_tsdl_stream_head', umeta),
                      ('rtr_tsdl_stream_head', meta), ('rtr_tsdl_stream_variant', umeta),
                      ('rtr_tsdl_stream_variant', meta), ('rtr_tsdl_stream_tail', umeta),
                      ('rtr_tsdl_stream_tail', meta)):
        m = re.search(r'%s\[\]\s*=\s*((?:\s*"(?:[^"\\]|\\.)*")+)\s*;' % var, src)
        check(m, '%s not found in module/ctf.c' % var)
        text = ''.join(json.loads('"%s"' % s) for s in
                       re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        check(text in into, '%s of module/ctf.c is not in the generated metadata' % var)
    # rtr_metadata_stream()'s enum for id 20, as its seq_printf()s make it.
    check('\t\tenum : uint5_t { compact = 0 ... 19, untimed = 20, compact = 21 ... 30, '
          'extended = 31 } id;\n' in umeta, 'the untimed enum differs from module/ctf.c\'s')
    body = src[src.index('static void rtr_metadata_stream'):src.index('/*\n * The env block')]
    for frag in re.findall(r'"((?:[^"\\]|\\.)*)"', body):
        frag = json.loads('"%s"' % frag).split('%')[0]
        check(frag in umeta or frag in meta,
              'rtr_metadata_stream() text %r is not in the generated metadata' % frag)
    for frag in re.findall(r'"((?:[^"\\]|\\.)*)"', src[src.index('rtr_metadata_show'):]):
        frag = json.loads('"%s"' % frag).split('%')[0]
        check(frag in meta, 'module/ctf.c text %r is not in the generated metadata' % frag)


@test
def report_plain_streams(ctx):
    d, e = ctx.gen(events=3000)
    report_ok(d, e)
    _, _, info = expected(e)
    h = {k: sum(c['headers'][k] for c in info['cpus'].values())
         for k in ('compact', 'extended', 'wraps')}
    check(min(h.values()) > 20, 'trace lacks compact/extended/wrap cases: %s' % h)
    bt2_agrees(d, e)


@test
def report_padded_packets(ctx):
    """Padding (valid CTF, but ringtrace.ko never pads) is damage read past:
    every event is read, the same as babeltrace2 reads them, and each
    packet_size that differs from its content_size is named."""
    d, e = ctx.gen('--layout', 'padded', events=1500)
    r = report_ok(d, e, status=3)
    check(re.search(r'^ringtrace: damaged: %s/cpu0: offset 0: packet_size 8192 bits '
                    r'differs from content_size \d+ bits' % re.escape(d),
                    r.stderr, re.M), 'damage line: %r' % r.stderr[:600])
    bt2_agrees(d, e)


@test
def report_one_cpu_big_packets(ctx):
    d, e = ctx.gen(events=5000, cpus=1, subbuf=65536)
    report_ok(d, e)
    bt2_agrees(d, e)


@test
def report_many_cpus(ctx):
    d, e = ctx.gen(events=300, cpus=12, subbuf=512)
    report_ok(d, e)
    bt2_agrees(d, e)



def marker(text):
    return struct.pack('<H', len(text)) + text


def switch(prev, prev_tid, nxt, next_tid, order=None):
    """A sched_switch payload in module/probes.c's layout."""
    return struct.pack('<16siiq16sii', prev, prev_tid, 120, 1, nxt, next_tid, 120)


@test
def typed_field_lookups(ctx):
    """Threads, report --stat and export look fields up by name: a field
    declared as something else (an array of 0 elements, a string for an
    integer, a huge system call number) is not what they take it for, and
    nothing is read outside the event."""
    marker_ev = gentrace.EVENTS[0]
    # next_tid[0] last, so that reading it as an integer runs off the packet.
    odd_switch = [f for f in SCHED_SWITCH if f[1] != 'next_tid'] + \
        [('int32_t', 'next_tid', 0)]
    d = write_trace(os.path.join(ctx.tmp, 'zero-array'),
                    [marker_ev, (1, 'sched_switch', odd_switch)],
                    [[(1000, 0, marker(b'a')),
                      (2000, 1, struct.pack('<16siiq16si', b'a', 7, 120, 1, b'b', 120))],
                     [(3000, 0, marker(b'after'))]])
    # Text where an integer is expected, and the other way round.
    swapped = [('int32_t', 'prev_comm', None), ('string', 'prev_tid', None),
               ('int32_t', 'prev_prio', None), ('int64_t', 'prev_state', None),
               ('int32_t', 'next_comm', None), ('string', 'next_tid', None)]
    d2 = write_trace(os.path.join(ctx.tmp, 'swapped'),
                     [marker_ev, (1, 'sched_switch', swapped)],
                     [[(1000, 1, struct.pack('<i', 5) + b'\0' +
                        struct.pack('<iqi', 1, 2, 3) + b'\0'),
                       (2000, 0, marker(b'after'))]])
    # System call numbers far beyond any kernel's, on a known thread.
    sysc = [marker_ev, (1, 'sched_switch', SCHED_SWITCH),
            (2, 'syscall_entry', [('int64_t', 'id', None), ('uint64_t', 'args', 6)]),
            (3, 'syscall_exit', [('int64_t', 'id', None), ('int64_t', 'ret', None)])]
    big = 1 << 62
    d3 = write_trace(os.path.join(ctx.tmp, 'syscall-ids'), sysc,
                     [[(1000, 1, switch(b'a', 7, b'worker', 42)),
                       (2000, 2, struct.pack('<q6Q', big, 1, 2, 3, 4, 5, 6)),
                       (3000, 3, struct.pack('<qq', big, 0)),
                       (4000, 2, struct.pack('<q6Q', 1 << 40, 1, 2, 3, 4, 5, 6)),
                       (5000, 3, struct.pack('<qq', 1 << 40, 0))]])
    for t in (d, d2, d3):
        for args in (['report'], ['report', '--stat'], ['export', '-f', 'systrace'],
                     ['export', '-f', 'chrome-json'],
                     ['export', '-f', 'perfetto', '-o', t + '.pftrace'], ['check']):
            r = rt(*(args + [t]), asan=True)
            what = '%s %s' % (' '.join(args), os.path.basename(t))
            clean_run(r, what)
            check(r.returncode == 0, '%s: exit %d: %s' % (what, r.returncode, r.stderr))
    r = rt('report', d)
    check('next_tid=[]' in r.stdout, 'the empty array: %r' % r.stdout)
    # Nothing said who runs after the switch: its thread is unknown.
    check(re.search(r'^\[\S+\] cpu0 - ringtrace_marker: len=5, data="after"$',
                    r.stdout, re.M), 'thread after the switch: %r' % r.stdout)
    r = rt('report', d2)
    check(re.search(r'^\[\S+\] cpu0 - ringtrace_marker: len=5, data="after"$',
                    r.stdout, re.M), 'swapped types: %r' % r.stdout)
    r = rt('report', d3)
    check(re.search(r'^\[\S+\] cpu0 worker-42 syscall_exit: id=%d, ret=0$' % big,
                    r.stdout, re.M), 'syscall on its thread: %r' % r.stdout)



@test
def syscall_ids_of_both_widths(ctx):
    """syscall_entry's and syscall_exit's id as the module records it
    (int32_t) and as traces before it did (int64_t): the same calls read
    the same in report, --stat, systrace and sql's syscall table, and
    babeltrace2 reads the same ids; -1 (no call) and the 32-bit extremes
    keep their sign."""
    T = 10**9
    calls = [(110, 100), (-1, 0), (0x7fffffff, -38), (-0x80000000, -38), (4, -2)]
    got = []
    for wide in (False, True):
        entry, exit_ = ('<qB', '<qq') if wide else ('<iB', '<iq')
        evs = [(T, 1, kswitch('a', 7, 'worker', 42))]
        for i, (nr, ret) in enumerate(calls):
            evs.append((T + 10 + 10 * i, 11, struct.pack(entry, nr, 0)))
            evs.append((T + 15 + 10 * i, 12, struct.pack(exit_, nr, ret)))
        d = kernel_trace(os.path.join(ctx.tmp, 'ids-%d' % (64 if wide else 32)),
                         {0: [(T, T + 100, 0, evs)]}, wide_ids=wide)
        outs = []
        for args in (['report', d], ['report', '--stat', d], ['export', '-f', 'systrace', d],
                     ['sql', '--csv', d, 'SELECT name, count(*), sum(dur) FROM syscall '
                      'GROUP BY 1 ORDER BY 1']):
            r = rt(*args, asan=True)
            clean_run(r, ' '.join(args))
            check(r.returncode == 0, '%s: exit %d: %s' % (args, r.returncode, r.stderr))
            outs.append(r.stdout)
        r = run(['babeltrace2', d])
        check(r.returncode == 0 and not r.stderr, 'babeltrace2: %s' % r.stderr)
        outs.append(re.findall(r'id = \( (?:"\w+"|<unknown>) : container = (-?\d+) \)',
                               r.stdout))
        got.append(outs)
    report, stat, systrace, sql_out, bt = got[0]
    for nr, ret in calls:
        name = {110: 'getppid', 4: 'stat'}.get(nr)
        shown = '%s(%d)' % (name, nr) if name else '%d' % nr
        check(re.search(r'^\[\S+\] cpu0 worker-42 syscall_exit: id=%s, ret=%d$'
                        % (re.escape(shown), ret), report, re.M),
              'exit %d: %r' % (nr, report))
    check(bt == [str(nr) for nr, _ in calls for _ in (0, 1)],
          'babeltrace2 read the ids %s' % bt)
    for what, a, b in zip(('report', '--stat', 'systrace', 'sql', 'babeltrace2'),
                          got[0], got[1]):
        check(a == b, '%s differs between 32- and 64-bit ids:\n%s\n%s' % (what, a, b))


@test
def slow_clock(ctx):
    """A clock of 1 Hz (the metadata says so) and times near 2^64: the
    times print, in integers, nothing overflows a double's cast."""
    sysc = [gentrace.EVENTS[0], (1, 'sched_switch', SCHED_SWITCH),
            (2, 'syscall_exit', [('int64_t', 'id', None), ('int64_t', 'ret', None)])]
    d = write_trace(os.path.join(ctx.tmp, 'slow'), sysc,
                    [[(1000, 1, switch(b'a', 7, b'worker', 42)),
                      (1 << 63, 2, struct.pack('<qq', 3, 0)),
                      ((1 << 64) - 2, 0, marker(b'late'))]])
    m = os.path.join(d, 'metadata')
    text = open(m).read().replace('freq = 1000000000;', 'freq = 1;')
    open(m, 'w').write(text)
    for args in (['report'], ['report', '--stat'], ['export', '-f', 'systrace'],
                 ['export', '-f', 'chrome-json'], ['report', '--begin', '1e30'],
                 ['export', '-f', 'perfetto', '-o', d + '.pftrace'],
                 ['report', '--end', '+8000h']):
        r = rt(*(args + [d]), asan=True)
        clean_run(r, ' '.join(args))
        check(r.returncode == 0, '%s: exit %d: %s' % (args, r.returncode, r.stderr))
    r = rt('export', '-f', 'systrace', d)
    check(' 9223372036854775808.000000000: sys_exit: NR 3 = 0' in r.stdout, r.stdout[-300:])


@test
def report_times_exact(ctx):
    """--begin/--end take the times report prints to the nanosecond: a
    double holds 134.410262790 as 134410262789.99998 ns, and --end once
    left out the very event whose time it was given."""
    d = write_trace(os.path.join(ctx.tmp, 'exact'), [gentrace.EVENTS[0]],
                    [[(134410262789, 0, marker(b'before')),
                      (134410262790, 0, marker(b'at')),
                      (134410262791, 0, marker(b'after'))]])
    for opt, want in (('--end', ['before', 'at']), ('--begin', ['at', 'after'])):
        r = rt('report', opt, '134.410262790', d, asan=True)
        clean_run(r, 'report ' + opt)
        got = [w for w in ('before', 'at', 'after') if '"%s' % w in r.stdout]
        check(got == want, '%s 134.410262790: %s, not %s: %s' % (opt, got, want, r.stdout))


@test
def discarded_events(ctx):
    d, e = ctx.gen('--lose', '0.02', events=3000)
    r = report_ok(d, e)
    check(' -- lost events=' in r.stdout, 'no loss reported')
    bt2_agrees(d, e)


@test
def overwritten_packets(ctx):
    d, e = ctx.gen('--lose', '0.01', '--drop-packets', '0.08', events=3000)
    _, _, info = expected(e)
    check(sum(c['lost_packets'] for c in info['cpus'].values()) > 0,
          'generator dropped no packet')
    report_ok(d, e)
    bt2_agrees(d, e)


@test
def wall_clock(ctx):
    d, e = ctx.gen(events=200)
    r = rt('report', '--wall', d)
    check(r.returncode == 0, r.stderr)
    got = [l.split(' ')[0] for l in r.stdout.splitlines() if ' cpu' in l and ' -- ' not in l]
    b = run(['babeltrace2', '--clock-seconds', '--no-delta', d])
    check(b.returncode == 0, b.stderr)
    want = [l.split(' ')[0] for l in b.stdout.splitlines()]
    check(got == want, 'wall-clock times differ from babeltrace2 --clock-seconds '
          '(first: %s vs %s)' % (got[:1], want[:1]))


@test
def zstd_single(ctx):
    d, e = ctx.gen('--zstd', 'single', '--frame-packets', '3', '--lose', '0.01')
    report_ok(d, e)


@test
def zstd_rotated(ctx):
    d, e = ctx.gen('--zstd', 'rotate', '--frame-packets', '2', '--rotate-frames', '2')
    check(len([f for f in os.listdir(d) if f.startswith('cpu0-')]) > 2,
          'too few rotated files')
    report_ok(d, e)


@test
def zstd_killed_daemon(ctx):
    """A partial last frame is dropped and noted; check still succeeds."""
    d, e = ctx.gen('--zstd', 'rotate', '--cut-frame', '--frame-packets', '2')
    r = report_ok(d, e)
    check('ends inside the zstd frame' in r.stdout, 'no frame note:\n' + r.stdout)
    r = rt('check', d, asan=True)
    check(r.returncode == 0, 'check failed on a truncated trace: ' + r.stderr)
    check('truncated:' in r.stdout, 'check does not mention the truncation')


@test
def partial_packet_plain(ctx):
    d, e = ctx.gen('--partial-packet')
    r = report_ok(d, e)
    check('trailing partial packet' in r.stdout, 'no partial packet note')


@test
def partial_packet_zstd(ctx):
    d, e = ctx.gen('--partial-packet', '--zstd', 'single')
    r = report_ok(d, e)
    check('trailing partial packet' in r.stdout, 'no partial packet note')


@test
def unpack_for_babeltrace2(ctx):
    """`ringtrace unpack` of a compressed, rotated, SIGKILLed trace gives a
    directory that babeltrace2 reads completely."""
    d, e = ctx.gen('--zstd', 'rotate', '--cut-frame', '--partial-packet',
                   '--lose', '0.01', '--drop-packets', '0.05', events=1500)
    out = d + '-ctf'
    r = rt('unpack', d, asan=True)
    check(r.returncode == 0, 'unpack failed: ' + r.stderr)
    check('babeltrace2 ' + out in r.stdout, 'unpack does not say how to read it')
    check(sorted(os.listdir(out)) == ['.ringtrace-unpack', 'cpu0', 'cpu1', 'cpu2', 'metadata'],
          'unpack wrote %s' % os.listdir(out))
    bt2_agrees(out, e)
    r = rt('report', out)
    lines, _, _ = expected(e)
    check(r.returncode == 0 and [l for l in r.stdout.splitlines() if l.startswith('[')]
          == lines, 'report of the unpacked trace differs from the expected events')
    r = rt('check', out)
    check(r.returncode == 0 and 'truncated' not in r.stdout,
          'unpacked trace does not check clean: ' + r.stdout + r.stderr)
    r = rt('unpack', d)
    check(r.returncode == 1 and 'exists' in r.stderr, 'unpack overwrote ' + out)
    r = rt('unpack', '--force', d, out)
    check(r.returncode == 0, 'unpack --force failed: ' + r.stderr)
    # --force replaces only what an earlier unpack wrote, nothing else.
    open(os.path.join(out, 'notes.txt'), 'w').write('mine\n')
    r = rt('unpack', '--force', d, out)
    check(r.returncode == 1 and 'did not write' in r.stderr and
          os.path.exists(os.path.join(out, 'notes.txt')),
          'unpack --force touched a directory with other files: ' + r.stderr)
    r = rt('unpack', d, d)
    check(r.returncode == 1, 'unpack into the trace itself did not fail')
    # A failure leaves nothing behind: no output, no temporary directory.
    bad = os.path.join(ctx.tmp, 'bad')
    os.makedirs(bad)
    open(os.path.join(bad, 'metadata'), 'w').write(open(os.path.join(d, 'metadata')).read())
    open(os.path.join(bad, 'cpu0'), 'wb').write(b'\xde\xad\xbe\xef' * 64)
    before = set(os.listdir(ctx.tmp))
    r = rt('unpack', '--strict', bad, os.path.join(ctx.tmp, 'bad-out'))
    check(r.returncode == 1 and set(os.listdir(ctx.tmp)) == before,
          'a failed unpack left %s' % (set(os.listdir(ctx.tmp)) - before))


@test
def check_summary(ctx):
    d, e = ctx.gen('--lose', '0.01', events=800)
    r = rt('check', d, asan=True)
    check(r.returncode == 0, r.stderr)
    _, summary, _ = expected(e)
    check(r.stdout.splitlines() == summary, 'check output:\n' + r.stdout)
    r = rt('check', '-v', d)
    check(r.returncode == 0 and ' seq=0 ' in r.stdout, 'check -v lists no packets')


# Corruptions of the first stream: (name, how, expected message part).
def patch_header(field, value, packet=1, fmt='<Q'):
    def f(data, pkts):
        struct.pack_into(fmt, data, pkts[packet] + OFF[field], value(data, pkts[packet]))
    return f


def hdr_get(data, off, field, fmt='<Q'):
    return struct.unpack_from(fmt, data, off + OFF[field])[0]


CORRUPTIONS = [
    ('magic', patch_header('magic', lambda d, o: 0xdeadbeef, fmt='<I'), 'bad packet magic'),
    ('uuid', patch_header('uuid', lambda d, o: 0x1234, fmt='<I'), 'uuid differs'),
    ('stream_id', patch_header('stream_id', lambda d, o: 3, fmt='<I'), 'unknown stream id'),
    ('content>packet', patch_header('content', lambda d, o: hdr_get(d, o, 'size') + 8),
     'differs from content_size'),
    ('content<header', patch_header('content', lambda d, o: 80 * 8), 'bad sizes'),
    ('content%8', patch_header('content', lambda d, o: hdr_get(d, o, 'content') - 3),
     'bad sizes'),
    ('huge packet', patch_header('size', lambda d, o: 1 << 40), 'differs from content_size'),
    ('end<begin', patch_header('end', lambda d, o: hdr_get(d, o, 'begin') - 1),
     'before timestamp_begin'),
    ('begin<prev end', patch_header('begin', lambda d, o: 5), 'before the previous packet'),
    ('seq back', patch_header('seq', lambda d, o: 0), 'does not follow'),
    ('discarded down', patch_header('discarded', lambda d, o: 5), 'went down from 5'),
    ('events field', patch_header('events', lambda d, o: hdr_get(d, o, 'events', '<I') + 1,
                                  fmt='<I'), 'its header says'),
    ('cpu_id', patch_header('cpu', lambda d, o: 7, fmt='<I'), 'differs from cpu_id'),
    ('cpu_id+instance', lambda d, p: (struct.pack_into('<Q', d, p[1] + OFF['instance'], 7),
                                      struct.pack_into('<I', d, p[1] + OFF['cpu'], 7)),
     'packet of cpu 7 in a stream of cpu 0'),
    ('unknown event id', lambda d, p: struct.pack_into('<I', d, p[1] + 88, 29),
     'unknown event id 29'),
    ('event after end', patch_header('end', lambda d, o: hdr_get(d, o, 'begin')),
     "after the packet's timestamp_end"),
]


def packets_of(data):
    offs, o = [], 0
    while o + HEADER.size <= len(data):
        offs.append(o)
        o += struct.unpack_from('<Q', data, o + OFF['size'])[0] // 8
    return offs


@test
def corrupt_streams(ctx):
    # Every event a marker, so that the first event's payload is known.
    d, _ = ctx.gen(events=600, cpus=2, seed=77)
    for name, how, msg in CORRUPTIONS:
        c = ctx.copy(d)
        path = os.path.join(c, 'cpu0')
        data = bytearray(open(path, 'rb').read())
        pkts = packets_of(data)
        check(len(pkts) > 3, 'trace too small')
        how(data, pkts)
        open(path, 'wb').write(data)
        for cmd in ('check', 'report'):
            # --strict: an error, one message naming file and offset.
            r = rt(cmd, '--strict', c, asan=True)
            check(r.returncode == 1, '%s: %s --strict exit %d (stderr %s)' %
                  (name, cmd, r.returncode, r.stderr))
            check(r.stderr.startswith('ringtrace: %s/cpu0: ' % c) and msg in r.stderr,
                  '%s: %s said %r, expected %r' % (name, cmd, r.stderr, msg))
            check('Sanitizer' not in r.stderr and 'runtime error' not in r.stderr,
                  '%s: sanitizer: %s' % (name, r.stderr))
            check(r.stderr.count('\n') == 1, '%s: %s printed more than one message' %
                  (name, cmd))
            # Default: read past it, say what was skipped, exit 3.
            r = rt(cmd, c, asan=True)
            check(r.returncode == 3 and 'damaged: %s/cpu0: ' % c in r.stderr
                  and msg in r.stderr and 'skipped' in r.stderr,
                  '%s: %s exit %d, said %r' % (name, cmd, r.returncode, r.stderr))
            check('Sanitizer' not in r.stderr and 'runtime error' not in r.stderr,
                  '%s: sanitizer: %s' % (name, r.stderr))
            check(cmd != 'report' or r.stdout.count('ringtrace_marker') > 10,
                  '%s: report printed no events past the damage' % name)



@test
def lying_packet_size(ctx):
    """ringtrace.ko writes packet_size == content_size.  Packet 2 of a stream
    claims 100000 bytes, or exactly up to where packet 5 starts: all of it
    is still read (packet 2 to its content_size), nothing counts as lost,
    the damage is named where it is, and babeltrace2 reads all of it after
    unpack."""
    d, e = ctx.gen(events=3000, cpus=1, subbuf=4096, seed=21)
    lines, summary, _ = expected(e)
    data = open(os.path.join(d, 'cpu0'), 'rb').read()
    pkts = packets_of(data)
    check(len(pkts) > 8, 'trace too small: %d packets' % len(pkts))
    for name, size in (('100000 bytes', 100000), ('up to packet 5', pkts[4] - pkts[1])):
        c = ctx.copy(d)
        bad = bytearray(data)
        struct.pack_into('<Q', bad, pkts[1] + OFF['size'], size * 8)
        open(os.path.join(c, 'cpu0'), 'wb').write(bad)
        r = report_ok(c, e, status=3)
        where = ('damaged: %s/cpu0: offset %d: packet_size %d bits differs from '
                 'content_size %d bits' % (c, pkts[1], size * 8, (pkts[2] - pkts[1]) * 8))
        check(where in r.stderr and '; skipped 0 bytes at offset %d to the next packet'
              % pkts[2] in r.stderr, '%s: damage line: %r' % (name, r.stderr))
        r = rt('check', c, asan=True)
        check(r.returncode == 3 and r.stdout.splitlines()[0] == summary[0],
              '%s: check says %r, expected %r' % (name, r.stdout, summary[0]))
        r = rt('check', '--strict', c)
        check(r.returncode == 1 and where[len('damaged: '):] in r.stderr,
              '%s: --strict: %r' % (name, r.stderr))
        r = rt('unpack', c, c + '-ctf', asan=True)
        check(r.returncode == 3, '%s: unpack exit %d: %s' % (name, r.returncode, r.stderr))
        bt2_agrees(c + '-ctf', e)



# ---- one damaged packet costs that packet --------------------------------------

def without_packet(data, k):
    """The stream @data without its packet @k: what a reader of the damaged
    stream must print, the packet's sequence number counted as lost."""
    pkts = packets_of(data)
    end = pkts[k + 1] if k + 1 < len(pkts) else len(data)
    return data[:pkts[k]] + data[end:]


def damaged_copy(ctx, d, k, field, how, fmt='<Q', cpu=0):
    """Two copies of trace @d: cpuN's packet @k with its header @field set to
    how(value), and cpuN without packet @k.  Returns them and the packet's
    offset."""
    name = 'cpu%d' % cpu
    data = bytearray(open(os.path.join(d, name), 'rb').read())
    off = packets_of(data)[k]
    bad, ref = ctx.copy(d), ctx.copy(d)
    open(os.path.join(ref, name), 'wb').write(without_packet(data, k))
    struct.pack_into(fmt, data, off + OFF[field],
                     how(struct.unpack_from(fmt, data, off + OFF[field])[0]))
    open(os.path.join(bad, name), 'wb').write(data)
    return bad, ref, off


def costs_one_packet(name, bad, ref, off, *args, cmd='report', cpu=0, gap=True):
    """`ringtrace CMD ARGS` of @bad prints what it prints of @ref (the trace
    without the damaged packet) but for the loss line of the gap (@gap: one
    is printed), which says damaged=1; exit 3, the damage named once, at
    cpuN's offset @off."""
    r = rt(cmd, *(list(args) + [bad]), asan=True)
    want = rt(cmd, *(list(args) + [ref]), asan=True)
    check(want.returncode == 0, '%s: the undamaged copy: exit %d %s' %
          (name, want.returncode, want.stderr))
    check(r.returncode == 3 and 'runtime error' not in r.stderr,
          '%s: %s exit %d: %s' % (name, cmd, r.returncode, r.stderr[-1500:]))
    places = [l for l in r.stderr.splitlines() if l.startswith('ringtrace: damaged: ')]
    check(len(places) == 1 and
          re.match(r'ringtrace: damaged: %s/cpu%d(-\d+)?: ' % (re.escape(bad), cpu), places[0])
          and re.search(r'\boffset %d\b' % off, places[0]),
          '%s: damage said %r, expected once at offset %d' % (name, places, off))
    got, exp = r.stdout.splitlines(), want.stdout.splitlines()
    marked = False
    if gap and len(got) == len(exp):
        # The gap the damaged packet leaves: its loss line says so.
        for i, (a, b) in enumerate(zip(got, exp)):
            if a != b and ' cpu%d -- lost ' % cpu in b:
                exp[i] = re.sub(r'(packets=\d+)', r'\1 damaged=1', b)
                marked = True
                break
    check(marked or not gap, '%s: no loss line says damaged=1' % name)
    check(got == exp, '%s: %s prints %d lines, %d expected; first difference:\n%s' % (
        name, cmd, len(got), len(exp), next(('  got      %s\n  expected %s' % (a, b)
                                             for a, b in zip(got, exp) if a != b),
                                            '(one is a prefix of the other)')))
    check(not re.search(r'(events|packets)=\d{10,}', r.stdout),
          '%s: an absurd loss figure: %s' % (name, r.stdout[:300]))
    return r


# One header field of one packet of a 15-packet stream: (what, packet, field,
# new value).  Bit 40 of a counter or of timestamp_end makes the packet after
# it look out of order; a content_size of 1 MiB near the end of the file
# claims the packets after it.
ONE_FIELD = [
    ('timestamp_end bit 40', 7, 'end', lambda v: v ^ 1 << 40),
    ('packet_seq_num bit 40', 7, 'seq', lambda v: v ^ 1 << 40),
    ('events_discarded bit 40', 7, 'discarded', lambda v: v ^ 1 << 40),
    ('timestamp_end bit 40, first packet', 0, 'end', lambda v: v ^ 1 << 40),
    ('packet_seq_num bit 40, first packet', 0, 'seq', lambda v: v ^ 1 << 40),
    ('timestamp_end bit 40, next to last', 13, 'end', lambda v: v ^ 1 << 40),
    ('events_discarded bit 40, last packet', 14, 'discarded', lambda v: v ^ 1 << 40),
    ('packet_seq_num bit 40, last packet', 14, 'seq', lambda v: v ^ 1 << 40),
    ('content_size 1 MiB', 13, 'content', lambda v: 8 << 20),
    ('content_size 1 MiB, middle', 7, 'content', lambda v: 8 << 20),
]


@test
def one_damaged_header_costs_one_packet(ctx):
    """A 15-packet CPU stream with one header field of one packet damaged:
    report and check say so (exit 3), once, and print every event of every
    other packet exactly as they print the stream without that packet; no
    loss figure the packet could never hold.  (Before: the damaged packet
    became the reference for the next one, and the rest of the CPU's
    stream was dropped, or a 2^40 loss printed; a content_size too large
    near the end was taken for a killed writer's cut, exit 0.)"""
    d, _ = ctx.gen(events=520, cpus=2, subbuf=1024, seed=29)
    data = open(os.path.join(d, 'cpu0'), 'rb').read()
    check(len(packets_of(data)) == 15, 'cpu0 has %d packets, not 15' % len(packets_of(data)))
    for name, k, field, how in ONE_FIELD:
        bad, ref, off = damaged_copy(ctx, d, k, field, how)
        costs_one_packet(name, bad, ref, off, gap=k < 14)
        r = rt('check', bad, asan=True)
        want = rt('check', ref)
        check(r.returncode == 3 and r.stdout.splitlines()[:2] == want.stdout.splitlines()[:2],
              '%s: check exit %d, says %r, expected %r' % (
                  name, r.returncode, r.stdout[:300], want.stdout[:300]))
        check('truncated' not in r.stdout, '%s: taken for a cut: %s' % (name, r.stdout))
    # Rotated: the damaged packet is its file's last, the packet that
    # judges it the next file's first.
    bad, ref, off = damaged_copy(ctx, d, 7, 'end', lambda v: v ^ 1 << 40)
    for t, cut in ((bad, 8), (ref, 7)):
        data = open(os.path.join(t, 'cpu0'), 'rb').read()
        at = packets_of(data)[cut]
        open(os.path.join(t, 'cpu0-000001'), 'wb').write(data[:at])
        open(os.path.join(t, 'cpu0-000002'), 'wb').write(data[at:])
        os.unlink(os.path.join(t, 'cpu0'))
    r = costs_one_packet('timestamp_end bit 40, the last packet of a file', bad, ref, off)
    check('cpu0-000001: offset %d: damaged header: the next packet (%s/cpu0-000002, offset 0)'
          % (off, bad) in r.stderr, 'rotated: the damage is not named so: %r' % r.stderr)


REAL_TRACE = os.path.join(HERE, 'real-trace')


@test
def one_damaged_header_real_trace(ctx):
    """The same on a trace recorded on Debian's 6.12 kernel (tools/tests/
    real-trace: its cpu0 from the start, state dump included, cut to 15
    packets; its cpu1 from the middle, where events were discarded): one
    header field of one packet damaged costs that packet, exit 3."""
    d = os.path.join(ctx.tmp, 'real')
    r = rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack of the real trace: %s' % r.stderr)
    path = os.path.join(d, 'cpu0')
    data = open(path, 'rb').read()
    pkts = packets_of(data)
    open(path, 'wb').write(data[:pkts[15]])
    data1 = open(os.path.join(d, 'cpu1'), 'rb').read()
    steps = [k for k in range(1, 24) if hdr_get(data1, packets_of(data1)[k], 'discarded') !=
             hdr_get(data1, packets_of(data1)[k - 1], 'discarded')]
    check(len(steps) >= 3, 'cpu1 has %d discard steps' % len(steps))
    cases = [(n, k, f, how, 0) for n, k, f, how in ONE_FIELD]
    last = {0: 14, 1: 24}
    # Next to packets that report losses: the figures are exact.
    cases += [('cpu1 %s' % n, steps[1], f, how, 1) for n, _, f, how in ONE_FIELD[:3]]
    cases += [('cpu1 %s, after a loss' % n, steps[1] - 1, f, how, 1)
              for n, _, f, how in ONE_FIELD[:3]]
    for name, k, field, how, cpu in cases:
        bad, ref, off = damaged_copy(ctx, d, k, field, how, cpu=cpu)
        costs_one_packet('real trace, ' + name, bad, ref, off, cpu=cpu, gap=k < last[cpu])


@test
def damaged_header_in_a_window(ctx):
    """A window over a packet whose header is damaged: the packet is damage
    (exit 3), and every other event of the window is there, seeking or
    not, in report and in an export; report --stat counts the damaged
    place.  (Before: a timestamp_begin past the window's end ended the
    CPU's stream there, before the packet was checked, exit 0; and a
    timestamp_end with bit 40 cost the packets after it.)"""
    d, _ = ctx.gen(events=520, cpus=2, subbuf=1024, seed=29)
    data = open(os.path.join(d, 'cpu0'), 'rb').read()
    pkts = packets_of(data)
    b = hdr_get(data, pkts[5], 'begin')
    e = hdr_get(data, pkts[10], 'end')
    inside = (hdr_get(data, pkts[7], 'begin') + hdr_get(data, pkts[7], 'end')) // 2
    for name, k, field, how, end, gap in (
            ('timestamp_begin past the window, within the packet', 7, 'begin',
             lambda v: inside + 1, inside, False),
            ('timestamp_begin bit 40', 7, 'begin', lambda v: v ^ 1 << 40, e, True),
            ('timestamp_end bit 40', 7, 'end', lambda v: v ^ 1 << 40, e, True),
            # The window's last packet: the one after the window judges it.
            ('timestamp_end bit 40 of the window\'s last packet', 10, 'end',
             lambda v: v ^ 1 << 40, e, False)):
        bad, ref, off = damaged_copy(ctx, d, k, field, how)
        for seek in ('1', '0'):
            os.environ['RINGTRACE_SEEK'] = seek
            try:
                costs_one_packet('%s, seek %s' % (name, seek), bad, ref, off,
                                 *window_args(b, end), gap=gap)
                r = rt('export', '-f', 'systrace', *(window_args(b, end) + [bad]))
                want = rt('export', '-f', 'systrace', *(window_args(b, end) + [ref]))
                check(r.returncode == 3 and r.stdout == want.stdout,
                      '%s, seek %s: a window of export -f systrace: exit %d, %d bytes, '
                      '%d expected' % (name, seek, r.returncode, len(r.stdout),
                                       len(want.stdout)))
            finally:
                del os.environ['RINGTRACE_SEEK']
        r = rt('report', '--stat', bad)
        check(r.returncode == 3 and
              'CPU 0: 0 events lost, 1 packets lost, 1 damaged places skipped' in r.stdout,
              '%s: --stat: %s' % (name, r.stdout[-600:]))


@test
def damage_is_summarised(ctx):
    """Every packet damaged: the first places are described, the others
    counted, whatever the file holds (one message per resync before)."""
    d, _ = ctx.gen(events=3000, cpus=1, subbuf=512, seed=41)
    path = os.path.join(d, 'cpu0')
    data = bytearray(open(path, 'rb').read())
    pkts = packets_of(data)
    for o in pkts:
        struct.pack_into('<I', data, o + OFF['events'], 0)
    open(path, 'wb').write(data)
    for cmd in ('check', 'report', 'unpack'):
        r = rt(cmd, d, *([d + '-' + cmd] if cmd == 'unpack' else []), asan=True)
        clean_run(r, cmd)
        described = [l for l in r.stderr.splitlines() if 'its header says 0' in l]
        check(r.returncode == 3 and len(described) == 10 and
              'ringtrace: damaged: cpu0: %d more damaged places, not described'
              % (len(pkts) - 10) in r.stderr and
              '%d damaged places read past' % len(pkts) in r.stderr,
              '%s: exit %d, %d places described of %d:\n%s' % (
                  cmd, r.returncode, len(described), len(pkts), r.stderr[-800:]))



# ---- one damaged packet costs that packet: the cases of the review ----------------

# Streams of markers on cpu0: packet i holds two at REVIEW_T0 + 1000 i (+ 100).
REVIEW_UUID = bytes(range(16))
REVIEW_T0 = 5 * 10**9
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'


def review_packet(i, seq=None, disc=0, texts=None, end=None, extra=()):
    """Packet i: its markers (TEXTS, or b'pktI-a', b'pktI-b') and EXTRA
    events ((time, id, payload)) after them; its header's fields as given."""
    t = REVIEW_T0 + 1000 * i
    texts = texts or [b'pkt%d-a' % i, b'pkt%d-b' % i]
    evs = [(t + 100 * k, 0, marker(x)) for k, x in enumerate(texts)] + list(extra)
    return kpacket(REVIEW_UUID, 0, i if seq is None else seq, evs, t,
                   evs[-1][0] if end is None else end, disc)


def review_trace(ctx, name, files, events=(gentrace.EVENTS[0],), meta=None):
    d = os.path.join(ctx.tmp, name)
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta or gentrace.metadata(REVIEW_UUID, 1700000000, 0, list(events)))
    for n, data in files.items():
        with open(os.path.join(d, n), 'wb') as f:
            f.write(data)
    return d


def markers_of(out):
    """The data of each marker report printed, in order."""
    return re.findall(r'ringtrace_marker: len=\d+, data="((?:[^"\\]|\\.)*)"', out)


def losses_of(out):
    """(events, packets) of each loss line report printed."""
    return [(int(a), int(b)) for a, b in
            re.findall(r' -- lost events=(\d+) packets=(\d+)', out)]


@test
def stored_frame_holding_the_zstd_magic(ctx):
    """A stored frame (a raw block, no checksum) whose packet holds the
    zstd frame magic -- a marker's text, a syscall argument 0xFD2FB528 --
    even with a whole stored-frame header after it, is read like any
    other: exit 0, every event, as from the same packets unpacked.  So is
    a killed writer's last frame that holds it: a note, exit 0.  A frame
    whose end is missing still costs its packet alone: the next frame,
    whose header it swallows, is read.  (Before: a magic anywhere inside
    a stored frame made it damage, its packet dropped, exit 3.)"""
    fake = ZSTD_MAGIC + b'\xa0' + struct.pack('<I', 40) + b'\x41\x01\x00' + b'\xc1\x1f\xfc\xc1'
    texts = {2: [b'pkt2-a', b'x' + ZSTD_MAGIC + b'y'], 3: [b'pkt3-a', fake + b'z' * 40],
             4: [ZSTD_MAGIC * 3, b'pkt4-b'], 5: [struct.pack('<Q', 0xFD2FB528), b'pkt5-b']}
    pk = [review_packet(i, texts=texts.get(i)) for i in range(8)]
    plain = review_trace(ctx, 'plain', {'cpu0': b''.join(pk)})
    stored = review_trace(ctx, 'stored', {'cpu0-000001.zst': stored_chunk(pk)})
    want = rt('report', plain)
    check(want.returncode == 0 and len(markers_of(want.stdout)) == 16,
          'the plain stream: exit %d, %d markers' % (want.returncode,
                                                    len(markers_of(want.stdout))))
    for args in ([], ['--begin', seek_secs(REVIEW_T0 + 2500), '--end', seek_secs(REVIEW_T0 + 5500)]):
        r = rt('report', *(args + [stored]), asan=True)
        w = rt('report', *(args + [plain]))
        check(r.returncode == 0 and r.stdout == w.stdout and 'damaged' not in r.stderr,
              'stored %s: exit %d, %d markers of %d: %s' % (
                  ' '.join(args), r.returncode, len(markers_of(r.stdout)),
                  len(markers_of(w.stdout)), r.stderr[-800:]))
    # A killed writer: the file ends inside the last frame, after the magic.
    pk[7] = review_packet(7, texts=[b'pkt7-a', b'p' + ZSTD_MAGIC + b'q' * 30])
    frames = [stored_chunk([p]) for p in pk]
    cut = frames[7].index(ZSTD_MAGIC, 4) + 8
    killed = review_trace(ctx, 'killed', {'cpu0-000001.zst': b''.join(frames[:7]) +
                                          frames[7][:cut]})
    r = rt('report', killed, asan=True)
    check(r.returncode == 0 and len(markers_of(r.stdout)) == 14 and
          'cpu0: truncated: %s/cpu0-000001.zst: ends inside the zstd frame' % killed
          in r.stdout and 'damaged' not in r.stderr,
          'a killed writer\'s last frame holding the magic: exit %d, %d markers: %s' % (
              r.returncode, len(markers_of(r.stdout)), r.stderr[-800:]))
    # A frame whose end is missing swallows the next one's header.
    short = frames[3][:len(frames[3]) // 2]
    cut = review_trace(ctx, 'cut', {'cpu0-000001.zst': b''.join(frames[:3]) + short +
                                    b''.join(frames[4:])})
    r = rt('report', cut, asan=True)
    got = markers_of(r.stdout)
    check(r.returncode == 3 and len(got) == 14 and not any(g.startswith('pkt3') for g in got)
          and 'pkt4-b' in got and 'damaged: %s/cpu0-000001.zst: zstd: ' % cut in r.stderr,
          'a frame cut short: exit %d, %d markers (14 expected, packet 3\'s not): %s' % (
              r.returncode, len(got), r.stderr[-800:]))


@test
def disputed_first_packet_of_a_read(ctx):
    """The first packet read (a stream's, and every seeking window's) has
    a counter raised by damage, and the packets after it lose some: the
    intact packet after it is read, both are (their events in order),
    the damage said, no loss figure above the real one; and a window that
    starts there prints what a full pass prints of it.  (Before: the
    intact packet was blamed and dropped -- with no packet before the
    first, a counter going down was taken for the second's.)"""
    for name, disc, seqs in (('events_discarded', [1, 0, 5, 5, 5], None),
                             ('packet_seq_num', [0] * 5, [8, 8, 10, 11, 12])):
        pk = [review_packet(i, seq=(seqs[i] if seqs else i + 7), disc=disc[i])
              for i in range(5)]
        d = review_trace(ctx, 'first-' + name, {'cpu0': b''.join(pk)})
        r = rt('report', d, asan=True)
        got = markers_of(r.stdout)
        check(r.returncode == 3 and len(got) == 10 and 'damaged: ' in r.stderr,
              '%s of the first packet: exit %d, %d markers of 10: %s' % (
                  name, r.returncode, len(got), r.stderr[-600:]))
        check(sum(e for e, _ in losses_of(r.stdout)) <= 5 and
              sum(p for _, p in losses_of(r.stdout)) <= (seqs or [0, 0, 0, 0, 11])[4] - 4,
              '%s: losses %s' % (name, losses_of(r.stdout)))
    # A window whose first packet read (the one before it) is the damaged one.
    pk = [review_packet(i, disc=1 if i == 4 else 5 if i > 5 else 0) for i in range(10)]
    d = review_trace(ctx, 'window', {'cpu0': b''.join(pk)})
    b, e = REVIEW_T0 + 5000, REVIEW_T0 + 7200
    r = same_window(d, b, e, status=3)
    full = rt('report', d)
    inside = [l for l in full.stdout.splitlines() if l.startswith('[') and
              b <= ts_ns(l) <= e and ' -- lost ' not in l]
    check([l for l in r.stdout.splitlines() if ' ringtrace_marker: ' in l] == inside and
          len(inside) == 6, 'the window: %d markers, the full pass has %d in it' % (
              len(markers_of(r.stdout)), len(inside)))


@test
def disputed_pair_loses_no_negative_count(ctx):
    """Two packets with one sequence number between packets that follow
    both (9, 10, 11, 11, 12, 13): nothing tells which is damaged, both
    are read, and no loss is counted between them -- not 2^64 - 1.
    (Before: dispute() bounded the first below the packet before it, and
    counted packets=18446744073709551615.)"""
    pk = [review_packet(i, seq=s) for i, s in enumerate([9, 10, 11, 11, 12, 13])]
    d = review_trace(ctx, 'dup', {'cpu0': b''.join(pk)})
    for cmd in ('report', 'check'):
        r = rt(cmd, d, asan=True)
        check(r.returncode == 3 and not re.search(r'(packets|events)=\d{10,}', r.stdout) and
              'lost_packets=9 ' in r.stdout,
              '%s: exit %d: %s' % (cmd, r.returncode, r.stdout[-600:]))
    r = rt('report', d)
    check(len(markers_of(r.stdout)) == 12 and losses_of(r.stdout) == [(0, 9)],
          'report: %d markers, losses %s' % (len(markers_of(r.stdout)), losses_of(r.stdout)))


@test
def last_packet_counters_bounded_by_its_time(ctx):
    """The last packet of a stream has no packet after it to judge it by:
    its counters are bounded by the time since the packet before -- one
    event a nanosecond and a clock granule (2^16 ns).  A million events
    and four million packets lost in 1000 ns are damage: the packet costs
    itself, exit 3; 50 000 events lost at once (a coarse clock) are read,
    and 1000 + 2^16, not one more.
    (Before: the bound was 2^24 beyond the time, and such figures were
    printed as losses, exit 0.)"""
    pk = [review_packet(i) for i in range(5)]
    d = review_trace(ctx, 'big', {'cpu0': b''.join(pk) +
                                  review_packet(5, seq=5 | 1 << 22, disc=1 << 20)})
    r = rt('report', d, asan=True)
    check(r.returncode == 3 and len(markers_of(r.stdout)) == 10 and
          not losses_of(r.stdout) and 'damaged: %s/cpu0: offset %d: ' % (d, 5 * len(pk[0]))
          in r.stderr, 'bits 20 and 22 of the last packet\'s counters: exit %d, %d markers, '
          'losses %s: %s' % (r.returncode, len(markers_of(r.stdout)), losses_of(r.stdout),
                             r.stderr[-600:]))
    for disc, ok in ((50000, True), (1000 + (1 << 16), True), (1001 + (1 << 16), False)):
        d = review_trace(ctx, 'loss%d' % disc, {'cpu0': b''.join(pk) +
                                                review_packet(5, disc=disc)})
        r = rt('report', d, asan=True)
        check(r.returncode == (0 if ok else 3) and
              losses_of(r.stdout) == ([(disc, 0)] if ok else []),
              '%d events lost in 1000 ns: exit %d, losses %s' % (
                  disc, r.returncode, losses_of(r.stdout)))


@test
def error_ahead_waits_for_the_packets_before(ctx):
    """An error in a packet read ahead -- an event the metadata declares in
    a way no reader decodes, damage under --strict -- comes after every
    packet before it, as it did before packets were judged by their
    neighbours.  (Before: the packet before it was withheld, and the one
    before that when the error was two ahead.)"""
    events = [gentrace.EVENTS[0], (40, 'test_bigid', [('uint64_t', 'seq', None)])]
    meta = gentrace.metadata(REVIEW_UUID, 1700000000, 0, events).replace(
        'fields := struct { uint64_t seq; };',
        'fields := struct { floating_point { exp_dig = 8; mant_dig = 24; align = 8; } seq; };')
    for at in (3, 1):
        pk = [review_packet(i, extra=[(REVIEW_T0 + 1000 * i + 200, 40, struct.pack('<Q', 7))]
                            if i == at else ()) for i in range(5)]
        d = review_trace(ctx, 'hard%d' % at, {'cpu0': b''.join(pk)}, meta=meta)
        r = rt('report', d, asan=True)
        check(r.returncode == 1 and len(markers_of(r.stdout)) == 2 * at and
              "event 'test_bigid' cannot be decoded" in r.stderr,
              'an undecodable event in packet %d: exit %d, %d markers (%d expected): %s' % (
                  at, r.returncode, len(markers_of(r.stdout)), 2 * at, r.stderr[-600:]))
    data = bytearray(b''.join(review_packet(i) for i in range(6)))
    data[3 * len(review_packet(0)) + 1] ^= 0xff
    for form, files in (('plain', {'cpu0': bytes(data)}),
                        ('stored', {'cpu0-000001.zst': stored_chunk(
                            [bytes(data[i * 128:(i + 1) * 128]) for i in range(6)])})):
        d = review_trace(ctx, 'strict-' + form, files)
        r = rt('report', '--strict', d, asan=True)
        check(r.returncode == 1 and markers_of(r.stdout) == [
            'pkt%d-%s' % (i, x) for i in range(3) for x in 'ab'] and 'bad packet magic' in r.stderr,
              '--strict, %s, packet 3 damaged: exit %d, %d markers (6 expected): %s' % (
                  form, r.returncode, len(markers_of(r.stdout)), r.stderr[-600:]))


@test
def timestamp_end_a_little_past_the_next_begin(ctx):
    """ringtrace.ko's flush and its close on the drop path write
    timestamp_end without making it the floor of the next event's time, and
    its clock can step back in an NMI: a timestamp_end a little past the
    next packet's first event, all events in order, is not damage: exit
    0, every event; unpacked, it ends where the next begins.  Past it by
    more than the clock can step back (1 ms), it is damage.  (Before: any
    such packet was dropped as damaged, exit 3.)"""
    for late, status in ((500, 0), (60000, 0), (10**6, 3)):
        pk = [review_packet(i, end=REVIEW_T0 + 1000 * (i + 1) + late if i == 2 else None)
              for i in range(6)]
        d = review_trace(ctx, 'late%d' % late, {'cpu0': b''.join(pk)})
        for args in ([], ['--begin', seek_secs(REVIEW_T0 + 3000)]):
            r = rt('report', *(args + [d]), asan=True)
            n = len(markers_of(r.stdout))
            check(r.returncode == status and (status or n == (6 if args else 12)),
                  'timestamp_end %d ns past the next begin%s: exit %d (%d expected), '
                  '%d markers: %s' % (late, ' (window)' if args else '', r.returncode, status,
                                      n, r.stderr[-600:]))
        if status:
            continue
        # Unpacked, it ends where the next begins: babeltrace2 reads all of it.
        r = rt('unpack', d, d + '-ctf', asan=True)
        data = open(os.path.join(d + '-ctf', 'cpu0'), 'rb').read()
        offs = packets_of(data)
        check(r.returncode == 0 and hdr_get(data, offs[2], 'end') ==
              hdr_get(data, offs[3], 'begin') and len(bt2(d + '-ctf')[0]) == 12,
              'unpack of timestamp_end %d ns late: exit %d, packet 2 ends at %d, '
              'packet 3 begins at %d' % (late, r.returncode, hdr_get(data, offs[2], 'end'),
                                        hdr_get(data, offs[3], 'begin')))


@test
def hostile_content_size_costs_what_the_file_holds(ctx):
    """A header that claims 64 MiB of content in a file that holds a few
    hundred bytes (at its end: a killed writer's cut; in its middle:
    damage) costs what the file holds: read under 24 MiB of data
    (RLIMIT_DATA).  (Before: each of the three packet buffers grew to
    what the header claimed before reading.)"""
    pk = [review_packet(i) for i in range(6)]
    big = bytearray(pk[3])
    struct.pack_into('<QQ', big, OFF['content'], 64 << 20 << 3, 64 << 20 << 3)
    struct.pack_into('<I', big, OFF['events'], 5)     # not whole: a cut

    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (24 << 20, 24 << 20))

    for name, data, status, n in (('at the end', b''.join(pk[:3]) + bytes(big), 0, 6),
                                  ('in the middle', b''.join(pk[:3]) + bytes(big) +
                                   b''.join(pk[4:]), 3, 10)):
        d = review_trace(ctx, 'hostile-' + name.replace(' ', '-'), {'cpu0': data})
        r = subprocess.run([RINGTRACE, 'report', d], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           preexec_fn=limit)
        check(r.returncode == status and len(markers_of(r.stdout)) == n,
              '64 MiB claimed %s: exit %d (%d expected), %d markers of %d: %s' % (
                  name, r.returncode, status, len(markers_of(r.stdout)), n, r.stderr[-600:]))


@test
def cpu_ids_are_bounded(ctx):
    """CPU numbers: the largest any kernel has (8191) reads, and --stat
    has a column for the CPUs the trace has, not for every number below;
    a file named after a CPU no kernel has is an error naming it, not
    arrays of that size."""
    d, _ = ctx.gen(events=200, cpus=1, seed=51)
    data = bytearray(open(os.path.join(d, 'cpu0'), 'rb').read())
    for o in packets_of(data):
        struct.pack_into('<Q', data, o + OFF['instance'], 8191)
        struct.pack_into('<I', data, o + OFF['cpu'], 8191)
    c = ctx.copy(d)
    os.unlink(os.path.join(c, 'cpu0'))
    open(os.path.join(c, 'cpu8191'), 'wb').write(data)
    for args in (['report'], ['report', '--stat'], ['export', '-f', 'systrace'],
                 ['export', '-f', 'chrome-json'],
                 ['export', '-f', 'perfetto', '-o', c + '.pftrace'], ['check']):
        r = rt(*(args + [c]), asan=True)
        clean_run(r, ' '.join(args))
        check(r.returncode == 0, '%s: exit %d: %s' % (args, r.returncode, r.stderr))
    r = rt('report', '--stat', c)
    head = [l for l in r.stdout.splitlines() if l.strip().startswith('event ')]
    check(head and head[0].split()[2:] == ['cpu8191'], '--stat columns: %r' % head[:1])
    for name in ('cpu8192', 'cpu100000000.zst', 'cpu2147483647-000001.zst',
                 'cpu99999999999999999999'):
        c = ctx.copy(d)
        os.rename(os.path.join(c, 'cpu0'), os.path.join(c, name))
        r = rt('report', '--stat', c, asan=True)
        clean_run(r, name)
        check(r.returncode == 1 and r.stderr.startswith('ringtrace: %s/%s: ' % (c, name))
              and 'at most 8192 CPUs' in r.stderr, '%s: exit %d: %r' % (
                  name, r.returncode, r.stderr[-600:]))


@test
def damaged_files(ctx):
    """What a power loss or a bad disk leaves: report, check and unpack read
    past it, name file and offset of what they skipped, exit 3; --strict
    fails; a failed unpack leaves nothing."""
    d, e = ctx.gen(events=900, cpus=2, seed=11)
    lines, _, _ = expected(e)
    cases = []
    # A zero-filled tail: what an unsynced file holds after a power loss.
    c = ctx.copy(d)
    with open(os.path.join(c, 'cpu0'), 'ab') as f:
        f.write(bytes(65536))
    cases.append(('zero-filled tail', c, 'cpu0', 'to the end of the file'))
    # A corrupt packet in the middle: its header is garbage.
    c = ctx.copy(d)
    path = os.path.join(c, 'cpu1')
    data = bytearray(open(path, 'rb').read())
    mid = packets_of(data)[len(packets_of(data)) // 2]
    data[mid:mid + 64] = b'\x55' * 64
    open(path, 'wb').write(data)
    cases.append(('corrupt middle packet', c, 'cpu1', 'to the next packet'))
    for name, c, cpu, where in cases:
        for cmd in ('check', 'report'):
            r = rt(cmd, c, asan=True)
            check(r.returncode == 3, '%s: %s exit %d: %s' % (name, cmd, r.returncode, r.stderr))
            check(('damaged: %s/%s: offset ' % (c, cpu)) in r.stderr and where in r.stderr,
                  '%s: %s said %r' % (name, cmd, r.stderr))
            check('runtime error' not in r.stderr, r.stderr)
            r = rt(cmd, '--strict', c)
            check(r.returncode == 1, '%s: %s --strict exit %d' % (name, cmd, r.returncode))
        # Everything before and after the damage is still there.
        r = rt('report', c)
        got = [l for l in r.stdout.splitlines() if l.startswith('[')]
        check(len(got) < len(lines) and len(got) > len(lines) // 2 if 'middle' in name
              else got == lines, '%s: report has %d of %d events' % (name, len(got), len(lines)))
        out = c + '-out'
        r = rt('unpack', c, out, asan=True)
        check(r.returncode == 3 and os.path.isdir(out), '%s: unpack exit %d: %s'
              % (name, r.returncode, r.stderr))
        bt2(out)
        before = set(os.listdir(ctx.tmp))
        r = rt('unpack', '--strict', c, c + '-strict')
        check(r.returncode == 1 and set(os.listdir(ctx.tmp)) == before,
              '%s: a failed unpack left %s' % (name, set(os.listdir(ctx.tmp)) - before))
    # An empty stream file is no damage: nothing in it.
    c = ctx.copy(d)
    open(os.path.join(c, 'cpu5'), 'wb').close()
    r = rt('check', c, asan=True)
    check(r.returncode == 0 and 'cpu5: packets=0 events=0' in r.stdout,
          'empty file: exit %d %s %s' % (r.returncode, r.stdout, r.stderr))
    # A zero-filled tail of a zstd file: skipped to its end.
    z, _ = ctx.gen('--zstd', 'single', cpus=1, events=300, seed=3)
    path = os.path.join(z, 'cpu0.zst')
    with open(path, 'ab') as f:
        f.write(bytes(30000))
    r = rt('check', z, asan=True)
    check(r.returncode == 3 and 'damaged: %s: zstd' % path in r.stderr and
          'to the end of the file' in r.stderr, 'zstd zero tail: exit %d %r'
          % (r.returncode, r.stderr))


@test
def corrupt_payload_length(ctx):
    """A marker whose length runs past content_size."""
    d, _ = ctx.gen(events=300, cpus=1, seed=5)
    meta = open(os.path.join(d, 'metadata')).read()
    check('ringtrace_marker' in meta, 'no marker event')
    path = os.path.join(d, 'cpu0')
    data = bytearray(open(path, 'rb').read())
    # Find a compact marker event header: id 0 then u16 len.
    for o in packets_of(data)[1:]:
        hdr = HEADER.unpack_from(data, o)
        pos, end = o + 88, o + hdr[6] // 8
        if struct.unpack_from('<I', data, pos)[0] & 31 == 0:
            struct.pack_into('<H', data, pos + 4, 0xffff)
            break
    else:
        raise Fail('no packet starting with a compact marker')
    open(path, 'wb').write(data)
    r = rt('check', '--strict', d, asan=True)
    check(r.returncode == 1 and 'runs past content_size' in r.stderr,
          'bad length: %r' % r.stderr)
    r = rt('check', d, asan=True)
    check(r.returncode == 3 and 'runs past content_size' in r.stderr and
          'to the next packet' in r.stderr and 'skipped' in r.stderr,
          'bad length, tolerant: %r' % r.stderr)


@test
def cut_packets_are_rejected_like_babeltrace2(ctx):
    """content_size bytes written for packets whose packet_size is larger:
    babeltrace2 rejects such a stream, and so does ringtrace, saying why."""
    d, _ = ctx.gen('--layout', 'cut', events=500, cpus=1)
    r = run(['babeltrace2', d])
    check(r.returncode != 0, 'babeltrace2 accepted cut packets')
    r = rt('check', '--strict', d, asan=True)
    check(r.returncode == 1 and r.stderr.startswith(
        'ringtrace: %s/cpu0: offset 0: packet_size 8192 bits differs from content_size'
        % d), 'ringtrace: %r' % r.stderr)
    # Without --strict: every packet is read to its content_size.
    r = rt('check', d, asan=True)
    check(r.returncode == 3 and 'lost_packets=0' in r.stdout and
          '; skipped 0 bytes at offset ' in r.stderr, 'tolerant: %r %r' % (r.stdout, r.stderr[:600]))


@test
def corrupt_zstd(ctx):
    d, _ = ctx.gen('--zstd', 'single', '--frame-packets', '4', cpus=1, events=800)
    path = os.path.join(d, 'cpu0.zst')
    data = bytearray(open(path, 'rb').read())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)
    open(path, 'wb').write(data)
    r = rt('check', '--strict', d, asan=True)
    check(r.returncode == 1 and r.stderr.startswith('ringtrace: %s: ' % path),
          'corrupt zstd: exit %d %r' % (r.returncode, r.stderr))
    check('zstd' in r.stderr or 'offset' in r.stderr, r.stderr)
    r = rt('check', d, asan=True)
    check(r.returncode == 3 and 'damaged: %s: zstd' % path in r.stderr and
          'skipped' in r.stderr, 'corrupt zstd, tolerant: exit %d %r'
          % (r.returncode, r.stderr))



# Payload bytes of gentrace's events, by id (gentrace.EVENTS).
GEN_PAYLOAD = {1: 30, 3: 0, 40: 8}


def gen_events_of(data, off):
    """(offset, id, payload offset) of each event of gentrace's packet at @off."""
    end = off + struct.unpack_from('<Q', data, off + OFF['content'])[0] // 8
    pos, out = off + HEADER.size, []
    while pos < end:
        word = struct.unpack_from('<I', data, pos)[0]
        eid, start = word & 31, pos
        pos += 4
        if eid == 31:
            eid, pos = word >> 5, pos + 8
        if eid == 0:
            size = 2 + struct.unpack_from('<H', data, pos)[0]
        elif eid == 2:
            size = 12 + 1 + 2 * data[pos + 12] + 16
        else:
            size = GEN_PAYLOAD[eid]
        out.append((start, eid, pos))
        pos += size
    return out


@test
def zstd_frame_checksum(ctx):
    """A flipped bit inside a compressed frame: nothing of that frame is
    printed or unpacked (a frame is checked whole before any of it is
    parsed), the damage names the frame, and reading goes on with the
    next one."""
    d, e = ctx.gen(events=1200, cpus=1, subbuf=1024, seed=31)
    lines, _, _ = expected(e)
    data = open(os.path.join(d, 'cpu0'), 'rb').read()
    pkts = packets_of(data) + [len(data)]
    # Frames of 4 packets, raw blocks: a byte of the file is a byte of the stream.
    frames = [(pkts[i], pkts[min(i + 4, len(pkts) - 1)]) for i in range(0, len(pkts) - 1, 4)]
    check(len(frames) > 4, 'trace too small')
    mid = len(frames) // 2
    fstart, fend = frames[mid]
    # A test_scalars event of the middle frame: its u64 field, one bit flipped.
    flip = next(p + 7 for o in pkts[pkts.index(fstart):pkts.index(fend)]
                for _, eid, p in gen_events_of(data, o) if eid == 1)
    out, foff = b'', None
    for i, (a, b) in enumerate(frames):
        if i == mid:
            foff = len(out)
            at = len(out) + 9 + 3 + flip - a
        out += raw_zstd_frame(data[a:b])
    out = bytearray(out)
    out[at] ^= 0x10
    os.unlink(os.path.join(d, 'cpu0'))
    path = os.path.join(d, 'cpu0.zst')
    open(path, 'wb').write(out)
    lost = sum(struct.unpack_from('<I', data, o + OFF['events'])[0]
               for o in pkts[pkts.index(fstart):pkts.index(fend)])

    r = rt('report', d, asan=True)
    clean_run(r, 'report')
    got = [l for l in r.stdout.splitlines() if l.startswith('[') and ' -- lost ' not in l]
    bad = [l for l in got if l not in set(lines)]
    check(not bad, 'report printed events of the damaged frame: %s' % bad[:2])
    check(len(got) == len(lines) - lost, 'report printed %d events, expected %d'
          % (len(got), len(lines) - lost))
    check(r.returncode == 3 and 'damaged: %s: zstd: ' % path in r.stderr and
          'checksum' in r.stderr and 'frame at compressed offset %d' % foff in r.stderr,
          'report exit %d: %r' % (r.returncode, r.stderr))
    r = rt('report', '--strict', d)
    check(r.returncode == 1 and 'checksum' in r.stderr and
          not [l for l in r.stdout.splitlines() if l not in set(lines)],
          '--strict: exit %d, %r' % (r.returncode, r.stderr))
    r = rt('unpack', d, d + '-ctf', asan=True)
    clean_run(r, 'unpack')
    check(r.returncode == 3, 'unpack exit %d: %s' % (r.returncode, r.stderr))
    want = data[:fstart] + data[fend:]
    check(open(os.path.join(d + '-ctf', 'cpu0'), 'rb').read() == want,
          'unpack wrote other bytes than the intact frames\' packets')
    # A frame whose header declares 100 MiB (more than ringtraced's frames
    # hold): damage before libzstd allocates for it, the others read.
    out = bytearray(open(path, 'rb').read())
    out[at] ^= 0x10
    struct.pack_into('<I', out, foff + 5, 100 << 20)
    open(path, 'wb').write(out)
    r = rt('report', d, asan=True)
    clean_run(r, 'report, 100 MiB frame')
    got = [l for l in r.stdout.splitlines() if l.startswith('[') and ' -- lost ' not in l]
    check(r.returncode == 3 and len(got) == len(lines) - lost and
          'zstd: declares 104857600 bytes, more than the ' in r.stderr and
          'frame at compressed offset %d' % foff in r.stderr,
          '100 MiB frame: exit %d, %d events, %r' % (r.returncode, len(got), r.stderr))


BRIEF_EXTENDED = ('struct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended;',
                  'struct { uint27_t _pad; uint32_t id; uint64_clock_monotonic_t timestamp; } extended;')

METADATA_CORRUPTIONS = [
    ('not CTF', lambda m: m.replace('/* CTF 1.8 */', '/* CTF 2 */'), 'does not start with'),
    ('syntax', lambda m: m.replace('trace {', 'trace {{'), 'metadata:'),
    ('unknown type', lambda m: m.replace('uint32_t magic;', 'uint33_t magic;'),
     "unknown type 'uint33_t'"),
    ('header layout', lambda m: m.replace('uint32_t stream_id;', 'uint64_t stream_id;'),
     'packet.header field 2 must be `stream_id`'),
    ('context layout', lambda m: m.replace('uint32_t events;', ''),
     'packet.context has 7 fields'),
    ('byte-aligned extended header', lambda m: m.replace(*BRIEF_EXTENDED),
     'extended option must be a struct of 2 fields with alignment 1'),
    ('big endian', lambda m: m.replace('byte_order = le;', 'byte_order = be;'),
     'byte_order must be le'),
    ('uuid', lambda m: re.sub(r'uuid = "[^"]*";', 'uuid = "xyz";', m, count=1),
     'malformed trace uuid'),
    ('duplicate id', lambda m: m.replace('id = 3;', 'id = 2;'), 'share id 2'),
    ('unterminated comment', lambda m: m + '/* x', 'unterminated comment'),
    ('binary', lambda m: m.replace('env {', 'env \x01{'), 'unexpected byte 0x01'),
]


@test
def corrupt_metadata(ctx):
    d, _ = ctx.gen(events=50, cpus=1)
    meta = open(os.path.join(d, 'metadata')).read()
    for name, how, msg in METADATA_CORRUPTIONS:
        c = ctx.copy(d)
        m = how(meta)
        check(m != meta, '%s: corruption did not apply' % name)
        open(os.path.join(c, 'metadata'), 'w').write(m)
        r = rt('report', c, asan=True)
        check(r.returncode == 1 and r.stderr.startswith('ringtrace: %s/metadata' % c)
              and msg in r.stderr, '%s: %r (expected %r)' % (name, r.stderr, msg))


@test
def unsupported_event_fields(ctx):
    """An event whose fields ringtrace cannot lay out fails only when met."""
    d, _ = ctx.gen(events=200, cpus=1)
    p = os.path.join(d, 'metadata')
    m = open(p).read().replace('fields := struct { uint64_t seq; };',
                               'fields := struct { floating_point { exp_dig = 8; mant_dig = 24; align = 8; } seq; };')
    open(p, 'w').write(m)
    r = rt('check', d, asan=True)
    check(r.returncode == 1 and "event 'test_bigid' cannot be decoded" in r.stderr,
          repr(r.stderr))


@test
def directory_errors(ctx):
    d, _ = ctx.gen(events=50, cpus=2)
    c = ctx.copy(d)
    shutil.copy(os.path.join(c, 'cpu0'), os.path.join(c, 'cpu0.zst'))
    r = rt('report', c)
    check(r.returncode == 1 and 'keep one kind' in r.stderr, repr(r.stderr))
    c = ctx.copy(d)
    os.unlink(os.path.join(c, 'metadata'))
    r = rt('check', c)
    check(r.returncode == 1 and 'metadata: No such file' in r.stderr, repr(r.stderr))
    c = ctx.copy(d)
    for f in os.listdir(c):
        if f != 'metadata':
            os.unlink(os.path.join(c, f))
    r = rt('check', c)
    check(r.returncode == 1 and 'no stream files' in r.stderr, repr(r.stderr))
    r = rt('check', os.path.join(ctx.tmp, 'nonexistent'))
    check(r.returncode == 1 and r.stderr.startswith('ringtrace: '), repr(r.stderr))
    # Empty stream files (a CPU that recorded nothing) are fine.
    c = ctx.copy(d)
    open(os.path.join(c, 'cpu5'), 'wb').close()
    r = rt('check', c)
    check(r.returncode == 0 and 'cpu5: packets=0 events=0' in r.stdout, r.stdout + r.stderr)


@test
def cli_usage(ctx):
    r = rt('--help')
    check(r.returncode == 0 and 'report' in r.stdout and 'unpack' in r.stdout, r.stdout)
    r = rt('report', '--help')
    check(r.returncode == 0 and 'Usage' in r.stdout, r.stdout)
    r = rt('--version')
    check(r.returncode == 0 and re.match(r'ringtrace \d+\.\d+', r.stdout), r.stdout)
    d, _ = ctx.gen(events=10, cpus=1)
    # Usage errors: exit 2, one line naming the problem and the hint.
    for args, msg in ((['frobnicate'], "unknown command 'frobnicate'"),
                      (['report'], 'a trace directory is needed'),
                      (['report', '--bogus', 'x'], 'unknown option --bogus'),
                      (['report', '--cpu'], '--cpu needs an argument'),
                      (['report', '-e', 'test_scalar', d],
                       "unknown event 'test_scalar' (closest: test_scalars"),
                      (['check', 'a', 'b'], 'one trace directory is needed'),
                      (['stats', 'extra'], 'no arguments are taken')):
        r = rt(*args)
        check(r.returncode == 2 and 'ringtrace' in r.stderr and msg in r.stderr
              and '--help' in r.stderr and r.stderr.count('\n') == 1,
              '%s: %r' % (args, r.stderr))
    r = rt()
    check(r.returncode == 2 and 'command is needed' in r.stderr, 'no-argument usage')


@test
def cli_control_files(ctx):
    debugfs = os.path.join(ctx.tmp, 'debugfs')
    fake = os.path.join(debugfs, 'ringtrace')
    os.makedirs(fake)
    for name, text in (('tracing_on', '1\n'), ('mode', 'discard\n'),
                       ('subbuf_size', '262144\n'), ('num_subbufs', '4\n')):
        open(os.path.join(fake, name), 'w').write(text)
    stats = ''.join('cpu%d written=%d delivered=%d lost_full=%d lost_overrun=0 '
                    'lost_held=0 lost_nested=%d lost_too_big=0 subbufs=%d bytes=%d\n'
                    % (c, 1000 + c, 900, 50 + c, c, 3, 70000) for c in range(2))
    open(os.path.join(fake, 'stats'), 'w').write(stats)
    r = rt('stats', '--debugfs', debugfs)
    check(r.returncode == 0, r.stderr)
    lines = r.stdout.splitlines()
    check(lines[0] == 'tracing_on=1 mode=discard subbuf_size=262144 num_subbufs=4',
          lines[0])
    cols = lines[1].split()
    check(cols[0] == 'written' and cols[-1] == 'in_buffer', lines[1])
    rows = {l.split()[0]: l.split()[1:] for l in lines[2:]}
    check(rows['cpu1'][0] == '1001' and rows['cpu1'][-1] == str(1001 - 900 - 51 - 1),
          'cpu1 row: %s' % rows['cpu1'])
    check(rows['total'][0] == '2001' and rows['total'][-1] == str(50 + 49),
          'total row: %s' % rows['total'])
    r = rt('stop', '-d', debugfs)
    check(r.returncode == 0 and open(os.path.join(fake, 'tracing_on')).read() == '0\n',
          'stop: ' + r.stderr)
    r = rt('start', '-d', debugfs)
    check(r.returncode == 0 and open(os.path.join(fake, 'tracing_on')).read() == '1\n',
          'start: ' + r.stderr)
    r = rt('start', '-d', os.path.join(ctx.tmp, 'nope'))
    check(r.returncode == 1 and 'debugfs is not mounted there' in r.stderr,
          repr(r.stderr))
    r = rt('stats', '-d', os.path.join(ctx.tmp, 'nope'))
    check(r.returncode == 1 and 'ringtrace: ' in r.stderr, repr(r.stderr))


# ---- export -f lttng ---------------------------------------------------------

LTTNG_CHECK = os.path.join(HERE, 'lttng_check.py')

# The layouts of module/probes.c's and statedump.c's events, by name
# (Documentation/ringtrace/events.rst); the export tests pick their events
# and ids from here.  sched_waking's is the one recorded before waker_ctx
# (SCHED_WAKING_CTX below: today's), which readers still take.
MODULE_LAYOUTS = {
    'sched_switch': SCHED_SWITCH,
    'sched_wakeup': [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                     ('int32_t', 'prio', None), ('int32_t', 'target_cpu', None)],
    'sched_waking': [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                     ('int32_t', 'prio', None), ('int32_t', 'target_cpu', None)],
    'sched_process_fork': [('utf8_t', 'parent_comm', 16), ('int32_t', 'parent_tid', None),
                           ('int32_t', 'parent_pid', None), ('utf8_t', 'child_comm', 16),
                           ('int32_t', 'child_tid', None), ('int32_t', 'child_pid', None)],
    'sched_process_exec': [('int32_t', 'tid', None), ('int32_t', 'old_tid', None),
                           ('uint16_t', 'filename_len', None),
                           ('utf8_t', 'filename', 'filename_len')],
    'sched_process_exit': [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                           ('int32_t', 'prio', None)],
    'sched_process_free': [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                           ('int32_t', 'prio', None)],
    'sched_migrate_task': [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                           ('int32_t', 'prio', None), ('int32_t', 'orig_cpu', None),
                           ('int32_t', 'dest_cpu', None)],
    'irq_handler_entry': [('int32_t', 'irq', None), ('uint16_t', 'name_len', None),
                          ('utf8_t', 'name', 'name_len')],
    'irq_handler_exit': [('int32_t', 'irq', None), ('int32_t', 'ret', None)],
    'irq_softirq_entry': [('uint32_t', 'vec', None)],
    'irq_softirq_exit': [('uint32_t', 'vec', None)],
    'syscall_entry': [('int32_t', 'id', None), ('uint8_t', 'nr_args', None),
                      ('uint64_t', 'args', 'nr_args')],
    'syscall_exit': [('int32_t', 'id', None), ('int64_t', 'ret', None)],
    'ringtrace_statedump_task': [('int32_t', 'tid', None), ('int32_t', 'pid', None),
                                 ('int32_t', 'ppid', None), ('utf8_t', 'comm', 16)],
    'ringtrace_statedump_cpu': [('int32_t', 'tid', None), ('int32_t', 'pid', None),
                                ('utf8_t', 'comm', 16)],
    'task_rename': [('int32_t', 'tid', None), ('utf8_t', 'oldcomm', 16),
                    ('utf8_t', 'newcomm', 16), ('int16_t', 'oom_score_adj', None)],
}

SCHED_WAKING_CTX = MODULE_LAYOUTS['sched_waking'] + [('uint8_t', 'waker_ctx', None)]


def sys_entry(nr, *args):
    """A syscall_entry payload: the call's number and its arguments."""
    return struct.pack('<iB%dQ' % len(args), nr, len(args), *args)


def sys_exit(nr, ret):
    """A syscall_exit payload: the call's number and its return value."""
    return struct.pack('<iq', nr, ret)


# The module's events the LTTng export tests record.
KERNEL_EVENTS = [gentrace.EVENTS[0]] + [(i, n, MODULE_LAYOUTS[n]) for i, n in (
    (1, 'sched_switch'), (2, 'sched_wakeup'), (4, 'sched_process_fork'),
    (5, 'sched_process_exec'), (7, 'irq_handler_entry'), (8, 'irq_handler_exit'),
    (9, 'irq_softirq_entry'), (10, 'irq_softirq_exit'), (11, 'syscall_entry'),
    (12, 'syscall_exit'), (13, 'ringtrace_statedump_task'), (14, 'ringtrace_statedump_cpu'),
    (15, 'task_rename'),
)]
SYSCALL_ENUM = 'enum : int32_t { "read" = 0, "stat" = 4, "getppid" = 110 } id;'


def kpacket(uuid, cpu, seq, events, begin, end, discarded=0):
    """A packet of (time, id, payload) events with extended headers."""
    body = b''.join(struct.pack('<IQ', 31 | eid << 5, ts) + payload
                    for ts, eid, payload in events)
    size = HEADER.size + len(body)
    return HEADER.pack(0xC1FC1FC1, uuid, 0, cpu, begin, end, size * 8, size * 8,
                       seq, discarded, cpu, len(events)) + body


def kernel_trace(d, streams, wide_ids=False):
    """A trace of KERNEL_EVENTS, the system call ids an enum as the
    module declares them; streams: {cpu: [(begin, end, discarded, events)]}.
    wide_ids: the ids declared 64 bits wide, as traces before the 32-bit
    id recorded them (the payloads must be laid out so)."""
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    meta = gentrace.metadata(uuid, 1700000000, 500000000, KERNEL_EVENTS)
    enum = SYSCALL_ENUM.replace('int32_t', 'int64_t') if wide_ids else SYSCALL_ENUM
    meta = meta.replace('fields := struct { int32_t id;',
                        'fields := struct { %s' % enum)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta)
    for cpu, packets in streams.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            for seq, (b, e, disc, evs) in enumerate(packets):
                f.write(kpacket(uuid, cpu, seq, evs, b, e, disc))
    return d


def comm(s):
    return s.encode().ljust(16, b'\0')



# ---- seeking: time indexes (lib/chunk_index.c, tools/lib/seek.c) ----------------

def stored_chunk(packets):
    """Packets as ringtraced's drain thread writes them: a stored frame
    each (lib/chunk.h: 4-byte content size, raw blocks, no checksum)."""
    out = b''
    for data in packets:
        out += struct.pack('<IBI', 0xFD2FB528, 0xA0, len(data))
        blocks = [data[i:i + 131072] for i in range(0, len(data), 131072)] or [b'']
        for i, b in enumerate(blocks):
            out += struct.pack('<I', len(b) << 3 | (i == len(blocks) - 1))[:3] + b
    return out


SEEK_T0 = 5 * 10**9             # the first packet's time
SEEK_PACKET_NS = 10**6          # each packet covers 1 ms


def seek_trace(d, cpus=2, files=3, packets=60, per_packet=12, plain=False,
               quiet=None, dump=False):
    """A kernel trace whose threads change (sched_switch), with losses
    (events_discarded grows, sequence numbers skip), as rotated stored
    chunks cpuN-K.zst (or plain cpuN-K files): files x packets packets a
    CPU, the CPUs' packets interleaved in time.  quiet=(cpu, a, b): that
    CPU switches no thread in its packets a..b-1 (one thread runs alone);
    dump: each CPU's first event is its state dump's (its first thread)."""
    uuid = bytes(range(16, 32))
    os.makedirs(d)
    meta = gentrace.metadata(uuid, 1700000000, 500000000, KERNEL_EVENTS)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta.replace('fields := struct { int32_t id;',
                             'fields := struct { %s' % SYSCALL_ENUM))
    rng = random.Random(7)
    for cpu in range(cpus):
        seq = disc = 0
        tid = 100 + cpu
        for k in range(files):
            pk = []
            for p in range(packets):
                n = k * packets + p
                begin = SEEK_T0 + n * SEEK_PACKET_NS + cpu * 1000
                step = SEEK_PACKET_NS // (per_packet + 1)
                evs = []
                for i in range(per_packet):
                    ts = begin + (i + 1) * step
                    alone = quiet and cpu == quiet[0] and quiet[1] <= n < quiet[2]
                    if dump and n == 0 and i == 0:
                        evs.append((ts, 14, struct.pack('<ii', tid, tid) + comm('task%d' % tid)))
                    elif i % 5 == 0 and not alone:
                        nxt = 100 + rng.randrange(20)
                        evs.append((ts, 1, kswitch('task%d' % tid, tid, 'task%d' % nxt, nxt)))
                        tid = nxt
                    elif i % 3 == 0:
                        evs.append((ts, 11, sys_entry(110)))
                    else:
                        evs.append((ts, 0, marker(b'c%d p%d e%d' % (cpu, n, i))))
                # Losses (none while one thread runs alone: a loss makes
                # the CPU's thread unknown until its next switch).
                alone = quiet and cpu == quiet[0] and quiet[1] <= n < quiet[2]
                if n % 7 == 3 and not alone:
                    disc += 3
                if n % 11 == 5 and not alone:
                    seq += 1    # a packet overwritten
                pk.append(kpacket(uuid, cpu, seq, evs, begin,
                                  begin + SEEK_PACKET_NS - 1, disc))
                seq += 1
            name = 'cpu%d-%06d' % (cpu, k + 1)
            with open(os.path.join(d, name if plain else name + '.zst'), 'wb') as f:
                f.write(b''.join(pk) if plain else stored_chunk(pk))
    return d


def seek_secs(ns):
    return '%d.%09d' % (ns // 10**9, ns % 10**9)


# (begin, end) in ns: the start, the middle, the end, spanning files,
# empty (between two packets of every CPU... none: after the trace), one
# bound only.
SEEK_WINDOWS = [
    (SEEK_T0 - 5000, SEEK_T0 + 2500000),
    (SEEK_T0 + 30 * SEEK_PACKET_NS + 123456, SEEK_T0 + 33 * SEEK_PACKET_NS),
    (SEEK_T0 + 175 * SEEK_PACKET_NS, SEEK_T0 + 400 * SEEK_PACKET_NS),
    (SEEK_T0 + 55 * SEEK_PACKET_NS, SEEK_T0 + 125 * SEEK_PACKET_NS + 777),
    (SEEK_T0 + 500 * SEEK_PACKET_NS, SEEK_T0 + 600 * SEEK_PACKET_NS),
    (SEEK_T0 + 90 * SEEK_PACKET_NS + 1, None),
    (None, SEEK_T0 + 12 * SEEK_PACKET_NS),
]


def window_args(b, e):
    return ((['--begin', seek_secs(b)] if b is not None else []) +
            (['--end', seek_secs(e)] if e is not None else []))


def rt_env(env, *args, asan=True):
    r = run([RINGTRACE_ASAN if asan else RINGTRACE] + [str(a) for a in args],
            env=dict(os.environ, **env))
    r.stderr = re.sub(r'^ringtrace [a-z]+: ', 'ringtrace: ', r.stderr, flags=re.M)
    return r


def same_window(d, b, e, *extra, notes=None, status=0):
    """report of a window seeking (the index) and by a full pass print the
    same bytes; returns the seeking run."""
    a = window_args(b, e) + list(extra)
    full = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *a, d)
    seek = rt_env({}, 'report', *a, d)
    for r in (full, seek):
        check(r.returncode == status and 'runtime error' not in r.stderr,
              'report %s exit %d: %s' % (' '.join(a), r.returncode, r.stderr[-1500:]))
    check(seek.stdout == full.stdout,
          'report %s of %s: seeking prints %d lines, a full pass %d; first difference:\n%s' %
          (' '.join(a), os.path.basename(d), len(seek.stdout.splitlines()),
           len(full.stdout.splitlines()),
           next(('  seek %s\n  full %s' % (x, y) for x, y in
                 zip(seek.stdout.splitlines(), full.stdout.splitlines()) if x != y),
                '(one is a prefix of the other)')))
    if notes is not None:
        got = [l for l in seek.stderr.splitlines() if 'note: ' in l]
        check(len(got) == len(notes) and all(n in g for n, g in zip(notes, got)),
              'notes %s, expected %s' % (got, notes))
    return seek


def index_of(path):
    """(data bytes, entries) of a packed chunk's index frame, or None."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 40 or data[-4:] != b'RTIX':
        return None
    dbytes, content, xx, n, esize, ver = struct.unpack('<QQQIII', data[-40:-4])
    ents = [struct.unpack('<QQQQ', data[dbytes + 8 + 32 * i:dbytes + 40 + 32 * i])
            for i in range(n)]
    return dbytes, ents


def packed_trace(ctx, name='packed', frame='4K', **kw):
    d = seek_trace(os.path.join(ctx.tmp, name), **kw)
    r = rt('compress', '--frame-size', frame, '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


@test
def seek_index_written_by_the_packer(ctx):
    """A packed chunk ends with its time index: every frame's offsets and
    times, read back from the frames themselves; zstd -d and babeltrace2
    (after unpack) never see it."""
    d = packed_trace(ctx)
    path = os.path.join(d, 'cpu1-000002.zst')
    ix = index_of(path)
    check(ix is not None, 'the packed chunk has no index frame at its end')
    dbytes, ents = ix
    check(len(ents) > 5, 'only %d index entries for 60 packets in 4K frames' % len(ents))
    plain = subprocess.run(['zstd', '-dc', path], stdout=subprocess.PIPE,
                           check=True).stdout
    with open(path, 'rb') as f:
        whole = f.read()
    for i, (coff, uoff, tb, te) in enumerate(ents):
        check(whole[coff:coff + 4] == b'\x28\xb5\x2f\xfd', 'entry %d: no frame at %d' % (i, coff))
        check(hdr_get(plain, uoff, 'begin') == tb, 'entry %d: timestamp_begin differs' % i)
        nxt = ents[i + 1][1] if i + 1 < len(ents) else len(plain)
        last = [o for o in packets_of(plain) if uoff <= o < nxt][-1]
        check(hdr_get(plain, last, 'end') == te, 'entry %d: timestamp_end differs' % i)
    out = d + '-ctf'
    r = rt('unpack', d, asan=True)
    check(r.returncode == 0, 'unpack: ' + r.stderr)
    events, _ = bt2(out)
    check(len(events) == 2 * 3 * 60 * 12,
          'babeltrace2 reads %d events of the unpacked trace' % len(events))
    # zstd -d of the chunks in place: the hidden-free plain stream reads too.
    z = ctx.copy(d)
    for n in os.listdir(z):
        if n.endswith('.zst'):
            subprocess.run(['zstd', '-q', '-d', '--rm', os.path.join(z, n)], check=True)
    events, _ = bt2(z)
    check(len(events) == 2 * 3 * 60 * 12,
          'babeltrace2 reads %d events after zstd -d' % len(events))


@test
def seek_windows_equal_a_full_pass(ctx):
    """report --begin/--end (and --stat) prints the same bytes seeking with
    the indexes as reading the whole trace, for windows at the start, the
    middle, the end, spanning chunks, empty, open on one side: on packed
    chunks (their own index), on packed chunks whose index was cut off and
    on stored chunks (an index built in memory), and on plain files."""
    packed = packed_trace(ctx)
    cut = ctx.copy(packed)
    for n in os.listdir(cut):
        p = os.path.join(cut, n)
        if n.endswith('.zst'):
            os.truncate(p, index_of(p)[0])
    stored = seek_trace(os.path.join(ctx.tmp, 'stored'))
    plain = seek_trace(os.path.join(ctx.tmp, 'plain'), plain=True)
    for d in (packed, cut, stored, plain):
        for b, e in SEEK_WINDOWS:
            r = same_window(d, b, e, notes=[])
            lines = [l for l in r.stdout.splitlines() if l.startswith('[')]
            if b is not None and b >= SEEK_T0 + 500 * SEEK_PACKET_NS:
                check(not lines, 'an empty window printed %d lines' % len(lines))
            else:
                check(lines, 'window %s..%s printed nothing' % (b, e))
            check(b is None or 'before the first packet' not in r.stdout,
                  'window %s..%s: its first packet counted as the first of the trace' % (b, e))
        same_window(d, *SEEK_WINDOWS[1], '--stat')
        same_window(d, *SEEK_WINDOWS[3], '-e', 'sched_switch', '--cpu', '1')
    # What a window holds: its events, and the losses reported in it.
    r = same_window(packed, *SEEK_WINDOWS[3])
    ev = [l for l in r.stdout.splitlines() if l.startswith('[') and ' -- lost ' not in l]
    lost = [l for l in r.stdout.splitlines() if ' -- lost ' in l]
    b, e = SEEK_WINDOWS[3]
    want = [(cpu, n) for cpu in range(2) for n in range(500)
            if b <= SEEK_T0 + n * SEEK_PACKET_NS + cpu * 1000 <= e and
            (n % 7 == 3 or n % 11 == 5)]
    check(len(ev) == 2 * 70 * 12 and len(lost) == len(want),
          '%d events and %d loss lines, expected %d and %d' %
          (len(ev), len(lost), 2 * 70 * 12, len(want)))


def same_export(d, b, e, fmt):
    """export -f FMT of a window seeking and by a full pass write the same
    bytes; returns them."""
    a = window_args(b, e)
    outs = []
    for env in ({'RINGTRACE_SEEK': '0'}, {}):
        out = d + '.%s-%d' % (fmt, len(outs))
        r = rt_env(env, 'export', '-f', fmt, '-o', out, *a, d)
        check(r.returncode == 0 and 'runtime error' not in r.stderr,
              'export -f %s %s: %d %s' % (fmt, ' '.join(a), r.returncode, r.stderr[-1500:]))
        with open(out, 'rb') as f:
            outs.append(f.read())
    check(outs[0] == outs[1] and outs[1],
          'export -f %s %s of %s: seeking writes %d bytes, a full pass %d' %
          (fmt, ' '.join(a), os.path.basename(d), len(outs[1]), len(outs[0])))
    return outs[1]


@test
def seek_one_thread_for_frames(ctx):
    """A CPU that ran one thread alone for whole frames before the window
    (no sched_switch in the frame before it): report and export of the
    window name that thread as a full pass does, read from the frame of
    the CPU's last switch (packed, stored and plain traces)."""
    b, e = SEEK_T0 + 100 * SEEK_PACKET_NS + 5, SEEK_T0 + 105 * SEEK_PACKET_NS
    quiet = (0, 20, 110)
    packed = packed_trace(ctx, 'alone', quiet=quiet)
    # Frames of 4K (12 packets): whole frames of cpu0 without a switch
    # before the window, in both files before it.
    ents = [en for k in (1, 2) for en in
            index_of(os.path.join(packed, 'cpu0-%06d.zst' % k))[1]]
    check(sum(1 for en in ents if SEEK_T0 + 20 * SEEK_PACKET_NS < en[2] and
              en[3] < b) > 4, 'cpu0: not whole frames without a switch before the window')
    stored = seek_trace(os.path.join(ctx.tmp, 'alone-stored'), quiet=quiet)
    plain = seek_trace(os.path.join(ctx.tmp, 'alone-plain'), plain=True, quiet=quiet)
    for d in (packed, stored, plain):
        r = same_window(d, b, e, notes=[])
        cpu0 = [l for l in r.stdout.splitlines()
                if l.startswith('[') and ' cpu0 ' in l and ' -- lost ' not in l]
        check(len(cpu0) == 5 * 12 and all(re.match(r'^\[[0-9.]+\] cpu0 task1[01][0-9]-1[01][0-9] ', l)
                                          for l in cpu0),
              '%s: cpu0 of the window: %d lines, not all of a named thread: %s' %
              (os.path.basename(d), len(cpu0), cpu0[:2]))
        same_window(d, b, e, '--cpu', '0', '-e', 'syscall_*')
        for fmt in ('systrace', 'chrome-json', 'perfetto'):
            same_export(d, b, e, fmt)
    # A damaged frame before the window is not read: its thread table
    # says what it told (the window sees no damage; a full pass does).
    cut = ctx.copy(packed)
    path = os.path.join(cut, 'cpu0-000002.zst')
    ents = index_of(path)[1]
    with open(path, 'r+b') as f:
        f.seek(ents[2][0] + 40)
        c = f.read(1)
        f.seek(ents[2][0] + 40)
        f.write(bytes([c[0] ^ 0xff]))
    seek = rt_env({}, 'report', '--strict', *window_args(b, e), cut)
    cpu0 = [l for l in seek.stdout.splitlines()
            if l.startswith('[') and ' cpu0 ' in l and ' -- lost ' not in l]
    check(seek.returncode == 0 and not seek.stderr and len(cpu0) == 5 * 12 and
          all(re.match(r'^\[[0-9.]+\] cpu0 task1[01][0-9]-1[01][0-9] ', l) for l in cpu0),
          'a damaged frame before the window: %d %s %s' %
          (seek.returncode, seek.stderr[-500:], cpu0[:2]))
    full = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *window_args(b, e), cut)
    check(full.returncode == 3, 'a full pass did not see the damage: %d' % full.returncode)
    # A CPU that never switched: the thread of its state dump, read from
    # its first frame (within the 16 MiB the search goes back).
    never = packed_trace(ctx, 'never', quiet=(0, 0, 180), dump=True)
    r = same_window(never, b, e, notes=[])
    cpu0 = [l for l in r.stdout.splitlines()
            if l.startswith('[') and ' cpu0 ' in l and ' -- lost ' not in l]
    check(len(cpu0) == 5 * 12 and all(' cpu0 task100-100 ' in l for l in cpu0),
          'never: cpu0 of the window: %d lines, not all of its dump\'s thread: %s' %
          (len(cpu0), cpu0[:2]))
    # Chunk sets: the last switch is in the first set, which the window
    # leaves unopened unless the CPU's thread is looked for there.
    sets = seek_sets(ctx, packed, 'alone-set')[::-1]
    a = window_args(b, e)
    full = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *a, *sets)
    seek = rt_env({}, 'report', *a, *sets)
    check(full.returncode == 0 and seek.returncode == 0 and seek.stdout == full.stdout and
          not re.search(r'^\[[0-9.]+\] cpu0 - ', seek.stdout, re.M),
          'the sets: seeking %d, full %d, %s' % (seek.returncode, full.returncode,
                                                 seek.stderr[-500:]))


@test
def seek_reads_only_the_window(ctx):
    """A window is read from its frames only: damage in a frame far from it
    is seen by a full pass, not by report --begin/--end (nor is the chunk
    set of a chunk outside the window opened)."""
    d = packed_trace(ctx)
    path = os.path.join(d, 'cpu0-000001.zst')
    dbytes, ents = index_of(path)
    with open(path, 'r+b') as f:
        f.seek(ents[2][0] + 40)
        b = f.read(1)
        f.seek(ents[2][0] + 40)
        f.write(bytes([b[0] ^ 0xff]))
    a = window_args(*SEEK_WINDOWS[2])
    full = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *a, d)
    seek = rt_env({}, 'report', *a, d)
    check(full.returncode == 3 and 'damaged' in full.stderr,
          'a full pass did not see the damaged frame: %d %s' % (full.returncode, full.stderr))
    check(seek.returncode == 0 and 'damaged' not in seek.stderr,
          'the window read the damaged frame far before it: %d %s' % (seek.returncode, seek.stderr))
    check(seek.stdout == full.stdout, 'the window differs from the full pass')


@test
def seek_bad_indexes(ctx):
    """An index that is corrupt, cut, another file's, or that lies about
    its frames' times (a good checksum) is ignored with a note, and the
    window is what a full pass prints (ASan build)."""
    d = packed_trace(ctx)
    name = 'cpu0-000002.zst'
    path = os.path.join(d, name)
    with open(path, 'rb') as f:
        good = f.read()
    dbytes, ents = index_of(path)
    win = SEEK_WINDOWS[3]

    def put(data):
        with open(path, 'wb') as f:
            f.write(data)

    # A flipped bit in an entry: its checksum.
    bad = bytearray(good)
    bad[dbytes + 8 + 32 + 17] ^= 0x10
    put(bytes(bad))
    same_window(d, *win, notes=['%s: its time index is ignored (its checksum does not match its entries): built from its frames' % name])
    # Cut in the middle of the index: no footer, a frame cut short (damage
    # at the end of the chunk, which the window reads to its end).
    put(good[:dbytes + 50])
    same_window(d, *win, notes=['%s: cannot be indexed' % name])
    # Another chunk's index: its sizes are not this file's.
    with open(os.path.join(d, 'cpu1-000002.zst'), 'rb') as f:
        other = f.read()
    odb = index_of(os.path.join(d, 'cpu1-000002.zst'))[0]
    put(good[:dbytes] + other[odb:])
    same_window(d, *win, notes=['%s: its time index is ignored (its sizes disagree' % name])
    # Times that lie, with a checksum that matches: the frame says otherwise.
    ents2 = [(c, u, tb + 3 * SEEK_PACKET_NS, te + 3 * SEEK_PACKET_NS) if i else (c, u, tb, te)
             for i, (c, u, tb, te) in enumerate(ents)]
    body = b''.join(struct.pack('<QQQQ', *e) for e in ents2)
    foot = good[-40:]
    foot = foot[:16] + struct.pack('<Q', xxh64(body)) + foot[24:]
    put(good[:dbytes + 8] + body + foot)
    same_window(d, SEEK_T0 + 62 * SEEK_PACKET_NS, SEEK_T0 + 70 * SEEK_PACKET_NS,
                notes=['%s: its time index does not match the frame' % name])
    # Garbage where the index is, ending in the footer's tag: damage at the
    # end of the chunk (which the window reads to its end), and no index.
    put(good[:dbytes] + b'\xff' * 100 + b'RTIX')
    r = same_window(d, *win, status=3)
    check('note: ' in r.stderr, 'no note for a garbage index: ' + r.stderr)


def seek_sets(ctx, d, prefix='set'):
    """The packed chunks K of the 2-CPU trace @d as chunk sets K, each with
    its manifest."""
    sets = []
    for k in range(1, 4):
        s = os.path.join(ctx.tmp, '%s%d' % (prefix, k))
        os.makedirs(s)
        shutil.copy(os.path.join(d, 'metadata'), s)
        cpus, files = [], []
        for cpu in range(2):
            n = 'cpu%d-%06d.zst' % (cpu, k)
            shutil.copy(os.path.join(d, n), s)
            plain = subprocess.run(['zstd', '-dc', os.path.join(s, n)],
                                   stdout=subprocess.PIPE, check=True).stdout
            pk = list(packets_of(plain))
            cpus.append({'cpu': cpu, 'file': n, 'packets': len(pk), 'events': 60 * 12,
                         'events_lost': 0,
                         'first_timestamp': hdr_get(plain, pk[0], 'begin'),
                         'last_timestamp': hdr_get(plain, pk[-1], 'end')})
            files.append({'name': n, 'size': os.path.getsize(os.path.join(s, n)),
                          'xxh64': file_xxh64(os.path.join(s, n))})
        with open(os.path.join(s, 'manifest.json'), 'w') as f:
            json.dump({'format': 'ringtrace-chunk-set', 'format_version': 1,
                       'host': 'h', 'boot_id': 'b', 'trace': 't',
                       'trace_uuid': '10111213-1415-1617-1819-1a1b1c1d1e1f',
                       'sequence': k, 'clock': {'realtime_offset_ns': 0},
                       'cpus': cpus, 'files': files}, f)
        sets.append(s)
    return sets


@test
def seek_chunk_sets(ctx):
    """Chunk sets given together: a window reads the sets that can hold it
    (their manifests' first timestamps), and prints what a full pass does."""
    d = packed_trace(ctx)
    sets = seek_sets(ctx, d)
    for b, e in SEEK_WINDOWS:
        a = window_args(b, e)
        full = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *a, *sets[::-1])
        seek = rt_env({}, 'report', *a, *sets[::-1])
        check(full.returncode == 0 and seek.returncode == 0,
              'report of the sets: %s %s' % (full.stderr, seek.stderr))
        check(seek.stdout == full.stdout, 'window %s..%s of the sets differs' % (b, e))
    # A window at the end reads no data frame of the first set, only its
    # chunks' thread tables: noise in every frame of its chunk (the
    # tables and indexes kept) is damage to a full pass, not to the window.
    first = os.path.join(sets[0], 'cpu0-000001.zst')
    dbytes, ents = index_of(first)
    noise = random.Random(3)
    with open(first, 'r+b') as f:
        for coff, _, _, _ in ents:
            f.seek(coff + 4)
            f.write(noise.randbytes(32))
    r = rt_env({}, 'report', *window_args(*SEEK_WINDOWS[2]), *sets)
    check(r.returncode == 0 and not r.stderr,
          'a window at the end read the first set\'s frames: %d %s' % (r.returncode, r.stderr))
    r = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *window_args(*SEEK_WINDOWS[2]), *sets)
    check(r.returncode == 3, 'a full pass read past the noise unseen: %d %s' % (r.returncode, r.stderr))


@test
def seek_export_window(ctx):
    """export --begin/--end: each format writes the same bytes seeking with
    the indexes as reading the whole trace, only events of the window (and
    as many as report prints of it), and reads only the window's frames:
    damage far before it is not seen.  Bad times are usage errors."""
    d = packed_trace(ctx)
    for b, e in (SEEK_WINDOWS[1], SEEK_WINDOWS[3], SEEK_WINDOWS[5]):
        a = window_args(b, e)
        for fmt in ('systrace', 'chrome-json', 'perfetto'):
            same_export(d, b, e, fmt)
        # systrace: a line per event of a known thread, all in the window.
        r = rt_env({}, 'export', '-f', 'systrace', *a, d)
        times = [int(m.group(1)) * 10**9 + int(m.group(2)) for m in
                 re.finditer(r'^ *\S.*? +([0-9]+)\.([0-9]{9}): ', r.stdout, re.M)]
        check(times and (b is None or min(times) >= b) and (e is None or max(times) <= e),
              'export %s: %d lines, times %s..%s' %
              (' '.join(a), len(times), min(times, default=None), max(times, default=None)))
        rep = rt_env({}, 'report', *a, d)
        events = [l for l in rep.stdout.splitlines()
                  if l.startswith('[') and ' -- lost ' not in l]
        known = [l for l in events if not re.match(r'^\[[0-9.]+\] cpu[0-9]+ - ', l)]
        check(len(times) == len(known),
              'export %s: %d systrace lines, report has %d events of known threads' %
              (' '.join(a), len(times), len(known)))
    # Damage in a frame far before the window: a full pass sees it.
    path = os.path.join(d, 'cpu0-000001.zst')
    dbytes, ents = index_of(path)
    with open(path, 'r+b') as f:
        f.seek(ents[2][0] + 40)
        c = f.read(1)
        f.seek(ents[2][0] + 40)
        f.write(bytes([c[0] ^ 0xff]))
    a = window_args(*SEEK_WINDOWS[2])
    full = rt_env({'RINGTRACE_SEEK': '0'}, 'export', '-f', 'systrace', *a, d)
    seek = rt_env({}, 'export', '-f', 'systrace', *a, d)
    check(full.returncode == 3 and seek.returncode == 0 and seek.stdout == full.stdout,
          'damage before the window: full pass %d, seeking %d (%s)' %
          (full.returncode, seek.returncode, seek.stderr[-500:]))
    for bad, msg in ((['--begin', 'soon'], 'neither +DURATION nor seconds'),
                     (['--begin', '+1s', '--end', '+0.5s'], '--end is before --begin')):
        r = rt_env({}, 'export', '-f', 'systrace', *bad, d)
        check(r.returncode == 2 and msg in r.stderr and len(r.stderr.splitlines()) == 1,
              'export %s: %d %s' % (' '.join(bad), r.returncode, r.stderr))


# ---- user_mmap (module/mmap.c) -------------------------------------------------

def module_fields(path, macro):
    """The TSDL fields a module source declares in MACRO (its C string)."""
    with open(os.path.join(REPO, path)) as f:
        src = f.read()
    m = re.search(r'#define %s\b(.*?)\n\n' % macro, src, re.S)
    check(m, '%s not found in %s' % (macro, path))
    return ''.join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))


MMAP_ID = 21
# The generator's own layout of the event; the metadata gets the module's.
MMAP_FIELDS = [('int32_t', 'pid', None), ('uint32_t', 'flags', None),
               ('uint64_t', 'start', None), ('uint64_t', 'end', None),
               ('uint64_t', 'pgoff', None), ('uint64_t', 'dev', None),
               ('uint64_t', 'ino', None), ('uint8_t', 'build_id_len', None),
               ('uint8_t', 'build_id', 'build_id_len'),
               ('uint16_t', 'path_len', None), ('utf8_t', 'path', 'path_len')]


def user_mmap(pid, flags, start, end, pgoff, bid, path):
    p = path.encode()
    return (struct.pack('<iIQQQQQB', pid, flags, start, end, pgoff, 0x801, 1234,
                        len(bid)) + bid + struct.pack('<H', len(p)) + p)


@test
def user_mmap_printed(ctx):
    """report prints user_mmap as the module declares it: addresses in hex,
    the build-id as one hex string (none: empty), the path; babeltrace2
    reads the same events."""
    d = os.path.join(ctx.tmp, 'umap')
    bid = bytes.fromhex('3a4f0011deadbeef00112233445566778899aabb')
    write_trace(d, [gentrace.EVENTS[0], (MMAP_ID, 'user_mmap', MMAP_FIELDS)], [[
        (1000, MMAP_ID, user_mmap(42, 1, 0x7f0000001000, 0x7f0000003000, 0x1000,
                                  bid, '/usr/lib/libx.so')),
        (2000, MMAP_ID, user_mmap(42, 0xa, 0x7f0000004000, 0x7f0000005000, 0,
                                  b'', '')),
    ]])
    meta = os.path.join(d, 'metadata')
    with open(meta) as f:
        text = f.read()
    ours = gentrace.tsdl_fields(MMAP_FIELDS)
    check(ours in text, 'the generator declares user_mmap as %s' % ours)
    with open(meta, 'w') as f:
        f.write(text.replace(ours, module_fields('module/mmap.c',
                                                 'RTR_USER_MMAP_FIELDS')))
    r = rt('report', d, asan=True)
    clean_run(r, 'report of user_mmap')
    lines = [l for l in r.stdout.splitlines() if ' user_mmap: ' in l]
    check(len(lines) == 2, 'two user_mmap lines: %s' % r.stdout)
    check(lines[0].endswith(
        'user_mmap: pid=42, flags=1, start=0x7f0000001000, end=0x7f0000003000, '
        'pgoff=0x1000, dev=2049, ino=1234, build_id_len=20, '
        'build_id=3a4f0011deadbeef00112233445566778899aabb, path_len=16, '
        'path="/usr/lib/libx.so"'), 'the first: %s' % lines[0])
    check(lines[1].endswith('build_id_len=0, build_id=, path_len=0, path=""'),
          'the second, no build-id nor path: %s' % lines[1])
    events, _ = bt2(d)
    check([e[2] for e in events] == ['user_mmap', 'user_mmap'],
          'babeltrace2 reads: %s' % events)


# ---- kernel stacks (module/stack.c, lib/ksyms.c, tools/cli/stacks.c) ----------

STACK_ID = 19
STACK_EVENTS = [gentrace.EVENTS[0], (1, 'sched_switch', SCHED_SWITCH),
                (STACK_ID, 'kernel_stack', [('uint16_t', 'depth', None),
                                            ('uint64_t', 'ips', 'depth')])]
KTEXT = 0xffffffff9a000000              # a KASLR'd _text
KMOD = 0xffffffffc0a10000               # ringtrace.ko's base
# The recording machine's symbols, as ringtraced keeps them (lib/ksyms.h).
# Each symbol's delta from the one before (the first: from the base).
KSYMS = ('ringtrace-ksyms 1\nK %x\n0 _text\n1000 entry_SYSCALL_64\n'
         '1000 schedule\n100 do_nanosleep\n6f00 _etext\n'
         'M ringtrace %x 8000\n400 rtr_pid_filter_set\n') % (KTEXT, KMOD)


def kswitch(prev, ptid, nxt, ntid):
    return (comm(prev) + struct.pack('<iiq', ptid, 120, 1) + comm(nxt) +
            struct.pack('<ii', ntid, 120))


def kstack(*ips):
    return struct.pack('<H', len(ips)) + b''.join(struct.pack('<Q', i) for i in ips)


def hex_ips(d, ksyms=None):
    """The stacks' ips of trace @d declared as the module declares them
    (hex), and its symbols file (zstd): @ksyms text or raw bytes, or none
    (None)."""
    meta = os.path.join(d, 'metadata')
    with open(meta) as f:
        text = f.read()
    with open(meta, 'w') as f:
        f.write(text.replace('uint64_t ips[depth];', 'integer { size = 64; '
                             'align = 8; signed = false; base = 16; } ips[depth];'))
    if ksyms is not None:
        with open(os.path.join(d, '.ringtrace-ksyms.zst'), 'wb') as f:
            f.write(raw_zstd_frame(ksyms.encode()) if isinstance(ksyms, str) else ksyms)
    return d


def hex_stack_trace(d, evdefs, events, ksyms=KSYMS):
    """write_trace() of @events in one stream, with kernel_stack and
    user_stack declared as the module declares them (ips hex), and its
    symbols file (zstd): KSYMS, or none (None), or these raw bytes."""
    write_trace(d, evdefs, [events])
    return hex_ips(d, ksyms)


def stack_trace(d, events, ksyms=KSYMS):
    """A trace of STACK_EVENTS, the module's kernel_stack TSDL, and its
    symbols file (zstd): KSYMS, or none (None), or these raw bytes."""
    return hex_stack_trace(d, STACK_EVENTS, events, ksyms)


# sleeper (tid 100) switches out in do_nanosleep at 1000 through ringtrace.ko,
# runs again at 5000; then in do_nanosleep alone at 6000, back at 6500.
STACK_LEAF = (KTEXT + 0x2010, KTEXT + 0x2134, KMOD + 0x424, KTEXT + 0x1008)
STACK_EVENTS_OF_A_RUN = [
    (1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (1000, STACK_ID, kstack(*STACK_LEAF)),
    (5000, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (6000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (6000, STACK_ID, kstack(KTEXT + 0x2010, KTEXT + 0x2134, KTEXT + 0x1008,
                           KTEXT + 0x9000 + 0x10)),
    (6500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
]


# A third switch-out with the first stack; the stacks' frames, leaf first,
# as the exports name them ("function [module or vmlinux]").
STACK_EVENTS_AGAIN = STACK_EVENTS_OF_A_RUN + [
    (7000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (7000, STACK_ID, kstack(*STACK_LEAF)),
]
# A switch-out of 'waiter' (200) where the CPU, as followed, runs the idle
# task (the switch in lost): the stack is still the prev's.
STACK_EVENTS_PREV = STACK_EVENTS_AGAIN + [
    (8000, 1, kswitch('waiter', 200, 'swapper/0', 0)),
    (8000, STACK_ID, kstack(*STACK_LEAF)),
]
STACK_NAMES = [
    ['schedule [vmlinux]', 'do_nanosleep [vmlinux]',
     'rtr_pid_filter_set [ringtrace]', 'entry_SYSCALL_64 [vmlinux]'],
    ['schedule [vmlinux]', 'do_nanosleep [vmlinux]',
     'entry_SYSCALL_64 [vmlinux]', '0x%x [vmlinux]' % (KTEXT + 0x9010)],
]


@test
def stacks_named_from_the_trace(ctx):
    """report names frames from the trace's symbols, not the running
    kernel's: function+0xoff, [module] for a module, 0xADDR past _etext."""
    d = stack_trace(os.path.join(ctx.tmp, 'stacks'), STACK_EVENTS_OF_A_RUN)
    r = rt('report', d, asan=True)
    clean_run(r, 'report of stacks')
    check(r.returncode == 0, 'report: exit %d: %s' % (r.returncode, r.stderr))
    lines = r.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if ' sched_switch: ' in l)
    check(lines[first + 1:first + 5] == [
        '    schedule+0x10', '    do_nanosleep+0x34',
        '    rtr_pid_filter_set+0x24 [ringtrace]', '    entry_SYSCALL_64+0x8'],
        'frames under the first switch: %s' % lines[first:first + 6])
    check('    0x%x' % (KTEXT + 0x9010) in lines, 'an address past _etext: %s' % lines)
    check(not any('kernel_stack' in l for l in lines), 'stacks print as frames only')
    r = rt('report', '-e', 'sched_wakeup', d, asan=True)
    check(not any(l.startswith('    ') for l in r.stdout.splitlines()),
          'a stack goes with its event when a filter drops it: %s' % r.stdout)
    # The module declares kernel_stack in every trace: one without stacks
    # (and so without symbols) reads without a word about symbols.
    d = stack_trace(os.path.join(ctx.tmp, 'nostacks'), [STACK_EVENTS_OF_A_RUN[2]],
                    None)
    for args in ((), ('--folded',), ('--folded', '--off-cpu')):
        r = rt('report', *args, d, asan=True)
        check(r.returncode == 0 and r.stderr == '',
              'report %s of a trace without stacks: %d %r' % (args, r.returncode, r.stderr))


@test
def stacks_folded(ctx):
    """--folded: comm;root;...;leaf count; --off-cpu: the ns until the
    thread ran again."""
    d = stack_trace(os.path.join(ctx.tmp, 'folded'), STACK_EVENTS_OF_A_RUN)
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded')
    one = 'sleeper;entry_SYSCALL_64;rtr_pid_filter_set [ringtrace];do_nanosleep;schedule'
    two = 'sleeper;0x%x;entry_SYSCALL_64;do_nanosleep;schedule' % (KTEXT + 0x9010)
    check(r.stdout.splitlines() == sorted([one + ' 1', two + ' 1']),
          '--folded: %s' % r.stdout)
    r = rt('report', '--folded', '--off-cpu', d, asan=True)
    clean_run(r, 'report --folded --off-cpu')
    check(r.stdout.splitlines() == sorted([one + ' 4000', two + ' 500']),
          '--off-cpu: %s' % r.stdout)
    r = rt('report', '--off-cpu', d)
    check(r.returncode == 2 and r.stderr.count('\n') == 1,
          '--off-cpu alone: %d %s' % (r.returncode, r.stderr))


@test
def stacks_without_or_with_bad_symbols(ctx):
    """No symbols file, or a damaged one: one warning, addresses, exit 0."""
    for name, ks in (('none', None), ('garbage', b'not zstd at all'),
                     ('badtext', 'ringtrace-ksyms 1\nK zz\n'),
                     ('nomagic', 'K 0\n'),
                     ('badmod', 'ringtrace-ksyms 1\nK 0\nM x ffff\n')):
        d = stack_trace(os.path.join(ctx.tmp, 'ks-' + name), STACK_EVENTS_OF_A_RUN, ks)
        r = rt('report', d, asan=True)
        clean_run(r, 'report, symbols ' + name)
        check(r.returncode == 0 and '    0x%x' % STACK_LEAF[0] in r.stdout,
              '%s: %d %s' % (name, r.returncode, r.stdout[-500:]))
        check(r.stderr.count('\n') == 1 and 'address' in r.stderr,
              '%s: one warning: %s' % (name, r.stderr))


@test
def stacks_lying_depth(ctx):
    """A depth beyond its event is damage, never a read past the packet."""
    for depth in (3, 1000, 65535):
        d = stack_trace(os.path.join(ctx.tmp, 'lie%d' % depth), [
            (1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
            (1000, STACK_ID, struct.pack('<H', depth) + struct.pack('<QQ', KTEXT, KTEXT))])
        for args in ((), ('--folded',), ('--folded', '--off-cpu')):
            r = rt('report', *args, d, asan=True)
            clean_run(r, 'report %s, depth %d' % (args, depth))
            check(r.returncode == 3 and 'damaged' in r.stderr,
                  'depth %d %s: exit %d: %s' % (depth, args, r.returncode, r.stderr))


# ---- user stacks (module/ustack.c, tools/cli/stacks.c) ------------------------

USTACK_ID = 20
USTACK_EVENTS = STACK_EVENTS + [
    (USTACK_ID, 'user_stack', [('uint16_t', 'depth', None), ('uint16_t', 'flags', None),
                               ('uint64_t', 'ips', 'depth')])]
UTEXT = 0x55d0c0a01000                  # the workload's text


def ustack(flags, *ips):
    return struct.pack('<HH', len(ips), flags) + b''.join(struct.pack('<Q', i) for i in ips)


def ustack_trace(d, events):
    """stack_trace() of USTACK_EVENTS: kernel_stack and user_stack declared
    as the module declares them (ips hex)."""
    return hex_stack_trace(d, USTACK_EVENTS, events)


# sleeper switches out with both stacks (kernel first, as the module writes
# them), then with its user stack alone, cut by the depth; a wakeup between.
USTACK_EVENTS_OF_A_RUN = [
    (1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (1000, STACK_ID, kstack(*STACK_LEAF)),
    (1000, USTACK_ID, ustack(0, UTEXT + 0x10, UTEXT + 0x234, UTEXT + 0x456)),
    (5000, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (6000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (6000, USTACK_ID, ustack(0x3, UTEXT + 0x10)),
    (6500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
]


@test
def ustacks_under_their_event(ctx):
    """report prints an event's user_stack under it, after its kernel
    frames, a frame a line ("    0xADDR [user]": no mapping names them),
    then what cut it short;
    the record is never an event line; a filter that drops the event drops
    its stacks; --stat counts the events alone, --folded joins both stacks; the exporters
    write no user_stack event; babeltrace2 reads every record."""
    d = ustack_trace(os.path.join(ctx.tmp, 'ustacks'), USTACK_EVENTS_OF_A_RUN)
    r = rt('report', d, asan=True)
    clean_run(r, 'report of user stacks')
    check(r.returncode == 0, 'report: exit %d: %s' % (r.returncode, r.stderr))
    lines = r.stdout.splitlines()
    sw = [i for i, l in enumerate(lines) if ' sched_switch: ' in l]
    check(len(sw) == 4, 'four switches: %s' % lines)
    check(lines[sw[0] + 1:sw[1]] == [
        '    schedule+0x10', '    do_nanosleep+0x34',
        '    rtr_pid_filter_set+0x24 [ringtrace]', '    entry_SYSCALL_64+0x8',
        '    0x%x [user]' % (UTEXT + 0x10), '    0x%x [user]' % (UTEXT + 0x234),
        '    0x%x [user]' % (UTEXT + 0x456)],
        'both stacks under the first switch: %s' % lines[sw[0]:sw[1]])
    check(lines[sw[2] + 1:sw[3]] == [
        '    0x%x [user]' % (UTEXT + 0x10),
        '    (user stack: truncated at ustack_depth)',
        '    (user stack: a frame unreadable)'],
        'the user stack alone, its flags said: %s' % lines[sw[2]:sw[3]])
    check(not any('user_stack' in l for l in lines), 'user stacks print as frames only')
    r = rt('report', '-e', 'ringtrace_marker', d, asan=True)
    check(r.returncode == 0 and not any(l.startswith('    ') for l in r.stdout.splitlines()),
          'stacks go with their event when a filter drops it: %s' % r.stdout)
    r = rt('report', '--stat', d, asan=True)
    clean_run(r, 'report --stat of user stacks')
    check(r.returncode == 0 and 'user_stack' not in r.stdout,
          '--stat counts events, not their user stacks: %s' % r.stdout)
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded of user stacks')
    check(r.stdout.splitlines() == [
        'sleeper;0x%x 1' % (UTEXT + 0x10),
        'sleeper;0x%x;0x%x;0x%x;[k] entry_SYSCALL_64;[k] rtr_pid_filter_set [ringtrace];'
        '[k] do_nanosleep;[k] schedule 1' % (UTEXT + 0x456, UTEXT + 0x234, UTEXT + 0x10)],
        '--folded: both stacks, user frames root first, owned by the switch: %s' % r.stdout)
    for fmt in ('systrace', 'chrome-json'):
        r = rt('export', '-f', fmt, d, asan=True)
        clean_run(r, 'export -f %s of user stacks' % fmt)
        check(r.returncode == 0 and 'user_stack' not in r.stdout,
              'export -f %s: no user_stack event: %d %s' % (fmt, r.returncode,
                                                          r.stdout[-800:]))
    events, _ = bt2(d)
    check([e[2] for e in events] == [
        'sched_switch', 'kernel_stack', 'user_stack', 'sched_switch', 'sched_switch',
        'user_stack', 'sched_switch'], 'babeltrace2 reads every record: %s' % events)


# ---- interned stacks (module/stack.c: stack_def, stack_ref) -----------------

DEF_ID, REF_ID = 22, 23
INTERN_EVENTS = STACK_EVENTS[:2] + [
    (DEF_ID, 'stack_def', gentrace.STACK_DEF), (REF_ID, 'stack_ref', gentrace.STACK_REF)]
EXT_HEADER = 12                         # make_packet's headers: extended


def stack_def(kind, flags, ips):
    return gentrace.make_stack_def(kind, flags, ips)


def intern_packet(records, untimed=False):
    """A packet's events from @records: (ts, id, payload) as they are, or
    (ts, 'def', NAME, kind, flags, ips), or (ts, 'ref', K, U) where K and U
    name a def of this packet (its offset, wherever it is: refs before defs
    are damage), or are raw offsets, or None (0).  @untimed: the refs'
    headers are untimed (4 bytes, write_trace(untimed=REF_ID))."""
    offs, at, out = {}, HEADER.size, []
    for r in records:
        if r[1] == 'def':
            offs[r[2]] = at
            payload = stack_def(*r[3:])
        elif r[1] == 'ref':
            payload = b'\0' * 8
        else:
            payload = r[2]
        at += (4 if untimed and r[1] == 'ref' else EXT_HEADER) + len(payload)
    for r in records:
        if r[1] == 'def':
            out.append((r[0], DEF_ID, stack_def(*r[3:])))
        elif r[1] == 'ref':
            k, u = [0 if x is None else offs[x] if isinstance(x, str) else x
                    for x in r[2:4]]
            out.append((r[0], REF_ID, struct.pack('<II', k, u)))
        else:
            out.append(r)
    return out


def intern_trace(d, packets, ksyms=KSYMS, untimed=False):
    """A trace of INTERN_EVENTS (ips hex, as the module declares them) of
    @packets (intern_packet()'s records), with the symbols file; @untimed:
    the refs untimed, as today's module writes them (older ones: timed)."""
    write_trace(d, INTERN_EVENTS, [intern_packet(p, untimed) for p in packets],
                untimed=REF_ID if untimed else None)
    return hex_ips(d, ksyms)


USTACK_A = (0, UTEXT + 0x10, UTEXT + 0x234, UTEXT + 0x456)
USTACK_B = (0x3, UTEXT + 0x10)
KSTACK_B = (KTEXT + 0x2010, KTEXT + 0x2134, KTEXT + 0x1008, KTEXT + 0x9010)

# One run, two packets: the first defines both stacks of the first switch
# and its second switch-out refers to them again; the second packet
# defines them again, and another kernel stack, a user stack alone.
INTERNED_RUN = [
    [(1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
     (1000, 'def', 'k', 0, 0, STACK_LEAF), (1000, 'def', 'u', 1, *USTACK_A[:1], USTACK_A[1:]),
     (1000, 'ref', 'k', 'u'),
     (5000, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
     (6000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
     (6000, 'ref', 'k', 'u'),
     (6500, 1, kswitch('swapper/0', 0, 'sleeper', 100))],
    [(7000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
     (7000, 'def', 'k2', 0, 0, KSTACK_B), (7000, 'ref', 'k2', None),
     (7500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
     (8000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
     (8000, 'def', 'u2', 1, USTACK_B[0], USTACK_B[1:]), (8000, 'ref', None, 'u2'),
     (8500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
     (9000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
     (9000, 'def', 'k', 0, 0, STACK_LEAF), (9000, 'def', 'u', 1, USTACK_A[0], USTACK_A[1:]),
     (9000, 'ref', 'k', 'u')]]

# The same run with the stacks inline, as older modules wrote them.
INLINE_RUN = [
    (1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (1000, STACK_ID, kstack(*STACK_LEAF)), (1000, USTACK_ID, ustack(*USTACK_A)),
    (5000, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (6000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (6000, STACK_ID, kstack(*STACK_LEAF)), (6000, USTACK_ID, ustack(*USTACK_A)),
    (6500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (7000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (7000, STACK_ID, kstack(*KSTACK_B)),
    (7500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (8000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (8000, USTACK_ID, ustack(*USTACK_B)),
    (8500, 1, kswitch('swapper/0', 0, 'sleeper', 100)),
    (9000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
    (9000, STACK_ID, kstack(*STACK_LEAF)), (9000, USTACK_ID, ustack(*USTACK_A))]


def under_switches(out):
    """The indented lines under each sched_switch line of a report."""
    groups = []
    for l in out.splitlines():
        if ' sched_switch: ' in l:
            groups.append([])
        elif l.startswith('    ') and groups:
            groups[-1].append(l)
    return groups


@test
def interned_stacks_read_as_inline(ctx):
    """A trace with interned stacks (stack_def once per packet, stack_ref
    per event, a def referred to again in its packet, defined again in the
    next) reads as the same trace with inline stacks: report, --folded,
    --folded --off-cpu, --stat, the chrome-json, perfetto and lttng
    exports' stacks (lttng_check --stacks resolves the refs itself); no
    stack_def or stack_ref prints as an event; babeltrace2 reads every
    record."""
    di = intern_trace(os.path.join(ctx.tmp, 'interned'), INTERNED_RUN)
    dl = hex_stack_trace(os.path.join(ctx.tmp, 'inline'), USTACK_EVENTS, INLINE_RUN)
    for args in ((), ('--folded',), ('--folded', '--off-cpu'), ('--stat',)):
        ri = rt('report', *args, di, asan=True)
        rl = rt('report', *args, dl, asan=True)
        clean_run(ri, 'report %s of interned stacks' % (args,))
        check(ri.returncode == 0 and ri.stderr == '',
              'report %s: exit %d: %s' % (args, ri.returncode, ri.stderr))
        # The summary's packets and records differ, not a word more.
        oi, ol = [[l for l in r.stdout.splitlines() if not re.match(r'cpu\d+: packets=', l)]
                  for r in (ri, rl)]
        check(oi == ol, 'report %s: interned differs from inline:\n%s\n--\n%s'
              % (args, ri.stdout, rl.stdout))
        check('stack_def' not in ri.stdout and 'stack_ref' not in ri.stdout,
              'report %s: no record prints as an event: %s' % (args, ri.stdout))
    groups = under_switches(rt('report', di).stdout)
    check(len(groups) == 9 and len(groups[0]) == 7 and groups[0] == groups[2] == groups[8]
          and len(groups[4]) == 4 and len(groups[6]) == 3,
          'the stacks under their switches: %s' % groups)
    for fmt in ('chrome-json', 'perfetto'):
        oi, ol = os.path.join(ctx.tmp, 'i.' + fmt), os.path.join(ctx.tmp, 'l.' + fmt)
        ri = rt('export', '-f', fmt, '-o', oi, di, asan=True)
        rl = rt('export', '-f', fmt, '-o', ol, dl, asan=True)
        clean_run(ri, 'export -f %s of interned stacks' % fmt)
        check(ri.returncode == 0 and rl.returncode == 0, 'export -f %s: %s' % (fmt, ri.stderr))
        with open(oi, 'rb') as a, open(ol, 'rb') as b:
            check(a.read() == b.read(), 'export -f %s: interned differs from inline' % fmt)
    # LTTng (a random uuid per export): babeltrace2 reads the same events
    # and callstack contexts, no stack_def or stack_ref among them, and
    # lttng_check --stacks, resolving the refs from the recording alone,
    # finds the export's contexts are its stacks.
    texts = []
    for name, d in (('lint', di), ('linl', dl)):
        out, _, r = lttng_export(ctx, d, name=name)
        check(r.stderr == '', 'export -f lttng of %s: %s' % (name, r.stderr))
        b = run(['babeltrace2', '--clock-cycles', '--no-delta', out])
        check(b.returncode == 0, 'babeltrace2 %s: %s' % (name, b.stderr[-1000:]))
        texts.append(b.stdout)
        c = run([sys.executable, LTTNG_CHECK, out, '--stacks', d, '--ringtrace', RINGTRACE])
        check(c.returncode == 0 and c.stdout.count('ok - ') == 3 and
              'not ok' not in c.stdout and '(5 events with stacks: 16 kernel, 11 user' in c.stdout,
              'lttng_check --stacks of %s: %s' % (name, c.stdout[-3000:]))
    check(texts[0] == texts[1] and texts[0].count('callstack_kernel = [ [0]') == 4 and
          texts[0].count('callstack_user = [ [0]') == 4 and 'stack_def' not in texts[0] and
          'stack_ref' not in texts[0], 'export -f lttng: interned differs from inline:\n%s\n--\n%s'
          % (texts[0][-3000:], texts[1][-3000:]))
    # A window whose switch refers to defs before it (6000 to 1000's):
    # the export still has them, for LTTng and Perfetto alike.
    win = ('--begin', '0.0000055', '--end', '0.0000065')
    out = os.path.join(ctx.tmp, 'lwin')
    r = rt('export', '-f', 'lttng', *win, '-o', out, di, asan=True)
    clean_run(r, 'export -f lttng --begin of interned stacks')
    b = run(['babeltrace2', '--clock-cycles', '--no-delta', out])
    sw = [l for l in b.stdout.splitlines() if ' sched_switch: ' in l]
    check(r.returncode == 0 and r.stderr == '' and len(sw) == 2 and
          sw[0].startswith('[00000000000000006000]') and
          '_callstack_kernel_length = 4, callstack_kernel = [ [0] = 0xFFFFFFFF9A002010' in sw[0] and
          '_callstack_user_length = 3, callstack_user = [ [0] = 0x55D0C0A01010' in sw[0],
          'export -f lttng %s: the 6000 switch without its stacks: %s %s' % (
              win, r.stderr, b.stdout[-2000:]))
    got, _ = pf_samples(ctx, di, 'pwin', *win)
    check([(s['time'], len(s['frames'])) for s in got] == [(6000, 7)],
          'export -f perfetto %s: the 6000 switch\'s stacks: %s' % (win, got))
    events, _ = bt2(di)
    names = [e[2] for e in events]
    check(names.count('stack_def') == 6 and names.count('stack_ref') == 5 and
          names.count('sched_switch') == 9, 'babeltrace2 reads every record: %s' % names)


@test
def interned_damage_costs_its_packet(ctx):
    """Refs that name no def of their kind before them in their packet (a
    def after the ref, an offset past the packet, the offset of another
    record, the middle of a def, a def of the other kind, a def of an
    earlier packet's offset) lose that stack alone, counted in one
    warning, never fatal and never a wrong stack; a def whose depth runs
    past its record is a damaged packet, skipped alone; the stacks of the
    packets around them read whole."""
    p0 = [(1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (1000, 'ref', 'k', None),                     # before its def
          (1000, 'def', 'k', 0, 0, STACK_LEAF),
          (1100, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (1100, 'ref', 'k', 1 << 20),                  # past the packet
          (1200, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (1200, 'ref', HEADER.size, None),             # the first event's offset
          (1300, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (1300, 'def', 'u', 1, 0, USTACK_A[1:]),
          (1300, 'ref', 'u', 'k')]                      # kinds crossed
    p1 = [(2000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (2000, 'def', 'k', 0, 0, KSTACK_B), (2000, 'ref', 'k', None)]
    # The depth claims more frames than the record holds: damage.
    lying = [(3000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
             (3000, DEF_ID, struct.pack('<BBH', 0, 0, 9) + struct.pack('<QQ', KTEXT, KTEXT)),
             (3000, 'ref', HEADER.size + EXT_HEADER + 60, None)]
    # Offsets where p0 and p1 had defs: none here.
    p3 = [(4000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (4000, 'ref', HEADER.size + EXT_HEADER + 60, None),
          (4100, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (4100, 'ref', HEADER.size + 2 * EXT_HEADER + 60 + 8, None),
          (4200, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
          (4200, 'def', 'k', 0, 0, STACK_LEAF),
          (4200, 'ref', HEADER.size + 5 * EXT_HEADER + 60 * 3 + 16 + 4, None)]  # mid-def
    d = intern_trace(os.path.join(ctx.tmp, 'damage'), [p0, p1, lying, p3])
    r = rt('report', d, asan=True)
    clean_run(r, 'report of damaged interned stacks')
    check(r.returncode == 3 and 'damaged' in r.stderr,
          'the lying def damages its packet: %d %s' % (r.returncode, r.stderr))
    lost = [l for l in r.stderr.splitlines() if 'stacks lost' in l]
    check(len(lost) == 1 and ': 8 stacks lost: ' in lost[0],
          'one warning, 8 stacks lost: %s' % r.stderr)
    groups = under_switches(r.stdout)
    check(len(groups) == 8, 'eight switches read (the damaged packet\'s not): %s' % groups)
    leaf = '    schedule+0x10'
    check(groups[0] == [] and groups[1][:1] == [leaf] and groups[2] == [],
          'p0: the ref before its def loses it, the next ref has it; the '
          'record offset gives none: %s' % groups[:3])
    check(groups[3] == [], 'kinds crossed: neither stack: %s' % groups[3])
    check(len(groups[4]) == 4 and groups[4][0] == leaf and
          groups[4][3] == '    0x%x' % (KTEXT + 0x9010), 'p1 reads whole: %s' % groups[4])
    check(groups[5] == groups[6] == groups[7] == [],
          'p3: old offsets and a def\'s middle give nothing: %s' % groups[5:])
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded of damaged interned stacks')
    check(r.returncode == 3 and 'stacks lost' in r.stderr, '--folded: %d %s' % (r.returncode, r.stderr))
    for fmt in ('chrome-json', 'perfetto'):
        r = rt('export', '-f', fmt, '-o', os.path.join(ctx.tmp, 'dmg.' + fmt), d, asan=True)
        clean_run(r, 'export -f %s of damaged interned stacks' % fmt)
        check(r.returncode == 3, 'export -f %s: %d %s' % (fmt, r.returncode, r.stderr))


@test
def interned_seed(ctx):
    """The fuzz seed gen-interned is intern_trace() of INTERNED_RUN."""
    d = intern_trace(os.path.join(ctx.tmp, 'seed'), INTERNED_RUN)
    sys.path.insert(0, HERE)
    import fuzz_corpus
    with open(os.path.join(HERE, 'fuzz', 'seeds', 'gen-interned'), 'rb') as f:
        check(f.read() == fuzz_corpus.pack(fuzz_corpus.read_dir(d)),
              'tools/tests/fuzz/seeds/gen-interned is not intern_trace(INTERNED_RUN)')



@test
def interned_untimed_refs_read_as_inline(ctx):
    """Today's module writes each stack_ref with an untimed header (its 27
    bits the id again, module/ctf.c's `untimed` option): the same run
    reads as the inline trace (report, --folded, --folded --off-cpu,
    --stat, the chrome-json, perfetto and lttng exports); babeltrace2 reads every record without a warning, each
    stack_ref at its event's time; the fuzz seed gen-interned-untimed is
    this trace."""
    di = intern_trace(os.path.join(ctx.tmp, 'untimed'), INTERNED_RUN, untimed=True)
    dl = hex_stack_trace(os.path.join(ctx.tmp, 'inline'), USTACK_EVENTS, INLINE_RUN)
    with open(os.path.join(di, 'metadata')) as f:
        meta = f.read()
    check('untimed = %d' % REF_ID in meta and 'struct { uint27_t id; } untimed;' in meta,
          'the metadata has no untimed option for stack_ref')
    for args in ((), ('--folded',), ('--folded', '--off-cpu'), ('--stat',)):
        ri = rt('report', *args, di, asan=True)
        rl = rt('report', *args, dl, asan=True)
        clean_run(ri, 'report %s of untimed refs' % (args,))
        check(ri.returncode == 0 and ri.stderr == '',
              'report %s: exit %d: %s' % (args, ri.returncode, ri.stderr))
        oi, ol = [[l for l in r.stdout.splitlines() if not re.match(r'cpu\d+: packets=', l)]
                  for r in (ri, rl)]
        check(oi == ol, 'report %s: untimed refs differ from inline:\n%s\n--\n%s'
              % (args, ri.stdout, rl.stdout))
    for fmt in ('chrome-json', 'perfetto'):
        oi, ol = os.path.join(ctx.tmp, 'u.' + fmt), os.path.join(ctx.tmp, 'l.' + fmt)
        ri = rt('export', '-f', fmt, '-o', oi, di, asan=True)
        rl = rt('export', '-f', fmt, '-o', ol, dl, asan=True)
        clean_run(ri, 'export -f %s of untimed refs' % fmt)
        check(ri.returncode == 0 and rl.returncode == 0, 'export -f %s: %s' % (fmt, ri.stderr))
        with open(oi, 'rb') as a, open(ol, 'rb') as b:
            check(a.read() == b.read(), 'export -f %s: untimed refs differ from inline' % fmt)
    # LTTng: lttng_check --stacks resolves the refs from babeltrace2's
    # reading of the recording, each at its event's time.
    out, _, r = lttng_export(ctx, di, name='lunt')
    check(r.stderr == '', 'export -f lttng of untimed refs: %s' % r.stderr)
    c = run([sys.executable, LTTNG_CHECK, out, '--stacks', di, '--ringtrace', RINGTRACE])
    check(c.returncode == 0 and c.stdout.count('ok - ') == 3 and
          'not ok' not in c.stdout and '(5 events with stacks: 16 kernel, 11 user' in c.stdout,
          'lttng_check --stacks of untimed refs: %s' % c.stdout[-3000:])
    r = run(['babeltrace2', '--clock-cycles', '--no-delta', di])
    check(r.returncode == 0 and r.stderr == '',
          'babeltrace2: exit %d, stderr: %s' % (r.returncode, r.stderr[-2000:]))
    events, _ = bt2(di)
    names = [e[2] for e in events]
    check(names.count('stack_def') == 6 and names.count('stack_ref') == 5 and
          names.count('sched_switch') == 9, 'babeltrace2 reads every record: %s' % names)
    refs = [(events[i - 1][0], e[0]) for i, e in enumerate(events) if e[2] == 'stack_ref']
    check([t for t, _ in refs] == [t for _, t in refs] == [1000, 6000, 7000, 8000, 9000],
          'each stack_ref at its event\'s time: %s' % refs)
    sys.path.insert(0, HERE)
    import fuzz_corpus
    with open(os.path.join(HERE, 'fuzz', 'seeds', 'gen-interned-untimed'), 'rb') as f:
        check(f.read() == fuzz_corpus.pack(fuzz_corpus.read_dir(di)),
              'tools/tests/fuzz/seeds/gen-interned-untimed is not this trace')


def steady_switch_trace(d, stacks, untimed=True, switches=20000, seed=3):
    """The bench's steady workload as the module lays it out (compact
    headers, 64 KiB packets, stored chunks): two tasks switching to each
    other on CPU 0, every 2-9 us; with @stacks each switch has a kernel
    and a user stack (one pair per task), interned as module/stack.c does:
    the defs once per packet, then a stack_ref, untimed or (older modules)
    with its event's 27 time bits."""
    uuid = bytes(range(16))
    os.makedirs(d)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(gentrace.metadata(uuid, 1700000000, 0, INTERN_EVENTS,
                                  REF_ID if stacks and untimed else None))
    rng = random.Random(seed)
    kst = [tuple(KTEXT + 0x1000 * (t + 1) + 0x40 * i for i in range(12)) for t in range(2)]
    ust = [tuple(UTEXT + 0x100 * (t + 1) + 0x10 * i for i in range(6)) for t in range(2)]
    names = [('perf', 200), ('perf', 201)]
    packets, body, n, seen, ts, begin = [], b'', 0, {}, 5 * 10**9, None

    def close():
        nonlocal body, n, seen
        size = HEADER.size + len(body)
        packets.append(HEADER.pack(0xC1FC1FC1, uuid, 0, 0, begin, ts, size * 8, size * 8,
                                   len(packets), 0, 0, n) + body)
        body, n, seen = b'', 0, {}

    def rec(eid, payload):
        nonlocal body, n
        body += struct.pack('<I', eid | (ts & (2**27 - 1)) << 5) + payload
        n += 1

    for i in range(switches):
        ts += rng.randrange(2000, 9000)
        if begin is None:
            begin = ts
        t = i % 2
        need = 4 + 60 + (4 + 4 + 12 * 8 + 4 + 4 + 6 * 8 + 12 if stacks else 0)
        if HEADER.size + len(body) + need >= 65536:
            close()
            begin = ts
        rec(1, kswitch(names[t][0], names[t][1], names[1 - t][0], names[1 - t][1]))
        if not stacks:
            continue
        offs = []
        for kind, ips in ((0, kst[t]), (1, ust[t])):
            if (kind, t) not in seen:
                seen[kind, t] = HEADER.size + len(body)
                rec(DEF_ID, gentrace.make_stack_def(kind, 0, ips))
            offs.append(seen[kind, t])
        ref = struct.pack('<II', *offs)
        if untimed:
            body += struct.pack('<I', REF_ID | REF_ID << 5) + ref
            n += 1
        else:
            rec(REF_ID, ref)
    close()
    with open(os.path.join(d, 'cpu0-000001.zst'), 'wb') as f:
        f.write(stored_chunk(packets))
    with open(os.path.join(d, '.ringtrace-ksyms.zst'), 'wb') as f:
        f.write(raw_zstd_frame(KSYMS.encode()))
    return d


@test
def interned_refs_cost_little_packed(ctx):
    """Issue 30's bound as a fact of the format: the bench's steady
    workload (a sched_switch every few us between two tasks) with a kernel
    and a user stack on every switch, interned as the module writes it
    (untimed stack_ref), packed by ringtrace compress at ringtraced's
    level, is at most 1.3x the bytes of the same trace without stacks;
    with refs that carry their event's time bits (older modules) it was
    not.  Every stack reads back (report --folded)."""
    sizes, folded = {}, None
    for name, stacks, untimed in (('plain', False, True), ('untimed', True, True),
                                  ('timed', True, False)):
        d = steady_switch_trace(os.path.join(ctx.tmp, name), stacks, untimed)
        r = rt('compress', '-j', '1', d)
        check(r.returncode == 0, 'compress %s: %s' % (name, r.stderr))
        sizes[name] = os.path.getsize(os.path.join(d, 'cpu0-000001.zst'))
        if name == 'untimed':
            folded = rt('report', '--folded', d, asan=True)
            clean_run(folded, 'report --folded of the steady trace')
    ratio, old = sizes['untimed'] / sizes['plain'], sizes['timed'] / sizes['plain']
    check(folded.returncode == 0 and folded.stderr == '' and
          sum(int(l.rsplit(' ', 1)[1]) for l in folded.stdout.splitlines()) == 20000,
          'report --folded: every switch with its stacks: exit %d %s %s' % (
              folded.returncode, folded.stderr, folded.stdout[:1000]))
    print('    packed: %s; with stacks %.3fx, timed refs %.3fx' % (sizes, ratio, old))
    check(ratio <= 1.3, 'packed with both stacks %.3fx the trace without (%s)' % (ratio, sizes))
    check(old > 1.3, 'timed refs: %.3fx, the cost the untimed header removes (%s)' % (old, sizes))


SAMPLE_ID = 21
SAMPLE_EVENTS = USTACK_EVENTS + [
    (SAMPLE_ID, 'cpu_sample', [('int32_t', 'tid', None), ('int32_t', 'pid', None),
                               ('uint8_t', 'mode', None)])]


def sample(tid, mode):
    return struct.pack('<iiB', tid, tid, mode)


# The sampler's events (module/sampler.c): spinner (100) in user mode, in
# the kernel with both stacks, the idle task, and a sample naming 'other'
# (200) while the CPU, as switches say, runs spinner.
SAMPLE_EVENTS_OF_A_RUN = [
    (500, 1, kswitch('swapper/0', 0, 'spinner', 100)),
    (1000, SAMPLE_ID, sample(100, 0)),
    (1000, USTACK_ID, ustack(0, UTEXT + 0x10, UTEXT + 0x234)),
    (2000, SAMPLE_ID, sample(100, 1)),
    (2000, STACK_ID, kstack(*STACK_LEAF)),
    (2000, USTACK_ID, ustack(0, UTEXT + 0x10)),
    (3000, 1, kswitch('spinner', 100, 'swapper/0', 0)),
    (3500, SAMPLE_ID, sample(0, 2)),
    (4000, 1, kswitch('swapper/0', 0, 'other', 200)),
    (4500, 1, kswitch('other', 200, 'spinner', 100)),
    (5000, SAMPLE_ID, sample(100, 0)),
    (6000, SAMPLE_ID, sample(200, 0)),
]


@test
def samples_folded(ctx):
    """--folded counts cpu_sample events by the thread they name (not the
    CPU's, as switches say), with their user frames then their kernel
    frames ([k]), and one without stacks (idle, or a user sample whose
    stack was not recorded) as the thread's name; report prints their
    fields and stacks; --off-cpu leaves them out."""
    d = hex_stack_trace(os.path.join(ctx.tmp, 'samples'), SAMPLE_EVENTS,
                        SAMPLE_EVENTS_OF_A_RUN)
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded of samples')
    check(r.stdout.splitlines() == sorted([
        'spinner 1', 'other 1', 'swapper/0 1',
        'spinner;0x%x;0x%x 1' % (UTEXT + 0x234, UTEXT + 0x10),
        'spinner;0x%x;[k] entry_SYSCALL_64;[k] rtr_pid_filter_set [ringtrace];'
        '[k] do_nanosleep;[k] schedule 1' % (UTEXT + 0x10)]),
        '--folded of samples: %s' % r.stdout)
    r = rt('report', '--folded', '--off-cpu', d, asan=True)
    clean_run(r, 'report --folded --off-cpu of samples')
    check(r.returncode == 0 and r.stdout == '',
          '--off-cpu: no sample counts: %s' % r.stdout)
    r = rt('report', '-e', 'cpu_sample', d, asan=True)
    lines = r.stdout.splitlines()
    k = [i for i, l in enumerate(lines) if 'cpu_sample: tid=100, pid=100, mode=1' in l]
    check(len(k) == 1 and lines[k[0] + 1:k[0] + 6] == [
        '    schedule+0x10', '    do_nanosleep+0x34',
        '    rtr_pid_filter_set+0x24 [ringtrace]', '    entry_SYSCALL_64+0x8',
        '    0x%x [user]' % (UTEXT + 0x10)],
        'a kernel sample, its frames under it: %s' % lines)


@test
def ustacks_lying_depth(ctx):
    """A user_stack depth beyond its event is damage, never a read past
    the packet."""
    for depth in (3, 65535):
        d = ustack_trace(os.path.join(ctx.tmp, 'ulie%d' % depth), [
            (1000, 1, kswitch('sleeper', 100, 'swapper/0', 0)),
            (1000, USTACK_ID, struct.pack('<HH', depth, 0) + struct.pack('<QQ', UTEXT, UTEXT))])
        r = rt('report', d, asan=True)
        clean_run(r, 'report, user depth %d' % depth)
        check(r.returncode == 3 and 'damaged' in r.stderr,
              'user depth %d: exit %d: %s' % (depth, r.returncode, r.stderr))


def chrome_stack(frames, sf):
    """The stack of chrome-json's "sf" id, leaf first, as "name [category]"."""
    out = []
    while sf is not None:
        f = frames[str(sf)]
        out.append('%s [%s]' % (f['name'], f['category']))
        sf = f.get('parent')
    return out


@test
def stacks_in_chrome_json(ctx):
    """export -f chrome-json: an event with a stack is an instant of its
    name on its thread whose "sf" is the stack's leaf in stackFrames, a
    frame per function under its caller (shared by the two stacks), the
    dictionary after the events; without stacks there is none."""
    d = stack_trace(os.path.join(ctx.tmp, 'cjstacks'), STACK_EVENTS_PREV)
    r = rt('export', '-f', 'chrome-json', d, asan=True)
    clean_run(r, 'export -f chrome-json of stacks')
    check(r.returncode == 0, 'export: exit %d: %s' % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    frames = doc.get('stackFrames', {})
    stacks = [e for e in doc['traceEvents'] if e.get('cat') == 'stack']
    check([(e['name'], e['ph'], e['tid'], e['ts']) for e in stacks] ==
          [('sched_switch', 'i', 100, t) for t in (1.0, 6.0, 7.0)] +
          [('sched_switch', 'i', 200, 8.0)],
          'stack instants: %s' % stacks)
    check([chrome_stack(frames, e['sf']) for e in stacks] == [
        STACK_NAMES[0], STACK_NAMES[1], STACK_NAMES[0], STACK_NAMES[0]],
        'the stacks through stackFrames: %s %s' % (stacks, frames))
    # The third stack is the first: the same leaf, no frame more.
    check(stacks[0]['sf'] == stacks[2]['sf'] and len(frames) == 8 and all(
        'parent' not in f or f['parent'] in frames for f in frames.values()),
        'stackFrames: %s' % frames)
    d = stack_trace(os.path.join(ctx.tmp, 'cjnostacks'), [STACK_EVENTS_OF_A_RUN[2]], None)
    r = rt('export', '-f', 'chrome-json', d, asan=True)
    check(r.returncode == 0 and r.stderr == '' and
          'stackFrames' not in json.loads(r.stdout),
          'a trace without stacks: %d %r %s' % (r.returncode, r.stderr, r.stdout))


@test
def stacks_in_perfetto(ctx):
    """export -f perfetto: each stack a PerfSample of its event's thread at
    its time, its callstack_iid an interned Callstack (frames outermost
    first, each a function interned once, in "[kernel.kallsyms]" or the
    module's mapping), interned on its own sequence, whose first packet
    clears the incremental state; no kernel_stack ftrace event."""
    d = stack_trace(os.path.join(ctx.tmp, 'pfstacks'), STACK_EVENTS_PREV)
    out = os.path.join(ctx.tmp, 'stacks.pftrace')
    r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
    clean_run(r, 'export -f perfetto of stacks')
    check(r.returncode == 0, 'export: exit %d: %s' % (r.returncode, r.stderr))
    names = [[f.replace('[vmlinux]', '[kernel.kallsyms]') for f in stack]
             for stack in STACK_NAMES]
    text = pf_text(out)
    try:
        got = perfetto_stacks.samples(text)
    except perfetto_stacks.Bad as e:
        raise Fail(str(e))
    check(got == [(1000, 0, 100, 100, 3, names[0][::-1]),
                  (6000, 0, 100, 100, 2, names[1][::-1]),
                  (7000, 0, 100, 100, 2, names[0][::-1]),
                  (8000, 0, 200, 200, 2, names[0][::-1])],
          'PerfSamples: %s' % got)
    check('kernel_stack' not in text, 'a kernel_stack left as an ftrace event')
    # Five functions (four and an address), two callstacks: the third
    # sample is the first's.
    check(text.count('function_names {') == 5 and text.count('callstacks {') == 2,
          'interned: %d names, %d callstacks' % (text.count('function_names {'),
                                                 text.count('callstacks {')))


# ---- user stacks named from the trace's symbol store (tools/lib/umaps.c,
# tools/lib/stackrec.c, lib/usyms.c, tools/cli/usymbols.c, symbols.c) --------

USER_STACK_ID, USER_MMAP_ID, CPU_SAMPLE_ID = 20, 21, 22
USER_EVENTS = [gentrace.EVENTS[0], (1, 'sched_switch', SCHED_SWITCH),
               (4, 'sched_process_fork', MODULE_LAYOUTS['sched_process_fork']),
               (5, 'sched_process_exec', MODULE_LAYOUTS['sched_process_exec']),
               (13, 'ringtrace_statedump_task',
                MODULE_LAYOUTS['ringtrace_statedump_task']),
               (STACK_ID, 'kernel_stack', [('uint16_t', 'depth', None),
                                           (gentrace.HEX64, 'ips', 'depth')]),
               (USER_STACK_ID, 'user_stack', gentrace.USER_STACK),
               (USER_MMAP_ID, 'user_mmap', gentrace.USER_MMAP),
               (CPU_SAMPLE_ID, 'cpu_sample', gentrace.CPU_SAMPLE)]
# main -> a -> b, each a frame of its own (-O0, noinline).
APP_C = r'''
__attribute__((noinline)) int b(int x) { return x * 3 + 1; }
__attribute__((noinline)) int a(int x) { return b(x) + b(x + 1); }
int main(int argc, char **argv) { (void)argv; return a(argc) + %d; }
'''
APP_PID = 4000123              # no process here: symbols reads the path
APP_BASE = 0x555555554000      # the PIE's load bias


def build_elf(ctx, name, variant=0, flags=()):
    """A tiny ELF with symbols and a build-id, compiled here (gcc @flags
    too): its path, build-id, functions {name: (vaddr, size)} and
    executable segment (file offset, vaddr, size)."""
    src = os.path.join(ctx.tmp, name + '.c')
    out = os.path.join(ctx.tmp, name)
    with open(src, 'w') as f:
        f.write(APP_C % variant)
    r = run(['gcc', '-g', '-O0', '-Wl,--build-id'] + list(flags) + ['-o', out, src])
    check(r.returncode == 0, 'gcc: ' + r.stderr)
    r = run(['readelf', '-nW', out])
    m = re.search(r'Build ID: ([0-9a-f]+)', r.stdout)
    check(m, 'no build-id: ' + r.stdout)
    funcs = {}
    for l in run(['nm', '-S', '--defined-only', out]).stdout.splitlines():
        p = l.split()
        if len(p) == 4 and p[2] in 'Tt':
            funcs[p[3]] = (int(p[0], 16), int(p[1], 16))
    text = None
    for l in run(['readelf', '-lW', out]).stdout.splitlines():
        p = l.split()
        if p and p[0] == 'LOAD' and 'E' in p[6:-1]:
            text = (int(p[1], 16), int(p[2], 16), int(p[4], 16))
    check(text and all(f in funcs for f in ('main', 'a', 'b')),
          'no text segment or functions: %s %s' % (text, funcs))
    return {'path': out, 'name': name, 'bid': bytes.fromhex(m.group(1)),
            'funcs': funcs, 'text': text}


def elf_mmap(elf, pid, base=APP_BASE, path=None):
    """The user_mmap of @elf's executable segment, loaded at @base."""
    off, va, size = elf['text']
    start = base + (va & ~0xfff)
    end = base + ((va + size + 0xfff) & ~0xfff)
    return gentrace.make_user_mmap(pid, start, end, off & ~0xfff, elf['bid'],
                                   path or elf['path'])


def uip(elf, fn, k, base=APP_BASE):
    """The address @k bytes into @fn of @elf loaded at @base."""
    va, size = elf['funcs'][fn]
    check(k < size, '%s is %d bytes, not more than %d' % (fn, size, k))
    return base + va + k


def file_off(elf, fn, k):
    off, va, _ = elf['text']
    return elf['funcs'][fn][0] + k - va + off


def ustack(*ips):
    return gentrace.make_user_stack(list(ips))


def dump_task(tid, pid, ppid, name):
    return struct.pack('<iii', tid, pid, ppid) + comm(name)


def fork_ev(pname, ppid, cname, cpid):
    return comm(pname) + struct.pack('<ii', ppid, ppid) + comm(cname) + \
        struct.pack('<ii', cpid, cpid)


def exec_ev(tid, path):
    return struct.pack('<iiH', tid, tid, len(path)) + path.encode()


def user_trace(d, events):
    """A trace of USER_EVENTS (the kernel's symbols beside), one CPU."""
    write_trace(d, USER_EVENTS, [events])
    with open(os.path.join(d, '.ringtrace-ksyms.zst'), 'wb') as f:
        f.write(raw_zstd_frame(KSYMS.encode()))
    return d


def app_events(app):
    """app (APP_PID) mapped; a switch-out with both stacks, back in 4000
    later; two samples with user stacks alone."""
    return [
        (900, 13, dump_task(APP_PID, APP_PID, 1, 'app')),
        (950, USER_MMAP_ID, elf_mmap(app, APP_PID)),
        (1000, 1, kswitch('app', APP_PID, 'swapper/0', 0)),
        (1000, STACK_ID, kstack(*STACK_LEAF)),
        (1000, USER_STACK_ID, ustack(uip(app, 'b', 4), uip(app, 'a', 8),
                                     uip(app, 'main', 16))),
        (5000, 1, kswitch('swapper/0', 0, 'app', APP_PID)),
        (6000, CPU_SAMPLE_ID, gentrace.make_cpu_sample(APP_PID, APP_PID)),
        (6000, USER_STACK_ID, ustack(uip(app, 'b', 2), uip(app, 'a', 8),
                                     uip(app, 'main', 16))),
        (7000, CPU_SAMPLE_ID, gentrace.make_cpu_sample(APP_PID, APP_PID)),
        (7000, USER_STACK_ID, ustack(uip(app, 'a', 3), uip(app, 'main', 16))),
    ]


# A binary the fuzzer's seed names (no store there: fuzz_corpus.py).
SEED_APP = {'path': '/usr/bin/app', 'name': 'app', 'bid': bytes(range(1, 21)),
            'funcs': {'b': (0x1100, 0x20), 'a': (0x1120, 0x19), 'main': (0x1139, 0x30)},
            'text': (0x1000, 0x1000, 0x200)}


def user_seed_trace(d):
    """app_events() of SEED_APP, then a fork whose child samples in its
    parent's mappings, execs, and samples again (fuzz_corpus.py's seed)."""
    child = APP_PID + 1
    return user_trace(d, app_events(SEED_APP) + [
        (8000, 4, fork_ev('app', APP_PID, 'app', child)),
        (8100, CPU_SAMPLE_ID, gentrace.make_cpu_sample(child, child)),
        (8100, STACK_ID, kstack(*STACK_LEAF)),
        (8100, USER_STACK_ID, ustack(uip(SEED_APP, 'b', 4), uip(SEED_APP, 'a', 8))),
        (8200, 5, exec_ev(child, '/bin/other')),
        (8300, CPU_SAMPLE_ID, gentrace.make_cpu_sample(child, child)),
        (8300, USER_STACK_ID, ustack(uip(SEED_APP, 'b', 4))),
    ])


def user_store_seed_trace(d):
    """app_events() of a tiny ELF compiled beside @d, its store filled
    (fuzz_corpus.py's seed with a store)."""
    class Tmp:
        tmp = os.path.dirname(d)
    app = build_elf(Tmp, 'app')
    user_trace(d, app_events(app))
    fill_store(d, 'stored 1 binary (')
    return d


def fill_store(d, *expect):
    """ringtrace symbols D: the line it prints starts with @expect."""
    r = rt('symbols', d, asan=True)
    clean_run(r, 'symbols')
    check(r.returncode == 0 and r.stdout.startswith(expect[0]),
          'symbols: %d %r %r' % (r.returncode, r.stdout, r.stderr))
    return r


def gone(elf):
    """The binary leaves this machine: report must not need it."""
    os.rename(elf['path'], elf['path'] + '.gone')


def frames_after(out, what):
    """The frame lines under the first event line holding @what."""
    lines = out.splitlines()
    i = next(i for i, l in enumerate(lines) if what in l)
    got = []
    for l in lines[i + 1:]:
        if not l.startswith('    '):
            break
        got.append(l.strip())
    return got


APP_FRAMES = ['schedule+0x10', 'do_nanosleep+0x34', 'rtr_pid_filter_set+0x24 [ringtrace]',
              'entry_SYSCALL_64+0x8', 'b+0x4 (app)', 'a+0x8 (app)', 'main+0x10 (app)']


@test
def user_frames_named_from_the_store(ctx):
    """ringtrace symbols keeps the mapped binary in the trace's store;
    report then names the user frames (after the kernel's, leaf first)
    from it, the binary gone from this machine; cpu_sample events carry
    their stacks too."""
    app = build_elf(ctx, 'app')
    d = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    fill_store(d, 'stored 1 binary (')
    hexid = app['bid'].hex()
    check(os.path.isfile(os.path.join(d, '.ringtrace-buildid', hexid[:2], hexid[2:])),
          'no store file for %s' % hexid)
    gone(app)
    r = rt('report', d, asan=True)
    clean_run(r, 'report')
    check(r.returncode == 0 and r.stderr == '', 'report: %d %r' % (r.returncode, r.stderr))
    check(frames_after(r.stdout, ' sched_switch: prev_comm="app"') == APP_FRAMES,
          'frames under the switch: %s' % r.stdout)
    check(frames_after(r.stdout, '[0.000006000]') == ['b+0x2 (app)', 'a+0x8 (app)',
                                                        'main+0x10 (app)'],
          'frames under the first sample: %s' % r.stdout)
    check(frames_after(r.stdout, '[0.000007000]') == ['a+0x3 (app)', 'main+0x10 (app)'],
          'frames under the second sample: %s' % r.stdout)
    check(not any('user_stack' in l or 'kernel_stack' in l for l in r.stdout.splitlines()),
          'stacks print as frames only: %s' % r.stdout)
    r = rt('report', '-e', 'sched_switch', d, asan=True)
    check(r.returncode == 0 and not frames_after(r.stdout, '[0.000005000]') and
          ' cpu_sample' not in r.stdout and '(app)' in r.stdout,
          'a filter keeps its events\' stacks alone: %s' % r.stdout)
    fill_store(d, 'stored 0 binaries (0 bytes)')


@test
def user_frames_folded(ctx):
    """report --folded: comm;user root..leaf;[k] kernel root..leaf, the
    [k] prefix only when the report has user frames (a trace declaring
    user_stack without any folds as before); --off-cpu weighs the pair."""
    app = build_elf(ctx, 'app')
    d = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    fill_store(d, 'stored 1 binary (')
    gone(app)
    joined = ('app;main;a;b;[k] entry_SYSCALL_64;[k] rtr_pid_filter_set [ringtrace];'
              '[k] do_nanosleep;[k] schedule')
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded')
    check(r.returncode == 0 and r.stderr == '' and r.stdout.splitlines() ==
          sorted([joined + ' 1', 'app;main;a;b 1', 'app;main;a 1']),
          '--folded: %d %r %s' % (r.returncode, r.stderr, r.stdout))
    r = rt('report', '--folded', '--off-cpu', d, asan=True)
    clean_run(r, 'report --folded --off-cpu')
    check(r.returncode == 0 and r.stdout.splitlines() == [joined + ' 4000'],
          '--off-cpu: %s' % r.stdout)
    # A sample while the CPU runs another thread folds under its own.
    s = user_trace(os.path.join(ctx.tmp, 'sample'), sorted(app_events(app) + [
        (3000, CPU_SAMPLE_ID, gentrace.make_cpu_sample(APP_PID, APP_PID)),
        (3000, USER_STACK_ID, ustack(uip(app, 'main', 16)))], key=lambda e: e[0]))
    shutil.copytree(os.path.join(d, '.ringtrace-buildid'),
                    os.path.join(s, '.ringtrace-buildid'))
    r = rt('report', '--folded', s, asan=True)
    check(r.returncode == 0 and 'app;main 1' in r.stdout.splitlines(),
          'a sample on a CPU running swapper/0: %s' % r.stdout)
    # Kernel stacks alone, in a trace that declares user_stack: as before.
    k = user_trace(os.path.join(ctx.tmp, 'konly'), [
        e for e in app_events(app) if e[1] != USER_STACK_ID])
    r = rt('report', '--folded', k, asan=True)
    # (its two samples, their user stacks gone, count under the thread)
    check(r.returncode == 0 and r.stdout.splitlines() == [
        'app 2',
        'app;entry_SYSCALL_64;rtr_pid_filter_set [ringtrace];do_nanosleep;schedule 1'],
        'kernel stacks alone: %s' % r.stdout)


@test
def user_frames_top_functions(ctx):
    """report --stat: the top functions of the stacks, self (innermost)
    and total (anywhere, once a stack), by self then total, --top N."""
    app = build_elf(ctx, 'app')
    d = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    fill_store(d, 'stored 1 binary (')
    gone(app)
    want = ['top functions (of 3 stacks: self innermost, total anywhere in it)',
            '        self      total  function',
            '           1          3  a (app)',
            '           1          2  b (app)',
            '           1          1  schedule [vmlinux]',
            '           0          3  main (app)',
            '           0          1  do_nanosleep [vmlinux]',
            '           0          1  entry_SYSCALL_64 [vmlinux]',
            '           0          1  rtr_pid_filter_set [ringtrace]']
    r = rt('report', '--stat', d, asan=True)
    clean_run(r, 'report --stat')
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and want[0] in lines, '--stat: %s' % r.stdout)
    i = lines.index(want[0])
    check(lines[i:i + len(want)] == want and lines[i - 1] == '',
          '--stat top functions: %s' % '\n'.join(lines[i:]))
    r = rt('report', '--stat', '--top', '2', d, asan=True)
    lines = r.stdout.splitlines()
    i = lines.index(want[0])
    check(lines[i:] == want[:4], '--top 2: %s' % '\n'.join(lines[i:]))
    # The filters choose the stacks: the switch's alone.
    r = rt('report', '--stat', '-e', 'sched_switch', d, asan=True)
    check('top functions (of 1 stack: self innermost, total anywhere in it)' in r.stdout,
          '--stat -e sched_switch: %s' % r.stdout)
    for bad in (('--top', '2'), ('--stat', '--top', '0'), ('--stat', '--top', 'x')):
        r = rt('report', *bad, d)
        check(r.returncode == 2 and r.stderr.count('\n') == 1,
              'report %s: %d %s' % (bad, r.returncode, r.stderr))
    # A trace without stacks has no such table.
    r = rt('report', '--stat', user_trace(os.path.join(ctx.tmp, 'none'),
                                          app_events(app)[:3]))
    check(r.returncode == 0 and 'top functions' not in r.stdout,
          'no stacks: %s' % r.stdout)


@test
def user_mappings_follow_fork_exec_mmap(ctx):
    """The mapping table: a fork's child maps what its parent did, an exec
    clears the process's mappings, a new mmap maps again, and an mmap over
    part of a mapping replaces that part alone."""
    app = build_elf(ctx, 'app')
    lib = build_elf(ctx, 'lib.so', 1)
    child, base2 = APP_PID + 1, 0x7f0000000000
    b4, a8 = uip(app, 'b', 4), uip(app, 'a', 8)
    # lib's segment over the page of app holding a: b's page stays app's
    # if b is on another page.
    a_page = a8 & ~0xfff
    events = app_events(app)[:2] + [
        (2000, 4, fork_ev('app', APP_PID, 'app', child)),
        (2100, CPU_SAMPLE_ID, gentrace.make_cpu_sample(child, child)),
        (2100, USER_STACK_ID, ustack(b4, a8)),
        (2200, 5, exec_ev(child, '/bin/other')),
        (2300, CPU_SAMPLE_ID, gentrace.make_cpu_sample(child, child)),
        (2300, USER_STACK_ID, ustack(b4)),
        (2400, USER_MMAP_ID, elf_mmap(app, child, base2)),
        (2500, CPU_SAMPLE_ID, gentrace.make_cpu_sample(child, child)),
        (2500, USER_STACK_ID, ustack(b4, uip(app, 'a', 8, base2))),
        (2600, USER_MMAP_ID, gentrace.make_user_mmap(
            APP_PID, a_page, a_page + 0x1000, 0x3000, lib['bid'], lib['path'])),
        (2700, CPU_SAMPLE_ID, gentrace.make_cpu_sample(APP_PID, APP_PID)),
        (2700, USER_STACK_ID, ustack(b4, a8)),
    ]
    d = user_trace(os.path.join(ctx.tmp, 'trace'), events)
    fill_store(d, 'stored 2 binaries (')
    gone(app)
    gone(lib)
    r = rt('report', d, asan=True)
    clean_run(r, 'report')
    check(r.returncode == 0 and r.stderr == '', 'report: %d %r' % (r.returncode, r.stderr))
    check(frames_after(r.stdout, '[0.000002100]') == ['b+0x4 (app)', 'a+0x8 (app)'],
          'the fork\'s child has its parent\'s mappings: %s' % r.stdout)
    check(frames_after(r.stdout, '[0.000002300]') == ['0x%x [user]' % b4],
          'after the exec, none: %s' % r.stdout)
    check(frames_after(r.stdout, '[0.000002500]') == ['0x%x [user]' % b4, 'a+0x8 (app)'],
          'the new image where it was mapped: %s' % r.stdout)
    # lib's offset 0x3000 + a8's place in the page: no function of lib
    # is there (its text is smaller), so unresolved, lib's build-id.
    same_page = (b4 & ~0xfff) == a_page
    want_b = 'lib.so+0x%x [bid:%s]' % (0x3000 + (b4 - a_page), lib['bid'][:4].hex()) \
        if same_page else 'b+0x4 (app)'
    check(frames_after(r.stdout, '[0.000002700]') == [
        want_b, 'lib.so+0x%x [bid:%s]' % (0x3000 + (a8 - a_page), lib['bid'][:4].hex())],
        'an mmap over a part: %s' % r.stdout)


def app_store_file(d, app):
    h = app['bid'].hex()
    return os.path.join(d, '.ringtrace-buildid', h[:2], h[2:])


@test
def user_frames_unresolved_and_bad_store(ctx):
    """No store, a build-id not in it, a store file holding another
    binary, cut, of no ELF, stripped, or with no header: frames print as
    binary+0xFILEOFF [bid:xxxxxxxx], with one warning, exit 0."""
    app = build_elf(ctx, 'app')
    other = build_elf(ctx, 'other', 2)
    src = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    fill_store(src, 'stored 1 binary (')
    good = open(app_store_file(src, app), 'rb').read()
    # other's file as the store makes it, to put under app's name.
    o = user_trace(os.path.join(ctx.tmp, 'othertrace'), [
        (950, USER_MMAP_ID, elf_mmap(other, APP_PID))])
    fill_store(o, 'stored 1 binary (')
    other_file = open(app_store_file(o, other), 'rb').read()
    nl = good.index(b'\n') + 1
    junk = b'this is no ELF file' * 40
    r = run(['strip', '--strip-all', '-o', app['path'] + '.stripped', app['path']])
    check(r.returncode == 0, 'strip: ' + r.stderr)
    stripped = open(app['path'] + '.stripped', 'rb').read()
    cases = {
        'nostore': None,
        'notinstore': 'missing',
        'otherbinary': other_file,
        'cut': good[:nl + (len(good) - nl) // 2],
        'headeronly': good[:nl],
        'notelf': store_file(junk),
        'stripped': store_file(stripped),
        'sizelies': good.replace(b'ringtrace-buildid 1 ', b'ringtrace-buildid 1 1', 1),
        'noheader': good[nl:],
    }
    off = {fn: file_off(app, fn, k) for fn, k in (('b', 4), ('a', 8), ('main', 16))}
    bid = app['bid'][:4].hex()
    want = APP_FRAMES[:4] + ['app+0x%x [bid:%s]' % (off[f], bid) for f in ('b', 'a', 'main')]
    for name, content in cases.items():
        d = ctx.copy(src)
        f = app_store_file(d, app)
        if content is None:
            shutil.rmtree(os.path.join(d, '.ringtrace-buildid'))
        elif content == 'missing':
            os.unlink(f)
        else:
            open(f, 'wb').write(content)
        r = rt('report', d, asan=True)
        clean_run(r, 'report, store ' + name)
        check(r.returncode == 0, '%s: exit %d: %s' % (name, r.returncode, r.stderr))
        check(frames_after(r.stdout, ' sched_switch: prev_comm="app"') == want,
              '%s: frames %s' % (name, r.stdout))
        check(r.stderr.count('\n') == 1 and 'unresolved' in r.stderr,
              '%s: one warning: %r' % (name, r.stderr))
        r = rt('report', '--folded', d, asan=True)
        check(r.returncode == 0 and 'app;app+0x%x [bid:%s];' % (off['main'], bid) in r.stdout
              and r.stderr.count('\n') == 1,
              '%s: --folded %r %s' % (name, r.stderr, r.stdout))


def store_file(image, path='/x/app'):
    """A store file of @image: its header line, one zstd frame."""
    return ('ringtrace-buildid 1 %d 0 %s\n' % (len(image), path)).encode() + \
        raw_zstd_frame(image)


@test
def user_frames_damaged_binary(ctx):
    """A stored binary damaged inside its own bytes (its build-id note
    intact, so that it opens): bytes changed at random, or cut short.
    report never crashes, exits 0, and each frame is a function of the
    binary or the unresolved form, with at most one warning."""
    app = build_elf(ctx, 'app')
    src = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    fill_store(src, 'stored 1 binary (')
    image = open(app['path'], 'rb').read()
    note = image.find(app['bid'])
    check(note > 0, 'the build-id in the binary')
    rng = random.Random(30)
    d = ctx.copy(src)
    f = app_store_file(d, app)
    frame = re.compile(r'^(?:(?:main|a|b)\+0x[0-9a-f]+ \(app\)|app\+0x[0-9a-f]+ \[bid:%s\])$'
                       % app['bid'][:4].hex())
    bad = []
    for i in range(40):
        m = bytearray(image)
        if i % 4 == 3:
            m = m[:rng.randint(note + len(app['bid']), len(m) - 1)]
        else:
            for _ in range(rng.choice((1, 4, 32))):
                k = rng.randrange(len(m))
                if not note - 16 <= k < note + len(app['bid']):
                    m[k] = rng.choice((0, 0xff, rng.randrange(256)))
        open(f, 'wb').write(store_file(bytes(m)))
        r = rt('report', d, asan=True)
        got = frames_after(r.stdout, ' sched_switch: prev_comm="app"')[4:]
        if 'Sanitizer' in r.stderr or 'runtime error' in r.stderr or r.returncode or \
                r.stderr.count('\n') > 1 or len(got) != 3 or \
                not all(frame.match(g) for g in got):
            keep = os.path.join(ctx.tmp, 'damaged-%d' % i)
            shutil.copytree(d, keep)
            bad.append('%s: exit %d %s %s' % (keep, r.returncode, got, r.stderr[-800:]))
    check(not bad, '%d of 40 damaged binaries:\n%s' % (len(bad), '\n'.join(bad[:3])))


@test
def symbol_store_babeltrace2_and_unpack(ctx):
    """babeltrace2 reads a trace directory holding a symbol store
    unchanged (as many events as without); unpack copies the store, and
    report names the same frames from the copy."""
    app = build_elf(ctx, 'app')
    events = app_events(app)
    d = user_trace(os.path.join(ctx.tmp, 'trace'), events)
    bare = ctx.copy(d)
    fill_store(d, 'stored 1 binary (')
    gone(app)
    with_store, _ = bt2(d)
    without, _ = bt2(bare)
    check(len(with_store) == len(without) == len(events),
          'babeltrace2: %d events with the store, %d without, %d written' %
          (len(with_store), len(without), len(events)))
    # What is not a store file is not copied: a link, a temporary file.
    os.makedirs(os.path.join(d, '.ringtrace-buildid', 'ab'))
    os.symlink('/etc/hostname', os.path.join(d, '.ringtrace-buildid', 'ab', 'cdef'))
    open(os.path.join(d, '.ringtrace-buildid', 'ab', '.cdef.123'), 'w').write('x')
    out = os.path.join(ctx.tmp, 'unpacked')
    r = rt('unpack', d, out, asan=True)
    clean_run(r, 'unpack')
    check(r.returncode == 0, 'unpack: %d %s' % (r.returncode, r.stderr))
    check(open(app_store_file(out, app), 'rb').read() ==
          open(app_store_file(d, app), 'rb').read(), 'the store file, copied')
    check(os.listdir(os.path.join(out, '.ringtrace-buildid', 'ab')) == [],
          'a link or a temporary file copied: %s' %
          os.listdir(os.path.join(out, '.ringtrace-buildid', 'ab')))
    a = rt('report', d)
    b = rt('report', out)
    check(b.returncode == 0 and b.stderr == '' and a.stdout == b.stdout and
          frames_after(b.stdout, ' sched_switch: prev_comm="app"') == APP_FRAMES,
          'report of the unpacked trace: %r %s' % (b.stderr, b.stdout))
    check(len(bt2(out)[0]) == len(events), 'babeltrace2 on the unpacked trace')
    # --force replaces an earlier unpack, store included.
    r = rt('unpack', '-f', d, out)
    check(r.returncode == 0 and os.path.isfile(app_store_file(out, app)),
          'unpack -f over an unpack with a store: %d %s' % (r.returncode, r.stderr))


@test
def symbols_command(ctx):
    """ringtrace symbols: a binary whose build-id is not the trace's is
    not stored (one warning); those the stacks hit go first, up to
    --max; a second run stores nothing again."""
    app = build_elf(ctx, 'app')
    lib = build_elf(ctx, 'lib.so', 1)
    changed = build_elf(ctx, 'changed', 3)
    lie = dict(changed, bid=bytes(range(20)))      # the file changed since
    events = [(800, USER_MMAP_ID, elf_mmap(lib, APP_PID, 0x7f0000000000)),
              (850, USER_MMAP_ID, elf_mmap(lie, APP_PID, 0x7f1000000000))] + \
        app_events(app)
    d = user_trace(os.path.join(ctx.tmp, 'trace'), events)
    r = rt('symbols', '--max', '1', d, asan=True)
    clean_run(r, 'symbols --max 1')
    check(r.returncode == 0 and r.stdout.startswith('stored 1 binary (') and
          r.stdout.endswith('; 0 already there, 2 not stored\n'),
          'symbols --max 1: %r' % r.stdout)
    check(os.path.isfile(app_store_file(d, app)) and
          not os.path.exists(app_store_file(d, lib)),
          'the binary the stacks hit goes first')
    check(r.stderr.count('\n') == 2 and r.stderr.count('--max 1 bytes reached') == 2,
          'symbols --max 1 warnings: %r' % r.stderr)
    r = rt('symbols', d, asan=True)
    check(r.returncode == 0 and r.stdout.startswith('stored 1 binary (') and
          '; 1 already there, 1 not stored' in r.stdout and
          os.path.isfile(app_store_file(d, lib)), 'symbols: %r %r' % (r.stdout, r.stderr))
    check(r.stderr.count('\n') == 1 and
          'its build-id is %s, not 000102' % changed['bid'].hex() in r.stderr,
          'symbols: a changed binary: %r' % r.stderr)
    for bad in ((), ('--max', 'x', d), (d, d)):
        r = rt('symbols', *bad)
        check(r.returncode == 2, 'symbols %s: %d' % (bad, r.returncode))
    r = rt('symbols', os.path.join(ctx.tmp, 'nothere'))
    check(r.returncode == 1 and r.stderr.count('\n') == 1, 'no trace: %r' % r.stderr)


@test
def symbols_missing_said(ctx):
    """What the store leaves out is listed in .ringtrace-buildid/missing
    (build-id, reason, path), report's warning for its frames says why, a
    later run that stores it takes it off the list; binaries no stack hit
    are listed too by `symbols` (it keeps them all), never by default
    for a binary it stored."""
    app = build_elf(ctx, 'app')
    d = user_trace(os.path.join(ctx.tmp, 'trace'), app_events(app))
    missing = os.path.join(d, '.ringtrace-buildid', 'missing')
    r = rt('symbols', '--max', '0', d, asan=True)
    check(r.returncode == 0 and r.stdout.endswith('; 0 already there, 1 not stored\n'),
          'symbols --max 0: %r %r' % (r.stdout, r.stderr))
    lines = open(missing).read().splitlines() if os.path.isfile(missing) else []
    check(lines == ['%s\t--max 0 bytes reached\t%s' % (app['bid'].hex(), app['path'])],
          'the missing list: %r' % lines)
    r = rt('report', d, asan=True)
    clean_run(r, 'report of a store without app')
    check(r.returncode == 0 and r.stderr.count('\n') == 1 and
          'build-id %s is not in the symbol store (not stored when recorded: '
          '--max 0 bytes reached): its frames print unresolved' % app['bid'].hex()
          in r.stderr, 'report says why: %r' % r.stderr)
    fill_store(d, 'stored 1 binary (')
    check(not os.path.exists(missing), 'stored now: the missing list goes')
    # A file that changed since (another build-id at the path).
    lie = dict(app, bid=bytes(range(20)))
    e = user_trace(os.path.join(ctx.tmp, 'changed'), app_events(lie))
    r = rt('symbols', e, asan=True)
    check(r.returncode == 0 and r.stdout.endswith('; 0 already there, 1 not stored\n'),
          'symbols of a changed binary: %r %r' % (r.stdout, r.stderr))
    lines = open(os.path.join(e, '.ringtrace-buildid', 'missing')).read().splitlines()
    check(len(lines) == 1 and lines[0].startswith(bytes(range(20)).hex() + '\t') and
          lines[0].endswith('its build-id is %s, not %s\t%s' %
                            (app['bid'].hex(), bytes(range(20)).hex(), app['path'])),
          'a changed binary listed: %r' % lines)
    r = rt('report', e, asan=True)
    check('not stored when recorded: ' in r.stderr and 'its build-id is' in r.stderr,
          'report of the changed binary says why: %r' % r.stderr)
    # A damaged list is untrusted input: a line that is no entry says nothing.
    open(os.path.join(e, '.ringtrace-buildid', 'missing'), 'w').write(
        '\n\t\t\n' + bytes(range(20)).hex() + '\n' + 'zz' * 300)
    r = rt('report', e, asan=True)
    clean_run(r, 'report, a damaged missing list')
    check(r.returncode == 0 and 'not stored when recorded' not in r.stderr and
          'is not in the symbol store: its frames print unresolved' in r.stderr,
          'a damaged missing list: %r' % r.stderr)

def lttng_export(ctx, d, status=0, name='lttng'):
    """export -f lttng of d (ASan build): the output directory, checked by
    lttng_check.py; its counts."""
    out = os.path.join(ctx.tmp, name)
    r = rt('export', '-f', 'lttng', '-o', out, d, asan=True)
    clean_run(r, 'export -f lttng')
    check(r.returncode == status, 'export -f lttng exit %d: %s' % (r.returncode, r.stderr[-1500:]))
    js = out + '.json'
    c = run([sys.executable, LTTNG_CHECK, out, '--json', js])
    check(c.returncode == 0, 'lttng_check: %s' % c.stdout[-2000:])
    return out, json.load(open(js)), r


# What report's event names are in LTTng's (None: not an event of its own).
def lttng_name_of(name):
    if name.startswith('syscall_entry_'):
        return 'syscall_entry'
    if name.startswith('syscall_exit_'):
        return 'syscall_exit'
    return {'lttng_logger': 'ringtrace_marker',
            'lttng_statedump_process_state': 'ringtrace_statedump_task',
            'lttng_statedump_start': None, 'lttng_statedump_end': None}.get(name, name)


def bt2_lttng(out):
    """(cycles, cpu, name, fields) of each event babeltrace2 reads from an
    export, and the events it says were discarded per CPU."""
    r = run(['babeltrace2', '--clock-cycles', '--no-delta', out])
    check(r.returncode == 0, 'babeltrace2 on the export: %s' % r.stderr[-2000:])
    events = []
    for l in r.stdout.splitlines():
        # A trace without stacks: every event's callstack contexts empty.
        m = re.match(r'^\[(\d+)\] \S+ (\w+): \{ cpu_id = (\d+) \}, '
                     r'\{ _callstack_kernel_length = 0, callstack_kernel = \[ \], '
                     r'_callstack_user_length = 0, callstack_user = \[ \] \}, '
                     r'\{ ?(.*?) ?\}$', l)
        check(m, 'unexpected babeltrace2 line: ' + l)
        events.append((int(m.group(1)), int(m.group(3)), m.group(2), m.group(4)))
    lost = {}
    for l in r.stderr.splitlines():
        m = re.search(r'Tracer discarded (\d+) events? .*stream "[^"]*/channel0_(\d+)"', l)
        if m:
            lost[int(m.group(2))] = lost.get(int(m.group(2)), 0) + int(m.group(1))
        elif l.startswith('WARNING'):
            raise Fail('unexpected babeltrace2 warning: ' + l)
    return events, lost


@test
def export_lttng_kernel_events(ctx):
    """Each of ringtrace's kernel events as LTTng 2.13 names and lays it
    out, babeltrace2 reads the values back, the state dump's statuses,
    losses, every CPU's stream over the whole trace, and lttng-analyses
    counts the system calls per thread."""
    T = 10**9
    getppid = sys_entry(110)
    streams = {
        0: [(T, T + 900, 0, [
            (T + 10, 14, struct.pack('<ii', 100, 100) + comm('worker')),
            (T + 20, 13, struct.pack('<iii', 2, 2, 0) + comm('kthreadd')),
            (T + 21, 13, struct.pack('<iii', 50, 50, 2) + comm('kworker/0:1')),
            (T + 22, 13, struct.pack('<iii', 100, 100, 1) + comm('worker')),
            (T + 23, 13, struct.pack('<iii', 101, 100, 1) + comm('worker-t')),
            (T + 24, 7, struct.pack('<iH', 24, 7) + b'virtio0'),
            (T + 25, 13, struct.pack('<iii', 1, 1, 0) + comm('init')),
            (T + 30, 1, struct.pack('<16siiq16sii', comm('x'), 0, 20, 0,
                                    comm('worker'), 100, 20)),
            (T + 40, 11, getppid), (T + 41, 12, sys_exit(110, 100)),
            (T + 50, 11, sys_entry(0, 3, 140000, 4096)),
            (T + 60, 12, sys_exit(0, 17)),
            (T + 70, 11, sys_entry(4, 5550000, 777)),
            (T + 80, 12, sys_exit(4, -2)),
            (T + 90, 11, sys_entry(999, 1, 2, 3, 4, 5, 6)),
            (T + 95, 12, sys_exit(999, -38)),
            (T + 100, 0, marker(b'hello\n')),
            (T + 110, 4, comm('worker') + struct.pack('<ii', 100, 100) + comm('worker') +
             struct.pack('<ii', 102, 102)),
            (T + 120, 5, struct.pack('<iiH', 102, 102, 7) + b'/bin/ls'),
            (T + 130, 15, struct.pack('<i', 101) + comm('worker-t') + comm('named') +
             struct.pack('<h', -5)),
            (T + 140, 9, struct.pack('<I', 3)), (T + 150, 10, struct.pack('<I', 3)),
            (T + 160, 8, struct.pack('<ii', 24, 1)),
            (T + 170, 2, comm('worker-t') + struct.pack('<iii', 101, 20, 1)),
        ])],
        1: [(T + 5, T + 200, 0, [
            (T + 15, 14, struct.pack('<ii', 0, 0) + comm('swapper/1')),
            (T + 200, 1, struct.pack('<16siiq16sii', comm('swapper/1'), 0, 20, 0,
                                     comm('worker-t'), 101, 20))]),
            (T + 300, T + 2 * T, 4, [
                (T + 300, 11, getppid), (T + 310, 12, sys_exit(110, 100)),
                (T + 320, 11, getppid), (T + 330, 12, sys_exit(110, 100))])],
        3: [(T + 50, T + 60, 0, [(T + 55, 9, struct.pack('<I', 9))])],
    }
    d = kernel_trace(os.path.join(ctx.tmp, 'k'), streams)
    out, info, r = lttng_export(ctx, d)
    check('the trace reports 4 events lost' in r.stderr, 'loss warning: %r' % r.stderr)
    meta = open(os.path.join(out, 'kernel', 'metadata')).read()
    check(meta.startswith('/* CTF 1.8 */\n'), meta[:100])
    for line in ('\tdomain = "kernel";', '\ttracer_name = "lttng-modules";',
                 '\ttracer_major = 2;', '\ttracer_minor = 13;', '\ttracer_patchlevel = 9;',
                 '\thostname = "gentrace";', '\tkernel_release = "6.12.0-synthetic";',
                 '\ttrace_name = "k";', '\toffset = 1700000000500000000;'):
        check(line + '\n' in meta, 'metadata lacks %r' % line)
    check(sorted(os.listdir(out)) == ['kernel'] and
          sorted(os.listdir(os.path.join(out, 'kernel'))) ==
          ['channel0_0', 'channel0_1', 'channel0_3', 'metadata'],
          'files: %s' % os.listdir(os.path.join(out, 'kernel')))
    # The streams span the trace: its first event to its last packet end.
    for cpu, c in info['cpus'].items():
        check(c['begin'] == T + 10 and c['end'] == 2 * T + T,
              'CPU %s spans [%s, %s]' % (cpu, c['begin'], c['end']))
    check(info['cpus']['1']['discarded'] == 4, 'discarded: %s' % info['cpus'])
    events, lost = bt2_lttng(out)
    check(lost == {1: 4}, 'babeltrace2 reports discarded events %s' % lost)
    got = {(e[2], e[3]) for e in events}
    want = [
        ('lttng_statedump_process_state', 'tid = 2, pid = 2, ppid = 0, name = "kthreadd", '
         'type = 1, mode = 5, submode = 0, status = 5, cpu = 0, file_table_address = 0x0'),
        ('lttng_statedump_process_state', 'tid = 50, pid = 50, ppid = 2, name = "kworker/0:1", '
         'type = 1, mode = 5, submode = 0, status = 5, cpu = 0, file_table_address = 0x0'),
        ('lttng_statedump_process_state', 'tid = 100, pid = 100, ppid = 1, name = "worker", '
         'type = 0, mode = 5, submode = 0, status = 2, cpu = 0, file_table_address = 0x0'),
        ('lttng_statedump_process_state', 'tid = 101, pid = 100, ppid = 1, name = "worker-t", '
         'type = 0, mode = 5, submode = 0, status = 5, cpu = 0, file_table_address = 0x0'),
        ('sched_switch', 'prev_comm = "x", prev_tid = 0, prev_prio = 20, prev_state = 0, '
         'next_comm = "worker", next_tid = 100, next_prio = 20'),
        ('syscall_entry_getppid', ''), ('syscall_exit_getppid', 'ret = 100'),
        ('syscall_entry_read', 'fd = 3, count = 4096'),
        ('syscall_exit_read', 'ret = 17, buf = 140000'),
        ('syscall_entry_newstat', 'filename = ""'),
        ('syscall_exit_newstat', 'ret = -2, statbuf = 777'),
        ('syscall_entry_unknown', 'id = 999, args = [ [0] = 1, [1] = 2, [2] = 3, [3] = 4, '
         '[4] = 5, [5] = 6 ]'),
        ('syscall_exit_unknown', 'id = 999, ret = -38, args = [ [0] = 1, [1] = 2, [2] = 3, '
         '[3] = 4, [4] = 5, [5] = 6 ]'),
        ('lttng_logger', '_msg_length = 6, msg = "hello\\n"'),
        ('sched_process_fork', 'parent_comm = "worker", parent_tid = 100, parent_pid = 100, '
         'parent_ns_inum = 0, child_comm = "worker", child_tid = 102, _vtids_length = 1, '
         'vtids = [ [0] = 102 ], child_pid = 102, child_ns_inum = 0'),
        ('sched_process_exec', 'filename = "/bin/ls", tid = 102, old_tid = 102'),
        ('task_rename', 'tid = 101, oldcomm = "worker-t", newcomm = "named", '
         'oom_score_adj = -5'),
        ('irq_handler_entry', 'irq = 24, name = "virtio0"'),
        ('irq_handler_exit', 'irq = 24, ret = 1'),
        ('irq_softirq_entry', 'vec = 3'), ('irq_softirq_exit', 'vec = 3'),
        ('sched_wakeup', 'comm = "worker-t", tid = 101, prio = 20, target_cpu = 1'),
        ('lttng_statedump_start', ''), ('lttng_statedump_end', ''),
    ]
    for w in want:
        check(w in got, 'babeltrace2 has no %s: { %s }; it has %s' % (
            w[0], w[1], sorted(x for x in got if x[0] == w[0])))
    # The dump: start before its first task, end at the first event that
    # is not the dump nor an interrupt (the switch at T + 30), on CPU 0.
    dump = [(e[0], e[1], e[2]) for e in events if e[2].startswith('lttng_statedump')]
    check(dump[0] == (T + 20, 0, 'lttng_statedump_start') and
          dump[-1] == (T + 30, 0, 'lttng_statedump_end') and len(dump) == 7,
          'state dump: %s' % dump)
    # Every event on its CPU at its time; the names as report's.
    rep = rt('report', d)
    want_ev = []
    for l in rep.stdout.splitlines():
        m = re.match(r'^\[(\d+)\.(\d+)\] cpu(\d+) \S+ (\w+):', l)
        if m and m.group(4) != 'ringtrace_statedump_cpu':
            want_ev.append((int(m.group(1)) * T + int(m.group(2)), int(m.group(3)), m.group(4)))
    have = [(e[0], e[1], lttng_name_of(e[2])) for e in events if lttng_name_of(e[2])]
    check(sorted(have) == sorted(want_ev), 'events differ from report:\n%s\n%s' % (
        sorted(set(have) ^ set(want_ev))[:8], len(have)))
    # lttng-analyses: the system calls per thread (CPU 1 switched to 101),
    # in its default intersection mode too (every stream spans the trace).
    a = os.path.join(ctx.tmp, 'analyses.json')
    r = run([sys.executable, LTTNG_CHECK, out, '--analyses', a, '--no-intersection-too'])
    check(r.returncode == 0, 'lttng-analyses: %s' % r.stdout[-2000:])
    a = json.load(open(a))
    want = {'100': {'getppid': 1, 'read': 1, 'newstat': 1, 'unknown': 1}, '101': {'getppid': 2}}
    check(a['syscalls'] == want and a['syscalls_no_intersection'] == want,
          'lttng-syscallstats: %s, with --no-intersection %s' % (
              a['syscalls'], a['syscalls_no_intersection']))
    check(a['irqs'] == {'24': {'name': 'virtio0', 'count': 1}}, 'lttng-irqstats: %s' % a['irqs'])
    check({'100', '101'} <= set(a['cputop']), 'lttng-cputop: %s' % a['cputop'])


# The scheduler events ringtrace.ko adds for the viewers, as the module
# names them, and LTTng 2.13.9's declarations of them (lttng-modules'
# include/instrumentation/events/sched.h; the same in a real recording).
SCHED_VIEWER_EVENTS = [
    (16, 'sched_waking', [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                          ('int32_t', 'prio', None), ('int32_t', 'target_cpu', None)]),
    (17, 'sched_process_free', [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                                ('int32_t', 'prio', None)]),
    (18, 'sched_migrate_task', [('utf8_t', 'comm', 16), ('int32_t', 'tid', None),
                                ('int32_t', 'prio', None), ('int32_t', 'orig_cpu', None),
                                ('int32_t', 'dest_cpu', None)]),
]
LTTNG_INT = 'integer { size = %d; align = 8; signed = %d; encoding = %s; base = 10; } _%s;'
LTTNG_COMM = 'integer { size = 8; align = 8; signed = 1; encoding = UTF8; base = 10; } _comm[16];'
LTTNG_SCHED_DECLS = {
    'sched_waking': [LTTNG_COMM] + [LTTNG_INT % (32, 1, 'none', f)
                                    for f in ('tid', 'prio', 'target_cpu')],
    'sched_process_free': [LTTNG_COMM] + [LTTNG_INT % (32, 1, 'none', f)
                                          for f in ('tid', 'prio')],
    'sched_migrate_task': [LTTNG_COMM] + [LTTNG_INT % (32, 1, 'none', f)
                                          for f in ('tid', 'prio', 'orig_cpu', 'dest_cpu')],
}


# Switches and samples with stacks (kernel, user, both, a user stack cut
# at its depth, none), on two CPUs.
LTTNG_STACK_EVENTS = [(0, e) for e in SAMPLE_EVENTS_OF_A_RUN] + [
    (1, (1500, 1, kswitch('sleeper', 300, 'swapper/1', 0))),
    (1, (1500, STACK_ID, kstack(*STACK_LEAF))),
    (1, (1500, USTACK_ID, gentrace.make_user_stack([UTEXT + 0x10, UTEXT + 0x234], 0x1))),
    (1, (2500, 1, kswitch('swapper/1', 0, 'sleeper', 300))),
    (1, (2600, SAMPLE_ID, sample(300, 1))),
    (1, (2600, STACK_ID, kstack(KTEXT + 0x2010))),
]


@test
def export_lttng_stacks(ctx):
    """export -f lttng: each event's kernel and user stacks as LTTng's
    callstack_kernel / callstack_user stream event context (lttng-modules'
    declarations), both on every event, empty where it had none, a user
    stack cut at its depth ending in LTTng's delimiter; no kernel_stack or
    user_stack event; cpu_sample an event of its own; babeltrace2 reads
    the stacks back as report prints them (lttng_check.py --stacks)."""
    d = os.path.join(ctx.tmp, 'lstacks')
    write_trace(d, SAMPLE_EVENTS, [[e for c, e in LTTNG_STACK_EVENTS if c == 0]])
    with open(os.path.join(d, 'cpu1'), 'wb') as f:
        f.write(make_packet(bytes(range(16)), 1, 0,
                            [e for c, e in LTTNG_STACK_EVENTS if c == 1]))
    hex_ips(d)
    out, info, r = lttng_export(ctx, d)
    check(r.stderr == '', 'export: nothing said: %r' % r.stderr)
    # No symbols in the trace: report prints every frame as its address.
    c = run([sys.executable, LTTNG_CHECK, out, '--stacks', d,
             '--ringtrace', RINGTRACE])
    check(c.returncode == 0 and c.stdout.count('\nok - ') + c.stdout.startswith('ok - ') == 3,
          'lttng_check --stacks: %s' % c.stdout[-3000:])
    check('same address where it prints one (%d)' % (2 + 4 + 2 + 4 + 1 + 1) in c.stdout,
          'every frame compared with report\'s address: %s' % c.stdout)
    r = run(['babeltrace2', '--clock-cycles', '--no-delta', out])
    check(r.returncode == 0 and not r.stderr, 'babeltrace2: %s' % r.stderr[-2000:])
    lines = [re.sub(r'^\[0*(\d+)\] \S+ ', r'\1 ', l) for l in r.stdout.splitlines()]
    k = ('_callstack_kernel_length = 4, callstack_kernel = [ [0] = 0xFFFFFFFF9A002010, '
         '[1] = 0xFFFFFFFF9A002134, [2] = 0xFFFFFFFFC0A10424, [3] = 0xFFFFFFFF9A001008 ]')
    none = '_callstack_kernel_length = 0, callstack_kernel = [ ]'
    nou = '_callstack_user_length = 0, callstack_user = [ ]'
    u2 = ('_callstack_user_length = 2, callstack_user = [ [0] = 0x55D0C0A01010, '
          '[1] = 0x55D0C0A01234 ]')
    want = [
        '500 sched_switch: { cpu_id = 0 }, { %s, %s }' % (none, nou),
        '1000 cpu_sample: { cpu_id = 0 }, { %s, %s }, { tid = 100, pid = 100, mode = 0 }'
        % (none, u2),
        '1500 sched_switch: { cpu_id = 1 }, { %s, _callstack_user_length = 3, callstack_user = '
        '[ [0] = 0x55D0C0A01010, [1] = 0x55D0C0A01234, [2] = 0xFFFFFFFFFFFFFFFF ] }' % k,
        '2000 cpu_sample: { cpu_id = 0 }, { %s, _callstack_user_length = 1, callstack_user = '
        '[ [0] = 0x55D0C0A01010 ] }, { tid = 100, pid = 100, mode = 1 }' % k,
        '2500 sched_switch: { cpu_id = 1 }, { %s, %s }' % (none, nou),
        '2600 cpu_sample: { cpu_id = 1 }, { _callstack_kernel_length = 1, callstack_kernel = '
        '[ [0] = 0xFFFFFFFF9A002010 ], %s }, { tid = 300, pid = 300, mode = 1 }' % nou,
        '3000 sched_switch: { cpu_id = 0 }, { %s, %s }' % (none, nou),
        '3500 cpu_sample: { cpu_id = 0 }, { %s, %s }, { tid = 0, pid = 0, mode = 2 }'
        % (none, nou),
    ]
    got = [re.sub(r' \}, \{ prev_comm = .*$', ' }', l) for l in lines[:8]]
    check(got == want, 'babeltrace2 reads the stacks in the contexts:\n%s\nwant\n%s' % (
        '\n'.join(got), '\n'.join(want)))
    check(len(lines) == 12 and not any(w in l for l in lines for w in (
        'kernel_stack', 'user_stack')), 'no stack record is an event: %s' % lines)
    check(info['events'].get('cpu_sample') == 6 and 'kernel_stack' not in info['classes'],
          'lttng_check: 6 cpu_sample, no kernel_stack class: %s' % info)
    check(info['classes'].get('cpu_sample') == ['tid', 'pid', 'mode'],
          'cpu_sample\'s fields: %s' % info['classes'].get('cpu_sample'))


@test
def export_lttng_scheduler_events(ctx):
    """sched_waking, sched_process_free and sched_migrate_task, and the
    env's machine, kernel_version and boottime_offset, as ringtrace.ko
    writes them: LTTng 2.13's declarations, the values babeltrace2 reads
    back, the waking attributed to the thread running where it fired
    (lttng-schedtop's waker, Trace Compass's critical path) and the
    migration counted by lttng-cputop."""
    T = 10**9

    def switch(prev, ptid, nxt, ntid, state=0):
        return struct.pack('<16siiq16sii', comm(prev), ptid, 20, state, comm(nxt), ntid, 20)

    streams = {
        0: [(T, T + 1000, 0, [
            (T + 10, 1, switch('swapper/0', 0, 'waker', 200)),
            (T + 20, 16, comm('sleeper') + struct.pack('<iii', 201, 20, 1)),
            (T + 25, 18, comm('sleeper') + struct.pack('<iiii', 201, 20, 0, 1)),
            (T + 60, 17, comm('gone') + struct.pack('<ii', 300, 20)),
            (T + 900, 1, switch('waker', 200, 'swapper/0', 0, 1)),
        ])],
        1: [(T, T + 1000, 0, [
            (T + 15, 1, switch('sleeper', 201, 'swapper/1', 0, 1)),
            (T + 30, 2, comm('sleeper') + struct.pack('<iii', 201, 20, 1)),
            (T + 50, 1, switch('swapper/1', 0, 'sleeper', 201)),
            (T + 800, 1, switch('sleeper', 201, 'swapper/1', 0, 1)),
        ])],
    }
    uuid = bytes(range(16, 32))
    d = os.path.join(ctx.tmp, 'sched')
    os.makedirs(d)
    meta = gentrace.metadata(uuid, 1700000000, 0, KERNEL_EVENTS + SCHED_VIEWER_EVENTS)
    meta = meta.replace('fields := struct { int32_t id;', 'fields := struct { %s' % SYSCALL_ENUM)
    env_more = ('\tmachine = "x86_64";\n'
                '\tkernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1";\n'
                '\tboottime_offset = 4000000000;\n};')
    check('\ttracer_minor = 0;\n};' in meta, 'gentrace env changed')
    meta = meta.replace('\ttracer_minor = 0;\n};', '\ttracer_minor = 0;\n' + env_more, 1)
    open(os.path.join(d, 'metadata'), 'w').write(meta)
    for cpu, packets in streams.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            for seq, (b, e, disc, evs) in enumerate(packets):
                f.write(kpacket(uuid, cpu, seq, evs, b, e, disc))
    out, info, r = lttng_export(ctx, d)
    check('machine' not in r.stderr, 'an x86_64 trace warned: %r' % r.stderr)
    kmeta = open(os.path.join(out, 'kernel', 'metadata')).read()
    # LTTng's env: kernel_version passes, machine and boottime_offset are
    # not LTTng's keys (its kernel clock is the monotonic one).
    check('\tkernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1";\n' in kmeta and
          'machine' not in kmeta and 'boottime' not in kmeta,
          'env: %s' % re.search(r'env \{.*?\};', kmeta, re.S).group(0))
    for name, decl in LTTNG_SCHED_DECLS.items():
        m = re.search(r'\tname = "%s";\n\tid = \d+;\n\tstream_id = 0;\n'
                      r'\tfields := struct \{\n(.*?)\t\};' % name, kmeta, re.S)
        check(m and [l.strip() for l in m.group(1).splitlines()] == decl,
              '%s is not declared as LTTng 2.13 does: %s' % (name, m and m.group(1)))
    events, _ = bt2_lttng(out)
    got = [(e[0] - T, e[1], e[2], e[3]) for e in events if e[2] != 'sched_switch']
    want = [
        (20, 0, 'sched_waking', 'comm = "sleeper", tid = 201, prio = 20, target_cpu = 1'),
        (25, 0, 'sched_migrate_task', 'comm = "sleeper", tid = 201, prio = 20, orig_cpu = 0, '
         'dest_cpu = 1'),
        (30, 1, 'sched_wakeup', 'comm = "sleeper", tid = 201, prio = 20, target_cpu = 1'),
        (60, 0, 'sched_process_free', 'comm = "gone", tid = 300, prio = 20'),
    ]
    check(got == want, 'babeltrace2 reads %s' % got)
    a = os.path.join(ctx.tmp, 'sched-analyses.json')
    r = run([sys.executable, LTTNG_CHECK, out, '--analyses', a])
    check(r.returncode == 0, 'lttng-analyses: %s' % r.stdout[-2000:])
    a = json.load(open(a))
    # Woken at T + 20 by waker (200, running on CPU 0), in at T + 50 on CPU 1.
    check(a['wakeups'].get('201') == [[200, 1, 20]],
          'lttng-schedtop: sleeper woken by %s' % a['wakeups'])
    check(a['schedtop_max_us'] == 0.03, 'lttng-schedtop: %s us' % a['schedtop_max_us'])
    check(a['cputop'].get('201', {}).get('migrations') == 1,
          'lttng-cputop: the sleeper\'s migrations: %s' % a['cputop'])
    # A machine other than x86_64: said, exported all the same.
    d2 = ctx.copy(d)
    open(os.path.join(d2, 'metadata'), 'w').write(meta.replace('"x86_64"', '"aarch64"'))
    r = rt('export', '-f', 'lttng', '-o', os.path.join(ctx.tmp, 'arm'), d2)
    check(r.returncode == 0 and 'aarch64 machine' in r.stderr,
          'an aarch64 trace: exit %d %r' % (r.returncode, r.stderr))


@test
def export_lttng_classes_follow_the_metadata(ctx):
    """A trace is untrusted: an enum label over a range of system call
    numbers (here 0 ... 1000000) and 3,000 distinct numbers under it give
    one pair of classes, not a pair per number -- the export's memory and
    metadata follow the trace's metadata, not its events."""
    T = 10**9
    evs = []
    for i in range(3000):
        evs.append((T + 10 * i, 11, sys_entry(1000 + i, 0, 0, 0, 0, 0, 0)))
        evs.append((T + 10 * i + 5, 12, sys_exit(1000 + i, 0)))
    uuid = bytes(range(16, 32))
    d = os.path.join(ctx.tmp, 'range')
    os.makedirs(d)
    meta = gentrace.metadata(uuid, 1700000000, 0, KERNEL_EVENTS)
    meta = meta.replace('fields := struct { int32_t id;', 'fields := struct { enum : '
                        'int32_t { "getppid" = 110, "many" = 1000 ... 1000000 } id;')
    open(os.path.join(d, 'metadata'), 'w').write(meta)
    with open(os.path.join(d, 'cpu0'), 'wb') as f:
        f.write(kpacket(uuid, 0, 0, evs, T, T + 40000))
    out, info, _ = lttng_export(ctx, d)
    kmeta = open(os.path.join(out, 'kernel', 'metadata')).read()
    names = re.findall(r'\tname = "(syscall_\w+)";', kmeta)
    check(sorted(names) == ['syscall_entry_many', 'syscall_exit_many'],
          '%d system call classes: %s' % (len(names), names[:4]))
    check(info['events'].get('syscall_entry_many') == 3000 and
          info['events'].get('syscall_exit_many') == 3000, 'events: %s' % info['events'])


@test
def export_lttng_agrees_with_report(ctx):
    """A large generated trace (events LTTng has no counterpart of, times
    that need the extended header, losses, packets past 1 MiB): every
    event at its time and CPU, with the same fields as babeltrace2 reads
    them from the trace itself, the losses where the trace says them."""
    d, e = ctx.gen('--lose', '0.01', '--drop-packets', '0.02', events=30000, cpus=3,
                   subbuf=16384)
    out, info, _ = lttng_export(ctx, d)
    check(info['headers'].get('extended', 0) > 100 and
          max(c['packets'] for c in info['cpus'].values()) > 1,
          'the export lacks extended headers or several packets: %s %s' % (
              info['headers'], info['cpus']))
    events, lost = bt2_lttng(out)
    lines, _, exp = expected(e)
    want = []
    for l in lines:
        if ' -- lost ' in l:
            continue
        ts, cpu, _, name = l.split(' ')[:4]
        want.append((parse_ts(ts), int(cpu[3:]), lttng_name_of(name.rstrip(':'))
                     if name != 'ringtrace_marker:' else 'ringtrace_marker'))
    have = [(t, c, lttng_name_of(n)) for t, c, n, _ in events]
    check(have == sorted(want, key=lambda x: (x[0], x[1])) or sorted(have) == sorted(want),
          'babeltrace2 reads %d events from the export, the trace has %d' % (len(have), len(want)))
    # Same values: the trace's own fields, as babeltrace2 prints both.
    mine = {}
    for t, c, n, f in events:
        if n != 'lttng_logger':
            mine.setdefault((t, c, n), []).append(f)
    # babeltrace2 2.0.4 prints an all-NUL text array as whatever text it
    # printed last: those events (an empty text in report) are not compared.
    empty = set()
    for l in rt('report', d).stdout.splitlines():
        m = re.match(r'^\[(\d+)\.(\d+)\] cpu(\d+) .*=""', l)
        if m:
            empty.add((int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3))))
    src = run(['babeltrace2', '--clock-cycles', '--no-delta', d])
    diff, first = 0, None
    for l in src.stdout.splitlines():
        m = re.match(r'^\[(\d+)\] \S+ (\w+): \{ cpu_id = (\d+), [^}]*\}, \{ ?(.*?) ?\}$', l)
        if not m or m.group(2) == 'ringtrace_marker' or \
                (int(m.group(1)), int(m.group(3))) in empty:
            continue
        fields = mine.get((int(m.group(1)), int(m.group(3)), m.group(2)), [])
        if m.group(4) not in fields:
            diff += 1
            first = first or (l, fields)
    check(diff == 0, '%d events with other fields than the trace\'s, first %s' % (diff, first))
    for cpu, v in exp['cpus'].items():
        check(info['cpus'][cpu[3:]]['discarded'] == v['discarded'],
              '%s: the export counts %d lost events, the trace %d' % (
                  cpu, info['cpus'][cpu[3:]]['discarded'], v['discarded']))
        check(lost.get(int(cpu[3:]), 0) == v['discarded'],
              '%s: babeltrace2 reports %s discarded events, the trace %d' % (
                  cpu, lost.get(int(cpu[3:])), v['discarded']))


@test
def export_lttng_damaged_and_errors(ctx):
    """A damaged trace: what is intact is exported, the damage said, exit
    3; --strict: exit 1 and nothing left.  -o: needed, never an existing
    non-empty directory (left as it was), an empty one is taken."""
    d, e = ctx.gen(events=900, cpus=2, seed=11)
    c = ctx.copy(d)
    path = os.path.join(c, 'cpu1')
    data = bytearray(open(path, 'rb').read())
    mid = packets_of(data)[len(packets_of(data)) // 2]
    data[mid:mid + 64] = b'\x55' * 64
    open(path, 'wb').write(data)
    out, info, r = lttng_export(ctx, c, status=3)
    check(('damaged: %s/cpu1: offset ' % c) in r.stderr, 'damage not said: %r' % r.stderr)
    rep = rt('report', c)
    n = len([l for l in rep.stdout.splitlines() if l.startswith('[') and ' -- lost ' not in l])
    events, _ = bt2_lttng(out)
    check(len(events) == n and n < len(expected(e)[0]),
          'export of the damaged trace: %d events, report %d' % (len(events), n))
    before = sorted(os.listdir(ctx.tmp))
    r = rt('export', '--strict', '-f', 'lttng', '-o', os.path.join(ctx.tmp, 'strict'), c)
    check(r.returncode == 1 and sorted(os.listdir(ctx.tmp)) == before,
          '--strict: exit %d, left %s' % (r.returncode, set(os.listdir(ctx.tmp)) - set(before)))
    r = rt('export', '-f', 'lttng', d)
    check(r.returncode == 2 and '-o' in r.stderr, 'no -o: exit %d %r' % (r.returncode, r.stderr))
    full = os.path.join(ctx.tmp, 'full')
    os.makedirs(full)
    open(os.path.join(full, 'keep'), 'w').write('mine')
    r = rt('export', '-f', 'lttng', '-o', full, d)
    check(r.returncode == 1 and 'not empty' in r.stderr and os.listdir(full) == ['keep'],
          'non-empty -o: exit %d %r %s' % (r.returncode, r.stderr, os.listdir(full)))
    empty = os.path.join(ctx.tmp, 'empty')
    os.makedirs(empty)
    r = rt('export', '-f', 'lttng', '-o', empty, d)
    check(r.returncode == 0 and os.listdir(empty) == ['kernel'],
          'empty -o: exit %d %r' % (r.returncode, r.stderr))
    check(not [f for f in os.listdir(ctx.tmp) if '.lttng-' in f], 'temporary directories left')


# ---- export -f perfetto ------------------------------------------------------------

PERFETTO_CHECK = os.path.join(HERE, 'perfetto_check.py')
PERFETTO_PROTO = os.path.join(TOOLS, 'cli', 'perfetto.proto')


def protobuf_python():
    """A Python with protobuf (Debian's python3-protobuf is Debian's
    python3's): perfetto_check.py needs it."""
    for py in (sys.executable, '/usr/bin/python3'):
        if run([py, '-c', 'import google.protobuf']).returncode == 0:
            return py
    raise Fail('no python3 with google.protobuf (python3-protobuf, tools/install-deps)')


def perfetto_check(trace, pftrace, *extra):
    """tools/tests/perfetto_check.py: every check passes."""
    r = run([protobuf_python(), PERFETTO_CHECK, trace, pftrace] + list(extra),
            env=dict(os.environ, RINGTRACE=RINGTRACE))
    check(r.returncode == 0 and 'not ok' not in r.stdout and r.stdout.count('\nok - ') > 8,
          'perfetto_check %s:\n%s%s' % (pftrace, r.stdout, r.stderr[-1000:]))
    return r.stdout


def published_schema():
    """Perfetto's perfetto_trace.proto, as tools/cli/perfetto.proto names it."""
    try:
        return perfetto_schema.published()
    except perfetto_schema.Missing as e:
        raise Fail(str(e))


def pf_text(pftrace):
    """protoc's text of a perfetto export, read with Perfetto's schema."""
    schema = published_schema()
    with open(pftrace, 'rb') as f:
        r = run(['protoc', '--decode=perfetto.protos.Trace', '-I',
                 os.path.dirname(schema), schema], stdin=f)
    check(r.returncode == 0, 'protoc --decode: %s' % r.stderr)
    return r.stdout


@test
def perfetto_schema_published(ctx):
    """tools/cli/perfetto.proto is Perfetto's published schema where it
    says anything: perfetto_schema.py finds no difference; and it finds
    each one made in a copy (a field's number, type, packing, oneof, an
    enum value, a message Perfetto has not)."""
    py = protobuf_python()
    script = os.path.join(HERE, 'perfetto_schema.py')
    r = run([py, script])
    m = re.search(r'perfetto_schema: (\d+) messages and enums, (\d+) fields, '
                  r'(\d+) enum values compared, 0 differ\n$', r.stdout)
    check(r.returncode == 0 and m and int(m.group(2)) > 100,
          'perfetto_schema.py: exit %d: %s%s' % (r.returncode, r.stdout[-1500:], r.stderr))
    ours = open(PERFETTO_PROTO).read()
    wrong = [
        ('optional bool lost_events = 3;', 'optional bool lost_events = 4;',
         '.perfetto.protos.FtraceEventBundle.lost_events: ours (number, type, label, '
         "type name, oneof, packed) (4, 8, 1, '', None, False), theirs (3, 8, 1, '', None, False)"),
        ('optional int64 prev_state = 4;', 'optional int32 prev_state = 4;',
         '.perfetto.protos.SchedSwitchFtraceEvent.prev_state: ours'),
        ('repeated uint64 args = 2;', 'repeated uint64 args = 2 [packed = true];',
         '.perfetto.protos.SysEnterFtraceEvent.args: ours'),
        ('  oneof optional_trusted_packet_sequence_id {\n    uint32 trusted_packet_sequence_id = 10;\n  }',
         '  optional uint32 trusted_packet_sequence_id = 10;',
         '.perfetto.protos.TracePacket.trusted_packet_sequence_id: ours'),
        ('BUILTIN_CLOCK_BOOTTIME = 6;', 'BUILTIN_CLOCK_BOOTTIME = 7;',
         '.perfetto.protos.BuiltinClock.BUILTIN_CLOCK_BOOTTIME = 7: theirs 6'),
        ('message SoftirqExitFtraceEvent {', 'message SoftirqLeaveFtraceEvent {',
         '.perfetto.protos.SoftirqLeaveFtraceEvent: not in their schema'),
    ]
    for old, new, say in wrong:
        check(ours.count(old) == 1, 'perfetto.proto has no %r' % old)
        d = os.path.join(ctx.tmp, 'w%d' % wrong.index((old, new, say)))
        os.makedirs(d)
        path = os.path.join(d, 'perfetto.proto')
        with open(path, 'w') as f:
            f.write(ours.replace(old, new).replace('SoftirqExitFtraceEvent softirq_exit',
                                                   'SoftirqLeaveFtraceEvent softirq_exit'
                                                   if 'Leave' in new else
                                                   'SoftirqExitFtraceEvent softirq_exit'))
        r = run([py, script, path])
        check(r.returncode == 1 and say in r.stdout and
              re.search(r', [1-9]\d* differ\n$', r.stdout),
              '%s instead of %s: exit %d: %s%s' % (new, old, r.returncode, r.stdout[-1500:],
                                                   r.stderr))


# The module's events (module/probes.c, Documentation/ringtrace/events.rst),
# and one it does not have (a module's own, through the writer API).
# The module's events (module/probes.c, Documentation/ringtrace/events.rst),
# and one it does not have (a module's own, through the writer API).
SCHED_EVENTS = [gentrace.EVENTS[0]] + [(i, n, MODULE_LAYOUTS[n]) for i, n in (
    (1, 'sched_switch'), (2, 'sched_waking'), (3, 'sched_process_fork'),
    (4, 'sched_process_exec'), (5, 'sched_process_exit'), (6, 'sched_process_free'),
    (7, 'irq_handler_entry'), (8, 'irq_handler_exit'), (9, 'irq_softirq_entry'),
    (10, 'irq_softirq_exit'), (11, 'syscall_entry'), (12, 'syscall_exit'),
    (13, 'ringtrace_statedump_task'), (14, 'ringtrace_statedump_cpu'), (15, 'task_rename'),
    (16, 'sched_migrate_task'),
)] + [
    (17, 'mymod_sample', [('int32_t', 'delta', None), ('uint64_t', 'count', None),
                          ('utf8_t', 'label', 16), ('uint8_t', 'n', None),
                          ('int16_t', 'seq', 'n')]),
]


def sw(prev, prev_tid, prev_prio, state, nxt, next_tid, next_prio):
    return struct.pack('<16siiq16sii', comm(prev), prev_tid, prev_prio, state,
                       comm(nxt), next_tid, next_prio)


def wake(name, tid, prio, cpu):
    return struct.pack('<16siii', comm(name), tid, prio, cpu)


def fork(parent, ptid, ppid, child, ctid, cpid):
    return struct.pack('<16sii16sii', comm(parent), ptid, ppid, comm(child), ctid, cpid)


def text_field(fmt, *vals, text):
    return struct.pack(fmt, *vals) + struct.pack('<H', len(text)) + text


def sched_trace(d, cpus, env='', lost=None):
    """A trace directory of SCHED_EVENTS: @cpus {cpu: [packet, ...]},
    each packet a list of (time, event id, payload); @env more env lines;
    @lost {cpu: {packet index: events_discarded}}."""
    uuid = bytes(range(16))
    os.makedirs(d)
    text = gentrace.metadata(uuid, 1700000000, 250000000, SCHED_EVENTS)
    text = text.replace('\ttracer_name', env + '\ttracer_name')
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(text)
    for cpu, packets in cpus.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            for seq, p in enumerate(packets):
                data = bytearray(make_packet(uuid, cpu, seq, p))
                disc = (lost or {}).get(cpu, {}).get(seq)
                if disc:
                    struct.pack_into('<Q', data, OFF['discarded'], disc)
                f.write(data)
    return d


BOFF = 5000000000
SCHED_ENV = ('\tboottime_offset = %d;\n\tmachine = "aarch64";\n'
             '\tkernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.57-1";\n' % BOFF)


def workload_trace(d, env=SCHED_ENV, lost=None):
    """Two CPUs: a shell forks a child that renames itself, execs, starts
    a thread, makes a system call and exits; markers, an interrupt, a
    softirq, a migration, an event of another module."""
    M = 1000000
    cpu0 = [[
        (1 * M, 14, struct.pack('<ii16s', 100, 100, comm('shell'))),
        (1 * M + 100, 13, struct.pack('<iii16s', 1, 1, 0, comm('init'))),
        (1 * M + 200, 13, struct.pack('<iii16s', 100, 100, 1, comm('shell'))),
        (1 * M + 300, 13, struct.pack('<iii16s', 101, 100, 1, comm('shell-worker'))),
        (2 * M, 11, sys_entry(57, 1, 2, 3, 4, 5, 6)),
        (2 * M + 100, 3, fork('shell', 100, 100, 'shell', 200, 200)),
        (2 * M + 200, 2, wake('shell', 200, 20, 1)),
        (2 * M + 300, 12, sys_exit(57, 200)),
        (2 * M + 400, 0, marker(b'B|100|build')),
        (2 * M + 500, 0, marker(b'hello|world\n')),
    ], [
        (2 * M + 600, 1, sw('shell', 100, 20, 1, 'swapper/0', 0, 20)),
        (2 * M + 700, 7, text_field('<i', 11, text=b'virtio0')),
        (2 * M + 800, 8, struct.pack('<ii', 11, 1)),
        (2 * M + 900, 9, struct.pack('<I', 1)),
        (2 * M + 1000, 10, struct.pack('<I', 1)),
        (2 * M + 1100, 16, struct.pack('<16siiii', comm('shell-worker'), 101, 20, 0, 1)),
        (2 * M + 1200, 17, struct.pack('<iQ16sB2h', -5, 1 << 40, comm('tick'), 2, -1, 7)),
    ]]
    cpu1 = [[
        (1 * M + 50, 14, struct.pack('<ii16s', 0, 0, comm('swapper/1'))),
        (2 * M + 250, 1, sw('swapper/1', 0, 20, 0, 'shell', 200, 20)),
        (2 * M + 350, 15, struct.pack('<i16s16sh', 200, comm('shell'), comm('child'), -100)),
        (2 * M + 450, 4, text_field('<ii', 200, 200, text=b'/usr/bin/child')),
        (2 * M + 550, 3, fork('child', 200, 200, 'child', 201, 200)),
        (2 * M + 650, 11, sys_entry(110)),
        (2 * M + 750, 12, sys_exit(110, 100)),
    ], [
        (2 * M + 850, 5, struct.pack('<16sii', comm('child'), 200, -80)),
    ], [
        (2 * M + 950, 1, sw('child', 200, -80, 16, 'swapper/1', 0, 20)),
        (2 * M + 1050, 6, struct.pack('<16sii', comm('child'), 200, -80)),
    ]]
    return sched_trace(d, {0: cpu0, 1: cpu1}, env=env, lost=lost)


@test
def perfetto_workload(ctx):
    """export -f perfetto of a small workload: each event is report's,
    with its values in the kernel's terms (prio, clone flags), times on
    BOOTTIME; the processes and threads; markers; the system; a loss
    (right before a switch: what runs on a CPU after a loss is known from
    its next switch on)."""
    d = workload_trace(os.path.join(ctx.tmp, 'w'), lost={1: {2: 5}})
    out = os.path.join(ctx.tmp, 'w.pftrace')
    r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
    clean_run(r, 'export -f perfetto')
    check(r.returncode == 0 and r.stderr == 'ringtrace: the trace reports 5 events lost '
          'while recording\n', 'exit %d: %r' % (r.returncode, r.stderr))
    perfetto_check(d, out)
    t = pf_text(out)
    boot = lambda ns: 'timestamp: %d' % (ns + BOFF)
    want = [
        # The clocks at the first event, 1 ms of CLOCK_MONOTONIC.
        'clocks {\n      clock_id: 6\n      timestamp: %d\n' % (1000000 + BOFF),
        'clocks {\n      clock_id: 3\n      timestamp: 1000000\n',
        'clocks {\n      clock_id: 1\n      timestamp: %d\n' % (1700000000250000000 + 1000000),
        'utsname {\n      sysname: "Linux"\n      version: "#1 SMP PREEMPT_DYNAMIC Debian '
        '6.12.57-1"\n      release: "6.12.0-synthetic"\n      machine: "aarch64"\n    }\n'
        '    tracing_service_version: "ringtrace ',
        'num_cpus: 2\n',
        # The state dump: processes with their parent and name, threads.
        'processes {\n      pid: 1\n      ppid: 0\n      cmdline: "init"\n    }\n'
        '    processes {\n      pid: 100\n      ppid: 1\n      cmdline: "shell"\n    }\n'
        '    threads {\n      tid: 101\n      tgid: 100\n    }\n  }\n  ' + boot(1000300),
        # The fork: task_newtask, then the process just after it.
        'pid: 100\n      task_newtask {\n        pid: 200\n        comm: "shell"\n'
        '        clone_flags: 0\n',
        'processes {\n      pid: 200\n      ppid: 100\n      cmdline: "shell"\n    }\n  }\n  '
        + boot(2000101),
        # The exec: the program as its cmdline.
        'processes {\n      pid: 200\n      ppid: 100\n      cmdline: "/usr/bin/child"\n'
        '    }\n  }\n  ' + boot(2000450),
        # A thread: CLONE_THREAD (with CLONE_VM and CLONE_SIGHAND).
        'task_newtask {\n        pid: 201\n        comm: "child"\n        clone_flags: 67840\n',
        'threads {\n      tid: 201\n      tgid: 200\n    }\n  }\n  ' + boot(2000551),
        # Priorities are the kernel's; prev_state as the kernel reports it.
        boot(2000950) + '\n      pid: 200\n      sched_switch {\n        prev_comm: "child"\n'
        '        prev_pid: 200\n        prev_prio: 20\n        prev_state: 16\n'
        '        next_comm: "swapper/1"\n        next_pid: 0\n        next_prio: 120\n',
        'sched_waking {\n        comm: "shell"\n        pid: 200\n        prio: 120\n'
        '        target_cpu: 1\n',
        'sched_process_exit {\n        comm: "child"\n        pid: 200\n        tgid: 200\n'
        '        prio: 20\n',
        'sched_process_free {\n        comm: "child"\n        pid: 200\n        prio: 20\n',
        'sched_migrate_task {\n        comm: "shell-worker"\n        pid: 101\n'
        '        prio: 120\n        orig_cpu: 0\n        dest_cpu: 1\n',
        'task_rename {\n        pid: 200\n        oldcomm: "shell"\n        newcomm: "child"\n'
        '        oom_score_adj: -100\n',
        'sys_enter {\n        id: 57\n        args: 1\n        args: 2\n        args: 3\n'
        '        args: 4\n        args: 5\n        args: 6\n      }',
        'sys_exit {\n        id: 110\n        ret: 100\n',
        'irq_handler_entry {\n        irq: 11\n        name: "virtio0"\n',
        'irq_handler_exit {\n        irq: 11\n        ret: 1\n',
        'softirq_entry {\n        vec: 1\n', 'softirq_exit {\n        vec: 1\n',
        # Markers: atrace as it is, other text an instant, its | a broken bar.
        'print {\n        buf: "B|100|build"\n',
        'print {\n        buf: "I|100|hello\\302\\246world\\n"\n',
        # Another module's event, generic.
        'generic {\n        event_name: "mymod_sample"\n        field {\n          name: "delta"\n'
        '          int_value: -5\n        }\n        field {\n          name: "count"\n'
        '          uint_value: 1099511627776\n        }\n        field {\n          name: "label"\n'
        '          str_value: "tick"\n        }\n        field {\n          name: "n"\n'
        '          uint_value: 2\n        }\n        field {\n          name: "seq"\n'
        '          str_value: "[-1, 7]"\n',
        # The loss: counted.
        'ftrace_stats {\n    phase: START_OF_TRACE\n    cpu_stats {\n      cpu: 0\n'
        '      overrun: 0\n    }\n    cpu_stats {\n      cpu: 1\n      overrun: 0\n',
        'ftrace_stats {\n    phase: END_OF_TRACE\n    cpu_stats {\n      cpu: 0\n'
        '      overrun: 0\n    }\n    cpu_stats {\n      cpu: 1\n      overrun: 5\n',
    ]
    missing = [w for w in want if w not in t]
    check(not missing, 'not in the export:\n%s\n--- export:\n%s' % (
        '\n'.join(missing[:3]), t[:6000]))
    # The loss: flagged on CPU 1's first bundle after it, only there.
    bundles = t.split('ftrace_events {')[1:]
    lost = [b for b in bundles if 'lost_events: true' in b]
    check(len(bundles) == 3 and len(lost) == 1 and lost[0].startswith(
        '\n    cpu: 1\n    event {\n      ' + boot(2000950)),
          'bundles: %d, with lost_events: %r' % (len(bundles), lost))
    # The state dump is the ProcessTree, not events.
    check('statedump' not in t, 'a state dump event in the export')


@test
def perfetto_clock_env(ctx):
    """A trace of an older module, without boottime_offset and machine:
    times stay CLOCK_MONOTONIC's, system calls x86_64's, said in one line;
    without sched_waking (it had sched_wakeup) and sched_process_free, the
    same line says so too.  A boottime_offset that is not a number of
    nanoseconds is said and taken as 0."""
    older = 'the trace is of an older ringtrace.ko: '
    no_clock = ('no env boottime_offset (its CLOCK_MONOTONIC times are written as BOOTTIME), '
                'no env machine (system calls are named as x86_64\'s)')
    no_events = ('no event sched_waking (Perfetto shows no wakers and no runnable time), '
                 'no event sched_process_free (Perfetto ends no thread)')
    for i, (env, events, say) in enumerate((
            ('', True, older + no_clock),
            ('', False, older + no_clock + ', ' + no_events),
            ('\tboottime_offset = "-3";\n\tmachine = "x86_64";\n', True,
             "the trace's boottime_offset '-3' is not a number of nanoseconds: taken as 0"),
            (SCHED_ENV, False, older + no_events))):
        d = workload_trace(os.path.join(ctx.tmp, 'e%d' % i), env=env)
        if not events:
            # An older module's metadata: sched_wakeup, no sched_process_free.
            path = os.path.join(d, 'metadata')
            text = open(path).read()
            check('"sched_waking"' in text and '"sched_process_free"' in text, 'metadata')
            open(path, 'w').write(text.replace('"sched_waking"', '"sched_wakeup"').replace(
                '"sched_process_free"', '"sched_process_gone"'))
        out = d + '.pftrace'
        r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
        clean_run(r, 'export')
        check(r.returncode == 0 and r.stderr == 'ringtrace: %s\n' % say,
              'exit %d, stderr %r' % (r.returncode, r.stderr))
        perfetto_check(d, out)
        t = pf_text(out)
        boff = 0 if env != SCHED_ENV else BOFF
        check('clock_id: 6\n      timestamp: %d\n' % (1000000 + boff) in t and
              'machine: "%s"' % ('aarch64' if env == SCHED_ENV else 'x86_64') in t,
              'clocks or machine: %s' % t[:800])
        check(('sched_waking {' in t) == events and ('sched_wakeup {' in t) != events and
              ('sched_process_free {' in t) == events,
              'sched_waking, sched_wakeup, sched_process_free: %s' % t)


@test
def perfetto_streams(ctx):
    """Binary goes to a file or a pipe, not to a terminal; what exports
    to stdout is what exports to -o; memory stays flat whatever the
    trace's size (bundles are flushed, never kept)."""
    import pty
    d = workload_trace(os.path.join(ctx.tmp, 'w'))
    out = d + '.pftrace'
    r = rt('export', '-f', 'perfetto', '-o', out, d)
    check(r.returncode == 0, r.stderr)
    r = subprocess.run([RINGTRACE, 'export', '-f', 'perfetto', d], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    check(r.returncode == 0 and r.stdout == open(out, 'rb').read(),
          'stdout differs from -o: exit %d, %d bytes' % (r.returncode, len(r.stdout)))
    master, slave = pty.openpty()
    try:
        r = subprocess.run([RINGTRACE, 'export', '-f', 'perfetto', d], stdout=slave,
                           stderr=subprocess.PIPE, universal_newlines=True)
    finally:
        os.close(slave)
        os.close(master)
    check(r.returncode == 1 and r.stderr.startswith('ringtrace export: -f perfetto writes a '
                                                    'binary file: -o FILE names it'),
          'to a terminal: exit %d, %r' % (r.returncode, r.stderr))

    # 2 x 300k system calls: 14 MB of export, under an 8 MiB limit of data
    # (heap and anonymous maps: RLIMIT_DATA).  What the exporter keeps is
    # bounded: it needs less than 1 MiB of it.
    p = os.path.join(ctx.tmp, 'big')
    uuid = bytes(range(16))
    os.makedirs(p)
    with open(os.path.join(p, 'metadata'), 'w') as f:
        f.write(gentrace.metadata(uuid, 1700000000, 0, SCHED_EVENTS).replace(
            '\ttracer_name', SCHED_ENV + '\ttracer_name'))
    for cpu in (0, 1):
        with open(os.path.join(p, 'cpu%d' % cpu), 'wb') as f:
            f.write(make_packet(uuid, cpu, 0, [(1000, 1, sw('a', 0, 20, 0, 'w', 10 + cpu, 20))]))
            for seq in range(1, 1501):
                f.write(make_packet(uuid, cpu, seq, [
                    (2000 + 2 * i, 11, sys_entry(39, i, 0, 0, 0, 0, 0))
                    if i % 2 == 0 else (2000 + 2 * i, 12, sys_exit(39, i))
                    for i in range(seq * 200, seq * 200 + 200)]))

    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (8 << 20, 8 << 20))

    r = subprocess.run([RINGTRACE, 'export', '-f', 'perfetto', '-o', p + '.pftrace', p],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, preexec_fn=limit)
    size = os.path.getsize(p + '.pftrace') if os.path.exists(p + '.pftrace') else 0
    check(r.returncode == 0 and size > 12 << 20, '2 x 300k events in 8 MiB of data: exit %d, '
          '%d bytes written: %s' % (r.returncode, size, r.stderr))


@test
def perfetto_damaged(ctx):
    """A damaged trace: what is intact is exported (report's events,
    one for one), the damage said, exit 3; --strict fails."""
    d = workload_trace(os.path.join(ctx.tmp, 'w'))
    path = os.path.join(d, 'cpu0')
    data = bytearray(open(path, 'rb').read())
    pkts = packets_of(data)
    struct.pack_into('<I', data, pkts[0] + OFF['magic'], 0xdeadbeef)
    open(path, 'wb').write(data)
    out = d + '.pftrace'
    r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
    clean_run(r, 'export')
    check(r.returncode == 3 and 'damaged: %s/cpu0: ' % d in r.stderr,
          'exit %d: %r' % (r.returncode, r.stderr))
    perfetto_check(d, out)
    t = pf_text(out)
    check('irq_handler_entry' in t and 'task_rename' in t,
          'the intact packets of both CPUs are not all there')
    check('pid: 100\n      ppid: 1' not in t, 'the damaged packet\'s state dump is there')
    r = rt('export', '--strict', '-f', 'perfetto', '-o', out, d, asan=True)
    check(r.returncode == 1 and 'cpu0' in r.stderr, 'strict: exit %d: %r' % (
        r.returncode, r.stderr))


@test
def perfetto_high_cpus(ctx):
    """Perfetto refuses a whole trace with a bundle of CPU 1024 or more:
    such a CPU's events are left out and counted; times past 2^63 ns
    too."""
    d = sched_trace(os.path.join(ctx.tmp, 'h'), {
        3: [[(1000, 1, sw('a', 7, 20, 0, 'b', 8, 20)), (2000, 12, sys_exit(3, 0)),
             (1 << 40, 12, sys_exit(3, 0))]],
        1500: [[(1000, 1, sw('a', 9, 20, 0, 'c', 10, 20)), (3000, 12, sys_exit(3, 0))]],
    }, env=SCHED_ENV)
    out = d + '.pftrace'
    r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
    clean_run(r, 'export')
    check(r.returncode == 0 and 'ringtrace: 2 events left out: Perfetto reads CPUs below '
          '1024 only\n' in r.stderr, 'exit %d: %r' % (r.returncode, r.stderr))
    t = pf_text(out)
    check(t.count('ftrace_events {') == 1 and 'cpu: 3\n' in t and 'cpu: 1500\n' not in t
          .split('ftrace_stats')[0] and 'num_cpus: 1501' in t, t[:3000])
    m = os.path.join(d, 'metadata')
    # A clock of 1 Hz: 2^40 cycles are 2^40 s, past 2^63 ns.
    text = open(m).read().replace('freq = 1000000000;', 'freq = 1;')
    open(m, 'w').write(text)
    r = rt('export', '-f', 'perfetto', '-o', out, d, asan=True)
    clean_run(r, 'export, 1 Hz')
    check(r.returncode == 0 and 'ringtrace: 1 events left out: their time is past what '
          "Perfetto's nanoseconds hold (2^63)\n" in r.stderr, 'exit %d: %r' % (
              r.returncode, r.stderr))
    t = pf_text(out)
    check(t.count('sys_exit {') == 1 and 'timestamp: %d\n' % (2000 * 10**9 + BOFF) in t,
          'the events of CPU 3 in range: %s' % t[:3000])


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        k = rng.random()
        if not data:
            break
        i = rng.randrange(len(data))
        if k < 0.5:
            data[i] ^= 1 << rng.randrange(8)
        elif k < 0.7:
            data[i] = rng.choice([0, 0xff, 0x7f, 0x80, 31])
        elif k < 0.8:
            del data[i:i + rng.randint(1, 64)]
        elif k < 0.9:
            data[i:i] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
        else:
            del data[i:]
    return bytes(data)


# ---- several directories: chunk sets, hosts ------------------------------------

TS = re.compile(r'\[(\d+)\.(\d{9})\]')


def ts_ns(text):
    m = TS.search(text)
    return int(m.group(1)) * 10**9 + int(m.group(2))


def chunk_sets(ctx, d, host='gentrace', boot='boot-1', trace='trace-1'):
    """The rotated trace @d split into chunk sets as ringtraced --on-chunk
    lays them out (chunk k+1 holds part k of every CPU), each with its
    metadata and a manifest.json whose times come from reading the set
    alone; their directories, by sequence."""
    with open(os.path.join(d, 'metadata')) as f:
        meta = f.read()
    uuid = re.search(r'trace \{[^}]*?uuid = "([^"]+)"', meta, re.S).group(1)
    offset = re.search(r'offset_s = (-?\d+);\s*offset = (\d+);', meta)
    parts = {}
    for f in os.listdir(d):
        m = re.match(r'cpu(\d+)-(\d+)\.zst$', f)
        if m:
            parts.setdefault(int(m.group(2)), []).append((int(m.group(1)), f))
    sets = []
    for k in sorted(parts):
        seq = k + 1
        s = os.path.join(ctx.tmp, '%s.chunk-%06d' % (host, seq))
        os.makedirs(s)
        files = []
        for cpu, f in sorted(parts[k]):
            name = 'cpu%d-%06d.zst' % (cpu, seq)
            shutil.copy(os.path.join(d, f), os.path.join(s, name))
            files.append(name)
        shutil.copy(os.path.join(d, 'metadata'), os.path.join(s, 'metadata'))
        r = rt('report', s)
        check(r.returncode == 0, 'set %d alone: %s' % (seq, r.stderr))
        cpus = []
        for l in r.stdout.splitlines():
            m = re.match(r'cpu(\d+): packets=(\d+) events=(\d+) .*first=(\S+) last=(\S+)', l)
            if m:
                ev = int(m.group(3))
                cpus.append({'cpu': int(m.group(1)), 'file': 'cpu%s-%06d.zst' % (m.group(1), seq),
                             'packets': int(m.group(2)), 'events': ev, 'events_lost': 0,
                             'first_timestamp': ts_ns(m.group(4)) if ev else 0,
                             'last_timestamp': ts_ns(m.group(5)) if ev else 0})
        wall = int(offset.group(1)) * 10**9 + int(offset.group(2))
        man = {'format': 'ringtrace-chunk-set', 'format_version': 1, 'host': host,
               'boot_id': boot, 'kernel_release': '6.12', 'ringtrace_version': 'test',
               'trace': trace, 'trace_uuid': uuid, 'sequence': seq,
               'clock': {'name': 'monotonic', 'monotonic_ns': 1, 'realtime_ns': 1 + wall,
                         'boottime_ns': 1, 'realtime_offset_ns': wall,
                         'boottime_offset_ns': 0},
               'cpus': cpus,
               'files': [{'name': f, 'size': os.path.getsize(os.path.join(s, f)),
                          'xxh64': file_xxh64(os.path.join(s, f))}
                         for f in files + ['metadata']]}
        with open(os.path.join(s, 'manifest.json'), 'w') as f:
            json.dump(man, f, indent=2)
        sets.append(s)
    return sets


def rotated(ctx, seed=None):
    d, e = ctx.gen('--zstd', 'rotate', '--frame-packets', '2', '--rotate-frames', '2',
                   '--lose', '0.01', seed=seed)
    return d


@test
def chunk_sets_in_any_order(ctx):
    """One recording's chunk sets, shuffled: report, --stat and export print
    what the whole trace does, byte for byte."""
    d = rotated(ctx)
    sets = chunk_sets(ctx, d)
    check(len(sets) >= 3, 'only %d sets' % len(sets))
    shuffled = list(reversed(sets))
    random.Random(1).shuffle(shuffled)
    for opts in ([], ['--stat'], ['--wall'], ['--cpu', '1', '-e', 'test_*']):
        whole = rt('report', *opts, d)
        got = rt('report', *opts, *shuffled, asan=True)
        check(whole.returncode == 0 and got.returncode == 0,
              'report %s: %s %s' % (opts, whole.stderr, got.stderr))
        check(got.stdout == whole.stdout,
              'report %s of the sets differs from the whole trace' % opts)
    for fmt in ('systrace', 'chrome-json'):
        whole = rt('export', '-f', fmt, d)
        got = rt('export', '-f', fmt, *shuffled, asan=True)
        check(got.returncode == 0 and got.stdout == whole.stdout,
              'export -f %s of the sets differs: %s' % (fmt, got.stderr))


@test
def chunk_set_gap(ctx):
    """A set missing from the sequence is named as a gap, with its times."""
    d = rotated(ctx)
    sets = chunk_sets(ctx, d)
    check(len(sets) >= 3, 'only %d sets' % len(sets))
    given = [sets[0]] + sets[2:]
    with open(os.path.join(sets[0], 'manifest.json')) as f:
        before = max(c['last_timestamp'] for c in json.load(f)['cpus'])
    with open(os.path.join(sets[2], 'manifest.json')) as f:
        after = min(c['first_timestamp'] for c in json.load(f)['cpus'] if c['events'])
    after = max(after, before)       # CPUs' sets of gentrace overlap in time
    r = rt('report', *reversed(given), asan=True)
    check(r.returncode == 0, r.stderr)
    gaps = [l for l in r.stdout.splitlines() if ' -- gap: ' in l]
    want = '[%d.%09d] -- gap: chunk set 2 not given, up to [%d.%09d]' % (
        before // 10**9, before % 10**9, after // 10**9, after % 10**9)
    check(gaps == [want], 'gap lines %s, expected [%s]' % (gaps, want))
    lines = r.stdout.splitlines()
    at = lines.index(want)
    check(all(ts_ns(l) <= before for l in lines[:at] if l.startswith('[')) and
          all(ts_ns(l) >= before for l in lines[at + 1:] if l.startswith('[')),
          'the gap line is not at its time')
    st = rt('report', '--stat', *given)
    check(st.returncode == 0 and ('  ' + want) in st.stdout.splitlines(),
          '--stat does not name the gap: %s' % st.stdout)
    r = rt('report', *sets[1:])
    check(r.returncode == 0 and
          '-- gap: chunk set 1 not given, everything before it' in r.stdout,
          'a missing first set is not said: %s' % r.stdout[:300])
    r = rt('export', '-f', 'systrace', *given)
    check(r.returncode == 0 and 'chunk sets 2-2 not given' in r.stderr,
          'export does not say the gap: %s' % r.stderr)


def with_host(d, host, shift_ns):
    """@d's metadata with another hostname and its wall clock @shift_ns later."""
    path = os.path.join(d, 'metadata')
    with open(path) as f:
        meta = f.read()
    m = re.search(r'offset_s = (-?\d+);(\s*)offset = (\d+);', meta)
    off = int(m.group(1)) * 10**9 + int(m.group(3)) + shift_ns
    meta = meta.replace(m.group(0), 'offset_s = %d;%soffset = %d;' % (
        off // 10**9, m.group(2), off % 10**9))
    meta = re.sub(r'hostname = "[^"]*";', 'hostname = "%s";' % host, meta)
    with open(path, 'w') as f:
        f.write(meta)


@test
def hosts_merged_on_wall_clock(ctx):
    """Two machines' traces: events interleave on wall-clock time, each
    with its host; --stat has a section per host, each the host's own."""
    a, _ = ctx.gen(events=300, seed=11)
    b, _ = ctx.gen(events=300, seed=12)
    first = [ts_ns(rt('report', '--wall', x).stdout) for x in (a, b)]
    with_host(b, 'hostb', first[0] - first[1] + 1000)
    each = []
    for x, host in ((a, 'gentrace'), (b, 'hostb')):
        r = rt('report', '--wall', x)
        check(r.returncode == 0, r.stderr)
        each += [(ts_ns(l), TS.sub(lambda m: m.group(0) + ' ' + host, l, count=1))
                 for l in r.stdout.splitlines() if l.startswith('[')]
    want = [l for _, l in sorted(each, key=lambda x: x[0])]
    r = rt('report', a, b, asan=True)
    check(r.returncode == 0, r.stderr)
    got = [l for l in r.stdout.splitlines() if l.startswith('[')]
    check(got == want, 'merged lines differ (%d vs %d lines)' % (len(got), len(want)))
    hosts = [l.split(' ')[1] for l in got]
    switches = sum(1 for x, y in zip(hosts, hosts[1:]) if x != y)
    check(switches > 10, 'the hosts do not interleave (%d switches)' % switches)
    st = rt('report', '--stat', a, b).stdout
    sa = rt('report', '--stat', a).stdout
    sb = rt('report', '--stat', b).stdout
    check(st == 'host gentrace\n' + sa + '\nhost hostb\n' + sb,
          '--stat of two hosts is not each host\'s own')
    r = rt('export', '-f', 'chrome-json', a, b)
    check(r.returncode == 1 and 'hold 2 recordings (gentrace, hostb)' in r.stderr,
          'export of two hosts: %d %s' % (r.returncode, r.stderr))
    # Chunk sets of a host merge with a plain trace of another.
    c = rotated(ctx, seed=13)
    sets = chunk_sets(ctx, c, host='hostc')
    r = rt('report', a, *sets, asan=True)
    check(r.returncode == 0 and ' hostc cpu' in r.stdout and ' gentrace cpu' in r.stdout,
          'sets and a trace: %s' % r.stderr)


@test
def chunk_sets_refused(ctx):
    """Bad manifests and sets that do not belong together: a clear error."""
    d = rotated(ctx)
    sets = chunk_sets(ctx, d)

    def bad(why, *dirs):
        r = rt('report', *dirs, asan=True)
        check(r.returncode == 1 and 'Sanitizer' not in r.stderr and
              'runtime error' not in r.stderr and why in r.stderr,
              'expected "%s": exit %d: %s' % (why, r.returncode, r.stderr[-500:]))

    def edit(s, fn):
        c = ctx.copy(s)
        path = os.path.join(c, 'manifest.json')
        with open(path) as f:
            text = f.read()
        with open(path, 'w') as f:
            f.write(fn(text))
        return c

    bad('not JSON', edit(sets[0], lambda t: t[:len(t) // 2]), sets[1])
    bad('no "sequence" number', edit(sets[0], lambda t: t.replace('"sequence": 1', '"sequence": -4')))
    bad('"format_version" is not 1', edit(sets[0], lambda t: t.replace('"format_version": 1', '"format_version": 7')))
    bad('trace_uuid', edit(sets[0], lambda t: re.sub(r'"trace_uuid": "[^"]*"',
                                                  '"trace_uuid": "00000000-0000-0000-0000-000000000000"', t)))
    # Two sets 1 that are not copies of one another, each true to its
    # manifest: which is the set cannot be told.
    other = ctx.copy(sets[0])
    name = sorted(n for n in os.listdir(other) if n.startswith('cpu'))[0]
    shutil.copy(os.path.join(sets[1], name.replace('-000001', '-000002')),
                os.path.join(other, name))
    man = json.load(open(os.path.join(other, 'manifest.json')))
    for e in man['files']:
        e['size'] = os.path.getsize(os.path.join(other, e['name']))
        e['xxh64'] = file_xxh64(os.path.join(other, e['name']))
    json.dump(man, open(os.path.join(other, 'manifest.json'), 'w'))
    bad('both are chunk set 1 of trace-1 on gentrace, and they differ', sets[0], other)
    bad('from two boots', sets[0], edit(sets[1], lambda t: t.replace('"boot-1"', '"boot-2"')))
    bad('given twice', sets[0], sets[0] + '/')
    # A chunk that is not what its manifest says: damage (the manifest is
    # not believed over the file), the chunk read all the same.
    with open(os.path.join(ctx.copy(sets[1]), 'cpu0-000002.zst'), 'ab') as f:
        f.write(b'x')
    cut = os.path.join(ctx.tmp, 'c%03d' % ctx.n)
    r = rt('report', sets[0], cut, asan=True)
    check(r.returncode == 3 and 'cpu0-000002.zst: has ' in r.stderr and
          'its manifest says ' in r.stderr,
          'a chunk longer than its manifest says: exit %d: %s' % (r.returncode, r.stderr[-500:]))
    bad('without a plain name', edit(sets[0], lambda t: t.replace('"name": "metadata"',
                                                              '"name": "../metadata"')))
    c = ctx.copy(sets[1])
    path = os.path.join(c, 'metadata')
    with open(path) as f:
        meta = f.read()
    with open(path, 'w') as f:
        f.write(meta.replace('name = "test_scalars"', 'name = "test_scalers"', 1))
    man = json.load(open(os.path.join(c, 'manifest.json')))
    for e in man['files']:
        e['size'] = os.path.getsize(os.path.join(c, e['name']))
    json.dump(man, open(os.path.join(c, 'manifest.json'), 'w'))
    bad('their metadata disagree', sets[0], c)
    r = rt('report', '--folded', *sets[:2])
    check(r.returncode == 2, '--folded with two directories: %d' % r.returncode)


@test
def fuzz(ctx):
    """Random corruption of streams (plain and zstd) and metadata: the
    ASan/UBSan CLI (check, report, unpack, export -f lttng and perfetto)
    exits 0, 1 or 3 with a `ringtrace:` message, never crashes."""
    rng = random.Random(12345)
    plain, _ = ctx.gen('--lose', '0.02', events=300, cpus=2, subbuf=512)
    comp, _ = ctx.gen('--zstd', 'rotate', '--frame-packets', '2', events=300,
                      cpus=1, subbuf=512)
    bad = []
    for i in range(ctx.args.fuzz):
        src = plain if i % 3 else comp
        c = os.path.join(ctx.tmp, 'fuzz')
        shutil.rmtree(c, ignore_errors=True)
        shutil.copytree(src, c)
        files = sorted(os.listdir(c))
        target = os.path.join(c, rng.choice(files) if i % 5 else 'metadata')
        data = open(target, 'rb').read()
        open(target, 'wb').write(mutate(rng, data))
        cmd = ('check', 'report', 'unpack', 'lttng', 'perfetto')[i % 5]
        args = [cmd, c] + ([c + '-out', ] if cmd == 'unpack' else [])
        if cmd == 'lttng':
            args = ['export', '-f', 'lttng', '-o', c + '-out', c]
        if cmd == 'perfetto':
            args = ['export', '-f', 'perfetto', '-o', c + '.pftrace', c]
        shutil.rmtree(c + '-out', ignore_errors=True)
        r = rt(*args, asan=True)
        if r.returncode not in (0, 1, 3) or 'Sanitizer' in r.stderr or \
                'runtime error' in r.stderr or \
                (r.returncode in (1, 3) and not r.stderr.startswith('ringtrace: ')):
            keep = os.path.join(ctx.tmp, 'fuzz-fail-%d' % i)
            shutil.copytree(c, keep)
            bad.append('%s %s: exit %d: %s' % (cmd, keep, r.returncode, r.stderr[-600:]))
    check(not bad, '%d of %d fuzz cases failed:\n%s' % (len(bad), ctx.args.fuzz,
                                                       '\n'.join(bad[:3])))


# ---- user stack copies (module/ustack.c, tools/cli/unwind.c) -------------------

UCOPY_CAPTURE = os.path.join(HERE, 'ucopy-capture')
UMMAP_ID, UCOPY_ID = 21, 22
UCOPY_EVENTS = [gentrace.EVENTS[0], (1, 'sched_switch', SCHED_SWITCH),
                (UMMAP_ID, 'user_mmap', gentrace.USER_MMAP),
                (UCOPY_ID, 'user_stack_copy', gentrace.USER_STACK_COPY)]


def ucopy_capture(ctx):
    """Runs ucopy-capture (-O2 -fomit-frame-pointer: only CFI unwinds
    it): its registers and stack at leaf, its executable mappings and
    build-ids, and the run-time address range of each of its functions
    (its symbol table, nm, moved by main's run-time address)."""
    check(os.access(UCOPY_CAPTURE, os.X_OK),
          '%s missing: make -C tools' % UCOPY_CAPTURE)
    prefix = os.path.join(ctx.tmp, 'capture')
    r = run([UCOPY_CAPTURE, prefix])
    check(r.returncode == 0, 'ucopy-capture: %d %s' % (r.returncode, r.stderr))
    cap = {'maps': [], 'bids': {}}
    with open(prefix + '.txt') as f:
        for line in f:
            w = line.split()
            if w[0] == 'map':
                cap['maps'].append((int(w[1], 16), int(w[2], 16), int(w[3], 16), w[4]))
            elif w[0] == 'buildid':
                cap['bids'][os.path.realpath(w[1])] = bytes.fromhex(w[2])
            else:
                cap[w[0]] = int(w[1], 0)
    with open(prefix + '.bin', 'rb') as f:
        cap['stack'] = f.read()
    syms = {}
    r = run(['nm', '-S', '--defined-only', UCOPY_CAPTURE])
    check(r.returncode == 0, 'nm: %s' % r.stderr)
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[2] in 'tT':
            syms[w[3]] = (int(w[0], 16), int(w[1], 16))
    bias = cap['main'] - syms['main'][0]
    cap['funcs'] = {n: (bias + syms[n][0], bias + syms[n][0] + syms[n][1])
                    for n in ('leaf', 'b', 'a', 'main')}
    # The binaries a trace's reader would have: the capture's own objects.
    cap['bindir'] = os.path.join(ctx.tmp, 'binaries')
    os.makedirs(cap['bindir'])
    for i, (_, _, _, path) in enumerate(cap['maps']):
        dst = os.path.join(cap['bindir'], '%d-%s' % (i, os.path.basename(path)))
        if not os.path.exists(dst):
            os.symlink(os.path.realpath(path), dst)
    return cap


def ucopy_trace(d, cap, stack=None, size=None, sp=None, flags=0,
                owner=True):
    """The capture as a trace: its mappings (user_mmap), then its thread
    switching out with the copy as its trailer.  stack/size/sp replace
    the copy's bytes, its size field, its sp; owner=False puts the copy
    after a marker of a thread the trace never names."""
    pid = cap['pid']
    ev = []
    if owner:
        ev.append((1000, 1, kswitch('swapper/0', 0, 'capture', pid)))
    t = 1100
    for lo, hi, off, path in cap['maps']:
        bid = cap['bids'].get(os.path.realpath(path))
        if bid:
            ev.append((t, UMMAP_ID, gentrace.user_mmap(pid, lo, hi, off, bid, path)))
            t += 10
    ev.append((2000, 1, kswitch('capture', pid, 'swapper/0', 0)) if owner
              else (2000, 0, marker(b'capture')))
    ev.append((2000, UCOPY_ID, gentrace.user_stack_copy(
        cap['ip'], cap['sp'] if sp is None else sp, cap['bp'],
        cap['stack'] if stack is None else stack, flags, size)))
    ev.append((3000, 0, marker(b'after')))
    return write_trace(d, UCOPY_EVENTS, [ev])


def frame_addr(line, cap):
    """The address a user frame line of the capture's stacks stands for:
    "    0xADDR [user]" (in no mapping), "    BINARY+0xFILEOFF [bid:xxxxxxxx]"
    (a binary the store lacks: moved by its mapping) or
    "    FUNCTION+0xOFF (ucopy-capture)" (named: moved by the function's
    run-time start); None for another line."""
    m = re.match(r'^    0x([0-9a-f]+) \[user\]$', line)
    if m:
        return int(m.group(1), 16)
    m = re.match(r'^    (\S+)\+0x([0-9a-f]+) \[bid:[0-9a-f]{8}\]$', line)
    if m:
        off = int(m.group(2), 16)
        for lo, hi, pgoff, path in cap['maps']:
            if os.path.basename(path) == m.group(1) and lo <= lo - pgoff + off < hi:
                return lo - pgoff + off
        return None
    m = re.match(r'^    (\w+)\+0x([0-9a-f]+) \(ucopy-capture\)$', line)
    if m and m.group(1) in cap['funcs']:
        return cap['funcs'][m.group(1)][0] + int(m.group(2), 16)
    return None


def user_frames(out, cap):
    """The addresses and notes printed under the capture's switch-out."""
    lines = out.splitlines()
    i = next(k for k, l in enumerate(lines) if 'prev_comm="capture"' in l or
             'data="capture"' in l)
    frames, notes = [], []
    for l in lines[i + 1:]:
        a = frame_addr(l, cap)
        if a is not None:
            frames.append(a)
        elif l.startswith('    (user stack: '):
            notes.append(l)
        else:
            break
    return frames, notes


def switch_out_frames(out, cap):
    """The addresses printed under each of the capture's switch-outs, in
    order: one list per switch-out."""
    lines = out.splitlines()
    got = []
    for i in [k for k, l in enumerate(lines) if 'prev_comm="capture"' in l]:
        frames = []
        for l in lines[i + 1:]:
            a = frame_addr(l, cap)
            if a is None:
                break
            frames.append(a)
        got.append(frames)
    return got


def capture_copy(cap, at, back):
    """The capture switched out at @at with its stack copy, and back in at
    @at + @back."""
    pid = cap['pid']
    return [(at, 1, kswitch('capture', pid, 'swapper/0', 0)),
            (at, UCOPY_ID, gentrace.user_stack_copy(cap['ip'], cap['sp'],
                                                    cap['bp'], cap['stack'])),
            (at + back, 1, kswitch('swapper/0', 0, 'capture', pid))]


def ucopy_seed_trace(d):
    """The fuzzer's seed gen-ucopy: a process's mapping (a build-id no
    binary has), then two switch-outs with copies: one cut by a fault, one
    whose sp is 16 bytes below 2^64."""
    bid = bytes(range(0x40, 0x54))
    ev = [(1000, 1, kswitch('swapper/0', 0, 'app', 300)),
          (1100, UMMAP_ID, gentrace.user_mmap(300, 0x555555554000, 0x555555556000,
                                              0x1000, bid, '/usr/bin/app')),
          (2000, 1, kswitch('app', 300, 'swapper/0', 0)),
          (2000, UCOPY_ID, gentrace.user_stack_copy(
              0x555555555123, 0x7ffc00001000, 0, bytes(range(256)),
              gentrace.USTACK_FAULT)),
          (3000, 1, kswitch('swapper/0', 0, 'app', 300)),
          (4000, 1, kswitch('app', 300, 'swapper/0', 0)),
          (4000, UCOPY_ID, gentrace.user_stack_copy(
              0x555555555200, (1 << 64) - 16, 1, bytes(64)))]
    return write_trace(d, UCOPY_EVENTS, [ev])


@test
def ucopy_seed(ctx):
    """The fuzz seed gen-ucopy is ucopy_seed_trace() as it reads now: each
    copy its ip and a note, under the ASan build."""
    d = ucopy_seed_trace(os.path.join(ctx.tmp, 'seed'))
    r = rt('report', d, asan=True)
    clean_run(r, 'report of the seed')
    check(r.returncode == 0 and r.stdout.count('(user stack: no binary of its mappings') == 2
          and '    app+0x2123 [bid:40414243]' in r.stdout
          and '    app+0x2200 [bid:40414243]' in r.stdout,
          'seed: %d %s' % (r.returncode, r.stdout))
    sys.path.insert(0, HERE)
    import fuzz_corpus
    with open(os.path.join(HERE, 'fuzz', 'seeds', 'gen-ucopy'), 'rb') as f:
        check(f.read() == fuzz_corpus.pack(fuzz_corpus.read_dir(d)),
              'tools/tests/fuzz/seeds/gen-ucopy is not ucopy_seed_trace()')


# USDT events as module/usdt.c declares them: the probe's N int64_t
# arguments, then faults; dynamic ids (the fuzz seed's are any free ones).
USDT_TICK_ID, USDT_START_ID = 40, 41
USDT_EVENTS = [gentrace.EVENTS[0], (1, 'sched_switch', SCHED_SWITCH),
               (UMMAP_ID, 'user_mmap', gentrace.USER_MMAP),
               (DEF_ID, 'stack_def', gentrace.STACK_DEF),
               (REF_ID, 'stack_ref', gentrace.STACK_REF),
               (USDT_TICK_ID, 'usdt_rt_tick', [('int64_t', 'arg0', None),
                                               ('int64_t', 'arg1', None),
                                               ('uint16_t', 'faults', None)]),
               (USDT_START_ID, 'usdt_rt_start', [('uint16_t', 'faults', None)])]


def usdt_seed_trace(d):
    """The fuzzer's seed gen-usdt: a mapping, two rt:tick hits (the second
    with arg1's memory faulted and a user stack, interned as the module
    writes it: its stack_def, then the stack_ref naming it), and rt:start,
    a probe without arguments."""
    bid = bytes(range(0x60, 0x74))
    ev = [(1000, 1, kswitch('swapper/0', 0, 'wl', 300)),
          (1100, UMMAP_ID, gentrace.user_mmap(300, 0x555555554000, 0x555555556000,
                                              0x1000, bid, '/usr/bin/wl')),
          (1200, USDT_START_ID, struct.pack('<H', 0)),
          (1300, USDT_TICK_ID, struct.pack('<qqH', 7, -21, 0)),
          (1400, USDT_TICK_ID, struct.pack('<qqH', 8, 0, 2)),
          (1400, 'def', 'u', 1, 0, [0x555555555123, 0x555555555456]),
          (1400, 'ref', None, 'u'),
          (2000, 1, kswitch('wl', 300, 'swapper/0', 0))]
    return write_trace(d, USDT_EVENTS, [intern_packet(ev)])


@test
def usdt_seed(ctx):
    """The fuzz seed gen-usdt is usdt_seed_trace() as it reads now: report
    prints each hit's arguments and faults, the stack after the faulted
    one; babeltrace2 reads its eight records."""
    d = usdt_seed_trace(os.path.join(ctx.tmp, 'seed'))
    r = rt('report', d, asan=True)
    clean_run(r, 'report of the seed')
    lines = [l for l in r.stdout.splitlines() if ' usdt_rt_' in l]
    check(r.returncode == 0 and len(lines) == 3 and
          'usdt_rt_start: faults=0' in lines[0] and
          'arg0=7, arg1=-21, faults=0' in lines[1] and
          'arg0=8, arg1=0, faults=2' in lines[2] and
          '    wl+0x2123 [bid:60616263]' in r.stdout,
          'seed: %d %s' % (r.returncode, r.stdout))
    events, _ = bt2(d)
    check([e[2] for e in events] == ['sched_switch', 'user_mmap', 'usdt_rt_start',
                                     'usdt_rt_tick', 'usdt_rt_tick', 'stack_def',
                                     'stack_ref', 'sched_switch'],
          'babeltrace2: %s' % events)
    sys.path.insert(0, HERE)
    import fuzz_corpus
    with open(os.path.join(HERE, 'fuzz', 'seeds', 'gen-usdt'), 'rb') as f:
        check(f.read() == fuzz_corpus.pack(fuzz_corpus.read_dir(d)),
              'tools/tests/fuzz/seeds/gen-usdt is not usdt_seed_trace()')


# Every record issue 30 added, by name (usdt_* a prefix).
USER_RECORDS = ['stack_def', 'stack_ref', 'user_stack', 'user_stack_copy', 'user_mmap', 'cpu_sample', 'usdt_']


@test
def fuzz_seeds_carry_user_records(ctx):
    """The decoder fuzzer starts from a trace holding each record issue 30
    added: some seed of tools/tests/fuzz/seeds has an event of each, as
    babeltrace2 reads the seeds (the plain ones: the store and chunks
    left out)."""
    sys.path.insert(0, HERE)
    import fuzz_corpus
    seeds = os.path.join(HERE, 'fuzz', 'seeds')
    found = {}
    for name in sorted(os.listdir(seeds)):
        d = os.path.join(ctx.tmp, 'seeds', name)
        os.makedirs(d)
        with open(os.path.join(seeds, name), 'rb') as f:
            files = fuzz_corpus.unpack(f.read())
        if any(n.endswith('.zst') and not n.startswith('.') for n, _ in files):
            continue                    # chunks: babeltrace2 reads no zstd
        for n, data in files:
            if '/' not in n and not n.startswith('.'):
                with open(os.path.join(d, n), 'wb') as f:
                    f.write(data)
        for e in bt2(d)[0]:
            for rec in USER_RECORDS:
                if e[2] == rec or (rec.endswith('_') and e[2].startswith(rec)):
                    found.setdefault(rec, name)
    check(all(rec in found for rec in USER_RECORDS),
          'no seed with %s (found: %s)' %
          (', '.join(rec for rec in USER_RECORDS if rec not in found), found))


@test
def ucopy_unwound(ctx):
    """A stack copied as ringtrace.ko's copy mode does, from a program
    built without frame pointers: report --binaries unwinds it with the
    binaries' CFI to leaf, b, a, main (each frame inside that function, as
    its symbol table says), and the copy prints as frames, not a record.
    With the binaries in the trace's symbol store (ringtrace symbols)
    instead, report unwinds it alone and names the frames; --folded joins
    them under the thread's name, --stat counts them in its top
    functions."""
    cap = ucopy_capture(ctx)
    d = ucopy_trace(os.path.join(ctx.tmp, 'ucopy'), cap)
    r = rt('report', '--binaries', cap['bindir'], d, asan=True)
    clean_run(r, 'report of a stack copy')
    check(r.returncode == 0, 'report: exit %d: %s' % (r.returncode, r.stderr))
    frames, notes = user_frames(r.stdout, cap)
    check(len(frames) >= 4, 'frames: %s %s\n%s' % ([hex(f) for f in frames], notes,
                                                    r.stdout[-2000:]))
    for k, name in enumerate(('leaf', 'b', 'a', 'main')):
        lo, hi = cap['funcs'][name]
        check(lo <= frames[k] < hi, 'frame %d 0x%x is not in %s [0x%x, 0x%x): %s' % (
            k, frames[k], name, lo, hi, [hex(f) for f in frames]))
    check(frames[0] == cap['ip'], 'the first frame is the ip')
    check('user_stack_copy' not in r.stdout and 'user_mmap' in r.stdout,
          'the copy prints as frames only: %s' % r.stdout[-1500:])
    # The same frames named, from the symbol store alone.
    r = rt('symbols', d, asan=True)
    clean_run(r, 'symbols')
    check(r.returncode == 0, 'symbols: %d %s' % (r.returncode, r.stderr))
    want = ['    %s+0x%x (ucopy-capture)' % (name, frames[k] - cap['funcs'][name][0])
            for k, name in enumerate(('leaf', 'b', 'a', 'main'))]
    r = rt('report', d, asan=True)
    clean_run(r, 'report from the store')
    lines = r.stdout.splitlines()
    i = next(k for k, l in enumerate(lines) if 'prev_comm="capture"' in l)
    check(r.returncode == 0 and lines[i + 1:i + 5] == want,
          'named from the store: %s, not %s' % (lines[i + 1:i + 8], want))
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded')
    check(r.returncode == 0 and
          re.search(r'^capture;(.*;)?main;a;b;leaf 1$', r.stdout, re.M),
          '--folded: %d %s' % (r.returncode, r.stdout[-800:]))
    r = rt('report', '--stat', d, asan=True)
    clean_run(r, 'report --stat')
    check(r.returncode == 0 and
          re.search(r'^ +1 +1  leaf \(ucopy-capture\)$', r.stdout, re.M) and
          re.search(r'^ +0 +1  main \(ucopy-capture\)$', r.stdout, re.M) and
          'user_stack_copy' not in r.stdout,
          '--stat: %d %s' % (r.returncode, r.stdout[-1500:]))


def pf_samples(ctx, d, name, *opts):
    """export -f perfetto of @d (under ASan), resolved by
    perfetto_stacks.perf_samples(): every callstack named, every binary's
    mapping with a build-id, or the test fails."""
    out = os.path.join(ctx.tmp, name + '.pftrace')
    r = rt('export', '-f', 'perfetto', '-o', out, *opts, d, asan=True)
    clean_run(r, 'export -f perfetto ' + name)
    check(r.returncode == 0, 'export %s: exit %d: %s' % (name, r.returncode, r.stderr))
    text = pf_text(out)
    try:
        return perfetto_stacks.perf_samples(text), text
    except perfetto_stacks.Bad as e:
        raise Fail('%s: %s' % (name, e))


@test
def user_stacks_in_perfetto(ctx):
    """export -f perfetto: an event's user and kernel stacks are one
    PerfSample of its thread, user frames (root first) then the kernel's,
    cpu_mode MODE_KERNEL; a cpu_sample's user stack is one of the
    sample's thread in MODE_USER; the user frames are named from the
    symbol store (the binary gone from this machine) as report names
    them, each under the binary's Mapping: its build-id (InternedData
    build_ids, raw bytes), path, range, file offset, load bias (a non-PIE
    binary: p_vaddr - p_offset is not 0), and the function's file offset
    as rel_pc.  A frame in no mapping is its address under "[unknown]";
    an idle sample (no stack) is no PerfSample."""
    app = build_elf(ctx, 'app', flags=['-no-pie'])
    off, va, _ = app['text']
    base = 0
    ev = [e for e in app_events(app) if e[1] not in (USER_MMAP_ID, USER_STACK_ID)]
    ev = sorted(ev + [
        (950, USER_MMAP_ID, elf_mmap(app, APP_PID, base)),
        (1000, USER_STACK_ID, ustack(uip(app, 'b', 4, base), uip(app, 'a', 8, base),
                                     uip(app, 'main', 16, base))),
        (6000, USER_STACK_ID, ustack(uip(app, 'b', 2, base), uip(app, 'a', 8, base),
                                     uip(app, 'main', 16, base))),
        (7000, USER_STACK_ID, ustack(uip(app, 'a', 3, base), uip(app, 'main', 16, base))),
        (7500, CPU_SAMPLE_ID, gentrace.make_cpu_sample(APP_PID, APP_PID)),
        (7500, USER_STACK_ID, ustack(0x1234)),
        (7600, CPU_SAMPLE_ID, gentrace.make_cpu_sample(0, 0, 2)),
    ], key=lambda e: e[0])
    d = user_trace(os.path.join(ctx.tmp, 'trace'), ev)
    fill_store(d, 'stored 1 binary (')
    gone(app)
    got, text = pf_samples(ctx, d, 'user')
    kernel = ['entry_SYSCALL_64 [kernel.kallsyms]', 'rtr_pid_filter_set [ringtrace]',
              'do_nanosleep [kernel.kallsyms]', 'schedule [kernel.kallsyms]']
    user = ['main', 'a', 'b']
    check([(s['time'], s['pid'], s['tid'], s['mode'],
            ['%s %s' % (f['name'], f['path']) for f in s['frames']]) for s in got] == [
        (1000, APP_PID, APP_PID, 'MODE_KERNEL',
         ['%s %s' % (u, app['path']) for u in user] + kernel),
        (6000, APP_PID, APP_PID, 'MODE_USER', ['%s %s' % (u, app['path']) for u in user]),
        (7000, APP_PID, APP_PID, 'MODE_USER', ['%s %s' % (u, app['path']) for u in user[:2]]),
        (7500, APP_PID, APP_PID, 'MODE_USER', ['0x1234 [unknown]'])],
        'PerfSamples: %s' % [(s['time'], s['pid'], s['tid'], s['mode'],
                              [(f['name'], f['path']) for f in s['frames']]) for s in got])
    mapping = dict(build_id=app['bid'].hex(), start=base + (va & ~0xfff),
                   end=base + ((va + app['text'][2] + 0xfff) & ~0xfff),
                   exact_offset=off & ~0xfff, load_bias=va - off)
    check(mapping['load_bias'] != 0, 'a non-PIE binary: its load bias is not 0 (%s)' % (app['text'],))
    for f in got[0]['frames'][:3]:
        want = dict(mapping, rel_pc=file_off(app, f['name'], 0))
        check({k: f[k] for k in want} == want, 'frame %s: %s, not %s' % (f['name'], f, want))
    for f in got[0]['frames'][3:]:
        check(f['build_id'] is None and f['start'] is None,
              'a kernel frame has no build-id or range: %s' % f)
    # Each function interned once: 3 of the app, 4 of the kernel, an address.
    check(text.count('function_names {') == 8 and text.count('build_ids {') == 1 and
          text.count('mappings {') == 4,
          'interned: %d names, %d build-ids, %d mappings' % (
              text.count('function_names {'), text.count('build_ids {'),
              text.count('mappings {')))
    check('event_name: "cpu_sample"' not in text and 'event_name: "user_stack' not in text,
          'a cpu_sample or user_stack left as an ftrace event')


@test
def ucopy_in_perfetto(ctx):
    """export -f perfetto of a stack copied in copy mode: unwound with
    the binaries of --binaries, its frames (leaf, b, a, main) unnamed
    without a symbol store; the store filled, named as report names them,
    under ucopy-capture's mapping with its build-id.  --binaries of no
    directory is a usage error, with no file written."""
    cap = ucopy_capture(ctx)
    d = ucopy_trace(os.path.join(ctx.tmp, 'ucopy'), cap)
    exe = os.path.realpath(UCOPY_CAPTURE)
    got, _ = pf_samples(ctx, d, 'bindir', '--binaries', cap['bindir'])
    check(len(got) == 1 and len(got[0]['frames']) >= 4 and
          all(f['name'].startswith('ucopy-capture+0x') for f in got[0]['frames'][-4:]),
          'unwound through --binaries: %s' % got)
    r = rt('export', '-f', 'perfetto', '-o', os.path.join(ctx.tmp, 'no.pftrace'),
           '--binaries', os.path.join(ctx.tmp, 'nosuchdir'), d)
    check(r.returncode == 2 and 'not a directory' in r.stderr and
          not os.path.exists(os.path.join(ctx.tmp, 'no.pftrace')),
          '--binaries of no directory: %d %r' % (r.returncode, r.stderr))
    rt('symbols', d, asan=True)
    got, _ = pf_samples(ctx, d, 'store')
    check(len(got) == 1 and got[0]['tid'] == cap['pid'] and
          [f['name'] for f in got[0]['frames'][-4:]] == ['main', 'a', 'b', 'leaf'] and
          all(f['build_id'] == cap['bids'][exe].hex()
              for f in got[0]['frames'][-4:]),
          'named from the store: %s' % got)


@test
def export_lttng_ucopy_left_out(ctx):
    """export -f lttng does not unwind user stack copies: the event keeps
    its kernel stack, its callstack_user is empty, no user_stack_copy event,
    and stderr says how many copies were left out."""
    events = UCOPY_EVENTS[:2] + [STACK_EVENTS[2]] + UCOPY_EVENTS[2:]
    d = hex_stack_trace(os.path.join(ctx.tmp, 'lcopy'), events, [
        (1000, 1, kswitch('swapper/0', 0, 'capture', 100)),
        (2000, 1, kswitch('capture', 100, 'swapper/0', 0)),
        (2000, STACK_ID, kstack(*STACK_LEAF)),
        (2000, UCOPY_ID, gentrace.user_stack_copy(UTEXT + 0x10, 0x7ffc0000, 0x7ffc0040,
                                                  bytes(64))),
        (3000, 1, kswitch('swapper/0', 0, 'capture', 100)),
        (3000, UCOPY_ID, gentrace.user_stack_copy(UTEXT + 0x20, 0x7ffc0000, 0x7ffc0040,
                                                  bytes(64)))], None)
    out, info, r = lttng_export(ctx, d)
    check(r.stderr.count('\n') == 1 and '2 user stacks recorded as copies' in r.stderr,
          'the copies said once: %r' % r.stderr)
    check(set(info['events']) == {'sched_switch'}, 'no other event: %s' % info['events'])
    r = run(['babeltrace2', '--clock-cycles', '--no-delta', out])
    got = [re.sub(r'\}, \{ prev_comm.*$', '', l.split(' sched_switch: ')[1])
           for l in r.stdout.splitlines()]
    none = '_callstack_kernel_length = 0, callstack_kernel = [ ]'
    nou = '_callstack_user_length = 0, callstack_user = [ ]'
    check(r.returncode == 0 and got == [
        '{ cpu_id = 0 }, { %s, %s ' % (none, nou),
        '{ cpu_id = 0 }, { _callstack_kernel_length = 4, callstack_kernel = [ [0] = '
        '0xFFFFFFFF9A002010, [1] = 0xFFFFFFFF9A002134, [2] = 0xFFFFFFFFC0A10424, [3] = '
        '0xFFFFFFFF9A001008 ], %s ' % nou,
        '{ cpu_id = 0 }, { %s, %s ' % (none, nou)], 'babeltrace2: %s' % got)


@test
def ucopy_with_kernel_stack(ctx):
    """A switch-out with its kernel stack and a user stack copy: report
    prints the kernel frames, then the unwound user frames; --folded
    joins them, the user's first, the kernel's marked "[k] " (a copy is
    a user stack as user_stack is)."""
    cap = ucopy_capture(ctx)
    pid = cap['pid']
    events = UCOPY_EVENTS[:2] + [STACK_EVENTS[2]] + UCOPY_EVENTS[2:]
    ev = [(1000, 1, kswitch('swapper/0', 0, 'capture', pid))]
    for i, (lo, hi, off, path) in enumerate(cap['maps']):
        bid = cap['bids'].get(os.path.realpath(path))
        if bid:
            ev.append((1100 + i, UMMAP_ID, gentrace.user_mmap(pid, lo, hi, off, bid, path)))
    ev += [(2000, 1, kswitch('capture', pid, 'swapper/0', 0)),
           (2000, STACK_ID, kstack(*STACK_LEAF)),
           (2000, UCOPY_ID, gentrace.user_stack_copy(
               cap['ip'], cap['sp'], cap['bp'], cap['stack'])),
           (3000, 0, marker(b'after'))]
    d = os.path.join(ctx.tmp, 'both')
    hex_stack_trace(d, events, ev)
    r = rt('report', '--binaries', cap['bindir'], d, asan=True)
    clean_run(r, 'report')
    lines = r.stdout.splitlines()
    i = next(k for k, l in enumerate(lines) if 'prev_comm="capture"' in l)
    check(r.returncode == 0 and lines[i + 1:i + 5] == [
        '    schedule+0x10', '    do_nanosleep+0x34',
        '    rtr_pid_filter_set+0x24 [ringtrace]', '    entry_SYSCALL_64+0x8'],
        'the kernel frames first: %s' % lines[i:i + 10])
    frames = [frame_addr(l, cap) for l in lines[i + 5:i + 9]]
    check(None not in frames and frames[0] == cap['ip'] and
          all(cap['funcs'][n][0] <= f < cap['funcs'][n][1]
              for f, n in zip(frames, ('leaf', 'b', 'a', 'main'))),
          'then the copy unwound: %s' % lines[i + 5:i + 12])
    r = rt('symbols', d, asan=True)
    check(r.returncode == 0, 'symbols: %s' % r.stderr)
    r = rt('report', '--folded', d, asan=True)
    clean_run(r, 'report --folded')
    check(r.returncode == 0 and re.search(
        r'^capture;(.*;)?main;a;b;leaf;\[k\] entry_SYSCALL_64;'
        r'\[k\] rtr_pid_filter_set \[ringtrace\];\[k\] do_nanosleep;\[k\] schedule 1$',
        r.stdout, re.M), '--folded: %s' % r.stdout)


@test
def ucopy_mappings_change(ctx):
    """A process's mappings change between its stack copies (unwind.c
    tells its libdwfl session of the mappings added; one that went or
    changed makes a new session): a copy taken before the program's own
    binary is mapped is its ip, no caller found; mapped, the next copy
    unwinds to leaf, b, a, main; the mapping replaced by one of another
    build-id (no binary has it), no caller again; mapped back, whole
    again."""
    cap = ucopy_capture(ctx)
    pid = cap['pid']
    exe = os.path.realpath(UCOPY_CAPTURE)
    maps = [(lo, hi, off, path, cap['bids'].get(os.path.realpath(path)))
            for lo, hi, off, path in cap['maps']]
    own = [m for m in maps if m[4] and os.path.realpath(m[3]) == exe]
    check(own, 'the program has a mapping with a build-id: %s' % maps)
    ev = [(1000, 1, kswitch('swapper/0', 0, 'capture', pid))]
    t = 1100
    for lo, hi, off, path, bid in maps:
        if bid and (lo, hi, off, path, bid) not in own:
            ev.append((t, UMMAP_ID, gentrace.user_mmap(pid, lo, hi, off, bid, path)))
            t += 10

    def mapped(at, bid):
        return [(at + k, UMMAP_ID, gentrace.user_mmap(pid, lo, hi, off, bid, path))
                for k, (lo, hi, off, path, _) in enumerate(own)]

    def copy(at):
        return capture_copy(cap, at, 100)
    ev += copy(2000) + mapped(2500, own[0][4]) + copy(3000)
    ev += mapped(3500, bytes(range(0x60, 0x74))) + copy(4000)
    ev += mapped(4500, own[0][4]) + copy(5000)
    d = write_trace(os.path.join(ctx.tmp, 'changes'), UCOPY_EVENTS, [ev])
    r = rt('report', '--binaries', cap['bindir'], d, asan=True)
    clean_run(r, 'report of copies as the mappings change')
    check(r.returncode == 0, 'report: exit %d: %s' % (r.returncode, r.stderr))
    got = switch_out_frames(r.stdout, cap)
    check(len(got) == 4, 'four switch-outs: %s' % r.stdout[-2000:])
    def in_callers(a):
        return any(cap['funcs'][n][0] <= a < cap['funcs'][n][1] for n in ('b', 'a', 'main'))
    for k in (0, 2):
        check(got[k][:1] == [cap['ip']] and not any(map(in_callers, got[k][1:])),
              'copy %d (the program not mapped, or not its binary): its ip, '
              'no caller found, not %s' % (k + 1, [hex(f) for f in got[k]]))
    for k in (1, 3):
        check(len(got[k]) >= 4 and all(
            cap['funcs'][n][0] <= got[k][j] < cap['funcs'][n][1]
            for j, n in enumerate(('leaf', 'b', 'a', 'main'))),
            'copy %d: leaf, b, a, main, not %s' % (k + 1, [hex(f) for f in got[k]]))


@test
def ucopy_symbols_first(ctx):
    """ringtrace symbols stores first the binary a stack copy's ip is in,
    whichever order the mappings came in: --max 1 keeps the capture's
    program, mapped last, and report then unwinds and names the copy."""
    cap = ucopy_capture(ctx)
    maps = list(reversed(cap['maps']))
    check(os.path.realpath(maps[-1][3]) == os.path.realpath(UCOPY_CAPTURE),
          'the program is mapped last here: %s' % maps)
    d = ucopy_trace(os.path.join(ctx.tmp, 'rev'), dict(cap, maps=maps))
    r = rt('symbols', '--max', '1', d, asan=True)
    clean_run(r, 'symbols --max 1')
    check(r.returncode == 0 and r.stdout.startswith('stored 1 binary ('),
          'symbols --max 1: %r %r' % (r.stdout, r.stderr))
    r = rt('report', d, asan=True)
    lines = r.stdout.splitlines()
    i = next(k for k, l in enumerate(lines) if 'prev_comm="capture"' in l)
    check(r.returncode == 0 and
          [l.split('+')[0].strip() for l in lines[i + 1:i + 5]] == ['leaf', 'b', 'a', 'main'],
          'the program stored first, its frames named: %s' % lines[i + 1:i + 8])


@test
def ucopy_mappings_in_time(ctx):
    """A copy is unwound with the mappings its process had then: before
    the binary's user_mmap only its ip (and a note), after it the whole
    stack; another process's mapping in between changes nothing."""
    cap = ucopy_capture(ctx)
    pid = cap['pid']
    maps = [(lo, hi, off, path) for lo, hi, off, path in cap['maps']]
    exe = [m for m in maps if os.path.realpath(m[3]) ==
           os.path.realpath(UCOPY_CAPTURE)]
    check(len(exe) == 1, 'the capture maps its binary once: %s' % maps)

    def mmap_ev(t, m, who=pid):
        return (t, UMMAP_ID, gentrace.user_mmap(
            who, m[0], m[1], m[2], cap['bids'][os.path.realpath(m[3])], m[3]))

    def copy_out(t):
        return capture_copy(cap, t, 50)
    ev = [(1000, 1, kswitch('swapper/0', 0, 'capture', pid))]
    ev += [mmap_ev(1100 + i, m) for i, m in enumerate(maps) if m not in exe]
    ev += copy_out(2000)
    ev += [mmap_ev(2100, exe[0], pid + 1)]      # another process's
    ev += copy_out(3000)
    ev += [mmap_ev(3100, exe[0])]
    ev += copy_out(4000)
    d = write_trace(os.path.join(ctx.tmp, 'later'), UCOPY_EVENTS, [ev])
    r = rt('report', '--binaries', cap['bindir'], d, asan=True)
    clean_run(r, 'report')
    check(r.returncode == 0, 'report: %d %s' % (r.returncode, r.stderr))
    got = switch_out_frames(r.stdout, cap)
    check(len(got) == 3, 'three switch-outs: %s' % r.stdout[-1500:])
    lo, hi = cap['funcs']['main']
    check(len(got[0]) < 4 and len(got[1]) < 4,
          'no binary mapped yet: %s' % [[hex(f) for f in g] for g in got])
    check(len(got[2]) >= 4 and lo <= got[2][3] < hi,
          'mapped: down to main: %s' % [hex(f) for f in got[2]])


@test
def ucopy_partial(ctx):
    """Copies the unwinder cannot finish give the frames it could and a
    note, never a crash: the copy cut short (its first caller's frame
    missing), a size field larger than the record, an sp near 2^64, no
    binary at hand (an empty directory, or no --binaries), an unknown
    process, a binary cut short or junk in the directory."""
    cap = ucopy_capture(ctx)
    empty = os.path.join(ctx.tmp, 'empty')
    os.makedirs(empty)
    cases = [
        ('cut', dict(stack=cap['stack'][:64], flags=gentrace.USTACK_FAULT),
         cap['bindir'], 'unwinding stopped'),
        ('sp-top', dict(stack=cap['stack'][:64], sp=(1 << 64) - 16),
         cap['bindir'], 'unwinding stopped'),
        ('no-binary', {}, empty, 'no binary of its mappings'),
        ('no-binaries-dir', {}, None, 'no binary of its mappings'),
        ('unknown-process', dict(owner=False), cap['bindir'], 'its process is unknown'),
    ]
    # Damaged binaries: the program cut after its first 4 KiB (its
    # build-id note still there, its CFI and code gone), and junk.
    bad = os.path.join(ctx.tmp, 'bad-binaries')
    os.makedirs(bad)
    with open(UCOPY_CAPTURE, 'rb') as f:
        head = f.read(4096)
    with open(os.path.join(bad, 'cut'), 'wb') as f:
        f.write(head)
    with open(os.path.join(bad, 'junk'), 'wb') as f:
        f.write(b'\x7fELF' + bytes(range(256)) * 4)
    check(head.find(cap['bids'][os.path.realpath(UCOPY_CAPTURE)]) >= 0,
          'the first 4 KiB hold the build-id (the case tests a cut binary)')
    cases.append(('cut-binary', {}, bad, 'unwinding stopped'))
    for name, kw, bindir, note in cases:
        d = ucopy_trace(os.path.join(ctx.tmp, name), cap, **kw)
        args = ['report'] + (['--binaries', bindir] if bindir else []) + [d]
        r = rt(*args, asan=True)
        clean_run(r, name)
        check(r.returncode == 0, '%s: exit %d: %s' % (name, r.returncode, r.stderr))
        frames, notes = user_frames(r.stdout, cap)
        check(frames and frames[0] == cap['ip'] and len(frames) < 3,
              '%s: frames %s' % (name, [hex(f) for f in frames]))
        check(len(notes) == 1 and note in notes[0], '%s: notes %s' % (name, notes))
        if name == 'cut':
            check('unreadable page' in notes[0], 'cut: the fault flag said: %s' % notes)
    # A size field larger than its record: the record (its packet) is
    # damage, said, and the rest of the trace reads.
    d = ucopy_trace(os.path.join(ctx.tmp, 'oversize'), cap,
                    stack=cap['stack'][:100], size=8192)
    r = rt('report', '--binaries', cap['bindir'], d, asan=True)
    clean_run(r, 'oversize')
    check(r.returncode == 3 and 'damage' in r.stderr.lower() and
          not any(frame_addr(l, cap) == cap['ip'] for l in r.stdout.splitlines()),
          'oversize: %d %s %s' % (r.returncode, r.stderr, r.stdout[-500:]))


def registry():
    """A suite's tests in the order written, and the decorator (@test)
    that adds one."""
    tests = []

    def test(fn):
        tests.append(fn)
        return fn
    return tests, test


class PathCtx:
    """A test's own directory, and fresh numbered paths in it (the
    suites that make their traces themselves)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def path(self, name):
        self.n += 1
        return os.path.join(self.tmp, '%s%03d' % (name, self.n))


def suite_args(doc, bin_env=None):
    """A suite's command line (-k, -v, --keep).  When the variable
    @bin_env names another build of ringtrace, every run uses it (how a
    test is shown to fail before its change)."""
    global RINGTRACE, RINGTRACE_ASAN
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('-k', help='only tests whose name contains this')
    ap.add_argument('-v', action='store_true', help='show tracebacks')
    ap.add_argument('--keep', action='store_true', help='keep the temporary dir')
    args = ap.parse_args()
    if bin_env and os.environ.get(bin_env):
        RINGTRACE = RINGTRACE_ASAN = os.environ[bin_env]
    return args


def missing(suite, paths, hint):
    """True, the suite's failing last line printed, when one of @paths is
    not an executable file."""
    for path in paths:
        if not os.access(path, os.X_OK):
            print('%s: %s missing: %s' % (suite, path, hint))
            print('%s: 0 passed, 1 failed' % suite)
            return True
    return False


def run_suite(suite, tests, make_ctx, args):
    """Runs TESTS (those whose name holds args.k), each with a Ctx that
    make_ctx(dir) builds on a fresh directory of its own; prints one line
    per test and "SUITE: N passed, M failed"; returns the exit status.
    The files stay when a test failed or with --keep."""
    tmp = tempfile.mkdtemp(prefix='rt-%s-' % suite)
    passed = failed = 0
    try:
        for fn in tests:
            if args.k and args.k not in fn.__name__:
                continue
            ctx = make_ctx(os.path.join(tmp, fn.__name__))
            os.makedirs(ctx.tmp)
            try:
                fn(ctx)
                passed += 1
                print('ok     %s' % fn.__name__)
            except Fail as e:
                failed += 1
                print('FAIL   %s: %s' % (fn.__name__, e))
            except Exception:
                failed += 1
                print('ERROR  %s:\n%s' % (fn.__name__, traceback.format_exc()))
            sys.stdout.flush()
    finally:
        if args.keep or failed:
            print('(files kept in %s)' % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print('%s: %d passed, %d failed' % (suite, passed, failed))
    return 1 if failed else 0


# ---- report --tail N (tools/cli/tail.c) -------------------------------------------

def model_tail(report_out, n, cpus=None):
    """What `report --tail N` prints, made from the whole report's output:
    per CPU (in the summaries' order; those of @cpus) its last N events with the lines
    under them (stacks), the loss lines among or just before them; a
    header each; the summaries after a blank line."""
    lines = report_out.splitlines()
    summ = [l for l in lines if re.match(r'^cpu\d+: packets=', l)]
    items = [l for l in lines if l.startswith('[') or l.startswith(' ')]
    per, end = {}, None
    for l in items:
        if l.startswith(' '):
            per[cur][-1][0].append(l)
            continue
        f = l.split(' ')
        cur = int(f[1][3:])
        event = f[2] != '--'
        per.setdefault(cur, []).append(([l], event))
        if event:
            end = f[0]
    out = []
    for s_ in summ:
        cpu = int(s_.split(':')[0][3:])
        if cpus is not None and cpu not in cpus:
            continue
        ents = per.get(cpu, [])
        while sum(e for _, e in ents) > n:
            ents = ents[1:]
        k = sum(e for _, e in ents)
        if out:
            out.append('')
        out.append('CPU %d: %s' % (cpu, 'last %d event%s before %s'
                                   % (k, '' if k == 1 else 's', end) if k else 'no events'))
        out += [x for ls, _ in ents for x in ls]
    return out + [''] + summ


def check_tail(d, n, *args, status=0):
    """report --tail N of @d is model_tail() of its whole report (ARGS
    given to both); the exit status @status both times."""
    full = rt('report', *args, d, asan=True)
    r = rt('report', '--tail', n, *args, d, asan=True)
    clean_run(r, 'report --tail %d' % n)
    check(full.returncode == status and r.returncode == status,
          '--tail %d %s: exit %d (the whole report %d), wanted %d: %s'
          % (n, args, r.returncode, full.returncode, status, r.stderr[-800:]))
    cpus = [int(args[i + 1]) for i, a in enumerate(args) if a == '--cpu']
    want = model_tail(full.stdout, n, cpus or None)
    got = r.stdout.splitlines()
    check(got == want, '--tail %d %s: first difference at line %s:\n%s\nwanted\n%s'
          % (n, args, next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                           min(len(got), len(want))), '\n'.join(got[:40]),
             '\n'.join(want[:40])))
    return r


@test
def tail_real_trace(ctx):
    """report --tail N of the trace recorded on 6.12: each CPU's last N
    events, CPU after CPU, under a header naming the trace's end; the
    summaries; the filters apply before the N are counted; the loss of
    cpu1's buffer full prints with its events once N reaches it."""
    r = check_tail(REAL_TRACE, 2)
    check(r.stdout.splitlines()[:7] == [
        'CPU 0: last 2 events before [14.720372518]',
        '[4.339035580] cpu0 ls-181 syscall_exit: id=readlink(89), ret=25',
        '[4.339049590] cpu0 ls-181 syscall_entry: id=statx(332), nr_args=5, '
        'args=[4294967196, 140731449737264, 2304, 606, 140731449736960]',
        '',
        'CPU 1: last 2 events before [14.720372518]',
        '[14.720357115] cpu1 cat-220 irq_softirq_exit: vec=7',
        '[14.720372518] cpu1 cat-220 sched_switch: prev_comm="cat", prev_tid=220, '
        'prev_prio=20, prev_state=0, next_comm="rcu_preempt", next_tid=18, next_prio=20'],
        '--tail 2: %s' % r.stdout)
    r = check_tail(REAL_TRACE, 1, '-e', 'sched_switch')
    check(r.stdout.splitlines()[:2] == [
        'CPU 0: last 1 event before [14.720372518]',
        '[4.339020177] cpu0 swapper/0-0 sched_switch: prev_comm="swapper/0", prev_tid=0, '
        'prev_prio=20, prev_state=0, next_comm="ls", next_tid=181, next_prio=20'],
        '--tail 1 -e sched_switch: %s' % r.stdout)
    r = check_tail(REAL_TRACE, 1011, '--cpu', '1')
    lines = r.stdout.splitlines()
    check(lines[:2] == ['CPU 1: last 1011 events before [14.720372518]',
                        '[14.652136687] cpu1 -- lost events=71 packets=0'],
          '--tail 1011 --cpu 1: the loss before its events: %s' % lines[:3])
    r = check_tail(REAL_TRACE, 1010, '--cpu', '1')
    check('lost' not in r.stdout.split('\n\n')[0], '--tail 1010: a loss before the '
          'events it shows was printed: %s' % r.stdout.splitlines()[:3])
    check_tail(REAL_TRACE, 100000)


@test
def tail_stacks(ctx):
    """An event's stack prints under it in --tail, the last event's too
    (its stack is complete only at the end of the trace)."""
    d = stack_trace(os.path.join(ctx.tmp, 'stacks'), STACK_EVENTS_AGAIN)
    for n in (1, 2, 3, 5):
        check_tail(d, n)
    r = rt('report', '--tail', 1, d)
    lines = r.stdout.splitlines()
    check(lines[2:6] == ['    schedule+0x10', '    do_nanosleep+0x34',
                         '    rtr_pid_filter_set+0x24 [ringtrace]',
                         '    entry_SYSCALL_64+0x8'] and lines[0].startswith('CPU 0: last 1 event '),
          '--tail 1: the last event and its stack: %s' % lines)


@test
def tail_damaged(ctx):
    """The damage rules hold: a damaged packet of cpu1 costs that packet
    (exit 3, named on stderr); --tail prints what the whole report does
    of the CPU's end, the loss line saying damaged=1 when N reaches it."""
    d = os.path.join(ctx.tmp, 'real')
    r = rt('unpack', REAL_TRACE, d)
    check(r.returncode == 0, 'unpack of the real trace: %s' % r.stderr)
    bad, _, off = damaged_copy(ctx, d, 23, 'seq', lambda v: v ^ 1 << 40, cpu=1)
    for n in (3, 200, 100000):
        r = check_tail(bad, n, status=3)
        check('damaged' in r.stderr and 'cpu1' in r.stderr,
              '--tail %d: the damage is not named: %r' % (n, r.stderr))
    check('damaged=1' in r.stdout, '--tail 100000: no damaged=1 loss line: %s'
          % r.stdout[-2000:])
    # --strict: an error where the damage is; what was read before it
    # still prints, as the whole report's lines do.
    r = rt('report', '--tail', 3, '--strict', bad)
    full = rt('report', '--strict', bad)
    cpu1 = [l for l in full.stdout.splitlines() if l.split(' ')[1:2] == ['cpu1']]
    check(r.returncode == 1 and full.returncode == 1 and len(cpu1) > 3 and
          r.stdout.split('\n\n')[1].splitlines()[1:] == cpu1[-3:],
          '--strict: exit %d, %s; the whole report\'s cpu1 ends %s'
          % (r.returncode, r.stdout, cpu1[-3:]))


@test
def tail_refused(ctx):
    """--tail 0, a negative or non-numeric N, and --tail with --stat,
    --folded, --follow or --critical-path: usage errors (exit 2), nothing
    printed; two recordings at once: an error."""
    for args, why in ((['--tail', '0'], "--tail: '0' is not a number of events (1 or more)"),
                      (['--tail', '-1'], "--tail: '-1' is not a number of events"),
                      (['--tail', 'x'], "--tail: 'x' is not a number of events"),
                      (['--tail', '99999999999'], "is not a number of events"),
                      (['--tail', ''], "is not a number of events"),
                      (['--tail', '2', '--stat'], '--tail prints events'),
                      (['--tail', '2', '--folded'], '--tail prints events'),
                      (['--tail', '2', '--follow'], '--tail prints events'),
                      (['--tail', '2', '--critical-path', '1'], '--critical-path takes')):
        r = rt('report', *(args + [REAL_TRACE]))
        check(r.returncode == 2 and why in r.stderr and r.stdout == '',
              '%s: exit %d %r %r' % (args, r.returncode, r.stderr, r.stdout[:200]))
    a, _ = ctx.gen(events=50, cpus=1, seed=5)
    r = rt('report', '--tail', '2', REAL_TRACE, a)
    check(r.returncode == 1 and '--tail reads one recording' in r.stderr,
          'two recordings: exit %d %r' % (r.returncode, r.stderr))



def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--fuzz', type=int, default=100,
                    help='CLI fuzz cases (one process each)')
    ap.add_argument('-k', help='only tests whose name contains this')
    ap.add_argument('-v', action='store_true', help='show tracebacks')
    ap.add_argument('--keep', action='store_true', help='keep the temporary dir')
    args = ap.parse_args()

    for b in (RINGTRACE, RINGTRACE_ASAN):
        if not os.access(b, os.X_OK):
            print('decoder: %s missing: run make -C tools ringtrace ringtrace-asan' % b)
            print('decoder: 0 passed, 1 failed')
            return 1
    for prog in ('babeltrace2', 'zstd'):
        if not shutil.which(prog):
            print('decoder: %s is not installed (tools/install-deps)' % prog)
            print('decoder: 0 passed, 1 failed')
            return 1

    return run_suite('decoder', TESTS, lambda tmp: Ctx(tmp, args), args)


if __name__ == '__main__':
    sys.exit(main())
