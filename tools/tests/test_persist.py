#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of `ringtrace recover` (ringtraced --recover) on persistent
region images (no kernel needed).

Images come from gentrace.py's make_image(): what ringtrace.ko leaves in
its region, rings wrapped, the newest packet of a CPU in the state a crash
left it.  Checked: every marker the image holds whole is recovered, in
order, and the records in flight are dropped and counted exactly; report
and babeltrace2 read the directory; each header field a reader can check,
flipped, is refused and named; a scribbled packet costs that packet alone
(saved, exit 3); a truncated image, zeros and noise; another build
(refused, --force reads).

Usage: test_persist.py [-k SUBSTRING] [-v] [--keep]
RT_PERSIST_BIN=/other/tools/ringtrace runs them with that build (how they
are shown to fail before the command existed).
Last line: `persist: N passed, M failed`.
"""

import json
import os
import random
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gentrace as gt  # noqa: E402
import test_decoder as td  # noqa: E402
from test_decoder import check, Fail  # noqa: E402

TESTS, test = td.registry()
S = 4096            # make_image()'s sub-buffer


Ctx = td.PathCtx


def recover(ctx, img, *extra):
    """ringtrace recover --image of the bytes IMG into a new directory:
    (the run, the directory)."""
    path = ctx.path('image')
    with open(path, 'wb') as f:
        f.write(img)
    out = ctx.path('out')
    r = td.rt('recover', '--image', path, '-o', out, *extra)
    return r, out


def crash_json(out):
    with open(os.path.join(out, '.ringtrace-crash.json')) as f:
        return json.load(f)


MARKER = re.compile(r'^\[[0-9.]+\] (cpu\d+) \S+ ringtrace_marker: len=\d+, data="([^"]*)"$')


def markers(out):
    """report's markers per CPU, in the order it prints them."""
    r = td.rt('report', out)
    check(r.returncode == 0, 'report exit %d: %s' % (r.returncode, r.stderr))
    got = {}
    for line in r.stdout.splitlines():
        m = MARKER.match(line)
        if m:
            got.setdefault(int(m.group(1)[3:]), []).append(m.group(2))
    return got


def expect_run(r, status, what):
    check(r.returncode == status, '%s: exit %d (wanted %d): %s%s'
          % (what, r.returncode, status, r.stdout, r.stderr))


def check_accounting(out, exp, damaged=None):
    """The json's counts are the image's (damaged: {cpu: n})."""
    js = crash_json(out)
    check(js['format'] == 'ringtrace-previous-boot' and js['format_version'] == 1,
          'json format: %r' % js)
    cpus = {c['cpu']: c for c in js['cpus']}
    check(sorted(cpus) == sorted(exp['cpus']),
          'json cpus %s, image %s' % (sorted(cpus), sorted(exp['cpus'])))
    for cpu, e in exp['cpus'].items():
        c = cpus[cpu]
        dmg = (damaged or {}).get(cpu, 0)
        want = {'events': len(e['markers']), 'in_flight_dropped': e['in_flight'],
                'partial_packets': e['partial'], 'damaged_packets': dmg,
                'packets': e['packets'] - dmg}
        for k, v in want.items():
            check(c[k] == v, 'cpu%d %s: %s, wanted %s' % (cpu, k, c[k], v))


def check_markers(out, exp, leave_out=None):
    got = markers(out)
    for cpu, e in exp['cpus'].items():
        want = [m for m in e['markers'] if m not in (leave_out or {}).get(cpu, ())]
        have = got.get(cpu, [])
        check(have == want, 'cpu%d: %d markers recovered, %d wanted; first difference at %s'
              % (cpu, len(have), len(want),
                 next((i for i, (a, b) in enumerate(zip(have, want)) if a != b),
                      min(len(have), len(want)))))


@test
def test_recover_markers_in_order(ctx):
    """Every marker the image holds whole, in order, per CPU; the record
    in flight dropped and counted; the exit 0; report clean."""
    img, exp = gt.make_image(seed=1, tails={0: 'open', 2: 'closed-incomplete'})
    r, out = recover(ctx, img)
    expect_run(r, 0, 'recover')
    check('previous trace in %s' % out in r.stdout, 'stdout: %r' % r.stdout)
    check_markers(out, exp)
    check_accounting(out, exp)
    check(exp['cpus'][0]['in_flight'] == 1 and exp['cpus'][2]['in_flight'] == 1,
          'the image has no record in flight: %r' % exp['cpus'])
    c = td.rt('check', out)
    expect_run(c, 0, 'check')
    with open(os.path.join(out, 'metadata')) as f:
        check(f.read().startswith('/* CTF 1.8 */'), 'metadata not CTF')
    check(os.path.exists(os.path.join(out, '.ringtrace-ksyms.zst')), 'no ksyms')
    q = td.rt('sql', '--csv', out, 'select cpu, count(*) from raw group by cpu order by cpu')
    expect_run(q, 0, 'sql')
    want = ''.join('%d,%d\n' % (c, len(e['markers'])) for c, e in sorted(exp['cpus'].items()))
    check(q.stdout.endswith(want), 'sql: %r, wanted %r' % (q.stdout, want))


@test
def test_recover_tails(ctx):
    """The newest packet in each state a crash leaves it: exact counts."""
    for tail, packets in (('closed', 6), ('idle', 3), ('no-header', 6),
                          ('open', 2), ('closed-incomplete', 9)):
        img, exp = gt.make_image(seed=7, tails={0: tail, 2: 'closed'},
                                 packets=packets)
        r, out = recover(ctx, img)
        expect_run(r, 0, tail)
        try:
            check_markers(out, exp)
            check_accounting(out, exp)
        except Fail as e:
            raise Fail('%s: %s' % (tail, e))


