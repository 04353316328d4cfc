// SPDX-License-Identifier: GPL-2.0
/* A scheduling walk's state from the packer's scheduler records (schedpack.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedpack.h"
#include "sql.h"

int sp_cpu_load(struct sp_cpu_records *c, uint32_t cpu, char *const *paths,
		size_t nr_paths, char *why, size_t size)
{
	struct chunk_index *ix = calloc(nr_paths + 1, sizeof(*ix));
	char err[256];
	int r = 0;

	memset(c, 0, sizeof(*c));
	c->cpu = cpu;
	c->files = calloc(nr_paths + 1, sizeof(*c->files));
	if (!c->files || !ix)
		die("out of memory");
	for (size_t i = 0; !r && i < nr_paths; i++, c->nr_files++) {
		r = rt_file_sched(paths[i], &c->files[i], &ix[i], err, sizeof(err));
		if (r)
			snprintf(why, size, "%s: %s", paths[i],
				 r > 0 ? "no scheduler records" : err);
		c->nr += c->files[i].n;
	}
	c->rec = calloc(c->nr + 1, sizeof(*c->rec));
	c->chunk_start = calloc(c->nr + 1, sizeof(*c->chunk_start));
	c->file = calloc(c->nr + 1, sizeof(*c->file));
	c->uoff = calloc(c->nr + 1, sizeof(*c->uoff));
	c->ts_begin = calloc(c->nr + 1, sizeof(*c->ts_begin));
	c->ts_end = calloc(c->nr + 1, sizeof(*c->ts_end));
	if (!c->rec || !c->chunk_start || !c->file || !c->uoff || !c->ts_begin || !c->ts_end)
		die("out of memory");
	c->nr = 0;
	for (size_t i = 0; !r && i < c->nr_files; i++)
		for (size_t k = 0; k < c->files[i].n; k++) {
			c->chunk_start[c->nr] = i && !k;
			c->file[c->nr] = i;
			c->uoff[c->nr] = ix[i].e[k].uoff;
			c->ts_begin[c->nr] = ix[i].e[k].ts_begin;
			c->ts_end[c->nr] = ix[i].e[k].ts_end;
			c->rec[c->nr++] = &c->files[i].f[k];
		}
	for (size_t i = 0; i < nr_paths; i++)
		chunk_index_free(&ix[i]);
	free(ix);
	if (r)
		sp_cpu_free(c);
	return r ? 1 : 0;
}

void sp_cpu_free(struct sp_cpu_records *c)
{
	for (size_t i = 0; i < c->nr_files; i++)
		chunk_sched_free(&c->files[i]);
	free(c->files);
	free(c->rec);
	free(c->chunk_start);
	free(c->file);
	free(c->uoff);
	free(c->ts_begin);
	free(c->ts_end);
	memset(c, 0, sizeof(*c));
}

void sp_state_free(struct sp_state *st)
{
	free(st->cpus);
	free(st->threads);
	memset(st, 0, sizeof(*st));
}

/*
 * Where an item is in the walk's order: time, then CPU; within a CPU its
 * frame, then (within a frame, at one time) a mark of the CPU's thread
 * from before the frame, a thread's last switch, what came after it.
 */
struct sp_key {
	uint64_t ts;
	uint32_t cpu;
	size_t frame;
	int phase;
};

enum { PH_START_MARK = -1, PH_SWITCH = 0, PH_AFTER = 1 };

static int key_cmp(const struct sp_key *a, const struct sp_key *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	if (a->frame != b->frame)
		return a->frame < b->frame ? -1 : 1;
	return (a->phase > b->phase) - (a->phase < b->phase);
}

/* A thread's last switch so far. */
struct sp_last {
	int32_t tid;			/* first: the tidmap's key */
	struct sp_key at;
	bool in;
	int64_t state;
};

enum { C_SWITCH, C_MARK, C_WAKE };

/*
 * A frame's first and last mark or wakeup of a thread (after its last
 * switch there); or, @detail, one switch, mark or wakeup of a frame
 * decoded (first == last), for when those do not tell.
 */
struct sp_cand {
	int32_t tid;
	int kind;
	struct sp_key first, last;
	int32_t target_cpu, waker;	/* C_WAKE: the first's */
	bool irq;
	bool detail;
	size_t group;			/* the frame's, one per record applied */
	size_t seq;			/* in the order made */
};

/* The frame a group of candidates came from. */
struct sp_group {
	size_t cpu, frame;
};

