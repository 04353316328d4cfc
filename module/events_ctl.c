// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the shell's switches for the tracepoint events of probes.c.
 *
 *   /sys/kernel/debug/ringtrace/
 *     available_events       "<id> <name>" per event this kernel can trace
 *     set_event              enabled event names; write "name" or "!name"
 *     set_event_stack        events that carry the kernel stack; "name" or "!name"
 *     stack_depth            frames kept per stack, 1..RINGTRACE_STACK_MAX_DEPTH
 *     set_event_ustack       events that carry the user stack; as set_event_stack
 *     ustack_depth           frames kept per user stack,
 *                            1..RINGTRACE_USTACK_MAX_DEPTH
 *     ustack_stats           user stacks walked (or copied), and of them those
 *                            ended by a read fault or cut by ustack_depth (or
 *                            ustack_size) (read-only)
 *     ustack_mode            "fp": user_stack by frame pointers; "copy":
 *                            user_stack_copy, the raw stack (stack.c)
 *     ustack_size            bytes a copy keeps, RINGTRACE_USTACK_COPY_MIN..
 *                            RINGTRACE_USTACK_COPY_MAX, at most subbuf_size / 4
 *     set_event_pid          the pid filter: pids separated by spaces
 *     event_fork             1: the filter follows forks (pidfilter.c)
 *     set_event_cgroup       the cgroup filter: cgroup v2 ids or paths
 *                            (cgroupfilter.c)
 *     events/enable          0, 1 or X (some); write 0 or 1 for all
 *     events/<name>/enable   0 or 1
 *     events/<name>/id       the event's id in the trace
 *     events/<name>/filter   its field predicate, "none" (filter.c); the
 *                            marker's too, events/ringtrace_marker/filter
 *     events/<name>/trigger  its trigger's condition, "none" (trigger.c)
 *
 * (and the same under /dev/ringtrace/).  A write takes effect entirely or
 * fails with nothing changed: unknown names and malformed values give
 * -EINVAL.  Writers serialise on rtr_probes_lock; probes never take it.
 */
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/threads.h>
#include <linux/uaccess.h>

#include "internal.h"
#include "probes.h"

/* Longest accepted write to any of these files. */
#define RTR_CTL_WRITE_MAX	4096


/* A NUL-terminated kernel copy of one write, or an ERR_PTR. */
char *rtr_ctl_copy(const char __user *ubuf, size_t count)
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

static int rtr_available_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_available_show);
}

static const struct file_operations rtr_available_fops = {
	.owner = THIS_MODULE,
	.open = rtr_available_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- set_event --------------------------------------------------------- */

/* What rtr_show_names() lists: probes enabled, or with a kind of stack. */
enum rtr_names {
	RTR_NAMES_ENABLED,
	RTR_NAMES_STACK,
	RTR_NAMES_USTACK,
};

static void rtr_show_names(struct seq_file *m, enum rtr_names which)
{
	const struct rtr_probe *p;
	bool on;

	mutex_lock(&rtr_probes_lock);
	for (p = rtr_probes; p < rtr_probes + RTR_NR_PROBES; p++) {
		on = which == RTR_NAMES_STACK ? p->stack :
		     which == RTR_NAMES_USTACK ? p->ustack : p->enabled;
		if (on)
			seq_printf(m, "%s\n", p->event.name);
	}
	mutex_unlock(&rtr_probes_lock);
}

/*
 * The words of a set_event-style write: "name" sets the probe's bit in
 * @on, "!name" clears it; @mask has the bit of every name written (the
 * last word for a name wins).  -EINVAL for an unknown name or a write
 * without any.
 */
static int rtr_event_words(const char __user *ubuf, size_t count,
			   unsigned long *mask, unsigned long *on)
{
	char *buf, *cur, *word;
	bool enable;
	int i, ret = 0;

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
			break;
		}
		__set_bit(i, mask);
		__assign_bit(i, on, enable);
	}
	kfree(buf);
	if (!ret && bitmap_empty(mask, RTR_NR_PROBES))
		ret = -EINVAL;
	return ret;
}

static int rtr_set_event_show(struct seq_file *m, void *unused)
{
	rtr_show_names(m, RTR_NAMES_ENABLED);
	return 0;
}

