// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup: a row per sched_wakeup, sched_wakeup_new and sched_waking --
 * ts, cpu, the waker (the thread the event belongs to), the wakee (its
 * tid field), target_cpu, event.  latency is set where report --stat
 * takes a wakeup-to-run sample: on the first sched_wakeup or
 * sched_wakeup_new of a thread not already waiting to run (sched_waking
 * never), to the next sched_switch that switches it in (next_tid > 0);
 * the wakeups between are rows with latency NULL, as are those whose
 * switch in never came.  Like report, a wakeup at clock cycle 0 starts
 * no wait (report keeps 0 for "not woken"), and a wakeup of a thread
 * still running starts one (plan-31 D4).
 *
 * A row waiting for its switch in is given when it comes (or at the
 * member's end), so rows are not in ts order; ts and cpu are not pushed
 * down (the switch in is on any CPU, after any window).
 */
#include <stdlib.h>
#include <string.h>

#include "sql.h"

enum { C_TS, C_CPU, C_WAKER, C_WAKEE, C_TARGET, C_EVENT, C_LATENCY, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_NONE },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_WAKER] = { "waker_utid", "INTEGER", SQL_PUSH_NONE },
	[C_WAKEE] = { "wakee_utid", "INTEGER", SQL_PUSH_NONE },
	[C_TARGET] = { "target_cpu", "INTEGER", SQL_PUSH_NONE },
	[C_EVENT] = { "event", "TEXT", SQL_PUSH_NONE },
	[C_LATENCY] = { "latency", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = { "trace", "INTEGER", SQL_PUSH_TRACE },
	[C_HOST] = { "host", "TEXT", SQL_PUSH_HOST },
};

struct wake {
	int32_t wakee;			/* first: the tidmap's key; -1 unknown */
	bool waiting;			/* a sample's row, its switch in to come */
	bool has_latency;
	int32_t waker;			/* -1 unknown */
	int64_t target;			/* -1: no such field */
	unsigned int member;
	const char *event;		/* the event's name (metadata's) */
	uint64_t at;			/* clock cycles */
	int64_t ts;			/* ns */
	int64_t latency;		/* ns */
	uint32_t cpu;
};

struct wk {
	struct scan *scan;
	struct rt_tidmap waiting;	/* struct wake by wakee, of the member read */
	unsigned int member;
	bool done;
	struct wake *q;			/* rows ready */
	size_t nr_q, cap_q, head;
	struct wake row;
};

static void queue(struct wk *w, const struct wake *k)
{
	if (w->nr_q == w->cap_q) {
		w->cap_q = w->cap_q ? 2 * w->cap_q : 64;
		w->q = realloc(w->q, w->cap_q * sizeof(*w->q));
		if (!w->q)
			die("out of memory");
	}
	w->q[w->nr_q++] = *k;
}

static int cmp_at(const void *a, const void *b)
{
	const struct wake *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* The member's waits never ended: rows without latency, in ts order. */
static void flush_waiting(struct wk *w)
{
	size_t first = w->nr_q;

	for (size_t i = 0; i < w->waiting.cap; i++) {
		struct wake *k = rt_tidmap_slot(&w->waiting, i);

		if (k && k->waiting)
			queue(w, k);
	}
	if (w->nr_q > first)	/* (none: q may be NULL) */
		qsort(w->q + first, w->nr_q - first, sizeof(*w->q), cmp_at);
	rt_tidmap_free(&w->waiting);
	rt_tidmap_init(&w->waiting, sizeof(struct wake));
}

static int wk_filter(struct sql_cursor *c)
{
	static const char *const names[] = {
		"sched_wakeup", "sched_wakeup_new", "sched_waking", "sched_switch",
	};
	struct wk *w = c->priv;

	c->spec.names = calloc(ARRAY_SIZE(names), sizeof(*c->spec.names));
	if (!c->spec.names)
		die("out of memory");
	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++)
		if (!(c->spec.names[i] = strdup(names[i])))
			die("out of memory");
	c->spec.nr_names = ARRAY_SIZE(names);
	c->spec.names_set = true;
	rt_tidmap_init(&w->waiting, sizeof(struct wake));
	w->scan = scan_open(c, SCAN_EVENTS | SCAN_THREADS);
	return 0;
}

