// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace ship --clickhouse URL TRACE|SET...: each trace directory or
 * chunk set into ClickHouse, over its HTTP interface (libcurl), as the
 * rows of `ringtrace sql`'s tables -- the same tables (struct sql_table:
 * their columns, their row producers), so the columns have one source of
 * truth.  The rows do not go through SQLite: a cursor of the table's own
 * (sql_cursor_all()) hands each value to the row encoder here, which
 * writes it as RowBinary at once.  The tables whose producers can be fed
 * (raw, the scheduling walk, the pairing tables' queues, the thread
 * index, lost: share.h) are fed by one read of the set between them.
 * Each row gets host, boot_id, set_key (a
 * number for the set: ringtrace_sets has its set_id), a Date (the
 * partition) and wall_ts (the row's ts in epoch ns) in front of the
 * table's own columns; a POST per batch, compressed as --compress says
 * (clickhouse.c: LZ4 in ClickHouse's native blocks by default, the
 * cheapest in CPU that compresses, measured; zstd; gzip; none).  Tables are
 * created when missing and checked when present: tables of the shape
 * before set_key (a set_id String in each row) are an error that says
 * so, not migrated.
 *
 * Idempotency (Documentation/ringtrace/fleet.rst): a set and a table are
 * done when ringtrace_sets has their row, written after the table's last
 * batch.  A table not done whose set has rows there (a ship killed between
 * two batches) has them deleted (a mutation, waited for) before it is
 * sent again.  So a set shipped twice, or killed and shipped again, ends
 * with each row once.  Two ships of one set at the same time are not
 * supported.
 *
 * Server errors end the run (exit 1, the server's answer said); a
 * directory that cannot be read (--strict: damage in it) is said, its
 * table named, and the next one shipped (exit 1 at the end); so is one
 * that holds several recordings (each row carries its set's labels).
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include <xxhash.h>

#include "../../lib/le.h"
#include "sql/clickhouse.h"
#include "sql/schedwalk.h"
#include "sql/share.h"
#include "sql/spanq.h"
#include "sql/sqlcache.h"

/*
 * The tables shipped, in this order; ringtrace_sets records each.  The
 * first nine are fed by one read of the set (ship_shared()); process
 * takes the thread index thread built; trace's span (its first and last
 * item) reads the frames that read left in the cache, decoding no payload.
 */
static const char *const ship_tables[] = {
	"raw", "sched_slice", "thread_state", "syscall", "wakeup", "irq", "softirq",
	"thread", "lost", "process", "marker", "sample", "stack", "frame", "trace",
};

#define SHIP_BATCH_DEFAULT	(4U << 20)	/* RowBinary bytes per POST */
/*
 * --cache's default: the decoded frames the tables' passes share
 * (rt_frame_cache_start()), enough for a set of four CPUs' chunks at
 * ringtraced's default --max-size (64 MiB).
 */
#define SHIP_CACHE_DEFAULT	(256ULL << 20)
#define MUTATION_WAIT_S		120

/* ---- one table of one set ------------------------------------------------------ */

/*
 * What ended a directory's ship early (said where it happened): the
 * server (the run ends: shipping the same again can succeed once it
 * answers), or the trace (the next directory is shipped: nothing can
 * succeed on this one).  ship_dir()'s status.
 */
enum { SHIP_SERVER = 1, SHIP_TRACE = 2 };

/* The common columns, in front of every shipped table's. */
#define COMMON_COLS "`host` String, `boot_id` String, `set_key` UInt64, " \
		    "`day` Date, `wall_ts` UInt64"

/* The same, a name and a type each (table_ready()'s check). */
static const char *const common_cols[][2] = {
	{ "host", "String" }, { "boot_id", "String" }, { "set_key", "UInt64" },
	{ "day", "Date" }, { "wall_ts", "UInt64" },
};

/* ringtrace_sets' columns: a row per set and table shipped. */
static const char *const sets_cols[][2] = {
	{ "set_id", "String" }, { "set_key", "UInt64" }, { "table", "String" },
	{ "rows", "UInt64" }, { "host", "String" }, { "boot_id", "String" },
	{ "dir", "String" }, { "shipped_at", "DateTime" },
};

struct set {
	const char *dir;
	const struct tset_member *m;
	char id[64];			/* uuid[:first-last] */
	uint64_t key;			/* XXH64 of @id: the rows' set_key */
	struct buf prefix;		/* every row's host, boot_id and set_key */
	uint64_t rows;			/* all tables' */
};

/* A column of the table that ship writes, and what it is on the server. */
struct col {
	const char *name;
	const char *type;		/* ClickHouse's */
	int kind;			/* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT */
	int idx;			/* the table's column */
};

/* Whether @name is a common column's. */
static bool is_common(const char *name)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(common_cols); i++)
		if (!strcmp(name, common_cols[i][0]))
			return true;
	return false;
}

/*
 * The table's columns as SELECT * has them, past trace and host (the
 * common ones replace them; the trace table's own trace, the member's
 * number, is 0 in every set shipped): sql's own definition (struct
 * sql_table), so ship's columns and sql's are one list.  *@ts_col: the
 * row's time, ts or else start_ts (thread, process) or first_ts (trace),
 * -1 none.
 */
static unsigned int table_cols(const struct sql_table *t, struct col *cols, int *ts_col)
{
	unsigned int n = 0;

	*ts_col = -1;
	for (unsigned int i = 0; i < t->nr_cols; i++) {
		const struct sql_column *c = &t->cols[i];

		if (c->push == SQL_PUSH_TRACE || c->push == SQL_PUSH_HOST ||
		    strstr(c->type, "HIDDEN") ||
		    (t == &sql_t_trace && (is_common(c->name) || !strcmp(c->name, "trace"))))
			continue;
		cols[n].name = c->name;
		cols[n].idx = (int)i;
		if (!strcasecmp(c->type, "TEXT")) {
			cols[n].kind = SQLITE_TEXT;
			cols[n].type = "Nullable(String)";
		} else if (!strcasecmp(c->type, "REAL")) {
			cols[n].kind = SQLITE_FLOAT;
			cols[n].type = "Nullable(Float64)";
		} else {
			cols[n].kind = SQLITE_INTEGER;
			cols[n].type = "Nullable(Int64)";
		}
		if (!strcmp(c->name, "ts") ||
		    (*ts_col < 0 && (!strcmp(c->name, "start_ts") || !strcmp(c->name, "first_ts"))))
			*ts_col = (int)n;
		n++;
	}
	return n;
}

/* @sql (sqlite3_mprintf()'d, NULL: out of memory) run and freed: 0, or -1 said. */
static int run_sql(struct ch *ch, char *sql)
{
	int rc;

	if (!sql)
		die("out of memory");
	rc = ch_run(ch, sql);
	sqlite3_free(sql);
	return rc ? -1 : 0;
}

/*
 * Whether @table on the server has the columns @want (a name and a type
 * each, @n of them, in order): 0, or -1 said.  One without set_key where
 * ship writes it is a table of ship's before set_key (its rows had a
 * set_id String there, ringtrace_sets had none): said as that.
 */
static int table_shape(struct ch *ch, const char *table, const char *const (*want)[2],
		       unsigned int n)
{
	char *line;
	unsigned int k;

	if (run_sql(ch, sqlite3_mprintf("DESCRIBE TABLE %s.%s FORMAT TabSeparated",
					ch->db, table)))
		return -1;
	/* name TAB type TAB default kind TAB default expression, a line each */
	line = (char *)ch->answer.p;
	for (k = 0; *line; k++) {
		char *nl = strchr(line, '\n'), *tab, *type, *tab2;

		if (nl)
			*nl = 0;
		tab = strchr(line, '\t');
		type = tab ? tab + 1 : "";
		if (tab)
			*tab = 0;
		tab2 = strchr(type, '\t');
		if (tab2)
			*tab2 = 0;
		if (k >= n) {
			error_line("%s.%s on the server has another shape: a column %s %s "
				   "that ship does not write", ch->db, table, line, type);
			return -1;
		}
		if (!strcmp(want[k][0], "set_key") && strcmp(line, "set_key")) {
			error_line("%s.%s on the server was made by an older ringtrace ship "
				   "(column %u is %s %s, where set_key UInt64 is now): not "
				   "migrated; ship into another --database, or drop the "
				   "database's tables", ch->db, table, k + 1, line, type);
			return -1;
		}
		if (strcmp(line, want[k][0]) || strcmp(type, want[k][1])) {
			error_line("%s.%s on the server has another shape: column %u is "
				   "%s %s, ship writes %s %s", ch->db, table, k + 1, line,
				   type, want[k][0], want[k][1]);
			return -1;
		}
		line = nl ? nl + 1 : line + strlen(line);
	}
	if (k != n) {
		error_line("%s.%s on the server has another shape: %u columns, ship "
			   "writes %u", ch->db, table, k, n);
		return -1;
	}
	return 0;
}

/*
 * The table on the server: made when missing, else checked to have the
 * columns ship writes, names and types in order.  0, or -1 said.
 */
static int table_ready(struct ch *ch, const char *table, const struct col *cols,
		       unsigned int n)
{
	const char *want[ARRAY_SIZE(common_cols) + 64][2];
	sqlite3_str *s = sqlite3_str_new(NULL);
	unsigned int k = 0;

	sqlite3_str_appendf(s, "CREATE TABLE IF NOT EXISTS %s.%s (" COMMON_COLS,
			    ch->db, table);
	for (unsigned int i = 0; i < n; i++)
		sqlite3_str_appendf(s, ", `%s` %s", cols[i].name, cols[i].type);
	sqlite3_str_appendf(s, ") ENGINE = MergeTree() PARTITION BY day "
			    "ORDER BY (host, wall_ts)");
	if (run_sql(ch, sqlite3_str_finish(s)))
		return -1;
	for (unsigned int i = 0; i < ARRAY_SIZE(common_cols); i++, k++) {
		want[k][0] = common_cols[i][0];
		want[k][1] = common_cols[i][1];
	}
	for (unsigned int i = 0; i < n; i++, k++) {
		want[k][0] = cols[i].name;
		want[k][1] = cols[i].type;
	}
	return table_shape(ch, table, want, k);
}

/* Deletes @set's rows of @table and waits for it: 0, or -1 said. */
static int table_clear(struct ch *ch, const char *table, const struct set *set)
{
	char *sql;
	uint64_t pending;
	int rc;

	if (run_sql(ch, sqlite3_mprintf("ALTER TABLE %s.%s DELETE WHERE set_key = %llu",
					ch->db, table, (unsigned long long)set->key)))
		return -1;
	sql = sqlite3_mprintf("SELECT count() FROM system.mutations WHERE database = '%s' "
			      "AND table = '%s' AND is_done = 0", ch->db, table);
	for (int i = 0; i < MUTATION_WAIT_S * 10; i++) {
		rc = ch_count(ch, sql, &pending);
		if (rc || !pending)
			break;
		usleep(100000);
	}
	sqlite3_free(sql);
	if (!rc && pending) {
		error_line("%s.%s: deleting set %s's rows did not end in %d s",
			   ch->db, table, set->id, MUTATION_WAIT_S);
		rc = -1;
	}
	return rc;
}

/* ringtrace_sets' row: @table of @set is done, @rows rows.  0 or -1 said. */
static int table_done(struct ch *ch, const char *table, const struct set *set,
		      uint64_t rows)
{
	struct buf b = { 0 };
	int rc;

	buf_str(&b, set->id, strlen(set->id));
	buf_le(&b, set->key, 8);
	buf_str(&b, table, strlen(table));
	buf_le(&b, rows, 8);
	buf_str(&b, set->m->host, strlen(set->m->host));
	buf_str(&b, set->m->boot_id, strlen(set->m->boot_id));
	buf_str(&b, set->dir, strlen(set->dir));
	buf_le(&b, (uint64_t)time(NULL), 4);
	rc = ch_insert(ch, "ringtrace_sets", &b);
	free(b.p);
	return rc;
}

/*
 * The row encoder: the sink a table's column() gives each value to
 * (struct sql_out), RowBinary at once into @b as the column's server type
 * wants it.  A value of another kind than its column's is converted as
 * SQLite's sqlite3_column_*() would (integer to text in decimal, real to
 * text as %!.15g, a real to an integer truncated and clamped); text in a
 * number column is no table's and ends the run (said).
 */
struct row_enc {
	struct sql_sink sink;		/* first: what column() is given */
	struct buf *b;
	const struct sql_table *t;
	const struct col *col;		/* the column encoded now */
	bool is_ts;			/* it is the row's time: @ts kept */
	bool has_ts;
	int64_t ts;
	char *err;			/* a value could not be made */
};

/* A Nullable 64-bit number: not NULL, then @v (one store, not a byte each). */
static void enc_le(struct buf *b, uint64_t v)
{
	uint8_t *p;

	buf_room(b, 9);
	p = b->p + b->len;
	p[0] = 0;
	rt_put_le(p + 1, v, 8);
	b->len += 9;
}

static void enc_null(struct sql_sink *k)
{
	buf_u8(((struct row_enc *)k)->b, 1);
}

static void enc_text(struct sql_sink *k, const char *s, size_t len)
{
	struct row_enc *e = (struct row_enc *)k;

	if (e->col->kind != SQLITE_TEXT)
		die("ship: table %s gave text for its number column %s", e->t->name,
		    e->col->name);
	buf_u8(e->b, 0);
	buf_str(e->b, s, len);
}

static void enc_integer(struct sql_sink *k, int64_t v)
{
	struct row_enc *e = (struct row_enc *)k;
	char s[24];
	double f;
	uint64_t u;

	if (e->is_ts) {
		e->has_ts = true;
		e->ts = v;
	}
	switch (e->col->kind) {
	case SQLITE_INTEGER:
		enc_le(e->b, (uint64_t)v);
		break;
	case SQLITE_FLOAT:
		f = (double)v;
		memcpy(&u, &f, sizeof(u));
		enc_le(e->b, u);
		break;
	default:
		snprintf(s, sizeof(s), "%" PRId64, v);
		buf_u8(e->b, 0);
		buf_str(e->b, s, strlen(s));
	}
}

static void enc_real(struct sql_sink *k, double v)
{
	struct row_enc *e = (struct row_enc *)k;
	char s[40];
	uint64_t u;
	int64_t i;

	switch (e->col->kind) {
	case SQLITE_INTEGER:
		i = v != v ? 0 : v <= -9223372036854775808.0 ? INT64_MIN :
		    v >= 9223372036854775808.0 ? INT64_MAX : (int64_t)v;
		if (e->is_ts) {
			e->has_ts = true;
			e->ts = i;
		}
		enc_le(e->b, (uint64_t)i);
		break;
	case SQLITE_FLOAT:
		memcpy(&u, &v, sizeof(u));
		enc_le(e->b, u);
		break;
	default:
		sqlite3_snprintf(sizeof(s), s, "%!.15g", v);
		buf_u8(e->b, 0);
		buf_str(e->b, s, strlen(s));
	}
}

static void enc_error(struct sql_sink *k, const char *msg)
{
	struct row_enc *e = (struct row_enc *)k;

	if (!e->err && !(e->err = strdup(msg ? msg : "out of memory")))
		die("out of memory");
	buf_u8(e->b, 1);		/* a NULL: the row whole, but the batch is not sent */
}

/* The row @c is on into @e->b: the common columns, then the table's. */
static void row_binary(struct row_enc *e, const struct set *set, struct sql_cursor *c,
		       const struct col *cols, unsigned int n, int ts_col)
{
	struct sql_out o = { .sink = &e->sink };
	struct buf *b = e->b;
	__int128 wall = set->m->wall_offset_ns;
	uint64_t ns;
	size_t at;

	buf_add(b, set->prefix.p, set->prefix.len);
	at = b->len;
	buf_room(b, 10);
	b->len += 10;			/* day and wall_ts, once ts is known */
	e->has_ts = false;
	for (unsigned int i = 0; i < n; i++) {
		e->col = &cols[i];
		e->is_ts = (int)i == ts_col;
		sql_cursor_column(c, &o, cols[i].idx);
	}
	if (e->has_ts)
		wall += e->ts;
	ns = wall < 0 ? 0 : wall > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)wall;
	rt_put_le(b->p + at, ns / (86400ULL * 1000000000), 2);
	rt_put_le(b->p + at + 2, ns, 8);
}