@test
def test_recover_taken_by_consumer(ctx):
    """Packets a recording had taken (GET wrote their events, numbered them
    from its origin; PUT retired the slot's events): kept, counted in the
    json, numbered as the writer did."""
    img, exp = gt.make_image(seed=15, tails={0: 'open'}, taken=2)
    r, out = recover(ctx, img)
    expect_run(r, 0, 'recover')
    check_markers(out, exp)
    check_accounting(out, exp)
    js = {c['cpu']: c for c in crash_json(out)['cpus']}
    check(js[0]['taken_by_consumer'] == 2 and js[2]['taken_by_consumer'] == 2,
          'json: %r' % js)
    # A taken packet's count that its records belie is damage all the same.
    at, _ = slot_at(exp, 0, 2)
    b = bytearray(img)
    b[at + 84] ^= 1
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'taken packet, count off')
    check('cpu0 packet 2 is damaged' in r.stderr and 'header says' in r.stderr,
          'stderr: %r' % r.stderr)


@test
def test_recover_babeltrace2(ctx):
    """babeltrace2 reads the directory (after unpack) and sees every
    marker report sees."""
    img, exp = gt.make_image(seed=3, tails={0: 'open'})
    r, out = recover(ctx, img)
    expect_run(r, 0, 'recover')
    ctf = ctx.path('ctf')
    u = td.rt('unpack', out, ctf)
    expect_run(u, 0, 'unpack')
    b = td.run(['babeltrace2', ctf])
    check(b.returncode == 0, 'babeltrace2: %s' % b.stderr)
    got = re.findall(r'ringtrace_marker: .*data = "([^"]*)"', b.stdout)
    want = sum((e['markers'] for e in exp['cpus'].values()), [])
    check(sorted(got) == sorted(want), 'babeltrace2: %d markers, %d wanted'
          % (len(got), len(want)))


def reseal(img):
    """The header's checksum made right again (after a field was changed)."""
    page = bytearray(img[:4096])
    struct.pack_into('<Q', page, gt.PERSIST_OFF['checksum'], 0)
    struct.pack_into('<Q', page, gt.PERSIST_OFF['checksum'], gt.xxh64_bytes(bytes(page)))
    return bytes(page) + img[4096:]


def set_field(img, name, value, size=8):
    b = bytearray(img)
    b[gt.PERSIST_OFF[name]:gt.PERSIST_OFF[name] + size] = value.to_bytes(size, 'little')
    return bytes(b)


def field(img, name, size=8):
    return int.from_bytes(img[gt.PERSIST_OFF[name]:gt.PERSIST_OFF[name] + size], 'little')


@test
def test_recover_header_fields(ctx):
    """Each field a reader can check, changed (the checksum made right
    again, so that the field's own check decides): refused, exit 1, the
    field and its offset named, nothing written."""
    img, _ = gt.make_image(seed=2)
    cases = [('layout', 2, 4), ('header_size', 512, 4),
             ('region_size', field(img, 'region_size') - 4096, 8),
             ('source', 7, 4), ('page_size', 4097, 4),
             ('build_id_len', 21, 4),
             ('subbuf_size', 4096 + 512, 8), ('num_subbufs', 3, 4),
             ('nr_slices', 0, 4)]
    for name in ('slice_size', 'counters_size', 'state_offset', 'state_size',
                 'slices_offset', 'slices_size', 'metadata_offset[0]',
                 'metadata_offset[1]', 'metadata_size', 'ksyms_offset[0]',
                 'ksyms_offset[1]', 'ksyms_size', 'rings_offset', 'rings_size'):
        cases.append((name, field(img, name) + 4096, 8))
    for i in (0, 15):
        cases.append(('reserved[%d]' % i, 1, 8))
    for name, value, size in cases:
        bad = reseal(set_field(img, name, value, size))
        r, out = recover(ctx, bad)
        named = 'offset %d: %s' % (gt.PERSIST_OFF[name], name)
        check(r.returncode == 1 and named in r.stderr,
              '%s = %d: exit %d, stderr %r (wanted 1 and "%s")'
              % (name, value, r.returncode, r.stderr, named))
        check(not os.path.exists(out), '%s: %s written' % (name, out))
    # The checksum itself: any header byte changed without it.
    b = bytearray(img)
    b[gt.PERSIST_OFF['boot_id']] ^= 1
    r, out = recover(ctx, bytes(b))
    check(r.returncode == 1 and 'offset %d: checksum' % gt.PERSIST_OFF['checksum'] in r.stderr,
          'checksum: exit %d, %r' % (r.returncode, r.stderr))
    # Fields checked against something else: the trace uuid against the
    # metadata's, the release against this kernel's (its build: see
    # test_recover_other_build).
    b = bytearray(img)
    b[gt.PERSIST_OFF['trace_uuid']] ^= 1
    r, out = recover(ctx, reseal(bytes(b)))
    check(r.returncode == 1 and "metadata is another trace's" in r.stderr,
          'trace_uuid: exit %d, %r' % (r.returncode, r.stderr))
    check(not os.path.exists(out), 'trace_uuid: written')
    b = bytearray(img)
    b[gt.PERSIST_OFF['release']] ^= 1
    r, out = recover(ctx, reseal(bytes(b)))
    check(r.returncode == 1 and 'another build' in r.stderr,
          'release: exit %d, %r' % (r.returncode, r.stderr))
    # Past the header, in its page: must be zero.
    b = bytearray(img)
    b[1000] = 1
    r, out = recover(ctx, reseal(bytes(b)))
    check(r.returncode == 1 and 'offset 1000:' in r.stderr,
          'header page tail: exit %d, %r' % (r.returncode, r.stderr))
    # The state's lifecycle.
    st = field(img, 'state_offset')
    b = bytearray(img)
    b[st] = 9
    r, out = recover(ctx, bytes(b))
    check(r.returncode == 1 and 'offset %d: lifecycle 9' % st in r.stderr,
          'lifecycle: exit %d, %r' % (r.returncode, r.stderr))


