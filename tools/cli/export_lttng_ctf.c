// SPDX-License-Identifier: GPL-2.0
/*
 * export -f lttng: the CTF writer -- LTTng 2.13's kernel trace layout on
 * x86_64, packets built here (export_lttng.h says what and why).
 *
 * The layout, as lttng-modules 2.13 writes it and its readers (babeltrace
 * 1 and 2, Trace Compass, lttng-analyses) rely on it:
 *
 *   packet  header { u32 magic 0xC1FC1FC1; u8 uuid[16]; u32 stream_id 0;
 *                    u64 stream_instance_id (the CPU) }
 *           context { u64 timestamp_begin, timestamp_end; u64 content_size,
 *                     packet_size (bits); u64 packet_seq_num (0, 1, ...);
 *                     unsigned long events_discarded (cumulative);
 *                     u32 cpu_id }                         84 bytes in all
 *           events, then zeros up to packet_size, a multiple of 4 KiB
 *   event   large header: u16 id, u32 low bits of the time (6 bytes), or
 *           u16 65535, u32 id, u64 time (14 bytes) when the id does not fit
 *           or 2^27 cycles or more passed since the stream's previous
 *           event (LTTng's rule; the packet's timestamp_begin counts as
 *           one), then the stream's event context, then the payload,
 *           byte-packed.
 *   context the two callstack contexts lttng-modules adds for `lttng
 *           add-context -k -t callstack-kernel -t callstack-user`, as its
 *           metadata declares them: per stack an unsigned int
 *           _callstack_<kind>_length, then that many unsigned long,
 *           base 16, callstack_<kind> (leaf first; a cut stack ends with
 *           an all-ones address, lttng-modules' delimiter).  Every event
 *           has both, of length 0 when it carried no such stack.
 *
 * Timestamps are the source trace's cycles: same clock, same frequency,
 * same offset.  timestamp_end is never before a packet's last event
 * (babeltrace2 refuses such a packet from lttng-modules 2.13), and packets
 * of a stream follow each other without gaps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "export_lttng.h"

#define CTF_MAGIC		0xC1FC1FC1U
#define PACKET_HEADER_SIZE	84
#define PACKET_MAX		(1024 * 1024)	/* content bytes, header included */
#define PACKET_ALIGN		4096
#define WBUF_SIZE		(64 * 1024)
#define TS_COMPACT_BITS		27
#define ID_EXTENDED		65535
#define HEADER_COMPACT		6
#define HEADER_EXTENDED		14
#define STACK_DELIMITER		UINT64_MAX	/* lttng-modules' ULONG_MAX */

/* ---- payloads ---------------------------------------------------------------------- */

void lb_reset(struct lbuf *b)
{
	b->len = 0;
	b->oom = false;
}

void lb_free(struct lbuf *b)
{
	free(b->p);
	*b = (struct lbuf){ 0 };
}

