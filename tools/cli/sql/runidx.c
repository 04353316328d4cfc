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
 * stretch runs to the clock's end.
 *
 * Kept per (tid, CPU): the first stretch's begin and the last's end
 * (cycles).  A window of those bounds is exact however often X came and
 * went between: the cursor follows threads as a full pass does
 * (rt_threads_learn_window()) and SQLite drops the rows of the other
 * owners (the utid term is not omitted); one window per CPU keeps the
 * merge and the threads' table as they are for any window.  What it costs:
 * a thread that ran early and late on one CPU reads its middle too.
 */
#include <stdlib.h>

#include "runidx.h"

struct run {
	int32_t tid;			/* -1: a free slot */
	uint32_t cpu;
	uint64_t from, to;		/* cycles */
};

struct run_index {
	struct run *slot;		/* open addressing by (tid, cpu) */
	size_t cap, n;			/* cap a power of two */
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

static bool want_threads(void *arg, const struct rt_event_desc *ev)
{
	return rt_threads_reads(arg, ev);
}

/* The pass over member @m: the index, or NULL with c->err. */
static struct run_index *index_build(struct sql_cursor *c, unsigned int m)
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

	if (!ix || !cpu || !(th = rt_threads_new(d->ts->m[m].t->md)))
		die("out of memory");
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
		int32_t o, now;

		if (it->type == RT_ITEM_PACKET)
			st->packets++;
		if ((it->type != RT_ITEM_EVENT && it->type != RT_ITEM_LOST) ||
		    it->cpu >= RT_MAX_CPUS)
			continue;
		st->events += it->type == RT_ITEM_EVENT;
		cr = &cpu[it->cpu];
		/* Not the CPU's current: the item names its owner itself. */
		o = rt_threads_owner(th, it);
		if (o >= 0 && o != cr->tid)
			run_note(ix, o, it->cpu, it->timestamp, it->timestamp);
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

const struct run_index *runidx_get(struct sql_cursor *c, unsigned int m)
{
	struct sqldb *d = c->db;

	if (!d->run_idx) {
		d->run_idx = calloc(d->ts->nr + 1, sizeof(*d->run_idx));
		if (!d->run_idx)
			die("out of memory");
	}
	if (!d->run_idx[m])
		d->run_idx[m] = index_build(c, m);
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

void runidx_free(struct run_index *ix)
{
	if (!ix)
		return;
	free(ix->slot);
	free(ix);
}
