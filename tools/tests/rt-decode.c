// SPDX-License-Identifier: GPL-2.0
/*
 * rt-decode: host tests of the decoder's fast paths and its event filter
 * (tools/lib/rtdecode.c: rt_stream_set_wanted(), each event's header
 * decoded once, fixed layouts checked with one bound; metadata.c: ids
 * looked up in a table).  Each stream is read three ways at once
 * (diffread.h): as readers read it, as the reference reader (every field
 * walked, every event decoded twice: what the decoder always did), and
 * filtered; they must agree item by item, error by error.
 *
 *   rt-decode [REAL_TRACE_DIR]   (default: tests/real-trace, from tools/)
 *
 * Built under ASan and UBSan (make -C tools tests/rt-decode).  One "ok N -
 * ..." / "not ok N - ..." line per check, then "decode: N passed, M
 * failed"; the exit status is 1 if any failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ringtrace.h>
#include "diffread.h"

static unsigned int passed, failed;
static char tmp[64];

__attribute__((format(printf, 2, 3)))
static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %u - ", ok ? "ok" : "not ok", passed + failed + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (ok)
		passed++;
	else
		failed++;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		perror("malloc");
		exit(2);
	}
	return p;
}

/* What one reading (diffread.h) found. */
struct reading {
	const char *mismatch;		/* NULL: the three agree */
	char error[RT_ERR_MAX];		/* the main stream's, or "" */
	uint64_t events, handed, left_out;
	unsigned int damage;
	char why[1024];
};

static void drain(struct diffread *d, struct reading *g)
{
	struct rt_error err;
	struct rt_item it;
	int r;

	while ((r = dr_next(d, &it, &err)) > 0)
		g->events += it.type == RT_ITEM_EVENT;
	if (r < 0 && !*g->error)
		snprintf(g->error, sizeof(g->error), "%s", err.msg);
}

static void finish(struct diffread *d, struct reading *g)
{
	const char *why = dr_finish(d);

	g->mismatch = why ? g->why : NULL;
	if (why)
		snprintf(g->why, sizeof(g->why), "%s", why);
	g->handed = dr_handed(d);
	g->left_out = dr_left_out(d);
	g->damage = rt_stream_nr_damage(dr_stream(d));
	dr_close(d);
}

/* The files @paths read three ways (@tolerant, or strict; a window if @we). */
static void read_files(const struct rt_metadata *md, char **paths, unsigned int n,
		       int cpu, uint64_t seed, bool tolerant, uint64_t wb,
		       uint64_t we, struct reading *g)
{
	struct diffread *d = dr_open(md, (const char *const *)paths, n, cpu, seed);

	memset(g, 0, sizeof(*g));
	if (!d) {
		perror("dr_open");
		exit(2);
	}
	dr_set_tolerant(d, tolerant);
	if (we)
		dr_set_window(d, wb, we, true);
	drain(d, g);
	finish(d, g);
}

/* A plain stream @b fed packet by packet (@off: where each starts), read dry each time. */
static void read_fed(const struct rt_metadata *md, const uint8_t *b, const uint64_t *off,
		     unsigned int np, size_t len, int cpu, uint64_t seed,
		     struct reading *g)
{
	struct diffread *d = dr_open(md, NULL, 0, cpu, seed);
	struct rt_error err;

	memset(g, 0, sizeof(*g));
	if (!d) {
		perror("dr_open");
		exit(2);
	}
	dr_set_tolerant(d, true);
	for (unsigned int k = 0; k < np; k++) {
		uint64_t end = k + 1 < np ? off[k + 1] : len;

		if (dr_feed(d, "fed", off[k], b + off[k], end - off[k], &err)) {
			snprintf(g->error, sizeof(g->error), "%s", err.msg);
			break;
		}
		drain(d, g);
	}
	finish(d, g);
}

/* ---- a real trace ------------------------------------------------------------- */

/* One CPU of the real trace: its plain stream (packets one after another). */
struct plain {
	int cpu;
	uint8_t *b;
	size_t len;
	uint64_t *off;			/* each packet's */
	unsigned int np;
	uint64_t first, last;		/* event times */
};

static void load_plain(const struct rt_metadata *md, struct rt_trace_cpu *tc,
		       struct plain *pl)
{
	struct rt_error err;
	struct rt_item it;
	int r;

