#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes each value to a control file through its own open, in one write(2).

    write_each.py [--read] FILE VALUE...

For the guest suites' refusal checks (probe_events, sample_hz): bash's
echo or printf may split a value at a newline, and one python writes
them all where a process per value costs a second each under the debug
kernel's KASAN.  Each value's file is closed before the next is opened:
what one left behind is still there for the next.

One line per value, in order: "ERRNO|strerror|BEFORE|AFTER", ERRNO the
error's name (EINVAL) or OK when the write was taken; with --read,
BEFORE and AFTER are FILE's content (stripped) before and after the
write, else empty.  Exit status 0 if every write was taken, 1 if one
was refused.
"""
import errno
import os
import sys


def content(path):
    with open(path) as f:
        return f.read().strip()


def main():
    args = sys.argv[1:]
    read = args[:1] == ["--read"]
    if read:
        args = args[1:]
    if len(args) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    path, values = args[0], args[1:]
    refused = False
    for value in values:
        before = content(path) if read else ""
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, value.encode())
            name, text = "OK", ""
        except OSError as e:
            name, text = errno.errorcode.get(e.errno, str(e.errno)), e.strerror
            refused = True
        finally:
            os.close(fd)
        after = content(path) if read else ""
        print("%s|%s|%s|%s" % (name, text, before, after), flush=True)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
