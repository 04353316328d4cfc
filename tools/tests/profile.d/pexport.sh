# SPDX-License-Identifier: GPL-2.0
#
# export -f perfetto of a profile (sourced by tools/tests/profile_guest.sh):
# `record --sample 199 --mmap --stack sched_switch --ustack sched_switch
# -F -- spin-workload 1`, its symbol store filled by `ringtrace symbols`,
# exported; tools/tests/perfetto_profile_check.py decodes it with protoc
# and tools/cli/perfetto.proto (Perfetto's published schema is slow to
# parse under TCG; the host tests check that ours is the same for every
# field it has, and read their exports with the published one): every
# PerfSample's callstack
# resolves to named frames and every binary's mapping has a build-id;
# sp-spin's and sp-kern's carry the workload's pid; at least 90% of
# sp-spin's user-mode ones
# end in spin_a;spin_b;spin_leaf of spin-workload with readelf's build-id;
# sp-kern's kernel-mode ones have its user frames then the kernel's; and
# the switch-outs carry user frames then kernel frames through schedule.

pexport_profile() {
	local out=$W/pexport bid t0=$SECONDS
	"$CLI" record --sample 199 --mmap --stack sched_switch --ustack sched_switch \
		-F -o "$out" -- "$REPO/tools/tests/spin-workload" 1 \
		>"$W/pexport.wl" 2>"$W/pexport.rec.err"
	check "record --sample 199 --mmap --stack/--ustack sched_switch -F -- spin-workload exits 0" \
		test $? -eq 0
	sed 's/^/# stderr: /' "$W/pexport.rec.err"
	note "recorded in $((SECONDS - t0)) s"
	# The binaries the stacks ran in go first: the workload's and libc.
	"$CLI" symbols --max 4M "$out" >"$W/pexport.sym" 2>&1
	check "ringtrace symbols fills the profile's store" test $? -eq 0
	sed 's/^/# /' "$W/pexport.sym"
	note "stored in $((SECONDS - t0)) s"
	"$CLI" export -f perfetto -o "$W/pexport.pftrace" "$out" 2>"$W/pexport.err"
	check "export -f perfetto of the profile exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$W/pexport.err"
	note "exported in $((SECONDS - t0)) s"
	bid=$(readelf -n "$REPO/tools/tests/spin-workload" |
	      sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')
	python3 -S "$REPO/tools/tests/perfetto_profile_check.py" \
		--schema "$REPO/tools/cli/perfetto.proto" "$W/pexport.wl" "$bid" \
		"$W/pexport.pftrace" >"$W/pexport.check" 2>&1
	check_output "$W/pexport.check" $?
	note "checked in $((SECONDS - t0)) s"
}

profile_pexport() {
	pexport_profile
}