static size_t batch_bytes(void)
{
	const char *e = getenv("RINGTRACE_SHIP_BATCH");
	unsigned long v;
	char *end;

	if (!e)
		return SHIP_BATCH_DEFAULT;
	v = strtoul(e, &end, 0);
	return *end || !v ? SHIP_BATCH_DEFAULT : v;
}

/* One table of a set on its way: its columns, its rows' cursor, its batch. */
struct ship_tab {
	const char *name;
	const struct sql_table *t;
	struct col cols[64];
	unsigned int n;
	int ts_col;
	struct buf b;
	struct row_enc e;
	struct sql_cursor *c;
	size_t batch;			/* RowBinary bytes per POST */
	uint64_t rows;
	bool skip;			/* ringtrace_sets has it: shipped before */
	bool ended;			/* every row sent */
};

/*
 * @tab (of table @name) made ready on the server: made or checked, and
 * @set's rows of an unfinished ship deleted; tab->skip if ringtrace_sets
 * says it was shipped.  0, or SHIP_SERVER said.
 */
static int tab_prepare(struct ch *ch, struct set *set, struct ship_tab *tab, const char *name)
{
	const struct sql_table *t = sql_table_find(name);
	uint64_t have;
	char *sql;
	int rc;

	if (!t)
		die("ship: no sql table %s", name);
	if (t->nr_cols > ARRAY_SIZE(tab->cols))
		die("%s: %u columns: more than ship can write", name, t->nr_cols);
	*tab = (struct ship_tab){
		.name = name, .t = t, .batch = batch_bytes(),
		.e = {
			.sink = { enc_null, enc_integer, enc_real, enc_text, enc_error },
			.t = t,
		},
	};
	tab->e.b = &tab->b;
	tab->n = table_cols(t, tab->cols, &tab->ts_col);
	if (table_ready(ch, name, tab->cols, tab->n))
		return SHIP_SERVER;
	sql = sqlite3_mprintf("SELECT count() FROM %s.ringtrace_sets WHERE set_id = '%s' "
			      "AND table = '%s'", ch->db, set->id, name);
	rc = ch_count(ch, sql, &have);
	sqlite3_free(sql);
	if (rc)
		return SHIP_SERVER;
	if (have) {
		report("%s: %s: shipped before (set %s)", set->dir, name, set->id);
		tab->skip = true;
		return 0;
	}
	sql = sqlite3_mprintf("SELECT count() FROM %s.%s WHERE set_key = %llu",
			      ch->db, name, (unsigned long long)set->key);
	rc = ch_count(ch, sql, &have);
	sqlite3_free(sql);
	if (!rc && have) {
		info("%s: %s: %" PRIu64 " rows of an unfinished ship: deleted first",
		     set->dir, name, have);
		rc = table_clear(ch, name, set);
	}
	return rc ? SHIP_SERVER : 0;
}

