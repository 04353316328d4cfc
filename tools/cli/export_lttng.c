// SPDX-License-Identifier: GPL-2.0
/*
 * export -f lttng: a trace directory as LTTng 2.13's kernel tracer lays
 * out its traces, for Trace Compass's kernel analyses, LTTng's analyses
 * (lttng-analyses) and babeltrace: OUTDIR/kernel/{metadata,channel0_N}.
 * The CTF writer is export_lttng_ctf.c; this file says what each of
 * ringtrace's events becomes (Documentation/ringtrace/viewers.rst):
 *
 *   sched_*, irq_handler_*,     the same event, fields and types as
 *   irq_softirq_*               lttng-modules 2.13 declares them (fork's
 *                               namespace fields are 0, vtids the root
 *                               namespace's tid: ringtrace records no
 *                               namespaces)
 *   syscall_entry/exit          syscall_entry_<name> / syscall_exit_<name>,
 *                               the name from the id field's enum as LTTng
 *                               names it (stat -> newstat), the arguments
 *                               named and typed per system call
 *                               (export_lttng_syscalls.h, generated from
 *                               the kernel's SYSCALL_DEFINEs); the exit
 *                               takes the pointers the kernel may write from
 *                               its thread's entry.  A number without a name:
 *                               syscall_entry_unknown / syscall_exit_unknown
 *   ringtrace_statedump_task    lttng_statedump_process_state, between
 *                               lttng_statedump_start and _end; the status
 *                               2 (waiting for a CPU, as LTTng says of a
 *                               running task) for the task a
 *                               ringtrace_statedump_cpu found running, else
 *                               5 (waiting: ringtrace records no task state)
 *   ringtrace_statedump_cpu     nothing of its own: the status above
 *   (a window from --begin)     at its first event, a state dump of the
 *                               threads known when it opens (what the
 *                               trace said before it): a process_state
 *                               each, 2 for those running on a CPU
 *   ringtrace_marker            lttng_logger, the text in msg (LTTng's
 *                               event for writes to /proc/lttng-logger)
 *   cpu_sample                  cpu_sample (LTTng has no sampler event):
 *                               int32 tid, int32 pid, uint8 mode (0 user,
 *                               1 kernel, 2 idle), its stacks in the
 *                               context below
 *   stack_def, stack_ref (and   no event: the stream event context of the
 *   older traces' kernel_stack, event they follow (a stack_ref's stacks
 *   user_stack)                 those its stack_defs hold), as
 *                               lttng-modules' callstack-kernel and
 *                               callstack-user contexts (export_lttng_ctf.c)
 *   user_stack_copy             not unwound here: callstack_user is empty
 *                               (counted, said on stderr)
 *   anything else               itself: ringtrace's fields, re-packed
 *
 * Every CPU of the trace gets a stream, every event is written on its CPU
 * at its time, and losses are LTTng's cumulative events_discarded.  An
 * event's stacks come after it (tools/lib/stackrec.h): it is held, built,
 * until the next item says whether it had any, then written with them.  User
 * memory is not recorded by ringtrace: string arguments of system calls
 * (filename, pathname...) are empty.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/random.h>

#include "export.h"
#include "export_lttng.h"
#include "../lib/stackrec.h"

/* ---- ringtrace's events as LTTng's ------------------------------------------------- */

struct lfield {
	const char *name;
	enum ltype type;
	const char *from;		/* ringtrace's field, if named otherwise */
};

struct lmap {
	const char *event;		/* ringtrace's */
	const char *lttng;
	const struct lfield *fields;	/* ends with a NULL name */
};

#define F(n, t)		{ n, t, NULL }
#define F_END		{ NULL, 0, NULL }
#define F_FROM(n, t, f)	{ n, t, f }

