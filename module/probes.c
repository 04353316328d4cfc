// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: probes on the kernel's sched, irq, softirq and raw_syscalls
 * tracepoints (and the state dump's two events, written by statedump.c
 * when tracing starts), each writing one fixed-layout event with the inline
 * reserve/commit of include/linux/ringtrace.h straight into the per-CPU
 * buffer (through rtr_reserve()/rtr_commit(), which add the kernel and
 * user stacks as trailers for the events of set_event_stack and
 * set_event_ustack: stack.c).  Event and field names are LTTng's where LTTng has the same event,
 * so that tools written for LTTng kernel traces read ours.
 *
 * A probe is attached (tracepoint_probe_register()) only while its event is
 * enabled: a disabled event costs the kernel's own static-key test and
 * nothing else.  Attaching and detaching are safe while tracing runs, since
 * a probe only touches the buffers through the writer API, which is safe
 * from any context.  A probe may still be running on another CPU after
 * tracepoint_probe_unregister() returns; that is harmless until the module
 * goes away, so unload waits with tracepoint_synchronize_unregister().
 *
 * Each payload struct below is mirrored field for field by its TSDL string
 * (CTF types of module/ctf.c, byte aligned, no padding), and the
 * static_asserts pin their sizes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/binfmts.h>
#include <linux/compat.h>
#include <linux/ctype.h>
#include <linux/interrupt.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <asm/syscall.h>
#include <trace/events/irq.h>
#include <trace/events/sched.h>
#include <trace/events/syscalls.h>
#include <trace/events/task.h>

#include "compat.h"
#include "mmap.h"
#include "probes.h"
#include "syscall_enum.h"

#define RTR_COMM_LEN		16
#define RTR_NR_SYSCALL_ARGS	6
/* Longer strings are cut: an event must fit in the smallest sub-buffer. */
#define RTR_EXEC_FILENAME_MAX	1024
#define RTR_IRQ_NAME_MAX		64

static_assert(TASK_COMM_LEN == RTR_COMM_LEN);

/* Serialises attach/detach and pid filter updates; probes never take it. */
DEFINE_MUTEX(rtr_probes_lock);

/* --- payloads ---------------------------------------------------------- */

struct rtr_sched_switch {
	char prev_comm[RTR_COMM_LEN];
	s32 prev_tid;
	s32 prev_prio;
	s64 prev_state;
	char next_comm[RTR_COMM_LEN];
	s32 next_tid;
	s32 next_prio;
} __packed;
static_assert(sizeof(struct rtr_sched_switch) == 56);
#define RTR_SCHED_SWITCH_FIELDS						\
	"utf8_t prev_comm[16]; int32_t prev_tid; int32_t prev_prio; "	\
	"int64_t prev_state; utf8_t next_comm[16]; int32_t next_tid; "	\
	"int32_t next_prio;"

struct rtr_sched_wakeup {
	char comm[RTR_COMM_LEN];
	s32 tid;
	s32 prio;
	s32 target_cpu;
} __packed;
static_assert(sizeof(struct rtr_sched_wakeup) == 28);
#define RTR_SCHED_WAKEUP_FIELDS						\
	"utf8_t comm[16]; int32_t tid; int32_t prio; int32_t target_cpu;"

/*
 * sched_waking: sched_wakeup's payload and the context the waker runs in,
 * appended so that a reader finds the other fields where they were.
 */
struct rtr_sched_waking {
	struct rtr_sched_wakeup w;
	u8 waker_ctx;			/* enum rtr_waker_ctx */
} __packed;
static_assert(sizeof(struct rtr_sched_waking) == 29);
#define RTR_SCHED_WAKING_FIELDS RTR_SCHED_WAKEUP_FIELDS " uint8_t waker_ctx;"

/* waker_ctx's values, the innermost context first (events.rst). */
enum rtr_waker_ctx {
	RTR_WAKER_TASK		= 0,
	RTR_WAKER_SOFTIRQ	= 1,
	RTR_WAKER_HARDIRQ	= 2,
	RTR_WAKER_NMI		= 3,
};

struct rtr_sched_fork {
	char parent_comm[RTR_COMM_LEN];
	s32 parent_tid;
	s32 parent_pid;
	char child_comm[RTR_COMM_LEN];
	s32 child_tid;
	s32 child_pid;
	u64 child_cgroup_id;		/* appended: the others keep their offsets */
} __packed;
static_assert(sizeof(struct rtr_sched_fork) == 56);
#define RTR_SCHED_FORK_FIELDS						\
	"utf8_t parent_comm[16]; int32_t parent_tid; int32_t parent_pid; " \
	"utf8_t child_comm[16]; int32_t child_tid; int32_t child_pid; "	\
	"uint64_t child_cgroup_id;"

/* The string goes last so that the struct keeps a fixed layout. */
struct rtr_sched_exec {
	s32 tid;
	s32 old_tid;
	u16 filename_len;
	char filename[];
} __packed;
static_assert(sizeof(struct rtr_sched_exec) == 10);
#define RTR_SCHED_EXEC_FIELDS						\
	"int32_t tid; int32_t old_tid; uint16_t filename_len; "		\
	"utf8_t filename[filename_len];"

