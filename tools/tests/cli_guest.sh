#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ringtrace CLI as a user runs it, in the test guest (tools/guest-tests),
# as root, starting with ringtrace.ko not loaded:
#
#   record     loads the module itself; a second record in that load
#              counts no loss of the first's; -- CMD: CMD's exit status, each
#              known thread's getppid calls attributed to its tid and comm,
#              --stat's count; -F: the command's tree and nothing else;
#              every control file as it was after a normal exit, Ctrl-C, a
#              failing command and every refused start; one line per error
#   signals  every terminating signal: record puts every control file,
#              filter and trigger back, then ends by that signal (the wait
#              status, from sigrun.py; no core, cores allowed), or as its
#              command did; SIGPIPE of `2>&1 | head -1`; a stop signal to
#              record alone, its process group, each process of its cgroup
#              (systemd), typed at a terminal (a pty) or sent by pkill -f
#              (pgrep -f and pidof list record alone) reaches the command
#              once; one while record starts: the command never runs;
#              SIGKILL of record (drained, and --trigger): its ringtraced
#              (guard) puts everything back, also when record died before
#              ringtraced began (pdeath-delay.so), and the probes go at
#              once; kill -9 of record and ringtraced: the next record or
#              ringtraced does, leaving what was set by hand since; a
#              restore file not record's, or a directory others may write,
#              refused; a read-only one: recorded all the same; on a stty
#              tostop terminal the guard and ringtraced write; --live's
#              view ends when record died before it asked for PDEATHSIG
#              (pdeath-delay.so widens the window)
#   list, report's filters and --stat, against babeltrace2's view
#   snapshot   the newest markers, contiguous, while tracing goes on
#   --follow   ringtraced's trace followed while markers are written by
#              turns on each CPU, across a rotation and a dynamic probe:
#              every marker once, in order, within a second of its write;
#              --cpu/-e applied; Ctrl-C ends it with 0.  record --live
#              prints while the command runs, the trace on disk complete
#   --trigger  a marker written at a random moment fires it in the kernel:
#              the snapshot holds it, the markers before it contiguous
#              back as far as the buffer held and those of --after; two
#              triggers two snapshots, --max, recording goes on, babeltrace2
#              reads them; bad triggers refused in one line
#   stacks     --stack sched_switch on threads blocked in nanosleep, a
#              pipe read and a futex: their switch-out stacks hold the
#              functions they block in; --folded --off-cpu weighs them as
#              long as the threads said they slept (10 %); a frame in
#              ringtrace.ko prints as function+0xoff [ringtrace];
#              export -f chrome-json has the stacks in stackFrames and
#              export -f perfetto as PerfSamples with interned callstacks,
#              st-sleep's through nanosleep to schedule, as many in both;
#              bad --stack input; babeltrace2 reads the trace
#   --filter   the kernel's field predicates: known getppid, openat and
#              write calls, only the ones asked for recorded; `written`
#              equals delivered (the others were never written); a glob on
#              comm; bad expressions refused in one line, nothing changed;
#              args[2] & O_CREAT, ret == -9 (a failed close) and the
#              marker's data as fields, with exact counts
#   --cgroup   the same filter-workload at once in a cgroup's child and
#              outside: --cgroup records exactly the inside one's calls;
#              two --cgroup; bad paths refused in one line, nothing
#              changed; report --cgroup by path and by id, --stat's cgroup
#   export     systrace lines parse like the kernel's own ftrace lines of
#              the same events (recorded in the same boot); chrome-json is
#              JSON with the workload's system calls on the right threads
#
# RT_CLI_SCOPE=kernel leaves out the tests of the CLI's own logic
# (CLI_ONLY below): tools/run-tests runs those in one kernel's boot.
# CLI_TESTS="test_a test_b" runs only those.  RT_CLI_BIN and
# RT_RINGTRACED_BIN run another build's ringtrace and ringtraced (main's:
# a test that must fail there).  Ends with "cli: N passed, M failed".

set -u

cd "$(dirname "$0")/../.."
readonly REPO=$PWD
readonly KVER=${RT_KVER:-$(uname -r)}
export BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
# RT_CLI_BIN, RT_RINGTRACED_BIN: another build's (a test shown to fail on main).
readonly CLI=${RT_CLI_BIN:-$REPO/tools/ringtrace}
readonly WL=$REPO/tools/tests/cli-workload
readonly SWL=$REPO/tools/tests/stack-workload
readonly FWL=$REPO/tools/tests/filter-workload
readonly W=$(mktemp -d /tmp/rt-cli.XXXXXX)
# getppid calls per thread of the workload
readonly N=200
export RINGTRACED=${RT_RINGTRACED_BIN:-$REPO/daemon/ringtraced}

. tools/tests/check.sh
. tools/tests/scope.sh
. tools/tests/job.sh

note() { echo "# $*"; }

# Every control file that record may change, one "name: value" line each.
state() {
	ctl_lines tracing_on mode subbuf_size num_subbufs set_event \
		set_event_pid event_fork set_event_stack stack_depth \
		set_event_cgroup
}

# same_lines WANT GOT: the files are equal, WANT not empty (two failures
# print the same nothing); else their first differences.
same_lines() {
	[[ -s $1 ]] || { echo "# $1 is empty: nothing to compare"; return 1; }
	cmp -s "$1" "$2" && return 0
	echo "# $(wc -l <"$1") lines wanted, $(wc -l <"$2") got; first differences:"
	diff "$1" "$2" | head -n 8 | sed 's/^/# /'
	return 1
}

# The unpacked CTF trace of a trace directory, for babeltrace2.
unpacked() {
	[[ -d $1.ctf ]] || "$CLI" unpack "$1" "$1.ctf" >/dev/null || return 1
	echo "$1.ctf"
}

# The event lines of report's output (not losses, not the summary).
# An event's thread is " -" until its CPU said who runs there (report's print_thread):
# those are events too; only the "-- lost" lines are not.
# One awk, not two greps: a process start is 70-100 ms under TCG.
events_only() { awk '/^\[[0-9.]+\] cpu[0-9]+ / && !/^\[[0-9.]+\] cpu[0-9]+ -- lost/'; }

# count_lines PATTERN FILE
count_lines() { grep -cE -- "$1" "$2"; }

# ---- record, as a newcomer runs it ----------------------------------------------

test_loads_module() {
	local out=$W/t0
	rmmod ringtrace 2>/dev/null
	"$CLI" record -o "$out" -- true >"$W/t0.out" 2>"$W/t0.err"
	check "record with the module unloaded exits 0" test $? -eq 0
	check "record loaded ringtrace.ko itself" grep -q '^ringtrace ' /proc/modules
	check "record wrote a trace directory" test -s "$out/metadata"
	check "record printed where the trace is" grep -q "ringtrace report $out" "$W/t0.out"
	check "record's summary has a 'CPU n: N events lost' line per CPU" \
		grep -qE '^CPU 0: [0-9]+ events lost' "$W/t0.out"
}

# A second record in test_loads_module's module load: its packets are its
# own, numbered from the recording's start, so none of the first one's
# counts as lost before its first packet (every CPU wrote in the first),
# and ringtraced's summary counts its own events, not the first's.
test_second_record() {
	local out=$W/t0b c cpus=0 n d
	"$CLI" report "$W/t0" 2>/dev/null | events_only >"$W/t0.events"
	for ((c = 0; c < $(nproc); c++)); do
		grep -q "^\[[0-9.]*\] cpu$c " "$W/t0.events" && cpus=$((cpus + 1))
	done
	check "second record: the first recording wrote on all $(nproc) CPUs ($cpus)" \
		test "$cpus" -eq "$(nproc)"
	"$CLI" record -o "$out" -- true >"$W/t0b.out" 2>"$W/t0b.err"
	check "second record in one module load exits 0" test $? -eq 0
	"$CLI" report --stat "$out" >"$W/t0b.stat" 2>&1
	check "second record: --stat has a losses line per CPU" \
		test "$(grep -cE '^  CPU [0-9]+: ' "$W/t0b.stat")" -eq "$(nproc)"
	check "second record: no CPU lost events or packets: $(grep -E '^  CPU [0-9]+: ' "$W/t0b.stat" | grep -vE ': 0 events lost, 0 packets lost' | head -n 1)" \
		test "$(grep -E '^  CPU [0-9]+: ' "$W/t0b.stat" | grep -cvE ': 0 events lost, 0 packets lost')" -eq 0
	"$CLI" report "$out" >"$W/t0b.report" 2>&1
	check "second record: report prints no loss before the first packet" \
		test "$(grep -c -- '-- lost' "$W/t0b.report")" -eq 0
	# ringtraced's summary counts this recording's events too.
	for ((c = 0; c < $(nproc); c++)); do
		n=$(events_only <"$W/t0b.report" | grep -c "^\[[0-9.]*\] cpu$c ")
		d=$(sed -nE "s/^CPU $c: 0 events lost \(.*\); ([0-9]+) written, ([0-9]+) delivered$/\1 \2/p" "$W/t0b.out")
		check "second record: CPU $c's summary: written and delivered its $n events ($d)" \
			test "$d" = "$n $n"
	done
	# ringtraced kept the clocks as the recording ended: the trace table's
	# drift from the metadata's offset (the kernel's, at the start) is
	# what the clocks moved apart in between, none here (no NTP).
	check "second record: ringtraced wrote .ringtrace-clock.json" \
		grep -q '"format": "ringtrace-clock"' "$out/.ringtrace-clock.json"
	d=$("$CLI" sql --csv "$out" 'SELECT clock_drift_ns FROM trace' 2>"$W/t0b.clock" | sed -n '2s/\r$//p')
	check "second record: sql reads its clock drift ($d ns, under a second): $(head -c 300 "$W/t0b.clock")" \
		test -n "$d" -a "${d#-}" -lt 1000000000 -a ! -s "$W/t0b.clock"
}

# A state that is not the default, so that a restore to defaults fails.
set_odd_state() {
	echo overwrite >"$RT/mode"
	echo 8 >"$RT/num_subbufs"
	echo 32768 >"$RT/subbuf_size"
	echo 0 >"$RT/events/enable"
	echo sched_wakeup >"$RT/set_event"
	echo irq_handler_entry >"$RT/set_event"
	echo 1 >"$RT/set_event_pid"
}

# tids FILE: the workload's "tid pid comm" lines.
test_attribution() {
	local out=$W/t1 before rc tid pid comm n x tids all
	before=$(state)
	"$CLI" record -e syscalls,sched -o "$out" -- "$WL" $N "$W/tids1" 7 \
		>"$W/t1.out" 2>"$W/t1.err"
	rc=$?
	check "record exits with the command's status (7)" test $rc -eq 7
	check "every control file is as before record" same_state "$before"
	check "the workload wrote its 5 tid lines" test "$(wc -l <"$W/tids1")" -eq 5
	# record waited for ringtraced to compress what the recording left.
	"$CLI" check "$out" >"$W/t1.check" 2>&1
	check "record left no chunk uncompressed: $(grep '^chunks:' "$W/t1.check")" \
		grep -Eq '^chunks: [1-9][0-9]* compressed$' "$W/t1.check"
	"$CLI" report "$out" >"$W/t1.report" 2>"$W/t1.report.err"
	check "report reads the trace" test $? -eq 0
	while read -r tid pid comm; do
		n=$(count_lines " $comm-$tid syscall_entry: .*id=getppid\(" "$W/t1.report")
		check "$comm-$tid: $N getppid entries attributed (got $n)" test "$n" -eq $N
		x=$(count_lines " $comm-$tid syscall_exit: .*id=getppid\(" "$W/t1.report")
		check "$comm-$tid: $N getppid exits attributed (got $x)" test "$x" -eq $N
	done <"$W/tids1"
	# No getppid of a workload tid under another name: the exec'd child
	# has the binary's name, its earlier half rtw-child.
	tids=$(awk '{ print $1 }' "$W/tids1" | sort -u | paste -sd'|')
	n=$(count_lines "-(${tids:-none}) syscall_entry: .*id=getppid\(" "$W/t1.report")
	check "report: the workload's threads made exactly 5N getppid calls ($n)" \
		test "$n" -eq $((5 * N))
	# Other processes of the guest may call getppid too: --stat counts
	# what report prints.
	all=$(count_lines " syscall_entry: .*id=getppid\(" "$W/t1.report")
	"$CLI" report --stat "$out" >"$W/t1.stat" 2>/dev/null
	n=$(awk '$1 == "getppid" { print $2; exit }' "$W/t1.stat")
	check "--stat counts getppid as report prints them ($n, report $all >= 5N)" \
		test "${n:-0}" -eq "$all" -a "$all" -ge $((5 * N))
}

# A system call's entry carries the arguments it has, no more: getppid()
# none, read() its three, fd and count as dd passed them.
test_syscall_args() {
	local out=$W/sa n
	"$CLI" record -e syscall_entry -o "$out" -- \
		dd if=/dev/zero of=/dev/null bs=4097 count=3 status=none >"$W/sa.out" 2>&1
	check "syscall args: record dd" test $? -eq 0
	"$CLI" report "$out" >"$W/sa.report" 2>/dev/null
	n=$(count_lines " dd-[0-9]+ syscall_entry: id=read\(0\), nr_args=3, args=\[0, [0-9]+, 4097\]$" "$W/sa.report")
	check "syscall args: dd's 3 reads carry fd 0 and count 4097 ($n)" test "$n" -eq 3
	n=$(count_lines " syscall_entry: id=getppid\(110\), nr_args=0, args=\[\]$" "$W/t1.report")
	check "syscall args: getppid() entries carry none ($n >= $((5 * N)))" test "$n" -ge $((5 * N))
	n=$(count_lines " syscall_entry: id=getppid\(" "$W/t1.report")
	check "syscall args: ... every one of them ($n)" \
		test "$n" -eq "$(count_lines " syscall_entry: id=getppid\(110\), nr_args=0, args=\[\]$" "$W/t1.report")"
}

