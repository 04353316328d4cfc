# SPDX-License-Identifier: GPL-2.0
#
# The sampler's parking (module/sampler.c, sourced by
# tools/tests/profile_guest.sh): `record --sample 999 -F` of
# burst-workload with record, ringtraced and the workload all on CPU 0
# (taskset), so that nothing the pid filter keeps runs on CPU 1.  The
# kernel's own hrtimer_expire_entry events (tracefs) count the sampler's
# timer expiries per CPU: at most a few on CPU 1 (it parks at its first
# tick on a dropped task) while CPU 0's sample; an unparked timer expires
# hundreds of times a second on each CPU.  sample_stats' per-CPU ticks
# must agree.  The workload runs in bursts of 300 us of CPU, shorter than
# the 1001 us period, with sleeps between, so that CPU 0's timer parks
# and restarts all the time; its samples per second of CPU time are
# printed, not checked (TCG's timers fire late).

BURST=$REPO/tools/tests/burst-workload
PARK_TP=/sys/kernel/tracing/events/timer/hrtimer_expire_entry

# CPU $2's "ticks" in a copy $1 of sample_stats, or -1 if it has none.
park_ticks() {
	awk -v c="cpu$2" '$1 == c { t = $3 } END { print t == "" ? -1 : t }' "$1"
}

# The sampler's timer expiries on CPU $1 in tracefs' buffer.
park_expiries() {
	grep -c 'function=rtr_sampler_fire' \
		"/sys/kernel/tracing/per_cpu/cpu$1/trace"
}

profile_park() {
	local out=$W/park s0=$W/park.s0 s1=$W/park.s1 pid cpu_ns n e0 e1
	local t0 t1 ticks
	if [[ $(nproc) -lt 2 || ! -w $PARK_TP/enable ]]; then
		check "two CPUs and tracefs' hrtimer_expire_entry (park test)" false
		return
	fi
	echo 0 >/sys/kernel/tracing/tracing_on
	echo >/sys/kernel/tracing/trace
	echo 1 >"$PARK_TP/enable"
	echo 1 >/sys/kernel/tracing/tracing_on
	cp "$RT/sample_stats" "$s0"
	taskset -c 0 "$CLI" record --sample 999 -F -o "$out" -- \
		"$BURST" 500 300 >"$W/park.wl" 2>"$W/park.err"
	check "record --sample 999 -F -- burst-workload, all on CPU 0, exits 0" \
		test $? -eq 0
	cp "$RT/sample_stats" "$s1"
	echo 0 >/sys/kernel/tracing/tracing_on
	echo 0 >"$PARK_TP/enable"
	e0=$(park_expiries 0)
	e1=$(park_expiries 1)
	echo >/sys/kernel/tracing/trace
	echo 1 >/sys/kernel/tracing/tracing_on
	sed 's/^/# stderr: /' "$W/park.err"
	pid=$(awk '$1 == "pid" { print $2 }' "$W/park.wl")
	cpu_ns=$(awk '$1 == "cpu_ns" { print $2 }' "$W/park.wl")
	n=$("$CLI" report -e cpu_sample "$out" 2>/dev/null |
	    grep -cE " cpu_sample: tid=-?[0-9]+, pid=${pid:-x}, ")
	t0=$(park_ticks "$s0" 1)
	t1=$(park_ticks "$s1" 1)
	ticks=$((t1 - t0))
	[[ $t0 -lt 0 || $t1 -lt 0 ]] && ticks=-1
	note "workload: $cpu_ns ns of CPU in $(awk '$1 == "bursts" { print $2 }' "$W/park.wl") bursts, $n samples: $((n * 1000000000 / (${cpu_ns:-0} + 1))) a second of its CPU time at 999 Hz asked"
	note "sampler timer expiries: CPU 0 $e0, CPU 1 $e1; CPU 1's ticks in sample_stats: $ticks"
	check "CPU 0 samples the workload ($n samples, $e0 expiries)" \
		test "$n" -ge 20 -a "$e0" -ge "$n"
	check "CPU 1, where nothing kept runs: 1 to 3 expiries of the sampler's timer ($e1)" \
		test "$e1" -ge 1 -a "$e1" -le 3
	check "sample_stats' CPU 1 ticks agree with tracefs ($ticks vs $e1)" \
		test "$ticks" -eq "$e1"
}
