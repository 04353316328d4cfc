#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# export -f perfetto of a recording, in the test guest (tools/guest-tests),
# as root, starting with ringtrace.ko not loaded:
#
#   record -e all of tools/tests/cli-workload (a fork, an exec, threads
#   that name themselves, N getppid calls each) and of file reads (9p:
#   virtio interrupts, softirqs) between markers, one in atrace's form
#   and one plain; export -f perfetto; then
#   tools/tests/perfetto_check.py against report of the same trace:
#   protoc decodes it, each CPU's events are report's one for one (same
#   thread, same fields, times within 1 us, never going back), the
#   sched_switch, sched_waking and sys_enter/sys_exit counts per thread
#   and CPU are report's, the ProcessTree holds the workload's processes
#   and threads, its threads' names and N getppid calls each are there,
#   the markers are print events, and there are events of each kind the
#   workload makes (sched_waking too where ringtrace.ko has it); the
#   file is read through Perfetto's published schema
#   (tools/tests/perfetto_schema.py --path, from $RT_CACHE); a window of
#   it (its events' middle third) exported with --begin/--end, read by
#   seeking: the same checks against report --begin/--end of it;
#   a recording in small packets, damaged: the damage said, exit 3, the
#   intact part exported (the same checks against report of the damaged
#   trace).
#
# Ends with "perfetto: N passed, M failed".

set -u

cd "$(dirname "$0")/../.."
readonly REPO=$PWD
export BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
readonly CLI=$REPO/tools/ringtrace
readonly WL=$REPO/tools/tests/cli-workload
readonly CHECKER=$REPO/tools/tests/perfetto_check.py
# Debian's python3-protobuf is Debian's python3's.
readonly PY=/usr/bin/python3
readonly W=$(mktemp -d /tmp/rt-perfetto.XXXXXX)
# getppid calls per thread of the workload
readonly N=200
export RINGTRACED=$REPO/daemon/ringtraced RINGTRACE=$CLI

. tools/tests/check.sh

note() { echo "# $*"; }

# checker NAME ARGS...: perfetto_check.py's "ok"/"not ok" lines as this
# suite's checks; a checker that fails without saying why is one more.
checker() {
	local name=$1
	shift
	"$PY" "$CHECKER" "$@" >"$W/$name.check" 2>&1
	check_output "$W/$name.check" $?
}

test_workload() {
	local out=$W/trace pid
	"$CLI" record -e all -o "$out" -- sh -c '
		echo $$ >"$1/sh.pid"
		echo "B|$$|rtw-marker" >"$2/marker"
		cat /etc/os-release /etc/passwd /usr/bin/sh >/dev/null
		"$3" "$4" "$1/tids"
		echo "E|$$" >"$2/marker"
		echo "rtw plain|marker" >"$2/marker"' sh "$W" "$RT" "$WL" $N \
		>"$W/record.out" 2>"$W/record.err"
	check "record -e all of the workload exits 0" test $? -eq 0
	check "the workload wrote its 5 tid lines" test "$(wc -l <"$W/tids")" -eq 5
	"$CLI" export -f perfetto -o "$W/trace.pftrace" "$out" 2>"$W/export.err"
	check "export -f perfetto exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/export.err"
	pid=$(cat "$W/sh.pid")
	# sched_waking (the waker's side) where ringtrace.ko has it: its
	# metadata declares every event it has, recorded or not.
	waking=
	if grep -qs 'name = "sched_waking"' "$out/metadata"; then
		waking=sched_waking
	fi
	note "sched_waking: ${waking:-not in this ringtrace.ko}"
	checker workload --tids "$W/tids" --calls $N \
		--marker "B|$pid|rtw-marker" --marker "E|$pid" \
		--marker "I|$pid|rtw plain¦marker" \
		$(printf -- '--require %s ' sched_switch task_newtask task_rename \
			sched_process_exec sched_process_exit sys_enter sys_exit \
			irq_handler_entry irq_handler_exit softirq_entry softirq_exit \
			$waking) \
		"$out" "$W/trace.pftrace"
	# A window of it, its events' middle third: export --begin/--end,
	# read by seeking, against report --begin/--end of the same window.
	local lines b e
	"$CLI" report "$out" 2>/dev/null | grep -E '^\[[0-9.]+\] cpu[0-9]+ [^-]' >"$W/lines"
	lines=$(wc -l <"$W/lines")
	b=$(sed -n "$((lines / 3 + 1))s/^\[\([0-9.]*\)\].*/\1/p" "$W/lines")
	e=$(sed -n "$((2 * lines / 3 + 1))s/^\[\([0-9.]*\)\].*/\1/p" "$W/lines")
	setup "a window of the recording: its middle third (${b:-?} to ${e:-?}, of $lines events)" \
		test -n "$b" -a -n "$e"
	"$CLI" export -f perfetto --begin "$b" --end "$e" -o "$W/window.pftrace" "$out" \
		2>"$W/window.err"
	check "export -f perfetto --begin/--end exits 0" test $? -eq 0
	checker window --begin "$b" --end "$e" "$out" "$W/window.pftrace"
}

# A recording in 4 KiB sub-buffers (packets), plain (unpack), with the
# second packet of its longest stream made no packet (magic overwritten).
test_damaged() {
	local d=$W/damaged cpu rc
	"$CLI" record -b 64K -e all -o "$W/small" -- "$WL" 20 "$W/tids-small" \
		>/dev/null 2>"$W/small.err"
	check "record -b 64K of the workload exits 0" test $? -eq 0
	setup "unpack it" eval '"$CLI" unpack "$W/small" "$d" >/dev/null 2>&1'
	cpu=$("$PY" - "$d" <<'EOF'
import glob, struct, sys
best = None
for path in glob.glob(sys.argv[1] + '/cpu*'):
    data = bytearray(open(path, 'rb').read())
    offs, o = [], 0
    while o + 88 <= len(data):
        offs.append(o)
        o += struct.unpack_from('<Q', data, o + 48)[0] // 8      # content_size
    if best is None or len(offs) > len(best[2]):
        best = (path, data, offs)
path, data, offs = best
if len(offs) < 3:
    sys.exit('perfetto_guest: %d packets at most in a stream' % len(offs))
struct.pack_into('<I', data, offs[1], 0xdeadbeef)
open(path, 'wb').write(data)
print(path.rsplit('/', 1)[1])
EOF
)
	setup "a stream of 3 packets or more: its second damaged (${cpu:-none})" test -n "$cpu"
	"$CLI" export -f perfetto -o "$W/damaged.pftrace" "$d" 2>"$W/damaged.err"
	rc=$?
	check "a damaged trace: export -f perfetto exits 3 (got $rc)" test $rc -eq 3
	check "a damaged trace: the damage is said" grep -q "damaged: $d/$cpu: " "$W/damaged.err"
	checker damaged "$d" "$W/damaged.pftrace"
}

main() {
	note "kernel $(uname -r), $(nproc) CPUs, work in $W"
	test_workload
	test_damaged
	echo 0 >"$RT/tracing_on" 2>/dev/null
	rmmod ringtrace 2>/dev/null
	keep_files "$W" perfetto-tests
	check_summary perfetto
}

main
