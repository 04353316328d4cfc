// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: dynamic probes -- kprobes, kretprobes and uprobes that
 * ringtrace.ko registers at run time, each feeding an event of its own.
 *
 *   /sys/kernel/debug/ringtrace/probe_events   (and /dev/ringtrace/)
 *     write "p:SYMBOL[+OFF]"  a kprobe:    event kprobe_SYMBOL[_0xOFF],
 *                             fields uint64_t arg0 .. arg5
 *           "r:SYMBOL"        a kretprobe: event kretprobe_SYMBOL,
 *                             field uint64_t ret
 *           "u:PATH:OFFSET[@LABEL]"
 *                             a uprobe at a file offset of an executable
 *                             (uprobes.c): event uprobe_BASE_LABEL or
 *                             uprobe_BASE_0xOFFSET, fields arg0 .. arg5
 *           "s:PATH:OFFSET@LABEL[ ref=OFF][ a0=ARG[ a1=ARG ...]]
 *                [ at=OFFSET a0=ARG ...]..."
 *                             a USDT probe (usdt.c): event usdt_LABEL,
 *                             fields int64_t arg0 .. argN-1, faults; a
 *                             site per at=, 32 at most, one event
 *           "-:NAME"          remove the probe of that event
 *     a probe's command may end with " ustack": its events carry the
 *     user stack (stack.c), a uprobe's with " ustack entry" when it is
 *     at a function's first instruction (the caller read at [sp])
 *     read  "<id> <name> <spec>" per probe, of every opener
 *
 *   /sys/kernel/debug/ringtrace/events/<name>/filter   (debugfs only)
 *     the probe's field predicate, as events/<name>/filter of the
 *     tracepoints (filter.c): arg0 .. arg5 and comm, or a kretprobe's ret
 *     and comm; there while the probe exists
 *   /sys/kernel/debug/ringtrace/events/<name>/trigger  (debugfs only)
 *     its trigger, on the same fields (trigger.c), the same way
 *
 * One command per write, words parted by single spaces for a USDT probe
 * alone (a path with a space, or tab or newline, is not taken).  A write
 * takes effect entirely or fails with nothing left behind: no probe, no
 * event id, no declaration in the metadata.  Errors: -EINVAL a malformed command, or a function the
 * kernel refuses to probe (kprobe blacklist, noinstr, ...); -ENOENT an
 * unknown symbol (not in kallsyms: misspelt, or inlined everywhere);
 * -EILSEQ an offset inside an instruction; -EEXIST a probe of that name
 * exists; -ENOSPC RTR_DYNPROBES_MAX probes exist, or as many different
 * events were declared since the module loaded as it has ids for (ctf.c:
 * a probe made again with the same name and fields takes its old id
 * back, so only new names count); -EOPNOTSUPP a kernel
 * without CONFIG_KPROBES (or KRETPROBES, or UPROBES); -EPERM "-:NAME" of a
 * probe another open file made.  A uprobe's own errors are in uprobes.c.
 *
 * Kinds.  Each kind embeds a struct rtr_dynprobe and brings its parser and
 * its ops (dynprobes.h): attach/detach/show/free, and its event's fields,
 * those of the function its handler passes the values through
 * (RTR_DYNPROBE_FIELDS()).  kprobes and kretprobes, two kinds with one
 * parser, live here, uprobes in uprobes.c, USDT probes (uprobes with
 * fetched arguments and a semaphore) in usdt.c.  Everything below --
 * names, ids, arming, removal, lifetime -- is the same for all.
 *
 * Lifetime.  A probe belongs to the open file it was written through and
 * goes when that file is released: the last close, an exit, or a SIGKILL
 * of the process that made it.  A recording's probes therefore never
 * outlive the recording, whatever ends it, and a probe never outlives the
 * module (every open pins it).  A shell keeps its probes with an fd of
 * its own: exec 3>probe_events; echo p:vfs_read >&3.
 *
 * Arming.  The probe is attached before its event is registered:
 * attaching is what tells whether the symbol or file can be probed, and
 * a refused one must not add a declaration to the metadata, nor use up an
 * id (an id stays with its declaration, ctf.c).  The handler writes
 * nothing until ->armed is set, after the event has its id [D1].  Removal
 * is the reverse: ->detach() returns once no handler runs any more (for
 * a closing file, once for all its probes of a kind), then the event is
 * unregistered and the probe freed.
 *
 * Predicate files [D2].  A probe's events/<name>/filter and trigger come
 * and go with the probe (made before it is attached, removed after it is
 * detached).  The handler reads the predicates under RCU-sched like a
 * tracepoint probe; at removal no handler runs any more (->detach()) and
 * debugfs_remove() has waited for any read or write of the files in
 * progress, so the predicates are freed without a grace period
 * (rtr_pred_free(), filter.c [F2]).  The files are filter.c's
 * rtr_pred_fops, like every filter and trigger.  A trigger's hit is fired
 * once its event is committed, as a tracepoint probe's (trigger.c).
 *
 * Locks: rtr_dynprobes_lock, then rtr_probes_lock inside it (the
 * triggered file describes a hit on a probe's event under both).  Never
 * the other way round: a removal holds rtr_dynprobes_lock while
 * debugfs_remove() waits for a predicate file's read or write, which
 * takes rtr_probes_lock.
 *
 * Handlers never sleep and allocate nothing: the inline reserve/commit of
 * include/linux/ringtrace.h, behind the pid filter like every probe, with
 * preemption off (kprobes: int3 or the ftrace trampoline; uprobes: the
 * handler turns it off, it runs in the probed task).
 * A kprobe hit inside a handler (a probe on a function ringtrace itself
 * calls) is counted as missed by the kprobes core, not recursed into.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "dynprobes.h"
#include "internal.h"
#include "probes.h"

/* Probes at once, over every opener. */
#define RTR_DYNPROBES_MAX	64
/*
 * The longest command: a uprobe's absolute path, offset and label, and a
 * USDT probe's semaphore and its sites' offsets and arguments.
 */
#define RTR_DYNPROBE_CMD_MAX	(PATH_MAX + KSYM_NAME_LEN + \
				 RTR_USDT_SITES_MAX * RTR_USDT_SITE_CMD_MAX)