@test
def test_recover_no_previous_trace(ctx):
    """Zeros, noise, an armed region never used (EMPTY), a magic byte
    off: "no previous trace", exit 0, nothing written."""
    img, _ = gt.make_image(seed=4)
    rng = random.Random(5)
    noise = bytes(rng.randrange(256) for _ in range(len(img)))
    b = bytearray(img)
    b[0] ^= 0x20
    empty = bytearray(img)
    empty[field(img, 'state_offset')] = 0
    # Armed (lifecycle live) and never written: every counter zero.
    unused, uexp = gt.make_image(seed=4)
    unused = bytearray(unused)
    for counters, _ in uexp['slots'].values():
        unused[counters:counters + uexp['layout']['counters_size']] = \
            bytes(uexp['layout']['counters_size'])
    for what, data in (('zeros', bytes(len(img))), ('noise', noise),
                       ('magic', bytes(b)), ('empty', bytes(empty)),
                       ('nothing', b''), ('never written', bytes(unused))):
        r, out = recover(ctx, data)
        check(r.returncode == 0 and 'no previous trace' in r.stdout,
              '%s: exit %d, %r %r' % (what, r.returncode, r.stdout, r.stderr))
        check(not os.path.exists(out), '%s: %s written' % (what, out))


@test
def test_recover_truncated(ctx):
    """An image cut short: refused, named, nothing written."""
    img, _ = gt.make_image(seed=6)
    for cut, msg in ((len(img) // 2, 'region_size'), (100, 'ends inside its header page')):
        r, out = recover(ctx, img[:cut])
        check(r.returncode == 1 and msg in r.stderr,
              'cut at %d: exit %d, %r' % (cut, r.returncode, r.stderr))
        check(not os.path.exists(out), 'cut at %d: written' % cut)


def slot_at(exp, cpu, seq):
    """Where packet SEQ of CPU is in the image, and its slot's counters."""
    counters, ring = exp['slots'][cpu]
    slot = exp['cpus'][cpu]['slot_of'][seq]
    return ring + slot * S, counters + 16 * slot


@test
def test_recover_scribbled_packet(ctx):
    """Bytes of one packet scribbled (a firmware's): that packet alone is
    left out, named, saved verbatim; exit 3; every other marker there, and
    the directory reads clean afterwards."""
    img, exp = gt.make_image(seed=8, tails={0: 'open'})
    seq = 3
    at, _ = slot_at(exp, 2, seq)
    b = bytearray(img)
    b[at + 300:at + 340] = b'\xff' * 40
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'recover')
    check(re.search(r'cpu2 packet %d is damaged' % seq, r.stderr), 'stderr: %r' % r.stderr)
    saved = os.path.join(out, '.ringtrace-damaged', 'cpu2-%d.bin' % seq)
    with open(saved, 'rb') as f:
        check(f.read() == bytes(b[at:at + S]), 'saved packet is not the sub-buffer')
    check_markers(out, exp, leave_out={2: exp['cpus'][2]['by_seq'][seq]})
    check_accounting(out, dict(exp, cpus={
        c: (dict(e, markers=[m for m in e['markers'] if m not in e['by_seq'][seq]])
            if c == 2 else e) for c, e in exp['cpus'].items()}), damaged={2: 1})
    c = td.rt('check', out)
    expect_run(c, 0, 'check of the recovered trace')
    # Another packet's uuid (another trace's packet in the ring).
    img2, exp2 = gt.make_image(seed=9)
    at, _ = slot_at(exp2, 0, 4)
    b = bytearray(img2)
    b[at + 4] ^= 0xff
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'foreign uuid')
    check('cpu0 packet 4 is damaged' in r.stderr and 'uuid' in r.stderr,
          'stderr: %r' % r.stderr)
    check_markers(out, exp2, leave_out={0: exp2['cpus'][0]['by_seq'][4]})
    # A timestamp_begin moved back over the packet before it: each packet
    # checks alone, the stream does not; the one out of place goes.
    at3, _ = slot_at(exp2, 2, 3)
    at2, _ = slot_at(exp2, 2, 2)
    b = bytearray(img2)
    prev_begin = int.from_bytes(b[at2 + 32:at2 + 40], 'little')
    b[at3 + 32:at3 + 40] = (prev_begin + 1).to_bytes(8, 'little')
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'overlapping times')
    check('cpu2 packet 3 is damaged' in r.stderr and 'overlap' in r.stderr,
          'stderr: %r' % r.stderr)
    check_markers(out, exp2, leave_out={2: exp2['cpus'][2]['by_seq'][3]})
    expect_run(td.rt('check', out), 0, 'check after overlapping times')


@test
def test_recover_counters(ctx):
    """Counters that contradict the packet (its record count) or put a
    slot generations behind the ring (stale): damage of that packet, exit
    3, the rest kept."""
    img, exp = gt.make_image(seed=10)
    at, cnt = slot_at(exp, 0, 3)
    b = bytearray(img)
    ev = int.from_bytes(b[cnt + 8:cnt + 16], 'little')
    b[cnt + 8:cnt + 16] = (ev + 1).to_bytes(8, 'little')
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'events count')
    check('cpu0 packet 3 is damaged' in r.stderr and "slot's counters say" in r.stderr,
          'stderr: %r' % r.stderr)
    check_markers(out, exp, leave_out={0: exp['cpus'][0]['by_seq'][3]})
    # A stale generation: the slot of seq 8 with the commit count of its
    # first generation (seq 0), two rings back.
    img3, exp3 = gt.make_image(seed=10, packets=12)
    at, cnt = slot_at(exp3, 2, 8)
    b = bytearray(img3)
    b[cnt:cnt + 8] = S.to_bytes(8, 'little')      # generation 0 complete
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'stale')
    check('outside the span of packets the ring holds' in r.stderr, 'stderr: %r' % r.stderr)
    js = {c['cpu']: c for c in crash_json(out)['cpus']}
    check(js[2]['stale_packets'] == 1, 'json: %r' % js[2])
    check_markers(out, exp3, leave_out={2: exp3['cpus'][2]['by_seq'][8]})
    # A counter that claims a generation far ahead: that packet alone goes
    # (the ring is where most of its packets are).
    b = bytearray(img3)
    b[cnt:cnt + 8] = (S * 1000).to_bytes(8, 'little')
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'far ahead')
    js = {c['cpu']: c for c in crash_json(out)['cpus']}
    check(js[2]['stale_packets'] == 1 and js[2]['packets'] == 3, 'json: %r' % js[2])
    check_markers(out, exp3, leave_out={2: exp3['cpus'][2]['by_seq'][8]})
    check(os.path.exists(os.path.join(out, '.ringtrace-damaged', 'cpu2-%d.bin'
                                      % (999 * 4 + exp3['cpus'][2]['slot_of'][8]))),
          'the stale packet is not saved: %r' % os.listdir(os.path.join(out, '.ringtrace-damaged')))
    # Every packet's header damaged: a directory with no stream, said.
    b = bytearray(img)
    for cpu in exp['slots']:
        for seq in exp['cpus'][cpu]['slot_of']:
            at, _ = slot_at(exp, cpu, seq)
            b[at] ^= 0xff
    r, out = recover(ctx, bytes(b))
    expect_run(r, 3, 'every packet damaged')
    check('no packet of the previous trace could be kept' in r.stderr, 'stderr: %r' % r.stderr)


