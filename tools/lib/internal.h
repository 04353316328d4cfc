/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the files of tools/lib; not part of the API. */
#ifndef RTDECODE_INTERNAL_H
#define RTDECODE_INTERNAL_H

#include <stdarg.h>
#include <sys/types.h>
#include "rtdecode.h"
#include "../../lib/chunk_index.h"
#include "../../lib/le.h"

/* Formats the message into @err (if any) and returns -1. */
int rt_fail(struct rt_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * What a stream says about itself (damage read past, notes): the first
 * RT_MSGS_KEPT messages, and how many there were.  Bounded whatever the
 * file holds: a stream of garbage is one resynchronisation after another.
 */
struct rt_msgs {
	char *kept[RT_MSGS_KEPT];
	unsigned int nr;
};

void rt_msgs_add(struct rt_msgs *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rt_msgs_free(struct rt_msgs *m);

/* What a chunk set's manifest says a file is (rt_stream_promise()). */
struct rt_promise {
	char *path;
	uint64_t size, xxh64;
};

/* source.c: the bytes of one stream file, plain or zstd. */
struct rt_source {
	/* Set by the owner, kept across files. */
	bool tolerant;			/* skip a damaged frame, say so */
	struct rt_msgs *damage, *notes;
	const struct rt_promise *promises;	/* checked at a file's first read */
	unsigned int nr_promises;
	/* Read by the owner. */
	const char *path;		/* NULL: no file open */
	bool zst;
	uint64_t out_off;		/* stream bytes handed out */
	/* The rest is source.c's. */
	int fd;
	bool eof;
	uint8_t *pb;			/* bytes handed back, read first */
	size_t pb_len, pb_pos;
	struct ZSTD_DCtx_s *zds;
	uint8_t *in;			/* compressed bytes ... */
	size_t in_len, in_pos;
	uint64_t in_off;		/* ... from this file offset */
	uint8_t *frame;			/* the frame being handed out */
	size_t frame_len, frame_pos, frame_cap;
	uint64_t frame_start;		/* its file offset */
	uint64_t limit;			/* file offset reading stops at; 0: none */
	bool vetted;			/* its promise, if any, was checked */
};

/* A closed source: what rt_src_open() starts from. */
#define RT_SOURCE_INIT(dmg, nts) \
	((struct rt_source){ .fd = -1, .damage = (dmg), .notes = (nts) })
int rt_src_open(struct rt_source *src, const char *path, struct rt_error *err);
/* Up to @n stream bytes; fewer only at the end of the file. */
ssize_t rt_src_read(struct rt_source *src, void *buf, size_t n,
		    struct rt_error *err);
/* Hands @n bytes back: the next reads return them first.  -1: no memory. */
int rt_src_unread(struct rt_source *src, const uint8_t *buf, size_t n);
void rt_src_close(struct rt_source *src);
/*
 * Reading goes on from file offset @coff, a frame's start (zstd) or a
 * packet's (plain), which is stream offset @uoff; and ends at file offset
 * @limit (0: the end of the file), a frame or packet boundary.  Only
 * before the first read of a file just opened.
 */
int rt_src_seek(struct rt_source *src, uint64_t coff, uint64_t uoff,
		uint64_t limit, struct rt_error *err);

/*
 * seek.c: the index of the stream file open at @fd (zstd or plain): its
 * own (*@own) when it carries a good one, else one built in memory (a bad
 * one said in @why, else @why is ""); -1 when none can be built (the file
 * is not frames or packets that start where they should).
 */
int rt_index_get(int fd, bool zst, struct chunk_index *ix, bool *own,
		 char *why, size_t size);
/* The frame (packet) at @e->coff starts with a packet of @e->ts_begin: 0. */
int rt_index_check(int fd, bool zst, const struct chunk_index_entry *e);


#endif /* RTDECODE_INTERNAL_H */
