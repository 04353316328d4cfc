#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The checks of tools/tests/profile.d/sample.sh on one profile.

Usage: sample_check.py WORKLOAD_OUT OUTSIDER_PID REPORT FOLDED SECONDS

WORKLOAD_OUT is spin-workload's output (pid, sp-spin's and sp-kern's
tids, its spinner's functions' text), REPORT `ringtrace report -e
cpu_sample` (each sample with its stacks' frames under it, the user ones
named from the trace's symbol store as "    FUNC+0xOFF (BINARY)"; record
--sample implies --mmap and ringtraced stores the binaries at the stop),
FOLDED `ringtrace report --folded` of the same trace.  One "ok - ..." / "not ok - ..." line per
check; the rates are printed, not checked (attribution is).
"""
import re
import sys

MODE_USER, MODE_KERNEL, MODE_IDLE = 0, 1, 2
MIN_SAMPLES = 20
SAMPLE = re.compile(r'^\[[0-9.]+\] cpu(\d+) .* cpu_sample: '
                    r'tid=(-?\d+), pid=(-?\d+), mode=(\d+)$')
# The sampler's own frames (its callback, the stack walk, the hrtimer
# core): cut with the timer interrupt's, up to the interrupted ip
# (stack.c).  Other frames of ringtrace's are the probes' (a sample may
# interrupt one), and an interrupt's entry may be deeper in a stack (a
# softirq run on an earlier interrupt's exit, interrupted).
# A kernel frame of --folded: "[k] " before it when the profile has user frames.
OWN_FRAMES = re.compile(r';(?:\[k\] )?((rtr_sample[a-z_]*|rtr_stack_[a-z_]+) '
                        r'\[ringtrace\]|hrtimer_interrupt|'
                        r'__hrtimer_run_queues)(;|$)')
# A user frame: named "FUNC+0xOFF (BINARY)", else "BINARY+0xOFF [bid:..]"
# or "0xADDR [user]" (no name: None).
USER_FRAME = re.compile(r'^    (?:([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+ \([^()]*\)|'
                        r'\S+\+0x[0-9a-f]+ \[bid:[0-9a-f]+\]|0x[0-9a-f]+ \[user\])$')
READ_FRAMES = re.compile(r';(?:\[k\] )?(ksys_read|vfs_read|read_zero|read_iter_zero)( |;|$)')


def check(ok, what):
    print(('ok - ' if ok else 'not ok - ') + what)


def main():
    wl_path, outsider, report, folded, seconds = sys.argv[1:6]
    wl, text = {}, []
    for line in open(wl_path):
        w = line.split()
        if len(w) == 4 and w[0] == 'func':
            text.append((w[1], int(w[2], 16), int(w[3], 16)))
        elif len(w) == 2:
            wl[w[0]] = w[1]
    pid, spin, kern = int(wl['pid']), int(wl['sp-spin']), int(wl['sp-kern'])
    outsider, seconds = int(outsider), float(seconds)

    modes = {spin: [0, 0, 0], kern: [0, 0, 0]}
    pids, total = {}, 0
    spin_stacks = []        # sp-spin's user-mode samples' user frames
    frames = None
    for line in open(report):
        line = line.rstrip('\n')
        u = USER_FRAME.match(line)
        if u and frames is not None:
            frames.append(u.group(1))
            continue
        m = SAMPLE.match(line)
        if not m:
            if not line.startswith('    '):
                frames = None
            continue
        tid, p, mode = int(m.group(2)), int(m.group(3)), int(m.group(4))
        total += 1
        pids[p] = pids.get(p, 0) + 1
        if tid in modes and mode <= MODE_IDLE:
            modes[tid][mode] += 1
        frames = None
        if tid == spin and mode == MODE_USER:
            frames = []
            spin_stacks.append(frames)
    n_spin, n_kern = sum(modes[spin]), sum(modes[kern])
    print(f'# {total} samples; sp-spin {n_spin} ({n_spin / seconds:.0f}/s, '
          f'user {modes[spin][MODE_USER]}), sp-kern {n_kern} '
          f'({n_kern / seconds:.0f}/s, kernel {modes[kern][MODE_KERNEL]}) '
          f'at 999 Hz asked')
    check(n_spin >= MIN_SAMPLES,
          f"sp-spin (tid {spin}) has >= {MIN_SAMPLES} samples: {n_spin}")
    check(n_kern >= MIN_SAMPLES,
          f"sp-kern (tid {kern}) has >= {MIN_SAMPLES} samples: {n_kern}")
    # Interrupts, softirqs and preemption run in the spinner's context
    # too: on the debug kernel under TCG they take most of its time (its
    # user share was 37 %), so the split is asserted as a difference.
    spin_user = modes[spin][MODE_USER] / max(n_spin, 1)
    kern_user = modes[kern][MODE_USER] / max(n_kern, 1)
    check(spin_user >= 0.3 and spin_user >= kern_user + 0.25,
          f"sp-spin is in user mode (>= 30 %), more than sp-kern: "
          f"{spin_user:.0%} vs {kern_user:.0%}")
    check(n_kern and modes[kern][MODE_KERNEL] >= 0.5 * n_kern,
          "sp-kern's samples are >= 50 % in kernel mode")
    check(modes[spin][MODE_IDLE] == 0 and modes[kern][MODE_IDLE] == 0,
          'no sample of a workload thread says idle')
    # Leaf first: spin_leaf, then its callers, by name.
    # The thread's start and end run in libc, built without frame
    # pointers (10 % of its user samples on the debug kernel): the chain
    # is asserted for the samples in spin_leaf, where it spins.
    def in_order(names):
        return len(names) >= len(text) and all(
            name == want for name, (want, _, _) in zip(names, text))
    check(len(text) == 4, "spin-workload printed its 4 functions' text")
    in_leaf = [names for names in spin_stacks
               if text and names and names[0] == text[0][0]]
    good = sum(1 for ips in in_leaf if in_order(ips))
    print(f'# sp-spin: {len(spin_stacks)} user-mode samples, {len(in_leaf)} '
          f'in spin_leaf, {good} of them with '
          + ' <- '.join(name for name, _, _ in text))
    check(spin_stacks and len(in_leaf) >= 0.75 * len(spin_stacks),
          f"sp-spin's user-mode samples are >= 75 % in spin_leaf "
          f"({len(in_leaf)} of {len(spin_stacks)})")
    check(in_leaf and good >= 0.9 * len(in_leaf),
          "their user stacks: >= 90 % are spin_leaf <- spin_b <- spin_a "
          f"<- spinner ({good} of {len(in_leaf)})")
    check(pids.get(outsider, 0) == 0,
          f'no sample of the spinner outside -F (pid {outsider}): '
          f'{pids.get(outsider, 0)}')
    check(set(pids) <= {pid},
          f'every sample is of the recorded pid {pid}: {sorted(pids)}')

    weights = {}
    for line in open(folded):
        key, _, weight = line.rstrip('\n').rpartition(' ')
        if key and weight.isdigit():
            weights[key] = weights.get(key, 0) + int(weight)
    kern_stacks = {k: w for k, w in weights.items()
                   if k.startswith('sp-kern;')}
    kw = sum(kern_stacks.values())
    through_read = sum(w for k, w in kern_stacks.items()
                       if READ_FRAMES.search(k))
    print(f'# sp-kern: {kw} folded kernel samples, {through_read} through read')
    check(kw >= 0.5 * modes[kern][MODE_KERNEL] and kw > 0,
          "sp-kern's kernel samples fold with their stacks")
    check(kw and through_read >= 0.8 * kw,
          "sp-kern's folded stacks go through ksys_read/vfs_read (>= 80 %)")
    own = [k for k in weights if OWN_FRAMES.search(k)]
    check(not own, 'no folded stack has the sampler\'s own frames: '
          + (own[0] if own else 'none'))
    leaves = {}
    for k, w in kern_stacks.items():
        leaf = k.rsplit(';', 1)[-1]
        leaves[leaf] = leaves.get(leaf, 0) + w
    print('# sp-kern leaves: ' + ', '.join(
        f'{leaf} {w}' for leaf, w in sorted(leaves.items(),
                                              key=lambda x: -x[1])[:5]))
    # Each sample once; a user-mode one with its user frames (root first,
    # named), then the kernel's after "[k] " if any.
    check(sum(weights.values()) == total,
          f'--folded counts every sample once: {sum(weights.values())} of {total}')
    chain = ';'.join(name for name, _, _ in reversed(text))
    spin_folded = sum(w for k, w in weights.items()
                      if k.startswith('sp-spin;') and (';' + chain) in k)
    check(good and spin_folded >= good,
          f"sp-spin's samples fold with their named user frames, ...;{chain} "
          f"({spin_folded}, of {good} such stacks in the report)")
    return 0


if __name__ == '__main__':
    sys.exit(main())
