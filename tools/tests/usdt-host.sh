#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of USDT probes (no kernel needed): tools/tests/rt-usdt, the
# operand parser and the notes' reader (tools/cli/usdt.c), then
# `ringtrace list --usdt` on tools/tests/usdt-workload against what
# binutils' `readelf -n` says of the same notes: the same probes, operands
# and semaphores, line for line; and its errors, one line each.
# Ends with "usdt-host: N passed, M failed".

cd "$(dirname "$0")/../.." || exit 1
. tools/tests/check.sh

readonly WL=tools/tests/usdt-workload
readonly CLI=tools/ringtrace
W=$(mktemp -d /tmp/rt-usdt-host.XXXXXX)
trap 'rm -rf "$W"' EXIT

make -s -C tools ringtrace tests/rt-usdt tests/usdt-workload || exit 1
tools/tests/rt-usdt "$WL" >"$W/rt-usdt.out" 2>&1
check_output "$W/rt-usdt.out" $?

# readelf -n: "Provider: P", "Name: N", "Location: ..., Semaphore: 0x...",
# "Arguments: ..." per note, into list --usdt's lines.
LC_ALL=C readelf -n "$WL" | awk '
	/Provider:/ { p = $2 }
	/Name:/ { n = $2 }
	/Semaphore:/ { s = $NF; sub(/^0x0*/, "", s) }
	/Arguments:/ { a = $0; sub(/^ *Arguments: */, "", a)
		printf "%s:%s\t%s\t%s\n", p, n, a, s == "" ? "no semaphore" : "semaphore 0x" s }
' >"$W/want"
"$CLI" list --usdt "$WL" >"$W/got" 2>"$W/err"
check "list --usdt exits 0" test $? -eq 0
check "readelf -n finds rt:bad, rt:forms, rt:start and rt:tick" \
	test "$(cut -f1 "$W/want" | sort | paste -sd,)" = "rt:bad,rt:forms,rt:start,rt:tick"
check "list --usdt: readelf's probes, operands and semaphores, line for line" \
	cmp -s "$W/want" "$W/got"
cmp -s "$W/want" "$W/got" || diff "$W/want" "$W/got" | sed 's/^/# /'
check "... rt:tick behind its semaphore, rt:forms without" \
	eval 'grep -qP "^rt:tick\t.*\tsemaphore 0x[0-9a-f]+$" "$W/got" &&
	      grep -qP "^rt:forms\t.*\tno semaphore$" "$W/got"'

"$CLI" list --usdt /bin/true >"$W/out" 2>"$W/err"
check "list --usdt /bin/true: fails" test $? -ne 0
check "... in one line: '/bin/true has no USDT probes'" \
	eval 'one_line "$W/err" && grep -qx "ringtrace list: /bin/true has no USDT probes" "$W/err"'
"$CLI" list --usdt "$W/nosuch" >"$W/out" 2>"$W/err"
rc=$?
check "list --usdt on a missing file: fails in one line naming it" \
	eval '[ $rc -ne 0 ] && one_line "$W/err" && grep -q "nosuch: No such file" "$W/err"'
check_summary usdt-host
