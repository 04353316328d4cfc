// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the shell's switches for the tracepoint events of probes.c.
 *
 *   /sys/kernel/debug/ringtrace/
 *     available_events       "<id> <name>" per event this kernel can trace
 *     set_event              enabled event names; write "name" or "!name"
 *     set_event_pid          the pid filter: pids separated by spaces
 *     events/enable          0, 1 or X (some); write 0 or 1 for all
 *     events/<name>/enable   0 or 1
 *     events/<name>/id       the event's id in the trace
 *
 * (and the same under /dev/ringtrace/).  A write takes effect entirely or
 * fails with nothing changed: unknown names and malformed values give
 * -EINVAL.  Writers serialise on rtr_probes_lock; probes never take it.
 */
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/threads.h>
#include <linux/uaccess.h>

#include "internal.h"
#include "probes.h"

/* Longest accepted write to any of these files. */
#define RTR_CTL_WRITE_MAX	4096
/* Pids one filter can hold; ~1 KiB, searched in at most 9 steps. */
#define RTR_PID_FILTER_MAX	256

struct rtr_pid_filter __rcu *rtr_pid_filter;


/* A NUL-terminated kernel copy of one write, or an ERR_PTR. */
static char *rtr_ctl_copy(const char __user *ubuf, size_t count)
{
	if (count >= RTR_CTL_WRITE_MAX)
		return ERR_PTR(-EINVAL);
	return memdup_user_nul(ubuf, count);
}

/* "0" or "1", with an optional trailing newline. */
static int rtr_ctl_parse_bit(const char __user *ubuf, size_t count, bool *bit)
{
	char word[4];

	return rtr_read_word(ubuf, count, word, sizeof(word)) ?:
	       rtr_parse_bit(word, bit);
}

static int rtr_probe_lookup(const char *name)
{
	unsigned int i;

	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probe_available(&rtr_probes[i]) &&
		    !strcmp(rtr_probes[i].event.name, name))
			return i;
	return -EINVAL;
}

static void rtr_available_mask(unsigned long *mask)
{
	unsigned int i;

	bitmap_zero(mask, RTR_NR_PROBES);
	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probe_available(&rtr_probes[i]))
			__set_bit(i, mask);
}

static int rtr_ctl_set(const unsigned long *mask, const unsigned long *on)
{
	int ret;

	mutex_lock(&rtr_probes_lock);
	ret = rtr_probes_set(mask, on);
	mutex_unlock(&rtr_probes_lock);
	return ret;
}

/* --- available_events ----------------------------------------------- */

static int rtr_available_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probe_available(&rtr_probes[i]))
			seq_printf(m, "%u %s\n", rtr_probes[i].event.id,
				   rtr_probes[i].event.name);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rtr_available);

/* --- set_event --------------------------------------------------------- */

static int rtr_set_event_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	mutex_lock(&rtr_probes_lock);
	for (i = 0; i < RTR_NR_PROBES; i++)
		if (rtr_probes[i].enabled)
			seq_printf(m, "%s\n", rtr_probes[i].event.name);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

static int rtr_set_event_open(struct inode *inode, struct file *file)
{
	return single_open(file, rtr_set_event_show, NULL);
}

/* Words "name" enable, "!name" disable; the last word for a name wins. */
static ssize_t rtr_set_event_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	DECLARE_BITMAP(mask, RTR_NR_PROBES);
	DECLARE_BITMAP(on, RTR_NR_PROBES);
	char *buf, *cur, *word;
	bool enable;
	int i, ret;

	buf = rtr_ctl_copy(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	bitmap_zero(mask, RTR_NR_PROBES);
	bitmap_zero(on, RTR_NR_PROBES);
	cur = buf;
	while ((word = strsep(&cur, " \t\n"))) {
		if (!*word)
			continue;
		enable = *word != '!';
		i = rtr_probe_lookup(enable ? word : word + 1);
		if (i < 0) {
			ret = i;
			goto free;
		}
		__set_bit(i, mask);
		__assign_bit(i, on, enable);
	}
	ret = bitmap_empty(mask, RTR_NR_PROBES) ? -EINVAL : rtr_ctl_set(mask, on);
free:
	kfree(buf);
	return ret ?: count;
}

