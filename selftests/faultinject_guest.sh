#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# faultinject_guest.sh - allocation failures on every path a user can make
# ringtrace.ko allocate on, inside a test guest whose kernel has fault
# injection (tools/vm/build-debug-kernel's), as root:
#
#   tools/vm/vmtest -K $RT_CACHE/debug-kernel/build -- \
#       env BUILD=$RT_CACHE/debug-build selftests/faultinject_guest.sh
#
# selftests/faultinject (built by `make -C selftests`) fails the 1st, 2nd,
# ... Nth allocation of one operation through /proc/self/task/<tid>/fail-nth
# until the operation succeeds without a fault, and checks after each
# failure that the error is ENOMEM, that nothing changed, that tracing
# still records and delivers, and that the kernel logged no splat.  This
# script sets the fault attributes up so that any allocation can fail,
# runs it, then unloads the module and asks kmemleak whether anything
# ringtrace allocated leaked (tools/tests/kmemleak.sh).
#
# Prints one line per path (faults injected, how each ended) and last
#
#   faultinject: N passed, M failed
#
# counting one check per injected fault, per path's final success, and
# this script's own checks.  On a kernel without fault injection (Debian's)
# it prints a SKIP line and "faultinject: 0 passed, 0 failed"; with
# RT_FI_REQUIRED=1 (tools/run-tests, on the debug kernel, which has it)
# that is a failure.
#
# Environment: RT_KVER (set by vmtest; default `uname -r`), BUILD (module
# build root; default $RT_CACHE/build), RT_FI_PATHS (space-separated subset
# of the helper's paths; default all), RT_FI_EXHAUSTIVE (fail every
# allocation of an op that makes up to this many; default 300, past which
# the helper samples: a module load makes thousands), RT_FI_SAMPLE (faults
# the helper draws at random between a sampled op's first 16 and last 8;
# default 50; tools/run-tests gives the debug kernel 8), RT_FI_SEED (the
# draws' seed, which the helper prints first; default a random one, so
# that successive runs fail different allocations).

set -u
cd "$(dirname -- "${BASH_SOURCE[0]}")/.." || exit 1
. tools/tests/check.sh

readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly KO=$BUILD/$KVER/ringtrace.ko
readonly HELPER=selftests/faultinject
readonly DEBUGFS=/sys/kernel/debug
# The lines tools/vm/vmtest fails a run on: SPLAT_RE.
. tools/vm/splat-patterns

skip() {
	if [[ ${RT_FI_REQUIRED:-0} == 1 ]]; then
		check "fault injection on this kernel: $*" false
		check_summary faultinject
		exit 1
	fi
	echo "ok - faultinject # SKIP $*"
	check_summary faultinject
	exit 0
}

grep -q " $DEBUGFS debugfs " /proc/mounts || mount -t debugfs debugfs "$DEBUGFS"
[[ -e /proc/self/fail-nth ]] ||
	skip "no /proc/self/fail-nth: the kernel has no CONFIG_FAULT_INJECTION"
[[ -d $DEBUGFS/failslab && -d $DEBUGFS/fail_page_alloc ]] ||
	skip "no failslab or fail_page_alloc in debugfs (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS)"
[[ -e $DEBUGFS/failslab/require-start ]] ||
	skip "no stack filter (CONFIG_FAULT_INJECTION_STACKTRACE_FILTER)"

if [[ ! -f $KO || ! -x $HELPER ]]; then
	check "$KO and $HELPER are built" false
	check_summary faultinject
	exit 1
fi
if grep -q '^ringtrace ' /proc/modules; then
	check "ringtrace is not loaded before the suite" false
	check_summary faultinject
	exit 1
fi

# fail-nth overrides probability, interval and times, not these: by
# default failslab and fail_page_alloc leave sleeping allocations alone,
# and fail_page_alloc order-0 and highmem (user and vmalloc) pages too.
# verbose 0: a forced failure logs nothing, a stack dump would look like a
# splat.  The old values come back at the end.
declare -A saved=()
set_attr() {
	local file=$DEBUGFS/$1
	saved[$file]=$(<"$file")
	echo "$2" >"$file"
}
set_attr failslab/ignore-gfp-wait N
set_attr failslab/verbose 0
set_attr fail_page_alloc/ignore-gfp-wait N
set_attr fail_page_alloc/ignore-gfp-highmem N
set_attr fail_page_alloc/min-order 0
set_attr fail_page_alloc/verbose 0
for attr in failslab fail_page_alloc; do
	for f in require-start require-end stacktrace-depth; do
		saved[$DEBUGFS/$attr/$f]=$(<"$DEBUGFS/$attr/$f")
	done
done
restore_attrs() {
	local file
	for file in "${!saved[@]}"; do
		echo "${saved[$file]}" >"$file"
	done
}
trap restore_attrs EXIT

out=$(mktemp)
start=$(date +%s)
# shellcheck disable=SC2086 # RT_FI_PATHS is a word list
"$HELPER" -m "$KO" -s "$SPLAT_RE" -e "${RT_FI_EXHAUSTIVE:-300}" \
	-n "${RT_FI_SAMPLE:-50}" ${RT_FI_SEED:+-S "$RT_FI_SEED"} \
	${RT_FI_PATHS:-} 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
echo "# faultinject helper: exit status $status after $(($(date +%s) - start))s"
read -r hp hf < <(sed -nE 's/^# faultinject: passed=([0-9]+) failed=([0-9]+)$/\1 \2/p' "$out")
rm -f -- "$out"
if [[ -z ${hp:-} ]]; then
	check "the helper reported its counts" false
else
	passed=$((passed + hp))
	failed=$((failed + hf))
	((status == (hf > 0 ? 1 : 0))) ||
		check "the helper's exit status ($status) matches its counts ($hf failed)" false
fi

check "rmmod ringtrace after the faults" rmmod ringtrace
check "kmemleak: nothing ringtrace allocated leaked" tools/tests/kmemleak.sh -q

check_summary faultinject
