#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of how readers open what ringtraced writes (no kernel needed).

  - report --follow reads a chunk frame by frame: nothing of a frame is
    printed before its checksum passed, a damaged frame costs that frame
    (said, exit 3), a zstd bomb costs bounded memory;
  - a chunk set's manifest is checked where a chunk is opened (size,
    XXH64), and a window never skips a chunk on a time the chunk itself
    does not confirm;
  - an index footer or a stored chunk cannot make the seek path allocate
    without bound;
  - report DIR reads the chunk sets a daemon made under DIR, with the
    chunks still loose, and a list mixing moved sets and DIR is one trace.

Synthetic traces come from test_decoder.py's helpers (gentrace.py's TSDL).

Usage: test_sets.py [-k SUBSTRING] [-v] [--keep]
Last line: `sets: N passed, M failed`.
"""

import json
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_decoder as td  # noqa: E402
from test_decoder import check, rt, rt_env, Fail  # noqa: E402

TESTS, test = td.registry()


Ctx = td.PathCtx


EVENT = re.compile(r'^(\[[0-9.]+\]) (?:\S+ )?(cpu\d+) \S+ (.*)$')


def events(text):
    """The event lines of report's output, as (time, cpu, what) without
    the thread (attribution is not what these tests check), sorted."""
    out = []
    for line in text.splitlines():
        if not line.startswith('[') or ' -- ' in line:
            continue
        m = EVENT.match(line)
        check(m, 'not an event line: %r' % line)
        out.append((td.ts_ns(m.group(1)), m.group(2), m.group(3)))
    return sorted(out)


def copy_chunks(src, dst, names):
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, 'metadata'), dst)
    for n in names:
        shutil.copy(os.path.join(src, n), os.path.join(dst, n))


def flip(path, off, bit=0x10):
    with open(path, 'r+b') as f:
        f.seek(off)
        c = f.read(1)
        f.seek(off)
        f.write(bytes([c[0] ^ bit]))


EMPTY_STORED = td.stored_chunk([b''])  # one empty stored frame: 12 bytes


def follow(d, place, preexec=None, binary=None):
    """report --follow of @d: started, then @place() puts chunks in, then
    SIGTERM (which looks until nothing new is found).  (status, out, err)."""
    p = subprocess.Popen([binary or td.RINGTRACE_ASAN, 'report', '--follow', '--hold', '100', d],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, errors='replace',
                         preexec_fn=preexec)
    # The view starts at what comes next: it says so once it looked.
    err = ''
    end = time.time() + 30
    while 'following' not in err and time.time() < end:
        line = p.stderr.readline()
        if not line:
            break
        err += line
    check('following' in err, 'report --follow did not start: %s' % err)
    place()
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    try:
        out, rest = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, rest = p.communicate()
        raise Fail('report --follow did not end after SIGTERM')
    return p.returncode, out, err + rest


def follow_dir(ctx, src, cpus=2):
    """A directory as ringtraced starts one: @src's metadata, an empty
    stored chunk 1 per CPU."""
    d = ctx.path('follow')
    os.makedirs(d)
    shutil.copy(os.path.join(src, 'metadata'), d)
    for cpu in range(cpus):
        with open(os.path.join(d, 'cpu%d-000001.zst' % cpu), 'wb') as f:
            f.write(EMPTY_STORED)
    return d


def put(src_dir, names, d):
    """The chunks @names of @src_dir into @d as a packer leaves them:
    written beside, renamed in."""
    def go():
        for n in names:
            tmp = os.path.join(d, '.' + n + '.tmp')
            shutil.copy(os.path.join(src_dir, n), tmp)
            os.rename(tmp, os.path.join(d, n))
    return go


def two_chunks(ctx, packed):
    """seek_trace's chunks 2 and 3 of 2 CPUs (stored, or packed in 4K
    frames): (the directory, the chunk names, report's events of them)."""
    src = td.seek_trace(ctx.path('src'), files=3, packets=40)
    names = ['cpu%d-%06d.zst' % (c, k) for c in range(2) for k in (2, 3)]
    ref = ctx.path('ref')
    copy_chunks(src, ref, names)
    if packed:
        r = rt('compress', '--frame-size', '4K', '-j', '1', ref)
        check(r.returncode == 0, 'compress: ' + r.stderr)
    r = rt('report', ref)
    check(r.returncode == 0, 'report of the intact chunks: %d %s' % (r.returncode, r.stderr))
    return ref, names, events(r.stdout)


def frame_events(ref_events, cpu, begin, end):
    return [e for e in ref_events if e[1] == 'cpu%d' % cpu and begin <= e[0] <= end]


def damaged_follow(ctx, ref, names, want, what):
    """Follows chunks of @ref that were damaged: exit 3, the damage said,
    exactly @want printed (what report prints of them too)."""
    d = follow_dir(ctx, ref)
    rc, out, err = follow(d, put(ref, names, d))
    got = events(out)
    check('runtime error' not in err and 'Sanitizer' not in err, 'sanitizer: ' + err[-2000:])
    invented = sorted(set(got) - set(want))
    check(not invented, '%s: %d events printed that are not in the trace, e.g. %s' %
          (what, len(invented), invented[:2]))
    missing = sorted(set(want) - set(got))
    check(not missing, '%s: %d intact events not printed, e.g. %s' % (what, len(missing), missing[:2]))
    check(len(got) == len(want), '%s: %d events printed, %d expected (twice?)' %
          (what, len(got), len(want)))
    check(rc == 3 and 'damaged: ' in err,
          '%s: follow exit %d (3 expected, the damage said): %s' % (what, rc, err[-1500:]))
    rep = rt('report', ref, asan=True)
    check(rep.returncode == 3 and events(rep.stdout) == got,
          '%s: report of the same chunks: exit %d, %d events; follow printed %d' %
          (what, rep.returncode, len(events(rep.stdout)), len(got)))


# ---- report --follow: frames checked whole -------------------------------------

@test
def follow_packed_frame_damaged(ctx):
    """One flipped bit in a frame of a packed chunk that --follow reads:
    that frame's events alone are missing, nothing invented, exit 3."""
    ref, names, allev = two_chunks(ctx, packed=True)
    path = os.path.join(ref, 'cpu1-000002.zst')
    dbytes, ents = td.index_of(path)
    check(len(ents) > 4, 'only %d frames' % len(ents))
    k = 2
    flip(path, ents[k][0] + (ents[k + 1][0] - ents[k][0]) // 2)
    lost = frame_events(allev, 1, ents[k][2], ents[k][3])
    check(lost, 'the frame holds no events')
    want = sorted(set(allev) - set(lost))
    damaged_follow(ctx, ref, names, want, 'a flipped bit in packed frame %d' % k)


@test
def follow_stored_frame_damaged(ctx):
    """A stored chunk whose frame header lies about its packet's size: that
    packet alone is missing, exit 3; a frame magic destroyed likewise."""
    ref, names, allev = two_chunks(ctx, packed=False)
    path = os.path.join(ref, 'cpu0-000003.zst')
    with open(path, 'rb') as f:
        data = f.read()
    # The frames' offsets: each starts with the stored magic.
    offs = [m.start() for m in re.finditer(re.escape(b'\x28\xb5\x2f\xfd\xa0'), data)]
    check(len(offs) == 40, '%d stored frames, 40 expected' % len(offs))

    def packet_events(i):
        pkt = data[offs[i] + 12:offs[i + 1]]
        b = struct.unpack_from('<Q', pkt, td.OFF['begin'])[0]
        e = struct.unpack_from('<Q', pkt, td.OFF['end'])[0]
        return frame_events(allev, 0, b, e)

    lost = packet_events(5) + packet_events(17)
    # Frame 5 claims 8 bytes more than it holds; frame 17 is no frame.
    size = struct.unpack_from('<I', data, offs[5] + 5)[0]
    with open(path, 'r+b') as f:
        f.seek(offs[5] + 5)
        f.write(struct.pack('<I', size + 8))
        f.seek(offs[17])
        f.write(b'\x00')
    want = sorted(set(allev) - set(lost))
    damaged_follow(ctx, ref, names, want, 'two damaged stored frames')


def bomb_frame(size, declared):
    """A zstd frame of @size zero bytes, its size in its header or not."""
    opt = '--stream-size=%d' % size if declared else '--no-content-size'
    r = subprocess.run('head -c %d /dev/zero | zstd -q -3 %s -c' % (size, opt),
                       shell=True, stdout=subprocess.PIPE)
    check(r.returncode == 0 and len(r.stdout) < size // 100, 'zstd made no bomb')
    return r.stdout


def bombed(path, k, bomb):
    """Frame @k of the packed chunk @path replaced by @bomb (its index
    dropped: it no longer says where frames are); (begin, end) of the
    packets it held."""
    dbytes, ents = td.index_of(path)
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:ents[k][0]] + bomb + data[ents[k + 1][0]:dbytes])
    return ents[k][2], ents[k][3]


@test
def follow_zstd_bomb(ctx):
    """Packed chunks with a frame that decodes to 512 MiB between good
    frames (its size in its header, and not): --follow under 256 MiB of
    data (RLIMIT_DATA) says each is damage and prints every event of the
    other frames, exit 3."""
    ref, names, allev = two_chunks(ctx, packed=True)
    b0, e0 = bombed(os.path.join(ref, 'cpu0-000002.zst'), 3,
                    bomb_frame(512 << 20, declared=False))
    b1, e1 = bombed(os.path.join(ref, 'cpu1-000003.zst'), 2,
                    bomb_frame(512 << 20, declared=True))
    lost = frame_events(allev, 0, b0, e0) + frame_events(allev, 1, b1, e1)
    want = sorted(set(allev) - set(lost))

    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (256 << 20, 256 << 20))

    d = follow_dir(ctx, ref)
    rc, out, err = follow(d, put(ref, names, d), preexec=limit, binary=td.RINGTRACE)
    got = events(out)
    check(rc == 3 and 'damaged: ' in err and 'more than the' in err,
          'a bomb frame: exit %d (3 expected, the frame said too big): %s' % (rc, err[-1500:]))
    check(got == want, 'a bomb frame: %d events printed, %d expected (%d not in the trace)' %
          (len(got), len(want), len(set(got) - set(allev))))




