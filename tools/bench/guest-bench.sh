#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-bench.sh MODROOT ITERATIONS REPS [PARTS [CALLS ROUNDS DURATION_MS]]
#
# Runs inside a tools/vm/vmtest guest (started by tools/bench/run-bench);
# not meant for the host.  Loads ringtrace.ko and ringtrace_bench.ko from
# MODROOT/$RT_KVER/, starts LTTng when run-bench built it for this kernel
# ($RT_LTTNG, see guest-lttng.sh; else OUTDIR/lttng.unavailable says why)
# and runs, all in this one boot, the PARTS asked for (a comma-separated
# list, default ring,overhead,storm,pipeline; stack, kprobe, filter on request):
#
# ring: the writer-cost cases below.
#   default    ringtrace's default geometry, overwrite mode, nobody
#              consuming: ringtrace vs the kernel ring buffer vs the floor,
#              plus the p-* profile loops; one CPU, then all CPUs.
#   subbuf4k   the same with 4 KiB x 256 sub-buffers, i.e. ringtrace sized
#              like the kernel ring buffer's page-sized sub-buffers (same
#              1 MiB per CPU): shows what sub-buffer switches cost.
#   discard    default geometry in discard mode (the kernel ring buffer
#              without RB_FL_OVERWRITE), nobody consuming: once full, every
#              reserve is dropped, so this times the drop path of both.
#   consumer   only if daemon/ringtraced exists: ringtrace on one CPU while
#              ringtraced, pinned to another CPU, drains every buffer.
#   persist    (issue 32) the writer with its rings in the persistent region
#              the kernel command line reserves (run-bench passes
#              tools/vm/region-args' words), beside the same writer on
#              ordinary pages, at one geometry (the default), overwrite
#              mode, nobody consuming, in PERSIST_ROUNDS rounds (default
#              3): "pagesR" on the module loaded without a region, then
#              ringtrace.ko reloaded with persist= (or persist_addr= and
#              persist_size= for a memmap= range; the last round's image
#              released) for "persistR", then reloaded without.
#              Skipped, and said, when the command line has no region.
#
# RING_CASES (default "default subbuf4k discard consumer persist") picks cases and
# RING_CPUS (default both: one CPU, then all) the default case's CPU sets,
# for a short boot under -icount (see benchmarks.rst, "Instruction counts").
#
# Each case leaves NAME.txt (the bench module's `result`) and NAME.stats
# (ringtrace's `stats` after tracing off, counting that case only) in
# $RT_VM_OUT.
#
# overhead: guest-overhead.sh, getppid() untraced and traced by ringtrace
#           (+ ringtraced), trace-cmd, perf and LTTng:
#           $RT_VM_OUT/overhead.txt.  CALLS per loop (default 300000),
#           ROUNDS (default 3).
# storm:    guest-storm.sh, CALLS getppid() calls on every CPU at once, all
#           system calls recorded by each tracer at its defaults and at
#           1 MiB per CPU: what each loses.  $RT_VM_OUT/storm.txt.
# storm-consumer: guest-storm.sh's consumer rounds (issue 34): the storm,
#           ringtraced -l store against lttng-consumerd at LTTng's
#           defaults, alternating, $STORM_CONSUMER_ROUNDS rounds (default
#           6): each consumer's CPU time.  $RT_VM_OUT/storm-consumer.txt.
# pipeline: guest-pipeline.sh, the highest zero-loss event rate of each
#           tracer on the same tracepoint load: $RT_VM_OUT/pipeline.txt;
#           DURATION_MS per step (default 2000).
# stack:    guest-why.sh stack, the cost of a sched_switch with its kernel
#           stack in ringtrace, ftrace, perf and LTTng: $RT_VM_OUT/why.txt;
#           $WHY_LOOPS round trips of perf bench sched pipe (default 10000).
# kprobe:   guest-why.sh kprobe, the cost of a kprobe hit in each: CALLS
#           getppid() calls, also into $RT_VM_OUT/why.txt.
# filter:   guest-why.sh filter, the cost of a system call entry that an
#           in-kernel filter drops or keeps, in ringtrace, ftrace and
#           perf: CALLS getppid() calls, also into $RT_VM_OUT/why.txt.
# profile:  guest-prof.sh profile, the cost and bytes of a 999 Hz sample
#           with its stacks in ringtrace, perf and bpftrace: $WHY_SPIN_LOOPS
#           rounds of rt-spin (default 250000000), into $RT_VM_OUT/prof.txt.
# ustack:   guest-prof.sh ustack, the cost and bytes of a user stack on
#           sched_switch in each, and ringtrace's bytes on disk with and
#           without stacks: $WHY_LOOPS round trips, also into prof.txt.
# (run-bench boots stack, kprobe, filter, profile and ustack under
# tcg,thread=single, apart from the others: they install and remove probes
# all the time.)
#
# The defaults the storm restores are saved first: ringtrace's geometry
# and mode as loaded ($RT_VM_OUT/rt-defaults) and ftrace's buffer size at
# boot ($RT_VM_OUT/ftrace-defaults).
#
# A part that fails does not stop the others; the exit status is that of
# the first failure.