static int rtr_set_event_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_set_event_show);
}

/* Words "name" enable, "!name" disable; the last word for a name wins. */
static ssize_t rtr_set_event_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	DECLARE_BITMAP(mask, RTR_NR_PROBES);
	DECLARE_BITMAP(on, RTR_NR_PROBES);
	int ret;

	ret = rtr_event_words(ubuf, count, mask, on);
	if (!ret)
		ret = rtr_ctl_set(mask, on);
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

/* --- set_event_[u]stack, [u]stack_depth, ustack_stats (stack.c) ------ */

/*
 * The kernel's files and the user's share their code: the file's data
 * says which (rtr_kstack, rtr_ustack: only their addresses matter).
 */
static const bool rtr_kstack, rtr_ustack = true;

static bool rtr_file_user(const struct inode *inode)
{
	return *(const bool *)rtr_file_data(inode);
}

static int rtr_set_event_stack_show(struct seq_file *m, void *unused)
{
	rtr_show_names(m, *(const bool *)m->private ? RTR_NAMES_USTACK :
			  RTR_NAMES_STACK);
	return 0;
}

static int rtr_set_event_stack_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_set_event_stack_show);
}

/*
 * Words as set_event's.  Stacks are set independently of enabling: a
 * stack is taken when the event is both enabled and set here.  An event
 * without a tracepoint (the state dump) cannot carry one: -EINVAL.
 */
static ssize_t rtr_set_event_stack_write(struct file *file,
					 const char __user *ubuf, size_t count,
					 loff_t *ppos)
{
	DECLARE_BITMAP(mask, RTR_NR_PROBES);
	DECLARE_BITMAP(on, RTR_NR_PROBES);
	int ret;

	ret = rtr_event_words(ubuf, count, mask, on);
	if (!ret) {
		mutex_lock(&rtr_probes_lock);
		ret = rtr_stack_set(mask, on, rtr_file_user(file_inode(file)));
		mutex_unlock(&rtr_probes_lock);
	}
	return ret ?: count;
}

static const struct file_operations rtr_set_event_stack_fops = {
	.owner = THIS_MODULE,
	.open = rtr_set_event_stack_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_set_event_stack_write,
};

static int rtr_stack_depth_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "%u\n", *(const bool *)m->private ?
		   READ_ONCE(rtr_ustack_depth) : READ_ONCE(rtr_stack_depth));
	return 0;
}

static int rtr_stack_depth_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_stack_depth_show);
}

static ssize_t rtr_stack_depth_write(struct file *file,
				     const char __user *ubuf, size_t count,
				     loff_t *ppos)
{
	unsigned int depth;
	char word[12];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (!ret)
		ret = kstrtouint(word, 10, &depth) ? -EINVAL :
		      rtr_stack_set_depth(depth,
					  rtr_file_user(file_inode(file)));
	return ret ?: count;
}

static const struct file_operations rtr_stack_depth_fops = {
	.owner = THIS_MODULE,
	.open = rtr_stack_depth_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_stack_depth_write,
};

static int rtr_ustack_stats_seq(struct seq_file *m, void *unused)
{
	rtr_ustack_stats_show(m);
	return 0;
}

static int rtr_ustack_stats_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_ustack_stats_seq);
}

static const struct file_operations rtr_ustack_stats_fops = {
	.owner = THIS_MODULE,
	.open = rtr_ustack_stats_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- ustack_mode, ustack_size (stack.c) ------------------------------ */

static int rtr_ustack_mode_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "%s\n", READ_ONCE(rtr_ustack_copy_on) ? "copy" : "fp");
	return 0;
}

static int rtr_ustack_mode_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_ustack_mode_show);
}

static ssize_t rtr_ustack_mode_write(struct file *file,
				     const char __user *ubuf, size_t count,
				     loff_t *ppos)
{
	char word[8];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (!ret)
		ret = !strcmp(word, "copy") ? rtr_stack_set_mode(true) :
		      !strcmp(word, "fp") ? rtr_stack_set_mode(false) : -EINVAL;
	return ret ?: count;
}

static const struct file_operations rtr_ustack_mode_fops = {
	.owner = THIS_MODULE,
	.open = rtr_ustack_mode_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_ustack_mode_write,
};

