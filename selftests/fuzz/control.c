// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: the control files -- random and boundary values, huge, empty,
 * unterminated and faulting writes from two writers at once, a checker
 * that makes refused writes and reads everything back, geometry and mode
 * changes (with and without buffer files open), and the event switches.
 *
 * Every write is judged by fz_ctl_model(), which computes from the bytes,
 * the pointer and the count what the ABI says the write must return:
 *
 *   - files without a write method (metadata, stats, ...): EINVAL
 *   - an address range outside user space: EFAULT (access_ok, in the VFS)
 *   - count 0 or too long for the file: EINVAL, before anything is read
 *   - bytes that cannot be read: EFAULT
 *   - then the word: the bytes up to the first NUL with trailing blanks
 *     removed (leading blanks stay, and are refused like any bad word);
 *     set_event and set_event_pid split their text at space, tab and
 *     newline.  Numbers follow kstrtoul(base 0) / kstrtoint(base 10).
 *
 * A write the input makes invalid must fail that way and change nothing
 * (read back in a solo window); a valid one may still meet EBUSY/ENOMEM
 * where the state of the moment allows it, and what it set reads back.
 */
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FZ_WORD_LIMIT		32	/* rtr_read_word() buffer of control.c */
#define FZ_DEPTH_LIMIT		12	/* the same, events_ctl.c's stack_depth */
#define FZ_BIT_LIMIT		4	/* the same, events_ctl.c's bits */
#define FZ_MODE_LIMIT		8	/* the same, events_ctl.c's ustack_mode */
#define FZ_UINT_LIMIT		12	/* the same, ustack_size and sample_hz */
#define FZ_TEXT_LIMIT		4096	/* set_event, set_event_pid */
#define FZ_PID_MAX		256	/* RTR_PID_FILTER_MAX */
#define FZ_PID_LIMIT		4194304	/* PID_MAX_LIMIT on 64-bit */
/* Geometry the writers pick when it should work: at most 16 MiB per CPU. */
#define FZ_SMALL_SUBBUF_MAX	(256U << 10)
#define FZ_SMALL_NUM_MAX	64

enum fz_ctl_kind {
	K_TRACING, K_MODE, K_SUBBUF, K_NUM, K_CLEAR, K_PIDS, K_FORK,
	K_SET_EVENT, K_ENABLE_ALL, K_ENABLE_ONE, K_SET_STACK, K_STACK_DEPTH,
	K_SET_USTACK, K_USTACK_DEPTH, K_USTACK_MODE, K_USTACK_SIZE,
	K_SAMPLE_HZ, K_MMAP_EVENTS, K_MMAP_DUMP, K_RO, K_NR_KINDS
};

struct fz_ctl {
	char rel[80];
	enum fz_ctl_kind kind;
	int event;			/* K_ENABLE_ONE and ids: fz.events index */
};

#define FZ_MAX_CTLS		(20 + 2 * FZ_MAX_EVENTS)
static struct fz_ctl fz_ctls[FZ_MAX_CTLS];
static unsigned int fz_nctls;
static pthread_once_t fz_ctls_once = PTHREAD_ONCE_INIT;

static void fz_ctls_add(const char *rel, enum fz_ctl_kind kind, int event)
{
	struct fz_ctl *c = &fz_ctls[fz_nctls++];

	snprintf(c->rel, sizeof(c->rel), "%s", rel);
	c->kind = kind;
	c->event = event;
}

static void fz_ctls_init(void)
{
	static const struct {
		const char *rel;
		enum fz_ctl_kind kind;
	} fixed[] = {
		{ "tracing_on", K_TRACING }, { "mode", K_MODE },
		{ "subbuf_size", K_SUBBUF }, { "num_subbufs", K_NUM },
		{ "clear", K_CLEAR }, { "set_event_pid", K_PIDS },
		{ "event_fork", K_FORK }, { "set_event", K_SET_EVENT },
		{ "events/enable", K_ENABLE_ALL },
		{ "set_event_stack", K_SET_STACK },
		{ "stack_depth", K_STACK_DEPTH }, { "metadata", K_RO },
		{ "set_event_ustack", K_SET_USTACK },
		{ "ustack_depth", K_USTACK_DEPTH }, { "ustack_stats", K_RO },
		{ "ustack_mode", K_USTACK_MODE },
		{ "ustack_size", K_USTACK_SIZE },
		{ "sample_hz", K_SAMPLE_HZ }, { "sample_stats", K_RO },
		{ "mmap_events", K_MMAP_EVENTS }, { "mmap_dump", K_MMAP_DUMP },
		{ "mmap_stats", K_RO },
		{ "stats", K_RO }, { "available_events", K_RO },
	};
	char rel[80];
	unsigned int i;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		fz_ctls_add(fixed[i].rel, fixed[i].kind, -1);
	for (i = 0; i < fz.nevents; i++) {
		snprintf(rel, sizeof(rel), "events/%s/enable", fz.events[i]);
		fz_ctls_add(rel, K_ENABLE_ONE, i);
		snprintf(rel, sizeof(rel), "events/%s/id", fz.events[i]);
		fz_ctls_add(rel, K_RO, i);
	}
}

