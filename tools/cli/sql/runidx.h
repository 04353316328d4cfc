/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Run lists (runidx.c): where on each CPU a thread owned the events, so
 * that `utid = X` reads only those stretches of the CPUs X ran on; and
 * where the scheduler's events name it, so that a span walk for X reads
 * only the stretches that hold one.
 */
#ifndef RINGTRACE_SQL_RUNIDX_H
#define RINGTRACE_SQL_RUNIDX_H

#include "sql.h"

struct run_index;

/*
 * Member @m's run lists, built by one pass on first need and kept by the
 * database (its reading is scan_stats' row "run index"); NULL with
 * c->err set.
 */
const struct run_index *runidx_get(struct sql_cursor *c, unsigned int m);
/*
 * The first and last cycle of CPU @cpu (its number) at which an event
 * there can belong to @tid (raw's utid: rt_threads_owner() in a full
 * pass) or be a sample of it (a cpu_sample's tid, a switch's prev_tid):
 * false when none can.
 */
bool runidx_span(const struct run_index *ix, int32_t tid, uint32_t cpu,
		 uint64_t *from, uint64_t *to);
/*
 * Whether a scheduler event of CPU @cpu (its number) in member time
 * [@from, @to) (ns, @to not included) may name @tid: a sched_switch's
 * prev_tid or next_tid, a wakeup's tid.  False only when none does
 * (coarse: true may be wrong).
 */
bool runidx_named(const struct run_index *ix, int32_t tid, uint32_t cpu,
		  int64_t from, int64_t to);
/*
 * The member time (ns, [@from, @to), @to INT64_MAX: to the end) from the
 * first to the last scheduler event of CPU @cpu that may name @tid:
 * false when none does.
 */
bool runidx_named_span(const struct run_index *ix, int32_t tid, uint32_t cpu,
		       int64_t *from, int64_t *to);
/*
 * waker_utid = X (spec.waker): the events X owns, its wakeups among them,
 * lie between its first run and its last on any CPU, so the cursor's
 * lo/hi are narrowed to that time of the trace X names (the rows that
 * begin with one of X's wakeups begin there) when it is under half the
 * trace's (a longer window costs more than the whole read: its
 * checkpoints are one pass), the spec emptied when X never ran.  0, or
 * -1 with c->err (the lists could not be read).
 */
int runidx_waker_window(struct sql_cursor *c);
void runidx_free(struct run_index *ix);

#endif /* RINGTRACE_SQL_RUNIDX_H */
