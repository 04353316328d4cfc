// SPDX-License-Identifier: GPL-2.0
/*
 * Who did it: the thread each event belongs to, and thread names.
 *
 * ringtrace's events carry no thread id (Documentation/ringtrace/events.rst):
 * the task running on a CPU is the next_tid of that CPU's last
 * sched_switch, and before the first one the tid of the CPU's
 * ringtrace_statedump_cpu.  A loss on a CPU (RT_ITEM_LOST: events or
 * packets lost while recording, packets skipped as damage) makes its
 * thread unknown until its next switch: what ran across the gap is not
 * known.  Names and thread groups come from the state dump, then from
 * fork, exec, task_rename (prctl(PR_SET_NAME), a write to /proc/PID/comm)
 * and the comm fields of switches and wakeups.  A rename is traced before
 * the new name is copied into the task, under a task_lock() that a
 * PREEMPT_RT kernel may preempt: a switch or wakeup may still show the old
 * name after it.  So the name a rename replaced (a STALE fact) is not
 * believed again for that thread for STALE_NS after it, unless a rename
 * (prctl(), /proc, exec) or a fork (a new task's name is exact) names the
 * tid first.  The idle task is tid 0 on
 * every CPU, named per CPU ("swapper/N", the kernel's init_idle()), with
 * pid 0.  A thread's cgroup v2 id comes from the state dump's cgroup_id
 * and the fork's child_cgroup_id (a trace from before those fields: the
 * parent's); a move to another cgroup later is not an event and is not
 * seen.  Events in interrupt context belong to the task they interrupted,
 * as in ftrace.  Fed every event and loss in time order (report, export),
 * this keeps:
 *
 *   - per CPU, the tid running now (-1 until a switch or the dump says,
 *     and after a loss) and its idle task's name;
 *   - per tid, its pid (thread group), its process's parent, comm,
 *     cgroup and the name its last rename replaced, in an open-addressing
 *     hash table that grows with the number of threads, not of events.
 *
 * Each item is first turned into *facts* (extract()), which are then
 * applied (apply()): "tid T is named N", "T's thread group is P", "the
 * CPU runs T".  The same facts are what a packed chunk's thread table
 * keeps per frame (facts.c, lib/chunk_index.h), and a window replays those
 * of the frames before it (rt_threads_learn_window()) instead of decoding
 * them: applied in time order with what it reads, they leave this table as
 * a full pass leaves it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define COMM_LEN	CHUNK_COMM_LEN

/*
 * How long a name a rename replaced is not believed.  The copy follows the
 * trace point by microseconds, or by as long as the renaming task is
 * preempted (120 us seen under TCG); a name that still reads as the old
 * one a second later is a rename the trace does not hold (lost, or
 * filtered out) and is believed, as it was before renames were facts.
 */
#define STALE_NS	1000000000ULL

struct thread {
	int32_t tid;			/* first: the tidmap's key */
	int32_t pid;			/* -1: unknown */
	int32_t ppid;			/* of the process it leads; -1: unknown */
	uint64_t cgroup;		/* 0: unknown */
	char comm[COMM_LEN + 1];
	char stale[COMM_LEN];		/* the name its last rename replaced; "": none */
	uint64_t stale_ts;		/* that rename's time */
};

/* What an event kind tells: field indexes, looked up once per event id. */
enum kind { K_NONE, K_SWITCH, K_WAKEUP, K_FORK, K_EXEC, K_EXIT, K_RENAME,
	    K_DUMP_TASK, K_DUMP_CPU };

struct event_kind {
	enum kind kind;
	int f[6];			/* field indexes, per kind below */
	int cgroup;			/* the cgroup id's field, or -1 */
	int ppid;			/* the state dump's ppid field, or -1 */
};

struct cpu_state {
	int32_t current;		/* -1: unknown */
	char idle[COMM_LEN + 1];	/* its idle task's name; "": swapper/N */
};

struct rt_threads {
	const struct rt_metadata *md;
	struct event_kind *kinds;	/* by position in md->events */
	struct cpu_state *cpus;		/* by CPU number */
	unsigned int nr_cpus;
	struct rt_tidmap map;		/* of struct thread */
	/*
	 * Facts of frames a window did not read, by time (then CPU, then
	 * their order): each applied once an item at or after it is fed.
	 */
	struct rt_fact *pending;
	size_t nr_pending, next_pending;
};

/* A field an event kind is read through, and what it must be. */
struct need {
	const char *name;
	enum rt_field_use use;
};

