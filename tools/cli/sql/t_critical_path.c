// SPDX-License-Identifier: GPL-2.0
/*
 * critical_path(utid [, ts, dur]): a table-valued function, the critical
 * path of thread utid over [ts, ts + dur) (critpath.h): rows that
 * partition the interval, in time order, each what the thread at the end
 * of its chain was doing -- 'Running', 'R', 'R+', a blocked state the
 * walk could not follow further ('S', 'D'...: woken by the idle task, by
 * an unknown waker, by a thread already in the chain, or past the depth
 * limit), or 'Unknown' (no span says).  utid is that thread, depth its
 * place in the chain (0: the thread asked about, root_utid), chain the
 * names from the root to it joined by ';', share dur over the interval's
 * length.  Without ts and dur: the thread's whole life in the trace (its
 * first span to the end of its last one before it died: X, Z left out);
 * ts without dur: from ts to there.
 * report --critical-path prints these rows (critical.c).
 */
#include "critpath.h"

enum {
	C_TS, C_DUR, C_UTID, C_STATE, C_DEPTH, C_ROOT_UTID, C_CHAIN, C_SHARE,
	C_TRACE, C_HOST, C_ARG_UTID, C_ARG_TS, C_ARG_DUR,
};

static const struct sql_column cols[] = {
	[C_TS] = { "ts", "INTEGER", SQL_PUSH_NONE },
	[C_DUR] = { "dur", "INTEGER", SQL_PUSH_NONE },
	[C_UTID] = { "utid", "INTEGER", SQL_PUSH_NONE },
	[C_STATE] = { "state", "TEXT", SQL_PUSH_NONE },
	[C_DEPTH] = { "depth", "INTEGER", SQL_PUSH_NONE },
	[C_ROOT_UTID] = { "root_utid", "INTEGER", SQL_PUSH_NONE },
	[C_CHAIN] = { "chain", "TEXT", SQL_PUSH_NONE },
	[C_SHARE] = { "share", "REAL", SQL_PUSH_NONE },
	[C_TRACE] = SQL_COL_TRACE,
	[C_HOST] = SQL_COL_HOST,
	[C_ARG_UTID] = { "arg_utid", "INTEGER HIDDEN", SQL_PUSH_ARG },
	[C_ARG_TS] = { "arg_ts", "INTEGER HIDDEN", SQL_PUSH_ARG },
	[C_ARG_DUR] = { "arg_dur", "INTEGER HIDDEN", SQL_PUSH_ARG },
};

enum { A_UTID, A_TS, A_DUR };

struct cpath {
	struct cp_result r;
	bool have;
	size_t i;
};

/* Argument @k of the spec: false when not given (or NULL); an error if not an integer. */
static int arg(struct sql_cursor *c, int k, const char *name, bool *given, int64_t *v)
{
	*given = c->spec.args[k].set && !c->spec.args[k].null;
	if (*given && !c->spec.args[k].integer)
		return sql_error(c, "%s must be an integer", name);
	*v = c->spec.args[k].v;
	return 0;
}

static int cpath_filter(struct sql_cursor *c)
{
	struct cpath *p = c->priv;
	bool has_utid, has_ts, has_dur;
	int64_t utid = 0, ts = 0, dur = 0;
	unsigned int member;
	int32_t tid;

	if (arg(c, A_UTID, "utid", &has_utid, &utid) || arg(c, A_TS, "ts", &has_ts, &ts) ||
	    arg(c, A_DUR, "dur", &has_dur, &dur))
		return -1;
	if (!has_utid)
		return sql_error(c, "no thread: critical_path(utid [, ts, dur])");
	if (has_dur && !has_ts)
		return sql_error(c, "dur without ts: critical_path(utid, ts, dur)");
	if (has_dur && (dur < 0 || ts > INT64_MAX - dur))
		return sql_error(c, "dur %lld: not a length from ts", (long long)dur);
	member = (unsigned int)((uint64_t)utid >> 32);
	tid = (int32_t)(utid & 0xffffffff);
	if (utid < 0 || member >= c->db->ts->nr || tid < 0)
		return sql_error(c, "utid %lld: no such thread", (long long)utid);
	if (!tid)
		return sql_error(c, "utid %lld is the idle task: it is never woken",
				 (long long)utid);
	if (c->spec.empty || (c->spec.members_set && !c->spec.members[member]))
		return 0;
	if (critpath_run(c, member, tid, has_ts, ts, has_dur, has_dur ? ts + dur : 0, &p->r))
		return -1;
	p->have = true;
	return 0;
}

static int cpath_next(struct sql_cursor *c)
{
	struct cpath *p = c->priv;

	if (!p->have)
		return 0;
	if (c->rowid)
		p->i++;
	return p->i < p->r.nr;
}

static unsigned int cpath_member(const struct sql_cursor *c)
{
	return ((const struct cpath *)c->priv)->r.member;
}

static void cpath_column(struct sql_cursor *c, struct sql_out *ctx, int col)
{
	const struct cpath *p = c->priv;
	const struct cp_row *row = &p->r.rows[p->i];
	unsigned int m = p->r.member;
	sqlite3_str *s;
	char buf[32];

	switch (col) {
	case C_TS:
		sql_out_int64(ctx, row->ts);
		break;
	case C_DUR:
		sql_out_int64(ctx, row->dur);
		break;
	case C_UTID:
		sql_result_utid(ctx, m, row->chain[row->depth]);
		break;
	case C_STATE:
		sql_out_text(ctx, critpath_state(row, buf, sizeof(buf)), -1,
				    SQLITE_TRANSIENT);
		break;
	case C_DEPTH:
		sql_out_int64(ctx, row->depth);
		break;
	case C_ROOT_UTID:
	case C_ARG_UTID:
		sql_result_utid(ctx, m, row->chain[0]);
		break;
	case C_CHAIN:
		s = sqlite3_str_new(NULL);
		critpath_chain(&p->r, row, s);
		if (sqlite3_str_errcode(s)) {
			sqlite3_free(sqlite3_str_finish(s));
			sql_out_error_nomem(ctx);
			break;
		}
		sql_out_text(ctx, sqlite3_str_finish(s), -1, sqlite3_free);
		break;
	case C_SHARE:
		sql_out_double(ctx, (double)row->dur / (double)(p->r.end - p->r.begin));
		break;
	case C_ARG_TS:
		sql_out_int64(ctx, p->r.begin);
		break;
	case C_ARG_DUR:
		sql_out_int64(ctx, p->r.end - p->r.begin);
		break;
	}
}

static void cpath_reset(struct sql_cursor *c)
{
	struct cpath *p = c->priv;

	if (p->have)
		critpath_free(&p->r);
}

const struct sql_table sql_t_critical_path = {
	.name = "critical_path",
	.what = "critical_path(utid [, ts, dur]): who a thread waited on, through its wakers",
	.cols = cols,
	.nr_cols = ARRAY_SIZE(cols),
	.priv_size = sizeof(struct cpath),
	.filter = cpath_filter,
	.next = cpath_next,
	.column = cpath_column,
	.member = cpath_member,
	.reset = cpath_reset,
};
