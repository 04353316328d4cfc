// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: field predicates on the tracepoint events of probes.c,
 * evaluated in the probe before anything is reserved.  An event the
 * predicate rejects costs no buffer space, no `written` count and no
 * consumer work.
 *
 *   events/<name>/filter    (and events/ringtrace_marker/filter, on the
 *                           marker's text: control.c runs it before the
 *                           write reserves)
 *                           "none", or the predicate in force; write an
 *                           expression to replace it, "0", "none" or
 *                           blanks to clear it.  A refused write returns -EINVAL,
 *                           keeps the predicate in force, and the next
 *                           read shows why on a "# error: " line.
 *
 * The grammar (Documentation/ringtrace/abi.rst has the user's view):
 *
 *   expr  := and { "||" and }
 *   and   := unary { "&&" unary }
 *   unary := "!" unary | "(" expr ")" | test
 *   CMP   := "==" | "!=" | "<" | "<=" | ">" | ">="
 *   test  := INTFIELD [ "&" NUMBER ] [ CMP NUMBER ]   (a mask alone: != 0)
 *          | STRFIELD ( "==" | "!=" ) GLOB
 *   FIELD := NAME | NAME "[" DIGITS "]"      (an array's element: args[2])
 *
 * An integer field compares as a signed 64-bit number; a system call id
 * (syscall_entry's and syscall_exit's "id") also takes this kernel's name
 * for the call.  A GLOB is a quoted ("..." or '...') or bare word with
 * the kernel's glob_match() wildcards (* ? [...]), matched against the
 * first RTR_FILTER_GLOB_SPAN bytes of the string.
 *
 * The parser, in process context under no lock, compiles to a postfix
 * program of at most RTR_FILTER_MAX_INSNS instructions: comparisons push
 * a truth value, AND/OR/NOT pop theirs and push the result.  No jumps (so
 * no short-circuit: every leaf is evaluated, which the length bound makes
 * cheap).  rtr_filter_verify() checks the program before it is published,
 * independently of the parser: known opcodes, field indices of the
 * event's field table and of the right type, string operands inside the
 * program's pool, no stack underflow, exactly one value at the end.  The
 * verified program then runs in the probe with its stack in one u64 (a
 * bit per truth value, at most 64 deep: at most 64 instructions), in a
 * bounded loop, with no allocation and no lock: safe in any context, NMI
 * included.
 *
 * Replacement: under rtr_probes_lock, rcu_replace_pointer() publishes the
 * new program [F1]; the probes read it with rcu_dereference_sched() (they
 * run with preemption off, the -rt kernel included: tracepoints disable
 * preemption around their probes), so the old one is freed after
 * synchronize_rcu(), which waits for preempt-off sections.  At the end
 * of a predicate (unload, a dynamic probe's removal) its owner has
 * already waited for the readers another way: rtr_pred_free() [F2].
 *
 * The same file_operations, rtr_pred_fops, serve every predicate file --
 * filters and triggers, of tracepoint probes, dynamic probes and the
 * marker -- each through the struct rtr_pred_file it was made with.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/glob.h>
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "internal.h"
#include "probes.h"

/* Nested parentheses the parser follows (its recursion depth). */
#define RTR_FILTER_MAX_NEST	16
/* The longest glob; the pool holds the program's globs. */
#define RTR_FILTER_MAX_GLOB	63
#define RTR_FILTER_POOL		256
/*
 * The bytes of a string a glob looks at, at most.  glob_match() goes
 * back to its last '*' on a mismatch: a glob costs up to its length
 * times the string's in character steps, with preemption off.  Strings
 * may be long (exec's filename, a marker's text: up to 4096 bytes);
 * their first RTR_FILTER_GLOB_SPAN bytes are matched, as if the string
 * ended there: at most 63 x 256 steps per comparison.
 */
#define RTR_FILTER_GLOB_SPAN	256

enum rtr_filter_op {
	RTR_FOP_EQ,		/* (field & mask) == imm */
	RTR_FOP_NE,
	RTR_FOP_LT,
	RTR_FOP_LE,
	RTR_FOP_GT,
	RTR_FOP_GE,
	RTR_FOP_STR_EQ,		/* glob_match(pool + str, field) */
	RTR_FOP_STR_NE,
	RTR_FOP_AND,
	RTR_FOP_OR,
	RTR_FOP_NOT,
	RTR_FOP_MAX
};

struct rtr_filter_insn {
	u8 op;
	u8 field;		/* comparisons: index in the field table */
	u16 str;		/* string ops: offset of the glob in the pool */
	s64 mask;		/* integer ops: -1 without "&" */
	s64 imm;
};

struct rtr_filter {
	unsigned int len;
	struct rtr_filter_insn insn[RTR_FILTER_MAX_INSNS];
	unsigned int pool_len;
	char pool[RTR_FILTER_POOL];
	char text[];		/* the expression as written, for reading back */
};

/* --- the interpreter (probe context) ------------------------------------ */

static __always_inline bool rtr_filter_cmp(const struct rtr_filter_insn *in,
					   s64 v)
{
	v &= in->mask;
	switch (in->op) {
	case RTR_FOP_EQ:
		return v == in->imm;
	case RTR_FOP_NE:
		return v != in->imm;
	case RTR_FOP_LT:
		return v < in->imm;
	case RTR_FOP_LE:
		return v <= in->imm;
	case RTR_FOP_GT:
		return v > in->imm;
	default:
		return v >= in->imm;
	}
}

/*
 * @glob against the first RTR_FILTER_GLOB_SPAN bytes of @s, which has
 * more, copied and cut there.  Out of line: only such a string pays for
 * the copy's stack.
 */
static noinline bool rtr_filter_glob_head(const char *glob, const char *s)
{
	char head[RTR_FILTER_GLOB_SPAN + 1];

	memcpy(head, s, RTR_FILTER_GLOB_SPAN);
	head[RTR_FILTER_GLOB_SPAN] = '\0';
	return glob_match(glob, head);
}

static __always_inline bool rtr_filter_glob(const char *glob, const char *s)
{
	if (likely(strnlen(s, RTR_FILTER_GLOB_SPAN + 1) <= RTR_FILTER_GLOB_SPAN))
		return glob_match(glob, s);
	return rtr_filter_glob_head(glob, s);
}

/*
 * @v: the event's values, indexed as its field table.  @f was verified:
 * the stack neither under- nor overflows and the operands are in range.
 */
bool rtr_filter_match(const struct rtr_filter *f, const union rtr_fval *v)
{
	const struct rtr_filter_insn *in;
	u64 st = 0;		/* the stack: bit 0 is its top */
	bool a, b;

	for (in = f->insn; in < f->insn + f->len; in++) {
		switch (in->op) {
		case RTR_FOP_STR_EQ:
		case RTR_FOP_STR_NE:
			a = rtr_filter_glob(f->pool + in->str, v[in->field].s);
			st = st << 1 | (a == (in->op == RTR_FOP_STR_EQ));
			break;
		case RTR_FOP_AND:
		case RTR_FOP_OR:
			a = st & 1;
			b = st & 2;
			st >>= 2;
			st = st << 1 | (in->op == RTR_FOP_AND ? a && b : a || b);
			break;
		case RTR_FOP_NOT:
			st ^= 1;
			break;
		default:
			st = st << 1 | rtr_filter_cmp(in, v[in->field].i);
			break;
		}
	}
	return st & 1;
}

/* --- the verifier ---------------------------------------------------------- */

static int rtr_filter_verify(const struct rtr_filter_field *ff,
			     unsigned int nff, const struct rtr_filter *f)
{
	const struct rtr_filter_insn *in;
	unsigned int depth = 0;
	bool str;

	if (!f->len || f->len > RTR_FILTER_MAX_INSNS ||
	    f->pool_len > RTR_FILTER_POOL)
		return -EINVAL;
	for (in = f->insn; in < f->insn + f->len; in++) {
		switch (in->op) {
		case RTR_FOP_AND:
		case RTR_FOP_OR:
			if (depth < 2)
				return -EINVAL;
			depth--;
			continue;
		case RTR_FOP_NOT:
			if (depth < 1)
				return -EINVAL;
			continue;
		case RTR_FOP_EQ ... RTR_FOP_STR_NE:
			break;
		default:
			return -EINVAL;
		}
		if (in->field >= nff)
			return -EINVAL;
		str = in->op == RTR_FOP_STR_EQ || in->op == RTR_FOP_STR_NE;
		if (str != (ff[in->field].type == RTR_FF_STR))
			return -EINVAL;
		if (str && (in->str >= f->pool_len ||
			    !memchr(f->pool + in->str, '\0',
				    f->pool_len - in->str)))
			return -EINVAL;
		/* At most 64 instructions: at most 64 bits deep. */
		if (++depth > 64)
			return -EINVAL;
	}
	return depth == 1 ? 0 : -EINVAL;
}

/* --- the parser (process context) ----------------------------------------- */

struct rtr_fparse {
	const char *pos;		/* next character of the text */
	const struct rtr_filter_field *ff;	/* what it may name */
	unsigned int nff;
	struct rtr_filter *f;		/* the program being built */
	unsigned int nest;		/* open parentheses */
	char *err;			/* the first error, a sentence */
	size_t err_size;
	bool failed;
};

static __printf(2, 3) bool rtr_fp_fail(struct rtr_fparse *ps,
				       const char *fmt, ...)
{
	va_list ap;

	if (!ps->failed) {
		va_start(ap, fmt);
		vsnprintf(ps->err, ps->err_size, fmt, ap);
		va_end(ap);
		ps->failed = true;
	}
	return false;
}

static void rtr_fp_skip(struct rtr_fparse *ps)
{
	while (isspace(*ps->pos))
		ps->pos++;
}

/* Takes @tok if the text goes on with it. */
static bool rtr_fp_take(struct rtr_fparse *ps, const char *tok)
{
	size_t n = strlen(tok);

	rtr_fp_skip(ps);
	if (strncmp(ps->pos, tok, n))
		return false;
	ps->pos += n;
	return true;
}

static bool rtr_fp_is_word(char c)
{
	return isalnum(c) || c == '_';
}

/*
 * The next token for a message: a word, or one character; "the end" at
 * the end.  @buf holds at least 24 bytes.
 */
static const char *rtr_fp_next(struct rtr_fparse *ps, char *buf, size_t size)
{
	size_t n = 0;

	rtr_fp_skip(ps);
	if (!*ps->pos)
		return "the end";
	while (n < size - 3 && rtr_fp_is_word(ps->pos[n]))
		n++;
	if (!n)
		n = 1;
	snprintf(buf, size, "'%.*s'", (int)n, ps->pos);
	return buf;
}

static bool rtr_fp_emit(struct rtr_fparse *ps, const struct rtr_filter_insn *in)
{
	if (ps->f->len == RTR_FILTER_MAX_INSNS)
		return rtr_fp_fail(ps, "too long: more than %d operations",
				   RTR_FILTER_MAX_INSNS);
	ps->f->insn[ps->f->len++] = *in;
	return true;
}

static bool rtr_fp_op(struct rtr_fparse *ps, u8 op)
{
	struct rtr_filter_insn in = { .op = op };

	return rtr_fp_emit(ps, &in);
}

/* A run of word characters, "-" and "+" (numbers: 12, -1, 0x1f). */
static bool rtr_fp_word(struct rtr_fparse *ps, char *buf, size_t size)
{
	size_t n = 0;

	rtr_fp_skip(ps);
	while (rtr_fp_is_word(ps->pos[n]) || ps->pos[n] == '-' ||
	       ps->pos[n] == '+') {
		if (n == size - 1)
			return false;
		buf[n] = ps->pos[n];
		n++;
	}
	buf[n] = '\0';
	ps->pos += n;
	return n;
}

static bool rtr_fp_number(struct rtr_fparse *ps, const char *field, s64 *v)
{
	char tok[32], why[24];
	const char *at = ps->pos;
	u64 u;

	if (!rtr_fp_word(ps, tok, sizeof(tok))) {
		ps->pos = at;
		return rtr_fp_fail(ps, "expected a number for '%s', not %s",
				   field, rtr_fp_next(ps, why, sizeof(why)));
	}
	if (!kstrtos64(tok, 0, v))
		return true;
	/* Above S64_MAX: its two's complement, as the field's bits. */
	if (!kstrtou64(tok, 0, &u)) {
		*v = (s64)u;
		return true;
	}
	return rtr_fp_fail(ps, "'%s' is not a number (for '%s')", tok, field);
}

/* A number or, for a system call id, this kernel's name for the call. */
static bool rtr_fp_value(struct rtr_fparse *ps, const struct rtr_filter_field *ff,
			 s64 *v)
{
	char tok[32];
	const char *at;

	rtr_fp_skip(ps);
	at = ps->pos;
	if (ff->type != RTR_FF_SYSCALL || !isalpha(*at) ||
	    !rtr_fp_word(ps, tok, sizeof(tok)))
		return rtr_fp_number(ps, ff->name, v);
	if (!rtr_syscall_lookup(tok, v)) {
		ps->pos = at;
		return rtr_fp_fail(ps, "unknown system call '%s'", tok);
	}
	return true;
}

/* A quoted or bare glob into the pool; @in->str is its offset. */
static bool rtr_fp_glob(struct rtr_fparse *ps, const struct rtr_filter_field *ff,
			struct rtr_filter_insn *in)
{
	struct rtr_filter *f = ps->f;
	const char *s, *end;
	char quote = 0;
	size_t n;

	rtr_fp_skip(ps);
	s = ps->pos;
	if (*s == '"' || *s == '\'') {
		quote = *s++;
		end = strchr(s, quote);
		if (!end)
			return rtr_fp_fail(ps, "unterminated string for '%s'",
					   ff->name);
	} else {
		for (end = s; *end && !isspace(*end) && !strchr("()&|!<>=", *end);
		     end++)
			;
		if (end == s)
			return rtr_fp_fail(ps, "expected a string for '%s'",
					   ff->name);
	}
	n = end - s;
	if (n > RTR_FILTER_MAX_GLOB)
		return rtr_fp_fail(ps, "string for '%s' longer than %d bytes",
				   ff->name, RTR_FILTER_MAX_GLOB);
	if (f->pool_len + n + 1 > RTR_FILTER_POOL)
		return rtr_fp_fail(ps, "too long: more than %d bytes of strings",
				   RTR_FILTER_POOL);
	memcpy(f->pool + f->pool_len, s, n);
	f->pool[f->pool_len + n] = '\0';
	in->str = f->pool_len;
	f->pool_len += n + 1;
	ps->pos = end + !!quote;
	return true;
}

static int rtr_fp_field(const struct rtr_fparse *ps, const char *name)
{
	unsigned int i;

	for (i = 0; i < ps->nff; i++)
		if (!strcmp(ps->ff[i].name, name))
			return i;
	return -1;
}

static bool rtr_fp_cmp(struct rtr_fparse *ps, u8 *op)
{
	/* Two-character operators first. */
	static const struct { const char *tok; u8 op; } ops[] = {
		{ "==", RTR_FOP_EQ }, { "!=", RTR_FOP_NE },
		{ "<=", RTR_FOP_LE }, { ">=", RTR_FOP_GE },
		{ "<", RTR_FOP_LT }, { ">", RTR_FOP_GT },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (rtr_fp_take(ps, ops[i].tok)) {
			*op = ops[i].op;
			return true;
		}
	return false;
}

static bool rtr_fp_pred(struct rtr_fparse *ps)
{
	struct rtr_filter_insn in = { .mask = -1 };
	const struct rtr_filter_field *ff;
	char name[32], why[24];
	const char *at;
	bool mask = false;
	int i, n;

	rtr_fp_skip(ps);
	at = ps->pos;
	if (!isalpha(*at) && *at != '_')
		return rtr_fp_fail(ps, "expected a field name, not %s",
				   rtr_fp_next(ps, why, sizeof(why)));
	for (i = 0; rtr_fp_is_word(at[i]); i++)
		if (i == sizeof(name) - 1)
			return rtr_fp_fail(ps, "unknown field '%.*s...'", i, at);
	/* An element of an array field: "args[2]", as the trace prints it. */
	if (at[i] == '[') {
		for (n = i + 1; isdigit(at[n]); n++)
			;
		if (at[n] != ']' || n == i + 1 || n + 1 >= sizeof(name)) {
			ps->pos = at + n;
			return rtr_fp_fail(ps, "expected an index and ']' after '%.*s'",
					   (int)i, at);
		}
		i = n + 1;
	}
	memcpy(name, at, i);
	name[i] = '\0';
	ps->pos += i;
	i = rtr_fp_field(ps, name);
	if (i < 0) {
		ps->pos = at;
		return rtr_fp_fail(ps, "unknown field '%s'", name);
	}
	ff = &ps->ff[i];
	in.field = i;
	if (ff->type == RTR_FF_STR) {
		if (rtr_fp_take(ps, "=="))
			in.op = RTR_FOP_STR_EQ;
		else if (rtr_fp_take(ps, "!="))
			in.op = RTR_FOP_STR_NE;
		else
			return rtr_fp_fail(ps, "'%s' is a string: == or != a glob, not %s",
					   name, rtr_fp_next(ps, why, sizeof(why)));
		return rtr_fp_glob(ps, ff, &in) && rtr_fp_emit(ps, &in);
	}
	rtr_fp_skip(ps);
	if (ps->pos[0] == '&' && ps->pos[1] != '&') {
		ps->pos++;
		if (!rtr_fp_number(ps, name, &in.mask))
			return false;
		mask = true;
	}
	if (!rtr_fp_cmp(ps, &in.op)) {
		if (!mask)
			return rtr_fp_fail(ps, "expected a comparison after '%s', not %s",
					   name, rtr_fp_next(ps, why, sizeof(why)));
		in.op = RTR_FOP_NE;	/* "field & mask": any bit set */
		in.imm = 0;
		return rtr_fp_emit(ps, &in);
	}
	return rtr_fp_value(ps, ff, &in.imm) && rtr_fp_emit(ps, &in);
}

static bool rtr_fp_or(struct rtr_fparse *ps);

static bool rtr_fp_unary(struct rtr_fparse *ps)
{
	char why[24];

	if (rtr_fp_take(ps, "!=")) {
		ps->pos -= 2;
		return rtr_fp_fail(ps, "expected a field name, not '!='");
	}
	if (rtr_fp_take(ps, "!")) {
		if (++ps->nest > RTR_FILTER_MAX_NEST)
			return rtr_fp_fail(ps, "nested deeper than %d",
					   RTR_FILTER_MAX_NEST);
		if (!rtr_fp_unary(ps))
			return false;
		ps->nest--;
		return rtr_fp_op(ps, RTR_FOP_NOT);
	}
	if (!rtr_fp_take(ps, "("))
		return rtr_fp_pred(ps);
	if (++ps->nest > RTR_FILTER_MAX_NEST)
		return rtr_fp_fail(ps, "nested deeper than %d",
				   RTR_FILTER_MAX_NEST);
	if (!rtr_fp_or(ps))
		return false;
	if (!rtr_fp_take(ps, ")"))
		return rtr_fp_fail(ps, "expected ')', not %s",
				   rtr_fp_next(ps, why, sizeof(why)));
	ps->nest--;
	return true;
}

static bool rtr_fp_and(struct rtr_fparse *ps)
{
	if (!rtr_fp_unary(ps))
		return false;
	while (rtr_fp_take(ps, "&&"))
		if (!rtr_fp_unary(ps) || !rtr_fp_op(ps, RTR_FOP_AND))
			return false;
	return true;
}

static bool rtr_fp_or(struct rtr_fparse *ps)
{
	if (!rtr_fp_and(ps))
		return false;
	while (rtr_fp_take(ps, "||"))
		if (!rtr_fp_and(ps) || !rtr_fp_op(ps, RTR_FOP_OR))
			return false;
	return true;
}

/*
 * Compile @text (NUL-terminated, trimmed) for @p: the program, or an
 * ERR_PTR with the reason in @err.  "! ! ! x == 1" nests without
 * parentheses: the "!"s count against RTR_FILTER_MAX_NEST too.
 */
static struct rtr_filter *rtr_filter_compile(const struct rtr_filter_field *ff,
					     unsigned int nff, const char *text,
					     char *err, size_t err_size)
{
	struct rtr_fparse ps = {
		.pos = text, .ff = ff, .nff = nff, .err = err,
		.err_size = err_size,
	};
	size_t i, len = strlen(text);
	char why[24];
	int ret;

	ps.f = kzalloc(sizeof(*ps.f) + len + 1, GFP_KERNEL);
	if (!ps.f)
		return ERR_PTR(-ENOMEM);
	/* Read back as one line: a newline inside is a blank like any other. */
	for (i = 0; i < len; i++)
		ps.f->text[i] = isspace(text[i]) ? ' ' : text[i];
	if (rtr_fp_or(&ps)) {
		rtr_fp_skip(&ps);
		if (*ps.pos)
			rtr_fp_fail(&ps, "unexpected %s",
				    rtr_fp_next(&ps, why, sizeof(why)));
	}
	if (ps.failed) {
		size_t n = strlen(err);

		snprintf(err + n, err_size - n, " at column %zu",
			 (size_t)(ps.pos - text) + 1);
		kfree(ps.f);
		return ERR_PTR(-EINVAL);
	}
	ret = rtr_filter_verify(ff, nff, ps.f);
	if (ret) {
		/* The parser made a program the verifier refuses: a bug here. */
		snprintf(err, err_size, "internal error: the compiled program fails verification");
		kfree(ps.f);
		return ERR_PTR(ret);
	}
	return ps.f;
}

/* --- the files -------------------------------------------------------------- */

/*
 * Every predicate file is rtr_pred_fops over a struct rtr_pred_file, the
 * file's data (probes.h): events/<name>/filter and events/<name>/trigger
 * of a tracepoint probe (events_ctl.c) and of a dynamic probe
 * (dynprobes.c), and the marker's two (below and trigger.c).  A filter and a trigger differ in who runs the program,
 * not in the file: both are read back, replaced and refused alike.
 * The files work under rtr_probes_lock; the end of a predicate,
 * rtr_pred_free(), needs no lock [F2].
 */

static int rtr_pred_show(struct seq_file *m, void *unused)
{
	const struct rtr_pred_file *pf = m->private;
	const struct rtr_filter *f;

	mutex_lock(&rtr_probes_lock);
	f = rcu_dereference_protected(*pf->prog,
				      lockdep_is_held(&rtr_probes_lock));
	seq_printf(m, "%s\n", f ? f->text : "none");
	if (*pf->err)
		seq_printf(m, "# error: %s\n", *pf->err);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

static int rtr_pred_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_pred_show);
}

/* The error of the last write (NULL: it worked), shown until the next. */
static void rtr_pred_set_err(char **slot, char *err)
{
	lockdep_assert_held(&rtr_probes_lock);
	kfree(*slot);
	*slot = err;
}

static void rtr_pred_publish(const struct rtr_pred_file *pf,
			     struct rtr_filter *f)
{
	struct rtr_filter *old;

	mutex_lock(&rtr_probes_lock);
	/*
	 * [F1] pairs with rcu_dereference_sched() in rtr_filtered(),
	 * rtr_marker_filtered(), rtr_marker_matched() (trigger.c) and
	 * rtr_dynprobe_filtered() (dynprobes.h).
	 */
	old = rcu_replace_pointer(*pf->prog, f,
				  lockdep_is_held(&rtr_probes_lock));
	rtr_pred_set_err(pf->err, NULL);
	mutex_unlock(&rtr_probes_lock);
	if (old) {
		/* Probes run with preemption off: a grace period covers them. */
		synchronize_rcu();
		kfree(old);
	}
}

/*
 * A write of @buf (NUL-terminated, modified) to the file of @pf: 0 or
 * -errno; on -EINVAL the predicate in force stays and the reason is kept
 * for reading back.
 */
static int rtr_pred_set(const struct rtr_pred_file *pf, char *buf)
{
	struct rtr_filter *f;
	char *text = strim(buf);
	char *err;

	if (!pf->nff)
		return -EINVAL;
	if (!*text || !strcmp(text, "0") || !strcmp(text, "none")) {
		rtr_pred_publish(pf, NULL);
		return 0;
	}
	err = kmalloc(RTR_FILTER_ERR_MAX, GFP_KERNEL);
	if (!err)
		return -ENOMEM;
	f = rtr_filter_compile(pf->ff, pf->nff, text, err, RTR_FILTER_ERR_MAX);
	if (IS_ERR(f)) {
		if (PTR_ERR(f) != -EINVAL) {
			kfree(err);
			return PTR_ERR(f);
		}
		mutex_lock(&rtr_probes_lock);
		rtr_pred_set_err(pf->err, err);
		mutex_unlock(&rtr_probes_lock);
		return -EINVAL;
	}
	kfree(err);
	rtr_pred_publish(pf, f);
	return 0;
}

static ssize_t rtr_pred_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	const struct rtr_pred_file *pf = rtr_file_data(file_inode(file));
	char *buf;
	int ret;

	buf = rtr_ctl_copy(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = rtr_pred_set(pf, buf);
	kfree(buf);
	return ret ?: count;
}

const struct file_operations rtr_pred_fops = {
	.owner = THIS_MODULE,
	.open = rtr_pred_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_pred_write,
};

/*
 * [F2] The end of a predicate: its program and its last error, freed
 * with no grace period and no lock, because the caller has already
 * waited for every reader:
 *
 *   - a tracepoint probe's filter and trigger (rtr_filtered()):
 *     tracepoint_synchronize_unregister() in rtr_probes_exit();
 *   - a dynamic probe's filter and trigger (rtr_dynprobe_filtered()):
 *     its ->detach(), or its attach failed and no handler ever ran
 *     ([D2], dynprobes.c);
 *   - the marker's two (rtr_marker_filtered(), rtr_marker_matched()):
 *     read only inside a write() to the marker file, and no file is open
 *     at unload (every open pins the module);
 *   - the reader of every trigger's text, rtr_trigger_describe()
 *     (trigger.c), holds rtr_dynprobes_lock, under which a dynamic
 *     probe's predicates are freed, and runs only from a file, none of
 *     which is open at unload.
 *
 * Nor can a writer replace it meanwhile: the file is gone
 * (debugfs_remove() waited for its ops [D2]) or, at unload, not open.
 * Hence "true" where lockdep_is_held(&rtr_probes_lock) would be.
 */
void rtr_pred_free(struct rtr_filter __rcu **prog, char **err)
{
	kfree(rcu_replace_pointer(*prog, NULL, true));
	kfree(*err);
	*err = NULL;
}

/* The expression @f was compiled from, as written (one line). */
const char *rtr_filter_text(const struct rtr_filter *f)
{
	return f->text;
}

/*
 * The marker's predicate, events/ringtrace_marker/filter: the marker file
 * is no probe, its fields are the text written and the writer's name.
 */
const struct rtr_filter_field rtr_ff_marker[RTR_NR_FF_MARKER] = {
	{ .name = "data", .type = RTR_FF_STR },
	{ .name = "comm", .type = RTR_FF_STR },
};
static struct rtr_filter __rcu *rtr_marker_filter;
static char *rtr_marker_filter_err;

struct rtr_pred_file rtr_marker_filter_file = {
	.prog = &rtr_marker_filter,
	.err = &rtr_marker_filter_err,
	.ff = rtr_ff_marker,
	.nff = RTR_NR_FF_MARKER,
};

/*
 * The marker @data (its text, NUL-terminated) fails the marker's
 * predicate: true, write nothing.  From the marker file's write().
 */
bool rtr_marker_filtered(const char *data)
{
	const union rtr_fval v[] = { RTR_FS(data), RTR_FS(current->comm) };
	const struct rtr_filter *f;
	bool drop;

	static_assert(ARRAY_SIZE(v) == ARRAY_SIZE(rtr_ff_marker));

	rcu_read_lock_sched();
	/* [F1] */
	f = rcu_dereference_sched(rtr_marker_filter);
	drop = unlikely(f) && !rtr_filter_match(f, v);
	rcu_read_unlock_sched();
	return drop;
}

/*
 * The predicate @f rejects the event with the values @v (true: write
 * nothing); if it passes and the trigger @t matches, *@hit is set, for
 * the caller to fire the trigger once its event is written (trigger.c).
 * Either may be NULL.
 */
bool rtr_pred_judge(const struct rtr_filter *f, const struct rtr_filter *t,
		    const union rtr_fval *v, bool *hit)
{
	if (f && !rtr_filter_match(f, v))
		return true;
	if (t && rtr_filter_match(t, v))
		*hit = true;
	return false;
}

/* rtr_pred_judge() for a tracepoint probe: the hit goes into @w. */
bool rtr_probe_judge(const struct rtr_probe *p, struct rtr_rsv *w,
		     const struct rtr_filter *f, const struct rtr_filter *t,
		     const union rtr_fval *v)
{
	bool hit = false;

	if (rtr_pred_judge(f, t, v, &hit))
		return true;
	if (hit) {
		w->slow = RTR_RSV_HIT;
		w->hit_id = p->event.id;
	}
	return false;
}

/* Once no probe can run any more (module unload) [F2]. */
void rtr_filters_free(void)
{
	struct rtr_probe *p;

	rtr_pred_free(&rtr_marker_filter, &rtr_marker_filter_err);
	for (p = rtr_probes; p < rtr_probes + RTR_NR_PROBES; p++) {
		rtr_pred_free(&p->filter, &p->filter_err);
		rtr_pred_free(&p->trigger, &p->trigger_err);
	}
}
