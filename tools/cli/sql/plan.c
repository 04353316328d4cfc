// SPDX-License-Identifier: GPL-2.0
/*
 * The constraints SQLite passes a table, pushed down (sql.h): xBestIndex
 * takes each one its column can apply exactly (struct sql_column.push) --
 * ts =, <, <=, >, >=; cpu, name, trace, host = and IN, all of an IN list
 * at once, a stack's or a frame's id = and IN (looked up in the stack
 * index) -- and marks it omitted, so SQLite does not check it again; the
 * scan keeps only the rows that meet it.  LIMIT (and OFFSET) is taken
 * only when every other term was taken so and no ORDER BY is asked for
 * but the one the rows come in (ORDER BY ts of one trace): then the first
 * LIMIT + OFFSET rows the scan keeps are SQLite's answer, and it stops
 * there.  A span table's ts and end_ts terms (SQL_PUSH_SPAN) are taken
 * but not omitted: they bound the time the table reads (the spans that
 * overlap [lo, hi]), and SQLite checks each row against them; so are
 * utid = (SQL_PUSH_UTID): the trace it names is the only one read; tid =
 * (SQL_PUSH_TID): the thread's runs in each trace; and waker_utid =
 * (SQL_PUSH_WAKER): the time of the waker's runs in the trace it names.
 *
 * The plan is idxStr, the terms in argv order ("ts>= ts<= cpu=in order
 * limit"), which EXPLAIN QUERY PLAN and scan_stats show.  xFilter reads
 * it back with the values (sql_plan_spec()).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sql.h"

static bool push_op(enum sql_push p, int op)
{
	switch (p) {
	case SQL_PUSH_TS:
	case SQL_PUSH_SPAN:
		return op == SQLITE_INDEX_CONSTRAINT_EQ || op == SQLITE_INDEX_CONSTRAINT_GT ||
		       op == SQLITE_INDEX_CONSTRAINT_GE || op == SQLITE_INDEX_CONSTRAINT_LT ||
		       op == SQLITE_INDEX_CONSTRAINT_LE;
	case SQL_PUSH_CPU:
	case SQL_PUSH_NAME:
	case SQL_PUSH_TRACE:
	case SQL_PUSH_HOST:
	case SQL_PUSH_ARG:
	case SQL_PUSH_UTID:
	case SQL_PUSH_TID:
	case SQL_PUSH_WAKER:
	case SQL_PUSH_ID:
		return op == SQLITE_INDEX_CONSTRAINT_EQ;
	default:
		return false;
	}
}

/* Terms that only narrow what is read: SQLite checks them on every row. */
static bool checked(enum sql_push p)
{
	return p == SQL_PUSH_SPAN || p == SQL_PUSH_UTID || p == SQL_PUSH_TID ||
	       p == SQL_PUSH_WAKER;
}

static const char *op_text(int op)
{
	switch (op) {
	case SQLITE_INDEX_CONSTRAINT_EQ: return "=";
	case SQLITE_INDEX_CONSTRAINT_GT: return ">";
	case SQLITE_INDEX_CONSTRAINT_GE: return ">=";
	case SQLITE_INDEX_CONSTRAINT_LT: return "<";
	default: return "<=";
	}
}

/*
 * ORDER BY ts (ascending, alone) is the order rows come in when the
 * table gives them in time order and there is one trace (traces are read
 * one after another).
 */
static bool ordered(const struct sql_table *t, unsigned int nr_members,
		    const sqlite3_index_info *info)
{
	return t->ordered && nr_members == 1 && info->nOrderBy == 1 &&
	       !info->aOrderBy[0].desc && info->aOrderBy[0].iColumn >= 0 &&
	       (unsigned int)info->aOrderBy[0].iColumn < t->nr_cols &&
	       t->cols[info->aOrderBy[0].iColumn].push == SQL_PUSH_TS;
}