/*
 * Index every field of @needs, or leave the event unused: one declared
 * otherwise (a tid that is text, a comm that is an integer) is no help.
 */
static void classify(struct event_kind *k, const struct rt_event_desc *ev,
		     enum kind kind, const struct need *needs, int n)
{
	for (int i = 0; i < n; i++) {
		k->f[i] = rt_event_field(ev, needs[i].name, needs[i].use);
		if (k->f[i] < 0)
			return;
	}
	k->kind = kind;
}

#define INT(name)	{ name, RT_USE_INT }
#define TEXT(name)	{ name, RT_USE_TEXT }

/* What @ev tells about threads, into @k. */
static void classify_event(struct event_kind *k, const struct rt_event_desc *ev)
{
	static const struct need sw[] = { TEXT("prev_comm"), INT("prev_tid"),
					  TEXT("next_comm"), INT("next_tid") };
	static const struct need wk[] = { TEXT("comm"), INT("tid") };
	static const struct need fk[] = { TEXT("parent_comm"), INT("parent_tid"),
					  INT("parent_pid"), TEXT("child_comm"),
					  INT("child_tid"), INT("child_pid") };
	static const struct need ex[] = { INT("tid"), TEXT("filename") };
	static const struct need dt[] = { INT("tid"), INT("pid"), TEXT("comm") };
	static const struct need rn[] = { TEXT("newcomm"), INT("tid") };

	memset(k, 0, sizeof(*k));
	k->cgroup = k->ppid = -1;
	if (ev->unsupported)
		return;
	if (!strcmp(ev->name, "sched_switch"))
		classify(k, ev, K_SWITCH, sw, 4);
	else if (!strcmp(ev->name, "sched_wakeup") ||
		 !strcmp(ev->name, "sched_wakeup_new"))
		classify(k, ev, K_WAKEUP, wk, 2);
	else if (!strcmp(ev->name, "sched_process_fork"))
		classify(k, ev, K_FORK, fk, 6);
	else if (!strcmp(ev->name, "sched_process_exec"))
		classify(k, ev, K_EXEC, ex, 2);
	else if (!strcmp(ev->name, "sched_process_exit"))
		classify(k, ev, K_EXIT, wk, 2);
	else if (!strcmp(ev->name, "task_rename"))
		classify(k, ev, K_RENAME, rn, 2);
	else if (!strcmp(ev->name, "ringtrace_statedump_task"))
		classify(k, ev, K_DUMP_TASK, dt, 3);
	else if (!strcmp(ev->name, "ringtrace_statedump_cpu"))
		classify(k, ev, K_DUMP_CPU, dt, 3);
	/* Optional: traces from before these fields lack them. */
	if (k->kind == K_FORK)
		k->cgroup = rt_event_field(ev, "child_cgroup_id", RT_USE_INT);
	else if (k->kind == K_DUMP_TASK) {
		k->cgroup = rt_event_field(ev, "cgroup_id", RT_USE_INT);
		k->ppid = rt_event_field(ev, "ppid", RT_USE_INT);
	} else if (k->kind == K_RENAME)
		k->f[2] = rt_event_field(ev, "oldcomm", RT_USE_TEXT);
}

/* What each event of @md tells about threads, by position; NULL out of memory. */
static struct event_kind *classify_events(const struct rt_metadata *md)
{
	struct event_kind *kinds = calloc(md->nr_events ? md->nr_events : 1,
					  sizeof(*kinds));

	for (unsigned int i = 0; kinds && i < md->nr_events; i++)
		classify_event(&kinds[i], &md->events[i]);
	return kinds;
}

struct rt_threads *rt_threads_new(const struct rt_metadata *md)
{
	struct rt_threads *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->md = md;
	th->kinds = classify_events(md);
	rt_tidmap_init(&th->map, sizeof(struct thread));
	if (!th->kinds) {
		rt_threads_free(th);
		return NULL;
	}
	return th;
}

int rt_threads_set_metadata(struct rt_threads *th, const struct rt_metadata *md)
{
	struct event_kind *kinds = classify_events(md);

	if (!kinds)
		return -1;
	free(th->kinds);
	th->kinds = kinds;
	th->md = md;
	return 0;
}

void rt_threads_free(struct rt_threads *th)
{
	if (!th)
		return;
	free(th->kinds);
	free(th->cpus);
	free(th->pending);
	rt_tidmap_free(&th->map);
	free(th);
}

