/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace.ko's tracepoint probes (probes.c) and their shell controls
 * (events_ctl.c); not an API.  Documentation/ringtrace/events.rst says what
 * a user sees.
 */
#ifndef _RINGTRACE_PROBES_H
#define _RINGTRACE_PROBES_H

#include <linux/bitmap.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/ringtrace.h>
#include <linux/types.h>

struct dentry;
struct task_struct;
struct tracepoint;

/*
 * The events, in id order (the marker holds id 0, so these get 1..18).
 * The state dump's two (statedump.c) have no tracepoint: they are written
 * when tracing starts.  New events go at the end: the ids of the events
 * before stay as they were.
 */
enum rtr_probe_index {
	RTR_PROBE_SCHED_SWITCH,
	RTR_PROBE_SCHED_WAKEUP,
	RTR_PROBE_SCHED_WAKEUP_NEW,
	RTR_PROBE_SCHED_PROCESS_FORK,
	RTR_PROBE_SCHED_PROCESS_EXEC,
	RTR_PROBE_SCHED_PROCESS_EXIT,
	RTR_PROBE_IRQ_HANDLER_ENTRY,
	RTR_PROBE_IRQ_HANDLER_EXIT,
	RTR_PROBE_SOFTIRQ_ENTRY,
	RTR_PROBE_SOFTIRQ_EXIT,
	RTR_PROBE_SYSCALL_ENTRY,
	RTR_PROBE_SYSCALL_EXIT,
	RTR_PROBE_STATEDUMP_TASK,
	RTR_PROBE_STATEDUMP_CPU,
	RTR_PROBE_TASK_RENAME,
	RTR_PROBE_SCHED_WAKING,
	RTR_PROBE_SCHED_PROCESS_FREE,
	RTR_PROBE_SCHED_MIGRATE_TASK,
	RTR_NR_PROBES
};

/*
 * filter.c: what a predicate can name.  A probe passes the values of its
 * event's fields, in its table's order, as an array of union rtr_fval.
 */
enum rtr_ff_type {
	RTR_FF_INT,		/* compared as s64 */
	RTR_FF_SYSCALL,		/* an integer that also takes a call's name */
	RTR_FF_STR,		/* NUL-terminated; == and != a glob */
};

struct rtr_filter_field {
	const char *name;
	enum rtr_ff_type type;
};

union rtr_fval {
	s64 i;
	const char *s;
};

struct rtr_filter;

/* One kernel tracepoint feeding one ringtrace event. */
struct rtr_probe {
	struct ringtrace_event event;	/* name, TSDL fields, id */
	const char *tp_name;		/* the kernel's tracepoint, or NULL */
	void *func;			/* our probe on it */
	struct tracepoint *tp;		/* NULL: this kernel lacks it */
	bool enabled;			/* registered; under rtr_probes_lock */
	bool stack;			/* events carry the kernel stack (stack.c) */
	bool ustack;			/* and/or the user stack */
	/* Read by the probe: the predicate, NULL when none (filter.c) */
	struct rtr_filter __rcu *filter;
	/* and the trigger's condition, NULL when none (trigger.c) */
	struct rtr_filter __rcu *trigger;
	/* What it may name; no table, no filter file */
	const struct rtr_filter_field *ffields;
	unsigned int nr_ffields;
	char *filter_err;		/* last refused write's reason; lock */
	char *trigger_err;		/* the same for the trigger file */
};

/* probes.c */
extern struct rtr_probe rtr_probes[RTR_NR_PROBES];
extern struct mutex rtr_probes_lock;

int rtr_probes_init(void);
void rtr_probes_init_undo(void);
void rtr_probes_exit(void);
int rtr_probes_set(const unsigned long *mask, const unsigned long *on);

/* An event without a tracepoint (the state dump) is always there. */
static inline bool rtr_probe_available(const struct rtr_probe *p)
{
	return p->tp || !p->tp_name;
}

/* The state dump's stacks would be the dump's own: only tracepoints'. */
static inline bool rtr_probe_can_stack(const struct rtr_probe *p)
{
	return p->tp;
}

/*
 * A probe's event, from its predicates to its commit: the reservation,
 * and what its commit does beyond ringtrace_commit() -- the stack
 * trailers when the event has set_event_stack or set_event_ustack
 * (stack.c), the trigger's hit when
 * the trigger matched (trigger.c), both flagged in @slow.  rtr_filtered()
 * sets @slow, rtr_reserve() may add RTR_RSV_STACK, rtr_commit() tests it
 * once.  Without a predicate, a trigger or a stack: a store, three loads
 * (the predicate, the two stack flags) and two predicted branches more than ringtrace_reserve() and
 * ringtrace_commit(), and the same bytes in the buffer.
 */
