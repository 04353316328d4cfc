// SPDX-License-Identifier: GPL-2.0
/*
 * Stream decoding: files -> bytes (source.c: plain, or zstd frames checked
 * whole) -> packets -> events.
 *
 * Each packet is read whole, then checked whole (header, every event)
 * into one of three slots, and judged against its neighbours on both
 * sides -- the last packet handed out and the next one read
 * (next_packet()) -- before anything of it is handed out; a second pass
 * hands out the events.  The check notes where each event is, its id and
 * time, so the hand-out decodes each header once, and only the payloads
 * of the events the reader wants (rt_stream_set_wanted()); an event of a
 * fixed layout is checked with one bound.  Timestamps are rebuilt as CTF
 * does: the clock starts at timestamp_begin in every packet, a compact
 * header replaces the low 27 bits of the clock (adding 2^27 when they went
 * backwards), an extended header (id in bits 5..31, then the unaligned
 * 64-bit time) sets all 64 bits.
 *
 * A packet takes content_size bytes: ringtrace.ko writes packet_size ==
 * content_size, and the daemon's verbatim copies of content_size bytes
 * are whole packets.  A packet_size that differs is damage, and never
 * moves where the next packet is looked for (read_packet()); nor does a
 * content_size that claims past the end of the file over another packet.
 * Damage is read past to the next packet signature, searched for in the
 * bytes read already first (skip_packet()): each byte is read once.
 *
 * A stream made of several files (rotation) is read file by file; frames
 * and packets never straddle files, so whatever is incomplete at the end
 * of one file (a killed daemon) is dropped, noted, and reading goes on
 * with the next file.  Judging a packet looks across files: its next one
 * may be the first of the next file (or, in a window, of the frames the
 * window's plan leaves out).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ringtrace.h>
#include "internal.h"

#define HDR_SIZE	sizeof(struct ringtrace_packet_header)
#define TS_MASK		((1ULL << RINGTRACE_COMPACT_TS_BITS) - 1)

int rt_fail(struct rt_error *err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -1;
}

enum state { NEED_PACKET, GIVE_PACKET, GIVE_LOST, GIVE_EVENTS, AT_END };

/* What a packet's neighbours are judged against (follows(), verdict()). */
struct head {
	struct rt_packet_info info;
	uint64_t first_ts, last_ts;	/* of its events (timestamp_begin: none) */
};

/*
 * Where check_events() found an event, and what its header said: the
 * hand-out starts from there instead of decoding the header again, and
 * skips an event its reader does not want without touching its payload.
 * A packet is at most RINGTRACE_MAX_SUBBUF_SIZE bytes: offsets fit.
 */
struct ev_at {
	uint32_t off;			/* of its header, in the packet */
	uint32_t id;
	uint64_t ts;
};

/*
 * A packet read whole and checked on its own (read_packet()), waiting to be
 * judged against its neighbours, or handed out.
 */
struct pkt {
	struct head h;			/* h.info.raw is buf */
	uint64_t damaged;		/* places read past since the packet before */
	uint8_t *buf;
	size_t cap;
	bool kept;			/* evs holds its events (room_for_events()) */
	struct ev_at *evs;		/* its h.info.events events */
	uint32_t *wanted;		/* those its reader wants: their indexes */
	uint32_t nr_wanted;
	uint64_t want_gen;		/* s->want_gen when they were picked */
	size_t evs_cap;
};

#define NR_SLOTS	3		/* the packet handed out, and two ahead */

struct rt_stream {
	const struct rt_metadata *md;
	char **paths;
	unsigned int nr_paths, next_path;
	bool opened;			/* a file of the stream was */
	int cpu;			/* promised by the file names, or -1 */
	struct rt_source src;

	/*
	 * Packets: @cur is handed out, @ahead[0 .. nr_ahead) are read and
	 * checked on their own, in stream order, not judged yet (next_packet()).
	 */
	struct pkt slot[NR_SLOTS];
	struct pkt *cur;
	struct pkt *ahead[NR_SLOTS];
	unsigned int nr_ahead;
	uint64_t drops;			/* places read past by the stream itself */
	uint64_t drops_seen;		/* ... and the source, counted in a packet */
	uint64_t scanned;		/* bytes searched for packets (rt_stream_work()) */
	/*
	 * The last packet handed out (@ref) and the one before it (@ref_prev).
	 * @provisional: @ref was handed out with no packet after it to judge
	 * it by (a fed stream ran dry, dispute()): the next one still may.
	 */
	struct head ref, ref_prev;	/* info.raw and info.file: not kept */
	bool have_ref, have_ref_prev, provisional;
	bool disputed;			/* the next one's figures: not believed */
	uint64_t disputed_seq, disputed_discarded;	/* the first one's own */
	/* An error reading ahead, for when the packets before it are out (fill()). */
	bool failed;
	struct rt_error fail;

	enum state state;
	uint32_t next_ev;		/* in cur->evs */
	uint64_t pos;			/* next event in cur (s->reference) */
	uint64_t clock;			/* current clock value (s->reference) */
	struct rt_field_value *values;
	/*
	 * The events handed out (rt_stream_set_wanted()): by position in
	 * md->events, NULL for all; what decides, asked again when md grows.
	 */
	bool *want;
	bool (*want_fn)(void *arg, const struct rt_event_desc *ev);
	void *want_arg;
	uint64_t want_gen;		/* counts changes of want */
	uint32_t next_wanted;		/* in cur->wanted */
	/* check_loop()'s look-up of md's events by id (ids_for()), or NULL. */
	struct id_shape *ids;
	uint32_t nr_ids;
	bool reference;			/* rt_stream_set_reference() */
	uint64_t lost_events, lost_packets, damaged;
	bool lost_first;
	uint64_t lost_since;		/* timestamp_end of the packet before */

	struct rt_stream_stats stats;
	struct rt_msgs notes;		/* what a killed writer left */
	/* Read past damage (rt_stream_set_tolerant()), and what was skipped. */
	bool tolerant;
	bool hard;			/* the error is ours, not damage */
	struct rt_msgs damage;
	char *fed_file;			/* a fed stream's current file, or NULL */
	/* Grown metadata for the next packet (rt_stream_set_metadata()). */
	const struct rt_metadata *md_next;

	/* A time window (rt_stream_set_window()), and how files are read for it. */
	bool windowed, seek, planned;
	uint64_t win_begin, win_end;
	unsigned int cold;		/* first files: nothing of the window */
	struct file_plan *plan;		/* by path */
	struct rt_msgs index_notes;	/* indexes ignored, files read whole */
	/* What manifests promise of its files (rt_stream_promise()). */
	struct rt_promise *promises;
	unsigned int nr_promises;
	/* What the frames before the window tell of threads (window_facts()). */
	bool want_facts;
	struct rt_fact *facts;
	size_t nr_facts;
};

/* How one file of a windowed stream is read (entries of its index, checked). */
struct file_plan {
	bool skip;			/* holds nothing of the window */
	struct chunk_index_entry start;	/* where reading starts */
	struct chunk_index_entry stop;	/* where it ends; coff 0: the end */
};

/*
 * What check_loop() needs of an event, by id, in one look-up: the event
 * description is then not on the path from one event's header to the
 * next's.  Most events' payloads are their fixed fields alone and need
 * no alignment: @e holds their size (ID_SIZE bits: RINGTRACE_MAX_SUBBUF_SIZE
 * at most).  ID_TAIL: fixed fields and one sequence after them, whose
 * length one of them holds (a system call's arguments, an IRQ's name),
 * described by the rest.  ID_OTHER: any other id, looked up and checked
 * as such.  ID_WANTED: its reader wants it.
 */
#define ID_SIZE		0x7fffffffu
#define ID_OTHER	ID_SIZE
#define ID_TAIL		(ID_SIZE - 1)
#define ID_WANTED	0x80000000u

struct id_shape {
	uint32_t e;
	uint32_t prefix;		/* ID_TAIL: the fixed fields' bytes */
	uint32_t len_at;		/* ... the length's offset in them */
	uint8_t len_bytes;		/* ... its size */
	bool len_signed;
	uint8_t elem_shift;		/* ... log2 of an element's size */
	uint8_t seq_align;		/* ... the sequence's alignment */
};

/* @ev's shape, if it is one of those above (fast_payload()'s cases, unaligned). */
static struct id_shape shape_of(const struct rt_event_desc *ev)
{
	struct id_shape sh = { .e = ID_OTHER };
	const struct rt_field_desc *f, *lf;

	if (!ev || ev->unsupported || ev->align != 1 || ev->fixed_size >= ID_TAIL)
		return sh;
	if (ev->nr_fixed == ev->nr_fields) {
		sh.e = (uint32_t)ev->fixed_size;
		return sh;
	}
	f = &ev->fields[ev->nr_fixed];
	if (ev->nr_fixed + 1 != ev->nr_fields || f->kind != RT_FIELD_SEQUENCE ||
	    f->length_field >= ev->nr_fixed || f->align > 128)
		return sh;
	lf = &ev->fields[f->length_field];
	sh = (struct id_shape){
		.e = ID_TAIL, .prefix = (uint32_t)ev->fixed_size,
		.len_at = (uint32_t)lf->offset, .len_bytes = (uint8_t)(lf->bits / 8),
		.len_signed = lf->is_signed,
		.elem_shift = (uint8_t)__builtin_ctz(f->bits / 8),
		.seq_align = (uint8_t)f->align,
	};
	return sh;
}

/* The table of @md's ids for a stream wanting @want (NULL: all): 0, or -1 out of memory. */
static int ids_for(const struct rt_metadata *md, const bool *want,
		   struct id_shape **out, uint32_t *nr)
{
	struct id_shape *t;

	*out = NULL;
	*nr = 0;
	if (!md->by_id)
		return 0;
	t = malloc(md->nr_by_id * sizeof(*t));
	if (!t)
		return -1;
	for (uint32_t id = 0; id < md->nr_by_id; id++) {
		const struct rt_event_desc *ev = md->by_id[id];

		t[id] = shape_of(ev);
		if (ev && (!want || want[ev - md->events]))
			t[id].e |= ID_WANTED;
	}
	*out = t;
	*nr = md->nr_by_id;
	return 0;
}

/* What @fn says of each event of @md, by position; NULL out of memory. */
static bool *wanted_events(const struct rt_metadata *md,
			   bool (*fn)(void *arg, const struct rt_event_desc *ev),
			   void *arg)
{
	bool *want = calloc(md->nr_events ? md->nr_events : 1, sizeof(*want));

	for (unsigned int i = 0; want && i < md->nr_events; i++)
		want[i] = fn(arg, &md->events[i]);
	return want;
}

/*
 * Takes the grown metadata on, between packets: the item handed out last
 * (its fields in s->values) is the caller's until this call.
 */
static int take_metadata(struct rt_stream *s, struct rt_error *err)
{
	const struct rt_metadata *md = s->md_next;
	bool *want = NULL;
	struct id_shape *ids;
	uint32_t nr_ids;

	if (s->want_fn && !(want = wanted_events(md, s->want_fn, s->want_arg)))
		return rt_fail(err, "out of memory");
	if (ids_for(md, s->want_fn ? want : NULL, &ids, &nr_ids)) {
		free(want);
		return rt_fail(err, "out of memory");
	}
	if (md->max_fields > s->md->max_fields) {
		struct rt_field_value *v = calloc(md->max_fields, sizeof(*v));

		if (!v) {
			free(want);
			free(ids);
			return rt_fail(err, "out of memory");
		}
		free(s->values);
		s->values = v;
	}
	if (s->want_fn) {
		free(s->want);
		s->want = want;
		s->want_gen++;
	}
	free(s->ids);
	s->ids = ids;
	s->nr_ids = nr_ids;
	s->md = md;
	s->md_next = NULL;
	return 0;
}

void rt_msgs_add(struct rt_msgs *m, const char *fmt, ...)
{
	va_list ap;

	if (m->nr < RT_MSGS_KEPT) {
		va_start(ap, fmt);
		/* Out of memory: counted, not kept (rt_stream_damage() is NULL). */
		if (vasprintf(&m->kept[m->nr], fmt, ap) < 0)
			m->kept[m->nr] = NULL;
		va_end(ap);
	}
	m->nr++;
}

void rt_msgs_free(struct rt_msgs *m)
{
	for (unsigned int i = 0; i < m->nr && i < RT_MSGS_KEPT; i++)
		free(m->kept[i]);
	m->nr = 0;
}

/* Offsets in messages count stream bytes, after decompression. */
static const char *off_kind(const struct rt_stream *s)
{
	return s->src.zst ? "uncompressed " : "";
}

/* ---- packets ------------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p)
{
	return rt_get_le(p, 4);
}

static uint64_t le64(const uint8_t *p)
{
	return rt_get_le(p, 8);
}

#define FIELD(buf, f) \
	rt_get_le((buf) + offsetof(struct ringtrace_packet_header, f), \
		  sizeof(((struct ringtrace_packet_header *)0)->f))

static void parse_header(const uint8_t *h, struct rt_packet_info *pi)
{
	pi->timestamp_begin = FIELD(h, timestamp_begin);
	pi->timestamp_end = FIELD(h, timestamp_end);
	pi->content_bytes = FIELD(h, content_size) / 8;
	pi->packet_bytes = FIELD(h, packet_size) / 8;
	pi->seq = FIELD(h, packet_seq_num);
	pi->events_discarded = FIELD(h, events_discarded);
	pi->cpu = FIELD(h, cpu_id);
	pi->events = FIELD(h, events);
}

/*
 * What can be checked from the header alone.  packet_size is not: a packet
 * is content_size bytes long, and a packet_size that differs is damage of
 * its own (check_packet_size(), from read_packet()).
 */
static int check_header(struct rt_stream *s, const uint8_t *h, uint64_t off,
			struct rt_error *err)
{
	const char *path = s->src.path;
	uint64_t csize = FIELD(h, content_size);
	uint32_t magic = FIELD(h, magic);

