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

#include "spanq.h"
#include "threadidx.h"

/* Fork, exit and exec of a tid, as the events said. */
struct tidx_fact {
	int32_t tid;			/* first: the tidmap's key */
	int64_t start, exit, free;
	char *exec;			/* the last exec's file name, made leader tid */
};

struct tidx_scan {
	struct sql_cursor *c;
	bool times;
	unsigned int member;		/* the next member to give */
	struct scan_spec rd;		/* the cursor's, one member at a time */
	bool *rd_members;
	struct scan *scan;		/* the member being read; NULL none */
	struct rt_tidmap facts;		/* struct tidx_fact by tid */
	/*
	 * Its tables are every cursor's (no CPU, window or thread asked
	 * for): kept in the database (sqldb.thread_idx) for the next ones,
	 * else @own, freed when the next member's are built.
	 */
	bool shared;
	struct threadidx *own;
	/*
	 * tidx_reader(): a share reads the members, @from its scan (whose
	 * threads build() reads); @ready the member's tables, built at its
	 * end, until tidx_next() gives them.
	 */
	bool fed, done;
	struct scan *from;
	struct threadidx *ready;
};

static const char *const events[] = {
	"sched_process_fork", "sched_process_exec", "sched_process_exit",
	"sched_process_free",
};

void threadidx_free(struct threadidx *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nr_threads; i++)
		free(x->threads[i].name);
	for (size_t i = 0; i < x->nr_procs; i++) {
		free(x->procs[i].name);
		free(x->procs[i].cmdline);
	}
	free(x->threads);
	free(x->procs);
	free(x);
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

	if (!s)
		die("out of memory");
	s->c = c;
	s->times = times;
	rt_tidmap_init(&s->facts, sizeof(struct tidx_fact));
	/* No column of these tables names events: the spec's names are ours. */
	sql_want_events(c, events, ARRAY_SIZE(events));
	/* No times asked: no item read, the members' threads learnt. */
	if (!times) {
		/* Items read anyway (not seeking, frames without tables): not rows. */
		c->spec.threads_only = c->spec.has_begin = true;
		c->spec.begin = INT64_MAX;
	}
	s->shared = !c->spec.cpus_set && !c->spec.utid_set && !c->spec.has_lo &&
		    !c->spec.has_hi && (!times || (!c->spec.has_begin && !c->spec.has_end));
	s->rd = c->spec;		/* shallow: its sets are the cursor's */
	s->rd.limit = -1;
	s->rd_members = calloc(c->db->ts->nr + 1, sizeof(*s->rd_members));
	if (!s->rd_members)
		die("out of memory");
	s->rd.members = s->rd_members;
	s->rd.members_set = true;
	return s;
}

