// SPDX-License-Identifier: GPL-2.0
/*
 * The items of every CPU of a trace merged by time (merge.h): one stream
 * per CPU, the next item of each in a heap.
 */
#include <stdlib.h>

#include "merge.h"

struct head {
	struct rt_trace_cpu *c;
	struct rt_item item;		/* its next item, in the heap */
};

struct merge {
	struct rt_trace *t;
	bool packets;
	bool primed;
	bool failed;			/* err says why; nothing more is merged */
	struct rt_error err;
	struct head *heads;		/* by CPU index */
	struct rt_item_heap heap;
	struct rt_item cur;
};

/* The CPU's next item worth merging; false at the end of its stream. */
static bool advance(struct merge *m, struct head *h)
{
	int r;

	do {
		r = rt_stream_next(h->c->stream, &h->item, &m->err);
		if (r < 0)
			m->failed = true;
	} while (r > 0 && h->item.type == RT_ITEM_PACKET && !m->packets);
	return r > 0;
}

struct merge *merge_open(struct rt_trace *t, bool packets)
{
	struct merge *m = calloc(1, sizeof(*m));

	if (!m || !(m->heads = calloc(t->nr_cpus ? t->nr_cpus : 1, sizeof(*m->heads))) ||
	    rt_item_heap_reserve(&m->heap, t->nr_cpus ? t->nr_cpus : 1)) {
		merge_close(m);
		return NULL;
	}
	m->t = t;
	m->packets = packets;
	for (unsigned int i = 0; i < t->nr_cpus && !m->failed; i++) {
		m->heads[i].c = &t->cpus[i];
		if (advance(m, &m->heads[i]))
			rt_item_heap_push(&m->heap, &m->heads[i].item);
	}
	return m;
}

const struct rt_item *merge_next(struct merge *m)
{
	const struct rt_item *top;

	/* The item handed out last is replaced only now. */
	if (m->primed && !m->failed) {
		top = rt_item_heap_top(&m->heap);
		if (advance(m, container_of(top, struct head, item)))
			rt_item_heap_top_changed(&m->heap);
		else
			rt_item_heap_pop(&m->heap);
	}
	top = rt_item_heap_top(&m->heap);
	if (!top || m->failed)
		return NULL;
	m->primed = true;
	m->cur = *top;
	return &m->cur;
}

const char *merge_error(const struct merge *m)
{
	return m->failed ? m->err.msg : NULL;
}

void merge_close(struct merge *m)
{
	if (!m)
		return;
	rt_item_heap_free(&m->heap);
	free(m->heads);
	free(m);
}