@test
def test_recover_metadata_copies(ctx):
    """The newest valid metadata copy is taken; none valid: refused."""
    img, exp = gt.make_image(seed=11, metadata_copies=('bad', 'good'))
    r, out = recover(ctx, img)
    expect_run(r, 0, 'copy A bad, B good')
    check_markers(out, exp)
    img, exp = gt.make_image(seed=11, metadata_copies=('bad', 'none'))
    r, out = recover(ctx, img)
    check(r.returncode == 1 and 'metadata is damaged' in r.stderr,
          'no valid copy: exit %d, %r' % (r.returncode, r.stderr))
    check(not os.path.exists(out), 'no valid copy: %s written' % out)
    img, exp = gt.make_image(seed=11, metadata_copies=('none', 'none'))
    r, out = recover(ctx, img)
    check(r.returncode == 1 and 'holds no metadata' in r.stderr,
          'no copy: exit %d, %r' % (r.returncode, r.stderr))
    img, exp = gt.make_image(seed=11, ksyms=False)
    r, out = recover(ctx, img)
    expect_run(r, 0, 'no ksyms')
    check('stacks print as addresses' in r.stderr, 'stderr: %r' % r.stderr)


@test
def test_recover_other_build(ctx):
    """An image of another kernel build: refused with both builds named,
    exit 1, nothing written; --force reads it."""
    release, version, bid = gt.running_identity()
    other = ('5.10.0-other', '#1 SMP other', bytes(range(1, 21)))
    img, exp = gt.make_image(seed=12, identity=other)
    r, out = recover(ctx, img)
    check(r.returncode == 1, 'exit %d: %r' % (r.returncode, r.stderr))
    for s in ('5.10.0-other', bytes(range(1, 21)).hex(), release,
              bid.hex() if bid else 'unknown', '--force'):
        check(s in r.stderr, '"%s" not in %r' % (s, r.stderr))
    check(not os.path.exists(out), 'written')
    r, out = recover(ctx, img, '--force')
    expect_run(r, 0, '--force')
    check_markers(out, exp)
    if bid:
        img, exp = gt.make_image(seed=12, identity=(release, version, b'\x07' * 20))
        r, out = recover(ctx, img)
        check(r.returncode == 1 and '0707070707' in r.stderr and bid.hex() in r.stderr,
              'same release, another build-id: exit %d, %r' % (r.returncode, r.stderr))


def fake_module(ctx, img, release='file'):
    """A copy of the module's tree (-d DIR takes a directory as it is):
    DIR/ringtrace/persist/image holding IMG, and persist/release a file to
    read the uuid back from (or a directory: a release that fails)."""
    root = ctx.path('debugfs')
    persist = os.path.join(root, 'ringtrace', 'persist')
    os.makedirs(persist)
    with open(os.path.join(root, 'ringtrace', 'tracing_on'), 'w') as f:
        f.write('0\n')
    if img is None:
        os.rmdir(persist)
        return root, None
    with open(os.path.join(persist, 'image'), 'wb') as f:
        f.write(img)
    rel = os.path.join(persist, 'release')
    if release == 'file':
        open(rel, 'w').close()
    else:
        os.mkdir(rel)
    return root, rel


def uuid_text(u):
    h = u.hex()
    return '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def release_written(rel):
    with open(rel) as f:
        return f.read()


@test
def test_recover_release(ctx):
    """From the module's persist/image: the directory written and synced,
    then persist/release given the image's trace uuid; --keep leaves the
    region, --discard releases it writing nothing; a release that fails
    keeps the directory and says so (exit 1); no persist/ (a module
    without a region): no previous trace."""
    img, exp = gt.make_image(seed=13, tails={0: 'open'})
    uuid = uuid_text(exp['uuid'])
    root, rel = fake_module(ctx, img)
    out = ctx.path('out')
    r = td.rt('recover', '-d', root, '-o', out)
    expect_run(r, 0, 'recover')
    check(release_written(rel) == uuid, 'release got %r, wanted %r'
          % (release_written(rel), uuid))
    check_markers(out, exp)
    root, rel = fake_module(ctx, img)
    out = ctx.path('out')
    expect_run(td.rt('recover', '-d', root, '-o', out, '--keep'), 0, '--keep')
    check(release_written(rel) == '', '--keep released: %r' % release_written(rel))
    check_markers(out, exp)
    root, rel = fake_module(ctx, img)
    r = td.rt('recover', '-d', root, '--discard')
    expect_run(r, 0, '--discard')
    check(release_written(rel) == uuid and 'discarded' in r.stdout,
          '--discard: %r %r' % (release_written(rel), r.stdout))
    # A damaged header is refused, and --discard still releases it by the
    # uuid it holds.
    bad = bytearray(img)
    bad[gt.PERSIST_OFF['boot_id']] ^= 1
    root, rel = fake_module(ctx, bytes(bad))
    r = td.rt('recover', '-d', root, '-o', ctx.path('out'))
    check(r.returncode == 1 and 'checksum' in r.stderr and '--discard' in r.stderr,
          'damaged header: exit %d, %r' % (r.returncode, r.stderr))
    check(release_written(rel) == '', 'damaged header released: %r' % release_written(rel))
    r = td.rt('recover', '-d', root, '--discard')
    expect_run(r, 0, '--discard of a damaged header')
    check(release_written(rel) == uuid, '--discard of a damaged header: %r'
          % release_written(rel))
    root, rel = fake_module(ctx, img, release='fails')
    out = ctx.path('out')
    r = td.rt('recover', '-d', root, '-o', out)
    check(r.returncode == 1 and 'persist/release' in r.stderr,
          'failed release: exit %d, %r' % (r.returncode, r.stderr))
    check_markers(out, exp)
    root, _ = fake_module(ctx, None)
    r = td.rt('recover', '-d', root, '-o', ctx.path('out'))
    check(r.returncode == 0 and 'no previous trace' in r.stdout and
          'no persistent region' in r.stderr,
          'no region: exit %d, %r %r' % (r.returncode, r.stdout, r.stderr))


