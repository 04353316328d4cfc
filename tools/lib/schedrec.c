// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler records: what one CPU's frames do to a scheduling walk's state
 * (tools/cli/sql/schedwalk.c), frame by frame (lib/chunk_index.h), so that
 * a reader learns each thread's state at a time without decoding the
 * frames before it.
 *
 * A record is fed one CPU's items of one frame in order and depends on
 * them alone: what it needs of the state at the frame's start (who runs
 * on the CPU, who owns its events, its interrupt depth) it keeps as a
 * function of that state, which the reader composes.  The rules are the
 * walk's, restated per CPU:
 *
 *  - a sched_switch: the CPU's thread is no longer running (a "mark" of
 *    it: of the thread the frame's previous switch put there, or, for the
 *    frame's first switch, of the one at its start), then prev_tid leaves
 *    in prev_state (when both are known), then next_tid runs; it resets
 *    the interrupt depth and makes next_tid the owner of what follows;
 *  - a wakeup (sched_waking, sched_wakeup, sched_wakeup_new) of tid: it
 *    counts for the walk only when tid is neither running nor runnable
 *    then, which depends on every CPU; so a record keeps, per thread, its
 *    last switch and the first wakeup and mark after it (or in the frame,
 *    without one), and the last of each, for the reader to tell whether a
 *    switch elsewhere falls between them (then it decodes); the first
 *    wakeup's interrupt context is the CPU's depth then, or its own
 *    waker_ctx when that names an interrupt (a timer's records no entry);
 *  - irq_handler_entry / irq_softirq_entry raise the depth, their exits
 *    lower it (not below zero), a loss resets it and makes the owner
 *    unknown; a loss in front of the chunk's first packet is left to the
 *    reader (it knows the chunk before);
 *  - ringtrace_statedump_cpu names the owner if none is known.
 *
 * The packer's table maker (facts.c) feeds a record from the packets it
 * packs, beside the frame's thread table; a frame read past damage gets
 * no record (CHUNK_SCHED_UNLEARNT): its reader decodes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum sr_kind { S_OTHER, S_SWITCH, S_WAKEUP, S_IRQ_ENTRY, S_IRQ_EXIT, S_DUMP_CPU };

/* The fields a record reads, by their place in an event (-1: not there). */
enum sr_field { F_PREV_TID, F_NEXT_TID, F_PREV_STATE, F_NEXT_PRIO, F_TID, F_TARGET_CPU,
		F_WAKER_CTX, F_FIELDS };

static const char *const field_names[F_FIELDS] = {
	[F_PREV_TID] = "prev_tid", [F_NEXT_TID] = "next_tid", [F_PREV_STATE] = "prev_state",
	[F_NEXT_PRIO] = "next_prio", [F_TID] = "tid", [F_TARGET_CPU] = "target_cpu",
	[F_WAKER_CTX] = "waker_ctx",
};

/*
 * An event description met: what it is, whether it names the owner, and
 * where its fields are.  Looked up by name once per description, not per
 * event (the names' compares were most of what the records cost the
 * packer on top of decoding the wakeups).
 */
struct sr_desc {
	const struct rt_event_desc *ev;
	enum sr_kind kind;
	bool owner_fields;
	int field[F_FIELDS];
};

/* Descriptions kept; a trace's scheduler and interrupt events are fewer. */
#define SR_DESCS	16

struct rt_schedrec {
	struct chunk_sched_frame cur;	/* threads: in @threads until handed out */
	struct rt_tidmap threads;	/* struct chunk_sched_thread by tid */
	bool have_packet;
	bool switched;			/* @tid is the CPU's thread (else the start's) */
	int32_t tid;
	/* The descriptions met, the last one's first; the next to replace. */
	struct sr_desc descs[SR_DESCS];
	unsigned int nr_descs, victim;
	const struct sr_desc *d;	/* the last event's */
	bool oom;
	bool keep;			/* rt_schedrec_keep_events() */
	struct rt_sched_event *evs;
	size_t nr_evs, cap_evs;
};

struct rt_schedrec *rt_schedrec_new(void)
{
	struct rt_schedrec *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	rt_tidmap_init(&r->threads, sizeof(struct chunk_sched_thread));
	return r;
}

void rt_schedrec_free(struct rt_schedrec *r)
{
	if (!r)
		return;
	rt_tidmap_free(&r->threads);
	free(r->evs);
	free(r);
}

void rt_schedrec_keep_events(struct rt_schedrec *r)
{
	r->keep = true;
}

const struct rt_sched_event *rt_schedrec_events(const struct rt_schedrec *r, size_t *nr)
{
	*nr = r->nr_evs;
	return r->evs;
}

/* A mark or wakeup kept (rt_schedrec_keep_events()). */
static struct rt_sched_event *keep(struct rt_schedrec *r, int32_t tid,
				   enum rt_sched_event_kind kind, uint64_t ts)
{
	struct rt_sched_event *e;

	if (!r->keep)
		return NULL;
	if (r->nr_evs == r->cap_evs) {
		size_t cap = r->cap_evs ? 2 * r->cap_evs : 64;

		e = reallocarray(r->evs, cap, sizeof(*e));
		if (!e) {
			r->oom = true;
			return NULL;
		}
		r->evs = e;
		r->cap_evs = cap;
	}
	e = &r->evs[r->nr_evs++];
	*e = (struct rt_sched_event){ .tid = tid, .kind = kind, .ts = ts };
	return e;
}

static enum sr_kind kind_by_name(const struct rt_event_desc *ev)
{
	return !strcmp(ev->name, "sched_switch") ? S_SWITCH :
	       !strcmp(ev->name, "sched_waking") ||
	       !strcmp(ev->name, "sched_wakeup") ||
	       !strcmp(ev->name, "sched_wakeup_new") ? S_WAKEUP :
	       !strcmp(ev->name, "irq_handler_entry") ||
	       !strcmp(ev->name, "irq_softirq_entry") ? S_IRQ_ENTRY :
	       !strcmp(ev->name, "irq_handler_exit") ||
	       !strcmp(ev->name, "irq_softirq_exit") ? S_IRQ_EXIT :
	       !strcmp(ev->name, "ringtrace_statedump_cpu") ? S_DUMP_CPU : S_OTHER;
}

bool rt_schedrec_reads(const struct rt_event_desc *ev)
{
	return kind_by_name(ev) != S_OTHER;
}

/* @ev's description looked up by name, into @d. */
static void desc_make(struct sr_desc *d, const struct rt_event_desc *ev)
{
	static const char *const owner[][2] = {
		{ "sched_switch", "prev_comm" }, { "sched_switch", "next_comm" },
		{ "ringtrace_statedump_cpu", "comm" },
	};

	d->ev = ev;
	d->kind = kind_by_name(ev);
	for (int i = 0; i < F_FIELDS; i++)
		d->field[i] = d->kind == S_OTHER ? -1 :
			      rt_event_field(ev, field_names[i], RT_USE_INT);
	/* The owner is what threads.c takes it for: only from events whose fields it reads. */
	d->owner_fields = !ev->unsupported;
	for (size_t i = 0; i < sizeof(owner) / sizeof(owner[0]); i++)
		if (!strcmp(ev->name, owner[i][0]) &&
		    rt_event_field(ev, owner[i][1], RT_USE_TEXT) < 0)
			d->owner_fields = false;
	if (d->kind == S_SWITCH)
		d->owner_fields &= d->field[F_PREV_TID] >= 0 && d->field[F_NEXT_TID] >= 0;
	if (d->kind == S_DUMP_CPU)
		d->owner_fields &= d->field[F_TID] >= 0 &&
				   rt_event_field(ev, "pid", RT_USE_INT) >= 0;
}

static enum sr_kind kind_of(struct rt_schedrec *r, const struct rt_event_desc *ev)
{
	struct sr_desc *d;

	if (r->d && r->d->ev == ev)
		return r->d->kind;
	for (unsigned int i = 0; i < r->nr_descs; i++)
		if (r->descs[i].ev == ev) {
			r->d = &r->descs[i];
			return r->d->kind;
		}
	/* A trace of more kinds than kept: the oldest goes. */
	if (r->nr_descs < SR_DESCS) {
		d = &r->descs[r->nr_descs++];
	} else {
		d = &r->descs[r->victim];
		r->victim = (r->victim + 1) % SR_DESCS;
	}
	desc_make(d, ev);
	r->d = d;
	return d->kind;
}

/* Field @f of the event @it, whose description is the last kind_of()'s. */
static int64_t field(const struct rt_schedrec *r, const struct rt_item *it, enum sr_field f,
		     int64_t none)
{
	int i = r->d->field[f];

	return i < 0 ? none : rt_field_s64(&it->fields[i], 0);
}

/* @tid's record in the frame (made empty). */
static struct chunk_sched_thread *thread(struct rt_schedrec *r, int32_t tid)
{
	bool created;
	struct chunk_sched_thread *t = rt_tidmap_get(&r->threads, tid, &created);

	if (!t)
		r->oom = true;
	return t;
}

/* @tid's switch at @ts: what came after its previous one no longer counts. */
static void thread_switch(struct rt_schedrec *r, int32_t tid, uint64_t ts, bool in,
			  int64_t state)
{
	struct chunk_sched_thread *t = thread(r, tid);

	if (!t)
		return;
	*t = (struct chunk_sched_thread){ .tid = tid, .switch_ts = ts,
					  .state = in ? 0 : state,
					  .flags = CHUNK_SCHED_T_SWITCH |
						   (in ? CHUNK_SCHED_T_IN : 0) };
	keep(r, tid, RT_SCHED_SWITCH, ts);
}

/* @tid stops running at @ts (its CPU switched). */
static void thread_mark(struct rt_schedrec *r, int32_t tid, uint64_t ts)
{
	struct chunk_sched_thread *t = thread(r, tid);

	if (!t)
		return;
	if (!(t->flags & CHUNK_SCHED_T_MARK)) {
		t->flags |= CHUNK_SCHED_T_MARK;
		t->mark_ts = ts;
	}
	t->mark_last = ts;
	keep(r, tid, RT_SCHED_MARK, ts);
}

static void on_wakeup(struct rt_schedrec *r, const struct rt_item *it)
{
	int32_t tid = (int32_t)field(r, it, F_TID, -1);
	struct chunk_sched_thread *t, w = { 0 };
	struct rt_sched_event *e;

	if (tid <= 0 || !(t = thread(r, tid)))
		return;
	w.target_cpu = (int32_t)field(r, it, F_TARGET_CPU, -1);
	w.wake_irq = r->cur.irq;
	switch (r->cur.owner_change) {
	case CHUNK_CPU_SAME:
		w.flags = CHUNK_SCHED_T_WAKER_START;
		break;
	case CHUNK_CPU_FILL:
		w.flags = CHUNK_SCHED_T_WAKER_FILL;
		/* fall through */
	default:
		w.waker = r->cur.owner;
	}
	/* sched_waking's waker_ctx: in an interrupt (1..3), recorded on the CPU or not. */
	if (field(r, it, F_WAKER_CTX, 0) > 0)
		w.flags |= CHUNK_SCHED_T_WAKE_CTX;
	e = keep(r, tid, RT_SCHED_WAKE, it->timestamp);
	if (e) {
		e->target_cpu = w.target_cpu;
		e->waker = w.waker;
		e->flags = w.flags;
		e->irq = w.wake_irq;
	}
	t->wake_last = it->timestamp;
	if (t->flags & CHUNK_SCHED_T_WAKE)
		return;
	t->flags |= CHUNK_SCHED_T_WAKE | w.flags;
	t->wake_ts = it->timestamp;
	t->target_cpu = w.target_cpu;
	t->waker = w.waker;
	t->wake_irq = w.wake_irq;
}

static void on_switch(struct rt_schedrec *r, const struct rt_item *it)
{
	int32_t prev = (int32_t)field(r, it, F_PREV_TID, -1);
	int32_t next = (int32_t)field(r, it, F_NEXT_TID, -1);
	int64_t state = field(r, it, F_PREV_STATE, -1);
	struct chunk_sched_frame *f = &r->cur;

	if (!(f->flags & CHUNK_SCHED_SWITCHED)) {
		f->flags |= CHUNK_SCHED_SWITCHED;
		f->first_switch = it->timestamp;
	} else if (r->tid > 0) {
		thread_mark(r, r->tid, it->timestamp);
	}
	f->irq = (struct chunk_irq_fn){ .reset = true };
	if (prev > 0 && state >= 0)
		thread_switch(r, prev, it->timestamp, false, state);
	if (next > 0)
		thread_switch(r, next, it->timestamp, true, 0);
	r->switched = true;
	r->tid = next;
	f->last_switch = it->timestamp;
	f->prev_tid = prev;
	f->next_tid = next;
	f->next_prio = field(r, it, F_NEXT_PRIO, INT64_MIN);
	if (r->d->owner_fields) {
		f->owner_change = CHUNK_CPU_SET;
		f->owner = next;
	}
}

/* The owner a state dump names, if none is known (facts.c's compose()). */
static void on_dump_cpu(struct rt_schedrec *r, const struct rt_item *it)
{
	struct chunk_sched_frame *f = &r->cur;
	int32_t tid = (int32_t)field(r, it, F_TID, -1);

	if (!r->d->owner_fields)
		return;
	if (f->owner_change == CHUNK_CPU_SAME) {
		f->owner_change = CHUNK_CPU_FILL;
		f->owner = tid;
	} else if (f->owner < 0) {
		f->owner = tid;
	}
}

void rt_schedrec_item(struct rt_schedrec *r, const struct rt_item *it)
{
	struct chunk_sched_frame *f = &r->cur;
	struct chunk_irq_fn *irq = &f->irq;

	if (it->packet) {
		if (!r->have_packet) {
			f->first_seq = it->packet->seq;
			f->first_discarded = it->packet->events_discarded;
			r->have_packet = true;
		}
		f->last_seq = it->packet->seq;
		f->last_discarded = it->packet->events_discarded;
	}
	if (it->type == RT_ITEM_LOST) {
		if (it->lost_first)
			return;
		*irq = (struct chunk_irq_fn){ .reset = true };
		f->owner_change = CHUNK_CPU_SET;
		f->owner = -1;
		return;
	}
	if (it->type != RT_ITEM_EVENT)
		return;
	switch (kind_of(r, it->event)) {
	case S_SWITCH:
		on_switch(r, it);
		break;
	case S_WAKEUP:
		on_wakeup(r, it);
		break;
	case S_IRQ_ENTRY:
		irq->add++;
		break;
	case S_IRQ_EXIT:
		if (irq->add)
			irq->add--;
		else if (!irq->reset)
			irq->drop++;
		break;
	case S_DUMP_CPU:
		on_dump_cpu(r, it);
		break;
	case S_OTHER:
		break;
	}
}

void rt_schedrec_unlearnt(struct rt_schedrec *r)
{
	r->cur.flags |= CHUNK_SCHED_UNLEARNT;
}

static int by_tid(const void *a, const void *b)
{
	const struct chunk_sched_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

int rt_schedrec_peek(const struct rt_schedrec *r, struct chunk_sched_frame *f)
{
	*f = r->cur;
	f->threads = NULL;
	f->nr_threads = 0;
	if (r->oom)
		return -ENOMEM;
	if (f->flags & CHUNK_SCHED_UNLEARNT) {
		/* Nothing of it is believed: the seq numbers alone stay. */
		*f = (struct chunk_sched_frame){ .flags = CHUNK_SCHED_UNLEARNT,
			.first_seq = r->cur.first_seq, .first_discarded = r->cur.first_discarded,
			.last_seq = r->cur.last_seq, .last_discarded = r->cur.last_discarded };
		return 0;
	}
	if (!r->threads.used)
		return 0;
	f->threads = calloc(r->threads.used, sizeof(*f->threads));
	if (!f->threads)
		return -ENOMEM;
	for (size_t i = 0; i < r->threads.cap; i++) {
		const struct chunk_sched_thread *t = rt_tidmap_slot(&r->threads, i);

		if (t)
			f->threads[f->nr_threads++] = *t;
	}
	qsort(f->threads, f->nr_threads, sizeof(*f->threads), by_tid);
	return 0;
}

int rt_schedrec_end_frame(struct rt_schedrec *r, struct chunk_sched_frame *f)
{
	int err = rt_schedrec_peek(r, f);

	rt_tidmap_free(&r->threads);
	rt_tidmap_init(&r->threads, sizeof(struct chunk_sched_thread));
	r->cur = (struct chunk_sched_frame){ 0 };
	r->nr_evs = 0;
	r->have_packet = r->switched = r->oom = false;
	r->tid = 0;
	return err;
}
