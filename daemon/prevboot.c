// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced --recover: the previous boot's (or the previous module
 * load's) trace, from the persistent region's image to an ordinary trace
 * directory, then the region released.  `ringtrace recover` runs this.
 *
 * The image comes from persist/image (pread; the module keeps it until
 * persist/release names its uuid) or from a file (--image).  Nothing of
 * it is believed before it is checked (lib/persist.h): a header that does
 * not check is refused, named; no magic is "no previous trace" (a cold
 * boot leaves zeros or noise); an image of another kernel build is
 * refused, both builds named, unless --force.
 *
 * Per CPU (slice), the packets are the slots' newest generations, by
 * their commit counters (lib/persist.c), in the writer's order:
 *
 *   complete    its header checked (magic, the image's uuid, stream ids,
 *               its CPU, the writer's packet_seq_num, sizes, times) and
 *               its records walked as the decoder reads a packet
 *               (rt_packet_walk()): exactly as many as the counters say
 *               the generation holds (or GET wrote into its header, for
 *               one a consumer took).  Written with events set.
 *   open        the crash came while it was being written: its records
 *               are kept up to what was committed.  Closed by a closer
 *               (its end fields written, its padding committed): the
 *               bytes not committed are the in-flight records at its end,
 *               the shortest suffix that adds up to them dropped.  Not
 *               closed: the records that end within the bytes committed,
 *               as many as the counters say were committed; the record
 *               being written, when its header was stored, dropped.
 *               The header is rewritten to what is kept, the records
 *               dropped added to events_discarded.  A header not
 *               committed yet: the packet is dropped.
 *
 * Then the packets kept must follow each other as the decoder judges a
 * stream (times, numbers, losses a CPU can reach: judge_neighbours()).
 * Last, each whole panic or emergency-restart entry (module/crash.c)
 * becomes its CPU's last record, kernel_panic, in a packet of its own
 * (design D1: a dying kernel writes into no ring; append_panic()).  A
 * shutdown entry (reboot, power off) is no crash: the json lists it, and
 * the summary says how the boot ended (ending()).
 *
 * A packet that fails a check is damage (design D6): it is left out of
 * the stream (its sequence number reads as a lost packet, as any loss
 * does), saved verbatim as .ringtrace-damaged/cpuC-SEQ.bin, named on
 * stderr, and the exit status is 3.  The other packets are unaffected,
 * and the directory reads clean.  Counters that put a slot outside the
 * ring's span (stale) cost that slot's packet, counted, not saved.
 *
 * The directory: metadata (the image's newest valid copy, parsed and of
 * the image's uuid), .ringtrace-ksyms.zst (the image's blob, if it has
 * one that decompresses), cpuC-000000.zst per CPU (stored zstd frames,
 * one a packet: lib/chunk.h), and .ringtrace-crash.json with the
 * accounting, the crash entries and the writers' snapshots.  Every file is synced, then the directory; only then is the
 * region released (design D15), unless --keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "ringtraced.h"
#include "../lib/chunk.h"
#include "../lib/le.h"
#include "../lib/persist.h"
#include "../tools/lib/rtdecode.h"

#define HDR_SIZE	sizeof(struct ringtrace_packet_header)
#define PH(f)		offsetof(struct ringtrace_packet_header, f)
#define DAMAGED_DIR	".ringtrace-damaged"
#define CRASH_JSON	".ringtrace-crash.json"
/* The exit status of a trace written with damage left out (as the CLI's). */
#define EXIT_DAMAGED	3
/* An image read from persist/image or a file: at most this (a region's). */
#define IMAGE_MAX	(64ULL << 30)

/* What one CPU's recovery found (the json's "cpus" entries). */
struct cpu_account {
	uint32_t cpu;
	uint64_t packets, events;	/* written */
	uint64_t in_flight_dropped;	/* records being written at the crash */
	uint64_t partial_packets;	/* open packets (kept in part or dropped) */
	uint64_t damaged_packets;	/* failed a check: saved, left out */
	uint64_t stale_packets;		/* outside the ring's span */
	uint64_t taken;			/* a consumer had taken (GET) them */
	bool snapshot;			/* the crash path snapshot its writers */
	struct ringtrace_persist_snap snap;
	unsigned int panics;		/* kernel_panic events appended */
};

struct recovery {
	struct persist_image img;
	struct rt_metadata *md;
	const char *dir;		/* the output, for messages */
	int dirfd, damagedfd;
	struct cpu_account *acct;
	unsigned int nr_acct;
	unsigned int damage;		/* damaged places, all CPUs */
	const uint8_t *md_text;		/* the metadata copy taken */
	uint64_t md_len;
	const uint8_t *ksyms;		/* the symbols' copy taken, or NULL */
	uint64_t ksyms_len;
	/* The crash path's entries (persist_crash()), and what each is. */
	struct ringtrace_persist_crash crash[RINGTRACE_PERSIST_CRASH_MAX];
	int crash_state[RINGTRACE_PERSIST_CRASH_MAX];	/* 1 whole, -1 cut short */
	unsigned int nr_crash;		/* claimed, at most CRASH_MAX */
	uint32_t crash_claimed;
	const struct rt_event_desc *panic_ev;	/* kernel_panic, or NULL */
	uint32_t stack_def_id, stack_ref_id;	/* 0: not declared */
};

/* ---- reading the image ------------------------------------------------ */

/* All of @fd, up to IMAGE_MAX: 0, or -errno. */
static int read_all(int fd, uint8_t **out, uint64_t *n)
{
	uint64_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap), *p;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= IMAGE_MAX) {
				free(buf);
				return -EFBIG;
			}
			p = realloc(buf, cap * 2);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
			cap *= 2;
		}
		r = pread(fd, buf + len, cap - len, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			return r;
		}
		if (!r)
			break;
		len += r;
	}
	*out = buf;
	*n = len;
	return 0;
}

/*
 * The image: --image's file, or the module's persist/image.  1 with it,
 * 0 when the module keeps none (nothing to recover), dies on an error.
 */
static int load_image(struct ctl *c, uint8_t **buf, uint64_t *n)
{
	char path[PATH_MAX + 32], why[256];
	int fd, err;

	if (opt.image) {
		snprintf(path, sizeof(path), "%s", opt.image);
	} else {
		if (ctl_find(c, opt.debugfs, why, sizeof(why)))
			die("%s", why);
		snprintf(path, sizeof(path), "%s/persist/image", c->dir);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !opt.image) {
		info("ringtrace.ko has no persistent region (load it with persist=NAME, or persist_addr= and persist_size=)");
		return 0;
	}
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	err = read_all(fd, buf, n);
	close(fd);
	if (err == -ENODATA) {
		info("the persistent region holds no image: it is live, this load's");
		return 0;
	}
	if (err)
		die("%s: %s", path, strerror(-err));
	return 1;
}

/* ---- identity ---------------------------------------------------------- */

