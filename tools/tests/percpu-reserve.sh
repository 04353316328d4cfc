#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtrace.ko's static per-CPU data stays small.
#
# A module's DEFINE_PER_CPU variables are not allocated like alloc_percpu():
# they come out of one reserve that every module of the running kernel
# shares, PERCPU_MODULE_RESERVE (8 KiB on x86-64; dmesg's "percpu: ...
# r8192").  A module that takes most of it leaves too little for the next
# one, which then fails to load ("alloc from reserved chunk failed"):
# with 7332 bytes of ringtrace.ko's (a 6624-byte stack scratch) LTTng's
# lttng-tracer could not load beside it, and make bench ran without LTTng.
# Large per-CPU areas are alloc_percpu()'d at load; this checks that what
# is left in .data..percpu of each built ringtrace.ko (and
# ringtrace_bench.ko, loaded beside it by make bench) stays within LIMIT
# bytes together, an eighth of the reserve, and names the largest
# variables when it does not.
#
# Usage: tools/tests/percpu-reserve.sh [BUILD]   (default $BUILD, else
# $RT_CACHE/build, as `make modules` builds them)
# Ends with "percpu-reserve: N passed, M failed"; a kernel without built
# modules is skipped, none at all is a failure.

set -uo pipefail

readonly LIMIT=1024
build=${1:-${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}}
passed=0 failed=0

# The size of a module's .data..percpu section, 0 without one.
percpu_size() {
	local hex
	hex=$(readelf -S -W "$1" | awk '$2 == ".data..percpu" { print $6 }')
	echo $((16#${hex:-0}))
}

# Its per-CPU variables, largest first: "SIZE NAME".
percpu_vars() {
	local idx
	idx=$(readelf -S -W "$1" | sed -n 's/^ *\[ *\([0-9]*\)\] \.data\.\.percpu .*/\1/p')
	[[ -n $idx ]] || return 0
	readelf -s -W "$1" | awk -v idx="$idx" '$7 == idx && $4 == "OBJECT" { print $3, $8 }' |
		sort -rn | head -n 5
}

for dir in "$build"/*/; do
	[[ -f $dir/ringtrace.ko ]] || continue
	kver=$(basename -- "$dir")
	total=0
	for ko in "$dir"/ringtrace.ko "$dir"/ringtrace_bench.ko; do
		[[ -f $ko ]] && total=$((total + $(percpu_size "$ko")))
	done
	if ((total <= LIMIT)); then
		echo "ok - $kver: $total bytes of static per-CPU data (limit $LIMIT)"
		passed=$((passed + 1))
	else
		echo "not ok - $kver: $total bytes of static per-CPU data, more than $LIMIT of the modules' shared 8 KiB; largest:"
		percpu_vars "$dir/ringtrace.ko" | sed 's/^/#   /'
		failed=$((failed + 1))
	fi
done
if ((passed + failed == 0)); then
	echo "not ok - no ringtrace.ko under $build (make modules)"
	failed=1
fi
echo "percpu-reserve: $passed passed, $failed failed"
((failed == 0))
