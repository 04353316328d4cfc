# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "travel" of tools/tests/profile_guest.sh: symbols travel with the
# trace (ringtraced fills its symbol store at the stop, lib/symfill.c).
# Two binaries that exist nowhere else: a copy of the frame-pointer
# ustack-workload at a fresh path, and another copy with its build-id
# bytes changed (a binary of its own in the store), run first for a few
# milliseconds; both on the results share, deleted before any report.  `record --sample 999 --ustack sched_switch -F` of both
# (no --mmap given: both imply it); then both files are deleted and
# `report --folded` runs here.  Checks:
#   - the short process's exec and exit are in the trace (it exited
#     before the stop; its life is printed: 35-75 ms under TCG)
#   - the folded stacks name the workload's functions: the sleeper's
#     ...;main;c;d, the spinner's ...;a;b;spin, the short process's
#     ...;main;c;d
#   - the store holds both binaries, and lists neither as missing
# The trace and the guest's folded output go to the results share
# ($RT_VM_OUT/travel); tools/tests/travel_host.sh then checks, on the
# host where these files never existed, that report prints the same
# bytes, and that babeltrace2 reads the trace with its store.

# travel_patch_build_id FILE: its GNU build-id note's bytes inverted, so
# that it is a binary of its own for the store (the kernel reads the note
# from the file it maps, the store from the file it copies).
travel_patch_build_id() {
	python3 -S - "$1" <<'PY'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, 'rb').read())
note = struct.pack('<III', 4, 20, 3) + b'GNU\0'
at = data.find(note)
if at < 0 or data.find(note, at + 1) >= 0:
    sys.exit('%s: not one 20-byte GNU build-id note' % path)
at += len(note)
data[at:at + 20] = bytes(b ^ 0xff for b in data[at:at + 20])
open(path, 'wb').write(data)
PY
}

# travel_life REPORT NAME: the ms from the exec of the file NAME to the
# exit of the thread that made it (its main thread), or "?".
travel_life() {
	awk -v name="$2" '
		function t(s) { gsub(/[][]/, "", s); return s + 0 }
		/ sched_process_exec: / && index($0, "/" name "\"") {
			tid = $0; sub(/.* sched_process_exec: tid=/, "", tid)
			sub(/[^0-9].*/, "", tid); start = t($1); next }
		/ sched_process_exit: / && tid != "" && index($0, ", tid=" tid ",") { end = t($1) }
		END { if (start && end) printf "%d\n", (end - start) * 1000; else print "?" }' "$1"
}

profile_travel() {
	local d=$W/travel bin wl short rec n life
	# The binaries on the results share (9p): the module reads no build-id
	# of a file on tmpfs (shmem has no read_folio: module/mmap.c), and the
	# guest's /tmp and its overlay's upper layer are tmpfs.
	bin=${RT_VM_OUT:-$W}/travel-bin
	mkdir -p "$d" "$bin"
	wl=$bin/travel-wl
	short=$bin/travel-short
	rec=$d/rec
	cp "$REPO/tools/tests/ustack-workload" "$wl" &&
		cp "$REPO/tools/tests/ustack-workload" "$short" &&
		travel_patch_build_id "$short" >"$d/patch.err" 2>&1
	check "travel: two copies of ustack-workload, one with a build-id of its own" \
		test $? -eq 0
	setup "travel: record --sample 999 --ustack sched_switch -F of a 50 ms process, then the workload" \
		"$CLI" record -e sched --sample 999 --ustack sched_switch -F -o "$rec" -- \
		sh -c "'$short' 1 2000000 >/dev/null && '$wl' 100 2000000 >/dev/null" \
		>"$d/record.out" 2>"$d/record.err" || { cat "$d/record.err"; return; }
	rm -f "$wl" "$short"
	rmdir "$bin"
	"$CLI" report -e sched_process_exec,sched_process_exit "$rec" >"$d/life.txt" 2>&1
	life=$(travel_life "$d/life.txt" travel-short)
	note "travel: travel-short lived $life ms"
	# Its life is printed, not asserted (TCG's times mean nothing): it
	# lives a few ms of its own and is long gone when the recording stops.
	check "travel: the short process's exec and exit are in the trace ($life ms apart)" \
		test "$life" != "?"
	(unset DEBUGINFOD_URLS; "$CLI" report --folded "$rec") >"$d/guest.folded" \
		2>"$d/guest.folded.err"
	check "travel: report --folded of the trace, its binaries deleted, exits 0" \
		test $? -eq 0
	sed 's/^/# stderr: /' "$d/guest.folded.err" | head -n 20
	check "travel: the sleeper folds to travel-wl;...;main;c;d" \
		grep -Eq '^travel-wl;(.*;)?main;c;d( |;)' "$d/guest.folded"
	check "travel: the spinner folds to travel-wl;...;a;b;spin" \
		grep -Eq '^travel-wl;(.*;)?a;b;spin( |;)' "$d/guest.folded"
	check "travel: the 50 ms process folds to travel-short;...;main;c;d" \
		grep -Eq '^travel-short;(.*;)?main;c;d( |;)' "$d/guest.folded"
	n=$(find "$rec/.ringtrace-buildid" -mindepth 2 -type f 2>/dev/null | wc -l)
	check "travel: the store holds the binaries the stacks hit ($n files)" \
		test "$n" -ge 3
	check "travel: neither copy is listed as missing" \
		eval '! grep -q "travel-" "$rec/.ringtrace-buildid/missing" 2>/dev/null'
	if [[ -n ${RT_VM_OUT:-} ]]; then
		mkdir -p "$RT_VM_OUT/travel" &&
			cp -a "$rec" "$RT_VM_OUT/travel/rec" &&
			cp "$d/guest.folded" "$RT_VM_OUT/travel/" &&
			echo "$wl $short" >"$RT_VM_OUT/travel/paths"
		check "travel: the trace and the folded output go to the results share" \
			test $? -eq 0
	fi
}
