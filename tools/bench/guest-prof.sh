#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-prof.sh OUTDIR profile|ustack [N] [ROUNDS]
#
# What the profiler and user stacks cost (issue 30), beside perf and
# bpftrace.  Run by guest-bench.sh in its guest with ringtrace.ko loaded,
# in run-bench's single-threaded boot (under -icount where the kernel
# boots with it); not meant for the host.  Every tracer records as a user
# would: ringtrace record (ringtraced draining), perf record into its
# perf.data, bpftrace counting in a map; each tracer's own process runs
# on the last CPU, the load on CPU 0 (but see -icount below: there the
# last CPU's work counts too).
#
# profile: tools/bench/rt-spin N (default 250000000 rounds of arithmetic
# in spin_leaf <- spin_b <- spin_a <- main, -O0 with frame pointers) on
# CPU 0, untraced and sampled at 999 Hz by
#
#   ringtrace   ringtrace record --level store --sample 999 -F -e
#               sched_process_exec -- rt-spin (cpu_sample with the kernel
#               stack when in the kernel and the user stack, frame
#               pointers; its pid only)
#   perf        perf record -e cpu-clock -F 999 -g -- rt-spin (TCG has
#               no PMU: the hrtimer-driven software clock, as ringtrace's)
#   bpftrace    bpftrace 'profile:hz:999 { @[kstack, ustack] = count(); }'
#               on every CPU; the spinner's samples are the map's counts
#               of stacks through spin_leaf (rt-spin waits, "hold", until
#               bpftrace has printed them, so that it names the frames)
#
#   ringtrace+zstd  the same, ringtraced compressing at its default level
#               (the others below store their chunks: --level store)
#   ringtrace+timer  no recording: sample_hz 999, tracing off and no pid
#               filter (so no timer parks), so the sampler's timers fire
#               on every CPU and write nothing (their cost per 999 Hz
#               period)
#   ringtrace+timer0  the same with the last CPU offline during the load:
#               the timer of the load's CPU alone
#
# A sample's cost is (traced - untraced) / samples of the spinner, the
# untraced time the mean of the runs just before and after the session.
#
# Under -icount with single-threaded TCG the guest's clock counts the
# instructions of both vCPUs: a consumer working on the last CPU during
# the load is counted in the load's time.  So ringtraced stores its
# chunks uncompressed in the timed runs (--level store), as perf writes
# perf.data: each tracer's consumer copies what it reads, no more;
# ringtrace+zstd shows what compressing during the load adds.
#
# ustack: `perf bench sched pipe -l N` (default 10000 round trips, both
# processes on CPU 0: two sched_switch a round trip), untraced and with
# sched_switch recorded by
#
#   ringtrace          ringtrace record --level store -F -e sched_switch --
#                      perf bench ...
#   ringtrace+ustack   ... --ustack sched_switch (frame-pointer walk)
#   ringtrace+stacks   ... --stack sched_switch --ustack sched_switch
#                      (kernel and user stack, as perf -g)
#   ringtrace+ucopy    ... --ustack sched_switch --ustack-mode copy
#                      --ustack-size 8192 (as perf's dwarf,8192)
#   perf               perf record -e sched:sched_switch -- perf bench ...
#   perf+g             ... -g (kernel and user call chain, frame pointers)
#   perf+dwarf         ... --call-graph dwarf,8192 (8 KiB of user stack)
#   bpftrace           'tracepoint:sched:sched_switch { @ = count(); }'
#   bpftrace+ustack    'tracepoint:sched:sched_switch { @[ustack] = count(); }'
#
# and, once, the bytes a stack costs on disk: the same load (2 x N round
# trips) recorded by ringtrace record at its defaults without and with
# --stack sched_switch --ustack sched_switch: the packed event data
# (cpu*.zst), the whole trace directory, and the events lost.
#
# Results in OUTDIR/prof.txt:
#   run part=P config=C round=R ns=X     profile: the loop's elapsed ns;
#                                        ustack: ns per switch (usecs/op
#                                        x 1000 / 2)
#   count part=P config=C round=R events=N bytes=B lost=L
#       events: samples of the spinner (profile), sched_switch records
#       (ustack); bytes: ringtrace's delivered bytes (`stats`), perf's
#       perf.data data section (its records), -1 for bpftrace (a map
#       of counts, no record per event); lost: ringtrace's lost_* and the
#       sampler's dropped_nesting, perf's LOST and LOST_SAMPLES records,
#       -1 for bpftrace (map updates are not lost; nothing is counted)
#   disk part=ustack config=C events=N lost=L data_bytes=B dir_bytes=D
#   unavailable part=P tracer=T reason=WORDS_JOINED_BY_UNDERSCORES
# Raw outputs in OUTDIR/prof/PART/.

