// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: USDT probes (<sys/sdt.h>), a kind of dynamic probe
 * (dynprobes.c owns the file, the list, arming and lifetime): a uprobe on
 * each of the probe's nops (uprobes.c's sites), each raising the probe's
 * semaphore while it exists, and whose handler fetches the probe's
 * arguments as that site's note describes them.
 *
 *   "s:PATH:OFFSET@LABEL[ ref=REFOFF][ a0=ARG ...][ at=OFFSET a0=ARG ...]..."
 *
 * PATH, OFFSET and LABEL as a uprobe's (uprobes.c), the label required:
 * the event is usdt_LABEL (the CLI makes it PROVIDER_NAME).  REFOFF is
 * the file offset of the semaphore, a 16-bit counter the uprobes core
 * raises in every process that maps the file while the probe exists, and
 * lowers when it goes -- however the file that made it is closed, so a
 * recording killed by SIGKILL lowers it too.  The arguments come in
 * order, a0 first, 12 at most; each is SIZE[s]@OPERAND, SIZE 1, 2, 4 or 8
 * bytes, 's' if signed, OPERAND one of
 *
 *   REG                      a register: ax bx cx dx si di bp sp r8 .. r15 ip
 *   $IMM                     a constant
 *   DISP(BASE)               the memory at BASE + DISP
 *   DISP(BASE,INDEX,SCALE)   at BASE + INDEX * SCALE + DISP, SCALE 1, 2, 4, 8
 *   DISP(,INDEX,SCALE)       at INDEX * SCALE + DISP
 *
 * DISP and IMM decimal or 0x hex, maybe negative.  The low SIZE bytes of
 * the register, constant or memory are the value, sign- or zero-extended
 * to 64 bits.  At the hit ip is the probe's address, so DISP(ip) is
 * memory at a fixed distance from the probe: where the CLI puts a
 * symbol's operand (a global's `foo(%rip)`), wherever the file is mapped.
 *
 * Sites.  A probe written once in the source may be compiled at several
 * places (inlined, unrolled, one macro in several callers): a note per
 * site, each with its own operands.  "at=OFFSET" starts the next site of
 * the same probe, in the same file, with the same semaphore: its operands
 * follow, exactly as many as the first site's (a count that differs is
 * -EINVAL), each site's own registers, sizes and signs.  Every site fires
 * the one event.  RTR_USDT_SITES_MAX sites at most, at different offsets.
 * The uprobes core counts the semaphore per uprobe: while the probe
 * exists it reads N in a process where its N sites are placed.  All sites
 * are attached, or none: if one fails, those placed before are taken out
 * again (and their share of the semaphore) before the write fails.
 *
 * The event: int64_t arg0 .. argN-1, exactly the probe's N arguments,
 * then uint16_t faults, bit i set when argument i's memory could not be
 * read (its value then 0): the handler reads with copy_from_user_nofault(),
 * which never sleeps nor faults a page in.  Sites whose operands have
 * different sizes for one argument share the field: 64 bits, the widest
 * an operand has, each site's value extended from its own size and sign.
 * Its filter and trigger name arg0 .. argN-1, faults and comm: per probe,
 * not per kind.
 *
 * Errors (beyond a uprobe's): -EINVAL a malformed or missing label, ref=,
 * argument, at=, an argument out of order or a 13th, a site with another
 * argument count than the first's, two sites at one offset, a semaphore
 * offset odd or beyond the file's end, or a semaphore another tracer's
 * uprobe at the same place gives differently (the core's pr_warn says
 * so); -E2BIG more than RTR_USDT_SITES_MAX sites; -EOPNOTSUPP on an
 * architecture other than x86-64, whose pt_regs this reads.
 *
 * The handler runs in the probed task, preemptible, on its way back to
 * user space from the breakpoint: preemption goes off around everything
 * it does, nothing sleeps or allocates.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uprobes.h>

#include "dynprobes.h"

/* One bit per argument in the event's faults. */
static_assert(RTR_USDT_ARGS_MAX <= 16);
static_assert(sizeof("usdt_") + RTR_UPROBE_LABEL_MAX <= RTR_DYNPROBE_NAME_MAX);

/* What the predicates name: the arguments, then faults and comm. */
static const char *const rtr_usdt_arg_names[RTR_USDT_ARGS_MAX] = {
	"arg0", "arg1", "arg2", "arg3", "arg4", "arg5",
	"arg6", "arg7", "arg8", "arg9", "arg10", "arg11",
};

#ifdef CONFIG_X86_64
/*
 * The registers an operand may name: the name is the struct pt_regs
 * field's, so one macro makes both columns and the compiler checks them.
 */
#define RTR_USDT_REG(r)	{ #r, offsetof(struct pt_regs, r) }
static const struct {
	const char *name;
	unsigned int offset;
} rtr_usdt_regs[] = {
	RTR_USDT_REG(ax), RTR_USDT_REG(bx), RTR_USDT_REG(cx), RTR_USDT_REG(dx),
	RTR_USDT_REG(si), RTR_USDT_REG(di), RTR_USDT_REG(bp), RTR_USDT_REG(sp),
	RTR_USDT_REG(r8), RTR_USDT_REG(r9), RTR_USDT_REG(r10), RTR_USDT_REG(r11),
	RTR_USDT_REG(r12), RTR_USDT_REG(r13), RTR_USDT_REG(r14), RTR_USDT_REG(r15),
	RTR_USDT_REG(ip),
};
#undef RTR_USDT_REG
#define RTR_USDT_NO_REG	-1
#endif

enum rtr_usdt_kind { RTR_USDT_ARG_REG, RTR_USDT_ARG_IMM, RTR_USDT_ARG_MEM };

/* One operand; registers as indices into rtr_usdt_regs[], or RTR_USDT_NO_REG. */
struct rtr_usdt_arg {
	s64 disp;			/* MEM's displacement, IMM's value */
	u8 kind;			/* enum rtr_usdt_kind */
	u8 size;			/* 1, 2, 4, 8 */
	bool is_signed;
	s8 base;			/* REG's register, MEM's base */
	s8 index;			/* MEM's */
	u8 scale;			/* with index */
};

struct rtr_usdt;

/* One place the probe's nop was compiled to, and its operands there. */
struct rtr_usdt_site {
	struct rtr_uprobe_site site;	/* its consumer: the handler's key */
	struct rtr_usdt *probe;
	struct rtr_usdt_arg args[RTR_USDT_ARGS_MAX];
};

struct rtr_usdt {
	struct rtr_dynprobe dp;		/* first: read on every hit */

	/* Set by the parser, then constant. */
	unsigned int nargs;		/* of every site */
	unsigned int nsites;
	char label[RTR_UPROBE_LABEL_MAX + 1];
	char *fields;			/* the event's TSDL */
	struct rtr_filter_field ff[RTR_USDT_ARGS_MAX + 2];
	/* sites[0]'s file is every site's: freed with it alone. */
	struct rtr_usdt_site sites[];
};

#ifdef CONFIG_X86_64
static __always_inline unsigned long rtr_usdt_reg(const struct pt_regs *regs,
						  int reg)
{
	return *(const unsigned long *)((const void *)regs +
					rtr_usdt_regs[reg].offset);
}

/*
 * Argument @i's value; a memory operand that cannot be read is 0 and
 * sets bit @i of *@faults.  The low bytes of a u64 are its first ones:
 * x86-64 is little-endian, so a read of @size bytes into 0 is the value.
 */
static u64 rtr_usdt_fetch(const struct rtr_usdt_arg *a,
			  const struct pt_regs *regs, unsigned int i,
			  u16 *faults)
{
	unsigned long addr;
	u64 v = 0;

	switch (a->kind) {
	case RTR_USDT_ARG_REG:
		v = rtr_usdt_reg(regs, a->base);
		break;
	case RTR_USDT_ARG_IMM:
		v = a->disp;
		break;
	default:
		addr = a->disp;
		if (a->base != RTR_USDT_NO_REG)
			addr += rtr_usdt_reg(regs, a->base);
		if (a->index != RTR_USDT_NO_REG)
			addr += rtr_usdt_reg(regs, a->index) * a->scale;
		if (copy_from_user_nofault(&v, (const void __user *)addr,
					   a->size)) {
			*faults |= BIT(i);
			return 0;
		}
	}
	if (a->size == 8)
		return v;
	return a->is_signed ? sign_extend64(v, a->size * 8 - 1) :
			      v & GENMASK_ULL(a->size * 8 - 1, 0);
}

static int rtr_usdt_handler(struct uprobe_consumer *uc, struct pt_regs *regs)
{
	const struct rtr_usdt_site *site = container_of(uc, struct rtr_usdt_site,
							site.consumer);
	struct rtr_usdt *s = site->probe;
	union rtr_fval v[RTR_USDT_ARGS_MAX + 2];
	const struct rtr_filter *f, *t;
	u64 arg[RTR_USDT_ARGS_MAX];
	struct rtr_rsv w;
	unsigned int i, id, n = s->nargs;
	bool hit = false;
	u16 faults = 0;
	void *e;

	preempt_disable_notrace();
	if (!rtr_dynprobe_id(&s->dp, &id) || !rtr_task_traced(current))
		goto out;
	for (i = 0; i < n; i++)
		arg[i] = rtr_usdt_fetch(&site->args[i], regs, i, &faults);
	/*
	 * rtr_dynprobe_filtered() with the values in an array: this probe's
	 * fields are its own (s->ff), known at parse time, not compile time.
	 */
	f = rcu_dereference_sched(s->dp.filter);
	t = rcu_dereference_sched(s->dp.trigger);
	if (unlikely(f || t)) {
		for (i = 0; i < n; i++)
			v[i].i = arg[i];
		v[n].i = faults;
		v[n + 1].s = current->comm;
		if (rtr_pred_judge(f, t, v, &hit))
			goto out;
	}
	e = rtr_dynprobe_reserve(&w, &s->dp, id, n * sizeof(u64) + sizeof(faults));
	if (!e)
		goto out;
	memcpy(e, arg, n * sizeof(u64));
	memcpy(e + n * sizeof(u64), &faults, sizeof(faults));
	rtr_dynprobe_commit_rsv(&w, id, hit);
out:
	preempt_enable_notrace();
	return 0;
}
#endif

/* Sites [0, @n) of @s out: unlinked, one wait, put. */
static void rtr_usdt_sites_detach(struct rtr_usdt *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rtr_uprobe_site_unlink(&s->sites[i].site);
	rtr_uprobe_unregister_sync();
	for (i = 0; i < n; i++)
		rtr_uprobe_site_put(&s->sites[i].site);
}

/*
 * Every site, or none: site k refused takes sites 0 .. k-1 out again,
 * their semaphore counts with them.  A handler of those may have run
 * meanwhile; the probe is not armed yet, it wrote nothing [D1].
 */
static int rtr_usdt_attach(struct rtr_dynprobe *p)
{
	struct rtr_usdt *s = container_of(p, struct rtr_usdt, dp);
	unsigned int i;
	int ret = 0;

	for (i = 0; i < s->nsites; i++) {
#ifdef CONFIG_X86_64
		s->sites[i].site.consumer.handler = rtr_usdt_handler;
#endif
		ret = rtr_uprobe_site_attach(&s->sites[i].site);
		if (ret)
			break;
	}
	if (ret && i)
		rtr_usdt_sites_detach(s, i);
	return ret;
}

/* Every site of every probe unlinked, then one wait for all. */
static void rtr_usdt_detach(struct rtr_dynprobe **ps, unsigned int n)
{
	struct rtr_usdt *s;
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		s = container_of(ps[i], struct rtr_usdt, dp);
		for (j = 0; j < s->nsites; j++)
			rtr_uprobe_site_unlink(&s->sites[j].site);
	}
	rtr_uprobe_unregister_sync();
	for (i = 0; i < n; i++) {
		s = container_of(ps[i], struct rtr_usdt, dp);
		for (j = 0; j < s->nsites; j++)
			rtr_uprobe_site_put(&s->sites[j].site);
	}
}

