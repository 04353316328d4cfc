/* SPDX-License-Identifier: GPL-2.0 */
/*
 * critpath: the critical path of a thread over [begin, end) -- for each
 * moment it did not run, who woke it and what that waker did meanwhile,
 * followed back through the chain of wakeups (Trace Compass's and
 * trace_processor's critical path).  Built on thread_state's spans
 * (schedwalk.h), never on events of its own:
 *
 *   walk(U, s, e, chain): U's spans over [s, e), in time order, clipped;
 *     Running, R, R+        a row (chain+U, that state);
 *     blocked [x, y)        ended by a wakeup from W (the waker_utid of
 *                           the R span that follows it): when W is known,
 *                           not the idle task, the wakeup was not inside a
 *                           recorded interrupt or softirq (thread_state's
 *                           irq_context: W is then only the thread it
 *                           interrupted), W is not in chain+U already (a
 *                           cycle) and chain+U is shorter than
 *                           CP_MAX_DEPTH + 1: walk(W, x, y, chain+U),
 *                           what W did while U waited; else a row (chain+U,
 *                           U's state);
 *     no span, or a span on a CPU whose chain report does not count
 *                           (thread_state's NULL state): a row 'Unknown'.
 *
 * Each level's rows partition its interval, so the rows partition
 * [begin, end) and their shares (dur / (end - begin)) sum to 1.  A wakeup
 * from an interrupt that records no entry (a timer's) belongs to whatever
 * thread the interrupt hit: the idle task stops the walk, a busy thread is
 * followed (the trace does not say the waker's context yet).
 *
 * Reading: with both ends given, the spans overlapping [begin, end] come
 * through the member's checkpoints (schedwalk.h's window: the window's
 * frames and a checkpoint interval either side, once the checkpoints
 * exist); without them, the whole member.  Then the thread tables, for
 * the names.  Memory: every span of the member that overlaps
 * [begin, end), in per-thread arrays, and the rows.
 */
#ifndef RINGTRACE_SQL_CRITPATH_H
#define RINGTRACE_SQL_CRITPATH_H

#include "schedwalk.h"

#define CP_MAX_DEPTH	32		/* wakers followed at most */
#define CP_UNKNOWN	(-1LL)		/* a row's state: not known */

struct cp_row {
	int64_t ts, dur;		/* ns */
	int64_t state;			/* SW_RUNNING, a prev_state, CP_UNKNOWN */
	unsigned int depth;		/* chain[depth] is the thread of the row */
	int32_t chain[CP_MAX_DEPTH + 1];	/* chain[0]: the root */
};

struct cp_result {
	unsigned int member;
	int64_t begin, end;		/* ns, end excluded */
	struct cp_row *rows;		/* in time order */
	size_t nr;
	/* The threads' names at the member's end (thread's): by tid. */
	struct rt_tidmap names;
};

/*
 * The critical path of thread @tid of member @member over [@begin, @end)
 * (@has_begin false: from the thread's first span; @has_end false: to
 * the end of its last span before it died -- X, Z spans left out), read
 * through cursor @c (its spec's members are set to @member here): 0 with
 * *@out, or -1 (c->err).
 */
int critpath_run(struct sql_cursor *c, unsigned int member, int32_t tid,
		 bool has_begin, int64_t begin, bool has_end, int64_t end,
		 struct cp_result *out);
void critpath_free(struct cp_result *r);

/* @tid's name (the thread table's) with ';' made ':', else its tid: in @buf. */
const char *critpath_name(const struct cp_result *r, int32_t tid, char *buf, size_t size);
/* A row's state as thread_state names it, 'Unknown' for CP_UNKNOWN: in @buf. */
const char *critpath_state(const struct cp_row *row, char *buf, size_t size);
/* A row's chain, names joined by ';' (root first), appended to @s. */
void critpath_chain(const struct cp_result *r, const struct cp_row *row, sqlite3_str *s);

#endif /* RINGTRACE_SQL_CRITPATH_H */
