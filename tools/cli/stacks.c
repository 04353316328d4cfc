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
 * thread then spent off the CPU.  An event's user stack (user_stack,
 * after its kernel stack) is joined to it (tools/lib/stackrec.h); user
 * frames are named through the trace's mappings (tools/lib/umaps.h) and
 * its symbol store (usymbols.h).  Frames are named from what the trace
 * keeps (lib/ksyms.h, lib/usyms.h), never from the running machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cli.h"
#include "../../lib/usyms.h"
#include "usymbols.h"
#include "unwind.h"

#define STACK_EVENT	"kernel_stack"
#define USTACK_EVENT	"user_stack"

const struct rt_field_value *stack_ips(const struct rt_item *it)
{
	if (it->type != RT_ITEM_EVENT || strcmp(it->event->name, STACK_EVENT))
		return NULL;
	return rt_item_field(it, "ips", RT_USE_INTS);
}

void stack_lost_warn(const struct stackrec *sr)
{
	uint64_t n = sr ? stackrec_lost(sr) : 0;

	if (n)
		warn("%" PRIu64 " stacks lost: their stack_ref named no stack_def of its packet (damage)",
		     n);
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

/* What a user stack's flags (RINGTRACE_USTACK_*) say, a line each. */
static void ustack_notes(FILE *f, uint16_t flags)
{
	static const char *const why[] = {
		"truncated at ustack_depth", "a frame unreadable",
		"32-bit task: ip only", "caller read at [sp]",
	};

	for (unsigned int b = 0; b < sizeof(why) / sizeof(why[0]); b++)
		if (flags & (1U << b))
			fprintf(f, "    (user stack: %s)\n", why[b]);
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

/* ---- strings -> weights ------------------------------------------------- */

/*
 * String -> weight (a folded stack's count, a function's or a node's
 * id), open addressing (XXH3).  Written here: libc's hsearch() keeps one
 * global table that cannot be iterated or freed entry by entry, and the
 * CLI links no container library for these maps.
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
	return XXH3_64bits(s, strlen(s));
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

/* folds_find() of the key printed from @fmt; NULL out of memory. */
__attribute__((format(printf, 2, 3)))
static struct fold *folds_findf(struct folds *m, const char *fmt, ...)
{
	struct fold *f;
	va_list ap;
	char *key;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&key, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	f = folds_find(m, key);
	free(key);
	return f;
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

/* ---- naming a pair's frames ---------------------------------------------- */

struct stack_names {
	const char *dir;
	struct ksyms *ks;
	bool ks_read;			/* on the first kernel frame */
	struct usym_store *us;		/* opens binaries on the first user frame */
	const struct umaps *um;
	const char *bindir;		/* report --binaries, or NULL */
	struct unwinder *uw;		/* made on the first stack copy */
	struct stack_pair unwound;	/* a pair with its copy unwound */
	uint64_t uips[RINGTRACE_USTACK_MAX_DEPTH];
	/* The scheduler's text, [start, end) each (stack_blocked_function()). */
	bool sched_read;
	uint64_t sched[2][2];
	unsigned int nr_sched;
};

struct stack_names *stack_names_new(const char *dir, const char *bindir,
				    const struct umaps *um)
{
	struct stack_names *n = calloc(1, sizeof(*n));

	if (!n || !(n->us = usym_store_new(dir)))
		die("out of memory");
	n->dir = dir;
	n->bindir = bindir;
	n->um = um;
	return n;
}

void stack_names_free(struct stack_names *n)
{
	if (!n)
		return;
	ksyms_free(n->ks);
	unwinder_free(n->uw);		/* before the store it shares */
	usym_store_free(n->us);
	free(n);
}

/*
 * @p, or, when it holds a user stack copy, @p with the copy unwound
 * (unwind.h) as its user stack, valid until the next call: the frames
 * with the mappings @pid has now, and the unwinder's note.  A 32-bit
 * task's copy is its ip alone.
 */
static const struct stack_pair *unwound(struct stack_names *n,
					const struct stack_pair *p, int32_t pid)
{
	const char *note = NULL;
	char why[512];
	unsigned int nr = 1;

	if (!p->copy.present)
		return p;
	if (!n->uw) {
		n->uw = unwinder_new(n->us, n->bindir, why, sizeof(why));
		if (!n->uw)
			die("--binaries %s", why);
	}
	n->unwound = *p;
	if (p->copy.flags & USTACK_COMPAT) {
		n->uips[0] = p->copy.ip;
		note = "32-bit task, not unwound";
	} else {
		nr = unwind_copy(n->uw, &p->copy, pid, n->um, n->uips,
				 RINGTRACE_USTACK_MAX_DEPTH, &note);
	}
	n->unwound.user = (struct stack_ips){
		.present = true, .nr = nr, .ips = n->uips,
	};
	n->unwound.user_note = note;
	return &n->unwound;
}

/* The kernel's symbols, read on the first kernel frame. */
static const struct ksyms *kernel_syms(struct stack_names *n)
{
	if (!n->ks_read)
		n->ks = stack_symbols(n->dir);
	n->ks_read = true;
	return n->ks;
}

/* Kernel frame @ip as @style says (usymbols.h): true when named. */
static bool kernel_frame(struct stack_names *n, uint64_t ip, enum usym_style style,
			 char *buf, size_t size)
{
	struct ksym_frame f;

	if (style == USYM_LINE) {
		ksyms_format(kernel_syms(n), ip, buf, size);
		return true;
	}
	ksyms_lookup(kernel_syms(n), ip, &f);
	if (!f.name)
		snprintf(buf, size, "0x%" PRIx64, ip);
	else if (style == USYM_NAME)
		snprintf(buf, size, "%s [%s]", f.name, f.module ? f.module : "vmlinux");
	else if (f.module)
		snprintf(buf, size, "%s [%s]", f.name, f.module);
	else
		snprintf(buf, size, "%s", f.name);
	return f.name != NULL;
}

void stack_pair_print(FILE *f, struct stack_names *n, const struct stack_pair *p,
		      int32_t pid)
{
	char frame[512];

	p = unwound(n, p, pid);
	for (uint32_t i = 0; p->kernel.present && i < p->kernel.nr; i++) {
		kernel_frame(n, p->kernel.ips[i], USYM_LINE, frame, sizeof(frame));
		fprintf(f, "    %s\n", frame);
	}
	for (uint32_t i = 0; p->user.present && i < p->user.nr; i++) {
		usym_format(n->us, n->um, pid, p->user.ips[i], USYM_LINE, frame,
			    sizeof(frame));
		fprintf(f, "    %s\n", frame);
	}
	if (p->copy.present) {
		/* A copy's unwind that ended early, and why. */
		if (p->user_note)
			fprintf(f, "    (user stack: %s%s)\n", p->user_note,
				p->user_flags & USTACK_FAULT ?
				"; the copy ended at an unreadable page" : "");
	} else if (p->user.present) {
		ustack_notes(f, p->user_flags);
	}
}

/* ---- frames one by one (ringtrace sql) ------------------------------------ */

unsigned int stack_pair_frames(struct stack_names *n, const struct stack_pair *p,
			       int32_t pid, stack_frame_fn fn, void *arg)
{
	char symbol[512], name[512];
	struct named_frame f;
	struct ksym_frame k;
	struct umap_hit h;
	unsigned int nr = 0;

	p = unwound(n, p, pid);
	for (uint32_t i = 0; p->kernel.present && i < p->kernel.nr; i++, nr++) {
		uint64_t ip = p->kernel.ips[i];

		memset(&f, 0, sizeof(f));
		f.ip = ip;
		/* The name top_fns_add() counts it under, by the same call. */
		if (kernel_frame(n, ip, USYM_NAME, symbol, sizeof(symbol)))
			f.symbol = symbol;
		ksyms_lookup(kernel_syms(n), ip, &k);
		f.name = k.name;
		f.module = k.name ? (k.module ? k.module : "vmlinux") : NULL;
		f.rel_pc = k.name ? k.start + k.offset : ip;
		fn(arg, &f);
	}
	for (uint32_t i = 0; p->user.present && i < p->user.nr; i++, nr++) {
		uint64_t ip = p->user.ips[i];

		memset(&f, 0, sizeof(f));
		f.user = true;
		f.ip = ip;
		f.rel_pc = ip;
		if (usym_format(n->us, n->um, pid, ip, USYM_NAME, symbol, sizeof(symbol)))
			f.symbol = symbol;
		if (usym_format(n->us, n->um, pid, ip, USYM_FOLDED, name, sizeof(name)))
			f.name = name;
		if (umaps_lookup(n->um, pid, ip, &h)) {
			f.module = h.path;
			f.build_id = h.build_id;
			f.build_id_len = h.build_id ? h.build_id_len : 0;
			f.rel_pc = h.file_off;
		}
		fn(arg, &f);
	}
	return nr;
}

/*
 * Scheduler functions by name, for a trace whose symbols lack the
 * sections' bounds: the entry points into schedule() a kernel stack
 * taken at sched_switch passes through.
 */
static bool sched_name(const char *name)
{
	static const char *const prefix[] = {
		"__schedule", "schedule", "io_schedule", "preempt_schedule",
		"__cond_resched", "_cond_resched",
	};

	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

const char *stack_blocked_function(struct stack_names *n, const struct stack_ips *k,
				   char *buf, size_t size)
{
	static const char *const bounds[][2] = {
		{ "__sched_text_start", "__sched_text_end" },
		{ "__lock_text_start", "__lock_text_end" },
	};
	const struct ksyms *ks = kernel_syms(n);

	if (!n->sched_read) {
		n->sched_read = true;
		for (size_t i = 0; i < 2; i++)
			if (ksyms_addr(ks, bounds[i][0], &n->sched[n->nr_sched][0]) &&
			    ksyms_addr(ks, bounds[i][1], &n->sched[n->nr_sched][1]))
				n->nr_sched++;
	}
	for (uint32_t i = 0, in_sched = 0; k->present && i < k->nr; i++) {
		uint64_t ip = k->ips[i];
		struct ksym_frame f;
		bool sched = false;

		ksyms_lookup(ks, ip, &f);
		/* in_sched_functions(), as the kernel's __get_wchan() asks it. */
		for (unsigned int s = 0; s < n->nr_sched; s++)
			sched |= ip >= n->sched[s][0] && ip < n->sched[s][1];
		if (!n->nr_sched && f.name)
			sched = sched_name(f.name);
		/*
		 * The frames before the scheduler's are the tracepoint's and
		 * the probe's (a walk from the probe itself): the switch's
		 * task had not left them.
		 */
		in_sched |= sched;
		if (sched || !in_sched)
			continue;
		if (f.name)
			snprintf(buf, size, "%s", f.name);
		else
			snprintf(buf, size, "0x%" PRIx64, ip);
		return buf;
	}
	return NULL;
}

/* ---- top functions (report --stat) ---------------------------------------- */

struct fn_count {
	char *name;
	uint64_t self, total;
	uint64_t seen;			/* the last stack counted in total */
};

struct top_fns {
	struct folds ids;		/* name -> index + 1 in fns */
	struct fn_count *fns;
	size_t nr, cap;
	uint64_t stacks;
};

struct top_fns *top_fns_new(void)
{
	struct top_fns *t = calloc(1, sizeof(*t));

	if (!t)
		die("out of memory");
	return t;
}

void top_fns_free(struct top_fns *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++)
		free(t->fns[i].name);
	free(t->fns);
	folds_free(&t->ids);
	free(t);
}

static struct fn_count *fn_get(struct top_fns *t, const char *name)
{
	struct fold *e = folds_get(&t->ids, name);

	if (!e->weight) {
		if (t->nr == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->fns = realloc(t->fns, t->cap * sizeof(*t->fns));
			if (!t->fns)
				die("out of memory");
		}
		t->fns[t->nr] = (struct fn_count){ .name = strdup(name) };
		if (!t->fns[t->nr].name)
			die("out of memory");
		e->weight = ++t->nr;
	}
	return &t->fns[e->weight - 1];
}

/* One frame of stack number @t->stacks: @leaf when innermost. */
static void fn_count(struct top_fns *t, const char *name, bool leaf)
{
	struct fn_count *c = fn_get(t, name);

	if (leaf)
		c->self++;
	/* Recursion counts once in a stack's total. */
	if (c->seen != t->stacks) {
		c->seen = t->stacks;
		c->total++;
	}
}

void top_fns_add(struct top_fns *t, struct stack_names *n,
		 const struct stack_pair *p, int32_t pid)
{
	bool leaf = true;
	char frame[512];

	p = unwound(n, p, pid);
	/* A sample without stacks (an idle CPU's) is no stack to count. */
	if (!p->kernel.present && !p->user.present)
		return;
	t->stacks++;
	for (uint32_t i = 0; p->kernel.present && i < p->kernel.nr; i++, leaf = false)
		if (kernel_frame(n, p->kernel.ips[i], USYM_NAME, frame, sizeof(frame)))
			fn_count(t, frame, leaf);
	for (uint32_t i = 0; p->user.present && i < p->user.nr; i++, leaf = false)
		if (usym_format(n->us, n->um, pid, p->user.ips[i], USYM_NAME, frame,
				sizeof(frame)))
			fn_count(t, frame, leaf);
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

void top_fns_print(struct top_fns *t, FILE *f, unsigned int top)
{
	if (!t->stacks)
		return;
	fprintf(f, "\ntop functions (of %" PRIu64 " stack%s: self innermost, total anywhere in it)\n",
		t->stacks, t->stacks == 1 ? "" : "s");
	if (!t->nr) {
		fprintf(f, "  no frame resolved\n");
		return;
	}
	qsort(t->fns, t->nr, sizeof(*t->fns), cmp_fn);
	fprintf(f, "  %10s %10s  %s\n", "self", "total", "function");
	for (size_t i = 0; i < t->nr && i < top; i++)
		fprintf(f, "  %10" PRIu64 " %10" PRIu64 "  %s\n", t->fns[i].self,
			t->fns[i].total, t->fns[i].name);
}

/* ---- folded stacks ------------------------------------------------------- */

/*
 * Kernel frames of a folded key start with this byte: "[k] " or nothing
 * once the whole report is known (user frames in any stack, or none).
 */
#define KMARK	'\x01'

static void key_add(char **key, size_t *len, size_t *cap, const char *frame,
		    bool kernel)
{
	size_t n = strlen(frame) + 2;

	if (*len + n + 1 > *cap) {
		*cap = 2 * (*len + n + 1);
		*key = realloc(*key, *cap);
		if (!*key)
			die("out of memory");
	}
	(*key)[(*len)++] = ';';
	if (kernel)
		(*key)[(*len)++] = KMARK;
	memcpy(*key + *len, frame, n - 1);
	*len += strlen(frame);
	(*key)[*len] = '\0';
}

/*
 * "comm;user root;...;user leaf;K kernel root;...;K kernel leaf", K the
 * kernel mark: frames by name, "function [module]" in a module.
 */
static char *fold_key(const char *comm, struct stack_names *n,
		      const struct stack_pair *p, int32_t pid)
{
	size_t len, cap;
	char *key, frame[512];

	p = unwound(n, p, pid);
	len = strlen(comm);
	cap = len + 64 * (p->kernel.nr + p->user.nr) + 2;
	key = malloc(cap);
	if (!key)
		die("out of memory");
	memcpy(key, comm, len + 1);
	/* No ';' in a frame or the comm: it separates them. */
	for (char *c = key; *c; c++)
		if (*c == ';' || *c == ' ')
			*c = '_';
	for (uint32_t i = p->user.present ? p->user.nr : 0; i-- > 0;) {
		usym_format(n->us, n->um, pid, p->user.ips[i], USYM_FOLDED, frame,
			    sizeof(frame));
		key_add(&key, &len, &cap, frame, false);
	}
	for (uint32_t i = p->kernel.present ? p->kernel.nr : 0; i-- > 0;) {
		kernel_frame(n, p->kernel.ips[i], USYM_FOLDED, frame, sizeof(frame));
		key_add(&key, &len, &cap, frame, true);
	}
	return key;
}

/* The kernel marks of @key made "[k] " (@user) or nothing, printed. */
static void print_key(const char *key, bool user)
{
	for (; *key; key++) {
		if (*key == KMARK)
			fputs(user ? "[k] " : "", stdout);
		else
			putchar(*key);
	}
}

static void folds_print_free(struct folds *m, bool user)
{
	size_t n = 0;

	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			m->slots[n++] = m->slots[i];
	if (n)
		qsort(m->slots, n, sizeof(*m->slots), cmp_fold);
	for (size_t i = 0; i < n; i++) {
		if (m->slots[i].weight) {
			print_key(m->slots[i].key, user);
			printf(" %" PRIu64 "\n", m->slots[i].weight);
		}
		free(m->slots[i].key);
	}
	free(m->slots);
}

/* A thread switched out with a stack: where it waits, since when. */
struct offcpu {
	int32_t tid;			/* first: the tidmap's key */
	uint64_t since;			/* clock cycles */
	char *key;			/* folded stack, or NULL */
};

/* The last event of a CPU, for the stacks that may follow it. */
struct last_event {
	bool is_switch;
	int32_t tid;			/* the thread it belongs to (switch: prev) */
	char comm[32];
	uint64_t ts;
};

struct fold_state {
	const struct rt_trace *t;
	const struct rt_threads *th;
	struct stack_names *names;
	bool off_cpu;
	bool user;			/* a stack had user frames */
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
	l->ts = it->timestamp;
	l->tid = owner;
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

static void fold_pair(struct fold_state *s, const struct stack_pair *p)
{
	struct last_event *l = &s->last[p->cpu];
	const char *comm = l->comm;
	struct offcpu *w;
	bool created;
	char *key;

	/* Stacks of no known event (it was lost with a packet). */
	if (l->ts != p->timestamp || (s->off_cpu && !l->is_switch))
		return;
	/* A copy unwinds to one frame at least. */
	if ((p->user.present && p->user.nr) || p->copy.present)
		s->user = true;
	/* A sample is its own thread's, whichever the CPU's was. */
	if (p->tid >= 0 && !(comm = rt_threads_comm(s->th, p->tid, p->cpu)))
		comm = "<...>";
	key = fold_key(comm, s->names, p, stack_pair_pid(p, s->th, l->tid));
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
	w->since = p->timestamp;
}

int folded_report(const char *dir, const char *bindir, bool off_cpu, bool strict)
{
	struct fold_state s = { .off_cpu = off_cpu };
	const struct stack_pair *p;
	const struct rt_item *it;
	struct rt_threads *th;
	struct stackrec *sr;
	struct umaps *um;
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
	sr = stackrec_new(t->md);
	um = umaps_new(t->md);
	if (!s.last || !th || !sr || !um)
		die("out of memory");
	s.th = th;
	s.names = stack_names_new(dir, bindir, um);
	rt_tidmap_init(&s.waiting, sizeof(struct offcpu));

	m = merge_trace(t, false);
	while ((it = merge_next(m))) {
		/* An event's stacks, before the item after them says anything. */
		if ((p = stackrec_feed(sr, it)))
			fold_pair(&s, p);
		if (stackrec_is_trailer(sr, it))
			continue;
		if (it->type == RT_ITEM_EVENT)
			fold_event(&s, it, th, rt_threads_owner(th, it));
		rt_threads_feed(th, it);
		if (umaps_feed(um, it))
			die("out of memory");
	}
	if ((p = stackrec_flush(sr)))
		fold_pair(&s, p);
	error = merge_error(m);
	/* Threads still waiting at the end: no end, no weight. */
	for (size_t i = 0; i < s.waiting.cap; i++) {
		struct offcpu *w = rt_tidmap_slot(&s.waiting, i);

		if (w)
			free(w->key);
	}
	folds_print_free(&s.folds, s.user);
	status = print_end(t, error);
	merge_close(m);
	rt_tidmap_free(&s.waiting);
	free(s.last);
	stack_names_free(s.names);
	umaps_free(um);
	stack_lost_warn(sr);
	stackrec_free(sr);
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
	struct folds map_ids;		/* "build-id\tpath\tpgoff" -> map id */
	struct stack_frame *frames;	/* [id - 1] */
	struct stack_node *nodes;	/* [id - 1] */
	struct stack_map *maps;		/* [id - 1] */
	uint32_t nr_frames, nr_nodes, nr_maps;
	size_t frames_cap, nodes_cap, maps_cap;
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
	for (uint32_t i = 0; i < st->nr_maps; i++)
		free((char *)st->maps[i].path);
	free(st->frames);
	free(st->nodes);
	free(st->maps);
	folds_free(&st->frame_ids);
	folds_free(&st->node_ids);
	folds_free(&st->map_ids);
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

/* Room for one more frame (not counted yet), or NULL out of memory. */
static struct stack_frame *new_frame(struct stack_tree *st)
{
	struct stack_frame *p = grow_array(st->frames, &st->frames_cap,
					   st->nr_frames, sizeof(*p), 256);

	if (!p)
		return NULL;
	st->frames = p;
	return &p[st->nr_frames];
}

/* @ip's frame id: its function's (or its address's, with no symbol); 0 out of memory. */
static uint32_t frame_id(struct stack_tree *st, uint64_t ip)
{
	struct ksym_frame f;
	struct stack_frame *sf;
	struct fold *e;
	char addr[24];
	const char *name, *mod;

	ksyms_lookup(st->ks, ip, &f);
	snprintf(addr, sizeof(addr), "0x%" PRIx64, ip);
	name = f.name ? f.name : addr;
	mod = f.module ? f.module : "";
	e = folds_findf(&st->frame_ids, "%s\t%s", name, mod);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	sf = new_frame(st);
	if (!sf)
		return 0;
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

/*
 * The mapping of @h, where @ip of a process is (one per build-id, path
 * and file offset: the first process's range); 0 out of memory.
 */
static uint32_t map_id(struct stack_tree *st, struct stack_names *n,
		       const struct umap_hit *h, uint64_t ip)
{
	char hex[2 * UMAP_BUILD_ID_MAX + 1] = "";
	uint64_t pgoff = h->file_off - (ip - h->start), bias = 0;
	struct stack_map *m;
	struct fold *e;

	if (h->build_id)
		usyms_hex(h->build_id, h->build_id_len, hex);
	e = folds_findf(&st->map_ids, "%s\t%s\t%" PRIx64, hex, h->path, pgoff);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	m = grow_array(st->maps, &st->maps_cap, st->nr_maps, sizeof(*m), 16);
	if (!m)
		return 0;
	st->maps = m;
	if (h->build_id)
		usym_load_bias(n->us, h->build_id, h->build_id_len, h->file_off, &bias);
	m = &st->maps[st->nr_maps];
	*m = (struct stack_map){
		.path = strdup(h->path), .start = h->start, .end = h->end,
		.pgoff = pgoff, .load_bias = bias,
	};
	if (!m->path)
		return 0;
	if (h->build_id) {
		m->build_id_len = h->build_id_len;
		memcpy(m->build_id, h->build_id, h->build_id_len);
	}
	e->weight = ++st->nr_maps;
	return st->nr_maps;
}

/*
 * User frame @ip of process @pid, named as report --folded names it
 * (usymbols.h), under its mapping: a function's frame starts where the
 * function does; 0 out of memory.
 */
static uint32_t user_frame_id(struct stack_tree *st, struct stack_names *n,
			      int32_t pid, uint64_t ip)
{
	char name[512];
	struct usym_frame f = { 0 };
	struct stack_frame *sf;
	struct umap_hit h;
	uint64_t start = ip;
	uint32_t map = 0;
	struct fold *e;

	usym_format(n->us, n->um, pid, ip, USYM_FOLDED, name, sizeof(name));
	if (umaps_lookup(n->um, pid, ip, &h)) {
		start = h.file_off;
		if (!usym_resolve(n->us, h.build_id, h.build_id_len, h.file_off, &f))
			start -= f.offset;
		/* umaps_lookup()'s hit: valid until the next feed, copied. */
		if (!(map = map_id(st, n, &h, ip)))
			return 0;
	}
	/* Two tabs: no kernel frame's key ("name\tmodule") is one. */
	e = folds_findf(&st->frame_ids, "%s\t\t%" PRIu32, name, map);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	sf = new_frame(st);
	if (!sf)
		return 0;
	*sf = (struct stack_frame){
		.name = strdup(name), .start = start, .owned = true, .user = true,
		.map = map,
	};
	if (!sf->name)
		return 0;
	e->weight = ++st->nr_frames;
	return st->nr_frames;
}

/* The node of @frame under @parent; 0 out of memory. */
static uint32_t node_id(struct stack_tree *st, uint32_t parent, uint32_t frame)
{
	struct stack_node *p;
	struct fold *e;
	char key[24];

	snprintf(key, sizeof(key), "%" PRIx32 " %" PRIx32, parent, frame);
	e = folds_find(&st->node_ids, key);
	if (!e)
		return 0;
	if (e->weight)
		return (uint32_t)e->weight;
	p = grow_array(st->nodes, &st->nodes_cap, st->nr_nodes, sizeof(*p), 256);
	if (!p)
		return 0;
	st->nodes = p;
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

int64_t stack_tree_add_pair(struct stack_tree *st, struct stack_names *n,
			    const struct stack_pair *p, int32_t pid)
{
	uint32_t node = 0, frame;

	if (!st->ks_read)
		st->ks = stack_symbols(st->t->dir);
	st->ks_read = true;
	p = unwound(n, p, pid);
	/* Outermost first: the user's root, ..., its leaf, the kernel's root, ... */
	for (uint32_t i = p->user.present ? p->user.nr : 0; i-- > 0;) {
		frame = user_frame_id(st, n, pid, p->user.ips[i]);
		if (!frame || !(node = node_id(st, node, frame)))
			return -1;
	}
	for (uint32_t i = p->kernel.present ? p->kernel.nr : 0; i-- > 0;) {
		frame = frame_id(st, p->kernel.ips[i]);
		if (!frame || !(node = node_id(st, node, frame)))
			return -1;
	}
	return node;
}

uint32_t stack_tree_maps(const struct stack_tree *st)
{
	return st->nr_maps;
}

const struct stack_map *stack_tree_map(const struct stack_tree *st, uint32_t id)
{
	return id && id <= st->nr_maps ? &st->maps[id - 1] : NULL;
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
