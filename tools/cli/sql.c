// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace sql TRACE... ['SELECT ...']: SQLite over trace directories and
 * chunk sets, nothing loaded up front (sql/sql.h).  The statements come
 * from the last argument (when it is not a directory), -f FILE, or stdin
 * -- a prompt when stdin is a terminal.  Each statement's rows are
 * printed as it runs; the first failing statement ends a non-interactive
 * run (SQLite's message, exit 1).  Damage read past is said on stderr at
 * the end, exit 3, as report does.  Ctrl-C (SIGINT) interrupts the
 * statement running (sqlite3_interrupt()): at the prompt the next one is
 * asked for, else the run ends there, exit 130 as a shell's for SIGINT,
 * what was printed whole rows (a JSON array closed).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sql/clickhouse.h"
#include "sql/sql.h"
#include "sql/sqlcache.h"

#define EXIT_INTERRUPTED	130	/* 128 + SIGINT, as a shell says it */

static sqlite3 *running_db;
static const char *max_memory_arg;	/* --max-memory as given, for its message */

/* Ctrl-C stops the statement running, not the program. */
static void on_sigint(int sig)
{
	(void)sig;
	if (running_db)
		sqlite3_interrupt(running_db);
}

/*
 * A statement failed: SQLite's message, or, when it ran out of the heap
 * --max-memory gives it, what to do about that.
 */
static void statement_error(struct sqldb *d)
{
	if (sqlite3_errcode(d->db) == SQLITE_NOMEM && d->max_memory)
		error_line("the statement needs more memory than --max-memory %s allows "
			   "(SQLite's heap had %lld of its %llu MiB and asked for more): narrow it "
			   "(a ts range, cpu, name) or keep less per group, or raise --max-memory",
			   max_memory_arg ? max_memory_arg : "1G",
			   (long long)(sqlite3_memory_highwater(0) >> 20),
			   (unsigned long long)(d->max_memory / 2) >> 20);
	else
		error_line("%s", sqlite3_errmsg(d->db));
}

/*
 * RINGTRACE_SQL_FRAMES set (not empty): after each statement, on stderr,
 * the zstd frames its cursors decompressed (scan_stats' frames_read),
 * those the tables' rows needed apart from those of the indexes it built
 * (run, sched, span and stack index: a first query's one pass).
 */
static void frames_line(const struct sqldb *d)
{
	const char *e = getenv("RINGTRACE_SQL_FRAMES");
	uint64_t rows = 0, index = 0;

	if (!e || !*e)
		return;
	for (unsigned int i = 0; i < d->nr_cur; i++) {
		const struct scan_stat *st = &d->cur[i];

		if (strstr(st->table, " index"))
			index += st->frames;
		else
			rows += st->frames;
	}
	fprintf(stderr, "sql: frames decompressed: %llu (rows %llu, indexes %llu)\n",
		(unsigned long long)(rows + index), (unsigned long long)rows,
		(unsigned long long)index);
}

/*
 * Every statement of @sql, printed by @o: 0, 1 after SQLite's error, or
 * EXIT_INTERRUPTED when Ctrl-C stopped one.
 */
static int run_sql(struct sqldb *d, struct out *o, const char *sql)
{
	const char *tail = sql;

	while (tail && *tail) {
		sqlite3_stmt *st = NULL;
		const char *next;
		int rc;

		rc = sqlite3_prepare_v2(d->db, tail, -1, &st, &next);
		if (rc != SQLITE_OK) {
			statement_error(d);
			return 1;
		}
		tail = next;
		if (!st)		/* a comment or white space */
			continue;
		sqldb_statement(d);
		rc = out_statement(o, st);
		frames_line(d);
		if (rc != SQLITE_DONE) {
			fflush(stdout);
			statement_error(d);
			sqlite3_finalize(st);
			return rc == SQLITE_INTERRUPT ? EXIT_INTERRUPTED : 1;
		}
		sqlite3_finalize(st);
	}
	return 0;
}

/* All of @f. */
static char *read_all(FILE *f, const char *name)
{
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		die("out of memory");
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (n + 1 < cap) {
			if (ferror(f))
				die("%s: %s", name, strerror(errno));
			break;
		}
		cap *= 2;
		buf = realloc(buf, cap);
		if (!buf)
			die("out of memory");
	}
	buf[n] = 0;
	return buf;
}