@test
def follow_into_sets(ctx):
    """--follow of a daemon that makes sets: a chunk assembled into its
    set (DIR/chunk-NNNNNN/) or being assembled (.chunk-NNNNNN.tmp/) before
    the view opened it is read there; every event once."""
    ref, names, allev = two_chunks(ctx, packed=True)
    d = follow_dir(ctx, ref)

    def place():
        for c in range(2):
            for k, where in ((2, 'chunk-000002'), (3, '.chunk-000003.tmp')):
                s = os.path.join(d, where)
                os.makedirs(s, exist_ok=True)
                n = 'cpu%d-%06d.zst' % (c, k)
                shutil.copy(os.path.join(ref, n), os.path.join(d, '.' + n + '.tmp'))
                os.rename(os.path.join(d, '.' + n + '.tmp'), os.path.join(s, n))
    rc, out, err = follow(d, place)
    got = events(out)
    check(rc == 0 and 'runtime error' not in err, 'follow exit %d: %s' % (rc, err[-1000:]))
    check(got == allev, 'follow printed %d events of %d (%d not in the trace)' %
          (len(got), len(allev), len(set(got) - set(allev))))


# ---- the seek path: bounded whatever the file says -------------------------------

def max_rss_kib(args, env=None):
    """(status, stderr, the peak RSS in KiB) of the command @args."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err, ru.ru_maxrss


@test
def seek_hostile_index_footer(ctx):
    """A packed chunk of 300 MiB (a skippable frame, sparse) whose index
    footer claims 2^32-1 entries: a window allocates nothing for it (the
    reader's peak memory stays small), says the index is ignored, and
    prints what a full pass prints."""
    d = td.packed_trace(ctx, name='hostile', files=2, packets=60)
    path = os.path.join(d, 'cpu0-000002.zst')
    dbytes, ents = td.index_of(path)
    with open(path, 'rb') as f:
        data = f.read()
    index = bytearray(data[dbytes:])
    struct.pack_into('<I', index, len(index) - 16, 0xffffffff)
    pad = 300 << 20
    with open(path, 'wb') as f:
        f.write(data[:dbytes] + struct.pack('<II', 0x184D2A50, pad))
        f.seek(pad, os.SEEK_CUR)
        f.write(index)
    b, e = td.SEEK_WINDOWS[3]
    rc, err, rss = max_rss_kib([td.RINGTRACE, 'report'] + td.window_args(b, e) + [d])
    check(rc == 0, 'report of a window: exit %d: %s' % (rc, err[-800:]))
    check(rss < 64 << 10, 'a footer that claims 2^32-1 entries: the reader peaked at %d MiB' %
          (rss >> 10))
    check('its time index is ignored (it claims' in err,
          'the footer\'s claim is not said: %s' % err[-800:])
    td.same_window(d, b, e, notes=['its time index is ignored'])


def pread_bytes(args):
    """(status, bytes pread64 returned in all) of the command @args."""
    log = tempfile.mktemp(prefix='rt-strace-')
    r = subprocess.run(['strace', '-f', '-qq', '-e', 'trace=pread64', '-o', log] + args,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    total = 0
    with open(log) as f:
        for line in f:
            m = re.search(r'= (\d+)$', line.strip())
            if m:
                total += int(m.group(1))
    os.unlink(log)
    return r.returncode, total


@test
def seek_stored_index_build(ctx):
    """An index built for a stored chunk (a window over it) reads each
    packet's header where it lies: what it reads is a small part of the
    file (headers), not a 64 KiB probe and a decompression context per
    packet.  The window is the trace's first packets: one later would
    also decode the frames before it for what they tell of threads
    (stored chunks have no thread table), which is not the index's cost."""
    d = td.seek_trace(ctx.path('stored'), files=1, packets=300)
    size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith('.zst'))
    b, e = td.SEEK_T0, td.SEEK_T0 + 2 * td.SEEK_PACKET_NS
    rc, got = pread_bytes([td.RINGTRACE, 'report'] + td.window_args(b, e) + [d])
    check(rc == 0, 'report of a window: exit %d' % rc)
    # Per packet: its frame's header and block header, its 88-byte header.
    packets = 2 * 300
    check(got < 160 * packets, 'indexing %d stored packets (%d bytes) read %d bytes with pread' %
          (packets, size, got))
    td.same_window(d, b, e, notes=[])



