// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup: a row per sched_wakeup, sched_wakeup_new and sched_waking --
 * ts, cpu, the waker (the thread the event belongs to), the wakee (its
 * tid field), target_cpu, event.  latency is set where report --stat
 * takes a wakeup-to-run sample: on the first sched_wakeup or
 * sched_wakeup_new of a thread not already waiting to run (sched_waking
 * never), to the next sched_switch that switches it in (next_tid > 0);
 * the wakeups between are rows with latency NULL, as are those whose
 * switch in never came.  waker_ctx is sched_waking's field of that name
 * (the context the waker ran in: 0 task, 1 softirq, 2 hardirq, 3 NMI),
 * NULL where the event has none (the other two events, older traces).  Like report, a wakeup at clock cycle 0 starts
 * no wait (report keeps 0 for "not woken"), and a wakeup of a thread
 * still running starts one (plan-31 D4).
 *
 * A row waiting for its switch in is given when it comes (or at the
 * member's end), so rows are not in ts order.  A ts range reads only the
 * time around it (spanq.h's checkpoints: a latency whose switch in comes
 * after the window is whole); SQLite still checks the terms.  cpu is not
 * pushed down (the switch in is on any CPU).  wakee_utid = X reads only
 * the trace it names and there, on each CPU, from the first scheduler
 * event naming X to the last (runidx.h): X's rows are made of its
 * wakeups and its switches in alone, and X's wait open at the read's
 * start is the checkpoint's; the term is still checked.  waker_utid = X
 * reads only the trace it names and there the time from X's first run to
 * its last (on any CPU), as a ts window does: its wakeups are events it
 * owns; the term is still checked.
 */
#include <stdlib.h>
#include <string.h>

#include "runidx.h"
#include "spanq.h"
#include "sqlcache.h"

enum {
	C_TS, C_CPU, C_WAKER, C_WAKEE, C_TARGET, C_EVENT, C_LATENCY, C_WAKER_CTX,
	C_TRACE, C_HOST,
};

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_WAKER] = { "waker_utid", "INTEGER", SQL_PUSH_WAKER },
	[C_WAKEE] = { "wakee_utid", "INTEGER", SQL_PUSH_UTID },
	[C_TARGET] = { "target_cpu", "INTEGER", SQL_PUSH_NONE },
	[C_EVENT] = { "event", "TEXT", SQL_PUSH_NONE },
	[C_LATENCY] = { "latency", "INTEGER", SQL_PUSH_NONE },
	[C_WAKER_CTX] = { "waker_ctx", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct wake {
	int32_t wakee;			/* first: the tidmap's key; -1 unknown */
	bool waiting;			/* a sample's row, its switch in to come */
	bool has_latency;
	int32_t waker;			/* -1 unknown */
	int64_t target;			/* -1: no such field */
	int64_t waker_ctx;		/* -1: no such field */
	unsigned int member;
	const char *event;		/* the event's name (metadata's, or wakeups[]) */
	uint64_t at;			/* clock cycles */
	int64_t ts;			/* ns */
	int64_t latency;		/* ns */
	uint32_t cpu;
};

struct wk {
	struct spanq q;			/* rows of struct wake */
	struct rt_tidmap waiting;	/* struct wake by wakee, of the member read */
	const struct wake *row;
};

static bool still_waiting(const void *row)
{
	return ((const struct wake *)row)->waiting;
}

static int cmp_at(const void *a, const void *b)
{
	const struct wake *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

static const struct spanq_ops wk_ops;

static int wk_filter(struct sql_cursor *c)
{
	static const char *const names[] = {
		"sched_wakeup", "sched_wakeup_new", "sched_waking", "sched_switch",
	};
	struct wk *w = c->priv;

	sql_want_events(c, names, ARRAY_SIZE(names));
	rt_tidmap_init(&w->waiting, sizeof(struct wake));
	/* waker_utid = X: the time from X's first run to its last, as a window. */
	if (runidx_waker_window(c))
		return -1;
	/* wakee_utid = X: where X is named alone, its rows being made of those events. */
	spanq_init(&w->q, c, &wk_ops, SCAN_EVENTS | SCAN_THREADS | SCAN_NAMED,
		   sizeof(struct wake));
	return 0;
}

static void wakeup(struct wk *w, const struct scan_row *r)
{
	const struct rt_item *it = r->it;
	int64_t tid = sql_item_s64(it, "tid", -1);
	struct wake k = {
		.wakee = tid < 0 || tid > INT32_MAX ? -1 : (int32_t)tid,
		.waker = r->tid, .target = sql_item_s64(it, "target_cpu", -1),
		.waker_ctx = sql_item_s64(it, "waker_ctx", -1),
		.member = r->member, .event = it->event->name, .at = it->timestamp,
		.ts = r->ts, .cpu = it->cpu,
	};
	struct wake *slot;
	bool created;

	if (k.wakee < 0 || !strcmp(k.event, "sched_waking") || !it->timestamp) {
		spanq_push(&w->q, &k);
		return;
	}
	slot = rt_tidmap_get(&w->waiting, k.wakee, &created);
	if (!slot)
		die("out of memory");
	if (slot->waiting) {		/* woken already: not a sample */
		spanq_push(&w->q, &k);
		return;
	}
	k.waiting = true;
	*slot = k;
}

static void switch_in(struct wk *w, struct sql_cursor *c, const struct scan_row *r)
{
	int64_t next = sql_item_s64(r->it, "next_tid", -1);
	struct wake *k;

	if (next <= 0 || next > INT32_MAX)
		return;
	k = rt_tidmap_find(&w->waiting, (int32_t)next);
	if (!k || !k->waiting)
		return;
	k->has_latency = true;
	k->latency = sql_cycles_ns(c, k->member, r->it->timestamp - k->at);
	k->waiting = false;
	spanq_push(&w->q, k);
}

static void wk_feed(struct sql_cursor *c, const struct scan_row *r)
{
	if (!strcmp(r->it->event->name, "sched_switch"))
		switch_in(c->priv, c, r);
	else
		wakeup(c->priv, r);
}

/* The member's waits never ended: rows without latency, in ts order. */
static void wk_member_end(struct sql_cursor *c)
{
	struct wk *w = c->priv;

	spanq_flush_tidmap(&w->q, &w->waiting, still_waiting, cmp_at);
}

static void *wk_save(struct sql_cursor *c, size_t *size)
{
	return spanq_save_tidmap(&((struct wk *)c->priv)->waiting, size);
}

static void wk_restore(struct sql_cursor *c, const void *state, size_t size)
{
	spanq_restore_tidmap(&((struct wk *)c->priv)->waiting, state, size);
}

static int64_t wk_row_ts(const void *row)
{
	return ((const struct wake *)row)->ts;
}

/* The events a row is made of, by their number on disk. */
static const char *const wakeups[] = { "sched_wakeup", "sched_wakeup_new", "sched_waking" };

/* A row on disk: wakee, flags, waker, event, target, waker_ctx, at, ts, latency, cpu, 0. */
#define WK_REC	64

static void wk_put(struct sqlcache_buf *b, const void *row)
{
	const struct wake *k = row;
	uint32_t event = 0;

	while (event < ARRAY_SIZE(wakeups) - 1 && strcmp(k->event, wakeups[event]))
		event++;
	sqlcache_put32(b, (uint32_t)k->wakee);
	sqlcache_put32(b, (uint32_t)k->waiting | (uint32_t)k->has_latency << 1);
	sqlcache_put32(b, (uint32_t)k->waker);
	sqlcache_put32(b, event);
	sqlcache_put64(b, (uint64_t)k->target);
	sqlcache_put64(b, (uint64_t)k->waker_ctx);
	sqlcache_put64(b, k->at);
	sqlcache_put64(b, (uint64_t)k->ts);
	sqlcache_put64(b, (uint64_t)k->latency);
	sqlcache_put32(b, k->cpu);
	sqlcache_put32(b, 0);
}

/* Checked: the tids or -1, the flags put() writes, one of wakeups[]. */
static bool wk_get(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b, void *row)
{
	struct wake *k = row;
	uint32_t flags, event;

	(void)c;
	k->member = m;
	k->wakee = (int32_t)sqlcache_get32(b);
	flags = sqlcache_get32(b);
	k->waiting = flags & 1;
	k->has_latency = flags & 2;
	k->waker = (int32_t)sqlcache_get32(b);
	event = sqlcache_get32(b);
	k->target = (int64_t)sqlcache_get64(b);
	k->waker_ctx = (int64_t)sqlcache_get64(b);
	k->at = sqlcache_get64(b);
	k->ts = (int64_t)sqlcache_get64(b);
	k->latency = (int64_t)sqlcache_get64(b);
	k->cpu = sqlcache_get32(b);
	if (sqlcache_get32(b) || b->bad || k->wakee < -1 || k->waker < -1 || flags > 3 ||
	    event >= ARRAY_SIZE(wakeups))
		return false;
	k->event = wakeups[event];
	return true;
}

static const struct spanq_ops wk_ops = {
	.feed = wk_feed, .member_end = wk_member_end,
	.save = wk_save, .restore = wk_restore, .row_ts = wk_row_ts,
	.put = wk_put, .get = wk_get, .rec = WK_REC,
};

static int wk_next(struct sql_cursor *c)
{
	struct wk *w = c->priv;

	return spanq_next(&w->q, (const void **)&w->row);
}

static void wk_reader(struct sql_cursor *c, struct share_reader *r)
{
	spanq_reader(&((struct wk *)c->priv)->q, r);
}

static unsigned int wk_member(const struct sql_cursor *c)
{
	return ((const struct wk *)c->priv)->row->member;
}

static void wk_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct wake *k = ((struct wk *)c->priv)->row;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, k->ts);
		break;
	case C_CPU:
		sql_out_int64(ctx, k->cpu);
		break;
	case C_WAKER:
		sql_result_utid(ctx, k->member, k->waker);
		break;
	case C_WAKEE:
		sql_result_utid(ctx, k->member, k->wakee);
		break;
	case C_TARGET:
		if (k->target < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, k->target);
		break;
	case C_WAKER_CTX:
		if (k->waker_ctx < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, k->waker_ctx);
		break;
	case C_EVENT:
		sql_out_text(ctx, k->event, -1, SQLITE_TRANSIENT);
		break;
	case C_LATENCY:
		if (!k->has_latency)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, k->latency);
		break;
	}
}

static void wk_reset(struct sql_cursor *c)
{
	struct wk *w = c->priv;

	spanq_free(&w->q);
	rt_tidmap_free(&w->waiting);
}

const struct sql_table sql_t_wakeup = {
	.name = "wakeup",
	.what = "wakeups, latency to the switch in where report --stat samples it",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct wk),
	.filter = wk_filter,
	.next = wk_next,
	.reader = wk_reader,
	.column = wk_column,
	.member = wk_member,
	.reset = wk_reset,
};