struct rtr_sched_exit {
	char comm[RTR_COMM_LEN];
	s32 tid;
	s32 prio;
} __packed;
static_assert(sizeof(struct rtr_sched_exit) == 24);
#define RTR_SCHED_EXIT_FIELDS "utf8_t comm[16]; int32_t tid; int32_t prio;"

struct rtr_sched_migrate {
	char comm[RTR_COMM_LEN];
	s32 tid;
	s32 prio;
	s32 orig_cpu;
	s32 dest_cpu;
} __packed;
static_assert(sizeof(struct rtr_sched_migrate) == 32);
#define RTR_SCHED_MIGRATE_FIELDS					\
	"utf8_t comm[16]; int32_t tid; int32_t prio; int32_t orig_cpu; " \
	"int32_t dest_cpu;"

/* prctl(PR_SET_NAME), a write to /proc/PID/comm, and exec. */
struct rtr_task_rename {
	s32 tid;
	char oldcomm[RTR_COMM_LEN];
	char newcomm[RTR_COMM_LEN];
	s16 oom_score_adj;
} __packed;
static_assert(sizeof(struct rtr_task_rename) == 38);
#define RTR_TASK_RENAME_FIELDS						\
	"int32_t tid; utf8_t oldcomm[16]; utf8_t newcomm[16]; "		\
	"int16_t oom_score_adj;"

struct rtr_irq_entry {
	s32 irq;
	u16 name_len;
	char name[];
} __packed;
static_assert(sizeof(struct rtr_irq_entry) == 6);
#define RTR_IRQ_ENTRY_FIELDS						\
	"int32_t irq; uint16_t name_len; utf8_t name[name_len];"

struct rtr_irq_exit {
	s32 irq;
	s32 ret;
} __packed;
static_assert(sizeof(struct rtr_irq_exit) == 8);
#define RTR_IRQ_EXIT_FIELDS "int32_t irq; int32_t ret;"

struct rtr_softirq {
	u32 vec;
} __packed;
static_assert(sizeof(struct rtr_softirq) == 4);
#define RTR_SOFTIRQ_FIELDS "uint32_t vec;"

/*
 * The system call number, as an enum of the names of this kernel's own
 * <asm/unistd.h> (syscall_enum.h, generated at build time): readers print
 * "getppid" next to 110.  Numbers without a name (a 32-bit task's compat
 * call, which reports its own ABI's number) print as numbers.
 *
 * 32 bits, though the tracepoints pass a long: the number is an int
 * (syscall_get_nr() returns one, the low 32 bits of orig_ax, and that
 * is what do_syscall_64() and the 32-bit entries dispatch on), so the
 * upper half of a 64-bit field only repeated its sign (-1: no call).
 * 4 bytes less in each event: a getppid() loop writes 25 bytes a call,
 * not 33.
 */
#define RTR_SYSCALL_ID_FIELD						\
	"enum : int32_t { " RTR_SYSCALL_ENUMERATORS " } id;"

static_assert(sizeof(syscall_get_nr(NULL, NULL)) == sizeof(s32));

/* The tracepoints' id (or syscall_get_nr()'s) as recorded: no bit lost. */
static __always_inline s32 rtr_syscall_nr(long nr)
{
	return (s32)nr;
}

/*
 * Only the arguments the call has: getppid() is 5 bytes of payload, not
 * the 53 with six argument registers, which cuts what a system-call loop
 * writes to a third (entry and exit: 73 -> 25 bytes with the headers) and
 * so triples the time the ring lasts under it (benchmarks.rst, the
 * storm).  The count is the call's sys_NAME() prototype's
 * (RTR_SYSCALL_NARGS, generated from the kernel's own
 * <linux/syscalls.h>); 6 where there is none, and for a 32-bit task's
 * call, whose number is its own ABI's.
 */
struct rtr_syscall_entry {
	s32 id;
	u8 nr_args;
	u64 args[];
} __packed;
static_assert(sizeof(struct rtr_syscall_entry) == 5);
#define RTR_SYSCALL_ENTRY_FIELDS					\
	RTR_SYSCALL_ID_FIELD " uint8_t nr_args; uint64_t args[nr_args];"

static const u8 rtr_syscall_nargs[] = RTR_SYSCALL_NARGS;

struct rtr_syscall_exit {
	s32 id;
	s64 ret;
} __packed;
static_assert(sizeof(struct rtr_syscall_exit) == 12);
#define RTR_SYSCALL_EXIT_FIELDS RTR_SYSCALL_ID_FIELD " int64_t ret;"

/*
 * --- what a filter can name (filter.c) --------------------------------
 *
 * The payload's fields, in the order the probe passes their values to
 * rtr_filtered(); a glob sees the string as filter.c says (its first
 * RTR_FILTER_GLOB_SPAN bytes), also where the record cuts it (exec's
 * filename, an irq's name).  Every table has "comm": the
 * event's own field of that name, or,
 * for an event without one, the current task's name (the task the event
 * happens in: prev for sched_switch, the interrupted task for an irq).
 * An array's elements are named as report prints them: args[0].
 *
 * A table is named after the probe function that passes its values,
 * FN_ff: rtr_filtered() there checks at compile time that it passes one
 * value per field, and the function's row in rtr_probes[] (RTR_PROBE_F)
 * takes the table by that name, so a row cannot pair a function with
 * another's table.
 */
#define RTR_FF(n, t)	{ .name = n, .type = RTR_FF_##t }