@test
def test_recover_default_name(ctx):
    """ringtraced --recover --root DIR: the directory is named after the
    time the region was armed; a second one gets .1."""
    img, exp = gt.make_image(seed=14)
    path = ctx.path('image')
    with open(path, 'wb') as f:
        f.write(img)
    root = ctx.path('root')
    # The ringtraced beside the ringtrace under test (RT_PERSIST_BIN's too).
    daemon = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(td.RINGTRACE))),
                          'daemon', 'ringtraced')
    env = dict(os.environ, TZ='UTC')
    for suffix in ('', '.1'):
        r = td.run([daemon, '--recover', '--image', path, '--root', root], env=env)
        expect_run(r, 0, 'ringtraced --recover --root')
        name = '20251129-000000-previous-boot' + suffix
        check(os.path.isdir(os.path.join(root, name)),
              '%s not in %s: %s' % (name, os.listdir(root), r.stdout))
    check_markers(os.path.join(root, '20251129-000000-previous-boot.1'), exp)


@test
def test_recover_real_image(ctx):
    """An image ringtrace.ko made (real-image/README.md), its metadata put
    into copy A: every marker, in order, exit 0, the trace reads clean."""
    real = os.path.join(HERE, 'real-image')
    img = bytearray(subprocess.run(['zstd', '-q', '-d', '-c', os.path.join(real, 'image.zst')],
                                   stdout=subprocess.PIPE, check=True).stdout)
    md = subprocess.run(['zstd', '-q', '-d', '-c', os.path.join(real, 'metadata.zst')],
                        stdout=subprocess.PIPE, check=True).stdout
    at = field(bytes(img), 'metadata_offset[0]')
    check(img[at:at + 32] == bytes(32), 'copy A is not empty')
    blob = gt.persist_blob(md, 1)
    img[at:at + len(blob)] = blob
    r, out = recover(ctx, bytes(img), '--force')
    expect_run(r, 0, 'recover')
    got = markers(out)
    check(got.get(0) == ['marker %d\\n' % i for i in range(4000)] and not got.get(1),
          'markers: cpu0 %d (%r..), cpu1 %d' % (len(got.get(0, [])), got.get(0, [''])[:2],
                                                len(got.get(1, []))))
    js = crash_json(out)
    check(js['previous_boot']['lifecycle'] == 'unloaded' and
          js['previous_boot']['release'] == '6.12.117+deb12-amd64', 'json: %r' % js)
    expect_run(td.rt('check', out), 0, 'check')


# The crash path's state area (<linux/ringtrace_persist.h>): entries at
# +256, 1640 bytes each; the xxh64 with valid and checksum zero.
CRASH = struct.Struct('<IIIIQQii16sII64Q1024s4QQ')
KERNEL_PANIC = [('enum : uint32_t { panic = 1, oops = 2, emerg_restart = 3, '
                 'shutdown = 4 }', 'reason', None), ('uint32_t', 'cpu', None),
                (gt.HEX64, 'ip', None), ('int32_t', 'tid', None),
                ('int32_t', 'pid', None), ('utf8_t', 'comm', 16),
                ('uint16_t', 'message_len', None),
                ('utf8_t', 'message', 'message_len')]


def crash_entry(reason, cpu, ts, msg, ips, comm=b'bash', tid=175, valid=True,
                flags=0):
    vals = [0, reason, flags, cpu, ts, 0, tid, tid, comm, len(ips), 0]
    vals += list(ips) + [0] * (64 - len(ips)) + [msg.encode(), 0, 0, 0, 0, 0]
    raw = bytearray(CRASH.pack(*vals))
    struct.pack_into('<Q', raw, CRASH.size - 8, gt.xxh64_bytes(bytes(raw)))
    if valid:
        struct.pack_into('<I', raw, 0, 0x48534152)
    return bytes(raw)


def with_crash(img, entries, kernel_panic=True):
    """IMG with the crash ENTRIES in its state area and, with KERNEL_PANIC,
    a newer metadata copy that declares kernel_panic and the stack
    trailers as the module does."""
    img = bytearray(img)
    st = field(bytes(img), 'state_offset')
    struct.pack_into('<II', img, st + 4, len(entries), len(entries))
    for i, e in enumerate(entries):
        img[st + 256 + i * CRASH.size:st + 256 + (i + 1) * CRASH.size] = e
    if kernel_panic:
        uuid = img[gt.PERSIST_OFF['trace_uuid']:gt.PERSIST_OFF['trace_uuid'] + 16]
        events = gt.EVENTS + [(4, 'stack_def', gt.STACK_DEF), (5, 'stack_ref', gt.STACK_REF),
                              (41, 'kernel_panic', KERNEL_PANIC)]
        blob = gt.persist_blob(gt.metadata(bytes(uuid), 0, 0, events, untimed=5).encode(), 2)
        at = field(bytes(img), 'metadata_offset[1]')
        img[at:at + len(blob)] = blob
    return bytes(img)


