#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The stacks of a `ringtrace export -f perfetto` file, resolved.

  perfetto_stacks.py [--schema FILE] [--mappings] PFTRACE

Reads the file with `protoc --decode=perfetto.protos.Trace` and Perfetto's
published schema (--schema; by default the one perfetto_schema.py --path
names), and resolves each PerfSample's callstack_iid through the interned
data of its sequence as trace_processor does: an iid names what a packet
of the same sequence interned before it, or the packet itself; each iid
is interned once.  Prints a line per sample:

  TIME CPU PID TID SEQUENCE_FLAGS MODE ROOT;...;LEAF

MODE its cpu_mode (MODE_USER, MODE_KERNEL), each frame "function
mapping-path" (user frames first, then the kernel's); with --mappings,
each frame "function mapping-path build-id rel_pc start end exact_offset
load_bias" (hex, "-" for a kernel mapping's).  Exits 1, saying why on
stderr, if the file does not decode, a PerfSample is off sequence 2, an
iid does not resolve, a sample has no callstack, a frame has no function
name, or the mapping of a binary (a path starting with '/') has no
build-id.  No python3-protobuf needed: protoc's text is parsed here.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfetto_schema  # noqa: E402

INTERNED = ('function_names', 'frames', 'callstacks', 'mapping_paths', 'mappings',
            'build_ids')


class Bad(Exception):
    pass


def decode(pftrace, schema):
    """protoc's text of PFTRACE, read with SCHEMA."""
    with open(pftrace, 'rb') as f:
        r = subprocess.run(['protoc', '--decode=perfetto.protos.Trace', '-I',
                            os.path.dirname(schema), schema], stdin=f,
                           capture_output=True, text=True)
    if r.returncode:
        raise Bad('protoc --decode: ' + r.stderr.strip())
    return r.stdout


def unquote(v):
    """protoc's quoted text (C escapes, octal for other bytes) as bytes."""
    out, i, v = bytearray(), 1, v[:-1]
    simple = {'n': 10, 'r': 13, 't': 9, '"': 34, "'": 39, '\\': 92}
    while i < len(v):
        c = v[i]
        if c != '\\':
            out += c.encode()
            i += 1
        elif v[i + 1] in simple:
            out.append(simple[v[i + 1]])
            i += 2
        else:
            m = re.match(r'[0-7]{1,3}', v[i + 1:])
            if not m:
                raise Bad('protoc text: an escape %r' % v[i:i + 4])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
    return bytes(out)


def fields(text):
    """protoc's text as nested dicts: each field a list of its values (a
    message a dict), in the order they come."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if line.endswith('{'):
            msg = {}
            cur.setdefault(line[:-1].strip(), []).append(msg)
            stack.append(cur)
            cur = msg
        elif line == '}':
            cur = stack.pop()
        elif line:
            k, v = line.split(':', 1)
            v = v.strip()
            cur.setdefault(k, []).append(unquote(v) if v.startswith('"') else
                                         int(v) if re.match(r'-?\d+$', v) else v)
    return root


def one(msg, name):
    if len(msg.get(name, [])) != 1:
        raise Bad('%s: %r' % (name, msg))
    return msg[name][0]


def perf_samples(text):
    """Each PerfSample resolved: a dict of time, cpu, pid, tid, flags,
    mode and frames (root first), each frame a dict of name, path,
    build_id (hex, None when its mapping has none), rel_pc, start, end,
    exact_offset, load_bias (None where not set)."""
    interned = {k: {} for k in INTERNED}
    out = []
    for pkt in fields(text).get('packet', []):
        if 'perf_sample' not in pkt:
            continue
        if pkt.get('trusted_packet_sequence_id') != [2]:
            raise Bad('a PerfSample off the stacks\' sequence: %r' % pkt)
        for data in pkt.get('interned_data', []):
            for kind, table in interned.items():
                for e in data.get(kind, []):
                    iid = one(e, 'iid')
                    if iid in table:
                        raise Bad('%s iid %d interned twice' % (kind, iid))
                    table[iid] = e
        ps = one(pkt, 'perf_sample')
        if 'callstack_iid' not in ps:
            raise Bad('a PerfSample without a callstack: %r' % pkt)
        frames = []
        try:
            cs = interned['callstacks'][one(ps, 'callstack_iid')]
            for fid in cs['frame_ids']:
                f = interned['frames'][fid]
                m = interned['mappings'][one(f, 'mapping_id')]
                path = one(interned['mapping_paths'][one(m, 'path_string_ids')],
                           'str').decode()
                name = one(interned['function_names'][one(f, 'function_name_id')],
                           'str').decode()
                bid = None
                if m.get('build_id', [0]) != [0]:
                    bid = one(interned['build_ids'][one(m, 'build_id')], 'str').hex()
                if not name:
                    raise Bad('frame %d has no function name: %r' % (fid, f))
                if path.startswith('/') and not bid:
                    raise Bad('frame %s: mapping %s has no build-id: %r' % (name, path, m))
                frames.append({'name': name, 'path': path, 'build_id': bid,
                               'rel_pc': one(f, 'rel_pc'),
                               **{k: m[k][0] if k in m else None for k in (
                                   'start', 'end', 'exact_offset', 'load_bias')}})
        except KeyError as e:
            raise Bad('an iid not interned before its use: %s in %r' % (e, pkt))
        out.append({'time': one(pkt, 'timestamp'), 'cpu': one(ps, 'cpu'),
                    'pid': one(ps, 'pid'), 'tid': one(ps, 'tid'),
                    'flags': one(pkt, 'sequence_flags'),
                    'mode': one(ps, 'cpu_mode'), 'frames': frames})
    return out


def samples(text):
    """(time, cpu, pid, tid, sequence_flags, [frame, ... leaf last]),
    each frame "function mapping-path"."""
    return [(s['time'], s['cpu'], s['pid'], s['tid'], s['flags'],
             ['%s %s' % (f['name'], f['path']) for f in s['frames']])
            for s in perf_samples(text)]


def hexor(v):
    return '-' if v is None else '%x' % v


def main():
    args = sys.argv[1:]
    schema = None
    if args[:1] == ['--schema']:
        schema, args = args[1], args[2:]
    maps = args[:1] == ['--mappings']
    if maps:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    try:
        schema = schema or perfetto_schema.published()
        for s in perf_samples(decode(args[0], schema)):
            frames = [' '.join([f['name'], f['path']] + ([
                f['build_id'] or '-', hexor(f['rel_pc'])] + [
                hexor(f[k]) for k in ('start', 'end', 'exact_offset', 'load_bias')]
                if maps else [])) for f in s['frames']]
            print('%d %d %d %d %d %s %s' % (s['time'], s['cpu'], s['pid'], s['tid'],
                                            s['flags'], s['mode'], ';'.join(frames)))
    except (Bad, perfetto_schema.Missing, OSError) as e:
        print('perfetto_stacks: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
