#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kernel stacks of a `ringtrace export -f perfetto` file, resolved.

  perfetto_stacks.py [--schema FILE] PFTRACE

Reads the file with `protoc --decode=perfetto.protos.Trace` and Perfetto's
published schema (--schema; by default the one perfetto_schema.py --path
names), and resolves each PerfSample's callstack_iid through the interned
data of its sequence as trace_processor does: an iid names what a packet
of the same sequence interned before it, or the packet itself; each iid
is interned once.  Prints a line per sample:

  TIME CPU PID TID SEQUENCE_FLAGS ROOT;...;LEAF

each frame "function [mapping]".  Exits 1, saying why on stderr, if the
file does not decode, a PerfSample is off sequence 2, or an iid does not
resolve.  No python3-protobuf needed: protoc's text is parsed here.
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfetto_schema  # noqa: E402

INTERNED = ('function_names', 'frames', 'callstacks', 'mapping_paths', 'mappings')


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
            cur.setdefault(k, []).append(json.loads(v) if v.startswith('"') else
                                         int(v) if re.match(r'-?\d+$', v) else v)
    return root


def one(msg, name):
    if len(msg.get(name, [])) != 1:
        raise Bad('%s: %r' % (name, msg))
    return msg[name][0]


def samples(text):
    """(time, cpu, pid, tid, sequence_flags, [frame, ... leaf last])."""
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
        frames = []
        try:
            cs = interned['callstacks'][one(ps, 'callstack_iid')]
            for fid in cs['frame_ids']:
                f = interned['frames'][fid]
                m = interned['mappings'][one(f, 'mapping_id')]
                path = one(interned['mapping_paths'][one(m, 'path_string_ids')], 'str')
                name = one(interned['function_names'][one(f, 'function_name_id')], 'str')
                frames.append('%s %s' % (name, path))
        except KeyError as e:
            raise Bad('an iid not interned before its use: %s in %r' % (e, pkt))
        out.append((one(pkt, 'timestamp'), one(ps, 'cpu'), one(ps, 'pid'),
                    one(ps, 'tid'), one(pkt, 'sequence_flags'), frames))
    return out


def main():
    args = sys.argv[1:]
    schema = None
    if args[:1] == ['--schema']:
        schema, args = args[1], args[2:]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    try:
        schema = schema or perfetto_schema.published()
        for s in samples(decode(args[0], schema)):
            print('%d %d %d %d %d %s' % (s[0], s[1], s[2], s[3], s[4], ';'.join(s[5])))
    except (Bad, perfetto_schema.Missing, OSError) as e:
        print('perfetto_stacks: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