	memset(pl, 0, sizeof(*pl));
	pl->cpu = tc->cpu;
	(void)md;
	while ((r = rt_stream_next(tc->stream, &it, &err)) > 0) {
		if (it.type == RT_ITEM_EVENT) {
			if (!pl->first)
				pl->first = it.timestamp;
			pl->last = it.timestamp;
		}
		if (it.type != RT_ITEM_PACKET)
			continue;
		pl->b = realloc(pl->b, pl->len + it.packet->content_bytes);
		pl->off = realloc(pl->off, (pl->np + 1) * sizeof(*pl->off));
		if (!pl->b || !pl->off) {
			perror("realloc");
			exit(2);
		}
		memcpy(pl->b + pl->len, it.packet->raw, it.packet->content_bytes);
		pl->off[pl->np++] = pl->len;
		pl->len += it.packet->content_bytes;
	}
	if (r < 0) {
		fprintf(stderr, "rt-decode: %s\n", err.msg);
		exit(2);
	}
}

static char *write_plain(const char *name, const uint8_t *b, size_t len)
{
	char *path;
	FILE *fp;

	if (asprintf(&path, "%s/%s", tmp, name) < 0) {
		perror("asprintf");
		exit(2);
	}
	fp = fopen(path, "w");
	if (!fp || fwrite(b, 1, len, fp) != len || fclose(fp)) {
		perror(path);
		exit(2);
	}
	return path;
}

/*
 * Every CPU of the real trace, as recorded: the three readings agree for
 * each way of picking events (all, none, some, some set after the first
 * item), whole and in windows; the filtered stream hands out events and
 * leaves some out where it should.
 */
static void test_real(const struct rt_trace *t)
{
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		const struct rt_trace_cpu *tc = &t->cpus[i];

		for (uint64_t seed = 0; seed < 8; seed++) {
			struct reading g;

			read_files(t->md, tc->paths, tc->nr_paths, tc->cpu, seed, true, 0, 0, &g);
			check(!g.mismatch && !*g.error && g.events &&
			      (seed % 4 == 1 ? !g.handed : g.handed) &&
			      (seed % 4 == 0 ? !g.left_out : g.left_out),
			      "real trace cpu%d, pick %" PRIu64 ": %" PRIu64 " events; filtered: %" PRIu64 " handed out, %" PRIu64 " left out%s%s",
			      tc->cpu, seed, g.events, g.handed, g.left_out,
			      g.mismatch ? "; differs: " : "", g.mismatch ? g.mismatch : "");
		}
	}
}

static void test_real_windows(const struct rt_trace *t, const struct plain *pl,
			      unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint64_t span = pl[i].last - pl[i].first;
		unsigned int bad = 0, runs = 0;
		char first[1024] = "";

		for (unsigned int k = 0; k < 6; k++) {
			uint64_t wb = pl[i].first + span / 7 * k;
			struct reading g;

			read_files(t->md, t->cpus[i].paths, t->cpus[i].nr_paths,
				   t->cpus[i].cpu, k, true, wb, wb + span / 5, &g);
			runs++;
			if (g.mismatch || *g.error || !g.events) {
				if (!bad++)
					snprintf(first, sizeof(first), "window %u: %s%s", k,
						 g.mismatch ? g.mismatch : g.error,
						 g.events ? "" : " (no events)");
			}
		}
		check(!bad, "real trace cpu%d: %u windows read by seeking agree%s%s",
		      pl[i].cpu, runs, bad ? "; " : "", first);
	}
}

/* A cheap deterministic generator. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * The plain streams damaged: one byte at a time, in event headers and
 * payloads and packet headers, read tolerant (damage read past) and
 * strict (the first damage is the error), from a file and fed packet by
 * packet.  The three readings agree on every one; the damage is seen (a
 * damage report, or the strict read's error) in many.
 */
