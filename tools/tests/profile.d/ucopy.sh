# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "ucopy" of tools/tests/profile_guest.sh: user stacks copied
# (record --ustack-mode copy, module/ustack.c) and unwound offline with
# the binaries' CFI (report --binaries, tools/cli/unwind.c).  Checks:
#   - abi: ustack_mode takes fp and copy only, ustack_size 512..32768 and
#     at most subbuf_size / 4; a bad write (a word, 511, 32769, above the
#     quarter, a mode "bogus") is refused with EINVAL and changes nothing
#   - record --ustack sched_switch --ustack-mode copy --mmap -F --
#     ucopy-workload (-O2 -fomit-frame-pointer): of the sleeping thread's
#     switch-outs, >= 90 % unwind to d, c and main, in that order, each
#     frame inside that function as the binary's symbol table places it;
#     without --binaries each copy prints its ip and a note; record warned
#     of copy mode on a hot event, and put ustack_mode and ustack_size back
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
# frames on one line, leaf first ("-" for none).
ucopy_frames() {
	awk -v tid="$2" '
		function flush() { if (open) print (f == "" ? "-" : f); open = 0 }
		/ sched_switch: / { flush()
			if ($0 ~ ("prev_comm=\"ucopy-workload\", prev_tid=" tid ","))
				{ open = 1; f = "" }
			next }
		/^    0x[0-9a-f]+ \[user\]$/ { if (open) f = f (f == "" ? "" : " ") $1; next }
		/^    / { next }
		{ flush() }
		END { flush() }' "$1"
}

