#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# module/elfnote.h, the build-id parser ringtrace.ko runs over mapped
# files, on the host: its unit cases (tests/rt-elfnote.c: damaged ELF
# files made there, and real files whose build-id must be readelf's), then
# RT_FUZZ_ELFNOTE_SECONDS (default 20) of its libFuzzer target
# (tests/fuzz_elfnote.c, ASan + UBSan), seeded with those real files and
# going on from the corpus earlier runs grew ($RT_CACHE/fuzz-elfnote/
# corpus).  A crash, a sanitizer report, a leak or a timeout fails; the
# input is kept under $RT_CACHE/fuzz-elfnote/.  Ends with
# "fuzz-elfnote: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
readonly SECONDS_TO_FUZZ=${RT_FUZZ_ELFNOTE_SECONDS:-20}
readonly KEEP=${RT_CACHE:-/var/cache/ringtrace}/fuzz-elfnote
passed=0
failed=0

if ! make -s tests/rt-elfnote tests/fuzz_elfnote tests/libumap-test.so; then
	echo "fuzz-elfnote: 0 passed, 1 failed (make -C tools tests/rt-elfnote tests/fuzz_elfnote)"
	exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-fuzz-elfnote.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# Real files: 64-bit executables and libraries, and one without a build-id.
set --
mkdir -p "$work/seeds"
for f in tests/libumap-test.so /bin/sh "$(readlink -f /lib64/ld-linux-x86-64.so.2)" \
	/usr/lib/x86_64-linux-gnu/libc.so.6; do
	[ -r "$f" ] || continue
	set -- "$@" "$f=$(readelf -n --wide "$f" 2>/dev/null |
		sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')"
	cp "$f" "$work/seeds/"
done
objcopy --remove-section .note.gnu.build-id tests/libumap-test.so "$work/seeds/no-build-id.so" &&
	set -- "$@" "$work/seeds/no-build-id.so="
if tests/rt-elfnote "$@" >"$work/unit.log" 2>&1; then
	passed=$((passed + 1))
	echo "ok     unit cases: $(grep -c '^ok' "$work/unit.log")"
else
	failed=$((failed + 1))
	grep -v '^ok' "$work/unit.log" | sed 's/^/# /'
fi

mkdir -p "$KEEP/corpus" "$work/crash" || exit 1
if tests/fuzz_elfnote -max_total_time="$SECONDS_TO_FUZZ" -timeout=10 -max_len=65536 \
	-artifact_prefix="$work/crash/" "$KEEP/corpus" "$work/seeds" >"$work/fuzz.log" 2>&1; then
	passed=$((passed + 1))
	echo "ok     fuzz_elfnote: $(grep -o 'Done [0-9]* runs' "$work/fuzz.log" | tr -dc 0-9) inputs in ${SECONDS_TO_FUZZ} s"
else
	failed=$((failed + 1))
	dir=$KEEP/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$dir" && cp "$work/fuzz.log" "$work"/crash/* "$dir/" 2>/dev/null
	grep -E 'ERROR|SUMMARY|Test unit written' "$work/fuzz.log" | head -n 20 | sed 's/^/# /'
	echo "# fuzz_elfnote failed: log and input in $dir; reproduce: tools/tests/fuzz_elfnote FILE"
fi
echo "fuzz-elfnote: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
