// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: dynamic probes -- kprobes and kretprobes that ringtrace.ko
 * registers at run time, each feeding an event of its own.
 *
 *   /sys/kernel/debug/ringtrace/probe_events   (and /dev/ringtrace/)
 *     write "p:SYMBOL[+OFF]"  a kprobe:    event kprobe_SYMBOL[_0xOFF],
 *                             fields uint64_t arg0 .. arg5
 *           "r:SYMBOL"        a kretprobe: event kretprobe_SYMBOL,
 *                             field uint64_t ret
 *           "-:NAME"          remove the probe of that event
 *     read  "<id> <name> <spec>" per probe, of every opener
 *
 * One command per write.  A write takes effect entirely or fails with
 * nothing left behind: no probe, no event id, no declaration in the
 * metadata.  Errors: -EINVAL a malformed command, or a function the
 * kernel refuses to probe (kprobe blacklist, noinstr, ...); -ENOENT an
 * unknown symbol (not in kallsyms: misspelt, or inlined everywhere);
 * -EILSEQ an offset inside an instruction; -EEXIST a probe of that name
 * exists; -ENOSPC RTR_DYNPROBES_MAX probes exist; -EOPNOTSUPP a kernel
 * without CONFIG_KPROBES (or KRETPROBES); -EPERM "-:NAME" of a probe
 * another open file made.
 *
 * Lifetime.  A probe belongs to the open file it was written through and
 * goes when that file is released: the last close, an exit, or a SIGKILL
 * of the process that made it.  A recording's probes therefore never
 * outlive the recording, whatever ends it, and a probe never outlives the
 * module (every open pins it).  A shell keeps its probes with an fd of
 * its own: exec 3>probe_events; echo p:vfs_read >&3.
 *
 * Arming.  The kprobe is registered before its event: registration is
 * what tells whether the symbol can be probed, and a refused symbol must
 * not use up an event id (ids are never reused, ctf.c).  The handler
 * writes nothing until ->armed is set, after the event has its id [D1].
 * Removal is the reverse: unregister_k(ret)probe() returns once no
 * handler runs any more, then the event is unregistered and freed.
 *
 * Handlers run with preemption off (int3 or the ftrace trampoline), never
 * sleep and allocate nothing: the inline reserve/commit of
 * include/linux/ringtrace.h, behind the pid filter like every probe.
 * A hit inside a handler (a probe on a function ringtrace itself calls)
 * is counted as missed by the kprobes core, not recursed into.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
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
#include "internal.h"
#include "probes.h"

/* Probes at once, over every opener: each takes an event id for good. */
#define RTR_DYNPROBES_MAX	64
#define RTR_DYNPROBE_ARGS	6
/* "kretprobe_" + a symbol + "_0x" + 16 hex digits. */
#define RTR_DYNPROBE_NAME_MAX	(KSYM_NAME_LEN + 32)
#define RTR_DYNPROBE_CMD_MAX	(KSYM_NAME_LEN + 32)

struct rtr_kprobe_payload {
	u64 arg[RTR_DYNPROBE_ARGS];
} __packed;
static_assert(sizeof(struct rtr_kprobe_payload) == 48);
#define RTR_KPROBE_FIELDS						\
	"uint64_t arg0; uint64_t arg1; uint64_t arg2; uint64_t arg3; "	\
	"uint64_t arg4; uint64_t arg5;"

struct rtr_kretprobe_payload {
	u64 ret;
} __packed;
static_assert(sizeof(struct rtr_kretprobe_payload) == 8);
#define RTR_KRETPROBE_FIELDS "uint64_t ret;"

enum rtr_dynprobe_kind { RTR_DYN_KPROBE, RTR_DYN_KRETPROBE };

struct rtr_dynprobe {
	/* Read by the handler on every hit. */
	struct ringtrace_event event;	/* id valid once armed */
	bool armed;			/* [D1] */
	union {
		struct kprobe kp;
		struct kretprobe rp;
	};

	/* Under rtr_dynprobes_lock. */
	enum rtr_dynprobe_kind kind;
	const struct file *owner;	/* the open file that made it */
	struct list_head node;
	char name[RTR_DYNPROBE_NAME_MAX];
	char symbol[KSYM_NAME_LEN];
	unsigned int offset;
};

static DEFINE_MUTEX(rtr_dynprobes_lock);
static LIST_HEAD(rtr_dynprobes);
static unsigned int rtr_nr_dynprobes;

/* --- handlers ----------------------------------------------------------- */

/* The event's id, or false while the probe is not armed yet. */
static __always_inline bool rtr_dynprobe_id(const struct rtr_dynprobe *p,
					    unsigned int *id)
{
	/* [D1] Pairs with smp_store_release() in rtr_dynprobe_add(). */
	if (!smp_load_acquire(&p->armed))
		return false;
	*id = p->event.id;
	return true;
}

static int rtr_kprobe_handler(struct kprobe *kp, struct pt_regs *regs)
{
	struct rtr_dynprobe *p = container_of(kp, struct rtr_dynprobe, kp);
	struct rtr_kprobe_payload *e;
	struct ringtrace_reservation r;
	unsigned int i, id;

	if (!rtr_dynprobe_id(p, &id) || !rtr_task_traced(current))
		return 0;
	e = ringtrace_reserve(&r, id, sizeof(*e));
	if (!e)
		return 0;
	for (i = 0; i < RTR_DYNPROBE_ARGS; i++)
		e->arg[i] = regs_get_kernel_argument(regs, i);
	ringtrace_commit(&r);
	return 0;
}

static int rtr_kretprobe_handler(struct kretprobe_instance *ri,
				 struct pt_regs *regs)
{
	struct kretprobe *rp = rtr_get_kretprobe(ri);
	struct rtr_kretprobe_payload *e;
	struct ringtrace_reservation r;
	struct rtr_dynprobe *p;
	unsigned int id;

