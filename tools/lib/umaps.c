// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping table of umaps.h.  Per process, its executable mappings
 * sorted by start, none overlapping; a mapping is shared (counted
 * references) by the processes a fork copied it to, and replaced, never
 * changed, when an mmap cuts it.
 */
#include <stdlib.h>
#include <string.h>

#include "umaps.h"

struct umap {
	unsigned int refs;
	struct umap_mapping m;		/* m.path: our copy */
};

struct proc {
	int32_t pid;			/* first: the tidmap's key */
	uint32_t nr, cap;
	struct umap **maps;		/* by start */
	uint64_t gen;			/* umaps.gen when they last changed */
};

enum kind { K_OTHER, K_MMAP, K_EXEC, K_FORK };

struct umaps {
	struct rt_tidmap procs;		/* struct proc by pid */
	const struct rt_metadata *md;
	uint8_t *kinds;			/* enum kind, by position in md->events */
	bool mmaps;			/* md declares user_mmap: anything to do */
	uint64_t gen;			/* changes to any process's mappings */
	/* The mapping the last umaps_feed() added (umaps_last()). */
	bool has_last;
	int32_t last_pid;
	struct umap_mapping last;
	char *last_path;
};

int umaps_set_metadata(struct umaps *um, const struct rt_metadata *md)
{
	uint8_t *k = calloc(md->nr_events + 1, 1);

	if (!k)
		return -1;
	um->mmaps = false;
	for (unsigned int i = 0; i < md->nr_events; i++) {
		const char *name = md->events[i].name;

		k[i] = !strcmp(name, "user_mmap") ? K_MMAP :
		       !strcmp(name, "sched_process_exec") ? K_EXEC :
		       !strcmp(name, "sched_process_fork") ? K_FORK : K_OTHER;
		um->mmaps |= k[i] == K_MMAP;
	}
	free(um->kinds);
	um->kinds = k;
	um->md = md;
	return 0;
}

struct umaps *umaps_new(const struct rt_metadata *md)
{
	struct umaps *um = calloc(1, sizeof(*um));

	if (!um)
		return NULL;
	rt_tidmap_init(&um->procs, sizeof(struct proc));
	if (umaps_set_metadata(um, md)) {
		free(um);
		return NULL;
	}
	return um;
}

static void put_map(struct umap *u)
{
	if (u && !--u->refs) {
		free((char *)u->m.path);
		free(u);
	}
}

static void proc_clear(struct proc *p)
{
	for (uint32_t i = 0; i < p->nr; i++)
		put_map(p->maps[i]);
	p->nr = 0;
}

void umaps_free(struct umaps *um)
{
	if (!um)
		return;
	for (size_t i = 0; i < um->procs.cap; i++) {
		struct proc *p = rt_tidmap_slot(&um->procs, i);

		if (p) {
			proc_clear(p);
			free(p->maps);
		}
	}
	rt_tidmap_free(&um->procs);
	free(um->kinds);
	free(um->last_path);
	free(um);
}

/* A new mapping of @m over [start, end), its pgoff moved with its start. */
static struct umap *new_map(const struct umap_mapping *m, uint64_t start,
			    uint64_t end)
{
	struct umap *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->refs = 1;
	u->m = *m;
	u->m.pgoff = m->pgoff + (start - m->start);
	u->m.start = start;
	u->m.end = end;
	u->m.path = strdup(m->path ? m->path : "");
	if (!u->m.path) {
		free(u);
		return NULL;
	}
	return u;
}

/* Room for @n more in @p: 0 or -1. */
static int reserve(struct proc *p, uint32_t n)
{
	struct umap **v;
	uint32_t cap;

	if (p->nr + n <= p->cap)
		return 0;
	cap = p->cap ? 2 * p->cap : 8;
	while (cap < p->nr + n)
		cap *= 2;
	v = realloc(p->maps, cap * sizeof(*v));
	if (!v)
		return -1;
	p->maps = v;
	p->cap = cap;
	return 0;
}

int umaps_add(struct umaps *um, int32_t pid, const struct umap_mapping *m)
{
	struct umap *u, *left = NULL, *right = NULL;
	uint32_t i, j, k;
	struct proc *p;
	bool created;

	if (pid < 0 || m->end <= m->start)
		return 0;		/* nothing an address can be in */
	p = rt_tidmap_get(&um->procs, pid, &created);
	if (!p || reserve(p, 2))
		return -1;
	u = new_map(m, m->start, m->end);
	if (!u)
		return -1;
	/* [i, j): the mappings it overlaps; what sticks out of it stays. */
	for (i = 0; i < p->nr && p->maps[i]->m.end <= m->start; i++)
		;
	for (j = i; j < p->nr && p->maps[j]->m.start < m->end; j++)
		;
	if (i < j && p->maps[i]->m.start < m->start) {
		left = new_map(&p->maps[i]->m, p->maps[i]->m.start, m->start);
		if (!left)
			goto nomem;
	}
	if (i < j && p->maps[j - 1]->m.end > m->end) {
		right = new_map(&p->maps[j - 1]->m, m->end, p->maps[j - 1]->m.end);
		if (!right)
			goto nomem;
	}
	for (k = i; k < j; k++)
		put_map(p->maps[k]);
	k = (left != NULL) + 1 + (right != NULL);
	memmove(p->maps + i + k, p->maps + j, (p->nr - j) * sizeof(*p->maps));
	p->nr = p->nr - (j - i) + k;
	if (left)
		p->maps[i++] = left;
	p->maps[i++] = u;
	if (right)
		p->maps[i] = right;
	p->gen = ++um->gen;
	return 0;
nomem:
	put_map(left);
	put_map(u);
	return -1;
}

