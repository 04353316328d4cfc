#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn an ftrace text trace into payloads for `rt-markers -F`.

Until ringtrace has its own probes, the daemon's compression is measured on
real kernel activity captured with ftrace (sched, irq, softirq, raw_syscalls)
and written back as ringtrace_marker events, one per ftrace event, on the
CPU it happened on.  Each payload is one type byte followed by the event's
fields in the fixed binary layout a ringtrace probe records, with LTTng's
field names:

  1 sched_switch       prev_comm[16] prev_tid:i32 prev_prio:i32
                       prev_state:i64 next_comm[16] next_tid:i32 next_prio:i32
  2 sched_wakeup       comm[16] tid:i32 prio:i32 target_cpu:i32
  3 irq_handler_entry  irq:i32 name (NUL-terminated)
  4 irq_handler_exit   irq:i32 ret:i32
  5 softirq_entry      vec:u32
  6 softirq_exit       vec:u32
  7 sys_enter          id:i64 args:u64[6]
  8 sys_exit           id:i64 ret:i64

Output records: u16 cpu, u16 length, payload (little endian), in trace order.
Usage: ftrace2rt.py TRACE_TEXT OUT_FILE  (prints per-event counts)
"""

import re
import struct
import sys

LINE = re.compile(r'^\s*(.+)-(\d+)\s+\[(\d+)\]\s+\S+\s+[\d.]+: (\w+): (.*)$')
KV = re.compile(r'(\w+)=(\S+)')
STATE = {'R': 0, 'S': 1, 'D': 2, 'T': 4, 't': 8, 'X': 16, 'Z': 32,
         'P': 64, 'I': 0x402, 'R+': 0x100}


def comm(s):
    return s.encode()[:15].ljust(16, b'\0')


def fields(rest):
    return dict(KV.findall(rest))


def encode(name, rest):
    if name == 'sched_switch':
        prev, nxt = rest.split(' ==> ')
        p, n = fields(prev), fields(nxt)
        return 1, comm(p['prev_comm']) + struct.pack(
            '<iiq', int(p['prev_pid']), int(p['prev_prio']),
            STATE.get(p['prev_state'], 0x200)) + comm(n['next_comm']) + \
            struct.pack('<ii', int(n['next_pid']), int(n['next_prio']))
    if name == 'sched_wakeup':
        f = fields(rest)
        return 2, comm(f['comm']) + struct.pack(
            '<iii', int(f['pid']), int(f['prio']), int(f['target_cpu']))
    if name == 'irq_handler_entry':
        f = fields(rest)
        return 3, struct.pack('<i', int(f['irq'])) + f['name'].encode() + b'\0'
    if name == 'irq_handler_exit':
        f = fields(rest)
        ret = {'handled': 1, 'unhandled': 0}.get(f['ret'], 2)
        return 4, struct.pack('<ii', int(f['irq']), ret)
    if name in ('softirq_entry', 'softirq_exit'):
        vec = int(fields(rest)['vec'])
        return (5 if name == 'softirq_entry' else 6), struct.pack('<I', vec)
    if name == 'sys_enter':
        m = re.match(r'NR (-?\d+) \(([0-9a-f, ]*)\)', rest)
        args = [int(a, 16) for a in m.group(2).split(', ')][:6]
        args += [0] * (6 - len(args))
        return 7, struct.pack('<q6Q', int(m.group(1)), *args)
    if name == 'sys_exit':
        m = re.match(r'NR (-?\d+) = (-?\d+)', rest)
        return 8, struct.pack('<qq', int(m.group(1)), int(m.group(2)))
    return None


def main():
    counts = {}
    with open(sys.argv[1], errors='replace') as src, \
            open(sys.argv[2], 'wb') as out:
        for line in src:
            m = LINE.match(line)
            if not m:
                continue
            try:
                ev = encode(m.group(4), m.group(5))
            except (KeyError, ValueError, AttributeError):
                ev = None
            if ev is None:
                continue
            kind, payload = ev
            data = bytes([kind]) + payload
            out.write(struct.pack('<HH', int(m.group(3)), len(data)) + data)
            counts[m.group(4)] = counts.get(m.group(4), 0) + 1
    for name in sorted(counts):
        print(f'{name} {counts[name]}')


if __name__ == '__main__':
    main()
