// SPDX-License-Identifier: GPL-2.0
/*
 * The sqlite3_module every table shares (sql.h): eponymous only (no
 * xCreate: a table is there without CREATE and cannot be made twice),
 * read-only; the row producer and xColumn are the table's, but for the
 * trace and host columns, answered here from the table's member().  Errors
 * of a cursor reach SQLite as its vtab's zErrMsg.  The same cursor
 * functions serve ship without SQLite (sql_cursor_all(): every row, every
 * column, values to a sink of its own through struct sql_out).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sql.h"

struct sql_vtab {
	sqlite3_vtab base;		/* first: SQLite's */
	struct sqldb *d;
	const struct sql_table *t;
};

/* What xConnect is given as its client data. */
struct sql_module_arg {
	struct sqldb *d;
	const struct sql_table *t;
};

int sql_error(struct sql_cursor *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sqlite3_free(c->err);
	c->err = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	return -1;
}

void sql_result_host(const struct sql_cursor *c, struct sql_out *ctx, unsigned int member)
{
	sql_out_text(ctx, c->db->ts->m[member].host, -1, SQLITE_STATIC);
}

void sql_result_utid(struct sql_out *ctx, unsigned int member, int32_t tid)
{
	if (tid < 0)
		sql_out_null(ctx);
	else
		sql_out_int64(ctx, (int64_t)member << 32 | tid);
}

void sql_result_text_or_null(struct sql_out *ctx, const char *s)
{
	if (s)
		sql_out_text(ctx, s, -1, SQLITE_TRANSIENT);
	else
		sql_out_null(ctx);
}

void sql_result_int_or_null(struct sql_out *ctx, bool known, int64_t v)
{
	if (known)
		sql_out_int64(ctx, v);
	else
		sql_out_null(ctx);
}

static int vt_connect(sqlite3 *db, void *arg, int argc, const char *const *argv,
		      sqlite3_vtab **out, char **err)
{
	const struct sql_module_arg *a = arg;
	sqlite3_str *schema = sqlite3_str_new(db);
	struct sql_vtab *vt;
	char *sql;
	int rc;

	(void)argc;
	(void)argv;
	sqlite3_str_appendf(schema, "CREATE TABLE x(");
	for (unsigned int i = 0; i < a->t->nr_cols; i++)
		sqlite3_str_appendf(schema, "%s%s %s", i ? ", " : "", a->t->cols[i].name,
				    a->t->cols[i].type);
	sqlite3_str_appendf(schema, ")");
	sql = sqlite3_str_finish(schema);
	if (!sql)
		return SQLITE_NOMEM;
	rc = sqlite3_declare_vtab(db, sql);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		*err = sqlite3_mprintf("%s: %s", a->t->name, sqlite3_errmsg(db));
		return rc;
	}
	sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
	vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->d = a->d;
	vt->t = a->t;
	*out = &vt->base;
	return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

static int vt_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	struct sql_vtab *vt = (struct sql_vtab *)v;

	return sql_plan_best(vt->t, vt->d->ts->nr, info);
}

/* A cursor as xOpen makes it: no rows until sql_cursor_filter(). */
static struct sql_cursor *cursor_new(struct sqldb *d, const struct sql_table *t)
{
	struct sql_cursor *c = calloc(1, sizeof(*c));

	if (!c || (t->priv_size && !(c->priv = calloc(1, t->priv_size))))
		die("out of memory");
	c->db = d;
	c->t = t;
	c->spec.limit = -1;
	c->stat = t->no_stats ? UINT_MAX : sqldb_stat_new(d, t->name);
	return c;
}

static int vt_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct sql_vtab *vt = (struct sql_vtab *)v;

	*out = &cursor_new(vt->d, vt->t)->base;
	return SQLITE_OK;
}

void sql_cursor_free(struct sql_cursor *c)
{
	if (!c)
		return;
	if (c->t->reset)
		c->t->reset(c);
	sql_spec_free(&c->spec);
	sqlite3_free(c->err);
	free(c->priv);
	free(c);
}

static int vt_close(sqlite3_vtab_cursor *cur)
{
	sql_cursor_free((struct sql_cursor *)cur);
	return SQLITE_OK;
}

