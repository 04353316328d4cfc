# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Part "ustack_ftrace" of tools/tests/profile_guest.sh: the kernel's own
# ftrace as a second witness of the stacks module/stack.c and
# module/ustack.c take.  An ftrace instance records sched_switch with
# options/stacktrace and options/userstacktrace (the kernel's
# arch_stack_walk_user(): frame pointers from the task's user regs, as
# ringtrace walks them) while `record --stack sched_switch --ustack
# sched_switch -F` runs the frame-pointer workload, in the same boot.
# Checks, for the sleeper (main -> c -> d, 100 sleeps):
#   - both saw at least 90 of its switch-outs with user frames in the
#     workload's code, and the i-th has the same such frames in both (named
#     by the workload's own "func NAME START END" lines): same functions,
#     same offsets, same order
#   - both saw at least 90 of its kernel stacks, and the i-th is the same
#     in both, frame by frame (function, offset, module; a function's
#     aliases are one name)

# Not readonly: part kwalk sources this file too, before the suite does.
USTACK_FTRACE_INST=/sys/kernel/tracing/instances/rt-ustack

# ustack_ftrace_compare KIND RT FTRACE TID WL_OUT: TID's switch-outs as
# the workload, with their KIND ("user" or "kernel") stacks, by ringtrace
# and by the ftrace instance's text FTRACE, compared in order; prints
# "N_ringtrace N_ftrace N_equal", the first difference on stderr.  user:
# RT has a switch-out a line (ustack_frames); only frames in the
# workload's functions count (addresses named NAME+0xOFF by WL_OUT's
# "func" lines), switch-outs with none are dropped.  kernel: RT is
# report's text; frames are NAME+0xOFF [MODULE], ftrace's own probe
# (trace_event_raw_event_*) left out: ringtrace's start at the tracepoint.
ustack_ftrace_compare() {
	python3 -S - "$@" <<'PY'
import re, sys
kind, rtfile, ftfile, tid, wlout = sys.argv[1:]
funcs = []
for l in open(wlout):
    w = l.split()
    if len(w) == 4 and w[0] == 'func' and w[1] != 'end_of_main':
        funcs.append((w[1], int(w[2], 16), int(w[3], 16)))
names = {n for n, _, _ in funcs}
def in_workload(t):
    if t.startswith('0x'):
        a = int(t, 16)
        for n, lo, hi in funcs:
            if lo <= a < hi:
                return '%s+0x%x' % (n, a - lo)
        return None
    return t if t.split('+0x')[0] in names else None

# ftrace: a sched_switch of TID, then on its CPU <stack trace> and
# <user stack trace>, each followed by " => " lines.
head = re.compile(r'\[(\d+)\].*?: (sched_switch: .*|<stack trace>|<user stack trace>)$')
ft, mine, cur = {'kernel': [], 'user': []}, {}, None
for line in open(ftfile):
    line = line.rstrip('\n')
    m = head.search(line)
    if m:
        cpu, what = m.groups()
        cur = None
        if what.startswith('sched_switch'):
            mine[cpu] = ' prev_pid=%s ' % tid in what
        elif mine.get(cpu):
            cur = ft['kernel' if what == '<stack trace>' else 'user']
            cur.append([])
        continue
    if cur is None or not line.startswith(' => '):
        continue
    m = re.match(r'^ => ([^ ]+?\+0x[0-9a-f]+)/0x[0-9a-f]+( \[[\w-]+\])?$', line)
    u = re.match(r'^ =>.*<([0-9a-f]+)>$', line)
    if m and (cur[-1] or not m.group(1).startswith('trace_event_raw_event_')):
        cur[-1].append(m.group(1) + (m.group(2) or ''))
    elif u:
        cur[-1].append('0x' + u.group(1))

if kind == 'user':
    rt = [[f for f in map(in_workload, l.split()) if f] for l in open(rtfile)]
    ft = [[f for f in map(in_workload, s) if f] for s in ft['user']]
else:
    kframe = re.compile(r'^    ([A-Za-z_.][\w.]*\+0x[0-9a-f]+( \[[\w-]+\])?)$')
    rt, cur = [], None
    for line in open(rtfile):
        line = line.rstrip('\n')
        if not line.startswith('    '):
            cur = None
            if ' sched_switch: ' in line and \
               ('prev_comm="ustack-workload", prev_tid=%s,' % tid) in line:
                cur = []
                rt.append(cur)
        elif cur is not None and kframe.match(line):
            cur.append(kframe.match(line).group(1))
    ft = ft['kernel']
rt = [tuple(x) for x in rt if x]
ft = [tuple(x) for x in ft if x]
# The sleeper's last switch-out, at its exit (do_task_dead), may come after
# record -F saw the process end and stopped: exit_notify() wakes the
# parent before the exiting task's last __schedule().  ftrace's instance
# is stopped later.  That one switch-out alone is left out of the count.
if kind == 'kernel' and len(ft) == len(rt) + 1 and \
   any(f.startswith('do_task_dead+') for f in ft[-1]):
    print('(ftrace\'s last switch-out, at the exit, after the recording stopped: left out)',
          file=sys.stderr)
    ft = ft[:-1]
print(len(rt), len(ft), sum(1 for a, b in zip(rt, ft) if a == b))
for a, b in zip(rt, ft):
    if a != b:
        print('first difference: ringtrace %s; ftrace %s' % (' '.join(a), ' '.join(b)), file=sys.stderr)
        break
PY
}

