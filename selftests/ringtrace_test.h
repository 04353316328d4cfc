/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the ringtrace selftests: control files, CPU buffer
 * files, the consumer ioctls, and a small CTF decoder that checks every
 * packet header field and walks every event.
 *
 * The decoder learns each event's payload layout from the `metadata` file
 * (the restricted TSDL ringtrace emits: `TYPE name;`, `TYPE name[N];`,
 * `TYPE name[len_field];` with the fixed-size integer type aliases), so it
 * decodes whatever the trace holds and, in doing so, checks that the
 * metadata describes the bytes.  Only the main thread of a test may use
 * the harness's ASSERT/EXPECT: these helpers return errors with a message.
 */
#ifndef _RINGTRACE_TEST_H
#define _RINGTRACE_TEST_H

#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/ringtrace.h>

#include "kmod/ringtrace_selftest.h"
#include "rt_files.h"

/* The harness's SIGALRM handler ignores a parameter: -Wextra, not us. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

#define RTST_DIR	"/sys/kernel/debug/" RTST_DEBUGFS_DIR

#define RT_DEFAULT_SUBBUF_SIZE	(64U << 10)
#define RT_DEFAULT_NUM_SUBBUFS	64

#define RT_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/*
 * The ringtrace directory under test: /sys/kernel/debug/ringtrace, or what
 * RT_ROOT says (/dev/ringtrace: the same files as character devices).
 */
static inline const char *rt_dir(void)
{
	const char *dir = getenv("RT_ROOT");

	return dir && *dir ? dir : "/sys/kernel/debug/ringtrace";
}

/* rt_dir()/@name, in a buffer that the next call reuses. */
static inline const char *rt_path(const char *name)
{
	static __thread char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", rt_dir(), name);
	return path;
}

/* Write string @s to control file rt_dir()/@name: 0 or -errno. */
static inline int rt_ctl_write(const char *name, const char *s)
{
	char path[256];
	ssize_t ret;

	snprintf(path, sizeof(path), "%s/%s", rt_dir(), name);
	ret = rt_write_file(path, s, strlen(s));
	if (ret < 0)
		return ret;
	return ret == (ssize_t)strlen(s) ? 0 : -EIO;
}

static inline ssize_t rt_ctl_read(const char *name, char *buf, size_t size)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", rt_dir(), name);
	return rt_read_file(path, buf, size);
}

/* A control file holding one decimal number and a newline, or -1. */
static inline long long rt_ctl_read_num(const char *name)
{
	char buf[64], *end;
	long long v;

	if (rt_ctl_read(name, buf, sizeof(buf)) <= 0)
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf || strcmp(end, "\n"))
		return -1;
	return v;
}

static inline int rt_ctl_write_num(const char *name, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	return rt_ctl_write(name, buf);
}

/* Why the tests cannot run here, or NULL. */
static inline const char *rt_unavailable(void)
{
	if (geteuid())
		return "needs root";
	if (access(rt_path("tracing_on"), F_OK))
		return "ringtrace.ko not loaded (no ringtrace directory)";
	return NULL;
}

static inline const char *rtst_unavailable(void)
{
	const char *why = rt_unavailable();

	if (why)
		return why;
	if (access(RTST_DIR "/run", F_OK))
		return "ringtrace_selftest.ko not loaded (no " RTST_DIR ")";
	return NULL;
}

/* In a FIXTURE_SETUP or TEST: skip unless root and the module is loaded. */
#define RT_REQUIRE() do {						\
	const char *__why = rt_unavailable();				\
	if (__why)							\
		SKIP(return, "%s", __why);				\
} while (0)

#define RTST_REQUIRE() do {						\
	const char *__why = rtst_unavailable();				\
	if (__why)							\
		SKIP(return, "%s", __why);				\
} while (0)

/*
 * Each write reallocates every buffer: change the two values in the order
 * whose intermediate pair is the smaller, so that going from 4 KiB x 4096
 * to 64 KiB x 16 never asks for 256 MiB per CPU on the way.
 */
static inline int rt_set_geometry(unsigned int subbuf_size,
				  unsigned int num_subbufs)
{
	long long cur_size = rt_ctl_read_num("subbuf_size");
	long long cur_num = rt_ctl_read_num("num_subbufs");
	int ret;

	if (cur_size < 0 || cur_num < 0)
		return -EIO;
	if ((unsigned long long)subbuf_size * cur_num <=
	    (unsigned long long)cur_size * num_subbufs) {
		ret = rt_ctl_write_num("subbuf_size", subbuf_size);
		return ret ? ret : rt_ctl_write_num("num_subbufs", num_subbufs);
	}
	ret = rt_ctl_write_num("num_subbufs", num_subbufs);
	return ret ? ret : rt_ctl_write_num("subbuf_size", subbuf_size);
}

/*
 * Back to the state a fresh module has, with no data: tracing off,
 * discard mode, default geometry, counters zero.  0 or -errno.
 */
#define RT_INJECT_PARAM	"/sys/module/ringtrace/parameters/inject_push_nesting"
#define RT_INJECT_HIT_PARAM						\
	"/sys/module/ringtrace/parameters/inject_marker_hit_delay"
#define RT_INJECT_READ_PARAM						\
	"/sys/module/ringtrace/parameters/inject_triggered_read_delay"