# ---- chunk sets: as ringtraced --on-chunk lays them out ---------------------------

TRACE = 'ringtrace-20240101-101010'


def chunk_facts(path):
    """What ringtraced's manifest says of a chunk (daemon/chunks.c)."""
    plain = subprocess.run(['zstd', '-q', '-dc', path], stdout=subprocess.PIPE,
                           check=True).stdout
    pk = list(td.packets_of(plain))
    return {'packets': len(pk),
            'events': sum(td.hdr_get(plain, o, 'events', '<I') for o in pk),
            'events_lost': 0,
            'first_timestamp': td.hdr_get(plain, pk[0], 'begin') if pk else 0,
            'last_timestamp': td.hdr_get(plain, pk[-1], 'end') if pk else 0}


def write_manifest(s, seq, host='host-a', boot='boot-1', trace=TRACE):
    """@s's manifest.json as daemon/manifest.c writes one, from its files."""
    with open(os.path.join(s, 'metadata')) as f:
        uuid = re.search(r'trace \{[^}]*?uuid = "([^"]+)"', f.read(), re.S).group(1)
    names = sorted(n for n in os.listdir(s) if n != 'manifest.json')
    cpus = []
    for n in names:
        m = re.match(r'cpu(\d+)-(\d+)\.zst$', n)
        if m:
            cpus.append(dict({'cpu': int(m.group(1)), 'file': n},
                             **chunk_facts(os.path.join(s, n))))
    man = {'format': 'ringtrace-chunk-set', 'format_version': 1, 'host': host,
           'boot_id': boot, 'kernel_release': '6.12', 'ringtrace_version': 'test',
           'trace': trace, 'trace_uuid': uuid, 'sequence': seq,
           'clock': {'name': 'monotonic', 'monotonic_ns': 1, 'realtime_ns': 1,
                     'boottime_ns': 1, 'realtime_offset_ns': 1700000000500000000,
                     'boottime_offset_ns': 0},
           'cpus': cpus,
           'files': [{'name': n, 'size': os.path.getsize(os.path.join(s, n)),
                      'xxh64': td.file_xxh64(os.path.join(s, n))} for n in names]}
    with open(os.path.join(s, 'manifest.json'), 'w') as f:
        json.dump(man, f, indent=2)


