#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run_guest.sh - run the ringtrace selftests inside a test guest, as root.
#
#   tools/vm/vmtest -- env BUILD=/path/to/build selftests/run_guest.sh
#
# Loads $BUILD/$RT_KVER/ringtrace.ko and ringtrace_selftest.ko, runs every
# selftest binary (built on the host by `make -C selftests`), then unloads
# the modules, checking that ringtrace cannot be removed while one of its
# buffer files is open.  Prints each binary's TAP output, a TAP block of its
# own checks, and last one line:
#
#   selftests: N passed, M failed
#
# counting kselftest test cases (a SKIP is a failure: this script loads
# both modules and the guest has a CPU to take offline, so every case has
# what it needs; a binary that dies before reporting every test counts the
# missing ones as failed).
# Exits 1 if anything failed.
#
# persist_test (the persistent region) loads and unloads ringtrace.ko
# itself, after the others, when the kernel command line reserves a region
# for it: reserve_mem=16M:4096:ringtrace reserve_mem=1M:4096:rtsmall
# (6.11+) or memmap=16M$0x50000000 (any kernel), as tools/run-tests boots
# every guest (RT_VM_KERNEL_ARGS for vmtest by hand).  Without one it says
# so and is not run.
#
# Environment: RT_KVER (set by vmtest; default `uname -r`), BUILD (module
# build root, as for `make modules`; default $RT_CACHE/build; vmtest passes
# no environment, hence the `env` above), RT_SELFTESTS (space-separated
# subset of the binaries; persist_test runs if it is listed, or by
# default), RT_RINGTRACE_PARAMS (ringtrace.ko's parameters for the other
# binaries, e.g. persist=ringtrace to run them over rings in the region).

set -u

SELFTESTS_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
readonly SELFTESTS_DIR
readonly KVER=${RT_KVER:-$(uname -r)}
# The top-level Makefile's default module tree.
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly KO_DIR=$BUILD/$KVER
readonly DEBUGFS=/sys/kernel/debug
read -r -a TESTS <<<"${RT_SELFTESTS:-control_test mmap_test ioctl_test poll_test marker_test mode_test kmod_test stress_test splice_test persist_test}"
readonly TESTS
# The suites that only need ringtrace.ko, run again through /dev/ringtrace.
read -r -a DEV_TESTS <<<"${RT_DEV_SELFTESTS:-control_test mmap_test ioctl_test poll_test marker_test mode_test}"
readonly DEV_TESTS
readonly DEVDIR=/dev/ringtrace
# Per binary, far above its own harness timeouts: a hung binary must not
# eat the guest's whole time limit.
readonly BINARY_TIMEOUT=900

passed=0
failed=0
skipped=0
own=0			# test cases of this script

# One TAP line for a check of this script, counted like the binaries' cases.
check() {
	local desc=$1
	shift
	own=$((own + 1))
	if "$@"; then
		echo "ok $own run_guest.$desc"
		passed=$((passed + 1))
		return 0
	fi
	echo "not ok $own run_guest.$desc"
	failed=$((failed + 1))
	return 1
}

# setup DESC COMMAND...: a step the checks stand on (debugfs mounted, a
# CPU taken offline): a failure, one TAP line, if it fails; if it works no
# test case and no pass.
setup() {
	local desc=$1
	shift
	"$@" && { echo "# setup: $desc"; return 0; }
	check "$desc" false
}

# Count the test cases in the TAP output of one binary ($1: output file,
# $2: its exit status).
count_tap() {
	local out=$1 status=$2 plan ok not_ok skip
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$out" | head -n1)
	ok=$(grep -c '^ok [0-9]' "$out")
	skip=$(grep -c '^ok [0-9].*# SKIP' "$out")
	not_ok=$(grep -c '^not ok [0-9]' "$out")
	passed=$((passed + ok - skip))
	skipped=$((skipped + skip))
	failed=$((failed + not_ok + skip))
	((skip == 0)) || grep '^ok [0-9].*# SKIP' "$out" | sed 's/^/# a failure: /'
	if [[ -z $plan ]]; then
		echo "# no TAP plan: counted as one failure"
		failed=$((failed + 1))
	elif ((ok + not_ok < plan)); then
		echo "# only $((ok + not_ok)) of $plan results: the rest count as failed"
		failed=$((failed + plan - ok - not_ok))
	elif ((status != 0 && not_ok == 0)); then
		echo "# exit status $status without a failed test: counted as one failure"
		failed=$((failed + 1))
	fi
}

