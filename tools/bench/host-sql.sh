#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# host-sql.sh - `make bench`'s sql part (run-bench -p sql), on the host:
# `ringtrace sql` reads traces in userspace, no guest needed (issue 31).
#
# Traces: rt-seekgen --mix (SQL_CPUS CPUs, SQL_THREADS threads each making
# system calls, waking one another and switching, SQL_RATE events a
# second a CPU) packed by `ringtrace compress -l 3 -j 2` as host-seek.sh
# does, one per size of SQL_GIB ("0.25 1 2.5" GiB packed; SQL_SECS_PER_GIB
# seconds of events a GiB).  Each is made once and kept in
# $RT_CACHE/sql-bench/ (its name says how it was made; SQL_CLEAN=1 removes
# them after the run), and a small one (SQL_ALT_SECONDS, 10 s) for what a
# user would do instead.  Every command runs under `nice -n 10` and
# /usr/bin/time (CPU = user + system, max RSS); rows:
#
#   window, raw      SELECT count(*) FROM raw WHERE ts >= last - 1 s,
#                    against the same without the WHERE: CPU and wall.
#                    Target <= 2 %.
#   window, spans    on-CPU time per thread from thread_state (state =
#                    'Running', GROUP BY utid) of the spans that end in
#                    the last second, against every span: cold (the
#                    run's first window: it starts from the packed
#                    chunks' scheduler records, no pass) and warm (the
#                    next process, the same way; a trace packed without
#                    records would build the checkpoints, one pass, and
#                    read them from the cache, a fresh one per bench
#                    run).  Target <= 2 %, cold and warm.
#   window, syscall  count(*), sum(dur) of the system calls that end in the
#                    last second (end_ts >= last - 1 s), cold (the run's
#                    first window builds the syscall table's own
#                    checkpoints, one pass, and keeps them in the cache)
#                    and warm (the next process reads them), against
#                    the same with end_ts + 0 (SQLite's filter of every
#                    call: the answer checked equal).  Target <= 2 %, warm.
#   one thread       thread_state and syscall of one thread (utid = 1000,
#                    the first of CPU 0; each --mix thread runs on one
#                    CPU), and the wakeups and R spans it caused (wakeup,
#                    thread_state waker_utid = 1000), pushed down against
#                    utid + 0 = 1000 (SQLite's
#                    filter of the whole table): the zstd frames the rows
#                    needed (RINGTRACE_SQL_FRAMES) and CPU, cold (the run
#                    lists built: one pass) and warm (read from the
#                    cache); the share is warm against whole.  No target
#                    (issue 31 asks that it read less); a pushed answer
#                    other than the unpushed one fails the run.
#   scan rate        events a CPU second of SELECT count(*) FROM raw
#                    against report --stat's (events from its table), on
#                    the largest trace.  Target >= 1.0 x.
#   memory           max RSS of small-result queries (count(*) raw, on-CPU
#                    per thread, system calls by name) per size.  Target
#                    < 256 MiB each, for SQL_CPUS CPUs (a CPU read at once
#                    holds a frame of up to 4 MiB: sql.rst, "Memory").
#   instead          events by name on the small trace: sql GROUP BY,
#                    sql event_count, report | awk, and babeltrace2's text
#                    (on the `ringtrace unpack`ed copy) | awk; babeltrace2
#                    with a Python sink (tools/bench/bt2-count.py, python3-bt2).
#
# A target missed prints NOT MET, as host-seek.sh does; the run still
# ends 0 (the figures are the result).  A query whose answer is wrong
# (a window's count against the full pass's filter) fails the run.
#
# Usage: host-sql.sh OUTDIR   (writes OUTDIR/sql.txt, prints the table)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
RT=$REPO/tools/ringtrace
GEN=$REPO/tools/bench/rt-seekgen
out=${1:?usage: host-sql.sh OUTDIR}
sizes=${SQL_GIB:-0.25 1 2.5}
cpus=${SQL_CPUS:-2}
threads=${SQL_THREADS:-24}
rate=${SQL_RATE:-200000}
secs_per_gib=${SQL_SECS_PER_GIB:-280}
alt_secs=${SQL_ALT_SECONDS:-10}
cache=${RT_CACHE:-/var/cache/ringtrace}/sql-bench
NICE=(nice -n 10)