def edit_manifest(s, fn):
    path = os.path.join(s, 'manifest.json')
    with open(path) as f:
        man = json.load(f)
    fn(man)
    with open(path, 'w') as f:
        json.dump(man, f, indent=2)


def daemon_dir(ctx, assembled=3, files=5, cpus=2):
    """A trace directory as ringtraced --on-chunk leaves one: chunks 1..
    @assembled in sets DIR/chunk-NNNNNN/ (packed, metadata, manifest),
    the later ones loose (packed, the last stored: still being written).
    (DIR, a plain directory holding every chunk: what DIR reads as.)"""
    ref = td.packed_trace(ctx, name='whole%03d' % ctx.n, cpus=cpus, files=files)
    stored = td.seek_trace(ctx.path('stored'), cpus=cpus, files=files)
    for c in range(cpus):
        last = 'cpu%d-%06d.zst' % (c, files)
        shutil.copy(os.path.join(stored, last), os.path.join(ref, last))
    d = os.path.join(ctx.path('root'), TRACE)
    os.makedirs(d)
    shutil.copy(os.path.join(ref, 'metadata'), d)
    for k in range(1, files + 1):
        names = ['cpu%d-%06d.zst' % (c, k) for c in range(cpus)]
        if k > assembled:
            for n in names:
                shutil.copy(os.path.join(ref, n), d)
            continue
        s = os.path.join(d, 'chunk-%06d' % k)
        os.makedirs(s)
        for n in names + ['metadata']:
            shutil.copy(os.path.join(ref, n), s)
        write_manifest(s, k)
    return d, ref


