#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of tools/tests/powerloss.sh, run in two boots on the same
# ext4 disk image (/dev/vda):
#
#   powerloss_guest.sh record   ringtraced --on-chunk records onto the disk;
#                               numbered "before" markers in three chunk
#                               sets (SIGHUP between): the hook moves set 1
#                               to a spool on the disk, holds set 2 (in its
#                               hands at the crash), set 3 waits for it;
#                               "during" markers in the rotation being
#                               recorded, then more than the flush
#                               interval's wait, then "after" markers
#                               while the machine dies with no sync
#                               (sysrq b)
#   powerloss_guest.sh check    the next boot: ringtraced --on-chunk starts
#                               on the same disk and hands every set the
#                               crash left unshipped (and the rotation being
#                               recorded) to its hook, which moves them to
#                               the spool; ringtrace check and report on
#                               the spool's sets
#
# check prints "powerloss-<KVER>: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly MNT=/mnt/powerloss
readonly FLUSH_MS=200
readonly BEFORE=300
readonly DURING=100
readonly SPOOL=$MNT/spool
# Each set into the spool, under its trace's name; set 2 held on to in
# the recording boot (HOLD set), until the crash.
readonly HOOK='echo "$1 $RINGTRACE_CHUNK_RETRY" >>"$PL_HOOKLOG"
[ -n "${PL_HOLD:-}" ] && [ "${1##*/}" = chunk-000002 ] && sleep 1000
mv -T "$1" "$PL_SPOOL/$(basename "$(dirname "$1")")-$(basename "$1")"'

mount_disk() {
	modprobe virtio_blk 2>/dev/null
	modprobe ext4 2>/dev/null
	for _ in $(seq 50); do [[ -b /dev/vda ]] && break; sleep 0.1; done
	mkdir -p "$MNT" && mount -t ext4 /dev/vda "$MNT"
}

record() {
	local rt=/sys/kernel/debug/ringtrace pid i j n
	mount_disk || { echo "powerloss: cannot mount /dev/vda"; exit 1; }
	insmod "$BUILD/$KVER/ringtrace.ko" || exit 1
	echo 0 >"$rt/events/enable"
	mkdir -p "$SPOOL"
	PL_HOLD=1 PL_HOOKLOG=$RT_VM_OUT/hook.log PL_SPOOL=$SPOOL daemon/ringtraced -o "$MNT/trace" \
		-f $FLUSH_MS --on-chunk "$HOOK" >"$RT_VM_OUT/daemon.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(cat "$rt/tracing_on") == 1 ]] && break
		sleep 0.1
	done
	# Three sets of "before" markers: set 1 shipped, set 2 in the hook's
	# hands, set 3 waiting for it.  A SIGHUP during a rotation is one
	# more after it, not one each: each waits for the last.
	for ((i = 1; i <= BEFORE; i++)); do
		echo "before $i" >"$rt/marker"
		((i % (BEFORE / 3))) && continue
		kill -HUP "$pid"
		n=$((i / (BEFORE / 3)))
		for ((j = 0; j < 300; j++)); do
			(($(grep -c rotated "$RT_VM_OUT/daemon.log") >= n)) && break
			sleep 0.1
		done
	done
	for ((i = 0; i < 300; i++)); do
		[[ -d $MNT/trace/chunk-000003 ]] && grep -q 'chunk-000002 0' "$RT_VM_OUT/hook.log" && break
		sleep 0.1
	done
	# The rotation being recorded gets markers of its own: on disk at the
	# crash, it is a set the next start must assemble (only "after"
	# markers in it were often not written at all, and rightly dropped).
	for ((i = 1; i <= DURING; i++)); do
		echo "during $i" >"$rt/marker"
	done
	# Ten flush intervals: every "before" and "during" marker is in a
	# completed sync.
	sleep $((10 * FLUSH_MS / 1000))
	for ((i = 1; i <= 200; i++)); do
		echo "after $i" >"$rt/marker"
	done
	# On the host at once (9p); the console may not get to print it.
	ls -lA "$MNT/trace" "$SPOOL" | sed 's/^/# at the crash: /' >"$RT_VM_OUT/at-crash"
	echo "crashing with ringtraced (pid $pid) running" >"$RT_VM_OUT/crashing"
	echo b >/proc/sysrq-trigger
	sleep 10
	echo "powerloss: still alive after sysrq b"
	exit 1
}

