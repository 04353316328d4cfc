// SPDX-License-Identifier: GPL-2.0
/*
 * A cursor's reading (sql.h): the members its spec selects, one after
 * another, each through a view of its own (tset_view_open()) with only
 * the CPUs asked for and, for a ts range, a window that seeks with the
 * chunks' time indexes (unless RINGTRACE_SEEK=0); events of names not
 * asked for are never decoded (rt_stream_set_wanted()).  Items come in
 * time order within a member, merged over its CPUs; every item the spec
 * does not keep exactly (a window reads the packet before it) is dropped
 * here.  Trailers (kernel_stack, user_stack, stack_def...) are not
 * events of their own, as in report.
 *
 * The owner thread of an item (SCAN_THREADS) is report's: rt_threads fed
 * every item read, and what a window's frames before it say of threads.
 * SCAN_STACKS: each event's stack pair (stackrec.h) is a row of its own,
 * given before the item that completed it, named through the member's
 * symbols and the mappings the items before it told (umaps.h), as
 * report --stat counts them.  A window, or CPUs left out, read those
 * mappings through a second view, the prologue: every CPU's user_mmap,
 * sched_process_exec and fork events (nothing else decoded) before the
 * window's begin, and the CPUs left out's up to its end, fed in merge
 * order (time, then CPU) between the window's items; the window's own
 * items tell the rest.  A stack_ref names defs of its own packet, which
 * the window reads whole (the packet before it included).
 *
 * A member read whole for its stacks that gave no pair is noted
 * (sqldb.no_pairs): a scan that wants nothing but pairs does not read it
 * again; nor one whose whole reads (below) decoded every event a pair is
 * made of and found none (pairs_held(): after raw, sample and the stack
 * index of a trace without stacks cost no pass).
 *
 * Likewise a whole read notes which events it decoded and which of them
 * the member holds (sqldb.events_read): a scan whose rows are events of
 * names the member does not hold does not open it (after raw, ship's
 * irq, softirq and marker of a trace without them read nothing).
 *
 * SCAN_RUNS with the spec's utid (or in every member its tid): each CPU
 * read over its own window, from the thread's first run there to its
 * last (runidx.c), the CPUs it never ran on not opened; the threads are
 * followed there as in any window.  With SCAN_STACKS every CPU is read
 * up to the last window's end (runs_to_last(): a row's process is what
 * any CPU told of its thread), and the prologue reads every CPU's
 * mappings up to there but those the windows give.
 * SCAN_NAMED: the same from the first to the last scheduler event that
 * names it there.
 *
 * What each view read (frames, bytes, packets, events) is added to the
 * cursor's scan_stats row when it closes; its damage goes to the
 * database's list (sqldb_view_damage()).
 */
#include <stdlib.h>
#include <string.h>

#include "runidx.h"

struct scan {
	struct sql_cursor *c;
	const struct scan_spec *sp;	/* c->spec, or the caller's */
	struct sqldb *d;
	unsigned int what;
	unsigned int member;		/* the next member to open */
	unsigned int cur;		/* the member being read */
	struct tset_view *v;		/* NULL: none open */
	struct merge *m;
	struct rt_threads *th;
	struct stackrec *sr;		/* knows trailers by name */
	struct umaps *um;		/* SCAN_STACKS: the mappings */
	struct stack_names *names;	/* SCAN_STACKS: what names frames */
	const struct rt_item *held;	/* an item after the pair it completed */
	/* SCAN_STACKS with a window or CPUs: the mappings' prologue. */
	struct tset_view *pv;
	struct merge *pm;
	const struct rt_item *pnext;	/* its next item; NULL at its end */
	uint64_t pbegin;		/* the window's begin, cycles */
	/* A runs view's windows by CPU index (NULL: none): [run_b, run_e] if run_on. */
	bool *run_on;
	uint64_t *run_b, *run_e;
	int32_t pair_tid;		/* the last event's owner */
	int32_t pair_prev;		/* its prev_tid if a sched_switch, else -1 */
	const struct rt_event_desc *switch_ev;	/* the member's sched_switch */
	bool *want;			/* by event position: the spec's names */
	unsigned int gap;		/* the next gap of the member to give */
	bool items_done;		/* its items given; gaps left */
	bool whole;			/* the member is read whole: all CPUs, no window */
	bool paired;			/* SCAN_STACKS: a pair came of the member */
	struct scan_events *evs;	/* what this read decodes and finds */
	bool end_given;			/* SCAN_MEMBER_END: its end row given */
	uint64_t kept;			/* rows given (LIMIT) */
};