/* The prompt: a statement once sqlite3_complete() says it ends. */
static int prompt(struct sqldb *d, struct out *o)
{
	sqlite3_str *stmt = sqlite3_str_new(NULL);
	char *line = NULL;
	size_t cap = 0;
	int status = 0;

	for (;;) {
		char *text;

		fputs(sqlite3_str_length(stmt) ? "   ...> " : "sql> ", stdout);
		fflush(stdout);
		if (getline(&line, &cap, stdin) < 0)
			break;
		sqlite3_str_appendall(stmt, line);
		text = sqlite3_str_value(stmt);
		if (!text || !sqlite3_complete(text))
			continue;
		if (run_sql(d, o, text) == 1)	/* an interrupted one is no error */
			status = 1;
		sqlite3_str_reset(stmt);
	}
	putchar('\n');
	free(line);
	sqlite3_free(sqlite3_str_finish(stmt));
	return status;
}

/* --list: every shipped query, its name, what it gives, its SQL. */
static void list_queries(void)
{
	unsigned int n;
	const struct sql_query *q = sql_queries(&n);

	for (unsigned int i = 0; i < n; i++)
		printf("%s-- %s: %s%s\n%s", i ? "\n" : "", q[i].name, q[i].what,
		       q[i].stat ? " (--stat)" : "", q[i].sql);
}

/*
 * The shipped queries -q named, or --stat's: 0, or 1 after SQLite's error.
 * With @ch, their ClickHouse versions, on its server.
 */
static int run_shipped(struct sqldb *d, struct ch *ch, struct out *o,
		       enum out_mode mode, const char *name)
{
	unsigned int n, done = 0;
	const struct sql_query *q = sql_queries(&n);
	int status = 0;

