// SPDX-License-Identifier: GPL-2.0
/* The queue and feeding loop of the tables that pair events (spanq.h). */
#include <stdlib.h>
#include <string.h>

#include "spanq.h"

void spanq_init(struct spanq *q, size_t size)
{
	*q = (struct spanq){ .size = size };
}

void spanq_push(struct spanq *q, const void *row)
{
	if (q->nr == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 64;
		q->rows = reallocarray(q->rows, q->cap, q->size);
		if (!q->rows)
			die("out of memory");
	}
	memcpy(q->rows + q->nr++ * q->size, row, q->size);
}

void spanq_flush_tidmap(struct spanq *q, struct rt_tidmap *open,
			bool (*is_open)(const void *row),
			int (*cmp)(const void *a, const void *b))
{
	size_t first = q->nr;

	for (size_t i = 0; i < open->cap; i++) {
		const void *row = rt_tidmap_slot(open, i);

		if (row && is_open(row))
			spanq_push(q, row);
	}
	if (q->nr > first)	/* (none: rows may be NULL) */
		qsort(q->rows + first * q->size, q->nr - first, q->size, cmp);
	rt_tidmap_free(open);
	rt_tidmap_init(open, q->size);
}

int spanq_next(struct spanq *q, struct sql_cursor *c, const struct spanq_ops *ops,
	       const void **row)
{
	struct scan_row r;

	while (q->head == q->nr) {
		int rc;

		q->head = q->nr = 0;
		if (q->done)
			return 0;
		rc = scan_next(q->scan, &r);
		if (rc < 0)
			return -1;
		if (!rc || r.member != q->member) {
			ops->member_end(c);
			q->member = r.member;
			q->done = !rc;
			if (!rc)
				continue;
		}
		ops->feed(c, &r);
	}
	*row = q->rows + q->head++ * q->size;
	return 1;
}

void spanq_free(struct spanq *q)
{
	scan_close(q->scan);
	free(q->rows);
	*q = (struct spanq){ 0 };
}

void sql_want_events(struct sql_cursor *c, const char *const *names, unsigned int n)
{
	c->spec.names = calloc(n, sizeof(*c->spec.names));
	if (!c->spec.names)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++)
		if (!(c->spec.names[i] = strdup(names[i])))
			die("out of memory");
	c->spec.nr_names = n;
	c->spec.names_set = true;
}

int64_t sql_item_s64(const struct rt_item *it, const char *name, int64_t none)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : none;
}

int64_t sql_cycles_ns(const struct sql_cursor *c, unsigned int m, uint64_t cycles)
{
	return (int64_t)((unsigned __int128)cycles * 1000000000 /
			 c->db->ts->m[m].t->md->clock_freq);
}
