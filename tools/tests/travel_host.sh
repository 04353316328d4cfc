#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Symbols travel: the host half of tools/tests/profile.d/travel.sh, run by
# tools/run-tests right after the single-threaded boot that recorded it:
#
#   tools/tests/travel_host.sh DIR
#
# DIR is what the guest left in $RT_VM_OUT/travel: rec (the trace
# directory, its symbol store inside), guest.folded (report --folded of
# it in the guest, the traced binaries deleted), paths (where those
# binaries were).  Here, where they never existed:
#   - report --folded of rec prints guest.folded byte for byte, with the
#     workload's frames named (main;c;d, a;b;spin, the 50 ms process's
#     main;c;d): every name came from the store
#   - babeltrace2 reads the unpacked trace with its store: as many events
#     as without it
# Ends with "travel: N passed, M failed".

set -u

cd "$(dirname "$0")/../.." || exit 1
readonly CLI=$PWD/tools/ringtrace
readonly DIR=${1:?usage: travel_host.sh DIR}
# Names from the trace alone: no debuginfod server is asked.
unset DEBUGINFOD_URLS

. tools/tests/check.sh

W=$(mktemp -d /tmp/rt-travel.XXXXXX)
trap 'rm -rf "$W"' EXIT

main() {
	local p with without
	if ! setup "travel: the guest's trace and folded output are here ($DIR)" \
		test -d "$DIR/rec" -a -f "$DIR/guest.folded" -a -f "$DIR/paths"; then
		check_summary travel
		return
	fi
	for p in $(cat "$DIR/paths"); do
		check "travel: $p does not exist here" test ! -e "$p"
	done
	"$CLI" report --folded "$DIR/rec" >"$W/host.folded" 2>"$W/host.err"
	check "travel: report --folded exits 0 on the host" test $? -eq 0
	sed 's/^/# stderr: /' "$W/host.err" | head -n 20
	check "travel: the host's report --folded is the guest's, byte for byte" \
		cmp -s "$DIR/guest.folded" "$W/host.folded"
	check "travel: the sleeper is named: travel-wl;...;main;c;d" \
		grep -Eq '^travel-wl;(.*;)?main;c;d( |;)' "$W/host.folded"
	check "travel: the spinner is named: travel-wl;...;a;b;spin" \
		grep -Eq '^travel-wl;(.*;)?a;b;spin( |;)' "$W/host.folded"
	check "travel: the 50 ms process is named: travel-short;...;main;c;d" \
		grep -Eq '^travel-short;(.*;)?main;c;d( |;)' "$W/host.folded"

	# babeltrace2 over the unpacked trace, with and without the store.
	"$CLI" unpack "$DIR/rec" "$W/ctf" >/dev/null 2>"$W/unpack.err"
	check "travel: unpack copies the store" \
		test -d "$W/ctf/.ringtrace-buildid"
	babeltrace2 "$W/ctf" >"$W/with.bt" 2>"$W/with.err"
	check "travel: babeltrace2 reads the trace with its store" test $? -eq 0
	rm -rf "$W/ctf/.ringtrace-buildid"
	babeltrace2 "$W/ctf" >"$W/without.bt" 2>/dev/null
	with=$(wc -l <"$W/with.bt")
	without=$(wc -l <"$W/without.bt")
	check "travel: babeltrace2 reads as many events with the store as without ($with, $without)" \
		test "$with" -gt 0 -a "$with" -eq "$without"
	check_summary travel
}

main