void tidx_close(struct tidx_scan *s)
{
	if (!s)
		return;
	scan_close(s->scan);
	facts_free(s);
	rt_tidmap_free(&s->facts);
	free(s->rd_members);
	threadidx_free(s->own);
	free(s);
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
		if ((f = fact(s, sql_item_s64(it, "child_tid", -1))))
			f->start = row->ts;
	} else if (!strcmp(name, "sched_process_exit")) {
		if ((f = fact(s, sql_item_s64(it, "tid", -1))))
			f->exit = row->ts;
	} else if (!strcmp(name, "sched_process_free")) {
		if ((f = fact(s, sql_item_s64(it, "tid", -1))))
			f->free = row->ts;
	} else if (!strcmp(name, "sched_process_exec")) {
		const struct rt_field_value *v = rt_item_field(it, "filename", RT_USE_TEXT);

		if (v && (f = fact(s, sql_item_s64(it, "tid", -1)))) {
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
static struct threadidx *build(struct tidx_scan *s, unsigned int member)
{
	const struct rt_threads *th = scan_threads(s->fed ? s->from : s->scan);
	struct threadidx *x = calloc(1, sizeof(*x));
	struct rt_tidmap pids;
	size_t pos = 0, cap = 16, pcap = 16;
	int32_t tid;

	if (!x)
		die("out of memory");
	x->member = member;
	x->times = s->times;
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
	return x;
}

/*
 * Member @m's tables as another cursor of this database built them: with
 * the times if asked for (those without are what the frames said), or
 * NULL.
 */
static struct threadidx **kept(struct tidx_scan *s, unsigned int m, bool times)
{
	struct sqldb *d = s->c->db;

	if (!d->thread_idx &&
	    !(d->thread_idx = calloc(2 * (size_t)d->ts->nr + 1, sizeof(*d->thread_idx))))
		die("out of memory");
	return &d->thread_idx[2 * (size_t)m + times];
}

/* The member's end (@row: SCAN_MEMBER_END's): its tables built and kept. */
static struct threadidx *member_built(struct tidx_scan *s, const struct scan_row *row)
{
	struct threadidx *x = build(s, row->member);

	if (s->shared) {
		*kept(s, row->member, s->times) = x;
	} else {
		threadidx_free(s->own);
		s->own = x;
	}
	return x;
}

int tidx_next(struct tidx_scan *s, const struct threadidx **out)
{
	struct sql_cursor *c = s->c;
	struct scan_row row;
	int r;

	if (s->fed) {
		if (!s->ready)
			return s->done ? 0 : SQL_WAIT;
		*out = s->ready;
		s->ready = NULL;
		return 1;
	}
	for (;;) {
		unsigned int m;

		if (s->scan) {
			while ((r = scan_next(s->scan, &row)) > 0) {
				if (row.it && row.it->type == RT_ITEM_EVENT) {
					learn(s, &row);
				} else if (!row.it && !row.gap) {
					*out = member_built(s, &row);
					return 1;
				}
			}
			if (r < 0)
				return -1;
			scan_close(s->scan);
			s->scan = NULL;
			continue;
		}
		while (s->member < c->db->ts->nr && c->spec.members_set &&
		       !c->spec.members[s->member])
			s->member++;
		if (s->member >= c->db->ts->nr)
			return 0;
		m = s->member++;
		/* Times are more than what the frames said: either serves without. */
		if (s->shared && (*kept(s, m, true) || (!s->times && *kept(s, m, false)))) {
			*out = *kept(s, m, true) ? *kept(s, m, true) : *kept(s, m, false);
			return 1;
		}
		memset(s->rd_members, 0, c->db->ts->nr * sizeof(*s->rd_members));
		s->rd_members[m] = true;
		s->scan = scan_open_spec(c, SCAN_EVENTS | SCAN_THREADS | SCAN_MEMBER_END, &s->rd);
	}
}

/* ---- fed by a share (ship) ------------------------------------------------------------- */

static void fed_start(void *arg, unsigned int m, struct scan *sc)
{
	struct tidx_scan *s = arg;

	(void)m;
	s->from = sc;
}

static void fed_row(void *arg, const struct scan_row *row)
{
	struct tidx_scan *s = arg;

	if (row->it && row->it->type == RT_ITEM_EVENT)
		learn(s, row);
	else if (!row->it && !row->gap)
		s->ready = member_built(s, row);
}

static void fed_end(void *arg)
{
	((struct tidx_scan *)arg)->from = NULL;
}

static void fed_done(void *arg)
{
	((struct tidx_scan *)arg)->done = true;
}

static bool fed_ready(void *arg)
{
	return ((struct tidx_scan *)arg)->ready;
}

void tidx_reader(struct tidx_scan *s, struct share_reader *r)
{
	/* A share reads members whole: not the frames-only read without times. */
	if (!s->times || !s->shared)
		die("sql: the thread tables fed by a share without times or whole members");
	s->fed = true;
	*r = (struct share_reader){
		.c = s->c, .arg = s, .what = SCAN_EVENTS | SCAN_THREADS | SCAN_MEMBER_END,
		.start = fed_start, .feed = fed_row, .end = fed_end, .done = fed_done,
		.ready = fed_ready,
	};
}