static const struct fz_ctl *fz_ctl_find(enum fz_ctl_kind kind)
{
	unsigned int i;

	for (i = 0; i < fz_nctls; i++)
		if (fz_ctls[i].kind == kind)
			return &fz_ctls[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The model                                                           */
/* ------------------------------------------------------------------ */

/* The kernel's isspace(): lib/ctype.c marks Latin-1 NBSP (0xa0) too. */
static bool fz_kspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0;
}

/* What rtr_read_word() leaves: up to the first NUL, trailing blanks cut. */
static void fz_word(const uint8_t *b, size_t count, char *word, size_t size)
{
	size_t n = strnlen((const char *)b, count);

	if (n >= size)
		n = size - 1;
	memcpy(word, b, n);
	word[n] = '\0';
	while (n && fz_kspace(word[n - 1]))
		word[--n] = '\0';
}

static int fz_digit(char c, unsigned int base)
{
	int v;

	if (c >= '0' && c <= '9')
		v = c - '0';
	else if (c >= 'a' && c <= 'f')
		v = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		v = c - 'A' + 10;
	else
		return -1;
	return v < (int)base ? v : -1;
}

/* kstrtoull(s, base, ...) on a word: false for anything it refuses. */
static bool fz_kstrtoull(const char *s, unsigned int base, uint64_t *val)
{
	uint64_t v = 0;
	int d;

	if (*s == '+')
		s++;
	if (!base) {
		if (s[0] == '0' && (s[1] | 0x20) == 'x' && fz_digit(s[2], 16) >= 0)
			base = 16;
		else
			base = s[0] == '0' ? 8 : 10;
	}
	if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	if (!*s)
		return false;
	for (; *s; s++) {
		d = fz_digit(*s, base);
		if (d < 0 || v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*val = v;
	return true;
}

/* kstrtoint(s, 10, ...) */
static bool fz_kstrtoint(const char *s, int *val)
{
	uint64_t v;

	if (*s == '-') {
		if (!fz_kstrtoull(s + 1, 10, &v) || v > (uint64_t)INT32_MAX + 1)
			return false;
		*val = (int)-(int64_t)v;
		return true;
	}
	if (!fz_kstrtoull(s, 10, &v) || v > INT32_MAX)
		return false;
	*val = (int)v;
	return true;
}

static bool fz_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* What a write must do, and what it would change. */
struct fz_expect {
	long ret;			/* decided by the input alone: 0 or -errno */
	bool busy_ok, nomem_ok;		/* valid, but the moment may refuse */
	bool append_ok;			/* EINVAL possible: the merged filter */
	bool geom_ok;			/* EINVAL possible: above subbuf_size / 4 */
	int alt_err;			/* valid, but this kernel may refuse */
	uint64_t value;			/* K_SUBBUF, K_NUM, bits, mode, depth */
	uint64_t ev_mask, ev_on;	/* K_SET_EVENT, K_SET_[U]STACK, K_ENABLE_* */
	int pids[FZ_PID_MAX];
	unsigned int npids;
	bool patches_text;		/* would attach a probe or timers */
};

static int fz_event_lookup(const char *name)
{
	unsigned int i;

	for (i = 0; i < fz.nevents; i++)
		if (!strcmp(fz.events[i], name))
			return i;
	return -1;
}

static uint64_t fz_all_events(void)
{
	return fz.nevents >= 64 ? ~0ULL : (1ULL << fz.nevents) - 1;
}

static uint64_t fz_tp_events(void)
{
	uint64_t m = 0;
	unsigned int i;

	for (i = 0; i < fz.nevents; i++)
		if (fz.event_has_tp[i])
			m |= 1ULL << i;
	return m;
}

static int fz_pid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static long fz_model_text(const struct fz_ctl *c, const char *text,
			  struct fz_expect *e)
{
	char *copy = strdup(text), *cur = copy, *w;
	long ret = 0;
	int i, pid;

	while ((w = strsep(&cur, " \t\n"))) {
		if (!*w)
			continue;
		if (c->kind == K_PIDS) {
			if (!fz_kstrtoint(w, &pid) || pid < 0 ||
			    pid >= FZ_PID_LIMIT || e->npids == FZ_PID_MAX) {
				ret = -EINVAL;
				break;
			}
			e->pids[e->npids++] = pid;
			continue;
		}
		i = fz_event_lookup(*w == '!' ? w + 1 : w);
		if (i < 0) {
			ret = -EINVAL;
			break;
		}
		e->ev_mask |= 1ULL << i;
		if (*w == '!')
			e->ev_on &= ~(1ULL << i);
		else
			e->ev_on |= 1ULL << i;
	}
	free(copy);
	if (!ret && c->kind != K_PIDS && !e->ev_mask)
		ret = -EINVAL;
	/* Only tracepoints' events carry a stack (rtr_probe_can_stack()). */
	if (!ret && (c->kind == K_SET_STACK || c->kind == K_SET_USTACK) &&
	    (e->ev_on & e->ev_mask & ~fz_tp_events()))
		ret = -EINVAL;
	if (!ret && c->kind == K_PIDS)
		qsort(e->pids, e->npids, sizeof(int), fz_pid_cmp);
	return ret;
}

/* The largest depth stack_depth or ustack_depth takes. */
static uint64_t fz_depth_max(enum fz_ctl_kind kind)
{
	return kind == K_USTACK_DEPTH ? RINGTRACE_USTACK_MAX_DEPTH :
	       RINGTRACE_STACK_MAX_DEPTH;
}

/* The kernel's buffer for a write to a file of @kind: count < this. */
static size_t fz_ctl_limit(enum fz_ctl_kind kind)
{
	switch (kind) {
	case K_PIDS:
	case K_SET_EVENT:
	case K_SET_STACK:
	case K_SET_USTACK:
		return FZ_TEXT_LIMIT;
	case K_FORK:
	case K_ENABLE_ALL:
	case K_ENABLE_ONE:
	case K_MMAP_EVENTS:
	case K_MMAP_DUMP:
		return FZ_BIT_LIMIT;
	case K_STACK_DEPTH:
	case K_USTACK_DEPTH:
		return FZ_DEPTH_LIMIT;
	case K_USTACK_MODE:
		return FZ_MODE_LIMIT;
	case K_USTACK_SIZE:
	case K_SAMPLE_HZ:
		return FZ_UINT_LIMIT;
	default:
		return FZ_WORD_LIMIT;
	}
}

/*
 * The verdict on write(fd of @c, @p, @count) where @b holds the bytes
 * (at least min(count, readable)).
 */
static void fz_ctl_model(const struct fz_ctl *c, const struct fz_ptr *p,
			 const uint8_t *b, size_t count, bool append,
			 struct fz_expect *e)
{
	size_t limit = fz_ctl_limit(c->kind);
	char word[FZ_TEXT_LIMIT + 1];
	bool text = limit == FZ_TEXT_LIMIT;

	memset(e, 0, sizeof(*e));
	if (c->kind == K_RO) {
		e->ret = -EINVAL;
		return;
	}
	if (p->not_user || (uintptr_t)p->p + count > FZ_USER_TOP) {
		e->ret = -EFAULT;
		return;
	}
	if ((!count && !text) || count >= limit) {
		e->ret = -EINVAL;
		return;
	}
	if (p->readable < count) {
		e->ret = -EFAULT;
		return;
	}
	if (text) {
		size_t n = strnlen((const char *)b, count);

		memcpy(word, b, n);
		word[n] = '\0';
		e->ret = fz_model_text(c, word, e);
		if (!e->ret && c->kind == K_PIDS && append)
			e->append_ok = true;
		if (!e->ret && c->kind == K_SET_EVENT)
			e->patches_text = e->ev_on & e->ev_mask & fz_tp_events();
		return;
	}
	fz_word(b, count, word, sizeof(word));
	switch (c->kind) {
	case K_TRACING:
	case K_CLEAR:
	case K_FORK:
	case K_ENABLE_ALL:
	case K_ENABLE_ONE:
	case K_MMAP_EVENTS:
	case K_MMAP_DUMP:
		if (strcmp(word, "0") && strcmp(word, "1")) {
			e->ret = -EINVAL;
			break;
		}
		e->value = word[0] == '1';
		if (c->kind == K_MMAP_EVENTS) {
			/*
			 * 1 registers a kprobe (text patched); a kernel
			 * without kprobes says EOPNOTSUPP.
			 */
			e->patches_text = e->value;
			e->alt_err = -EOPNOTSUPP;
			e->nomem_ok = true;
		} else if (c->kind == K_CLEAR) {
			/* Clear reallocates the buffers: ENOMEM as for geometry. */
			e->ret = e->value ? 0 : -EINVAL;
			e->busy_ok = e->nomem_ok = true;
		} else if (c->kind == K_FORK) {
			e->patches_text = e->value;
		} else if (c->kind == K_ENABLE_ALL) {
			e->ev_mask = fz_all_events();
			e->ev_on = e->value ? e->ev_mask : 0;
			e->patches_text = e->value;
		} else if (c->kind == K_ENABLE_ONE) {
			e->ev_mask = 1ULL << c->event;
			e->ev_on = e->value ? e->ev_mask : 0;
			e->patches_text = e->value &&
					  fz.event_has_tp[c->event];
		}
		break;
	case K_MODE:
		if (!strcmp(word, "discard") || !strcmp(word, "overwrite")) {
			e->value = word[0] == 'o';
			e->busy_ok = true;
		} else {
			e->ret = -EINVAL;
		}
		break;
	case K_SUBBUF:
		if (!fz_kstrtoull(word, 0, &e->value) || !fz_pow2(e->value) ||
		    e->value < fz.page || e->value > RINGTRACE_MAX_SUBBUF_SIZE) {
			e->ret = -EINVAL;
			break;
		}
		e->busy_ok = e->nomem_ok = true;
		break;
	case K_NUM:
		if (!fz_kstrtoull(word, 0, &e->value) || !fz_pow2(e->value) ||
		    e->value < RINGTRACE_MIN_SUBBUFS ||
		    e->value > RINGTRACE_MAX_SUBBUFS) {
			e->ret = -EINVAL;
			break;
		}
		e->busy_ok = e->nomem_ok = true;
		break;
	case K_STACK_DEPTH:
	case K_USTACK_DEPTH:
		/* kstrtouint(base 10), then 1..the file's maximum. */
		if (!fz_kstrtoull(word, 10, &e->value) ||
		    !e->value || e->value > fz_depth_max(c->kind))
			e->ret = -EINVAL;
		break;
	case K_USTACK_MODE:
		/* The first "copy" allocates the copies' scratch. */
		if (!strcmp(word, "copy") || !strcmp(word, "fp")) {
			e->value = word[0] == 'c';
			e->nomem_ok = e->value;
		} else {
			e->ret = -EINVAL;
		}
		break;
	case K_USTACK_SIZE:
		/*
		 * kstrtouint(base 10), COPY_MIN..COPY_MAX, and at most a
		 * quarter of subbuf_size, which another thread may change:
		 * judged exactly in a solo window (fz_ctl_write_judged()).
		 */
		if (!fz_kstrtoull(word, 10, &e->value) ||
		    e->value < RINGTRACE_USTACK_COPY_MIN ||
		    e->value > RINGTRACE_USTACK_COPY_MAX)
			e->ret = -EINVAL;
		else
			e->geom_ok = e->value > fz.page / 4;
		break;
	case K_SAMPLE_HZ:
		/*
		 * kstrtouint(base 10), 0..MAX_HZ.  A rate starts hrtimers
		 * under a new cpuhp state (none left: ENOSPC).
		 */
		if (!fz_kstrtoull(word, 10, &e->value) ||
		    e->value > RINGTRACE_SAMPLE_MAX_HZ) {
			e->ret = -EINVAL;
			break;
		}
		e->patches_text = e->value;
		e->alt_err = -ENOSPC;
		e->nomem_ok = e->value;
		break;
	default:
		e->ret = -EINVAL;
	}
}

/* ------------------------------------------------------------------ */
/* Values                                                              */
/* ------------------------------------------------------------------ */

static size_t fz_put(uint8_t *b, size_t cap, const char *s)
{
	size_t n = strlen(s);

	if (n > cap)
		n = cap;
	memcpy(b, s, n);
	return n;
}

/* Random bytes, mostly printable, sometimes anything. */
static size_t fz_junk(struct fz_rng *r, uint8_t *b, size_t n)
{
	static const char set[] = "0123456789abcdefxX+-! \t\n\rsodiwvrte_";
	bool any = fz_chance(r, 20);
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = any ? (uint8_t)fz_next(r) : (uint8_t)fz_pick(r, set);
	return n;
}

static size_t fz_gen_number(struct fz_rng *r, uint64_t v, uint8_t *b,
			    size_t cap)
{
	char s[96];

	switch (fz_below(r, 8)) {
	case 0:
		snprintf(s, sizeof(s), "%#" PRIx64, v);
		break;
	case 1:
		snprintf(s, sizeof(s), "0%" PRIo64, v);
		break;
	case 2:
		snprintf(s, sizeof(s), "+%" PRIu64 "\n", v);
		break;
	case 3:
		snprintf(s, sizeof(s), "-%" PRIu64, v);
		break;
	case 4:
		snprintf(s, sizeof(s), " %" PRIu64, v);
		break;
	default:
		snprintf(s, sizeof(s), "%" PRIu64 "%s", v,
			 fz_chance(r, 50) ? "\n" : "");
	}
	return fz_put(b, cap, s);
}

static uint64_t fz_pick_subbuf(struct fz_rng *r, bool small)
{
	static const uint64_t odd[] = {
		0, 1, 2048, 4095, 4097, 65535, 65537, 3 << 12,
		RINGTRACE_MAX_SUBBUF_SIZE, 2ULL * RINGTRACE_MAX_SUBBUF_SIZE,
		1ULL << 32, 1ULL << 63, UINT64_MAX,
	};

	if (small || fz_chance(r, 70))
		return (uint64_t)fz.page << fz_below(r, 7);	/* 4 K .. 256 K */
	return fz_pick(r, odd);
}

static uint64_t fz_pick_num(struct fz_rng *r, bool small)
{
	static const uint64_t odd[] = {
		0, 1, 3, 4096, 4097, 8192, 6, (1ULL << 32) + 2, UINT64_MAX,
	};

	if (small || fz_chance(r, 70))
		return 2ULL << fz_below(r, 6);			/* 2 .. 64 */
	return fz_pick(r, odd);
}

/* A pid list: valid, too long, negative, huge, junk. */
static size_t fz_gen_pids(struct fz_rng *r, uint8_t *b, size_t cap)
{
	size_t len = 0, n, i;
	char s[32];

	n = fz_chance(r, 10) ? fz_range(r, 250, 300) : fz_below(r, 6);
	for (i = 0; i < n && len + 16 < cap; i++) {
		switch (fz_below(r, 12)) {
		case 0:
			snprintf(s, sizeof(s), "-%u", (unsigned int)fz_below(r, 9));
			break;
		case 1:
			snprintf(s, sizeof(s), "%u", FZ_PID_LIMIT -
				 (unsigned int)fz_below(r, 2));
			break;
		case 2:
			snprintf(s, sizeof(s), "99999999999");
			break;
		case 3:
			snprintf(s, sizeof(s), "%ux", (unsigned int)fz_below(r, 99));
			break;
		case 4:
			snprintf(s, sizeof(s), "%d", fz.own_pid);
			break;
		default:
			snprintf(s, sizeof(s), "%u", (unsigned int)fz_below(r, 40000));
		}
		len += fz_put(b + len, cap - len, s);
		b[len++] = fz_pick(r, " \t\n");
	}
	return len;
}

/*
 * stack_depth, ustack_depth (@kind): the range, its edges, and what
 * kstrtouint(base 10) refuses (a sign, hex, overflow).
 */
static size_t fz_gen_depth(struct fz_rng *r, enum fz_ctl_kind kind,
			   uint8_t *b, size_t cap)
{
	static const char *const odd[] = {
		"0", "1", "64", "65", "127", "128", "-1", "+8", "0x10", "010",
		"4294967297", "deep", "8 8", " 8", "8\n", "",
	};
	char s[16];

	if (fz_chance(r, 60)) {
		snprintf(s, sizeof(s), "%u%s",
			 (unsigned int)fz_range(r, 1, fz_depth_max(kind)),
			 fz_chance(r, 50) ? "\n" : "");
		return fz_put(b, cap, s);
	}
	return fz_put(b, cap, fz_pick(r, odd));
}

/*
 * ustack_size (@kind K_USTACK_SIZE) or sample_hz: the range, its edges
 * (and subbuf_size / 4's), far beyond; fz_gen_number() adds the forms
 * kstrtouint(base 10) refuses.  Rates stay low mostly: a 2-CPU TCG
 * guest runs the fuzzer too.
 */
static size_t fz_gen_uint(struct fz_rng *r, enum fz_ctl_kind kind,
			  uint8_t *b, size_t cap)
{
	static const uint64_t size_odd[] = {
		0, 511, 512, 1024, 1025, 4096, 8192, 16384, 16385, 32768,
		32769, 1ULL << 32, (1ULL << 32) + 512,
	}, hz_odd[] = {
		0, 1, 999, 10000, 10001, 1ULL << 32, (1ULL << 32) + 1,
	};
	uint64_t v;

	if (kind == K_USTACK_SIZE)
		v = fz_chance(r, 50) ? fz_range(r, RINGTRACE_USTACK_COPY_MIN,
						RINGTRACE_USTACK_COPY_MAX) :
				       fz_pick(r, size_odd);
	else
		v = fz_chance(r, 40) ? 0 : fz_chance(r, 70) ?
		    fz_range(r, 1, 200) : fz_pick(r, hz_odd);
	return fz_gen_number(r, v, b, cap);
}

/* A set_event text: names, negations, unknown names. */
static size_t fz_gen_events(struct fz_rng *r, uint8_t *b, size_t cap)
{
	size_t len = 0, n = fz_range(r, 1, 5), i;
	unsigned int e;

	for (i = 0; i < n && len + 64 < cap; i++) {
		e = fz_below(r, fz.nevents);
		if (fz_chance(r, 40))
			b[len++] = '!';
		if (fz_chance(r, 10))
			len += fz_put(b + len, cap - len, "no_such_event");
		else
			len += fz_put(b + len, cap - len, fz.events[e]);
		if (fz_chance(r, 5))
			b[len++] = 'X';
		b[len++] = fz_pick(r, " \t\n");
	}
	return len;
}

/*
 * Bytes for a write to @c: the usual values, their near misses, and junk.
 * Returns the count to write (it may exceed what @b holds: the model and
 * the pointer decide what the kernel can read).
 */
static size_t fz_gen_value(struct fz_thread *t, const struct fz_ctl *c,
			   uint8_t *b, size_t cap)
{
	static const char *const bits[] = {
		"0", "1", "0\n", "1\n", "1 \n", " 1", "2", "-1", "01", "10",
		"1\n\n", "x", "0x1", "\n", "on", "1\t",
	};
	static const char *const modes[] = {
		"discard", "overwrite", "discard\n", "overwrite\n",
		" discard", "Discard", "discar", "overwritee", "overwrite \t\n",
		"flight", "",
	}, *const umodes[] = {
		"fp", "copy", "fp\n", "copy\n", " fp", "FP", "cop", "copyy",
		"copy \t\n", "frame", "fp copy", "copy\n\n\n\n", "",
	};
	struct fz_rng *r = &t->rng;
	size_t len;

	/* Sizes at and around every limit, and far beyond. */
	switch (fz_below(r, 16)) {
	case 0:
		return 0;
	case 1:
		return fz_junk(r, b, fz_range(r, 1, 40));
	case 2:
		memset(b, fz_chance(r, 50) ? ' ' : '1', cap);
		return fz_pick(r, ((const size_t[]){ 3, 4, 5, 31, 32, 33,
						      4095, 4096, 4097 }));
	case 3:
		/* Long counts the kernel must refuse before reading. */
		return fz_pick(r, ((const size_t[]){ 1U << 20, 1U << 30 }));
	default:
		break;
	}
	switch (c->kind) {
	case K_TRACING:
	case K_CLEAR:
	case K_FORK:
	case K_ENABLE_ALL:
	case K_ENABLE_ONE:
		len = fz_put(b, cap, fz_pick(r, bits));
		break;
	case K_MODE:
		len = fz_put(b, cap, fz_pick(r, modes));
		break;
	case K_SUBBUF:
		len = fz_gen_number(r, fz_pick_subbuf(r, false), b, cap);
		break;
	case K_NUM:
		len = fz_gen_number(r, fz_pick_num(r, false), b, cap);
		break;
	case K_PIDS:
		len = fz_gen_pids(r, b, cap);
		break;
	case K_SET_EVENT:
	case K_SET_STACK:
	case K_SET_USTACK:
		len = fz_gen_events(r, b, cap);
		break;
	case K_STACK_DEPTH:
	case K_USTACK_DEPTH:
		len = fz_gen_depth(r, c->kind, b, cap);
		break;
	case K_USTACK_MODE:
		len = fz_put(b, cap, fz_pick(r, umodes));
		break;
	case K_USTACK_SIZE:
	case K_SAMPLE_HZ:
		len = fz_gen_uint(r, c->kind, b, cap);
		break;
	default:
		len = fz_put(b, cap, fz_pick(r, bits));
	}
	/* An embedded NUL: the kernel's word ends there. */
	if (len && len < cap - 8 && fz_chance(r, 5)) {
		b[len++] = '\0';
		len += fz_put(b + len, cap - len, "junk");
	}
	return len;
}

/* A printable rendering of the first bytes, for the operation log. */
static void fz_desc_bytes(struct fz_thread *t, const uint8_t *b, size_t n)
{
	char s[48];
	size_t i, j = 0;

	for (i = 0; i < n && i < 20 && j < sizeof(s) - 5; i++) {
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\')
			s[j++] = b[i];
		else
			j += snprintf(s + j, sizeof(s) - j, "\\x%02x", b[i]);
	}
	s[j] = '\0';
	fz_desc(t, "\"%s%s\"", s, n > 20 ? "..." : "");
}

/* ------------------------------------------------------------------ */
/* Reading the state back                                              */
/* ------------------------------------------------------------------ */

/* The text of @c as a reader sees it now ("" for write-only files). */
static long fz_ctl_snapshot(const struct fz_ctl *c, char *buf, size_t size)
{
	switch (c->kind) {
	case K_CLEAR:
	case K_RO:
		buf[0] = '\0';
		return 0;
	default:
		return fz_read(false, c->rel, buf, size);
	}
}

/* Bit i set: event i is listed in @rel (set_event, set_event_stack). */
static long fz_listed_events(const char *rel, uint64_t *mask)
{
	char buf[4096], *line, *save = NULL;
	long ret = fz_read(false, rel, buf, sizeof(buf));
	int i;

	*mask = 0;
	if (ret < 0)
		return ret;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		i = fz_event_lookup(line);
		if (i < 0)
			return -EPROTO;
		*mask |= 1ULL << i;
	}
	return 0;
}

/* The file whose list a write to @c sets, or NULL. */
static const char *fz_list_file(const struct fz_ctl *c)
{
	switch (c->kind) {
	case K_SET_EVENT:
	case K_ENABLE_ALL:
		return "set_event";
	case K_SET_STACK:
		return "set_event_stack";
	case K_SET_USTACK:
		return "set_event_ustack";
	default:
		return NULL;
	}
}

/* Say why, and fail the readback (in fz_ctl_readback() only). */
#define FZ_RB(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(msg, msg_size, __VA_ARGS__);			\
		return false;						\
	}								\
} while (0)

