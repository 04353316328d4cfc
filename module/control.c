// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the control files a person drives from a shell.
 *
 *   /sys/kernel/debug/ringtrace/   (and the same under /dev/ringtrace/)
 *     tracing_on  mode  subbuf_size  num_subbufs  clear
 *     metadata  marker  stats  cpu/<N>/buffer
 *
 * A write either takes effect entirely or fails with nothing changed.
 */
#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"
#include "mmap.h"
#include "probes.h"

/*
 * The one parser of short control words (here and in events_ctl.c): at
 * most @size - 1 bytes, blanks and the newline of `echo` trimmed.
 */
int rtr_read_word(const char __user *ubuf, size_t count, char *word,
		  size_t size)
{
	if (!count || count >= size)
		return -EINVAL;
	if (copy_from_user(word, ubuf, count))
		return -EFAULT;
	word[count] = '\0';
	strim(word);
	return 0;
}

/* --- tracing_on, mode, subbuf_size, num_subbufs, clear --------------- */

enum rtr_control {
	RTR_CTL_TRACING_ON,
	RTR_CTL_MODE,
	RTR_CTL_SUBBUF_SIZE,
	RTR_CTL_NUM_SUBBUFS,
	RTR_CTL_CLEAR,
};

static int rtr_control_show(struct seq_file *m, void *unused)
{
	mutex_lock(&rtr_control_lock);
	switch ((unsigned long)m->private) {
	case RTR_CTL_TRACING_ON:
		seq_printf(m, "%d\n", rtr_trace.tracing_on);
		break;
	case RTR_CTL_MODE:
		seq_puts(m, rtr_trace.overwrite ? "overwrite\n" : "discard\n");
		break;
	case RTR_CTL_SUBBUF_SIZE:
		seq_printf(m, "%lu\n", rtr_trace.subbuf_size);
		break;
	case RTR_CTL_NUM_SUBBUFS:
		seq_printf(m, "%u\n", rtr_trace.num_subbufs);
		break;
	}
	mutex_unlock(&rtr_control_lock);
	return 0;
}

static int rtr_control_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_control_show);
}

/* "0"/"1" only: a tracer's switch should not guess. */
int rtr_parse_bit(const char *word, bool *bit)
{
	if (!strcmp(word, "0") || !strcmp(word, "1")) {
		*bit = word[0] == '1';
		return 0;
	}
	return -EINVAL;
}

static int rtr_control_apply(unsigned long which, const char *word)
{
	unsigned long val;
	bool bit;
	int ret;

	switch (which) {
	case RTR_CTL_TRACING_ON:
		ret = rtr_parse_bit(word, &bit);
		return ret ?: rtr_set_tracing(bit);
	case RTR_CTL_MODE:
		if (!strcmp(word, "discard"))
			return rtr_set_mode(false);
		if (!strcmp(word, "overwrite"))
			return rtr_set_mode(true);
		return -EINVAL;
	case RTR_CTL_SUBBUF_SIZE:
		/* Overflow is just another bad number: -EINVAL, not -ERANGE. */
		if (kstrtoul(word, 0, &val))
			return -EINVAL;
		return rtr_set_geometry(val, rtr_trace.num_subbufs);
	case RTR_CTL_NUM_SUBBUFS:
		if (kstrtoul(word, 0, &val) || val > RINGTRACE_MAX_SUBBUFS)
			return -EINVAL;
		return rtr_set_geometry(rtr_trace.subbuf_size, val);
	case RTR_CTL_CLEAR:
		ret = rtr_parse_bit(word, &bit);
		if (ret || !bit)
			return -EINVAL;
		return rtr_clear();
	}
	return -EINVAL;
}

