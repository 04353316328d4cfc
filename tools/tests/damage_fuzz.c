// SPDX-License-Identifier: GPL-2.0
/*
 * damage_fuzz: damages real traces one thing at a time, field by field,
 * and checks what the readers promise: a damaged packet costs that packet
 * alone (tools/tests/damage-fuzz.sh runs it; build: make -C tools
 * tests/damage_fuzz, under ASan and UBSan).
 *
 *   damage_fuzz [-v] [-k KEEP] DIR...
 *
 * Each DIR is a trace directory.  Its streams must read without damage:
 * they are the original, every event known with the packet it is in.
 * Then, per CPU, one thing at a time is damaged, in the forms ringtraced
 * writes a stream in --
 *
 *   plain   the packets one after another (`ringtrace unpack`'s files)
 *   stored  a zstd frame of raw blocks per packet, no checksum (a chunk
 *           before it is packed: lib/chunk.c's own frames)
 *   packed  DIR's zstd files as they are (frames of packets, content
 *           checksums), when it has some
 *   fed     the packets fed to a stream one at a time, read dry after each
 *           (report --follow's stream)
 *
 * -- and the stream is read again by the library, tolerant (as report,
 * export and check read it), whole, and for some damage also as windows
 * around it, seeking (from two packets before it, and from right before
 * it, at it and right after it: a window's first packet read has no
 * packet before it to be judged by), and not tolerant (report --strict).
 * What is damaged:
 *
 *   intact  nothing: each form read whole and as a window from each packet
 *           on must be the original, nothing said (a stored frame holds
 *           its packet's bytes: a payload's zstd frame magic is nothing)
 *   header  every bit of every field of every packet header, one at a
 *           time, and the values 0, all ones, +1, -1, bit 40, bit 63 and
 *           content_size 1 MiB (plain; the values stored and fed too, and
 *           in windows, and strict); the packets from one on renumbered
 *           one down (two packets with one number)
 *   event   every bit of the event header of the first, second, middle
 *           and last events of every packet: id and compact time, an
 *           extended header's time (plain)
 *   frame   every bit of each frame's magic, header and first block
 *           header, and of its checksum; a frame cut in two, dropped,
 *           doubled, swapped with the next (stored, packed)
 *
 * and what is checked, each time:
 *
 *   kept       every event of every packet not touched is read, once
 *   invented   every event read is one of the original's, at most as many
 *              times (below: where the format cannot tell, the touched
 *              packet's own events may read changed)
 *   losses     the loss figures add up to no more than the original's
 *              (sequence numbers: plus the touched packets'); where the
 *              format cannot tell, or a fed stream hands a packet out
 *              before the next is fed, none is more than the stream's time
 *              allows (one event a nanosecond, give or take CLOCK_GRAIN:
 *              design.rst's promise of the module, not the reader's figure)
 *   said       what is read differs from the original: damage is reported
 *              (report's exit status 3) -- but where it reads as what it
 *              is: a frame dropped as lost packets, a file's last frame
 *              damaged so that the file ends inside it as a killed
 *              writer's cut (a note)
 *   announced  a packet read after packets of the original that are not
 *              is preceded by a loss item (a reader of threads forgets who
 *              runs on the CPU there)
 *   clean      an intact stream reads as the original, no damage, no note
 *   strict     read not tolerant, the first damage is the error, and every
 *              event of the packets before the one it names was read first
 *   differential  the reference reader and a filtered one, reading the
 *              same damaged stream alongside (diffread.h), hand out the
 *              same items, fail the same way, say the same damage
 *
 * and, once per trace, that resynchronising costs what it reads: damage
 * holding a packet signature every few bytes (inside a packet, between
 * packets, headers claiming 64 MiB), of 64 KiB and of 256 KiB, costs the
 * reader (rt_stream_work()) about four times the work, not sixteen.
 *
 * The format carries nothing to tell some damage by; there "invented"
 * lets the touched packet's events read changed, and "said" is not asked:
 * an event header's bits (a compact time, an id naming another event of
 * the same layout), timestamp_begin not past timestamp_end (the events'
 * times count from it), and packet_seq_num or events_discarded moved to a
 * value between its neighbours' (the first packet's going down, the
 * last's going up, a packet next to a real loss).
 *
 * Output: "ok     TRACE cpuN FORM KIND: N damages" or "FAIL   ..." with
 * the first few damages that broke a check (-v: all of them), then
 * "damage-fuzz: N passed, M failed".  Exit status 1 if any failed.  -k
 * KEEP: the first damaged stream that fails each check is written there as
 * a trace directory (with DIR's metadata, and DAMAGE saying what and why), for
 * `ringtrace report KEEP/N` to show (N counts the failing checks).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_frameHeaderSize() */
#include <zstd.h>
#include <xxhash.h>

#include <linux/ringtrace.h>
#include "../lib/rtdecode.h"
#include "../lib/internal.h"
#include "../../lib/chunk.h"
#include "diffread.h"

#define HDR		sizeof(struct ringtrace_packet_header)
#define FIELD_OFF(f)	offsetof(struct ringtrace_packet_header, f)
#define FIELD_LEN(f)	sizeof(((struct ringtrace_packet_header *)0)->f)
/*
 * What ringtrace.ko can lose between two packets of a CPU, as design.rst
 * promises it (the module's account, not the reader's figure): at most
 * one event -- or packet -- per nanosecond of the time between their
 * timestamp_ends, give or take CLOCK_GRAIN ns of its clock.  A counter
 * beyond it is damage the format tells; the reader must say so.
 */
#define CLOCK_GRAIN	65536ULL
#define SHOWN		3		/* failing damages described per check */

static bool verbose;
static const char *keep;		/* -k DIR: the first failing damage's trace */
static const char *trace_dir;
static unsigned int passed, failed;
static char scratch[64];

/* ---- the original -------------------------------------------------------------- */

struct oev {				/* an event of the original */
	uint64_t ts, hash;
	uint32_t id, pkt;
};

struct opkt {				/* a packet of the original */
	uint64_t off, len;		/* in the plain stream */
	uint64_t seq, ed, begin, end;
	uint32_t first, nr;		/* its events: ev[first .. first + nr) */
};

