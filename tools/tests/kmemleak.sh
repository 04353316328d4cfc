#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmemleak.sh - ask kmemleak whether anything ringtrace allocated leaked.
# Runs in a guest booted on tools/vm/build-debug-kernel's kernel, after the
# suites, with every ringtrace module unloaded:
#
#   tools/tests/kmemleak.sh [-q]
#
# Prints every suspected leak, those of ringtrace first; exits 1 if one of
# them is ringtrace's, or if kmemleak cannot tell (disabled or absent).
# Ends with "kmemleak: N passed, M failed" (one check) for tools/run-tests
# to count, unless -q: then the caller counts the exit status
# (selftests/faultinject_guest.sh), and a kernel without kmemleak exits 4
# (kselftest's SKIP): not 0, since nothing was checked.
#
# kmemleak reports an object that no scanned memory points to, that is at
# least 5 s old, and whose contents did not change since the previous scan
# (a changing object is in use): so wait 5 s, scan once to record the
# contents, scan again to report.
#
# A leak is ringtrace's when its allocation backtrace has a frame in a
# ringtrace module ("[ringtrace]", "[ringtrace_selftest]", ...), or a frame
# kallsyms cannot name: the debug kernel has every driver built in, so an
# unnamed address is code of a module that was loaded and is gone, and the
# only modules the suites load are ringtrace's.  Or when its first bytes
# (the hex dump) spell "ringtrace": the backtrace keeps 16 frames, and a
# deep allocation made for the module (a device name, a sysfs node) may
# have the module's frame beyond them.  Every other report is printed for a
# human to read and does not fail the check: the kernel's own suspects
# (boot-time allocations that only a physical address refers to) are not
# ringtrace's to fix.

set -u

readonly KMEMLEAK=/sys/kernel/debug/kmemleak
quiet=
while getopts ':q' opt; do
	case $opt in
	q) quiet=1 ;;
	*) echo "usage: $0 [-q]" >&2; exit 2 ;;
	esac
done

# summary STATUS: the suite line unless -q; returns STATUS.
summary() {
	local ok=$1
	[[ -n $quiet ]] ||
		echo "kmemleak: $((ok == 0 ? 1 : 0)) passed, $((ok == 0 ? 0 : 1)) failed"
	return "$ok"
}

grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug
if [[ ! -e $KMEMLEAK ]]; then
	if [[ -z $quiet ]]; then
		echo "not ok - kmemleak: $KMEMLEAK missing (no CONFIG_DEBUG_KMEMLEAK)"
		summary 1
		exit
	fi
	echo "# kmemleak: no $KMEMLEAK (no CONFIG_DEBUG_KMEMLEAK): cannot tell"
	exit 4
fi
for mod in ringtrace_bench ringtrace_selftest ringtrace; do
	if grep -q "^$mod " /proc/modules; then
		echo "# $mod is still loaded: its leaks at unload cannot show"
	fi
done

sleep 5
start=$(date +%s)
for pass in 1 2; do
	if ! echo scan >"$KMEMLEAK"; then
		echo "not ok - kmemleak: scan $pass refused: kmemleak is disabled"
		dmesg | grep -i kmemleak | tail -n 5 | sed 's/^/# /'
		summary 1
		exit
	fi
done
report=$(mktemp)
cat "$KMEMLEAK" >"$report"
echo "# kmemleak: two scans in $(($(date +%s) - start))s"

# One line per report: its index, "ours" or "other".
classify() {
	awk '
	function flush() {
		if (n) print n, (ours ? "ours" : "other")
	}
	/^unreferenced object / { flush(); n++; ours = 0; next }
	/^ +\[<[0-9a-f]+>\] / {
		if ($0 ~ /\[ringtrace[a-z_]*\]$/ || $0 ~ /\] 0x[0-9a-f]+$/)
			ours = 1
		next
	}
	/^    [0-9a-f][0-9a-f] / { if ($0 ~ /ringtrace/) ours = 1 }
	END { flush() }' "$1"
}

# Print report number $2 of file $1, each line prefixed with "# ".
print_report() {
	awk -v want="$2" '
	/^unreferenced object / { n++ }
	n == want { print "# " $0 }' "$1"
}

ours=0
others=0
while read -r n kind; do
	if [[ $kind == ours ]]; then
		ours=$((ours + 1))
		echo "# ringtrace's leak:"
		print_report "$report" "$n"
	else
		others=$((others + 1))
	fi
done < <(classify "$report")
if ((others > 0)); then
	echo "# $others other suspected leak(s), not ringtrace's:"
	while read -r n kind; do
		[[ $kind == other ]] && print_report "$report" "$n"
	done < <(classify "$report") | head -n 200
fi
rm -f -- "$report"
if ((ours > 0)); then
	echo "not ok - kmemleak: $ours leak(s) of ringtrace"
	summary 1
	exit
fi
echo "ok - kmemleak: no leak of ringtrace ($others other suspect(s))"
summary 0