[[ -x $RT ]] || { echo "host-sql: no tools/ringtrace: make all" >&2; exit 1; }
make -s -C "$REPO/tools/bench" >/dev/null
mkdir -p -- "$out" "$cache"
work=$(mktemp -d "$cache/run.XXXX")
trap 'rm -rf -- "$work"' EXIT
# The span tables' checkpoints: none kept before the run, so that its
# first window is cold.
export RINGTRACE_SQL_CACHE=$work/idx

# The trace of @1 seconds, made once: prints its directory.  Its first and
# last event times (ns) are in DIR.times, beside it (a trace directory
# holds the trace alone).
trace_of() {
	local secs=$1 d
	# v2: packed with scheduler records of version 2 (a trace packed
	# before them would make the span window cold build checkpoints);
	# v3: system call ids of 32 bits, as the module records them.
	d=$cache/mix-c$cpus-t$threads-r$rate-s$secs-v3
	if [[ ! -e $d.times ]]; then
		rm -rf -- "$d" "$d.new"
		mkdir -p -- "$d.new"
		echo "host-sql: making $d ($secs s of events)" >&2
		"$REPO/tools/bench/mix-metadata.py" "$d.new/metadata"
		"${NICE[@]}" "$GEN" --mix "$threads" "$d.new" 101112131415161718191a1b1c1d1e1f \
			"$cpus" "$secs" "$rate" 256 >"$work/times"
		"${NICE[@]}" "$RT" compress -l 3 -j 2 "$d.new" >"$work/compress.log" 2>&1 ||
			{ cat -- "$work/compress.log" >&2; exit 1; }
		mv -- "$d.new" "$d"
		mv -- "$work/times" "$d.times"
	fi
	echo "$d"
}
export REPO

# "cpu_s wall_s maxrss_kB" of one command; its stdout in $work/out.
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	"${NICE[@]}" /usr/bin/time -o "$work/time" -f '%U %S %M' "$@" >"$work/out"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" '{ printf "%.3f %.3f %d\n", $1 + $2, b - a, $3 }' "$work/time"
}
sql1() { timed "$RT" sql --csv "$@"; }
# sql1 saying the frames it decompressed (on stderr, in $work/err) ...
sqlf() { RINGTRACE_SQL_FRAMES=1 timed "$RT" sql --csv "$@" 2>"$work/err"; }
# ... of which its rows needed these (read after sqlf's line: it has ended).
frames() { sed -n 's/^sql: frames decompressed: .*(rows \([0-9]*\),.*/\1/p' "$work/err"; }
value() { sed -n '2s/\r$//p' "$work/out"; }
mib() { echo $(( ($1 + 1023) / 1024 )); }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", 100 * a / b }'; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN {
	ok = op == "le" ? v + 0 <= t + 0 : v + 0 >= t + 0
	print ok ? "met" : "NOT MET" }'; }
# @1 / @2 (events a CPU second), 0 when @2 is 0.
rate() { awk -v n="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.0f", n / c; else print 0 }'; }

