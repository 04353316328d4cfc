// SPDX-License-Identifier: GPL-2.0
/*
 * Run lists: for `utid = X` (raw), the stretches of each CPU where an
 * event there can belong to X, so that a cursor reads on each CPU only
 * the frames from X's first stretch there to its last.
 *
 * Who an event belongs to is raw's utid column: rt_threads_owner() in a
 * full pass.  On a CPU that is the thread current there, which changes
 * only at the items rt_threads reads (sched_switch's next_tid, the state
 * dump's CPU fill, a loss forgetting it); before the CPU said, a switch's
 * prev_tid or a dump's tid owns that one event.  So one pass with only
 * those events decoded sees every change: the thread current from item A
 * on owns the CPU's events in [A, B], B the next item that changes it
 * (B itself included: a switch is its prev's), and the last one's
 * stretch runs to the clock's end.  The sample table gives a cpu_sample
 * its own tid and a sched_switch its prev_tid, whoever owns them (the
 * two differ after a loss, or where a switch is missing): such an event
 * is noted for that thread too, a stretch of its own instant.
 *
 * Kept per (tid, CPU): the first stretch's begin and the last's end
 * (cycles).  A window of those bounds is exact however often X came and
 * went between: the cursor follows threads as a full pass does
 * (rt_threads_learn_window()) and SQLite drops the rows of the other
 * owners (the utid term is not omitted); one window per CPU keeps the
 * merge and the threads' table as they are for any window.  What it costs:
 * a thread that ran early and late on one CPU reads its middle too.
 *
 * The same pass keeps, per thread, where the scheduler's events name it:
 * a sched_switch as prev_tid or next_tid, a sched_waking, sched_wakeup
 * or sched_wakeup_new as tid, and on which CPU.  Every span of X in
 * sched_slice and thread_state begins at such an event (schedwalk.c), so
 * a span walk for `utid = X` reads only the stretches between
 * checkpoints that hold one (runidx_named()).  Kept coarse: the member's
 * items cut into between RUN_BUCKETS and twice that buckets, evenly
 * spaced in items (each bucket's first ns kept), and per thread and CPU
 * the buckets it is named in there, in order.
 */
#include <stdlib.h>
#include <string.h>

#include "runidx.h"
#include "sqlcache.h"

struct run {
	int32_t tid;			/* -1: a free slot */
	uint32_t cpu;
	uint64_t from, to;		/* cycles */
};

/* The buckets a thread is named in on a CPU (ascending). */
struct named {
	int32_t tid;			/* -1: a free slot */
	uint32_t cpu;			/* the event's */
	uint32_t *b;
	size_t n, cap;
};

/* Buckets kept: between RUN_BUCKETS and twice that. */
#define RUN_BUCKETS	512

struct run_index {
	struct run *slot;		/* open addressing by (tid, cpu) */
	size_t cap, n;			/* cap a power of two */
	struct named *named;		/* open addressing by (tid, cpu) */
	size_t named_cap, named_n;
	int64_t *bound;			/* bucket k from ns bound[k]; bound[0] INT64_MIN */
	size_t nr_bound, cap_bound;
	uint64_t spacing, items, at;	/* items between two bounds; read; at the last */
	int64_t last;			/* ns of the last item */
};

/* What the pass knows of one CPU. */
struct cpu_run {
	int32_t tid;			/* current: -1 unknown */
	uint64_t since;
};

