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
#include <linux/ringtrace.h>
#include <linux/types.h>

struct task_struct;
struct tracepoint;

/* The events, in id order (the marker holds id 0, so these get 1..12). */
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
	RTR_NR_PROBES
};

/* One kernel tracepoint feeding one ringtrace event. */
struct rtr_probe {
	struct ringtrace_event event;	/* name, TSDL fields, id */
	const char *tp_name;		/* the kernel's tracepoint */
	void *func;			/* our probe on it */
	struct tracepoint *tp;		/* NULL: this kernel lacks it */
	bool enabled;			/* registered; under rtr_probes_lock */
};

/* probes.c */
extern struct rtr_probe rtr_probes[RTR_NR_PROBES];
extern struct mutex rtr_probes_lock;

int rtr_probes_init(void);
void rtr_probes_exit(void);
int rtr_probes_set(const unsigned long *mask, const unsigned long *on);

static inline bool rtr_probe_available(const struct rtr_probe *p)
{
	return p->tp;
}

/*
 * events_ctl.c: the control files, and the pid filter they set.  The
 * filter is NULL when empty; probes read it with rcu_dereference_sched()
 * (tracepoint probes run with preemption off).
 */
struct rtr_pid_filter {
	struct rcu_head rcu;
	unsigned int nr;
	pid_t pids[];			/* ascending, no duplicates */
};

extern struct rtr_pid_filter __rcu *rtr_pid_filter;

bool rtr_pid_filter_match(const struct rtr_pid_filter *f,
			 const struct task_struct *t);
int rtr_events_ctl_init(void);
void rtr_pid_filter_free(void);

#endif /* _RINGTRACE_PROBES_H */