running='SELECT utid, sum(dur) FROM thread_state WHERE state = '"'Running'"
table=$work/table
: >"$table"
mem=$work/mem
: >"$mem"
biggest=''
for gib in $sizes; do
	secs=$(awk -v g="$gib" -v s="$secs_per_gib" 'BEGIN { printf "%d", g * s + 0.5 }')
	t=$(trace_of "$secs")
	read -r _ last <"$t.times"
	from=$(( last - 1000000000 ))
	packed=$(du -b -c "$t"/cpu*.zst | tail -1 | cut -f1)
	size=$(awk -v b="$packed" 'BEGIN { printf "%.2f GiB", b / 1073741824 }')

	read -r rf_cpu rf_wall rf_rss < <(sql1 "$t" 'SELECT count(*) FROM raw')
	events=$(value)
	read -r rw_cpu rw_wall rw_rss < <(sql1 "$t" "SELECT count(*) FROM raw WHERE ts >= $from")
	wevents=$(value)
	read -r sf_cpu sf_wall sf_rss < <(sql1 "$t" "$running GROUP BY utid")
	threads_seen=$(( $(wc -l <"$work/out") - 1 ))
	read -r sw_cpu sw_wall sw_rss < <(sql1 "$t" "$running AND end_ts >= $from GROUP BY utid")
	mv -- "$work/out" "$work/cold"
	read -r sk_cpu sk_wall sk_rss < <(sql1 "$t" "$running AND end_ts >= $from GROUP BY utid")
	# The next process gives the rows the first one gave.
	cmp -s -- "$work/cold" "$work/out" ||
		{ echo "host-sql: $t: the window's rows differ in the next process" >&2; exit 1; }
	read -r sc_cpu sc_wall sc_rss < <(sql1 "$t" \
		'SELECT name, count(*), sum(dur), max(dur) FROM syscall GROUP BY name')
	# The system calls ending in the last second: unpushed (every call),
	# then pushed down cold (the syscall checkpoints built) and warm.
	calls='SELECT count(*), sum(dur) FROM syscall WHERE end_ts'
	read -r yf_cpu yf_wall yf_rss < <(sql1 "$t" "$calls + 0 >= $from")
	mv -- "$work/out" "$work/whole"
	read -r yw_cpu yw_wall yw_rss < <(sql1 "$t" "$calls >= $from")
	cmp -s -- "$work/whole" "$work/out" ||
		{ echo "host-sql: $t: syscall's last second: $(value) pushed down, not: $(sed -n 2p "$work/whole")" >&2; exit 1; }
	read -r yk_cpu yk_wall yk_rss < <(sql1 "$t" "$calls >= $from")
	cmp -s -- "$work/whole" "$work/out" ||
		{ echo "host-sql: $t: syscall's last second: $(value) with the checkpoints cached" >&2; exit 1; }
	# One thread, pushed down (utid =) and not (utid + 0 =): the same answer.
	one=()
	for tc in thread_state:utid syscall:utid wakeup:waker_utid thread_state:waker_utid; do
		tbl=${tc%:*} col=${tc#*:}
		sum=dur
		[[ $tbl != wakeup ]] || sum=latency
		q="SELECT count(*), sum($sum) FROM $tbl WHERE $col"
		read -r u_cpu u_wall _ < <(sqlf "$t" "$q + 0 = 1000")
		u_frames=$(frames) u_val=$(value)
		read -r c_cpu c_wall _ < <(sqlf "$t" "$q = 1000")
		c_frames=$(frames)
		[[ $(value) == "$u_val" ]] ||
			{ echo "host-sql: $t: $tbl $col = 1000: $(value) pushed down, $u_val not" >&2; exit 1; }
		read -r p_cpu p_wall _ < <(sqlf "$t" "$q = 1000")
		p_frames=$(frames)
		[[ $(value) == "$u_val" ]] ||
			{ echo "host-sql: $t: $tbl $col = 1000 (cached lists): $(value), $u_val not pushed" >&2; exit 1; }
		one+=("$tbl $col|$u_cpu|$u_frames|$c_cpu|$c_frames|$p_cpu|$p_frames")
	done
	# The window's count is the full pass's, filtered.
	"${NICE[@]}" env RINGTRACE_SEEK=0 "$RT" sql --csv "$t" \
		"SELECT count(*) FROM raw WHERE ts >= $from" >"$work/out"
	[[ $(value) == "$wevents" ]] ||
		{ echo "host-sql: $t: the window has $wevents events seeking, $(value) in a full pass" >&2; exit 1; }

	{
		printf "%s (%d s, %d events, %d threads):\n" "$size" "$secs" "$events" "$threads_seen"
		printf "  %-44s %9s %9s %8s\n" "query" "cpu_s" "wall_s" "rss_MiB"
		printf "  %-44s %9s %9s %8s\n" "raw count(*), whole" "$rf_cpu" "$rf_wall" "$(mib "$rf_rss")"
		printf "  %-44s %9s %9s %8s\n" "raw count(*), last second ($wevents)" "$rw_cpu" "$rw_wall" "$(mib "$rw_rss")"
		printf "  %-44s %9s %9s %8s\n" "thread_state Running per utid, whole" "$sf_cpu" "$sf_wall" "$(mib "$sf_rss")"
		printf "  %-44s %9s %9s %8s\n" "  the same, end_ts in the last second, cold" "$sw_cpu" "$sw_wall" "$(mib "$sw_rss")"
		printf "  %-44s %9s %9s %8s\n" "  the same, warm (the next process)" "$sk_cpu" "$sk_wall" "$(mib "$sk_rss")"
		printf "  %-44s %9s %9s %8s\n" "syscall count, sum, max by name, whole" "$sc_cpu" "$sc_wall" "$(mib "$sc_rss")"
		printf "  %-44s %9s %9s %8s\n" "syscall ending in the last second, unpushed" "$yf_cpu" "$yf_wall" "$(mib "$yf_rss")"
		printf "  %-44s %9s %9s %8s\n" "  the same, end_ts pushed down, cold" "$yw_cpu" "$yw_wall" "$(mib "$yw_rss")"
		printf "  %-44s %9s %9s %8s\n" "  the same, warm (checkpoints cached)" "$yk_cpu" "$yk_wall" "$(mib "$yk_rss")"
		for o in "${one[@]}"; do
			IFS='|' read -r tbl a af b bf c cf <<<"$o"
			printf "  one thread, %-23s + 0: cpu %s s, %s frames; =: cold cpu %s s, %s frames; warm cpu %s s, %s frames: %s %% of the frames, %s %% of the CPU\n" \
				"$tbl" "$a" "$af" "$b" "$bf" "$c" "$cf" "$(pct "$cf" "$af")" "$(pct "$c" "$a")"
		done
		for w in "raw:|$rw_cpu|$rf_cpu|$rw_wall|$rf_wall" "spans, cold:|$sw_cpu|$sf_cpu|$sw_wall|$sf_wall" \
			"spans, warm:|$sk_cpu|$sf_cpu|$sk_wall|$sf_wall" \
			"syscall, cold:|$yw_cpu|$yf_cpu|$yw_wall|$yf_wall" \
			"syscall, warm:|$yk_cpu|$yf_cpu|$yk_wall|$yf_wall"; do
			IFS='|' read -r what a b c e <<<"$w"
			r1=$(pct "$a" "$b"); r2=$(pct "$c" "$e")
			# The target is the largest trace's (issue 31: 2.5 GiB).
			v="target on the largest trace"
			[[ $gib != "${sizes##* }" ]] ||
				v="target <= 2 %: $(verdict "$(awk -v a="$r1" -v b="$r2" 'BEGIN { print (a > b ? a : b) }')" 2 le)"
			# syscall's cold run builds its checkpoints, a whole pass
			# (plan-31 section 4); the span window's starts from the records.
			[[ $what != "syscall, cold:" ]] || v="the checkpoints built: no target"
			printf "  window ratio, %-14s cpu %s %%, wall %s %% (%s)\n" "$what" "$r1" "$r2" "$v"
		done
	} >>"$table"
	most=$(printf '%s\n' "$rf_rss" "$sf_rss" "$sc_rss" | sort -n | tail -1)
	printf "  %-10s %10s %10s %10s   %s\n" "$size" "$(mib "$rf_rss")" "$(mib "$sf_rss")" \
		"$(mib "$sc_rss")" "$(verdict "$(mib "$most")" 255 le)" >>"$mem"
	biggest=$t
	big_events=$events big_cpu=$rf_cpu big_size=$size
done

# Scan rate: report --stat of the largest trace, its events from its table.
read -r rs_cpu rs_wall rs_rss < <(timed "$RT" report --stat "$biggest")
rs_events=$(awk '/^events by name/ { on = 1; next } on && NF == 0 { exit }
	on && $1 != "event" { n += $2 } END { print n + 0 }' "$work/out")
[[ $rs_events == "$big_events" ]] ||
	{ echo "host-sql: report --stat counts $rs_events events, sql $big_events" >&2; exit 1; }

# What a user would do instead, on the small trace: events by name.
alt=$(trace_of "$alt_secs")
[[ -d $alt-ctf ]] || "${NICE[@]}" "$RT" unpack "$alt" "$alt-ctf" >/dev/null
read -r a1_cpu a1_wall _ < <(sql1 "$alt" 'SELECT name, count(*) FROM raw GROUP BY name')
alt_events=$(awk -F, 'NR > 1 { n += $2 } END { print n }' "$work/out")
read -r a2_cpu a2_wall _ < <(sql1 "$alt" 'SELECT name, sum(count) FROM event_count GROUP BY name')
read -r a3_cpu a3_wall _ < <(timed bash -c '"$1" report "$2" | awk "/^\\[/ { n[\$4]++ } END { for (e in n) print e, n[e] }"' \
	_ "$RT" "$alt")
report_awk=$(sed 's/: / /' "$work/out" | awk '{ n += $2 } END { print n }')
[[ $report_awk == "$alt_events" ]] ||
	{ echo "host-sql: report | awk counts $report_awk events, sql $alt_events" >&2; exit 1; }
bt2_row="  babeltrace2 | awk (text sink)         not run: no babeltrace2"
if command -v babeltrace2 >/dev/null; then
	read -r a4_cpu a4_wall _ < <(timed bash -c 'babeltrace2 "$1" | awk "/^\\[/ { n[\$4]++ } END { for (e in n) print e, n[e] }"' \
		_ "$alt-ctf")
	bt2_events=$(awk '{ n += $2 } END { print n }' "$work/out")
	bt2_row=$(printf "  %-38s %8s %8s %12s   (%s events)" "babeltrace2 CTF | awk (text sink)" "$a4_cpu" "$a4_wall" \
		"$(rate "$alt_events" "$a4_cpu")" "$bt2_events")
fi
# The Python bindings are Debian's, for Debian's python3: a python3 first
# in PATH (pyenv) may not have them.
py=
for p in python3 /usr/bin/python3; do
	"$p" -c 'import bt2' 2>/dev/null && { py=$p; break; }
done
if [[ -n $py ]]; then
	read -r a5_cpu a5_wall _ < <(timed "$py" "$REPO/tools/bench/bt2-count.py" "$alt-ctf")
	py_events=$(awk '{ n += $2 } END { print n }' "$work/out")
	[[ $py_events == "$alt_events" ]] ||
		{ echo "host-sql: babeltrace2's Python sink counts $py_events events, sql $alt_events" >&2; exit 1; }
	py_row=$(printf "  %-38s %8s %8s %12s" "babeltrace2 CTF, Python sink (bt2)" "$a5_cpu" "$a5_wall" \
		"$(rate "$alt_events" "$a5_cpu")")
else
	py_row="  babeltrace2 Python sink: not run (python3-bt2 is not installed: tools/install-deps)"
fi

{
	echo
	echo "== sql (host): ringtrace sql over packed traces of $cpus CPUs (rt-seekgen --mix, $threads threads a CPU) =="
	cat -- "$table"
	printf "scan rate, %s: sql count(*) %s events/s a CPU, report --stat %s: %.2f x (target >= 1.0): %s\n" \
		"$big_size" "$(rate "$big_events" "$big_cpu")" "$(rate "$rs_events" "$rs_cpu")" \
		"$(awk -v a="$rs_cpu" -v b="$big_cpu" 'BEGIN { print a / b }')" \
		"$(verdict "$(awk -v a="$rs_cpu" -v b="$big_cpu" 'BEGIN { print a / b }')" 1 ge)"
	echo "max RSS (MiB) of small-result queries (target < 256 each):"
	printf "  %-10s %10s %10s %10s\n" "trace" "count raw" "on-CPU" "syscalls"
	cat -- "$mem"
	echo "instead: events by name, $alt_secs s trace ($alt_events events):"
	printf "  %-38s %8s %8s %12s\n" "how" "cpu_s" "wall_s" "events/cpu_s"
	for row in "sql GROUP BY name:$a1_cpu:$a1_wall" "sql event_count:$a2_cpu:$a2_wall" \
		"report | awk:$a3_cpu:$a3_wall"; do
		IFS=: read -r how c w <<<"$row"
		printf "  %-38s %8s %8s %12s\n" "$how" "$c" "$w" \
			"$(rate "$alt_events" "$c")"
	done
	echo "$bt2_row"
	echo "$py_row"
} | tee "$out/sql.txt"

if [[ -n ${SQL_CLEAN:-} ]]; then
	rm -rf -- "$cache"/mix-*
fi
