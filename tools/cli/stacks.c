// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel stacks in a trace: the kernel_stack records that ringtrace.ko
 * writes right after the event they belong to, in the same reservation
 * (module/stack.c), so that merged by time (ties by CPU) a stack is always
 * the item after its event on the same CPU.  Here: a stack's frames under
 * its event (report), and stacks folded for flame graphs (report
 * --folded), counted or, with --off-cpu, weighted by the time their
 * thread then spent off the CPU.  Frames are named from the symbols the
 * trace keeps (lib/ksyms.h), never from the running kernel.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define STACK_EVENT	"kernel_stack"

const struct rt_field_value *stack_ips(const struct rt_item *it)
{
	if (it->type != RT_ITEM_EVENT || strcmp(it->event->name, STACK_EVENT))
		return NULL;
	return rt_item_field(it, "ips", RT_USE_INTS);
}

struct ksyms *stack_symbols(const char *dir)
{
	struct ksyms *ks = NULL;
	char why[512];
	int err = ksyms_load(dir, &ks, why, sizeof(why));

	if (err == -ENOENT)
		warn("%s has no kernel symbols (" KSYMS_FILE "): frames print as addresses",
		     dir);
	else if (err)
		warn("%s: frames print as addresses", why);
	return ks;
}

/* Leaf first, as recorded: "    function+0xoff [module]" a line. */
void stack_print(FILE *f, const struct ksyms *ks, const struct rt_field_value *ips)
{
	char frame[512];

	for (uint64_t i = 0; i < ips->count; i++) {
		ksyms_format(ks, rt_field_u64(ips, i), frame, sizeof(frame));
		fprintf(f, "    %s\n", frame);
	}
}

/* ---- folded stacks ------------------------------------------------------- */

/*
 * Folded stack -> weight, open addressing (FNV-1a).  Written here: libc's
 * hsearch() keeps one global table that cannot be iterated or freed entry
 * by entry, and the CLI links no container library for this one map.
 */
struct fold {
	char *key;
	uint64_t weight;
};