	if (!rp)
		return 0;
	p = container_of(rp, struct rtr_dynprobe, rp);
	if (!rtr_dynprobe_id(p, &id) || !rtr_task_traced(current))
		return 0;
	e = ringtrace_reserve(&r, id, sizeof(*e));
	if (!e)
		return 0;
	e->ret = regs_return_value(regs);
	ringtrace_commit(&r);
	return 0;
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

static int rtr_dynprobe_register(struct rtr_dynprobe *p)
{
	if (p->kind == RTR_DYN_KPROBE) {
		p->kp.symbol_name = p->symbol;
		p->kp.offset = p->offset;
		p->kp.pre_handler = rtr_kprobe_handler;
		return register_kprobe(&p->kp);
	}
	p->rp.kp.symbol_name = p->symbol;
	p->rp.handler = rtr_kretprobe_handler;
	return register_kretprobe(&p->rp);
}

/* Returns once no handler of @p runs anywhere. */
static void rtr_dynprobe_unregister(struct rtr_dynprobe *p)
{
	if (p->kind == RTR_DYN_KPROBE)
		unregister_kprobe(&p->kp);
	else
		unregister_kretprobe(&p->rp);
}

static void rtr_dynprobe_remove(struct rtr_dynprobe *p)
{
	lockdep_assert_held(&rtr_dynprobes_lock);
	rtr_dynprobe_unregister(p);
	ringtrace_event_unregister(&p->event);
	list_del(&p->node);
	rtr_nr_dynprobes--;
	kfree(p);
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
	ret = rtr_dynprobe_register(p);
	if (ret)
		goto unlock;
	ret = ringtrace_event_register(&p->event);
	if (ret)
		goto unregister;
	/* [D1] The id before the handler may use it; pairs with rtr_dynprobe_id(). */
	smp_store_release(&p->armed, true);
	list_add_tail(&p->node, &rtr_dynprobes);
	rtr_nr_dynprobes++;
	mutex_unlock(&rtr_dynprobes_lock);
	return 0;

unregister:
	rtr_dynprobe_unregister(p);
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
		rtr_dynprobe_remove(p);
	mutex_unlock(&rtr_dynprobes_lock);
	return ret;
}

/* --- the command parser --------------------------------------------------- */

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
static struct rtr_dynprobe *rtr_dynprobe_parse(char *cmd,
					       const struct file *owner)
{
	bool ret_probe = cmd[0] == 'r';
	char *sym = cmd + 2, *plus;
	struct rtr_dynprobe *p;
	unsigned int off = 0;

	plus = strchr(sym, '+');
	if (plus) {
		*plus = '\0';
		if (ret_probe || kstrtouint(plus + 1, 0, &off))
			return ERR_PTR(-EINVAL);
	}
	if (!rtr_valid_symbol(sym))
		return ERR_PTR(-EINVAL);
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->kind = ret_probe ? RTR_DYN_KRETPROBE : RTR_DYN_KPROBE;
	p->owner = owner;
	p->offset = off;
	strscpy(p->symbol, sym, sizeof(p->symbol));
	if (off)
		snprintf(p->name, sizeof(p->name), "kprobe_%s_0x%x", sym, off);
	else
		snprintf(p->name, sizeof(p->name), "%s_%s",
			 ret_probe ? "kretprobe" : "kprobe", sym);
	/* An event name is letters, digits and '_' (ctf.c). */
	strreplace(p->name, '.', '_');
	p->event.name = p->name;
	p->event.fields = ret_probe ? RTR_KRETPROBE_FIELDS : RTR_KPROBE_FIELDS;
	return p;
}

static int rtr_dynprobe_cmd(char *cmd, const struct file *owner)
{
	struct rtr_dynprobe *p;
	int ret;

	if (strlen(cmd) < 3 || cmd[1] != ':')
		return -EINVAL;
	switch (cmd[0]) {
	case '-':
		return rtr_dynprobe_del(owner, cmd + 2);
	case 'p':
	case 'r':
		break;
	default:
		return -EINVAL;
	}
	p = rtr_dynprobe_parse(cmd, owner);
	if (IS_ERR(p))
		return PTR_ERR(p);
	ret = rtr_dynprobe_add(p);
	if (ret)
		kfree(p);
	return ret;
}

/* --- the file ----------------------------------------------------------- */

static int rtr_probe_events_show(struct seq_file *m, void *unused)
{
	struct rtr_dynprobe *p;

	mutex_lock(&rtr_dynprobes_lock);
	list_for_each_entry(p, &rtr_dynprobes, node) {
		seq_printf(m, "%u %s %c:%s", p->event.id, p->name,
			   p->kind == RTR_DYN_KPROBE ? 'p' : 'r', p->symbol);
		if (p->offset)
			seq_printf(m, "+0x%x", p->offset);
		seq_putc(m, '\n');
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
	char *buf, *cmd;
	int ret;

	if (!count || count >= RTR_DYNPROBE_CMD_MAX)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	/* One command, with an optional trailing newline. */
	cmd = strim(buf);
	ret = strpbrk(cmd, " \t\n") ? -EINVAL : rtr_dynprobe_cmd(cmd, file);
	kfree(buf);
	return ret ?: count;
}

/* The last close of the file: its probes go (see the top of the file). */
static int rtr_probe_events_release(struct inode *inode, struct file *file)
{
	struct rtr_dynprobe *p, *tmp;

	mutex_lock(&rtr_dynprobes_lock);
	list_for_each_entry_safe(p, tmp, &rtr_dynprobes, node)
		if (p->owner == file)
			rtr_dynprobe_remove(p);
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
