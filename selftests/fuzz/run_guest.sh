#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run_guest.sh - rt_fuzz in a test guest, then, in the same boot, a replay
# of one seed, and proof that the module still records and delivers: the
# integrity stress test, a ringtraced round trip of numbered markers, and
# a clean unload.
#
#   tools/vm/vmtest -- env BUILD=DIR selftests/fuzz/run_guest.sh
#   RT_VM_ACCEL=tcg,thread=single tools/vm/vmtest -- \
#       env BUILD=DIR RT_FUZZ_TOGGLE=1 selftests/fuzz/run_guest.sh
#
# RT_FUZZ_TOGGLE=1 (or --toggle) lets the fuzzer switch tracepoint-backed
# events (and event_fork) on and off, which patches kernel text: run it
# under single-threaded TCG only (QEMU's multi-threaded TCG then runs stale
# code: int3 oopses, soft lockups in syscall_trace_enter).  Without it,
# only the state dump's events, which attach nothing, are switched.
#
# Environment: BUILD (module tree, $BUILD/$RT_KVER/*.ko), RT_KVER,
# RT_FUZZ_SECONDS (default 120), RT_FUZZ_SEED (default: the fuzzer picks one
# and prints it; set it to replay), RT_FUZZ_ONLY (roles, see rt_fuzz
# --help), RT_FUZZ_STRESS=0 to skip the stress test, RT_FUZZ_STRESS_ARGS
# (harness options for stress_test, e.g. "-v overwrite"; default: every
# variant), RT_FUZZ_REPLAY=0 to skip the replay (the fuzzer's own
# determinism, the same on every kernel: tools/run-tests skips it on the
# debug kernel), RT_VM_OUT (the fuzzer's operation log goes there).
#
# Ends with "fuzz: N passed, M failed"; exits 1 if anything failed.

set -u

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd -- "$here/../.." && pwd -P)
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly KO=$BUILD/$KVER/ringtrace.ko
readonly ST_KO=$BUILD/$KVER/ringtrace_selftest.ko
readonly R=/sys/kernel/debug/ringtrace
readonly FUZZ=$here/rt_fuzz
readonly SECONDS_=${RT_FUZZ_SECONDS:-120}
TOGGLE=${RT_FUZZ_TOGGLE:-0}
[[ ${1:-} == --toggle ]] && TOGGLE=1
readonly TOGGLE
W=$(mktemp -d /var/tmp/rt-fuzz.XXXXXX) || exit 1
DMESG_START=$(dmesg | wc -l)

. "$repo/tools/tests/check.sh"
. "$repo/tools/vm/splat-patterns"

note() { echo "# $*"; }

finish() {
	check "no WARN, BUG, oops, lockdep, KASAN, UBSAN or kmemleak report" no_kernel_splat
	check_summary fuzz
	exit
}

bail() {
	check "$*" false
	finish
}

# The patterns tools/vm/vmtest fails a run on, and kmemleak's reports,
# since this script started.
no_kernel_splat() {
	local re="$SPLAT_RE|kmemleak"
	if [[ -w /sys/kernel/debug/kmemleak ]]; then
		echo scan >/sys/kernel/debug/kmemleak
		sleep 1
		echo scan >/sys/kernel/debug/kmemleak
		note "kmemleak scanned: $(grep -c '^unreferenced object' /sys/kernel/debug/kmemleak) unreferenced objects"
		cat /sys/kernel/debug/kmemleak
	fi
	! dmesg | tail -n +$((DMESG_START + 1)) | grep -E -- "$re"
}

loaded() { [[ -d /sys/module/$1 ]]; }

# No event with a stack ("!name" for each listed), the default depth.
reset_stacks() {
	local stacks
	stacks=$(sed 's/^/!/' "$R/set_event_stack") || return
	if [[ -n $stacks ]]; then
		# shellcheck disable=SC2086 # the names, one line
		echo $stacks >"$R/set_event_stack" || return
	fi
	echo 32 >"$R/stack_depth"
}