#define RTR_RSV_STACK	1		/* stack trailers were reserved */
#define RTR_RSV_HIT	2		/* the trigger matched: fire at commit */

struct rtr_ucopy_head;

struct rtr_rsv {
	struct ringtrace_reservation r;
	u8 slow;			/* RTR_RSV_*, or 0 */
	unsigned int hit_id;		/* the event's id, with RTR_RSV_HIT */
	unsigned long *ips;		/* with RTR_RSV_STACK: the kernel stack, */
	unsigned int nr;		/* its frames (NULL, 0: no kernel_stack) */
	u64 *uips;			/* the user stack, */
	unsigned int unr;		/* its frames (0: no user_stack) */
	u16 uflags;			/* and its flags (RINGTRACE_USTACK_*) */
	struct rtr_ucopy_head *ucopy;	/* or its copy (NULL: no user_stack_copy) */
	u8 *trailer;			/* where their records go */
	void *payload;			/* the event's, as reserved */
	unsigned int reserved;		/* payload bytes reserved, trailer's too */
	/* Interning (stack.c), with RTR_RSV_STACK: */
	u8 level;			/* this CPU's stack level, the scratch's */
	u8 defs;			/* RTR_DEF_*: a stack_def in this reservation */
	u32 khash, uhash;		/* the stacks' hashes */
	u32 kref, uref;			/* without its def: its def's offset */
	unsigned long pkt;		/* free-running number of our packet */
};

extern struct ringtrace_event rtr_ucopy_event;
extern struct ringtrace_event rtr_stack_def_event;
extern struct ringtrace_event rtr_stack_ref_event;
int rtr_stack_untimed_id(void);
extern bool rtr_ustack_copy_on;
extern unsigned int rtr_ustack_size;
extern unsigned int rtr_stack_depth;
extern unsigned int rtr_ustack_depth;

/* Which user stack rtr_stack_reserve() takes (a dynamic probe's ustack). */
#define RTR_USTACK_OFF		0
#define RTR_USTACK_ON		1	/* from the task's user registers */
#define RTR_USTACK_ENTRY	2	/* ON, the caller read at [sp] first */

void *rtr_stack_reserve_at(struct rtr_rsv *w, unsigned int id,
			   unsigned int len, bool kstack, u8 ustack,
			   unsigned long cut_ip, const unsigned long *frame);
void *rtr_stack_reserve_ips(struct rtr_rsv *w, unsigned int id,
			    unsigned int len, unsigned long *ips,
			    unsigned int nr);
bool rtr_stack_busy(void);

/* A probe's stacks: the kernel one starts where the probe was hit. */
static inline void *rtr_stack_reserve(struct rtr_rsv *w, unsigned int id,
				      unsigned int len, bool kstack,
				      u8 ustack)
{
	return rtr_stack_reserve_at(w, id, len, kstack, ustack, 0, NULL);
}

/*
 * The frame of the tracepoint probe that expands this, for its kernel
 * stack to be walked from the probe's caller on (stack.c,
 * rtr_kstack_save()).  It makes GCC keep a frame pointer in the probe
 * (in the path that takes it, shrink-wrapped): [0] the caller's rbp,
 * [1] the return address into the caller.
 */
#if defined(CONFIG_X86_64) && defined(CONFIG_UNWINDER_ORC)
#define RTR_PROBE_FRAME()	((const unsigned long *)__builtin_frame_address(0))
#else
#define RTR_PROBE_FRAME()	NULL
#endif

void rtr_stack_commit(struct rtr_rsv *w);
void rtr_commit_slow(struct rtr_rsv *w);
int rtr_stack_set(const unsigned long *mask, const unsigned long *on,
		  bool user);
int rtr_stack_set_depth(unsigned int depth, bool user);
void rtr_ustack_stats_show(struct seq_file *m);
int rtr_stack_set_mode(bool copy);
int rtr_stack_set_size(unsigned int size);
int rtr_stack_init(void);
void rtr_stack_start(void);
void rtr_stack_exit(void);

/*
 * @data is the struct rtr_probe a probe was registered with; @w went
 * through rtr_filtered() first.
 */
static __always_inline void *rtr_reserve(struct rtr_rsv *w, const void *data,
					 unsigned int len)
{
	const struct rtr_probe *p = data;
	bool kstack = READ_ONCE(p->stack), ustack = READ_ONCE(p->ustack);

	if (unlikely(kstack | ustack))
		return rtr_stack_reserve_at(w, p->event.id, len, kstack,
					    ustack ? RTR_USTACK_ON :
						     RTR_USTACK_OFF,
					    0, kstack ? RTR_PROBE_FRAME() : NULL);
	return ringtrace_reserve(&w->r, p->event.id, len);
}

