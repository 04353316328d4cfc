// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the pid filter of the probes (set_event_pid, event_fork).
 *
 * The filter is the sorted array of pids the shell wrote: a task is kept
 * when its thread id or its process id is in it.  With event_fork set, it
 * also keeps the descendants of the tasks it keeps: a probe on
 * sched_process_fork adds a kept parent's child to a bitmap of pids, and
 * one on sched_process_free takes a task out when it is gone (as ftrace's
 * event-fork option does, and what `ringtrace record -F` needs).  A fork
 * tracepoint fires before the child first runs, so none of its events is
 * missed.
 *
 * The filter is replaced whole under RCU: probes read it with preemption
 * off (rcu_dereference_sched()); writers serialise on rtr_probes_lock and
 * free the old one after a grace period.  The bitmap (PID_MAX_LIMIT bits,
 * 512 KiB) exists only while event_fork is set and a filter is; its bits
 * change only with atomic set_bit()/clear_bit() from the probes.
 *
 * The bitmap is not part of what is replaced: appending pids hands the
 * same bitmap to the new filter, and the old filter gives it up once no
 * probe can see the old filter any more.  A fork or a free seen through
 * the old filter or the new one marks the one bitmap, so there is no
 * window in which a descendant is known to one filter and not the other
 * (a copy would miss a child forked between the copy and the switch, and
 * that child's own children, since their fork probes read the new filter;
 * and merging the copies afterwards is a read-modify-write that undoes
 * the probes' concurrent set_bit()s).  Writing a new filter (not
 * appending), or switching event_fork, starts an empty bitmap: the
 * descendants of the old pids are not the new filter's.
 */
#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/threads.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>

#include "probes.h"

struct rtr_pid_filter __rcu *rtr_pid_filter;

static bool rtr_follow;			/* event_fork; under rtr_probes_lock */
static struct tracepoint *rtr_tp_fork, *rtr_tp_free;