static const struct lfield f_switch[] = {
	F("prev_comm", L_COMM), F("prev_tid", L_S32), F("prev_prio", L_S32),
	F("prev_state", L_S64), F("next_comm", L_COMM), F("next_tid", L_S32),
	F("next_prio", L_S32), F_END,
};
static const struct lfield f_wakeup[] = {
	F("comm", L_COMM), F("tid", L_S32), F("prio", L_S32),
	F("target_cpu", L_S32), F_END,
};
static const struct lfield f_task[] = {
	F("comm", L_COMM), F("tid", L_S32), F("prio", L_S32), F_END,
};
static const struct lfield f_migrate[] = {
	F("comm", L_COMM), F("tid", L_S32), F("prio", L_S32),
	F("orig_cpu", L_S32), F("dest_cpu", L_S32), F_END,
};
/* The namespace fields have no source: 0. */
static const struct lfield f_fork[] = {
	F("parent_comm", L_COMM), F("parent_tid", L_S32), F("parent_pid", L_S32),
	F("parent_ns_inum", L_U32), F("child_comm", L_COMM), F("child_tid", L_S32),
	F_FROM("vtids", L_VTIDS, "child_tid"), F("child_pid", L_S32),
	F("child_ns_inum", L_U32), F_END,
};
static const struct lfield f_exec[] = {
	F("filename", L_STR), F("tid", L_S32), F("old_tid", L_S32), F_END,
};
static const struct lfield f_irq_entry[] = {
	F("irq", L_S32), F("name", L_STR), F_END,
};
static const struct lfield f_irq_exit[] = {
	F("irq", L_S32), F("ret", L_S32), F_END,
};
static const struct lfield f_softirq[] = { F("vec", L_U32), F_END };
static const struct lfield f_logger[] = { F_FROM("msg", L_MSG, "data"), F_END };
static const struct lfield f_sample[] = {
	F("tid", L_S32), F("pid", L_S32), F("mode", L_U8), F_END,
};

static const struct lmap maps[] = {
	{ "sched_switch", "sched_switch", f_switch },
	{ "sched_wakeup", "sched_wakeup", f_wakeup },
	{ "sched_wakeup_new", "sched_wakeup_new", f_wakeup },
	{ "sched_waking", "sched_waking", f_wakeup },
	{ "sched_process_fork", "sched_process_fork", f_fork },
	{ "sched_process_exec", "sched_process_exec", f_exec },
	{ "sched_process_exit", "sched_process_exit", f_task },
	{ "sched_process_free", "sched_process_free", f_task },
	{ "sched_migrate_task", "sched_migrate_task", f_migrate },
	{ "irq_handler_entry", "irq_handler_entry", f_irq_entry },
	{ "irq_handler_exit", "irq_handler_exit", f_irq_exit },
	{ "irq_softirq_entry", "irq_softirq_entry", f_softirq },
	{ "irq_softirq_exit", "irq_softirq_exit", f_softirq },
	{ "ringtrace_marker", "lttng_logger", f_logger },
	{ "cpu_sample", "cpu_sample", f_sample },
};

static const struct lfield f_process_state[] = {
	F("tid", L_S32), F("pid", L_S32), F("ppid", L_S32), F("name", L_COMM),
	F("type", L_S32), F("mode", L_S32), F("submode", L_S32),
	F("status", L_S32), F("cpu", L_U32), F("file_table_address", L_X64),
	F_END,
};
static const struct lfield f_none[] = { F_END };
static const struct lfield f_sc_unknown_entry[] = {
	F("id", L_S32), F("args", L_ARGS), F_END,
};
static const struct lfield f_sc_unknown_exit[] = {
	F("id", L_S32), F("ret", L_S64), F("args", L_ARGS), F_END,
};
static const struct lfield f_sc_other_entry[] = { F("args", L_ARGS), F_END };
static const struct lfield f_sc_other_exit[] = {
	F("ret", L_S64), F("args", L_ARGS), F_END,
};

/* lttng-statedump-impl.c's values. */
enum { MODE_UNKNOWN = 5, SUBMODE_NONE = 0, USER_THREAD = 0, KERNEL_THREAD = 1,
       STATUS_WAIT_CPU = 2, STATUS_WAIT = 5 };

/* ---- system calls ------------------------------------------------------------------ */

enum { SC_IN, SC_OUT };

struct lsc {
	const char *name;		/* <asm/unistd.h>'s: the enum's label */
	const char *lttng;		/* the entry point's, without sys_ */
	unsigned int nr_args;
	struct {
		const char *name;
		enum ltype type;
		int dir;
	} args[6];
};

static const struct lsc syscalls[] = {
#include "export_lttng_syscalls.h"
};

static int lsc_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct lsc *)elem)->name);
}

static const struct lsc *find_syscall(const char *name)
{
	return bsearch(name, syscalls, ARRAY_SIZE(syscalls), sizeof(syscalls[0]),
		       lsc_cmp);
}

/*
 * A system call's classes, made at its first event: one pair per label of
 * the id enum (a label may cover a range of numbers), so that they follow
 * the trace's metadata, never the number of its events.
 */