static int64_t field(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : -1;
}

/* Nanoseconds of @cycles of member @m's clock. */
static int64_t dur_ns(const struct sql_cursor *c, unsigned int m, uint64_t cycles)
{
	return (int64_t)((unsigned __int128)cycles * 1000000000 /
			 c->db->ts->m[m].t->md->clock_freq);
}

static void wakeup(struct wk *w, const struct scan_row *r)
{
	const struct rt_item *it = r->it;
	int64_t tid = field(it, "tid");
	struct wake k = {
		.wakee = tid < 0 || tid > INT32_MAX ? -1 : (int32_t)tid,
		.waker = r->tid, .target = field(it, "target_cpu"),
		.member = r->member, .event = it->event->name, .at = it->timestamp,
		.ts = r->ts, .cpu = it->cpu,
	};
	struct wake *slot;
	bool created;

	if (k.wakee < 0 || !strcmp(k.event, "sched_waking") || !it->timestamp) {
		queue(w, &k);
		return;
	}
	slot = rt_tidmap_get(&w->waiting, k.wakee, &created);
	if (!slot)
		die("out of memory");
	if (slot->waiting) {		/* woken already: not a sample */
		queue(w, &k);
		return;
	}
	k.waiting = true;
	*slot = k;
}

static void switch_in(struct wk *w, struct sql_cursor *c, const struct scan_row *r)
{
	int64_t next = field(r->it, "next_tid");
	struct wake *k;

	if (next <= 0 || next > INT32_MAX)
		return;
	k = rt_tidmap_find(&w->waiting, (int32_t)next);
	if (!k || !k->waiting)
		return;
	k->has_latency = true;
	k->latency = dur_ns(c, k->member, r->it->timestamp - k->at);
	k->waiting = false;
	queue(w, k);
}

static int wk_next(struct sql_cursor *c)
{
	struct wk *w = c->priv;
	struct scan_row r;

	while (w->head == w->nr_q) {
		int rc;

		w->head = w->nr_q = 0;
		if (w->done)
			return 0;
		rc = scan_next(w->scan, &r);
		if (rc < 0)
			return -1;
		if (!rc || r.member != w->member) {
			flush_waiting(w);
			w->member = r.member;
			w->done = !rc;
			if (!rc)
				continue;
		}
		if (!strcmp(r.it->event->name, "sched_switch"))
			switch_in(w, c, &r);
		else
			wakeup(w, &r);
	}
	w->row = w->q[w->head++];
	return 1;
}

static void utid(sqlite3_context *ctx, unsigned int member, int32_t tid)
{
	if (tid < 0)
		sqlite3_result_null(ctx);
	else
		sqlite3_result_int64(ctx, (int64_t)member << 32 | tid);
}

static void wk_column(struct sql_cursor *c, sqlite3_context *ctx, int col)
{
	const struct wake *k = &((struct wk *)c->priv)->row;

	switch (col) {
	case C_TS:
		sqlite3_result_int64(ctx, k->ts);
		break;
	case C_CPU:
		sqlite3_result_int64(ctx, k->cpu);
		break;
	case C_WAKER:
		utid(ctx, k->member, k->waker);
		break;
	case C_WAKEE:
		utid(ctx, k->member, k->wakee);
		break;
	case C_TARGET:
		if (k->target < 0)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, k->target);
		break;
	case C_EVENT:
		sqlite3_result_text(ctx, k->event, -1, SQLITE_TRANSIENT);
		break;
	case C_LATENCY:
		if (!k->has_latency)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, k->latency);
		break;
	case C_TRACE:
		sqlite3_result_int64(ctx, k->member);
		break;
	case C_HOST:
		sql_result_host(c, ctx, k->member);
		break;
	}
}

static void wk_reset(struct sql_cursor *c)
{
	struct wk *w = c->priv;

	scan_close(w->scan);
	rt_tidmap_free(&w->waiting);
	free(w->q);
	*w = (struct wk){ 0 };
}

const struct sql_table sql_t_wakeup = {
	.name = "wakeup",
	.what = "wakeups, latency to the switch in where report --stat samples it",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct wk),
	.filter = wk_filter,
	.next = wk_next,
	.column = wk_column,
	.reset = wk_reset,
};