/*
 * @tab's cursor: the rows straight from the table's producer, no
 * statement between.  0, or SHIP_TRACE said.
 */
static int tab_open(struct sqldb *d, const struct set *set, struct ship_tab *tab)
{
	char *err = NULL;

	tab->c = sql_cursor_all(d, tab->t, &err);
	if (!tab->c) {
		error_line("%s: %s", set->dir, err);
		sqlite3_free(err);
		return SHIP_TRACE;
	}
	return 0;
}

/*
 * The rows @tab's cursor has ready, @max at most, sent a batch at a time
 * (the last when it ends: tab->ended): 0, or SHIP_SERVER or SHIP_TRACE
 * (a row that could not be read or made) said.
 */
static int tab_rows(struct ch *ch, const struct set *set, struct ship_tab *tab,
		    uint64_t max)
{
	for (uint64_t i = 0; i < max; i++) {
		int step = sql_cursor_next(tab->c);

		if (step == SQL_WAIT)
			return 0;
		if (step > 0) {
			row_binary(&tab->e, set, tab->c, tab->cols, tab->n, tab->ts_col);
			tab->rows++;
		}
		/* A value that could not be made ends the table before its batch goes. */
		if (step < 0 || tab->e.err) {
			error_line("%s: %s: %s", set->dir, tab->name, tab->e.err ? tab->e.err :
				   tab->c->err ? tab->c->err : "error");
			return SHIP_TRACE;
		}
		if (tab->b.len && (tab->b.len >= tab->batch || !step)) {
			if (ch_insert(ch, tab->name, &tab->b))
				return SHIP_SERVER;
			tab->b.len = 0;
			info("%s: %s: %" PRIu64 " rows sent", set->dir, tab->name, tab->rows);
		}
		if (!step) {
			tab->ended = true;
			return 0;
		}
	}
	return 0;
}