static void test_damaged(const struct rt_metadata *md, const struct plain *pl,
			 unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint64_t x = 0x9e3779b97f4a7c15ULL + i;
		unsigned int runs = 0, bad = 0, seen = 0, strict_err = 0;
		uint8_t *b = xmalloc(pl[i].len);
		char first[1024] = "", name[32];

		snprintf(name, sizeof(name), "cpu%d", pl[i].cpu);
		for (unsigned int k = 0; k < 150; k++) {
			uint64_t at = next_rand(&x) % pl[i].len;
			struct reading g;
			char *path;

			memcpy(b, pl[i].b, pl[i].len);
			/* Within a packet's first 96 bytes (header, first events) or anywhere. */
			if (k % 2)
				at = pl[i].off[at % pl[i].np] + next_rand(&x) % 96;
			if (at >= pl[i].len)
				at = pl[i].len - 1;
			b[at] ^= (uint8_t)(1u << (next_rand(&x) % 8));
			path = write_plain(name, b, pl[i].len);
			for (int mode = 0; mode < 3; mode++) {
				if (mode == 2)
					read_fed(md, b, pl[i].off, pl[i].np, pl[i].len,
						 pl[i].cpu, k, &g);
				else
					read_files(md, &path, 1, pl[i].cpu, k, !mode, 0, 0, &g);
				runs++;
				seen += g.damage > 0;
				strict_err += mode == 1 && *g.error;
				if (g.mismatch && !bad++)
					snprintf(first, sizeof(first), "byte %" PRIu64 " bit flipped, %s: %s",
						 at, mode == 2 ? "fed" : mode ? "strict" : "tolerant",
						 g.mismatch);
			}
			unlink(path);
			free(path);
		}
		check(!bad && seen > 20 && strict_err > 20,
		      "real trace cpu%d damaged a byte at a time: %u readings agree (%u report damage, %u strict ones fail)%s%s",
		      pl[i].cpu, runs - bad, seen, strict_err, bad ? "; differs: " : "", first);
		free(b);
	}
}

/*
 * What a reader of threads wants (rt_threads_reads()): the stream hands
 * out those events, every one, in order, and nothing else; its packets,
 * losses and stats are the unfiltered stream's.
 */
static bool threads_want(void *arg, const struct rt_event_desc *ev)
{
	return rt_threads_reads(arg, ev);
}

static void test_threads_filter(const struct rt_trace *t, char **paths,
				unsigned int np, int cpu)
{
	struct rt_threads *th = rt_threads_new(t->md);
	struct rt_stream *a, *b;
	struct rt_item x, y;
	struct rt_error err;
	uint64_t n = 0, kept = 0, other = 0;
	bool same = true;
	int ra, rb;

	if (!th || rt_stream_open(&a, t->md, (const char *const *)paths, np, cpu, &err) ||
	    rt_stream_open(&b, t->md, (const char *const *)paths, np, cpu, &err) ||
	    rt_stream_set_wanted(b, threads_want, th)) {
		fprintf(stderr, "rt-decode: cannot open the streams\n");
		exit(2);
	}
	for (;;) {
		ra = rt_stream_next(a, &x, &err);
		while (ra > 0 && x.type == RT_ITEM_EVENT && !rt_threads_reads(th, x.event)) {
			other++;
			ra = rt_stream_next(a, &x, &err);
		}
		rb = rt_stream_next(b, &y, &err);
		if (ra <= 0 || rb <= 0)
			break;
		n++;
		kept += x.type == RT_ITEM_EVENT;
		if (x.type != y.type || x.timestamp != y.timestamp || x.offset != y.offset ||
		    x.event != y.event || x.payload_len != y.payload_len ||
		    (x.payload && memcmp(x.payload, y.payload, x.payload_len)))
			same = false;
	}
	same &= ra == rb && !memcmp(rt_stream_stats(a), rt_stream_stats(b),
				    sizeof(struct rt_stream_stats));
	check(same && kept && other,
	      "cpu%d filtered for threads: %" PRIu64 " items, %" PRIu64 " of them events it reads, the same as unfiltered (%" PRIu64 " others left out), same stats",
	      cpu, n, kept, other);
	rt_stream_close(a);
	rt_stream_close(b);
	rt_threads_free(th);
}

/* ---- metadata ---------------------------------------------------------------------- */

static const struct rt_event_desc *by_name(const struct rt_metadata *md, const char *name)
{
	for (unsigned int i = 0; i < md->nr_events; i++)
		if (!strcmp(md->events[i].name, name))
			return &md->events[i];
	return NULL;
}

