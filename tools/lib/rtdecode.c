// SPDX-License-Identifier: GPL-2.0
/*
 * Stream decoding: files -> bytes (source.c: plain, or zstd frames checked
 * whole) -> packets -> events.
 *
 * Each packet is read whole, then checked whole (header, continuity with
 * the previous packet, every event) before anything of it is handed out;
 * a second pass hands out the events.  Timestamps are rebuilt as CTF
 * does: the clock starts at timestamp_begin in every packet, a compact
 * header replaces the low 27 bits of the clock (adding 2^27 when they went
 * backwards), an extended header (id in bits 5..31, then the unaligned
 * 64-bit time) sets all 64 bits.
 *
 * A packet takes content_size bytes: ringtrace.ko writes packet_size ==
 * content_size, and the daemon's verbatim copies of content_size bytes
 * are whole packets.  A packet_size that differs is damage, and never
 * moves where the next packet is looked for (load_packet()).
 *
 * A stream made of several files (rotation) is read file by file; frames
 * and packets never straddle files, so whatever is incomplete at the end
 * of one file (a killed daemon) is dropped, noted, and reading goes on
 * with the next file.
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

struct rt_stream {
	const struct rt_metadata *md;
	char **paths;
	unsigned int nr_paths, next_path;
	int cpu;			/* promised by the file names, or -1 */
	struct rt_source src;

	uint8_t *pkt;
	size_t pkt_cap;
	struct rt_packet_info info;
	bool have_prev;
	bool loaded;			/* a packet was: the next has a previous */
	struct rt_packet_info prev;	/* previous packet's header (raw = NULL) */
	uint64_t prev_last_ts;		/* last event of the previous packet */
	uint32_t stream_cpu;
	bool have_cpu;

	enum state state;
	uint64_t pos;			/* next event in the packet */
	uint64_t clock;			/* current clock value */
	unsigned int events_given;
	struct rt_field_value *values;
	uint64_t lost_events, lost_packets;
	bool lost_first;

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
};

/* How one file of a windowed stream is read. */
struct file_plan {
	bool skip;			/* holds nothing of the window */
	/* Entries of the file's own index, checked against it when opened. */
	bool check_start, check_stop;
	struct chunk_index_entry start;	/* where reading starts */
	struct chunk_index_entry stop;	/* where it ends; coff 0: the end */
};

/*
 * Takes the grown metadata on, between packets: the item handed out last
 * (its fields in s->values) is the caller's until this call.
 */
static int take_metadata(struct rt_stream *s, struct rt_error *err)
{
	const struct rt_metadata *md = s->md_next;

	if (md->max_fields > s->md->max_fields) {
		struct rt_field_value *v = calloc(md->max_fields, sizeof(*v));

		if (!v)
			return rt_fail(err, "out of memory");
		free(s->values);
		s->values = v;
	}
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
 * its own (load_packet()).
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

/* Continuity with the previous packet of the stream. */
static int check_sequence(struct rt_stream *s, struct rt_error *err)
{
	const struct rt_packet_info *pi = &s->info, *pv = &s->prev;
	const char *path = pi->file;
	uint64_t off = pi->offset;

	if (s->cpu >= 0 && pi->cpu != (uint32_t)s->cpu)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet of cpu %u in a stream of cpu %d",
			       path, off_kind(s), off, pi->cpu, s->cpu);
	if (s->have_cpu && pi->cpu != s->stream_cpu)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": cpu_id changed from %u to %u",
			       path, off_kind(s), off, s->stream_cpu, pi->cpu);
	s->have_cpu = true;
	s->stream_cpu = pi->cpu;
	if (!s->have_prev) {
		s->lost_packets = pi->seq;
		s->lost_events = pi->events_discarded;
		s->lost_first = true;
		return 0;
	}
	s->lost_first = false;
	if (pi->seq <= pv->seq)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet_seq_num %" PRIu64 " does not follow %" PRIu64,
			       path, off_kind(s), off, pi->seq, pv->seq);
	if (pi->events_discarded < pv->events_discarded)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": events_discarded went down from %" PRIu64 " to %" PRIu64,
			       path, off_kind(s), off, pv->events_discarded, pi->events_discarded);
	if (pi->timestamp_begin < pv->timestamp_end)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": timestamp_begin %" PRIu64 " is before the previous packet's timestamp_end %" PRIu64,
			       path, off_kind(s), off, pi->timestamp_begin, pv->timestamp_end);
	s->lost_packets = pi->seq - pv->seq - 1;
	s->lost_events = pi->events_discarded - pv->events_discarded;
	return 0;
}

