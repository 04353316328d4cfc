// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced: the compression level that keeps up with the writers.
 *
 * zstd at the chosen level costs the daemon far more per byte than the
 * kernel's writers spend producing it.  A CPU that writes faster than the
 * daemon compresses fills its ring, and then loses events (discard mode) or
 * overwrites them (overwrite mode): events lost to the compressor, which
 * was only ever meant to save disk.  So each packet's level follows how
 * much of that CPU's ring is waiting behind it, as the meta page shows
 * right after GET_SUBBUF refreshed it (no extra system call):
 *
 *   held packet      waiting behind it          free
 *   [ pos .. +sub )  [ .. write_pos )            [ .. pos + ring )
 *                    \_______ waiting _______/
 *                    \______________ room (num_subbufs - 1 sub-buffers) ___/
 *
 *   waiting >= room, or   the writer is about to drop or overwrite, or
 *   events lost since     already did (a full ring in discard mode can
 *   the last packet       look nearly empty from here: the writer sits in
 *                         an open packet it cannot close): the fastest
 *                         level at once
 *   waiting >= room / 2   one step faster
 *   waiting == 0          caught up: one step back toward --level
 *   otherwise             stay
 *
 * The steps are --level, 1, -1, -4, -16, -64, -256 and then "store",
 * clamped to --min-level.  Negative levels trade ratio for speed; store
 * skips zstd altogether and writes the packet as raw zstd blocks straight
 * from the mapping (stream.c), which costs the daemon no more than the
 * kernel's copy into the file.  Measured on the host (libzstd 1.5.4, 256
 * KiB packets of the benchmark's generator events): level 1 350 MB/s,
 * -64 2300 MB/s, -1024 3500 MB/s (and still ~1.0x: no gain left but speed).
 * Stepping back one level per packet that found nothing waiting keeps a
 * steady load near the fastest level that holds it, without changing
 * level, and so ending the frame (stream_set_level()), on every packet.
 */
#include "ringtraced.h"

void adapt_init(struct adapt *a, int preferred, int fastest, uint64_t lost)
{
	a->preferred = preferred;
	a->fastest = fastest < preferred ? fastest : preferred;
	a->level = preferred;
	a->lost = lost;
}

/* From slowest to fastest; RT_LEVEL_STORE is below every zstd level. */
static const int ladder[] = { 1, -1, -4, -16, -64, -256, RT_LEVEL_STORE };

#define LADDER_STEPS	((int)(sizeof(ladder) / sizeof(ladder[0])))

/* The first step faster than the current level, never past --min-level. */
static int step_faster(const struct adapt *a)
{
	int i;

	for (i = 0; i < LADDER_STEPS; i++)
		if (ladder[i] < a->level)
			return ladder[i] < a->fastest ? a->fastest : ladder[i];
	return a->level;
}

/* The first step slower than the current level, never past --level. */
static int step_slower(const struct adapt *a)
{
	int i;

	for (i = LADDER_STEPS - 1; i >= 0; i--)
		if (ladder[i] > a->level)
			return ladder[i] > a->preferred ? a->preferred : ladder[i];
	return a->preferred;
}

int adapt_level(struct adapt *a, uint64_t waiting, uint64_t room,
		uint64_t lost)
{
	bool losing = lost != a->lost;

	a->lost = lost;
	if (a->fastest == a->preferred)
		return a->preferred;
	if (losing || waiting >= room)
		a->level = a->fastest;
	else if (2 * waiting >= room)
		a->level = step_faster(a);
	else if (!waiting)
		a->level = step_slower(a);
	return a->level;
}
