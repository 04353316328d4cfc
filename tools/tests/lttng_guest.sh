#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# export -f lttng on a recorded trace, in the test guest (tools/guest-tests),
# as root, starting with ringtrace.ko not loaded:
#
#   record -e all of a workload with known threads (tools/tests/cli-workload:
#   a fork, an exec, named threads, N getppid calls each) and a marker;
#   export -f lttng; then
#     - the layout, byte by byte (tools/tests/lttng_check.py);
#     - babeltrace2 reads it: its events per name are report --stat's,
#       under LTTng's names; the marker is lttng_logger, the state dump
#       lttng_statedump_process_state;
#   a damaged copy: what is intact is exported (babeltrace2 reads as many
#   events as report does), the damage is said, exit 3; --strict leaves
#   nothing;
#   stacks: record --stack sched_switch --ustack sched_switch --sample of
#   tools/tests/ustack-workload (fp-built, known call chains), export -f
#   lttng exits 0; lttng_analyses.sh checks that export on the host.
#
# Ends with "lttng: N passed, M failed".  LTTng's analyses run on the host,
# on the traces and exports this leaves in $RT_VM_OUT/lttng-tests:
# tools/tests/lttng_analyses.sh (each analysis takes 10 to 20 s of Python
# in a TCG guest, well under one on the host; so do babeltrace2's reads of
# the stacks), which tools/run-tests runs after this boot.

set -u

cd "$(dirname "$0")/../.." || exit 1
readonly REPO=$PWD
export BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly RT=/sys/kernel/debug/ringtrace
readonly CLI=$REPO/tools/ringtrace
readonly WL=$REPO/tools/tests/cli-workload
readonly CHECK=$REPO/tools/tests/lttng_check.py
readonly UWL=$REPO/tools/tests/ustack-workload
W=$(mktemp -d /tmp/rt-lttng.XXXXXX) || exit 1
readonly W
# getppid calls per thread of the workload
readonly N=200
export RINGTRACED=$REPO/daemon/ringtraced
export LC_ALL=C.UTF-8

. tools/tests/check.sh

note() { echo "# $*"; }

# The workload, and a read through 9p for interrupts.
workload() {
	echo "rtw marker" >"$RT/marker"
	cat /usr/bin/bash >/dev/null
	"$WL" $N "$1" >/dev/null
}

test_record_export() {
	local rc
	rmmod ringtrace 2>/dev/null
	"$CLI" record -e all -o "$W/t" -- \
		bash -c "$(declare -f workload); RT=$RT WL=$WL N=$N workload $W/tids" \
		>/dev/null 2>"$W/record.err"
	check "record -e all of the workload exits 0" test $? -eq 0
	check "the workload wrote its 5 tid lines" test "$(wc -l <"$W/tids" 2>/dev/null)" = 5
	rc=0
	"$CLI" export -f lttng -o "$W/lttng" "$W/t" 2>"$W/export.err" || rc=$?
	check "export -f lttng exits 0 (got $rc; $(head -c 300 "$W/export.err"))" test $rc -eq 0
	check "OUTDIR/kernel/metadata and a channel0_N per CPU" \
		test -s "$W/lttng/kernel/metadata" -a -s "$W/lttng/kernel/channel0_0"
	python3 "$CHECK" "$W/lttng" --json "$W/layout.json" >"$W/check.out" 2>&1
	check "the layout is LTTng 2.13's, byte by byte" test $? -eq 0
	sed 's/^/# /' "$W/check.out" | head -20
	"$CLI" report "$W/t" >"$W/report" 2>/dev/null
	"$CLI" report --stat "$W/t" >"$W/stat" 2>/dev/null
	babeltrace2 "$W/lttng" >"$W/bt2" 2>"$W/bt2.err"
	check "babeltrace2 reads the export" test $? -eq 0
}

# The checks that take numbers from report and compare: one line each,
# "ok - ..." or "not ok - ...", for check_lines to count.
compare() {
	python3 - "$W" <<'EOF'
import collections, re, sys

W = sys.argv[1]
ok = lambda cond, what: print('%s - %s' % ('ok' if cond else 'not ok', what))

# babeltrace2's events per name, in report's names, against --stat.
lttng = collections.Counter()
for l in open(W + '/bt2'):
    m = re.match(r'^\[[^]]*\] \([^)]*\) \S+ (\w+): ', l)
    if m:
        lttng[m.group(1)] += 1
renamed = collections.Counter()
for name, n in lttng.items():
    if name.startswith('syscall_entry_'):
        name = 'syscall_entry'
    elif name.startswith('syscall_exit_'):
        name = 'syscall_exit'
    name = {'lttng_logger': 'ringtrace_marker',
            'lttng_statedump_process_state': 'ringtrace_statedump_task'}.get(name, name)
    renamed[name] += n
stat, on = {}, False
for l in open(W + '/stat'):
    if l.startswith('events by name'):
        on = True
    elif on and not l.strip():
        break
    elif on and l.split()[0] != 'event':
        stat[l.split()[0]] = int(l.split()[1])
# The dump's CPU events are folded into the task events' status.
stat.pop('ringtrace_statedump_cpu', None)
dump = (renamed.pop('lttng_statedump_start', 0), renamed.pop('lttng_statedump_end', 0))
ok(stat and dict(renamed) == stat, 'babeltrace2 reads report --stat\'s events per name (%d events, '
   '%d names)%s' % (sum(stat.values()), len(stat), '' if dict(renamed) == stat else
                    ': differ %s' % sorted(set(renamed.items()) ^ set(stat.items()))))
ok(dump[0] >= 1 and dump[0] == dump[1] and stat.get('ringtrace_statedump_task', 0) > 10,
   'the state dump: %d tasks between %d lttng_statedump_start and _end'
   % (stat.get('ringtrace_statedump_task', 0), dump[0]))
ok(any('lttng_logger:' in l and 'msg = "rtw marker\\n"' in l for l in open(W + '/bt2')),
   'the marker is lttng_logger with its text')
for l in open(W + '/bt2'):
    if 'lttng_statedump_process_state' in l and 'status = 2' in l:
        break
else:
    l = None
ok(l is not None, 'a task the dump found running has status 2 (waiting for a CPU, as LTTng says)')
EOF
}

