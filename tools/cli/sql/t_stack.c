// SPDX-License-Identifier: GPL-2.0
/*
 * stack: the distinct stacks of the samples (stackrows.h), a row per
 * frame: stack_id, depth (0 the innermost frame, the leaf report prints
 * first: a kernel stack's frames come before the user's), frame_id (the
 * frame table's).  A stack recorded without a frame has no row.  Each
 * stack once per trace; its ids do not depend on the scan.
 */
#include "stackrows.h"

enum { C_STACK_ID, C_DEPTH, C_FRAME_ID, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_STACK_ID] = { "stack_id", "INTEGER", SQL_PUSH_NONE },
	[C_DEPTH] = { "depth", "INTEGER", SQL_PUSH_NONE },
	[C_FRAME_ID] = { "frame_id", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct stk {
	struct scan *scan;
	struct scan_row row;
	struct sr_stack st;
	struct sr_seen seen;
	uint32_t depth;			/* the row's; st.nr: none left */
};

static int stk_filter(struct sql_cursor *c)
{
	struct stk *k = c->priv;

	k->scan = scan_open(c, SCAN_STACKS);
	return 0;
}

static int stk_next(struct sql_cursor *c)
{
	struct stk *k = c->priv;

	if (++k->depth < k->st.nr)
		return 1;
	for (;;) {
		int r = scan_next(k->scan, &k->row);

		if (r <= 0)
			return r;
		sr_stack_read(&k->st, k->scan, &k->row);
		if (k->st.present && k->st.nr &&
		    sr_seen_add(&k->seen, k->row.member, k->st.id)) {
			k->depth = 0;
			return 1;
		}
	}
}

static unsigned int stk_member(const struct sql_cursor *c)
{
	return ((const struct stk *)c->priv)->row.member;
}

static void stk_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct stk *k = c->priv;

	switch (col) {
	case C_STACK_ID:
		sql_out_int64(ctx, k->st.id);
		break;
	case C_DEPTH:
		sql_out_int64(ctx, k->depth);
		break;
	case C_FRAME_ID:
		sql_out_int64(ctx, k->st.ids[k->depth]);
		break;
	}
}

static void stk_reset(struct sql_cursor *c)
{
	struct stk *k = c->priv;

	scan_close(k->scan);
	sr_stack_free(&k->st);
	sr_seen_free(&k->seen);
}

const struct sql_table sql_t_stack = {
	.name = "stack",
	.what = "the distinct stacks, a row per frame (depth 0 the innermost)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct stk),
	.filter = stk_filter,
	.next = stk_next,
	.column = stk_column,
	.member = stk_member,
	.reset = stk_reset,
};
