#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The crash test bed's own logic, on the host (no guest): tools/vm/vmtest's
# multi-boot verdict (split_console, check_boots) over made-up consoles,
# tools/tests/crash_image.py over made-up persistent images, and crash.sh's
# markers_match over made-up marker lists and consoles.  Each case must
# give the verdict it names: a check that passes what it should fail is as
# broken as one that fails a good run.
#
#   tools/tests/crash-bed.sh
#
# Prints "crash-bed: N passed, M failed".  RT_KEEP=1 keeps its files.
# shellcheck disable=SC2030,SC2031 # vmtest and crash.sh are sourced in subshells on purpose
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tools/tests/check.sh
tmp=$(mktemp -d)
trap '[[ -n ${RT_KEEP:-} ]] || rm -rf "$tmp"' EXIT

# --- vmtest's multi-boot verdict -------------------------------------------

# A boot's console lines: boot K of N, running the command, its end.
boot_lines() {	# K N [LINE...]: the lines go after the command started
	local k=$1 n=$2
	shift 2
	echo "[    1.000000] mtrr: your CPUs had inconsistent fixed MTRR settings"
	echo "vmtest-init: boot $k of $n"
	echo "vmtest-init: running /x/cmd.sh"
	(($# == 0)) || printf '%s\n' "$@"
}
panic_lines() {
	echo "[    9.000000] sysrq: Trigger a crash"
	echo "[    9.000100] Kernel panic - not syncing: sysrq triggered crash"
	echo "[    9.000200] CPU: 1 PID: 131 Comm: sh Tainted: G OE 6.1.0-56-amd64 #1"
	echo "[    9.000300] Call Trace:"
	echo "[    9.000400]  <TASK>"
	echo "[    9.000500] Kernel Offset: disabled"
	echo "[    9.000600] Rebooting in 1 seconds.."
}
returned_lines() {	# K N: the command returned
	echo "vmtest-init: command exited with status 0"
	if (($1 < $2)); then
		echo "vmtest-init: boot $1 of $2 done: rebooting"
		echo "[    8.000000] reboot: Restarting system"
	else
		echo "[    8.000000] reboot: Power down"
	fi
}
stale_lines() {	# a start that died of stale TCG code before guest-init
	echo "[    2.900000] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
	echo "[    2.900100] Modules linked in:"
	echo "[    2.900200] Call Trace:"
	echo "[    2.900300] Kernel panic - not syncing: Attempted to kill init!"
	echo "[    2.900400] Rebooting in 1 seconds.."
}

# A run directory of 3 boots: boot 1 panics (sysrq c), 2 and 3 return.
good_run() {
	local d=$1
	mkdir -p "$d"
	{
		boot_lines 1 3 "ok - something"
		panic_lines
		boot_lines 2 3
		returned_lines 2 3
		boot_lines 3 3
		returned_lines 3 3
	} >"$d/console.log"
	touch "$d/reached-1" "$d/reached-2" "$d/reached-3"
	echo 0 >"$d/status.2"
	echo 0 >"$d/status.3"
	echo 0 >"$d/status"
	: >"$d/dmesg.2.txt"
	: >"$d/dmesg.3.txt"
	: >"$d/dmesg.txt"
}

readonly EXPECT1='1:Kernel panic - not syncing: sysrq triggered crash'

# verdict DIR [QEMU_RC]: vmtest's result line for the run in DIR (3 boots).
verdict() {
	local dir=$1 rc=${2:-0}
	(
		# No arguments: a vmtest without the guard (main's) only says
		# "no COMMAND given" instead of booting a guest.
		set --
		# shellcheck source=tools/vm/vmtest
		. tools/vm/vmtest
		set +e
		BOOTS=3 TIMEOUT=300
		split_console "$dir"
		check_boots K "$dir" "$rc"
	) 2>&1 | tail -n1
}

# vmtest_case WHAT WANT(PASS|FAIL text) DIR [QEMU_RC]
vmtest_case() {
	local got
	got=$(verdict "$3" "${4:-0}")
	echo "# $got"
	check "vmtest multi-boot: $1" grep -qF -- "$2" <<<"$got"
}

d=$tmp/pass
good_run "$d"
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "boot 1's expected panic, two clean boots: PASS" ": PASS (3 boots)" "$d"
split_ok() {
	[[ $(tail -n1 "$1/console.boot-1.log") == "[    9.000600] Rebooting in 1 seconds.." &&
		$(grep -cx 'vmtest-init: boot 2 of 3' "$1/console.boot-2.log") == 1 &&
		$(tail -n1 "$1/console.boot-3.log") == "[    8.000000] reboot: Power down" &&
		$(cat "$1"/console.boot-*.log) == "$(cat "$1/console.log")" ]]
}
check "vmtest multi-boot: the console split in three parts, boot 1's ending with its panic, nothing lost" \
	split_ok "$d"

RT_VM_EXPECT='' RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "the same panic, not expected: FAIL" "FAIL (kernel splat)" "$d"

RT_VM_EXPECT=$'2:Kernel panic - not syncing: sysrq triggered crash' RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "the panic expected in the wrong boot: FAIL, named" \
	"boot 2: the expected splat /Kernel panic - not syncing: sysrq triggered crash/ is not on the console" "$d"

d=$tmp/warn2
good_run "$d"
sed -i 's/^vmtest-init: boot 2 of 3 done: rebooting$/[    7.000000] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1\/0x2\n&/' "$d/console.log"
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "a WARNING in boot 2: FAIL" "FAIL (kernel splat)" "$d"
check "vmtest multi-boot: ... and the splat line is named as boot 2's" \
	grep -q '^vmtest:   boot 2: .*WARNING: CPU: 0' <<<"$(
		RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single
		set --; . tools/vm/vmtest; set +e; BOOTS=3 TIMEOUT=300; check_boots K "$d" 0)"

# The next kernel's early splat, printed after boot 1's panic ended, is
# boot 2's: the expected panic does not hide it.
d=$tmp/early2
good_run "$d"
sed -i 's/^\[    9.000600\] Rebooting in 1 seconds..$/&\n[    0.500000] WARNING: CPU: 0 PID: 0 at early.c:1 e+0x1\/0x2/' "$d/console.log"
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "a WARNING early in boot 2's kernel, after boot 1's panic: FAIL" "FAIL (kernel splat)" "$d"

# A panic's last line lost (the CPU stopped while holding the console):
# boot 1's part ends where boot 2's kernel starts, its printk times anew.
d=$tmp/lostend
good_run "$d"
sed -i '/Rebooting in 1 seconds/d' "$d/console.log"
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "boot 1's panic without its last line: PASS" ": PASS (3 boots)" "$d"
check "vmtest multi-boot: ... boot 1's part ends with its panic's last line there, boot 2's starts with its kernel" \
	test "$(tail -n1 "$d/console.boot-1.log")" = "[    9.000500] Kernel Offset: disabled" -a \
	"$(head -n1 "$d/console.boot-2.log")" = "[    1.000000] mtrr: your CPUs had inconsistent fixed MTRR settings"

d=$tmp/unreached
good_run "$d"
rm "$d/reached-3"
RT_VM_EXPECT=$EXPECT1 vmtest_case "boot 3 never reached: FAIL, named" "boot 3 never came (no reached-3)" "$d"

d=$tmp/status
good_run "$d"
echo 1 >"$d/status.2"
RT_VM_EXPECT=$EXPECT1 vmtest_case "boot 2's command failed: FAIL" "boot 2: command exited with status 1" "$d"

d=$tmp/dmesg
good_run "$d"
echo "[    5.000000] BUG: unable to handle page fault" >"$d/dmesg.2.txt"
RT_VM_EXPECT=$EXPECT1 vmtest_case "a BUG in boot 2's saved dmesg: FAIL" "FAIL (kernel splat)" "$d"

d=$tmp/nostatus
good_run "$d"
rm "$d/status" "$d/status.3"
RT_VM_EXPECT=$EXPECT1 vmtest_case "the last boot without a status: FAIL" "boot 3: no exit status" "$d"
RT_VM_EXPECT=$EXPECT1 vmtest_case "... and killed by the time limit: said so" "timed out after 300s" "$d" 124

d=$tmp/past
good_run "$d"
touch "$d/reached-4"
RT_VM_EXPECT=$EXPECT1 vmtest_case "a 4th boot started (the last one did not power off): FAIL" \
	"the last boot did not power off: boot 4 started" "$d"

d=$tmp/stale
good_run "$d"
sed -i 's/^\[    9.000600\] Rebooting in 1 seconds..$/&\n__STALE__/' "$d/console.log"
sed -i "/^__STALE__$/{r /dev/stdin
d}" "$d/console.log" < <(stale_lines)
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg \
	vmtest_case "multi-threaded TCG: a start that died of stale code before guest-init: excused" ": PASS (3 boots)" "$d"
