/* SPDX-License-Identifier: GPL-2.0 */
/*
 * schedwalk: the spans of a member's scheduling, streamed from its
 * sched_switch and wakeup events by one forward scan -- what sched_slice
 * and thread_state are made of.  The rules are report --stat's on-CPU
 * accounting (report.c stat_feed()):
 *
 *  - a CPU runs next_tid from a switch to the CPU's next switch; the span
 *    counts (chained) only when that switch's prev_tid is the same
 *    thread: with a pid filter, or after damage, the switches between
 *    are missing and the time is not the thread's;
 *  - a loss does not end the span (report keeps the CPU's thread);
 *  - what still runs at the member's end runs to its last item (an
 *    event or a loss, of any CPU);
 *  - tid 0, the idle task, runs as any thread (report leaves it out of
 *    its table only when printing).
 *
 * With states, a thread's time off CPU is spans too: from its switch out,
 * in the state prev_state says (0 'R', preempted 'R+', bit k 'S' 'D' 'T'
 * 't' 'X' 'Z' 'P' 'I'), until it is switched in; a blocked thread's first
 * wakeup (sched_waking, sched_wakeup or sched_wakeup_new, whichever comes
 * first) ends its blocked span and opens 'R', woken by the owner of that
 * event -- in an interrupt when sched_waking's waker_ctx says so (1..3),
 * or when that event comes between an irq_handler_entry or
 * irq_softirq_entry and its exit on its CPU (a loss or a switch there
 * forgets them).  Idle (tid 0) has no such spans.  Spans still open at
 * the end close at the member's last item.
 *
 * Asked (schedwalk_blocked()), a blocked span (S, D... not R) opened by a
 * sched_switch that carried a kernel stack says the function its thread
 * blocked in: the stack's first frame that is no scheduler function
 * (stack_blocked_function(), the kernel's wchan rule).  Such a walk reads
 * every member whole: the checkpoints below keep no stacks.
 *
 * Spans come out in the order they end (several may end at one event),
 * per member one after another; memory: a tidmap entry per thread and
 * per CPU, and the spans ending at one event.
 *
 * A window (the cursor's spec.lo/hi: the spans that overlap [lo, hi])
 * reads only from the last checkpoint at or before lo to the first after
 * hi.  A member's checkpoints are built by one walk of it the first time
 * a window needs them (or read back from the cache file an earlier process
 * wrote: sqlcache.h), kept for the database's life: between 128 and 256
 * snapshots of the per-CPU and per-thread state, evenly spaced in items,
 * and every span open at one of them, whole.  A window's walk starts from
 * its first checkpoint's state and takes the spans still open at the last
 * from the index, so its spans are the whole member's walk's exactly.
 *
 * A window of a member with no checkpoints yet (in the run or the cache)
 * whose files all carry trusted scheduler records (packed chunks:
 * schedpack.h) builds none: it starts from the state the records give at
 * lo (schedpack_at()), reads to hi, and past hi only the stretches where
 * a span still open may end (schedpack_next(): a switch of its CPU, a
 * switch or wakeup naming its thread); what nothing after hi ends ends at
 * the member's last item, as in the whole walk.
 */
#ifndef RINGTRACE_SCHEDWALK_H
#define RINGTRACE_SCHEDWALK_H

#include "share.h"
#include "sql.h"

/* prev_state's value while a thread runs (never in a trace: bit 15). */
#define SW_RUNNING	(1LL << 15)

struct sw_span {
	unsigned int member;
	int64_t ts, end;		/* ns */
	int32_t tid;
	int32_t cpu;			/* -1: none */
	/*
	 * SW_RUNNING: on a CPU; else the prev_state (module encoding) the
	 * thread is in.
	 */
	int64_t state;
	/* SW_RUNNING: the CPU's next switch named it (or the member ended). */
	bool chained;
	/* SW_RUNNING: the prev_state of the switch that ended it, -1: none. */
	int64_t end_state;
	int64_t prio;			/* SW_RUNNING: next_prio, the kernel's; INT64_MIN none */
	int32_t waker;			/* 'R' from a wakeup: who woke it; -1 none */
	const char *blocked;		/* schedwalk_blocked(): or NULL; the walk's */
	/*
	 * 'R' from a wakeup: it came inside an interrupt or softirq (its
	 * waker_ctx, or irq_handler_entry..exit, irq_softirq_entry..exit on
	 * its CPU), @waker only the thread it interrupted; false: not known to.
	 */
	bool irq;
};

struct schedwalk;
/* The spans of @c's members (@states: off-CPU spans too), or NULL (c->err). */
struct schedwalk *schedwalk_open(struct sql_cursor *c, bool states);
/*
 * The next span: 1 with *@sp, 0 at the end, -1 (c->err); a walk another
 * feeds (schedwalk_tee()), SQL_WAIT when none is ready until that one
 * walks on.
 */
int schedwalk_next(struct schedwalk *w, struct sw_span *sp);
/*
 * Of @a and @b (both opened, nothing read yet, cursors of every row:
 * sql_cursor_all()), the walk with states hands the other a copy of each
 * span on a CPU it makes, and the other reads nothing: sched_slice's
 * spans are thread_state's Running ones (ship: one pass for both).  The
 * walk that feeds, or NULL when not one of them has states.  The fed walk
 * is closed after the one that feeds it.
 */
struct schedwalk *schedwalk_tee(struct schedwalk *a, struct schedwalk *b);
/*
 * The walk (of a cursor of every row, nothing read yet) fed by a share
 * from now on: the reader share_add() takes (share.h).
 */
void schedwalk_reader(struct schedwalk *w, struct share_reader *r);
/* Before the first span: blocked spans say where they blocked (sp->blocked). */
void schedwalk_blocked(struct schedwalk *w);
void schedwalk_close(struct schedwalk *w);

/*
 * @state as thread_state names it: "Running", "R", "R+", "S", "D", "D|P"...
 * (letters joined by '|', '+' when preempted); in @buf.
 */
const char *sw_state_name(int64_t state, char *buf, size_t size);

#endif /* RINGTRACE_SCHEDWALK_H */
