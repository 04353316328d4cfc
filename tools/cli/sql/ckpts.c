// SPDX-License-Identifier: GPL-2.0
/* A member's checkpoints: taking, thinning, a window's first and last, on disk (ckpts.h). */
#include <stdlib.h>
#include <string.h>

#include "ckpts.h"
#include "sql.h"
#include "sqlcache.h"

void ckpts_init(struct ckpts *l, size_t size, void (*drop)(void *el))
{
	*l = (struct ckpts){ .size = size, .drop = drop, .spacing = 1 };
}

void ckpts_free(struct ckpts *l)
{
	for (size_t i = 0; l->drop && i < l->nr; i++)
		l->drop(ckpts_at(l, i));
	free(l->el);
	l->el = NULL;
	l->nr = l->cap = 0;
}

bool ckpts_due(struct ckpts *l, int64_t ts, int64_t last)
{
	if (++l->fed - l->at <= l->spacing || ts <= last)
		return false;
	l->at = l->fed;
	return true;
}

void *ckpts_append(struct ckpts *l)
{
	void *el;

	if (l->nr == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->el = reallocarray(l->el, l->cap, l->size);
		if (!l->el)
			die("out of memory");
	}
	el = ckpts_at(l, l->nr++);
	memset(el, 0, l->size);
	return el;
}

void ckpts_take(struct ckpts *l, int64_t ts, void (*fill)(void *el, void *arg), void *arg)
{
	void *el = ckpts_append(l);
	size_t n = 1;

	*(int64_t *)el = ts;
	fill(el, arg);
	if (l->nr <= 2 * CKPTS_MIN)
		return;
	/* Too many: every other one goes (the first stays), twice as far apart. */
	for (size_t i = 1; i < l->nr; i++) {
		if (i % 2) {
			if (l->drop)
				l->drop(ckpts_at(l, i));
		} else {
			memcpy(ckpts_at(l, n++), ckpts_at(l, i), l->size);
		}
	}
	l->nr = n;
	l->spacing *= 2;
}

void ckpts_window(const struct ckpts *l, bool has_lo, int64_t lo, bool has_hi, int64_t hi,
		  size_t *from, size_t *stop)
{
	*from = *stop = 0;
	for (size_t i = 1; i < l->nr; i++) {
		if (has_lo && ckpts_ts(l, i) <= lo)
			*from = i;
		if (has_hi && ckpts_ts(l, i) > hi && !*stop)
			*stop = i;
	}
}

void ckpts_put_head(const struct ckpts *l, struct sqlcache_buf *b)
{
	sqlcache_put64(b, l->spacing);
	sqlcache_put64(b, l->nr);
}

size_t ckpts_get_head(struct ckpts *l, struct sqlcache_buf *b, size_t rec)
{
	size_t nr;

	l->spacing = sqlcache_get64(b);
	nr = sqlcache_get_count(b, rec);
	if (!nr || nr > 2 * CKPTS_MIN + 1 || !l->spacing)
		b->bad = true;
	return b->bad ? 0 : nr;
}

void *ckpts_get_next(struct ckpts *l, struct sqlcache_buf *b)
{
	void *el = ckpts_append(l);
	int64_t ts = (int64_t)sqlcache_get64(b);

	if (l->nr > 1 ? ts <= ckpts_ts(l, l->nr - 2) : ts != INT64_MIN)
		b->bad = true;
	*(int64_t *)el = ts;
	return el;
}
