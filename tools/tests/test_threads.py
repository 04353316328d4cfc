#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of who-runs-where (tools/lib/threads.c) and what a window
knows of threads (the packer's thread tables, lib/chunk_index.h; a
window's facts, tools/lib/facts.c): no kernel needed.

  - a window's output is the full pass's cut to the window, byte for byte:
    report (with --pid, --cgroup, --comm, --stat) and every export, over
    packed chunks with their thread tables, packed chunks without
    (an older ringtrace's), stored chunks, plain files and chunk sets,
    with a CPU that runs one thread alone for whole frames (and beyond
    16 MiB), a process forked, exec'd and renamed from another CPU
    before the window;
  - a windowed Perfetto export has its ProcessTree, an LTTng one its
    state dump;
  - after a loss (events or packets lost, a packet skipped as damage)
    the CPU's thread is unknown until its next switch;
  - the idle task is named per CPU (swapper/N);
  - the packer's table: its format, what an older reader sees of it,
    and a table that is damaged or lies is not trusted.

Usage: test_threads.py [-k SUBSTRING] [-v] [--keep]
Last line: `threads: N passed, M failed`.
"""

import os
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gentrace  # noqa: E402
import test_decoder as td  # noqa: E402
from test_decoder import Fail, check, comm, kpacket, stored_chunk, marker, sys_entry  # noqa: E402

TESTS, test = td.registry()


def rt(*args, env=None, asan=True):
    return td.rt_env(env or {}, *args, asan=asan)


def ok_run(r, what, status=0):
    check('Sanitizer' not in r.stderr and 'runtime error' not in r.stderr,
          '%s: sanitizer:\n%s' % (what, r.stderr[-3000:]))
    check(r.returncode == status, '%s: exit %d: %s' % (what, r.returncode, r.stderr[-1500:]))
    return r


# ---- a trace of processes and threads --------------------------------------------------

L = td.MODULE_LAYOUTS
# The module's layouts, with the cgroup fields of today's ringtrace.ko.
EVENTS = [gentrace.EVENTS[0]] + [(i, n, f) for i, n, f in (
    (1, 'sched_switch', L['sched_switch']),
    (2, 'sched_wakeup', L['sched_wakeup']),
    (4, 'sched_process_fork', L['sched_process_fork'] + [('uint64_t', 'child_cgroup_id', None)]),
    (5, 'sched_process_exec', L['sched_process_exec']),
    (11, 'syscall_entry', L['syscall_entry']),
    (12, 'syscall_exit', L['syscall_exit']),
    (13, 'ringtrace_statedump_task', L['ringtrace_statedump_task'] +
     [('uint64_t', 'cgroup_id', None)]),
    (14, 'ringtrace_statedump_cpu', L['ringtrace_statedump_cpu']),
    (15, 'task_rename', L['task_rename']),
)]
UUID = bytes(range(16, 32))
T0 = 5 * 10**9
PACKET_NS = 10**6

# (tid, pid, ppid, comm, cgroup) of the state dump.
TASKS = [(1, 1, 0, 'init', 1), (100, 100, 1, 'shell', 1000), (101, 100, 1, 'shell-worker', 1000),
         (200, 200, 1, 'daemon', 2000), (201, 200, 1, 'daemon-io', 2000),
         (202, 200, 1, 'daemon-net', 2000), (300, 300, 1, 'cruncher', 3000)]
NAMES = {t[0]: t[3] for t in TASKS}


def kswitch(prev, ptid, nxt, ntid):
    return comm(prev) + struct.pack('<iiq', ptid, 120, 1) + comm(nxt) + struct.pack('<ii', ntid, 120)


def dump_task(tid, pid, ppid, name, cg):
    return struct.pack('<iii', tid, pid, ppid) + comm(name) + struct.pack('<Q', cg)


def dump_cpu(tid, pid, name):
    return struct.pack('<ii', tid, pid) + comm(name)


def kfork(parent, ptid, ppid, child, ctid, cpid, cg):
    return (comm(parent) + struct.pack('<ii', ptid, ppid) + comm(child) +
            struct.pack('<iiQ', ctid, cpid, cg))


def kexec(tid, path):
    return struct.pack('<iiH', tid, tid, len(path)) + path


def krename(tid, old, new):
    return struct.pack('<i', tid) + comm(old) + comm(new) + struct.pack('<h', 0)


def write_metadata(d):
    os.makedirs(d)
    meta = gentrace.metadata(UUID, 1700000000, 500000000, EVENTS)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta.replace('fields := struct { int32_t id;',
                             'fields := struct { %s' % td.SYSCALL_ENUM))


def write_streams(d, streams, files, plain=False):
    """@streams {cpu: [packet bytes]} as rotated stored chunks (or plain
    files), @files a CPU."""
    for cpu, pk in streams.items():
        per = (len(pk) + files - 1) // files
        for k in range(files):
            part = pk[k * per:(k + 1) * per]
            if not part:
                continue
            name = os.path.join(d, 'cpu%d-%06d' % (cpu, k + 1))
            with open(name if plain else name + '.zst', 'wb') as f:
                f.write(b''.join(part) if plain else stored_chunk(part))


class Scenario:
    """Three CPUs, PACKETS packets each, PER events a packet:

      cpu0  the state dump (every task), then 101, 201, 202 and the idle
            task in turn; a loss now and then, right before a switch; 201
            alone from packet QUIET[0] to QUIET[1] (no switch, no loss:
            its name then changes from another CPU only)
      cpu1  100 and the idle task in turn; 100 forks 400 (packet FORK, a
            process of its own, cgroup 4000), 400 runs and execs
            /usr/bin/tool (EXEC), 100 renames 201 "renamed" (RENAME: a
            write to /proc/201/comm, on another CPU than 201's); losses
      cpu2  300 alone, from its state dump on: no switch, no loss
    System calls (getppid) and markers fill the rest, every event of a
    thread that runs."""
    PACKETS = 150
    PER = 12
    FORK, EXEC, RENAME = 40, 46, 52
    QUIET = (49, 70)

    def __init__(self, cpu2_pad=0):
        self.cpu2_pad = cpu2_pad        # marker bytes: cpu2's packets grow

    def events(self, cpu, n, cur):
        """Packet @n of @cpu, @cur its running tid (a list, updated)."""
        begin = T0 + n * PACKET_NS + cpu * 1000
        step = PACKET_NS // (self.PER + 1)
        evs = []
        for i in range(self.PER):
            ts = begin + (i + 1) * step
            if n == 0 and i == 0:
                tid = {0: 0, 1: 0, 2: 300}[cpu]
                name = 'swapper/%d' % cpu if tid == 0 else NAMES[tid]
                evs.append((ts, 14, dump_cpu(tid, tid, name)))
                cur[0] = tid
            elif n == 0 and cpu == 0 and i <= len(TASKS):
                evs.append((ts, 13, dump_task(*TASKS[i - 1])))
            elif cpu == 1 and n == self.FORK and i == 3 and cur[0] == 100:
                evs.append((ts, 4, kfork('shell', 100, 100, 'shell', 400, 400, 4000)))
            elif cpu == 1 and n == self.EXEC and i == 3 and cur[0] == 400:
                evs.append((ts, 5, kexec(400, b'/usr/bin/tool')))
            elif cpu == 1 and n == self.RENAME and i == 3 and cur[0] == 100:
                evs.append((ts, 15, krename(201, 'daemon-io', 'renamed')))
            elif i % 6 == 1 and cpu != 2 and n and self.next_tid(cpu, n, i, cur) != cur[0] and \
                    not (cpu == 0 and self.QUIET[0] <= n < self.QUIET[1] and
                         (n, i) != (self.QUIET[0], 1)):
                nxt = self.next_tid(cpu, n, i, cur)
                evs.append((ts, 1, kswitch(self.name(cur[0], cpu, n), cur[0],
                                           self.name(nxt, cpu, n), nxt)))
                cur[0] = nxt
            elif i % 3 == 0:
                evs.append((ts, 11, sys_entry(110)))
            else:
                pad = b'.' * self.cpu2_pad if cpu == 2 else b''
                evs.append((ts, 0, marker(b'c%d p%d e%d' % (cpu, n, i) + pad)))
        return begin, evs

    def next_tid(self, cpu, n, i, cur):
        """Who a switch at event @i of packet @n switches in."""
        if cpu == 1 and i == 1 and n in (self.FORK, self.RENAME):
            return 100
        if cpu == 1 and i == 1 and n == self.EXEC:
            return 400
        if cpu == 0 and (n, i) == (self.QUIET[0], 1):
            return 201
        order = [101, 201, 202, 0] if cpu == 0 else \
            ([100, 0, 400] if n > self.FORK else [100, 0])
        return order[(order.index(cur[0]) + 1) % len(order)] if cur[0] in order else order[0]

    def name(self, tid, cpu, n):
        if tid == 0:
            return 'swapper/%d' % cpu
        if tid == 400:
            return 'tool' if n > self.EXEC else 'shell'
        if tid == 201 and n > self.RENAME:
            return 'renamed'
        return NAMES[tid]

    def streams(self):
        out = {}
        for cpu in range(3):
            cur, seq, disc, pk = [-1], 0, 0, []
            for n in range(self.PACKETS):
                begin, evs = self.events(cpu, n, cur)
                # Losses: none on cpu2 (one thread alone), none on cpu0
                # while 201 runs alone there.
                quiet = cpu == 0 and self.QUIET[0] <= n < self.QUIET[1]
                if cpu != 2 and not quiet and n % 17 == 9:
                    disc += 2
                if cpu == 1 and n % 23 == 11:
                    seq += 1
                pk.append(kpacket(UUID, cpu, seq, evs, begin, begin + PACKET_NS - 1, disc))
                seq += 1
            out[cpu] = pk
        return out


def scenario_trace(d, files=3, plain=False, sc=None):
    write_metadata(d)
    write_streams(d, (sc or Scenario()).streams(), files, plain)
    return d


def packed(d, frame='4K'):
    r = td.rt('compress', '--frame-size', frame, '-j', '1', d)
    check(r.returncode == 0, 'compress: ' + r.stderr)
    return d


def table_of(path):
    """(table frame offset, its records [(first_seq, first_disc, last_seq,
    last_disc, flags, change, tid, [facts])], index data_bytes) of a packed
    chunk; records None when it has no table."""
    with open(path, 'rb') as f:
        data = f.read()
    dbytes = struct.unpack('<Q', data[-40:-32])[0]
    foot = data[dbytes - 32:dbytes]
    if len(foot) < 32 or foot[-4:] != b'RTHT':
        return None, None, dbytes
    xx, n, rsize, fsize, ver, rlen, tag = struct.unpack('<QIIIIII', foot)
    start = dbytes - 32 - rlen - 8
    recs, p = [], start + 8
    for _ in range(n):
        r = list(struct.unpack('<QQQQIIiI', data[p:p + 48]))
        p += 48
        facts = []
        for _ in range(r[-1]):
            ts, kind, tid = struct.unpack('<QIi', data[p:p + 16])
            facts.append((ts, kind, tid, data[p + 16:p + 32]))
            p += 32
        recs.append(r[:-1] + [facts])
    return start, recs, dbytes


def strip_table(path):
    """The chunk as a ringtrace without thread tables packed it: the
    table frame cut out, the index's data_bytes told."""
    with open(path, 'rb') as f:
        data = f.read()
    start, recs, dbytes = table_of(path)
    check(recs is not None, '%s: no thread table to strip' % path)
    ix = bytearray(data[dbytes:])
    struct.pack_into('<Q', ix, len(ix) - 40, start)
    with open(path, 'wb') as f:
        f.write(data[:start] + bytes(ix))


def layouts(ctx, name, sc=None, make=None):
    """The scenario (or the trace make(dir, plain=False) writes) as packed
    chunks (with tables), packed without tables (an older ringtrace's),
    stored chunks, plain files."""
    make = make or (lambda d, plain=False: scenario_trace(d, plain=plain, sc=sc))
    base = os.path.join(ctx.tmp, name)
    out = {'packed': packed(make(base + '-packed'))}
    older = base + '-older'
    shutil.copytree(out['packed'], older)
    for n in os.listdir(older):
        if n.endswith('.zst'):
            strip_table(os.path.join(older, n))
    out['older'] = older
    out['stored'] = make(base + '-stored')
    out['plain'] = make(base + '-plain', plain=True)
    return out


def secs(ns):
    return '%d.%09d' % (ns // 10**9, ns % 10**9)


def window_args(b, e):
    return (['--begin', secs(b)] if b is not None else []) + \
           (['--end', secs(e)] if e is not None else [])


def at(n, frac=0):
    return T0 + n * PACKET_NS + frac


# (begin, end): after the fork, exec and rename; across them; open-ended;
# early (before the fork); a short one deep in.
WINDOWS = [(at(60, 123), at(90)), (at(Scenario.EXEC - 2, 5), at(Scenario.RENAME + 3)),
           (at(30, 77), None), (at(5, 1), at(8)), (at(131, 3), at(133, 500)),
           (at(65, 5), at(68))]

TS = re.compile(r'^\[(\d+)\.(\d{9})\]')


def systrace_ns(line):
    """The time of a systrace line, in ns."""
    return int(line.split(': ', 1)[0].rsplit(' ', 1)[1].replace('.', ''))


def cut(text, b, e):
    """The item lines of a report whose time is in [b, e]."""
    out = []
    for line in text.splitlines():
        m = TS.match(line)
        if not m:
            continue
        t = int(m.group(1)) * 10**9 + int(m.group(2))
        if (b is None or t >= b) and (e is None or t <= e):
            out.append(line)
    return out


def items(text):
    return [l for l in text.splitlines() if TS.match(l)]


def first_diff(a, b):
    return next(('\n  window %s\n  full   %s' % (x, y) for x, y in zip(a, b) if x != y),
                '(%d lines, %d)' % (len(a), len(b)))


def same_as_full(dirs, b, e, *extra, seek_only=False):
    """report of the window, seeking and by a full pass, prints the full
    report's lines (with the same filters) of the window, byte for byte."""
    dirs = list(dirs) if isinstance(dirs, (list, tuple)) else [dirs]
    whole = ok_run(rt('report', *extra, *dirs), 'report %s' % ' '.join(extra))
    want = cut(whole.stdout, b, e)
    for env in ({}, {'RINGTRACE_SEEK': '0'}):
        r = ok_run(rt('report', *window_args(b, e), *extra, *dirs, env=env),
                   'report %s %s' % (' '.join(window_args(b, e)), ' '.join(extra)))
        got = items(r.stdout)
        check(got == want, '%s report %s %s of %s: not the full pass cut to it:%s' %
              ('seeking' if not env else 'a full pass of', ' '.join(window_args(b, e)),
               ' '.join(extra), os.path.basename(dirs[0]), first_diff(got, want)))
        check(not [l for l in r.stderr.splitlines() if 'note:' in l],
              'notes: %s' % r.stderr)
        if seek_only:
            break
    return want


# ---- report ------------------------------------------------------------------------

@test
def window_report_is_the_full_pass_cut(ctx):
    """report --begin/--end, with --pid, --cgroup, --comm, --tid, prints
    the full report's lines of the window, byte for byte, seeking and not,
    on packed chunks (thread tables), packed chunks without tables,
    stored chunks and plain files: processes, names and cgroups learnt
    before the window (the state dump, a fork, an exec, a rename on
    another CPU), cpu2 running one thread alone since its first frame."""
    for kind, d in layouts(ctx, 'w').items():
        for b, e in WINDOWS:
            lines = same_as_full(d, b, e)
            check(lines, '%s: window %s..%s printed nothing' % (kind, b, e))
            # cpu2: 300, named, every event of the window.
            c2 = [l for l in lines if ' cpu2 ' in l]
            check(c2 and all(' cpu2 cruncher-300 ' in l for l in c2),
                  '%s: cpu2 of the window: %s' % (kind, c2[:2]))
        b, e = WINDOWS[0]
        # The daemon's threads (the state dump), one of them renamed from cpu1.
        p200 = same_as_full(d, b, e, '--pid', '200')
        check(p200 and any(' renamed-201 ' in l for l in p200) and
              any(' daemon-net-202 ' in l for l in p200) and
              all(re.search(r' (renamed-201|daemon-net-202|daemon-io-201) ', l) for l in p200),
              '%s: --pid 200: %d lines %s' % (kind, len(p200), p200[:2]))
        # The forked process: its pid, its cgroup, its exec'd name.
        p400 = same_as_full(d, b, e, '--pid', '400')
        check(p400 and all(' tool-400 ' in l for l in p400), '%s: --pid 400: %s' % (kind, p400[:2]))
        check(same_as_full(d, b, e, '--cgroup', '4000') == p400, '%s: --cgroup 4000' % kind)
        check(same_as_full(d, b, e, '--cgroup', '3000') ==
              [l for l in same_as_full(d, b, e) if ' cpu2 ' in l], '%s: --cgroup 3000' % kind)
        check(same_as_full(d, b, e, '--comm', 'renamed') ==
              [l for l in p200 if ' renamed-201 ' in l], '%s: --comm renamed' % kind)
        same_as_full(d, b, e, '--tid', '101,0')
        same_as_full(d, *WINDOWS[1], '--pid', '100,400')
        # cpu0 runs 201 alone since before cpu1 renamed it, frames before
        # the window: its name is known from cpu1's frames only.
        c0 = [l for l in same_as_full(d, *WINDOWS[5]) if ' cpu0 ' in l]
        check(c0 and all(' cpu0 renamed-201 ' in l for l in c0),
              '%s: cpu0 while 201 runs alone, renamed from cpu1: %s' % (kind, c0[:2]))


@test
def window_stat_is_the_full_passs(ctx):
    """report --stat of a window: seeking prints what a full pass of the
    window prints (threads by on-CPU time with their pid and cgroup)."""
    d = packed(scenario_trace(os.path.join(ctx.tmp, 'stat')))
    for b, e in WINDOWS[:2]:
        a = window_args(b, e) + ['--stat']
        full = ok_run(rt('report', *a, d, env={'RINGTRACE_SEEK': '0'}), 'report --stat')
        seek = ok_run(rt('report', *a, d), 'report --stat')
        check(seek.stdout == full.stdout, '--stat %s: seeking differs:%s' %
              (a, first_diff(seek.stdout.splitlines(), full.stdout.splitlines())))
        check(re.search(r'^  renamed +2000 +201 +200 ', seek.stdout, re.M),
              '--stat: no renamed 201 with its pid and cgroup:\n' + seek.stdout[-1500:])


def make_sets(ctx, d, name):
    import json
    sets = []
    for k in range(1, 4):
        s = os.path.join(ctx.tmp, '%s%d' % (name, k))
        os.makedirs(s)
        shutil.copy(os.path.join(d, 'metadata'), s)
        cpus, files = [], []
        for cpu in range(3):
            n = 'cpu%d-%06d.zst' % (cpu, k)
            shutil.copy(os.path.join(d, n), s)
            plain = subprocess.run(['zstd', '-dc', os.path.join(s, n)],
                                   stdout=subprocess.PIPE, check=True).stdout
            pk = list(td.packets_of(plain))
            cpus.append({'cpu': cpu, 'file': n, 'packets': len(pk), 'events': len(pk) * 12,
                         'events_lost': 0,
                         'first_timestamp': td.hdr_get(plain, pk[0], 'begin'),
                         'last_timestamp': td.hdr_get(plain, pk[-1], 'end')})
            with open(os.path.join(s, n), 'rb') as f:
                files.append({'name': n, 'size': os.path.getsize(os.path.join(s, n)),
                              'xxh64': '%016x' % td.xxh64(f.read())})
        with open(os.path.join(s, 'manifest.json'), 'w') as f:
            json.dump({'format': 'ringtrace-chunk-set', 'format_version': 1,
                       'host': 'h', 'boot_id': 'b', 'trace': 't',
                       'trace_uuid': '10111213-1415-1617-1819-1a1b1c1d1e1f',
                       'sequence': k, 'clock': {'realtime_offset_ns': 0},
                       'cpus': cpus, 'files': files}, f)
        sets.append(s)
    return sets


@test
def window_of_chunk_sets(ctx):
    """Chunk sets (the first ones left unopened but for their thread
    tables): a window prints the full pass's lines of it, with the state
    dump's processes, which are in the first set; every export of the
    window is a full pass's."""
    d = packed(scenario_trace(os.path.join(ctx.tmp, 'sets')))
    sets = make_sets(ctx, d, 'set')[::-1]
    for b, e in (WINDOWS[0], WINDOWS[4]):
        same_as_full(sets, b, e)
        p = same_as_full(sets, b, e, '--pid', '200')
        check(p, 'sets: --pid 200 printed nothing')
        # Every export of the sets' window: seeking writes a full pass's bytes.
        for fmt in FORMATS:
            outs = []
            for env in ({'RINGTRACE_SEEK': '0'}, {}):
                out = os.path.join(ctx.tmp, 'sets.%s-%d' % (fmt, len(outs)))
                shutil.rmtree(out, ignore_errors=True)
                if os.path.exists(out):
                    os.remove(out)
                ok_run(rt('export', '-f', fmt, '-o', out, *window_args(b, e), *sets, env=env),
                       'export -f %s of the sets' % fmt)
                outs.append(tree_bytes(out))
            check(outs[0] == outs[1] and outs[0],
                  'sets: export -f %s of the window: seeking writes %d bytes, a full pass %d' %
                  (fmt, len(outs[1]), len(outs[0])))


# ---- exports -----------------------------------------------------------------------

FORMATS = ('systrace', 'chrome-json', 'perfetto', 'lttng')


def export(d, fmt, out, *a, env=None):
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(out):
        os.remove(out)
    return ok_run(rt('export', '-f', fmt, '-o', out, *a, d, env=env), 'export -f %s %s' % (fmt, a))


def tree_bytes(path):
    """A file, or a directory's files (by name), as bytes."""
    if os.path.isfile(path):
        with open(path, 'rb') as f:
            return f.read()
    out = b''
    for root, _, files in sorted(os.walk(path)):
        for n in sorted(files):
            with open(os.path.join(root, n), 'rb') as f:
                out += n.encode() + b'\0' + f.read()
    return out


PROC = re.compile(r'processes \{\n\s+pid: (\d+)\n(?:\s+ppid: (\d+)\n)?\s+cmdline: "([^"]*)"')
THREAD = re.compile(r'threads \{\n\s+tid: (\d+)\n\s+tgid: (\d+)')


def perfetto_tree(text):
    """The ProcessTree entries of a Perfetto export, in order."""
    procs = {int(m.group(1)): (int(m.group(2)) if m.group(2) else None, m.group(3))
             for m in PROC.finditer(text)}
    threads = {int(m.group(1)): int(m.group(2)) for m in THREAD.finditer(text)}
    return procs, threads


@test
def window_exports_are_the_full_pass_cut(ctx):
    """export --begin/--end, every format: seeking writes what a full pass
    writes, on every layout; systrace's lines are the whole export's of
    the window; a Perfetto window starts with a ProcessTree of the
    processes and threads known (those of the whole export, with their
    parents), an LTTng one with a state dump of them; both read by their
    checkers."""
    for kind, d in layouts(ctx, 'x').items():
        whole = export(d, 'systrace', d + '.whole.txt')
        with open(d + '.whole.txt') as f:
            body = [l for l in f.read().splitlines() if not l.startswith('#')]
        for b, e in WINDOWS[:3]:
            a = window_args(b, e)
            for fmt in FORMATS:
                outs = []
                for env in ({'RINGTRACE_SEEK': '0'}, {}):
                    out = '%s.%s-%d' % (d, fmt, len(outs))
                    export(d, fmt, out, *a, env=env)
                    outs.append(tree_bytes(out))
                check(outs[0] == outs[1] and outs[0],
                      '%s: export -f %s %s: seeking writes %d bytes, a full pass %d' %
                      (kind, fmt, a, len(outs[1]), len(outs[0])))
            with open('%s.systrace-1' % d) as f:
                win = [l for l in f.read().splitlines() if not l.startswith('#')]
            want = [l for l in body if b <= systrace_ns(l) and (e is None or systrace_ns(l) <= e)]
            check(win == want, '%s: systrace %s: not the whole export cut:%s' %
                  (kind, a, first_diff(win, want)))
            check(any('(    200)' in l for l in win), '%s: systrace: no tgid 200' % kind)
            # Perfetto: checked against report of the window, its tree.
            pf = '%s.perfetto-1' % d
            td.perfetto_check(d, pf, *a)
            procs, threads = perfetto_tree(td.pf_text(pf))
            check(threads.get(201) == 200 and threads.get(202) == 200 and
                  threads.get(101) == 100 and procs.get(200, (None,))[0] == 1 and
                  procs.get(300) == (1, 'cruncher'),
                  '%s: perfetto %s: the window\'s ProcessTree: %s %s' % (kind, a, procs, threads))
            if b > at(Scenario.FORK, 10**6):
                check(procs.get(400, (None,))[0] == 100,
                      '%s: perfetto %s: the forked process: %s' % (kind, a, procs.get(400)))
            # LTTng: babeltrace2 reads it; its state dump names the threads.
            bt = subprocess.run(['babeltrace2', '%s.lttng-1' % d], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
            check(bt.returncode == 0, 'babeltrace2: ' + bt.stderr[-500:])
            dump = [l for l in bt.stdout.splitlines() if 'lttng_statedump_process_state' in l]
            check(any('tid = 201, pid = 200, ppid = 1' in l for l in dump) and
                  any('tid = 300, pid = 300, ppid = 1, name = "cruncher"' in l for l in dump),
                  '%s: lttng %s: the window\'s state dump: %s' % (kind, a, dump[:3]))
    # The whole export's ProcessTree says the same of those threads.
    export(d, 'perfetto', d + '.whole.pf')
    procs, threads = perfetto_tree(td.pf_text(d + '.whole.pf'))
    check(threads.get(201) == 200 and procs.get(400, (None,))[0] == 100,
          'the whole export: %s %s' % (procs, threads))


@test
def window_perfetto_has_a_process_tree_seeking_or_not(ctx):
    """A windowed Perfetto export has a ProcessTree, with seeking off too
    (it had none: the state dump is before the window)."""
    d = scenario_trace(os.path.join(ctx.tmp, 'p'), plain=True)
    for env in ({'RINGTRACE_SEEK': '0'}, {}):
        out = os.path.join(ctx.tmp, 'p-%d.pf' % len(env))
        export(d, 'perfetto', out, *window_args(*WINDOWS[0]), env=env)
        text = td.pf_text(out)
        check('process_tree {' in text, 'no ProcessTree in the window (%s)' % env)


# ---- random traces -------------------------------------------------------------------

def random_trace(d, rng, cpus=3, packets=60, per=10, old_fork=False, plain=False,
                 packet_ns=PACKET_NS, reuse=False):
    """Random switches, forks (a new process or a thread, a cgroup or
    none; @old_fork: a fork without child_cgroup_id, which gives the
    parent's; @reuse: a third of them to a tid in use), execs, renames
    from any CPU, wakeups naming any thread, the state dump, and losses
    (sequence gaps, events_discarded), over @cpus CPUs, a packet every
    @packet_ns.  Switches name a thread as before its renames (names
    replaced, seen late)."""
    events = EVENTS
    if old_fork:
        events = [(i, n, L['sched_process_fork']) if n == 'sched_process_fork' else (i, n, f)
                  for i, n, f in EVENTS]
    os.makedirs(d)
    meta = gentrace.metadata(UUID, 1700000000, 500000000, events)
    with open(os.path.join(d, 'metadata'), 'w') as f:
        f.write(meta.replace('fields := struct { int32_t id;',
                             'fields := struct { %s' % td.SYSCALL_ENUM))
    tids = [t[0] for t in TASKS]
    next_tid = [500]
    name = lambda t: 'n%d' % t if t else 'swapper'

    def pick():
        return rng.choice(tids + [0])
    streams = {}
    for cpu in range(cpus):
        cur, seq, disc, pk = -1, 0, 0, []
        for n in range(packets):
            begin = T0 + n * packet_ns + cpu * 997
            evs = []
            for i in range(per):
                ts = begin + (i + 1) * (PACKET_NS // (per + 1))
                r = rng.random()
                if n == 0 and i == 0:
                    cur = rng.choice(tids)
                    evs.append((ts, 14, dump_cpu(cur, cur, 'd%d' % cur)))
                elif n == 0 and cpu == 0 and i <= len(TASKS):
                    t = TASKS[i - 1]
                    evs.append((ts, 13, dump_task(t[0], t[1], t[2], t[3], rng.choice([0, t[4]]))))
                elif r < 0.25:
                    nxt = pick()
                    evs.append((ts, 1, kswitch(name(cur), cur, name(nxt), nxt)))
                    cur = nxt
                elif r < 0.30:
                    if reuse and rng.random() < 0.33:
                        child = rng.choice(tids)
                    else:
                        child = next_tid[0] + cpu * 10000
                        next_tid[0] += 1
                        tids.append(child)
                    thread = rng.random() < 0.5
                    cpid = cur if thread else child
                    pay = comm(name(cur)) + struct.pack('<ii', cur, cur) + comm('c%d' % child) + \
                        struct.pack('<ii', child, cpid)
                    if not old_fork:
                        pay += struct.pack('<Q', rng.choice([0, 7000 + child]))
                    evs.append((ts, 4, pay))
                elif r < 0.33:
                    evs.append((ts, 5, kexec(cur, b'/bin/e%d' % rng.randrange(99))))
                elif r < 0.38:
                    t = pick()
                    evs.append((ts, 15, krename(t, name(t), 'r%d' % rng.randrange(999))))
                elif r < 0.48:
                    t = pick()
                    evs.append((ts, 2, comm('w%d' % rng.randrange(9)) + struct.pack('<iii', t, 120, cpu)))
                elif r < 0.75:
                    evs.append((ts, 11, sys_entry(110)))
                else:
                    evs.append((ts, 0, marker(b'c%d p%d e%d' % (cpu, n, i))))
            if rng.random() < 0.08:
                disc += rng.randrange(1, 5)
            if rng.random() < 0.06:
                seq += 1
            pk.append(kpacket(UUID, cpu, seq, evs, begin, begin + packet_ns - 1, disc))
            seq += 1
        streams[cpu] = pk
    write_streams(d, streams, 3, plain)
    return d, tids


@test
def window_random_traces(ctx):
    """Random traces (forks of processes and threads, with and without
    child_cgroup_id, execs, renames from any CPU, wakeups, losses), packed
    in small frames, stored and plain: random windows of report, with
    --pid and --cgroup, are the full pass cut to them.  The last two span
    2.4 s, so that names replaced by renames are believed again after a
    second (threads.c's STALE_NS), and fork to tids in use."""
    import random
    rng = random.Random(2029)
    for case in range(6):
        pns = PACKET_NS if case < 4 else 40 * PACKET_NS
        d, tids = random_trace(os.path.join(ctx.tmp, 'r%d' % case), rng,
                               old_fork=case % 2 == 1, plain=case == 3,
                               packet_ns=pns, reuse=case >= 4)
        if case < 2 or case == 4:
            packed(d, frame=rng.choice(['4K', '8K']))
        for _ in range(3):
            b = T0 + rng.randrange(5, 55) * pns + rng.randrange(PACKET_NS)
            e = b + rng.randrange(2, 6) * pns if rng.random() < 0.7 else None
            same_as_full(d, b, e, seek_only=True)
            same_as_full(d, b, e, '--pid', str(rng.choice(tids)), seek_only=True)
            same_as_full(d, b, e, '--cgroup', str(rng.choice([1000, 2000, 3000])),
                         seek_only=True)


# ---- one thread alone for frames, and beyond 16 MiB ---------------------------------

@test
def window_one_thread_beyond_16_mib(ctx):
    """cpu2 runs one thread alone from its state dump, for more than
    16 MiB of its stream before the window (the old search went back
    16 MiB, then printed -): the window names it, as a full pass does, on
    packed chunks (their tables: no data frame read), stored chunks and
    plain files."""
    sc = Scenario(cpu2_pad=18000)
    base = os.path.join(ctx.tmp, 'big')
    dirs = {'packed': packed(scenario_trace(base + '-packed', sc=sc), frame='1M'),
            'stored': scenario_trace(base + '-stored', sc=sc),
            'plain': scenario_trace(base + '-plain', plain=True, sc=sc)}
    size = sum(os.path.getsize(os.path.join(dirs['plain'], n))
               for n in os.listdir(dirs['plain']) if n.startswith('cpu2-'))
    check(size * (130 / 150) > 16 << 20, 'cpu2 has %d bytes: not beyond 16 MiB' % size)
    b, e = at(131, 3), at(133, 500)
    for kind, d in dirs.items():
        whole = ok_run(rt('report', '--cpu', '2', d, asan=False), 'report')
        want = cut(whole.stdout, b, e)
        r = ok_run(rt('report', '--cpu', '2', *window_args(b, e), d, asan=False), 'report')
        check(items(r.stdout) == want and want and
              all(' cpu2 cruncher-300 ' in l for l in want),
              '%s: cpu2 beyond 16 MiB:%s' % (kind, first_diff(items(r.stdout), want)))
    # The packed window reads no data frame before it: noise there is unseen.
    d = dirs['packed']
    path = os.path.join(d, 'cpu2-000001.zst')
    _, ents = td.index_of(path)
    with open(path, 'r+b') as f:
        for coff, _, _, _ in ents:
            f.seek(coff + 8)
            f.write(b'\xa5' * 16)
    r = ok_run(rt('report', '--cpu', '2', *window_args(b, e), d, asan=False), 'report')
    check(not r.stderr and all(' cpu2 cruncher-300 ' in l for l in items(r.stdout)),
          'the packed window read a data frame before it: %s' % r.stderr[-500:])


# ---- losses: the thread is unknown until the next switch ----------------------------

def gap_trace(d, damage=False):
    """cpu0: 101 runs (switched in), packet 2 lost (a sequence gap, or a
    packet damaged and skipped), packet 3's first events before its
    switch to 102; cpu1: 201 alone, events_discarded grows at packet 2."""
    write_metadata(d)
    streams = {}
    for cpu in range(2):
        pk = []
        for n in range(5):
            begin = T0 + n * PACKET_NS + cpu * 1000
            evs = []
            for i in range(6):
                ts = begin + (i + 1) * 1000
                if n == 0 and i == 0:
                    tid = 101 if cpu == 0 else 201
                    evs.append((ts, 1, kswitch('swapper/%d' % cpu, 0, 'task%d' % tid, tid)))
                elif cpu == 0 and n == 3 and i == 4:
                    evs.append((ts, 1, kswitch('task101', 101, 'task102', 102)))
                else:
                    evs.append((ts, 0, marker(b'c%d p%d e%d' % (cpu, n, i))))
            seq = n + (1 if cpu == 0 and n >= 2 and not damage else 0)
            disc = 5 if cpu == 1 and n >= 2 else 0
            pk.append(kpacket(UUID, cpu, seq, evs, begin, begin + PACKET_NS - 1, disc))
        if damage:
            # Packet 2 of cpu0: an event header cut (its events do not
            # hold together): skipped as damage, its neighbours intact.
            p = bytearray(pk[2])
            struct.pack_into('<I', p, 84, 3)     # events: 6 -> 3
            pk[2] = bytes(p)
        streams[cpu] = pk
    for cpu, pk in streams.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            f.write(b''.join(pk))
    return d


@test
def loss_makes_the_thread_unknown(ctx):
    """After a loss (a packet lost: a sequence gap; events lost:
    events_discarded grows) report prints - for the CPU's events up to its
    next sched_switch, never the thread from before the gap; exports leave
    them out and count them."""
    d = gap_trace(os.path.join(ctx.tmp, 'gap'))
    r = ok_run(rt('report', d), 'report')
    lines = items(r.stdout)
    c0 = [l for l in lines if ' cpu0 ' in l and ' -- lost ' not in l]
    c1 = [l for l in lines if ' cpu1 ' in l and ' -- lost ' not in l]
    # cpu0: packets 0-1 of 101 (11 events after its switch in), then after
    # the gap 10 events of -, the switch (101's), then 102.
    check([l.split()[2] for l in c0] ==
          ['swapper/0-0'] + ['task101-101'] * 11 + ['-'] * 10 + ['task101-101'] +
          ['task102-102'] * 7,
          'cpu0 around the lost packet:\n' + '\n'.join(c0))
    check([l.split()[2] for l in c1] == ['swapper/1-0'] + ['task201-201'] * 11 + ['-'] * 18,
          'cpu1 after the events lost:\n' + '\n'.join(c1[10:16]))
    check(any(' cpu0 -- lost events=0 packets=1' in l for l in lines) and
          any(' cpu1 -- lost events=5 packets=0' in l for l in lines), 'the loss lines')
    # A window that starts after the loss: the same, seeking or not.
    same_as_full(d, T0 + 2 * PACKET_NS + 3500, None)
    same_as_full(d, T0 + 3 * PACKET_NS + 500, T0 + 3 * PACKET_NS + 4500)
    # Exports: the events of no known thread are left out, and counted.
    r = ok_run(rt('export', '-f', 'systrace', d), 'export')
    check('28 events left out: their thread is unknown' in r.stderr,
          'systrace: ' + r.stderr)
    after = [l for l in r.stdout.splitlines() if 'task101-101' in l and
             T0 + 2 * PACKET_NS <= systrace_ns(l) < T0 + 3 * PACKET_NS + 5000]
    check(not after, 'systrace: events after the loss under 101:\n' + '\n'.join(after))


@test
def damaged_packet_makes_the_thread_unknown(ctx):
    """A packet skipped as damage is a gap too: the CPU's events after it
    are printed under -, up to its next switch (a held-out case printed
    them under the thread before the gap)."""
    d = gap_trace(os.path.join(ctx.tmp, 'dmg'), damage=True)
    r = ok_run(rt('report', d), 'report', status=3)
    c0 = [l for l in items(r.stdout) if ' cpu0 ' in l and ' -- lost ' not in l]
    check([l.split()[2] for l in c0] ==
          ['swapper/0-0'] + ['task101-101'] * 11 + ['-'] * 4 + ['task101-101'] +
          ['task102-102'] * 7,
          'cpu0 around the damaged packet:\n' + '\n'.join(c0))


# ---- a rename seen late ----------------------------------------------------------------

def kwakeup(name, tid):
    return comm(name) + struct.pack('<iii', tid, 120, 0)


def rename_race_trace(d, plain=False):
    """Two renames that switches and a wakeup still see the old name of,
    as on a PREEMPT_RT kernel (task_rename is traced before the copy, under
    a task_lock() that may sleep there):
      cpu0  50 "before" renames itself "after" (packet 2), is switched out
            and in again under "before" (packets 2 and 3), then runs its
            system calls; its switch out at packet 7 says "after";
      cpu1  70 writes /proc/51/comm: 51 "orig" renamed "new51" (packet 2),
            a wakeup of 51 says "orig" (packet 3), 51 switched in under
            "orig" (packet 4) runs its system calls to the end.
    Each packet is padded to about 3 KiB: a packed frame of 4 KiB holds one
    or two, so the rename and the old names lie in different frames."""
    write_metadata(d)
    pad = marker(b'.' * 3000)
    streams = {}
    for cpu in range(2):
        pk = []
        for n in range(10):
            begin = T0 + n * PACKET_NS + cpu * 1000
            evs = []
            for i in range(6):
                ts = begin + (i + 1) * 1000
                ev = None
                if n == 0 and i == 0:
                    ev = (14, dump_cpu(0, 0, 'swapper/%d' % cpu))
                elif n == 0 and i == 1 and cpu == 0:
                    ev = (13, dump_task(50, 50, 1, 'before', 1))
                elif n == 0 and i == 1:
                    ev = (13, dump_task(51, 51, 1, 'orig', 1))
                elif n == 0 and i == 2:
                    ev = (1, kswitch('swapper/%d' % cpu, 0, *(('before', 50) if cpu == 0
                                                             else ('writer', 70))))
                elif cpu == 0 and (n, i) == (2, 1):
                    ev = (15, krename(50, 'before', 'after'))
                elif cpu == 0 and (n, i) == (2, 2):
                    ev = (1, kswitch('before', 50, 'ktimers/0', 60))
                elif cpu == 0 and (n, i) == (3, 1):
                    ev = (1, kswitch('ktimers/0', 60, 'before', 50))
                elif cpu == 0 and (n, i) == (7, 4):
                    ev = (1, kswitch('after', 50, 'swapper/0', 0))
                elif cpu == 1 and (n, i) == (2, 1):
                    ev = (15, krename(51, 'orig', 'new51'))
                elif cpu == 1 and (n, i) == (3, 1):
                    ev = (2, kwakeup('orig', 51))
                elif cpu == 1 and (n, i) == (4, 1):
                    ev = (1, kswitch('writer', 70, 'orig', 51))
                elif i == 5:
                    ev = (0, pad)
                else:
                    ev = (11, sys_entry(110))
                evs.append((ts,) + ev)
            pk.append(kpacket(UUID, cpu, n, evs, begin, begin + PACKET_NS - 1))
        streams[cpu] = pk
    for cpu, pk in streams.items():
        name = os.path.join(d, 'cpu%d-000001' % cpu)
        with open(name if plain else name + '.zst', 'wb') as f:
            f.write(b''.join(pk) if plain else stored_chunk(pk))
    return d


@test
def rename_outlives_old_names_seen_late(ctx):
    """A name a rename replaced, seen again in a switch or a wakeup before
    the thread is seen named otherwise, is the kernel reading the task
    before the copy (PREEMPT_RT preempts task_lock()): report, --comm and
    systrace keep the new name; seeking windows (packed chunks with their
    thread tables, without, stored, plain) print what the full pass does;
    the packer's table holds each rename (RENAME, then STALE the old
    name)."""
    trace = layouts(ctx, 'race', make=rename_race_trace)
    for kind, d in trace.items():
        r = ok_run(rt('report', d), 'report of %s' % kind)

        def calls(cpu, b, e):
            return [l.split()[2] for l in items(r.stdout)
                    if ' cpu%d ' % cpu in l and ' syscall_entry: ' in l and
                    b < int(TS.match(l).group(1)) * 10**9 + int(TS.match(l).group(2)) < e]
        c0 = calls(0, at(3, 2000), at(7, 5000))
        c1 = calls(1, at(4, 3000), at(99))
        check(c0 and set(c0) == {'after-50'},
              '%s: 50\'s calls after its rename: %s' % (kind, sorted(set(c0))))
        check(c1 and set(c1) == {'new51-51'},
              '%s: 51\'s calls after its rename: %s' % (kind, sorted(set(c1))))
        old = [l for l in items(r.stdout) if re.search(r' (before-50|orig-51) ', l)]
        check(all(int(TS.match(l).group(1)) * 10**9 + int(TS.match(l).group(2)) <= at(2, 2000)
                  for l in old) and ' orig-51 ' not in r.stdout,
              '%s: the old names after the renames: %s' % (kind, old[-3:]))
        sel = ok_run(rt('report', '--comm', 'after', d), 'report --comm')
        n = len([l for l in items(sel.stdout) if ' syscall_entry: ' in l])
        check(n == len(c0), '%s: --comm after: %d calls, not %d' % (kind, n, len(c0)))
        sysr = ok_run(rt('export', '-f', 'systrace', d), 'systrace')
        check(not re.search(r'\b(before-50|orig-51) .*sys_enter', sysr.stdout.split(
            'task_rename')[-1]) and 'after-50' in sysr.stdout,
              '%s: systrace names the old threads after the renames' % kind)
        for b, e in ((at(4, 10), None), (at(3, 5500), at(6)), (at(5), at(5, 900000)),
                     (at(8, 2500), None)):
            same_as_full(d, b, e)
            same_as_full(d, b, e, '--comm', 'new51')
    recs = [rec for n in ('cpu0-000001.zst', 'cpu1-000001.zst')
            for rec in table_of(os.path.join(trace['packed'], n))[1]]
    kinds = [(k, tid, v.rstrip(b'\0')) for rec in recs for ts, k, tid, v in rec[7]
             if tid in (50, 51)]
    check((6, 50, b'after') in kinds and (7, 50, b'before') in kinds and
          (6, 51, b'new51') in kinds and (7, 51, b'orig') in kinds,
          'the tables\' rename facts: %s' % kinds)


def timed_trace(d, packets, plain=False):
    """cpu0's packets at the given times: @packets [(begin ns, [(event
    id, payload)...])...], events 1 us apart, each packet padded to about
    3 KiB (a 4 KiB packed frame holds one), stored (or plain)."""
    write_metadata(d)
    pad = marker(b'.' * 3000)
    pk = []
    for n, (begin, evs) in enumerate(packets):
        evs = [(begin + (i + 1) * 1000,) + ev for i, ev in enumerate(evs + [(0, pad)])]
        pk.append(kpacket(UUID, 0, n, evs, begin, begin + PACKET_NS - 1))
    name = os.path.join(d, 'cpu0-000001')
    with open(name if plain else name + '.zst', 'wb') as f:
        f.write(b''.join(pk) if plain else stored_chunk(pk))
    return d


def stale_end_trace(d, plain=False):
    """On cpu0:
      5.000  50 "bash" execs ls (task_rename "bash" -> "ls"), runs a call;
             60 "a" renames itself "b", runs a call;
      5.001  switches say 50 "ls"; bash 40 forks a child that gets tid
             50 (50 exited, its exit not traced), named "bash", which runs two calls; 60 is
             switched in under "a" (0.5 s after its rename: the race);
      5.002-5.007  markers alone (frames to seek over);
      5.500  60 runs a call, then 50 one;
      7.000  60 switched out and in under "a" (2 s after the rename: a
             rename back to "a" the trace does not hold), runs a call."""
    sec = 10**9
    return timed_trace(d, [
        (T0, [(14, dump_cpu(0, 0, 'swapper/0')), (13, dump_task(40, 40, 1, 'bash', 1)),
              (13, dump_task(50, 50, 40, 'bash', 1)), (13, dump_task(60, 60, 1, 'a', 1)),
              (1, kswitch('swapper/0', 0, 'bash', 50)), (15, krename(50, 'bash', 'ls')),
              (11, sys_entry(110)), (1, kswitch('ls', 50, 'a', 60)),
              (15, krename(60, 'a', 'b')), (11, sys_entry(110))]),
        (T0 + PACKET_NS, [(1, kswitch('b', 60, 'ls', 50)), (1, kswitch('ls', 50, 'bash', 40)),
                          (4, kfork('bash', 40, 40, 'bash', 50, 50, 1)),
                          (1, kswitch('bash', 40, 'bash', 50)), (11, sys_entry(110)),
                          (11, sys_entry(110)), (1, kswitch('bash', 50, 'a', 60))]),
    ] + [(T0 + k * PACKET_NS, []) for k in range(2, 8)] + [
        (T0 + sec // 2, [(11, sys_entry(110)), (1, kswitch('b', 60, 'bash', 50)),
                         (11, sys_entry(110)), (1, kswitch('bash', 50, 'a', 60))]),
        (T0 + 2 * sec, [(1, kswitch('a', 60, 'swapper/0', 0)),
                        (1, kswitch('swapper/0', 0, 'a', 60)), (11, sys_entry(110))]),
    ], plain)


@test
def stale_name_ends(ctx):
    """The name a rename replaced is not believed for a second after it
    (the race above), and no longer: a fork that gives the tid to a new
    task names it at once (a dead "bash" exec'd as ls, its tid reused by
    a fork of bash: bash), and the old name seen 2 s later is believed
    (a rename back the trace lacks).  Packed with tables, without, stored,
    plain: windows print what the full pass does."""
    trace = layouts(ctx, 'stale', make=stale_end_trace)
    want = ['ls-50', 'b-60', 'bash-50', 'bash-50', 'b-60', 'bash-50', 'a-60']
    for kind, d in trace.items():
        r = ok_run(rt('report', d), 'report of %s' % kind)
        calls = [l.split()[2] for l in items(r.stdout) if ' syscall_entry: ' in l]
        check(calls == want, '%s: the calls\' threads: %s, not %s' % (kind, calls, want))
        for b, e in ((at(1, 2500), None), (at(1, 6500), at(600)), (at(400), None),
                     (at(2000), None)):
            same_as_full(d, b, e)
            same_as_full(d, b, e, '--comm', 'bash')


# ---- the idle task -----------------------------------------------------------------

@test
def idle_task_named_per_cpu(ctx):
    """tid 0 is one idle task per CPU: report names it after its own CPU
    (swapper/0 on cpu0), whatever another CPU's events named tid 0 last;
    --comm selects one CPU's; report --folded groups them per CPU; in the
    exports, systrace keeps ftrace's <idle>, Perfetto and LTTng the
    events' own names."""
    d = os.path.join(ctx.tmp, 'idle')
    write_metadata(d)
    streams = {}
    for cpu in range(2):
        evs = [(T0 + cpu * 10, 14, dump_cpu(0, 0, 'swapper/%d' % cpu))]
        for i in range(4):
            ts = T0 + 1000 * (i + 1) + cpu * 10
            evs.append((ts, 0, marker(b'idle c%d %d' % (cpu, i))))
        evs.append((T0 + 9000 + cpu * 10, 1, kswitch('swapper/%d' % cpu, 0, 'work', 50 + cpu)))
        evs.append((T0 + 9500 + cpu * 10, 1, kswitch('work', 50 + cpu, 'swapper/%d' % cpu, 0)))
        evs.append((T0 + 9900 + cpu * 10, 0, marker(b'idle again c%d' % cpu)))
        streams[cpu] = [kpacket(UUID, cpu, 0, evs, evs[0][0], evs[-1][0])]
    for cpu, pk in streams.items():
        with open(os.path.join(d, 'cpu%d' % cpu), 'wb') as f:
            f.write(b''.join(pk))
    r = ok_run(rt('report', d), 'report')
    for l in items(r.stdout):
        m = re.match(r'^\[[0-9.]+\] cpu(\d) (\S+) ', l)
        if m and m.group(2).endswith('-0'):
            check(m.group(2) == 'swapper/%s-0' % m.group(1), 'idle misnamed: ' + l)
    check(len([l for l in items(r.stdout) if ' swapper/1-0 ' in l]) == 7,
          'cpu1 idle lines:\n' + r.stdout)
    r = ok_run(rt('report', '--comm', 'swapper/1', d), 'report --comm')
    check(items(r.stdout) and all(' cpu1 swapper/1-0 ' in l for l in items(r.stdout)),
          '--comm swapper/1:\n' + r.stdout)
    sysr = ok_run(rt('export', '-f', 'systrace', d), 'systrace')
    check('<idle>-0' in sysr.stdout and 'swapper/1-0' not in sysr.stdout.split('prev_comm')[0],
          'systrace idle: ' + sysr.stdout[-600:])


# ---- the table itself -----------------------------------------------------------------

@test
def table_written_by_the_packer(ctx):
    """compress (ringtraced's packer) writes a thread table in front of the
    index: a record per frame; what the frames tell (the state dump's
    pids, cpu2's thread since its dump, the fork's cgroup, the rename);
    the time index stays version 1 and counts it (an older reader passes
    over it); zstd -d gives the packets, byte for byte."""
    d = scenario_trace(os.path.join(ctx.tmp, 'tab'))
    before = {}
    for n in sorted(os.listdir(d)):
        if n.endswith('.zst'):
            before[n] = subprocess.run(['zstd', '-dc', os.path.join(d, n)],
                                       stdout=subprocess.PIPE, check=True).stdout
    packed(d)
    for n, plain in before.items():
        path = os.path.join(d, n)
        out = subprocess.run(['zstd', '-dc', path], stdout=subprocess.PIPE, check=True).stdout
        check(out == plain, '%s: zstd -d differs from the stored packets' % n)
        start, recs, dbytes = table_of(path)
        with open(path, 'rb') as f:
            data = f.read()
        foot = struct.unpack('<QQQIIII', data[-40:])
        check(foot[4:] == (32, 1, 0x58495452) and dbytes == len(data) - 8 - 32 * foot[3] - 40,
              '%s: the time index is not version 1 with its own offset: %s' % (n, foot))
        check(recs is not None and len(recs) == foot[3] and
              struct.unpack('<I', data[start:start + 4])[0] == 0x184D2A5C,
              '%s: no thread table of a record per frame' % n)
        check(all(not r[4] for r in recs), '%s: a frame not learnt: %s' % (n, recs))
    _, recs, _ = table_of(os.path.join(d, 'cpu0-000001.zst'))
    facts = recs[0][7]
    pids = {(tid, struct.unpack('<i', v[:4])[0]) for ts, k, tid, v in facts if k == 2}
    cgs = {(tid, struct.unpack('<Q', v[:8])[0]) for ts, k, tid, v in facts if k == 4}
    check({(101, 100), (201, 200), (300, 300)} <= pids and (300, 3000) in cgs,
          'cpu0\'s first frame: pids %s cgroups %s' % (sorted(pids), sorted(cgs)))
    _, recs, _ = table_of(os.path.join(d, 'cpu2-000002.zst'))
    check(all(r[5] == 0 for r in recs), 'cpu2 (no switch) changes its thread: %s' %
          [r[5:7] for r in recs])
    _, recs, _ = table_of(os.path.join(d, 'cpu2-000001.zst'))
    check(recs[0][5:7] == [2, 300], 'cpu2\'s dump: %s' % recs[0][5:7])
    allf = [f for k in (1, 2) for r in table_of(os.path.join(d, 'cpu1-%06d.zst' % k))[1]
            for f in r[7]]
    check(any(k == 4 and tid == 400 and struct.unpack('<Q', v[:8])[0] == 4000
              for ts, k, tid, v in allf) and
          any(k == 6 and tid == 201 and v.rstrip(b'\0') == b'renamed' for ts, k, tid, v in allf) and
          any(k == 3 and tid == 400 and struct.unpack('<i', v[:4])[0] == 100
              for ts, k, tid, v in allf),
          'cpu1: the fork\'s cgroup and parent, the rename: %s' % allf[:8])


def rewrite_table(path, fn):
    """@fn(bytearray of the table frame) -> the frame to put there; the
    index's data_bytes told."""
    with open(path, 'rb') as f:
        data = f.read()
    start, _, dbytes = table_of(path)
    frame = fn(bytearray(data[start:dbytes]))
    ix = bytearray(data[dbytes:])
    struct.pack_into('<Q', ix, len(ix) - 40, start + len(frame))
    with open(path, 'wb') as f:
        f.write(data[:start] + bytes(frame) + bytes(ix))


def reseal(frame):
    """The table frame's checksum made right again."""
    struct.pack_into('<Q', frame, len(frame) - 32, td.xxh64(bytes(frame[8:len(frame) - 32])))
    return frame


@test
def table_not_trusted(ctx):
    """A thread table that is damaged (its checksum), of another version,
    cut, or that says a fact outside its frame's times (a checksum that
    matches) is ignored with a note: the frames before the window are
    decoded, and the window is still the full pass's."""
    d = packed(scenario_trace(os.path.join(ctx.tmp, 'lie')))
    path = os.path.join(d, 'cpu0-000001.zst')
    with open(path, 'rb') as f:
        good = f.read()
    b, e = WINDOWS[0]

    def bad(fn, note):
        with open(path, 'wb') as f:
            f.write(good)
        rewrite_table(path, fn)
        r = ok_run(rt('report', *window_args(b, e), '--pid', '200', d), 'report')
        full = ok_run(rt('report', '--pid', '200', d), 'report')
        check(items(r.stdout) == cut(full.stdout, b, e) and items(r.stdout),
              '%s: the window differs from the full pass' % note)
        check(note in r.stderr and 'cpu0-000001.zst: its thread table is ignored' in r.stderr,
              'no note "%s": %s' % (note, r.stderr))

    def flip(fr):
        fr[60] ^= 0x40
        return fr
    bad(flip, 'its checksum does not match its records')

    def version(fr):
        struct.pack_into('<I', fr, len(fr) - 12, 4)
        return fr
    bad(version, 'not a thread table of versions 1 to 3')

    def late(fr):
        # The first fact of the first record, a second after its frame.
        struct.pack_into('<Q', fr, 8 + 48, struct.unpack_from('<Q', fr, 8 + 48)[0] + 10**9)
        return reseal(fr)
    bad(late, 'fact 0 is not one of the frame\'s')

    def short(fr):
        fr = fr[:48] + fr[80:]
        struct.pack_into('<I', fr, 4, len(fr) - 8)
        struct.pack_into('<I', fr, len(fr) - 8, len(fr) - 40)
        return reseal(fr)
    bad(short, 'its thread table is ignored')



def older_table(path, version):
    """The chunk's table as an older packer wrote it, from what this one
    wrote: version 2 named a fork's child by a COMM fact (a RENAME with
    no STALE after it, here); version 1 also had no RENAME nor STALE
    facts (a rename was a COMM) and kept only the latest COMM a thread."""
    start, recs, dbytes = table_of(path)
    body = b''
    for r in recs:
        facts, old = [], r[7]
        for i, (ts, k, tid, v) in enumerate(old):
            stale_next = i + 1 < len(old) and old[i + 1][1] == 7 and old[i + 1][2] == tid
            if k == 6 and (version == 1 or not stale_next):
                k = 1
            if version == 1 and k == 7:
                continue
            if version == 1 and k == 1:
                facts = [f for f in facts if not (f[1] == 1 and f[2] == tid)]
            facts.append((ts, k, tid, v))
        body += struct.pack('<QQQQIIiI', *r[:7], len(facts))
        body += b''.join(struct.pack('<QIi', *f[:3]) + f[3] for f in facts)
    foot = struct.pack('<QIIIIII', td.xxh64(body), len(recs), 48, 32, version, len(body),
                       0x54485452)
    rewrite_table(path, lambda fr: bytearray(struct.pack('<II', 0x184D2A5C, len(body) + 32) +
                                             body + foot))


@test
def older_tables_not_read(ctx):
    """Tables of versions 1 and 2 (before renames were facts; before a
    fork named its child at once) would make windows print other names
    than the full pass: a rename seen late (the 6.12-rt race), a dead
    thread's name on a new task with its tid.  They are not read, without
    a note: the frames before a window are decoded."""
    for version, name, make, windows in (
            (1, 'race', rename_race_trace, ((at(4, 10), None), (at(8, 2500), None))),
            (2, 'stale', stale_end_trace, ((at(400), at(600)), (at(2000), None)))):
        d = packed(make(os.path.join(ctx.tmp, '%s-v%d' % (name, version))), frame='4K')
        for n in os.listdir(d):
            older_table(os.path.join(d, n), version) if n.endswith('.zst') else None
        check(all(struct.unpack('<I', open(os.path.join(d, n), 'rb').read()[
            table_of(os.path.join(d, n))[2] - 12:][:4])[0] == version
            for n in os.listdir(d) if n.endswith('.zst')), 'not rewritten as %d' % version)
        for b, e in windows:
            same_as_full(d, b, e, seek_only=True)


def main():
    args = td.suite_args(__doc__)
    if td.missing('threads', [td.RINGTRACE, td.RINGTRACE_ASAN],
                  'run make -C tools ringtrace ringtrace-asan'):
        return 1
    return td.run_suite('threads', TESTS, lambda tmp: td.Ctx(tmp, args), args)


if __name__ == '__main__':
    sys.exit(main())
