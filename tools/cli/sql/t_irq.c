// SPDX-License-Identifier: GPL-2.0
/*
 * irq and softirq: a row per irq_handler_entry (irq_softirq_entry), a
 * slice to the exit of the same number on that CPU.  Each CPU keeps a
 * stack of the slices open there, so a nested one closes first; an exit
 * closes the innermost open slice of its number and ends those opened
 * inside it with dur NULL (their exits lost), as a loss on the CPU and
 * the member's end do for every slice still open.  An exit with no open
 * entry is no row.  depth is how many slices were open under it; utid
 * the thread it interrupted (the one running on the CPU, report's owner
 * of the entry).  Counted, the rows are the entry events' counts.
 *
 * A row is given when its slice closes, so rows are not in ts order; cpu
 * is pushed down (a slice is one CPU's); a ts or end_ts range reads only
 * the time around it (spanq.h's checkpoints, built per set of CPUs read),
 * SQLite still checking the terms.
 */
#include <stdlib.h>
#include <string.h>

#include "spanq.h"
#include "sqlcache.h"

enum {
	C_TS, C_DUR, C_END_TS, C_CPU, C_UTID, C_NUM, C_NAME, C_DEPTH, C_TRACE, C_HOST,
	C_RET,				/* irq only */
};

static const struct sql_column irq_cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_SPAN },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_NUM] = { "irq", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_DEPTH] = { "depth", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
	[C_RET] = { "ret", "INTEGER", SQL_PUSH_NONE },
};