/* Every row of @tab sent: ringtrace_sets says so.  0, or SHIP_SERVER said. */
static int tab_done(struct ch *ch, struct set *set, struct ship_tab *tab)
{
	if (table_done(ch, tab->name, set, tab->rows))
		return SHIP_SERVER;
	report("%s: %s: %" PRIu64 " rows", set->dir, tab->name, tab->rows);
	set->rows += tab->rows;
	return 0;
}

static void tab_free(struct ship_tab *tab)
{
	sql_cursor_free(tab->c);
	free(tab->e.err);
	free(tab->b.p);
}

/*
 * @table of @set onto the server, unless ringtrace_sets says it is: 0,
 * or SHIP_SERVER or SHIP_TRACE said.
 */
static int ship_table(struct ch *ch, struct sqldb *d, struct set *set, const char *table)
{
	struct ship_tab tab;
	int rc = tab_prepare(ch, set, &tab, table);

	if (rc || tab.skip)
		goto out;
	sqldb_statement(d);
	rc = tab_open(d, set, &tab);
	while (!rc && !tab.ended)
		rc = tab_rows(ch, set, &tab, UINT64_MAX);
	if (!rc)
		rc = tab_done(ch, set, &tab);
out:
	tab_free(&tab);
	return rc;
}

/*
 * Whether table @name's producer can be fed by a share (share.h): one
 * that takes rows pushed (its reader(): raw, lost, the pairing tables'
 * queues, thread's index), or a scheduling walk (thread_state's,
 * sched_slice's).
 */
