/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtraced: declarations shared by its files.
 *
 *   main.c     options, setup, the epoll loop, signals, shutdown
 *   buffer.c   one CPU buffer file of ringtrace.ko: mmap and the ioctls
 *   stream.c   one CPU's compressed output: zstd frames, files, rotation
 *   adapt.c    the compression level that keeps up with a CPU's writers
 *
 * and, shared with the ringtrace CLI, ../lib/: messages (msg.c), parsers
 * (parse.c), the control files (ctl.c).
 */
#ifndef RINGTRACED_H
#define RINGTRACED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/ringtrace.h>

#include "../lib/ctl.h"
#include "../lib/msg.h"
#include "../lib/parse.h"

#define PROG "ringtraced"

/* ------------------------------------------------------------------ */
/* buffer.c                                                             */
/* ------------------------------------------------------------------ */

struct rt_buffer {
	unsigned int cpu;
	int fd;
	const uint8_t *map;		/* meta page + sub-buffers, read-only */
	size_t map_len;
	const struct ringtrace_meta *meta;
	uint32_t meta_page_size;
	uint32_t subbuf_size;
	uint32_t num_subbufs;
	char path[96];
};

/* All return 0 or -errno; @b->path names the file for messages. */
int buffer_open(struct rt_buffer *b, const char *rtdir, unsigned int cpu);
void buffer_close(struct rt_buffer *b);
int buffer_get(struct rt_buffer *b, struct ringtrace_subbuf *sb);
int buffer_put(struct rt_buffer *b, const struct ringtrace_subbuf *sb);
int buffer_flush(struct rt_buffer *b);
int buffer_positions(struct rt_buffer *b, struct ringtrace_positions *p);
int buffer_stats(struct rt_buffer *b, struct ringtrace_stats *st);
/* True when the positions say a packet is open (being written). */
bool positions_packet_open(const struct ringtrace_positions *p);
/* Bytes written behind the packet @sb holds, as GET left the meta page. */
uint64_t buffer_waiting(const struct rt_buffer *b,
			const struct ringtrace_subbuf *sb);
/* Events lost so far, all causes, as the meta page last showed. */
uint64_t buffer_lost(const struct rt_buffer *b);
/* The event set's generation, as the meta page last showed. */
uint64_t buffer_events_gen(const struct rt_buffer *b);

/* ------------------------------------------------------------------ */
/* stream.c                                                             */
/* ------------------------------------------------------------------ */

/*
 * A "level" below every zstd level: no compression, the packet goes out as
 * raw blocks of a zstd frame of its own, written straight from the mapping.
 */
#define RT_LEVEL_STORE		INT_MIN

struct stream_config {
	int level;			/* zstd level, or RT_LEVEL_STORE */
	uint64_t max_size;		/* rotate past this many bytes; 0: never */
	unsigned int max_files;		/* files kept per CPU; 0: all */
	bool numbered;			/* cpuN-000001.zst rather than cpuN.zst */
};

struct stream {
	const struct stream_config *cfg;
	int dirfd;
	int fd;
	unsigned int cpu;
	unsigned int seq;		/* numbered: index of the current file */
	unsigned int oldest;		/* numbered: oldest index still on disk */
	off_t file_size;		/* bytes of whole blocks in the current file */
	bool frame_open;		/* packets since the last frame end */
	void *cctx;			/* ZSTD_CCtx */
	int level;			/* of the next packet, or RT_LEVEL_STORE */
	uint8_t tail[16];		/* end of the frame a level change closed, */
	size_t tail_len;		/* written with the next packet */
	int lowest_level;		/* lowest level used so far */
	uint64_t packets;		/* packets written (all files) */
	uint64_t packets_faster;	/* of which below cfg->level */
	uint64_t bytes_in;		/* their bytes */
	uint64_t bytes_out;		/* compressed bytes written (all files) */
	uint64_t packets_unsaved;	/* lost by a failed write (see stream.c) */
	char name[64];			/* current file name, for messages */
};

/* Call once before stream_open(): @max_packet sizes the output buffer. */
int stream_init(size_t max_packet);
int stream_open(struct stream *s, const struct stream_config *cfg, int dirfd,
		unsigned int cpu);
int stream_set_level(struct stream *s, int level);
int stream_packet(struct stream *s, const void *data, size_t len);
int stream_end_frame(struct stream *s);
int stream_rotate(struct stream *s);
int stream_sync(struct stream *s);
/* Best effort: end the frame, close; for exit paths, never fails. */
void stream_close(struct stream *s);

/* ------------------------------------------------------------------ */
/* adapt.c                                                              */
/* ------------------------------------------------------------------ */

struct adapt {
	int preferred;			/* --level */
	int fastest;			/* --min-level; == preferred: fixed */
	int level;			/* the level of the last packet */
	uint64_t lost;			/* the buffer's lost count seen last */
};

/* @lost: the buffer's lost count now (losses before us are not ours). */
void adapt_init(struct adapt *a, int preferred, int fastest, uint64_t lost);
/*
 * The level for the packet just taken, given the bytes @waiting behind it,
 * the @room there is behind it ((num_subbufs - 1) sub-buffers) and the
 * buffer's count of @lost events, all as GET_SUBBUF left the meta page.
 */
int adapt_level(struct adapt *a, uint64_t waiting, uint64_t room,
		uint64_t lost);

/* ------------------------------------------------------------------ */
/* metadata.c                                                           */
/* ------------------------------------------------------------------ */

/* Copy the module's metadata to dirfd/metadata (new), as of @gen. */
int metadata_start(const struct ctl *ctl, int dirfd, uint64_t gen);
/* After a GET that showed @gen: bring the copy up to date if it is newer. */
int metadata_follow(const struct ctl *ctl, int dirfd, uint64_t gen);
void metadata_free(void);

/* ------------------------------------------------------------------ */
/* syncer.c                                                             */
/* ------------------------------------------------------------------ */

/* The fdatasync thread, for rounds of at most @max_files files. */
int syncer_start(unsigned int max_files);
/*
 * Sync (a dup of) each of @fds, then @dirfd, on the thread; -EBUSY while
 * the previous round runs (nothing taken: ask again later).
 */
int syncer_request(const int *fds, unsigned int nr, int dirfd);
void syncer_status(uint64_t *rounds, uint64_t *failures, int *last_err);
/* Waits for a round in progress, then ends the thread. */
void syncer_stop(void);

/* ------------------------------------------------------------------ */
/* retention.c                                                          */
/* ------------------------------------------------------------------ */

/*
 * Remove the oldest trace directories under @root, never @current (a name
 * in @root), until all of them together take at most @max_total bytes;
 * how many went in *@removed (may be NULL).  -ENOSPC if @current alone is
 * over; other -errno on failure.
 */
int retention_prune(const char *root, const char *current, uint64_t max_total,
		    unsigned int *removed);

#endif /* RINGTRACED_H */