struct rtr_kretprobe_payload {
	u64 ret;
} __packed;
static_assert(sizeof(struct rtr_kretprobe_payload) == 8);
#define RTR_KRETPROBE_FIELDS "uint64_t ret;"

/* A kprobe or a kretprobe. */
struct rtr_kprobe {
	struct rtr_dynprobe dp;		/* first: read on every hit */
	union {
		struct kprobe kp;
		struct kretprobe rp;
	};

	/* Set by the parser, then constant. */
	unsigned int offset;
	char symbol[KSYM_NAME_LEN];
};

const struct rtr_filter_field rtr_dynprobe_write_args_ff[RTR_DYNPROBE_ARGS + 1] = {
	{ .name = "arg0", .type = RTR_FF_INT },
	{ .name = "arg1", .type = RTR_FF_INT },
	{ .name = "arg2", .type = RTR_FF_INT },
	{ .name = "arg3", .type = RTR_FF_INT },
	{ .name = "arg4", .type = RTR_FF_INT },
	{ .name = "arg5", .type = RTR_FF_INT },
	{ .name = "comm", .type = RTR_FF_STR },
};

static const struct rtr_filter_field rtr_kretprobe_handler_ff[] = {
	{ .name = "ret", .type = RTR_FF_INT },
	{ .name = "comm", .type = RTR_FF_STR },
};

DEFINE_MUTEX(rtr_dynprobes_lock);
static LIST_HEAD(rtr_dynprobes);
static unsigned int rtr_nr_dynprobes;

/* --- kprobes and kretprobes --------------------------------------------- */

static int rtr_kprobe_handler(struct kprobe *kp, struct pt_regs *regs)
{
	struct rtr_kprobe *k = container_of(kp, struct rtr_kprobe, kp);

	rtr_dynprobe_write_args(&k->dp, regs);
	return 0;
}

static int rtr_kretprobe_handler(struct kretprobe_instance *ri,
				 struct pt_regs *regs)
{
	struct kretprobe *rp = rtr_get_kretprobe(ri);
	struct rtr_kretprobe_payload *e;
	struct rtr_kprobe *k;
	struct rtr_rsv w;
	bool hit = false;
	unsigned int id;
	u64 ret;