def same_report(ref, *dirs, opts=(), status=0, what=''):
    """report of @dirs prints what report of @ref does, byte for byte."""
    want = rt('report', *opts, ref)
    got = rt('report', *opts, *dirs, asan=True)
    check(want.returncode == 0, 'report of the reference: %s' % want.stderr)
    check(got.returncode == status and 'runtime error' not in got.stderr,
          '%s: report %s exit %d (%d expected): %s' %
          (what, ' '.join(opts), got.returncode, status, got.stderr[-1500:]))
    if got.stdout != want.stdout:
        a, b = got.stdout.splitlines(), want.stdout.splitlines()
        diff = next(('  got  %s\n  want %s' % (x, y) for x, y in zip(a, b) if x != y),
                    '(%d lines, %d expected)' % (len(a), len(b)))
        raise Fail('%s: report %s differs from the whole trace:\n%s' %
                   (what, ' '.join(opts), diff))
    return got


@test
def report_daemon_dir(ctx):
    """report DIR of a daemon that made sets: its sets (DIR/chunk-NNNNNN/)
    and its loose chunks read as the whole trace; so do --stat, a window,
    and export."""
    d, ref = daemon_dir(ctx)
    same_report(ref, d, what='the daemon\'s directory')
    same_report(ref, d, opts=['--stat'], what='the daemon\'s directory')
    b, e = td.SEEK_WINDOWS[3]
    same_report(ref, d, opts=td.window_args(b, e), what='a window of it')
    for fmt in ('systrace', 'chrome-json'):
        want = rt('export', '-f', fmt, ref)
        got = rt('export', '-f', fmt, d, asan=True)
        check(got.returncode == 0 and got.stdout == want.stdout,
              'export -f %s of the daemon\'s directory: exit %d: %s' %
              (fmt, got.returncode, got.stderr[-800:]))
    # check and unpack read it whole too.
    want = [l for l in rt('check', ref).stdout.splitlines() if re.match(r'cpu\d+: packets=', l)]
    got = rt('check', d, asan=True)
    check(got.returncode == 0 and want and
          [l for l in got.stdout.splitlines() if re.match(r'cpu\d+: packets=', l)] == want,
          'check of the daemon\'s directory: exit %d: %s' % (got.returncode, got.stdout[-800:]))
    out = ctx.path('unpacked')
    r = rt('unpack', d, out, asan=True)
    check(r.returncode == 0 and rt('report', out).stdout == rt('report', ref).stdout,
          'unpack of the daemon\'s directory: exit %d: %s' % (r.returncode, r.stderr[-800:]))
    # Every set assembled, nothing loose: the same.
    d2, ref2 = daemon_dir(ctx, assembled=5)
    same_report(ref2, d2, what='every set assembled')