/*
 * After a successful write: does it read back as written?  Judged by the
 * caller only if no other writer ran meanwhile.
 */
static bool fz_ctl_readback(const struct fz_ctl *c, const struct fz_expect *e,
			    bool append, uint64_t ev_before, char *msg,
			    size_t msg_size)
{
	char buf[4096], want[64], list[FZ_PID_MAX * 12 + 2];
	size_t len;
	uint64_t on;
	unsigned int i;
	long ret;

	switch (c->kind) {
	case K_TRACING:
	case K_FORK:
	case K_ENABLE_ONE:
	case K_MMAP_EVENTS:
	case K_MMAP_DUMP:
		snprintf(want, sizeof(want), "%d\n", (int)e->value);
		ret = fz_read(false, c->rel, buf, sizeof(buf));
		FZ_RB(ret >= 0 && !strcmp(buf, want),
		      "%s reads \"%.40s\" after writing %d", c->rel,
		      ret >= 0 ? buf : fz_err(ret), (int)e->value);
		break;
	case K_MODE:
		ret = fz_read(false, c->rel, buf, sizeof(buf));
		FZ_RB(ret >= 0 &&
		      !strcmp(buf, e->value ? "overwrite\n" : "discard\n"),
		      "mode reads \"%.40s\" after a successful write",
		      ret >= 0 ? buf : fz_err(ret));
		break;
	case K_USTACK_MODE:
		ret = fz_read(false, c->rel, buf, sizeof(buf));
		FZ_RB(ret >= 0 && !strcmp(buf, e->value ? "copy\n" : "fp\n"),
		      "ustack_mode reads \"%.40s\" after writing %s",
		      ret >= 0 ? buf : fz_err(ret), e->value ? "copy" : "fp");
		break;
	case K_SUBBUF:
	case K_NUM:
	case K_STACK_DEPTH:
	case K_USTACK_DEPTH:
	case K_USTACK_SIZE:
	case K_SAMPLE_HZ:
		ret = fz_read_num(false, c->rel);
		FZ_RB(ret == (long)e->value,
		      "%s reads %ld after writing %" PRIu64, c->rel, ret,
		      e->value);
		break;
	case K_PIDS:
		ret = fz_read(false, c->rel, buf, sizeof(buf));
		if (append || ret < 0) {
			FZ_RB(ret >= 0, "set_event_pid: %s", fz_err(ret));
			break;
		}
		/* Sorted, without duplicates, one line (none if empty). */
		len = 0;
		list[0] = '\0';
		for (i = 0; i < e->npids; i++)
			if (!i || e->pids[i] != e->pids[i - 1])
				len += snprintf(list + len, sizeof(list) - len,
						"%s%d", len ? " " : "", e->pids[i]);
		if (len)
			snprintf(list + len, sizeof(list) - len, "\n");
		FZ_RB(!strcmp(buf, list),
		      "set_event_pid reads \"%.60s\", wrote \"%.60s\"", buf,
		      list);
		break;
	case K_SET_EVENT:
	case K_ENABLE_ALL:
	case K_SET_STACK:
	case K_SET_USTACK:
		ret = fz_listed_events(fz_list_file(c), &on);
		FZ_RB(!ret && on == ((ev_before & ~e->ev_mask) |
		      (e->ev_on & e->ev_mask)),
		      "%s holds %#" PRIx64 " after setting %#" PRIx64
		      " of %#" PRIx64 " (before %#" PRIx64 ")", fz_list_file(c),
		      on, e->ev_on, e->ev_mask, ev_before);
		break;
	default:
		break;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* One write                                                           */
/* ------------------------------------------------------------------ */

/*
 * Write @count bytes of @b to @c through a pointer of @kind; judge it.
 * The caller brackets it with fz_ctl_begin()/fz_ctl_end() unless the
 * model says the input refuses it.
 */
static long fz_ctl_write_judged(struct fz_thread *t, const struct fz_ctl *c,
				const uint8_t *b, size_t have, size_t count,
				enum fz_ptr_kind kind, bool dev, bool append,
				int own)
{
	char before[4096], after[4096], msg[256];
	bool unchanged = true, readback = true;
	struct fz_expect e;
	struct fz_window w;
	struct fz_ptr p;
	uint64_t ev_before = 0;
	long ret, tr0 = -1, tr1 = -1, sb0 = -1, sb1 = -1, snap;
	int fd;

	p = fz_place(t, kind, b, have, count);
	fz_ctl_model(c, &p, b, count, append, &e);
	fz_desc(t, "%s%s %s count=%zu ", dev ? "dev:" : "", c->rel,
		fz_ptr_name(kind), count);
	fz_desc_bytes(t, b, count < have ? count : have);

	fd = fz_open(t, dev, c->rel, O_WRONLY | (append ? O_APPEND : 0));
	if (!FZ_CHECK(t, fd >= 0, "open %s for writing: %s", c->rel,
		      fz_err(fd)))
		return fd;
	fz_window_open(&w);
	snap = fz_ctl_snapshot(c, before, sizeof(before));
	if (fz_list_file(c))
		fz_listed_events(fz_list_file(c), &ev_before);
	if (c->kind == K_MODE)
		tr0 = fz_read_num(false, "tracing_on");
	if (e.geom_ok)
		sb0 = fz_read_num(false, "subbuf_size");
	ret = fz_ret(write(fd, p.p, count));
	if (c->kind == K_MODE)
		tr1 = fz_read_num(false, "tracing_on");
	if (e.geom_ok)
		sb1 = fz_read_num(false, "subbuf_size");
	close(fd);
	fz_desc(t, " -> %s", fz_err(ret));

	if (e.ret) {
		FZ_EXPECT(t, "write", ret, e.ret);
	} else if (c->kind == K_PIDS && e.append_ok) {
		FZ_EXPECT(t, "append to set_event_pid", ret, 0, -EINVAL);
	} else if (e.busy_ok && e.nomem_ok) {
		FZ_EXPECT(t, "geometry write", ret, 0, -EBUSY, -ENOMEM);
	} else if (e.busy_ok) {
		FZ_EXPECT(t, "write", ret, 0, -EBUSY);
	} else if (e.geom_ok) {
		FZ_EXPECT(t, "ustack_size above a small subbuf_size / 4", ret,
			  0, -EINVAL);
	} else if (e.nomem_ok || e.alt_err) {
		FZ_EXPECT(t, "write", ret, 0, -ENOMEM, e.alt_err ?: -ENOMEM);
	} else {
		FZ_EXPECT(t, "write", ret, 0);
	}
	if (ret >= 0)
		FZ_CHECK(t, (size_t)ret == count, "write returned %ld of %zu",
			 ret, count);
	else
		fz_refused(t);

	/* What the state is now, read before the window closes. */
	if (ret < 0 && snap >= 0)
		unchanged = fz_ctl_snapshot(c, after, sizeof(after)) < 0 ||
			    !strcmp(before, after) ||
			    /* A rate the kernel could not start: off. */
			    (c->kind == K_SAMPLE_HZ && !e.ret &&
			     !strcmp(after, "0\n"));
	else if (ret >= 0)
		readback = fz_ctl_readback(c, &e, append, ev_before, msg,
					   sizeof(msg));
	if (!fz_window_solo(&w, own))
		return ret;
	/* Nobody else wrote a control file meanwhile: the state is ours. */
	if (c->kind == K_MODE && !e.ret && tr0 == tr1 && tr0 >= 0)
		FZ_EXPECT(t, tr0 ? "mode while tracing" : "mode while stopped",
			  ret, tr0 ? -EBUSY : 0);
	if (e.geom_ok && sb0 == sb1 && sb0 > 0)
		FZ_EXPECT(t, (uint64_t)sb0 / 4 < e.value ?
			  "ustack_size above subbuf_size / 4" :
			  "ustack_size within subbuf_size / 4",
			  ret, (uint64_t)sb0 / 4 < e.value ? -EINVAL : 0);
	FZ_CHECK(t, unchanged,
		 "refused write (%s) changed %s from \"%.40s\" to \"%.40s\"",
		 fz_err(ret), c->rel, before, after);
	FZ_CHECK(t, readback, "%s", msg);
	if (ret >= 0 && c->kind == K_SUBBUF)
		atomic_store(&fz.subbuf_hint, e.value);
	return ret;
}

static bool fz_ctl_allowed(const struct fz_expect *e)
{
	/*
	 * Tracepoint and kprobe attach/detach patch kernel text, the
	 * sampler's timers interrupt every CPU: --toggle only.
	 */
	return fz.toggle || !e->patches_text;
}

/* ------------------------------------------------------------------ */
/* Threads ctl0/ctl1: random writes, two at a time                     */
/* ------------------------------------------------------------------ */

void fz_ctl_op(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint8_t b[FZ_TEXT_LIMIT + 64];
	const struct fz_ctl *c;
	enum fz_ptr_kind kind;
	struct fz_expect e;
	struct fz_ptr probe = { .kind = FZ_PTR_GOOD, .p = b };
	size_t count;
	bool dev = fz_chance(r, 30), append;

	pthread_once(&fz_ctls_once, fz_ctls_init);
	fz_op(t, FZ_OP_CTL_WRITE);
	c = &fz_ctls[fz_below(r, fz_nctls)];
	/* Geometry and tracing are mostly the geometry thread's. */
	if ((c->kind == K_SUBBUF || c->kind == K_NUM) && fz_chance(r, 50))
		c = &fz_ctls[fz_below(r, fz_nctls)];
	count = fz_gen_value(t, c, b, sizeof(b));
	kind = fz_chance(r, 80) ? FZ_PTR_GOOD : fz_pick_ptr(r);
	append = c->kind == K_PIDS && fz_chance(r, 30);
	probe.readable = count < sizeof(b) ? count : sizeof(b);
	fz_ctl_model(c, &probe, b, count, append, &e);
	if (!fz_ctl_allowed(&e)) {
		fz_desc(t, "skip %s: would attach a probe or timers", c->rel);
		return;
	}
	fz_ctl_begin();
	fz_ctl_write_judged(t, c, b, sizeof(b), count, kind, dev, append, 1);
	fz_ctl_end();
}

/* ------------------------------------------------------------------ */
/* Thread check: refused writes change nothing; every file reads well  */
/* ------------------------------------------------------------------ */

/* Bytes meant to be invalid for any file (the model has the last word). */
static size_t fz_gen_invalid(struct fz_thread *t, uint8_t *b, size_t cap,
			     enum fz_ptr_kind *kind)
{
	struct fz_rng *r = &t->rng;
	static const char *const words[] = {
		" 1", "2", "-0", "overwrit", "0x", "4096k", "08", "1 1",
		"!", "!!sched_switch", "no_such_event", "1e3", "0.5",
	};

	*kind = FZ_PTR_GOOD;
	switch (fz_below(r, 7)) {
	case 0:
		return 0;			/* empty */
	case 1:
		memset(b, '1', cap);
		return fz_range(r, FZ_TEXT_LIMIT, 2 * FZ_TEXT_LIMIT);
	case 2:
		*kind = fz_pick(r, ((const enum fz_ptr_kind[]){
			FZ_PTR_NULL, FZ_PTR_UNMAPPED, FZ_PTR_KERNEL,
			FZ_PTR_NONCANON, FZ_PTR_EDGE, FZ_PTR_NONE }));
		memset(b, '1', 4);
		b[1] = '\n';
		return fz_range(r, 1, 3);
	default:
		return fz_put(b, cap, fz_pick(r, words));
	}
}

static void fz_check_refused(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint8_t b[2 * FZ_TEXT_LIMIT];
	const struct fz_ctl *c;
	enum fz_ptr_kind kind;
	struct fz_expect e;
	struct fz_ptr p;
	size_t count;

	fz_op(t, FZ_OP_CTL_REFUSED);
	c = &fz_ctls[fz_below(r, fz_nctls)];
	count = fz_gen_invalid(t, b, sizeof(b), &kind);
	p = fz_place(t, kind, b, sizeof(b), count);
	fz_ctl_model(c, &p, b, count, false, &e);
	if (!e.ret) {
		/* Valid after all ("!x" names an event, "-0" is pid 0). */
		fz_desc(t, "skip %s: valid", c->rel);
		return;
	}
	fz_ctl_write_judged(t, c, b, sizeof(b), count, kind, fz_chance(r, 30),
			    false, 0);
}

static bool fz_valid_num_line(const char *s, uint64_t lo, uint64_t hi,
			      bool pow2)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	return end != s && !strcmp(end, "\n") && v >= lo && v <= hi &&
	       (!pow2 || fz_pow2(v));
}

static bool fz_valid_stats(const char *s)
{
	const char *line = s;
	unsigned long long v[9];
	unsigned int cpu;
	int last = -1, n;

	while (*line) {
		if (sscanf(line, "cpu%u written=%llu delivered=%llu lost_full=%llu lost_overrun=%llu lost_held=%llu lost_nested=%llu lost_too_big=%llu subbufs=%llu bytes=%llu%n",
			   &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7], &v[8], &n) != 10 || line[n] != '\n' ||
		    (int)cpu <= last || cpu >= fz.ncpus)
			return false;
		last = cpu;
		line += n + 1;
	}
	return last >= 0;
}