bool rt_threads_reads_any(const struct rt_threads *th)
{
	for (unsigned int i = 0; i < th->md->nr_events; i++)
		if (th->kinds[i].kind != K_NONE)
			return true;
	return false;
}

bool rt_threads_reads(const struct rt_threads *th, const struct rt_event_desc *ev)
{
	struct event_kind k;

	(void)th;
	classify_event(&k, ev);
	return k.kind != K_NONE;
}

/* ---- the state ---------------------------------------------------------------------- */

static struct thread *lookup(const struct rt_threads *th, int32_t tid)
{
	return tid <= 0 ? NULL : rt_tidmap_find(&th->map, tid);
}

/* The entry of @tid (not the idle task), made if new; NULL out of memory. */
static struct thread *get(struct rt_threads *th, int32_t tid)
{
	struct thread *t;
	bool created;

	if (tid <= 0)
		return NULL;
	t = rt_tidmap_get(&th->map, tid, &created);
	if (t && created)
		t->pid = t->ppid = -1;
	return t;
}

/* Per CPU up to the highest CPU number seen: at most RT_MAX_CPUS. */
static struct cpu_state *cpu_state(struct rt_threads *th, uint32_t cpu)
{
	if (cpu >= RT_MAX_CPUS)
		return NULL;
	if (cpu >= th->nr_cpus) {
		unsigned int n = cpu + 1;
		struct cpu_state *c = realloc(th->cpus, n * sizeof(*c));

		if (!c)
			return NULL;
		for (unsigned int i = th->nr_cpus; i < n; i++) {
			c[i].current = -1;
			c[i].idle[0] = '\0';
		}
		th->cpus = c;
		th->nr_cpus = n;
	}
	return &th->cpus[cpu];
}

int32_t rt_threads_current(const struct rt_threads *th, uint32_t cpu)
{
	return cpu < th->nr_cpus ? th->cpus[cpu].current : -1;
}

/*
 * Whether name fact @c of @t is the name @t's last rename replaced, read
 * before the copy: within STALE_NS of the rename (or before it, in a
 * trace whose times go back).
 */
static bool stale(const struct thread *t, const struct chunk_fact *c)
{
	return t->stale[0] && !memcmp(t->stale, c->v.comm, COMM_LEN) &&
	       (c->ts <= t->stale_ts || c->ts - t->stale_ts <= STALE_NS);
}

/* @f on the table: what every item, table and window goes through. */
static void apply(struct rt_threads *th, const struct rt_fact *f)
{
	const struct chunk_fact *c = &f->f;
	struct cpu_state *cs;
	struct thread *t, *p;

	switch (c->kind) {
	case CHUNK_FACT_COMM:
		if (c->tid == 0) {
			cs = cpu_state(th, f->cpu);
			if (cs) {
				memcpy(cs->idle, c->v.comm, COMM_LEN);
				cs->idle[COMM_LEN] = '\0';
			}
		} else if ((t = get(th, c->tid)) && !stale(t, c)) {
			memcpy(t->comm, c->v.comm, COMM_LEN);
			t->comm[COMM_LEN] = '\0';
		}
		break;
	case CHUNK_FACT_RENAME:
		if ((t = get(th, c->tid))) {
			memcpy(t->comm, c->v.comm, COMM_LEN);
			t->comm[COMM_LEN] = '\0';
			t->stale[0] = '\0';
		}
		break;
	case CHUNK_FACT_STALE:
		if ((t = get(th, c->tid))) {
			memcpy(t->stale, c->v.comm, COMM_LEN);
			t->stale_ts = c->ts;
		}
		break;
	case CHUNK_FACT_PID:
		if ((t = get(th, c->tid)))
			t->pid = c->v.id;
		break;
	case CHUNK_FACT_PPID:
		if ((t = get(th, c->tid)))
			t->ppid = c->v.id;
		break;
	case CHUNK_FACT_CGROUP:
		if ((t = get(th, c->tid)))
			t->cgroup = c->v.cgroup;
		break;
	case CHUNK_FACT_CGROUP_OF:
		/* The parent's, read now: as a fork without child_cgroup_id. */
		p = lookup(th, c->v.id);
		if (p && p->cgroup && (t = get(th, c->tid)))
			t->cgroup = p->cgroup;
		break;
	case RT_FACT_CPU_SET:
		if ((cs = cpu_state(th, f->cpu)))
			cs->current = c->tid;
		break;
	case RT_FACT_CPU_FILL:
		/* The state dump: only until the CPU's first switch says better. */
		if ((cs = cpu_state(th, f->cpu)) && cs->current < 0)
			cs->current = c->tid;
		break;
	}
}

