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
 * order; ts and cpu are not pushed down (a call's exit may be on another
 * CPU, after any window).
 */
#include <stdlib.h>
#include <string.h>

#include "sql.h"

enum { C_TS, C_DUR, C_END_TS, C_UTID, C_CPU, C_ID, C_NAME, C_ARGS, C_RET, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_NONE },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_NONE },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_NONE },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_ID] = { "id", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_ARGS] = { "args", "TEXT", SQL_PUSH_NONE },
	[C_RET] = { "ret", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = { "trace", "INTEGER", SQL_PUSH_TRACE },
	[C_HOST] = { "host", "TEXT", SQL_PUSH_HOST },
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
};

struct sc {
	struct scan *scan;
	struct rt_tidmap open;		/* struct call by tid, of the member read */
	unsigned int member;
	bool done;
	struct call *q;			/* rows ready */
	size_t nr_q, cap_q, head;
	struct call row;
};

static void queue(struct sc *s, const struct call *k)
{
	if (s->nr_q == s->cap_q) {
		s->cap_q = s->cap_q ? 2 * s->cap_q : 64;
		s->q = realloc(s->q, s->cap_q * sizeof(*s->q));
		if (!s->q)
			die("out of memory");
	}
	s->q[s->nr_q++] = *k;
}

static int cmp_start(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The member's calls still open: rows without dur, in ts order. */
static void flush_open(struct sc *s)
{
	size_t first = s->nr_q;

	for (size_t i = 0; i < s->open.cap; i++) {
		struct call *k = rt_tidmap_slot(&s->open, i);

		if (k && k->open)
			queue(s, k);
	}
	if (s->nr_q > first)	/* (none: q may be NULL) */
		qsort(s->q + first, s->nr_q - first, sizeof(*s->q), cmp_start);
	rt_tidmap_free(&s->open);
	rt_tidmap_init(&s->open, sizeof(struct call));
}

static int sc_filter(struct sql_cursor *c)
{
	static const char *const names[] = { "syscall_entry", "syscall_exit" };
	struct sc *s = c->priv;

	c->spec.names = calloc(ARRAY_SIZE(names), sizeof(*c->spec.names));
	if (!c->spec.names)
		die("out of memory");
	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++)
		if (!(c->spec.names[i] = strdup(names[i])))
			die("out of memory");
	c->spec.nr_names = ARRAY_SIZE(names);
	c->spec.names_set = true;
	rt_tidmap_init(&s->open, sizeof(struct call));
	s->scan = scan_open(c, SCAN_EVENTS | SCAN_THREADS);
	return 0;
}

static int64_t field(const struct rt_item *it, const char *name, int64_t none)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : none;
}

static void entry(struct sc *s, const struct scan_row *r)
{
	const struct rt_item *it = r->it;
	const struct rt_field_value *v = rt_item_field(it, "id", RT_USE_INT);
	const struct rt_field_value *a = rt_item_field(it, "args", RT_USE_INTS);
	struct call k = { .tid = r->tid, .open = true, .member = r->member,
			  .id = v ? rt_field_s64(v, 0) : -1, .start = it->timestamp,
			  .ts = r->ts, .cpu = it->cpu, .idf = v ? v->desc : NULL };
	struct call *slot;
	bool created;

	for (uint64_t i = 0; a && i < a->count && i < ARRAY_SIZE(k.args); i++)
		k.args[k.nr_args++] = rt_field_u64(a, i);
	if (r->tid < 0) {		/* no thread to pair it in */
		queue(s, &k);
		return;
	}
	slot = rt_tidmap_get(&s->open, r->tid, &created);
	if (!slot)
		die("out of memory");
	if (slot->open)			/* its exit never came */
		queue(s, slot);
	*slot = k;
}

static void leave(struct sc *s, const struct scan_row *r)
{
	struct call *k = r->tid < 0 ? NULL : rt_tidmap_find(&s->open, r->tid);
	int64_t id = field(r->it, "id", -1);

	if (!k || !k->open || k->id != id || id < 0 || id > INT32_MAX)
		return;
	k->closed = true;
	k->end = r->it->timestamp;
	k->ret = field(r->it, "ret", 0);
	queue(s, k);
	k->open = false;
}

static int sc_next(struct sql_cursor *c)
{
	struct sc *s = c->priv;
	struct scan_row r;

	while (s->head == s->nr_q) {
		int rc;

		s->head = s->nr_q = 0;
		if (s->done)
			return 0;
		rc = scan_next(s->scan, &r);
		if (rc < 0)
			return -1;
		if (!rc || r.member != s->member) {
			flush_open(s);
			s->member = r.member;
			s->done = !rc;
			if (!rc)
				continue;
		}
		if (!strcmp(r.it->event->name, "syscall_entry"))
			entry(s, &r);
		else
			leave(s, &r);
	}
	s->row = s->q[s->head++];
	return 1;
}

/* Nanoseconds of @cycles of member @m's clock. */
static int64_t dur_ns(const struct sql_cursor *c, unsigned int m, uint64_t cycles)
{
	return (int64_t)((unsigned __int128)cycles * 1000000000 /
			 c->db->ts->m[m].t->md->clock_freq);
}

static void sc_column(struct sql_cursor *c, sqlite3_context *ctx, int col)
{
	const struct call *k = &((struct sc *)c->priv)->row;
	const char *label;

	switch (col) {
	case C_TS:
		sqlite3_result_int64(ctx, k->ts);
		break;
	case C_DUR:
	case C_END_TS:
		if (!k->closed)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, dur_ns(c, k->member, k->end - k->start) +
					     (col == C_END_TS ? k->ts : 0));
		break;
	case C_UTID:
		if (k->tid < 0)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, (int64_t)k->member << 32 | k->tid);
		break;
	case C_CPU:
		sqlite3_result_int64(ctx, k->cpu);
		break;
	case C_ID:
		sqlite3_result_int64(ctx, k->id);
		break;
	case C_NAME:
		label = k->idf ? rt_field_label(k->idf, k->id) : NULL;
		if (label)
			sqlite3_result_text(ctx, label, -1, SQLITE_TRANSIENT);
		else
			sqlite3_result_text(ctx, sqlite3_mprintf("%lld", (long long)k->id), -1,
					    sqlite3_free);
		break;
	case C_ARGS: {
		sqlite3_str *b = sqlite3_str_new(NULL);

		sqlite3_str_appendchar(b, 1, '[');
		for (unsigned int i = 0; i < k->nr_args; i++)
			sqlite3_str_appendf(b, "%s%llu", i ? "," : "",
					    (unsigned long long)k->args[i]);
		sqlite3_str_appendchar(b, 1, ']');
		sqlite3_result_text(ctx, sqlite3_str_finish(b), -1, sqlite3_free);
		break;
	}
	case C_RET:
		if (!k->closed)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, k->ret);
		break;
	case C_TRACE:
		sqlite3_result_int64(ctx, k->member);
		break;
	case C_HOST:
		sql_result_host(c, ctx, k->member);
		break;
	}
}

static void sc_reset(struct sql_cursor *c)
{
	struct sc *s = c->priv;

	scan_close(s->scan);
	rt_tidmap_free(&s->open);
	free(s->q);
	*s = (struct sc){ 0 };
}

const struct sql_table sql_t_syscall = {
	.name = "syscall",
	.what = "system calls, entry and exit paired per thread (report --stat's)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct sc),
	.filter = sc_filter,
	.next = sc_next,
	.column = sc_column,
	.reset = sc_reset,
};
