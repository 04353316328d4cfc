# SPDX-License-Identifier: GPL-2.0
#
# USDT probes (module/usdt.c, record -e usdt:PATH:PROVIDER:NAME): a part of
# tools/tests/profile_guest.sh, sourced there (its helpers and $W, $CLI,
# $RT).  On tools/tests/usdt-workload (its header says what it fires):
#   record   rt:tick, rt:forms and rt:start recorded around `usdt-workload fire`:
#            the workload saw rt:tick's semaphore at 1 and fired 1000
#            ticks; exactly 1000 usdt_rt_tick events of its pid, arg0 = i
#            and arg1 = -3i in order, faults 0; rt:forms's immediate,
#            %rip-relative global and stack slot read as 5, -77 and
#            1234567890123; rt:start (no argument) one event with faults
#            alone; babeltrace2 reads the 1000 too; no probe left
#   filter   --filter 'usdt_rt_tick: arg0 > 500' keeps 499 events; one
#            on arg3 (rt:tick has three) refused naming it
#   trigger  --trigger 'usdt_rt_tick: arg1 == -2100' saves one snapshot
#            holding tick 700 and the marker naming the hit
#   sem      `usdt-workload watch` (started before) sees the semaphore 0,
#            then 1 while a system-wide record probes rt:tick, then 0
#            again after record ends by Ctrl-C (a terminal's), SIGTERM and
#            SIGKILL; probe_events empty each time
#   bad      record -e usdt: on /bin/true, an unknown probe and rt:bad (an
#            operand not handled) refused in one line each, naming the
#            file's probes, the probe and its operand; malformed "s:"
#            commands written to probe_events refused (EINVAL); nothing
#            left, the semaphore still 0
# Every kernel of the matrix has uprobes: none of this is skipped.

USDT_WL=$REPO/tools/tests/usdt-workload
USDT_EV=usdt_rt_tick

usdt_no_probes() {
	[[ -z $(cat "$RT/probe_events") ]] && return 0
	sed 's/^/# probe_events: /' "$RT/probe_events"
	return 1
}

# usdt_args REPORT EVENT: "arg0 arg1" of each EVENT line, in order.
usdt_args() {
	grep " $2: " "$1" | sed -nE 's/.* arg0=(-?[0-9]+), arg1=(-?[0-9]+),.*/\1 \2/p'
}

usdt_record() {
	local out=$W/usdt-rec pid= sem= fired= n bad want forms
	"$CLI" record -e "usdt:$USDT_WL:rt:tick,usdt:$USDT_WL:rt:forms,usdt:$USDT_WL:rt:start" \
		-o "$out" -- "$USDT_WL" fire "$W/usdt-fire.out" >/dev/null 2>"$W/usdt-rec.err"
	check "usdt: record -e usdt:...:rt:tick,usdt:...:rt:forms,usdt:...:rt:start exits 0" \
		test $? -eq 0
	sed 's/^/# stderr: /' "$W/usdt-rec.err"
	check "usdt: no probe left after record" usdt_no_probes
	read -r pid sem fired <"$W/usdt-fire.out"
	check "usdt: the workload saw rt:tick's semaphore at 1 while recorded (got ${sem:-none})" \
		test "${sem:-}" = 1
	check "usdt: the workload fired 1000 ticks (got ${fired:-none})" test "${fired:-}" = 1000
	"$CLI" report "$out" >"$W/usdt-rec.report" 2>"$W/usdt-rec.report.err"
	check "usdt: report reads the trace" test $? -eq 0
	n=$(grep -c -- "-$pid $USDT_EV: " "$W/usdt-rec.report")
	check "usdt: exactly 1000 $USDT_EV events of the workload's pid $pid (got $n)" \
		test "$n" -eq 1000
	n=$(grep -c " $USDT_EV: " "$W/usdt-rec.report")
	check "usdt: no $USDT_EV of another process (all: $n)" test "$n" -eq 1000
	want=$(seq 0 999 | awk '{ print $1, -3 * $1 }')
	check "usdt: arg0 = i and arg1 = -3i for i = 0..999, in order" \
		test "$(usdt_args "$W/usdt-rec.report" $USDT_EV)" = "$want"
	bad=$(grep " $USDT_EV: " "$W/usdt-rec.report" | grep -cv 'faults=0')
	check "usdt: no fault on a register argument ($bad with one)" test "$bad" -eq 0
	grep -m2 " $USDT_EV: " "$W/usdt-rec.report" | sed 's/^/# /'
	forms=$(grep " usdt_rt_forms: " "$W/usdt-rec.report")
	echo "# $forms"
	check "usdt: rt:forms: \$5, rt_global(%rip), -8(%rsp) read as 5, -77, 1234567890123, faults 0" \
		eval '[[ $forms == *" arg0=5, arg1=-77, arg2=1234567890123, faults=0"* ]]'
	n=$(grep -c " usdt_rt_start: faults=0$" "$W/usdt-rec.report")
	check "usdt: rt:start, a probe without arguments: its one event, faults alone ($n)" \
		test "$n" -eq 1
	n=$("$CLI" unpack "$out" "$out.ctf" >/dev/null &&
		babeltrace2 "$out.ctf" 2>"$W/usdt-babel.err" | grep -c "$USDT_EV: ")
	check "usdt: babeltrace2 reads the 1000 events too ($n)" test "$n" -eq 1000
}