def hook_moved(ctx, d, seqs, copy=False):
    """Sets @seqs of @d moved (copied) by a hook to a directory of its own."""
    shipped = ctx.path('shipped')
    os.makedirs(shipped)
    for k in seqs:
        s = os.path.join(d, 'chunk-%06d' % k)
        (shutil.copytree if copy else shutil.move)(s, os.path.join(shipped, 'chunk-%06d' % k))
    return shipped


@test
def report_moved_sets_and_dir(ctx):
    """A hook moved sets away: the moved sets and DIR, given as the sets'
    directories or the directory they are in, in any order, read as the
    whole trace -- every event once.  A set that is both where it was
    copied and in DIR is read once."""
    d, ref = daemon_dir(ctx)
    shipped = hook_moved(ctx, d, (1, 2))
    sets = sorted(os.path.join(shipped, n) for n in os.listdir(shipped))
    same_report(ref, *sets, d, what='the moved sets, then DIR')
    same_report(ref, d, *sets[::-1], what='DIR, then the moved sets')
    same_report(ref, shipped, d, what='the directory of moved sets and DIR')
    # Every set moved: DIR holds its metadata and loose chunks only.
    everything = hook_moved(ctx, d, (3,))
    for s in sorted(os.listdir(everything)):
        shutil.move(os.path.join(everything, s), shipped)
    same_report(ref, shipped, d, what='every set moved')
    # Every set assembled and moved: DIR holds its metadata alone, which
    # is no trace by itself.
    d4, ref4 = daemon_dir(ctx, assembled=5)
    all_moved = hook_moved(ctx, d4, range(1, 6))
    check(os.listdir(d4) == ['metadata'], 'DIR holds %s' % os.listdir(d4))
    same_report(ref4, all_moved, d4, what='every set moved, DIR its metadata alone')
    r = rt('report', d4, asan=True)
    check(r.returncode == 1 and 'where its sets were moved, give them too' in r.stderr,
          'DIR with its metadata alone: exit %d: %s' % (r.returncode, r.stderr))
    # A set copied, not moved: in both places.
    d2, ref2 = daemon_dir(ctx)
    copied = hook_moved(ctx, d2, (2, 3), copy=True)
    same_report(ref2, copied, d2, what='sets present twice')
    same_report(ref2, os.path.join(copied, 'chunk-000002'), d2,
                os.path.join(copied, 'chunk-000003'), what='sets present twice, given one by one')
    # The daemon's directory alone says which of its sets are not there.
    d3, ref3 = daemon_dir(ctx)
    hook_moved(ctx, d3, (1,))
    r = rt('report', d3)
    gaps = [l for l in r.stdout.splitlines() if ' -- gap: ' in l]
    check(r.returncode == 0 and len(gaps) == 1 and
          'chunk set 1 not given, everything before it' in gaps[0],
          'DIR without its moved set 1: exit %d, gaps %s' % (r.returncode, gaps))




@test
def report_chunk_loose_and_in_a_set(ctx):
    """A chunk both loose in DIR and in a set (copied back) is read once;
    one whose bytes differ from the set's (another recording's chunk of
    that number) is refused, never dropped unseen."""
    d, ref = daemon_dir(ctx)
    shutil.copy(os.path.join(d, 'chunk-000002', 'cpu1-000002.zst'), d)
    same_report(ref, d, what='a chunk loose and in its set')
    shutil.copy(os.path.join(d, 'chunk-000003', 'cpu1-000003.zst'),
                os.path.join(d, 'cpu1-000002.zst'))
    r = rt('report', d, asan=True)
    check(r.returncode == 1 and 'chunk 2 of cpu1 twice, and they differ' in r.stderr and
          'Sanitizer' not in r.stderr,
          'two different chunks 2 of cpu1: exit %d: %s' % (r.returncode, r.stderr[-800:]))