# ucopy_share FRAMES WLOUT: the percent of FRAMES' stacks whose first
# three frames lie in d, c and main (nm's ranges, moved to where main ran).
ucopy_share() {
	python3 - "$1" "$2" "$REPO/tools/tests/ucopy-workload" <<'PY'
import subprocess, sys
out = dict(l.split()[:2] for l in open(sys.argv[2]) if l.strip())
syms = {}
for l in subprocess.run(['nm', '-S', '--defined-only', sys.argv[3]],
                        capture_output=True, text=True).stdout.splitlines():
    w = l.split()
    if len(w) == 4 and w[2] in 'tT':
        syms[w[3]] = (int(w[0], 16), int(w[1], 16))
bias = int(out['main'], 16) - syms['main'][0]
def inside(a, f):
    return bias + syms[f][0] <= int(a, 16) < bias + syms[f][0] + syms[f][1]
stacks = [l.split() for l in open(sys.argv[1]) if l.strip() != '-']
good = sum(1 for s in stacks if len(s) >= 3 and inside(s[0], 'd') and
           inside(s[1], 'c') and inside(s[2], 'main'))
print(100 * good // len(stacks) if stacks else 0)
PY
}

profile_ucopy() {
	local wl=$REPO/tools/tests/ucopy-workload d=$W before tid n pct bins sub
	before=$(ucopy_state)
	check "ucopy: ustack_mode is fp, ustack_size 8192 by default" \
		eval '[ "$(cat "$RT/ustack_mode")" = fp ] && [ "$(cat "$RT/ustack_size")" = 8192 ]'
	ucopy_refused ustack_mode bogus
	ucopy_refused ustack_mode "copy fp"
	ucopy_refused ustack_size 511
	ucopy_refused ustack_size 32769
	ucopy_refused ustack_size 4k
	sub=$(cat "$RT/subbuf_size")
	ucopy_refused ustack_size $((sub / 4 + 8))
	echo copy >"$RT/ustack_mode" && echo 512 >"$RT/ustack_size"
	check "ucopy: ustack_mode copy and ustack_size 512 taken" \
		eval '[ "$(cat "$RT/ustack_mode")" = copy ] && [ "$(cat "$RT/ustack_size")" = 512 ]'
	echo fp >"$RT/ustack_mode" && echo 8192 >"$RT/ustack_size"

	local least=200 pid
	if [[ -e /sys/kernel/debug/kprobes/list ]]; then
		setup "record --ustack sched_switch --ustack-mode copy --mmap -F -- ucopy-workload" \
			"$CLI" record --ustack sched_switch --ustack-mode copy --mmap -F \
			-o "$d/ucopy-rec" -- "$wl" 300 2000000 >"$d/ucopy-wl.out" \
			2>"$d/ucopy-record.err" || { cat "$d/ucopy-record.err"; return; }
	else
		least=50
		"$wl" 3000 2000000 >"$d/ucopy-wl.out" &
		pid=$!
		setup "ucopy: ucopy-workload running before the recording (no kprobes)" \
			wait_for 10 grep -q "^main " "$d/ucopy-wl.out" || { kill $pid; return; }
		setup "record --ustack sched_switch --ustack-mode copy --mmap -p $pid" \
			"$CLI" record --ustack sched_switch --ustack-mode copy --mmap \
			-p "$pid" --duration 1s -o "$d/ucopy-rec" \
			2>"$d/ucopy-record.err" || { cat "$d/ucopy-record.err"; kill $pid; return; }
		kill $pid 2>/dev/null
		wait $pid 2>/dev/null
	fi
	check "ucopy: record warned of copy mode on sched_switch" \
		grep -q 'ustack-mode copy on sched_switch' "$d/ucopy-record.err"
	check "ucopy: record put ustack_mode, ustack_size and set_event_ustack back" \
		[ "$(ucopy_state)" = "$before" ]
	bins=$d/ucopy-bins
	mkdir -p "$bins"
	ln -sf "$wl" "$bins/"
	ln -sf "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)" "$bins/libc.so.6"
	ln -sf "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$bins/ld.so"
	"$CLI" report --binaries "$bins" "$d/ucopy-rec" >"$d/ucopy-report" \
		2>"$d/ucopy-report.err"
	# Without the binaries a copy is its ip and a note: copies were made.
	"$CLI" report "$d/ucopy-rec" >"$d/ucopy-report-nobin" 2>&1
	check "ucopy: the trace's user stacks are copies (no binaries: ip and a note)" \
		grep -q '^    (user stack: no binary of its mappings at hand' \
		"$d/ucopy-report-nobin"
	tid=$(awk '$1 == "pid" { print $4 }' "$d/ucopy-wl.out")
	ucopy_frames "$d/ucopy-report" "$tid" >"$d/ucopy-sleeper.frames"
	n=$(grep -vc '^-$' "$d/ucopy-sleeper.frames")
	pct=$(ucopy_share "$d/ucopy-sleeper.frames" "$d/ucopy-wl.out")
	note "ucopy: sleeper $tid: $(wc -l <"$d/ucopy-sleeper.frames") switch-outs, $n with user stacks, $pct % d <- c <- main"
	check "ucopy: the sleeper's switch-outs had at least $least user stacks ($n)" \
		[ "$n" -ge "$least" ]
	check "ucopy: >= 90 % of them unwind to d, c, main ($pct %)" [ "$pct" -ge 90 ]

	# fp mode on the same binary: what copy mode buys, printed only.
	if [ "$least" = 200 ] && "$CLI" record --ustack sched_switch -F -o "$d/ucopy-recfp" -- \
		"$wl" 100 2000000 >"$d/ucopy-wlfp.out" 2>"$d/ucopy-recordfp.err"; then
		"$CLI" report "$d/ucopy-recfp" >"$d/ucopy-reportfp" 2>&1
		tid=$(awk '$1 == "pid" { print $4 }' "$d/ucopy-wlfp.out")
		ucopy_frames "$d/ucopy-reportfp" "$tid" >"$d/ucopy-sleeperfp.frames"
		note "ucopy: fp mode, same binary: $(ucopy_share "$d/ucopy-sleeperfp.frames" "$d/ucopy-wlfp.out") % d <- c <- main"
	fi
}