set -euo pipefail
shopt -s inherit_errexit

(($# >= 2 && $# <= 4)) || { echo "usage: $0 OUTDIR profile|ustack [N] [ROUNDS]" >&2; exit 2; }
out=$1 part=$2 rounds=${4:-3}
case $part in
profile) n=${3:-250000000} ;;
ustack) n=${3:-10000} ;;
*) echo "$0: part must be profile or ustack, got '$part'" >&2; exit 2 ;;
esac
RT=/sys/kernel/debug/ringtrace
REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
CLI=$REPO/tools/ringtrace
SPIN=$REPO/tools/bench/rt-spin
WORK=/tmp/prof			# the guest's tmpfs
RAW=$out/prof/$part
LAST_CPU=$(($(nproc) - 1))
HZ=999

say() { echo "guest-bench: $part: $*"; }
fail() { say "$*"; exit 1; }

put() {
	printf '%s\n' "$2" >"$1" || fail "cannot write '$2' to $1"
}

# load CONFIG ROUND [PREFIX...]: one timed run of the load (under PREFIX,
# a tracer's command line ending in --, when it records the load itself).
load() {
	local c=$1 r=$2 v line
	shift 2
	if [[ $part == profile ]]; then
		line=$("$@" taskset -c 0 "$SPIN" "$n" 2>"$RAW/$c-$r.err") ||
			fail "$c: rt-spin failed: $(tail -3 "$RAW/$c-$r.err")"
		v=$(sed -n 's/^spin .*elapsed_ns=\([0-9]*\).*/\1/p' <<<"$line")
	else
		line=$("$@" taskset -c 0 perf bench sched pipe -l "$n" 2>"$RAW/$c-$r.err") ||
			fail "$c: perf bench sched pipe failed: $(tail -3 "$RAW/$c-$r.err")"
		v=$(awk '/usecs\/op/ { printf "%.1f", $1 * 1000 / 2 }' <<<"$line")
	fi
	[[ -n $v ]] || fail "$c: no time in: $line"
	echo "run part=$part config=$c round=$r ns=$v" >>"$out/prof.txt"
	say "$c round $r: $v ns"
}

count_line() {	# CONFIG ROUND EVENTS BYTES LOST
	echo "count part=$part config=$1 round=$2 events=$3 bytes=$4 lost=$5" >>"$out/prof.txt"
	say "$1 round $2: $3 events, $4 bytes, $5 lost"
}

# The sum of one field of every CPU's line in ringtrace's stats.
rt_stat() {	# FIELD-REGEX
	awk -v f="$1" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] ~ f) s += kv[2] } }
		END { print s + 0 }' "$RT/stats"
}

rt_nesting() {
	awk '$1 == "dropped_nesting" { print $2 }' "$RT/sample_stats" 2>/dev/null || echo 0
}

