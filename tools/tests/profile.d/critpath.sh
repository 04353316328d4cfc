# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "critpath" of tools/tests/profile_guest.sh: the recording of the
# critical-path test (issue 31), checked on the host, not here.
# critpath-workload's cp-A reads a pipe cp-B writes after a futex cp-C
# wakes after sleeping 100 ms; `record -e sched,syscalls,irq,softirq` of
# the whole system while it runs (~1 s under TCG): the idle task's
# switches say an interrupt on an idle CPU woke cp-C, the softirq events
# that a softirq did (PREEMPT_RT runs the timer's in ktimers/N).  The trace and the workload's tids go to the
# results share ($RT_VM_OUT/critpath); tools/run-tests then runs
# tools/tests/sql_check.py --parts critpath on it, whose sql.d/critpath.py
# finds cp-A's critical path over its read through cp-B to cp-C's sleep.
# Checks here: the recording exits 0 and the trace reaches the share.

profile_critpath() {
	local d=$W/critpath
	mkdir -p "$d"
	setup "critpath: record -e sched,syscalls,irq,softirq -- critpath-workload" \
		"$CLI" record -e sched,syscalls,irq,softirq -o "$d/rec" -- \
		"$REPO/tools/tests/critpath-workload" \
		>"$d/record.out" 2>"$d/record.err" || { cat "$d/record.err"; return; }
	sed 's/^/# /' "$d/record.out"
	check "critpath: the workload printed its three threads and its sleep" \
		test "$(grep -cE "^([ABC] [0-9]+|sleep [0-9]+ [0-9]+)\$" "$d/record.out")" -eq 4
	if [[ -n ${RT_VM_OUT:-} ]]; then
		mkdir -p "$RT_VM_OUT/critpath" &&
			cp -a "$d/rec" "$RT_VM_OUT/critpath/rec" &&
			cp "$d/record.out" "$RT_VM_OUT/critpath/"
		check "critpath: the trace goes to the results share" test $? -eq 0
	fi
}
