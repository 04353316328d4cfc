#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The cli suite's checks of export's text and JSON, in one process.

    export_check.py [--systrace EXPORT FTRACE TIDS] [--chrome-json JSON TIDS N]

systrace: EXPORT (`ringtrace export -f systrace`) against FTRACE, the
kernel's own ftrace text of the same workload in the same boot (with
options/record-tgid): the header, every line's prefix, nanosecond
timestamps, each workload thread's TGID (TIDS: its "tid pid comm"
lines), and per event the layout of its lines, numbers and strings
replaced, against the kernel's.

chrome-json: JSON (`export -f chrome-json`) has N getppid slices on each
thread of TIDS (2N for a tid with two lines: the exec'd child), each
thread named.

One "ok - ..." / "not ok - ..." line per check and "# ..." notes
(tools/tests/check.sh's check_output reads them); exit status 1 if any
check failed.  A shell reading the same files checked each line with a
process or two per event, seconds under TCG where this takes one.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, note  # noqa: E402
import tap  # noqa: E402


# The line prefix, as the kernel prints it with options/record-tgid:
# comm-tid (tgid) [cpu] flags seconds (ours with 9 decimals, the kernel's
# 6), then the event's name.  Bytes: the files are read as the C locale
# reads them.  Each line is matched once: its tid, tgid, decimals and
# event come from that match.
LINE = re.compile(rb' *.{1,16}-([0-9]+) +\(( *[0-9]+|-------)\) \[[0-9]{3}\] [^ ]+ +'
                  rb'[0-9]+\.([0-9]+): (([a-z_]+): )')

# shape: the line after its prefix, each value replaced by # (a decimal
# number) or S (anything else), keeping names, order and layout.
SHAPES = [
    (re.compile(rb'=-?[0-9]+( |\]|$)'), rb'=#\1'),
    (re.compile(rb'=[^ #][^ ]*'), rb'=S'),
    (re.compile(rb'^([a-z_]+): NR [0-9-]+ \(.*\)$'), rb'\1: NR V (ARGS)'),
    (re.compile(rb'^([a-z_]+): NR [0-9-]+ = [0-9-]+$'), rb'\1: NR V = V'),
]

EVENTS = ["sched_switch", "sched_wakeup", "sched_wakeup_new",
          "sched_process_fork", "sched_process_exec", "sched_process_exit",
          "task_rename", "sys_enter", "sys_exit", "irq_handler_entry",
          "irq_handler_exit", "softirq_entry", "softirq_exit"]


def shape(line, m):
    line = line[m.start(4):]
    for pat, rep in SHAPES:
        line = pat.sub(rep, line)
    return line


def lines_of(path):
    with open(path, "rb") as f:
        return f.read().splitlines()


def tids_of(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def parsed(lines):
    """(line, match) of each line not a comment; match None: no prefix."""
    return [(line, LINE.match(line)) for line in lines if not line.startswith(b"#")]


def systrace(export_path, ftrace_path, tids_path):
    export = lines_of(export_path)
    body = parsed(export)
    kbody = parsed(lines_of(ftrace_path))
    check(export[:1] == [b"# tracer: nop"], "systrace starts with '# tracer: nop'")
    bad = sum(1 for _, m in body if not m)
    check(bad == 0 and len(body) > 0,
          "every systrace line has ftrace's prefix (%d of %d not)" % (bad, len(body)))
    bad = sum(1 for _, m in kbody if not m)
    check(bad == 0 and len(kbody) > 0,
          "so has every line of the kernel's own, with record-tgid (%d of %d not)"
          % (bad, len(kbody)))
    bad = sum(1 for _, m in body if not m or len(m.group(2)) != 7 or len(m.group(3)) != 9)
    check(bad == 0, "systrace timestamps have nanoseconds (%d lines not)" % bad)

    # The TGID column: each workload thread's lines name its process.
    tids = tids_of(tids_path)
    tgids = {}
    for _, m in body:
        if m:
            per = tgids.setdefault(m.group(1).decode(), {})
            tgid = m.group(2).strip().decode()
            per[tgid] = per.get(tgid, 0) + 1
    wrong = False
    for tid, pid, _comm in tids:
        per = tgids.get(tid, {})
        n = per.get(pid, 0)
        x = sum(per.values()) - n
        if not (n > 0 and x == 0):
            note("tid %s: %d lines with tgid %s, %d with another" % (tid, n, pid, x))
            wrong = True
    check(not wrong and len(tids) == 5,
          "systrace's TGID column: each workload thread's process (%d threads)" % len(tids))

    kfirst, ours = {}, {}
    for line, m in kbody:
        if m and m.group(5) not in kfirst:
            kfirst[m.group(5)] = shape(line, m)
    for line, m in body:
        if m:
            ours.setdefault(m.group(5), []).append((line, m))
    for ev in EVENTS:
        key = ev.encode()
        kpat = kfirst.get(key)
        if kpat is None:
            # Interrupts depend on the guest's devices; the rest the
            # workload makes for sure.
            if ev.startswith(("irq_", "softirq_")):
                note("ftrace printed no %s in this boot: not compared" % ev)
            else:
                check(False, "ftrace printed %s for the workload" % ev)
            continue
        mine = [shape(line, m) for line, m in ours.get(key, [])]
        differ = [s for s in mine if s != kpat]
        check(len(mine) > 0 and not differ,
              "systrace %s lines (%d) have the kernel's layout '%s' (%d differ)"
              % (ev, len(mine), kpat.decode(errors="replace"), len(differ)))
        for s in differ[:2]:
            note("ours: " + s.decode(errors="replace"))


def chrome_json(json_path, tids_path, n):
    with open(json_path) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    tids = tids_of(tids_path)
    ok = len(tids) == 5
    if not ok:
        note("the workload's tid file has no 5 lines")
    slices, named = {}, set()
    for e in events:
        if e.get("ph") == "X" and e.get("name") == "getppid":
            slices[e.get("tid")] = slices.get(e.get("tid"), 0) + 1
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            named.add(e.get("tid"))
    for tid, _pid, comm in tids:
        # The exec'd child has two lines (two names): 2N slices for its tid.
        want = n * sum(1 for t in tids if t[0] == tid)
        got = slices.get(int(tid), 0)
        if got != want:
            note("tid %s (%s): %d getppid slices, want %d" % (tid, comm, got, want))
            ok = False
        if int(tid) not in named:
            note("tid %s: no thread_name" % tid)
            ok = False
    check(ok, "chrome-json: JSON, N getppid slices on each workload thread, threads named")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systrace", nargs=3, metavar=("EXPORT", "FTRACE", "TIDS"))
    ap.add_argument("--chrome-json", nargs=3, metavar=("JSON", "TIDS", "N"))
    args = ap.parse_args()
    if not args.systrace and not args.chrome_json:
        ap.error("nothing to check")
    if args.systrace:
        systrace(*args.systrace)
    if args.chrome_json:
        chrome_json(args.chrome_json[0], args.chrome_json[1], int(args.chrome_json[2]))
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