# --- ringtrace record ------------------------------------------------------
session_ringtrace() {	# CONFIG ROUND
	local c=$1 r=$2 dir=$WORK/rt ev bytes lost nest0 nest
	local -a args
	rm -rf "$dir"
	# Chunks stored, not compressed, while the load runs (as perf writes
	# perf.data): see the header.  +zstd: at ringtraced's default level.
	args=(--level store)
	[[ $c == *+zstd ]] && args=()
	if [[ $part == profile ]]; then
		# One event beside the samples: the spinner's exec, its name.
		args+=(--sample "$HZ" -F -e sched_process_exec)
	else
		args+=(-F -e sched_switch)
		case $c in
		*+ustack) args+=(--ustack sched_switch) ;;
		*+stacks) args+=(--stack sched_switch --ustack sched_switch) ;;
		*+ucopy) args+=(--ustack sched_switch --ustack-mode copy --ustack-size 8192) ;;
		esac
	fi
	put "$RT/clear" 1
	nest0=$(rt_nesting)
	load "$c" "$r" taskset -c "$LAST_CPU" "$CLI" record "${args[@]}" -o "$dir" --
	bytes=$(rt_stat '^bytes$')
	lost=$(($(rt_stat '^lost_') + $(rt_nesting) - nest0))
	"$CLI" report --stat "$dir" >"$RAW/$c-$r-stat.txt" 2>&1 ||
		fail "ringtrace report --stat failed: $(tail -3 "$RAW/$c-$r-stat.txt")"
	nest=cpu_sample
	[[ $part == ustack ]] && nest=sched_switch
	ev=$(awk -v n="$nest" '$1 == n { print $2; exit }' "$RAW/$c-$r-stat.txt")
	count_line "$c" "$r" "${ev:-0}" "$bytes" "$lost"
	rm -rf "$dir"
}

# ringtrace+timer: the sampler's timers alone, on every CPU at 999 Hz, no
# sample written: no pid filter (every task kept, so no timer parks) and
# tracing off (each tick stops before the stack walk and the reserve):
# what the timer interrupts cost the clock, on the load's CPU and on the
# idle one.
session_ringtrace_timer() {	# CONFIG ROUND
	put "$RT/tracing_on" 0
	echo 0 >"$RT/events/enable"
	put "$RT/set_event_pid" " "
	put "$RT/sample_hz" "$HZ"
	# +timer0: the last CPU offline meanwhile (its timer cancelled by the
	# sampler's cpuhp callback): the load's CPU's timer alone.
	[[ $1 == *+timer0 ]] && put "/sys/devices/system/cpu/cpu$LAST_CPU/online" 0
	load "$1" "$2"
	[[ $1 == *+timer0 ]] && put "/sys/devices/system/cpu/cpu$LAST_CPU/online" 1
	put "$RT/sample_hz" 0
}

# --- perf record -----------------------------------------------------------
session_perf() {	# CONFIG ROUND
	local c=$1 r=$2 f=$WORK/perf.data ev bytes lost
	local -a args
	if [[ $part == profile ]]; then
		args=(-e cpu-clock -F "$HZ" -g)
	else
		args=(-e sched:sched_switch)
		case $c in
		*+g) args+=(-g) ;;
		*+dwarf) args+=(--call-graph 'dwarf,8192') ;;
		esac
	fi
	rm -f "$f"
	load "$c" "$r" taskset -c "$LAST_CPU" perf record -q "${args[@]}" -o "$f" --
	perf report -i "$f" --stats >"$RAW/$c-$r-stats.txt" 2>&1 ||
		fail "perf report --stats failed: $(tail -3 "$RAW/$c-$r-stats.txt")"
	ev=$(awk '/^ *SAMPLE events:/ { print $3; exit }' "$RAW/$c-$r-stats.txt")
	# The file header's data section (its size at byte 48): every
	# record, the samples and the few comm/mmap/exit records of the
	# load; not the header and feature sections after it.  Not
	# `perf report -D`: its dump of 8 KiB dwarf stacks takes minutes.
	bytes=$(python3 -c 'import struct, sys
with open(sys.argv[1], "rb") as f:
    print(struct.unpack("<Q", f.read(56)[48:56])[0])' "$f")
	lost=$(awk '/^ *LOST(_SAMPLES)? events:/ { s += $3 } END { print s + 0 }' "$RAW/$c-$r-stats.txt")
	count_line "$c" "$r" "${ev:-0}" "$bytes" "$lost"
	rm -f "$f"
}

