// SPDX-License-Identifier: GPL-2.0
/*
 * threadidx (threadidx.h): a scan of the cursor's members that decodes
 * the events threads learn from (rt_threads_reads()) and the process
 * events (fork, exec, exit, free), the rest only read past -- or, when no
 * time is asked for, no item at all: what the frames say of threads
 * (spec.threads_only: packed chunks' thread tables); at each member's
 * end (SCAN_MEMBER_END) its threads and processes become two arrays
 * sorted by id.
 */
#include <stdlib.h>
#include <string.h>

#include "threadidx.h"

/* Fork, exit and exec of a tid, as the events said. */
struct tidx_fact {
	int32_t tid;			/* first: the tidmap's key */
	int64_t start, exit, free;
	char *exec;			/* the last exec's file name, made leader tid */
};

struct tidx_scan {
	struct sql_cursor *c;
	struct scan *scan;
	struct rt_tidmap facts;		/* struct tidx_fact by tid */
	struct threadidx idx;
};

static const char *const events[] = {
	"sched_process_fork", "sched_process_exec", "sched_process_exit",
	"sched_process_free",
};

static void idx_free(struct threadidx *x)
{
	for (size_t i = 0; i < x->nr_threads; i++)
		free(x->threads[i].name);
	for (size_t i = 0; i < x->nr_procs; i++) {
		free(x->procs[i].name);
		free(x->procs[i].cmdline);
	}
	free(x->threads);
	free(x->procs);
	memset(x, 0, sizeof(*x));
}

static void facts_free(struct tidx_scan *s)
{
	for (size_t i = 0; i < s->facts.cap; i++) {
		struct tidx_fact *f = rt_tidmap_slot(&s->facts, i);

		if (f)
			free(f->exec);
	}
	rt_tidmap_free(&s->facts);
	rt_tidmap_init(&s->facts, sizeof(struct tidx_fact));
}

struct tidx_scan *tidx_open(struct sql_cursor *c, bool times)
{
	struct tidx_scan *s = calloc(1, sizeof(*s));
	struct scan_spec *sp = &c->spec;

	if (!s)
		die("out of memory");
	s->c = c;
	rt_tidmap_init(&s->facts, sizeof(struct tidx_fact));
	/* No column of these tables names events: the spec's names are ours. */
	sp->names = calloc(ARRAY_SIZE(events), sizeof(*sp->names));
	if (!sp->names)
		die("out of memory");
	for (unsigned int i = 0; i < ARRAY_SIZE(events); i++)
		if (!(sp->names[i] = strdup(events[i])))
			die("out of memory");
	sp->nr_names = ARRAY_SIZE(events);
	sp->names_set = true;
	/* No times asked: no item read, the members' threads learnt. */
	if (!times) {
		/* Items read anyway (not seeking, frames without tables): not rows. */
		sp->threads_only = sp->has_begin = true;
		sp->begin = INT64_MAX;
	}
	s->scan = scan_open(c, SCAN_EVENTS | SCAN_THREADS | SCAN_MEMBER_END);
	return s;
}

void tidx_close(struct tidx_scan *s)
{
	if (!s)
		return;
	scan_close(s->scan);
	facts_free(s);
	rt_tidmap_free(&s->facts);
	idx_free(&s->idx);
	free(s);
}

static int64_t field(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : -1;
}

static struct tidx_fact *fact(struct tidx_scan *s, int64_t tid)
{
	struct tidx_fact *f;
	bool created;

	if (tid < 0 || tid > INT32_MAX)
		return NULL;
	f = rt_tidmap_get(&s->facts, (int32_t)tid, &created);
	if (!f)
		die("out of memory");
	if (created)
		f->start = f->exit = f->free = TIDX_NONE;
	return f;
}

static void learn(struct tidx_scan *s, const struct scan_row *row)
{
	const struct rt_item *it = row->it;
	const char *name = it->event->name;
	struct tidx_fact *f;

	if (!strcmp(name, "sched_process_fork")) {
		if ((f = fact(s, field(it, "child_tid"))))
			f->start = row->ts;
	} else if (!strcmp(name, "sched_process_exit")) {
		if ((f = fact(s, field(it, "tid"))))
			f->exit = row->ts;
	} else if (!strcmp(name, "sched_process_free")) {
		if ((f = fact(s, field(it, "tid"))))
			f->free = row->ts;
	} else if (!strcmp(name, "sched_process_exec")) {
		const struct rt_field_value *v = rt_item_field(it, "filename", RT_USE_TEXT);

		if (v && (f = fact(s, field(it, "tid")))) {
			free(f->exec);
			f->exec = strndup((const char *)v->data, v->count);
			if (!f->exec)
				die("out of memory");
		}
	}
}