struct ocpu {
	int cpu;
	uint8_t *plain;			/* its packets, one after another */
	size_t plain_len;
	struct opkt *p;
	uint32_t np;
	struct oev *ev;			/* in stream order */
	uint32_t nev;
	uint32_t *by_key;		/* ev indexes sorted by key */
	uint64_t lost_events, lost_packets;
	char **files;			/* DIR's own files of the CPU */
	unsigned int nr_files;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("damage_fuzz: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static int key_cmp(const struct oev *a, const struct oev *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return 0;
}

static struct ocpu *sort_ctx;

static int by_key_cmp(const void *x, const void *y)
{
	const struct oev *a = &sort_ctx->ev[*(const uint32_t *)x];
	const struct oev *b = &sort_ctx->ev[*(const uint32_t *)y];

	return key_cmp(a, b);
}

static struct oev key_of(const struct rt_item *it)
{
	return (struct oev){
		.ts = it->timestamp, .id = it->event->id,
		.hash = XXH64(it->payload, it->payload_len, it->event->id),
	};
}

/* The first index in by_key of an event equal to @k, or UINT32_MAX. */
static uint32_t find_key(const struct ocpu *c, const struct oev *k)
{
	uint32_t lo = 0, hi = c->nev;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (key_cmp(&c->ev[c->by_key[mid]], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nev && !key_cmp(&c->ev[c->by_key[lo]], k) ? lo : UINT32_MAX;
}

static void read_original(const struct rt_trace *t, const struct rt_trace_cpu *tc,
			  struct ocpu *c)
{
	struct rt_stream *s;
	struct rt_error err;
	struct rt_item it;
	int r;

	memset(c, 0, sizeof(*c));
	c->cpu = tc->cpu;
	c->files = tc->paths;
	c->nr_files = tc->nr_paths;
	if (rt_stream_open(&s, t->md, (const char *const *)tc->paths, tc->nr_paths,
			   tc->cpu, &err))
		die("%s", err.msg);
	while ((r = rt_stream_next(s, &it, &err)) > 0) {
		if (it.type == RT_ITEM_PACKET) {
			const struct rt_packet_info *pi = it.packet;
			struct opkt *p;

			c->p = xrealloc(c->p, (c->np + 1) * sizeof(*c->p));
			p = &c->p[c->np++];
			*p = (struct opkt){
				.off = c->plain_len, .len = pi->content_bytes,
				.seq = pi->seq, .ed = pi->events_discarded,
				.begin = pi->timestamp_begin, .end = pi->timestamp_end,
				.first = c->nev,
			};
			c->plain = xrealloc(c->plain, c->plain_len + pi->content_bytes);
			memcpy(c->plain + c->plain_len, pi->raw, pi->content_bytes);
			c->plain_len += pi->content_bytes;
		} else if (it.type == RT_ITEM_LOST) {
			c->lost_events += it.lost_events;
			c->lost_packets += it.lost_packets;
		} else {
			c->ev = xrealloc(c->ev, (c->nev + 1) * sizeof(*c->ev));
			c->ev[c->nev] = key_of(&it);
			c->ev[c->nev++].pkt = c->np - 1;
			c->p[c->np - 1].nr++;
		}
	}
	if (r < 0)
		die("%s", err.msg);
	if (rt_stream_nr_damage(s) || rt_stream_nr_notes(s))
		die("cpu%d: the original is damaged or cut: %s", c->cpu,
		    rt_stream_nr_damage(s) ? rt_stream_damage(s, 0) : rt_stream_note(s, 0));
	rt_stream_close(s);
	c->by_key = xrealloc(NULL, c->nev * sizeof(*c->by_key));
	for (uint32_t i = 0; i < c->nev; i++)
		c->by_key[i] = i;
	sort_ctx = c;
	qsort(c->by_key, c->nev, sizeof(*c->by_key), by_key_cmp);
}

/*
 * Packets [@a, @b] of @c as a stream of their own, and its original: a
 * damage is read back with the packets around it only (CUT each side),
 * which is all a reader judges a packet by.  Its loss figures are its
 * headers': what its first packet counts, then the gaps.
 */
#define CUT	3

static void cut(const struct ocpu *c, uint32_t a, uint32_t b, struct ocpu *o)
{
	uint64_t base = c->p[a].off;
	uint32_t first = c->p[a].first;

	memset(o, 0, sizeof(*o));
	o->cpu = c->cpu;
	o->np = b - a + 1;
	o->p = xrealloc(NULL, o->np * sizeof(*o->p));
	for (uint32_t i = 0; i < o->np; i++) {
		o->p[i] = c->p[a + i];
		o->p[i].off -= base;
		o->p[i].first -= first;
		o->nev += o->p[i].nr;
	}
	o->plain_len = c->p[b].off + c->p[b].len - base;
	o->plain = xrealloc(NULL, o->plain_len);
	memcpy(o->plain, c->plain + base, o->plain_len);
	o->ev = xrealloc(NULL, o->nev * sizeof(*o->ev));
	for (uint32_t i = 0; i < o->nev; i++) {
		o->ev[i] = c->ev[first + i];
		o->ev[i].pkt -= a;
	}
	o->lost_packets = o->p[o->np - 1].seq - (o->np - 1);
	o->lost_events = o->p[o->np - 1].ed;
	o->by_key = xrealloc(NULL, o->nev * sizeof(*o->by_key));
	for (uint32_t i = 0; i < o->nev; i++)
		o->by_key[i] = i;
	sort_ctx = o;
	qsort(o->by_key, o->nev, sizeof(*o->by_key), by_key_cmp);
}

static void free_ocpu(struct ocpu *o)
{
	free(o->plain);
	free(o->p);
	free(o->ev);
	free(o->by_key);
}

/* The packets damaged bit by bit: the first two, the middle, the last two. */
static bool bit_by_bit(uint32_t k, uint32_t np)
{
	return k <= 1 || k + 2 >= np || k == np / 2;
}

/* ---- one damage ---------------------------------------------------------------- */

/* What a damage is, and which checks it must pass. */
struct damage {
	char what[160];
	bool strict;			/* "invented" whole, "said", "losses" exact */
	bool as_lost;			/* reads as lost packets: not "said" */
	bool at_end;			/* the last frame: may read as cut */
	bool fed;			/* read fed: figures handed out unjudged */
	uint32_t touched_lo, touched_hi;	/* packets touched: [lo, hi] */
	uint64_t plain_lo, plain_hi;	/* their bytes in the plain stream */
	bool window;			/* also read as windows around them */
	bool intact;			/* nothing damaged: read exactly, nothing said */
	bool strict_read;		/* also read not tolerant (report --strict) */
};

/* The stream forms; what a damage writes is read back as one. */
enum form { PLAIN, STORED, PACKED, FED };
static const char *const form_name[] = { "plain", "stored", "packed", "fed" };

/* A damaged stream: its files' bytes, in order; or fed (one, plain). */
struct files {
	bool fed;
	unsigned int n;
	uint8_t *data[64];
	size_t len[64];
	char name[64][32];
};

struct result {
	uint32_t *seen;			/* per original event (by index) */
	uint32_t invented, invented_outside;
	uint64_t lost_events, lost_packets, biggest_loss;
	unsigned int unannounced;	/* gaps of packets not touched */
	unsigned int unannounced_touched;
	unsigned int damage, notes;
	char error[RT_ERR_MAX];
	char differs[512];		/* the fast paths' first difference (diffread.h) */
};

static void write_files(const struct files *f, char **paths)
{
	for (unsigned int i = 0; i < f->n; i++) {
		FILE *fp;

		if (asprintf(&paths[i], "%s/%s", scratch, f->name[i]) < 0)
			die("out of memory");
		fp = fopen(paths[i], "w");
		if (!fp || fwrite(f->data[i], 1, f->len[i], fp) != f->len[i] || fclose(fp))
			die("%s: %s", paths[i], strerror(errno));
	}
}

/* One reading back: where its items go. */
struct reading {
	const struct ocpu *c;
	const struct damage *d;
	bool window;
	uint64_t wb, we;
	struct result *res;
	int32_t last_pkt;		/* of the last event matched */
	bool lost_seen;			/* a loss item since */
};

/* An item read back, matched to the original's events by time, id and payload. */
static void take(struct reading *g, const struct rt_item *it)
{
	const struct ocpu *c = g->c;
	struct result *res = g->res;
	struct oev k;
	uint32_t i;

	if (it->type == RT_ITEM_LOST) {
		res->lost_events += it->lost_events;
		res->lost_packets += it->lost_packets;
		if (it->lost_events > res->biggest_loss)
			res->biggest_loss = it->lost_events;
		if (it->lost_packets > res->biggest_loss)
			res->biggest_loss = it->lost_packets;
		g->lost_seen = true;
		return;
	}
	if (it->type != RT_ITEM_EVENT)
		return;
	if (g->window && (it->timestamp < g->wb || it->timestamp > g->we))
		return;
	k = key_of(it);
	i = find_key(c, &k);
	/* The first equal one not seen yet: the original may repeat one. */
	while (i != UINT32_MAX && res->seen[c->by_key[i]])
		i = i + 1 < c->nev && !key_cmp(&c->ev[c->by_key[i + 1]], &k) ?
		    i + 1 : UINT32_MAX;
	if (i == UINT32_MAX) {
		/* Not the original's, or once more than there. */
		res->invented++;
		/* Plain, stored and fed forms keep the plain stream's offsets. */
		if (it->offset < g->d->plain_lo || it->offset >= g->d->plain_hi)
			res->invented_outside++;
		return;
	}
	i = c->by_key[i];
	res->seen[i]++;
	if (!g->window && (int32_t)c->ev[i].pkt != g->last_pkt) {
		/* Packets of the original with events, none read, skipped over. */
		for (int32_t p = g->last_pkt + 1; p < (int32_t)c->ev[i].pkt; p++) {
			uint32_t got = 0;

			for (uint32_t e = 0; e < c->p[p].nr; e++)
				got += res->seen[c->p[p].first + e];
			if (c->p[p].nr && !got && !g->lost_seen) {
				if ((uint32_t)p >= g->d->touched_lo &&
				    (uint32_t)p <= g->d->touched_hi)
					res->unannounced_touched++;
				else
					res->unannounced++;
				break;
			}
		}
		g->last_pkt = (int32_t)c->ev[i].pkt;
		g->lost_seen = false;
	}
}

/* Everything @d has now: 0 (the end, or dry), -1 (said in res->error). */
static int drain(struct reading *g, struct diffread *d)
{
	struct rt_error err;
	struct rt_item it;
	int r;

	while ((r = dr_next(d, &it, &err)) > 0)
		take(g, &it);
	if (r < 0)
		snprintf(g->res->error, sizeof(g->res->error), "%s", err.msg);
	return r;
}

/*
 * Reads @f back as cpu @c->cpu, whole or as the window [@wb, @we], into
 * @res.  A fed stream (@f->fed: report --follow's) is fed the plain stream
 * packet by packet, as the original's packets lie, read dry each time.
 * Read three ways at once (diffread.h): the decoder as readers use it,
 * the reference reader, and filtered, which must agree.
 */
static void read_back(const struct rt_metadata *md, const struct ocpu *c,
		      const struct files *f, const struct damage *d, bool tolerant,
		      bool window, uint64_t wb, uint64_t we, struct result *res)
{
	static uint64_t readings;
	struct reading g = { c, d, window, wb, we, res, -1, false };
	char *paths[64] = { 0 };
	struct diffread *dr;
	struct rt_error err;
	const char *differs;

	memset(res, 0, sizeof(*res));
	res->seen = xrealloc(NULL, c->nev * sizeof(*res->seen));
	memset(res->seen, 0, c->nev * sizeof(*res->seen));
	if (!f->fed)
		write_files(f, paths);
	dr = dr_open(md, f->fed ? NULL : (const char *const *)paths, f->n, c->cpu,
		     readings++);
	if (!dr)
		die("out of memory");
	dr_set_tolerant(dr, tolerant);
	if (f->fed) {
		for (uint32_t k = 0; k < c->np && !*res->error; k++) {
			if (dr_feed(dr, "fed", c->p[k].off, f->data[0] + c->p[k].off,
				    c->p[k].len, &err))
				die("%s", err.msg);
			drain(&g, dr);
		}
	} else {
		if (window)
			dr_set_window(dr, wb, we, true);
		drain(&g, dr);
	}
	res->damage = rt_stream_nr_damage(dr_stream(dr));
	res->notes = rt_stream_nr_notes(dr_stream(dr));
	differs = dr_finish(dr);
	if (differs)
		snprintf(res->differs, sizeof(res->differs), "%s", differs);
	dr_close(dr);
	for (unsigned int i = 0; i < f->n && !f->fed; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
}

/* The checks a damage failed, as a list of names ("" when none). */
static void judge(const struct ocpu *c, const struct damage *d, bool window,
		  uint64_t wb, uint64_t we, const struct result *res,
		  char *why, size_t len)
{
	/* A window's loss figures are those of the packets it reads. */
	bool differs = res->invented || (!window && (res->lost_events != c->lost_events ||
						     res->lost_packets != c->lost_packets));
	uint64_t span = c->np ? c->p[c->np - 1].end - c->p[0].begin : 0;
	unsigned int missing = 0, twice = 0;
	size_t n = 0;

	*why = 0;
	for (uint32_t i = 0; i < c->nev; i++) {
		const struct oev *e = &c->ev[i];
		bool touched = e->pkt >= d->touched_lo && e->pkt <= d->touched_hi;

		if (window && (e->ts < wb || e->ts > we))
			continue;
		if (!res->seen[i])
			differs = true;
		if (res->seen[i] > 1)
			twice++;
		if (!touched && !res->seen[i])
			missing++;
	}
#define SAY(...) (n += (size_t)snprintf(why + n, n < len ? len - n : 0, __VA_ARGS__))
	if (*res->error)
		SAY(" error(%s)", res->error);
	if (*res->differs)
		SAY(" differential(%s)", res->differs);
	if (missing)
		SAY(" kept(%u events of intact packets missing)", missing);
	if (twice)
		SAY(" invented(%u events twice)", twice);
	if (d->strict ? res->invented : res->invented_outside)
		SAY(" invented(%u events not in the original%s)",
		    d->strict ? res->invented : res->invented_outside,
		    d->strict ? "" : ", outside the touched packet");
	/*
	 * A fed stream hands a packet out before the next one is fed: its
	 * figures cannot be judged by it (but stay bounded, below).
	 */
	if (!window && d->strict && !d->fed &&
	    (res->lost_events > c->lost_events ||
	     res->lost_packets > c->lost_packets + d->touched_hi - d->touched_lo + 1))
		SAY(" losses(events=%" PRIu64 " packets=%" PRIu64 ", the original's %" PRIu64 " and %" PRIu64 ")",
		    res->lost_events, res->lost_packets, c->lost_events, c->lost_packets);
	if (res->biggest_loss > span + CLOCK_GRAIN &&
	    res->biggest_loss > c->lost_events + c->lost_packets)
		SAY(" losses(%" PRIu64 " lost at once, in a stream of %" PRIu64 " ns)",
		    res->biggest_loss, span);
	if (d->intact && (res->damage || res->notes || differs || *res->error))
		SAY(" clean(an intact stream reads with %u damaged places, %u notes%s)",
		    res->damage, res->notes, differs ? ", and differs" : "");
	/* A file that ends inside its last frame was cut (a note). */
	if (d->strict && !d->as_lost && differs && !res->damage &&
	    !(d->at_end && res->notes))
		SAY(" said(what is read differs, no damage reported)");
	/* A touched packet read changed is not a gap. */
	if (res->unannounced ||
	    (res->unannounced_touched && res->invented == res->invented_outside))
		SAY(" announced(%u gaps without a loss item)",
		    res->unannounced + res->unannounced_touched);
#undef SAY
}

/* ---- forms ------------------------------------------------------------------- */

/* The plain stream @b (@len bytes, its packets @c->p) in @form as @f. */
static void make_form(const struct ocpu *c, enum form form, const uint8_t *b,
		      size_t len, struct files *f)
{
	memset(f, 0, sizeof(*f));
	f->n = 1;
	f->fed = form == FED;
	if (form == PLAIN || form == FED) {
		snprintf(f->name[0], sizeof(f->name[0]), "cpu%d", c->cpu);
		f->data[0] = xrealloc(NULL, len);
		memcpy(f->data[0], b, len);
		f->len[0] = len;
		return;
	}
	/* STORED: a frame per packet, lib/chunk.c's. */
	snprintf(f->name[0], sizeof(f->name[0]), "cpu%d-000001.zst", c->cpu);
	for (uint32_t k = 0; k < c->np; k++) {
		uint64_t plen = c->p[k].len, size = chunk_stored_size(plen);
		struct iovec iov[8];
		uint8_t blocks[4][3];
		struct chunk_stored_hdrs h = { .blocks = blocks };
		unsigned int n;

		if (chunk_stored_iovcnt(plen) > 8)
			die("packet too big for a test");
		n = chunk_stored_iov(iov, &h, b + c->p[k].off, plen);
		f->data[0] = xrealloc(f->data[0], f->len[0] + size);
		for (unsigned int i = 0; i < n; i++) {
			memcpy(f->data[0] + f->len[0], iov[i].iov_base, iov[i].iov_len);
			f->len[0] += iov[i].iov_len;
		}
	}
	if (len != c->plain_len)
		die("make_form: a stored form keeps the packets' lengths");
}

static void free_files(struct files *f)
{
	for (unsigned int i = 0; i < f->n; i++)
		free(f->data[i]);
	f->n = 0;
}

static void load_packed(const struct ocpu *c, struct files *f)
{
	memset(f, 0, sizeof(*f));
	for (unsigned int i = 0; i < c->nr_files && i < 64; i++) {
		const char *base = strrchr(c->files[i], '/');
		FILE *fp = fopen(c->files[i], "r");
		long len;

		base = base ? base + 1 : c->files[i];
		if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 ||
		    fseek(fp, 0, SEEK_SET))
			die("%s: %s", c->files[i], strerror(errno));
		f->data[i] = xrealloc(NULL, (size_t)len);
		if (fread(f->data[i], 1, (size_t)len, fp) != (size_t)len)
			die("%s: short read", c->files[i]);
		fclose(fp);
		f->len[i] = (size_t)len;
		snprintf(f->name[i], sizeof(f->name[i]), "%s", base);
		f->n++;
	}
}

/* ---- a run: the damages of one kind ------------------------------------------------ */

struct run {
	const char *trace;
	const struct rt_metadata *md;
	const struct ocpu *c;		/* the packets read back */
	uint32_t first;			/* the stream's number of its first */
	enum form form;
	const char *kind;
	unsigned int n, bad;
	char shown[SHOWN][1400];
};

/* The damaged files, the trace's metadata and what failed, into KEEP/N. */
static void keep_trace(const struct files *f, const struct damage *d, const char *why)
{
	char cmd[PATH_MAX * 2 + 64], dir[PATH_MAX];
	FILE *fp;

	snprintf(dir, sizeof(dir), "%s/%u", keep, failed + 1);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s/metadata' '%s/'", dir,
		 trace_dir, dir);
	if (system(cmd))
		die("cannot make %s", dir);
	for (unsigned int i = 0; i < f->n; i++) {
		snprintf(cmd, sizeof(cmd), "%s/%s", dir, f->name[i]);
		fp = fopen(cmd, "w");
		if (!fp || fwrite(f->data[i], 1, f->len[i], fp) != f->len[i] || fclose(fp))
			die("%s: %s", cmd, strerror(errno));
	}
	snprintf(cmd, sizeof(cmd), "%s/DAMAGE", dir);
	fp = fopen(cmd, "w");
	if (!fp || fprintf(fp, "%s:%s\n", d->what, why) < 0 || fclose(fp))
		die("%s: %s", cmd, strerror(errno));
}

/* One damage of @r tried: @why the checks it failed ("" when none). */
static void tried(struct run *r, const struct files *f, const struct damage *d,
		  const char *why)
{
	r->n++;
	if (!*why)
		return;
	if (r->bad < SHOWN)
		snprintf(r->shown[r->bad], sizeof(r->shown[r->bad]), "%s:%s", d->what, why);
	if (keep && !r->bad)
		keep_trace(f, d, why);
	r->bad++;
	if (verbose)
		fprintf(stderr, "  %s %s cpu%d %s: %s:%s\n", r->trace, form_name[r->form],
			r->c->cpu, r->kind, d->what, why);
}

/*
 * Read not tolerant (report --strict): the first damage is the error, and
 * every event of the packets before the one it names was read before it.
 */
static void judge_strict(const struct ocpu *c, const struct result *res,
			 unsigned int said, char *why, size_t len)
{
	const char *at = strstr(res->error, "offset ");
	uint64_t off = at ? strtoull(at + 7, NULL, 10) : 0;
	unsigned int missing = 0;
	size_t n = strlen(why);

	if (!said != !*res->error) {
		snprintf(why + n, len - n, " strict(%u damaged places read tolerant, %s)",
			 said, *res->error ? res->error : "none is an error when strict");
		return;
	}

	for (uint32_t k = 0; at && k < c->np && c->p[k].off + c->p[k].len <= off; k++)
		for (uint32_t e = 0; e < c->p[k].nr; e++)
			missing += !res->seen[c->p[k].first + e];
	if (missing)
		snprintf(why + n, len - n, " strict(%u events of the packets before the error's offset %" PRIu64 " not read: %s)",
			 missing, off, res->error);
}

static void try(struct run *r, const struct files *f, const struct damage *d)
{
	const struct ocpu *c = r->c;
	struct damage dd = *d;
	struct result res;
	unsigned int said;
	char why[1024];

	dd.fed = f->fed;
	d = &dd;
	read_back(r->md, c, f, d, true, false, 0, 0, &res);
	said = res.damage;
	judge(c, d, false, 0, 0, &res, why, sizeof(why));
	/*
	 * Windows around the damage, seeking: from two packets before it,
	 * and starting right before it, at it, right after it -- where the
	 * first packet a window reads has no packet before it to judge it by.
	 */
	for (int start = -2, prev = -1; !*why && d->window && !f->fed && start <= 1; start++) {
		int64_t l = (int64_t)d->touched_lo + start;
		uint32_t lo = l < 0 ? 0 : l >= (int64_t)c->np ? c->np - 1 : (uint32_t)l;
		uint32_t hi = d->touched_hi + 2 < c->np ? d->touched_hi + 2 : c->np - 1;
		uint64_t wb = c->p[lo].begin, we = c->p[hi].end;

		if ((int)lo == prev)
			continue;
		prev = (int)lo;
		free(res.seen);
		read_back(r->md, c, f, d, true, true, wb, we, &res);
		judge(c, d, true, wb, we, &res, why, sizeof(why));
		if (*why) {
			size_t n = strlen(why);

			snprintf(why + n, sizeof(why) - n, " [in the window of packets %u-%u]", lo, hi);
		}
	}
	if (!*why && d->strict_read && !f->fed) {
		free(res.seen);
		read_back(r->md, c, f, d, false, false, 0, 0, &res);
		judge_strict(c, &res, said, why, sizeof(why));
	}
	free(res.seen);
	tried(r, f, d, why);
}

static void report_run(const struct run *r)
{
	if (!r->n)
		return;
	if (!r->bad) {
		printf("ok     %s cpu%d %s %s: %u damages\n", r->trace, r->c->cpu,
		       form_name[r->form], r->kind, r->n);
		passed++;
		return;
	}
	printf("FAIL   %s cpu%d %s %s: %u of %u damages break a check\n", r->trace,
	       r->c->cpu, form_name[r->form], r->kind, r->bad, r->n);
	for (unsigned int i = 0; i < r->bad && i < SHOWN; i++)
		printf("         %s\n", r->shown[i]);
	failed++;
}

/* ---- header and event damage ------------------------------------------------------- */

struct hfield {
	const char *name;
	unsigned int off, len;
};

#define HF(f) { #f, FIELD_OFF(f), FIELD_LEN(f) }
static const struct hfield fields[] = {
	HF(magic), HF(uuid), HF(stream_id), HF(stream_instance_id),
	HF(timestamp_begin), HF(timestamp_end), HF(content_size), HF(packet_size),
	HF(packet_seq_num), HF(events_discarded), HF(cpu_id), HF(events),
};

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = n; i--; )
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/*
 * Whether the format tells a packet_seq_num or events_discarded of @v in
 * packet @k from the original: it crosses a neighbour's, or claims more
 * lost than the time since the packet before allows.
 */
static bool counter_tells(const struct ocpu *c, uint32_t k, bool seq, uint64_t v)
{
	const struct opkt *p = &c->p[k];
	uint64_t prev = 0, next = 0;

	if (k) {
		prev = seq ? c->p[k - 1].seq : c->p[k - 1].ed;
		if (seq ? v <= prev : v < prev)
			return true;
		if (v - prev > (p->end - c->p[k - 1].end) + CLOCK_GRAIN)
			return true;
	} else if (v > p->end + CLOCK_GRAIN) {
		return true;
	}
	if (k + 1 < c->np) {
		next = seq ? c->p[k + 1].seq : c->p[k + 1].ed;
		if (seq ? v >= next : v > next)
			return true;
	}
	return false;
}

/* Whether the format tells field @hf of packet @k set to @v. */
static bool header_strict(const struct ocpu *c, uint32_t k,
			  const struct hfield *hf, uint64_t v)
{
	if (hf->off == FIELD_OFF(timestamp_begin))
		return v > c->p[k].end || (k && v < c->p[k - 1].end);
	if (hf->off == FIELD_OFF(packet_seq_num))
		return counter_tells(c, k, true, v);
	if (hf->off == FIELD_OFF(events_discarded))
		return counter_tells(c, k, false, v);
	return true;
}

static void header_damage(struct run *r, uint32_t k, const struct hfield *hf,
			  const char *how, uint64_t v, bool window)
{
	const struct ocpu *c = r->c;
	uint8_t *b = xrealloc(NULL, c->plain_len);
	uint8_t *at = b + c->p[k].off + hf->off;
	struct damage d = {
		.touched_lo = k, .touched_hi = k,
		.plain_lo = c->p[k].off, .plain_hi = c->p[k].off + c->p[k].len,
		.window = window, .strict_read = window,
	};
	struct files f;

	memcpy(b, c->plain, c->plain_len);
	if (hf->len <= 8) {
		d.strict = header_strict(c, k, hf, v);
		if (get_le(at, hf->len) == v) {
			free(b);
			return;
		}
		put_le(at, v, hf->len);
	} else {
		/* The uuid: @v is the bit to flip, or all of it to zero. */
		d.strict = true;
		if (v < 128)
			at[v / 8] ^= (uint8_t)(1 << (v % 8));
		else
			memset(at, 0, hf->len);
	}
	snprintf(d.what, sizeof(d.what), "packet %u %s %s", r->first + k, hf->name, how);
	make_form(c, r->form, b, c->plain_len, &f);
	try(r, &f, &d);
	free_files(&f);
	free(b);
}

/*
 * Packets @k on renumbered one down, as a writer that starts over would
 * (or several headers damaged alike): where packet @k - 1 has the number
 * @k now has, two packets have one number, and no loss lies between them
 * (not 2^64 - 1).  Packet @k - 1 counts as touched: with a gap before it,
 * its own number is the one that looks damaged.
 */
static void renumber_damage(struct run *r, uint32_t k)
{
	const struct ocpu *c = r->c;
	struct damage d = {
		.touched_hi = c->np - 1, .plain_hi = c->plain_len,
		.window = true, .strict_read = true,
	};
	struct files f;
	uint8_t *b;

	if (!k || !c->p[k].seq)
		return;
	d.touched_lo = k - 1;
	d.plain_lo = c->p[k - 1].off;
	d.strict = c->p[k].seq - 1 == c->p[k - 1].seq;
	b = xrealloc(NULL, c->plain_len);
	memcpy(b, c->plain, c->plain_len);
	for (uint32_t j = k; j < c->np; j++)
		put_le(b + c->p[j].off + FIELD_OFF(packet_seq_num), c->p[j].seq - 1,
		       FIELD_LEN(packet_seq_num));
	snprintf(d.what, sizeof(d.what), "packets %u on: packet_seq_num one down", r->first + k);
	make_form(c, r->form, b, c->plain_len, &f);
	try(r, &f, &d);
	free_files(&f);
	free(b);
}

/* The damages of one packet's header: each bit, or the values. */
static void header_packet(struct run *r, uint32_t k, bool bits)
{
	const struct ocpu *c = r->c;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct hfield *hf = &fields[i];
		uint64_t v, ones;
		char how[64];

		if (hf->len > 8) {
			for (unsigned int bit = 0; bits && bit < hf->len * 8; bit++) {
				snprintf(how, sizeof(how), "bit %u flipped", bit);
				header_damage(r, k, hf, how, bit, false);
			}
			if (!bits)
				header_damage(r, k, hf, "zero", 128, true);
			continue;
		}
		v = get_le(c->plain + c->p[k].off + hf->off, hf->len);
		ones = hf->len == 8 ? UINT64_MAX : (1ULL << hf->len * 8) - 1;
		for (unsigned int bit = 0; bits && bit < hf->len * 8; bit++) {
			snprintf(how, sizeof(how), "bit %u flipped", bit);
			header_damage(r, k, hf, how, v ^ 1ULL << bit, false);
		}
		if (bits)
			continue;
		header_damage(r, k, hf, "0", 0, true);
		header_damage(r, k, hf, "all ones", ones, true);
		header_damage(r, k, hf, "+1", (v + 1) & ones, true);
		header_damage(r, k, hf, "-1", (v - 1) & ones, true);
		if (hf->len == 8) {
			header_damage(r, k, hf, "bit 40 flipped", v ^ 1ULL << 40, true);
			header_damage(r, k, hf, "bit 63 flipped", v ^ 1ULL << 63, true);
		}
		if (hf->off == FIELD_OFF(content_size))
			header_damage(r, k, hf, "1 MiB", 8ULL << 20, true);
	}
	if (!bits)
		renumber_damage(r, k);
}

