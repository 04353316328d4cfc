#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check a ringtrace probe trace, as babeltrace2 prints it, against what
rt_workload did.  Prints one "ok - ..." or "not ok - ..." line per check
and exits non-zero if any check failed.

  (WORKLOAD_LINE: what rt_workload printed, plus cpus=N online CPUs)

  check_trace.py main   BT_TEXT WORKLOAD_LINE
      full trace of `rt_workload -n N`: syscall pairs of parent, its
      thread and child (the last call of each with bits above the low 32
      set in its number, which must read as getppid), fork/exec/exit of
      the child, sched_switch chains, irq and softirq; syscall names; the
      state dump.
  check_trace.py filter BT_TEXT WORKLOAD_LINE
      trace taken with set_event_pid = the workload's parent pid: nothing
      about another task, everything about that process (its thread too).
  check_trace.py forks  BT_TEXT WORKLOAD_LINE
      sched_process_fork of `rt_workload --forks N` with set_event_pid =
      its pid and event_fork on: every child's fork, and the fork of
      every child's own child (followed through the child).
  check_trace.py sched  BT_TEXT WORKLOAD_LINE
      `rt_workload --sched N`: every sched_waking of the sleeper is on the
      waker's CPU while the waker runs there, and names the sleeper;
      sched_migrate_task of the waker between its two CPUs; the
      sched_process_free of the reaped child, after its exit; the
      waker_ctx of the nappers' timer wakeups (WORKLOAD_LINE also has
      preempt_rt=0|1, from uname -v).