/*
 * Decodes the event at s->pos into *item and advances.  The payload must
 * lie within content_size; every field length is checked.
 */
static int decode_event(struct rt_stream *s, struct rt_item *item,
			struct rt_error *err)
{
	const struct rt_packet_info *pi = &s->info;
	const uint8_t *pkt = s->pkt;
	uint64_t end = pi->content_bytes, pos = s->pos, hoff = s->pos;
	const struct rt_event_desc *ev;
	uint32_t word, id;
	uint64_t ts;

	if (end - pos < RINGTRACE_COMPACT_HEADER_SIZE)
		goto short_event;
	word = le32(pkt + pos);
	id = word & ((1u << RINGTRACE_EVENT_ID_BITS) - 1);
	if (id != RINGTRACE_EVENT_ID_EXTENDED) {
		uint64_t low = word >> RINGTRACE_EVENT_ID_BITS;

		ts = (s->clock & ~TS_MASK) | low;
		if (low < (s->clock & TS_MASK))
			ts += TS_MASK + 1;
		if (ts < s->clock)	/* the 64-bit clock wrapped */
			return rt_fail(err, "%s: %soffset %" PRIu64 ": timestamp overflows 64 bits",
				       pi->file, off_kind(s), pi->offset + hoff);
		pos += RINGTRACE_COMPACT_HEADER_SIZE;
	} else {
		if (end - pos < RINGTRACE_EXTENDED_HEADER_SIZE)
			goto short_event;
		id = word >> RINGTRACE_EVENT_ID_BITS;
		ts = le64(pkt + pos + 4);
		if (ts < s->clock)
			return rt_fail(err, "%s: %soffset %" PRIu64 ": event time %" PRIu64 " goes back from %" PRIu64,
				       pi->file, off_kind(s), pi->offset + hoff, ts, s->clock);
		pos += RINGTRACE_EXTENDED_HEADER_SIZE;
	}
	ev = rt_metadata_event(s->md, id);
	if (!ev)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": unknown event id %u",
			       pi->file, off_kind(s), pi->offset + hoff, id);
	if (ev->unsupported) {
		/* A layout this reader does not know: not damage. */
		s->hard = true;
		return rt_fail(err, "%s: %soffset %" PRIu64 ": event '%s' cannot be decoded: %s",
			       pi->file, off_kind(s), pi->offset + hoff, ev->name, ev->unsupported);
	}
	if (ts > pi->timestamp_end)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": event time %" PRIu64 " is after the packet's timestamp_end %" PRIu64,
			       pi->file, off_kind(s), pi->offset + hoff, ts, pi->timestamp_end);

	/* Payload: CTF alignment is relative to the packet start. */
	pos = (pos + ev->align - 1) / ev->align * ev->align;
	if (pos > end)
		goto short_payload;
	item->payload = pkt + pos;
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		const struct rt_field_desc *f = &ev->fields[i];
		struct rt_field_value *v = &s->values[i];
		uint64_t count = 1, bytes;

		pos = (pos + f->align - 1) / f->align * f->align;
		if (pos > end)
			goto short_payload;
		v->desc = f;
		v->data = pkt + pos;
		if (f->kind == RT_FIELD_STRING) {
			const uint8_t *nul = memchr(pkt + pos, 0, end - pos);

			if (!nul)
				goto short_payload;
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
			goto short_payload;
		bytes = count * (f->bits / 8);
		v->count = count;
		pos += bytes;
	}
	item->type = RT_ITEM_EVENT;
	item->timestamp = ts;
	item->cpu = pi->cpu;
	item->packet = pi;
	item->event = ev;
	item->offset = pi->offset + hoff;
	item->payload_len = pkt + pos - item->payload;
	item->nr_fields = ev->nr_fields;
	item->fields = s->values;
	s->clock = ts;
	s->pos = pos;
	return 0;