test_follow() {
	local out=$W/t2 before rc n others tids
	before=$(state)
	"$CLI" record -F -e syscalls -o "$out" -- "$WL" $N "$W/tids2" \
		>/dev/null 2>"$W/t2.err"
	rc=$?
	check "record -F exits 0" test $rc -eq 0
	check "record -F: control files as before" same_state "$before"
	"$CLI" report "$out" >"$W/t2.report" 2>/dev/null
	tids=$(awk '{ print $1 }' "$W/tids2" | sort -u | paste -sd'|')
	others=$(grep -E ' syscall_(entry|exit):' "$W/t2.report" |
		grep -vcE -- "-($tids) syscall_")
	check "-F: no system call of another thread ($others lines)" test "$others" -eq 0
	grep -E ' syscall_(entry|exit):' "$W/t2.report" | grep -vE -- "-($tids) syscall_" |
		head -3 | sed 's/^/# /'
	n=$("$CLI" report --stat "$out" 2>/dev/null | awk '$1 == "getppid" { print $2; exit }')
	check "-F: --stat counts exactly 5N getppid calls ($n)" test "${n:-0}" -eq $((5 * N))
}

# summed WORD FILE: the sum over ringtraced's "CPU n: ...; N written,
# M delivered" summary lines of the number before WORD.
summed() {
	awk -v w="$1" '/^CPU [0-9]+: .* lost/ { for (i = 2; i <= NF; i++) if ($i == w || $i == w ",") s += $(i - 1) } END { print s + 0 }' "$2"
}

# filter_state: state() and every event's predicate.
filter_state() {
	state
	grep -H . "$RT"/events/*/filter
}

# The workload's 11 getppid, 13 openat and 17 write calls.
test_event_filter() {
	local out=$W/ef n all w d l rc
	filter_state >"$W/ef.state0"
	"$CLI" record -e syscall_entry -o "$out" \
		--filter 'syscall_entry: id == getppid' -- "$FWL" 11 13 17 \
		>"$W/ef.out" 2>"$W/ef.err"
	check "--filter: record exits 0" test $? -eq 0
	w=$(summed written "$W/ef.out") d=$(summed delivered "$W/ef.out")
	l=$(summed events "$W/ef.out")
	filter_state >"$W/ef.state1"
	check "--filter: every predicate and control file as before" same_lines \
		"$W/ef.state0" "$W/ef.state1"
	"$CLI" report "$out" >"$W/ef.report" 2>/dev/null
	n=$(count_lines " rtflt-wl-[0-9]+ syscall_entry: id=getppid\(" "$W/ef.report")
	all=$(count_lines " syscall_entry: " "$W/ef.report")
	check "--filter 'id == getppid': the 11 getppid entries ($n)" test "$n" -eq 11
	check "--filter 'id == getppid': no other syscall_entry ($all)" test "$all" -eq 11
	# Filtered before reserve: what was not recorded was never written.
	check "--filter: written ($w) = delivered ($d), none lost ($l)" \
		test "$w" -eq "$d" -a "$l" -eq 0 -a "$w" -gt 0

	"$CLI" record -e syscall_entry -o "$out.glob" \
		--filter "syscall_entry: comm == 'rtflt-*' && (id == openat || id == write)" \
		-- "$FWL" 11 13 17 >/dev/null 2>"$W/ef.glob.err"
	check "--filter on a comm glob: record exits 0" test $? -eq 0
	"$CLI" report "$out.glob" >"$W/ef.glob.report" 2>/dev/null
	n=$(count_lines " rtflt-wl-[0-9]+ syscall_entry: id=openat\(" "$W/ef.glob.report")
	check "--filter comm glob: the 13 openat entries ($n)" test "$n" -eq 13
	n=$(count_lines " rtflt-wl-[0-9]+ syscall_entry: id=write\(" "$W/ef.glob.report")
	check "--filter comm glob: the 17 write entries ($n)" test "$n" -eq 17
	all=$(count_lines " syscall_entry: " "$W/ef.glob.report")
	check "--filter comm glob: nothing else ($all)" test "$all" -eq 30

	"$CLI" record -e syscall_entry -o "$out.bad" \
		--filter 'syscall_entry: id == getppid && foo == 1' -- true \
		>/dev/null 2>"$W/ef.bad.err"
	check "--filter with an unknown field: refused" test $? -ne 0
	check "... in one line" one_line "$W/ef.bad.err"
	check "... naming the field" grep -q "unknown field 'foo'" "$W/ef.bad.err"
	check "... and no trace directory" test ! -e "$out.bad"
	"$CLI" record -e syscall_entry,syscall_exit -o "$out.bad" \
		--filter 'syscall_entry: id == getppid' \
		--filter 'syscall_exit: ret >= 0 ||' -- true >/dev/null 2>"$W/ef.bad2.err"
	check "--filter: a bad second filter is refused" test $? -ne 0
	check "... in one line naming the token" eval 'one_line "$W/ef.bad2.err" &&
		grep -q "expected a field name, not the end" "$W/ef.bad2.err"'
	"$CLI" record -e syscall_exit -o "$out.bad" \
		--filter 'syscall_entry: id == getppid' -- true >/dev/null 2>"$W/ef.bad3.err"
	rc=$?
	check "--filter on an event not recorded: refused in one line" \
		eval '[ $rc -ne 0 ] && one_line "$W/ef.bad3.err"'
	filter_state >"$W/ef.state2"
	check "refused --filters: every predicate and control file as before" \
		same_lines "$W/ef.state0" "$W/ef.state2"
}

# Arguments, return values and the marker's text as fields: the workload's
# 13 openat of /dev/null and 7 with O_CREAT (0x40), 5 close(-1) failing
# with -EBADF (-9), and 6 markers "rtflt-keep N" among 9 "rtflt-drop N".
test_field_filters() {
	local out=$W/ff n all w d l rc
	"$CLI" record -e syscall_entry -o "$out.creat" \
		--filter 'syscall_entry: comm == rtflt-wl && id == openat && args[2] & 0x40' \
		-- "$FWL" 0 13 0 7 5 >/dev/null 2>"$W/ff.creat.err"
	check "--filter on args[2]: record exits 0" test $? -eq 0
	"$CLI" report "$out.creat" >"$W/ff.creat.report" 2>/dev/null
	n=$(count_lines " rtflt-wl-[0-9]+ syscall_entry: id=openat\(.*, args=\[[0-9]+, [0-9]+, 65, 384\]$" "$W/ff.creat.report")
	all=$(count_lines " syscall_entry: " "$W/ff.creat.report")
	check "--filter 'args[2] & 0x40': the 7 O_CREAT openat ($n), nothing else ($all)" \
		test "$n" -eq 7 -a "$all" -eq 7

	"$CLI" record -e syscall_exit -o "$out.ret" \
		--filter 'syscall_exit: id == close && ret == -9' \
		-- "$FWL" 0 13 0 7 5 >/dev/null 2>"$W/ff.ret.err"
	check "--filter on a negative ret: record exits 0" test $? -eq 0
	"$CLI" report "$out.ret" >"$W/ff.ret.report" 2>/dev/null
	n=$(count_lines " rtflt-wl-[0-9]+ syscall_exit: id=close\([0-9]+\), ret=-9$" "$W/ff.ret.report")
	all=$(count_lines " syscall_exit: " "$W/ff.ret.report")
	check "--filter 'ret == -9': the 5 failed close ($n), nothing else ($all)" \
		test "$n" -eq 5 -a "$all" -eq 5

	"$CLI" record -e syscall_exit -o "$out.mk" \
		--filter 'syscall_exit: id == 12345' \
		--filter 'ringtrace_marker: data == "rtflt-keep*"' \
		-- "$FWL" 0 1 0 0 0 "$RT/marker" 6 9 >"$W/ff.mk.out" 2>"$W/ff.mk.err"
	check "--filter on the marker's data: record (and every marker write) exits 0" \
		test $? -eq 0
	w=$(summed written "$W/ff.mk.out") d=$(summed delivered "$W/ff.mk.out")
	l=$(summed events "$W/ff.mk.out")
	"$CLI" report "$out.mk" >"$W/ff.mk.report" 2>/dev/null
	n=$(count_lines ' ringtrace_marker: .*"rtflt-keep [0-5]"' "$W/ff.mk.report")
	all=$(count_lines ' ringtrace_marker: ' "$W/ff.mk.report")
	check "--filter 'data == \"rtflt-keep*\"': the 6 kept markers ($n), no other ($all)" \
		test "$n" -eq 6 -a "$all" -eq 6
	# Dropped before reserve: what was not recorded was never written
	# (selftests/filter_test.c counts the marker's `written` exactly).
	check "--filter on the marker: written ($w) = delivered ($d), none lost ($l)" \
		test "$w" -eq "$d" -a "$l" -eq 0 -a "$w" -gt 0

	"$CLI" record -e syscall_entry -o "$out.bad" \
		--filter 'syscall_entry: args[6] == 1' -- true >/dev/null 2>"$W/ff.bad.err"
	rc=$?
	check "--filter on args[6]: refused in one line naming it" eval \
		'[ $rc -ne 0 ] && one_line "$W/ff.bad.err" && grep -qF "unknown field '"'args[6]'"'" "$W/ff.bad.err"'
	"$CLI" record -e syscall_entry -o "$out.bad" \
		--filter 'ringtrace_marker: data < 3' -- true >/dev/null 2>"$W/ff.bad2.err"
	rc=$?
	check "--filter 'data < 3': refused in one line naming data" eval \
		'[ $rc -ne 0 ] && one_line "$W/ff.bad2.err" && grep -qF "'"'data'"' is a string" "$W/ff.bad2.err"'
	check "... and no trace directory" test ! -e "$out.bad"
}

# ---- --cgroup ----------------------------------------------------------------------

# getppid calls of each cgroup workload
readonly CGN=300
readonly CG=/sys/fs/cgroup/rt-cli

# cg_workload CGROUP: filter-workload (CGN getppid calls) moved into
# CGROUP now, before tracing starts (the state dump says where it is),
# held until cg_go's command releases it; its pid goes into wls.
cg_workload() {
	local go=$W/cg-go.${#wls[@]} i
	mkfifo "$go"
	(echo "$BASHPID" >"$1/cgroup.procs" && read -r _ <"$go" &&
		exec "$FWL" $CGN 1 1) &
	wls+=($!)
	gos+=("$go")
	for ((i = 0; i < 100; i++)); do
		grep -qx "${wls[-1]}" "$1/cgroup.procs" && return
		nap 0.05
	done
}

# cg_record OUT ARGS...: record ARGS while the workloads run at once;
# the command releases them and waits for them all (not with tail
# --pid: coreutils 9.1's follows the last --pid only, and the recording
# ended with a slower workload's calls still to come).
cg_record() {
	local out=$1
	shift
	"$CLI" record "$@" -e syscall_entry -o "$out" -- sh -c \
		'for g in $1; do echo go >"$g" & done; wait; shift
		 for p; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done' \
		sh "${gos[*]}" "${wls[@]}" >"$out.out" 2>"$out.err"
}

# getppids REPORT PID: the getppid entries of PID in a report's text.
getppids() { grep -cE -- "-$2 syscall_entry: id=getppid\(" "$1"; }

test_cgroup() {
	local out=$W/cg before wls gos n all id_a id_c rc
	if [[ ! -d /sys/fs/cgroup ]]; then
		refused "--cgroup without cgroups in the kernel" "no cgroup v2 directory|No such" \
			"$CLI" record --cgroup foo -o "$W/cg0" -- true
		return
	fi
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	mkdir -p "$CG/a/nested" "$CG/b" "$CG/c"
	id_a=$(stat -c %i "$CG/a") id_c=$(stat -c %i "$CG/c")
	# Someone else's cgroup filter: record puts it back.
	echo "$id_c" >"$RT/set_event_cgroup"
	before=$(state)

	wls=() gos=()
	cg_workload "$CG/a/nested"
	cg_workload "$CG/c"
	cg_record "$out.1" --cgroup rt-cli/a
	check "--cgroup rt-cli/a: record exits 0" test $? -eq 0
	check "--cgroup: control files as before (set_event_cgroup $id_c)" same_state "$before"
	"$CLI" report "$out.1" >"$out.1.report" 2>/dev/null
	n=$(getppids "$out.1.report" "${wls[0]}")
	check "--cgroup: the $CGN getppid calls of the workload in a child cgroup ($n)" \
		test "$n" -eq $CGN
	n=$(getppids "$out.1.report" "${wls[1]}")
	all=$(count_lines " syscall_entry: id=getppid\(" "$out.1.report")
	check "--cgroup: none of the one outside ($n), none else ($all in all)" \
		test "$n" -eq 0 -a "$all" -eq $CGN

	wls=() gos=()
	rm -f "$W"/cg-go.*
	cg_workload "$CG/a/nested"
	cg_workload "$CG/b"
	cg_workload "$CG/c"
	cg_record "$out.2" --cgroup "$CG/a" --cgroup rt-cli/b
	check "two --cgroup: record exits 0" test $? -eq 0
	"$CLI" report "$out.2" >"$out.2.report" 2>/dev/null
	n="$(getppids "$out.2.report" "${wls[0]}") $(getppids "$out.2.report" "${wls[1]}")"
	n+=" $(getppids "$out.2.report" "${wls[2]}")"
	all=$(count_lines " syscall_entry: id=getppid\(" "$out.2.report")
	check "two --cgroup: each inside workload's $CGN calls, none outside ($n; $all in all)" \
		test "$n" = "$CGN $CGN 0" -a "$all" -eq $((2 * CGN))

	# report --cgroup: the threads' cgroups from the state dump.
	"$CLI" report --cgroup rt-cli/b "$out.2" >"$out.2.b" 2>&1
	n=$(getppids "$out.2.b" "${wls[1]}")
	all=$(count_lines " syscall_entry: id=getppid\(" "$out.2.b")
	check "report --cgroup rt-cli/b: that workload's $CGN calls only ($n, $all in all)" \
		test "$n" -eq $CGN -a "$all" -eq $CGN
	"$CLI" report --cgroup "$id_a" "$out.2" >"$out.2.a" 2>&1
	n=$(getppids "$out.2.a" "${wls[0]}")
	all=$(count_lines " syscall_entry: id=getppid\(" "$out.2.a")
	check "report --cgroup ID of rt-cli/a: the workload in its child ($n, $all in all)" \
		test "$n" -eq $CGN -a "$all" -eq $CGN
	"$CLI" report --cgroup 99999999 "$out.2" >"$out.2.none" 2>&1
	check "report --cgroup of an id no thread has: no event" \
		test "$(events_only <"$out.2.none" | wc -l)" -eq 0
	"$CLI" report --stat "$out.2" >"$out.2.stat" 2>&1
	check "report --stat: the thread table names the workloads' cgroups" \
		eval 'grep -qE "^  rtflt-wl +/rt-cli/a/nested +${wls[0]} " "$out.2.stat" &&
		      grep -qE "^  rtflt-wl +/rt-cli/b +${wls[1]} " "$out.2.stat"'
	"$CLI" report --cgroup rt-cli/nosuch "$out.2" >/dev/null 2>"$W/cg.err"
	rc=$?
	check "report --cgroup of no cgroup: refused in one line" \
		eval '[ $rc -ne 0 ] && one_line "$W/cg.err"'

	refused "--cgroup of no cgroup" "rt-cli/nosuch: No such file" \
		"$CLI" record --cgroup rt-cli/nosuch -o "$W/cg.bad" -- true
	refused "--cgroup of a directory outside cgroup2" "no cgroup v2 directory" \
		"$CLI" record --cgroup "$W" -o "$W/cg.bad" -- true
	refused "--cgroup of a cgroup's file" "no cgroup v2 directory" \
		"$CLI" record --cgroup rt-cli/a --cgroup rt-cli/a/cgroup.procs -o "$W/cg.bad" -- true
	check "refused --cgroup: no trace directory" test ! -e "$W/cg.bad"
	echo >"$RT/set_event_cgroup"
	rmdir "$CG/a/nested" "$CG/a" "$CG/b" "$CG/c" "$CG"
}

# ---- record and signals ---------------------------------------------------------------

# Puts the control files back to a state() text: after a test that killed
# record outright, which cannot restore them itself.
put_state() {
	local name value clear
	while IFS= read -r line; do
		name=${line%%: *}
		value=${line#*: }
		case $name in
		set_event)
			echo 0 >"$RT/events/enable"
			[[ -n ${value// /} ]] && echo "$value" >"$RT/set_event" ;;
		set_event_pid) echo "${value:- }" >"$RT/set_event_pid" ;;
		set_event_stack)
			clear=$(sed 's/^/!/' "$RT/set_event_stack" | tr '\n' ' ')
			[[ -n ${clear// /} ]] && echo "$clear" >"$RT/set_event_stack"
			[[ -n ${value// /} ]] && echo "$value" >"$RT/set_event_stack" ;;
		*) echo "$value" >"$RT/$name" ;;
		esac
	done <<<"$1"
}

# recording OUT ERR CMD...: starts `record -o OUT -- CMD` in the
# background, as a terminal's job; sets rec (record's pid) and cmd (the
# command's) once tracing is on and the command runs.
recording() {
	local out=$1 err=$2 i
	shift 2
	as_job "$CLI" record -o "$out" -- "$@" >/dev/null 2>"$err" &
	rec=$!
	cmd=
	for ((i = 0; i < 300; i++)); do
		cmd=$(pgrep -P "$rec" -x "${1##*/}")
		[[ $(<"$RT/tracing_on") == 1 && -n $cmd ]] && break
		nap 0.1
	done
	nap 0.5
}

