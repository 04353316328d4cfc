/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface between probe_events (dynprobes.c: the list, the file, the
 * arming and the lifetime of every dynamic probe) and a kind of probe that
 * lives in a file of its own (uprobes.c).  A kind parses its command into
 * a struct rtr_dynprobe it embeds, and attaches and detaches it; the rest
 * is common.
 */
#ifndef _RINGTRACE_DYNPROBES_H
#define _RINGTRACE_DYNPROBES_H

#include <linux/kallsyms.h>
#include <linux/list.h>
#include <linux/path.h>
#include <linux/ptrace.h>
#include <linux/ringtrace.h>
#include <linux/sched.h>

#include "compat.h"
#include "probes.h"

#define RTR_DYNPROBE_ARGS	6
/* "kretprobe_" + a symbol + "_0x" + 16 hex digits; uprobes.c fits in it. */
#define RTR_DYNPROBE_NAME_MAX	(KSYM_NAME_LEN + 32)

/*
 * usdt.c: what sdt.h passes at most (the CLI's USDT_ARGS_MAX,
 * tools/cli/usdt.h), and the sites of one probe at most (USDT_SITES_MAX):
 * more than a loop unrolled or a probe inlined into a few callers give.
 */
#define RTR_USDT_ARGS_MAX	12
#define RTR_USDT_SITES_MAX	32
/*
 * What the CLI writes for a site at most: " at=0x" and 16 hex digits,
 * then 12 operands of 39 characters: " a11=8s@-9223372036854775808(r15,r15,8)".
 */
#define RTR_USDT_SITE_CMD_MAX	512
static_assert(sizeof(" at=0x") - 1 + 16 +
	      RTR_USDT_ARGS_MAX * (sizeof(" a11=8s@-9223372036854775808(r15,r15,8)") - 1) <=
	      RTR_USDT_SITE_CMD_MAX);

/* Probes that record the first six argument registers (kprobe, uprobe). */
struct rtr_dynprobe_args_payload {
	u64 arg[RTR_DYNPROBE_ARGS];
} __packed;
static_assert(sizeof(struct rtr_dynprobe_args_payload) == 48);
#define RTR_DYNPROBE_ARGS_FIELDS					\
	"uint64_t arg0; uint64_t arg1; uint64_t arg2; uint64_t arg3; "	\
	"uint64_t arg4; uint64_t arg5;"

struct file;
struct rtr_dynprobe;
struct seq_file;

struct rtr_dynprobe_ops {
	/*
	 * The event's fields (TSDL), and the fields its filter and trigger
	 * name: set by RTR_DYNPROBE_FIELDS() from the function that passes
	 * their values, the one the handler ->attach() installs calls.  NULL
	 * for a kind whose fields differ from probe to probe (usdt.c): its
	 * parser sets each probe's event.fields, ff and nff.
	 */
	const char *fields;
	const struct rtr_filter_field *ff;
	unsigned int nff;
	/*
	 * Puts the probe into the kernel, or fails with nothing left; its
	 * handler writes nothing until ->armed [D1].
	 */
	int (*attach)(struct rtr_dynprobe *p);
	/*
	 * Takes the @n probes of @ps, all of this kind, out; returns once no
	 * handler of any of them runs anywhere.  One wait for all of them
	 * where the kind can: a file that made many probes is closed in one
	 * grace period, not one per probe.
	 */
	void (*detach)(struct rtr_dynprobe **ps, unsigned int n);
	/* The command that made it, as read back from probe_events. */
	void (*show)(struct seq_file *m, const struct rtr_dynprobe *p);
	/* Frees what the kind's parser allocated, @p included. */
	void (*free)(struct rtr_dynprobe *p);
};

/*
 * A kind's event and predicate fields, in its ops: @tsdl, and the table
 * of @fn, the function that passes the values to rtr_dynprobe_filtered()
 * -- named fn##_ff, as the tracepoint probes' (probes.c), so that the
 * ops cannot pair a handler with another's table: the verifier checks a
 * predicate against the table the handler's values were checked against
 * at compile time (RTR_FVALS_CHECK()).
 */
