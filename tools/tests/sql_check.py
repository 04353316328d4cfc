#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`ringtrace sql` against `ringtrace report` on recorded traces.

  sql_check.py [--parts a,b] [--no-damage] DIR...

Each DIR is a trace recorded in a test guest (tools/run-tests passes
lttng_guest.sh's `t` of every kernel: no guest time of its own).  Every
part file tools/tests/sql.d/<part>.py defines check_<part>(db), one per
piece of `ringtrace sql`, so that pieces do not edit one another's
checks; db (class Db below) runs statements and report on one trace and
says what failed.  Then a copy is damaged as perfetto_guest.sh damages
one (the magic of the second packet of the CPU with the most packets --
its only one if it has one --, the trace unpacked first): the damage must
be said, exit 3, and every part's checks still hold against report of
the same damaged copy.

Last line: `sql-check: N passed, M failed`.
"""

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# RT_SQL_BIN: another build (how a check is shown to fail without its code).
CLI = os.environ.get('RT_SQL_BIN') or os.path.join(os.path.dirname(HERE), 'ringtrace')


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(args, env=None):
    return subprocess.run([CLI] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, errors='replace',
                          env=dict(os.environ, **(env or {})))


# ---- report's text, parsed ------------------------------------------------------------

def stat_events(text):
    """report --stat's events by name and CPU: {(name, cpu): count}."""
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('events by name and CPU'))
    cpus = [int(c[3:]) for c in lines[head + 1].split()[2:]]
    out = {}
    for l in lines[head + 2:]:
        if not l.strip():
            break
        f = l.split()
        for c, n in zip(cpus, f[2:]):
            if int(n):
                out[(f[0], c)] = int(n)
    return out


LOSS = re.compile(r'^  CPU (\d+): (\d+) events lost, (\d+) packets lost, (\d+) damaged')


def stat_losses(text):
    """report --stat's losses: {cpu: (events, packets, damaged)}."""
    return {int(m.group(1)): tuple(int(m.group(k)) for k in (2, 3, 4))
            for m in map(LOSS.match, text.splitlines()) if m}


LINE = re.compile(r'^\[(\d+)\.(\d{9})\] cpu(\d+) (?:- |.*-(\d+) )(\w+):')


def report_lines(text):
    """report's event lines as (ts ns, cpu, tid or None, name), sorted."""
    out = []
    for l in text.splitlines():
        m = LINE.match(l)
        if m and ' -- ' not in l:
            tid = int(m.group(4)) if m.group(4) is not None else None
            out.append((int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3)),
                        tid, m.group(5)))
    return sorted(out, key=repr)


# ---- one trace ------------------------------------------------------------------------

class Db:
    """One trace directory: statements and report, each exit status
    checked to be @status (3 for a damaged copy)."""

    def __init__(self, d, status=0):
        self.dir = d
        self.status = status
        self._stat = self._report = None

    def rows(self, query):
        r = run(['sql', '--json', self.dir, query])
        check(r.returncode == self.status, 'sql %r: exit %d, expected %d: %s' %
              (query, r.returncode, self.status, r.stderr[-1000:]))
        return json.loads(r.stdout) if r.stdout.strip() else []

    def statements(self, text, env=None):
        """The --json arrays of @text's statements, run in one process."""
        r = run(['sql', '--json', self.dir, text], env=env)
        check(r.returncode == self.status, 'sql %r: exit %d, expected %d: %s' %
              (text[:200], r.returncode, self.status, r.stderr[-1000:]))
        dec, out, i = json.JSONDecoder(), [], 0
        while True:
            while i < len(r.stdout) and r.stdout[i].isspace():
                i += 1
            if i == len(r.stdout):
                return out
            v, i = dec.raw_decode(r.stdout, i)
            out.append(v)

    def report_stat(self):
        if self._stat is None:
            r = run(['report', '--stat', self.dir])
            check(r.returncode == self.status, 'report --stat: exit %d' % r.returncode)
            self._stat = r.stdout
        return self._stat

    def report(self):
        if self._report is None:
            r = run(['report', self.dir])
            check(r.returncode == self.status, 'report: exit %d' % r.returncode)
            self._report = r.stdout
        return self._report


def load_parts(names):
    # The parts import this file as sql_check: the module running, so that
    # their Fail is the one caught here.
    sys.modules.setdefault('sql_check', sys.modules[__name__])
    parts = []
    for path in sorted(glob.glob(os.path.join(HERE, 'sql.d', '*.py'))):
        name = os.path.basename(path)[:-3]
        if names and name not in names:
            continue
        spec = importlib.util.spec_from_file_location('sql_d_' + name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        parts.append((name, getattr(mod, 'check_' + name)))
    return parts


def damaged_copy(d, tmp):
    """@d unpacked into @tmp with the magic of the second packet (or the
    only one) of its CPU with the most packets damaged: (copy, that CPU's
    file name)."""
    out = os.path.join(tmp, 'damaged')
    r = run(['unpack', d, out])
    check(r.returncode in (0, 3), 'unpack %s: %s' % (d, r.stderr))
    best = None
    for path in glob.glob(out + '/cpu*'):
        data = bytearray(open(path, 'rb').read())
        offs, o = [], 0
        while o + 88 <= len(data):
            offs.append(o)
            o += max(struct.unpack_from('<Q', data, o + 48)[0] // 8, 88)
        if best is None or len(offs) > len(best[2]):
            best = (path, data, offs)
    check(best and best[2], 'no packet in %s' % d)
    path, data, offs = best
    struct.pack_into('<I', data, offs[min(1, len(offs) - 1)], 0xdeadbeef)
    open(path, 'wb').write(data)
    return out, os.path.basename(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--parts', help='only these parts (comma-separated)')
    ap.add_argument('--no-damage', action='store_true', help='no damaged copy')
    ap.add_argument('dirs', nargs='+')
    args = ap.parse_args()
    parts = load_parts(args.parts.split(',') if args.parts else None)
    passed = failed = 0

    def one(what, fn, *a):
        nonlocal passed, failed
        try:
            fn(*a)
            passed += 1
            print('ok     %s' % what)
        except Fail as e:
            failed += 1
            print('FAIL   %s: %s' % (what, e))
        sys.stdout.flush()

    def damaged(d):
        tmp = tempfile.mkdtemp(prefix='rt-sql-check-')
        try:
            copy, cpu = damaged_copy(d, tmp)
            r = run(['sql', copy, 'SELECT count(*) FROM raw'])
            check(r.returncode == 3 and re.search(r'damaged: .*/%s: ' % cpu, r.stderr),
                  'exit %d, stderr %r' % (r.returncode, r.stderr[-500:]))
            db = Db(copy, status=3)
            for name, fn in parts:
                fn(db)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    if not parts:
        print('sql-check: no part in %s' % os.path.join(HERE, 'sql.d'))
        failed += 1
    for d in args.dirs:
        if not os.path.isdir(d):
            failed += 1
            print('FAIL   %s: not a directory (the guest kept no trace)' % d)
            continue
        for name, fn in parts:
            one('%s %s' % (name, d), fn, Db(d))
        if not args.no_damage:
            one('damaged copy of %s' % d, damaged, d)
    print('sql-check: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
