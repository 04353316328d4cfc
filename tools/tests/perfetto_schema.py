#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare our Perfetto schema subset with Perfetto's published schema.

  perfetto_schema.py [OURS [THEIRS]]   compare
  perfetto_schema.py --path            print the published schema's path
  perfetto_schema.py --install FILE    put FILE into the cache, if it is it

OURS is tools/cli/perfetto.proto; THEIRS is Perfetto's merged schema,
protos/perfetto/trace/perfetto_trace.proto of github.com/google/perfetto
at the commit and with the sha256 that OURS's header names.  That file is
not in this tree: it is kept in $RT_CACHE/perfetto/COMMIT/perfetto_trace.proto
(RT_CACHE defaults to /var/cache/ringtrace), put there by --install from a
copy of it: tools/install-deps installs ../shared/perfetto/perfetto_trace.proto
beside the clone, or fetches it from GitHub; by hand, e.g. `git show
COMMIT:protos/perfetto/trace/perfetto_trace.proto` in a clone of Perfetto.  A cached file whose checksum is not the named one
is refused.

Both schemas are compiled by protoc into descriptors; every message, field
and enum value of OURS must be in THEIRS with the same number, type, label,
message or enum type, oneof and packing.  Prints each difference; exits 1
if there is one (or THEIRS is missing), 0 (and a count of what was
compared) if not.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(os.path.dirname(HERE), 'cli', 'perfetto.proto')
CACHE = os.path.join(os.environ.get('RT_CACHE', '/var/cache/ringtrace'), 'perfetto')


class Missing(Exception):
    pass


def named(ours=OURS):
    """The (commit, sha256) of Perfetto's schema that OURS names."""
    text = open(ours).read()
    commit = re.search(r'^// at commit ([0-9a-f]{40})\b', text, re.M)
    digest = re.search(r'^// sha256 ([0-9a-f]{64})\b', text, re.M)
    if not commit or not digest:
        raise Missing('%s names no "at commit" and "sha256" of Perfetto\'s schema' % ours)
    return commit.group(1), digest.group(1)


def sha256(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def published(ours=OURS):
    """The path of the cached published schema OURS names; Missing if it
    is not there, or is not that file."""
    commit, digest = named(ours)
    path = os.path.join(CACHE, commit, 'perfetto_trace.proto')
    if not os.path.exists(path):
        raise Missing('%s is missing: Perfetto\'s protos/perfetto/trace/perfetto_trace.proto '
                      'at commit %s; tools/install-deps puts it there (from '
                      '../shared/perfetto/ beside the clone, or GitHub), or `%s --install FILE`'
                      % (path, commit, os.path.relpath(__file__)))
    got = sha256(path)
    if got != digest:
        raise Missing('%s: sha256 %s, not %s named by %s' % (path, got, digest, ours))
    return path


def install(src, ours=OURS):
    commit, digest = named(ours)
    got = sha256(src)
    if got != digest:
        raise Missing('%s: sha256 %s, not %s: not Perfetto\'s schema at commit %s'
                      % (src, got, digest, commit))
    d = os.path.join(CACHE, commit)
    os.makedirs(d, exist_ok=True)
    shutil.copyfile(src, os.path.join(d, 'perfetto_trace.proto'))
    return os.path.join(d, 'perfetto_trace.proto')


def descriptors(proto, tmp, name):
    from google.protobuf import descriptor_pb2
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


def compare(ours_path, theirs_path):
    """The differences (a list of lines), and what was compared."""
    from google.protobuf import descriptor_pb2
    with tempfile.TemporaryDirectory() as tmp:
        ours = index(descriptors(ours_path, tmp, 'ours.pb'))
        theirs = index(descriptors(theirs_path, tmp, 'theirs.pb'))
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
    return bad, (len(ours), fields, values)


def main():
    args = sys.argv[1:]
    try:
        if args[:1] == ['--path'] and len(args) == 1:
            print(published())
            return 0
        if args[:1] == ['--install'] and len(args) == 2:
            print(install(args[1]))
            return 0
        if len(args) > 2 or any(a.startswith('-') for a in args):
            sys.exit(__doc__)
        ours = args[0] if args else OURS
        theirs = args[1] if len(args) > 1 else published(ours)
    except Missing as e:
        print('perfetto_schema: %s' % e)
        return 1
    bad, (types, fields, values) = compare(ours, theirs)
    for b in bad:
        print(b)
    print('perfetto_schema: %d messages and enums, %d fields, %d enum values compared, %d differ'
          % (types, fields, values, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
