// SPDX-License-Identifier: GPL-2.0
/*
 * schedwalk (schedwalk.h): one scan of every item of the cursor's
 * members, kept as per-CPU and per-thread state, spans handed out as they
 * end.  Every event is read, not the scheduler's alone: a span still open
 * at the end runs to the member's last item, whatever it is (report's
 * rule).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "schedwalk.h"

/* Who runs on a CPU since when, as its switches say. */
struct sw_cpu {
	int32_t cpu;			/* first: the tidmap's key */
	int32_t tid;			/* -1: unknown */
	int64_t since;
	int64_t prio;
	int64_t switch_ts;		/* its last switch, whose prev... */
	int32_t switch_prev;		/* ...is this thread (-1: none) */
	unsigned int irqs;		/* irq and softirq entries not exited */
};

/* A thread's span off CPU, open since @since (states only). */
struct sw_thread {
	int32_t tid;			/* first: the tidmap's key */
	bool open;			/* in a span off CPU */
	bool running;			/* switched in, not out since */
	int64_t state;
	int64_t since;
	int32_t cpu;
	int32_t waker;
	const char *blocked;		/* in the walk's names */
	bool irq;
};

enum sw_kind { K_OTHER, K_SWITCH, K_WAKEUP, K_IRQ_ENTRY, K_IRQ_EXIT };

struct schedwalk {
	struct sql_cursor *c;
	struct scan *scan;
	bool states;
	bool blocked;			/* schedwalk_blocked() */
	/* The functions blocked in, each once (open addressing, XXH3). */
	char **names;
	size_t cap_names, nr_names;
	bool started, done;
	unsigned int member;		/* of the state below */
	int64_t last;			/* the member's last item so far */
	struct rt_tidmap cpus;		/* struct sw_cpu by CPU number */
	struct rt_tidmap threads;	/* struct sw_thread by tid */
	/* Spans ended, not handed out yet. */
	struct sw_span *q;
	size_t nr_q, head, cap_q;
	/* The last item's event and what it is (one lookup per event kind). */
	const struct rt_event_desc *ev;
	enum sw_kind kind;
};

const char *sw_state_name(int64_t state, char *buf, size_t size)
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	if (state == SW_RUNNING)
		return "Running";
	buf[0] = '\0';
	for (int i = 0; i < 8 && n + 3 < size; i++)
		if (state & (1 << i)) {
			if (n)
				buf[n++] = '|';
			buf[n++] = letters[i];
		}
	if (!n)
		buf[n++] = 'R';
	/* TASK_REPORT_MAX (256 on every kernel the module builds for): preempted. */
	if (state & 256)
		buf[n++] = '+';
	buf[n] = '\0';
	return buf;
}

struct schedwalk *schedwalk_open(struct sql_cursor *c, bool states)
{
	struct schedwalk *w = calloc(1, sizeof(*w));

	if (!w)
		die("out of memory");
	w->c = c;
	w->states = states;
	rt_tidmap_init(&w->cpus, sizeof(struct sw_cpu));
	rt_tidmap_init(&w->threads, sizeof(struct sw_thread));
	w->scan = scan_open(c, SCAN_EVENTS | SCAN_LOSSES | (states ? SCAN_THREADS : 0));
	return w;
}

void schedwalk_close(struct schedwalk *w)
{
	if (!w)
		return;
	scan_close(w->scan);
	rt_tidmap_free(&w->cpus);
	rt_tidmap_free(&w->threads);
	for (size_t i = 0; i < w->cap_names; i++)
		free(w->names[i]);
	free(w->names);
	free(w->q);
	free(w);
}

static struct sw_span *push(struct schedwalk *w, int64_t ts, int64_t end, int32_t tid)
{
	struct sw_span *sp;

	if (w->head == w->nr_q)
		w->head = w->nr_q = 0;
	if (w->nr_q == w->cap_q) {
		w->cap_q = w->cap_q ? 2 * w->cap_q : 16;
		w->q = realloc(w->q, w->cap_q * sizeof(*w->q));
		if (!w->q)
			die("out of memory");
	}
	sp = &w->q[w->nr_q++];
	memset(sp, 0, sizeof(*sp));
	sp->member = w->member;
	sp->ts = ts;
	sp->end = end;
	sp->tid = tid;
	sp->cpu = -1;
	sp->end_state = -1;
	sp->prio = INT64_MIN;
	sp->waker = -1;
	return sp;
}

static struct sw_thread *thread(struct schedwalk *w, int32_t tid)
{
	bool created;
	struct sw_thread *t = rt_tidmap_get(&w->threads, tid, &created);

	if (!t)
		die("out of memory");
	return t;
}