/*
 * Each packet (@bits: bit_by_bit()'s) damaged, read back with the packets
 * around it.  @what damages packet k of the cut it is given.
 */
static void each_packet(struct run *r, bool only_some,
			void (*what)(struct run *r, uint32_t k, bool bits), bool bits)
{
	const struct ocpu *whole = r->c;

	for (uint32_t k = 0; k < whole->np; k++) {
		uint32_t a = k >= CUT ? k - CUT : 0;
		uint32_t b = k + CUT < whole->np ? k + CUT : whole->np - 1;
		struct ocpu o;

		if (only_some && !bit_by_bit(k, whole->np))
			continue;
		cut(whole, a, b, &o);
		r->c = &o;
		r->first = a;
		what(r, k - a, bits);
		r->c = whole;
		r->first = 0;
		free_ocpu(&o);
	}
}

/* Offsets (in the plain stream) of the headers of packet @k's events. */
static unsigned int event_headers(const struct ocpu *c, const struct rt_metadata *md,
				  uint32_t k, uint64_t *at, unsigned int max)
{
	const struct opkt *p = &c->p[k];
	struct rt_stream *s;
	struct rt_error err;
	struct rt_item it;
	struct files f;
	char *path = NULL;
	unsigned int n = 0;

	/* The packet alone, read by the library: its events' offsets. */
	memset(&f, 0, sizeof(f));
	f.n = 1;
	snprintf(f.name[0], sizeof(f.name[0]), "cpu%d", c->cpu);
	f.data[0] = c->plain + p->off;
	f.len[0] = p->len;
	write_files(&f, &path);
	if (rt_stream_open(&s, md, (const char *const *)&path, 1, c->cpu, &err))
		die("%s", err.msg);
	while (rt_stream_next(s, &it, &err) > 0)
		if (it.type == RT_ITEM_EVENT && n < max)
			at[n++] = p->off + it.offset;
	rt_stream_close(s);
	unlink(path);
	free(path);
	return n;
}