	if (!rp)
		return 0;
	k = container_of(rp, struct rtr_kprobe, rp);
	if (!rtr_dynprobe_id(&k->dp, &id) || !rtr_task_traced(current))
		return 0;
	ret = regs_return_value(regs);
	if (rtr_dynprobe_filtered(&k->dp, &hit, rtr_kretprobe_handler_ff,
				  RTR_FI(ret), RTR_FS(current->comm)))
		return 0;
	e = rtr_dynprobe_reserve(&w, &k->dp, id, sizeof(*e));
	if (!e)
		return 0;
	e->ret = ret;
	rtr_dynprobe_commit_rsv(&w, id, hit);
	return 0;
}

static int rtr_kprobe_attach(struct rtr_dynprobe *p)
{
	struct rtr_kprobe *k = container_of(p, struct rtr_kprobe, dp);

	k->kp.symbol_name = k->symbol;
	k->kp.offset = k->offset;
	k->kp.pre_handler = rtr_kprobe_handler;
	return register_kprobe(&k->kp);
}

static int rtr_kretprobe_attach(struct rtr_dynprobe *p)
{
	struct rtr_kprobe *k = container_of(p, struct rtr_kprobe, dp);

	k->rp.kp.symbol_name = k->symbol;
	k->rp.handler = rtr_kretprobe_handler;
	return register_kretprobe(&k->rp);
}

/*
 * unregister_kprobes() waits for the handlers once for its whole array.
 * Without memory for the array, one probe at a time: slower, as sure.
 */
static void rtr_kprobe_detach(struct rtr_dynprobe **ps, unsigned int n)
{
	struct kprobe **kps = kmalloc_array(n, sizeof(*kps), GFP_KERNEL);
	struct rtr_kprobe *k;
	unsigned int i;

	for (i = 0; i < n; i++) {
		k = container_of(ps[i], struct rtr_kprobe, dp);
		if (kps)
			kps[i] = &k->kp;
		else
			unregister_kprobe(&k->kp);
	}
	if (kps)
		unregister_kprobes(kps, n);
	kfree(kps);
}

/* The same for kretprobes, with unregister_kretprobes(). */
static void rtr_kretprobe_detach(struct rtr_dynprobe **ps, unsigned int n)
{
	struct kretprobe **rps = kmalloc_array(n, sizeof(*rps), GFP_KERNEL);
	struct rtr_kprobe *k;
	unsigned int i;

	for (i = 0; i < n; i++) {
		k = container_of(ps[i], struct rtr_kprobe, dp);
		if (rps)
			rps[i] = &k->rp;
		else
			unregister_kretprobe(&k->rp);
	}
	if (rps)
		unregister_kretprobes(rps, n);
	kfree(rps);
}

static const struct rtr_dynprobe_ops rtr_kretprobe_ops;

static void rtr_kprobe_show(struct seq_file *m, const struct rtr_dynprobe *p)
{
	const struct rtr_kprobe *k = container_of(p, struct rtr_kprobe, dp);

	seq_printf(m, "%c:%s", p->ops == &rtr_kretprobe_ops ? 'r' : 'p',
		   k->symbol);
	if (k->offset)
		seq_printf(m, "+0x%x", k->offset);
}

static void rtr_kprobe_free(struct rtr_dynprobe *p)
{
	kfree(container_of(p, struct rtr_kprobe, dp));
}

/* Two kinds: each installs its handler, and names that handler's fields. */
static const struct rtr_dynprobe_ops rtr_kprobe_ops = {
	RTR_DYNPROBE_FIELDS(RTR_DYNPROBE_ARGS_FIELDS, rtr_dynprobe_write_args),
	.attach = rtr_kprobe_attach,
	.detach = rtr_kprobe_detach,
	.show = rtr_kprobe_show,
	.free = rtr_kprobe_free,
};

