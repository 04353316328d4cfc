#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The field-by-field damage fuzzer (tools/tests/damage_fuzz.c, ASan and
# UBSan): real traces damaged one thing at a time -- every field of the
# packet headers, bits of event headers, zstd frame boundaries -- and read
# back by the decoder, which must lose the damaged packet (or frame) and
# nothing else, invent nothing, and report the damage; undamaged, read
# exactly; and resynchronising must cost what it reads.  The traces: the
# one recorded on Debian's 6.12 kernel (tools/tests/real-trace) and two of
# gentrace.py's, one with discarded events, overwritten packets and
# markers that hold the zstd frame magic, one rotated into zstd files of
# 3-packet frames.  Each is read three ways at once (tests/diffread.c: the
# decoder's fast paths against the reference reader and a filtered one).
# Deterministic: the same damages every run (about 35 000, some 40 s of
# CPU).  A failure keeps the damaged trace under $RT_CACHE/damage-fuzz/
# (one directory per failing check, its DAMAGE file says what and why) and
# says how to see it.  Ends with "damage-fuzz: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
readonly KEEP=${RT_CACHE:-/var/cache/ringtrace}/damage-fuzz/$(date +%Y%m%d-%H%M%S)
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-damage-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# As fuzz-decoder.sh: a smaller quarantine, no malloc fill (memory and time).
export ASAN_OPTIONS="max_malloc_fill_size=0:quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

if ! make -s tests/damage_fuzz; then
	echo "damage-fuzz: 0 passed, 1 failed (make -C tools tests/damage_fuzz)"
	exit 1
fi
if ! python3 tests/gentrace.py "$work/lossy" --cpus 1 --events 500 --subbuf 1024 \
		--seed 7 --lose 0.05 --drop-packets 0.15 --frame-magic 0.3 >/dev/null ||
   ! python3 tests/gentrace.py "$work/rotated" --cpus 1 --events 500 --subbuf 1024 \
		--seed 8 --zstd rotate --frame-packets 3 --rotate-frames 3 >/dev/null; then
	echo "damage-fuzz: 0 passed, 1 failed (tests/gentrace.py)"
	exit 1
fi
tests/damage_fuzz -k "$KEEP" tests/real-trace "$work/lossy" "$work/rotated"
status=$?
if [ -d "$KEEP" ]; then
	echo "# damaged traces that failed: $KEEP/N (DAMAGE says what); 'ringtrace report DIR' reads one"
fi
exit $status