static size_t run_hash(int32_t tid, uint32_t cpu)
{
	uint64_t k = (uint64_t)(uint32_t)tid << 32 | cpu;

	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

static struct run *run_find(const struct run_index *ix, int32_t tid, uint32_t cpu)
{
	for (size_t i = run_hash(tid, cpu) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		struct run *r = &ix->slot[i];

		if (r->tid < 0 || (r->tid == tid && r->cpu == cpu))
			return r;
	}
}

/* @tid may own CPU @cpu's events in [@from, @to]. */
static void run_note(struct run_index *ix, int32_t tid, uint32_t cpu,
		     uint64_t from, uint64_t to)
{
	struct run *r;

	if (2 * (ix->n + 1) > ix->cap) {
		struct run_index g = { .cap = ix->cap ? 2 * ix->cap : 64 };

		g.slot = malloc(g.cap * sizeof(*g.slot));
		if (!g.slot)
			die("out of memory");
		for (size_t i = 0; i < g.cap; i++)
			g.slot[i].tid = -1;
		for (size_t i = 0; i < ix->cap; i++)
			if (ix->slot[i].tid >= 0)
				*run_find(&g, ix->slot[i].tid, ix->slot[i].cpu) = ix->slot[i];
		free(ix->slot);
		ix->slot = g.slot;
		ix->cap = g.cap;
	}
	r = run_find(ix, tid, cpu);
	if (r->tid < 0) {
		*r = (struct run){ .tid = tid, .cpu = cpu, .from = from, .to = to };
		ix->n++;
		return;
	}
	if (from < r->from)
		r->from = from;
	if (to > r->to)
		r->to = to;
}

static struct named *named_find(const struct run_index *ix, int32_t tid, uint32_t cpu)
{
	for (size_t i = run_hash(tid, cpu) & (ix->named_cap - 1);;
	     i = (i + 1) & (ix->named_cap - 1)) {
		struct named *x = &ix->named[i];

		if (x->tid < 0 || (x->tid == tid && x->cpu == cpu))
			return x;
	}
}

/* @tid is named on CPU @cpu in bucket @k (no earlier one than its last). */
static void named_put(struct run_index *ix, int32_t tid, uint32_t cpu, uint32_t k)
{
	struct named *x;

	if (2 * (ix->named_n + 1) > ix->named_cap) {
		struct run_index g = { .named_cap = ix->named_cap ? 2 * ix->named_cap : 64 };

		g.named = malloc(g.named_cap * sizeof(*g.named));
		if (!g.named)
			die("out of memory");
		for (size_t i = 0; i < g.named_cap; i++)
			g.named[i].tid = -1;
		for (size_t i = 0; i < ix->named_cap; i++)
			if (ix->named[i].tid >= 0)
				*named_find(&g, ix->named[i].tid, ix->named[i].cpu) = ix->named[i];
		free(ix->named);
		ix->named = g.named;
		ix->named_cap = g.named_cap;
	}
	x = named_find(ix, tid, cpu);
	if (x->tid < 0) {
		*x = (struct named){ .tid = tid, .cpu = cpu };
		ix->named_n++;
	}
	if (x->n && x->b[x->n - 1] == k)
		return;
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 4;
		x->b = reallocarray(x->b, x->cap, sizeof(*x->b));
		if (!x->b)
			die("out of memory");
	}
	x->b[x->n++] = k;
}

/* @tid is named on CPU @cpu in the current bucket. */
static void named_note(struct run_index *ix, int32_t tid, uint32_t cpu)
{
	if (tid >= 0)
		named_put(ix, tid, cpu, (uint32_t)(ix->nr_bound - 1));
}

/*
 * An item at @ns: a new bucket begins before it every spacing items (not
 * between two items of one ns); too many, and every two become one.
 */
