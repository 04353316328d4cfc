// SPDX-License-Identifier: GPL-2.0
/*
 * The k-way merge of per-CPU streams: a min-heap of each stream's next
 * item, by time then CPU (rtdecode.h, "item heap").  The items are the
 * callers': the heap holds pointers and never copies one.
 */
#include <stdlib.h>

#include "rtdecode.h"

static bool item_less(const struct rt_item *a, const struct rt_item *b)
{
	if (a->timestamp != b->timestamp)
		return a->timestamp < b->timestamp;
	return a->cpu < b->cpu;
}

static void swap(const struct rt_item **v, size_t i, size_t j)
{
	const struct rt_item *t = v[i];

	v[i] = v[j];
	v[j] = t;
}

static void sift_down(struct rt_item_heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < h->n && item_less(h->v[l], h->v[m]))
			m = l;
		if (l + 1 < h->n && item_less(h->v[l + 1], h->v[m]))
			m = l + 1;
		if (m == i)
			return;
		swap(h->v, i, m);
		i = m;
	}
}

int rt_item_heap_reserve(struct rt_item_heap *h, size_t cap)
{
	const struct rt_item **v;

	if (cap <= h->cap)
		return 0;
	v = realloc(h->v, cap * sizeof(*v));
	if (!v)
		return -1;
	h->v = v;
	h->cap = cap;
	return 0;
}

void rt_item_heap_free(struct rt_item_heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

void rt_item_heap_push(struct rt_item_heap *h, const struct rt_item *it)
{
	size_t i = h->n++;

	h->v[i] = it;
	while (i && item_less(h->v[i], h->v[(i - 1) / 2])) {
		swap(h->v, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

void rt_item_heap_top_changed(struct rt_item_heap *h)
{
	sift_down(h, 0);
}

void rt_item_heap_pop(struct rt_item_heap *h)
{
	h->v[0] = h->v[--h->n];
	sift_down(h, 0);
}