static const struct rtr_filter_field rtr_probe_sched_switch_ff[] = {
	RTR_FF("prev_comm", STR), RTR_FF("prev_tid", INT),
	RTR_FF("prev_prio", INT), RTR_FF("prev_state", INT),
	RTR_FF("next_comm", STR), RTR_FF("next_tid", INT),
	RTR_FF("next_prio", INT), RTR_FF("comm", STR),
};

static const struct rtr_filter_field rtr_write_wakeup_ff[] = {
	RTR_FF("comm", STR), RTR_FF("tid", INT), RTR_FF("prio", INT),
	RTR_FF("target_cpu", INT),
};

static const struct rtr_filter_field rtr_probe_sched_waking_ff[] = {
	RTR_FF("comm", STR), RTR_FF("tid", INT), RTR_FF("prio", INT),
	RTR_FF("target_cpu", INT), RTR_FF("waker_ctx", INT),
};

static const struct rtr_filter_field rtr_probe_sched_migrate_task_ff[] = {
	RTR_FF("comm", STR), RTR_FF("tid", INT), RTR_FF("prio", INT),
	RTR_FF("orig_cpu", INT), RTR_FF("dest_cpu", INT),
};

static const struct rtr_filter_field rtr_probe_sched_process_fork_ff[] = {
	RTR_FF("parent_comm", STR), RTR_FF("parent_tid", INT),
	RTR_FF("parent_pid", INT), RTR_FF("child_comm", STR),
	RTR_FF("child_tid", INT), RTR_FF("child_pid", INT),
	RTR_FF("comm", STR), RTR_FF("child_cgroup_id", INT),
};

static const struct rtr_filter_field rtr_probe_sched_process_exec_ff[] = {
	RTR_FF("tid", INT), RTR_FF("old_tid", INT), RTR_FF("filename", STR),
	RTR_FF("comm", STR),
};

static const struct rtr_filter_field rtr_probe_sched_process_ff[] = {
	RTR_FF("comm", STR), RTR_FF("tid", INT), RTR_FF("prio", INT),
};

static const struct rtr_filter_field rtr_probe_task_rename_ff[] = {
	RTR_FF("tid", INT), RTR_FF("oldcomm", STR), RTR_FF("newcomm", STR),
	RTR_FF("oom_score_adj", INT), RTR_FF("comm", STR),
};

static const struct rtr_filter_field rtr_probe_irq_handler_entry_ff[] = {
	RTR_FF("irq", INT), RTR_FF("name", STR), RTR_FF("comm", STR),
};

static const struct rtr_filter_field rtr_probe_irq_handler_exit_ff[] = {
	RTR_FF("irq", INT), RTR_FF("ret", INT), RTR_FF("comm", STR),
};

static const struct rtr_filter_field rtr_probe_softirq_ff[] = {
	RTR_FF("vec", INT), RTR_FF("comm", STR),
};

/* args[i] past the call's nr_args is not recorded: it reads 0. */
static const struct rtr_filter_field rtr_probe_sys_enter_ff[] = {
	RTR_FF("id", SYSCALL), RTR_FF("nr_args", INT), RTR_FF("comm", STR),
	RTR_FF("args[0]", INT), RTR_FF("args[1]", INT), RTR_FF("args[2]", INT),
	RTR_FF("args[3]", INT), RTR_FF("args[4]", INT), RTR_FF("args[5]", INT),
};

static const struct rtr_filter_field rtr_probe_sys_exit_ff[] = {
	RTR_FF("id", SYSCALL), RTR_FF("ret", INT), RTR_FF("comm", STR),
};

/*
 * The names of the syscall events' enum: "\"read\" = 0, \"write\" = 1, ...".
 * Looked up in the text the metadata declares, so that a filter's name
 * means what the trace will print.
 */
bool rtr_syscall_lookup(const char *name, s64 *nr)
{
	static const char enumerators[] = RTR_SYSCALL_ENUMERATORS;
	const char *s = enumerators, *end, *d;
	size_t n = strlen(name);
	s64 v;

	while ((s = strchr(s, '"'))) {
		s++;
		end = strchr(s, '"');
		if (!end)
			break;
		if (end - s == n && !memcmp(s, name, n)) {
			for (d = end + 1; *d == ' ' || *d == '='; d++)
				;
			for (v = 0; isdigit(*d); d++)
				v = v * 10 + (*d - '0');
			*nr = v;
			return true;
		}
		s = end + 1;
	}
	return false;
}

/* --- helpers ------------------------------------------------------------ */

/* Either task named by the event (rtr_task_traced() in probes.h). */
static __always_inline bool rtr_tasks_traced(const struct task_struct *a,
					    const struct task_struct *b)
{
	const struct rtr_pid_filter *pf = rcu_dereference_sched(rtr_pid_filter);
	const struct rtr_cgroup_filter *cf =
		rcu_dereference_sched(rtr_cgroup_filter);

	return likely(!pf && !cf) || rtr_task_kept(pf, cf, a) ||
	       rtr_task_kept(pf, cf, b);
}

/* LTTng's priority: the kernel's prio minus MAX_RT_PRIO (nice 0 is 20). */
static __always_inline s32 rtr_probe_prio(const struct task_struct *t)
{
	return t->prio - MAX_RT_PRIO;
}

