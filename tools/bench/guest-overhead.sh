#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-overhead.sh OUTDIR [CALLS] [ROUNDS]
#
# The traced-syscall overhead benchmark of `make bench` (issue 4), run by
# guest-bench.sh in its guest with ringtrace.ko loaded; not meant for the
# host.  rt-sysloop makes CALLS (default 300000) getppid() calls pinned to
# the first CPU, untraced and under each tracer recording both raw_syscalls
# tracepoints system-wide with its defaults and 1 MiB of buffer per CPU:
#
#   ringtrace   events syscall_entry + syscall_exit, ringtraced recording
#               to the guest's tmpfs with its defaults (stored chunks,
#               compressed at zstd level 6 behind the drain); discard mode
#   trace-cmd   trace-cmd record -e raw_syscalls:sys_enter
#               -e raw_syscalls:sys_exit -b 1024
#   perf        perf record -a -e raw_syscalls:sys_enter
#               -e raw_syscalls:sys_exit -m 256 (256 pages = 1 MiB per
#               CPU), --synth=no -B to keep its start and exit short
#   lttng       lttng enable-event -k --syscall --all: every system call
#               (the others' two raw_syscalls tracepoints see every system
#               call too; LTTng records each as its own event, entry and
#               exit, with the call's decoded arguments), in a kernel
#               channel of 4 x 256 KiB per CPU (LTTng's default sub-buffer
#               count, sized to the same 1 MiB; its other attributes at
#               their defaults: discard mode, splice, 200 ms read timer),
#               written uncompressed by lttng-consumerd; only when
#               guest-bench.sh could start LTTng (guest-lttng.sh), else a
#               line "unavailable tracer=lttng reason=..." says why
#   rt-off      ringtrace's two probes attached but tracing off: the cost of
#               the tracepoints being on at all (the syscall slow path that
#               every tracer of raw_syscalls pays) plus ringtrace's early
#               exit; a reference, not a competitor
#
# ROUNDS (default 3) times: for each tracer, in an order that rotates each
# round, one untraced loop, then the tracer starts, runs two loops, stops.
# Every tracer's consumer (ringtraced; trace-cmd and its recorders; perf)
# is pinned to the last CPU, away from the loop, as one would on a real
# system: what the loop pays is the writer side (LTTng's session and
# consumer daemons are pinned once the session started).  The consumer's
# own CPU time during the loops is recorded too.
#
# Results in OUTDIR/overhead.txt:
#   loop tracer=T round=R calls=N ns_per_call=X
#   session tracer=T round=R events=N lost=N data_bytes=N file_bytes=N
#           rec_bytes=N stop_ms=N ready_s=N consumer_ticks=N clk_tck=N
#           loops_ms=N
# events: what the trace holds (every process's syscalls, the tracer's
# own included); lost: what the tracer counted as lost; data_bytes: the
# event data on disk once the tracer stopped and finished its files
# (ringtrace: cpu*.zst; trace-cmd: its per-CPU data in trace.dat; perf:
# perf.data; LTTng: its trace, uncompressed), file_bytes: everything on
# disk then; rec_bytes: what was on
# disk while recording, after the loops (ringtrace: stored and compressed
# chunks; trace-cmd: its raw per-CPU files); stop_ms: the time to stop;
# consumer_ticks: utime+stime of the consumer processes (/proc/PID/stat)
# over the loops, which took loops_ms.  The raw output of each session is
# kept in OUTDIR/overhead/.
#
# For run-bench's self-check (check-traces), the trace of each tracer's
# first session goes to OUTDIR/traces/overhead-TRACER-0/ with a file
# "expect": getppid=N, the calls its loops made.  LTTng counts no events
# itself, so every LTTng session's trace goes there (events=-1 in its
# session line; check-traces counts them on the host).

set -euo pipefail
shopt -s inherit_errexit

