// SPDX-License-Identifier: GPL-2.0
/*
 * Following a trace directory while ringtraced writes it (report --follow,
 * record --live): every CPU's items merged by time, as they reach the disk.
 *
 * What is on disk, and when (daemon/chunks.c, packer.c, metadata.c):
 *
 *   - each CPU writes cpuN-SEQ.zst, one stored zstd frame per packet,
 *     appended with one writev(); a packet reaches the file when its
 *     sub-buffer fills, or at ringtraced's flush tick (-f MS), which closes
 *     the open packets of busy CPUs (an idle CPU gets no packet);
 *   - chunk SEQ+1 is created only after chunk SEQ of that CPU is closed:
 *     once a later chunk is listed, the earlier one is final;
 *   - a closed chunk is packed: compressed into a hidden file that is
 *     renamed over it.  Its packets are the same, byte for byte;
 *   - the metadata is replaced (rename) before the first packet that
 *     holds a newly registered event is written, and only ever grows.
 *
 * So each CPU is read by position: the follower keeps the chunk it reads
 * open, and takes a stored frame once all of it is in the file (a torn
 * frame at the end is a write in flight: waited for, not damage).  The
 * open descriptor is what makes a rename to the packed file harmless:
 * the stored file it reads stays whole until it is closed, so nothing is
 * lost or read twice.  A chunk first opened after it was packed (the
 * follower fell behind a fast rotation) is decompressed whole: it is
 * complete by then.  With --on-chunk a closed chunk moves on: into the
 * set being assembled (.chunk-SEQ.tmp/), then with it to chunk-SEQ/; it
 * is looked for there too, in that order (list_chunks(), open_chunk()).
 * A chunk removed before it was opened (--max-files, a hand-off hook that
 * moved its set away) is said on stderr and skipped.
 *
 * Nothing of a frame is handed to the stream before all of it was read
 * and checked: a packed frame is decoded whole into memory, and libzstd
 * verifies its content checksum at its end, before any byte of it is
 * pending; a stored frame (one packet, no checksum) is taken once all of
 * it is in the file and its raw blocks decode to the size its header
 * says.  A frame that does not (damage) costs that frame alone: it is
 * described and counted like report's damage (follow_damage_report(),
 * exit status 3), and reading goes on at the next frame's header after
 * its start.  What a frame may decode to is bounded (FRAME_MAX, looked
 * at in its header before libzstd allocates for it), and so is what a
 * CPU holds read but not yet decoded (READ_AHEAD plus one frame): no file
 * makes a follower allocate without limit.
 *
 * The metadata is looked at after the chunks were read and before their
 * packets are decoded: a packet read before the look has its events
 * declared in what the look finds.
 *
 * Order: an item is handed out when every CPU has a later item read
 * (the merge is then exact), or when it is older than --hold (the
 * trace clock is CLOCK_MONOTONIC: now minus the item's time).  The hold
 * stands for the flush interval plus a margin: a CPU that has written
 * nothing for that long is idle, or its events are still in its open
 * packet; waiting on it for ever would stop the view.  An item that
 * comes later than an item of another CPU already handed out is handed
 * out anyway (never dropped) and counted (follow_late()).
 *
 * Polling, not inotify: data reaches the files in writev() bursts at
 * every sub-buffer, thousands a second under load, and at every flush
 * tick when idle; the hold needs a timer anyway.  A look every
 * FOLLOW_TICK_MS costs one readdir, one fstat per CPU and one stat of the
 * metadata, and adds at most that much to the delay.  While a look finds
 * new data the next comes at once.
 *
 * SIGINT and SIGTERM (blocked, read through a signalfd) stop it: what
 * was read is handed out in order, then NULL.  SIGTERM first looks until
 * a look finds nothing new: record --live sends it once ringtraced has
 * exited, so its view ends with the last event of the trace.  SIGINT (a
 * person's Ctrl-C, on a trace that may grow faster than it prints) does
 * not look again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_getFrameHeader() */
#include <zstd.h>

#include <linux/ringtrace.h>
#include "../../lib/chunk.h"
#include "cli.h"

#define FOLLOW_TICK_MS	50
/*
 * A frame holds at most CHUNK_PACK_FRAME_BYTES of packets plus the
 * packet that crosses that mark (lib/chunk.c); a stored frame one packet.
 */
#define FRAME_MAX	((size_t)CHUNK_PACK_FRAME_BYTES + RINGTRACE_MAX_SUBBUF_SIZE)
/* A CPU reads no further ahead of its stream than this, and one frame. */
#define READ_AHEAD	((size_t)CHUNK_PACK_FRAME_BYTES)
#define IN_SIZE		(128 * 1024)

static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
/* A stored frame's magic and descriptor (lib/chunk.c). */
static const uint8_t stored_magic[5] = { 0x28, 0xb5, 0x2f, 0xfd, 0xa0 };

