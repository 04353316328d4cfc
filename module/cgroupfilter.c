// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the cgroup filter of the probes (set_event_cgroup).
 *
 * The filter is the set of cgroup v2 cgroups the shell wrote, by id (the
 * inode number of the cgroup's directory, what `stat -c %i` prints and
 * bpf's cgroup_id() returns) or by path from the hierarchy's root (as
 * /proc/PID/cgroup shows it: "/system.slice/foo.service").  A task is kept
 * when its cgroup is one of them or below one: containers and services
 * with their sub-cgroups, and whatever moves in, from the next event on.
 *
 * The probe's test is cgroup_is_descendant() on the task's default-
 * hierarchy cgroup: task->cgroups, its dfl_cgrp, and that cgroup's
 * ancestors[level] compared with each filter cgroup -- three dependent
 * loads and one compare per filter cgroup, no lock, no atomic, the same
 * as bpf's task_under_cgroup_hierarchy().  The css_set and the cgroup
 * are freed after an RCU grace period, and the probes run with
 * preemption off (task_css_set_check() accepts that as the read side).
 *
 * The filter holds a reference on each of its cgroups, so that a
 * removed cgroup's struct stays while the filter points at it (rmdir is
 * not refused: nothing runs in it any more, so nothing matches it).  The
 * whole filter is replaced under RCU as the pid filter is (pidfilter.c):
 * writers serialise on rtr_probes_lock, probes read it with
 * rcu_dereference_sched(), the old one is put after a grace period.  Both
 * filters apply: with both set, a task must pass each.
 */
#include <linux/err.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "compat.h"
#include "probes.h"

struct rtr_cgroup_filter {
	unsigned int nr;
	struct cgroup *cgrps[];		/* referenced, no duplicates */
};

struct rtr_cgroup_filter __rcu *rtr_cgroup_filter;

static bool rtr_cgroup_filter_match(const struct rtr_cgroup_filter *f,
				    const struct task_struct *t)
{
	unsigned int i;

	for (i = 0; i < f->nr; i++)
		if (rtr_task_under_cgroup(t, f->cgrps[i]))
			return true;
	return false;
}

/* rtr_task_traced()'s slow path: a filter is set. */
bool rtr_task_kept(const struct rtr_pid_filter *pf,
		   const struct rtr_cgroup_filter *cf,
		   const struct task_struct *t)
{
	return (!pf || rtr_pid_filter_match(pf, t)) &&
	       (!cf || rtr_cgroup_filter_match(cf, t));
}

void rtr_cgroup_filter_show(struct seq_file *m)
{
	const struct rtr_cgroup_filter *f;
	unsigned int i;

	mutex_lock(&rtr_probes_lock);
	f = rcu_dereference_protected(rtr_cgroup_filter,
				      lockdep_is_held(&rtr_probes_lock));
	if (f) {
		for (i = 0; i < f->nr; i++)
			seq_printf(m, "%s%llu", i ? " " : "",
				   rtr_cgroup_id(f->cgrps[i]));
		seq_putc(m, '\n');
	}
	mutex_unlock(&rtr_probes_lock);
}

static void rtr_cgroup_filter_destroy(struct rtr_cgroup_filter *f)
{
	unsigned int i;

	if (!f)
		return;
	for (i = 0; i < f->nr; i++)
		rtr_cgroup_put(f->cgrps[i]);
	kfree(f);
}

/* @cg, referenced, into @f unless there already: then its reference goes. */
static void rtr_cgroup_filter_add(struct rtr_cgroup_filter *f,
				  struct cgroup *cg)
{
	unsigned int i;

	for (i = 0; i < f->nr; i++) {
		if (f->cgrps[i] == cg) {
			rtr_cgroup_put(cg);
			return;
		}
	}
	f->cgrps[f->nr++] = cg;
}

/* One word of a write: a cgroup id, or a path from the root ("/a/b"). */
static struct cgroup *rtr_cgroup_lookup(const char *word)
{
	u64 id;

	if (*word == '/')
		return rtr_cgroup_get_path(word);
	if (kstrtou64(word, 10, &id))
		return ERR_PTR(-EINVAL);
	return rtr_cgroup_get_id(id);
}

/*
 * set_event_cgroup: @buf's blank-separated ids and paths replace the
 * filter, or are added to it (@append).  All or nothing: -EINVAL for a
 * malformed word or beyond RTR_CGROUP_FILTER_MAX cgroups, -ENOENT for one
 * that names no cgroup v2 cgroup, -EOPNOTSUPP without CONFIG_CGROUPS.
 * Blanks only: clear the filter (appending, change nothing).
 */
int rtr_cgroup_filter_set(char *buf, bool append)
{
	struct rtr_cgroup_filter *f = NULL, *old;
	unsigned int i;
	struct cgroup *cg;
	char *word;
	int ret = 0;

	f = kzalloc(struct_size(f, cgrps, RTR_CGROUP_FILTER_MAX), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	/* Lookups outside rtr_probes_lock: they take cgroup's own locks. */
	while ((word = strsep(&buf, " \t\n"))) {
		if (!*word)
			continue;
		if (f->nr == RTR_CGROUP_FILTER_MAX) {
			ret = -EINVAL;
			goto free;
		}
		cg = rtr_cgroup_lookup(word);
		if (IS_ERR(cg)) {
			ret = PTR_ERR(cg);
			goto free;
		}
		rtr_cgroup_filter_add(f, cg);
	}
	mutex_lock(&rtr_probes_lock);
	old = rcu_dereference_protected(rtr_cgroup_filter,
					lockdep_is_held(&rtr_probes_lock));
	if (append && !f->nr) {
		mutex_unlock(&rtr_probes_lock);
		goto free;
	}
	for (i = 0; append && old && i < old->nr; i++) {
		if (f->nr == RTR_CGROUP_FILTER_MAX) {
			mutex_unlock(&rtr_probes_lock);
			ret = -EINVAL;
			goto free;
		}
		/* The old filter keeps its own reference until it goes. */
		rtr_cgroup_get(old->cgrps[i]);
		rtr_cgroup_filter_add(f, old->cgrps[i]);
	}
	if (!f->nr) {
		kfree(f);
		f = NULL;
	}
	/* Pairs with rcu_dereference_sched() in rtr_task_traced(). */
	rcu_assign_pointer(rtr_cgroup_filter, f);
	mutex_unlock(&rtr_probes_lock);
	if (old) {
		/* Probes run with preemption off: a grace period covers them. */
		synchronize_rcu();
		rtr_cgroup_filter_destroy(old);
	}
	return 0;
free:
	rtr_cgroup_filter_destroy(f);
	return ret;
}

/* Only once no probe can run (after tracepoint_synchronize_unregister()). */
void rtr_cgroup_filter_free(void)
{
	rtr_cgroup_filter_destroy(rcu_replace_pointer(rtr_cgroup_filter, NULL,
						      true));
}