#ifdef CONFIG_X86_64
static void rtr_usdt_show_args(struct seq_file *m, const struct rtr_usdt *s,
			       const struct rtr_usdt_site *site)
{
	const struct rtr_usdt_arg *a;
	unsigned int i;

	for (i = 0; i < s->nargs; i++) {
		a = &site->args[i];
		seq_printf(m, " a%u=%u%s@", i, a->size, a->is_signed ? "s" : "");
		if (a->kind == RTR_USDT_ARG_REG)
			seq_puts(m, rtr_usdt_regs[a->base].name);
		else if (a->kind == RTR_USDT_ARG_IMM)
			seq_printf(m, "$%lld", a->disp);
		else if (a->index == RTR_USDT_NO_REG)
			seq_printf(m, "%lld(%s)", a->disp,
				   rtr_usdt_regs[a->base].name);
		else
			seq_printf(m, "%lld(%s,%s,%u)", a->disp,
				   a->base == RTR_USDT_NO_REG ? "" :
				   rtr_usdt_regs[a->base].name,
				   rtr_usdt_regs[a->index].name, a->scale);
	}
}
#endif

static void rtr_usdt_show(struct seq_file *m, const struct rtr_dynprobe *p)
{
	const struct rtr_usdt *s = container_of(p, struct rtr_usdt, dp);
	const struct rtr_uprobe_site *site0 = &s->sites[0].site;
	unsigned int i;

	seq_printf(m, "s:%s:0x%llx@%s", site0->file,
		   (unsigned long long)site0->offset, s->label);
	if (site0->ref_ctr_offset)
		seq_printf(m, " ref=0x%llx",
			   (unsigned long long)site0->ref_ctr_offset);
	for (i = 0; i < s->nsites; i++) {
		if (i)
			seq_printf(m, " at=0x%llx",
				   (unsigned long long)s->sites[i].site.offset);
#ifdef CONFIG_X86_64
		rtr_usdt_show_args(m, s, &s->sites[i]);
#endif
	}
}

