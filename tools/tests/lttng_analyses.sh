#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# LTTng's analyses on a trace recorded and exported in the test guest, run
# on the host (tools/run-tests runs it after the boot of
# tools/tests/lttng_guest.sh; each analysis takes 10 to 20 s of Python in
# a TCG guest, well under one here):
#
#   tools/tests/lttng_analyses.sh DIR
#
# DIR is what lttng_guest.sh left in $RT_VM_OUT/lttng-tests: t (the trace),
# lttng (its export -f lttng), tids (the workload's "tid pid comm" lines),
# n (its getppid calls per thread), su and stacks-lttng (a recording with
# --stack, --ustack and --sample, unpacked, and its export).  Debian's
# python3-lttnganalyses, as a
# user runs them (lttng_check.py --analyses, default intersection mode):
#   - agree with ringtrace report --stat of the trace (lttng_check.py
#     --report): system calls per name, hard IRQs, on-CPU time per thread,
#     wakeup latencies and the largest one;
#   - lttng-syscallstats finds each workload thread's N getppid calls,
#     lttng-cputop each workload thread;
#   - lttng-schedtop gives each thread as many wakeup-to-switch latencies
#     as report's wakeups and switches (a thread's first wakeup while it
#     runs nowhere, to its next switch-in), and lttng-schedlog as many
#     rows.
#   - the stacks' export: babeltrace2 reads each event's callstack_kernel
#     and callstack_user as the recording's stacks (the stack_defs each
#     stack_ref names; an older module's kernel_stack and user_stack
#     records), report prints as many frames (lttng_check.py --stacks);
#     the analyses run on it; switches carry both stacks, samples user
#     stacks.
# Ends with "lttng-analyses: N passed, M failed".

set -u

cd "$(dirname "$0")/../.." || exit 1
readonly CLI=$PWD/tools/ringtrace
readonly CHECK=$PWD/tools/tests/lttng_check.py
export LC_ALL=C.UTF-8

. tools/tests/check.sh

# The workload's threads and wakeups: report's numbers against the
# analyses', one "ok"/"not ok" line each.
per_thread() {
	python3 - "$1" "$2" <<'PY'
import collections, json, re, sys

D, W = sys.argv[1], sys.argv[2]
ok = lambda cond, what: print('%s - %s' % ('ok' if cond else 'not ok', what))
N = int(open(D + '/n').read())
a = json.load(open(W + '/analyses.json'))
tids = collections.Counter(int(l.split()[0]) for l in open(D + '/tids'))
for tid, lines in sorted(tids.items()):
    want = N * lines
    got = a['syscalls'].get(str(tid), {}).get('getppid')
    ok(got == want, 'lttng-syscallstats: tid %d made %s getppid calls (want %d)' % (tid, got, want))
    c = a['cputop'].get(str(tid))
    ok(c is not None and c['ratio'] > 0, 'lttng-cputop: tid %d is there (%s)' % (tid, c))

# lttng-schedtop: a thread's first wakeup (while it runs nowhere) to its
# next switch-in.
cur, woken, lat = {}, set(), collections.Counter()
for l in open(W + '/report'):
    m = re.match(r'^\[\S+\] cpu(\d+) \S+ (\w+): (.*)$', l)
    if not m:
        continue
    cpu, name, f = int(m.group(1)), m.group(2), dict(re.findall(r'(\w+)=(-?\d+)', m.group(3)))
    if name in ('sched_wakeup', 'sched_wakeup_new', 'sched_waking'):
        if int(f['tid']) not in cur.values():
            woken.add(int(f['tid']))
    elif name == 'sched_switch':
        nt = int(f['next_tid'])
        cur[cpu] = nt if nt else None
        if nt in woken:
            lat[nt] += 1
            woken.discard(nt)
got = {int(k): len(v) for k, v in a['wakeups'].items()}
mine = {t: lat[t] for t in tids}
ok(got == dict(lat) and sum(mine.values()) > 0,
   'lttng-schedtop: as many wakeup latencies per thread as report\'s wakeups and switches '
   '(%d in all, the workload\'s %s)' % (sum(lat.values()), mine))
ok({int(k): v for k, v in a['schedlog'].items()} == dict(lat) and sum(mine.values()) > 0,
   'lttng-schedlog: as many switches after a wakeup per thread as report\'s '
   '(%d rows in all)' % sum(a['schedlog'].values()))
PY
}

# lttng_guest.sh's recording with stacks (su, unpacked) and its export
# (stacks-lttng): babeltrace2 reads each event's callstack contexts as the
# trace's records and report's frames (lttng_check.py --stacks), the
# analyses run on it; the workload's sleeper switches out with both stacks,
# its spinner is sampled with its user stack.
stacks() {
	local d=$1 w=$2 n
	if [[ ! -d $d/su || ! -d $d/stacks-lttng ]]; then
		check "the guest left the stacks' recording and export in $d" false
		return
	fi
	python3 "$CHECK" "$d/stacks-lttng" --stacks "$d/su" --analyses "$w/stacks.json" \
		>"$w/stacks.check" 2>&1
	check_output "$w/stacks.check" $?
	n=$(sed -n 's/^# stacks: sched_switch .* both=\([0-9]*\)$/\1/p' "$w/stacks.check")
	check "sched_switch events with both stacks in their contexts (${n:-none})" \
		test "${n:-0}" -gt 10
	n=$(sed -n 's/^# stacks: cpu_sample .* user=\([0-9]*\) .*/\1/p' "$w/stacks.check")
	check "cpu_sample events with a user stack (${n:-none})" test "${n:-0}" -gt 0
}

main() {
	local d=${1:?usage: lttng_analyses.sh DIR} w
	if [[ ! -d $d/t || ! -d $d/lttng || ! -s $d/tids || ! -s $d/n ]]; then
		check "the guest left a trace, its export, tids and n in $d" false
		check_summary lttng-analyses
		return
	fi
	w=$(mktemp -d /tmp/rt-lttng-analyses.XXXXXX) || exit 1
	# Its lines are checks; a failure it prints no "not ok" for (the
	# layout, an analysis that did not run) is one more.
	python3 "$CHECK" "$d/lttng" --analyses "$w/analyses.json" --report "$d/t" \
		>"$w/check.out" 2>&1
	check_output "$w/check.out" $?
	setup "report reads the guest's trace" \
		eval '"$CLI" report "$d/t" >"$w/report" 2>/dev/null && test -s "$w/report"'
	per_thread "$d" "$w" >"$w/per-thread" 2>&1
	check_output "$w/per-thread" $?
	stacks "$d" "$w"
	rm -rf "$w"
	check_summary lttng-analyses
}

main "$@"
