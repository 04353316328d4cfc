# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the guest parts of make bench (guest-overhead.sh,
# guest-storm.sh, guest-pipeline.sh): how a part keeps a tracer's trace for
# the host's check (tools/bench/check-traces).

# keep_files DIR SRC...: copy each SRC (a file or a directory) into DIR,
# files above 16 MiB compressed with zstd (the guest's output goes over
# 9p to the host).  The caller writes DIR/expect.
keep_files() {
	local d=$1 f
	shift
	mkdir -p "$d"
	for f; do
		if [[ -d $f ]]; then
			cp -r -- "$f" "$d/"
		elif (($(stat -c %s "$f") > 16 << 20)); then
			zstd -q -1 -T0 -o "$d/$(basename -- "$f").zst" -- "$f"
		else
			cp -- "$f" "$d/"
		fi
	done
}
