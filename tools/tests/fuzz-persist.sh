#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The mutation fuzzer of ringtraced --recover (tools/tests/fuzz_persist.py):
# a valid persistent region image mutated where a reader decides (header,
# slice table, counters, packet headers, records, metadata and ksyms
# framing, length), recovered by the ASan/UBSan build of ringtraced for
# RT_FUZZ_PERSIST_SECONDS (default 30).  Each run must exit 0, 1 or 3
# without a sanitizer report, and a directory it writes must read clean;
# a failing image is kept under $RT_CACHE/fuzz-persist/ with the command
# that reproduces it (RT_FUZZ_PERSIST_SEED=N replays a run's mutations).
# Ends with "fuzz-persist: N passed, M failed".
set -u
cd "$(dirname "$0")/../.." || exit 1
readonly SECONDS_TO_FUZZ=${RT_FUZZ_PERSIST_SECONDS:-30}
readonly KEEP=${RT_CACHE:-/var/cache/ringtrace}/fuzz-persist

if ! make -s -C daemon tests/ringtraced-asan || ! make -s -C tools ringtrace; then
	echo "fuzz-persist: 0 passed, 1 failed (make -C daemon tests/ringtraced-asan)"
	exit 1
fi
exec python3 tools/tests/fuzz_persist.py "$SECONDS_TO_FUZZ" \
	daemon/tests/ringtraced-asan tools/ringtrace "$KEEP"