struct sc_classes {
	bool made;
	int entry, exit;
	const struct lsc *sc;		/* NULL: the generic fields */
	bool unknown;			/* no name: syscall_*_unknown */
};

/* A thread inside a system call: its arguments, for the exit. */
struct sc_thread {
	int32_t tid;			/* first: the tidmap's key */
	bool in;
	int64_t id;
	uint64_t args[6];
};

/* Where a ringtrace_statedump_cpu found a task running. */
struct dump_running {
	int32_t tid;			/* first: the tidmap's key */
	uint32_t cpu;
};

/* ---- the format's state ------------------------------------------------------------ */

enum kind { K_UNSEEN, K_MAP, K_PASS, K_SC_ENTRY, K_SC_EXIT, K_DUMP_TASK,
	    K_DUMP_CPU };

struct event_kind {
	enum kind kind;
	int cls;			/* K_MAP, K_PASS */
	const struct lmap *map;
	bool interrupt;			/* keeps a state dump open */
};

struct lttng {
	struct lwriter *w;
	struct event_kind *kinds;	/* by position in md->events */
	struct sc_classes *sc_by_label;	/* by label of the id enum */
	struct sc_classes sc_unknown;	/* every number without a label */
	struct rt_tidmap threads;	/* struct sc_thread */
	struct rt_tidmap running;	/* struct dump_running */
	int dump_start, dump_end, dump_task;
	bool dump_open;
	int dump_cpu;			/* stream of the open dump */
	bool window_said;		/* a window's threads, dumped first */
	uint64_t end;			/* latest packet end seen */
	struct lbuf pl;			/* the payload being built */
	struct lbuf tsdl;
	struct stackrec *sr;		/* the events' stacks */
	/* The last event, built, until the next item says what its stacks are. */
	struct {
		bool on;
		int stream, cls;
		uint64_t ts;
		uint32_t cpu;
		const struct rt_event_desc *event;
		struct lbuf pl;
	} held;
	uint64_t copies;		/* user stack copies left out */
};

/* The class @name with @fields, or -1. */
static int add_class(struct lttng *l, const char *name, const struct lfield *fields)
{
	lb_reset(&l->tsdl);
	for (const struct lfield *f = fields; f->name; f++)
		lb_tsdl_field(&l->tsdl, f->name, f->type);
	lb_put(&l->tsdl, "", 1);
	if (l->tsdl.oom) {
		error_line("out of memory");
		return -1;
	}
	return lw_class(l->w, name, (const char *)l->tsdl.p);
}

/* A field name as a TSDL identifier (the metadata is untrusted). */
static void put_ident(struct lbuf *b, const char *name)
{
	for (const char *p = name; *p; p++) {
		char c = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			 (*p >= '0' && *p <= '9') ? *p : '_';

		lb_put(b, &c, 1);
	}
}

/* An event LTTng has no counterpart of: its own fields, re-packed. */
static int add_pass_class(struct lttng *l, const struct rt_event_desc *ev)
{
	lb_reset(&l->tsdl);
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		const struct rt_field_desc *f = &ev->fields[i];

		lb_put(&l->tsdl, "\t\t", 2);
		if (f->kind == RT_FIELD_STRING) {
			lb_put(&l->tsdl, "string", 6);
		} else {
			lb_tsdl_int(&l->tsdl, f->bits, f->is_signed, f->is_text,
				    f->base);
		}
		lb_put(&l->tsdl, " _", 2);
		put_ident(&l->tsdl, f->name);
		if (f->kind == RT_FIELD_ARRAY) {
			char n[32];

			lb_put(&l->tsdl, n, (size_t)snprintf(n, sizeof(n), "[%" PRIu64 "]",
							     f->length));
		} else if (f->kind == RT_FIELD_SEQUENCE) {
			lb_put(&l->tsdl, "[ _", 3);
			put_ident(&l->tsdl, ev->fields[f->length_field].name);
			lb_put(&l->tsdl, " ]", 2);
		}
		lb_put(&l->tsdl, ";\n", 2);
	}
	lb_put(&l->tsdl, "", 1);
	if (l->tsdl.oom) {
		error_line("out of memory");
		return -1;
	}
	return lw_class(l->w, ev->name, (const char *)l->tsdl.p);
}

static bool is_interrupt(const char *name)
{
	return !strncmp(name, "irq_handler_", 12) || !strncmp(name, "irq_softirq_", 12);
}

