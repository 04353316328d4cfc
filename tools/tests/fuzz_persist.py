#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Mutation fuzzer of ringtraced --recover (fuzz-persist.sh runs it).

A valid persistent region image (gentrace.py's make_image(), a CPU's
newest packet open, another's closed with a record in flight; and
real-image/, ringtrace.ko's) is mutated
where a reader's decisions are made -- header fields (the checksum made
right again half the time, so that the checks behind it are reached), the
slice table, a slot's counters, packet headers, records, the metadata and
ksyms framing, the image's length -- and recovered by the ASan/UBSan
build of ringtraced, for a fixed time.  Each run must exit 0, 1 or 3 with
no sanitizer report; a refusal (1) writes nothing; a directory it writes
must read clean (`ringtrace
check` exit 0: damage is left out of it, never written).  A failing image
is kept (KEEP) with the command that reproduces it.

Usage: fuzz_persist.py SECONDS DAEMON RINGTRACE KEEP
Last line: `fuzz-persist: N passed, M failed`.
"""

import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gentrace as gt  # noqa: E402

S = 4096
PH = {'magic': (0, 4), 'uuid': (4, 16), 'stream_id': (20, 4), 'instance': (24, 8),
      'begin': (32, 8), 'end': (40, 8), 'content': (48, 8), 'size': (56, 8),
      'seq': (64, 8), 'discarded': (72, 8), 'cpu': (80, 4), 'events': (84, 4)}


def reseal(b):
    struct.pack_into('<Q', b, gt.PERSIST_OFF['checksum'], 0)
    struct.pack_into('<Q', b, gt.PERSIST_OFF['checksum'], gt.xxh64_bytes(bytes(b[:4096])))


def interesting(rng, size):
    """A value a check may sit on."""
    top = (1 << (8 * size)) - 1
    return rng.choice([0, 1, 2, 3, 4, 87, 88, 89, 4095, 4096, 4097, 8192,
                       S * 3, S * 5 + 100, 0x7fffffff, 0xffffffff, top, top - 1,
                       rng.randrange(top + 1)]) & top


def mutate(rng, img, exp):
    """One to three mutations of IMG (a bytearray); a list of what."""
    lay = exp['layout']
    done = []
    cut = None
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(['header', 'header', 'slice', 'counter', 'counter',
                           'pkthdr', 'pkthdr', 'body', 'blob', 'truncate', 'state'])
        if kind == 'header':
            name = rng.choice(gt.PERSIST_FIELDS)
            off = gt.PERSIST_OFF[name]
            size = 8 if name.endswith(']') or name.endswith('_offset') or \
                name.endswith('size') and name not in ('header_size', 'page_size') \
                else 4
            if name in ('trace_uuid', 'boot_id'):
                size = 16
            if name in ('release', 'version'):
                size = 72
            if name == 'build_id':
                size = 20
            if size > 8:
                img[off + rng.randrange(size)] ^= 1 << rng.randrange(8)
            else:
                img[off:off + size] = interesting(rng, size).to_bytes(size, 'little')
            if rng.random() < 0.5:
                reseal(img)
            done.append('header %s' % name)
        elif kind == 'slice':
            at = lay['slices_offset'] + 32 * rng.randrange(len(exp['slots']) + 1)
            f = rng.choice([(0, 4), (4, 4), (8, 8), (16, 8), (24, 8)])
            if at + 32 > len(img):
                continue
            img[at + f[0]:at + f[0] + f[1]] = interesting(rng, f[1]).to_bytes(f[1], 'little')
            done.append('slice at %d+%d' % (at, f[0]))
        elif kind == 'counter':
            cpu = rng.choice(list(exp['slots']))
            counters = exp['slots'][cpu][0]
            n, sb = exp.get('n', 4), exp.get('S', S)
            slot = rng.randrange(min(n, 4))
            at = rng.choice([counters + 16 * slot, counters + 16 * slot + 8,
                             counters + 16 * n + 8 * slot,
                             counters + 24 * n + 24 * slot,
                             counters + 24 * n + 24 * slot + 8])
            old = int.from_bytes(img[at:at + 8], 'little')
            new = rng.choice([interesting(rng, 8), old + rng.randint(-3, 3),
                              old + sb * rng.randint(-9, 9), old ^ (1 << rng.randrange(64))])
            img[at:at + 8] = (new % (1 << 64)).to_bytes(8, 'little')
            done.append('counter at %d (n %d)' % (at, n))
        elif kind == 'pkthdr':
            cpu = rng.choice(list(exp['slots']))
            at = exp['slots'][cpu][1] + exp.get('S', S) * rng.randrange(4)
            name = rng.choice(list(PH))
            o, size = PH[name]
            if size > 8:
                img[at + o + rng.randrange(size)] ^= 0xff
            else:
                old = int.from_bytes(img[at + o:at + o + size], 'little')
                new = rng.choice([interesting(rng, size), old + rng.randint(-2, 2)])
                img[at + o:at + o + size] = (new % (1 << (8 * size))).to_bytes(size, 'little')
            done.append('packet header %s at %d' % (name, at))
        elif kind == 'body':
            cpu = rng.choice(list(exp['slots']))
            sb = exp.get('S', S)
            at = exp['slots'][cpu][1] + sb * rng.randrange(2) + rng.randrange(88, min(sb, 8192))
            for i in range(rng.randint(1, 8)):
                if at + i < len(img):
                    img[at + i] = rng.randrange(256)
            done.append('body at %d' % at)
        elif kind == 'blob':
            at = rng.choice(lay['metadata_offset'] + lay['ksyms_offset'])
            at += rng.choice([0, 8, 16, 24, rng.randrange(32, 3000)])
            if at < len(img):
                img[at] ^= 1 << rng.randrange(8)
            done.append('blob at %d' % at)
        elif kind == 'state':
            at = lay['state_offset'] + rng.randrange(64)
            if at < len(img):
                img[at] = rng.randrange(256)
            done.append('state at %d' % at)
        else:
            cut = rng.randrange(len(img))
            done.append('cut at %d' % cut)
    if cut is not None:
        del img[cut:]
    return done


def real_image():
    """real-image/ (ringtrace.ko's, 6.12) with its metadata in copy A, and
    where its slices are, as make_image() says it of its own."""
    real = os.path.join(HERE, 'real-image')
    img = bytearray(subprocess.run(['zstd', '-q', '-d', '-c', os.path.join(real, 'image.zst')],
                                   stdout=subprocess.PIPE, check=True).stdout)
    md = subprocess.run(['zstd', '-q', '-d', '-c', os.path.join(real, 'metadata.zst')],
                        stdout=subprocess.PIPE, check=True).stdout

    def u64(name):
        return struct.unpack_from('<Q', img, gt.PERSIST_OFF[name])[0]

    blob = gt.persist_blob(md, 1)
    img[u64('metadata_offset[0]'):u64('metadata_offset[0]') + len(blob)] = blob
    lay = {k: u64(k) for k in ('state_offset', 'slices_offset', 'counters_size')}
    lay['metadata_offset'] = [u64('metadata_offset[0]'), u64('metadata_offset[1]')]
    lay['ksyms_offset'] = [u64('ksyms_offset[0]'), u64('ksyms_offset[1]')]
    slots = {}
    for i in range(struct.unpack_from('<I', img, gt.PERSIST_OFF['nr_slices'])[0]):
        cpu, flags, counters, ring, _ = struct.unpack_from('<IIQQQ', img,
                                                           lay['slices_offset'] + 32 * i)
        slots[cpu] = (counters, ring + 4096)
    return bytes(img), {'layout': lay, 'slots': slots, 'n': 64, 'S': 65536}


def main():
    seconds, daemon, ringtrace, keep = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    seed = int(os.environ.get('RT_FUZZ_PERSIST_SEED', time.time()))
    rng = random.Random(seed)
    bases = [gt.make_image(seed=s, tails={0: t0, 2: t2}, packets=p)
             for s, t0, t2, p in ((1, 'open', 'closed-incomplete', 6),
                                  (2, 'no-header', 'idle', 9),
                                  (3, 'closed', 'open', 3))]
    bases.append(real_image())
    work = tempfile.mkdtemp(prefix='rt-fuzz-persist-')
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1', UBSAN_OPTIONS='print_stacktrace=1')
    runs = statuses = 0
    failed = []
    end = time.time() + seconds
    counts = {0: 0, 1: 0, 3: 0}
    try:
        while time.time() < end and not failed:
            base, exp = rng.choice(bases)
            img = bytearray(base)
            what = mutate(rng, img, exp)
            path = os.path.join(work, 'image')
            out = os.path.join(work, 'out')
            shutil.rmtree(out, ignore_errors=True)
            with open(path, 'wb') as f:
                f.write(img)
            r = subprocess.run([daemon, '--recover', '--image', path, '-o', out, '--force'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, errors='replace', env=env,
                               timeout=120)
            runs += 1
            bad = None
            if r.returncode not in (0, 1, 3):
                bad = 'exit %d' % r.returncode
            elif 'Sanitizer' in r.stderr or 'runtime error' in r.stderr:
                bad = 'sanitizer report'
            elif r.returncode == 1 and os.path.exists(out):
                bad = 'refused, but a directory was left'
            elif r.returncode == 3 and 'no packet of the previous trace could be kept' in r.stderr:
                if any(f.startswith('cpu') for f in os.listdir(out)):
                    bad = 'said no packet was kept, but wrote a stream'
            elif r.returncode in (0, 3) and os.path.isdir(out):
                c = subprocess.run([ringtrace, 'check', out], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True,
                                   errors='replace')
                if c.returncode != 0:
                    bad = 'the recovered trace does not read clean: %s' % c.stderr[-600:]
            else:
                counts[r.returncode] += 1
                continue
            if bad:
                os.makedirs(keep, exist_ok=True)
                name = os.path.join(keep, 'image-%d-%d' % (seed, runs))
                shutil.copy(path, name)
                failed.append('%s (%s): %s\n# stderr: %s\n# reproduce: %s --recover --image %s -o DIR'
                              % (bad, '; '.join(what), name, r.stderr[-1500:], daemon, name))
            else:
                counts[r.returncode] += 1
                statuses += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print('FAIL   seed %d, run %d: %s' % (seed, runs, failed[0]))
        print('fuzz-persist: 0 passed, 1 failed')
        return 1
    print('ok     %ds of mutations (seed %d): %d runs, exits 0/1/3: %d/%d/%d, written ones read clean'
          % (seconds, seed, runs, counts[0], counts[1], counts[3]))
    print('fuzz-persist: 1 passed, 0 failed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
