# SPDX-License-Identifier: GPL-2.0
#
# Bad profiler options of record (sourced by tools/tests/profile_guest.sh):
# --sample 0, above RINGTRACE_SAMPLE_MAX_HZ, not a number; --ustack-mode
# and --ustack-size out of their sets.  Each is refused in one line naming
# the range, before anything is switched: no trace directory, and the
# control files (sample_hz, ustack_*, mmap_*, set_event*, tracing_on,
# probe_events) read as before.  The module's own refusals of the same
# values are the sample and ucopy parts'; the USDT specs (no notes, an
# unknown probe) the usdt part's.

badspec_state() {
	ctl_lines sample_hz ustack_mode ustack_size mmap_events mmap_dump \
		set_event set_event_stack set_event_ustack tracing_on \
		probe_events
}

# badspec_refused WHAT MESSAGE OPTION...: record OPTION... -- true fails
# with one line holding MESSAGE, and changes nothing.
badspec_refused() {
	local what=$1 msg=$2 before rc out=$W/badspec
	shift 2
	before=$(badspec_state)
	rm -rf "$out"
	"$CLI" record "$@" -o "$out" -- true >/dev/null 2>"$W/badspec.err"
	rc=$?
	check "badspec: record $what refused (exit $rc) in one line" \
		eval '[ $rc -ne 0 ] && one_line "$W/badspec.err"'
	check "badspec: ... saying '$msg'" grep -qF -- "$msg" "$W/badspec.err"
	check "badspec: ... no trace directory, control files unchanged" \
		eval '[ ! -e "$out" ] && [ "$(badspec_state)" = "$before" ]'
}

profile_badspec() {
	local max=10000 range="is not a rate from 1 to 10000 Hz"
	badspec_refused "--sample 0" "--sample: '0' $range" --sample 0
	badspec_refused "--sample $((max + 1))" "--sample: '$((max + 1))' $range" \
		--sample $((max + 1))
	badspec_refused "--sample 99hz" "--sample: '99hz' $range" --sample 99hz
	badspec_refused "--ustack-mode dwarf" "--ustack-mode: 'dwarf' is not fp or copy" \
		--ustack sched_switch --ustack-mode dwarf
	badspec_refused "--ustack-size 511" \
		"--ustack-size: '511' is not a size from 512 to 32768 bytes" \
		--ustack sched_switch --ustack-mode copy --ustack-size 511
	# The kernel's maximum, read from the module: the CLI's must agree.
	check "badspec: sample_hz takes $max, the CLI's maximum" \
		eval 'echo $max >"$RT/sample_hz" && [ "$(<"$RT/sample_hz")" = $max ]'
	echo 0 >"$RT/sample_hz"
	check "badspec: sample_hz refuses $((max + 1))" \
		eval '! (echo $((max + 1)) >"$RT/sample_hz") 2>/dev/null &&
		      [ "$(<"$RT/sample_hz")" = 0 ]'
}
