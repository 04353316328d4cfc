/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the files of tools/lib; not part of the API. */
#ifndef RTDECODE_INTERNAL_H
#define RTDECODE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include "rtdecode.h"
#include "../../lib/chunk_index.h"
#include "../../lib/le.h"

/* rt_metadata_event(), its table read here: the decoder's, per event. */
static inline const struct rt_event_desc *rt_md_event(const struct rt_metadata *md,
						      uint32_t id)
{
	if (md->by_id)
		return id < md->nr_by_id ? md->by_id[id] : NULL;
	return rt_metadata_event(md, id);
}

/* Whether field @f can be read as @use says (rt_event_field()'s test). */
bool rt_field_fits(const struct rt_field_desc *f, enum rt_field_use use);

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

/*
 * rt_stream_feed() without the copy: @bytes stay the caller's, and valid
 * until rt_stream_next() returns 0 (dry) or the stream is closed -- a
 * feeder that reads each feed dry at once (the packer's table maker).
 */
int rt_stream_feed_lent(struct rt_stream *s, const char *file, uint64_t offset,
			const uint8_t *bytes, size_t n, struct rt_error *err);

/*
 * Tests' (the fuzzers' differential reads): @s reads as the decoder did
 * before its fast paths -- every field of every event walked to check a
 * packet, every event decoded again from its header to hand it out --
 * what the fast paths must agree with, item for item.  Before the first
 * rt_stream_next().
 */
void rt_stream_set_reference(struct rt_stream *s, bool on);

/*
 * Tests': @m's streams read every event, as the reference reader
 * (rt_stream_set_reference()) -- the tables the packers made before
 * theirs read only what threads learn from, which must be the same.
 */
void rt_table_maker_set_reference(struct rt_table_maker *m, bool on);

/* What a chunk set's manifest says a file is (rt_stream_promise()). */
struct rt_promise {
	char *path;
	uint64_t size, xxh64;
};

/* A packet's signature: its magic, then the trace's uuid if it has one. */
#define RT_SIG_MAX	(4 + 16)

/* A stream file named *.zst is zstd frames; any other, plain packets. */
static inline bool rt_is_zst(const char *path)
{
	size_t len = strlen(path);

	return len > 4 && !strcmp(path + len - 4, ".zst");
}

/* source.c: the bytes of one stream file, plain or zstd. */
/* A file as the frame cache knows it (framecache.c). */
struct rt_fkey {
	uint64_t dev, ino, size, mtime_ns;
};

/* A frame the cache holds: its decoded bytes, its compressed length. */
struct rt_cframe {
	const uint8_t *data;
	size_t len;
	uint64_t clen;
};

/* @fd's key, when the cache is on: false when it is off (or fstat fails). */
bool rt_fcache_key(int fd, struct rt_fkey *k);
/* The frame at compressed offset @off of file @k, or NULL. */
const struct rt_cframe *rt_fcache_find(const struct rt_fkey *k, uint64_t off);
/* A packed frame was decoded: kept (a copy of @data) if it fits in the budget. */
void rt_fcache_add(const struct rt_fkey *k, uint64_t off, uint64_t clen,
		   const uint8_t *data, size_t len);

