#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a `ringtrace export -f perfetto` file against `ringtrace report`.

  perfetto_check.py [--schema FILE] [--tids FILE] [--marker TEXT]...
                    [--begin TIME] [--end TIME] TRACE PFTRACE

Needs protoc (Debian's protobuf-compiler), Python's protobuf (Debian's
python3-protobuf, for Debian's python3) and Perfetto's published schema
(--schema; by default the one tools/tests/perfetto_schema.py --path
names).  The file is read through the published schema, never through
ours (tools/cli/perfetto.proto): a field number or type of ours that is
not Perfetto's shows as a value that is not report's, or as a field
Perfetto does not know.  Its Python module is generated into a temporary
directory.

Checks, one "ok - ..." / "not ok - ..." line each (tools/tests/check.sh's):
  - `protoc --decode=perfetto.protos.Trace` reads the file with the
    published schema, and finds no field that schema does not know;
    with ours too;
  - the ClockSnapshot: BOOTTIME - MONOTONIC is the metadata's
    boottime_offset, REALTIME - MONOTONIC the metadata clock's offset;
    SystemInfo: "Linux", the kernel release and machine of the metadata;
  - per CPU, the events are report's events of that CPU (with --begin/
    --end: report's of that window, for an export of it), one for one and
    in order (the state dump, and events report has no thread for, left
    out): same event, same thread, same fields, report's time plus
    boottime_offset within 1 us; times never go back on a CPU;
  - per thread and CPU, the sched_switch, sched_waking and
    sys_enter/sys_exit counts equal report's;
  - a CPU's bundles are flagged lost_events where report says events
    were lost, and only there;
  - with --tids (cli-workload's "tid pid comm" lines): each pid is a
    process of the ProcessTree (the exec'd ones named after the program,
    the forked one's parent the main process), each other tid a thread of
    its pid, each comm a name Perfetto reads for its tid, each thread's
    getppid calls (as many as the file's lines name it, times --calls);
  - with --marker: a print event with that buffer (its newline aside);
  - with --require: events of that kind.
Exits 1 if a check failed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import perfetto_schema  # noqa: E402

PROTO = perfetto_schema.OURS
RINGTRACE = os.environ.get('RINGTRACE', os.path.join(os.path.dirname(HERE), 'ringtrace'))

failures = 0


def check(ok, desc, detail=None):
    global failures
    print('%s - %s' % ('ok' if ok else 'not ok', desc))
    if not ok:
        failures += 1
        for line in (detail or '').splitlines()[:20]:
            print('# ' + line)
    return ok


# ---- report's view -------------------------------------------------------------

LINE = re.compile(r'^\[(\d+)\.(\d{9})\] cpu(\d+) (?:-|(.*)-(\d+)) ([a-z_0-9]+):(?: (.*))?$')
LOST = re.compile(r'^\[\d+\.\d+\] cpu(\d+) -- lost ')
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|[^,]*)(?:, |$)')


def unquote(s):
    """report's quoted text (rt_print_text) back to bytes."""
    out = bytearray()
    i = 1
    while i < len(s) - 1:
        c = s[i]
        if c == '\\':
            e = s[i + 1]
            if e == 'x':
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out += {'n': b'\n', 't': b'\t', 'r': b'\r'}.get(e, e.encode())
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def value(v):
    if v.startswith('"'):
        return unquote(v)
    if v.startswith('['):
        return [int(x) for x in v[1:-1].split(', ') if x]
    m = re.match(r'^.*\((-?\d+)\)$', v)      # an enum's label(value)
    if m:
        return int(m.group(1))
    try:
        return int(v)
    except ValueError:
        return v


def report(trace, opts):
    r = subprocess.run([RINGTRACE, 'report'] + opts + [trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True,
                       errors='surrogateescape')
    if r.returncode not in (0, 3):
        sys.exit('perfetto_check: ringtrace report %s: exit %d: %s' % (
            trace, r.returncode, r.stderr))
    events, lost = [], set()
    for line in r.stdout.splitlines():
        m = LOST.match(line)
        if m:
            lost.add(int(m.group(1)))
            continue
        m = LINE.match(line)
        if not m:
            continue
        sec, ns, cpu, _, tid, name, rest = m.groups()
        fields = {}
        for k, v in FIELD.findall(rest or ''):
            fields[k] = value(v)
            label = re.match(r'^(\w+)\(-?\d+\)$', v)    # an enum's label(value)
            if label:
                fields[k + '_label'] = label.group(1)
        events.append({'ts': int(sec) * 10**9 + int(ns), 'cpu': int(cpu),
                       'tid': int(tid) if tid is not None else None,
                       'name': name, 'f': fields})
    return events, lost


def metadata(trace):
    text = open(os.path.join(trace, 'metadata'), encoding='utf-8', errors='replace').read()

    def env(key):
        m = re.search(r'\b%s = ("([^"]*)"|-?\d+);' % key, text)
        return None if not m else (m.group(2) if m.group(2) is not None else m.group(1))

    clock = {k: int(re.search(r'\b%s = (-?\d+);' % k, text.split('clock {')[1]).group(1))
             for k in ('freq', 'offset_s', 'offset')}
    return env, clock


# ---- the export -----------------------------------------------------------------

def decode(schema, pftrace):
    """protoc's text of @pftrace read with @schema: (exit, text, stderr)."""
    with open(pftrace, 'rb') as f:
        r = subprocess.run(['protoc', '--decode=perfetto.protos.Trace', '-I',
                            os.path.dirname(schema), schema], stdin=f,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, errors='replace')
    return r.returncode, r.stdout, r.stderr


def load(schema, pftrace, tmp):
    """@pftrace as the Trace of @schema's Python module."""
    subprocess.run(['protoc', '-I', os.path.dirname(schema), '--python_out=' + tmp, schema],
                   check=True)
    sys.path.insert(0, tmp)
    mod = __import__(os.path.splitext(os.path.basename(schema))[0] + '_pb2')
    trace = mod.Trace()
    with open(pftrace, 'rb') as f:
        trace.ParseFromString(f.read())
    return trace


# Perfetto's event for report's, and what must be equal: (perfetto field,
# report field or a function of report's fields).
def prio(k):
    return lambda f: f[k] + 100


WAKE = [('comm', 'comm'), ('pid', 'tid'), ('prio', prio('prio')), ('target_cpu', 'target_cpu')]
MAP = {
    'sched_switch': ('sched_switch', [
        ('prev_comm', 'prev_comm'), ('prev_pid', 'prev_tid'), ('prev_prio', prio('prev_prio')),
        ('prev_state', 'prev_state'), ('next_comm', 'next_comm'), ('next_pid', 'next_tid'),
        ('next_prio', prio('next_prio'))]),
    'sched_waking': ('sched_waking', WAKE),
    'sched_wakeup': ('sched_wakeup', WAKE),
    'sched_wakeup_new': ('sched_wakeup_new', WAKE),
    'sched_process_fork': ('task_newtask', [
        ('pid', 'child_tid'), ('comm', 'child_comm'),
        ('clone_flags', lambda f: 0x10900 if f['child_pid'] == f['parent_pid'] else 0)]),
    'sched_process_exec': ('sched_process_exec', [
        ('filename', 'filename'), ('pid', 'tid'), ('old_pid', 'old_tid')]),
    'sched_process_exit': ('sched_process_exit', [
        ('comm', 'comm'), ('pid', 'tid'), ('prio', prio('prio'))]),
    'sched_process_free': ('sched_process_free', [
        ('comm', 'comm'), ('pid', 'tid'), ('prio', prio('prio'))]),
    'sched_migrate_task': ('sched_migrate_task', [
        ('comm', 'comm'), ('pid', 'tid'), ('prio', prio('prio')),
        ('orig_cpu', 'orig_cpu'), ('dest_cpu', 'dest_cpu')]),
    'task_rename': ('task_rename', [
        ('pid', 'tid'), ('oldcomm', 'oldcomm'), ('newcomm', 'newcomm'),
        ('oom_score_adj', 'oom_score_adj')]),
    'irq_handler_entry': ('irq_handler_entry', [('irq', 'irq'), ('name', 'name')]),
    'irq_handler_exit': ('irq_handler_exit', [('irq', 'irq'), ('ret', 'ret')]),
    'irq_softirq_entry': ('softirq_entry', [('vec', 'vec')]),
    'irq_softirq_exit': ('softirq_exit', [('vec', 'vec')]),
    'syscall_entry': ('sys_enter', [('id', 'id'), ('args', 'args')]),
    'syscall_exit': ('sys_exit', [('id', 'id'), ('ret', 'ret')]),
    'ringtrace_marker': ('print', []),
}
NOT_EVENTS = ('ringtrace_statedump_task', 'ringtrace_statedump_cpu')
COUNTED = ('sched_switch', 'sched_waking', 'sys_enter', 'sys_exit')


def text_of(v):
    return v if isinstance(v, bytes) else v.encode('utf-8', 'surrogateescape')


def atrace(buf):
    """export_perfetto.c's is_atrace(), on the text without its newlines."""
    return re.match(rb'^(E|[BEICSFNGH]\|[0-9]+(\|.*)?)$', buf, re.S) is not None


def differences(rep, ev, kind, boff):
    """What differs between report's event and Perfetto's (a list)."""
    out = []
    if ev.pid != rep['tid']:
        out.append('pid %d, report\'s thread %d' % (ev.pid, rep['tid']))
    if abs(ev.timestamp - boff - rep['ts']) > 1000:
        out.append('time %d - %d, report %d' % (ev.timestamp, boff, rep['ts']))
    name, fields = MAP.get(rep['name'], ('generic', []))
    if kind != name:
        return out + ['%s, report %s' % (kind, rep['name'])]
    msg = getattr(ev, kind)
    f = rep['f']
    for ours, theirs in fields:
        want = theirs(f) if callable(theirs) else f.get(theirs)
        got = getattr(msg, ours)
        if isinstance(want, bytes):
            got = text_of(got)
        elif isinstance(want, list):
            got = list(got)
        if got != want:
            out.append('%s.%s = %r, report %r' % (kind, ours, got, want))
    if kind == 'print':
        data = f.get('data', b'').split(b'\0')[0]
        buf = text_of(msg.buf)
        bare = data.rstrip(b'\n')
        if bare and not atrace(bare):
            want = b'I|%d|' % max(f.get('_tgid', 0), 0) + data.replace(b'|', '\u00a6'.encode())
            if not buf.startswith(b'I|') or buf.split(b'|', 2)[2] != want.split(b'|', 2)[2]:
                out.append('print.buf %r, marker %r' % (buf, data))
        elif buf != data:
            out.append('print.buf %r, marker %r' % (buf, data))
    if kind == 'generic' and msg.event_name != rep['name']:
        out.append('generic %s, report %s' % (msg.event_name, rep['name']))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--schema', help='Perfetto\'s perfetto_trace.proto (default: the cached '
                    'one perfetto_schema.py names)')
    ap.add_argument('trace')
    ap.add_argument('pftrace')
    ap.add_argument('--tids')
    ap.add_argument('--calls', type=int, default=0, help='getppid calls per tids line')
    ap.add_argument('--marker', action='append', default=[])
    ap.add_argument('--require', action='append', default=[],
                    help='a Perfetto event (sched_waking, ...) the export must have')
    ap.add_argument('--begin', help='the export is of a window: report\'s --begin')
    ap.add_argument('--end', help='... and --end')
    args = ap.parse_args()
    args.window = ((['--begin', args.begin] if args.begin else []) +
                   (['--end', args.end] if args.end else []))

    schema = args.schema
    if not schema:
        try:
            schema = perfetto_schema.published()
        except perfetto_schema.Missing as e:
            check(False, 'Perfetto\'s published schema is there', str(e))
            return 1
    name = os.path.basename(args.pftrace)
    rc, text, err = decode(schema, args.pftrace)
    unknown = [l for l in text.splitlines() if re.match(r'^\s*\d+(: | \{)', l)]
    check(rc == 0 and not unknown, 'protoc --decode=perfetto.protos.Trace reads %s with '
          'Perfetto\'s schema, every field known' % name, err + '\n'.join(unknown[:10]))
    rc, _, err = decode(PROTO, args.pftrace)
    check(rc == 0, 'protoc --decode=perfetto.protos.Trace reads %s with ours' % name, err)
    with tempfile.TemporaryDirectory() as tmp:
        trace = load(schema, args.pftrace, tmp)
    env, clock = metadata(args.trace)
    # export_perfetto.c's rule: a number of nanoseconds, else 0.
    boff = env('boottime_offset')
    boff = int(boff) if boff and re.match(r'^\d+$', boff) else 0
    rep, rep_lost = report(args.trace, args.window)

    # Clocks and the system.
    snaps = [p.clock_snapshot for p in trace.packet if p.HasField('clock_snapshot')]
    infos = [p.system_info for p in trace.packet if p.HasField('system_info')]
    if check(len(snaps) == 1, 'one ClockSnapshot (%d)' % len(snaps)):
        c = {k.clock_id: k.timestamp for k in snaps[0].clocks}
        wall = clock['offset_s'] * 10**9 + clock['offset'] * 10**9 // clock['freq']
        check(c.get(6, 0) - c.get(3, 0) == boff,
              'ClockSnapshot: BOOTTIME - MONOTONIC = boottime_offset (%d)' % boff, repr(c))
        check(c.get(1, 0) - c.get(3, 0) == wall,
              'ClockSnapshot: REALTIME - MONOTONIC = the clock\'s offset (%d)' % wall, repr(c))
    if check(len(infos) == 1, 'one SystemInfo (%d)' % len(infos)):
        u = infos[0].utsname
        want = ('Linux', env('kernel_release') or '', env('machine') or 'x86_64')
        check((u.sysname, u.release, u.machine) == want,
              'SystemInfo: utsname %s' % (want,), str(u))

    # The events, per CPU, one for one.
    pf = {}
    bundles = {}
    for p in trace.packet:
        if p.HasField('ftrace_events'):
            b = p.ftrace_events
            pf.setdefault(b.cpu, []).extend(b.event)
            bundles.setdefault(b.cpu, []).append(b)
    mine = {}
    tgid = {}
    for e in rep:
        # The marker's instant names the thread's process, as ringtrace
        # knew it then: the last fork, exec or dump that said.
        if e['name'] == 'ringtrace_statedump_task':
            tgid[e['f']['tid']] = e['f']['pid']
        elif e['name'] == 'sched_process_fork':
            tgid[e['f']['child_tid']] = e['f']['child_pid']
        if e['name'] in NOT_EVENTS or e['tid'] is None:
            continue
        if e['name'] == 'ringtrace_marker':
            e['f']['_tgid'] = tgid.get(e['tid'], 0)
        mine.setdefault(e['cpu'], []).append(e)
    bad = []
    back = []
    for cpu in sorted(set(mine) | set(pf)):
        a, b = mine.get(cpu, []), pf.get(cpu, [])
        if len(a) != len(b):
            bad.append('cpu%d: %d events, report %d' % (cpu, len(b), len(a)))
        for i, (x, y) in enumerate(zip(a, b)):
            d = differences(x, y, y.WhichOneof('event'), boff)
            if d:
                bad.append('cpu%d event %d (%s at %d): %s' % (cpu, i, x['name'], x['ts'],
                                                              '; '.join(d)))
        for i in range(1, len(b)):
            if b[i].timestamp < b[i - 1].timestamp:
                back.append('cpu%d event %d: %d after %d' % (cpu, i, b[i].timestamp,
                                                            b[i - 1].timestamp))
    total = sum(len(v) for v in pf.values())
    check(total > 0 and not bad,
          'each CPU\'s %d events are report\'s, one for one, times within 1 us' % total,
          '\n'.join(bad))
    check(total > 0 and not back, 'times never go back on a CPU', '\n'.join(back))

    # Counts per thread and CPU.
    want, got = {}, {}
    for e in rep:
        name = MAP.get(e['name'], ('',))[0]
        if name in COUNTED and e['tid'] is not None:
            k = (e['tid'], e['cpu'], name)
            want[k] = want.get(k, 0) + 1
    for cpu, evs in pf.items():
        for e in evs:
            name = e.WhichOneof('event')
            if name in COUNTED:
                k = (e.pid, cpu, name)
                got[k] = got.get(k, 0) + 1
    for name in COUNTED:
        n = sum(v for k, v in got.items() if k[2] == name)
        diff = ['tid %d cpu%d: %d, report %d' % (k[0], k[1], got.get(k, 0), want.get(k, 0))
                for k in sorted(set(want) | set(got)) if k[2] == name and
                got.get(k, 0) != want.get(k, 0)]
        check(not diff, '%s per thread and CPU as report (%d events, %d threads)' % (
            name, n, len({k[0] for k in got if k[2] == name})), '\n'.join(diff))

    flagged = {cpu for cpu, bs in bundles.items() if any(b.lost_events for b in bs)}
    check(flagged == rep_lost, 'lost_events on the CPUs report has losses on (%s)' %
          sorted(rep_lost), 'flagged %s' % sorted(flagged))

    tree_procs, tree_threads = {}, {}
    for p in trace.packet:
        if p.HasField('process_tree'):
            for pr in p.process_tree.processes:
                tree_procs.setdefault(pr.pid, []).append(pr)
            for th in p.process_tree.threads:
                tree_threads.setdefault(th.tid, []).append(th.tgid)
    if args.tids:
        lines = [l.split() for l in open(args.tids)]
        main_pid = [int(t) for t, p, c in lines if c == 'rtw-main'][0]
        names = {}
        sysno = {}
        for cpu, evs in pf.items():
            for e in evs:
                k = e.WhichOneof('event')
                m = getattr(e, k)
                pairs = {'sched_switch': [(m.prev_pid, m.prev_comm) if k == 'sched_switch' else None,
                                          (m.next_pid, m.next_comm) if k == 'sched_switch' else None],
                         'task_rename': [(m.pid, m.newcomm) if k == 'task_rename' else None],
                         'task_newtask': [(m.pid, m.comm) if k == 'task_newtask' else None],
                         'sched_waking': [(m.pid, m.comm) if k == 'sched_waking' else None],
                         }.get(k, [])
                for t in pairs:
                    names.setdefault(t[0], set()).add(t[1])
                if k == 'sys_enter':
                    sysno.setdefault((e.pid, m.id), 0)
                    sysno[(e.pid, m.id)] += 1
        getppid = {e['f']['id'] for e in rep if e['name'] == 'syscall_entry' and
                   e['f'].get('id_label') == 'getppid'}
        for tid, pid, comm in lines:
            tid, pid = int(tid), int(pid)
            if tid == pid:
                prs = tree_procs.get(pid, [])
                ok = prs and os.path.basename(prs[-1].cmdline[0]) == 'cli-workload'
                if pid != main_pid:
                    ok = ok and all(p.ppid == main_pid for p in prs)
                check(ok, 'ProcessTree: process %d, named cli-workload%s' % (
                    pid, '' if pid == main_pid else ', child of %d' % main_pid),
                      repr([(p.ppid, list(p.cmdline)) for p in prs]))
            else:
                check(tree_threads.get(tid) == [pid],
                      'ProcessTree: thread %d of process %d' % (tid, pid),
                      repr(tree_threads.get(tid)))
            check(comm in names.get(tid, set()), 'thread %d is named %s' % (tid, comm),
                  repr(names.get(tid)))
        if args.calls:
            check(len(getppid) == 1, 'report names getppid\'s number (%s)' % sorted(getppid))
            for tid in sorted({int(l[0]) for l in lines}):
                want = args.calls * sum(1 for l in lines if int(l[0]) == tid)
                got = sum(sysno.get((tid, n), 0) for n in getppid)
                check(got == want, 'thread %d: %d sys_enter getppid (%d)' % (tid, want, got))
    kinds = {}
    for evs in pf.values():
        for e in evs:
            k = e.WhichOneof('event')
            kinds[k] = kinds.get(k, 0) + 1
    for k in args.require:
        check(kinds.get(k, 0) > 0, 'the export has %s events (%d)' % (k, kinds.get(k, 0)))
    prints = [text_of(e.print.buf).rstrip(b'\n') for evs in pf.values() for e in evs
              if e.WhichOneof('event') == 'print']
    for m in args.marker:
        check(m.encode() in prints, 'a print event "%s"' % m, repr(prints[:10]))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