static __always_inline void rtr_commit(struct rtr_rsv *w)
{
	if (unlikely(w->slow))
		rtr_commit_slow(w);
	else
		ringtrace_commit(&w->r);
}

/*
 * events_ctl.c: the control files, and the pid filter they set.  The
 * filter is NULL when empty; probes read it with rcu_dereference_sched()
 * (tracepoint probes run with preemption off).
 */
/* Pids one filter can hold; ~1 KiB, searched in at most 9 steps. */
#define RTR_PID_FILTER_MAX	256

struct rtr_pid_filter {
	struct rcu_head rcu;
	/* event_fork: descendants of kept tasks, PID_MAX_LIMIT bits, or NULL */
	unsigned long *followed;
	unsigned int nr;
	pid_t pids[];			/* ascending, no duplicates */
};

extern struct rtr_pid_filter __rcu *rtr_pid_filter;

/* pidfilter.c */
bool rtr_pid_filter_match(const struct rtr_pid_filter *f,
			 const struct task_struct *t);
void rtr_pid_filter_show(struct seq_file *m);
int rtr_pid_filter_set(const pid_t *pids, unsigned int nr, bool append);
bool rtr_pid_follow_get(void);
int rtr_pid_follow_set(bool on);
void rtr_pid_filter_init(void);
/* Detaches the fork probes; then, once no probe runs, free. */
void rtr_pid_follow_exit(void);
void rtr_pid_filter_free(void);

/*
 * cgroupfilter.c: set_event_cgroup, the cgroups (and their descendants)
 * whose tasks are kept; NULL when empty, read like the pid filter.
 */
#define RTR_CGROUP_FILTER_MAX	64

struct rtr_cgroup_filter;
extern struct rtr_cgroup_filter __rcu *rtr_cgroup_filter;

bool rtr_task_kept(const struct rtr_pid_filter *pf,
		   const struct rtr_cgroup_filter *cf,
		   const struct task_struct *t);
void rtr_cgroup_filter_show(struct seq_file *m);
int rtr_cgroup_filter_set(char *buf, bool append);
void rtr_cgroup_filter_free(void);

/*
 * The pid and cgroup filters apply to events about tasks; an event is
 * kept if a task it names passes both.  No filter: two loads and a
 * predicted branch.  With preemption off: a tracepoint probe (the
 * RCU-sched reads here and in rtr_filtered() rely on tracepoints calling
 * their probes with preemption off, true of every kernel the Kbuild
 * file accepts, up to 6.12: 6.13 calls the system-call tracepoints'
 * probes preemptible), a dynamic probe's handler, or a writer's section.
 */
static __always_inline bool rtr_task_traced(const struct task_struct *t)
{
	const struct rtr_pid_filter *pf = rcu_dereference_sched(rtr_pid_filter);
	const struct rtr_cgroup_filter *cf =
		rcu_dereference_sched(rtr_cgroup_filter);

	return likely(!pf && !cf) || rtr_task_kept(pf, cf, t);
}
/* filter.c */
#define RTR_FILTER_MAX_INSNS	64
#define RTR_FILTER_ERR_MAX	256

bool rtr_filter_match(const struct rtr_filter *f, const union rtr_fval *v);
bool rtr_pred_judge(const struct rtr_filter *f, const struct rtr_filter *t,
		    const union rtr_fval *v, bool *hit);
bool rtr_probe_judge(const struct rtr_probe *p, struct rtr_rsv *w,
		     const struct rtr_filter *f, const struct rtr_filter *t,
		     const union rtr_fval *v);
const char *rtr_filter_text(const struct rtr_filter *f);

/*
 * The values a probe passes for a table of fields @ff: one per field, in
 * its order (union rtr_fval initialisers).  The interpreter indexes them
 * with field numbers the verifier checked against @ff alone, so the
 * compiler checks that there are as many values as fields.
 */
