#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of tools/tests/crash.sh: one boot of a crash chain, run by
# tools/vm/vmtest's multi-boot mode (RT_VM_BOOT=K of RT_VM_BOOTS=N) with a
# persistent region on the kernel command line (reserve_mem=SIZE:ALIGN:
# ringtrace, or memmap=SIZE$ADDR).
#
#   RT_CRASH_CASES="sysrq-c ..."   the chain's cases, one per boot but the
#                                  last (N = cases + 1)
#
# Boot K loads ringtrace.ko with the region and checks what the boot before
# it left: boot 1 (RAM fresh from qemu) that there is no previous trace;
# boot K > 1 that case K-1's image is there and holds what the case wrote
# (check_CASE), then releases it and sees no previous trace.  Then boot K <
# N fires case K (fire_CASE), which ends the boot; boot N unloads the
# module and returns, and the guest powers off.
#
# Cases:
#   sysrq-c  markers on every CPU, "rtcrash-CPU-NNNNNN" (each number sent
#            to the console through /dev/kmsg as "rtcrash: cpu C marker N"
#            once its write() returned), then `echo c > /proc/sysrq-trigger`
#            while they are still being written.  Checked next boot: the
#            header (magic, layout, checksum, areas), lifecycle live (the
#            module was loaded at the crash), the trace uuid the crashed boot
#            had, every used slice's counters non-zero and its packets this
#            trace's and CPU's, each CPU's markers in order with none missing
#            (tools/tests/crash_image.py); their last numbers go to
#            $RT_VM_OUT/markers.K, which crash.sh compares with boot K-1's
#            console.  And the crash path's state (crash_entry.py): one
#            entry, reason panic, "sysrq triggered crash", its stack naming
#            sysrq_handle_crash, and every used slice's snapshot; the
#            entry's CPU goes to $RT_VM_OUT/entry-cpu.K, which crash.sh
#            compares with the CPU the console's panic names.  The
#            crashed boot's metadata goes to $RT_VM_OUT/metadata.K/
#            (kernel_panic declared, babeltrace2 reads it: crash.sh), and
#            `ringtrace recover --keep` writes $RT_VM_OUT/recovered.K, where
#            crash.sh wants kernel_panic as the panicking CPU's last event.
#   panic    as sysrq-c, the panic from ringtrace_selftest.ko's
#            crash_panic (kernels without CONFIG_MAGIC_SYSRQ: the debug
#            kernel); its entry's stack must name vfs_write (the module's
#            own frames do not symbolize in the next boot).
#
# Each boot writes its checks and "crash-<KVER>-boot<K>: N passed, M
# failed" (a boot that fires a case, before the crash) to
# $RT_VM_OUT/crash-boot-K.log, which crash.sh reads: the console would lose
# what a crash leaves in the tty's buffers, a write to the share is on the
# host when it returns.  The console gets a copy.
# shellcheck disable=SC2317 # shellcheck takes the exec of the output's redirection for an exit
set -u
cd "$(dirname "$0")/../.." || exit 1
. tools/tests/check.sh
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
readonly BOOT=${RT_VM_BOOT:?run by tools/vm/vmtest with RT_VM_BOOTS}
readonly BOOTS=${RT_VM_BOOTS:?run by tools/vm/vmtest with RT_VM_BOOTS}
read -r -a CASES <<<"${RT_CRASH_CASES:-sysrq-c}"
readonly OUT=$RT_VM_OUT

# The module parameters naming this boot's region, from the command line.
region_params() {
	local w size addr
	for w in $(</proc/cmdline); do
		case $w in
		reserve_mem=*:ringtrace) echo persist=ringtrace; return 0 ;;
		memmap=*\$*)
			size=${w#memmap=} size=${size%%\$*} addr=${w#*\$}
			case $size in
			*[Mm]) size=$((${size%?} << 20)) ;;
			*[Gg]) size=$((${size%?} << 30)) ;;
			*[Kk]) size=$((${size%?} << 10)) ;;
			esac
			echo "persist_addr=$addr persist_size=$size"
			return 0 ;;
		esac
	done
	return 1
}