/*
 * The ids' table and the fixed layouts of the real trace's metadata: a
 * switch all fixed (next_tid at byte 48 of 56), a system call's entry its
 * id and argument count then a sequence, an IRQ's name after its number.
 */
static void test_layouts(const struct rt_metadata *md)
{
	const struct rt_event_desc *sw = by_name(md, "sched_switch");
	const struct rt_event_desc *se = by_name(md, "syscall_entry");
	const struct rt_event_desc *irq = by_name(md, "irq_handler_entry");
	unsigned int found = 0;

	for (unsigned int i = 0; i < md->nr_events; i++)
		found += rt_metadata_event(md, md->events[i].id) == &md->events[i];
	check(md->by_id && found == md->nr_events &&
	      !rt_metadata_event(md, md->events[md->nr_events - 1].id + 1) &&
	      !rt_metadata_event(md, UINT32_MAX),
	      "ids looked up in a table: %u of %u events found by their id, none past them",
	      found, md->nr_events);
	check(sw && sw->nr_fixed == sw->nr_fields && sw->fixed_size == 56 &&
	      sw->fields[5].offset == 48,
	      "sched_switch: all %u fields fixed, %" PRIu64 " bytes, next_tid at %" PRIu64,
	      sw ? sw->nr_fixed : 0, sw ? sw->fixed_size : 0, sw ? sw->fields[5].offset : 0);
	check(se && se->nr_fields == 3 && se->nr_fixed == 2 && se->fixed_size == 9 &&
	      irq && irq->nr_fixed == 2 && irq->fixed_size == 6,
	      "syscall_entry: 2 fixed fields (%" PRIu64 " bytes) before its arguments; irq_handler_entry: 2 (%" PRIu64 ") before its name",
	      se ? se->fixed_size : 0, irq ? irq->fixed_size : 0);
}

/* ---- crafted packets: what the fast paths must refuse as the walk does ------------- */

static const char crafted_metadata[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	"typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; } := uint64_a_t;\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
	"typealias integer { size = 64; align = 1; signed = false; map = clock.monotonic.value; } := uint64_bits_clock_monotonic_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"\tpacket.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; }; };\n"
	"clock { name = \"monotonic\"; freq = 1000000000; offset_s = 0; offset = 0; absolute = TRUE; };\n"
	"stream { id = 0;\n"
	"\tpacket.context := struct { uint64_clock_monotonic_t timestamp_begin; uint64_clock_monotonic_t timestamp_end;\n"
	"\t\tuint64_t content_size; uint64_t packet_size; uint64_t packet_seq_num; uint64_t events_discarded;\n"
	"\t\tuint32_t cpu_id; uint32_t events; };\n"
	"\tevent.header := struct { enum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\t\tvariant <id> { struct { uint27_clock_monotonic_t timestamp; } compact;\n"
	"\t\t\tstruct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended; } v; }; };\n"
	"event { name = \"fixed\"; id = 0; stream_id = 0;\n"
	"\tfields := struct { uint32_t a; uint64_a_t b; uint8_t c[3]; }; };\n"
	"event { name = \"tail\"; id = 1; stream_id = 0;\n"
	"\tfields := struct { uint8_t k; int16_t n; uint64_t d[n]; }; };\n"
	"event { name = \"text\"; id = 2; stream_id = 0;\n"
	"\tfields := struct { uint32_t x; string s; uint8_t after; }; };\n"
	"event { name = \"tail8\"; id = 3; stream_id = 0;\n"
	"\tfields := struct { int8_t n; uint8_t d[n]; }; };\n"
	"event { name = \"empty\"; id = 4; stream_id = 0; };\n";

/* The crafted events' ids: 0 to 3, or (sparse) with no table for them. */
static unsigned int crafted_id[4] = { 0, 1, 2, 3 };

struct cpacket {
	uint8_t buf[4096];
	size_t len;
	unsigned int events;
	uint64_t ts;
};

/* An event with an extended header, its payload aligned to @align in the packet. */
static void cp_event(struct cpacket *p, unsigned int id, unsigned int align,
		     const void *payload, size_t n)
{
	uint32_t word = 31 | id << 5;

	p->ts += 1000;
	memcpy(p->buf + p->len, &word, 4);
	memcpy(p->buf + p->len + 4, &p->ts, 8);
	p->len += 12;
	while (p->len % align)
		p->buf[p->len++] = 0;
	memcpy(p->buf + p->len, payload, n);
	p->len += n;
	p->events++;
}

