// SPDX-License-Identifier: GPL-2.0
/*
 * syscall: a row per syscall_entry, paired with the exit as report --stat
 * pairs them: per thread, the entry opens a call, the next syscall_exit of
 * that thread with the same id (0..INT32_MAX) closes it (dur, end_ts,
 * ret).  An exit of another id leaves the call open; a second entry
 * before the exit ends the first one's row with dur NULL, as does the
 * end of the member (an entry without exit).  An exit with no open entry
 * of its id (its entry before the trace or lost) is no row: report does
 * not count it either.  Counted per name, Σdur and max(dur) of the rows
 * with a dur are report's two system call tables.
 *
 * A row is given when its call closes (or cannot), so rows are not in ts
 * order.  A ts or end_ts range reads only the time around it (spanq.h's
 * checkpoints: a call open since before the window, or closed after it,
 * is whole); SQLite still checks the terms.  cpu is not pushed down (a
 * call's exit may be on another CPU).  utid = X reads on each CPU only
 * from X's first run there to its last (runidx.c), as raw does: a call's
 * entry and exit are both X's own events, and X's calls open at the
 * read's start are the checkpoint's (the terms are still checked).
 */
#include <stdlib.h>
#include <string.h>

#include "spanq.h"
#include "sqlcache.h"

enum { C_TS, C_DUR, C_END_TS, C_UTID, C_CPU, C_ID, C_NAME, C_ARGS, C_RET, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_SPAN },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_ID] = { "id", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_ARGS] = { "args", "TEXT", SQL_PUSH_NONE },
	[C_RET] = { "ret", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

/* A call: open in a thread's slot, then a row. */
struct call {
	int32_t tid;			/* first: the tidmap's key; -1 unknown */
	bool open, closed;
	unsigned int member;
	int64_t id, ret;
	uint64_t start, end;		/* clock cycles */
	int64_t ts;			/* ns */
	uint32_t cpu;
	uint8_t nr_args;
	uint64_t args[6];
	const struct rt_field_desc *idf;	/* the id's labels */
	uint32_t event;			/* the entry's event id (idf's event) */
};

struct sc {
	struct spanq q;			/* rows of struct call */
	struct rt_tidmap open;		/* struct call by tid, of the member read */
	const struct call *row;
	struct buf args;		/* the row's args, its room kept */
};

static bool call_open(const void *row)
{
	return ((const struct call *)row)->open;
}

static int cmp_start(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct spanq_ops sc_ops;

static int sc_filter(struct sql_cursor *c)
{
	static const char *const names[] = { "syscall_entry", "syscall_exit" };
	struct sc *s = c->priv;

	sql_want_events(c, names, ARRAY_SIZE(names));
	rt_tidmap_init(&s->open, sizeof(struct call));
	/* utid = X: only X's runs (runidx.c), X's calls being its own events. */
	spanq_init(&s->q, c, &sc_ops, SCAN_EVENTS | SCAN_THREADS | SCAN_RUNS,
		   sizeof(struct call));
	return 0;
}

static void entry(struct sc *s, const struct scan_row *r)
{
	const struct rt_item *it = r->it;
	const struct rt_field_value *v = rt_item_field(it, "id", RT_USE_INT);
	const struct rt_field_value *a = rt_item_field(it, "args", RT_USE_INTS);
	struct call k = { .tid = r->tid, .open = true, .member = r->member,
			  .id = v ? rt_field_s64(v, 0) : -1, .start = it->timestamp,
			  .ts = r->ts, .cpu = it->cpu, .idf = v ? v->desc : NULL,
			  .event = it->event->id };
	struct call *slot;
	bool created;

	for (uint64_t i = 0; a && i < a->count && i < ARRAY_SIZE(k.args); i++)
		k.args[k.nr_args++] = rt_field_u64(a, i);
	if (r->tid < 0) {		/* no thread to pair it in */
		spanq_push(&s->q, &k);
		return;
	}
	slot = rt_tidmap_get(&s->open, r->tid, &created);
	if (!slot)
		die("out of memory");
	if (slot->open)			/* its exit never came */
		spanq_push(&s->q, slot);
	*slot = k;
}

static void leave(struct sc *s, const struct scan_row *r)
{
	struct call *k = r->tid < 0 ? NULL : rt_tidmap_find(&s->open, r->tid);
	int64_t id = sql_item_s64(r->it, "id", -1);

	if (!k || !k->open || k->id != id || id < 0 || id > INT32_MAX)
		return;
	k->closed = true;
	k->end = r->it->timestamp;
	k->ret = sql_item_s64(r->it, "ret", 0);
	spanq_push(&s->q, k);
	k->open = false;
}

static void sc_feed(struct sql_cursor *c, const struct scan_row *r)
{
	if (!strcmp(r->it->event->name, "syscall_entry"))
		entry(c->priv, r);
	else
		leave(c->priv, r);
}

/* The member's calls still open: rows without dur, in ts order. */
static void sc_member_end(struct sql_cursor *c)
{
	struct sc *s = c->priv;

	spanq_flush_tidmap(&s->q, &s->open, call_open, cmp_start);
}

static void *sc_save(struct sql_cursor *c, size_t *size)
{
	return spanq_save_tidmap(&((struct sc *)c->priv)->open, size);
}

static void sc_restore(struct sql_cursor *c, const void *state, size_t size)
{
	spanq_restore_tidmap(&((struct sc *)c->priv)->open, state, size);
}

static int64_t sc_row_ts(const void *row)
{
	return ((const struct call *)row)->ts;
}

/* A call on disk: tid, flags, id, ret, start, end, ts, cpu, nr_args, args, event, 0. */
#define SC_REC	112

static void sc_put(struct sqlcache_buf *b, const void *row)
{
	const struct call *k = row;

	sqlcache_put32(b, (uint32_t)k->tid);
	sqlcache_put32(b, (uint32_t)k->open | (uint32_t)k->closed << 1);
	sqlcache_put64(b, (uint64_t)k->id);
	sqlcache_put64(b, (uint64_t)k->ret);
	sqlcache_put64(b, k->start);
	sqlcache_put64(b, k->end);
	sqlcache_put64(b, (uint64_t)k->ts);
	sqlcache_put32(b, k->cpu);
	sqlcache_put32(b, k->nr_args);
	for (unsigned int i = 0; i < ARRAY_SIZE(k->args); i++)
		sqlcache_put64(b, k->args[i]);
	sqlcache_put32(b, k->idf ? k->event : UINT32_MAX);
	sqlcache_put32(b, 0);
}

/*
 * Checked: a tid or -1, the flags and argument count put() writes, the
 * id's labels those of member @m's syscall_entry.
 */
static bool sc_get(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b, void *row)
{
	struct call *k = row;
	uint32_t flags, nr_args, event;

	k->member = m;
	k->tid = (int32_t)sqlcache_get32(b);
	flags = sqlcache_get32(b);
	k->open = flags & 1;
	k->closed = flags & 2;
	k->id = (int64_t)sqlcache_get64(b);
	k->ret = (int64_t)sqlcache_get64(b);
	k->start = sqlcache_get64(b);
	k->end = sqlcache_get64(b);
	k->ts = (int64_t)sqlcache_get64(b);
	k->cpu = sqlcache_get32(b);
	nr_args = sqlcache_get32(b);
	for (unsigned int i = 0; i < ARRAY_SIZE(k->args); i++)
		k->args[i] = sqlcache_get64(b);
	event = sqlcache_get32(b);
	if (b->bad || k->tid < -1 || flags > 3 || nr_args > ARRAY_SIZE(k->args) ||
	    sqlcache_get32(b))
		return false;
	k->nr_args = (uint8_t)nr_args;
	if (event != UINT32_MAX) {
		const struct rt_event_desc *ev = rt_metadata_event(c->db->ts->m[m].t->md, event);
		int f = ev && !strcmp(ev->name, "syscall_entry") ?
			rt_event_field(ev, "id", RT_USE_INT) : -1;

		if (f < 0)
			return false;
		k->event = event;
		k->idf = &ev->fields[f];
	}
	return !b->bad;
}

static const struct spanq_ops sc_ops = {
	.feed = sc_feed, .member_end = sc_member_end,
	.save = sc_save, .restore = sc_restore, .row_ts = sc_row_ts,
	.put = sc_put, .get = sc_get, .rec = SC_REC,
};

static int sc_next(struct sql_cursor *c)
{
	struct sc *s = c->priv;

	return spanq_next(&s->q, (const void **)&s->row);
}

static void sc_reader(struct sql_cursor *c, struct share_reader *r)
{
	spanq_reader(&((struct sc *)c->priv)->q, r);
}

static unsigned int sc_member(const struct sql_cursor *c)
{
	return ((const struct sc *)c->priv)->row->member;
}

static void sc_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct call *k = ((struct sc *)c->priv)->row;
	const char *label;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, k->ts);
		break;
	case C_DUR:
	case C_END_TS:
		if (!k->closed)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, sql_cycles_ns(c, k->member, k->end - k->start) +
					     (col == C_END_TS ? k->ts : 0));
		break;
	case C_UTID:
		sql_result_utid(ctx, k->member, k->tid);
		break;
	case C_CPU:
		sql_out_int64(ctx, k->cpu);
		break;
	case C_ID:
		sql_out_int64(ctx, k->id);
		break;
	case C_NAME:
		label = k->idf ? rt_field_label(k->idf, k->id) : NULL;
		if (label)
			sql_out_text(ctx, label, -1, SQLITE_TRANSIENT);
		else
			sql_out_text(ctx, sqlite3_mprintf("%lld", (long long)k->id), -1,
					    sqlite3_free);
		break;
	case C_ARGS: {
		struct buf *b = &((struct sc *)c->priv)->args;

		b->len = 0;
		buf_u8(b, '[');
		for (unsigned int i = 0; i < k->nr_args; i++) {
			if (i)
				buf_u8(b, ',');
			buf_dec(b, k->args[i], false);
		}
		buf_u8(b, ']');
		sql_out_text(ctx, (const char *)b->p, (int)b->len, SQLITE_TRANSIENT);
		break;
	}
	case C_RET:
		if (!k->closed)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, k->ret);
		break;
	}
}

static void sc_reset(struct sql_cursor *c)
{
	struct sc *s = c->priv;

	spanq_free(&s->q);
	rt_tidmap_free(&s->open);
	free(s->args.p);
}

const struct sql_table sql_t_syscall = {
	.name = "syscall",
	.what = "system calls, entry and exit paired per thread (report --stat's)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct sc),
	.filter = sc_filter,
	.next = sc_next,
	.reader = sc_reader,
	.column = sc_column,
	.member = sc_member,
	.reset = sc_reset,
};