RT_VM_EXPECT=$EXPECT1 RT_VM_ACCEL=tcg,thread=single \
	vmtest_case "single-threaded TCG: the same oops: FAIL" "FAIL (kernel splat)" "$d"

# --- crash_image.py ---------------------------------------------------------

# mkimage FILE VARIANT: a 4 MiB image of one slice (cpu 0), one packet
# holding markers rtcrash-0-000000..9 (VARIANT: good, badsum, gap, uuid).
mkimage() {
	python3 - "$1" "$2" <<'EOF'
import struct, sys
sys.path.insert(0, "tools/tests")
import crash_image as c
path, variant = sys.argv[1:3]
size, sub, num = 4 << 20, 16384, 4
uuid = bytes(range(16))
state, slices, counters = 4096, 8192, 12288
ring = counters + 4096
v = dict(magic=c.MAGIC, layout=1, header_size=520, region_base=0,
         region_size=size, source=1, page_size=4096, trace_uuid=uuid,
         release=b"6.1", version=b"#1", build_id=b"", build_id_len=0,
         boot_id=bytes(16), armed_realtime_ns=0, armed_mono_ns=0,
         subbuf_size=sub, num_subbufs=num, nr_slices=1,
         slice_size=8192 + num * sub, counters_size=4096,
         state_offset=state, state_size=4096, slices_offset=slices,
         slices_size=4096, metadata_offset0=0, metadata_offset1=0,
         metadata_size=0, ksyms_offset0=0, ksyms_offset1=0, ksyms_size=0,
         rings_offset=counters, rings_size=8192 + num * sub)
img = bytearray(size)
img[:c.HEADER.size] = c.HEADER.pack(*[v[f] for f in c.HEADER_FIELDS],
                                    *[0] * 16, 0)
img[c.HEADER.size - 8:c.HEADER.size] = struct.pack(
    "<Q", c.xxh64(bytes(img[:4096])))
if variant == "badsum":
    img[100] ^= 1
struct.pack_into("<I", img, state, 1)
c.SLICE.pack_into(img, slices, 0, 1, counters, ring, 4096 + num * sub)
pkt = bytearray(c.PACKET.pack(c.CTF_MAGIC, bytes(16) if variant == "uuid"
                              else uuid, 0, 0, 0, 0, 0, 0, 0, 0, 0) + bytes(4))
for i in range(10):
    if variant == "gap" and i == 4:
        continue
    text = b"rtcrash-0-%06d" % i
    pkt += bytes(4) + struct.pack("<H", len(text)) + text
img[ring + 4096:ring + 4096 + len(pkt)] = pkt
c.SLOT.pack_into(img, counters, len(pkt), 10)
open(path, "wb").write(img)
EOF
}