static ssize_t rtr_control_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	unsigned long which = (unsigned long)rtr_file_data(file_inode(file));
	char word[32];
	bool was_on, started;
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (ret)
		return ret;
	/* Lock order: see module/main.c. */
	cpus_read_lock();
	mutex_lock(&rtr_control_lock);
	was_on = rtr_trace.tracing_on;
	ret = rtr_control_apply(which, word);
	started = !was_on && rtr_trace.tracing_on;
	mutex_unlock(&rtr_control_lock);
	cpus_read_unlock();
	/*
	 * The state dump's mappings take each process's mmap_lock and read
	 * files: they may sleep long, so not under cpus_read_lock() and the
	 * control lock, which CPU hotplug and every control file wait for.
	 * A stop meanwhile only refuses their writes.
	 */
	if (started)
		rtr_statedump_mmaps();
	return ret ?: count;
}

static const struct file_operations rtr_control_fops = {
	.owner = THIS_MODULE,
	.open = rtr_control_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_control_write,
};

/* --- metadata --------------------------------------------------------- */

static int rtr_metadata_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_metadata_show);
}

static const struct file_operations rtr_metadata_fops = {
	.owner = THIS_MODULE,
	.open = rtr_metadata_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- marker: each write() is one event -------------------------------- */

struct rtr_marker_payload {
	u16 len;
	u8 data[];
} __packed;

/*
 * Fault injection for the selftests: with inject_marker_hit_delay=N, a
 * marker write that matched its trigger waits N ms between its commit and
 * its hit, as a writer interrupted there for that long would -- a window
 * of a few instructions that a test cannot otherwise stop a writer in.
 * Off (0) by default; at most RTR_INJECT_DELAY_MAX ms.
 */

static unsigned int rtr_inject_marker_hit_delay;
module_param_named(inject_marker_hit_delay, rtr_inject_marker_hit_delay,
		   uint, 0600);
MODULE_PARM_DESC(inject_marker_hit_delay,
		 "test only: ms a marker's trigger hit waits after its commit (0.."
		 __stringify(RTR_INJECT_DELAY_MAX) ")");

static ssize_t rtr_marker_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	struct ringtrace_reservation r __uninitialized;
	struct rtr_marker_payload *p;
	size_t size = sizeof(*p) + count;
	ssize_t ret = count;
	unsigned int delay;
	bool hit;
	void *e;

	/* Refuse what the buffer could only count as too big. */
	if (!count || count > RINGTRACE_MARKER_MAX ||
	    size > READ_ONCE(rtr_trace.subbuf_size) - RINGTRACE_PACKET_HEADER_SIZE -
		   RINGTRACE_EXTENDED_HEADER_SIZE - 1)
		return -EINVAL;
	/*
	 * Copy first: a fault must not leave a half-written event, and the
	 * reservation may not sleep.  One byte more, not written: the NUL
	 * that ends the text for the trigger's globs (trigger.c).
	 */
	p = kmalloc(size + 1, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	if (copy_from_user(p->data, ubuf, count)) {
		ret = -EFAULT;
		goto free;
	}
	p->len = count;
	p->data[count] = '\0';
	/*
	 * A marker its predicate drops is not written and takes no space,
	 * and the write() succeeds as one made while tracing is off does:
	 * what a writer sees does not depend on what is being recorded.
	 */
	if (rtr_marker_filtered(p->data))
		goto free;
	e = ringtrace_reserve(&r, rtr_marker_event.id, size);
	if (!e)
		goto free;
	memcpy(e, p, size);
	/* Its trigger, read in the writer's section (preemption off). */
	hit = rtr_marker_matched(p->data);
	/*
	 * The hit in the same preempt-off section as the reservation and
	 * the commit, as a probe's: stopping tracing waits for all three
	 * [R3], so a hit never latches once its trace has stopped, nor
	 * after a new one started, and the buffer it reads is not freed
	 * under it by a clear or a geometry change (trigger.c [T4]).
	 */
	preempt_disable_notrace();
	ringtrace_commit(&r);
	if (hit) {
		delay = READ_ONCE(rtr_inject_marker_hit_delay);
		if (unlikely(delay))
			mdelay(min(delay, RTR_INJECT_DELAY_MAX));
		rtr_trigger_hit(RINGTRACE_EVENT_MARKER, smp_processor_id());
	}
	preempt_enable_notrace();
free:
	kfree(p);
	return ret;
}

static int rtr_marker_open(struct inode *inode, struct file *file)
{
	return rtr_file_open() ?: simple_open(inode, file);
}

static const struct file_operations rtr_marker_fops = {
	.owner = THIS_MODULE,
	.open = rtr_marker_open,
	.write = rtr_marker_write,
	.llseek = noop_llseek,
};

/* --- stats ------------------------------------------------------------ */

static void rtr_stats_print(struct seq_file *m, unsigned int cpu,
			   const struct ringtrace_stats *st)
{
	const struct {
		const char *name;
		u64 value;
	} field[] = {
		{ "written", st->written },
		{ "delivered", st->delivered },
		{ "lost_full", st->lost_full },
		{ "lost_overrun", st->lost_overrun },
		{ "lost_held", st->lost_held },
		{ "lost_nested", st->lost_nested },
		{ "lost_too_big", st->lost_too_big },
		{ "subbufs", st->subbufs_delivered },
		{ "bytes", st->bytes_delivered },
	};
	unsigned int i;

	seq_printf(m, "cpu%u", cpu);
	for (i = 0; i < ARRAY_SIZE(field); i++)
		seq_printf(m, " %s=%llu", field[i].name, field[i].value);
	seq_putc(m, '\n');
}

static int rtr_stats_show(struct seq_file *m, void *unused)
{
	struct ringtrace_stats st;
	struct rtr_buffer *buf;
	unsigned int cpu;

	mutex_lock(&rtr_control_lock);
	for_each_rtr_buffer(cpu, buf) {
		rtr_buffer_stats(buf, &st);
		rtr_stats_print(m, cpu, &st);
	}
	mutex_unlock(&rtr_control_lock);
	return 0;
}

static int rtr_stats_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_stats_show);
}

