// SPDX-License-Identifier: GPL-2.0
/*
 * Filling a trace's symbol store (symfill.h): the binaries its user
 * stacks ran in, found by one walk over the trace, then put in the store
 * through usyms_put(), which checks each file's build-id.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "le.h"
#include "msg.h"
#include "symfill.h"
#include "usyms.h"
#include "../tools/lib/merge.h"
#include "../tools/lib/rtdecode.h"
#include "../tools/lib/stackrec.h"
#include "../tools/lib/umaps.h"

/* A binary to store, by build-id. */
struct cand {
	uint8_t id[USYMS_BUILD_ID_MAX];
	uint8_t id_len;			/* 0: a free slot */
	int32_t pid;			/* the latest process that mapped it */
	uint64_t start, end;		/* ... and where */
	char *path;
	uint64_t hits;			/* user frames in it */
	size_t order;			/* first mapped */
};

struct symfill {
	struct cand *v;			/* open addressing, by build-id */
	size_t nr, cap;			/* cap: a power of two */
};

struct symfill *symfill_new(void)
{
	return calloc(1, sizeof(struct symfill));
}

void symfill_free(struct symfill *sf)
{
	if (!sf)
		return;
	for (size_t i = 0; i < sf->cap; i++)
		free(sf->v[i].path);
	free(sf->v);
	free(sf);
}

/* FNV-1a: a build-id is a hash already, any mixing does. */
static size_t slot_of(const uint8_t *id, size_t len, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ id[i]) * 0x100000001b3ULL;
	return (size_t)h & (cap - 1);
}

/* @id's slot: its candidate, or the free slot it would take. */
static struct cand *slot(const struct symfill *sf, const uint8_t *id, size_t len)
{
	size_t i = slot_of(id, len, sf->cap);

	for (;; i = (i + 1) & (sf->cap - 1)) {
		struct cand *c = &sf->v[i];

		if (!c->id_len || (c->id_len == len && !memcmp(c->id, id, len)))
			return c;
	}
}

/* Room for one more, the table at most half full: 0 or -1. */
static int grow(struct symfill *sf)
{
	struct symfill bigger = { .cap = sf->cap ? 2 * sf->cap : 64 };

	if (2 * (sf->nr + 1) <= sf->cap)
		return 0;
	bigger.v = calloc(bigger.cap, sizeof(*bigger.v));
	if (!bigger.v)
		return -1;
	for (size_t i = 0; i < sf->cap; i++)
		if (sf->v[i].id_len)
			*slot(&bigger, sf->v[i].id, sf->v[i].id_len) = sf->v[i];
	free(sf->v);
	sf->v = bigger.v;
	sf->cap = bigger.cap;
	return 0;
}

/* A mapping of @pid: its build-id a candidate, this its latest mapping. */
static int add_mapping(struct symfill *sf, int32_t pid, const struct umap_mapping *m)
{
	struct cand *c;

	if (!m->build_id_len || m->build_id_len > USYMS_BUILD_ID_MAX)
		return 0;
	if (grow(sf))
		return -1;
	c = slot(sf, m->build_id, m->build_id_len);
	if (!c->id_len || (*m->path == '/' && strcmp(c->path, m->path))) {
		char *p = strdup(m->path);

		if (!p)
			return -1;
		if (!c->id_len) {
			memcpy(c->id, m->build_id, m->build_id_len);
			c->id_len = m->build_id_len;
			c->order = sf->nr++;
		}
		free(c->path);
		c->path = p;
	}
	c->pid = pid;
	c->start = m->start;
	c->end = m->end;
	return 0;
}

static void hit(struct symfill *sf, const struct umaps *um, int32_t pid, uint64_t ip)
{
	struct umap_hit h;
	struct cand *c;

	if (!sf->cap || !umaps_lookup(um, pid, ip, &h) || !h.build_id)
		return;
	c = slot(sf, h.build_id, h.build_id_len);
	if (c->id_len)
		c->hits++;
}

static void count_hits(struct symfill *sf, const struct umaps *um,
		       const struct stack_pair *p, int32_t pid)
{
	for (uint32_t i = 0; p->user.present && i < p->user.nr; i++)
		hit(sf, um, pid, p->user.ips[i]);
	/*
	 * A stack copy, not unwound here: the binary its ip is in, and each
	 * its words point into (return addresses among them), which report's
	 * unwinder needs to go up through their callers.
	 */
	if (p->copy.present) {
		hit(sf, um, pid, p->copy.ip);
		for (uint32_t off = 0; off + 8 <= p->copy.size; off += 8)
			hit(sf, um, pid, rt_get_le(p->copy.bytes + off, 8));
	}
}

