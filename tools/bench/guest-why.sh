#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-why.sh OUTDIR stack|kprobe|filter [N] [ROUNDS]
#
# What the tools that say *why* cost the traced code (issue 21): a
# sched_switch that carries its kernel stack, and a kprobe hit; and what
# an in-kernel filter costs (issue 22): an event it drops, one it keeps.  Run by
# guest-bench.sh in its guest with ringtrace.ko loaded (run-bench boots
# these parts under tcg,thread=single: every session installs and removes
# probes); not meant for the host.  Every tracer is a flight recorder
# here -- overwrite mode, 1 MiB of buffer per CPU, nobody consuming
# while the load runs -- so what is timed is the writer alone, the same
# work for each: ringtrace (tracing_on, no ringtraced), ftrace (tracefs,
# overwrite, no reader), perf record --overwrite (its backward ring is
# read only when perf stops), LTTng in a snapshot session (an overwrite
# channel that no consumer drains).
#
# stack: `perf bench sched pipe -l N` (default 10000 round trips; two
# threads pinned to CPU 0 ping-pong over pipes: two context switches a
# round trip, each a sched_switch from one thread to the other), untraced
# and with sched_switch recorded by
#
#   ringtrace        set_event sched_switch
#   ringtrace+stack  ... and set_event_stack sched_switch (stack_depth at
#                    its default, 32 frames)
#   ftrace           events/sched/sched_switch/enable
#   ftrace+trigger   ... and `stacktrace` in its trigger file: a stack for
#                    this event only, as ringtrace's set_event_stack
#   ftrace+option    ... no trigger, options/stacktrace on: a stack after
#                    every event of the instance (the same here, with only
#                    sched_switch on; a second path through ftrace)
#   perf             perf record --overwrite -a -e sched:sched_switch
#   perf+stack       ... -g --kernel-callchains (the kernel's part of
#                    the call chain only, no user stack)
#   lttng            lttng enable-event -k sched_switch in an overwrite
#                    channel of a snapshot session
#   lttng+stack      ... with lttng add-context -k -t callstack-kernel
#
# kprobe: rt-sysloop makes N (default 300000) getppid() calls on CPU 0,
# untraced and with __x64_sys_getppid kprobed at its entry by
#
#   ringtrace        probe_events p:__x64_sys_getppid (records the six
#                    argument registers)
#   ftrace           kprobe_events p:rtbench/getppid __x64_sys_getppid with
#                    the same six registers fetched as u64
#   perf             perf probe of the same (it writes kprobe_events too)
#                    + perf record --overwrite -a -e probe:rtbench_getppid
#   lttng            lttng enable-event -k --probe=__x64_sys_getppid (its
#                    kprobe events record no argument, only the address)
#
# filter: rt-sysloop makes N (default 300000) getppid() calls on CPU 0,
# untraced and with the system call entry recorded (every call's), with
# and without a predicate on its id, by
#
#   ringtrace        set_event syscall_entry
#   ringtrace+drop   ... and events/syscall_entry/filter 'id == openat':
#                    every getppid() entry is tested and dropped
#   ringtrace+pass   ... 'id == getppid': tested and recorded
#   ftrace           events/raw_syscalls/sys_enter/enable
#   ftrace+drop      ... and its filter file 'id == 257' (openat on
#                    x86-64: ftrace compares the number)
#   ftrace+pass      ... 'id == 110' (getppid)
#   ringtrace+trig   no filter, and events/syscall_entry/trigger
#                    'id == openat': armed, tested on every entry, never
#                    firing (the flight recorder's always-on trigger)
#   ftrace+trig      no filter, and sys_enter's trigger
#                    'snapshot if id == 257': ftrace's equivalent
#   perf             perf record --overwrite -a -e raw_syscalls:sys_enter
#   perf+drop/+pass  ... --filter with the same predicates (perf hands
#                    them to ftrace's filter code, attached to its event)
#
# The predicate is the same in each: one integer comparison on the call's
# number.  LTTng is not in this part: its system call events carry the
# call's arguments, not its number, so no LTTng filter expresses this
# predicate (enabling the getppid event alone is a selection, not a
# filter: nothing is evaluated per event).
#
# Every stack comes from the same unwinder: the kernel's (ORC on Debian's
# kernels), through stack_trace_save() (ringtrace, ftrace, LTTng) or
# perf's callchain walk; what differs is what each does around it and
# stores.
#
# Each tracer puts the same kprobe on the same address: at a function's
# entry on x86-64 a kprobe rides the function's ftrace call site
# (KPROBES_ON_FTRACE) rather than an int3; OUTDIR/why/kprobes-list.txt
# keeps debugfs kprobes/list as each tracer had it ([FTRACE] marks those).
#
# ROUNDS (default 3) times: for each configuration, in an order that
# rotates each round, one untraced run, then the tracer starts, one timed
# run, the tracer stops.  In round 0, after the timed run, each tracer's
# buffer is read for its bytes per event (sched_switch or kprobe hit,
# with its stack where it has one): ringtrace `ringtrace snapshot` (the
# content bytes it delivered, from stats), ftrace per_cpu/*/stats (bytes
# and entries in the buffer), perf the perf.data it writes when it stops,
# LTTng `lttng snapshot record`; each divided by the events of that kind
# it holds (packet and page headers included).
#
# Results in OUTDIR/why.txt:
#   run part=P config=C round=R ns=X     ns per switch (stack: usecs/op
#                                        x 1000 / 2) or per call (kprobe)
#   size part=P config=C bytes=B events=N
#   unavailable part=P tracer=T reason=WORDS_JOINED_BY_UNDERSCORES
# Raw outputs in OUTDIR/why/.