The events carry no pid of their own (like LTTng without contexts): a
syscall is attributed to the task that the last sched_switch on its CPU
switched in (before a CPU's first switch: to that switch's prev_tid),
which also tests that the switches chain.
"""
import re
import sys

LINE = re.compile(r'^\[[^\]]*\] \([^)]*\) \S+ (\w+): \{ ([^}]*) \}, \{ (.*) \}$')
STRING = re.compile(r'(\w+) = "((?:[^"\\]|\\.)*)"')
INT = re.compile(r'(\w+) = (-?\d+)')
# An enum field: `id = ( "getppid" : container = 110 )`, or without a label
# `id = ( <unknown> : container = 999 )`.
ENUM = re.compile(r'(\w+) = \( (?:"([^"]*)"|<unknown>) : container = (-?\d+) \)')

# Softirq vector of the timer wheel (include/linux/interrupt.h).
TIMER_SOFTIRQ = 1

failures = 0


def check(ok, what):
    global failures
    print(('ok - ' if ok else 'not ok - ') + what)
    if not ok:
        failures += 1


def parse(path):
    """Yield (name, cpu, fields) for every event line."""
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line.rstrip('\n'))
            if not m:
                continue
            ctx = dict((k, int(v)) for k, v in INT.findall(m.group(2)))
            body = m.group(3)
            fields = {}
            for k, label, v in ENUM.findall(body):
                fields[k] = int(v)
                fields[k + '_label'] = label or None
            body = ENUM.sub('', body)
            fields.update(STRING.findall(body))
            for k, v in INT.findall(STRING.sub('', body)):
                fields.setdefault(k, int(v))
            yield m.group(1), ctx.get('cpu_id', -1), fields


def workload(line):
    return dict((k, int(v)) for k, v in re.findall(r'(\w+)=(-?\d+)', line))


class Replay:
    """Per-CPU current task from sched_switch; syscall pairs per task."""

    def __init__(self, nr):
        self.nr = nr
        self.current = {}          # cpu -> tid switched in last
        self.early = {}            # cpu -> syscalls before its 1st switch
        self.switches = {}         # cpu -> count
        self.breaks = []           # (cpu, expected prev_tid, got)
        self.pending = {}          # tid -> entered getppid
        self.pairs = {}            # tid -> completed getppid pairs
        self.calls = {}            # tid -> (getppid entries, exits)
        self.rets = {}             # tid -> set of getppid return values
        self.syscalls_by = {}      # tid (None: unknown) -> syscall events
        self.irq_open = {}         # cpu -> irq of the handler running
        self.irq_mismatch = 0
        self.wakings = []          # (cpu, task running there, fields)
        self.comms = {}            # tid -> comm, from the switches
        self.events = []

    def feed(self, name, cpu, f):
        self.events.append((name, cpu, f))
        if name == 'sched_switch':
            if cpu not in self.current:
                # Whatever ran before the first switch is its prev.
                self.current[cpu] = f['prev_tid']
                for ename, efields in self.early.pop(cpu, []):
                    self.attribute(ename, cpu, f['prev_tid'], efields)
            elif self.current[cpu] != f['prev_tid']:
                self.breaks.append((cpu, self.current[cpu], f['prev_tid']))
            self.current[cpu] = f['next_tid']
            self.comms[f['prev_tid']] = f.get('prev_comm')
            self.comms[f['next_tid']] = f.get('next_comm')
            self.switches[cpu] = self.switches.get(cpu, 0) + 1
        elif name in ('syscall_entry', 'syscall_exit', 'sched_waking'):
            if cpu in self.current:
                self.attribute(name, cpu, self.current[cpu], f)
            else:
                self.early.setdefault(cpu, []).append((name, f))
        elif name == 'irq_handler_entry':
            self.irq_open[cpu] = f['irq']
        elif name == 'irq_handler_exit':
            if self.irq_open.pop(cpu, None) != f['irq']:
                self.irq_mismatch += 1

    def attribute(self, name, cpu, tid, f):
        """An event of the task @tid, running on @cpu (None: unknown)."""
        if name == 'sched_waking':
            self.wakings.append((cpu, tid, f))
        else:
            self.syscall(name, tid, f)

    def syscall(self, name, tid, f):
        self.syscalls_by[tid] = self.syscalls_by.get(tid, 0) + 1
        if tid is None or f['id'] != self.nr:
            return
        entries, exits = self.calls.get(tid, (0, 0))
        self.calls[tid] = ((entries + 1, exits) if name == 'syscall_entry'
                           else (entries, exits + 1))
        if name == 'syscall_entry':
            self.pending[tid] = True
        elif self.pending.pop(tid, False):
            self.pairs[tid] = self.pairs.get(tid, 0) + 1
            self.rets.setdefault(tid, set()).add(f['ret'])

    def end(self):
        """Syscalls of CPUs that never switched stay unattributed."""
        for cpu, early in sorted(self.early.items()):
            for name, f in early:
                self.attribute(name, cpu, None, f)
        self.early = {}

    def find(self, name, **want):
        return [f for n, _, f in self.events
                if n == name and all(f.get(k) == v for k, v in want.items())]

    def count(self, name):
        return sum(1 for n, _, _ in self.events if n == name)


def check_names(r, w):
    """Syscall ids carry the kernel's names; the state dump names tasks."""
    calls = r.find('syscall_entry') + r.find('syscall_exit')
    # -1 is "no system call" (an exit through a signal return, say).
    unnamed = [f['id'] for f in calls if f['id'] >= 0 and not f.get('id_label')]
    check(calls and not unnamed,
          'every one of %d syscall events with an id >= 0 has a name '
          '(unnamed ids: %s)' % (len(calls), sorted(set(unnamed))[:10]))
    getppid = [f for f in calls if f['id'] == w['nr']]
    check(getppid and all(f['id_label'] == 'getppid' for f in getppid),
          'syscall %d is "getppid" in all %d of its events'
          % (w['nr'], len(getppid)))
    by_cpu = sorted(c for n, c, _ in r.events
                    if n == 'ringtrace_statedump_cpu')
    check(by_cpu == list(range(w['cpus'])),
          'one ringtrace_statedump_cpu on each of the %d CPUs: %s'
          % (w['cpus'], by_cpu))
    shell = r.find('ringtrace_statedump_task', tid=w['ppid'], pid=w['ppid'])
    check(len(shell) == 1,
          'the state dump names the shell %d (that existed at start): %s'
          % (w['ppid'], shell))
    init = r.find('ringtrace_statedump_task', tid=1, pid=1, ppid=0)
    check(len(init) == 1, 'the state dump names pid 1: %s' % init)