int symfill_scan(struct symfill *sf, struct rt_trace *t, char *why, size_t size)
{
	struct rt_threads *th = rt_threads_new(t->md);
	struct stackrec *sr = stackrec_new(t->md);
	struct umaps *um = umaps_new(t->md);
	struct merge *m = merge_open(t, false);
	const struct umap_mapping *map;
	const struct stack_pair *p;
	const struct rt_item *it;
	int32_t tid = -1, pid;
	int err = -1;

	snprintf(why, size, "out of memory");
	if (!th || !sr || !um || !m)
		goto out;
	while ((it = merge_next(m))) {
		if ((p = stackrec_feed(sr, it)))
			count_hits(sf, um, p, stack_pair_pid(p, th, tid));
		if (stackrec_is_trailer(sr, it))
			continue;
		if (it->type == RT_ITEM_EVENT)
			tid = rt_threads_owner(th, it);
		rt_threads_feed(th, it);
		if (umaps_feed(um, it))
			goto out;
		map = umaps_last(um, &pid);
		if (map && add_mapping(sf, pid, map))
			goto out;
	}
	if ((p = stackrec_flush(sr)))
		count_hits(sf, um, p, stack_pair_pid(p, th, tid));
	if (merge_error(m)) {
		snprintf(why, size, "%s", merge_error(m));
		goto out;
	}
	err = 0;
out:
	merge_close(m);
	umaps_free(um);
	stackrec_free(sr);
	rt_threads_free(th);
	return err;
}

/* ---- store ---------------------------------------------------------------- */

/* Most hit first, then in the order they were first mapped. */
static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a;
	const struct cand *y = *(const struct cand *const *)b;

	if (x->hits != y->hits)
		return x->hits < y->hits ? 1 : -1;
	return (x->order > y->order) - (x->order < y->order);
}

/* @c put from @fd (named @from): usyms_put()'s result, the reason in @why. */
static int put_from(int dirfd, const struct cand *c, int fd, const char *from,
		    uint64_t *written, char *why, size_t size)
{
	char w[512];
	int err;

	if (fd < 0) {
		err = -errno;
		snprintf(why, size, "%s: %s", from, strerror(errno));
		return err;
	}
	err = usyms_put(dirfd, c->id, c->id_len, fd, c->path, written, w, sizeof(w));
	close(fd);
	if (err < 0)
		snprintf(why, size, "%s: %s", from, w);
	return err;
}

/*
 * @c into the store: the file its process mapped if the process lives
 * (map_files takes CAP_SYS_ADMIN), else (or if that is not it) the file
 * at its path.
 */
static int put_binary(int dirfd, const struct cand *c, uint64_t *written,
		      char *why, size_t size)
{
	char mf[96];
	int err = -ENOENT;

	if (c->pid > 0) {
		snprintf(mf, sizeof(mf), "/proc/%" PRId32 "/map_files/%" PRIx64 "-%" PRIx64,
			 c->pid, c->start, c->end);
		err = put_from(dirfd, c, open(mf, O_RDONLY | O_CLOEXEC), mf,
			       written, why, size);
		if (err >= 0)
			return err;
	}
	if (c->path[0] != '/') {
		if (err == -ENOENT)
			snprintf(why, size, "no file: the trace names none");
		return err;
	}
	return put_from(dirfd, c, open(c->path, O_RDONLY | O_CLOEXEC), c->path,
			written, why, size);
}

/* Not the binary's fault: the store's. */
static bool store_failure(int err)
{
	return err == -ENOSPC || err == -EIO || err == -ENOMEM ||
	       err == -EDQUOT || err == -EROFS;
}

int symfill_store(struct symfill *sf, int dirfd, uint64_t max, const char *bound,
		  unsigned int flags, struct symfill_result *r)
{
	struct cand **order = calloc(sf->nr ? sf->nr : 1, sizeof(*order));
	struct usyms_missing *ms = NULL;
	size_t n = 0;
	int err;

	memset(r, 0, sizeof(*r));
	if (!order)
		return r->err = -ENOMEM;
	for (size_t i = 0; i < sf->cap; i++)
		if (sf->v[i].id_len)
			order[n++] = &sf->v[i];
	qsort(order, n, sizeof(*order), cmp_cand);
	ms = usyms_missing_begin();
	if (!ms)
		r->err = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char hex[2 * USYMS_BUILD_ID_MAX + 1], why[768];
		const struct cand *c = order[i];
		uint64_t written;

		if (!c->hits && !(flags & SYMFILL_ALL)) {
			r->pruned++;
			continue;
		}
		usyms_hex(c->id, c->id_len, hex);
		if (r->bytes >= max) {
			snprintf(why, sizeof(why), "%s %" PRIu64 " bytes reached",
				 bound, max);
			err = -EFBIG;
		} else {
			err = put_binary(dirfd, c, &written, why, sizeof(why));
		}
		if (err == 0) {
			r->had++;
			continue;
		}
		if (err > 0) {
			r->stored++;
			r->bytes += written;
			continue;
		}
		warn("%s (%s): not stored: %s", c->path, hex, why);
		r->missing++;
		if (store_failure(err) && !r->err)
			r->err = err;
		if (ms)
			usyms_missing_add(ms, c->id, c->id_len, c->path, why);
	}
	free(order);
	if (ms && (err = usyms_missing_end(ms, dirfd)) && !r->err)
		r->err = err;
	return r->err;
}