static const struct file_operations rtr_stats_fops = {
	.owner = THIS_MODULE,
	.open = rtr_stats_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* --- the tree --------------------------------------------------------- */

static const struct {
	const char *name;
	umode_t mode;
	unsigned long data;
	const struct file_operations *fops;
} rtr_control_files[] = {
	{ "tracing_on", 0600, RTR_CTL_TRACING_ON, &rtr_control_fops },
	{ "mode", 0600, RTR_CTL_MODE, &rtr_control_fops },
	{ "subbuf_size", 0600, RTR_CTL_SUBBUF_SIZE, &rtr_control_fops },
	{ "num_subbufs", 0600, RTR_CTL_NUM_SUBBUFS, &rtr_control_fops },
	{ "clear", 0200, RTR_CTL_CLEAR, &rtr_control_fops },
	{ "metadata", 0400, 0, &rtr_metadata_fops },
	{ "marker", 0200, 0, &rtr_marker_fops },
	{ "stats", 0400, 0, &rtr_stats_fops },
};

/*
 * A buffer file for every possible CPU: one that has not been online yet
 * has no buffer, and its file says so at open (-ENODEV).
 */
int rtr_control_files_init(void)
{
	struct dentry *cpus, *dir;
	char path[32], name[16];
	unsigned long cpu;
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(rtr_control_files); i++) {
		ret = rtr_file_create(rtr_dir, rtr_control_files[i].name,
				      rtr_control_files[i].mode,
				      (void *)rtr_control_files[i].data,
				      rtr_control_files[i].fops);
		if (ret)
			return ret;
	}
	cpus = rtr_files_mkdir(rtr_dir, "cpu");
	for_each_possible_cpu(cpu) {
		snprintf(name, sizeof(name), "%lu", cpu);
		snprintf(path, sizeof(path), "cpu/%lu/buffer", cpu);
		dir = rtr_files_mkdir(cpus, name);
		ret = rtr_file_create(dir, path, 0400, (void *)cpu,
				      &rtr_buffer_fops);
		if (ret)
			return ret;
	}
	return 0;
}
