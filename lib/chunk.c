// SPDX-License-Identifier: GPL-2.0
/*
 * Chunks: stored frames on the way in, packing on the way out (chunk.h).
 *
 * The stored frame is written by hand because it is the one thing libzstd
 * cannot do without a copy: its compressor wants the packet in its own
 * window even at its fastest setting, while a stored frame is three small
 * headers around the kernel's own pages, handed to one writev().  Reading
 * stored frames back, and everything about compressed frames, is libzstd's.
 *
 * A chunk is read with pread(), never mapped: on a disk that fails, a read
 * of a mapping is a SIGBUS that kills the whole daemon, tracing on, while
 * pread() says EIO and the chunk is only left as it is.
 */
#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_estimateCStreamSize_usingCCtxParams() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include <linux/ringtrace.h>

#include "chunk.h"
#include "chunk_index.h"
#include "le.h"
#include "parse.h"

#define ZSTD_FRAME_MAGIC	0xFD2FB528U
/* Frame_Header_Descriptor: FCS_Field_Size 2 (4 bytes), Single_Segment. */
#define STORED_DESCRIPTOR	0xA0

void chunk_name(char *buf, size_t size, unsigned int cpu, unsigned int seq)
{
	snprintf(buf, size, "cpu%u-%06u.zst", cpu, seq);
}

/* Hidden: the trace readers list cpu<N>... names only. */
void chunk_tmp_name(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, ".%s.tmp", name);
}

/* Decimal digits only, at most UINT_MAX: the value, and where it ended. */
static bool parse_decimal(const char *s, unsigned int *v, const char **end)
{
	unsigned long long n = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		n = n * 10 + (unsigned int)(*s - '0');
		if (n > UINT_MAX)
			return false;
	}
	*v = (unsigned int)n;
	*end = s;
	return true;
}

bool chunk_parse_name(const char *name, unsigned int *cpu, unsigned int *seq)
{
	unsigned int c, s;
	const char *p;

	if (strncmp(name, "cpu", 3) || !parse_decimal(name + 3, &c, &p) ||
	    *p != '-' || !parse_decimal(p + 1, &s, &p) || strcmp(p, ".zst"))
		return false;
	*cpu = c;
	*seq = s;
	return true;
}

/* ---- stored frames ------------------------------------------------------------- */

static unsigned int raw_blocks(size_t len)
{
	return len ? (unsigned int)((len + CHUNK_RAW_BLOCK_MAX - 1) /
				    CHUNK_RAW_BLOCK_MAX) : 1;
}

unsigned int chunk_stored_iovcnt(size_t len)
{
	/* the frame header, then a header and (unless empty) data per block */
	return 1 + raw_blocks(len) * (len ? 2 : 1);
}

