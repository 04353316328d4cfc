#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Events by name of a CTF trace, read through babeltrace2's Python
bindings (python3-bt2): what a user writes instead of `ringtrace sql`
when the trace is CTF.  host-sql.sh times it.  Prints "NAME COUNT" lines."""
import collections
import sys

import bt2

counts = collections.Counter()
for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(msg) is bt2._EventMessageConst:
        counts[msg.event.name] += 1
for name, n in counts.items():
    print(name, n)
