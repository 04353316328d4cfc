#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Crash chains, per kernel: one qemu process boots the guest once per case
# and once more (tools/vm/vmtest's multi-boot mode, RAM kept across the
# reboots), with the persistent region on the command line
# (tools/vm/region-args); in each boot tools/tests/crash_guest.sh checks
# the image the boot before left, then fires its case (a panic).
#
#   tools/tests/crash.sh [-k KVER | -K KDIR]...
#
#   -K KDIR          a kernel built in KDIR (the debug kernel), as vmtest's
#                    -K; BUILD must hold its module under its release
#
#   RT_CRASH_CASES   the cases, in boot order (default "sysrq-c"; see
#                    crash_guest.sh; "panic" where sysrq is not built in)
#   RT_CRASH_OUT     the runs' directory (default $RT_CACHE/vm-runs/crash)
#
# Here, after the run: every boot printed its summary, vmtest passed the run
# (every boot reached, each case's panic on the console where it was fired
# and no other splat in any boot's part of console.log), and for a sysrq-c
# case the markers the next boot read from the image end where boot K's
# console does: for each CPU, markers 0 to at least the last number L the
# console shows, and on the CPU that panicked L or L + 1 (written, its
# number not yet sent when the crash came; see markers_match), and the
# crash entry it read is of the CPU whose panic the console shows, and the
# crashed boot's metadata declares kernel_panic (babeltrace2 reads it), and
# `ringtrace recover`'s directory ends that CPU with kernel_panic.
# Prints "crash-<KVER>: N passed, M failed" per kernel, and the guest's
# seconds.
#
# The boots run under single-threaded TCG (RT_VM_ACCEL overrides it): the
# cases switch tracepoints (tools/tests/powerloss.sh says why that matters).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tools/vm/region-args
cache=${RT_CACHE:-/var/cache/ringtrace}
build=${BUILD:-$cache/build}
read -r -a cases <<<"${RT_CRASH_CASES:-sysrq-c}"
kvers=()
declare -A kdir_of=()
while [[ ${1:-} == -[kK] ]]; do
	if [[ $1 == -K ]]; then
		k=$(<"$2/include/config/kernel.release") || exit 2
		kdir_of[$k]=$2
	else
		k=$2
	fi
	kvers+=("$k")
	shift 2