def exact_calls(r, tid, calls):
    """@tid made @calls getppid calls: as many entries, exits and pairs."""
    return r.pairs.get(tid, 0) == calls and r.calls.get(tid) == (calls, calls)


def check_main(r, w):
    parent, child, calls = w['parent'], w['child'], w['calls']
    check_names(r, w)
    check(sum(r.switches.values()) >= 10,
          'sched_switch events: %d' % sum(r.switches.values()))
    check(not r.breaks,
          'sched_switch prev_tid continues the last next_tid per CPU '
          '(%d breaks%s)' % (len(r.breaks),
                             ': first cpu %d expected %d got %d' % r.breaks[0]
                             if r.breaks else ''))
    # rt_workload makes exactly `calls` in each: an event written twice,
    # or one lost, is a count off.
    for who, tid in (('parent', parent), ('thread', w['thread']), ('child', child)):
        check(exact_calls(r, tid, calls),
              '%s %d: %d getppid entry/exit pairs (entries, exits %s), want %d'
              % (who, tid, r.pairs.get(tid, 0), r.calls.get(tid, (0, 0)), calls))
    check(r.rets.get(child) == {parent},
          'child getppid() returned the parent pid in syscall_exit.ret: %s'
          % sorted(r.rets.get(child, set()))[:5])
    check(r.rets.get(parent) == {w['ppid']} and
          r.rets.get(w['thread']) == {w['ppid']},
          'parent and thread getppid() returned the ppid %d: %s %s'
          % (w['ppid'], sorted(r.rets.get(parent, set()))[:5],
             sorted(r.rets.get(w['thread'], set()))[:5]))
    check(len(r.find('sched_process_fork', parent_tid=parent,
                     parent_pid=parent, child_tid=child,
                     child_pid=child)) == 1,
          'one sched_process_fork %d -> %d' % (parent, child))
    execs = r.find('sched_process_exec', tid=child, old_tid=child)
    check(len(execs) == 1 and
          execs[0].get('filename', '').endswith('/rt_workload') and
          execs[0].get('filename_len') == len(execs[0].get('filename', '')),
          'one sched_process_exec of the child: %s' % execs)
    check(len(r.find('sched_wakeup_new', tid=child)) == 1,
          'one sched_wakeup_new of the child')
    check(len(r.find('sched_process_exit', tid=child,
                     comm='rt_workload')) == 1,
          'one sched_process_exit of the child, comm rt_workload')
    check(r.count('sched_wakeup') > 0,
          'sched_wakeup events: %d' % r.count('sched_wakeup'))
    check(r.count('irq_handler_entry') > 0 and
          r.count('irq_handler_exit') > 0 and r.irq_mismatch == 0,
          'irq_handler_entry/exit: %d/%d, %d exits not matching the entry'
          % (r.count('irq_handler_entry'), r.count('irq_handler_exit'),
             r.irq_mismatch))
    check(len(r.find('irq_softirq_entry', vec=TIMER_SOFTIRQ)) > 0 and
          len(r.find('irq_softirq_exit', vec=TIMER_SOFTIRQ)) > 0,
          'timer softirq entry/exit: %d/%d'
          % (len(r.find('irq_softirq_entry', vec=TIMER_SOFTIRQ)),
             len(r.find('irq_softirq_exit', vec=TIMER_SOFTIRQ))))


