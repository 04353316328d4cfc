# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "ustack" of tools/tests/profile_guest.sh: user stacks by frame
# pointers (record --ustack, module/ustack.c).  Checks:
#   - selftests/ustack_test: set_event_ustack and ustack_depth refuse bad
#     writes (depth 0, 128, a word) with nothing changed; sched_switch
#     with both trailers, kernel_stack then user_stack; a kernel thread's
#     switch carries no user_stack; ustack_stats counts the walks
#   - record --ustack sched_switch -F -- ustack-workload: of the sleeping
#     thread's switch-outs, >= 90 % have user frames whose first three
#     are in d (the syscall), c and main, in that order; ustack_stats
#     counted walks; record put set_event_ustack and ustack_depth back
#   - --ustack-depth 2: no user stack longer, cut ones say so
#   - --ustack naming the state dump, --ustack-depth 128: refused

# ustack_frames REPORT TID: per switch-out of TID once it is the workload
# (after its exec: before, it is record's child), its user frames on one
# line (addresses, leaf first), "-" for none (its last, after exit_mm).
ustack_frames() {
	awk -v tid="$2" '
		function flush() { if (open) print (f == "" ? "-" : f); open = 0 }
		/ sched_switch: / { flush()
			if ($0 ~ ("prev_comm=\"ustack-workload\", prev_tid=" tid ","))
				{ open = 1; f = "" }
			next }
		/^    0x[0-9a-f]+ \[user\]$/ { if (open) f = f (f == "" ? "" : " ") $1; next }
		/^    / { next }
		{ flush() }
		END { flush() }' "$1"
}

# in_dcm FRAMES FUNCS: the share (percent) of FRAMES' stacks whose first
# three frames are in d, c and main (FUNCS: the workload's "func" lines).
in_dcm() {
	python3 - "$1" "$2" <<'PY'
import sys
funcs = {}
for l in open(sys.argv[2]):
    w = l.split()
    if w and w[0] == 'func':
        funcs[w[1]] = (int(w[2], 16), int(w[3], 16))
lines = [l.split() for l in open(sys.argv[1]) if l.strip() != '-']
def inside(a, f):
    return funcs[f][0] <= int(a, 16) < funcs[f][1]
good = sum(1 for f in lines if len(f) >= 3 and inside(f[0], 'd') and inside(f[1], 'c') and inside(f[2], 'main'))
print(100 * good // len(lines) if lines else 0)
PY
}

ustack_state() {
	cat "$RT/set_event_ustack" "$RT/ustack_depth" 2>&1
}

profile_ustack() {
	# Files in $W itself, as ustack-*: the suite keeps them (RT_VM_OUT).
	local wl=$REPO/tools/tests/ustack-workload d=$W before tid n pct st
	local walks0 walks1
	RT_ROOT= "$REPO/selftests/ustack_test" >"$d/ustack-selftest.tap" 2>&1
	check_output_tap "$d/ustack-selftest.tap"

	before=$(ustack_state)
	walks0=$(awk '$1 == "walks" { print $2 }' "$RT/ustack_stats")
	setup "record --ustack sched_switch -F -- ustack-workload" \
		"$CLI" record --ustack sched_switch -F -o "$d/ustack-rec" -- \
		"$wl" 300 2000000 >"$d/ustack-wl.out" 2>"$d/ustack-record.err" ||
		{ cat "$d/ustack-record.err"; return; }
	walks1=$(awk '$1 == "walks" { print $2 }' "$RT/ustack_stats")
	check "record --ustack put set_event_ustack and ustack_depth back" \
		[ "$(ustack_state)" = "$before" ]
	check "ustack_stats counted the walks (${walks0:-?} -> ${walks1:-?})" \
		[ "${walks1:-0}" -gt "$((${walks0:-0} + 100))" ]
	"$CLI" report "$d/ustack-rec" >"$d/ustack-report" 2>"$d/ustack-report.err"
	tid=$(awk '$1 == "pid" { print $4 }' "$d/ustack-wl.out")
	ustack_frames "$d/ustack-report" "$tid" >"$d/ustack-sleeper.frames"
	n=$(grep -vc '^-$' "$d/ustack-sleeper.frames")
	pct=$(in_dcm "$d/ustack-sleeper.frames" "$d/ustack-wl.out")
	note "sleeper $tid: $(wc -l <"$d/ustack-sleeper.frames") switch-outs, $n with user stacks, $pct % in d <- c <- main"
	check "the sleeper's switch-outs had at least 200 user stacks ($n)" [ "$n" -ge 200 ]
	check "ustack: >= 90 % of the sleeper's user stacks are d, c, main ($pct %)" \
		[ "$pct" -ge 90 ]

	setup "record --ustack sched_switch --ustack-depth 2" \
		"$CLI" record --ustack sched_switch --ustack-depth 2 -F -o "$d/ustack-rec2" -- \
		"$wl" 50 2000000 >"$d/ustack-wl2.out" 2>"$d/ustack-record2.err" ||
		{ cat "$d/ustack-record2.err"; return; }
	"$CLI" report "$d/ustack-rec2" >"$d/ustack-report2" 2>&1
	tid=$(awk '$1 == "pid" { print $4 }' "$d/ustack-wl2.out")
	ustack_frames "$d/ustack-report2" "$tid" >"$d/ustack-sleeper2.frames"
	check "--ustack-depth 2: user stacks, none longer than 2 frames" \
		awk 'NF > 2 { bad = 1 } NF == 2 { two++ } END { exit bad || two < 40 }' \
		"$d/ustack-sleeper2.frames"
	check "--ustack-depth 2: the cut stacks say so" \
		grep -q '^    (user stack: truncated at ustack_depth)$' "$d/ustack-report2"

	st=0
	"$CLI" record --ustack ringtrace_statedump_task -o "$d/ustack-rec3" -- true \
		>"$d/ustack-refuse1.out" 2>&1 || st=$?
	check "--ustack of the state dump refused ($st), nothing recorded" \
		eval '[ "$st" -ne 0 ] && [ ! -e "$d/ustack-rec3" ] && [ "$(ustack_state)" = "$before" ]'
	st=0
	"$CLI" record --ustack sched_switch --ustack-depth 128 -o "$d/ustack-rec4" -- true \
		>"$d/ustack-refuse2.out" 2>&1 || st=$?
	check "--ustack-depth 128 refused ($st)" eval '[ "$st" -eq 2 ] && [ ! -e "$d/ustack-rec4" ]'
}

# check_output_tap FILE: a kselftest binary's TAP ("ok N name", "not ok N
# name"; a SKIP is a failure) as this suite's checks.
check_output_tap() {
	local line n=0
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			echo "not ok - ustack_test: ${line#ok } (skipped)"
			failed=$((failed + 1)) n=$((n + 1)) ;;
		"ok "[0-9]*)
			echo "ok - ustack_test: ${line#ok }"
			passed=$((passed + 1)) n=$((n + 1)) ;;
		"not ok "[0-9]*)
			echo "not ok - ustack_test: ${line#not ok }"
			failed=$((failed + 1)) n=$((n + 1)) ;;
		*) echo "# $line" ;;
		esac
	done <"$1"
	if ((n < 2)); then
		echo "not ok - ustack_test: ran $n of its 2 tests"
		failed=$((failed + 1))
	fi
}
