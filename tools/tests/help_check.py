#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""help_check: the options each command parses are the options it documents.

For every `ringtrace` command (a `struct command` in tools/cli/*.c) and for
ringtraced (daemon/options.c), from the source's `struct option` array and
its getopt short-option string:

  - every long option parsed is named in the command's --help (--NAME);
  - every short option parsed is offered in --help as an option line
    ("  -c, --cpus" or "  -c LIST");
  - every option line of --help ("  -x, --name", "      --name") names an
    option the command parses;
  - every long option of a `ringtrace` command is named, long or short,
    in the section of Documentation/ringtrace/cli.rst whose title names
    the command (ringtraced's --help is its reference: daemon/README.md
    says so).

A test per command; each failure says which option and where it is
missing.  PENDING lists a known gap in a file another branch owns this
stop; such a gap is said and not counted, and an entry that no longer
matches a gap fails, so that it is removed once fixed.

    tools/tests/help_check.py [-k NAME] [REPO]

REPO (default: this tree) holds the sources, cli.rst and the built
tools/ringtrace and daemon/ringtraced: give another tree's to check it
(how the test is shown to fail on a tree before its fixes).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (command, option) -> why it is not fixed here.
PENDING = {}

OPTION_RE = re.compile(r'\{\s*"([a-z][a-z0-9-]*)",\s*(?:no|required|optional)_argument,'
                       r'\s*NULL,\s*([^}]+?)\s*\}')
# An option line of --help: two to six blanks, then -x, --name or both.
HELP_LINE_RE = re.compile(r'^ {2,6}(?:-([A-Za-z]),? ?)?(?:--([a-z][a-z0-9-]*))?')


def parse_source(text, getopt_call):
    """The long options (name -> short char or None) and the short ones."""
    longs = {}
    m = re.search(r'struct option \w+\[\] = \{(.*?)\n\s*\};', text, re.S)
    if m:
        for name, val in OPTION_RE.findall(m.group(1)):
            c = re.fullmatch(r"'(.)'", val.strip())
            longs[name] = c.group(1) if c else None
    m = re.search(getopt_call + r'\(argc, argv, "([^"]*)"', text)
    shorts = set(re.sub(r'[+:]', '', m.group(1))) if m else set()
    return longs, shorts


def help_options(text):
    """What --help offers: its option lines' short and long names."""
    shorts, longs = set(), set()
    for line in text.splitlines():
        m = HELP_LINE_RE.match(line)
        if not m or not (m.group(1) or m.group(2)):
            continue
        if m.group(1):
            shorts.add(m.group(1))
        if m.group(2):
            longs.add(m.group(2))
    return shorts, longs


def rst_section(rst, name):
    """The text of cli.rst's sections whose title names the command."""
    lines = rst.splitlines()
    out, keep = [], False
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r'=+', lines[i + 1]) and line.strip():
            keep = name in re.findall(r'[a-z]+', line)
        if keep:
            out.append(line)
    return '\n'.join(out)


def in_doc(doc, opt, short):
    """--opt, or its short form -c as a word of its own, is in @doc."""
    if '--' + opt in doc:
        return True
    return bool(short) and re.search(r'(?<![\w-])-%s(?![\w-])' % re.escape(short), doc)


def check(name, longs, shorts, helptext, doc, docname):
    """The problems of one command, as (option, sentence) pairs."""
    bad = []
    hshorts, hlongs = help_options(helptext)
    for opt in sorted(longs):
        short = longs[opt] if longs[opt] in shorts else None
        if '--' + opt not in helptext:
            bad.append(('--' + opt, 'parsed, not in --help'))
        if doc is not None and opt != 'help' and not in_doc(doc, opt, short):
            bad.append(('--' + opt, 'parsed, in neither form in ' + docname))
    for c in sorted(shorts):
        if c not in hshorts:
            bad.append(('-' + c, 'parsed, not an option line of --help'))
    for c in sorted(hshorts - shorts):
        bad.append(('-' + c, 'an option line of --help, not parsed'))
    for opt in sorted(hlongs - set(longs)):
        bad.append(('--' + opt, 'an option line of --help, not parsed'))
    return bad


def commands(repo):
    """(name, long options, short options, help text, doc, doc's name) each."""
    cli = os.path.join(repo, 'tools', 'ringtrace')
    with open(os.path.join(repo, 'Documentation', 'ringtrace', 'cli.rst')) as f:
        rst = f.read()
    for path in sorted(glob.glob(os.path.join(repo, 'tools', 'cli', '*.c'))):
        with open(path) as f:
            text = f.read()
        names = re.findall(r'const struct command cmd_\w+ = \{\s*\.name = "([a-z]+)"', text)
        if not names:
            continue
        longs, shorts = parse_source(text, 'cmd_getopt')
        for name in names:
            r = subprocess.run([cli, name, '--help'], capture_output=True, text=True)
            yield (name, longs, shorts, r.stdout, rst_section(rst, name),
                   'cli.rst\'s section of ' + name)
    with open(os.path.join(repo, 'daemon', 'options.c')) as f:
        longs, shorts = parse_source(f.read(), 'getopt_long')
    r = subprocess.run([os.path.join(repo, 'daemon', 'ringtraced'), '--help'],
                       capture_output=True, text=True)
    yield 'ringtraced', longs, shorts, r.stdout, None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-k', help='only commands whose name contains this')
    ap.add_argument('repo', nargs='?', default=os.path.dirname(os.path.dirname(HERE)))
    args = ap.parse_args()

    for b in ('tools/ringtrace', 'daemon/ringtraced'):
        if not os.access(os.path.join(args.repo, b), os.X_OK):
            print('help: %s missing: run make userspace' % b)
            print('help: 0 passed, 1 failed')
            return 1
    passed = failed = 0
    seen = set()
    for name, longs, shorts, helptext, doc, docname in commands(args.repo):
        if args.k and args.k not in name:
            continue
        ok = bool(helptext) and bool(longs)
        if not ok:
            print('FAIL   %s: no --help text or no options parsed' % name)
        for opt, why in check(name, longs, shorts, helptext, doc, docname):
            if (name, opt) in PENDING:
                seen.add((name, opt))
                print('note   %s %s: %s (pending: %s)' % (name, opt, why, PENDING[name, opt]))
                continue
            print('FAIL   %s %s: %s' % (name, opt, why))
            ok = False
        if ok:
            print('ok     %s (%d options)' % (name, len(longs)))
            passed += 1
        else:
            failed += 1
    for name, opt in sorted(set(PENDING) - seen):
        if not args.k or args.k in name:
            print('FAIL   PENDING (%s, %s) matches no gap any more: remove it' % (name, opt))
            failed += 1
    print('help: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