# Back to a fresh module's state: every event off, no pid filter, no
# stacks, no predicate (the marker's would hide markers from what follows),
# no sampler, no mappings, user stacks by frame pointers (ustack_size
# once subbuf_size is back: at most a quarter of it).
reset_module() {
	local f

	for f in "$R"/events/*/filter; do
		[[ ! -e $f ]] || echo 0 >"$f" || return
	done
	echo 0 >"$R/tracing_on" &&
		echo 0 >"$R/events/enable" &&
		echo 0 >"$R/event_fork" &&
		echo >"$R/set_event_pid" &&
		{ [[ ! -e $R/set_event_cgroup ]] || echo >"$R/set_event_cgroup"; } &&
		reset_stacks &&
		echo 0 >"$R/sample_hz" &&
		echo 0 >"$R/mmap_events" &&
		echo 0 >"$R/mmap_dump" &&
		echo fp >"$R/ustack_mode" &&
		echo discard >"$R/mode" &&
		echo 4096 >"$R/subbuf_size" &&
		echo 16 >"$R/num_subbufs" &&
		echo 65536 >"$R/subbuf_size" &&
		echo 1 >"$R/clear" &&
		echo 8192 >"$R/ustack_size"
}

run_fuzzer() {
	local -a args=(--seconds "$SECONDS_" --ko "$KO" --selftest-ko "$ST_KO"
		       --tmpdir "$W")
	local rc

	[[ -n ${RT_FUZZ_SEED:-} ]] && args+=(--seed "$RT_FUZZ_SEED")
	[[ -n ${RT_FUZZ_ONLY:-} ]] && args+=(--only "$RT_FUZZ_ONLY")
	((TOGGLE)) && args+=(--toggle)
	[[ -n ${RT_VM_OUT:-} && -d ${RT_VM_OUT:-} ]] &&
		args+=(--log "$RT_VM_OUT/fuzz-ops.log")
	note "rt_fuzz ${args[*]}"
	timeout --signal=KILL $((SECONDS_ + 600)) "$FUZZ" "${args[@]}" \
		>"$W/fuzz.out" 2>&1
	rc=$?
	cat "$W/fuzz.out"
	note "rt_fuzz exit status $rc"
	grep -q '^rt_fuzz: seed [0-9]*: [0-9]* operations, 0 assertion failures$' \
		"$W/fuzz.out" && ((rc == 0))
}

# One seed, twice: every thread issues the same operations (what the kernel
# answers may differ, so results are cut from the log lines).  The fuzzer
# writes its own pid to set_event_pid now and then, the one input that is
# not the seed's (with RT_FUZZ_SEED=10207418494557597616 the two runs
# differed in it): both runs are told to write 1 there instead.
replay() {
	local seed=${RT_FUZZ_SEED:-4242} i th a b
	for i in 1 2; do
		"$FUZZ" --seed "$seed" --ops 300 --only ctl0,check --own-pid 1 --tmpdir "$W" \
			--log "$W/replay$i.log" >"$W/replay$i.out" 2>&1 ||
			{ cat "$W/replay$i.out"; return 1; }
		reset_module || return 1
	done
	for th in ctl0 check; do
		a=$(grep -a "^$th " "$W/replay1.log" | sed -E 's/ -> [^ ]*//g')
		b=$(grep -a "^$th " "$W/replay2.log" | sed -E 's/ -> [^ ]*//g')
		note "replay: $th: $(grep -c . <<<"$a") operations each time"
		[[ -n $a && $a == "$b" && $(grep -c . <<<"$a") -eq 300 ]] ||
			{ diff <(echo "$a") <(echo "$b") | head -n 10; return 1; }
	done
}

# The kselftest-harness stress test; every test case must pass.
run_stress() {
	local out=$W/stress.out rc plan ok notok
	# shellcheck disable=SC2086 # harness options, split on purpose
	timeout --signal=KILL 1200 "$repo/selftests/stress_test" \
		${RT_FUZZ_STRESS_ARGS:-} >"$out" 2>&1
	rc=$?
	cat "$out"
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$out" | head -n1)
	ok=$(grep -c '^ok [0-9]' "$out")
	notok=$(grep -c '^not ok [0-9]' "$out")
	note "stress_test: exit $rc, $ok of ${plan:-?} ok, $notok not ok"
	[[ -n $plan ]] && ((plan > 0 && ok == plan && notok == 0 && rc == 0)) &&
		! grep -q '^ok [0-9].*# SKIP' "$out"
}