static int rtr_ustack_size_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "%u\n", READ_ONCE(rtr_ustack_size));
	return 0;
}

static int rtr_ustack_size_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_ustack_size_show);
}

static ssize_t rtr_ustack_size_write(struct file *file,
				     const char __user *ubuf, size_t count,
				     loff_t *ppos)
{
	unsigned int size;
	char word[12];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (!ret)
		ret = kstrtouint(word, 10, &size) ? -EINVAL :
		      rtr_stack_set_size(size);
	return ret ?: count;
}

static const struct file_operations rtr_ustack_size_fops = {
	.owner = THIS_MODULE,
	.open = rtr_ustack_size_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_ustack_size_write,
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
	return rtr_single_open(inode, file, rtr_enable_show);
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
	return rtr_single_open(inode, file, rtr_id_show);
}

static const struct file_operations rtr_id_fops = {
	.owner = THIS_MODULE,
	.open = rtr_id_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- events/<name>/filter and trigger (filter.c, trigger.c) --------------- */

/*
 * A probe's two predicate files, as rtr_pred_fops sees them: set when the
 * files are made, then constant.
 */
struct rtr_probe_preds {
	struct rtr_pred_file filter;
	struct rtr_pred_file trigger;
};

static struct rtr_probe_preds rtr_probe_preds[RTR_NR_PROBES];

/* --- set_event_pid, event_fork ----------------------------------------- */

static int rtr_set_event_pid_show(struct seq_file *m, void *unused)
{
	rtr_pid_filter_show(m);
	return 0;
}

static int rtr_set_event_pid_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_set_event_pid_show);
}

/* The pids of @buf, at most RTR_PID_FILTER_MAX, into @pids. */
static int rtr_pid_parse(char *buf, pid_t *pids, unsigned int *nr)
{
	char *word;
	int pid;

	*nr = 0;
	while ((word = strsep(&buf, " \t\n"))) {
		if (!*word)
			continue;
		if (kstrtoint(word, 10, &pid) || pid < 0 ||
		    pid >= PID_MAX_LIMIT || *nr == RTR_PID_FILTER_MAX)
			return -EINVAL;
		pids[(*nr)++] = pid;
	}
	return 0;
}

/*
 * Replaces the filter, or adds to it when opened with O_APPEND (">>").
 * A write of blanks only clears it (or, appending, changes nothing).
 */
static ssize_t rtr_set_event_pid_write(struct file *file,
				      const char __user *ubuf, size_t count,
				      loff_t *ppos)
{
	unsigned int nr;
	pid_t *pids;
	char *buf;
	int ret;

	buf = rtr_ctl_copy(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	pids = kmalloc_array(RTR_PID_FILTER_MAX, sizeof(*pids), GFP_KERNEL);
	if (!pids) {
		ret = -ENOMEM;
		goto free_buf;
	}
	ret = rtr_pid_parse(buf, pids, &nr);
	if (!ret)
		ret = rtr_pid_filter_set(pids, nr, file->f_flags & O_APPEND);
	kfree(pids);
free_buf:
	kfree(buf);
	return ret ?: count;
}

static int rtr_event_fork_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "%d\n", rtr_pid_follow_get());
	return 0;
}

static int rtr_event_fork_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_event_fork_show);
}

static ssize_t rtr_event_fork_write(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	bool bit;
	int ret;

	ret = rtr_ctl_parse_bit(ubuf, count, &bit);
	if (!ret)
		ret = rtr_pid_follow_set(bit);
	return ret ?: count;
}

static const struct file_operations rtr_event_fork_fops = {
	.owner = THIS_MODULE,
	.open = rtr_event_fork_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_event_fork_write,
};

static const struct file_operations rtr_set_event_pid_fops = {
	.owner = THIS_MODULE,
	.open = rtr_set_event_pid_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_set_event_pid_write,
};

/* --- set_event_cgroup -------------------------------------------------- */

static int rtr_set_event_cgroup_show(struct seq_file *m, void *unused)
{
	rtr_cgroup_filter_show(m);
	return 0;
}

static int rtr_set_event_cgroup_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_set_event_cgroup_show);
}