@test
def test_recover_kernel_panic(ctx):
    """The crash path's panic entry becomes its CPU's last event,
    kernel_panic, with its stack as trailers; an oops entry and one cut
    short are not appended; the json lists the whole ones; babeltrace2
    reads the directory.  Without kernel_panic in the metadata: the json
    alone, said."""
    img, exp = gt.make_image(seed=3, tails={0: 'open'})
    ips = (0xffffffff81001010, 0xffffffff81001234)
    entries = [crash_entry(2, 0, 59 * 10**9, 'Oops: general protection fault', ips[:1]),
               crash_entry(1, 2, 60 * 10**9, 'sysrq triggered crash', ips),
               crash_entry(1, 0, 61 * 10**9, 'cut short', ips, valid=False)]
    r, out = recover(ctx, with_crash(img, entries))
    expect_run(r, 0, 'recover')
    check('crash entry 2 was not written whole' in r.stderr, 'stderr: %r' % r.stderr)
    ctf = ctx.path('ctf')
    expect_run(td.rt('unpack', out, ctf), 0, 'unpack')
    events, _ = td.bt2(ctf)
    last = {}
    for ts, cpu, name in events:
        if name not in ('stack_def', 'stack_ref'):
            last[cpu] = (ts, name)
    check(last.get(2) == (60 * 10**9, 'kernel_panic'),
          'cpu2 ends with %r, not kernel_panic at 60 s' % (last.get(2),))
    check(last.get(0, (0, ''))[1] == 'ringtrace_marker', 'cpu0 ends with %r' % (last.get(0),))
    check([n for _, c, n in events if c == 2][-3:] == ['kernel_panic', 'stack_def', 'stack_ref'],
          'cpu2 tail: %r' % [n for _, c, n in events if c == 2][-3:])
    bt = td.run(['babeltrace2', ctf]).stdout
    line = next((l for l in bt.splitlines() if 'kernel_panic' in l), '')
    for want in ('reason = ( "panic" : container = 1 )', 'comm = "bash"',
                 'message = "sysrq triggered crash"', 'tid = 175'):
        check(want in line, 'kernel_panic: %r wanted in %r' % (want, line))
    check('FFFFFFFF81001234' in bt.upper(), 'the stack_def holds no 0xffffffff81001234')
    js = crash_json(out)
    check(js['hooks_run'] == 3 and [(e['reason'], e['cpu'], e['message']) for e in js['entries']] ==
          [('oops', 0, 'Oops: general protection fault'), ('panic', 2, 'sysrq triggered crash')],
          'json entries: %r' % js['entries'])
    check(js['entries'][1]['stack'] == ['0xffffffff81001010', '0xffffffff81001234'],
          'json stack: %r' % js['entries'][1]['stack'])
    cpus = {c['cpu']: c for c in js['cpus']}
    check(cpus[2]['kernel_panic'] == 1 and cpus[0]['kernel_panic'] == 0,
          'json kernel_panic counts: %r' % cpus)
    check_markers(out, exp)
    expect_run(td.rt('check', out), 0, 'check')

    r, out = recover(ctx, with_crash(img, entries[:2], kernel_panic=False))
    expect_run(r, 0, 'recover without kernel_panic declared')
    check('declares no kernel_panic' in r.stderr, 'stderr: %r' % r.stderr)
    check(len(crash_json(out)['entries']) == 2, 'json: %r' % crash_json(out)['entries'])
    ctf = ctx.path('ctf')
    expect_run(td.rt('unpack', out, ctf), 0, 'unpack')
    events, _ = td.bt2(ctf)
    check('kernel_panic' not in [n for _, _, n in events], 'kernel_panic written undeclared')


@test
def test_recover_oops_written_live(ctx):
    """An oops entry the crash path also wrote into its CPU's ring
    (RINGTRACE_PERSIST_CRASH_LIVE) is listed with written_live true, one
    that it could not write (an oops inside a writer) false, as a panic's
    (appended here, not live); nothing is appended for either oops: a
    live one is in the ring already, and an oops not last is out of time
    order."""
    img, exp = gt.make_image(seed=5, tails={0: 'open'})
    ips = (0xffffffff81001010, 0xffffffff81002345)
    entries = [crash_entry(2, 2, 58 * 10**9, 'Oops', ips, flags=4),
               crash_entry(2, 0, 59 * 10**9, 'Oops', ips),
               crash_entry(1, 2, 60 * 10**9, 'Oops', ips)]
    r, out = recover(ctx, with_crash(img, entries))
    expect_run(r, 0, 'recover')
    js = crash_json(out)
    check([(e['reason'], e['cpu'], e['written_live']) for e in js['entries']] ==
          [('oops', 2, True), ('oops', 0, False), ('panic', 2, False)],
          'json entries: %r' % js['entries'])
    cpus = {c['cpu']: c['kernel_panic'] for c in js['cpus']}
    check(cpus == {0: 0, 2: 1}, 'kernel_panic appended per cpu (the panic alone): %r' % cpus)
    check_markers(out, exp)