struct sp_build {
	struct rt_tidmap last;		/* struct sp_last */
	struct sp_cand *c;
	size_t nr, cap;
	size_t groups;
	struct sp_group *group;		/* by group */
	size_t cap_groups;
	bool *decoded;			/* by group: its details were needed */
	size_t nr_decoded;
	struct sp_need need;		/* the frame to decode, when one does not tell */
};

/* The frame of @in[@cpu] whose record is applied next: group b->groups + 1. */
static void group_new(struct sp_build *b, size_t cpu, size_t frame)
{
	if (b->groups == b->cap_groups) {
		b->cap_groups = b->cap_groups ? 2 * b->cap_groups : 256;
		b->group = reallocarray(b->group, b->cap_groups, sizeof(*b->group));
		if (!b->group)
			die("out of memory");
	}
	b->group[b->groups++] = (struct sp_group){ cpu, frame };
}

/*
 * Group @g's frame must be decoded (@g == SIZE_MAX: decoding would not
 * tell).  Groups count from 1, as cand() gives them out.
 */
static void needs(struct sp_build *b, size_t g)
{
	if (g == SIZE_MAX || !g)
		b->need = (struct sp_need){ .known = false };
	else
		b->need = (struct sp_need){ .known = true, .cpu = b->group[g - 1].cpu,
					    .frame = b->group[g - 1].frame };
}

static struct sp_cand *cand(struct sp_build *b, int32_t tid, int kind)
{
	struct sp_cand *x;

	if (b->nr == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->c = reallocarray(b->c, b->cap, sizeof(*b->c));
		if (!b->c)
			die("out of memory");
	}
	x = &b->c[b->nr];
	memset(x, 0, sizeof(*x));
	x->tid = tid;
	x->kind = kind;
	x->group = b->groups;
	x->seq = b->nr++;
	return x;
}

/* The decoder's rule: a packet follows the one before (else a loss comes first). */
static bool follows(const struct chunk_sched_frame *prev, const struct chunk_sched_frame *r)
{
	return r->first_seq == prev->last_seq + 1 && r->first_discarded == prev->last_discarded;
}

/* One CPU's composition: who runs there, its depth, its events' owner. */
struct sp_run {
	struct sp_cpu_state st;
	bool seen;			/* a switch or an interrupt depth to tell */
	int32_t owner;
};

/*
 * A wakeup's owner and interrupt context, from its CPU's at the frame's
 * start (or its waker_ctx: _T_WAKE_CTX).
 */
static void wake_from(struct sp_cand *x, const struct sp_run *run, uint32_t flags,
		      int32_t waker, const struct chunk_irq_fn *irq)
{
	x->waker = flags & CHUNK_SCHED_T_WAKER_START ? run->owner :
		   flags & CHUNK_SCHED_T_WAKER_FILL && run->owner >= 0 ? run->owner : waker;
	x->irq = (flags & CHUNK_SCHED_T_WAKE_CTX) || chunk_irq_apply(irq, run->st.irqs) > 0;
}

/* What frame @f of CPU @run holds of threads, decoded (@ev), as details. */
static void details(struct sp_build *b, const struct sp_run *run, size_t f,
		    const struct sp_events *ev)
{
	static const int kinds[] = { [RT_SCHED_SWITCH] = C_SWITCH, [RT_SCHED_MARK] = C_MARK,
				     [RT_SCHED_WAKE] = C_WAKE };

	for (size_t i = 0; i < ev->nr; i++) {
		const struct rt_sched_event *e = &ev->ev[i];
		struct sp_cand *x = cand(b, e->tid, kinds[e->kind]);

		x->detail = true;
		x->first = x->last = (struct sp_key){ e->ts, run->st.cpu, f, PH_AFTER };
		if (e->kind == RT_SCHED_WAKE) {
			x->target_cpu = e->target_cpu;
			wake_from(x, run, e->flags, e->waker, &e->irq);
		}
	}
}

/*
 * Record @r, frame @f of CPU @run, into @b (@ev: the frame decoded, or
 * NULL): 0, or 1 (decode it).
 */
