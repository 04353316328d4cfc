#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a trace written by `ringtrace export -f lttng`, byte by byte,
against LTTng 2.13's kernel layout; count its events and their bytes.

    lttng_check.py OUTDIR [--json FILE] [--analyses FILE [--report TRACE]] [--stacks TRACE]

Reads OUTDIR/kernel/metadata (the TSDL subset the exporter writes:
integers, char arrays, sequences with a length field, strings) and every
OUTDIR/kernel/channel0_N, and checks what babeltrace2, Trace Compass and
lttng-analyses rely on, independently of them:

  - the metadata starts with "/* CTF 1.8", claims lttng-modules 2.13 in
    env, domain "kernel", the large event header, and the stream event
    context of `lttng add-context -k -t callstack-kernel -t
    callstack-user` (lttng-modules' declarations, byte for byte);
  - every packet: magic, the trace's uuid, stream_id 0,
    stream_instance_id = cpu_id = N, packet_seq_num 0, 1, 2..., content_size
    <= packet_size, packet_size a multiple of 4 KiB, zeros after the
    content, events_discarded never going down, timestamp_begin <= its
    events <= timestamp_end, each packet starting where the previous
    ended;
  - every event: a declared id, its payload inside the content, times
    rebuilt as CTF does (the low 32 bits of a compact header, one wrap at
    most) never going back, and compact headers only where less than 2^27
    cycles passed (LTTng's rule);
  - every stream starts at the same time and ends at the same time.

Prints one line per problem and exits 1 if any; with --json, writes the
counts: per event name the events and their bytes (header + payload), the
compact and extended headers, per CPU the events discarded, packets and
bytes (content and file).

With --analyses FILE, also runs LTTng's analyses (Debian's
python3-lttnganalyses, their machine-readable -mi commands) on OUTDIR as a
user runs them (in their default "intersection" mode: only the time every
CPU's stream covers) and writes what they found, for tests to assert on:

  syscalls   {tid: {system call: count}}        lttng-syscallstats-mi
  cputop     {tid: {"name", "ratio"}}           lttng-cputop-mi
  irqs       {irq: {"name", "count"}}           lttng-irqstats-mi (hard)
  wakeups    {wakee tid: [[waker tid or null, cpu, prio], ...]}
                                                lttng-schedtop-mi, every
                                                latency (its --limit)
  syscalls_no_intersection                      with --no-intersection-too:
                                                syscallstats --no-intersection
  cputop_ms  {tid: milliseconds on a CPU}       lttng-cputop-mi
  schedtop_max_us   the largest wakeup latency  lttng-schedtop-mi
  schedlog   {tid: rows}                        lttng-schedlog-mi (the same
                                                latencies in time order)
An analysis that fails makes a problem line with its stderr.

With --report TRACE (and --analyses), compares what the analyses found
with `ringtrace report --stat TRACE` and `ringtrace report TRACE` (the
trace OUTDIR was exported from), one "ok - ..." or "not ok - ..." line
each, as a user reading both would:

  - system calls: for each name of --stat's table, lttng-syscallstats'
    count over all threads is --stat's, less the calls that entered on a
    CPU before its first sched_switch (the analyses give a system call to
    the thread a sched_switch put on its CPU, and to no other);
  - hard IRQs: lttng-irqstats' count per IRQ is report's entries followed
    by their exit on the same CPU, and in all --stat's irq_handler_exit
    count give or take one per CPU (a handler cut by the trace's ends);
  - CPU time: per thread of --stat's table, lttng-cputop's time is
    --stat's on_cpu_ms (to 2 us), but for a thread already running when
    its CPU's first sched_switch came, which the analyses also charge
    from the trace's start: by at most that CPU's time before it;
  - wakeups: lttng-schedtop's latencies are as many as --stat's samples,
    and the largest is --stat's p100 (to 0.01 us).  With sched_waking in
    the trace the analyses measure from it (a thread's first wakeup
    event), --stat from sched_wakeup: two measures, not compared here
    (lttng_analyses.sh compares the analyses' per thread with the same
    measure taken from report's events).

With --stacks TRACE, checks the stacks the export carries against the
trace it was exported from (unpacked: babeltrace2 reads it), one "ok -
..." or "not ok - ..." line each:

  - babeltrace2 reads, from the export, every event's callstack_kernel
    and callstack_user contexts; from TRACE, each event's stacks (the
    ips, leaf first): the stack_defs its stack_ref names, or an older
    trace's kernel_stack and user_stack records after it (a def's offset
    is learnt from the ref of its own reservation, the one right after
    it, which names it, so no byte of the stream is parsed here): per
    CPU and time, the export's stacks are the records', in their order, a
    user stack cut at its depth ending with LTTng's all-ones delimiter;
    events with no record have both contexts empty;
  - `ringtrace report TRACE` prints under each event as many frames as
    the export's stacks hold, and each frame report prints as a bare
    address (no symbol names it) is the export's address there;
  - cpu_sample: as many in the export as babeltrace2 reads in TRACE;
and a "# stacks: NAME events=N kernel=K user=U both=B" line per event
name: how many have a kernel stack, a user stack, both.

Python standard library only.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import time

PACKET = struct.Struct('<I16sIQQQQQQQI')
assert PACKET.size == 84
MAGIC = 0xC1FC1FC1


class Bad(Exception):
    pass


# lttng-modules 2.13's metadata for `lttng add-context -k -t
# callstack-kernel -t callstack-user` (lttng-context-callstack.c: an
# unsigned int length, a sequence of unsigned long in base 16; every
# field name gets a leading "_" in TSDL): these lines, as a real
# lttng-modules 2.13.18 kernel trace with both contexts declares them
# (recorded in a 6.12 guest, read with babeltrace2 -o ctf-metadata).
STREAM_CONTEXT = (
    '\tevent.context := struct {\n'
    '\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; }'
    ' __callstack_kernel_length;\n'
    '\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 16; }'
    ' _callstack_kernel[ __callstack_kernel_length ];\n'
    '\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; }'
    ' __callstack_user_length;\n'
    '\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 16; }'
    ' _callstack_user[ __callstack_user_length ];\n'
    '\t};\n')
CONTEXT_FIELDS = [('int', '_callstack_kernel_length', 4, 0, None),
                  ('int', 'callstack_kernel', 8, 0, '__callstack_kernel_length'),
                  ('int', '_callstack_user_length', 4, 0, None),
                  ('int', 'callstack_user', 8, 0, '__callstack_user_length')]


def parse_metadata(text):
    if not text.startswith('/* CTF 1.8'):
        raise Bad('metadata does not start with "/* CTF 1.8"')
    env = dict(re.findall(r'^\t(\w+) = "?([^";]*)"?;$',
                          re.search(r'env \{(.*?)\n\};', text, re.S).group(1), re.M))
    uuid = re.search(r'trace \{.*?uuid = "([0-9a-f-]+)";', text, re.S).group(1)
    if 'event.header := struct event_header_large;' not in text:
        raise Bad('the stream does not use the large event header')
    if STREAM_CONTEXT not in text:
        raise Bad('the stream event context is not lttng-modules\' callstack contexts')
    events = {}
    for m in re.finditer(r'event \{\n\tname = "((?:[^"\\]|\\.)*)";\n\tid = (\d+);\n'
                         r'\tstream_id = 0;\n\tfields := struct \{\n(.*?)\t\};\n\};', text, re.S):
        fields = []
        for line in m.group(3).splitlines():
            line = line.strip()
            f = re.match(r'^integer \{ size = (\d+); align = 8; signed = ([01]); '
                         r'encoding = (none|UTF8); base = (\d+); \} _(\w+)(?:\[ ?(\w+) ?\])?;$', line)
            if f:
                size = int(f.group(1)) // 8
                fields.append(('int', f.group(5), size, int(f.group(2)), f.group(6)))
                continue
            f = re.match(r'^string _(\w+);$', line)
            if not f:
                raise Bad('event %s: a field this checker does not know: %r' % (m.group(1), line))
            fields.append(('string', f.group(1), 0, 0, None))
        events[int(m.group(2))] = (m.group(1), fields)
    return env, uuid, events


def payload_size(data, pos, end, fields):
    """Bytes of one payload at pos; raises Bad when it runs past end."""
    values = {}
    start = pos
    for kind, name, size, signed, count in fields:
        if kind == 'string':
            nul = data.find(b'\0', pos, end)
            if nul < 0:
                raise Bad('string %s runs past the content' % name)
            pos = nul + 1
            continue
        if count is None:
            n = 1
        elif count.isdigit():
            n = int(count)
        else:
            n = values.get(count[1:])  # the TSDL name without its leading _
            if n is None:
                raise Bad('sequence %s: no length field %s before it' % (name, count))
        if pos + n * size > end:
            raise Bad('field %s runs past the content' % name)
        if n == 1 and count is None:
            values[name] = int.from_bytes(data[pos:pos + size], 'little', signed=bool(signed))
        pos += n * size
    return pos - start


def check_stream(path, cpu, uuid, events, counts, problems):
    data = open(path, 'rb').read()
    pos, seq, discarded, prev_end, clock = 0, 0, 0, None, None
    first_begin = last_end = None
    info = {'packets': 0, 'content_bytes': 0, 'file_bytes': len(data), 'discarded': 0,
            'events': 0}

    def bad(msg):
        problems.append('%s: offset %d: %s' % (os.path.basename(path), pos, msg))

    while pos < len(data):
        if len(data) - pos < PACKET.size:
            bad('a packet header cut by the end of the file')
            break
        (magic, puuid, sid, inst, begin, end, content, size, pseq, disc,
         cpu_id) = PACKET.unpack_from(data, pos)
        content //= 8
        size //= 8
        if magic != MAGIC or puuid != uuid or sid != 0:
            bad('not a packet of this trace (magic %#x, stream_id %d)' % (magic, sid))
            break
        if inst != cpu or cpu_id != cpu:
            bad('stream_instance_id %d / cpu_id %d in the stream of CPU %d' % (inst, cpu_id, cpu))
        if pseq != seq:
            bad('packet_seq_num %d, want %d' % (pseq, seq))
        if disc < discarded:
            bad('events_discarded goes down: %d after %d' % (disc, discarded))
        if not PACKET.size <= content <= size or size % 4096 or pos + size > len(data):
            bad('content_size %d, packet_size %d bytes' % (content, size))
            break
        if any(data[pos + content:pos + size]):
            bad('padding after the content is not zero')
        if end < begin or (prev_end is not None and begin != prev_end):
            bad('packet [%d, %d] after a packet ending at %s' % (begin, end, prev_end))
        if first_begin is None:
            first_begin = begin
        clock = begin
        p = pos + PACKET.size
        while p < pos + content:
            if pos + content - p < 6:
                bad('an event header cut by content_size')
                break
            eid, = struct.unpack_from('<H', data, p)
            if eid == 65535:
                if pos + content - p < 14:
                    bad('an extended header cut by content_size')
                    break
                eid, ts = struct.unpack_from('<IQ', data, p + 2)
                hlen, kind = 14, 'extended'
                if ts < clock:
                    bad('event time %d goes back from %d' % (ts, clock))
            else:
                low, = struct.unpack_from('<I', data, p + 2)
                ts = (clock & ~0xffffffff) | low
                if ts < clock:
                    ts += 1 << 32
                hlen, kind = 6, 'compact'
                if ts - clock >= 1 << 27:
                    bad('compact header %d cycles after the previous event' % (ts - clock))
            if eid not in events:
                bad('event id %d not in the metadata' % eid)
                break
            name, fields = events[eid]
            try:
                plen = payload_size(data, p + hlen, pos + content, CONTEXT_FIELDS + fields)
            except Bad as e:
                bad('event %s: %s' % (name, e))
                break
            if ts > end:
                bad('event %s at %d after the packet end %d' % (name, ts, end))
            c = counts.setdefault(name, [0, 0])
            c[0] += 1
            c[1] += hlen + plen
            counts.setdefault('.headers', {}).setdefault(kind, 0)
            counts['.headers'][kind] += 1
            info['events'] += 1
            clock = ts
            p += hlen + plen
        info['packets'] += 1
        info['content_bytes'] += content
        discarded = disc
        prev_end = last_end = end
        seq += 1
        pos += size
    info['discarded'] = discarded
    info['begin'], info['end'] = first_begin, last_end
    return info


def check(outdir):
    problems, counts, cpus = [], {}, {}
    kdir = os.path.join(outdir, 'kernel')
    try:
        env, uuid, events = parse_metadata(open(os.path.join(kdir, 'metadata')).read())
    except (Bad, AttributeError, OSError) as e:
        return ['metadata: %s' % e], {}
    want = {'domain': 'kernel', 'tracer_name': 'lttng-modules', 'tracer_major': '2',
            'tracer_minor': '13'}
    for k, v in want.items():
        if env.get(k) != v:
            problems.append('metadata: env %s = %r, want %r' % (k, env.get(k), v))
    raw = bytes.fromhex(uuid.replace('-', ''))
    names = sorted(os.listdir(kdir))
    for n in names:
        m = re.match(r'^channel0_(\d+)$', n)
        if n == 'metadata':
            continue
        if not m:
            problems.append('%s: a file readers would take for a stream' % n)
            continue
        cpus[int(m.group(1))] = check_stream(os.path.join(kdir, n), int(m.group(1)), raw,
                                             events, counts, problems)
    if not cpus:
        problems.append('no channel0_N stream')
    spans = {(c['begin'], c['end']) for c in cpus.values()}
    if len(spans) > 1:
        problems.append('the streams do not span the same time: %s' % sorted(spans))
    return problems, {'events': {k: v[0] for k, v in counts.items() if k[0] != '.'},
                      'bytes': {k: v[1] for k, v in counts.items() if k[0] != '.'},
                      'headers': counts.get('.headers', {}),
                      'cpus': {str(k): v for k, v in sorted(cpus.items())},
                      'env': env, 'classes': {v[0]: [f[1] for f in v[1]]
                                              for v in events.values()}}


def mi(tool, outdir, problems, *opts):
    """The results of lttng-TOOL-mi on outdir, or [] (a problem said)."""
    env = dict(os.environ, LC_ALL='C.UTF-8')
    start = time.monotonic()
    r = subprocess.run(['lttng-%s-mi' % tool, '--skip-validation'] + list(opts) + [outdir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    print('# lttng-%s-mi %s: %.1f s' % (tool, ' '.join(opts), time.monotonic() - start),
          file=sys.stderr)
    try:
        if r.returncode:
            raise ValueError('exit %d' % r.returncode)
        return json.loads(r.stdout)['results']
    except ValueError as e:
        problems.append('lttng-%s-mi: %s: %s %s' % (tool, e, r.stdout[-300:], r.stderr[-800:]))
        return []


def syscalls(results):
    out = {}
    for res in results:
        title = res['class'].get('title', '') if isinstance(res['class'], dict) else ''
        m = re.search(r'TID: (\d+)\)\]$', title)
        if m:
            out[m.group(1)] = {row[0]['name']: row[1]['value'] for row in res['data']}
    return out


def analyses(outdir, problems, no_intersection_too=False):
    found = {'syscalls': syscalls(mi('syscallstats', outdir, problems)),
             'cputop': {}, 'irqs': {}, 'wakeups': {}}
    if no_intersection_too:
        found['syscalls_no_intersection'] = syscalls(
            mi('syscallstats', outdir, problems, '--no-intersection'))
    found['cputop_ms'] = {}
    for res in mi('cputop', outdir, problems, '--limit', '1000000'):
        if res['class'] == 'per-process':
            tr = res['time-range']
            ms = (tr['end']['value'] - tr['begin']['value']) / 1e6
            for row in res['data']:
                found['cputop'][str(row[0]['tid'])] = {'name': row[0]['name'],
                                                      'migrations': row[1]['value'],
                                                      'ratio': row[3]['value']}
                found['cputop_ms'][str(row[0]['tid'])] = row[3]['value'] * ms
    found['schedtop_max_us'] = None
    for res in mi('schedtop', outdir, problems, '--limit', '1000000000'):
        for row in res['data'] if res['class'] == 'top' else []:
            us = row[2]['value'] / 1e3
            if found['schedtop_max_us'] is None or us > found['schedtop_max_us']:
                found['schedtop_max_us'] = us
            waker = row[6]['tid'] if row[6] else None
            found['wakeups'].setdefault(str(row[5]['tid']), []).append(
                [waker, row[4]['id'], row[3]['value']])
    # lttng-schedlog: the same latencies, one row each in time order.
    found['schedlog'] = {}
    for res in mi('schedlog', outdir, problems):
        for row in res['data'] if res['class'] == 'log' else []:
            tid = str(row[5]['tid'])
            found['schedlog'][tid] = found['schedlog'].get(tid, 0) + 1
    for res in mi('irqstats', outdir, problems):
        if res['class'] == 'hard-stats':
            for row in res['data']:
                found['irqs'][str(row[0]['nr'])] = {'name': row[0]['name'],
                                                   'count': row[1]['value']}
    return found


def sections(text):
    """report --stat's sections: {title: [rows split in words]}."""
    out, title = {}, None
    for line in text.splitlines():
        if not line.strip():
            title = None
        elif not line.startswith(' '):
            title = line
            out[title] = []
        elif title is not None:
            out[title].append(line.split())
    return out


def section(stat, start):
    """The rows of the table whose title starts with start, without the
    column names."""
    for title, rows in stat.items():
        if title.startswith(start):
            return rows[1:]
    return []


def lttng_names():
    """<asm/unistd.h> name -> LTTng's, from the exporter's table."""
    here = os.path.dirname(os.path.abspath(__file__))
    table = open(os.path.join(here, '..', 'cli', 'export_lttng_syscalls.h')).read()
    return dict(re.findall(r'^\t\{ "(\w+)", "(\w+)",', table, re.M))


def against_report(found, trace, ringtrace):
    """"ok - ..." / "not ok - ..." lines: found against report of trace."""
    lines = []

    def ok(cond, what):
        lines.append('%s - %s' % ('ok' if cond else 'not ok', what))

    def run(*args):
        r = subprocess.run([ringtrace, 'report'] + list(args) + [trace],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode:
            raise Bad('ringtrace report %s: exit %d: %s' % (' '.join(args), r.returncode,
                                                            r.stderr[-500:]))
        return r.stdout

    stat = sections(run('--stat'))
    clock = re.compile(r'^\[(\d+)\.(\d+)\] cpu(\d+) \S+ (\w+): (.*)$')
    first_switch, early, irq_cur, irqs, cpus = {}, {}, {}, {}, set()
    waking = False
    begin = None
    for line in run().splitlines():
        m = clock.match(line)
        if not m:
            continue
        ts, cpu, name = int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3)), m.group(4)
        begin = ts if begin is None else begin
        cpus.add(cpu)
        if name == 'sched_switch':
            first_switch.setdefault(cpu, ts)
        elif name == 'sched_waking':
            waking = True
        elif name == 'syscall_entry' and cpu not in first_switch:
            sc = re.match(r'id=(\w+)\(', m.group(5))
            if sc:
                early[sc.group(1)] = early.get(sc.group(1), 0) + 1
        elif name == 'irq_handler_entry':
            irq_cur[cpu] = re.match(r'irq=(-?\d+)', m.group(5)).group(1)
        elif name == 'irq_handler_exit':
            irq = re.match(r'irq=(-?\d+)', m.group(5)).group(1)
            if irq_cur.get(cpu) == irq:
                irqs[irq] = irqs.get(irq, 0) + 1
            irq_cur[cpu] = None

    # System calls per name, over all threads.
    names, total = lttng_names(), {}
    for calls in found['syscalls'].values():
        for name, n in calls.items():
            total[name] = total.get(name, 0) + n
    rows = section(stat, 'system calls by count')
    diff = {}
    for row in rows:
        name, n = row[0], int(row[1])
        want = n - early.get(name, 0)
        got = total.get(names.get(name, name), 0)
        if got != want:
            diff[name] = (got, n, early.get(name, 0))
    ok(rows and not diff, 'lttng-syscallstats counts the system calls of report --stat by name '
       '(%d names, %d calls; %d before their CPU\'s first sched_switch)%s' % (
           len(rows), sum(int(r[1]) for r in rows), sum(early.values()),
           ': differ (lttng, --stat, early) %s' % diff if diff else ''))

    # Hard IRQs.
    got = {k: v['count'] for k, v in found['irqs'].items()}
    ok(got == irqs and irqs, 'lttng-irqstats: each hard IRQ as often as report has it handled '
       '(%s; lttng %s)' % (irqs, got))
    exits = sum(int(r[1]) for r in section(stat, 'events by name') if r[0] == 'irq_handler_exit')
    ok(abs(sum(got.values()) - exits) <= len(cpus),
       'lttng-irqstats: %d hard IRQs in all, report --stat %d irq_handler_exit'
       % (sum(got.values()), exits))

    # CPU time per thread.
    diff, n = {}, 0
    slack = max([first_switch.get(c, begin) - begin for c in cpus] + [0]) / 1e6
    for row in section(stat, 'threads by on-CPU time'):
        tid, ms = row[-4], float(row[-2])
        got = found['cputop_ms'].get(tid, 0.0)
        n += 1
        if not (abs(got - ms) <= 0.002 or ms - 0.002 <= got <= ms + slack + 0.002):
            diff[tid] = (round(got, 3), ms)
    ok(n and not diff, 'lttng-cputop: the on-CPU time of report --stat\'s %d threads '
       '(to 2 us, or %.3f ms before a CPU\'s first switch)%s' % (
           n, slack, ': differ (lttng, --stat) %s' % diff if diff else ''))

    # Wakeup latencies.
    words = [w for t, rows in stat.items() if t.startswith('wakeup to run latency')
             for r in rows for w in r]
    samples = int(words[words.index('samples') + 1]) if 'samples' in words else 0
    p100 = float(words[words.index('p100') + 1]) if 'p100' in words else None
    got = sum(len(v) for v in found['wakeups'].values())
    top = found['schedtop_max_us']
    if waking:
        # Two measures then: the analyses start at a thread's first
        # wakeup event (sched_waking), --stat at sched_wakeup; a thread
        # woken twice before it runs, or a waking without its wakeup,
        # makes them differ by a few (seen on 6.12-rt: 1445 and 1448).
        # lttng_analyses.sh compares the analyses with their own measure
        # computed from report's events, thread by thread.
        lines.append('# lttng-schedtop: %d wakeup latencies (largest %s us); --stat: %d '
                     'from sched_wakeup (p100 %s us): not compared' % (got, top, samples, p100))
        return lines
    ok(got == samples and samples, 'lttng-schedtop: %d wakeup latencies, report --stat %d'
       % (got, samples))
    ok(top is not None and p100 is not None and abs(top - p100) <= 0.01,
       'lttng-schedtop: the largest wakeup latency %s us, report --stat\'s p100 %s us'
       % (top, p100))
    return lines


BT2_LINE = re.compile(r'^\[(\d+)\] \S+ (\w+): \{ cpu_id = (\d+) \}, (.*)$')
ARRAY = r' = \[ ((?:\[\d+\] = 0x[0-9A-Fa-f]+(?:, )?)*) ?\]'


def ips_of(text):
    return [int(v, 16) for v in re.findall(r'\[\d+\] = (0x[0-9A-Fa-f]+)', text)]


def babeltrace2(path):
    r = subprocess.run(['babeltrace2', '--clock-cycles', '--no-delta', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode:
        raise Bad('babeltrace2 %s: exit %d: %s' % (path, r.returncode, r.stderr[-500:]))
    return r.stdout.splitlines()


def export_stacks(outdir):
    """[(cycles, cpu, name, kernel ips, user ips)] of every event, as
    babeltrace2 reads the export's stream event context."""
    out = []
    for line in babeltrace2(outdir):
        m = BT2_LINE.match(line)
        c = m and re.match(r'\{ _callstack_kernel_length = (\d+), callstack_kernel' + ARRAY +
                           r', _callstack_user_length = (\d+), callstack_user' + ARRAY +
                           r' \}', m.group(4))
        if not c:
            raise Bad('an event without the callstack contexts: %r' % line[:300])
        k, u = ips_of(c.group(2)), ips_of(c.group(4))
        if len(k) != int(c.group(1)) or len(u) != int(c.group(3)):
            raise Bad('a length that is not its sequence\'s: %r' % line[:300])
        out.append((int(m.group(1)), int(m.group(3)), m.group(2), k, u))
    return out


def int_field(fields, name):
    m = re.search(r'(?:^|, )%s = (\d+)' % name, fields)
    return int(m.group(1)) if m else 0


def source_stacks(trace):
    """[(cycles, cpu, name, kernel ips, user ips)] of every event of the
    ringtrace trace, its stacks (babeltrace2) folded into the event before
    them on their CPU at their time: a stack_ref's stack_defs (module/stack.c),
    or an older trace's kernel_stack and user_stack records.

    A stack_ref names each def by its byte offset in the packet, which
    babeltrace2 does not print; but a def is only ever written in the
    reservation of an event whose ref names it, right before that ref: so
    the ref after a CPU's defs says their offsets, and a later ref naming
    an offset finds there the CPU's last def of that kind (the one of its
    own packet: a ref never names a def of another packet)."""
    out, last, pending, defs = [], {}, {}, {}
    for line in babeltrace2(trace):
        m = re.match(r'^\[(\d+)\] \S+ (\w+): \{ cpu_id = (\d+)[^}]*\}, \{ ?(.*?) ?\}$', line)
        if not m:
            continue
        ts, name, cpu, fields = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
        if name == 'stack_def':
            pending.setdefault(cpu, []).append(
                (int_field(fields, 'kind'), int_field(fields, 'flags'), ips_of(fields)))
            continue
        if name in ('kernel_stack', 'user_stack', 'user_stack_copy', 'stack_ref'):
            ev = last.get(cpu)
            mine = pending.pop(cpu, [])
            if name == 'stack_ref':
                at = (int_field(fields, 'kernel'), int_field(fields, 'user'))
                for kind, flags, ips in mine:
                    if kind in (0, 1) and at[kind]:
                        defs[(cpu, kind, at[kind])] = (flags, ips)
            if ev is None or ev[0] != ts:
                continue        # its event lost with a packet: report drops it too
            if name == 'kernel_stack':
                ev[3][:] = ips_of(fields)
            elif name == 'user_stack':
                ev[4][:] = ips_of(fields)
                if int_field(fields, 'flags') & 1:
                    ev[4].append(0xffffffffffffffff)
            elif name == 'stack_ref':
                k = defs.get((cpu, 0, at[0])) if at[0] else None
                u = defs.get((cpu, 1, at[1])) if at[1] else None
                if k:
                    ev[3][:] = k[1]
                if u:
                    ev[4][:] = u[1]
                    if u[0] & 1:
                        ev[4].append(0xffffffffffffffff)
            continue
        ev = (ts, cpu, name, [], [])
        out.append(ev)
        last[cpu] = ev
    return out


def report_frames(trace, ringtrace):
    """{(ns, cpu): [[frame, ...] per event]} of ringtrace report TRACE."""
    r = subprocess.run([ringtrace, 'report', trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode:
        raise Bad('ringtrace report: exit %d: %s' % (r.returncode, r.stderr[-500:]))
    out, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r'^\[(\d+)\.(\d+)\] cpu(\d+) ', line)
        if m:
            cur = []
            key = (int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3)))
            out.setdefault(key, []).append(cur)
        elif line.startswith('    ') and cur is not None and not line.startswith('    ('):
            cur.append(line.strip())
    return out


def against_stacks(outdir, trace, ringtrace):
    """"ok - ..." / "not ok - ..." lines: the export's stacks against the
    trace's records and report's frames."""
    lines = []

    def ok(cond, what):
        lines.append('%s - %s' % ('ok' if cond else 'not ok', what))

    got = export_stacks(outdir)
    want = source_stacks(trace)
    with_stacks = lambda evs: sorted((e[0], e[1], e[3], e[4]) for e in evs if e[3] or e[4])
    g, w = with_stacks(got), with_stacks(want)
    diff = [x for x in g if x not in w][:2] + [x for x in w if x not in g][:2]
    ok(w and g == w, 'the export\'s callstack contexts are the trace\'s stacks (stack_ref\'s '
       'stack_defs, or kernel_stack and user_stack records), per event (%d events with stacks: %d kernel, %d user frames; '
       'export %d)%s' % (len(w), sum(len(x[2]) for x in w), sum(len(x[3]) for x in w), len(g),
                         ': differ %s' % diff if diff else ''))
    for name in sorted({e[2] for e in got}):
        evs = [e for e in got if e[2] == name]
        lines.append('# stacks: %s events=%d kernel=%d user=%d both=%d' % (
            name, len(evs), sum(1 for e in evs if e[3]), sum(1 for e in evs if e[4]),
            sum(1 for e in evs if e[3] and e[4])))
    n = sum(1 for e in want if e[2] == 'cpu_sample')
    m = sum(1 for e in got if e[2] == 'cpu_sample')
    ok(n == m, 'cpu_sample: %d events in the export, %d in the trace' % (m, n))
    freq = int(re.search(r'^\tfreq = (\d+);$', open(os.path.join(outdir, 'kernel', 'metadata'))
                         .read(), re.M).group(1))
    frames = report_frames(trace, ringtrace)
    bad, checked, addresses = [], 0, 0
    for ts, cpu, name, k, u in got:
        if not (k or u):
            continue
        ips = k + [i for i in u if i != 0xffffffffffffffff]
        evs = frames.get((ts * 10**9 // freq, cpu), [])
        # The event report prints with this many frames (several events
        # may share a time and a CPU).
        match = [f for f in evs if len(f) == len(ips)]
        if not match:
            bad.append((ts, cpu, name, len(ips), [len(f) for f in evs]))
            continue
        checked += 1
        for f, ip in zip(match[0], ips):
            a = re.match(r'^0x([0-9a-f]+)(?: \[user\])?$', f)
            if a:
                addresses += 1
                if int(a.group(1), 16) != ip:
                    bad.append((ts, cpu, name, f, hex(ip)))
    ok(checked and not bad, 'report prints as many frames under each of %d events, and the '
       'same address where it prints one (%d)%s' % (checked, addresses,
                                                   ': differ %s' % bad[:3] if bad else ''))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('outdir')
    ap.add_argument('--json', help='write the counts there')
    ap.add_argument('--analyses', help='run lttng-analyses, write what they found there')
    ap.add_argument('--no-intersection-too', action='store_true',
                    help='also run syscallstats with --no-intersection')
    ap.add_argument('--report', metavar='TRACE',
                    help='compare the analyses with ringtrace report of TRACE')
    ap.add_argument('--stacks', metavar='TRACE',
                    help='compare the stacks with those of TRACE and its report')
    ap.add_argument('--ringtrace', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', 'ringtrace'),
        help='the ringtrace CLI (default: tools/ringtrace)')
    args = ap.parse_args()
    if args.report and not args.analyses:
        ap.error('--report needs --analyses')
    problems, info = check(args.outdir)
    if args.analyses:
        found = analyses(args.outdir, problems, args.no_intersection_too)
        with open(args.analyses, 'w') as f:
            json.dump(found, f, indent=1, sort_keys=True)
        if args.report:
            try:
                lines = against_report(found, args.report, args.ringtrace)
            except (Bad, OSError) as e:
                lines = ['not ok - compared with report: %s' % e]
            for line in lines:
                print(line)
            problems += [l for l in lines if l.startswith('not ok')]
    if args.stacks:
        try:
            lines = against_stacks(args.outdir, args.stacks, args.ringtrace)
        except (Bad, OSError) as e:
            lines = ['not ok - the stacks: %s' % e]
        for line in lines:
            print(line)
        problems += [l for l in lines if l.startswith('not ok')]
    for p in problems[:50]:
        print('lttng_check: %s' % p)
    if len(problems) > 50:
        print('lttng_check: ... %d problems in all' % len(problems))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(info, f, indent=1, sort_keys=True)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
