/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rtdecode: reader for ringtrace trace directories.
 *
 * A trace directory holds `metadata` (CTF 1.8 TSDL written by ringtrace.ko)
 * and one stream per CPU: `cpuN`, or zstd-compressed `cpuN.zst`, or rotated
 * `cpuN-K` / `cpuN-K.zst` read in increasing K (an unnumbered file first;
 * plain and compressed files of one CPU must not be mixed).  A stream is a
 * sequence of CTF packets as ringtrace.ko writes them: struct
 * ringtrace_packet_header, then events up to content_size, and nothing
 * else -- packet_size == content_size, the next packet starts right after.
 * A packet_size that says otherwise (padding, or a damaged header that
 * claims the packets after it) is damage: the packet is read to its
 * content_size and the next one is looked for right there.
 *
 * Counters are the module's: events_discarded is cumulative since the
 * recording began, packet_seq_num counts sub-buffers since then (a
 * recording that took over a trace in progress counts from where the one
 * before began: include/uapi/linux/ringtrace.h).  What the first packet
 * of a stream already counts is reported as lost "before the first
 * packet".
 *
 * Everything read is checked, metadata included -- a trace is untrusted
 * input: a corrupt trace gives an error naming the file and the byte
 * offset (in the decompressed stream for .zst files), and nothing is ever
 * read outside a packet, whatever the metadata declares.  What a killed
 * daemon leaves behind (a trailing partial zstd frame; a trailing partial
 * packet: the file ends inside what its header claims, no other packet
 * starts there, and its events do not all end, whole, before the end of
 * the file) is not an error: the incomplete part is dropped and a note is
 * kept in the stream's notes.
 *
 * A packet is checked on its own (header, sizes, every event, counters its
 * clock leaves room for), then against its neighbours on both sides: it
 * must follow the last packet handed out, and the next packet must follow
 * it -- sequence numbers grow, events_discarded never falls, times do not
 * overlap, losses fit in the time between.  When the next one does not,
 * the one of the two whose header is damaged is the one without which
 * the packets around follow each other.  So a damaged header costs its
 * packet alone: it is never what the next packet is judged by, and its
 * loss figures are never reported (the next packet's count from the last
 * one handed out).  Where nothing tells which of the two is damaged --
 * so too at the first packet read, which has no packet before it -- both
 * are read (their events are in order), the first's loss figures bounded
 * by the second's and the second's not reported.  The last packet of a
 * stream has no next one: its figures are only bounded by the time since
 * the one before (a CPU loses at most one event a nanosecond, give or
 * take 2^16).  An error reading a packet ahead (I/O, --strict's damage)
 * comes after the packets before it.
 *
 * A zstd frame is decoded whole and its checksum verified before any byte
 * of it is parsed (source.c), and a packet is handed out only once all of
 * it has been checked, so a caller never sees part of a corrupt frame or
 * packet.
 */
#ifndef RTDECODE_H
#define RTDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../lib/chunk_index.h"

#define RT_ERR_MAX	512

struct rt_error {
	char msg[RT_ERR_MAX];
};

/* ---- metadata -------------------------------------------------------- */

enum rt_field_kind {
	RT_FIELD_INT,		/* one integer */
	RT_FIELD_ARRAY,		/* fixed number of integers */
	RT_FIELD_SEQUENCE,	/* integers, count in an earlier field */
	RT_FIELD_STRING,	/* NUL-terminated string */
};

/* One label of an enum field: values lo..hi print as it. */
struct rt_enum_label {
	char *label;
	int64_t lo, hi;
};

struct rt_field_desc {
	char *name;
	enum rt_field_kind kind;
	unsigned int bits;		/* element size: 8, 16, 32 or 64 */
	unsigned int align;		/* element alignment, bytes */
	bool is_signed;
	bool is_text;			/* 8-bit UTF-8/ASCII elements */
	unsigned int base;		/* 10, 16, 8 or 2: how to print */
	uint64_t length;		/* RT_FIELD_ARRAY */
	unsigned int length_field;	/* RT_FIELD_SEQUENCE: earlier field */
	/* An RT_FIELD_INT declared as an enum: its labels, sorted by lo. */
	unsigned int nr_labels;
	struct rt_enum_label *labels;
	uint64_t offset;		/* in the payload: the first nr_fixed fields */
};

struct rt_event_desc {
	char *name;
	uint32_t id;
	unsigned int nr_fields;
	struct rt_field_desc *fields;
	unsigned int align;		/* payload alignment, bytes */
	char *unsupported;		/* why it cannot be decoded, or NULL */
	/*
	 * Its first @nr_fixed fields are integers or arrays of them: from the
	 * payload's start (aligned to @align) they take @fixed_size bytes in
	 * every packet, each at its @offset.  A reader checks them with one
	 * bound, and walks only the fields after them (sequences, strings).
	 */
	unsigned int nr_fixed;
	uint64_t fixed_size;
};

struct rt_env {
	char *key;
	char *value;			/* numbers as decimal text */
	bool is_string;
};

struct rt_metadata {
	uint8_t uuid[16];
	bool has_uuid;
	uint64_t stream_id;
	/*
	 * A bit per compact id whose header is untimed (its 27 bits the id
	 * again, its time the record's before it: stack_ref's, 0 in traces
	 * of older modules).
	 */
	uint32_t untimed;
	uint64_t clock_freq;		/* Hz */
	int64_t clock_offset_s;
	int64_t clock_offset;		/* cycles */
	char *clock_name;
	unsigned int nr_env;
	struct rt_env *env;
	unsigned int nr_events;
	struct rt_event_desc *events;	/* sorted by id */
	unsigned int max_fields;
	/* rt_metadata_event()'s: events by id when ids are few (else NULL). */
	const struct rt_event_desc **by_id;
	uint32_t nr_by_id;
};

/* Parses TSDL text; on failure returns -1 with err naming the line. */
int rt_metadata_parse(const char *text, size_t len, const char *name,
		      struct rt_metadata **out, struct rt_error *err);
int rt_metadata_load(const char *path, struct rt_metadata **out,
		     struct rt_error *err);
void rt_metadata_free(struct rt_metadata *md);
/* The event of @id, or NULL: a table look-up (ids are small), else a search. */
const struct rt_event_desc *rt_metadata_event(const struct rt_metadata *md,
					      uint32_t id);
const char *rt_metadata_env(const struct rt_metadata *md, const char *key);

/*
 * What a reader takes a field for.  The metadata is as untrusted as the
 * streams: a field is found by its name only if it is declared that way.
 */
enum rt_field_use {
	RT_USE_INT,		/* one integer (RT_FIELD_INT) */
	RT_USE_INTS,		/* an array or sequence of integers, not text */
	RT_USE_TEXT,		/* a string, or an array or sequence of text */
};
/* The index of @ev's field @name if it is what @use says, else -1. */
int rt_event_field(const struct rt_event_desc *ev, const char *name,
		   enum rt_field_use use);

/* ---- streams ---------------------------------------------------------- */

/*
 * CPU numbers, in file names and packets, are below RT_MAX_CPUS: the
 * largest NR_CPUS any kernel can be built with (x86's MAXSMP, arm64 and
 * powerpc stop at or below it).  A larger one in a packet is damage, in a
 * file name an error.  Readers keep per-CPU state by a CPU's index in
 * rt_trace.cpus, or at most RT_MAX_CPUS of it.
 */
#define RT_MAX_CPUS	8192U

/* One decoded field of an event; data points into the packet. */
struct rt_field_value {
	const struct rt_field_desc *desc;
	uint64_t count;			/* elements (1 for RT_FIELD_INT) */
	const uint8_t *data;		/* first element, little endian */
};

struct rt_packet_info {
	const char *file;		/* display name of the file */
	uint64_t offset;		/* of the packet in the (decompressed) file */
	/*
	 * The whole packet, content_bytes long; its header's packet_size
	 * reads content_size even where the file said otherwise (damage).
	 */
	const uint8_t *raw;
	uint64_t content_bytes;
	uint64_t packet_bytes;		/* == content_bytes */
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t seq;
	uint64_t events_discarded;	/* cumulative */
	uint32_t cpu;
	uint32_t events;
};

enum rt_item_type {
	RT_ITEM_PACKET = 1,		/* a new packet starts; its events follow */
	RT_ITEM_LOST,			/* loss reported before this packet */
	RT_ITEM_EVENT,
};

/* (A field added here is set for events in rtdecode.c's decode_payload() too.) */
struct rt_item {
	enum rt_item_type type;
	uint64_t timestamp;		/* clock cycles; merge key */
	uint32_t cpu;
	const struct rt_packet_info *packet;	/* every item */
	/*
	 * RT_ITEM_LOST: what is missing between the packet handed out before
	 * and this one.  lost_packets counts the sequence numbers not read:
	 * packets the writer lost (overwritten) and packets skipped as
	 * damage alike.  damaged_packets counts the damaged places read past
	 * (tolerant streams): a packet that does not check, bytes or a zstd
	 * frame that hold no packet that does, a place where reading took up
	 * again after packets that do not follow the ones before; their
	 * events are in neither count.  Any RT_ITEM_LOST means events of the
	 * CPU may be missing there: who runs on it is not known until it
	 * says again (its next sched_switch).
	 */
	uint64_t lost_events;		/* events_discarded increase */
	uint64_t lost_packets;		/* packet_seq_num gap */
	uint64_t damaged_packets;	/* damaged places skipped */
	bool lost_first;		/* counted before the first packet */
	uint64_t lost_since;		/* the packet before's timestamp_end; 0 first */
	/* RT_ITEM_EVENT */
	const struct rt_event_desc *event;
	uint64_t offset;		/* of the event header in the file */
	const uint8_t *payload;
	size_t payload_len;
	unsigned int nr_fields;
	const struct rt_field_value *fields;
};

struct rt_stream_stats {
	uint64_t packets;
	uint64_t events;
	uint64_t discarded;		/* last packet's events_discarded, as judged */
	uint64_t lost_packets;		/* sequence numbers never seen */
	uint64_t first_ts, last_ts;	/* of events; valid if events != 0 */
	uint64_t bytes;			/* packet bytes read */
	uint64_t skipped_bytes;		/* in damaged places read past */
};

struct rt_stream;

/*
 * Opens the files of one stream, read one after another.  @cpu is the CPU
 * the file names promise (every packet's cpu_id must match), or -1.
 */
int rt_stream_open(struct rt_stream **out, const struct rt_metadata *md,
		   const char *const *paths, unsigned int nr_paths, int cpu,
		   struct rt_error *err);
/*
 * Returns 1 with *item filled, 0 at the end of the stream, -1 on error.
 * Pointers in *item stay valid until the next call on this stream.  A
 * packet is handed out once the packet after it was read and checked
 * (above): the stream holds up to three packets in memory.
 */
int rt_stream_next(struct rt_stream *s, struct rt_item *item,
		   struct rt_error *err);
const struct rt_stream_stats *rt_stream_stats(const struct rt_stream *s);
/*
 * Tolerant: read past damage instead of failing -- a packet whose header or
 * events do not check (skipped up to the next packet signature: its magic
 * and the trace's uuid), a packet whose header does not fit between its
 * neighbours (skipped whole; or, where they do not tell which of two it
 * is, both read, their loss figures not believed), a packet_size that
 * differs from content_size (the packet is kept, what follows it up to
 * the next signature skipped), a zero-filled tail, a corrupt zstd frame
 * (skipped to the next frame).  Each place read past is described, with
 * its file and offset, by rt_stream_damage().  Off by default: then the
 * first of these is the error, returned once every packet before it is
 * handed out.
 */
void rt_stream_set_tolerant(struct rt_stream *s, bool on);
/*
 * How many damaged places were read past, and what the first RT_MSGS_KEPT
 * of them were (NULL for the others): the list stays small whatever the
 * file holds.  Notes -- what a killed writer left and was dropped -- the
 * same way.
 */
#define RT_MSGS_KEPT	10
unsigned int rt_stream_nr_damage(const struct rt_stream *s);
const char *rt_stream_damage(const struct rt_stream *s, unsigned int i);
unsigned int rt_stream_nr_notes(const struct rt_stream *s);
const char *rt_stream_note(const struct rt_stream *s, unsigned int i);
int rt_stream_cpu(const struct rt_stream *s);
void rt_stream_close(struct rt_stream *s);

/*
 * A time window: from the next item on, only what lies in [@begin, @end]
 * (clock cycles) is needed.  The stream ends at its first packet that
 * begins after @end and follows the packet before it (one that does not
 * is damage, read past as anywhere else: a damaged timestamp_begin ends
 * nothing), and its stats count only the window: packets that
 * overlap it, events in it, losses reported at a time in it (those of a
 * packet that begins in it), first/last of its events.  With @seek it also
 * reads only the frames (packets, in a plain file) that can hold the
 * window, found with each file's time index (seek.c): the packet before
 * the window's first is read too, so its items and counts are those of a
 * full pass; what the frames before tell of threads is a reader of
 * threads' to learn (rt_threads_learn_window()).  The packets after the
 * window's last are read as far as judging that one needs.  What does
 * differ: damage and notes of the frames it does not read are not seen.
 * A file whose index is bad (or cannot be built) is read whole, and said
 * in rt_stream_index_note().  Set it before the first rt_stream_next().
 */
void rt_stream_set_window(struct rt_stream *s, uint64_t begin, uint64_t end,
			  bool seek);
/*
 * The first @n files of a stream seeking a window hold nothing of it (a
 * chunk set's manifest said so): they are never read for the window, only
 * for what they tell of threads (their thread tables, or their frames
 * decoded: rt_threads_learn_window()).
 */
void rt_stream_set_cold(struct rt_stream *s, unsigned int n);
/*
 * What a chunk set's manifest promises of the stream's file @path (as
 * given to rt_stream_open()): its size and XXH64 (seed 0).  Checked where
 * the file is opened, before its first byte is read: its size always;
 * its XXH64 when it is read whole, or is stored (its frames carry no
 * checksum) -- a packed file that a window reads from its index is
 * checked frame by frame instead (each frame's checksum, the index's).
 * A mismatch is damage (rt_stream_damage(); when not tolerant, the
 * error): the file is read all the same, every frame and packet checked
 * as in any file.  Set before the first rt_stream_next(); -1: no memory.
 */
int rt_stream_promise(struct rt_stream *s, const char *path, uint64_t size,
		      uint64_t xxh64);
/* Damage its owner found about the stream (a manifest its files belie). */
void rt_stream_add_damage(struct rt_stream *s, const char *what);
/*
 * The timestamp_begin of the first packet of the stream file @path (plain,
 * or zstd: decoded from the start of its first frame, unchecked): 0, or
 * -1 when it does not start with a packet header.
 */
int rt_file_first_ts(const char *path, uint64_t *ts);
/*
 * What reading cost so far: zstd frames decoded (whole, checked), and the
 * bytes read out of the files (decompressed, or plain) -- what a window
 * or a choice of CPUs saves (ringtrace sql's scan_stats).
 */
void rt_stream_reads(const struct rt_stream *s, uint64_t *frames, uint64_t *bytes);
unsigned int rt_stream_nr_index_notes(const struct rt_stream *s);
const char *rt_stream_index_note(const struct rt_stream *s, unsigned int i);

/*
 * A fed stream: no files of its own, its reader (report --follow) hands it
 * whole packets as they appear on disk.  rt_stream_next() returns 0 once
 * what was fed is read ("dry"), and goes on after the next feed; the
 * checks are those of a stream of files, continuity across feeds
 * included.  rt_stream_feed(): @n bytes of whole packets that start at
 * (decompressed) offset @offset of @file, for messages; only to a dry
 * stream.  A partial packet at the end of them is dropped with a note,
 * as at the end of a file.  The last packet fed is not held back until a
 * next one comes (a CPU may write nothing for a long time): it is handed
 * out judged against the packets before it only, like the last packet of
 * a file.  If the next packet fed does not follow it but follows the one
 * before it (with its events after it), one of the two headers is
 * damaged: said then (damage), both packets' events are read, and the
 * loss figures there are not believed.
 */
int rt_stream_open_fed(struct rt_stream **out, const struct rt_metadata *md,
		       int cpu, struct rt_error *err);
int rt_stream_feed(struct rt_stream *s, const char *file, uint64_t offset,
		   const uint8_t *bytes, size_t n, struct rt_error *err);
/*
 * The metadata grew (it only ever gains events, ids kept): decode with
 * @md from the next packet on (the item handed out last keeps pointing
 * into the old one, which the caller keeps).  Out of memory is the error
 * of that rt_stream_next().
 */
void rt_stream_set_metadata(struct rt_stream *s, const struct rt_metadata *md);

/*
 * Only the events @want says yes to are handed out (RT_ITEM_EVENT); the
 * others are read and checked all the same -- the packet they are in is
 * judged whole, as ever -- and counted in the stats, but their payloads
 * are never decoded: a reader that needs a few kinds of events (threads,
 * `report -e`) pays little for the rest.  Packets and losses are handed
 * out as ever.  @want is asked once per event of the metadata (again for
 * each event of metadata that grows: rt_stream_set_metadata()), never
 * per item; NULL: every event, the default.  -1 out of memory (nothing
 * changed).  Any time between items: from the next item on.
 */
int rt_stream_set_wanted(struct rt_stream *s,
			 bool (*want)(void *arg, const struct rt_event_desc *ev),
			 void *arg);

/*
 * The records of a packet's bytes @raw, @len of them (its header first),
 * walked as the decoder checks a packet: each record's header read after
 * the one before (the first after @ts_begin), its event known to @md, its
 * time at most @ts_end, its payload inside @len.  @fn is called with each
 * record that reads, in order; a non-zero return refuses that record and
 * stops the walk.  Returns where the walk stopped: @len when every record
 * read and was taken, else the start of the record that did not read (its
 * reason in @err, with @name and the offset) or that @fn refused; 0 when
 * @len holds no header, or out of memory (@err).
 */
struct rt_walk_step {
	uint64_t start, end;		/* the record's bytes in the packet */
	uint64_t ts;			/* its time */
	const struct rt_event_desc *event;
};
uint64_t rt_packet_walk(const struct rt_metadata *md, const char *name,
			const uint8_t *raw, uint64_t len, uint64_t ts_begin,
			uint64_t ts_end,
			int (*fn)(void *arg, const struct rt_walk_step *st),
			void *arg, struct rt_error *err);

/*
 * Decoded frames shared by every reader of the process (framecache.c): a
 * packed zstd frame, decoded whole and checked, is kept while its bytes
 * fit in @bytes, and a later reader of the same frame of the same file
 * takes them instead of decompressing it again (ship's passes, one per
 * table, over one set).  Never evicted: rt_frame_cache_stop() frees them
 * all and turns the cache off (the default).  For a process that reads
 * on one thread.
 */
void rt_frame_cache_start(size_t bytes);
void rt_frame_cache_stop(void);
/* Packed frames decoded since the start, frames taken from the cache, bytes it holds. */
void rt_frame_cache_stats(uint64_t *decoded, uint64_t *hits, size_t *bytes);

/* @n bytes at @off of @fd (EINTR retried): 0, or -1 (an error, or the end). */
int rt_pread_full(int fd, void *buf, size_t n, uint64_t off);
/* @fd's size and XXH64 (seed 0), read with pread: 0, or -1 (errno). */
int rt_file_xxh64(int fd, uint64_t *size, uint64_t *sum);

/* ---- item heap (itemheap.c) ---------------------------------------------- */

/*
 * The k-way merge of per-CPU streams (report, export, report --follow): a
 * min-heap of pointers to each stream's next item, by time then CPU.  The
 * caller keeps each item (in its per-CPU state) and finds its own state
 * from the top with container_of(); after changing the top item in place
 * it calls rt_item_heap_top_changed(), when the stream ended
 * rt_item_heap_pop().  Push only within the reserved room.
 */
struct rt_item_heap {
	const struct rt_item **v;
	size_t n, cap;
};

/* Room for @cap items; -1 out of memory (nothing changed). */
int rt_item_heap_reserve(struct rt_item_heap *h, size_t cap);
void rt_item_heap_free(struct rt_item_heap *h);
void rt_item_heap_push(struct rt_item_heap *h, const struct rt_item *it);
void rt_item_heap_top_changed(struct rt_item_heap *h);
void rt_item_heap_pop(struct rt_item_heap *h);
/* The earliest item, or NULL when empty. */
static inline const struct rt_item *rt_item_heap_top(const struct rt_item_heap *h)
{
	return h->n ? h->v[0] : NULL;
}

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ---- trace directories -------------------------------------------------- */

struct rt_trace_cpu {
	int cpu;
	bool compressed;
	unsigned int nr_paths;
	char **paths;
	struct rt_stream *stream;
};

struct rt_trace {
	char *dir;
	struct rt_metadata *md;
	unsigned int nr_cpus;
	struct rt_trace_cpu *cpus;	/* sorted by cpu */
};

/* Loads DIR/metadata and opens a stream per CPU found in DIR. */
int rt_trace_open(const char *dir, struct rt_trace **out, struct rt_error *err);
void rt_trace_close(struct rt_trace *t);

/* ---- per-thread tables (tidmap.c) ---------------------------------------- */

/*
 * tidmap.c: a table keyed by thread id that grows with the threads.  Its
 * elements are @elem bytes and start with their int32_t tid (or another
 * non-negative int32_t key: report --stat keeps system call numbers so).
 */
#define RT_TIDMAP_FREE	INT32_MIN

struct rt_tidmap {
	char *slots;
	size_t elem, cap, used;
};

/* Where @tid's element is looked for first (tidmap.c probes on from there). */
static inline size_t rt_tidmap_home(const struct rt_tidmap *m, int32_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (m->cap - 1);
}

void rt_tidmap_init(struct rt_tidmap *m, size_t elem);
void rt_tidmap_free(struct rt_tidmap *m);
/* The element of @tid, or NULL. */
void *rt_tidmap_find(const struct rt_tidmap *m, int32_t tid);
/* The element of @tid, made (zeroed) if new; NULL out of memory. */
void *rt_tidmap_get(struct rt_tidmap *m, int32_t tid, bool *created);
/* rt_tidmap_get(), an element found where it is looked for first inline. */
static inline void *rt_tidmap_get_inline(struct rt_tidmap *m, int32_t tid, bool *created)
{
	char *e = m->cap ? m->slots + rt_tidmap_home(m, tid) * m->elem : NULL;

	if (e && *(int32_t *)e == tid && tid != RT_TIDMAP_FREE) {
		*created = false;
		return e;
	}
	return rt_tidmap_get(m, tid, created);
}
/* Slot @i (below cap): its element, or NULL when free. */
void *rt_tidmap_slot(const struct rt_tidmap *m, size_t i);

/* ---- threads (threads.c) ------------------------------------------------ */

/*
 * Who did it: fed every event and loss in time order, tells the thread
 * running on a CPU (the one an event there belongs to, interrupts
 * included; unknown from a loss to the next sched_switch) and each
 * thread's pid, comm and cgroup, from sched_switch, the state dump, fork,
 * exec, exit and wakeups.  Ask rt_threads_owner() before feeding an event:
 * a sched_switch belongs to the task it switches out.
 */
struct rt_threads;

struct rt_threads *rt_threads_new(const struct rt_metadata *md);
void rt_threads_free(struct rt_threads *th);
/* An event or a loss (other items tell nothing). */
void rt_threads_feed(struct rt_threads *th, const struct rt_item *it);
/* The tid running on @cpu, or -1 when nothing said yet or since a loss. */
int32_t rt_threads_current(const struct rt_threads *th, uint32_t cpu);
/*
 * The thread @it belongs to (ask before feeding it): the one running on
 * its CPU; before the CPU said, a sched_switch's prev_tid or a state dump
 * CPU event's tid; else -1.  What a window learnt of the frames before it
 * (rt_threads_learn_window()) is taken on up to @it's time first.
 */
int32_t rt_threads_owner(struct rt_threads *th, const struct rt_item *it);
/*
 * Whether @th learns anything from events of @ev (rt_threads_feed()):
 * what a reader of threads lets through rt_stream_set_wanted() beside the
 * events it wants for itself.  Fed only those (and the losses), @th
 * tells the same of every item it is fed.
 */
bool rt_threads_reads(const struct rt_threads *th, const struct rt_event_desc *ev);
/*
 * The trace's metadata grew (a follower reloaded it): @md, which declares
 * every event the old one did under the same id, from now on.  The items
 * fed from then on point into @md.  -1 out of memory, nothing changed.
 */
int rt_threads_set_metadata(struct rt_threads *th, const struct rt_metadata *md);
/*
 * NULL / -1 / 0 when unknown.  The idle task, tid 0, is one per CPU: its
 * name is @cpu's ("swapper/N", the kernel's, unless the trace said
 * otherwise), its pid 0; @cpu names nothing else.  The name of tid 0 is
 * valid until the next call.
 */
const char *rt_threads_comm(const struct rt_threads *th, int32_t tid, uint32_t cpu);
int32_t rt_threads_pid(const struct rt_threads *th, int32_t tid);
/* The parent of the process @pid leads (state dump, fork), or -1. */
int32_t rt_threads_ppid(const struct rt_threads *th, int32_t pid);
/* Its cgroup v2 id (the state dump's and fork's; a kernel without: 0). */
uint64_t rt_threads_cgroup(const struct rt_threads *th, int32_t tid);
/* The threads known (tid > 0), one per call from *@pos = 0 on; -1 at the end. */
int32_t rt_threads_next(const struct rt_threads *th, size_t *pos);
/*
 * @s reads a window by seeking (rt_stream_set_window()): what the frames
 * of its CPU before the window tell of threads -- their thread tables, or
 * the frames decoded where a file has none -- is taken on, each fact at
 * its time as items reach it, so that this table is at every item what a
 * full pass's is.  Nothing for a stream that is not seeking.  Before the
 * first item of @s; 0, or -1 with @err set.  A window that begins at
 * UINT64_MAX (no item) of files with their own indexes reads nothing:
 * every frame's facts are learnt, from its table where it has a good one
 * (rt_threads_settle() takes them all on).
 */
int rt_threads_learn_window(struct rt_threads *th, struct rt_stream *s,
			    struct rt_error *err);
/*
 * Every fact a window learnt (rt_threads_learn_window()) taken on now, as
 * if its items had been reached: what the frames before a window that
 * holds nothing tell, the whole member's threads from its thread tables.
 */
void rt_threads_settle(struct rt_threads *th);

/* ---- thread tables (facts.c) --------------------------------------------- */

/*
 * What a packer (ringtraced's, `ringtrace compress`) gives lib/chunk.c to
 * write a packed chunk's thread table and scheduler records
 * (lib/chunk_index.h, schedrec.c's rt_schedrec): the trace's
 * metadata is read from the chunk's directory, the chunk's packets decoded
 * as they are packed.  One per packer thread.
 */
struct chunk_table_ops;
struct rt_table_maker;

struct rt_table_maker *rt_table_maker_new(void);
void rt_table_maker_free(struct rt_table_maker *m);
const struct chunk_table_ops *rt_table_maker_ops(struct rt_table_maker *m);

/*
 * schedrec.c: one CPU's scheduler records (lib/chunk_index.h), made from
 * its items of a frame in order (every item of the scheduler's events,
 * the losses and the packets); rt_schedrec_peek() gives the record of
 * what was fed of the frame so far, rt_schedrec_end_frame() that and
 * starts the next frame.  Both fill @f, whose threads the caller frees:
 * 0, or -ENOMEM.
 */
struct chunk_sched_frame;
struct rt_schedrec;
struct rt_schedrec *rt_schedrec_new(void);
void rt_schedrec_free(struct rt_schedrec *r);
void rt_schedrec_item(struct rt_schedrec *r, const struct rt_item *it);
/* Whether a record reads @ev's events (the others can be left undecoded). */
bool rt_schedrec_reads(const struct rt_event_desc *ev);
/* The frame holds damage: its record says to decode it. */
void rt_schedrec_unlearnt(struct rt_schedrec *r);
int rt_schedrec_peek(const struct rt_schedrec *r, struct chunk_sched_frame *f);
/*
 * Decoding a frame a record cannot tell about: every switch, mark and
 * wakeup of a thread fed so far in the frame, in order
 * (rt_schedrec_keep_events() before the first item; rt_schedrec_end_frame()
 * drops them, so take them first).
 */
enum rt_sched_event_kind { RT_SCHED_SWITCH, RT_SCHED_MARK, RT_SCHED_WAKE };

struct rt_sched_event {
	int32_t tid;
	enum rt_sched_event_kind kind;
	uint64_t ts;
	int32_t target_cpu, waker;	/* a wakeup's, as a thread record's */
	uint32_t flags;			/* CHUNK_SCHED_T_WAKER_START, _FILL, _WAKE_CTX */
	struct chunk_irq_fn irq;
};
void rt_schedrec_keep_events(struct rt_schedrec *r);
const struct rt_sched_event *rt_schedrec_events(const struct rt_schedrec *r, size_t *nr);
int rt_schedrec_end_frame(struct rt_schedrec *r, struct chunk_sched_frame *f);

/*
 * The scheduler records of the stream file @path (lib/chunk_index.h): 0
 * with @s filled (chunk_sched_free()) and, if @ix is not NULL, its time
 * index (chunk_index_free()); 1 when it has none (not packed, or packed
 * without them), -1 when they or its index are bad, or it cannot be read
 * (@why).
 */
struct chunk_sched;
struct chunk_index;
int rt_file_sched(const char *path, struct chunk_sched *s, struct chunk_index *ix,
		  char *why, size_t size);

/* ---- values and printing ------------------------------------------------ */

/*
 * The field @name of the event @it (RT_ITEM_EVENT) if its event declares
 * it as @use says (rt_event_field()), else NULL.
 */
const struct rt_field_value *rt_item_field(const struct rt_item *it,
					   const char *name,
					   enum rt_field_use use);
/*
 * Element @i of a field, zero- or sign-extended; 0 when the field has no
 * element @i (an array of 0 elements, an empty sequence): never a byte
 * outside the field.
 */
uint64_t rt_field_u64(const struct rt_field_value *f, uint64_t i);
int64_t rt_field_s64(const struct rt_field_value *f, uint64_t i);
/* The enum label of @value for field @d, or NULL (not an enum, no label). */
const char *rt_field_label(const struct rt_field_desc *d, int64_t value);
/* Its index in @d->labels, or -1. */
int rt_field_label_index(const struct rt_field_desc *d, int64_t value);
/* "[seconds.nanoseconds]"; wall adds the clock's offset (epoch time). */
void rt_format_ts(char *buf, size_t len, const struct rt_metadata *md,
		  uint64_t cycles, bool wall);
/*
 * Prints `name=value, ...`; text as a quoted string up to its first NUL,
 * an enum value that has a label as `label(value)`, an array or sequence
 * of unsigned 8-bit hex integers (a build-id) as one string of hex digits.
 */
void rt_print_fields(FILE *f, const struct rt_item *ev);
void rt_print_text(FILE *f, const uint8_t *s, size_t len);

#endif /* RTDECODE_H */