static inline int rt_reset(void)
{
	static const char *const inject[] = {
		RT_INJECT_PARAM, RT_INJECT_HIT_PARAM, RT_INJECT_READ_PARAM,
	};
	unsigned int i;
	int ret;

	/* The fault injections, if a test left one on. */
	for (i = 0; i < sizeof(inject) / sizeof(inject[0]); i++)
		if (!access(inject[i], F_OK) &&
		    rt_write_file(inject[i], "0", 1) < 0)
			return -EIO;
	ret = rt_ctl_write("tracing_on", "0");
	/* Tracepoint events off: the tests' writers are the only ones. */
	if (!ret && !access(rt_path("events/enable"), F_OK))
		ret = rt_ctl_write("events/enable", "0");
	if (!ret)
		ret = rt_ctl_write("mode", "discard");
	if (!ret)
		ret = rt_set_geometry(RT_DEFAULT_SUBBUF_SIZE,
				      RT_DEFAULT_NUM_SUBBUFS);
	if (!ret)
		ret = rt_ctl_write("clear", "1");
	return ret;
}

/* Tracing off, mode, geometry, clear: a fresh trace to test with. */
static inline int rt_prepare(const char *mode, unsigned int subbuf_size,
			     unsigned int num_subbufs)
{
	int ret = rt_reset();

	if (!ret)
		ret = rt_ctl_write("mode", mode);
	if (!ret)
		ret = rt_set_geometry(subbuf_size, num_subbufs);
	if (!ret)
		ret = rt_ctl_write("clear", "1");
	return ret;
}

/* ------------------------------------------------------------------ */
/* CPUs                                                                */
/* ------------------------------------------------------------------ */

/* Parse a CPU list like "0-3,5" into @set; number of CPUs, or -1. */
static inline int rt_parse_cpulist(const char *s, cpu_set_t *set)
{
	unsigned long a, b;
	char *end;
	int n = 0;

	CPU_ZERO(set);
	while (*s && *s != '\n') {
		a = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s || b < a)
				return -1;
		}
		for (; a <= b && a < CPU_SETSIZE; a++, n++)
			CPU_SET(a, set);
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

/* CPUs that have a buffer (possible CPUs). */
static inline int rt_possible_cpus(cpu_set_t *set)
{
	char buf[256];

	if (rt_read_file("/sys/devices/system/cpu/possible", buf, sizeof(buf)) <= 0)
		return -1;
	return rt_parse_cpulist(buf, set);
}

/* CPUs this process may run on and that are online. */
static inline int rt_usable_cpus(cpu_set_t *set)
{
	cpu_set_t online;
	char buf[256];
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(*set), set))
		return -1;
	if (rt_read_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) <= 0 ||
	    rt_parse_cpulist(buf, &online) < 0)
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, set) && !CPU_ISSET(cpu, &online))
			CPU_CLR(cpu, set);
		n += !!CPU_ISSET(cpu, set);
	}
	return n;
}

/* The highest usable CPU (not CPU 0 on SMP: catches cpu-0 assumptions). */
static inline int rt_test_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (rt_usable_cpus(&set) <= 0)
		return -1;
	for (cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
		if (CPU_ISSET(cpu, &set))
			return cpu;
	return -1;
}

/* An online CPU other than @cpu (whatever our affinity), or -1. */
static inline int rt_other_cpu(int cpu)
{
	cpu_set_t set;
	char buf[256];
	int i;

	if (rt_read_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) <= 0 ||
	    rt_parse_cpulist(buf, &set) <= 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (i != cpu && CPU_ISSET(i, &set))
			return i;
	return -1;
}

/* Pin the calling thread: its marker writes land in @cpu's buffer. */
static inline int rt_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* ------------------------------------------------------------------ */
/* Stats                                                               */
/* ------------------------------------------------------------------ */

struct rt_stats {
	uint64_t written, delivered, lost_full, lost_overrun, lost_held,
		 lost_nested, lost_too_big, subbufs, bytes;
};

static inline uint64_t rt_stats_lost(const struct rt_stats *s)
{
	return s->lost_full + s->lost_overrun + s->lost_held +
	       s->lost_nested + s->lost_too_big;
}

/*
 * Parse one line of the `stats` file, exactly in its documented format.
 * Returns the CPU number, or -1 if the line does not match.
 */
static inline int rt_parse_stats_line(const char *line, struct rt_stats *s)
{
	unsigned int cpu;
	int end = -1;

	if (sscanf(line,
		   "cpu%u written=%" SCNu64 " delivered=%" SCNu64
		   " lost_full=%" SCNu64 " lost_overrun=%" SCNu64
		   " lost_held=%" SCNu64 " lost_nested=%" SCNu64
		   " lost_too_big=%" SCNu64 " subbufs=%" SCNu64
		   " bytes=%" SCNu64 "%n",
		   &cpu, &s->written, &s->delivered, &s->lost_full,
		   &s->lost_overrun, &s->lost_held, &s->lost_nested,
		   &s->lost_too_big, &s->subbufs, &s->bytes, &end) != 10 ||
	    end < 0 || (line[end] != '\n' && line[end] != '\0'))
		return -1;
	return cpu;
}

/* Stats of @cpu from the `stats` file: 0 or -errno. */
static inline int rt_read_stats(int cpu, struct rt_stats *s)
{
	char *text = rt_slurp(rt_path("stats")), *line;
	int ret = -ENOENT;

	memset(s, 0, sizeof(*s));
	if (!text)
		return -errno ? -errno : -EIO;
	for (line = text; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!*line)
			break;
		if (rt_parse_stats_line(line, s) == cpu) {
			ret = 0;
			break;
		}
	}
	free(text);
	return ret;
}

static inline void rt_stats_from_ioctl(struct rt_stats *s,
				       const struct ringtrace_stats *st)
{
	s->written = st->written;
	s->delivered = st->delivered;
	s->lost_full = st->lost_full;
	s->lost_overrun = st->lost_overrun;
	s->lost_held = st->lost_held;
	s->lost_nested = st->lost_nested;
	s->lost_too_big = st->lost_too_big;
	s->subbufs = st->subbufs_delivered;
	s->bytes = st->bytes_delivered;
}