/* A cursor's error handed to SQLite. */
static int vt_fail(struct sql_cursor *c)
{
	sqlite3_vtab *v = c->base.pVtab;

	sqlite3_free(v->zErrMsg);
	v->zErrMsg = sqlite3_mprintf("%s: %s", c->t->name, c->err ? c->err : "error");
	return SQLITE_ERROR;
}

int sql_cursor_next(struct sql_cursor *c)
{
	int r = c->t->next(c);

	if (r < 0 || r == SQL_WAIT)
		return r;
	c->eof = !r;
	if (r) {
		c->rowid++;
		if (c->stat != UINT_MAX)
			sqldb_stat(c->db, c->stat)->rows++;
	}
	return r;
}

static int vt_next(sqlite3_vtab_cursor *cur)
{
	struct sql_cursor *c = (struct sql_cursor *)cur;

	return sql_cursor_next(c) < 0 ? vt_fail(c) : SQLITE_OK;
}

/* xFilter's work, its first row but not: 0, or -1 with c->err. */
static int cursor_filter(struct sql_cursor *c, int idx, const char *plan,
			 int argc, sqlite3_value **argv)
{
	if (c->t->reset)
		c->t->reset(c);
	if (c->priv)
		memset(c->priv, 0, c->t->priv_size);
	c->rowid = 0;
	c->eof = false;
	if (c->stat != UINT_MAX) {
		struct scan_stat *st = sqldb_stat(c->db, c->stat);

		snprintf(st->plan, sizeof(st->plan), "%s", plan ? plan : "");
		st->filters++;
	}
	if (sql_plan_spec(c, idx, plan, argc, argv) || (c->t->filter && c->t->filter(c)))
		return -1;
	return 0;
}

static int vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *plan,
		     int argc, sqlite3_value **argv)
{
	struct sql_cursor *c = (struct sql_cursor *)cur;

	if (cursor_filter(c, idx, plan, argc, argv))
		return vt_fail(c);
	return vt_next(cur);
}

/* No term, no plan: every column read (idxNum's all-columns value, plan.c). */
#define SQL_ALL_COLUMNS		0x3fffffff

struct sql_cursor *sql_cursor_all(struct sqldb *d, const struct sql_table *t, char **err)
{
	struct sql_cursor *c = cursor_new(d, t);

	if (cursor_filter(c, SQL_ALL_COLUMNS, NULL, 0, NULL)) {
		*err = sqlite3_mprintf("%s: %s", t->name, c->err ? c->err : "error");
		sql_cursor_free(c);
		return NULL;
	}
	return c;
}

static int vt_eof(sqlite3_vtab_cursor *cur)
{
	return ((struct sql_cursor *)cur)->eof;
}

void sql_cursor_column(struct sql_cursor *c, struct sql_out *o, int col)
{
	switch (c->t->cols[col].push) {
	case SQL_PUSH_TRACE:
		sql_out_int64(o, c->t->member(c));
		break;
	case SQL_PUSH_HOST:
		sql_result_host(c, o, c->t->member(c));
		break;
	default:
		c->t->column(c, o, col);
		break;
	}
}

static int vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	struct sql_out o = { .ctx = ctx };

	sql_cursor_column((struct sql_cursor *)cur, &o, col);
	return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = ((struct sql_cursor *)cur)->rowid;
	return SQLITE_OK;
}

static const sqlite3_module module = {
	.iVersion = 0,
	.xCreate = NULL,		/* eponymous only */
	.xConnect = vt_connect,
	.xBestIndex = vt_best_index,
	.xDisconnect = vt_disconnect,
	.xDestroy = vt_disconnect,
	.xOpen = vt_open,
	.xClose = vt_close,
	.xFilter = vt_filter,
	.xNext = vt_next,
	.xEof = vt_eof,
	.xColumn = vt_column,
	.xRowid = vt_rowid,
};

int sql_vtab_register(struct sqldb *d, const struct sql_table *t)
{
	struct sql_module_arg *a;

	for (unsigned int i = 0; i < t->nr_cols; i++) {
		enum sql_push p = t->cols[i].push;

		if ((p == SQL_PUSH_TRACE || p == SQL_PUSH_HOST) && !t->member)
			die("table %s: column %s has no member() to answer it",
			    t->name, t->cols[i].name);
	}
	a = malloc(sizeof(*a));
	if (!a)
		die("out of memory");
	a->d = d;
	a->t = t;
	return sqlite3_create_module_v2(d->db, t->name, &module, a, free);
}