static int apply(struct sp_build *b, struct sp_run *run, const struct chunk_sched_frame *r,
		 size_t k, size_t f, bool lost_before, const struct sp_events *ev)
{
	uint32_t cpu = run->st.cpu;

	group_new(b, k, f);
	if (r->flags & CHUNK_SCHED_UNLEARNT) {
		needs(b, b->groups);
		return 1;
	}
	if (lost_before) {
		run->st.irqs = 0;
		run->owner = -1;
	}
	if ((r->flags & CHUNK_SCHED_SWITCHED) && run->st.tid > 0) {
		struct sp_cand *x = cand(b, run->st.tid, C_MARK);

		x->first = x->last = (struct sp_key){ r->first_switch, cpu, f, PH_START_MARK };
	}
	for (uint32_t i = 0; i < r->nr_threads; i++) {
		const struct chunk_sched_thread *t = &r->threads[i];

		if (t->flags & CHUNK_SCHED_T_SWITCH) {
			struct sp_key at = { t->switch_ts, cpu, f, PH_SWITCH };
			bool created;
			struct sp_last *l = rt_tidmap_get(&b->last, t->tid, &created);

			if (!l)
				die("out of memory");
			if (created || key_cmp(&at, &l->at) > 0) {
				l->at = at;
				l->in = t->flags & CHUNK_SCHED_T_IN;
				l->state = t->state;
			}
		}
		if (t->flags & CHUNK_SCHED_T_MARK) {
			struct sp_cand *x = cand(b, t->tid, C_MARK);

			x->first = (struct sp_key){ t->mark_ts, cpu, f, PH_AFTER };
			x->last = (struct sp_key){ t->mark_last, cpu, f, PH_AFTER };
		}
		if (t->flags & CHUNK_SCHED_T_WAKE) {
			struct sp_cand *x = cand(b, t->tid, C_WAKE);

			x->first = (struct sp_key){ t->wake_ts, cpu, f, PH_AFTER };
			x->last = (struct sp_key){ t->wake_last, cpu, f, PH_AFTER };
			x->target_cpu = t->target_cpu;
			wake_from(x, run, t->flags, t->waker, &t->wake_irq);
		}
	}
	if (ev && ev->ev)
		details(b, run, f, ev);
	if (r->flags & CHUNK_SCHED_SWITCHED) {
		run->st.tid = r->next_tid;
		run->st.since = run->st.switch_ts = r->last_switch;
		run->st.prio = r->next_prio == INT64_MIN ? INT64_MIN : r->next_prio + 100;
		run->st.switch_prev = r->prev_tid;
		run->seen = true;
	}
	run->st.irqs = chunk_irq_apply(&r->irq, run->st.irqs);
	if (r->owner_change == CHUNK_CPU_SET ||
	    (r->owner_change == CHUNK_CPU_FILL && run->owner < 0))
		run->owner = r->owner;
	return 0;
}

