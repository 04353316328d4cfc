#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare a process's executable mappings with the user_mmap events of a
trace (tools/tests/profile.d/umap.sh).

Usage: umap_check.py REPORT MAPS [--flags-set N] [--flags-clear N]
                     [--no-path] [--need NAME...]

REPORT is `ringtrace report DIR`'s output, MAPS what umap-workload printed
("pid N", then the executable lines of its /proc/self/maps).  For each
line but [vsyscall] (no VMA: the gate page) an event of that pid must have
the same start, end, file offset, device and inode, the same path (none
with --no-path) and, for a file, the build-id `readelf -n` reads from it;
each event's flags have the bits of --flags-set and none of --flags-clear.
Each --need NAME must be the base name of one of the mapped files.  One
"ok - ..."/"not ok - ..." line per assertion.
"""

import argparse
import os
import re
import subprocess
import sys

FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)')


def events(report, pid):
    out = []
    for line in open(report, errors='replace'):
        _, sep, rest = line.rstrip('\n').partition(' user_mmap: ')
        if not sep:
            continue
        f = {m.group(1): m.group(2) for m in FIELD.finditer(rest)}
        if int(f['pid']) != pid:
            continue
        f['path'] = f['path'][1:-1].encode().decode('unicode_escape')
        out.append(f)
    return out


def build_id(path):
    r = subprocess.run(['readelf', '-n', '--wide', path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    m = re.search(r'Build ID: ([0-9a-f]+)', r.stdout)
    return m.group(1) if m else ''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('report')
    ap.add_argument('maps')
    ap.add_argument('--flags-set', type=lambda s: int(s, 0), default=0)
    ap.add_argument('--flags-clear', type=lambda s: int(s, 0), default=0)
    ap.add_argument('--no-path', action='store_true')
    ap.add_argument('--need', nargs='*', default=[])
    a = ap.parse_args()
    lines = open(a.maps).read().splitlines()
    if not lines or not lines[0].startswith('pid '):
        print('not ok - %s begins with the pid: %r' % (a.maps, lines[:1]))
        return 1
    pid = int(lines[0].split()[1])
    evs = events(a.report, pid)
    bad = 0

    def check(cond, msg):
        nonlocal bad
        print('%s - %s' % ('ok' if cond else 'not ok', msg))
        bad += not cond

    check(evs, 'user_mmap events of pid %d in the trace' % pid)
    names = set()
    for line in lines[1:]:
        parts = line.split(None, 5)
        path = parts[5] if len(parts) > 5 else ''
        if path == '[vsyscall]':
            continue
        start, end = (int(x, 16) for x in parts[0].split('-'))
        off, ino = int(parts[2], 16), int(parts[4])
        major, minor = (int(x, 16) for x in parts[3].split(':'))
        names.add(os.path.basename(path))
        match = [e for e in evs if int(e['start'], 16) == start and
                 int(e['end'], 16) == end]
        what = '%s %x-%x' % (path, start, end)
        check(match, 'an event with the range of %s' % what)
        if not match:
            continue
        e = match[-1]
        flags = int(e['flags'])
        dev = int(e['dev'])
        check(int(e['pgoff'], 16) == off and int(e['ino']) == ino and
              (os.major(dev), os.minor(dev)) == (major, minor),
              '%s: offset %x, device %x:%x, inode %d as maps says (event: %s, %d:%d, %s)'
              % (what, off, major, minor, ino, e['pgoff'], os.major(dev),
                 os.minor(dev), e['ino']))
        check(flags & a.flags_set == a.flags_set and not flags & a.flags_clear,
              '%s: flags %#x have %#x and none of %#x' %
              (what, flags, a.flags_set, a.flags_clear))
        want_path = '' if a.no_path and path != '[vdso]' else path
        check(e['path'] == want_path, '%s: path %r' % (what, e['path']))
        if path.startswith('/') and not a.no_path:
            want = build_id(path)
            check(want and e['build_id'] == want,
                  '%s: build-id %s is readelf\'s %s' % (what, e['build_id'], want))
        elif path.startswith('/'):
            check(e['build_id'] == '' and flags & 0x2,
                  '%s: no build-id, NO_BUILD_ID' % what)
    for n in a.need:
        check(n in names, '%s is mapped (maps: %s)' % (n, sorted(names)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