struct fcpu {
	unsigned int cpu;
	struct rt_stream *stream;
	bool dry;			/* its stream has nothing more now */
	bool unlooked;			/* dry, and not looked at since */
	struct rt_item item;		/* the head, in the heap, when !dry */

	unsigned int seq;		/* the chunk read */
	bool done;			/* all of chunk seq was read */
	int fd;				/* on chunk seq, -1: not open yet */
	bool stored;			/* fd is a stored chunk, else packed */
	uint64_t pos;			/* file offset of the next frame */
	uint64_t scan;			/* stored, after damage: look from here */
	uint64_t out_off;		/* packet bytes of chunk seq read */
	bool has_next;			/* the listing has a later chunk ... */
	unsigned int next;		/* ... this one, the first after seq */
	unsigned int lo, hi;		/* a new CPU's listed chunks */

	uint8_t *pend;			/* read, not fed yet */
	size_t pend_len, pend_cap;
	uint64_t pend_off;
	char pend_file[CHUNK_NAME_MAX];
};

struct follow {
	char *dir;
	int dirfd, sigfd;
	bool from_start;		/* a CPU found is read from its first chunk */
	bool strict;
	uint64_t hold;			/* clock cycles */

	struct rt_metadata *md;
	struct rt_metadata **old_md;	/* items may still point into them */
	unsigned int nr_old_md;
	struct stat md_st;

	struct fcpu **cpus;		/* by cpu number, NULL: none */
	unsigned int nr_cpus, nr_known;
	struct rt_item_heap heap;	/* the items of the CPUs not dry */
	bool primed;
	struct rt_item cur;
	uint64_t last_ts;		/* of the item handed out last */
	uint64_t late;

	bool found;			/* the last look found something */
	unsigned int unlooked;		/* CPUs gone dry since the last look */
	bool stopping;			/* a stop signal came */
	bool interrupted;		/* SIGINT: no more looks */
	bool failed;
	struct rt_error err;
	ZSTD_DCtx *dctx;
	uint8_t *frame;			/* a frame as it is in the file */
	size_t frame_cap;
	uint8_t *out;			/* a packed frame, decoded */
	size_t out_len, out_cap;
	uint8_t *in;			/* IN_SIZE bytes of a packed chunk */
	/* Damaged places read past: the first RT_MSGS_KEPT said, all counted. */
	char *damage[RT_MSGS_KEPT];
	unsigned int nr_damage;
};

/* ---- time ---------------------------------------------------------------------- */

/* The trace clock now: CLOCK_MONOTONIC in the metadata's cycles. */
static uint64_t now_cycles(const struct rt_metadata *md)
{
	struct timespec ts;
	unsigned __int128 ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (unsigned __int128)ts.tv_sec * 1000000000u + (unsigned long)ts.tv_nsec;
	return (uint64_t)(ns * md->clock_freq / 1000000000u);
}

/* The CPU's next item (packets skipped): true with c->item, false dry. */
static bool advance(struct follow *f, struct fcpu *c)
{
	int r;

	do {
		r = rt_stream_next(c->stream, &c->item, &f->err);
		if (r < 0)
			f->failed = true;
	} while (r > 0 && c->item.type == RT_ITEM_PACKET);
	if (r <= 0 && !c->dry) {
		c->unlooked = true;
		f->unlooked++;
	}
	c->dry = r <= 0;
	return r > 0;
}

/* ---- damage ---------------------------------------------------------------------- */

/* A damaged place read past; with --strict, the error that ends the view. */
__attribute__((format(printf, 2, 3)))
static void damaged(struct follow *f, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
	if (f->strict && !f->failed) {
		snprintf(f->err.msg, sizeof(f->err.msg), "%s", m);
		f->failed = true;
	}
	if (f->nr_damage < RT_MSGS_KEPT)
		f->damage[f->nr_damage] = m;
	else
		free(m);
	f->nr_damage++;
}

/*
 * The first place at or after @from where @sig (@len bytes) starts in
 * @fd's first @size bytes; @size if none.  Read a piece at a time.
 */
static uint64_t find_sig(struct follow *f, int fd, uint64_t from, uint64_t size,
			 const uint8_t *sig, size_t len)
{
	while (from + len <= size) {
		size_t want = size - from < IN_SIZE ? (size_t)(size - from) : IN_SIZE;
		const uint8_t *hit;

		if (rt_pread_full(fd, f->in, want, from))
			return size;
		hit = memmem(f->in, want, sig, len);
		if (hit)
			return from + (uint64_t)(hit - f->in);
		/* The signature may straddle two pieces. */
		from += want - (len - 1);
	}
	return size;
}

/* ---- the CPUs and their chunks ------------------------------------------------------ */

static struct fcpu *cpu_get(struct follow *f, unsigned int cpu, bool *created)
{
	struct fcpu *c;