struct rt_source {
	/* Set by the owner, kept across files. */
	bool tolerant;			/* skip a damaged frame, say so */
	struct rt_msgs *damage, *notes;
	uint64_t frames_skipped;	/* damaged frames, kept across files */
	const struct rt_promise *promises;	/* checked at a file's first read */
	unsigned int nr_promises;
	uint8_t sig[RT_SIG_MAX];	/* how a packet starts (a frame's content) */
	size_t siglen;
	/* Read by the owner, kept across files. */
	uint64_t moved;			/* bytes decoded, copied out or back */
	uint64_t frames;		/* zstd frames decoded */
	/* Read by the owner. */
	const char *path;		/* NULL: no file open */
	bool zst;
	uint64_t out_off;		/* stream bytes handed out */
	/* The rest is source.c's. */
	int fd;
	bool eof;
	/*
	 * Bytes handed back that reading cannot go back to: in front of
	 * the frame's first byte (zstd), or fed (no file).  Read first.
	 * @pb_lent: @pb is the feeder's (rt_stream_feed_lent()), never
	 * written or freed here.
	 */
	uint8_t *pb;
	size_t pb_len, pb_pos, pb_cap;
	bool pb_lent;
	struct ZSTD_DCtx_s *zds;
	uint8_t *in;			/* compressed bytes ... */
	size_t in_len, in_pos;
	uint64_t in_off;		/* ... from this file offset */
	uint8_t *frame;			/* the frame being decoded */
	const uint8_t *frame_data;	/* the frame handed out: @frame or the cache's */
	size_t frame_len, frame_pos, frame_cap;
	uint64_t frame_start;		/* its file offset */
	bool frame_checked;		/* it carries a content checksum */
	uint64_t limit;			/* file offset reading stops at; 0: none */
	bool vetted;			/* its promise, if any, was checked */
	bool fkeyed;			/* the frame cache is on: @fkey is the file's */
	struct rt_fkey fkey;
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
/*
 * Hands back the last @n bytes read, @buf (a copy of them): reading goes
 * back over them, copying only what is no longer in the source's hands
 * (the frames before the one being read).  -1: no memory.
 */
int rt_src_giveback(struct rt_source *src, const uint8_t *buf, size_t n);
void rt_src_close(struct rt_source *src);
/*
 * Reading goes on from file offset @coff, a frame's start (zstd) or a
 * packet's (plain), which is stream offset @uoff; and ends at file offset
 * @limit (0: the end of the file), a frame or packet boundary.  Only
 * before the first read of a file just opened.
 */
int rt_src_seek(struct rt_source *src, uint64_t coff, uint64_t uoff,
		uint64_t limit, struct rt_error *err);
/* Reading goes on past the limit rt_src_seek() set, to the end of the file. */
void rt_src_unlimit(struct rt_source *src);

/*
 * The bytes a stream's reader copied (out of its files' frames, back to
 * them) and searched for packets so far: what reading costs, which
 * tools/tests/damage_fuzz.c holds to the size of what is read.
 */
uint64_t rt_stream_work(const struct rt_stream *s);

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
/*
 * seek.c: the thread table in front of @ix, the own index of the zstd
 * file @fd (lib/chunk_index.h): 0 with @t set, 1 when there is none (or
 * an older version's, not read), -1 when it is bad (said in @why).
 */
int rt_table_get(int fd, const struct chunk_index *ix, struct chunk_table *t,
		 char *why, size_t size);
/*
 * The scheduler records of the packed chunk @fd whose index is @ix
 * (chunk_index.h): 0, 1 none there, -1 bad (@why).
 */
int rt_sched_get(int fd, const struct chunk_index *ix, struct chunk_sched *s,
		 char *why, size_t size);
/* The first packet header of the frame (packet) at @coff into @pi: 0, or -1. */
int rt_index_first_packet(int fd, bool zst, uint64_t coff,
			  struct rt_packet_info *pi);

/* ---- facts: what threads.c learns, as thread tables keep it ------------------------ */

/* Facts of a CPU's thread, never in a table: a record's cpu_change says it. */
enum { RT_FACT_CPU_SET = CHUNK_FACT_KINDS, RT_FACT_CPU_FILL };

struct rt_fact {
	struct chunk_fact f;		/* RT_FACT_CPU_*: f.tid runs there */
	uint32_t cpu;			/* of the event that told it */
	size_t seq;			/* threads.c's: order at equal time and CPU */
};

/* The metadata declares an event threads.c learns from. */
bool rt_threads_reads_any(const struct rt_threads *th);
/* Room for every fact one item makes (a fork's). */
#define RT_ITEM_FACTS	8
/*
 * What @it tells, as the facts rt_threads_feed() would apply, in order,
 * into @f: how many.  Nothing is applied: they never depend on what the
 * table knows (a collector keeps them itself).
 */
unsigned int rt_threads_facts(const struct rt_threads *th, const struct rt_item *it,
			      struct rt_fact *f);
/*
 * @n facts of frames not read (a window's), each applied when an item fed
 * (or asked about) reaches its time; -1 out of memory.
 */
int rt_threads_add_facts(struct rt_threads *th, const struct rt_fact *f, size_t n);

/*
 * facts.c: a collector -- fed one CPU's items in order, what they tell of
 * threads, frame by frame, as a thread table's records (chunk_index.h).
 */
struct rt_collector;
struct rt_collector *rt_collector_new(const struct rt_metadata *md);
void rt_collector_free(struct rt_collector *c);
/* @s, whose items @c is fed, hands out only the events @c learns from. */
int rt_collector_filter(struct rt_collector *c, struct rt_stream *s);
void rt_collector_item(struct rt_collector *c, const struct rt_item *it);
/* What was fed cannot be trusted whole (damage): the frame is not learnt. */
void rt_collector_unlearnt(struct rt_collector *c);
/* The frame fed since the last call ends: its record into @f; -1 out of memory. */
int rt_collector_end_frame(struct rt_collector *c, struct chunk_table_frame *f);
/*
 * A window's facts of one CPU (rtdecode.c's window_facts()): its frames'
 * records added one after another from its first packet, then who runs
 * there when the first packet read starts.  A name, pid or parent that a
 * later one of the same thread overrides is dropped as they come: a reader
 * reads them from the window on, so the list follows the threads, not the
 * trace's length (cgroup facts are all kept: a fork reads them).
 */
struct rt_facts {
	uint32_t cpu;
	int32_t cur;			/* the CPU's thread so far; -1 unknown */
	bool have_prev;
	uint64_t last_seq, last_discarded;	/* of the record added last */
	struct rt_fact *v;		/* in order; kind 0: dropped */
	size_t n, cap, dropped;
	struct rt_tidmap latest;	/* facts.c's: the latest per thread */
};
void rt_facts_init(struct rt_facts *b, uint32_t cpu);
/* The next frame's record; -1 out of memory. */
int rt_facts_record(struct rt_facts *b, const struct chunk_table_frame *r);
/*
 * The first packet read starts (@next: NULL when it cannot be read): who
 * runs then, as a fact; the list compacted.  -1 out of memory.
 */
int rt_facts_end(struct rt_facts *b, const struct rt_packet_info *next);
/* What rt_facts_end() does not free: the list stays, b->v is the caller's. */
void rt_facts_release(struct rt_facts *b);


#endif /* RTDECODE_INTERNAL_H */
