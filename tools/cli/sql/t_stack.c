// SPDX-License-Identifier: GPL-2.0
/*
 * stack: the distinct stacks of the samples (stackrows.h), a row per
 * frame: stack_id, depth (0 the innermost frame, the leaf report prints
 * first: a kernel stack's frames come before the user's), frame_id (the
 * frame table's).  A stack recorded without a frame has no row.  Each
 * stack once per trace, in the order a pass over the trace first meets
 * it; its ids do not depend on the scan.  Read from the trace's stack
 * index (stackidx.h: one pass on first need, then cached), so stack_id =
 * X and IN (the inner side of a join) are lookups: the trace is not read
 * again for each.
 */
#include "stackidx.h"

enum { C_STACK_ID, C_DEPTH, C_FRAME_ID, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_STACK_ID] = { "stack_id", "INTEGER", SQL_PUSH_ID },
	[C_DEPTH] = { "depth", "INTEGER", SQL_PUSH_NONE },
	[C_FRAME_ID] = { "frame_id", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct stk {
	unsigned int next;		/* the next member to read */
	unsigned int member;		/* the one read */
	const struct stack_index *ix;	/* its index; NULL: none yet */
	size_t at;			/* the next stack (or id asked for) */
	const struct si_stack *st;	/* the row's stack */
	uint32_t node, depth;		/* the row's frame's node, its depth */
};

/* The member's next stack asked for: false at its end. */
static bool next_stack(struct sql_cursor *c, struct stk *k)
{
	const struct scan_spec *sp = &c->spec;

	k->st = NULL;
	if (!sp->ids_set) {
		if (k->at < k->ix->nr_stacks)
			k->st = &k->ix->stacks[k->at++];
		return k->st;
	}
	while (!k->st && k->at < sp->nr_ids)
		k->st = stackidx_stack(k->ix, sp->ids[k->at++]);
	return k->st;
}

static int stk_next(struct sql_cursor *c)
{
	struct stk *k = c->priv;

	if (c->spec.empty)
		return 0;
	if (k->st && ++k->depth < k->st->depth) {
		k->node = k->ix->nodes[k->node].caller;
		return 1;
	}
	for (;;) {
		int r;

		if (k->ix && next_stack(c, k)) {
			k->node = k->st->leaf;
			k->depth = 0;
			return 1;
		}
		r = stackidx_next_member(c, &k->next, &k->member, &k->ix);
		if (r <= 0)
			return r;
		k->at = 0;
	}
}

static unsigned int stk_member(const struct sql_cursor *c)
{
	return ((const struct stk *)c->priv)->member;
}

static void stk_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct stk *k = c->priv;

	switch (col) {
	case C_STACK_ID:
		sql_out_int64(ctx, k->st->id);
		break;
	case C_DEPTH:
		sql_out_int64(ctx, k->depth);
		break;
	case C_FRAME_ID:
		sql_out_int64(ctx, k->ix->frames[k->ix->nodes[k->node].frame].id);
		break;
	}
}

const struct sql_table sql_t_stack = {
	.name = "stack",
	.what = "the distinct stacks, a row per frame (depth 0 the innermost)",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct stk),
	.next = stk_next,
	.column = stk_column,
	.member = stk_member,
};