# exited_in TRACE PID: the trace holds PID's sched_process_exit.
exited_in() {
	"$CLI" report -e sched_process_exit "$1" 2>/dev/null | grep -qE "sched_process_exit: .*tid=$2(,|$)"
}

test_sigmask() {
	local want got
	# A parent that blocks SIGUSR2 and ignores SIGUSR1: what the command
	# sees under record must be what it sees without it.
	local as_given='import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])'
	want=$(python3 -S -c "$as_given" grep -E '^Sig(Blk|Ign)' /proc/self/status)
	got=$(python3 -S -c "$as_given" "$CLI" record -o "$W/sm" -- \
		grep -E '^Sig(Blk|Ign)' /proc/self/status 2>/dev/null | grep -E '^Sig')
	check "the command's signal mask and ignored signals are record's own" \
		test "$got" = "$want"
	[[ $got == "$want" ]] || diff <(echo "$want") <(echo "$got") | sed 's/^/# /'
}

test_ctrl_c() {
	local out=$W/t3 before rc
	before=$(state)
	# Ctrl-C signals the terminal's foreground group: record and command.
	recording "$out" "$W/t3.err" sleep 100
	kill -INT -- -"$rec"
	wait "$rec"
	rc=$?
	check "Ctrl-C: record exits like the command (130, got $rc)" test $rc -eq 130
	check "Ctrl-C: the command ended (pid $cmd)" test -n "$cmd" -a ! -d "/proc/$cmd"
	[[ -n $cmd && -d /proc/$cmd ]] && kill -KILL "$cmd"
	check "Ctrl-C: control files as before" same_state "$before"
	check "Ctrl-C: the trace is readable" "$CLI" check "$out"
	check "Ctrl-C: the trace holds the command's exit" exited_in "$out" "$cmd"
}

# SIGHUP (the ssh session is gone), SIGQUIT and SIGTERM to record alone:
# recording stops cleanly and the command gets the signal, as it would
# without ringtrace; record ends as the command did, by that signal (its
# wait status says so: sigrun).
test_stop_signals() {
	local sig num out before rc st
	for sig in HUP QUIT TERM; do
		num=$(kill -l "$sig")
		out=$W/sig-$sig
		before=$(state)
		sigrun -- "$CLI" record -o "$out" -- sleep 100
		started sleep
		cmd=$(pgrep -P "$rec" -x sleep)
		kill -"$sig" "$rec"
		sigrun_wait
		check "SIG$sig to record: passed on, it ends by SIG$sig as the command did ('signal $num', got '$st')" \
			test "$st" = "signal $num"
		check "SIG$sig to record: the command ended" eval '[[ -n $cmd ]] && pid_gone "$cmd"'
		[[ -n $cmd ]] && ! pid_gone "$cmd" && kill -KILL "$cmd"
		check "SIG$sig to record: no ringtraced left" test -z "$(pgrep -x ringtraced)"
		check "SIG$sig to record: control files as before" same_state "$before"
		check "SIG$sig to record: the trace is readable" "$CLI" check "$out"
	done
	# Started with SIGHUP ignored (nohup), record and command ignore it.
	before=$(state)
	as_job nohup "$CLI" record -o "$W/nohup" -- sleep 3 >/dev/null 2>"$W/nohup.err" &
	rec=$!
	for ((i = 0; i < 300; i++)); do
		[[ $(<"$RT/tracing_on") == 1 ]] && pgrep -P "$rec" -x sleep >/dev/null && break
		nap 0.1
	done
	kill -HUP "$rec"
	wait "$rec"
	rc=$?
	check "nohup record: SIGHUP ignored, the command's status (0, got $rc)" test $rc -eq 0
	check "nohup record: control files as before" same_state "$before"
}

# ---- what record changed goes back, whatever ends it -----------------------------------

# tree_state: state() and every event's filter and trigger.
tree_state() {
	state
	grep -H . "$RT"/events/*/filter "$RT"/events/*/trigger
}

# put_tree BEFORE: tree_state() BEFORE again (put_state, the predicates).
put_tree() {
	local line
	put_state "$(grep -v "^$RT/" <<<"$1")"
	grep "^$RT/" <<<"$1" | while IFS= read -r line; do
		echo "${line#*:}" >"${line%%:*}"
	done
}

# same_tree BEFORE: tree_state() prints BEFORE again; else the difference.
same_tree() {
	local now
	now=$(tree_state)
	[[ $now == "$1" ]] && return 0
	diff <(echo "$1") <(echo "$now") | head -n 12 | sed 's/^/# /'
	return 1
}

# A state record changes every part of: mode, geometry, the enabled
# events, their stacks and stack depth, a filter and a trigger, the pid
# filter, event_fork and a cgroup filter (when cgroups are there).
set_tree_state() {
	set_odd_state
	echo discard >"$RT/mode"
	echo 'id == 1' >"$RT/events/syscall_entry/filter"
	echo 'data == "rt-none"' >"$RT/events/ringtrace_marker/trigger"
	[[ -e $RT/stack_depth ]] && echo 16 >"$RT/stack_depth" &&
		echo irq_handler_entry >"$RT/set_event_stack"
	echo 0 >"$RT/event_fork"
	if [[ -d /sys/fs/cgroup ]]; then
		mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
		mkdir -p /sys/fs/cgroup/rt-keep
		stat -c %i /sys/fs/cgroup/rt-keep >"$RT/set_event_cgroup"
	fi
}

# The default state again, after set_tree_state.
clear_tree_state() {
	echo 0 >"$RT/tracing_on"
	echo none >"$RT/events/syscall_entry/filter"
	echo none >"$RT/events/ringtrace_marker/trigger"
	[[ -e $RT/stack_depth ]] &&
		echo '!irq_handler_entry' >"$RT/set_event_stack"
	echo ' ' >"$RT/set_event_pid"
	[[ -e $RT/set_event_cgroup ]] && echo ' ' >"$RT/set_event_cgroup"
	rmdir /sys/fs/cgroup/rt-keep 2>/dev/null
	echo 0 >"$RT/events/enable"
	echo 64 >"$RT/num_subbufs"
	echo 65536 >"$RT/subbuf_size"
	echo discard >"$RT/mode"
}

# pid_gone PID: PID has exited (and been reaped, or is a zombie).
pid_gone() { [[ ! -d /proc/$1 ]] || grep -qs '^State:.*Z' "/proc/$1/status"; }

# all_gone PID: every thread of PID has exited, so its files and mappings
# are released (a leader is a zombie while its other threads still run).
all_gone() {
	local t
	pid_gone "$1" || return 1
	for t in /proc/"$1"/task/*; do
		[[ $t == */$1 || ! -d $t ]] && continue
		grep -qs '^State:.*[ZX]' "$t/status" || return 1
	done
}

# started NAME: record ($rec) has turned tracing on and runs NAME.
started() {
	local name=$1
	wait_for 60 eval '[[ $(<"$RT/tracing_on") == 1 ]] && pgrep -P "$rec" -x "$name" >/dev/null'
}

# SIGKILL of record: its ringtraced, which outlives it, writes back what
# record changed, from the restore file record wrote before changing it.
test_sigkill_restores() {
	local out=$W/kr before daemon stack=() rc
	set_tree_state
	before=$(tree_state)
	[[ -e $RT/stack_depth ]] && stack=(--stack sched_switch --stack-depth 8)
	as_job "$CLI" record -o "$out" -e syscalls,irq -b 1M -m overwrite -F \
		--filter 'syscall_entry: id == getppid' "${stack[@]}" \
		-- sleep 100 >/dev/null 2>"$out.err" &
	rec=$!
	started sleep
	cmd=$(pgrep -P "$rec" -x sleep)
	daemon=$(pgrep -P "$rec" -x ringtraced)
	check "SIGKILL: record changed the control files first" \
		test "$(tree_state)" != "$before"
	"$CLI" record -o "$W/kr2" -- true >/dev/null 2>"$W/kr2.err"
	rc=$?
	check "a second record meanwhile: refused ($rc), in one line naming the first" \
		eval '[ $rc -ne 0 ] && one_line "$W/kr2.err" &&
		      grep -q "another ringtrace record (pid $rec)" "$W/kr2.err"'
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	wait_for 60 pid_gone "${daemon:-0}"
	check "SIGKILL: record's ringtraced ($daemon) stopped" \
		eval '[[ -n $daemon ]] && pid_gone "$daemon"'
	check "SIGKILL: every control file, filter and trigger as before record" \
		same_tree "$before"
	check "SIGKILL: the restore file owes nothing" test ! -s /run/ringtrace/record.restore
	check "SIGKILL: the trace's files are finished" "$CLI" check "$out"
	[[ -n $cmd ]] && kill -KILL "$cmd" 2>/dev/null
	put_tree "$before"
	clear_tree_state
}

