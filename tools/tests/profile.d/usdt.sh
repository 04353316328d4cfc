# SPDX-License-Identifier: GPL-2.0
#
# USDT probes (module/usdt.c, record -e usdt:PATH:PROVIDER:NAME): a part of
# tools/tests/profile_guest.sh, sourced there (its helpers and $W, $CLI,
# $RT).  On tools/tests/usdt-workload (its header says what it fires):
#   record   rt:tick, rt:forms, rt:start and rt:multi recorded around
#            `usdt-workload fire`: the workload saw rt:tick's semaphore at
#            1 and fired 1000 ticks; exactly 1000 usdt_rt_tick events of
#            its pid, arg0 = i and arg1 = -3i in order, faults 0;
#            rt:forms's immediate, %rip-relative global and stack slot read
#            as 5, -77 and 1234567890123; rt:start (no argument) one event
#            with faults alone; rt:multi, one probe at three sites, saw its
#            semaphore at 3 (one per site) and its 60 hits are exactly 60
#            usdt_rt_multi events, each site's own operand (a register, a
#            stack slot, a 2-byte global) read right: 10 x (1, 7i), 20 x
#            (2, 1000000000000 + i), 30 x (3, -1 - i), in order, faults 0;
#            babeltrace2 reads the 1000 ticks too; no probe left
#   filter   --filter 'usdt_rt_tick: arg0 > 500' keeps 499 events; one
#            on arg3 (rt:tick has three) refused naming it
#   trigger  --trigger 'usdt_rt_tick: arg1 == -2100' saves one snapshot
#            holding tick 700 and the marker naming the hit
#   sem      `usdt-workload watch` (started before) sees rt:tick's and
#            rt:multi's semaphores 0 0, then 1 3 while a system-wide
#            record probes both (rt:multi's three sites one command, in
#            probe_events), then 0 0 again after record ends by Ctrl-C (a
#            terminal's), SIGTERM and SIGKILL; probe_events empty each time
#   bad      record -e usdt: on /bin/true, an unknown probe and rt:bad (an
#            operand not handled) refused in one line each, naming the
#            file's probes, the probe and its operand; malformed "s:"
#            commands written to probe_events refused (EINVAL); nothing
#            left, the semaphore still 0; rt:mixed (sites with 1 and 2
#            arguments) and rt:many (33 sites) refused in one line each
#   multi    probe_events with several sites (at=): two of rt:multi's
#            sites in one command raise its semaphore to 2 while the file
#            is open, read back as written, 0 when closed; malformed or
#            disagreeing sites (an argument count not the first site's,
#            two sites at one offset, a bad at=, at= before ref=) refused
#            with EINVAL, 33 sites with E2BIG; a command whose third site
#            is beyond the file's end refused with EINVAL after its first
#            two were placed: nothing left, the semaphore back to 0 0;
#            record -e usdt:...:rt:full takes its 32 sites
# Every kernel of the matrix has uprobes: none of this is skipped.

USDT_WL=$REPO/tools/tests/usdt-workload
USDT_EV=usdt_rt_tick
USDT_MEV=usdt_rt_multi

usdt_no_probes() {
	[[ -z $(<"$RT/probe_events") ]] && return 0
	sed 's/^/# probe_events: /' "$RT/probe_events"
	return 1
}

# usdt_args REPORT EVENT: "arg0 arg1" of each EVENT line, in order.
usdt_args() {
	grep " $2: " "$1" | sed -nE 's/.* arg0=(-?[0-9]+), arg1=(-?[0-9]+),.*/\1 \2/p'
}

usdt_record() {
	local out=$W/usdt-rec pid= sem= fired= msem= mfired= n bad want forms
	"$CLI" record -e "usdt:$USDT_WL:rt:tick,usdt:$USDT_WL:rt:forms,usdt:$USDT_WL:rt:start,usdt:$USDT_WL:rt:multi" \
		-o "$out" -- "$USDT_WL" fire "$W/usdt-fire.out" >/dev/null 2>"$W/usdt-rec.err"
	check "usdt: record -e usdt:...:rt:tick,...:rt:forms,...:rt:start,...:rt:multi exits 0" \
		test $? -eq 0
	sed 's/^/# stderr: /' "$W/usdt-rec.err"
	check "usdt: no probe left after record" usdt_no_probes
	read -r pid sem fired msem mfired <"$W/usdt-fire.out"
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
	usdt_multi_check "$W/usdt-rec.report" "$pid" "$msem" "$mfired"
	n=$("$CLI" unpack "$out" "$out.ctf" >/dev/null &&
		babeltrace2 "$out.ctf" 2>"$W/usdt-babel.err" | grep -c "$USDT_EV: ")
	check "usdt: babeltrace2 reads the 1000 events too ($n)" test "$n" -eq 1000
}

