#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug_kernel.sh - the debug kernel's part of tools/run-tests, as root:
#
#   tools/tests/debug_kernel.sh
#
# 1. tools/vm/build-debug-kernel: Linux 6.12 with lockdep, KASAN, UBSAN,
#    kmemleak and fault injection, cached in $RT_CACHE/debug-kernel under
#    a hash of that script and the source tarball (a fresh machine builds
#    it once; afterwards this step takes a second);
# 2. ringtrace's modules for it into $RT_CACHE/debug-build (kbuild's own
#    dependency tracking keeps that incremental), and the userspace (make
#    userspace: nothing to do after tools/run-tests' make all);
# 3. two boots of that kernel (tools/vm/vmtest -K), each ending with
#    tools/tests/kmemleak.sh, which fails on any leak of ringtrace:
#      - multi-threaded TCG: selftests/run_guest.sh, daemon/tests/run_guest.sh;
#      - single-threaded TCG (RT_VM_ACCEL=tcg,thread=single), for the
#        suites that switch tracepoints on and off many times:
#        selftests/probes/run_guest.sh, tools/tests/cli_guest.sh and
#        selftests/faultinject_guest.sh.
#
# Prints each suite's "<suite>: N passed, M failed" line once (the guests'
# consoles go to files under the run directory, not to stdout), and one
# "debug-kernel-<boot>: 1 passed, 0 failed" line per boot for vmtest's
# verdict (exit status, and no WARN, BUG, lockdep, KASAN or UBSAN line in
# dmesg).  Exits 1 if anything failed.
#
# Environment: RT_CACHE (default /var/cache/ringtrace).

set -uo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/../.." || exit 1
export RT_CACHE=${RT_CACHE:-/var/cache/ringtrace}
readonly KDIR=$RT_CACHE/debug-kernel/build
readonly DBUILD=$RT_CACHE/debug-build
readonly SUITE_RE='^[a-z0-9_-]+: [0-9]+ passed, [0-9]+ failed$'

status=0
t0=$(date +%s)

elapsed() {
	echo "$(($(date +%s) - t0))s"
}

# A step that did not get to run its suites: one failure, and stop.
fail_step() {
	echo "debug-kernel-$1: 0 passed, 1 failed"
	echo "debug_kernel.sh: $2"
	exit 1
}

out=$RT_CACHE/vm-runs/debug-kernel-$(date +%Y%m%d-%H%M%S)
mkdir -p -- "$out" || exit 1

echo "debug_kernel.sh: building the debug kernel (cached; log in $out/build.log)"
# -j one over the cores: the compiler waits on the disk now and then.
if ! kver=$(nice -n 10 tools/vm/build-debug-kernel -j $(($(nproc) + 1)) \
	    2>"$out/build.log"); then
	tail -n 30 "$out/build.log"
	fail_step build "tools/vm/build-debug-kernel failed"
fi
echo "debug_kernel.sh: kernel $kver ready after $(elapsed)"

if ! nice -n 10 make -s modules KDIR="$KDIR" BUILD="$DBUILD" ||
   ! make -s userspace >/dev/null; then
	fail_step modules "the modules or the userspace did not build"
fi
echo "debug_kernel.sh: modules built after $(elapsed)"

# boot NAME ACCEL SUITE...: one vmtest boot running the suites, then the
# leak check; prints the suites' lines and the boot's verdict.
boot() {
	local name=$1 accel=$2 dir wall user sys TIMEFORMAT='%R %U %S'
	shift 2
	dir=$out/$name
	echo "debug_kernel.sh: boot '$name' ($accel): $*"
	# The guest's CPU time too: on a shared host it says more than the
	# wall time what the boot costs.
	{ time RT_VM_ACCEL=$accel tools/vm/vmtest -K "$KDIR" -t 3600 -o "$dir" -- \
		env BUILD="$DBUILD" tools/guest-tests "$@" tools/tests/kmemleak.sh \
		>"$dir.log" 2>&1; } 2>"$dir.time"
	read -r wall user sys <"$dir.time"
	dir=$dir/$kver
	grep -E -- "$SUITE_RE|^### .*: [0-9]+s$" "$dir/console.log"
	# What failed, for the CI log: the failed checks and vmtest's verdict.
	grep -E -- '^not ok|^# .*(FAIL|leak)' "$dir/console.log" | head -n 50
	grep -E -- '^faultinject: |^(ok|not ok) - [a-z_]+: .*faults injected' \
		"$dir/console.log" | grep -vE -- "$SUITE_RE"
	if tail -n1 "$dir/result" 2>/dev/null | grep -q ': PASS$'; then
		echo "debug-kernel-$name: 1 passed, 0 failed"
	else
		sed 's/^/# /' "$dir/result" 2>/dev/null
		echo "debug-kernel-$name: 0 passed, 1 failed"
		status=1
	fi
	grep -qE -- ': [0-9]+ passed, [1-9][0-9]* failed$' <(grep -E -- "$SUITE_RE" "$dir/console.log") &&
		status=1
	echo "debug_kernel.sh: boot '$name' done after $(elapsed): ${wall}s wall, ${user}s user + ${sys}s sys CPU"
}

boot mttcg tcg selftests/run_guest.sh daemon/tests/run_guest.sh
boot single tcg,thread=single selftests/probes/run_guest.sh \
	tools/tests/cli_guest.sh selftests/faultinject_guest.sh

echo "debug_kernel.sh: $( ((status == 0)) && echo "all passed" || echo FAILED ) in $(elapsed); logs in $out"
exit $status