/* The running kernel's build-id from /sys/kernel/notes, in hex ("" if none). */
static void running_build_id(char *hex, size_t size)
{
	uint8_t notes[4096];
	size_t at = 0, n;
	ssize_t r;
	int fd;

	hex[0] = 0;
	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = pread(fd, notes, sizeof(notes), 0);
	n = r > 0 ? (size_t)r : 0;
	close(fd);
	/* Elf64_Nhdr: namesz, descsz, type; name and desc padded to 4. */
	while (at + 12 <= n) {
		uint32_t namesz = rt_get_le(notes + at, 4);
		uint32_t descsz = rt_get_le(notes + at + 4, 4);
		uint32_t type = rt_get_le(notes + at + 8, 4);
		size_t name = at + 12, desc = name + ((namesz + 3ULL) & ~3ULL);

		if (desc > n || descsz > n - desc)
			return;
		if (type == 3 && namesz == 4 && !memcmp(notes + name, "GNU", 4) &&
		    descsz <= RINGTRACE_PERSIST_BUILD_ID_MAX) {
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, size - 2 * i, "%02x",
					 notes[desc + i]);
			return;
		}
		at = desc + ((descsz + 3ULL) & ~3ULL);
	}
}

static void uuid_text(const uint8_t *u, char *buf, size_t size)
{
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/*
 * Whether the image was written by the running kernel's build: its
 * release and version (the module's init_utsname()) and, where both are
 * known, its build-id.  Refused, both named, unless --force.
 */
static void check_identity(const struct persist_image *img)
{
	const struct ringtrace_persist_header *h = &img->h;
	char ibid[2 * RINGTRACE_PERSIST_BUILD_ID_MAX + 1], rbid[sizeof(ibid)];
	char boot[40], when[32];
	struct utsname u;
	time_t t = h->armed_realtime_ns / 1000000000;
	struct tm tm;
	bool same;

	if (uname(&u) < 0)
		die("uname: %s", strerror(errno));
	persist_build_id_hex(img, ibid, sizeof(ibid));
	running_build_id(rbid, sizeof(rbid));
	same = !strcmp(h->release, u.release) && !strcmp(h->version, u.version) &&
	       (!ibid[0] || !rbid[0] || !strcmp(ibid, rbid));
	if (same)
		return;
	uuid_text(h->boot_id, boot, sizeof(boot));
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (opt.force) {
		warn("image of %s %s (build-id %s), this kernel is %s %s (build-id %s): read with the image's own metadata and symbols (--force)",
		     h->release, h->version, ibid[0] ? ibid : "unknown",
		     u.release, u.version, rbid[0] ? rbid : "unknown");
		return;
	}
	die("image of %s %s (build-id %s, boot %s, armed %s), this kernel is %s %s (build-id %s): another build; --force reads it with its own metadata and symbols",
	    h->release, h->version, ibid[0] ? ibid : "unknown", boot, when,
	    u.release, u.version, rbid[0] ? rbid : "unknown");
}

/* ---- the directory's files ------------------------------------------- */

/* @n bytes of @data into the new file @name of @dirfd, synced: 0 or -errno. */
static int write_file(int dirfd, const char *name, const void *data, size_t n)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			O_NOFOLLOW, 0640);
	const uint8_t *p = data;
	ssize_t w;
	int err = 0;

	if (fd < 0)
		return -errno;
	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = -errno;
			break;
		}
		p += w;
		n -= w;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

/* The image's metadata, checked, into rec->md; dies if there is none. */
static void check_metadata(struct recovery *rec)
{
	const struct ringtrace_persist_header *h = &rec->img.h;
	static const char ctf[] = "/* CTF 1.8 */";
	const uint8_t *data;
	struct rt_error err;
	char why[512];
	uint64_t n;
	int r;

	r = persist_blob(&rec->img, false, &data, &n, why, sizeof(why));
	if (r == 0)
		die("the image holds no metadata (the module that wrote it did not keep one): its packets cannot be read");
	if (r < 0)
		die("the image's metadata is damaged: %s", why);
	if (n < sizeof(ctf) - 1 || memcmp(data, ctf, sizeof(ctf) - 1))
		die("the image's metadata does not start with \"%s\"", ctf);
	if (rt_metadata_parse((const char *)data, n, "image metadata", &rec->md, &err))
		die("%s", err.msg);
	if (!rec->md->has_uuid || memcmp(rec->md->uuid, h->trace_uuid, 16))
		die("the image's metadata is another trace's (its uuid is not the header's)");
	rec->md_text = data;
	rec->md_len = n;
}

/* Whether @data, @n bytes, is zstd that decompresses to its end. */
static bool zstd_whole(const uint8_t *data, uint64_t n)
{
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	ZSTD_inBuffer in = { data, n, 0 };
	size_t cap = ZSTD_DStreamOutSize(), r = 1;
	void *out = malloc(cap);
	bool ok = false;

	if (!dc || !out)
		goto out;
	while (in.pos < in.size) {
		ZSTD_outBuffer o = { out, cap, 0 };

		r = ZSTD_decompressStream(dc, &o, &in);
		if (ZSTD_isError(r))
			goto out;
		if (!r && in.pos < in.size)
			continue;	/* the next frame */
		if (in.pos == in.size && o.pos < o.size && r)
			goto out;	/* cut short */
	}
	ok = !r;
out:
	free(out);
	ZSTD_freeDCtx(dc);
	return ok;
}

/* Whether @ev's fields are @names (space separated), in order, each @bits wide. */
static bool fields_are(const struct rt_event_desc *ev, const char *names,
		       const unsigned int *bits)
{
	char copy[128], *save = NULL, *f;
	unsigned int i = 0;

	snprintf(copy, sizeof(copy), "%s", names);
	for (f = strtok_r(copy, " ", &save); f; f = strtok_r(NULL, " ", &save), i++)
		if (i >= ev->nr_fields || strcmp(ev->fields[i].name, f) ||
		    ev->fields[i].bits != bits[i] || ev->fields[i].align != 1)
			return false;
	return i == ev->nr_fields;
}

/*
 * The crash path's entries, and the events their kernel_panic needs in
 * the metadata taken: declared as the module declares them (else the
 * event is not appended, and said), the trailers with compact ids.
 */