# usdt_multi_check REPORT PID MSEM MFIRED: rt:multi's three sites in the
# report, each argument as its own site's operand gave it.
usdt_multi_check() {
	local report=$1 pid=$2 msem=$3 mfired=$4 n bad want
	check "usdt: the workload saw rt:multi's semaphore at 3, one per site (got ${msem:-none})" \
		test "${msem:-}" = 3
	check "usdt: the workload fired rt:multi's 3 sites 60 times (got ${mfired:-none})" \
		test "${mfired:-}" = 60
	n=$(grep -c -- "-$pid $USDT_MEV: " "$report")
	check "usdt: exactly 60 $USDT_MEV events of the workload's pid $pid (got $n)" \
		test "$n" -eq 60
	n=$(grep -c " $USDT_MEV: " "$report")
	check "usdt: no $USDT_MEV of another process (all: $n)" test "$n" -eq 60
	want=$(for i in {0..9}; do echo "1 $((7 * i))"; done
		for i in {0..19}; do echo "2 $((1000000000000 + i))"; done
		for i in {0..29}; do echo "3 $((-1 - i))"; done)
	check "usdt: rt:multi: site 1's register 7i (10), site 2's stack slot 1000000000000+i (20), site 3's int16 global -1-i (30), in order" \
		test "$(usdt_args "$report" $USDT_MEV)" = "$want"
	bad=$(grep " $USDT_MEV: " "$report" | grep -cv 'faults=0$')
	check "usdt: rt:multi: no fault at any site ($bad with one)" test "$bad" -eq 0
	grep " $USDT_MEV: " "$report" | sed -n '1p;11p;31p' | sed 's/^/# /'
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
	python3 -S "$REPO/tools/tests/sigrun.py" "${opts[@]}" "$W/usdt-sr.status" "$W/usdt-sr.pid" \
		"$CLI" record -e "usdt:$USDT_WL:rt:tick,usdt:$USDT_WL:rt:multi" -o "$out" \
		>>"$W/usdt-sigrun.out" 2>&1 &
	status=$!
	wait_for 120 test -s "$W/usdt-sr.pid"
	rec=$(<"$W/usdt-sr.pid")
	check "usdt $how: the semaphores are 1 and 3 (rt:multi's sites) while record probes rt:tick and rt:multi" \
		usdt_sem_is "1 3"
	grep " $USDT_EV " "$RT/probe_events" >"$W/usdt-good-cmd"
	check "usdt $how: ... and the probe is in probe_events, with its semaphore" \
		grep -qE "^[0-9]+ $USDT_EV s:$USDT_WL:0x[0-9a-f]+@rt_tick ref=0x[0-9a-f]+ a0=4s@" \
		"$W/usdt-good-cmd"
	sed 's/^/# /' "$W/usdt-good-cmd"
	grep " $USDT_MEV " "$RT/probe_events" >"$W/usdt-multi-cmd"
	check "usdt $how: ... and rt:multi, one probe of 3 sites, each its operands" \
		grep -qE "^[0-9]+ $USDT_MEV s:$USDT_WL:0x[0-9a-f]+@rt_multi ref=0x[0-9a-f]+ a0=4s@\\\$1 a1=4s@[a-z0-9]+ at=0x[0-9a-f]+ a0=4s@\\\$2 a1=8s@-8\(sp\) at=0x[0-9a-f]+ a0=4s@\\\$3 a1=2s@-?[0-9]+\(ip\)$" \
		"$W/usdt-multi-cmd"
	sed 's/^/# /' "$W/usdt-multi-cmd"
	daemon=$(pgrep -P "$rec" -x ringtraced)
	case $how in
	int) touch "$W/usdt-ctrl-c" ;;
	*) kill -"${how^^}" "$rec" ;;
	esac
	wait "$status"
	echo "# record ended: $(cat "$W/usdt-sr.status" 2>/dev/null)"
	check "usdt $how: record ended" eval '! kill -0 "$rec" 2>/dev/null'
	check "usdt $how: the semaphores are 0 0 again" usdt_sem_is "0 0"
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
	local watcher how t0
	"$USDT_WL" watch "$W/usdt-sem" &
	watcher=$!
	check "usdt: the semaphores are 0 0 with no tracer" usdt_sem_is "0 0"
	for how in int term kill; do
		usdt_stop_by "$how"
	done
	usdt_bad
	check "usdt: the semaphores still 0 0 after the refused specs" usdt_sem_is "0 0"
	t0=$SECONDS
	usdt_multi
	echo "# usdt_multi took $((SECONDS - t0)) s"
	kill "$watcher"
	wait "$watcher" 2>/dev/null
}