int sql_plan_best(const struct sql_table *t, unsigned int nr_members,
		  sqlite3_index_info *info)
{
	bool in_order = ordered(t, nr_members, info);
	sqlite3_str *plan = sqlite3_str_new(NULL);
	int argv = 0, limit = -1, offset = -1;
	double cost = 1e6;
	bool exact = true;

	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *k = &info->aConstraint[i];
		const struct sql_column *col;
		bool in;

		if (k->op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
			limit = i;
			continue;
		}
		if (k->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
			offset = i;
			continue;
		}
		col = k->iColumn >= 0 && (unsigned int)k->iColumn < t->nr_cols ?
		      &t->cols[k->iColumn] : NULL;
		/* Text is compared as bytes only (BINARY, the columns' collation). */
		if (!k->usable || !col || !push_op(col->push, k->op) ||
		    ((col->push == SQL_PUSH_NAME || col->push == SQL_PUSH_HOST) &&
		     strcmp(sqlite3_vtab_collation(info, i), "BINARY"))) {
			exact = false;
			/* A function's argument not at hand: a plan to avoid. */
			if (col && col->push == SQL_PUSH_ARG)
				cost *= 1e6;
			continue;
		}
		info->aConstraintUsage[i].argvIndex = ++argv;
		/* A span's bounds, a thread's trace and runs only narrow what is read. */
		info->aConstraintUsage[i].omit = !checked(col->push);
		if (!info->aConstraintUsage[i].omit)
			exact = false;
		in = col->push != SQL_PUSH_TS && !checked(col->push) &&
		     col->push != SQL_PUSH_ARG && sqlite3_vtab_in(info, i, -1);
		if (in)
			sqlite3_vtab_in(info, i, 1);
		sqlite3_str_appendf(plan, "%s%s%s%s", sqlite3_str_length(plan) ? " " : "",
				    col->name, op_text(k->op), in ? "in" : "");
		/* An id is a lookup in the stack index: the inner side of a join. */
		cost *= col->push == SQL_PUSH_TS || col->push == SQL_PUSH_SPAN ? 0.1 :
			col->push == SQL_PUSH_ARG ? 1e-3 : col->push == SQL_PUSH_ID ? 1e-5 : 0.5;
	}
	if (in_order) {
		info->orderByConsumed = 1;
		sqlite3_str_appendf(plan, "%sorder", sqlite3_str_length(plan) ? " " : "");
	}
	if (limit >= 0 && exact && (info->nOrderBy == 0 || in_order) && t->scan_rows) {
		info->aConstraintUsage[limit].argvIndex = ++argv;
		sqlite3_str_appendf(plan, "%slimit", sqlite3_str_length(plan) ? " " : "");
		if (offset >= 0) {
			info->aConstraintUsage[offset].argvIndex = ++argv;
			sqlite3_str_appendf(plan, " offset");
		}
	}
	/* The columns the statement reads (xColumn is asked only for those). */
	info->idxNum = info->colUsed >> 30 ? 0x3fffffff : (int)info->colUsed;
	if (sqlite3_str_errcode(plan) != SQLITE_OK) {
		sqlite3_free(sqlite3_str_finish(plan));
		return SQLITE_NOMEM;
	}
	/* Nothing pushed down: NULL. */
	info->idxStr = sqlite3_str_finish(plan);
	info->needToFreeIdxStr = 1;
	info->estimatedCost = cost;
	info->estimatedRows = (sqlite3_int64)cost;
	return SQLITE_OK;
}

/* ---- xFilter: the values ---------------------------------------------------------- */

void sql_spec_free(struct scan_spec *s)
{
	for (unsigned int i = 0; i < s->nr_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->cpus);
	free(s->ids);
	free(s->members);
	memset(s, 0, sizeof(*s));
	s->limit = -1;
}

/*
 * A ts bound from @v as SQLite would compare an INTEGER column with it:
 * numbers (a real rounded toward the rows it keeps), NULL matches
 * nothing, text and blobs sort after every number.
 */
