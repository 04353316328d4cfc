// SPDX-License-Identifier: GPL-2.0
/*
 * critpath (critpath.h): one thread_state pass over the member collects
 * the spans that overlap the interval into per-thread arrays, sorted by
 * time, each blocked span told its waker (the R span right after it)
 * and whether it woke it in an interrupt;
 * then the walk, depth first; then one thread pass names the threads.
 */
#include <stdlib.h>
#include <string.h>

#include "critpath.h"
#include "threadidx.h"

struct cp_span {
	int64_t ts, end;
	int64_t state;			/* CP_UNKNOWN: Running, not counted */
	int32_t waker;			/* blocked: who ended it; -1 none */
	bool irq;			/* R, blocked: that wakeup was in an interrupt */
};

/* A thread's spans (the tidmap's element). */
struct cp_thread {
	int32_t tid;			/* first: the tidmap's key */
	struct cp_span *v;
	size_t nr, cap;
};

struct cp_name {
	int32_t tid;			/* first: the tidmap's key */
	char *name;
};

struct walk {
	struct rt_tidmap threads;	/* struct cp_thread */
	struct cp_result *r;
	size_t cap;
	int32_t chain[CP_MAX_DEPTH + 1];
};

static bool blocked(int64_t state)
{
	return state != SW_RUNNING && state != CP_UNKNOWN && (state & 0xff);
}

static void add_span(struct walk *w, const struct sw_span *sp)
{
	struct cp_thread *t;
	bool created;

	t = rt_tidmap_get(&w->threads, sp->tid, &created);
	if (!t)
		die("out of memory");
	if (t->nr == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v)
			die("out of memory");
	}
	t->v[t->nr++] = (struct cp_span){
		.ts = sp->ts, .end = sp->end, .waker = sp->waker, .irq = sp->irq,
		.state = sp->state == SW_RUNNING && !sp->chained ? CP_UNKNOWN : sp->state,
	};
}

static int cmp_span(const void *a, const void *b)
{
	const struct cp_span *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 :
	       x->end < y->end ? -1 : x->end > y->end;
}

/*
 * The spans sorted; a blocked span's waker is that of the R span that
 * starts where it ends (schedwalk opens it at the wakeup that ends it).
 */
static void finish_threads(struct walk *w)
{
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct cp_thread *t = rt_tidmap_slot(&w->threads, i);

		if (!t)
			continue;
		qsort(t->v, t->nr, sizeof(*t->v), cmp_span);
		for (size_t k = 0; k < t->nr; k++) {
			const struct cp_span *n = k + 1 < t->nr ? &t->v[k + 1] : NULL;

			if (!blocked(t->v[k].state))
				continue;
			t->v[k].waker = n && n->ts == t->v[k].end && n->state == 0 ?
					n->waker : -1;
			t->v[k].irq = t->v[k].waker >= 0 && n->irq;
		}
	}
}

static void emit(struct walk *w, unsigned int depth, int64_t ts, int64_t end, int64_t state)
{
	struct cp_result *r = w->r;
	struct cp_row *row;

	if (end <= ts)
		return;
	if (r->nr == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		r->rows = realloc(r->rows, w->cap * sizeof(*r->rows));
		if (!r->rows)
			die("out of memory");
	}
	row = &r->rows[r->nr++];
	memset(row, 0, sizeof(*row));
	row->ts = ts;
	row->dur = end - ts;
	row->state = state;
	row->depth = depth;
	memcpy(row->chain, w->chain, (depth + 1) * sizeof(*row->chain));
}

static bool in_chain(const struct walk *w, unsigned int depth, int32_t tid)
{
	for (unsigned int i = 0; i <= depth; i++)
		if (w->chain[i] == tid)
			return true;
	return false;
}

/* The first of @t's spans that can end after @s (sorted by ts). */
static size_t first_span(const struct cp_thread *t, int64_t s)
{
	size_t lo = 0, hi = t->nr;

	/* The last span starting at or before @s, else the first. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].ts <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* What thread w->chain[depth] did over [s, e): rows partitioning it. */
static void walk(struct walk *w, unsigned int depth, int64_t s, int64_t e)
{
	const struct cp_thread *t = rt_tidmap_find(&w->threads, w->chain[depth]);
	int64_t at = s;

	for (size_t i = t ? first_span(t, s) : 0; t && i < t->nr && at < e; i++) {
		const struct cp_span *sp = &t->v[i];
		int64_t a = sp->ts > at ? sp->ts : at;
		int64_t b = sp->end < e ? sp->end : e;

		if (a >= e)
			break;
		if (b <= a)
			continue;	/* before @at, or overlapped: damage */
		emit(w, depth, at, a, CP_UNKNOWN);
		if (blocked(sp->state) && sp->waker > 0 && !sp->irq && depth < CP_MAX_DEPTH &&
		    !in_chain(w, depth, sp->waker)) {
			w->chain[depth + 1] = sp->waker;
			walk(w, depth + 1, a, b);
		} else {
			emit(w, depth, a, b, sp->state);
		}
		at = b;
	}
	emit(w, depth, at, e, CP_UNKNOWN);
}

static void threads_free(struct walk *w)
{
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct cp_thread *t = rt_tidmap_slot(&w->threads, i);

		if (t)
			free(t->v);
	}
	rt_tidmap_free(&w->threads);
}