/*
 * The prev_state encoding of ftrace and LTTng: 0 runnable, else
 * 1 << (task state index - 1) (1 S, 2 D, 4 T, 8 t, 16 X, 32 Z, 64 P,
 * 128 I), and TASK_REPORT_MAX when the task was preempted while runnable.
 */
static __always_inline s64 rtr_switch_state(bool preempt, unsigned int state,
					   const struct task_struct *prev)
{
	unsigned int idx;

	if (preempt)
		return TASK_REPORT_MAX;
	idx = __task_state_index(state, prev->exit_state);
	return idx ? 1 << (idx - 1) : 0;
}

static __always_inline unsigned int rtr_strlen(const char *s, unsigned int max)
{
	return s ? strnlen(s, max) : 0;
}

/* A NULL string (len 0) is recorded as an empty one. */
static __always_inline void rtr_strcpy(char *dst, const char *s,
				      unsigned int len)
{
	if (len)
		memcpy(dst, s, len);
}

/* Argument @i of a call with @n, as recorded: 0 past @n. */
static __always_inline s64 rtr_sys_arg(const unsigned long *args,
				       unsigned int n, unsigned int i)
{
	return i < n ? (s64)args[i] : 0;
}

/* A NULL string is filtered as the empty one it is recorded as. */
static __always_inline const char *rtr_fstr(const char *s)
{
	return s ?: "";
}

/*
 * rtr_commit() of an event with a stack trailer, a trigger's hit, or both
 * (probes.h).  The hit is fired once the event is committed, so the
 * snapshot it asks for finds the event in the buffer: an event dropped at
 * reserve (full, held, nested, too big) came no further than its
 * rtr_reserve(), and fires nothing.  The tracepoint keeps preemption off
 * around its probes: still the event's CPU after the commit.
 */
void rtr_commit_slow(struct rtr_rsv *w)
{
	if (w->slow & RTR_RSV_STACK)
		rtr_stack_commit(w);
	else
		ringtrace_commit(&w->r);
	if (w->slow & RTR_RSV_HIT)
		rtr_trigger_hit(w->hit_id, smp_processor_id());
}

/* --- probes ------------------------------------------------------------- */

static void rtr_probe_sched_switch(void *data, bool preempt,
				  struct task_struct *prev,
				  struct task_struct *next,
				  unsigned int prev_state)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_switch *p;

	if (!rtr_tasks_traced(prev, next))
		return;
	if (rtr_filtered(&r, data, rtr_probe_sched_switch_ff,
			 RTR_FS(prev->comm), RTR_FI(prev->pid),
			 RTR_FI(rtr_probe_prio(prev)),
			 RTR_FI(rtr_switch_state(preempt, prev_state, prev)),
			 RTR_FS(next->comm), RTR_FI(next->pid),
			 RTR_FI(rtr_probe_prio(next)), RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->prev_comm, prev->comm, RTR_COMM_LEN);
	p->prev_tid = prev->pid;
	p->prev_prio = rtr_probe_prio(prev);
	p->prev_state = rtr_switch_state(preempt, prev_state, prev);
	memcpy(p->next_comm, next->comm, RTR_COMM_LEN);
	p->next_tid = next->pid;
	p->next_prio = rtr_probe_prio(next);
	rtr_commit(&r);
}

/* The payload of sched_wakeup and sched_wakeup_new. */
static __always_inline void rtr_write_wakeup(const void *data,
					     struct task_struct *t)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_wakeup *p;

	if (rtr_filtered(&r, data, rtr_write_wakeup_ff,
			 RTR_FS(t->comm), RTR_FI(t->pid),
			 RTR_FI(rtr_probe_prio(t)), RTR_FI(task_cpu(t))))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->comm, t->comm, RTR_COMM_LEN);
	p->tid = t->pid;
	p->prio = rtr_probe_prio(t);
	p->target_cpu = task_cpu(t);
	rtr_commit(&r);
}

/* It passes its values through rtr_write_wakeup(). */
#define rtr_probe_sched_wakeup_ff	rtr_write_wakeup_ff

/* sched_wakeup and sched_wakeup_new: same payload, @data tells them apart. */
static void rtr_probe_sched_wakeup(void *data, struct task_struct *t)
{
	if (rtr_task_traced(t))
		rtr_write_wakeup(data, t);
}

/*
 * The context the waker runs in, from the kernel's own helpers: an NMI
 * also counts as a hard interrupt, and a hard interrupt may have cut into
 * a softirq, so the innermost is asked first.  On PREEMPT_RT softirqs run
 * in task context (ksoftirqd, ktimers, local_bh_enable()), and
 * in_serving_softirq() reads the task's own softirq_disable_cnt there,
 * which has SOFTIRQ_OFFSET while it handles them: 1 there as well.  Only
 * the hard interrupt part of an interrupt is 2; a threaded handler is 0.
 */
static __always_inline u8 rtr_waker_ctx(void)
{
	if (in_nmi())
		return RTR_WAKER_NMI;
	if (in_hardirq())
		return RTR_WAKER_HARDIRQ;
	if (in_serving_softirq())
		return RTR_WAKER_SOFTIRQ;
	return RTR_WAKER_TASK;
}