# One line of persist/info: info_field NAME.
info_field() {
	sed -n "s/^$1 //p" "$RT/persist/info" | head -n1
}

# No previous trace: the region holds this load's live rings, and
# persist/image has nothing to read (ENODATA).
no_previous_trace() {
	local err
	[[ $(info_field state) == live ]] || return 1
	err=$(dd if="$RT/persist/image" of=/dev/null bs=4096 count=1 2>&1) && return 1
	[[ $err == *"No data available"* ]]
}

load() {
	local params
	params=$(region_params) || { echo "# no region on the command line"; return 1; }
	# shellcheck disable=SC2086 # one or two parameters
	insmod "$BUILD/$KVER/ringtrace.ko" $params
}

# --- sysrq-c ------------------------------------------------------------

# One CPU's writer: once every writer is ready, numbered markers until the
# crash; each number goes to the console after the marker's write()
# returned.  Progress in /tmp.  A 5 ms pause after each (a read from a
# FIFO nobody writes: no fork) leaves the CPU to the rest: under TCG a
# writer that never waits has written hundreds, each a line on the slow
# serial console, before the main shell's next look at their progress.
marker_writer() {
	local cpu=$1 i
	mkfifo "/tmp/rtcrash-pause-$cpu" && exec 9<>"/tmp/rtcrash-pause-$cpu" || return 1
	: >"/tmp/rtcrash-ready-$cpu"
	until [[ -e /tmp/rtcrash-go ]]; do
		sleep 0.05
	done
	for ((i = 0; ; i++)); do
		printf 'rtcrash-%d-%06d' "$cpu" "$i" >"$RT/marker" || return 1
		echo "<4>rtcrash: cpu $cpu marker $i" >/dev/kmsg || return 1
		((i % 10)) || echo "$i" >"/tmp/rtcrash-progress-$cpu"
		read -r -t 0.005 -u 9
	done
}

# Every writer is past marker $1.
writers_past() {
	local cpu n
	for cpu in "${CPUS[@]}"; do
		read -r n 2>/dev/null <"/tmp/rtcrash-progress-$cpu" || return 1
		((n >= $1)) || return 1
	done
}

writers_ready() {
	local cpu
	for cpu in "${CPUS[@]}"; do
		[[ -e /tmp/rtcrash-ready-$cpu ]] || return 1
	done
}

# Markers on every CPU, then $1 (a shell command that panics) with the
# writers running.
fire_markers() {
	local cpu
	mapfile -t CPUS < <(seq 0 $(($(nproc) - 1)))
	setup "markers only (events off)" sh -c "echo 0 >$RT/events/enable" || return 1
	# /dev/kmsg would drop most of the console lines past 10 in 5 s.
	setup "no rate limit on /dev/kmsg" sh -c 'echo on >/proc/sys/kernel/printk_devkmsg' || return 1
	info_field uuid >"$OUT/uuid.$BOOT"
	# The trace's metadata, for crash.sh (kernel_panic declared).
	setup "the metadata saved" sh -c "mkdir -p $OUT/metadata.$BOOT && cat $RT/metadata >$OUT/metadata.$BOOT/metadata" || return 1
	setup "tracing on" sh -c "echo 1 >$RT/tracing_on" || return 1
	for cpu in "${CPUS[@]}"; do
		taskset -c "$cpu" bash -c "$(declare -f marker_writer); RT=$RT; marker_writer $cpu" &
	done
	# They start together, so that none has written hundreds when the
	# last one has written a few.
	setup "a writer on every CPU" wait_for 60 writers_ready || return 1
	: >/tmp/rtcrash-go
	setup "every CPU's writer wrote 20 markers" wait_for 120 writers_past 20 || return 1
	check_summary "crash-$KVER-boot$BOOT"
	echo "# crashing with the writers running"
	cat "$OUT/crash-boot-$BOOT.log" >&3
	sh -c "$1"
	sleep 10
	echo "not ok - $1 did not crash the kernel"
	return 1
}

fire_sysrq-c() {
	fire_markers 'echo c >/proc/sysrq-trigger'
}

