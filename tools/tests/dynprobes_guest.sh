#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Dynamic probes (module/dynprobes.c and uprobes.c, record -e kprobe:,
# kretprobe:, uprobe:), in the test guest (tools/guest-tests), as root:
#
#   abi        probe_events: each malformed command, an unknown symbol, a
#              blacklisted function refused with its errno and nothing
#              left (no probe, no kprobe, no event in the metadata); a
#              probe lives as long as the open file that made it; only
#              that file removes it
#   record     kprobe on the open path with a thread that opens N files:
#              exactly N events on that thread (report), and the kretprobe
#              returns the N fds it got; babeltrace2 reads the trace
#   --filter   arg0 of the kprobe (AT_FDCWD) and ret of the kretprobe
#              (the odd fds): exactly those events recorded
#   exit paths no probe left after a normal end, Ctrl-C, SIGKILL of record
#   errors     unknown function, blacklisted function, malformed spec: one
#              line each, nothing registered, control files unchanged
#   close      a file that made 32 kprobes and kretprobes closed: the
#              closing task waits for synchronize_rcu() a few times, not
#              once per probe (counted by a kprobe on it, made through
#              another file)
#
#   uprobe abi    probe_events u:PATH:OFFSET[@LABEL]: each malformed
#              command, a missing file, a directory, a device, an offset
#              beyond the file refused with its errno and nothing left; a
#              uprobe lives as long as its file, its event name and spec
#   uprobe record  uprobe:PATH:rtu_work on tools/tests/uprobe-workload,
#              which calls it N times: exactly N events of its pid, arg0
#              the values it passed in order, the offset the CLI found is
#              readelf's, babeltrace2 reads them; no probe left after the
#              end and after SIGKILL; --filter on arg0 keeps the even
#              calls only; events/<uprobe>/filter comes and goes with the
#              probe, refuses a bad field, an fd held open fails after
#   uprobe errors  missing binary, non-ELF file, unknown symbol, offset
#              beyond the symbol, malformed spec: one line each, nothing
#              registered (user space only: not in the kernel scope)
#   uprobe ids  60 uprobes made through one file, closed, 18 times (1080
#              probes, more than ringtrace.ko has ids): every one taken,
#              each with its first id again, one declaration each
#   uprobe trigger  events/<uprobe>/trigger comes and goes with the probe;
#              record --trigger on the uprobe's arg0 saves one snapshot
#              that holds the hit's event and the trigger's marker
#
# On a kernel without kprobes (the debug kernel) the kprobe commands must
# fail with EOPNOTSUPP, and record with one line; the kprobe tests are
# skipped.  The uprobe tests run wherever CONFIG_UPROBES is (all four
# kernels); without it u: must fail with EOPNOTSUPP.
#
# RT_DYNPROBES_SCOPE=kernel (tools/run-tests, on the debug kernel) leaves
# out what happens in user space only, the same on every kernel: the CLI's
# refusals before it asks the module (uprobe errors, --filter on a field or
# probe it does not know) and babeltrace2's second reading of the uprobe
# trace; what drives the module stays.
# Ends with "dynprobes: N passed, M failed".

set -u

cd "$(dirname "$0")/../.." || exit 1
readonly REPO=$PWD
readonly KVER=${RT_KVER:-$(uname -r)}
export BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
readonly PE=$RT/probe_events
readonly KLIST=/sys/kernel/debug/kprobes/list
readonly CLI=$REPO/tools/ringtrace
readonly WL=$REPO/tools/tests/probe-workload
readonly W=$(mktemp -d /tmp/rt-dynprobes.XXXXXX)
readonly SCOPE=${RT_DYNPROBES_SCOPE:-all}
# files the workload's thread opens
readonly N=25
# The uprobe workload, and the calls of rtu_work it makes.
readonly UWL=$REPO/tools/tests/uprobe-workload
readonly UN=17
readonly UEV=uprobe_uprobe_workload_rtu_work
export RINGTRACED=$REPO/daemon/ringtraced

. tools/tests/check.sh
. tools/tests/job.sh
# user_logic: whether the tests of user space's own logic run
# (RT_DYNPROBES_SCOPE, in SCOPE).
. tools/tests/scope.sh

note() { echo "# $*"; }

# The kernel function every open(2) goes through.
FUNC=do_sys_openat2
# A function on the kprobe blacklist of every kernel (NOKPROBE_SYMBOL).
BLACK=notify_die

# Every control file record may change, and the probes.
state() {
	ctl_lines tracing_on mode subbuf_size num_subbufs set_event \
		set_event_pid event_fork probe_events
	local k=
	[[ -e $KLIST ]] && k=$(<"$KLIST")
	printf 'kprobes: %s\n' "${k//$'\n'/ }"
}

# No probe of ours: probe_events empty and no kprobe on $FUNC (bash reads
# the files, and without kprobes nothing runs grep: an exec costs a second
# under the debug kernel).
no_probes() {
	[[ -z $(<"$PE") ]] || { sed 's/^/# probe_events: /' "$PE"; return 1; }
	[[ ! -e $KLIST ]] || ! grep -qwE "$FUNC|$BLACK" "$KLIST" ||
		{ sed 's/^/# kprobes: /' "$KLIST"; return 1; }
}