static void ts_bound(struct scan_spec *s, int op, sqlite3_value *v)
{
	bool lower = op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE;
	bool upper = op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE;
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	int type = sqlite3_value_numeric_type(v);

	if (type == SQLITE_NULL) {
		s->empty = true;
		return;
	}
	if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
		if (!upper)
			s->empty = true;
		return;
	}
	if (type == SQLITE_INTEGER) {
		int64_t x = sqlite3_value_int64(v);

		if (op == SQLITE_INDEX_CONSTRAINT_GT && x == INT64_MAX)
			s->empty = true;
		if (op == SQLITE_INDEX_CONSTRAINT_LT && x == INT64_MIN)
			s->empty = true;
		if (s->empty)
			return;
		lo = op == SQLITE_INDEX_CONSTRAINT_GT ? x + 1 : x;
		hi = op == SQLITE_INDEX_CONSTRAINT_LT ? x - 1 : x;
	} else {
		double d = sqlite3_value_double(v), c = ceil(d), f = floor(d);

		if (isnan(d)) {
			s->empty = true;
			return;
		}
		if (op == SQLITE_INDEX_CONSTRAINT_GT && c == d)
			c += 1;
		if (op == SQLITE_INDEX_CONSTRAINT_LT && f == d)
			f -= 1;
		if (op == SQLITE_INDEX_CONSTRAINT_EQ && c != d) {
			s->empty = true;
			return;
		}
		lo = c >= 9.2e18 ? INT64_MAX : c <= -9.2e18 ? INT64_MIN : (int64_t)c;
		hi = f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
		if (c >= 9.3e18 && !upper)
			s->empty = true;
		if (f <= -9.3e18 && !lower)
			s->empty = true;
	}
	if (!upper && (!s->has_begin || lo > s->begin)) {
		s->has_begin = true;
		s->begin = lo;
	}
	if (!lower && (!s->has_end || hi < s->end)) {
		s->has_end = true;
		s->end = hi;
	}
	if (s->has_begin && s->has_end && s->end < s->begin)
		s->empty = true;
}

/* An integer equal to @v (an INTEGER column's =): false when none is. */
static bool int_value(sqlite3_value *v, int64_t *x)
{
	int type = sqlite3_value_numeric_type(v);
	double d;

	if (type == SQLITE_INTEGER) {
		*x = sqlite3_value_int64(v);
		return true;
	}
	if (type != SQLITE_FLOAT)
		return false;
	d = sqlite3_value_double(v);
	if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
		return false;
	*x = (int64_t)d;
	return true;
}

/* The values of one = or IN term, one at a time. */
struct term_values {
	sqlite3_value *v, *list;
	bool in, started;
};

static sqlite3_value *term_next(struct term_values *tv)
{
	sqlite3_value *x = NULL;

	if (!tv->in) {
		x = tv->started ? NULL : tv->v;
	} else if (!tv->started) {
		if (sqlite3_vtab_in_first(tv->list, &x) != SQLITE_OK)
			x = NULL;
	} else if (sqlite3_vtab_in_next(tv->list, &x) != SQLITE_OK) {
		x = NULL;
	}
	tv->started = true;
	return x;
}

/* The members whose trace number (or with @host, host) is one of the values. */
static void member_term(struct sql_cursor *c, struct term_values *tv, bool host)
{
	struct scan_spec *s = &c->spec;
	const struct tset *ts = c->db->ts;
	bool *now = calloc(ts->nr + 1, sizeof(*now));
	sqlite3_value *v;

	if (!now)
		die("out of memory");
	while ((v = term_next(tv))) {
		const char *name;
		int64_t x;

		if (!host) {
			if (int_value(v, &x) && x >= 0 && (uint64_t)x < ts->nr)
				now[x] = true;
			continue;
		}
		/* A TEXT column: numbers compare as their text, blobs never equal. */
		if (sqlite3_value_type(v) == SQLITE_NULL || sqlite3_value_type(v) == SQLITE_BLOB ||
		    !(name = (const char *)sqlite3_value_text(v)))
			continue;
		for (unsigned int i = 0; i < ts->nr; i++)
			if (!strcmp(ts->m[i].host, name))
				now[i] = true;
	}
	if (s->members_set)
		for (unsigned int i = 0; i < ts->nr; i++)
			now[i] = now[i] && s->members[i];
	free(s->members);
	s->members = now;
	s->members_set = true;
}

/* An = term's value kept in *@x (*@set): a non-integer, or two that differ, match nothing. */
static void keep_value(struct scan_spec *s, sqlite3_value *v, bool *set, int64_t *x)
{
	int64_t y;

	if (!int_value(v, &y) || (*set && *x != y)) {
		s->empty = true;
		return;
	}
	*set = true;
	*x = y;
}

/*
 * utid (upid, waker_utid) = @v: only the trace its high half names is
 * read; a utid's value kept (SCAN_RUNS), a waker's (runidx_waker_window()).
 */
