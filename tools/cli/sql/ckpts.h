/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ckpts: a member's checkpoints, as the window indexes keep them
 * (schedwalk.c's of the scheduler's state, spanq.c's of a pairing table's):
 * a list of the user's elements, each the state before the first row fed
 * at or after its ts, in time order, the member's start first.
 *
 * Taking: one is due before the first row of a new ts once more than
 * @spacing rows were fed since the last (ckpts_due()).  Between CKPTS_MIN
 * and twice that are kept: past that every other one goes (the start
 * stays) and the spacing doubles, so a member of any length keeps them
 * evenly spaced in rows and costs at most 2 * CKPTS_MIN states.
 *
 * A window [lo, hi] is read from the last checkpoint at or before lo to
 * the first after hi (ckpts_window()).  An element's first member is its
 * int64_t ts (CKPTS_INIT() checks it).
 */
#ifndef RINGTRACE_SQL_CKPTS_H
#define RINGTRACE_SQL_CKPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPTS_MIN	128

struct ckpts {
	char *el;			/* nr elements of @size bytes */
	size_t size, nr, cap;
	void (*drop)(void *el);		/* frees what an element holds; NULL: nothing */
	uint64_t spacing;		/* rows between two checkpoints */
	uint64_t fed;			/* rows fed */
	uint64_t at;			/* rows fed when the last was taken */
};

/* @l holds elements of @type, whose first member is int64_t ts. */
#define CKPTS_INIT(l, type, drop)						\
	do {									\
		_Static_assert(offsetof(type, ts) == 0 &&			\
			       sizeof(((type *)0)->ts) == sizeof(int64_t),	\
			       #type ": ts must come first, an int64_t");	\
		ckpts_init(l, sizeof(type), drop);				\
	} while (0)

void ckpts_init(struct ckpts *l, size_t size, void (*drop)(void *el));
void ckpts_free(struct ckpts *l);

/* Element @i (i < l->nr) and its ts. */
static inline void *ckpts_at(const struct ckpts *l, size_t i)
{
	return l->el + i * l->size;
}

static inline int64_t ckpts_ts(const struct ckpts *l, size_t i)
{
	return *(const int64_t *)ckpts_at(l, i);
}

/*
 * A row at @ts is fed, @last the ts of the one before: true when a
 * checkpoint is due before it (the caller takes it: ckpts_take()).
 */
bool ckpts_due(struct ckpts *l, int64_t ts, int64_t last);

/*
 * The checkpoint @ts: a zeroed element at the end, its ts set, filled by
 * @fill(el, @arg); then, past 2 * CKPTS_MIN, every other one goes.
 */
void ckpts_take(struct ckpts *l, int64_t ts, void (*fill)(void *el, void *arg), void *arg);

/* A zeroed element appended, nothing dropped (a loader's). */
void *ckpts_append(struct ckpts *l);

/*
 * The window [lo, hi] (a bound not had: none): *@from the last checkpoint
 * at or before lo (0: the start), *@stop the first after hi (0: none,
 * read to the end).
 */
void ckpts_window(const struct ckpts *l, bool has_lo, int64_t lo, bool has_hi, int64_t hi,
		  size_t *from, size_t *stop);

/*
 * On disk (sqlcache.h): the spacing and the count, then each checkpoint
 * from its ts on, written by its owner (ckpts_put_head(), then per
 * checkpoint its ts and what it holds) ...
 */
struct sqlcache_buf;
void ckpts_put_head(const struct ckpts *l, struct sqlcache_buf *b);
/*
 * ... read back: the count (1 to 2 * CKPTS_MIN + 1, each checkpoint @rec
 * bytes at least), or 0 with b->bad; ...
 */
size_t ckpts_get_head(struct ckpts *l, struct sqlcache_buf *b, size_t rec);
/* ... then each one appended, its ts read: after the last's (the first's INT64_MIN). */
void *ckpts_get_next(struct ckpts *l, struct sqlcache_buf *b);

#endif /* RINGTRACE_SQL_CKPTS_H */
