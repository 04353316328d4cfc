#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of USDT probes (no kernel needed): tools/tests/rt-usdt, the
# operand parser and the notes' reader (tools/cli/usdt.c), then
# `ringtrace list --usdt` on tools/tests/usdt-workload against what
# binutils' `readelf -n` says of the same notes: the same probes, operands
# and semaphores, line for line, each probe's sites counted (rt:multi's
# three with their own operands); and its errors, one line each.
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
# "Arguments: ..." per note, into list --usdt's lines: a probe's sites
# counted ("site K of N").
LC_ALL=C readelf -n "$WL" | awk '
	/Provider:/ { p = $2 }
	/Name:/ { n = $2 }
	/Semaphore:/ { s = $NF; sub(/^0x0*/, "", s) }
	/Arguments:/ { a = $0; sub(/^ *Arguments: */, "", a)
		key[++lines] = p ":" n
		line[lines] = sprintf("%s:%s\t%s\t%s", p, n, a,
				      s == "" ? "no semaphore" : "semaphore 0x" s)
		sites[p ":" n]++ }
	END { for (i = 1; i <= lines; i++)
		printf "%s\tsite %d of %d\n", line[i], ++shown[key[i]], sites[key[i]] }
' >"$W/want"
"$CLI" list --usdt "$WL" >"$W/got" 2>"$W/err"
check "list --usdt exits 0" test $? -eq 0
check "readelf -n finds rt:bad, rt:forms, rt:full, rt:many, rt:mixed, rt:multi, rt:start and rt:tick" \
	test "$(cut -f1 "$W/want" | sort -u | paste -sd,)" = \
	"rt:bad,rt:forms,rt:full,rt:many,rt:mixed,rt:multi,rt:start,rt:tick"
check "list --usdt: readelf's probes, operands and semaphores, line for line" \
	cmp -s "$W/want" "$W/got"
cmp -s "$W/want" "$W/got" || diff "$W/want" "$W/got" | sed 's/^/# /'
check "... rt:tick behind its semaphore, rt:forms without, one site each" \
	eval 'grep -qP "^rt:tick\t.*\tsemaphore 0x[0-9a-f]+\tsite 1 of 1$" "$W/got" &&
	      grep -qP "^rt:forms\t.*\tno semaphore\tsite 1 of 1$" "$W/got"'
check "... rt:multi's 3 sites, each its operands, one semaphore: site 1 of 3 .. 3 of 3" \
	test "$(grep -P '^rt:multi\t' "$W/got" | cut -f2,4 | sed -E 's/\t/|/')" = \
	"$(printf '%s\n' '-4@$1 -4@%eax|site 1 of 3' '-4@$2 -8@-8(%rsp)|site 2 of 3' \
		'-4@$3 -2@rt_multi_global(%rip)|site 3 of 3')"
check "... rt:full's 32 sites, rt:many's 33" \
	eval 'grep -qP "^rt:full\t.*\tsite 32 of 32$" "$W/got" &&
	      grep -qP "^rt:many\t.*\tsite 33 of 33$" "$W/got"'

"$CLI" list --usdt /bin/true >"$W/out" 2>"$W/err"
check "list --usdt /bin/true: fails" test $? -ne 0
check "... in one line: '/bin/true has no USDT probes'" \
	eval 'one_line "$W/err" && grep -qx "ringtrace list: /bin/true has no USDT probes" "$W/err"'
"$CLI" list --usdt "$W/nosuch" >"$W/out" 2>"$W/err"
rc=$?
check "list --usdt on a missing file: fails in one line naming it" \
	eval '[ $rc -ne 0 ] && one_line "$W/err" && grep -q "nosuch: No such file" "$W/err"'
check_summary usdt-host