/* @t's span off CPU ends at @end. */
static void thread_close(struct schedwalk *w, struct sw_thread *t, int64_t end)
{
	struct sw_span *sp;

	if (!t->open)
		return;
	sp = push(w, t->since, end, t->tid);
	sp->state = t->state;
	sp->cpu = t->cpu;
	sp->waker = t->waker;
	sp->blocked = t->blocked;
	sp->irq = t->irq;
	t->open = false;
}

static void thread_open(struct sw_thread *t, int64_t state, int64_t since,
			int32_t cpu, int32_t waker)
{
	t->open = true;
	t->state = state;
	t->since = since;
	t->cpu = cpu;
	t->waker = waker;
	t->blocked = NULL;
	t->irq = false;
}

/* CPU @c's thread runs until @end; @prev: the switch's prev_tid (-2: none). */
static void cpu_close(struct schedwalk *w, struct sw_cpu *c, int64_t end,
		      int32_t prev, int64_t prev_state)
{
	struct sw_span *sp;

	if (c->tid < 0)
		return;
	sp = push(w, c->since, end, c->tid);
	sp->state = SW_RUNNING;
	sp->cpu = c->cpu;
	sp->prio = c->prio;
	sp->chained = prev == -2 || prev == c->tid;
	sp->end_state = sp->chained && prev != -2 ? prev_state : -1;
	if (w->states && c->tid > 0)
		thread(w, c->tid)->running = false;
}

/* The member ended: every span still open closes at its last item. */
static void member_end(struct schedwalk *w)
{
	for (size_t i = 0; i < w->cpus.cap; i++) {
		struct sw_cpu *c = rt_tidmap_slot(&w->cpus, i);

		if (c)
			cpu_close(w, c, w->last, -2, -1);
	}
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct sw_thread *t = rt_tidmap_slot(&w->threads, i);

		if (t)
			thread_close(w, t, w->last);
	}
	rt_tidmap_free(&w->cpus);
	rt_tidmap_free(&w->threads);
	rt_tidmap_init(&w->cpus, sizeof(struct sw_cpu));
	rt_tidmap_init(&w->threads, sizeof(struct sw_thread));
}

static int64_t field(const struct rt_item *it, const char *name, int64_t none)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : none;
}

static enum sw_kind kind(struct schedwalk *w, const struct rt_event_desc *ev)
{
	if (ev != w->ev) {
		w->ev = ev;
		w->kind = !strcmp(ev->name, "sched_switch") ? K_SWITCH :
			  !strcmp(ev->name, "sched_waking") ||
			  !strcmp(ev->name, "sched_wakeup") ||
			  !strcmp(ev->name, "sched_wakeup_new") ? K_WAKEUP :
			  !strcmp(ev->name, "irq_handler_entry") ||
			  !strcmp(ev->name, "irq_softirq_entry") ? K_IRQ_ENTRY :
			  !strcmp(ev->name, "irq_handler_exit") ||
			  !strcmp(ev->name, "irq_softirq_exit") ? K_IRQ_EXIT : K_OTHER;
	}
	return w->kind;
}

/* CPU @cpu's state, made (nothing known) at its first item. */
static struct sw_cpu *cpu(struct schedwalk *w, uint32_t cpu, int64_t ts)
{
	bool created;
	struct sw_cpu *c = rt_tidmap_get(&w->cpus, (int32_t)cpu, &created);

	if (!c)
		die("out of memory");
	if (created) {
		c->tid = -1;
		c->since = ts;
		c->switch_prev = -1;
	}
	return c;
}

static void on_switch(struct schedwalk *w, const struct scan_row *row)
{
	const struct rt_item *it = row->it;
	int32_t prev = (int32_t)field(it, "prev_tid", -1);
	int32_t next = (int32_t)field(it, "next_tid", -1);
	int64_t state = field(it, "prev_state", -1);
	int64_t prio = field(it, "next_prio", INT64_MIN);
	struct sw_cpu *c = cpu(w, it->cpu, row->ts);

	c->switch_ts = row->ts;
	c->switch_prev = prev;
	/*
	 * A switch is never inside an interrupt; a softirq thread preempted
	 * in its softirq (PREEMPT_RT) takes its entry along: its exit later
	 * finds none, and its wakeups after that count as not known.
	 */
	c->irqs = 0;
	cpu_close(w, c, row->ts, prev, state);
	if (w->states && prev > 0 && state >= 0) {
		struct sw_thread *t = thread(w, prev);

		thread_close(w, t, row->ts);
		t->running = false;
		thread_open(t, state, row->ts, (int32_t)it->cpu, -1);
	}
	c->tid = next;
	c->since = row->ts;
	/* The kernel's priority: the trace holds LTTng's (prio - 100). */
	c->prio = prio == INT64_MIN ? prio : prio + 100;
	if (w->states && next > 0) {
		struct sw_thread *t = thread(w, next);

		thread_close(w, t, row->ts);
		t->running = true;
	}
}

