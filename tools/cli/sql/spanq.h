/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tables whose rows pair events (syscall: entry and exit; wakeup: the
 * wakeup and the switch in; irq, softirq: entry and exit on a CPU): a row
 * is ready only when its second event comes (or its member ends), so the
 * rows ready wait in a queue, and spanq_next() feeds the scan's rows to
 * the table until one is.  Also what those tables' columns share.
 */
#ifndef RINGTRACE_SQL_SPANQ_H
#define RINGTRACE_SQL_SPANQ_H

#include "sql.h"

struct spanq {
	struct scan *scan;
	unsigned int member;		/* of the rows fed last */
	bool done;
	char *rows;			/* ready, @size bytes each */
	size_t size, nr, cap, head;
};

struct spanq_ops {
	void (*feed)(struct sql_cursor *c, const struct scan_row *r);
	/* The member read ends: queue the rows it left open. */
	void (*member_end)(struct sql_cursor *c);
};

/* Rows of @size bytes; @q->scan is the caller's to open. */
void spanq_init(struct spanq *q, size_t size);
void spanq_push(struct spanq *q, const void *row);
/*
 * The rows of @open (a tidmap of rows) for which @is_open holds, queued
 * in @cmp's order; @open emptied.
 */
void spanq_flush_tidmap(struct spanq *q, struct rt_tidmap *open,
			bool (*is_open)(const void *row),
			int (*cmp)(const void *a, const void *b));
/* The next row ready into *@row (valid until the next call): 1, 0 at the end, -1. */
int spanq_next(struct spanq *q, struct sql_cursor *c, const struct spanq_ops *ops,
	       const void **row);
/* The scan closed, the queue freed. */
void spanq_free(struct spanq *q);

/* The cursor reads only the events @names (its spec's names). */
void sql_want_events(struct sql_cursor *c, const char *const *names, unsigned int n);
/* Integer field @name of @it, @none when it has none. */
int64_t sql_item_s64(const struct rt_item *it, const char *name, int64_t none);
/* Nanoseconds of @cycles of member @m's clock. */
int64_t sql_cycles_ns(const struct sql_cursor *c, unsigned int m, uint64_t cycles);

#endif