void lb_put(struct lbuf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (len > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *p;

		while (cap - b->len < len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

static unsigned int int_bytes(enum ltype t)
{
	switch (t) {
	case L_U8:
		return 1;
	case L_U16:
		return 2;
	case L_S32:
	case L_U32:
		return 4;
	default:
		return 8;
	}
}

void lb_int(struct lbuf *b, enum ltype t, uint64_t v)
{
	uint8_t le[8];
	unsigned int n = int_bytes(t);

	for (unsigned int i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	lb_put(b, le, n);
}

void lb_comm(struct lbuf *b, const void *text, size_t len)
{
	uint8_t comm[16] = { 0 };

	memcpy(comm, text, len < sizeof(comm) ? len : sizeof(comm));
	lb_put(b, comm, sizeof(comm));
}

void lb_str(struct lbuf *b, const void *text, size_t len)
{
	const uint8_t *nul = len ? memchr(text, 0, len) : NULL;

	lb_put(b, text, nul ? (size_t)(nul - (const uint8_t *)text) : len);
	lb_put(b, "", 1);
}

/* ---- TSDL -------------------------------------------------------------------------- */

static void lb_printf(struct lbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void lb_printf(struct lbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	lb_put(b, line, n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void lb_tsdl_int(struct lbuf *b, unsigned int bits, bool is_signed,
		     bool text, unsigned int base)
{
	lb_printf(b, "integer { size = %u; align = 8; signed = %d; encoding = %s; base = %u; }",
		  bits, is_signed, text ? "UTF8" : "none", base);
}

void lb_tsdl_field(struct lbuf *b, const char *name, enum ltype t)
{
	lb_put(b, "\t\t", 2);
	switch (t) {
	case L_U8:
	case L_U16:
	case L_U32:
	case L_U64:
		lb_tsdl_int(b, int_bytes(t) * 8, false, false, 10);
		break;
	case L_S32:
	case L_S64:
		lb_tsdl_int(b, int_bytes(t) * 8, true, false, 10);
		break;
	case L_X64:
		lb_tsdl_int(b, 64, false, false, 16);
		break;
	case L_COMM:
		lb_tsdl_int(b, 8, true, true, 10);
		lb_printf(b, " _%s[16];\n", name);
		return;
	case L_STR:
		lb_put(b, "string", 6);
		break;
	case L_MSG:
		/* ctf_sequence_text: its length field, then the text. */
		lb_tsdl_int(b, 64, false, false, 10);
		lb_printf(b, " __%s_length;\n\t\t", name);
		lb_tsdl_int(b, 8, true, true, 10);
		lb_printf(b, " _%s[ __%s_length ];\n", name, name);
		return;
	case L_VTIDS:
		lb_tsdl_int(b, 8, false, false, 10);
		lb_printf(b, " __%s_length;\n\t\t", name);
		lb_tsdl_int(b, 32, true, false, 10);
		lb_printf(b, " _%s[ __%s_length ];\n", name, name);
		return;
	case L_ARGS:
		lb_tsdl_int(b, 64, false, false, 10);
		lb_printf(b, " _%s[6];\n", name);
		return;
	}
	lb_printf(b, " _%s;\n", name);
}

/* A TSDL string literal's body: what would end or break it escaped. */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s >= 0x20 && *s != 0x7f)
			fputc(*s, f);
	}
}

static void put_uuid(FILE *f, const uint8_t *u)
{
	for (int i = 0; i < 16; i++)
		fprintf(f, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

/* ---- streams ----------------------------------------------------------------------- */

struct lstream {
	uint32_t cpu;
	int fd;
	/* What is not written yet: buf[0] is at file offset buf_off. */
	uint8_t *buf;
	size_t len;
	uint64_t buf_off;
	/* The open packet. */
	bool open;
	uint64_t pkt_off;		/* its file offset */
	uint64_t content;		/* bytes so far, header included */
	uint64_t begin;
	uint64_t last;			/* the latest event time (begin at first) */
	uint32_t events;
	/* Across packets. */
	uint64_t seq;
	uint64_t discarded;		/* cumulative */
	uint64_t prev_end;		/* the last closed packet's end */
};

struct lclass {
	char *name;
	char *fields;
};

struct lwriter {
	char *dir;			/* where the trace goes */
	char *tmp;			/* where it is written */
	char *kernel;			/* tmp/kernel */
	uint8_t uuid[16];
	struct lstream *s;
	unsigned int nr;
	struct lclass *classes;
	unsigned int nr_classes, cap_classes;
	struct lbuf ctx;		/* the event context being written */
	bool have_first;
	uint64_t first, end;
	bool created;			/* tmp exists: lw_free() removes it */
	bool done;			/* renamed to dir */
};

static int write_out(struct lwriter *w, struct lstream *s)
{
	int err;

	if (!s->len)
		return 0;
	err = write_all(s->fd, s->buf, s->len);
	if (err) {
		error_line("%s/channel0_%" PRIu32 ": %s", w->dir, s->cpu, strerror(-err));
		return -1;
	}
	s->buf_off += s->len;
	s->len = 0;
	return 0;
}

static int append(struct lwriter *w, struct lstream *s, const void *data, size_t len)
{
	int err;

	if (!len)
		return 0;
	if (len > WBUF_SIZE - s->len && write_out(w, s))
		return -1;
	if (len > WBUF_SIZE) {
		err = write_all(s->fd, data, len);
		if (err) {
			error_line("%s/channel0_%" PRIu32 ": %s", w->dir, s->cpu,
				   strerror(-err));
			return -1;
		}
		s->buf_off += len;
		return 0;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int open_packet(struct lwriter *w, struct lstream *s)
{
	static const uint8_t zero[PACKET_HEADER_SIZE];

	s->open = true;
	s->pkt_off = s->buf_off + s->len;
	s->content = PACKET_HEADER_SIZE;
	s->begin = s->seq ? s->prev_end : w->first;
	s->last = s->begin;
	s->events = 0;
	return append(w, s, zero, sizeof(zero));
}

/* Ends the open packet at @end (not before its last event), padded. */
static int close_packet(struct lwriter *w, struct lstream *s, uint64_t end)
{
	static const uint8_t zero[PACKET_ALIGN];
	uint64_t size = (s->content + PACKET_ALIGN - 1) / PACKET_ALIGN * PACKET_ALIGN;
	uint8_t h[PACKET_HEADER_SIZE];
	ssize_t n;

	if (end < s->last)
		end = s->last;
	if (append(w, s, zero, size - s->content))
		return -1;
	put_le(h, CTF_MAGIC, 4);
	memcpy(h + 4, w->uuid, 16);
	put_le(h + 20, 0, 4);				/* stream_id */
	put_le(h + 24, s->cpu, 8);			/* stream_instance_id */
	put_le(h + 32, s->begin, 8);
	put_le(h + 40, end, 8);
	put_le(h + 48, s->content * 8, 8);
	put_le(h + 56, size * 8, 8);
	put_le(h + 64, s->seq, 8);
	put_le(h + 72, s->discarded, 8);
	put_le(h + 80, s->cpu, 4);
	/* The header was written whole, into the buffer or out of it. */
	if (s->pkt_off >= s->buf_off) {
		memcpy(s->buf + (s->pkt_off - s->buf_off), h, sizeof(h));
	} else {
		n = pwrite(s->fd, h, sizeof(h), (off_t)s->pkt_off);
		if (n != (ssize_t)sizeof(h)) {
			error_line("%s/channel0_%" PRIu32 ": %s", w->dir, s->cpu,
				   n < 0 ? strerror(errno) : "short write");
			return -1;
		}
	}
	s->open = false;
	s->prev_end = end;
	s->seq++;
	return 0;
}

static void first_time(struct lwriter *w, uint64_t ts)
{
	if (!w->have_first) {
		w->have_first = true;
		w->first = ts;
	}
	if (ts > w->end)
		w->end = ts;
}

/* The stream event context of @stacks (NULL: both empty) into @b. */
static void put_context(struct lbuf *b, const struct lw_stack *stacks)
{
	lb_reset(b);
	for (unsigned int k = 0; k < LW_NR_STACKS; k++) {
		const struct lw_stack *st = stacks ? &stacks[k] : NULL;
		uint32_t nr = st ? st->nr : 0;

		lb_int(b, L_U32, nr + (st && st->incomplete));
		for (uint32_t j = 0; j < nr; j++)
			lb_int(b, L_X64, st->ips[j]);
		if (st && st->incomplete)
			lb_int(b, L_X64, STACK_DELIMITER);
	}
}

int lw_event(struct lwriter *w, unsigned int i, uint64_t ts, int id,
	     const struct lw_stack *stacks, const struct lbuf *payload)
{
	struct lstream *s = &w->s[i];
	uint8_t h[HEADER_EXTENDED];
	size_t hlen, clen;

	put_context(&w->ctx, stacks);
	if (w->ctx.oom) {
		error_line("out of memory");
		return -1;
	}
	clen = w->ctx.len;

	first_time(w, ts);
	/* The reader gives each CPU's events in time order; a stream never
	 * goes back whatever it is given. */
	if (ts < (s->open ? s->last : s->prev_end))
		ts = s->open ? s->last : s->prev_end;
	if (s->open && s->events &&
	    s->content + HEADER_EXTENDED + clen + payload->len > PACKET_MAX &&
	    close_packet(w, s, ts))
		return -1;
	if (!s->open && open_packet(w, s))
		return -1;
	if (id < ID_EXTENDED && ts - s->last < (1ULL << TS_COMPACT_BITS)) {
		put_le(h, (uint64_t)id, 2);
		put_le(h + 2, ts, 4);
		hlen = HEADER_COMPACT;
	} else {
		put_le(h, ID_EXTENDED, 2);
		put_le(h + 2, (uint64_t)id, 4);
		put_le(h + 6, ts, 8);
		hlen = HEADER_EXTENDED;
	}
	if (append(w, s, h, hlen) || append(w, s, w->ctx.p, clen) ||
	    append(w, s, payload->p, payload->len))
		return -1;
	s->content += hlen + clen + payload->len;
	s->last = ts;
	s->events++;
	return 0;
}

int lw_lost(struct lwriter *w, unsigned int i, uint64_t ts, uint64_t n)
{
	struct lstream *s = &w->s[i];

	first_time(w, ts);
	/*
	 * The packet that counts them starts where they were lost, after one
	 * that does not: readers count the losses between two packets (a
	 * stream's first packet can only say events "may" have been lost).
	 */
	if (!s->open && !s->seq && open_packet(w, s))
		return -1;
	if (s->open && (s->events || !s->seq) && close_packet(w, s, ts))
		return -1;
	s->discarded += n;
	return 0;
}

void lw_start_at(struct lwriter *w, uint64_t ts)
{
	first_time(w, ts);
}

void lw_end_at(struct lwriter *w, uint64_t ts)
{
	if (ts > w->end)
		w->end = ts;
}

/* ---- the trace --------------------------------------------------------------------- */

int lw_class(struct lwriter *w, const char *name, const char *fields)
{
	struct lclass *c;

	if (w->nr_classes == w->cap_classes) {
		unsigned int cap = w->cap_classes ? 2 * w->cap_classes : 64;

		c = realloc(w->classes, cap * sizeof(*c));
		if (!c)
			goto oom;
		w->classes = c;
		w->cap_classes = cap;
	}
	c = &w->classes[w->nr_classes];
	c->name = strdup(name);
	c->fields = strdup(fields);
	if (!c->name || !c->fields) {
		free(c->name);
		free(c->fields);
		goto oom;
	}
	return (int)w->nr_classes++;
oom:
	error_line("out of memory");
	return -1;
}

/* Removes what @w wrote: its files, then its directories. */
static void remove_written(struct lwriter *w)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (!w->created)
		return;
	d = w->kernel ? opendir(w->kernel) : NULL;
	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", w->kernel, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	if (w->kernel)
		rmdir(w->kernel);
	rmdir(w->tmp);
}

/* An empty directory, or nothing: where a trace may go. */
static int check_target(const char *dir)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int n = 0;

	if (lstat(dir, &st)) {
		if (errno == ENOENT)
			return 0;
		error_line("%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || !(d = opendir(dir))) {
		error_line("%s: exists and is not a directory one can write a trace into", dir);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	if (n) {
		error_line("%s: exists and is not empty", dir);
		return -1;
	}
	return 0;
}

struct lwriter *lw_create(const char *dir, const uint8_t *uuid,
			  const uint32_t *cpus, unsigned int nr)
{
	struct lwriter *w = calloc(1, sizeof(*w));
	char path[PATH_MAX];
	mode_t mask;

	if (!w)
		goto oom;
	w->dir = strdup(dir);
	w->s = calloc(nr ? nr : 1, sizeof(*w->s));
	if (!w->dir || !w->s)
		goto oom;
	if (asprintf(&w->tmp, "%s.lttng-XXXXXX", dir) < 0) {
		w->tmp = NULL;
		goto oom;
	}
	memcpy(w->uuid, uuid, sizeof(w->uuid));
	w->nr = nr;
	for (unsigned int i = 0; i < nr; i++)
		w->s[i].fd = -1;
	if (check_target(dir))
		goto fail;
	if (!mkdtemp(w->tmp)) {
		error_line("%s: %s", w->tmp, strerror(errno));
		goto fail;
	}
	w->created = true;
	/* mkdtemp's 0700 becomes what mkdir would have made. */
	mask = umask(0);
	umask(mask);
	chmod(w->tmp, 0777 & ~mask);
	if (asprintf(&w->kernel, "%s/kernel", w->tmp) < 0) {
		w->kernel = NULL;
		goto oom;
	}
	if (mkdir(w->kernel, 0777)) {
		error_line("%s: %s", w->kernel, strerror(errno));
		goto fail;
	}
	for (unsigned int i = 0; i < nr; i++) {
		struct lstream *s = &w->s[i];

		s->cpu = cpus[i];
		snprintf(path, sizeof(path), "%s/channel0_%" PRIu32, w->kernel, s->cpu);
		s->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		s->buf = malloc(WBUF_SIZE);
		if (s->fd < 0 || !s->buf) {
			error_line("%s: %s", path, s->buf ? strerror(errno) : "out of memory");
			goto fail;
		}
	}
	return w;
oom:
	error_line("out of memory");
fail:
	lw_free(w);
	return NULL;
}

/* "20250101T120000+0100": LTTng's trace_creation_datetime, local time. */
static void datetime(char *buf, size_t size, const struct lw_info *in, uint64_t ts)
{
	__int128 s = (__int128)in->clock_offset_s +
		     ((__int128)in->clock_offset + ts) / (__int128)in->clock_freq;
	time_t t = (time_t)s;
	struct tm tm;

	buf[0] = '\0';
	if (s != t || !localtime_r(&t, &tm) ||
	    !strftime(buf, size, "%Y%m%dT%H%M%S%z", &tm))
		buf[0] = '\0';
}

static void env_string(FILE *f, const char *key, const char *value)
{
	if (!value)
		return;
	fprintf(f, "\t%s = \"", key);
	put_escaped(f, value);
	fputs("\";\n", f);
}

static const char tsdl_head[] =
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n\n";

static const char tsdl_stream[] =
	"typealias integer {\n"
	"\tsize = 27; align = 1; signed = false;\n"
	"\tmap = clock.monotonic.value;\n"
	"} := uint27_clock_monotonic_t;\n\n"
	"typealias integer {\n"
	"\tsize = 32; align = 8; signed = false;\n"
	"\tmap = clock.monotonic.value;\n"
	"} := uint32_clock_monotonic_t;\n\n"
	"typealias integer {\n"
	"\tsize = 64; align = 8; signed = false;\n"
	"\tmap = clock.monotonic.value;\n"
	"} := uint64_clock_monotonic_t;\n\n"
	"struct packet_context {\n"
	"\tuint64_clock_monotonic_t timestamp_begin;\n"
	"\tuint64_clock_monotonic_t timestamp_end;\n"
	"\tuint64_t content_size;\n"
	"\tuint64_t packet_size;\n"
	"\tuint64_t packet_seq_num;\n"
	"\tunsigned long events_discarded;\n"
	"\tuint32_t cpu_id;\n"
	"};\n\n"
	"struct event_header_compact {\n"
	"\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\tvariant <id> {\n"
	"\t\tstruct {\n"
	"\t\t\tuint27_clock_monotonic_t timestamp;\n"
	"\t\t} compact;\n"
	"\t\tstruct {\n"
	"\t\t\tuint32_t id;\n"
	"\t\t\tuint64_clock_monotonic_t timestamp;\n"
	"\t\t} extended;\n"
	"\t} v;\n"
	"} align(8);\n\n"
	"struct event_header_large {\n"
	"\tenum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n"
	"\tvariant <id> {\n"
	"\t\tstruct {\n"
	"\t\t\tuint32_clock_monotonic_t timestamp;\n"
	"\t\t} compact;\n"
	"\t\tstruct {\n"
	"\t\t\tuint32_t id;\n"
	"\t\t\tuint64_clock_monotonic_t timestamp;\n"
	"\t\t} extended;\n"
	"\t} v;\n"
	"} align(8);\n\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tevent.header := struct event_header_large;\n"
	"\tpacket.context := struct packet_context;\n"
	"\tevent.context := struct {\n"
	"\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; } __callstack_kernel_length;\n"
	"\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 16; } _callstack_kernel[ __callstack_kernel_length ];\n"
	"\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; } __callstack_user_length;\n"
	"\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 16; } _callstack_user[ __callstack_user_length ];\n"
	"\t};\n"
	"};\n\n";

static void write_metadata(FILE *f, const struct lwriter *w, const struct lw_info *in)
{
	__int128 off = (__int128)in->clock_offset_s * in->clock_freq + in->clock_offset;
	char when[64];

	fputs("/* CTF 1.8 */\n", f);
	if (in->comment) {
		/* No comment end inside: drop the characters. */
		fputs("/* ", f);
		for (const char *p = in->comment; *p; p++)
			if (*p != '*' && *p != '/' && (unsigned char)*p >= 0x20)
				fputc(*p, f);
		fputs(" */\n", f);
	}
	fputc('\n', f);
	fputs(tsdl_head, f);
	fputs("trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"", f);
	put_uuid(f, w->uuid);
	fputs("\";\n\tbyte_order = le;\n\tpacket.header := struct {\n"
	      "\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n"
	      "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n"
	      "\t};\n};\n\n", f);

	/* lttng-modules' env keys, in its order. */
	fputs("env {\n", f);
	env_string(f, "hostname", in->hostname);
	env_string(f, "domain", "kernel");
	env_string(f, "sysname", in->sysname);
	env_string(f, "kernel_release", in->kernel_release);
	env_string(f, "kernel_version", in->kernel_version);
	env_string(f, "tracer_name", "lttng-modules");
	fputs("\ttracer_major = 2;\n\ttracer_minor = 13;\n\ttracer_patchlevel = 9;\n", f);
	env_string(f, "trace_buffering_scheme", "global");
	env_string(f, "trace_name", in->trace_name);
	datetime(when, sizeof(when), in, w->first);
	if (when[0])
		env_string(f, "trace_creation_datetime", when);
	fputs("};\n\n", f);

	fputs("clock {\n\tname = \"monotonic\";\n\tuuid = \"", f);
	put_uuid(f, in->clock_uuid);
	fprintf(f, "\";\n\tdescription = \"Monotonic Clock\";\n\tfreq = %" PRIu64 ";\n",
		in->clock_freq);
	/* LTTng says it in cycles; a value past 64 bits keeps the seconds. */
	if (off == (int64_t)off)
		fprintf(f, "\toffset = %" PRId64 ";\n", (int64_t)off);
	else
		fprintf(f, "\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n",
			in->clock_offset_s, in->clock_offset);
	fputs("};\n\n", f);
	fputs(tsdl_stream, f);

	for (unsigned int i = 0; i < w->nr_classes; i++) {
		fputs("event {\n\tname = \"", f);
		put_escaped(f, w->classes[i].name);
		fprintf(f, "\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n%s\t};\n};\n\n",
			i, w->classes[i].fields);
	}
}

static int sync_close(const char *path, int fd)
{
	if (fsync(fd) || close(fd)) {
		error_line("%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int lw_finish(struct lwriter *w, const struct lw_info *in)
{
	char path[PATH_MAX], *slash;
	FILE *f;
	int fd;

	if (!w->have_first)
		w->first = w->end = 0;
	/* Every stream ends where the trace does, with what it lost. */
	for (unsigned int i = 0; i < w->nr; i++) {
		struct lstream *s = &w->s[i];

		if ((!s->open && open_packet(w, s)) || close_packet(w, s, w->end) ||
		    write_out(w, s))
			return -1;
		snprintf(path, sizeof(path), "%s/channel0_%" PRIu32, w->dir, s->cpu);
		fd = s->fd;
		s->fd = -1;
		if (sync_close(path, fd))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/metadata", w->kernel);
	f = fopen(path, "we");
	if (!f) {
		error_line("%s: %s", path, strerror(errno));
		return -1;
	}
	write_metadata(f, w, in);
	if (fflush(f) || ferror(f) || fsync(fileno(f))) {
		error_line("%s/kernel/metadata: %s", w->dir, strerror(errno));
		fclose(f);
		return -1;
	}
	fclose(f);
	if (check_target(w->dir))
		return -1;
	if (rename(w->tmp, w->dir)) {
		error_line("%s: %s", w->dir, strerror(errno));
		return -1;
	}
	w->done = true;
	/* The rename is durable once the parent directory is. */
	slash = strrchr(w->tmp, '/');
	snprintf(path, sizeof(path), "%.*s", slash ? (int)(slash - w->tmp) : 1,
		 slash ? w->tmp : ".");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

void lw_free(struct lwriter *w)
{
	if (!w)
		return;
	for (unsigned int i = 0; i < w->nr; i++) {
		if (w->s[i].fd >= 0)
			close(w->s[i].fd);
		free(w->s[i].buf);
	}
	if (!w->done)
		remove_written(w);
	for (unsigned int i = 0; i < w->nr_classes; i++) {
		free(w->classes[i].name);
		free(w->classes[i].fields);
	}
	free(w->classes);
	lb_free(&w->ctx);
	free(w->s);
	free(w->kernel);
	free(w->tmp);
	free(w->dir);
	free(w);
}
