// SPDX-License-Identifier: GPL-2.0
/*
 * TSDL (CTF 1.8 metadata text) parser.
 *
 * The grammar is the part of TSDL that describes fixed layouts: integer,
 * enum, struct, variant, string and floating_point types, type aliases,
 * arrays and sequences, and the trace/env/clock/stream/event blocks.  The
 * packet header, packet context and event header must describe exactly
 * the layout of include/uapi/linux/ringtrace.h: the stream decoder reads
 * those with fixed offsets, so they are checked here against the ABI
 * header itself.  Event payloads are decoded from what the metadata says:
 * integers (8/16/32/64 bits, byte aligned, little endian), fixed arrays and
 * sequences of them (8-bit UTF-8 or ASCII ones are text) and strings.  An
 * event using anything else is marked unsupported; decoding one fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/ringtrace.h>
#include "internal.h"

#define MAX_DEPTH		32
#define MAX_MEMBERS		4096
#define MAX_METADATA_SIZE	(64u << 20)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

/* ---- tokens ------------------------------------------------------------ */

enum tok_type { T_END, T_IDENT, T_NUM, T_STR, T_PUNCT };

struct tok {
	enum tok_type type;
	unsigned int line;
	const char *text;	/* identifier, punctuation, or string value */
	uint64_t num;
};

/* ---- types ------------------------------------------------------------- */

enum ty_kind { TY_INT, TY_ENUM, TY_FLOAT, TY_STRING, TY_STRUCT, TY_VARIANT,
	       TY_ARRAY, TY_SEQ };

struct member {
	const char *name;
	struct ty *ty;
	struct member *next;
};

struct enumerator {
	const char *name;
	int64_t lo, hi;
	struct enumerator *next;
};

struct ty {
	enum ty_kind kind;
	unsigned int line;
	unsigned int depth;		/* longest chain of nested types */
	unsigned int align;		/* bits; for structs the computed one */
	/* TY_INT and the container of TY_ENUM */
	unsigned int size;		/* bits */
	bool is_signed, be, text;
	unsigned int base;
	const char *map;		/* clock name, or NULL */
	/* TY_ENUM */
	struct enumerator *enums;
	/* TY_STRUCT, TY_VARIANT */
	struct member *members;
	unsigned int nr_members;
	const char *tag;
	/* TY_ARRAY, TY_SEQ */
	struct ty *elem;
	uint64_t length;
	const char *length_ref;
};

/* ---- parser state -------------------------------------------------------- */

struct name_entry {
	const char *name;
	struct ty *ty;
	struct name_entry *next;
};

enum val_kind { V_NONE, V_STR, V_NUM, V_PATH };

struct val {
	enum val_kind kind;
	const char *s;			/* V_STR, V_PATH */
	uint64_t num;			/* V_NUM: magnitude */
	bool neg;
};

struct item {
	const char *key;
	unsigned int line;
	struct val v;
	struct ty *ty;			/* for `key := type;` */
	struct item *next;
};

struct block {
	const char *kind;
	unsigned int line;
	struct item *items;
	struct block *next;
};

struct chunk {
	struct chunk *next;
	max_align_t data[];
};

struct parser {
	const char *name;
	struct rt_error *err;
	struct tok *toks;
	size_t nr_toks, cap_toks, pos;
	struct chunk *chunks;
	struct name_entry *aliases;
	struct name_entry *tagged;	/* struct/enum/variant NAME */
	struct block *blocks, **blocks_tail;
	unsigned int depth;
};

static void *palloc(struct parser *p, size_t n)
{
	struct chunk *c = calloc(1, sizeof(*c) + n);

	if (!c) {
		rt_fail(p->err, "%s: out of memory", p->name);
		return NULL;
	}
	c->next = p->chunks;
	p->chunks = c;
	return c->data;
}

