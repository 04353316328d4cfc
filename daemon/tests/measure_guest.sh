#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Real trace data for choosing ringtraced's compression level, recorded in
# the test VM (not a test; the numbers come from rt-zbench on the host):
#
#   tools/vm/vmtest -k KVER -- env BUILD=DIR daemon/tests/measure_guest.sh
#   daemon/tests/rt-zbench 1,3,6,9 OUTDIR/KVER/measure/cpu[0-9]*
#
# 1. ftrace records real kernel activity of a small workload (sched_switch,
#    sched_wakeup, irq and softirq entry/exit, raw_syscalls sys_enter/exit).
# 2. ftrace2rt.py turns each event into the binary payload a ringtrace probe
#    records; rt-markers -F writes them back on their CPU as ringtrace
#    events while ringtraced records them.
# 3. The unpacked streams (whole CTF packets) go to $RT_VM_OUT/measure/,
#    with the daemon's summary and its CPU time.

set -euo pipefail

REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${BUILD:-$REPO/build}
KO=$BUILD/${RT_KVER:?run me in the vmtest guest}
OUT=${RT_VM_OUT:?run me in the vmtest guest}/measure
T=/sys/kernel/tracing
RT=/sys/kernel/debug/ringtrace
SECONDS_OF_LOAD=${LOAD_SECONDS:-8}
W=/tmp/measure

mkdir -p "$OUT" "$W"
say() { echo "measure: $*"; }

# --- 1. real events -------------------------------------------------
echo 0 >"$T/tracing_on"
echo >"$T/trace"
echo 32768 >"$T/buffer_size_kb"
for e in sched/sched_switch sched/sched_wakeup irq/irq_handler_entry \
	irq/irq_handler_exit irq/softirq_entry irq/softirq_exit \
	raw_syscalls/sys_enter raw_syscalls/sys_exit; do
	echo 1 >"$T/events/$e/enable"
done
echo 1 >"$T/tracing_on"
load() {
	while :; do
		ls -lR /usr/lib/python3* >/dev/null 2>&1
		find /usr/share/doc -maxdepth 2 -type f -name 'copyright' | head -200 |
			xargs cat | gzip -1 >/dev/null
		for i in 1 2 3 4 5 6 7 8; do date >/dev/null; sleep 0.01; done
	done
}
timeout "$SECONDS_OF_LOAD" bash -c "$(declare -f load); load" &
timeout "$SECONDS_OF_LOAD" bash -c "$(declare -f load); load" &
wait
echo 0 >"$T/tracing_on"
cat "$T/trace" >"$W/ftrace.txt"
grep -h overrun "$T"/per_cpu/cpu*/stats | tr '\n' ' ' | sed 's/^/measure: ftrace /'
echo
echo 0 >"$T/events/enable"
say "ftrace text: $(wc -l <"$W/ftrace.txt") lines"
python3 "$REPO/daemon/tests/ftrace2rt.py" "$W/ftrace.txt" "$W/records.bin" | sed 's/^/measure: events /'
say "records: $(stat -c %s "$W/records.bin") bytes"

# --- 2. through ringtrace and ringtraced ----------------------------
insmod "$KO/ringtrace.ko"
"$REPO/daemon/ringtraced" -o "$W/trace" >"$OUT/daemon.out" 2>"$OUT/daemon.err" &
dpid=$!
for _ in $(seq 300); do grep -q recording "$OUT/daemon.err" && break; sleep 0.1; done
pids=()
for c in $(ls "$RT/cpu" | sort -n); do
	"$REPO/daemon/tests/rt-markers" -F "$W/records.bin" "$c" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
read -r -a st <"/proc/$dpid/stat"
kill -TERM "$dpid"
wait "$dpid"
# utime + stime (clock ticks) up to the stop; the stop drains a little more.
say "daemon CPU time while recording: $(((st[13] + st[14]) * 1000 / $(getconf CLK_TCK))) ms"
cat "$RT/stats" >"$OUT/stats.txt"
cat "$OUT/daemon.out"

# --- 3. plain packets for rt-zbench ---------------------------------
if [[ -x $REPO/tools/ringtrace ]]; then
	"$REPO/tools/ringtrace" unpack "$W/trace" "$W/ctf" >/dev/null
else
	mkdir -p "$W/ctf"
	cp "$W/trace/metadata" "$W/ctf/"
	for c in $(ls "$RT/cpu" | sort -n); do
		cat "$W"/trace/cpu"$c"-*.zst | zstd -qdc >"$W/ctf/cpu$c"
	done
fi
cp "$W"/ctf/* "$OUT/"
du -b "$W"/trace/* | sed 's/^/measure: recorded /'
say "babeltrace2 events: $(babeltrace2 "$W/ctf" | wc -l)"
rmmod ringtrace