	if (magic != RINGTRACE_CTF_MAGIC)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": bad packet magic 0x%08x (expected 0x%08x)",
			       path, off_kind(s), off, magic, RINGTRACE_CTF_MAGIC);
	if (s->md->has_uuid &&
	    memcmp(h + offsetof(struct ringtrace_packet_header, uuid),
		   s->md->uuid, 16))
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet uuid differs from the metadata's trace uuid",
			       path, off_kind(s), off);
	if (FIELD(h, stream_id) != s->md->stream_id)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": unknown stream id %" PRIu64,
			       path, off_kind(s), off, (uint64_t)FIELD(h, stream_id));
	if (csize % 8 || csize < HDR_SIZE * 8 ||
	    csize > (uint64_t)RINGTRACE_MAX_SUBBUF_SIZE * 8)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": bad sizes: content_size %" PRIu64 " bits, packet_size %" PRIu64 " bits",
			       path, off_kind(s), off, csize,
			       (uint64_t)FIELD(h, packet_size));
	if (FIELD(h, timestamp_end) < FIELD(h, timestamp_begin))
		return rt_fail(err, "%s: %soffset %" PRIu64 ": timestamp_end %" PRIu64 " before timestamp_begin %" PRIu64,
			       path, off_kind(s), off, (uint64_t)FIELD(h, timestamp_end),
			       (uint64_t)FIELD(h, timestamp_begin));
	if (FIELD(h, stream_instance_id) != FIELD(h, cpu_id))
		return rt_fail(err, "%s: %soffset %" PRIu64 ": stream_instance_id %" PRIu64 " differs from cpu_id %u",
			       path, off_kind(s), off, (uint64_t)FIELD(h, stream_instance_id),
			       (unsigned int)FIELD(h, cpu_id));
	if (FIELD(h, cpu_id) >= RT_MAX_CPUS)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": cpu_id %u: no kernel has that CPU (at most %u CPUs)",
			       path, off_kind(s), off, (unsigned int)FIELD(h, cpu_id),
			       RT_MAX_CPUS);
	return 0;
}

/* ringtrace.ko writes packet_size == content_size: anything else is damage. */
static int check_packet_size(struct rt_stream *s, const uint8_t *h,
			     uint64_t off, struct rt_error *err)
{
	uint64_t csize = FIELD(h, content_size), psize = FIELD(h, packet_size);

	if (psize == csize)
		return 0;
	return rt_fail(err, "%s: %soffset %" PRIu64 ": packet_size %" PRIu64 " bits differs from content_size %" PRIu64 " bits (ringtrace.ko writes them equal)",
		       s->src.path, off_kind(s), off, psize, csize);
}

/* Nanoseconds of @cycles of the trace clock (saturated). */
static uint64_t clock_ns(const struct rt_metadata *md, uint64_t cycles)
{
	uint64_t freq = md->clock_freq ? md->clock_freq : 1000000000;
	unsigned __int128 ns = (unsigned __int128)cycles * 1000000000 / freq;

	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/*
 * How far the module's account can run ahead of its clock, in nanoseconds
 * (and so in events, below).  Every event lost is a reserve attempt, kept
 * or dropped, that read the clock, and an attempt takes nanoseconds, so a
 * CPU loses at most one event per nanosecond between two of its packets'
 * closing times (module/ring.c: events_discarded is snapshotted with
 * timestamp_end; an overwritten packet's events lie between its
 * neighbours; every packet opens with an attempt).  What the clock does
 * not show of the time that passed is the slack: its granule (TSC and
 * kvm-clock: a nanosecond; HPET, ACPI PM: under 300 ns; a 32 kHz SoC
 * timer: 30.5 us), a step back of ktime_get_mono_fast_ns() in an NMI
 * (clamped to the last time: equal times), a lost count read a moment
 * after the time.  2^16 ns covers them twice over; the jiffies
 * clocksource of a machine without timer hardware would not be, and
 * neither would it be by any figure that still catches damage.  The same
 * is how far a timestamp_end written by a flush or a close on the drop
 * path may run past the next packet's first event (ends_late()).
 */
#define CLOCK_SLACK	(1ULL << 16)

/*
 * The most events a CPU can have lost in @cycles of its clock, and so the
 * most packets (a packet opens with an event).  A loss figure above it is
 * a damaged header: what bit 20 of events_discarded or packet_seq_num
 * says is a million events lost in a millisecond.
 */
static uint64_t most_lost(const struct rt_stream *s, uint64_t cycles)
{
	uint64_t ns = clock_ns(s->md, cycles);

	return ns > UINT64_MAX - CLOCK_SLACK ? UINT64_MAX : ns + CLOCK_SLACK;
}

/*
 * What a packet's header says about the stream as a whole, checked on its
 * own: the CPU the file names promise, and counters since the module was
 * loaded that its clock (monotonic, from boot) leaves room for.
 */
static int check_alone(struct rt_stream *s, const struct rt_packet_info *pi,
		       struct rt_error *err)
{
	uint64_t most = most_lost(s, pi->timestamp_end);

	if (s->cpu >= 0 && pi->cpu != (uint32_t)s->cpu)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet of cpu %u in a stream of cpu %d",
			       pi->file, off_kind(s), pi->offset, pi->cpu, s->cpu);
	if (pi->seq > most)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet_seq_num %" PRIu64 " is more packets than a CPU writes by its timestamp_end (%" PRIu64 " ns)",
			       pi->file, off_kind(s), pi->offset, pi->seq,
			       clock_ns(s->md, pi->timestamp_end));
	if (pi->events_discarded > most)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": events_discarded %" PRIu64 " is more events than a CPU writes by its timestamp_end (%" PRIu64 " ns)",
			       pi->file, off_kind(s), pi->offset, pi->events_discarded,
			       clock_ns(s->md, pi->timestamp_end));
	return 0;
}

/*
 * Whether packet @a's timestamp_end is all that puts packet @b before it,
 * and by no more than the clock can step back: @b's events come after
 * @a's.  ringtrace.ko's flush and its close on the drop path write
 * timestamp_end without making it the floor of the next event's time
 * (module/ring.c), so an NMI's earlier clock read can open the next
 * packet before it.  Such a pair follows; @a ends where @b begins.
 */
static bool ends_late(const struct rt_stream *s, const struct head *a,
		      const struct head *b)
{
	uint64_t begin = b->info.timestamp_begin;

	return begin < a->info.timestamp_end && begin >= a->last_ts &&
	       b->first_ts >= a->last_ts && begin >= a->info.timestamp_begin &&
	       clock_ns(s->md, a->info.timestamp_end - begin) <= CLOCK_SLACK;
}

/*
 * Whether packet @b can come after packet @a in a stream (packets lost
 * between them or not): true, or false with @why saying why not.  Each
 * counter grows, times do not overlap (ends_late() aside), and what was
 * lost in between fits in the time between them (most_lost()).
 */
static bool follows(const struct rt_stream *s, const struct head *ha,
		    const struct head *hb, char *why, size_t len)
{
	const struct rt_packet_info *a = &ha->info, *b = &hb->info;
	uint64_t most, span;

	if (b->cpu != a->cpu) {
		snprintf(why, len, "cpu_id changed from %u to %u", a->cpu, b->cpu);
	} else if (b->seq <= a->seq) {
		snprintf(why, len, "packet_seq_num %" PRIu64 " does not follow %" PRIu64,
			 b->seq, a->seq);
	} else if (b->events_discarded < a->events_discarded) {
		snprintf(why, len, "events_discarded went down from %" PRIu64 " to %" PRIu64,
			 a->events_discarded, b->events_discarded);
	} else if (b->timestamp_begin < a->timestamp_end && !ends_late(s, ha, hb)) {
		snprintf(why, len, "timestamp_begin %" PRIu64 " is before the previous packet's timestamp_end %" PRIu64,
			 b->timestamp_begin, a->timestamp_end);
	} else {
		span = b->timestamp_end > a->timestamp_end ?
		       b->timestamp_end - a->timestamp_end : 0;
		most = most_lost(s, span);
		if (b->seq - a->seq - 1 > most)
			snprintf(why, len, "%" PRIu64 " packets lost in the %" PRIu64 " ns since the previous packet's timestamp_end: more than a CPU writes",
				 b->seq - a->seq - 1, clock_ns(s->md, span));
		else if (b->events_discarded - a->events_discarded > most)
			snprintf(why, len, "%" PRIu64 " events lost in the %" PRIu64 " ns since the previous packet's timestamp_end: more than a CPU writes",
				 b->events_discarded - a->events_discarded,
				 clock_ns(s->md, span));
		else
			return true;
	}
	return false;
}

/*
 * Why the header of the event at @pos of packet @pi, the one before it at
 * time @clock, does not read (read_header() said so): the error.  Cold,
 * like the other messages: the loops that check every event stay small.
 */
static __attribute__((cold, noinline)) int
header_refused(struct rt_stream *s, const struct rt_packet_info *pi,
	       uint64_t pos, uint64_t clock, struct rt_error *err)
{
	uint64_t left = pi->content_bytes - pos;
	uint32_t word;

	if (left < RINGTRACE_COMPACT_HEADER_SIZE)
		goto short_event;
	word = le32(pi->raw + pos);
	if ((word & ((1u << RINGTRACE_EVENT_ID_BITS) - 1)) != RINGTRACE_EVENT_ID_EXTENDED)
		/* The 64-bit clock wrapped. */
		return rt_fail(err, "%s: %soffset %" PRIu64 ": timestamp overflows 64 bits",
			       pi->file, off_kind(s), pi->offset + pos);
	if (left < RINGTRACE_EXTENDED_HEADER_SIZE)
		goto short_event;
	return rt_fail(err, "%s: %soffset %" PRIu64 ": event time %" PRIu64 " goes back from %" PRIu64,
		       pi->file, off_kind(s), pi->offset + pos, le64(pi->raw + pos + 4),
		       clock);

short_event:
	return rt_fail(err, "%s: %soffset %" PRIu64 ": event header cut by content_size (%" PRIu64 " bytes left)",
		       pi->file, off_kind(s), pi->offset + pos, left);
}

/*
 * The header of the event at *@at of the packet @raw, @end bytes long,
 * the one before it at time @clock, the compact ids @untimed untimed
 * (rt_metadata's): its id and time into *@id and *@ts, *@at past it.
 * False when it does not read (header_refused() says why).
 */
static inline bool read_header(const uint8_t *raw, uint64_t end, uint64_t *at,
			       uint64_t clock, uint32_t untimed, uint32_t *id,
			       uint64_t *ts)
{
	uint64_t left = end - *at;
	uint32_t word;

	if (left < RINGTRACE_COMPACT_HEADER_SIZE)
		return false;
	word = le32(raw + *at);
	*id = word & ((1u << RINGTRACE_EVENT_ID_BITS) - 1);
	if (untimed >> *id & 1) {
		/* The id again in the 27 bits, as babeltrace2 reads it. */
		*id = word >> RINGTRACE_EVENT_ID_BITS;
		*ts = clock;
		*at += RINGTRACE_COMPACT_HEADER_SIZE;
		return true;
	}
	if (*id != RINGTRACE_EVENT_ID_EXTENDED) {
		uint64_t low = word >> RINGTRACE_EVENT_ID_BITS;

		*ts = (clock & ~TS_MASK) | low;
		if (low < (clock & TS_MASK))
			*ts += TS_MASK + 1;
		if (*ts < clock)
			return false;
		*at += RINGTRACE_COMPACT_HEADER_SIZE;
		return true;
	}
	if (left < RINGTRACE_EXTENDED_HEADER_SIZE)
		return false;
	*id = word >> RINGTRACE_EVENT_ID_BITS;
	*ts = le64(raw + *at + 4);
	if (*ts < clock)
		return false;
	*at += RINGTRACE_EXTENDED_HEADER_SIZE;
	return true;
}

/* Why event @id of time @ts, its header at @hoff in @pi, cannot be decoded. */
static __attribute__((cold, noinline)) int
event_refused(struct rt_stream *s, const struct rt_packet_info *pi,
	      uint64_t hoff, uint32_t id, uint64_t ts, struct rt_error *err)
{
	const struct rt_event_desc *ev = rt_md_event(s->md, id);

	if (!ev)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": unknown event id %u",
			       pi->file, off_kind(s), pi->offset + hoff, id);
	if (ev->unsupported) {
		/* A layout this reader does not know: not damage. */
		s->hard = true;
		return rt_fail(err, "%s: %soffset %" PRIu64 ": event '%s' cannot be decoded: %s",
			       pi->file, off_kind(s), pi->offset + hoff, ev->name,
			       ev->unsupported);
	}
	return rt_fail(err, "%s: %soffset %" PRIu64 ": event time %" PRIu64 " is after the packet's timestamp_end %" PRIu64,
		       pi->file, off_kind(s), pi->offset + hoff, ts, pi->timestamp_end);
}

static __attribute__((cold, noinline)) int
short_payload(const struct rt_stream *s, const struct rt_packet_info *pi,
	      uint64_t hoff, const struct rt_event_desc *ev, struct rt_error *err)
{
	return rt_fail(err, "%s: %soffset %" PRIu64 ": payload of event '%s' runs past content_size",
		       pi->file, off_kind(s), pi->offset + hoff, ev->name);
}

/*
 * CTF alignment is relative to the packet start.  metadata.c's are powers
 * of two (its parser refuses others): a mask.
 */
static inline uint64_t align_to(uint64_t pos, unsigned int align)
{
	return (pos + align - 1) & ~(uint64_t)(align - 1);
}

/* Integer field @d at @p, sign-extended if it is signed. */
static inline uint64_t int_at(const struct rt_field_desc *d, const uint8_t *p)
{
	uint64_t v = rt_get_le(p, d->bits / 8);

	if (d->is_signed && d->bits < 64 && (v >> (d->bits - 1)) & 1)
		v |= ~0ULL << d->bits;
	return v;
}

/*
 * The payload of @ev (its header at @hoff in @pi) from *@at, the end of
 * its header, walked field by field into s->values, every length
 * checked; *@at past it.  What the decoder always did, and what decides
 * wherever fast_payload() does not.
 */
