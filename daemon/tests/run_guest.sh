#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtraced tests, run as root inside the test VM in one boot:
#
#   make modules BUILD=DIR && make -C daemon
#   tools/vm/vmtest -- env BUILD=DIR daemon/tests/run_guest.sh
#
# BUILD (default <repo>/build) holds the modules in $BUILD/$RT_KVER/.  The
# trace of each test is decoded with `tools/ringtrace unpack` when that is
# built, else with zstd -d and daemon/tests/rt-trim, and read with
# babeltrace2.  Prints "ok - ..." / "FAIL - ..." per assertion and ends with
# "daemon: N passed, M failed"; exits 1 if anything failed.  A step the
# checks stand on (markers written, a module loaded) prints "# setup: ..."
# and counts only when it fails.  Daemon logs and
# outputs of the tests are copied to $RT_VM_OUT/daemon-tests/ when set.
# RT_DAEMON_SCOPE=kernel leaves out the tests of the daemon's own logic
# (DAEMON_ONLY below): tools/run-tests runs those in one kernel's boot.
# RT_WAKEUP_TEST=1 has test_wakeup ask for a watermark of one packet: its
# bound must then fail (the test's own check).
# RT_DAEMON_TESTS="test_a test_b" runs only those; RT_DAEMON_BIN and
# RT_CLI_BIN run them against another build of ringtraced and ringtrace
# (an older one, to see a test fail before its fix); RT_DAEMON_TSAN_BIN
# the one under ThreadSanitizer.

set -u

REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${BUILD:-$REPO/build}
KVER=${RT_KVER:-$(uname -r)}
KO=$BUILD/$KVER
DAEMON=${RT_DAEMON_BIN:-$REPO/daemon/ringtraced}
MARKERS=$REPO/daemon/tests/rt-markers
TRIM=$REPO/daemon/tests/rt-trim
TSAN=${RT_DAEMON_TSAN_BIN:-$REPO/daemon/tests/ringtraced-tsan}
CLI=${RT_CLI_BIN:-$REPO/tools/ringtrace}
DBG=/sys/kernel/debug
RT=$DBG/ringtrace
ST=$DBG/ringtrace_selftest
W=$(mktemp -d /tmp/ringtraced-tests.XXXXXX)
CPUS=()
# scoped_tests: RT_DAEMON_SCOPE below
. "$REPO/tools/tests/scope.sh"

passed=0
failed=0

pass() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
note() { echo "# $*"; }

# nap SECONDS: sleep(1) without a process: a read that times out on a FIFO
# no one writes.  The polls below wait 0.1 s at a time, and a process
# start costs about that again under TCG, CPU time the daemon under test
# shares.
mkfifo "$W/nap"
nap() {
	read -r -t "$1" _ <>"$W/nap" || :
}

# check DESCRIPTION COMMAND...: one assertion.
check() {
	local d=$1
	shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}
# eq DESCRIPTION GOT WANT
eq() {
	if [[ $2 == "$3" ]]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}
# setup DESCRIPTION COMMAND...: a step the checks stand on (markers
# written, a module loaded): a failure if it fails, no pass if it works.
setup() {
	local d=$1
	shift
	"$@" && { note "setup: $d"; return 0; }
	fail "setup: $d"
	return 1
}

# --------------------------------------------------------------------
# Module state
# --------------------------------------------------------------------

# Tracing off, discard mode, counters zeroed, the suite's geometry:
# 16 x 64 KiB (1 MiB per CPU; the module's default is 4 MiB), which the
# tests' "more than the ring holds" arithmetic is written for.
reset_module() {
	echo 0 >"$RT/tracing_on"
	echo discard >"$RT/mode"
	echo 65536 >"$RT/subbuf_size"
	echo 16 >"$RT/num_subbufs"
	echo 1 >"$RT/clear"
}

