# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "kwalk" of tools/tests/profile_guest.sh: a tracepoint probe's
# kernel stack when its own return address is not the caller's, the one
# case where module/stack.c's walk cannot start at the probe's caller
# (rtr_kstack_save(), rtr_ret_hooked()).  The function graph tracer
# hooks ringtrace's sched_switch probe (set_ftrace_filter): the probe
# returns through return_to_handler.  Then, as part ustack_ftrace does,
# an ftrace instance records sched_switch with options/stacktrace beside
# `record --stack sched_switch -F` of the frame-pointer workload.
# Checks, for the sleeper (main -> c -> d, 100 sleeps):
#   - the graph tracer did trace the probe
#   - both saw at least 90 of its kernel stacks, and the i-th is the same
#     in both, frame by frame (function, offset, module; a function's
#     aliases are one name): none starts at return_to_handler

readonly KWALK_T=/sys/kernel/tracing
readonly KWALK_INST=$KWALK_T/instances/rt-kwalk

profile_kwalk() {
	local wl=$REPO/tools/tests/ustack-workload d=$W tid nrt nft neq hits on
	declare -F ustack_ftrace_compare >/dev/null ||
		. "$REPO/tools/tests/profile.d/ustack_ftrace.sh"
	# The graph tracer writes to the top-level buffer: on, whatever an
	# earlier suite left (cli_guest's ftrace comparison turns it off).
	on=$(<"$KWALK_T/tracing_on")
	if ! { echo rtr_probe_sched_switch >"$KWALK_T/set_ftrace_filter" &&
	       echo 1 >"$KWALK_T/tracing_on" &&
	       echo function_graph >"$KWALK_T/current_tracer" &&
	       mkdir "$KWALK_INST"; } 2>"$d/kwalk.err"; then
		check "function_graph on ringtrace's sched_switch probe, an instance ($(<"$d/kwalk.err"))" false
		echo nop >"$KWALK_T/current_tracer"
		echo >"$KWALK_T/set_ftrace_filter"
		echo "$on" >"$KWALK_T/tracing_on"
		return
	fi
	echo 'prev_comm == "ustack-workload"' >"$KWALK_INST/events/sched/sched_switch/filter"
	echo 1 >"$KWALK_INST/options/stacktrace"
	echo 1 >"$KWALK_INST/options/sym-offset"
	echo 1 >"$KWALK_INST/events/sched/sched_switch/enable"
	setup "record --stack sched_switch -F -- ustack-workload, its probe graph-traced, ftrace's stacktrace beside" \
		"$CLI" record --stack sched_switch -F -o "$d/kwalk-rec" -- \
		"$wl" 100 2000000 >"$d/kwalk-wl.out" 2>"$d/kwalk-record.err"
	echo 0 >"$KWALK_INST/events/sched/sched_switch/enable"
	cat "$KWALK_INST/trace" >"$d/kwalk-ftrace.txt"
	echo 0 >"$KWALK_INST/options/stacktrace"
	rmdir "$KWALK_INST"
	hits=$(grep -c 'rtr_probe_sched_switch' "$KWALK_T/trace")
	echo nop >"$KWALK_T/current_tracer"
	echo >"$KWALK_T/set_ftrace_filter"
	echo "$on" >"$KWALK_T/tracing_on"
	check "function_graph traced ringtrace's sched_switch probe ($hits lines)" \
		[ "${hits:-0}" -gt 0 ]
	[[ -d $d/kwalk-rec ]] || { cat "$d/kwalk-record.err"; return; }
	"$CLI" report "$d/kwalk-rec" >"$d/kwalk-report" 2>"$d/kwalk-report.err"
	tid=$(awk '$1 == "pid" { print $4 }' "$d/kwalk-wl.out")
	ustack_ftrace_canon "$d/kwalk-report" "$d/kwalk-ftrace.txt"
	read -r nrt nft neq < <(ustack_ftrace_compare kernel "$d/kwalk-report" \
		"$d/kwalk-ftrace.txt" "$tid" "$d/kwalk-wl.out" 2>"$d/kwalk.diff")
	note "sleeper $tid: kernel stacks, probe graph-traced: $nrt by ringtrace, $nft by ftrace, $neq the same $(<"$d/kwalk.diff")"
	check "probe graph-traced: both saw >= 90 of the sleeper's kernel stacks (${nrt:-?}, ${nft:-?})" \
		[ "${nrt:-0}" -ge 90 -a "${nft:-0}" -ge 90 ]
	check "probe graph-traced: the same kernel frames, switch-out by switch-out (${neq:-?} of ${nrt:-?})" \
		[ "${neq:--1}" -eq "${nrt:-0}" -a "${nrt:-0}" -eq "${nft:-1}" ]
}
