// SPDX-License-Identifier: GPL-2.0
/*
 * Who did it: the thread each event belongs to, and thread names.
 *
 * ringtrace's events carry no thread id (Documentation/ringtrace/events.rst):
 * the task running on a CPU is the next_tid of that CPU's last
 * sched_switch, and before the first one the tid of the CPU's
 * ringtrace_statedump_cpu.  Names and thread groups come from the state
 * dump, then from fork, exec, task_rename (prctl(PR_SET_NAME), a write to
 * /proc/PID/comm) and the comm fields of switches and wakeups.  A thread's
 * cgroup v2 id comes from the state dump's cgroup_id and the fork's
 * child_cgroup_id (a trace from before those fields: the parent's); a
 * move to another cgroup later is not an event and is not seen.
 * Events in interrupt context belong to the task they interrupted, as in
 * ftrace.  Fed every event in time order (report, export), this keeps:
 *
 *   - per CPU, the tid running now (-1 until a switch or the dump says);
 *   - per tid, its pid (thread group), comm and cgroup, in an open-addressing hash
 *     table that grows with the number of threads, not of events.
 */
#include <stdlib.h>
#include <string.h>

#include "rtdecode.h"

#define COMM_LEN	16

struct thread {
	int32_t tid;			/* first: the tidmap's key */
	int32_t pid;
	uint64_t cgroup;		/* 0: unknown */
	char comm[COMM_LEN + 1];
};

/* What an event kind tells: field indexes, looked up once per event id. */
enum kind { K_NONE, K_SWITCH, K_WAKEUP, K_FORK, K_EXEC, K_EXIT, K_RENAME,
	    K_DUMP_TASK, K_DUMP_CPU };

struct event_kind {
	enum kind kind;
	int f[6];			/* field indexes, per kind below */
	int cgroup;			/* the cgroup id's field, or -1 */
};

struct rt_threads {
	const struct rt_metadata *md;
	struct event_kind *kinds;	/* by position in md->events */
	int32_t *current;		/* per CPU */
	unsigned int nr_cpus;
	struct rt_tidmap map;		/* of struct thread */
	struct thread idle;		/* tid 0: swapper, named here */
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

/* What each event of @md tells about threads, by position; NULL out of memory. */
static struct event_kind *classify_events(const struct rt_metadata *md)
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
	struct event_kind *kinds = calloc(md->nr_events ? md->nr_events : 1,
					  sizeof(*kinds));

	for (unsigned int i = 0; kinds && i < md->nr_events; i++) {
		const struct rt_event_desc *ev = &md->events[i];
		struct event_kind *k = &kinds[i];

		k->cgroup = -1;
		if (ev->unsupported)
			continue;
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
		else if (k->kind == K_DUMP_TASK)
			k->cgroup = rt_event_field(ev, "cgroup_id", RT_USE_INT);
	}
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
	th->idle.tid = 0;
	th->idle.pid = 0;
	strcpy(th->idle.comm, "swapper");
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
	free(th->current);
	rt_tidmap_free(&th->map);
	free(th);
}

static struct thread *lookup(const struct rt_threads *th, int32_t tid)
{
	if (tid == 0)
		return (struct thread *)&th->idle;
	return tid < 0 ? NULL : rt_tidmap_find(&th->map, tid);
}

/* The entry of @tid, made if new (pid unknown: -1); NULL out of memory. */
static struct thread *get(struct rt_threads *th, int32_t tid)
{
	struct thread *t;
	bool created;

	if (tid == 0)
		return &th->idle;
	if (tid < 0)
		return NULL;
	t = rt_tidmap_get(&th->map, tid, &created);
	if (t && created)
		t->pid = -1;
	return t;
}

/* @v is text (classify()): count bytes. */
static void set_comm(struct thread *t, const struct rt_field_value *v)
{
	size_t n;

	if (!t)
		return;
	n = strnlen((const char *)v->data, v->count < COMM_LEN ? v->count : COMM_LEN);
	if (!n)
		return;
	memcpy(t->comm, v->data, n);
	t->comm[n] = '\0';
}

static int32_t ival(const struct rt_item *it, int f)
{
	return (int32_t)rt_field_s64(&it->fields[f], 0);
}

/* Per CPU up to the highest CPU number seen: at most RT_MAX_CPUS. */
static void set_current(struct rt_threads *th, uint32_t cpu, int32_t tid)
{
	if (cpu >= RT_MAX_CPUS)
		return;
	if (cpu >= th->nr_cpus) {
		unsigned int n = cpu + 1;
		int32_t *cur = realloc(th->current, n * sizeof(*cur));

		if (!cur)
			return;
		for (unsigned int i = th->nr_cpus; i < n; i++)
			cur[i] = -1;
		th->current = cur;
		th->nr_cpus = n;
	}
	th->current[cpu] = tid;
}