static void utid_term(struct sql_cursor *c, const struct sql_column *col, sqlite3_value *v)
{
	struct scan_spec *s = &c->spec;
	const struct tset *ts = c->db->ts;
	bool *now = calloc(ts->nr + 1, sizeof(*now));
	int64_t x;

	if (!now)
		die("out of memory");
	if (int_value(v, &x) && x >= 0 && (uint64_t)(x >> 32) < ts->nr &&
	    (!s->members_set || s->members[x >> 32]))
		now[x >> 32] = true;
	free(s->members);
	s->members = now;
	s->members_set = true;
	if (col->push == SQL_PUSH_WAKER)
		keep_value(s, v, &s->waker_set, &s->waker);
	/* upid narrows to the trace alone. */
	else if (!strcmp(col->name, "utid") || !strcmp(col->name, "wakee_utid"))
		keep_value(s, v, &s->utid_set, &s->utid);
}

/*
 * An INTEGER column's = or IN (cpu, a stack's or a frame's id): the
 * integers of the values, those of an earlier term (*@set) alone.
 */
static void ints_term(struct term_values *tv, bool *set, int64_t **vals, unsigned int *nr)
{
	int64_t *now = NULL, x;
	unsigned int n = 0;
	sqlite3_value *v;

	while ((v = term_next(tv))) {
		bool before = !*set;

		if (!int_value(v, &x))
			continue;
		for (unsigned int i = 0; !before && i < *nr; i++)
			before = (*vals)[i] == x;
		if (!before)
			continue;
		now = reallocarray(now, n + 1, sizeof(*now));
		if (!now)
			die("out of memory");
		now[n++] = x;
	}
	free(*vals);
	*vals = now;
	*nr = n;
	*set = true;
}

static void name_term(struct scan_spec *s, struct term_values *tv)
{
	unsigned int n = 0;
	sqlite3_value *v;
	char **now = NULL;

	while ((v = term_next(tv))) {
		const char *name;

		/* A TEXT column: numbers compare as their text, blobs never equal. */
		if (sqlite3_value_type(v) == SQLITE_NULL || sqlite3_value_type(v) == SQLITE_BLOB)
			continue;
		name = (const char *)sqlite3_value_text(v);
		if (!name || (s->names_set && !sql_spec_name(s, name)))
			continue;
		now = realloc(now, (n + 1) * sizeof(*now));
		if (!now || !(now[n++] = strdup(name)))
			die("out of memory");
	}
	for (unsigned int i = 0; i < s->nr_names; i++)
		free(s->names[i]);
	free(s->names);
	s->names = now;
	s->nr_names = n;
	s->names_set = true;
}

/* A function's argument (the @col'th of its SQL_PUSH_ARG columns): its value kept. */
static void arg_term(struct sql_cursor *c, const struct sql_column *col, sqlite3_value *v)
{
	unsigned int k = 0;

	for (const struct sql_column *x = c->t->cols; x < col; x++)
		k += x->push == SQL_PUSH_ARG;
	if (k >= SQL_MAX_ARGS)
		return;
	if (c->spec.args[k].set) {
		/* Twice: one row could meet both only if they are equal. */
		int64_t x = 0;
		bool integer = int_value(v, &x);

		if (sqlite3_value_type(v) == SQLITE_NULL || c->spec.args[k].null ||
		    integer != c->spec.args[k].integer || x != c->spec.args[k].v)
			c->spec.empty = true;
		return;
	}
	c->spec.args[k].set = true;
	c->spec.args[k].null = sqlite3_value_type(v) == SQLITE_NULL;
	c->spec.args[k].integer = int_value(v, &c->spec.args[k].v);
}

static int op_code(const char *op)
{
	return !strcmp(op, "=") ? SQLITE_INDEX_CONSTRAINT_EQ :
	       !strcmp(op, ">") ? SQLITE_INDEX_CONSTRAINT_GT :
	       !strcmp(op, ">=") ? SQLITE_INDEX_CONSTRAINT_GE :
	       !strcmp(op, "<") ? SQLITE_INDEX_CONSTRAINT_LT :
	       SQLITE_INDEX_CONSTRAINT_LE;
}

/*
 * A bound on a span's ts or end_ts: a lower one bounds end_ts from below
 * (ts >= a gives end_ts >= a), an upper one ts from above; a value no row
 * meets empties the spec (SQLite would keep none either).
 */
static void span_bound(struct scan_spec *s, int op, sqlite3_value *v)
{
	struct scan_spec b = { .limit = -1 };

	ts_bound(&b, op, v);
	if (b.empty)
		s->empty = true;
	if (b.has_begin && (!s->has_lo || b.begin > s->lo)) {
		s->has_lo = true;
		s->lo = b.begin;
	}
	if (b.has_end && (!s->has_hi || b.end < s->hi)) {
		s->has_hi = true;
		s->hi = b.end;
	}
	/* hi < lo is no contradiction: a span may cover [hi, lo]. */
}