/* mmap_stats: these lines, in this order (abi.rst). */
static bool fz_valid_mmap_stats(const char *s)
{
	static const char *const names[] = {
		"dump", "mapped", "no_path", "no_build_id", "lost", "in_flight",
	};
	unsigned long long v;
	char name[16];
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (sscanf(s, "%15[a-z_] %llu%n", name, &v, &n) != 2 ||
		    strcmp(name, names[i]) || s[n] != '\n')
			return false;
		s += n + 1;
	}
	return !*s;
}

/*
 * sample_stats: samples, dropped_nesting, ticks, parks, then one
 * "cpuN ticks T parks P" a CPU, at least one, in rising CPU order.
 */
static bool fz_valid_sample_stats(const char *s)
{
	unsigned long long smp, drop, ticks, parks, t, p;
	unsigned int cpu, ncpu = 0;
	int n = 0;

	if (sscanf(s, "samples %llu\ndropped_nesting %llu\nticks %llu\nparks %llu\n%n",
		   &smp, &drop, &ticks, &parks, &n) != 4 || !n)
		return false;
	s += n;
	while (*s) {
		n = 0;
		if (sscanf(s, "cpu%u ticks %llu parks %llu\n%n",
			   &cpu, &t, &p, &n) != 3 || !n || cpu < ncpu)
			return false;
		ncpu = cpu + 1;
		s += n;
	}
	return ncpu > 0;
}

