#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check the crash path's state area of a persistent-region image
(include/uapi/linux/ringtrace_persist.h, "The mutable state"):

  crash_entry.py [--entry N] IMAGE KALLSYMS REASON MESSAGE FUNCTION [CONTEXT]

wants exactly one hook run (crash_claimed 1, terminal 1 for a terminal
REASON), its entry valid (RINGTRACE_PERSIST_CRASH_VALID, xxh64, reserved
zero) with REASON (panic, oops, emerg_restart, shutdown) and MESSAGE,
written in CONTEXT (task, irq, nmi; default task), a task, a time after
arming, and a kernel
stack that names FUNCTION when symbolized with KALLSYMS (the next boot's
/proc/kallsyms: with nokaslr the kernel's addresses are the crashed
boot's; the hook's own frames, in ringtrace.ko, name whatever boot 2's
module has at their addresses).  Then every used slice's snapshot: taken, of the slice's CPU,
its reserve position at or past the bytes its slot counters committed and
less than a sub-buffer beyond (a record in flight at most), its clock
floor before the entry; on the CPU that ran the hook, none open and the
counters exactly at the position.  A shutdown stops no CPU before its
hook (kernel_restart() dumps, then machine_restart() stops them): the
writers wrote on, so each snapshot must only be no later than what the
counters committed in the end (less than a sub-buffer beyond), its clock
floor taken, and on the hook's CPU nothing open.  Nor does an emergency
restart (sysrq b): the same.

FUNCTION may be several, comma-separated: the stack must name each.
With --entry N the entry checked is entry N, after N oopses (the hooks
that ran before it, each a whole entry of reason oops): N + 1 hooks ran.

One "ok - ..." / "not ok - ..." line per check; "entry cpu C" for the
host; exit 1 if one failed.
"""
import bisect
import struct
import sys

from crash_image import (HEADER_PAGE, SLICE, SLOT, Image, check, header_of,
                         xxh64)
import crash_image

CRASH_OFFSET = 256
CRASH_MAX = 8
CRASH_VALID = 0x48534152
SNAP_OFFSET = 16384
REASONS = {"panic": 1, "oops": 2, "emerg_restart": 3, "shutdown": 4}
# RINGTRACE_PERSIST_CRASH_NMI, _IRQ
CONTEXTS = {"task": 0, "nmi": 1, "irq": 2}

STATE = struct.Struct("<IIII6Q")
# struct ringtrace_persist_crash
CRASH = struct.Struct("<IIIIQQii16sII64Q1024s4QQ")
# struct ringtrace_persist_snap
SNAP = struct.Struct("<II11Q4Q")


def cstr(b):
    return b.split(b"\0", 1)[0].decode(errors="replace")


def kallsyms(path):
    """Sorted (address, name) of the text symbols."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tT" and int(parts[0], 16):
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def symbolize(syms, ip):
    i = bisect.bisect_right(syms, (ip, "\xff")) - 1
    return syms[i][1] if i >= 0 else hex(ip)


