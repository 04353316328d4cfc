/* SPDX-License-Identifier: GPL-2.0 */
/*
 * schedpack: a scheduling walk's state (schedwalk.c) at a point of a
 * member, from the scheduler records its packer wrote for each frame
 * (lib/chunk_index.h, made by tools/lib/schedrec.c) instead of a walk of
 * every item before it.
 *
 * Each CPU's records are composed in its order: its last switch says who
 * runs there since when, its interrupt depth and the owner of its events
 * (who a wakeup names as the waker) are functions of the ones before.
 * Then for each thread, the records of every CPU are merged by the order
 * the walk reads items in (time, then CPU number; within a CPU, its
 * order): its last switch before the point, the first mark (its CPU
 * switched: it no longer runs) after a switch in, the first wakeup after
 * that (or after a blocking switch, or ever, without a switch) -- the
 * wakeups the walk counts.  Where a frame's first and last wakeup (or
 * mark) lie on both sides of the moment that matters, the record does not
 * say which counts: that is "decode" (schedpack_state() returns 1), never
 * a guess; so is a frame whose record is "unlearnt" (damage), or a tie of
 * times between CPUs that the records cannot order.
 *
 * A loss in front of a chunk's first packet is not in its record (the
 * packer read the chunk alone): it is one where that packet does not
 * follow the last of the chunk before (sequence number + 1, the same
 * events_discarded), as the decoder judges it.
 */
#ifndef RINGTRACE_SQL_SCHEDPACK_H
#define RINGTRACE_SQL_SCHEDPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../../lib/chunk_index.h"

struct sql_cursor;

/* One CPU's records, its files' in order, as read from the files. */
struct sp_cpu_records {
	uint32_t cpu;
	size_t nr;			/* records (frames) in all its files */
	struct chunk_sched_frame **rec;	/* into @files */
	bool *chunk_start;		/* the first frame of a file but the first */
	size_t *file;			/* the file of each */
	uint64_t *uoff;			/* where each frame starts in its file's stream */
	uint64_t *ts_begin, *ts_end;	/* its packets' times (the time index's) */
	struct chunk_sched *files;
	size_t nr_files;
};

/*
 * The records of @nr_paths stream files of CPU @cpu: 0, or 1 when one of
 * them has none or bad ones (@why says which and why): the member is
 * read as without records.
 */
int sp_cpu_load(struct sp_cpu_records *c, uint32_t cpu, char *const *paths,
		size_t nr_paths, char *why, size_t size);
void sp_cpu_free(struct sp_cpu_records *c);

/* A frame decoded: its switches, marks and wakeups (rt_schedrec_events()). */
struct sp_events {
	const struct rt_sched_event *ev;
	size_t nr;
};

/*
 * What one CPU contributes: its records [0, nr), then @partial if not
 * NULL; @events, when not NULL, what the frames decoded hold (nr + 1 of
 * them, @partial's last; .ev NULL: not decoded).
 */
struct sp_input {
	uint32_t cpu;
	const struct chunk_sched_frame *const *rec;
	const bool *chunk_start;	/* rec[i] is a file's first, but the CPU's first */
	size_t nr;
	const struct chunk_sched_frame *partial;	/* part of rec[nr]'s frame */
	bool partial_start;		/* it is a file's first, but the first */
	const struct sp_events *events;
};

/* The walk's state of a CPU (times: the items', clock cycles). */
struct sp_cpu_state {
	uint32_t cpu;
	int32_t tid;			/* -1: none known */
	uint64_t since;			/* its switch's */
	int64_t prio;			/* the kernel's (next_prio + 100); INT64_MIN none */
	uint64_t switch_ts;
	int32_t switch_prev;		/* -1: none */
	uint32_t irqs;
};

/* A thread running or in a span off CPU (the others are not listed). */
struct sp_thread_state {
	int32_t tid;
	bool running;
	bool open;			/* then: */
	int64_t state;
	uint64_t since;
	int32_t cpu;
	int32_t waker;
	bool irq;
};

struct sp_state {
	struct sp_cpu_state *cpus;
	size_t nr_cpus;
	struct sp_thread_state *threads;	/* by tid */
	size_t nr_threads;
};

/*
 * Which frame schedpack_state() needed decoded: @in[cpu]'s frame @frame
 * (nr: its partial one); @known false when decoding would not tell
 * either (a tie of times between CPUs).
 */
struct sp_need {
	bool known;
	size_t cpu, frame;
};

