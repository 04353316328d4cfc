#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mix-metadata.py FILE: the TSDL of rt-seekgen --mix's traces (gentrace's
kernel events, syscall ids named by SYSCALL_ENUM) written to FILE; the
sql and ship benchmarks' generated traces share it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests'))
import test_decoder as td  # noqa: E402

meta = td.gentrace.metadata(bytes(range(16, 32)), 1700000000, 500000000, td.KERNEL_EVENTS)
with open(sys.argv[1], 'w') as f:
    f.write(meta.replace('fields := struct { int32_t id;',
                         'fields := struct { %s' % td.SYSCALL_ENUM))