static void rtr_usdt_free(struct rtr_dynprobe *p)
{
	struct rtr_usdt *s = container_of(p, struct rtr_usdt, dp);

	rtr_uprobe_site_free(&s->sites[0].site);
	kfree(s->fields);
	kfree(s);
}

/* Fields per probe (dp.event.fields, dp.ff), set by the parser. */
static const struct rtr_dynprobe_ops rtr_usdt_ops = {
	.attach = rtr_usdt_attach,
	.detach = rtr_usdt_detach,
	.show = rtr_usdt_show,
	.free = rtr_usdt_free,
};

#ifdef CONFIG_X86_64
/* A register's index in rtr_usdt_regs[] (@len bytes at @s), or -EINVAL. */
static int rtr_usdt_reg_index(const char *s, size_t len)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rtr_usdt_regs); i++)
		if (strlen(rtr_usdt_regs[i].name) == len &&
		    !strncmp(rtr_usdt_regs[i].name, s, len))
			return i;
	return -EINVAL;
}

/* "DISP(BASE)", "DISP(BASE,INDEX,SCALE)" or "DISP(,INDEX,SCALE)" at @op. */
static int rtr_usdt_parse_mem(char *op, struct rtr_usdt_arg *a)
{
	char *open = strchr(op, '('), *end = op + strlen(op) - 1;
	char *comma, *index, *scale;
	int reg;

	if (!open || open == op || *end != ')')
		return -EINVAL;
	*open = '\0';
	*end = '\0';
	if (kstrtoll(op, 0, &a->disp))
		return -EINVAL;
	a->kind = RTR_USDT_ARG_MEM;
	a->base = RTR_USDT_NO_REG;
	a->index = RTR_USDT_NO_REG;
	comma = strchr(open + 1, ',');
	if (!comma) {
		reg = rtr_usdt_reg_index(open + 1, strlen(open + 1));
		if (reg < 0)
			return reg;
		a->base = reg;
		return 0;
	}
	if (comma > open + 1) {
		reg = rtr_usdt_reg_index(open + 1, comma - open - 1);
		if (reg < 0)
			return reg;
		a->base = reg;
	}
	index = comma + 1;
	scale = strchr(index, ',');
	if (!scale || kstrtou8(scale + 1, 10, &a->scale) ||
	    !is_power_of_2(a->scale) || a->scale > 8)
		return -EINVAL;
	reg = rtr_usdt_reg_index(index, scale - index);
	if (reg < 0)
		return reg;
	a->index = reg;
	return 0;
}