static int walk_payload(struct rt_stream *s, const struct rt_packet_info *pi,
			const struct rt_event_desc *ev, uint64_t hoff,
			uint64_t *at, struct rt_error *err)
{
	const uint8_t *pkt = pi->raw;
	uint64_t end = pi->content_bytes, pos = align_to(*at, ev->align);

	if (pos > end)
		return short_payload(s, pi, hoff, ev, err);
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		const struct rt_field_desc *f = &ev->fields[i];
		struct rt_field_value *v = &s->values[i];
		uint64_t count = 1;

		pos = align_to(pos, f->align);
		if (pos > end)
			return short_payload(s, pi, hoff, ev, err);
		v->desc = f;
		v->data = pkt + pos;
		if (f->kind == RT_FIELD_STRING) {
			const uint8_t *nul = memchr(pkt + pos, 0, end - pos);

			if (!nul)
				return short_payload(s, pi, hoff, ev, err);
			v->count = nul - (pkt + pos);
			pos += v->count + 1;
			continue;
		}
		if (f->kind == RT_FIELD_ARRAY)
			count = f->length;
		else if (f->kind == RT_FIELD_SEQUENCE) {
			const struct rt_field_value *lv = &s->values[f->length_field];

			if (lv->desc->is_signed && rt_field_s64(lv, 0) < 0)
				return rt_fail(err, "%s: %soffset %" PRIu64 ": event '%s': negative length %" PRId64 " for '%s'",
					       pi->file, off_kind(s), pi->offset + hoff, ev->name,
					       rt_field_s64(lv, 0), f->name);
			count = rt_field_u64(lv, 0);
		}
		if (count > (end - pos) / (f->bits / 8))
			return short_payload(s, pi, hoff, ev, err);
		v->count = count;
		pos += count * (f->bits / 8);
	}
	*at = pos;
	return 0;
}

/*
 * The payload of @ev from *@at (the end of its header) in the packet
 * @raw, @end bytes long, read without walking its fields: its fixed ones
 * (rt_event_desc.nr_fixed) with one bound, and the one sequence after
 * them, if that is all there is (a system call's arguments, an IRQ's
 * name): true, *@at past it, its fields into @values if not NULL.  False
 * for anything else, or a payload this does not accept: walk_payload()
 * decides, and says why.  What this accepts, the walk accepts, up to the
 * same byte: each fixed field is where it is (their alignments divide
 * the payload's), and a field runs past @end where the one bound does.
 */
static inline __attribute__((always_inline)) bool
fast_payload(const struct rt_event_desc *ev, const uint8_t *raw, uint64_t end,
	     uint64_t *at, struct rt_field_value *values)
{
	uint64_t pos = align_to(*at, ev->align), n, size;
	const struct rt_field_desc *f, *lf;
	unsigned int k = ev->nr_fixed;

	if (pos > end || ev->fixed_size > end - pos)
		return false;
	for (unsigned int i = 0; values && i < k; i++) {
		f = &ev->fields[i];
		values[i] = (struct rt_field_value){ .desc = f, .count = f->length,
						     .data = raw + pos + f->offset };
	}
	if (k == ev->nr_fields) {
		*at = pos + ev->fixed_size;
		return true;
	}
	f = &ev->fields[k];
	if (k + 1 != ev->nr_fields || f->kind != RT_FIELD_SEQUENCE ||
	    f->length_field >= k)
		return false;
	lf = &ev->fields[f->length_field];
	n = int_at(lf, raw + pos + lf->offset);
	size = f->bits / 8;
	pos = align_to(pos + ev->fixed_size, f->align);
	/*
	 * 1, 2, 4 or 8 bytes an element: a shift.  A negative length,
	 * sign-extended, is more than any packet holds: the walk says so.
	 */
	if (pos > end || n > (end - pos) >> __builtin_ctz(size))
		return false;
	if (values)
		values[k] = (struct rt_field_value){ .desc = f, .count = n,
						     .data = raw + pos };
	*at = pos + n * size;
	return true;
}

/*
 * Event @id of time @ts, its header at @hoff in @pi and its payload after
 * *@at (the header's end), into *item and s->values; *@at past it.  The
 * payload must lie within content_size.
 */
static int decode_payload(struct rt_stream *s, const struct rt_packet_info *pi,
			  uint64_t hoff, uint32_t id, uint64_t ts, uint64_t *at,
			  struct rt_item *item, struct rt_error *err)
{
	const struct rt_event_desc *ev = rt_md_event(s->md, id);
	uint64_t pos = *at;

	if (!ev || ev->unsupported || ts > pi->timestamp_end)
		return event_refused(s, pi, hoff, id, ts, err);
	if (!(!s->reference &&
	      fast_payload(ev, pi->raw, pi->content_bytes, &pos, s->values)) &&
	    walk_payload(s, pi, ev, hoff, &pos, err))
		return -1;
	/* Every field: rt_stream_next() does not clear an event's item. */
	item->type = RT_ITEM_EVENT;
	item->timestamp = ts;
	item->cpu = pi->cpu;
	item->packet = pi;
	item->lost_events = item->lost_packets = item->damaged_packets = 0;
	item->lost_first = false;
	item->lost_since = 0;
	item->event = ev;
	item->offset = pi->offset + hoff;
	item->payload = pi->raw + align_to(*at, ev->align);
	item->payload_len = pi->raw + pos - item->payload;
	item->nr_fields = ev->nr_fields;
	item->fields = s->values;
	*at = pos;
	return 0;
}

/*
 * Decodes the event of packet @pi at *@at into *item and advances *@at and
 * *@clock: the reference reader's hand-out (rt_stream_set_reference()).
 */
static int decode_event(struct rt_stream *s, const struct rt_packet_info *pi,
			uint64_t *at, uint64_t *clock, struct rt_item *item,
			struct rt_error *err)
{
	uint64_t hoff = *at, pos = *at, ts;
	uint32_t id;

	if (!read_header(pi->raw, pi->content_bytes, &pos, *clock, s->md->untimed,
			 &id, &ts))
		return header_refused(s, pi, hoff, *clock, err);
	if (decode_payload(s, pi, hoff, id, ts, &pos, item, err))
		return -1;
	*clock = ts;
	*at = pos;
	return 0;
}

/*
 * The most events of a packet whose places are kept (20 MiB a slot):
 * one of more -- 4 MiB at least of events without fields -- is handed out
 * by decoding its headers again, as the reference reader does.
 */
#define KEEP_MAX	(1u << 20)

/*
 * Room in @p for as many events as its header counts, and its content can
 * hold (an event takes 4 bytes at least): what a packet that checks
 * holds; none past KEEP_MAX (then !p->kept).  -1 out of memory.
 */
static int room_for_events(struct pkt *p, size_t *cap)
{
	const struct rt_packet_info *pi = &p->h.info;
	uint64_t n = (pi->content_bytes - HDR_SIZE) / RINGTRACE_COMPACT_HEADER_SIZE;

	if (n > pi->events)
		n = pi->events;
	p->kept = n <= KEEP_MAX;
	if (!p->kept)
		n = 0;
	if (n > p->evs_cap) {
		struct ev_at *v = realloc(p->evs, n * sizeof(*v));
		uint32_t *w;

		if (!v)
			return -1;
		p->evs = v;
		w = realloc(p->wanted, n * sizeof(*w));
		if (!w)
			return -1;
		p->wanted = w;
		p->evs_cap = n;
	}
	*cap = n;
	return 0;
}

static __attribute__((cold, noinline)) int
count_refused(const struct rt_stream *s, const struct rt_packet_info *pi,
	      uint64_t n, struct rt_error *err)
{
	return rt_fail(err, "%s: %soffset %" PRIu64 ": packet holds %" PRIu64 " events, its header says %u",
		       pi->file, off_kind(s), pi->offset, n, pi->events);
}

/*
 * The reference reader's check (rt_stream_set_reference()): every event
 * decoded, every field walked, nothing kept.
 */
static int check_walk(struct rt_stream *s, struct head *p, struct rt_error *err)
{
	const struct rt_packet_info *pi = &p->info;
	uint64_t n = 0, at = HDR_SIZE, clock = pi->timestamp_begin;
	struct rt_item item;

	p->first_ts = p->last_ts = pi->timestamp_begin;
	while (at < pi->content_bytes) {
		if (decode_event(s, pi, &at, &clock, &item, err))
			return -1;
		if (!n++)
			p->first_ts = clock;
	}
	p->last_ts = clock;
	return n == pi->events ? 0 : count_refused(s, pi, n, err);
}

/*
 * rt_packet_walk(): check_walk()'s walk over bytes that are not (yet) a
 * packet a stream hands out -- a persistent region's sub-buffer
 * (lib/persist.h), whose end the walker does not know.  A stream of no
 * file supplies what the messages and the payload walk need.
 */
uint64_t rt_packet_walk(const struct rt_metadata *md, const char *name,
			const uint8_t *raw, uint64_t len, uint64_t ts_begin,
			uint64_t ts_end,
			int (*fn)(void *arg, const struct rt_walk_step *st),
			void *arg, struct rt_error *err)
{
	struct rt_packet_info pi = {
		.file = name, .raw = raw, .content_bytes = len,
		.packet_bytes = len, .timestamp_begin = ts_begin,
		.timestamp_end = ts_end,
	};
	uint64_t at = HDR_SIZE, clock = ts_begin;
	struct rt_walk_step st;
	struct rt_stream *s;
	struct rt_item item;

	if (len < HDR_SIZE) {
		rt_fail(err, "%s: %" PRIu64 " bytes hold no packet header", name, len);
		return 0;
	}
	if (rt_stream_open(&s, md, NULL, 0, -1, err))
		return 0;
	s->reference = true;
	while (at < len) {
		st.start = at;
		if (decode_event(s, &pi, &at, &clock, &item, err))
			break;
		st.end = at;
		st.ts = clock;
		st.event = item.event;
		if (fn(arg, &st))
			break;
	}
	rt_stream_close(s);
	return at < len ? st.start : len;
}

/*
 * The payload of an ID_TAIL event from *@at in the packet @raw, @end
 * bytes long: fast_payload()'s tail case, from the table.  False for one
 * it does not accept: the event is then looked up, and walked.
 */
static inline bool tail_fits(const struct id_shape *sh, const uint8_t *raw,
			     uint64_t end, uint64_t *at)
{
	uint64_t n, pos;

	if (sh->prefix > end - *at)
		return false;
	n = rt_get_le(raw + *at + sh->len_at, sh->len_bytes);
	if (sh->len_signed && (n >> (8 * sh->len_bytes - 1)) & 1)
		return false;		/* negative: the walk says so */
	pos = align_to(*at + sh->prefix, sh->seq_align);
	if (pos > end || n > (end - pos) >> sh->elem_shift)
		return false;
	*at = pos + (n << sh->elem_shift);
	return true;
}

/*
 * check_events()'s loop, made once for a stream that wants every event
 * (@want NULL) and once for one that picks (then which it wants, into
 * @wanted, their number into *@nw): what the loop keeps in registers.
 */
static inline __attribute__((always_inline)) int
check_loop(struct rt_stream *s, struct head *p, struct ev_at *evs, size_t cap,
	   const bool *want, uint32_t *wanted, uint32_t *nw, struct rt_error *err)
{
	const struct rt_packet_info *pi = &p->info;
	/* Read once: the stores below could alias them. */
	const uint8_t *raw = pi->raw;
	const uint64_t end = pi->content_bytes, ts_end = pi->timestamp_end;
	const struct rt_metadata *md = s->md;
	static const struct id_shape other = { .e = ID_OTHER };
	const struct id_shape *ids = s->ids, *sh;
	const uint32_t nr_ids = s->nr_ids;
	uint64_t n = 0, at = HDR_SIZE, clock = pi->timestamp_begin, hoff, ts;
	const struct rt_event_desc *ev;
	uint32_t id, k = 0, e, size;

	p->first_ts = pi->timestamp_begin;
	while (at < end) {
		hoff = at;
		if (!read_header(raw, end, &at, clock, md->untimed, &id, &ts))
			return header_refused(s, pi, hoff, clock, err);
		sh = id < nr_ids ? &ids[id] : &other;
		e = sh->e;
		size = e & ID_SIZE;
		if (size < ID_TAIL && ts <= ts_end && size <= end - at) {
			/* fast_payload()'s first bound, all there is. */
			at += size;
		} else if (size == ID_TAIL && ts <= ts_end && tail_fits(sh, raw, end, &at)) {
			/* fast_payload()'s tail. */
		} else {
			ev = rt_md_event(md, id);
			if (!ev || ev->unsupported || ts > ts_end)
				return event_refused(s, pi, hoff, id, ts, err);
			if (!fast_payload(ev, raw, end, &at, NULL)) {
				uint64_t w = at;	/* @at stays a register */

				if (walk_payload(s, pi, ev, hoff, &w, err))
					return -1;
				at = w;
			}
			e = want && want[ev - md->events] ? ID_WANTED : 0;
		}
		if (n < cap) {
			evs[n] = (struct ev_at){ (uint32_t)hoff, id, ts };
			if (want) {
				wanted[k] = (uint32_t)n;
				k += e >> 31;
			}
		}
		if (!n++)
			p->first_ts = ts;
		clock = ts;
	}
	p->last_ts = clock;
	if (want)
		*nw = k;
	return n == pi->events ? 0 : count_refused(s, pi, n, err);
}

/*
 * Checks every event of @p without handing any out, and counts them
 * against its header; notes its first and last event times, and, if
 * @keep, where each event is, its id and time (keep->evs), and which of
 * them its reader wants (keep->wanted).  Each header is read, each
 * payload bounded (fast_payload(), walk_payload()).
 */
static int check_events(struct rt_stream *s, struct head *p, struct pkt *keep,
			struct rt_error *err)
{
	size_t cap = 0;

	if (s->reference)
		return check_walk(s, p, err);
	if (keep && room_for_events(keep, &cap)) {
		s->hard = true;
		return rt_fail(err, "%s: out of memory", p->info.file);
	}
	if (keep)
		keep->want_gen = s->want ? s->want_gen : 0;
	if (keep && s->want)
		return check_loop(s, p, keep->evs, cap, s->want, keep->wanted,
				  &keep->nr_wanted, err);
	return check_loop(s, p, keep ? keep->evs : NULL, cap, NULL, NULL, NULL, err);
}

