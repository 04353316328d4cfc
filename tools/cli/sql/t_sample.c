// SPDX-License-Identifier: GPL-2.0
/*
 * sample: a row per event that carried stacks -- every cpu_sample of the
 * profiler (with or without a stack: an idle CPU's has none), and any
 * other event recorded with a stack (a sched_switch's, a probe's): ts,
 * cpu, the thread (a sample's own tid, a sched_switch's prev_tid, else
 * the event's owner), the
 * process its user frames are of, the event's name, and stack_id, its
 * kernel frames then its user frames as one stack (stackrows.h: the
 * stack table's rows; NULL when no stack was recorded).  The rows with a
 * stack_id are the stacks report --stat's top functions counts.
 * ts and cpu are pushed down as raw's are: the window's frames of the
 * CPUs asked for; a user frame is named by the mappings the trace told
 * before it, which scan.c's prologue reads from the member's start (its
 * mapping events alone, every CPU's).  utid = X reads the trace X names
 * and there, on each CPU, only from X's first run there to its last on
 * any CPU (runidx.h: the runs also hold the samples and switches that
 * name X as theirs without owning the CPU; scan.c: what names a row's
 * process is learnt from every CPU); tid = N the same in every trace.
 * Both terms are still checked.
 */
#include <string.h>

#include "stackrows.h"

enum { C_TS, C_CPU, C_UTID, C_TID, C_PID, C_EVENT, C_STACK_ID, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_TS },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_TID] = { "tid", "INTEGER", SQL_PUSH_TID },
	[C_PID] = { "pid", "INTEGER", SQL_PUSH_NONE },
	[C_EVENT] = { "event", "TEXT", SQL_PUSH_NONE },
	[C_STACK_ID] = { "stack_id", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct smp {
	struct scan *scan;
	struct scan_row row;
	struct sr_stack st;
};

static int smp_filter(struct sql_cursor *c)
{
	struct smp *m = c->priv;

	m->scan = scan_open(c, SCAN_STACKS | SCAN_RUNS);
	return 0;
}

static int smp_next(struct sql_cursor *c)
{
	struct smp *m = c->priv;
	int r = scan_next(m->scan, &m->row);

	if (r > 0 && sql_col_used(c, C_STACK_ID))
		sr_stack_read(&m->st, m->scan, &m->row);
	return r;
}

static unsigned int smp_member(const struct sql_cursor *c)
{
	return ((const struct smp *)c->priv)->row.member;
}

static void smp_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct smp *m = c->priv;
	const struct scan_row *row = &m->row;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, row->ts);
		break;
	case C_CPU:
		sql_out_int64(ctx, row->pair->cpu);
		break;
	case C_UTID:
		sql_result_utid(ctx, row->member, row->tid);
		break;
	case C_TID:
		if (row->tid < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, row->tid);
		break;
	case C_PID:
		if (row->pid < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, row->pid);
		break;
	case C_EVENT:
		sql_out_text(ctx, row->pair->event->name, -1, SQLITE_TRANSIENT);
		break;
	case C_STACK_ID:
		if (m->st.present)
			sql_out_int64(ctx, m->st.id);
		else
			sql_out_null(ctx);
		break;
	}
}

static void smp_reset(struct sql_cursor *c)
{
	struct smp *m = c->priv;

	scan_close(m->scan);
	sr_stack_free(&m->st);
}

const struct sql_table sql_t_sample = {
	.name = "sample",
	.what = "each event's stacks: every cpu_sample, and events recorded with a stack",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct smp),
	.scan_rows = true,
	.filter = smp_filter,
	.next = smp_next,
	.column = smp_column,
	.member = smp_member,
	.reset = smp_reset,
};