static char *pstrndup(struct parser *p, const char *s, size_t n)
{
	char *d = palloc(p, n + 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

static struct tok *peek(struct parser *p, size_t k)
{
	size_t i = p->pos + k;

	return &p->toks[i < p->nr_toks ? i : p->nr_toks - 1];
}

static bool is_punct(const struct tok *t, const char *s)
{
	return t->type == T_PUNCT && !strcmp(t->text, s);
}

static bool is_ident(const struct tok *t, const char *s)
{
	return t->type == T_IDENT && !strcmp(t->text, s);
}

static const char *tok_desc(const struct tok *t)
{
	switch (t->type) {
	case T_END:
		return "end of file";
	case T_NUM:
		return "a number";
	case T_STR:
		return "a string";
	default:
		return t->text;
	}
}

static int perr(struct parser *p, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct parser *p, unsigned int line, const char *fmt, ...)
{
	char msg[RT_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		return rt_fail(p->err, "%s:%u: %s", p->name, line, msg);
	return rt_fail(p->err, "%s: %s", p->name, msg);
}

static int expect_punct(struct parser *p, const char *s)
{
	struct tok *t = peek(p, 0);

	if (!is_punct(t, s))
		return perr(p, t->line, "expected '%s', found '%s'", s,
			    tok_desc(t));
	p->pos++;
	return 0;
}

static const char *expect_ident(struct parser *p, const char *what)
{
	struct tok *t = peek(p, 0);

	if (t->type != T_IDENT) {
		perr(p, t->line, "expected %s, found '%s'", what, tok_desc(t));
		return NULL;
	}
	p->pos++;
	return t->text;
}

/* ---- lexer ---------------------------------------------------------------- */

static int push_tok(struct parser *p, enum tok_type type, unsigned int line,
		    const char *text, uint64_t num)
{
	if (p->nr_toks == p->cap_toks) {
		size_t cap = p->cap_toks ? p->cap_toks * 2 : 256;
		struct tok *n = realloc(p->toks, cap * sizeof(*n));

		if (!n)
			return rt_fail(p->err, "%s: out of memory", p->name);
		p->toks = n;
		p->cap_toks = cap;
	}
	p->toks[p->nr_toks++] = (struct tok){ type, line, text, num };
	return 0;
}

static bool id_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool id_char(char c)
{
	return id_start(c) || (c >= '0' && c <= '9');
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

static int lex_number(struct parser *p, const char *s, size_t len, size_t *i,
		      unsigned int line)
{
	unsigned int base = 10;
	uint64_t v = 0;
	size_t j = *i;
	bool any = false;

	if (s[j] == '0' && j + 1 < len && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
		base = 16;
		j += 2;
	} else if (s[j] == '0') {
		base = 8;
	}
	for (; j < len; j++) {
		int d = digit_value(s[j]);

		if (d >= (int)base)
			break;
		if (v > (UINT64_MAX - d) / base)
			return perr(p, line, "number too large");
		v = v * base + d;
		any = true;
	}
	if (!any)
		return perr(p, line, "malformed number");
	while (j < len && (s[j] == 'u' || s[j] == 'U' || s[j] == 'l' || s[j] == 'L'))
		j++;
	if (j < len && id_char(s[j]))
		return perr(p, line, "malformed number");
	*i = j;
	return push_tok(p, T_NUM, line, "", v);
}

static int lex_string(struct parser *p, const char *s, size_t len, size_t *i,
		      unsigned int *line)
{
	unsigned int start_line = *line;
	size_t j = *i + 1, n = 0, end = j;
	char *out;

	/* Size the copy first: one allocation per string, not per byte left. */
	while (end < len && s[end] != '"')
		end += s[end] == '\\' ? 2 : 1;
	out = palloc(p, (end < len ? end : len) - *i);
	if (!out)
		return -1;
	for (;;) {
		char c;

		if (j >= len)
			return perr(p, start_line, "unterminated string");
		c = s[j++];
		if (c == '"')
			break;
		if (c == '\n')
			(*line)++;
		if (c == '\\') {
			if (j >= len)
				return perr(p, start_line, "unterminated string");
			c = s[j++];
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case '\\':
			case '"':
			case '\'':
				break;
			default:
				return perr(p, *line, "unsupported escape '\\%c' in string",
					    c >= 0x20 && c < 0x7f ? c : '?');
			}
		}
		if (c == '\0')
			return perr(p, *line, "NUL byte in string");
		out[n++] = c;
	}
	*i = j;
	return push_tok(p, T_STR, start_line, out, 0);
}

static int lex(struct parser *p, const char *s, size_t len)
{
	static const char *const multi[] = { ":=", "..." };
	static const char single[] = "{}()[];,=:<>.-+*";
	unsigned int line = 1;
	size_t i = 0;

	while (i < len) {
		char c = s[i];
		const char *hit = NULL;

		if (c == '\n') {
			line++;
			i++;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			i++;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			unsigned int start = line;

			for (i += 2; ; i++) {
				if (i + 1 >= len)
					return perr(p, start, "unterminated comment");
				if (s[i] == '\n')
					line++;
				if (s[i] == '*' && s[i + 1] == '/')
					break;
			}
			i += 2;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				i++;
			continue;
		}
		if (id_start(c)) {
			size_t j = i;
			const char *t;

			while (j < len && id_char(s[j]))
				j++;
			t = pstrndup(p, s + i, j - i);
			if (!t || push_tok(p, T_IDENT, line, t, 0))
				return -1;
			i = j;
			continue;
		}
		if (c >= '0' && c <= '9') {
			if (lex_number(p, s, len, &i, line))
				return -1;
			continue;
		}
		if (c == '"') {
			if (lex_string(p, s, len, &i, &line))
				return -1;
			continue;
		}
		for (size_t k = 0; k < ARRAY_SIZE(multi); k++) {
			size_t ml = strlen(multi[k]);

			if (len - i >= ml && !memcmp(s + i, multi[k], ml))
				hit = multi[k];
		}
		if (hit) {
			if (push_tok(p, T_PUNCT, line, hit, 0))
				return -1;
			i += strlen(hit);
			continue;
		}
		if (c && strchr(single, c)) {
			const char *t = pstrndup(p, s + i, 1);

			if (!t || push_tok(p, T_PUNCT, line, t, 0))
				return -1;
			i++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f)
			return perr(p, line, "unexpected character '%c'", c);
		return perr(p, line, "unexpected byte 0x%02x", (unsigned char)c);
	}
	return push_tok(p, T_END, line, "", 0);
}

/* ---- values ---------------------------------------------------------------- */

/* IDENT ('.' IDENT)* */
static const char *parse_path(struct parser *p)
{
	size_t start = p->pos, n = 0;
	const char *first;
	char *out;

	first = expect_ident(p, "a name");
	if (!first)
		return NULL;
	n = strlen(first);
	while (is_punct(peek(p, 0), ".") && peek(p, 1)->type == T_IDENT) {
		n += 1 + strlen(peek(p, 1)->text);
		p->pos += 2;
	}
	out = palloc(p, n + 1);
	if (!out)
		return NULL;
	for (size_t i = start; i < p->pos; i++)
		strcat(out, p->toks[i].text);
	return out;
}

static int parse_value(struct parser *p, struct val *v)
{
	struct tok *t = peek(p, 0);

	memset(v, 0, sizeof(*v));
	if (t->type == T_STR) {
		v->kind = V_STR;
		v->s = t->text;
		p->pos++;
		return 0;
	}
	if (is_punct(t, "-") || is_punct(t, "+")) {
		v->neg = is_punct(t, "-");
		p->pos++;
		t = peek(p, 0);
		if (t->type != T_NUM)
			return perr(p, t->line, "expected a number after sign");
	}
	if (t->type == T_NUM) {
		v->kind = V_NUM;
		v->num = t->num;
		p->pos++;
		return 0;
	}
	if (t->type == T_IDENT) {
		v->kind = V_PATH;
		v->s = parse_path(p);
		return v->s ? 0 : -1;
	}
	return perr(p, t->line, "expected a value, found '%s'", tok_desc(t));
}

static int val_bool(struct parser *p, unsigned int line, const struct val *v,
		    bool *out)
{
	if (v->kind == V_NUM && !v->neg && v->num <= 1) {
		*out = v->num;
		return 0;
	}
	if (v->kind == V_PATH) {
		if (!strcasecmp(v->s, "true")) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(v->s, "false")) {
			*out = false;
			return 0;
		}
	}
	return perr(p, line, "expected true or false");
}

static int val_uint(struct parser *p, unsigned int line, const struct val *v,
		    uint64_t max, uint64_t *out)
{
	if (v->kind != V_NUM || v->neg || v->num > max)
		return perr(p, line, "expected a number from 0 to %llu",
			    (unsigned long long)max);
	*out = v->num;
	return 0;
}

static int val_int(struct parser *p, unsigned int line, const struct val *v,
		   int64_t *out)
{
	if (v->kind != V_NUM || v->num > (uint64_t)INT64_MAX)
		return perr(p, line, "expected a signed 64-bit number");
	*out = v->neg ? -(int64_t)v->num : (int64_t)v->num;
	return 0;
}

/* ---- type parsing ------------------------------------------------------------ */

static struct ty *parse_type(struct parser *p);

static struct ty *new_ty(struct parser *p, enum ty_kind kind, unsigned int line)
{
	struct ty *t = palloc(p, sizeof(*t));

	if (t) {
		t->kind = kind;
		t->line = line;
		t->base = 10;
		t->align = 8;
		t->depth = 1;
	}
	return t;
}

static struct ty *lookup(struct name_entry *e, const char *name)
{
	for (; e; e = e->next)
		if (!strcmp(e->name, name))
			return e->ty;
	return NULL;
}

static int add_name(struct parser *p, struct name_entry **list,
		    const char *name, struct ty *ty)
{
	struct name_entry *e = palloc(p, sizeof(*e));

	if (!e)
		return -1;
	e->name = name;
	e->ty = ty;
	e->next = *list;
	*list = e;
	return 0;
}

static int set_depth(struct parser *p, struct ty *t, const struct ty *child)
{
	if (child->depth + 1 > t->depth)
		t->depth = child->depth + 1;
	if (t->depth > MAX_DEPTH)
		return perr(p, t->line, "types nested too deeply");
	return 0;
}

static unsigned int align_up(unsigned int v, unsigned int a)
{
	return (v + a - 1) / a * a;
}

/* `{ attr = value; ... }` of integer, floating_point and string. */
static int parse_int_attrs(struct parser *p, struct ty *t, bool is_int)
{
	bool have_size = false, have_align = false;
	unsigned int exp_dig = 0, mant_dig = 0;

	if (expect_punct(p, "{"))
		return -1;
	while (!is_punct(peek(p, 0), "}")) {
		unsigned int line = peek(p, 0)->line;
		const char *key = expect_ident(p, "an attribute name");
		struct val v;
		uint64_t n = 0;

		if (!key || expect_punct(p, "=") || parse_value(p, &v))
			return -1;
		if (!strcmp(key, "size")) {
			if (val_uint(p, line, &v, 64, &n))
				return -1;
			if (!n)
				return perr(p, line, "size must be 1 to 64");
			t->size = n;
			have_size = true;
		} else if (!strcmp(key, "align")) {
			if (val_uint(p, line, &v, 1u << 20, &n))
				return -1;
			if (!n || (n & (n - 1)))
				return perr(p, line, "align must be a power of two");
			t->align = n;
			have_align = true;
		} else if (!strcmp(key, "signed")) {
			if (val_bool(p, line, &v, &t->is_signed))
				return -1;
		} else if (!strcmp(key, "encoding")) {
			const char *e = v.kind == V_PATH || v.kind == V_STR ? v.s : "";

			if (!strcasecmp(e, "UTF8") || !strcasecmp(e, "ASCII"))
				t->text = true;
			else if (!strcasecmp(e, "none"))
				t->text = false;
			else
				return perr(p, line, "unknown encoding");
		} else if (!strcmp(key, "base")) {
			const char *b = v.kind == V_PATH ? v.s : "";

			if (v.kind == V_NUM && !v.neg &&
			    (v.num == 2 || v.num == 8 || v.num == 10 || v.num == 16))
				t->base = v.num;
			else if (!strcmp(b, "decimal") || !strcmp(b, "dec") ||
				 !strcmp(b, "d") || !strcmp(b, "i") || !strcmp(b, "u"))
				t->base = 10;
			else if (!strcmp(b, "hexadecimal") || !strcmp(b, "hex") ||
				 !strcmp(b, "x") || !strcmp(b, "X") || !strcmp(b, "p"))
				t->base = 16;
			else if (!strcmp(b, "octal") || !strcmp(b, "oct") ||
				 !strcmp(b, "o"))
				t->base = 8;
			else if (!strcmp(b, "binary") || !strcmp(b, "b"))
				t->base = 2;
			else
				return perr(p, line, "unknown base");
		} else if (!strcmp(key, "byte_order")) {
			const char *b = v.kind == V_PATH ? v.s : "";

			if (!strcmp(b, "le") || !strcmp(b, "native"))
				t->be = false;
			else if (!strcmp(b, "be") || !strcmp(b, "network"))
				t->be = true;
			else
				return perr(p, line, "unknown byte_order");
		} else if (!strcmp(key, "map")) {
			const char *m = v.kind == V_PATH ? v.s : "";
			size_t l = strlen(m);

			if (strncmp(m, "clock.", 6) || l < 13 ||
			    strcmp(m + l - 6, ".value"))
				return perr(p, line, "map must be clock.NAME.value");
			t->map = pstrndup(p, m + 6, l - 12);
			if (!t->map)
				return -1;
		} else if (!strcmp(key, "exp_dig") && !is_int) {
			if (val_uint(p, line, &v, 64, &n))
				return -1;
			exp_dig = n;
		} else if (!strcmp(key, "mant_dig") && !is_int) {
			if (val_uint(p, line, &v, 64, &n))
				return -1;
			mant_dig = n;
		}
		/* Other attributes do not change the layout. */
		if (expect_punct(p, ";"))
			return -1;
	}
	p->pos++;
	if (!is_int) {
		t->size = exp_dig + mant_dig;
		return 0;
	}
	if (!have_size)
		return perr(p, t->line, "integer without size");
	if (!have_align)
		t->align = t->size % 8 ? 1 : 8;
	return 0;
}

static int parse_members(struct parser *p, struct ty *t);

static struct ty *parse_struct(struct parser *p, unsigned int line)
{
	const char *name = NULL;
	struct ty *t;

	if (peek(p, 0)->type == T_IDENT)
		name = expect_ident(p, "a name");
	if (!is_punct(peek(p, 0), "{")) {
		t = name ? lookup(p->tagged, name) : NULL;
		if (!t || t->kind != TY_STRUCT)
			perr(p, line, "unknown struct '%s'", name ? name : "");
		return t && t->kind == TY_STRUCT ? t : NULL;
	}
	t = new_ty(p, TY_STRUCT, line);
	if (!t || parse_members(p, t))
		return NULL;
	t->align = 1;
	if (is_ident(peek(p, 0), "align")) {
		struct tok *n;

		p->pos++;
		if (expect_punct(p, "("))
			return NULL;
		n = peek(p, 0);
		if (n->type != T_NUM || !n->num || n->num > (1u << 20) ||
		    (n->num & (n->num - 1))) {
			perr(p, n->line, "align() needs a power of two");
			return NULL;
		}
		t->align = n->num;
		p->pos++;
		if (expect_punct(p, ")"))
			return NULL;
	}
	for (struct member *m = t->members; m; m = m->next)
		if (m->ty->align > t->align)
			t->align = m->ty->align;
	if (name && add_name(p, &p->tagged, name, t))
		return NULL;
	return t;
}

static struct ty *parse_enum(struct parser *p, unsigned int line)
{
	struct enumerator **tail;
	const char *name = NULL;
	struct ty *t, *c;
	int64_t next = 0;

	if (peek(p, 0)->type == T_IDENT)
		name = expect_ident(p, "a name");
	if (!is_punct(peek(p, 0), ":")) {
		perr(p, line, "enum without a container type");
		return NULL;
	}
	p->pos++;
	c = parse_type(p);
	if (!c)
		return NULL;
	if (c->kind != TY_INT) {
		perr(p, line, "enum container must be an integer");
		return NULL;
	}
	t = new_ty(p, TY_ENUM, line);
	if (!t)
		return NULL;
	*t = *c;
	t->kind = TY_ENUM;
	t->line = line;
	tail = &t->enums;
	if (expect_punct(p, "{"))
		return NULL;
	while (!is_punct(peek(p, 0), "}")) {
		struct tok *nt = peek(p, 0);
		struct enumerator *e = palloc(p, sizeof(*e));
		struct val v;

		if (!e)
			return NULL;
		if (nt->type != T_IDENT && nt->type != T_STR) {
			perr(p, nt->line, "expected an enumerator, found '%s'",
			     tok_desc(nt));
			return NULL;
		}
		e->name = nt->text;
		p->pos++;
		e->lo = e->hi = next;
		if (is_punct(peek(p, 0), "=")) {
			p->pos++;
			if (parse_value(p, &v) || val_int(p, nt->line, &v, &e->lo))
				return NULL;
			e->hi = e->lo;
			if (is_punct(peek(p, 0), "...")) {
				p->pos++;
				if (parse_value(p, &v) ||
				    val_int(p, nt->line, &v, &e->hi))
					return NULL;
				if (e->hi < e->lo) {
					perr(p, nt->line, "empty enumerator range");
					return NULL;
				}
			}
		}
		next = e->hi == INT64_MAX ? e->hi : e->hi + 1;
		*tail = e;
		tail = &e->next;
		if (is_punct(peek(p, 0), ","))
			p->pos++;
		else if (!is_punct(peek(p, 0), "}")) {
			perr(p, peek(p, 0)->line, "expected ',' or '}' in enum");
			return NULL;
		}
	}
	p->pos++;
	if (name && add_name(p, &p->tagged, name, t))
		return NULL;
	return t;
}

static struct ty *parse_variant(struct parser *p, unsigned int line)
{
	const char *name = NULL;
	struct ty *t = new_ty(p, TY_VARIANT, line);

	if (!t)
		return NULL;
	if (peek(p, 0)->type == T_IDENT)
		name = expect_ident(p, "a name");
	if (is_punct(peek(p, 0), "<")) {
		p->pos++;
		t->tag = parse_path(p);
		if (!t->tag || expect_punct(p, ">"))
			return NULL;
	}
	if (!is_punct(peek(p, 0), "{")) {
		perr(p, line, "variant references are not supported");
		return NULL;
	}
	if (parse_members(p, t))
		return NULL;
	t->align = 1;	/* that of the selected option */
	if (name && add_name(p, &p->tagged, name, t))
		return NULL;
	return t;
}

/* An alias name: all identifiers but the declarator that follows. */
static struct ty *parse_alias_ref(struct parser *p)
{
	size_t start = p->pos, n;
	struct tok *first = peek(p, 0);
	struct ty *t;
	char *name;

	n = strlen(first->text);
	p->pos++;
	while (peek(p, 0)->type == T_IDENT && peek(p, 1)->type == T_IDENT) {
		n += 1 + strlen(peek(p, 0)->text);
		p->pos++;
	}
	name = palloc(p, n + 1);
	if (!name)
		return NULL;
	for (size_t i = start; i < p->pos; i++) {
		if (i > start)
			strcat(name, " ");
		strcat(name, p->toks[i].text);
	}
	t = lookup(p->aliases, name);
	if (!t)
		perr(p, first->line, "unknown type '%s'", name);
	return t;
}

static struct ty *parse_type(struct parser *p)
{
	struct tok *t = peek(p, 0);
	struct ty *ty = NULL;

	if (p->depth >= MAX_DEPTH) {
		perr(p, t->line, "types nested too deeply");
		return NULL;
	}
	p->depth++;
	if (is_ident(t, "integer")) {
		p->pos++;
		ty = new_ty(p, TY_INT, t->line);
		if (ty && parse_int_attrs(p, ty, true))
			ty = NULL;
	} else if (is_ident(t, "floating_point")) {
		p->pos++;
		ty = new_ty(p, TY_FLOAT, t->line);
		if (ty && parse_int_attrs(p, ty, false))
			ty = NULL;
	} else if (is_ident(t, "string")) {
		p->pos++;
		ty = new_ty(p, TY_STRING, t->line);
		if (ty) {
			ty->size = 8;
			ty->text = true;
		}
		if (ty && is_punct(peek(p, 0), "{")) {
			struct ty attrs = { .size = 8 };

			if (parse_int_attrs(p, &attrs, false))
				ty = NULL;
		}
	} else if (is_ident(t, "struct")) {
		p->pos++;
		ty = parse_struct(p, t->line);
	} else if (is_ident(t, "enum")) {
		p->pos++;
		ty = parse_enum(p, t->line);
	} else if (is_ident(t, "variant")) {
		p->pos++;
		ty = parse_variant(p, t->line);
	} else if (t->type == T_IDENT) {
		ty = parse_alias_ref(p);
	} else {
		perr(p, t->line, "expected a type, found '%s'", tok_desc(t));
	}
	p->depth--;
	return ty;
}

/* NAME ('[' (NUMBER | path) ']')*, wrapping @base as arrays/sequences. */
static int parse_declarator(struct parser *p, struct ty *base,
			    const char **name, struct ty **out)
{
	struct { uint64_t len; const char *ref; unsigned int line; } dims[8];
	unsigned int nr = 0;

	*name = expect_ident(p, "a field name");
	if (!*name)
		return -1;
	while (is_punct(peek(p, 0), "[")) {
		struct tok *t;

		p->pos++;
		t = peek(p, 0);
		if (nr == ARRAY_SIZE(dims))
			return perr(p, t->line, "too many array dimensions");
		dims[nr].line = t->line;
		dims[nr].ref = NULL;
		if (t->type == T_NUM) {
			dims[nr].len = t->num;
			p->pos++;
		} else {
			dims[nr].ref = parse_path(p);
			if (!dims[nr].ref)
				return -1;
		}
		nr++;
		if (expect_punct(p, "]"))
			return -1;
	}
	while (nr--) {
		struct ty *a = new_ty(p, dims[nr].ref ? TY_SEQ : TY_ARRAY,
				      dims[nr].line);

		if (!a)
			return -1;
		a->elem = base;
		a->length = dims[nr].len;
		a->length_ref = dims[nr].ref;
		a->align = base->align;
		if (set_depth(p, a, base))
			return -1;
		base = a;
	}
	*out = base;
	return 0;
}

static int parse_typealias(struct parser *p)
{
	unsigned int line = peek(p, 0)->line;
	struct ty *t;
	size_t n = 0, start;
	char *name;

	p->pos++;	/* typealias */
	t = parse_type(p);
	if (!t || expect_punct(p, ":="))
		return -1;
	start = p->pos;
	while (peek(p, 0)->type == T_IDENT) {
		n += strlen(peek(p, 0)->text) + 1;
		p->pos++;
	}
	if (!n)
		return perr(p, line, "typealias without a name");
	name = palloc(p, n);
	if (!name)
		return -1;
	for (size_t i = start; i < p->pos; i++) {
		if (i > start)
			strcat(name, " ");
		strcat(name, p->toks[i].text);
	}
	if (expect_punct(p, ";"))
		return -1;
	return add_name(p, &p->aliases, name, t);
}

static int parse_typedef(struct parser *p)
{
	const char *name;
	struct ty *t;

	p->pos++;	/* typedef */
	t = parse_type(p);
	if (!t || parse_declarator(p, t, &name, &t) || expect_punct(p, ";"))
		return -1;
	return add_name(p, &p->aliases, name, t);
}

/*
 * A typealias or typedef inside a block: 1 if one was parsed, 0 if the
 * next declaration is something else, -1 on error.
 */
static int parse_local_alias(struct parser *p)
{
	if (is_ident(peek(p, 0), "typealias"))
		return parse_typealias(p) ? -1 : 1;
	if (is_ident(peek(p, 0), "typedef"))
		return parse_typedef(p) ? -1 : 1;
	return 0;
}

static int parse_members(struct parser *p, struct ty *t)
{
	struct member **tail = &t->members;

	if (expect_punct(p, "{"))
		return -1;
	while (!is_punct(peek(p, 0), "}")) {
		struct ty *base;

		switch (parse_local_alias(p)) {
		case -1:
			return -1;
		case 1:
			continue;
		}
		base = parse_type(p);
		if (!base)
			return -1;
		for (;;) {
			struct member *m = palloc(p, sizeof(*m));

			if (!m || parse_declarator(p, base, &m->name, &m->ty) ||
			    set_depth(p, t, m->ty))
				return -1;
			for (struct member *o = t->members; o; o = o->next)
				if (!strcmp(o->name, m->name))
					return perr(p, peek(p, 0)->line,
						    "duplicate field '%s'", m->name);
			if (t->nr_members == MAX_MEMBERS)
				return perr(p, peek(p, 0)->line, "more than %u fields",
					    MAX_MEMBERS);
			*tail = m;
			tail = &m->next;
			t->nr_members++;
			if (!is_punct(peek(p, 0), ","))
				break;
			p->pos++;
		}
		if (expect_punct(p, ";"))
			return -1;
	}
	p->pos++;
	return 0;
}

/* ---- blocks ------------------------------------------------------------------ */

static int parse_block(struct parser *p, const char *kind)
{
	struct block *b = palloc(p, sizeof(*b));
	struct item **tail;

	if (!b)
		return -1;
	b->kind = kind;
	b->line = peek(p, 0)->line;
	tail = &b->items;
	p->pos++;
	if (expect_punct(p, "{"))
		return -1;
	while (!is_punct(peek(p, 0), "}")) {
		struct item *it;

		switch (parse_local_alias(p)) {
		case -1:
			return -1;
		case 1:
			continue;
		}
		it = palloc(p, sizeof(*it));
		if (!it)
			return -1;
		it->line = peek(p, 0)->line;
		it->key = parse_path(p);
		if (!it->key)
			return -1;
		if (is_punct(peek(p, 0), ":=")) {
			p->pos++;
			it->ty = parse_type(p);
			if (!it->ty)
				return -1;
		} else if (is_punct(peek(p, 0), "=")) {
			p->pos++;
			if (parse_value(p, &it->v))
				return -1;
		} else {
			return perr(p, peek(p, 0)->line,
				    "expected '=' or ':=' after '%s'", it->key);
		}
		if (expect_punct(p, ";"))
			return -1;
		*tail = it;
		tail = &it->next;
	}
	p->pos++;
	if (is_punct(peek(p, 0), ";"))
		p->pos++;
	*p->blocks_tail = b;
	p->blocks_tail = &b->next;
	return 0;
}

static int parse_top(struct parser *p)
{
	static const char *const blocks[] = {
		"trace", "env", "clock", "stream", "event", "callsite",
	};

	while (peek(p, 0)->type != T_END) {
		struct tok *t = peek(p, 0);
		bool done = false;

		for (size_t i = 0; i < ARRAY_SIZE(blocks); i++) {
			if (is_ident(t, blocks[i]) && is_punct(peek(p, 1), "{")) {
				if (parse_block(p, blocks[i]))
					return -1;
				done = true;
				break;
			}
		}
		if (done)
			continue;
		if (is_ident(t, "typealias")) {
			if (parse_typealias(p))
				return -1;
		} else if (is_ident(t, "typedef")) {
			if (parse_typedef(p))
				return -1;
		} else if (is_ident(t, "struct") || is_ident(t, "enum") ||
			   is_ident(t, "variant")) {
			if (!parse_type(p) || expect_punct(p, ";"))
				return -1;
		} else {
			return perr(p, t->line, "unexpected '%s' at top level",
				    tok_desc(t));
		}
	}
	return 0;
}

/* ---- checks against the ABI ------------------------------------------------------ */

struct expect {
	const char *name;
	unsigned int byte;		/* offset in the packet */
	unsigned int bits;
	bool uuid;			/* uint8_t[16] */
};

#define HDR(f) offsetof(struct ringtrace_packet_header, f)
#define HBITS(f) (8 * sizeof(((struct ringtrace_packet_header *)0)->f))

static const struct expect packet_header[] = {
	{ "magic", HDR(magic), HBITS(magic), false },
	{ "uuid", HDR(uuid), HBITS(uuid), true },
	{ "stream_id", HDR(stream_id), HBITS(stream_id), false },
	{ "stream_instance_id", HDR(stream_instance_id),
	  HBITS(stream_instance_id), false },
};

static const struct expect packet_context[] = {
	{ "timestamp_begin", HDR(timestamp_begin), HBITS(timestamp_begin), false },
	{ "timestamp_end", HDR(timestamp_end), HBITS(timestamp_end), false },
	{ "content_size", HDR(content_size), HBITS(content_size), false },
	{ "packet_size", HDR(packet_size), HBITS(packet_size), false },
	{ "packet_seq_num", HDR(packet_seq_num), HBITS(packet_seq_num), false },
	{ "events_discarded", HDR(events_discarded), HBITS(events_discarded), false },
	{ "cpu_id", HDR(cpu_id), HBITS(cpu_id), false },
	{ "events", HDR(events), HBITS(events), false },
};

static bool is_uint(const struct ty *t)
{
	return (t->kind == TY_INT || t->kind == TY_ENUM) && !t->is_signed && !t->be;
}

static int check_fixed(struct parser *p, const struct ty *st, const char *scope,
		       const struct expect *ex, unsigned int n, unsigned int *bit)
{
	const struct member *m;
	unsigned int i = 0;

	if (!st)
		return perr(p, 0, "%s is missing", scope);
	if (st->kind != TY_STRUCT)
		return perr(p, st->line, "%s must be a struct", scope);
	if (st->nr_members != n)
		return perr(p, st->line, "%s has %u fields, ringtrace's ABI has %u",
			    scope, st->nr_members, n);
	*bit = align_up(*bit, st->align);
	for (m = st->members; m; m = m->next, i++) {
		const struct ty *t = m->ty;
		unsigned int pos = align_up(*bit, t->align), size;
		bool ok;

		if (ex[i].uuid)
			ok = t->kind == TY_ARRAY && t->length == 16 &&
			     is_uint(t->elem) && t->elem->size == 8;
		else
			ok = is_uint(t);
		size = ex[i].uuid ? 128 : t->size;
		if (strcmp(m->name, ex[i].name) || !ok || size != ex[i].bits ||
		    pos != ex[i].byte * 8)
			return perr(p, t->line,
				    "%s field %u must be `%s`, a %u-bit little-endian unsigned %s at byte %u of the packet",
				    scope, i, ex[i].name, ex[i].bits,
				    ex[i].uuid ? "byte array" : "integer", ex[i].byte);
		*bit = pos + size;
	}
	return 0;
}

static const struct member *member_at(const struct ty *st, unsigned int i)
{
	const struct member *m = st->members;

	while (m && i--)
		m = m->next;
	return m;
}

static const struct member *option_for(const struct ty *e, const struct ty *v,
				       int64_t value)
{
	for (const struct enumerator *x = e->enums; x; x = x->next) {
		if (value < x->lo || value > x->hi)
			continue;
		for (const struct member *m = v->members; m; m = m->next)
			if (!strcmp(m->name, x->name))
				return m;
	}
	return NULL;
}

/* One bit-aligned unsigned integer of @bits at @pos inside @st from @start. */
static bool int_at(const struct ty *st, unsigned int idx, unsigned int start,
		   unsigned int pos, unsigned int bits, bool mapped)
{
	unsigned int bit = align_up(start, st->align);
	const struct member *m = st->members;

	for (unsigned int i = 0; m; m = m->next, i++) {
		bit = align_up(bit, m->ty->align);
		if (i == idx)
			return is_uint(m->ty) && m->ty->kind == TY_INT &&
			       bit == pos && m->ty->size == bits &&
			       (!mapped || m->ty->map);
		if (m->ty->kind != TY_INT)
			return false;
		bit += m->ty->size;
	}
	return false;
}

/*
 * The event header must be: a 5-bit enum `id` at bit 0 whose value 31
 * selects the extended option and each of 0..30 the compact one or an
 * untimed one, then a variant tagged by it.  compact: one clock-mapped
 * 27-bit integer at bit 5.  untimed (module/ctf.c: stack_ref's id): one
 * 27-bit `id` at bit 5 mapped to no clock, the event's id, as babeltrace2
 * reads it; the record keeps the time of the one before it.  extended: a
 * 27-bit `id` at bit 5, then a clock-mapped 64-bit timestamp at byte 4
 * (12 bytes in all, as the uapi header says).  Each option's struct must
 * have alignment 1, or CTF would start it at the next byte (a struct is
 * aligned like its most aligned field): a byte-aligned 64-bit type there
 * moves the whole option to bit 8.  *@untimed gets a bit per untimed id.
 */
static int check_event_header(struct parser *p, const struct ty *st,
			      uint32_t *untimed)
{
	const struct member *id, *v, *c, *x, *u = NULL, *o;
	const char *what = NULL;

	*untimed = 0;
	if (!st)
		return perr(p, 0, "stream has no event.header");
	id = st->kind == TY_STRUCT && st->nr_members == 2 ? member_at(st, 0) : NULL;
	v = id ? member_at(st, 1) : NULL;
	if (!id || strcmp(id->name, "id") || id->ty->kind != TY_ENUM ||
	    id->ty->size != RINGTRACE_EVENT_ID_BITS || !is_uint(id->ty) ||
	    id->ty->align != 1 || v->ty->kind != TY_VARIANT || !v->ty->tag ||
	    strcmp(v->ty->tag, "id"))
		return perr(p, st->line,
			    "event.header must be `enum : uint5_t {...} id; variant <id> {...} v;`");
	c = option_for(id->ty, v->ty, 0);
	x = option_for(id->ty, v->ty, RINGTRACE_EVENT_ID_EXTENDED);
	/* Id 0 is the marker's, always timed. */
	for (int64_t i = 1; c && i < RINGTRACE_EVENT_ID_EXTENDED; i++) {
		o = option_for(id->ty, v->ty, i);
		if (o == c)
			continue;
		if (!o || o == x || (u && o != u))
			c = NULL;
		u = o;
		*untimed |= 1u << i;
	}
	if (!c || !x || c == x)
		what = "its enum must map 0..30 to the compact option (or some of 1..30 to one untimed option) and 31 to the extended one";
	else if (c->ty->kind != TY_STRUCT || c->ty->nr_members != 1 ||
		 c->ty->align != 1 ||
		 !int_at(c->ty, 0, 5, 5, RINGTRACE_COMPACT_TS_BITS, true))
		what = "the compact option must be struct { 27-bit clock-mapped timestamp } with alignment 1";
	else if (u && (u->ty->kind != TY_STRUCT || u->ty->nr_members != 1 ||
		       u->ty->align != 1 ||
		       !int_at(u->ty, 0, 5, 5, 32 - RINGTRACE_EVENT_ID_BITS, false) ||
		       member_at(u->ty, 0)->ty->map ||
		       strcmp(member_at(u->ty, 0)->name, "id")))
		what = "the untimed option must be struct { 27-bit `id` mapped to no clock } with alignment 1";
	else if (x->ty->kind != TY_STRUCT || x->ty->nr_members != 2 ||
		 x->ty->align != 1)
		what = "the extended option must be a struct of 2 fields with alignment 1 (give its 64-bit field align = 1)";
	else if (!int_at(x->ty, 0, 5, 5, 32 - RINGTRACE_EVENT_ID_BITS, false) ||
		 strcmp(member_at(x->ty, 0)->name, "id") ||
		 !int_at(x->ty, 1, 5, 32, 64, true))
		what = "the extended option must hold a 27-bit `id` at bit 5 and a clock-mapped 64-bit timestamp at byte 4";
	if (what)
		return perr(p, v->ty->line, "event.header: %s", what);
	return 0;
}

/* ---- conversion to the API structures ------------------------------------------- */

struct clock {
	const char *name;
	uint64_t freq;
	int64_t offset_s, offset;
	bool have;
};

static const struct item *find_item(const struct block *b, const char *key)
{
	const struct item *found = NULL;

	for (const struct item *it = b->items; it; it = it->next)
		if (!strcmp(it->key, key))
			found = it;
	return found;
}

static int parse_uuid(const char *s, uint8_t out[16])
{
	unsigned int n = 0;

	for (size_t i = 0; s[i]; i++) {
		int hi, lo;

		if (s[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23))
			continue;
		if (n == 16 || !s[i + 1])
			return -1;
		hi = digit_value(s[i]);
		lo = digit_value(s[i + 1]);
		if (hi > 15 || lo > 15)
			return -1;
		out[n++] = hi << 4 | lo;
		i++;
	}
	return n == 16 ? 0 : -1;
}

static char *val_text(const struct val *v)
{
	char buf[32];

	if (v->kind == V_STR || v->kind == V_PATH)
		return strdup(v->s);
	snprintf(buf, sizeof(buf), "%s%llu", v->neg ? "-" : "",
		 (unsigned long long)v->num);
	return strdup(buf);
}

static int set_unsupported(struct rt_event_desc *ev, const char *fmt,
			   const char *field)
{
	char buf[256];

	snprintf(buf, sizeof(buf), fmt, field);
	free(ev->unsupported);
	ev->unsupported = strdup(buf);
	return ev->unsupported ? 0 : -1;
}

static bool plain_int(const struct ty *t)
{
	return (t->kind == TY_INT || t->kind == TY_ENUM) && !t->be &&
	       t->align % 8 == 0 && t->align <= 64 * 8 &&
	       (t->size == 8 || t->size == 16 || t->size == 32 || t->size == 64);
}

static int label_cmp(const void *a, const void *b)
{
	const struct rt_enum_label *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* An enum field keeps its labels, sorted for rt_field_label(). */
static int copy_labels(struct parser *p, const struct ty *t,
		       struct rt_field_desc *f)
{
	unsigned int n = 0;

	for (const struct enumerator *e = t->enums; e; e = e->next)
		n++;
	if (!n)
		return 0;
	f->labels = calloc(n, sizeof(*f->labels));
	if (!f->labels)
		return rt_fail(p->err, "%s: out of memory", p->name);
	for (const struct enumerator *e = t->enums; e; e = e->next) {
		struct rt_enum_label *l = &f->labels[f->nr_labels];

		l->label = strdup(e->name);
		if (!l->label)
			return rt_fail(p->err, "%s: out of memory", p->name);
		l->lo = e->lo;
		l->hi = e->hi;
		f->nr_labels++;
	}
	qsort(f->labels, f->nr_labels, sizeof(*f->labels), label_cmp);
	return 0;
}

int rt_field_label_index(const struct rt_field_desc *d, int64_t value)
{
	unsigned int lo = 0, hi = d->nr_labels;

	/* Sorted by lo; ranges of one enum do not overlap in our metadata. */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct rt_enum_label *l = &d->labels[mid];

		if (value < l->lo)
			hi = mid;
		else if (value > l->hi)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

const char *rt_field_label(const struct rt_field_desc *d, int64_t value)
{
	int i = rt_field_label_index(d, value);

	return i < 0 ? NULL : d->labels[i].label;
}

static int convert_fields(struct parser *p, const struct ty *st,
			  struct rt_event_desc *ev)
{
	const char *bad = NULL, *badname = NULL;
	unsigned int i = 0, align = 1;

	if (!st) {
		ev->align = 1;
		return 0;
	}
	if (st->kind != TY_STRUCT)
		return set_unsupported(ev, "fields are not a struct%s", "");
	ev->fields = calloc(st->nr_members ? st->nr_members : 1,
			    sizeof(*ev->fields));
	if (!ev->fields)
		return rt_fail(p->err, "%s: out of memory", p->name);
	for (const struct member *m = st->members; m; m = m->next, i++) {
		struct rt_field_desc *f = &ev->fields[i];
		const struct ty *t = m->ty, *e = t;

		f->name = strdup(m->name);
		if (!f->name)
			return rt_fail(p->err, "%s: out of memory", p->name);
		ev->nr_fields = i + 1;
		if (t->kind == TY_ARRAY || t->kind == TY_SEQ)
			e = t->elem;
		if (t->kind == TY_STRING) {
			f->kind = RT_FIELD_STRING;
			f->bits = 8;
			f->align = 1;
			f->is_text = true;
			f->base = 10;
			continue;
		}
		if (!plain_int(e)) {
			bad = "field '%s' is not a byte-aligned little-endian 8/16/32/64-bit integer (or array of them)";
			badname = m->name;
			continue;
		}
		f->bits = e->size;
		f->align = e->align / 8;
		f->is_signed = e->is_signed;
		f->is_text = e->text && e->size == 8 && t != e;
		f->base = e->base;
		if (f->align > align)
			align = f->align;
		if (t->kind == TY_INT || t->kind == TY_ENUM) {
			f->kind = RT_FIELD_INT;
			f->length = 1;
			if (t->kind == TY_ENUM && copy_labels(p, t, f))
				return -1;
		} else if (t->kind == TY_ARRAY) {
			f->kind = RT_FIELD_ARRAY;
			f->length = t->length;
		} else {
			const char *ref = t->length_ref;
			unsigned int j;

			f->kind = RT_FIELD_SEQUENCE;
			if (!strncmp(ref, "event.fields.", 13))
				ref += 13;
			for (j = 0; j < i; j++)
				if (!strcmp(ev->fields[j].name, ref))
					break;
			if (j == i || ev->fields[j].kind != RT_FIELD_INT) {
				bad = "sequence '%s' must take its length from an earlier integer field";
				badname = m->name;
				continue;
			}
			f->length_field = j;
		}
	}
	ev->align = align;
	if (bad)
		return set_unsupported(ev, bad, badname);
	return 0;
}

/*
 * The fields an event starts with that are integers or arrays of them
 * have one layout: each field's alignment divides the payload's (the
 * largest of them), so from the payload's start each is where it is in
 * any packet.  Up to the first that no packet holds: the reader walks
 * that one, and says it runs past.
 */
static void fixed_layout(struct rt_event_desc *ev)
{
	uint64_t pos = 0;
	unsigned int i;

	if (ev->unsupported || !ev->align)
		return;
	for (i = 0; i < ev->nr_fields; i++) {
		struct rt_field_desc *f = &ev->fields[i];
		unsigned int size = f->bits / 8;
		uint64_t at;

		if ((f->kind != RT_FIELD_INT && f->kind != RT_FIELD_ARRAY) ||
		    !f->align || ev->align % f->align || !size)
			break;
		at = (pos + f->align - 1) / f->align * f->align;
		if (at > RINGTRACE_MAX_SUBBUF_SIZE ||
		    f->length > (RINGTRACE_MAX_SUBBUF_SIZE - at) / size)
			break;
		f->offset = at;
		pos = at + f->length * size;
	}
	ev->nr_fixed = i;
	ev->fixed_size = pos;
}

/*
 * rt_metadata_event()'s table, by id, when the ids are few enough for one
 * (ringtrace.ko numbers its events from 0): else it searches.
 */
static int index_ids(struct parser *p, struct rt_metadata *md)
{
	uint32_t n;

	if (!md->nr_events)
		return 0;
	n = md->events[md->nr_events - 1].id + 1;
	if (!n || n > 4 * md->nr_events + 1024)
		return 0;
	md->by_id = calloc(n, sizeof(*md->by_id));
	if (!md->by_id)
		return rt_fail(p->err, "%s: out of memory", p->name);
	md->nr_by_id = n;
	for (unsigned int i = 0; i < md->nr_events; i++)
		md->by_id[md->events[i].id] = &md->events[i];
	return 0;
}

static int event_cmp(const void *a, const void *b)
{
	const struct rt_event_desc *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int convert(struct parser *p, struct rt_metadata *md)
{
	const struct block *trace = NULL, *stream = NULL;
	const struct item *it;
	struct clock clocks[8];
	unsigned int nr_clocks = 0, nr_events = 0, bit = 0;
	const struct ty *ctx;
	const char *clock_name = NULL;

	for (const struct block *b = p->blocks; b; b = b->next) {
		if (!strcmp(b->kind, "trace")) {
			if (trace)
				return perr(p, b->line, "more than one trace block");
			trace = b;
		} else if (!strcmp(b->kind, "stream")) {
			if (stream)
				return perr(p, b->line,
					    "more than one stream class: ringtrace writes one");
			stream = b;
		} else if (!strcmp(b->kind, "event")) {
			nr_events++;
		} else if (!strcmp(b->kind, "clock")) {
			struct clock *c = &clocks[nr_clocks];

			if (nr_clocks == ARRAY_SIZE(clocks))
				return perr(p, b->line, "too many clocks");
			memset(c, 0, sizeof(*c));
			c->freq = 1000000000;
			it = find_item(b, "name");
			if (!it || (it->v.kind != V_STR && it->v.kind != V_PATH))
				return perr(p, b->line, "clock without a name");
			c->name = it->v.s;
			it = find_item(b, "freq");
			if (it && (val_uint(p, it->line, &it->v, UINT64_MAX, &c->freq) ||
				   !c->freq))
				return c->freq ? -1 : perr(p, it->line, "clock freq is 0");
			it = find_item(b, "offset_s");
			if (it && val_int(p, it->line, &it->v, &c->offset_s))
				return -1;
			it = find_item(b, "offset");
			if (it && val_int(p, it->line, &it->v, &c->offset))
				return -1;
			nr_clocks++;
		} else if (!strcmp(b->kind, "env")) {
			for (it = b->items; it; it = it->next) {
				struct rt_env *e;

				if (it->ty)
					continue;
				e = realloc(md->env, (md->nr_env + 1) * sizeof(*e));
				if (!e)
					return rt_fail(p->err, "%s: out of memory", p->name);
				md->env = e;
				e += md->nr_env;
				e->key = strdup(it->key);
				e->value = val_text(&it->v);
				e->is_string = it->v.kind == V_STR;
				md->nr_env++;
				if (!e->key || !e->value)
					return rt_fail(p->err, "%s: out of memory", p->name);
			}
		}
	}

	if (!trace)
		return perr(p, 0, "no trace block");
	it = find_item(trace, "major");
	if (it && it->v.kind == V_NUM && it->v.num == 1)
		it = find_item(trace, "minor");
	else
		it = NULL;
	if (!it || it->v.kind != V_NUM || it->v.num != 8)
		return perr(p, trace->line, "trace must declare major = 1; minor = 8;");
	it = find_item(trace, "byte_order");
	if (!it || it->v.kind != V_PATH || strcmp(it->v.s, "le"))
		return perr(p, trace->line, "trace byte_order must be le");
	it = find_item(trace, "uuid");
	if (it) {
		if (it->v.kind != V_STR || parse_uuid(it->v.s, md->uuid))
			return perr(p, it->line, "malformed trace uuid");
		md->has_uuid = true;
	}
	it = find_item(trace, "packet.header");
	if (check_fixed(p, it ? it->ty : NULL, "trace packet.header",
			packet_header, 4, &bit))
		return -1;

	if (!stream)
		return perr(p, 0, "no stream block");
	it = find_item(stream, "id");
	md->stream_id = 0;
	if (it && val_uint(p, it->line, &it->v, UINT32_MAX, &md->stream_id))
		return -1;
	if (find_item(stream, "event.context"))
		return perr(p, stream->line, "stream event.context is not supported");
	it = find_item(stream, "packet.context");
	ctx = it ? it->ty : NULL;
	if (check_fixed(p, ctx, "stream packet.context", packet_context, 8, &bit))
		return -1;
	it = find_item(stream, "event.header");
	if (check_event_header(p, it ? it->ty : NULL, &md->untimed))
		return -1;

	/* The clock that timestamp_begin counts in. */
	clock_name = ctx->members->ty->map;
	for (unsigned int i = 0; i < nr_clocks; i++) {
		if (clock_name ? strcmp(clocks[i].name, clock_name) : nr_clocks != 1)
			continue;
		md->clock_name = strdup(clocks[i].name);
		md->clock_freq = clocks[i].freq;
		md->clock_offset_s = clocks[i].offset_s;
		md->clock_offset = clocks[i].offset;
		if (!md->clock_name)
			return rt_fail(p->err, "%s: out of memory", p->name);
	}
	if (!md->clock_name) {
		if (clock_name)
			return perr(p, 0, "no clock named '%s'", clock_name);
		md->clock_freq = 1000000000;
	}

	md->events = calloc(nr_events ? nr_events : 1, sizeof(*md->events));
	if (!md->events)
		return rt_fail(p->err, "%s: out of memory", p->name);
	for (const struct block *b = p->blocks; b; b = b->next) {
		struct rt_event_desc *ev;
		uint64_t id = 0, sid = 0;

		if (strcmp(b->kind, "event"))
			continue;
		ev = &md->events[md->nr_events++];
		it = find_item(b, "name");
		if (!it || (it->v.kind != V_STR && it->v.kind != V_PATH))
			return perr(p, b->line, "event without a name");
		ev->name = strdup(it->v.s);
		if (!ev->name)
			return rt_fail(p->err, "%s: out of memory", p->name);
		it = find_item(b, "id");
		if (!it)
			return perr(p, b->line, "event '%s' without an id", ev->name);
		if (val_uint(p, it->line, &it->v, UINT32_MAX, &id))
			return -1;
		ev->id = id;
		it = find_item(b, "stream_id");
		if (it && (val_uint(p, it->line, &it->v, UINT64_MAX, &sid) ||
			   sid != md->stream_id))
			return perr(p, it->line, "event '%s' is in an unknown stream",
				    ev->name);
		it = find_item(b, "fields");
		if (it && !it->ty)
			return perr(p, it->line, "event '%s': fields must be a type",
				    ev->name);
		if (convert_fields(p, it ? it->ty : NULL, ev))
			return -1;
		if (find_item(b, "context") &&
		    set_unsupported(ev, "event context is not supported%s", ""))
			return rt_fail(p->err, "%s: out of memory", p->name);
		if (ev->nr_fields > md->max_fields)
			md->max_fields = ev->nr_fields;
	}
	qsort(md->events, md->nr_events, sizeof(*md->events), event_cmp);
	for (unsigned int i = 1; i < md->nr_events; i++)
		if (md->events[i].id == md->events[i - 1].id)
			return perr(p, 0, "events '%s' and '%s' share id %u",
				    md->events[i - 1].name, md->events[i].name,
				    md->events[i].id);
	for (unsigned int i = 0; i < md->nr_events; i++)
		fixed_layout(&md->events[i]);
	return index_ids(p, md);
}

/* ---- API ------------------------------------------------------------------- */

void rt_metadata_free(struct rt_metadata *md)
{
	if (!md)
		return;
	for (unsigned int i = 0; i < md->nr_events; i++) {
		struct rt_event_desc *ev = &md->events[i];

		for (unsigned int j = 0; j < ev->nr_fields; j++) {
			struct rt_field_desc *f = &ev->fields[j];

			for (unsigned int k = 0; k < f->nr_labels; k++)
				free(f->labels[k].label);
			free(f->labels);
			free(f->name);
		}
		free(ev->fields);
		free(ev->name);
		free(ev->unsupported);
	}
	free(md->events);
	free(md->by_id);
	for (unsigned int i = 0; i < md->nr_env; i++) {
		free(md->env[i].key);
		free(md->env[i].value);
	}
	free(md->env);
	free(md->clock_name);
	free(md);
}

int rt_metadata_parse(const char *text, size_t len, const char *name,
		      struct rt_metadata **out, struct rt_error *err)
{
	static const char sig[] = "/* CTF 1.8";
	struct parser p = { .name = name, .err = err };
	struct rt_metadata *md;
	int ret = -1;

	*out = NULL;
	p.blocks_tail = &p.blocks;
	if (len >= 4 && rt_get_le((const uint8_t *)text, 4) == 0x75D11D57)
		return rt_fail(err, "%s: packetized metadata is not supported", name);
	if (len < sizeof(sig) - 1 || memcmp(text, sig, sizeof(sig) - 1))
		return rt_fail(err, "%s: does not start with \"/* CTF 1.8\"", name);
	md = calloc(1, sizeof(*md));
	if (!md)
		return rt_fail(err, "%s: out of memory", name);
	if (!lex(&p, text, len) && !parse_top(&p) && !convert(&p, md)) {
		*out = md;
		md = NULL;
		ret = 0;
	}
	rt_metadata_free(md);
	while (p.chunks) {
		struct chunk *c = p.chunks;

		p.chunks = c->next;
		free(c);
	}
	free(p.toks);
	return ret;
}

int rt_metadata_load(const char *path, struct rt_metadata **out,
		     struct rt_error *err)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rt_fail(err, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > MAX_METADATA_SIZE) {
		ret = rt_fail(err, "%s: %s", path,
			      !S_ISREG(st.st_mode) ? "not a regular file" :
			      st.st_size > MAX_METADATA_SIZE ? "too large" :
			      strerror(errno));
		close(fd);
		return ret;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return rt_fail(err, "%s: out of memory", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = rt_fail(err, "%s: %s", path,
				      r ? strerror(errno) : "file shrank while reading");
			free(buf);
			close(fd);
			return ret;
		}
		got += r;
	}
	close(fd);
	ret = rt_metadata_parse(buf, got, path, out, err);
	free(buf);
	return ret;
}

const struct rt_event_desc *rt_metadata_event(const struct rt_metadata *md,
					      uint32_t id)
{
	unsigned int lo = 0, hi = md->nr_events;

	if (md->by_id)
		return id < md->nr_by_id ? md->by_id[id] : NULL;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (md->events[mid].id == id)
			return &md->events[mid];
		if (md->events[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool rt_field_fits(const struct rt_field_desc *f, enum rt_field_use use)
{
	switch (use) {
	case RT_USE_INT:
		return f->kind == RT_FIELD_INT;
	case RT_USE_INTS:
		return (f->kind == RT_FIELD_ARRAY || f->kind == RT_FIELD_SEQUENCE) &&
		       !f->is_text;
	case RT_USE_TEXT:
		return f->is_text;
	}
	return false;
}

int rt_event_field(const struct rt_event_desc *ev, const char *name,
		   enum rt_field_use use)
{
	for (unsigned int i = 0; i < ev->nr_fields; i++) {
		const struct rt_field_desc *f = &ev->fields[i];

		if (strcmp(f->name, name))
			continue;
		return rt_field_fits(f, use) ? (int)i : -1;
	}
	return -1;
}

const char *rt_metadata_env(const struct rt_metadata *md, const char *key)
{
	for (unsigned int i = 0; i < md->nr_env; i++)
		if (!strcmp(md->env[i].key, key))
			return md->env[i].value;
	return NULL;
}