static bool rtr_pid_filter_has(const struct rtr_pid_filter *f, pid_t pid)
{
	unsigned int lo = 0, hi = f->nr, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->pids[mid] == pid)
			return true;
		if (f->pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool rtr_followed(const struct rtr_pid_filter *f, pid_t pid)
{
	return f->followed && pid >= 0 && pid < PID_MAX_LIMIT &&
	       test_bit(pid, f->followed);
}

/* A task matches by its thread id or by its process (thread group) id. */
bool rtr_pid_filter_match(const struct rtr_pid_filter *f,
			  const struct task_struct *t)
{
	return rtr_pid_filter_has(f, t->pid) || rtr_followed(f, t->pid) ||
	       (t->tgid != t->pid && (rtr_pid_filter_has(f, t->tgid) ||
				      rtr_followed(f, t->tgid)));
}

void rtr_pid_filter_show(struct seq_file *m)
{
	const struct rtr_pid_filter *f;
	unsigned int i;

	mutex_lock(&rtr_probes_lock);
	f = rcu_dereference_protected(rtr_pid_filter,
				      lockdep_is_held(&rtr_probes_lock));
	if (f) {
		for (i = 0; i < f->nr; i++)
			seq_printf(m, "%s%d", i ? " " : "", f->pids[i]);
		seq_putc(m, '\n');
	}
	mutex_unlock(&rtr_probes_lock);
}

/* @f and its bitmap, unless @heir (the filter that replaced it) took it. */
static void rtr_pid_filter_destroy(struct rtr_pid_filter *f,
				   const struct rtr_pid_filter *heir)
{
	if (!f)
		return;
	if (!heir || heir->followed != f->followed)
		kvfree(f->followed);
	kfree(f);
}

static int rtr_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * A new filter holding @pids (and, when @old, its pids and followed
 * descendants: @old's bitmap itself), sorted without duplicates; with a
 * bitmap if @follow.  ERR_PTR(-EINVAL) past RTR_PID_FILTER_MAX pids.
 */
static struct rtr_pid_filter *rtr_pid_filter_build(const pid_t *pids,
						   unsigned int nr,
						   const struct rtr_pid_filter *old,
						   bool follow)
{
	unsigned int i, n = nr + (old ? old->nr : 0);
	struct rtr_pid_filter *f;

	f = kmalloc(struct_size(f, pids, n), GFP_KERNEL);
	if (!f)
		return ERR_PTR(-ENOMEM);
	f->followed = NULL;
	memcpy(f->pids, pids, nr * sizeof(*pids));
	for (i = 0; old && i < old->nr; i++)
		f->pids[nr + i] = old->pids[i];
	sort(f->pids, n, sizeof(f->pids[0]), rtr_pid_cmp, NULL);
	for (i = 0, f->nr = 0; i < n; i++)
		if (!f->nr || f->pids[f->nr - 1] != f->pids[i])
			f->pids[f->nr++] = f->pids[i];
	if (f->nr > RTR_PID_FILTER_MAX) {
		kfree(f);
		return ERR_PTR(-EINVAL);
	}
	if (!follow || !f->nr)
		return f;
	/* Keeping the old filter's roots, keep their descendants too. */
	if (old && old->followed) {
		f->followed = old->followed;
		return f;
	}
	f->followed = kvcalloc(BITS_TO_LONGS(PID_MAX_LIMIT), sizeof(long),
			       GFP_KERNEL);
	if (!f->followed) {
		kfree(f);
		return ERR_PTR(-ENOMEM);
	}
	return f;
}

/*
 * Publish @f (NULL: no filter) and free the old one once unused; its
 * bitmap too, unless @f took it over (an append).
 */
static void rtr_pid_filter_publish(struct rtr_pid_filter *f)
{
	struct rtr_pid_filter *old;

	old = rcu_dereference_protected(rtr_pid_filter,
					lockdep_is_held(&rtr_probes_lock));
	if (f && !f->nr) {
		/* No pids: no bitmap was made or taken over. */
		rtr_pid_filter_destroy(f, NULL);
		f = NULL;
	}
	/* Pairs with rcu_dereference_sched() in the probes. */
	rcu_assign_pointer(rtr_pid_filter, f);
	if (old) {
		/* Probes run with preemption off: a grace period covers them. */
		synchronize_rcu();
		rtr_pid_filter_destroy(old, f);
	}
}

/*
 * set_event_pid: replace the filter with @pids, or add them to it
 * (@append).  All or nothing: -EINVAL beyond RTR_PID_FILTER_MAX pids.
 */
int rtr_pid_filter_set(const pid_t *pids, unsigned int nr, bool append)
{
	struct rtr_pid_filter *f, *old;
	int ret = 0;

	mutex_lock(&rtr_probes_lock);
	old = rcu_dereference_protected(rtr_pid_filter,
					lockdep_is_held(&rtr_probes_lock));
	if (append && !nr)
		goto unlock;
	f = rtr_pid_filter_build(pids, nr, append ? old : NULL, rtr_follow);
	if (IS_ERR(f)) {
		ret = PTR_ERR(f);
		goto unlock;
	}
	rtr_pid_filter_publish(f);
unlock:
	mutex_unlock(&rtr_probes_lock);
	return ret;
}

/* sched_process_fork: a kept parent's child is kept from its start. */
static void rtr_follow_fork(void *data, struct task_struct *parent,
			    struct task_struct *child)
{
	const struct rtr_pid_filter *f = rcu_dereference_sched(rtr_pid_filter);

	if (f && f->followed && rtr_pid_filter_match(f, parent))
		set_bit(child->pid, f->followed);
}

/* sched_process_free: the pid may be handed out again. */
static void rtr_follow_free(void *data, struct task_struct *t)
{
	const struct rtr_pid_filter *f = rcu_dereference_sched(rtr_pid_filter);

	if (f && f->followed)
		clear_bit(t->pid, f->followed);
}

static int rtr_follow_attach(bool on)
{
	int ret;

	if (!on) {
		tracepoint_probe_unregister(rtr_tp_free, rtr_follow_free, NULL);
		tracepoint_probe_unregister(rtr_tp_fork, rtr_follow_fork, NULL);
		return 0;
	}
	ret = tracepoint_probe_register(rtr_tp_fork, rtr_follow_fork, NULL);
	if (ret)
		return ret;
	/*
	 * Below the default priority, so after the sched_process_free
	 * event's probe (probes.c): a followed task's free is recorded
	 * before its bit goes.
	 */
	ret = tracepoint_probe_register_prio(rtr_tp_free, rtr_follow_free, NULL,
					     TRACEPOINT_DEFAULT_PRIO - 1);
	if (ret)
		tracepoint_probe_unregister(rtr_tp_fork, rtr_follow_fork, NULL);
	return ret;
}

bool rtr_pid_follow_get(void)
{
	bool on;

	mutex_lock(&rtr_probes_lock);
	on = rtr_follow;
	mutex_unlock(&rtr_probes_lock);
	return on;
}

/*
 * event_fork: attach or detach the fork probes and give the filter its
 * bitmap (starting empty: descendants forked from now on) or take it.
 */
int rtr_pid_follow_set(bool on)
{
	struct rtr_pid_filter *f, *old;
	int ret = 0;

	if (!rtr_tp_fork || !rtr_tp_free)
		return on ? -EOPNOTSUPP : 0;
	mutex_lock(&rtr_probes_lock);
	if (on == rtr_follow)
		goto unlock;
	old = rcu_dereference_protected(rtr_pid_filter,
					lockdep_is_held(&rtr_probes_lock));
	f = old ? rtr_pid_filter_build(old->pids, old->nr, NULL, on) : NULL;
	if (IS_ERR(f)) {
		ret = PTR_ERR(f);
		goto unlock;
	}
	if (on) {
		ret = rtr_follow_attach(true);
		if (ret) {
			rtr_pid_filter_destroy(f, NULL);
			goto unlock;
		}
	} else {
		rtr_follow_attach(false);
	}
	rtr_follow = on;
	if (old)
		rtr_pid_filter_publish(f);
unlock:
	mutex_unlock(&rtr_probes_lock);
	return ret;
}

static void rtr_pid_find_tp(struct tracepoint *tp, void *unused)
{
	if (!strcmp(tp->name, "sched_process_fork"))
		rtr_tp_fork = tp;
	else if (!strcmp(tp->name, "sched_process_free"))
		rtr_tp_free = tp;
}

void rtr_pid_filter_init(void)
{
	/* The build fails if a kernel changes these prototypes. */
	check_trace_callback_type_sched_process_fork(rtr_follow_fork);
	check_trace_callback_type_sched_process_free(rtr_follow_free);
	for_each_kernel_tracepoint(rtr_pid_find_tp, NULL);
}

void rtr_pid_follow_exit(void)
{
	mutex_lock(&rtr_probes_lock);
	if (rtr_follow)
		rtr_follow_attach(false);
	rtr_follow = false;
	mutex_unlock(&rtr_probes_lock);
}

/* Only once no probe can run (after tracepoint_synchronize_unregister()). */
void rtr_pid_filter_free(void)
{
	rtr_pid_filter_destroy(rcu_replace_pointer(rtr_pid_filter, NULL, true),
			       NULL);
}
