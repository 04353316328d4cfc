// SPDX-License-Identifier: GPL-2.0
/*
 * thread_state: what each thread was doing, span after span
 * (schedwalk.h): 'Running' on a CPU exactly where sched_slice has a
 * slice (the same ts, dur, cpu, utid); off CPU from its switch out in the
 * state prev_state says ('R' runnable, 'R+' preempted, 'S', 'D', 'T',
 * 't', 'X', 'Z', 'P', 'I', several joined by '|'), cpu the CPU it left;
 * 'R' from the first wakeup of a blocked thread on, waker_utid the
 * thread that woke it (the owner of sched_waking, or of sched_wakeup
 * when no sched_waking came first; NULL unknown), cpu its target_cpu.
 * irq_context is 1 on such an 'R' when the wakeup came inside an
 * interrupt or softirq (sched_waking's waker_ctx 1..3, or an entry..exit
 * its CPU recorded), waker_utid then only the thread it interrupted;
 * NULL otherwise (not known in traces without waker_ctx).
 * A span on a CPU whose next switch names another prev has state NULL
 * (report does not count it).  Spans still open at the member's end
 * close at its last item.  Summed per utid, the Running spans are
 * report --stat's on_cpu_ms.
 *
 * blocked_function: for a blocked span (S, D..., not R or R+) that a
 * sched_switch carrying a kernel stack opened, the stack's first frame
 * that is no scheduler function (stack_blocked_function(), the kernel's
 * wchan rule); NULL otherwise.  The stacks are read only when the column
 * is.  io_wait is NULL: not derived yet.
 * A ts or end_ts range reads only the time around it (schedwalk.h's
 * checkpoints), unless blocked_function is asked (every event then);
 * SQLite still checks the terms.  So does waker_utid = X, which reads the
 * trace X names and there the time from X's first run to its last (the
 * R spans X opened begin with a wakeup X owns) as such a range.
 */
#include "runidx.h"
#include "schedwalk.h"

enum {
	C_TS, C_DUR, C_END_TS, C_UTID, C_STATE, C_CPU, C_WAKER_UTID,
	C_IRQ_CONTEXT, C_BLOCKED_FUNCTION, C_IO_WAIT, C_TRACE, C_HOST,
};

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_SPAN },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_END_TS] = { "end_ts", "INTEGER", SQL_PUSH_SPAN },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_STATE] = { "state", "TEXT", SQL_PUSH_NONE },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_NONE },
	[C_WAKER_UTID] = { "waker_utid", "INTEGER", SQL_PUSH_WAKER },
	[C_IRQ_CONTEXT] = { "irq_context", "INTEGER", SQL_PUSH_NONE },
	[C_BLOCKED_FUNCTION] = { "blocked_function", "TEXT", SQL_PUSH_NONE },
	[C_IO_WAIT] = { "io_wait", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct tstate {
	struct schedwalk *w;
	struct sw_span sp;
};

static int tstate_filter(struct sql_cursor *c)
{
	struct tstate *s = c->priv;

	/* waker_utid = X: the time from X's first run to its last, as a window. */
	if (runidx_waker_window(c))
		return -1;
	s->w = schedwalk_open(c, true);
	if (sql_col_used(c, C_BLOCKED_FUNCTION))
		schedwalk_blocked(s->w);
	return 0;
}

static struct schedwalk *tstate_walk(struct sql_cursor *c)
{
	return ((struct tstate *)c->priv)->w;
}

static int tstate_next(struct sql_cursor *c)
{
	struct tstate *s = c->priv;

	return schedwalk_next(s->w, &s->sp);
}

static unsigned int tstate_member(const struct sql_cursor *c)
{
	return ((const struct tstate *)c->priv)->sp.member;
}

static void tstate_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct sw_span *sp = &((struct tstate *)c->priv)->sp;
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
	case C_UTID:
		sql_result_utid(ctx, sp->member, sp->tid);
		break;
	case C_STATE:
		if (sp->state == SW_RUNNING && !sp->chained)
			sql_out_null(ctx);
		else
			sql_out_text(ctx, sw_state_name(sp->state, buf, sizeof(buf)),
					    -1, SQLITE_TRANSIENT);
		break;
	case C_CPU:
		if (sp->cpu < 0)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, sp->cpu);
		break;
	case C_WAKER_UTID:
		sql_result_utid(ctx, sp->member, sp->waker);
		break;
	case C_BLOCKED_FUNCTION:
		if (sp->blocked)
			sql_out_text(ctx, sp->blocked, -1, SQLITE_TRANSIENT);
		else
			sql_out_null(ctx);
		break;
	case C_IRQ_CONTEXT:
		if (sp->irq)
			sql_out_int64(ctx, 1);
		else
			sql_out_null(ctx);
		break;
	default:
		sql_out_null(ctx);
		break;
	}
}

static void tstate_reset(struct sql_cursor *c)
{
	struct tstate *s = c->priv;

	schedwalk_close(s->w);
}

const struct sql_table sql_t_thread_state = {
	.name = "thread_state",
	.what = "each thread's spans: Running, R, R+, S, D... and who woke it",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct tstate),
	.filter = tstate_filter,
	.next = tstate_next,
	.walk = tstate_walk,
	.column = tstate_column,
	.member = tstate_member,
	.reset = tstate_reset,
};