# ringtraced records numbered markers on every CPU; every one comes back.
round_trip() {
	local n=300 c pid got bad=0
	local -a cpus
	read -r -a cpus < <(sed 's/,/ /g' /sys/devices/system/cpu/online |
			    awk '{for (i = 1; i <= NF; i++) { split($i, r, "-");
				for (c = r[1]; c <= (r[2] == "" ? r[1] : r[2]); c++) printf "%d ", c } }')
	reset_module || return 1
	"$repo/daemon/ringtraced" -o "$W/rt" >"$W/rt.out" 2>"$W/rt.err" &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -q recording "$W/rt.err" && break
		sleep 0.1
	done
	for c in "${cpus[@]}"; do
		taskset -c "$c" sh -c "i=0; while [ \$i -lt $n ]; do
			echo \"fuzzrt cpu=$c seq=\$i\" >$R/marker; i=\$((i + 1)); done"
	done
	kill -TERM "$pid"
	wait "$pid" || { note "ringtraced: $(cat "$W/rt.err")"; return 1; }
	"$repo/tools/ringtrace" unpack "$W/rt" "$W/rt.ctf" >"$W/unpack.log" 2>&1 ||
		{ note "unpack: $(cat "$W/unpack.log")"; return 1; }
	babeltrace2 "$W/rt.ctf" >"$W/rt.txt" 2>"$W/rt.bt.err" ||
		{ note "babeltrace2: $(head -c 300 "$W/rt.bt.err")"; return 1; }
	for c in "${cpus[@]}"; do
		got=$(sed -nE "s/.* ringtrace_marker: \{ cpu_id = $c,.* data = \"fuzzrt cpu=$c seq=([0-9]+).*/\1/p" \
			"$W/rt.txt" | awk -v n="$n" '{ if ($1 != NR - 1) bad++ } END { print NR, bad + 0 }')
		note "cpu$c: $got (markers, out of order)"
		[[ $got == "$n 0" ]] || bad=1
	done
	((!bad))
}

# An open buffer pins the module; closed, it unloads and both trees go.
unload() {
	local ret=0
	exec {fd}<"$R/cpu/0/buffer" || return 1
	rmmod ringtrace 2>/dev/null && ret=1
	exec {fd}<&-
	rmmod ringtrace && ! loaded ringtrace && [[ ! -e $R && ! -e /dev/ringtrace ]] &&
		((ret == 0))
}

main() {
	note "rt_fuzz on $KVER, modules from $BUILD/$KVER, toggle=$TOGGLE"
	# A TSC calibrated under host load makes the guest clock (and so
	# every duration here) run fast: say what it got.
	note "guest clock: $(dmesg | grep -m1 -o 'tsc: Detected.*')"
	[[ $EUID -eq 0 ]] || bail "must run as root (in the test guest)"
	[[ -x $FUZZ ]] || make -s -C "$here" >/dev/null || bail "build $FUZZ"
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	setup "insmod ringtrace" insmod "$KO"
	setup "insmod ringtrace_selftest" insmod "$ST_KO"
	loaded ringtrace || bail "ringtrace not loaded"
	setup "initial state" reset_module

	check "rt_fuzz: no assertion failed (toggle=$TOGGLE)" run_fuzzer
	check "both modules still loaded after the fuzzer" \
		eval 'loaded ringtrace && loaded ringtrace_selftest'
	loaded ringtrace || insmod "$KO"
	loaded ringtrace_selftest || insmod "$ST_KO"
	check "state reset after the fuzzer" reset_module
	if [[ ${RT_FUZZ_REPLAY:-1} != 0 ]]; then
		check "rt_fuzz replays a seed's operations" replay
	fi
	if [[ ${RT_FUZZ_STRESS:-1} != 0 ]]; then
		check "stress_test in the same boot: every case passes" run_stress
	fi
	check "ringtraced round trip: every marker of every CPU, in order" round_trip
	check "rmmod ringtrace_selftest" rmmod ringtrace_selftest
	check "ringtrace pinned while a buffer is open, then unloads" unload
	rm -rf "$W"
	finish
}

main "$@"
