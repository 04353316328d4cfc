#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# User-space stacks, mappings with build-ids, the sampler and USDT probes
# (issue 30), in the test guest (tools/guest-tests), as root, in the
# single-threaded boot (USDT and the mapping hook patch text).  Each part
# is a file of tools/tests/profile.d/, sourced in name order, defining
# profile_PART (the file's name without ".sh"), which runs its checks with
# check.sh's helpers; a part says in its header what it checks.  The
# workloads are built on the host by `make all` (tools/Makefile).
# RT_PROFILE_PARTS="ustack sample" runs only those parts (tools/run-tests
# gives the debug kernel the parts whose kernel side it checks), and
# RT_PROFILE_SCOPE=kernel (the debug kernel's too) leaves out within them
# what happens in user space only, the same on every kernel (the CLI's
# refusals before it asks the module, ringtrace list).
# Ends with "profile: N passed, M failed".

set -u

cd "$(dirname "$0")/../.." || exit 1
readonly REPO=$PWD
readonly KVER=${RT_KVER:-$(uname -r)}
export BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
readonly CLI=$REPO/tools/ringtrace
readonly W=$(mktemp -d /tmp/rt-profile.XXXXXX)
export RINGTRACED=$REPO/daemon/ringtraced

# user_logic (tools/tests/scope.sh): RT_PROFILE_SCOPE's.
readonly SCOPE=${RT_PROFILE_SCOPE:-all}

. tools/tests/check.sh
. tools/tests/scope.sh

note() { echo "# $*"; }

# dump_maps_check NAME PID BINARY: $W/NAME.txt, the report of a record
# --mmap -p PID, holds PID's mappings from the state dump (DUMP), each line
# of $W/NAME.maps (the workload's /proc/self/maps) with readelf's build-id,
# BINARY's among them (umap_check.py), and no other process's.
dump_maps_check() {
	local name=$1 pid=$2
	python3 -S "$REPO/tools/tests/umap_check.py" "$W/$name.txt" "$W/$name.maps" \
		--flags-set 0x1 --flags-clear 0xc \
		--need "$3" ld-linux-x86-64.so.2 libc.so.6 '[vdso]' \
		>"$W/$name.check" 2>&1
	check_output "$W/$name.check" $?
	check "$name: only the pid filter's process (-p)" \
		eval '! grep " user_mmap: " "$W/$name.txt" | grep -vq "pid=$pid, "'
}

main() {
	local part name t0
	note "kernel $KVER, $(nproc) CPUs, work in $W"
	grep -q '^ringtrace ' /proc/modules || insmod "$BUILD/$KVER/ringtrace.ko" ||
		{ echo "profile: 0 passed, 1 failed (insmod)"; exit 1; }
	for part in tools/tests/profile.d/*.sh; do
		[[ -e $part ]] || continue
		name=$(basename "$part" .sh)
		[[ -z ${RT_PROFILE_PARTS:-} || " $RT_PROFILE_PARTS " == *" $name "* ]] ||
			continue
		t0=$SECONDS
		note "part $name"
		. "$part"
		"profile_$name"
		note "part $name took $((SECONDS - t0)) s"
	done
	echo 0 >"$RT/tracing_on" 2>/dev/null
	rmmod ringtrace 2>/dev/null
	keep_files "$W" profile-tests
	check_summary profile
}

main
