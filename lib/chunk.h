/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chunks: the files a trace directory holds per CPU, cpu<N>-<seq>.zst.
 *
 * A chunk is born *stored*: ringtraced's drain thread appends each packet
 * it takes from the kernel as a zstd frame of raw blocks, one writev()
 * straight from the kernel's mapping (chunk_stored_iov()).  Once the chunk
 * is closed, a worker *packs* it: the same packets, byte for byte,
 * compressed into frames that end on packet boundaries, written to a
 * hidden temporary file that then replaces the chunk by rename().  Either
 * way the file is a plain zstd file: `zstd -d` gives the CTF packets.
 *
 *   stored chunk                          packed chunk
 *   +--------+-----------------------+    +-------------------------------+
 *   | frame  | packet 0 (raw blocks) |    | frame: packets 0..k (level L, |
 *   +--------+-----------------------+    |        content checksum)      |
 *   | frame  | packet 1              |    +-------------------------------+
 *   +--------+-----------------------+    | frame: packets k+1..m         |
 *   | ...                            |    +-------------------------------+
 *                                         | skippable frame: the thread   |
 *                                         | table (chunk_index.h)         |
 *                                         +-------------------------------+
 *                                         | skippable frame: the time     |
 *                                         | index (chunk_index.h)         |
 *                                         +-------------------------------+
 *
 * Stored frames carry no checksum (a writer that fails mid-packet cuts the
 * file back and ends there, see the daemon's chunk.c); packed frames always
 * do, so the frame descriptor tells the two kinds apart (chunk_kind()).
 *
 * Nothing here prints or exits: every function returns 0 or -errno, for
 * ringtraced's workers and for `ringtrace compress` alike.
 */
#ifndef RINGTRACE_LIB_CHUNK_H
#define RINGTRACE_LIB_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* "cpu%u-%06u.zst", and the hidden name a chunk is packed into. */
#define CHUNK_NAME_MAX		48
void chunk_name(char *buf, size_t size, unsigned int cpu, unsigned int seq);
void chunk_tmp_name(char *buf, size_t size, const char *name);
/* cpu<N>-<seq>.zst with decimal N and seq: true and both set. */
bool chunk_parse_name(const char *name, unsigned int *cpu, unsigned int *seq);

/*
 * One packet as a stored zstd frame (RFC 8878: magic, a descriptor for a
 * single segment with a 4-byte content size and no checksum, that size, and
 * raw blocks of at most 128 KiB, each behind a 3-byte header).  The
 * caller gives scratch space for the headers and at least
 * chunk_stored_iovcnt(len) iovecs; returns how many were filled.  An empty
 * packet is one empty last block: 12 bytes in all.
 */
#define CHUNK_STORED_FRAME_HEADER	9
#define CHUNK_RAW_BLOCK_MAX		(128U << 10)
struct chunk_stored_hdrs {
	uint8_t frame[CHUNK_STORED_FRAME_HEADER];
	uint8_t (*blocks)[3];		/* chunk_stored_iovcnt(len) - 1 of them */
};
unsigned int chunk_stored_iovcnt(size_t len);
unsigned int chunk_stored_iov(struct iovec *iov, struct chunk_stored_hdrs *h,
			      const void *data, size_t len);
/* Bytes a stored frame of @len bytes takes in the file. */
uint64_t chunk_stored_size(size_t len);
/*
 * @h, the first CHUNK_STORED_FRAME_HEADER bytes of a frame: true with its
 * packet's size in *@content if it is a stored frame (a reader that
 * follows a chunk being written, report --follow, takes the frame once
 * chunk_stored_size() bytes of it are in the file).
 */
bool chunk_stored_header(const uint8_t *h, uint32_t *content);

enum chunk_kind {
	CHUNK_KIND_EMPTY,			/* no bytes at all */
	CHUNK_KIND_STORED,			/* starts with a stored frame */
	CHUNK_KIND_PACKED,			/* starts with any other zstd frame */
};
/*
 * @dirfd/@name opened for reading if it is a regular file: no symlink
 * followed, no FIFO or device waited on (a trace directory, or a set of
 * an earlier trace, is not trusted).  The fd, its stat in *@st when @st is
 * not NULL, or -errno (-EINVAL: not a regular file).
 */
int rt_open_regular(int dirfd, const char *name, struct stat *st);

/* What the chunk open at @fd is, from its first bytes; -EBADMSG: not zstd. */
int chunk_kind(int fd);

/*
 * Packing.  The zstd window, hash and chain tables are capped so that a
 * packer's memory is bounded whatever the level (chunk_pack_memory()):
 * levels up to 8 are unaffected, higher ones search a 4 MiB window.
 */
#define CHUNK_PACK_WINDOW_LOG	22
/* A packed frame ends at the first packet boundary past this much input. */
#define CHUNK_PACK_FRAME_BYTES	(4U << 20)

struct chunk_packer;

/* The level ringtraced and `ringtrace compress` pack chunks at by default. */
#define CHUNK_DEFAULT_LEVEL	6

/*
 * A zstd level on a command line: an integer of zstd's range, 0 meaning
 * zstd's own default (3) as it does for zstd.  False, *@out untouched, for
 * anything else.
 */
bool chunk_parse_level(const char *s, int *out);

/* A packer for @level (zstd's range; not "store"): NULL if out of memory. */
struct chunk_packer *chunk_packer_new(int level);
void chunk_packer_free(struct chunk_packer *p);
/* For measurements: frames of @bytes of packets instead of the default. */
void chunk_packer_set_frame_bytes(struct chunk_packer *p, size_t bytes);

struct chunk_table_frame;
struct chunk_sched_frame;

/*
 * What makes a packed chunk's thread table and scheduler records
 * (chunk_index.h): a reader of the trace's events (tools/lib/facts.c's
 * table maker), which this file does not link.  begin() for each chunk
 * @name of @dirfd (0: they are made for it), packet() for each of its
 * packets in order (@offset in the stream), frame_end() and sched_end()
 * (NULL: no scheduler records) when a packed frame ends (its records),
 * end() after the chunk.  What cannot be made is left out, never the
 * chunk unpacked: readers then decode what they need.
 */
struct chunk_table_ops {
	int (*begin)(void *arg, int dirfd, const char *name);
	void (*packet)(void *arg, const uint8_t *pkt, size_t len, uint64_t offset);
	int (*frame_end)(void *arg, struct chunk_table_frame *f);
	int (*sched_end)(void *arg, struct chunk_sched_frame *f);
	void (*end)(void *arg);
	void *arg;
};
/* Every chunk @p packs from now on gets a thread table made by @ops (NULL: none). */
void chunk_packer_set_table(struct chunk_packer *p, const struct chunk_table_ops *ops);
/* Bytes of memory one packer takes at @level (libzstd's own estimate). */
size_t chunk_pack_memory(int level);

struct chunk_pack_result {
	uint64_t in;			/* stored bytes read */
	uint64_t out;			/* packed bytes written */
	uint64_t packets;
	uint64_t content;		/* packet bytes */
};

/*
 * Pack the stored chunk @name of @dirfd into @tmpname (created, truncated)
 * and fdatasync() it; the caller renames it over @name.  *@cancel (may be
 * NULL, read with an atomic load) is checked between packets: -ECANCELED
 * once another thread set it.
 *   -EBADMSG   @name is not whole stored frames (cut short, damaged, or
 *              packed already): it is left as it is
 *   -ENOSPC... writing @tmpname failed
 * On any failure @tmpname is removed.
 */
int chunk_pack(struct chunk_packer *p, int dirfd, const char *name,
	       const char *tmpname, const bool *cancel,
	       struct chunk_pack_result *res);

#endif /* RINGTRACE_LIB_CHUNK_H */