static const struct rtr_dynprobe_ops rtr_kretprobe_ops = {
	RTR_DYNPROBE_FIELDS(RTR_KRETPROBE_FIELDS, rtr_kretprobe_handler),
	.attach = rtr_kretprobe_attach,
	.detach = rtr_kretprobe_detach,
	.show = rtr_kprobe_show,
	.free = rtr_kprobe_free,
};

/* Kernel symbols: letters, digits, '_' and '.' (foo.isra.0, foo.cold). */
static bool rtr_valid_symbol(const char *s)
{
	if (!*s || strlen(s) >= KSYM_NAME_LEN)
		return false;
	for (; *s; s++)
		if (!isalnum(*s) && *s != '_' && *s != '.')
			return false;
	return true;
}

/* "p:SYMBOL[+OFF]" or "r:SYMBOL" into a new probe, or an ERR_PTR. */
static struct rtr_dynprobe *rtr_kprobe_parse(char *cmd)
{
	bool ret_probe = cmd[0] == 'r';
	char *sym = cmd + 2, *plus;
	struct rtr_kprobe *k;
	unsigned int off = 0;

	plus = strchr(sym, '+');
	if (plus) {
		*plus = '\0';
		if (ret_probe || kstrtouint(plus + 1, 0, &off))
			return ERR_PTR(-EINVAL);
	}
	if (!rtr_valid_symbol(sym))
		return ERR_PTR(-EINVAL);
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return ERR_PTR(-ENOMEM);
	k->dp.ops = ret_probe ? &rtr_kretprobe_ops : &rtr_kprobe_ops;
	k->offset = off;
	strscpy(k->symbol, sym, sizeof(k->symbol));
	if (off)
		snprintf(k->dp.name, sizeof(k->dp.name), "kprobe_%s_0x%x", sym, off);
	else
		snprintf(k->dp.name, sizeof(k->dp.name), "%s_%s",
			 ret_probe ? "kretprobe" : "kprobe", sym);
	/* An event name is letters, digits and '_' (ctf.c). */
	strreplace(k->dp.name, '.', '_');
	k->dp.event.name = k->dp.name;
	return &k->dp;
}

/* --- events/<name>/filter and trigger ---------------------------------------- */

/*
 * events/<name>/filter and trigger of a probe, in debugfs only: the /dev
 * tree's nodes are made once, at load (files.c).  Made with
 * debugfs_create_file() -- not the _unsafe() of the static files -- so
 * that debugfs_remove() waits for a read or write in progress and fails
 * the later ones with EIO: a file may stay open after its probe is gone
 * [D2].  0, or the error that fails the add; none when debugfs is off or
 * refused.
 */
static int rtr_dynprobe_files(struct rtr_dynprobe *p)
{
	struct dentry *d;

	lockdep_assert_held(&rtr_dynprobes_lock);
	if (IS_ERR_OR_NULL(rtr_events_dir))
		return 0;
	p->dir = debugfs_create_dir(p->name, rtr_events_dir);
	if (IS_ERR(p->dir)) {
		int ret = PTR_ERR(p->dir);

		p->dir = NULL;
		return ret;
	}
	p->filter_file = (struct rtr_pred_file){
		.prog = &p->filter, .err = &p->filter_err,
		.ff = p->ff, .nff = p->nff,
	};
	p->trigger_file = (struct rtr_pred_file){
		.prog = &p->trigger, .err = &p->trigger_err,
		.ff = p->ff, .nff = p->nff,
	};
	d = debugfs_create_file("filter", 0600, p->dir, &p->filter_file,
				&rtr_pred_fops);
	if (!IS_ERR(d))
		d = debugfs_create_file("trigger", 0600, p->dir,
					&p->trigger_file, &rtr_pred_fops);
	if (IS_ERR(d)) {
		debugfs_remove(p->dir);
		p->dir = NULL;
		return PTR_ERR(d);
	}
	return 0;
}

/*
 * Once no handler of @p runs (after ->detach(), or before ->attach()):
 * the predicates go with no grace period (filter.c [F2]) once no file op
 * on them runs either [D2].
 */
static void rtr_dynprobe_files_remove(struct rtr_dynprobe *p)
{
	lockdep_assert_held(&rtr_dynprobes_lock);
	debugfs_remove(p->dir);
	p->dir = NULL;
	rtr_pred_free(&p->filter, &p->filter_err);
	rtr_pred_free(&p->trigger, &p->trigger_err);
}

