// SPDX-License-Identifier: GPL-2.0
/*
 * diffread: one stream read three ways at once (diffread.h).  Pointers
 * differ between the streams (each holds its own copy of a packet): what
 * is compared is what they point at, as offsets in the packet.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffread.h"
#include "../lib/internal.h"

enum { MAIN, REF, FILT, NR };

/* Which events the filtered stream wants. */
enum pick { PICK_ALL, PICK_NONE, PICK_SOME, PICK_SOME_LATE };

struct diffread {
	struct rt_stream *s[NR];
	enum pick pick;
	uint64_t seed;
	bool filter_on;			/* PICK_SOME_LATE: set after the first item */
	uint64_t handed, left_out;
	bool bad;
	char why[1024];
};

static void differ(struct diffread *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void differ(struct diffread *d, const char *fmt, ...)
{
	va_list ap;

	if (d->bad)
		return;
	d->bad = true;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
}

bool dr_wants(const struct diffread *d, const struct rt_event_desc *ev)
{
	if (!d->filter_on)
		return true;
	switch (d->pick) {
	case PICK_ALL:
		return true;
	case PICK_NONE:
		return false;
	default:
		return ((ev->id + 1) * 0x9e3779b97f4a7c15ULL ^ d->seed) >> 63;
	}
}

static bool want_cb(void *arg, const struct rt_event_desc *ev)
{
	return dr_wants(arg, ev);
}

static int set_filter(struct diffread *d)
{
	d->filter_on = true;
	return rt_stream_set_wanted(d->s[FILT], want_cb, d);
}

struct diffread *dr_open(const struct rt_metadata *md, const char *const *paths,
			 unsigned int nr_paths, int cpu, uint64_t seed)
{
	struct diffread *d = calloc(1, sizeof(*d));
	struct rt_error err;

	if (!d)
		return NULL;
	d->seed = seed;
	d->pick = (enum pick)(seed % 4);
	for (int i = 0; i < NR; i++) {
		int r = paths ? rt_stream_open(&d->s[i], md, paths, nr_paths, cpu, &err) :
				rt_stream_open_fed(&d->s[i], md, cpu, &err);

		if (r) {
			dr_close(d);
			return NULL;
		}
	}
	rt_stream_set_reference(d->s[REF], true);
	if (d->pick != PICK_SOME_LATE && set_filter(d)) {
		dr_close(d);
		return NULL;
	}
	return d;
}

void dr_set_tolerant(struct diffread *d, bool on)
{
	for (int i = 0; i < NR; i++)
		rt_stream_set_tolerant(d->s[i], on);
}

void dr_set_window(struct diffread *d, uint64_t begin, uint64_t end, bool seek)
{
	for (int i = 0; i < NR; i++)
		rt_stream_set_window(d->s[i], begin, end, seek);
}

int dr_feed(struct diffread *d, const char *file, uint64_t offset,
	    const uint8_t *bytes, size_t n, struct rt_error *err)
{
	struct rt_error e;
	int r = rt_stream_feed_lent(d->s[MAIN], file, offset, bytes, n, err);

	for (int i = REF; i < NR; i++)
		if (rt_stream_feed(d->s[i], file, offset, bytes, n, &e) != r)
			differ(d, "feeding: the streams disagree");
	return r;
}

struct rt_stream *dr_stream(struct diffread *d)
{
	return d->s[MAIN];
}

uint64_t dr_handed(const struct diffread *d)
{
	return d->handed;
}

uint64_t dr_left_out(const struct diffread *d)
{
	return d->left_out;
}

static uint64_t at(const struct rt_item *it, const void *p)
{
	return p ? (uint64_t)((const uint8_t *)p - it->packet->raw) : UINT64_MAX;
}

/* Whether @b (of stream @who) is @a, as offsets in their packets. */
static void compare(struct diffread *d, const char *who, const struct rt_item *a,
		    const struct rt_item *b)
{
	const struct rt_packet_info *p = a->packet, *q = b->packet;

#define SAME(x, y, what) do { \
	if ((x) != (y)) { \
		differ(d, "%s: %s at %s offset %" PRIu64 ": %" PRIu64 " against %" PRIu64, \
		       who, what, p ? p->file : "?", a->offset, (uint64_t)(y), (uint64_t)(x)); \
		return; \
	} } while (0)
	SAME(a->type, b->type, "item type");
	SAME(a->timestamp, b->timestamp, "timestamp");
	SAME(a->cpu, b->cpu, "cpu");
	SAME(!p, !q, "packet");
	if (p) {
		SAME(p->offset, q->offset, "packet offset");
		SAME(p->content_bytes, q->content_bytes, "packet content_bytes");
		SAME(p->packet_bytes, q->packet_bytes, "packet packet_bytes");
		SAME(p->timestamp_begin, q->timestamp_begin, "packet timestamp_begin");
		SAME(p->timestamp_end, q->timestamp_end, "packet timestamp_end");
		SAME(p->seq, q->seq, "packet seq");
		SAME(p->events_discarded, q->events_discarded, "packet events_discarded");
		SAME(p->cpu, q->cpu, "packet cpu");
		SAME(p->events, q->events, "packet events");
		SAME(!p->file, !q->file, "packet file");
		if (p->file && strcmp(p->file, q->file))
			differ(d, "%s: packet file %s against %s", who, q->file, p->file);
		if (a->type == RT_ITEM_PACKET && memcmp(p->raw, q->raw, p->content_bytes))
			differ(d, "%s: packet bytes at offset %" PRIu64, who, p->offset);
	}
	SAME(a->lost_events, b->lost_events, "lost_events");
	SAME(a->lost_packets, b->lost_packets, "lost_packets");
	SAME(a->damaged_packets, b->damaged_packets, "damaged_packets");
	SAME(a->lost_first, b->lost_first, "lost_first");
	SAME(a->event, b->event, "event");
	SAME(a->offset, b->offset, "event offset");
	SAME(at(a, a->payload), at(b, b->payload), "payload");
	SAME(a->payload_len, b->payload_len, "payload_len");
	SAME(a->nr_fields, b->nr_fields, "nr_fields");
	for (unsigned int i = 0; i < a->nr_fields; i++) {
		const struct rt_field_value *x = &a->fields[i], *y = &b->fields[i];

		SAME(x->desc, y->desc, "field desc");
		SAME(x->count, y->count, "field count");
		SAME(at(a, x->data), at(b, y->data), "field data");
	}
#undef SAME
}

