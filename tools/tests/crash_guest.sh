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
#   RT_CRASH_OOPS_MSG=MSG          the oops's message (default "Oops";
#                                  crash.sh gives KASAN's otherwise)
#   RT_CRASH_RESTART=selftest      the oops case restarts through
#                                  ringtrace_selftest.ko's crash_restart
#                                  even where sysrq is built in (the way
#                                  of a kernel without: the debug kernel)
#
# Boot K loads ringtrace.ko with the region and checks what the boot before
# it left: boot 1 (RAM fresh from qemu) that there is no previous trace
# (persist/info, persist/image, and `ringtrace recover` says so, exits 0
# and writes nothing);
# boot K > 1 that case K-1's image is there and holds what the case wrote
# (check_CASE), then releases it and sees no previous trace.  Then boot K <
# N fires case K (fire_CASE), which ends the boot; boot N unloads the
# module and returns, and the guest powers off.
#
# Cases:
#   sysrq-c  markers on every CPU, "rtcrash-bK-CPU-NNNNNN" (K the boot;
#            each number sent
#            to the console through /dev/kmsg as "rtcrash: cpu C marker N"
#            once its write() returned), then `echo c > /proc/sysrq-trigger`
#            while they are still being written.  Checked next boot: the
#            header (magic, layout, checksum, areas), lifecycle live (the
#            module was loaded at the crash), the trace uuid the crashed boot
#            had, every used slice's counters non-zero and its packets this
#            trace's and CPU's, each CPU's markers in order with none missing
#            and none of an earlier boot (tools/tests/crash_image.py);
#            their last numbers go to
#            $RT_VM_OUT/markers.K, which crash.sh compares with boot K-1's
#            console.  And the crash path's state (crash_entry.py): one
#            entry, reason panic, "sysrq triggered crash", its stack naming
#            sysrq_handle_crash, and every used slice's snapshot; the
#            entry's CPU goes to $RT_VM_OUT/entry-cpu.K, which crash.sh
#            compares with the CPU the console's panic names.  The
#            crashed boot's metadata goes to $RT_VM_OUT/metadata.K/
#            (kernel_panic declared, babeltrace2 reads it: crash.sh), and
#            `ringtrace recover --keep` writes $RT_VM_OUT/recovered.K and
#            says the previous boot crashed, a panic on the entry's CPU
#            with the message; crash.sh wants kernel_panic as the
#            panicking CPU's last event there.
#   panic    as sysrq-c, the panic from ringtrace_selftest.ko's
#            crash_panic (kernels without CONFIG_MAGIC_SYSRQ: the debug
#            kernel); its entry's stack must name vfs_write (the module's
#            own frames do not symbolize in the next boot).
#   lockup   as sysrq-c, the panic the soft-lockup detector's
#            (kernel.softlockup_panic=1, kernel.watchdog_thresh=1) while
#            ringtrace_selftest.ko's crash_lockup spins on CPU 1 with
#            preemption off; the image's identity first names another
#            build (persist/identity, build-id 07...).  Checked next boot:
#            `ringtrace recover` refuses it (exit 1, both build-ids and
#            --force named, nothing written, the image kept), then as
#            sysrq-c with --force: the entry "softlockup: hung tasks", in
#            hard interrupt context, its stack naming watchdog_timer_fn.
#   reboot   markers as sysrq-c, then `busybox reboot -f` with the writers
#            running: no crash.  Checked next boot: the markers as
#            sysrq-c's, one entry, reason shutdown, its stack naming
#            kernel_restart (the other CPUs wrote on after it: their
#            snapshots are only no later than the end), and `ringtrace
#            recover` says the previous boot ended in a reboot, not a
#            crash; crash.sh wants no kernel_panic in the directory.
#   oops     markers as sysrq-c; on CPU 1 a marker "rtcrash-oops-before",
#            then a task oopses (ringtrace_selftest.ko's crash_oops, a NULL
#            store) with kernel.panic_on_oops=0, the boot goes on: a
#            marker "rtcrash-oops-after" on CPU 1, then an emergency
#            restart with the writers running: `echo b >
#            /proc/sysrq-trigger` on CPU 0 (without CONFIG_MAGIC_SYSRQ,
#            ringtrace_selftest.ko's crash_restart, which calls
#            emergency_restart()).  The oopsing task's pid goes to
#            $RT_VM_OUT/oops-tid.K, the CPU that restarted to
#            $RT_VM_OUT/emerg-cpu.K, the way (sysrq, selftest) to
#            emerg-how.K.  Checked next boot: the markers as sysrq-c's;
#            two entries, the oops then the emergency restart
#            (crash_entry.py --entry 1: reason emerg_restart, "emergency
#            restart", of that CPU, its stack naming emergency_restart and
#            __handle_sysrq, or vfs_write for the selftest's; the writers
#            ran on, as after a shutdown's);
#            `ringtrace recover` says the boot ended in an oops on CPU 1
#            then an emergency restart on that CPU; crash.sh wants, in the
#            directory, CPU 1's kernel_panic (reason oops, "Oops", that
#            task) between the two markers, the json's oops entry written
#            live and agreeing (cpu, tid, message, the same stack), and the
#            emergency restart's kernel_panic appended as the last event of
#            the CPU that ran sysrq b, with the stack of the json's entry.
#   nmi      as sysrq-c, the panic in NMI context: ringtrace_selftest.ko's
#            crash_nmi sends CPU 1 an NMI whose handler calls nmi_panic()
#            (as the hard-lockup detector does).  Checked next boot as
#            sysrq-c, the entry "ringtrace_selftest: crash_nmi", written in
#            NMI context, its stack naming default_do_nmi.
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
# The build-id the lockup case writes into its image's identity.
readonly FOREIGN_BUILD_ID=0707070707070707070707070707070707070707

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
		printf 'rtcrash-b%d-%d-%06d' "$BOOT" "$cpu" "$i" >"$RT/marker" || return 1
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
		taskset -c "$cpu" bash -c "$(declare -f marker_writer); RT=$RT BOOT=$BOOT; marker_writer $cpu" &
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