# record --trigger drains nothing: no ringtraced outlives it; its guard
# writes back what it changed (tracing on, the trigger, mode, geometry).
test_sigkill_trigger() {
	local out=$W/krt before guard
	set_tree_state
	before=$(tree_state)
	as_job "$CLI" record -o "$out" -e sched -b 512K -m overwrite \
		--trigger 'ringtrace_marker: data == "rt-never"' \
		-- sleep 100 >/dev/null 2>"$out.err" &
	rec=$!
	started sleep
	cmd=$(pgrep -P "$rec" -x sleep)
	guard=$(pgrep -P "$rec" -x rt-guard)
	check "SIGKILL --trigger: record changed the control files first" \
		test "$(tree_state)" != "$before"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	wait_for 30 eval '[[ $(<"$RT/tracing_on") == 0 ]] && pid_gone "${guard:-0}"'
	check "SIGKILL --trigger: tracing off, every control file, filter and trigger as before" \
		same_tree "$before"
	[[ -n $cmd ]] && kill -KILL "$cmd" 2>/dev/null
	echo 0 >"$RT/tracing_on"
	put_tree "$before"
	clear_tree_state
}

# kill -9 of record and its ringtraced at once: nothing is put back until
# the next start, which does it first: the next record, or a ringtraced.
test_sigkill_all() {
	local out=$W/ka before daemon rc pid
	set_tree_state
	before=$(tree_state)
	for next in record ringtraced; do
		as_job "$CLI" record -o "$out.$next" -e syscalls -b 1M -m overwrite \
			-- sleep 100 >/dev/null 2>"$out.$next.err" &
		rec=$!
		started sleep
		cmd=$(pgrep -P "$rec" -x sleep)
		daemon=$(pgrep -P "$rec" -x ringtraced)
		kill -KILL "$rec" "$daemon"
		wait "$rec" 2>/dev/null
		kill -KILL "$cmd" 2>/dev/null
		# Not reaped by this shell: until it has exited, its mapping
		# holds the ring (num_subbufs says EBUSY).
		wait_for 30 all_gone "$daemon"
		check "kill -9 of record and ringtraced: the control files stay changed" \
			test "$(tree_state)" != "$before"
		if [[ $next == record ]]; then
			"$CLI" record -o "$out.next" -- true >/dev/null 2>"$out.next.err"
			rc=$?
		else
			"$RINGTRACED" -o "$out.next2" 2>"$out.next.err" &
			pid=$!
			# A script's "&" starts it with SIGINT ignored.
			wait_for 60 grep -q 'recording' "$out.next.err"
			kill -TERM "$pid"
			wait "$pid"
			rc=$?
		fi
		check "... the next $next runs (exit $rc)" test "$rc" -eq 0
		check "... and says it put back what the killed record left" \
			grep -q "ended without putting the control files back" "$out.next.err"
		check "... every control file, filter and trigger as before the killed record" \
			same_tree "$before"
	done
	put_tree "$before"
	clear_tree_state
}

# sigrun OPTS... -- CMD...: CMD through sigrun.py (its own job), in the
# background; rec is CMD's pid once it runs.  The suite's pythons run
# with -S: the standard library alone, no site module (a third of a
# python's start, seconds of the suite under TCG).  sigrun_wait: st is its wait
# status ("signal N[ core]" or "exit N") once it has ended (not in a
# $(...): only this shell can wait for it).
sigrun() {
	local opts=()
	while [[ $1 != -- ]]; do opts+=("$1"); shift; done
	shift
	rm -f "$W/sr.pid" "$W/sr.status"
	python3 -S "$REPO/tools/tests/sigrun.py" "${opts[@]}" "$W/sr.status" "$W/sr.pid" "$@" \
		>>"$W/sigrun.out" 2>&1 &
	srjob=$!
	# Python's first start in a boot, over 9p, can take half a minute.
	wait_for 120 test -s "$W/sr.pid"
	rec=$(<"$W/sr.pid")
}
sigrun_wait() {
	wait "$srjob"
	st=$(cat "$W/sr.status" 2>/dev/null || echo "no status")
}

# Every signal whose default is to terminate: record puts the tracer back,
# then ends by that signal (the wait status says so, not an exit code).
test_term_signals() {
	local sig num out before st want daemon core quit=
	set_odd_state
	before=$(tree_state)
	# Cores allowed (sigrun --core), into $W: SIGQUIT's would dump one,
	# but record, which failed in nothing, ends without.
	core=$(</proc/sys/kernel/core_pattern)
	echo "$W/core.%p" >/proc/sys/kernel/core_pattern
	# System-wide: a stop signal stops it, any other ends it at once
	# (SIGHUP and SIGTERM as SIGINT; with a command: test_stop_signals).
	for sig in INT QUIT USR1 USR2 ALRM RTMIN+1; do
		num=$(kill -l "$sig")
		want="signal $num"
		out=$W/ts-$num
		sigrun --core -- "$CLI" record -o "$out" -e sched
		wait_for 60 eval '[[ $(<"$RT/tracing_on") == 1 ]]'
		daemon=$(pgrep -P "$rec" -x ringtraced)
		[[ $sig == QUIT ]] && quit=$rec
		kill -s "$sig" "$rec"
		sigrun_wait
		check "SIG$sig to record: it ends by SIG$sig ('$want', got '$st')" \
			test "$st" = "$want"
		check "SIG$sig to record: its ringtraced stopped" pid_gone "${daemon:-0}"
		check "SIG$sig to record: control files as before" same_tree "$before"
		check "SIG$sig to record: the trace is readable" "$CLI" check "$out"
	done
	check "SIGQUIT to record: no core of record's, cores allowed" \
		test -n "$quit" -a ! -e "$W/core.$quit"
	echo "$core" >/proc/sys/kernel/core_pattern
	rm -f "$W"/core.*

	# One of record's own ends record at once; the command goes on.
	sigrun -- "$CLI" record -o "$W/ts-own" -e sched -- sleep 100
	started sleep
	cmd=$(pgrep -P "$rec" -x sleep)
	kill -USR1 "$rec"
	sigrun_wait
	check "SIGUSR1 to record -- sleep: record ends by it ('$st')" test "$st" = "signal 10"
	check "... sleep goes on, untraced" test -n "$cmd" -a -d "/proc/$cmd"
	check "... control files as before" same_tree "$before"
	[[ -n $cmd ]] && kill -KILL "$cmd" 2>/dev/null
	# `record ... 2>&1 | head -1`: the line that says record waits for
	# its command meets a closed pipe.
	sigrun --head1 -- "$CLI" record -o "$W/ts-pipe" -e sched -- \
		sh -c 'trap "" TERM; echo ready; exec sleep 100'
	started sleep
	cmd=$(pgrep -P "$rec" -x sleep)
	kill -TERM "$rec"
	sigrun_wait
	check "record 2>&1 | head -1: SIGPIPE ends record ('signal 13', got '$st')" \
		test "$st" = "signal 13"
	check "... control files as before" same_tree "$before"
	check "... the trace is readable" "$CLI" check "$W/ts-pipe"
	[[ -n $cmd ]] && kill -KILL "$cmd" 2>/dev/null
	put_tree "$before"
}

# counter FILE SIG: counts the SIGs it gets; FILE.ready once it counts,
# FILE.got once it got one, the count into FILE 1 s after the first (a
# second one passed on late is in: 4 x the witness's window), then exits 0.
readonly COUNTER='import os, signal, sys, time
f, sig = sys.argv[1], getattr(signal, "SIG" + sys.argv[2])
n = 0
def got(s, frame):
    global n
    n += 1
signal.signal(sig, got)
open(f + ".ready", "w").close()
while n == 0:
    time.sleep(0.05)
open(f + ".got", "w").close()
end = time.monotonic() + 1
while time.monotonic() < end:
    time.sleep(0.05)
open(f, "w").write(str(n))'

# count_once DESC FILE: the command counted exactly one; record, which
# waited for it, exits 0 as it did; control files as before.
count_once() {
	local st
	sigrun_wait
	check "$1: the command got it once (got $(cat "$2" 2>/dev/null || echo none))" \
		test "$(cat "$2" 2>/dev/null)" = 1
	check "$1: record exits as the command did ('exit 0', got '$st')" \
		test "$st" = "exit 0"
	check "$1: control files as before" same_tree "$before"
}

# A stop signal reaches the command once, however it was sent: to record
# alone (passed on), to the process group (`kill -- -PGID`), to every
# process of the cgroup in turn (systemd's KillMode=control-group), or
# typed at the terminal (Ctrl-C).  For the group's and the cgroup's,
# record is stopped (SIGSTOP) until the command has taken its signal: a
# second one sent then would be counted, where one sent at once may merge
# with the first, still pending.
test_relay_once() {
	local before f pids p job
	set_odd_state
	before=$(tree_state)

	f=$W/ro-alone
	sigrun -- "$CLI" record -o "$f.trace" -e sched -- python3 -S -c "$COUNTER" "$f" TERM
	wait_for 120 test -e "$f.ready"
	kill -TERM "$rec"
	count_once "SIGTERM to record alone" "$f"

	f=$W/ro-group
	sigrun -- "$CLI" record -o "$f.trace" -e sched -- python3 -S -c "$COUNTER" "$f" TERM
	wait_for 120 test -e "$f.ready"
	kill -STOP "$rec"
	kill -TERM -- -"$rec"
	wait_for 10 test -e "$f.got"
	kill -CONT "$rec"
	count_once "SIGTERM to record's process group" "$f"

	f=$W/ro-pty
	sigrun --pty --ctrl-c-when "$f.ready" -- "$CLI" record -o "$f.trace" -e sched -- \
		python3 -S -c "$COUNTER" "$f" INT
	count_once "Ctrl-C at the terminal" "$f"

	if [[ -d /sys/fs/cgroup ]]; then
		mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
		mkdir -p /sys/fs/cgroup/rt-unit
		f=$W/ro-cgroup
		rm -f "$W/sr.pid"
		(echo "$BASHPID" >/sys/fs/cgroup/rt-unit/cgroup.procs &&
			exec python3 -S "$REPO/tools/tests/sigrun.py" "$W/sr.status" "$W/sr.pid" \
				"$CLI" record -o "$f.trace" -e sched -- python3 -S -c "$COUNTER" "$f" TERM) \
			>>"$W/sigrun.out" 2>&1 &
		srjob=$!
		wait_for 120 test -e "$f.ready"
		rec=$(<"$W/sr.pid")
		# systemd's order: the main process, then the others.
		kill -STOP "$rec"
		kill -TERM "$rec"
		for p in $(</sys/fs/cgroup/rt-unit/cgroup.procs); do
			[[ $p != "$srjob" && $p != "$rec" ]] && kill -TERM "$p"
		done
		wait_for 10 test -e "$f.got"
		kill -CONT "$rec"
		sigrun_wait
		check "SIGTERM to each process of record's cgroup: the command got it once (got $(cat "$f" 2>/dev/null || echo none))" \
			test "$(cat "$f" 2>/dev/null)" = 1
		check "... control files as before" same_tree "$before"
		rmdir /sys/fs/cgroup/rt-unit
	fi
	put_tree "$before"
}

# ---- what pkill, a slow start, an early kill and the restore file do -----------------

# pkill -f 'ringtrace record' (kill $(pgrep -f ...), kill $(pidof
# ringtrace)) signals every process that reads so, from one sender: the
# witness must not, or it reports the signal as its group's and the
# command never gets it.
test_pkill_once() {
	local before f pids
	set_odd_state
	before=$(tree_state)
	f=$W/pk
	sigrun -- "$CLI" record -o "$f.trace" -e sched -- python3 -S -c "$COUNTER" "$f" TERM
	wait_for 120 test -e "$f.ready"
	# Anchored: sigrun.py's command line holds record's too.
	pids=$(pgrep -f "^$CLI record -o $f.trace" | tr '\n' ' ')
	check "pgrep -f 'ringtrace record' lists record alone ($rec; got ${pids% })" \
		test "${pids% }" = "$rec"
	pids=$(pidof ringtrace)
	check "pidof ringtrace lists record alone ($rec; got $pids)" test "$pids" = "$rec"
	pkill -TERM -f "^$CLI record -o $f.trace"
	# Never passed on, it would wait for ever: ended, it counted none.
	wait_for 10 test -e "$f.got" || kill -KILL "$(pgrep -P "$rec" -x python3)"
	count_once "pkill -f 'ringtrace record'" "$f"
	put_tree "$before"
}

# A stop signal while record sets up (here a ringtraced slow to start)
# was meant for a command that is not running yet: it never runs, and
# record ends by the signal.  Sent to record alone, or to the group as
# Ctrl-C is (which ends the held command too: record still ends by it).
test_start_stop() {
	local slow=$W/rt-slow-daemon before how
	printf '#!/bin/sh\n: >"%s/slow.waiting"\nwhile [ ! -e "%s/slow.go" ]; do sleep 0.05; done\nexec %q "$@"\n' \
		"$W" "$W" "$RINGTRACED" >"$slow"
	chmod +x "$slow"
	before=$(state)
	for how in alone group; do
		rm -f "$W/slow.waiting" "$W/slow.go" "$W/ss.ran"
		sigrun -- env RINGTRACED="$slow" "$CLI" record -o "$W/ss-$how" -e sched -- \
			sh -c ": >'$W/ss.ran'; exec sleep 5"
		wait_for 60 test -e "$W/slow.waiting"
		if [[ $how == alone ]]; then
			kill -INT "$rec"
		else
			kill -INT -- -"$rec"
		fi
		: >"$W/slow.go"
		sigrun_wait
		check "SIGINT to record ($how) while it starts: it ends by it ('signal 2', got '$st')" \
			test "$st" = "signal 2"
		check "... the command never ran" test ! -e "$W/ss.ran"
		check "... control files as before" same_state "$before"
	done
}

