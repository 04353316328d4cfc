#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtrace under Secure Boot's kernel lockdown, in the test guest.
#
# With lockdown=integrity (Debian's default under Secure Boot) debugfs
# refuses every ringtrace file that can be written, mapped or ioctl'd;
# ringtrace.ko offers the same files under /dev/ringtrace, and ringtraced
# and ringtrace fall back to them.  This suite checks both sides, records
# a trace through the fallback and reads it with babeltrace2; then, under
# lockdown=confidentiality, that both trees refuse every file, the
# read-only ones too, with a clear message.
#
# Debian's kernels refuse unsigned modules once locked down, so the module
# is loaded first and lockdown raised at run time (it can only be raised):
# this suite must be the last of its boot.  The kernel command line's
# lockdown=integrity gives debugfs the same behaviour.
#
# Ends with "lockdown: N passed, M failed".

set -u

cd "$(dirname "$0")/.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly DBG=/sys/kernel/debug/ringtrace
readonly DEV=/dev/ringtrace
readonly LOCKDOWN=/sys/kernel/security/lockdown
readonly WORK=$(mktemp -d /tmp/rt-lockdown.XXXXXX)

. tools/tests/check.sh

finish() {
	check_summary lockdown
	exit
}

# True if opening @1 with @2 (< or >) fails with "Operation not permitted".
refused() {
	local err
	if [[ $2 == '<' ]]; then
		err=$( { : <"$1"; } 2>&1)
	else
		err=$( { : >"$1"; } 2>&1)
	fi
	[[ $err == *"Operation not permitted"* ]] || { echo "# $1: '$err'"; return 1; }
}

readable() { cat "$1" >/dev/null; }

level() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$LOCKDOWN"; }

# A trace recorded by ringtraced without any option about where ringtrace
# is: it must find /dev/ringtrace by itself.
record() {
	local out=$WORK/trace pid i
	daemon/ringtraced -o "$out" --flush-interval=200 >"$WORK/daemon.out" 2>"$WORK/daemon.err" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		[[ $(cat "$DEV/tracing_on" 2>/dev/null) == 1 ]] && break
		sleep 0.1
	done
	for ((i = 0; i < 50; i++)); do
		echo "locked down $i" >"$DEV/marker" || return 1
	done
	kill -INT "$pid"
	wait "$pid"
}

main() {
	if [[ ! -e $LOCKDOWN ]]; then
		grep -q ' /sys/kernel/security ' /proc/mounts ||
			mount -t securityfs securityfs /sys/kernel/security
	fi
	if [[ ! -w $LOCKDOWN ]]; then
		echo "# this kernel has no lockdown LSM ($LOCKDOWN): nothing to test"
		check "lockdown LSM present" false
		finish
	fi
	echo "# lockdown before: $(cat "$LOCKDOWN")"
	setup "insmod ringtrace (before lockdown)" insmod "$BUILD/$KVER/ringtrace.ko"
	setup "raise lockdown to integrity" sh -c "echo integrity > $LOCKDOWN"
	setup "lockdown is integrity" test "$(level)" = integrity

	# debugfs: read-only files still work, the rest is refused.
	check "debugfs: metadata readable" readable "$DBG/metadata"
	check "debugfs: stats readable" readable "$DBG/stats"
	check "debugfs: tracing_on refused (read)" refused "$DBG/tracing_on" '<'
	check "debugfs: tracing_on refused (write)" refused "$DBG/tracing_on" '>'
	check "debugfs: cpu/0/buffer refused" refused "$DBG/cpu/0/buffer" '<'
	check "debugfs: marker refused" refused "$DBG/marker" '>'

	# /dev/ringtrace: everything works, the ABI suites included.
	check "/dev: tracing_on readable" readable "$DEV/tracing_on"
	check "/dev: mode writable" sh -c "echo discard > $DEV/mode"
	for t in ioctl_test mmap_test poll_test; do
		RT_ROOT=$DEV "selftests/$t" >"$WORK/$t.out" 2>&1
		# Every case passes: a skipped one is not tested through /dev.
		check "/dev: $t passes ($(grep '^# Totals' "$WORK/$t.out"))" \
			grep -q '^# Totals: pass:[1-9][0-9]* fail:0 xfail:0 xpass:0 skip:0 error:0$' "$WORK/$t.out"
	done

	# The product: ringtraced records through /dev, babeltrace2 reads it.
	check "ringtraced records with no option" record
	sed 's/^/# daemon: /' "$WORK/daemon.err"
	check "ringtraced says it uses /dev/ringtrace" \
		grep -q "using $DEV" "$WORK/daemon.err"
	check "ringtrace stats finds /dev/ringtrace" \
		sh -c "tools/ringtrace stats | grep -q '^cpu0'"
	check "unpack" tools/ringtrace unpack "$WORK/trace" "$WORK/ctf"
	babeltrace2 "$WORK/ctf" >"$WORK/bt.txt" 2>"$WORK/bt.err"
	check "babeltrace2 reads the trace" test -s "$WORK/bt.txt"
	check "babeltrace2 sees all 50 markers" \
		test "$(grep -c 'locked down' "$WORK/bt.txt")" -eq 50

	# Confidentiality: every file of both trees is refused, the
	# read-only ones too, as tracefs refuses all of its files.
	setup "raise lockdown to confidentiality" \
		sh -c "echo confidentiality > $LOCKDOWN"
	check "/dev: tracing_on refused" refused "$DEV/tracing_on" '<'
	check "/dev: cpu/0/buffer refused" refused "$DEV/cpu/0/buffer" '<'
	for f in metadata stats available_events events/sched_switch/id; do
		check "debugfs: $f refused" refused "$DBG/$f" '<'
		check "/dev: $f refused" refused "$DEV/$f" '<'
	done
	daemon/ringtraced -o "$WORK/refused" >"$WORK/refused.out" 2>&1
	check "ringtraced fails (status $?)" test $? -ne 0
	sed 's/^/# daemon: /' "$WORK/refused.out"
	check "ringtraced names lockdown" grep -q lockdown "$WORK/refused.out"
	check "rmmod ringtrace" rmmod ringtrace
	rm -rf "$WORK"
	finish
}

main "$@"