# --- lockup ---------------------------------------------------------------

# As sysrq-c, the crash a hung CPU: ringtrace_selftest's crash_lockup
# spins on CPU 1 with preemption off (interrupts on) until the soft-lockup
# detector, at kernel.watchdog_thresh=1 (a lockup after 2 s), panics with
# kernel.softlockup_panic=1, from its hrtimer on CPU 1 (hard interrupt).
# Before it, the trace's identity names another build (the build-id all
# 07s), so the next boot's recovery must refuse it until --force.
fire_lockup() {
	setup "ringtrace_selftest.ko loads" insmod "$BUILD/$KVER/ringtrace_selftest.ko" || return 1
	setup "the image's identity names another build" sh -c \
		"echo boot_id=\$(cat /proc/sys/kernel/random/boot_id) build_id=$FOREIGN_BUILD_ID >$RT/persist/identity" || return 1
	setup "softlockup_panic=1" sh -c 'echo 1 >/proc/sys/kernel/softlockup_panic' || return 1
	# The short threshold only from the spin on: a vCPU of a busy host
	# can miss 2 s before it.
	fire_markers "echo 1 >/proc/sys/kernel/watchdog_thresh && taskset -c 1 sh -c 'echo 60 >/sys/kernel/debug/ringtrace_selftest/crash_lockup'"
}

# Another build's image: refused, both build-ids named, nothing written and
# the image kept; the rest as sysrq-c's, read with --force.
check_lockup() {
	local out=/tmp/rtcrash-foreign rc
	tools/ringtrace recover -o "$out" >/tmp/rtcrash-foreign.log 2>&1
	rc=$?
	sed 's/^/# /' /tmp/rtcrash-foreign.log
	check "another build's image: ringtrace recover refuses it (exit $rc, 1 wanted)" test "$rc" = 1
	check "its message names the image's build-id, this kernel's and --force" \
		grep -q "build-id $FOREIGN_BUILD_ID.*this kernel is $KVER .*(build-id $(running_build_id)).*--force" \
		/tmp/rtcrash-foreign.log
	check "nothing was written, and the image is kept (state $(info_field state))" \
		test ! -e "$out" -a "$(info_field state)" = previous
	check_markers_crash "softlockup: hung tasks" watchdog_timer_fn irq --force
}

# This kernel's GNU build-id, from /sys/kernel/notes, in hex.
running_build_id() {
	python3 -c 'import struct
d = open("/sys/kernel/notes", "rb").read()
i = 0
while i + 12 <= len(d):
    n, s, t = struct.unpack_from("<III", d, i)
    name = i + 12
    desc = name + (n + 3) // 4 * 4
    if t == 3 and d[name:name + n] == b"GNU\0":
        print(d[desc:desc + s].hex())
        break
    i = desc + (s + 3) // 4 * 4'
}

# --- reboot ---------------------------------------------------------------

# No crash: markers, then a warm `reboot -f` with the writers running.
# Busybox's: the guest's root is the host's, where reboot is systemctl,
# which does nothing in a chroot.  Either way reboot(2) without init.
fire_reboot() {
	fire_markers 'busybox reboot -f'
}