done
if ((${#kvers[@]} == 0)); then
	for v in /boot/vmlinuz-*; do
		k=${v#/boot/vmlinuz-}
		[[ -d /lib/modules/$k ]] && kvers+=("$k")
	done
fi

# The first console line of each case's panic (vmtest's RT_VM_EXPECT).
expect_of() {
	case $1 in
	sysrq-c) echo 'Kernel panic - not syncing: sysrq triggered crash' ;;
	panic) echo 'Kernel panic - not syncing: ringtrace_selftest: crash_panic' ;;
	*) return 1 ;;
	esac
}

passed=0 failed=0
check() {	# DESCRIPTION COMMAND...
	if "${@:2}"; then
		echo "ok - $1"
		passed=$((passed + 1))
	else
		echo "not ok - $1"
		failed=$((failed + 1))
	fi
}

# The image boot $2 read against boot $2-1's console, in $1: per CPU the
# console's last marker number L, the image's markers FIRST..LAST.  Wants
# FIRST 0 and LAST >= L (every marker the console shows is in the image);
# on the CPU that panicked also LAST <= L + 1 (the one written, its number
# not sent).  Not on the others: 6.12's vprintk_emit() drops what other
# CPUs print once a panic started (a run showed CPU 1 at 399 when its ring
# held 411), so their console is a lower bound only.
# shellcheck disable=SC2317 # called through check
markers_match() {
	local dir=$1 k=$2 cpu first last count l pcpu n=0
	local console=$dir/console.boot-$((k - 1)).log
	[[ -s $dir/markers.$k ]] || { echo "# no markers.$k"; return 1; }
	# panic's dump: "CPU: N PID: ..." (6.1), "CPU: N UID: 0 PID: ..." (6.12)
	pcpu=$(sed -nE 's/.*\] CPU: ([0-9]+) (UID|PID): .*/\1/p' "$console" | head -n1)
	[[ -n $pcpu ]] || { echo "# no panicking CPU on boot $((k - 1))'s console"; return 1; }
	while read -r _ cpu first last count; do
		l=$(sed -nE "s/.*rtcrash: cpu $cpu marker ([0-9]+)$/\\1/p" "$console" | tail -n1)
		echo "# cpu $cpu$([[ $cpu == "$pcpu" ]] && echo " (panicked)"): image markers $first..$last ($count), console's last ${l:-none}"
		[[ -n $l ]] && ((first == 0 && last >= l)) || return 1
		[[ $cpu != "$pcpu" ]] || ((last <= l + 1)) || return 1
		n=$((n + 1))
	done <"$dir/markers.$k"
	((n > 0))
}

# The crash entry boot $2 read (entry-cpu.K, in $1) names the CPU whose
# panic boot $2-1's console shows.
# shellcheck disable=SC2317 # called through check
entry_cpu_match() {
	local dir=$1 k=$2 pcpu ecpu
	pcpu=$(sed -nE 's/.*\] CPU: ([0-9]+) (UID|PID): .*/\1/p' "$dir/console.boot-$((k - 1)).log" | head -n1)
	ecpu=$(cat "$dir/entry-cpu.$k" 2>/dev/null)
	echo "# boot $((k - 1)): the console's panic on CPU ${pcpu:-none}, the crash entry's ${ecpu:-none}"
	[[ -n $pcpu && $pcpu == "$ecpu" ]]
}

# Boot $2's metadata (metadata.K/, in $1) declares the kernel_panic event
# the recovery appends, and babeltrace2 reads it.
# shellcheck disable=SC2317 # called through check
kernel_panic_declared() {
	local md=$1/metadata.$2
	grep -q 'name = "kernel_panic";' "$md/metadata" 2>/dev/null || { echo "# no kernel_panic in $md/metadata"; return 1; }
	babeltrace2 "$md" >/dev/null
}

# The directory boot $2 recovered (recovered.K, in $1), unpacked: babeltrace2
# reads it, and the last event (trailers aside) of the CPU whose panic boot
# $2-1's console shows is kernel_panic, reason panic, message $3; its
# .ringtrace-crash.json lists that entry.
# shellcheck disable=SC2317 # called through check
recovered_panic() {
	local dir=$1 k=$2 msg=$3 pcpu ctf last
	pcpu=$(sed -nE 's/.*\] CPU: ([0-9]+) (UID|PID): .*/\1/p' "$dir/console.boot-$((k - 1)).log" | head -n1)
	ctf=$dir/recovered-ctf.$k
	rm -rf "$ctf"
	tools/ringtrace unpack "$dir/recovered.$k" "$ctf" >/dev/null || return 1
	babeltrace2 "$ctf" >"$ctf.txt" 2>"$ctf.err" || { echo "# babeltrace2 failed: $(tail -n3 "$ctf.err")"; return 1; }
	last=$(grep -E "\{ cpu_id = ${pcpu:-none}[,} ]" "$ctf.txt" | grep -vE ' (stack_def|stack_ref): ' | tail -n1)
	echo "# cpu ${pcpu:-none}'s last event: ${last:0:300}"
	[[ $last == *' kernel_panic: '* && $last == *'reason = ( "panic"'* &&
		$last == *"message = \"$msg\""* ]] || return 1
	python3 -c 'import json, sys
js = json.load(open(sys.argv[1]))
e = [x for x in js["entries"] if x["reason"] == "panic"]
sys.exit(not (len(e) == 1 and e[0]["cpu"] == int(sys.argv[2]) and e[0]["message"] == sys.argv[3]))' \
		"$dir/recovered.$k/.ringtrace-crash.json" "$pcpu" "$msg"
}

main() {
	local status=0 k out dir boots expect i e start b log line p f msg per_boot
	local -a kernel
	for k in "${kvers[@]}"; do
		passed=0 failed=0
		out=${RT_CRASH_OUT:-$cache/vm-runs/crash}
		dir=$out/$k
		boots=$((${#cases[@]} + 1))
		expect=
		for ((i = 0; i < ${#cases[@]}; i++)); do
			e=$(expect_of "${cases[i]}") || { echo "crash.sh: unknown case ${cases[i]}" >&2; exit 2; }
			expect+="$((i + 1)):$e"$'\n'
		done
		# Seconds a boot: a debug build (KASAN, lockdep) under TCG
		# takes 2 to 3 times as long.
		kernel=(-k "$k") per_boot=120
		[[ -z ${kdir_of[$k]:-} ]] || kernel=(-K "${kdir_of[$k]}") per_boot=300
		mkdir -p "$out"
		start=$(date +%s)
		RT_VM_ACCEL=${RT_VM_ACCEL:-tcg,thread=single} RT_VM_BOOTS=$boots RT_VM_EXPECT=$expect \
			RT_VM_KERNEL_ARGS=$(region_args "-k $k") \
			tools/vm/vmtest "${kernel[@]}" -t $((per_boot * boots)) -o "$out" -- \
			env BUILD="$build" RT_CRASH_CASES="${cases[*]}" tools/tests/crash_guest.sh \
			>"$out/$k.log" 2>&1
		echo "# $k: $boots boots in $(($(date +%s) - start)) s ($(grep -o 'guest ran for .*' "$out/$k.log"))"
		# The guest's checks, boot by boot.
		for ((b = 1; b <= boots; b++)); do
			log=$dir/crash-boot-$b.log
			grep -E '^(ok|not ok) ' "$log" 2>/dev/null | sed "s/^\(ok\|not ok\) - /&$k: /"
			line=$(grep -E "^crash-${k//[.+]/.}-boot$b: [0-9]+ passed, [0-9]+ failed$" "$log" 2>/dev/null)
			if [[ -z $line ]]; then
				echo "not ok - $k: boot $b printed no summary"
				failed=$((failed + 1))
				continue
			fi
			echo "# $line"
			read -r _ p _ f _ <<<"$line"
			passed=$((passed + p)) failed=$((failed + f))
		done
		for ((b = 2; b <= boots; b++)); do
			case ${cases[b - 2]} in
			sysrq-c) msg="sysrq triggered crash" ;;
			panic) msg="ringtrace_selftest: crash_panic" ;;
			*) continue ;;
			esac
			check "$k: boot $b's image holds each CPU's markers up to the last boot $((b - 1))'s console shows" \
				markers_match "$dir" "$b"
			check "$k: boot $b's crash entry is of the CPU that panicked in boot $((b - 1))" \
				entry_cpu_match "$dir" "$b"
			check "$k: boot $((b - 1))'s metadata declares kernel_panic, and babeltrace2 reads it" \
				kernel_panic_declared "$dir" $((b - 1))
			check "$k: boot $b's recovered trace ends the panicking CPU with kernel_panic (babeltrace2), and its json has the entry" \
				recovered_panic "$dir" "$b" "$msg"
		done
		sed 's/^/# /' "$dir/result" 2>/dev/null
		check "$k: vmtest's verdict: $(tail -n1 "$dir/result" 2>/dev/null | sed 's/^vmtest: [^ ]*: //')" \
			grep -q ': PASS' "$dir/result"
		echo "crash-$k: $passed passed, $failed failed"
		((failed == 0)) || status=1
	done
	return $status
}

# Unless sourced: tools/tests/crash-bed.sh tests markers_match.
[[ ${BASH_SOURCE[0]} != "$0" ]] || { main; exit; }
