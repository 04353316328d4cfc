// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: uprobes, the user-space kind of dynamic probe (dynprobes.c
 * owns the file, the list, arming and lifetime; see the top of it).
 *
 *   "u:PATH:OFFSET[@LABEL]"
 *
 * PATH is absolute; OFFSET is a file offset in it (decimal or 0x hex: the
 * CLI turns a symbol's address into one through the ELF program headers);
 * LABEL, letters, digits, '_' and '.', names the event instead of the
 * offset.  The event is uprobe_BASE_LABEL or uprobe_BASE_0xOFFSET, BASE
 * the file's name with every other character than a letter or digit made
 * '_', and has the fields arg0 .. arg5 of a kprobe: the first six
 * argument registers at the probed instruction.
 *
 * The probe holds the path (and so the inode) for its life: a file
 * renamed or unlinked while probed keeps its probe, as a mapping would.
 * On overlayfs the probe goes on the real inode, the one a mapping of the
 * file maps.  Errors: -ENOENT no such file; -EINVAL not a regular file, an
 * offset beyond its end, a relative path, a malformed command; -EINVAL also
 * an offset the uprobes core cannot place an int3 on (-ENOTSUPP, seen only
 * if a running process maps the file: otherwise the core finds out at its
 * next mmap and skips that process).  The offset is trusted to be an
 * instruction's start, as by ftrace's uprobe_events.
 *
 * The handler runs in the probed task, preemptible, on its way back to
 * user space from the breakpoint: preemption goes off around the pid
 * filter and the reserve/commit, nothing sleeps or allocates.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/preempt.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uprobes.h>

#include "compat.h"
#include "dynprobes.h"

/* A LABEL's length; with "uprobe_", a file name and '_' it fits a name. */
#define RTR_UPROBE_LABEL_MAX	NAME_MAX
static_assert(RTR_DYNPROBE_NAME_MAX >=
	      sizeof("uprobe_") + NAME_MAX + 1 + RTR_UPROBE_LABEL_MAX);

struct rtr_uprobe {
	struct rtr_dynprobe dp;		/* first: read on every hit */
	struct uprobe_consumer consumer;

	/* Set by the parser, then constant. */
	char *file;			/* PATH as written */
	loff_t offset;
	char label[RTR_UPROBE_LABEL_MAX + 1];	/* "" if none */

	/* While attached. */
	struct path path;
	struct rtr_uprobe_ref ref;
};

static int rtr_uprobe_handler(struct uprobe_consumer *uc, struct pt_regs *regs)
{
	struct rtr_uprobe *u = container_of(uc, struct rtr_uprobe, consumer);

	preempt_disable_notrace();
	rtr_dynprobe_write_args(&u->dp, regs);
	preempt_enable_notrace();
	return 0;
}

static int rtr_uprobe_attach(struct rtr_dynprobe *p)
{
	struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);
	struct inode *inode;
	int ret;

	ret = kern_path(u->file, LOOKUP_FOLLOW, &u->path);
	if (ret)
		return ret;
	inode = d_real_inode(u->path.dentry);
	ret = -EINVAL;
	if (!S_ISREG(inode->i_mode) || u->offset >= i_size_read(inode))
		goto put_path;
	u->consumer.handler = rtr_uprobe_handler;
	ret = rtr_uprobe_register(&u->ref, inode, u->offset, &u->consumer);
	/* Not an errno user space knows: an instruction uprobes refuse. */
	if (ret == -ENOTSUPP)
		ret = -EINVAL;
	if (ret)
		goto put_path;
	return 0;

put_path:
	path_put(&u->path);
	return ret;
}

/* All unlinked, then one wait for the handlers of every one of them. */
static void rtr_uprobe_detach(struct rtr_dynprobe **ps, unsigned int n)
{
	struct rtr_uprobe *u;
	unsigned int i;

	for (i = 0; i < n; i++) {
		u = container_of(ps[i], struct rtr_uprobe, dp);
		rtr_uprobe_unregister_nosync(&u->ref, &u->consumer);
	}
	rtr_uprobe_unregister_sync();
	for (i = 0; i < n; i++) {
		u = container_of(ps[i], struct rtr_uprobe, dp);
		path_put(&u->path);
	}
}

static void rtr_uprobe_show(struct seq_file *m, const struct rtr_dynprobe *p)
{
	const struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);

	seq_printf(m, "u:%s:0x%llx", u->file, (unsigned long long)u->offset);
	if (u->label[0])
		seq_printf(m, "@%s", u->label);
}

static void rtr_uprobe_free(struct rtr_dynprobe *p)
{
	struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);

	kfree(u->file);
	kfree(u);
}

static const struct rtr_dynprobe_ops rtr_uprobe_ops = {
	RTR_DYNPROBE_FIELDS(RTR_DYNPROBE_ARGS_FIELDS, rtr_dynprobe_write_args),
	.attach = rtr_uprobe_attach,
	.detach = rtr_uprobe_detach,
	.show = rtr_uprobe_show,
	.free = rtr_uprobe_free,
};

/* Letters, digits, '_' and '.': a C or C++-mangled symbol, maybe "+OFF"'d by the CLI. */
static bool rtr_valid_label(const char *s)
{
	if (!*s || strlen(s) > RTR_UPROBE_LABEL_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum(*s) && *s != '_' && *s != '.')
			return false;
	return true;
}

/* "uprobe_" BASE "_" LABEL-or-0xOFFSET, every other character made '_'. */
static void rtr_uprobe_name(struct rtr_uprobe *u)
{
	const char *base = kbasename(u->file);
	char *c;

	if (u->label[0])
		snprintf(u->dp.name, sizeof(u->dp.name), "uprobe_%s_%s",
			 base, u->label);
	else
		snprintf(u->dp.name, sizeof(u->dp.name), "uprobe_%s_0x%llx",
			 base, (unsigned long long)u->offset);
	for (c = u->dp.name; *c; c++)
		if (!isalnum(*c))
			*c = '_';
}

struct rtr_dynprobe *rtr_uprobe_parse(char *cmd)
{
	char *file = cmd + 2, *colon, *at;
	unsigned long long off;
	struct rtr_uprobe *u;

	/* The offset follows the last ':'; neither it nor a label has one. */
	colon = strrchr(file, ':');
	if (!colon)
		return ERR_PTR(-EINVAL);
	*colon = '\0';
	at = strchr(colon + 1, '@');
	if (at) {
		*at = '\0';
		if (!rtr_valid_label(at + 1))
			return ERR_PTR(-EINVAL);
	}
	if (kstrtoull(colon + 1, 0, &off) || off > LLONG_MAX)
		return ERR_PTR(-EINVAL);
	/* Absolute, and a file name after the last '/'. */
	if (file[0] != '/' || !*kbasename(file) || strlen(file) >= PATH_MAX)
		return ERR_PTR(-EINVAL);
	if (strlen(kbasename(file)) > NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return ERR_PTR(-ENOMEM);
	u->file = kstrdup(file, GFP_KERNEL);
	if (!u->file) {
		kfree(u);
		return ERR_PTR(-ENOMEM);
	}
	u->offset = off;
	if (at)
		strscpy(u->label, at + 1, sizeof(u->label));
	u->dp.ops = &rtr_uprobe_ops;
	rtr_uprobe_name(u);
	u->dp.event.name = u->dp.name;
	return &u->dp;
}
