#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-storm.sh OUTDIR [CALLS [ROUNDS]]
#
# The system-call storm of `make bench` (issue 19), run by guest-bench.sh in
# its guest with ringtrace.ko loaded; not meant for the host.  Every tracer
# records all system calls system-wide while rt-sysloop makes CALLS
# (default 300000) getppid() calls on every online CPU at once, each loop
# pinned to its CPU, nothing pinned elsewhere; the question is how many
# events each tracer loses.  Three configurations (STORM_CONFIGS, default
# "defaults 1mib store"):
#
#   defaults  each tracer as a user starts it, nothing but the events
#             chosen: ringtrace with the module's geometry and mode as
#             loaded (saved by guest-bench.sh in OUTDIR/rt-defaults) and
#             ringtraced with no option; `trace-cmd record -e raw_syscalls`
#             with the kernel's boot-time buffer size (saved in
#             OUTDIR/ftrace-defaults); `perf record -a -e
#             raw_syscalls:sys_enter -e raw_syscalls:sys_exit`; `lttng
#             create; lttng enable-event -k --syscall --all; lttng start`
#   1mib      the same with 1 MiB of buffer per CPU each: ringtrace 16 x
#             64 KiB, trace-cmd -b 1024, perf -m 256, LTTng a channel of
#             4 x 256 KiB
#   store     ringtrace only: defaults, ringtraced -l store.  The chunks
#             stay uncompressed, as LTTng's and trace-cmd's files are: the
#             consumer does the others' work, copying packets to a file,
#             and no more (issue 19: "its consumer splices"); ringtraced
#             writes each packet with pwritev() from the mapping
#   store-splice  the same with --splice: each packet spliced from the
#             buffer file where the module offers it (issue 34; not in the
#             default list: STORM_CONFIGS="... store store-splice")
#   store-alt the same with another ringtraced or other options, for an
#             A/B in one boot: STORM_ALT_DAEMON (a ringtraced binary,
#             default this tree's), STORM_ALT_ARGS (its extra options,
#             words split on blanks), STORM_ALT_GEOMETRY ("SUBBUF_SIZE
#             NUM_SUBBUFS" instead of the module's defaults); in the
#             consumer rounds it runs in every round when one is set
#
# STORM_RINGTRACED_ARGS: more options for ringtraced in every ringtrace
# run (an experiment's, e.g. "--wakeup 1"; words split on blanks).
# STORM_PERF="CONFIG...": where ringtraced's drain threads spend their
# CPU: after the measured runs, one more ringtrace run per CONFIG named
# (e.g. "store store-splice") under perf record (cpu-clock, call graphs)
# of those threads, its report by symbol in
# OUTDIR/storm/ringtrace-CONFIG.perf and .perf-g; its storm line goes to
# OUTDIR/storm-perf.txt, not to the table (perf's sampling is charged to
# the threads it samples).
#
# perf also gets --synth=no -B and a control fifo (it starts disabled and
# says when it records), which change its start and end, not its buffers.
# An untraced storm runs first, for the cost per call.
#
# With ROUNDS (run-bench's consumer part, issue 34): the consumers alone,
# ringtraced -l store against lttng-consumerd at LTTng's defaults, in
# ROUNDS rounds in this one boot, the two alternating (ringtrace first in
# even rounds, LTTng first in odd ones, so that neither always follows the
# other), lines in OUTDIR/storm-consumer.txt with round=R, traces kept as
# consumer-T-C-rR.  Nothing else runs: the untraced storm, then the rounds.
#
# One line per run in OUTDIR/storm.txt:
#   storm tracer=T config=C cpus=N calls=N ns_per_call=X lost=N events=N
#         consumer_ticks=N clk_tck=N wall_ms=N bytes=N
#         [consumer_ns=N] [drain_ticks=N pack_ticks=N life_ticks=N
#         drain_sys_ticks=N drain_ns=N drain_wakeups=N packets=N] [round=R]
# ns_per_call is the mean over the CPUs' loops; lost what the tracer
# counted as lost; events what it recorded (-1 for LTTng, which does not
# say: check-traces counts them on the host); consumer_ticks the CPU time
# of the tracer's consumer processes over the storm (ringtrace and LTTng:
# and over their drain of what the buffers still held when it ended,
# tracing stopped); bytes its output on
# disk once stopped.  For ringtraced, the consumer's ticks split by thread
# (drain_ticks: the rtd-drain/N threads that copy packets out; pack_ticks:
# the rtd-pack/N compression workers; over the storm, like consumer_ticks)
# and life_ticks, its CPU time from start to exit (time(1)): the packers
# finish after the storm, at the stop, and that is part of the cost;
# drain_sys_ticks, of drain_ticks the kernel's (stime: the copy, the
# ioctls, the splices).  consumer_ns and drain_ns: the same CPU time as the
# scheduler sums it (ns_of below), exact where ticks are sampled;
# drain_wakeups: how often the drain threads slept and were woken;
# packets: the packets ringtraced stored.
# Every run's trace goes to OUTDIR/traces/storm-T-C/
# with "expect" (getppid=CALLS x CPUs) for run-bench's self-check: each
# tracer's trace must hold every getppid() call its counters do not
# account as lost.  A tracer that cannot run gets a line
# "unavailable tracer=T reason=...".