static void check_crash(struct recovery *rec)
{
	static const unsigned int panic_bits[] = { 32, 32, 64, 32, 32, 8, 16, 8 };
	static const unsigned int def_bits[] = { 8, 8, 16, 64 };
	static const unsigned int ref_bits[] = { 32, 32 };
	const struct rt_metadata *md = rec->md;

	rec->crash_claimed = persist_crash_claimed(&rec->img);
	rec->nr_crash = rec->crash_claimed < RINGTRACE_PERSIST_CRASH_MAX ?
			rec->crash_claimed : RINGTRACE_PERSIST_CRASH_MAX;
	for (unsigned int i = 0; i < rec->nr_crash; i++) {
		rec->crash_state[i] = persist_crash(&rec->img, i, &rec->crash[i]);
		if (rec->crash_state[i] < 0)
			warn("crash entry %u was not written whole (a hook cut short, or damage): left out", i);
	}
	for (unsigned int i = 0; i < md->nr_events; i++) {
		const struct rt_event_desc *ev = &md->events[i];

		if (!strcmp(ev->name, "kernel_panic") &&
		    ev->id < (1U << 27) &&
		    fields_are(ev, "reason cpu ip tid pid comm message_len message",
			       panic_bits))
			rec->panic_ev = ev;
		else if (!strcmp(ev->name, "stack_def") &&
			 ev->id < RINGTRACE_EVENT_ID_EXTENDED &&
			 !(md->untimed & 1U << ev->id) &&
			 fields_are(ev, "kind flags depth ips", def_bits))
			rec->stack_def_id = ev->id;
		else if (!strcmp(ev->name, "stack_ref") &&
			 ev->id < RINGTRACE_EVENT_ID_EXTENDED &&
			 (md->untimed & 1U << ev->id) &&
			 fields_are(ev, "kernel user", ref_bits))
			rec->stack_ref_id = ev->id;
	}
	for (unsigned int i = 0; !rec->panic_ev && i < rec->nr_crash; i++)
		if (rec->crash_state[i] == 1 &&
		    rec->crash[i].reason != RINGTRACE_PERSIST_OOPS) {
			warn("the metadata declares no kernel_panic event as this ringtraced writes it: the crash is in %s alone",
			     CRASH_JSON);
			break;
		}
}

/* The image's symbols, if it has some that read, into rec->ksyms_*. */
static void check_ksyms(struct recovery *rec)
{
	const uint8_t *data;
	char why[512];
	uint64_t n;
	int r;

	r = persist_blob(&rec->img, true, &data, &n, why, sizeof(why));
	if (r == 0) {
		warn("the image holds no kernel symbols: stacks print as addresses");
		return;
	}
	if (r < 0 || !zstd_whole(data, n)) {
		if (r > 0)
			snprintf(why, sizeof(why), "its newest copy is not a whole zstd stream");
		warn("the image's kernel symbols are damaged (%s): stacks print as addresses", why);
		rec->damage++;
		return;
	}
	rec->ksyms = data;
	rec->ksyms_len = n;
}

/* The metadata and the symbols checked above, into the directory. */
static void write_metadata_ksyms(struct recovery *rec)
{
	int r = write_file(rec->dirfd, "metadata", rec->md_text, rec->md_len);

	if (r)
		die("%s/metadata: %s", rec->dir, strerror(-r));
	r = rec->ksyms ? write_file(rec->dirfd, KSYMS_FILE, rec->ksyms,
				    rec->ksyms_len) : 0;
	if (r)
		die("%s/%s: %s", rec->dir, KSYMS_FILE, strerror(-r));
}

/* ---- packets ----------------------------------------------------------- */

/* One packet to write: its bytes (a copy, the header rewritten). */
struct out_packet {
	uint8_t *bytes;
	uint64_t len;
	uint64_t seq, ts_begin, ts_end;
	/*
	 * Its loss count: the slot's at its close (@own), or, for the open
	 * packet, the previous packet's plus the records dropped in it
	 * (@dropped).  Made cumulative when written (write_stream()).
	 */
	bool own;
	uint64_t own_discarded, dropped;
	uint64_t discarded;		/* cumulative: what is written */
};

struct cpu_work {
	struct recovery *rec;
	const struct persist_slice *slice;
	struct cpu_account *acct;
	struct out_packet *out;
	size_t nr_out;
	uint64_t clock_freq;		/* of the trace clock, Hz */
};