# As sysrq-c, through ringtrace_selftest's crash_panic: kernels without
# CONFIG_MAGIC_SYSRQ (the debug kernel).
fire_panic() {
	setup "ringtrace_selftest.ko loads" insmod "$BUILD/$KVER/ringtrace_selftest.ko" || return 1
	fire_markers "echo 1 >/sys/kernel/debug/ringtrace_selftest/crash_panic"
}

check_sysrq-c() {
	check_markers_crash "sysrq triggered crash" sysrq_handle_crash
}

# The module's frames do not symbolize in the next boot: a caller of the
# debugfs write.
check_panic() {
	check_markers_crash "ringtrace_selftest: crash_panic" vfs_write
}

# The image of a markers case whose panic said $1, with $2 on its stack.
check_markers_crash() {
	local prev=$((BOOT - 1)) uuid rc t
	uuid=$(info_field uuid)
	check "the image is the crashed boot's trace (uuid $uuid)" \
		test -n "$uuid" -a "$uuid" = "$(cat "$OUT/uuid.$prev" 2>/dev/null)"
	check "it was live at the crash (lifecycle $(info_field lifecycle))" \
		test "$(info_field lifecycle)" = live
	t=$(date +%s%N)
	python3 tools/tests/crash_image.py "$RT/persist/image" live rtcrash >/tmp/rtcrash-read 2>&1
	rc=$?
	echo "# crash_image.py read the image in $((($(date +%s%N) - t) / 1000000)) ms"
	check_output /tmp/rtcrash-read "$rc"
	grep '^markers ' /tmp/rtcrash-read >"$OUT/markers.$BOOT"
	check "markers were read for every CPU ($(wc -l <"$OUT/markers.$BOOT") of $(nproc))" \
		test "$(wc -l <"$OUT/markers.$BOOT")" -eq "$(nproc)"
	# The crash path's entry and snapshots (nokaslr: this boot's
	# kallsyms name the crashed boot's addresses).
	python3 tools/tests/crash_entry.py "$RT/persist/image" /proc/kallsyms \
		panic "$1" "$2" >/tmp/rtcrash-entry 2>&1
	check_output /tmp/rtcrash-entry $?
	sed -n 's/^entry cpu //p' /tmp/rtcrash-entry >"$OUT/entry-cpu.$BOOT"
	# The recovery, into the share for crash.sh (kernel_panic last).
	check "ringtrace recover --keep writes the trace directory" \
		tools/ringtrace recover --keep -o "$OUT/recovered.$BOOT"
}

# --- the chain -------------------------------------------------------------

echo "# crash chain boot $BOOT of $BOOTS: the checks in $OUT/crash-boot-$BOOT.log"
exec 3>&1 >"$OUT/crash-boot-$BOOT.log" 2>&1
echo "# crash chain boot $BOOT of $BOOTS, cases: ${CASES[*]}"
if ((BOOTS != ${#CASES[@]} + 1)); then
	echo "not ok - $BOOTS boots for ${#CASES[@]} cases: want one more boot than cases"
	exit 1
fi
setup "ringtrace.ko loads with the region ($(region_params))" load || {
	check_summary "crash-$KVER-boot$BOOT"
	cat "$OUT/crash-boot-$BOOT.log" >&3
	exit 1
}
if ((BOOT == 1)); then
	check "boot 1 (qemu's fresh RAM): no previous trace" no_previous_trace
else
	prev=${CASES[BOOT - 2]}
	state=$(info_field state)
	check "boot $BOOT finds the previous boot's image (state $state)" test "$state" = previous
	if [[ $state == previous ]]; then
		"check_$prev"
		setup "release the image" sh -c "info=\$(sed -n 's/^uuid //p' $RT/persist/info); echo \$info >$RT/persist/release"
	fi
	check "after the release: no previous trace" no_previous_trace
fi
if ((BOOT <= ${#CASES[@]})); then
	"fire_${CASES[BOOT - 1]}"
	cat "$OUT/crash-boot-$BOOT.log" >&3
	exit 1	# a case that returns did not crash
fi
rmmod ringtrace
check_summary "crash-$KVER-boot$BOOT"
status=$?
cat "$OUT/crash-boot-$BOOT.log" >&3
exit $status