set -euo pipefail

(($# == 3 || $# == 4 || $# == 7)) || {
	echo "usage: $0 MODROOT ITERATIONS REPS [PARTS [CALLS ROUNDS DURATION_MS]]" >&2
	exit 2
}
out=${RT_VM_OUT:?not in a vmtest guest}
moddir=$1/${RT_KVER:?not in a vmtest guest} iters=$2 reps=$3
parts=,${4:-ring,overhead,storm,pipeline}, calls=${5:-300000} rounds=${6:-3}
duration=${7:-2000}
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
RT=/sys/kernel/debug/ringtrace
BENCH=/sys/kernel/debug/ringtrace_bench

say() { echo "guest-bench: $*"; }

rt_set() {
	printf '%s\n' "$2" >"$RT/$1" || { say "cannot write '$2' to $RT/$1"; exit 1; }
}

# run_case NAME RUN-ARGS: one benchmark run with tracing on around it.
run_case() {
	local name=$1 args=$2 start
	say "$name: $args (mode $(<"$RT/mode"), $(<"$RT/subbuf_size") x $(<"$RT/num_subbufs") bytes per cpu)"
	start=$SECONDS
	rt_set tracing_on 1
	# The kernel ring buffer it is compared with copies ringtrace's mode.
	if ! printf '%s mode=%s\n' "$args" "$(<"$RT/mode")" >"$BENCH/run"; then
		rt_set tracing_on 0
		say "$name: the benchmark run failed"
		exit 1
	fi
	rt_set tracing_on 0
	cat "$BENCH/result" >"$out/$name.txt"
	cat "$RT/stats" >"$out/$name.stats"
	say "$name: done in $((SECONDS - start)) s"
}

for m in ringtrace ringtrace_bench; do
	[[ -f $moddir/$m.ko ]] || { say "missing $moddir/$m.ko"; exit 1; }
	insmod "$moddir/$m.ko"
done

nproc >"$out/nproc"
status=0
echo "$(<"$RT/subbuf_size") $(<"$RT/num_subbufs") $(<"$RT/mode")" >"$out/rt-defaults"
# Before first use ftrace says "7 (expanded: 1408)": the size it grows to.
sed 's/.*expanded: \([0-9]*\).*/\1/' /sys/kernel/tracing/buffer_size_kb >"$out/ftrace-defaults"
{ trace-cmd --version 2>&1 | grep -m1 version; perf version 2>&1; } >"$out/versions.txt" || true

# shellcheck source=tools/bench/guest-lttng.sh
. "$here/guest-lttng.sh"
if [[ $parts == *,overhead,* || $parts == *,storm,* || $parts == *,pipeline,* ||
	$parts == *,stack,* || $parts == *,kprobe,* || $parts == *,storm-consumer,* ]]; then
	say "lttng: starting lttng-sessiond"
	if lttng_start "$out"; then
		say "lttng: $(head -1 "$out/lttng-version.txt")"
	else
		say "lttng: unavailable: $(cat "$out/lttng.unavailable")"
	fi
fi

# The other parts run whatever happens here, so the ring cases run in a
# subshell: its `exit 1` ends only them.
# persist_args: the module arguments for the persistent region on this
# boot's command line (as selftests/persist_test.c reads it); fails if
# there is none.
persist_args() {
	local w size addr mult
	for w in $(</proc/cmdline); do
		case $w in
		reserve_mem=*:ringtrace)
			echo persist=ringtrace
			return 0 ;;
		memmap=*\$*)
			size=${w#memmap=} addr=${w#*\$}
			size=${size%%\$*}
			case $size in
			*[kK]) mult=$((1 << 10)) ;;
			*[mM]) mult=$((1 << 20)) ;;
			*[gG]) mult=$((1 << 30)) ;;
			*) mult=1 ;;
			esac
			size=${size%[kKmMgG]}
			echo "persist_addr=$addr persist_size=$((size * mult))"
			return 0 ;;
		esac
	done
	return 1
}

# reload_rt [ARGS...]: ringtrace.ko (and the bench module on top of it)
# loaded again, with ARGS.
reload_rt() {
	rmmod ringtrace_bench
	rmmod ringtrace
	insmod "$moddir/ringtrace.ko" "$@"
	insmod "$moddir/ringtrace_bench.ko"
}

# persist_live: the region holds this load's rings; a previous image (the
# last round's rmmod left one) is released first.
persist_live() {
	local uuid
	if grep -qx 'state previous' "$RT/persist/info"; then
		uuid=$(sed -n 's/^uuid //p' "$RT/persist/info")
		rt_set persist/release "$uuid"
	fi
	cat "$RT/persist/info" >"$out/persist.info"
	grep -qx 'state live' "$out/persist.info" ||
		{ say "persist: the region is not live: $(head -1 "$out/persist.info")"; exit 1; }
}