/* What ringtrace's event @ev becomes: looked up at its first event. */
static int classify(struct lttng *l, struct event_kind *k, const struct rt_event_desc *ev)
{
	k->interrupt = is_interrupt(ev->name);
	for (unsigned int i = 0; i < ARRAY_SIZE(maps); i++) {
		if (strcmp(ev->name, maps[i].event))
			continue;
		k->kind = K_MAP;
		k->map = &maps[i];
		k->cls = add_class(l, maps[i].lttng, maps[i].fields);
		return k->cls < 0 ? -1 : 0;
	}
	if (!strcmp(ev->name, "syscall_entry") && rt_event_field(ev, "id", RT_USE_INT) >= 0) {
		k->kind = K_SC_ENTRY;
	} else if (!strcmp(ev->name, "syscall_exit") &&
		   rt_event_field(ev, "id", RT_USE_INT) >= 0) {
		k->kind = K_SC_EXIT;
	} else if (!strcmp(ev->name, "ringtrace_statedump_task")) {
		k->kind = K_DUMP_TASK;
	} else if (!strcmp(ev->name, "ringtrace_statedump_cpu")) {
		k->kind = K_DUMP_CPU;
	} else {
		k->kind = K_PASS;
		k->cls = add_pass_class(l, ev);
		return k->cls < 0 ? -1 : 0;
	}
	return 0;
}

/* ---- payloads ---------------------------------------------------------------------- */

static void put_text(struct lbuf *b, const struct rt_item *it, const char *name,
		     enum ltype t)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_TEXT);
	const void *data = v ? (const void *)v->data : "";
	size_t len = v ? v->count : 0;

	if (t == L_COMM) {
		lb_comm(b, data, len);
	} else if (t == L_STR) {
		lb_str(b, data, len);
	} else {
		lb_int(b, L_U64, len);
		lb_put(b, data, len);
	}
}

static void put_mapped(struct lbuf *b, const struct rt_item *it, const struct lfield *fields)
{
	for (const struct lfield *f = fields; f->name; f++) {
		const char *from = f->from ? f->from : f->name;

		switch (f->type) {
		case L_COMM:
		case L_STR:
		case L_MSG:
			put_text(b, it, from, f->type);
			break;
		case L_VTIDS:
			lb_int(b, L_U8, 1);
			lb_int(b, L_S32, (uint64_t)ex_int(it, from));
			break;
		case L_ARGS:
			for (int i = 0; i < 6; i++)
				lb_int(b, L_U64, 0);
			break;
		default:
			lb_int(b, f->type, (uint64_t)ex_int(it, from));
		}
	}
}

static void put_pass(struct lbuf *b, const struct rt_item *it)
{
	for (unsigned int i = 0; i < it->nr_fields; i++) {
		const struct rt_field_value *v = &it->fields[i];

		if (v->desc->kind == RT_FIELD_STRING)
			lb_str(b, v->data, v->count);
		else
			lb_put(b, v->data, v->count * (v->desc->bits / 8));
	}
}

/* ---- the state dump ---------------------------------------------------------------- */

/* The payload built in l->pl as an event of its own, without stacks. */
static int emit(struct lttng *l, int stream, uint64_t ts, int cls)
{
	if (l->pl.oom) {
		error_line("out of memory");
		return -1;
	}
	return lw_event(l->w, (unsigned int)stream, ts, cls, NULL, &l->pl);
}

/* The payload built in l->pl as the event of @it: held for its stacks. */
static int hold(struct lttng *l, int stream, const struct rt_item *it, int cls)
{
	struct lbuf pl = l->held.pl;

	if (l->pl.oom) {
		error_line("out of memory");
		return -1;
	}
	l->held.pl = l->pl;
	l->pl = pl;
	l->held.on = true;
	l->held.stream = stream;
	l->held.cls = cls;
	l->held.ts = it->timestamp;
	l->held.cpu = it->cpu;
	l->held.event = it->event;
	return 0;
}

/*
 * Writes the held event, with the stacks of @p if they are its own (the
 * pair stackrec handed out for it), else none.
 */