static void event_packet(struct run *r, uint32_t k, bool bits)
{
	const struct ocpu *c = r->c;
	uint64_t at[4096];
	unsigned int n = event_headers(c, r->md, k, at, 4096);
	unsigned int pick[4] = { 0, 1, n / 2, n - 1 };

	(void)bits;
	for (unsigned int j = 0; n && j < 4; j++) {
		uint64_t off = at[pick[j]];
		bool ext = (c->plain[off] & 31) == RINGTRACE_EVENT_ID_EXTENDED;
		unsigned int nbits = ext ? 96 : 32;

		if (pick[j] >= n || (j && pick[j] <= pick[j - 1]))
			continue;
		for (unsigned int bit = 0; bit < nbits; bit++) {
			uint8_t *b = xrealloc(NULL, c->plain_len);
			struct damage d = {
				.strict = false,
				.touched_lo = k, .touched_hi = k,
				.plain_lo = c->p[k].off,
				.plain_hi = c->p[k].off + c->p[k].len,
			};
			struct files f;

			memcpy(b, c->plain, c->plain_len);
			b[off + bit / 8] ^= (uint8_t)(1 << (bit % 8));
			snprintf(d.what, sizeof(d.what),
				 "packet %u, event %u (%s header) bit %u flipped",
				 r->first + k, pick[j], ext ? "extended" : "compact", bit);
			make_form(c, PLAIN, b, c->plain_len, &f);
			try(r, &f, &d);
			free_files(&f);
			free(b);
		}
	}
}