def check_filter(r, w):
    pid, child, calls = w['parent'], w['child'], w['calls']
    ours = (pid, w['thread'])      # the filter matches threads by tgid
    foreign = [f for f in r.find('sched_switch')
               if f['prev_tid'] not in ours and f['next_tid'] not in ours]
    check(r.count('sched_switch') >= 2 and not foreign,
          'all %d sched_switch events involve %s (%d do not)'
          % (r.count('sched_switch'), ours, len(foreign)))
    others = dict((t, n) for t, n in r.syscalls_by.items() if t not in ours)
    check(not others,
          'syscall events only while %s runs (others: %s)' % (ours, others))
    for tid in ours:
        check(exact_calls(r, tid, calls),
              '%d: %d getppid pairs (entries, exits %s), want %d'
              % (tid, r.pairs.get(tid, 0), r.calls.get(tid, (0, 0)), calls))
    wakeups = [f for f in r.find('sched_wakeup') + r.find('sched_wakeup_new')
               if f['tid'] not in ours]
    check(not wakeups, 'no wakeup of another task: %s' % wakeups[:3])
    check(len(r.find('sched_process_fork', parent_tid=pid,
                     child_tid=child)) == 1,
          'the fork %d -> %d is kept (its parent matches)' % (pid, child))
    check(len(r.find('sched_process_exec', tid=pid)) == 1 and
          not r.find('sched_process_exec', tid=child),
          'exec of %d kept, exec of the child %d filtered' % (pid, child))
    check(not r.find('sched_process_exit', tid=child),
          'exit of the child %d filtered' % child)
    check(r.count('irq_softirq_entry') > 0,
          'softirq events are not filtered: %d'
          % r.count('irq_softirq_entry'))
    dumped = r.find('ringtrace_statedump_task')
    check(len(dumped) == 1 and dumped[0]['tid'] == pid,
          'the state dump names only the filtered pid %d: %s' % (pid, dumped))


def check_forks(r, w):
    parent, n = w['parent'], w['children']
    children = [f['child_tid'] for f in r.find('sched_process_fork',
                                               parent_tid=parent)]
    check(len(children) == n,
          'the fork of each of the %d children of %d (%d seen)'
          % (n, parent, len(children)))
    forked = set(f['parent_tid'] for f in r.find('sched_process_fork'))
    lost = [c for c in children if c not in forked]
    check(not lost,
          'the fork of each child\'s own child, followed through the '
          'child: %d of %d missing%s'
          % (len(lost), len(children),
             ' (children %s)' % lost[:8] if lost else ''))


def check_sched(r, w):
    waker, sleeper, n = w['waker'], w['sleeper'], w['rounds']
    wcpu, scpu, reaped = w['waker_cpu'], w['sleeper_cpu'], w['reaped']
    check(wcpu != scpu, 'waker and sleeper on two CPUs (%d, %d)'
          % (wcpu, scpu))
    # The CPU's stopper (migration/N) may wake the sleeper once, at its
    # start: its own sched_setaffinity() waits in stop_one_cpu() for the
    # stopper that moves it, and sleeps there if it gets to the wait
    # first (rare: seen once in 20 runs, on 6.12 under TCG).
    woken = [(cpu, cur, f) for cpu, cur, f in r.wakings
             if f['tid'] == sleeper and
             not (r.comms.get(cur) or '').startswith('migration/')]
    # One per round and the last one, that tells the sleeper to stop.
    check(len(woken) >= n + 1,
          'sched_waking of the sleeper %d: %d, want >= %d'
          % (sleeper, len(woken), n + 1))
    wrong = [(cpu, cur) for cpu, cur, f in woken
             if cpu != wcpu or cur != waker]
    check(woken and not wrong,
          'every sched_waking of the sleeper is on the waker\'s cpu%d while '
          'the waker %d runs there (%d are not: %s)'
          % (wcpu, waker, len(wrong), wrong[:4]))
    bad = [f for _, _, f in woken
           if f.get('comm') != 'rt_sleeper' or f['prio'] != 20 or
           f['target_cpu'] != scpu]
    check(woken and not bad,
          'they name the sleeper: comm rt_sleeper, prio 20, target_cpu %d '
          '(%d do not: %s)' % (scpu, len(bad), bad[:2]))
    back = [(cpu, cur) for cpu, cur, f in r.wakings
            if f['tid'] == waker and cur == sleeper]
    check(back and all(cpu == scpu for cpu, _ in back),
          'the sleeper\'s answers wake the waker from cpu%d: %d, on cpus %s'
          % (scpu, len(back), sorted(set(c for c, _ in back))))
    # Named rt_waker: the moves of its loop (the scheduler may have moved
    # it before, under the shell's name or as rt_workload); at nice 0.
    moves = r.find('sched_migrate_task', tid=waker, comm='rt_waker', prio=20)
    there = [f for f in moves if (f['orig_cpu'], f['dest_cpu']) == (wcpu, scpu)]
    home = [f for f in moves if (f['orig_cpu'], f['dest_cpu']) == (scpu, wcpu)]
    check(len(there) >= n and len(home) >= n,
          'sched_migrate_task of the waker %d (comm rt_waker, prio 20): '
          'cpu%d -> cpu%d %d times, back %d times, want >= %d each'
          % (waker, wcpu, scpu, len(there), len(home), n))
    all_moves = r.find('sched_migrate_task', tid=waker)
    named = [i for i, f in enumerate(all_moves) if f.get('comm') == 'rt_waker']
    odd = [f for f in all_moves[named[0]:] if f.get('comm') != 'rt_waker' or
           f['prio'] != 20] if named else []
    check(not odd, 'every migration of the waker once renamed names it: %s'
          % odd[:3])
    order = [(i, n_) for i, (n_, _, f) in enumerate(r.events)
             if n_ in ('sched_process_exit', 'sched_process_free') and
             f.get('tid') == reaped]
    frees = r.find('sched_process_free', tid=reaped)
    check(len(frees) == 1 and frees[0].get('comm') == 'rt_reaped' and
          frees[0]['prio'] == 20,
          'one sched_process_free of the reaped child %d, comm rt_reaped, '
          'prio 20: %s' % (reaped, frees))
    check([n_ for _, n_ in order] == ['sched_process_exit',
                                      'sched_process_free'],
          'the child\'s exit, then its free: %s' % [n_ for _, n_ in order])
    check_waker_ctx(r, w)