# pe_write CMD: one write(2) of CMD to a fresh open of probe_events (bash's
# printf may split it at a newline; tools/tests/write_each.py); the
# error's name and strerror in $W/pe.err.
pe_write() {
	python3 -S "$REPO/tools/tests/write_each.py" "$PE" "$1" >"$W/pe.err" 2>&1
}

# refused CMD ERRNO-TEXT: the write fails with that error, nothing left.
refused() {
	pe_write "$1" && { note "'$1' was taken"; return 1; }
	grep -q "$2" "$W/pe.err" || { sed 's/^/# /' "$W/pe.err"; return 1; }
	no_probes
}

# pe_refuse_all: stdin "CMD|ERRNO-TEXT" lines; each CMD, written in one
# write(2) through its own open (one write_each.py for them all), must
# fail with that error.
pe_refuse_all() {
	local cmd want name text got i=0
	local -a cmds=() wants=()
	while IFS='|' read -r cmd want; do
		cmds+=("$cmd")
		wants+=("$want")
	done
	while IFS='|' read -r name text _; do
		want=${wants[i]} cmd=${cmds[i]}
		got=${text:-taken}
		[[ $got == "$want"* ]] && got=$want
		check "probe_events: '$cmd' is refused: $want${got:+ (got $got)}" \
			test "$got" = "$want"
		i=$((i + 1))
	done < <(python3 -S "$REPO/tools/tests/write_each.py" "$PE" "${cmds[@]}" 2>&1)
	((i == ${#cmds[@]})) ||
		check "probe_events: every command written ($i of ${#cmds[@]})" false
}

metadata_has() { grep -q "name = \"$1\";" "$RT/metadata"; }

# ---- the control file ----------------------------------------------------------------

# The one-line commands through one python (an exec costs seconds under
# the debug kernel's KASAN), each through its own open, closed before the
# next: a probe or kprobe one left behind is still there at the end.
test_abi_malformed() {
	local cmd
	# Not a pipe: pe_refuse_all counts its checks in this shell.
	pe_refuse_all < <(
		for cmd in "x:$FUNC" "p:" "p$FUNC" "p:$FUNC extra" "p:a/b" \
			   "p:$FUNC+" "p:$FUNC+zz" "r:$FUNC+4" "-:"; do
			echo "$cmd|Invalid argument"
		done
		echo "-:kprobe_nothing_here|No such file")
	check "probe_events: ... nothing left by the malformed commands" no_probes
	check "probe_events: 'p:$FUNC\\np:vfs_read' is EINVAL, nothing left" \
		refused "p:$FUNC
p:vfs_read" "Invalid argument"
}

test_abi_no_kprobes() {
	check "no kprobes: p: is EOPNOTSUPP" refused "p:$FUNC" "not supported"
	check "no kprobes: r: is EOPNOTSUPP" refused "r:$FUNC" "not supported"
	check "no kprobes: no event declared" bash -c "! grep -q 'name = \"kprobe_' $RT/metadata"
}

test_abi() {
	local id
	check "probe_events: an unknown symbol is ENOENT, nothing left" \
		refused "p:rt_no_such_function" "No such file"
	check "probe_events: ... and no event declared for it" \
		bash -c "! grep -q rt_no_such_function $RT/metadata"
	setup "$BLACK is on the kprobe blacklist" \
		grep -qw "$BLACK" /sys/kernel/debug/kprobes/blacklist
	check "probe_events: a blacklisted function ($BLACK) is EINVAL, nothing left" \
		refused "p:$BLACK" "Invalid argument"
	check "probe_events: ... and no event declared for it" \
		bash -c "! grep -q 'kprobe_$BLACK' $RT/metadata"
	check "probe_events: an offset inside an instruction is refused" \
		refused "p:$FUNC+1" "Invalid or incomplete multibyte\|Illegal byte"

	# A probe lives while its file is open; only that file removes it.
	exec 7<>"$PE"
	printf 'p:%s' "$FUNC" >&7
	check "probe_events: p:$FUNC taken" grep -qE "^[0-9]+ kprobe_$FUNC p:$FUNC$" "$PE"
	check "probe_events: ... a kprobe on $FUNC" grep -qw "$FUNC" "$KLIST"
	check "probe_events: ... its event in the metadata" metadata_has "kprobe_$FUNC"
	id=$(awk '{ print $1; exit }' "$PE")
	check "probe_events: the same probe twice is EEXIST" \
		bash -c "! printf 'p:%s' $FUNC >&7 2>$W/pe.err && grep -q 'File exists' $W/pe.err"
	check "probe_events: another file cannot remove it (EPERM)" \
		bash -c "! printf -- '-:kprobe_$FUNC' >$PE 2>$W/pe.err && grep -q 'not permitted' $W/pe.err"
	printf 'r:%s\n' "$FUNC" >&7
	check "probe_events: r:$FUNC taken (newline allowed)" \
		grep -qE "^[0-9]+ kretprobe_$FUNC r:$FUNC$" "$PE"
	printf -- '-:kprobe_%s' "$FUNC" >&7
	check "probe_events: -:kprobe_$FUNC removes the kprobe only" \
		test "$(awk '{ print $2 }' "$PE")" = "kretprobe_$FUNC"
	printf 'p:%s' "$FUNC" >&7
	check "probe_events: the same probe again takes its id back" \
		test "$(awk '$2 == "kprobe_'"$FUNC"'" { print $1 }' "$PE")" -eq "$id"
	exec 7>&-
	check "probe_events: closing the file removed both probes" no_probes

	# A file that is only read makes nothing and removes nothing.
	exec 7<>"$PE"
	printf 'p:%s' "$FUNC" >&7
	cat "$PE" >/dev/null
	check "probe_events: a reader's close leaves the writer's probe" \
		grep -q "kprobe_$FUNC" "$PE"
	exec 7>&-
	check "probe_events: ... gone with the writer's" no_probes
}

# ---- record ---------------------------------------------------------------------------

# events FILE EVENT TID: report's EVENT lines of thread TID.
events_of() { grep -E -- "-$3 $2: " "$1"; }

test_record() {
	local out=$W/rec before tid fds n rets babel bn rn
	before=$(state)
	rm -rf "$W/files" && mkdir "$W/files"
	"$CLI" record -e "kprobe:$FUNC,kretprobe:$FUNC" -o "$out" -- \
		"$WL" $N "$W/files" "$W/wl.out" >"$W/rec.out" 2>"$W/rec.err"
	check "record -e kprobe:$FUNC,kretprobe:$FUNC exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/rec.err"
	check "record: control files as before, no probe left" same_state "$before"
	check "record: no probe left (probe_events, kprobes/list)" no_probes
	read -r tid fds <"$W/wl.out"
	"$CLI" report "$out" >"$W/rec.report" 2>"$W/rec.report.err"
	check "report reads the trace" test $? -eq 0
	n=$(events_of "$W/rec.report" "kprobe_$FUNC" "$tid" | wc -l)
	check "kprobe_$FUNC: exactly $N events on rtp-open-$tid (got $n)" test "$n" -eq $N
	n=$(events_of "$W/rec.report" "kprobe_$FUNC" "$tid" | grep -c ' rtp-open-')
	check "kprobe_$FUNC: ... named rtp-open ($n)" test "$n" -eq $N
	n=$(events_of "$W/rec.report" "kprobe_$FUNC" "$tid" |
		grep -cE 'arg0=[0-9]+, arg1=[0-9]+, arg2=[0-9]+, arg3=[0-9]+, arg4=[0-9]+, arg5=[0-9]+$')
	check "kprobe_$FUNC: arg0..arg5 in every event ($n)" test "$n" -eq $N
	rets=$(events_of "$W/rec.report" "kretprobe_$FUNC" "$tid" |
		sed -nE 's/.* ret=([0-9]+)$/\1/p' | paste -sd' ')
	check "kretprobe_$FUNC: returns the fds the thread got ($fds)" test "$rets" = "$fds"
	[[ $rets == "$fds" ]] || note "kretprobe rets: $rets"
	babel=$("$CLI" unpack "$out" "$out.ctf" >/dev/null && babeltrace2 "$out.ctf" 2>"$W/babel.err")
	check "babeltrace2 reads the trace" test $? -eq 0
	bn=$(grep -c "kprobe_$FUNC:" <<<"$babel")
	rn=$(grep -c " kprobe_$FUNC: " "$W/rec.report")
	check "babeltrace2 and report see the same $rn kprobe events ($bn)" test "$bn" -eq "$rn" -a "$rn" -ge $N
	bn=$(grep -c "kretprobe_$FUNC:" <<<"$babel")
	rn=$(grep -c " kretprobe_$FUNC: " "$W/rec.report")
	check "babeltrace2 and report see the same $rn kretprobe events ($bn)" test "$bn" -eq "$rn" -a "$rn" -ge $N
}

# --filter on a kprobe's fetched argument and a kretprobe's ret: every
# open of the thread passes AT_FDCWD (an int: its low 32 bits), and the
# odd fds it got are the kretprobe's.
test_record_field_filter() {
	local out=$W/recff tid fds n odd rets
	rm -rf "$W/files" && mkdir "$W/files"
	"$CLI" record -e "kprobe:$FUNC,kretprobe:$FUNC" -o "$out" \
		--filter "kprobe_$FUNC: comm == rtp-open && arg0 & 0xffffffff == 0xffffff9c" \
		--filter "kretprobe_$FUNC: comm == rtp-open && ret & 1" -- \
		"$WL" $N "$W/files" "$W/wlff.out" >/dev/null 2>"$W/recff.err"
	check "record --filter on kprobe arg0 and kretprobe ret exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/recff.err"
	check "record --filter: no probe left" no_probes
	read -r tid fds <"$W/wlff.out"
	"$CLI" report "$out" >"$W/recff.report" 2>/dev/null
	n=$(grep -c " kprobe_$FUNC: " "$W/recff.report")
	check "--filter 'arg0 == AT_FDCWD': the thread's $N opens, nothing else ($n)" \
		test "$(events_of "$W/recff.report" "kprobe_$FUNC" "$tid" | wc -l)" -eq $N -a "$n" -eq $N
	odd=$(tr ' ' '\n' <<<"$fds" | awk '$1 % 2' | paste -sd' ')
	rets=$(grep " kretprobe_$FUNC: " "$W/recff.report" |
		sed -nE 's/.* ret=([0-9]+)$/\1/p' | paste -sd' ')
	check "--filter 'ret & 1': exactly the odd fds ($odd)" test "$rets" = "$odd"
	[[ $rets == "$odd" ]] || note "kretprobe rets: $rets"
}

# A pid filter (-F) applies to probe events like the others.
test_record_filter() {
	local out=$W/recf tid others
	rm -rf "$W/files" && mkdir "$W/files"
	"$CLI" record -F -e "kprobe:$FUNC" -o "$out" -- \
		"$WL" $N "$W/files" "$W/wlf.out" >/dev/null 2>"$W/recf.err"
	check "record -F -e kprobe:$FUNC exits 0" test $? -eq 0
	read -r tid _ <"$W/wlf.out"
	"$CLI" report "$out" >"$W/recf.report" 2>/dev/null
	n=$(events_of "$W/recf.report" "kprobe_$FUNC" "$tid" | wc -l)
	check "-F: exactly $N kprobe events on the thread (got $n)" test "$n" -eq $N
	others=$(grep " kprobe_$FUNC: " "$W/recf.report" | grep -vc "probe-workload-\|rtp-open-")
	check "-F: no kprobe event of another process ($others)" test "$others" -eq 0
}

# recording OUT N EVENTS: starts a system-wide record of EVENTS (-e) as a
# terminal's job; sets rec once tracing is on and N probes exist.
recording() {
	local i pe
	as_job "$CLI" record -e "$3" -o "$1" >/dev/null 2>"$1.err" &
	rec=$!
	for ((i = 0; i < 300; i++)); do
		mapfile -t pe <"$PE"
		[[ $(<"$RT/tracing_on") == 1 && ${#pe[@]} == "$2" ]] && return 0
		sleep 0.1
	done
	note "record did not start: $(<"$1.err")"
	return 1
}

# sigkill_record: SIGKILL of the record in $rec; its ringtraced, left
# without its parent, in killed_daemon.
killed_daemon=
sigkill_record() {
	killed_daemon=$(pgrep -P "$rec" -x ringtraced)
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
}

# after_sigkill: the SIGKILLed record's ringtraced ends by itself (within
# 60 s, else it is killed too); tracing and every event off.
after_sigkill() {
	local i d=$killed_daemon
	for ((i = 0; i < 600; i++)); do
		[[ -n $d && -d /proc/$d ]] || break
		sleep 0.1
	done
	[[ -n $d && -d /proc/$d ]] && kill -KILL "$d"
	echo 0 >"$RT/tracing_on"
	echo 0 >"$RT/events/enable"
}

# probing OUT: the record with the two kernel probes.
probing() { recording "$1" 2 "kprobe:$FUNC,kretprobe:$FUNC"; }

test_ctrl_c() {
	local before rc
	before=$(state)
	setup "Ctrl-C: record with two probes started" probing "$W/int"
	check "Ctrl-C: ... a kprobe on $FUNC while it records" grep -qw "$FUNC" "$KLIST"
	kill -INT -- -"$rec"
	wait "$rec"
	rc=$?
	# Its trace finished, record ends by the signal (cli.rst).
	check "Ctrl-C: record ends by SIGINT (130, got $rc)" test $rc -eq 130
	check "Ctrl-C: no probe left, control files as before" same_state "$before"
	check "Ctrl-C: the trace is readable" "$CLI" check "$W/int"
}

test_sigterm() {
	local before rc
	before=$(state)
	setup "SIGTERM: record with two probes started" probing "$W/term"
	kill -TERM "$rec"
	wait "$rec"
	rc=$?
	check "SIGTERM: record ends by SIGTERM (143, got $rc)" test $rc -eq 143
	check "SIGTERM: no probe left, control files as before" same_state "$before"
}

# SIGKILL: record cleans nothing up; the kernel closes probe_events, and
# the module removes the probes with it.
test_sigkill() {
	local before
	before=$(state)
	setup "SIGKILL: record with two probes started" probing "$W/kill"
	sigkill_record
	check "SIGKILL: the probes went with record" no_probes
	after_sigkill
}

test_errors() {
	local before spec rc
	before=$(state)
	for spec in "kprobe:rt_no_such_function" "kretprobe:rt_no_such_function" \
		    "kprobe:$BLACK" "kprobe:" "kretprobe:$FUNC+4" "kprobe:$FUNC+x"; do
		"$CLI" record -e "sched_switch,$spec" -o "$W/bad" -- true >/dev/null 2>"$W/bad.err"
		rc=$?
		check "record -e $spec: refused ($rc)" test $rc -ne 0
		check "record -e $spec: one line" one_line "$W/bad.err"
		check "record -e $spec: nothing registered, control files as before" \
			same_state "$before"
		check "record -e $spec: no trace directory" test ! -e "$W/bad"
	done
	"$CLI" record -e "kprobe:rt_no_such_function" -o "$W/bad" -- true 2>"$W/bad.err"
	check "record: an unknown function is named as such" \
		grep -q "no function rt_no_such_function in this kernel" "$W/bad.err"
	"$CLI" record -e "kprobe:$BLACK" -o "$W/bad" -- true 2>"$W/bad.err"
	check "record: a blacklisted function is named as such" \
		grep -q "refuses to probe $BLACK" "$W/bad.err"
}

test_errors_no_kprobes() {
	local before rc
	before=$(state)
	"$CLI" record -e "kprobe:$FUNC" -o "$W/bad" -- true >/dev/null 2>"$W/bad.err"
	rc=$?
	check "no kprobes: record -e kprobe: refused ($rc)" test $rc -ne 0
	check "no kprobes: one line naming CONFIG_KPROBES" \
		bash -c "one_line() { (( \$(wc -l <\$1) == 1 )); }; one_line $W/bad.err && grep -q CONFIG_KPROBES $W/bad.err"
	check "no kprobes: control files as before" same_state "$before"
}

# The events written so far, summed over the CPUs (the stats' written).
written_sum() { awk '{ s += substr($2, 9) } END { print s + 0 }' "$RT/stats"; }

# Closing a file that made many probes detaches them together: one wait
# for their handlers per kind (kprobes, kretprobes), not one per probe.
# A kprobe on synchronize_rcu, made through another file and kept to this
# shell's pid, counts the waits of the close.
test_close_batches() {
	local syms sym n=0 before after waits
	syms=$(grep -oE ' T __x64_sys_[a-z0-9_]+$' /proc/kallsyms | awk '{ print $2 }' |
		sort -u | head -n 16)
	exec 6<>"$PE"
	printf 'p:synchronize_rcu' >&6
	check "close: a kprobe on synchronize_rcu (another file's)" \
		grep -q " kprobe_synchronize_rcu " "$PE"
	exec 7<>"$PE"
	for sym in $syms; do
		printf 'p:%s' "$sym" >&7 && n=$((n + 1))
		printf 'r:%s' "$sym" >&7 && n=$((n + 1))
	done
	check "close: 32 probes made through one file ($n)" test "$n" -eq 32
	echo $$ >"$RT/set_event_pid"
	echo 1 >"$RT/tracing_on"
	before=$(written_sum)
	exec 7>&-
	after=$(written_sum)
	echo 0 >"$RT/tracing_on"
	echo >"$RT/set_event_pid"
	waits=$((after - before))
	note "closing the file of $n probes waited for synchronize_rcu() $waits times"
	check "close: the 32 probes went with their file" \
		test "$(grep -c " k\(ret\)\?probe___x64_sys_" "$PE")" -eq 0
	check "close: at most 4 grace periods for 32 probes, not one each ($waits)" \
		test "$waits" -ge 1 -a "$waits" -le 4
	exec 6>&-
	check "close: ... and the counting probe with its own file" no_probes
}

test_list() {
	"$CLI" list >"$W/list.out" 2>&1
	check "list shows the probe syntax" grep -q "kprobe:FUNC\[+OFF\]" "$W/list.out"
	check "list shows the uprobe syntax" grep -q "uprobe:PATH:SYMBOL\[+OFF\]" "$W/list.out"
	check "list hides the events of removed probes" \
		bash -c "! grep -qE '^k(ret)?probe_' $W/list.out"
}

# ---- uprobes ---------------------------------------------------------------------------

# elf_offset FILE SYMBOL: the symbol's file offset, from readelf (not from
# the CLI under test): its value through the PT_LOAD that holds it.
elf_offset() {
	local v type off va pa fs rest
	v=$(readelf -Ws "$1" | awk -v s="$2" '$8 == s && $7 != "UND" { print $2; exit }')
	[[ -n $v ]] || return 1
	v=$((16#$v))
	while read -r type off va pa fs rest; do
		[[ $type == LOAD ]] || continue
		if ((v >= va && v < va + fs)); then
			printf '0x%x\n' $((v - va + off))
			return 0
		fi
	done < <(readelf -lW "$1")
	return 1
}

test_uprobe_abi() {
	local off size cmd id
	off=$(elf_offset "$UWL" rtu_work)
	setup "readelf finds rtu_work in uprobe-workload ($off)" test -n "$off"
	size=$(stat -c %s "$UWL")
	# One python for every refused command (a start of it costs a second
	# under TCG): each write through a fresh open, its errno checked.
	pe_refuse_all <<-EOF
		u:|Invalid argument
		u:$UWL|Invalid argument
		u:$UWL:|Invalid argument
		u:$UWL:zz|Invalid argument
		u:$UWL:$off extra|Invalid argument
		u:$UWL:$off@x:y|Invalid argument
		u:$UWL:$off@|Invalid argument
		u:$UWL:$off@a-b|Invalid argument
		u:tools/tests/uprobe-workload:$off|Invalid argument
		u:/:$off|Invalid argument
		u:$UWL:-1|Invalid argument
		u:$W/no-such-binary:$off|No such file
		u:$W:0x0|Invalid argument
		u:/dev/null:0x0|Invalid argument
		u:$UWL:$size|Invalid argument
	EOF
	check "probe_events: ... nothing left" no_probes
	check "probe_events: ... and no uprobe event declared" \
		bash -c "! grep -q 'name = \"uprobe_' $RT/metadata"

	exec 7<>"$PE"
	printf 'u:%s:%s@rtu_work' "$UWL" "$off" >&7
	check "probe_events: u:...@rtu_work taken as $UEV" \
		grep -qE "^[0-9]+ $UEV u:$UWL:$off@rtu_work$" "$PE"
	check "probe_events: ... its event in the metadata" metadata_has "$UEV"
	id=$(awk '{ print $1; exit }' "$PE")
	check "probe_events: the same uprobe twice is EEXIST" \
		bash -c "! printf 'u:%s:%s@rtu_work' $UWL $off >&7 2>$W/pe.err && grep -q 'File exists' $W/pe.err"
	check "probe_events: another file cannot remove it (EPERM)" \
		bash -c "! printf -- '-:$UEV' >$PE 2>$W/pe.err && grep -q 'not permitted' $W/pe.err"
	# Its filter file, there while the probe is (filter.c's grammar).
	check "events/$UEV/filter: made with the probe, reads none" \
		test "$(head -1 "$RT/events/$UEV/filter")" = none
	check "events/$UEV/filter: 'arg6 == 1' refused, naming arg6" bash -c \
		"! echo 'arg6 == 1' >$RT/events/$UEV/filter 2>/dev/null &&
		 grep -qF \"# error: unknown field 'arg6'\" $RT/events/$UEV/filter &&
		 test \"\$(head -1 $RT/events/$UEV/filter)\" = none"
	check "events/$UEV/filter: 'arg0 & 1 == 0 && comm == x*' taken" bash -c \
		"echo 'arg0 & 1 == 0 && comm == x*' >$RT/events/$UEV/filter &&
		 test \"\$(cat $RT/events/$UEV/filter)\" = 'arg0 & 1 == 0 && comm == x*'"
	# Held open across the probe's removal: EIO after, no crash.
	exec 8<>"$RT/events/$UEV/filter"
	printf 'u:%s:%d\n' "$UWL" "$off" >&7
	check "probe_events: without a label the event is named by the offset" \
		grep -qE "^[0-9]+ uprobe_uprobe_workload_$off u:$UWL:$off$" "$PE"
	printf -- '-:%s' "$UEV" >&7
	check "probe_events: -:$UEV removes that uprobe only" \
		test "$(awk '{ print $2 }' "$PE")" = "uprobe_uprobe_workload_$off"
	check "events/$UEV/: gone with the probe" test ! -e "$RT/events/$UEV"
	check "events/$UEV/filter: a write through an fd held open fails after" \
		bash -c "! echo none >&8 2>/dev/null"
	exec 8>&-
	printf 'u:%s:%s@rtu_work' "$UWL" "$off" >&7
	check "probe_events: the same uprobe again takes its id back" \
		test "$(awk '$2 == "'"$UEV"'" { print $1 }' "$PE")" -eq "$id"
	exec 7>&-
	check "probe_events: closing the file removed both uprobes" no_probes
}

# The same uprobes made and removed more often than ringtrace.ko has event
# ids (1024, the tracepoints' included): 60 uprobes (labels u0 .. u59 on
# rtu_work) made through one file, which is then closed, 18 times: each
# takes its first id back, and the metadata declares each once.  (One
# probe made and removed 1080 times would cost a grace period each, 0.7 s
# on 6.12-rt; a closing file's probes are removed with one.)
test_uprobe_ids_reused() {
	local off first last i j fails=0
	off=$(elf_offset "$UWL" rtu_work)
	for ((i = 0; i < 18; i++)); do
		exec 7<>"$PE"
		# Builtins only: a process per probe would take minutes.
		for ((j = 0; j < 60; j++)); do
			printf 'u:%s:%s@u%d' "$UWL" "$off" "$j" >&7 2>"$W/ids.err" && continue
			fails=$((fails + 1))
			((fails == 1)) && note "probe $((i * 60 + j + 1)) not made: $(<"$W/ids.err")"
		done
		((i == 0)) && first=$(awk '{ print $2, $1 }' "$PE" | sort)
		((i == 17)) && last=$(awk '{ print $2, $1 }' "$PE" | sort)
		exec 7>&-
	done
	check "60 uprobes made and removed 18 times, 1080 in all: every one taken ($fails failed)" \
		test "$fails" -eq 0
	check "... each with its first id the last time" \
		test "$(wc -l <<<"$first")" -eq 60 -a "$first" = "$last"
	check "... the metadata declares each once" \
		test "$(grep -c 'name = "uprobe_uprobe_workload_u[0-9]*";' "$RT/metadata")" -eq 60
	check "... nothing left" no_probes
}

# events/<uprobe>/trigger, and record --trigger on it: the snapshot holds
# the call that fired it (arg0 1005, the sixth of the workload's) and the
# kernel's marker that names the hit.
test_uprobe_trigger() {
	local off out=$W/utrig pid=none sum n
	off=$(elf_offset "$UWL" rtu_work)
	exec 7<>"$PE"
	printf 'u:%s:%s@rtu_work' "$UWL" "$off" >&7
	check "events/$UEV/trigger: made with the probe, reads none" \
		test "$(head -1 "$RT/events/$UEV/trigger" 2>/dev/null)" = none
	check "events/$UEV/trigger: 'arg9 == 1' refused, naming arg9" bash -c \
		"! echo 'arg9 == 1' >$RT/events/$UEV/trigger 2>/dev/null &&
		 grep -qF \"# error: unknown field 'arg9'\" $RT/events/$UEV/trigger"
	exec 7>&-
	check "events/$UEV/: the trigger gone with the probe" \
		test ! -e "$RT/events/$UEV/trigger"
	"$CLI" record --mode overwrite -e "uprobe:$UWL:rtu_work" -o "$out" \
		--trigger "$UEV: arg0 == 1005" -- \
		"$UWL" $UN "$W/utrig.out" >"$W/utrig.log" 2>"$W/utrig.err"
	check "record --trigger '$UEV: arg0 == 1005' exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/utrig.err"
	check "record --trigger: no uprobe left" no_probes
	n=$(find "$out" -mindepth 1 -maxdepth 1 -type d -name "*-$UEV" | wc -l)
	check "record --trigger: one snapshot named after $UEV ($n)" test "$n" -eq 1
	[[ -s $W/utrig.out ]] && read -r pid sum <"$W/utrig.out"
	"$CLI" report "$out"/*-"$UEV" >"$W/utrig.report" 2>/dev/null
	check "the snapshot holds the call that fired it (arg0=1005, pid $pid)" \
		bash -c "grep -E -- '-$pid $UEV: .*arg0=1005,' $W/utrig.report >/dev/null"
	check "... and the kernel's marker naming the hit" \
		grep -q "ringtrace trigger: $UEV: arg0 == 1005 (cpu " "$W/utrig.report"
}

test_uprobe_abi_none() {
	check "no uprobes: u: is EOPNOTSUPP" \
		refused "u:$UWL:$(elf_offset "$UWL" rtu_work)" "not supported"
}

test_uprobe_record() {
	local out=$W/urec pid sum n args want
	"$CLI" record -e "uprobe:$UWL:rtu_work" -o "$out" -- \
		"$UWL" $UN "$W/uwl.out" >/dev/null 2>"$W/urec.err"
	check "record -e uprobe:...:rtu_work exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/urec.err"
	check "record: no uprobe left after the end" no_probes
	read -r pid sum <"$W/uwl.out"
	"$CLI" report "$out" >"$W/urec.report" 2>"$W/urec.report.err"
	check "report reads the uprobe trace" test $? -eq 0
	n=$(events_of "$W/urec.report" "$UEV" "$pid" | wc -l)
	check "$UEV: exactly $UN events of the workload's pid $pid (got $n)" test "$n" -eq $UN
	n=$(grep -c " $UEV: " "$W/urec.report")
	check "$UEV: no event of another process (all: $n)" test "$n" -eq $UN
	args=$(events_of "$W/urec.report" "$UEV" "$pid" |
		sed -nE 's/.* arg0=([0-9]+), arg1=.*/\1/p' | paste -sd' ')
	want=$(seq -s' ' 1000 $((1000 + UN - 1)))
	check "$UEV: arg0 is what the workload passed, in order" test "$args" = "$want"
	[[ $args == "$want" ]] || note "arg0: $args"
	if user_logic; then
		n=$("$CLI" unpack "$out" "$out.ctf" >/dev/null &&
			babeltrace2 "$out.ctf" 2>"$W/ubabel.err" | grep -c "$UEV: .*arg0 = 10")
		check "babeltrace2 reads the $UN uprobe events too ($n)" test "$n" -eq $UN
	fi

	# --filter on a fetched argument: the even ones of 1000 .. 1000+UN-1.
	"$CLI" record -e "uprobe:$UWL:rtu_work" -o "$out.f" \
		--filter "$UEV: arg0 & 1 == 0 && arg0 >= 1000" -- \
		"$UWL" $UN "$W/uwlf.out" >/dev/null 2>"$W/urecf.err"
	check "record --filter '$UEV: arg0 & 1 == 0' exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/urecf.err"
	check "record --filter: no uprobe left after the end" no_probes
	read -r pid sum <"$W/uwlf.out"
	"$CLI" report "$out.f" >"$W/urecf.report" 2>/dev/null
	args=$(grep " $UEV: " "$W/urecf.report" |
		sed -nE 's/.* arg0=([0-9]+), arg1=.*/\1/p' | paste -sd' ')
	want=$(seq -s' ' 1000 2 $((1000 + UN - 1)))
	check "--filter on arg0: exactly the even calls ($args)" test "$args" = "$want"
	user_logic || return 0
	"$CLI" record -e "uprobe:$UWL:rtu_work" -o "$out.bad" \
		--filter "$UEV: arg7 == 1" -- true >/dev/null 2>"$W/urecb.err"
	n=$?
	check "--filter 'arg7 == 1' on a uprobe: refused in one line naming arg7" \
		eval '[ $n -ne 0 ] && one_line "$W/urecb.err" && grep -qF "unknown field '"'arg7'"'" "$W/urecb.err"'
	check "... no probe left, no trace directory" eval 'no_probes && [ ! -e "$out.bad" ]'
	"$CLI" record -e "uprobe:$UWL:rtu_work" -o "$out.bad" \
		--filter "uprobe_nosuch: arg0 == 1" -- true >/dev/null 2>"$W/urecb2.err"
	n=$?
	check "--filter on a probe not recorded: refused in one line" \
		eval '[ $n -ne 0 ] && one_line "$W/urecb2.err" && grep -q "not recorded" "$W/urecb2.err"'
	check "... no probe left" no_probes
}

# uprobing OUT: the record with the uprobe, at rtu_work+1 to see the CLI
# add the offset; nothing runs the workload meanwhile, so whether +1
# starts an instruction does not matter.
uprobing() { recording "$1" 1 "uprobe:$UWL:rtu_work+1"; }

test_uprobe_sigkill() {
	local want
	want=$(printf '0x%x' $(($(elf_offset "$UWL" rtu_work) + 1)))
	setup "uprobe SIGKILL: record with the uprobe started" uprobing "$W/ukill"
	check "uprobe SIGKILL: rtu_work+1 at readelf's offset + 1 ($want)" \
		grep -qE "^[0-9]+ ${UEV}_0x1 u:$UWL:$want@rtu_work_0x1$" "$PE"
	sigkill_record
	check "uprobe SIGKILL: probe_events is empty" test -z "$(<"$PE")"
	after_sigkill
}

test_uprobe_errors() {
	local before spec rc what
	before=$(state)
	printf 'not an elf file\n' >"$W/text"
	while IFS='|' read -r spec what; do
		"$CLI" record -e "sched_switch,$spec" -o "$W/bad" -- true >/dev/null 2>"$W/bad.err"
		rc=$?
		check "record -e $spec: refused ($rc)" test $rc -ne 0
		check "record -e $spec: one line" one_line "$W/bad.err"
		check "record -e $spec: says '$what'" grep -q -- "$what" "$W/bad.err"
		check "record -e $spec: nothing registered, control files as before" \
			same_state "$before"
		check "record -e $spec: no trace directory" test ! -e "$W/bad"
	done <<-EOF
		uprobe:$W/no-such-binary:main|No such file or directory
		uprobe:$W/text:main|not an ELF file
		uprobe:$UWL:rtu_no_such_symbol|no symbol rtu_no_such_symbol
		uprobe:$UWL:rtu_work+4096|beyond the end of rtu_work
		uprobe:$UWL|not uprobe:PATH:SYMBOL
	EOF
}

main() {
	note "kernel $KVER, $(nproc) CPUs, work in $W"
	grep -q '^ringtrace ' /proc/modules || insmod "$BUILD/$KVER/ringtrace.ko" ||
		{ echo "dynprobes: 0 passed, 1 failed (insmod)"; exit 1; }
	note "started at $SECONDS s"
	test_abi_malformed
	if grep -q "^CONFIG_KPROBES=y" "/boot/config-$KVER" 2>/dev/null ||
	   [[ -e /sys/kernel/debug/kprobes/list ]]; then
		FUNC=$(grep -oE " (do_sys_openat2|do_sys_open)$" /proc/kallsyms | head -1 | tr -d ' ')
		note "probing $FUNC"
		test_abi
		test_record
		test_record_filter
		test_record_field_filter
		test_ctrl_c
		test_sigterm
		test_sigkill
		test_errors
		test_close_batches
		test_list
	else
		note "no kprobes in this kernel: the probes must be refused"
		test_abi_no_kprobes
		test_errors_no_kprobes
	fi
	note "the kprobe tests ended at $SECONDS s"
	if [[ -e /sys/kernel/tracing/uprobe_events ]] ||
	   grep -q "^CONFIG_UPROBES=y" "/boot/config-$KVER" 2>/dev/null; then
		local t0=$SECONDS
		test_uprobe_abi
		test_uprobe_record
		test_uprobe_sigkill
		test_uprobe_ids_reused
		test_uprobe_trigger
		# The CLI's refusals happen in user space, before the module
		# is asked.
		user_logic && test_uprobe_errors
		note "the uprobe tests took $((SECONDS - t0)) s"
	else
		note "no uprobes in this kernel: u: must be refused"
		test_uprobe_abi_none
	fi
	echo 0 >"$RT/tracing_on" 2>/dev/null
	rmmod ringtrace 2>/dev/null
	keep_files "$W" dynprobes-tests
	check_summary dynprobes
}

main