/* ---- frame damage --------------------------------------------------------------------- */

struct frame {
	unsigned int file;
	size_t off, len, hlen;		/* hlen: the frame header's bytes */
	bool checksum;
	uint32_t plo, phi;		/* the packets it holds */
};

/* What the frame @p (@len bytes) decodes to, in bytes. */
static unsigned long long decoded_size(const char *name, const uint8_t *p, size_t len)
{
	ZSTD_DCtx *z = ZSTD_createDCtx();
	ZSTD_inBuffer in = { p, len, 0 };
	unsigned long long total = 0;
	static uint8_t buf[1 << 16];
	size_t r;

	if (!z)
		die("out of memory");
	do {
		ZSTD_outBuffer out = { buf, sizeof(buf), 0 };

		r = ZSTD_decompressStream(z, &out, &in);
		if (ZSTD_isError(r))
			die("%s: a frame does not decode: %s", name, ZSTD_getErrorName(r));
		total += out.pos;
	} while (r && in.pos < in.size);
	ZSTD_freeDCtx(z);
	return total;
}

/* The frames of @f, with the packets each holds (by plain stream offset). */
static unsigned int frames_of(const struct ocpu *c, const struct files *f,
			      struct frame *fr, unsigned int max)
{
	uint64_t plain = 0;
	uint32_t k = 0;
	unsigned int n = 0;