static bool fz_valid_pid_list(const char *s)
{
	long last = -1, v;
	char *end;

	if (!*s)
		return true;
	for (;;) {
		v = strtol(s, &end, 10);
		if (end == s || v <= last)
			return false;
		last = v;
		if (*end == '\n')
			return !end[1];
		if (*end != ' ')
			return false;
		s = end + 1;
	}
}

/* Read a file in random chunks (through pread too) and check its format. */
static void fz_check_read(struct fz_thread *t)
{
	static char buf[1 << 20];
	struct fz_rng *r = &t->rng;
	const struct fz_ctl *c = &fz_ctls[fz_below(r, fz_nctls)];
	bool dev = fz_chance(r, 30), ok = true, use_pread;
	size_t len = 0, chunk = fz_pick(r, ((const size_t[]){ 1, 7, 64, 4096, 65536 }));
	const char *rel = c->rel;
	ssize_t n;
	int fd;

	fz_op(t, FZ_OP_CTL_READ);
	if (fz_chance(r, 10))
		rel = "marker";
	fz_desc(t, "%s%s chunk=%zu", dev ? "dev:" : "", rel, chunk);
	fd = fz_open(t, dev, rel, O_RDONLY);
	if (!FZ_CHECK(t, fd >= 0, "open %s: %s", rel, fz_err(fd)))
		return;
	if (!strcmp(rel, "marker")) {
		n = fz_ret(read(fd, buf, 16));
		FZ_EXPECT(t, "read of marker", n, -EINVAL);
		fz_refused(t);
		close(fd);
		return;
	}
	if (fz_chance(r, 10)) {
		/* Into memory the kernel cannot write. */
		struct fz_ptr p = fz_place(t, fz_pick(r, ((const enum fz_ptr_kind[]){
			FZ_PTR_RO, FZ_PTR_NULL, FZ_PTR_KERNEL, FZ_PTR_NONE })),
			NULL, 0, 64);

		n = fz_ret(read(fd, p.p, 64));
		fz_desc(t, " into %s -> %s", fz_ptr_name(p.kind), fz_err(n));
		/* An empty file has nothing to copy: 0 is fine then. */
		FZ_EXPECT(t, "read into a bad pointer", n, -EFAULT, 0);
		fz_refused(t);
		close(fd);
		return;
	}
	use_pread = fz_chance(r, 20);
	for (;;) {
		if (len + chunk >= sizeof(buf))
			break;
		/* pread() leaves the file position: never mix the two. */
		n = use_pread ? pread(fd, buf + len, chunk, len) :
				read(fd, buf + len, chunk);
		if (n < 0) {
			ok = FZ_CHECK(t, false, "read %s at %zu: %s", rel, len,
				      fz_err(-errno));
			break;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	if (!ok)
		return;
	switch (c->kind) {
	case K_TRACING:
	case K_FORK:
	case K_ENABLE_ONE:
		ok = !strcmp(buf, "0\n") || !strcmp(buf, "1\n");
		break;
	case K_ENABLE_ALL:
		ok = !strcmp(buf, "0\n") || !strcmp(buf, "1\n") ||
		     !strcmp(buf, "X\n");
		break;
	case K_MODE:
		ok = !strcmp(buf, "discard\n") || !strcmp(buf, "overwrite\n");
		break;
	case K_SUBBUF:
		ok = fz_valid_num_line(buf, fz.page, RINGTRACE_MAX_SUBBUF_SIZE,
				       true);
		break;
	case K_NUM:
		ok = fz_valid_num_line(buf, RINGTRACE_MIN_SUBBUFS,
				       RINGTRACE_MAX_SUBBUFS, true);
		break;
	case K_STACK_DEPTH:
		ok = fz_valid_num_line(buf, 1, RINGTRACE_STACK_MAX_DEPTH, false);
		break;
	case K_MMAP_EVENTS:
	case K_MMAP_DUMP:
		ok = !strcmp(buf, "0\n") || !strcmp(buf, "1\n");
		break;
	case K_USTACK_MODE:
		ok = !strcmp(buf, "fp\n") || !strcmp(buf, "copy\n");
		break;
	case K_USTACK_SIZE:
		ok = fz_valid_num_line(buf, RINGTRACE_USTACK_COPY_MIN,
				       RINGTRACE_USTACK_COPY_MAX, false);
		break;
	case K_SAMPLE_HZ:
		ok = fz_valid_num_line(buf, 0, RINGTRACE_SAMPLE_MAX_HZ, false);
		break;
	case K_USTACK_DEPTH:
		ok = fz_valid_num_line(buf, 1, RINGTRACE_USTACK_MAX_DEPTH, false);
		break;
	case K_CLEAR:
		ok = !len;
		break;
	case K_PIDS:
		ok = fz_valid_pid_list(buf);
		break;
	case K_SET_EVENT:
	case K_SET_STACK:
	case K_SET_USTACK: {
		char *line, *save = NULL;

		for (line = strtok_r(buf, "\n", &save); line && ok;
		     line = strtok_r(NULL, "\n", &save))
			ok = fz_event_lookup(line) >= 0;
		break;
	}
	case K_RO:
		if (!strcmp(rel, "stats"))
			ok = fz_valid_stats(buf);
		else if (!strcmp(rel, "metadata"))
			ok = !fz_meta_check(buf);
		else if (!strcmp(rel, "available_events"))
			ok = len > 0;
		else if (!strcmp(rel, "ustack_stats")) {
			unsigned long long w, f, t;
			int end = 0;

			ok = sscanf(buf, "walks %llu\nfaults %llu\ntruncated %llu\n%n",
				    &w, &f, &t, &end) == 3 && end == (int)len &&
			     f <= w && t <= w;
		} else if (!strcmp(rel, "sample_stats")) {
			ok = fz_valid_sample_stats(buf);
		} else if (!strcmp(rel, "mmap_stats")) {
			ok = fz_valid_mmap_stats(buf);
		} else {
			ok = fz_valid_num_line(buf, 0, 1023, false);
		}
		break;
	default:
		break;
	}
	FZ_CHECK(t, ok, "%s reads \"%.80s\"", rel, buf);
}

/*
 * /dev/ringtrace's minors: a node of ringtrace's major made by hand opens
 * the file of that minor, or fails (ENODEV past the last file, ENXIO past
 * the region), never anything worse.
 */
static void fz_check_devnode(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	char path[256], node[256];
	unsigned int minor, cpu;
	struct stat st;
	long ret;
	int fd;

	fz_op(t, FZ_OP_CTL_DEVNODE);
	if (stat(fz_path(path, sizeof(path), true, "tracing_on"), &st) ||
	    !S_ISCHR(st.st_mode)) {
		fz_desc(t, "no /dev tree");
		return;
	}
	minor = fz_chance(r, 50) ? fz_below(r, 200) : fz_below(r, 4 * 4096);
	snprintf(node, sizeof(node), "%s/rt_fuzz-node-%u", fz.tmpdir, t->idx);
	unlink(node);
	if (mknod(node, S_IFCHR | 0600, makedev(major(st.st_rdev), minor))) {
		fz_desc(t, "mknod: %s", fz_err(-errno));
		return;
	}
	/* The minor may be a buffer file's: for the others, an opener. */
	for (cpu = 0; cpu < fz.ncpus; cpu++)
		fz_buf_racy(cpu, 1);
	fd = open(node, (fz_chance(r, 50) ? O_RDONLY : O_WRONLY) | O_CLOEXEC |
		  O_NONBLOCK);
	ret = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	for (cpu = 0; cpu < fz.ncpus; cpu++)
		fz_buf_racy(cpu, -1);
	fz_desc(t, "minor %u -> %s", minor, fz_err(ret));
	unlink(node);
	if (ret == -EACCES) {
		/* A tmpdir mounted nodev: nothing to learn here. */
		fz_desc(t, " (nodev?)");
		return;
	}
	if (ret)
		fz_refused(t);
	/*
	 * A minor of a buffer file may be busy (EBUSY) or have no CPU
	 * (ENODEV); a read-only file opened for writing is fine for root.
	 */
	FZ_EXPECT(t, "open of a hand-made node", ret, 0, -ENODEV, -ENXIO,
		  -EBUSY);
}

/* Control files have no mmap (ENODEV) and no ioctl (ENOTTY). */
static void fz_check_not_file_ops(struct fz_thread *t)
{
	static const unsigned int cmds[] = {
		RINGTRACE_IOC_GET_SUBBUF, RINGTRACE_IOC_FLUSH,
		RINGTRACE_IOC_GET_STATS, _IO(RINGTRACE_IOC_TYPE, 0x7f), 0xdeadbeef,
	};
	struct fz_rng *r = &t->rng;
	const struct fz_ctl *c = &fz_ctls[fz_below(r, fz_nctls)];
	const char *rel = fz_chance(r, 10) ? "marker" : c->rel;
	bool wr = !strcmp(rel, "marker") || c->kind == K_CLEAR;
	unsigned int cmd = fz_pick(r, cmds);
	long ret;
	void *p;
	int fd;

	fz_op(t, FZ_OP_CTL_NOT_FILE_OPS);
	fd = fz_open(t, fz_chance(r, 30), rel, wr ? O_WRONLY : O_RDONLY);
	if (!FZ_CHECK(t, fd >= 0, "open %s: %s", rel, fz_err(fd)))
		return;
	p = mmap(NULL, fz.page, PROT_READ, MAP_SHARED, fd, 0);
	ret = p == MAP_FAILED ? -errno : 0;
	if (!ret)
		munmap(p, fz.page);
	fz_desc(t, "%s: mmap -> %s", rel, fz_err(ret));
	/* Opened write-only, the VFS refuses a shared mapping first. */
	FZ_EXPECT(t, "mmap of a control file", ret, wr ? -EACCES : -ENODEV);
	ret = ioctl(fd, cmd, t->mem.scratch) ? -errno : 0;
	fz_desc(t, ", ioctl %#x -> %s", cmd, fz_err(ret));
	FZ_EXPECT(t, "ioctl on a control file", ret, -ENOTTY);
	fz_refused(t);
	close(fd);
}

/*
 * Every file of the module's top directory has a table here or is another
 * role's (writers.c the marker, filter.c triggered, cgroup.c
 * set_event_cgroup, the events thread probe_events), and every table's
 * file exists: a control file added without a table, or a table whose
 * file went, fails the run.  Once, by the check thread.
 */
static void fz_check_files(struct fz_thread *t)
{
	static const char *const elsewhere[] = {
		"marker", "triggered", "set_event_cgroup", "probe_events",
	};
	char path[256];
	struct dirent *de;
	struct stat st;
	unsigned int i, n = 0;
	bool known;
	DIR *d;

	fz_op(t, FZ_OP_CTL_READ);
	fz_desc(t, "every control file has a table");
	d = opendir(fz_path(path, sizeof(path), false, "."));
	if (!FZ_CHECK(t, d, "opendir %s: %s", path, fz_err(-errno)))
		return;
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, 0) || !S_ISREG(st.st_mode))
			continue;
		known = false;
		for (i = 0; i < fz_nctls && !known; i++)
			known = !strcmp(fz_ctls[i].rel, de->d_name);
		for (i = 0; i < sizeof(elsewhere) / sizeof(elsewhere[0]) &&
		     !known; i++)
			known = !strcmp(elsewhere[i], de->d_name);
		FZ_CHECK(t, known, "control file %s has no table in rt_fuzz",
			 de->d_name);
		n++;
	}
	closedir(d);
	fz_desc(t, ": %u files", n);
	/* And every table's file is there. */
	for (i = 0; i < fz_nctls; i++)
		FZ_CHECK(t, !stat(fz_path(path, sizeof(path), false,
					  fz_ctls[i].rel), &st),
			 "%s: %s", fz_ctls[i].rel, fz_err(-errno));
}