# ustack_ftrace_canon FILE...: each NAME+0xOFF in the FILEs renamed to the first
# name /proc/kallsyms gives NAME's address: report and ftrace may pick
# different aliases (__schedule or __sched_text_start on the debug
# kernel, __x86_indirect_thunk_array or _rax on 6.12-rt).
ustack_ftrace_canon() {
	python3 -S - "$@" <<'PY'
import re, sys
first, canon = {}, {}
for line in open('/proc/kallsyms'):
    w = line.split()
    if len(w) >= 3 and int(w[0], 16):
        canon[w[2]] = first.setdefault(w[0], w[2])
tok = re.compile(r'(?<![\w.])([A-Za-z_.][\w.]*)(?=\+0x[0-9a-f]+)')
for p in sys.argv[1:]:
    s = open(p).read()
    open(p, 'w').write(tok.sub(lambda m: canon.get(m.group(1), m.group(1)), s))
PY
}

profile_ustack_ftrace() {
	local wl=$REPO/tools/tests/ustack-workload d=$W tid kind rt nrt nft neq
	# ustack.sh's helpers (ustack_frames, ustack_by_address), when the
	# part runs alone.
	declare -F ustack_frames >/dev/null || . "$REPO/tools/tests/profile.d/ustack.sh"
	if ! mkdir "$USTACK_FTRACE_INST" 2>"$d/uftrace.err"; then
		check "an ftrace instance for userstacktrace ($(<"$d/uftrace.err"))" false
		return
	fi
	echo 'prev_comm == "ustack-workload"' >"$USTACK_FTRACE_INST/events/sched/sched_switch/filter"
	echo 1 >"$USTACK_FTRACE_INST/options/userstacktrace"
	echo 1 >"$USTACK_FTRACE_INST/options/stacktrace"
	echo 1 >"$USTACK_FTRACE_INST/options/sym-offset"
	echo 1 >"$USTACK_FTRACE_INST/events/sched/sched_switch/enable"
	setup "record --ustack sched_switch -F -- ustack-workload, ftrace's userstacktrace beside" \
		"$CLI" record --stack sched_switch --ustack sched_switch -F -o "$d/uftrace-rec" -- \
		"$wl" 100 2000000 >"$d/uftrace-wl.out" 2>"$d/uftrace-record.err"
	echo 0 >"$USTACK_FTRACE_INST/events/sched/sched_switch/enable"
	cat "$USTACK_FTRACE_INST/trace" >"$d/uftrace-ftrace.txt"
	echo 0 >"$USTACK_FTRACE_INST/options/userstacktrace"
	echo 0 >"$USTACK_FTRACE_INST/options/stacktrace"
	rmdir "$USTACK_FTRACE_INST"
	[[ -d $d/uftrace-rec ]] || { cat "$d/uftrace-record.err"; return; }
	"$CLI" report "$d/uftrace-rec" >"$d/uftrace-report" 2>"$d/uftrace-report.err"
	tid=$(awk '$1 == "pid" { print $4 }' "$d/uftrace-wl.out")
	ustack_frames "$d/uftrace-report" "$tid" >"$d/uftrace-sleeper.rt"
	ustack_by_address "$d/uftrace-sleeper.rt" "$d/uftrace-wl.out"
	# Kernel names only: the user frames are taken above.
	ustack_ftrace_canon "$d/uftrace-report" "$d/uftrace-ftrace.txt"
	for kind in user kernel; do
		rt=$d/uftrace-report
		[[ $kind == user ]] && rt=$d/uftrace-sleeper.rt
		read -r nrt nft neq < <(ustack_ftrace_compare "$kind" "$rt" \
			"$d/uftrace-ftrace.txt" "$tid" "$d/uftrace-wl.out" 2>"$d/uftrace-$kind.diff")
		note "sleeper $tid: $kind stacks: $nrt by ringtrace, $nft by ftrace, $neq the same $(<"$d/uftrace-$kind.diff")"
		check "$kind stacks vs ftrace: both saw >= 90 of the sleeper's switch-outs (${nrt:-?}, ${nft:-?})" \
			[ "${nrt:-0}" -ge 90 -a "${nft:-0}" -ge 90 ]
		check "$kind stacks vs ftrace: the same frames, switch-out by switch-out (${neq:-?} of ${nrt:-?})" \
			[ "${neq:--1}" -eq "${nrt:-0}" -a "${nrt:-0}" -eq "${nft:-1}" ]
	done
}