check() {
	local trace=$MNT/trace rc got first last n pid i d bad=0
	. tools/tests/check.sh
	mount_disk
	check "the disk mounts after the crash" mountpoint -q "$MNT"
	check "the trace directory survived" test -d "$trace"
	check "its metadata survived" test -s "$trace/metadata"
	ls -lA "$trace" "$SPOOL" | sed 's/^/# after the crash: /'
	# The next start hands over what the crash left unshipped.
	insmod "$BUILD/$KVER/ringtrace.ko" || exit 1
	PL_HOOKLOG=$RT_VM_OUT/hook.log PL_SPOOL=$SPOOL daemon/ringtraced -o "$MNT/trace2" \
		-f $FLUSH_MS --on-chunk "$HOOK" >"$RT_VM_OUT/restart.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 1200; i++)); do
		n=$(ls -A "$trace" | grep -c '^chunk-\|^\.chunk-.*\.tmp$\|^cpu[0-9]*-[0-9]*\.zst$')
		((n == 0)) && break
		sleep 0.1
	done
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	sed 's/^/# restart: /' "$RT_VM_OUT/restart.log" | grep -v '^# restart: CPU\|^# restart: total'
	check "the restart stopped cleanly (exit $rc)" test "$rc" -eq 0
	check "it handed every set of the crashed trace to the hook: none left there ($n)" \
		test "$n" -eq 0
	check "the set in the hook's hands at the crash was handed again, told so (RINGTRACE_CHUNK_RETRY=1)" \
		grep -q "^$trace/chunk-000002 1$" "$RT_VM_OUT/hook.log"
	check "the set waiting for the hook at the crash was handed over, told it may be a retry" \
		grep -q "^$trace/chunk-000003 1$" "$RT_VM_OUT/hook.log"
	check "the rotation being recorded was assembled and handed over" \
		grep -q "^ringtraced: $trace/chunk-[0-9]*: chunk set left unassembled by an earlier ringtraced" "$RT_VM_OUT/restart.log"
	sed 's/^/# hook: /' "$RT_VM_OUT/hook.log"
	for d in "$SPOOL"/trace-chunk-*; do
		tools/ringtrace check "$d" >>"$RT_VM_OUT/check.out" 2>>"$RT_VM_OUT/check.err"
		rc=$?
		((rc == 0 || rc == 3)) || bad=$((bad + 1))
	done
	sed 's/^/# check: /' "$RT_VM_OUT/check.err" | head -5
	check "ringtrace check reads every set in the spool (exit 0, or 3 when it skipped a torn tail): $bad bad" \
		test "$bad" -eq 0 -a -d "$SPOOL/trace-chunk-000001"
	tools/ringtrace report -e marker "$SPOOL"/trace-chunk-* 2>/dev/null |
		sed -nE 's/.*data="before ([0-9]+)(\\n)?".*/\1/p' >"$RT_VM_OUT/before"
	got=$(wc -l <"$RT_VM_OUT/before")
	first=$(head -n1 "$RT_VM_OUT/before")
	last=$(tail -n1 "$RT_VM_OUT/before")
	check "every marker written before the last flush interval reached the spool once ($got of $BEFORE, ${first:-none}..${last:-none})" \
		test "$got" -eq $BEFORE -a "${first:-0}" = 1 -a "${last:-0}" = $BEFORE -a \
		"$(sort -un "$RT_VM_OUT/before" | wc -l)" -eq $BEFORE
	tools/ringtrace report -e marker "$SPOOL"/trace-chunk-* 2>/dev/null |
		sed -nE 's/.*data="during ([0-9]+)(\\n)?".*/\1/p' >"$RT_VM_OUT/during"
	got=$(wc -l <"$RT_VM_OUT/during")
	check "every marker of the rotation being recorded reached the spool once ($got of $DURING)" \
		test "$got" -eq $DURING -a "$(sort -un "$RT_VM_OUT/during" | wc -l)" -eq $DURING
	echo "# after markers shipped: $(tools/ringtrace report -e marker "$SPOOL"/trace-chunk-* 2>/dev/null | grep -c 'after ')"
	rmmod ringtrace
	check_summary "powerloss-$KVER"
}

case ${1:-} in
record) record ;;
check) check ;;
*) echo "usage: $0 record|check" >&2; exit 2 ;;
esac