static bool shared(const char *name)
{
	const struct sql_table *t = sql_table_find(name);

	return t && (t->reader || t->walk);
}

/* Rows a table sends before the others of its run have theirs. */
#define SHARE_ROWS	4096

/*
 * The tables @tables (@n, each shared()) of @set, those not shipped
 * before, from one read of it (share.h): raw, the pairing tables' queues,
 * the thread index, lost (their tables' reader()) and thread_state's walk
 * fed by the share, sched_slice's spans from thread_state's walk
 * (schedwalk_tee()).  A round: each table sends what its cursor has
 * ready (SHARE_ROWS at most), then the share reads on (share_read(): up
 * to a row ready or a member's end; no next member before the tables
 * took every row fed).  0, or SHIP_SERVER or SHIP_TRACE said.
 */
static int ship_shared(struct ch *ch, struct sqldb *d, struct set *set,
		       const char *const *tables, unsigned int n)
{
	struct ship_tab *tabs = calloc(n, sizeof(*tabs));
	struct schedwalk *walks[2] = { NULL, NULL }, *feeder = NULL;
	struct ship_tab *first = NULL;
	struct share *sh = NULL;
	struct share_reader r;
	unsigned int nr_walks = 0, k;
	int rc = 0;

	if (!tabs)
		die("out of memory");
	for (k = 0; k < n && !rc; k++)
		rc = tab_prepare(ch, set, &tabs[k], tables[k]);
	if (rc)
		goto out;
	sqldb_statement(d);
	for (k = 0; k < n && !rc; k++) {
		if (tabs[k].skip)
			continue;
		rc = tab_open(d, set, &tabs[k]);
		if (rc)
			break;
		if (!first) {
			first = &tabs[k];
			sh = share_open(first->c);
		}
		if (tabs[k].t->reader) {
			tabs[k].t->reader(tabs[k].c, &r);
			share_add(sh, &r);
		} else if (nr_walks < ARRAY_SIZE(walks)) {
			walks[nr_walks++] = tabs[k].t->walk(tabs[k].c);
		} else {
			die("ship: %s: a third walk", tabs[k].name);
		}
	}
	if (rc || !first)
		goto out;
	/* Two walks: the one with states feeds the other; one: it is read. */
	if (nr_walks == 2 && !(feeder = schedwalk_tee(walks[0], walks[1])))
		die("ship: two walks, not one with states");
	if (nr_walks == 1)
		feeder = walks[0];
	if (feeder) {
		schedwalk_reader(feeder, &r);
		share_add(sh, &r);
	}
	for (;;) {
		bool all = true;

		for (k = 0; k < n && !rc; k++) {
			if (tabs[k].skip || tabs[k].ended)
				continue;
			rc = tab_rows(ch, set, &tabs[k], SHARE_ROWS);
			all &= tabs[k].ended;
		}
		if (rc || all)
			break;
		/* The read's error is the first table's cursor's (share_open()). */
		if (share_read(sh) < 0) {
			error_line("%s: %s and the tables that share its read: %s", set->dir,
				   first->name, first->c->err ? first->c->err : "error");
			rc = SHIP_TRACE;
			break;
		}
	}
	/* Done in order, once every table's rows are in. */
	for (k = 0; k < n && !rc; k++)
		if (!tabs[k].skip)
			rc = tab_done(ch, set, &tabs[k]);
out:
	share_close(sh);
	/* A walk that feeds another is freed before it. */
	for (k = n; k-- > 0;)
		tab_free(&tabs[k]);
	free(tabs);
	return rc;
}