# The shutdown entry, and a recovery that says the boot did not crash
# and appends no kernel_panic (crash.sh checks the directory).
check_reboot() {
	local rc
	check_markers_image
	python3 tools/tests/crash_entry.py "$RT/persist/image" /proc/kallsyms \
		shutdown shutdown kernel_restart >/tmp/rtcrash-entry 2>&1
	check_output /tmp/rtcrash-entry $?
	sed -n 's/^entry cpu //p' /tmp/rtcrash-entry >"$OUT/entry-cpu.$BOOT"
	tools/ringtrace recover --keep -o "$OUT/recovered.$BOOT" >/tmp/rtcrash-recover.log 2>&1
	rc=$?
	check "ringtrace recover --keep writes the trace directory (exit $rc)" test "$rc" = 0
	sed 's/^/# /' /tmp/rtcrash-recover.log
	check "it says the previous boot ended in a reboot, not a crash" \
		grep -q '^the previous boot ended in a reboot or power off (cpu [0-9]*), not a crash: no kernel_panic$' \
		/tmp/rtcrash-recover.log
}

# --- oops -----------------------------------------------------------------

# A task oopses on CPU 1 between two markers of its CPU, the kernel lives
# on (panic_on_oops=0), then an emergency restart (sysrq b, or the
# selftest's crash_restart, on CPU 0) with the writers running: no panic,
# no reboot path.
fire_oops() {
	local st=/sys/kernel/debug/ringtrace_selftest restart='echo b >/proc/sysrq-trigger' how=sysrq
	setup "ringtrace_selftest.ko loads" insmod "$BUILD/$KVER/ringtrace_selftest.ko" || return 1
	setup "panic_on_oops=0" sh -c 'echo 0 >/proc/sys/kernel/panic_on_oops' || return 1
	if [[ ${RT_CRASH_RESTART:-} == selftest || ! -e /proc/sysrq-trigger ]]; then
		restart="echo 1 >$st/crash_restart" how=selftest
	fi
	echo 0 >"$OUT/emerg-cpu.$BOOT"
	echo "$how" >"$OUT/emerg-how.$BOOT"
	fire_markers "taskset -c 1 sh -c 'echo \$\$ >$OUT/oops-tid.$BOOT; printf rtcrash-oops-before >$RT/marker; echo 1 >$st/crash_oops'; sleep 1; taskset -c 1 sh -c 'printf rtcrash-oops-after >$RT/marker' && sleep 1 && taskset -c 0 sh -c '$restart'"
}

# The markers; the emergency restart's entry after the oops's, of the CPU
# that ran sysrq b; a recovery that says the boot oopsed on CPU 1, then
# restarted in an emergency on that CPU (crash.sh checks the directory).
check_oops() {
	local rc ecpu caller=__handle_sysrq
	check_markers_image
	# The selftest module's frames do not symbolize: its caller's do.
	[[ $(cat "$OUT/emerg-how.$((BOOT - 1))" 2>/dev/null) != selftest ]] || caller=vfs_write
	python3 tools/tests/crash_entry.py --entry 1 "$RT/persist/image" /proc/kallsyms \
		emerg_restart "emergency restart" "emergency_restart,$caller" >/tmp/rtcrash-entry 2>&1
	check_output /tmp/rtcrash-entry $?
	sed -n 's/^entry cpu //p' /tmp/rtcrash-entry >"$OUT/entry-cpu.$BOOT"
	ecpu=$(cat "$OUT/emerg-cpu.$((BOOT - 1))" 2>/dev/null)
	check "the emergency restart's entry is of cpu $ecpu, which restarted ($(cat "$OUT/entry-cpu.$BOOT"))" \
		test -n "$ecpu" -a "$ecpu" = "$(cat "$OUT/entry-cpu.$BOOT")"
	tools/ringtrace recover --keep -o "$OUT/recovered.$BOOT" >/tmp/rtcrash-recover.log 2>&1
	rc=$?
	check "ringtrace recover --keep writes the trace directory (exit $rc)" test "$rc" = 0
	# Not onto the console: its "Oops" is a splat to vmtest.
	cp /tmp/rtcrash-recover.log "$OUT/recover.$BOOT.log"
	echo "# its output: recover.$BOOT.log"
	check "it says the previous boot ended in an oops on cpu 1, then an emergency restart on cpu $ecpu" \
		grep -qxF "the previous boot ended in an oops on cpu 1 (\"${RT_CRASH_OOPS_MSG:-Oops}\"), then an emergency restart (cpu $ecpu: sysrq b, or a watchdog), not a clean reboot" \
		/tmp/rtcrash-recover.log
}