/* ---- items into facts ------------------------------------------------------------------ */

/* rt_field_s64(), inline: an integer field (classify()), one element. */
static inline __attribute__((always_inline)) int32_t ival(const struct rt_item *it, int f)
{
	const struct rt_field_value *v = &it->fields[f];
	unsigned int bits = v->desc->bits;
	uint64_t u = rt_get_le(v->data, bits / 8);

	if (bits < 64 && (u >> (bits - 1)) & 1)
		u |= ~0ULL << bits;
	return (int32_t)u;
}

struct facts {
	struct rt_fact *v;		/* room for RT_ITEM_FACTS */
	unsigned int n;
	const struct rt_item *it;
};

static struct chunk_fact *add(struct facts *fs, uint32_t kind, int32_t tid)
{
	struct rt_fact *f = &fs->v[fs->n++];

	memset(f, 0, sizeof(*f));
	f->f.ts = fs->it->timestamp;
	f->f.kind = kind;
	f->f.tid = tid;
	f->cpu = fs->it->cpu;
	return &f->f;
}

static void add_id(struct facts *fs, uint32_t kind, int32_t tid, int32_t id)
{
	add(fs, kind, tid)->v.id = id;
}

/* A word's bytes up to its first zero one (the lowest address), zeros after: how many. */
static inline unsigned int word_upto_nul(uint64_t *w)
{
	/* Its lowest bit marks the first zero byte. */
	uint64_t z = (*w - 0x0101010101010101ULL) & ~*w & 0x8080808080808080ULL;
	unsigned int b;

	if (!z)
		return 8;
	b = (unsigned int)__builtin_ctzll(z) / 8;
	*w &= b ? ~0ULL >> (64 - 8 * b) : 0;
	return b;
}

/* @v is text (classify()): its bytes up to a NUL, COMM_LEN at most; none if empty. */
static void add_comm(struct facts *fs, int32_t tid, const struct rt_field_value *v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && COMM_LEN == 16
	/*
	 * A comm field that long (a switch's, a wakeup's): two words and
	 * the first zero byte in them, not a call per byte count.  Kept in
	 * registers (the empty asm) and stored as words: the journal reads
	 * them back as words, and a wider load over narrower stores still
	 * in flight would wait for them.
	 */
	if (v->count >= COMM_LEN) {
		uint64_t w0, w1;
		unsigned int n;
		char *c;

		memcpy(&w0, v->data, 8);
		memcpy(&w1, v->data + 8, 8);
		__asm__("" : "+r"(w0), "+r"(w1));
		n = word_upto_nul(&w0);
		if (n < 8)
			w1 = 0;
		else
			n += word_upto_nul(&w1);
		if (!n || tid < 0)
			return;
		c = add(fs, CHUNK_FACT_COMM, tid)->v.comm;
		memcpy(c, &w0, 8);
		memcpy(c + 8, &w1, 8);
		return;
	}
#endif
	size_t n = strnlen((const char *)v->data, v->count < COMM_LEN ? v->count : COMM_LEN);

	if (n && tid >= 0)
		memcpy(add(fs, CHUNK_FACT_COMM, tid)->v.comm, v->data, n);
}

/* The kernel names an exec'd task after the file's last component (15 bytes). */
static void add_exec_comm(struct facts *fs, int32_t tid, const struct rt_field_value *v)
{
	const char *s = (const char *)v->data, *base = s;
	size_t n = v->count;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			base = s + i + 1;
	n -= (size_t)(base - s);
	n = strnlen(base, n < COMM_LEN - 1 ? n : COMM_LEN - 1);
	if (n && tid >= 0)
		memcpy(add(fs, CHUNK_FACT_COMM, tid)->v.comm, base, n);
}

/*
 * A rename: the new name (a RENAME fact: what the kernel set, believed
 * whatever was seen before), then the old one, if the event has it and it
 * differs (STALE: seen again within STALE_NS, it is a switch, wakeup or
 * state dump that read the task before the copy; see the top of this file).
 */
