// SPDX-License-Identifier: GPL-2.0
/*
 * trace: one row per member of the database -- a trace directory, or the
 * chunk sets of one recording -- in the order of the command line: its
 * number is every other table's trace column.  host is the recording
 * machine's name ("" when the trace does not say), wall_offset_ns what
 * turns its ts into epoch ns (--wall adds it).  wall_offset_start_ns is
 * that offset measured as the recording began (the metadata's clock; as
 * it was last copied, if an event registered during the recording),
 * wall_offset_end_ns as it ended (the directory's .ringtrace-clock.json,
 * else the newest chunk set's manifest not recovered after a crash; NULL
 * when neither is there), and clock_drift_ns the second minus the first:
 * how far the wall clock moved against the trace's own over the
 * recording (NTP's steps and slewing), the uncertainty of a wall_ts
 * across hosts.  first_ts and last_ts are
 * the times of its first and last item (event or loss), the span report
 * --stat gives in its first line: found, when asked for, by one pass over
 * the member that decodes no payload; NULL for a member with none.
 */
#include <stdlib.h>

#include "sql.h"

enum { C_TRACE, C_HOST, C_DIR, C_UUID, C_NR_SETS, C_NR_GAPS, C_NR_CPUS,
       C_CLOCK_FREQ, C_WALL_OFFSET, C_FIRST_TS, C_LAST_TS, C_WALL_START, C_WALL_END,
       C_DRIFT };

static const struct sql_column cols[] = {
	[C_TRACE] = { "trace", "INTEGER", SQL_PUSH_NONE },
	[C_HOST] = { "host", "TEXT", SQL_PUSH_NONE },
	[C_DIR] = { "dir", "TEXT", SQL_PUSH_NONE },
	[C_UUID] = { "uuid", "TEXT", SQL_PUSH_NONE },
	[C_NR_SETS] = { "nr_sets", "INTEGER", SQL_PUSH_NONE },
	[C_NR_GAPS] = { "nr_gaps", "INTEGER", SQL_PUSH_NONE },
	[C_NR_CPUS] = { "nr_cpus", "INTEGER", SQL_PUSH_NONE },
	[C_CLOCK_FREQ] = { "clock_freq", "INTEGER", SQL_PUSH_NONE },
	[C_WALL_OFFSET] = { "wall_offset_ns", "INTEGER", SQL_PUSH_NONE },
	[C_FIRST_TS] = { "first_ts", "INTEGER", SQL_PUSH_NONE },
	[C_LAST_TS] = { "last_ts", "INTEGER", SQL_PUSH_NONE },
	[C_WALL_START] = { "wall_offset_start_ns", "INTEGER", SQL_PUSH_NONE },
	[C_WALL_END] = { "wall_offset_end_ns", "INTEGER", SQL_PUSH_NONE },
	[C_DRIFT] = { "clock_drift_ns", "INTEGER", SQL_PUSH_NONE },
};