# --- bpftrace ------------------------------------------------------------
bpf_prog() {	# CONFIG
	case $part,$1 in
	profile,*) echo "profile:hz:$HZ { @[kstack, ustack] = count(); }" ;;
	ustack,*+ustack) echo 'tracepoint:sched:sched_switch { @[ustack] = count(); }' ;;
	ustack,*) echo 'tracepoint:sched:sched_switch { @ = count(); }' ;;
	esac
}

# bpftrace_start CONFIG ROUND: bpftrace on the last CPU, its probes
# attached (BEGIN runs once every probe is) when it returns; pid in $bpid.
bpftrace_start() {
	local raw=$RAW/$1-$2
	taskset -c "$LAST_CPU" bpftrace -B line -e "BEGIN { printf(\"ready\\n\"); } $(bpf_prog "$1")" \
		>"$raw.bt" 2>"$raw.bt.err" &
	bpid=$!
	until grep -q '^ready$' "$raw.bt" 2>/dev/null; do
		kill -0 "$bpid" 2>/dev/null || return 1
		sleep 0.2
	done
}

bpftrace_stop() {	# CONFIG ROUND
	kill -INT "$bpid"
	wait "$bpid" || fail "bpftrace exited with status $?: $(tail -3 "$RAW/$1-$2.bt.err")"
}

session_bpftrace() {	# CONFIG ROUND
	local c=$1 r=$2 line ev sp
	bpftrace_start "$c" "$r" || fail "bpftrace did not start: $(tail -3 "$RAW/$c-$r.bt.err")"
	if [[ $part == ustack ]]; then
		load "$c" "$r"
		bpftrace_stop "$c" "$r"
		# Every CPU's switches are in the map: no figure of its own.
		count_line "$c" "$r" -1 -1 -1
		return
	fi
	# The spinner holds after its line, so that bpftrace finds it when
	# it names the user frames at exit.
	taskset -c 0 "$SPIN" "$n" hold >"$RAW/$c-$r.spin" 2>&1 &
	sp=$!
	until grep -q '^spin ' "$RAW/$c-$r.spin"; do
		kill -0 "$sp" 2>/dev/null || fail "rt-spin failed: $(cat "$RAW/$c-$r.spin")"
		sleep 0.2
	done
	bpftrace_stop "$c" "$r"
	kill "$sp"
	wait "$sp" 2>/dev/null || true
	line=$(<"$RAW/$c-$r.spin")
	echo "run part=$part config=$c round=$r ns=${line##*elapsed_ns=}" >>"$out/prof.txt"
	say "$c round $r: ${line##*elapsed_ns=} ns"
	# Entries "@[\n frames...\n]: COUNT"; the spinner's run through spin_leaf.
	ev=$(awk '/^@\[/ { blk = ""; inb = 1; next }
		inb && /^\]: [0-9]+$/ { if (blk ~ /spin_leaf/) s += $2; inb = 0; next }
		inb { blk = blk $0 "\n" }
		END { print s + 0 }' "$RAW/$c-$r.bt")
	((ev > 0)) || fail "bpftrace: no sample through spin_leaf in $RAW/$c-$r.bt"
	count_line "$c" "$r" "$ev" -1 -1
	((r)) && rm -f "$RAW/$c-$r.bt"
	return 0
}

