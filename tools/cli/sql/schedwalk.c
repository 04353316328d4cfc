// SPDX-License-Identifier: GPL-2.0
/*
 * schedwalk (schedwalk.h): one scan of every item of the cursor's
 * members, kept as per-CPU and per-thread state, spans handed out as they
 * end.  Every event is read, not the scheduler's alone: a span still open
 * at the end runs to the member's last item, whatever it is (report's
 * rule).  A window's scan of a member is the items in [checkpoint k,
 * checkpoint k') (scan_open_spec()), started from k's state; or, from
 * the scheduler records, the items from lo on, started from the records'
 * state there, and past hi the stretches that may end its spans.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ckpts.h"
#include "runidx.h"
#include "schedpack.h"
#include "schedwalk.h"
#include "sqlcache.h"

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

/*
 * The state before a member's first item at or after @ts: the walk
 * started there from it goes on as the whole member's walk does.
 */
struct sw_ckpt {
	int64_t ts;			/* INT64_MIN: the member's start, nothing known */
	struct sw_cpu *cpus;
	size_t nr_cpus;
	struct sw_thread *threads;
	size_t nr_threads;
};

/* A member's checkpoints, and every span open at one of them. */
struct sw_index {
	struct ckpts ck;		/* struct sw_ckpt, spaced in items read */
	struct sw_span *spans;		/* whole, as the member's walk ends them */
	size_t nr_spans, cap_spans;
};

struct schedwalk {
	struct sql_cursor *c;
	struct scan *scan;		/* the member being read; NULL between */
	struct scan_spec rd;		/* what it reads */
	bool states;
	/*
	 * schedwalk_blocked(): stacks read, and every member read whole (the
	 * index's checkpoints and spans know no blocked function).
	 */
	bool blocked;
	/* The functions blocked in, each once (open addressing, XXH3). */
	char **names;
	size_t cap_names, nr_names;
	bool done;
	unsigned int member;		/* being read */
	unsigned int next;		/* the next member to read */
	int64_t last;			/* the member's last item so far */
	/* A window (c->spec.has_lo/hi): the member's index, and where the read stops. */
	const struct sw_index *ix;
	size_t stop;			/* ix->ck[stop]: not read from there; 0: to the end */
	/*
	 * A window started from the scheduler records (records_start()):
	 * with hi, read on past it until every span begun by then has
	 * ended, each ending event being the member's walk's own.
	 */
	bool until;			/* a window with hi, read so */
	bool crossed;			/* an item after hi was read */
	size_t open_old;		/* spans open then, not ended since */
	bool ended;			/* they have all ended: the read stops */
	/*
	 * Of those, the ones nothing after hi can end (schedpack_after()):
	 * not counted in open_old, ended at the member's last item when the
	 * read stops.
	 */
	struct sp_after after;
	bool have_after;
	int64_t after_last;		/* the member's last item, ns */
	/*
	 * Past hi, only the frames that may end one of them are read, in
	 * stretches (round_next()): everything before @pos has been.
	 */
	bool rounds;
	bool skipped;			/* some time after hi was not read */
	bool at_end;			/* nothing after @pos ends those still open */
	int64_t pos;
	struct sw_index *build;		/* building one: spans go here */
	struct sp_check *check;		/* building: the records checked (schedpack.h) */
	/*
	 * utid = X in the member read ("utid = X" below): only X's
	 * spans; the stretches [ck[from], ck[stop]) read, as pairs in @rng,
	 * the spans queued before q[trusted] the index's.
	 */
	int32_t only;			/* X's tid; -1: every thread's spans */
	const struct run_index *runs;	/* the member's (runidx.h) */
	size_t *rng, nr_rng, at_rng;
	size_t trusted;
	struct rt_tidmap cpus;		/* struct sw_cpu by CPU number */
	struct rt_tidmap threads;	/* struct sw_thread by tid */
	/* Spans ended, not handed out yet. */
	struct sw_span *q;
	size_t nr_q, head, cap_q;
	/*
	 * schedwalk_tee(): @tee is given a copy of each span on a CPU this
	 * walk hands out; @fed: this walk is such a tee and reads nothing.
	 */
	struct schedwalk *tee;
	bool fed;
	/* schedwalk_reader(): the share's read of the member (its stacks' names). */
	struct scan *fed_scan;
	/*
	 * What events are (kind()), by their description's address: the
	 * members' metadata live as long as the database, so an address is
	 * one event for the walk's life.  Direct-mapped: events interleave.
	 */
	struct {
		const struct rt_event_desc *ev;
		enum sw_kind kind;
	} kinds[32];
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

static struct schedwalk *walk_new(struct sql_cursor *c, bool states)
{
	struct schedwalk *w = calloc(1, sizeof(*w));

	if (!w)
		die("out of memory");
	w->c = c;
	w->states = states;
	w->rd.limit = -1;
	w->rd.members = calloc(c->db->ts->nr + 1, sizeof(*w->rd.members));
	if (!w->rd.members)
		die("out of memory");
	w->rd.members_set = true;
	w->only = -1;
	rt_tidmap_init(&w->cpus, sizeof(struct sw_cpu));
	rt_tidmap_init(&w->threads, sizeof(struct sw_thread));
	return w;
}

struct schedwalk *schedwalk_open(struct sql_cursor *c, bool states)
{
	struct schedwalk *w = walk_new(c, states);

	w->done = c->spec.empty;
	return w;
}

static void state_free(struct schedwalk *w)
{
	rt_tidmap_free(&w->cpus);
	rt_tidmap_free(&w->threads);
	rt_tidmap_init(&w->cpus, sizeof(struct sw_cpu));
	rt_tidmap_init(&w->threads, sizeof(struct sw_thread));
}

void schedwalk_close(struct schedwalk *w)
{
	if (!w)
		return;
	scan_close(w->scan);
	state_free(w);
	rt_tidmap_free(&w->cpus);
	rt_tidmap_free(&w->threads);
	sql_spec_free(&w->rd);
	for (size_t i = 0; i < w->cap_names; i++)
		free(w->names[i]);
	free(w->names);
	free(w->q);
	free(w->rng);
	sp_after_free(&w->after);
	free(w);
}

static struct sw_span *push(struct schedwalk *w, int64_t ts, int64_t end, int32_t tid)
{
	struct sw_span *sp;