/* trigger.c: the trigger of the probe whose event is @id, or NULL. */
struct rtr_filter __rcu **rtr_dynprobe_trigger(unsigned int id)
{
	struct rtr_dynprobe *p;

	lockdep_assert_held(&rtr_dynprobes_lock);
	list_for_each_entry(p, &rtr_dynprobes, node)
		if (p->event.id == id)
			return &p->trigger;
	return NULL;
}

/* --- add and remove ------------------------------------------------------- */

static struct rtr_dynprobe *rtr_dynprobe_find(const char *name)
{
	struct rtr_dynprobe *p;

	lockdep_assert_held(&rtr_dynprobes_lock);
	list_for_each_entry(p, &rtr_dynprobes, node)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

/*
 * Take out the @n probes of @ps, all of one kind: detached together (one
 * wait for their handlers, not one each), then each one's files, event
 * and memory.
 */
static void rtr_dynprobes_remove(struct rtr_dynprobe **ps, unsigned int n)
{
	struct rtr_dynprobe *p;
	unsigned int i;

	lockdep_assert_held(&rtr_dynprobes_lock);
	if (!n)
		return;
	ps[0]->ops->detach(ps, n);
	for (i = 0; i < n; i++) {
		p = ps[i];
		rtr_dynprobe_files_remove(p);
		ringtrace_event_unregister(&p->event);
		list_del(&p->node);
		rtr_nr_dynprobes--;
		p->ops->free(p);
	}
}

static int rtr_dynprobe_add(struct rtr_dynprobe *p)
{
	int ret;

	mutex_lock(&rtr_dynprobes_lock);
	ret = -EEXIST;
	if (rtr_dynprobe_find(p->name))
		goto unlock;
	ret = -ENOSPC;
	if (rtr_nr_dynprobes == RTR_DYNPROBES_MAX)
		goto unlock;
	/* A kind without fields in its ops set each probe's in its parser. */
	if (p->ops->fields) {
		p->event.fields = p->ops->fields;
		p->ff = p->ops->ff;
		p->nff = p->ops->nff;
	}
	/*
	 * Before the probe: a file that cannot be made then costs no
	 * attach and detach (the event id is taken after the attach either
	 * way).
	 */
	ret = rtr_dynprobe_files(p);
	if (ret)
		goto unlock;
	ret = p->ops->attach(p);
	if (ret)
		goto remove_files;
	ret = ringtrace_event_register(&p->event);
	if (ret)
		goto detach;
	/* [D1] The id before the handler may use it; pairs with rtr_dynprobe_id(). */
	smp_store_release(&p->armed, true);
	list_add_tail(&p->node, &rtr_dynprobes);
	rtr_nr_dynprobes++;
	mutex_unlock(&rtr_dynprobes_lock);
	return 0;

detach:
	p->ops->detach(&p, 1);
remove_files:
	rtr_dynprobe_files_remove(p);
unlock:
	mutex_unlock(&rtr_dynprobes_lock);
	return ret;
}

static int rtr_dynprobe_del(const struct file *owner, const char *name)
{
	struct rtr_dynprobe *p;
	int ret = 0;

	mutex_lock(&rtr_dynprobes_lock);
	p = rtr_dynprobe_find(name);
	if (!p)
		ret = -ENOENT;
	else if (p->owner != owner)
		ret = -EPERM;
	else
		rtr_dynprobes_remove(&p, 1);
	mutex_unlock(&rtr_dynprobes_lock);
	return ret;
}

/* --- the command parser --------------------------------------------------- */

/*
 * A command's options after it, NULL for none: " ustack" (its events
 * carry the user stack), " ustack entry" (a uprobe at a function's first
 * instruction: the caller read at [sp]).  -EINVAL for anything else.
 */
static int rtr_dynprobe_opts(const char *opts, char kind, u8 *ustack)
{
	*ustack = RTR_USTACK_OFF;
	if (!opts)
		return 0;
	if (!strcmp(opts, "ustack"))
		*ustack = RTR_USTACK_ON;
	else if (kind == 'u' && !strcmp(opts, "ustack entry"))
		*ustack = RTR_USTACK_ENTRY;
	else
		return -EINVAL;
	return 0;
}

static int rtr_dynprobe_cmd(char *cmd, u8 ustack, const struct file *owner)
{
	struct rtr_dynprobe *p;
	int ret;

	if (strlen(cmd) < 3 || cmd[1] != ':')
		return -EINVAL;
	switch (cmd[0]) {
	case '-':
		return ustack ? -EINVAL : rtr_dynprobe_del(owner, cmd + 2);
	case 'p':
	case 'r':
		p = rtr_kprobe_parse(cmd);
		break;
	case 'u':
		p = rtr_uprobe_parse(cmd);
		break;
	case 's':
		p = rtr_usdt_parse(cmd);
		break;
	default:
		return -EINVAL;
	}
	if (IS_ERR(p))
		return PTR_ERR(p);
	p->owner = owner;
	p->ustack = ustack;
	ret = rtr_dynprobe_add(p);
	if (ret)
		p->ops->free(p);
	return ret;
}

/* --- the file ----------------------------------------------------------- */

static int rtr_probe_events_show(struct seq_file *m, void *unused)
{
	struct rtr_dynprobe *p;

	mutex_lock(&rtr_dynprobes_lock);
	list_for_each_entry(p, &rtr_dynprobes, node) {
		seq_printf(m, "%u %s ", p->event.id, p->name);
		p->ops->show(m, p);
		seq_puts(m, p->ustack == RTR_USTACK_ENTRY ? " ustack entry\n" :
			 p->ustack ? " ustack\n" : "\n");
	}
	mutex_unlock(&rtr_dynprobes_lock);
	return 0;
}

static int rtr_probe_events_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_probe_events_show);
}