int32_t rt_threads_current(const struct rt_threads *th, uint32_t cpu)
{
	return cpu < th->nr_cpus ? th->current[cpu] : -1;
}

void rt_threads_feed(struct rt_threads *th, const struct rt_item *it)
{
	const struct event_kind *k;
	struct thread *t;
	size_t idx;

	if (it->type != RT_ITEM_EVENT)
		return;
	idx = (size_t)(it->event - th->md->events);
	if (idx >= th->md->nr_events)
		return;
	k = &th->kinds[idx];
	switch (k->kind) {
	case K_SWITCH:
		set_comm(get(th, ival(it, k->f[1])), &it->fields[k->f[0]]);
		set_comm(get(th, ival(it, k->f[3])), &it->fields[k->f[2]]);
		set_current(th, it->cpu, ival(it, k->f[3]));
		break;
	case K_WAKEUP:
	case K_EXIT:
	case K_RENAME:
		set_comm(get(th, ival(it, k->f[1])), &it->fields[k->f[0]]);
		break;
	case K_FORK: {
		uint64_t cgroup;

		t = get(th, ival(it, k->f[1]));
		if (t)
			t->pid = ival(it, k->f[2]);
		set_comm(t, &it->fields[k->f[0]]);
		cgroup = t ? t->cgroup : 0;
		t = get(th, ival(it, k->f[4]));
		if (t)
			t->pid = ival(it, k->f[5]);
		set_comm(t, &it->fields[k->f[3]]);
		if (k->cgroup >= 0)
			cgroup = rt_field_u64(&it->fields[k->cgroup], 0);
		if (t && cgroup)
			t->cgroup = cgroup;
		break;
	}
	case K_EXEC: {
		/* The kernel names the task after the file's last component. */
		const struct rt_field_value *v = &it->fields[k->f[1]];
		const char *s = (const char *)v->data, *base = s;
		size_t n = v->count;

		t = get(th, ival(it, k->f[0]));
		for (size_t i = 0; i < n; i++)
			if (s[i] == '/')
				base = s + i + 1;
		n -= (size_t)(base - s);
		if (t && n) {
			n = n < COMM_LEN - 1 ? n : COMM_LEN - 1;
			memcpy(t->comm, base, n);
			t->comm[n] = '\0';
		}
		break;
	}
	case K_DUMP_TASK:
		t = get(th, ival(it, k->f[0]));
		if (t)
			t->pid = ival(it, k->f[1]);
		set_comm(t, &it->fields[k->f[2]]);
		if (t && k->cgroup >= 0)
			t->cgroup = rt_field_u64(&it->fields[k->cgroup], 0);
		break;
	case K_DUMP_CPU:
		t = get(th, ival(it, k->f[0]));
		if (t)
			t->pid = ival(it, k->f[1]);
		set_comm(t, &it->fields[k->f[2]]);
		/* Only until the CPU's first switch says better. */
		if (rt_threads_current(th, it->cpu) < 0)
			set_current(th, it->cpu, ival(it, k->f[0]));
		break;
	case K_NONE:
		break;
	}
}

bool rt_threads_switches(const struct rt_threads *th, const struct rt_item *it)
{
	size_t idx;

	if (it->type != RT_ITEM_EVENT)
		return false;
	idx = (size_t)(it->event - th->md->events);
	return idx < th->md->nr_events && th->kinds[idx].kind == K_SWITCH;
}

bool rt_threads_reads_switches(const struct rt_threads *th)
{
	for (unsigned int i = 0; i < th->md->nr_events; i++)
		if (th->kinds[i].kind == K_SWITCH)
			return true;
	return false;
}

int32_t rt_threads_owner(const struct rt_threads *th, const struct rt_item *it)
{
	int32_t tid = it->type == RT_ITEM_EVENT ?
		      rt_threads_current(th, it->cpu) : -1;
	const struct event_kind *k;
	size_t idx;

	if (tid >= 0 || it->type != RT_ITEM_EVENT)
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

const char *rt_threads_comm(const struct rt_threads *th, int32_t tid)
{
	const struct thread *t = lookup(th, tid);

	return t && t->comm[0] ? t->comm : NULL;
}

int32_t rt_threads_pid(const struct rt_threads *th, int32_t tid)
{
	const struct thread *t = lookup(th, tid);

	return t ? t->pid : -1;
}

uint64_t rt_threads_cgroup(const struct rt_threads *th, int32_t tid)
{
	const struct thread *t = lookup(th, tid);

	return t ? t->cgroup : 0;
}
