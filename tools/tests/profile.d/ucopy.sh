# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "ucopy" of tools/tests/profile_guest.sh: user stacks copied
# (record --ustack-mode copy, module/ustack.c) and unwound offline with
# the binaries' CFI (tools/cli/unwind.c: the trace's symbol store, report
# --binaries).  Checks:
#   - abi: ustack_mode takes fp and copy only, ustack_size 512..32768 and
#     at most subbuf_size / 4; a bad write (a word, 511, 32769, above the
#     quarter, a mode "bogus") is refused with EINVAL and changes nothing
#   - record --ustack sched_switch --ustack-mode copy --mmap --no-symbols -F --
#     ucopy-workload (-O2 -fomit-frame-pointer): of the sleeping thread's
#     switch-outs, >= 90 % unwind three frames deep in the workload by
#     report --binaries, and, after ringtrace symbols, to d, c and main in
#     that order, named from the trace's store; --folded joins them as
#     ...;main;c;d; without any binary each copy
#     prints its ip and a note; record warned of copy mode on a hot event,
#     and put ustack_mode and ustack_size back
#   - the same recorded in fp mode: printed (its share in d, c, main), not
#     asserted: what rbp holds in code without frame pointers is not ours
#     to promise
# A kernel without kprobes (the debug kernel) records no mapping made
# after the start (design.rst, D12): there the workload runs first, and
# record -p PID --duration 1s takes its mappings from the state dump (at
# least 50 user stacks then, the rest as above; no fp-mode print).

ucopy_state() {
	cat "$RT/ustack_mode" "$RT/ustack_size" "$RT/set_event_ustack" 2>&1
}

# ucopy_refused FILE VALUE: the write fails with EINVAL, state unchanged.
ucopy_refused() {
	local before err
	before=$(ucopy_state)
	err=$( (printf '%s' "$2" >"$RT/$1") 2>&1)
	check "ucopy: $1 refuses '$2' (EINVAL), nothing changed" \
		eval '[[ $err == *"Invalid argument"* ]] && [ "$(ucopy_state)" = "$before" ]'
}