(($# >= 1 && $# <= 3)) || { echo "usage: $0 OUTDIR [CALLS] [ROUNDS]" >&2; exit 2; }
out=$1 calls=${2:-300000} rounds=${3:-3}
RT=/sys/kernel/debug/ringtrace
T=/sys/kernel/tracing
REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
DAEMON=$REPO/daemon/ringtraced
LOOP=$REPO/tools/bench/rt-sysloop
WORK=/tmp/overhead		# the guest's tmpfs
RAW=$out/overhead
TRACES=$out/traces
LOOPS_PER_SESSION=2
CLK_TCK=$(getconf CLK_TCK)
CONSUMER_CPU=$(($(nproc) - 1))

say() { echo "guest-bench: overhead: $*"; }
fail() { say "$*"; exit 1; }

rt_set() {
	printf '%s\n' "$2" >"$RT/$1" || fail "cannot write '$2' to $RT/$1"
}

# loop TRACER ROUND: one rt-sysloop run on CPU 0, appended to overhead.txt.
loop() {
	local line
	line=$("$LOOP" -c 0 -n "$calls") || fail "rt-sysloop failed"
	echo "loop tracer=$1 round=$2 calls=$calls ns_per_call=$(sed 's/.*ns_per_call=\([0-9.]*\).*/\1/' <<<"$line")" \
		>>"$out/overhead.txt"
	say "$1: $line"
}

# session_line TRACER ROUND EVENTS LOST DATA FILE READY_S TICKS MS REC STOP_MS
session_line() {
	echo "session tracer=$1 round=$2 events=$3 lost=$4 data_bytes=$5 file_bytes=$6 rec_bytes=${10} stop_ms=${11} ready_s=$7 consumer_ticks=$8 clk_tck=$CLK_TCK loops_ms=$9" \
		>>"$out/overhead.txt"
}

# Bytes of the regular files in directory $1.
dir_bytes() {
	find "$1" -maxdepth 1 -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

# utime + stime of pid $1 and of its children, in clock ticks.
consumer_ticks() {
	local p sum=0
	local -a st
	for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null || true); do
		read -r -a st <"/proc/$p/stat" 2>/dev/null || continue
		sum=$((sum + st[13] + st[14]))
	done
	echo "$sum"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# keep_trace NAME SRC...: copy the files SRC to TRACES/NAME for the host's
# check, files above 16 MiB compressed; with what the loops called.
keep_trace() {
	keep_files "$TRACES/$1" "${@:2}"
	echo "getppid=$((calls * LOOPS_PER_SESSION))" >"$TRACES/$1/expect"
}

# timed_loops TRACER ROUND PID: the session's loops; sets ticks and ms.
timed_loops() {
	local i t0 w0
	t0=$(consumer_ticks "$3")
	w0=$(now_ms)
	for ((i = 0; i < LOOPS_PER_SESSION; i++)); do
		loop "$1" "$2"
	done
	ms=$(($(now_ms) - w0))
	ticks=$(($(consumer_ticks "$3") - t0))
	# Where the consumers were allowed to run (a tracer may pin its own).
	for i in "$3" $(cat /proc/"$3"/task/*/children 2>/dev/null || true); do
		echo "$(cat /proc/"$i"/comm 2>/dev/null) $(grep Cpus_allowed_list /proc/"$i"/status 2>/dev/null)"
	done >"$RAW/$1-$2/affinity"
}

# --- ringtrace + ringtraced ---------------------------------------------
session_ringtrace() {
	local round=$1 raw=$RAW/ringtrace-$1 dir=$WORK/rt dpid t0 ticks ms
	local lost events rec s0 stop
	mkdir -p "$raw"
	rm -rf "$dir"
	rt_set clear 1
	t0=$SECONDS
	taskset -c "$CONSUMER_CPU" "$DAEMON" -o "$dir" \
		>"$raw/daemon.out" 2>"$raw/daemon.err" &
	dpid=$!
	for _ in $(seq 300); do
		grep -q recording "$raw/daemon.err" && break
		kill -0 "$dpid" 2>/dev/null || fail "ringtraced died: $(cat "$raw/daemon.err")"
		sleep 0.1
	done
	grep -q recording "$raw/daemon.err" || fail "ringtraced did not start"
	timed_loops ringtrace "$round" "$dpid"
	rec=$(dir_bytes "$dir")
	s0=$(now_ms)
	kill -TERM "$dpid"
	wait "$dpid" || fail "ringtraced exited with status $?"
	stop=$(($(now_ms) - s0))
	cat "$RT/stats" >"$raw/stats"
	read -r lost events <<<"$(awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		lost += v["lost_full"] + v["lost_overrun"] + v["lost_held"] + v["lost_nested"] + v["lost_too_big"]
		ev += v["delivered"]
	} END { printf "%d %d\n", lost, ev }' "$raw/stats")"
	session_line ringtrace "$round" "$events" "$lost" \
		"$(cat "$dir"/cpu*.zst | wc -c)" "$(dir_bytes "$dir")" \
		$((SECONDS - t0)) "$ticks" "$ms" "$rec" "$stop"
	((round)) || keep_trace overhead-ringtrace-0 "$dir"
	rm -rf "$dir"
}

# --- ringtrace's probes attached, tracing off -----------------------------
session_rtoff() {
	local round=$1 i
	rt_set tracing_on 0
	for ((i = 0; i < LOOPS_PER_SESSION; i++)); do
		loop rt-off "$round"
	done
}

# --- trace-cmd ------------------------------------------------------------
session_tracecmd() {
	local round=$1 raw=$RAW/trace-cmd-$1 dir=$WORK/tc tpid t0 kids ticks ms
	local lost events data rec s0 stop
	mkdir -p "$raw" "$dir"
	rm -f "$dir"/*
	t0=$SECONDS
	(cd "$dir" && exec taskset -c "$CONSUMER_CPU" trace-cmd record -e raw_syscalls:sys_enter \
		-e raw_syscalls:sys_exit -b 1024 -o "$dir/trace.dat") \
		>"$raw/record.out" 2>&1 &
	tpid=$!
	# Ready once both events and tracing are on and the recorders exist.
	for _ in $(seq 300); do
		kids=$(cat /proc/"$tpid"/task/*/children 2>/dev/null || true)
		[[ $(<"$T/tracing_on") == 1 &&
			$(<"$T/events/raw_syscalls/sys_enter/enable") == 1 &&
			$(<"$T/events/raw_syscalls/sys_exit/enable") == 1 ]] &&
			(($(wc -w <<<"$kids") >= $(nproc))) && break
		kill -0 "$tpid" 2>/dev/null || fail "trace-cmd died: $(cat "$raw/record.out")"
		sleep 0.1
	done
	timed_loops trace-cmd "$round" "$tpid"
	rec=$(dir_bytes "$dir")
	s0=$(now_ms)
	kill -INT "$tpid"
	wait "$tpid" || fail "trace-cmd exited with status $?"
	stop=$(($(now_ms) - s0))
	trace-cmd report --stat -i "$dir/trace.dat" >"$raw/stat.txt" 2>&1 ||
		fail "trace-cmd report --stat failed"
	read -r lost events <<<"$(awk -F: '
		$1 == "entries" || $1 == "read events" { ev += $2 }
		$1 == "overrun" || $1 == "commit overrun" || $1 == "dropped events" { lost += $2 }
		END { printf "%d %d\n", lost, ev }' "$raw/stat.txt")"
	data=$(awk '/bytes in size/ { o += $1 } END { printf "%d\n", o }' "$raw/record.out")
	session_line trace-cmd "$round" "$events" "$lost" "$data" \
		"$(stat -c %s "$dir/trace.dat")" $((SECONDS - t0)) "$ticks" "$ms" \
		"$rec" "$stop"
	((round)) || keep_trace overhead-trace-cmd-0 "$dir/trace.dat"
	rm -f "$dir"/*
}

# --- perf -----------------------------------------------------------------
session_perf() {
	local round=$1 raw=$RAW/perf-$1 dir=$WORK/perf ppid t0 ack rc ticks ms
	local lost events rec s0 stop
	mkdir -p "$raw" "$dir"
	rm -f "$dir"/*
	mkfifo "$dir/ctl" "$dir/ack"
	t0=$SECONDS
	# -D -1: events start disabled; "enable" on the control fifo is
	# acknowledged once perf is set up and recording.
	taskset -c "$CONSUMER_CPU" perf record --synth=no -B -a -e raw_syscalls:sys_enter \
		-e raw_syscalls:sys_exit -m 256 -o "$dir/perf.data" \
		--control "fifo:$dir/ctl,$dir/ack" -D -1 >"$raw/record.out" 2>&1 &
	ppid=$!
	exec 7<>"$dir/ack"	# read-write: the open cannot block
	echo enable >"$dir/ctl"
	read -r -t 120 ack <&7 || true
	exec 7<&-
	[[ $ack == ack ]] || fail "perf did not start: $(cat "$raw/record.out")"
	timed_loops perf "$round" "$ppid"
	rec=$(stat -c %s "$dir/perf.data")
	s0=$(now_ms)
	kill -INT "$ppid"
	rc=0
	wait "$ppid" || rc=$?
	stop=$(($(now_ms) - s0))
	# perf exits by re-raising SIGINT: 130 is its normal end here.
	((rc == 0 || rc == 130)) || fail "perf exited with status $rc: $(tail -3 "$raw/record.out")"
	perf report -i "$dir/perf.data" --stats >"$raw/stats.txt" 2>&1 ||
		fail "perf report --stats failed"
	# "TOTAL events" section: SAMPLE and LOST(_SAMPLES) counts.
	read -r lost events <<<"$(awk '
		/^ *SAMPLE events:/ && !done { ev = $3; done = 1 }
		/^ *LOST events:/ { lost += $3 }
		/^ *LOST_SAMPLES events:/ { lost += $3 }
		END { printf "%d %d\n", lost, ev }' "$raw/stats.txt")"
	session_line perf "$round" "$events" "$lost" \
		"$(stat -c %s "$dir/perf.data")" "$(stat -c %s "$dir/perf.data")" \
		$((SECONDS - t0)) "$ticks" "$ms" "$rec" "$stop"
	((round)) || keep_trace overhead-perf-0 "$dir/perf.data"
	rm -f "$dir"/*
}

# --- LTTng ------------------------------------------------------------------
session_lttng() {
	local round=$1 raw=$RAW/lttng-$1 dir=$WORK/lttng t0 ticks ms
	local lost rec s0 stop cpid
	mkdir -p "$raw"
	rm -rf "$dir"
	t0=$SECONDS
	{
		lttng create rtbench-oh --output="$dir" &&
		lttng enable-channel -k --subbuf-size=256K --num-subbuf=4 chan &&
		lttng enable-event -k --syscall --all -c chan &&
		lttng start
	} >"$raw/setup.out" 2>&1 || fail "lttng setup failed: $(tail -3 "$raw/setup.out")"
	lttng_pin "$CONSUMER_CPU"
	cpid=$(lttng_consumer_pids | head -1)
	[[ -n $cpid ]] || fail "no lttng-consumerd"
	timed_loops lttng "$round" "$cpid"
	rec=$(du -sb "$dir" | cut -f1)
	s0=$(now_ms)
	lttng stop rtbench-oh >"$raw/stop.out" 2>&1 || fail "lttng stop failed: $(cat "$raw/stop.out")"
	lttng list rtbench-oh >"$raw/list.txt" 2>&1
	lost=$(lttng_lost rtbench-oh)
	lttng destroy rtbench-oh >>"$raw/stop.out" 2>&1 || fail "lttng destroy failed"
	stop=$(($(now_ms) - s0))
	# Unpin for whoever comes next (the storm and pipeline parts).
	lttng_pin "0-$CONSUMER_CPU"
	# LTTng counts no recorded events: check-traces does, from the trace.
	session_line lttng "$round" -1 "$lost" \
		"$(find "$dir/kernel" -maxdepth 1 -type f -name 'chan_*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')" \
		"$(du -sb "$dir" | cut -f1)" $((SECONDS - t0)) "$ticks" "$ms" "$rec" "$stop"
	keep_trace "overhead-lttng-$round" "$dir"
	rm -rf "$dir"
}

[[ -x $LOOP ]] || fail "no $LOOP (make -C tools/bench)"
[[ -x $DAEMON ]] || fail "no $DAEMON (make -C daemon)"
command -v trace-cmd >/dev/null || fail "trace-cmd is not installed"
command -v perf >/dev/null || fail "perf is not installed"
perf version >"$out/perf-version.txt" 2>&1 || fail "perf does not run: $(cat "$out/perf-version.txt")"
[[ -d $RT/events/syscall_entry && -d $RT/events/syscall_exit ]] ||
	fail "ringtrace has no syscall_entry/syscall_exit events"
mkdir -p "$RAW" "$WORK" "$TRACES"
: >"$out/overhead.txt"

rt_set tracing_on 0
rt_set mode discard
rt_set subbuf_size 65536
rt_set num_subbufs 16
echo 0 >"$RT/events/enable"
rt_set set_event 'syscall_entry syscall_exit'
echo 0 >"$T/tracing_on"

tracers=(ringtrace trace-cmd perf rt-off)
# shellcheck source=tools/bench/guest-keep.sh
. "$REPO/tools/bench/guest-keep.sh"
# shellcheck source=tools/bench/guest-lttng.sh
. "$REPO/tools/bench/guest-lttng.sh"
if lttng_ok; then
	tracers+=(lttng)
else
	echo "unavailable tracer=lttng reason=$(lttng_why | tr ' ' '_')" >>"$out/overhead.txt"
	say "lttng: not run: $(lttng_why)"
fi
for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#tracers[@]}; k++)); do
		t=${tracers[(k + r) % ${#tracers[@]}]}
		loop untraced "$r"
		"session_${t//-/}" "$r"
	done
done
loop untraced "$rounds"
echo 0 >"$RT/events/enable"
rm -rf "$WORK"