#define RTR_FVALS_CHECK(ff, ...)					\
	static_assert(ARRAY_SIZE(ff) ==					\
		      sizeof((const union rtr_fval[]){ __VA_ARGS__ }) /	\
		      sizeof(union rtr_fval), "one value per field of " #ff)

/*
 * A predicate file: events/<name>/filter or events/<name>/trigger, of a
 * tracepoint probe, a dynamic probe or the marker.  Made with its
 * descriptor as the file's data and rtr_pred_fops as its operations; the
 * descriptor is its owner's, set before the file is made and constant
 * while the file exists.
 */
struct rtr_pred_file {
	struct rtr_filter __rcu **prog;	/* what the readers run [F1] */
	char **err;			/* last refused write's; rtr_probes_lock */
	const struct rtr_filter_field *ff;	/* what it may name */
	unsigned int nff;
};

extern const struct file_operations rtr_pred_fops;
void rtr_pred_free(struct rtr_filter __rcu **prog, char **err);
/* The marker's fields, "data" and "comm" (its filter's and trigger's). */
#define RTR_NR_FF_MARKER	2
extern const struct rtr_filter_field rtr_ff_marker[RTR_NR_FF_MARKER];
/* events/ringtrace_marker/filter's (made by events_ctl.c) */
extern struct rtr_pred_file rtr_marker_filter_file;
bool rtr_marker_filtered(const char *data);
void rtr_filters_free(void);

/*
 * trigger.c: events/<name>/trigger, events/ringtrace_marker/trigger and
 * the triggered file.  rtr_trigger_hit() is for an event already written
 * (committed) on @cpu, in the writer's preempt-off section that
 * committed it (trigger.c [T4]); safe in any context.
 */
void rtr_trigger_hit(unsigned int event_id, unsigned int cpu);
bool rtr_marker_matched(const char *data);
int rtr_triggers_init(struct dentry *marker_dir);
void rtr_triggers_exit(void);
void rtr_trigger_cpu_online(void);
void rtr_trigger_cpu_offline(void);
void rtr_trigger_cpu_dead(void);
/* probes.c: the number of this kernel's call @name */
bool rtr_syscall_lookup(const char *name, s64 *nr);

/*
 * True if the probe on @data has a predicate and the event with the field
 * values given (union rtr_fval initialisers, one per field of @ff, the
 * probe's table) fails it: then the probe writes nothing.  An event that
 * passes and matches the probe's trigger is flagged in @w (RTR_RSV_HIT):
 * rtr_commit() fires the trigger once the event is written, so a hit
 * always has its event in the buffer.  Without a predicate and a
 * trigger: two loads, a store and a predicted branch; the values are not
 * even computed.  The reads are RCU-sched: a tracepoint calls its probes
 * with preemption off (on every kernel the Kbuild file accepts, see
 * rtr_task_traced()).
 */
#define rtr_filtered(w, data, ff, ...)					\
({									\
	const struct rtr_probe *__p = (data);				\
	const struct rtr_filter *__f = rcu_dereference_sched(__p->filter); \
	const struct rtr_filter *__t = rcu_dereference_sched(__p->trigger); \
	RTR_FVALS_CHECK(ff, __VA_ARGS__);				\
	(w)->slow = 0;							\
	unlikely(__f || __t) &&						\
		rtr_probe_judge(__p, w, __f, __t,			\
				(const union rtr_fval[]){ __VA_ARGS__ }); \
})
#define RTR_FI(v)	{ .i = (v) }
#define RTR_FS(v)	{ .s = (v) }

/* The files of events_ctl.c, made by rtr_files_init(). */
int rtr_events_ctl_init(void);
/* Their events/ directory in debugfs (an ERR_PTR if debugfs is off). */
extern struct dentry *rtr_events_dir;
/* A NUL-terminated kernel copy of one control file write, or an ERR_PTR. */
char *rtr_ctl_copy(const char __user *ubuf, size_t count);
/* dynprobes.c: probe_events, the kprobes made through it. */
int rtr_dynprobes_init(void);
/* Serialises the dynamic probes; outside rtr_probes_lock when both. */
extern struct mutex rtr_dynprobes_lock;
/* The trigger of the dynamic probe whose event is @id, or NULL if none. */
struct rtr_filter __rcu **rtr_dynprobe_trigger(unsigned int id);

/* statedump.c: the task on each CPU and every task, at tracing start. */
#define RTR_STATEDUMP_TASK_FIELDS					\
	"int32_t tid; int32_t pid; int32_t ppid; utf8_t comm[16]; "	\
	"uint64_t cgroup_id;"
#define RTR_STATEDUMP_CPU_FIELDS "int32_t tid; int32_t pid; utf8_t comm[16];"
void rtr_statedump(void);

/* sampler.c: the CPU sampler, sample_hz and sample_stats. */
extern struct ringtrace_event rtr_sample_event;
int rtr_sampler_set_hz(unsigned int hz);
int rtr_sampler_files_init(void);
void rtr_sampler_exit(void);

#endif /* _RINGTRACE_PROBES_H */