static int release(struct lttng *l, const struct stack_pair *p)
{
	struct lw_stack st[LW_NR_STACKS] = { 0 };

	if (!l->held.on)
		return 0;
	l->held.on = false;
	if (p && p->event == l->held.event && p->cpu == l->held.cpu &&
	    p->timestamp == l->held.ts) {
		if (p->kernel.present)
			st[LW_STACK_KERNEL] = (struct lw_stack){
				.ips = p->kernel.ips, .nr = p->kernel.nr,
			};
		if (p->user.present)
			st[LW_STACK_USER] = (struct lw_stack){
				.ips = p->user.ips, .nr = p->user.nr,
				.incomplete = p->user_flags & USTACK_TRUNCATED,
			};
		else if (p->copy.present)
			l->copies++;
	}
	return lw_event(l->w, (unsigned int)l->held.stream, l->held.ts, l->held.cls, st,
			&l->held.pl);
}

static int emit_empty(struct lttng *l, int stream, uint64_t ts, int *cls,
		      const char *name)
{
	if (*cls < 0 && (*cls = add_class(l, name, f_none)) < 0)
		return -1;
	lb_reset(&l->pl);
	return emit(l, stream, ts, *cls);
}

static int dump_end(struct lttng *l, uint64_t ts)
{
	l->dump_open = false;
	return emit_empty(l, l->dump_cpu, ts, &l->dump_end, "lttng_statedump_end");
}

/*
 * ringtrace_statedump_task as lttng_statedump_process_state.  Kernel
 * threads are kthreadd (2) and its children: user space cannot be one.
 */
static int dump_task(struct lttng *l, const struct rt_item *it, int stream)
{
	int32_t tid = (int32_t)ex_int(it, "tid"), pid = (int32_t)ex_int(it, "pid");
	int32_t ppid = (int32_t)ex_int(it, "ppid");
	const struct dump_running *r = rt_tidmap_find(&l->running, tid);
	const struct rt_field_value *comm = rt_item_field(it, "comm", RT_USE_TEXT);

	if (!l->dump_open) {
		if (emit_empty(l, stream, it->timestamp, &l->dump_start,
			       "lttng_statedump_start"))
			return -1;
		l->dump_open = true;
		l->dump_cpu = stream;
	}
	if (l->dump_task < 0 &&
	    (l->dump_task = add_class(l, "lttng_statedump_process_state",
				      f_process_state)) < 0)
		return -1;
	lb_reset(&l->pl);
	lb_int(&l->pl, L_S32, (uint32_t)tid);
	lb_int(&l->pl, L_S32, (uint32_t)pid);
	lb_int(&l->pl, L_S32, (uint32_t)ppid);
	lb_comm(&l->pl, comm ? comm->data : (const uint8_t *)"", comm ? comm->count : 0);
	lb_int(&l->pl, L_S32, pid == 2 || ppid == 2 ? KERNEL_THREAD : USER_THREAD);
	lb_int(&l->pl, L_S32, MODE_UNKNOWN);
	lb_int(&l->pl, L_S32, SUBMODE_NONE);
	lb_int(&l->pl, L_S32, r ? STATUS_WAIT_CPU : STATUS_WAIT);
	lb_int(&l->pl, L_U32, r ? r->cpu : 0);
	lb_int(&l->pl, L_X64, 0);
	return hold(l, stream, it, l->dump_task);
}

/*
 * A window from --begin: the threads known when it opens, as a state dump
 * on @stream at @ts (by tid: the same bytes however the window was read),
 * each with its thread group, its process's parent and its name.
 */
static int window_dump(struct lttng *l, const struct export_ctx *x, int stream,
		       uint64_t ts)
{
	int32_t *tids;
	size_t n;
	int err = 0;

	l->window_said = true;
	tids = ex_known_threads(x->th, &n);
	if (!tids)
		return -1;
	if (l->dump_task < 0 &&
	    (l->dump_task = add_class(l, "lttng_statedump_process_state",
				      f_process_state)) < 0)
		err = -1;
	if (!err)
		err = emit_empty(l, stream, ts, &l->dump_start, "lttng_statedump_start");
	for (size_t i = 0; i < n && !err; i++) {
		int32_t tid = tids[i], pid = rt_threads_pid(x->th, tid);
		int32_t ppid = pid < 0 ? -1 : rt_threads_ppid(x->th, pid);
		const char *comm = rt_threads_comm(x->th, tid, 0);
		int cpu = -1;

		if (pid < 0)
			continue;
		for (unsigned int c = 0; c < x->t->nr_cpus && cpu < 0; c++)
			if (rt_threads_current(x->th, (uint32_t)x->t->cpus[c].cpu) == tid)
				cpu = x->t->cpus[c].cpu;
		lb_reset(&l->pl);
		lb_int(&l->pl, L_S32, (uint32_t)tid);
		lb_int(&l->pl, L_S32, (uint32_t)pid);
		lb_int(&l->pl, L_S32, (uint32_t)(ppid < 0 ? 0 : ppid));
		lb_comm(&l->pl, (const uint8_t *)(comm ? comm : ""), comm ? strlen(comm) : 0);
		lb_int(&l->pl, L_S32, pid == 2 || ppid == 2 ? KERNEL_THREAD : USER_THREAD);
		lb_int(&l->pl, L_S32, MODE_UNKNOWN);
		lb_int(&l->pl, L_S32, SUBMODE_NONE);
		lb_int(&l->pl, L_S32, cpu >= 0 ? STATUS_WAIT_CPU : STATUS_WAIT);
		lb_int(&l->pl, L_U32, (uint32_t)(cpu >= 0 ? cpu : 0));
		lb_int(&l->pl, L_X64, 0);
		err = emit(l, stream, ts, l->dump_task);
	}
	free(tids);
	return err ? -1 : emit_empty(l, stream, ts, &l->dump_end, "lttng_statedump_end");
}