set -euo pipefail
shopt -s inherit_errexit

(($# >= 1 && $# <= 3)) || { echo "usage: $0 OUTDIR [CALLS [ROUNDS]]" >&2; exit 2; }
out=$1 calls=${2:-300000} rounds=${3:-}
[[ -z $rounds || $rounds =~ ^[1-9][0-9]?$ ]] || { echo "$0: ROUNDS: 1..99, not '$rounds'" >&2; exit 2; }
txt=storm round=	# consumer rounds: storm-consumer.txt, round=R
RT=/sys/kernel/debug/ringtrace
T=/sys/kernel/tracing
REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
DAEMON=$REPO/daemon/ringtraced
LOOP=$REPO/tools/bench/rt-sysloop
WORK=/tmp/storm		# the guest's tmpfs
RAW=$out/storm
TRACES=$out/traces
CLK_TCK=$(getconf CLK_TCK)
NCPU=$(nproc)

# shellcheck source=tools/bench/guest-keep.sh
. "$REPO/tools/bench/guest-keep.sh"
# shellcheck source=tools/bench/guest-lttng.sh
. "$REPO/tools/bench/guest-lttng.sh"

say() { echo "guest-bench: storm: $*"; }
fail() { say "$*"; exit 1; }

rt_set() {
	printf '%s\n' "$2" >"$RT/$1" || fail "cannot write '$2' to $RT/$1"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# utime + stime of the given pids and their children, in clock ticks.
ticks_of() {
	local p sum=0
	local -a st
	for p in "$@" $(for q; do cat /proc/"$q"/task/*/children 2>/dev/null; done); do
		read -r -a st <"/proc/$p/stat" 2>/dev/null || continue
		sum=$((sum + st[13] + st[14]))
	done
	echo "$sum"
}

# ns_of PID...: the CPU time of the given pids' threads and of their
# children's, in ns: the scheduler's own sum of each thread's runtime
# (first field of /proc/PID/task/TID/schedstat), not the tick-sampled
# utime + stime.  A thread woken by a timer right after a tick and asleep
# again before the next one (lttng-consumerd's 200 ms read timer) is
# charged no tick at all; under -icount these ns are instruction counts
# (run-bench's consumer part).  Threads that exit before the second read
# are not counted: neither consumer's threads do during a storm.
ns_of() {
	local p t sum=0
	local -a f
	for p in "$@" $(for q; do cat /proc/"$q"/task/*/children 2>/dev/null; done); do
		for t in /proc/"$p"/task/*; do
			read -r -a f <"$t/schedstat" 2>/dev/null || continue
			sum=$((sum + f[0]))
		done
	done
	echo "$sum"
}

# drain_ns PID: "NS WAKEUPS" of ringtraced's rtd-drain/N threads: their
# runtime in ns (as ns_of) and how often they went to sleep and were woken
# (voluntary context switches: a poll() that waited, mostly).
drain_ns() {
	local t comm ns=0 wk=0 k v
	local -a f
	for t in /proc/"$1"/task/*; do
		read -r comm <"$t/comm" 2>/dev/null || continue
		[[ $comm == rtd-drain/* ]] || continue
		read -r -a f <"$t/schedstat" 2>/dev/null || continue
		ns=$((ns + f[0]))
		while read -r k v; do
			[[ $k == voluntary_ctxt_switches: ]] && wk=$((wk + v))
		done <"$t/status"
	done
	echo "$ns $wk"
}

# split_ticks PID: "DRAIN PACK DRAIN_SYS" -- utime + stime of ringtraced's
# drain threads and of its packers (threads named by daemon/drain.c,
# packer.c), and the drain threads' stime alone.
split_ticks() {
	local t comm drain=0 pack=0 dsys=0
	local -a st
	for t in /proc/"$1"/task/*; do
		read -r comm <"$t/comm" 2>/dev/null || continue
		# comm is field 2 of stat, in parentheses, without spaces here.
		read -r -a st <"$t/stat" 2>/dev/null || continue
		case $comm in
		rtd-drain/*)
			drain=$((drain + st[13] + st[14]))
			dsys=$((dsys + st[14]))
			;;
		rtd-pack/*) pack=$((pack + st[13] + st[14])) ;;
		esac
	done
	echo "$drain $pack $dsys"
}

# storm NAME: rt-sysloop on every CPU at once; sets ns (mean ns per call)
# and wall (ms).
storm() {
	local c w0 pids=() f
	w0=$(now_ms)
	for ((c = 0; c < NCPU; c++)); do
		"$LOOP" -c "$c" -n "$calls" >"$RAW/$1.loop$c" &
		pids+=($!)
	done
	for c in "${pids[@]}"; do
		wait "$c" || fail "rt-sysloop failed"
	done
	wall=$(($(now_ms) - w0))
	ns=$(for f in "$RAW/$1".loop*; do cat "$f"; done | awk '{
		for (i = 1; i <= NF; i++) if ($i ~ /^ns_per_call=/) { s += substr($i, 13); n++ }
	} END { printf "%.1f\n", n ? s / n : 0 }')
}

perf_pass=0
line() {	# TRACER CONFIG LOST EVENTS TICKS BYTES [KEY=VALUE...]
	echo "storm tracer=$1 config=$2 cpus=$NCPU calls=$calls ns_per_call=$ns lost=$3 events=$4 consumer_ticks=$5 clk_tck=$CLK_TCK wall_ms=$wall bytes=$6${7:+ ${*:7}}${round:+ round=$round}" \
		>>"$out/$txt$( ((!perf_pass)) || echo -perf).txt"
	say "$1 ($2): $ns ns/call, lost $3, recorded $4"
}

# keep NAME SRC...: the trace for check-traces (big files compressed).
keep() {
	local name=$1
	[[ -z $round ]] || name="consumer-${1#storm-}-r$round"
	keep_files "$TRACES/$name" "${@:2}"
	echo "getppid=$((calls * NCPU))" >"$TRACES/$name/expect"
}

dir_bytes() { du -sb "$1" | cut -f1; }

# perf_drain_start PID NAME: perf record of every CPU (STORM_PERF; its
# report keeps PID's rtd-drain/N threads: perf record -t of them took no
# sample under TCG); sets perf_pid and perf_comms.
perf_drain_start() {
	local t comm
	perf_comms=
	for t in /proc/"$1"/task/*; do
		read -r comm <"$t/comm" 2>/dev/null || continue
		[[ $comm == rtd-drain/* ]] && perf_comms+=${perf_comms:+,}$comm
	done
	[[ -n $perf_comms ]] || fail "no drain thread in ringtraced $1"
	perf record -a -e cpu-clock -F 999 -g -o "$WORK/$2.perf.data" \
		>"$RAW/$2.perf-record" 2>&1 &
	perf_pid=$!
	sleep 1
}

perf_drain_stop() {
	kill -INT "$perf_pid"
	wait "$perf_pid" || true
	perf report -i "$WORK/$1.perf.data" --stdio --no-children \
		--comms "$perf_comms" --sort sym --percent-limit 0.5 -g none \
		>"$RAW/$1.perf" 2>&1 || true
	perf report -i "$WORK/$1.perf.data" --stdio --no-children \
		--comms "$perf_comms" --sort sym --percent-limit 2 \
		-g caller,0.5,callee >"$RAW/$1.perf-g" 2>&1 || true
	rm -f "$WORK/$1.perf.data"
}

# True once every CPU's events are delivered or counted lost (tracing off:
# ringtraced has taken the last, partly filled packets too); waits 60 s.
rt_drained() {
	local _
	for _ in $(seq 600); do
		awk '{
			for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			if (v["written"] != v["delivered"] + v["lost_full"] + v["lost_overrun"] + v["lost_held"] + \
			    v["lost_nested"] + v["lost_too_big"]) left = 1
		} END { exit left }' "$RT/stats" && return 0
		sleep 0.1
	done
	return 1
}

run_ringtrace() {
	local cfg=$1 name=ringtrace-$1 dir=$WORK/rt tpid dpid t0 lost events
	local d0 p0 s0 d1 p1 s1 life n0 dn0 dw0 dn1 dw1 packets
	local -a level=()
	local daemon=$DAEMON args=${STORM_RINGTRACED_ARGS:-}
	rm -rf "$dir"
	[[ $cfg != store-alt ]] || daemon=${STORM_ALT_DAEMON:-$DAEMON} args=${STORM_ALT_ARGS:-}
	[[ $cfg == store* ]] && level=(-l store)
	[[ $cfg == store-splice ]] && level+=(--splice)
	if [[ $cfg == store-alt && -n ${STORM_ALT_GEOMETRY:-} ]]; then
		# shellcheck disable=SC2086 # "subbuf_size num_subbufs"
		set -- $STORM_ALT_GEOMETRY
		rt_set subbuf_size "$1"
		rt_set num_subbufs "$2"
		rt_set mode "$(awk '{ print $3 }' "$out/rt-defaults")"
	elif [[ $cfg == defaults || $cfg == store* ]]; then
		# shellcheck disable=SC2046 # "subbuf_size num_subbufs mode"
		set -- $(<"$out/rt-defaults")
		rt_set subbuf_size "$1"
		rt_set num_subbufs "$2"
		rt_set mode "$3"
	else
		rt_set subbuf_size 65536
		rt_set num_subbufs 16
		rt_set mode discard
	fi
	rt_set clear 1
	# time(1) reports ringtraced's CPU time over its whole life.
	# shellcheck disable=SC2086 # STORM_RINGTRACED_ARGS, STORM_ALT_ARGS: words
	/usr/bin/time -f '%U %S' -o "$RAW/$name.time" \
		"$daemon" -o "$dir" "${level[@]}" $args \
		>"$RAW/$name.out" 2>"$RAW/$name.err" &
	tpid=$!
	for _ in $(seq 300); do
		grep -q recording "$RAW/$name.err" && break
		kill -0 "$tpid" 2>/dev/null || fail "ringtraced died: $(cat "$RAW/$name.err")"
		sleep 0.1
	done
	# The children file read empty once under load (6.12, issue 34's
	# rounds) while the daemon ran: look again for a while.
	for _ in $(seq 50); do
		read -r dpid </proc/"$tpid"/task/"$tpid"/children || true	# no newline
		[[ $dpid =~ ^[0-9]+$ ]] && break
		sleep 0.1
	done
	[[ $dpid =~ ^[0-9]+$ ]] || fail "no ringtraced under time(1): '$dpid'"
	((!perf_pass)) || perf_drain_start "$dpid" "$name"
	t0=$(ticks_of "$dpid")
	n0=$(ns_of "$dpid")
	read -r d0 p0 s0 <<<"$(split_ticks "$dpid")"
	read -r dn0 dw0 <<<"$(drain_ns "$dpid")"
	storm "$name"
	# Up to a quarter of the ring still waits for the drain (the wakeup
	# watermark): stop, and count its drain to the end too.
	rt_set tracing_on 0
	rt_drained || fail "ringtraced did not drain the buffers within 60 s after the storm"
	t0=$(($(ticks_of "$dpid") - t0))
	n0=$(($(ns_of "$dpid") - n0))
	read -r d1 p1 s1 <<<"$(split_ticks "$dpid")"
	read -r dn1 dw1 <<<"$(drain_ns "$dpid")"
	((!perf_pass)) || perf_drain_stop "$name"
	kill -TERM "$dpid"
	wait "$tpid" || fail "ringtraced exited with status $?"
	life=$(awk -v hz="$CLK_TCK" '{ printf "%d\n", ($1 + $2) * hz + 0.5 }' "$RAW/$name.time")
	cat "$RT/stats" >"$RAW/$name.stats"
	read -r lost events packets <<<"$(awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		lost += v["lost_full"] + v["lost_overrun"] + v["lost_held"] + v["lost_nested"] + v["lost_too_big"]
		ev += v["delivered"]; pk += v["subbufs"]
	} END { printf "%d %d %d\n", lost, ev, pk }' "$RAW/$name.stats")"
	line ringtrace "$cfg" "$lost" "$events" "$t0" "$(dir_bytes "$dir")" \
		"consumer_ns=$n0" "drain_ticks=$((d1 - d0))" "pack_ticks=$((p1 - p0))" \
		"life_ticks=$life" "drain_sys_ticks=$((s1 - s0))" \
		"drain_ns=$((dn1 - dn0))" "drain_wakeups=$((dw1 - dw0))" "packets=$packets"
	((perf_pass)) || keep "storm-$name" "$dir"
	rm -rf "$dir"
}

run_tracecmd() {
	local cfg=$1 name=trace-cmd-$1 dir=$WORK/tc tpid kids t0 lost events
	local -a opt=()
	mkdir -p "$dir"
	rm -f "$dir"/*
	if [[ $cfg == defaults ]]; then
		cat "$out/ftrace-defaults" >"$T/buffer_size_kb"
	else
		opt=(-b 1024)
	fi
	(cd "$dir" && exec trace-cmd record -e raw_syscalls "${opt[@]}" -o "$dir/trace.dat") \
		>"$RAW/$name.out" 2>&1 &
	tpid=$!
	for _ in $(seq 300); do
		kids=$(cat /proc/"$tpid"/task/*/children 2>/dev/null || true)
		[[ $(<"$T/tracing_on") == 1 &&
			$(<"$T/events/raw_syscalls/sys_enter/enable") == 1 ]] &&
			(($(wc -w <<<"$kids") >= NCPU)) && break
		kill -0 "$tpid" 2>/dev/null || fail "trace-cmd died: $(cat "$RAW/$name.out")"
		sleep 0.1
	done
	t0=$(ticks_of "$tpid")
	storm "$name"
	t0=$(($(ticks_of "$tpid") - t0))
	kill -INT "$tpid"
	wait "$tpid" || fail "trace-cmd exited with status $?"
	trace-cmd report --stat -i "$dir/trace.dat" >"$RAW/$name.stat" 2>&1 ||
		fail "trace-cmd report --stat failed"
	read -r lost events <<<"$(awk -F: '
		$1 == "entries" || $1 == "read events" { ev += $2 }
		$1 == "overrun" || $1 == "commit overrun" || $1 == "dropped events" { lost += $2 }
		END { printf "%d %d\n", lost, ev }' "$RAW/$name.stat")"
	line trace-cmd "$cfg" "$lost" "$events" "$t0" "$(stat -c %s "$dir/trace.dat")"
	keep "storm-$name" "$dir/trace.dat"
	rm -f "$dir"/*
}

run_perf() {
	local cfg=$1 name=perf-$1 dir=$WORK/perf ppid ack rc t0 lost events
	local -a opt=()
	mkdir -p "$dir"
	rm -f "$dir"/*
	[[ $cfg == defaults ]] || opt=(-m 256)
	mkfifo "$dir/ctl" "$dir/ack"
	perf record --synth=no -B -a -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
		"${opt[@]}" -o "$dir/perf.data" --control "fifo:$dir/ctl,$dir/ack" -D -1 \
		>"$RAW/$name.out" 2>&1 &
	ppid=$!
	exec 7<>"$dir/ack"
	echo enable >"$dir/ctl"
	ack=
	read -r -t 120 ack <&7 || true
	exec 7<&-
	[[ $ack == ack ]] || fail "perf did not start: $(cat "$RAW/$name.out")"
	t0=$(ticks_of "$ppid")
	storm "$name"
	t0=$(($(ticks_of "$ppid") - t0))
	kill -INT "$ppid"
	rc=0
	wait "$ppid" || rc=$?
	((rc == 0 || rc == 130)) || fail "perf exited with status $rc"
	perf report -i "$dir/perf.data" --stats >"$RAW/$name.stats" 2>&1 ||
		fail "perf report --stats failed"
	# As guest-overhead.sh counts them: LOST and LOST_SAMPLES records
	# (each stands for one or more samples); check-traces counts the
	# getppid() events perf did record.
	read -r lost events <<<"$(awk '
		/^ *SAMPLE events:/ && !done { ev = $3; done = 1 }
		/^ *LOST events:/ { lost += $3 }
		/^ *LOST_SAMPLES events:/ { lost += $3 }
		END { printf "%d %d\n", lost, ev }' "$RAW/$name.stats")"
	line perf "$cfg" "$lost" "$events" "$t0" "$(stat -c %s "$dir/perf.data")"
	keep "storm-$name" "$dir/perf.data"
	rm -f "$dir"/*
}

run_lttng() {
	local cfg=$1 name=lttng-$1 dir=$WORK/lttng t0 n0 lost cpid
	rm -rf "$dir"
	{
		lttng create rtbench-storm --output="$dir" &&
		if [[ $cfg == defaults ]]; then
			lttng enable-event -k --syscall --all
		else
			lttng enable-channel -k --subbuf-size=256K --num-subbuf=4 chan &&
			lttng enable-event -k --syscall --all -c chan
		fi &&
		lttng start
	} >"$RAW/$name.setup" 2>&1 || fail "lttng setup failed: $(tail -3 "$RAW/$name.setup")"
	lttng list rtbench-storm >"$RAW/$name.list-before" 2>&1 || true
	cpid=$(lttng_consumer_pids | head -1)
	t0=$(ticks_of "$cpid")
	n0=$(ns_of "$cpid")
	storm "$name"
	# lttng stop returns once the consumer has taken what the buffers held
	# (up to the 200 ms its read timer waits): counted too, as ringtrace's.
	lttng stop rtbench-storm >"$RAW/$name.stop" 2>&1 || fail "lttng stop failed"
	t0=$(($(ticks_of "$cpid") - t0))
	n0=$(($(ns_of "$cpid") - n0))
	lttng list rtbench-storm >"$RAW/$name.list" 2>&1
	lost=$(lttng_lost rtbench-storm)
	lttng destroy rtbench-storm >>"$RAW/$name.stop" 2>&1 || fail "lttng destroy failed"
	line lttng "$cfg" "$lost" -1 "$t0" "$(dir_bytes "$dir")" "consumer_ns=$n0"
	keep "storm-$name" "$dir"
	rm -rf "$dir"
}

[[ -x $LOOP ]] || fail "no $LOOP (make -C tools/bench)"
[[ -x $DAEMON ]] || fail "no $DAEMON (make -C daemon)"
mkdir -p "$RAW" "$WORK" "$TRACES"
[[ -z $rounds ]] || txt=storm-consumer
: >"$out/$txt.txt"

rt_set tracing_on 0
echo 0 >"$RT/events/enable"
rt_set set_event 'syscall_entry syscall_exit'
echo 0 >"$T/tracing_on"

ns=0 wall=0
storm untraced
line untraced - 0 0 0 0

if [[ -n $rounds ]]; then
	lttng_ok || {
		echo "unavailable tracer=lttng reason=$(lttng_why | tr ' ' '_')" >>"$out/$txt.txt"
		fail "lttng: not run: $(lttng_why)"
	}
	for ((round = 0; round < rounds; round++)); do
		if ((round % 2)); then
			run_lttng defaults
			[[ -z ${STORM_ALT_DAEMON:-}${STORM_ALT_ARGS:-}${STORM_ALT_GEOMETRY:-} ]] || run_ringtrace store-alt
			run_ringtrace store
		else
			run_ringtrace store
			[[ -z ${STORM_ALT_DAEMON:-}${STORM_ALT_ARGS:-}${STORM_ALT_GEOMETRY:-} ]] || run_ringtrace store-alt
			run_lttng defaults
		fi
	done
	round=
else
	tracers=(ringtrace trace-cmd perf)
	command -v trace-cmd >/dev/null || { tracers=("${tracers[@]/trace-cmd/}"); echo "unavailable tracer=trace-cmd reason=not_installed" >>"$out/storm.txt"; }
	command -v perf >/dev/null || { tracers=("${tracers[@]/perf/}"); echo "unavailable tracer=perf reason=not_installed" >>"$out/storm.txt"; }
	if lttng_ok; then
		tracers+=(lttng)
	else
		echo "unavailable tracer=lttng reason=$(lttng_why | tr ' ' '_')" >>"$out/storm.txt"
		say "lttng: not run: $(lttng_why)"
	fi
	# STORM_TRACERS: a subset of the tracers (an experiment's, e.g.
	# "ringtrace lttng" with STORM_CONFIGS repeating "defaults store
	# store-splice" for rounds that alternate).
	if [[ -n ${STORM_TRACERS:-} ]]; then
		for t in "${!tracers[@]}"; do
			[[ " $STORM_TRACERS " == *" ${tracers[t]} "* ]] || tracers[t]=
		done
	fi
	for cfg in ${STORM_CONFIGS:-defaults 1mib store}; do
		for t in "${tracers[@]}"; do
			[[ -n $t ]] || continue
			[[ $cfg != store* || $t == ringtrace ]] || continue
			"run_${t//-/}" "$cfg"
		done
	done
fi
perf_pass=1
for cfg in ${STORM_PERF:-}; do
	run_ringtrace "$cfg"
done
perf_pass=0
# Leave ringtrace and ftrace as the module and the boot had them.
# shellcheck disable=SC2046
set -- $(<"$out/rt-defaults")
rt_set subbuf_size "$1"
rt_set num_subbufs "$2"
rt_set mode "$3"
cat "$out/ftrace-defaults" >"$T/buffer_size_kb"
echo 0 >"$RT/events/enable"
rm -rf "$WORK"
