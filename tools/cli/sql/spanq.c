// SPDX-License-Identifier: GPL-2.0
/* The queue and feeding loop of the tables that pair events (spanq.h). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ckpts.h"
#include "spanq.h"
#include "sqlcache.h"

/* One checkpoint: the table's state before the first row fed at or after @ts. */
struct spanq_ckpt {
	int64_t ts;			/* INT64_MIN: the member's start */
	void *state;			/* NULL: the start's (nothing) */
	size_t size;
};

/* A row given at or after a checkpoint it was open at. */
struct spanq_long {
	int64_t given;			/* ts of the row that gave it; INT64_MAX: the end */
	size_t row;			/* offset in rows */
};

struct spanq_index {
	struct spanq_index *next;	/* the database's list */
	const struct sql_table *t;
	unsigned int member;
	char *cpus;			/* the CPUs it was built for ("" all) */
	struct ckpts ck;		/* struct spanq_ckpt, spaced in rows fed */
	struct spanq_long *longs;
	size_t nr_longs, cap_longs;
	char *rows;
	size_t rows_len, rows_cap;
};

void spanq_init(struct spanq *q, struct sql_cursor *c, const struct spanq_ops *ops,
		unsigned int what, size_t size)
{
	*q = (struct spanq){ .c = c, .ops = ops, .what = what, .size = size };
	q->rd_members = calloc(c->db->ts->nr + 1, sizeof(*q->rd_members));
	if (!q->rd_members)
		die("out of memory");
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

void *spanq_save_tidmap(const struct rt_tidmap *m, size_t *size)
{
	char *b = malloc(m->used * m->elem + 1);
	size_t n = 0;

	if (!b)
		die("out of memory");
	for (size_t i = 0; i < m->cap; i++) {
		const void *e = rt_tidmap_slot(m, i);

		if (e)
			memcpy(b + n++ * m->elem, e, m->elem);
	}
	*size = n * m->elem;
	return b;
}

void spanq_restore_tidmap(struct rt_tidmap *m, const void *state, size_t size)
{
	for (size_t off = 0; off + m->elem <= size; off += m->elem) {
		int32_t tid;
		bool created;
		void *e;

		memcpy(&tid, (const char *)state + off, sizeof(tid));	/* the key: first */
		e = rt_tidmap_get(m, tid, &created);
		if (!e)
			die("out of memory");
		memcpy(e, (const char *)state + off, m->elem);
	}
}

/* ---- checkpoints ------------------------------------------------------------------------ */

static void ckpt_drop(void *el)
{
	free(((struct spanq_ckpt *)el)->state);
}

static struct spanq_index *index_new(const struct sql_table *t, unsigned int m)
{
	struct spanq_index *ix = calloc(1, sizeof(*ix));

	if (!ix)
		die("out of memory");
	ix->t = t;
	ix->member = m;
	CKPTS_INIT(&ix->ck, struct spanq_ckpt, ckpt_drop);
	return ix;
}

static void index_free(void *index)
{
	struct spanq_index *ix = index;

	ckpts_free(&ix->ck);
	free(ix->longs);
	free(ix->rows);
	free(ix->cpus);
	free(ix);
}

void spanq_index_free(struct spanq_index *ix)
{
	while (ix) {
		struct spanq_index *n = ix->next;

		index_free(ix);
		ix = n;
	}
}

/* The table's state now, into checkpoint @el (ckpts_take()'s fill). */
static void ckpt_fill(void *el, void *arg)
{
	struct spanq *q = arg;
	struct spanq_ckpt *k = el;

	k->state = k->ts == INT64_MIN ? NULL : q->ops->save(q->c, &k->size);
}

/* Building: the rows given now (at @given) that were open at a checkpoint are kept. */
static void index_drain(struct spanq *q, int64_t given)
{
	struct spanq_index *ix = q->build;
	int64_t since = ckpts_ts(&ix->ck, ix->ck.nr - 1);

	for (; q->head < q->nr; q->head++) {
		const char *row = q->rows + q->head * q->size;

		if (q->ops->row_ts(row) >= since)
			continue;
		if (ix->nr_longs == ix->cap_longs) {
			ix->cap_longs = ix->cap_longs ? 2 * ix->cap_longs : 256;
			ix->longs = realloc(ix->longs, ix->cap_longs * sizeof(*ix->longs));
			if (!ix->longs)
				die("out of memory");
		}
		if (ix->rows_len + q->size > ix->rows_cap) {
			ix->rows_cap = ix->rows_cap ? 2 * ix->rows_cap : 256 * q->size;
			ix->rows = realloc(ix->rows, ix->rows_cap);
			if (!ix->rows)
				die("out of memory");
		}
		memcpy(ix->rows + ix->rows_len, row, q->size);
		ix->longs[ix->nr_longs++] = (struct spanq_long){ given, ix->rows_len };
		ix->rows_len += q->size;
	}
	q->head = q->nr = 0;
}

static int member_start(struct spanq *q, unsigned int m);
static int member_row(struct spanq *q);

/* The CPUs a cursor reads, as text: its index is theirs. */
static char *cpus_key(const struct scan_spec *sp)
{
	sqlite3_str *b = sqlite3_str_new(NULL);
	char *k, *r;

	for (unsigned int i = 0; sp->cpus_set && i < sp->nr_cpus; i++)
		sqlite3_str_appendf(b, "%lld,", (long long)sp->cpus[i]);
	k = sqlite3_str_finish(b);
	r = strdup(k ? k : (sp->cpus_set ? "-" : ""));
	sqlite3_free(k);
	if (!r)
		die("out of memory");
	return r;
}

/*
 * Member @m's checkpoints for @q's table and CPUs: the member read whole
 * through the table's own feed and queue (scan_stats row "span index";
 * sqlcache_family.build, @arg the queue).
 */
static void *index_build(struct sql_cursor *c, unsigned int m, void *arg)
{
	struct spanq *q = arg;
	struct sql_cursor ic = *c;
	struct spanq_index *ix = index_new(c->t, m);
	int r;

	/* scan_stats: "span index", the plan its table's name. */
	ic.stat = sqldb_stat_new(c->db, "span index");
	snprintf(sqldb_stat(c->db, ic.stat)->plan, sizeof(sqldb_stat(c->db, ic.stat)->plan),
		 "%s", c->t->name);
	ic.err = NULL;
	/* The table's own feed, on its own queue and state: its counters ic's. */
	q->c = &ic;
	q->build = ix;
	ckpts_take(&ix->ck, INT64_MIN, ckpt_fill, q);
	r = member_start(q, m);
	while (r >= 0 && q->scan)
		r = member_row(q);
	scan_close(q->scan);
	q->scan = NULL;
	q->head = q->nr = 0;
	q->build = NULL;
	q->c = c;
	if (r < 0) {
		c->err = ic.err;
		index_free(ix);
		return NULL;
	}
	return ix;
}

/* ---- the checkpoints on disk (sqlcache.h) ----------------------------------------------- */

/* The records below, their version: a new one with any change to them or to a table's put(). */
#define SPAN_CACHE_LAYOUT	1
/* Bytes of a checkpoint's head (ts, rows), a long row's head (given). */
#define SPAN_REC_CKPT		16
#define SPAN_REC_LONG		8

/* @ix kept for the next process (sqlcache_family.store, @arg the queue). */
static void index_store(struct sqlcache_buf *b, const void *index, void *arg)
{
	const struct spanq_index *ix = index;
	const struct spanq *q = arg;

	sqlcache_put64(b, ix->ck.fed);
	ckpts_put_head(&ix->ck, b);
	for (size_t i = 0; i < ix->ck.nr; i++) {
		const struct spanq_ckpt *k = ckpts_at(&ix->ck, i);
		size_t n = k->state ? k->size / q->size : 0;

		sqlcache_put64(b, (uint64_t)k->ts);
		sqlcache_put64(b, n);
		for (size_t j = 0; j < n; j++)
			q->ops->put(b, (const char *)k->state + j * q->size);
	}
	sqlcache_put64(b, ix->nr_longs);
	for (size_t i = 0; i < ix->nr_longs; i++) {
		sqlcache_put64(b, (uint64_t)ix->longs[i].given);
		q->ops->put(b, ix->rows + ix->longs[i].row);
	}
}

/*
 * Member @m's checkpoints from payload @b (sqlcache_family.load, @arg the
 * queue).  Checked here: the checkpoints by time from the member's start
 * (which holds nothing), counts within the file; each row by the table's
 * get().
 */
static void *index_load(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b,
			void *arg)
{
	const struct spanq *q = arg;
	struct spanq_index *ix = index_new(c->t, m);
	size_t nr, n;

	ix->ck.fed = sqlcache_get64(b);
	nr = ckpts_get_head(&ix->ck, b, SPAN_REC_CKPT);
	for (size_t i = 0; !b->bad && i < nr; i++) {
		struct spanq_ckpt *k = ckpts_get_next(&ix->ck, b);

		n = sqlcache_get_count(b, q->ops->rec);
		if (!i) {
			b->bad |= n != 0;
			continue;
		}
		k->size = n * q->size;
		k->state = calloc(n + 1, q->size);
		if (!k->state)
			die("out of memory");
		for (size_t j = 0; !b->bad && j < n; j++)
			b->bad = !q->ops->get(c, m, b, (char *)k->state + j * q->size);
	}
	n = b->bad ? 0 : sqlcache_get_count(b, SPAN_REC_LONG + q->ops->rec);
	ix->longs = calloc(n + 1, sizeof(*ix->longs));
	ix->rows = calloc(n + 1, q->size);
	if (!ix->longs || !ix->rows)
		die("out of memory");
	ix->cap_longs = n + 1;
	ix->rows_cap = (n + 1) * q->size;
	for (size_t i = 0; !b->bad && i < n; i++) {
		struct spanq_long *l = &ix->longs[ix->nr_longs++];

		l->given = (int64_t)sqlcache_get64(b);
		l->row = ix->rows_len;
		b->bad = !q->ops->get(c, m, b, ix->rows + ix->rows_len);
		ix->rows_len += q->size;
	}
	return ix;
}

static const struct sqlcache_family span_family = {
	.stat = "span index", .layout = SPAN_CACHE_LAYOUT,
	.load = index_load, .store = index_store, .build = index_build, .free = index_free,
};

/*
 * Member @m's checkpoints for @q's table and CPUs, on first need: from the
 * cache (scan_stats' row "span index", plan "cache", reads no frame), else
 * built and kept there; kept by the database either way.  A file per
 * table and set of CPUs: each is built by its own pass, when a window of
 * that table first needs it.
 */
static const struct spanq_index *index_get(struct spanq *q, unsigned int m)
{
	struct sqldb *d = q->c->db;
	char *cpus = cpus_key(&q->c->spec), *family;
	struct spanq_index *ix;
	int r;

	for (ix = d->span_idx; ix; ix = ix->next)
		if (ix->t == q->c->t && ix->member == m && !strcmp(ix->cpus, cpus)) {
			free(cpus);
			return ix;
		}
	if (*cpus)
		r = asprintf(&family, "span-%s-%016llx", q->c->t->name,
			     (unsigned long long)XXH64(cpus, strlen(cpus), 0));
	else
		r = asprintf(&family, "span-%s", q->c->t->name);
	if (r < 0)
		die("out of memory");
	ix = sqlcache_index(q->c, m, family, &span_family, q);
	free(family);
	if (!ix) {
		free(cpus);
		return NULL;
	}
	ix->cpus = cpus;
	ix->next = d->span_idx;
	d->span_idx = ix;
	return ix;
}

/* ---- one member's read ------------------------------------------------------------------ */

/*
 * Member @m from its start or, for a window [lo, hi], from the last
 * checkpoint at or before lo to the first after hi (0, or -1: c->err).
 */
static int member_start(struct spanq *q, unsigned int m)
{
	const struct scan_spec *sp = &q->c->spec;
	const struct spanq_index *ix = NULL;
	size_t from = 0;

	/* First: building reads the member through this queue. */
	if (!q->build && q->ops->save && (sp->has_lo || sp->has_hi) &&
	    !(ix = index_get(q, m)))
		return -1;
	/* Not one row of the table in the member: nothing to read. */
	if (ix && !ix->ck.fed)
		return 0;
	q->member = m;
	q->stop = 0;
	q->last = INT64_MIN;
	q->rd = *sp;			/* shallow: its sets are the cursor's */
	q->rd.has_begin = q->rd.has_end = false;
	q->rd.limit = -1;
	if (ix) {
		const struct spanq_ckpt *k;

		ckpts_window(&ix->ck, sp->has_lo, sp->lo, sp->has_hi, sp->hi, &from, &q->stop);
		k = ckpts_at(&ix->ck, from);
		if (k->state)
			q->ops->restore(q->c, k->state, k->size);
		q->ix = ix;
		if (from) {
			q->rd.has_begin = true;
			q->rd.begin = k->ts;
		}
		if (q->stop) {
			q->rd.has_end = true;
			q->rd.end = ckpts_ts(&ix->ck, q->stop) - 1;
		}
	}
	memset(q->rd_members, 0, q->c->db->ts->nr * sizeof(*q->rd_members));
	q->rd_members[m] = true;
	q->rd.members = q->rd_members;
	q->rd.members_set = true;
	/* The index is every thread's: SCAN_RUNS only for the cursor's own read. */
	q->scan = scan_open_spec(q->c, q->build ? q->what & ~(SCAN_RUNS | SCAN_NAMED) : q->what,
				 &q->rd);
	return 0;
}

/*
 * The member's rows are over: the table queues what is still open, or,
 * when the read stopped at a checkpoint, the rows open there are the
 * index's (the table's state, then, is dropped: the next member starts
 * from nothing).
 */
static void member_finish(struct spanq *q)
{
	scan_close(q->scan);
	q->scan = NULL;
	if (!q->stop) {
		q->ops->member_end(q->c);
		if (q->build)
			index_drain(q, INT64_MAX);
		return;
	}
	for (size_t i = 0; i < q->ix->nr_longs; i++) {
		const struct spanq_long *l = &q->ix->longs[i];
		const char *row = q->ix->rows + l->row;
		int64_t at = ckpts_ts(&q->ix->ck, q->stop);

		if (q->ops->row_ts(row) < at && l->given >= at)
			spanq_push(q, row);
	}
	/* What the table holds open is the index's rows' state: let it go. */
	{
		size_t keep = q->nr;

		q->ops->member_end(q->c);
		q->nr = keep;
	}
}

/* One row of the member fed (or its end): 0, -1 (c->err). */
static int member_row(struct spanq *q)
{
	struct spanq_index *ix = q->build;
	struct scan_row r;
	int rc = scan_next(q->scan, &r);

	if (rc < 0)
		return -1;
	if (!rc) {
		member_finish(q);
		return 0;
	}
	/* A checkpoint before the first row of a new ts, every spacing rows. */
	if (ix && ckpts_due(&ix->ck, r.ts, q->last))
		ckpts_take(&ix->ck, r.ts, ckpt_fill, q);
	q->last = r.ts;
	q->ops->feed(q->c, &r);
	if (ix)
		index_drain(q, r.ts);
	return 0;
}

int spanq_next(struct spanq *q, const void **row)
{
	const struct scan_spec *sp = &q->c->spec;

	for (;;) {
		if (q->head < q->nr) {
			*row = q->rows + q->head++ * q->size;
			return 1;
		}
		q->head = q->nr = 0;
		if (q->done)
			return 0;
		if (q->fed)
			return SQL_WAIT;
		if (!q->scan) {
			while (q->next < q->c->db->ts->nr && sp->members_set &&
			       !sp->members[q->next])
				q->next++;
			if (q->next >= q->c->db->ts->nr || sp->empty) {
				q->done = true;
				continue;
			}
			if (member_start(q, q->next++) < 0)
				return -1;
			continue;
		}
		if (member_row(q) < 0)
			return -1;
	}
}

void spanq_free(struct spanq *q)
{
	scan_close(q->scan);
	free(q->rows);
	free(q->rd_members);
	*q = (struct spanq){ 0 };
}

/* ---- fed by a share (ship) ------------------------------------------------------------- */

static void fed_start(void *arg, unsigned int m, struct scan *s)
{
	struct spanq *q = arg;

	(void)s;
	q->member = m;
	q->last = INT64_MIN;
}

static void fed_row(void *arg, const struct scan_row *r)
{
	struct spanq *q = arg;

	q->last = r->ts;
	q->ops->feed(q->c, r);
}

/* As member_finish(): the table queues the rows the member left open. */
static void fed_end(void *arg)
{
	struct spanq *q = arg;

	q->ops->member_end(q->c);
}

static void fed_done(void *arg)
{
	((struct spanq *)arg)->done = true;
}

static bool fed_ready(void *arg)
{
	const struct spanq *q = arg;

	return q->head < q->nr;
}

void spanq_reader(struct spanq *q, struct share_reader *r)
{
	q->fed = true;
	*r = (struct share_reader){
		.c = q->c, .what = q->what, .arg = q,
		.start = fed_start, .feed = fed_row, .end = fed_end, .done = fed_done,
		.ready = fed_ready,
	};
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