static const struct file_operations rtr_set_event_fops = {
	.owner = THIS_MODULE,
	.open = rtr_set_event_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_set_event_write,
};

/* --- events/enable and events/<name>/enable --------------------------- */

/* The file's data: the struct rtr_probe, or NULL for events/enable. */
static int rtr_enable_show(struct seq_file *m, void *unused)
{
	const struct rtr_probe *probe = m->private;
	unsigned int i, on = 0, avail = 0;

	mutex_lock(&rtr_probes_lock);
	if (probe) {
		seq_printf(m, "%d\n", probe->enabled);
		goto unlock;
	}
	for (i = 0; i < RTR_NR_PROBES; i++) {
		avail += rtr_probe_available(&rtr_probes[i]);
		on += rtr_probes[i].enabled;
	}
	seq_puts(m, !on ? "0\n" : on == avail ? "1\n" : "X\n");
unlock:
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

static int rtr_enable_open(struct inode *inode, struct file *file)
{
	return single_open(file, rtr_enable_show, rtr_file_data(inode));
}

static ssize_t rtr_enable_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	const struct rtr_probe *probe = rtr_file_data(file_inode(file));
	DECLARE_BITMAP(mask, RTR_NR_PROBES);
	DECLARE_BITMAP(on, RTR_NR_PROBES);
	bool bit;
	int ret;

	ret = rtr_ctl_parse_bit(ubuf, count, &bit);
	if (ret)
		return ret;
	if (probe) {
		bitmap_zero(mask, RTR_NR_PROBES);
		__set_bit(probe - rtr_probes, mask);
	} else {
		rtr_available_mask(mask);
	}
	if (bit)
		bitmap_copy(on, mask, RTR_NR_PROBES);
	else
		bitmap_zero(on, RTR_NR_PROBES);
	ret = rtr_ctl_set(mask, on);
	return ret ?: count;
}

static const struct file_operations rtr_enable_fops = {
	.owner = THIS_MODULE,
	.open = rtr_enable_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_enable_write,
};

/* --- events/<name>/id ----------------------------------------------- */

static int rtr_id_show(struct seq_file *m, void *unused)
{
	const struct rtr_probe *probe = m->private;

	seq_printf(m, "%u\n", probe->event.id);
	return 0;
}

static int rtr_id_open(struct inode *inode, struct file *file)
{
	return single_open(file, rtr_id_show, rtr_file_data(inode));
}

static const struct file_operations rtr_id_fops = {
	.owner = THIS_MODULE,
	.open = rtr_id_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- set_event_pid ---------------------------------------------------- */

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

/* A task matches by its thread id or by its process (thread group) id. */
bool rtr_pid_filter_match(const struct rtr_pid_filter *f,
			 const struct task_struct *t)
{
	return rtr_pid_filter_has(f, t->pid) ||
	       (t->tgid != t->pid && rtr_pid_filter_has(f, t->tgid));
}

static int rtr_pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static int rtr_set_event_pid_show(struct seq_file *m, void *unused)
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
	return 0;
}

static int rtr_set_event_pid_open(struct inode *inode, struct file *file)
{
	return single_open(file, rtr_set_event_pid_show, NULL);
}

/* Append the pids of @buf to @f (unsorted). */
static int rtr_pid_filter_parse(char *buf, struct rtr_pid_filter *f)
{
	char *word;
	int pid;

	while ((word = strsep(&buf, " \t\n"))) {
		if (!*word)
			continue;
		if (kstrtoint(word, 10, &pid) || pid < 0 ||
		    pid >= PID_MAX_LIMIT || f->nr == RTR_PID_FILTER_MAX)
			return -EINVAL;
		f->pids[f->nr++] = pid;
	}
	return 0;
}

