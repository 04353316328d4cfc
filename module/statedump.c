// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the state dump.
 *
 * Events carry no thread id: a reader knows which task runs on a CPU from
 * that CPU's last sched_switch (Documentation/ringtrace/events.rst), and
 * names tasks from the fork, exec, exit and switch events.  Before the
 * first switch of a trace, and for tasks that exist but do nothing worth a
 * name, that leaves holes.  So when tracing starts, with the events
 * enabled, the dump writes:
 *
 *   ringtrace_statedump_cpu    on each online CPU, from an IPI there: the
 *                              task the CPU is running (tid 0 when idle)
 *   ringtrace_statedump_task   on the starting CPU, one per existing task
 *                              that the pid filter keeps
 *
 * (LTTng's statedump does the same at session start.)  Following
 * sched_switch per CPU costs the writers nothing; a tid in every event
 * would cost 4 bytes per event (Documentation/ringtrace/benchmarks.rst).
 */
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "compat.h"
#include "probes.h"

struct rtr_statedump_task {
	s32 tid;
	s32 pid;
	s32 ppid;
	char comm[TASK_COMM_LEN];
	u64 cgroup_id;			/* cgroup v2; 0: a kernel without */
} __packed;
static_assert(sizeof(struct rtr_statedump_task) == 36);

struct rtr_statedump_cpu {
	s32 tid;
	s32 pid;
	char comm[TASK_COMM_LEN];
} __packed;
static_assert(sizeof(struct rtr_statedump_cpu) == 24);

static bool rtr_statedump_enabled(unsigned int probe)
{
	return READ_ONCE(rtr_probes[probe].enabled);
}

/* IPI on each CPU (interrupts off): whoever that CPU was running. */
static void rtr_statedump_cpu(void *unused)
{
	struct rtr_statedump_cpu p = {
		.tid = current->pid,
		.pid = current->tgid,
	};

	memcpy(p.comm, current->comm, sizeof(p.comm));
	ringtrace_write(rtr_probes[RTR_PROBE_STATEDUMP_CPU].event.id, &p,
			sizeof(p));
}

/*
 * Every task, under RCU, one event each from this CPU.  The comm is read
 * as the tracepoints read it, without the task lock.
 */
static void rtr_statedump_tasks(void)
{
	unsigned int id = rtr_probes[RTR_PROBE_STATEDUMP_TASK].event.id;
	struct rtr_statedump_task p;
	struct task_struct *g, *t;

	rcu_read_lock();
	for_each_process_thread(g, t) {
		p.tid = t->pid;
		p.pid = t->tgid;
		p.ppid = rcu_dereference(t->real_parent)->tgid;
		memcpy(p.comm, t->comm, sizeof(p.comm));
		/* The filters are read the way the probes read them. */
		preempt_disable();
		p.cgroup_id = rtr_task_cgroup_id(t);
		if (rtr_task_traced(t))
			ringtrace_write(id, &p, sizeof(p));
		preempt_enable();
	}
	rcu_read_unlock();
}

/* Tracing has just started; the caller holds cpus_read_lock(). */
void rtr_statedump(void)
{
	if (rtr_statedump_enabled(RTR_PROBE_STATEDUMP_CPU))
		on_each_cpu(rtr_statedump_cpu, NULL, 1);
	if (rtr_statedump_enabled(RTR_PROBE_STATEDUMP_TASK))
		rtr_statedump_tasks();
}
