// SPDX-License-Identifier: GPL-2.0
/*
 * rt-share: host tests of the one read that feeds several tables
 * (tools/cli/sql/share.c), driven as ship drives it -- each table's
 * cursor asked for rows, the share read on when they wait -- on copies
 * of a trace directory (each copy a member of its own):
 *
 *   - thread fed over three members by a reader that takes one row a
 *     round (a table slower than the read: ship's SHARE_ROWS with many
 *     threads) gives every member's threads, as its own scan does: the
 *     next member is not read while a member's thread index waits to be
 *     taken.
 *   - a share of syscall and lost decodes the events syscall's own share
 *     does, no more (lost reads no event: its cursor names none), and
 *     fewer than raw's: the scan's own count of events decoded.
 *
 *   rt-share TRACE      ends with "rt-share: N passed, M failed"
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/sql/share.h"
#include "tap.h"

extern char **environ;

#define MEMBERS	3

/* cp -r @src @dst, or die. */
static void copy_dir(const char *src, const char *dst)
{
	char *argv[] = { "cp", "-r", (char *)src, (char *)dst, NULL };
	pid_t pid;
	int st;

	errno = posix_spawnp(&pid, "cp", NULL, NULL, argv, environ);
	if (errno)
		die("cp: %s", strerror(errno));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("cp -r %s %s failed", src, dst);
}

static struct sqldb *db_open(char **dirs, unsigned int n)
{
	struct sqldb *d = sqldb_open(dirs, n, false, false, SQL_MAX_MEMORY_DEFAULT);

	if (!d)
		die("%s: not opened", dirs[0]);
	sqldb_statement(d);
	return d;
}

static struct sql_cursor *cursor(struct sqldb *d, const char *table)
{
	struct sql_cursor *c;
	char *err = NULL;

	c = sql_cursor_all(d, sql_table_find(table), &err);
	if (!c)
		die("%s: %s", table, err);
	return c;
}

/* @table's rows from its own scan of @d. */
static uint64_t own_rows(struct sqldb *d, const char *table)
{
	struct sql_cursor *c = cursor(d, table);
	uint64_t rows = 0;
	int step;

	while ((step = sql_cursor_next(c)) == 1)
		rows++;
	if (step)
		die("%s: %s", table, c->err ? c->err : "error");
	sql_cursor_free(c);
	return rows;
}

/* @table's rows fed by a share of @d, @per_round taken before it reads on. */
static uint64_t fed_rows(struct sqldb *d, const char *table, unsigned int per_round)
{
	struct sql_cursor *c = cursor(d, table);
	struct share *sh = share_open(c);
	struct share_reader r;
	uint64_t rows = 0;

	c->t->reader(c, &r);
	share_add(sh, &r);
	for (;;) {
		int step = SQL_WAIT;

		for (unsigned int i = 0; i < per_round && (step = sql_cursor_next(c)) == 1; i++)
			rows++;
		if (!step)
			break;
		if (step < 0 || share_read(sh) < 0)
			die("%s: %s", table, c->err ? c->err : "error");
	}
	share_close(sh);
	sql_cursor_free(c);
	return rows;
}

/*
 * The events a share of @d's tables @tables (@n) decoded, every table's
 * rows taken as they come.
 */
static uint64_t shared_events(char *dir, const char *const *tables, unsigned int n)
{
	struct sql_cursor *c[8];
	struct sqldb *d = db_open(&dir, 1);
	struct share *sh = NULL;
	struct share_reader r;
	uint64_t events;
	bool ended[8] = { false };

	for (unsigned int k = 0; k < n; k++) {
		c[k] = cursor(d, tables[k]);
		if (!sh)
			sh = share_open(c[0]);
		c[k]->t->reader(c[k], &r);
		share_add(sh, &r);
	}
	for (;;) {
		bool all = true;

		for (unsigned int k = 0; k < n; k++) {
			int step;

			while (!ended[k] && (step = sql_cursor_next(c[k])) != SQL_WAIT) {
				if (step < 0)
					die("%s: %s", tables[k], c[k]->err ? c[k]->err : "error");
				ended[k] = !step;
			}
			all &= ended[k];
		}
		if (all)
			break;
		if (share_read(sh) < 0)
			die("%s: %s", dir, c[0]->err ? c[0]->err : "error");
	}
	/* The share's read counts as its first cursor's (share_open()). */
	events = sqldb_stat(d, c[0]->stat)->events;
	share_close(sh);
	for (unsigned int k = 0; k < n; k++)
		sql_cursor_free(c[k]);
	sqldb_close(d);
	return events;
}

/* A share of syscall and lost decodes syscall's events alone. */
static void lost_names_none(char *dir)
{
	uint64_t sc = shared_events(dir, (const char *const[]){ "syscall" }, 1);
	uint64_t sl = shared_events(dir, (const char *const[]){ "syscall", "lost" }, 2);
	uint64_t raw = shared_events(dir, (const char *const[]){ "raw" }, 1);

	printf("# events decoded: %llu for syscall, %llu for syscall and lost, %llu for raw\n",
	       (unsigned long long)sc, (unsigned long long)sl, (unsigned long long)raw);
	check("lost adds no event to a share's read", sc > 0 && sl == sc && sc < raw);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/rt-share.XXXXXX", *dirs[MEMBERS];
	struct sqldb *d;
	uint64_t want, got;

	msg_prog = "rt-share";
	if (argc != 2)
		die("usage: rt-share TRACE");
	if (!mkdtemp(tmp))
		die("%s: %s", tmp, strerror(errno));
	for (unsigned int i = 0; i < MEMBERS; i++) {
		if (asprintf(&dirs[i], "%s/m%u", tmp, i) < 0)
			die("out of memory");
		copy_dir(argv[1], dirs[i]);
	}

	d = db_open(dirs, MEMBERS);
	check("each copy a member of its own", d->ts->nr == MEMBERS);
	want = own_rows(d, "thread");
	sqldb_close(d);
	d = db_open(dirs, MEMBERS);
	got = fed_rows(d, "thread", 1);
	sqldb_close(d);
	printf("# thread: %llu rows fed a row a round, %llu from its own scan\n",
	       (unsigned long long)got, (unsigned long long)want);
	check("thread fed slower than the read: every member's threads",
	      want > 3 * MEMBERS && got == want);

	lost_names_none(argv[1]);

	for (unsigned int i = 0; i < MEMBERS; i++) {
		char *argv_rm[] = { "rm", "-rf", dirs[i], NULL };
		pid_t pid;
		int st;

		if (!posix_spawnp(&pid, "rm", NULL, NULL, argv_rm, environ))
			waitpid(pid, &st, 0);
		free(dirs[i]);
	}
	rmdir(tmp);
	printf("rt-share: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