void fz_check_op(struct fz_thread *t)
{
	static atomic_bool files_checked;
	struct fz_rng *r = &t->rng;

	pthread_once(&fz_ctls_once, fz_ctls_init);
	if (!atomic_exchange(&files_checked, true)) {
		fz_check_files(t);
		return;
	}
	switch (fz_below(r, 11)) {
	case 10:
		fz_check_not_file_ops(t);
		break;
	case 0:
		fz_check_devnode(t);
		break;
	case 1:
	case 2:
	case 3:
	case 4:
		fz_check_refused(t);
		break;
	default:
		fz_check_read(t);
	}
}

/* ------------------------------------------------------------------ */
/* Thread geometry: tracing, mode, geometry, clear                     */
/* ------------------------------------------------------------------ */

/* Write a valid @val to the file of @kind, judged: 0 or -errno. */
static long fz_ctl_set(struct fz_thread *t, enum fz_ctl_kind kind,
		       const char *val, int own)
{
	const struct fz_ctl *c = fz_ctl_find(kind);
	long ret;

	ret = fz_ctl_write_judged(t, c, (const uint8_t *)val, strlen(val),
				  strlen(val), FZ_PTR_GOOD,
				  fz_chance(&t->rng, 30), false, own);
	return ret < 0 ? ret : 0;
}

static bool fz_bufs_quiet(void)
{
	return !atomic_load(&fz.bufs_maybe_open) && !atomic_load(&fz.children);
}

/*
 * The kernel log from where a window began: /dev/kmsg at its end.  -1 if
 * it cannot be read (then no ENOMEM can be explained).
 */
static int fz_kmsg_from_now(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* /proc/meminfo's MemAvailable in KiB (the kernel's si_mem_available()), or -1. */
static long long fz_mem_available_kib(void)
{
	long long kib = -1;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/*
 * Memory moves between the kernel's comparison and the fuzzer's read of
 * /proc/meminfo (other threads, the page cache, our own frees): by a few
 * MiB in the guests.  32 MiB is well above that wobble and far below the
 * ~1.6 GiB a 2 GiB guest has available when nothing presses on it.
 */
#define FZ_NOMEM_SLACK_KIB	(32 * 1024)

/*
 * Is an ENOMEM for buffers of @size x @num honest?  Only if the memory
 * really was not there: ringtrace must have logged why since @fd was
 * opened (module/main.c logs every such refusal, with its numbers):
 *
 *   ringtrace: N buffers of S x K bytes would need X KiB, Y KiB are available
 *   ringtrace: cpuC: out of memory for S x K bytes (Y KiB available)
 *
 * and what the fuzzer reads itself right after, MemAvailable
 * (@avail_after, KiB), must agree that the geometry did not fit: below
 * what it needs plus FZ_NOMEM_SLACK_KIB.  The first line must also
 * compare as refused (X > Y).  The second is the page allocator's own
 * failure (__GFP_RETRY_MAYFAIL: reclaim could not make room), for which
 * the need is the whole new set, one buffer per CPU.  A module that said
 * ENOMEM with memory to spare, or without saying why, fails.  The
 * explaining line goes into @why.
 */
static bool fz_kmsg_explains(int fd, uint64_t size, uint64_t num,
			     long long avail_after, char *why, size_t why_size)
{
	unsigned long long s, k, need, avail;
	unsigned long long per_cpu = (size * num + fz.page) / 1024;
	unsigned int n, cpu;
	char rec[1024], *msg;
	bool found = false;
	ssize_t len;

	if (avail_after < 0)
		return false;
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (len <= 0)
			break;
		rec[len] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		msg[strcspn(msg, "\n")] = '\0';
		if (sscanf(msg, "ringtrace: %u buffers of %llu x %llu bytes would need %llu KiB, %llu KiB are available",
			   &n, &s, &k, &need, &avail) == 5 &&
		    s == size && k == num && need > avail &&
		    (unsigned long long)avail_after < need + FZ_NOMEM_SLACK_KIB)
			found = true;
		else if (sscanf(msg, "ringtrace: cpu%u: out of memory for %llu x %llu bytes",
				&cpu, &s, &k) == 3 && s == size && k == num &&
			 (unsigned long long)avail_after <
			 per_cpu * fz.ncpus + FZ_NOMEM_SLACK_KIB)
			found = true;
		else
			continue;
		snprintf(why, why_size, "%s", msg);
	}
	return found;
}

/*
 * With every buffer session excluded (buf_lock written): tracing off,
 * new geometry, a mode, clear, and maybe tracing on again.  In a solo
 * window with no buffer file open, every step must work -- unless memory
 * is short at that moment: a 2 GiB guest does not promise the 2 MiB per
 * CPU of 256 KiB x 8.  So an ENOMEM there must come with ringtrace's
 * kernel log line for that very geometry, and MemAvailable read right
 * after must agree that the memory was not there (fz_kmsg_explains());
 * any other ENOMEM is a failure.
 */
