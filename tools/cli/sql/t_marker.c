// SPDX-License-Identifier: GPL-2.0
/*
 * marker: a row per ringtrace_marker event (what a program wrote to the
 * marker file): ts, cpu, the thread that wrote it, its text.  Counted,
 * the marker events' count.  ts, cpu and utid are pushed down.
 */
#include <string.h>

#include "spanq.h"

enum { C_TS, C_CPU, C_UTID, C_TEXT, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_TS },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_UTID },
	[C_TEXT] = { "text", "TEXT", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct mk {
	struct scan *scan;
	struct scan_row row;
};

static int mk_filter(struct sql_cursor *c)
{
	struct mk *m = c->priv;

	sql_want_events(c, (const char *const[]){ "ringtrace_marker" }, 1);
	m->scan = scan_open(c, SCAN_EVENTS | (sql_col_used(c, C_UTID) ? SCAN_THREADS : 0));
	return 0;
}

static int mk_next(struct sql_cursor *c)
{
	struct mk *m = c->priv;

	return scan_next(m->scan, &m->row);
}

static unsigned int mk_member(const struct sql_cursor *c)
{
	return ((const struct mk *)c->priv)->row.member;
}

static void mk_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct scan_row *row = &((struct mk *)c->priv)->row;
	const struct rt_field_value *v;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, row->ts);
		break;
	case C_CPU:
		sql_out_int64(ctx, row->it->cpu);
		break;
	case C_UTID:
		sql_result_utid(ctx, row->member, row->tid);
		break;
	case C_TEXT:
		v = rt_item_field(row->it, "data", RT_USE_TEXT);
		if (!v)
			sql_out_null(ctx);
		else
			sql_out_text(ctx, (const char *)v->data,
					    (int)strnlen((const char *)v->data, v->count),
					    SQLITE_TRANSIENT);
		break;
	}
}

static void mk_reset(struct sql_cursor *c)
{
	struct mk *m = c->priv;

	scan_close(m->scan);
}

const struct sql_table sql_t_marker = {
	.name = "marker",
	.what = "what programs wrote to the marker file, one row each",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct mk),
	.scan_rows = true,
	.ordered = true,
	.filter = mk_filter,
	.next = mk_next,
	.column = mk_column,
	.member = mk_member,
	.reset = mk_reset,
};