set -euo pipefail
shopt -s inherit_errexit

(($# >= 2 && $# <= 4)) || { echo "usage: $0 OUTDIR stack|kprobe|filter [N] [ROUNDS]" >&2; exit 2; }
out=$1 part=$2 rounds=${4:-3}
case $part in
stack) n=${3:-10000} ;;
kprobe|filter) n=${3:-300000} ;;
*) echo "$0: part must be stack, kprobe or filter, got '$part'" >&2; exit 2 ;;
esac
RT=/sys/kernel/debug/ringtrace
T=/sys/kernel/tracing
REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
CLI=$REPO/tools/ringtrace
LOOP=$REPO/tools/bench/rt-sysloop
WORK=/tmp/why			# the guest's tmpfs
RAW=$out/why
LAST_CPU=$(($(nproc) - 1))
FUNC=__x64_sys_getppid
# The six argument registers of x86-64, as regs_get_kernel_argument()
# reads them for ringtrace's arg0..arg5.
ARGS="arg0=%di:u64 arg1=%si:u64 arg2=%dx:u64 arg3=%cx:u64 arg4=%r8:u64 arg5=%r9:u64"
# filter: the predicates, by name for ringtrace, by number for ftrace and
# perf (this machine's numbers, from the uapi header).
UNISTD=/usr/include/x86_64-linux-gnu/asm/unistd_64.h
nr() { awk -v n="__NR_$1" '$1 == "#define" && $2 == n { print $3; exit }' "$UNISTD"; }
predicate() {	# CONFIG NAMES|NUMBERS
	local call
	case $1 in
	*+drop | *+trig) call=openat ;;
	*+pass) call=getppid ;;
	*) return 0 ;;
	esac
	if [[ $2 == names ]]; then
		echo "id == $call"
	else
		echo "id == $(nr "$call")"
	fi
}

say() { echo "guest-bench: $part: $*"; }
fail() { say "$*"; exit 1; }

put() {
	printf '%s\n' "$2" >"$1" || fail "cannot write '$2' to $1"
}

# load CONFIG ROUND: one timed run of the part's load, into why.txt.
load() {
	local v line
	if [[ $part == stack ]]; then
		line=$(taskset -c 0 perf bench sched pipe -l "$n" 2>&1) ||
			fail "perf bench sched pipe failed: $line"
		v=$(awk '/usecs\/op/ { printf "%.1f", $1 * 1000 / 2 }' <<<"$line")
	else
		line=$("$LOOP" -c 0 -n "$n") || fail "rt-sysloop failed"
		v=$(sed 's/.*ns_per_call=\([0-9.]*\).*/\1/' <<<"$line")
	fi
	[[ -n $v ]] || fail "no time in: $line"
	echo "run part=$part config=$1 round=$2 ns=$v" >>"$out/why.txt"
	say "$1 round $2: $v ns"
}

size_line() {	# CONFIG BYTES EVENTS
	echo "size part=$part config=$1 bytes=$2 events=$3" >>"$out/why.txt"
	say "$1: $2 bytes, $3 events in the buffer"
}

kprobes_list() {	# CONFIG: which kprobes exist, and how they hit
	{ echo "== $1"; cat /sys/kernel/debug/kprobes/list 2>&1; } >>"$RAW/kprobes-list.txt"
}