/* "SIZE[s]@OPERAND" at @text into @a. */
static int rtr_usdt_parse_arg(char *text, struct rtr_usdt_arg *a)
{
	char *at = strchr(text, '@'), *op;
	int reg;

	if (!at)
		return -EINVAL;
	*at = '\0';
	op = at + 1;
	a->is_signed = at > text && at[-1] == 's';
	if (a->is_signed)
		at[-1] = '\0';
	if (kstrtou8(text, 10, &a->size) || !is_power_of_2(a->size) ||
	    a->size > 8)
		return -EINVAL;
	if (op[0] == '$') {
		a->kind = RTR_USDT_ARG_IMM;
		return kstrtoll(op + 1, 0, &a->disp);
	}
	if (strchr(op, '('))
		return rtr_usdt_parse_mem(op, a);
	reg = rtr_usdt_reg_index(op, strlen(op));
	if (reg < 0)
		return reg;
	a->kind = RTR_USDT_ARG_REG;
	a->base = reg;
	return 0;
}

/* How many sites the words after "PATH:OFFSET@LABEL" give: 1 + the at=s. */
static unsigned int rtr_usdt_count_sites(const char *words)
{
	unsigned int n = 1;

	for (; words; words = strchr(words, ' '), words = words ? words + 1 : NULL)
		if (!strncmp(words, "at=", 3))
			n++;
	return n;
}

