#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Crash chains, per kernel: one qemu process boots the guest once per case
# and once more (tools/vm/vmtest's multi-boot mode, RAM kept across the
# reboots), with the persistent region on the command line
# (tools/vm/region-args); in each boot tools/tests/crash_guest.sh checks
# the image the boot before left, then fires its case (a panic, a soft
# lockup, an oops then an emergency restart, a reboot -f).
#
#   tools/tests/crash.sh [-k KVER | -K KDIR]...
#
#   -K KDIR          a kernel built in KDIR (the debug kernel), as vmtest's
#                    -K; BUILD must hold its module under its release
#
#   RT_CRASH_CASES   the cases, in boot order (see crash_guest.sh);
#                    default "sysrq-c lockup nmi oops reboot", with "panic" for
#                    "sysrq-c" where the kernel's config has no
#                    CONFIG_MAGIC_SYSRQ and no "lockup" without
#                    CONFIG_SOFTLOCKUP_DETECTOR (the debug kernel:
#                    "panic reboot")
#   RT_CRASH_OUT     the runs' directory (default $RT_CACHE/vm-runs/crash)
#   RT_CRASH_RESTART selftest: the oops case's emergency restart through
#                    ringtrace_selftest.ko (crash_guest.sh), as on a
#                    kernel without sysrq, where sysrq is built in
#
# Here, after the run: every boot printed its summary, vmtest passed the run
# (every boot reached, each case's splat on the console where it was fired
# and no other splat in any boot's part of console.log), and for each case
# the markers the next boot read from the image end where boot K's console
# does: for each CPU, markers 0 to at least the last number L the console
# shows, and on the CPU that panicked L or L + 1 (written, its number not
# yet sent when the crash came; see markers_match).  For a panic (sysrq-c,
# panic, lockup): the crash entry it read is of the CPU whose panic the
# console shows, the crashed boot's metadata declares kernel_panic
# (babeltrace2 reads it), and `ringtrace recover`'s directory ends that CPU
# with kernel_panic and the case's message.  For a reboot: the directory
# holds no kernel_panic and its json says the boot ended in a shutdown, not
# a crash.  For an oops (then sysrq b, an emergency restart): the markers
# as a reboot's (the writers ran on until the reset), the directory's
# first kernel_panic is the oops, CPU 1's, between the markers that CPU
# wrote before and after it, of the task that oopsed, with the stack of
# the json's oops entry, which says it was written live; its second is
# the emergency restart's, appended as the last event of the CPU that ran
# sysrq b (or the selftest's crash_restart), with the stack of the
# json's second entry; the json says the
# boot crashed and ended in the emergency restart.  For nmi: as a
# panic's, the panic from an NMI handler.  And each recovered directory holds the
# markers of the boot before it and of no other boot (two crashes in a
# row).
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

# The chain's cases for kernel $1 (RT_CRASH_CASES, or what its config
# allows): a panic (sysrq c, or ringtrace_selftest's where sysrq is not
# built in), a soft lockup where the detector is, and a reboot -f.
default_cases() {
	local config=/boot/config-$1
	[[ -z ${kdir_of[$1]:-} ]] || config=${kdir_of[$1]}/.config
	if [[ -n ${RT_CRASH_CASES:-} ]]; then
		echo "$RT_CRASH_CASES"
		return
	fi
	if grep -q '^CONFIG_MAGIC_SYSRQ=y' "$config"; then
		printf 'sysrq-c '
	else
		printf 'panic '
	fi
	grep -q '^CONFIG_SOFTLOCKUP_DETECTOR=y' "$config" && printf 'lockup '
	echo nmi oops reboot
}

# The first console line of each case's splat (vmtest's RT_VM_EXPECT);
# nothing for a case without one.  The oops case's under KASAN, which
# catches the NULL store first, is its general protection fault's.
expect_of() {
	case $1 in
	oops)
		if [[ $oops_msg == Oops ]]; then
			echo 'BUG: kernel NULL pointer dereference'
		else
			echo 'Oops: general protection fault'
		fi ;;
	sysrq-c) echo 'Kernel panic - not syncing: sysrq triggered crash' ;;
	panic) echo 'Kernel panic - not syncing: ringtrace_selftest: crash_panic' ;;
	lockup) echo 'watchdog: BUG: soft lockup - CPU#1 stuck for ' ;;
	reboot) ;;
	nmi) echo 'Kernel panic - not syncing: ringtrace_selftest: crash_nmi' ;;
	*) return 1 ;;
	esac
}

