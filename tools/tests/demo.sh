#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The README's first command, as a new user (and CI) runs it: `tools/demo`
# exits 0 and shows everything it promises -- the --stat report (all of
# it: the last section too), cat's system calls with their threads, the
# workload's marker as babeltrace2 prints it, the profile of ustack-workload
# with its user frames named from the trace's own symbol store (spin in the
# top functions, ...;a;b;spin folded, main;c;d where the sleeper waited),
# and where the trace, its exports and the profile are, on the host.  Ends
# with "demo: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. tools/tests/check.sh

log=$(mktemp)
tools/demo >"$log" 2>&1
rc=$?
check "tools/demo exits 0 (got $rc)" test $rc -eq 0
[[ $rc -eq 0 ]] || tail -n 20 "$log" | sed 's/^/# /'
check "shows report --stat, up to its last section" \
	grep -q '^wakeup to run latency' "$log"
check "shows cat's system calls, each with its thread" \
	grep -qE '^\[[0-9.]+\] cpu[0-9]+ cat-[0-9]+ syscall_entry: ' "$log"
check "shows the marker as babeltrace2 prints it" \
	grep -qE 'ringtrace_marker: .*demo: hello from the ringtrace demo' "$log"
check "the profile's top functions name spin, of the workload" \
	grep -qE '^ +[0-9]+ +[0-9]+  spin \(ustack-workload\)$' "$log"
check "the profile's folded stacks name the user frames: ...;a;b;spin" \
	grep -qE '^ustack-workload;(.*;)?a;b;spin [0-9]+$' "$log"
check "the sleeper waited in main;c;d (--folded --off-cpu)" \
	awk '/^=== where its threads waited/ { s = 1; next } /^$/ { s = 0 }
	     s && /^ustack-workload;(.*;)?main;c;d [0-9]+$/ { f = 1 }
	     END { exit !f }' "$log"
trace=$(sed -nE 's/^trace: ([^ ]+) .*/\1/p' "$log")
check "says where the trace is ($trace)" test -n "$trace"
tools/ringtrace check "$trace" >/dev/null
check "the trace is on the host and reads" test $? -eq 0
check "the CTF copy is on the host and babeltrace2 reads it" \
	babeltrace2 "${trace%/trace}/ctf" -o dummy
check "the Perfetto exports are on the host" \
	test -s "${trace%/trace}/trace.pftrace" -a -s "${trace%/trace}/trace.json" \
	-a -s "${trace%/trace}/trace.systrace"
check "the profile is on the host, with its symbol store" \
	test -d "${trace%/trace}/profile/.ringtrace-buildid"
rm -f "$log"
check_summary demo