/*
 * sched_waking fires in the waker's context, on its CPU, before the wakee
 * is given a CPU: target_cpu is the CPU it last ran on (the kernel's own
 * event says the same).  Kept if the wakee or the waker is traced.  Its
 * own body, not rtr_write_wakeup()'s, so the other two pay nothing for
 * waker_ctx.
 */
static void rtr_probe_sched_waking(void *data, struct task_struct *t)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_waking *p;
	u8 ctx;

	if (!rtr_tasks_traced(t, current))
		return;
	ctx = rtr_waker_ctx();
	if (rtr_filtered(&r, data, rtr_probe_sched_waking_ff,
			 RTR_FS(t->comm), RTR_FI(t->pid),
			 RTR_FI(rtr_probe_prio(t)), RTR_FI(task_cpu(t)),
			 RTR_FI(ctx)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->w.comm, t->comm, RTR_COMM_LEN);
	p->w.tid = t->pid;
	p->w.prio = rtr_probe_prio(t);
	p->w.target_cpu = task_cpu(t);
	p->waker_ctx = ctx;
	rtr_commit(&r);
}

/*
 * set_task_cpu(), under the task's runqueue lock(s): before the move, so
 * task_cpu() is still the CPU it leaves.
 */
static void rtr_probe_sched_migrate_task(void *data, struct task_struct *t,
					 int dest_cpu)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_migrate *p;

	if (!rtr_task_traced(t))
		return;
	if (rtr_filtered(&r, data, rtr_probe_sched_migrate_task_ff,
			 RTR_FS(t->comm), RTR_FI(t->pid),
			 RTR_FI(rtr_probe_prio(t)), RTR_FI(task_cpu(t)),
			 RTR_FI(dest_cpu)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->comm, t->comm, RTR_COMM_LEN);
	p->tid = t->pid;
	p->prio = rtr_probe_prio(t);
	p->orig_cpu = task_cpu(t);
	p->dest_cpu = dest_cpu;
	rtr_commit(&r);
}

static void rtr_probe_sched_process_fork(void *data, struct task_struct *parent,
					struct task_struct *child)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_fork *p;

	if (!rtr_tasks_traced(parent, child))
		return;
	if (rtr_filtered(&r, data, rtr_probe_sched_process_fork_ff,
			 RTR_FS(parent->comm), RTR_FI(parent->pid),
			 RTR_FI(parent->tgid), RTR_FS(child->comm),
			 RTR_FI(child->pid), RTR_FI(child->tgid),
			 RTR_FS(current->comm),
			 RTR_FI(rtr_task_cgroup_id(child))))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->parent_comm, parent->comm, RTR_COMM_LEN);
	p->parent_tid = parent->pid;
	p->parent_pid = parent->tgid;
	memcpy(p->child_comm, child->comm, RTR_COMM_LEN);
	p->child_tid = child->pid;
	p->child_pid = child->tgid;
	/* cgroup_post_fork() is behind it: a CLONE_INTO_CGROUP child's own. */
	p->child_cgroup_id = rtr_task_cgroup_id(child);
	rtr_commit(&r);
}

static void rtr_probe_sched_process_exec(void *data, struct task_struct *t,
					pid_t old_pid,
					struct linux_binprm *bprm)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_exec *p;
	unsigned int len;

	if (!rtr_task_traced(t))
		return;
	if (rtr_filtered(&r, data, rtr_probe_sched_process_exec_ff,
			 RTR_FI(t->pid), RTR_FI(old_pid),
			 RTR_FS(rtr_fstr(bprm->filename)),
			 RTR_FS(current->comm)))
		return;
	len = rtr_strlen(bprm->filename, RTR_EXEC_FILENAME_MAX);
	p = rtr_reserve(&r, data, sizeof(*p) + len);
	if (!p)
		return;
	p->tid = t->pid;
	p->old_tid = old_pid;
	p->filename_len = len;
	rtr_strcpy(p->filename, bprm->filename, len);
	rtr_commit(&r);
}

/*
 * sched_process_exit and sched_process_free: same payload, @data tells
 * them apart.  The free comes from an RCU callback once the reaped task's
 * last reference is gone, in whatever context runs it.
 */
static void rtr_probe_sched_process(void *data, struct task_struct *t)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_sched_exit *p;

	if (!rtr_task_traced(t))
		return;
	if (rtr_filtered(&r, data, rtr_probe_sched_process_ff,
			 RTR_FS(t->comm), RTR_FI(t->pid),
			 RTR_FI(rtr_probe_prio(t))))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	memcpy(p->comm, t->comm, RTR_COMM_LEN);
	p->tid = t->pid;
	p->prio = rtr_probe_prio(t);
	rtr_commit(&r);
}

/*
 * Called under the task's lock, before the new name is stored: the
 * event carries both, like the kernel's own task_rename.  The task may
 * be another one than current (a write to /proc/PID/comm).
 */