static void on_wakeup(struct schedwalk *w, const struct scan_row *row)
{
	int32_t tid = (int32_t)field(row->it, "tid", -1);
	struct sw_thread *t;

	if (!w->states || tid <= 0)
		return;
	t = thread(w, tid);
	if (t->running || (t->open && !(t->state & 0xff)))
		return;		/* running or runnable already */
	thread_close(w, t, row->ts);
	thread_open(t, 0, row->ts, (int32_t)field(row->it, "target_cpu", -1), row->tid);
	t->irq = cpu(w, row->it->cpu, row->ts)->irqs > 0;
}

void schedwalk_blocked(struct schedwalk *w)
{
	w->blocked = true;
	scan_close(w->scan);
	w->scan = scan_open(w->c, SCAN_EVENTS | SCAN_LOSSES | SCAN_THREADS | SCAN_STACKS);
}

static uint64_t hash_name(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

/* @name, kept once for the walk's life (spans point at it). */
static const char *intern(struct schedwalk *w, const char *name)
{
	size_t i;

	if (2 * (w->nr_names + 1) > w->cap_names) {
		size_t cap = w->cap_names ? 2 * w->cap_names : 64;
		char **n = calloc(cap, sizeof(*n));

		if (!n)
			die("out of memory");
		for (size_t k = 0; k < w->cap_names; k++) {
			if (!w->names[k])
				continue;
			for (i = hash_name(w->names[k]) & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = w->names[k];
		}
		free(w->names);
		w->names = n;
		w->cap_names = cap;
	}
	for (i = hash_name(name) & (w->cap_names - 1); w->names[i];
	     i = (i + 1) & (w->cap_names - 1))
		if (!strcmp(w->names[i], name))
			return w->names[i];
	w->names[i] = strdup(name);
	if (!w->names[i])
		die("out of memory");
	w->nr_names++;
	return w->names[i];
}

/*
 * A stack pair: a sched_switch's kernel stack is where its prev blocked,
 * given to the span that switch opened (still open: the pair comes before
 * any later item).
 */
static void on_pair(struct schedwalk *w, const struct scan_row *row)
{
	const struct stack_pair *p = row->pair;
	struct sw_thread *t;
	struct sw_cpu *c;
	const char *fn;
	char buf[512];

	if (!w->states || !p->kernel.present || kind(w, p->event) != K_SWITCH)
		return;
	c = rt_tidmap_find(&w->cpus, (int32_t)p->cpu);
	if (!c || c->switch_ts != row->ts || c->switch_prev <= 0)
		return;
	t = rt_tidmap_find(&w->threads, c->switch_prev);
	/* Blocked: a runnable thread (R, R+) waits for no function. */
	if (!t || !t->open || t->since != row->ts || !(t->state & 0xff))
		return;
	fn = stack_blocked_function(scan_names(w->scan), &p->kernel, buf, sizeof(buf));
	if (fn)
		t->blocked = intern(w, fn);
}

int schedwalk_next(struct schedwalk *w, struct sw_span *sp)
{
	struct scan_row row;

	while (w->head == w->nr_q) {
		int r;

		if (w->done)
			return 0;
		r = scan_next(w->scan, &row);
		if (r < 0)
			return -1;
		if (!r || (w->started && row.member != w->member)) {
			if (w->started)
				member_end(w);
			w->started = false;
			if (!r) {
				w->done = true;
				continue;
			}
		}
		if (!w->started) {
			w->started = true;
			w->member = row.member;
		}
		if (row.pair) {
			on_pair(w, &row);
			continue;
		}
		w->last = row.ts;
		if (row.it->type != RT_ITEM_EVENT) {
			/* A loss: the chain goes on; its exits may be lost. */
			cpu(w, row.it->cpu, row.ts)->irqs = 0;
			continue;
		}
		switch (kind(w, row.it->event)) {
		case K_SWITCH:
			on_switch(w, &row);
			break;
		case K_WAKEUP:
			on_wakeup(w, &row);
			break;
		case K_IRQ_ENTRY:
			cpu(w, row.it->cpu, row.ts)->irqs++;
			break;
		case K_IRQ_EXIT: {
			struct sw_cpu *c = cpu(w, row.it->cpu, row.ts);

			c->irqs -= c->irqs > 0;
			break;
		}
		case K_OTHER:
			break;
		}
	}
	*sp = w->q[w->head++];
	return 1;
}