# ucopy_frames REPORT TID: per switch-out of TID by the workload, its user
# frames on one line, leaf first ("-" for none): a frame of the workload
# named (report after ringtrace symbols) as its function, one of the
# workload unnamed (report --binaries alone) as "wl", any other as "?".
ucopy_frames() {
	awk -v tid="$2" '
		function flush() { if (open) print (f == "" ? "-" : f); open = 0 }
		function add(w) { if (open) f = f (f == "" ? "" : " ") w }
		/ sched_switch: / { flush()
			if ($0 ~ ("prev_comm=\"ucopy-workload\", prev_tid=" tid ","))
				{ open = 1; f = "" }
			next }
		/^    [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+ \(ucopy-workload\)$/ {
			sub(/^    /, ""); sub(/\+.*/, ""); add($0); next }
		/^    ucopy-workload\+0x[0-9a-f]+ \[bid:[0-9a-f]+\]$/ { add("wl"); next }
		/^    \(/ { next }
		/^    / { add("?"); next }
		{ flush() }
		END { flush() }' "$1"
}

# ucopy_share FRAMES WANT...: the percent of FRAMES' stacks whose first
# frames are WANT..., in that order.
ucopy_share() {
	local f=$1
	shift
	awk -v want="$*" '
		$0 != "-" { n++; if (substr($0, 1, length(want) + 1) == want " " || $0 == want) good++ }
		END { print n ? int(100 * good / n) : 0 }' "$f"
}

profile_ucopy() {
	local wl=$REPO/tools/tests/ucopy-workload d=$W before tid n pct bins sub
	before=$(ucopy_state)
	check "ucopy: ustack_mode is fp, ustack_size 8192 by default" \
		eval '[ "$(<"$RT/ustack_mode")" = fp ] && [ "$(<"$RT/ustack_size")" = 8192 ]'
	ucopy_refused ustack_mode bogus
	ucopy_refused ustack_mode "copy fp"
	ucopy_refused ustack_size 511
	ucopy_refused ustack_size 32769
	ucopy_refused ustack_size 4k
	sub=$(<"$RT/subbuf_size")
	ucopy_refused ustack_size $((sub / 4 + 8))
	echo copy >"$RT/ustack_mode" && echo 512 >"$RT/ustack_size"
	check "ucopy: ustack_mode copy and ustack_size 512 taken" \
		eval '[ "$(<"$RT/ustack_mode")" = copy ] && [ "$(<"$RT/ustack_size")" = 512 ]'
	echo fp >"$RT/ustack_mode" && echo 8192 >"$RT/ustack_size"

	local least=200 pid
	if [[ -e /sys/kernel/debug/kprobes/list ]]; then
		setup "record --ustack sched_switch --ustack-mode copy --mmap -F -- ucopy-workload" \
			"$CLI" record --ustack sched_switch --ustack-mode copy --mmap --no-symbols -F \
			-o "$d/ucopy-rec" -- "$wl" 300 2000000 >"$d/ucopy-wl.out" \
			2>"$d/ucopy-record.err" || { cat "$d/ucopy-record.err"; return; }
	else
		least=50
		"$wl" 3000 2000000 >"$d/ucopy-wl.out" &
		pid=$!
		setup "ucopy: ucopy-workload running before the recording (no kprobes)" \
			wait_for 10 grep -q "^main " "$d/ucopy-wl.out" || { kill $pid; return; }
		setup "record --ustack sched_switch --ustack-mode copy --mmap -p $pid" \
			"$CLI" record --ustack sched_switch --ustack-mode copy --mmap --no-symbols \
			-p "$pid" --duration 1s -o "$d/ucopy-rec" \
			2>"$d/ucopy-record.err" || { cat "$d/ucopy-record.err"; kill $pid; return; }
		kill $pid 2>/dev/null
		wait $pid 2>/dev/null
	fi
	check "ucopy: record warned of copy mode on sched_switch" \
		grep -q 'ustack-mode copy on sched_switch' "$d/ucopy-record.err"
	check "ucopy: record put ustack_mode, ustack_size and set_event_ustack back" \
		[ "$(ucopy_state)" = "$before" ]
	# Without any binary a copy is its ip and a note: copies were made.
	"$CLI" report "$d/ucopy-rec" >"$d/ucopy-report-nobin" 2>&1
	check "ucopy: the trace's user stacks are copies (no binaries: ip and a note)" \
		grep -q '^    (user stack: no binary of its mappings at hand' \
		"$d/ucopy-report-nobin"
	tid=$(awk '$1 == "pid" { print $4 }' "$d/ucopy-wl.out")
	# report --binaries: unwound with the binaries there, frames unnamed.
	bins=$d/ucopy-bins
	mkdir -p "$bins"
	ln -sf "$wl" "$bins/"
	ln -sf "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" "$bins/libc.so.6"
	ln -sf "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$bins/ld.so"
	"$CLI" report --binaries "$bins" "$d/ucopy-rec" >"$d/ucopy-report-bins" \
		2>"$d/ucopy-report-bins.err"
	ucopy_frames "$d/ucopy-report-bins" "$tid" >"$d/ucopy-sleeper-bins.frames"
	pct=$(ucopy_share "$d/ucopy-sleeper-bins.frames" wl wl wl)
	check "ucopy: report --binaries unwinds >= 90 % of them three frames deep in the workload ($pct %)" \
		[ "$pct" -ge 90 ]
	# ringtrace symbols: the binaries in the trace, frames named.
	setup "ucopy: ringtrace symbols of the recording" \
		"$CLI" symbols "$d/ucopy-rec" >"$d/ucopy-symbols.out" 2>&1 ||
		{ cat "$d/ucopy-symbols.out"; return; }
	"$CLI" report "$d/ucopy-rec" >"$d/ucopy-report" 2>"$d/ucopy-report.err"
	ucopy_frames "$d/ucopy-report" "$tid" >"$d/ucopy-sleeper.frames"
	n=$(grep -vc '^-$' "$d/ucopy-sleeper.frames")
	pct=$(ucopy_share "$d/ucopy-sleeper.frames" d c main)
	note "ucopy: sleeper $tid: $(wc -l <"$d/ucopy-sleeper.frames") switch-outs, $n with user stacks, $pct % d <- c <- main"
	check "ucopy: the sleeper's switch-outs had at least $least user stacks ($n)" \
		[ "$n" -ge "$least" ]
	check "ucopy: >= 90 % of them unwind to d, c, main, named from the store ($pct %)" \
		[ "$pct" -ge 90 ]
	check "ucopy: report --folded joins them: ucopy-workload;...;main;c;d N" \
		eval '"$CLI" report --folded "$d/ucopy-rec" 2>/dev/null | grep -Eq "^ucopy-workload;(.*;)?main;c;d [0-9]+\$"'

	# fp mode on the same binary: what copy mode buys, printed only.
	if [ "$least" = 200 ] && "$CLI" record --ustack sched_switch -F -o "$d/ucopy-recfp" -- \
		"$wl" 100 2000000 >"$d/ucopy-wlfp.out" 2>"$d/ucopy-recordfp.err"; then
		"$CLI" symbols "$d/ucopy-recfp" >/dev/null 2>&1
		"$CLI" report "$d/ucopy-recfp" >"$d/ucopy-reportfp" 2>&1
		tid=$(awk '$1 == "pid" { print $4 }' "$d/ucopy-wlfp.out")
		ucopy_frames "$d/ucopy-reportfp" "$tid" >"$d/ucopy-sleeperfp.frames"
		note "ucopy: fp mode, same binary: $(ucopy_share "$d/ucopy-sleeperfp.frames" d c main) % d <- c <- main"
	fi
}