struct folds {
	struct fold *slots;
	size_t cap, used;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct fold *folds_get(struct folds *m, const char *key)
{
	size_t i;

	if (2 * (m->used + 1) > m->cap) {
		struct folds n = { calloc(m->cap ? 2 * m->cap : 256, sizeof(struct fold)),
				   m->cap ? 2 * m->cap : 256, 0 };

		if (!n.slots)
			die("out of memory");
		for (i = 0; i < m->cap; i++) {
			size_t j;

			if (!m->slots[i].key)
				continue;
			for (j = hash_str(m->slots[i].key) & (n.cap - 1);
			     n.slots[j].key; j = (j + 1) & (n.cap - 1))
				;
			n.slots[j] = m->slots[i];
			n.used++;
		}
		free(m->slots);
		*m = n;
	}
	for (i = hash_str(key) & (m->cap - 1); m->slots[i].key;
	     i = (i + 1) & (m->cap - 1))
		if (!strcmp(m->slots[i].key, key))
			return &m->slots[i];
	m->slots[i].key = strdup(key);
	if (!m->slots[i].key)
		die("out of memory");
	m->used++;
	return &m->slots[i];
}

static int cmp_fold(const void *a, const void *b)
{
	const struct fold *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static void folds_print_free(struct folds *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			m->slots[n++] = m->slots[i];
	if (n)
		qsort(m->slots, n, sizeof(*m->slots), cmp_fold);
	for (size_t i = 0; i < n; i++) {
		if (m->slots[i].weight)
			printf("%s %" PRIu64 "\n", m->slots[i].key,
			       m->slots[i].weight);
		free(m->slots[i].key);
	}
	free(m->slots);
}

/* "comm;root;...;leaf": frames by name, "function [module]" in a module. */
static char *fold_key(const char *comm, const struct ksyms *ks,
		      const struct rt_field_value *ips)
{
	size_t len = strlen(comm) + 1, cap = len + 64 * ips->count + 1;
	char *key = malloc(cap), frame[320];
	struct ksym_frame f;

	if (!key)
		die("out of memory");
	memcpy(key, comm, len);
	/* No ';' in a frame or the comm: it separates them. */
	for (char *c = key; *c; c++)
		if (*c == ';' || *c == ' ')
			*c = '_';
	for (uint64_t i = ips->count; i-- > 0;) {
		uint64_t ip = rt_field_u64(ips, i);
		size_t n;

		ksyms_lookup(ks, ip, &f);
		if (!f.name)
			n = (size_t)snprintf(frame, sizeof(frame), ";0x%" PRIx64, ip);
		else if (f.module)
			n = (size_t)snprintf(frame, sizeof(frame), ";%s [%s]",
					     f.name, f.module);
		else
			n = (size_t)snprintf(frame, sizeof(frame), ";%s", f.name);
		n = n < sizeof(frame) ? n : sizeof(frame) - 1;
		if (len + n + 1 > cap) {
			cap = 2 * (len + n + 1);
			key = realloc(key, cap);
			if (!key)
				die("out of memory");
		}
		memcpy(key + len - 1, frame, n + 1);
		len += n;
	}
	return key;
}

/* A thread switched out with a stack: where it waits, since when. */
struct offcpu {
	int32_t tid;			/* first: the tidmap's key */
	uint64_t since;			/* clock cycles */
	char *key;			/* folded stack, or NULL */
};

/* The last event of a CPU, for the stack that may follow it. */
struct last_event {
	bool is_switch;
	int32_t tid;			/* the thread it belongs to (switch: prev) */
	char comm[32];
	uint64_t ts;
};

struct fold_state {
	const struct rt_trace *t;
	const char *dir;
	struct ksyms *ks;
	bool ks_read;			/* on the first stack */
	bool off_cpu;
	struct folds folds;
	struct rt_tidmap waiting;	/* struct offcpu by tid */
	struct last_event *last;	/* by CPU number */
};

static void fold_event(struct fold_state *s, const struct rt_item *it,
		       const struct rt_threads *th, int32_t owner)
{
	struct last_event *l = &s->last[it->cpu];
	const struct rt_field_value *prev, *next, *pcomm;
	const char *comm;

	l->is_switch = !strcmp(it->event->name, "sched_switch");
	l->tid = owner;
	l->ts = it->timestamp;
	comm = rt_threads_comm(th, owner);
	snprintf(l->comm, sizeof(l->comm), "%s", comm ? comm : "<...>");
	if (!l->is_switch)
		return;
	prev = rt_item_field(it, "prev_tid", RT_USE_INT);
	next = rt_item_field(it, "next_tid", RT_USE_INT);
	pcomm = rt_item_field(it, "prev_comm", RT_USE_TEXT);
	if (!prev || !next) {
		l->is_switch = false;
		return;
	}
	l->tid = (int32_t)rt_field_s64(prev, 0);
	if (pcomm) {
		size_t n = pcomm->count < sizeof(l->comm) - 1 ?
			   pcomm->count : sizeof(l->comm) - 1;

		memcpy(l->comm, pcomm->data, n);
		l->comm[n] = '\0';
		l->comm[strnlen(l->comm, n)] = '\0';
	}
	if (s->off_cpu) {
		/* The thread switched in stops waiting: weigh its stack. */
		struct offcpu *w = rt_tidmap_find(&s->waiting,
						  (int32_t)rt_field_s64(next, 0));
		double ns;

		if (w && w->key) {
			ns = (double)(it->timestamp - w->since) * 1e9 /
			     (double)s->t->md->clock_freq;
			folds_get(&s->folds, w->key)->weight += (uint64_t)ns;
			free(w->key);
			w->key = NULL;
		}
	}
}

static void fold_stack(struct fold_state *s, const struct rt_item *it,
		       const struct rt_field_value *ips)
{
	struct last_event *l = &s->last[it->cpu];
	struct offcpu *w;
	bool created;
	char *key;

	/* A stack of no known event (its event was lost with a packet). */
	if (l->ts != it->timestamp || (s->off_cpu && !l->is_switch))
		return;
	if (!s->ks_read)
		s->ks = stack_symbols(s->dir);
	s->ks_read = true;
	key = fold_key(l->comm, s->ks, ips);
	if (!s->off_cpu) {
		folds_get(&s->folds, key)->weight++;
		free(key);
		return;
	}
	/* The idle task does not wait for anything. */
	if (l->tid <= 0) {
		free(key);
		return;
	}
	w = rt_tidmap_get(&s->waiting, l->tid, &created);
	if (!w)
		die("out of memory");
	free(w->key);
	w->key = key;
	w->since = it->timestamp;
}

int folded_report(const char *dir, bool off_cpu, bool strict)
{
	struct fold_state s = { .dir = dir, .off_cpu = off_cpu };
	const struct rt_item *it;
	struct rt_threads *th;
	struct rt_trace *t;
	const char *error;
	struct merge *m;
	int status;

	t = open_trace(dir, strict);
	if (!t)
		return 1;
	s.t = t;
	s.last = calloc(RT_MAX_CPUS, sizeof(*s.last));
	th = rt_threads_new(t->md);
	if (!s.last || !th)
		die("out of memory");
	rt_tidmap_init(&s.waiting, sizeof(struct offcpu));

	m = merge_open(t, false);
	while ((it = merge_next(m))) {
		const struct rt_field_value *ips = stack_ips(it);

		if (ips)
			fold_stack(&s, it, ips);
		else if (it->type == RT_ITEM_EVENT)
			fold_event(&s, it, th, rt_threads_owner(th, it));
		rt_threads_feed(th, it);
	}
	error = merge_error(m);
	/* Threads still waiting at the end: no end, no weight. */
	for (size_t i = 0; i < s.waiting.cap; i++) {
		struct offcpu *w = rt_tidmap_slot(&s.waiting, i);

		if (w)
			free(w->key);
	}
	folds_print_free(&s.folds);
	status = print_end(t, error);
	merge_close(m);
	rt_tidmap_free(&s.waiting);
	free(s.last);
	ksyms_free(s.ks);
	rt_threads_free(th);
	rt_trace_close(t);
	return status;
}