/* ---- the command --------------------------------------------------------------- */

/* The set's id: its trace uuid, and for chunk sets their sequence numbers. */
static int set_id(struct set *set)
{
	const struct rt_metadata *md = set->m->t->md;
	const uint8_t *u = md->uuid;
	int len;

	if (!md->has_uuid) {
		error_line("%s: the trace has no uuid: it cannot be told apart from "
			   "another one, not shipped", set->dir);
		return -1;
	}
	len = snprintf(set->id, sizeof(set->id),
		       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		       u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		       u[10], u[11], u[12], u[13], u[14], u[15]);
	if (set->m->nr_sets)
		snprintf(set->id + len, sizeof(set->id) - (size_t)len, ":%u-%u",
			 set->m->first_seq, set->m->last_seq);
	return 0;
}

/*
 * One directory, every table: 0, SHIP_SERVER or SHIP_TRACE (said).
 * The tables whose producers take pushed rows share one pass over the set
 * (ship_shared()); the others (process from the thread index that pass
 * built, marker, the stack tables) read it only where it holds their
 * events, a pass each; the frames the first pass decodes are kept for
 * them, up to @cache bytes (0: none).
 */
static int ship_dir(struct ch *ch, char *dir, bool strict, uint64_t cache, bool *damaged)
{
	struct sqldb *d = sqldb_open(&dir, 1, strict, false, SQL_MAX_MEMORY_DEFAULT);
	struct set set = { .dir = dir };
	int rc = 0;

	if (!d)
		return SHIP_TRACE;
	/* A set's rows carry its recording's host, boot_id and key: one recording. */
	if (d->ts->nr > 1) {
		error_line("%s: holds %u recordings (chunk sets of other hosts, boots or "
			   "traces), which ship would label as the first: ship each "
			   "recording's directory, or each set's (DIR/chunk-NNNNNN)",
			   dir, d->ts->nr);
		sqldb_close(d);
		return SHIP_TRACE;
	}
	rt_frame_cache_start(cache);
	set.m = &d->ts->m[0];
	if (set_id(&set)) {
		sqldb_close(d);
		rt_frame_cache_stop();
		return SHIP_TRACE;
	}
	buf_str(&set.prefix, set.m->host, strlen(set.m->host));
	buf_str(&set.prefix, set.m->boot_id, strlen(set.m->boot_id));
	set.key = XXH64(set.id, strlen(set.id), 0);
	buf_le(&set.prefix, set.key, 8);
	/* A run of tables that can share a read is read once between them. */
	for (unsigned int i = 0, k; i < ARRAY_SIZE(ship_tables) && !rc; i = k) {
		for (k = i; k < ARRAY_SIZE(ship_tables) && shared(ship_tables[k]); k++)
			;
		if (k > i)
			rc = ship_shared(ch, d, &set, ship_tables + i, k - i);
		else
			rc = ship_table(ch, d, &set, ship_tables[k++]);
	}
	if (!rc)
		report("%s: set %s: %" PRIu64 " rows shipped", dir, set.id, set.rows);
	if (cache) {
		uint64_t decoded, hits;
		size_t kept;

		rt_frame_cache_stats(&decoded, &hits, &kept);
		info("%s: %" PRIu64 " packed frames decoded, %" PRIu64 " taken from the "
		     "cache (%zu bytes kept)", dir, decoded, hits, kept);
	}
	if (sqldb_damage_report(d))
		*damaged = true;
	sqldb_close(d);
	rt_frame_cache_stop();
	free(set.prefix.p);
	return rc;
}

