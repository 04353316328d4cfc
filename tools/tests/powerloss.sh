#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Power loss, per kernel: ringtraced records onto an ext4 file system on a
# virtio-blk disk image in a guest, which dies without a sync (sysrq b);
# a second guest boots on the same image and reads what it kept
# (tools/tests/powerloss_guest.sh).  The guest's page cache is what a
# power loss takes; what reached the virtual disk stays in the image.
#
#   tools/tests/powerloss.sh [-k KVER]...
#
# Prints "powerloss-<KVER>: N passed, M failed" per kernel.
#
# The boots run under single-threaded TCG (RT_VM_ACCEL overrides it): they
# need no second host thread, and under multi-threaded TCG a boot can die
# in the kernel's own static-key patching before anything of ringtrace
# runs (the full run of 16d4607: 6.12-rt's recording boot stopped on
# "Oops: int3" in sched_clock_cpu() 2.9 s into the boot, PID 1).
set -uo pipefail
cd "$(dirname "$0")/../.."
cache=${RT_CACHE:-/var/cache/ringtrace}
build=${BUILD:-$cache/build}
kvers=()
while [[ ${1:-} == -k ]]; do
	kvers+=("$2")
	shift 2
done
if ((${#kvers[@]} == 0)); then
	for v in /boot/vmlinuz-*; do
		k=${v#/boot/vmlinuz-}
		[[ -d /lib/modules/$k ]] && kvers+=("$k")
	done
fi

status=0
for k in "${kvers[@]}"; do
	out=$cache/vm-runs/powerloss/$k
	img=$cache/powerloss-$k.img
	mkdir -p "$out"
	rm -f "$img"
	truncate -s 128M "$img"
	mkfs.ext4 -q -F "$img"
	disk="-drive file=$img,if=virtio,format=raw,cache=writeback"
	# Boot 1 ends in the crash: vmtest sees no exit status, as expected.
	RT_VM_ACCEL=${RT_VM_ACCEL:-tcg,thread=single} RT_VM_QEMU_ARGS=$disk \
		tools/vm/vmtest -k "$k" -t 600 -o "$out/record" -- \
		env BUILD="$build" tools/tests/powerloss_guest.sh record >"$out/record.log" 2>&1
	if [[ ! -s $out/record/$k/crashing ]]; then
		tail -n 20 "$out/record.log"
		echo "powerloss-$k: 0 passed, 1 failed (the recording boot did not reach the crash)"
		status=1
		continue
	fi
	RT_VM_ACCEL=${RT_VM_ACCEL:-tcg,thread=single} RT_VM_QEMU_ARGS=$disk \
		tools/vm/vmtest -k "$k" -t 600 -o "$out/check" -- \
		env BUILD="$build" tools/tests/powerloss_guest.sh check >"$out/check.log" 2>&1
	grep -E '^(ok|not ok|#) ' "$out/check/$k/console.log" | sed "s/^/$k: /"
	line=$(grep -E "^powerloss-[^ ]+: [0-9]+ passed, [0-9]+ failed$" "$out/check/$k/console.log")
	if [[ -z $line ]]; then
		echo "powerloss-$k: 0 passed, 1 failed (the checking boot printed no result)"
		status=1
	else
		echo "$line"
		[[ $line == *", 0 failed" ]] || status=1
	fi
	grep -q ': PASS$' "$out/check/$k/result" || {
		echo "powerloss-$k-guest: 0 passed, 1 failed ($(tail -n1 "$out/check/$k/result"))"
		status=1
	}
	rm -f "$img"
done
exit $status