/*
 * "at=OFFSET" into site @k, the next: the file and the semaphore are the
 * first site's, the offset its own, not another site's.
 */
static int rtr_usdt_parse_at(struct rtr_usdt *s, unsigned int k,
			     const char *text)
{
	struct rtr_uprobe_site *site = &s->sites[k].site;
	unsigned long long off;
	unsigned int i;

	if (kstrtoull(text, 0, &off) || off > LLONG_MAX)
		return -EINVAL;
	for (i = 0; i < k; i++)
		if (s->sites[i].site.offset == off)
			return -EINVAL;
	site->file = s->sites[0].site.file;
	site->offset = off;
	site->ref_ctr_offset = s->sites[0].site.ref_ctr_offset;
	return 0;
}

/*
 * The words after "PATH:OFFSET@LABEL": "ref=REFOFF" first if there,
 * then "aI=ARG" with I = 0, 1, ... in order; each "at=OFFSET" then
 * starts another site, its "aI=ARG" as many as the first site's.
 */
static int rtr_usdt_parse_words(struct rtr_usdt *s, char *words)
{
	unsigned long long ref;
	unsigned int k = 0, n = 0;
	char *word, name[8];
	int ret;

	while ((word = strsep(&words, " "))) {
		if (!k && !n && !s->sites[0].site.ref_ctr_offset &&
		    !strncmp(word, "ref=", 4)) {
			if (kstrtoull(word + 4, 0, &ref) || !ref || ref > LLONG_MAX)
				return -EINVAL;
			s->sites[0].site.ref_ctr_offset = ref;
			continue;
		}
		if (!strncmp(word, "at=", 3)) {
			if (k && n != s->nargs)
				return -EINVAL;
			s->nargs = n;
			/* Counted before: the words are those counted. */
			if (++k == s->nsites)
				return -EINVAL;
			ret = rtr_usdt_parse_at(s, k, word + 3);
			if (ret)
				return ret;
			n = 0;
			continue;
		}
		if (n == RTR_USDT_ARGS_MAX)
			return -EINVAL;
		snprintf(name, sizeof(name), "a%u=", n);
		if (strncmp(word, name, strlen(name)))
			return -EINVAL;
		ret = rtr_usdt_parse_arg(word + strlen(name), &s->sites[k].args[n]);
		if (ret)
			return ret;
		n++;
	}
	if (k && n != s->nargs)
		return -EINVAL;
	s->nargs = n;
	return 0;
}

