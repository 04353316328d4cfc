// SPDX-License-Identifier: GPL-2.0
/*
 * scan_stats: what the last statement before this one that read a table
 * (scan_stats and trace aside) read, one row per cursor it opened (a table
 * read twice, a join's inner side: one each): its plan (the terms pushed
 * down, as EXPLAIN QUERY PLAN shows them), xFilter calls, member views and
 * CPU streams opened, zstd frames decoded, bytes decoded, packets and
 * events handed out by the decoder, rows given to SQLite.  What proves a
 * window, a cpu or a name was pushed down: the frames and events a query
 * did not read.
 */
#include <stdlib.h>

#include "sql.h"

enum { C_CURSOR, C_TBL, C_PLAN, C_FILTERS, C_MEMBERS, C_CPUS, C_FRAMES,
       C_BYTES, C_PACKETS, C_EVENTS, C_ROWS };

static const struct sql_column cols[] = {
	[C_CURSOR] = { "cursor", "INTEGER", SQL_PUSH_NONE },
	[C_TBL] = { "tbl", "TEXT", SQL_PUSH_NONE },
	[C_PLAN] = { "plan", "TEXT", SQL_PUSH_NONE },
	[C_FILTERS] = { "filters", "INTEGER", SQL_PUSH_NONE },
	[C_MEMBERS] = { "members", "INTEGER", SQL_PUSH_NONE },
	[C_CPUS] = { "cpus", "INTEGER", SQL_PUSH_NONE },
	[C_FRAMES] = { "frames_read", "INTEGER", SQL_PUSH_NONE },
	[C_BYTES] = { "bytes_decompressed", "INTEGER", SQL_PUSH_NONE },
	[C_PACKETS] = { "packets", "INTEGER", SQL_PUSH_NONE },
	[C_EVENTS] = { "events_decoded", "INTEGER", SQL_PUSH_NONE },
	[C_ROWS] = { "rows", "INTEGER", SQL_PUSH_NONE },
};

struct stats_cursor {
	unsigned int next;
};

static int stats_filter(struct sql_cursor *c)
{
	(void)c;
	return 0;
}

static int stats_next(struct sql_cursor *c)
{
	struct stats_cursor *s = c->priv;

	if (s->next >= c->db->nr_last)
		return 0;
	s->next++;
	return 1;
}

static void stats_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	unsigned int i = ((struct stats_cursor *)c->priv)->next - 1;
	const struct scan_stat *st = &c->db->last[i];
	const uint64_t v[] = {
		[C_FILTERS] = st->filters, [C_MEMBERS] = st->members, [C_CPUS] = st->cpus,
		[C_FRAMES] = st->frames, [C_BYTES] = st->bytes, [C_PACKETS] = st->packets,
		[C_EVENTS] = st->events, [C_ROWS] = st->rows,
	};

	if (col == C_CURSOR)
		sql_out_int64(ctx, i);
	else if (col == C_TBL)
		sql_out_text(ctx, st->table, -1, SQLITE_STATIC);
	else if (col == C_PLAN)
		sql_out_text(ctx, st->plan, -1, SQLITE_TRANSIENT);
	else
		sql_out_int64(ctx, (int64_t)v[col]);
}

const struct sql_table sql_t_scan_stats = {
	.name = "scan_stats",
	.what = "what the last statement that read a table read, per cursor",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct stats_cursor),
	.no_stats = true,
	.filter = stats_filter,
	.next = stats_next,
	.column = stats_column,
};