	for (unsigned int i = 0; i < f->n; i++) {
		size_t off = 0;

		while (off < f->len[i] && n < max) {
			const uint8_t *p = f->data[i] + off;
			size_t left = f->len[i] - off;
			size_t len = ZSTD_findFrameCompressedSize(p, left);
			unsigned long long content;
			size_t hlen;

			if (ZSTD_isError(len))
				die("%s: not zstd frames", f->name[i]);
			if (ZSTD_isSkippableFrame(p, left)) {
				/* The packer's time index: no packet in it. */
				off += len;
				continue;
			}
			content = ZSTD_getFrameContentSize(p, left);
			hlen = ZSTD_frameHeaderSize(p, left);
			if (ZSTD_isError(hlen))
				die("%s: not zstd frames", f->name[i]);
			if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR)
				content = decoded_size(f->name[i], p, len);
			fr[n] = (struct frame){
				.file = i, .off = off, .len = len, .hlen = hlen,
				.checksum = p[4] & 4, .plo = k,
			};
			plain += content;
			while (k < c->np && c->p[k].off + c->p[k].len <= plain)
				k++;
			fr[n].phi = k;		/* exclusive, for now */
			if (fr[n].phi > fr[n].plo)
				n++;
			off += len;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		fr[i].phi--;
	return n;
}

/* @f with frame @a's bytes as @how says; the damage touches @pl..@ph. */
static void frame_damage(struct run *r, const struct files *f, const struct frame *fr,
			 unsigned int nfr, unsigned int a, const char *how,
			 long bit, int op)
{
	const struct ocpu *c = r->c;
	const struct frame *x = &fr[a], *y = a + 1 < nfr ? &fr[a + 1] : NULL;
	struct files g;
	struct damage d = { .strict = true, .touched_lo = x->plo, .touched_hi = x->phi };
	size_t len = f->len[x->file];
	const uint8_t *src = f->data[x->file];
	uint8_t *out;

	if (op == 3 && (!y || y->file != x->file))
		return;
	memset(&g, 0, sizeof(g));
	g.n = f->n;
	for (unsigned int i = 0; i < f->n; i++) {
		snprintf(g.name[i], sizeof(g.name[i]), "%s", f->name[i]);
		if (i == x->file)
			continue;
		g.data[i] = xrealloc(NULL, f->len[i]);
		memcpy(g.data[i], f->data[i], f->len[i]);
		g.len[i] = f->len[i];
	}
	out = xrealloc(NULL, len + x->len);
	switch (op) {
	case 0:		/* a bit flipped */
		memcpy(out, src, len);
		out[x->off + (size_t)bit / 8] ^= (uint8_t)(1 << (bit % 8));
		g.len[x->file] = len;
		break;
	case 1:		/* cut in two: its first half, then the next frame */
		memcpy(out, src, x->off + x->len / 2);
		memcpy(out + x->off + x->len / 2, src + x->off + x->len, len - x->off - x->len);
		g.len[x->file] = len - (x->len - x->len / 2);
		break;
	case 2:		/* doubled */
		memcpy(out, src, x->off + x->len);
		memcpy(out + x->off + x->len, src + x->off, len - x->off);
		g.len[x->file] = len + x->len;
		break;
	case 3:		/* swapped with the next */
		memcpy(out, src, x->off);
		memcpy(out + x->off, src + y->off, y->len);
		memcpy(out + x->off + y->len, src + x->off, x->len);
		memcpy(out + x->off + y->len + x->len, src + y->off + y->len,
		       len - y->off - y->len);
		g.len[x->file] = len;
		d.touched_hi = y->phi;
		break;
	default:	/* dropped: its packets read as lost, which they are */
		memcpy(out, src, x->off);
		memcpy(out + x->off, src + x->off + x->len, len - x->off - x->len);
		g.len[x->file] = len - x->len;
		d.as_lost = true;
		break;
	}
	g.data[x->file] = out;
	d.at_end = !y || y->file != x->file;
	d.plain_lo = c->p[d.touched_lo].off;
	d.plain_hi = c->p[d.touched_hi].off + c->p[d.touched_hi].len;
	snprintf(d.what, sizeof(d.what), "frame %u of %s (offset %zu, packets %u-%u) %s",
		 a, f->name[x->file], x->off, r->first + x->plo, r->first + x->phi, how);
	try(r, &g, &d);
	free_files(&g);
}

/*
 * Frame damage of @f: frame @only (or every frame: -1), bit by bit (@bits)
 * and whole (@ops).
 */
static void frame_run(struct run *r, const struct files *f, int only, bool bits,
		      bool ops)
{
	static const char *const op_name[] = { NULL, "cut in two", "doubled",
					       "swapped with the next", "dropped" };
	static struct frame fr[4096];
	unsigned int n = frames_of(r->c, f, fr, 4096);
	char how[64];

	for (unsigned int a = 0; a < n; a++) {
		if (only >= 0 && a != (unsigned int)only)
			continue;
		/* Magic, header, the first block's header. */
		for (long bit = 0; bits && bit < (long)(fr[a].hlen + 3) * 8; bit++) {
			snprintf(how, sizeof(how), "bit %ld flipped", bit);
			frame_damage(r, f, fr, n, a, how, bit, 0);
		}
		if (bits && fr[a].checksum)
			for (long bit = (long)(fr[a].len - 4) * 8; bit < (long)fr[a].len * 8; bit++) {
				snprintf(how, sizeof(how), "checksum bit %ld flipped", bit);
				frame_damage(r, f, fr, n, a, how, bit, 0);
			}
		for (int op = 1; ops && op <= 4; op++)
			frame_damage(r, f, fr, n, a, op_name[op], 0, op);
	}
}

/* Stored frames: the frame of packet @k of the cut, in a stored form of it. */
static void stored_packet(struct run *r, uint32_t k, bool bits)
{
	struct files f;

	make_form(r->c, STORED, r->c->plain, r->c->plain_len, &f);
	frame_run(r, &f, (int)k, bits, !bits);
	free_files(&f);
}

static void header_values(struct run *r, uint32_t k, bool bits)
{
	(void)bits;
	header_packet(r, k, false);
}

/*
 * Nothing damaged, in @r->form: read exactly as the original, nothing
 * said -- whole, and as a window from each packet on.  (A stored frame is
 * its packet's bytes: whatever a payload holds, a frame magic included,
 * is not damage.)
 */
static void intact_run(struct run *r)
{
	const struct ocpu *c = r->c;
	struct damage d = { .strict = true, .intact = true, .touched_lo = 1 };
	struct result res;
	struct files f;
	char why[1024];

	if (r->form == PACKED)
		load_packed(c, &f);
	else
		make_form(c, r->form, c->plain, c->plain_len, &f);
	d.fed = f.fed;
	snprintf(d.what, sizeof(d.what), "nothing damaged");
	read_back(r->md, c, &f, &d, true, false, 0, 0, &res);
	judge(c, &d, false, 0, 0, &res, why, sizeof(why));
	free(res.seen);
	tried(r, &f, &d, why);
	for (uint32_t k = 0; !f.fed && k < c->np; k++) {
		uint32_t hi = k + 2 < c->np ? k + 2 : c->np - 1;

		snprintf(d.what, sizeof(d.what), "nothing damaged, the window of packets %u-%u", k, hi);
		read_back(r->md, c, &f, &d, true, true, c->p[k].begin, c->p[hi].end, &res);
		judge(c, &d, true, c->p[k].begin, c->p[hi].end, &res, why, sizeof(why));
		free(res.seen);
		tried(r, &f, &d, why);
	}
	free_files(&f);
}

/* ---- resynchronising costs what it reads ---------------------------------------------- */

/* @n bytes of damage of kind @kind, made of the packet header @h's parts. */
static uint8_t *damage_bytes(unsigned int kind, const uint8_t *h, size_t n, size_t *len)
{
	uint8_t *b = xrealloc(NULL, n + HDR), *x;
	size_t at = 0;

	switch (kind) {
	case 0:		/* a header that holds, over signatures */
	case 1:		/* signatures between packets */
		at = kind ? 0 : HDR;
		for (; at + 20 <= n + (kind ? 0 : HDR); at += 20)
			memcpy(b + at, h, 20);
		if (kind)
			break;
		memcpy(b, h, HDR);
		put_le(b + FIELD_OFF(content_size), at * 8, 8);
		put_le(b + FIELD_OFF(packet_size), at * 8, 8);
		break;
	default:	/* headers that hold, each claiming 64 MiB */
		for (; at + HDR <= n; at += HDR) {
			x = b + at;
			memcpy(x, h, HDR);
			put_le(x + FIELD_OFF(content_size), 64ULL << 23, 8);
			put_le(x + FIELD_OFF(packet_size), 64ULL << 23, 8);
		}
	}
	*len = at;
	return b;
}

/*
 * Damage holding a packet signature every few bytes, between two intact
 * packets, read back tolerant (plain and stored): the reader's work --
 * bytes copied and searched, rt_stream_work() -- grows as the damage
 * does, not as its square, and both packets' events are read.  (a) A
 * header that holds over signatures, (b) signatures between packets, (c)
 * headers that hold, each claiming 64 MiB.  Returns whether all held.
 */
static bool resync_work(const char *trace, const struct rt_metadata *md,
			const struct ocpu *c)
{
	static const char *const what[] = { "signatures inside a packet",
					    "signatures between packets",
					    "headers claiming 64 MiB" };
	const struct opkt *a = &c->p[0], *z = &c->p[1];
	bool all = true;

	for (unsigned int kind = 0; kind < 3; kind++) {
		for (enum form form = PLAIN; form <= STORED; form++) {
			uint64_t work[2], size[2];
			unsigned int events[2];
			char line[256];

			for (unsigned int i = 0; i < 2; i++) {
				struct opkt p3[3] = { *a, *a, *z };
				struct ocpu o = *c;
				size_t len;
				uint8_t *bad = damage_bytes(kind, c->plain + a->off,
							    (size_t)64 << (10 + 2 * i), &len);
				char *paths[64] = { 0 };
				struct rt_stream *s;
				struct rt_error err;
				struct rt_item it;
				struct files f;
				int ret;

				o.plain_len = a->len + len + z->len;
				o.plain = xrealloc(NULL, o.plain_len);
				memcpy(o.plain, c->plain + a->off, a->len);
				memcpy(o.plain + a->len, bad, len);
				memcpy(o.plain + a->len + len, c->plain + z->off, z->len);
				p3[0].off = 0;
				p3[1].off = a->len;
				p3[1].len = len;
				p3[2].off = a->len + len;
				o.p = p3;
				o.np = 3;
				make_form(&o, form, o.plain, o.plain_len, &f);
				write_files(&f, paths);
				if (rt_stream_open(&s, md, (const char *const *)paths, 1, c->cpu, &err))
					die("%s", err.msg);
				rt_stream_set_tolerant(s, true);
				events[i] = 0;
				while ((ret = rt_stream_next(s, &it, &err)) > 0)
					events[i] += it.type == RT_ITEM_EVENT;
				if (ret < 0)
					die("%s", err.msg);
				work[i] = rt_stream_work(s);
				size[i] = o.plain_len;
				rt_stream_close(s);
				unlink(paths[0]);
				free(paths[0]);
				free_files(&f);
				free(o.plain);
				free(bad);
			}
			snprintf(line, sizeof(line), "%s %s resync work, %s: %" PRIu64 " and %" PRIu64 " bytes of work for %" PRIu64 " and %" PRIu64 " bytes",
				 trace, form_name[form], what[kind], work[0], work[1], size[0], size[1]);
			if (work[1] <= 6 * work[0] && work[1] <= 8 * size[1] &&
			    events[0] == a->nr + z->nr && events[1] == events[0]) {
				printf("ok     %s\n", line);
				passed++;
				continue;
			}
			printf("FAIL   %s (%u and %u events, %u expected)\n", line, events[0],
			       events[1], a->nr + z->nr);
			failed++;
			all = false;
		}
	}
	return all;
}

/* ---- main ------------------------------------------------------------------------------ */

static void fuzz_cpu(const char *trace, const struct rt_metadata *md, const struct ocpu *c)
{
	static const struct {
		enum form form;
		const char *kind;
		bool only_some, bits;
		void (*what)(struct run *r, uint32_t k, bool bits);
	} runs[] = {
		{ PLAIN, "header bits", true, true, header_packet },
		{ PLAIN, "header values", false, false, header_packet },
		{ PLAIN, "event header bits", true, true, event_packet },
		{ STORED, "header values", false, false, header_values },
		{ FED, "header values", false, false, header_values },
		{ STORED, "frame bits", true, true, stored_packet },
		{ STORED, "frames", false, false, stored_packet },
	};
	struct files f;

	for (enum form form = PLAIN; form <= FED; form++) {
		struct run r = { .trace = trace, .md = md, .c = c, .form = form,
				 .kind = "intact" };

		if (form == PACKED && !(c->nr_files && strstr(c->files[0], ".zst")))
			continue;
		intact_run(&r);
		report_run(&r);
	}
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct run r = { .trace = trace, .md = md, .c = c, .form = runs[i].form,
				 .kind = runs[i].kind };

		each_packet(&r, runs[i].only_some, runs[i].what, runs[i].bits);
		report_run(&r);
	}
	if (c->nr_files && strstr(c->files[0], ".zst")) {
		struct run r = { .trace = trace, .md = md, .c = c, .form = PACKED,
				 .kind = "frames" };

		load_packed(c, &f);
		frame_run(&r, &f, -1, true, true);
		free_files(&f);
		report_run(&r);
	}
}

