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
 *
 * The site -- the path, the offset, a USDT semaphore's offset, the
 * registration -- is struct rtr_uprobe_site (dynprobes.h), which usdt.c's
 * probes embed too: parsed, attached and detached here for both.
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

#include "dynprobes.h"

static_assert(RTR_DYNPROBE_NAME_MAX >=
	      sizeof("uprobe_") + NAME_MAX + 1 + RTR_UPROBE_LABEL_MAX);

struct rtr_uprobe {
	struct rtr_dynprobe dp;		/* first: read on every hit */
	struct rtr_uprobe_site site;

	/* Set by the parser, then constant. */
	char label[RTR_UPROBE_LABEL_MAX + 1];	/* "" if none */
};

static int rtr_uprobe_handler(struct uprobe_consumer *uc, struct pt_regs *regs)
{
	struct rtr_uprobe *u = container_of(uc, struct rtr_uprobe, site.consumer);

	preempt_disable_notrace();
	rtr_dynprobe_write_args(&u->dp, regs);
	preempt_enable_notrace();
	return 0;
}

int rtr_uprobe_site_attach(struct rtr_uprobe_site *s)
{
	struct inode *inode;
	loff_t size;
	int ret;

	ret = kern_path(s->file, LOOKUP_FOLLOW, &s->path);
	if (ret)
		return ret;
	inode = d_real_inode(s->path.dentry);
	size = i_size_read(inode);
	ret = -EINVAL;
	if (!S_ISREG(inode->i_mode) || s->offset >= size)
		goto put_path;
	/* A 16-bit counter, aligned: the core would refuse it otherwise. */
	if (s->ref_ctr_offset &&
	    (s->ref_ctr_offset > size - 2 || s->ref_ctr_offset & 1))
		goto put_path;
	ret = rtr_uprobe_register(&s->ref, inode, s->offset, s->ref_ctr_offset,
				  &s->consumer);
	/* Not an errno user space knows: an instruction uprobes refuse. */
	if (ret == -ENOTSUPP)
		ret = -EINVAL;
	if (ret)
		goto put_path;
	return 0;

put_path:
	path_put(&s->path);
	return ret;
}

static int rtr_uprobe_attach(struct rtr_dynprobe *p)
{
	struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);

	u->site.consumer.handler = rtr_uprobe_handler;
	return rtr_uprobe_site_attach(&u->site);
}

void rtr_uprobe_site_unlink(struct rtr_uprobe_site *s)
{
	rtr_uprobe_unregister_nosync(&s->ref, &s->consumer);
}

void rtr_uprobe_site_put(struct rtr_uprobe_site *s)
{
	path_put(&s->path);
}

/* All unlinked, then one wait for the handlers of every one of them. */
static void rtr_uprobe_detach(struct rtr_dynprobe **ps, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rtr_uprobe_site_unlink(&container_of(ps[i], struct rtr_uprobe,
						     dp)->site);
	rtr_uprobe_unregister_sync();
	for (i = 0; i < n; i++)
		rtr_uprobe_site_put(&container_of(ps[i], struct rtr_uprobe,
						  dp)->site);
}

static void rtr_uprobe_show(struct seq_file *m, const struct rtr_dynprobe *p)
{
	const struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);

	seq_printf(m, "u:%s:0x%llx", u->site.file,
		   (unsigned long long)u->site.offset);
	if (u->label[0])
		seq_printf(m, "@%s", u->label);
}

void rtr_uprobe_site_free(struct rtr_uprobe_site *s)
{
	kfree(s->file);
}

static void rtr_uprobe_free(struct rtr_dynprobe *p)
{
	struct rtr_uprobe *u = container_of(p, struct rtr_uprobe, dp);

	rtr_uprobe_site_free(&u->site);
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
	const char *base = kbasename(u->site.file);
	char *c;

	if (u->label[0])
		snprintf(u->dp.name, sizeof(u->dp.name), "uprobe_%s_%s",
			 base, u->label);
	else
		snprintf(u->dp.name, sizeof(u->dp.name), "uprobe_%s_0x%llx",
			 base, (unsigned long long)u->site.offset);
	for (c = u->dp.name; *c; c++)
		if (!isalnum(*c))
			*c = '_';
}

int rtr_uprobe_site_parse(struct rtr_uprobe_site *s, char *spec,
			  char label[RTR_UPROBE_LABEL_MAX + 1])
{
	char *file = spec, *colon, *at;
	unsigned long long off;

	/* The offset follows the last ':'; neither it nor a label has one. */
	colon = strrchr(file, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	at = strchr(colon + 1, '@');
	if (at) {
		*at = '\0';
		if (!rtr_valid_label(at + 1))
			return -EINVAL;
	}
	if (kstrtoull(colon + 1, 0, &off) || off > LLONG_MAX)
		return -EINVAL;
	/* Absolute, and a file name after the last '/'. */
	if (file[0] != '/' || !*kbasename(file) || strlen(file) >= PATH_MAX)
		return -EINVAL;
	if (strlen(kbasename(file)) > NAME_MAX)
		return -ENAMETOOLONG;
	s->file = kstrdup(file, GFP_KERNEL);
	if (!s->file)
		return -ENOMEM;
	s->offset = off;
	strscpy(label, at ? at + 1 : "", RTR_UPROBE_LABEL_MAX + 1);
	return 0;
}

struct rtr_dynprobe *rtr_uprobe_parse(char *cmd)
{
	struct rtr_uprobe *u;
	int ret;

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return ERR_PTR(-ENOMEM);
	ret = rtr_uprobe_site_parse(&u->site, cmd + 2, u->label);
	if (ret) {
		kfree(u);
		return ERR_PTR(ret);
	}
	u->dp.ops = &rtr_uprobe_ops;
	rtr_uprobe_name(u);
	u->dp.event.name = u->dp.name;
	return &u->dp;
}