# record killed the moment it started ringtraced, before ringtraced asked
# who its parent is or blocked its signals (pdeath-delay.so holds it
# before its main()): the SIGTERM of PR_SET_PDEATHSIG waits for it, it
# stops, and puts back what record changed.
test_early_kill() {
	local out=$W/ek before daemon
	set_tree_state
	before=$(tree_state)
	rm -f "$W/ek.pids"
	LD_PRELOAD=$REPO/tools/tests/pdeath-delay.so RT_START_DELAY_LOG=$W/ek.pids \
		RT_PDEATH_DELAY_MS=2000 as_job "$CLI" record -o "$out" -e syscalls \
		-b 1M -m overwrite -- sleep 100 >/dev/null 2>"$out.err" &
	rec=$!
	wait_for 60 test -s "$W/ek.pids"
	daemon=$(head -n 1 "$W/ek.pids")
	check "record changed the control files before it started ringtraced" \
		test "$(tree_state)" != "$before"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	wait_for 60 pid_gone "${daemon:-0}"
	check "record killed before its ringtraced ($daemon) began: that stopped" \
		eval '[[ -n $daemon ]] && pid_gone "$daemon"'
	check "... and put every control file, filter and trigger back" same_tree "$before"
	check "... the restore file owes nothing" test ! -s /run/ringtrace/record.restore
	pkill -KILL -f "^sleep 100$"
	echo 0 >"$RT/tracing_on"
	put_tree "$before"
	clear_tree_state
}

# The restore file: someone else's refused and left as it is; a directory
# others may write refused; none to be made (read-only) costs the restore
# after SIGKILL alone.  After kill -9 of record and ringtraced, the next
# record puts back what still reads as record set it, and leaves what was
# set by hand since.
test_restore_file() {
	local before rc f=/run/ringtrace/record.restore daemon nb
	before=$(state)
	mkdir -p /run/ringtrace
	chmod 0700 /run/ringtrace
	printf 'precious\n' >"$f"
	"$CLI" record -o "$W/rf1" -- true >/dev/null 2>"$W/rf1.err"
	rc=$?
	check "someone else's file as the restore file: record refuses ($rc) in one line" \
		eval '[ $rc -ne 0 ] && one_line "$W/rf1.err" && grep -q "not a restore file" "$W/rf1.err"'
	check "... the file left as it is" test "$(<"$f")" = precious
	check "... control files as before" same_state "$before"
	rm -f "$f"
	chmod 0777 /run/ringtrace
	"$CLI" record -o "$W/rf2" -- true >/dev/null 2>"$W/rf2.err"
	rc=$?
	chmod 0700 /run/ringtrace
	check "/run/ringtrace writable by others: record refuses ($rc) in one line" \
		eval '[ $rc -ne 0 ] && one_line "$W/rf2.err" && grep -q "writable by others" "$W/rf2.err"'
	mount -t tmpfs -o ro,mode=0700 rt-ro /run/ringtrace
	"$CLI" record -o "$W/rf3" -- true >/dev/null 2>"$W/rf3.err"
	rc=$?
	umount /run/ringtrace
	check "/run/ringtrace read-only: record records (exit $rc)" test $rc -eq 0
	check "... saying there is no restore after SIGKILL" \
		grep -q "no restore after SIGKILL" "$W/rf3.err"
	check "... control files as before" same_state "$before"

	as_job "$CLI" record -o "$W/rf4" -e syscalls -b 1M -- sleep 100 >/dev/null 2>"$W/rf4.err" &
	rec=$!
	started sleep
	cmd=$(pgrep -P "$rec" -x sleep)
	daemon=$(pgrep -P "$rec" -x ringtraced)
	kill -KILL "$rec" "$daemon"
	wait "$rec" 2>/dev/null
	kill -KILL "$cmd" 2>/dev/null
	# ringtraced's mapping holds the ring until it has exited.
	wait_for 30 all_gone "$daemon"
	# By hand since: tracing off, another count of sub-buffers.
	echo 0 >"$RT/tracing_on"
	nb=$(($(<"$RT/num_subbufs") * 2))
	echo "$nb" >"$RT/num_subbufs"
	"$CLI" record -o "$W/rf5" -- true >/dev/null 2>"$W/rf5.err"
	check "the next record: num_subbufs set by hand since stays ($nb, got $(<"$RT/num_subbufs"))" \
		test "$(<"$RT/num_subbufs")" = "$nb"
	check "... and it says so" grep -q "num_subbufs changed since ringtrace record set it" "$W/rf5.err"
	check "... every other control file as before the killed record" \
		test "$(grep -v '^num_subbufs' <<<"$before")" = "$(state | grep -v '^num_subbufs')"
	put_state "$before"
}

# freeze PID / thaw: PID in a frozen cgroup (cgroup v2's freezer: a
# job-control SIGCONT does not wake it), then out again.
freeze() {
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	mkdir -p /sys/fs/cgroup/rt-freeze
	echo "$1" >/sys/fs/cgroup/rt-freeze/cgroup.procs
	echo 1 >/sys/fs/cgroup/rt-freeze/cgroup.freeze
}
thaw() {
	local p
	echo 0 >/sys/fs/cgroup/rt-freeze/cgroup.freeze
	for p in $(</sys/fs/cgroup/rt-freeze/cgroup.procs); do
		echo "$p" >/sys/fs/cgroup/cgroup.procs
	done
	rmdir /sys/fs/cgroup/rt-freeze
}

# The children that outlive a SIGKILL of record a moment -- the --live
# view, the --trigger guard -- do not keep its dynamic probes: frozen,
# the probe is gone all the same.  The guard, a background job, puts the
# tracer back on a terminal set `stty tostop` (a subreaper in the session
# keeps its group from being orphaned, as a session manager would), and
# pgrep -f does not list it.  record's ringtraced, a background job too,
# prints its summary there.
test_kill_children() {
	local before func live guard lead pids
	func=$(grep -oE " (do_sys_openat2|do_sys_open)$" /proc/kallsyms | head -n 1 | tr -d ' ')
	before=$(tree_state)
	as_job "$CLI" record --live -o "$W/kc1" -e "sched,kprobe:$func" -- sleep 100 \
		>/dev/null 2>"$W/kc1.err" &
	rec=$!
	started sleep
	live=$(pgrep -P "$rec" -x ringtrace)
	check "record --live -e kprobe:$func: the probe is there" grep -q "kprobe_$func" "$RT/probe_events"
	freeze "${live:-0}"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	wait_for 10 eval '! grep -q "kprobe_$func" "$RT/probe_events"'
	check "SIGKILL of record --live: the probe is gone, the view (frozen) still there" \
		eval '! grep -q "kprobe_$func" "$RT/probe_events" && [[ -n $live ]] && ! pid_gone "$live"'
	thaw
	wait_for 60 eval 'pid_gone "${live:-0}" && [[ -z $(pgrep -x ringtraced) ]]'
	pkill -KILL -f "^sleep 100$"
	echo 0 >"$RT/tracing_on"
	put_tree "$before"

	# A shell-like session leader, a subreaper, on a stty tostop terminal.
	sigrun --pty --tostop -- python3 -S -c 'import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
if os.fork() == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
time.sleep(300)' "$CLI" record -o "$W/kc2" -m overwrite -e "sched,kprobe:$func" \
		--trigger 'ringtrace_marker: data == "rt-never"' -- sleep 100
	lead=$rec
	wait_for 60 eval 'rec=$(pgrep -P "$lead" -x ringtrace) && pgrep -P "$rec" -x sleep >/dev/null &&
			  [[ $(<"$RT/tracing_on") == 1 ]]'
	guard=$(pgrep -P "$rec" -x rt-guard)
	pids=$(pgrep -f "^$CLI record -o $W/kc2" | tr '\n' ' ')
	check "record --trigger: pgrep -f 'ringtrace record' lists record alone, not its guard ($rec; got ${pids% })" \
		test "${pids% }" = "$rec"
	freeze "${guard:-0}"
	kill -KILL "$rec"
	wait_for 10 eval '! grep -q "kprobe_$func" "$RT/probe_events"'
	check "SIGKILL of record --trigger: the probe is gone, the guard (frozen) still there" \
		eval '! grep -q "kprobe_$func" "$RT/probe_events" && [[ -n $guard ]] && ! pid_gone "$guard"'
	thaw
	wait_for 30 pid_gone "${guard:-0}"
	check "... the guard put the tracer back on a stty tostop terminal (tracing off, everything as before)" \
		eval 'pid_gone "${guard:-0}" && same_tree "$before"'
	[[ -n $guard ]] && ! pid_gone "$guard" && kill -KILL "$guard"
	pkill -KILL -f "^sleep 100$"
	kill -KILL "$lead"
	sigrun_wait
	echo 0 >"$RT/tracing_on"
	put_tree "$before"

	sigrun --pty --tostop -- "$CLI" record -o "$W/kc3" -e sched -- true
	wait_for 60 test -s "$W/sr.status"
	st=$(cat "$W/sr.status" 2>/dev/null)
	check "record on a stty tostop terminal: its ringtraced's summary does not stop it ('exit 0', got '${st:-still running after 60 s}')" \
		test "$st" = "exit 0"
	if [[ -z $st ]]; then
		pkill -KILL -x ringtraced
		kill -KILL "$rec"
	fi
	sigrun_wait
	echo 0 >"$RT/tracing_on"
	put_tree "$before"
}

# --live's view is a child that the kernel ends if record is killed
# (PR_SET_PDEATHSIG); record may be killed before the child asked for
# that: the child then sees a new parent and ends by itself.  The window,
# a few instructions wide, is widened by pdeath-delay.so.
test_live_orphan() {
	local out=$W/lo pids live
	rm -f "$W/lo.pids"
	LD_PRELOAD=$REPO/tools/tests/pdeath-delay.so RT_PDEATH_LOG=$W/lo.pids \
		as_job "$CLI" record --live -o "$out" -e sched -- sleep 100 \
		>/dev/null 2>"$out.err" &
	rec=$!
	# The daemon's child asks first, the live view's second.
	wait_for 60 eval '[[ $(wc -l 2>/dev/null <"$W/lo.pids") -ge 2 ]]'
	live=$(sed -n 2p "$W/lo.pids")
	cmd=$(pgrep -P "$rec" -x sleep)
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null
	check "record killed before --live's view asked for PDEATHSIG: the view ($live) was running" \
		test -n "$live" -a -d "/proc/$live"
	wait_for 20 pid_gone "${live:-0}"
	check "... it ended by itself" pid_gone "${live:-0}"
	[[ -n $live ]] && ! pid_gone "$live" && kill -KILL "$live"
	[[ -n $cmd ]] && kill -KILL "$cmd" 2>/dev/null
	wait_for 60 eval '[[ -z $(pgrep -x ringtraced) ]]'
	echo 0 >"$RT/tracing_on"
}

# A ringtraced that never turns tracing on: record gives up after the
# start timeout, stops and reaps it before it restores the control files.
# The timeout is RINGTRACE_START_TIMEOUT's 3 s here, not the default's
# 30 s of waiting; the default is checked against what cli.rst says.
test_start_timeout() {
	local before rc stuck=$W/rt-stuck-daemon t0 ms def
	printf '#!/bin/sh\nkill -STOP $$\nexec %q "$@"\n' "$RINGTRACED" >"$stuck"
	chmod +x "$stuck"
	before=$(state)
	t0=${EPOCHREALTIME/./}
	RINGTRACE_START_TIMEOUT=3 RINGTRACED=$stuck "$CLI" record -o "$W/stuck" -- true \
		>/dev/null 2>"$W/stuck.err"
	rc=$?
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	check "ringtraced stuck at start: record fails ($rc)" test $rc -ne 0
	check "ringtraced stuck at start: says so" \
		grep -q 'did not start tracing within 3 s' "$W/stuck.err"
	check "ringtraced stuck at start: record gave up after the 3 s, not 30 ($ms ms)" \
		test "$ms" -ge 3000 -a "$ms" -lt 30000
	check "ringtraced stuck at start: it was stopped and reaped" \
		test -z "$(pgrep -f "$stuck")"
	pkill -KILL -f "$stuck"
	check "ringtraced stuck at start: control files as before" same_state "$before"
	def=$("$CLI" record --help | sed -n 's/.*(1 to 3600, default \([0-9]*\)).*/\1/p')
	check "the start timeout's default (--help: ${def:-none} s) is cli.rst's" \
		grep -q "the ${def:-none}-second start timeout" "$REPO/Documentation/ringtrace/cli.rst"
	refused "RINGTRACE_START_TIMEOUT=0" "RINGTRACE_START_TIMEOUT.*from 1 to 3600" \
		env RINGTRACE_START_TIMEOUT=0 "$CLI" record -o "$W/stuck0" -- true
}