# --- nmi ------------------------------------------------------------------

fire_nmi() {
	setup "ringtrace_selftest.ko loads" insmod "$BUILD/$KVER/ringtrace_selftest.ko" || return 1
	fire_markers "taskset -c 1 sh -c 'echo 1 >/sys/kernel/debug/ringtrace_selftest/crash_nmi'"
}

check_nmi() {
	check_markers_crash "ringtrace_selftest: crash_nmi" default_do_nmi nmi
}

check_sysrq-c() {
	check_markers_crash "sysrq triggered crash" sysrq_handle_crash
}

# The module's frames do not symbolize in the next boot: a caller of the
# debugfs write.
check_panic() {
	check_markers_crash "ringtrace_selftest: crash_panic" vfs_write
}

# The image of the boot before, live when that boot ended: its trace (the
# uuid), its markers (rtcrash-bK-..., K the boot before) in order per CPU,
# to $OUT/markers.$BOOT for crash.sh.  No marker of an earlier boot: an
# image holds one boot's trace.
check_markers_image() {
	local prev=$((BOOT - 1)) uuid rc t b
	uuid=$(info_field uuid)
	check "the image is boot $prev's trace (uuid $uuid)" \
		test -n "$uuid" -a "$uuid" = "$(cat "$OUT/uuid.$prev" 2>/dev/null)"
	check "it was live when boot $prev ended (lifecycle $(info_field lifecycle))" \
		test "$(info_field lifecycle)" = live
	t=$(date +%s%N)
	python3 tools/tests/crash_image.py "$RT/persist/image" live "rtcrash-b$prev" >/tmp/rtcrash-read 2>&1
	rc=$?
	echo "# crash_image.py read the image in $((($(date +%s%N) - t) / 1000000)) ms"
	check_output /tmp/rtcrash-read "$rc"
	grep '^markers ' /tmp/rtcrash-read >"$OUT/markers.$BOOT"
	check "markers were read for every CPU ($(wc -l <"$OUT/markers.$BOOT") of $(nproc))" \
		test "$(wc -l <"$OUT/markers.$BOOT")" -eq "$(nproc)"
	for ((b = 1; b < prev; b++)); do
		python3 tools/tests/crash_image.py "$RT/persist/image" live "rtcrash-b$b" >/tmp/rtcrash-old 2>&1
		check "no marker of boot $b in it ($(grep -c '^markers ' /tmp/rtcrash-old) CPUs have some)" \
			test "$(grep -c '^markers ' /tmp/rtcrash-old)" = 0
	done
}

# The image of a markers case whose panic said $1, with $2 on its stack,
# in context $3 (task, irq, nmi; default task); $4: recover's option.
check_markers_crash() {
	local rc
	check_markers_image
	# The crash path's entry and snapshots (nokaslr: this boot's
	# kallsyms name the crashed boot's addresses).
	python3 tools/tests/crash_entry.py "$RT/persist/image" /proc/kallsyms \
		panic "$1" "$2" "${3:-task}" >/tmp/rtcrash-entry 2>&1
	check_output /tmp/rtcrash-entry $?
	sed -n 's/^entry cpu //p' /tmp/rtcrash-entry >"$OUT/entry-cpu.$BOOT"
	# The recovery, into the share for crash.sh (kernel_panic last).
	tools/ringtrace recover --keep ${4:+"$4"} -o "$OUT/recovered.$BOOT" >/tmp/rtcrash-recover.log 2>&1
	rc=$?
	check "ringtrace recover --keep ${4:+$4 }writes the trace directory (exit $rc)" test "$rc" = 0
	sed 's/^/# /' /tmp/rtcrash-recover.log
	check "it says the previous boot crashed: a panic on the entry's CPU, \"$1\"" \
		grep -qxF "the previous boot crashed: panic on cpu $(cat "$OUT/entry-cpu.$BOOT"): \"$1\"" \
		/tmp/rtcrash-recover.log
}

# A cold boot: ringtrace recover finds nothing, says so, and writes nothing.
check_cold() {
	local out=/tmp/rtcrash-cold rc
	tools/ringtrace recover -o "$out" >/tmp/rtcrash-cold.log 2>&1
	rc=$?
	sed 's/^/# /' /tmp/rtcrash-cold.log
	check "cold boot: ringtrace recover says \"no previous trace\" (exit $rc)" \
		grep -qx 'no previous trace' /tmp/rtcrash-cold.log
	check "cold boot: it exits 0 and writes nothing" test "$rc" = 0 -a ! -e "$out"
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
	check_cold
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