static void add_rename(struct facts *fs, const struct event_kind *k, const struct rt_item *it)
{
	int32_t tid = ival(it, k->f[1]);
	unsigned int first = fs->n;

	add_comm(fs, tid, &it->fields[k->f[0]]);
	if (fs->n == first)
		return;
	fs->v[first].f.kind = CHUNK_FACT_RENAME;
	if (k->f[2] < 0)
		return;
	add_comm(fs, tid, &it->fields[k->f[2]]);
	if (fs->n == first + 1)
		return;
	if (!memcmp(fs->v[first + 1].f.v.comm, fs->v[first].f.v.comm, COMM_LEN))
		fs->n--;
	else
		fs->v[first + 1].f.kind = CHUNK_FACT_STALE;
}

/* What @it tells, into @fs, in the order it is to be applied. */
static void extract(const struct rt_threads *th, const struct rt_item *it,
		    struct facts *fs)
{
	const struct event_kind *k;
	int32_t tid, pid, parent;
	unsigned int first;
	size_t idx;

	fs->n = 0;
	fs->it = it;
	if (it->type == RT_ITEM_LOST) {
		/*
		 * Who ran across the gap is not known.  What is counted before
		 * the first packet has nothing before it to forget.
		 */
		if (!it->lost_first)
			add(fs, RT_FACT_CPU_SET, -1);
		return;
	}
	if (it->type != RT_ITEM_EVENT)
		return;
	idx = (size_t)(it->event - th->md->events);
	if (idx >= th->md->nr_events)
		return;
	k = &th->kinds[idx];
	switch (k->kind) {
	case K_SWITCH:
		add_comm(fs, ival(it, k->f[1]), &it->fields[k->f[0]]);
		add_comm(fs, ival(it, k->f[3]), &it->fields[k->f[2]]);
		add(fs, RT_FACT_CPU_SET, ival(it, k->f[3]));
		break;
	case K_WAKEUP:
	case K_EXIT:
		add_comm(fs, ival(it, k->f[1]), &it->fields[k->f[0]]);
		break;
	case K_RENAME:
		add_rename(fs, k, it);
		break;
	case K_FORK:
		parent = ival(it, k->f[1]);
		pid = ival(it, k->f[2]);
		add_id(fs, CHUNK_FACT_PID, parent, pid);
		add_comm(fs, parent, &it->fields[k->f[0]]);
		tid = ival(it, k->f[4]);
		add_id(fs, CHUNK_FACT_PID, tid, ival(it, k->f[5]));
		/* A new task (its tid perhaps a dead one's): its name is exact. */
		first = fs->n;
		add_comm(fs, tid, &it->fields[k->f[3]]);
		if (fs->n > first)
			fs->v[first].f.kind = CHUNK_FACT_RENAME;
		/* A new process (not CLONE_THREAD): the parent's is its parent. */
		if (ival(it, k->f[5]) != pid)
			add_id(fs, CHUNK_FACT_PPID, ival(it, k->f[5]), pid);
		if (k->cgroup < 0)
			add_id(fs, CHUNK_FACT_CGROUP_OF, tid, parent);
		else if (rt_field_u64(&it->fields[k->cgroup], 0))
			add(fs, CHUNK_FACT_CGROUP, tid)->v.cgroup =
				rt_field_u64(&it->fields[k->cgroup], 0);
		break;
	case K_EXEC:
		add_exec_comm(fs, ival(it, k->f[0]), &it->fields[k->f[1]]);
		break;
	case K_DUMP_TASK:
		tid = ival(it, k->f[0]);
		pid = ival(it, k->f[1]);
		add_id(fs, CHUNK_FACT_PID, tid, pid);
		add_comm(fs, tid, &it->fields[k->f[2]]);
		if (k->ppid >= 0 && tid == pid)
			add_id(fs, CHUNK_FACT_PPID, pid, ival(it, k->ppid));
		if (k->cgroup >= 0)
			add(fs, CHUNK_FACT_CGROUP, tid)->v.cgroup =
				rt_field_u64(&it->fields[k->cgroup], 0);
		break;
	case K_DUMP_CPU:
		tid = ival(it, k->f[0]);
		add_id(fs, CHUNK_FACT_PID, tid, ival(it, k->f[1]));
		add_comm(fs, tid, &it->fields[k->f[2]]);
		add(fs, RT_FACT_CPU_FILL, tid);
		break;
	case K_NONE:
		break;
	}
}

/* ---- facts learnt without their events: a window's ----------------------------------- */

