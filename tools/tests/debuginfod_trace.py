#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A trace whose user stacks ran in a stripped binary, for debuginfod-host.sh.

  debuginfod_trace.py DIR

Builds in DIR test_decoder.py's app (main -> a -> b, gcc -g), splits its
debug file off into DIR/srv/app.debug (objcopy --only-keep-debug), strips
the binary into DIR/srv/app with a .gnu_debuglink, and writes the trace
DIR/trace: test_decoder.py's app_events() (a switch-out with kernel and
user stacks, two samples with user stacks), the user_mmap naming the
stripped binary.  Prints the build-id.  `ringtrace symbols DIR/trace`
then stores the stripped binary: the store alone names no user frame.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_decoder as td  # noqa: E402  (its trace writers and app)


class Ctx:
    def __init__(self, tmp):
        self.tmp = tmp


def main():
    d = sys.argv[1]
    srv = os.path.join(d, 'srv')
    os.makedirs(srv, exist_ok=True)
    app = td.build_elf(Ctx(d), 'app')
    debug, stripped = os.path.join(srv, 'app.debug'), os.path.join(srv, 'app')
    for cmd in (['objcopy', '--only-keep-debug', app['path'], debug],
                ['strip', '--strip-all', '-o', stripped, app['path']],
                ['objcopy', '--add-gnu-debuglink=' + debug, stripped]):
        subprocess.run(cmd, check=True)
    app['path'] = stripped
    td.user_trace(os.path.join(d, 'trace'), td.app_events(app))
    print(app['bid'].hex())


if __name__ == '__main__':
    main()