# image_case WHAT VARIANT LIFECYCLE WANT_STATUS WANT_TEXT
image_case() {
	local out rc
	mkimage "$tmp/img" "$2"
	out=$(python3 tools/tests/crash_image.py "$tmp/img" "$3" rtcrash 2>&1)
	rc=$?
	grep '^not ok' <<<"$out" | sed 's/^/# /'
	check "crash_image.py: $1 (exit $rc)" \
		test "$rc" = "$4" -a "$(grep -cF -- "$5" <<<"$out")" -ge 1
}

image_case "a good image: its markers" good live 0 "markers 0 0 9 10"
image_case "a bad header checksum: refused" badsum live 1 "not ok - the header's checksum"
image_case "a marker missing: refused" gap live 1 "not ok - cpu 0's markers 0..9 are in order"
image_case "a packet of another trace: refused" uuid live 1 "every slot written holds a packet of this trace and cpu (bad: [0])"
image_case "the wrong lifecycle: refused" good unloaded 1 "not ok - lifecycle 1, unloaded wanted"
out=$(python3 tools/tests/crash_image.py "$tmp/none" live rtcrash 2>&1)
check "crash_image.py: no image: refused ($out)" grep -q '^not ok - read' <<<"$out"

# --- crash.sh's markers_match -----------------------------------------------