#define RTR_DYNPROBE_FIELDS(tsdl, fn)					\
	.fields = (tsdl), .ff = fn##_ff, .nff = ARRAY_SIZE(fn##_ff)

/*
 * What the predicates of a kprobe or a uprobe name (events/<name>/filter
 * and trigger, dynprobes.c): arg0 .. arg5 and comm, the values
 * rtr_dynprobe_write_args() passes.  A kretprobe's: ret and comm.
 */
extern const struct rtr_filter_field
rtr_dynprobe_write_args_ff[RTR_DYNPROBE_ARGS + 1];

/* Embedded first in each kind's own probe; filled by its parser. */
struct rtr_dynprobe {
	/* Read by the handler on every hit. */
	struct ringtrace_event event;	/* id valid once armed */
	bool armed;			/* [D1] */
	/* The predicate and the trigger, NULL when none: filter.c [F1] */
	struct rtr_filter __rcu *filter;
	struct rtr_filter __rcu *trigger;

	/* Set by the parser, then constant. */
	const struct rtr_dynprobe_ops *ops;
	/*
	 * What its filter and trigger name: its ops' (set when it is added),
	 * or its own, set by its parser (usdt.c).
	 */
	const struct rtr_filter_field *ff;
	unsigned int nff;
	u8 ustack;			/* RTR_USTACK_*: " ustack [entry]" */

	/* Under rtr_dynprobes_lock (dynprobes.c). */
	const struct file *owner;	/* the open file that made it */
	struct list_head node;
	struct dentry *dir;		/* events/<name>/ in debugfs, or NULL */
	/* events/<name>/filter's and trigger's data; set before the files */
	struct rtr_pred_file filter_file;
	struct rtr_pred_file trigger_file;
	char name[RTR_DYNPROBE_NAME_MAX];

	/* Last refused write's, of each file; rtr_probes_lock */
	char *filter_err;
	char *trigger_err;
};

/*
 * True if @p has a predicate and the hit with the values given (union
 * rtr_fval initialisers, one per field of @ff: the calling function's
 * table, the one its kind's ops name) fails it: the handler writes
 * nothing.  If it passes and @p's trigger matches, *@hit is set: the
 * handler fires the trigger once its event is written (trigger.c).
 * Without either: the store of *@hit = false before, two loads and a
 * predicted branch here, the values not even computed, and the load and
 * test of @hit before the commit (rtr_dynprobe_commit_rsv()).  With
 * preemption off (filter.c [F1]).
 */
#define rtr_dynprobe_filtered(p, hit, ff, ...)				\
({									\
	const struct rtr_filter *__f = rcu_dereference_sched((p)->filter); \
	const struct rtr_filter *__t = rcu_dereference_sched((p)->trigger); \
	RTR_FVALS_CHECK(ff, __VA_ARGS__);				\
	unlikely(__f || __t) &&						\
		rtr_pred_judge(__f, __t,				\
			       (const union rtr_fval[]){ __VA_ARGS__ }, hit); \
})

/* The event's id, or false while the probe is not armed yet. */
static __always_inline bool rtr_dynprobe_id(const struct rtr_dynprobe *p,
					    unsigned int *id)
{
	/* [D1] Pairs with smp_store_release() in rtr_dynprobe_add(). */
	if (!smp_load_acquire(&p->armed))
		return false;
	*id = p->event.id;
	return true;
}

/*
 * Reserve @len bytes for the event @id of @p, with the user stack as a
 * trailer when @p asks for it (stack.c); rtr_dynprobe_commit_rsv() then.
 */
static __always_inline void *rtr_dynprobe_reserve(struct rtr_rsv *w,
						  const struct rtr_dynprobe *p,
						  unsigned int id,
						  unsigned int len)
{
	w->slow = 0;
	if (unlikely(p->ustack))
		return rtr_stack_reserve(w, id, len, false, p->ustack);
	return ringtrace_reserve(&w->r, id, len);
}

/*
 * Commit the event @id of a dynamic probe's handler as rtr_commit() does
 * a tracepoint's (probes.c): its stack trailers, then its trigger's hit
 * if it matched (@hit), fired once the event is in the buffer.  The
 * handler runs with preemption off (dynprobes.c): still on the event's
 * CPU after the commit.
 */