test_failing_cmd() {
	local before rc
	before=$(state)
	"$CLI" record -o "$W/t4" -- false >/dev/null 2>"$W/t4.err"
	rc=$?
	check "a failing command: record exits 1 (got $rc)" test $rc -eq 1
	check "a failing command: control files as before" same_state "$before"
	"$CLI" record -o "$W/t5" -- /nonexistent/cmd >/dev/null 2>"$W/t5.err"
	rc=$?
	check "a command that cannot run: non-zero exit ($rc)" test $rc -ne 0
	check "a command that cannot run: one line" one_line "$W/t5.err"
	check "a command that cannot run: says why" grep -q 'No such file' "$W/t5.err"
	check "a command that cannot run: control files as before" same_state "$before"
}

# refused DESC CHECK-PATTERN ARGS...: one line matching, non-zero, no change.
refused() {
	local desc=$1 pat=$2 before rc
	shift 2
	before=$(state)
	"$@" >/dev/null 2>"$W/err"
	rc=$?
	check "$desc: non-zero exit ($rc)" test $rc -ne 0
	check "$desc: one line" one_line "$W/err"
	check "$desc: says '$pat'" grep -qiE -- "$pat" "$W/err"
	check "$desc: control files as before" same_state "$before"
}

test_errors() {
	refused "unknown event" "sched_switch" \
		"$CLI" record -e sched_swich -o "$W/e1" -- true
	check "unknown event: no trace directory" test ! -e "$W/e1"
	refused "not root" "root" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CLI" record -o "$W/e2" -- true
	refused "existing -o" "exists" "$CLI" record -o "$W" -- true
	refused "bad -m" "discard or overwrite" "$CLI" record -m fast -- true
	refused "bad -b" "size" "$CLI" record -b 12Q -- true
	refused "huge -b" "memory|Cannot allocate" \
		"$CLI" record -b 1T -o "$W/e3" -- true
	# The command runs while record records: it sees the geometry.
	# Its two numbers: record's stdout has ringtraced's summary after them.
	"$CLI" record -b 4M -o "$W/e5" -- cat "$RT/num_subbufs" "$RT/subbuf_size" >"$W/e5.out" 2>"$W/e5.err"
	check "-b 4M: the default geometry, 64 x 64 KiB ($(head -n 2 "$W/e5.out" | tr '\n' ' '))" \
		test "$(head -n 2 "$W/e5.out" | tr '\n' ' ')" = "64 65536 "
	"$CLI" record -b 64K -o "$W/e6" -- cat "$RT/num_subbufs" "$RT/subbuf_size" >"$W/e6.out" 2>"$W/e6.err"
	check "-b 64K: 16 x 4 KiB ($(head -n 2 "$W/e6.out" | tr '\n' ' '))" \
		test "$(head -n 2 "$W/e6.out" | tr '\n' ' ')" = "16 4096 "
	setup "rmmod ringtrace" rmmod ringtrace
	BUILD=$W/nowhere "$CLI" record -o "$W/e4" -- true >/dev/null 2>"$W/err"
	check "no module for this kernel: non-zero exit" test $? -ne 0
	check "no module for this kernel: one line" one_line "$W/err"
	check "no module for this kernel: names the kernel" grep -q "$KVER" "$W/err"
	check "no module for this kernel: nothing loaded" \
		test -z "$(grep '^ringtrace ' /proc/modules)"
	setup "insmod ringtrace.ko again" insmod "$BUILD/$KVER/ringtrace.ko"
}

# ---- kernel stacks ----------------------------------------------------------------

# off_cpu_matches FOLDED TIMES COMM PATTERN: the --off-cpu weight of COMM's
# stacks through a frame matching PATTERN is within 10 % of the time COMM
# said it was blocked.
off_cpu_matches() {
	local want got
	want=$(awk -v c="$3" '$1 == c { print $3 }' "$2")
	got=$(awk -v c="$3" -v p="$4" 'index($0, c ";") == 1 && $0 ~ p \
		{ s += $NF } END { printf "%d", s }' "$1")
	note "$3: off-CPU through $4: $got ns, blocked $want ns"
	[[ -n $want && -n $got ]] && ((want > 0)) &&
		((got * 10 >= want * 9 && got * 10 <= want * 11))
}

# chrome_stacks JSON: "comm;root;...;leaf" for each stack instant of a
# chrome-json export (comm: its thread's last name); fails if an "sf" or
# a "parent" names no frame of stackFrames.
chrome_stacks() {
	python3 -S -c '
import json, sys
doc = json.load(open(sys.argv[1]))
frames = doc.get("stackFrames", {})
names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
bad = [k for k, f in frames.items() if "parent" in f and f["parent"] not in frames]
for e in doc["traceEvents"]:
    if e.get("cat") != "stack":
        continue
    sf, out = e.get("sf"), []
    if str(sf) not in frames:
        bad.append(sf)
        continue
    while sf is not None:
        out.append(frames[str(sf)]["name"])
        sf = frames[str(sf)].get("parent")
    print(";".join([names.get(e["tid"], "?")] + out[::-1]))
if bad:
    sys.exit("frames that are not in stackFrames: %r" % bad[:5])
' "$1"
}

test_stacks() {
	local out=$W/s1 before ctf tid n
	before=$(state)
	# The shell adds itself to the pid filter at the end: it waits for an
	# RCU grace period in ringtrace.ko (rtr_pid_filter_publish()).
	"$CLI" record -F --stack sched_switch -o "$out" -- \
		sh -c "$SWL 3 100 >$W/s1.times && echo \$\$ >>$RT/set_event_pid" \
		>"$W/s1.out" 2>"$W/s1.err"
	check "record --stack sched_switch exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/s1.err"
	check "record --stack: control files as before" same_state "$before"
	check "the trace keeps the kernel's symbols, hidden" \
		test -s "$out/.ringtrace-ksyms.zst"
	"$CLI" report --folded "$out" >"$W/s1.folded" 2>"$W/s1.folded.err"
	check "report --folded exits 0" test $? -eq 0
	check "st-sleep's switch-out stack: schedule, do_nanosleep or hrtimer_nanosleep" \
		grep -qE '^st-sleep;.*;(do_nanosleep|hrtimer_nanosleep);.*schedule' "$W/s1.folded"
	check "st-pipe's switch-out stack: pipe_read, schedule" \
		grep -qE '^st-pipe;.*;pipe_read;.*schedule' "$W/s1.folded"
	check "st-futex's switch-out stack: futex_wait, schedule" \
		grep -qE '^st-futex;.*;futex_wait[a-z_]*;.*schedule' "$W/s1.folded"
	"$CLI" report --folded --off-cpu "$out" >"$W/s1.offcpu" 2>/dev/null
	check "report --folded --off-cpu exits 0" test $? -eq 0
	check "off-CPU in nanosleep = st-sleep's sleeps (10 %)" off_cpu_matches \
		"$W/s1.offcpu" "$W/s1.times" st-sleep ';(do_nanosleep|hrtimer_nanosleep);'
	check "off-CPU in pipe_read = st-pipe's waits (10 %)" off_cpu_matches \
		"$W/s1.offcpu" "$W/s1.times" st-pipe ';pipe_read;'
	check "off-CPU in futex_wait = st-futex's waits (10 %)" off_cpu_matches \
		"$W/s1.offcpu" "$W/s1.times" st-futex ';futex_wait[a-z_]*;'
	"$CLI" report -e sched_switch "$out" >"$W/s1.report" 2>/dev/null
	check "report prints frames under their event: '    schedule+0xOFF'" \
		grep -qE '^    schedule\+0x[0-9a-f]+$' "$W/s1.report"
	check "a frame of a module: '    function+0xOFF [ringtrace]'" \
		grep -qE '^    rtr_[a-z_]+\+0x[0-9a-f]+ \[ringtrace\]$' "$W/s1.report"
	# The exports carry the stacks (Documentation/ringtrace/viewers.rst).
	"$CLI" export -f chrome-json -o "$W/s1.json" "$out" 2>/dev/null
	check "export -f chrome-json of a trace with stacks exits 0" test $? -eq 0
	chrome_stacks "$W/s1.json" >"$W/s1.cjstacks"
	check "chrome-json: every stack's sf, every frame's parent, is in stackFrames" \
		test $? -eq 0
	check "chrome-json: st-sleep's stack instants through nanosleep to schedule" \
		grep -qE '^st-sleep;.*;(do_nanosleep|hrtimer_nanosleep);.*schedule' "$W/s1.cjstacks"
	"$CLI" export -f perfetto -o "$W/s1.pftrace" "$out" 2>/dev/null
	check "export -f perfetto of a trace with stacks exits 0" test $? -eq 0
	python3 -S "$REPO/tools/tests/perfetto_stacks.py" "$W/s1.pftrace" >"$W/s1.pfstacks"
	check "perfetto: each PerfSample's callstack resolves through the interned data" \
		test $? -eq 0
	tid=$(awk '$1 == "st-sleep" { print $2 }' "$W/s1.times")
	check "perfetto: st-sleep's samples through nanosleep to schedule, interned" \
		grep -qE "^[0-9]+ [0-9]+ [0-9]+ $tid [23] .*(do_nanosleep|hrtimer_nanosleep) \[kernel\.kallsyms\];.*schedule \[kernel\.kallsyms\]" \
		"$W/s1.pfstacks"
	n=$(wc -l <"$W/s1.cjstacks")
	note "stacks: $n in chrome-json, $(wc -l <"$W/s1.pfstacks") in perfetto"
	check "perfetto has a PerfSample for each stack instant of chrome-json" \
		test "$n" -gt 0 -a "$(wc -l <"$W/s1.pfstacks")" -eq "$n"
	ctf=$(unpacked "$out") || { check "unpack s1" false; return; }
	babeltrace2 "$ctf" >"$W/s1.bt" 2>&1
	check "babeltrace2 reads a trace with stacks (interned: stack_def)" \
		grep -qE 'stack_def: .*\{ kind = 0, flags = 0, depth = [0-9]+, ips = \[' "$W/s1.bt"
	check "babeltrace2 reads a trace with stacks (interned: stack_ref)" \
		grep -qE 'stack_ref: .*\{ kernel = [1-9][0-9]*, user = 0 \}' "$W/s1.bt"
	cp -r "$out" "${RT_VM_OUT:-$W}/stack-trace" 2>/dev/null
}

test_stack_errors() {
	local before
	refused "--stack with an unknown event" "sched_swich" \
		"$CLI" record --stack sched_swich -o "$W/se1" -- true
	refused "--stack of an event no tracepoint writes" "cannot carry a stack" \
		"$CLI" record --stack ringtrace_statedump_task -o "$W/se2" -- true
	refused "--stack-depth too deep" "depth from 1 to 64" \
		"$CLI" record --stack sched_switch --stack-depth 65 -o "$W/se3" -- true
	before=$(state)
	check "set_event_stack refuses the state dump" \
		sh -c "! echo ringtrace_statedump_task >$RT/set_event_stack"
	check "set_event_stack refuses an unknown name" \
		sh -c "! echo 'sched_switch nosuch' >$RT/set_event_stack"
	check "stack_depth refuses 65 and 0" \
		sh -c "! echo 65 >$RT/stack_depth && ! echo 0 >$RT/stack_depth"
	check "refused writes change nothing" same_state "$before"
}

# ---- list, report's filters, --stat: against babeltrace2 --------------------------

test_list() {
	"$CLI" list >"$W/list" 2>&1
	check "list exits 0" test $? -eq 0
	# Every event of the module's own list is in ringtrace list.
	local name missing=0
	while read -r _ name; do
		grep -q "^$name" "$W/list" || { note "list lacks $name"; missing=1; }
	done <"$RT/available_events"
	check "list names every available event" test $missing -eq 0
	"$CLI" list 'sched_sw*' >"$W/list2"
	check "list PATTERN: sched_switch and its prev_tid field" \
		grep -q 'prev_tid' "$W/list2"
	check "list PATTERN: no other event" test "$(grep -c '^sched_wakeup' "$W/list2")" -eq 0
	echo sched_switch >"$RT/set_event"
	check "list shows which events are enabled" \
		grep -qE '^sched_switch.*enabled' <("$CLI" list sched_switch)
}

# bt_counts CTF COUNTS CPU1: babeltrace2's text read once: its events per
# name into COUNTS ("name count" lines, sorted), the number of those on
# CPU 1 (cpu_id = 1) into CPU1.
bt_counts() {
	babeltrace2 "$1" | awk -v cpu1="$3" '
		/^\[[^]]*\] \([^)]*\) [^ ]+ [a-z_0-9]+: / { n[substr($4, 1, length($4) - 1)]++ }
		/cpu_id = 1[ ,}]/ { c++ }
		END {
			for (e in n)
				print e, n[e]
			print c + 0 >cpu1
		}' | sort >"$2"
}

