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
 *   user_mmap                  with mmap_dump set (mmap.c), one per
 *                              executable mapping of each process the
 *                              pid filter keeps, flagged DUMP: a second
 *                              pass, rtr_statedump_mmaps()
 *
 * (LTTng's statedump does the same at session start.)  Following
 * sched_switch per CPU costs the writers nothing; a tid in every event
 * would cost 4 bytes per event (Documentation/ringtrace/benchmarks.rst).
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "compat.h"
#include "mmap.h"
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

/*
 * The mappings' pass.  It takes mmap_lock, so it cannot run in the RCU
 * walk above, nor under the control lock (rtr_control_write() calls it
 * once both are dropped): it collects references to the processes under
 * RCU, then walks each one's VMAs in process context.
 */

/* Mappings taken per hold of mmap_lock: their files are read outside it. */
#define RTR_STATEDUMP_MAPS	32

struct rtr_statedump_map {
	struct rtr_user_mmap h;
	struct file *file;		/* a reference; NULL for [vdso] */
};

/* Thread-group leaders that the filters keep, kernel threads aside. */
static bool rtr_statedump_keeps(struct task_struct *t)
{
	bool kept;

	if (t->flags & (PF_KTHREAD | PF_IO_WORKER))
		return false;
	/* The filters are read the way the probes read them. */
	preempt_disable();
	kept = rtr_task_traced(t);
	preempt_enable();
	return kept;
}

/*
 * References to the processes to dump, in a kvmalloc()ed array (*@nr of
 * them), or NULL.  Counted first; if more appear before they are taken,
 * counted again, a few times, then those that fit are taken.
 */
static struct task_struct **rtr_statedump_collect(unsigned int *nr)
{
	struct task_struct **tasks, *t;
	unsigned int n, want, tries;

	for (tries = 0;; tries++) {
		want = 0;
		rcu_read_lock();
		for_each_process(t)
			want += rtr_statedump_keeps(t);
		rcu_read_unlock();
		/* Room for some forks meanwhile. */
		want += 16;
		tasks = kvmalloc_array(want, sizeof(*tasks), GFP_KERNEL);
		if (!tasks)
			return NULL;
		n = 0;
		rcu_read_lock();
		for_each_process(t) {
			if (!rtr_statedump_keeps(t))
				continue;
			if (n < want)
				tasks[n] = get_task_struct(t);
			n++;
		}
		rcu_read_unlock();
		if (n <= want || tries == 3)
			break;
		while (want)
			put_task_struct(tasks[--want]);
		kvfree(tasks);
	}
	*nr = min(n, want);
	return tasks;
}

/*
 * Up to RTR_STATEDUMP_MAPS of @mm's mappings from @addr on, into @maps;
 * their number, with @addr moved past them, or -EINTR if we were killed.
 */
static int rtr_statedump_vmas(struct mm_struct *mm, pid_t pid,
			      unsigned long *addr,
			      struct rtr_statedump_map *maps)
{
	struct vm_area_struct *vma;
	int n = 0;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	{
		VMA_ITERATOR(vmi, mm, *addr);

		for_each_vma(vmi, vma) {
			if (!rtr_mmap_wanted(vma))
				continue;
			rtr_mmap_head(&maps[n].h, pid, vma, RTR_MMAP_DUMP);
			maps[n].file = vma->vm_file ? get_file(vma->vm_file) :
				       NULL;
			*addr = vma->vm_end;
			if (++n == RTR_STATEDUMP_MAPS)
				break;
		}
	}
	mmap_read_unlock(mm);
	return n;
}

/*
 * The mm of @leader's thread group, or NULL.  A leader that called
 * pthread_exit() has no mm left while its other threads run on with it,
 * so the threads are asked in turn, as the kernel's find_lock_task_mm()
 * (not exported) does: under RCU, each one's mm read under its task_lock
 * by get_task_mm().  The leader's task_struct, which we hold, keeps its
 * signal_struct and so the thread list's head.
 */
static struct mm_struct *rtr_statedump_group_mm(struct task_struct *leader)
{
	struct mm_struct *mm = NULL;
	struct task_struct *t;

	rcu_read_lock();
	for_each_thread(leader, t) {
		mm = get_task_mm(t);
		if (mm)
			break;
	}
	rcu_read_unlock();
	return mm;
}

static void rtr_statedump_task_mmaps(struct rtr_mmap_scratch *s,
				     struct task_struct *t,
				     struct rtr_statedump_map *maps)
{
	struct mm_struct *mm = rtr_statedump_group_mm(t);
	unsigned long addr = 0;
	int i, n;

	if (!mm)
		return;
	do {
		n = rtr_statedump_vmas(mm, t->tgid, &addr, maps);
		for (i = 0; i < n; i++) {
			rtr_mmap_emit(s, &maps[i].h, maps[i].file);
			if (maps[i].file)
				fput(maps[i].file);
		}
		cond_resched();
	} while (n == RTR_STATEDUMP_MAPS);
	mmput(mm);
}

/* Tracing has just started: process context, no lock of ours held. */
void rtr_statedump_mmaps(void)
{
	struct rtr_statedump_map *maps;
	struct rtr_mmap_scratch *s;
	struct task_struct **tasks;
	unsigned int i, nr = 0;

	if (!rtr_mmap_dump_on())
		return;
	s = rtr_mmap_scratch_alloc();
	maps = kmalloc_array(RTR_STATEDUMP_MAPS, sizeof(*maps), GFP_KERNEL);
	tasks = s && maps ? rtr_statedump_collect(&nr) : NULL;
	for (i = 0; i < nr; i++) {
		if (!fatal_signal_pending(current))
			rtr_statedump_task_mmaps(s, tasks[i], maps);
		put_task_struct(tasks[i]);
	}
	kvfree(tasks);
	kfree(maps);
	rtr_mmap_scratch_free(s);
}