/* As set_event_pid: replaces, adds with O_APPEND, blanks clear. */
static ssize_t rtr_set_event_cgroup_write(struct file *file,
					  const char __user *ubuf,
					  size_t count, loff_t *ppos)
{
	char *buf;
	int ret;

	buf = rtr_ctl_copy(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = rtr_cgroup_filter_set(buf, file->f_flags & O_APPEND);
	kfree(buf);
	return ret ?: count;
}

static const struct file_operations rtr_set_event_cgroup_fops = {
	.owner = THIS_MODULE,
	.open = rtr_set_event_cgroup_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_set_event_cgroup_write,
};

/* --- the tree --------------------------------------------------------- */

/* events/ in debugfs: the dynamic probes' directories go there too. */
struct dentry *rtr_events_dir;

int rtr_events_ctl_init(void)
{
	struct dentry *events, *dir;
	struct rtr_probe *probe;
	struct rtr_probe_preds *preds;
	char path[80];
	unsigned int i;
	int ret;

	events = rtr_files_mkdir(rtr_dir, "events");
	rtr_events_dir = events;
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
		if (ret || !probe->nr_ffields)
			continue;
		preds = &rtr_probe_preds[i];
		preds->filter = (struct rtr_pred_file){
			.prog = &probe->filter, .err = &probe->filter_err,
			.ff = probe->ffields, .nff = probe->nr_ffields,
		};
		preds->trigger = (struct rtr_pred_file){
			.prog = &probe->trigger, .err = &probe->trigger_err,
			.ff = probe->ffields, .nff = probe->nr_ffields,
		};
		snprintf(path, sizeof(path), "events/%s/filter",
			 probe->event.name);
		ret = rtr_file_create(dir, path, 0600, &preds->filter,
				      &rtr_pred_fops);
		if (ret)
			break;
		snprintf(path, sizeof(path), "events/%s/trigger",
			 probe->event.name);
		ret = rtr_file_create(dir, path, 0600, &preds->trigger,
				      &rtr_pred_fops);
	}
	if (ret)
		return ret;
	/* The marker's: no probe behind them (filter.c, trigger.c). */
	dir = rtr_files_mkdir(events, rtr_marker_event.name);
	snprintf(path, sizeof(path), "events/%s/filter", rtr_marker_event.name);
	return rtr_file_create(dir, path, 0600, &rtr_marker_filter_file,
			       &rtr_pred_fops) ?:
	       rtr_triggers_init(dir) ?:
	       rtr_file_create(rtr_dir, "available_events", 0400, NULL,
			       &rtr_available_fops) ?:
	       rtr_file_create(rtr_dir, "set_event", 0600, NULL,
			       &rtr_set_event_fops) ?:
	       rtr_file_create(rtr_dir, "set_event_stack", 0600,
			       (void *)&rtr_kstack, &rtr_set_event_stack_fops) ?:
	       rtr_file_create(rtr_dir, "stack_depth", 0600,
			       (void *)&rtr_kstack, &rtr_stack_depth_fops) ?:
	       rtr_file_create(rtr_dir, "set_event_ustack", 0600,
			       (void *)&rtr_ustack, &rtr_set_event_stack_fops) ?:
	       rtr_file_create(rtr_dir, "ustack_depth", 0600,
			       (void *)&rtr_ustack, &rtr_stack_depth_fops) ?:
	       rtr_file_create(rtr_dir, "ustack_stats", 0400, NULL,
			       &rtr_ustack_stats_fops) ?:
	       rtr_file_create(rtr_dir, "ustack_mode", 0600, NULL,
			       &rtr_ustack_mode_fops) ?:
	       rtr_file_create(rtr_dir, "ustack_size", 0600, NULL,
			       &rtr_ustack_size_fops) ?:
	       rtr_file_create(rtr_dir, "set_event_pid", 0600, NULL,
			       &rtr_set_event_pid_fops) ?:
	       rtr_file_create(rtr_dir, "event_fork", 0600, NULL,
			       &rtr_event_fork_fops) ?:
	       rtr_file_create(rtr_dir, "set_event_cgroup", 0600, NULL,
			       &rtr_set_event_cgroup_fops);
}