/*
 * The directories to ship, from the operands: a set's manifest.json names
 * its set, and a directory named twice (by itself and by its manifest, as
 * ringtraced --on-chunk's hook gets them: SETDIR MANIFEST) is shipped
 * once.  No operand: the set in RINGTRACE_CHUNK_DIR, which ringtraced
 * gives its hook (so --on-chunk 'ringtrace ship --clickhouse URL' needs
 * no "$1").  Their number, or 0 (said: usage).
 */
static int ship_operands(int argc, char **argv, char **dirs)
{
	char *env[] = { getenv("RINGTRACE_CHUNK_DIR") };
	char **seen = calloc((size_t)argc + 1, sizeof(*seen));
	int n = 0;

	if (!seen)
		die("out of memory");
	if (argc == 0 && env[0] && *env[0]) {
		argv = env;
		argc = 1;
	}
	for (int i = 0; i < argc; i++) {
		char *dir = argv[i], *real;
		struct stat st;
		bool twice = false;

		if (!stat(dir, &st) && S_ISREG(st.st_mode) &&
		    !strcmp(basename(strdupa(dir)), "manifest.json"))
			dir = dirname(strdupa(dir));
		dir = strdup(dir);
		/* A path that does not resolve is kept as given: it fails there. */
		real = realpath(dir, NULL);
		if (!real)
			real = strdup(dir);
		if (!dir || !real)
			die("out of memory");
		for (int k = 0; k < n && !twice; k++)
			twice = !strcmp(seen[k], real);
		if (twice) {
			free(dir);
			free(real);
			continue;
		}
		seen[n] = real;
		dirs[n++] = dir;
	}
	for (int k = 0; k < n; k++)
		free(seen[k]);
	free(seen);
	return n;
}

/* --compress's argument. */
static enum ch_wire wire_named(const char *s)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(ch_wire_names); i++)
		if (!strcmp(s, ch_wire_names[i]))
			return (enum ch_wire)i;
	usage_error("--compress %s: lz4, zstd, gzip or none", s);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "clickhouse", required_argument, NULL, 'c' },
		{ "database", required_argument, NULL, 'd' },
		{ "user", required_argument, NULL, 'u' },
		{ "password", required_argument, NULL, 'p' },
		{ "strict", no_argument, NULL, 's' },
		{ "compress", required_argument, NULL, 'z' },
		{ "cache", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ch ch = { .db = "ringtrace" };
	const char *user = NULL, *password = NULL;
	bool strict = false, damaged = false, failed = false;
	uint64_t one, cache = SHIP_CACHE_DEFAULT;
	char *sql, **dirs;
	int c, ndirs, status = 0;

	while ((c = cmd_getopt(argc, argv, "c:d:u:p:h", opts)) != -1) {
		if (c == 'c')
			ch.url = optarg;
		else if (c == 'd')
			ch.db = optarg;
		else if (c == 'u')
			user = optarg;
		else if (c == 'p')
			password = optarg;
		else if (c == 's')
			strict = true;
		else if (c == 'z')
			ch.wire = wire_named(optarg);
		else if (c == 'C' && !parse_size(optarg, &cache))
			usage_error("--cache %s: not a size in bytes (e.g. 256M, 0 for none)",
				    optarg);
	}
	if (!ch.url)
		usage_error("--clickhouse URL is needed");
	if (strncmp(ch.url, "http://", 7) && strncmp(ch.url, "https://", 8))
		usage_error("--clickhouse %s: not an http:// or https:// URL", ch.url);
	if (!ch_is_name(ch.db))
		usage_error("--database %s: letters, digits and _ only", ch.db);
	dirs = calloc((size_t)(argc - optind) + 1, sizeof(*dirs));
	if (!dirs)
		die("out of memory");
	ndirs = ship_operands(argc - optind, argv + optind, dirs);
	if (!ndirs)
		usage_error("a trace directory or chunk set is needed "
			    "(or RINGTRACE_CHUNK_DIR, as ringtraced --on-chunk sets it)");
	/*
	 * Each set is read once, table by table: an index of it (the stack
	 * index that stack and frame read) is of no use to a later run, and
	 * a ship per chunk set would fill the user's cache with them.
	 */
	sqlcache_disable();
	ch_open(&ch, user, password);

	/* The server answers, the database and the record of sets exist. */
	sql = sqlite3_mprintf("CREATE DATABASE IF NOT EXISTS %s", ch.db);
	if (ch_count(&ch, "SELECT 1", &one) || ch_run(&ch, sql)) {
		sqlite3_free(sql);
		status = 1;
		goto out;
	}
	sqlite3_free(sql);
	sql = sqlite3_mprintf("CREATE TABLE IF NOT EXISTS %s.ringtrace_sets (`set_id` String, "
			      "`set_key` UInt64, `table` String, `rows` UInt64, `host` String, "
			      "`boot_id` String, `dir` String, `shipped_at` DateTime) "
			      "ENGINE = MergeTree() ORDER BY (set_id, table)", ch.db);
	if (ch_run(&ch, sql) ||
	    table_shape(&ch, "ringtrace_sets", sets_cols, ARRAY_SIZE(sets_cols)))
		status = 1;
	sqlite3_free(sql);
	for (int i = 0; i < ndirs && !status; i++) {
		int rc = ship_dir(&ch, dirs[i], strict, cache, &damaged);

		if (rc == SHIP_TRACE)
			failed = true;
		else if (rc)
			status = 1;
	}
	if (status)
		error_line("not every table was shipped: what was is recorded in "
			   "%s.ringtrace_sets, run the same ship again", ch.db);
	else if (failed)
		status = 1;
	else if (damaged)
		status = EXIT_DAMAGED;
	if (ch.wire == CH_WIRE_NONE)
		info("%" PRIu64 " bytes sent (not compressed)", ch.sent);
	else
		info("%" PRIu64 " bytes sent (%" PRIu64 " before %s)", ch.sent, ch.sent_raw,
		     ch_wire_names[ch.wire]);
out:
	ch_close(&ch);
	for (int i = 0; i < ndirs; i++)
		free(dirs[i]);
	free(dirs);
	return status;
}