short_event:
	return rt_fail(err, "%s: %soffset %" PRIu64 ": event header cut by content_size (%" PRIu64 " bytes left)",
		       pi->file, off_kind(s), pi->offset + hoff, end - pos);
short_payload:
	return rt_fail(err, "%s: %soffset %" PRIu64 ": payload of event '%s' runs past content_size",
		       pi->file, off_kind(s), pi->offset + hoff, ev->name);
}

/* Checks every event of the loaded packet without handing any out. */
static int check_events(struct rt_stream *s, struct rt_error *err)
{
	const struct rt_packet_info *pi = &s->info;
	struct rt_item item;
	uint64_t n = 0;

	s->pos = HDR_SIZE;
	s->clock = pi->timestamp_begin;
	while (s->pos < pi->content_bytes) {
		if (decode_event(s, &item, err))
			return -1;
		n++;
	}
	if (n != pi->events)
		return rt_fail(err, "%s: %soffset %" PRIu64 ": packet holds %" PRIu64 " events, its header says %u",
			       pi->file, off_kind(s), pi->offset, n, pi->events);
	s->pos = HDR_SIZE;
	s->clock = pi->timestamp_begin;
	return 0;
}

/*
 * Damage at stream offset @off (@why says what): skip from there to the
 * next packet signature -- its magic and the trace's uuid -- and hand the
 * bytes from there back to the source.  At the end of the file everything
 * left is skipped (a zero-filled tail).  The damage description counts the
 * bytes skipped from @off, read already or not.
 */
static int resync(struct rt_stream *s, uint64_t off, const char *why,
		  struct rt_error *err)
{
	enum { CHUNK = 65536 };
	uint8_t sig[4 + 16], *buf, *hit;
	size_t siglen = 4, carry = 0, n;
	uint64_t skipped = s->src.out_off - off;
	ssize_t got;
	int ret = 0;

	sig[0] = 0xc1; sig[1] = 0x1f; sig[2] = 0xfc; sig[3] = 0xc1;
	if (s->md->has_uuid) {
		memcpy(sig + 4, s->md->uuid, 16);
		siglen += 16;
	}
	buf = malloc(CHUNK + sizeof(sig));
	if (!buf)
		return rt_fail(err, "%s: out of memory", s->src.path);
	for (;;) {
		got = rt_src_read(&s->src, buf + carry, CHUNK, err);
		if (got < 0) {
			ret = -1;
			break;
		}
		n = carry + (size_t)got;
		hit = memmem(buf, n, sig, siglen);
		if (hit) {
			skipped += (uint64_t)(hit - buf);
			if (rt_src_unread(&s->src, hit, n - (size_t)(hit - buf)))
				ret = rt_fail(err, "%s: out of memory", s->src.path);
			rt_msgs_add(&s->damage, "%s; skipped %" PRIu64 " bytes at %soffset %" PRIu64 " to the next packet",
				   why, skipped, off_kind(s), off);
			break;
		}
		if (!got) {
			skipped += n;
			rt_msgs_add(&s->damage, "%s; skipped %" PRIu64 " bytes at %soffset %" PRIu64 " to the end of the file",
				   why, skipped, off_kind(s), off);
			break;
		}
		carry = n < siglen - 1 ? n : siglen - 1;
		skipped += n - carry;
		memmove(buf, buf + n - carry, carry);
	}
	free(buf);
	s->stats.skipped_bytes += skipped;
	return ret;
}

