#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of tools/tests/powerloss.sh, run in two boots on the same
# ext4 disk image (/dev/vda):
#
#   powerloss_guest.sh record   ringtraced records onto the disk; numbered
#                               "before" markers, then more than the flush
#                               interval's wait, then "after" markers while
#                               the machine dies with no sync (sysrq b)
#   powerloss_guest.sh check    the next boot: ringtrace check and report
#                               on what the disk kept
#
# check prints "powerloss-<KVER>: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly MNT=/mnt/powerloss
readonly FLUSH_MS=200
readonly BEFORE=300

mount_disk() {
	modprobe virtio_blk 2>/dev/null
	modprobe ext4 2>/dev/null
	for _ in $(seq 50); do [[ -b /dev/vda ]] && break; sleep 0.1; done
	mkdir -p "$MNT" && mount -t ext4 /dev/vda "$MNT"
}

record() {
	local rt=/sys/kernel/debug/ringtrace pid i
	mount_disk || { echo "powerloss: cannot mount /dev/vda"; exit 1; }
	insmod "$BUILD/$KVER/ringtrace.ko" || exit 1
	echo 0 >"$rt/events/enable"
	daemon/ringtraced -o "$MNT/trace" -f $FLUSH_MS >"$RT_VM_OUT/daemon.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(cat "$rt/tracing_on") == 1 ]] && break
		sleep 0.1
	done
	for ((i = 1; i <= BEFORE; i++)); do
		echo "before $i" >"$rt/marker"
	done
	# Ten flush intervals: every "before" marker is in a completed sync.
	sleep $((10 * FLUSH_MS / 1000))
	for ((i = 1; i <= 200; i++)); do
		echo "after $i" >"$rt/marker"
	done
	# On the host at once (9p); the console may not get to print it.
	echo "crashing with ringtraced (pid $pid) running" >"$RT_VM_OUT/crashing"
	echo b >/proc/sysrq-trigger
	sleep 10
	echo "powerloss: still alive after sysrq b"
	exit 1
}

check() {
	local trace=$MNT/trace rc got first last
	. tools/tests/check.sh
	mount_disk
	check "the disk mounts after the crash" mountpoint -q "$MNT"
	check "the trace directory survived" test -d "$trace"
	check "its metadata survived" test -s "$trace/metadata"
	ls -l "$trace" | sed 's/^/# /'
	tools/ringtrace check "$trace" >"$RT_VM_OUT/check.out" 2>"$RT_VM_OUT/check.err"
	rc=$?
	sed 's/^/# check: /' "$RT_VM_OUT/check.err" | head -5
	check "ringtrace check reads it (exit 0, or 3 when it skipped a torn tail: $rc)" \
		test $rc -eq 0 -o $rc -eq 3
	tools/ringtrace report -e marker "$trace" 2>/dev/null |
		sed -nE 's/.*data="before ([0-9]+)(\\n)?".*/\1/p' >"$RT_VM_OUT/before"
	got=$(wc -l <"$RT_VM_OUT/before")
	first=$(head -n1 "$RT_VM_OUT/before")
	last=$(tail -n1 "$RT_VM_OUT/before")
	check "every marker written before the last flush interval survived ($got of $BEFORE, ${first:-none}..${last:-none})" \
		test "$got" -eq $BEFORE -a "${first:-0}" = 1 -a "${last:-0}" = $BEFORE
	echo "# after markers on disk: $(tools/ringtrace report -e marker "$trace" 2>/dev/null | grep -c 'after ')"
	check_summary "powerloss-$KVER"
}

case ${1:-} in
record) record ;;
check) check ;;
*) echo "usage: $0 record|check" >&2; exit 2 ;;
esac