/* Packet @seq of @w's CPU (@raw, @len bytes) is damage: said, saved, counted. */
static void damaged(struct cpu_work *w, uint64_t seq, const uint8_t *raw,
		    uint64_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void damaged(struct cpu_work *w, uint64_t seq, const uint8_t *raw,
		    uint64_t len, const char *fmt, ...)
{
	struct recovery *rec = w->rec;
	char name[64], why[600];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	w->acct->damaged_packets++;
	rec->damage++;
	if (rec->damagedfd < 0) {
		if (mkdirat(rec->dirfd, DAMAGED_DIR, 0750) < 0 && errno != EEXIST)
			die("%s/%s: %s", rec->dir, DAMAGED_DIR, strerror(errno));
		rec->damagedfd = openat(rec->dirfd, DAMAGED_DIR,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (rec->damagedfd < 0)
			die("%s/%s: %s", rec->dir, DAMAGED_DIR, strerror(errno));
	}
	snprintf(name, sizeof(name), "cpu%u-%" PRIu64 ".bin", w->acct->cpu, seq);
	r = write_file(rec->damagedfd, name, raw, len);
	/* Two slots whose damaged counters claim one number: both kept. */
	for (unsigned int i = 1; r == -EEXIST && i < 1000; i++) {
		snprintf(name, sizeof(name), "cpu%u-%" PRIu64 ".%u.bin",
			 w->acct->cpu, seq, i);
		r = write_file(rec->damagedfd, name, raw, len);
	}
	if (r)
		die("%s/%s/%s: %s", rec->dir, DAMAGED_DIR, name, strerror(-r));
	warn("cpu%u packet %" PRIu64 " is damaged, left out, saved as %s/%s: %s",
	     w->acct->cpu, seq, DAMAGED_DIR, name, why);
}

/* A slot's packet is damage: its whole sub-buffer saved. */
#define slot_damaged(w, p, ...) \
	damaged((w), (p)->seq, (p)->raw, (w)->rec->img.h.subbuf_size, __VA_ARGS__)

/* The record ends of a walk, and how far it may go. */
struct walk {
	uint64_t *ends, *ts;
	size_t n, cap;
	uint64_t limit;			/* records must end by here */
	uint64_t most;			/* and be at most this many */
	const uint8_t *raw;		/* the packet */
	bool past;			/* a record refused, its header word not 0 */
};

static int take_record(void *arg, const struct rt_walk_step *st)
{
	struct walk *wk = arg;

	if (st->end > wk->limit || wk->n >= wk->most) {
		/* A zero word is the zeroed ring, not a record's header. */
		wk->past = rt_get_le(wk->raw + st->start, 4) != 0;
		return 1;
	}
	if (wk->n == wk->cap) {
		size_t cap = wk->cap ? 2 * wk->cap : 256;
		uint64_t *e = realloc(wk->ends, cap * sizeof(*e));
		uint64_t *t = e ? realloc(wk->ts, cap * sizeof(*t)) : NULL;

		if (e)
			wk->ends = e;
		if (!e || !t)
			die("%s", strerror(ENOMEM));
		wk->ts = t;
		wk->cap = cap;
	}
	wk->ends[wk->n] = st->end;
	wk->ts[wk->n] = st->ts;
	wk->n++;
	return 0;
}

/* The header checks every packet of the CPU passes; NULL or why not. */
static const char *check_header(struct cpu_work *w, const uint8_t *h,
				uint64_t seq, bool complete)
{
	const struct ringtrace_persist_header *ih = &w->rec->img.h;
	uint64_t hseq = rt_get_le(h + PH(packet_seq_num), 8);
	uint32_t cpu = w->acct->cpu;

	if (rt_get_le(h + PH(magic), 4) != RINGTRACE_CTF_MAGIC)
		return "bad packet magic";
	if (memcmp(h + PH(uuid), ih->trace_uuid, 16))
		return "packet uuid differs from the image's trace uuid";
	if (rt_get_le(h + PH(stream_id), 4) != RINGTRACE_STREAM_ID)
		return "unknown stream id";
	if (rt_get_le(h + PH(stream_instance_id), 8) != cpu ||
	    rt_get_le(h + PH(cpu_id), 4) != cpu)
		return "packet of another CPU";
	/* A consumer's GET renumbers from its recording's origin, never up. */
	if (hseq != seq &&
	    !(complete && rt_get_le(h + PH(events), 4) && hseq < seq))
		return "packet_seq_num is not the slot's";
	return NULL;
}

/*
 * Packet @raw, @len bytes of it kept, into @w's list: its header rewritten
 * to what is kept (events_discarded at write_stream()).  @own: @discarded
 * is the slot's loss count at its close; else @discarded records were
 * dropped from it (the open packet).
 */
static void add_out(struct cpu_work *w, const uint8_t *raw, uint64_t len,
		    uint64_t seq, uint64_t ts_end, uint64_t events, bool own,
		    uint64_t discarded)
{
	struct out_packet *o;
	uint8_t *b = malloc(len);

	if (!b)
		die("%s", strerror(ENOMEM));
	memcpy(b, raw, len);
	rt_put_le(b + PH(content_size), len * 8, 8);
	rt_put_le(b + PH(packet_size), len * 8, 8);
	rt_put_le(b + PH(packet_seq_num), seq, 8);
	rt_put_le(b + PH(events), events, 4);
	rt_put_le(b + PH(timestamp_end), ts_end, 8);
	o = realloc(w->out, (w->nr_out + 1) * sizeof(*o));
	if (!o)
		die("%s", strerror(ENOMEM));
	w->out = o;
	o = &w->out[w->nr_out++];
	*o = (struct out_packet){
		.bytes = b, .len = len, .seq = seq,
		.ts_begin = rt_get_le(b + PH(timestamp_begin), 8),
		.ts_end = ts_end, .own = own,
		.own_discarded = own ? discarded : 0, .dropped = own ? 0 : discarded,
	};
	w->acct->packets++;
	w->acct->events += events;
}

/* A complete packet: written whole, or damage. */
static void complete_packet(struct cpu_work *w, const struct persist_packet *p)
{
	const uint64_t S = w->rec->img.h.subbuf_size;
	const uint8_t *h = p->raw;
	uint64_t content = rt_get_le(h + PH(content_size), 8);
	uint64_t psize = rt_get_le(h + PH(packet_size), 8);
	uint64_t begin = rt_get_le(h + PH(timestamp_begin), 8);
	uint64_t end = rt_get_le(h + PH(timestamp_end), 8);
	uint32_t hevents = rt_get_le(h + PH(events), 4);
	uint64_t hdisc = rt_get_le(h + PH(events_discarded), 8), want;
	struct walk wk = { .most = UINT64_MAX, .raw = p->raw };
	const char *why = check_header(w, h, p->seq, true);
	struct rt_error err;

	if (why) {
		slot_damaged(w, p, "%s", why);
		return;
	}
	if (content % 8 || content / 8 < HDR_SIZE || content / 8 >= S ||
	    psize != content) {
		slot_damaged(w, p, "bad sizes: content_size %" PRIu64 " bits, packet_size %" PRIu64 " bits",
			     content, psize);
		return;
	}
	if (end < begin) {
		slot_damaged(w, p, "timestamp_end %" PRIu64 " before timestamp_begin %" PRIu64,
			     end, begin);
		return;
	}
	content /= 8;
	/* The writer's snapshot, unless a consumer's GET rewrote it. */
	if (!hevents && hdisc != p->discarded) {
		slot_damaged(w, p, "events_discarded %" PRIu64 " differs from the slot's count at its close, %" PRIu64,
			     hdisc, p->discarded);
		return;
	}
	wk.limit = content;
	if (rt_packet_walk(w->rec->md, "image", h, content, begin, end,
			   take_record, &wk, &err) != content) {
		slot_damaged(w, p, "%s", err.msg);
		goto out;
	}
	/* GET wrote the count into the header of a packet a consumer took. */
	want = hevents ? hevents : p->records;
	if (wk.n != want) {
		slot_damaged(w, p, "it holds %zu records, its %s %" PRIu64, wk.n,
			     hevents ? "header says" : "slot's counters say", want);
		goto out;
	}
	if (hevents)
		w->acct->taken++;
	add_out(w, h, content, p->seq, end, wk.n, true, p->discarded);
out:
	free(wk.ends);
	free(wk.ts);
}

/*
 * The open packet (the crash came while it was being written): what was
 * committed of it, the rest dropped and counted (the top of the file).
 */
static void open_packet(struct cpu_work *w, const struct persist_packet *p)
{
	const uint64_t S = w->rec->img.h.subbuf_size, r = p->committed;
	const uint8_t *h = p->raw;
	uint64_t content = rt_get_le(h + PH(content_size), 8);
	uint64_t begin = rt_get_le(h + PH(timestamp_begin), 8);
	uint64_t end = rt_get_le(h + PH(timestamp_end), 8);
	struct walk wk = { .most = UINT64_MAX, .raw = h };
	uint64_t used = content / 8, k, dropped, ts_end;
	struct rt_error err;
	bool closed;

	w->acct->partial_packets++;
	if (r < HDR_SIZE || check_header(w, h, p->seq, false)) {
		/*
		 * The opener had not committed its header (or it is damaged:
		 * the two look alike): nothing of it can be read.
		 */
		w->acct->in_flight_dropped += p->records;
		return;
	}
	/*
	 * Closed by a closer: its end fields are this generation's (the
	 * previous one's ended no later than this one began), its padding
	 * committed, and its records read to its content_size.
	 */
	closed = content % 8 == 0 && rt_get_le(h + PH(packet_size), 8) == content &&
		 used >= HDR_SIZE && used < S && end >= begin &&
		 r >= S - used + HDR_SIZE;
	if (closed) {
		wk.limit = used;
		closed = rt_packet_walk(w->rec->md, "image", h, used, begin, end,
					take_record, &wk, &err) == used;
	}
	if (closed) {
		/*
		 * S - r bytes are not committed: the records in flight, at
		 * the end.  The shortest suffix of that length, or (a nested
		 * writer completed after one in flight) every record past
		 * used - (S - r).
		 */
		uint64_t cut = used - (S - r);

		for (k = wk.n; k > 0 && wk.ends[k - 1] > cut; k--)
			;
		dropped = wk.n - k;
		ts_end = end;
	} else {
		/*
		 * Not closed: the records that end within the bytes
		 * committed, no more than the counters say were committed;
		 * those committed but not kept go, and the record being
		 * written if its header was stored where the kept ones end.
		 */
		wk.n = 0;
		wk.past = false;
		wk.limit = r;
		wk.most = p->records;
		rt_packet_walk(w->rec->md, "image", h, S, begin, UINT64_MAX,
			       take_record, &wk, &err);
		k = wk.n;
		dropped = p->records - k + wk.past;
		ts_end = k ? wk.ts[k - 1] : begin;
	}
	w->acct->in_flight_dropped += dropped;
	if (k || dropped)
		add_out(w, h, k ? wk.ends[k - 1] : HDR_SIZE, p->seq, ts_end, k,
			false, dropped);
	else
		w->acct->partial_packets--;	/* opened, nothing in it yet */
	free(wk.ends);
	free(wk.ts);
}

/*
 * The decoder's bound on what a CPU can lose or number by a time
 * (rtdecode.c's most_lost()): an event a nanosecond, give or take 2^16.
 */
static uint64_t most_by(const struct cpu_work *w, uint64_t cycles)
{
	unsigned __int128 ns = (unsigned __int128)cycles * 1000000000 /
			       (w->clock_freq ? w->clock_freq : 1000000000);

	return ns > UINT64_MAX - 65536 ? UINT64_MAX : (uint64_t)ns + 65536;
}

/* The loss counts made cumulative, as written: never falling. */
static void cumulate(struct cpu_work *w)
{
	uint64_t last = 0;

	for (size_t i = 0; i < w->nr_out; i++) {
		struct out_packet *o = &w->out[i];
		uint64_t d = o->own ? o->own_discarded : last + o->dropped;

		if (d < last || (!o->own && d < o->dropped))
			d = o->own ? last : UINT64_MAX;	/* falls, or wraps */
		o->discarded = last = d;
	}
}

/*
 * Why packet @b cannot come after @a (NULL: @a NULL, or it can), as the
 * decoder judges a stream (rtdecode.c's check_alone(), follows()).
 */
static const char *unfit(const struct cpu_work *w, const struct out_packet *a,
			 const struct out_packet *b)
{
	uint64_t span;

	if (b->seq > most_by(w, b->ts_end) || b->discarded > most_by(w, b->ts_end))
		return "its packet number or loss count is more than a CPU writes by its timestamp_end";
	if (!a)
		return NULL;
	if (b->ts_begin < a->ts_end)
		return "its times overlap the packet before it";
	span = b->ts_end - a->ts_end;
	if (b->seq - a->seq - 1 > most_by(w, span) ||
	    b->discarded - a->discarded > most_by(w, span))
		return "more lost since the packet before it than a CPU writes in the time between";
	return NULL;
}

/*
 * The packets written must follow each other as the decoder judges a
 * stream.  Where two do not, one of them has a damaged header the checks
 * above could not see (its times, a loss count): the one without which
 * the packets around it follow each other is left out, as damage.
 */
static void judge_neighbours(struct cpu_work *w)
{
	size_t i = 0, bad;
	const char *why;

	cumulate(w);
	while (i < w->nr_out) {
		struct out_packet *a = i ? &w->out[i - 1] : NULL, *b = &w->out[i];

		why = unfit(w, a, b);
		if (!why) {
			i++;
			continue;
		}
		bad = i;
		/* a is the odd one if b follows the packet before a. */
		if (a && !unfit(w, i >= 2 ? &w->out[i - 2] : NULL, b) &&
		    unfit(w, i >= 2 ? &w->out[i - 2] : NULL, a))
			bad = i - 1;
		{
			struct out_packet *x = &w->out[bad];

			w->acct->packets--;
			w->acct->events -= rt_get_le(x->bytes + PH(events), 4);
			damaged(w, x->seq, x->bytes, x->len,
				"it does not fit between the packets beside it (%s)",
				why);
			free(x->bytes);
			memmove(x, x + 1, (w->nr_out - bad - 1) * sizeof(*x));
			w->nr_out--;
		}
		cumulate(w);
		i = bad ? bad - 1 : 0;
	}
}

/* ---- the kernel_panic event (design D1) ---------------------------------- */

static uint8_t *put(uint8_t *p, uint64_t v, unsigned int n)
{
	rt_put_le(p, v, n);
	return p + n;
}

/*
 * Crash entry @e of @w's CPU as that CPU's last record: a packet of its own
 * after the ones kept, numbered next, at the entry's time (no earlier than
 * the last packet's end), holding kernel_panic in the layout the module
 * declares (module/crash.c) and, when the metadata declares the trailers,
 * its stack as a stack_def and a stack_ref (events.rst).
 */
static void append_panic(struct cpu_work *w, const struct ringtrace_persist_crash *e)
{
	const struct recovery *rec = w->rec;
	const struct out_packet *last = w->nr_out ? &w->out[w->nr_out - 1] : NULL;
	uint64_t ts = e->mono_ns, seq = last ? last->seq + 1 : 0;
	size_t mlen = strnlen(e->message, sizeof(e->message));
	bool stack = rec->stack_def_id && rec->stack_ref_id && e->depth;
	uint8_t *b, *p, *def = NULL;
	size_t len;

	if (last && ts < last->ts_end)
		ts = last->ts_end;
	if (mlen > UINT16_MAX)
		mlen = UINT16_MAX;
	len = HDR_SIZE + 12 + 4 + 4 + 8 + 4 + 4 + 16 + 2 + mlen;
	if (stack)
		len += 4 + 4 + 8 * e->depth + 4 + 8;
	b = calloc(1, len);
	if (!b)
		die("%s", strerror(ENOMEM));
	rt_put_le(b + PH(magic), RINGTRACE_CTF_MAGIC, 4);
	memcpy(b + PH(uuid), rec->img.h.trace_uuid, 16);
	rt_put_le(b + PH(stream_id), RINGTRACE_STREAM_ID, 4);
	rt_put_le(b + PH(stream_instance_id), w->acct->cpu, 8);
	rt_put_le(b + PH(timestamp_begin), ts, 8);
	rt_put_le(b + PH(cpu_id), w->acct->cpu, 4);
	p = b + HDR_SIZE;
	/* The extended header: its id, then the whole timestamp. */
	p = put(p, RINGTRACE_EVENT_ID_EXTENDED | (uint64_t)rec->panic_ev->id << 5, 4);
	p = put(p, ts, 8);
	p = put(p, e->reason, 4);
	p = put(p, e->cpu, 4);
	p = put(p, e->ip, 8);
	p = put(p, (uint32_t)e->tid, 4);
	p = put(p, (uint32_t)e->pid, 4);
	memcpy(p, e->comm, 16);
	p += 16;
	p = put(p, mlen, 2);
	memcpy(p, e->message, mlen);
	p += mlen;
	if (stack) {
		/* Compact headers: the id, the timestamp's low 27 bits. */
		def = p;
		p = put(p, rec->stack_def_id | (ts & ((1U << 27) - 1)) << 5, 4);
		p = put(p, 0, 1);	/* kind: kernel */
		p = put(p, 0, 1);	/* flags */
		p = put(p, e->depth, 2);
		for (uint32_t i = 0; i < e->depth; i++)
			p = put(p, e->ips[i], 8);
		/* Untimed: its 27 bits repeat its id. */
		p = put(p, rec->stack_ref_id | (uint64_t)rec->stack_ref_id << 5, 4);
		p = put(p, def - b, 4);
		p = put(p, 0, 4);
	}
	add_out(w, b, len, seq, ts, stack ? 3 : 1, false, 0);
	free(b);
	w->acct->panics++;
}

/* The CPU's stream, cpuC-000000.zst: one stored frame a packet. */
static void write_stream(struct cpu_work *w)
{
	struct recovery *rec = w->rec;
	char name[CHUNK_NAME_MAX];
	struct chunk_stored_hdrs hdrs;
	struct iovec *iov;
	unsigned int cnt;
	int fd;

	if (!w->nr_out)
		return;
	chunk_name(name, sizeof(name), w->acct->cpu, 0);
	fd = openat(rec->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
		    O_NOFOLLOW, 0640);
	if (fd < 0)
		die("%s/%s: %s", rec->dir, name, strerror(errno));
	for (size_t i = 0; i < w->nr_out; i++) {
		struct out_packet *o = &w->out[i];
		uint64_t want = chunk_stored_size(o->len);
		ssize_t n;

		rt_put_le(o->bytes + PH(events_discarded), o->discarded, 8);
		cnt = chunk_stored_iovcnt(o->len);
		iov = calloc(cnt, sizeof(*iov));
		hdrs.blocks = calloc(cnt, 3);
		if (!iov || !hdrs.blocks)
			die("%s", strerror(ENOMEM));
		cnt = chunk_stored_iov(iov, &hdrs, o->bytes, o->len);
		n = writev(fd, iov, cnt);
		if (n < 0 || (uint64_t)n != want)
			die("%s/%s: %s", rec->dir, name, n < 0 ? strerror(errno) :
			    "short write");
		free(iov);
		free(hdrs.blocks);
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		die("%s/%s: %s", rec->dir, name, strerror(errno));
}

static void recover_cpu(struct recovery *rec, const struct persist_slice *s,
			struct cpu_account *a)
{
	struct cpu_work w = { .rec = rec, .slice = s, .acct = a,
			      .clock_freq = rec->md->clock_freq };
	struct persist_packet *pk;
	size_t n, stale;

	a->cpu = s->cpu;
	if (persist_packets(&rec->img, s, &pk, &n, &stale))
		die("%s", strerror(ENOMEM));
	for (size_t i = 0; i < n; i++) {
		if (pk[i].stale) {
			/* Saved as damage is, counted apart. */
			slot_damaged(&w, &pk[i], "slot %u's counters put it outside the span of packets the ring holds (damaged counters)",
				     pk[i].slot);
			a->damaged_packets--;
			a->stale_packets++;
			continue;
		}
		/* A record takes 4 bytes at least. */
		if (pk[i].records > (rec->img.h.subbuf_size - HDR_SIZE) / 4)
			slot_damaged(&w, &pk[i], "the slot's counters say %" PRIu64 " records: more than a sub-buffer holds",
				     pk[i].records);
		else if (pk[i].complete)
			complete_packet(&w, &pk[i]);
		else if (i + 1 == n || pk[i + 1].stale)
			open_packet(&w, &pk[i]);
		else
			slot_damaged(&w, &pk[i], "slot %u is open (commit %" PRIu64 " bytes into it), but packet %" PRIu64 " came after it",
				pk[i].slot, pk[i].committed, pk[i + 1].seq);
	}
	judge_neighbours(&w);
	/* A shutdown is not a crash: its entry stays in the json alone. */
	for (unsigned int i = 0; rec->panic_ev && i < rec->nr_crash; i++)
		if (rec->crash_state[i] == 1 && rec->crash[i].cpu == s->cpu &&
		    (rec->crash[i].reason == RINGTRACE_PERSIST_PANIC ||
		     rec->crash[i].reason == RINGTRACE_PERSIST_EMERG_RESTART))
			append_panic(&w, &rec->crash[i]);
	cumulate(&w);
	a->snapshot = persist_snap(&rec->img, s->index, &a->snap);
	write_stream(&w);
	for (size_t i = 0; i < w.nr_out; i++)
		free(w.out[i].bytes);
	free(w.out);
	free(pk);
}

/* ---- how the previous boot ended -------------------------------------- */

/*
 * The entry that ended the previous boot: the first whole terminal one
 * (panic; emergency restart, which a panic's own restart never writes;
 * shutdown), or NULL when no terminal hook ran.
 */
static const struct ringtrace_persist_crash *ending(const struct recovery *rec)
{
	for (unsigned int i = 0; i < rec->nr_crash; i++)
		if (rec->crash_state[i] == 1 &&
		    rec->crash[i].reason != RINGTRACE_PERSIST_OOPS)
			return &rec->crash[i];
	return NULL;
}

/* The first whole oops entry, or NULL. */
static const struct ringtrace_persist_crash *first_oops(const struct recovery *rec)
{
	for (unsigned int i = 0; i < rec->nr_crash; i++)
		if (rec->crash_state[i] == 1 &&
		    rec->crash[i].reason == RINGTRACE_PERSIST_OOPS)
			return &rec->crash[i];
	return NULL;
}

/*
 * One line: whether the previous boot (or load) crashed, and how it ended.
 * A reboot or power off through the kernel's own path is not a crash;
 * neither is an unload.  No terminal hook in a boot the module was live
 * at: the kernel's paths were not taken (a reset, a hang, power lost).
 */
static void report_ending(const struct recovery *rec)
{
	const struct ringtrace_persist_crash *e = ending(rec), *o = first_oops(rec);
	char oops[sizeof(o->message) + 64] = "";

	if (o)
		snprintf(oops, sizeof(oops), "an oops on cpu %u (\"%.*s\"), then ",
			 o->cpu, (int)strnlen(o->message, sizeof(o->message)), o->message);
	if (e && e->reason == RINGTRACE_PERSIST_PANIC)
		report("the previous boot crashed: %spanic on cpu %u: \"%.*s\"", oops,
		       e->cpu, (int)strnlen(e->message, sizeof(e->message)), e->message);
	else if (e && e->reason == RINGTRACE_PERSIST_EMERG_RESTART)
		report("the previous boot ended in %san emergency restart (cpu %u: sysrq b, or a watchdog), not a clean reboot",
		       oops, e->cpu);
	else if (e && o)
		report("the previous boot ended in %sa reboot or power off (cpu %u)", oops, e->cpu);
	else if (e)
		report("the previous boot ended in a reboot or power off (cpu %u), not a crash: no kernel_panic",
		       e->cpu);
	else if (rec->img.lifecycle == RINGTRACE_PERSIST_UNLOADED && o)
		report("the previous load ended in %sthe module unloaded", oops);
	else if (rec->img.lifecycle == RINGTRACE_PERSIST_UNLOADED)
		report("the previous load ended with the module unloaded, not a crash");
	else if (o)
		report("the previous boot ended in %sno hook: no panic or reboot the module saw (a reset, a hang, power lost)",
		       oops);
	else
		report("no crash hook ran: the previous boot ended without a panic or a reboot the module saw (a reset, a hang, power lost)");
}

/* "crashed" in the json: true, false, or null (no hook ran: unknown). */
static const char *crashed(const struct recovery *rec)
{
	const struct ringtrace_persist_crash *e = ending(rec);

	if (first_oops(rec) || (e && e->reason != RINGTRACE_PERSIST_SHUTDOWN))
		return "true";
	if (e || rec->img.lifecycle == RINGTRACE_PERSIST_UNLOADED)
		return "false";
	return "null";
}

/* ---- .ringtrace-crash.json ------------------------------------------------ */

static const char *lifecycle_name(uint32_t l)
{
	return l == RINGTRACE_PERSIST_LIVE ? "live" :
	       l == RINGTRACE_PERSIST_UNLOADED ? "unloaded" : "empty";
}

static const char *reason_name(uint32_t r)
{
	return r == RINGTRACE_PERSIST_PANIC ? "panic" :
	       r == RINGTRACE_PERSIST_OOPS ? "oops" :
	       r == RINGTRACE_PERSIST_EMERG_RESTART ? "emerg_restart" :
	       r == RINGTRACE_PERSIST_SHUTDOWN ? "shutdown" : "unknown";
}

static void write_json(struct recovery *rec)
{
	const struct ringtrace_persist_header *h = &rec->img.h;
	char bid[2 * RINGTRACE_PERSIST_BUILD_ID_MAX + 1], boot[40], uuid[40];
	const char *host = rt_metadata_env(rec->md, "hostname");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		die("%s", strerror(errno));
	persist_build_id_hex(&rec->img, bid, sizeof(bid));
	uuid_text(h->boot_id, boot, sizeof(boot));
	uuid_text(h->trace_uuid, uuid, sizeof(uuid));
	fprintf(f, "{\"format\": \"ringtrace-previous-boot\", \"format_version\": 1,\n"
		" \"previous_boot\": {\"boot_id\": \"%s\", \"release\": ", boot);
	json_str(f, h->release);
	fputs(", \"version\": ", f);
	json_str(f, h->version);
	fprintf(f, ", \"build_id\": \"%s\", \"host\": ", bid);
	json_str(f, host ? host : "");
	fprintf(f, ", \"trace_uuid\": \"%s\", \"armed_realtime_ns\": %" PRIu64
		", \"lifecycle\": \"%s\", \"region\": {\"base\": %" PRIu64
		", \"size\": %" PRIu64 ", \"source\": \"%s\"}},\n",
		uuid, (uint64_t)h->armed_realtime_ns, lifecycle_name(rec->img.lifecycle),
		(uint64_t)h->region_base, (uint64_t)h->region_size,
		h->source == RINGTRACE_PERSIST_SRC_MEMMAP ? "memmap" : "reserve_mem");
	/* The crash path's entries, whole ones only, and per-CPU snapshots. */
	fprintf(f, " \"ksyms\": %s, \"crashed\": %s, \"ended\": \"%s\", \"hooks_run\": %u, \"entries\": [",
		rec->ksyms ? "true" : "false", crashed(rec),
		ending(rec) ? reason_name(ending(rec)->reason) :
		rec->img.lifecycle == RINGTRACE_PERSIST_UNLOADED ? "unloaded" : "unknown",
		rec->crash_claimed);
	for (unsigned int i = 0, n = 0; i < rec->nr_crash; i++) {
		const struct ringtrace_persist_crash *e = &rec->crash[i];

		if (rec->crash_state[i] != 1)
			continue;
		fprintf(f, "%s\n  {\"reason\": \"%s\", \"cpu\": %u, \"time_ns\": %" PRIu64
			", \"context\": \"%s\", \"ip\": \"%#" PRIx64 "\", \"tid\": %d, \"pid\": %d, \"comm\": ",
			n++ ? "," : "", reason_name(e->reason), e->cpu, (uint64_t)e->mono_ns,
			e->flags & RINGTRACE_PERSIST_CRASH_NMI ? "nmi" :
			e->flags & RINGTRACE_PERSIST_CRASH_IRQ ? "irq" : "task",
			(uint64_t)e->ip, e->tid, e->pid);
		json_str(f, e->comm);
		fputs(", \"message\": ", f);
		json_str(f, e->message);
		/* An oops the crash path also wrote into its CPU's ring. */
		fprintf(f, ", \"written_live\": %s",
			e->flags & RINGTRACE_PERSIST_CRASH_LIVE ? "true" : "false");
		fputs(", \"stack\": [", f);
		for (uint32_t j = 0; j < e->depth; j++)
			fprintf(f, "%s\"%#" PRIx64 "\"", j ? ", " : "", (uint64_t)e->ips[j]);
		fputs("]}", f);
	}
	fputs("],\n \"cpus\": [", f);
	for (unsigned int i = 0; i < rec->nr_acct; i++) {
		const struct cpu_account *a = &rec->acct[i];

		fprintf(f, "%s\n  {\"cpu\": %u, \"packets\": %" PRIu64 ", \"events\": %" PRIu64
			", \"in_flight_dropped\": %" PRIu64 ", \"partial_packets\": %" PRIu64
			", \"damaged_packets\": %" PRIu64 ", \"stale_packets\": %" PRIu64
			", \"taken_by_consumer\": %" PRIu64 ", \"kernel_panic\": %u",
			i ? "," : "", a->cpu, a->packets, a->events,
			a->in_flight_dropped, a->partial_packets, a->damaged_packets,
			a->stale_packets, a->taken, a->panics);
		if (a->snapshot)
			fprintf(f, ", \"snapshot\": {\"reserved\": %" PRIu64 ", \"nesting\": %" PRIu64
				", \"consumed\": %" PRIu64 ", \"lost\": %" PRIu64 "}}",
				(uint64_t)a->snap.offset, (uint64_t)a->snap.nesting,
				(uint64_t)a->snap.consumed,
				(uint64_t)(a->snap.lost_full + a->snap.lost_held +
					   a->snap.lost_nested + a->snap.lost_too_big +
					   a->snap.lost_overrun));
		else
			fputs(", \"snapshot\": null}", f);
	}
	fputs("]}\n", f);
	if (fclose(f))
		die("%s", strerror(errno));
	r = write_file(rec->dirfd, CRASH_JSON, text, len);
	free(text);
	if (r)
		die("%s/%s: %s", rec->dir, CRASH_JSON, strerror(-r));
}

/* ---- the loop -------------------------------------------------------------- */

/* The directory's default name: when the image was armed, and what it is. */
static void default_output(const struct persist_image *img, char *buf, size_t size)
{
	const char *base = opt.root ? opt.root : msg_service ? SERVICE_DIR : ".";
	const char *prefix = opt.root || msg_service ? "" : "ringtrace-";
	time_t t = img->h.armed_realtime_ns / 1000000000;
	char stamp[32];
	struct tm tm;

	if (strcmp(base, ".") && mkdir(base, 0750) < 0 && errno != EEXIST)
		die("%s: %s", base, strerror(errno));
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (unsigned int i = 0; i < 1000; i++) {
		if (i)
			snprintf(buf, size, "%s/%s%s-previous-boot.%u", base, prefix, stamp, i);
		else
			snprintf(buf, size, "%s/%s%s-previous-boot", base, prefix, stamp);
		if (access(buf, F_OK) < 0 && errno == ENOENT)
			return;
	}
	die("%s: 1000 previous-boot traces of that time already", buf);
}

/* persist/release with the image's uuid: 0, or 1 when it stays (said). */
static int release(struct ctl *c, const struct persist_image *img, const char *saved)
{
	char uuid[40];
	int err;

	uuid_text(img->h.trace_uuid, uuid, sizeof(uuid));
	err = ctl_write(c, "persist/release", uuid);
	if (!err)
		return 0;
	if (err == -EBUSY && saved)
		error_line("previous trace saved in %s; the region still holds it: stop tracing (and close its buffers), then ringtrace recover --discard",
			   saved);
	else
		error_line("%s/persist/release: %s", c->dir, strerror(-err));
	return 1;
}

/* Whether any slot of any CPU's slice was ever written to. */
static bool written(const struct persist_image *img)
{
	struct persist_slice s;
	char why[256];

	for (unsigned int i = 0; i < img->h.nr_slices; i++) {
		if (persist_slice(img, i, &s, why, sizeof(why)) || !s.used)
			continue;
		for (uint32_t j = 0; j < img->h.num_subbufs; j++)
			if (rt_get_le(s.counters + 16 * j, 8))
				return true;
	}
	return false;
}

int prevboot_main(void)
{
	struct recovery rec = { .dirfd = -1, .damagedfd = -1 };
	static char outpath[PATH_MAX];
	struct ctl c;
	uint8_t *buf = NULL;
	uint64_t size = 0;
	char why[512];
	unsigned int i;
	enum persist_kind kind;
	int ret = 0;

	if (!load_image(&c, &buf, &size)) {
		report("no previous trace");
		return 0;
	}
	kind = persist_check(buf, size, &rec.img, why, sizeof(why));
	if (kind == PERSIST_NONE) {
		report("no previous trace");
		free(buf);
		return 0;
	}
	/* Its uuid is all a release needs, whatever else is wrong. */
	if (opt.discard) {
		ret = release(&c, &rec.img, NULL);
		if (!ret)
			report("previous trace discarded: the region is released");
		free(buf);
		return ret;
	}
	if (kind == PERSIST_OTHER_LAYOUT)
		die("the image's header is of another layout (%s): this ringtraced cannot read it; ringtrace recover --discard releases it",
		    why);
	if (kind == PERSIST_DAMAGED)
		die("the image's header is damaged (%s): nothing of it can be trusted; ringtrace recover --discard releases it",
		    why);
	check_identity(&rec.img);
	/* Everything that refuses the image is checked before anything is written. */
	for (i = 0; i < rec.img.h.nr_slices; i++) {
		struct persist_slice s, t;

		if (persist_slice(&rec.img, i, &s, why, sizeof(why)))
			die("the image's slice table is damaged (%s)", why);
		for (unsigned int j = 0; s.used && j < i; j++)
			if (!persist_slice(&rec.img, j, &t, why, sizeof(why)) &&
			    t.used && t.cpu == s.cpu)
				die("the image's slice table is damaged (slices %u and %u are both cpu %u's)",
				    j, i, s.cpu);
	}
	if (!written(&rec.img)) {
		report("no previous trace: the region was armed, and nothing was written into it");
		ret = opt.image || opt.keep ? 0 : release(&c, &rec.img, NULL);
		free(buf);
		return ret;
	}
	check_metadata(&rec);
	check_ksyms(&rec);
	check_crash(&rec);

	if (!opt.output) {
		default_output(&rec.img, outpath, sizeof(outpath));
		opt.output = outpath;
	}
	outdir_create();
	rec.dir = outdir;
	rec.dirfd = outdirfd;
	write_metadata_ksyms(&rec);
	rec.acct = calloc(rec.img.h.nr_slices, sizeof(*rec.acct));
	if (!rec.acct)
		die("%s", strerror(ENOMEM));
	for (i = 0; i < rec.img.h.nr_slices; i++) {
		struct persist_slice s;
		struct cpu_account *a = &rec.acct[rec.nr_acct];

		persist_slice(&rec.img, i, &s, why, sizeof(why));
		if (!s.used)
			continue;
		recover_cpu(&rec, &s, a);
		rec.nr_acct++;
		info("cpu%u: %" PRIu64 " packets, %" PRIu64 " events; dropped in flight %" PRIu64
		     ", partial packets %" PRIu64 ", damaged %" PRIu64,
		     a->cpu, a->packets, a->events, a->in_flight_dropped,
		     a->partial_packets, a->damaged_packets + a->stale_packets);
	}
	write_json(&rec);
	for (i = 0; i < rec.nr_acct && !rec.acct[i].packets; i++)
		;
	if (i == rec.nr_acct)
		warn("no packet of the previous trace could be kept: %s holds no stream, only what was damaged",
		     outdir);
	if (rec.damagedfd >= 0 && (fsync(rec.damagedfd) < 0 || close(rec.damagedfd) < 0))
		die("%s/%s: %s", outdir, DAMAGED_DIR, strerror(errno));
	if (fsync(outdirfd) < 0)
		die("%s: %s", outdir, strerror(errno));
	report_ending(&rec);
	report("previous trace in %s: ringtrace report --tail 20 %s", outdir, outdir);
	if (!opt.image && !opt.keep)
		ret = release(&c, &rec.img, outdir);
	rt_metadata_free(rec.md);
	free(rec.acct);
	free(buf);
	if (ret)
		return ret;
	return rec.damage ? EXIT_DAMAGED : 0;
}