/* A packet's signature, where a resynchronising reader takes up: its magic and the trace's uuid. */
static size_t signature(const struct rt_stream *s, uint8_t sig[RT_SIG_MAX])
{
	rt_put_le(sig, RINGTRACE_CTF_MAGIC, 4);
	if (!s->md->has_uuid)
		return 4;
	memcpy(sig + 4, s->md->uuid, 16);
	return RT_SIG_MAX;
}

/* ---- a time window: the frames that can hold it ------------------------------- */

/* One place in a stream's files where reading can start: a frame, a packet. */
struct spot {
	unsigned int path;
	const struct chunk_index_entry *e;	/* NULL: the file has no index */
	bool own;
};

struct spots {
	struct spot *v;
	size_t n, cap;
};

/* What plan_window() knows of the stream's files, by path. */
struct plan_files {
	struct chunk_index *ix;
	struct chunk_table *tab;	/* read for the files a window starts after */
	bool *tab_read;
};

/*
 * The frames of file @i (its index into @ix[@i]: its own, or built) at the
 * end of @sp; one spot with no entry when it has no index.  What is wrong
 * with its index is a note.
 */
static int add_file(struct rt_stream *s, unsigned int i, struct chunk_index *ix,
		    struct spots *sp, struct rt_error *err)
{
	bool zst = rt_is_zst(s->paths[i]), own;
	int fd = open(s->paths[i], O_RDONLY | O_CLOEXEC);
	char why[160];
	int r;

	if (fd < 0)		/* said when it is read */
		return 0;
	r = rt_index_get(fd, zst, &ix[i], &own, why, sizeof(why));
	close(fd);
	if (*why)
		rt_msgs_add(&s->index_notes, "%s: its time index is ignored (%s)%s",
			    s->paths[i], why, r ? ": read whole" : ": built from its frames");
	else if (r)
		rt_msgs_add(&s->index_notes, "%s: cannot be indexed (not whole frames of packets in time order): read whole",
			    s->paths[i]);
	for (size_t k = 0; k < (r ? 1 : ix[i].n); k++) {
		if (sp->n == sp->cap) {
			size_t cap = sp->cap ? 2 * sp->cap : 64;
			struct spot *n = realloc(sp->v, cap * sizeof(*n));

			if (!n)
				return rt_fail(err, "out of memory");
			sp->v = n;
			sp->cap = cap;
		}
		sp->v[sp->n++] = (struct spot){ i, r ? NULL : &ix[i].e[k], own };
	}
	return 0;
}

/* The spots of file @i in front of @sp's; how many in @added. */
static int prepend_file(struct rt_stream *s, unsigned int i, struct chunk_index *ix,
			struct spots *sp, size_t *added, struct rt_error *err)
{
	struct spots older = { 0 };
	int ret = add_file(s, i, ix, &older, err);

	*added = 0;
	if (!ret && older.n && sp->n + older.n > sp->cap) {
		struct spot *n = realloc(sp->v, (sp->n + older.n) * sizeof(*n));

		if (n) {
			sp->v = n;
			sp->cap = sp->n + older.n;
		} else {
			ret = rt_fail(err, "out of memory");
		}
	}
	if (!ret && older.n) {
		memmove(sp->v + older.n, sp->v, sp->n * sizeof(*sp->v));
		memcpy(sp->v, older.v, older.n * sizeof(*sp->v));
		sp->n += older.n;
		*added = older.n;
	}
	free(older.v);
	return ret;
}

/*
 * The record of the thread table for the frame of @sp->v[@k], or NULL:
 * the file has no own index, no table (stored, packed by an older
 * ringtrace, or left out), one of an older version, a bad one (a note),
 * or the packer did not learn that frame.  A file's table is read once, when first asked for.
 */
static const struct chunk_table_frame *table_record(struct rt_stream *s,
						    struct plan_files *pf,
						    const struct spots *sp, size_t k)
{
	const struct spot *at = &sp->v[k];
	struct chunk_table *t = &pf->tab[at->path];
	const struct chunk_table_frame *r;
	char why[160];
	int fd;

	if (!at->e || !at->own)
		return NULL;
	if (!pf->tab_read[at->path]) {
		pf->tab_read[at->path] = true;
		fd = open(s->paths[at->path], O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && rt_table_get(fd, &pf->ix[at->path], t, why, sizeof(why)) < 0)
			rt_msgs_add(&s->index_notes, "%s: its thread table is ignored (%s): the frames before the window are decoded",
				    s->paths[at->path], why);
		if (fd >= 0)
			close(fd);
	}
	if (!t->n)
		return NULL;
	r = &t->f[at->e - pf->ix[at->path].e];
	return r->flags & CHUNK_FRAME_UNLEARNT ? NULL : r;
}

/*
 * The frames of spots @k..@j - 1, all of one file, decoded as a stream of
 * their own into one record (what a thread table's would hold for them),
 * counted in @s's reads (rt_stream_reads()).  Damage is read past as a
 * full pass reads past it: a window says nothing of damage before it.
 */
static int decode_run(struct rt_stream *s, const struct spots *sp,
		      size_t k, size_t j, struct chunk_table_frame *rec,
		      struct rt_error *err)
{
	const struct spot *at = &sp->v[k];
	struct rt_collector *c = rt_collector_new(s->md);
	struct rt_stream *sub = NULL;
	struct rt_error e;
	struct rt_item it;
	int r;

	if (!c)
		return rt_fail(err, "out of memory");
	if (rt_stream_open(&sub, s->md, (const char *const *)&s->paths[at->path], 1,
			   s->cpu, &e) || (!s->reference && rt_collector_filter(c, sub)) ||
	    !(sub->plan = calloc(1, sizeof(*sub->plan)))) {
		rt_stream_close(sub);
		rt_collector_free(c);
		return rt_fail(err, "out of memory");
	}
	rt_stream_set_tolerant(sub, true);
	sub->reference = s->reference;
	sub->planned = true;
	if (at->e)
		sub->plan->start = *at->e;
	if (j < sp->n && sp->v[j].path == at->path && sp->v[j].e)
		sub->plan->stop = *sp->v[j].e;
	/* An error ends what a full pass reads there too: what came before counts. */
	while ((r = rt_stream_next(sub, &it, &e)) > 0)
		rt_collector_item(c, &it);
	r = rt_collector_end_frame(c, rec);
	s->src.frames += sub->src.frames;
	s->src.moved += sub->src.moved;
	rt_stream_close(sub);
	rt_collector_free(c);
	return r ? rt_fail(err, "out of memory") : 0;
}

/*
 * What the frames before the window's first (spots 0..@first - 1) tell of
 * threads, as the facts a reader of threads replays
 * (rt_threads_learn_window()): each frame's from its file's thread table,
 * or decoded (a run of frames at a time) where there is none.  A full pass
 * learns names, processes and cgroups from the whole trace before the
 * window, and who runs on the CPU from its last switch, however far back:
 * so does this, reading each file's table and no data frame when every
 * file has one.
 */
static int window_facts(struct rt_stream *s, struct plan_files *pf,
			const struct spots *sp, size_t first, bool whole,
			struct rt_error *err)
{
	struct rt_packet_info next, *np = NULL;
	const struct spot *f = &sp->v[first];
	const struct chunk_table_frame *r;
	struct chunk_table_frame run;
	struct rt_facts b;
	int ret = -1, fd;

	rt_facts_init(&b, (uint32_t)s->cpu);
	for (size_t k = 0, j; k < first; k = j) {
		/* A file passed: its table is not needed any more. */
		if (k && sp->v[k - 1].path != sp->v[k].path)
			chunk_table_free(&pf->tab[sp->v[k - 1].path]);
		j = k + 1;
		r = table_record(s, pf, sp, k);
		if (r) {
			if (rt_facts_record(&b, r))
				goto oom;
			continue;
		}
		while (j < first && sp->v[j].path == sp->v[k].path &&
		       !table_record(s, pf, sp, j))
			j++;
		if (decode_run(s, sp, k, j, &run, err))
			goto out;
		ret = rt_facts_record(&b, &run);
		free(run.facts);
		if (ret)
			goto oom;
		ret = -1;
	}
	/*
	 * Its first packet: was anything lost between it and the frame
	 * before?  (Not from the table of a file whose index lies: @whole.)
	 * No first packet when every frame is learnt from.
	 */
	r = whole || first == sp->n ? NULL : table_record(s, pf, sp, first);
	if (first == sp->n) {
		np = NULL;
	} else if (r) {
		next = (struct rt_packet_info){ .timestamp_begin = f->e->ts_begin,
						.seq = r->first_seq,
						.events_discarded = r->first_discarded };
		np = &next;
	} else if ((fd = open(s->paths[f->path], O_RDONLY | O_CLOEXEC)) >= 0) {
		if (!rt_index_first_packet(fd, rt_is_zst(s->paths[f->path]),
					   f->e ? f->e->coff : 0, &next))
			np = &next;
		close(fd);
	}
	if (rt_facts_end(&b, np))
		goto oom;
	s->facts = b.v;
	s->nr_facts = b.n;
	b.v = NULL;
	ret = 0;
	goto out;
oom:
	rt_fail(err, "out of memory");
out:
	free(b.v);
	rt_facts_release(&b);
	return ret;
}

/*
 * The own index of the file of @at says where a frame starts: checked
 * against the frame there (a lying index, with a checksum that matches).
 * False, with a note, when it is wrong: then the file is read whole.
 */
static bool entry_holds(struct rt_stream *s, const struct spot *at)
{
	int fd = open(s->paths[at->path], O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)		/* said when it is read */
		return true;
	ok = !rt_index_check(fd, rt_is_zst(s->paths[at->path]), at->e);
	close(fd);
	if (!ok)
		rt_msgs_add(&s->index_notes, "%s: its time index does not match the frame at offset %" PRIu64 ": ignored, read whole",
			    s->paths[at->path], at->e->coff);
	return ok;
}

/*
 * Which files, from where to where, a window needs: the reading starts at
 * the last frame that starts before --begin (the items at or after it are
 * in it or later; the packet before the first one at or after it is
 * decoded, so that its losses count as in a full pass) and stops at the
 * first frame that starts after --end.  A file without an index is one
 * frame of unknown times: read whole unless a later file's frame is the
 * start, or an earlier one's the stop.  What the frames before the start
 * tell of threads is learnt from them (window_facts()), when a reader of
 * threads asked for it (rt_threads_learn_window()) -- the files before the
 * ones read (s->cold) included.
 */
/* Every spot is an entry of its file's own index (the packer's). */
static bool own_indexes(const struct spots *sp)
{
	for (size_t k = 0; k < sp->n; k++)
		if (!sp->v[k].e || !sp->v[k].own)
			return false;
	return true;
}

static int plan_window(struct rt_stream *s, struct rt_error *err)
{
	struct plan_files pf = {
		.ix = calloc(s->nr_paths + 1, sizeof(*pf.ix)),
		.tab = calloc(s->nr_paths + 1, sizeof(*pf.tab)),
		.tab_read = calloc(s->nr_paths + 1, sizeof(*pf.tab_read)),
	};
	struct spots sp = { 0 };
	struct spot start = { 0 }, stop = { 0 };
	size_t first = 0, added;
	bool have_stop = false, whole = false, stop_whole = false;
	uint64_t t = 0;
	int ret = -1;

	s->planned = true;
	s->plan = calloc(s->nr_paths + 1, sizeof(*s->plan));
	if (!pf.ix || !pf.tab || !pf.tab_read || !s->plan) {
		rt_fail(err, "out of memory");
		goto out;
	}
	for (unsigned int i = s->cold; i < s->nr_paths; i++)
		if (add_file(s, i, pf.ix, &sp, err))
			goto out;
	/*
	 * A file without an index starts no earlier than the frame before it
	 * (files are in time order), and may hold anything after that: it
	 * can be the start, never the stop.
	 */
	for (size_t k = 0; k < sp.n; k++) {
		if (sp.v[k].e)
			t = sp.v[k].e->ts_begin;
		if (!k || t < s->win_begin)
			first = k;
	}
	/* Its first packet's predecessor is where it may start: read it too. */
	if (sp.n && !sp.v[first].e && first)
		first--;
	/* Facts are learnt from the files before too: they come first. */
	for (; s->want_facts && s->win_begin && s->cold; first += added)
		if (prepend_file(s, --s->cold, pf.ix, &sp, &added, err))
			goto out;
	if (!sp.n) {
		for (unsigned int i = 0; i < s->cold; i++)
			s->plan[i].skip = true;
		goto done;
	}
	/*
	 * A window that begins at UINT64_MAX holds no item: with files that
	 * carry their indexes, nothing is read and every frame is learnt
	 * from (their thread tables) -- what the whole stream says of threads.
	 */
	if (s->want_facts && s->win_begin == UINT64_MAX && own_indexes(&sp)) {
		if (window_facts(s, &pf, &sp, sp.n, false, err))
			goto out;
		for (unsigned int i = 0; i < s->nr_paths; i++)
			s->plan[i].skip = true;
		goto done;
	}
	start = sp.v[first];
	for (size_t k = first + 1; k < sp.n && !have_stop; k++) {
		if (sp.v[k].e && sp.v[k].e->ts_begin > s->win_end) {
			stop = sp.v[k];
			have_stop = true;
		}
	}
	/* A lying own index: its file is read whole, and learnt from as it is read. */
	if (start.e && start.own && start.e->coff && !entry_holds(s, &start))
		whole = true;
	if (have_stop && stop.own && stop.e->coff && !entry_holds(s, &stop)) {
		stop_whole = true;
		whole |= stop.path == start.path;
	}
	if (whole)
		while (first && sp.v[first - 1].path == start.path)
			first--;
	if (s->want_facts && s->win_begin && first &&
	    window_facts(s, &pf, &sp, first, whole, err))
		goto out;
	for (unsigned int i = 0; i < s->nr_paths; i++) {
		struct file_plan *p = &s->plan[i];

		p->skip = i < start.path || (have_stop &&
			  (i > stop.path || (i == stop.path && !stop.e->coff)));
		if (i == start.path && start.e && !whole)
			p->start = *start.e;
		if (have_stop && i == stop.path && !stop_whole && !whole)
			p->stop = *stop.e;
	}
done:
	ret = 0;
out:
	for (unsigned int i = 0; pf.ix && i < s->nr_paths; i++)
		chunk_index_free(&pf.ix[i]);
	for (unsigned int i = 0; pf.tab && i < s->nr_paths; i++)
		chunk_table_free(&pf.tab[i]);
	free(pf.ix);
	free(pf.tab);
	free(pf.tab_read);
	free(sp.v);
	return ret;
}