static bool want_event(void *arg, const struct rt_event_desc *ev)
{
	struct scan *s = arg;
	const struct rt_metadata *md = tset_view_trace(s->v)->md;

	/* Stacks: every event may carry some, trailers and mappings are read. */
	if (s->what & SCAN_STACKS)
		return true;
	if (!(s->what & SCAN_EVENTS))
		return s->th && rt_threads_reads(s->th, ev);
	return s->want[ev - md->events] || (s->th && rt_threads_reads(s->th, ev));
}

/* The prologue's events: what umaps_feed() reads. */
static bool want_mapping(void *arg, const struct rt_event_desc *ev)
{
	(void)arg;
	return !strcmp(ev->name, "user_mmap") || !strcmp(ev->name, "sched_process_exec") ||
	       !strcmp(ev->name, "sched_process_fork");
}

/* Adds what view @v read to the cursor's counters (@cpus: its streams counted). */
static void view_stats(struct scan *s, struct tset_view *v, bool cpus)
{
	struct scan_stat *st = sqldb_stat(s->d, s->c->stat);
	struct rt_trace *t = tset_view_trace(v);

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		uint64_t frames, bytes;

		if (!t->cpus[i].stream)
			continue;
		rt_stream_reads(t->cpus[i].stream, &frames, &bytes);
		st->frames += frames;
		st->bytes += bytes;
		st->cpus += cpus;
	}
	sqldb_view_damage(s->d, s->cur, t);
}

/* Adds what the open view read to the cursor's counters, and closes it. */
static void view_close(struct scan *s)
{
	if (!s->v)
		return;
	view_stats(s, s->v, true);
	if (s->pv) {
		view_stats(s, s->pv, false);
		merge_close(s->pm);
		s->pm = NULL;
		s->pnext = NULL;
		tset_view_close(s->pv);
		s->pv = NULL;
	}
	merge_close(s->m);
	s->m = NULL;
	rt_threads_free(s->th);
	s->th = NULL;
	stackrec_free(s->sr);
	s->sr = NULL;
	stack_names_free(s->names);
	s->names = NULL;
	umaps_free(s->um);
	s->um = NULL;
	s->held = NULL;
	free(s->want);
	s->want = NULL;
	free(s->evs);
	s->evs = NULL;
	free(s->run_on);
	free(s->run_b);
	free(s->run_e);
	s->run_on = NULL;
	s->run_b = s->run_e = NULL;
	tset_view_close(s->v);
	s->v = NULL;
}