@test
def test_recover_how_it_ended(ctx):
    """recover says whether the previous boot crashed, and how it ended,
    in one line on stdout and as the json's crashed/ended: a shutdown
    entry (reboot -f, power off) is not a crash and appends no
    kernel_panic; a panic and an emergency restart are, and do (after a
    live oops too: the crash chain's oops case, sysrq b); an oops
    before a shutdown is a crash; no entry at all is unknown (no hook
    ran: a reset, a hang)."""
    img, exp = gt.make_image(seed=4, tails={0: 'open'})
    ips = (0xffffffff81001010, 0xffffffff81002345)
    cases = (
        ([crash_entry(4, 0, 60 * 10**9, 'shutdown', ips, comm=b'reboot')],
         'the previous boot ended in a reboot or power off (cpu 0), not a crash: no kernel_panic',
         False, 'shutdown', 0),
        ([crash_entry(1, 2, 60 * 10**9, 'sysrq triggered crash', ips)],
         'the previous boot crashed: panic on cpu 2: "sysrq triggered crash"',
         True, 'panic', 1),
        ([crash_entry(3, 0, 60 * 10**9, 'emergency restart', ips)],
         'the previous boot ended in an emergency restart (cpu 0: sysrq b, or a watchdog), not a clean reboot',
         True, 'emerg_restart', 1),
        ([crash_entry(2, 2, 59 * 10**9, 'Oops: general protection fault', ips),
          crash_entry(4, 0, 60 * 10**9, 'shutdown', ips, comm=b'reboot')],
         'the previous boot ended in an oops on cpu 2 ("Oops: general protection fault"), '
         'then a reboot or power off (cpu 0)', True, 'shutdown', 0),
        ([crash_entry(2, 1, 59 * 10**9, 'Oops', ips, flags=4),
          crash_entry(3, 0, 60 * 10**9, 'emergency restart', ips)],
         'the previous boot ended in an oops on cpu 1 ("Oops"), then an emergency restart '
         '(cpu 0: sysrq b, or a watchdog), not a clean reboot', True, 'emerg_restart', 1),
        ([], 'no crash hook ran: the previous boot ended without a panic or a reboot the '
         'module saw (a reset, a hang, power lost)', None, 'unknown', 0),
        ([crash_entry(2, 2, 59 * 10**9, 'Oops: general protection fault', ips)],
         'the previous boot ended in an oops on cpu 2 ("Oops: general protection fault"), '
         'then no hook: no panic or reboot the module saw (a reset, a hang, power lost)',
         True, 'unknown', 0))
    for entries, line, crashed, ended, panics in cases:
        r, out = recover(ctx, with_crash(img, entries))
        expect_run(r, 0, 'recover, %s' % ended)
        check(line in r.stdout.splitlines(), '%s: %r not in stdout %r' % (ended, line, r.stdout))
        js = crash_json(out)
        check(js['crashed'] is crashed and js['ended'] == ended,
              '%s: json crashed %r, ended %r' % (ended, js['crashed'], js['ended']))
        check([e['reason'] for e in js['entries']] ==
              [('panic', 'oops', 'emerg_restart', 'shutdown')[e[1] - 1] for e in
               (CRASH.unpack(x) for x in entries)],
              '%s: json entries %r' % (ended, js['entries']))
        ctf = ctx.path('ctf')
        expect_run(td.rt('unpack', out, ctf), 0, 'unpack')
        events, _ = td.bt2(ctf)
        n = sum(1 for _, _, name in events if name == 'kernel_panic')
        check(n == panics, '%s: %d kernel_panic events, %d wanted' % (ended, n, panics))
        check_markers(out, exp)


@test
def test_recover_usage(ctx):
    """Options that do not go together: usage errors, exit 2."""
    for args, why in ((['--discard', '--image', '/nonexistent'], '--discard releases'),
                      (['--discard', '-o', ctx.path('x')], '--discard releases'),
                      (['stray'], 'no arguments are taken')):
        r = td.rt('recover', *args)
        check(r.returncode == 2 and why in r.stderr,
              '%s: exit %d %r' % (args, r.returncode, r.stderr))


@test
def test_report_tail_recovered(ctx):
    """report --tail N of a recovered image: per CPU, in CPU order, a
    header and the last N markers gentrace put whole in the image, in
    order (the record in flight is not among them); the loss line of the
    dropped record prints with the events once N reaches back to it; all
    as model_tail() makes it from the whole report."""
    img, exp = gt.make_image(seed=1, tails={0: 'open', 2: 'closed-incomplete'})
    r, out = recover(ctx, img)
    expect_run(r, 0, 'recover')
    for n in (1, 3, 20):
        t = td.check_tail(out, n)
        blocks = t.stdout.split('\n\n')
        check(len(blocks) == len(exp['cpus']) + 1, '--tail %d: %d blocks' % (n, len(blocks)))
        for block, (cpu, e) in zip(blocks, sorted(exp['cpus'].items())):
            lines = block.splitlines()
            check(re.match(r'^CPU %d: last %d events? before \[[0-9.]+\]$' % (cpu, n), lines[0]),
                  '--tail %d: header %r' % (n, lines[0]))
            got = [MARKER.match(l).group(2) for l in lines[1:] if MARKER.match(l)]
            check(got == e['markers'][-n:] and len(lines) == n + 1,
                  '--tail %d, cpu%d: %s, wanted the markers %s' % (n, cpu, lines[1:],
                                                                e['markers'][-n:]))
    full = td.rt('report', '--cpu', '0', out).stdout.splitlines()
    loss = max(i for i, l in enumerate(full) if ' cpu0 -- lost events=1 ' in l + ' ')
    after = sum(1 for l in full[loss + 1:] if MARKER.match(l))
    t = td.check_tail(out, after, '--cpu', '0')
    lines = t.stdout.splitlines()
    check(lines[1] == full[loss] and 'lost events=1 packets=0' in lines[1],
          '--tail %d: the record in flight\'s loss is not first: %s' % (after, lines[:3]))
    t = td.check_tail(out, len(exp['cpus'][0]['markers']))
    check(t.stdout.count('before the first packet') == 2,
          'every event: the losses before the first packets: %s' % t.stdout[:300])


def unit_recover(ctx, *args, **env):
    """daemon/ringtraced-recover (ringtraced.service's ExecStartPre) as the
    unit runs it, RINGTRACED the ringtraced beside the ringtrace under
    test, ENV the unit's environment (/etc/default/ringtraced)."""
    daemon = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(td.RINGTRACE))),
                          'daemon')
    e = dict(os.environ, TZ='UTC', RINGTRACED=os.path.join(daemon, 'ringtraced'))
    for k in ('RINGTRACED_OPTS', 'RINGTRACE_RECOVER', 'RINGTRACE_RECOVER_TIMEOUT'):
        e.pop(k, None)
    e.update(env)
    return td.run([os.path.join(daemon, 'ringtraced-recover')] + list(args), env=e)