static void bucket_item(struct run_index *ix, int64_t ns)
{
	if (++ix->items - ix->at <= ix->spacing || ns <= ix->last) {
		ix->last = ns > ix->last ? ns : ix->last;
		return;
	}
	ix->at = ix->items;
	ix->last = ns;
	if (ix->nr_bound == ix->cap_bound) {
		ix->cap_bound = 2 * ix->cap_bound;
		ix->bound = reallocarray(ix->bound, ix->cap_bound, sizeof(*ix->bound));
		if (!ix->bound)
			die("out of memory");
	}
	ix->bound[ix->nr_bound++] = ns;
	if (ix->nr_bound <= 2 * RUN_BUCKETS)
		return;
	for (size_t i = 0; 2 * i < ix->nr_bound; i++)
		ix->bound[i] = ix->bound[2 * i];
	ix->nr_bound = (ix->nr_bound + 1) / 2;
	ix->spacing *= 2;
	for (size_t i = 0; i < ix->named_cap; i++) {
		struct named *x = &ix->named[i];
		size_t n = 0;

		if (x->tid < 0)
			continue;
		for (size_t j = 0; j < x->n; j++)
			if (!n || x->b[n - 1] != x->b[j] / 2)
				x->b[n++] = x->b[j] / 2;
		x->n = n;
	}
}

static bool is_wakeup(const struct rt_event_desc *ev)
{
	return !strcmp(ev->name, "sched_waking") || !strcmp(ev->name, "sched_wakeup") ||
	       !strcmp(ev->name, "sched_wakeup_new");
}

static bool want_threads(void *arg, const struct rt_event_desc *ev)
{
	return rt_threads_reads(arg, ev) || is_wakeup(ev) || !strcmp(ev->name, "cpu_sample");
}

static int32_t tid_field(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);
	int64_t x = v ? rt_field_s64(v, 0) : -1;

	return x < 0 || x > INT32_MAX ? -1 : (int32_t)x;
}

/* The thread a sample row gives @it besides its owner (t_sample.c): -1 none. */
static int32_t own_tid(const struct rt_item *it)
{
	if (it->type != RT_ITEM_EVENT)
		return -1;
	if (!strcmp(it->event->name, "cpu_sample"))
		return tid_field(it, "tid");
	if (!strcmp(it->event->name, "sched_switch"))
		return tid_field(it, "prev_tid");
	return -1;
}

/* The threads @it names (a switch's prev and next, a wakeup's wakee). */
static void named_item(struct run_index *ix, const struct rt_item *it)
{
	if (it->type != RT_ITEM_EVENT)
		return;
	if (!strcmp(it->event->name, "sched_switch")) {
		named_note(ix, tid_field(it, "prev_tid"), it->cpu);
		named_note(ix, tid_field(it, "next_tid"), it->cpu);
	} else if (is_wakeup(it->event)) {
		named_note(ix, tid_field(it, "tid"), it->cpu);
	}
}

