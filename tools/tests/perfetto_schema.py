#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare our Perfetto schema subset with Perfetto's published schema.

  perfetto_schema.py OURS.proto THEIRS.proto

OURS is tools/cli/perfetto.proto; THEIRS is Perfetto's merged schema,
protos/perfetto/trace/perfetto_trace.proto of github.com/google/perfetto
(not in this tree: fetch it, and name the commit in OURS's header when it
changes).  Both are compiled by protoc into descriptors; every message,
field and enum value of OURS must be in THEIRS with the same number, type,
label, message or enum type, and oneof.  Prints each difference; exits 1
if there is one, 0 (and a count of what was compared) if not.
"""

import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2


def descriptors(proto, tmp, name):
    out = os.path.join(tmp, name)
    subprocess.run(['protoc', '-I', os.path.dirname(os.path.abspath(proto)),
                    '--descriptor_set_out=' + out,
                    os.path.abspath(proto)], check=True)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, 'rb') as f:
        fds.ParseFromString(f.read())
    return fds


def index(fds):
    """Full name -> DescriptorProto or EnumDescriptorProto."""
    out = {}

    def walk(prefix, messages, enums):
        for e in enums:
            out[prefix + e.name] = e
        for m in messages:
            out[prefix + m.name] = m
            walk(prefix + m.name + '.', m.nested_type, m.enum_type)

    for f in fds.file:
        walk('.' + f.package + '.', f.message_type, f.enum_type)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        ours = index(descriptors(sys.argv[1], tmp, 'ours.pb'))
        theirs = index(descriptors(sys.argv[2], tmp, 'theirs.pb'))
    bad = []
    fields = values = 0
    for name, d in sorted(ours.items()):
        t = theirs.get(name)
        if t is None or type(t) is not type(d):
            bad.append('%s: not in their schema' % name)
            continue
        if isinstance(d, descriptor_pb2.EnumDescriptorProto):
            their_values = {v.name: v.number for v in t.value}
            for v in d.value:
                values += 1
                if their_values.get(v.name) != v.number:
                    bad.append('%s.%s = %d: theirs %s' % (
                        name, v.name, v.number, their_values.get(v.name)))
            continue
        their_fields = {f.name: f for f in t.field}
        for f in d.field:
            fields += 1
            g = their_fields.get(f.name)
            if g is None:
                bad.append('%s.%s: not in their schema' % (name, f.name))
                continue
            mine = (f.number, f.type, f.label, f.type_name,
                    d.oneof_decl[f.oneof_index].name if f.HasField('oneof_index') else None,
                    f.options.packed)
            their = (g.number, g.type, g.label, g.type_name,
                     t.oneof_decl[g.oneof_index].name if g.HasField('oneof_index') else None,
                     g.options.packed)
            if mine != their:
                bad.append('%s.%s: ours (number, type, label, type name, oneof, packed) %s, theirs %s'
                           % (name, f.name, mine, their))
    for b in bad:
        print(b)
    print('perfetto_schema: %d messages and enums, %d fields, %d enum values compared, %d differ'
          % (len(ours), fields, values, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