	if (w->head == w->nr_q)
		w->head = w->nr_q = w->trusted = 0;
	if (w->nr_q == w->cap_q) {
		w->cap_q = w->cap_q ? 2 * w->cap_q : 16;
		w->q = realloc(w->q, w->cap_q * sizeof(*w->q));
		if (!w->q)
			die("out of memory");
	}
	sp = &w->q[w->nr_q++];
	/* After hi, only a span open when it was crossed begins by hi. */
	if (w->crossed && ts <= w->c->spec.hi && w->open_old)
		w->open_old--;
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
}

static int64_t field(const struct rt_item *it, const char *name, int64_t none)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : none;
}

static enum sw_kind kind(struct schedwalk *w, const struct rt_event_desc *ev)
{
	typeof(w->kinds[0]) *k = &w->kinds[(uintptr_t)ev / sizeof(*ev) % ARRAY_SIZE(w->kinds)];

	if (k->ev != ev) {
		k->ev = ev;
		k->kind = !strcmp(ev->name, "sched_switch") ? K_SWITCH :
			  !strcmp(ev->name, "sched_waking") ||
			  !strcmp(ev->name, "sched_wakeup") ||
			  !strcmp(ev->name, "sched_wakeup_new") ? K_WAKEUP :
			  !strcmp(ev->name, "irq_handler_entry") ||
			  !strcmp(ev->name, "irq_softirq_entry") ? K_IRQ_ENTRY :
			  !strcmp(ev->name, "irq_handler_exit") ||
			  !strcmp(ev->name, "irq_softirq_exit") ? K_IRQ_EXIT : K_OTHER;
	}
	return k->kind;
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
	/*
	 * In an interrupt: one recorded on the CPU, or one sched_waking's
	 * waker_ctx names (a timer's interrupt records no entry).
	 */
	t->irq = cpu(w, row->it->cpu, row->ts)->irqs > 0 ||
		 field(row->it, "waker_ctx", 0) > 0;
}

void schedwalk_blocked(struct schedwalk *w)
{
	w->blocked = true;
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
	fn = stack_blocked_function(scan_names(w->fed_scan ? w->fed_scan : w->scan), &p->kernel,
				    buf, sizeof(buf));
	if (fn)
		t->blocked = intern(w, fn);
}

/* ---- checkpoints (a member's index) ------------------------------------------------ */

static void ckpt_drop(void *el)
{
	struct sw_ckpt *k = el;

	free(k->cpus);
	free(k->threads);
}

void schedwalk_index_free(struct sw_index *ix)
{
	if (!ix)
		return;
	ckpts_free(&ix->ck);
	free(ix->spans);
	free(ix);
}