static const struct sql_column softirq_cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_SPAN },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_NUM] = { "vec", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_DEPTH] = { "depth", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

/* The kernel's softirq_to_name[], for a trace whose vec has no labels. */
static const char *const softirq_names[] = {
	"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET",
	"SCHED", "HRTIMER", "RCU",
};

#define MAX_DEPTH	16

struct slice {
	bool closed;
	unsigned int member;
	uint32_t cpu, depth;
	int32_t tid;			/* -1 unknown */
	int64_t num, ret;
	uint64_t start, end;		/* clock cycles */
	int64_t ts;			/* ns */
	char name[32];
};

struct cpu_stack {
	struct slice s[MAX_DEPTH];
	unsigned int n;
};

struct ir {
	bool soft;
	const char *entry, *exit;	/* the events' names */
	struct spanq q;			/* rows of struct slice */
	struct cpu_stack *cpus;		/* by the member's CPU index */
	unsigned int nr_cpus;
	const struct slice *row;
};

/* CPU @i's slices from depth @from up, ended without exit (innermost last). */
static void cut(struct ir *r, unsigned int i, unsigned int from)
{
	struct cpu_stack *st = &r->cpus[i];

	for (unsigned int k = from; k < st->n; k++)
		spanq_push(&r->q, &st->s[k]);
	if (st->n > from)
		st->n = from;
}

static void cut_all(struct ir *r)
{
	for (unsigned int i = 0; i < r->nr_cpus; i++)
		cut(r, i, 0);
}

static const struct spanq_ops ir_ops;

static int filter(struct sql_cursor *c, bool soft)
{
	struct ir *r = c->priv;

	r->soft = soft;
	r->entry = soft ? "irq_softirq_entry" : "irq_handler_entry";
	r->exit = soft ? "irq_softirq_exit" : "irq_handler_exit";
	sql_want_events(c, (const char *const[]){ r->entry, r->exit }, 2);
	r->nr_cpus = c->db->cpu_slots;
	r->cpus = calloc(r->nr_cpus, sizeof(*r->cpus));
	if (!r->cpus)
		die("out of memory");
	spanq_init(&r->q, c, &ir_ops, SCAN_EVENTS | SCAN_LOSSES | SCAN_THREADS,
		   sizeof(struct slice));
	return 0;
}

static int irq_filter(struct sql_cursor *c)
{
	return filter(c, false);
}

static int softirq_filter(struct sql_cursor *c)
{
	return filter(c, true);
}

static void slice_name(struct ir *r, const struct rt_item *it, struct slice *k)
{
	const struct rt_field_value *v;
	const char *label;

	if (r->soft) {
		v = rt_item_field(it, "vec", RT_USE_INT);
		label = v && v->desc->nr_labels ? rt_field_label(v->desc, k->num) : NULL;
		if (!label && k->num >= 0 && k->num < (int64_t)ARRAY_SIZE(softirq_names))
			label = softirq_names[k->num];
		snprintf(k->name, sizeof(k->name), "%s", label ? label : "");
		return;
	}
	v = rt_item_field(it, "name", RT_USE_TEXT);
	if (v)
		snprintf(k->name, sizeof(k->name), "%.*s",
			 (int)(v->count < sizeof(k->name) ? v->count : sizeof(k->name) - 1),
			 (const char *)v->data);
}

static void ir_feed(struct sql_cursor *c, const struct scan_row *row)
{
	struct ir *r = c->priv;
	const struct rt_item *it = row->it;
	const char *num = r->soft ? "vec" : "irq";
	struct cpu_stack *st;
	int i;

	if (!it)		/* a gap between chunk sets: nothing on a CPU */
		return;
	i = trace_cpu_index(c->db->ts->m[row->member].t, it->cpu);
	if (i < 0 || (unsigned int)i >= r->nr_cpus)
		return;
	st = &r->cpus[i];
	if (it->type == RT_ITEM_LOST) {	/* the exits may be in the loss */
		cut(r, (unsigned int)i, 0);
		return;
	}
	if (!strcmp(it->event->name, r->entry)) {
		struct slice k = {
			.member = row->member, .cpu = it->cpu, .depth = st->n,
			.tid = row->tid, .num = sql_item_s64(it, num, -1),
			.start = it->timestamp, .ts = row->ts,
		};

		slice_name(r, it, &k);
		if (st->n == MAX_DEPTH)	/* deeper than interrupts nest */
			spanq_push(&r->q, &k);
		else
			st->s[st->n++] = k;
		return;
	}
	for (unsigned int d = st->n; d-- > 0;) {
		struct slice *k = &st->s[d];

		if (k->num != sql_item_s64(it, num, -1))
			continue;
		cut(r, (unsigned int)i, d + 1);
		k->closed = true;
		k->end = it->timestamp;
		k->ret = sql_item_s64(it, "ret", 0);
		spanq_push(&r->q, k);
		st->n = d;
		return;
	}
}

static void ir_member_end(struct sql_cursor *c)
{
	cut_all(c->priv);
}

/* The slices open: CPU by CPU, outermost first. */
static void *ir_save(struct sql_cursor *c, size_t *size)
{
	struct ir *r = c->priv;
	struct slice *b;
	size_t n = 0;

	for (unsigned int i = 0; i < r->nr_cpus; i++)
		n += r->cpus[i].n;
	b = malloc(n * sizeof(*b) + 1);
	if (!b)
		die("out of memory");
	n = 0;
	for (unsigned int i = 0; i < r->nr_cpus; i++)
		for (unsigned int d = 0; d < r->cpus[i].n; d++)
			b[n++] = r->cpus[i].s[d];
	*size = n * sizeof(*b);
	return b;
}

/*
 * Each slice entered again on its CPU, at the depth it comes at (what
 * ir_save() gave: the depths it had).  One on no CPU of its member, or
 * deeper than a CPU keeps, is none (a save never holds one).
 */
static void ir_restore(struct sql_cursor *c, const void *state, size_t size)
{
	const struct slice *k = state;
	struct ir *r = c->priv;

	for (unsigned int i = 0; i < r->nr_cpus; i++)
		r->cpus[i].n = 0;
	for (size_t j = 0; j < size / sizeof(*k); j++) {
		int i = trace_cpu_index(c->db->ts->m[k[j].member].t, k[j].cpu);
		struct cpu_stack *st;

		if (i < 0 || (unsigned int)i >= r->nr_cpus || r->cpus[i].n == MAX_DEPTH)
			continue;
		st = &r->cpus[i];
		st->s[st->n] = k[j];
		st->s[st->n].depth = st->n;
		st->n++;
	}
}

static int64_t ir_row_ts(const void *row)
{
	return ((const struct slice *)row)->ts;
}

/* A slice on disk: closed, cpu, depth, tid, num, ret, start, end, ts, name. */
#define IR_REC	(56 + sizeof(((struct slice *)0)->name))

static void ir_put(struct sqlcache_buf *b, const void *row)
{
	const struct slice *k = row;

	sqlcache_put32(b, k->closed);
	sqlcache_put32(b, k->cpu);
	sqlcache_put32(b, k->depth);
	sqlcache_put32(b, (uint32_t)k->tid);
	sqlcache_put64(b, (uint64_t)k->num);
	sqlcache_put64(b, (uint64_t)k->ret);
	sqlcache_put64(b, k->start);
	sqlcache_put64(b, k->end);
	sqlcache_put64(b, (uint64_t)k->ts);
	sqlcache_put(b, k->name, sizeof(k->name));
}

/*
 * Checked: a CPU of member @m that the table keeps a stack for, a depth
 * up to MAX_DEPTH (a slice deeper than that is a row at once), a tid or
 * -1, the name ended.
 */
static bool ir_get(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b, void *row)
{
	const struct ir *r = c->priv;
	struct slice *k = row;
	uint32_t closed = sqlcache_get32(b);
	int i;

	k->member = m;
	k->closed = closed;
	k->cpu = sqlcache_get32(b);
	k->depth = sqlcache_get32(b);
	k->tid = (int32_t)sqlcache_get32(b);
	k->num = (int64_t)sqlcache_get64(b);
	k->ret = (int64_t)sqlcache_get64(b);
	k->start = sqlcache_get64(b);
	k->end = sqlcache_get64(b);
	k->ts = (int64_t)sqlcache_get64(b);
	sqlcache_get(b, k->name, sizeof(k->name));
	if (b->bad || closed > 1 || k->depth > MAX_DEPTH || k->tid < -1 ||
	    !memchr(k->name, 0, sizeof(k->name)))
		return false;
	i = trace_cpu_index(c->db->ts->m[m].t, k->cpu);
	return i >= 0 && (unsigned int)i < r->nr_cpus;
}

static const struct spanq_ops ir_ops = {
	.feed = ir_feed, .member_end = ir_member_end,
	.save = ir_save, .restore = ir_restore, .row_ts = ir_row_ts,
	.put = ir_put, .get = ir_get, .rec = IR_REC,
};

static int ir_next(struct sql_cursor *c)
{
	struct ir *r = c->priv;

	return spanq_next(&r->q, (const void **)&r->row);
}

static void ir_reader(struct sql_cursor *c, struct share_reader *r)
{
	spanq_reader(&((struct ir *)c->priv)->q, r);
}

static unsigned int ir_member(const struct sql_cursor *c)
{
	return ((const struct ir *)c->priv)->row->member;
}

static void ir_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct slice *k = ((struct ir *)c->priv)->row;

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
	case C_CPU:
		sql_out_int64(ctx, k->cpu);
		break;
	case C_UTID:
		sql_result_utid(ctx, k->member, k->tid);
		break;
	case C_NUM:
		sql_out_int64(ctx, k->num);
		break;
	case C_NAME:
		sql_out_text(ctx, k->name, -1, SQLITE_TRANSIENT);
		break;
	case C_DEPTH:
		sql_out_int64(ctx, k->depth);
		break;
	case C_RET:
		if (!k->closed)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, k->ret);
		break;
	}
}

static void ir_reset(struct sql_cursor *c)
{
	struct ir *r = c->priv;

	spanq_free(&r->q);
	free(r->cpus);
}

const struct sql_table sql_t_irq = {
	.name = "irq",
	.what = "hardware interrupt handlers, entry to exit per CPU (nested)",
	.cols = irq_cols,
	.nr_cols = ARRAY_SIZE(irq_cols),
	.priv_size = sizeof(struct ir),
	.filter = irq_filter,
	.next = ir_next,
	.reader = ir_reader,
	.column = ir_column,
	.member = ir_member,
	.reset = ir_reset,
};

const struct sql_table sql_t_softirq = {
	.name = "softirq",
	.what = "softirqs, entry to exit per CPU (nested)",
	.cols = softirq_cols,
	.nr_cols = ARRAY_SIZE(softirq_cols),
	.priv_size = sizeof(struct ir),
	.filter = softirq_filter,
	.next = ir_next,
	.reader = ir_reader,
	.column = ir_column,
	.member = ir_member,
	.reset = ir_reset,
};