/* The file just opened, read as its plan says: from its start frame to its limit. */
static int start_file(struct rt_stream *s, const struct file_plan *p,
		      struct rt_error *err)
{
	if (!p->start.coff && !p->stop.coff)
		return 0;
	return rt_src_seek(&s->src, p->start.coff, p->start.uoff, p->stop.coff, err);
}

/*
 * The next file of the stream, opened (and positioned as a window's plan
 * says): 1, or 0 when there is none.  The files a plan leaves out after
 * the window are still read once reading looks past the window's end
 * (read_packet(), next_packet()).
 */
static int open_next(struct rt_stream *s, struct rt_error *err)
{
	struct rt_source *src = &s->src;

	if (s->windowed && !s->planned && plan_window(s, err))
		return -1;
	while (s->next_path < s->nr_paths) {
		unsigned int i = s->next_path++;
		/* Left out before the window (never after a file read) or after it. */
		bool past = s->plan && s->plan[i].skip;

		if (past && !(s->windowed && s->opened))
			continue;
		if (rt_src_open(src, s->paths[i], err))
			return -1;
		s->opened = true;
		if (!past && s->plan && start_file(s, &s->plan[i], err))
			return -1;
		return 1;
	}
	return 0;
}

/*
 * Up to @n stream bytes, as rt_src_read().  A window's reading goes on past
 * its last frame where it must -- a packet that claims more, the next
 * packet's signature, the next packet: the packets after the window judge
 * its last one.
 */
static ssize_t read_on(struct rt_stream *s, uint8_t *buf, size_t n,
		       struct rt_error *err)
{
	ssize_t got = rt_src_read(&s->src, buf, n, err), more;

	if (got < 0 || (size_t)got == n || !s->windowed || !s->src.limit)
		return got;
	rt_src_unlimit(&s->src);
	more = rt_src_read(&s->src, buf + got, n - (size_t)got, err);
	return more < 0 ? more : got + more;
}

/* Room for @n bytes in @p->buf, at most @most: 0, or -1 out of memory. */
static int pkt_room(struct rt_stream *s, struct pkt *p, size_t n, size_t most,
		    struct rt_error *err)
{
	size_t cap = p->cap < 65536 ? 65536 : 2 * p->cap;
	uint8_t *b;

	if (n <= p->cap)
		return 0;
	cap = cap < n ? n : cap > most ? most : cap;
	b = realloc(p->buf, cap);
	if (!b)
		return rt_fail(err, "%s: out of memory", s->src.path);
	p->buf = b;
	p->cap = cap;
	return 0;
}

/*
 * Stream bytes into @p->buf from @have on, up to @want: how many it holds
 * then (fewer only at the end of the file), -1 on error.  The buffer grows
 * as the bytes come, not as a header claims: a damaged content_size costs
 * what the file holds.
 */
static ssize_t read_grow(struct rt_stream *s, struct pkt *p, size_t have,
			 size_t want, struct rt_error *err)
{
	while (have < want) {
		size_t step;
		ssize_t got;

		if (pkt_room(s, p, have + 1, want, err))
			return -1;
		step = (p->cap < want ? p->cap : want) - have;
		got = read_on(s, p->buf + have, step, err);
		if (got < 0)
			return -1;
		have += (size_t)got;
		if ((size_t)got < step)
			break;
	}
	return (ssize_t)have;
}

/*
 * Whether the @len bytes of the packet @buf at @off, cut by the end of
 * the file before its content_size, hold all the events its header
 * counts, whole: then the writer was not killed inside it (what it wrote
 * ends exactly there), its content_size is damaged.
 */
static bool whole_before(struct rt_stream *s, const uint8_t *buf, uint64_t off,
			 uint64_t len)
{
	struct head h = { 0 };
	struct rt_error err;
	bool hard = s->hard, whole;

	parse_header(buf, &h.info);
	h.info.file = s->src.path;
	h.info.offset = off;
	h.info.raw = buf;
	h.info.content_bytes = len;
	whole = !check_events(s, &h, NULL, &err);
	s->hard = hard;
	return whole;
}

/*
 * The packet @buf at @off of which the file holds @len bytes, fewer than
 * its content_size: cut there by a killed writer (0), or damage (1, @err
 * says why) -- a packet starts inside what it claims, or its events end,
 * whole, before the end of the file (whole_before()).
 */
static int cut_is_damage(struct rt_stream *s, const uint8_t *buf, uint64_t len,
			 uint64_t off, struct rt_error *err)
{
	uint64_t csize = FIELD(buf, content_size) / 8;
	uint8_t sig[RT_SIG_MAX];
	size_t siglen = signature(s, sig);
	const uint8_t *inside = memmem(buf + HDR_SIZE, (size_t)(len - HDR_SIZE), sig,
				       siglen);

	s->scanned += inside ? (uint64_t)(inside - buf) - HDR_SIZE + siglen : len - HDR_SIZE;
	if (inside)
		rt_fail(err, "%s: %soffset %" PRIu64 ": content_size %" PRIu64 " bytes runs past the end of the file, and a packet starts inside it, at %soffset %" PRIu64,
			s->src.path, off_kind(s), off, csize, off_kind(s),
			off + (uint64_t)(inside - buf));
	else if (whole_before(s, buf, off, len))
		rt_fail(err, "%s: %soffset %" PRIu64 ": content_size %" PRIu64 " bytes runs past the end of the file, where the packet's %u events end, whole, at %" PRIu64 " bytes",
			s->src.path, off_kind(s), off, csize,
			(unsigned int)FIELD(buf, events), len);
	else
		return 0;
	return 1;
}

/* @n bytes from stream offset @off are damage (@why), up to @to. */
static void skipped(struct rt_stream *s, const char *why, uint64_t n,
		    uint64_t off, const char *to, uint64_t pad)
{
	rt_msgs_add(&s->damage, "%s; skipped %" PRIu64 " bytes at %soffset %" PRIu64 " to %s",
		    why, n, off_kind(s), off, to);
	s->stats.skipped_bytes += n;
	if (n > pad)
		s->drops++;
}

/*
 * Damage at stream offset @off (@why says what), reading having got to
 * the source's offset now: skip from @off to the next packet signature
 * -- its magic and the trace's uuid -- and hand the bytes from there back
 * to the source.  At the end of the file everything left is skipped (a
 * zero-filled tail).  The damage description counts the bytes skipped
 * from @off, read already or not.  More than @pad of them (what the
 * packet before claimed as its own, by its packet_size) is a place where
 * data was dropped: the next packet's RT_ITEM_LOST counts it.  The search
 * reads a little first, more as it goes: it costs what it passes over.
 */
static int resync(struct rt_stream *s, uint64_t off, uint64_t pad,
		  const char *why, struct rt_error *err)
{
	enum { FIRST = 256, MOST = 65536 };
	uint8_t sig[RT_SIG_MAX], *buf, *hit;
	size_t siglen = signature(s, sig), carry = 0, chunk = FIRST, n;
	uint64_t skip = s->src.out_off - off;
	ssize_t got;
	int ret = 0;

	buf = malloc(MOST + sizeof(sig));
	if (!buf)
		return rt_fail(err, "%s: out of memory", s->src.path);
	for (;;) {
		got = read_on(s, buf + carry, chunk, err);
		if (got < 0) {
			ret = -1;
			break;
		}
		n = carry + (size_t)got;
		s->scanned += n;
		hit = memmem(buf, n, sig, siglen);
		if (hit) {
			skip += (uint64_t)(hit - buf);
			if (rt_src_giveback(&s->src, hit, n - (size_t)(hit - buf)))
				ret = rt_fail(err, "%s: %s", s->src.path, strerror(errno));
			skipped(s, why, skip, off, "the next packet", pad);
			break;
		}
		if (!got) {
			skipped(s, why, skip + n, off, "the end of the file", pad);
			break;
		}
		carry = n < siglen - 1 ? n : siglen - 1;
		skip += n - carry;
		memmove(buf, buf + n - carry, carry);
		chunk = chunk < MOST ? 2 * chunk : MOST;
	}
	free(buf);
	return ret;
}

/* A packet that does not hold together says its packet_size is wrong too. */
static void size_also(const uint8_t *h, struct rt_error *err)
{
	size_t l = strlen(err->msg);

	if (FIELD(h, packet_size) != FIELD(h, content_size))
		snprintf(err->msg + l, sizeof(err->msg) - l,
			 " (and its packet_size %" PRIu64 " bits differs from content_size)",
			 (uint64_t)FIELD(h, packet_size));
}

/*
 * The packet at @at of the hand (@p->buf, *@n bytes; stream offset @off
 * there) judged on its own as read_packet() judges one, in place: 0 when
 * it does not hold together (@err says why), 1 when it may (read_packet()
 * is to read and judge it), -1 on a hard error.  What it claims is read on
 * into the hand first, as far as the file has it.
 */
static int judge_in_hand(struct rt_stream *s, struct pkt *p, size_t *n,
			 size_t at, uint64_t off, struct rt_error *err)
{
	struct head h = { 0 };
	uint64_t csize;
	ssize_t got;

	if (*n - at < HDR_SIZE) {
		got = read_grow(s, p, *n, at + HDR_SIZE, err);
		if (got < 0)
			return -1;
		*n = (size_t)got;
		if (*n - at < HDR_SIZE)
			return 1;	/* a partial header: a note, or the end */
	}
	if (check_header(s, p->buf + at, off, err))
		return 0;
	csize = FIELD(p->buf + at, content_size) / 8;
	if (*n - at < csize) {
		got = read_grow(s, p, *n, at + csize, err);
		if (got < 0)
			return -1;
		*n = (size_t)got;
	}
	if (*n - at < csize)
		return !cut_is_damage(s, p->buf + at, *n - at, off, err);
	parse_header(p->buf + at, &h.info);
	h.info.file = s->src.path;
	h.info.offset = off;
	h.info.raw = p->buf + at;
	if (check_alone(s, &h.info, err) || check_events(s, &h, NULL, err)) {
		size_also(p->buf + at, err);
		return s->hard ? -1 : 0;
	}
	return 1;
}

/*
 * Damage at stream offset @off: the packet whose first @n bytes are in
 * @p->buf does not hold together (@err says why).  Reading resynchronises
 * from its next byte on, in hand first: a packet signature among the
 * bytes read whose packet -- read on into the hand as far as it claims --
 * does not hold together either is damage too, said and passed over
 * without reading anything again; reading takes up at the first one that
 * may (handed back to the source, for read_packet() to judge), or past
 * the hand (resync()).  So each byte is read once, however many
 * signatures the damage holds.
 */
static int skip_packet(struct rt_stream *s, struct pkt *p, size_t n,
		       uint64_t off, struct rt_error *err)
{
	uint8_t sig[RT_SIG_MAX];
	size_t siglen = signature(s, sig), at = 0, keep;
	char why[RT_ERR_MAX];
	const uint8_t *hit;
	int r;

	snprintf(why, sizeof(why), "%s", err->msg);
	while (n - at > 1 &&
	       (hit = memmem(p->buf + at + 1, n - at - 1, sig, siglen))) {
		size_t next = (size_t)(hit - p->buf);

		s->scanned += next - at;
		skipped(s, why, next - at, off + at, "the next packet", 0);
		/* What lies behind is done with: the hand holds what is ahead. */
		if (next >= n / 2) {
			memmove(p->buf, p->buf + next, n - next);
			n -= next;
			off += next;
			next = 0;
		}
		at = next;
		r = judge_in_hand(s, p, &n, at, off + at, err);
		if (r < 0)
			return -1;
		if (r) {
			if (rt_src_giveback(&s->src, p->buf + at, n - at))
				return rt_fail(err, "%s: %s", s->src.path, strerror(errno));
			return 0;
		}
		snprintf(why, sizeof(why), "%s", err->msg);
	}
	s->scanned += n - at;
	/* A signature may straddle the hand's end: its start goes back. */
	keep = n - at - 1 < siglen - 1 ? n - at - 1 : siglen - 1;
	if (rt_src_giveback(&s->src, p->buf + n - keep, keep))
		return rt_fail(err, "%s: %s", s->src.path, strerror(errno));
	return resync(s, off + at, 0, why, err);
}

/*
 * The next packet that holds together on its own -- its header, every
 * event, what check_alone() looks at -- read whole into @p: 1, or 0 at the
 * end of the stream (of what was fed so far), -1 on error.  Whatever does
 * not hold together on the way is damage: described, read past to the
 * next packet signature (skip_packet()), and counted in @p->damaged.  A
 * packet is its content_size bytes: a packet_size that claims more (or
 * less) never swallows what follows.  A file that ends inside the
 * content_size a header claims was cut there (a killed writer: a note),
 * unless another packet starts inside it, or the packet's events end,
 * whole, before the file does (whole_before()): then the header is
 * damaged, and reading takes up at the next packet signature.
 */