# --- ringtrace: tracing_on, no daemon --------------------------------------
rt_on() {	# CONFIG
	put "$RT/tracing_on" 0
	put "$RT/clear" 1
	echo 0 >"$RT/events/enable"
	if [[ $part == stack ]]; then
		put "$RT/set_event" sched_switch
		[[ $1 == *+stack ]] && put "$RT/set_event_stack" sched_switch
	elif [[ $part == filter ]]; then
		put "$RT/set_event" syscall_entry
		case $1 in
		*+trig) put "$RT/events/syscall_entry/trigger" "$(predicate "$1" names)" ;;
		*+*) put "$RT/events/syscall_entry/filter" "$(predicate "$1" names)" ;;
		esac
	else
		exec 3<>"$RT/probe_events"
		printf 'p:%s\n' "$FUNC" >&3 || fail "ringtrace refused p:$FUNC"
	fi
	put "$RT/tracing_on" 1
}

rt_size() {	# CONFIG: snapshot the buffers, count what they held
	local dir=$WORK/rt-snap ev bytes name
	rm -rf "$dir"
	"$CLI" snapshot -o "$dir" >"$RAW/$1-snapshot.out" 2>&1 ||
		fail "ringtrace snapshot failed: $(tail -3 "$RAW/$1-snapshot.out")"
	bytes=$(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^bytes=/) { sub(/bytes=/, "", $i); s += $i } }
		END { print s + 0 }' "$RT/stats")
	"$CLI" report --stat "$dir" >"$RAW/$1-stat.txt" 2>&1 ||
		fail "ringtrace report --stat failed: $(tail -3 "$RAW/$1-stat.txt")"
	name=sched_switch
	[[ $part == kprobe ]] && name=kprobe_$FUNC
	[[ $part == filter ]] && name=syscall_entry
	ev=$(awk -v n="$name" '$1 == n { print $2; exit }' "$RAW/$1-stat.txt")
	size_line "$1" "$bytes" "${ev:-0}"
	rm -rf "$dir"
}

rt_off() {	# CONFIG
	put "$RT/tracing_on" 0
	if [[ $part == stack ]]; then
		[[ $1 == *+stack ]] && put "$RT/set_event_stack" '!sched_switch'
		echo 0 >"$RT/events/enable"
	elif [[ $part == filter ]]; then
		put "$RT/events/syscall_entry/filter" none
		put "$RT/events/syscall_entry/trigger" none
		echo 0 >"$RT/events/enable"
	else
		exec 3>&-	# its release removes the probe
	fi
}

session_ringtrace() {	# CONFIG ROUND
	rt_on "$1"
	((!$2)) && [[ $part == kprobe ]] && kprobes_list "$1"
	load "$1" "$2"
	((!$2)) && rt_size "$1"
	rt_off "$1"
}

# --- ftrace: tracefs, overwrite, nobody reading ---------------------------
ft_on() {	# CONFIG
	put "$T/tracing_on" 0
	put "$T/options/overwrite" 1
	put "$T/buffer_size_kb" 1024
	: >"$T/trace"
	if [[ $part == stack ]]; then
		case $1 in
		*+trigger) put "$T/events/sched/sched_switch/trigger" stacktrace ;;
		*+option) put "$T/options/stacktrace" 1 ;;
		esac
		put "$T/events/sched/sched_switch/enable" 1
	elif [[ $part == filter ]]; then
		case $1 in
		*+trig) put "$T/events/raw_syscalls/sys_enter/trigger" "snapshot if $(predicate "$1" numbers)" ;;
		*+*) put "$T/events/raw_syscalls/sys_enter/filter" "$(predicate "$1" numbers)" ;;
		esac
		put "$T/events/raw_syscalls/sys_enter/enable" 1
	else
		echo "p:rtbench/getppid $FUNC $ARGS" >>"$T/kprobe_events" ||
			fail "kprobe_events refused p:$FUNC"
		put "$T/events/rtbench/getppid/enable" 1
	fi
	put "$T/tracing_on" 1
}

ft_size() {	# CONFIG
	local bytes entries
	read -r bytes entries <<<"$(cat "$T"/per_cpu/cpu*/stats | awk '
		$1 == "bytes:" { b += $2 } $1 == "entries:" { e += $2 }
		END { printf "%d %d\n", b, e }')"
	cat "$T"/per_cpu/cpu*/stats >"$RAW/$1-stats.txt"
	# With a stack, each event is followed (option) or preceded (trigger)
	# by its stack entry: two entries an event.
	[[ $part == stack && $1 == *+* ]] && entries=$((entries / 2))
	size_line "$1" "$bytes" "$entries"
}