def main():
    args = sys.argv[1:]
    nth = 0
    if args[:1] == ["--entry"]:
        nth, args = int(args[1]), args[2:]
    path, ksyms, reason, message, function = args[:5]
    context = args[5] if len(args) > 5 else "task"
    running = reason in ("shutdown", "emerg_restart")
    img = Image(path)
    h = header_of(img.read(0, HEADER_PAGE))
    st = STATE.unpack(img.read(h["state_offset"], STATE.size))
    claimed, terminal = st[1], st[2]
    check(f"{nth + 1} crash hook(s) ran ({claimed} entries claimed)",
          claimed == nth + 1)
    check(f"terminal count {terminal}, {int(reason != 'oops')} wanted",
          terminal == int(reason != "oops"))
    if claimed < nth + 1:
        return 1
    for i in range(nth):
        e = CRASH.unpack(img.read(h["state_offset"] + CRASH_OFFSET +
                                  i * CRASH.size, CRASH.size))
        check(f"entry {i}: a whole oops ({e[0]:#x}, reason {e[1]})",
              e[0] == CRASH_VALID and e[1] == REASONS["oops"])
    raw = img.read(h["state_offset"] + CRASH_OFFSET + nth * CRASH.size,
                   CRASH.size)
    f = CRASH.unpack(raw)
    valid, ereason, flags, cpu, mono, ip, tid, pid, comm, depth = f[:10]
    ips = f[11:11 + 64]
    msg = cstr(f[75])
    if not check(f"entry {nth} is valid ({valid:#x})", valid == CRASH_VALID):
        return 1
    blank = bytearray(raw)
    blank[0:4] = bytes(4)
    blank[-8:] = bytes(8)
    check(f"entry {nth}'s checksum ({f[-1]:#x}) is its xxh64",
          xxh64(bytes(blank)) == f[-1])
    check(f"entry {nth}'s reserved fields are zero",
          f[10] == 0 and not any(f[76:80]))
    check(f"reason {ereason}, {reason} ({REASONS[reason]}) wanted",
          ereason == REASONS[reason])
    check(f"message {msg!r}", msg == message)
    check(f"task {cstr(comm)!r} tid {tid} pid {pid}", tid > 0 and pid > 0 and
          cstr(comm))
    check(f"flags {flags:#x}: written in {context} context",
          flags == CONTEXTS[context])
    check(f"time {mono} after arming ({h['armed_mono_ns']})",
          mono > h["armed_mono_ns"])
    syms = kallsyms(ksyms)
    names = [symbolize(syms, a) for a in ips[:depth]]
    check(f"a stack of {depth} frames: {' '.join(names)}",
          0 < depth <= 64 and not any(ips[depth:]))
    # GCC's split-off cold part: "kernel_restart.cold" (6.1's build).
    for fn in function.split(","):
        check(f"the stack names {fn}",
              any(n == fn or n.startswith(fn + ".") for n in names))
    print(f"entry cpu {cpu}")

    sub, num = h["subbuf_size"], h["num_subbufs"]
    table = img.read(h["slices_offset"], h["nr_slices"] * SLICE.size)
    cpus = []
    for i in range(h["nr_slices"]):
        scpu, sflags, counters, _, _ = SLICE.unpack_from(table, i * SLICE.size)
        if not sflags & 1:
            continue
        cpus.append(scpu)
        s = SNAP.unpack(img.read(h["state_offset"] + SNAP_OFFSET +
                                 i * SNAP.size, SNAP.size))
        svalid, snap_cpu, offset, nesting, last_ts = s[:5]
        if not check(f"slice {i} (cpu {scpu}): snapshot taken, of cpu "
                     f"{snap_cpu}", svalid == 1 and snap_cpu == scpu):
            continue
        raw = img.read(counters, num * SLOT.size)
        committed = sum(SLOT.unpack_from(raw, j * SLOT.size)[0]
                        for j in range(num))
        if running:
            check(f"slice {i}: reserve position {offset} no later than the "
                  f"{committed} bytes committed in the end, less than a "
                  f"sub-buffer beyond", 0 < offset < committed + sub)
        else:
            check(f"slice {i}: reserve position {offset} holds the "
                  f"{committed} bytes committed, less than a sub-buffer more",
                  committed <= offset < committed + sub)
        if running:
            check(f"slice {i}: clock floor {last_ts} taken", last_ts > 0)
        else:
            check(f"slice {i}: clock floor {last_ts} before the entry",
                  0 < last_ts <= mono)
        check(f"slice {i}: reserved fields zero", not any(s[13:]))
        if scpu == cpu and running:
            check(f"slice {i}: the CPU that ran the hook had nothing open "
                  f"(nesting {nesting})", nesting == 0)
        elif scpu == cpu:
            check(f"slice {i}: the CPU that panicked had nothing open "
                  f"(nesting {nesting}, {offset - committed} bytes "
                  f"uncommitted)", nesting == 0 and offset == committed)
    check(f"the entry's cpu {cpu} is a slice's ({cpus})", cpu in cpus)
    return 1 if crash_image.failed else 0


if __name__ == "__main__":
    sys.exit(main())