/*
 * Damage at stream offset @off, the start of a packet that does not hold
 * together: the @n bytes of it read so far (@buf) go back to the source but
 * the first, and reading resynchronises from the next byte on.
 */
static int skip_packet(struct rt_stream *s, const uint8_t *buf, size_t n,
		       uint64_t off, struct rt_error *err)
{
	if (rt_src_unread(&s->src, buf + 1, n - 1))
		return rt_fail(err, "%s: out of memory", s->src.path);
	return resync(s, off, err->msg, err);
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

/*
 * The frames of file @i (its index into @ix[@i]: its own, or built) at the
 * end of @sp; one spot with no entry when it has no index.  What is wrong
 * with its index is a note.
 */
static int add_file(struct rt_stream *s, unsigned int i, struct chunk_index *ix,
		    struct spots *sp, struct rt_error *err)
{
	size_t len = strlen(s->paths[i]);
	bool zst = len > 4 && !strcmp(s->paths[i] + len - 4, ".zst"), own;
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
		rt_msgs_add(&s->index_notes, "%s: cannot be indexed (not whole frames of packets): read whole",
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

/*
 * Whether the frame of @sp->v[@k] (one of an index: spot_bytes() lets no
 * other through) holds a sched_switch before the window (@th only tells
 * one): 1 or 0; its events are decoded, as a stream of that one frame.
 * -1: it cannot be read (damage, a lying index, out of memory), which
 * ends the search where it was: the frames the reading proper was going
 * to read anyway say what is wrong, if anything.
 */
static int switches_before(const struct rt_stream *s, const struct rt_threads *th,
			   const struct spots *sp, size_t k)
{
	const struct spot *at = &sp->v[k];
	struct rt_stream *sub;
	struct rt_error err;
	struct rt_item it;
	int r, yes = -1;

	if (rt_stream_open(&sub, s->md, (const char *const *)&s->paths[at->path], 1,
			   s->cpu, &err))
		return -1;
	sub->plan = calloc(1, sizeof(*sub->plan));
	if (!sub->plan)
		goto out;
	sub->planned = true;
	sub->plan->start = *at->e;
	if (k + 1 < sp->n && sp->v[k + 1].path == at->path)
		sub->plan->stop = *sp->v[k + 1].e;
	yes = 0;
	while ((r = rt_stream_next(sub, &it, &err)) > 0 && it.timestamp < s->win_begin)
		if (rt_threads_switches(th, &it)) {
			yes = 1;
			break;
		}
	if (r < 0)
		yes = -1;
out:
	rt_stream_close(sub);
	return yes;
}

/*
 * How far back the search for a CPU's last sched_switch goes: stream
 * bytes of the frames looked at, that frame before the window included
 * (16 MiB: four of the packer's frames).  Each is decoded once more than
 * a window reads, so this bounds what seeking costs over the frames of
 * the window -- a CPU that never switches (a trace recorded without
 * sched_switch) would otherwise be decoded whole.  Measured: 0.15 s of
 * CPU a CPU on the host, where the window of make bench's seek part
 * costs 0.17 s for two CPUs.
 */
#define SWITCH_LOOKBACK		(16ULL << 20)

/* The stream bytes of the frame at @sp->v[@k]; a file without an index: too many. */
static uint64_t spot_bytes(const struct spots *sp, const struct chunk_index *ix,
			   size_t k)
{
	const struct spot *at = &sp->v[k];

	if (!at->e)
		return UINT64_MAX;
	if (k + 1 < sp->n && sp->v[k + 1].path == at->path)
		return sp->v[k + 1].e->uoff - at->e->uoff;
	return ix[at->path].content_bytes - at->e->uoff;
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
 * The spot to start at so that the CPU's thread is known when the window
 * opens: the window's first events belong to the thread that the CPU's
 * last sched_switch before --begin switched in (threads.c), and a full
 * pass knows it.  Frame by frame back from @first (the frame before the
 * window) to the one that holds that switch -- usually @first itself;
 * further back when one thread ran alone on the CPU for whole frames; the
 * first frame when the CPU never switched (its state dump, if any, then
 * says).  When that is the first frame of the files indexed, the files
 * before (s->cold: the caller knows they hold nothing of the window) are
 * indexed one by one, latest first, and their frames looked at too.  No
 * further than SWITCH_LOOKBACK: then @first stays, and the window's
 * first events on that CPU have no thread until its first switch.  No
 * search at all when the metadata declares no sched_switch.
 */
static int find_switch(struct rt_stream *s, struct chunk_index *ix,
		       struct spots *sp, size_t *first, struct rt_error *err)
{
	struct rt_threads *th = rt_threads_new(s->md);
	uint64_t left = SWITCH_LOOKBACK, bytes;
	size_t k = *first, added;
	int r, ret = 0;

	if (!th)
		return rt_fail(err, "out of memory");
	/* No frame can hold what the metadata does not declare. */
	for (; rt_threads_reads_switches(th);) {
		bytes = spot_bytes(sp, ix, k);
		if (bytes > left)
			break;
		left -= bytes;
		r = switches_before(s, th, sp, k);
		if (r) {
			if (r > 0)
				*first = k;
			break;
		}
		if (k) {
			k--;
			continue;
		}
		do {
			added = 0;
			ret = s->cold ? prepend_file(s, --s->cold, ix, sp, &added, err) : 0;
		} while (!ret && !added && s->cold);
		if (ret)
			break;
		if (!added) {
			*first = 0;
			break;
		}
		*first += added;
		k = added - 1;
	}
	rt_threads_free(th);
	return ret;
}

/*
 * Which files, from where to where, a window needs: the reading starts at
 * the last frame that starts before --begin (the items at or after it are
 * in it or later; the packet before the first one at or after it is
 * decoded, so that its losses count as in a full pass) -- or earlier, at
 * the CPU's last sched_switch before --begin (find_switch()) -- and stops
 * at the first frame that starts after --end.  A file without an index is
 * one frame of unknown times: read whole unless a later file's frame is
 * the start, or an earlier one's the stop.
 */
static int plan_window(struct rt_stream *s, struct rt_error *err)
{
	struct chunk_index *ix = calloc(s->nr_paths + 1, sizeof(*ix));
	struct spots sp = { 0 };
	struct spot start = { 0 }, stop = { 0 };
	size_t first = 0;
	bool have_stop = false;
	uint64_t t = 0;
	int ret = -1;

	s->planned = true;
	s->plan = calloc(s->nr_paths + 1, sizeof(*s->plan));
	if (!ix || !s->plan) {
		rt_fail(err, "out of memory");
		goto out;
	}
	for (unsigned int i = s->cold; i < s->nr_paths; i++)
		if (add_file(s, i, ix, &sp, err))
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
	if (sp.n && s->win_begin && (first || s->cold) &&
	    find_switch(s, ix, &sp, &first, err))
		goto out;
	if (!sp.n) {
		for (unsigned int i = 0; i < s->cold; i++)
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
	for (unsigned int i = 0; i < s->nr_paths; i++) {
		struct file_plan *p = &s->plan[i];

		p->skip = i < start.path || (have_stop && (i > stop.path ||
			  (i == stop.path && !stop.e->coff)));
		if (i == start.path && start.e) {
			p->start = *start.e;
			p->check_start = start.own && start.e->coff;
		}
		if (have_stop && i == stop.path) {
			p->stop = *stop.e;
			p->check_stop = stop.own;
		}
	}
done:
	ret = 0;
out:
	for (unsigned int i = 0; ix && i < s->nr_paths; i++)
		chunk_index_free(&ix[i]);
	free(ix);
	free(sp.v);
	return ret;
}

/*
 * The file just opened, read as its plan says: from its start frame (one
 * of its own index checked against the file first: if it is not there,
 * the file is read whole), to its limit.
 */
static int start_file(struct rt_stream *s, const struct file_plan *p,
		      struct rt_error *err)
{
	struct rt_source *src = &s->src;
	const struct chunk_index_entry *bad = NULL;

	if (p->check_start && rt_index_check(src->fd, src->zst, &p->start))
		bad = &p->start;
	else if (p->check_stop && rt_index_check(src->fd, src->zst, &p->stop))
		bad = &p->stop;
	if (bad) {
		rt_msgs_add(&s->index_notes, "%s: its time index does not match the frame at offset %" PRIu64 ": ignored, read whole",
			    src->path, bad->coff);
		return 0;
	}
	if (!p->start.coff && !p->stop.coff)
		return 0;
	return rt_src_seek(src, p->start.coff, p->start.uoff, p->stop.coff, err);
}

/*
 * Returns 1 with a checked packet loaded, 0 at the end, -1 on error.  A
 * packet is its content_size bytes: a packet_size that claims more (or
 * less) never swallows what follows.
 */
static int load_packet(struct rt_stream *s, struct rt_error *err)
{
	for (;;) {
		struct rt_source *src = &s->src;
		uint8_t hdr[HDR_SIZE];
		uint64_t off, csize;
		bool size_bad;
		ssize_t got;

		if (!src->path) {
			if (s->windowed && !s->planned && plan_window(s, err))
				return -1;
			while (s->plan && s->next_path < s->nr_paths &&
			       s->plan[s->next_path].skip)
				s->next_path++;
			if (s->next_path == s->nr_paths)
				return 0;
			if (rt_src_open(src, s->paths[s->next_path++], err) ||
			    (s->plan && start_file(s, &s->plan[s->next_path - 1], err)))
				return -1;
		}
		off = src->out_off;
		got = rt_src_read(src, hdr, HDR_SIZE, err);
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
		if (check_header(s, hdr, off, err)) {
			if (!s->tolerant || skip_packet(s, hdr, HDR_SIZE, off, err))
				return -1;
			continue;
		}
		size_bad = check_packet_size(s, hdr, off, err) < 0;
		if (size_bad && !s->tolerant)
			return -1;
		csize = FIELD(hdr, content_size) / 8;
		if (csize > s->pkt_cap) {
			uint8_t *n = realloc(s->pkt, csize);

			if (!n)
				return rt_fail(err, "%s: out of memory", src->path);
			s->pkt = n;
			s->pkt_cap = csize;
		}
		memcpy(s->pkt, hdr, HDR_SIZE);
		got = rt_src_read(src, s->pkt + HDR_SIZE, csize - HDR_SIZE, err);
		if (got < 0)
			return -1;
		if ((uint64_t)got < csize - HDR_SIZE) {
			rt_msgs_add(&s->notes, "%s: trailing partial packet at %soffset %" PRIu64 " (%" PRIu64 " of %" PRIu64 " bytes) dropped",
				    src->path, off_kind(s), off, HDR_SIZE + got, csize);
			rt_src_close(src);
			continue;
		}
		memset(&s->info, 0, sizeof(s->info));
		parse_header(s->pkt, &s->info);
		/* Past the window: so is everything after it. */
		if (s->windowed && s->info.timestamp_begin > s->win_end)
			return 0;
		s->info.file = src->path;
		s->info.offset = off;
		s->info.raw = s->pkt;
		if (check_sequence(s, err) || check_events(s, err)) {
			if (!s->tolerant || s->hard)
				return -1;
			if (size_bad) {
				size_t l = strlen(err->msg);

				snprintf(err->msg + l, sizeof(err->msg) - l,
					 " (and its packet_size %" PRIu64 " bits differs from content_size)",
					 (uint64_t)FIELD(hdr, packet_size));
			}
			if (skip_packet(s, s->pkt, csize, off, err))
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
			check_packet_size(s, hdr, off, err);
			snprintf(why, sizeof(why), "%s: read to its content_size",
				 err->msg);
			rt_put_le(s->pkt + offsetof(struct ringtrace_packet_header, packet_size),
				  csize * 8, 8);
			s->info.packet_bytes = csize;
			if (resync(s, off + csize, why, err))
				return -1;
		}
		s->loaded = true;
		/* With a window, only what it holds counts (rt_stream_set_window()). */
		if (!s->windowed || s->info.timestamp_end >= s->win_begin) {
			s->stats.packets++;
			s->stats.bytes += csize;
			s->stats.discarded = s->info.events_discarded;
		}
		if (!s->windowed || s->info.timestamp_begin >= s->win_begin)
			s->stats.lost_packets += s->lost_packets;
		return 1;
	}
}

int rt_stream_next(struct rt_stream *s, struct rt_item *item,
		   struct rt_error *err)
{
	const struct rt_packet_info *pi = &s->info;
	int r;

	memset(item, 0, sizeof(*item));
	for (;;) {
		switch (s->state) {
		case AT_END:
			return 0;
		case NEED_PACKET:
			if (s->have_prev || s->loaded) {
				s->prev = s->info;
				s->prev.raw = NULL;
				s->have_prev = true;
			}
			r = s->md_next ? take_metadata(s, err) : 0;
			if (!r)
				r = load_packet(s, err);
			if (r <= 0) {
				s->state = AT_END;
				return r;
			}
			s->state = GIVE_PACKET;
			continue;
		case GIVE_PACKET:
			item->type = RT_ITEM_PACKET;
			item->timestamp = pi->timestamp_begin;
			item->cpu = pi->cpu;
			item->packet = pi;
			s->state = GIVE_LOST;
			return 1;
		case GIVE_LOST:
			s->state = GIVE_EVENTS;
			if (!s->lost_events && !s->lost_packets)
				continue;
			item->type = RT_ITEM_LOST;
			item->timestamp = pi->timestamp_begin;
			item->cpu = pi->cpu;
			item->packet = pi;
			item->lost_events = s->lost_events;
			item->lost_packets = s->lost_packets;
			item->lost_first = s->lost_first;
			return 1;
		case GIVE_EVENTS:
			if (s->pos >= pi->content_bytes) {
				s->state = NEED_PACKET;
				continue;
			}
			/* Checked by check_events(): cannot fail here. */
			if (decode_event(s, item, err)) {
				s->state = AT_END;
				return -1;
			}
			if (s->windowed && (item->timestamp < s->win_begin ||
					    item->timestamp > s->win_end))
				return 1;
			if (!s->stats.events)
				s->stats.first_ts = item->timestamp;
			s->stats.last_ts = item->timestamp;
			s->stats.events++;
			return 1;
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
	s->values = calloc(md->max_fields ? md->max_fields : 1, sizeof(*s->values));
	s->paths = calloc(nr_paths ? nr_paths : 1, sizeof(*s->paths));
	if (!s->values || !s->paths)
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
	free(s->fed_file);
	free(s->values);
	free(s->pkt);
	free(s);
}

const struct rt_stream_stats *rt_stream_stats(const struct rt_stream *s)
{
	return &s->stats;
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

int rt_stream_feed(struct rt_stream *s, const char *file, uint64_t offset,
		   const uint8_t *bytes, size_t n, struct rt_error *err)
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
	if (rt_src_unread(src, bytes, n)) {
		rt_src_close(src);
		return rt_fail(err, "%s: out of memory", file);
	}
	src->out_off = offset;
	if (s->state == AT_END)
		s->state = NEED_PACKET;
	return 0;
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

const struct rt_field_value *rt_item_field(const struct rt_item *it,
					   const char *name,
					   enum rt_field_use use)
{
	int i;

	if (it->type != RT_ITEM_EVENT)
		return NULL;
	i = rt_event_field(it->event, name, use);
	return i < 0 ? NULL : &it->fields[i];
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
