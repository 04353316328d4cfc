#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ctf-tsdelta.py: how much of a ringtrace stream's compressed size is time.

Usage: ctf-tsdelta.py --size ID=BYTES [--size ID=BYTES]... STREAM OUTPREFIX

STREAM is one plain CTF stream file of ringtrace (`ringtrace unpack` output,
e.g. DIR-ctf/cpu0) whose events all have fixed-size payloads, given per
event id with --size (see `available_events` and events.rst; syscall_entry
is 56 bytes, syscall_exit 16).  Writes two rewritten copies, event for
event, packet headers unchanged:

  OUTPREFIX.delta   every event header is the 4-byte compact form with the
                    nanoseconds since the previous event (ftrace's way)
                    instead of the low 27 bits of the absolute time
  OUTPREFIX.nots    every event header holds the event id only: the
                    payloads alone

and prints the event count.  Compress all three with the daemon's level
(zstd -1) to see what the timestamp encoding costs on disk.  A host-side
analysis tool for Documentation/ringtrace/benchmarks.rst, not a decoder:
it stops at the first event it cannot size.
"""
import argparse
import struct
import sys

MAGIC = 0xC1FC1FC1
PACKET_HEADER = 88          # sizeof(struct ringtrace_packet_header)
COMPACT_TS_BITS = 27
EXTENDED = 31


def parse_size(arg):
    try:
        ev_id, size = (int(x, 0) for x in arg.split("=", 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"want ID=BYTES, got '{arg}'")
    if ev_id < 0 or size < 0:
        raise argparse.ArgumentTypeError(f"want ID=BYTES, got '{arg}'")
    return ev_id, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=parse_size, action="append", required=True,
                    metavar="ID=BYTES", help="payload size of event ID")
    ap.add_argument("stream")
    ap.add_argument("outprefix")
    args = ap.parse_args()
    sizes = dict(args.size)

    with open(args.stream, "rb") as f:
        data = f.read()
    delta, nots = bytearray(), bytearray()
    events = off = 0
    while off < len(data):
        if len(data) - off < PACKET_HEADER:
            sys.exit(f"{args.stream}: cut packet at byte {off}")
        magic, = struct.unpack_from("<I", data, off)
        if magic != MAGIC:
            sys.exit(f"{args.stream}: no packet magic at byte {off}")
        ts_begin, _, content_bits = struct.unpack_from("<QQQ", data, off + 32)
        size = content_bits // 8
        pkt = data[off:off + size]
        delta += pkt[:PACKET_HEADER]
        nots += pkt[:PACKET_HEADER]
        pos, prev = PACKET_HEADER, ts_begin
        while pos < size:
            word, = struct.unpack_from("<I", pkt, pos)
            ev_id = word & 31
            if ev_id == EXTENDED:
                ev_id = word >> 5
                ts, = struct.unpack_from("<Q", pkt, pos + 4)
                hlen = 12
            else:
                # Replace the low 27 bits; one wrap at most (see the uapi).
                mask = (1 << COMPACT_TS_BITS) - 1
                ts = (prev & ~mask) | (word >> 5)
                if ts < prev:
                    ts += 1 << COMPACT_TS_BITS
                hlen = 4
            if ev_id not in sizes:
                sys.exit(f"{args.stream}: event id {ev_id} at byte {off + pos}"
                         f" has no --size")
            payload = pkt[pos + hlen:pos + hlen + sizes[ev_id]]
            step = min(ts - prev, (1 << COMPACT_TS_BITS) - 1)
            delta += struct.pack("<I", ev_id | step << 5) + payload
            nots += struct.pack("<I", ev_id) + payload
            prev = ts
            pos += hlen + sizes[ev_id]
            events += 1
        off += size
    with open(args.outprefix + ".delta", "wb") as f:
        f.write(delta)
    with open(args.outprefix + ".nots", "wb") as f:
        f.write(nots)
    print(f"{events} events")


if __name__ == "__main__":
    main()