/*
 * The walk's state after the items @in's records were made of (@nr of
 * them, a CPU each, in CPU order): 0 with @st set (sp_state_free()), 1
 * when the records cannot tell and a frame they need is not decoded
 * (*@need, may be NULL, says which); *@decoded (may be NULL) counts the
 * decoded frames it had to read.
 */
int schedpack_state(const struct sp_input *in, size_t nr, struct sp_state *st,
		    size_t *decoded, struct sp_need *need);
void sp_state_free(struct sp_state *st);

/*
 * schedstart.c: the walk's state of member @m before its first item at
 * or after @lo (ns), from the member's records (every CPU's files must
 * carry trusted ones) and the items before @lo of the frame each CPU is
 * in there (read; and any frame the records cannot tell about, decoded):
 * 0 with @st (times in cycles; sp_state_free()) and *@last the time (ns)
 * of the last item read before @lo (INT64_MIN: none); 1 when the member
 * has no records to trust (or RINGTRACE_SQL_SCHEDREC=0, or the database
 * does not seek) or they do not tell; -1 (c->err).
 */
int schedpack_at(struct sql_cursor *c, unsigned int m, int64_t lo, struct sp_state *st,
		 int64_t *last);

/*
 * What may still end a span of member @m open at @hi (ns), as its
 * records say of the frames that may hold an item after @hi: which CPUs
 * switch again (by the trace's CPU index), which threads a switch names
 * again and which a wakeup does (sorted), or that any may be (an
 * unlearnt frame).  The others end at the member's last item
 * (schedpack_last()).
 */
struct sp_after {
	bool *cpu_switches;
	int32_t *switched, *woken;
	size_t nr_switched, nr_woken;
	bool any;
};
/* 0 with @a set (sp_after_free()), 1 (no records). */
int schedpack_after(struct sql_cursor *c, unsigned int m, int64_t hi, struct sp_after *a);
/* Whether thread @tid's span off CPU may end after hi (@blocked: a wakeup ends it too). */
bool sp_after_named(const struct sp_after *a, int32_t tid, bool blocked);
void sp_after_free(struct sp_after *a);
/*
 * The time (ns) of member @m's last item, its CPUs' last frames read: 0,
 * 1 (no records, or no item there), -1 (c->err).
 */
int schedpack_last(struct sql_cursor *c, unsigned int m, int64_t *last);

/*
 * Spans still open past a window's end, to be ended: the CPUs (by the
 * trace's index) whose thread runs on until their next switch, and the
 * threads off CPU, sorted by tid, @blocked when a wakeup ends their span
 * too (S, D...: not R).
 */
struct sp_open_thread {
	int32_t tid;
	bool blocked;
};

struct sp_open {
	bool *cpus;
	struct sp_open_thread *threads;
	size_t nr_threads;
};

/*
 * Where to read next, every item before @pos (ns) that may end one of
 * @open's spans read: [*@b, *@e], the earliest frame at or after @pos of
 * any CPU that may (its CPU switches, a switch names the thread, a wakeup
 * a blocked one; or the frame is unlearnt), from @pos on, on the CPUs
 * @cpus says (by the trace's index): those with such a frame starting by
 * *@e.  No other item before *@e can end one.  0, or 1 when no frame may.
 */
int schedpack_next(struct sql_cursor *c, unsigned int m, int64_t pos,
		   const struct sp_open *open, int64_t *b, int64_t *e, bool *cpus);

/*
 * The check (schedcheck.c): with RINGTRACE_SQL_SCHEDREC_CHECK set, the
 * walk that builds a member's checkpoints (schedwalk.c) gives each item
 * to spcheck_item() and its state at every checkpoint and at the end to
 * spcheck_state(): the state the records give there -- every CPU's
 * records of the frames before, and a record made of the items of its
 * current frame before that point, as a reader decodes the frame a point
 * lies in -- must be the walk's, and each frame's record made of its
 * items must be the packer's.  A summary goes to stderr at the end
 * (spcheck_close()), with the first differences.
 */
struct rt_item;
struct sp_check;
/* The check of member @m, or NULL (not asked; the note says why not). */
struct sp_check *spcheck_open(struct sql_cursor *c, unsigned int m);
void spcheck_item(struct sp_check *k, const struct rt_item *it);
/* The walk's state @walk (times in ns) after the items given so far. */
void spcheck_state(struct sp_check *k, const struct sp_state *walk);
void spcheck_close(struct sp_check *k);

#endif /* RINGTRACE_SQL_SCHEDPACK_H */