/* The pass over member @m: the index, or NULL with c->err (sqlcache_family.build). */
static void *index_build(struct sql_cursor *c, unsigned int m, void *arg)
{
	struct sqldb *d = c->db;
	struct scan_stat *st = sqldb_stat(d, sqldb_stat_new(d, "run index"));
	struct run_index *ix = calloc(1, sizeof(*ix));
	struct cpu_run *cpu = calloc(RT_MAX_CPUS, sizeof(*cpu));
	const struct rt_item *it;
	struct rt_threads *th;
	struct tset_view *v;
	struct rt_trace *t;
	struct rt_error err;
	struct merge *mg;
	int r = 0;

	(void)arg;
	if (!ix || !cpu || !(th = rt_threads_new(d->ts->m[m].t->md)))
		die("out of memory");
	ix->cap_bound = 64;
	ix->bound = malloc(ix->cap_bound * sizeof(*ix->bound));
	if (!ix->bound)
		die("out of memory");
	ix->bound[ix->nr_bound++] = INT64_MIN;
	ix->spacing = 1;
	ix->last = INT64_MIN;
	for (unsigned int i = 0; i < RT_MAX_CPUS; i++)
		cpu[i].tid = -1;
	st->filters++;
	v = tset_view_open(d->ts, m, NULL, false, 0, UINT64_MAX, d->seek, &err);
	if (!v) {
		sql_error(c, "%s", err.msg);
		goto fail;
	}
	st->members++;
	t = tset_view_trace(v);
	for (unsigned int k = 0; k < t->nr_cpus; k++)
		if (rt_stream_set_wanted(t->cpus[k].stream, want_threads, th))
			die("out of memory");
	mg = merge_trace(t, true);
	while ((it = merge_next(mg))) {
		struct cpu_run *cr;
		int32_t o, x, now;

		if (it->type == RT_ITEM_PACKET)
			st->packets++;
		if ((it->type != RT_ITEM_EVENT && it->type != RT_ITEM_LOST) ||
		    it->cpu >= RT_MAX_CPUS)
			continue;
		st->events += it->type == RT_ITEM_EVENT;
		bucket_item(ix, sqldb_ns(d, m, it->timestamp));
		named_item(ix, it);
		cr = &cpu[it->cpu];
		/* Not the CPU's current: the item names its owner itself. */
		o = rt_threads_owner(th, it);
		if (o >= 0 && o != cr->tid)
			run_note(ix, o, it->cpu, it->timestamp, it->timestamp);
		x = own_tid(it);
		if (x >= 0 && x != o && x != cr->tid)
			run_note(ix, x, it->cpu, it->timestamp, it->timestamp);
		rt_threads_feed(th, it);
		now = rt_threads_current(th, it->cpu);
		if (now == cr->tid)
			continue;
		if (cr->tid >= 0)
			run_note(ix, cr->tid, it->cpu, cr->since, it->timestamp);
		cr->tid = now;
		cr->since = it->timestamp;
	}
	for (unsigned int k = 0; k < RT_MAX_CPUS; k++)
		if (cpu[k].tid >= 0)
			run_note(ix, cpu[k].tid, k, cpu[k].since, UINT64_MAX);
	for (unsigned int k = 0; k < t->nr_cpus; k++) {
		uint64_t frames, bytes;

		rt_stream_reads(t->cpus[k].stream, &frames, &bytes);
		st->frames += frames;
		st->bytes += bytes;
		st->cpus++;
	}
	sqldb_view_damage(d, m, t);
	if (merge_error(mg))
		r = sql_error(c, "%s", merge_error(mg));
	merge_close(mg);
	tset_view_close(v);
	if (r)
		goto fail;
	rt_threads_free(th);
	free(cpu);
	return ix;
fail:
	rt_threads_free(th);
	free(cpu);
	runidx_free(ix);
	return NULL;
}

/* ---- the lists on disk (sqlcache.h) ---------------------------------------------------- */

/* The records below, their version: a new one with any change to them. */
#define RUN_CACHE_LAYOUT	2	/* 2: runs hold samples' and switches' own tids */
#define RUN_CACHE_FAMILY	"runs"
/* Bytes of a run's record, and of a named list's head. */
#define RUN_REC_RUN	24
#define RUN_REC_NAMED	16

static void index_store(struct sqlcache_buf *b, const void *index, void *arg)
{
	const struct run_index *ix = index;

	(void)arg;
	sqlcache_put64(b, ix->n);
	for (size_t i = 0; i < ix->cap; i++) {
		const struct run *r = &ix->slot[i];

		if (r->tid < 0)
			continue;
		sqlcache_put32(b, (uint32_t)r->tid);
		sqlcache_put32(b, r->cpu);
		sqlcache_put64(b, r->from);
		sqlcache_put64(b, r->to);
	}
	sqlcache_put64(b, ix->nr_bound);
	for (size_t i = 0; i < ix->nr_bound; i++)
		sqlcache_put64(b, (uint64_t)ix->bound[i]);
	sqlcache_put64(b, ix->named_n);
	for (size_t i = 0; i < ix->named_cap; i++) {
		const struct named *x = &ix->named[i];

		if (x->tid < 0)
			continue;
		sqlcache_put32(b, (uint32_t)x->tid);
		sqlcache_put32(b, x->cpu);
		sqlcache_put64(b, x->n);
		for (size_t j = 0; j < x->n; j++)
			sqlcache_put32(b, x->b[j]);
	}
}

