// SPDX-License-Identifier: GPL-2.0
/*
 * process: one row per pid the thread table names (threadidx.h): upid =
 * trace << 32 | pid, name its leader's (the thread whose tid is the pid;
 * NULL when the trace names no such thread), cmdline the file name of its
 * last exec (NULL: no exec in the trace), parent_upid from the state dump
 * or its fork, cgroup its leader's id, start_ts/end_ts its leader's.
 * pid 0 is the idle task's.
 */
#include "threadidx.h"

enum {
	C_UPID, C_PID, C_NAME, C_CMDLINE, C_PARENT_UPID, C_CGROUP, C_START_TS, C_END_TS,
	C_TRACE, C_HOST,
};

static const struct sql_column cols[] = {
	[C_UPID] = { "upid", "INTEGER", SQL_PUSH_UTID },
	[C_PID] = { "pid", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_CMDLINE] = { "cmdline", "TEXT", SQL_PUSH_NONE },
	[C_PARENT_UPID] = { "parent_upid", "INTEGER", SQL_PUSH_NONE },
	[C_CGROUP] = { "cgroup", "INTEGER", SQL_PUSH_NONE },
	[C_START_TS] = { "start_ts", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct process {
	struct tidx_scan *s;
	const struct threadidx *x;
	size_t i;
};

static int process_filter(struct sql_cursor *c)
{
	struct process *p = c->priv;

	p->s = tidx_open(c, sql_col_used(c, C_CMDLINE) || sql_col_used(c, C_START_TS) ||
			 sql_col_used(c, C_END_TS));
	return 0;
}

static int process_next(struct sql_cursor *c)
{
	struct process *p = c->priv;

	while (!p->x || ++p->i >= p->x->nr_procs) {
		int r = tidx_next(p->s, &p->x);

		if (r <= 0)
			return r;
		p->i = 0;
		if (p->x->nr_procs)
			break;
	}
	return 1;
}

static unsigned int process_member(const struct sql_cursor *c)
{
	return ((const struct process *)c->priv)->x->member;
}

static void process_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct process *p = c->priv;
	const struct tidx_process *pr = &p->x->procs[p->i];
	int64_t m = (int64_t)p->x->member << 32;

	switch (col) {
	case C_UPID:
		sql_out_int64(ctx, m | pr->pid);
		break;
	case C_PID:
		sql_out_int64(ctx, pr->pid);
		break;
	case C_NAME:
		sql_result_text_or_null(ctx, pr->name);
		break;
	case C_CMDLINE:
		sql_result_text_or_null(ctx, pr->cmdline);
		break;
	case C_PARENT_UPID:
		sql_result_int_or_null(ctx, pr->ppid >= 0, m | pr->ppid);
		break;
	case C_CGROUP:
		sql_result_int_or_null(ctx, pr->cgroup, (int64_t)pr->cgroup);
		break;
	case C_START_TS:
		sql_result_int_or_null(ctx, pr->start != TIDX_NONE, pr->start);
		break;
	case C_END_TS:
		sql_result_int_or_null(ctx, pr->end != TIDX_NONE, pr->end);
		break;
	}
}

static void process_reset(struct sql_cursor *c)
{
	struct process *p = c->priv;

	tidx_close(p->s);
}

const struct sql_table sql_t_process = {
	.name = "process",
	.what = "every process (pid) a trace names: leader's name, exec'd file, parent",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct process),
	.filter = process_filter,
	.next = process_next,
	.column = process_column,
	.member = process_member,
	.reset = process_reset,
};
