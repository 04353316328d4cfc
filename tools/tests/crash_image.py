#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Read a persistent-region image (include/uapi/linux/ringtrace_persist.h)
the way the crash tests need to, without the recovery of `ringtrace recover`:

  crash_image.py IMAGE LIFECYCLE PREFIX

checks the header (magic, layout, header size, xxh64 checksum, areas inside
the region), that the state's lifecycle is LIFECYCLE (empty, live,
unloaded), and each used slice: its slot counters committed something, and
each slot's packet (the generation its counter says is the latest) is a CTF
packet of this trace and of the slice's CPU.  Then it reads the markers
"PREFIX-CPU-NNNNNN" (marker records: u16 length, then the text) from the
committed bytes of those packets, in packet order, and prints one line per
CPU that has any:

  markers CPU FIRST LAST COUNT

One "ok - ..." / "not ok - ..." line per check (tools/tests/check.sh's
check_output reads them); exit 1 if one failed.
"""
import ctypes
import os
import re
import struct
import sys

MAGIC = 0x5349535245505452
LAYOUT = 1
HEADER_PAGE = 4096
HEADER_SIZE_VER1 = 520
CTF_MAGIC = 0xC1FC1FC1
LIFECYCLES = {"empty": 0, "live": 1, "unloaded": 2}

# struct ringtrace_persist_header, field by field (little endian, no holes).
HEADER = struct.Struct(
    "<QIIQQII16s72s72s20sI16sQQ"   # magic .. armed_mono_ns
    "QIIQQ"                        # subbuf_size .. counters_size
    "QQQQ2QQ2QQQQ"                 # areas
    "16QQ")                        # reserved, checksum
HEADER_FIELDS = (
    "magic layout header_size region_base region_size source page_size "
    "trace_uuid release version build_id build_id_len boot_id "
    "armed_realtime_ns armed_mono_ns subbuf_size num_subbufs nr_slices "
    "slice_size counters_size state_offset state_size slices_offset "
    "slices_size metadata_offset0 metadata_offset1 metadata_size "
    "ksyms_offset0 ksyms_offset1 ksyms_size rings_offset rings_size").split()
SLICE = struct.Struct("<IIQQQ")
SLOT = struct.Struct("<QQ")
# struct ringtrace_packet_header up to cpu_id.
PACKET = struct.Struct("<I16sIQQQQQQQI")

failed = 0


def check(what, ok):
    global failed
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failed += 1
    return ok


def xxh64(data):
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64)
    return lib.XXH64(data, len(data), 0)


def header_of(img):
    values = HEADER.unpack_from(img, 0)
    h = dict(zip(HEADER_FIELDS, values[:len(HEADER_FIELDS)]))
    h["reserved"] = values[len(HEADER_FIELDS):-1]
    h["checksum"] = values[-1]
    return h


class Image:
    """The parts of the image read (pread): the 16 MiB region is mostly
    rings nobody wrote, and under TCG every byte copied costs."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)

    def read(self, offset, size):
        out = b""
        while len(out) < size:
            got = os.pread(self.fd, size - len(out), offset + len(out))
            if not got:
                break
            out += got
        return out

    def size(self):
        """Bytes up to the end (a debugfs file says 0): the first offset,
        a page multiple, that reads nothing."""
        lo, hi = 0, 1 << 40
        while hi - lo > HEADER_PAGE:
            mid = (lo + hi) // 2 // HEADER_PAGE * HEADER_PAGE
            if self.read(mid, 1):
                lo = mid
            else:
                hi = mid
        return hi if self.read(lo, 1) else lo


def main():
    path, lifecycle, prefix = sys.argv[1:4]
    try:
        img = Image(path)
        page = img.read(0, HEADER_PAGE)
        size = img.size()
    except OSError as e:
        check(f"read {path}: {e.strerror}", False)
        return 1
    if not check(f"the image has a header page ({size} bytes)",
                 len(page) == HEADER_PAGE):
        return 1
    h = header_of(page)
    if not check(f"magic RTPERSIS ({h['magic']:#x})", h["magic"] == MAGIC):
        return 1
    check(f"layout {h['layout']}, header_size {h['header_size']}",
          h["layout"] == LAYOUT and h["header_size"] == HEADER_SIZE_VER1 ==
          HEADER.size)
    page = bytearray(page)
    page[HEADER.size - 8:HEADER.size] = bytes(8)
    check(f"the header's checksum ({h['checksum']:#x}) is its xxh64",
          xxh64(bytes(page)) == h["checksum"])
    check("reserved fields zero", not any(h["reserved"]))
    check(f"region_size {h['region_size']} is the image's",
          h["region_size"] == size)
    inside = (h["rings_offset"] + h["rings_size"] <= size and
              h["state_offset"] + 8 <= size and
              h["slices_offset"] + h["nr_slices"] * SLICE.size <= size)
    if not check("the areas are inside the region", inside):
        return 1
    state = struct.unpack("<I", img.read(h["state_offset"], 4))[0]
    check(f"lifecycle {state}, {lifecycle} wanted",
          state == LIFECYCLES[lifecycle])

    sub, num = h["subbuf_size"], h["num_subbufs"]
    marker_re = re.compile(rb"(..)(" + re.escape(prefix.encode()) +
                           rb"-(\d+)-(\d{6}))", re.S)
    used = 0
    found = {}
    table = img.read(h["slices_offset"], h["nr_slices"] * SLICE.size)
    for i in range(h["nr_slices"]):
        cpu, flags, counters, ring, ring_size = SLICE.unpack_from(
            table, i * SLICE.size)
        if not flags & 1:
            continue
        used += 1
        raw = img.read(counters, num * SLOT.size)
        if not check(f"slice {i} (cpu {cpu}): its counters are inside the "
                     f"region", len(raw) == num * SLOT.size):
            continue
        slots = [SLOT.unpack_from(raw, j * SLOT.size) for j in range(num)]
        check(f"slice {i} (cpu {cpu}): its slot counters committed bytes",
              sum(c for c, _ in slots) > 0)
        packets = []
        bad = []
        for j, (commit, _) in enumerate(slots):
            if not commit:
                continue
            # The latest generation's committed bytes (all of a closed one).
            gen = (commit - 1) // sub
            data = img.read(ring + HEADER_PAGE + j * sub, commit - gen * sub)
            if len(data) < PACKET.size:
                bad.append(j)
                continue
            p = PACKET.unpack_from(data, 0)
            if p[0] != CTF_MAGIC or p[1] != h["trace_uuid"] or p[10] != cpu:
                bad.append(j)
                continue
            packets.append((p[8], data))
        check(f"slice {i} (cpu {cpu}): every slot written holds a packet of "
              f"this trace and cpu (bad: {bad})", not bad)
        for _, data in sorted(packets, key=lambda p: p[0]):
            for m in marker_re.finditer(data):
                if struct.unpack("<H", m.group(1))[0] != len(m.group(2)):
                    continue
                mcpu, n = int(m.group(3)), int(m.group(4))
                found.setdefault(mcpu, []).append((cpu, n))
    check(f"{used} slices used", used > 0)
    for mcpu in sorted(found):
        seq = found[mcpu]
        nums = [n for _, n in seq]
        check(f"cpu {mcpu}'s markers are in its own ring",
              all(c == mcpu for c, _ in seq))
        check(f"cpu {mcpu}'s markers {nums[0]}..{nums[-1]} are in order, "
              f"none missing or repeated",
              nums == list(range(nums[0], nums[0] + len(nums))))
        print(f"markers {mcpu} {nums[0]} {nums[-1]} {len(nums)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