# read_stats: the stats file into STATS, "cpuN FIELD" -> value, read by
# bash itself (an awk per read was a process start, 70-100 ms under TCG,
# in loops that poll it); CPUS_SEEN lists the CPUs, in the file's order.
declare -A STATS=()
CPUS_SEEN=()
read_stats() {
	local -a f
	local kv
	STATS=()
	CPUS_SEEN=()
	while read -r -a f; do
		[[ ${f[0]:-} == cpu* ]] || continue
		CPUS_SEEN+=("${f[0]}")
		for kv in "${f[@]:1}"; do
			STATS[${f[0]} ${kv%%=*}]=${kv#*=}
		done
	done <"$RT/stats"
}

# stat CPU FIELD: one counter of the stats file.
stat() {
	read_stats
	echo "${STATS[cpu$1 $2]-}"
}

# lost_of CPU: the sum of its five lost counters (one read of the file;
# "missing" if one of them is not there).
lost_of() {
	local k s=0
	read_stats
	for k in full overrun held nested too_big; do
		[[ -n ${STATS[cpu$1 lost_$k]-} ]] || { echo missing; return; }
		s=$((s + ${STATS[cpu$1 lost_$k]}))
	done
	echo "$s"
}

# --------------------------------------------------------------------
# The daemon
# --------------------------------------------------------------------

DPID=
WRAP=()		# a command to run the daemon under (strace)

# start_daemon NAME ARGS...: stdout/stderr in $W/NAME.{out,err}; returns
# once the daemon says it is recording.
start_daemon() {
	local name=$1 i
	shift
	"${WRAP[@]}" "$DAEMON" "$@" >"$W/$name.out" 2>"$W/$name.err" &
	DPID=$!
	for ((i = 0; i < 600; i++)); do
		[[ $(<"$W/$name.err") == *recording* ]] && return 0
		if ! kill -0 "$DPID" 2>/dev/null; then
			wait "$DPID"
			note "daemon $name exited early: $(cat "$W/$name.err")"
			DPID=
			return 1
		fi
		nap 0.1
	done
	note "daemon $name not ready after 60 s"
	return 1
}

# wait_exit PID SECONDS: the exit status, or 124 after killing it on timeout.
wait_exit() {
	local pid=$1 i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		nap 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid"
		return 124
	fi
	wait "$pid"
}

# stop_daemon: SIGTERM, returns the exit status.
stop_daemon() {
	local rc=0
	kill -TERM "$DPID"
	wait_exit "$DPID" 120 || rc=$?
	DPID=
	return "$rc"
}

# drained [SECONDS]: until every CPU's events are delivered or lost
# (written = delivered + lost, ring.c: in the chunks, their packets closed
# by a flush tick; nothing left in the kernel for a kill to leave), at
# most SECONDS (30).
drained() {
	local i c k lost busy
	for ((i = 0; i < ${1:-30} * 10; i++)); do
		read_stats
		busy=0
		for c in "${CPUS_SEEN[@]}"; do
			lost=0
			for k in "${!STATS[@]}"; do
				[[ $k == "$c lost_"* ]] && lost=$((lost + ${STATS[$k]}))
			done
			((${STATS[$c written]:-0} == ${STATS[$c delivered]:-0} + lost)) || busy=1
		done
		((busy)) || return 0
		nap 0.1
	done
	return 1
}

# run_markers TAG COUNT ARGS...: rt-markers on every CPU at once; fails if any did.
run_markers() {
	local tag=$1 count=$2 c rc=0
	local -a pids=()
	shift 2
	for c in "${CPUS[@]}"; do
		"$MARKERS" "$@" "$c" "$count" "$tag" &
		pids+=($!)
	done
	for c in "${pids[@]}"; do
		wait "$c" || rc=1
	done
	return "$rc"
}

# --------------------------------------------------------------------
# Reading traces
# --------------------------------------------------------------------

# RT_UNPACK=zstd forces the fallback decoder.
USE_CLI=0
if [[ ${RT_UNPACK:-} != zstd && -x $CLI ]] && "$CLI" --help 2>&1 | grep -q unpack; then
	USE_CLI=1
fi

# unpack TRACE OUT: a plain CTF trace, trailing partial frame/packet dropped.
unpack() {
	local src=$1 dst=$2 f b
	if ((USE_CLI)); then
		"$CLI" unpack "$src" "$dst" >"$dst.unpack.log" 2>&1 && return 0
		note "$CLI unpack $src $dst failed: $(head -c 500 "$dst.unpack.log")"
		return 1
	fi
	mkdir -p "$dst" && cp "$src/metadata" "$dst/" || return 1
	for f in "$src"/*.zst; do
		[[ -e $f ]] || continue
		b=$(basename "$f" .zst)
		# A frame cut by a kill: keep what decoded, then whole packets.
		zstd -qdc -- "$f" >"$dst/$b" 2>>"$dst.unpack.log"
		"$TRIM" "$dst/$b" >>"$dst.unpack.log" || return 1
	done
}

# bt TRACE OUT: babeltrace2's text in OUT, its stderr in OUT.err.
bt() {
	babeltrace2 "$1" >"$2" 2>"$2.err"
}

# cpu_trace TRACE CPU OUT: a trace dir with only CPU's stream files, so
# that babeltrace2's discarded-event warnings can be attributed to a CPU.
cpu_trace() {
	local f
	mkdir -p "$3" && cp "$1/metadata" "$3/" || return 1
	for f in "$1"/cpu"$2" "$1"/cpu"$2"-*; do
		[[ -e $f ]] && cp "$f" "$3/"
	done
	return 0
}

# discarded BTOUT: events babeltrace2 says the tracer discarded (stdout and stderr).
discarded() {
	cat "$1" "$1.err" | grep -o 'discarded [0-9]* event' |
		awk '{ s += $2 } END { print s + 0 }'
}

# cpu_discarded CTF BTOUT CPU: the events babeltrace2 says the tracer
# discarded in CPU's streams, BTOUT its reading of the whole trace CTF.
# Where the whole trace has none, no CPU has any: no second reading.
cpu_discarded() {
	if [[ $(discarded "$2") == 0 ]]; then
		echo 0
		return 0
	fi
	cpu_trace "$1" "$3" "$1.cpu$3" && bt "$1.cpu$3" "$1.cpu$3.txt" || return 1
	discarded "$1.cpu$3.txt"
}

# markers BTOUT TAG: "<cpu_id> <cpu in payload> <seq>" per marker with TAG.
# (awk's index(), not a sed regex with groups: that one backtracks over
# every line, 9 s for 20000 markers under TCG.)
markers() {
	awk -v tag="$2" '
	BEGIN { ev = " ringtrace_marker: { cpu_id = "; dt = " data = \"" tag " cpu=" }
	(i = index($0, ev)) && (j = index($0, dt)) > i {
		split(substr($0, i + length(ev)), c, ",")
		split(substr($0, j + length(dt)), d, /[ "]/)
		if (c[1] ~ /^[0-9]+$/ && d[1] ~ /^[0-9]+$/ && d[2] ~ /^seq=[0-9]+$/)
			print c[1], d[1], substr(d[2], 5)
	}' "$1"
}

# seqs MARKERS CPU: "<count> <first> <last> <bad>" of CPU's markers; bad
# counts payloads from another CPU and seqs that do not increase.
seqs() {
	awk -v c="$2" '$1 == c {
		n++
		if ($2 != c) bad++
		if (n > 1 && $3 <= last) bad++
		if (n == 1) first = $3
		last = $3
	} END { printf "%d %d %d %d\n", n, n ? first : -1, n ? last : -1, bad }' "$1"
}

# --------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------

test_no_module() {
	local rc=0
	note "no module loaded"
	"$DAEMON" -o "$W/nomod" >/dev/null 2>"$W/nomod.err" || rc=$?
	eq "no module: exit status" "$rc" 1
	check "no module: says the module is not loaded" \
		grep -q "^ringtraced: ringtrace.ko is not loaded (no $RT, no /dev/ringtrace)$" "$W/nomod.err"
	check "no module: no output directory made" test ! -e "$W/nomod"
}

# line_matches FILE ERE: a line of FILE matches ERE, as grep -Eq finds it,
# without a process (test_usage's forty cases).
line_matches() {
	local l
	while IFS= read -r l || [[ -n $l ]]; do
		[[ $l =~ $2 ]] && return 0
	done <"$1"
	return 1
}

# usage_case WANT_RC MESSAGE_REGEX ARGS...: a daemon that would record
# instead is stopped after 20 s (status 124).
usage_case() {
	local want=$1 re=$2 rc=0
	shift 2
	timeout 20 "$DAEMON" "$@" >"$W/usage.out" 2>"$W/usage.err" || rc=$?
	if [[ $rc == "$want" ]] && line_matches "$W/usage.err" "$re"; then
		pass "usage: ringtraced $* -> $rc"
	else
		fail "usage: ringtraced $*: exit $rc, want $want and /$re/ in: $(head -c 300 "$W/usage.err")"
	fi
}

test_usage() {
	local sub
	note "usage errors"
	reset_module
	sub=$(cat "$RT/subbuf_size")
	usage_case 2 "unrecognized option '--bogus'" --bogus
	usage_case 2 "invalid option -- 'x'" -x
	usage_case 2 "option requires an argument" -o
	usage_case 2 "--level: 'fast' is not a zstd level" --level fast
	usage_case 2 "--level: '99' is not a zstd level" -l 99
	usage_case 2 "unrecognized option '--min-level'" --min-level 1
	usage_case 2 "--workers: '0' is not a number of threads" -j 0
	usage_case 2 "--workers: '65' is not a number of threads" --workers 65
	usage_case 2 "--chunk-time: '0' is not a duration" -t 0
	usage_case 2 "--chunk-time: 'soon' is not a duration" --chunk-time soon
	usage_case 2 "--cpus: '1-0' is not a CPU list" --cpus 1-0
	usage_case 2 "--cpus: 'a' is not a CPU list" -c a
	usage_case 2 "--max-size: '0' is not a size" --max-size 0
	usage_case 2 "--max-size: '12Q' is not a size" -s 12Q
	# Below one sub-buffer every packet would get a chunk of its own.
	usage_case 2 "^ringtraced: --max-size: 4096 bytes cannot hold a sub-buffer of $sub bytes \\($((sub + 12)) with its frame header\\)" \
		-s 4K -o "$W/u5"
	usage_case 2 "^ringtraced: --max-size: 65536 bytes cannot hold a sub-buffer of 131072 bytes" \
		-s 64K --subbuf-size 128K -o "$W/u5"
	check "usage: --max-size refused before anything is made" test ! -e "$W/u5"
	eq "usage: ... or changed" "$(cat "$RT/subbuf_size")" "$sub"
	usage_case 2 "--max-files: '-1' is not a number" --max-files -1
	usage_case 2 "--flush-interval: 'soon' is not a number" -f soon
	usage_case 2 "--mode: 'ring' is neither" --mode ring
	usage_case 2 "unexpected argument 'extra'" -o "$W/u1" extra
	usage_case 2 "--output: empty directory name" -o ""
	# The pace of --max-total and a hook's time from SIGTERM to SIGKILL.
	usage_case 2 "^ringtraced: --max-total-interval: '50ms' is not a duration from 100ms to 1h" \
		--root "$W/u1" --max-total 1M --max-total-interval 50ms
	usage_case 2 "^ringtraced: --max-total-interval needs --max-total$" \
		--root "$W/u1" --max-total-interval 1s
	usage_case 2 "^ringtraced: --on-chunk-kill-after: '0' is not a duration from 100ms to 10m" \
		-o "$W/u1" --on-chunk true --on-chunk-kill-after 0
	usage_case 2 "^ringtraced: --on-chunk-kill-after needs --on-chunk$" \
		-o "$W/u1" --on-chunk-kill-after 1s
	check "usage: nothing created on usage errors" test ! -e "$W/u1"

	mkdir -p "$W/full" && touch "$W/full/x" "$W/file"
	usage_case 1 "^ringtraced: $W/full: exists and is not an empty directory$" -o "$W/full"
	usage_case 1 "^ringtraced: $W/file: exists and is not an empty directory$" -o "$W/file"
	usage_case 1 "^ringtraced: $W/missing/x: No such file or directory$" -o "$W/missing/x"
	usage_case 1 "^ringtraced: CPU 4000: no buffer in $RT/cpu" -c 4000 -o "$W/u2"
	usage_case 1 "^ringtraced: $W: debugfs is not mounted there" --debugfs "$W" -o "$W/u3"
	usage_case 1 "^ringtraced: $RT/subbuf_size: Invalid argument$" --subbuf-size 1000 -o "$W/u4"
	check "usage: no output directory for errors found first" \
		test ! -e "$W/u2" -a ! -e "$W/u3" -a ! -e "$W/u4"
	eq "usage: a refused --subbuf-size leaves the geometry" "$(cat "$RT/subbuf_size")" "$sub"

}

# --symbols-max and --no-symbols (the store filled at the stop, symbols.c):
# bad values and --trigger refused before anything is made.
test_symbols_usage() {
	note "symbols: usage errors"
	reset_module
	usage_case 2 "--symbols-max: '12Q' is not a size" --symbols-max 12Q -o "$W/sy1"
	usage_case 2 "--symbols-max: '' is not a size" --symbols-max "" -o "$W/sy1"
	usage_case 2 "^ringtraced: --symbols-max and --no-symbols shape the symbol store a drained recording gets at its stop; --trigger's snapshots get none" \
		--trigger 'sched_switch: prev_tid == 1' --no-symbols -o "$W/sy1"
	check "symbols: nothing created on usage errors" test ! -e "$W/sy1"
}

test_usage_root_only() {
	local rc=0
	command -v setpriv >/dev/null || { fail "non-root: setpriv (util-linux) missing"; return; }
	chmod 0755 "$W"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$DAEMON" -o "$W/nobody" >/dev/null 2>"$W/nobody.err" || rc=$?
	eq "non-root: exit status" "$rc" 1
	check "non-root: one line naming the permission problem" \
		grep -Eq "^ringtraced: ringtrace's control files need root$" "$W/nobody.err"
	eq "non-root: tracing stays off" "$(cat "$RT/tracing_on")" 0
}

test_busy() {
	local rc=0
	note "a second daemon"
	reset_module
	start_daemon busy1 -o "$W/busy1" || { fail "busy: first daemon did not start"; return; }
	"$DAEMON" -o "$W/busy2" >/dev/null 2>"$W/busy2.err" || rc=$?
	eq "busy: second daemon's exit status" "$rc" 1
	check "busy: says the buffer is in use" \
		grep -q "^ringtraced: $RT/cpu/[0-9]*/buffer: Device or resource busy (another consumer has it open)$" "$W/busy2.err"
	check "busy: second daemon made no output directory" test ! -e "$W/busy2"
	rc=0
	stop_daemon || rc=$?
	eq "busy: first daemon stops cleanly" "$rc" 0
}

# Where SCHED_FIFO is refused (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) the drain
# threads run at nice -10, if RLIMIT_NICE allows it, and the daemon says
# so once; the other threads stay as they were.
test_drain_priority() {
	local rc=0 n
	note "drain threads where SCHED_FIFO is refused"
	command -v setpriv >/dev/null || { fail "drain priority: setpriv (util-linux) missing"; return; }
	reset_module
	WRAP=(setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice prlimit --rtprio=0 --nice=30 --)
	start_daemon prio -o "$W/prio" || { WRAP=(); fail "drain priority: daemon did not start"; return; }
	WRAP=()
	eq "drain priority: drain threads at nice -10, not real-time, one per CPU" \
		"$(ps -L -o comm=,cls=,nice= -p "$DPID" | awk '$1 ~ /^rtd-drain/ { print $2, $3 }' | sort -u) $(ps -L -o comm= -p "$DPID" | grep -c '^rtd-drain')" \
		"TS -10 ${#CPUS[@]}"
	eq "drain priority: main thread at nice 0" "$(ps -o nice= -p "$DPID" | tr -d ' ')" 0
	stop_daemon || rc=$?
	eq "drain priority: exit status" "$rc" 0
	n=$(grep -c "^ringtraced: drain threads at nice -10 (SCHED_FIFO refused: Operation not permitted)" "$W/prio.err")
	eq "drain priority: said once" "$n" 1
}

# N marker events pinned on every CPU come back exactly, in order, with
# their payloads, and nothing is reported lost.
test_end_to_end() {
	local n=10000 c rc=0 s got
	note "end to end: $n markers per CPU"
	reset_module
	start_daemon e2e -o "$W/e2e" || { fail "e2e: daemon did not start"; return; }
	check "e2e: tracing turned on by the daemon" grep -qx 1 "$RT/tracing_on"
	setup "e2e: markers written on every CPU" run_markers e2e "$n" -s 48
	# Above the workload: a busy loop on every CPU must not starve them,
	# nor may the scheduler stack them on one CPU behind each other (issue
	# 34: SCHED_FIFO, see daemon/drain.c).
	eq "e2e: drain threads SCHED_FIFO priority 1, one per CPU" \
		"$(ps -L -o comm=,cls=,rtprio= -p "$DPID" | awk '$1 ~ /^rtd-drain/ { print $2, $3 }' | sort -u) $(ps -L -o comm= -p "$DPID" | grep -c '^rtd-drain')" \
		"FF 1 ${#CPUS[@]}"
	stop_daemon || rc=$?
	eq "e2e: daemon exit status after SIGTERM" "$rc" 0
	eq "e2e: tracing turned off at exit" "$(cat "$RT/tracing_on")" 0
	# The clock offset is computed at each read of the file: skip it.
	grep -v 'offset' "$W/e2e/metadata" >"$W/e2e.meta.copy"
	grep -v 'offset' "$RT/metadata" >"$W/e2e.meta.module"
	check "e2e: metadata copied from the module" cmp -s "$W/e2e.meta.copy" "$W/e2e.meta.module"
	check "e2e: every .zst file tests good with zstd -t" zstd -qt "$W"/e2e/*.zst
	check "e2e: unpack" unpack "$W/e2e" "$W/e2e.ctf"
	check "e2e: babeltrace2 reads the trace" bt "$W/e2e.ctf" "$W/e2e.txt"
	eq "e2e: babeltrace2 stderr is empty" "$(head -c 300 "$W/e2e.txt.err")" ""
	eq "e2e: no discarded events reported" "$(discarded "$W/e2e.txt")" 0
	markers "$W/e2e.txt" e2e >"$W/e2e.markers"
	for c in "${CPUS[@]}"; do
		eq "e2e: CPU $c: count first last bad" "$(seqs "$W/e2e.markers" "$c")" "$n 0 $((n - 1)) 0"
		eq "e2e: CPU $c: module written" "$(stat "$c" written)" "$n"
		eq "e2e: CPU $c: module lost" "$(lost_of "$c")" 0
		s=$(stat "$c" subbufs)
		got=$(sed -n "s/^CPU $c: \([0-9]*\) sub-buffers, \([0-9]*\) bytes in.*/\1 \2/p" "$W/e2e.out")
		eq "e2e: CPU $c: summary sub-buffers and bytes match the module" "$got" "$s $(stat "$c" bytes)"
		check "e2e: CPU $c: summary has the lost line" grep -q "^CPU $c: 0 events lost (" "$W/e2e.out"
	done
	# Payload bytes exactly as written, padding included.
	for c in "${CPUS[@]}"; do
		local want="e2e cpu=$c seq=$((n - 1)) "
		while ((${#want} < 48)); do want+=.; done
		check "e2e: CPU $c: last payload read back verbatim" \
			grep -qF "{ len = 48, data = \"$want\" }" "$W/e2e.txt"
	done
}

# The store path over splice (issue 34): the same markers stored by
# splice (--splice, where the module offers it: RINGTRACE_FEATURE_SPLICE)
# and by pwritev() from the mapping (the default) read back the same,
# every payload verbatim, and the summary says which path stored them.
# One kernel's boot (DAEMON_ONLY): selftests/splice_test checks the
# module's side on every kernel.
test_splice_store() {
	local n=1000 how rc total spliced
	for how in splice pwritev; do
		reset_module
		local -a args=(-o "$W/st-$how" -l store)
		[[ $how == splice ]] && args+=(--splice)
		start_daemon "st-$how" "${args[@]}" || { fail "store $how: daemon did not start"; continue; }
		setup "store $how: markers written on every CPU" run_markers st "$n" -s 200
		rc=0
		stop_daemon || rc=$?
		eq "store $how: daemon exit status after SIGTERM" "$rc" 0
		total=$(sed -n 's/^total: \([0-9]*\) sub-buffers.*/\1/p' "$W/st-$how.out")
		spliced=$(sed -n 's/^stored by splice: \([0-9]*\) sub-buffers.*/\1/p' "$W/st-$how.out")
		check "store $how: sub-buffers stored ($total)" test "${total:-0}" -gt 0
		if [[ $how == splice ]]; then
			eq "store splice: every sub-buffer spliced" "$spliced" "$total"
		else
			eq "store pwritev: none spliced" "$spliced" 0
		fi
		check "store $how: unpack" unpack "$W/st-$how" "$W/st-$how.ctf"
		check "store $how: babeltrace2 reads the trace" bt "$W/st-$how.ctf" "$W/st-$how.txt"
		eq "store $how: babeltrace2 stderr is empty" "$(head -c 300 "$W/st-$how.txt.err")" ""
		# CPU and payload of every marker, in each CPU's order.
		awk 'BEGIN { ev = " ringtrace_marker: { cpu_id = " }
		(i = index($0, ev)) && (j = index($0, "{ len = ")) > i {
			split(substr($0, i + length(ev)), c, ",")
			if (c[1] ~ /^[0-9]+$/)
				print c[1], substr($0, j)
		}' "$W/st-$how.txt" | sort -s -n -k1,1 >"$W/st-$how.markers"
		eq "store $how: markers read back" "$(wc -l <"$W/st-$how.markers")" $((n * ${#CPUS[@]}))
	done
	check "store: the spliced trace's markers are the pwritev() trace's, byte for byte" \
		cmp -s "$W/st-splice.markers" "$W/st-pwritev.markers"
}

# The first events after tracing starts, more than a ring holds: the
# drain threads must be draining from that moment.  They park on the
# buffers while tracing is off (the kernel says POLLHUP); a parked thread
# that waited for the flush tick, 10 s away here, lost all but the first
# 1 MiB.  With --no-start every thread has parked for sure when the test
# turns tracing on; with --start (the default) main wakes them itself.
# 1.6 MB a CPU is enough for that (it was 3.2), and the chunks stay
# stored (-l store): what is tested is the drain, and compressing the
# burst at the stop took 5-9 s of the test under TCG.
test_start_burst() {
	local c rc=0 how
	for how in no-start start; do
		note "a burst right after tracing starts ($how)"
		reset_module
		if [[ $how == no-start ]]; then
			start_daemon burst-$how -o "$W/burst-$how" -f 10000 -l store --no-start ||
				{ fail "burst ($how): daemon did not start"; return; }
			nap 1		# every drain thread parks
			echo 1 >"$RT/tracing_on"
		else
			start_daemon burst-$how -o "$W/burst-$how" -f 10000 -l store ||
				{ fail "burst ($how): daemon did not start"; return; }
		fi
		setup "burst ($how): 4000 markers of 400 bytes per CPU (1.6 MB, the ring holds 1 MiB)" \
			run_markers burst 4000 -r -s 400 -d 200
		echo 0 >"$RT/tracing_on"
		rc=0
		stop_daemon || rc=$?
		eq "burst ($how): daemon exit status" "$rc" 0
		for c in "${CPUS[@]}"; do
			eq "burst ($how): CPU $c: nothing lost" "$(lost_of "$c")" 0
			eq "burst ($how): CPU $c: all delivered" "$(stat "$c" delivered)" 4000
		done
	done
}

# Events from the kernel (ringtrace_selftest.ko's bound writer threads)
# arrive exactly as the module counted them.  2000 records a CPU (24-264
# bytes each) fill several of the ring's sub-buffers; 5000 proved nothing
# more, and babeltrace2 prints each payload byte by byte (15 MB of text
# for 10000 records, 20 s under TCG).
test_kernel_generator() {
	local rc=0 c acc att got lost d
	[[ -d $ST ]] || { fail "gen: ringtrace_selftest.ko not loaded"; return; }
	note "end to end: kernel-side writers"
	reset_module
	start_daemon gen -o "$W/gen" || { fail "gen: daemon did not start"; return; }
	setup "gen: kernel writers ran" sh -c "echo '120 2000 1' >$ST/run"
	stop_daemon || rc=$?
	eq "gen: daemon exit status" "$rc" 0
	cat "$ST/result" >"$W/gen.result"
	check "gen: unpack" unpack "$W/gen" "$W/gen.ctf"
	check "gen: babeltrace2 reads the trace" bt "$W/gen.ctf" "$W/gen.txt"
	awk 'BEGIN { ev = " rt_selftest_record: { cpu_id = " }
	(i = index($0, ev)) && (p = index($0, " producer = ")) > i &&
	(q = index($0, " seq = ")) > p {
		split(substr($0, i + length(ev)), c, ",")
		split(substr($0, p + 12), a, ",")
		split(substr($0, q + 7), b, ",")
		if (c[1] ~ /^[0-9]+$/ && a[1] ~ /^[0-9]+$/ && b[1] ~ /^[0-9]+$/)
			print c[1], a[1], b[1]
	}' "$W/gen.txt" >"$W/gen.recs"
	for c in "${CPUS[@]}"; do
		acc=$(sed -n "s/.* cpu=$c kind=0 .*accepted=\([0-9]*\).*/\1/p" "$W/gen.result")
		att=$(sed -n "s/.* cpu=$c kind=0 attempted=\([0-9]*\).*/\1/p" "$W/gen.result")
		got=$(awk -v c="$c" '$1 == c { n++; if (n > 1 && $3 <= last) bad++; last = $3 }
			END { print n + 0, bad + 0 }' "$W/gen.recs")
		lost=$(lost_of "$c")
		eq "gen: CPU $c: records in the trace, out-of-order" "$got" "$acc 0"
		eq "gen: CPU $c: written = attempted" "$(stat "$c" written)" "$att"
		eq "gen: CPU $c: delivered = accepted" "$(stat "$c" delivered)" "$acc"
		d=$(cpu_discarded "$W/gen.ctf" "$W/gen.txt" "$c") ||
			fail "gen: CPU $c: babeltrace2 reads the CPU's stream"
		eq "gen: CPU $c: babeltrace2 discarded = module lost" "$d" "$lost"
		note "gen: CPU $c: attempted $att, accepted $acc, lost $lost"
	done
}

# Tiny buffers and a slow daemon: losses, and babeltrace2 reports exactly
# the module's counts per CPU.
test_losses() {
	local n=2000 c rc=0 lost got
	note "losses: 2 x 4096-byte sub-buffers, 10 ms per sub-buffer"
	reset_module
	start_daemon loss -o "$W/loss" --subbuf-size 4096 --num-subbufs 2 \
		--test-delay-us 10000 -f 100 || { fail "loss: daemon did not start"; return; }
	eq "loss: --subbuf-size applied" "$(cat "$RT/subbuf_size")" 4096
	eq "loss: --num-subbufs applied" "$(cat "$RT/num_subbufs")" 2
	setup "loss: markers written" run_markers loss "$n" -s 200
	stop_daemon || rc=$?
	eq "loss: daemon exit status" "$rc" 0
	check "loss: unpack" unpack "$W/loss" "$W/loss.ctf"
	check "loss: babeltrace2 reads the trace" bt "$W/loss.ctf" "$W/loss.txt"
	markers "$W/loss.txt" loss >"$W/loss.markers"
	for c in "${CPUS[@]}"; do
		lost=$(lost_of "$c")
		check "loss: CPU $c: events were lost ($lost)" test "$lost" -gt 0
		eq "loss: CPU $c: module written" "$(stat "$c" written)" "$n"
		got=$(seqs "$W/loss.markers" "$c")
		eq "loss: CPU $c: events in trace = written - lost" "${got%% *}" "$((n - lost))"
		eq "loss: CPU $c: events in trace = delivered" "${got%% *}" "$(stat "$c" delivered)"
		eq "loss: CPU $c: in order, own payloads" "${got##* }" 0
		cpu_trace "$W/loss.ctf" "$c" "$W/loss.cpu$c"
		check "loss: CPU $c: babeltrace2 reads the CPU's stream" bt "$W/loss.cpu$c" "$W/loss.cpu$c.txt"
		eq "loss: CPU $c: babeltrace2 discarded = module lost" "$(discarded "$W/loss.cpu$c.txt")" "$lost"
		check "loss: CPU $c: summary line" grep -q "^CPU $c: $lost events lost (full $lost," "$W/loss.out"
	done
	reset_module
}

# SIGKILL mid-trace, restart into a new directory: everything the first
# daemon wrote decodes, and both together hold written - lost events.
test_sigkill() {
	local n=3000 c rc=0 c1 c2 all uniq over lost i
	local -a pids=()
	note "SIGKILL mid-trace and restart"
	reset_module
	start_daemon k1 -o "$W/k1" -f 200 || { fail "kill: first daemon did not start"; return; }
	# About 3 s of writing at least; the kill lands early in it (what is
	# written while no daemon runs waits in the ring, which holds the 3000
	# markers a CPU several times over).
	for c in "${CPUS[@]}"; do
		"$MARKERS" -s 32 -d 1000 "$c" "$n" kill &
		pids+=($!)
	done
	for ((i = 0; i < 100; i++)); do
		[[ -n $(find "$W/k1" -name 'cpu*.zst' -size +0c) ]] && break
		nap 0.1
	done
	nap 0.5
	kill -KILL "$DPID"
	wait "$DPID"
	DPID=
	note "kill: first daemon killed; files: $(cd "$W/k1" && ls -l | awk 'NR > 1 { printf "%s=%s ", $9, $5 }')"
	start_daemon k2 -o "$W/k2" -f 200 || { fail "kill: second daemon did not start"; return; }
	for c in "${pids[@]}"; do
		wait "$c" || fail "kill: marker writer failed"
	done
	stop_daemon || rc=$?
	eq "kill: second daemon exit status" "$rc" 0
	check "kill: unpack the killed daemon's trace" unpack "$W/k1" "$W/k1.ctf"
	check "kill: babeltrace2 reads the killed daemon's trace" bt "$W/k1.ctf" "$W/k1.txt"
	check "kill: unpack the second trace" unpack "$W/k2" "$W/k2.ctf"
	check "kill: babeltrace2 reads the second trace" bt "$W/k2.ctf" "$W/k2.txt"
	markers "$W/k1.txt" kill >"$W/k1.markers"
	markers "$W/k2.txt" kill >"$W/k2.markers"
	for c in "${CPUS[@]}"; do
		lost=$(lost_of "$c")
		c1=$(seqs "$W/k1.markers" "$c")
		c2=$(seqs "$W/k2.markers" "$c")
		check "kill: CPU $c: the killed daemon recorded events (${c1%% *})" test "${c1%% *}" -gt 0
		check "kill: CPU $c: the restarted daemon recorded the rest (${c2%% *})" test "${c2%% *}" -gt 0
		eq "kill: CPU $c: first trace in order" "${c1##* }" 0
		eq "kill: CPU $c: second trace in order" "${c2##* }" 0
		all=$(cat "$W/k1.markers" "$W/k2.markers" | awk -v c="$c" '$1 == c' | wc -l)
		uniq=$(cat "$W/k1.markers" "$W/k2.markers" | awk -v c="$c" '$1 == c { print $3 }' | sort -u | wc -l)
		over=$((all - uniq))
		eq "kill: CPU $c: events in both traces = written - lost" "$uniq" "$(($(stat "$c" written) - lost))"
		eq "kill: CPU $c: module written" "$(stat "$c" written)" "$n"
		# A kill between a packet's write and its PUT leaves that packet
		# in both traces (the kernel hands it out again): at most one.
		check "kill: CPU $c: at most one packet in both traces ($over events)" \
			test "$over" -le $((65536 / 40))
		note "kill: CPU $c: first ${c1}, second ${c2}, lost $lost, duplicated $over"
	done
}

# The output file system fills up: clean error, files decodable, the
# kernel side keeps tracing, and a new daemon picks up what was not written.
test_enospc() {
	local n=2000 c rc=0 err all uniq lost t
	# 1 MiB: room for a few packets even when a busy daemon stores them
	# nearly raw at a fast level; the 4 MB the writers produce do not fit.
	note "ENOSPC on a 1 MiB tmpfs"
	reset_module
	mkdir -p "$W/small"
	mount -t tmpfs -o size=1m tmpfs "$W/small" || { fail "enospc: cannot mount tmpfs"; return; }
	start_daemon nospc -o "$W/small/t" -f 100 || { fail "enospc: daemon did not start"; umount "$W/small"; return; }
	run_markers nospc "$n" -r -s 1000 || fail "enospc: marker writers failed"
	wait_exit "$DPID" 60 || rc=$?
	DPID=
	eq "enospc: daemon exit status" "$rc" 1
	err=$(tail -n1 "$W/nospc.err")
	check "enospc: one line naming the file and the cause: $err" \
		grep -Eq "^ringtraced: $W/small/t/cpu[0-9]+-[0-9]{6}\.zst: No space left on device$" <<<"$err"
	check "enospc: every .zst file still tests good with zstd -t" zstd -qt "$W"/small/t/*.zst
	check "enospc: unpack" unpack "$W/small/t" "$W/nospc.ctf"
	check "enospc: babeltrace2 reads what was written" bt "$W/nospc.ctf" "$W/nospc.txt"
	eq "enospc: tracing still on (the kernel side keeps running)" "$(cat "$RT/tracing_on")" 1
	check "enospc: markers still accepted" run_markers nospc2 10
	start_daemon after -o "$W/after" -f 100 || { fail "enospc: next daemon did not start"; umount "$W/small"; return; }
	rc=0
	stop_daemon || rc=$?
	eq "enospc: next daemon exit status" "$rc" 0
	check "enospc: unpack the next trace" unpack "$W/after" "$W/after.ctf"
	check "enospc: babeltrace2 reads the next trace" bt "$W/after.ctf" "$W/after.txt"
	markers "$W/nospc.txt" nospc >"$W/nospc.markers"
	markers "$W/after.txt" nospc >"$W/after.markers"
	markers "$W/after.txt" nospc2 >"$W/after2.markers"
	t=0
	for c in "${CPUS[@]}"; do
		lost=$(lost_of "$c")
		t=$((t + $(seqs "$W/nospc.markers" "$c" | cut -d' ' -f1)))
		eq "enospc: CPU $c: in order before the error" "$(seqs "$W/nospc.markers" "$c" | cut -d' ' -f4)" 0
		all=$(cat "$W/nospc.markers" "$W/after.markers" | awk -v c="$c" '$1 == c' | wc -l)
		uniq=$(cat "$W/nospc.markers" "$W/after.markers" | awk -v c="$c" '$1 == c { print $3 }' | sort -u | wc -l)
		eq "enospc: CPU $c: no packet in both traces" "$((all - uniq))" 0
		# The 10 nospc2 markers written while no daemon ran count too.
		eq "enospc: CPU $c: both traces hold written - lost" \
			"$((uniq + $(seqs "$W/after2.markers" "$c" | cut -d' ' -f1)))" \
			"$(($(stat "$c" written) - lost))"
	done
	check "enospc: events were written before the error ($t)" test "$t" -gt 0
	umount "$W/small"
}

# Size/count rotation, SIGHUP, SIGUSR1.
test_rotation() {
	local n=1500 c rc=0 files top got i
	note "rotation: 16 KiB packets, --max-size 40K (two of them) --max-files 3"
	reset_module
	start_daemon rot -o "$W/rot" -s 40K -n 3 -f 100 --subbuf-size 16K \
		--num-subbufs 64 || { fail "rot: daemon did not start"; return; }
	setup "rot: markers written" run_markers rot "$n" -r -s 300
	kill -USR1 "$DPID"
	for ((i = 0; i < 100; i++)); do
		grep -q '^ringtraced: statistics' "$W/rot.out" && break
		nap 0.1
	done
	# Seen while the daemon runs: stdout is flushed even when not a tty.
	check "rot: SIGUSR1 printed statistics" grep -q '^ringtraced: statistics' "$W/rot.out"
	kill -HUP "$DPID"
	wait_for "$W/rot.err" rotated 30
	stop_daemon || rc=$?
	eq "rot: daemon exit status" "$rc" 0
	check "rot: SIGHUP rotated" grep -q 'rotated' "$W/rot.err"
	check "rot: every file tests good with zstd -t" zstd -qt "$W"/rot/*.zst
	check "rot: unpack" unpack "$W/rot" "$W/rot.ctf"
	check "rot: babeltrace2 reads the rotated trace" bt "$W/rot.ctf" "$W/rot.txt"
	markers "$W/rot.txt" rot >"$W/rot.markers"
	for c in "${CPUS[@]}"; do
		files=$(cd "$W/rot" && ls | grep -c "^cpu$c-[0-9]\{6\}\.zst$")
		top=$(cd "$W/rot" && ls | sed -n "s/^cpu$c-0*\([0-9][0-9]*\)\.zst$/\1/p" | sort -n | tail -n1)
		check "rot: CPU $c: 1..3 files kept ($files)" test "$files" -ge 1 -a "$files" -le 3
		check "rot: CPU $c: older files were removed (newest is #$top)" test "${top:-0}" -gt 3
		check "rot: CPU $c: no unnumbered file" test ! -e "$W/rot/cpu$c.zst"
		got=$(seqs "$W/rot.markers" "$c")
		read -r cnt first last bad <<<"$got"
		eq "rot: CPU $c: newest events kept, contiguous, in order" \
			"$last $bad $cnt" "$((n - 1)) 0 $((last - first + 1))"
		eq "rot: CPU $c: nothing lost" "$(lost_of "$c")" 0
	done
	reset_module
}

# stored FILE: the chunk starts with a stored frame (descriptor 0xa0, no
# checksum); a packed chunk's frames carry a checksum.  (Read by bash
# itself: an od for each of a trace's chunks took seconds under TCG.)
stored() {
	local LC_ALL=C hdr
	IFS= read -r -N 5 hdr <"$1" || return 1
	[[ ${hdr:4:1} == $'\xa0' ]]
}

# chunks DIR CPU: the sequence numbers of CPU's chunk files, "1 2 3"
# (six digits in the name, drain.c: the glob's order is theirs).
chunks() {
	local f n
	local -a seqs=()
	for f in "$1/cpu$2-"[0-9][0-9][0-9][0-9][0-9][0-9].zst; do
		[[ -e $f ]] || continue
		n=${f##*-}
		seqs+=("$((10#${n%.zst}))")
	done
	echo "${seqs[*]}"
}

# nth_chunks TRACE SEQ OUT: a trace directory with every CPU's chunk SEQ.
nth_chunks() {
	mkdir -p "$3" && cp "$1/metadata" "$1"/cpu*-"$(printf %06d "$2")".zst "$3/"
}

# SIGHUP closes every CPU's chunk: what was written before it is in the
# first chunk, packed once closed, what came after in the next.
test_hup() {
	local c rc=0 i
	note "SIGHUP closes the chunks"
	reset_module
	start_daemon hup -o "$W/hup" -f 100 || { fail "hup: daemon did not start"; return; }
	setup "hup: first markers" run_markers hup1 100
	kill -HUP "$DPID"
	for ((i = 0; i < 100; i++)); do
		grep -q rotated "$W/hup.err" && break
		nap 0.1
	done
	check "hup: the daemon says the chunks were closed" grep -q rotated "$W/hup.err"
	setup "hup: second markers" run_markers hup2 100
	stop_daemon || rc=$?
	eq "hup: daemon exit status" "$rc" 0
	# Every CPU's first chunks in one trace, their second in another:
	# each chunk's markers are told apart by their CPU.
	for i in 1 2; do
		nth_chunks "$W/hup" "$i" "$W/hup.$i" && unpack "$W/hup.$i" "$W/hup.$i.ctf" &&
			bt "$W/hup.$i.ctf" "$W/hup.$i.txt"
		markers "$W/hup.$i.txt" hup1 >"$W/hup.$i.hup1"
		markers "$W/hup.$i.txt" hup2 >"$W/hup.$i.hup2"
	done
	for c in "${CPUS[@]}"; do
		eq "hup: CPU $c: two chunks" "$(chunks "$W/hup" "$c")" "1 2"
		check "hup: CPU $c: both were packed at stop" \
			eval 'test -s "$W/hup/cpu$c-000001.zst" -a -s "$W/hup/cpu$c-000002.zst" &&
			      ! stored "$W/hup/cpu$c-000001.zst" && ! stored "$W/hup/cpu$c-000002.zst"'
		eq "hup: CPU $c: chunk 1 holds the markers before SIGHUP, in order" \
			"$(seqs "$W/hup.1.hup1" "$c") $(seqs "$W/hup.1.hup2" "$c" | cut -d' ' -f1)" \
			"100 0 99 0 0"
		eq "hup: CPU $c: chunk 2 the markers after it" \
			"$(seqs "$W/hup.2.hup2" "$c") $(seqs "$W/hup.2.hup1" "$c" | cut -d' ' -f1)" \
			"100 0 99 0 0"
	done
}

# has_table CHUNK: the packed chunk has a thread table in front of its time
# index (lib/chunk_index.h): the index's data_bytes (its offset) is where
# the table's footer ("RTHT") ends.
has_table() {
	local size db
	size=$(wc -c <"$1")
	db=$(tail -c 40 "$1" | od -An -tu8 -N8 | tr -d ' ')
	[[ -n $db && $db -gt 4 && $db -lt $size &&
	   $(tail -c +$((db - 3)) "$1" | head -c 4) == RTHT ]]
}

# in_window BEGIN: report's item lines at or after BEGIN (sec.nsec), from stdin.
in_window() {
	awk -v b="$1" 'BEGIN { split(b, w, ".") }
		/^\[[0-9]+\.[0-9]+\]/ {
			split(substr($1, 2, length($1) - 2), t, ".")
			if (t[1] + 0 > w[1] + 0 || (t[1] + 0 == w[1] + 0 && t[2] >= w[2])) print
		}'
}

# The packers' thread tables: with sched_switch and the state dump
# recorded, every packed chunk has its thread table, and a window read by
# seeking knows the processes of the state dump: report --pid of this
# shell (dumped when tracing started) from a time after SIGHUP, in the
# second chunks, prints the full report's lines of it.
test_thread_table() {
	local rc=0 e f b full win n=0
	note "thread tables: sched_switch and the state dump, SIGHUP between"
	reset_module
	for e in sched_switch ringtrace_statedump_task ringtrace_statedump_cpu; do
		echo 1 >"$RT/events/$e/enable"
	done
	start_daemon tt -o "$W/tt" -f 100 || { fail "tt: daemon did not start"; return; }
	check "tt: first markers" run_markers tt1 200 -d 2000
	kill -HUP "$DPID"
	for ((e = 0; e < 100; e++)); do
		grep -q rotated "$W/tt.err" && break
		nap 0.1
	done
	check "tt: second markers" run_markers tt2 200 -d 2000
	stop_daemon || rc=$?
	for e in sched_switch ringtrace_statedump_task ringtrace_statedump_cpu; do
		echo 0 >"$RT/events/$e/enable"
	done
	eq "tt: daemon exit status" "$rc" 0
	for f in "$W"/tt/cpu*-*.zst; do
		n=$((n + 1))
		check "tt: $(basename "$f"): packed, with a thread table" \
			eval '! stored "$f" && has_table "$f"'
	done
	check "tt: two chunks a CPU at least ($n)" test "$n" -ge $((2 * ${#CPUS[@]}))
	b=$("$CLI" report -e ringtrace_marker "$W/tt" 2>/dev/null | grep -m1 ' data="tt2 ' |
		sed -n 's/^\[\([0-9.]*\)\].*/\1/p')
	full=$("$CLI" report --pid $$ "$W/tt" 2>/dev/null | in_window "$b")
	win=$("$CLI" report --pid $$ --begin "$b" "$W/tt" 2>/dev/null | in_window "$b")
	check "tt: this shell ($$) has events after SIGHUP" test -n "$full"
	check "tt: report --pid $$ --begin $b prints the full report's lines of it" \
		test "$win" == "$full"
	check "tt: the window read the first chunks' tables, no note" \
		eval '[[ -z $("$CLI" report --begin "$b" "$W/tt" 2>&1 >/dev/null) ]]'
}

# --chunk-time: a slow writer's chunks close by age, not by size.
test_chunk_time() {
	local c rc=0 n
	note "--chunk-time 300ms"
	reset_module
	start_daemon age -o "$W/age" -t 300ms -f 100 || { fail "age: daemon did not start"; return; }
	setup "age: 40 markers per CPU over 2 s" run_markers age 40 -d 50000
	stop_daemon || rc=$?
	eq "age: daemon exit status" "$rc" 0
	check "age: unpack" unpack "$W/age" "$W/age.ctf"
	check "age: babeltrace2 reads it" bt "$W/age.ctf" "$W/age.txt"
	markers "$W/age.txt" age >"$W/age.markers"
	for c in "${CPUS[@]}"; do
		n=$(chunks "$W/age" "$c" | wc -w)
		check "age: CPU $c: closed by age into several chunks ($n)" test "$n" -ge 3
		eq "age: CPU $c: every marker, in order" "$(seqs "$W/age.markers" "$c")" "40 0 39 0"
	done
}

# hogs_start / hogs_stop: a busy loop on every CPU, at the workload's
# priority: the idle-priority packers get no CPU time at all.
HOGS=()
hogs_start() {
	local c
	for c in "${CPUS[@]}"; do
		taskset -c "$c" sh -c 'while :; do :; done' &
		HOGS+=($!)
	done
}
hogs_stop() {
	((${#HOGS[@]})) || return 0
	kill "${HOGS[@]}"
	wait "${HOGS[@]}" 2>/dev/null
	HOGS=()
}

# The "chunks:" lines of the daemon's summaries (SIGUSR1) in OUT, read by
# bash itself (test_backlog polls them): their number in CHUNKS_LINES,
# "N B" of the last one's "N waiting (B bytes stored)" in WAITING.
CHUNKS_LINES=0
WAITING=
read_chunks_lines() {
	local l re='^chunks: .*\), ([0-9]*) waiting \(([0-9]*) bytes stored\)'
	CHUNKS_LINES=0
	WAITING=
	while IFS= read -r l; do
		[[ $l == "chunks: "* ]] || continue
		CHUNKS_LINES=$((CHUNKS_LINES + 1))
		[[ $l =~ $re ]] && WAITING="${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
	done <"$1"
}

# waiting OUT: "N B" of the last "chunks: ... N waiting (B bytes stored)".
waiting() {
	read_chunks_lines "$1"
	echo "$WAITING"
}

# stats_now NAME: SIGUSR1 to the daemon, wait for one more "chunks:" line.
stats_now() {
	local n i
	read_chunks_lines "$W/$1.out"
	n=$CHUNKS_LINES
	kill -USR1 "$DPID"
	for ((i = 0; i < 100; i++)); do
		read_chunks_lines "$W/$1.out"
		((CHUNKS_LINES > n)) && return 0
		nap 0.1
	done
	return 1
}

# A load above what the packers compress: nothing is lost while the
# stored backlog grows; once the load stops, the packers catch up while
# recording goes on, and babeltrace2 reads every chunk.
test_backlog() {
	local c rc=0 i t0 w packed
	note "backlog: CPUs kept busy, markers recorded, one level-19 packer"
	reset_module
	# The module's default ring (4 MiB): what a user gets is what must
	# lose nothing under the hogs.  The suite's 1 MiB lost 533 markers
	# on 6.12-rt once, with the host's 2 cores running three guests.
	# 1.2 MB of markers a CPU: nine chunks of 256 KiB or so waiting at
	# the end of the load (the check wants more than four).
	echo "$DEFAULT_NUM_SUBBUFS" >"$RT/num_subbufs"
	start_daemon blog -o "$W/blog" -s 256K -l 19 -j 1 -f 200 ||
		{ fail "backlog: daemon did not start"; return; }
	hogs_start
	setup "backlog: markers written" run_markers blog 3000 -r -s 400 -d 200
	stats_now blog
	hogs_stop
	w=$(waiting "$W/blog.out")
	note "backlog: at the end of the load: $(grep '^chunks: ' "$W/blog.out" | tail -n1)"
	check "backlog: the stored backlog grew during the load (${w:-none})" test "${w%% *}" -gt 4
	for c in "${CPUS[@]}"; do
		eq "backlog: CPU $c: nothing lost while it grew" "$(lost_of "$c")" 0
	done
	# The load stopped: idle CPU time, the packer catches up.
	t0=$SECONDS
	for ((i = 0; i < 600; i++)); do
		nap 0.3
		stats_now blog
		[[ $WAITING == "0 0" ]] && break
	done
	note "backlog: $((SECONDS - t0)) s later: $(grep '^chunks: ' "$W/blog.out" | tail -n1)"
	eq "backlog: compressed while still recording once the load stopped" "$(waiting "$W/blog.out")" "0 0"
	stop_daemon || rc=$?
	eq "backlog: daemon exit status" "$rc" 0
	check "backlog: nothing waits after the stop" \
		grep -Eq '^chunks: [0-9]+ compressed .*, 0 waiting \(0 bytes stored\), 0 uncompressed' "$W/blog.out"
	packed=0
	for f in "$W"/blog/cpu*.zst; do
		stored "$f" || packed=$((packed + 1))
	done
	eq "backlog: every chunk packed" "$packed" "$(ls "$W"/blog/cpu*.zst | wc -l)"
	check "backlog: no temporary file left" test -z "$(ls -A "$W/blog" | grep '\.tmp$')"
	check "backlog: unpack" unpack "$W/blog" "$W/blog.ctf"
	check "backlog: babeltrace2 reads it" bt "$W/blog.ctf" "$W/blog.txt"
	markers "$W/blog.txt" blog >"$W/blog.markers"
	for c in "${CPUS[@]}"; do
		eq "backlog: CPU $c: every marker, in order" "$(seqs "$W/blog.markers" "$c")" "3000 0 2999 0"
	done
}

# The stop compresses what is left, with progress; a second SIGTERM
# leaves the rest stored and readable, and ringtrace compress finishes it
# (it refuses the directory while the daemon records into it).
test_second_signal() {
	local c rc=0 i before after left same
	note "a second SIGTERM while the backlog is compressed at stop"
	reset_module
	# A ring that holds the whole load (4 MiB per CPU): what is tested is
	# the stop, not the drain keeping up under the hogs (test_backlog).
	# 1.6 MB of markers a CPU: six chunks each to compress at the stop,
	# more than a level-19 packer gets through before the second SIGTERM.
	start_daemon sig2 -o "$W/sig2" -s 256K -l 19 -j 1 -f 200 --num-subbufs 64 ||
		{ fail "sig2: daemon did not start"; return; }
	if ((USE_CLI)); then
		rc=0
		"$CLI" compress "$W/sig2" >/dev/null 2>"$W/sig2.compress-busy" || rc=$?
		eq "sig2: ringtrace compress refuses a directory being recorded" "$rc" 1
		check "sig2: ... and says why" grep -q 'ringtraced is recording into it' "$W/sig2.compress-busy"
	fi
	hogs_start
	setup "sig2: markers written" run_markers sig2 4000 -r -s 400 -d 200
	# The hogs stay: at normal priority at stop, the packer gets half a CPU.
	kill -TERM "$DPID"
	for ((i = 0; i < 300; i++)); do
		grep -q 'compressing: [0-9]* chunks' "$W/sig2.err" && break
		nap 0.1
	done
	check "sig2: progress while compressing at stop" grep -q 'compressing: [0-9]* chunks' "$W/sig2.err"
	check "sig2: the progress says how to leave the rest" grep -q 'SIGINT or SIGTERM leaves the rest uncompressed' "$W/sig2.err"
	kill -TERM "$DPID"
	rc=0
	wait_exit "$DPID" 30 || rc=$?
	DPID=
	hogs_stop
	eq "sig2: a second SIGTERM stops at once, cleanly" "$rc" 0
	left=$(sed -n 's/^ringtraced: \([0-9]*\) chunks (.*) left uncompressed.*/\1/p' "$W/sig2.err")
	check "sig2: it says how many chunks are left uncompressed (${left:-none})" test "${left:-0}" -gt 0
	check "sig2: no temporary file left" test -z "$(ls -A "$W/sig2" | grep '\.tmp$')"
	((USE_CLI)) || return 0
	check "sig2: ringtrace check reads the trace as it is" sh -c "'$CLI' check '$W/sig2' >'$W/sig2.check1'"
	check "sig2: ... and counts the stored chunks" grep -q "^chunks: [0-9]* compressed, $left stored" "$W/sig2.check1"
	# report's status and markers too: two failures print the same nothing.
	before=0
	"$CLI" report -e ringtrace_marker "$W/sig2" >"$W/sig2.before" 2>"$W/sig2.before.err" || before=$?
	check "sig2: ringtrace compress compresses them" sh -c "'$CLI' compress '$W/sig2' >'$W/sig2.compress'"
	check "sig2: ... and says how many" grep -q "^$W/sig2: $left chunks compressed" "$W/sig2.compress"
	"$CLI" check "$W/sig2" >"$W/sig2.check2" 2>&1
	check "sig2: none is stored afterwards" grep -Eq '^chunks: [0-9]+ compressed$' "$W/sig2.check2"
	after=0
	"$CLI" report -e ringtrace_marker "$W/sig2" >"$W/sig2.after" 2>"$W/sig2.after.err" || after=$?
	same=differ
	cmp -s "$W/sig2.before" "$W/sig2.after" && same=same
	eq "sig2: the same events before and after (report's exit before and after, sig2 markers, lines)" \
		"$before $after $(grep -c ' ringtrace_marker: .*"sig2 cpu=' "$W/sig2.before") $same" \
		"0 0 $((4000 * ${#CPUS[@]})) same"
	check "sig2: unpack" unpack "$W/sig2" "$W/sig2.ctf"
	check "sig2: babeltrace2 reads it" bt "$W/sig2.ctf" "$W/sig2.txt"
	markers "$W/sig2.txt" sig2 >"$W/sig2.markers"
	for c in "${CPUS[@]}"; do
		eq "sig2: CPU $c: every marker, in order" "$(seqs "$W/sig2.markers" "$c")" "4000 0 3999 0"
	done
}

# SIGKILL at random moments while chunks close every few hundred ms and a
# slow packer works on them, restart after each: every chunk of every run
# decodes, none is missing, and all runs together hold written - lost.
test_kill_packing() {
	local k kills=6 rc c d n ms tmps=0 seqs_ok=1 all uniq rep lost s t0=$SECONDS
	local -a closed got want
	local -a pids=()
	note "SIGKILL while packing: $kills kills"
	reset_module
	for c in "${CPUS[@]}"; do
		"$MARKERS" -s 200 -r -d 800 "$c" 10000000 kp >/dev/null 2>&1 &
		pids+=($!)
	done
	for ((k = 1; k <= kills; k++)); do
		start_daemon kp$k -o "$W/kp$k" -s 64K --subbuf-size 16K -l 19 -j 1 -f 100 ||
			{ fail "kill-pack: daemon $k did not start"; break; }
		ms=$((300 + RANDOM * 900 / 32768))
		nap "$((ms / 1000)).$((ms % 1000 / 100))$((ms % 100 / 10))$((ms % 10))"
		# Aim the kill into a packing: at the first moment after that
		# random delay when a packer has its output open (a .tmp file),
		# or 2 s later.
		for ((n = 0; n < 200; n++)); do
			compgen -G "$W/kp$k/.*.tmp" >/dev/null && break
			nap 0.01
		done
		kill -KILL "$DPID"
		wait "$DPID" 2>/dev/null
		DPID=
		ls -A "$W/kp$k" | grep -q '\.tmp$' && tmps=$((tmps + 1))
	done
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	note "kill-pack: $kills kills in $((SECONDS - t0)) s"
	t0=$SECONDS
	# The last daemon drains what the kernel holds and stops cleanly.
	start_daemon kp0 -o "$W/kp0" --subbuf-size 16K -l 19 -j 1 -f 100 || fail "kill-pack: last daemon"
	rc=0
	stop_daemon || rc=$?
	eq "kill-pack: the last daemon's exit status" "$rc" 0
	check "kill-pack: kills landed while a chunk was being packed ($tmps of $kills)" \
		test "$tmps" -ge $((kills * 3 / 4))
	# ringtrace check -v decodes every packet of every chunk and lists
	# each one (file, seq, events): the totals come from there.
	: >"$W/kp.packets"
	for ((k = 0; k <= kills; k++)); do
		d=$W/kp$k
		[[ -d $d ]] || continue
		# (In bash: a process start is 0.1 s under TCG, and this runs
		# for each CPU of each run.)
		for c in "${CPUS[@]}"; do
			read -r -a got <<<"$(chunks "$d" "$c")"
			want=()
			for ((n = 1; n <= ${#got[@]}; n++)); do
				want+=("$n")
			done
			[[ "${got[*]}" == "${want[*]}" ]] ||
				{ seqs_ok=0; note "kill-pack: $d CPU $c chunks: ${got[*]}"; }
		done
		"$CLI" check -v "$d" >"$d.check" 2>&1 ||
			fail "kill-pack: ringtrace check $d: $(tail -n2 "$d.check")"
		awk '/^  / && match($0, /\/cpu[0-9]+-[0-9]+\.zst offset=[0-9]+ seq=[0-9]+ events=[0-9]+ /) {
			split(substr($0, RSTART + 4, RLENGTH - 5), f, /[- =]/)
			print f[1], f[6], f[8]
		}' "$d.check" >>"$W/kp.packets"
		# Every chunk but the newest of each CPU is closed: whole frames.
		closed=()
		for c in "${CPUS[@]}"; do
			read -r -a got <<<"$(chunks "$d" "$c")"
			for s in "${got[@]}"; do
				((s < ${#got[@]})) || continue
				printf -v s '%s/cpu%s-%06d.zst' "$d" "$c" "$s"
				closed+=("$s")
			done
		done
		((${#closed[@]} == 0)) || zstd -qt "${closed[@]}" ||
			fail "kill-pack: $d: a closed chunk does not decode"
		if ((k == 0 || k == kills / 2)); then
			if unpack "$d" "$d.ctf" && bt "$d.ctf" "$d.txt"; then
				pass "kill-pack: babeltrace2 reads run $k"
			else
				fail "kill-pack: babeltrace2 reads run $k: $(head -c 300 "$d.txt.err")"
			fi
		fi
	done
	note "kill-pack: every run checked in $((SECONDS - t0)) s"
	eq "kill-pack: no chunk missing in any run (numbers contiguous)" "$seqs_ok" 1
	for c in "${CPUS[@]}"; do
		lost=$(lost_of "$c")
		# A packet that a kill caught between its write and its PUT is
		# in two runs with the same seq: counted once.
		read -r all uniq rep <<<"$(awk -v c="$c" '$1 == c {
			all += $3; n[$2]++; if (n[$2] == 1) { u += $3 } else { r++ }
		} END { printf "%d %d %d\n", all, u, r }' "$W/kp.packets")"
		eq "kill-pack: CPU $c: all runs hold written - lost events" "$uniq" "$(($(stat "$c" written) - lost))"
		check "kill-pack: CPU $c: at most one packet repeated per kill ($rep)" test "$rep" -le "$kills"
		note "kill-pack: CPU $c: $uniq events, $lost lost, $rep packets repeated ($((all - uniq)) events)"
	done
	reset_module
}

# notify_listen SOCK LOG: sd_notify's datagrams into LOG until STOPPING=1;
# its pid in NPID.
NPID=
notify_listen() {
	local i
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(300)
with open(sys.argv[2], "w") as out:
    while True:
        m = s.recv(4096).decode()
        out.write(m + "\n")
        out.flush()
        if "STOPPING=1" in m:
            break
' "$1" "$2" &
	NPID=$!
	for ((i = 0; i < 100; i++)); do
		[[ -S $1 ]] && return 0
		nap 0.1
	done
	return 1
}

# --service: syslog priorities on stderr, READY=1/STOPPING=1 through
# $NOTIFY_SOCKET, a new directory under /var/lib/ringtrace.
test_service() {
	local c rc=0 i dirs
	note "--service"
	reset_module
	rm -rf /var/lib/ringtrace
	notify_listen "$W/notify.sock" "$W/notify.log" ||
		{ fail "service: no notify socket"; return; }
	local lpid=$NPID
	export NOTIFY_SOCKET=$W/notify.sock
	start_daemon svc --service -f 200 || { fail "service: daemon did not start"; unset NOTIFY_SOCKET; kill "$lpid"; return; }
	unset NOTIFY_SOCKET
	for ((i = 0; i < 100; i++)); do
		grep -q READY=1 "$W/notify.log" 2>/dev/null && break
		nap 0.1
	done
	check "service: READY=1 sent" grep -qx READY=1 "$W/notify.log"
	setup "service: markers" run_markers svc 100
	stop_daemon || rc=$?
	eq "service: exit status" "$rc" 0
	wait_exit "$lpid" 30
	check "service: STOPPING=1 sent" grep -qx STOPPING=1 "$W/notify.log"
	check "service: every stderr line has a syslog priority" \
		test "$(grep -cv '^<[0-7]>ringtraced: ' "$W/svc.err")" = 0
	dirs=$(ls -d /var/lib/ringtrace/2* 2>/dev/null | wc -l)
	eq "service: one trace directory under /var/lib/ringtrace" "$dirs" 1
	check "service: unpack" unpack /var/lib/ringtrace/2* "$W/svc.ctf"
	check "service: babeltrace2 reads it" bt "$W/svc.ctf" "$W/svc.txt"
	markers "$W/svc.txt" svc >"$W/svc.markers"
	for c in "${CPUS[@]}"; do
		eq "service: CPU $c markers" "$(seqs "$W/svc.markers" "$c")" "100 0 99 0"
	done
	rm -rf /var/lib/ringtrace
}

# The writer and the checks of a snapshot (shared with the CLI's suite).
. "$REPO/tools/tests/trigger_checks.sh"

# trigger_state: what --trigger changes and puts back at stop (the
# geometry it sets stays, as without --trigger), and the hits counted.
trigger_state() {
	local f
	for f in tracing_on mode events/ringtrace_marker/trigger; do
		printf '%s: %s\n' "$f" "$(tr '\n' ' ' <"$RT/$f")"
	done
	grep -E '^(state|hits) ' "$RT/triggered" | tr '\n' ' '
}

# ringtraced --trigger as the service runs it (--service, systemd's
# notify socket): overwrite mode, nothing drained; the writer
# (trigger_writer) emits numbered markers and, at random moments, three
# matching ones: three snapshots of their own (--max 3), each holding its
# FAIL, the markers before it contiguous as far back as the 4 x 4 KiB
# buffer held, the 200 of --after and the kernel's trigger marker;
# babeltrace2 reads each; a fourth FAIL after --max saves nothing, and the
# service is still running and recording.  --max 1 gives one, under
# --root with --max-total, which removes an older snapshot at start.  Bad
# triggers are refused in one line with the module's state unchanged; at
# stop the state is put back.
test_trigger() {
	local out=$W/trg3 rc=0 before n k ctf lpid
	local -a dirs
	note "--trigger"
	reset_module
	echo reset >"$RT/triggered"
	before=$(trigger_state)
	trigger_writer "$W/trg-writer.py"
	notify_listen "$W/trg.sock" "$W/trg.notify" ||
		{ fail "--trigger: no notify socket"; return; }
	lpid=$NPID
	export NOTIFY_SOCKET=$W/trg.sock
	start_daemon trg3 --service -o "$out" --subbuf-size 4K --num-subbufs 4 \
		--trigger 'ringtrace_marker: data == FAIL*' --after 500ms --max 3 ||
		{ fail "--trigger: daemon did not start"; unset NOTIFY_SOCKET; kill "$lpid"; return; }
	unset NOTIFY_SOCKET
	eq "--trigger: overwrite mode" "$(cat "$RT/mode")" overwrite
	eq "--trigger: tracing on" "$(cat "$RT/tracing_on")" 1
	# 4 x 4 KiB: ~1100 markers fill it.
	taskset -c 0 python3 "$W/trg-writer.py" "$RT" "$W/trg3.out" "$W/trg3.log" 3 1100
	eq "--trigger: the writer's status" "$?" 0
	sed 's/^/# writer: /' "$W/trg3.log"
	mapfile -t dirs < <(sed -nE 's/^snapshot [0-9]+ in ([^:]+): .*/\1/p' "$W/trg3.out")
	n=$(find "$out" -mindepth 1 -maxdepth 1 -type d -name '*-ringtrace_marker' | wc -l)
	check "--trigger: three FAILs, --max 3: three snapshots ($n), none for the fourth" \
		test "$n" -eq 3 -a "${#dirs[@]}" -eq 3
	check "--trigger: snapshot names YYYYmmdd-HHMMSS.mmm-EVENT" \
		test "$(basename "${dirs[0]:-x}" | grep -cE '^[0-9]{8}-[0-9]{6}\.[0-9]{3}-ringtrace_marker$')" -eq 1
	check "--trigger: recording went on after each snapshot (tracing_on 1)" \
		test "$(grep -c '^tracing_on [123] 1$' "$W/trg3.log")" -eq 3
	check "--trigger: the writer wrote its fourth FAIL and the 200 after it" \
		grep -q '^done ' "$W/trg3.log"
	# The first two read through (the third is like the second: seconds
	# of babeltrace2 under TCG for nothing new).
	for ((k = 1; k <= ${#dirs[@]} && k <= 2; k++)); do
		ctf=$W/trg3-$k.ctf
		check "--trigger: snapshot $k unpacks" unpack "${dirs[k - 1]}" "$ctf"
		check_trigger_snapshot "--trigger: snapshot" "$k" "$ctf" "$W/trg3.log"
	done
	# After --max: still running, tracing on, the trigger put back.
	check "--trigger: after --max the service still runs" kill -0 "$DPID"
	eq "--trigger: after --max tracing is on" "$(cat "$RT/tracing_on")" 1
	eq "--trigger: after --max the marker's trigger is none" \
		"$(cat "$RT/events/ringtrace_marker/trigger")" none
	check "--trigger: the log says --max was reached" \
		grep -q -- '--max 3: no more snapshots; tracing goes on' "$W/trg3.err"
	check "--trigger: STATUS= says so" \
		grep -q '^STATUS=flight recorder: 3 snapshots in .*; --max 3 reached: recording, saving no more$' "$W/trg.notify"
	stop_daemon || rc=$?
	eq "--trigger: exit status after SIGTERM" "$rc" 0
	wait_exit "$lpid" 30
	eq "--trigger: one READY=1 (the snapshots' ringtraced --once says none)" \
		"$(grep -cx READY=1 "$W/trg.notify")" 1
	eq "--trigger: one STOPPING=1" "$(grep -cx STOPPING=1 "$W/trg.notify")" 1
	check "--trigger: the summary" grep -q '^ringtraced: stopped: 3 snapshots in ' "$W/trg3.out"
	check "--trigger: every stderr line has a syslog priority" \
		test "$(grep -cv '^<[0-7]>ringtraced: ' "$W/trg3.err")" = 0
	check "--trigger: at stop the state is put back (tracing_on, mode, trigger, triggered)" \
		test "$(trigger_state)" = "$before"

	# --max 1, under --root with --max-total: an older snapshot over the
	# budget goes at start; after the snapshot the trigger is put back, so
	# a second FAIL is no hit at all.
	local root=$W/trg1 old=20200101-000000.000-ringtrace_marker i
	mkdir -p "$root/$old"
	echo metadata >"$root/$old/metadata"
	head -c 2M /dev/zero >"$root/$old/cpu0-000001.zst"
	# What run A left in the buffers (its FAIL 4) is not this one's.
	reset_module
	echo reset >"$RT/triggered"
	start_daemon trg1 --root "$root" --max-total 1M \
		--trigger 'ringtrace_marker: data == FAIL*' --max 1 ||
		{ fail "--trigger --max 1: daemon did not start"; return; }
	check "--trigger --max-total: the older snapshot over the budget removed" \
		test ! -e "$root/$old"
	printf 'FAIL 1' >"$RT/marker"
	for ((i = 0; i < 300; i++)); do
		grep -q '^snapshot 1 in ' "$W/trg1.out" &&
			grep -qx none "$RT/events/ringtrace_marker/trigger" && break
		nap 0.1
	done
	printf 'FAIL 2' >"$RT/marker"
	n=$(find "$root" -mindepth 1 -maxdepth 1 -type d -name '*-ringtrace_marker' | wc -l)
	eq "--trigger --max 1: one snapshot" "$n" 1
	eq "--trigger --max 1: the second FAIL no hit (the trigger put back)" \
		"$(sed -n 's/^hits //p' "$RT/triggered")" 1
	check "--trigger --max 1: its snapshot unpacks" unpack "$root"/2*-ringtrace_marker "$W/trg1.ctf"
	rc=0
	trigger_seq "$W/trg1.ctf" "$W/trg1.seq" || rc=$?
	eq "--trigger --max 1: babeltrace2 reads it ($(head -c 300 "$W/trg1.seq.bt-err"))" "$rc" 0
	eq "--trigger --max 1: it holds FAIL 1, then the trigger's marker" \
		"$(grep -v '^[0-9]' "$W/trg1.seq" | tr '\n' ' ')" "FAIL 1 END "
	check "--trigger --max 1: still running" kill -0 "$DPID"
	rc=0
	stop_daemon || rc=$?
	eq "--trigger --max 1: exit status" "$rc" 0
	check "--trigger --max 1: the state put back" test "$(trigger_state)" = "$before"

	# Refused, in one line, nothing changed (not the geometry either).
	before="$(trigger_state) $(cat "$RT/subbuf_size")"
	"$DAEMON" -o "$W/trg-bad1" --subbuf-size 8K \
		--trigger 'ringtrace_marker: data == FAIL* && nosuch == 1' \
		>/dev/null 2>"$W/trg-bad1.err"
	eq "--trigger with an unknown field: exit status" "$?" 1
	check "--trigger with an unknown field: one line naming it" \
		grep -q "unknown field 'nosuch'" "$W/trg-bad1.err"
	check "--trigger with an unknown field: one line" test "$(wc -l <"$W/trg-bad1.err")" -eq 1
	"$DAEMON" -o "$W/trg-bad2" --trigger 'nosuchevent: x == 1' >/dev/null 2>"$W/trg-bad2.err"
	eq "--trigger on no event: exit status" "$?" 1
	check "--trigger on no event: says it has no trigger file" \
		grep -q 'nosuchevent has no trigger file' "$W/trg-bad2.err"
	"$DAEMON" -o "$W/trg-bad3" --mode discard --trigger 'ringtrace_marker: data == x' \
		>/dev/null 2>"$W/trg-bad3.err"
	eq "--trigger --mode discard: usage error" "$?" 2
	echo 1 >"$RT/tracing_on"
	"$DAEMON" -o "$W/trg-bad4" --trigger 'ringtrace_marker: data == x' \
		>/dev/null 2>"$W/trg-bad4.err"
	eq "--trigger with tracing on already: exit status" "$?" 1
	echo 0 >"$RT/tracing_on"
	check "--trigger with tracing on already: says so" grep -q 'tracing is on already' "$W/trg-bad4.err"
	check "refused --triggers: no directory" \
		test ! -e "$W/trg-bad1" -a ! -e "$W/trg-bad2" -a ! -e "$W/trg-bad3" -a ! -e "$W/trg-bad4"
	check "refused --triggers: the state as before" \
		test "$(trigger_state) $(cat "$RT/subbuf_size")" = "$before"
	reset_module
}

# Per sub-buffer: one GET that succeeds, one writev, one PUT (strace).
# sys_run NAME OPTIONS...: one strace'd daemon run; sets the counts.
sys_run() {
	local name=$1 rc=0 pid
	shift
	reset_module
	# -ff: a file per thread, so that no call is split in two lines.
	WRAP=(strace -ff -y -qq -o "$W/$name.strace" -e trace=ioctl,write,writev,pwritev,splice)
	start_daemon "$name" -o "$W/$name" -f 0 "$@" ||
		{ WRAP=(); fail "$name: daemon did not start"; return 1; }
	WRAP=()
	# SYS_MARKERS: COUNT and rt-markers options per CPU (words); by
	# default 10000 of 48 bytes, eight or nine 64 KiB sub-buffers a CPU.
	# shellcheck disable=SC2086
	setup "$name: markers" run_markers "$name" ${SYS_MARKERS:-10000 -s 48}
	pid=$(pgrep -P "$DPID" -x ringtraced)
	kill -TERM "$pid"
	wait_exit "$DPID" 120 || rc=$?
	DPID=
	eq "$name: exit status under strace" "$rc" 0
	packets=$(sed -n 's/^total: \([0-9]*\) sub-buffers.*/\1/p' "$W/$name.out")
	cat "$W/$name.strace".* >"$W/$name.strace"
	get=$(grep -c ', 0xb9, 0x1, .* = 0$' "$W/$name.strace")
	again=$(grep -c ', 0xb9, 0x1, .* = -1 E' "$W/$name.strace")
	put=$(grep -c ', 0xb9, 0x2, .* = 0$' "$W/$name.strace")
	other=$(grep -c ', 0xb9, 0x[345], ' "$W/$name.strace")
	writes=$(grep -c '^write([0-9]*<[^>]*\.zst>' "$W/$name.strace")
	writevs=$(grep -c '^p\?writev([0-9]*<[^>]*\.zst>' "$W/$name.strace")
	# Spliced: from the buffer file into the pipe, from the pipe into a chunk.
	splice_in=$(grep -c '^splice([0-9]*</[^>]*/buffer>, \[' "$W/$name.strace")
	splice_out=$(grep -c '^splice([0-9]*<pipe:[^>]*>, NULL, [0-9]*<[^>]*\.zst>' "$W/$name.strace")
	check "$name: sub-buffers recorded ($packets)" test "${packets:-0}" -gt 4
	eq "$name: one successful GET_SUBBUF per sub-buffer" "$get" "$packets"
	eq "$name: one PUT_SUBBUF per sub-buffer" "$put" "$packets"
	note "$name: $packets sub-buffers: $get GET + $put PUT, $again GET -> EAGAIN/ENODATA (one per wakeup), $other FLUSH/POSITIONS/STATS, $writes write + $writevs pwritev, $splice_in + $splice_out splice in + out"
}

# An event registered by another module during the recording, written,
# unregistered, then the same name registered with another layout: the
# daemon must put each declaration in the trace's metadata before a packet
# holding the event, and both readers decode each event with its layout.
test_dyn_events() {
	local rc=0 bt rep a b
	note "events registered and unregistered while recording"
	[[ -d $ST ]] || { fail "dyn: ringtrace_selftest.ko not loaded"; return; }
	reset_module
	start_daemon dyn -o "$W/dyn" -f 200 || { fail "dyn: daemon did not start"; return; }
	setup "dyn: register layout a" eval 'echo "register a" >"$ST/dyn"'
	setup "dyn: write 60" eval 'echo "write 60" >"$ST/dyn"'
	setup "dyn: unregister a" eval 'echo unregister >"$ST/dyn"'
	setup "dyn: register layout b" eval 'echo "register b" >"$ST/dyn"'
	setup "dyn: write 40" eval 'echo "write 40" >"$ST/dyn"'
	setup "dyn: unregister b" eval 'echo unregister >"$ST/dyn"'
	stop_daemon || rc=$?
	eq "dyn: daemon exit status" "$rc" 0
	eq "dyn: two declarations of rt_selftest_dyn in the trace's metadata" \
		"$(grep -c 'name = "rt_selftest_dyn"' "$W/dyn/metadata")" 2
	check "dyn: no metadata.new left" test ! -e "$W/dyn/metadata.new"
	check "dyn: unpack" unpack "$W/dyn" "$W/dyn.ctf"
	bt=$(babeltrace2 "$W/dyn.ctf" 2>"$W/dyn.bt.err" | grep ' rt_selftest_dyn: ')
	a=$(grep -c 'magic = 3665469600' <<<"$bt")
	b=$(grep -c 'tag = "dynB"' <<<"$bt")
	eq "dyn: babeltrace2 decodes the 60 events of layout a" "$a" 60
	eq "dyn: babeltrace2 decodes the 40 events of layout b" "$b" 40
	eq "dyn: babeltrace2: seq 0..99, each once" \
		"$(sed -nE 's/.*seq = ([0-9]+).*/\1/p' <<<"$bt" | sort -n | uniq | tr '\n' ' ')" \
		"$(seq -s ' ' 0 99) "
	if ((USE_CLI)); then
		rep=$("$CLI" report -e rt_selftest_dyn "$W/dyn" 2>/dev/null)
		eq "dyn: ringtrace report decodes layout a" \
			"$(grep -c 'magic=3665469600' <<<"$rep")" 60
		eq "dyn: ringtrace report decodes layout b" \
			"$(grep -c 'tag="dynB"' <<<"$rep")" 40
	fi
}

# new_second ROOT: until the clock has passed the second that names the
# newest trace in ROOT (YYYYmmdd-HHMMSS: a start within it would find the
# name taken).  A start and stop under TCG mostly take longer than that.
new_second() {
	local newest i
	newest=$(ls "$1" | grep -E '^[0-9]{8}-[0-9]{6}$' | tail -n1)
	for ((i = 0; i < 30; i++)); do
		[[ $(date +%Y%m%d-%H%M%S) > "$newest" ]] && return 0
		nap 0.1
	done
	return 1
}

# Bytes on disk of the files of the trace directories in $1, newest last:
# "name bytes" lines.
trace_sizes() {
	local d
	for d in "$1"/2*/; do
		[[ -d $d ]] || continue
		echo "$(basename "$d") $(du -s -B1 "$d" | cut -f1)"
	done
}

test_retention() {
	local root=$W/root cap=$((256 * 1024)) run older newest n rc
	note "--root and --max-total: repeated starts"
	reset_module
	rm -rf "$root"
	mkdir -p "$root/notatrace" "$root/20200101-000000"
	echo keep >"$root/notatrace/file"
	# A directory with our name but no metadata is not a trace: kept.
	echo keep >"$root/20200101-000000/file"
	# Four runs of about 150 KB (600 markers a CPU) under 256 KiB: the
	# third start and the fourth each remove the oldest (six runs of 100 KB
	# proved nothing more).
	for run in 1 2 3 4; do
		start_daemon ret$run --root "$root" --max-total $cap -f 200 -l store ||
			{ fail "retention: start $run"; return; }
		run_markers ret$run 600 -s 200 || fail "retention: markers of run $run"
		rc=0
		stop_daemon || rc=$?
		[[ $rc == 0 ]] || fail "retention: run $run exit status $rc"
		new_second "$root"	# the next start's name is a new one
	done
	trace_sizes "$root" >"$W/ret.sizes"
	sed 's/^/# /' "$W/ret.sizes"
	newest=$(tail -n1 "$W/ret.sizes" | cut -d' ' -f1)
	older=$(head -n -1 "$W/ret.sizes" | awk '{ s += $2 } END { print s + 0 }')
	n=$(wc -l <"$W/ret.sizes")
	check "retention: the older traces fit in --max-total ($older <= $cap)" \
		test "$older" -le "$cap"
	check "retention: old traces were removed ($n directories left of 5)" test "$n" -lt 5
	check "retention: the newest trace is whole" unpack "$root/$newest" "$W/ret.ctf"
	check "retention: a directory that is not a trace stays" test -f "$root/notatrace/file"
	check "retention: a trace-named directory without metadata stays" \
		test -f "$root/20200101-000000/file"
	check "retention: the removals are logged" grep -q 'removed the oldest trace' "$W"/ret*.err
	# A full disk: the older traces go, the daemon stops with a line
	# that says so, and the next start under the same --root records.
	# 4 MiB: an older trace of 3.3 MB leaves less than the rings' 2 MiB
	# of backlog; removing it leaves more.
	mkdir -p "$W/full2" && mount -t tmpfs -o size=4m tmpfs "$W/full2" || {
		fail "retention: cannot mount a tmpfs"; return; }
	mkdir "$W/full2/20200101-000000"
	head -c 3300000 /dev/zero >"$W/full2/20200101-000000/cpu0.zst"
	touch "$W/full2/20200101-000000/metadata"
	reset_module
	start_daemon retfull --root "$W/full2" --max-total 1G -f 100 ||
		{ fail "retention: start on the small disk"; umount "$W/full2"; return; }
	run_markers retfull 3000 -r -s 1000
	rc=0
	wait_exit "$DPID" 60 || rc=$?
	DPID=
	eq "retention: a full disk stops the daemon" "$rc" 1
	check "retention: ... saying it removed the older traces" \
		grep -q 'No space left on device (older traces removed to make room' "$W/retfull.err"
	check "retention: the older trace is gone" test ! -e "$W/full2/20200101-000000"
	# What the kernel kept meanwhile (up to a ring per CPU) comes first:
	# a restart may fill the disk again, remove the trace before it and
	# stop the same way.  Within the unit's start limit (5) one stops
	# cleanly, with the newest events.
	local try
	for ((try = 1; try <= 5; try++)); do
		start_daemon retfull$((try + 1)) --root "$W/full2" --max-total 1G -f 100 ||
			{ fail "retention: restart $try"; break; }
		rc=0
		stop_daemon || rc=$?
		[[ $rc == 0 ]] && break
		grep -q 'older traces removed to make room' "$W/retfull$((try + 1)).err" ||
			{ fail "retention: restart $try stopped without removing: $(tail -n1 "$W/retfull$((try + 1)).err")"; break; }
	done
	eq "retention: a restart stops cleanly within the start limit (restart $try)" "$rc" 0
	check "retention: ... and its trace is whole" \
		unpack "$(ls -d "$W"/full2/2* | tail -n1)" "$W/retfull.ctf"
	umount "$W/full2"
	test_retention_running
	usage_case 2 "--max-total budgets the traces of --root" -o "$W/x" --max-total 1M
	usage_case 2 "--output and --root: one or the other" -o "$W/x" --root "$root"
	rm -rf "$root"
}

# The running trace alone over --max-total: its oldest closed chunks go,
# the newest events stay.
test_retention_running() {
	local root=$W/rroot c rc=0 got cnt first last bad
	note "--max-total: the running trace alone is over it"
	reset_module
	rm -rf "$root"
	# Checked every 300 ms: about 1.6 MB over a second or more is more
	# than the budget across three checks or more.  With -f 0 (no flush
	# tick) too: the checks have a timer of their own.
	start_daemon rrun --root "$root" --max-total 512K --max-total-interval 300ms \
		-s 128K -l store -f 0 ||
		{ fail "retention-running: daemon did not start"; return; }
	setup "retention-running: markers" run_markers rrun 4000 -r -s 200 -d 250
	rc=0
	stop_daemon || rc=$?
	eq "retention-running: exit status" "$rc" 0
	check "retention-running: the daemon says the oldest chunks go" \
		grep -q "running trace alone is over 524288 bytes: its oldest chunks are removed" "$W/rrun.err"
	check "retention-running: unpack" unpack "$root"/2* "$W/rrun.ctf"
	check "retention-running: babeltrace2 reads it" bt "$W/rrun.ctf" "$W/rrun.txt"
	markers "$W/rrun.txt" rrun >"$W/rrun.markers"
	for c in "${CPUS[@]}"; do
		check "retention-running: CPU $c: chunk 1 was removed" \
			test ! -e "$(echo "$root"/2*)/cpu$c-000001.zst"
		got=$(seqs "$W/rrun.markers" "$c")
		read -r cnt first last bad <<<"$got"
		eq "retention-running: CPU $c: the newest markers kept, contiguous" \
			"$last $bad $cnt" "3999 0 $((3999 - first + 1))"
		check "retention-running: CPU $c: older ones are gone (first kept: $first)" test "$first" -gt 0
	done
	rm -rf "$root"
}

# --------------------------------------------------------------------
# Failures of the disk and of the system: nothing lost without a word
# --------------------------------------------------------------------

# A small ext4 (no journal, errors=continue) on a device-mapper device
# over a loop file in the guest's memory, whose table the I/O error tests
# switch: linear (a working disk), flakey with error_writes (every write
# fails, reads work), or error segments over chosen blocks (reads there
# fail).  The failures are the kernel's own, the daemon is not told.
DM=rtdaemon-disk
DM_LOOP=
DM_SECTORS=0

# dm_setup MOUNTPOINT
dm_setup() {
	modprobe -q ext4 && modprobe -q loop && modprobe -q dm-mod &&
		modprobe -q dm-flakey || return 1
	truncate -s 128M "$W/disk.img" || return 1
	DM_LOOP=$(losetup -f --show "$W/disk.img") || return 1
	DM_SECTORS=$(blockdev --getsz "$DM_LOOP")
	dmsetup create "$DM" --table "0 $DM_SECTORS linear $DM_LOOP 0" || return 1
	# No udev in the guest: the node is made by hand.
	dmsetup mknodes "$DM"
	mkfs.ext4 -q -F -O ^has_journal -b 4096 "/dev/mapper/$DM" || return 1
	mkdir -p "$1" && mount -o errors=continue "/dev/mapper/$DM" "$1"
}

# dm_table < TABLE: switch the device's table (no freeze, no flush: the
# file system stays as it is, whatever the old table did to writes).
dm_table() {
	dmsetup suspend --nolockfs --noflush "$DM" &&
		dmsetup load "$DM" && dmsetup resume "$DM"
}

dm_heal() {
	echo "0 $DM_SECTORS linear $DM_LOOP 0" | dm_table
}

# dm_teardown MOUNTPOINT
dm_teardown() {
	mountpoint -q "$1" && { dm_heal; umount "$1"; }
	dmsetup info "$DM" >/dev/null 2>&1 && dmsetup remove "$DM"
	[[ -n $DM_LOOP ]] && losetup -d "$DM_LOOP"
	DM_LOOP=
	rm -f "$W/disk.img"
}

# last_err NAME: the daemon's last line on stderr.
last_err() {
	tail -n1 "$W/$1.err"
}

# A sync round's fdatasync() fails (EIO): the kernel has marked the pages
# clean and the data may be gone.  The daemon stops as it does for a
# failed write, naming the file, and counts it in the summary; it never
# exits 0 after that, even once the disk works again.
test_sync_eio() {
	local mnt=$W/seio rc=0 i
	note "a sync round's fdatasync fails (EIO)"
	reset_module
	dm_setup "$mnt" || { fail "sync-eio: no device-mapper disk"; dm_teardown "$mnt"; return; }
	start_daemon seio -o "$mnt/t" -f 200 ||
		{ fail "sync-eio: daemon did not start"; dm_teardown "$mnt"; return; }
	setup "sync-eio: markers before the disk fails" run_markers seio1 200
	nap 1
	echo "0 $DM_SECTORS flakey $DM_LOOP 0 0 1 1 error_writes" | dm_table ||
		fail "sync-eio: cannot make the writes fail"
	setup "sync-eio: markers while writes fail" run_markers seio2 200
	# A few rounds; then the disk works again, as a flaky one would.
	for ((i = 0; i < 30; i++)); do
		kill -0 "$DPID" 2>/dev/null || break
		nap 0.2
	done
	dm_heal
	if kill -0 "$DPID" 2>/dev/null; then
		note "sync-eio: the daemon still runs: SIGTERM"
		kill -TERM "$DPID"
	fi
	wait_exit "$DPID" 60 || rc=$?
	DPID=
	eq "sync-eio: exit status" "$rc" 1
	check "sync-eio: the last line names the file and the error: $(last_err seio)" \
		grep -Eq "^ringtraced: $mnt/t(/cpu[0-9]+-[0-9]{6}\.zst)?: Input/output error \([0-9]+ failed syncs?: what was written to (it|them) since the sync before may be lost\)$" \
		<<<"$(last_err seio)"
	check "sync-eio: the summary counts the failed syncs" \
		grep -Eq "^sync: [0-9]+ rounds, 0 skipped, [1-9][0-9]* failed \(first: $mnt/t" "$W/seio.out"
	eq "sync-eio: tracing stays on: the rest stays in the kernel" "$(cat "$RT/tracing_on")" 1
	echo 0 >"$RT/tracing_on"
	dm_teardown "$mnt"
}

# The trace's metadata cannot follow the event set (no inode left for
# metadata.new): the packet with the new events is not written without
# its declaration, it stays in the kernel, the daemon stops; the next
# daemon records it, declared.
test_metadata_fail() {
	local fs=$W/ino rc=0 i a
	[[ -d $ST ]] || { fail "metadata-fail: ringtrace_selftest.ko not loaded"; return; }
	note "the metadata cannot be updated: the packets stay in the kernel"
	# Both modules loaded again: the test needs an event the daemon's
	# metadata does not declare yet.  A declaration outlives its
	# unregistration (test_dyn_events' layout a), and its registering
	# again changes the text only by the clock's offset, read anew at
	# each rendering: the same offset twice let the daemon write the
	# packets, declared as they were.
	setup "metadata-fail: ringtrace.ko and the selftest module again" \
		eval 'reload_ringtrace && insmod "$KO/ringtrace_selftest.ko"' ||
		return
	reset_module
	mkdir -p "$fs" && mount -t tmpfs -o size=64m tmpfs "$fs" ||
		{ fail "metadata-fail: cannot mount a tmpfs"; return; }
	start_daemon mfail -o "$fs/t" -f 200 ||
		{ fail "metadata-fail: daemon did not start"; umount "$fs"; return; }
	# The next update of the metadata cannot be written: metadata.new is
	# made a directory (the update's open() fails, EISDIR) once the
	# start's update is done.  Filling the file system's inodes instead
	# raced with the daemon's renames and packing on a loaded host (CI).
	for ((i = 0; i < 100; i++)); do
		[[ -e $fs/t/metadata && ! -e $fs/t/metadata.new ]] && break
		nap 0.1
	done
	mkdir "$fs/t/metadata.new"
	setup "metadata-fail: markers" run_markers mf1 50
	setup "metadata-fail: register layout a" eval 'echo "register a" >"$ST/dyn"'
	setup "metadata-fail: write 60" eval 'echo "write 60" >"$ST/dyn"'
	for ((i = 0; i < 50; i++)); do
		kill -0 "$DPID" 2>/dev/null || break
		nap 0.2
	done
	if kill -0 "$DPID" 2>/dev/null; then
		note "metadata-fail: the daemon still runs: SIGTERM"
		kill -TERM "$DPID"
	fi
	wait_exit "$DPID" 60 || rc=$?
	DPID=
	rmdir "$fs/t/metadata.new"
	eq "metadata-fail: exit status" "$rc" 1
	check "metadata-fail: the last line names the metadata: $(last_err mfail)" \
		grep -q "^ringtraced: $fs/t/metadata: Is a directory (the new events' declarations; their packets stay in the kernel)$" \
		<<<"$(last_err mfail)"
	check "metadata-fail: unpack what was written" unpack "$fs/t" "$W/mfail.ctf"
	check "metadata-fail: babeltrace2 reads it: no event without its declaration" \
		bt "$W/mfail.ctf" "$W/mfail.txt"
	eq "metadata-fail: no rt_selftest_dyn event in it" \
		"$(grep -c ' rt_selftest_dyn: ' "$W/mfail.txt")" 0
	start_daemon mfail2 -o "$W/mfail2" -f 200 ||
		{ fail "metadata-fail: next daemon did not start"; umount "$fs"; return; }
	rc=0
	stop_daemon || rc=$?
	eq "metadata-fail: next daemon's exit status" "$rc" 0
	echo unregister >"$ST/dyn"
	check "metadata-fail: unpack the next trace" unpack "$W/mfail2" "$W/mfail2.ctf"
	a=$(babeltrace2 "$W/mfail2.ctf" 2>"$W/mfail2.bt.err" | grep -c 'magic = 3665469600')
	eq "metadata-fail: the next daemon recorded the 60 events, declared" "$a" 60
	umount "$fs"
}

# extents FILE: "first count" per extent, in 4 KiB blocks of the device.
extents() {
	filefrag -v "$1" | awk -F'[:. ]+' '/^ *[0-9]+: / {
		for (i = 1; i <= NF; i++) if ($i != "") f[++n] = $i
		print f[4], f[6]
		n = 0
	}'
}

# dm_fail_reads FILE...: the device's table with error segments over the
# blocks of FILEs: reading them fails, everything else works.
dm_fail_reads() {
	local f start len at=0
	for f in "$@"; do
		extents "$f"
	done | sort -n | while read -r start len; do
		start=$((start * 8))
		len=$((len * 8))
		((start > at)) && echo "$at $((start - at)) linear $DM_LOOP $at"
		echo "$start $len error"
		at=$((start + len))
	done >"$W/dm.table"
	at=$(tail -n1 "$W/dm.table" | awk '{ print $1 + $2 }')
	((at < DM_SECTORS)) && echo "$at $((DM_SECTORS - at)) linear $DM_LOOP $at" >>"$W/dm.table"
	dm_table <"$W/dm.table"
}

# A closed chunk cannot be read back for packing (EIO): it stays stored,
# the packer says so, and the daemon goes on recording.  A mapping of
# the chunk would turn the error into a SIGBUS that kills the daemon.
test_pack_eio() {
	local mnt=$W/peio rc=0 c i f
	local -a first=()
	note "a closed chunk cannot be read back for packing (EIO)"
	reset_module
	dm_setup "$mnt" || { fail "pack-eio: no device-mapper disk"; dm_teardown "$mnt"; return; }
	# One slow packer, starved by the hogs while chunk 1 closes (400 KB a
	# CPU: a read of any size fails the same; 1.2 MB only took longer).
	start_daemon peio -o "$mnt/t" -l 19 -j 1 -f 200 ||
		{ fail "pack-eio: daemon did not start"; dm_teardown "$mnt"; return; }
	hogs_start
	setup "pack-eio: markers" run_markers peio1 1000 -r -s 400
	kill -HUP "$DPID"
	for ((i = 0; i < 100; i++)); do
		grep -q rotated "$W/peio.err" && break
		nap 0.1
	done
	for c in "${CPUS[@]}"; do
		first+=("$mnt/t/cpu$c-000001.zst")
	done
	# On the disk, out of the page cache, then unreadable.
	sync
	echo 1 >/proc/sys/vm/drop_caches
	dm_fail_reads "${first[@]}" || fail "pack-eio: cannot make the chunks unreadable"
	echo 1 >/proc/sys/vm/drop_caches
	note "pack-eio: table: $(tr '\n' ';' <"$W/dm.table")"
	hogs_stop
	for ((i = 0; i < 300; i++)); do
		[[ $(grep -c 'not compressed, left as it is: Input/output error' "$W/peio.err") -ge ${#CPUS[@]} ]] && break
		kill -0 "$DPID" 2>/dev/null || break
		nap 0.1
	done
	check "pack-eio: the daemon lives on" kill -0 "$DPID"
	for f in "${first[@]}"; do
		check "pack-eio: the packer says $(basename "$f") is left stored" \
			grep -q "^ringtraced: $f: not compressed, left as it is: Input/output error$" "$W/peio.err"
	done
	dm_heal
	setup "pack-eio: markers after" run_markers peio2 100
	stop_daemon || rc=$?
	eq "pack-eio: exit status" "$rc" 0
	for f in "${first[@]}"; do
		check "pack-eio: $(basename "$f") is stored" stored "$f"
	done
	check "pack-eio: unpack" unpack "$mnt/t" "$W/peio.ctf"
	check "pack-eio: babeltrace2 reads it" bt "$W/peio.ctf" "$W/peio.txt"
	markers "$W/peio.txt" peio1 >"$W/peio1.markers"
	markers "$W/peio.txt" peio2 >"$W/peio2.markers"
	for c in "${CPUS[@]}"; do
		eq "pack-eio: CPU $c: every marker, in order" \
			"$(seqs "$W/peio1.markers" "$c") $(seqs "$W/peio2.markers" "$c")" \
			"1000 0 999 0 100 0 99 0"
	done
	dm_teardown "$mnt"
}

# limits PID: "soft hard" of its open files.
nofile_of() {
	awk '/^Max open files/ { print $4, $5 }' "/proc/$1/limits"
}

# RLIMIT_NOFILE: the soft limit is raised to the hard one; the fds of
# closed chunks are bounded, whatever the sync rounds do (-f 0: none until
# the stop); a dup() for a sync round that fails is said; a limit too low
# for the CPUs is said at once.
test_nofile() {
	local rc=0 c n i
	note "open files: RLIMIT_NOFILE"
	reset_module
	WRAP=(bash -c 'ulimit -Hn 4096 && ulimit -Sn 12 && exec "$0" "$@"')
	start_daemon nof1 -o "$W/nof1" -f 200 || fail "nofile: soft limit 12, hard 4096: daemon did not start"
	WRAP=()
	if [[ -n $DPID ]]; then
		eq "nofile: the soft limit raised to the hard one" "$(nofile_of "$DPID")" "4096 4096"
		setup "nofile: markers" run_markers nof1 100
		rc=0
		stop_daemon || rc=$?
		eq "nofile: exit status" "$rc" 0
	fi

	# 2 packets of 4 KiB a chunk, no sync round before the stop: more
	# closed chunks than the limit has fds.  (16 KiB packets took 2.4 MB
	# of markers a CPU for that, 4 MiB to decode.)  The ring (1 MiB) holds
	# the whole load: a drain that rotates every 8 KiB loses nothing even
	# where it is slower than the writers.
	reset_module
	WRAP=(bash -c 'ulimit -n 64 && exec "$0" "$@"')
	start_daemon nof2 -o "$W/nof2" -f 0 -s 10K --subbuf-size 4K --num-subbufs 256 ||
		fail "nofile: limit 64: daemon did not start"
	WRAP=()
	if [[ -n $DPID ]]; then
		setup "nofile: markers" run_markers nof2 3500 -r -s 200 -d 100
		rc=0
		stop_daemon || rc=$?
		eq "nofile: limit 64, $(ls "$W/nof2" | grep -c '\.zst$') chunks: exit status" "$rc" 0
		eq "nofile: no error" "$(grep -v 'subbuf_size set\|num_subbufs set\|recording' "$W/nof2.err" | head -c 300)" ""
		check "nofile: unpack" unpack "$W/nof2" "$W/nof2.ctf"
		check "nofile: babeltrace2 reads it" bt "$W/nof2.ctf" "$W/nof2.txt"
		markers "$W/nof2.txt" nof2 >"$W/nof2.markers"
		for c in "${CPUS[@]}"; do
			n=$(ls "$W/nof2" | grep -c "^cpu$c-")
			check "nofile: CPU $c: more chunks than fds ($n)" test "$n" -gt 64
			eq "nofile: CPU $c: every marker, in order" \
				"$(seqs "$W/nof2.markers" "$c")" "3500 0 3499 0"
		done
	fi

	# The limit lowered under a running daemon to the fds it holds: a
	# sync round's dup() fails.  It is said and counted, and rounds come
	# back once the limit is.
	reset_module
	start_daemon nof4 -o "$W/nof4" -f 200 -l store || { fail "nofile: daemon nof4 did not start"; return; }
	setup "nofile: markers" run_markers nof4a 100
	local lim fds top
	lim=$(nofile_of "$DPID")
	fds=$(ls "/proc/$DPID/fd" | wc -l)
	top=$(ls "/proc/$DPID/fd" | sort -n | tail -n1)
	# Dense: no free number below the limit for a dup() to take.
	eq "nofile: the daemon's fds are 0..N-1" "$fds" "$((top + 1))"
	prlimit --pid "$DPID" --nofile="$fds:$fds"
	setup "nofile: markers while no fd is left" run_markers nof4b 100
	for ((i = 0; i < 50; i++)); do
		grep -q 'no sync round at this tick' "$W/nof4.err" && break
		nap 0.1
	done
	check "nofile: a failed dup() is said" \
		grep -Eq "^ringtraced: $W/nof4/cpu[0-9]+-000001\.zst: no sync round at this tick: dup: Too many open files \(tried again at every tick\)$" "$W/nof4.err"
	prlimit --pid "$DPID" --nofile="${lim% *}:${lim#* }"
	setup "nofile: markers with the limit back" run_markers nof4c 100
	for ((i = 0; i < 50; i++)); do
		grep -q 'sync rounds again' "$W/nof4.err" && break
		nap 0.1
	done
	check "nofile: ... and when rounds come back" \
		grep -Eq "^ringtraced: sync rounds again, after [1-9][0-9]* skipped$" "$W/nof4.err"
	rc=0
	stop_daemon || rc=$?
	eq "nofile: exit status" "$rc" 0
	check "nofile: the summary counts the skipped rounds" \
		grep -Eq "^sync: [1-9][0-9]* rounds, [1-9][0-9]* skipped, 0 failed$" "$W/nof4.out"
	reset_module

	rc=0
	(ulimit -n 30 && exec timeout 20 "$DAEMON" -o "$W/nof3") >"$W/nof3.out" 2>"$W/nof3.err" || rc=$?
	eq "nofile: limit 30: exit status" "$rc" 1
	check "nofile: limit 30: says what is needed: $(last_err nof3)" \
		grep -Eq "^ringtraced: ${#CPUS[@]} CPUs? and [0-9]+ compression threads? need [0-9]+ open files; RLIMIT_NOFILE allows 30 \(hard limit 30\): raise it" \
		<<<"$(last_err nof3)"
	check "nofile: limit 30: no output directory" test ! -e "$W/nof3"
}

# --chunk-time longer than an int of milliseconds (24.8 days): the drain
# threads' poll() timeout is clamped, never negative ("wait forever").
test_chunk_time_long() {
	local rc=0 pid neg max
	command -v strace >/dev/null || { fail "chunk-time-long: strace missing (tools/install-deps)"; return; }
	note "--chunk-time 720h: poll timeouts"
	reset_module
	WRAP=(strace -f -qq -o "$W/ctl.strace" -e trace=poll)
	start_daemon ctl -o "$W/ctl" -t 720h -f 200 ||
		{ WRAP=(); fail "chunk-time-long: daemon did not start"; return; }
	WRAP=()
	setup "chunk-time-long: markers" run_markers ctl 100
	nap 1
	pid=$(pgrep -P "$DPID" -x ringtraced)
	kill -TERM "$pid"
	wait_exit "$DPID" 120 || rc=$?
	DPID=
	eq "chunk-time-long: exit status" "$rc" 0
	neg=$(grep -Ec '^[0-9]+ +poll\(.*\], [0-9]+, -([02-9]|1[0-9])' "$W/ctl.strace")
	max=$(grep -Ec '^[0-9]+ +poll\(.*\], [0-9]+, 2147483647[ )]' "$W/ctl.strace")
	eq "chunk-time-long: no poll() with a negative timeout but -1" "$neg" 0
	check "chunk-time-long: polls wait at most INT_MAX ms ($max)" test "$max" -gt 0
}

# A trace is removed safely: renamed to a tombstone first, the metadata
# last, and a kill in the middle leaves a tombstone that the next start
# removes, never a trace without metadata that nothing counts again.  A
# trace locked by `ringtrace compress` is left alone until it is done.
test_retention_safe() {
	local root=$W/sroot rc=0 i d half old stored
	command -v strace >/dev/null || { fail "retention-safe: strace missing (tools/install-deps)"; return; }
	note "--max-total removes safely: a kill mid-removal, a trace in use"
	reset_module
	rm -rf "$root"
	old=$root/20200101-000000
	mkdir -p "$old"
	# The metadata in the middle: whatever order readdir gives, it is
	# among the first 20 of the 31 files.
	for ((i = 1; i <= 30; i++)); do
		((i == 16)) && echo "/* CTF 1.8 */" >"$old/metadata"
		head -c 65536 /dev/urandom >"$old/$(printf 'cpu0-%06d.zst' "$i")"
	done
	# Killed at its 20th unlinkat(), inside the removal (strace injects
	# SIGKILL there: the daemon makes no other unlinkat() before it).
	strace -f -qq -o /dev/null -e trace=unlinkat -e inject=unlinkat:signal=SIGKILL:when=20 \
		"$DAEMON" --root "$root" --max-total 64K -l store >"$W/srk.out" 2>"$W/srk.err" &
	local spid=$! dpid=
	for ((i = 0; i < 20; i++)); do
		dpid=$(pgrep -P "$spid" -x ringtraced) && break
		nap 0.05
	done
	wait_exit "$spid" 60 || rc=$?
	# Not killed by the injection: it records; it must not stay.
	[[ -n $dpid ]] && kill -KILL "$dpid" 2>/dev/null
	eq "retention-safe: killed in the middle of the removal" "$rc" 137
	note "retention-safe: after the kill: $(cd "$root" && ls -A | tr '\n' ' ')"
	start_daemon srs --root "$root" --max-total 64K -l store -f 200 ||
		{ fail "retention-safe: restart"; return; }
	rc=0
	stop_daemon || rc=$?
	eq "retention-safe: the restart's exit status" "$rc" 0
	half=
	for d in "$root"/* "$root"/.[!.]*; do
		[[ -d $d ]] || continue
		[[ -e $d/metadata || -z $(ls -A "$d") ]] || half+="$(basename "$d") "
	done
	eq "retention-safe: no directory with files but no metadata left" "$half" ""
	check "retention-safe: no tombstone left" test -z "$(cd "$root" && ls -A | grep '^\.removing-')"
	check "retention-safe: the old trace is gone" test ! -e "$old"

	# A stored trace that `ringtrace compress` works on: in use.
	((USE_CLI)) || { rm -rf "$root"; return; }
	rm -rf "$root"
	reset_module
	start_daemon src1 --root "$root" -l store -f 200 || { fail "retention-safe: first trace"; return; }
	run_markers src 6000 -r -s 400 || fail "retention-safe: markers"
	stop_daemon || fail "retention-safe: first trace's exit status"
	old=$(ls -d "$root"/2*)
	stored=$(ls "$old" | grep -c '\.zst$')
	new_second "$root"	# the next start's name is a new one
	"$CLI" compress -l 19 -j 1 "$old" >"$W/src.compress" 2>&1 &
	local cpid=$!
	for ((i = 0; i < 200; i++)); do
		compgen -G "$old/.*.tmp" >/dev/null && break
		nap 0.05
	done
	start_daemon src2 --root "$root" --max-total 64K --max-total-interval 500ms \
		-l store -f 200 ||
		{ fail "retention-safe: second trace"; kill "$cpid"; return; }
	local inuse="^ringtraced: --max-total: $old is in use (ringtrace compress, or its chunk sets being handed to --on-chunk): kept for now$"
	for ((i = 0; i < 200; i++)); do
		grep -q "$inuse" "$W/src2.err" && break
		nap 0.1
	done
	check "retention-safe: the daemon says the trace is in use" grep -q "$inuse" "$W/src2.err"
	# Once compress is done the daemon's next check (every 500 ms) may
	# remove the trace at any moment: the daemon waits, stopped, while
	# the test reads what compress left.
	kill -STOP "$DPID"
	rc=0
	wait "$cpid" || rc=$?
	eq "retention-safe: ringtrace compress finishes its work" "$rc" 0
	check "retention-safe: ... and all its chunks were compressed" \
		grep -q "^$old: $stored chunks compressed" "$W/src.compress"
	check "retention-safe: the compressed trace is whole" unpack "$old" "$W/src.ctf"
	kill -CONT "$DPID"
	# Not in use any more: the next check removes it.
	for ((i = 0; i < 150; i++)); do
		[[ -e $old ]] || break
		nap 0.1
	done
	check "retention-safe: once compressed, the budget removes it" test ! -e "$old"
	rc=0
	stop_daemon || rc=$?
	eq "retention-safe: exit status" "$rc" 0
	rm -rf "$root"
}

# `ringtrace compress` over a directory of many hidden names: the stack
# does not grow with each (a small one: 256 KiB).
test_compress_many() {
	local d=$W/cmany rc=0
	((USE_CLI)) || { note "no ringtrace CLI: skipped"; return; }
	note "ringtrace compress: 3000 hidden .tmp names, a 256 KiB stack"
	mkdir -p "$d" && echo "/* CTF 1.8 */" >"$d/metadata"
	# One process makes them: a shell loop takes minutes under TCG.
	python3 -c 'import sys
for i in range(3000):
    open("%s/.%0200d.tmp" % (sys.argv[1], i), "w").close()' "$d"
	(ulimit -s 256 && exec "$CLI" compress "$d") >"$W/cmany.out" 2>&1 || rc=$?
	eq "compress-many: exit status" "$rc" 0
	check "compress-many: nothing to compress" grep -q "nothing to compress" "$W/cmany.out"
	rm -rf "$d"
}

# A flush acknowledges the tick it answered, never a later one: a sync
# round for tick k begins only once every drain thread began a flush after
# tick k (its GET_POSITIONS).  The first CPU's drains, made slow (20 ms a
# sub-buffer), span several ticks while the others' are quick; rounds
# still happen.  strace gives each call's time and thread.
test_flush_ack() {
	local rc=0 pid got
	command -v strace >/dev/null || { fail "flush-ack: strace missing (tools/install-deps)"; return; }
	note "flush acknowledgements: a sync round after every CPU's flush of its tick"
	reset_module
	WRAP=(strace -f -qq -ttt -y -o "$W/fack.strace" -e trace=read,ioctl,fcntl)
	start_daemon fack -o "$W/fack" -f 100 --subbuf-size 4K --num-subbufs 16 \
		--test-delay-us 20000 || { WRAP=(); fail "flush-ack: daemon did not start"; return; }
	WRAP=()
	# A steady writer about as fast as the drain keeps a tick arriving
	# while a flush is under way (the window this test is about); a quiet
	# moment after each of five runs lets the drain catch up (drained),
	# and a few ticks more, so that a round follows even where the writer
	# outruns the drain (the slowest guests under strace): one run of
	# 5000 left a single round there.
	local i
	for ((i = 0; i < 5; i++)); do
		"$MARKERS" -s 100 -d 500 "${CPUS[0]}" 1000 "fack$i" || break
		drained
		nap 0.3
	done
	setup "flush-ack: five runs of markers on CPU ${CPUS[0]}" test "$i" -eq 5
	pid=$(pgrep -P "$DPID" -x ringtraced)
	kill -TERM "$pid"
	wait_exit "$DPID" 120 || rc=$?
	DPID=
	eq "flush-ack: exit status" "$rc" 0
	# "rounds bad": a round is main's first dup of a chunk since the last
	# one, for the first tick since then (its read of the timerfd); bad,
	# a drain thread whose last GET_POSITIONS/FLUSH came before that tick.
	got=$(awk '
		NR == 1 { main = $1 }
		$1 == main && /read\([0-9]+<anon_inode:\[timerfd\]>/ { if (!tick) tick = $2; next }
		$1 == main && /fcntl\([0-9]+<[^>]*\.zst>, F_DUPFD_CLOEXEC/ {
			if (!tick) next
			rounds++
			for (t in last)
				if (last[t] < tick) bad++
			tick = 0
			next
		}
		/ioctl\([0-9]+<[^>]*\/buffer>, _IOC\([^,]*, 0xb9, 0x[34],/ { last[$1] = $2 }
		END { print rounds + 0, bad + 0 }' "$W/fack.strace")
	check "flush-ack: sync rounds happened (${got% *})" test "${got% *}" -ge 3
	eq "flush-ack: drain threads acknowledged a tick they had not flushed for" "${got#* }" 0
}

# The names of the current chunks change under their lock (a drain thread
# opening its next chunk): main reads one for the line after SIGHUP.
# ringtraced under ThreadSanitizer, chunks closing by size all the time
# and SIGHUPs: no data race reported.
test_races() {
	local rc=0 i
	[[ -x $TSAN ]] || { fail "races: $TSAN missing (make -C daemon)"; return; }
	note "data races (ThreadSanitizer): SIGHUP while chunks close by size"
	reset_module
	local daemon=$DAEMON
	DAEMON=$TSAN
	start_daemon tsan -o "$W/tsan" -f 0 -s 40K --subbuf-size 16K --num-subbufs 64 ||
		{ DAEMON=$daemon; fail "races: daemon did not start"; return; }
	DAEMON=$daemon
	# 8000 markers a CPU, paced to last about as long as the SIGHUPs (20000
	# at -d 50 gave the TSan build 8 MB to drain and pack for no more).
	run_markers tsan 8000 -r -s 200 -d 300 &
	local mpid=$!
	for ((i = 0; i < 40; i++)); do
		nap 0.1
		kill -HUP "$DPID"
	done
	wait "$mpid" || fail "races: markers"
	stop_daemon || rc=$?
	eq "races: exit status" "$rc" 0
	check "races: every SIGHUP's chunks closed" grep -q rotated "$W/tsan.err"
	eq "races: ThreadSanitizer's reports" "$(grep -c 'WARNING: ThreadSanitizer' "$W/tsan.err")" 0
	grep -A12 'WARNING: ThreadSanitizer' "$W/tsan.err" | head -40 | sed 's/^/# /'
}

test_syscalls() {
	local get put again other writes writevs splice_in splice_out packets
	command -v strace >/dev/null || { fail "sys: strace missing (tools/install-deps)"; return; }
	note "syscalls per sub-buffer (strace)"
	# pwritev() from the mapping, the default (--splice: test_splice_store).
	sys_run sys || return
	eq "sys: one pwritev per sub-buffer into the chunks, straight from the mapping" \
		"$writevs" "$packets"
	eq "sys: no other write to a chunk, no splice (the packers write their temporary files)" \
		"$writes $splice_in $splice_out" "0 0 0"
	holds_written sys
}

# holds_written NAME: NAME's trace decodes (unpack, babeltrace2) and holds,
# per CPU, the markers tagged NAME that the module wrote and did not lose.
holds_written() {
	local name=$1 c
	check "$name: unpack" unpack "$W/$name" "$W/$name.ctf"
	check "$name: babeltrace2 reads the trace" bt "$W/$name.ctf" "$W/$name.txt"
	markers "$W/$name.txt" "$name" >"$W/$name.markers"
	for c in "${CPUS[@]}"; do
		eq "$name: CPU $c: events in trace = written - lost" \
			"$(seqs "$W/$name.markers" "$c" | cut -d' ' -f1)" \
			"$(($(stat "$c" written) - $(lost_of "$c")))"
	done
}

# The module's wakeup watermark through the daemon.  Markers paced so that
# a 4 KiB packet fills in about 30 ms: the drain thread sleeps between
# packets, and without the watermark each packet wakes it.  With --wakeup
# 4 a wakeup finds at least four, so the GETs that end a batch with
# -EAGAIN or -ENODATA -- one per wakeup, one per flush tick (each begins
# with GET_POSITIONS), and per CPU one at the start (the wake from parked)
# and two at the stop -- are at most a quarter of the packets plus the
# ticks and four per CPU.  The trace holds every event the module did not
# count as lost.
test_wakeup() {
	local get put again other writes writevs splice_in splice_out packets ticks bound
	command -v strace >/dev/null || { fail "wk: strace missing (tools/install-deps)"; return; }
	note "wakeup watermark: --wakeup ${RT_WAKEUP_TEST:-4} (strace)"
	SYS_MARKERS="2000 -s 48 -d 500" sys_run wk -f 1000 --subbuf-size 4K \
		--num-subbufs 32 --wakeup "${RT_WAKEUP_TEST:-4}" || return
	ticks=$(grep -c ', 0xb9, 0x4, ' "$W/wk.strace")
	bound=$((packets / 4 + ticks + 4 * ${#CPUS[@]}))
	check "wk: GETs that found nothing ($again) <= packets / 4 + ticks + start and stop ($bound)" \
		test "$again" -le "$bound"
	check "wk: the daemon asked for it" grep -q ', 0xb9, 0x6, .* = 0$' "$W/wk.strace"
	holds_written wk
}

test_install() {
	local d=$W/inst
	note "make install layout"
	check "install: make install DESTDIR" make -s -C "$REPO/daemon" install DESTDIR="$d" >/dev/null
	check "install: binary" test -x "$d/usr/local/sbin/ringtraced"
	check "install: unit names the installed binary" \
		grep -q '^ExecStart=/usr/local/sbin/ringtraced --service' "$d/etc/systemd/system/ringtraced.service"
	check "install: modules-load entry" grep -qx ringtrace "$d/etc/modules-load.d/ringtrace.conf"
	check "install: options file" grep -q '^RINGTRACED_OPTS=' "$d/etc/default/ringtraced"
}

# --------------------------------------------------------------------

# --------------------------------------------------------------------
# --on-chunk: chunk sets and the hook
# --------------------------------------------------------------------

# set_counts OUT NAME: "sets handed failed timed-out not-handed" of the
# daemon NAME's summary.
set_counts() {
	sed -n 's/^on-chunk: \([0-9]*\) sets, \([0-9]*\) handed off, \([0-9]*\) hooks failed (\([0-9]*\) timed out[^)]*), .*; \([0-9]*\) not handed.*/\1 \2 \3 \4 \5/p' "$W/$1.out"
}

# This machine as a set's manifest names it (sets_true fills it once).
SET_MACHINE=

# sets_true NAME DIR...: each chunk set's manifest checked against its
# files and this machine; says what is wrong with each set that is wrong
# and returns 1 if any is, their number in BAD_SETS.  All the sets at
# once, in four processes (jq, find, xxhsum, awk): a process start costs
# 0.1 s under TCG, jq's 0.5 s, and one set at a time took 2 s a set.
BAD_SETS=0
sets_true() {
	local out=$W/$1.sets d f jqerr
	local -a files=()
	shift
	[[ -n $SET_MACHINE ]] ||
		SET_MACHINE="$(</proc/sys/kernel/hostname) $(</proc/sys/kernel/random/boot_id) $(</proc/sys/kernel/osrelease) $(<"$REPO/VERSION")"
	# Everything beside each manifest, hidden or not a file too.
	find "$@" -mindepth 1 -maxdepth 1 ! -name manifest.json -printf 'size\t%h\t%f\t%s\n' >"$out.files"
	while IFS=$'\t' read -r _ d f _; do
		files+=("$d/$f")
	done <"$out.files"
	# Tab-separated: "set DIR"; per manifest "id DIR ...", "file DIR
	# XXH64  NAME SIZE", "cpu DIR FILE", "offset DIR NS"; per thing
	# beside it "size DIR NAME SIZE", and xxhsum's "XXH64  DIR/NAME".
	{
		printf 'set\t%s\n' "$@"
		# A manifest that is not JSON: jq stops there; the sets from
		# there on have no "id" line.
		jq -r 'input_filename[:-14] as $d |
			"id\t\($d)\t\(.format) \(.sequence) \(.host) \(.boot_id) \(.kernel_release) \(.ringtrace_version) \(.trace_uuid)",
			(.files[] | "file\t\($d)\t\(.xxh64)  \(.name) \(.size)"), (.cpus[] | "cpu\t\($d)\t\(.file)"),
			"offset\t\($d)\t\(.clock.realtime_offset_ns)"' "${@/%//manifest.json}" 2>"$out.jq-err"
		cat "$out.files"
		((${#files[@]} == 0)) || xxhsum -H1 -- "${files[@]}" 2>"$out.xxhsum-err"
	} >"$out"
	jqerr=$(<"$out.jq-err")
	jqerr=${jqerr//$'\n'/ }
	awk -F '\t' -v machine="$SET_MACHINE" -v jqerr="${jqerr:0:200}" '
	# A set is right when its manifest names this machine, its sequence
	# (its directory chunk-NNNNNN) and the trace of its metadata; lists
	# every file beside it, their sizes and XXH64 sums, and nothing
	# else; names each of its chunk files cpuN-NNNNNN.zst once, and no
	# other; and gives the wall clock offset of the metadata, within 1 s.
	$1 == "set" { sets[++n] = $2; next }
	$1 == "id" { id[$2] = $3; next }
	$1 == "file" { got[$2, $3]++; ngot[$2]++; next }
	$1 == "cpu" { cpu[$2, $3]++; ncpu[$2]++; next }
	$1 == "offset" { off[$2] = $3; next }
	$1 == "size" { size[$2 "/" $3] = $4; dirof[$2 "/" $3] = $2; nameof[$2 "/" $3] = $3; next }
	# xxhsum: "XXH64  PATH"
	{ i = index($0, "  "); p = substr($0, i + 2)
	  if (p in size) { want[dirof[p], substr($0, 1, i - 1) "  " nameof[p] " " size[p]]++; nwant[dirof[p]]++ } }
	function set_uuid_offset(d,   line, m, k) {
		uuid[d] = ""; nofs = 0
		while ((getline line < (d "/metadata")) > 0) {
			if (uuid[d] == "" && line ~ /^\tuuid = ".*";/)
				uuid[d] = substr(line, 10, length(line) - 11)
			if (line ~ /^\toffset_s = [0-9]*;/ || line ~ /^\toffset = [0-9]*;/) {
				split(line, m, /[ ;]/)
				ofs[d, ++nofs] = m[3]
			}
		}
		close(d "/metadata")
	}
	END {
		for (s = 1; s <= n; s++) {
			d = sets[s]
			base = d; sub(/.*\//, "", base)
			seq = substr(base, 7) + 0
			if (!(d in id)) { print base ": manifest.json not read as JSON (" jqerr ")"; continue }
			set_uuid_offset(d)
			w = "ringtrace-chunk-set " seq " " machine " " uuid[d]
			if (id[d] != w) { print base ": manifest says \"" id[d] "\", want \"" w "\""; continue }
			bad = ngot[d] != nwant[d]
			for (k in got) { split(k, a, SUBSEP); if (a[1] == d && got[k] != want[k]) bad = 1 }
			if (bad) { print base ": the files listed are not the files beside it, their sizes and sums"; continue }
			# One entry per chunk file of the set.
			nc = 0
			for (p in size) {
				if (dirof[p] != d || nameof[p] !~ ("^cpu[0-9]*-" sprintf("%06d", seq) "\\.zst$")) continue
				nc++
				if (cpu[d, nameof[p]] != 1) bad = 1
			}
			if (bad || !nc || ncpu[d] != nc) { print base ": the cpus listed are not its " nc " chunk files"; continue }
			g = off[d]; m = g - (ofs[d, 1] * 1e9 + ofs[d, 2])
			if (!(m > -1e9 && m < 1e9)) { print base ": realtime_offset_ns " g ", the metadata clock offset " ofs[d, 1] " s " ofs[d, 2]; continue }
		}
	}' "$out" >"$out.bad"
	BAD_SETS=0
	while IFS= read -r f; do
		note "$f"
		BAD_SETS=$((BAD_SETS + 1))
	done <"$out.bad"
	((BAD_SETS == 0))
}

# decode_set NAME DIR: the chunk set DIR decoded alone (unpack,
# babeltrace2 with nothing on stderr), its markers appended to
# $W/NAME.markers.
decode_set() {
	local name=$1 d=$2 out
	out=$W/$name.dec/$(basename "$d")
	mkdir -p "$W/$name.dec"
	unpack "$d" "$out.ctf" || return 1
	bt "$out.ctf" "$out.txt" || { note "${d##*/}: babeltrace2 failed: $(head -c 300 "$out.txt.err")"; return 1; }
	[[ ! -s $out.txt.err ]] || { note "${d##*/}: babeltrace2 said: $(head -c 300 "$out.txt.err")"; return 1; }
	markers "$out.txt" "$name" >>"$W/$name.markers"
}

# sets_markers NAME DIR...: the chunks of all the sets DIRs (in order)
# in one trace, decoded at once (one babeltrace2 run), markers into
# $W/NAME.markers.
sets_markers() {
	local name=$1 all=$W/$1.all d
	shift
	mkdir -p "$all" || return 1
	for d in "$@"; do
		cp "$d"/cpu*.zst "$d/metadata" "$all/" || return 1
	done
	unpack "$all" "$all.ctf" && bt "$all.ctf" "$all.txt" || return 1
	markers "$all.txt" "$name" >"$W/$name.markers"
}

# manifest_sums DIR...: "<cpu> <events> <lost>" summed over the manifests
# of the sets in DIRs.
manifest_sums() {
	jq -r '.cpus[] | "\(.cpu) \(.events) \(.events_lost)"' "${@/%//manifest.json}" |
		awk '{ e[$1] += $2; l[$1] += $3 } END { for (c in e) print c, e[c], l[c] }'
}

# Chunks that close every two packets or so, and a slow hook (0.2 s) that
# moves each set away: every set arrives once and decodes alone, the union
# of the sets holds every marker once, in order, and the manifests' counts
# add up to the module's.
test_on_chunk() {
	local n=200 c rc=0 d bad=0 ns nh nf nt nn sums
	note "--on-chunk: sets of a few 16 KiB packets, moved away by a slow hook"
	reset_module
	# A parent of its own: a start with --on-chunk hands over what the
	# traces beside its own left (recover.c).
	mkdir -p "$W/oc.moved" "$W/oc.p"
	: >"$W/oc.markers"
	start_daemon oc -o "$W/oc.p/oc" -s 40K -f 100 --subbuf-size 16K --num-subbufs 64 \
		--on-chunk "echo \"\$1 \$2\" >>$W/oc.hooklog; sleep 0.2; mv \"\$1\" $W/oc.moved/" ||
		{ fail "oc: daemon did not start"; return; }
	# ~60 KB a CPU, 4 packets: paced (1 ms a marker) so that the
	# drain sees them one by one and the 40K limit asks for a rotation
	# every few packets.  A drain that found them all at once (the ring
	# holds the whole load: 6.12-rt, a loaded host) still rotates once
	# within its batch: the stop alone would make one set.  (Three times
	# as many markers made seven sets, each decoded alone below: 7 s a set
	# under a loaded TCG guest, for nothing two or three do not show.)
	setup "oc: markers written" run_markers oc "$n" -r -s 300 -d 1000
	stop_daemon || rc=$?
	eq "oc: daemon exit status" "$rc" 0
	read -r ns nh nf nt nn <<<"$(set_counts oc)"
	check "oc: sets rotated by size before the stop (${ns:-none} sets)" test "${ns:-0}" -ge 2
	eq "oc: every set handed off, no hook failed, none left out" "$nh $nf $nn" "$ns 0 0"
	eq "oc: the hook ran once per set, with its manifest" \
		"$(sort -u "$W/oc.hooklog" | wc -l) $(wc -l <"$W/oc.hooklog") $(grep -c ' .*/chunk-[0-9]\{6\}/manifest.json$' "$W/oc.hooklog")" \
		"$ns $ns $ns"
	eq "oc: every set arrived" "$(ls "$W/oc.moved" | grep -c '^chunk-[0-9]\{6\}$')" "$ns"
	eq "oc: the trace directory keeps its metadata and hand-off marker only" \
		"$(ls -A "$W/oc.p/oc" | tr '\n' ' ')" ".ringtrace-handoff metadata "
	for d in "$W/oc.moved"/chunk-*; do
		decode_set oc "$d" || bad=$((bad + 1))
	done
	sets_true oc "$W/oc.moved"/chunk-*
	eq "oc: each set decodes alone, its manifest true" "$((bad + BAD_SETS))" 0
	sums=$(manifest_sums "$W/oc.moved"/chunk-*)
	for c in "${CPUS[@]}"; do
		eq "oc: CPU $c: markers of all sets: count first last bad" \
			"$(seqs "$W/oc.markers" "$c")" "$n 0 $((n - 1)) 0"
		eq "oc: CPU $c: the manifests' events and losses are the module's" \
			"$(awk -v c="$c" '$1 == c { print $2, $3 }' <<<"$sums")" \
			"$(stat "$c" delivered) $(lost_of "$c")"
		eq "oc: CPU $c: nothing lost" "$(lost_of "$c")" 0
	done
}

# wait_for FILE PATTERN SECONDS: until grep finds it.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		nap 0.1
	done
	return 1
}

# wait_for_count FILE PATTERN N SECONDS: until N lines match.
wait_for_count() {
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		(($(grep -c -- "$2" "$1" 2>/dev/null) >= $3)) && return 0
		nap 0.1
	done
	return 1
}

# Hooks that fail, hang (a slow one: test_on_chunk): the recording goes on and loses
# nothing; the failures are logged (with syslog priorities under
# --service), counted in the summary and in STATUS=, and the sets they
# did not take stay on disk, whole.
test_on_chunk_hooks() {
	local n=600 c rc=0 ns nh nf nt nn i
	local geo=(-s 40K -f 100 --subbuf-size 16K --num-subbufs 64)

	note "--on-chunk: a hook that fails, under --service"
	reset_module
	: >"$W/ocf.markers"
	mkdir -p "$W/ocf.p"
	notify_listen "$W/ocf.sock" "$W/ocf.notify" || { fail "ocf: no notify socket"; return; }
	export NOTIFY_SOCKET=$W/ocf.sock
	start_daemon ocf --service -o "$W/ocf.p/ocf" "${geo[@]}" --on-chunk 'echo "no room for $1" >&2; exit 3' ||
		{ fail "ocf: daemon did not start"; unset NOTIFY_SOCKET; kill "$NPID"; return; }
	unset NOTIFY_SOCKET
	setup "ocf: markers written" run_markers ocf "$n" -r -s 300
	# Within a few ticks of -f 100, not at the next 10 s.
	check "ocf: STATUS= counts the failed hooks at once" \
		wait_for "$W/ocf.notify" 'STATUS=.*, [1-9][0-9]* hooks failed' 5
	stop_daemon || rc=$?
	wait_exit "$NPID" 30
	eq "ocf: daemon exit status" "$rc" 0
	read -r ns nh nf nt nn <<<"$(set_counts ocf)"
	check "ocf: more than 1 set (${ns:-none})" test "${ns:-0}" -gt 1
	eq "ocf: every hook failed, none handed off" "$nh $nf $nt $nn" "0 $ns 0 0"
	eq "ocf: each failure logged as a warning, its status said" \
		"$(grep -c '^<4>ringtraced: .*/chunk-[0-9]\{6\}: --on-chunk hook exited 3 after' "$W/ocf.err")" "$ns"
	check "ocf: the hook's stderr reaches ours" grep -q "^no room for $W/ocf.p/ocf/chunk-000001$" "$W/ocf.err"
	eq "ocf: the sets stay in the trace directory" "$(ls "$W/ocf.p/ocf" | grep -c '^chunk-[0-9]\{6\}$')" "$ns"
	sets_true ocf "$W/ocf.p/ocf"/chunk-*
	eq "ocf: each set's manifest true" "$BAD_SETS" 0
	check "ocf: the sets decode" sets_markers ocf "$W/ocf.p/ocf"/chunk-*
	for c in "${CPUS[@]}"; do
		eq "ocf: CPU $c: every marker once, in order" "$(seqs "$W/ocf.markers" "$c")" "$n 0 $((n - 1)) 0"
		eq "ocf: CPU $c: nothing lost" "$(lost_of "$c")" 0
	done

	# The first set's hook ignores SIGTERM and sleeps: SIGKILL after the
	# timeout (2 s) and --on-chunk-kill-after (1 s) more (5 s by default);
	# meanwhile more sets close (by size, then
	# three SIGHUPs; stored: no packing to wait for) than the queue holds
	# (1): those wait on disk, and reach the hook once the queue has room.
	note "--on-chunk: a hook that hangs, ignoring SIGTERM, while sets pile up"
	# Half ocf's markers: the SIGHUPs make the sets that pile up; more by
	# size were only more manifests to check (3 s each under TCG).
	n=300
	reset_module
	mkdir -p "$W/och.moved" "$W/och.p"
	: >"$W/och.markers"
	start_daemon och -o "$W/och.p/och" "${geo[@]}" -l store --on-chunk-timeout 2s \
		--on-chunk-kill-after 1s --on-chunk-queue 1 --on-chunk \
		"case \"\$1\" in */chunk-000001) trap '' TERM; sleep 1000 ;; *) mv \"\$1\" $W/och.moved/ ;; esac" ||
		{ fail "och: daemon did not start"; return; }
	setup "och: markers written" run_markers och "$n" -r -s 300
	# Three rotations while the hook hangs: set 1 hooked, 2 queued, 3
	# waiting, whatever the size made (a few markers of their own each).
	for i in 1 2 3; do
		local r=$(grep -c rotated "$W/och.err")
		((i == 1)) || setup "och: markers of rotation $i" run_markers "och$i" 20 -r -s 300
		kill -HUP "$DPID"
		wait_for_count "$W/och.err" rotated $((r + 1)) 30
	done
	check "och: a set found the queue full while the hook hung" \
		wait_for "$W/och.err" 'queue is full (--on-chunk-queue 1): the set waits on disk' 30
	check "och: the hook was terminated after its timeout" \
		wait_for "$W/och.err" 'still running after 2.0 s: SIGTERM to its process group' 30
	check "och: SIGKILL --on-chunk-kill-after later" \
		wait_for "$W/och.err" 'chunk-000001: --on-chunk hook still running 1.0 s after SIGTERM: SIGKILL to its process group' 30
	check "och: then killed" wait_for "$W/och.err" 'hook timed out: ended by signal 9 after' 30
	stop_daemon || rc=$?
	eq "och: daemon exit status" "$rc" 0
	eq "och: no hook process left" "$(pgrep -f 'sleep 1000' | wc -l)" 0
	read -r ns nh nf nt nn <<<"$(set_counts och)"
	check "och: more sets than the hook and its queue hold (${ns:-none})" test "${ns:-0}" -gt 2
	eq "och: one hook timed out, every other set handed off, none left out" \
		"$nf $nt $nn $((nh + 1))" "1 1 0 $ns"
	i=$(grep -c 'queue is full (--on-chunk-queue 1): the set waits on disk' "$W/och.err")
	check "och: sets waited on disk for room in the queue ($i)" test "$i" -gt 0
	eq "och: each queued once there was room" \
		"$(grep -c 'queued for --on-chunk, now that there is room' "$W/och.err")" "$i"
	eq "och: only the set whose hook timed out stays in the trace directory" \
		"$(ls "$W/och.p/och" | grep -c '^chunk-[0-9]\{6\}$')" 1
	sets_true och "$W/och.p/och"/chunk-* "$W/och.moved"/chunk-*
	eq "och: each set's manifest true" "$BAD_SETS" 0
	check "och: the sets decode" sets_markers och \
		$( (ls -d "$W/och.p/och"/chunk-* "$W/och.moved"/chunk-*) | awk -F/ '{ print $NF, $0 }' | sort | cut -d' ' -f2)
	for c in "${CPUS[@]}"; do
		eq "och: CPU $c: every marker once, in order" "$(seqs "$W/och.markers" "$c")" "$n 0 $((n - 1)) 0"
		eq "och: CPU $c: nothing lost" "$(lost_of "$c")" 0
	done
}

# A ringtraced killed (SIGKILL; a power loss leaves the same) while it
# assembles chunk set 2: the next start with --on-chunk finishes the set
# and hands it to its hook, and nothing of it is lost.  The daemon is
# killed while rotation 2 is recorded; then its trace directory is made
# what a kill in the middle of set 2's assembly leaves (handoff.c's
# order, recover.c's list): the staging directory .chunk-000002.tmp with
# the set's chunks moved in but one, still beside it, a copy of the
# metadata and a manifest cut short.
test_on_chunk_recover() {
	local n=200 c rc=0 i t1=$W/rcv/t1 tmp f all=$W/rcv.all
	note "--on-chunk: a daemon killed while it assembles a set; the next start finishes it"
	reset_module
	mkdir -p "$W/rcv" "$W/rcv.moved" "$all"
	start_daemon rcv1 -o "$t1" -f 100 --on-chunk true ||
		{ fail "rcv: daemon did not start"; return; }
	setup "rcv: markers of set 1" run_markers rcv1 "$n" -r -s 300
	kill -HUP "$DPID"
	check "rcv: set 1 assembled and handed off" \
		wait_for "$W/rcv1.err" 'chunk-000001: --on-chunk hook exited 0' 30
	setup "rcv: markers of set 2" run_markers rcv2 "$n" -r -s 300
	setup "rcv: rotation 2's markers in its chunks" drained
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	tmp=$t1/.chunk-000002.tmp
	f=$(cd "$t1" && ls | grep -m1 '^cpu[0-9]*-000002\.zst$')
	setup "rcv: rotation 2's chunks in the trace directory" test -n "$f"
	mkdir "$tmp" && mv "$t1"/cpu*-000002.zst "$tmp/" && mv "$tmp/$f" "$t1/" &&
		cp "$t1/metadata" "$tmp/" && echo '{"format": "ringtrace-ch' >"$tmp/manifest.json"
	setup "rcv: set 2's assembly, cut short" test -s "$tmp/manifest.json"

	start_daemon rcv3 -o "$W/rcv/t2" -f 100 --on-chunk "mv \"\$1\" $W/rcv.moved/" ||
		{ fail "rcv: second daemon did not start"; return; }
	check "rcv: the restart finished the set" \
		wait_for "$W/rcv3.err" "^ringtraced: $t1/chunk-000002: chunk set left unassembled by an earlier ringtraced (killed, crashed or stopped), assembled now" 30
	check "rcv: the finished set went to the hook" \
		wait_for "$W/rcv3.err" "$t1/chunk-000002: --on-chunk hook exited 0" 30
	stop_daemon || rc=$?
	eq "rcv: second daemon exit status" "$rc" 0
	eq "rcv: no staging directory left" "$(ls -A "$t1" | grep -c '^\.chunk-.*\.tmp$')" 0
	# Its hook (true) exited 0 and left it: marked shipped, not handed again.
	check "rcv: set 1, shipped before the kill, stays where it was" \
		test -d "$t1/chunk-000001" -a -e "$t1/.chunk-000001.shipped"
	check "rcv: the hook moved the set" test -d "$W/rcv.moved/chunk-000002"
	check "rcv: its manifest is true (files, sums, host, boot, clock)" \
		sets_true rcv "$W/rcv.moved/chunk-000002"
	eq "rcv: the manifest says recovered" \
		"$(jq -r .recovered "$W/rcv.moved/chunk-000002/manifest.json")" true
	check "rcv: the chunk put back is in the set" test -f "$W/rcv.moved/chunk-000002/$f"
	check "rcv: report reads sets 1 and 2 together, no gap" \
		sh -c "\"$CLI\" report \"$t1/chunk-000001\" \"$W/rcv.moved/chunk-000002\" >\"$W/rcv.report\" && ! grep -q -- '-- gap:' \"$W/rcv.report\""
	# Every marker once, in order: in set 1, set 2 and the chunks after.
	cp "$t1/metadata" "$all/"
	for f in "$t1"/chunk-000001/cpu*.zst "$W"/rcv.moved/chunk-000002/cpu*.zst "$t1"/cpu*.zst; do
		[[ -e $f ]] && cp "$f" "$all/"
	done
	unpack "$all" "$all.ctf" && bt "$all.ctf" "$all.txt" || fail "rcv: the chunks do not decode"
	markers "$all.txt" rcv1 >"$W/rcv1.markers"
	markers "$all.txt" rcv2 >"$W/rcv2.markers"
	for c in "${CPUS[@]}"; do
		eq "rcv: CPU $c: markers before and after set 1: count first last bad" \
			"$(seqs "$W/rcv1.markers" "$c") $(seqs "$W/rcv2.markers" "$c")" \
			"$n 0 $((n - 1)) 0 $n 0 $((n - 1)) 0"
	done
}

# wait_path PATH SECONDS: until PATH exists.
wait_path() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ -e $1 ]] && return 0
		nap 0.1
	done
	return 1
}

# report_markers OUT TAG: "<cpu> <cpu in payload> <seq>" of each TAG
# marker in `ringtrace report`'s output OUT (as markers does for
# babeltrace2's).
report_markers() {
	awk -v tag="$2" '
	BEGIN { dt = "data=\"" tag " cpu=" }
	$1 ~ /^\[.*\]$/ && $2 ~ /^cpu[0-9]+$/ &&
	(i = index($0, " ringtrace_marker: ")) && (j = index($0, dt)) > i {
		split(substr($0, j + length(dt)), d, /[ "]/)
		if (d[1] ~ /^[0-9]+$/ && d[2] ~ /^seq=[0-9]+$/)
			print substr($2, 4), d[1], substr(d[2], 5)
	}' "$1"
}

# The ship-chunk script of daemon/README.md, as written there (the
# indented block that begins "#!/bin/sh").
readme_ship_chunk() {
	awk '/^    #!\/bin\/sh$/ { on = 1 } on && /^$/ { exit } on { print substr($0, 5) }' \
		"$REPO/daemon/README.md"
}

# As a new user tries it (issue 29): the README's hook script, installed
# where the README puts it and given as a program path, a rotation every
# second while markers are written; then `ringtrace report` over the sets
# it shipped and the daemon's directory reads every marker once.  The
# spool refuses set 2 (a file stands at its name): the hook fails and the
# directory keeps that set, which the report must find there.
test_on_chunk_path() {
	local n=130 c rc=0 ns nh nf nt nn spool=/var/spool/ringtrace
	local t=$W/ocp.p/ocp hook=/usr/local/sbin/ship-chunk
	note "--on-chunk $hook (the README's script), --chunk-time 1s: report reads every marker from the shipped sets and the directory"
	reset_module
	mkdir -p "$W/ocp.p" "${hook%/*}"
	readme_ship_chunk >"$hook" && chmod 755 "$hook"
	check "ocp: the README's ship-chunk script, installed" grep -q '^mv -T "\$1" ' "$hook"
	rm -rf "$spool" && mkdir -p "$spool"
	: >"$spool/ocp-chunk-000002"
	start_daemon ocp -o "$t" --chunk-time 1s -f 100 --on-chunk "$hook" ||
		{ fail "ocp: daemon did not start"; return; }
	# 130 markers a CPU, one every 30 ms: about 4 s, 4 rotations.
	run_markers ocp "$n" -r -s 200 -d 30000 || fail "ocp: markers written"
	stop_daemon || rc=$?
	eq "ocp: daemon exit status" "$rc" 0
	read -r ns nh nf nt nn <<<"$(set_counts ocp)"
	check "ocp: a set every second (${ns:-none} sets)" test "${ns:-0}" -ge 3
	eq "ocp: every set shipped but the refused one: handed, failed, left out" \
		"$nh $nf $nn" "$((ns - 1)) 1 0"
	eq "ocp: the shipped sets in the spool, named after their trace" \
		"$(cd "$spool" && ls -d ocp-chunk-*/ 2>/dev/null | wc -l)" "$((ns - 1))"
	check "ocp: the refused set stays in the trace directory" \
		test -f "$t/chunk-000002/manifest.json"
	"$CLI" report -e marker $(ls -d "$spool"/ocp-chunk-*/) "$t" >"$W/ocp.report" 2>"$W/ocp.report.err"
	eq "ocp: report over the shipped sets and the directory: exit status" "$?" 0
	sed 's/^/# report: /' "$W/ocp.report.err" | head -5
	report_markers "$W/ocp.report" ocp >"$W/ocp.markers"
	for c in "${CPUS[@]}"; do
		eq "ocp: CPU $c: every marker once, in order: count first last bad" \
			"$(seqs "$W/ocp.markers" "$c")" "$n 0 $((n - 1)) 0"
	done
	rm -rf "$spool"
}

# A SIGKILL while set 2 is in the hook's hands, set 3 waits for it and
# rotation 4 is still being recorded: the next start hands sets 2 and 3
# over again (RINGTRACE_CHUNK_RETRY=1), assembles rotation 4 and hands it
# over (a first time: 0), and not set 1, shipped; the markers of the four
# sets the hook moved, each exactly once.  The hook is shell text calling
# a script with "$1" "$2", which works the same on an older ringtraced.
test_on_chunk_kill() {
	local n=150 c rc=0 i p=$W/ock.p spool=$W/ock.spool log=$W/ock.hooklog
	local hook=$W/ock-hook
	note "--on-chunk: SIGKILL with a set in the hook's hands and one queued; the next start hands each set not shipped over, once"
	reset_module
	mkdir -p "$p" "$spool"
	rm -f "$W/ock.hookpid"
	: >"$log"
	cat >"$hook" <<EOF
#!/bin/sh
echo "\$1 \$2 \$RINGTRACE_CHUNK_RETRY \$RINGTRACE_CHUNK_DIR" >>$log
if [ -e $W/ock.hang ] && [ "\${1##*/}" = chunk-000002 ]; then
	ps -o pgid= -p \$\$ | tr -d ' ' >$W/ock.hookpid
	exec sleep 1002
fi
mv -T "\$1" "$spool/\$(basename "\$(dirname "\$1")")-\$(basename "\$1")"
EOF
	chmod 755 "$hook"
	touch "$W/ock.hang"
	# What the daemon's own environment says of a set is not the hook's.
	WRAP=(env RINGTRACE_CHUNK_RETRY=stale RINGTRACE_CHUNK_DIR=stale)
	start_daemon ock1 -o "$p/t1" -f 100 --on-chunk "$hook \"\$1\" \"\$2\""
	rc=$?
	WRAP=()
	((rc == 0)) || { fail "ock: daemon did not start"; return; }
	for i in 1 2 3 4; do
		run_markers "ock$i" "$n" -r -s 300 || fail "ock: markers of rotation $i"
		((i == 4)) && break
		kill -HUP "$DPID"
		case $i in
		1) check "ock: set 1 shipped" wait_for "$W/ock1.err" "t1/chunk-000001: --on-chunk hook exited 0" 30 ;;
		2) check "ock: set 2 in the hook's hands" wait_path "$W/ock.hookpid" 30 ;;
		3) check "ock: set 3 assembled, waiting" wait_path "$p/t1/chunk-000003" 30 ;;
		esac
	done
	setup "ock: rotation 4's markers in its chunks" drained
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	# The hook's group outlives its daemon (a unit's stop would end it).
	[[ -s $W/ock.hookpid ]] && kill -KILL -- "-$(cat "$W/ock.hookpid")" 2>/dev/null
	rm -f "$W/ock.hang"
	check "ock: rotation 4 loose in the trace directory" \
		test -n "$(ls "$p/t1" | grep '^cpu[0-9]*-000004\.zst$')"

	start_daemon ock2 -o "$p/t2" -f 100 --on-chunk "$hook \"\$1\" \"\$2\"" ||
		{ fail "ock: second daemon did not start"; return; }
	check "ock: the restart hands sets 2, 3 and 4 over" \
		wait_for_count "$W/ock2.err" "t1/chunk-00000[234]: --on-chunk hook exited 0" 3 60
	stop_daemon || rc=$?
	eq "ock: second daemon exit status" "$rc" 0
	eq "ock: the hook's runs, set by set, and RINGTRACE_CHUNK_RETRY" \
		"$(awk -v t="$p/t1/" 'index($1, t) == 1 { print substr($1, length(t) + 1), $3 }' "$log" | tr '\n' ' ')" \
		"chunk-000001 0 chunk-000002 0 chunk-000002 1 chunk-000003 1 chunk-000004 0 "
	check "ock: \$2 the set's manifest, \$RINGTRACE_CHUNK_DIR the set" \
		awk '$2 != $1 "/manifest.json" || $4 != $1 { exit 1 }' "$log"
	eq "ock: rotation 4's manifest says recovered" \
		"$(jq -r .recovered "$spool/t1-chunk-000004/manifest.json")" true
	eq "ock: nothing of the killed trace left but its metadata and marker" \
		"$(ls -A "$p/t1" | tr '\n' ' ')" ".ringtrace-handoff metadata "
	"$CLI" report -e marker "$spool"/t1-chunk-00000[1234] >"$W/ock.report" 2>"$W/ock.report.err"
	eq "ock: report over the four sets: exit status" "$?" 0
	for i in 1 2 3 4; do
		report_markers "$W/ock.report" "ock$i" >"$W/ock$i.markers"
		for c in "${CPUS[@]}"; do
			eq "ock: rotation $i, CPU $c: every marker once: count first last bad" \
				"$(seqs "$W/ock$i.markers" "$c")" "$n 0 $((n - 1)) 0"
		done
	done
}

# A stop while the hook hangs (ignoring SIGTERM) and sets wait for it.
# Without --stop-timeout a second SIGTERM ends the wait at once; with
# --stop-timeout 4s the stop ends by itself (SIGTERM to the hook's group
# --on-chunk-kill-after, here 2 s, before, SIGKILL at it), says what it
# left, and the next start hands that over.
# ocs_cleanup: the hooks an older ringtraced left running.
ocs_cleanup() {
	local g
	for g in $(cat "$W/ocs.hookpids" 2>/dev/null); do
		kill -KILL -- "-$g" 2>/dev/null
	done
	rm -f "$W/ocs.hookpids"
}

test_on_chunk_stop() {
	local n=100 c rc=0 i t0 took p=$W/ocs.p spool=$W/ocs.spool log=$W/ocs.hooklog
	local hook=$W/ocs-hook
	note "--on-chunk: a stop while the hook hangs: a second SIGTERM, --stop-timeout; the next start hands the sets over"
	reset_module
	mkdir -p "$p" "$W/ocs0.p" "$spool"
	: >"$log"
	cat >"$hook" <<EOF
#!/bin/sh
echo "\$1 \$RINGTRACE_CHUNK_RETRY" >>$log
if [ -e $W/ocs.hang ]; then
	ps -o pgid= -p \$\$ | tr -d ' ' >>$W/ocs.hookpids
	trap '' TERM
	sleep 1003
	exit 0
fi
mv -T "\$1" "$spool/\$(basename "\$(dirname "\$1")")-\$(basename "\$1")"
EOF
	chmod 755 "$hook"
	touch "$W/ocs.hang"

	# A parent of its own: t1's daemons must not hand over what t0 left.
	start_daemon ocs0 -o "$W/ocs0.p/t0" -f 100 -l store --on-chunk "$hook \"\$1\"" ||
		{ fail "ocs: daemon did not start"; return; }
	run_markers ocs0 "$n" -r -s 300 || fail "ocs: markers written"
	kill -HUP "$DPID"
	check "ocs: set 1 in the hook's hands" wait_for "$log" "t0/chunk-000001 0" 30
	kill -TERM "$DPID"
	nap 2
	check "ocs: the first SIGTERM waits for the hook" kill -0 "$DPID"
	kill -TERM "$DPID"
	wait_exit "$DPID" 20 || rc=$?
	DPID=
	eq "ocs: a second SIGTERM ends the stop at once: exit status" "$rc" 0
	check "ocs: the hook killed" \
		grep -q "t0/chunk-000001: --on-chunk hook still running at the stop's deadline: SIGKILL to its process group" "$W/ocs0.err"
	eq "ocs: no hook process left" "$(pgrep -f 'sleep 1003' | wc -l)" 0
	ocs_cleanup

	start_daemon ocs1 -o "$p/t1" -f 100 -l store --stop-timeout 4s --on-chunk-kill-after 2s \
		--on-chunk "$hook \"\$1\"" ||
		{ fail "ocs: daemon did not start"; return; }
	for i in 1 2; do
		run_markers "ocs$i" "$n" -r -s 300 || fail "ocs: markers of set $i"
		kill -HUP "$DPID"
		wait_path "$p/t1/chunk-00000$i" 30
	done
	check "ocs: set 1 in the hook's hands" wait_for "$log" "t1/chunk-000001 0" 30
	run_markers ocs3 "$n" -r -s 300 || fail "ocs: markers of set 3, closed by the stop"
	t0=$SECONDS
	kill -TERM "$DPID"
	wait_exit "$DPID" 60 || rc=$?
	took=$((SECONDS - t0))
	DPID=
	eq "ocs: --stop-timeout 4s: exit status" "$rc" 0
	check "ocs: the stop ended by its deadline ($took s for 4 s)" test "$took" -le 20
	check "ocs: SIGTERM to the hook --on-chunk-kill-after (2 s) before the deadline" \
		grep -q "t1/chunk-000001: --on-chunk hook still running 2.0 s before the stop's deadline: SIGTERM to its process group" "$W/ocs1.err"
	check "ocs: the hook ended by the stop, its set left" \
		grep -q "t1/chunk-000001: --on-chunk hook ended at the stop's deadline (signal [0-9]*) after .* (the set stays on disk for the next start)" "$W/ocs1.err"
	eq "ocs: no hook process left" "$(pgrep -f 'sleep 1003' | wc -l)" 0
	ocs_cleanup
	check "ocs: what is left is said" \
		grep -q '^ringtraced: --on-chunk: left for the next start: 3 chunk sets not shipped, 0 rotations not assembled' "$W/ocs1.err"
	eq "ocs: the three sets stay, not marked shipped" \
		"$(ls -A "$p/t1" | grep -c '^chunk-\|shipped$')" 3
	rm -f "$W/ocs.hang"

	start_daemon ocs2 -o "$p/t2" -f 100 --on-chunk "$hook \"\$1\"" ||
		{ fail "ocs: third daemon did not start"; return; }
	check "ocs: the next start hands sets 1-3 over" \
		wait_for_count "$W/ocs2.err" "t1/chunk-00000[123]: --on-chunk hook exited 0" 3 60
	stop_daemon || rc=$?
	eq "ocs: third daemon exit status" "$rc" 0
	eq "ocs: each handed again once, told it may be a retry" \
		"$(grep "^$p/t1/chunk-00000[123] 1$" "$log" | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" "1 1 1 "
	"$CLI" report -e marker "$spool"/t1-chunk-00000[123] >"$W/ocs.report" 2>"$W/ocs.report.err"
	eq "ocs: report over the three sets: exit status" "$?" 0
	for i in 1 2 3; do
		report_markers "$W/ocs.report" "ocs$i" >"$W/ocs$i.markers"
		for c in "${CPUS[@]}"; do
			eq "ocs: set $i, CPU $c: every marker once: count first last bad" \
				"$(seqs "$W/ocs$i.markers" "$c")" "$n 0 $((n - 1)) 0"
		done
	done
	ocs_cleanup
}

# Started with SIGCHLD ignored, as a careless supervisor may leave it: a
# hook's exit status is still known, and the stop ends.
test_on_chunk_sigchld() {
	local rc=0 ns nh nf nt nn
	note "--on-chunk: ringtraced started with SIGCHLD ignored"
	reset_module
	mkdir -p "$W/occ.p"
	WRAP=(env --ignore-signal=CHLD)
	start_daemon occ -o "$W/occ.p/occ" -f 100 --on-chunk true
	rc=$?
	WRAP=()
	((rc == 0)) || { fail "occ: daemon did not start"; return; }
	run_markers occ 50 -r -s 300 || fail "occ: markers written"
	kill -HUP "$DPID"
	check "occ: the hook's exit status is known" \
		wait_for "$W/occ.err" 'chunk-000001: --on-chunk hook exited 0' 30
	kill -TERM "$DPID"
	wait_exit "$DPID" 30 || rc=$?
	DPID=
	eq "occ: the stop ends: exit status" "$rc" 0
	read -r ns nh nf nt nn <<<"$(set_counts occ)"
	eq "occ: every set handed off, none failed" "${nh:-x} ${nf:-x}" "${ns:-y} 0"
}

# Start-up recovery reads only the traces a ringtraced of this user made
# with --on-chunk (the directory written by no one else, its marker a
# regular file of its own), and in them takes regular files only: a FIFO
# named like a chunk does not hang the start, a metadata symlink brings
# nothing into a set.
test_on_chunk_recover_safe() {
	local p=$W/ocz.p rc=0 before secret="ocz-secret-$RANDOM-$RANDOM" d
	note "--on-chunk: start-up recovery past FIFOs, symlinks and traces not its own"
	reset_module
	mkdir -p "$p" "$W/ocz.moved"
	echo "$secret" >"$W/ocz.secret"
	# Another user's "trace", with a marker of its own making.
	for d in other shared; do
		mkdir -p "$p/$d/.chunk-000001.tmp"
		mkfifo "$p/$d/cpu0-000001.zst"
		ln -s "$W/ocz.secret" "$p/$d/metadata"
		: >"$p/$d/.ringtrace-handoff"
	done
	chown -hR nobody "$p/other"
	# Root's, but its group may write in it: anyone in it could have
	# planted these.
	chmod 0770 "$p/shared"
	# A ringtraced's own trace, killed with set 1 not shipped (its hook
	# failed) and rotation 2 loose; then its metadata made a symlink to
	# the secret, and a FIFO put among its chunks.
	start_daemon ocz1 -o "$p/t1" -f 100 --on-chunk 'exit 3' ||
		{ fail "ocz: the start hangs or fails"; [[ -n $DPID ]] && kill -KILL "$DPID"; DPID=; return; }
	run_markers ocz1 50 -r -s 300 || fail "ocz: markers of set 1"
	kill -HUP "$DPID"
	check "ocz: set 1's hook failed" wait_for "$W/ocz1.err" 'chunk-000001: --on-chunk hook exited 3' 30
	run_markers ocz2 50 -r -s 300 || fail "ocz: markers of rotation 2"
	setup "ocz: rotation 2's markers in its chunks" drained
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	mv "$p/t1/metadata" "$p/t1/metadata.real"
	ln -s "$W/ocz.secret" "$p/t1/metadata"
	mkfifo "$p/t1/cpu99-000002.zst"
	before=$(ls -lAR --time-style=+ "$p/other" "$p/shared")

	start_daemon ocz2 -o "$p/t2" -f 100 --on-chunk "mv \"\$1\" \"$W/ocz.moved/\$(basename \"\$(dirname \"\$1\")\")-\$(basename \"\$1\")\"" ||
		{ fail "ocz: the start hangs or fails"; [[ -n $DPID ]] && kill -KILL "$DPID"; DPID=; return; }
	check "ocz: the set not shipped is handed over" \
		wait_for "$W/ocz2.err" "t1/chunk-000001: --on-chunk hook exited 0" 30
	check "ocz: rotation 2, its metadata a symlink now, is not assembled" \
		wait_for "$W/ocz2.err" "t1/metadata: chunk set 2 left unassembled by an earlier ringtraced, not assembled: Invalid argument" 30
	stop_daemon || rc=$?
	eq "ocz: exit status" "$rc" 0
	check "ocz: the traces not its own are untouched" \
		test "$(ls -lAR --time-style=+ "$p/other" "$p/shared")" = "$before"
	check "ocz: the FIFO among its chunks left alone" test -p "$p/t1/cpu99-000002.zst"
	check "ocz: the set handed over holds the real metadata" \
		grep -q '^/\* CTF 1.8' "$W/ocz.moved/t1-chunk-000001/metadata"
	check "ocz: the secret is in no set" \
		sh -c "! grep -rqF '$secret' '$W/ocz.moved' '$p/t1' '$p/t2'"
}

# --max-total with --on-chunk: an older trace whose sets are being handed
# over is in use, kept (each hook finds its set whole); once the hook
# failed them, the budget removes them, each said; and the running trace's
# sets its hook failed, each said.
test_on_chunk_retention() {
	local r=$W/ocm.root log=$W/ocm.hooklog hook=$W/ocm-hook old ns rc=0 i
	note "--max-total with --on-chunk: sets being handed over are kept; sets not shipped removed only by the budget, each said"
	reset_module
	mkdir -p "$r"
	: >"$log"
	start_daemon ocm1 --root "$r" -f 100 -l store --on-chunk 'exit 3' ||
		{ fail "ocm: daemon did not start"; return; }
	for i in 1 2; do
		run_markers "ocm$i" 100 -r -s 300 || fail "ocm: markers of set $i"
		kill -HUP "$DPID"
	done
	check "ocm: both hooks failed" wait_for_count "$W/ocm1.err" 'hook exited 3' 2 30
	stop_daemon || rc=$?
	eq "ocm: exit status" "$rc" 0
	old=$(ls "$r")
	ns=$(ls "$r/$old" | grep -c '^chunk-')
	check "ocm: the older trace keeps its sets ($ns)" test "$ns" -ge 2
	# Slow (two --max-total checks at least while it runs), and checks
	# that every file of the set's manifest is there, whole.
	cat >"$hook" <<EOF
#!/bin/sh
sleep 1
whole=yes
for f in \$(jq -r '.files[] | "\(.name):\(.size)"' "\$2"); do
	[ "\$(stat -c %s "\$1/\${f%:*}" 2>/dev/null)" = "\${f#*:}" ] || whole=no
done
echo "\$1 \$whole" >>$log
exit 3
EOF
	chmod 755 "$hook"
	start_daemon ocm2 --root "$r" --max-total 4K --max-total-interval 500ms -f 100 -l store \
		--on-chunk "$hook" ||
		{ fail "ocm: second daemon did not start"; return; }
	check "ocm: the older trace's sets reach the hook" \
		wait_for_count "$log" "^$r/$old/chunk-" "$ns" 60
	eq "ocm: each whole while the hook had it" \
		"$(grep -c "^$r/$old/chunk-[0-9]* yes$" "$log")" "$ns"
	check "ocm: then the budget removes them, each said" \
		wait_for_count "$W/ocm2.err" "^ringtraced: --max-total: removing $r/$old/chunk-[0-9]*, a chunk set no --on-chunk hook has shipped$" "$ns" 30
	check "ocm: the older trace is gone" wait_gone "$r/$old" 10
	run_markers ocm3 100 -r -s 300 || fail "ocm: markers of the running trace's set"
	kill -HUP "$DPID"
	check "ocm: the running trace's set its hook failed is removed, said" \
		wait_for "$W/ocm2.err" "^ringtraced: --max-total: removed $r/[^/]*/chunk-000001, a chunk set never shipped" 30
	stop_daemon || rc=$?
	eq "ocm: second daemon exit status" "$rc" 0
}

# The hand-off thread, main's steering of the stop and --max-total under
# ThreadSanitizer: rotations by size and SIGHUP while a hook ships half
# the sets, fails the others, and the budget removes what it failed; then
# a stop with a deadline.
test_on_chunk_races() {
	local rc=0 i mpid r=$W/ocx.root daemon=$DAEMON
	[[ -x $TSAN ]] || { fail "ocx: $TSAN missing (make -C daemon)"; return; }
	note "--on-chunk under ThreadSanitizer: rotations, hooks, --max-total, a bounded stop"
	reset_module
	mkdir -p "$r"
	DAEMON=$TSAN
	start_daemon ocx --root "$r" --max-total 64K --max-total-interval 300ms -f 100 \
		-s 40K --subbuf-size 16K --num-subbufs 64 --stop-timeout 20s \
		--on-chunk 'case "$1" in *[13579]) exit 1 ;; esac; rm -r "$1"'
	rc=$?
	DAEMON=$daemon
	((rc == 0)) || { fail "ocx: daemon did not start"; return; }
	run_markers ocx 3000 -r -s 200 -d 500 &
	mpid=$!
	for ((i = 0; i < 20; i++)); do
		nap 0.2
		kill -HUP "$DPID"
	done
	wait "$mpid" || fail "ocx: markers"
	stop_daemon || rc=$?
	eq "ocx: exit status" "$rc" 0
	check "ocx: sets handed off and failed" \
		grep -q 'chunk-[0-9]*: --on-chunk hook exited 1' "$W/ocx.err"
	check "ocx: the budget removed sets the hook failed" \
		grep -q "^ringtraced: --max-total: removed $r/[^/]*/chunk-[0-9]*, a chunk set never shipped" "$W/ocx.err"
	eq "ocx: ThreadSanitizer's reports" "$(grep -c 'WARNING: ThreadSanitizer' "$W/ocx.err")" 0
	grep -A12 'WARNING: ThreadSanitizer' "$W/ocx.err" | head -40 | sed 's/^/# /'
}

# The module parameters of the persistent region on this boot's command
# line (tools/run-tests' region_args), or nothing.
persist_args() {
	local w size addr
	for w in $(</proc/cmdline); do
		case $w in
		reserve_mem=*:ringtrace)
			echo persist=ringtrace
			return ;;
		memmap=*\$*)
			size=${w#memmap=}
			addr=${size#*\$}
			size=${size%%\$*}
			echo "persist_addr=$addr persist_size=$(numfmt --from=iec "$size")"
			return ;;
		esac
	done
}

# reload_ringtrace ARGS...: ringtrace.ko again with ARGS; the selftest
# module, which needs it, is left out from then on.
reload_ringtrace() {
	if [[ -d $ST ]]; then rmmod ringtrace_selftest || return 1; fi
	rmmod ringtrace && insmod "$KO/ringtrace.ko" "$@"
}

# Writes the newest valid metadata and ksyms copies of the image $1 to
# $2/metadata and $2/ksyms (struct ringtrace_persist_blob: the valid copy
# with the highest gen; xxh64 by xxhsum) and prints "boot_id build_id
# release metadata_gen ksyms_gen" of its header.
persist_blobs() {
	python3 - "$1" "$2" <<'PY'
import struct, subprocess, sys

img = open(sys.argv[1], 'rb').read()
out = sys.argv[2]
# include/uapi/linux/ringtrace_persist.h, struct ringtrace_persist_header
assert img[:8] == b'RTPERSIS', 'magic'
release = img[56:128].split(b'\0')[0].decode()
build_id = img[200:220][:struct.unpack_from('<I', img, 220)[0]].hex()
boot_id = img[224:240].hex()
areas = {'metadata': (320, 336), 'ksyms': (344, 360)}
gens = []
for name, (offs, size_at) in areas.items():
    size = struct.unpack_from('<Q', img, size_at)[0]
    best = None
    for off in struct.unpack_from('<2Q', img, offs):
        gen, length, checksum, reserved = struct.unpack_from('<4Q', img, off)
        data = img[off + 32:off + 32 + length]
        if not gen or reserved or length > size - 32:
            continue
        digest = subprocess.run(['xxhsum', '-H1', '-'], input=data,
                                capture_output=True).stdout.split()[0]
        if digest.decode() != '%016x' % checksum:
            continue
        if best is None or gen > best[0]:
            best = (gen, data)
    if best:
        open('%s/%s' % (out, name), 'wb').write(best[1])
    gens.append(str(best[0] if best else 0))
print(boot_id, build_id, release, *gens)
PY
}

# The GNU build id of the running kernel, from /sys/kernel/notes.
kernel_build_id() {
	python3 -c '
import struct
d = open("/sys/kernel/notes", "rb").read()
o = 0
while o + 12 <= len(d):
    n, s, t = struct.unpack_from("<3I", d, o)
    o += 12
    if t == 3 and d[o:o + n] == b"GNU\0":
        print(d[o + ((n + 3) & ~3):o + ((n + 3) & ~3) + s].hex())
        break
    o += ((n + 3) & ~3) + ((s + 3) & ~3)'
}

# The persistent region describes the trace recorded in it (issue 32):
# ringtraced, started over rings in the region, gives it this boot's
# identity and the kernel's symbols, and the metadata it copies is the
# one the image keeps.  Reloaded, the image's newest metadata copy is the
# trace's metadata byte for byte, its newest ksyms copy the trace's
# .ringtrace-ksyms.zst, and its header names this boot, this build and
# release.  Needs the region on the command line, as tools/run-tests
# boots every guest (region_args).  It runs last: it leaves ringtrace.ko
# loaded over the region (the image released) and the selftest module out.
test_persist_image() {
	local args uuid rc=0 got
	args=$(persist_args)
	[[ -n $args ]] || { fail "pimg: no persistent region on the kernel command line (boot with tools/run-tests' region_args)"; return; }
	# shellcheck disable=SC2086 # the parameters, word by word
	setup "pimg: ringtrace.ko loaded with $args" reload_ringtrace $args || return
	# An image a test left (selftests/persist_test's): released.
	uuid=$(sed -n 's/^uuid //p' "$RT/persist/info")
	grep -qx 'state live' "$RT/persist/info" ||
		setup "pimg: earlier image released" sh -c "echo $uuid >$RT/persist/release"
	check "pimg: region live" grep -qx 'state live' "$RT/persist/info"
	echo irq_handler_entry >"$RT/set_event_stack"
	start_daemon pimg -o "$W/pimg" || { fail "pimg: daemon did not start"; return; }
	setup "pimg: markers written" run_markers pimg 100
	stop_daemon || rc=$?
	eq "pimg: daemon exit status" "$rc" 0
	echo '!irq_handler_entry' >"$RT/set_event_stack"
	check "pimg: the trace has its symbols" test -s "$W/pimg/.ringtrace-ksyms.zst"
	# The image is readable once a load finds it: reload.
	# shellcheck disable=SC2086
	setup "pimg: reloaded with the region" reload_ringtrace $args || return
	check "pimg: the image kept" grep -qx 'state previous' "$RT/persist/info"
	mkdir -p "$W/pimg.blobs"
	setup "pimg: image read" cp "$RT/persist/image" "$W/pimg.img"
	got=$(persist_blobs "$W/pimg.img" "$W/pimg.blobs")
	note "pimg: image: $got"
	check "pimg: the image's metadata is the trace's, byte for byte" \
		cmp "$W/pimg.blobs/metadata" "$W/pimg/metadata"
	check "pimg: the image's ksyms are the trace's .ringtrace-ksyms.zst" \
		cmp "$W/pimg.blobs/ksyms" "$W/pimg/.ringtrace-ksyms.zst"
	eq "pimg: the image's boot id, build id and release" "$(cut -d' ' -f1-3 <<<"$got")" \
		"$(tr -d '\n-' </proc/sys/kernel/random/boot_id) $(kernel_build_id) $(uname -r)"
	eq "pimg: one ksyms write (gen)" "$(cut -d' ' -f5 <<<"$got")" 1
	uuid=$(sed -n 's/^uuid //p' "$RT/persist/info")
	setup "pimg: image released" sh -c "echo $uuid >$RT/persist/release"
}

# wait_gone PATH SECONDS: until PATH does not exist.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ -e $1 ]] || return 0
		nap 0.1
	done
	return 1
}

# Every test, in the order they run.
ALL_TESTS="test_usage test_usage_root_only test_symbols_usage test_busy
	test_drain_priority test_end_to_end test_splice_store test_start_burst test_kernel_generator test_losses test_sigkill
	test_enospc test_rotation test_hup test_thread_table test_chunk_time test_backlog
	test_second_signal test_kill_packing test_service test_retention
	test_dyn_events test_sync_eio test_metadata_fail test_pack_eio
	test_nofile test_chunk_time_long test_retention_safe
	test_compress_many test_flush_ack test_races
	test_syscalls test_wakeup test_install test_on_chunk test_on_chunk_hooks
	test_on_chunk_recover test_on_chunk_path test_on_chunk_kill
	test_on_chunk_stop test_on_chunk_sigchld test_on_chunk_recover_safe
	test_on_chunk_retention test_on_chunk_races test_trigger
	test_persist_image"

# The tests of the daemon's own logic: options, files, disks, signals,
# packers, hooks, the service's triggers (the kernel's side of a trigger:
# selftests/trigger_test and the cli suite's test_trigger on every
# kernel).  What they exercise of the kernel (a tmpfs that fills,
# dm-flakey, strace, ThreadSanitizer) does not depend on ringtrace.ko or
# its kernel, and their share of the module's interface (mmap, GET/PUT,
# flush, poll, the counters) is what the others test on every kernel.  They
# are two thirds of the suite's time: tools/run-tests runs them in one boot
# (RT_DAEMON_SCOPE=kernel in the others).
DAEMON_ONLY="test_usage test_usage_root_only test_symbols_usage test_drain_priority test_splice_store test_enospc test_rotation test_hup
	test_thread_table test_chunk_time test_backlog test_second_signal test_kill_packing
	test_service test_retention test_sync_eio test_pack_eio test_nofile
	test_chunk_time_long test_retention_safe test_compress_many
	test_flush_ack test_races test_install test_on_chunk test_on_chunk_hooks
	test_on_chunk_recover test_on_chunk_path test_on_chunk_kill
	test_on_chunk_stop test_on_chunk_sigchld test_on_chunk_recover_safe
	test_on_chunk_retention test_on_chunk_races test_trigger"

main() {
	local c t
	for f in "$DAEMON" "$MARKERS" "$TRIM"; do
		[[ -x $f ]] || { echo "$f missing: run make -C daemon first"; echo "daemon: 0 passed, 1 failed"; exit 1; }
	done
	[[ -f $KO/ringtrace.ko ]] || { echo "$KO/ringtrace.ko missing: make modules BUILD=$BUILD"; echo "daemon: 0 passed, 1 failed"; exit 1; }
	note "kernel $KVER, modules from $KO, decoder: $( ((USE_CLI)) && echo "$CLI unpack" || echo "zstd -d + rt-trim")"

	test_no_module
	setup "insmod ringtrace.ko" insmod "$KO/ringtrace.ko"
	[[ -d $RT ]] || { echo "daemon: $passed passed, $((failed + 1)) failed"; exit 1; }
	DEFAULT_NUM_SUBBUFS=$(<"$RT/num_subbufs")	# the module's, before any test
	if [[ -f $KO/ringtrace_selftest.ko ]]; then
		setup "insmod ringtrace_selftest.ko" insmod "$KO/ringtrace_selftest.ko"
	fi
	# (no process substitution: the guest has no /dev/fd)
	CPUS=($(ls "$RT/cpu" | sort -n))
	note "CPUs: ${CPUS[*]}"

	for t in ${RT_DAEMON_TESTS:-$(scoped_tests "${RT_DAEMON_SCOPE:-all}" "$ALL_TESTS" "$DAEMON_ONLY")}; do
		local t0=$SECONDS
		"$t"
		note "$t: $((SECONDS - t0)) s"
	done

	reset_module
	[[ -d $ST ]] && check "rmmod ringtrace_selftest" rmmod ringtrace_selftest
	check "rmmod ringtrace" rmmod ringtrace
	if [[ -n ${RT_VM_OUT:-} ]]; then
		mkdir -p "$RT_VM_OUT/daemon-tests"
		cp "$W"/*.out "$W"/*.err "$W"/*.txt.err "$RT_VM_OUT/daemon-tests/" 2>/dev/null
	fi
	echo "daemon: $passed passed, $failed failed"
	((failed == 0))
}

main "$@"
