// SPDX-License-Identifier: GPL-2.0
/*
 * frame: the distinct frames of the stacks (stackrows.h): frame_id, kind
 * ('k' kernel, 'u' user), name (the function; NULL: no symbol covers
 * it), module ("vmlinux" or the module for a kernel frame, the mapping's
 * path for a user frame; NULL: none known), rel_pc (the offset from
 * vmlinux's or the module's base, or in the binary's file; an address no
 * symbol or mapping covers: the address), symbol (the name report
 * --stat's top functions counts it under: "function [module]", [vmlinux]
 * for the kernel's own, "function (binary)"; NULL when it counts none).
 * Each frame once per trace, in the order a pass first meets it.  Read
 * from the trace's stack index (stackidx.h), so frame_id = X and IN are
 * lookups.
 */
#include "stackidx.h"

enum { C_FRAME_ID, C_KIND, C_NAME, C_MODULE, C_REL_PC, C_SYMBOL, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_FRAME_ID] = { "frame_id", "INTEGER", SQL_PUSH_ID },
	[C_KIND] = { "kind", "TEXT", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_MODULE] = { "module", "TEXT", SQL_PUSH_NONE },
	[C_REL_PC] = { "rel_pc", "INTEGER", SQL_PUSH_NONE },
	[C_SYMBOL] = { "symbol", "TEXT", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct frm {
	unsigned int next;		/* the next member to read */
	unsigned int member;		/* the one read */
	const struct stack_index *ix;	/* its index; NULL: none yet */
	size_t at;			/* the next frame (or id asked for) */
	const struct si_frame *fr;	/* the row's */
};

/* The member's next frame asked for: false at its end. */
static bool next_frame(struct sql_cursor *c, struct frm *f)
{
	const struct scan_spec *sp = &c->spec;

	f->fr = NULL;
	if (!sp->ids_set) {
		if (f->at < f->ix->nr_frames)
			f->fr = &f->ix->frames[f->at++];
		return f->fr;
	}
	while (!f->fr && f->at < sp->nr_ids)
		f->fr = stackidx_frame(f->ix, sp->ids[f->at++]);
	return f->fr;
}

static int frm_next(struct sql_cursor *c)
{
	struct frm *f = c->priv;

	if (c->spec.empty)
		return 0;
	for (;;) {
		int r;

		if (f->ix && next_frame(c, f))
			return 1;
		r = stackidx_next_member(c, &f->next, &f->member, &f->ix);
		if (r <= 0)
			return r;
		f->at = 0;
	}
}

static unsigned int frm_member(const struct sql_cursor *c)
{
	return ((const struct frm *)c->priv)->member;
}

static void frm_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct frm *f = c->priv;
	const struct si_frame *fr = f->fr;

	switch (col) {
	case C_FRAME_ID:
		sql_out_int64(ctx, fr->id);
		break;
	case C_KIND:
		sql_out_text(ctx, fr->user ? "u" : "k", 1, SQLITE_STATIC);
		break;
	case C_NAME:
		sql_result_text_or_null(ctx, stackidx_str(f->ix, fr->name));
		break;
	case C_MODULE:
		sql_result_text_or_null(ctx, stackidx_str(f->ix, fr->module));
		break;
	case C_REL_PC:
		sql_out_int64(ctx, (int64_t)fr->rel_pc);
		break;
	case C_SYMBOL:
		sql_result_text_or_null(ctx, stackidx_str(f->ix, fr->symbol));
		break;
	}
}

const struct sql_table sql_t_frame = {
	.name = "frame",
	.what = "the distinct frames of the stacks: function, module, rel_pc, kernel or user",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct frm),
	.next = frm_next,
	.column = frm_column,
	.member = frm_member,
};