# The persist case (see the header): rounds of pages then the region, at
# one geometry.
persist_case() {
	local -a args
	local size num r
	if ! read -ra args < <(persist_args); then
		say "persist: skipped (no persistent region on the kernel command line)"
		return 0
	fi
	size=$(<"$RT/subbuf_size") num=$(<"$RT/num_subbufs")
	rt_set clear 1
	for ((r = 1; r <= ${PERSIST_ROUNDS:-3}; r++)); do
		rt_set mode overwrite
		rt_set subbuf_size "$size"
		rt_set num_subbufs "$num"
		run_case "pages$r" "iterations=$iters reps=$reps profile=0 cpus=both"
		say "persist: reloading ringtrace.ko with ${args[*]}"
		reload_rt "${args[@]}"
		persist_live
		rt_set mode overwrite
		rt_set subbuf_size "$size"
		rt_set num_subbufs "$num"
		run_case "persist$r" "iterations=$iters reps=$reps profile=0 cpus=both"
		reload_rt
	done
}

ring_cases() {
	local cases=" ${RING_CASES:-default subbuf4k discard consumer persist} "
	rt_set mode overwrite
	[[ $cases != *" default "* ]] ||
		run_case default "iterations=$iters reps=$reps profile=1 cpus=${RING_CPUS:-both}"

	if [[ $cases == *" subbuf4k "* ]]; then
		default_size=$(<"$RT/subbuf_size") default_num=$(<"$RT/num_subbufs")
		rt_set subbuf_size 4096
		rt_set num_subbufs $((default_size * default_num / 4096))
		run_case subbuf4k "iterations=$iters reps=$reps profile=0 cpus=both"
		rt_set subbuf_size "$default_size"
		rt_set num_subbufs "$default_num"
	fi

	if [[ $cases == *" discard "* ]]; then
		rt_set mode discard
		rt_set clear 1	# stats per case: the mode change keeps the counters
		run_case discard "iterations=$iters reps=$reps profile=0 cpus=both"
		rt_set mode overwrite
	fi

	daemon=$PWD/daemon/ringtraced
	if [[ $cases != *" consumer "* ]]; then
		:
	elif [[ -x $daemon ]] && (($(nproc) > 1)); then
		# The bench writes on the first online CPU, the daemon runs on the last.
		trace=/tmp/bench-trace	# the guest's tmpfs
		rt_set clear 1		# before the daemon opens the buffers (-EBUSY after)
		taskset -c "$(($(nproc) - 1))" "$daemon" --no-start -o "$trace" \
			>"$out/consumer.log" 2>&1 &
		dpid=$!
		for _ in $(seq 100); do
			[[ -e $trace/metadata ]] || ! kill -0 "$dpid" 2>/dev/null && break
			sleep 0.2
		done
		if [[ -e $trace/metadata ]]; then
			run_case consumer "iterations=$iters reps=$reps profile=0 cpus=one"
		else
			say "consumer: ringtraced did not start, see consumer.log"
		fi
		kill -TERM "$dpid" 2>/dev/null || true
		drc=0
		wait "$dpid" || drc=$?
		echo "ringtraced exit status $drc; trace size $(du -sk "$trace" | cut -f1) KiB" \
			>>"$out/consumer.log"
		# Everything the daemon drained after tracing stopped counts too.
		[[ -e $out/consumer.txt ]] && cat "$RT/stats" >"$out/consumer.stats"
	else
		say "consumer: skipped (no executable $daemon or only one CPU)"
	fi

	[[ $cases != *" persist "* ]] || persist_case
}

# run_part NAME COMMAND...: run one part, remember the first failure.
run_part() {
	local name=$1 start=$SECONDS rc=0
	shift
	[[ $parts == *",$name,"* ]] || return 0
	say "$name: start"
	# Not `(...) || rc=$?`: that would switch off set -e inside.
	set +e
	(set -e; "$@")
	rc=$?
	set -e
	if ((rc)); then
		say "$name: FAILED (status $rc) after $((SECONDS - start)) s"
		((status)) || status=$rc
	else
		say "$name: done in $((SECONDS - start)) s"
	fi
}

run_part ring ring_cases
run_part overhead "$here/guest-overhead.sh" "$out" "$calls" "$rounds"
run_part storm "$here/guest-storm.sh" "$out" "$calls"
run_part storm-consumer "$here/guest-storm.sh" "$out" "$calls" "${STORM_CONSUMER_ROUNDS:-6}"
run_part pipeline "$here/guest-pipeline.sh" "$out" "$duration"
run_part stack "$here/guest-why.sh" "$out" stack "${WHY_LOOPS:-10000}" "$rounds"
run_part kprobe "$here/guest-why.sh" "$out" kprobe "$calls" "$rounds"
run_part filter "$here/guest-why.sh" "$out" filter "$calls" "$rounds"
run_part profile "$here/guest-prof.sh" "$out" profile "${WHY_SPIN_LOOPS:-250000000}" "$rounds"
run_part ustack "$here/guest-prof.sh" "$out" ustack "${WHY_LOOPS:-10000}" "$rounds"

lttng_stop

rmmod ringtrace_bench
rmmod ringtrace
exit "$status"