# ---- what a manifest promises, checked ---------------------------------------------

def sets_of(d):
    """The set directories under @d, given one by one (as every version
    of report reads them): what a manifest says is what is tested."""
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith('chunk-'))


@test
def manifest_size_lies(ctx):
    """A set's manifest that says a chunk has a byte more than it has:
    damage, said (exit 3), and the chunk read all the same."""
    d, ref = daemon_dir(ctx, assembled=5)

    def grow(man):
        man['files'][0]['size'] += 1
    edit_manifest(os.path.join(d, 'chunk-000002'), grow)
    r = same_report(ref, *sets_of(d), status=3, what='a chunk\'s size in its manifest +1')
    check('has %d bytes, its manifest says %d' % (
        os.path.getsize(os.path.join(d, 'chunk-000002', 'cpu0-000002.zst')),
        os.path.getsize(os.path.join(d, 'chunk-000002', 'cpu0-000002.zst')) + 1) in r.stderr,
        'the size is not said: ' + r.stderr[-800:])


@test
def manifest_sum_lies(ctx):
    """A set's manifest whose XXH64 of a chunk is not the chunk's: damage,
    said (exit 3), and the chunk read all the same."""
    d, ref = daemon_dir(ctx, assembled=5)

    def flip_sum(man):
        f = man['files'][1]
        f['xxh64'] = '%016x' % (int(f['xxh64'], 16) ^ 1)
    edit_manifest(os.path.join(d, 'chunk-000003'), flip_sum)
    r = same_report(ref, *sets_of(d), status=3, what='a chunk\'s XXH64 in its manifest changed')
    check('cpu1-000003.zst: its XXH64 is' in r.stderr, 'the XXH64 is not said: ' + r.stderr[-800:])


@test
def manifest_stored_chunk_changed(ctx):
    """A stored chunk of a set (no frame checksum) with an event's text
    changed in place: its XXH64 says so (exit 3)."""
    d, ref = daemon_dir(ctx, assembled=5)
    path = os.path.join(d, 'chunk-000005', 'cpu1-000005.zst')
    with open(path, 'rb') as f:
        data = f.read()
    at = data.index(b'c1 p250 e1')
    with open(path, 'r+b') as f:
        f.seek(at + 4)
        f.write(b'9')
    r = rt('report', *sets_of(d), asan=True)
    check(r.returncode == 3 and 'cpu1-000005.zst: its XXH64 is' in r.stderr,
          'a stored chunk changed under its manifest: exit %d: %s' % (r.returncode, r.stderr[-800:]))


@test
def manifest_missing_and_unlisted(ctx):
    """A listed chunk missing, a set's metadata that is not the one listed,
    a chunk the manifest does not list: each is damage, said (exit 3);
    everything there is read."""
    d, ref = daemon_dir(ctx, assembled=5)
    os.unlink(os.path.join(d, 'chunk-000002', 'cpu1-000002.zst'))
    with open(os.path.join(d, 'chunk-000003', 'metadata'), 'a') as f:
        f.write('\n')
    edit_manifest(os.path.join(d, 'chunk-000004'),
                  lambda man: man.update(files=[f for f in man['files']
                                                if f['name'] != 'cpu0-000004.zst']))
    r = rt('report', *sets_of(d), asan=True)
    for said in ('lists cpu1-000002.zst, which is not there',
                 'chunk-000003/metadata: not the metadata its manifest lists',
                 'cpu0-000004.zst: not in its set\'s manifest: read unchecked'):
        check(said in r.stderr, '"%s" not said: %s' % (said, r.stderr[-1500:]))
    got, want = events(r.stdout), events(rt('report', ref).stdout)
    missing = [e for e in want if e not in got]
    check(r.returncode == 3 and set(got) <= set(want) and
          all(e[1] == 'cpu1' and td.SEEK_T0 + 60 * td.SEEK_PACKET_NS <= e[0] <
              td.SEEK_T0 + 120 * td.SEEK_PACKET_NS for e in missing) and
          len(missing) == 60 * 12,
          'a missing chunk: exit %d, %d events missing (720 of cpu1 chunk 2 expected)' %
          (r.returncode, len(missing)))