usdt_filter() {
	local out=$W/usdt-filter n
	"$CLI" record -e "usdt:$USDT_WL:rt:tick" --filter "$USDT_EV: arg0 > 500" -o "$out" -- \
		"$USDT_WL" fire "$W/usdt-filter.out" >/dev/null 2>"$W/usdt-filter.err"
	check "usdt: record --filter '$USDT_EV: arg0 > 500' exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/usdt-filter.err"
	"$CLI" report "$out" >"$W/usdt-filter.report" 2>/dev/null
	n=$(grep -c " $USDT_EV: " "$W/usdt-filter.report")
	check "usdt: --filter 'arg0 > 500' keeps 499 events (got $n)" test "$n" -eq 499
	check "usdt: ... those of arg0 501..999" \
		test "$(usdt_args "$W/usdt-filter.report" $USDT_EV | cut -d' ' -f1)" = "$(seq 501 999)"
	check "usdt: no probe left after the filtered record" usdt_no_probes
	# rt:tick has three arguments: its fields are arg0..arg2, faults, comm.
	"$CLI" record -e "usdt:$USDT_WL:rt:tick" --filter "$USDT_EV: arg3 == 1" \
		-o "$out.bad" -- true >/dev/null 2>"$W/usdt-filter-bad.err"
	n=$?
	check "usdt: --filter 'arg3 == 1' on a 3-argument probe refused in one line naming arg3" \
		eval '[ $n -ne 0 ] && one_line "$W/usdt-filter-bad.err" &&
		      grep -qF "unknown field '"'arg3'"'" "$W/usdt-filter-bad.err"'
	check "usdt: ... no probe left, no trace directory" \
		eval 'usdt_no_probes && [ ! -e "$out.bad" ]'
}

