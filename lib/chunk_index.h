/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The time index of a packed chunk: where each packed frame starts, and
 * the time its packets cover, so that a reader asked for a time window
 * decodes only the frames that can hold it (report --begin/--end).
 *
 * It is the chunk's last frame: a zstd *skippable* frame, which every
 * zstd decoder (zstd -d, libzstd, ringtrace unpack) passes over without a
 * byte of output.  So it is written, synced and renamed with the packed
 * chunk itself (chunk_pack()), moves with it (--on-chunk, a shipper),
 * is in the manifest's size and checksum, and is gone after `zstd -d`:
 * babeltrace2 never sees it.  Little endian:
 *
 *   offset      size  field
 *   0           4     0x184D2A5B   zstd skippable frame magic (0x184D2A5?)
 *   4           4     32 * N + 40  bytes that follow
 *   8           32*N  N entries, in file order:
 *                       u64 compressed offset of the frame in the file
 *                       u64 its uncompressed offset (the CTF stream's)
 *                       u64 timestamp_begin of its first packet
 *                       u64 timestamp_end of its last packet
 *   8 + 32*N    40    footer:
 *                       u64 data bytes: the frames' (this frame's offset)
 *                       u64 content bytes: the uncompressed stream's
 *                       u64 XXH64 (seed 0) of the N entries
 *                       u32 N
 *                       u32 32, an entry's size
 *                       u32 1, the version
 *                       u32 0x58495452 ("RTIX")
 *
 * A reader finds it from the end of the file (the footer), and trusts
 * nothing of it: chunk_index_parse() checks it against the file's size,
 * its checksum and itself; the reader checks each entry it seeks to against the frame
 * there (tools/lib/seek.c).
 */
#ifndef RINGTRACE_LIB_CHUNK_INDEX_H
#define RINGTRACE_LIB_CHUNK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNK_INDEX_MAGIC	0x184D2A5BU
#define CHUNK_INDEX_TAG		0x58495452U	/* "RTIX" */
#define CHUNK_INDEX_VERSION	1U
#define CHUNK_INDEX_ENTRY	32U
#define CHUNK_INDEX_FOOTER	40U
#define CHUNK_INDEX_HEADER	8U

struct chunk_index_entry {
	uint64_t coff;			/* the frame's offset in the file */
	uint64_t uoff;			/* its first byte's in the stream */
	uint64_t ts_begin;		/* first packet's timestamp_begin */
	uint64_t ts_end;		/* last packet's timestamp_end */
};

struct chunk_index {
	struct chunk_index_entry *e;
	size_t n, cap;
	uint64_t data_bytes;		/* compressed bytes the frames take */
	uint64_t content_bytes;		/* uncompressed bytes */
};

/* Appends an entry; -ENOMEM. */
int chunk_index_add(struct chunk_index *ix, const struct chunk_index_entry *e);
void chunk_index_free(struct chunk_index *ix);
/* Bytes the index frame of @ix takes. */
size_t chunk_index_size(const struct chunk_index *ix);
/* The index frame of @ix into @buf (chunk_index_size() bytes). */
void chunk_index_encode(const struct chunk_index *ix, uint8_t *buf);
/*
 * The index frame at the end of a file of @file_size bytes, from its
 * last CHUNK_INDEX_FOOTER bytes @footer: how many bytes it takes (0: the
 * file ends with no index).  Then chunk_index_parse() with those bytes.
 */
uint64_t chunk_index_frame_size(const uint8_t *footer, uint64_t file_size);
/*
 * The index frame @buf of @len bytes, the end of a file of @file_size
 * bytes, into @ix: 0, or -1 with the reason in @why (sizes that disagree
 * with the file, offsets not increasing, times going back).
 */
int chunk_index_parse(const uint8_t *buf, size_t len, uint64_t file_size,
		      struct chunk_index *ix, char *why, size_t size);

#endif /* RINGTRACE_LIB_CHUNK_INDEX_H */
