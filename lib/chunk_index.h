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
 *                     u32 3, the version (1: before RENAME and STALE
 *                         facts; 2: a fork's child named by a COMM fact;
 *                         both recognised, not read: a reader decodes
 *                         their frames, as a chunk's without a table)
 *                     u32 bytes of the records
 *                     u32 0x54485452 ("RTHT")
 *
 * A fact is the last of its kind for its thread in the frame (names, pids
 * and parents: the latest wins; of names, also the latest of another name
 * than the latest's: a reader may not believe the latest, tools/lib/facts.c),
 * except cgroups, renames (a fork's child's name among them) and stale
 * names, kept every one in order: a fork that gives its child the
 * parent's cgroup reads it at its time, and a stale name is not believed
 * for a while after its rename (tools/lib/threads.c).
 * Untrusted like the index: chunk_table_parse() checks it against the
 * index (one record per entry, facts in time order within their frame's
 * times, must-be-zero bytes zero, known kinds) and its checksum.
 */
#define CHUNK_TABLE_MAGIC	0x184D2A5CU
#define CHUNK_TABLE_TAG		0x54485452U	/* "RTHT" */
#define CHUNK_TABLE_VERSION	3U
#define CHUNK_TABLE_VERSION_MIN	1U	/* the oldest recognised (not read) */
#define CHUNK_TABLE_RECORD	48U
#define CHUNK_TABLE_FACT	32U
#define CHUNK_TABLE_FOOTER	32U

enum chunk_fact_kind {
	CHUNK_FACT_COMM = 1,		/* value: comm */
	CHUNK_FACT_PID,			/* value: its thread group */
	CHUNK_FACT_PPID,		/* @tid leads a process; value: its parent */
	CHUNK_FACT_CGROUP,		/* value: cgroup v2 id */
	CHUNK_FACT_CGROUP_OF,		/* value: the tid whose cgroup it takes, if known */
	CHUNK_FACT_RENAME,		/* value: comm, as the kernel set it (task_rename,
					 * a fork's child) */
	CHUNK_FACT_STALE,		/* value: comm a rename replaced, not believed
					 * for a while after it */
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
 * 1 an older version's (not read: @t empty, the version in @why), or -1
 * with the reason in @why.
 */
int chunk_table_parse(const uint8_t *buf, size_t len,
		      const struct chunk_index *ix, struct chunk_table *t,
		      char *why, size_t size);

/*
 * The scheduler records: per frame of the time index, what the frame's
 * sched_switch, wakeup (sched_waking, sched_wakeup, sched_wakeup_new),
 * irq_handler_entry/exit, irq_softirq_entry/exit events and losses did
 * to the state a scheduling walk keeps (tools/cli/sql/schedwalk.h): the
 * CPU's last switch, its interrupt depth as a function of the depth at
 * the frame's start, and for each thread a switch, wakeup or CPU change
 * names, the last switch of it and the first of its wakeups and "no
 * longer running" marks after that switch.  A reader that merges every
 * CPU's records of the frames before a time gets each thread's state
 * there without decoding them (tools/lib/schedrec.c says how, and when it
 * cannot: then it decodes).  The packer writes it as another skippable
 * frame, right in front of the thread table (in front of the time index
 * when there is no table); readers of the index and of the table pass
 * over it.  Times are the events' (clock cycles).  Little endian:
 *
 *   0         4     0x184D2A5D   zstd skippable frame magic
 *   4         4     bytes that follow
 *   8         ...   N records, one per index entry, in its order:
 *                     u32 flags (CHUNK_SCHED_*)
 *                     u32 T, thread records that follow
 *                     u64 packet_seq_num, u64 events_discarded of the
 *                         frame's first packet, u64 and u64 of its last
 *                         (a loss in front of a chunk's first packet is
 *                         not in the record: its reader judges it)
 *                     u64 time of its first sched_switch  (_SWITCHED)
 *                     u64 time of its last sched_switch   (_SWITCHED)
 *                     s32 that switch's prev_tid, s32 its next_tid
 *                     s64 its next_prio (INT64_MIN: none)
 *                     u32 D, u32 A: the interrupt depth at the frame's
 *                         end is max(d - D, 0) + A of the depth d at its
 *                         start (_IRQ_RESET: A alone)
 *                     u32 who owns the CPU's events at the frame's end
 *                         (CHUNK_CPU_SAME, _SET, _FILL as the thread
 *                         table says it), s32 that tid
 *                     T x 72 bytes, by tid:
 *                       s32 tid, u32 flags (CHUNK_SCHED_T_*)
 *                       u64 time of its last switch in the frame (_T_SWITCH),
 *                       s64 the prev_state it left with (_T_IN: switched in)
 *                       u64 time of the first mark after that switch (or
 *                           in the frame: no switch), u64 of the last mark
 *                           (_T_MARK); a mark is a switch of the CPU while
 *                           its thread was this one, which ends its running
 *                       u64 time of the first wakeup after that switch
 *                           (or in the frame), u64 of the last (_T_WAKE)
 *                       s32 the first one's target_cpu, s32 its owner
 *                           (_T_WAKER_START: the CPU's owner at the frame's
 *                           start; _T_WAKER_FILL: that, if known, else
 *                           this tid)
 *                       u32 D, u32 A: the CPU's interrupt depth at that
 *                           wakeup, as above (_T_WAKE_IRQ_RESET: A alone);
 *                           _T_WAKE_CTX: its waker_ctx (sched_waking's)
 *                           says it came in an interrupt whatever the depth
 *   ...       32    footer:
 *                     u64 XXH64 (seed 0) of the N records
 *                     u32 N
 *                     u32 88, u32 72: a record's and a thread record's size
 *                     u32 2, the version (1, before _T_WAKE_CTX:
 *                         read as no records)
 *                     u32 bytes of the records
 *                     u32 0x52535452 ("RTSR")
 *
 * Untrusted like the index: chunk_sched_parse() checks it against the
 * index (one record per entry, times within their frame's, tids
 * increasing and positive, known flags, must-be-zero fields zero) and its
 * checksum.
 */
#define CHUNK_SCHED_MAGIC	0x184D2A5DU
#define CHUNK_SCHED_TAG		0x52535452U	/* "RTSR" */
#define CHUNK_SCHED_VERSION	2U	/* 2: _T_WAKE_CTX */
#define CHUNK_SCHED_RECORD	88U
#define CHUNK_SCHED_THREAD	72U
#define CHUNK_SCHED_FOOTER	32U

/* A record's flags. */
#define CHUNK_SCHED_UNLEARNT	1U	/* damage: a reader decodes the frame */
#define CHUNK_SCHED_SWITCHED	2U
#define CHUNK_SCHED_IRQ_RESET	4U
#define CHUNK_SCHED_FLAGS	7U

/* A thread record's flags. */
#define CHUNK_SCHED_T_SWITCH		1U
#define CHUNK_SCHED_T_IN		2U
#define CHUNK_SCHED_T_MARK		4U
#define CHUNK_SCHED_T_WAKE		8U
#define CHUNK_SCHED_T_WAKE_IRQ_RESET	16U
#define CHUNK_SCHED_T_WAKER_START	32U
#define CHUNK_SCHED_T_WAKER_FILL	64U
#define CHUNK_SCHED_T_WAKE_CTX		128U
#define CHUNK_SCHED_T_FLAGS		255U

/* The interrupt depth as a function of the depth @d before: max(d - drop, 0) + add. */
struct chunk_irq_fn {
	bool reset;			/* ...or add alone */
	uint32_t drop, add;
};

static inline uint32_t chunk_irq_apply(const struct chunk_irq_fn *f, uint32_t d)
{
	return f->reset ? f->add : (d > f->drop ? d - f->drop : 0) + f->add;
}

struct chunk_sched_thread {
	int32_t tid;
	uint32_t flags;			/* but _T_WAKE_IRQ_RESET: wake_irq.reset */
	uint64_t switch_ts;
	int64_t state;			/* prev_state (not _T_IN) */
	uint64_t mark_ts, mark_last;
	uint64_t wake_ts, wake_last;
	int32_t target_cpu, waker;
	struct chunk_irq_fn wake_irq;
};

struct chunk_sched_frame {
	uint32_t flags;			/* but _IRQ_RESET: irq.reset */
	uint32_t nr_threads;
	uint64_t first_seq, first_discarded;
	uint64_t last_seq, last_discarded;
	uint64_t first_switch, last_switch;
	int32_t prev_tid, next_tid;
	int64_t next_prio;
	struct chunk_irq_fn irq;
	uint32_t owner_change;		/* enum chunk_cpu_change */
	int32_t owner;
	struct chunk_sched_thread *threads;	/* by tid */
};

struct chunk_sched {
	struct chunk_sched_frame *f;
	size_t n, cap;
};

/* Appends @f, taking its threads over (freed with @s); -ENOMEM. */
int chunk_sched_add(struct chunk_sched *s, struct chunk_sched_frame *f);
void chunk_sched_free(struct chunk_sched *s);
size_t chunk_sched_size(const struct chunk_sched *s);
void chunk_sched_encode(const struct chunk_sched *s, uint8_t *buf);
/*
 * The scheduler frame that ends at the table frame (or the index frame),
 * from the CHUNK_SCHED_FOOTER bytes @footer in front of it: how many bytes
 * it takes (0: none there), at most @room.
 */
uint64_t chunk_sched_frame_size(const uint8_t *footer, uint64_t room);
/* The scheduler frame @buf of @len bytes, the frames of @ix: 0, or -1 with @why. */
int chunk_sched_parse(const uint8_t *buf, size_t len, const struct chunk_index *ix,
		      struct chunk_sched *s, char *why, size_t size);

#endif /* RINGTRACE_LIB_CHUNK_INDEX_H */