test_filters() {
	local out=$W/t1 ctf name count got total bt e
	ctf=$(unpacked "$out") || { check "unpack t1" false; return; }
	bt_counts "$ctf" "$W/bt.counts" "$W/bt.cpu1"
	check "babeltrace2 reads the recorded trace" test -s "$W/bt.counts"
	# --stat's events by name: the same totals as babeltrace2's.
	"$CLI" report --stat "$out" 2>/dev/null |
		awk '/^events by name/ { on = 1; next } on && NF == 0 { exit }
		     on && $1 != "event" { print $1, $2 }' | sort >"$W/stat.counts"
	check "--stat's events per name equal babeltrace2's" \
		same_lines "$W/bt.counts" "$W/stat.counts"
	# -e: the lines of one event, as many as babeltrace2 has.
	for e in sched_switch syscall_entry; do
		"$CLI" report -e "$e" "$out" 2>/dev/null | events_only >"$W/e.$e"
		got=$(grep -c " $e:" "$W/e.$e")
		total=$(wc -l <"$W/e.$e")
		count=$(awk -v e="$e" '$1 == e { print $2 }' "$W/bt.counts")
		check "report -e $e: $got lines, babeltrace2 $count" \
			test "$got" -eq "${count:-0}" -a "$got" -gt 0
		check "report -e $e: only $e ($total lines)" test "$got" -eq "$total"
	done
	# --cpu: the events of CPU 1 are babeltrace2's with cpu_id = 1.
	got=$("$CLI" report --cpu 1 "$out" 2>/dev/null | events_only | wc -l)
	count=$(<"$W/bt.cpu1")
	check "report --cpu 1: $got events, babeltrace2 $count" test "$got" -eq "$count" -a "$got" -gt 0
	# --tid and --comm select one thread's lines.
	read -r tid _ comm < <(grep ' rtw-t1$' "$W/tids1")
	got=$("$CLI" report --tid "$tid" -e syscall_entry "$out" 2>/dev/null | grep -c 'getppid(')
	check "report --tid $tid: $N getppid entries ($got)" test "$got" -eq $N
	"$CLI" report --comm rtw-t1 -e syscall_entry "$out" 2>/dev/null | events_only >"$W/comm"
	got=$(grep -vc ' rtw-t1-' "$W/comm")
	check "report --comm rtw-t1: lines ($(wc -l <"$W/comm")), no other comm ($got)" \
		test "$got" -eq 0 -a "$(wc -l <"$W/comm")" -gt $N
	# --begin/--end: exactly the lines between two of report's timestamps.
	"$CLI" report "$out" 2>/dev/null | events_only >"$W/all"
	total=$(wc -l <"$W/all")
	local b e_ts
	b=$(sed -n "$((total / 3))p" "$W/all" | sed -E 's/^\[([0-9.]+)\].*/\1/')
	e_ts=$(sed -n "$((2 * total / 3))p" "$W/all" | sed -E 's/^\[([0-9.]+)\].*/\1/')
	awk -v b="$b" -v e="$e_ts" '{ t = substr($1, 2) + 0 } t >= b + 0 && t <= e + 0' \
		"$W/all" >"$W/range.want"
	"$CLI" report --begin "$b" --end "$e_ts" "$out" 2>/dev/null | events_only >"$W/range.got"
	check "report --begin $b --end $e_ts: the lines between ($(wc -l <"$W/range.got") of $total)" \
		same_lines "$W/range.want" "$W/range.got"
	got=$("$CLI" report --begin +0s "$out" 2>/dev/null | events_only | wc -l)
	check "report --begin +0s: every line ($got)" test "$got" -eq "$total" -a "$total" -gt 0
	# +0s is the first event's time: the lines of that instant.
	b=$(sed -n '1s/^\[\([0-9.]*\)\].*/\1/p' "$W/all")
	awk -v t="[$b]" '$1 == t' "$W/all" >"$W/first.want"
	"$CLI" report --end +0s "$out" 2>/dev/null | events_only >"$W/first.got"
	check "report --end +0s: the first instant's lines only ($(wc -l <"$W/first.got"), want $(wc -l <"$W/first.want") at $b)" \
		same_lines "$W/first.want" "$W/first.got"
	"$CLI" report --cpu 1x "$out" >/dev/null 2>"$W/err"
	check "report --cpu 1x: usage error (exit 2)" test $? -eq 2
	check "report --cpu 1x: one line" one_line "$W/err"
}

# ---- snapshot ------------------------------------------------------------------------

test_snapshot() {
	local out=$W/snap writer before first last n gaps line i
	echo 0 >"$RT/tracing_on"
	echo overwrite >"$RT/mode"
	# 16 KiB a CPU: a thousand markers wrap it (16 x 16 KiB took 15000,
	# which the shell's writer and report's reader took 20 s over).
	echo 4 >"$RT/num_subbufs"
	echo 4096 >"$RT/subbuf_size"
	echo 0 >"$RT/events/enable"
	echo 1 >"$RT/clear"
	echo 1 >"$RT/tracing_on"
	# One writer on CPU 0, numbered markers, as fast as a shell goes.
	taskset -c 0 bash -c 'i=0; while :; do echo "snap $i" >'"$RT"'/marker; i=$((i+1)); done' &
	writer=$!
	# Until the ring has wrapped (overwrite counted losses): then it holds
	# only the newest markers.  Slow kernels (KASAN) take longer.  The
	# shell's own reads: a grep every 100 ms would race the writer for
	# the CPU.
	for ((i = 0; i < 300; i++)); do
		while read -r line; do
			[[ $line == "cpu0 "* ]] && break
		done <"$RT/stats"
		[[ $line =~ " lost_overrun="[1-9] ]] && break
		nap 0.1
	done
	[[ $line =~ " written="([0-9]+) ]] && before=${BASH_REMATCH[1]}
	"$CLI" snapshot -o "$out" >/dev/null 2>"$W/snap.err"
	check "snapshot exits 0" test $? -eq 0
	check "tracing goes on after snapshot" test "$(<"$RT/tracing_on")" = 1
	kill "$writer"
	wait "$writer" 2>/dev/null
	# The marker's text, "snap N" or "snap N\n", by awk's index(): a
	# regex after a leading .* backtracks over every line.
	"$CLI" report "$out" 2>/dev/null | awk 'index($0, " ringtrace_marker: ") &&
		(i = index($0, "\"snap ")) { s = substr($0, i + 6); sub(/[^0-9].*/, "", s); print s }' \
		>"$W/snap.seq"
	n=$(wc -l <"$W/snap.seq")
	first=$(head -1 "$W/snap.seq")
	last=$(tail -1 "$W/snap.seq")
	note "snapshot: $n markers, snap ${first:-?}..${last:-?}; cpu0 had written ${before:-?} events before"
	check "snapshot holds markers" test "$n" -gt 100
	gaps=$(awk 'NR > 1 && $1 != prev + 1 { g++ } { prev = $1 } END { print g + 0 }' "$W/snap.seq")
	check "snapshot's markers are contiguous ($gaps gaps)" test "$gaps" -eq 0
	# The newest: the last marker is at least the count written before
	# snapshot started (markers are numbered from 0, one event each).
	check "snapshot holds the newest markers (last $last >= $before - 1)" \
		test "${last:-0}" -ge $((${before:-1} - 1)) -a -n "$before"
	check "snapshot: overwrite leaves older markers out (first $first > 0)" \
		test "${first:-0}" -gt 0
	echo 0 >"$RT/tracing_on"
	echo discard >"$RT/mode"
}

# ---- following a trace being written --------------------------------------------------

# Each line of stdin, after CLOCK_MONOTONIC (the trace clock) when it came;
# "ready" first, once it reads (python takes seconds to start under TCG).
readonly STAMP='import sys, time
print("ready", flush=True)
for line in sys.stdin:
    sys.stdout.write("%.6f %s" % (time.clock_gettime(time.CLOCK_MONOTONIC), line))
    sys.stdout.flush()'

# marker_seqs TAG FILE: the numbers of the "TAG N" markers, as printed.
marker_seqs() { sed -nE "s/.* ringtrace_marker: .*\"$1 ([0-9]+)\".*/\1/p" "$2"; }

# max_delay TAG FILE: the longest time between a stamped marker's event
# (its write) and its line's arrival, in ms.
max_delay() {
	grep -E "ringtrace_marker: .*\"$1 [0-9]+\"" "$2" | tr -d '[]' |
		awk '{ d = ($1 - $2) * 1000; if (d > m) m = d } END { printf "%d\n", m }'
}

# The service's current trace followed while markers are written one by
# one, by turns on each CPU: a rotation (SIGHUP) and a dynamic probe
# (the metadata grows) on the way.  Every marker once, in order, each
# within a second; a filtered view at the same time; Ctrl-C ends both
# with status 0.
test_follow_view() {
	local out=$W/fv n=40 ncpu i c rc rc2 dpid fpid fpid2 want want0 nap
	local -a wfd afd wpid
	ncpu=$(ls "$RT/cpu" | wc -l)
	echo 0 >"$RT/tracing_on"
	echo discard >"$RT/mode"
	echo >"$RT/set_event_pid"
	echo 0 >"$RT/events/enable"
	echo 1 >"$RT/clear"
	# -f 100: what record --live runs, and what --hold's default is for.
	"$RINGTRACED" -o "$out" -f 100 >"$W/fv.daemon" 2>&1 &
	dpid=$!
	wait_for 60 grep -qx 1 "$RT/tracing_on"
	mkfifo "$W/fv.fifo" "$W/fv0.fifo"
	python3 -S -c "$STAMP" <"$W/fv.fifo" >"$W/fv.out" &
	python3 -S -c "$STAMP" <"$W/fv0.fifo" >"$W/fv0.out" &
	"$CLI" report --follow "$out" >"$W/fv.fifo" 2>"$W/fv.err" &
	fpid=$!
	"$CLI" report --follow --cpu 0 -e marker "$out" >"$W/fv0.fifo" 2>"$W/fv0.err" &
	fpid2=$!
	wait_for 30 grep -q following "$W/fv.err"
	wait_for 30 grep -q following "$W/fv0.err"
	wait_for 30 grep -q ready "$W/fv.out"
	wait_for 30 grep -q ready "$W/fv0.out"
	# A writer pinned to each CPU, fed through a FIFO, says when its
	# marker is written (one write(2) each): no exec per marker (taskset
	# and printf were two, 150 ms under TCG).  The pause between markers
	# is a read with a timeout on a FIFO no one writes: no sleep(1) either.
	for ((c = 0; c < ncpu; c++)); do
		mkfifo "$W/fv.w$c" "$W/fv.a$c"
		taskset -c "$c" bash -c 'exec 3<>"$1" 4<>"$2"
			while read -r m <&3; do printf %s "$m" >"$3"; echo >&4; done' \
			sh "$W/fv.w$c" "$W/fv.a$c" "$RT/marker" &
		wpid[c]=$!
		exec {wfd[c]}>"$W/fv.w$c" {afd[c]}<"$W/fv.a$c"
	done
	mkfifo "$W/fv.nap"
	exec {nap}<>"$W/fv.nap"
	# A probe's registration and removal stop the machine for a moment
	# (text patching): before a marker's write, not between it and its
	# flush, which would time the guest kernel, not the view.
	for ((i = 0; i < n; i++)); do
		((i == n / 4)) && exec 3<>"$RT/probe_events" && echo p:do_sys_openat2 >&3
		((i == n / 2)) && kill -HUP "$dpid"
		((i == 3 * n / 4)) && exec 3>&-
		c=$((i % ncpu))
		echo "fv $i" >&"${wfd[c]}" && read -r -t 10 -u "${afd[c]}" _
		read -r -t 0.05 -u "$nap" _
	done
	for ((c = 0; c < ncpu; c++)); do
		exec {wfd[c]}>&- {afd[c]}<&-
		kill "${wpid[c]}" 2>/dev/null
		wait "${wpid[c]}" 2>/dev/null
	done
	exec {nap}<&-
	wait_for 10 grep -q "\"fv $((n - 1))\"" "$W/fv.out"
	kill -INT "$fpid" "$fpid2"
	wait "$fpid"
	rc=$?
	wait "$fpid2"
	rc2=$?
	kill -TERM "$dpid"
	wait "$dpid"
	check "follow: Ctrl-C ends the views with status 0 ($rc, $rc2)" test "$rc$rc2" = 00
	want=$(seq 0 $((n - 1)))
	check "follow: every marker printed once, in order" \
		test "$(marker_seqs fv "$W/fv.out")" = "$want"
	note "follow: a marker's longest way to the view: $(max_delay fv "$W/fv.out") ms"
	check "follow: each marker printed within a second of its write" \
		test "$(max_delay fv "$W/fv.out")" -lt 1000
	check "follow: the chunks rotated while followed" \
		test -n "$(ls "$out" | grep -E '^cpu[0-9]+-0*1\.zst$')"
	check "follow: the dynamic probe's events printed (the metadata grew)" \
		grep -q ' kprobe_do_sys_openat2:' "$W/fv.out"
	# Out of order (counted) only where the guest kept ringtraced from
	# its flush for longer than the hold; the markers' order is checked.
	note "follow: $(cat "$W/fv.err" "$W/fv0.err" | grep -c 'out of order') views said some came out of order"
	check "follow: nothing damaged or dropped said" \
		test -z "$(grep -v -e following -e 'out of order' "$W/fv.err" "$W/fv0.err")"
	want0=$(seq 0 "$ncpu" $((n - 1)))
	check "follow --cpu 0 -e marker: CPU 0's markers, once, in order" \
		test "$(marker_seqs fv "$W/fv0.out")" = "$want0"
	check "follow --cpu 0 -e marker: nothing else" \
		test -z "$(grep -vE -e '^ready$' -e '^[0-9.]+ \[[0-9.]+\] cpu0 .* ringtrace_marker: ' "$W/fv0.out")"
	check "follow: the trace on disk holds every marker" \
		test "$("$CLI" report -e marker "$out" 2>/dev/null | sed -nE 's/.*"fv ([0-9]+)".*/\1/p')" = "$want"
}

