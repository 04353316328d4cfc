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

/*
 * The thread table: per frame of the time index, what a reader of threads
 * (tools/lib/threads.c) learns from that frame's events, so that a window
 * knows each thread's process, name and cgroup, and who runs on the CPU,
 * without decoding a frame before it.  The packer writes it
 * (tools/lib/facts.c makes it) as another skippable frame right in front of
 * the time index, whose format stays version 1: a reader of version 1
 * passes over it as over any skippable frame, and its data_bytes (the
 * index frame's offset) counts it.  Little endian:
 *
 *   0         4     0x184D2A5C   zstd skippable frame magic
 *   4         4     bytes that follow
 *   8         ...   N records, one per index entry, in its order:
 *                     u64 packet_seq_num      of the frame's first packet
 *                     u64 events_discarded    of it
 *                     u64 packet_seq_num      of its last packet
 *                     u64 events_discarded    of it
 *                     u32 flags: 1 = not learnt (the packer could not
 *                                read the frame: a reader decodes it)
 *                     u32 the CPU's thread at the frame's end, as a
 *                         function of the one at its start: 0 the same,
 *                         1 @tid, 2 @tid if none was known
 *                     s32 tid
 *                     u32 F, facts that follow
 *                     F x 32 bytes, in time order:
 *                       u64 time of the event that told it
 *                       u32 kind (CHUNK_FACT_*), s32 tid
 *                       16 bytes: comm (NUL padded), or s32 pid / ppid /
 *                       parent tid, or u64 cgroup, then zeros
 *   ...       32    footer:
 *                     u64 XXH64 (seed 0) of the N records
 *                     u32 N
 *                     u32 48, u32 32: a record's and a fact's size
 *                     u32 1, the version
 *                     u32 bytes of the records
 *                     u32 0x54485452 ("RTHT")
 *
 * A fact is the last of its kind for its thread in the frame (names, pids
 * and parents: the latest wins), except cgroups, kept every one in order:
 * a fork that gives its child the parent's cgroup reads it at its time.
 * Untrusted like the index: chunk_table_parse() checks it against the
 * index (one record per entry, facts in time order within their frame's
 * times, must-be-zero bytes zero, known kinds) and its checksum.
 */
#define CHUNK_TABLE_MAGIC	0x184D2A5CU
#define CHUNK_TABLE_TAG		0x54485452U	/* "RTHT" */
#define CHUNK_TABLE_VERSION	1U
#define CHUNK_TABLE_RECORD	48U
#define CHUNK_TABLE_FACT	32U
#define CHUNK_TABLE_FOOTER	32U

enum chunk_fact_kind {
	CHUNK_FACT_COMM = 1,		/* value: comm */
	CHUNK_FACT_PID,			/* value: its thread group */
	CHUNK_FACT_PPID,		/* @tid leads a process; value: its parent */
	CHUNK_FACT_CGROUP,		/* value: cgroup v2 id */
	CHUNK_FACT_CGROUP_OF,		/* value: the tid whose cgroup it takes, if known */
	CHUNK_FACT_KINDS,
};

#define CHUNK_COMM_LEN		16

struct chunk_fact {
	uint64_t ts;
	uint32_t kind;
	int32_t tid;
	union {
		char comm[CHUNK_COMM_LEN];	/* NUL padded, not terminated */
		int32_t id;			/* pid, ppid, the parent's tid */
		uint64_t cgroup;
	} v;
};

enum chunk_cpu_change {
	CHUNK_CPU_SAME,			/* no switch nor loss in the frame */
	CHUNK_CPU_SET,			/* the tid (-1: unknown, after a loss) */
	CHUNK_CPU_FILL,			/* the tid, if none was known */
};

#define CHUNK_FRAME_UNLEARNT	1U

struct chunk_table_frame {
	uint64_t first_seq, first_discarded;
	uint64_t last_seq, last_discarded;
	uint32_t flags;
	uint32_t cpu_change;		/* enum chunk_cpu_change */
	int32_t cpu_tid;
	uint32_t nr_facts;
	struct chunk_fact *facts;
};

struct chunk_table {
	struct chunk_table_frame *f;
	size_t n, cap;
};

/* Appends @f, taking its facts over (freed with the table); -ENOMEM. */
int chunk_table_add(struct chunk_table *t, struct chunk_table_frame *f);
void chunk_table_free(struct chunk_table *t);
size_t chunk_table_size(const struct chunk_table *t);
void chunk_table_encode(const struct chunk_table *t, uint8_t *buf);
/*
 * The table frame that ends where the index frame starts, from the
 * CHUNK_TABLE_FOOTER bytes @footer in front of it: how many bytes it
 * takes (0: none there), at most @room (the bytes in front of the index).
 */
uint64_t chunk_table_frame_size(const uint8_t *footer, uint64_t room);
/*
 * The table frame @buf of @len bytes, the frames of @ix: 0 with @t set,
 * or -1 with the reason in @why.
 */
int chunk_table_parse(const uint8_t *buf, size_t len,
		      const struct chunk_index *ix, struct chunk_table *t,
		      char *why, size_t size);

#endif /* RINGTRACE_LIB_CHUNK_INDEX_H */