WINDOW = (td.SEEK_T0 + 130 * td.SEEK_PACKET_NS, td.SEEK_T0 + 135 * td.SEEK_PACKET_NS)


def window_despite(ctx, seq, cpu, ts, what):
    """A window over sets whose manifest of set @seq says CPU @cpu's chunk
    starts at @ts: it prints what a full pass does, and says the manifest
    is wrong (exit 3)."""
    b, e = WINDOW
    d, ref = daemon_dir(ctx, assembled=5)
    want = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *td.window_args(b, e), ref)
    check(want.returncode == 0 and events(want.stdout), 'the window: %s' % want.stderr)

    def lie(man):
        for c in man['cpus']:
            if c['cpu'] == cpu:
                c['first_timestamp'] = ts
                c['last_timestamp'] = max(ts, c['last_timestamp'])
    edit_manifest(os.path.join(d, 'chunk-%06d' % seq), lie)
    r = rt_env({}, 'report', *td.window_args(b, e), *sets_of(d))
    check(events(r.stdout) == events(want.stdout),
          '%s: the window prints %d events, a full pass %d' %
          (what, len(events(r.stdout)), len(events(want.stdout))))
    check(r.returncode == 3 and "its manifest's first_timestamp is not its first packet's" in r.stderr,
          '%s: exit %d, not said: %s' % (what, r.returncode, r.stderr[-800:]))


@test
def manifest_time_after_the_window(ctx):
    """A manifest edited to put the chunk that holds a window after it:
    the chunk is read, the lie said."""
    window_despite(ctx, 3, 0, td.SEEK_T0 + 500 * td.SEEK_PACKET_NS,
                   'chunk 3 of cpu0 said to start after the window')


@test
def manifest_time_before_the_window(ctx):
    """A manifest edited to put a later chunk before a window: the chunks
    before it (the window's) are not taken for cold, the lie said."""
    window_despite(ctx, 4, 1, td.SEEK_T0 + 1 * td.SEEK_PACKET_NS,
                   'chunk 4 of cpu1 said to start before the window')


@test
def manifest_time_true_skips(ctx):
    """A true manifest still keeps seeking cheap: a chunk after the window
    (its first packet confirms where it starts) is not read, nor are the
    chunks after it -- damage at the end of chunk 4, chunk 5 turned to
    noise, are not seen by the window (and are by a full report)."""
    b, e = WINDOW
    d, ref = daemon_dir(ctx, assembled=5)
    want = rt_env({'RINGTRACE_SEEK': '0'}, 'report', *td.window_args(b, e), ref)
    for c in range(2):
        path = os.path.join(d, 'chunk-000004', 'cpu%d-000004.zst' % c)
        flip(path, td.index_of(path)[1][-1][0] + 40)
        path = os.path.join(d, 'chunk-000005', 'cpu%d-000005.zst' % c)
        with open(path, 'r+b') as f:
            f.write(random.Random(c).randbytes(os.path.getsize(path)))
    r = rt_env({}, 'report', *td.window_args(b, e), *sets_of(d))
    check(r.returncode == 0 and events(r.stdout) == events(want.stdout),
          'a window before damaged chunks read them: exit %d: %s' % (r.returncode, r.stderr[-800:]))
    full = rt('report', *sets_of(d))
    check(full.returncode == 3, 'report of it all did not see the damage: %d' % full.returncode)


# ---- the runner ------------------------------------------------------------------

def main():
    args = td.suite_args(__doc__, 'RT_SETS_BIN')
    if td.missing('sets', [td.RINGTRACE, td.RINGTRACE_ASAN],
                  'run make -C tools ringtrace ringtrace-asan'):
        return 1
    return td.run_suite('sets', TESTS, lambda tmp: Ctx(tmp), args)


if __name__ == '__main__':
    sys.exit(main())
