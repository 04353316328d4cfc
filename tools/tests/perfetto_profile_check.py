#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The checks of tools/tests/profile.d/pexport.sh on one export.

Usage: perfetto_profile_check.py [--schema FILE] WORKLOAD_OUT BUILD_ID PFTRACE

WORKLOAD_OUT is spin-workload's output (pid, sp-spin's and sp-kern's
tids), BUILD_ID spin-workload's (readelf -n), PFTRACE `ringtrace export -f
perfetto` of `record --sample HZ --mmap --stack sched_switch --ustack
sched_switch -F -- spin-workload`, its symbol store filled.  The file is
decoded by protoc with Perfetto's published schema, or with --schema
FILE (tools/cli/perfetto.proto, which the host tests find the same as
the published one for every field it declares: a guest decodes with it
in a fraction of the time), and read by perfetto_stacks.perf_samples(),
which fails unless every sample's callstack resolves to named
frames and every binary's mapping carries a build-id.  (The switch-outs
of other threads, before the workload's, are there too.)  One "ok - ..." /
"not ok - ..." line per check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfetto_schema  # noqa: E402
import perfetto_stacks  # noqa: E402

MIN_SAMPLES = 20
SPIN = ['spin_a', 'spin_b', 'spin_leaf']


def check(ok, what):
    print(('ok - ' if ok else 'not ok - ') + what)
    return ok


def user_frames(s):
    return [f for f in s['frames'] if f['path'].startswith('/') or
            f['path'] in ('[unknown]', '[vdso]')]


def main():
    args = sys.argv[1:]
    schema = None
    if args[:1] == ['--schema']:
        schema, args = args[1], args[2:]
    wl_path, bid, pftrace = args[:3]
    wl = dict(l.split()[:2] for l in open(wl_path) if len(l.split()) == 2)
    pid, spin, kern = int(wl['pid']), int(wl['sp-spin']), int(wl['sp-kern'])
    try:
        got = perfetto_stacks.perf_samples(
            perfetto_stacks.decode(pftrace, schema or perfetto_schema.published()))
    except (perfetto_stacks.Bad, perfetto_schema.Missing) as e:
        check(False, 'the export resolves (every frame named, binaries with build-ids): %s' % e)
        return
    check(True, 'the export resolves: %d PerfSamples, every frame named, '
          'every binary\'s mapping with a build-id' % len(got))
    threads = [s for s in got if s['tid'] in (spin, kern)]
    check(threads and all(s['pid'] == pid for s in threads),
          'sp-spin\'s and sp-kern\'s PerfSamples have the workload\'s pid %d: %d, pids %s' % (
              pid, len(threads), sorted(set(s['pid'] for s in threads))))
    spun = [s for s in got if s['tid'] == spin and s['mode'] == 'MODE_USER']
    good = [s for s in spun if [f['name'] for f in user_frames(s)][-3:] == SPIN and
            all(f['path'].endswith('/spin-workload') and f['build_id'] == bid
                for f in s['frames'][-3:])]
    print('# sp-spin: %d user-mode samples, %d end in %s' % (
        len(spun), len(good), ';'.join(SPIN)))
    check(len(spun) >= MIN_SAMPLES,
          'sp-spin has %d samples in user mode (at least %d)' % (len(spun), MIN_SAMPLES))
    check(spun and len(good) >= 0.9 * len(spun),
          'at least 90%% of sp-spin\'s end in %s of spin-workload (build-id %s): %d of %d%s' % (
              ';'.join(SPIN), bid, len(good), len(spun),
              '' if len(good) >= 0.9 * len(spun) or not spun else
              '; one that does not: %s' % [(f['name'], f['path'], f['build_id'])
                                            for f in next(s for s in spun if s not in good)['frames']]))
    kernel = [s for s in got if s['tid'] == kern and s['mode'] == 'MODE_KERNEL' and
              user_frames(s) and s['frames'][0] in user_frames(s) and
              s['frames'][-1]['path'] == '[kernel.kallsyms]']
    check(kernel, 'sp-kern has samples in kernel mode, user frames first, then '
          'the kernel\'s: %d' % len(kernel))
    switches = [s for s in got if s['mode'] == 'MODE_KERNEL' and user_frames(s) and
                s['frames'][0] in user_frames(s) and
                any(f['name'] in ('schedule', '__schedule') and
                    f['path'] == '[kernel.kallsyms]' for f in s['frames'])]
    check(switches, 'switch-outs (--stack and --ustack sched_switch) with user then '
          'kernel frames through schedule: %d' % len(switches))


if __name__ == '__main__':
    main()
