#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write export_lttng_syscalls.h: x86_64's system calls as LTTng names and
types their events (export -f lttng, tools/cli/export_lttng.c).

    gen-lttng-syscalls.py SOURCE > tools/cli/export_lttng_syscalls.h

SOURCE is a Linux source tree or its tarball (Debian's
/usr/src/linux-source-6.12.tar.xz, which tools/install-deps installs).
From it:

  arch/x86/entry/syscalls/syscall_64.tbl
      every 64-bit system call: the name <asm/unistd.h> gives it (the
      labels of ringtrace's syscall_entry id enum) and its entry point;
      LTTng names its events after the entry point minus "sys_"
      (stat -> newstat, sendfile -> sendfile64);
  SYSCALL_DEFINEn(name, type, arg, ...) in the C sources
      each entry point's arguments, names and C types as ftrace and LTTng
      take them.

Each argument becomes what LTTng's generated x86_64 tables make of it:
an integer of its C type's size and sign, a pointer a 64-bit unsigned
integer, a `char *` whose name has name, file, path, root, put_old or
type in it a string.  Entry events carry the arguments the kernel reads
(integers, strings, pointers to const), exit events `ret` and the
pointers it may write (the others).  An argument type not known below
stops the script: say what it is rather than guess.
"""

import os
import re
import sys
import tarfile

# C type (qualifiers and __user dropped) -> LTTng's integer type on x86_64.
INTEGERS = {
    'int': 'S32', 'pid_t': 'S32', 'key_t': 'S32', 'mqd_t': 'S32',
    'clockid_t': 'S32', 'timer_t': 'S32', 'key_serial_t': 'S32',
    'rwf_t': 'S32', '__s32': 'S32',
    'unsigned int': 'U32', 'unsigned': 'U32', 'u32': 'U32', '__u32': 'U32',
    'uid_t': 'U32', 'gid_t': 'U32', 'qid_t': 'U32',
    'enum landlock_rule_type': 'U32',
    'long': 'S64', 'off_t': 'S64', 'loff_t': 'S64',
    'unsigned long': 'U64', 'size_t': 'U64', 'aio_context_t': 'U64',
    'u64': 'U64', '__u64': 'U64',
    'umode_t': 'U16',
}
# Typedefs that are pointers.
POINTERS = {'cap_user_header_t', 'cap_user_data_t'}
STRING_NAME = re.compile(r'name|file|path|root|put_old|type')
# Definitions that are not x86_64's (user-mode Linux, 32-bit, no-MMU, stubs).
NOT_X86_64 = re.compile(r'^arch/(?!x86/)|^arch/x86/um/|_32\.c$|nommu\.c$|posix-stubs\.c$')
DEFINE = re.compile(r'^[ \t]*SYSCALL_DEFINE([0-6])\(', re.M)


def sources(src):
    """(path, text) of the top Makefile (the version), the table and every
    C file that may define a system call."""
    if os.path.isdir(src):
        for root, _, files in os.walk(src):
            for f in files:
                p = os.path.join(root, f)
                rel = os.path.relpath(p, src)
                if rel == 'Makefile' or f.endswith('.c') or rel.endswith('syscall_64.tbl'):
                    yield rel, open(p, errors='replace').read()
        return
    with tarfile.open(src) as tar:
        for m in tar:
            rel = m.name.split('/', 1)[-1]
            if m.isfile() and (rel == 'Makefile' or rel.endswith('.c') or
                               rel.endswith('syscall_64.tbl')):
                yield rel, tar.extractfile(m).read().decode(errors='replace')


def definitions(path, text):
    """(name, [(type, arg)]) of each SYSCALL_DEFINE in the file, in order."""
    for m in DEFINE.finditer(text):
        i, depth = m.end(), 1
        while depth and i < len(text):
            depth += {'(': 1, ')': -1}.get(text[i], 0)
            i += 1
        words = [' '.join(w.split()) for w in text[m.end():i - 1].split(',')]
        pairs = list(zip(words[1::2], words[2::2]))
        if len(pairs) != int(m.group(1)):
            sys.exit('%s: SYSCALL_DEFINE%s(%s): cannot read its arguments'
                     % (path, m.group(1), words[0]))
        yield words[0], pairs


def lttng_arg(sc, ctype, name):
    """(name, type, out) of one argument."""
    t = ' '.join(w for w in ctype.replace('*', ' * ').split()
                 if w not in ('__user', '__force'))
    pointer = '*' in t or t.replace('const ', '') in POINTERS
    if not pointer:
        base = t.replace('const ', '')
        if base not in INTEGERS:
            sys.exit('%s: argument %s: type %r unknown: add it to INTEGERS'
                     % (sc, name, ctype))
        return name, INTEGERS[base], False
    if t.replace('const ', '') == 'char *' and STRING_NAME.search(name):
        return name, 'STR', False
    # The pointee is const: the kernel only reads it.
    pointee_const = t.startswith('const ') and t.count('*') >= 1
    return name, 'U64', not pointee_const


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: gen-lttng-syscalls.py LINUX-SOURCE-DIR-OR-TARBALL')
    table, defs, version = None, {}, None
    for path, text in sources(sys.argv[1]):
        if path == 'arch/x86/entry/syscalls/syscall_64.tbl':
            table = text
            continue
        if path == 'Makefile':
            version = text
        if NOT_X86_64.search(path):
            continue
        for name, args in definitions(path, text):
            # kernel/fork.c defines clone once per CONFIG_CLONE_BACKWARDS*
            # variant; x86_64 has none of them: the last one (#else).
            defs[name] = args
    if table is None:
        sys.exit('%s: no arch/x86/entry/syscalls/syscall_64.tbl' % sys.argv[1])
    rows = []
    for line in table.splitlines():
        f = line.split()
        if len(f) < 4 or f[0].startswith('#') or f[1] == 'x32':
            continue
        name, entry = f[2], re.sub(r'^__x64_', '', f[3])
        if not entry.startswith('sys_') or entry == 'sys_ni_syscall':
            continue
        lname = entry[4:]
        if lname not in defs:
            sys.exit('%s (%s): no SYSCALL_DEFINE found' % (name, entry))
        rows.append((name, lname, [lttng_arg(name, t, a) for t, a in defs[lname]]))
    rows.sort()
    kver = '.'.join(re.search(r'^%s = (\S*)$' % k, version or '', re.M).group(1)
                    if re.search(r'^%s = (\S*)$' % k, version or '', re.M) else '?'
                    for k in ('VERSION', 'PATCHLEVEL', 'SUBLEVEL'))
    out = ['/* SPDX-License-Identifier: GPL-2.0 */',
           '/*',
           ' * Generated by tools/cli/gen-lttng-syscalls.py from Linux %s\'s' % kver,
           ' * syscall_64.tbl and SYSCALL_DEFINEs:',
           ' * x86_64\'s system calls by <asm/unistd.h> name, their LTTng event name',
           ' * and arguments.  Included by export_lttng.c only; do not edit.',
           ' */',
           '']
    for name, lname, args in rows:
        a = ', '.join('{ "%s", L_%s, %s }' % (n, t, 'SC_OUT' if o else 'SC_IN')
                      for n, t, o in args)
        out.append('\t{ "%s", "%s", %d, { %s } },' % (name, lname, len(args), a)
                   if args else '\t{ "%s", "%s", 0, { } },' % (name, lname))
    print('\n'.join(out))


if __name__ == '__main__':
    main()
