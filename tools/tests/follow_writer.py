#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Replay a trace directory into another as ringtraced writes one.

For tools/tests/follow-host.sh: the packets of SRC's plain per-CPU streams
(gentrace.py) go to DST/cpuN-SEQ.zst as ringtraced's drain threads write
them (lib/chunk.h): one stored zstd frame per packet, appended; each frame
in two writes with a pause between (a torn frame for whoever reads then);
every --rotate packets a CPU's chunk closes, the next is created, and the
closed one is packed behind, as daemon/packer.c does: compressed into a
hidden file renamed over it.  Metadata and the empty first chunks first,
then it waits for DST/.go (the reader is ready).  Writes DST/.done at the
end.
"""

import argparse
import os
import shutil
import struct
import subprocess
import time

CONTENT_SIZE_OFF = 4 + 16 + 4 + 8 + 8 + 8   # struct ringtrace_packet_header


def packets(path):
    data = open(path, 'rb').read()
    off = 0
    while off < len(data):
        size = struct.unpack_from('<Q', data, off + CONTENT_SIZE_OFF)[0] // 8
        yield data[off:off + size]
        off += size


def stored_frame(pkt):
    out = struct.pack('<IBI', 0xFD2FB528, 0xA0, len(pkt))
    off = 0
    while True:
        part = pkt[off:off + (128 << 10)]
        last = off + len(part) == len(pkt)
        bh = len(part) << 3 | int(last)
        out += bytes([bh & 0xff, (bh >> 8) & 0xff, bh >> 16]) + part
        off += len(part)
        if last:
            return out


def pack(dst, name):
    tmp = os.path.join(dst, '.' + name + '.tmp')
    with open(os.path.join(dst, name), 'rb') as f:
        raw = subprocess.run(['zstd', '-q', '-d', '-c'], stdin=f,
                             stdout=subprocess.PIPE, check=True).stdout
    packed = subprocess.run(['zstd', '-q', '-c', '--check'], input=raw,
                            stdout=subprocess.PIPE, check=True).stdout
    with open(tmp, 'wb') as f:
        f.write(packed)
    os.rename(tmp, os.path.join(dst, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('--rotate', type=int, default=5, help='packets a chunk')
    ap.add_argument('--pause', type=float, default=0.002)
    a = ap.parse_args()

    os.makedirs(a.dst, exist_ok=True)
    shutil.copy(os.path.join(a.src, 'metadata'), os.path.join(a.dst, '.md'))
    os.rename(os.path.join(a.dst, '.md'), os.path.join(a.dst, 'metadata'))
    cpus = sorted(int(n[3:]) for n in os.listdir(a.src)
                  if n.startswith('cpu') and n[3:].isdigit())
    streams = {c: list(packets(os.path.join(a.src, 'cpu%d' % c))) for c in cpus}
    seq = {c: 0 for c in cpus}
    count = {c: 0 for c in cpus}
    # The chunks exist (empty) at start, as ringtraced's do; then DST/.go.
    files = {c: open(os.path.join(a.dst, 'cpu%d-%06d.zst' % (c, 0)), 'ab')
             for c in cpus}
    while not os.path.exists(os.path.join(a.dst, '.go')):
        time.sleep(0.01)
    i = 0
    while any(streams.values()):
        for c in cpus:
            if not streams[c]:
                continue
            frame = stored_frame(streams[c].pop(0))
            cut = 5 + i % 7
            files[c].write(frame[:cut])
            files[c].flush()
            time.sleep(a.pause)
            files[c].write(frame[cut:])
            files[c].flush()
            count[c] += 1
            if count[c] % a.rotate == 0 and streams[c]:
                files[c].close()
                old = 'cpu%d-%06d.zst' % (c, seq[c])
                seq[c] += 1
                files[c] = open(os.path.join(a.dst, 'cpu%d-%06d.zst' % (c, seq[c])), 'ab')
                pack(a.dst, old)
        i += 1
    for f in files.values():
        f.close()
    open(os.path.join(a.dst, '.done'), 'w').close()


if __name__ == '__main__':
    main()
