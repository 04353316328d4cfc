# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "ustack" of tools/tests/profile_guest.sh: user stacks by frame
# pointers (record --ustack, module/ustack.c).  Checks:
#   - selftests/ustack_test: set_event_ustack and ustack_depth refuse bad
#     writes (depth 0, 128, a word) with nothing changed; sched_switch
#     with both stacks (a stack_ref naming a kernel and a user stack_def);
#     a kernel thread's switch carries no user stack; ustack_stats counts
#     the walks; a user stack the test lays out itself (forged: 200 frame
#     records, a next frame in kernel text, one in a page never touched)
#     walked exactly as laid out, that page left absent
#   - record --ustack sched_switch -F -- ustack-workload: of the sleeping
#     thread's switch-outs, >= 90 % have user frames whose first three
#     are in d (the syscall), c and main, in that order; ustack_stats
#     counted walks; record put set_event_ustack and ustack_depth (17,
#     not its default) back
#   - --ustack-depth 2: no user stack longer, cut ones say so
#   - -e uprobe:ustack-workload:d --ustack (the same probe): at d's first
#     instruction the module reads the caller at [sp] ("ustack entry"):
#     >= 90 % of the probe's events have d's first byte, then c, then
#     main, and say the caller was read at [sp]
#   - --ustack naming the state dump, --ustack-depth 128, a uprobe not
#     in -e: refused, nothing changed (user space only: not in
#     RT_PROFILE_SCOPE=kernel)

# A user frame of report: "FUNC+0xOFF (BINARY)", named from the store
# ringtraced filled at the stop (--ustack implies --mmap), else
# "BINARY+0xOFF [bid:...]" or "0xADDR [user]"; $1 is FUNC+0xOFF.
USTACK_USER_FRAME='/^    ([A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+ \([^()]*\)|[^ ]+\+0x[0-9a-f]+ \[bid:[0-9a-f]+\]|0x[0-9a-f]+ \[user\])$/'

# ustack_frames REPORT TID: per switch-out of TID once it is the workload
# (after its exec: before, it is record's child), its user frames on one
# line (FUNC+0xOFF, leaf first), "-" for none (its last, after exit_mm).
ustack_frames() {
	awk -v tid="$2" '
		function flush() { if (open) print (f == "" ? "-" : f); open = 0 }
		/ sched_switch: / { flush()
			if ($0 ~ ("prev_comm=\"ustack-workload\", prev_tid=" tid ","))
				{ open = 1; f = "" }
			next }
		'"$USTACK_USER_FRAME"' { if (open) f = f (f == "" ? "" : " ") $1; next }
		/^    / { next }
		{ flush() }
		END { flush() }' "$1"
}

# ustack_by_address FRAMES WL_OUT: on a kernel without kprobes the
# mappings of a process exec'd after the start are not recorded (only the
# state dump's), so its frames stay "0xADDR [user]": each address in one
# of the workload's functions (its "func NAME START END" lines) is
# rewritten NAME+0xOFF in place; with kprobes the names must come from
# the trace itself and nothing is rewritten.
ustack_by_address() {
	[[ -e /sys/kernel/debug/kprobes/list ]] && return
	python3 -S - "$1" "$2" <<'PY'
import sys
funcs = []
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) == 4 and w[0] == 'func':
        funcs.append((w[1], int(w[2], 16), int(w[3], 16)))
def name(t):
    if not t.startswith('0x'):
        return t
    a = int(t, 16)
    for n, lo, hi in funcs:
        if lo <= a < hi:
            return '%s+0x%x' % (n, a - lo)
    return t
lines = [' '.join(name(t) for t in l.split()) for l in open(sys.argv[1])]
open(sys.argv[1], 'w').write(''.join(l + '\n' for l in lines))
PY
}

# in_dcm FRAMES: the share (percent) of FRAMES' stacks whose first three
# frames are named d, c and main.
in_dcm() {
	python3 -S - "$1" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1]) if l.strip() != '-']
def named(frame, func):
    return frame.startswith(func + '+0x')
good = sum(1 for f in lines if len(f) >= 3 and named(f[0], 'd') and named(f[1], 'c') and named(f[2], 'main'))
print(100 * good // len(lines) if lines else 0)
PY
}