static void cp_fixed(struct cpacket *p, bool cut)
{
	/* a, padding to b's 8 bytes, b, c[3]. */
	uint8_t e[4 + 4 + 8 + 3] = { 1, 0, 0, 0 };

	e[8] = 0xbb;
	e[16] = 'x';
	cp_event(p, crafted_id[0], 8, e, cut ? sizeof(e) - 1 : sizeof(e));
}

static void cp_tail(struct cpacket *p, int16_t n, size_t have)
{
	uint8_t e[3 + 8 * 8] = { 7 };

	memcpy(e + 1, &n, 2);
	cp_event(p, crafted_id[1], 1, e, 3 + have * 8);
}

/* A byte-sized signed length @n, then @have bytes. */
static void cp_tail8(struct cpacket *p, int8_t n, size_t have)
{
	uint8_t e[1 + 300];

	memset(e, 'd', sizeof(e));
	memcpy(e, &n, 1);
	cp_event(p, crafted_id[3], 1, e, 1 + have);
}

static void cp_text(struct cpacket *p, const char *s, bool nul)
{
	uint8_t e[64] = { 0 };
	size_t l = strlen(s);

	memcpy(e + 4, s, l);
	cp_event(p, crafted_id[2], 1, e, 4 + l + (nul ? 2 : 0));
}

static void cp_finish(struct cpacket *p, uint64_t seq)
{
	struct ringtrace_packet_header h = {
		.magic = RINGTRACE_CTF_MAGIC,
		.packet_seq_num = seq,
		.timestamp_begin = 1000000000ULL + seq * 1000000,
		.timestamp_end = p->ts,
		.content_size = p->len * 8,
		.packet_size = p->len * 8,
		.events = p->events,
	};

	memcpy(p->buf, &h, sizeof(h));
}

static void cp_start(struct cpacket *p, uint64_t seq)
{
	p->len = sizeof(struct ringtrace_packet_header);
	p->events = 0;
	p->ts = 1000000000ULL + seq * 1000000;
}

/*
 * Packets whose last event breaks its layout: a fixed one cut by a byte,
 * a sequence longer than what is left, a negative length, a string with
 * no NUL, a field after a string cut.  Read strict, each is an error --
 * the reference's, word for word (a fixed layout refused where the walk
 * refuses it, said as the walk says it) -- and read tolerant, the packet
 * is skipped as damage with the same report; the good events before it
 * are read, the good packet after it too.
 */