# The oops case's message (kernel_panic's, the json entry's) on kernel $1:
# "Oops", or under KASAN (its shadow check faults first on the NULL
# store) its general protection fault's.
oops_message() {
	local config=/boot/config-$1
	[[ -z ${kdir_of[$1]:-} ]] || config=${kdir_of[$1]}/.config
	if grep -q '^CONFIG_KASAN=y' "$config"; then
		echo 'general protection fault, probably for non-canonical address 0xdffffc0000000000'
	else
		echo Oops
	fi
}

# The message of the case's panic, kernel_panic's in the recovered trace;
# nothing for a case that does not panic.
panic_message() {
	case $1 in
	sysrq-c) echo "sysrq triggered crash" ;;
	panic) echo "ringtrace_selftest: crash_panic" ;;
	lockup) echo "softlockup: hung tasks" ;;
	nmi) echo "ringtrace_selftest: crash_nmi" ;;
	esac
}

passed=0 failed=0
oops_msg=Oops			# the kernel's, main() sets it (oops_message)
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
# With $3 "reboot" (no panic, the writers ran on while the kernel
# restarted): FIRST 0 and LAST >= L on every CPU.
markers_match() {
	local dir=$1 k=$2 cpu first last count l pcpu='' n=0
	local console=$dir/console.boot-$((k - 1)).log
	[[ -s $dir/markers.$k ]] || { echo "# no markers.$k"; return 1; }
	if [[ ${3:-} != reboot ]]; then
		# panic's dump: "CPU: N PID: ..." (6.1), "CPU: N UID: 0 PID: ..." (6.12)
		pcpu=$(sed -nE 's/.*\] CPU: ([0-9]+) (UID|PID): .*/\1/p' "$console" | head -n1)
		[[ -n $pcpu ]] || { echo "# no panicking CPU on boot $((k - 1))'s console"; return 1; }
	fi
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

# The directory boot $2 recovered (recovered.K, in $1) after a reboot:
# babeltrace2 reads it, it holds no kernel_panic, and its
# .ringtrace-crash.json says the boot ended in a shutdown, not a crash,
# with that one entry.
# shellcheck disable=SC2317 # called through check
recovered_reboot() {
	local dir=$1 k=$2 ctf
	ctf=$dir/recovered-ctf.$k
	rm -rf "$ctf"
	tools/ringtrace unpack "$dir/recovered.$k" "$ctf" >/dev/null || return 1
	babeltrace2 "$ctf" >"$ctf.txt" 2>"$ctf.err" || { echo "# babeltrace2 failed: $(tail -n3 "$ctf.err")"; return 1; }
	echo "# $(grep -c ' ringtrace_marker: ' "$ctf.txt") markers, $(grep -c ' kernel_panic: ' "$ctf.txt") kernel_panic"
	grep -q ' ringtrace_marker: ' "$ctf.txt" && ! grep -q ' kernel_panic: ' "$ctf.txt" || return 1
	python3 -c 'import json, sys
js = json.load(open(sys.argv[1]))
print("# ended %s, crashed %s, entries %s" % (js["ended"], js["crashed"], [e["reason"] for e in js["entries"]]))
sys.exit(not (js["ended"] == "shutdown" and js["crashed"] is False and
              [e["reason"] for e in js["entries"]] == ["shutdown"]))' \
		"$dir/recovered.$k/.ringtrace-crash.json"
}

# The directory boot $2 recovered (recovered.K, in $1; unpacked by
# recovered_panic or recovered_reboot) holds boot $2-1's markers
# (rtcrash-bK-...) and no other boot's: two crashes in a row, the second
# recovery holds the second boot's events.
# shellcheck disable=SC2317 # called through check
recovered_one_boot() {
	local dir=$1 k=$2 txt mine others
	txt=$dir/recovered-ctf.$k.txt
	[[ -s $txt ]] || { echo "# no babeltrace2 text of recovered.$k"; return 1; }
	mine=$(grep -c "data = \"rtcrash-b$((k - 1))-" "$txt")
	others=$(grep -E 'data = "rtcrash-b[0-9]+-' "$txt" | grep -vc "data = \"rtcrash-b$((k - 1))-")
	echo "# boot $((k - 1))'s markers: $mine, other boots': $others"
	((mine > 0 && others == 0))
}

# The directory boot $2 recovered (recovered.K, in $1) after the oops
# case: babeltrace2 reads it; it holds two kernel_panic events.  CPU 1's
# is the oops: reason oops, message "Oops", the task that oopsed
# (oops-tid.K-1), between that CPU's markers rtcrash-oops-before and
# rtcrash-oops-after (written live, at its place in time), its stack_def
# the frames of the json's oops entry, which says it was written live.
# The other is the emergency restart's (sysrq b on the CPU emerg-cpu.K-1
# names): that CPU's last event (trailers aside), reason emerg_restart,
# message "emergency restart", its stack_def the frames of the json's
# second entry, not written live.  The json: entries [oops,
# emerg_restart], crashed, ended emerg_restart, kernel_panic 1 appended
# on the sysrq CPU alone.
# shellcheck disable=SC2317 # called through check
recovered_oops() {
	local dir=$1 k=$2 ctf
	ctf=$dir/recovered-ctf.$k
	rm -rf "$ctf"
	tools/ringtrace unpack "$dir/recovered.$k" "$ctf" >/dev/null || return 1
	babeltrace2 "$ctf" >"$ctf.txt" 2>"$ctf.err" || { echo "# babeltrace2 failed: $(tail -n3 "$ctf.err")"; return 1; }
	python3 - "$ctf.txt" "$dir/recovered.$k/.ringtrace-crash.json" "$(cat "$dir/oops-tid.$((k - 1))" 2>/dev/null)" \
		"$(cat "$dir/emerg-cpu.$((k - 1))" 2>/dev/null)" "$oops_msg" <<'PY'
import json, re, sys
txt, js_path, tid, ecpu, msg = sys.argv[1:6]
lines = open(txt).read().splitlines()
ok = True
def want(what, cond):
    global ok
    print("# %s%s" % ("" if cond else "NOT: ", what))
    ok = ok and bool(cond)
def name(l):
    m = re.search(r" (\w+): \{", l)
    return m.group(1) if m else ""
def frames_after(evs, at):
    defs = [l for l in evs[at + 1:at + 3] if " stack_def: " in l]
    return [int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]+)", defs[0].split("ips =", 1)[1])] if defs else []
panics = [l for l in lines if " kernel_panic: " in l]
want("two kernel_panic in the trace, the oops and the emergency restart (%d)" % len(panics),
     len(panics) == 2)
cpu1 = [l for l in lines if re.search(r"\{ cpu_id = 1[,} ]", l)]
names = [name(l) for l in cpu1]
at = names.index("kernel_panic") if "kernel_panic" in names else -1
want("kernel_panic on cpu 1", at >= 0)
if at < 0:
    sys.exit(1)
ev = cpu1[at]
print("# " + ev[:400])
want("reason oops", 'reason = ( "oops"' in ev)
want('message "%s"' % msg, ('message = "%s"' % msg) in ev)
want("tid %s (the task that oopsed)" % tid, tid and ("tid = %s," % tid) in ev)
before = [i for i, l in enumerate(cpu1) if 'data = "rtcrash-oops-before"' in l]
after = [i for i, l in enumerate(cpu1) if 'data = "rtcrash-oops-after"' in l]
want("cpu 1: rtcrash-oops-before %s < kernel_panic %d < rtcrash-oops-after %s" % (before, at, after),
     len(before) == 1 and len(after) == 1 and before[0] < at < after[0])
later = [n for n in names[at + 1:] if n not in ("stack_def", "stack_ref")]
want("cpu 1 wrote on after it (%d events)" % len(later), len(later) > 1)
frames = frames_after(cpu1, at)
js = json.load(open(js_path))
oops = [e for e in js["entries"] if e["reason"] == "oops"]
want("the json: one oops entry, then the emergency restart (%s)" % [e["reason"] for e in js["entries"]],
     [e["reason"] for e in js["entries"]] == ["oops", "emerg_restart"])
want("the json: crashed, ended in the emergency restart (%s, %s)" % (js["crashed"], js["ended"]),
     js["crashed"] is True and js["ended"] == "emerg_restart")
want("the json: kernel_panic appended on cpu %s alone (%s)" % (ecpu, {c["cpu"]: c["kernel_panic"] for c in js["cpus"]}),
     ecpu and {c["cpu"]: c["kernel_panic"] for c in js["cpus"] if c["kernel_panic"]} == {int(ecpu): 1})
if oops:
    e = oops[0]
    want("the entry: written live, cpu 1, tid %s, message %s (%s)" % (tid, msg, {x: e[x] for x in ("written_live", "cpu", "tid", "message")}),
         e["written_live"] is True and e["cpu"] == 1 and str(e["tid"]) == tid and e["message"] == msg)
    want("the event's stack (%d frames) is the entry's (%d)" % (len(frames), len(e["stack"])),
         frames and frames == [int(x, 16) for x in e["stack"]])
# The emergency restart's, appended: the sysrq CPU's last event.
evs = [l for l in lines if ecpu and re.search(r"\{ cpu_id = %s[,} ]" % ecpu, l)]
real = [i for i, l in enumerate(evs) if name(l) not in ("stack_def", "stack_ref")]
last = evs[real[-1]] if real else ""
print("# cpu %s's last event: %s" % (ecpu, last[:400]))
want("cpu %s (the restart's) ends with kernel_panic, reason emerg_restart, \"emergency restart\"" % ecpu,
     name(last) == "kernel_panic" and 'reason = ( "emerg_restart"' in last and
     'message = "emergency restart"' in last and ("cpu = %s," % ecpu) in last)
emerg = [e for e in js["entries"] if e["reason"] == "emerg_restart"]
want("the json: one emerg_restart entry (%d)" % len(emerg), len(emerg) == 1)
if emerg and real:
    e = emerg[0]
    frames = frames_after(evs, real[-1])
    want("the entry: not written live, cpu %s (%s)" % (ecpu, {x: e[x] for x in ("written_live", "cpu", "message")}),
         e["written_live"] is False and str(e["cpu"]) == ecpu and e["message"] == "emergency restart")
    want("the appended event's stack (%d frames) is the entry's (%d)" % (len(frames), len(e["stack"])),
         frames and frames == [int(x, 16) for x in e["stack"]])
sys.exit(0 if ok else 1)
PY
}

