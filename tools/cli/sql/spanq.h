/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tables whose rows pair events (syscall: entry and exit; wakeup: the
 * wakeup and the switch in; irq, softirq: entry and exit on a CPU): a row
 * is ready only when its second event comes (or its member ends), so the
 * rows ready wait in a queue, and spanq_next() feeds the scan's rows to
 * the table until one is.  Also what those tables' columns share.
 *
 * Windows: a table whose ts (and end_ts) are SQL_PUSH_SPAN and whose ops
 * can save and restore its state reads a window [lo, hi] (spec.lo/hi)
 * from the last checkpoint at or before lo to the first after hi.  A
 * member's checkpoints are built for a table (and its CPUs) by one pass
 * the first time a window needs them, kept for the database's life:
 * between 128 and 256 copies of the table's state, evenly spaced in rows
 * fed, and every row that was open at one of them, whole, with the time
 * it was given.  A window's pass starts from its first checkpoint's state
 * and takes the rows still open at the last from the index: every row
 * the whole member gives that could meet the terms (SQLite checks them).
 * Checkpoints are spaced by the table's own events: a window reads from
 * the last of them before it (a member without any: nothing).
 *
 * One read for several tables (ship, share.h): a queue can be fed by a
 * share instead of a scan of its own (spanq_reader()); its table's next()
 * then gives the rows ready, and SQL_WAIT until the share reads on.
 *
 * The checkpoints are kept on disk too (sqlcache.h), the rows written
 * and read back by the table's ops (put, get): one file per table and
 * set of CPUs, so that the next process's first window reads the window
 * alone.
 */
#ifndef RINGTRACE_SQL_SPANQ_H
#define RINGTRACE_SQL_SPANQ_H

#include "share.h"
#include "sql.h"

struct spanq_index;
struct sqlcache_buf;

struct spanq_ops {
	void (*feed)(struct sql_cursor *c, const struct scan_row *r);
	/* The member read ends: queue the rows it left open. */
	void (*member_end)(struct sql_cursor *c);
	/* Windows (NULL: every member read whole): the table's state, ... */
	void *(*save)(struct sql_cursor *c, size_t *size);
	/*
	 * ... put back (the state is the member's start's before), ...
	 * The state is the rows the table holds open: a whole number of them,
	 * each as it would be queued.
	 */
	void (*restore)(struct sql_cursor *c, const void *state, size_t size);
	/* ... and a row's ts (ns). */
	int64_t (*row_ts)(const void *row);
	/* ... a row written into @b, in @rec bytes (the checkpoints kept on disk), ... */
	void (*put)(struct sqlcache_buf *b, const void *row);
	/*
	 * ... and back into @row (zeroed) as a row of member @m, every value
	 * the table relies on checked (false: not one a put() wrote).
	 */
	bool (*get)(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b, void *row);
	size_t rec;
};

struct spanq {
	struct scan *scan;		/* the member being read; NULL between */
	struct sql_cursor *c;
	const struct spanq_ops *ops;
	unsigned int what;		/* SCAN_* */
	struct scan_spec rd;		/* the cursor's spec, for one member's time */
	bool *rd_members;		/* rd.members */
	unsigned int next;		/* the next member to read */
	unsigned int member;		/* being read */
	bool done;
	const struct spanq_index *ix;	/* a window's */
	size_t stop;			/* ix's checkpoint the read stops at; 0: the end */
	struct spanq_index *build;	/* building one */
	bool fed;			/* a share feeds it: no scan of its own */
	int64_t last;			/* ts of the last row fed */
	char *rows;			/* ready, @size bytes each */
	size_t size, nr, cap, head;
};

/* Rows of @size bytes, read from @c's members by scan_open_spec(@what). */
void spanq_init(struct spanq *q, struct sql_cursor *c, const struct spanq_ops *ops,
		unsigned int what, size_t size);
void spanq_push(struct spanq *q, const void *row);
/*
 * The rows of @open (a tidmap of rows) for which @is_open holds, queued
 * in @cmp's order; @open emptied.
 */
void spanq_flush_tidmap(struct spanq *q, struct rt_tidmap *open,
			bool (*is_open)(const void *row),
			int (*cmp)(const void *a, const void *b));
/* A tidmap's elements as one block (ops->save), and put back (ops->restore). */
void *spanq_save_tidmap(const struct rt_tidmap *m, size_t *size);
void spanq_restore_tidmap(struct rt_tidmap *m, const void *state, size_t size);
/*
 * The next row ready into *@row (valid until the next call): 1, 0 at the
 * end, -1; fed by a share, SQL_WAIT when none is ready until it reads on.
 */
int spanq_next(struct spanq *q, const void **row);

/*
 * The queue fed by a share from now on (its cursor's filter() done,
 * nothing read yet): the reader share_add() takes.
 */
void spanq_reader(struct spanq *q, struct share_reader *r);
/* The scan closed, the queue freed. */
void spanq_free(struct spanq *q);

/* The cursor reads only the events @names (its spec's names). */
void sql_want_events(struct sql_cursor *c, const char *const *names, unsigned int n);
/* Integer field @name of @it, @none when it has none. */
int64_t sql_item_s64(const struct rt_item *it, const char *name, int64_t none);
/* Nanoseconds of @cycles of member @m's clock. */
int64_t sql_cycles_ns(const struct sql_cursor *c, unsigned int m, uint64_t cycles);

#endif