ft_off() {	# CONFIG
	put "$T/tracing_on" 0
	if [[ $part == stack ]]; then
		put "$T/events/sched/sched_switch/enable" 0
		case $1 in
		*+trigger) put "$T/events/sched/sched_switch/trigger" '!stacktrace' ;;
		*+option) put "$T/options/stacktrace" 0 ;;
		esac
	elif [[ $part == filter ]]; then
		put "$T/events/raw_syscalls/sys_enter/enable" 0
		put "$T/events/raw_syscalls/sys_enter/filter" 0
		[[ $1 == *+trig ]] && put "$T/events/raw_syscalls/sys_enter/trigger" '!snapshot'
	else
		put "$T/events/rtbench/getppid/enable" 0
		echo '-:rtbench/getppid' >>"$T/kprobe_events" || fail "cannot remove rtbench/getppid"
	fi
	: >"$T/trace"
}

session_ftrace() {	# CONFIG ROUND
	ft_on "$1"
	((!$2)) && [[ $part == kprobe ]] && kprobes_list "$1"
	load "$1" "$2"
	put "$T/tracing_on" 0	# stats of what the load wrote
	((!$2)) && ft_size "$1"
	ft_off "$1"
}

# --- perf record --overwrite ----------------------------------------------
session_perf() {	# CONFIG ROUND
	local dir=$WORK/perf ppid ack rc ev raw=$RAW/$1-$2
	local -a ev_args
	mkdir -p "$dir" "$raw"
	rm -f "$dir"/*
	mkfifo "$dir/ctl" "$dir/ack"
	if [[ $part == stack ]]; then
		ev_args=(-e sched:sched_switch)
		[[ $1 == *+stack ]] && ev_args+=(-g --kernel-callchains)
	elif [[ $part == filter ]]; then
		ev_args=(-e raw_syscalls:sys_enter)
		[[ $1 == *+* ]] && ev_args+=(--filter "$(predicate "$1" numbers)")
	else
		# perf probe writes its line into kprobe_events; made and
		# removed with each session, so that no other tracer's kprobe
		# shares the address with a disabled one of perf's.
		perf probe -q -a "rtbench_getppid=$FUNC $ARGS" >"$raw/probe.out" 2>&1 ||
			fail "perf probe failed: $(tail -3 "$raw/probe.out")"
		ev_args=(-e probe:rtbench_getppid)
	fi
	# -D -1: events start disabled; "enable" on the control fifo is
	# acknowledged once perf is set up and recording.
	taskset -c "$LAST_CPU" perf record --overwrite --synth=no -a "${ev_args[@]}" -m 256 \
		-o "$dir/perf.data" --control "fifo:$dir/ctl,$dir/ack" -D -1 \
		>"$raw/record.out" 2>&1 &
	ppid=$!
	exec 7<>"$dir/ack"	# read-write: the open cannot block
	echo enable >"$dir/ctl"
	# No overall time limit: under -icount a guest timeout runs on the
	# instruction clock (vmtest's own limit ends a guest that hangs).
	ack=
	until read -r -t 5 ack <&7; do
		kill -0 "$ppid" 2>/dev/null || break
	done
	exec 7<&-
	[[ $ack == ack ]] || fail "perf did not start: $(cat "$raw/record.out")"
	((!$2)) && [[ $part == kprobe ]] && kprobes_list "$1"
	load "$1" "$2"
	kill -INT "$ppid"
	rc=0
	wait "$ppid" || rc=$?
	# perf exits by re-raising SIGINT: 130 is its normal end here.
	((rc == 0 || rc == 130)) || fail "perf exited with status $rc: $(tail -3 "$raw/record.out")"
	if ((!$2)); then
		perf report -i "$dir/perf.data" --stats >"$raw/stats.txt" 2>&1 ||
			fail "perf report --stats failed"
		ev=$(awk '/^ *SAMPLE events:/ { print $3; exit }' "$raw/stats.txt")
		size_line "$1" "$(stat -c %s "$dir/perf.data")" "${ev:-0}"
	fi
	if [[ $part == kprobe ]]; then
		perf probe -q -d probe:rtbench_getppid >>"$raw/probe.out" 2>&1 ||
			fail "perf probe -d failed: $(tail -3 "$raw/probe.out")"
	fi
	rm -f "$dir"/*
}

# --- LTTng snapshot session ------------------------------------------------
session_lttng() {	# CONFIG ROUND
	local dir=$WORK/lttng raw=$RAW/$1-$2 snap bytes ev pat
	mkdir -p "$raw"
	rm -rf "$dir"
	{
		lttng create rtbench-why --snapshot --output="$dir" &&
		lttng enable-channel -k --overwrite --subbuf-size=256K --num-subbuf=4 chan &&
		if [[ $part == stack ]]; then
			lttng enable-event -k -c chan sched_switch &&
			if [[ $1 == *+stack ]]; then
				lttng add-context -k -c chan -t callstack-kernel
			fi
		else
			lttng enable-event -k -c chan --probe="$FUNC" rtbench_getppid
		fi &&
		lttng start
	} >"$raw/setup.out" 2>&1 || fail "lttng setup failed: $(tail -3 "$raw/setup.out")"
	lttng_pin "$LAST_CPU"
	((!$2)) && [[ $part == kprobe ]] && kprobes_list "$1"
	load "$1" "$2"
	lttng stop rtbench-why >"$raw/stop.out" 2>&1 || fail "lttng stop failed: $(cat "$raw/stop.out")"
	if ((!$2)); then
		lttng snapshot record -s rtbench-why >>"$raw/stop.out" 2>&1 ||
			fail "lttng snapshot record failed: $(tail -3 "$raw/stop.out")"
		snap=$(find "$dir" -type d -name kernel | head -1)
		[[ -n $snap ]] || fail "lttng wrote no snapshot under $dir"
		bytes=$(find "$snap" -maxdepth 1 -type f -name 'chan_*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
		pat=' sched_switch: '
		[[ $part == kprobe ]] && pat=' rtbench_getppid: '
		if command -v babeltrace2 >/dev/null; then
			ev=$(babeltrace2 "$snap" 2>"$raw/babeltrace2.err" | grep -c -- "$pat" || true)
			size_line "$1" "$bytes" "${ev:-0}"
		else
			say "$1: no babeltrace2 to count the snapshot's events"
		fi
	fi
	lttng destroy rtbench-why >>"$raw/stop.out" 2>&1 || fail "lttng destroy failed"
	lttng_pin "0-$LAST_CPU"
	rm -rf "$dir"
}

command -v perf >/dev/null || fail "perf is not installed"
[[ -x $CLI ]] || fail "no $CLI (make -C tools)"
mkdir -p "$RAW" "$WORK"
[[ -e $out/why.txt ]] || : >"$out/why.txt"

put "$RT/tracing_on" 0
put "$RT/mode" overwrite
put "$RT/subbuf_size" 65536
put "$RT/num_subbufs" 16
echo 0 >"$RT/events/enable"
put "$T/tracing_on" 0

if [[ $part == stack ]]; then
	configs=(ringtrace ringtrace+stack ftrace ftrace+trigger ftrace+option perf perf+stack)
elif [[ $part == filter ]]; then
	[[ -x $LOOP ]] || fail "no $LOOP (make -C tools/bench)"
	[[ -n $(nr getppid) && -n $(nr openat) ]] || fail "no system call numbers in $UNISTD"
	configs=(ringtrace ringtrace+drop ringtrace+pass ringtrace+trig ftrace
		 ftrace+drop ftrace+pass ftrace+trig perf perf+drop perf+pass)
else
	[[ -x $LOOP ]] || fail "no $LOOP (make -C tools/bench)"
	grep -qw "$FUNC" /proc/kallsyms || fail "no $FUNC in this kernel"
	configs=(ringtrace ftrace perf)
fi
# shellcheck source=tools/bench/guest-lttng.sh
. "$REPO/tools/bench/guest-lttng.sh"
if [[ $part == filter ]]; then
	echo "unavailable part=filter tracer=lttng reason=no_LTTng_filter_on_a_system_call_number" >>"$out/why.txt"
elif lttng_ok; then
	if [[ $part == stack ]]; then
		configs+=(lttng lttng+stack)
	else
		configs+=(lttng)
	fi
else
	echo "unavailable part=$part tracer=lttng reason=$(lttng_why | tr ' ' '_')" >>"$out/why.txt"
	say "lttng: not run: $(lttng_why)"
fi
# The stacks' depth limits, for the record.
{
	echo "ringtrace stack_depth $(<"$RT/stack_depth")"
	echo "kernel.perf_event_max_stack $(sysctl -n kernel.perf_event_max_stack)"
} >"$RAW/depths.txt"

for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#configs[@]}; k++)); do
		c=${configs[(k + r) % ${#configs[@]}]}
		load untraced "$r"
		"session_${c%%+*}" "$c" "$r"
	done
done
load untraced "$rounds"
rm -rf "$WORK"
exit 0