static __always_inline void rtr_dynprobe_commit_rsv(struct rtr_rsv *w,
						    unsigned int id, bool hit)
{
	if (unlikely(hit)) {
		w->slow |= RTR_RSV_HIT;
		w->hit_id = id;
	}
	rtr_commit(w);
}

/*
 * One event of @p with the six argument registers of @regs (x86-64: the
 * same registers in the kernel's and in the user ABI).  With preemption
 * off: the pid filter is RCU-sched.
 */
static __always_inline void rtr_dynprobe_write_args(const struct rtr_dynprobe *p,
						    struct pt_regs *regs)
{
	struct rtr_dynprobe_args_payload *e;
	u64 arg[RTR_DYNPROBE_ARGS];
	struct rtr_rsv w;
	unsigned int i, id;
	bool hit = false;

	if (!rtr_dynprobe_id(p, &id) || !rtr_task_traced(current))
		return;
	for (i = 0; i < RTR_DYNPROBE_ARGS; i++)
		arg[i] = regs_get_kernel_argument(regs, i);
	if (rtr_dynprobe_filtered(p, &hit, rtr_dynprobe_write_args_ff,
				  RTR_FI(arg[0]), RTR_FI(arg[1]),
				  RTR_FI(arg[2]), RTR_FI(arg[3]),
				  RTR_FI(arg[4]), RTR_FI(arg[5]),
				  RTR_FS(current->comm)))
		return;
	e = rtr_dynprobe_reserve(&w, p, id, sizeof(*e));
	if (!e)
		return;
	for (i = 0; i < RTR_DYNPROBE_ARGS; i++)
		e->arg[i] = arg[i];
	rtr_dynprobe_commit_rsv(&w, id, hit);
}

/* uprobes.c: "u:PATH:OFFSET[@LABEL]" (@cmd) into a new probe, or an ERR_PTR. */
struct rtr_dynprobe *rtr_uprobe_parse(char *cmd);

/* A LABEL's length; with "uprobe_", a file name and '_' it fits a name. */
#define RTR_UPROBE_LABEL_MAX	NAME_MAX

/*
 * uprobes.c: a uprobe at an offset of a file, and maybe a USDT
 * semaphore's: what the kinds of user-space probe (uprobes.c, usdt.c)
 * share, embedded in their own probe.
 */
struct rtr_uprobe_site {
	struct uprobe_consumer consumer;	/* its handler: the kind's */

	/* Set by the parser, then constant. */
	char *file;			/* PATH as written */
	loff_t offset;
	loff_t ref_ctr_offset;		/* the semaphore's, 0 if none */

	/* While attached. */
	struct path path;
	struct rtr_uprobe_ref ref;
};

/*
 * "PATH:OFFSET[@LABEL]" (@spec, cut up) into @s's file and offset and
 * @label ("" if none, else RTR_UPROBE_LABEL_MAX at most): 0, or an errno
 * with nothing allocated.
 */
int rtr_uprobe_site_parse(struct rtr_uprobe_site *s, char *spec,
			  char label[RTR_UPROBE_LABEL_MAX + 1]);
/* Looks the file up and registers @s->consumer; 0 or an errno, nothing left. */
int rtr_uprobe_site_attach(struct rtr_uprobe_site *s);
/*
 * Detaching a site takes two steps, so that many sites (of many probes)
 * cost one wait: each unlinked (no new handler call), then one
 * rtr_uprobe_unregister_sync() (compat.h) for the handlers running, then
 * each put (the file's path released).
 */
void rtr_uprobe_site_unlink(struct rtr_uprobe_site *s);
void rtr_uprobe_site_put(struct rtr_uprobe_site *s);
/* Frees what rtr_uprobe_site_parse() allocated. */
void rtr_uprobe_site_free(struct rtr_uprobe_site *s);

/*
 * usdt.c: "s:PATH:OFFSET@LABEL[ ref=OFF][ a0=ARG ...][ at=OFFSET a0=ARG ...]..."
 * into a new probe, or an ERR_PTR.
 */
struct rtr_dynprobe *rtr_usdt_parse(char *cmd);

#endif /* _RINGTRACE_DYNPROBES_H */