uint64_t chunk_stored_size(size_t len)
{
	return CHUNK_STORED_FRAME_HEADER + 3ULL * raw_blocks(len) + len;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

unsigned int chunk_stored_iov(struct iovec *iov, struct chunk_stored_hdrs *h,
			      const void *data, size_t len)
{
	const uint8_t *p = data;
	unsigned int n = 0, b = 0;
	size_t off = 0, part;
	uint32_t bh;

	/* Little endian whatever the host; the size fits: packets <= 64 MiB. */
	put_le32(h->frame, ZSTD_FRAME_MAGIC);
	h->frame[4] = STORED_DESCRIPTOR;
	put_le32(h->frame + 5, (uint32_t)len);
	iov[n++] = (struct iovec){ h->frame, sizeof(h->frame) };
	do {
		part = len - off < CHUNK_RAW_BLOCK_MAX ? len - off :
		       CHUNK_RAW_BLOCK_MAX;
		/* Block_Size << 3 | Block_Type 0 (raw) << 1 | Last_Block */
		bh = (uint32_t)part << 3 | (off + part == len);
		h->blocks[b][0] = (uint8_t)bh;
		h->blocks[b][1] = (uint8_t)(bh >> 8);
		h->blocks[b][2] = (uint8_t)(bh >> 16);
		iov[n++] = (struct iovec){ h->blocks[b], 3 };
		if (part)
			iov[n++] = (struct iovec){ (void *)(p + off), part };
		off += part;
		b++;
	} while (off < len);
	return n;
}

int chunk_kind(int fd)
{
	uint8_t h[5];
	ssize_t n;

	do
		n = pread(fd, h, sizeof(h), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return CHUNK_KIND_EMPTY;
	if (n < (ssize_t)sizeof(h) ||
	    (h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24) != ZSTD_FRAME_MAGIC)
		return -EBADMSG;
	return h[4] == STORED_DESCRIPTOR ? CHUNK_KIND_STORED : CHUNK_KIND_PACKED;
}

/* ---- packing ------------------------------------------------------------------- */

bool chunk_parse_level(const char *s, int *out)
{
	int level;

	if (!parse_int(s, &level) || level < ZSTD_minCLevel() ||
	    level > ZSTD_maxCLevel())
		return false;
	*out = level ? level : ZSTD_CLEVEL_DEFAULT;
	return true;
}

struct chunk_packer {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;		/* stable output: writes into @pkt */
	uint8_t *in;			/* stored bytes read */
	size_t in_cap;
	uint8_t *pkt;			/* one decoded packet */
	size_t pkt_cap;
	uint8_t *out;			/* compressed bytes on their way out */
	size_t out_cap;
	size_t frame_bytes;		/* a packed frame ends past this much */
	struct chunk_index ix;		/* the frames packed, for the index */
	const struct chunk_table_ops *tops;	/* NULL: no thread table */
	struct chunk_table tab;		/* the frames' records, while it is made */
	bool tab_on;			/* for the chunk being packed */
	struct chunk_sched sched;	/* the frames' scheduler records, the same way */
	bool sched_on;			/* for the chunk being packed */
};

static unsigned int umin(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

/*
 * The level's own parameters, with the window, chain and hash tables held
 * to CHUNK_PACK_WINDOW_LOG: the cap on memory that the level alone would
 * not give (level 22 wants 770 MiB per compressor, with the window alone
 * capped still 640 MiB).
 */
static ZSTD_compressionParameters pack_cparams(int level)
{
	ZSTD_compressionParameters cp = ZSTD_getCParams(level, 0, 0);

	cp.windowLog = umin(cp.windowLog, CHUNK_PACK_WINDOW_LOG);
	cp.chainLog = umin(cp.chainLog, CHUNK_PACK_WINDOW_LOG);
	cp.hashLog = umin(cp.hashLog, CHUNK_PACK_WINDOW_LOG - 1);
	return cp;
}

static size_t set_params(ZSTD_CCtx *cctx, int level)
{
	ZSTD_compressionParameters cp = pack_cparams(level);
	size_t r;

	r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, (int)cp.windowLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_chainLog, (int)cp.chainLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_hashLog, (int)cp.hashLog);
	/* Packed frames are checked by every reader, and unlike stored ones. */
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	return r;
}

size_t chunk_pack_memory(int level)
{
	ZSTD_compressionParameters cp = pack_cparams(level);
	ZSTD_CCtx_params *params = ZSTD_createCCtxParams();
	size_t bytes;

	if (!params)
		return 0;
	ZSTD_CCtxParams_init(params, level);
	ZSTD_CCtxParams_setParameter(params, ZSTD_c_windowLog, (int)cp.windowLog);
	ZSTD_CCtxParams_setParameter(params, ZSTD_c_chainLog, (int)cp.chainLog);
	ZSTD_CCtxParams_setParameter(params, ZSTD_c_hashLog, (int)cp.hashLog);
	/* The decompressor buffers one block of input (not its output). */
	bytes = ZSTD_estimateCStreamSize_usingCCtxParams(params) +
		ZSTD_estimateDCtxSize() + ZSTD_BLOCKSIZE_MAX +
		ZSTD_DStreamInSize() + ZSTD_CStreamOutSize();
	ZSTD_freeCCtxParams(params);
	return bytes;
}

struct chunk_packer *chunk_packer_new(int level)
{
	struct chunk_packer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cctx = ZSTD_createCCtx();
	p->dctx = ZSTD_createDCtx();
	p->in_cap = ZSTD_DStreamInSize();
	p->out_cap = ZSTD_CStreamOutSize();
	p->frame_bytes = CHUNK_PACK_FRAME_BYTES;
	p->in = malloc(p->in_cap);
	p->out = malloc(p->out_cap);
	/* A packet is decoded straight into @pkt, no window of its own. */
	if (!p->cctx || !p->dctx || !p->in || !p->out ||
	    ZSTD_isError(set_params(p->cctx, level)) ||
	    ZSTD_isError(ZSTD_DCtx_setParameter(p->dctx, ZSTD_d_stableOutBuffer,
						1))) {
		chunk_packer_free(p);
		return NULL;
	}
	return p;
}

void chunk_packer_set_frame_bytes(struct chunk_packer *p, size_t bytes)
{
	p->frame_bytes = bytes ? bytes : CHUNK_PACK_FRAME_BYTES;
}

void chunk_packer_set_table(struct chunk_packer *p, const struct chunk_table_ops *ops)
{
	p->tops = ops;
}

void chunk_packer_free(struct chunk_packer *p)
{
	if (!p)
		return;
	ZSTD_freeCCtx(p->cctx);
	ZSTD_freeDCtx(p->dctx);
	free(p->in);
	free(p->pkt);
	free(p->out);
	chunk_index_free(&p->ix);
	chunk_table_free(&p->tab);
	chunk_sched_free(&p->sched);
	free(p);
}

/* @len bytes at @off of @fd; -EBADMSG if the file ends first. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		buf = (uint8_t *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

bool chunk_stored_header(const uint8_t *h, uint32_t *content)
{
	if ((h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24) != ZSTD_FRAME_MAGIC ||
	    h[4] != STORED_DESCRIPTOR)
		return false;
	*content = h[5] | h[6] << 8 | h[7] << 16 | (uint32_t)h[8] << 24;
	return true;
}

/*
 * The stored frame at @off of @fd (@size bytes): its size in the file and
 * its content size, from its header; -EBADMSG unless it is a stored frame
 * that ends within the file.  Its blocks are checked as it is decoded.
 */
static int stored_frame(int fd, uint64_t off, uint64_t size, uint64_t *fsize,
			uint64_t *content)
{
	uint8_t h[CHUNK_STORED_FRAME_HEADER];
	uint32_t cs;
	int err;

	if (size - off < chunk_stored_size(0))
		return -EBADMSG;
	err = read_at(fd, h, sizeof(h), off);
	if (err)
		return err;
	if (!chunk_stored_header(h, &cs))
		return -EBADMSG;
	*fsize = chunk_stored_size(cs);
	*content = cs;
	return *fsize <= size - off ? 0 : -EBADMSG;
}

/*
 * Decode the stored frame of @fsize bytes at @off into p->pkt, read a
 * buffer at a time: whole and exactly @content bytes, or -EBADMSG.
 */
static int decode_frame(struct chunk_packer *p, int fd, uint64_t off,
			uint64_t fsize, uint64_t content)
{
	ZSTD_outBuffer out;
	size_t left = 1, n;
	uint64_t done;
	int err;

	if (content > p->pkt_cap || !p->pkt) {
		uint8_t *n = realloc(p->pkt, content ? content : 1);

		if (!n)
			return -ENOMEM;
		p->pkt = n;
		p->pkt_cap = content;
	}
	out = (ZSTD_outBuffer){ p->pkt, content, 0 };
	ZSTD_DCtx_reset(p->dctx, ZSTD_reset_session_only);
	for (done = 0; done < fsize; done += n) {
		ZSTD_inBuffer in = { p->in, 0, 0 };

		n = fsize - done < p->in_cap ? (size_t)(fsize - done) : p->in_cap;
		err = read_at(fd, p->in, n, off + done);
		if (err)
			return err;
		in.size = n;
		while (in.pos < in.size) {
			size_t was_in = in.pos, was_out = out.pos;

			left = ZSTD_decompressStream(p->dctx, &out, &in);
			/* Damaged: an error, an early end, or stuck. */
			if (ZSTD_isError(left) || (!left && in.pos < in.size) ||
			    (in.pos == was_in && out.pos == was_out))
				return -EBADMSG;
		}
	}
	return !left && out.pos == content ? 0 : -EBADMSG;
}

/* The compressor's output so far goes to @fd. */
static int flush_out(ZSTD_outBuffer *out, int fd,
		     struct chunk_pack_result *res)
{
	int err = write_all(fd, out->dst, out->pos);

	if (err)
		return err;
	res->out += out->pos;
	out->pos = 0;
	return 0;
}

/* Compress @len bytes of @data, ending the frame with @end. */
static int compress(struct chunk_packer *p, const void *data, size_t len,
		    bool end, int fd, struct chunk_pack_result *res)
{
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer out = { p->out, p->out_cap, 0 };
	ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
	size_t left;
	int err;

	for (;;) {
		left = ZSTD_compressStream2(p->cctx, &out, &in, mode);
		if (ZSTD_isError(left))
			return ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation ?
			       -ENOMEM : -EPROTO;
		if (out.pos == out.size || (end && !left) ||
		    (!end && in.pos == in.size)) {
			err = flush_out(&out, fd, res);
			if (err)
				return err;
		}
		if (end ? !left : in.pos == in.size)
			return 0;
	}
}

/*
 * A packet's timestamp_begin or _end, for the index.  A stored frame
 * shorter than a header is no packet of ringtrace.ko's: 0, which the
 * index check (times never go back) turns into an index not written.
 */
static uint64_t packet_time(const uint8_t *pkt, uint64_t len, bool begin)
{
	size_t at = begin ? offsetof(struct ringtrace_packet_header, timestamp_begin) :
			    offsetof(struct ringtrace_packet_header, timestamp_end);
	if (len < sizeof(struct ringtrace_packet_header))
		return 0;
	return rt_get_le(pkt + at, 8);
}

/* The thread table no longer: what is left of it is freed. */
static void table_off(struct chunk_packer *p)
{
	p->tab_on = false;
	chunk_table_free(&p->tab);
}

/* The record of the frame just packed into the table. */
static void table_frame(struct chunk_packer *p)
{
	struct chunk_table_frame f = { 0 };

	if (!p->tab_on)
		return;
	if (p->tops->frame_end(p->tops->arg, &f) || chunk_table_add(&p->tab, &f)) {
		free(f.facts);
		table_off(p);
	}
}

/* The scheduler records no longer: what is left of them is freed. */
static void sched_off(struct chunk_packer *p)
{
	p->sched_on = false;
	chunk_sched_free(&p->sched);
}

/* The scheduler record of the frame just packed. */
static void sched_frame(struct chunk_packer *p)
{
	struct chunk_sched_frame f = { 0 };

	if (!p->sched_on)
		return;
	if (p->tops->sched_end(p->tops->arg, &f) || chunk_sched_add(&p->sched, &f)) {
		free(f.threads);
		sched_off(p);
	}
}

/*
 * The index's frames hold ringtrace.ko's packets: their times never go
 * back.  Else no index is written (nor a table): readers then scan the
 * chunk, as they do one packed before indexes.
 */
static bool index_ok(const struct chunk_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		if (ix->e[i].ts_end < ix->e[i].ts_begin ||
		    (i && ix->e[i].ts_begin < ix->e[i - 1].ts_end))
			return false;
	return ix->n;
}

/* A trailing frame's @len bytes @buf (NULL: none, readers decode instead) go out. */
static int write_trailer(int fd, struct chunk_pack_result *res, uint8_t *buf, size_t len)
{
	int err;

	if (!buf)
		return 0;
	err = write_all(fd, buf, len);
	free(buf);
	if (!err)
		res->out += len;
	return err;
}

/*
 * The thread table (chunk_index.h) as a skippable frame in front of the
 * index, a record per frame of it.
 */
static int write_table(struct chunk_packer *p, int fd,
		       struct chunk_pack_result *res)
{
	size_t len = chunk_table_size(&p->tab);
	uint8_t *buf;

	if (!p->tab_on || p->tab.n != p->ix.n || len > UINT32_MAX)
		return 0;
	buf = malloc(len);
	if (buf)
		chunk_table_encode(&p->tab, buf);
	return write_trailer(fd, res, buf, len);
}

/* The scheduler records (chunk_index.h), the same way, in front of the table. */
static int write_sched(struct chunk_packer *p, int fd,
		       struct chunk_pack_result *res)
{
	size_t len = chunk_sched_size(&p->sched);
	uint8_t *buf;

	if (!p->sched_on || p->sched.n != p->ix.n || len > UINT32_MAX)
		return 0;
	buf = malloc(len);
	if (buf)
		chunk_sched_encode(&p->sched, buf);
	return write_trailer(fd, res, buf, len);
}

/* The time index (chunk_index.h) as the packed chunk's last frame. */
static int write_index(struct chunk_packer *p, int fd,
		       struct chunk_pack_result *res)
{
	struct chunk_index *ix = &p->ix;
	uint8_t *buf;
	size_t len;
	int err;

	/* Its offset: a reader of version 1 finds the table in front of it. */
	ix->data_bytes = res->out;
	ix->content_bytes = res->content;
	len = chunk_index_size(ix);
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	chunk_index_encode(ix, buf);
	err = write_all(fd, buf, len);
	free(buf);
	if (!err)
		res->out += len;
	return err;
}

/*
 * The frames of the chunk at @in (@size bytes), grouped: each packed frame
 * takes stored frames until p->frame_bytes of packets are in it, so that
 * it ends on a packet boundary (a reader that resynchronises after damage
 * starts on a packet) and says its content size (pledged from the stored
 * frames' headers).
 */
static int pack_fd(struct chunk_packer *p, int in, uint64_t size, int fd,
		   const bool *cancel, struct chunk_pack_result *res)
{
	uint64_t off = 0, g, f, fsize, total, content;
	struct chunk_index_entry entry;
	int err;

	p->ix.n = 0;
	while (off < size) {
		for (g = off, total = 0; g < size && total < p->frame_bytes;
		     g += fsize, total += content) {
			err = stored_frame(in, g, size, &fsize, &content);
			if (err)
				return err;
		}
		if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(p->cctx, total)))
			return -EPROTO;
		/* The last frame ended with ZSTD_e_end: all of it is out. */
		entry = (struct chunk_index_entry){ .coff = res->out,
						    .uoff = res->content };
		for (f = off; f < g; f += fsize) {
			if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
				return -ECANCELED;
			err = stored_frame(in, f, size, &fsize, &content);
			if (!err)
				err = decode_frame(p, in, f, fsize, content);
			if (!err)
				err = compress(p, p->pkt, content, f + fsize == g,
					       fd, res);
			if (err)
				return err;
			if (f == off)
				entry.ts_begin = packet_time(p->pkt, content, true);
			entry.ts_end = packet_time(p->pkt, content, false);
			if (p->tab_on || p->sched_on)
				p->tops->packet(p->tops->arg, p->pkt, content,
						res->content);
			res->packets++;
			res->content += content;
		}
		if (chunk_index_add(&p->ix, &entry))
			return -ENOMEM;
		table_frame(p);
		sched_frame(p);
		off = g;
	}
	if (!index_ok(&p->ix))
		return 0;
	err = write_sched(p, fd, res);
	if (!err)
		err = write_table(p, fd, res);
	return err ? err : write_index(p, fd, res);
}

