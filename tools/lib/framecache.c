// SPDX-License-Identifier: GPL-2.0
/*
 * Decoded frames shared by the readers of one process (rtdecode.h,
 * rt_frame_cache_start()).  ship reads a set once per table it ships, each
 * pass through views and streams of its own; without this each pass
 * decompresses every frame again.  With it, a packed frame decoded whole
 * -- its content checksum verified by libzstd -- is kept by its file
 * (device, inode, size, mtime) and compressed offset, and the next reader
 * of that frame takes its bytes and steps over its compressed ones
 * instead (source.c).  Stored frames (a packet each, raw blocks) are not
 * kept: decoding them is a copy already.
 *
 * Bounded: frames are kept while their bytes fit in the budget, and
 * never evicted until rt_frame_cache_stop().  Readers sweep a file from
 * its first frame, so a budget below the files' size keeps their first
 * frames and each pass takes those; evicting the oldest would leave the
 * next pass nothing (it wants the oldest first).  A chunk set -- a chunk
 * per CPU, each --max-size at most -- fits a budget of a few of them.
 *
 * One thread: the cache is the process's, for a reader that reads one
 * stream at a time (ship); nothing locks it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

struct cached_frame {
	struct rt_fkey key;
	uint64_t off;			/* the frame's compressed offset */
	struct rt_cframe f;
};

static struct {
	bool on;
	size_t budget, used;		/* decoded bytes */
	struct cached_frame *v;
	size_t nr, cap;
	uint64_t hits, decoded;
} fc;

void rt_frame_cache_start(size_t bytes)
{
	rt_frame_cache_stop();
	fc.on = bytes > 0;
	fc.budget = bytes;
}

void rt_frame_cache_stop(void)
{
	for (size_t i = 0; i < fc.nr; i++)
		free((void *)fc.v[i].f.data);
	free(fc.v);
	memset(&fc, 0, sizeof(fc));
}

void rt_frame_cache_stats(uint64_t *decoded, uint64_t *hits, size_t *bytes)
{
	*decoded = fc.decoded;
	*hits = fc.hits;
	*bytes = fc.used;
}

bool rt_fcache_key(int fd, struct rt_fkey *k)
{
	struct stat st;

	if (!fc.on || fstat(fd, &st))
		return false;
	*k = (struct rt_fkey){
		.dev = st.st_dev, .ino = st.st_ino, .size = (uint64_t)st.st_size,
		.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000 +
			    (uint64_t)st.st_mtim.tv_nsec,
	};
	return true;
}

static bool key_eq(const struct rt_fkey *a, const struct rt_fkey *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

const struct rt_cframe *rt_fcache_find(const struct rt_fkey *k, uint64_t off)
{
	/* A frame is 4 MiB of packets: the list is short, a lookup a frame. */
	for (size_t i = 0; i < fc.nr; i++)
		if (fc.v[i].off == off && key_eq(&fc.v[i].key, k)) {
			fc.hits++;
			return &fc.v[i].f;
		}
	return NULL;
}

void rt_fcache_add(const struct rt_fkey *k, uint64_t off, uint64_t clen,
		   const uint8_t *data, size_t len)
{
	struct cached_frame *e;
	uint8_t *copy;

	fc.decoded++;
	if (len > fc.budget - fc.used)
		return;
	if (fc.nr == fc.cap) {
		size_t cap = fc.cap ? 2 * fc.cap : 16;

		e = realloc(fc.v, cap * sizeof(*e));
		if (!e)
			return;		/* not kept: read again, as without a cache */
		fc.v = e;
		fc.cap = cap;
	}
	copy = malloc(len);
	if (!copy)
		return;
	memcpy(copy, data, len);
	fc.v[fc.nr++] = (struct cached_frame){
		.key = *k, .off = off, .f = { .data = copy, .len = len, .clen = clen },
	};
	fc.used += len;
}
