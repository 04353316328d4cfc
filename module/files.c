// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: where the control and buffer files live.
 *
 * Every file exists twice, with the same file_operations and behaviour:
 *
 *   /sys/kernel/debug/ringtrace/<path>   debugfs: what people use from a shell
 *   /dev/ringtrace/<path>                a character device per file
 *
 * Why twice: under Secure Boot, Debian's kernels run with lockdown=integrity,
 * and debugfs then refuses to open any file that can be written, mapped or
 * ioctl'd -- every ringtrace file but the read-only ones.  The kernel's own
 * tracer moved to tracefs for this reason, but a module cannot create
 * tracefs files (tracefs_create_file() is not exported).  Character devices
 * are not refused under lockdown=integrity; like tracefs they are refused
 * under lockdown=confidentiality, where a trace could reveal what kernel
 * memory holds.
 *
 * One region of minors serves the whole /dev tree: minor i is rtr_nodes[i].
 * The cdev's open looks the node up, installs the node's file_operations
 * and calls their open, the way misc devices do.  The device named
 * "ringtrace!events!sched_switch!enable" becomes the node
 * /dev/ringtrace/events/sched_switch/enable.
 *
 * Every open, in either tree, goes through rtr_file_open() first:
 *
 *   - lockdown=confidentiality refuses every file of both trees, as it
 *     refuses every tracefs file.  (debugfs itself refuses the files that
 *     can be written, mapped or ioctl'd from lockdown=integrity on, and
 *     serves the read-only ones at every level: metadata, stats, ...)
 *
 *   - Nothing opens before the load has finished.  The files are made
 *     last (ringtrace_init()), but making them can itself fail half way,
 *     and the module loader frees a module whose init failed whatever
 *     still refers to it: a file opened in that time, or a probe attached
 *     through it, would run freed code.  So the files stay shut until
 *     rtr_files_publish(), the last step of a load that can no longer
 *     fail, and a load that fails after making files waits for the
 *     refused opens to let go of the module (rtr_files_abort()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "compat.h"
#include "internal.h"
#include "mmap.h"
#include "probes.h"

/* Control files, event files (2 per event, 1024 events) and cpu buffers. */
#define RTR_MAX_FILES		(64 + 2 * 1024)
#define RTR_PATH_MAX		64

struct rtr_node {
	const struct file_operations *fops;
	void *data;
	umode_t mode;
	struct device *dev;
};

struct dentry *rtr_dir;

static struct rtr_node *rtr_nodes;
static unsigned int rtr_nr_nodes, rtr_max_nodes;
static dev_t rtr_devt;
static struct cdev rtr_cdev;
/* The load has finished: files may open.  Set once, never cleared. */
static bool rtr_files_live;

/* devtmpfs asks for the node's permissions; its name comes from the device. */
static char *rtr_devnode(rtr_devnode_device *dev, umode_t *mode)
{
	const struct rtr_node *node = dev_get_drvdata(dev);

	if (mode && node)
		*mode = node->mode;
	return NULL;
}

static struct class rtr_class = {
	.name = "ringtrace",
	.devnode = rtr_devnode,
};

static bool rtr_inode_is_dev(const struct inode *inode)
{
	unsigned int nr;

	if (!S_ISCHR(inode->i_mode) || imajor(inode) != MAJOR(rtr_devt))
		return false;
	/* Pairs with smp_store_release() in rtr_file_create(). */
	nr = smp_load_acquire(&rtr_nr_nodes);
	return iminor(inode) < nr;
}

/* What the file was created with, in either tree. */
void *rtr_file_data(const struct inode *inode)
{
	if (rtr_inode_is_dev(inode))
		return rtr_nodes[iminor(inode)].data;
	return inode->i_private;
}

/*
 * The first step of every open handler of ringtrace's files: -ENODEV
 * while the module is still loading, -EPERM under lockdown=confidentiality.
 */
int rtr_file_open(void)
{
	/* Pairs with smp_store_release() in rtr_files_publish(). */
	if (!smp_load_acquire(&rtr_files_live))
		return -ENODEV;
	return security_locked_down(LOCKDOWN_TRACEFS);
}

/* The open of a seq_file control file: rtr_file_open(), then single_open(). */
int rtr_single_open(struct inode *inode, struct file *file,
		    int (*show)(struct seq_file *, void *))
{
	return rtr_file_open() ?: single_open(file, show, rtr_file_data(inode));
}

static int rtr_dev_open(struct inode *inode, struct file *file)
{
	const struct file_operations *fops;

	if (!rtr_inode_is_dev(inode))
		return -ENODEV;
	fops = fops_get(rtr_nodes[iminor(inode)].fops);
	if (!fops)
		return -ENODEV;
	replace_fops(file, fops);
	return fops->open ? fops->open(inode, file) : 0;
}

static const struct file_operations rtr_dev_fops = {
	.owner = THIS_MODULE,
	.open = rtr_dev_open,
	.llseek = noop_llseek,
};

/*
 * Debugfs may be off (debugfs=off: -EPERM) or not built (-ENODEV); then
 * /dev/ringtrace is the only tree.  Any other error (no memory) fails the
 * load: a tree with a control file missing is not a working ringtrace.
 */
static bool rtr_debugfs_failed(const struct dentry *dentry)
{
	return IS_ERR(dentry) && PTR_ERR(dentry) != -EPERM &&
	       PTR_ERR(dentry) != -ENODEV;
}

/*
 * A directory that could not be made makes its files fail with its error
 * (debugfs returns an ERR_PTR parent as the child): checked there.
 */
struct dentry *rtr_files_mkdir(struct dentry *parent, const char *name)
{
	return debugfs_create_dir(name, parent);
}

/*
 * @path is relative to the tree's root ("events/sched_switch/enable");
 * @dir is the file's debugfs directory.  Files already made are removed
 * by rtr_files_init() when one fails.
 */
int rtr_file_create(struct dentry *dir, const char *path, umode_t mode,
		    void *data, const struct file_operations *fops)
{
	const char *name = strrchr(path, '/');
	char devname[RTR_PATH_MAX + sizeof("ringtrace!")];
	struct dentry *dentry;
	struct rtr_node *node;
	struct device *dev;

	dentry = debugfs_create_file_unsafe(name ? name + 1 : path, mode, dir,
					    data, fops);
	if (rtr_debugfs_failed(dentry)) {
		pr_err("cannot create %s in debugfs: %ld\n", path,
		       PTR_ERR(dentry));
		return PTR_ERR(dentry);
	}

	if (rtr_nr_nodes == rtr_max_nodes ||
	    snprintf(devname, sizeof(devname), "ringtrace/%s", path) >=
	    sizeof(devname)) {
		pr_err("cannot create /dev/%s: too many files or name too long\n",
		       path);
		return -ENOSPC;
	}
	strreplace(devname, '/', '!');
	node = &rtr_nodes[rtr_nr_nodes];
	node->fops = fops;
	node->data = data;
	node->mode = mode;
	/* The node is complete before an open can find it. */
	smp_store_release(&rtr_nr_nodes, rtr_nr_nodes + 1);
	dev = device_create(&rtr_class, NULL, MKDEV(MAJOR(rtr_devt),
						    rtr_nr_nodes - 1),
			    node, "%s", devname);
	if (IS_ERR(dev)) {
		rtr_nr_nodes--;
		pr_err("cannot create /dev/%s: %ld\n", path, PTR_ERR(dev));
		return PTR_ERR(dev);
	}
	node->dev = dev;
	return 0;
}

/*
 * The /dev nodes and the cdev: once this returns, no open finds them (an
 * inode that cached the cdev lost it in cdev_del()).  An open that found
 * them before may still be in rtr_dev_open(), reading rtr_nodes[].
 */
static void rtr_dev_remove(void)
{
	while (rtr_nr_nodes)
		device_destroy(&rtr_class, MKDEV(MAJOR(rtr_devt), --rtr_nr_nodes));
	cdev_del(&rtr_cdev);
}

/* What rtr_dev_remove() left, once no open can be in flight. */
static void rtr_dev_free(void)
{
	class_unregister(&rtr_class);
	unregister_chrdev_region(rtr_devt, rtr_max_nodes);
	kfree(rtr_nodes);
}

static int rtr_dev_init(void)
{
	int ret;

	rtr_max_nodes = RTR_MAX_FILES + nr_cpu_ids;
	rtr_nodes = kcalloc(rtr_max_nodes, sizeof(*rtr_nodes), GFP_KERNEL);
	if (!rtr_nodes)
		return -ENOMEM;
	ret = alloc_chrdev_region(&rtr_devt, 0, rtr_max_nodes, "ringtrace");
	if (ret)
		goto free_nodes;
	cdev_init(&rtr_cdev, &rtr_dev_fops);
	rtr_cdev.owner = THIS_MODULE;
	ret = cdev_add(&rtr_cdev, rtr_devt, rtr_max_nodes);
	if (ret)
		goto unregister_region;
	ret = class_register(&rtr_class);
	if (ret)
		goto del_cdev;
	return 0;

del_cdev:
	cdev_del(&rtr_cdev);
unregister_region:
	unregister_chrdev_region(rtr_devt, rtr_max_nodes);
free_nodes:
	kfree(rtr_nodes);
	return ret;
}

/*
 * Both trees, every file, shut until rtr_files_publish().  On failure,
 * nothing of them is left and nothing refers to the module any more.
 */
int rtr_files_init(void)
{
	int ret;

	ret = rtr_dev_init();
	if (ret)
		return ret;
	rtr_dir = debugfs_create_dir("ringtrace", NULL);
	ret = rtr_debugfs_failed(rtr_dir) ? PTR_ERR(rtr_dir) :
	      rtr_control_files_init() ?: rtr_events_ctl_init() ?:
	      rtr_dynprobes_init() ?: rtr_mmap_files_init() ?:
	      rtr_sampler_files_init() ?: rtr_persist_files_init();
	if (ret)
		rtr_files_abort();
	return ret;
}

/* The load is complete: open the files. */
void rtr_files_publish(void)
{
	/* Pairs with smp_load_acquire() in rtr_file_open(). */
	smp_store_release(&rtr_files_live, true);
}

/*
 * At unload: no file can be open and no open in flight, each one pins
 * the module.
 */
void rtr_files_exit(void)
{
	debugfs_remove_recursive(rtr_dir);
	rtr_dev_remove();
	rtr_dev_free();
}

/*
 * A load that fails with files made.  Each open in that time was refused
 * by rtr_file_open(), but the VFS took a reference to the module before
 * it called the open handler and drops it after the handler returned --
 * maybe after the files are gone, and the loader frees the module once
 * init returns, whatever its count.  debugfs_remove_recursive() waits for
 * the debugfs opens inside a handler, not for that reference; a /dev open
 * may still be in rtr_dev_open() (rtr_nodes[]) and holds the cdev too.
 * Once the files are gone no new open can take a reference: wait for the
 * ones in flight to drop theirs, then free what they read.  The loader
 * holds one reference itself until init returns.
 */
void rtr_files_abort(void)
{
	debugfs_remove_recursive(rtr_dir);
	rtr_dev_remove();
	while (rtr_module_refs(THIS_MODULE) > 1)
		usleep_range(500, 1000);
	rtr_dev_free();
}