static void test_crafted(bool sparse)
{
	static const struct {
		const char *what, *error;
	} cases[] = {
		{ "a fixed payload cut by one byte", "payload of event 'fixed' runs past content_size" },
		{ "a sequence longer than its packet", "payload of event 'tail' runs past content_size" },
		{ "a negative sequence length", "event 'tail': negative length -2 for 'd'" },
		{ "a string with no NUL", "payload of event 'text' runs past content_size" },
		{ "the field after a string cut", "payload of event 'text' runs past content_size" },
		/* As an unsigned byte, 255: it would fit. */
		{ "a negative byte-sized length, 255 bytes after it", "event 'tail8': negative length -1 for 'd'" },
		{ "every layout whole", NULL },
	};
	char text[sizeof(crafted_metadata) + 16], *at;
	const char *kind = sparse ? " (ids searched)" : "";
	const struct rt_event_desc *fx, *tl, *tx;
	struct rt_metadata *md;
	struct rt_error err;

	/* Sparse: the tail event's id 100000, too far for a table of ids. */
	snprintf(text, sizeof(text), "%s", crafted_metadata);
	crafted_id[1] = 1;
	at = strstr(text, "id = 1;");
	if (sparse && at) {
		snprintf(at, sizeof(text) - (size_t)(at - text), "id = 100000;%s",
			 strstr(crafted_metadata, "id = 1;") + 7);
		crafted_id[1] = 100000;
	}
	if (rt_metadata_parse(text, strlen(text), "crafted", &md, &err)) {
		check(0, "the crafted metadata parses: %s", err.msg);
		return;
	}
	fx = by_name(md, "fixed");
	tl = by_name(md, "tail");
	tx = by_name(md, "text");
	check(fx && tl && tx && fx->nr_fixed == 3 && fx->fixed_size == 19 &&
	      fx->fields[1].offset == 8 && fx->align == 8 && tl->nr_fixed == 2 &&
	      tx->nr_fixed == 1 && !md->by_id == sparse,
	      "crafted layouts%s: fixed %u fields, %" PRIu64 " bytes, b at %" PRIu64 " (aligned); tail %u fixed; text %u fixed",
	      kind, fx ? fx->nr_fixed : 0, fx ? fx->fixed_size : 0,
	      fx ? fx->fields[1].offset : 0, tl ? tl->nr_fixed : 0, tx ? tx->nr_fixed : 0);
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		static struct cpacket p[3];
		uint64_t off[3];
		uint8_t all[3 * sizeof(p[0].buf)];
		size_t len = 0;
		struct reading strict, tolerant, fed;
		char *path;

		for (unsigned int k = 0; k < 3; k++) {
			cp_start(&p[k], k + 1);
			cp_fixed(&p[k], false);
			cp_tail(&p[k], 2, 2);
			cp_text(&p[k], "name", true);
			if (k == 1) {
				switch (c) {
				case 0: cp_fixed(&p[k], true); break;
				case 1: cp_tail(&p[k], 8, 7); break;
				case 2: cp_tail(&p[k], -2, 0); break;
				case 3: cp_text(&p[k], "no-nul", false); break;
				case 4: cp_text(&p[k], "cut", false);
					p[k].buf[p[k].len++] = 0;
					break;
				case 5: cp_tail8(&p[k], -1, 255); break;
				}
			}
			cp_finish(&p[k], k + 1);
			off[k] = len;
			memcpy(all + len, p[k].buf, p[k].len);
			len += p[k].len;
		}
		path = write_plain("cpu0", all, len);
		read_files(md, &path, 1, 0, c, false, 0, 0, &strict);
		read_files(md, &path, 1, 0, c, true, 0, 0, &tolerant);
		read_fed(md, all, off, 3, len, 0, c, &fed);
		unlink(path);
		free(path);
		check(!strict.mismatch && !tolerant.mismatch && !fed.mismatch &&
		      (cases[c].error ? strstr(strict.error, cases[c].error) != NULL &&
					tolerant.damage == 1 && tolerant.events == 6 :
					!*strict.error && !tolerant.damage && tolerant.events == 9),
		      "%s%s: strict '%s'; tolerant: %u damage, %" PRIu64 " events; the three readings agree%s%s",
		      cases[c].what, kind, strict.error, tolerant.damage, tolerant.events,
		      strict.mismatch || tolerant.mismatch || fed.mismatch ? "? no: " : "",
		      strict.mismatch ? strict.mismatch : tolerant.mismatch ? tolerant.mismatch :
		      fed.mismatch ? fed.mismatch : "");
	}
	rt_metadata_free(md);
}

/*
 * A packet of more events than the decoder keeps the places of (2^20,
 * rtdecode.c's KEEP_MAX: 4 MiB of events without fields): handed out by
 * decoding the headers again, the same items, whatever is wanted.
 */