	for (unsigned int i = 0; i < n && !status; i++) {
		if (name ? strcmp(q[i].name, name) : !q[i].stat)
			continue;
		if (ch && !q[i].clickhouse) {
			if (name)
				error_line("%s: no ClickHouse version of it "
					   "(Documentation/ringtrace/fleet.rst)", name);
			status = name ? 1 : 0;
			continue;
		}
		if (mode == OUT_TABLE)
			printf("%s-- %s: %s\n", done++ ? "\n" : "", q[i].name, q[i].what);
		fflush(stdout);
		status = ch ? sql_clickhouse(ch, o, q[i].clickhouse) : run_sql(d, o, q[i].sql);
	}
	return status;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/*
 * The last argument, not a directory, is the statements -- unless it
 * reads as a path (a '/', no blank) or names a file: a trace mistyped,
 * which SQLite would call a syntax error.
 */
static bool is_path(const char *arg)
{
	struct stat st;

	return (strchr(arg, '/') && !strpbrk(arg, " \t\n")) || !stat(arg, &st);
}

/*
 * --clickhouse: the statements (the one argument, -f FILE's or stdin's),
 * --stat or -q NAME run on the server, printed as on a trace.
 */
static int run_clickhouse(struct ch *ch, const char *user, const char *password,
			  enum out_mode mode, const char *file, const char *shipped,
			  bool stat, int nargs, char **args)
{
	char *text = NULL, *url;
	struct out *o;
	int status;

	if (strncmp(ch->url, "http://", 7) && strncmp(ch->url, "https://", 8))
		usage_error("--clickhouse %s: not an http:// or https:// URL", ch->url);
	if (!ch_is_name(ch->db))
		usage_error("--database %s: letters, digits and _ only", ch->db);
	if (nargs > ((shipped || stat || file) ? 0 : 1))
		usage_error("--clickhouse takes no trace directory: the statements are its "
			    "one argument");
	if (shipped && !sql_query_find(shipped))
		usage_error("no shipped query %s (--list lists them)", shipped);
	if ((shipped || stat) && (file || (shipped && stat)))
		usage_error("one of -q, --stat, -f and statements");
	if (file) {
		FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;

		if (!f)
			usage_error("%s: %s", file, strerror(errno));
		text = read_all(f, file);
		if (f != stdin)
			fclose(f);
	} else if (!nargs && !shipped && !stat) {
		text = read_all(stdin, "stdin");
	}
	ch_open(ch, user, password);
	/* The answers' format and the database, for every statement. */
	if (asprintf(&url, "%s%sdefault_format=TabSeparatedWithNamesAndTypes&database=%s",
		     ch->url, strchr(ch->url, '?') ? "&" : "?", ch->db) < 0)
		die("out of memory");
	ch->url = url;
	o = out_new(mode, stdout);
	if (shipped || stat)
		status = run_shipped(NULL, ch, o, mode, shipped);
	else
		status = sql_clickhouse(ch, o, text ? text : args[0]);
	out_free(o);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	ch_close(ch);
	free(url);
	free(text);
	return status;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "wall", no_argument, NULL, 'w' },
		{ "strict", no_argument, NULL, 's' },
		{ "max-memory", required_argument, NULL, 'm' },
		{ "file", required_argument, NULL, 'f' },
		{ "query", required_argument, NULL, 'q' },
		{ "stat", no_argument, NULL, 'S' },
		{ "list", no_argument, NULL, 'l' },
		{ "clickhouse", required_argument, NULL, 'C' },
		{ "database", required_argument, NULL, 'D' },
		{ "user", required_argument, NULL, 'U' },
		{ "password", required_argument, NULL, 'P' },
		{ "no-cache", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum out_mode mode = OUT_TABLE;
	bool wall = false, strict = false;
	uint64_t max_memory = SQL_MAX_MEMORY_DEFAULT;
	const char *file = NULL, *query = NULL, *shipped = NULL;
	bool stat = false;
	char *text = NULL;
	struct ch ch = { .db = "ringtrace" };
	const char *user = NULL, *password = NULL;
	struct sqldb *d;
	struct out *o;
	int c, ndirs, status;

	max_memory_arg = NULL;
	while ((c = cmd_getopt(argc, argv, "f:q:h", opts)) != -1) {
		if (c == 'c')
			mode = OUT_CSV;
		else if (c == 'j')
			mode = OUT_JSON;
		else if (c == 'w')
			wall = true;
		else if (c == 's')
			strict = true;
		else if (c == 'm') {
			/* Below 1 MiB SQLite cannot even hold its schema. */
			if (!parse_size(optarg, &max_memory) ||
			    (max_memory && max_memory < (1 << 20)))
				usage_error("--max-memory wants a size of at least 1M (K, M, G) or 0, not '%s'",
					    optarg);
			max_memory_arg = optarg;
		}
		else if (c == 'f')
			file = optarg;
		else if (c == 'q')
			shipped = optarg;
		else if (c == 'S')
			stat = true;
		else if (c == 'N')
			sqlcache_disable();
		else if (c == 'l') {
			list_queries();
			return 0;
		} else if (c == 'C')
			ch.url = optarg;
		else if (c == 'D')
			ch.db = optarg;
		else if (c == 'U')
			user = optarg;
		else if (c == 'P')
			password = optarg;
	}
	if (ch.url)
		return run_clickhouse(&ch, user, password, mode, file, shipped, stat,
				      argc - optind, argv + optind);
	if (shipped && !sql_query_find(shipped))
		usage_error("no shipped query %s (--list lists them)", shipped);
	if ((shipped || stat) && (file || (shipped && stat)))
		usage_error("one of -q, --stat, -f and statements");
	ndirs = argc - optind;
	if (ndirs > 0 && !file && !shipped && !stat && !is_dir(argv[argc - 1])) {
		if (is_path(argv[argc - 1])) {
			error_line("%s: not a trace directory", argv[argc - 1]);
			return 1;
		}
		query = argv[argc - 1];
		ndirs--;
	}
	if (ndirs < 1)
		usage_error("a trace directory is needed");
	if (file) {
		FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;

		if (!f)
			usage_error("%s: %s", file, strerror(errno));
		text = read_all(f, file);
		if (f != stdin)
			fclose(f);
	} else if (!query && !shipped && !stat && !isatty(STDIN_FILENO)) {
		text = read_all(stdin, "stdin");
	}
	d = sqldb_open(argv + optind, (unsigned int)ndirs, strict, wall, max_memory);
	if (!d) {
		free(text);
		return 1;
	}
	o = out_new(mode, stdout);
	running_db = d->db;
	signal(SIGINT, on_sigint);
	if (shipped || stat)
		status = run_shipped(d, NULL, o, mode, shipped);
	else if (query || text)
		status = run_sql(d, o, query ? query : text);
	else
		status = prompt(d, o);
	signal(SIGINT, SIG_DFL);
	running_db = NULL;
	out_free(o);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	if (sqldb_damage_report(d) && !status)
		status = EXIT_DAMAGED;
	sqldb_close(d);
	free(text);
	return status;
}

static void help(FILE *f)
{
	fputs(
"Usage: ringtrace sql [OPTIONS] TRACE... ['STATEMENTS']\n"
"       ringtrace sql --stat|-q NAME [OPTIONS] TRACE...\n"
"       ringtrace sql --list\n"
"       ringtrace sql --clickhouse URL [--database DB] [OPTIONS] ['STATEMENTS']\n"
"       ringtrace sql --clickhouse URL --stat|-q NAME [OPTIONS]\n"
"\n"
"Run SQL (SQLite's) over trace directories and chunk sets: every table is\n"
"read from the trace as the query runs, nothing is loaded first.  The\n"
"statements are the last argument when it is not a directory, else\n"
"-f FILE's, else stdin's (a prompt when stdin is a terminal).  Ctrl-C stops\n"
"the statement running: the prompt then asks for the next, else the run\n"
"ends (exit 130).  Several directories are one database: the chunk\n"
"sets of one recording are one trace, told apart by the trace and host\n"
"columns.\n"
"\n"
"Tables (Documentation/ringtrace/sql.rst tells what each equals in report):\n", f);
	sqldb_help_tables(f);
	fputs(
"  slice          a view: syscall, irq and softirq as trace_processor's\n"
"                 slice (ts, dur, name, category, depth, utid, cpu...)\n"
"\n"
"ts is the trace clock in ns (--wall: since the epoch).  Constraints on\n"
"ts (ranges), cpu, name, trace and host (=, IN) are pushed down where the\n"
"table takes them (sql.rst says which): only the frames, CPUs and events\n"
"they can hold are read (scan_stats shows it).\n"
"The span tables' ts and end_ts ranges (critical_path's ts, dur) read from\n"
"a checkpoint before the window to one after it (the first window of a run\n"
"makes them: one pass; they are kept for later runs in\n"
"$XDG_CACHE_HOME/ringtrace, or $RINGTRACE_SQL_CACHE); sched_slice,\n"
"thread_state and critical_path of a packed trace start instead from the\n"
"scheduler records its chunks carry, with no pass (RINGTRACE_SQL_SCHEDREC=0:\n"
"not); sample\n"
"decodes before its window only the events that name user frames (mmap,\n"
"fork, exec); utid = X reads X's trace alone, and there: raw, syscall\n"
"and sample only where X ran (sample: tid = N too, in every trace),\n"
"sched_slice and thread_state only the stretches and CPUs whose scheduler\n"
"events name X (wakeup: wakee_utid = X), wakeup and thread_state's\n"
"waker_utid = X only the time from X's first run to its last (when under\n"
"half the trace), from lists one pass makes (cached as the checkpoints\n"
"are); thread and process without their times read a packed trace's\n"
"thread tables alone; stack and frame answer from a trace's stack index\n"
"(one pass, cached as the checkpoints are): stack_id = X and frame_id = X\n"
"are lookups, so a join of sample, stack and frame reads the trace twice.\n"
"\n"
"  -f, --file FILE  the statements in FILE ('-': stdin)\n"
"  -q, --query NAME the shipped query NAME (--list)\n"
"      --stat       the shipped queries of report --stat's sections, in its\n"
"                   order (events, losses, system calls, threads by\n"
"                   on-CPU time, wakeup latency, top functions)\n"
"      --list       every shipped query: its name, what it gives, its SQL\n"
"      --csv        CSV (RFC 4180) with a header line\n"
"      --json       a JSON array of objects per statement\n"
"      --wall       ts in ns since the epoch (joins across hosts)\n"
"      --strict     damage is an error instead of read past\n"
"      --max-memory SIZE\n"
"                   SQLite's heap may grow to half of SIZE (K, M, G; default\n"
"                   1G, 0: no bound): a statement that needs more (a\n"
"                   group_concat() of every event) fails, exit 1, rather\n"
"                   than grow; sorts and GROUP BY spill to temporary files\n"
"      --clickhouse URL\n"
"                   run the statements (ClickHouse's SQL) on that server's\n"
"                   tables, which ringtrace ship filled, printed as here;\n"
"                   --stat and -q run the queries' ClickHouse versions\n"
"                   (Documentation/ringtrace/fleet.rst); the server's\n"
"                   error is said, exit 1\n"
"      --database DB  its database (default ringtrace)\n"
"      --user USER, --password PW  HTTP basic authentication\n"
"      --no-cache   neither read nor keep the span tables' checkpoints, the\n"
"                   run lists and the stack index on disk\n"
"                   (RINGTRACE_SQL_CACHE set empty: the same)\n"
"  -h, --help       this text\n"
"\n"
"Exit status: 0; 1 a statement failed (SQLite's message); 2 usage; 3 the\n"
"statements ran but damage was read past: the damaged packets are lost\n"
"rows, the rest answered (said on stderr); 130 Ctrl-C stopped a statement\n"
"(the rows printed before it are whole).\n"
"\n"
"RINGTRACE_SQL_FRAMES=1: after each statement, the zstd frames it\n"
"decompressed on stderr (for its rows, and for the indexes it built).\n", f);
}

const struct command cmd_sql = {
	.name = "sql",
	.summary = "SQL queries over traces (SQLite, nothing loaded up front)",
	.help_fn = help,
	.run = run,
};