static void fz_geom_quiet(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint64_t size = fz.pressure ? 64 * fz.page : fz_pick_subbuf(r, true);
	uint64_t num = fz.pressure ? 8ULL << fz_below(r, 4) : fz_pick_num(r, true);
	bool strict, big = fz_chance(r, 4);
	char vsize[32], vnum[32], vmax[32], why[256] = "";
	struct fz_window w;
	uint64_t gen0, failed_size = 0, failed_num = 0;
	long ret, num0;
	long long mem = -1;
	int kmsg;

	fz_op(t, FZ_OP_GEOM_QUIET);
	snprintf(vsize, sizeof(vsize), "%" PRIu64, size);
	snprintf(vnum, sizeof(vnum), "%" PRIu64, num);
	snprintf(vmax, sizeof(vmax), "%u", RINGTRACE_MAX_SUBBUF_SIZE);
	pthread_rwlock_wrlock(&fz.buf_lock);
	fz_ctl_begin();
	kmsg = fz_kmsg_from_now();
	fz_window_open(&w);
	gen0 = atomic_load(&fz.bufs_gen);
	strict = fz_bufs_quiet();
	fz_desc(t, "%s x %s%s: ", vsize, vnum, big ? " after 64 MiB ones" : "");

	ret = fz_ctl_set(t, K_TRACING, "0", 1);
	if (big) {
		/* 64 MiB x 2 per CPU: may not fit (ENOMEM); nothing else. */
		fz_ctl_set(t, K_SUBBUF, "4096", 1);
		fz_ctl_set(t, K_NUM, "2", 1);
		if (fz_ctl_set(t, K_SUBBUF, vmax, 1) == 0) {
			/* 64 MiB x 64 per CPU fits in no test guest. */
			ret = fz_ctl_set(t, K_NUM, "64", 1);
			if (fz_window_solo(&w, 1))
				FZ_EXPECT(t, "4 GiB per CPU", ret, -ENOMEM);
		}
	}
	/* Smallest first: no step holds two large geometries at once. */
	num0 = fz_read_num(false, "num_subbufs");
	const struct {
		enum fz_ctl_kind kind;
		const char *val;
		uint64_t size, num;		/* the geometry it asks for */
	} steps[] = {
		{ K_SUBBUF, "4096", 4096, num0 > 0 ? (uint64_t)num0 : 0 },
		{ K_NUM, "2", 4096, 2 },
		{ K_SUBBUF, vsize, size, 2 },
		{ K_NUM, vnum, size, num },
	};
	for (unsigned int i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ret = fz_ctl_set(t, steps[i].kind, steps[i].val, 1);
		mem = fz_mem_available_kib();
		if (ret) {
			failed_size = steps[i].size;
			failed_num = steps[i].num;
			break;
		}
	}
	if (strict && fz_window_solo(&w, 1) && fz_bufs_quiet() &&
	    atomic_load(&fz.bufs_gen) == gen0) {
		if (ret == -ENOMEM && kmsg >= 0 &&
		    fz_kmsg_explains(kmsg, failed_size, failed_num, mem, why,
				     sizeof(why)))
			fz_desc(t, " (kernel: %.80s; MemAvailable %lld kB)",
				why, mem);
		else
			FZ_CHECK(t, ret == 0,
				 "geometry %s x %s refused (%s) with tracing off and no file open%s, MemAvailable %lld kB",
				 vsize, vnum, fz_err(ret),
				 ret == -ENOMEM ? ", and no kernel log line shows memory short" : "",
				 mem);
	}
	fz_ctl_set(t, K_MODE, fz_chance(r, 50) ? "overwrite" : "discard", 1);
	ret = fz_ctl_set(t, K_CLEAR, "1", 1);
	mem = fz_mem_available_kib();
	if (strict && fz_window_solo(&w, 1) && fz_bufs_quiet() &&
	    atomic_load(&fz.bufs_gen) == gen0) {
		uint64_t cs = fz_read_num(false, "subbuf_size"),
			 cn = fz_read_num(false, "num_subbufs");

		if (ret == -ENOMEM && kmsg >= 0 &&
		    fz_kmsg_explains(kmsg, cs, cn, mem, why, sizeof(why)))
			fz_desc(t, " (kernel: %.80s; MemAvailable %lld kB)",
				why, mem);
		else
			FZ_CHECK(t, ret == 0, "clear refused (%s) with nothing open%s, MemAvailable %lld kB",
				 fz_err(ret),
				 ret == -ENOMEM ? ", and no kernel log line shows memory short" : "",
				 mem);
	}
	if (kmsg >= 0)
		close(kmsg);
	if (fz_chance(r, 70))
		fz_ctl_set(t, K_TRACING, "1", 1);
	fz_ctl_end();
	pthread_rwlock_unlock(&fz.buf_lock);
}

/* Geometry and clear while a session holds a buffer file: EBUSY. */
static void fz_geom_race(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint64_t held[FZ_MAX_CPUS];
	unsigned int cpu;
	char v[32];
	long ret;
	bool open_throughout = false;
	enum fz_ctl_kind kind = fz_pick(r, ((const enum fz_ctl_kind[]){
		K_SUBBUF, K_NUM, K_CLEAR }));

	fz_op(t, FZ_OP_GEOM_RACE);
	for (cpu = 0; cpu < fz.ncpus; cpu++)
		held[cpu] = atomic_load(&fz.cpu[cpu].held);
	if (kind == K_CLEAR)
		snprintf(v, sizeof(v), "1");
	else if (kind == K_SUBBUF)
		snprintf(v, sizeof(v), "%" PRIu64, fz_pick_subbuf(r, true));
	else
		snprintf(v, sizeof(v), "%" PRIu64, fz_pick_num(r, true));
	fz_ctl_begin();
	ret = fz_ctl_set(t, kind, v, 1);
	fz_ctl_end();
	for (cpu = 0; cpu < fz.ncpus; cpu++)
		if (held[cpu] && atomic_load(&fz.cpu[cpu].held) == held[cpu])
			open_throughout = true;
	if (open_throughout)
		FZ_EXPECT(t, "geometry change with a buffer file open", ret,
			  -EBUSY);
}

static void fz_tracing_flip(struct fz_thread *t)
{
	fz_op(t, FZ_OP_TRACING_FLIP);
	fz_ctl_begin();
	fz_ctl_set(t, K_TRACING, fz_chance(&t->rng, 60) ? "1" : "0", 1);
	fz_ctl_end();
	fz_sleep_ms(fz_below(&t->rng, 200));
}

/*
 * The module's fault injection (abi.rst "Test knob"): any uint is taken
 * (the module caps it at 16), anything else refused -- but sysfs answers
 * an empty write with 0 before the parameter sees it.  Mostly 0: it makes
 * every overwrite push write markers inside its window [R2].
 */
static void fz_inject_param(struct fz_thread *t)
{
	static const char *const bad[] = { "-1", "x", "4294967296", " 1" };
	struct fz_rng *r = &t->rng;
	char val[32], path[] = "/sys/module/ringtrace/parameters/inject_push_nesting";
	long ret, back;
	bool valid = fz_chance(r, 85);
	int fd;

	fz_op(t, FZ_OP_INJECT_PARAM);
	if (fz_chance(r, 5))
		val[0] = '\0';
	else if (valid)
		snprintf(val, sizeof(val), "%u\n", fz_chance(r, 70) ? 0 :
			 (unsigned int)fz_below(r, 21));
	else
		snprintf(val, sizeof(val), "%s", fz_pick(r, bad));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (!FZ_CHECK(t, fd >= 0, "open %s: %s", path, fz_err(-errno)))
		return;
	ret = write(fd, val, strlen(val));
	ret = ret < 0 ? -errno : ret;
	close(fd);
	fz_desc(t, "inject_push_nesting \"%.12s\" -> %s", val, fz_err(ret));
	if (!val[0]) {
		FZ_EXPECT(t, "an empty write to inject_push_nesting", ret, 0);
		return;
	}
	if (!valid) {
		FZ_EXPECT(t, "a bad inject_push_nesting", ret, -EINVAL, -ERANGE);
		fz_refused(t);
		return;
	}
	FZ_EXPECT(t, "inject_push_nesting", ret, 0);
	{
		char buf[32];
		FILE *f = fopen(path, "r");

		back = f && fgets(buf, sizeof(buf), f) ? strtol(buf, NULL, 10) : -1;
		if (f)
			fclose(f);
	}
	FZ_CHECK(t, back == strtol(val, NULL, 10),
		 "inject_push_nesting reads %ld after writing %s", back, val);
}

void fz_geom_op(struct fz_thread *t)
{
	pthread_once(&fz_ctls_once, fz_ctls_init);
	if (fz_chance(&t->rng, 5)) {
		fz_inject_param(t);
		return;
	}
	switch (fz_below(&t->rng, 10)) {
	case 0:
	case 1:
		fz_geom_quiet(t);
		fz_sleep_ms(fz_below(&t->rng, 300));
		break;
	case 2:
	case 3:
		fz_geom_race(t);
		break;
	default:
		fz_tracing_flip(t);
	}
}

/* ------------------------------------------------------------------ */
/* Thread events: enable/disable churn, the pid filter                 */
/* ------------------------------------------------------------------ */

static void fz_events_pids(struct fz_thread *t)
{
	const struct fz_ctl *c = fz_ctl_find(K_PIDS);
	struct fz_rng *r = &t->rng;
	uint8_t b[FZ_TEXT_LIMIT];
	size_t n;
	bool append = fz_chance(r, 30);

	fz_op(t, FZ_OP_PID_FILTER);
	/* Mostly no filter, or one that keeps the fuzzer: data keeps coming. */
	if (fz_chance(r, 50))
		n = fz_put(b, sizeof(b), fz_chance(r, 50) ? "" : "\n");
	else if (fz_chance(r, 50))
		n = snprintf((char *)b, sizeof(b), "%d 1", fz.own_pid);
	else
		n = fz_gen_pids(r, b, sizeof(b));
	fz_ctl_begin();
	fz_ctl_write_judged(t, c, b, n, n, FZ_PTR_GOOD, fz_chance(r, 30),
			    append, 1);
	fz_ctl_end();
}

/*
 * probe_events: a kprobe or kretprobe made, hit while the writers run,
 * its filter replaced meanwhile, removed by "-:NAME" or by the close; bad
 * commands (USDT sites among them: E2BIG for 33) refused with nothing
 * left.  Another thread may hold the same probe (EEXIST); a kernel
 * without kprobes refuses every one (EOPNOTSUPP).  kprobes patch text:
 * --toggle only.
 */