/* "int64_t arg0; ... uint16_t faults;" and the predicates' table. */
static int rtr_usdt_fields(struct rtr_usdt *s)
{
	size_t size = s->nargs * sizeof("int64_t arg10; ") +
		      sizeof("uint16_t faults;");
	unsigned int i;
	char *p;

	s->fields = kmalloc(size, GFP_KERNEL);
	if (!s->fields)
		return -ENOMEM;
	p = s->fields;
	for (i = 0; i < s->nargs; i++) {
		p += scnprintf(p, size - (p - s->fields), "int64_t %s; ",
			       rtr_usdt_arg_names[i]);
		s->ff[i] = (struct rtr_filter_field){
			.name = rtr_usdt_arg_names[i], .type = RTR_FF_INT,
		};
	}
	scnprintf(p, size - (p - s->fields), "uint16_t faults;");
	s->ff[i++] = (struct rtr_filter_field){ .name = "faults", .type = RTR_FF_INT };
	s->ff[i++] = (struct rtr_filter_field){ .name = "comm", .type = RTR_FF_STR };
	s->dp.event.fields = s->fields;
	s->dp.ff = s->ff;
	s->dp.nff = i;
	return 0;
}

struct rtr_dynprobe *rtr_usdt_parse(char *cmd)
{
	char *words = cmd + 2;
	char *site = strsep(&words, " ");
	unsigned int i, nsites = rtr_usdt_count_sites(words);
	struct rtr_usdt *s;
	int ret;

	if (nsites > RTR_USDT_SITES_MAX)
		return ERR_PTR(-E2BIG);
	s = kzalloc(struct_size(s, sites, nsites), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->nsites = nsites;
	for (i = 0; i < nsites; i++)
		s->sites[i].probe = s;
	ret = rtr_uprobe_site_parse(&s->sites[0].site, site, s->label);
	if (ret)
		goto free;
	ret = -EINVAL;
	/* The event's name; '.' is no name's (ctf.c). */
	if (!s->label[0] || strchr(s->label, '.'))
		goto free_site;
	if (words) {
		ret = rtr_usdt_parse_words(s, words);
		if (ret)
			goto free_site;
	}
	ret = rtr_usdt_fields(s);
	if (ret)
		goto free_site;
	s->dp.ops = &rtr_usdt_ops;
	snprintf(s->dp.name, sizeof(s->dp.name), "usdt_%s", s->label);
	s->dp.event.name = s->dp.name;
	return &s->dp;

free_site:
	rtr_uprobe_site_free(&s->sites[0].site);
free:
	kfree(s);
	return ERR_PTR(ret);
}
#else
struct rtr_dynprobe *rtr_usdt_parse(char *cmd)
{
	return ERR_PTR(-EOPNOTSUPP);
}
#endif