int rt_open_regular(int dirfd, const char *name, struct stat *st)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat own;

	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (!st)
		st = &own;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int chunk_pack(struct chunk_packer *p, int dirfd, const char *name,
	       const char *tmpname, const bool *cancel,
	       struct chunk_pack_result *res)
{
	struct stat st;
	int in, out, err;

	memset(res, 0, sizeof(*res));
	in = rt_open_regular(dirfd, name, &st);
	if (in < 0)
		return in;
	if (!st.st_size) {
		err = -ENODATA;
		goto close_in;
	}
	posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	out = openat(dirfd, tmpname,
		     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (out < 0) {
		err = -errno;
		goto close_in;
	}
	/* A failed earlier call may have left the compressor mid-frame. */
	ZSTD_CCtx_reset(p->cctx, ZSTD_reset_session_only);
	table_off(p);
	sched_off(p);
	p->tab_on = p->tops && !p->tops->begin(p->tops->arg, dirfd, name);
	p->sched_on = p->tab_on && p->tops->sched_end;
	err = pack_fd(p, in, (uint64_t)st.st_size, out, cancel, res);
	if (p->tops)
		p->tops->end(p->tops->arg);
	table_off(p);
	sched_off(p);
	if (!err && fdatasync(out) < 0)
		err = -errno;
	if (close(out) < 0 && !err)
		err = -errno;
	if (err)
		unlinkat(dirfd, tmpname, 0);
	else
		res->in = (uint64_t)st.st_size;
close_in:
	close(in);
	return err;
}
