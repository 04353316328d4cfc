#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The writer's cost of a kernel stack on sched_switch, in one guest boot
# (only ratios mean anything under TCG): `perf bench sched pipe` (two
# threads ping-ponging over pipes, two context switches a round trip)
# with tracing off, with sched_switch on, and with sched_switch and its
# stack, in overwrite mode so that every event is written, never dropped.
# Prints usecs/op of each and the ratios.  Run as root in a guest:
#   tools/vm/vmtest -k KVER -- env BUILD=$BUILD tools/bench/stack-cost.sh
set -u
cd "$(dirname "$0")/../.."
readonly KVER=$(uname -r)
readonly RT=/sys/kernel/debug/ringtrace
readonly LOOPS=${LOOPS:-20000}
insmod "${BUILD:-/var/cache/ringtrace/build}/$KVER/ringtrace.ko" || exit 1
echo overwrite >"$RT/mode"
echo 0 >"$RT/events/enable"

run() {	# NAME: usecs/op, best of 3
	local best= v
	for _ in 1 2 3; do
		v=$(perf bench sched pipe -l "$LOOPS" 2>/dev/null |
			awk '/usecs\/op/ { print $1 }')
		[[ -z $best ]] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a < b) }' &&
			best=$v
	done
	echo "$1 $best"
}

{
	run off
	echo sched_switch >"$RT/set_event"
	echo 1 >"$RT/tracing_on"
	run switch
	echo sched_switch >"$RT/set_event_stack"
	run switch+stack
	echo 0 >"$RT/tracing_on"
	echo '!sched_switch' >"$RT/set_event_stack"
} | tee /tmp/stack-cost
awk '{ v[$1] = $2 } END {
	printf "sched_switch event: +%.2f us/op; with stack: +%.2f us/op (%.1fx the event alone)\n",
		v["switch"] - v["off"], v["switch+stack"] - v["off"],
		(v["switch+stack"] - v["off"]) / (v["switch"] - v["off"]) }' /tmp/stack-cost
rmmod ringtrace