/* The names of the threads on the path, from the thread table's scan. */
static int name_threads(struct sql_cursor *c, struct cp_result *r)
{
	struct tidx_scan *s = tidx_open(c, false);
	const struct threadidx *x;
	int rc;

	while ((rc = tidx_next(s, &x)) > 0) {
		if (x->member != r->member)
			continue;
		for (size_t i = 0; i < r->nr; i++) {
			const struct cp_row *row = &r->rows[i];

			for (unsigned int k = 0; k <= row->depth; k++) {
				struct cp_name *n;
				bool created;
				size_t lo = 0, hi = x->nr_threads;

				n = rt_tidmap_get(&r->names, row->chain[k], &created);
				if (!n)
					die("out of memory");
				if (!created)
					continue;
				n->name = NULL;
				/* x->threads is sorted by tid. */
				while (lo < hi) {
					size_t mid = lo + (hi - lo) / 2;

					if (x->threads[mid].tid < row->chain[k])
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo < x->nr_threads && x->threads[lo].tid == row->chain[k] &&
				    x->threads[lo].name && !(n->name = strdup(x->threads[lo].name)))
					die("out of memory");
			}
		}
	}
	tidx_close(s);
	return rc < 0 ? -1 : 0;
}

int critpath_run(struct sql_cursor *c, unsigned int member, int32_t tid,
		 bool has_begin, int64_t begin, bool has_end, int64_t end,
		 struct cp_result *out)
{
	struct walk w = { .r = out };
	struct schedwalk *sw;
	struct sw_span sp;
	int64_t first = INT64_MAX, last = INT64_MIN;
	int rc;

	memset(out, 0, sizeof(*out));
	out->member = member;
	rt_tidmap_init(&out->names, sizeof(struct cp_name));
	rt_tidmap_init(&w.threads, sizeof(struct cp_thread));
	/* This member only, every event of it (schedwalk's rule). */
	sql_spec_free(&c->spec);
	c->spec.members = calloc(c->db->ts->nr, sizeof(*c->spec.members));
	if (!c->spec.members)
		die("out of memory");
	c->spec.members[member] = true;
	c->spec.members_set = true;
	sw = schedwalk_open(c, true);
	while ((rc = schedwalk_next(sw, &sp)) > 0) {
		/* Its life: to its exit (X, Z: dead, until the trace ends). */
		if (sp.tid == tid) {
			first = sp.ts < first ? sp.ts : first;
			if (!(sp.state & 0x30))
				last = sp.end > last ? sp.end : last;
		}
		/* An R span starting at @end still names the waker before it. */
		if (sp.tid <= 0 || (has_end && sp.ts > end) ||
		    (has_begin && sp.end <= begin))
			continue;
		add_span(&w, &sp);
	}
	schedwalk_close(sw);
	if (rc < 0) {
		threads_free(&w);
		return -1;
	}
	out->begin = has_begin ? begin : first;
	out->end = has_end ? end : last;
	if (first == INT64_MAX && !(has_begin && has_end)) {
		threads_free(&w);
		return sql_error(c, "thread %d of trace %u has no span: give ts and dur",
				 tid, member);
	}
	finish_threads(&w);
	w.chain[0] = tid;
	if (out->end > out->begin)
		walk(&w, 0, out->begin, out->end);
	threads_free(&w);
	return name_threads(c, out);
}

void critpath_free(struct cp_result *r)
{
	for (size_t i = 0; i < r->names.cap; i++) {
		struct cp_name *n = rt_tidmap_slot(&r->names, i);

		if (n)
			free(n->name);
	}
	rt_tidmap_free(&r->names);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

const char *critpath_name(const struct cp_result *r, int32_t tid, char *buf, size_t size)
{
	const struct cp_name *n = rt_tidmap_find(&r->names, tid);

	if (!n || !n->name) {
		snprintf(buf, size, "%d", tid);
		return buf;
	}
	snprintf(buf, size, "%s", n->name);
	for (char *p = buf; *p; p++)
		if (*p == ';')
			*p = ':';
	return buf;
}

const char *critpath_state(const struct cp_row *row, char *buf, size_t size)
{
	if (row->state == CP_UNKNOWN) {
		snprintf(buf, size, "Unknown");
		return buf;
	}
	return sw_state_name(row->state, buf, size);
}

void critpath_chain(const struct cp_result *r, const struct cp_row *row, sqlite3_str *s)
{
	char buf[64];

	for (unsigned int k = 0; k <= row->depth; k++)
		sqlite3_str_appendf(s, "%s%s", k ? ";" : "",
				    critpath_name(r, row->chain[k], buf, sizeof(buf)));
}
