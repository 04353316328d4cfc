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
enum rt_probe_index {
	RT_PROBE_SCHED_SWITCH,
	RT_PROBE_SCHED_WAKEUP,
	RT_PROBE_SCHED_WAKEUP_NEW,
	RT_PROBE_SCHED_PROCESS_FORK,
	RT_PROBE_SCHED_PROCESS_EXEC,
	RT_PROBE_SCHED_PROCESS_EXIT,
	RT_PROBE_IRQ_HANDLER_ENTRY,
	RT_PROBE_IRQ_HANDLER_EXIT,
	RT_PROBE_SOFTIRQ_ENTRY,
	RT_PROBE_SOFTIRQ_EXIT,
	RT_PROBE_SYSCALL_ENTRY,
	RT_PROBE_SYSCALL_EXIT,
	RT_NR_PROBES
};

/* One kernel tracepoint feeding one ringtrace event. */
struct rt_probe {
	struct ringtrace_event event;	/* name, TSDL fields, id */
	const char *tp_name;		/* the kernel's tracepoint */
	void *func;			/* our probe on it */
	struct tracepoint *tp;		/* NULL: this kernel lacks it */
	bool enabled;			/* registered; under rt_probes_lock */
};

/* probes.c */
extern struct rt_probe rt_probes[RT_NR_PROBES];
extern struct mutex rt_probes_lock;

int rt_probes_init(void);
void rt_probes_exit(void);
int rt_probes_set(const unsigned long *mask, const unsigned long *on);

static inline bool rt_probe_available(const struct rt_probe *p)
{
	return p->tp;
}

/*
 * events_ctl.c: the debugfs files, and the pid filter they set.  The
 * filter is NULL when empty; probes read it with rcu_dereference_sched()
 * (tracepoint probes run with preemption off).
 */
struct rt_pid_filter {
	struct rcu_head rcu;
	unsigned int nr;
	pid_t pids[];			/* ascending, no duplicates */
};

extern struct rt_pid_filter __rcu *rt_pid_filter;

bool rt_pid_filter_match(const struct rt_pid_filter *f,
			 const struct task_struct *t);
int rt_events_ctl_init(void);
void rt_events_ctl_exit(void);
void rt_pid_filter_free(void);

#endif /* _RINGTRACE_PROBES_H */
