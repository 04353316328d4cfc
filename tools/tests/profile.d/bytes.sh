# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "bytes" of tools/tests/profile_guest.sh: what both stacks cost on
# disk (issue 30: at most 1.3x the trace without them, and no loss where
# that trace has none).  The bench's steady load, `perf bench sched pipe`
# (two processes on CPU 0, a sched_switch each way per round trip),
# recorded at the module's defaults by record -F -e sched_switch, without
# and with --stack sched_switch --ustack sched_switch.  Checks:
#   - neither recording lost an event or a packet (report --stat)
#   - with stacks, the packed event data (cpu*.zst) is at most 1.3x the
#     bytes without: the stacks are interned (a stack_def once per
#     packet), and each event's stack_ref has an untimed header (its 27
#     bits the id again: the same 12 bytes for the same stacks, which
#     zstd stores for next to nothing; with its event's time bits it was
#     2.0x here)
#   - after ringtrace unpack, babeltrace2 reads the trace with stacks
#     without a word on stderr, a stack_ref after each sched_switch, at
#     its time
# The ratio is a fact of the format (a reference repeats), not a timing:
# the load's timing changes how many events there are, not what each
# costs.  What does not repeat (the state dump, the mappings --ustack
# records) is paid once, a stack's definition once per packet, so
# the load is long enough to be steady: 8000 round trips, 16000
# switches (1.17x on 6.12 with 10000, 1.27x with 4000; 20000 give 1.10x).
# ~50 s per kernel under single-threaded TCG.  Not one of the debug
# kernel's parts (tools/run-tests): that PREEMPT_RT debug build is slow
# enough under TCG that ringtraced flushes its packets part full, each
# defining its ~19 distinct stacks again (1.26-1.40x there).

BYTES_LOOPS=8000

# bytes_record NAME ARGS...: the load recorded into $W/bytes-NAME.
bytes_record() {
	local name=$1
	shift
	echo 1 >"$RT/clear"
	"$CLI" record "$@" -F -e sched_switch -o "$W/bytes-$name" -- \
		taskset -c 0 perf bench sched pipe -l "$BYTES_LOOPS" \
		>"$W/bytes-$name.out" 2>&1
}

# bytes_lost DIR: events and packets lost, as report --stat counts them.
bytes_lost() {
	"$CLI" report --stat "$1" 2>/dev/null |
		awk '/events lost,/ { e += $3; p += $6 } END { print e + 0, p + 0 }'
}

bytes_packed() {
	find "$1" -maxdepth 1 -name 'cpu*.zst' -printf '%s\n' |
		awk '{ s += $1 } END { print s + 0 }'
}

profile_bytes() {
	local plain=$W/bytes-plain stacks=$W/bytes-stacks p s n r failed0=$failed
	if ! command -v perf >/dev/null; then
		check "perf is installed (the load: perf bench sched pipe)" false
		return
	fi
	setup "record -F -e sched_switch -- perf bench sched pipe" \
		bytes_record plain || { tail -5 "$plain.out"; return; }
	setup "record --stack --ustack sched_switch -F -- perf bench sched pipe" \
		bytes_record stacks --stack sched_switch --ustack sched_switch ||
		{ tail -5 "$stacks.out"; return; }
	check "no event or packet lost without stacks ($(bytes_lost "$plain"))" \
		[ "$(bytes_lost "$plain")" = "0 0" ]
	check "no event or packet lost with both stacks ($(bytes_lost "$stacks"))" \
		[ "$(bytes_lost "$stacks")" = "0 0" ]
	p=$(bytes_packed "$plain")
	s=$(bytes_packed "$stacks")
	r=$(awk -v s="$s" -v p="$p" 'BEGIN { printf "%.3f", p ? s / p : 99 }')
	note "packed: $p bytes without stacks, $s with both: ${r}x"
	check "both stacks packed at most 1.3x the trace without ($s / $p = ${r}x)" \
		awk -v s="$s" -v p="$p" 'BEGIN { exit !(p > 0 && s * 10 <= p * 13) }'

	setup "ringtrace unpack of the trace with stacks" \
		"$CLI" unpack "$stacks" "$W/bytes-ctf" >"$W/bytes-unpack.out" 2>&1 ||
		{ cat "$W/bytes-unpack.out"; return; }
	babeltrace2 --no-delta --clock-cycles "$W/bytes-ctf" >"$W/bytes-bt2.txt" \
		2>"$W/bytes-bt2.err"
	r=$?
	check "babeltrace2 reads the trace with stacks (exit $r), nothing on stderr ($(head -c 300 "$W/bytes-bt2.err"))" \
		[ "$r" = 0 -a ! -s "$W/bytes-bt2.err" ]
	# (Nearly) each sched_switch is followed by its stack_ref, at its
	# time (the load's: perf's; a kernel thread's may have no user side
	# but still has its kernel stack).
	n=$(awk '
		{ t = $1; name = $3 }
		name == "sched_switch:" { sw++; st = t; next }
		name == "stack_ref:" { if (t == st) ok++; else bad++; next }
		END { printf "%d %d %d", sw, ok, bad + 0 }' "$W/bytes-bt2.txt")
	note "babeltrace2: sched_switch, stack_ref at its time, at another: $n"
	check "babeltrace2: a stack_ref at its sched_switch's time after each ($n)" \
		awk -v n="$n" 'BEGIN { split(n, a, " "); exit !(a[1] >= 2 * '"$BYTES_LOOPS"' && a[2] * 100 >= a[1] * 99 && a[3] == 0) }'
	# A failure's traces go to the results, to be looked at.
	if ((failed != failed0)) && [[ -n ${RT_VM_OUT:-} ]]; then
		cp -a "$plain" "$stacks" "$RT_VM_OUT/" 2>/dev/null
	fi
	rm -rf "$plain" "$stacks" "$W/bytes-ctf"
}