static int dump_cpu(struct lttng *l, const struct rt_item *it)
{
	int32_t tid = (int32_t)ex_int(it, "tid");
	struct dump_running *r;
	bool created;

	if (tid <= 0)
		return 0;
	r = rt_tidmap_get(&l->running, tid, &created);
	if (!r) {
		error_line("out of memory");
		return -1;
	}
	r->cpu = it->cpu;
	return 0;
}

/* ---- system calls ------------------------------------------------------------------ */

/* The classes of system call @id (entry and exit), or NULL. */
static const struct sc_classes *sc_classes(struct lttng *l, const struct export_ctx *x,
					   int64_t id)
{
	int label = x->syscall_id ? rt_field_label_index(x->syscall_id, id) : -1;
	const char *name;
	struct sc_classes *c;
	char entry[96], exit[96];

	if (label < 0) {
		c = &l->sc_unknown;
		if (!c->made &&
		    ((c->entry = add_class(l, "syscall_entry_unknown", f_sc_unknown_entry)) < 0 ||
		     (c->exit = add_class(l, "syscall_exit_unknown", f_sc_unknown_exit)) < 0))
			return NULL;
		c->made = true;
		c->unknown = true;
		return c;
	}
	c = &l->sc_by_label[label];
	if (c->made)
		return c;
	name = x->syscall_id->labels[label].label;
	c->sc = find_syscall(name);
	c->unknown = false;
	snprintf(entry, sizeof(entry), "syscall_entry_%s", c->sc ? c->sc->lttng : name);
	snprintf(exit, sizeof(exit), "syscall_exit_%s", c->sc ? c->sc->lttng : name);
	if (c->sc) {
		struct lfield in[7] = { 0 }, out[8] = { F("ret", L_S64) };
		unsigned int ni = 0, no = 1;

		for (unsigned int i = 0; i < c->sc->nr_args; i++) {
			struct lfield f = F(c->sc->args[i].name, c->sc->args[i].type);

			if (c->sc->args[i].dir == SC_IN)
				in[ni++] = f;
			else
				out[no++] = f;
		}
		c->entry = add_class(l, entry, in);
		c->exit = c->entry < 0 ? -1 : add_class(l, exit, out);
	} else {
		c->entry = add_class(l, entry, f_sc_other_entry);
		c->exit = c->entry < 0 ? -1 : add_class(l, exit, f_sc_other_exit);
	}
	/* A failure ends the export. */
	if (c->entry < 0 || c->exit < 0)
		return NULL;
	c->made = true;
	return c;
}

/* The arguments of the system call @tid is in, for its exit (zeros: unknown). */
static void sc_args(struct lttng *l, int32_t tid, int64_t id, uint64_t args[6], bool entry,
		    const struct rt_item *it)
{
	struct sc_thread *t = NULL;
	bool created;

	if (entry) {
		const struct rt_field_value *v = rt_item_field(it, "args", RT_USE_INTS);

		for (unsigned int i = 0; i < 6; i++)
			args[i] = v ? rt_field_u64(v, i) : 0;
		if (tid >= 0 && (t = rt_tidmap_get(&l->threads, tid, &created))) {
			t->in = true;
			t->id = id;
			memcpy(t->args, args, sizeof(t->args));
		}
		return;
	}
	t = tid >= 0 ? rt_tidmap_find(&l->threads, tid) : NULL;
	if (t && t->in && t->id == id)
		memcpy(args, t->args, sizeof(t->args));
	else
		memset(args, 0, 6 * sizeof(args[0]));
	if (t)
		t->in = false;
}