bool umaps_lookup(const struct umaps *um, int32_t pid, uint64_t ip,
		  struct umap_hit *hit)
{
	const struct proc *p = pid < 0 ? NULL : rt_tidmap_find(&um->procs, pid);
	uint32_t lo = 0, hi;
	const struct umap_mapping *m;

	if (!p)
		return false;
	/* The last mapping starting at or below @ip. */
	hi = p->nr;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid]->m.start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || ip >= p->maps[lo - 1]->m.end)
		return false;
	m = &p->maps[lo - 1]->m;
	*hit = (struct umap_hit){
		.build_id = m->build_id_len ? m->build_id : NULL,
		.build_id_len = m->build_id_len,
		.file_off = ip - m->start + m->pgoff,
		.path = m->path,
		.flags = m->flags,
		.start = m->start,
		.end = m->end,
	};
	return true;
}

const struct umap_mapping *umaps_nth(const struct umaps *um, int32_t pid,
				     uint32_t i)
{
	const struct proc *p = pid < 0 ? NULL : rt_tidmap_find(&um->procs, pid);

	return p && i < p->nr ? &p->maps[i]->m : NULL;
}

uint64_t umaps_gen(const struct umaps *um, int32_t pid)
{
	const struct proc *p = pid < 0 ? NULL : rt_tidmap_find(&um->procs, pid);

	return p ? p->gen : 0;
}

/* The child of a fork maps what its parent did. */
static int copy_maps(struct umaps *um, int32_t parent, int32_t child)
{
	struct proc *pp = rt_tidmap_find(&um->procs, parent), *c;
	bool created;

	if (!pp || parent == child || child < 0)
		return 0;
	c = rt_tidmap_get(&um->procs, child, &created);
	/* rt_tidmap_get() may have moved the parent. */
	pp = rt_tidmap_find(&um->procs, parent);
	if (!c || !pp || reserve(c, pp->nr))
		return -1;
	proc_clear(c);
	for (uint32_t i = 0; i < pp->nr; i++) {
		c->maps[i] = pp->maps[i];
		c->maps[i]->refs++;
	}
	c->nr = pp->nr;
	c->gen = ++um->gen;
	return 0;
}

static int64_t ival(const struct rt_item *it, const char *name, bool *ok)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	if (!v)
		*ok = false;
	return v ? rt_field_s64(v, 0) : 0;
}

static int feed_mmap(struct umaps *um, const struct rt_item *it)
{
	const struct rt_field_value *bid = rt_item_field(it, "build_id", RT_USE_INTS);
	const struct rt_field_value *path = rt_item_field(it, "path", RT_USE_TEXT);
	struct umap_mapping m = { 0 };
	char *p = NULL;
	bool ok = true;
	int32_t pid;
	int err;

	pid = (int32_t)ival(it, "pid", &ok);
	m.flags = (uint32_t)ival(it, "flags", &ok);
	m.start = (uint64_t)ival(it, "start", &ok);
	m.end = (uint64_t)ival(it, "end", &ok);
	m.pgoff = (uint64_t)ival(it, "pgoff", &ok);
	m.dev = (uint64_t)ival(it, "dev", &ok);
	m.ino = (uint64_t)ival(it, "ino", &ok);
	if (!ok)
		return 0;		/* not the user_mmap this reads */
	if (bid && bid->count && bid->count <= UMAP_BUILD_ID_MAX &&
	    !(m.flags & UMAP_NO_BUILD_ID)) {
		m.build_id_len = (uint8_t)bid->count;
		for (uint64_t i = 0; i < bid->count; i++)
			m.build_id[i] = (uint8_t)rt_field_u64(bid, i);
	}
	if (path) {
		size_t n = strnlen((const char *)path->data, path->count);

		p = malloc(n + 1);
		if (!p)
			return -1;
		memcpy(p, path->data, n);
		p[n] = '\0';
	}
	m.path = p ? p : "";
	err = umaps_add(um, pid, &m);
	if (err) {
		free(p);
		return err;
	}
	free(um->last_path);
	um->last_path = p;
	um->last = m;
	um->last_pid = pid;
	um->has_last = true;
	return 0;
}

int umaps_feed(struct umaps *um, const struct rt_item *it)
{
	const struct rt_event_desc *ev = it->event, *evs = um->md->events;
	enum kind k;
	bool ok = true;

	um->has_last = false;
	/* Every item comes here: without mappings, nothing to look at. */
	if (!um->mmaps || it->type != RT_ITEM_EVENT ||
	    (uintptr_t)ev < (uintptr_t)evs ||
	    (uintptr_t)ev >= (uintptr_t)(evs + um->md->nr_events))
		return 0;
	k = (enum kind)um->kinds[ev - evs];
	if (k == K_MMAP)
		return feed_mmap(um, it);
	if (k == K_EXEC) {
		/* After the exec the thread leads its process: tid == pid. */
		int32_t tid = (int32_t)ival(it, "tid", &ok);
		struct proc *p = ok ? rt_tidmap_find(&um->procs, tid) : NULL;

		if (p) {
			proc_clear(p);
			p->gen = ++um->gen;
		}
		return 0;
	}
	if (k == K_FORK) {
		int32_t parent = (int32_t)ival(it, "parent_pid", &ok);
		int32_t child = (int32_t)ival(it, "child_pid", &ok);

		/* A thread (CLONE_THREAD) shares its process's mappings. */
		return ok ? copy_maps(um, parent, child) : 0;
	}
	return 0;
}

const struct umap_mapping *umaps_last(const struct umaps *um, int32_t *pid)
{
	if (!um->has_last)
		return NULL;
	*pid = um->last_pid;
	return &um->last;
}
