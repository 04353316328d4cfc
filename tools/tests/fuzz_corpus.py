#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Inputs of tools/tests/fuzz_decoder: trace directories packed in one file.

  fuzz_corpus.py pack DIR FILE      a trace directory as a fuzzer input
  fuzz_corpus.py unpack FILE DIR    an input (a crash, say) as a directory
                                    that `ringtrace report DIR` reads
  fuzz_corpus.py seeds REAL OUT     the seed corpus (tools/tests/fuzz/seeds)

An input is its files one after another: u8 name length, the name, u32
little-endian data length, the data (fuzz_decoder.c reads them).

The seeds are cut from real traces, recorded in a TCG guest by
`ringtrace record -b 64K` (4 KiB packets) into REAL/packed (compressed
chunks, state dump on) and REAL/stored (--level store: stored frames),
and from gentrace.py's synthetic ones (losses, overwritten packets,
rotation, a killed writer's partial frame and packet, padding):
tools/tests/fuzz/README.md says how.  A few packets each, so that the
fuzzer runs fast.
"""

import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = struct.Struct('<I16sIQQQQQQQII')


def pack(files):
    """[(name, bytes)] -> one input."""
    out = b''
    for name, data in files:
        n = name.encode()
        out += struct.pack('<B', len(n)) + n + struct.pack('<I', len(data)) + data
    return out


def unpack(blob):
    files, i = [], 0
    while i < len(blob):
        n = blob[i]
        if not n or i + 1 + n + 4 > len(blob):
            break
        name = blob[i + 1:i + 1 + n].decode('latin-1')
        size = struct.unpack_from('<I', blob, i + 1 + n)[0]
        i += 5 + n
        files.append((name, blob[i:i + size]))
        i += size
    return files


# The hidden file of a trace directory (lib/ksyms.h), and its symbol
# store (lib/usyms.h), whose files an input names USYMS_DIR/xx/yyyy.
KSYMS_FILE = '.ringtrace-ksyms.zst'
USYMS_DIR = '.ringtrace-buildid'
HEX = set('0123456789abcdef')


def store_name(name):
    p = name.split('/')
    return len(p) == 3 and p[0] == USYMS_DIR and len(p[1]) == 2 and \
        len(p[2]) >= 2 and set(p[1] + p[2]) <= HEX


def read_dir(d):
    files = [(f, open(os.path.join(d, f), 'rb').read())
             for f in sorted(os.listdir(d)) if os.path.isfile(os.path.join(d, f)) and
             (not f.startswith('.') or f == KSYMS_FILE)]
    store = os.path.join(d, USYMS_DIR)
    for sub in sorted(os.listdir(store)) if os.path.isdir(store) else []:
        for f in sorted(os.listdir(os.path.join(store, sub))):
            name = '%s/%s/%s' % (USYMS_DIR, sub, f)
            if store_name(name):
                files.append((name, open(os.path.join(d, name), 'rb').read()))
    return files


def unchecked_store(files):
    """Store files with their zstd frame made raw blocks without a
    checksum: a mutation of the binary reaches the ELF reader."""
    out = []
    for name, data in files:
        if store_name(name):
            nl = data.index(b'\n') + 1
            image = subprocess.run(['zstd', '-d', '-q', '-c'], input=data[nl:],
                                   stdout=subprocess.PIPE, check=True).stdout
            frame = struct.pack('<IBI', 0xFD2FB528, 0xA0, len(image))
            blocks = [image[i:i + 65536] for i in range(0, len(image), 65536)]
            for k, b in enumerate(blocks):
                frame += struct.pack('<I', len(b) << 3 | (k == len(blocks) - 1))[:3] + b
            data = data[:nl] + frame
        out.append((name, data))
    return out


def packets(stream, n):
    """The first @n packets of a plain stream."""
    out, o = [], 0
    while o + HEADER.size <= len(stream) and len(out) < n:
        size = struct.unpack_from('<Q', stream, o + 48)[0] // 8
        out.append(stream[o:o + size])
        o += size
    return out


def zstd(data, *opts):
    return subprocess.run(['zstd', '-q', '-c'] + list(opts), input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def stored_frames(chunk, n):
    """The first @n frames of a stored chunk, verbatim (lib/chunk.h)."""
    out, o = [], 0
    while o < len(chunk) and len(out) < n:
        size = struct.unpack_from('<I', chunk, o + 5)[0]
        end, left = o + 9, size
        while True:
            hdr = int.from_bytes(chunk[end:end + 3], 'little')
            blen = hdr >> 3
            end += 3 + blen
            if hdr & 1:
                break
        out.append(chunk[o:end])
        o = end
    return out


def gentrace(tmp, name, *opts):
    d = os.path.join(tmp, name)
    subprocess.run([sys.executable, os.path.join(HERE, 'gentrace.py'), d,
                    '--expect-dir', d + '.expect'] + list(opts), check=True)
    return read_dir(d)


def seeds(real, out):
    os.makedirs(out, exist_ok=True)
    made = {}
    meta = open(os.path.join(real, 'packed', 'metadata'), 'rb').read()
    cpus = sorted(f.split('-')[0] for f in os.listdir(os.path.join(real, 'packed'))
                  if f.startswith('cpu'))
    plain = {}
    for c in cpus:
        z = open(os.path.join(real, 'packed', c + '-000001.zst'), 'rb').read()
        plain[c] = subprocess.run(['zstd', '-d', '-q', '-c'], input=z,
                                  stdout=subprocess.PIPE, check=True).stdout
    # Plain streams: the first packets of each CPU (the state dump).
    made['real-plain'] = [('metadata', meta)] + \
        [(c, b''.join(packets(plain[c], 3))) for c in cpus]
    # Compressed with content checksums, two packets a frame, as packed.
    made['real-packed'] = [('metadata', meta)] + \
        [(c + '-000001.zst', b''.join(zstd(b''.join(p), '--check', '-3')
                                       for p in (packets(plain[c], 4)[:2],
                                                 packets(plain[c], 4)[2:])))
         for c in cpus]
    # Stored chunks as ringtraced writes them, rotated on cpu0.
    smeta = open(os.path.join(real, 'stored', 'metadata'), 'rb').read()
    stored = {c: stored_frames(open(os.path.join(real, 'stored', c + '-000001.zst'),
                                    'rb').read(), 4) for c in cpus}
    made['real-stored'] = [('metadata', smeta), ('cpu0-000001.zst', b''.join(stored['cpu0'][:2])),
                           ('cpu0-000002.zst', b''.join(stored['cpu0'][2:]))] + \
        [(c + '-000001.zst', b''.join(stored[c][:3])) for c in cpus[1:]]
    with tempfile.TemporaryDirectory() as tmp:
        made['gen-losses'] = gentrace(tmp, 'a', '--events', '60', '--cpus', '2',
                                      '--subbuf', '512', '--lose', '0.05',
                                      '--drop-packets', '0.1', '--seed', '7')
        made['gen-killed'] = gentrace(tmp, 'b', '--events', '60', '--cpus', '2',
                                      '--subbuf', '512', '--zstd', 'rotate',
                                      '--frame-packets', '2', '--cut-frame',
                                      '--partial-packet', '--seed', '8')
        made['gen-padded'] = gentrace(tmp, 'c', '--events', '40', '--cpus', '1',
                                      '--subbuf', '512', '--layout', 'padded',
                                      '--seed', '9')
        # Kernel stacks and the symbols that name their frames.
        sys.path.insert(0, HERE)
        import test_decoder
        made['gen-stacks'] = read_dir(test_decoder.stack_trace(
            os.path.join(tmp, 'd'), test_decoder.STACK_EVENTS_OF_A_RUN))
        # User stacks after their event and its kernel stack, flags set.
        made['gen-ustack-flags'] = read_dir(test_decoder.ustack_trace(
            os.path.join(tmp, 'g'), test_decoder.USTACK_EVENTS_OF_A_RUN))
        # User stacks: mappings, a fork and an exec, samples (no store:
        # an input is flat files).
        made['gen-ustacks'] = read_dir(test_decoder.user_seed_trace(
            os.path.join(tmp, 'e')))
        # ... and a store holding the binary, a tiny ELF compiled now.
        made['gen-ustacks-store'] = unchecked_store(read_dir(
            test_decoder.user_store_seed_trace(os.path.join(tmp, 'f'))))
        # A mapping and user stack copies (one cut, one with sp near 2^64).
        made['gen-ucopy'] = read_dir(test_decoder.ucopy_seed_trace(
            os.path.join(tmp, 'h')))
        # Interned stacks: defs once per packet, refs, a def again in the
        # next packet.
        made['gen-interned'] = read_dir(test_decoder.intern_trace(
            os.path.join(tmp, 'i'), test_decoder.INTERNED_RUN))
        # ... with the refs untimed, as today's module writes them.
        made['gen-interned-untimed'] = read_dir(test_decoder.intern_trace(
            os.path.join(tmp, 'iu'), test_decoder.INTERNED_RUN, untimed=True))
        # USDT hits (arguments, a fault, a user stack) and a probe
        # without arguments.
        made['gen-usdt'] = read_dir(test_decoder.usdt_seed_trace(
            os.path.join(tmp, 'u')))
    for name, files in made.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(pack(files))
        print('%s: %d bytes, %s' % (name, len(pack(files)),
                                    ', '.join(f for f, _ in files)))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ('pack', 'unpack', 'seeds'):
        sys.exit(__doc__)
    cmd, a, b = sys.argv[1:]
    if cmd == 'pack':
        with open(b, 'wb') as f:
            f.write(pack(read_dir(a)))
    elif cmd == 'unpack':
        os.makedirs(b)
        for name, data in unpack(open(a, 'rb').read()):
            if store_name(name):
                os.makedirs(os.path.join(b, os.path.dirname(name)), exist_ok=True)
            elif '/' in name or not name or (name.startswith('.') and
                                             name != KSYMS_FILE):
                continue
            with open(os.path.join(b, name), 'wb') as f:
                f.write(data)
    else:
        seeds(a, b)


if __name__ == '__main__':
    main()