static void test_many_events(void)
{
	const unsigned int n = (1u << 20) + 2;
	size_t len = sizeof(struct ringtrace_packet_header) + 4 * (size_t)n + 12 + 19 + 5;
	uint8_t *b = xmalloc(len);
	struct ringtrace_packet_header h = {
		.magic = RINGTRACE_CTF_MAGIC, .packet_seq_num = 1,
		.timestamp_begin = 1000000000ULL, .timestamp_end = 1000000000ULL + 2,
		.content_size = len * 8, .packet_size = len * 8, .events = n + 1,
	};
	size_t at = sizeof(h);
	unsigned int bad = 0, runs = 0, events = 0;
	struct rt_metadata *md;
	struct rt_error err;
	char first[1024] = "", *path;
	uint64_t ts = h.timestamp_begin + 1;

	if (rt_metadata_parse(crafted_metadata, strlen(crafted_metadata), "crafted", &md, &err)) {
		check(0, "the crafted metadata parses: %s", err.msg);
		free(b);
		return;
	}
	/* An extended "fixed" event (at 88, its payload aligned to 104), then the empty ones. */
	memset(b, 0, len);
	b[at] = 31;
	memcpy(b + at + 4, &ts, 8);
	at += 16 + 19;
	for (unsigned int i = 0; i < n; i++, at += 4) {
		uint32_t word = 4 | (uint32_t)((ts + (i == n - 1)) & ((1u << 27) - 1)) << 5;

		memcpy(b + at, &word, 4);
	}
	len = at;
	h.content_size = h.packet_size = len * 8;
	memcpy(b, &h, sizeof(h));
	path = write_plain("cpu0", b, len);
	for (uint64_t seed = 0; seed < 4; seed++) {
		struct reading g;

		read_files(md, &path, 1, 0, seed, seed % 2, 0, 0, &g);
		runs++;
		events = (unsigned int)g.events;
		if ((g.mismatch || *g.error || g.events != n + 1) && !bad++)
			snprintf(first, sizeof(first), "pick %" PRIu64 ": %s%s (%" PRIu64 " events)", seed,
				 g.mismatch ? g.mismatch : "", g.error, g.events);
	}
	check(!bad, "a packet of %u events, more than the decoder keeps: %u readings agree, %u events each%s%s",
	      n + 1, runs, events, bad ? "; " : "", first);
	unlink(path);
	free(path);
	free(b);
	rt_metadata_free(md);
}

/* Ids too sparse for a table are searched: every one found all the same. */
static void test_sparse_ids(void)
{
	static const char *const ids[] = { "0", "4000000000", "77" };
	char text[sizeof(crafted_metadata) + 64], *p;
	struct rt_metadata *md;
	struct rt_error err;
	unsigned int found = 0;

	/* The crafted metadata with its ids 0, 1, 2 made 0, 4000000000, 77. */
	snprintf(text, sizeof(text), "%s", crafted_metadata);
	for (unsigned int i = 1; i < 3; i++) {
		char from[16], to[sizeof(text)];

		snprintf(from, sizeof(from), "id = %u;", i);
		p = strstr(text, from);
		if (!p)
			break;
		snprintf(to, sizeof(to), "%.*sid = %s;%s", (int)(p - text), text, ids[i],
			 p + strlen(from));
		snprintf(text, sizeof(text), "%s", to);
	}
	if (rt_metadata_parse(text, strlen(text), "sparse", &md, &err)) {
		check(0, "the sparse metadata parses: %s", err.msg);
		return;
	}
	for (unsigned int i = 0; i < 3; i++)
		found += rt_metadata_event(md, (uint32_t)strtoul(ids[i], NULL, 10)) != NULL;
	check(!md->by_id && found == 3 && !rt_metadata_event(md, 1) &&
	      !rt_metadata_event(md, 4000000001u),
	      "ids 0, 77 and 4000000000: no table, %u of 3 found by searching, none else", found);
	rt_metadata_free(md);
}

int main(int argc, char **argv)
{
	const char *real = argc > 1 ? argv[1] : "tests/real-trace";
	struct rt_trace *t;
	struct rt_error err;
	struct plain pl[8];
	unsigned int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(tmp, sizeof(tmp), "/var/tmp/rt-decode.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	if (rt_trace_open(real, &t, &err)) {
		check(0, "%s opens: %s", real, err.msg);
	} else {
		test_layouts(t->md);
		test_real(t);
		for (n = 0; n < t->nr_cpus && n < 8; n++)
			test_threads_filter(t, t->cpus[n].paths, t->cpus[n].nr_paths,
					    t->cpus[n].cpu);
		rt_trace_close(t);
		/* Opened again: the streams above were read to their end. */
		if (rt_trace_open(real, &t, &err)) {
			fprintf(stderr, "rt-decode: %s\n", err.msg);
			return 2;
		}
		for (n = 0; n < t->nr_cpus && n < 8; n++)
			load_plain(t->md, &t->cpus[n], &pl[n]);
		test_real_windows(t, pl, n);
		test_damaged(t->md, pl, n);
		for (unsigned int i = 0; i < n; i++) {
			free(pl[i].b);
			free(pl[i].off);
		}
		rt_trace_close(t);
	}
	test_crafted(false);
	test_crafted(true);
	test_many_events();
	test_sparse_ids();
	rmdir(tmp);
	printf("decode: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
