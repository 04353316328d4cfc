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
 * Each frame once per trace.
 */
#include "stackrows.h"

enum { C_FRAME_ID, C_KIND, C_NAME, C_MODULE, C_REL_PC, C_SYMBOL, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_FRAME_ID] = { "frame_id", "INTEGER", SQL_PUSH_NONE },
	[C_KIND] = { "kind", "TEXT", SQL_PUSH_NONE },
	[C_NAME] = { "name", "TEXT", SQL_PUSH_NONE },
	[C_MODULE] = { "module", "TEXT", SQL_PUSH_NONE },
	[C_REL_PC] = { "rel_pc", "INTEGER", SQL_PUSH_NONE },
	[C_SYMBOL] = { "symbol", "TEXT", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct frm {
	struct scan *scan;
	struct scan_row row;
	struct sr_stack st;
	struct sr_seen seen;
	uint32_t at;			/* the row's frame in st; st.nr: none */
};

static int frm_filter(struct sql_cursor *c)
{
	struct frm *f = c->priv;

	f->st.keep_frames = true;
	f->scan = scan_open(c, SCAN_STACKS);
	return 0;
}

static int frm_next(struct sql_cursor *c)
{
	struct frm *f = c->priv;

	for (;;) {
		int r;

		while (++f->at < f->st.nr)
			if (sr_seen_add(&f->seen, f->row.member, f->st.ids[f->at]))
				return 1;
		r = scan_next(f->scan, &f->row);
		if (r <= 0)
			return r;
		sr_stack_read(&f->st, f->scan, &f->row);
		f->at = (uint32_t)-1;
	}
}

static unsigned int frm_member(const struct sql_cursor *c)
{
	return ((const struct frm *)c->priv)->row.member;
}

static void frm_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct frm *f = c->priv;
	const struct sr_frame *fr = &f->st.frames[f->at];

	switch (col) {
	case C_FRAME_ID:
		sql_out_int64(ctx, fr->id);
		break;
	case C_KIND:
		sql_out_text(ctx, fr->user ? "u" : "k", 1, SQLITE_STATIC);
		break;
	case C_NAME:
		sql_result_text_or_null(ctx, fr->name);
		break;
	case C_MODULE:
		sql_result_text_or_null(ctx, fr->module);
		break;
	case C_REL_PC:
		sql_out_int64(ctx, (int64_t)fr->rel_pc);
		break;
	case C_SYMBOL:
		sql_result_text_or_null(ctx, fr->symbol);
		break;
	}
}

static void frm_reset(struct sql_cursor *c)
{
	struct frm *f = c->priv;

	scan_close(f->scan);
	sr_stack_free(&f->st);
	sr_seen_free(&f->seen);
}

const struct sql_table sql_t_frame = {
	.name = "frame",
	.what = "the distinct frames of the stacks: function, module, rel_pc, kernel or user",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct frm),
	.filter = frm_filter,
	.next = frm_next,
	.column = frm_column,
	.member = frm_member,
	.reset = frm_reset,
};