static char *dup_or_null(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		die("out of memory");
	return d;
}

static int cmp_thread(const void *a, const void *b)
{
	int32_t x = ((const struct tidx_thread *)a)->tid;
	int32_t y = ((const struct tidx_thread *)b)->tid;

	return (x > y) - (x < y);
}

static int cmp_proc(const void *a, const void *b)
{
	int32_t x = ((const struct tidx_process *)a)->pid;
	int32_t y = ((const struct tidx_process *)b)->pid;

	return (x > y) - (x < y);
}

/* The member's end: its threads and processes as rt_threads knows them now. */
static void build(struct tidx_scan *s, unsigned int member)
{
	const struct rt_threads *th = scan_threads(s->scan);
	struct threadidx *x = &s->idx;
	struct rt_tidmap pids;
	size_t pos = 0, cap = 16, pcap = 16;
	int32_t tid;

	idx_free(x);
	x->member = member;
	x->threads = malloc(cap * sizeof(*x->threads));
	x->procs = malloc(pcap * sizeof(*x->procs));
	if (!x->threads || !x->procs)
		die("out of memory");
	/* The idle task: one thread of every CPU, pid 0. */
	x->threads[x->nr_threads++] = (struct tidx_thread){
		.tid = 0, .pid = 0, .name = dup_or_null("swapper"),
		.start = TIDX_NONE, .end = TIDX_NONE,
	};
	rt_tidmap_init(&pids, sizeof(int32_t));
	while (th && (tid = rt_threads_next(th, &pos)) >= 0) {
		const struct tidx_fact *f = rt_tidmap_find(&s->facts, tid);
		struct tidx_thread *t;

		if (x->nr_threads == cap) {
			cap *= 2;
			x->threads = realloc(x->threads, cap * sizeof(*x->threads));
			if (!x->threads)
				die("out of memory");
		}
		t = &x->threads[x->nr_threads++];
		t->tid = tid;
		t->pid = rt_threads_pid(th, tid);
		t->name = dup_or_null(rt_threads_comm(th, tid, 0));
		t->start = f ? f->start : TIDX_NONE;
		t->end = !f ? TIDX_NONE : f->exit != TIDX_NONE ? f->exit : f->free;
		t->cgroup = rt_threads_cgroup(th, tid);
	}
	qsort(x->threads, x->nr_threads, sizeof(*x->threads), cmp_thread);
	for (size_t i = 0; i < x->nr_threads; i++) {
		int32_t pid = x->threads[i].pid;
		const struct tidx_thread *lead = NULL;
		const struct tidx_fact *f;
		struct tidx_process *p;
		bool created;

		if (pid < 0)
			continue;
		if (!rt_tidmap_get(&pids, pid, &created))
			die("out of memory");
		if (!created)
			continue;
		if (x->nr_procs == pcap) {
			pcap *= 2;
			x->procs = realloc(x->procs, pcap * sizeof(*x->procs));
			if (!x->procs)
				die("out of memory");
		}
		lead = bsearch(&(struct tidx_thread){ .tid = pid }, x->threads, x->nr_threads,
			       sizeof(*x->threads), cmp_thread);
		f = rt_tidmap_find(&s->facts, pid);
		p = &x->procs[x->nr_procs++];
		p->pid = pid;
		p->ppid = pid ? rt_threads_ppid(th, pid) : -1;
		p->name = dup_or_null(lead ? lead->name : NULL);
		p->cmdline = dup_or_null(f ? f->exec : NULL);
		p->start = lead ? lead->start : TIDX_NONE;
		p->end = lead ? lead->end : TIDX_NONE;
		p->cgroup = lead ? lead->cgroup : 0;
	}
	rt_tidmap_free(&pids);
	qsort(x->procs, x->nr_procs, sizeof(*x->procs), cmp_proc);
	facts_free(s);
}

int tidx_next(struct tidx_scan *s, const struct threadidx **out)
{
	struct scan_row row;
	int r;

	while ((r = scan_next(s->scan, &row)) > 0) {
		if (row.it && row.it->type == RT_ITEM_EVENT) {
			learn(s, &row);
		} else if (!row.it && !row.gap) {
			build(s, row.member);
			*out = &s->idx;
			return 1;
		}
	}
	return r;
}
