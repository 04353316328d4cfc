// SPDX-License-Identifier: GPL-2.0
/*
 * lost: what a trace does not hold, one row per place.  Per CPU, the
 * losses the decoder reports before a packet (RT_ITEM_LOST): events the
 * writer discarded (events), sequence numbers never read (packets:
 * overwritten, or skipped as damage) and damaged places read past
 * (damaged), at the time of the packet after them (ts), dur back to
 * the end of the CPU's packet before (what was lost fell between); kind
 * 'before_first' for what a stream's first packet already counted (dur
 * NULL), 'damaged' where damage was read past, else 'lost'.  And the chunk sets missing between
 * those of a recording: kind 'missing_sets', no CPU, ts and dur the time
 * they cover.  Summed per CPU, the rows are report --stat's "losses".
 */
#include <stdlib.h>

#include "share.h"
#include "sql.h"

enum { C_TS, C_DUR, C_CPU, C_KIND, C_EVENTS, C_PACKETS, C_DAMAGED, C_TRACE, C_HOST };

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_TS },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_CPU] = { "cpu", "INTEGER", SQL_PUSH_CPU },
	[C_KIND] = { "kind", "TEXT", SQL_PUSH_NONE },
	[C_EVENTS] = { "events", "INTEGER", SQL_PUSH_NONE },
	[C_PACKETS] = { "packets", "INTEGER", SQL_PUSH_NONE },
	[C_DAMAGED] = { "damaged", "INTEGER", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
};

struct lost {
	struct scan *scan;
	struct scan_row row;
	struct share_rows fed;		/* lost_reader(): a share gives the rows */
};

static int lost_filter(struct sql_cursor *c)
{
	struct lost *l = c->priv;

	l->scan = scan_open(c, SCAN_LOSSES | SCAN_GAPS);
	return 0;
}

static int lost_next(struct sql_cursor *c)
{
	struct lost *l = c->priv;

	return share_rows_next(&l->fed, l->scan, &l->row);
}

static void lost_reader(struct sql_cursor *c, struct share_reader *r)
{
	struct lost *l = c->priv;

	share_rows_reader(&l->fed, &l->row, c, SCAN_LOSSES | SCAN_GAPS, r);
}

static unsigned int lost_member(const struct sql_cursor *c)
{
	return ((const struct lost *)c->priv)->row.member;
}

static void lost_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct scan_row *row = &((struct lost *)c->priv)->row;
	const struct rt_item *it = row->it;
	const struct tset_gap *g = row->gap;

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, row->ts);
		break;
	case C_DUR:
		if (g && !g->leading && g->to >= g->from)
			sql_out_int64(ctx, sqldb_ns(c->db, row->member, g->to) - row->ts);
		else if (it && !it->lost_first && it->lost_since <= it->timestamp)
			sql_out_int64(ctx, row->ts -
					     sqldb_ns(c->db, row->member, it->lost_since));
		else
			sql_out_null(ctx);
		break;
	case C_CPU:
		if (it)
			sql_out_int64(ctx, it->cpu);
		else
			sql_out_null(ctx);
		break;
	case C_KIND:
		sql_out_text(ctx, !it ? "missing_sets" : it->lost_first ? "before_first" :
				    it->damaged_packets ? "damaged" : "lost", -1, SQLITE_STATIC);
		break;
	case C_EVENTS:
	case C_PACKETS:
	case C_DAMAGED:
		if (!it)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, (int64_t)(col == C_EVENTS ? it->lost_events :
					     col == C_PACKETS ? it->lost_packets :
					     it->damaged_packets));
		break;
	}
}

static void lost_reset(struct sql_cursor *c)
{
	struct lost *l = c->priv;

	scan_close(l->scan);
}

const struct sql_table sql_t_lost = {
	.name = "lost",
	.what = "losses per CPU, damaged places, missing chunk sets",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct lost),
	.scan_rows = true,
	.filter = lost_filter,
	.next = lost_next,
	.reader = lost_reader,
	.column = lost_column,
	.member = lost_member,
	.reset = lost_reset,
};
