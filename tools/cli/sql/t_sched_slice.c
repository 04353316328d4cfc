// SPDX-License-Identifier: GPL-2.0
/*
 * sched_slice: each time a thread ran on a CPU, as report --stat counts
 * on-CPU time (schedwalk.h): from a sched_switch in to the CPU's next
 * switch that names it prev, a loss between leaving it running; what
 * still runs at the end runs to the member's last item (end_state NULL).
 * A span whose next switch names another prev is no slice (report does
 * not count it; thread_state has it with state NULL).  Summed per utid
 * (tid > 0), dur is report's on_cpu_ms; the idle task's slices are
 * utid member << 32 | 0.  priority is the kernel's (next_prio + 100, as
 * ftrace prints it).
 *
 * A ts or end_ts range reads only the time around it (schedwalk.h's
 * checkpoints); SQLite still checks the terms.
 */
#include "schedwalk.h"

enum { C_TS, C_DUR, C_END_TS, C_CPU, C_UTID, C_END_STATE, C_PRIORITY, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_SPAN },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_END_STATE] = { "end_state", "TEXT", SQL_PUSH_NONE },
	[C_PRIORITY] = { "priority", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct slice {
	struct schedwalk *w;
	struct sw_span sp;
};

static int slice_filter(struct sql_cursor *c)
{
	struct slice *s = c->priv;

	s->w = schedwalk_open(c, false);
	return 0;
}

static int slice_next(struct sql_cursor *c)
{
	struct slice *s = c->priv;
	int r;

	while ((r = schedwalk_next(s->w, &s->sp)) == 1 && !s->sp.chained)
		;
	return r;
}

static struct schedwalk *slice_walk(struct sql_cursor *c)
{
	return ((struct slice *)c->priv)->w;
}

static unsigned int slice_member(const struct sql_cursor *c)
{
	return ((const struct slice *)c->priv)->sp.member;
}

static void slice_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct sw_span *sp = &((struct slice *)c->priv)->sp;
	char buf[32];

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, sp->ts);
		break;
	case C_DUR:
		sql_out_int64(ctx, sp->end - sp->ts);
		break;
	case C_END_TS:
		sql_out_int64(ctx, sp->end);
		break;
	case C_CPU:
		sql_out_int64(ctx, sp->cpu);
		break;
	case C_UTID:
		sql_out_int64(ctx, (int64_t)sp->member << 32 | (uint32_t)sp->tid);
		break;
	case C_END_STATE:
		if (sp->end_state < 0)
			sql_out_null(ctx);
		else
			sql_out_text(ctx, sw_state_name(sp->end_state, buf, sizeof(buf)),
					    -1, SQLITE_TRANSIENT);
		break;
	case C_PRIORITY:
		if (sp->prio == INT64_MIN)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, sp->prio);
		break;
	}
}

static void slice_reset(struct sql_cursor *c)
{
	struct slice *s = c->priv;

	schedwalk_close(s->w);
}

const struct sql_table sql_t_sched_slice = {
	.name = "sched_slice",
	.what = "a thread on a CPU, switch in to switch out (report's on-CPU time)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct slice),
	.filter = slice_filter,
	.next = slice_next,
	.walk = slice_walk,
	.column = slice_column,
	.member = slice_member,
	.reset = slice_reset,
};