static int fact_cmp(const void *a, const void *b)
{
	const struct rt_fact *x = a, *y = b;

	if (x->f.ts != y->f.ts)
		return x->f.ts < y->f.ts ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int rt_threads_add_facts(struct rt_threads *th, const struct rt_fact *f, size_t n)
{
	size_t left = th->nr_pending - th->next_pending;
	struct rt_fact *v;

	if (!n)
		return 0;
	v = malloc((left + n) * sizeof(*v));
	if (!v)
		return -1;
	if (left)
		memcpy(v, th->pending + th->next_pending, left * sizeof(*v));
	memcpy(v + left, f, n * sizeof(*v));
	for (size_t i = 0; i < left + n; i++)
		v[i].seq = i;
	qsort(v, left + n, sizeof(*v), fact_cmp);
	free(th->pending);
	th->pending = v;
	th->nr_pending = left + n;
	th->next_pending = 0;
	return 0;
}

/*
 * The facts due before @it: those of its time or earlier (of a lower CPU
 * at its time).  Those of its own CPU all come from frames before the
 * ones read, so they go before its items of the same time.
 */
static void catch_up(struct rt_threads *th, const struct rt_item *it)
{
	while (th->next_pending < th->nr_pending) {
		const struct rt_fact *f = &th->pending[th->next_pending];

		if (f->f.ts > it->timestamp ||
		    (f->f.ts == it->timestamp && f->cpu > it->cpu))
			break;
		apply(th, f);
		th->next_pending++;
	}
	if (th->next_pending == th->nr_pending && th->pending) {
		free(th->pending);
		th->pending = NULL;
		th->nr_pending = th->next_pending = 0;
	}
}

void rt_threads_settle(struct rt_threads *th)
{
	while (th->next_pending < th->nr_pending)
		apply(th, &th->pending[th->next_pending++]);
	free(th->pending);
	th->pending = NULL;
	th->nr_pending = th->next_pending = 0;
}

void rt_threads_feed(struct rt_threads *th, const struct rt_item *it)
{
	struct rt_fact v[RT_ITEM_FACTS];
	struct facts fs = { .v = v };

	if (th->pending)
		catch_up(th, it);
	extract(th, it, &fs);
	for (unsigned int i = 0; i < fs.n; i++)
		apply(th, &fs.v[i]);
}

unsigned int rt_threads_facts(const struct rt_threads *th, const struct rt_item *it,
			      struct rt_fact *f)
{
	struct facts fs = { .v = f };

	extract(th, it, &fs);
	return fs.n;
}

int32_t rt_threads_owner(struct rt_threads *th, const struct rt_item *it)
{
	const struct event_kind *k;
	int32_t tid;
	size_t idx;

	if (it->type != RT_ITEM_EVENT)
		return -1;
	if (th->pending)
		catch_up(th, it);
	tid = rt_threads_current(th, it->cpu);
	if (tid >= 0)
		return tid;
	/* Before the CPU said: these two tell who runs there themselves. */
	idx = (size_t)(it->event - th->md->events);
	if (idx >= th->md->nr_events)
		return -1;
	k = &th->kinds[idx];
	if (k->kind == K_SWITCH)
		return ival(it, k->f[1]);
	if (k->kind == K_DUMP_CPU)
		return ival(it, k->f[0]);
	return -1;
}

/* ---- what is known ------------------------------------------------------------------- */

const char *rt_threads_comm(const struct rt_threads *th, int32_t tid, uint32_t cpu)
{
	static __thread char idle[COMM_LEN + 1];
	const struct thread *t;

	if (tid == 0) {
		if (cpu < th->nr_cpus && th->cpus[cpu].idle[0])
			return th->cpus[cpu].idle;
		snprintf(idle, sizeof(idle), "swapper/%u", cpu);
		return idle;
	}
	t = lookup(th, tid);
	return t && t->comm[0] ? t->comm : NULL;
}

int32_t rt_threads_pid(const struct rt_threads *th, int32_t tid)
{
	const struct thread *t = lookup(th, tid);

	return tid == 0 ? 0 : t ? t->pid : -1;
}

int32_t rt_threads_ppid(const struct rt_threads *th, int32_t pid)
{
	const struct thread *t = lookup(th, pid);

	return t ? t->ppid : -1;
}

uint64_t rt_threads_cgroup(const struct rt_threads *th, int32_t tid)
{
	const struct thread *t = lookup(th, tid);

	return t ? t->cgroup : 0;
}

int32_t rt_threads_next(const struct rt_threads *th, size_t *pos)
{
	for (; *pos < th->map.cap; (*pos)++) {
		const struct thread *t = rt_tidmap_slot(&th->map, *pos);

		if (t) {
			(*pos)++;
			return t->tid;
		}
	}
	return -1;
}