	*created = false;
	if (cpu < f->nr_cpus && f->cpus[cpu])
		return f->cpus[cpu];
	if (cpu >= f->nr_cpus) {
		struct fcpu **v = realloc(f->cpus, (cpu + 1) * sizeof(*v));

		if (!v)
			die("out of memory");
		memset(v + f->nr_cpus, 0, (cpu + 1 - f->nr_cpus) * sizeof(*v));
		f->cpus = v;
		f->nr_cpus = cpu + 1;
		if (rt_item_heap_reserve(&f->heap, f->nr_cpus))
			die("out of memory");
	}
	c = calloc(1, sizeof(*c));
	if (!c || rt_stream_open_fed(&c->stream, f->md, (int)cpu, &f->err))
		die("out of memory");
	rt_stream_set_tolerant(c->stream, !f->strict);
	c->cpu = cpu;
	c->fd = -1;
	c->dry = true;
	f->cpus[cpu] = c;
	f->nr_known++;
	*created = true;
	return c;
}

/* A chunk found by a listing. */
struct found {
	unsigned int cpu, seq;
};

struct listing {
	struct found *v;
	size_t n, cap;
};

static void found_add(struct listing *l, unsigned int cpu, unsigned int seq)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct found *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			die("out of memory");
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct found){ cpu, seq };
}

/*
 * "chunk-NNNNNN" (an assembled set) or ".chunk-NNNNNN.tmp" (one being
 * assembled): true with its sequence number.
 */
static bool set_dir_name(const char *name, unsigned int *seq)
{
	const char *p = name + (name[0] == '.');
	unsigned long long v = 0;

	if (strncmp(p, "chunk-", 6) || p[6] < '0' || p[6] > '9')
		return false;
	for (p += 6; *p >= '0' && *p <= '9'; p++)
		if ((v = v * 10 + (unsigned int)(*p - '0')) > UINT_MAX)
			return false;
	if (strcmp(p, name[0] == '.' ? ".tmp" : ""))
		return false;
	*seq = (unsigned int)v;
	return true;
}

/* The chunks of set directory @name (sequence @seq) into @l. */
static void list_set(struct follow *f, const char *name, unsigned int seq,
		     struct listing *l)
{
	int fd = openat(f->dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *d;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;		/* gone meanwhile: a hook took it */
	}
	while ((d = readdir(dir))) {
		unsigned int cpu, s;

		if (chunk_parse_name(d->d_name, &cpu, &s) && s == seq && cpu < RT_MAX_CPUS)
			found_add(l, cpu, s);
	}
	closedir(dir);
}

/*
 * Lists the chunks: new CPUs (starting at their first chunk with
 * from_start, else at their newest), and for every CPU the first chunk
 * after the one it reads.  With --on-chunk, ringtraced moves each CPU's
 * chunk k into .chunk-k.tmp/, then renames that to chunk-k/: chunks are
 * looked for there too, in the sets no older than the chunk of the CPU
 * furthest behind (a CPU first seen later starts at what is listed).
 */
static void list_chunks(struct follow *f)
{
	struct listing l = { 0 };
	unsigned int floor = UINT_MAX;
	bool fresh = false, created;
	struct dirent *d;
	DIR *dir;

	for (unsigned int i = 0; i < f->nr_cpus; i++)
		if (f->cpus[i]) {
			f->cpus[i]->has_next = false;
			if (f->cpus[i]->fd != -2 && f->cpus[i]->seq < floor)
				floor = f->cpus[i]->seq;
		}
	if (!f->nr_known)
		floor = 0;
	dir = fdopendir(dup(f->dirfd));
	if (!dir) {
		warn("%s: %s", f->dir, strerror(errno));
		return;
	}
	/* The offset is dirfd's, where the last listing left it. */
	rewinddir(dir);
	while ((d = readdir(dir))) {
		unsigned int cpu, seq;

		if (chunk_parse_name(d->d_name, &cpu, &seq) && cpu < RT_MAX_CPUS)
			found_add(&l, cpu, seq);
		else if (set_dir_name(d->d_name, &seq) && seq >= floor)
			list_set(f, d->d_name, seq, &l);
	}
	closedir(dir);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < l.n; k++) {
			unsigned int cpu = l.v[k].cpu, seq = l.v[k].seq;
			struct fcpu *c;

			if (pass == 0) {
				c = cpu_get(f, cpu, &created);
				if (created) {
					c->lo = c->hi = seq;
					c->fd = -2;	/* start chosen below */
					fresh = true;
				} else if (c->fd == -2) {
					c->lo = seq < c->lo ? seq : c->lo;
					c->hi = seq > c->hi ? seq : c->hi;
				}
				continue;
			}
			c = f->cpus[cpu];
			if (seq > c->seq && (!c->has_next || seq < c->next)) {
				c->has_next = true;
				c->next = seq;
			}
		}
		if (pass == 0 && fresh)
			for (unsigned int i = 0; i < f->nr_cpus; i++) {
				struct fcpu *c = f->cpus[i];

				if (c && c->fd == -2) {
					c->seq = f->from_start ? c->lo : c->hi;
					c->fd = -1;
				}
			}
	}
	free(l.v);
}