int sql_plan_spec(struct sql_cursor *c, int idx, const char *plan, int argc,
		  sqlite3_value **argv)
{
	struct scan_spec *s = &c->spec;
	const char *p = plan ? plan : "";
	int64_t limit = -1, offset = 0;
	int i = 0;

	sql_spec_free(s);
	c->col_used = (uint64_t)idx;
	while (*p) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const struct sql_column *col = NULL;
		struct term_values tv = { 0 };
		char tok[64];
		const char *op;

		if (len >= sizeof(tok))
			return sql_error(c, "bad plan '%s'", plan);
		memcpy(tok, p, len);
		tok[len] = 0;
		p += len + (end ? 1 : 0);
		/* Rows come in ts order anyway: nothing to read. */
		if (!strcmp(tok, "order"))
			continue;
		if (i >= argc)
			return sql_error(c, "bad plan '%s'", plan);
		if (!strcmp(tok, "limit") || !strcmp(tok, "offset")) {
			int64_t x = sqlite3_value_int64(argv[i++]);

			if (tok[0] == 'l')
				limit = x;
			else
				offset = x > 0 ? x : 0;
			continue;
		}
		for (unsigned int k = 0; k < c->t->nr_cols && !col; k++) {
			size_t n = strlen(c->t->cols[k].name);

			if (!strncmp(tok, c->t->cols[k].name, n) && strchr("<>=", tok[n]))
				col = &c->t->cols[k];
		}
		if (!col)
			return sql_error(c, "bad plan '%s'", plan);
		op = tok + strlen(col->name);
		tv.v = tv.list = argv[i++];
		tv.in = strstr(op, "in") != NULL;
		switch (col->push) {
		case SQL_PUSH_TS:
			ts_bound(s, op_code(op), tv.v);
			break;
		case SQL_PUSH_SPAN:
			span_bound(s, op_code(op), tv.v);
			break;
		case SQL_PUSH_CPU:
			ints_term(&tv, &s->cpus_set, &s->cpus, &s->nr_cpus);
			break;
		case SQL_PUSH_NAME:
			name_term(s, &tv);
			break;
		case SQL_PUSH_TRACE:
		case SQL_PUSH_HOST:
			member_term(c, &tv, col->push == SQL_PUSH_HOST);
			break;
		case SQL_PUSH_ARG:
			arg_term(c, col, tv.v);
			break;
		case SQL_PUSH_UTID:
		case SQL_PUSH_WAKER:
			utid_term(c, col, tv.v);
			break;
		case SQL_PUSH_TID:
			keep_value(s, tv.v, &s->tid_set, &s->tid);
			break;
		case SQL_PUSH_ID:
			ints_term(&tv, &s->ids_set, &s->ids, &s->nr_ids);
			break;
		default:
			return sql_error(c, "bad plan '%s'", plan);
		}
	}
	/* SQLite's LIMIT: negative is none. */
	if (limit >= 0)
		s->limit = limit > INT64_MAX - offset ? INT64_MAX : limit + offset;
	if ((s->cpus_set && !s->nr_cpus) || (s->names_set && !s->nr_names) ||
	    (s->ids_set && !s->nr_ids) || s->limit == 0)
		s->empty = true;
	/* A tid no row has (its column is NULL below 0), or not the utid's. */
	if (s->tid_set && (s->tid < 0 || s->tid > INT32_MAX ||
			   (s->utid_set && (s->utid & 0xffffffff) != s->tid)))
		s->empty = true;
	return 0;
}

bool sql_spec_cpu(const struct scan_spec *s, int64_t cpu)
{
	if (!s->cpus_set)
		return true;
	for (unsigned int i = 0; i < s->nr_cpus; i++)
		if (s->cpus[i] == cpu)
			return true;
	return false;
}

bool sql_spec_name(const struct scan_spec *s, const char *name)
{
	if (!s->names_set)
		return true;
	for (unsigned int i = 0; i < s->nr_names; i++)
		if (!strcmp(s->names[i], name))
			return true;
	return false;
}

bool sql_spec_ts(const struct scan_spec *s, int64_t ts)
{
	return (!s->has_begin || ts >= s->begin) && (!s->has_end || ts <= s->end);
}
