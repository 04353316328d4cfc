/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace sql: SQLite over traces, nothing loaded up front.
 *
 * Every table is an eponymous virtual table (no CREATE): a SELECT opens a
 * cursor, xFilter turns what SQLite passes (ts ranges, cpu, event name,
 * trace/host, IN lists, LIMIT) into a struct scan_spec (plan.c), and the
 * table's producer pulls rows from a scan (scan.c): per member a view of
 * its own (tset_view_open(): fresh streams, only the CPUs asked for, a
 * window seeking with the chunk indexes), events of other names never
 * decoded (rt_stream_set_wanted()).  A table is a struct sql_table in a
 * t_*.c file of its own, listed once in db.c's array.
 *
 *   sql.c        the command: options, statements, prompt, exit status
 *   db.c         the connection, the tables' registration, damage, scan_stats
 *   vtab.c       the sqlite3_module every table shares, sql_result_*(),
 *                the cursor ship reads rows through without SQLite
 *   plan.c       xBestIndex and the constraints' values into a scan_spec
 *   scan.c       a cursor's reading of the members
 *   out.c        table, CSV and JSON output
 *   queries.c    the shipped queries (--list, --stat, -q)
 *   spanq.c      the rows of tables that pair events (syscall, wakeup,
 *                irq, softirq)
 *   share.c      one read of a trace feeding several tables (ship)
 *   schedwalk.c  the scheduling spans (sched_slice, thread_state)
 *   sqlcache.c   the indexes (checkpoints, run lists) kept on disk between runs
 *   critpath.c   critical_path()'s walk over those spans
 *   threadidx.c  the threads and processes (thread, process)
 *   stackrows.c  the stacks' frames and ids (sample, stack, frame)
 *   stackidx.c   a trace's distinct stacks and frames (stack, frame)
 *   runidx.c     where each thread ran, per CPU (raw's utid =)
 *   remote.c     sql --clickhouse: the statements run on a server
 *   clickhouse.c the HTTP client of a ClickHouse server (sql, ship)
 *   buf.c        a growing byte buffer (ship's batches, raw's args, --json)
 *   t_*.c        one table each
 *
 * Values from a trace are only ever bound as results (sqlite3_result_*),
 * never written into SQL text.
 */
#ifndef RINGTRACE_SQL_H
#define RINGTRACE_SQL_H

#include <sqlite3.h>
#include <string.h>

#include "../traceset.h"
#include "buf.h"

/* ---- the database ------------------------------------------------------------ */

/* What one cursor's scans read, summed over its xFilter calls (scan_stats). */
struct scan_stat {
	const char *table;
	char plan[128];			/* the plan's idxStr */
	uint64_t filters;		/* xFilter calls */
	uint64_t members;		/* member views opened */
	uint64_t cpus;			/* streams opened */
	uint64_t frames;		/* zstd frames decoded */
	uint64_t bytes;			/* bytes decoded (decompressed, or read plain) */
	uint64_t packets;		/* packets handed out */
	uint64_t events;		/* events decoded (handed out by the decoder) */
	uint64_t rows;			/* rows given to SQLite */
};

struct sqldb {
	sqlite3 *db;
	struct tset *ts;
	bool wall;			/* ts columns in epoch ns */
	bool seek;			/* windows seek (RINGTRACE_SEEK=0: not) */
	/* The statement running and the last one that read a table (scan_stats'). */
	struct scan_stat *cur, *last;
	unsigned int nr_cur, nr_last;
	/* Damage read past by any cursor, each place once (db_damage()). */
	char **damage;
	unsigned int nr_damage;
	unsigned int *undescribed;	/* per member and CPU index: beyond RT_MSGS_KEPT */
	char **notes;
	unsigned int nr_notes;
	unsigned int cpu_slots;		/* per member in the two arrays above */
	uint64_t max_memory;		/* --max-memory: bytes, 0 none */
	/* Per member, its scheduling checkpoints once a window needed them. */
	struct sw_index **sched_idx;
	/* Per member, its scheduler records once a window looked (schedstart.c). */
	struct sp_member **sched_rec;
	/* The pairing tables' checkpoints (spanq.c), a list. */
	struct spanq_index *span_idx;
	/* Per member, its run lists once a utid needed them (runidx.c). */
	struct run_index **run_idx;
	/*
	 * Per member: a read of all of it gave no stack pair (scan.c), so
	 * the stack tables' next scans of it read nothing.
	 */
	bool *no_pairs;
	/*
	 * Per member: which events whole reads of it decoded, and which of
	 * those it holds (scan.c); a scan whose rows are events it does
	 * not hold does not read it.
	 */
	struct scan_events **events_read;
	/*
	 * Per member, its threads and processes (threadidx.h) once a
	 * cursor built them from all of it: [2 * member + with times].
	 */
	struct threadidx **thread_idx;
	/* Per member, its stacks and frames once a cursor needed them (stackidx.h). */
	struct stack_index **stack_idx;
	/* Damaged places and index notes any view read past, counted each time. */
	uint64_t read_past;
};

struct sw_index;
struct spanq_index;
/* schedwalk.c: a member's scheduling index freed. */
void schedwalk_index_free(struct sw_index *ix);
struct sp_member;
/* schedstart.c: a member's scheduler records freed. */
void schedpack_member_free(struct sp_member *pm);
/* spanq.c: a list of the pairing tables' checkpoints freed. */
void spanq_index_free(struct spanq_index *ix);
struct threadidx;
/* threadidx.c: a member's threads and processes freed. */
void threadidx_free(struct threadidx *x);
struct stack_index;
/* stackidx.c: a member's stack index freed. */
void stackidx_free(struct stack_index *ix);

/*
 * --max-memory's default (plan-31 D10): 1 GiB, of which SQLite's heap may
 * take half (sqlite3_hard_heap_limit64()); the other half is the readers',
 * which a trace's length does not grow (sql.rst, "Memory").
 */
#define SQL_MAX_MEMORY_DEFAULT	(1ULL << 30)

/* The directories as one database, or NULL said. */
struct sqldb *sqldb_open(char *const *dirs, unsigned int n, bool strict, bool wall,
			 uint64_t max_memory);
void sqldb_close(struct sqldb *d);
/* The table named @name, or NULL. */
const struct sql_table *sql_table_find(const char *name);
/* Every table, what its rows are and its columns (--help). */
void sqldb_help_tables(FILE *f);
/* A new statement starts: scan_stats will tell the last one that read a table. */
void sqldb_statement(struct sqldb *d);
/* A cursor's counters: an index into d->cur. */
unsigned int sqldb_stat_new(struct sqldb *d, const char *table);
static inline struct scan_stat *sqldb_stat(struct sqldb *d, unsigned int i)
{
	return &d->cur[i];
}
/* The damage and notes of a view's streams (member @member), kept once. */
void sqldb_view_damage(struct sqldb *d, unsigned int member, const struct rt_trace *t);
/* Every damaged place read past, on stderr; how many. */
unsigned int sqldb_damage_report(const struct sqldb *d);
/* Nanoseconds of a member's clock cycles (with --wall: since the epoch). */
int64_t sqldb_ns(const struct sqldb *d, unsigned int member, uint64_t cycles);

/* ---- tables -------------------------------------------------------------------- */

/* What a column's constraints push down (plan.c). */
enum sql_push {
	SQL_PUSH_NONE,
	SQL_PUSH_TS,			/* =, <, <=, >, >=: the window */
	SQL_PUSH_CPU,			/* =, IN: the streams opened */
	SQL_PUSH_NAME,			/* =, IN: the events decoded */
	SQL_PUSH_TRACE,			/* =, IN: the members read */
	SQL_PUSH_HOST,			/* =, IN: the members read */
	SQL_PUSH_ARG,			/* =: a table-valued function's argument */
	/*
	 * A span's ts or end_ts (=, <, <=, >, >=): the stretch of time read
	 * (spec.lo, spec.hi); SQLite still checks the terms.
	 */
	SQL_PUSH_SPAN,
	/*
	 * A utid or upid (trace << 32 | id), =: the members read (the trace
	 * it names); SQLite still checks the term.
	 */
	SQL_PUSH_UTID,
	/*
	 * A thread's tid, =: in every trace, what SCAN_RUNS reads for the
	 * utid (trace << 32 | tid); SQLite still checks the term.
	 */
	SQL_PUSH_TID,
	/*
	 * A waker's utid, =: the trace it names, and there only the time
	 * from its first run to its last (runidx_waker_window()); SQLite
	 * still checks the term.
	 */
	SQL_PUSH_WAKER,
	/*
	 * A stack's or a frame's id, =, IN: looked up in the member's stack
	 * index (stackidx.h), no other row listed.
	 */
	SQL_PUSH_ID,
};

/* A table-valued function's arguments at most (its HIDDEN arg_* columns). */
#define SQL_MAX_ARGS	4

struct sql_column {
	const char *name;
	const char *type;		/* "INTEGER", "TEXT" */
	enum sql_push push;
};

/* The trace and host columns: vtab.c answers them (struct sql_table's member()). */
#define SQL_COL_TRACE	{ "trace", "INTEGER", SQL_PUSH_TRACE }
#define SQL_COL_HOST	{ "host", "TEXT", SQL_PUSH_HOST }

/*
 * What the constraints a cursor was given leave to read.  Sets: NULL
 * (n == 0 and !set) = no constraint; set with n == 0 = nothing matches.
 */
struct scan_spec {
	bool empty;			/* a constraint no row can meet */
	bool has_begin, has_end;
	int64_t begin, end;		/* ts in ns, both included */
	bool cpus_set, names_set, members_set;
	int64_t *cpus;
	unsigned int nr_cpus;
	char **names;
	unsigned int nr_names;
	bool *members;			/* by member; NULL unless members_set */
	/*
	 * utid = @utid (a column named utid or wakee_utid, SQL_PUSH_UTID):
	 * SCAN_RUNS reads its runs, SCAN_NAMED where it is named.
	 */
	bool utid_set;
	int64_t utid;
	/* tid = @tid (SQL_PUSH_TID): SCAN_RUNS reads its runs in every trace. */
	bool tid_set;
	int64_t tid;
	/* id = or IN (SQL_PUSH_ID): the ids asked for. */
	bool ids_set;
	int64_t *ids;
	unsigned int nr_ids;
	/* waker_utid = @waker (SQL_PUSH_WAKER): runidx_waker_window() narrows lo/hi. */
	bool waker_set;
	int64_t waker;
	/*
	 * Span tables (SQL_PUSH_SPAN): every row asked for overlaps [lo, hi]
	 * (end_ts >= lo, ts <= hi), ns, both included; a span's ts <= end_ts,
	 * so a bound on either column bounds both.
	 */
	bool has_lo, has_hi;
	int64_t lo, hi;
	/*
	 * Each member's threads learnt from its frames by a window at the
	 * clock's end: packed chunks' thread tables, no frame decoded (what
	 * is read all the same -- not seeking, files without tables -- only
	 * fed to the threads' table).
	 */
	bool threads_only;
	int64_t limit;			/* rows at most; -1: all */
	/* SQL_PUSH_ARG columns' values, in column order; not given: !set. */
	struct {
		bool set, null, integer;	/* integer: @v holds it */
		int64_t v;
	} args[SQL_MAX_ARGS];
};

struct sql_cursor;

/*
 * Where a table's column() puts a value: SQLite's result (@ctx, a
 * statement's row), or else @sink, which takes it at once (ship's RowBinary
 * encoder: no statement between the producer and the wire).  The
 * sql_out_*() calls are sqlite3_result_*()'s, to either.
 */
struct sql_sink {
	void (*null)(struct sql_sink *k);
	void (*integer)(struct sql_sink *k, int64_t v);
	void (*real)(struct sql_sink *k, double v);
	/* @s is the caller's: copied before the call returns. */
	void (*text)(struct sql_sink *k, const char *s, size_t len);
	/* The value could not be made: @msg, NULL for out of memory. */
	void (*error)(struct sql_sink *k, const char *msg);
};

struct sql_out {
	sqlite3_context *ctx;
	struct sql_sink *sink;
};

static inline void sql_out_int64(struct sql_out *o, int64_t v)
{
	if (o->ctx)
		sqlite3_result_int64(o->ctx, v);
	else
		o->sink->integer(o->sink, v);
}

static inline void sql_out_int(struct sql_out *o, int v)
{
	sql_out_int64(o, v);
}

static inline void sql_out_null(struct sql_out *o)
{
	if (o->ctx)
		sqlite3_result_null(o->ctx);
	else
		o->sink->null(o->sink);
}

static inline void sql_out_double(struct sql_out *o, double v)
{
	if (o->ctx)
		sqlite3_result_double(o->ctx, v);
	else
		o->sink->real(o->sink, v);
}

/* sqlite3_result_text()'s: @s NULL is NULL, @len < 0 up to its NUL, @del frees it. */
static inline void sql_out_text(struct sql_out *o, const char *s, int len,
				void (*del)(void *))
{
	if (o->ctx) {
		sqlite3_result_text(o->ctx, s, len, del);
		return;
	}
	if (!s)
		o->sink->null(o->sink);
	else
		o->sink->text(o->sink, s, len < 0 ? strlen(s) : (size_t)len);
	if (s && del != SQLITE_STATIC && del != SQLITE_TRANSIENT)
		del((void *)s);
}

static inline void sql_out_error(struct sql_out *o, const char *msg, int len)
{
	(void)len;
	if (o->ctx)
		sqlite3_result_error(o->ctx, msg, -1);
	else
		o->sink->error(o->sink, msg);
}

static inline void sql_out_error_nomem(struct sql_out *o)
{
	if (o->ctx)
		sqlite3_result_error_nomem(o->ctx);
	else
		o->sink->error(o->sink, NULL);
}

struct share_reader;

struct sql_table {
	const char *name;
	const char *what;		/* one line: what its rows are */
	const struct sql_column *cols;
	unsigned int nr_cols;
	size_t priv_size;		/* the table's cursor state (c->priv) */
	bool scan_rows;			/* a row per item kept: LIMIT pushed down */
	bool no_stats;			/* scan_stats does not list its cursors */
	bool ordered;			/* rows in order of its SQL_PUSH_TS column */
	/* Rows from the cursor's spec on (xFilter): 0, or -1 with c->err; NULL: none to start. */
	int (*filter)(struct sql_cursor *c);
	/*
	 * The next row: 1, 0 at the end, -1 with c->err set; SQL_WAIT: a
	 * cursor fed by a shared read (queue) has no row ready until it
	 * reads on.
	 */
	int (*next)(struct sql_cursor *c);
	/* A column of the row (not one vtab.c answers, see member). */
	void (*column)(struct sql_cursor *c, struct sql_out *ctx, int col);
	/*
	 * The row's member: vtab.c answers the SQL_PUSH_TRACE and
	 * SQL_PUSH_HOST columns with it.  Required by a table with either.
	 */
	unsigned int (*member)(const struct sql_cursor *c);
	/*
	 * The cursor (of every row, nothing read yet) fed by a share from now
	 * on: the reader share_add() takes (share.h); NULL: the table reads
	 * its own scan.  ship feeds several tables from one read of a trace.
	 */
	void (*reader)(struct sql_cursor *c, struct share_reader *r);
	/*
	 * A scheduling table's walk (schedwalk.h), NULL for the others: ship
	 * has sched_slice's spans from thread_state's walk (schedwalk_tee()).
	 */
	struct schedwalk *(*walk)(struct sql_cursor *c);
	/*
	 * Its state freed (before each filter and at close); vtab.c then
	 * zeroes or frees c->priv, the table need not clear its fields.
	 */
	void (*reset)(struct sql_cursor *c);
};

/* A table's next() of a cursor a shared read feeds: no row ready yet. */
#define SQL_WAIT	2

struct schedwalk;

struct sql_cursor {
	sqlite3_vtab_cursor base;	/* first: SQLite's */
	struct sqldb *db;
	const struct sql_table *t;
	struct scan_spec spec;
	uint64_t col_used;		/* bit per column used (sql_col_used()) */
	unsigned int stat;		/* sqldb_stat() */
	int64_t rowid;
	bool eof;
	char *err;			/* sqlite3_mprintf()'d, for zErrMsg */
	void *priv;
};

/* Sets c->err; returns -1. */
__attribute__((format(printf, 2, 3)))
int sql_error(struct sql_cursor *c, const char *fmt, ...);
/* Whether the statement reads column @col (from 29 on: one bit for all, kept). */
static inline bool sql_col_used(const struct sql_cursor *c, int col)
{
	return col >= 29 ? (c->col_used >> 29) & 1 : (c->col_used >> col) & 1;
}

/* A host column's value: member @member's host. */
void sql_result_host(const struct sql_cursor *c, struct sql_out *ctx, unsigned int member);
/* A utid column (member << 32 | tid): NULL for an unknown thread (@tid < 0). */
void sql_result_utid(struct sql_out *ctx, unsigned int member, int32_t tid);
/* @s (copied), or NULL for a NULL @s. */
void sql_result_text_or_null(struct sql_out *ctx, const char *s);
/* @v, or NULL when it is not @known. */
void sql_result_int_or_null(struct sql_out *ctx, bool known, int64_t v);

extern const struct sql_table sql_t_trace, sql_t_raw, sql_t_ftrace_event,
	sql_t_lost, sql_t_event_count, sql_t_scan_stats;
extern const struct sql_table sql_t_sched_slice, sql_t_thread_state;
extern const struct sql_table sql_t_thread, sql_t_process;
extern const struct sql_table sql_t_critical_path;
extern const struct sql_table sql_t_syscall, sql_t_wakeup, sql_t_irq, sql_t_softirq,
	sql_t_marker;
extern const struct sql_table sql_t_sample, sql_t_stack, sql_t_frame;

/* vtab.c: @t registered in @d as an eponymous virtual table. */
int sql_vtab_register(struct sqldb *d, const struct sql_table *t);

/*
 * vtab.c: a table's rows without SQLite (ship), through what its virtual
 * table runs: a cursor on every row of every member, all columns
 * (sql_cursor_column(): the trace and host columns too), or NULL with
 * *@err (sqlite3_mprintf()'d).  sql_cursor_next(): 1 a row, 0 the end,
 * -1 with c->err, SQL_WAIT (a cursor a share feeds: share.h) none ready yet.
 */
struct sql_cursor *sql_cursor_all(struct sqldb *d, const struct sql_table *t, char **err);
int sql_cursor_next(struct sql_cursor *c);
void sql_cursor_column(struct sql_cursor *c, struct sql_out *o, int col);
void sql_cursor_free(struct sql_cursor *c);

/* plan.c: xBestIndex, and the argv of xFilter into c->spec. */
int sql_plan_best(const struct sql_table *t, unsigned int nr_members,
		  sqlite3_index_info *info);
int sql_plan_spec(struct sql_cursor *c, int idx, const char *plan, int argc,
		  sqlite3_value **argv);
void sql_spec_free(struct scan_spec *s);
bool sql_spec_cpu(const struct scan_spec *s, int64_t cpu);
bool sql_spec_name(const struct scan_spec *s, const char *name);
bool sql_spec_ts(const struct scan_spec *s, int64_t ts);

/* ---- the scan (scan.c) ---------------------------------------------------------- */

/* What whole reads of a member found, by event position in its metadata. */
struct scan_events {
	unsigned int nr_events;
	bool lost;			/* a loss (RT_ITEM_LOST) was read */
	uint8_t flags[];		/* SCAN_EV_* */
};
#define SCAN_EV_DECODED	1U		/* a whole read decoded every one of it */
#define SCAN_EV_HELD	2U		/* and there was one */

/* What a producer wants of the items. */
enum {
	SCAN_EVENTS = 1U << 0,		/* events (of the spec's names) */
	SCAN_LOSSES = 1U << 1,		/* RT_ITEM_LOST items */
	SCAN_GAPS = 1U << 2,		/* missing chunk sets (row.gap) */
	SCAN_THREADS = 1U << 3,		/* row.tid: the owner thread */
	SCAN_MEMBER_END = 1U << 4,	/* a row (no it, no gap) as a member ends */
	SCAN_STACKS = 1U << 5,		/* row.pair: each event's stacks (threads too) */
	/*
	 * With the spec's utid: on each CPU only the stretch from the first
	 * to the last run of its thread there (runidx.c), no other CPU; for
	 * a producer whose rows are the owner's (row.tid) and that leaves
	 * the utid term to SQLite.
	 */
	SCAN_RUNS = 1U << 6,
	/*
	 * With the spec's utid: on each CPU only the stretch from the first
	 * to the last scheduler event naming its thread there (a switch's
	 * prev_tid or next_tid, a wakeup's tid: runidx.h), no other CPU; for
	 * a producer whose rows are made of those events alone.
	 */
	SCAN_NAMED = 1U << 7,
};

struct scan_row {
	unsigned int member;
	const struct rt_item *it;	/* NULL: a gap (or SCAN_MEMBER_END's row) */
	const struct tset_gap *gap;
	int32_t tid;			/* SCAN_THREADS; -1 unknown */
	int64_t ts;			/* ns (sqldb_ns()) */
	/*
	 * SCAN_STACKS: an event's stack pair (it and gap NULL), before the
	 * item that completed it; tid the thread (a sample's own), pid the
	 * process its user frames are of (stack_pair_pid()).
	 */
	const struct stack_pair *pair;
	int32_t pid;
};

struct scan;
/*
 * Items of the members @c->spec selects, one member after another, in
 * time order within a member (CPUs merged), its gaps after its items.
 */
struct scan *scan_open(struct sql_cursor *c, unsigned int what);
/* scan_open() by @sp (kept by the caller) instead of the cursor's spec. */
struct scan *scan_open_spec(struct sql_cursor *c, unsigned int what,
			    const struct scan_spec *sp);
/* The next item the spec keeps: 1 with *@row, 0 at the end, -1 (c->err). */
int scan_next(struct scan *s, struct scan_row *row);
/*
 * SCAN_THREADS: what the member of the last row knows of threads (names,
 * pids: rt_threads_comm()...) at that row; NULL otherwise.
 */
const struct rt_threads *scan_threads(const struct scan *s);
/* SCAN_STACKS: what names the frames of the member of the last row. */
struct stack_names *scan_names(const struct scan *s);
void scan_close(struct scan *s);

/* ---- shipped queries (queries.c) ------------------------------------------------ */

struct sql_query {
	const char *name;
	const char *what;		/* one line */
	const char *sql;
	bool stat;			/* one of --stat's, in report --stat's order */
	const char *clickhouse;		/* the same over shipped tables (sql
					   --clickhouse), NULL: none */
};

/* Every shipped query (--list), @n of them. */
const struct sql_query *sql_queries(unsigned int *n);
/* The query named @name, or NULL. */
const struct sql_query *sql_query_find(const char *name);
/* The SQL function they use (fixed()) and the slice view, made in @db. */
int sql_functions_register(sqlite3 *db);

/* ---- sql --clickhouse (remote.c) --------------------------------------------- */

struct ch;
struct out;
/* Every statement of @text run on the server, printed by @o: 0, or 1 said. */
int sql_clickhouse(struct ch *ch, struct out *o, const char *text);

/* ---- output (out.c) ---------------------------------------------------------------- */

enum out_mode { OUT_TABLE, OUT_CSV, OUT_JSON };

struct out;
struct out *out_new(enum out_mode mode, FILE *f);
/* A statement's rows, all of them: SQLITE_DONE, or SQLite's error. */
int out_statement(struct out *o, sqlite3_stmt *st);
/* Freed (each statement's output is whole when out_statement() returns). */
void out_free(struct out *o);

/* A JSON string of @len bytes of @s (up to a NUL) appended to @b. */
void sql_json_text(struct buf *b, const uint8_t *s, size_t len);

#endif /* RINGTRACE_SQL_H */
