#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write a synthetic ringtrace trace directory, plus what a reader must see.

The output is what ringtraced would write: `metadata` (the TSDL of
module/ctf.c) and one stream per CPU made of CTF packets laid out as
struct ringtrace_packet_header (include/uapi/linux/ringtrace.h) followed by
events with compact (u32: 5-bit id, 27-bit time) or extended (12 bytes)
headers, encoded with the kernel's rule: compact when the id is below 31 and
less than 2^27 ns passed since the previous event of the buffer.

Beside the trace (in --expect-dir, never inside the trace directory) it
writes:
  expected.txt    the event lines `ringtrace report` prints, merged by time
  expected.json   per-CPU packet/event/discard counts and what was cut off

Python standard library only; compression goes through the zstd program.
"""

import argparse
import json
import os
import random
import struct
import subprocess
import sys

MAGIC = 0xC1FC1FC1
HEADER = struct.Struct('<I16sIQQQQQQQII')   # struct ringtrace_packet_header
assert HEADER.size == 88
TS_BITS = 27
EXTENDED = 31

INT_TYPES = {
    'uint8_t': ('<B', False), 'uint16_t': ('<H', False),
    'uint32_t': ('<I', False), 'uint64_t': ('<Q', False),
    'int8_t': ('<b', True), 'int16_t': ('<h', True),
    'int32_t': ('<i', True), 'int64_t': ('<q', True),
    'utf8_t': ('<B', False),
}

# (id, name, [(type, name, None | fixed length | length field name)])
EVENTS = [
    (0, 'ringtrace_marker', [('uint16_t', 'len', None),
                             ('utf8_t', 'data', 'len')]),
    (1, 'test_scalars', [('uint8_t', 'u8', None), ('uint16_t', 'u16', None),
                         ('uint32_t', 'u32', None), ('uint64_t', 'u64', None),
                         ('int8_t', 's8', None), ('int16_t', 's16', None),
                         ('int32_t', 's32', None), ('int64_t', 's64', None)]),
    (2, 'test_arrays', [('uint32_t', 'fixed', 3), ('uint8_t', 'n', None),
                        ('int16_t', 'seq', 'n'), ('utf8_t', 'comm', 16)]),
    (3, 'test_empty', []),
    (40, 'test_bigid', [('uint64_t', 'seq', None)]),
]

# The records of user-space stacks (plan-30 P1-P3, P5), as the module
# declares them: hand-made traces of the symbol tests carry them
# (test_decoder.py), with make_* for their payloads.
HEX64 = 'integer { size = 64; align = 8; signed = false; base = 16; }'
USER_STACK = [('uint16_t', 'depth', None), ('uint16_t', 'flags', None),
              (HEX64, 'ips', 'depth')]
USER_MMAP = [('int32_t', 'pid', None), ('uint32_t', 'flags', None),
             ('uint64_t', 'start', None), ('uint64_t', 'end', None),
             ('uint64_t', 'pgoff', None), ('uint64_t', 'dev', None),
             ('uint64_t', 'ino', None), ('uint8_t', 'build_id_len', None),
             ('uint8_t', 'build_id', 'build_id_len'),
             ('uint16_t', 'path_len', None), ('utf8_t', 'path', 'path_len')]
CPU_SAMPLE = [('int32_t', 'tid', None), ('int32_t', 'pid', None),
              ('uint8_t', 'mode', None)]
# Interned stacks (module/stack.c): a stack_def once per packet, a
# stack_ref per event naming defs by their offset in the packet.
STACK_DEF = [('uint8_t', 'kind', None), ('uint8_t', 'flags', None),
             ('uint16_t', 'depth', None), (HEX64, 'ips', 'depth')]
STACK_REF = [('uint32_t', 'kernel', None), ('uint32_t', 'user', None)]


def make_user_stack(ips, flags=0):
    """A user_stack trailer: depth, flags, the ips leaf first."""
    return struct.pack('<HH%dQ' % len(ips), len(ips), flags, *ips)


def make_stack_def(kind, flags, ips):
    """A stack_def: kind 0 kernel, 1 user; the ips leaf first."""
    return struct.pack('<BBH%dQ' % len(ips), kind, flags, len(ips), *ips)


def make_user_mmap(pid, start, end, pgoff, build_id, path, flags=0, dev=0,
                   ino=0):
    """A user_mmap event of @pid: [start, end) maps @path from @pgoff."""
    path = path.encode() if isinstance(path, str) else path
    return (struct.pack('<iIQQQQQB', pid, flags, start, end, pgoff, dev, ino,
                        len(build_id)) + build_id +
            struct.pack('<H', len(path)) + path)


def make_cpu_sample(tid, pid, mode=0):
    """A cpu_sample event: mode 0 user, 1 kernel, 2 idle."""
    return struct.pack('<iiB', tid, pid, mode)


# user_stack_copy as module/stack.c declares it (readers find records by
# name; the ids a test gives them are any free compact ones).
USER_STACK_COPY = [('uint64_t', 'ip', None), ('uint64_t', 'sp', None),
                   ('uint64_t', 'bp', None), ('uint16_t', 'size', None),
                   ('uint16_t', 'flags', None), ('uint8_t', 'bytes', 'size')]
USTACK_TRUNCATED, USTACK_FAULT, USTACK_COMPAT = 1, 2, 4


def user_mmap(pid, start, end, pgoff, build_id, path, flags=0, dev=0, ino=0):
    """A user_mmap payload (build_id: bytes, path: str)."""
    p = path.encode()
    return (struct.pack('<iIQQQQQB', pid, flags, start, end, pgoff, dev, ino,
                        len(build_id)) + build_id +
            struct.pack('<H', len(p)) + p)


def user_stack_copy(ip, sp, bp, data, flags=0, size=None):
    """A user_stack_copy payload; size: what the record claims (default
    len(data): a different one makes a damaged record)."""
    return struct.pack('<QQQHH', ip, sp, bp,
                       len(data) if size is None else size, flags) + data


def tsdl_fields(fields):
    out = []
    for typ, name, arg in fields:
        if arg is None:
            out.append('%s %s;' % (typ, name))
        else:
            out.append('%s %s[%s];' % (typ, name, arg))
    return ' '.join(out)


# The TSDL of module/ctf.c, byte for byte (only hostname, release, uuid and
# clock offset vary).
TSDL_TYPES = (
    'typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n'
    'typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n'
    'typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n'
    'typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n'
    'typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n'
    'typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n'
    'typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n'
    'typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n'
    'typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := utf8_t;\n'
    'typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n'
    'typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;\n'
    'typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n'
    'typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n'
    'typealias integer { size = 64; align = 1; signed = false; map = clock.monotonic.value; } := uint64_bits_clock_monotonic_t;\n\n')

TSDL_STREAM = (
    'stream {\n'
    '\tid = 0;\n'
    '\tpacket.context := struct {\n'
    '\t\tuint64_clock_monotonic_t timestamp_begin;\n'
    '\t\tuint64_clock_monotonic_t timestamp_end;\n'
    '\t\tuint64_t content_size;\n'
    '\t\tuint64_t packet_size;\n'
    '\t\tuint64_t packet_seq_num;\n'
    '\t\tuint64_t events_discarded;\n'
    '\t\tuint32_t cpu_id;\n'
    '\t\tuint32_t events;\n'
    '\t};\n'
    '\tevent.header := struct {\n'
    '\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n'
    '\t\tvariant <id> {\n'
    '\t\t\tstruct { uint27_clock_monotonic_t timestamp; } compact;\n'
    '\t\t\tstruct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended;\n'
    '\t\t} v;\n'
    '\t};\n'
    '};\n\n')


def tsdl_stream(untimed=None):
    """The stream block; with UNTIMED (an id), the event header that
    module/ctf.c writes when stack_ref has that id: its 27 bits are the id
    again, no time."""
    if untimed is None:
        return TSDL_STREAM
    ranges = ['compact = 0 ... %d' % (untimed - 1)] if untimed else []
    ranges.append('untimed = %d' % untimed)
    if untimed < EXTENDED - 1:
        ranges.append('compact = %d ... 30' % (untimed + 1))
    s = TSDL_STREAM.replace('compact = 0 ... 30', ', '.join(ranges))
    return s.replace('} compact;\n', '} compact;\n\t\t\tstruct { uint27_t id; } untimed;\n')


def metadata(uuid, offset_s, offset_ns, events, untimed=None):
    u = uuid.hex()
    us = '%s-%s-%s-%s-%s' % (u[0:8], u[8:12], u[12:16], u[16:20], u[20:32])
    out = '/* CTF 1.8 */\n\n' + TSDL_TYPES
    out += ('trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = "%s";\n'
            '\tbyte_order = le;\n'
            '\tpacket.header := struct {\n'
            '\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n'
            '\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n'
            '\t};\n};\n\n' % us)
    out += ('env {\n\tdomain = "kernel";\n\tsysname = "Linux";\n'
            '\thostname = "gentrace";\n\tkernel_release = "6.12.0-synthetic";\n'
            '\ttracer_name = "ringtrace";\n\ttracer_major = 1;\n'
            '\ttracer_minor = 0;\n};\n\n')
    out += ('clock {\n\tname = "monotonic";\n\tuuid = "%s";\n'
            '\tdescription = "CLOCK_MONOTONIC";\n\tfreq = 1000000000;\n'
            '\tprecision = 1;\n\toffset_s = %d;\n\toffset = %d;\n'
            '\tabsolute = TRUE;\n};\n\n' % (us, offset_s, offset_ns))
    out += tsdl_stream(untimed)
    for eid, name, fields in events:
        out += ('event {\n\tname = "%s";\n\tid = %d;\n'
                '\tstream_id = 0;\n\tfields := struct { %s };\n};\n\n'
                % (name, eid, tsdl_fields(fields)))
    return out


def quote_text(raw):
    """How ringtrace report prints a utf8_t array: up to the first NUL."""
    raw = raw.split(b'\0', 1)[0]
    out = ['"']
    for b in raw:
        c = chr(b)
        if c == '"':
            out.append('\\"')
        elif c == '\\':
            out.append('\\\\')
        elif c == '\n':
            out.append('\\n')
        elif c == '\t':
            out.append('\\t')
        elif c == '\r':
            out.append('\\r')
        elif b < 0x20 or b == 0x7f:
            out.append('\\x%02x' % b)
        else:
            out.append(c)
    out.append('"')
    return ''.join(out)


TEXT_CHARS = b'abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789_-"\\\n\t:.'


def random_payload(rng, fields):
    """Returns (payload bytes, formatted fields) for one event."""
    vals = {}
    buf = bytearray()
    shown = []
    for typ, name, arg in fields:
        fmt, signed = INT_TYPES[typ]
        size = struct.calcsize(fmt)
        bits = size * 8

        def one():
            r = rng.random()
            if signed:
                lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            else:
                lo, hi = 0, (1 << bits) - 1
            if r < 0.15:
                return lo
            if r < 0.3:
                return hi
            return rng.randint(lo, hi)

        if arg is None:
            v = one()
            vals[name] = v
            buf += struct.pack(fmt, v)
            shown.append('%s=%d' % (name, v))
            continue
        if isinstance(arg, int):
            n = arg
        else:
            n = vals[arg]
        if typ == 'utf8_t':
            if isinstance(arg, int):
                k = rng.randint(0, n)
                raw = bytes(rng.choice(TEXT_CHARS) for _ in range(k))
                raw += b'\0' * (n - k)
            else:
                raw = bytes(rng.choice(TEXT_CHARS) for _ in range(n))
            buf += raw
            shown.append('%s=%s' % (name, quote_text(raw)))
        else:
            items = [one() for _ in range(n)]
            for v in items:
                buf += struct.pack(fmt, v)
            shown.append('%s=[%s]' % (name, ', '.join(str(v) for v in items)))
    return bytes(buf), ', '.join(shown)


# --frame-magic: the share of markers whose text holds the zstd frame
# magic, alone or as a whole stored-frame header (lib/chunk.h): what a
# user may write, which a stored frame of its packet must read as it is.
FRAME_MAGIC = 0.0
FRAME_MAGICS = [b'\x28\xb5\x2f\xfd', b'\x28\xb5\x2f\xfd\xa0\x40\x00\x00\x00\x01\x02\x00']


def make_fields_for(rng, eid, name, fields):
    """Sequence lengths must be chosen before random_payload sees them."""
    if name == 'ringtrace_marker':
        n = rng.choice([1, 2, 5, 17, rng.randint(1, 200)])
        raw = bytes(rng.choice(TEXT_CHARS) for _ in range(n))
        if FRAME_MAGIC and rng.random() < FRAME_MAGIC:
            at = rng.randint(0, n)
            raw = raw[:at] + rng.choice(FRAME_MAGICS) + raw[at:]
            n = len(raw)
        payload = struct.pack('<H', n) + raw
        return payload, 'len=%d, data=%s' % (n, quote_text(raw))
    if name == 'test_arrays':
        # n is a uint8_t length field: keep it small but sometimes 0
        fixed = [rng.randint(0, 2**32 - 1) for _ in range(3)]
        n = rng.choice([0, 1, 3, rng.randint(0, 20)])
        seq = [rng.randint(-32768, 32767) for _ in range(n)]
        k = rng.randint(0, 16)
        comm = bytes(rng.choice(TEXT_CHARS) for _ in range(k)) + b'\0' * (16 - k)
        payload = struct.pack('<3I', *fixed) + struct.pack('<B', n) + \
            struct.pack('<%dh' % n, *seq) + comm
        shown = 'fixed=[%s], n=%d, seq=[%s], comm=%s' % (
            ', '.join(map(str, fixed)), n, ', '.join(map(str, seq)),
            quote_text(comm))
        return payload, shown
    return random_payload(rng, fields)


def fmt_ts(ts):
    return '[%d.%09d]' % (ts // 1000000000, ts % 1000000000)


def gen_times(rng, count, start, used):
    """Strictly increasing times with small steps, 27-bit wraps, edge cases
    around 2^27 and long gaps that force the extended header."""
    t = start
    out = []
    special = [2**27 - 1, 2**27, 2**27 + 1, 2**27 - 2, 3 * 2**26]
    for i in range(count):
        r = rng.random()
        if i == 0:
            step = 0
        elif r < 0.80:
            step = rng.randint(1, 5000)
        elif r < 0.90:
            step = rng.randint(10**6, 2**27 - 1)
        elif r < 0.95:
            step = rng.choice(special)
        else:
            step = rng.randint(2**27, 5 * 10**9)
        t += step
        while t in used:
            t += 1
        used.add(t)
        out.append(t)
    return out


class Packetizer:
    """Lays events out in packets exactly as the module does."""

    def __init__(self, args, rng, uuid, cpu):
        self.args = args
        self.rng = rng
        self.uuid = uuid
        self.cpu = cpu
        self.size = args.subbuf
        self.packets = []      # (bytes, [expected lines], events, header info)
        self.cur = None
        self.seq = 0
        self.discarded = 0
        self.last_ts = None    # previous event of the buffer
        self.prev_end = 0
        self.counts = {'compact': 0, 'extended': 0, 'wraps': 0}

    def open(self, ts):
        back = self.rng.randint(0, 1000) if self.rng.random() < 0.5 else 0
        begin = max(self.prev_end, ts - back)
        self.cur = {'begin': begin, 'data': bytearray(HEADER.size),
                    'events': 0, 'lines': [], 'last': begin}

    def close(self, next_ts):
        c = self.cur
        if c is None:
            return
        end = c['last']
        if self.rng.random() < 0.5:
            room = (next_ts - end) if next_ts is not None else 1000
            end += self.rng.randint(0, max(0, min(room, 1000)))
        content = len(c['data'])
        psize = content if self.args.layout == 'exact' else self.size
        HEADER.pack_into(c['data'], 0, MAGIC, self.uuid, 0, self.cpu,
                         c['begin'], end, content * 8, psize * 8, self.seq,
                         self.discarded, self.cpu, c['events'])
        raw = bytes(c['data'])
        if self.args.layout == 'padded':
            raw += b'\0' * (self.size - content)
        self.packets.append({'raw': raw, 'lines': c['lines'],
                             'begin': c['begin'],
                             'events': c['events'], 'seq': self.seq,
                             'discarded': self.discarded})
        self.seq += 1
        self.prev_end = end
        self.cur = None

    def add(self, ts, eid, payload, line):
        if self.last_ts is not None and eid < EXTENDED and \
                ts - self.last_ts < 2**TS_BITS:
            hdr = struct.pack('<I', eid | ((ts & (2**TS_BITS - 1)) << 5))
        else:
            hdr = struct.pack('<IQ', EXTENDED | eid << 5, ts)
        need = len(hdr) + len(payload)
        if HEADER.size + need >= self.size:
            raise SystemExit('gentrace: event too big for --subbuf')
        if self.cur is not None and len(self.cur['data']) + need >= self.size:
            self.close(ts)
        if self.cur is None:
            self.open(ts)
            # The first event is read against timestamp_begin: re-encode.
            if eid < EXTENDED and ts - self.cur['begin'] < 2**TS_BITS:
                hdr = struct.pack('<I', eid | ((ts & (2**TS_BITS - 1)) << 5))
            else:
                hdr = struct.pack('<IQ', EXTENDED | eid << 5, ts)
        if len(hdr) == 4:
            ref = self.cur['last']
            self.counts['compact'] += 1
            if (ts & (2**TS_BITS - 1)) < (ref & (2**TS_BITS - 1)):
                self.counts['wraps'] += 1
        else:
            self.counts['extended'] += 1
        self.cur['data'] += hdr + payload
        self.cur['events'] += 1
        self.cur['lines'].append((ts, line))
        self.cur['last'] = ts
        self.last_ts = ts

    def lose(self, n):
        self.discarded += n


def zstd_frame(data, level=3):
    return subprocess.run(['zstd', '-q', '-c', '-%d' % level], input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('outdir')
    ap.add_argument('--expect-dir', help='where expected.* go (default OUTDIR.expect)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--cpus', type=int, default=2)
    ap.add_argument('--events', type=int, default=200, help='per CPU')
    ap.add_argument('--subbuf', type=int, default=4096, help='packet bytes')
    ap.add_argument('--layout', choices=['exact', 'padded', 'cut'],
                    default='exact',
                    help='exact: packet_size == content_size (what ringtrace.ko '
                    'writes); padded: whole sub-buffers, zero padding; cut: '
                    'content only but packet_size = sub-buffer (not valid CTF)')
    ap.add_argument('--lose', type=float, default=0.0,
                    help='probability that an event is discarded')
    ap.add_argument('--drop-packets', type=float, default=0.0,
                    help='probability that a packet is overwritten '
                    '(sequence gap, its events counted as discarded)')
    ap.add_argument('--zstd', choices=['none', 'single', 'rotate'], default='none')
    ap.add_argument('--frame-packets', type=int, default=1,
                    help='packets per zstd frame')
    ap.add_argument('--rotate-frames', type=int, default=3,
                    help='frames per rotated file')
    ap.add_argument('--cut-frame', action='store_true',
                    help='cut the last zstd frame of cpu0 in half (SIGKILL)')
    ap.add_argument('--partial-packet', action='store_true',
                    help='append half a packet to the stream of cpu0')
    ap.add_argument('--frame-magic', type=float, default=0.0,
                    help='share of markers whose text holds the zstd frame magic')
    ap.add_argument('--offset-s', type=int, default=1700000000)
    args = ap.parse_args()
    global FRAME_MAGIC
    FRAME_MAGIC = args.frame_magic

    rng = random.Random(args.seed)
    uuid = bytes(rng.getrandbits(8) for _ in range(16))
    os.makedirs(args.outdir, exist_ok=True)
    expect_dir = args.expect_dir or args.outdir.rstrip('/') + '.expect'
    os.makedirs(expect_dir, exist_ok=True)
    offset_ns = rng.randint(0, 999999999)
    with open(os.path.join(args.outdir, 'metadata'), 'w') as f:
        f.write(metadata(uuid, args.offset_s, offset_ns, EVENTS))

    used = set()
    all_lines = []
    summary = {}
    start = rng.randint(10**9, 10**12)
    for cpu in range(args.cpus):
        times = gen_times(rng, args.events, start + rng.randint(0, 10**6), used)
        pk = Packetizer(args, rng, uuid, cpu)
        for ts in times:
            eid, name, fields = rng.choice(EVENTS)
            payload, shown = make_fields_for(rng, eid, name, fields)
            # No sched_switch in these traces: the thread is unknown, '-'.
            line = '%s cpu%d - %s:%s' % (fmt_ts(ts), cpu, name,
                                       (' ' + shown) if shown else '')
            if args.lose and rng.random() < args.lose and pk.cur is not None:
                pk.lose(1)
                continue
            pk.add(ts, eid, payload, line)
        pk.close(None)

        # Overwrite mode: some packets never reach the file.
        kept = []
        for i, p in enumerate(pk.packets):
            if args.drop_packets and 0 < i < len(pk.packets) - 1 and \
                    rng.random() < args.drop_packets:
                continue
            kept.append(p)
        # Events of overwritten packets are counted by the next packets.
        extra = 0
        final = []
        for p in pk.packets:
            if p not in kept:
                extra += p['events']
                continue
            raw = bytearray(p['raw'])
            disc = p['discarded'] + extra
            struct.pack_into('<Q', raw, 72, disc)
            p = dict(p, raw=bytes(raw), discarded=disc)
            final.append(p)

        cut_packets = 0
        stream = [p['raw'] for p in final]
        tail = b''
        if args.partial_packet and cpu == 0:
            # Half a packet: a valid header, part of its events.
            last = final[-1]
            tail = bytes(last['raw'][:HEADER.size + 10])
            hdr = list(HEADER.unpack_from(tail))
            hdr[8] = last['seq'] + 1       # packet_seq_num
            tail = HEADER.pack(*hdr) + tail[HEADER.size:]

        files = {}
        if args.zstd == 'none':
            files['cpu%d' % cpu] = b''.join(stream) + tail
        else:
            frames = []
            for i in range(0, len(stream), args.frame_packets):
                frames.append((b''.join(stream[i:i + args.frame_packets]),
                               len(stream[i:i + args.frame_packets])))
            if tail:
                frames.append((tail, 0))
            cframes = [[zstd_frame(d), n] for d, n in frames]
            if args.cut_frame and cpu == 0:
                last = cframes[-1]
                last[0] = last[0][:len(last[0]) // 2]
                cut_packets = last[1]
            if args.zstd == 'single':
                files['cpu%d.zst' % cpu] = b''.join(c for c, _ in cframes)
            else:
                for k in range(0, len(cframes), args.rotate_frames):
                    files['cpu%d-%06d.zst' % (cpu, k // args.rotate_frames)] = \
                        b''.join(c for c, _ in cframes[k:k + args.rotate_frames])
        for name, data in files.items():
            with open(os.path.join(args.outdir, name), 'wb') as f:
                f.write(data)

        if cut_packets:
            final = final[:len(final) - cut_packets]
        n = 0
        for i, p in enumerate(final):
            lost_ev = p['discarded'] - (final[i - 1]['discarded'] if i else 0)
            lost_pk = p['seq'] - (final[i - 1]['seq'] + 1 if i else 0)
            if lost_ev or lost_pk:
                all_lines.append((p['begin'], cpu, n,
                                  '%s cpu%d -- lost events=%d packets=%d%s' % (
                                      fmt_ts(p['begin']), cpu, lost_ev, lost_pk,
                                      '' if i else ' before the first packet')))
                n += 1
            for ts, line in p['lines']:
                all_lines.append((ts, cpu, n, line))
                n += 1
        summary['cpu%d' % cpu] = {
            'packets': len(final),
            'events': sum(p['events'] for p in final),
            'discarded': final[-1]['discarded'] if final else 0,
            'lost_packets': (final[0]['seq'] if final else 0) +
            sum(final[i]['seq'] - final[i - 1]['seq'] - 1
                for i in range(1, len(final))),
            'first': min((t for p in final for t, _ in p['lines']), default=None),
            'last': max((t for p in final for t, _ in p['lines']), default=None),
            'truncated': bool(tail) or bool(cut_packets),
            'headers': pk.counts,
            'discard_steps': [final[i]['discarded'] -
                              (final[i - 1]['discarded'] if i else 0)
                              for i in range(len(final))],
        }

    all_lines.sort()
    with open(os.path.join(expect_dir, 'expected-summary.txt'), 'w') as f:
        for cpu in range(args.cpus):
            c = summary['cpu%d' % cpu]
            f.write('cpu%d: packets=%d events=%d discarded=%d lost_packets=%d '
                    'first=%s last=%s\n' % (
                        cpu, c['packets'], c['events'], c['discarded'],
                        c['lost_packets'],
                        fmt_ts(c['first']) if c['events'] else '-',
                        fmt_ts(c['last']) if c['events'] else '-'))
    with open(os.path.join(expect_dir, 'expected.txt'), 'w') as f:
        for _, _, _, line in all_lines:
            f.write(line + '\n')
    with open(os.path.join(expect_dir, 'expected.json'), 'w') as f:
        json.dump({'cpus': summary, 'offset_s': args.offset_s,
                   'offset_ns': offset_ns}, f, indent=1, sort_keys=True)



# ---- persistent region images (include/uapi/linux/ringtrace_persist.h) ----
#
# make_image() lays out what ringtrace.ko leaves in its persistent region:
# header page, state, slice table, metadata and ksyms copies (struct
# ringtrace_persist_blob + bytes), and per CPU a slice of counters and a
# ring of sub-buffers, written as the module's writer would have: marker
# records packed into packets, the ring wrapped (older generations
# overwritten), the slots' commit/events/retired counters, and the newest
# packet in the state a crash left it (PersistCpu's tail).  It returns the
# image and what a recovery must find.

PERSIST_MAGIC = 0x5349535245505452
PERSIST_HDR = struct.Struct('<QIIQQII16s72s72s20sI16sQQQIIQQQQQQ2QQ2QQQQ16QQ')
assert PERSIST_HDR.size == 520
# Field names, in the struct's order (arrays expanded as name[i]).
PERSIST_FIELDS = (
    ['magic', 'layout', 'header_size', 'region_base', 'region_size', 'source',
     'page_size', 'trace_uuid', 'release', 'version', 'build_id',
     'build_id_len', 'boot_id', 'armed_realtime_ns', 'armed_mono_ns',
     'subbuf_size', 'num_subbufs', 'nr_slices', 'slice_size', 'counters_size',
     'state_offset', 'state_size', 'slices_offset', 'slices_size',
     'metadata_offset[0]', 'metadata_offset[1]', 'metadata_size',
     'ksyms_offset[0]', 'ksyms_offset[1]', 'ksyms_size', 'rings_offset',
     'rings_size'] + ['reserved[%d]' % i for i in range(16)] + ['checksum'])
# Byte offset of each field in the header.
PERSIST_OFF = {}
_at = 0
for _name, _code in zip(PERSIST_FIELDS, [
        'Q', 'I', 'I', 'Q', 'Q', 'I', 'I', '16s', '72s', '72s', '20s', 'I',
        '16s', 'Q', 'Q', 'Q', 'I', 'I', 'Q', 'Q', 'Q', 'Q', 'Q', 'Q', 'Q',
        'Q', 'Q', 'Q', 'Q', 'Q', 'Q', 'Q'] + ['Q'] * 16 + ['Q']):
    PERSIST_OFF[_name] = _at
    _at += struct.calcsize('<' + _code)
PERSIST_META_SIZE = 256 << 10
PERSIST_KSYMS_SIZE = 1 << 20
PERSIST_TAILS = ('closed', 'open', 'idle', 'closed-incomplete', 'no-header')


def xxh64_bytes(data):
    """XXH64, seed 0, through xxhsum (tools/install-deps: xxhash)."""
    out = subprocess.run(['xxhsum', '-H1', '-'], input=data,
                         stdout=subprocess.PIPE, check=True).stdout
    return int(out.split()[0], 16)


def running_identity():
    """This machine's kernel release, version and build-id (bytes; b''
    when /sys/kernel/notes says none), as ringtraced --recover reads them."""
    u = os.uname()
    bid = b''
    try:
        with open('/sys/kernel/notes', 'rb') as f:
            notes = f.read()
    except OSError:
        notes = b''
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, typ = struct.unpack_from('<III', notes, at)
        name = at + 12
        desc = name + (namesz + 3) // 4 * 4
        if typ == 3 and notes[name:name + namesz] == b'GNU\0':
            bid = notes[desc:desc + descsz]
            break
        at = desc + (descsz + 3) // 4 * 4
    return u.release, u.version, bid


def page_align(v, page=4096):
    return (v + page - 1) // page * page


def persist_layout(subbuf, nsub, nr_slices, page=4096):
    """module/persist.c's rtr_persist_layout_of()."""
    lay = {}
    off = 4096
    lay['state_offset'] = off
    lay['state_size'] = page_align(16384 + 128 * nr_slices, page)
    off += lay['state_size']
    lay['slices_offset'] = off
    lay['slices_size'] = page_align(nr_slices * 32, page)
    off += lay['slices_size']
    lay['metadata_size'] = PERSIST_META_SIZE
    lay['metadata_offset'] = [off, off + PERSIST_META_SIZE]
    off += 2 * PERSIST_META_SIZE
    lay['ksyms_size'] = PERSIST_KSYMS_SIZE
    lay['ksyms_offset'] = [off, off + PERSIST_KSYMS_SIZE]
    off += 2 * PERSIST_KSYMS_SIZE
    lay['counters_size'] = page_align(nsub * (16 + 8 + 24), page)
    lay['slice_size'] = lay['counters_size'] + \
        (1 + subbuf * nsub // page) * page
    lay['rings_offset'] = off
    lay['rings_size'] = lay['slice_size'] * nr_slices
    lay['region_size'] = off + lay['rings_size']
    return lay


def persist_header(h):
    """The header page of the dict H, its checksum computed."""
    page = bytearray(4096)
    vals = [h['magic'], h['layout'], h['header_size'], h['region_base'],
            h['region_size'], h['source'], h['page_size'], h['trace_uuid'],
            h['release'].encode(), h['version'].encode(), h['build_id'],
            len(h['build_id']), h['boot_id'], h['armed_realtime_ns'],
            h['armed_mono_ns'], h['subbuf_size'], h['num_subbufs'],
            h['nr_slices'], h['slice_size'], h['counters_size'],
            h['state_offset'], h['state_size'], h['slices_offset'],
            h['slices_size'], h['metadata_offset'][0],
            h['metadata_offset'][1], h['metadata_size'],
            h['ksyms_offset'][0], h['ksyms_offset'][1], h['ksyms_size'],
            h['rings_offset'], h['rings_size']] + [0] * 16 + [0]
    PERSIST_HDR.pack_into(page, 0, *vals)
    struct.pack_into('<Q', page, PERSIST_OFF['checksum'], xxh64_bytes(bytes(page)))
    return page


def persist_blob(data, gen):
    """struct ringtrace_persist_blob and its bytes."""
    return struct.pack('<QQQQ', gen, len(data), xxh64_bytes(data), 0) + data


def marker_record(text, ts, prev_ts):
    """A ringtrace_marker record with a compact header (prev_ts: the clock
    it is read against)."""
    assert ts - prev_ts < 2**TS_BITS and ts >= prev_ts
    data = text.encode()
    return (struct.pack('<I', 0 | ((ts & (2**TS_BITS - 1)) << 5)) +
            struct.pack('<H', len(data)) + data)


class PersistCpu:
    """One CPU's ring in a slice, written packet by packet.

    packets: how many packets the writer opened since arming (the ring
    keeps the newest nsub).  tail: what the newest one is at the crash:
      closed             complete, like the others
      open               records committed, one more in flight (its header
                         and payload stored, not committed)
      idle               records committed, nothing in flight
      closed-incomplete  a nested closer closed it while the record at its
                         end was in flight (padding committed)
      no-header          opened by a nested writer whose record committed
                         before the opener committed the header
    """

    def __init__(self, rng, uuid, cpu, subbuf, nsub, packets, tail, t0,
                 taken=0):
        self.S, self.n, self.cpu = subbuf, nsub, cpu
        self.ring = bytearray(subbuf * nsub)
        self.commit = [0] * nsub
        self.events = [0] * nsub
        self.retired = [0] * nsub
        self.discarded = [0] * nsub
        self.kept = []          # markers a recovery keeps, in order
        self.in_flight = 0      # records it drops as in flight
        self.partial = 0        # open packets
        self.packets_kept = 0
        self.by_seq = {}        # seq: the markers of it a recovery keeps
        self.slot_of = {}       # seq: its slot
        ts = t0
        marker = 0
        per_packet = []         # [(seq, [(text, ts)])]
        for seq in range(packets):
            recs = []
            used = HEADER.size
            while True:
                text = 'cpu%d m%06d %s' % (cpu, marker,
                                           'x' * rng.randint(0, 40))
                size = 4 + 2 + len(text)
                if used + size >= subbuf:
                    break
                recs.append((text, ts, size))
                used += size
                marker += 1
                ts += rng.randint(1, 5000)
            per_packet.append((seq, recs))
            ts += rng.randint(1, 5000)
        for seq, recs in per_packet:
            last = seq == packets - 1
            self.write_packet(uuid, seq, recs, tail if last else 'closed',
                              seq >= packets - nsub)
            # A consumer took the ring's oldest TAKEN packets (GET: events
            # and, from its recording's origin, packet 1, the number and
            # losses written; PUT: the slot's events retired).
            if packets - nsub <= seq < packets - nsub + taken and not last:
                base = (seq % nsub) * subbuf
                struct.pack_into('<Q', self.ring, base + 64, seq - 1)
                struct.pack_into('<Q', self.ring, base + OFF_DISC, 5)
                struct.pack_into('<I', self.ring, base + 84, len(recs))
                self.retired[seq % nsub] = self.events[seq % nsub]

    def write_packet(self, uuid, seq, recs, tail, in_ring):
        S = self.S
        slot, gen = seq % self.n, seq // self.n
        base = slot * S
        buf = self.ring
        # The previous generation, retired before the slot reopened.
        self.retired[slot] = self.events[slot]
        begin = recs[0][1]
        body = bytearray()
        prev = begin
        ends = []
        for text, ts, size in recs:
            body += marker_record(text, ts, prev)
            prev = ts
            ends.append(HEADER.size + len(body))
        k = len(recs)
        if tail == 'closed':
            committed_recs = k
        elif tail in ('open', 'closed-incomplete'):
            committed_recs = k - 1      # the last one is in flight
        elif tail == 'idle':
            committed_recs = k
        else:                           # no-header
            committed_recs = 1
        content = HEADER.size + len(body)
        end_ts = recs[-1][1] + 7
        hdr = HEADER.pack(MAGIC, uuid, 0, self.cpu, begin, end_ts, content * 8,
                          content * 8, seq, 0, self.cpu, 0)
        if tail == 'no-header':
            # A nested record committed; the opener's header not yet
            # stored: the slot still holds the previous generation's.
            first = body[:ends[0] - HEADER.size]
            buf[base + HEADER.size:base + HEADER.size + len(first)] = first
            self.commit[slot] = gen * S + len(first)
            self.events[slot] += 1
            if in_ring:
                self.partial += 1
                self.in_flight += 1
            return
        if tail in ('open', 'idle'):
            # Not closed: the end fields are the previous generation's.
            old = buf[base:base + HEADER.size]
            hdr = bytearray(hdr)
            hdr[OFF_END:OFF_END + 8] = old[OFF_END:OFF_END + 8]
            hdr[OFF_CONTENT:OFF_CONTENT + 16] = old[OFF_CONTENT:OFF_CONTENT + 16]
            hdr[OFF_DISC:OFF_DISC + 8] = old[OFF_DISC:OFF_DISC + 8]
            hdr = bytes(hdr)
        buf[base:base + HEADER.size] = hdr
        buf[base + HEADER.size:base + content] = body
        if tail == 'idle':
            # Nothing in flight: past the records, the ring as it was
            # (zeros on a first generation).
            pass
        if tail == 'closed':
            self.commit[slot] = (gen + 1) * S
        elif tail == 'closed-incomplete':
            self.commit[slot] = gen * S + ends[-2] + (S - content)
        else:
            self.commit[slot] = gen * S + (ends[committed_recs - 1]
                                           if committed_recs else HEADER.size)
        self.events[slot] += committed_recs
        if not in_ring:
            return
        self.packets_kept += 1
        self.kept += [t for t, _, _ in recs[:committed_recs]]
        self.by_seq[seq] = [t for t, _, _ in recs[:committed_recs]]
        self.slot_of[seq] = slot
        if tail != 'closed':
            self.partial += 1
            self.in_flight += k - committed_recs

    def counters(self, size):
        out = bytearray(size)
        n = self.n
        for i in range(n):
            struct.pack_into('<QQ', out, 16 * i, self.commit[i], self.events[i])
            struct.pack_into('<Q', out, 16 * n + 8 * i, 0)
            struct.pack_into('<QQQ', out, 24 * n + 24 * i, self.discarded[i],
                             self.retired[i], 0)
        return out


OFF_END = 40
OFF_CONTENT = 48
OFF_DISC = 72

KSYMS_TEXT = ('ringtrace-ksyms 1\nK ffffffff81000000\n'
              '1000 start_kernel\n200 do_one_initcall\n')


def make_image(seed=1, cpus=2, subbuf=4096, nsub=4, packets=6, tails=None,
               identity=None, ksyms=True, metadata_copies=('good', 'none'),
               lifecycle=1, unused_slices=0, taken=0):
    """An image and what a recovery must find: {'cpus': {cpu: {'markers',
    'in_flight', 'partial', 'packets'}}, 'uuid', 'offsets'}."""
    rng = random.Random(seed)
    uuid = bytes(rng.randrange(256) for _ in range(16))
    release, version, bid = identity or running_identity()
    nr = cpus + unused_slices
    lay = persist_layout(subbuf, nsub, nr)
    img = bytearray(lay['region_size'])
    h = dict(magic=PERSIST_MAGIC, layout=1, header_size=520, region_base=0x50000000,
             region_size=lay['region_size'], source=2, page_size=4096,
             trace_uuid=uuid, release=release, version=version, build_id=bid,
             boot_id=bytes(rng.randrange(256) for _ in range(16)),
             armed_realtime_ns=1764374400 * 10**9, armed_mono_ns=5 * 10**9,
             subbuf_size=subbuf, num_subbufs=nsub, nr_slices=nr,
             slice_size=lay['slice_size'], counters_size=lay['counters_size'],
             state_offset=lay['state_offset'], state_size=lay['state_size'],
             slices_offset=lay['slices_offset'], slices_size=lay['slices_size'],
             metadata_offset=lay['metadata_offset'],
             metadata_size=lay['metadata_size'],
             ksyms_offset=lay['ksyms_offset'], ksyms_size=lay['ksyms_size'],
             rings_offset=lay['rings_offset'], rings_size=lay['rings_size'])
    img[0:4096] = persist_header(h)
    struct.pack_into('<I', img, lay['state_offset'], lifecycle)
    md = metadata(uuid, 0, 0, EVENTS).encode()
    for i, what in enumerate(metadata_copies):
        at = lay['metadata_offset'][i]
        if what == 'good':
            blob = persist_blob(md, i + 1)
        elif what == 'bad':
            blob = bytearray(persist_blob(md, i + 1))
            blob[40] ^= 0xff
        else:
            continue
        img[at:at + len(blob)] = blob
    if ksyms:
        z = zstd_frame(KSYMS_TEXT.encode())
        blob = persist_blob(z, 1)
        at = lay['ksyms_offset'][0]
        img[at:at + len(blob)] = blob
    expect = {'uuid': uuid, 'layout': lay, 'cpus': {}, 'slots': {}}
    tails = tails or {}
    for i in range(nr):
        at = lay['slices_offset'] + 32 * i
        counters = lay['rings_offset'] + i * lay['slice_size']
        ring = counters + lay['counters_size']
        used = i < cpus
        cpu = i * 2 if used else 0      # CPUs need not be 0..n-1
        struct.pack_into('<IIQQQ', img, at, cpu, 1 if used else 0, counters,
                         ring, lay['slice_size'] - lay['counters_size'])
        if not used:
            continue
        pc = PersistCpu(rng, uuid, cpu, subbuf, nsub, packets,
                        tails.get(cpu, 'closed'), 10**9 + 1000 * cpu,
                        taken=taken)
        img[counters:counters + lay['counters_size']] = \
            pc.counters(lay['counters_size'])
        struct.pack_into('<IIIIII', img, ring, 4096, 4096, subbuf, nsub, cpu, 1)
        img[ring + 4096:ring + 4096 + len(pc.ring)] = pc.ring
        expect['cpus'][cpu] = {'markers': pc.kept, 'in_flight': pc.in_flight,
                               'partial': pc.partial,
                               'packets': pc.packets_kept,
                               'by_seq': pc.by_seq, 'slot_of': pc.slot_of}
        expect['slots'][cpu] = (counters, ring + 4096)
    return bytes(img), expect


def main_image(argv):
    """gentrace.py image OUT [--seed N]: an image for the fuzzer's corpus."""
    ap = argparse.ArgumentParser(prog='gentrace.py image')
    ap.add_argument('out')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    img, _ = make_image(seed=a.seed, tails={0: 'open', 2: 'closed-incomplete'})
    with open(a.out, 'wb') as f:
        f.write(img)
    return 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['image']:
        sys.exit(main_image(sys.argv[2:]))
    sys.exit(main())