debugfs_mounted() {
	grep -q " $DEBUGFS debugfs " /proc/mounts ||
		mount -t debugfs debugfs "$DEBUGFS"
	grep -q " $DEBUGFS debugfs " /proc/mounts
}

module_loaded() {
	[[ -d /sys/module/$1 ]]
}

load() {
	local ko=$KO_DIR/$1.ko
	if [[ ! -f $ko ]]; then
		echo "# $ko missing: run make modules BUILD=$BUILD on the host"
		return 1
	fi
	# shellcheck disable=SC2086 # parameters: words
	insmod "$ko" ${RT_RINGTRACE_PARAMS:+$([[ $1 == ringtrace ]] && echo "$RT_RINGTRACE_PARAMS")} &&
		module_loaded "$1"
}

unload() {
	rmmod "$1" && ! module_loaded "$1"
}

# An open buffer file pins the module: rmmod must fail and change nothing.
rmmod_refused_while_open() {
	local buf=$DEBUGFS/ringtrace/cpu/0/buffer ret=0
	exec {fd}<"$buf" || return 1
	if rmmod ringtrace 2>/dev/null; then
		echo "# rmmod ringtrace succeeded with $buf open"
		ret=1
	fi
	module_loaded ringtrace || ret=1
	# Still working after the refusal.
	grep -q '^cpu0 written=' "$DEBUGFS/ringtrace/stats" || ret=1
	exec {fd}<&-
	return $ret
}

# The same patterns tools/vm/vmtest fails a run on, in the kernel log
# written since this script started.
no_kernel_splat() {
	local re='WARNING:|BUG:|Oops|kernel BUG at|general protection fault|Call Trace:|lockdep|possible recursive locking|circular locking|KASAN|UBSAN|stack-protector|list_add corruption|list_del corruption|RCU stall|soft lockup|hard LOCKUP|blocked for more than|refcount_t:|Kernel panic|DEBUG_LOCKS_WARN_ON'
	if dmesg | tail -n +$((DMESG_START + 1)) | grep -E -- "$re"; then
		return 1
	fi
	return 0
}

# The files of the debugfs tree and of the /dev tree, as relative paths:
# the same list, files only (debugfs directories are /dev directories).
same_trees() {
	local a b
	a=$(cd "$DEBUGFS/ringtrace" && find . -type f | sort)
	b=$(cd "$DEVDIR" && find . -type c | sort)
	if [[ -z $a || $a != "$b" ]]; then
		diff <(echo "$a") <(echo "$b") | sed 's/^/# /'
		return 1
	fi
}

# Modes of the /dev nodes: what debugfs gives the same files.
same_modes() {
	local a b
	# One find per tree, not two stat processes per file: every process
	# costs under TCG, most under the debug kernel.
	a=$(cd "$DEBUGFS/ringtrace" && find . -type f -printf '%p %m\n' | sort)
	b=$(cd "$DEVDIR" && find . -type c -printf '%p %m\n' | sort)
	[[ -n $a && $a == "$b" ]] && return 0
	diff <(echo "$a") <(echo "$b") | sed 's/^/# debugfs|dev: /'
	return 1
}