# usdt_pe_write CMD: one write(2) of CMD to probe_events
# (tools/tests/write_each.py); its error's name and strerror in
# $W/usdt-pe.err.
usdt_pe_write() {
	python3 -S "$REPO/tools/tests/write_each.py" "$RT/probe_events" "$1" \
		>"$W/usdt-pe.err" 2>&1
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
		usdt:$USDT_WL:rt:nosuch|no USDT probe rt:nosuch (it has rt:full, rt:many, rt:bad, rt:forms, rt:start, rt:multi, rt:mixed, rt:tick)
		usdt:$USDT_WL:rt:bad|USDT probe rt:bad: argument '-1@%ah': operand '%ah' is not handled
		usdt:$USDT_WL:rt:mixed|USDT probe rt:mixed: its sites disagree on the argument count (1 at 0x
		usdt:$USDT_WL:rt:many|USDT probe rt:many has 33 sites, more than the 32 ringtrace probes at once
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

# usdt_pe_expect CMD ERR WHAT: one write of CMD (bash's printf: one
# write(2) for a command this short, no python to start) refused with
# strerror ERR, nothing left, the semaphores 0 0.
usdt_pe_expect() {
	local rc err=$2
	printf '%s' "$1" 2>"$W/usdt-pe.err" >"$RT/probe_events"
	rc=$?
	check "usdt multi: probe_events $3 refused with '$err'" \
		eval '[ $rc -ne 0 ] && grep -qF "write error: $err" "$W/usdt-pe.err"'
	check "usdt multi: ... nothing left, the semaphores 0 0" \
		eval 'usdt_no_probes && usdt_sem_is "0 0"'
}

# Sites written to probe_events by hand, from record's rt:multi command
# (the watcher of usdt_sem runs).
usdt_multi() {
	local cmd off ref offs=() sites fd two x
	cmd=$(sed -E 's/^[0-9]+ [a-z_]+ //' "$W/usdt-multi-cmd" 2>/dev/null)
	ref=$(grep -oE ' ref=0x[0-9a-f]+' <<<"$cmd")
	off=${cmd%%@*}
	offs=("${off##*:}")
	for x in $(grep -oE ' at=0x[0-9a-f]+' <<<"$cmd"); do offs+=("${x#at=}"); done
	setup "usdt multi: rt:multi's 3 offsets and its ref= from record's command (${offs[*]}$ref)" \
		eval '[[ ${#offs[@]} -eq 3 && -n $ref ]]' || return
	# Two of its sites, one probe: the semaphore counts both.
	two="s:$USDT_WL:${offs[0]}@rt_two$ref a0=4s@\$1 at=${offs[2]} a0=4s@\$3"
	exec {fd}>"$RT/probe_events"
	printf '%s' "$two" >&"$fd"
	check "usdt multi: '$two' taken" test $? -eq 0
	check "usdt multi: ... rt:multi's semaphore 2 (one per site) while its file is open" \
		usdt_sem_is "0 2"
	check "usdt multi: ... read back as written" \
		test "$(sed -E 's/^[0-9]+ //' "$RT/probe_events")" = "usdt_rt_two $two"
	exec {fd}>&-
	check "usdt multi: ... the file closed: nothing left, the semaphore 0" \
		eval 'usdt_no_probes && usdt_sem_is "0 0"'
	sites="s:$USDT_WL:${offs[0]}@bad$ref a0=4s@\$1"
	usdt_pe_expect "$sites at=${offs[1]}" "Invalid argument" \
		"'... a0=... at=OFF' (no argument at site 2)"
	usdt_pe_expect "$sites at=${offs[1]} a0=4s@\$2 a1=8@ax" "Invalid argument" \
		"'... at=OFF a0=... a1=...' (2 arguments at site 2)"
	usdt_pe_expect "$sites at=${offs[1]} a1=8@ax" "Invalid argument" \
		"'... at=OFF a1=...' (site 2's first argument a1)"
	usdt_pe_expect "$sites at=${offs[1]} a0=4s@\$2 at=${offs[1]} a0=4s@\$3" "Invalid argument" \
		"'... at=OFF ... at=OFF' (two sites at one offset)"
	usdt_pe_expect "$sites at=${offs[0]} a0=4s@\$2" "Invalid argument" \
		"'s:...:OFF... at=OFF' (site 2 at site 1's offset)"
	usdt_pe_expect "$sites at=nosuch a0=4s@\$2" "Invalid argument" "'... at=nosuch'"
	usdt_pe_expect "$sites at= a0=4s@\$2" "Invalid argument" "'... at=' (no offset)"
	usdt_pe_expect "s:$USDT_WL:${offs[0]}@bad at=${offs[1]}$ref" "Invalid argument" \
		"'... at=OFF ref=...' (ref= after a site)"
	usdt_pe_expect "s:$USDT_WL:${offs[0]}@bad$(seq -f ' at=%g' -s '' 1 32)" \
		"Argument list too long" "with 33 sites"
	# Sites 1 and 2 placed, site 3 beyond the file's end: all taken out.
	usdt_pe_expect "$sites at=${offs[1]} a0=4s@\$2 at=0x7fffffff a0=4s@\$3" \
		"Invalid argument" "'... at=0x7fffffff' (site 3 beyond the file, after sites 1 and 2)"
	"$CLI" record -e "usdt:$USDT_WL:rt:full" -o "$W/usdt-full" -- true \
		>/dev/null 2>"$W/usdt-full.err"
	check "usdt multi: record -e usdt:...:rt:full (32 sites) exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/usdt-full.err"
	check "usdt multi: ... nothing left" usdt_no_probes
}

profile_usdt() {
	local step t0
	for step in usdt_record usdt_filter usdt_trigger usdt_sem; do
		t0=$SECONDS
		"$step"
		echo "# $step took $((SECONDS - t0)) s"
	done
}