static int cpu_cmp(const void *a, const void *b)
{
	const struct sp_cpu_state *x = a, *y = b;

	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

static int thread_cmp(const void *a, const void *b)
{
	const struct sp_thread_state *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The walk's state now against the scheduler records' (schedpack.h's check). */
static void check_now(struct schedwalk *w)
{
	struct sp_state st = { 0 };

	st.cpus = calloc(w->cpus.used + 1, sizeof(*st.cpus));
	st.threads = calloc(w->threads.used + 1, sizeof(*st.threads));
	if (!st.cpus || !st.threads)
		die("out of memory");
	for (size_t i = 0; i < w->cpus.cap; i++) {
		const struct sw_cpu *c = rt_tidmap_slot(&w->cpus, i);

		if (c)
			st.cpus[st.nr_cpus++] = (struct sp_cpu_state){
				.cpu = (uint32_t)c->cpu, .tid = c->tid, .since = (uint64_t)c->since,
				.prio = c->prio, .switch_ts = (uint64_t)c->switch_ts,
				.switch_prev = c->switch_prev, .irqs = c->irqs };
	}
	for (size_t i = 0; i < w->threads.cap; i++) {
		const struct sw_thread *t = rt_tidmap_slot(&w->threads, i);

		if (t && (t->open || t->running))
			st.threads[st.nr_threads++] = (struct sp_thread_state){
				.tid = t->tid, .running = t->running, .open = t->open,
				.state = t->state, .since = (uint64_t)t->since, .cpu = t->cpu,
				.waker = t->waker, .irq = t->irq };
	}
	qsort(st.cpus, st.nr_cpus, sizeof(*st.cpus), cpu_cmp);
	qsort(st.threads, st.nr_threads, sizeof(*st.threads), thread_cmp);
	spcheck_state(w->check, &st);
	sp_state_free(&st);
}

/* The walk's state now, into checkpoint @el (ckpts_take()'s fill). */
static void ckpt_fill(void *el, void *arg)
{
	struct schedwalk *w = arg;
	struct sw_ckpt *k = el;

	if (w->check)
		check_now(w);
	k->cpus = calloc(w->cpus.used + 1, sizeof(*k->cpus));
	k->threads = calloc(w->threads.used + 1, sizeof(*k->threads));
	if (!k->cpus || !k->threads)
		die("out of memory");
	for (size_t i = 0; i < w->cpus.cap; i++) {
		struct sw_cpu *c = rt_tidmap_slot(&w->cpus, i);

		if (c)
			k->cpus[k->nr_cpus++] = *c;
	}
	for (size_t i = 0; i < w->threads.cap; i++) {
		struct sw_thread *t = rt_tidmap_slot(&w->threads, i);

		if (t)
			k->threads[k->nr_threads++] = *t;
	}
}

static void ckpt_restore(struct schedwalk *w, const struct sw_ckpt *k)
{
	bool created;

	for (size_t i = 0; i < k->nr_cpus; i++) {
		struct sw_cpu *c = rt_tidmap_get(&w->cpus, k->cpus[i].cpu, &created);

		if (!c)
			die("out of memory");
		*c = k->cpus[i];
	}
	for (size_t i = 0; w->states && i < k->nr_threads; i++) {
		struct sw_thread *t = rt_tidmap_get(&w->threads, k->threads[i].tid, &created);

		if (!t)
			die("out of memory");
		*t = k->threads[i];
	}
}

/* Building: the spans ended so far that were open at a checkpoint are kept. */
static void index_drain(struct schedwalk *w)
{
	struct sw_index *ix = w->build;
	int64_t since = ckpts_ts(&ix->ck, ix->ck.nr - 1);

	for (; w->head < w->nr_q; w->head++) {
		if (w->q[w->head].ts >= since)
			continue;
		if (ix->nr_spans == ix->cap_spans) {
			ix->cap_spans = ix->cap_spans ? 2 * ix->cap_spans : 256;
			ix->spans = realloc(ix->spans, ix->cap_spans * sizeof(*ix->spans));
			if (!ix->spans)
				die("out of memory");
		}
		ix->spans[ix->nr_spans++] = w->q[w->head];
	}
}

static int member_start(struct schedwalk *w, unsigned int m);
static int member_row(struct schedwalk *w);
static void member_finish(struct schedwalk *w);
static int utid_start(struct schedwalk *w, unsigned int m, int32_t tid);
static void utid_finish(struct schedwalk *w);

/*
 * Member @m's index: one walk of the whole member with states (the sched
 * events decoded, the rest read past), a checkpoint every spacing items
 * of it (events of any name and losses: about the bytes read), and the
 * spans open at any checkpoint, whole.  Its reading is scan_stats' row
 * "sched index".
 */
static void *index_build(struct sql_cursor *c, unsigned int m, void *arg)
{
	struct sql_cursor ic = *c;
	struct sw_index *ix = calloc(1, sizeof(*ix));
	struct schedwalk *b;
	int r;

	(void)arg;
	if (!ix)
		die("out of memory");
	ic.stat = sqldb_stat_new(c->db, "sched index");
	ic.err = NULL;
	b = walk_new(&ic, true);
	b->build = ix;
	CKPTS_INIT(&ix->ck, struct sw_ckpt, ckpt_drop);
	ckpts_take(&ix->ck, INT64_MIN, ckpt_fill, b);
	b->check = spcheck_open(&ic, m);
	r = member_start(b, m);
	while (r >= 0 && b->scan)
		r = member_row(b);
	spcheck_close(b->check);
	if (r < 0) {
		c->err = ic.err;
		schedwalk_index_free(ix);
		ix = NULL;
	}
	schedwalk_close(b);
	return ix;
}

/* ---- the index on disk (sqlcache.h) --------------------------------------------------- */

/* The records below, their version: a new one with any change to them. */
#define SW_CACHE_LAYOUT	2	/* 2: irq from waker_ctx too */
#define SW_CACHE_FAMILY	"sched"
/* Bytes of a CPU's, a thread's and a span's record. */
#define SW_REC_CPU	40
#define SW_REC_THREAD	32
#define SW_REC_SPAN	56

static void put_cpu(struct sqlcache_buf *b, const struct sw_cpu *c)
{
	sqlcache_put32(b, (uint32_t)c->cpu);
	sqlcache_put32(b, (uint32_t)c->tid);
	sqlcache_put64(b, (uint64_t)c->since);
	sqlcache_put64(b, (uint64_t)c->prio);
	sqlcache_put64(b, (uint64_t)c->switch_ts);
	sqlcache_put32(b, (uint32_t)c->switch_prev);
	sqlcache_put32(b, c->irqs);
}

/* No blocked function: the index's walk reads no stacks (and names are pointers). */
static void put_thread(struct sqlcache_buf *b, const struct sw_thread *t)
{
	sqlcache_put32(b, (uint32_t)t->tid);
	sqlcache_put32(b, (uint32_t)t->open | (uint32_t)t->running << 1 | (uint32_t)t->irq << 2);
	sqlcache_put64(b, (uint64_t)t->state);
	sqlcache_put64(b, (uint64_t)t->since);
	sqlcache_put32(b, (uint32_t)t->cpu);
	sqlcache_put32(b, (uint32_t)t->waker);
}

static void put_span(struct sqlcache_buf *b, const struct sw_span *sp)
{
	sqlcache_put64(b, (uint64_t)sp->ts);
	sqlcache_put64(b, (uint64_t)sp->end);
	sqlcache_put64(b, (uint64_t)sp->state);
	sqlcache_put64(b, (uint64_t)sp->end_state);
	sqlcache_put64(b, (uint64_t)sp->prio);
	sqlcache_put32(b, (uint32_t)sp->tid);
	sqlcache_put32(b, (uint32_t)sp->cpu);
	sqlcache_put32(b, (uint32_t)sp->waker);
	sqlcache_put32(b, (uint32_t)sp->chained | (uint32_t)sp->irq << 1);
}

/* Index @ix kept for the next process (sqlcache_family.store). */
static void index_store(struct sqlcache_buf *b, const void *index, void *arg)
{
	const struct sw_index *ix = index;

	(void)arg;
	ckpts_put_head(&ix->ck, b);
	for (size_t i = 0; i < ix->ck.nr; i++) {
		const struct sw_ckpt *k = ckpts_at(&ix->ck, i);

		sqlcache_put64(b, (uint64_t)k->ts);
		sqlcache_put64(b, k->nr_cpus);
		sqlcache_put64(b, k->nr_threads);
		for (size_t j = 0; j < k->nr_cpus; j++)
			put_cpu(b, &k->cpus[j]);
		for (size_t j = 0; j < k->nr_threads; j++)
			put_thread(b, &k->threads[j]);
	}
	sqlcache_put64(b, ix->nr_spans);
	for (size_t i = 0; i < ix->nr_spans; i++)
		put_span(b, &ix->spans[i]);
}

/*
 * Member @m's index from payload @b (sqlcache_family.load).  Everything is
 * checked that the walk relies on: checkpoints by time from the member's
 * start, tidmap keys (CPU numbers >= 0, tids > 0), counts within the file.
 */
static void *index_load(struct sql_cursor *c, unsigned int m, struct sqlcache_buf *b,
			void *arg)
{
	struct sw_index *ix;
	size_t nr;

	(void)c;
	(void)arg;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		die("out of memory");
	CKPTS_INIT(&ix->ck, struct sw_ckpt, ckpt_drop);
	nr = ckpts_get_head(&ix->ck, b, 24);
	for (size_t i = 0; !b->bad && i < nr; i++) {
		struct sw_ckpt *k = ckpts_get_next(&ix->ck, b);

		k->nr_cpus = sqlcache_get_count(b, SW_REC_CPU);
		k->nr_threads = sqlcache_get_count(b, SW_REC_THREAD);
		k->cpus = calloc(k->nr_cpus + 1, sizeof(*k->cpus));
		k->threads = calloc(k->nr_threads + 1, sizeof(*k->threads));
		if (!k->cpus || !k->threads)
			die("out of memory");
		for (size_t j = 0; !b->bad && j < k->nr_cpus; j++) {
			struct sw_cpu *x = &k->cpus[j];

			x->cpu = (int32_t)sqlcache_get32(b);
			x->tid = (int32_t)sqlcache_get32(b);
			x->since = (int64_t)sqlcache_get64(b);
			x->prio = (int64_t)sqlcache_get64(b);
			x->switch_ts = (int64_t)sqlcache_get64(b);
			x->switch_prev = (int32_t)sqlcache_get32(b);
			x->irqs = sqlcache_get32(b);
			if (x->cpu < 0)
				b->bad = true;
		}
		for (size_t j = 0; !b->bad && j < k->nr_threads; j++) {
			struct sw_thread *x = &k->threads[j];
			uint32_t flags;

			x->tid = (int32_t)sqlcache_get32(b);
			flags = sqlcache_get32(b);
			x->open = flags & 1;
			x->running = flags & 2;
			x->irq = flags & 4;
			x->state = (int64_t)sqlcache_get64(b);
			x->since = (int64_t)sqlcache_get64(b);
			x->cpu = (int32_t)sqlcache_get32(b);
			x->waker = (int32_t)sqlcache_get32(b);
			if (x->tid <= 0 || flags > 7)
				b->bad = true;
		}
	}
	ix->cap_spans = ix->nr_spans = b->bad ? 0 : sqlcache_get_count(b, SW_REC_SPAN);
	ix->spans = calloc(ix->nr_spans + 1, sizeof(*ix->spans));
	if (!ix->spans)
		die("out of memory");
	for (size_t i = 0; !b->bad && i < ix->nr_spans; i++) {
		struct sw_span *x = &ix->spans[i];
		uint32_t flags;

		x->member = m;
		x->ts = (int64_t)sqlcache_get64(b);
		x->end = (int64_t)sqlcache_get64(b);
		x->state = (int64_t)sqlcache_get64(b);
		x->end_state = (int64_t)sqlcache_get64(b);
		x->prio = (int64_t)sqlcache_get64(b);
		x->tid = (int32_t)sqlcache_get32(b);
		x->cpu = (int32_t)sqlcache_get32(b);
		x->waker = (int32_t)sqlcache_get32(b);
		flags = sqlcache_get32(b);
		x->chained = flags & 1;
		x->irq = flags & 2;
		if (flags > 3)
			b->bad = true;
	}
	return ix;
}

static void index_free(void *ix)
{
	schedwalk_index_free(ix);
}

static const struct sqlcache_family sw_family = {
	.stat = "sched index", .layout = SW_CACHE_LAYOUT,
	.load = index_load, .store = index_store, .build = index_build, .free = index_free,
};

/*
 * Member @m's index, on first need: from the cache (scan_stats' row
 * "sched index", plan "cache", reads no frame), else built and kept
 * there (kept by the database either way).
 */
static const struct sw_index *index_get(struct sql_cursor *c, unsigned int m)
{
	struct sqldb *d = c->db;

	if (!d->sched_idx) {
		d->sched_idx = calloc(d->ts->nr + 1, sizeof(*d->sched_idx));
		if (!d->sched_idx)
			die("out of memory");
	}
	if (!d->sched_idx[m])
		d->sched_idx[m] = sqlcache_index(c, m, SW_CACHE_FAMILY, &sw_family, NULL);
	return d->sched_idx[m];
}

/* ---- utid = X: the stretches where X's spans begin ---------------------------------------- */

/*
 * Every span of X begins at an event that names X in a tid field: a
 * sched_switch's next_tid (Running) or prev_tid (off CPU), a wakeup's
 * tid ('R').  A span that was open at one of the index's checkpoints is
 * the index's, whole; any other lies between two checkpoints, and the
 * stretch [ck[i], ck[i + 1]) that holds it holds such an event
 * (runidx_named()).  So a walk for utid = X takes X's spans open at a
 * checkpoint from the index, reads only the stretches that name X, each
 * run of them from its first checkpoint's state as a window does, and
 * keeps there X's spans open at no checkpoint: every span of X the
 * member's walk gives, once.
 */

/* Whether [@ts, @end] was open at one of @ix's checkpoints (ts < ck.ts <= end). */
static bool crosses(const struct sw_index *ix, int64_t ts, int64_t end)
{
	size_t lo = 1, hi = ix->ck.nr;

	while (lo < hi) {		/* the first checkpoint after @ts */
		size_t mid = lo + (hi - lo) / 2;

		if (ckpts_ts(&ix->ck, mid) > ts)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < ix->ck.nr && ckpts_ts(&ix->ck, lo) <= end;
}

/* X's tid when the walk of member @m reads X's stretches alone; -1: it reads all. */
static int32_t utid_tid(const struct schedwalk *w, unsigned int m)
{
	const struct scan_spec *sp = &w->c->spec;

	if (w->build || w->blocked || !sp->utid_set || sp->utid < 0 ||
	    (uint64_t)sp->utid >> 32 != m || sp->utid & 0x80000000)
		return -1;
	return (int32_t)(sp->utid & 0x7fffffff);
}

/* A queued span of the utid's walk given (@indexed: it is the index's). */
static bool utid_kept(const struct schedwalk *w, const struct sw_span *x, bool indexed)
{
	return x->tid == w->only && (indexed || !crosses(w->ix, x->ts, x->end));
}

/* Whether a scheduler event of [@a, @b) names X on any CPU of the member. */
static bool named_any(const struct schedwalk *w, const struct run_index *ri, int64_t a, int64_t b)
{
	const struct rt_trace *t = w->c->db->ts->m[w->member].t;

	for (unsigned int k = 0; k < t->nr_cpus; k++)
		if (runidx_named(ri, w->only, t->cpus[k].cpu, a, b))
			return true;
	return false;
}

/*
 * The CPUs a stretch [ck[from], ck[stop]) reads: those where an event
 * names X in it and those X runs on at ck[from] (the switch that ends
 * that run names X only when the chain holds).  X's spans there are
 * made of their events alone: the switches and wakeups naming X, the
 * CPU's next switch after X's switch in, and the waker's CPU's owner and
 * interrupts, the wakeup's own.  A stretch to the member's end reads
 * every CPU (its spans still open end at the member's last item).
 */
static void range_cpus(struct schedwalk *w, const struct run_index *ri, size_t from, size_t stop)
{
	const struct rt_trace *t = w->c->db->ts->m[w->member].t;
	const struct sw_ckpt *k = ckpts_at(&w->ix->ck, from);
	int64_t b = ckpts_ts(&w->ix->ck, stop);

	free(w->rd.cpus);
	w->rd.cpus = NULL;
	w->rd.nr_cpus = 0;
	w->rd.cpus_set = stop > 0;
	if (!stop)
		return;
	w->rd.cpus = calloc(t->nr_cpus + 1, sizeof(*w->rd.cpus));
	if (!w->rd.cpus)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		uint32_t cpu = t->cpus[i].cpu;
		bool on = runidx_named(ri, w->only, cpu, k->ts, b);

		for (size_t j = 0; !on && j < k->nr_cpus; j++)
			on = k->cpus[j].cpu == (int32_t)cpu && k->cpus[j].tid == w->only;
		if (on)
			w->rd.cpus[w->rd.nr_cpus++] = cpu;
	}
}

/* The next stretch of the member read, from its first checkpoint's state. */
static void range_start(struct schedwalk *w)
{
	const struct sw_index *ix = w->ix;
	size_t from = w->rng[2 * w->at_rng], stop = w->rng[2 * w->at_rng + 1];

	range_cpus(w, w->runs, from, stop);
	w->at_rng++;
	state_free(w);
	ckpt_restore(w, ckpts_at(&ix->ck, from));
	w->last = ckpts_ts(&ix->ck, from);
	w->stop = stop;
	w->rd.has_begin = from > 0;
	w->rd.begin = ckpts_ts(&ix->ck, from);
	w->rd.has_end = stop > 0;
	w->rd.end = stop ? ckpts_ts(&ix->ck, stop) - 1 : 0;
	w->scan = scan_open_spec(w->c, SCAN_EVENTS | SCAN_LOSSES |
				 (w->states ? SCAN_THREADS : 0), &w->rd);
}

/*
 * Member @m for X (tid @tid): X's spans open at a checkpoint queued from
 * the index, the stretches that name X (and meet lo/hi) listed and the
 * first one opened (0, or -1 with c->err).
 */
static int utid_start(struct schedwalk *w, unsigned int m, int32_t tid)
{
	const struct scan_spec *sp = &w->c->spec;
	const struct sw_index *ix = index_get(w->c, m);
	const struct run_index *ri = ix ? runidx_get(w->c, m) : NULL;

	if (!ri)
		return -1;
	w->ix = ix;
	w->runs = ri;
	w->only = tid;
	for (size_t i = 0; i < ix->nr_spans; i++) {
		const struct sw_span *x = &ix->spans[i];

		if (x->tid == tid && (w->states || x->state == SW_RUNNING) &&
		    crosses(ix, x->ts, x->end))
			*push(w, x->ts, x->end, x->tid) = *x;
	}
	w->trusted = w->nr_q;
	w->nr_rng = w->at_rng = 0;
	free(w->rng);
	w->rng = calloc(2 * ix->ck.nr + 2, sizeof(*w->rng));
	if (!w->rng)
		die("out of memory");
	for (size_t i = 0; i < ix->ck.nr; i++) {
		int64_t a = ckpts_ts(&ix->ck, i), b = i + 1 < ix->ck.nr ? ckpts_ts(&ix->ck, i + 1) : INT64_MAX;
		size_t stop = i + 1 < ix->ck.nr ? i + 1 : 0;

		/* A span within [a, b) ends before b and begins at a or after. */
		if ((sp->has_lo && b <= sp->lo) || (sp->has_hi && a > sp->hi) ||
		    !named_any(w, ri, a, b))
			continue;
		/* The last stretch alone reads every CPU (range_cpus()): not joined. */
		if (w->nr_rng && w->rng[2 * w->nr_rng - 1] == i && stop) {
			w->rng[2 * w->nr_rng - 1] = stop;
			continue;
		}
		w->rng[2 * w->nr_rng] = i;
		w->rng[2 * w->nr_rng + 1] = stop;
		w->nr_rng++;
	}
	if (w->nr_rng)
		range_start(w);
	return 0;
}

/*
 * A stretch read: what is still open ends at the member's last item if
 * it read to the end (what was open at its last checkpoint is the
 * index's); then the next stretch, if any.
 */
static void utid_finish(struct schedwalk *w)
{
	scan_close(w->scan);
	w->scan = NULL;
	if (!w->stop)
		member_end(w);
	state_free(w);
	if (w->at_rng < w->nr_rng)
		range_start(w);
}

/* ---- a first window from the scheduler records ---------------------------------------- */

/* The state the records give (times in cycles), as the walk keeps it. */
static void records_restore(struct schedwalk *w, unsigned int m, const struct sp_state *st)
{
	const struct sqldb *d = w->c->db;

	for (size_t i = 0; i < st->nr_cpus; i++) {
		const struct sp_cpu_state *x = &st->cpus[i];
		struct sw_cpu *c = cpu(w, x->cpu, 0);

		c->tid = x->tid;
		c->since = sqldb_ns(d, m, x->since);
		c->prio = x->prio;
		c->switch_ts = sqldb_ns(d, m, x->switch_ts);
		c->switch_prev = x->switch_prev;
		c->irqs = x->irqs;
	}
	for (size_t i = 0; w->states && i < st->nr_threads; i++) {
		const struct sp_thread_state *x = &st->threads[i];
		struct sw_thread *t = thread(w, x->tid);

		t->open = x->open;
		t->running = x->running;
		t->state = x->state;
		t->since = sqldb_ns(d, m, x->since);
		t->cpu = x->cpu;
		t->waker = x->waker;
		t->irq = x->irq;
		t->blocked = NULL;
	}
}

/*
 * A window of member @m that has no checkpoints yet, from its scheduler
 * records (schedpack_at()): the walk's state before lo, the read from lo
 * on -- to the member's end, or with hi until every span begun by hi has
 * ended (the spans it gives are the member's walk's: each ends at the
 * event the whole walk ends it at).  0, 1 (no records to trust, or they
 * do not tell: the checkpoints' way), -1 (c->err).
 */
static int records_start(struct schedwalk *w, unsigned int m)
{
	const struct scan_spec *sp = &w->c->spec;
	struct sp_state st;
	int64_t last;
	int r = schedpack_at(w->c, m, sp->has_lo ? sp->lo : INT64_MIN, &st, &last);

	if (r)
		return r;
	records_restore(w, m, &st);
	sp_state_free(&st);
	w->last = last;
	if (sp->has_lo) {
		w->rd.has_begin = true;
		w->rd.begin = sp->lo;
	}
	w->until = sp->has_hi;
	return 0;
}

static int open_thread_cmp(const void *a, const void *b)
{
	const struct sp_open_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Whether CPU @c's span can end after hi (w->after). */
static bool cpu_ends(const struct schedwalk *w, const struct sw_cpu *c)
{
	const struct rt_trace *t = w->c->db->ts->m[w->member].t;

	if (!w->have_after)
		return true;
	if (w->at_end)
		return false;
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		if ((int32_t)t->cpus[i].cpu == c->cpu)
			return w->after.cpu_switches[i];
	return true;
}

static bool thread_ends(const struct schedwalk *w, const struct sw_thread *t)
{
	return !w->have_after ||
	       (!w->at_end && sp_after_named(&w->after, t->tid, t->state & 0xff));
}

/*
 * hi is crossed: every span open now began by then.  Those something
 * after hi can end are counted (open_old); the others end at the
 * member's last item (hi_close()).  (0, -1 c->err.)
 */
static int hi_cross(struct schedwalk *w)
{
	size_t n = 0, open = 0;
	int r;

	w->have_after = !schedpack_after(w->c, w->member, w->c->spec.hi, &w->after);
	for (size_t i = 0; i < w->cpus.cap; i++) {
		const struct sw_cpu *c = rt_tidmap_slot(&w->cpus, i);

		open += c && c->tid >= 0;
		n += c && c->tid >= 0 && cpu_ends(w, c);
	}
	for (size_t i = 0; w->states && i < w->threads.cap; i++) {
		const struct sw_thread *t = rt_tidmap_slot(&w->threads, i);

		open += t && t->open;
		n += t && t->open && thread_ends(w, t);
	}
	/* Some end at the member's last item: where is it? (Not told: read on.) */
	if (w->have_after && n < open) {
		r = schedpack_last(w->c, w->member, &w->after_last);
		if (r < 0)
			return -1;
		if (r) {
			sp_after_free(&w->after);
			w->have_after = false;
			n = open;
		}
	}
	w->crossed = true;
	w->open_old = n;
	return 0;
}

/* The spans open past hi that something may still end (rounds). */
static void open_now(struct schedwalk *w, struct sp_open *o)
{
	const struct rt_trace *t = w->c->db->ts->m[w->member].t;
	int64_t hi = w->c->spec.hi;

	o->cpus = calloc(t->nr_cpus + 1, sizeof(*o->cpus));
	o->threads = calloc(w->threads.used + 1, sizeof(*o->threads));
	o->nr_threads = 0;
	if (!o->cpus || !o->threads)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		const struct sw_cpu *c = rt_tidmap_find(&w->cpus, (int32_t)t->cpus[i].cpu);

		o->cpus[i] = c && c->tid >= 0 && c->since <= hi && cpu_ends(w, c);
	}
	for (size_t i = 0; w->states && i < w->threads.cap; i++) {
		const struct sw_thread *x = rt_tidmap_slot(&w->threads, i);

		if (x && x->open && x->since <= hi && thread_ends(w, x))
			o->threads[o->nr_threads++] = (struct sp_open_thread){
				.tid = x->tid, .blocked = x->state & 0xff };
	}
	qsort(o->threads, o->nr_threads, sizeof(*o->threads), open_thread_cmp);
}

/*
 * The next stretch past hi that may end a span still open: the frames
 * between end none (schedpack_next(); each span ends at the first event
 * naming it, which lies in the first frame naming it on some CPU), so
 * the walk reads it as the whole walk does for those spans.  None left:
 * those still open end at the member's last item (or, not known, the
 * read goes on to the end).  0, -1 (c->err).
 */
static int round_next(struct schedwalk *w)
{
	const struct rt_trace *t = w->c->db->ts->m[w->member].t;
	bool *cpus = calloc(t->nr_cpus + 1, sizeof(*cpus));
	struct sp_open o;
	int64_t b = 0, e = 0;
	bool none;

	if (!cpus)
		die("out of memory");
	scan_close(w->scan);
	open_now(w, &o);
	none = schedpack_next(w->c, w->member, w->pos, &o, &b, &e, cpus) != 0;
	free(o.cpus);
	free(o.threads);
	w->scan = NULL;
	if (none) {
		int r = schedpack_last(w->c, w->member, &w->after_last);

		if (r < 0) {
			free(cpus);
			return -1;
		}
		if (!r) {
			free(cpus);
			w->at_end = w->ended = true;
			w->open_old = 0;
			member_finish(w);
			return 0;
		}
	}
	w->skipped = true;
	w->rd.has_begin = true;
	w->rd.begin = none ? w->pos : b;
	w->rd.has_end = !none;
	w->rd.end = e;
	w->rounds = !none;
	/* A stretch reads the CPUs that may end a span in it; to the end, all. */
	free(w->rd.cpus);
	w->rd.cpus = NULL;
	w->rd.nr_cpus = 0;
	w->rd.cpus_set = !none;
	if (!none) {
		w->rd.cpus = calloc(t->nr_cpus + 1, sizeof(*w->rd.cpus));
		if (!w->rd.cpus)
			die("out of memory");
		for (unsigned int i = 0; i < t->nr_cpus; i++)
			if (cpus[i])
				w->rd.cpus[w->rd.nr_cpus++] = t->cpus[i].cpu;
	}
	free(cpus);
	w->pos = e < INT64_MAX ? e + 1 : e;
	w->scan = scan_open_spec(w->c, SCAN_EVENTS | SCAN_LOSSES |
				 (w->states ? SCAN_THREADS : 0), &w->rd);
	return 0;
}

/* The read stops: the spans nothing after hi ended end at the member's last item. */
static void hi_close(struct schedwalk *w)
{
	int64_t hi = w->c->spec.hi;

	if (!w->have_after)
		return;
	for (size_t i = 0; i < w->cpus.cap; i++) {
		struct sw_cpu *c = rt_tidmap_slot(&w->cpus, i);

		if (c && c->tid >= 0 && c->since <= hi && !cpu_ends(w, c))
			cpu_close(w, c, w->after_last, -2, -1);
	}
	for (size_t i = 0; w->states && i < w->threads.cap; i++) {
		struct sw_thread *t = rt_tidmap_slot(&w->threads, i);

		if (t && t->open && t->since <= hi && !thread_ends(w, t))
			thread_close(w, t, w->after_last);
	}
	sp_after_free(&w->after);
	w->have_after = false;
}

/* Member @m's index if it is known already: in memory or in the cache. */
static const struct sw_index *index_known(struct sql_cursor *c, unsigned int m)
{
	struct sqldb *d = c->db;

	if (d->sched_idx && d->sched_idx[m])
		return d->sched_idx[m];
	if (!d->sched_idx) {
		d->sched_idx = calloc(d->ts->nr + 1, sizeof(*d->sched_idx));
		if (!d->sched_idx)
			die("out of memory");
	}
	d->sched_idx[m] = sqlcache_index_cached(c, m, SW_CACHE_FAMILY, &sw_family, NULL);
	return d->sched_idx[m];
}

/* ---- one member's walk ------------------------------------------------------------------ */

/*
 * Member @m from its start or, for a window [lo, hi], from the last
 * checkpoint at or before lo to the first after hi (0 on success).
 */
static int member_start(struct schedwalk *w, unsigned int m)
{
	const struct scan_spec *sp = &w->c->spec;
	const struct sw_index *ix = NULL;
	size_t from = 0;

	state_free(w);
	w->member = m;
	w->last = INT64_MIN;
	w->stop = 0;
	w->ix = NULL;
	w->only = -1;
	w->until = w->crossed = w->ended = w->rounds = w->skipped = w->at_end = false;
	w->open_old = 0;
	sp_after_free(&w->after);
	w->have_after = false;
	w->rd.has_begin = w->rd.has_end = w->rd.cpus_set = false;
	if (!w->build && !w->blocked && (sp->has_lo || sp->has_hi) && utid_tid(w, m) < 0) {
		int r;

		ix = index_known(w->c, m);
		if (!ix) {
			r = records_start(w, m);
			if (r < 0)
				return -1;
			if (!r)
				goto open;
			ix = index_get(w->c, m);
		}
		if (!ix)
			return -1;
		ckpts_window(&ix->ck, sp->has_lo, sp->lo, sp->has_hi, sp->hi, &from, &w->stop);
		ckpt_restore(w, ckpts_at(&ix->ck, from));
		w->ix = ix;
		w->last = ckpts_ts(&ix->ck, from);
		if (from) {
			w->rd.has_begin = true;
			w->rd.begin = ckpts_ts(&ix->ck, from);
		}
		if (w->stop) {
			w->rd.has_end = true;
			w->rd.end = ckpts_ts(&ix->ck, w->stop) - 1;
		}
	}
open:
	memset(w->rd.members, 0, w->c->db->ts->nr * sizeof(*w->rd.members));
	w->rd.members[m] = true;
	if (utid_tid(w, m) >= 0)
		return utid_start(w, m, utid_tid(w, m));
	w->scan = scan_open_spec(w->c, SCAN_EVENTS | SCAN_LOSSES |
				 (w->states ? SCAN_THREADS : 0) |
				 (w->blocked ? SCAN_STACKS : 0), &w->rd);
	return 0;
}

/*
 * The member's rows are over: what is still open ends at its last item,
 * or, when the read stopped at a checkpoint, the spans open there are the
 * index's.
 */
static void member_finish(struct schedwalk *w)
{
	if (w->only >= 0) {
		utid_finish(w);
		return;
	}
	scan_close(w->scan);
	w->scan = NULL;
	if (w->ended) {
		hi_close(w);
		state_free(w);
		return;
	}
	/* Read to the end: what hi_close() would end there, member_end() does. */
	sp_after_free(&w->after);
	w->have_after = false;
	if (!w->stop) {
		if (w->check)
			check_now(w);
		member_end(w);
		if (w->build)
			index_drain(w);
		state_free(w);
		return;
	}
	for (size_t i = 0; i < w->ix->nr_spans; i++) {
		const struct sw_span *x = &w->ix->spans[i];
		int64_t at = ckpts_ts(&w->ix->ck, w->stop);

		if (x->ts < at && x->end >= at && (w->states || x->state == SW_RUNNING))
			*push(w, x->ts, x->end, x->tid) = *x;
	}
	state_free(w);
}

/* One row of the member applied (or its end): 0, -1 (c->err). */
/* An item of the member (an event or a loss) walked. */
static void walk_item(struct schedwalk *w, const struct scan_row *row)
{
	w->last = row->ts;
	if (row->it->type == RT_ITEM_EVENT) {
		switch (kind(w, row->it->event)) {
		case K_SWITCH:
			on_switch(w, row);
			break;
		case K_WAKEUP:
			on_wakeup(w, row);
			break;
		case K_IRQ_ENTRY:
			cpu(w, row->it->cpu, row->ts)->irqs++;
			break;
		case K_IRQ_EXIT: {
			struct sw_cpu *c = cpu(w, row->it->cpu, row->ts);

			c->irqs -= c->irqs > 0;
			break;
		}
		case K_OTHER:
			break;
		}
	} else {
		/* A loss: the chain goes on; its exits may be lost. */
		cpu(w, row->it->cpu, row->ts)->irqs = 0;
	}
}

static int member_row(struct schedwalk *w)
{
	struct sw_index *ix = w->build;
	struct scan_row row;
	int r = scan_next(w->scan, &row);

	if (r < 0)
		return -1;
	if (!r) {
		/* Past hi: the next stretch that may end a span, or the end. */
		if (w->crossed && !w->open_old) {
			w->ended = true;
		} else if (w->rounds) {
			return round_next(w);
		} else if (w->skipped) {
			/* Time was skipped: the last item read need not be the member's. */
			int64_t last;

			r = schedpack_last(w->c, w->member, &last);
			if (r < 0)
				return -1;
			if (!r)
				w->last = last;
		}
		member_finish(w);
		return 0;
	}
	if (row.pair) {
		on_pair(w, &row);
		return 0;
	}
	if (w->until && !w->crossed && row.ts > w->c->spec.hi) {
		if (hi_cross(w) < 0)
			return -1;
		/* With records, read only where a span open now may end (from hi on). */
		if (w->have_after && w->open_old) {
			w->pos = w->c->spec.hi + 1;
			return round_next(w);
		}
	}
	if (w->crossed && !w->open_old) {
		w->ended = true;
		member_finish(w);
		return 0;
	}
	/* A checkpoint before the first item of a new ts, every spacing items. */
	if (ix && ckpts_due(&ix->ck, row.ts, w->last))
		ckpts_take(&ix->ck, row.ts, ckpt_fill, w);
	if (w->check)
		spcheck_item(w->check, row.it);
	walk_item(w, &row);
	if (ix)
		index_drain(w);
	return 0;
}

/* A span the cursor asked for: it overlaps [lo, hi]. */
static bool span_kept(const struct scan_spec *sp, const struct sw_span *x)
{
	return (!sp->has_lo || x->end >= sp->lo) && (!sp->has_hi || x->ts <= sp->hi);
}

/* @x queued in the walk @t a walk tees into. */
static void tee_push(struct schedwalk *t, const struct sw_span *x)
{
	if (t->head == t->nr_q)
		t->head = t->nr_q = 0;
	if (t->nr_q == t->cap_q) {
		t->cap_q = t->cap_q ? 2 * t->cap_q : 16;
		t->q = realloc(t->q, t->cap_q * sizeof(*t->q));
		if (!t->q)
			die("out of memory");
	}
	t->q[t->nr_q++] = *x;
}

struct schedwalk *schedwalk_tee(struct schedwalk *a, struct schedwalk *b)
{
	struct schedwalk *from = a->states ? a : b, *to = a->states ? b : a;

	if (from->states == to->states || from->tee || to->fed || from->fed || to->tee)
		return NULL;
	from->tee = to;
	to->fed = true;
	return from;
}

/* ---- fed by a share (ship) ------------------------------------------------------------- */

/* As member_start() of a whole member, its read the share's. */
static void fed_start(void *arg, unsigned int m, struct scan *s)
{
	struct schedwalk *w = arg;

	state_free(w);
	w->member = m;
	w->last = INT64_MIN;
	w->fed_scan = s;
}

static void fed_row(void *arg, const struct scan_row *r)
{
	struct schedwalk *w = arg;

	if (r->pair)
		on_pair(w, r);
	else
		walk_item(w, r);
}

/* As member_finish() of a member read to its end. */
static void fed_end(void *arg)
{
	struct schedwalk *w = arg;

	member_end(w);
	state_free(w);
	w->fed_scan = NULL;
}

static void fed_done(void *arg)
{
	((struct schedwalk *)arg)->done = true;
}

static bool fed_ready(void *arg)
{
	const struct schedwalk *w = arg;

	return w->head < w->nr_q;
}

void schedwalk_reader(struct schedwalk *w, struct share_reader *r)
{
	w->fed = true;
	*r = (struct share_reader){
		.c = w->c, .arg = w,
		.what = SCAN_EVENTS | SCAN_LOSSES | (w->states ? SCAN_THREADS : 0) |
			(w->blocked ? SCAN_STACKS : 0),
		.start = fed_start, .feed = fed_row, .end = fed_end, .done = fed_done,
		.ready = fed_ready,
	};
}

int schedwalk_next(struct schedwalk *w, struct sw_span *sp)
{
	const struct scan_spec *spec = &w->c->spec;

	for (;;) {
		while (w->head < w->nr_q) {
			bool indexed = w->head < w->trusted;
			const struct sw_span *x = &w->q[w->head++];

			/* Every span on a CPU the walk makes, whatever this cursor keeps. */
			if (w->tee && x->state == SW_RUNNING)
				tee_push(w->tee, x);
			if (span_kept(spec, x) && (w->only < 0 || utid_kept(w, x, indexed))) {
				*sp = *x;
				return 1;
			}
		}
		if (w->done) {
			if (w->tee)
				w->tee->done = true;
			return 0;
		}
		if (w->fed)
			return SQL_WAIT;
		if (!w->scan) {
			while (w->next < w->c->db->ts->nr && spec->members_set &&
			       !spec->members[w->next])
				w->next++;
			if (w->next >= w->c->db->ts->nr) {
				w->done = true;
				continue;
			}
			if (member_start(w, w->next++) < 0)
				return -1;
			continue;
		}
		if (member_row(w) < 0)
			return -1;
	}
}