static void rtr_probe_task_rename(void *data, struct task_struct *t,
				  const char *comm)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_task_rename *p;

	if (!rtr_task_traced(t))
		return;
	if (rtr_filtered(&r, data, rtr_probe_task_rename_ff,
			 RTR_FI(t->pid), RTR_FS(t->comm),
			 RTR_FS(rtr_fstr(comm)),
			 RTR_FI(t->signal->oom_score_adj),
			 RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	p->tid = t->pid;
	memcpy(p->oldcomm, t->comm, RTR_COMM_LEN);
	strscpy_pad(p->newcomm, comm, RTR_COMM_LEN);
	p->oom_score_adj = t->signal->oom_score_adj;
	rtr_commit(&r);
}

/* Interrupt events describe no task: the pid filter does not apply. */
static void rtr_probe_irq_handler_entry(void *data, int irq,
				       struct irqaction *action)
{
	unsigned int len = rtr_strlen(action->name, RTR_IRQ_NAME_MAX);
	struct rtr_rsv r __uninitialized;
	struct rtr_irq_entry *p;

	if (rtr_filtered(&r, data, rtr_probe_irq_handler_entry_ff,
			 RTR_FI(irq), RTR_FS(rtr_fstr(action->name)),
			 RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p) + len);
	if (!p)
		return;
	p->irq = irq;
	p->name_len = len;
	rtr_strcpy(p->name, action->name, len);
	rtr_commit(&r);
}

static void rtr_probe_irq_handler_exit(void *data, int irq,
				      struct irqaction *action, int ret)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_irq_exit *p;

	if (rtr_filtered(&r, data, rtr_probe_irq_handler_exit_ff,
			 RTR_FI(irq), RTR_FI(ret),
			 RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	p->irq = irq;
	p->ret = ret;
	rtr_commit(&r);
}

/* softirq_entry and softirq_exit. */
static void rtr_probe_softirq(void *data, unsigned int vec_nr)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_softirq *p;

	if (rtr_filtered(&r, data, rtr_probe_softirq_ff,
			 RTR_FI(vec_nr), RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	p->vec = vec_nr;
	rtr_commit(&r);
}

static void rtr_probe_sys_enter(void *data, struct pt_regs *regs, long orig)
{
	unsigned long args[RTR_NR_SYSCALL_ARGS];
	struct rtr_rsv r __uninitialized;
	struct rtr_syscall_entry *p;
	unsigned int i, n = RTR_NR_SYSCALL_ARGS;
	s32 id;

	if (!rtr_task_traced(current))
		return;
	id = rtr_syscall_nr(orig);
	if (likely((u32)id < ARRAY_SIZE(rtr_syscall_nargs) &&
		   !in_compat_syscall()))
		n = rtr_syscall_nargs[id];
	/*
	 * Fetched before the filter, which may name them; an event it keeps
	 * needs them for its record anyway, one it drops pays the fetch.
	 * Those past @n are not recorded, and the filter sees them as 0, as
	 * report would: zeroed only where a filter runs.
	 */
	syscall_get_arguments(current, regs, args);
	if (rtr_filtered(&r, data, rtr_probe_sys_enter_ff,
			 RTR_FI(id), RTR_FI(n), RTR_FS(current->comm),
			 RTR_FI(rtr_sys_arg(args, n, 0)),
			 RTR_FI(rtr_sys_arg(args, n, 1)),
			 RTR_FI(rtr_sys_arg(args, n, 2)),
			 RTR_FI(rtr_sys_arg(args, n, 3)),
			 RTR_FI(rtr_sys_arg(args, n, 4)),
			 RTR_FI(rtr_sys_arg(args, n, 5))))
		return;
	p = rtr_reserve(&r, data, struct_size(p, args, n));
	if (!p)
		return;
	p->id = id;
	p->nr_args = n;
	/* The arch helper fills an aligned array; the record is unaligned. */
	for (i = 0; i < n; i++)
		p->args[i] = args[i];
	rtr_commit(&r);
}

static void rtr_probe_sys_exit(void *data, struct pt_regs *regs, long ret)
{
	struct rtr_rsv r __uninitialized;
	struct rtr_syscall_exit *p;
	s32 id;

	if (!rtr_task_traced(current))
		return;
	id = rtr_syscall_nr(syscall_get_nr(current, regs));
	if (rtr_filtered(&r, data, rtr_probe_sys_exit_ff,
			 RTR_FI(id), RTR_FI(ret), RTR_FS(current->comm)))
		return;
	p = rtr_reserve(&r, data, sizeof(*p));
	if (!p)
		return;
	p->id = id;
	p->ret = ret;
	rtr_commit(&r);
}

/*
 * tracepoint_probe_register() takes the probe as void *: make the build
 * fail instead if a kernel changes a TP_PROTO under one of our probes.
 * These helpers come with every tracepoint declaration and do nothing.
 */
static void __init rtr_probes_check_types(void)
{
	check_trace_callback_type_sched_switch(rtr_probe_sched_switch);
	check_trace_callback_type_sched_wakeup(rtr_probe_sched_wakeup);
	check_trace_callback_type_sched_wakeup_new(rtr_probe_sched_wakeup);
	check_trace_callback_type_sched_process_fork(rtr_probe_sched_process_fork);
	check_trace_callback_type_sched_process_exec(rtr_probe_sched_process_exec);
	check_trace_callback_type_sched_process_exit(rtr_probe_sched_process);
	check_trace_callback_type_sched_process_free(rtr_probe_sched_process);
	check_trace_callback_type_sched_waking(rtr_probe_sched_waking);
	check_trace_callback_type_sched_migrate_task(rtr_probe_sched_migrate_task);
	check_trace_callback_type_task_rename(rtr_probe_task_rename);
	check_trace_callback_type_irq_handler_entry(rtr_probe_irq_handler_entry);
	check_trace_callback_type_irq_handler_exit(rtr_probe_irq_handler_exit);
	check_trace_callback_type_softirq_entry(rtr_probe_softirq);
	check_trace_callback_type_softirq_exit(rtr_probe_softirq);
#ifdef CONFIG_HAVE_SYSCALL_TRACEPOINTS
	check_trace_callback_type_sys_enter(rtr_probe_sys_enter);
	check_trace_callback_type_sys_exit(rtr_probe_sys_exit);
#endif
}

#define RTR_PROBE(idx, ev_name, tp, fn, tsdl)				\
	[idx] = {							\
		.event = { .name = ev_name, .fields = tsdl },		\
		.tp_name = tp,						\
		.func = (void *)(fn),					\
	}
/* A probe whose event can be filtered: on the fields of @fn's table. */
#define RTR_PROBE_F(idx, ev_name, tp, fn, tsdl)				\
	[idx] = {							\
		.event = { .name = ev_name, .fields = tsdl },		\
		.tp_name = tp,						\
		.func = (void *)(fn),					\
		.ffields = fn##_ff,					\
		.nr_ffields = ARRAY_SIZE(fn##_ff),			\
	}

struct rtr_probe rtr_probes[RTR_NR_PROBES] = {
	RTR_PROBE_F(RTR_PROBE_SCHED_SWITCH, "sched_switch", "sched_switch",
		 rtr_probe_sched_switch, RTR_SCHED_SWITCH_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_WAKEUP, "sched_wakeup", "sched_wakeup",
		 rtr_probe_sched_wakeup, RTR_SCHED_WAKEUP_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_WAKEUP_NEW, "sched_wakeup_new",
		 "sched_wakeup_new", rtr_probe_sched_wakeup,
		 RTR_SCHED_WAKEUP_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_PROCESS_FORK, "sched_process_fork",
		 "sched_process_fork", rtr_probe_sched_process_fork,
		 RTR_SCHED_FORK_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_PROCESS_EXEC, "sched_process_exec",
		 "sched_process_exec", rtr_probe_sched_process_exec,
		 RTR_SCHED_EXEC_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_PROCESS_EXIT, "sched_process_exit",
		 "sched_process_exit", rtr_probe_sched_process,
		 RTR_SCHED_EXIT_FIELDS),
	RTR_PROBE_F(RTR_PROBE_IRQ_HANDLER_ENTRY, "irq_handler_entry",
		 "irq_handler_entry", rtr_probe_irq_handler_entry,
		 RTR_IRQ_ENTRY_FIELDS),
	RTR_PROBE_F(RTR_PROBE_IRQ_HANDLER_EXIT, "irq_handler_exit",
		 "irq_handler_exit", rtr_probe_irq_handler_exit,
		 RTR_IRQ_EXIT_FIELDS),
	/* LTTng's names for the softirq tracepoints. */
	RTR_PROBE_F(RTR_PROBE_SOFTIRQ_ENTRY, "irq_softirq_entry", "softirq_entry",
		 rtr_probe_softirq, RTR_SOFTIRQ_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SOFTIRQ_EXIT, "irq_softirq_exit", "softirq_exit",
		 rtr_probe_softirq, RTR_SOFTIRQ_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SYSCALL_ENTRY, "syscall_entry", "sys_enter",
		 rtr_probe_sys_enter, RTR_SYSCALL_ENTRY_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SYSCALL_EXIT, "syscall_exit", "sys_exit",
		 rtr_probe_sys_exit, RTR_SYSCALL_EXIT_FIELDS),
	/* No tracepoint: statedump.c writes them when tracing starts. */
	RTR_PROBE(RTR_PROBE_STATEDUMP_TASK, "ringtrace_statedump_task", NULL,
		 NULL, RTR_STATEDUMP_TASK_FIELDS),
	RTR_PROBE(RTR_PROBE_STATEDUMP_CPU, "ringtrace_statedump_cpu", NULL,
		 NULL, RTR_STATEDUMP_CPU_FIELDS),
	/* After the state dump: the ids of the events before stay as they were. */
	RTR_PROBE_F(RTR_PROBE_TASK_RENAME, "task_rename", "task_rename",
		 rtr_probe_task_rename, RTR_TASK_RENAME_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_WAKING, "sched_waking", "sched_waking",
		 rtr_probe_sched_waking, RTR_SCHED_WAKING_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_PROCESS_FREE, "sched_process_free",
		 "sched_process_free", rtr_probe_sched_process,
		 RTR_SCHED_EXIT_FIELDS),
	RTR_PROBE_F(RTR_PROBE_SCHED_MIGRATE_TASK, "sched_migrate_task",
		 "sched_migrate_task", rtr_probe_sched_migrate_task,
		 RTR_SCHED_MIGRATE_FIELDS),
};

/* --- attach and detach ---------------------------------------------------- */

static int rtr_probe_attach(struct rtr_probe *p, bool on)
{
	int ret;

	if (!p->tp_name)
		ret = 0;
	else if (on)
		ret = tracepoint_probe_register(p->tp, p->func, p);
	else
		ret = tracepoint_probe_unregister(p->tp, p->func, p);
	if (ret)
		pr_err("%s %s: %d\n", on ? "attaching" : "detaching",
		       p->event.name, ret);
	else
		WRITE_ONCE(p->enabled, on);
	return ret;
}

/*
 * Set every event in @mask to its bit in @on, all or nothing.  Attaching
 * can fail (memory); detaching cannot once attached, so attach first and
 * undo those attaches on failure.  Every index in @mask must be available.
 */
int rtr_probes_set(const unsigned long *mask, const unsigned long *on)
{
	DECLARE_BITMAP(attached, RTR_NR_PROBES);
	struct rtr_probe *p;
	unsigned int i;
	int ret;

	lockdep_assert_held(&rtr_probes_lock);
	bitmap_zero(attached, RTR_NR_PROBES);
	for_each_set_bit(i, mask, RTR_NR_PROBES) {
		p = &rtr_probes[i];
		if (!test_bit(i, on) || p->enabled)
			continue;
		ret = rtr_probe_attach(p, true);
		if (ret)
			goto undo;
		__set_bit(i, attached);
	}
	for_each_set_bit(i, mask, RTR_NR_PROBES) {
		p = &rtr_probes[i];
		if (!test_bit(i, on) && p->enabled)
			rtr_probe_attach(p, false);
	}
	return 0;

undo:
	for_each_set_bit(i, attached, RTR_NR_PROBES)
		rtr_probe_attach(&rtr_probes[i], false);
	return ret;
}

static void rtr_probe_find(struct tracepoint *tp, void *unused)
{
	unsigned int i;

	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probes[i].tp_name &&
		    !strcmp(tp->name, rtr_probes[i].tp_name))
			rtr_probes[i].tp = tp;
}

static void rtr_probes_unregister_events(unsigned int n)
{
	while (n--)
		if (rtr_probe_available(&rtr_probes[n]))
			ringtrace_event_unregister(&rtr_probes[n].event);
}

/*
 * The records registered after the probes' events, in this order, each
 * with a compact id (below RINGTRACE_EVENT_ID_EXTENDED): a trailer's
 * header is compact (ringtrace_put_trailer(): stack_def, stack_ref,
 * user_stack_copy, stack.c), and user_mmap (mmap.c)
 * and cpu_sample (sampler.c), not trailers, were given those ids too:
 * they are the hottest of issue 30's records, or nearly.
 */
static struct ringtrace_event *const rtr_compact_events[] = {
	&rtr_stack_def_event, &rtr_stack_ref_event, &rtr_ucopy_event,
	&rtr_mmap_event,
	&rtr_sample_event,
};

/* The first @n of rtr_compact_events, last first. */
static void rtr_compact_unregister(unsigned int n)
{
	while (n--)
		ringtrace_event_unregister(rtr_compact_events[n]);
}

int __init rtr_probes_init(void)
{
	unsigned int i;
	int ret;

	rtr_probes_check_types();
	ret = rtr_stack_init();
	if (ret)
		return ret;
	rtr_pid_filter_init();
	for_each_kernel_tracepoint(rtr_probe_find, NULL);
	/* In id order: the metadata lists them, enabled or not. */
	for (i = 0; i < RTR_NR_PROBES; i++) {
		if (!rtr_probe_available(&rtr_probes[i])) {
			pr_info("no tracepoint %s: event %s unavailable\n",
				rtr_probes[i].tp_name, rtr_probes[i].event.name);
			continue;
		}
		ret = ringtrace_event_register(&rtr_probes[i].event);
		if (ret) {
			rtr_probes_unregister_events(i);
			rtr_stack_exit();
			return ret;
		}
	}
	for (i = 0; i < ARRAY_SIZE(rtr_compact_events); i++) {
		struct ringtrace_event *ev = rtr_compact_events[i];

		ret = ringtrace_event_register(ev);
		if (!ret && ev->id >= RINGTRACE_EVENT_ID_EXTENDED) {
			ringtrace_event_unregister(ev);
			ret = -ENOSPC;
		}
		if (ret) {
			rtr_compact_unregister(i);
			rtr_probes_unregister_events(RTR_NR_PROBES);
			rtr_stack_exit();
			return ret;
		}
	}
	return 0;
}

/*
 * Undo rtr_probes_init() in a load that fails after it: no probe was ever
 * attached (that takes a file, and no file opened), so no probe can be
 * running and there is nothing to wait for.
 */
void rtr_probes_init_undo(void)
{
	rtr_compact_unregister(ARRAY_SIZE(rtr_compact_events));
	rtr_probes_unregister_events(RTR_NR_PROBES);
	rtr_stack_exit();
}

void rtr_probes_exit(void)
{
	unsigned int i;

	/* No file can be open now: each open holds a module reference. */
	rtr_mmap_exit();
	mutex_lock(&rtr_probes_lock);
	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probes[i].enabled)
			rtr_probe_attach(&rtr_probes[i], false);
	mutex_unlock(&rtr_probes_lock);
	rtr_pid_follow_exit();
	/* No probe of ours runs anywhere after this. */
	tracepoint_synchronize_unregister();
	rtr_filters_free();
	rtr_triggers_exit();
	rtr_pid_filter_free();
	rtr_cgroup_filter_free();
	rtr_stack_exit();
	rtr_compact_unregister(ARRAY_SIZE(rtr_compact_events));
	rtr_probes_unregister_events(RTR_NR_PROBES);
}
