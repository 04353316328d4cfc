#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# report --follow on the host, against a writer that imitates ringtraced
# (follow_writer.py): synthetic packets (gentrace.py) appended as stored
# frames in two writes each (a reader sees torn frames), chunks rotated
# every few packets and packed behind by rename while being read.  Every
# event the finished trace holds is printed once, none twice; SIGINT ends
# the view with status 0; the view starts at what comes next.  (Order and
# delay need the trace clock of this boot: cli_guest.sh's test_live_view.)
#
# Ends with "follow: N passed, M failed".

set -u
cd "$(dirname "$0")/../.."
readonly CLI=$PWD/tools/ringtrace
readonly W=$(mktemp -d /tmp/rt-follow.XXXXXX)
trap 'rm -rf "$W"' EXIT

. tools/tests/check.sh

events_only() { grep -E '^\[[0-9.]+\] cpu[0-9]+ ' | grep -v ' -- lost' || true; }

lines_at_least() { (($(events_only <"$1" | wc -l) >= $2)); }

python3 tools/tests/gentrace.py "$W/src" --cpus 3 --events 2000 --seed 7 >/dev/null
python3 tools/tests/follow_writer.py "$W/src" "$W/dst" --rotate 4 &
writer=$!
wait_for 20 test -e "$W/dst/cpu2-000000.zst"
"$CLI" report --follow --hold 100 "$W/dst" >"$W/out" 2>"$W/err" &
fpid=$!
wait_for 20 grep -q following "$W/err"
touch "$W/dst/.go"
wait "$writer"
"$CLI" report "$W/dst" 2>/dev/null | events_only | sort >"$W/want"
want=$(wc -l <"$W/want")
wait_for 20 lines_at_least "$W/out" "$want"
kill -INT "$fpid"
wait "$fpid"
rc=$?
events_only <"$W/out" | sort >"$W/got"
check "follow: SIGINT ends the view with status 0 (got $rc)" test "$rc" -eq 0
check "follow: the trace was rotated and packed while followed" \
	test -e "$W/dst/cpu0-000003.zst" -a "$(head -c5 "$W/dst/cpu0-000000.zst" | od -An -tx1 | tr -d ' ')" != 28b52ffda0
check "follow: every event printed once ($(wc -l <"$W/got") of $want)" \
	eval '[ "$want" -gt 0 ] && cmp -s "$W/want" "$W/got"'
check "follow: no event twice" test -z "$(uniq -d "$W/got")"
# The synthetic clock is not this boot's: items do not wait, and come
# out of order (counted); nothing else is said.
quiet() { ! grep -v -e following -e 'printed out of order' "$W/err"; }
check "follow: stderr says nothing of damage or dropped bytes" quiet

# What was on disk before the view started is not printed.
"$CLI" report --follow "$W/dst" >"$W/out2" 2>"$W/err2" &
fpid=$!
wait_for 20 grep -q following "$W/err2"
kill -INT "$fpid"
wait "$fpid"
rc=$?
check "follow: starts at what comes next (status $rc, $(events_only <"$W/out2" | wc -l) events)" \
	test "$rc" -eq 0 -a "$(events_only <"$W/out2" | wc -l)" -eq 0

check "follow: --hold without --follow is refused" \
	bash -c '"$1" report --hold 5 "$2" 2>/dev/null; test $? -eq 2' _ "$CLI" "$W/dst"
check "follow: --follow --stat is refused" \
	bash -c '"$1" report --follow --stat "$2" 2>/dev/null; test $? -eq 2' _ "$CLI" "$W/dst"
check "follow: a directory without metadata is an error" \
	bash -c '"$1" report --follow "$2" 2>/dev/null; test $? -eq 1' _ "$CLI" "$W/src.expect"

check_summary follow