/* Cycles of member @m that hold ns @ns: rounded down (@up: up). */
static uint64_t ns_to_cycles(const struct sqldb *d, const struct tset_member *m,
			     int64_t ns, bool up)
{
	__int128 rel = (__int128)ns - (d->wall ? m->wall_offset_ns : 0);
	uint64_t freq = m->t->md->clock_freq;
	__int128 c;

	if (rel < 0)
		return 0;
	c = (rel * freq + (up ? 999999999 : 0)) / 1000000000;
	return c > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

/*
 * SCAN_STACKS over [@begin, @end] (cycles) of member @i, or on some CPUs:
 * the mappings the window's user frames are named by come from the
 * prologue's view (0, or -1 with c->err).
 */
static int prologue_open(struct scan *s, unsigned int i, uint64_t begin, uint64_t end)
{
	struct rt_trace *t;
	struct rt_error err;

	/* The CPUs read whole see their own mappings from @begin on. */
	if (!s->sp->cpus_set && !s->run_on)
		end = begin - 1;
	s->pv = tset_view_open(s->d->ts, i, NULL, true, 0, end, s->d->seek, &err);
	if (!s->pv)
		return sql_error(s->c, "%s", err.msg);
	s->pbegin = begin;
	t = tset_view_trace(s->pv);
	for (unsigned int k = 0; k < t->nr_cpus; k++)
		if (rt_stream_set_wanted(t->cpus[k].stream, want_mapping, s))
			die("out of memory");
	s->pm = merge_trace(t, false);
	s->pnext = merge_next(s->pm);
	return 0;
}

/* Whether the window's own streams give @it (it is not the prologue's to feed). */
static bool window_gives(const struct scan *s, const struct rt_item *it)
{
	if (s->run_on) {
		int k = trace_cpu_index(s->d->ts->m[s->cur].t, it->cpu);

		return k >= 0 && s->run_on[k] && it->timestamp >= s->run_b[k] &&
		       it->timestamp <= s->run_e[k];
	}
	if (it->timestamp < s->pbegin)
		return false;
	if (!s->sp->cpus_set)
		return true;
	for (unsigned int k = 0; k < s->sp->nr_cpus; k++)
		if (s->sp->cpus[k] == it->cpu)
			return true;
	return false;
}

/*
 * The prologue's items that come before (@ts, @cpu) in merge order fed to
 * the mappings (those the window gives itself skipped): 0, or -1 (c->err).
 */
static int prologue_until(struct scan *s, uint64_t ts, uint32_t cpu)
{
	struct scan_stat *st = sqldb_stat(s->d, s->c->stat);

	while (s->pnext && (s->pnext->timestamp < ts ||
			    (s->pnext->timestamp == ts && s->pnext->cpu < cpu))) {
		if (s->pnext->type == RT_ITEM_EVENT) {
			st->events++;
			if (!window_gives(s, s->pnext) && umaps_feed(s->um, s->pnext))
				die("out of memory");
		}
		s->pnext = merge_next(s->pm);
	}
	if (merge_error(s->pm))
		return sql_error(s->c, "%s", merge_error(s->pm));
	return 0;
}

/*
 * The thread whose runs member @i's view reads (SCAN_RUNS, SCAN_NAMED):
 * the spec's utid's if it names @i, else the spec's tid; -1: none, the
 * member is read as any other.
 */
static int64_t runs_tid(const struct scan *s, unsigned int i)
{
	const struct scan_spec *sp = s->sp;

	if (!(s->what & (SCAN_RUNS | SCAN_NAMED)))
		return -1;
	if (sp->utid_set && (uint64_t)sp->utid >> 32 == i)
		return sp->utid & 0xffffffff;
	return sp->tid_set ? sp->tid : -1;
}

/*
 * SCAN_STACKS: a row's process (stack_pair_pid()) is what the threads'
 * table knows of its thread, which forks and state dumps of any CPU tell,
 * up to the row's time.  So every CPU (of @cpus, NULL: all) is read up to
 * the last window's end, those the thread never ran on as an empty
 * window there: what their frames before it tell of threads is learnt,
 * each fact at its time (rt_threads_learn_window()).
 */
static void runs_to_last(const struct tset_member *m, const bool *cpus, bool *on,
			 uint64_t *b, uint64_t *e)
{
	uint64_t last = 0;

	for (unsigned int k = 0; k < m->t->nr_cpus; k++)
		if (on[k] && e[k] > last)
			last = e[k];
	for (unsigned int k = 0; k < m->t->nr_cpus; k++) {
		if (cpus && !cpus[k])
			continue;
		if (!on[k])
			b[k] = last;
		on[k] = true;
		e[k] = last;
	}
}

/*
 * SCAN_RUNS: member @i's view of thread @tid, each CPU from the first to
 * the last run of the thread there within [@begin, @end], CPUs @cpus
 * (NULL: all) left out where it never ran: 1, 0 it ran on none, -1.
 * SCAN_NAMED: the same from the first to the last event naming it.  The
 * windows stay in s->run_* for the prologue (window_gives()).
 */
static int runs_view(struct scan *s, unsigned int i, int64_t tid, const bool *cpus,
		     uint64_t begin, uint64_t end)
{
	bool named = s->what & SCAN_NAMED;
	const struct tset_member *m = &s->d->ts->m[i];
	const struct run_index *ix = runidx_get(s->c, i);
	uint64_t *b, *e;
	struct rt_error err;
	bool *on, any = false;

	if (!ix)
		return -1;
	on = calloc(m->t->nr_cpus + 1, sizeof(*on));
	b = calloc(m->t->nr_cpus + 1, sizeof(*b));
	e = calloc(m->t->nr_cpus + 1, sizeof(*e));
	if (!on || !b || !e)
		die("out of memory");
	for (unsigned int k = 0; k < m->t->nr_cpus; k++) {
		uint64_t from, to;
		int64_t a, z;

		if ((cpus && !cpus[k]) || tid > INT32_MAX)
			continue;
		if (named) {
			if (!runidx_named_span(ix, tid, m->t->cpus[k].cpu, &a, &z))
				continue;
			from = ns_to_cycles(s->d, m, a, false);
			to = z == INT64_MAX ? UINT64_MAX : ns_to_cycles(s->d, m, z, true);
		} else if (!runidx_span(ix, tid, m->t->cpus[k].cpu, &from, &to)) {
			continue;
		}
		b[k] = from > begin ? from : begin;
		e[k] = to < end ? to : end;
		on[k] = b[k] <= e[k];
		any |= on[k];
	}
	if (any && (s->what & SCAN_STACKS))
		runs_to_last(m, cpus, on, b, e);
	if (any)
		s->v = tset_view_open_cpus(s->d->ts, i, on, b, e, s->d->seek, &err);
	if (!s->v) {
		free(on);
		free(b);
		free(e);
		return any ? sql_error(s->c, "%s", err.msg) : 0;
	}
	s->run_on = on;
	s->run_b = b;
	s->run_e = e;
	return 1;
}

/*
 * Whether member @i may hold a row of a scan whose rows are events (and
 * losses): not when whole reads decoded every event of the spec's names
 * and found none (nor a loss).
 */
static bool events_held(const struct scan *s, unsigned int i, const struct rt_metadata *md)
{
	const struct scan_events *x = s->d->events_read ? s->d->events_read[i] : NULL;

	if (!x || x->nr_events != md->nr_events || !(s->what & SCAN_EVENTS) ||
	    (s->what & ~(SCAN_EVENTS | SCAN_LOSSES | SCAN_THREADS | SCAN_RUNS | SCAN_NAMED)) ||
	    ((s->what & SCAN_LOSSES) && x->lost))
		return true;
	for (unsigned int e = 0; e < md->nr_events; e++)
		if (sql_spec_name(s->sp, md->events[e].name) &&
		    (!(x->flags[e] & SCAN_EV_DECODED) || (x->flags[e] & SCAN_EV_HELD)))
			return true;
	return false;
}

/*
 * Whether member @i may give a row of a scan whose rows are stack pairs
 * alone (sample, the stack index; any window, any thread's runs): not
 * when a read of all of it gave no pair (sqldb.no_pairs), nor when whole
 * reads decoded every event a pair is made of (stackrec_pair_event())
 * and found none -- raw's read tells that of a trace without stacks, so
 * ship's sample, stack and frame read nothing of it.
 */
static bool pairs_held(const struct scan *s, unsigned int i, const struct rt_metadata *md)
{
	const struct scan_events *x = s->d->events_read ? s->d->events_read[i] : NULL;

	if (!(s->what & SCAN_STACKS) ||
	    (s->what & ~(SCAN_STACKS | SCAN_THREADS | SCAN_RUNS | SCAN_NAMED)))
		return true;
	if (s->d->no_pairs && s->d->no_pairs[i])
		return false;
	if (!x || x->nr_events != md->nr_events)
		return true;
	for (unsigned int e = 0; e < md->nr_events; e++)
		if (stackrec_pair_event(md->events[e].name) &&
		    (!(x->flags[e] & SCAN_EV_DECODED) || (x->flags[e] & SCAN_EV_HELD)))
			return true;
	return false;
}

/* What the member's whole read decoded and found, added to the database's. */
static void events_note(struct scan *s)
{
	struct sqldb *d = s->d;
	struct scan_events **x;

	if (!d->events_read && !(d->events_read = calloc(d->ts->nr + 1, sizeof(*d->events_read))))
		die("out of memory");
	x = &d->events_read[s->cur];
	if (*x && (*x)->nr_events != s->evs->nr_events)
		return;
	if (!*x) {
		*x = s->evs;
		s->evs = NULL;
		return;
	}
	for (unsigned int e = 0; e < s->evs->nr_events; e++)
		(*x)->flags[e] |= s->evs->flags[e];
	(*x)->lost |= s->evs->lost;
}

/* Member @i's view, as the spec says: 1 opened, 0 nothing of it to read, -1. */
static int view_open(struct scan *s, unsigned int i)
{
	const struct scan_spec *sp = s->sp;
	struct tset_member *m = &s->d->ts->m[i];
	const struct rt_metadata *md = m->t->md;
	struct scan_stat *st = sqldb_stat(s->d, s->c->stat);
	uint64_t begin = 0, end = UINT64_MAX;
	bool *cpus = NULL, any = false;
	int64_t tid = runs_tid(s, i);
	struct rt_trace *t;
	struct rt_error err;

	if (!pairs_held(s, i, md))
		return 0;
	if (!events_held(s, i, md))
		return 0;
	if (sp->cpus_set) {
		cpus = calloc(m->t->nr_cpus + 1, sizeof(*cpus));
		if (!cpus)
			die("out of memory");
		for (unsigned int k = 0; k < sp->nr_cpus; k++) {
			int x = sp->cpus[k] >= 0 && sp->cpus[k] < RT_MAX_CPUS ?
				trace_cpu_index(m->t, (uint32_t)sp->cpus[k]) : -1;

			if (x >= 0)
				any = cpus[x] = true;
		}
		if (!any) {
			free(cpus);
			return 0;
		}
	}
	if (sp->has_begin)
		begin = ns_to_cycles(s->d, m, sp->begin, false);
	/* The last cycle whose ns is at most end: below (end + 1) ns. */
	if (sp->has_end && sp->end < INT64_MAX)
		end = ns_to_cycles(s->d, m, sp->end + 1, true);
	if (sp->threads_only)
		begin = end = UINT64_MAX;
	s->whole = false;
	if (tid >= 0) {
		int r = runs_view(s, i, tid, cpus, begin, end);

		free(cpus);
		if (r <= 0)
			return r;
		/* The prologue's mappings: every CPU's, to the last window's end. */
		end = 0;
		for (unsigned int k = 0; k < m->t->nr_cpus; k++)
			if (s->run_on[k] && s->run_e[k] > end)
				end = s->run_e[k];
	} else {
		s->whole = !cpus && !sp->has_begin && !sp->has_end && !sp->threads_only;
		s->v = tset_view_open(s->d->ts, i, cpus,
				      sp->has_begin || sp->has_end || sp->threads_only,
				      begin, end, s->d->seek, &err);
		free(cpus);
		if (!s->v)
			return sql_error(s->c, "%s", err.msg);
	}
	/* The run index's row may have moved the counters. */
	st = sqldb_stat(s->d, s->c->stat);
	s->cur = i;
	st->members++;
	t = tset_view_trace(s->v);
	s->sr = stackrec_new(md);
	s->want = calloc(md->nr_events + 1, sizeof(*s->want));
	if (!s->sr || !s->want)
		die("out of memory");
	if (s->what & SCAN_STACKS) {
		s->um = umaps_new(md);
		if (!s->um)
			die("out of memory");
		s->names = stack_names_new(m->t->dir, NULL, s->um);
		s->pair_tid = s->pair_prev = -1;
		s->switch_ev = NULL;
		for (unsigned int e = 0; e < md->nr_events; e++)
			if (!strcmp(md->events[e].name, "sched_switch"))
				s->switch_ev = &md->events[e];
	}
	for (unsigned int e = 0; e < md->nr_events; e++)
		s->want[e] = sql_spec_name(sp, md->events[e].name);
	if (s->what & SCAN_THREADS) {
		s->th = rt_threads_new(md);
		if (!s->th)
			die("out of memory");
	}
	s->evs = calloc(1, sizeof(*s->evs) + md->nr_events + 1);
	if (!s->evs)
		die("out of memory");
	s->evs->nr_events = md->nr_events;
	for (unsigned int e = 0; e < md->nr_events; e++)
		s->evs->flags[e] = want_event(s, &md->events[e]) ? SCAN_EV_DECODED : 0;
	for (unsigned int k = 0; k < t->nr_cpus; k++) {
		if (rt_stream_set_wanted(t->cpus[k].stream, want_event, s))
			die("out of memory");
		if (s->th && rt_threads_learn_window(s->th, t->cpus[k].stream, &err))
			return sql_error(s->c, "%s", err.msg);
	}
	s->m = merge_trace(t, true);
	if ((s->what & SCAN_STACKS) && (begin || sp->cpus_set || s->run_on) &&
	    prologue_open(s, i, begin, end))
		return -1;
	s->gap = 0;
	s->paired = false;
	s->items_done = false;
	s->end_given = false;
	return 1;
}

struct scan *scan_open_spec(struct sql_cursor *c, unsigned int what,
			    const struct scan_spec *sp)
{
	struct scan *s = calloc(1, sizeof(*s));

	if (!s)
		die("out of memory");
	s->c = c;
	s->sp = sp;
	s->d = c->db;
	/* A pair's process is its thread's: threads are followed. */
	s->what = what & SCAN_STACKS ? what | SCAN_THREADS : what;
	return s;
}

struct scan *scan_open(struct sql_cursor *c, unsigned int what)
{
	return scan_open_spec(c, what, &c->spec);
}

/* The member read gave no pair, read whole: noted for the next scans. */
static void no_pairs(struct scan *s)
{
	struct sqldb *d = s->d;

	if (!d->no_pairs && !(d->no_pairs = calloc(d->ts->nr + 1, sizeof(*d->no_pairs))))
		die("out of memory");
	d->no_pairs[s->cur] = true;
}

/* Gap @g of member @m as a row, if the spec keeps it. */
static bool gap_kept(struct scan *s, const struct tset_member *m,
		     const struct tset_gap *g, struct scan_row *row)
{
	const struct scan_spec *sp = s->sp;

	/* A gap is of no CPU: cpu = x never holds for it. */
	if (sp->cpus_set)
		return false;
	row->ts = g->leading ? 0 : sqldb_ns(s->d, s->cur, g->from);
	if (!sql_spec_ts(sp, row->ts))
		return false;
	row->member = s->cur;
	row->it = NULL;
	row->gap = g;
	row->tid = -1;
	(void)m;
	return true;
}

/* Pair @p of the member read as a row: 1, 0 the spec does not keep it, -1. */
static int pair_kept(struct scan *s, const struct stack_pair *p, struct scan_row *row)
{
	s->paired = true;
	row->ts = sqldb_ns(s->d, s->cur, p->timestamp);
	if (!sql_spec_ts(&s->c->spec, row->ts))
		return 0;
	/* The mappings as they were at the pair's event. */
	if (s->pm && prologue_until(s, p->timestamp, p->cpu))
		return -1;
	row->member = s->cur;
	row->it = NULL;
	row->gap = NULL;
	row->pair = p;
	/*
	 * A sample names its thread, a switch's stack is its prev's; any
	 * other event's is its owner's.  The process is report's (the
	 * owner's), as it names the user frames so.
	 */
	row->tid = p->tid >= 0 ? p->tid : s->pair_prev >= 0 ? s->pair_prev : s->pair_tid;
	row->pid = stack_pair_pid(p, s->th, s->pair_tid);
	s->kept++;
	return 1;
}

int scan_next(struct scan *s, struct scan_row *row)
{
	const struct scan_spec *sp = s->sp;
	struct scan_stat *st = sqldb_stat(s->d, s->c->stat);

	if (sp->empty || (sp->limit >= 0 && s->kept >= (uint64_t)sp->limit))
		return 0;
	for (;;) {
		const struct rt_item *it;
		const struct tset_member *m;
		int r;

		if (!s->v) {
			while (s->member < s->d->ts->nr &&
			       sp->members_set && !sp->members[s->member])
				s->member++;
			if (s->member >= s->d->ts->nr)
				return 0;
			r = view_open(s, s->member++);
			if (r < 0)
				return -1;
			/* The run index's row may have moved the counters. */
			st = sqldb_stat(s->d, s->c->stat);
			if (!r)
				continue;
		}
		m = &s->d->ts->m[s->cur];
		row->pair = NULL;
		if (s->items_done) {
			/* The member's missing chunk sets, after its items. */
			while ((s->what & SCAN_GAPS) && s->gap < m->nr_gaps) {
				if (gap_kept(s, m, &m->gaps[s->gap++], row)) {
					s->kept++;
					return 1;
				}
			}
			if ((s->what & SCAN_MEMBER_END) && !s->end_given) {
				s->end_given = true;
				/* A window past the items: what its frames said. */
				if (s->th)
					rt_threads_settle(s->th);
				memset(row, 0, sizeof(*row));
				row->member = s->cur;
				row->tid = -1;
				return 1;
			}
			view_close(s);
			continue;
		}
		it = s->held ? s->held : merge_next(s->m);
		if (!it) {
			const struct stack_pair *p;

			if (merge_error(s->m))
				return sql_error(s->c, "%s", merge_error(s->m));
			s->items_done = true;
			/* The last event's stacks: nothing comes after them. */
			p = s->um ? stackrec_flush(s->sr) : NULL;
			if (p && (r = pair_kept(s, p, row)))
				return r;
			if (s->um && s->whole && !s->paired)
				no_pairs(s);
			if (s->whole)
				events_note(s);
			continue;
		}
		if (s->um && !s->held) {
			const struct stack_pair *p = stackrec_feed(s->sr, it);

			/* Before @it is used: the pair it completed, then it. */
			if (p) {
				s->held = it;
				if ((r = pair_kept(s, p, row)))
					return r;
			}
		}
		s->held = NULL;
		if (it->type == RT_ITEM_PACKET) {
			st->packets++;
			continue;
		}
		if (it->type == RT_ITEM_EVENT) {
			st->events++;
			s->evs->flags[it->event - m->t->md->events] |= SCAN_EV_HELD;
		}
		row->tid = s->th ? rt_threads_owner(s->th, it) : -1;
		if (s->th)
			rt_threads_feed(s->th, it);
		if (s->um) {
			if (it->type == RT_ITEM_EVENT && !stackrec_is_trailer(s->sr, it)) {
				const struct rt_field_value *v = it->event == s->switch_ev ?
					rt_item_field(it, "prev_tid", RT_USE_INT) : NULL;

				s->pair_tid = row->tid;
				s->pair_prev = v ? (int32_t)rt_field_s64(v, 0) : -1;
			}
			if (s->pm && prologue_until(s, it->timestamp, it->cpu))
				return -1;
			if ((!s->pm || window_gives(s, it)) && umaps_feed(s->um, it))
				die("out of memory");
		}
		if (it->type == RT_ITEM_EVENT &&
		    (!(s->what & SCAN_EVENTS) || !s->want[it->event - m->t->md->events] ||
		     stackrec_is_trailer(s->sr, it)))
			continue;
		if (it->type == RT_ITEM_LOST)
			s->evs->lost = true;
		if (it->type == RT_ITEM_LOST && !(s->what & SCAN_LOSSES))
			continue;
		row->ts = sqldb_ns(s->d, s->cur, it->timestamp);
		if (!sql_spec_ts(sp, row->ts))
			continue;
		row->member = s->cur;
		row->it = it;
		row->gap = NULL;
		s->kept++;
		return 1;
	}
}

const struct rt_threads *scan_threads(const struct scan *s)
{
	return s->th;
}

struct stack_names *scan_names(const struct scan *s)
{
	return s->names;
}

void scan_close(struct scan *s)
{
	if (!s)
		return;
	view_close(s);
	free(s);
}