# match_case WHAT WANT(0|1) MARKERS-LINES [reboot]: against a console where
# cpu 0 showed 0..20, cpu 1 0..30, then the panic of cpu 1 (or, with
# "reboot", a reboot's last line: no CPU panicked).
match_case() {
	local d=$tmp/match rc
	mkdir -p "$d"
	{
		for i in $(seq 0 20); do echo "[    1.0] rtcrash: cpu 0 marker $i"; done
		for i in $(seq 0 30); do echo "[    1.0] rtcrash: cpu 1 marker $i"; done
		if [[ -z ${4:-} ]]; then
			echo "[    2.0] Kernel panic - not syncing: sysrq triggered crash"
			echo "[    2.0] CPU: 1 UID: 0 PID: 170 Comm: sh Tainted: G OE 6.12.117+deb12-amd64 #1"
		else
			echo "[    2.0] reboot: Restarting system"
		fi
	} >"$d/console.boot-1.log"
	printf '%s\n' "$3" >"$d/markers.2"
	(
		# shellcheck source=tools/tests/crash.sh
		. tools/tests/crash.sh
		markers_match "$d" 2 ${4:+"$4"}
	) >"$tmp/match.out" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/match.out"
	check "markers_match: $1" test "$rc" = "$2"
}

match_case "every marker the console shows, one more on the panicking CPU: kept" 0 \
	$'markers 0 0 20 21\nmarkers 1 0 31 32'
match_case "a CPU that did not panic may hold more than its console shows" 0 \
	$'markers 0 0 27 28\nmarkers 1 0 30 31'
match_case "the image short of the console: refused" 1 \
	$'markers 0 0 19 20\nmarkers 1 0 30 31'
match_case "two more than the console on the panicking CPU: refused" 1 \
	$'markers 0 0 20 21\nmarkers 1 0 32 33'
match_case "markers not from 0: refused" 1 \
	$'markers 0 3 20 18\nmarkers 1 0 30 31'
match_case "after a reboot, every CPU may hold more than its console shows" 0 \
	$'markers 0 0 27 28\nmarkers 1 0 45 46' reboot
match_case "after a reboot, the image short of the console: refused" 1 \
	$'markers 0 0 20 21\nmarkers 1 0 29 30' reboot
match_case "after a reboot, markers not from 0: refused" 1 \
	$'markers 0 1 20 20\nmarkers 1 0 30 31' reboot
match_case "a panic's check on a reboot's console (no panicking CPU): refused" 1 \
	$'markers 0 0 20 21\nmarkers 1 0 31 32' panic-wanted

check_summary crash-bed