static inline bool rt_stats_equal(const struct rt_stats *a,
				  const struct rt_stats *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* CPU buffer files                                                    */
/* ------------------------------------------------------------------ */

struct rt_buf {
	int fd;
	int cpu;
	uint8_t *map;			/* meta page + sub-buffers, or NULL */
	size_t map_len;
	size_t meta_page_size;
	uint32_t subbuf_size;
	uint32_t num_subbufs;
	/*
	 * Packets before the recording's first, as this open's first packet
	 * said (pos / subbuf_size - packet_seq_num): the same for every
	 * packet of one open (uapi: numbered from the recording's start).
	 */
	uint64_t seq_origin;
	bool seq_known;
};

static inline void rt_buf_path(char *path, size_t size, int cpu)
{
	snprintf(path, size, "%s/cpu/%d/buffer", rt_dir(), cpu);
}

static inline int rt_buf_open_fd(int cpu, int flags)
{
	char path[128];
	int fd;

	rt_buf_path(path, sizeof(path), cpu);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Open @cpu's buffer and map the meta page and every sub-buffer. */
static inline int rt_buf_open(struct rt_buf *b, int cpu)
{
	long page = sysconf(_SC_PAGESIZE);
	const struct ringtrace_meta *meta;
	void *p;
	int ret;

	memset(b, 0, sizeof(*b));
	b->cpu = cpu;
	b->fd = rt_buf_open_fd(cpu, O_RDONLY);
	if (b->fd < 0)
		return b->fd;
	/* The meta page alone first: it says how big the rest is. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED)
		goto err;
	meta = p;
	b->meta_page_size = meta->meta_page_size;
	b->subbuf_size = meta->subbuf_size;
	b->num_subbufs = meta->num_subbufs;
	munmap(p, page);
	b->map_len = b->meta_page_size + (size_t)b->subbuf_size * b->num_subbufs;
	p = mmap(NULL, b->map_len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED)
		goto err;
	b->map = p;
	return 0;
err:
	ret = -errno;
	close(b->fd);
	b->fd = -1;
	return ret;
}

static inline void rt_buf_close(struct rt_buf *b)
{
	if (b->map)
		munmap(b->map, b->map_len);
	b->map = NULL;
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

static inline const struct ringtrace_meta *rt_buf_meta(const struct rt_buf *b)
{
	return (const struct ringtrace_meta *)b->map;
}

/* One 64-bit acquire load of a meta page field (uapi memory ordering). */
static inline uint64_t rt_meta_load(const __u64 *field)
{
	return __atomic_load_n(field, __ATOMIC_ACQUIRE);
}

static inline int rt_get(int fd, struct ringtrace_subbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->size = sizeof(*sb);
	return ioctl(fd, RINGTRACE_IOC_GET_SUBBUF, sb) ? -errno : 0;
}

static inline int rt_put(int fd, uint64_t pos)
{
	struct ringtrace_subbuf sb = { .size = sizeof(sb), .pos = pos };

	return ioctl(fd, RINGTRACE_IOC_PUT_SUBBUF, &sb) ? -errno : 0;
}

static inline int rt_flush(int fd)
{
	return ioctl(fd, RINGTRACE_IOC_FLUSH) ? -errno : 0;
}

static inline int rt_ioctl_stats(int fd, struct rt_stats *s)
{
	struct ringtrace_stats st = { .size = sizeof(st) };

	memset(s, 0, sizeof(*s));
	if (ioctl(fd, RINGTRACE_IOC_GET_STATS, &st))
		return -errno;
	rt_stats_from_ioctl(s, &st);
	return 0;
}

static inline int rt_positions(int fd, struct ringtrace_positions *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	return ioctl(fd, RINGTRACE_IOC_GET_POSITIONS, p) ? -errno : 0;
}

/* ------------------------------------------------------------------ */
/* Metadata                                                            */
/* ------------------------------------------------------------------ */

#define RT_MAX_IDS	1024
#define RT_MAX_FIELDS	32
#define RT_NAME_MAX	64

enum rt_field_kind { RT_SCALAR, RT_ARRAY, RT_SEQUENCE };

struct rt_field {
	char name[RT_NAME_MAX];
	unsigned int size;		/* bytes of one element */
	enum rt_field_kind kind;
	unsigned int count;		/* RT_ARRAY */
	unsigned int len_field;		/* RT_SEQUENCE: index of the length */
};

struct rt_event_desc {
	bool present;
	bool decodable;			/* only the types we know */
	char name[RT_NAME_MAX];
	unsigned int nfields;
	struct rt_field field[RT_MAX_FIELDS];
};

struct rt_meta {
	uint8_t uuid[16];
	bool have_uuid;
	bool ctf18;			/* starts with the CTF 1.8 magic comment */
	/*
	 * A bit per compact id whose event header is untimed (module/ctf.c:
	 * "untimed = N" in the header's enum): its 27 bits the id again, its
	 * time the record's before it.
	 */
	uint32_t untimed;
	struct rt_event_desc ev[RT_MAX_IDS];
};

/* Copy at most @size - 1 bytes of @src and terminate. */
static inline void rt_copy_str(char *dst, const char *src, size_t size)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

struct rt_lexer {
	const char *p;
	char tok[256];
	char type;			/* 'i' ident, 'n' number, 's' string, ':' ":=", punct, 0 end */
};

static inline void rt_lex(struct rt_lexer *l)
{
	const char *p = l->p;
	size_t n = 0;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");

			p = e ? e + 2 : p + strlen(p);
			continue;
		}
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		break;
	}
	l->tok[0] = '\0';
	if (!*p) {
		l->type = 0;
	} else if (isalpha((unsigned char)*p) || *p == '_') {
		while ((isalnum((unsigned char)*p) || *p == '_') && n < sizeof(l->tok) - 1)
			l->tok[n++] = *p++;
		l->type = 'i';
	} else if (isdigit((unsigned char)*p)) {
		while ((isalnum((unsigned char)*p)) && n < sizeof(l->tok) - 1)
			l->tok[n++] = *p++;
		l->type = 'n';
	} else if (*p == '"') {
		p++;
		while (*p && *p != '"' && n < sizeof(l->tok) - 1)
			l->tok[n++] = *p++;
		if (*p == '"')
			p++;
		l->type = 's';
	} else if (p[0] == ':' && p[1] == '=') {
		p += 2;
		l->type = ':';
	} else {
		l->type = *p++;
	}
	l->tok[n] = '\0';
	l->p = p;
}

/* Skip to after the ';' that ends the current statement (braces nest). */
static inline void rt_skip_statement(struct rt_lexer *l)
{
	int depth = 0;

	while (l->type) {
		if (l->type == '{')
			depth++;
		else if (l->type == '}' && depth-- == 0)
			return;	/* end of the enclosing block: leave it */
		else if (l->type == ';' && depth == 0) {
			rt_lex(l);
			return;
		}
		rt_lex(l);
	}
}

/* Inside a block: skip to after its closing '}'. */
static inline void rt_skip_block(struct rt_lexer *l)
{
	int depth = 0;

	while (l->type) {
		if (l->type == '{') {
			depth++;
		} else if (l->type == '}' && depth-- == 0) {
			rt_lex(l);
			return;
		}
		rt_lex(l);
	}
}

static inline unsigned int rt_type_size(const char *type)
{
	static const struct {
		const char *name;
		unsigned int size;
	} types[] = {
		{ "uint8_t", 1 }, { "int8_t", 1 }, { "utf8_t", 1 },
		{ "uint16_t", 2 }, { "int16_t", 2 },
		{ "uint32_t", 4 }, { "int32_t", 4 },
		{ "uint64_t", 8 }, { "int64_t", 8 },
	};
	unsigned int i;

	for (i = 0; i < RT_ARRAY_SIZE(types); i++)
		if (!strcmp(type, types[i].name))
			return types[i].size;
	return 0;
}

/*
 * `integer { size = N; align = 8; ... }`, the lexer past "integer": its
 * size in bytes, 0 for one that is not whole bytes of 8 to 64 bits or
 * not byte-aligned (kernel_stack's ips, base 16, are such an integer).
 */
static inline unsigned int rt_parse_integer(struct rt_lexer *l)
{
	unsigned long bits = 0, align = 8;
	char attr[32];

	if (l->type != '{')
		return 0;
	rt_lex(l);
	while (l->type == 'i') {
		rt_copy_str(attr, l->tok, sizeof(attr));
		rt_lex(l);
		if (l->type != '=')
			return 0;
		rt_lex(l);
		if (!strcmp(attr, "size") && l->type == 'n')
			bits = strtoul(l->tok, NULL, 0);
		else if (!strcmp(attr, "align") && l->type == 'n')
			align = strtoul(l->tok, NULL, 0);
		rt_skip_statement(l);
	}
	if (l->type != '}')
		return 0;
	rt_lex(l);
	if (align != 8 || (bits != 8 && bits != 16 && bits != 32 && bits != 64))
		return 0;
	return bits / 8;
}

/* Parse the body of `fields := struct { ... }`; the lexer is past '{'. */
static inline bool rt_parse_fields(struct rt_lexer *l, struct rt_event_desc *d)
{
	struct rt_field *f;
	unsigned int i;

	while (l->type && l->type != '}') {
		if (l->type != 'i' || d->nfields == RT_MAX_FIELDS)
			return false;
		f = &d->field[d->nfields];
		memset(f, 0, sizeof(*f));
		/* `enum : int64_t { a = 0, ... } name;` reads as its integer. */
		if (!strcmp(l->tok, "enum")) {
			rt_lex(l);
			if (l->type != ':')
				return false;
			rt_lex(l);
			f->size = rt_type_size(l->tok);
			rt_lex(l);
			if (!f->size || l->type != '{')
				return false;
			rt_lex(l);
			rt_skip_block(l);
		} else if (!strcmp(l->tok, "integer")) {
			rt_lex(l);
			f->size = rt_parse_integer(l);
			if (!f->size)
				return false;
		} else {
			f->size = rt_type_size(l->tok);
			if (!f->size)
				return false;
			rt_lex(l);
		}
		if (l->type != 'i')
			return false;
		rt_copy_str(f->name, l->tok, sizeof(f->name));
		rt_lex(l);
		f->kind = RT_SCALAR;
		if (l->type == '[') {
			rt_lex(l);
			if (l->type == 'n') {
				f->kind = RT_ARRAY;
				f->count = strtoul(l->tok, NULL, 0);
			} else if (l->type == 'i') {
				f->kind = RT_SEQUENCE;
				for (i = 0; i < d->nfields; i++)
					if (!strcmp(d->field[i].name, l->tok) &&
					    d->field[i].kind == RT_SCALAR)
						break;
				if (i == d->nfields)
					return false;
				f->len_field = i;
			} else {
				return false;
			}
			rt_lex(l);
			if (l->type != ']')
				return false;
			rt_lex(l);
		}
		if (l->type != ';')
			return false;
		rt_lex(l);
		d->nfields++;
	}
	return l->type == '}';
}

static inline int rt_parse_uuid(const char *s, uint8_t uuid[16])
{
	unsigned int i, n = 0;

	for (i = 0; s[i] && n < 32; i++) {
		if (s[i] == '-')
			continue;
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		if (n % 2 == 0)
			uuid[n / 2] = 0;
		uuid[n / 2] |= (isdigit((unsigned char)s[i]) ? s[i] - '0' :
				tolower((unsigned char)s[i]) - 'a' + 10) << (n % 2 ? 0 : 4);
		n++;
	}
	return n == 32 && !s[i] ? 0 : -1;
}

/* `event { name = ...; id = ...; fields := struct { ... }; };` */
static inline int rt_parse_event(struct rt_lexer *l, struct rt_meta *m)
{
	struct rt_event_desc d = { .present = true };
	long id = -1;
	bool fields_ok = false;

	while (l->type && l->type != '}') {
		char key[64];

		if (l->type != 'i') {
			rt_skip_statement(l);
			continue;
		}
		rt_copy_str(key, l->tok, sizeof(key));
		rt_lex(l);
		if (!strcmp(key, "fields") && l->type == ':') {
			rt_lex(l);
			if (l->type == 'i' && !strcmp(l->tok, "struct")) {
				rt_lex(l);
				if (l->type == '{') {
					rt_lex(l);
					fields_ok = rt_parse_fields(l, &d);
					rt_skip_block(l);
				}
			}
			rt_skip_statement(l);
			continue;
		}
		if (l->type == '=') {
			rt_lex(l);
			if (!strcmp(key, "name") && (l->type == 's' || l->type == 'i'))
				rt_copy_str(d.name, l->tok, sizeof(d.name));
			else if (!strcmp(key, "id") && l->type == 'n')
				id = strtol(l->tok, NULL, 0);
		}
		rt_skip_statement(l);
	}
	if (l->type == '}')
		rt_lex(l);
	if (l->type == ';')
		rt_lex(l);
	if (id < 0 || id >= RT_MAX_IDS || m->ev[id].present)
		return -1;
	d.decodable = fields_ok;
	m->ev[id] = d;
	return 0;
}

static inline int rt_parse_trace(struct rt_lexer *l, struct rt_meta *m)
{
	while (l->type && l->type != '}') {
		if (l->type == 'i' && !strcmp(l->tok, "uuid")) {
			rt_lex(l);
			if (l->type != '=')
				return -1;
			rt_lex(l);
			if (l->type != 's' || rt_parse_uuid(l->tok, m->uuid))
				return -1;
			m->have_uuid = true;
		}
		rt_skip_statement(l);
	}
	if (l->type == '}')
		rt_lex(l);
	if (l->type == ';')
		rt_lex(l);
	return 0;
}

/* Parse TSDL text; 0 or -1.  @m must be zeroed. */
static inline int rt_meta_parse(struct rt_meta *m, const char *text)
{
	struct rt_lexer l = { .p = text };

	const char *u = strstr(text, "untimed = ");

	m->ctf18 = !strncmp(text, "/* CTF 1.8 */", 13);
	if (u && atoi(u + 10) > 0 && atoi(u + 10) < RINGTRACE_EVENT_ID_EXTENDED)
		m->untimed |= 1U << atoi(u + 10);
	rt_lex(&l);
	while (l.type) {
		if (l.type == 'i' && (!strcmp(l.tok, "event") || !strcmp(l.tok, "trace"))) {
			bool ev = !strcmp(l.tok, "event");

			rt_lex(&l);
			if (l.type == '{') {
				rt_lex(&l);
				if ((ev ? rt_parse_event(&l, m) : rt_parse_trace(&l, m)))
					return -1;
				continue;
			}
		}
		rt_skip_statement(&l);
		if (l.type == '}')	/* stray: never loop on it */
			rt_lex(&l);
	}
	return m->have_uuid ? 0 : -1;
}

/* Read and parse the metadata file: calloc()ed, or NULL. */
static inline struct rt_meta *rt_meta_load_file(void)
{
	struct rt_meta *m = calloc(1, sizeof(*m));
	char *text = rt_slurp(rt_path("metadata"));

	if (!m || !text || rt_meta_parse(m, text)) {
		free(m);
		m = NULL;
	}
	free(text);
	return m;
}

static inline int rt_meta_find(const struct rt_meta *m, const char *name)
{
	int id;

	for (id = 0; id < RT_MAX_IDS; id++)
		if (m->ev[id].present && !strcmp(m->ev[id].name, name))
			return id;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Packets and events                                                  */
/* ------------------------------------------------------------------ */

static inline uint64_t rt_le(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	while (size--)
		v = v << 8 | p[size];
	return v;
}

/* Bytes of the payload of an event of @d starting at @p, or -1. */
static inline long rt_payload_len(const struct rt_event_desc *d,
				  const uint8_t *p, size_t avail)
{
	uint64_t val[RT_MAX_FIELDS], n;
	size_t off = 0, bytes;
	unsigned int i;

	for (i = 0; i < d->nfields; i++) {
		const struct rt_field *f = &d->field[i];

		n = f->kind == RT_SCALAR ? 1 :
		    f->kind == RT_ARRAY ? f->count : val[f->len_field];
		if (n > avail / f->size)
			return -1;
		bytes = n * f->size;
		if (bytes > avail - off)
			return -1;
		if (f->kind == RT_SCALAR)
			val[i] = rt_le(p + off, f->size);
		off += bytes;
	}
	return off;
}

struct rt_event {
	uint32_t id;
	uint64_t ts;
	bool extended;
	bool untimed;			/* its header: the id twice, no time */
	size_t offset;			/* of the header in the packet */
	const uint8_t *payload;
	size_t payload_len;
};

/*
 * Interned stacks (module/stack.c): a stack_def ("uint8_t kind; uint8_t
 * flags; uint16_t depth; uint64_t ips[depth]") holds a stack's frames, a
 * stack_ref ("uint32_t kernel; uint32_t user") names the defs of its
 * event's stacks by their offset in the packet, 0 for none.  Fed every
 * event of a drain in order, struct rt_stacks keeps the current packet's
 * defs (a packet starts where an offset goes back) and resolves refs.
 */
#define RT_STACK_KERNEL		0
#define RT_STACK_USER		1
#define RT_STACK_DEFS_MAX	1024

struct rt_stack_def {
	size_t offset;
	bool extended;			/* its event's header was extended */
	uint8_t kind, flags;
	uint16_t depth;
	uint64_t ips[RINGTRACE_USTACK_MAX_DEPTH];
};

struct rt_stacks {
	int def_id, ref_id;		/* from rt_meta_find() */
	size_t last_offset;
	unsigned int ndefs;		/* in the current packet */
	unsigned int packets;		/* with a def or a ref */
	unsigned int defs, refs;	/* in all */
	unsigned int bad;		/* a malformed def, a ref to none */
	struct rt_stack_def def[RT_STACK_DEFS_MAX];
	/* The last ref's stacks (NULL: none). */
	const struct rt_stack_def *kernel, *user;
};

/* The def at @off of the current packet, of @kind, or NULL. */
static inline const struct rt_stack_def *
rt_stacks_find(const struct rt_stacks *st, uint32_t off, uint8_t kind)
{
	unsigned int i;

	for (i = 0; i < st->ndefs; i++)
		if (st->def[i].offset == off)
			return st->def[i].kind == kind ? &st->def[i] : NULL;
	return NULL;
}

/*
 * Feed @ev: 1 for a stack_def (kept, or counted in @bad), 2 for a
 * stack_ref (st->kernel and st->user its stacks; a field naming no def of
 * its kind earlier in the packet is counted in @bad), 0 for another event.
 */
static inline int rt_stacks_feed(struct rt_stacks *st, const struct rt_event *ev)
{
	struct rt_stack_def *d;
	uint32_t k, u;

	if (ev->offset <= st->last_offset)
		st->ndefs = 0;
	if (!st->ndefs && ((int)ev->id == st->def_id || (int)ev->id == st->ref_id))
		st->packets++;
	st->last_offset = ev->offset;
	if ((int)ev->id == st->def_id) {
		st->defs++;
		if (st->ndefs == RT_STACK_DEFS_MAX || ev->payload_len < 4) {
			st->bad++;
			return 1;
		}
		d = &st->def[st->ndefs];
		d->offset = ev->offset;
		d->extended = ev->extended;
		d->kind = ev->payload[0];
		d->flags = ev->payload[1];
		d->depth = (uint16_t)rt_le(ev->payload + 2, 2);
		if (d->depth > RINGTRACE_USTACK_MAX_DEPTH ||
		    ev->payload_len != 4 + 8 * (size_t)d->depth || d->kind > 1) {
			st->bad++;
			return 1;
		}
		memcpy(d->ips, ev->payload + 4, 8 * (size_t)d->depth);
		st->ndefs++;
		return 1;
	}
	if ((int)ev->id != st->ref_id)
		return 0;
	st->refs++;
	k = (uint32_t)rt_le(ev->payload, 4);
	u = (uint32_t)rt_le(ev->payload + 4, 4);
	st->kernel = k ? rt_stacks_find(st, k, RT_STACK_KERNEL) : NULL;
	st->user = u ? rt_stacks_find(st, u, RT_STACK_USER) : NULL;
	st->bad += (k && !st->kernel) + (u && !st->user) + (!k && !u);
	return 2;
}

/* rt_stacks_feed() as an rt_drain() callback (@arg the struct rt_stacks). */
static inline int rt_stacks_drain_fn(void *arg, const struct rt_event *ev,
				     char *msg, size_t msg_size)
{
	(void)msg;
	(void)msg_size;
	rt_stacks_feed(arg, ev);
	return 0;
}

/* Called per event; returns 0, or -1 after writing a message in @msg. */
typedef int (*rt_event_fn)(void *arg, const struct rt_event *ev,
			   char *msg, size_t msg_size);

struct rt_packet_info {
	struct ringtrace_packet_header h;
	unsigned int events;		/* walked */
};

#define RT_FAIL(...) do {						\
	snprintf(msg, msg_size, __VA_ARGS__);				\
	return -1;							\
} while (0)

/*
 * Check the packet @sb handed out by GET_SUBBUF on buffer @b: every
 * header field against the ABI and the metadata, and every event (known
 * layout, timestamps within [timestamp_begin, timestamp_end] and not
 * decreasing, the walk ending exactly at content_size, the count matching).
 * @fn (may be NULL) sees each event.  0, or -1 with a message.
 */
static inline int rt_check_packet(const struct rt_meta *m, struct rt_buf *b,
				  const struct ringtrace_subbuf *sb,
				  rt_event_fn fn, void *arg,
				  struct rt_packet_info *info,
				  char *msg, size_t msg_size)
{
	const size_t hsize = sizeof(struct ringtrace_packet_header);
	const uint64_t ts_mask = (1ULL << RINGTRACE_COMPACT_TS_BITS) - 1;
	const uint32_t id_mask = (1U << RINGTRACE_EVENT_ID_BITS) - 1;
	struct ringtrace_packet_header h;
	const uint8_t *pkt;
	struct rt_event ev;
	uint64_t prev;
	size_t off;

	if (sb->offset < b->meta_page_size ||
	    (sb->offset - b->meta_page_size) % b->subbuf_size ||
	    sb->offset + b->subbuf_size > b->map_len)
		RT_FAIL("offset %llu is not a sub-buffer of the mapping",
			(unsigned long long)sb->offset);
	if (sb->content_size < hsize || sb->content_size >= b->subbuf_size)
		RT_FAIL("content_size %llu out of [%zu, %u)",
			(unsigned long long)sb->content_size, hsize, b->subbuf_size);
	if (sb->packet_size != b->subbuf_size)
		RT_FAIL("subbuf.packet_size %llu != subbuf_size %u",
			(unsigned long long)sb->packet_size, b->subbuf_size);
	pkt = b->map + sb->offset;
	memcpy(&h, pkt, hsize);
	if (info)
		info->h = h;
	if (h.magic != RINGTRACE_CTF_MAGIC)
		RT_FAIL("magic %#x", h.magic);
	if (memcmp(h.uuid, m->uuid, sizeof(h.uuid)))
		RT_FAIL("packet uuid differs from the metadata's");
	if (h.stream_id != RINGTRACE_STREAM_ID)
		RT_FAIL("stream_id %u", h.stream_id);
	if (h.stream_instance_id != (uint64_t)b->cpu || h.cpu_id != (uint32_t)b->cpu)
		RT_FAIL("cpu %u / stream_instance_id %llu in cpu %d's buffer",
			h.cpu_id, (unsigned long long)h.stream_instance_id, b->cpu);
	if (h.content_size != sb->content_size * 8)
		RT_FAIL("content_size %llu bits, GET said %llu bytes",
			(unsigned long long)h.content_size,
			(unsigned long long)sb->content_size);
	/* A verbatim copy of content_size bytes must be a whole CTF packet. */
	if (h.packet_size != h.content_size)
		RT_FAIL("packet_size %llu bits != content_size %llu bits",
			(unsigned long long)h.packet_size,
			(unsigned long long)h.content_size);
	if (!b->seq_known && h.packet_seq_num <= sb->pos / b->subbuf_size) {
		b->seq_origin = sb->pos / b->subbuf_size - h.packet_seq_num;
		b->seq_known = true;
	}
	if (!b->seq_known ||
	    h.packet_seq_num != sb->pos / b->subbuf_size - b->seq_origin)
		RT_FAIL("packet_seq_num %llu at position %llu",
			(unsigned long long)h.packet_seq_num,
			(unsigned long long)sb->pos);
	if (h.events != sb->events || h.events_discarded != sb->events_discarded)
		RT_FAIL("header events %u/%llu discarded, GET said %llu/%llu",
			h.events, (unsigned long long)h.events_discarded,
			(unsigned long long)sb->events,
			(unsigned long long)sb->events_discarded);
	if (h.timestamp_end < h.timestamp_begin)
		RT_FAIL("timestamp_end %llu < timestamp_begin %llu",
			(unsigned long long)h.timestamp_end,
			(unsigned long long)h.timestamp_begin);

	prev = h.timestamp_begin;
	off = hsize;
	if (info)
		info->events = 0;
	while (off < sb->content_size) {
		const struct rt_event_desc *d;
		uint32_t word;
		long len;

		memset(&ev, 0, sizeof(ev));
		ev.offset = off;
		if (sb->content_size - off < RINGTRACE_COMPACT_HEADER_SIZE)
			RT_FAIL("truncated event header at %zu", off);
		word = rt_le(pkt + off, 4);
		if ((word & id_mask) == RINGTRACE_EVENT_ID_EXTENDED) {
			/* u32 {31, id}, then the whole u64 timestamp, unaligned. */
			if (sb->content_size - off < RINGTRACE_EXTENDED_HEADER_SIZE)
				RT_FAIL("truncated extended header at %zu", off);
			ev.extended = true;
			ev.id = word >> RINGTRACE_EVENT_ID_BITS;
			ev.ts = rt_le(pkt + off + 4, 8);
			off += RINGTRACE_EXTENDED_HEADER_SIZE;
		} else if (m->untimed >> (word & id_mask) & 1) {
			ev.untimed = true;
			ev.id = word >> RINGTRACE_EVENT_ID_BITS;
			ev.ts = prev;
			off += RINGTRACE_COMPACT_HEADER_SIZE;
		} else {
			ev.id = word & id_mask;
			ev.ts = (prev & ~ts_mask) | (word >> RINGTRACE_EVENT_ID_BITS);
			if (ev.ts < prev)
				ev.ts += ts_mask + 1;
			off += RINGTRACE_COMPACT_HEADER_SIZE;
		}
		if (ev.id >= RT_MAX_IDS || !m->ev[ev.id].present)
			RT_FAIL("event id %u at %zu not in the metadata", ev.id, ev.offset);
		d = &m->ev[ev.id];
		if (!d->decodable)
			RT_FAIL("event %s: layout not understood", d->name);
		len = rt_payload_len(d, pkt + off, sb->content_size - off);
		if (len < 0)
			RT_FAIL("event %s at %zu runs past content_size %llu",
				d->name, ev.offset, (unsigned long long)sb->content_size);
		if (ev.ts < prev || ev.ts < h.timestamp_begin || ev.ts > h.timestamp_end)
			RT_FAIL("event at %zu: ts %llu, previous %llu, packet [%llu, %llu]",
				ev.offset, (unsigned long long)ev.ts,
				(unsigned long long)prev,
				(unsigned long long)h.timestamp_begin,
				(unsigned long long)h.timestamp_end);
		prev = ev.ts;
		ev.payload = pkt + off;
		ev.payload_len = len;
		off += len;
		if (info)
			info->events++;
		if (fn && fn(arg, &ev, msg, msg_size))
			return -1;
	}
	if (info && info->events != h.events)
		RT_FAIL("walked %u events, header says %u", info->events, h.events);
	return 0;
}

/* Marker payload: u16 len; u8 data[len]. */
static inline int rt_marker_data(const struct rt_event *ev, const uint8_t **data,
				 size_t *len)
{
	if (ev->id != RINGTRACE_EVENT_MARKER || ev->payload_len < 2)
		return -1;
	*len = rt_le(ev->payload, 2);
	*data = ev->payload + 2;
	return *len + 2 == ev->payload_len ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Collecting markers                                                  */
/* ------------------------------------------------------------------ */

/* Markers as the tests write them: "<seq>:" + filler, decoded back. */
struct rt_markers {
	size_t count, cap;
	struct {
		uint8_t *data;
		size_t len;
	} *m;
	unsigned int other;		/* events that are not markers */
};

static inline int rt_collect_marker(void *arg, const struct rt_event *ev,
				    char *msg, size_t msg_size)
{
	struct rt_markers *c = arg;
	const uint8_t *data;
	size_t len;
	void *n;

	if (ev->id != RINGTRACE_EVENT_MARKER) {
		c->other++;
		return 0;
	}
	if (rt_marker_data(ev, &data, &len))
		RT_FAIL("marker payload of %zu bytes is not {len, data[len]}",
			ev->payload_len);
	if (c->count == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		n = realloc(c->m, c->cap * sizeof(*c->m));
		if (!n)
			RT_FAIL("out of memory");
		c->m = n;
	}
	c->m[c->count].data = malloc(len ? len : 1);
	if (!c->m[c->count].data)
		RT_FAIL("out of memory");
	memcpy(c->m[c->count].data, data, len);
	c->m[c->count].len = len;
	c->count++;
	return 0;
}

static inline void rt_markers_free(struct rt_markers *c)
{
	size_t i;

	for (i = 0; i < c->count; i++)
		free(c->m[i].data);
	free(c->m);
	memset(c, 0, sizeof(*c));
}

/* The sequence number a marker "<seq>:..." carries, or -1. */
static inline long long rt_marker_seq(const uint8_t *data, size_t len)
{
	long long v = 0;
	size_t i;

	for (i = 0; i < len && data[i] != ':'; i++) {
		if (!isdigit(data[i]))
			return -1;
		v = v * 10 + data[i] - '0';
	}
	return i && i < len ? v : -1;
}

/* Write marker "<seq>:" padded with 'x' to @len bytes (>= its prefix). */
static inline ssize_t rt_write_seq_marker(int fd, unsigned long long seq,
					  size_t len)
{
	char buf[RINGTRACE_MARKER_MAX];
	int n = snprintf(buf, sizeof(buf), "%llu:", seq);
	ssize_t ret;

	if ((size_t)n > len)
		len = n;
	memset(buf + n, 'x', len - n);
	ret = write(fd, buf, len);
	return ret < 0 ? -errno : ret;
}

static inline int rt_marker_open(void)
{
	int fd = open(rt_path("marker"), O_WRONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * GET, check, PUT until the buffer has nothing complete (-EAGAIN) or, with
 * tracing off, nothing at all (-ENODATA); returns that code, or -1 with a
 * message for a bad packet or a failing ioctl.  Counts packets and events,
 * and remembers the first and last packet headers.
 */
struct rt_drain {
	unsigned int packets;
	uint64_t events;
	uint64_t content_bytes;
	struct ringtrace_packet_header first, last;
	uint64_t seq_gaps;		/* packets skipped between two read */
	/* If set: where a packet that fails its check is saved, for analysis. */
	const char *dump_dir;
};

/* Save a bad packet as <dir>/bad-cpu<N>-pos<P>.bin; its name in @path. */
static inline void rt_dump_packet(const char *dir, const struct rt_buf *b,
				  const struct ringtrace_subbuf *sb,
				  char *path, size_t size)
{
	int fd;

	snprintf(path, size, "%s/bad-cpu%d-pos%llu.bin", dir, b->cpu,
		 (unsigned long long)sb->pos);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, b->map + sb->offset, sb->content_size) < 0)
		snprintf(path, size, "(could not save: %s)", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static inline int rt_drain(const struct rt_meta *m, struct rt_buf *b,
			   rt_event_fn fn, void *arg, struct rt_drain *dr,
			   char *msg, size_t msg_size)
{
	struct ringtrace_subbuf sb;
	struct rt_packet_info info;
	int ret;

	for (;;) {
		ret = rt_get(b->fd, &sb);
		if (ret == -EAGAIN || ret == -ENODATA)
			return ret;
		if (ret)
			RT_FAIL("GET_SUBBUF: %s", strerror(-ret));
		if (rt_check_packet(m, b, &sb, fn, arg, &info, msg, msg_size)) {
			if (dr && dr->dump_dir) {
				char path[512];
				size_t n = strlen(msg);

				rt_dump_packet(dr->dump_dir, b, &sb, path, sizeof(path));
				snprintf(msg + n, msg_size - n, "; packet in %s", path);
			}
			return -1;
		}
		if (dr) {
			if (!dr->packets)
				dr->first = info.h;
			else if (info.h.events_discarded < dr->last.events_discarded)
				RT_FAIL("events_discarded went back from %llu to %llu",
					(unsigned long long)dr->last.events_discarded,
					(unsigned long long)info.h.events_discarded);
			else if (info.h.packet_seq_num <= dr->last.packet_seq_num)
				RT_FAIL("packet_seq_num %llu after %llu",
					(unsigned long long)info.h.packet_seq_num,
					(unsigned long long)dr->last.packet_seq_num);
			/* A CTF reader refuses a clock that goes back. */
			else if (info.h.timestamp_begin < dr->last.timestamp_end)
				RT_FAIL("timestamp_begin %llu before the previous packet's end %llu",
					(unsigned long long)info.h.timestamp_begin,
					(unsigned long long)dr->last.timestamp_end);
			else
				dr->seq_gaps += info.h.packet_seq_num -
						dr->last.packet_seq_num - 1;
			dr->last = info.h;
			dr->packets++;
			dr->events += info.events;
			dr->content_bytes += sb.content_size;
		}
		ret = rt_put(b->fd, sb.pos);
		if (ret)
			RT_FAIL("PUT_SUBBUF: %s", strerror(-ret));
	}
}

#endif /* _RINGTRACE_TEST_H */