static int read_packet(struct rt_stream *s, struct pkt *p, struct rt_error *err)
{
	struct rt_source *src = &s->src;

	for (;;) {
		uint64_t off, csize, psize, total;
		bool size_bad;
		ssize_t got;
		int r;

		if (!src->path) {
			r = open_next(s, err);
			if (r <= 0)
				return r;
		}
		if (pkt_room(s, p, HDR_SIZE, HDR_SIZE, err))
			return -1;
		off = src->out_off;
		got = read_on(s, p->buf, HDR_SIZE, err);
		if (got < 0)
			return -1;
		if (got == 0) {
			rt_src_close(src);
			continue;
		}
		if ((size_t)got < HDR_SIZE) {
			rt_msgs_add(&s->notes, "%s: trailing partial packet at %soffset %" PRIu64 " (%zd header bytes) dropped",
				    src->path, off_kind(s), off, got);
			rt_src_close(src);
			continue;
		}
		if (check_header(s, p->buf, off, err)) {
			if (!s->tolerant || skip_packet(s, p, HDR_SIZE, off, err))
				return -1;
			continue;
		}
		size_bad = check_packet_size(s, p->buf, off, err) < 0;
		if (size_bad && !s->tolerant)
			return -1;
		csize = FIELD(p->buf, content_size) / 8;
		got = read_grow(s, p, HDR_SIZE, csize, err);
		if (got < 0)
			return -1;
		if ((uint64_t)got < csize) {
			if (!cut_is_damage(s, p->buf, (uint64_t)got, off, err)) {
				rt_msgs_add(&s->notes, "%s: trailing partial packet at %soffset %" PRIu64 " (%zd of %" PRIu64 " bytes) dropped",
					    src->path, off_kind(s), off, got, csize);
				rt_src_close(src);
				continue;
			}
			if (!s->tolerant || skip_packet(s, p, (size_t)got, off, err))
				return -1;
			continue;
		}
		memset(&p->h.info, 0, sizeof(p->h.info));
		parse_header(p->buf, &p->h.info);
		p->h.info.file = src->path;
		p->h.info.offset = off;
		p->h.info.raw = p->buf;
		if (check_alone(s, &p->h.info, err) || check_events(s, &p->h, p, err)) {
			if (!s->tolerant || s->hard)
				return -1;
			size_also(p->buf, err);
			if (skip_packet(s, p, csize, off, err))
				return -1;
			continue;
		}
		if (size_bad) {
			char why[RT_ERR_MAX + 32];

			/*
			 * The content holds together: keep it, as the packet
			 * ringtrace.ko wrote, and look for the next packet
			 * right after it, not where packet_size says.
			 */
			psize = FIELD(p->buf, packet_size) / 8;
			check_packet_size(s, p->buf, off, err);
			snprintf(why, sizeof(why), "%s: read to its content_size",
				 err->msg);
			rt_put_le(p->buf + offsetof(struct ringtrace_packet_header, packet_size),
				  csize * 8, 8);
			p->h.info.packet_bytes = csize;
			if (resync(s, off + csize, psize > csize ? psize - csize : 0,
				   why, err))
				return -1;
		}
		total = s->drops + src->frames_skipped;
		p->damaged = total - s->drops_seen;
		s->drops_seen = total;
		return 1;
	}
}

/* A slot neither handed out nor read ahead. */
static struct pkt *free_slot(struct rt_stream *s)
{
	for (unsigned int i = 0; i < NR_SLOTS; i++) {
		struct pkt *p = &s->slot[i];
		bool used = p == s->cur;

		for (unsigned int k = 0; k < s->nr_ahead; k++)
			used |= p == s->ahead[k];
		if (!used)
			return p;
	}
	return NULL;
}

/*
 * Packets read ahead until @n are: 1, or 0 when the stream has fewer.  An
 * error reading one (I/O, a hard one, damage when not tolerant) while
 * packets are read ahead already waits for them: they are good, and
 * handed out first, the last of them judged as a stream's last; the
 * error is returned once none is left ahead.
 */
static int fill(struct rt_stream *s, unsigned int n, struct rt_error *err)
{
	while (s->nr_ahead < n) {
		struct pkt *p;
		int r;

		if (s->failed) {
			if (s->nr_ahead)
				return 0;
			s->failed = false;
			if (err)
				*err = s->fail;
			return -1;
		}
		p = free_slot(s);
		r = read_packet(s, p, err);
		if (r < 0 && s->nr_ahead) {
			s->failed = true;
			if (err)
				s->fail = *err;
			return 0;
		}
		if (r <= 0)
			return r;
		s->ahead[s->nr_ahead++] = p;
	}
	return 1;
}

/* Which of two packets that do not follow each other is damaged. */
enum blame { BLAME_N, BLAME_P, BLAME_NONE };

/*
 * Packets @p and @n (the next one) do not follow each other, though @p
 * follows @r (the packet before, or NULL): one of the two headers is
 * damaged.  @n2 is the packet after @n (NULL: none, or not yet fed).
 * The damaged one is the one without which the others follow each other;
 * when either would do, the one the sequence numbers leave room for
 * (packets in a stream have growing numbers), then the one the events'
 * times point at: @n's timestamp_begin before @p's last event is wrong,
 * @p's timestamp_end after @n's first event is (ends_late() aside).
 * When nothing tells, and the events of both are in order (they do not
 * depend on the counters or timestamp_end, and ringtrace.ko's
 * timestamp_begin is its packet's first event's time), neither is
 * blamed: BLAME_NONE -- so too with no packet before @p (a stream's or a
 * window's first) and a counter that goes down at @n: @p's may be too
 * high as well as @n's too low.  BLAME_N also when neither fits (more
 * than one is damaged: @n is judged next, against @p).
 */
static enum blame verdict(const struct rt_stream *s, const struct head *r,
			  const struct head *p, const struct head *n,
			  const struct head *n2)
{
	bool drop_p, drop_n, room_p, room_n;

	drop_p = (!r || follows(s, r, n, NULL, 0)) &&
		 (!n2 || follows(s, n, n2, NULL, 0));
	drop_n = !n2 || follows(s, p, n2, NULL, 0);
	if (drop_p != drop_n)
		return drop_p ? BLAME_P : BLAME_N;
	if (!drop_p)
		return BLAME_N;
	room_p = r ? n->info.seq - r->info.seq >= 2 : n->info.seq >= 1;
	room_n = !n2 || n2->info.seq - p->info.seq >= 2;
	if (room_p != room_n)
		return room_p ? BLAME_P : BLAME_N;
	if (n->info.cpu != p->info.cpu)
		return BLAME_P;
	if (n->info.timestamp_begin < p->last_ts)
		return BLAME_N;
	if (n->info.timestamp_begin < p->info.timestamp_end &&
	    n->first_ts < p->info.timestamp_end && !ends_late(s, p, n))
		return BLAME_P;
	return BLAME_NONE;
}

/* verdict() on the packets ahead, the one after them read when it matters. */
static int blame(struct rt_stream *s, struct rt_error *err)
{
	const struct head *r = s->have_ref ? &s->ref : NULL;
	int got;

	if (r && !follows(s, r, &s->ahead[1]->h, NULL, 0))
		return BLAME_N;
	got = fill(s, 3, err);
	if (got < 0)
		return -1;
	return (int)verdict(s, r, &s->ahead[0]->h, &s->ahead[1]->h,
			    got ? &s->ahead[2]->h : NULL);
}

/*
 * The packet ahead, which holds together on its own, is damage (@why names
 * it and says why): skipped whole.  What was read past before it counts
 * for the packet after it, and so does this one.
 */
static int reject(struct rt_stream *s, const char *why, struct rt_error *err)
{
	struct pkt *p = s->ahead[0];

	if (!s->tolerant)
		return rt_fail(err, "%s", why);
	rt_msgs_add(&s->damage, "%s; skipped the packet, %" PRIu64 " bytes at %soffset %" PRIu64,
		    why, p->h.info.content_bytes, off_kind(s), p->h.info.offset);
	s->stats.skipped_bytes += p->h.info.content_bytes;
	memmove(s->ahead, s->ahead + 1, --s->nr_ahead * sizeof(*s->ahead));
	if (s->nr_ahead) {
		s->ahead[0]->damaged += p->damaged + 1;
	} else {
		/* Counted again, with it, in the next packet read. */
		s->drops_seen -= p->damaged;
		s->drops++;
	}
	return 0;
}

/*
 * The last packet handed out (@ref) was not judged by a packet after it:
 * a fed stream ran dry, or dispute().  The next one (ahead) judges it now:
 * if that one does not follow it but follows the packet before it, and
 * its events come after @ref's, one of the two headers is damaged --
 * @ref's too high, or this one's too low -- and neither can be told.
 * Said now (@ref's events were handed out), and the packet ahead is
 * judged against @ref's fields where its own bound them: both packets'
 * events are read, neither's loss figures believed.
 */
static int judge_late(struct rt_stream *s, struct rt_error *err)
{
	const struct head *q = s->have_ref_prev ? &s->ref_prev : NULL;
	const struct head *h = &s->ahead[0]->h;
	const struct rt_packet_info *p = &h->info;
	struct rt_packet_info *r = &s->ref.info;
	char why[RT_ERR_MAX];

	s->provisional = false;
	if (follows(s, &s->ref, h, why, sizeof(why)) || !p->seq ||
	    (q && !follows(s, q, h, NULL, 0)) ||
	    p->timestamp_begin < s->ref.last_ts || h->first_ts < s->ref.last_ts)
		return 0;
	rt_fail(err, "%s: %soffset %" PRIu64 ": this packet does not follow the one before it (%soffset %" PRIu64 ", handed out before it could be judged: %s), but follows the one before that: one of the two headers is damaged; both are read, their loss figures are not believed",
		p->file, off_kind(s), p->offset, off_kind(s), r->offset, why);
	if (!s->tolerant)
		return -1;
	rt_msgs_add(&s->damage, "%s", err->msg);
	r->seq = r->seq < p->seq - 1 ? r->seq : p->seq - 1;
	if (r->events_discarded > p->events_discarded)
		r->events_discarded = p->events_discarded;
	if (r->timestamp_end > p->timestamp_begin)
		r->timestamp_end = p->timestamp_begin;
	r->cpu = p->cpu;
	return 0;
}

/*
 * The packet ahead does not follow the last one handed out (@why says
 * so), and neither does the one after it, but those two follow each
 * other, and their events come after the last one's: the reference is
 * what is wrong -- a damaged header that got past its neighbours, or a
 * stream that starts over (not packets written again).  Reading takes up
 * at the packet ahead, as if right after the packet before it: its loss
 * figures say nothing, and its RT_ITEM_LOST counts the place as damaged.
 */
static int take_up(struct rt_stream *s, const char *why, struct rt_error *err)
{
	struct pkt *p = s->ahead[0];
	struct rt_packet_info *r = &s->ref.info;

	if (!s->tolerant)
		return rt_fail(err, "%s", why);
	rt_msgs_add(&s->damage, "%s, but the packets from here on follow each other: reading takes up here",
		    why);
	p->damaged++;
	s->have_ref = p->h.info.seq > 0;
	r->seq = p->h.info.seq - 1;
	r->events_discarded = p->h.info.events_discarded;
	r->timestamp_end = p->h.info.timestamp_begin;
	r->cpu = p->h.info.cpu;
	return 0;
}

/*
 * The packet ahead is good: handed out from now on, its counters as @as
 * says -- its own, or as dispute() and next_packet() bound them where a
 * neighbour disputes them -- and what it counts since the packet handed
 * out before (never below: a loss is never negative); or, with @believed
 * false, its loss figures are not reported at all.
 */
static void accept(struct rt_stream *s, const struct head *as, bool believed)
{
	struct pkt *p = s->ahead[0];
	const struct rt_packet_info *pi = &as->info;
	const struct rt_packet_info *r = s->have_ref ? &s->ref.info : NULL;
	uint64_t discarded = pi->events_discarded;

	s->lost_first = !r;
	s->lost_since = r ? r->timestamp_end : 0;
	s->lost_packets = !r ? pi->seq : pi->seq > r->seq ? pi->seq - r->seq - 1 : 0;
	s->lost_events = !r ? pi->events_discarded :
			 pi->events_discarded > r->events_discarded ?
			 pi->events_discarded - r->events_discarded : 0;
	if (!believed)
		s->lost_packets = s->lost_events = 0;
	s->damaged = p->damaged;
	s->ref_prev = s->ref;
	s->have_ref_prev = s->have_ref;
	s->ref = *as;
	s->ref.info.raw = NULL;
	s->ref.info.file = NULL;
	s->have_ref = true;
	s->provisional = s->nr_ahead == 1 || !believed;
	pi = &p->h.info;
	memmove(s->ahead, s->ahead + 1, --s->nr_ahead * sizeof(*s->ahead));
	s->cur = p;
	s->pos = HDR_SIZE;
	s->clock = pi->timestamp_begin;
	/* With a window, only what it holds counts (rt_stream_set_window()). */
	if (!s->windowed || pi->timestamp_end >= s->win_begin) {
		s->stats.packets++;
		s->stats.bytes += pi->content_bytes;
		s->stats.discarded = discarded;
	}
	if (!s->windowed || pi->timestamp_begin >= s->win_begin)
		s->stats.lost_packets += s->lost_packets;
}

/*
 * The packet ahead and the next one do not follow each other (@why), and
 * nothing tells which header is damaged (verdict()): both are handed out
 * -- their events are in order -- and neither's loss figures are
 * believed where they disagree: the first's are bounded by the second's
 * (and, bounded down to the last packet handed out's, not reported), the
 * second's not reported (next_packet()).  The second is then judged like
 * a packet a fed stream handed out last (judge_late()): the next one may
 * still show its header damaged.
 */
static int dispute(struct rt_stream *s, const char *why, struct rt_error *err)
{
	const struct rt_packet_info *p = &s->ahead[0]->h.info;
	const struct rt_packet_info *n = &s->ahead[1]->h.info;
	const struct rt_packet_info *r = s->have_ref ? &s->ref.info : NULL;
	struct head as = s->ahead[0]->h;
	bool believed = true;

	rt_fail(err, "%s: %soffset %" PRIu64 ": this packet and the next (%s%s%soffset %" PRIu64 ") do not follow each other (%s), and the packets around them do not tell which header is damaged: both are read, their loss figures are not believed",
		p->file, off_kind(s), p->offset, n->file == p->file ? "" : n->file,
		n->file == p->file ? "" : ", ", off_kind(s), n->offset, why);
	if (!s->tolerant)
		return -1;
	rt_msgs_add(&s->damage, "%s", err->msg);
	if (as.info.seq >= n->seq)
		as.info.seq = n->seq ? n->seq - 1 : 0;
	if (as.info.events_discarded > n->events_discarded)
		as.info.events_discarded = n->events_discarded;
	if (as.info.timestamp_end > n->timestamp_begin)
		as.info.timestamp_end = n->timestamp_begin;
	if (r && (as.info.seq <= r->seq ||
		  as.info.events_discarded < r->events_discarded)) {
		as.info.seq = as.info.seq > r->seq ? as.info.seq : r->seq;
		if (as.info.events_discarded < r->events_discarded)
			as.info.events_discarded = r->events_discarded;
		believed = false;
	}
	s->disputed_seq = p->seq;
	s->disputed_discarded = p->events_discarded;
	accept(s, &as, believed);
	s->disputed = true;
	return 0;
}

