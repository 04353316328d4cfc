#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The readers' coverage-guided fuzzer (tools/tests/fuzz_decoder.c: libFuzzer,
# ASan, UBSan, over what report, export and check do with a trace): every
# regression input (tools/tests/fuzz/regressions, inputs that failed once)
# and seed (tools/tests/fuzz/seeds, cut from real traces) once, then
# RT_FUZZ_DECODER_SECONDS (default 90, loading the corpus included) of
# fuzzing from them and from the corpus earlier runs grew
# ($RT_CACHE/fuzz-decoder/corpus: each run goes on where the last one
# stopped).  Any sanitizer report, leak, timeout, exit or unexpected status
# fails; the input is kept under $RT_CACHE/fuzz-decoder/ and the message
# says how to make it a regression input.  Ends with
# "fuzz-decoder: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
readonly SECONDS_TO_FUZZ=${RT_FUZZ_DECODER_SECONDS:-90}
readonly KEEP=${RT_CACHE:-/var/cache/ringtrace}/fuzz-decoder
readonly FUZZ=tests/fuzz_decoder
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-fuzz-decoder.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# A smaller quarantine and no malloc fill: about half the CPU time an
# input takes (8 against 15 ms), use-after-free still caught within 16 MB
# of frees.
export ASAN_OPTIONS="max_malloc_fill_size=0:quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
passed=0
failed=0

if ! make -s fuzz; then
	echo "fuzz-decoder: 0 passed, 1 failed (make -C tools fuzz: clang and libclang-rt-14-dev, tools/install-deps)"
	exit 1
fi

# keep LOG WHAT: a failure; its inputs and log kept, the way to reproduce said.
keep() {
	dir=$KEEP/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$dir" && cp "$1" "$dir/" && cp "$work"/crash/* "$dir/" 2>/dev/null
	grep -E 'ERROR|SUMMARY|fuzz_decoder:|Test unit written|#[0-9]+ +DONE' "$1" | head -n 20 | sed 's/^/# /'
	echo "# $2: log and inputs in $dir"
	echo "# reproduce: tools/tests/fuzz_decoder FILE; fuzz_corpus.py unpack FILE DIR gives the trace"
	echo "# once fixed: copy FILE into tools/tests/fuzz/regressions/ under a name that says what it broke"
	failed=$((failed + 1))
}

mkdir -p "$KEEP/corpus" "$work/crash" "$work/tmp" || exit 1
if TMPDIR=$work/tmp "$FUZZ" -runs=0 -close_fd_mask=3 -artifact_prefix="$work/crash/" \
	tests/fuzz/regressions tests/fuzz/seeds >"$work/replay.log" 2>&1; then
	echo "ok     regressions and seeds: $(find tests/fuzz/regressions tests/fuzz/seeds -type f | wc -l) inputs"
	passed=$((passed + 1))
else
	keep "$work/replay.log" "a regression input or seed fails"
fi

# The corpus keeps what adds coverage; past 1000 inputs, only those that
# still add some are kept (its replay takes part of the fuzzing time).
if [ "$(find "$KEEP/corpus" -type f | wc -l)" -gt 1000 ]; then
	mkdir "$work/merged" &&
	TMPDIR=$work/tmp "$FUZZ" -merge=1 -close_fd_mask=3 "$work/merged" \
		"$KEEP/corpus" >"$work/merge.log" 2>&1 &&
	rm -rf "$KEEP/corpus" && mv "$work/merged" "$KEEP/corpus"
fi

# Value profiles: the checks against magics, the uuid and counts give way.
if TMPDIR=$work/tmp "$FUZZ" -max_total_time="$SECONDS_TO_FUZZ" -timeout=30 \
	-use_value_profile=1 -dict=tests/fuzz/decoder.dict -close_fd_mask=3 \
	-print_final_stats=1 -artifact_prefix="$work/crash/" \
	"$KEEP/corpus" tests/fuzz/seeds tests/fuzz/regressions >"$work/fuzz.log" 2>&1; then
	echo "ok     ${SECONDS_TO_FUZZ}s of fuzzing: $(sed -nE 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log") inputs, coverage $(grep -oE 'cov: [0-9]+' "$work/fuzz.log" | tail -n 1)"
	passed=$((passed + 1))
else
	keep "$work/fuzz.log" "the fuzzer found a failing input"
fi
echo "fuzz-decoder: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