const struct command cmd_ship = {
	.name = "ship",
	.summary = "ship traces and chunk sets into ClickHouse (ringtrace sql's tables)",
	.help =
"Usage: ringtrace ship --clickhouse URL [OPTIONS] [TRACE|SET...]\n"
"\n"
"Insert each trace directory or chunk set into ClickHouse over its HTTP\n"
"interface, as the rows of ringtrace sql's tables (raw, thread, process,\n"
"sched_slice, thread_state, syscall, wakeup, irq, softirq, marker, lost,\n"
"sample, stack, frame, trace),\n"
"each row with host, boot_id, set_key, day and wall_ts (ts in ns since the\n"
"epoch) in front.  Tables are made when missing (MergeTree, partitioned by\n"
"day, ordered by host and wall_ts); one of another shape is an error.\n"
"\n"
"A set's manifest.json names its set, and a directory named twice is\n"
"shipped once: a program given to ringtraced --on-chunk alone gets SET and\n"
"SET/manifest.json.  With no TRACE|SET, the set in $RINGTRACE_CHUNK_DIR,\n"
"which ringtraced gives its hook: --on-chunk 'ringtrace ship --clickhouse\n"
"URL' ships each set as it closes (exit 1, a server down: the set stays on\n"
"disk and the next start of ringtraced hands it over again).\n"
"\n"
"Shipping is idempotent: DB.ringtrace_sets records each set and table\n"
"once all its rows are in; shipping it again skips it, and a ship that was\n"
"killed mid-way deletes the rows it left before sending them again.  The\n"
"rule: Documentation/ringtrace/fleet.rst.\n"
"\n"
"  -c, --clickhouse URL  the server's HTTP interface, e.g. http://host:8123/\n"
"                     (user:password@ in it: HTTP basic authentication)\n"
"  -d, --database DB  the database (default ringtrace), made when missing\n"
"  -u, --user USER    the user (HTTP basic authentication)\n"
"  -p, --password PW  its password\n"
"      --compress HOW lz4 (default) or zstd: ClickHouse's native compressed\n"
"                     blocks; gzip (Content-Encoding) or none\n"
"      --cache SIZE   decoded frames the tables' passes over a set share\n"
"                     (default 256M; 0: each pass decodes them again)\n"
"      --strict       damage is an error instead of read past\n"
"  -h, --help         this text\n"
"\n"
"Each table shipped is a line on stdout (DIR: TABLE: N rows), each set a\n"
"last one (DIR: set ID: N rows shipped); each batch sent a line on stderr,\n"
"each directory what its passes decoded (DIR: N packed frames decoded, M\n"
"taken from the cache (K bytes kept)), and the end the bytes of the\n"
"batches' bodies (N bytes sent (M before lz4), M their RowBinary; with\n"
"--compress none, N bytes sent (not compressed)).\n"
"\n"
"Exit status: 0; 1 the server failed or refused (its answer said; what\n"
"was done stays recorded, run the same ship again) or a directory could\n"
"not be read (a damaged one under --strict too; one holding several\n"
"recordings' chunk sets: said, the next one shipped); 2 usage; 3\n"
"shipped, but damage was read past (said on stderr).\n",
	.run = run,
};
