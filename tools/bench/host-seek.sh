#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# host-seek.sh - `make bench`'s seek part (run-bench -p seek), on the host:
# reading a trace is userspace only, no guest needed.
#
# Builds a trace of at least SEEK_GIB (default 2) GiB of packed chunks:
# rt-seekgen writes SEEK_CPUS (2) CPUs' stored chunks of marker events over
# SEEK_SECONDS (1200) s, `ringtrace compress` packs them as ringtraced's
# packers do (4 MiB frames, each chunk with its time index).  Then it
# times `ringtrace report --begin --end` of the last second of the trace
# twice: by a full pass (RINGTRACE_SEEK=0: every frame decoded, the window
# filtered) and seeking with the indexes; the two outputs must be equal.
# Ratio = seek / full, of CPU time (user + system) and of wall time.
# Target: < 2 % (issue 23).  The trace is removed at the end.
#
# Usage: host-seek.sh OUTDIR   (writes OUTDIR/seek.txt, prints the table)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
RT=$REPO/tools/ringtrace
out=${1:?usage: host-seek.sh OUTDIR}
gib=${SEEK_GIB:-2}
cpus=${SEEK_CPUS:-2}
secs=${SEEK_SECONDS:-1200}
# Events a second a CPU that make SEEK_GIB of packed data (measured: an
# event of 36 bytes packs to about 16 at level 3; 13 leaves a margin).
rate=${SEEK_RATE:-$(( gib * (1 << 30) / 13 / secs / cpus ))}

[[ -x $RT ]] || { echo "host-seek: no tools/ringtrace: make all" >&2; exit 1; }
make -s -C "$REPO/tools/bench" >/dev/null
mkdir -p -- "$out"
work=$(mktemp -d "${RT_CACHE:-/var/cache/ringtrace}/seek-bench.XXXX")
# SEEK_KEEP=1 keeps the trace (its directory is printed) for a closer look.
if [[ -n ${SEEK_KEEP:-} ]]; then
	echo "host-seek: trace kept in $work/trace" >&2
else
	trap 'rm -rf -- "$work"' EXIT
fi
trace=$work/trace

python3 "$REPO/tools/tests/gentrace.py" "$work/meta" --expect-dir "$work/meta.expect" \
	--events 1 --cpus 1 >/dev/null
mkdir -- "$trace"
cp -- "$work/meta/metadata" "$trace/"
uuid=$(sed -n 's/^\tuuid = "\(.*\)";/\1/p' "$trace/metadata" | head -1 | tr -d -)
read -r first last < <("$REPO/tools/bench/rt-seekgen" "$trace" "$uuid" "$cpus" "$secs" "$rate" 256)
"$RT" compress -l 3 -j 2 "$trace" >"$work/compress.log" 2>&1 ||
	{ cat -- "$work/compress.log" >&2; exit 1; }
packed=$(du -b -c "$trace"/cpu*.zst | tail -1 | cut -f1)
chunks=$(ls "$trace" | grep -c '^cpu')
(( packed >= gib * (1 << 30) )) ||
	{ echo "host-seek: only $packed bytes packed, less than $gib GiB: raise SEEK_RATE" >&2; exit 1; }

sec() { printf '%d.%09d' $(( $1 / 1000000000 )) $(( $1 % 1000000000 )); }
begin=$(sec $(( last - 1000000000 )))
end=$(sec "$last")

# CPU (user + sys) and wall seconds of one report of the window.
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	/usr/bin/time -o "$work/time.$run" -f '%U %S' "$@" >"$work/out.$run"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" '{ printf "%.3f %.3f\n", $1 + $2, b - a }' "$work/time.$run"
}
run=full; read -r full_cpu full_wall < <(RINGTRACE_SEEK=0 timed "$RT" report --begin "$begin" --end "$end" "$trace")
run=seek; read -r seek_cpu seek_wall < <(timed "$RT" report --begin "$begin" --end "$end" "$trace")
cmp -s "$work/out.full" "$work/out.seek" ||
	{ echo "host-seek: the window read seeking differs from the full pass" >&2; exit 1; }
lines=$(grep -c '^\[' "$work/out.seek" || true)

{
	echo
	echo "== seek (host): report --begin/--end of the last second, seeking vs a full pass =="
	printf "trace: %d CPUs, %d s, %d chunks, %.2f GiB packed (4 MiB frames, level 3); window: %s..%s, %d events\n" \
		"$cpus" "$secs" "$chunks" "$(echo "$packed / 1073741824" | bc -l)" "$begin" "$end" "$lines"
	printf "  %-12s %10s %10s\n" "read" "cpu_s" "wall_s"
	printf "  %-12s %10s %10s\n" "full pass" "$full_cpu" "$full_wall"
	printf "  %-12s %10s %10s\n" "seeking" "$seek_cpu" "$seek_wall"
	awk -v a="$seek_cpu" -v b="$full_cpu" -v c="$seek_wall" -v d="$full_wall" 'BEGIN {
		printf "  ratio seek/full: cpu %.3f %%, wall %.3f %% (target < 2 %%): %s\n",
			100 * a / b, 100 * c / d, (c / d < 0.02 && a / b < 0.02) ? "met" : "NOT MET" }'
} | tee "$out/seek.txt"