# waker_ctx of sched_waking (events.rst): 0 task, 1 softirq, 2 hardirq.
def check_waker_ctx(r, w):
    """The nappers' timers wake them from the context the kernel expires
    a sleeper's hrtimer in: the hard interrupt, except on PREEMPT_RT for a
    task outside the real-time classes (__hrtimer_init_sleeper() makes
    its timer soft there; the ktimers thread runs it as a softirq).  A
    napper may also wait for a lock at its start (the debug kernel: the
    other thread's stack mapped meanwhile): a task's wakeup, 0."""
    for who, soft_on_rt in (('napper', True), ('fifonap', False)):
        want = 1 if w['preempt_rt'] and soft_on_rt else 2
        ctxs = [f.get('waker_ctx') for _, _, f in r.wakings
                if f['tid'] == w[who]]
        check(ctxs.count(want) >= w['naps'] and set(ctxs) <= {want, 0},
              'the %d timer wakeups of rt_%s %d have waker_ctx %d '
              '(preempt_rt=%d), any other is a task\'s (0): %d wakings, '
              'waker_ctx %s'
              % (w['naps'], who, w[who], want, w['preempt_rt'], len(ctxs),
                 sorted(ctxs, key=str)))
    ctxs = set(f.get('waker_ctx') for _, _, f in r.wakings
               if f['tid'] == w['sleeper'])
    check(ctxs == {0}, 'the pipe wakeups of the sleeper have waker_ctx 0 '
          '(task): %s' % sorted(ctxs, key=str))


MODES = {
    'main': (check_main,
             ('parent', 'ppid', 'thread', 'child', 'calls', 'nr', 'cpus')),
    'filter': (check_filter,
               ('parent', 'ppid', 'thread', 'child', 'calls', 'nr', 'cpus')),
    'forks': (check_forks, ('parent', 'children')),
    'sched': (check_sched, ('waker', 'sleeper', 'waker_cpu', 'sleeper_cpu',
                            'napper', 'fifonap', 'naps', 'preempt_rt',
                            'reaped', 'rounds')),
}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in MODES:
        print(__doc__, file=sys.stderr)
        return 2
    mode, keys = MODES[sys.argv[1]]
    w = workload(sys.argv[3])
    for k in keys:
        if k not in w:
            print('not ok - workload line lacks %s: %r' % (k, sys.argv[3]))
            return 1
    r = Replay(w.get('nr', -1))
    for name, cpu, fields in parse(sys.argv[2]):
        r.feed(name, cpu, fields)
    r.end()
    check(len(r.events) > 0, 'babeltrace2 printed %d events' % len(r.events))
    mode(r, w)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
