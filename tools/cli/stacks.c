// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel stacks in a trace: the kernel_stack records that ringtrace.ko
 * writes right after the event they belong to, in the same reservation
 * (module/stack.c), so that merged by time (ties by CPU) a stack is always
 * the item after its event on the same CPU.  A user_stack comes after
 * both (the event's kernel_stack, when it has one): its frames print
 * under the event as addresses.  Here: a stack's frames under
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
#include "unwind.h"

#define STACK_EVENT	"kernel_stack"
#define USTACK_EVENT	"user_stack"

const struct rt_field_value *stack_ips(const struct rt_item *it)
{
	if (it->type != RT_ITEM_EVENT || strcmp(it->event->name, STACK_EVENT))
		return NULL;
	return rt_item_field(it, "ips", RT_USE_INTS);
}

const struct rt_field_value *ustack_ips(const struct rt_item *it,
					uint16_t *flags)
{
	const struct rt_field_value *ips, *fl;

	if (it->type != RT_ITEM_EVENT || strcmp(it->event->name, USTACK_EVENT))
		return NULL;
	ips = rt_item_field(it, "ips", RT_USE_INTS);
	fl = rt_item_field(it, "flags", RT_USE_INT);
	if (flags)
		*flags = fl ? (uint16_t)rt_field_u64(fl, 0) : 0;
	return ips;
}

/* Leaf first: "    0xADDR [user]" a line, then what cut it short. */
void ustack_print(FILE *f, const struct rt_field_value *ips, uint16_t flags)
{
	static const char *const why[] = {
		"truncated at ustack_depth", "a frame unreadable",
		"32-bit task: ip only", "caller read at [sp]",
	};

	for (uint64_t i = 0; i < ips->count; i++)
		fprintf(f, "    0x%" PRIx64 " [user]\n", rt_field_u64(ips, i));
	for (unsigned int b = 0; b < 4; b++)
		if (flags & (1U << b))
			fprintf(f, "    (user stack: %s)\n", why[b]);
}

/* An unwound stack copy: as ustack_print(), then @note if there is one. */
void ucopy_print(FILE *f, const uint64_t *ips, unsigned int n, uint16_t flags,
		 const char *note)
{
	for (unsigned int i = 0; i < n; i++)
		fprintf(f, "    0x%" PRIx64 " [user]\n", ips[i]);
	if (flags & RINGTRACE_USTACK_COMPAT)
		fprintf(f, "    (user stack: 32-bit task, not unwound)\n");
	else if (note)
		fprintf(f, "    (user stack: %s%s)\n", note,
			flags & RINGTRACE_USTACK_FAULT ?
			"; the copy ended at an unreadable page" : "");
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

/* @key's entry (a new one of weight 0), or NULL out of memory. */
static struct fold *folds_find(struct folds *m, const char *key)
{
	size_t i;

	if (2 * (m->used + 1) > m->cap) {
		struct folds n = { calloc(m->cap ? 2 * m->cap : 256, sizeof(struct fold)),
				   m->cap ? 2 * m->cap : 256, 0 };

		if (!n.slots)
			return NULL;
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
		return NULL;
	m->used++;
	return &m->slots[i];
}

static struct fold *folds_get(struct folds *m, const char *key)
{
	struct fold *f = folds_find(m, key);

	if (!f)
		die("out of memory");
	return f;
}

static void folds_free(struct folds *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
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
	comm = rt_threads_comm(th, owner, it->cpu);
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
		else if (ustack_ips(it, NULL) || ucopy_get(it, NULL))
			;	/* not folded yet: after its event, owns nothing */
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

/* ---- stacks for the exporters ------------------------------------------- */

struct stack_tree {
	const struct rt_trace *t;
	struct ksyms *ks;
	bool ks_read;			/* on the first stack */
	struct stack_owner *last;	/* by CPU number */
	struct folds frame_ids;		/* "name\tmodule" -> frame id */
	struct folds node_ids;		/* "parent frame" -> node id */
	struct stack_frame *frames;	/* [id - 1] */
	struct stack_node *nodes;	/* [id - 1] */
	uint32_t nr_frames, nr_nodes;
	size_t frames_cap, nodes_cap;
};

struct stack_tree *stack_tree_new(const struct rt_trace *t)
{
	struct stack_tree *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->t = t;
	st->last = calloc(RT_MAX_CPUS, sizeof(*st->last));
	if (!st->last) {
		free(st);
		return NULL;
	}
	return st;
}

void stack_tree_free(struct stack_tree *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; i < st->nr_frames; i++)
		if (st->frames[i].owned)
			free((char *)st->frames[i].name);
	free(st->frames);
	free(st->nodes);
	folds_free(&st->frame_ids);
	folds_free(&st->node_ids);
	free(st->last);
	ksyms_free(st->ks);
	free(st);
}

void stack_tree_event(struct stack_tree *st, const struct rt_item *it,
		      int32_t tid)
{
	const struct rt_field_value *prev;

	if (it->type != RT_ITEM_EVENT || it->cpu >= RT_MAX_CPUS)
		return;
	/*
	 * A switch's stack is its prev's, as report --folded has it, even
	 * where the CPU's thread as followed disagrees (events lost).
	 */
	if (!strcmp(it->event->name, "sched_switch") &&
	    (prev = rt_item_field(it, "prev_tid", RT_USE_INT)))
		tid = (int32_t)rt_field_s64(prev, 0);
	st->last[it->cpu] = (struct stack_owner){
		.event = it->event, .timestamp = it->timestamp, .tid = tid,
	};
}

const struct stack_owner *stack_tree_owner(const struct stack_tree *st,
					   const struct rt_item *stack)
{
	const struct stack_owner *o;

	if (stack->cpu >= RT_MAX_CPUS)
		return NULL;
	o = &st->last[stack->cpu];
	/* None: its event was lost with a packet, or left the merge. */
	if (!o->event || o->timestamp != stack->timestamp)
		return NULL;
	return o;
}

/* @ip's frame id: its function's (or its address's, with no symbol); 0 out of memory. */
static uint32_t frame_id(struct stack_tree *st, uint64_t ip)
{
	struct ksym_frame f;
	struct stack_frame *sf;
	struct fold *e;
	char addr[24], *key;
	const char *name, *mod;

	ksyms_lookup(st->ks, ip, &f);
	snprintf(addr, sizeof(addr), "0x%" PRIx64, ip);
	name = f.name ? f.name : addr;
	mod = f.module ? f.module : "";
	key = malloc(strlen(name) + strlen(mod) + 2);
	if (!key)
		return 0;
	sprintf(key, "%s\t%s", name, mod);
	e = folds_find(&st->frame_ids, key);
	free(key);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	if (st->nr_frames == st->frames_cap) {
		size_t cap = st->frames_cap ? 2 * st->frames_cap : 256;
		struct stack_frame *p = realloc(st->frames, cap * sizeof(*p));

		if (!p)
			return 0;
		st->frames = p;
		st->frames_cap = cap;
	}
	sf = &st->frames[st->nr_frames];
	*sf = (struct stack_frame){
		.name = f.name, .module = f.module, .start = f.start,
	};
	if (!f.name) {
		sf->name = strdup(addr);
		sf->owned = true;
		if (!sf->name)
			return 0;
	}
	e->weight = ++st->nr_frames;
	return st->nr_frames;
}

/* The node of @frame under @parent; 0 out of memory. */
static uint32_t node_id(struct stack_tree *st, uint32_t parent, uint32_t frame)
{
	struct fold *e;
	char key[24];

	snprintf(key, sizeof(key), "%" PRIx32 " %" PRIx32, parent, frame);
	e = folds_find(&st->node_ids, key);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	if (st->nr_nodes == st->nodes_cap) {
		size_t cap = st->nodes_cap ? 2 * st->nodes_cap : 256;
		struct stack_node *p = realloc(st->nodes, cap * sizeof(*p));

		if (!p)
			return 0;
		st->nodes = p;
		st->nodes_cap = cap;
	}
	st->nodes[st->nr_nodes] = (struct stack_node){
		.parent = parent, .frame = frame,
		.depth = parent ? st->nodes[parent - 1].depth + 1 : 0,
	};
	e->weight = ++st->nr_nodes;
	return st->nr_nodes;
}

int64_t stack_tree_add(struct stack_tree *st, const struct rt_field_value *ips)
{
	uint32_t node = 0;

	if (!st->ks_read)
		st->ks = stack_symbols(st->t->dir);
	st->ks_read = true;
	/* Recorded leaf first: the tree grows from the outermost caller. */
	for (uint64_t i = ips->count; i-- > 0;) {
		uint32_t frame = frame_id(st, rt_field_u64(ips, i));

		if (!frame || !(node = node_id(st, node, frame)))
			return -1;
	}
	return node;
}

uint32_t stack_tree_nodes(const struct stack_tree *st)
{
	return st->nr_nodes;
}

uint32_t stack_tree_frames(const struct stack_tree *st)
{
	return st->nr_frames;
}

const struct stack_node *stack_tree_node(const struct stack_tree *st, uint32_t id)
{
	return id && id <= st->nr_nodes ? &st->nodes[id - 1] : NULL;
}

const struct stack_frame *stack_tree_frame(const struct stack_tree *st, uint32_t id)
{
	return id && id <= st->nr_frames ? &st->frames[id - 1] : NULL;
}