static int put_syscall(struct lttng *l, const struct export_ctx *x, const struct rt_item *it,
		   int32_t tid, int stream, bool entry)
{
	int64_t id = ex_int(it, "id");
	const struct sc_classes *c = sc_classes(l, x, id);
	uint64_t args[6];

	if (!c)
		return -1;
	sc_args(l, tid, id, args, entry, it);
	lb_reset(&l->pl);
	if (c->unknown)
		lb_int(&l->pl, L_S32, (uint64_t)id);
	if (!entry)
		lb_int(&l->pl, L_S64, (uint64_t)ex_int(it, "ret"));
	if (!c->sc) {
		for (int i = 0; i < 6; i++)
			lb_int(&l->pl, L_U64, args[i]);
	} else {
		for (unsigned int i = 0; i < c->sc->nr_args; i++) {
			enum ltype t = c->sc->args[i].type;

			if ((c->sc->args[i].dir == SC_IN) != entry)
				continue;
			/* ringtrace records the pointer, not the string. */
			if (t == L_STR)
				lb_put(&l->pl, "", 1);
			else
				lb_int(&l->pl, t, args[i]);
		}
	}
	return hold(l, stream, it, entry ? c->entry : c->exit);
}

/* ---- the format -------------------------------------------------------------------- */

static int begin(struct export_ctx *x)
{
	struct lttng *l = calloc(1, sizeof(*l));
	uint32_t *cpus = calloc(x->t->nr_cpus ? x->t->nr_cpus : 1, sizeof(*cpus));
	const char *machine;
	uint8_t uuid[16];

	x->priv = l;
	if (!l || !cpus ||
	    !(l->kinds = calloc(x->md->nr_events ? x->md->nr_events : 1, sizeof(*l->kinds))) ||
	    !(l->sc_by_label = calloc(x->syscall_id && x->syscall_id->nr_labels ?
				      x->syscall_id->nr_labels : 1, sizeof(*l->sc_by_label)))) {
		free(cpus);
		error_line("out of memory");
		return -1;
	}
	l->sr = stackrec_new(x->md);
	if (!l->sr) {
		free(cpus);
		error_line("out of memory");
		return -1;
	}
	rt_tidmap_init(&l->threads, sizeof(struct sc_thread));
	rt_tidmap_init(&l->running, sizeof(struct dump_running));
	l->dump_start = l->dump_end = l->dump_task = -1;
	/*
	 * Not the source trace's uuid, which names the ringtrace trace: the
	 * same one with its version nibble made 8 (RFC 9562's custom UUIDs).
	 */
	if (x->md->has_uuid)
		memcpy(uuid, x->md->uuid, sizeof(uuid));
	else if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid))
		memset(uuid, 0, sizeof(uuid));
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x80);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	for (unsigned int i = 0; i < x->t->nr_cpus; i++)
		cpus[i] = (uint32_t)x->t->cpus[i].cpu;
	machine = rt_metadata_env(x->md, "machine");
	if (machine && strcmp(machine, "x86_64"))
		warn("the trace is of a %s machine: system call names are its own, their arguments are laid out as x86_64's (LTTng's table)",
		     machine);
	l->w = lw_create(x->out, uuid, cpus, x->t->nr_cpus);
	free(cpus);
	return l->w ? 0 : -1;
}