/* @v clamped to a column's 64 bits. */
static int64_t clamp64(__int128 v)
{
	return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

struct members {
	unsigned int next;
	bool spanned;			/* first, last: of the row's member */
	bool any;
	uint64_t first, last;		/* clock cycles */
};

static bool no_event(void *arg, const struct rt_event_desc *ev)
{
	(void)arg;
	(void)ev;
	return false;
}

/*
 * The first and last item of member @i: each CPU's losses as they come,
 * its events' from the stream's stats (counted, never decoded).  0, or -1
 * with the cursor's error.
 */
static int member_span(struct sql_cursor *c, unsigned int i, struct members *m)
{
	struct rt_error err;
	struct tset_view *v = tset_view_open(c->db->ts, i, NULL, false, 0, UINT64_MAX,
					     false, &err);
	struct rt_trace *t;
	int r = 0;

	if (!v)
		return sql_error(c, "%s", err.msg);
	t = tset_view_trace(v);
	m->any = false;
	for (unsigned int k = 0; k < t->nr_cpus && !r; k++) {
		struct rt_stream *s = t->cpus[k].stream;
		const struct rt_stream_stats *st;
		struct rt_item it;

		if (!s)
			continue;
		if (rt_stream_set_wanted(s, no_event, NULL))
			die("out of memory");
		while ((r = rt_stream_next(s, &it, &err)) > 0) {
			if (it.type != RT_ITEM_LOST)
				continue;
			m->first = !m->any || it.timestamp < m->first ? it.timestamp : m->first;
			m->last = !m->any || it.timestamp > m->last ? it.timestamp : m->last;
			m->any = true;
		}
		if (r < 0) {
			r = sql_error(c, "%s", err.msg);
			break;
		}
		st = rt_stream_stats(s);
		if (!st->events)
			continue;
		m->first = !m->any || st->first_ts < m->first ? st->first_ts : m->first;
		m->last = !m->any || st->last_ts > m->last ? st->last_ts : m->last;
		m->any = true;
	}
	sqldb_view_damage(c->db, i, t);
	tset_view_close(v);
	m->spanned = !r;
	return r;
}

static int trace_filter(struct sql_cursor *c)
{
	(void)c;
	return 0;
}

static int trace_next(struct sql_cursor *c)
{
	struct members *m = c->priv;

	if (m->next >= c->db->ts->nr)
		return 0;
	m->next++;
	m->spanned = false;
	return 1;
}

static void trace_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	struct members *ms = c->priv;
	unsigned int i = ms->next - 1;
	const struct tset_member *m = &c->db->ts->m[i];
	const struct rt_metadata *md = m->t->md;
	const uint8_t *u = md->uuid;

	switch (col) {
	case C_TRACE:
		sql_out_int64(ctx, i);
		break;
	case C_HOST:
		sql_result_host(c, ctx, i);
		break;
	case C_DIR:
		sql_out_text(ctx, m->t->dir, -1, SQLITE_STATIC);
		break;
	case C_UUID:
		if (!md->has_uuid) {
			sql_out_null(ctx);
			break;
		}
		sql_out_text(ctx, sqlite3_mprintf(
			"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
			u[11], u[12], u[13], u[14], u[15]), -1, sqlite3_free);
		break;
	case C_NR_SETS:
		sql_out_int64(ctx, m->nr_sets);
		break;
	case C_NR_GAPS:
		sql_out_int64(ctx, m->nr_gaps);
		break;
	case C_NR_CPUS:
		sql_out_int64(ctx, m->t->nr_cpus);
		break;
	case C_CLOCK_FREQ:
		sql_out_int64(ctx, (int64_t)md->clock_freq);
		break;
	case C_FIRST_TS:
	case C_LAST_TS:
		if (!ms->spanned && member_span(c, i, ms) < 0) {
			sql_out_error(ctx, c->err ? c->err : "reading the trace", -1);
			break;
		}
		if (!ms->any)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, sqldb_ns(c->db, i, col == C_FIRST_TS ?
							   ms->first : ms->last));
		break;
	case C_WALL_OFFSET:
		sql_out_int64(ctx, clamp64(m->wall_offset_ns));
		break;
	case C_WALL_START:
		sql_out_int64(ctx, clamp64(m->wall_start_ns));
		break;
	case C_WALL_END:
	case C_DRIFT:
		if (!m->has_wall_end)
			sql_out_null(ctx);
		else
			sql_out_int64(ctx, clamp64(col == C_WALL_END ? m->wall_end_ns :
						   m->wall_end_ns - m->wall_start_ns));
		break;
	}
}

const struct sql_table sql_t_trace = {
	.name = "trace",
	.what = "the traces: number, host, directory, uuid, chunk sets",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct members),
	.no_stats = true,
	.filter = trace_filter,
	.next = trace_next,
	.column = trace_column,
};