main() {
	local status=0 k out dir boots expect i e start b log line p f msg per_boot
	local -a kernel cases
	for k in "${kvers[@]}"; do
		passed=0 failed=0
		out=${RT_CRASH_OUT:-$cache/vm-runs/crash}
		dir=$out/$k
		read -r -a cases <<<"$(default_cases "$k")"
		oops_msg=$(oops_message "$k")
		boots=$((${#cases[@]} + 1))
		expect=
		for ((i = 0; i < ${#cases[@]}; i++)); do
			e=$(expect_of "${cases[i]}") || { echo "crash.sh: unknown case ${cases[i]}" >&2; exit 2; }
			[[ -z $e ]] || expect+="$((i + 1)):$e"$'\n'
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
			env BUILD="$build" RT_CRASH_CASES="${cases[*]}" RT_CRASH_OOPS_MSG="$oops_msg" \
			${RT_CRASH_RESTART:+RT_CRASH_RESTART="$RT_CRASH_RESTART"} tools/tests/crash_guest.sh \
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
			if [[ ${cases[b - 2]} == oops ]]; then
				check "$k: boot $b's image holds each CPU's markers up to the last boot $((b - 1))'s console shows (oops, then sysrq b)" \
					markers_match "$dir" "$b" reboot
				check "$k: boot $b's recovered trace has boot $((b - 1))'s oops as CPU 1's kernel_panic between its markers, then the emergency restart's last on the CPU that restarted, as the json's entries say" \
					recovered_oops "$dir" "$b"
			elif [[ ${cases[b - 2]} == reboot ]]; then
				check "$k: boot $b's image holds each CPU's markers up to the last boot $((b - 1))'s console shows (reboot -f)" \
					markers_match "$dir" "$b" reboot
				check "$k: boot $b's recovered trace has no kernel_panic, and its json says boot $((b - 1)) ended in a shutdown, not a crash" \
					recovered_reboot "$dir" "$b"
			else
				msg=$(panic_message "${cases[b - 2]}")
				check "$k: boot $b's image holds each CPU's markers up to the last boot $((b - 1))'s console shows" \
					markers_match "$dir" "$b"
				check "$k: boot $b's crash entry is of the CPU that panicked in boot $((b - 1))" \
					entry_cpu_match "$dir" "$b"
				check "$k: boot $((b - 1))'s metadata declares kernel_panic, and babeltrace2 reads it" \
					kernel_panic_declared "$dir" $((b - 1))
				check "$k: boot $b's recovered trace ends the panicking CPU with kernel_panic \"$msg\" (babeltrace2), and its json has the entry" \
					recovered_panic "$dir" "$b" "$msg"
			fi
			check "$k: boot $b's recovered trace holds boot $((b - 1))'s markers and no other boot's" \
				recovered_one_boot "$dir" "$b"
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