# record --live: the events while the command runs (it waits for its own
# last marker in the view), and the trace on disk complete.
test_record_live() {
	local out=$W/live rc
	"$CLI" record --live -o "$out" -- bash -c '
		for i in $(seq 0 19); do printf "lv %d" $i >'"$RT"'/marker; sleep 0.05; done
		for i in $(seq 200); do
			grep -q "\"lv 19\"" '"$W"'/live.out && exit 0
			sleep 0.05
		done
		exit 7' >"$W/live.out" 2>"$W/live.err"
	rc=$?
	check "record --live: the view printed the last marker while the command ran (status $rc)" \
		test "$rc" -eq 0
	check "record --live: every marker once, in order" \
		test "$(marker_seqs lv "$W/live.out")" = "$(seq 0 19)"
	check "record --live: ends with where the trace is" \
		grep -q "^trace in $out" "$W/live.out"
	check "record --live: the trace on disk holds every marker" \
		test "$("$CLI" report -e marker "$out" 2>/dev/null | sed -nE 's/.*"lv ([0-9]+)".*/\1/p')" = "$(seq 0 19)"
	check "record --live: the trace checks" "$CLI" check "$out"
}

# ---- record --trigger ----------------------------------------------------------------

# The writer and the checks of a snapshot (shared with ringtraced's suite).
. tools/tests/trigger_checks.sh

test_trigger() {
	local out=$W/trg before n dirs k ctf
	before=$(state)
	trigger_writer "$W/trg-writer.py"
	"$CLI" record --mode overwrite -b 64K -e sched_switch \
		--trigger 'ringtrace_marker: data == FAIL*' --after 500ms --max 2 \
		-o "$out" -- taskset -c 0 python3 -S "$W/trg-writer.py" "$RT" "$W/trg.out" "$W/trg.log" 2 \
		>"$W/trg.out" 2>"$W/trg.err"
	check "record --trigger exits with the writer's status 0" test $? -eq 0
	sed 's/^/# writer: /' "$W/trg.log"
	mapfile -t dirs < <(sed -nE 's/^snapshot [0-9]+ in ([^:]+): .*/\1/p' "$W/trg.out")
	n=$(find "$out" -mindepth 1 -maxdepth 1 -type d -name '*-ringtrace_marker' | wc -l)
	check "two triggers, --max 2: two snapshots ($n), none for a third" \
		test "$n" -eq 2 -a "${#dirs[@]}" -eq 2
	check "record says so: '2 snapshots in'" grep -q "^2 snapshots in $out" "$W/trg.out"
	check "recording went on after each snapshot (tracing_on 1)" \
		test "$(grep -c '^tracing_on [12] 1$' "$W/trg.log")" -eq 2
	check "the writer wrote all it meant to" grep -q '^done ' "$W/trg.log"
	check "snapshot names: YYYYmmdd-HHMMSS.mmm-EVENT" \
		test "$(basename "${dirs[0]:-x}" | grep -cE '^[0-9]{8}-[0-9]{6}\.[0-9]{3}-ringtrace_marker$')" -eq 1
	if [[ ${#dirs[@]} -eq 2 ]]; then
		for k in 1 2; do
			ctf=$(unpacked "${dirs[k - 1]}")
			check "trigger snapshot $k unpacks" test -n "$ctf"
			check_trigger_snapshot "trigger snapshot" "$k" "$ctf" "$W/trg.log"
		done
	fi
	check "after record --trigger: every control file as before" same_state "$before"
	check "after record --trigger: the marker's trigger is none" \
		test "$(<"$RT/events/ringtrace_marker/trigger")" = none

	# Refused: one line naming the token, nothing changed.
	"$CLI" record --mode overwrite \
		--trigger 'ringtrace_marker: data == FAIL* && nosuch == 1' \
		-o "$W/trg-bad1" -- true >/dev/null 2>"$W/trg-bad1.err"
	check "--trigger with an unknown field: refused" test $? -ne 0
	check "--trigger with an unknown field: one line naming it" \
		grep -q "unknown field 'nosuch'" "$W/trg-bad1.err"
	check "--trigger with an unknown field: one line" one_line "$W/trg-bad1.err"
	"$CLI" record --mode overwrite -e syscalls --trigger 'syscall_exit: ret == -5 ||' \
		-o "$W/trg-bad2" -- true >/dev/null 2>"$W/trg-bad2.err"
	check "--trigger cut short: refused" test $? -ne 0
	check "--trigger cut short: one line naming the end" \
		grep -q "the end" "$W/trg-bad2.err"
	"$CLI" record --trigger 'ringtrace_marker: data == FAIL*' \
		-o "$W/trg-bad3" -- true >/dev/null 2>"$W/trg-bad3.err"
	check "--trigger without --mode overwrite: usage error (exit 2)" test $? -eq 2
	"$CLI" record --after 1s -o "$W/trg-bad4" -- true >/dev/null 2>"$W/trg-bad4.err"
	check "--after without --trigger: usage error (exit 2)" test $? -eq 2
	check "refused --triggers: no trace directory" \
		test ! -e "$W/trg-bad1" -a ! -e "$W/trg-bad2" -a ! -e "$W/trg-bad3"
	check "refused --triggers: every control file as before" same_state "$before"
	check "refused --triggers: the triggers are none" \
		test "$(cat "$RT/events/ringtrace_marker/trigger" "$RT/events/syscall_exit/trigger")" = "none
none"
}

# ---- export ------------------------------------------------------------------------------

# The export workload: the tree with known tids, and reads through 9p
# (virtio interrupts, softirqs).
export_workload() {
	ls -l /usr/bin /usr/lib >/dev/null 2>&1 && "$WL" 20 "$1" >/dev/null
	return 0
}

# The kernel's own ftrace of the export workload, in this boot.
ftrace_workload() {
	local T=/sys/kernel/tracing on
	on=$(<"$T/tracing_on")
	echo 0 >"$T/tracing_on"
	echo >"$T/trace"
	echo nop >"$T/current_tracer"
	# Room for the whole workload: an overwritten start loses the forks.
	local size
	size=$(<"$T/buffer_size_kb")
	echo 16384 >"$T/buffer_size_kb"
	echo 1 >"$T/events/sched/sched_switch/enable"
	echo 1 >"$T/events/sched/sched_wakeup/enable"
	echo 1 >"$T/events/sched/sched_wakeup_new/enable"
	echo 1 >"$T/events/sched/sched_process_fork/enable"
	echo 1 >"$T/events/sched/sched_process_exec/enable"
	echo 1 >"$T/events/sched/sched_process_exit/enable"
	echo 1 >"$T/events/task/task_rename/enable"
	echo 1 >"$T/events/raw_syscalls/enable"
	echo 1 >"$T/events/irq/enable"
	echo 1 >"$T/options/record-tgid"
	echo 1 >"$T/tracing_on"
	export_workload "$W/tids-ftrace"
	echo 0 >"$T/tracing_on"
	cat "$T/trace" >"$W/ftrace.txt"
	echo 0 >"$T/events/enable"
	echo 0 >"$T/options/record-tgid"
	echo >"$T/trace"
	echo "${size%% *}" >"$T/buffer_size_kb"
	echo "$on" >"$T/tracing_on"	# as found: later suites trace there too
}

# What the exports say, checked by tools/tests/export_check.py in one
# process: systrace's lines against the kernel's own ftrace text of the
# same workload (their prefix, nanoseconds, each thread's TGID, each
# event's layout), chrome-json's slices and thread names.
test_export() {
	local out=$W/t6
	ftrace_workload
	"$CLI" record -e all -o "$out" -- bash -c "$(declare -f export_workload); WL=$WL export_workload $W/tids6" \
		>/dev/null 2>"$W/t6.err"
	check "record -e all of the export workload" test $? -eq 0
	"$CLI" export "$out" -f systrace -o "$W/export.txt" 2>"$W/export.err"
	check "export -f systrace exits 0" test $? -eq 0
	"$CLI" export "$W/t1" -f chrome-json -o "$W/export.json" 2>/dev/null
	check "export -f chrome-json exits 0" test $? -eq 0
	python3 -S "$REPO/tools/tests/export_check.py" \
		--systrace "$W/export.txt" "$W/ftrace.txt" "$W/tids6" \
		--chrome-json "$W/export.json" "$W/tids1" $N >"$W/export.check" 2>&1
	check_output "$W/export.check" $?
}

# Two recordings of this boot (test_attribution's and test_follow's), each
# under another host name (its metadata's env): report merges them
# on wall-clock time, each line with its host, each host's lines what
# report -w of its trace alone prints; --stat has one section per host,
# each the trace's own; export refuses two hosts in one line.
test_hosts() {
	local a=$W/t1h b=$W/t2h h=rt-one
	rm -rf "$a" "$b" && cp -r "$W/t1" "$a" && cp -r "$W/t2" "$b" &&
		sed -i 's/^\thostname = ".*";/\thostname = "rt-one";/' "$a/metadata" &&
		sed -i 's/^\thostname = ".*";/\thostname = "rt-other";/' "$b/metadata"
	"$CLI" report "$a" "$b" >"$W/hosts.report" 2>"$W/hosts.err"
	check "hosts: report reads two hosts' traces" test $? -eq 0
	grep -E '^\[' "$W/hosts.report" >"$W/hosts.lines"
	check "hosts: every line names its host" \
		test -s "$W/hosts.lines" -a "$(grep -cvE "^\[[0-9]+\.[0-9]{9}\] ($h|rt-other) cpu" "$W/hosts.lines")" -eq 0
	check "hosts: in wall-clock order" \
		sh -c "test -s '$W/hosts.lines' && cut -d' ' -f1 '$W/hosts.lines' | tr -d '[]' | sort -c -n"
	"$CLI" report -w "$a" | grep -E '^\[' >"$W/hosts.a"
	"$CLI" report -w "$b" | grep -E '^\[' >"$W/hosts.b"
	sed -n "s/^\(\[[0-9.]*\]\) $h /\1 /p" "$W/hosts.lines" >"$W/hosts.got.a"
	sed -n 's/^\(\[[0-9.]*\]\) rt-other /\1 /p' "$W/hosts.lines" >"$W/hosts.got.b"
	check "hosts: $h's lines are report -w of its trace" same_lines "$W/hosts.a" "$W/hosts.got.a"
	check "hosts: rt-other's lines are report -w of its trace" same_lines "$W/hosts.b" "$W/hosts.got.b"
	{ echo "host $h"; "$CLI" report --stat "$a"; echo; echo "host rt-other"; "$CLI" report --stat "$b"; } \
		>"$W/hosts.stat.want" 2>/dev/null
	"$CLI" report --stat "$a" "$b" >"$W/hosts.stat" 2>/dev/null
	check "hosts: --stat has each host's own section" same_lines "$W/hosts.stat.want" "$W/hosts.stat"
	"$CLI" export -f chrome-json "$a" "$b" >/dev/null 2>"$W/hosts.export.err"
	check "hosts: export refuses two hosts (exit 1)" test $? -eq 1
	check "hosts: ... in one line naming them" \
		sh -c "grep -q 'hold 2 recordings ($h, rt-other)' '$W/hosts.export.err' && test \$(wc -l <'$W/hosts.export.err') -eq 1"
}

# In this order: test_hosts merges test_attribution's and test_follow's
# traces.
ALL_TESTS="test_loads_module test_second_record set_odd_state test_attribution test_syscall_args
	test_follow test_hosts test_sigmask test_ctrl_c test_stop_signals
	test_sigkill_restores test_sigkill_trigger test_sigkill_all
	test_term_signals test_relay_once test_pkill_once test_start_stop
	test_early_kill test_restore_file test_kill_children test_live_orphan
	test_start_timeout test_failing_cmd test_errors test_list
	test_filters test_event_filter test_field_filters test_cgroup test_snapshot
	test_follow_view test_record_live test_trigger test_stacks test_stack_errors
	test_export"

# The tests of the CLI's own logic: signals and the traced command's
# process handling, the start timeout, merging hosts, following a trace.
# What they ask of the kernel (processes, signals, files) does not depend
# on ringtrace.ko or its kernel, and the module's side of them (control
# files restored, events recorded) is what the others check on every
# kernel: tools/run-tests runs them in one boot (RT_CLI_SCOPE=kernel in
# the others), as it does the daemon's (daemon/tests/run_guest.sh).
CLI_ONLY="test_hosts test_sigmask test_ctrl_c test_stop_signals
	test_sigkill_restores test_sigkill_trigger test_sigkill_all test_term_signals
	test_relay_once test_pkill_once test_start_stop test_early_kill
	test_restore_file test_kill_children test_live_orphan
	test_start_timeout test_failing_cmd test_follow_view test_record_live"

main() {
	note "kernel $KVER, $(nproc) CPUs, work in $W"
	# CLI_TESTS="test_a test_b": only those (while working on them).
	if [[ -n ${CLI_TESTS:-} ]]; then
		insmod "$BUILD/$KVER/ringtrace.ko" 2>/dev/null
		for t in $CLI_TESTS; do "$t"; done
		rmmod ringtrace 2>/dev/null
		keep_files "$W" cli-tests
		check_summary cli
		return
	fi
	local t t0
	for t in $(scoped_tests "${RT_CLI_SCOPE:-all}" "$ALL_TESTS" "$CLI_ONLY"); do
		t0=$SECONDS
		"$t"
		note "$t: $((SECONDS - t0)) s"
	done
	echo 0 >"$RT/tracing_on" 2>/dev/null
	rmmod ringtrace 2>/dev/null
	# What the tests wrote, for a look after a failure (not the traces).
	keep_files "$W" cli-tests
	check_summary cli
}

main