/*
 * Member @m's lists from payload @b (sqlcache_family.load).  Checked: tids
 * >= 0, a run's from <= to, each (tid, CPU) once, bounds ascending from
 * INT64_MIN, a thread's buckets ascending below their count.
 */
static void *index_load(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b,
			void *arg)
{
	struct run_index *ix;
	size_t n;

	(void)c;
	(void)m;
	(void)arg;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		die("out of memory");
	n = sqlcache_get_count(b, RUN_REC_RUN);
	for (size_t i = 0; !b->bad && i < n; i++) {
		struct run r;

		r.tid = (int32_t)sqlcache_get32(b);
		r.cpu = sqlcache_get32(b);
		r.from = sqlcache_get64(b);
		r.to = sqlcache_get64(b);
		if (r.tid < 0 || r.from > r.to) {
			b->bad = true;
			break;
		}
		run_note(ix, r.tid, r.cpu, r.from, r.to);
		if (ix->n != i + 1)		/* twice */
			b->bad = true;
	}
	ix->nr_bound = ix->cap_bound = b->bad ? 0 : sqlcache_get_count(b, 8);
	ix->bound = calloc(ix->cap_bound + 1, sizeof(*ix->bound));
	if (!ix->bound)
		die("out of memory");
	for (size_t i = 0; !b->bad && i < ix->nr_bound; i++) {
		ix->bound[i] = (int64_t)sqlcache_get64(b);
		if (i ? ix->bound[i] <= ix->bound[i - 1] : ix->bound[i] != INT64_MIN)
			b->bad = true;
	}
	if (!ix->nr_bound)
		b->bad = true;
	n = b->bad ? 0 : sqlcache_get_count(b, RUN_REC_NAMED);
	for (size_t i = 0; !b->bad && i < n; i++) {
		int32_t tid = (int32_t)sqlcache_get32(b);
		uint32_t cpu = sqlcache_get32(b);
		size_t k = sqlcache_get_count(b, 4);
		uint32_t last = 0;

		if (tid < 0 || b->bad) {
			b->bad = true;
			break;
		}
		for (size_t j = 0; !b->bad && j < k; j++) {
			uint32_t v = sqlcache_get32(b);

			if (v >= ix->nr_bound || (j && v <= last)) {
				b->bad = true;
				break;
			}
			named_put(ix, tid, cpu, v);
			last = v;
		}
		if (!b->bad && ix->named_n != i + 1)	/* none, or twice */
			b->bad = true;
	}
	return ix;
}

static void index_free(void *ix)
{
	runidx_free(ix);
}

static const struct sqlcache_family run_family = {
	.stat = "run index", .layout = RUN_CACHE_LAYOUT,
	.load = index_load, .store = index_store, .build = index_build, .free = index_free,
};

/*
 * Member @m's lists, on first need: from the cache (scan_stats' row "run
 * index", plan "cache", reads no frame), else built and kept there.
 */
const struct run_index *runidx_get(struct sql_cursor *c, unsigned int m)
{
	struct sqldb *d = c->db;

	if (!d->run_idx) {
		d->run_idx = calloc(d->ts->nr + 1, sizeof(*d->run_idx));
		if (!d->run_idx)
			die("out of memory");
	}
	if (!d->run_idx[m])
		d->run_idx[m] = sqlcache_index(c, m, RUN_CACHE_FAMILY, &run_family, NULL);
	return d->run_idx[m];
}

bool runidx_span(const struct run_index *ix, int32_t tid, uint32_t cpu,
		 uint64_t *from, uint64_t *to)
{
	const struct run *r;

	if (tid < 0 || !ix->cap)
		return false;
	r = run_find(ix, tid, cpu);
	if (r->tid < 0)
		return false;
	*from = r->from;
	*to = r->to;
	return true;
}