static int by_tid(const void *a, const void *b)
{
	const struct sp_cand *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* By thread, then in the order made. */
static int by_tid_seq(const void *a, const void *b)
{
	const struct sp_cand *x = a, *y = b;

	return x->tid != y->tid ? (x->tid > y->tid) - (x->tid < y->tid) :
				  (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * The first detail of @kind after @p of group @g in @c[0..n) (one
 * thread's, in the order made) -- after the thread's last switch in that
 * frame: what the record's first and last are of -- into *@out: 0, or 1
 * when the frame was not decoded or @p is one of its items.
 */
static int from_details(struct sp_build *b, const struct sp_cand *c, size_t n, size_t g,
			int kind, const struct sp_key *p, const struct sp_cand **out)
{
	size_t from = 0;
	bool any = false;

	for (size_t i = 0; i < n; i++)
		if (c[i].detail && c[i].group == g) {
			any = true;
			if (c[i].kind == C_SWITCH)
				from = i + 1;
		}
	if (!any) {
		needs(b, g);
		return 1;
	}
	if (!b->decoded[g]) {
		b->decoded[g] = true;
		b->nr_decoded++;
	}
	for (size_t i = from; i < n; i++) {
		int cmp;

		if (!c[i].detail || c[i].group != g || c[i].kind != kind)
			continue;
		cmp = key_cmp(&c[i].first, p);
		if (!cmp) {
			needs(b, SIZE_MAX);
			return 1;
		}
		if (cmp > 0) {
			if (!*out || key_cmp(&c[i].first, &(*out)->first) < 0)
				*out = &c[i];
			break;
		}
	}
	return 0;
}

/*
 * The first of @c[0..n) of @kind after @p (NULL: any): 0 with *@out (NULL
 * none), 1 when a frame's first and last lie on both sides of @p and the
 * frame is not decoded.
 */
static int first_after(struct sp_build *b, const struct sp_cand *c, size_t n, int kind,
		       const struct sp_key *p, const struct sp_cand **out)
{
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (c[i].kind != kind || c[i].detail)
			continue;
		if (!p || key_cmp(&c[i].first, p) > 0) {
			if (!*out || key_cmp(&c[i].first, &(*out)->first) < 0)
				*out = &c[i];
		} else if ((key_cmp(&c[i].last, p) > 0 || !key_cmp(&c[i].first, p)) &&
			   from_details(b, c, n, c[i].group, kind, p, out)) {
			return 1;
		}
	}
	return 0;
}

/* Thread @tid's state from its last switch @l (NULL: none) and @c[0..n). */
static int thread_state(struct sp_build *b, int32_t tid, const struct sp_last *l,
			const struct sp_cand *c, size_t n, struct sp_thread_state *t)
{
	const struct sp_cand *m = NULL, *w = NULL;
	const struct sp_key *from = l ? &l->at : NULL;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	if (l && l->in) {
		if (first_after(b, c, n, C_MARK, from, &m))
			return 1;
		if (!m) {
			t->running = true;
			return 0;
		}
		from = &m->first;
	} else if (l) {
		t->open = true;
		t->state = l->state;
		t->since = l->at.ts;
		t->cpu = (int32_t)l->at.cpu;
		t->waker = -1;
		/* Runnable (R, R+): no wakeup counts. */
		if (!(l->state & 0xff))
			return 0;
	}
	if (first_after(b, c, n, C_WAKE, from, &w))
		return 1;
	if (w) {
		t->open = true;
		t->state = 0;
		t->since = w->first.ts;
		t->cpu = w->target_cpu;
		t->waker = w->waker;
		t->irq = w->irq;
	}
	return 0;
}

static int threads_out(struct sp_build *b, struct sp_state *st)
{
	size_t cap = b->last.used + b->nr + 1;

	st->threads = calloc(cap, sizeof(*st->threads));
	if (!st->threads)
		return -ENOMEM;
	b->decoded = calloc(b->groups + 1, sizeof(*b->decoded));
	if (!b->decoded)
		return -ENOMEM;
	qsort(b->c, b->nr, sizeof(*b->c), by_tid_seq);
	/* Threads with candidates, then those with a switch alone. */
	for (size_t i = 0, j; i < b->nr; i = j) {
		struct sp_thread_state t;

		for (j = i; j < b->nr && b->c[j].tid == b->c[i].tid; j++)
			;
		if (thread_state(b, b->c[i].tid, rt_tidmap_find(&b->last, b->c[i].tid),
				 &b->c[i], j - i, &t))
			return 1;
		if (t.running || t.open)
			st->threads[st->nr_threads++] = t;
	}
	for (size_t i = 0; i < b->last.cap; i++) {
		const struct sp_last *l = rt_tidmap_slot(&b->last, i);
		struct sp_cand key = { 0 };
		struct sp_thread_state t;

		if (!l)
			continue;
		key.tid = l->tid;
		if (b->nr && bsearch(&key, b->c, b->nr, sizeof(*b->c), by_tid))
			continue;
		if (thread_state(b, l->tid, l, NULL, 0, &t))
			return 1;
		if (t.running || t.open)
			st->threads[st->nr_threads++] = t;
	}
	qsort(st->threads, st->nr_threads, sizeof(*st->threads), by_tid);
	return 0;
}

int schedpack_state(const struct sp_input *in, size_t nr, struct sp_state *st,
		    size_t *decoded, struct sp_need *need)
{
	struct sp_build b = { 0 };
	int r = 0;

	_Static_assert(offsetof(struct sp_thread_state, tid) == 0 &&
		       offsetof(struct sp_cand, tid) == 0, "by_tid() sorts both");
	memset(st, 0, sizeof(*st));
	rt_tidmap_init(&b.last, sizeof(struct sp_last));
	st->cpus = calloc(nr + 1, sizeof(*st->cpus));
	if (!st->cpus)
		return -ENOMEM;
	for (size_t k = 0; !r && k < nr; k++) {
		const struct sp_input *c = &in[k];
		struct sp_run run = { .st = { .cpu = c->cpu, .tid = -1, .prio = 0,
					      .switch_prev = -1 }, .owner = -1 };

		for (size_t i = 0; !r && i < c->nr; i++)
			r = apply(&b, &run, c->rec[i], k, i,
				  c->chunk_start[i] && !follows(c->rec[i - 1], c->rec[i]),
				  c->events ? &c->events[i] : NULL);
		if (!r && c->partial)
			r = apply(&b, &run, c->partial, k, c->nr,
				  c->partial_start && c->nr && !follows(c->rec[c->nr - 1], c->partial),
				  c->events ? &c->events[c->nr] : NULL);
		if (run.seen || run.st.irqs)
			st->cpus[st->nr_cpus++] = run.st;
	}
	if (!r)
		r = threads_out(&b, st);
	if (decoded)
		*decoded = b.nr_decoded;
	if (need)
		*need = b.need;
	rt_tidmap_free(&b.last);
	free(b.c);
	free(b.group);
	free(b.decoded);
	if (r)
		sp_state_free(st);
	return r;
}
