// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace report --critical-path TID|COMM [--begin T] [--end T] [--folded]:
 * the rows of `ringtrace sql`'s critical_path(utid, ts, dur) (sql/critpath.h)
 * printed, one a line, or (--folded) summed by chain and state as flame
 * graph input:
 *	thread;waker;waker's waker;state NANOSECONDS
 * The rows come from the SQL function itself, through the same database
 * `ringtrace sql` opens, so the two cannot disagree.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql.h"
#include "window.h"

/* The thread named by @who: a tid, or the one thread of that name; -1 said. */
static int64_t find_thread(struct sqldb *d, const char *who)
{
	sqlite3_stmt *st = NULL;
	int64_t tid = -1;
	unsigned int n = 0;
	int x;

	if (parse_int(who, &x) && x >= 0)
		return x;
	if (sqlite3_prepare_v2(d->db, "SELECT tid FROM thread WHERE name = ?1 AND NOT is_idle "
			       "ORDER BY tid", -1, &st, NULL) != SQLITE_OK) {
		error_line("%s", sqlite3_errmsg(d->db));
		return -1;
	}
	sqlite3_bind_text(st, 1, who, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!n++)
			tid = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (n == 1)
		return tid;
	if (!n)
		error_line("--critical-path: no thread named '%s' in the trace", who);
	else
		error_line("--critical-path: %u threads named '%s' (the first is %" PRId64
			   "): give a TID", n, who, tid);
	return -1;
}

/* @ns as report prints times (seconds.nanoseconds), in @buf. */
static const char *fmt_time(char *buf, size_t size, int64_t ns)
{
	snprintf(buf, size, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
	return buf;
}

/* @ns in milliseconds, every nanosecond shown, in @buf. */
static const char *fmt_ms(char *buf, size_t size, int64_t ns)
{
	snprintf(buf, size, "%" PRId64 ".%06" PRId64, ns / 1000000, ns % 1000000);
	return buf;
}

/* (chain;state, ns) in the order they first come. */
struct fold {
	char *key;
	int64_t ns;
};

static void fold_add(struct fold **v, size_t *n, const char *chain, const char *state,
		     int64_t ns)
{
	char *key;

	if (asprintf(&key, "%s;%s", chain, state) < 0)
		die("out of memory");
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, key)) {
			(*v)[i].ns += ns;
			free(key);
			return;
		}
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	if (!*v)
		die("out of memory");
	(*v)[(*n)++] = (struct fold){ key, ns };
}

/* The rows of critical_path() printed: 0, or 1 after SQLite's error. */
static int print_path(struct sqldb *d, int64_t tid, bool has_begin, int64_t begin,
		      bool has_end, int64_t end, bool folded)
{
	sqlite3_stmt *st = NULL;
	struct fold *f = NULL;
	size_t nf = 0, rows = 0;
	char a[32], b[32], c[32];
	int rc;

	if (sqlite3_prepare_v2(d->db, "SELECT ts, dur, state, chain, share, arg_ts, arg_dur "
			       "FROM critical_path(?1, ?2, ?3)", -1, &st, NULL) != SQLITE_OK) {
		error_line("%s", sqlite3_errmsg(d->db));
		return 1;
	}
	sqlite3_bind_int64(st, 1, tid);
	if (has_begin)
		sqlite3_bind_int64(st, 2, begin);
	if (has_begin && has_end)
		sqlite3_bind_int64(st, 3, end > begin ? end - begin : 0);
	sqldb_statement(d);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
		const char *state = (const char *)sqlite3_column_text(st, 2);
		const char *chain = (const char *)sqlite3_column_text(st, 3);

		if (folded) {
			fold_add(&f, &nf, chain, state, dur);
			continue;
		}
		if (!rows++) {
			int64_t from = sqlite3_column_int64(st, 5), len = sqlite3_column_int64(st, 6);

			printf("critical path of tid %" PRId64 " from %s to %s (%s ms)\n",
			       tid, fmt_time(a, sizeof(a), from), fmt_time(b, sizeof(b), from + len),
			       fmt_ms(c, sizeof(c), len));
			printf("%20s %14s %8s  %-8s %s\n", "start", "dur_ms", "share", "state",
			       "chain (thread;its waker;...)");
		}
		printf("%20s %14s %7.2f%%  %-8s %s\n", fmt_time(a, sizeof(a), ts),
		       fmt_ms(b, sizeof(b), dur), 100.0 * sqlite3_column_double(st, 4), state, chain);
	}
	if (rc != SQLITE_DONE)
		error_line("%s", sqlite3_errmsg(d->db));
	else if (!folded && !rows)
		printf("critical path of tid %" PRId64 ": empty (no time in the interval)\n", tid);
	sqlite3_finalize(st);
	for (size_t i = 0; i < nf; i++) {
		printf("%s %" PRId64 "\n", f[i].key, f[i].ns);
		free(f[i].key);
	}
	free(f);
	return rc == SQLITE_DONE ? 0 : 1;
}

int critical_report(char *const *dirs, unsigned int n, const char *who,
		    const char *begin, const char *end, bool folded, bool strict)
{
	struct sqldb *d = sqldb_open(dirs, n, strict, false, SQL_MAX_MEMORY_DEFAULT);
	const struct tset_member *m;
	struct window w;
	uint64_t start = 0;
	int64_t tid;
	int status;

	if (!d)
		return 1;
	if (d->ts->nr != 1) {
		error_line("--critical-path reads one recording, not %u", d->ts->nr);
		sqldb_close(d);
		return 1;
	}
	m = &d->ts->m[0];
	if (window_from_start(begin, end))
		start = tset_first_event(m);
	window_parse(&w, begin, end, m->t->md, start, false);
	/* --end alone: from the trace's first event. */
	if (w.has_end && !w.has_begin) {
		w.has_begin = true;
		w.begin = tset_first_event(m);
	}
	tid = find_thread(d, who);
	if (tid < 0) {
		sqldb_close(d);
		return 1;
	}
	status = print_path(d, tid, w.has_begin, sqldb_ns(d, 0, w.begin), w.has_end,
			    sqldb_ns(d, 0, w.end), folded);
	fflush(stdout);
	if (sqldb_damage_report(d) && !status)
		status = 3;
	sqldb_close(d);
	return status;
}
