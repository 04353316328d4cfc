// SPDX-License-Identifier: GPL-2.0
/*
 * thread: one row per thread a trace names (threadidx.h), as report
 * knows it at the trace's end: name and pid are what report --stat prints
 * beside the tid (the state dump's, then fork, exec, renames and the
 * switches' comm fields).  utid = trace << 32 | tid, upid = trace << 32 |
 * pid (NULL: the pid is not known); the idle task is one row, tid 0,
 * "swapper", is_idle 1.  start_ts is its fork's time, end_ts its exit's
 * (else its free's), NULL when the trace holds neither.
 */
#include "threadidx.h"

enum {
	C_UTID, C_TID, C_NAME, C_UPID, C_START_TS, C_END_TS, C_IS_MAIN_THREAD,
	C_IS_IDLE, C_CGROUP, C_TRACE, C_HOST,
};

static const struct sql_column cols[] = {
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_TID] = { "tid", "INTEGER", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_UPID] = { "upid", "INTEGER", SQL_PUSH_UTID },
	[C_START_TS] = { "start_ts", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_NONE },
	[C_IS_MAIN_THREAD] = { "is_main_thread", "INTEGER", SQL_PUSH_NONE },
	[C_IS_IDLE] = { "is_idle", "INTEGER", SQL_PUSH_NONE },
	[C_CGROUP] = { "cgroup", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct thread {
	struct tidx_scan *s;
	const struct threadidx *x;
	size_t i;
};

static int thread_filter(struct sql_cursor *c)
{
	struct thread *t = c->priv;

	t->s = tidx_open(c, sql_col_used(c, C_START_TS) || sql_col_used(c, C_END_TS));
	return 0;
}

static int thread_next(struct sql_cursor *c)
{
	struct thread *t = c->priv;

	while (!t->x || ++t->i >= t->x->nr_threads) {
		int r = tidx_next(t->s, &t->x);

		if (r != 1)
			return r;
		t->i = 0;
		if (t->x->nr_threads)
			break;
	}
	return 1;
}

static void thread_reader(struct sql_cursor *c, struct share_reader *r)
{
	tidx_reader(((struct thread *)c->priv)->s, r);
}

static unsigned int thread_member(const struct sql_cursor *c)
{
	return ((const struct thread *)c->priv)->x->member;
}

static void thread_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct thread *t = c->priv;
	const struct tidx_thread *th = &t->x->threads[t->i];
	int64_t m = (int64_t)t->x->member << 32;

	switch (col) {
	case C_UTID:
		sql_out_int64(ctx, m | th->tid);
		break;
	case C_TID:
		sql_out_int64(ctx, th->tid);
		break;
	case C_NAME:
		sql_result_text_or_null(ctx, th->name);
		break;
	case C_UPID:
		if (th->pid < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, m | th->pid);
		break;
	case C_START_TS:
		sql_result_int_or_null(ctx, th->start != TIDX_NONE, th->start);
		break;
	case C_END_TS:
		sql_result_int_or_null(ctx, th->end != TIDX_NONE, th->end);
		break;
	case C_IS_MAIN_THREAD:
		if (th->pid < 0 || !th->tid)
			sql_out_null(ctx);
		else
			sql_out_int(ctx, th->pid == th->tid);
		break;
	case C_IS_IDLE:
		sql_out_int(ctx, !th->tid);
		break;
	case C_CGROUP:
		sql_result_int_or_null(ctx, th->cgroup, (int64_t)th->cgroup);
		break;
	}
}

static void thread_reset(struct sql_cursor *c)
{
	struct thread *t = c->priv;

	tidx_close(t->s);
}

const struct sql_table sql_t_thread = {
	.name = "thread",
	.what = "every thread a trace names: its name and pid at the end (report's)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct thread),
	.filter = thread_filter,
	.next = thread_next,
	.reader = thread_reader,
	.column = thread_column,
	.member = thread_member,
	.reset = thread_reset,
};