# A trigger on a negative argument: the snapshot holds the tick that fired it.
usdt_trigger() {
	local out=$W/usdt-trig n
	"$CLI" record --mode overwrite -e "usdt:$USDT_WL:rt:tick" \
		--trigger "$USDT_EV: arg1 == -2100" -o "$out" -- \
		"$USDT_WL" fire "$W/usdt-trig.out" >/dev/null 2>"$W/usdt-trig.err"
	check "usdt: record --trigger '$USDT_EV: arg1 == -2100' exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/usdt-trig.err"
	check "usdt: no probe left after the triggered record" usdt_no_probes
	n=$(find "$out" -mindepth 1 -maxdepth 1 -type d -name "*-$USDT_EV" | wc -l)
	check "usdt: record --trigger: one snapshot named after $USDT_EV ($n)" test "$n" -eq 1
	"$CLI" report "$out"/*-"$USDT_EV" >"$W/usdt-trig.report" 2>/dev/null
	check "usdt: the snapshot holds the tick that fired it (arg0=700, arg1=-2100)" \
		grep -q " $USDT_EV: arg0=700, arg1=-2100," "$W/usdt-trig.report"
	check "usdt: ... and the kernel's marker naming the hit" \
		grep -q "ringtrace trigger: $USDT_EV: arg1 == -2100 (cpu " "$W/usdt-trig.report"
}

# usdt_sem_is V: the watcher's last write says V (within 20 s).
usdt_sem_is() { wait_for 20 grep -qx "$1" "$W/usdt-sem"; }

# usdt_stop_by HOW: a system-wide record of rt:tick, stopped by HOW (int:
# Ctrl-C on its terminal, TERM, KILL); the semaphore before, during, after.
usdt_stop_by() {
	local how=$1 out=$W/usdt-sig-$1 rec status daemon
	local opts=()
	[[ $how == int ]] && opts=(--pty --ctrl-c-when "$W/usdt-ctrl-c")
	rm -f "$W/usdt-sr.pid" "$W/usdt-sr.status" "$W/usdt-ctrl-c"
	python3 "$REPO/tools/tests/sigrun.py" "${opts[@]}" "$W/usdt-sr.status" "$W/usdt-sr.pid" \
		"$CLI" record -e "usdt:$USDT_WL:rt:tick" -o "$out" >>"$W/usdt-sigrun.out" 2>&1 &
	status=$!
	wait_for 120 test -s "$W/usdt-sr.pid"
	rec=$(cat "$W/usdt-sr.pid")
	check "usdt $how: the semaphore is 1 while record probes rt:tick" usdt_sem_is 1
	grep " $USDT_EV " "$RT/probe_events" >"$W/usdt-good-cmd"
	check "usdt $how: ... and the probe is in probe_events, with its semaphore" \
		grep -qE "^[0-9]+ $USDT_EV s:$USDT_WL:0x[0-9a-f]+@rt_tick ref=0x[0-9a-f]+ a0=4s@" \
		"$W/usdt-good-cmd"
	sed 's/^/# /' "$W/usdt-good-cmd"
	daemon=$(pgrep -P "$rec" -x ringtraced)
	case $how in
	int) touch "$W/usdt-ctrl-c" ;;
	*) kill -"${how^^}" "$rec" ;;
	esac
	wait "$status"
	echo "# record ended: $(cat "$W/usdt-sr.status" 2>/dev/null)"
	check "usdt $how: record ended" eval '! kill -0 "$rec" 2>/dev/null'
	check "usdt $how: the semaphore is 0 again" usdt_sem_is 0
	check "usdt $how: probe_events is empty" usdt_no_probes
	if [[ $how == kill ]]; then
		# Its ringtraced ends by itself; tracing is left on: put it off.
		wait_for 60 eval '[[ -z $daemon || ! -d /proc/$daemon ]]' ||
			kill -KILL "$daemon"
		echo 0 >"$RT/tracing_on"
		echo 0 >"$RT/events/enable"
	fi
}

usdt_sem() {
	local watcher how
	"$USDT_WL" watch "$W/usdt-sem" &
	watcher=$!
	check "usdt: the semaphore is 0 with no tracer" usdt_sem_is 0
	for how in int term kill; do
		usdt_stop_by "$how"
	done
	usdt_bad
	check "usdt: the semaphore still 0 after the refused specs" usdt_sem_is 0
	kill "$watcher"
	wait "$watcher" 2>/dev/null
}

# usdt_pe_write CMD: one write(2) of CMD to probe_events; its strerror in
# $W/usdt-pe.err.
usdt_pe_write() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.write(fd, sys.argv[2].encode())
except OSError as e:
    sys.exit(e.strerror)' "$RT/probe_events" "$1" 2>"$W/usdt-pe.err"
}

usdt_bad() {
	local spec what rc cmd off
	while IFS='|' read -r spec what; do
		"$CLI" record -e "sched_switch,$spec" -o "$W/usdt-bad" -- true \
			>/dev/null 2>"$W/usdt-bad.err"
		rc=$?
		check "usdt: record -e $spec refused ($rc), in one line" \
			eval '[ $rc -ne 0 ] && one_line "$W/usdt-bad.err"'
		check "usdt: ... saying '$what'" grep -qF -- "$what" "$W/usdt-bad.err"
		check "usdt: ... no probe, no trace directory" \
			eval 'usdt_no_probes && [ ! -e "$W/usdt-bad" ]'
	done <<-EOF
		usdt:/bin/true:rt:tick|/bin/true has no USDT probes
		usdt:$USDT_WL:rt:nosuch|no USDT probe rt:nosuch (it has rt:bad, rt:forms, rt:start, rt:tick)
		usdt:$USDT_WL:rt:bad|USDT probe rt:bad: argument '-1@%ah': operand '%ah' is not handled
	EOF
	# The kernel's own checks, on commands the CLI would not write.
	off=$(grep -o 's:[^ ]*' "$W/usdt-good-cmd" 2>/dev/null)
	off=${off#s:"$USDT_WL":}
	off=${off%@*}
	setup "usdt: rt:tick's offset from record's command ($off)" test -n "$off"
	for cmd in "a1=8@ax" "a0=3@ax" "a0=8@nosuch" "a0=8@8(ax,dx,3)" "a0=8@8(ax" \
		   "ref=0x1" "ref=0x7ffffffe" "a0=8@ax  a1=8@bx" \
		   "$(seq -f 'a%g=8@ax' -s ' ' 0 12)"; do
		usdt_pe_write "s:$USDT_WL:$off@bad $cmd"
		rc=$?
		check "usdt: probe_events 's:...@bad $cmd' refused with EINVAL" \
			eval '[ $rc -ne 0 ] && grep -q "Invalid argument" "$W/usdt-pe.err"'
		check "usdt: ... nothing left" usdt_no_probes
	done
	usdt_pe_write "s:$USDT_WL:$off a0=8@ax"
	rc=$?
	check "usdt: probe_events 's:' without a label refused with EINVAL" \
		eval '[ $rc -ne 0 ] && grep -q "Invalid argument" "$W/usdt-pe.err" && usdt_no_probes'
}

profile_usdt() {
	local step t0
	for step in usdt_record usdt_filter usdt_trigger usdt_sem; do
		t0=$SECONDS
		"$step"
		echo "# $step took $((SECONDS - t0)) s"
	done
}