# --- bytes on disk: ringtrace record at its defaults, with and without stacks
disk() {	# CONFIG
	local c=$1 dir=$WORK/disk ev lost data all
	local -a args=(-F -e sched_switch)
	[[ $c == *+stacks ]] && args+=(--stack sched_switch --ustack sched_switch)
	rm -rf "$dir"
	put "$RT/clear" 1
	taskset -c "$LAST_CPU" "$CLI" record "${args[@]}" -o "$dir" -- \
		taskset -c 0 perf bench sched pipe -l $((2 * n)) >"$RAW/disk-$c.out" 2>&1 ||
		fail "disk $c: ringtrace record failed: $(tail -3 "$RAW/disk-$c.out")"
	lost=$(rt_stat '^lost_')
	"$CLI" report --stat "$dir" >"$RAW/disk-$c-stat.txt" 2>&1 ||
		fail "disk $c: report --stat failed: $(tail -3 "$RAW/disk-$c-stat.txt")"
	ev=$(awk '$1 == "sched_switch" { print $2; exit }' "$RAW/disk-$c-stat.txt")
	data=$(find "$dir" -name 'cpu*.zst' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	all=$(find "$dir" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	ls -la "$dir" >"$RAW/disk-$c.ls"
	echo "disk part=ustack config=$c events=${ev:-0} lost=$lost data_bytes=$data dir_bytes=$all" >>"$out/prof.txt"
	say "disk $c: ${ev:-0} sched_switch, $lost lost, $data bytes of event data, $all in the directory"
	rm -rf "$dir"
}

command -v perf >/dev/null || fail "perf is not installed"
[[ -x $CLI ]] || fail "no $CLI (make -C tools)"
[[ $part == ustack || -x $SPIN ]] || fail "no $SPIN (make -C tools/bench)"
mkdir -p "$RAW" "$WORK"
[[ -e $out/prof.txt ]] || : >"$out/prof.txt"

# ringtrace at the module's defaults (the parts before may have changed
# them; guest-bench.sh noted them at load).
put "$RT/tracing_on" 0
echo 0 >"$RT/events/enable"
if [[ -s $out/rt-defaults ]]; then
	read -r sb nsb mode <"$out/rt-defaults"
	put "$RT/mode" "$mode"
	put "$RT/num_subbufs" 2
	put "$RT/subbuf_size" "$sb"
	put "$RT/num_subbufs" "$nsb"
fi

if [[ $part == profile ]]; then
	configs=(ringtrace ringtrace+zstd ringtrace+timer perf)
	# The timer on the load's CPU alone, where a CPU can go offline.
	[[ $LAST_CPU != 0 && -w /sys/devices/system/cpu/cpu$LAST_CPU/online ]] &&
		configs+=(ringtrace+timer0)
else
	configs=(ringtrace ringtrace+ustack ringtrace+stacks ringtrace+ucopy perf perf+g perf+dwarf)
fi
# bpftrace needs BPF, BTF and its own tracepoint/perf-event access in this
# kernel: tried once, its refusal is the table's reason.
if ! command -v bpftrace >/dev/null; then
	echo "unavailable part=$part tracer=bpftrace reason=bpftrace_is_not_installed_(tools/install-deps)" >>"$out/prof.txt"
elif bpftrace -B line -e 'BEGIN { printf("ok\n"); exit(); }' >"$RAW/bpftrace-probe.out" 2>&1 &&
	grep -q '^ok$' "$RAW/bpftrace-probe.out"; then
	bpftrace --version >"$RAW/bpftrace-version.txt" 2>&1 || true
	if [[ $part == profile ]]; then
		configs+=(bpftrace)
	else
		configs+=(bpftrace bpftrace+ustack)
	fi
else
	echo "unavailable part=$part tracer=bpftrace reason=$(tail -1 "$RAW/bpftrace-probe.out" | tr -cs 'A-Za-z0-9.:' '_')" >>"$out/prof.txt"
	say "bpftrace: not run: $(tail -1 "$RAW/bpftrace-probe.out")"
fi
{
	echo "ringtrace stack_depth $(<"$RT/stack_depth") ustack_depth $(cat "$RT/ustack_depth" 2>/dev/null)"
	echo "kernel.perf_event_max_stack $(sysctl -n kernel.perf_event_max_stack)"
	perf version
} >"$RAW/depths.txt" 2>&1

for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#configs[@]}; k++)); do
		c=${configs[(k + r) % ${#configs[@]}]}
		load untraced "$r"
		if [[ $c == ringtrace+timer* ]]; then
			session_ringtrace_timer "$c" "$r"
		else
			"session_${c%%+*}" "$c" "$r"
		fi
	done
done
load untraced "$rounds"
if [[ $part == ustack ]]; then
	disk ringtrace
	disk ringtrace+stacks
fi
rm -rf "$WORK"
exit 0
