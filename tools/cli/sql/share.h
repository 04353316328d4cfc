/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One read of a trace for several tables' producers (ship): each member
 * is read whole once, with every reader's events and SCAN_* kinds, and
 * each reader is fed the rows its own scan would have given it (its
 * events, its kinds: scan_next()'s rules), member by member.  The readers
 * are the producers that take rows pushed (struct sql_table's reader()):
 * raw and lost (a row a scan row, its item the share's until it reads on:
 * share_rows), the pairing tables' queues (spanq_reader()), the thread
 * index (tidx_reader()) and the scheduling walk (schedwalk_reader());
 * their tables' next() give the rows ready, and SQL_WAIT until the share
 * reads on.  raw, syscall, wakeup, irq, softirq, thread_state, through
 * its walk sched_slice, thread (process from its index) and lost cost
 * ship one pass over a set, not one each (fewer than one each where an
 * earlier whole read found a table's events absent: scan.c).
 */
#ifndef RINGTRACE_SQL_SHARE_H
#define RINGTRACE_SQL_SHARE_H

#include "sql.h"

struct share_reader {
	/* Its cursor (of every row: sql_cursor_all()): its spec's names are its events. */
	struct sql_cursor *c;
	unsigned int what;		/* SCAN_* */
	void *arg;
	/* Member @m is read by @s (scan_names() names its stacks' frames); may be NULL. */
	void (*start)(void *arg, unsigned int m, struct scan *s);
	void (*feed)(void *arg, const struct scan_row *r);
	/* The member read ends (may be NULL); then, after the last, every member was read. */
	void (*end)(void *arg);
	void (*done)(void *arg);
	/* Whether its table has a row ready. */
	bool (*ready)(void *arg);
};

/*
 * A table whose rows are its scan's (raw, lost), fed by a share: the row
 * given is held in *@row until the table's next() takes it, its item the
 * share's until the share reads on (so it is used before).
 */
struct share_rows {
	struct scan_row *row;		/* the table's */
	bool fed, pending, done;
};
/* @sr fed from now on, the table's rows @what of its cursor @c: the reader into @r. */
void share_rows_reader(struct share_rows *sr, struct scan_row *row, struct sql_cursor *c,
		       unsigned int what, struct share_reader *r);
/*
 * Such a table's next(): from its own scan @own if not fed, else 1 the row
 * given, 0 the end, SQL_WAIT none yet.
 */
int share_rows_next(struct share_rows *sr, struct scan *own, struct scan_row *row);

struct share;
/*
 * A share of the members of @c's database; its read's counters and
 * errors are @c's.
 */
struct share *share_open(struct sql_cursor *c);
/* @r fed from now on (before the first share_read()). */
void share_add(struct share *sh, const struct share_reader *r);
/*
 * Reads on until a reader fed the row just read has a row ready, or the
 * member ends: 1.  The next member is not opened while any reader has a
 * row ready (1 at once: its table takes them first).  0 every member
 * read (each reader told), -1 (the first cursor's err).
 */
int share_read(struct share *sh);
void share_close(struct share *sh);

#endif /* RINGTRACE_SQL_SHARE_H */