/* Sort, drop duplicates; false if more than the filter can hold remain. */
static bool rtr_pid_filter_normalize(struct rtr_pid_filter *f,
				    const struct rtr_pid_filter *old)
{
	unsigned int i, n;

	/* @f has room for 2 * RTR_PID_FILTER_MAX: both sides are capped. */
	for (i = 0; old && i < old->nr; i++)
		f->pids[f->nr++] = old->pids[i];
	sort(f->pids, f->nr, sizeof(f->pids[0]), rtr_pid_cmp, NULL);
	for (i = 0, n = 0; i < f->nr; i++)
		if (!n || f->pids[n - 1] != f->pids[i])
			f->pids[n++] = f->pids[i];
	f->nr = n;
	return n <= RTR_PID_FILTER_MAX;
}

/*
 * Replaces the filter, or adds to it when opened with O_APPEND (">>").
 * A write of blanks only clears it (or, appending, changes nothing).
 */
static ssize_t rtr_set_event_pid_write(struct file *file,
				      const char __user *ubuf, size_t count,
				      loff_t *ppos)
{
	struct rtr_pid_filter *f, *old;
	char *buf;
	int ret;

	buf = rtr_ctl_copy(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	/* Room for a full filter and a full write, merged before the cap. */
	f = kmalloc(struct_size(f, pids, 2 * RTR_PID_FILTER_MAX), GFP_KERNEL);
	if (!f) {
		ret = -ENOMEM;
		goto free_buf;
	}
	f->nr = 0;
	ret = rtr_pid_filter_parse(buf, f);
	if (ret)
		goto free_filter;

	mutex_lock(&rtr_probes_lock);
	old = rcu_dereference_protected(rtr_pid_filter,
					lockdep_is_held(&rtr_probes_lock));
	if (!rtr_pid_filter_normalize(f, file->f_flags & O_APPEND ? old : NULL)) {
		ret = -EINVAL;
		goto unlock;
	}
	if (!f->nr) {
		kfree(f);
		f = NULL;
	}
	/* Pairs with rcu_dereference_sched() in the probes. */
	rcu_assign_pointer(rtr_pid_filter, f);
	/* Probes run with preemption off: an RCU grace period covers them. */
	if (old)
		kfree_rcu(old, rcu);
	f = NULL;
unlock:
	mutex_unlock(&rtr_probes_lock);
free_filter:
	kfree(f);
free_buf:
	kfree(buf);
	return ret ?: count;
}

static const struct file_operations rtr_set_event_pid_fops = {
	.owner = THIS_MODULE,
	.open = rtr_set_event_pid_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_set_event_pid_write,
};

/* Only once no probe can run (after tracepoint_synchronize_unregister()). */
void rtr_pid_filter_free(void)
{
	kfree(rcu_replace_pointer(rtr_pid_filter, NULL, true));
}

/* --- the tree --------------------------------------------------------- */

int rtr_events_ctl_init(void)
{
	struct dentry *events, *dir;
	struct rtr_probe *probe;
	char path[80];
	unsigned int i;
	int ret;

	events = rtr_files_mkdir(rtr_dir, "events");
	ret = rtr_file_create(events, "events/enable", 0600, NULL,
			      &rtr_enable_fops);
	for (i = 0; !ret && i < RTR_NR_PROBES; i++) {
		probe = &rtr_probes[i];
		if (!rtr_probe_available(probe))
			continue;
		dir = rtr_files_mkdir(events, probe->event.name);
		snprintf(path, sizeof(path), "events/%s/enable",
			 probe->event.name);
		ret = rtr_file_create(dir, path, 0600, probe, &rtr_enable_fops);
		if (ret)
			break;
		snprintf(path, sizeof(path), "events/%s/id", probe->event.name);
		ret = rtr_file_create(dir, path, 0400, probe, &rtr_id_fops);
	}
	return ret ?:
	       rtr_file_create(rtr_dir, "available_events", 0400, NULL,
			       &rtr_available_fops) ?:
	       rtr_file_create(rtr_dir, "set_event", 0600, NULL,
			       &rtr_set_event_fops) ?:
	       rtr_file_create(rtr_dir, "set_event_pid", 0600, NULL,
			       &rtr_set_event_pid_fops);
}
