# SPDX-License-Identifier: GPL-2.0
#
# The sampler (sourced by tools/tests/profile_guest.sh): sample_hz and
# sample_stats; `record --sample 999 -F -- spin-workload 2` with a
# busy shell running outside the recording: the spinner's and the
# kernel reader's samples are theirs (tid and pid), in user and kernel
# mode as they ran, none of the outsider's, and report --folded gives
# the reader's kernel stacks through read, cut at the interrupted ip (no
# timer-interrupt frames); CPU 1 offline and online again while sampling,
# samples on CPU 1 after it; and an unload with the sampler on, which
# stops it (a timer left behind would run freed code).

SPIN=$REPO/tools/tests/spin-workload

# sample_refused VALUE...: one write(2) of each VALUE to sample_hz, each
# through its own open, in one python (tools/tests/write_each.py: an exec
# costs seconds under the debug kernel's KASAN): each must fail with
# EINVAL and leave the rate as it was.
sample_refused() {
	local got before after i=0
	local -a values=("$@")
	while IFS='|' read -r got _ before after; do
		check "sample_hz refuses '${values[i]}' with EINVAL ($got), stays $before" \
			test "$got" = EINVAL -a "$after" = "$before"
		i=$((i + 1))
	done < <(python3 -S "$REPO/tools/tests/write_each.py" --read "$RT/sample_hz" "$@" 2>&1)
	((i == $#)) || check "sample_hz: every value written ($i of $#)" false
}

# Whether file $1 (sample_stats) is in its format (events.rst).
sample_stats_format() {
	python3 -S -c 'import re, sys
sys.exit(not re.fullmatch(r"samples \d+\ndropped_nesting \d+\nticks \d+\n"
                          r"parks \d+\n(cpu\d+ ticks \d+ parks \d+\n)+",
                          open(sys.argv[1]).read()))' "$1"
}

sample_abi() {
	check "sample_hz reads 0 (off) after the load" \
		test "$(cat "$RT/sample_hz" 2>/dev/null)" = 0
	check "sample_stats: samples, dropped_nesting, ticks, parks, then per CPU" \
		sample_stats_format "$RT/sample_stats"
	sample_refused 10001 abc -1
	check "sample_hz takes 10000" sh -c "echo 10000 >$RT/sample_hz"
	check "sample_hz takes 250 over 10000, and reads it" \
		sh -c "echo 250 >$RT/sample_hz && test \"\$(cat $RT/sample_hz)\" = 250"
	sample_refused 10001 12abc
	check "sample_hz takes 0: off" \
		sh -c "echo 0 >$RT/sample_hz && test \"\$(cat $RT/sample_hz)\" = 0"
}

sample_profile() {
	local out=$W/sample1 bg
	# An outsider busy in user mode while the workload runs.
	sh -c 'while :; do :; done' &
	bg=$!
	"$CLI" record --sample 999 -F -o "$out" -- "$SPIN" 2 \
		>"$W/sample.wl" 2>"$W/sample.rec.err"
	check "record --sample 999 -F -- spin-workload exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/sample.rec.err"
	check "record put sample_hz back to 0" test "$(<"$RT/sample_hz")" = 0
	# The outsider's part is done: it would take a vCPU from the readers.
	kill "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	"$CLI" report -e cpu_sample "$out" >"$W/sample.report" 2>/dev/null
	"$CLI" report --folded "$out" >"$W/sample.folded" 2>/dev/null
	check "report --folded of the profile exits 0" test $? -eq 0
	# Without kprobes the workload's mappings (after its exec) are not
	# recorded: its frames are checked by address (sample_check.py).
	local byaddr=()
	[[ -e /sys/kernel/debug/kprobes/list ]] || byaddr=(--by-address)
	python3 -S "$REPO/tools/tests/sample_check.py" "$W/sample.wl" "$bg" \
		"$W/sample.report" "$W/sample.folded" 2 "${byaddr[@]}" \
		>"$W/sample.check" 2>&1
	check_output "$W/sample.check" $?
}

# CPU 1 goes offline and online while every CPU samples; the marker says
# when it is back.
sample_hotplug() {
	local out=$W/sample2 on=/sys/devices/system/cpu/cpu1/online n
	if [[ ! -w $on ]]; then
		check "CPU 1 can go offline (hotplug test)" false
		return
	fi
	"$CLI" record --sample 999 -e sched_switch -o "$out" -- sh -c "
		sleep 0.3; echo 0 >$on || exit 1; sleep 0.3
		echo 1 >$on || exit 1; echo back >$RT/marker; sleep 0.6" \
		>/dev/null 2>"$W/sample.hp.err"
	check "record --sample with CPU 1 offline and online again exits 0" \
		test $? -eq 0
	sed 's/^/# stderr: /' "$W/sample.hp.err"
	echo 1 >"$on" 2>/dev/null
	"$CLI" report -e cpu_sample,ringtrace_marker "$out" >"$W/sample.hp" 2>/dev/null
	n=$(awk '/ringtrace_marker: .*back/ { m = 1; next }
		 m && / cpu1 .* cpu_sample: / { n++ } END { print n + 0 }' "$W/sample.hp")
	note "CPU 1: $n samples after it came back"
	check "samples on CPU 1 after it came back online" test "$n" -ge 5
}

# The module goes with the sampler on: sample_hz reads 0 after a reload.
sample_unload() {
	local log lines
	echo 500 >"$RT/sample_hz"
	lines=$(dmesg | wc -l)
	check "rmmod with the sampler at 500 Hz" rmmod ringtrace
	sleep 0.5
	log=$(dmesg | tail -n +$((lines + 1)) |
	      grep -E 'BUG|WARNING|Oops|general protection|RIP:')
	[[ -n $log ]] && note "$log"
	check "no oops or WARN after the unload (no timer left running)" test -z "$log"
	setup "reload ringtrace.ko" insmod "$BUILD/$KVER/ringtrace.ko" || return
	check "sample_hz reads 0 after the reload" test "$(<"$RT/sample_hz")" = 0
}

profile_sample() {
	sample_abi
	sample_profile
	sample_hotplug
	sample_unload
}