static int item(struct export_ctx *x, const struct rt_item *it, int32_t tid)
{
	struct lttng *l = x->priv;
	int stream = trace_cpu_index(x->t, it->cpu);
	const struct stack_pair *p = stackrec_feed(l->sr, it);
	struct event_kind *k;

	/* Before this item is written: the held event, with its stacks. */
	if (p && release(l, p))
		return -1;
	/* A definition may come from before the window (export.c). */
	if (stream < 0 || stackrec_is_def(l->sr, it))
		return 0;	/* the reader checks every packet's CPU */
	lw_start_at(l->w, it->timestamp);
	if (stackrec_is_trailer(l->sr, it))
		return 0;
	if (release(l, NULL))
		return -1;
	if (it->packet && it->packet->timestamp_end > l->end)
		l->end = it->packet->timestamp_end;
	if (it->type == RT_ITEM_LOST)
		return it->lost_events ? lw_lost(l->w, (unsigned int)stream, it->timestamp,
						 it->lost_events) : 0;
	if (it->type != RT_ITEM_EVENT)
		return 0;
	k = &l->kinds[it->event - x->md->events];
	if (k->kind == K_UNSEEN && classify(l, k, it->event))
		return -1;
	if (x->windowed && !l->window_said && window_dump(l, x, stream, it->timestamp))
		return -1;
	/* The dump ends where its CPU does something else than dump or
	 * interrupt it. */
	if (l->dump_open && stream == l->dump_cpu && k->kind != K_DUMP_TASK &&
	    k->kind != K_DUMP_CPU && !k->interrupt && dump_end(l, it->timestamp))
		return -1;
	switch (k->kind) {
	case K_MAP:
		lb_reset(&l->pl);
		put_mapped(&l->pl, it, k->map->fields);
		return hold(l, stream, it, k->cls);
	case K_PASS:
		lb_reset(&l->pl);
		put_pass(&l->pl, it);
		return hold(l, stream, it, k->cls);
	case K_SC_ENTRY:
	case K_SC_EXIT:
		return put_syscall(l, x, it, tid, stream, k->kind == K_SC_ENTRY);
	case K_DUMP_TASK:
		return dump_task(l, it, stream);
	case K_DUMP_CPU:
		return dump_cpu(l, it);
	case K_UNSEEN:
		break;
	}
	return 0;
}

/* The trace directory's name: LTTng's trace_name is its session's. */
static const char *base_name(const char *dir, char *buf, size_t size)
{
	size_t n = strlen(dir);
	const char *b;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (b = dir + n; b > dir && b[-1] != '/'; b--)
		;
	snprintf(buf, size, "%.*s", (int)(dir + n - b), b);
	return buf;
}

static int end(struct export_ctx *x, bool ok)
{
	struct lttng *l = x->priv;
	const struct rt_metadata *md = x->md;
	struct lw_info in = { 0 };
	char name[256];
	int err = 0;

	if (!l)
		return 0;
	if (ok && l->w) {
		if (release(l, stackrec_flush(l->sr)) ||
		    (l->dump_open && dump_end(l, l->end)))
			ok = false;
		lw_end_at(l->w, l->end);
		memcpy(in.clock_uuid, md->uuid, sizeof(in.clock_uuid));
		in.clock_freq = md->clock_freq;
		in.clock_offset_s = md->clock_offset_s;
		in.clock_offset = md->clock_offset;
		in.hostname = rt_metadata_env(md, "hostname");
		in.sysname = rt_metadata_env(md, "sysname");
		in.kernel_release = rt_metadata_env(md, "kernel_release");
		in.kernel_version = rt_metadata_env(md, "kernel_version");
		in.trace_name = base_name(x->t->dir, name, sizeof(name));
		in.comment = "written by ringtrace " RINGTRACE_VERSION
			     " (export -f lttng) from a ringtrace trace, in the layout of"
			     " LTTng 2.13's kernel traces";
		if (ok && lw_finish(l->w, &in))
			err = -1;
	}
	if (ok && l->copies)
		warn("%" PRIu64 " user stacks recorded as copies (--ustack-mode copy) are not unwound by this export: their events' callstack_user is empty",
		     l->copies);
	lw_free(l->w);
	stack_lost_warn(l->sr);
	stackrec_free(l->sr);
	lb_free(&l->held.pl);
	free(l->sc_by_label);
	rt_tidmap_free(&l->threads);
	rt_tidmap_free(&l->running);
	lb_free(&l->pl);
	lb_free(&l->tsdl);
	free(l->kinds);
	free(l);
	x->priv = NULL;
	return ok ? err : -1;
}

const struct export_format export_lttng = {
	.name = "lttng",
	.help =
"  lttng         a directory (-o OUTDIR, which must not exist or be empty)\n"
"                in LTTng 2.13's kernel trace layout: OUTDIR/kernel/metadata\n"
"                and channel0_N per CPU, LTTng's event names and fields\n"
"                (syscall_entry_<name>, lttng_statedump_process_state, ...),\n"
"                every event's stacks (record --stack, --ustack, --sample) as\n"
"                LTTng's callstack_kernel and callstack_user contexts,\n"
"                cpu_sample an event of its own; for Trace Compass,\n"
"                lttng-analyses and babeltrace.\n",
	.directory = true,
	.user_stacks = true,
	.begin = begin,
	.item = item,
	.end = end,
};