/*
 * Opens chunk @seq of CPU @cpu wherever ringtraced has it: in the
 * directory, in its set being assembled, in its set -- the order a chunk
 * moves in, so that no rename between two tries hides it.  A hook may
 * still have taken its set away: then it is gone (ENOENT).
 */
static int open_chunk(struct follow *f, unsigned int cpu, unsigned int seq)
{
	char name[CHUNK_NAME_MAX], path[CHUNK_NAME_MAX + 32];
	int fd;

	chunk_name(name, sizeof(name), cpu, seq);
	fd = openat(f->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	snprintf(path, sizeof(path), ".chunk-%06u.tmp/%s", seq, name);
	fd = openat(f->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || (errno != ENOENT && errno != ENOTDIR))
		return fd;
	snprintf(path, sizeof(path), "chunk-%06u/%s", seq, name);
	fd = openat(f->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOTDIR)
		errno = ENOENT;
	return fd;
}

/*
 * Room for @n more bytes of chunk c->seq, read at c->out_off, for the
 * stream; pend_commit() keeps them.  What is pending comes from one chunk.
 */
static uint8_t *pend_room(struct fcpu *c, size_t n)
{
	if (!c->pend_len) {
		chunk_name(c->pend_file, sizeof(c->pend_file), c->cpu, c->seq);
		c->pend_off = c->out_off;
	}
	if (c->pend_len + n > c->pend_cap) {
		size_t cap = c->pend_cap ? c->pend_cap : 65536;

		while (cap < c->pend_len + n)
			cap *= 2;
		c->pend = realloc(c->pend, cap);
		if (!c->pend)
			die("out of memory");
		c->pend_cap = cap;
	}
	return c->pend + c->pend_len;
}

static void pend_commit(struct fcpu *c, size_t n)
{
	c->pend_len += n;
	c->out_off += n;
}

/*
 * After the damaged stored frame at c->pos: on at the next stored frame
 * header after it (true), or, in a chunk still open, wait for more of it
 * (false: c->scan says where the look goes on).
 */
static bool resync_stored(struct follow *f, struct fcpu *c, uint64_t size,
			  bool closed)
{
	uint64_t to = find_sig(f, c->fd, c->scan, size, stored_magic,
			       sizeof(stored_magic));

	if (to == size && !closed) {
		/* A header may be on its way: look at its first bytes again. */
		c->scan = size > c->scan + sizeof(stored_magic) ?
			  size - (sizeof(stored_magic) - 1) : c->scan;
		return false;
	}
	c->pos = to;
	c->scan = 0;
	return true;
}

/*
 * The whole frames of the stored chunk past c->pos, until READ_AHEAD
 * bytes are pending.  A frame not all there is waited for while the
 * chunk is open; in a closed chunk it is what a killed writer left, said
 * and dropped -- unless a stored frame starts inside it: then its header
 * is damage.  A frame that is not a stored frame of one packet, or does
 * not decode to the size its header says, is damage: that frame is lost,
 * reading goes on at the next stored frame header.
 */
static void read_stored(struct follow *f, struct fcpu *c, bool closed)
{
	char name[CHUNK_NAME_MAX];
	const char *why;
	struct stat st;
	uint64_t size;

	chunk_name(name, sizeof(name), c->cpu, c->seq);
	if (fstat(c->fd, &st)) {
		warn("%s/%s: %s", f->dir, name, strerror(errno));
		c->done = closed;
		return;
	}
	size = (uint64_t)st.st_size;
	if (c->scan && !resync_stored(f, c, size, closed))
		return;
	while (c->pos < size && !f->failed) {
		uint8_t h[CHUNK_STORED_FRAME_HEADER];
		uint64_t fsize, left = size - c->pos;
		uint32_t content;
		size_t r;

		if (c->pend_len >= READ_AHEAD)
			return;		/* the rest at a later look */
		if (left < sizeof(h) || rt_pread_full(c->fd, h, sizeof(h), c->pos))
			goto torn;
		if (!chunk_stored_header(h, &content)) {
			why = "not a stored frame";
			goto bad;
		}
		if (content > RINGTRACE_MAX_SUBBUF_SIZE) {
			why = "declares a packet larger than any sub-buffer";
			goto bad;
		}
		fsize = chunk_stored_size(content);
		if (left < fsize)
			goto torn;
		if (fsize > f->frame_cap) {
			f->frame = realloc(f->frame, fsize);
			if (!f->frame)
				die("out of memory");
			f->frame_cap = fsize;
		}
		if (rt_pread_full(c->fd, f->frame, fsize, c->pos))
			goto torn;
		r = ZSTD_decompressDCtx(f->dctx, pend_room(c, content), content,
					f->frame, fsize);
		if (ZSTD_isError(r) || r != content) {
			why = "its blocks do not make the packet its header declares";
			goto bad;
		}
		pend_commit(c, content);
		c->pos += fsize;
		continue;
torn:
		if (!closed)
			return;		/* a write in flight */
		if (find_sig(f, c->fd, c->pos + 1, size, stored_magic,
			     sizeof(stored_magic)) == size) {
			warn("%s/%s: trailing partial frame at offset %" PRIu64 " dropped",
			     f->dir, name, c->pos);
			break;
		}
		why = "declares more than the chunk holds before the next frame";
bad:
		damaged(f, "%s/%s: the stored frame at offset %" PRIu64 " is damaged (%s): skipped to the next frame",
			f->dir, name, c->pos, why);
		c->scan = c->pos + 1;
		if (!resync_stored(f, c, size, closed))
			return;
	}
	c->pos = size;
	c->done = closed;
}

enum { FRAME_OK, FRAME_CUT, FRAME_BAD };

/*
 * The packed chunk's frame at c->pos, decoded whole into f->out, checked
 * by libzstd to its end (and its content checksum): FRAME_OK with c->pos
 * past it; FRAME_CUT when the file ends inside it; FRAME_BAD, @why saying
 * why.  A frame that declares or decodes to more than FRAME_MAX is bad
 * before anything is allocated for it.
 */
static int packed_frame(struct follow *f, struct fcpu *c, uint64_t size,
			char *why, size_t wsize)
{
	uint8_t h[ZSTD_FRAMEHEADERSIZE_MAX];
	size_t hlen = size - c->pos < sizeof(h) ? (size_t)(size - c->pos) : sizeof(h);
	ZSTD_inBuffer ib = { f->in, 0, 0 };
	uint64_t at = c->pos;
	ZSTD_frameHeader fh;
	size_t ret, r;

	if (rt_pread_full(c->fd, h, hlen, c->pos))
		return FRAME_CUT;
	r = ZSTD_getFrameHeader(&fh, h, hlen);
	if (r && !ZSTD_isError(r) && hlen < sizeof(h))
		return FRAME_CUT;
	if (r) {
		snprintf(why, wsize, "not a zstd frame");
		return FRAME_BAD;
	}
	if (fh.frameType == ZSTD_frame &&
	    ((fh.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN &&
	      fh.frameContentSize > FRAME_MAX) || fh.windowSize > FRAME_MAX)) {
		snprintf(why, wsize, "declares more than the %zu bytes a frame holds",
			 FRAME_MAX);
		return FRAME_BAD;
	}
	ZSTD_DCtx_reset(f->dctx, ZSTD_reset_session_only);
	f->out_len = 0;
	do {
		ZSTD_outBuffer ob;

		if (ib.pos == ib.size) {
			size_t want = size - at - ib.size < IN_SIZE ?
				      (size_t)(size - at - ib.size) : IN_SIZE;

			at += ib.size;
			if (!want || rt_pread_full(c->fd, f->in, want, at))
				return FRAME_CUT;
			ib = (ZSTD_inBuffer){ f->in, want, 0 };
		}
		if (f->out_len == f->out_cap) {
			size_t cap = f->out_cap ? 2 * f->out_cap : 256 * 1024;

			if (f->out_cap == FRAME_MAX + 1) {
				snprintf(why, wsize, "decodes to more than the %zu bytes a frame holds",
					 FRAME_MAX);
				return FRAME_BAD;
			}
			cap = cap > FRAME_MAX + 1 ? FRAME_MAX + 1 : cap;
			f->out = realloc(f->out, cap);
			if (!f->out)
				die("out of memory");
			f->out_cap = cap;
		}
		ob = (ZSTD_outBuffer){ f->out, f->out_cap, f->out_len };
		ret = ZSTD_decompressStream(f->dctx, &ob, &ib);
		f->out_len = ob.pos;
		if (ZSTD_isError(ret)) {
			snprintf(why, wsize, "%s", ZSTD_getErrorName(ret));
			return FRAME_BAD;
		}
	} while (ret);
	c->pos = at + ib.pos;
	return FRAME_OK;
}

/*
 * A chunk packed before it was opened (renamed whole: complete), frame by
 * frame from c->pos until READ_AHEAD bytes are pending.  A damaged frame
 * is said, counted and skipped to the next frame magic after its start.
 */
static void read_packed(struct follow *f, struct fcpu *c)
{
	char name[CHUNK_NAME_MAX], why[128];
	struct stat st;
	uint64_t size;

	chunk_name(name, sizeof(name), c->cpu, c->seq);
	if (fstat(c->fd, &st)) {
		warn("%s/%s: %s", f->dir, name, strerror(errno));
		c->done = true;
		return;
	}
	size = (uint64_t)st.st_size;
	while (c->pos < size && c->pend_len < READ_AHEAD && !f->failed) {
		uint64_t from = c->pos, to;

		switch (packed_frame(f, c, size, why, sizeof(why))) {
		case FRAME_OK:
			if (f->out_len) {
				memcpy(pend_room(c, f->out_len), f->out, f->out_len);
				pend_commit(c, f->out_len);
			}
			continue;
		case FRAME_CUT:
			warn("%s/%s: trailing partial zstd frame at offset %" PRIu64 " dropped",
			     f->dir, name, from);
			c->pos = size;
			continue;
		}
		to = find_sig(f, c->fd, from + 1, size, zstd_magic, sizeof(zstd_magic));
		damaged(f, "%s/%s: zstd: %s in the frame at compressed offset %" PRIu64 ": skipped %" PRIu64 " compressed bytes, %s",
			f->dir, name, why, from, to - from,
			to == size ? "to the end of the file" : "to the next frame");
		c->pos = to;
	}
	c->done = c->pos >= size;
}

/* Moves @c to its next chunk, if the listing has one. */
static void next_chunk(struct fcpu *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->seq = c->next;
	c->has_next = false;
	c->done = false;
	c->pos = 0;
	c->scan = 0;
	c->out_off = 0;
}

/*
 * What the CPU's chunks hold past what was read, into c->pend.  The
 * listing was made before: a chunk with a later one listed is closed.
 */
static void read_cpu(struct follow *f, struct fcpu *c)
{
	char name[CHUNK_NAME_MAX];

	for (;;) {
		bool closed = c->has_next;

		if (c->done) {
			if (!closed)
				return;
			next_chunk(c);
			continue;
		}
		if (c->fd < 0) {
			int kind;

			chunk_name(name, sizeof(name), c->cpu, c->seq);
			c->fd = open_chunk(f, c->cpu, c->seq);
			if (c->fd < 0) {
				if (errno != ENOENT)
					warn("%s/%s: %s", f->dir, name, strerror(errno));
				else if (closed)
					warn("%s/%s: removed before it was read: skipped",
					     f->dir, name);
				c->done = closed;
				if (!closed)
					return;	/* not created yet, or gone: wait */
				continue;
			}
			kind = chunk_kind(c->fd);
			/*
			 * Not zstd at its start (damage): stored if it holds a
			 * stored frame further on, else packed.  Either way its
			 * first frame is damage, read past.
			 */
			if (kind < 0) {
				struct stat st;
				uint64_t size = fstat(c->fd, &st) ? 0 : (uint64_t)st.st_size;

				kind = find_sig(f, c->fd, 1, size, stored_magic,
						sizeof(stored_magic)) < size ?
				       CHUNK_KIND_STORED : CHUNK_KIND_PACKED;
			}
			c->stored = kind == CHUNK_KIND_STORED || kind == CHUNK_KIND_EMPTY;
		}
		if (c->stored)
			read_stored(f, c, closed);
		else
			read_packed(f, c);
		if (!c->done || c->pend_len)
			return;		/* decoded before the next chunk */
	}
}

/*
 * Where a view that starts now starts: for each CPU, past the whole
 * frames of its newest chunk (a packed one is all before it).
 */
static void skip_existing(struct follow *f)
{
	for (unsigned int i = 0; i < f->nr_cpus; i++) {
		struct fcpu *c = f->cpus[i];
		uint8_t h[CHUNK_STORED_FRAME_HEADER];
		uint32_t content;
		struct stat st;

		if (!c)
			continue;
		c->fd = open_chunk(f, c->cpu, c->seq);
		if (c->fd < 0)
			continue;
		c->stored = chunk_kind(c->fd) != CHUNK_KIND_PACKED;
		if (!c->stored || fstat(c->fd, &st)) {
			c->done = true;
			continue;
		}
		while (!rt_pread_full(c->fd, h, sizeof(h), c->pos) &&
		       chunk_stored_header(h, &content) &&
		       c->pos + chunk_stored_size(content) <= (uint64_t)st.st_size) {
			c->pos += chunk_stored_size(content);
			c->out_off += content;
		}
	}
}

/* ---- a look at the directory ------------------------------------------------------- */

/*
 * The metadata, again if it changed.  The old one is kept: items decoded
 * with it point into it (their fields' declarations).
 */
static void reload_metadata(struct follow *f)
{
	struct rt_metadata *md, **old;
	struct rt_error err;
	char path[4096];
	struct stat st;

	if (fstatat(f->dirfd, "metadata", &st, 0))
		return;
	if (st.st_ino == f->md_st.st_ino && st.st_size == f->md_st.st_size &&
	    st.st_mtim.tv_sec == f->md_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == f->md_st.st_mtim.tv_nsec)
		return;
	snprintf(path, sizeof(path), "%s/metadata", f->dir);
	if (rt_metadata_load(path, &md, &err)) {
		warn("%s (the previous metadata kept)", err.msg);
		f->md_st = st;
		return;
	}
	f->md_st = st;
	old = realloc(f->old_md, (f->nr_old_md + 1) * sizeof(*old));
	if (!old)
		die("out of memory");
	f->old_md = old;
	f->old_md[f->nr_old_md++] = f->md;
	f->md = md;
	for (unsigned int i = 0; i < f->nr_cpus; i++)
		if (f->cpus[i])
			rt_stream_set_metadata(f->cpus[i]->stream, md);
}

/* What was read for the dry CPUs, to their streams; their heads to the heap. */
static void feed(struct follow *f)
{
	for (unsigned int i = 0; i < f->nr_cpus && !f->failed; i++) {
		struct fcpu *c = f->cpus[i];

		if (!c || !c->dry || !c->pend_len)
			continue;
		if (rt_stream_feed(c->stream, c->pend_file, c->pend_off, c->pend,
				   c->pend_len, &f->err)) {
			f->failed = true;
			return;
		}
		c->pend_len = 0;
		/* A packed frame's worth is not kept per CPU while it idles. */
		if (c->pend_cap > READ_AHEAD) {
			free(c->pend);
			c->pend = NULL;
			c->pend_cap = 0;
		}
		if (advance(f, c))
			rt_item_heap_push(&f->heap, &c->item);
	}
}

/* One look: true if it found anything new. */
static bool look(struct follow *f)
{
	bool found = false;

	list_chunks(f);
	for (unsigned int i = 0; i < f->nr_cpus; i++) {
		struct fcpu *c = f->cpus[i];

		if (c && c->unlooked) {
			c->unlooked = false;
			f->unlooked--;
		}
		if (c && c->dry && !c->pend_len) {
			read_cpu(f, c);
			found |= c->pend_len > 0;
		}
	}
	/* After the chunks: their packets' events are declared by then. */
	reload_metadata(f);
	feed(f);
	return found;
}

/*
 * Waits up to @ms for a stop signal: its number, or 0.  The view's
 * output goes out before: whoever reads it sees each item as it comes.
 */
static int wait_stop(struct follow *f, int ms)
{
	struct pollfd p = { .fd = f->sigfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	if (poll(&p, 1, ms) <= 0 || read(f->sigfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

/* ---- the interface ------------------------------------------------------------------ */

struct follow *follow_open(const char *dir, unsigned int flags,
			   unsigned int hold_ms, bool strict)
{
	struct follow *f = calloc(1, sizeof(*f));
	char path[4096];
	struct rt_error err;
	sigset_t set;

	if (!f || !(f->dir = strdup(dir)) || !(f->dctx = ZSTD_createDCtx()) ||
	    !(f->in = malloc(IN_SIZE)))
		die("out of memory");
	f->strict = strict;
	f->sigfd = -1;
	f->found = true;		/* look at once */
	f->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0) {
		error_line("%s: %s", dir, strerror(errno));
		goto fail;
	}
	/* Looked at before it is read: a change meanwhile is read again. */
	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (stat(path, &f->md_st)) {
		error_line("%s: %s", path, strerror(errno));
		goto fail;
	}
	if (rt_metadata_load(path, &f->md, &err)) {
		error_line("%s", err.msg);
		goto fail;
	}
	f->hold = (uint64_t)((unsigned __int128)hold_ms * f->md->clock_freq / 1000);
	sigemptyset(&set);
	if (!(flags & FOLLOW_TERM_ONLY))
		sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	f->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (f->sigfd < 0)
		die("signalfd: %s", strerror(errno));
	f->from_start = flags & FOLLOW_FROM_START;
	list_chunks(f);
	if (!f->from_start)
		skip_existing(f);
	/* CPUs that show up later are read from their first chunk. */
	f->from_start = true;
	return f;
fail:
	follow_close(f);
	return NULL;
}

/*
 * The view stops and everything on disk was read: the last look found
 * nothing, and every CPU that ran dry since was looked at (after SIGINT,
 * what was read is all there is).
 */
static bool all_read(const struct follow *f)
{
	return f->stopping && !f->found && (!f->unlooked || f->interrupted);
}

/*
 * The item at the top of the heap may go: every CPU has one (the merge
 * is exact), it is older than the hold and every CPU without one was
 * looked at since it ran dry (a backlog read in several looks is merged
 * exactly too), or the view stops and everything on disk was read.
 */
static bool ready(struct follow *f)
{
	const struct rt_item *it = rt_item_heap_top(&f->heap);
	uint64_t now;

	if (f->heap.n == f->nr_known || all_read(f))
		return true;
	if (f->unlooked)
		return false;
	now = now_cycles(f->md);
	/* Not the clock of this boot (a stamp ahead of now): no use waiting. */
	return it->timestamp > now || now - it->timestamp >= f->hold;
}

/* Until the top of the heap is older than the hold, at most a tick. */
static int wait_ms(struct follow *f)
{
	uint64_t now, due;

	if (!f->heap.n)
		return FOLLOW_TICK_MS;
	now = now_cycles(f->md);
	due = rt_item_heap_top(&f->heap)->timestamp + f->hold;
	if (due <= now)
		return 0;
	due = (due - now) * 1000 / f->md->clock_freq + 1;
	return due < FOLLOW_TICK_MS ? (int)due : FOLLOW_TICK_MS;
}

const struct rt_item *follow_next(struct follow *f)
{
	/* The item handed out last is replaced only now. */
	if (f->primed && !f->failed) {
		if (advance(f, container_of(rt_item_heap_top(&f->heap), struct fcpu, item)))
			rt_item_heap_top_changed(&f->heap);
		else
			rt_item_heap_pop(&f->heap);
	}
	f->primed = false;
	while (!f->failed) {
		if (f->heap.n && ready(f)) {
			f->primed = true;
			f->cur = *rt_item_heap_top(&f->heap);
			/*
			 * Decoded before the metadata grew (a stream takes the
			 * new one at its next packet): the same id, as the
			 * metadata the caller is given declares it.
			 */
			if (f->nr_old_md && f->cur.type == RT_ITEM_EVENT &&
			    !(f->cur.event = rt_metadata_event(f->md, f->cur.event->id))) {
				snprintf(f->err.msg, sizeof(f->err.msg),
					 "%s/metadata: an event of the trace is no longer declared",
					 f->dir);
				f->failed = true;
				return NULL;
			}
			if (f->cur.timestamp < f->last_ts)
				f->late++;
			else
				f->last_ts = f->cur.timestamp;
			return &f->cur;
		}
		if (all_read(f))
			return NULL;		/* all read and handed out */
		if (!f->found && !f->unlooked) {
			int sig = wait_stop(f, wait_ms(f));

			f->stopping = sig != 0;
			f->interrupted = sig == SIGINT;
			if (sig == SIGINT)
				continue;	/* no more looks: what was read */
		}
		f->found = look(f);
	}
	return NULL;
}

const struct rt_metadata *follow_metadata(const struct follow *f)
{
	return f->md;
}

uint64_t follow_late(const struct follow *f)
{
	return f->late;
}

unsigned int follow_damage_report(const struct follow *f)
{
	unsigned int n = f->nr_damage;

	for (unsigned int i = 0; i < f->nr_damage && i < RT_MSGS_KEPT; i++)
		warn("damaged: %s", f->damage[i]);
	if (f->nr_damage > RT_MSGS_KEPT)
		warn("damaged: %u more damaged frames, not described",
		     f->nr_damage - RT_MSGS_KEPT);

	for (unsigned int i = 0; i < f->nr_cpus; i++) {
		const struct rt_stream *s = f->cpus[i] ? f->cpus[i]->stream : NULL;
		unsigned int nd = s ? rt_stream_nr_damage(s) : 0;
		unsigned int nn = s ? rt_stream_nr_notes(s) : 0;

		for (unsigned int j = 0; j < nd; j++)
			if (rt_stream_damage(s, j))
				warn("damaged: %s", rt_stream_damage(s, j));
		for (unsigned int j = 0; j < nn; j++)
			if (rt_stream_note(s, j))
				warn("truncated: %s", rt_stream_note(s, j));
		n += nd;
	}
	if (n)
		warn("%u damaged place%s read past (--strict fails instead)",
		     n, n == 1 ? "" : "s");
	return n;
}

const char *follow_error(const struct follow *f)
{
	return f->failed ? f->err.msg : NULL;
}

void follow_close(struct follow *f)
{
	if (!f)
		return;
	for (unsigned int i = 0; i < f->nr_cpus; i++) {
		struct fcpu *c = f->cpus[i];

		if (!c)
			continue;
		if (c->fd >= 0)
			close(c->fd);
		rt_stream_close(c->stream);
		free(c->pend);
		free(c);
	}
	for (unsigned int i = 0; i < f->nr_old_md; i++)
		rt_metadata_free(f->old_md[i]);
	rt_metadata_free(f->md);
	free(f->old_md);
	free(f->cpus);
	rt_item_heap_free(&f->heap);
	for (unsigned int i = 0; i < f->nr_damage && i < RT_MSGS_KEPT; i++)
		free(f->damage[i]);
	free(f->frame);
	free(f->out);
	free(f->in);
	ZSTD_freeDCtx(f->dctx);
	if (f->sigfd >= 0)
		close(f->sigfd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->dir);
	free(f);
}
