// SPDX-License-Identifier: GPL-2.0
/*
 * Tables keyed by thread id, for the readers that keep per-thread state
 * while they stream a trace (threads.c, report --stat, export's JSON):
 * open addressing with linear probing, twice as large when half full, so
 * that memory follows the number of threads and never the events.
 *
 * Each element starts with its int32_t tid; a free slot holds
 * RT_TIDMAP_FREE (INT32_MIN: no thread id is negative, and 0, the idle
 * task, is a key like the others).
 */
#include <stdlib.h>
#include <string.h>

#include "rtdecode.h"

#define FIRST_CAP	1024

static int32_t *key_at(const struct rt_tidmap *m, size_t i)
{
	return (int32_t *)(m->slots + i * m->elem);
}

static size_t probe(const struct rt_tidmap *m, int32_t tid)
{
	size_t i = rt_tidmap_home(m, tid);

	while (*key_at(m, i) != RT_TIDMAP_FREE && *key_at(m, i) != tid)
		i = (i + 1) & (m->cap - 1);
	return i;
}

void rt_tidmap_init(struct rt_tidmap *m, size_t elem)
{
	memset(m, 0, sizeof(*m));
	m->elem = elem;
}

void rt_tidmap_free(struct rt_tidmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->used = 0;
}

void *rt_tidmap_find(const struct rt_tidmap *m, int32_t tid)
{
	size_t i;

	if (!m->cap || tid == RT_TIDMAP_FREE)
		return NULL;
	i = probe(m, tid);
	return *key_at(m, i) == tid ? m->slots + i * m->elem : NULL;
}

/* Twice the slots (FIRST_CAP the first time), every element moved over. */
static int grow(struct rt_tidmap *m)
{
	struct rt_tidmap n = *m;

	n.cap = m->cap ? 2 * m->cap : FIRST_CAP;
	n.slots = calloc(n.cap, m->elem);
	if (!n.slots)
		return -1;
	for (size_t i = 0; i < n.cap; i++)
		*key_at(&n, i) = RT_TIDMAP_FREE;
	for (size_t i = 0; i < m->cap; i++)
		if (*key_at(m, i) != RT_TIDMAP_FREE)
			memcpy(n.slots + probe(&n, *key_at(m, i)) * n.elem,
			       m->slots + i * m->elem, m->elem);
	free(m->slots);
	*m = n;
	return 0;
}

void *rt_tidmap_get(struct rt_tidmap *m, int32_t tid, bool *created)
{
	size_t i;

	*created = false;
	if (tid == RT_TIDMAP_FREE)
		return NULL;
	if (2 * (m->used + 1) > m->cap && grow(m))
		return NULL;
	i = probe(m, tid);
	if (*key_at(m, i) == RT_TIDMAP_FREE) {
		/* A new element: zeroes after its tid. */
		memset(m->slots + i * m->elem, 0, m->elem);
		*key_at(m, i) = tid;
		m->used++;
		*created = true;
	}
	return m->slots + i * m->elem;
}

void *rt_tidmap_slot(const struct rt_tidmap *m, size_t i)
{
	return *key_at(m, i) == RT_TIDMAP_FREE ? NULL : m->slots + i * m->elem;
}