# Load ringtrace.ko (and ringtrace_selftest.ko) with the highest CPU
# offline, for hotplug_test: it then sees that CPU come up for the first
# time.
hotplug_suite() {
	local cpu online
	online=$(cat /sys/devices/system/cpu/online)
	cpu=$(ls -d /sys/devices/system/cpu/cpu[0-9]* | sed 's/.*cpu//' | sort -n | tail -n1)
	if [[ $cpu == 0 || ! -w /sys/devices/system/cpu/cpu$cpu/online ]]; then
		# vmtest's guests have two CPUs (-c): one can go offline.
		check "hotplug_test_runs: a CPU that can go offline ($online)" false
		return
	fi
	setup "cpu${cpu}_offline" sh -c "echo 0 > /sys/devices/system/cpu/cpu$cpu/online"
	check insmod_ringtrace_cpu${cpu}_offline load ringtrace || return
	# Its writers run on a CPU while it comes up.
	check insmod_ringtrace_selftest_cpu${cpu}_offline load ringtrace_selftest
	run_binary hotplug_test
	echo 1 > "/sys/devices/system/cpu/cpu$cpu/online"
	setup "cpus_online_again" test "$(cat /sys/devices/system/cpu/online)" = "$online"
	module_loaded ringtrace_selftest &&
		check rmmod_ringtrace_selftest_after_hotplug unload ringtrace_selftest
	check rmmod_ringtrace_after_hotplug timeout 60 rmmod ringtrace
}

# The persistent region's tests, with ringtrace.ko unloaded: they load it
# with the boot's region and with bad parameters, and unload it.
persist_suite() {
	if ! grep -qE '(^| )(reserve_mem=[^ ]*:ringtrace|memmap=[^ ]*[$][^ ]*)( |$)' /proc/cmdline; then
		echo "# persist_test not run: no reserve_mem=SIZE:ALIGN:ringtrace or memmap=SIZE\$ADDR on the kernel command line"
		return
	fi
	export RT_KO=$KO_DIR/ringtrace.ko
	run_binary persist_test
	unset RT_KO
	module_loaded ringtrace && check persist_test_left_it_unloaded false
}

run_binary() {
	local name=$1 bin=$SELFTESTS_DIR/$1 out status start secs
	echo "# selftests: $name${RT_ROOT:+ (RT_ROOT=$RT_ROOT)}"
	if [[ ! -x $bin ]]; then
		echo "# $bin missing: run make -C selftests on the host"
		echo "not ok 1 $name # binary missing"
		failed=$((failed + 1))
		return
	fi
	out=$(mktemp)
	start=$(date +%s)
	timeout --signal=KILL "$BINARY_TIMEOUT" "$bin" >"$out" 2>&1
	status=$?
	secs=$(($(date +%s) - start))
	cat -- "$out"
	echo "# $name: exit status $status after ${secs}s"
	count_tap "$out" "$status"
	rm -f -- "$out"
}

main() {
	local t loaded=1

	echo "# ringtrace selftests on $KVER, modules from $KO_DIR"
	if [[ $EUID -ne 0 ]]; then
		echo "# must run as root (in the test guest)"
		echo "selftests: 0 passed, 1 failed"
		exit 1
	fi
	# Judge only what these tests cause; keep the log for vmtest.
	DMESG_START=$(dmesg | wc -l)

	echo "TAP version 13"
	setup debugfs_mounted debugfs_mounted || loaded=0
	check insmod_ringtrace load ringtrace || loaded=0
	check insmod_ringtrace_selftest load ringtrace_selftest || loaded=0

	if ((loaded)); then
		for t in "${TESTS[@]}"; do
			[[ $t == persist_test ]] || run_binary "$t"
		done
		check dev_tree_mirrors_debugfs same_trees
		check dev_modes_match_debugfs same_modes
		export RT_ROOT=$DEVDIR
		for t in "${DEV_TESTS[@]}"; do
			run_binary "$t"
		done
		unset RT_ROOT
	else
		echo "# modules not loaded: selftests not run"
	fi

	module_loaded ringtrace_selftest &&
		check rmmod_ringtrace_selftest unload ringtrace_selftest
	if module_loaded ringtrace; then
		check rmmod_refused_while_buffer_open rmmod_refused_while_open
		check rmmod_ringtrace unload ringtrace
		check debugfs_dir_removed test ! -e "$DEBUGFS/ringtrace"
		check dev_dir_removed test ! -e "$DEVDIR"
	fi
	[[ " ${TESTS[*]} " == *" persist_test "* ]] && ! module_loaded ringtrace &&
		persist_suite
	((loaded)) && hotplug_suite
	check no_kernel_splat no_kernel_splat

	((skipped)) && echo "# $skipped test cases skipped: counted as failures"
	echo "selftests: $passed passed, $failed failed"
	((failed == 0))
}

main "$@"