/*
 * The next packet to hand out, judged (s->cur): 1, or 0 at the end (of
 * what was fed, or of the window), -1 on error.
 *
 * A packet that holds together on its own still has a header that can be
 * damaged in a way only its neighbours show: a packet_seq_num,
 * events_discarded or timestamp_end too high makes the packet after it
 * look out of order.  Taken as the reference for the next one, it would
 * cost every packet after it.  So a packet is handed out only once judged
 * against the last one handed out (it must follow it, else it is damage)
 * and against the next one read (follows()): if that one does not follow
 * it, verdict() says which of the two headers is the damaged one.  A
 * damaged one is skipped whole and its loss figures are not believed: the
 * next packet's count from the last one handed out.  Where nothing tells,
 * dispute() hands both out.  The last packet of a stream (or of what was
 * fed so far: judge_late()) has no next one to be judged by; most_lost()
 * bounds what its figures can say.
 *
 * A window ends at the first packet after it that follows the last one
 * handed out: one that does not is damage (its timestamp_begin cannot be
 * trusted to end anything), and reading goes on past it.
 */
static int next_packet(struct rt_stream *s, struct rt_error *err)
{
	char why[RT_ERR_MAX / 2], msg[RT_ERR_MAX];
	int r;

	s->cur = NULL;
	for (;;) {
		const struct head *ph, *nh;
		const struct rt_packet_info *p, *n;

		r = fill(s, 1, err);
		if (r <= 0)
			return r;
		ph = &s->ahead[0]->h;
		p = &ph->info;
		if (s->disputed) {
			struct head as = *ph;

			s->disputed = false;
			if (s->windowed && p->timestamp_begin > s->win_end)
				return 0;
			/*
			 * The second of a dispute: its figures are not
			 * reported, and what follows counts from no lower
			 * than the first's own (no higher than the packet
			 * after the two, if there was one: verdict()), so
			 * that a counter of its own damaged low does not
			 * inflate the next loss.
			 */
			if (as.info.seq < s->disputed_seq)
				as.info.seq = s->disputed_seq;
			if (as.info.events_discarded < s->disputed_discarded)
				as.info.events_discarded = s->disputed_discarded;
			accept(s, &as, false);
			return 1;
		}
		if (s->provisional && judge_late(s, err))
			return -1;
		if (s->have_ref && !follows(s, &s->ref, ph, why, sizeof(why))) {
			r = fill(s, 2, err);
			if (r < 0)
				return -1;
			nh = r ? &s->ahead[1]->h : NULL;
			snprintf(msg, sizeof(msg), "%s: %soffset %" PRIu64 ": %s",
				 p->file, off_kind(s), p->offset, why);
			if (!nh || follows(s, &s->ref, nh, NULL, 0) ||
			    !follows(s, ph, nh, NULL, 0) ||
			    ph->first_ts < s->ref.last_ts) {
				if (reject(s, msg, err))
					return -1;
				continue;
			}
			if (take_up(s, msg, err))
				return -1;
		}
		if (s->windowed && p->timestamp_begin > s->win_end)
			return 0;
		r = fill(s, 2, err);
		if (r < 0)
			return -1;
		nh = r ? &s->ahead[1]->h : NULL;
		n = nh ? &nh->info : NULL;
		if (nh && !follows(s, ph, nh, why, sizeof(why))) {
			r = blame(s, err);
			if (r < 0)
				return -1;
			if (r == BLAME_P) {
				snprintf(msg, sizeof(msg), "%s: %soffset %" PRIu64 ": damaged header: the next packet (%s%s%soffset %" PRIu64 ") does not follow it (%s), the packets around it follow each other",
					 p->file, off_kind(s), p->offset,
					 n->file == p->file ? "" : n->file,
					 n->file == p->file ? "" : ", ", off_kind(s),
					 n->offset, why);
				if (reject(s, msg, err))
					return -1;
				continue;
			}
			if (r == BLAME_NONE)
				return dispute(s, why, err) ? -1 : 1;
		} else if (n && p->timestamp_end > n->timestamp_begin) {
			/*
			 * It ends late (ends_late()): where the next begins,
			 * its header too (what unpack writes reads in order).
			 */
			rt_put_le(s->ahead[0]->buf +
				  offsetof(struct ringtrace_packet_header, timestamp_end),
				  n->timestamp_begin, 8);
			s->ahead[0]->h.info.timestamp_end = n->timestamp_begin;
		}
		accept(s, ph, true);
		return 1;
	}
}

/* Its reader wants the events of @id handed out (rt_stream_set_wanted()). */
static inline bool wants(const struct rt_stream *s, uint32_t id)
{
	const struct rt_event_desc *ev;

	if (!s->want)
		return true;
	/* One a grown metadata does not declare: decoding it says so. */
	ev = rt_md_event(s->md, id);
	return !ev || s->want[ev - s->md->events];
}

/* An event read at @ts, wanted or not: in the stats if the window holds it. */
static inline void count_event(struct rt_stream *s, uint64_t ts)
{
	if (s->windowed && (ts < s->win_begin || ts > s->win_end))
		return;
	if (!s->stats.events)
		s->stats.first_ts = ts;
	s->stats.last_ts = ts;
	s->stats.events++;
}

/* Events @a..@b - 1 of the packet handed out are passed over: counted. */
static void pass_events(struct rt_stream *s, uint32_t a, uint32_t b)
{
	const struct ev_at *evs = s->cur->evs;

	if (a >= b)
		return;
	if (s->windowed) {
		for (uint32_t i = a; i < b; i++)
			count_event(s, evs[i].ts);
		return;
	}
	if (!s->stats.events)
		s->stats.first_ts = evs[a].ts;
	s->stats.last_ts = evs[b - 1].ts;
	s->stats.events += b - a;
}

/*
 * The next event of the packet handed out that its reader wants, into
 * *@item: 1, or 0 when the packet has no more, -1 on error.  It starts
 * where check_events() found it (a packet of more than KEEP_MAX events:
 * decoded from its header), and the events passed over are counted,
 * their payloads never read: with a filter, check_events() listed the
 * events wanted (keep->wanted), unless the filter changed since.  Checked
 * by check_events(): this fails only if the metadata grew into one that
 * lies about an event the check read with the old one.
 */
static int next_event(struct rt_stream *s, const struct rt_packet_info *pi,
		      struct rt_item *item, struct rt_error *err)
{
	const struct pkt *p = s->cur;
	const struct ev_at *e;
	uint32_t i;
	uint64_t at;

	while (s->reference || !p->kept) {
		if (s->pos >= pi->content_bytes)
			return 0;
		if (decode_event(s, pi, &s->pos, &s->clock, item, err))
			return -1;
		count_event(s, item->timestamp);
		if (wants(s, item->event->id))
			return 1;
	}
	if (s->want && p->want_gen == s->want_gen) {
		if (s->next_wanted >= p->nr_wanted) {
			pass_events(s, s->next_ev, pi->events);
			s->next_ev = pi->events;
			return 0;
		}
		i = p->wanted[s->next_wanted++];
		pass_events(s, s->next_ev, i);
	} else {
		for (i = s->next_ev; i < pi->events && !wants(s, p->evs[i].id); i++)
			count_event(s, p->evs[i].ts);
		if (i == pi->events) {
			s->next_ev = i;
			return 0;
		}
	}
	s->next_ev = i + 1;
	e = &p->evs[i];
	at = e->off + ((le32(pi->raw + e->off) & ((1u << RINGTRACE_EVENT_ID_BITS) - 1)) ==
		       RINGTRACE_EVENT_ID_EXTENDED ?
		       RINGTRACE_EXTENDED_HEADER_SIZE : RINGTRACE_COMPACT_HEADER_SIZE);
	if (decode_payload(s, pi, e->off, e->id, e->ts, &at, item, err))
		return -1;
	count_event(s, item->timestamp);
	return 1;
}

int rt_stream_next(struct rt_stream *s, struct rt_item *item,
		   struct rt_error *err)
{
	const struct rt_packet_info *pi;
	int r;

	/*
	 * Every field of *@item is set: zeroed for packets, losses and the
	 * end, and an event's each by decode_payload() (the stores of an
	 * item a reader wants, which a memset() before each would double).
	 */
	for (;;) {
		pi = s->cur ? &s->cur->h.info : NULL;
		switch (s->state) {
		case AT_END:
			memset(item, 0, sizeof(*item));
			return 0;
		case NEED_PACKET:
			r = s->md_next ? take_metadata(s, err) : 0;
			if (!r)
				r = next_packet(s, err);
			if (r <= 0) {
				s->state = AT_END;
				memset(item, 0, sizeof(*item));
				return r;
			}
			s->state = GIVE_PACKET;
			continue;
		case GIVE_PACKET:
			s->next_ev = s->next_wanted = 0;
			memset(item, 0, sizeof(*item));
			item->type = RT_ITEM_PACKET;
			item->timestamp = pi->timestamp_begin;
			item->cpu = pi->cpu;
			item->packet = pi;
			s->state = GIVE_LOST;
			return 1;
		case GIVE_LOST:
			s->state = GIVE_EVENTS;
			if (!s->lost_events && !s->lost_packets && !s->damaged)
				continue;
			memset(item, 0, sizeof(*item));
			item->type = RT_ITEM_LOST;
			item->timestamp = pi->timestamp_begin;
			item->cpu = pi->cpu;
			item->packet = pi;
			item->lost_events = s->lost_events;
			item->lost_packets = s->lost_packets;
			item->damaged_packets = s->damaged;
			item->lost_first = s->lost_first;
			item->lost_since = s->lost_since;
			return 1;
		case GIVE_EVENTS:
			r = next_event(s, pi, item, err);
			if (r > 0)
				return 1;
			s->state = r ? AT_END : NEED_PACKET;
			if (r) {
				memset(item, 0, sizeof(*item));
				return -1;
			}
			continue;
		}
	}
}

int rt_stream_open(struct rt_stream **out, const struct rt_metadata *md,
		   const char *const *paths, unsigned int nr_paths, int cpu,
		   struct rt_error *err)
{
	struct rt_stream *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return rt_fail(err, "out of memory");
	s->md = md;
	s->cpu = cpu;
	s->src = RT_SOURCE_INIT(&s->damage, &s->notes);
	s->src.siglen = signature(s, s->src.sig);
	s->values = calloc(md->max_fields ? md->max_fields : 1, sizeof(*s->values));
	s->paths = calloc(nr_paths ? nr_paths : 1, sizeof(*s->paths));
	if (!s->values || !s->paths || ids_for(md, NULL, &s->ids, &s->nr_ids))
		goto oom;
	for (unsigned int i = 0; i < nr_paths; i++) {
		s->paths[i] = strdup(paths[i]);
		if (!s->paths[i])
			goto oom;
		s->nr_paths++;
	}
	*out = s;
	return 0;
oom:
	rt_stream_close(s);
	return rt_fail(err, "out of memory");
}

void rt_stream_close(struct rt_stream *s)
{
	if (!s)
		return;
	rt_src_close(&s->src);
	for (unsigned int i = 0; i < s->nr_paths; i++)
		free(s->paths[i]);
	free(s->paths);
	rt_msgs_free(&s->notes);
	rt_msgs_free(&s->damage);
	rt_msgs_free(&s->index_notes);
	for (unsigned int i = 0; i < s->nr_promises; i++)
		free(s->promises[i].path);
	free(s->promises);
	free(s->plan);
	free(s->facts);
	free(s->fed_file);
	free(s->values);
	free(s->want);
	free(s->ids);
	for (unsigned int i = 0; i < NR_SLOTS; i++) {
		free(s->slot[i].buf);
		free(s->slot[i].evs);
		free(s->slot[i].wanted);
	}
	free(s);
}

const struct rt_stream_stats *rt_stream_stats(const struct rt_stream *s)
{
	return &s->stats;
}

void rt_stream_reads(const struct rt_stream *s, uint64_t *frames, uint64_t *bytes)
{
	*frames = s->src.frames;
	*bytes = s->src.moved;
}

uint64_t rt_stream_work(const struct rt_stream *s)
{
	return s->src.moved + s->scanned;
}

static const char *msgs_at(const struct rt_msgs *m, unsigned int i)
{
	return i < m->nr && i < RT_MSGS_KEPT ? m->kept[i] : NULL;
}

unsigned int rt_stream_nr_notes(const struct rt_stream *s)
{
	return s->notes.nr;
}

const char *rt_stream_note(const struct rt_stream *s, unsigned int i)
{
	return msgs_at(&s->notes, i);
}

void rt_stream_set_tolerant(struct rt_stream *s, bool on)
{
	s->tolerant = on;
	s->src.tolerant = on;
}

unsigned int rt_stream_nr_damage(const struct rt_stream *s)
{
	return s->damage.nr;
}

const char *rt_stream_damage(const struct rt_stream *s, unsigned int i)
{
	return msgs_at(&s->damage, i);
}

int rt_stream_cpu(const struct rt_stream *s)
{
	return s->cpu;
}

int rt_stream_open_fed(struct rt_stream **out, const struct rt_metadata *md,
		       int cpu, struct rt_error *err)
{
	return rt_stream_open(out, md, NULL, 0, cpu, err);
}