int main(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "vk:")) != -1) {
		if (opt == 'v') {
			verbose = true;
		} else if (opt == 'k') {
			keep = optarg;
		} else {
			fprintf(stderr, "usage: damage_fuzz [-v] [-k DIR] TRACE...\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "usage: damage_fuzz [-v] [-k DIR] TRACE...\n");
		return 2;
	}
	/* Many small files written and read: memory, where there is some. */
	snprintf(scratch, sizeof(scratch), "%s/rt-damage-fuzz.XXXXXX",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	if (!mkdtemp(scratch))
		die("%s: %s", scratch, strerror(errno));
	for (int a = optind; a < argc; a++) {
		const char *trace = strrchr(argv[a], '/') && strrchr(argv[a], '/')[1] ?
				    strrchr(argv[a], '/') + 1 : argv[a];
		struct rt_trace *t;
		struct rt_error err;

		trace_dir = argv[a];
		if (rt_trace_open(argv[a], &t, &err))
			die("%s", err.msg);
		for (unsigned int i = 0; i < t->nr_cpus; i++) {
			struct ocpu c;

			read_original(t, &t->cpus[i], &c);
			if (!i && c.np >= 2)
				resync_work(trace, t->md, &c);
			fuzz_cpu(trace, t->md, &c);
			free_ocpu(&c);
		}
		rt_trace_close(t);
	}
	rmdir(scratch);
	printf("damage-fuzz: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