/* The end (@r: 0, or -1 with @e) of stream @i, against the main one's. */
static void compare_end(struct diffread *d, int i, int r, const struct rt_error *e,
			int r0, const struct rt_error *e0)
{
	static const char *const name[NR] = { "main", "reference", "filtered" };

	if (r != r0)
		differ(d, "%s: returned %d where the main stream returned %d (%s)",
		       name[i], r, r0, r > 0 ? "an item" : r < 0 ? e->msg : r0 < 0 ? e0->msg : "");
	else if (r < 0 && strcmp(e->msg, e0->msg))
		differ(d, "%s: error '%s' where the main stream's is '%s'", name[i],
		       e->msg, e0->msg);
}

int dr_next(struct diffread *d, struct rt_item *item, struct rt_error *err)
{
	struct rt_item it;
	struct rt_error e;
	int r0 = rt_stream_next(d->s[MAIN], item, err), r;

	r = rt_stream_next(d->s[REF], &it, &e);
	compare_end(d, REF, r, &e, r0, err);
	if (r0 > 0 && r > 0)
		compare(d, "reference", item, &it);
	if (r0 > 0 && item->type == RT_ITEM_EVENT && !dr_wants(d, item->event)) {
		d->left_out++;
		return r0;
	}
	r = rt_stream_next(d->s[FILT], &it, &e);
	compare_end(d, FILT, r, &e, r0, err);
	if (r0 > 0 && r > 0) {
		compare(d, "filtered", item, &it);
		d->handed += item->type == RT_ITEM_EVENT;
	}
	/* From the next item on (rt_stream_set_wanted()). */
	if (d->pick == PICK_SOME_LATE && !d->filter_on && set_filter(d))
		differ(d, "out of memory");
	return r0;
}

static void compare_msgs(struct diffread *d, const char *what,
			 unsigned int (*nr)(const struct rt_stream *),
			 const char *(*msg)(const struct rt_stream *, unsigned int))
{
	for (int i = REF; i < NR; i++) {
		unsigned int n = nr(d->s[MAIN]);

		if (nr(d->s[i]) != n) {
			differ(d, "%s: %u against %u", what, nr(d->s[i]), n);
			return;
		}
		for (unsigned int k = 0; k < n && k < RT_MSGS_KEPT; k++) {
			const char *a = msg(d->s[MAIN], k), *b = msg(d->s[i], k);

			if (!a != !b || (a && strcmp(a, b)))
				differ(d, "%s %u: '%s' against '%s'", what, k, b ? b : "",
				       a ? a : "");
		}
	}
}

const char *dr_finish(struct diffread *d)
{
	const struct rt_stream_stats *a = rt_stream_stats(d->s[MAIN]);

	compare_msgs(d, "damage", rt_stream_nr_damage, rt_stream_damage);
	compare_msgs(d, "notes", rt_stream_nr_notes, rt_stream_note);
	compare_msgs(d, "index notes", rt_stream_nr_index_notes, rt_stream_index_note);
	for (int i = REF; i < NR; i++) {
		const struct rt_stream_stats *b = rt_stream_stats(d->s[i]);

		if (a->packets != b->packets || a->events != b->events ||
		    a->discarded != b->discarded || a->lost_packets != b->lost_packets ||
		    a->bytes != b->bytes || a->skipped_bytes != b->skipped_bytes ||
		    (a->events && (a->first_ts != b->first_ts || a->last_ts != b->last_ts)))
			differ(d, "%s stats: %" PRIu64 " packets %" PRIu64 " events [%" PRIu64 ", %" PRIu64 "] against %" PRIu64 " %" PRIu64 " [%" PRIu64 ", %" PRIu64 "]",
			       i == REF ? "reference" : "filtered", b->packets, b->events,
			       b->first_ts, b->last_ts, a->packets, a->events, a->first_ts,
			       a->last_ts);
	}
	return d->bad ? d->why : NULL;
}

void dr_close(struct diffread *d)
{
	if (!d)
		return;
	for (int i = 0; i < NR; i++)
		rt_stream_close(d->s[i]);
	free(d);
}