@test
def test_unit_recovers(ctx):
    """The unit's ExecStartPre (daemon/ringtraced-recover): the region's
    image saved as ROOT/YYYYmmdd-HHMMSS-previous-boot, ROOT the recording's
    --root, and the region released; RINGTRACE_RECOVER=no leaves it; no
    region: "no previous trace", exit 0; another build or a damaged header:
    refused, named, kept (exit 1: the unit goes on, D4); a recovery that
    hangs is stopped after RINGTRACE_RECOVER_TIMEOUT."""
    img, exp = gt.make_image(seed=21, tails={0: 'open'})
    uuid = uuid_text(exp['uuid'])
    name = '20251129-000000-previous-boot'
    for opts in ('--max-size 32M --root %s --max-total 4G', '--root=%s'):
        debugfs, rel = fake_module(ctx, img)
        root = ctx.path('root')
        r = unit_recover(ctx, '--debugfs', debugfs, RINGTRACED_OPTS=opts % root)
        expect_run(r, 0, 'ringtraced-recover, RINGTRACED_OPTS=%s' % opts)
        check(os.listdir(root) == [name], '%s: %s' % (opts, os.listdir(root)))
        check_markers(os.path.join(root, name), exp)
        check(release_written(rel) == uuid, 'not released: %r' % release_written(rel))
        check('ringtrace report --tail 20 %s/%s' % (root, name) in r.stdout,
              'the journal line does not say how to read it: %r' % r.stdout)
    debugfs, rel = fake_module(ctx, img)
    root = ctx.path('root')
    r = unit_recover(ctx, '--debugfs', debugfs, RINGTRACED_OPTS='--root ' + root,
                     RINGTRACE_RECOVER='no')
    check(r.returncode == 0 and 'stays in the region' in r.stdout and
          not os.path.exists(root) and release_written(rel) == '',
          'RINGTRACE_RECOVER=no: exit %d %r, released %r'
          % (r.returncode, r.stdout, release_written(rel)))
    debugfs, _ = fake_module(ctx, None)
    r = unit_recover(ctx, '--debugfs', debugfs, RINGTRACED_OPTS='--root ' + root)
    check(r.returncode == 0 and 'no previous trace' in r.stdout + r.stderr and
          not os.path.exists(root), 'no region: exit %d %r %r' % (r.returncode, r.stdout,
                                                                 r.stderr))
    other, _ = gt.make_image(seed=22, identity=('5.10.0-other', '#1 SMP other',
                                                bytes(range(1, 21))))
    bad = bytearray(img)
    bad[gt.PERSIST_OFF['boot_id']] ^= 1
    for what, im, why in (('another build', other, '5.10.0-other'),
                          ('a damaged header', bytes(bad), 'checksum')):
        debugfs, rel = fake_module(ctx, im)
        r = unit_recover(ctx, '--debugfs', debugfs, RINGTRACED_OPTS='--root ' + root)
        check(r.returncode == 1 and why in r.stderr and release_written(rel) == '' and
              not os.path.exists(root),
              '%s: exit %d %r, released %r' % (what, r.returncode, r.stderr,
                                                release_written(rel)))
    hang = ctx.path('hang')
    with open(hang, 'w') as f:
        f.write('#!/bin/sh\nexec sleep 30\n')
    os.chmod(hang, 0o755)
    r = unit_recover(ctx, RINGTRACED=hang, RINGTRACE_RECOVER_TIMEOUT='1')
    check(r.returncode == 124 and 'stopped after 1 s' in r.stderr,
          'a hung recovery: exit %d %r' % (r.returncode, r.stderr))
    r = unit_recover(ctx, RINGTRACE_RECOVER_TIMEOUT='soon')
    check(r.returncode == 1 and "'soon' is not a number" in r.stderr,
          'RINGTRACE_RECOVER_TIMEOUT=soon: exit %d %r' % (r.returncode, r.stderr))


@test
def test_unit_installed(ctx):
    """make -C daemon install: the unit loads the module with
    RINGTRACE_PERSIST, then runs the installed ringtraced-recover (which
    names the installed ringtraced), then ringtraced; /etc/default says
    RINGTRACE_RECOVER=yes and has the region line commented; the
    modprobe.d template's options lines are all commented out."""
    dest = ctx.path('dest')
    r = td.run(['make', '-s', '-C', os.path.join(td.REPO, 'daemon'), 'install',
                'DESTDIR=' + dest, 'PREFIX=/usr'])
    expect_run(r, 0, 'make install')
    with open(os.path.join(dest, 'etc/systemd/system/ringtraced.service')) as f:
        execs = [l for l in f.read().splitlines() if l.startswith('ExecStart')]
    check(execs[:3] == ['ExecStartPre=-/sbin/modprobe -q ringtrace $RINGTRACE_PERSIST',
                        'ExecStartPre=-/usr/lib/ringtrace/ringtraced-recover',
                        'ExecStart=/usr/sbin/ringtraced --service $RINGTRACED_OPTS'],
          'the unit: %s' % execs)
    with open(os.path.join(dest, 'usr/lib/ringtrace/ringtraced-recover')) as f:
        text = f.read()
    check('${RINGTRACED:-/usr/sbin/ringtraced}' in text and '@' not in text.replace(
        '"$@"', ''), 'ringtraced-recover installed unsubstituted')
    check(os.access(os.path.join(dest, 'usr/lib/ringtrace/ringtraced-recover'), os.X_OK),
          'ringtraced-recover not executable')
    with open(os.path.join(dest, 'etc/default/ringtraced')) as f:
        lines = f.read().splitlines()
    check('#RINGTRACE_PERSIST="persist=ringtrace"' in lines and
          'RINGTRACE_RECOVER=yes' in lines, '/etc/default/ringtraced: %s' % lines[-16:])
    with open(os.path.join(dest, 'etc/modprobe.d/ringtrace.conf')) as f:
        lines = f.read().splitlines()
    check('#options ringtrace persist=ringtrace' in lines and
          not [l for l in lines if l.startswith('options')],
          'modprobe.d/ringtrace.conf: %s' % lines)


def main():
    args = td.suite_args(__doc__, 'RT_PERSIST_BIN')
    if td.missing('persist', [td.RINGTRACE], 'run make -C tools ringtrace'):
        return 1
    return td.run_suite('persist', TESTS, lambda tmp: Ctx(tmp), args)


if __name__ == '__main__':
    sys.exit(main())