static int feed(struct rt_stream *s, const char *file, uint64_t offset,
		const uint8_t *bytes, size_t n, bool lent, struct rt_error *err)
{
	struct rt_source *src = &s->src;

	if (s->nr_paths || src->path)
		return rt_fail(err, "%s: fed while not dry", file);
	if (!s->fed_file || strcmp(s->fed_file, file)) {
		char *f = strdup(file);

		if (!f)
			return rt_fail(err, "%s: out of memory", file);
		free(s->fed_file);
		s->fed_file = f;
	}
	/* A source with no file: its bytes are those handed back to it. */
	src->path = s->fed_file;
	if (lent && n) {
		/* Dry: nothing left of the last feed (rt_src_close()). */
		if (!src->pb_lent)
			free(src->pb);
		src->pb = (uint8_t *)bytes;
		src->pb_len = n;
		src->pb_pos = 0;
		src->pb_cap = 0;
		src->pb_lent = true;
	} else if (rt_src_unread(src, bytes, n)) {
		rt_src_close(src);
		return rt_fail(err, "%s: out of memory", file);
	}
	src->out_off = offset;
	if (s->state == AT_END)
		s->state = NEED_PACKET;
	return 0;
}

int rt_stream_feed(struct rt_stream *s, const char *file, uint64_t offset,
		   const uint8_t *bytes, size_t n, struct rt_error *err)
{
	return feed(s, file, offset, bytes, n, false, err);
}

int rt_stream_feed_lent(struct rt_stream *s, const char *file, uint64_t offset,
			const uint8_t *bytes, size_t n, struct rt_error *err)
{
	return feed(s, file, offset, bytes, n, true, err);
}

void rt_stream_set_window(struct rt_stream *s, uint64_t begin, uint64_t end,
			  bool seek)
{
	s->windowed = true;
	s->seek = seek;
	s->planned = !seek;
	s->win_begin = begin;
	s->win_end = end;
}

void rt_stream_set_cold(struct rt_stream *s, unsigned int n)
{
	s->cold = n < s->nr_paths ? n : s->nr_paths;
}

int rt_stream_promise(struct rt_stream *s, const char *path, uint64_t size,
		      uint64_t xxh64)
{
	struct rt_promise *n = realloc(s->promises, (s->nr_promises + 1) * sizeof(*n));

	if (!n)
		return -1;
	s->promises = n;
	n[s->nr_promises].path = strdup(path);
	if (!n[s->nr_promises].path)
		return -1;
	n[s->nr_promises].size = size;
	n[s->nr_promises].xxh64 = xxh64;
	s->nr_promises++;
	s->src.promises = s->promises;
	s->src.nr_promises = s->nr_promises;
	return 0;
}

void rt_stream_add_damage(struct rt_stream *s, const char *what)
{
	rt_msgs_add(&s->damage, "%s", what);
}

int rt_threads_learn_window(struct rt_threads *th, struct rt_stream *s,
			    struct rt_error *err)
{
	int r = 0;

	if (!s->windowed || !s->seek || s->planned || !rt_threads_reads_any(th))
		return 0;
	s->want_facts = true;
	if (plan_window(s, err))
		return -1;
	if (rt_threads_add_facts(th, s->facts, s->nr_facts))
		r = rt_fail(err, "out of memory");
	free(s->facts);
	s->facts = NULL;
	s->nr_facts = 0;
	return r;
}

unsigned int rt_stream_nr_index_notes(const struct rt_stream *s)
{
	return s->index_notes.nr;
}

const char *rt_stream_index_note(const struct rt_stream *s, unsigned int i)
{
	return msgs_at(&s->index_notes, i);
}

void rt_stream_set_metadata(struct rt_stream *s, const struct rt_metadata *md)
{
	s->md_next = md;
}

int rt_stream_set_wanted(struct rt_stream *s,
			 bool (*want)(void *arg, const struct rt_event_desc *ev),
			 void *arg)
{
	struct id_shape *ids;
	uint32_t nr_ids;
	bool *w = NULL;

	if (want && !(w = wanted_events(s->md, want, arg)))
		return -1;
	if (ids_for(s->md, w, &ids, &nr_ids)) {
		free(w);
		return -1;
	}
	free(s->want);
	s->want = w;
	s->want_fn = want;
	s->want_arg = arg;
	s->want_gen++;
	free(s->ids);
	s->ids = ids;
	s->nr_ids = nr_ids;
	return 0;
}

void rt_stream_set_reference(struct rt_stream *s, bool on)
{
	s->reference = on;
}

/* ---- trace directories ------------------------------------------------------------ */

struct found {
	char *name;
	int cpu;
	int64_t part;			/* -1: no -K suffix */
	bool zst;
};

/* A decimal number up to @max; past it, *big is set and @max returned. */
static uint64_t name_number(const char **p, uint64_t max, bool *big)
{
	uint64_t v = 0;

	for (; isdigit((unsigned char)**p); (*p)++) {
		v = v * 10 + (uint64_t)(**p - '0');
		if (v > max) {
			*big = true;
			v = max;
		}
	}
	return v;
}

/*
 * cpuN, cpuN.zst, cpuN-K, cpuN-K.zst with decimal N and K: 1 with *f set,
 * 0 for any other name, -1 for a stream's name with a CPU N no kernel has
 * (or a K beyond 2^62).
 */
static int parse_stream_name(const char *name, struct found *f)
{
	const char *p = name + 3;
	bool big_cpu = false, big_part = false;

	if (strncmp(name, "cpu", 3) || !isdigit((unsigned char)*p))
		return 0;
	f->cpu = (int)name_number(&p, RT_MAX_CPUS - 1, &big_cpu);
	f->part = -1;
	if (*p == '-') {
		if (!isdigit((unsigned char)*++p))
			return 0;
		f->part = (int64_t)name_number(&p, INT64_MAX / 2, &big_part);
	}
	f->zst = !strcmp(p, ".zst");
	if (!f->zst && *p)
		return 0;
	return big_cpu || big_part ? -1 : 1;
}

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return strcmp(x->name, y->name);
}

void rt_trace_close(struct rt_trace *t)
{
	if (!t)
		return;
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		for (unsigned int j = 0; j < t->cpus[i].nr_paths; j++)
			free(t->cpus[i].paths[j]);
		free(t->cpus[i].paths);
		rt_stream_close(t->cpus[i].stream);
	}
	free(t->cpus);
	rt_metadata_free(t->md);
	free(t->dir);
	free(t);
}

int rt_trace_open(const char *dir, struct rt_trace **out, struct rt_error *err)
{
	struct found *found = NULL;
	size_t nr = 0, cap = 0;
	struct rt_trace *t;
	struct dirent *de;
	char *path = NULL;
	int ret = -1, list_err = 0;
	DIR *d;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t)
		t->dir = strdup(dir);
	if (!t || !t->dir) {
		free(t);
		return rt_fail(err, "out of memory");
	}
	if (asprintf(&path, "%s/metadata", dir) < 0) {
		rt_trace_close(t);
		return rt_fail(err, "out of memory");
	}
	if (rt_metadata_load(path, &t->md, err))
		goto out;

	d = opendir(dir);
	if (!d) {
		rt_fail(err, "%s: %s", dir, strerror(errno));
		goto out;
	}
	for (;;) {
		struct found f;
		int r;

		errno = 0;
		de = readdir(d);
		if (!de) {
			list_err = errno;
			break;
		}
		r = parse_stream_name(de->d_name, &f);
		if (r < 0) {
			rt_fail(err, "%s/%s: no kernel has that CPU or part number (at most %u CPUs): not a stream file",
				dir, de->d_name, RT_MAX_CPUS);
			closedir(d);
			goto out;
		}
		if (!r)
			continue;
		if (nr == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct found *n = realloc(found, ncap * sizeof(*n));

			if (!n)
				break;
			found = n;
			cap = ncap;
		}
		f.name = strdup(de->d_name);
		if (!f.name)
			break;
		found[nr++] = f;
	}
	closedir(d);
	if (de || list_err) {
		rt_fail(err, "%s: cannot list: %s", dir,
			de ? "out of memory" : strerror(list_err));
		goto out;
	}
	if (!nr) {
		rt_fail(err, "%s: no stream files (cpuN, cpuN.zst, cpuN-K.zst)", dir);
		goto out;
	}
	qsort(found, nr, sizeof(*found), found_cmp);

	for (size_t i = 0; i < nr; ) {
		struct rt_trace_cpu *c;
		size_t j = i;

		while (j < nr && found[j].cpu == found[i].cpu)
			j++;
		c = realloc(t->cpus, (t->nr_cpus + 1) * sizeof(*c));
		if (!c) {
			rt_fail(err, "out of memory");
			goto out;
		}
		t->cpus = c;
		c += t->nr_cpus++;
		memset(c, 0, sizeof(*c));
		c->cpu = found[i].cpu;
		c->compressed = found[i].zst;
		c->paths = calloc(j - i, sizeof(*c->paths));
		if (!c->paths) {
			rt_fail(err, "out of memory");
			goto out;
		}
		for (size_t k = i; k < j; k++) {
			if (found[k].zst != c->compressed ||
			    (k > i && found[k].part == found[k - 1].part)) {
				rt_fail(err, "%s: both %s and %s hold cpu %d data: keep one kind",
					dir, found[k - 1].name, found[k].name, c->cpu);
				goto out;
			}
			if (asprintf(&c->paths[c->nr_paths], "%s/%s", dir, found[k].name) < 0) {
				rt_fail(err, "out of memory");
				goto out;
			}
			c->nr_paths++;
		}
		if (rt_stream_open(&c->stream, t->md, (const char *const *)c->paths,
				   c->nr_paths, c->cpu, err))
			goto out;
		i = j;
	}
	*out = t;
	t = NULL;
	ret = 0;
out:
	for (size_t i = 0; i < nr; i++)
		free(found[i].name);
	free(found);
	free(path);
	rt_trace_close(t);
	return ret;
}

/* ---- values and printing -------------------------------------------------------------- */

/*
 * Readers ask for a field by a literal name, event after event: the index
 * last found for an (event, name) pair is tried first, checked by one
 * strcmp() and the use (a description freed and another made at its
 * address costs only the search again).  Per thread: the daemon's
 * packers read on threads of their own.
 */
#define FIELD_MEMO	32

static __thread struct field_memo {
	const struct rt_event_desc *ev;
	const char *name;
	unsigned int i;
} field_memo[FIELD_MEMO];

const struct rt_field_value *rt_item_field(const struct rt_item *it,
					   const char *name,
					   enum rt_field_use use)
{
	const struct rt_event_desc *ev = it->event;
	struct field_memo *m;
	int i;

	if (it->type != RT_ITEM_EVENT)
		return NULL;
	m = &field_memo[((uintptr_t)ev / 64 ^ (uintptr_t)name) % FIELD_MEMO];
	if (m->ev == ev && m->name == name && m->i < ev->nr_fields &&
	    !strcmp(ev->fields[m->i].name, name))
		return rt_field_fits(&ev->fields[m->i], use) ? &it->fields[m->i] : NULL;
	i = rt_event_field(ev, name, use);
	if (i < 0)
		return NULL;
	*m = (struct field_memo){ .ev = ev, .name = name, .i = (unsigned int)i };
	return &it->fields[i];
}

uint64_t rt_field_u64(const struct rt_field_value *f, uint64_t i)
{
	unsigned int b = f->desc->bits / 8;

	/* decode_event() checked that all count elements are in the packet. */
	if (i >= f->count)
		return 0;
	return rt_get_le(f->data + i * b, b);
}

int64_t rt_field_s64(const struct rt_field_value *f, uint64_t i)
{
	unsigned int bits = f->desc->bits;
	uint64_t v = rt_field_u64(f, i);

	if (bits < 64 && (v >> (bits - 1)) & 1)
		v |= ~0ULL << bits;
	return (int64_t)v;
}

void rt_format_ts(char *buf, size_t len, const struct rt_metadata *md,
		  uint64_t cycles, bool wall)
{
	uint64_t freq = md->clock_freq ? md->clock_freq : 1000000000;
	unsigned __int128 ns = (unsigned __int128)cycles * 1000000000 / freq;
	__int128 t = (__int128)ns;

	if (wall)
		t += (__int128)md->clock_offset_s * 1000000000 +
		     (__int128)md->clock_offset * 1000000000 / (__int128)freq;
	if (t < 0)
		snprintf(buf, len, "[-%" PRIu64 ".%09u]", (uint64_t)(-t / 1000000000),
			 (unsigned int)(-t % 1000000000));
	else
		snprintf(buf, len, "[%" PRIu64 ".%09u]", (uint64_t)(t / 1000000000),
			 (unsigned int)(t % 1000000000));
}

void rt_print_text(FILE *f, const uint8_t *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len && s[i]; i++) {
		uint8_t c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\x%02x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

static void print_int(FILE *f, const struct rt_field_value *v, uint64_t i)
{
	const struct rt_field_desc *d = v->desc;
	uint64_t u = rt_field_u64(v, i);

	switch (d->base) {
	case 16:
		fprintf(f, "0x%" PRIx64, u);
		return;
	case 8:
		fprintf(f, "0%" PRIo64, u);
		return;
	case 2:
		fputs("0b", f);
		for (int b = d->bits - 1; b >= 0; b--)
			fputc('0' + ((u >> b) & 1), f);
		return;
	}
	if (d->is_signed)
		fprintf(f, "%" PRId64, rt_field_s64(v, i));
	else
		fprintf(f, "%" PRIu64, u);
}

void rt_print_fields(FILE *f, const struct rt_item *ev)
{
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		const struct rt_field_value *v = &ev->fields[i];

		fprintf(f, "%s%s=", i ? ", " : "", v->desc->name);
		if (v->desc->kind == RT_FIELD_INT) {
			const char *label = v->desc->nr_labels ?
				rt_field_label(v->desc, rt_field_s64(v, 0)) : NULL;

			if (label)
				fprintf(f, "%s(", label);
			print_int(f, v, 0);
			if (label)
				fputc(')', f);
		} else if (v->desc->is_text) {
			rt_print_text(f, v->data, v->count);
		} else if (v->desc->bits == 8 && v->desc->base == 16 &&
			   !v->desc->is_signed) {
			/* Bytes in hex, one string: a build-id, a digest. */
			for (uint64_t j = 0; j < v->count; j++)
				fprintf(f, "%02" PRIx64, rt_field_u64(v, j));
		} else {
			fputc('[', f);
			for (uint64_t j = 0; j < v->count; j++) {
				if (j)
					fputs(", ", f);
				print_int(f, v, j);
			}
			fputc(']', f);
		}
	}
}