static ssize_t rtr_probe_events_write(struct file *file,
				      const char __user *ubuf, size_t count,
				      loff_t *ppos)
{
	char *buf, *cmd, *opts;
	u8 ustack;
	int ret;

	if (!count || count >= RTR_DYNPROBE_CMD_MAX)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	/*
	 * One command, its options, an optional trailing newline.  Spaces
	 * only between the command and its options, and between the words
	 * of an "s:" command (its operands), whose options start at the
	 * word "ustack".
	 */
	cmd = strim(buf);
	opts = cmd[0] == 's' ? strstr(cmd, " ustack") : strchr(cmd, ' ');
	if (opts && cmd[0] == 's' && opts[7] && opts[7] != ' ')
		opts = NULL;
	if (opts)
		*opts++ = '\0';
	ret = strpbrk(cmd, cmd[0] == 's' ? "\t\n" : " \t\n") ? -EINVAL :
	      rtr_dynprobe_opts(opts, cmd[0], &ustack) ?:
	      rtr_dynprobe_cmd(cmd, ustack, file);
	kfree(buf);
	return ret ?: count;
}

/*
 * The last close of the file: its probes go (see the top of the file),
 * kind by kind, each kind's detached together.  At most
 * RTR_DYNPROBES_MAX probes exist, of every opener: @ps holds them all.
 */
static int rtr_probe_events_release(struct inode *inode, struct file *file)
{
	struct rtr_dynprobe *ps[RTR_DYNPROBES_MAX], *p;
	const struct rtr_dynprobe_ops *ops;
	unsigned int n;

	mutex_lock(&rtr_dynprobes_lock);
	do {
		n = 0;
		ops = NULL;
		list_for_each_entry(p, &rtr_dynprobes, node) {
			if (p->owner != file || (ops && p->ops != ops))
				continue;
			ops = p->ops;
			ps[n++] = p;
		}
		rtr_dynprobes_remove(ps, n);
	} while (n);
	mutex_unlock(&rtr_dynprobes_lock);
	return single_release(inode, file);
}

static const struct file_operations rtr_probe_events_fops = {
	.owner = THIS_MODULE,
	.open = rtr_probe_events_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = rtr_probe_events_release,
	.write = rtr_probe_events_write,
};

int rtr_dynprobes_init(void)
{
	return rtr_file_create(rtr_dir, "probe_events", 0600, NULL,
			       &rtr_probe_events_fops);
}