bool runidx_named(const struct run_index *ix, int32_t tid, uint32_t cpu,
		  int64_t from, int64_t to)
{
	const struct named *x;

	if (tid < 0 || !ix->named_cap)
		return false;
	x = named_find(ix, tid, cpu);
	for (size_t i = 0; x->tid >= 0 && i < x->n; i++) {
		size_t k = x->b[i];
		int64_t end = k + 1 < ix->nr_bound ? ix->bound[k + 1] : INT64_MAX;

		if (ix->bound[k] < to && end > from)
			return true;
	}
	return false;
}

bool runidx_named_span(const struct run_index *ix, int32_t tid, uint32_t cpu,
		       int64_t *from, int64_t *to)
{
	const struct named *x;
	size_t k;

	if (tid < 0 || !ix->named_cap)
		return false;
	x = named_find(ix, tid, cpu);
	if (x->tid < 0 || !x->n)
		return false;
	k = x->b[x->n - 1];
	*from = ix->bound[x->b[0]];
	*to = k + 1 < ix->nr_bound ? ix->bound[k + 1] : INT64_MAX;
	return true;
}

/*
 * Whether [@first, @last] (cycles) is under half the time the member's
 * runs cover: a window reads from the span tables' checkpoints, which the
 * run's first window builds by a pass over the whole member; a window
 * longer than that would cost more than the whole read.
 */
static bool runs_narrow(const struct run_index *ix, uint64_t first, uint64_t last)
{
	uint64_t a = UINT64_MAX, z = 0;

	for (size_t i = 0; i < ix->cap; i++) {
		const struct run *r = &ix->slot[i];

		if (r->tid < 0)
			continue;
		a = r->from < a ? r->from : a;
		/* A run to the clock's end: the member's last item is its own end. */
		if (r->to != UINT64_MAX && r->to > z)
			z = r->to;
		if (r->from > z)
			z = r->from;
	}
	if (last == UINT64_MAX)
		last = z;
	return z > a && last - first < (z - a) / 2;
}

int runidx_waker_window(struct sql_cursor *c)
{
	struct scan_spec *sp = &c->spec;
	uint64_t m = (uint64_t)sp->waker >> 32, first = UINT64_MAX, last = 0;
	int32_t tid = (int32_t)(sp->waker & 0x7fffffff);
	const struct run_index *ix;
	const struct rt_trace *t;
	int64_t lo, hi;

	if (!sp->waker_set || sp->empty)
		return 0;
	/* A utid no thread has: its trace was not asked for already. */
	if (sp->waker < 0 || m >= c->db->ts->nr || sp->waker & 0x80000000) {
		sp->empty = true;
		return 0;
	}
	ix = runidx_get(c, (unsigned int)m);
	if (!ix)
		return -1;
	t = c->db->ts->m[m].t;
	for (unsigned int k = 0; k < t->nr_cpus; k++) {
		uint64_t from, to;

		if (!runidx_span(ix, tid, t->cpus[k].cpu, &from, &to))
			continue;
		first = from < first ? from : first;
		last = to > last ? to : last;
	}
	if (first > last) {
		sp->empty = true;
		return 0;
	}
	if (!runs_narrow(ix, first, last))
		return 0;
	lo = sqldb_ns(c->db, (unsigned int)m, first);
	if (!sp->has_lo || lo > sp->lo) {
		sp->has_lo = true;
		sp->lo = lo;
	}
	/* A run to the clock's end: no upper bound. */
	if (last == UINT64_MAX)
		return 0;
	hi = sqldb_ns(c->db, (unsigned int)m, last);
	if (!sp->has_hi || hi < sp->hi) {
		sp->has_hi = true;
		sp->hi = hi;
	}
	return 0;
}

void runidx_free(struct run_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->named_cap; i++)
		if (ix->named[i].tid >= 0)
			free(ix->named[i].b);
	free(ix->named);
	free(ix->bound);
	free(ix->slot);
	free(ix);
}