#define FZ_DYNPROBES_MAX	200
static _Atomic unsigned int fz_dynprobes_made;

/*
 * A predicate on the probe @cmd just made, while it fires: its
 * events/<name>/filter (debugfs only) takes the good ones and refuses the
 * bad with EINVAL; only this thread can remove the probe meanwhile.
 */
static void fz_dynprobe_filter(struct fz_thread *t, const char *cmd)
{
	static const struct {
		const char *expr;
		bool good;
	} kp[] = {
		{ "arg0 == 3 || comm == 'rt_fuzz*'", true },
		{ "arg2 & 0xfff > 16 && !(arg5 < 0)", true },
		{ "arg1 != 0", true },
		{ "none", true },
		{ "arg6 == 1", false },
		{ "ret == 0", false },
		{ "arg0 == ", false },
	}, rp[] = {
		{ "ret < 0 || comm == rt_fuzz", true },
		{ "ret & 1", true },
		{ "0", true },
		{ "arg0 == 1", false },
		{ "ret <", false },
	};
	bool ret_probe = cmd[0] == 'r', good;
	const char *expr;
	char rel[96];
	unsigned int i;
	long ret;

	if (ret_probe) {
		i = fz_below(&t->rng, sizeof(rp) / sizeof(rp[0]));
		expr = rp[i].expr;
		good = rp[i].good;
	} else {
		i = fz_below(&t->rng, sizeof(kp) / sizeof(kp[0]));
		expr = kp[i].expr;
		good = kp[i].good;
	}
	snprintf(rel, sizeof(rel), "events/%s_%s/filter",
		 ret_probe ? "kretprobe" : "kprobe", cmd + 2);
	ret = fz_write(false, rel, expr, strlen(expr), 0);
	fz_desc(t, "%s <- '%s' -> %s", rel, expr, fz_err(ret));
	if (ret < 0)
		fz_refused(t);
	FZ_EXPECT(t, good ? "a good probe predicate" : "a bad probe predicate",
		  ret < 0 ? ret : 0, good ? 0 : -EINVAL);
}

static void fz_dynprobe(struct fz_thread *t)
{
	static const char *const good[] = {
		"p:vfs_read", "r:vfs_read", "p:ksys_write", "r:ksys_write",
	};
	static const char *const bad[] = {
		"p:", "x:vfs_read", "p:rt_fuzz_no_such_fn", "r:vfs_read+4",
		"p:notify_die", "-:kprobe_rt_fuzz_none", "p:vfs_read p:vfs_write",
		/* USDT sites (at=): refused whole, before any is placed. */
		"s:/bin/true:0x10@rt_fuzz a0=8@ax at=0x20",
		"s:/bin/true:0x10@rt_fuzz a0=8@ax at=0x20 a0=8@bx a1=8@cx",
		"s:/bin/true:0x10@rt_fuzz at=0x10", "s:/bin/true:0x10@rt_fuzz at=",
		"s:/bin/true:0x10@rt_fuzz at=0x20 ref=0x2",
		"s:/bin/true:0x10@rt_fuzz at=1 at=2 at=3 at=4 at=5 at=6 at=7 at=8 "
		"at=9 at=10 at=11 at=12 at=13 at=14 at=15 at=16 at=17 at=18 at=19 "
		"at=20 at=21 at=22 at=23 at=24 at=25 at=26 at=27 at=28 at=29 "
		"at=30 at=31 at=32",
	};
	struct fz_rng *r = &t->rng;
	const char *cmd;
	char del[64];
	bool is_bad;
	long ret;
	int fd;

	fz_op(t, FZ_OP_DYNPROBE);
	fd = fz_open(t, fz_chance(r, 50), "probe_events", O_RDWR | O_CLOEXEC);
	if (!FZ_CHECK(t, fd >= 0, "open probe_events: %s", fz_err(fd)))
		return;
	/*
	 * Each probe made takes an event id for the module's lifetime (1024
	 * per load, ctf.c): at most FZ_DYNPROBES_MAX of them per run, so that
	 * the other dynamic events keep theirs.  Refused ones take none.
	 */
	is_bad = fz_chance(r, 30) ||
		 atomic_fetch_add(&fz_dynprobes_made, 1) >= FZ_DYNPROBES_MAX;
	cmd = is_bad ? fz_pick(r, bad) : fz_pick(r, good);
	ret = fz_ret(write(fd, cmd, strlen(cmd)));
	fz_desc(t, "probe_events <- %s -> %s", cmd, fz_err(ret));
	if (ret < 0)
		fz_refused(t);
	if (is_bad) {
		FZ_EXPECT(t, "a bad probe command", ret, -EINVAL, -ENOENT,
			  -EOPNOTSUPP, -E2BIG);
		goto close;
	}
	FZ_EXPECT(t, "a probe command", ret < 0 ? ret : 0, 0, -EEXIST,
		  -ENOSPC, -EOPNOTSUPP);
	if (ret < 0)
		goto close;
	if (fz_chance(r, 70))
		fz_dynprobe_filter(t, cmd);
	fz_sleep_ms(fz_below(r, 20));
	if (fz_chance(r, 50)) {
		snprintf(del, sizeof(del), "-:%s_%s",
			 cmd[0] == 'p' ? "kprobe" : "kretprobe", cmd + 2);
		ret = fz_ret(write(fd, del, strlen(del)));
		FZ_EXPECT(t, "removing our own probe", ret < 0 ? ret : 0, 0);
	}
close:
	close(fd);
}

/*
 * set_event_stack and stack_depth while the writers run: a stack is a
 * per-probe flag and a depth the writers read once per event (stack.c),
 * no text patched, so without --toggle too.  Mostly tracepoints' events
 * on and off and depths in range, so that an enabled event's writers walk
 * stacks of changing depth; then what must be refused: the state dump's
 * events, unknown names, depths 0, 65, signed, hex, words.
 */
static void fz_event_stack(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint8_t b[FZ_TEXT_LIMIT];
	const struct fz_ctl *c;
	unsigned int tp[FZ_MAX_EVENTS], ntp = 0, i;
	size_t n;

	fz_op(t, FZ_OP_EVENT_STACK);
	for (i = 0; i < fz.nevents; i++)
		if (fz.event_has_tp[i])
			tp[ntp++] = i;
	if (fz_chance(r, 30)) {
		c = fz_ctl_find(K_STACK_DEPTH);
		n = fz_gen_depth(r, K_STACK_DEPTH, b, sizeof(b));
	} else if (ntp && fz_chance(r, 70)) {
		c = fz_ctl_find(K_SET_STACK);
		n = snprintf((char *)b, sizeof(b), "%s%s\n",
			     fz_chance(r, 40) ? "!" : "",
			     fz.events[tp[fz_below(r, ntp)]]);
	} else {
		c = fz_ctl_find(K_SET_STACK);
		n = fz_gen_events(r, b, sizeof(b));
	}
	fz_ctl_begin();
	fz_ctl_write_judged(t, c, b, n, n, FZ_PTR_GOOD, fz_chance(r, 30), false,
			    1);
	fz_ctl_end();
}

void fz_events_op(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	const struct fz_ctl *c;
	uint8_t b[FZ_TEXT_LIMIT];
	struct fz_expect e;
	struct fz_ptr probe = { .kind = FZ_PTR_GOOD };
	size_t n;
	unsigned int i;

	pthread_once(&fz_ctls_once, fz_ctls_init);
	if (fz_chance(r, 15)) {
		fz_events_pids(t);
		return;
	}
	if (fz.toggle && fz_chance(r, 10)) {
		fz_dynprobe(t);
		return;
	}
	if (fz_chance(r, 15)) {
		fz_event_stack(t);
		return;
	}
	if (fz_chance(r, 20)) {
		fz_filter_op(t);
		return;
	}
	if (fz_chance(r, 10)) {
		fz_cgroup_op(t);
		return;
	}
	fz_op(t, fz.toggle ? FZ_OP_EVENT_TOGGLE : FZ_OP_EVENT_SAFE);
	switch (fz_below(r, 4)) {
	case 0:
		c = fz_ctl_find(K_SET_EVENT);
		n = fz_gen_events(r, b, sizeof(b));
		break;
	case 1:
		c = fz_ctl_find(K_ENABLE_ALL);
		n = fz_put(b, sizeof(b), fz_chance(r, 70) ? "0\n" : "1\n");
		break;
	case 2:
		c = fz_ctl_find(K_FORK);
		n = fz_put(b, sizeof(b), fz_chance(r, 50) ? "0" : "1");
		break;
	default:
		i = fz_below(r, fz.nevents);
		c = NULL;
		for (unsigned int j = 0; j < fz_nctls; j++)
			if (fz_ctls[j].kind == K_ENABLE_ONE &&
			    fz_ctls[j].event == (int)i)
				c = &fz_ctls[j];
		n = fz_put(b, sizeof(b), fz_chance(r, 50) ? "1" : "0");
		break;
	}
	probe.p = b;
	probe.readable = n;
	fz_ctl_model(c, &probe, b, n, false, &e);
	if (!fz_ctl_allowed(&e)) {
		/* Without --toggle: the state dump's events, which patch nothing. */
		unsigned int sd[FZ_MAX_EVENTS], nsd = 0;

		for (i = 0; i < fz.nevents; i++)
			if (!fz.event_has_tp[i])
				sd[nsd++] = i;
		if (!nsd)
			return;
		c = fz_ctl_find(K_SET_EVENT);
		n = snprintf((char *)b, sizeof(b), "%s%s\n",
			     fz_chance(r, 50) ? "!" : "",
			     fz.events[sd[fz_below(r, nsd)]]);
	}
	fz_ctl_begin();
	fz_ctl_write_judged(t, c, b, n, n, FZ_PTR_GOOD, fz_chance(r, 30), false,
			    1);
	fz_ctl_end();
	/* Toggling patches text on every CPU: give the others some air. */
	if (fz.toggle)
		fz_sleep_ms(fz_below(r, 30));
}
