/* SPDX-License-Identifier: GPL-2.0 */
/*
 * threadidx: what a member tells of its threads and processes, as one
 * scan of it leaves them -- rt_threads' names, pids, parents and cgroups
 * at the member's end (report's, whose --stat prints them), and the times
 * of forks, execs and exits.  Built per member, one after another, for
 * the thread and process tables, and kept by the database once built
 * from all of a member (sqldb.thread_idx): the next cursor takes them
 * without reading the member again (ship reads both tables).
 */
#ifndef RINGTRACE_THREADIDX_H
#define RINGTRACE_THREADIDX_H

#include "share.h"
#include "sql.h"

#define TIDX_NONE	INT64_MIN	/* a time not known */

struct tidx_thread {
	int32_t tid, pid;		/* pid -1: unknown */
	char *name;			/* NULL: unknown */
	int64_t start, end;		/* fork, exit (else free); TIDX_NONE */
	uint64_t cgroup;		/* 0: unknown */
};

struct tidx_process {
	int32_t pid, ppid;		/* ppid -1: unknown */
	char *name;			/* its leader's; NULL unknown */
	char *cmdline;			/* the last exec's file name; NULL none */
	int64_t start, end;		/* its leader's */
	uint64_t cgroup;
};

struct threadidx {
	unsigned int member;
	bool times;			/* fork, exec and exit times learnt */
	struct tidx_thread *threads;	/* by tid, the idle task (0) first */
	size_t nr_threads;
	struct tidx_process *procs;	/* by pid */
	size_t nr_procs;
};

struct tidx_scan;
/*
 * @times: the fork, exec and exit times and file names are asked for
 * (those events decoded); else each member's threads come from what
 * rt_threads learns of its frames without reading an item (spec.
 * threads_only) -- a packed chunk's thread tables, no frame decompressed;
 * frames without a table, or whose table is not trusted, decoded
 * (rt_threads_learn_window()).
 */
struct tidx_scan *tidx_open(struct sql_cursor *c, bool times);
/*
 * The next member's tables: 1 with *@out (valid until the next call or
 * tidx_close()), 0 the end, -1.
 */
int tidx_next(struct tidx_scan *s, const struct threadidx **out);
/*
 * Fed by a share from now on (a cursor of every column and row, nothing
 * read yet): the reader share_add() takes; tidx_next() then gives each
 * member's tables at its end, SQL_WAIT before.
 */
void tidx_reader(struct tidx_scan *s, struct share_reader *r);
void tidx_close(struct tidx_scan *s);

#endif /* RINGTRACE_THREADIDX_H */