test_damaged() {
	local c=$W/damaged n got
	setup "unpack the trace" eval '"$CLI" unpack "$W/t" "$c" >/dev/null 2>&1'
	# A packet in the middle of CPU 0's stream: its header overwritten.
	python3 - "$c/cpu0" <<'EOF'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, 'rb').read())
offs, o = [], 0
while o + 88 <= len(d):
    offs.append(o)
    o += struct.unpack_from('<Q', d, o + 48)[0] // 8
mid = offs[len(offs) // 2]
d[mid:mid + 64] = b'\x55' * 64
open(p, 'wb').write(d)
EOF
	"$CLI" export -f lttng -o "$W/damaged-lttng" "$c" 2>"$W/damaged.err"
	check "export of a damaged trace exits 3 (got $?)" test $? -eq 3
	check "... and says where the damage is" grep -q "damaged: $c/cpu0: offset " "$W/damaged.err"
	check "... what is intact has LTTng's layout" python3 "$CHECK" "$W/damaged-lttng"
	# report's events but the dump's CPU events; babeltrace2's but the
	# dump's start and end.
	n=$("$CLI" report "$c" 2>/dev/null | grep -E '^\[[0-9.]+\] cpu[0-9]+ ' |
		grep -cvE '^\[[0-9.]+\] cpu[0-9]+ -- lost| ringtrace_statedump_cpu: ')
	got=$(babeltrace2 "$W/damaged-lttng" 2>/dev/null |
		grep -cvE ' lttng_statedump_(start|end): ')
	check "... babeltrace2 reads what report reads ($got events, report $n)" \
		test "$got" -eq "$n" -a "$n" -gt 0
	"$CLI" export --strict -f lttng -o "$W/strict" "$c" 2>/dev/null
	check "--strict: exit 1 and nothing written" test $? -eq 1 -a ! -e "$W/strict"
	check "no temporary directory left" test -z "$(ls -d "$W"/*.lttng-* 2>/dev/null)"
}

test_stacks() {
	local rc start=$SECONDS
	"$CLI" record --stack sched_switch --ustack sched_switch --sample 199 -F \
		-o "$W/s" -- "$UWL" 100 >"$W/stacks.wl" 2>"$W/stacks.rec.err"
	check "record --stack --ustack --sample of ustack-workload exits 0 ($(tail -c 300 "$W/stacks.rec.err"))" \
		test $? -eq 0
	rc=0
	"$CLI" export -f lttng -o "$W/stacks-lttng" "$W/s" 2>"$W/stacks.export.err" || rc=$?
	check "export -f lttng of the stacks exits 0 (got $rc; $(head -c 300 "$W/stacks.export.err"))" \
		test $rc -eq 0
	# For the host, which reads it with babeltrace2: unpacked.
	setup "unpack the recording" eval '"$CLI" unpack "$W/s" "$W/su" >/dev/null 2>&1'
	note "stacks: $((SECONDS - start)) s"
}

main() {
	note "kernel $(uname -r), $(nproc) CPUs, work in $W"
	test_record_export
	compare >"$W/compare.out" 2>&1
	check_output "$W/compare.out" $?
	test_damaged
	test_stacks
	rmmod ringtrace 2>/dev/null
	# For the host: the trace, its export, the workload's tids and N
	# (tools/tests/lttng_analyses.sh), and the files of this run.
	if [[ -n ${RT_VM_OUT:-} ]]; then
		mkdir -p "$RT_VM_OUT/lttng-tests"
		echo "$N" >"$W/n"
		find "$W" -maxdepth 1 -type f -exec cp {} "$RT_VM_OUT/lttng-tests/" \;
		cp -r "$W/t" "$W/lttng" "$RT_VM_OUT/lttng-tests/"
		cp -r "$W/su" "$W/stacks-lttng" "$RT_VM_OUT/lttng-tests/" 2>/dev/null
	fi
	check_summary lttng
}

main