readonly RINGTRACE_USTACK_DEFAULT=64

ustack_state() {
	cat "$RT/set_event_ustack" "$RT/ustack_depth" 2>&1
}

profile_ustack() {
	# Files in $W itself, as ustack-*: the suite keeps them (RT_VM_OUT).
	local wl=$REPO/tools/tests/ustack-workload d=$W before tid n pct st
	local walks0 walks1
	RT_ROOT= "$REPO/selftests/ustack_test" >"$d/ustack-selftest.tap" 2>&1
	check_output_tap "$d/ustack-selftest.tap"

	# Not the default: record sets 64, and must put 17 back.
	echo 17 >"$RT/ustack_depth"
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
	ustack_by_address "$d/ustack-sleeper.frames" "$d/ustack-wl.out"
	n=$(grep -vc '^-$' "$d/ustack-sleeper.frames")
	pct=$(in_dcm "$d/ustack-sleeper.frames")
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

	# A uprobe at d's entry: rbp is still c's there.
	setup "record -e uprobe:ustack-workload:d --ustack (the same)" \
		"$CLI" record -e "uprobe:$wl:d" --ustack "uprobe:$wl:d" -F \
		-o "$d/ustack-rec5" -- "$wl" 50 2000000 >"$d/ustack-wl5.out" \
		2>"$d/ustack-record5.err" || { cat "$d/ustack-record5.err"; return; }
	"$CLI" report "$d/ustack-rec5" >"$d/ustack-report5" 2>&1
	awk '/ uprobe_[^ ]*_d: / { if (open) print f; open = 1; f = ""; next }
	     '"$USTACK_USER_FRAME"' { if (open) f = f (f == "" ? "" : " ") $1; next }
	     /^    \(user stack: caller read at \[sp\]\)$/ { if (open) f = f " entry"; next }
	     /^    / { next }
	     { if (open) print f; open = 0 }
	     END { if (open) print f }' "$d/ustack-report5" >"$d/ustack-entry.frames"
	ustack_by_address "$d/ustack-entry.frames" "$d/ustack-wl5.out"
	pct=$(python3 -S - "$d/ustack-entry.frames" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
good = sum(1 for f in lines if len(f) >= 4 and f[-1] == 'entry' and
           f[0] == 'd+0x0' and f[1].startswith('c+0x') and f[2].startswith('main+0x'))
print('%d %d' % (len(lines), 100 * good // len(lines) if lines else 0))
PY
)
	note "uprobe at d: ${pct% *} events, ${pct#* } % d (its first byte) <- c <- main, read at [sp]"
	check "uprobe ustack entry: >= 45 events, >= 90 % d <- c <- main ($pct)" \
		[ "${pct% *}" -ge 45 -a "${pct#* }" -ge 90 ]

	# The CLI's refusals, before it asks the module.
	if user_logic; then
		st=0
		"$CLI" record --ustack ringtrace_statedump_task -o "$d/ustack-rec3" -- true \
			>"$d/ustack-refuse1.out" 2>&1 || st=$?
		check "--ustack of the state dump refused ($st), nothing recorded" \
			eval '[ "$st" -ne 0 ] && [ ! -e "$d/ustack-rec3" ] && [ "$(ustack_state)" = "$before" ]'
		st=0
		"$CLI" record --ustack sched_switch --ustack-depth 128 -o "$d/ustack-rec4" -- true \
			>"$d/ustack-refuse2.out" 2>&1 || st=$?
		check "--ustack-depth 128 refused ($st)" eval '[ "$st" -eq 2 ] && [ ! -e "$d/ustack-rec4" ]'
		st=0
		"$CLI" record --ustack "uprobe:$wl:d" -o "$d/ustack-rec6" -- true \
			>"$d/ustack-refuse3.out" 2>&1 || st=$?
		check "--ustack of a uprobe not in -e refused ($st), nothing left" \
			eval '[ "$st" -ne 0 ] && [ ! -e "$d/ustack-rec6" ] &&
			      grep -q "not a probe of -e" "$d/ustack-refuse3.out" &&
			      [ -z "$(<"$RT/probe_events")" ] && [ "$(ustack_state)" = "$before" ]'
	fi
	echo "$RINGTRACE_USTACK_DEFAULT" >"$RT/ustack_depth"
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
