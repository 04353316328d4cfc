// SPDX-License-Identifier: GPL-2.0
/*
 * The bytes of one stream file, plain or zstd-compressed.
 *
 * A zstd file is read a whole frame at a time: the frame is decoded into
 * memory, and only once libzstd has reached its end -- and verified its
 * content checksum, when it has one -- are any of its bytes handed out.
 * ringtraced's packed frames all carry a checksum (lib/chunk.c); its stored
 * frames are raw blocks without one, a packet each.  So a flipped bit
 * anywhere in a packed frame makes the whole frame damage: none of it is
 * ever parsed, printed or unpacked.
 *
 * A frame holds at most CHUNK_PACK_FRAME_BYTES of packets plus the packet
 * that crosses that mark (lib/chunk.c), and a packet is at most
 * RINGTRACE_MAX_SUBBUF_SIZE: a frame that declares a larger size or window
 * (looked at before libzstd allocates for it), or decodes to more, is not
 * ringtraced's, and damage too.  That bounds what a reader holds in memory
 * per stream, whatever the file says.
 *
 * Damage, when the owner reads past it (tolerant): a frame that does not
 * decode, fails its checksum or is too big is skipped to the next frame
 * magic after its start, and described in the owner's damage list.  A
 * stored frame's bytes are its packet's, unchecked: a payload may hold a
 * frame magic, which is nothing.  What libzstd cannot see in one is a
 * missing end (its block size alone damaged fails the content size
 * check): it then takes its last bytes from the frames after it,
 * swallowing the next one's header.  So a stored frame of ringtraced's
 * starting inside it -- a whole stored-frame header, within the file,
 * its content the start of a packet (the owner's src->sig) -- makes it
 * damage, and reading takes up there; anything else is handed up for the
 * packet checks.  A file that ends inside a frame (a killed writer) drops
 * that frame -- it cannot be checked -- and says so in the owner's notes;
 * unless such a frame (or, in a frame with a checksum, any frame whose
 * blocks fit in the file) starts after it began: the file goes on, that
 * is damage.
 *
 * A resynchronising reader hands bytes back: rt_src_giveback() goes back
 * over what it read last (the file, the frame in memory), rt_src_unread()
 * copies new bytes in front; either way they are read again first.
 *
 * A file a chunk set's manifest speaks for (rt_stream_promise()) is
 * checked against it before its first byte is handed out: its size, and
 * its XXH64 -- which means reading it whole first, so it is hashed only
 * where it is read whole anyway, or where its frames carry no checksum
 * (stored): a packed file that a window reads from its index is checked
 * frame by frame instead (each frame's content checksum; the index's
 * own).  A mismatch is damage: said, and the file read all the same, each
 * frame and packet checked as always.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_getFrameHeader() */
#include <zstd.h>

#include <linux/ringtrace.h>
#include "../../lib/chunk.h"
#include "internal.h"

#define IN_BUF_SIZE	(128 * 1024)
#define FRAME_MAX	((size_t)CHUNK_PACK_FRAME_BYTES + RINGTRACE_MAX_SUBBUF_SIZE)
#define FRAME_FIRST	(256 * 1024)

static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

int rt_src_open(struct rt_source *src, const char *path, struct rt_error *err)
{
	src->path = path;
	src->zst = rt_is_zst(path);
	src->out_off = 0;
	src->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (src->fd < 0)
		return rt_fail(err, "%s: %s", path, strerror(errno));
	if (src->zst) {
		src->zds = ZSTD_createDStream();
		src->in = malloc(IN_BUF_SIZE);
		if (!src->zds || !src->in || ZSTD_isError(ZSTD_initDStream(src->zds))) {
			rt_src_close(src);
			return rt_fail(err, "%s: cannot set up zstd", path);
		}
		src->fkeyed = rt_fcache_key(src->fd, &src->fkey);
	}
	return 0;
}

void rt_src_close(struct rt_source *src)
{
	const struct rt_source was = *src;

	if (src->fd >= 0)
		close(src->fd);
	ZSTD_freeDStream(src->zds);
	free(src->in);
	free(src->frame);
	if (!src->pb_lent)
		free(src->pb);
	/* What the owner set, and counts, stay. */
	*src = RT_SOURCE_INIT(was.damage, was.notes);
	src->tolerant = was.tolerant;
	src->frames_skipped = was.frames_skipped;
	src->promises = was.promises;
	src->nr_promises = was.nr_promises;
	memcpy(src->sig, was.sig, sizeof(src->sig));
	src->siglen = was.siglen;
	src->moved = was.moved;
	src->frames = was.frames;
}

/* rtdecode.h */
int rt_file_xxh64(int fd, uint64_t *size, uint64_t *sum)
{
	XXH64_state_t *xs = XXH64_createState();
	uint8_t *buf = malloc(IN_BUF_SIZE);
	uint64_t off = 0;
	int ret = -1;

	if (!xs || !buf) {
		errno = ENOMEM;
		goto out;
	}
	XXH64_reset(xs, 0);
	for (;;) {
		ssize_t n = pread(fd, buf, IN_BUF_SIZE, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		XXH64_update(xs, buf, (size_t)n);
		off += (uint64_t)n;
	}
	*size = off;
	*sum = XXH64_digest(xs);
	ret = 0;
out:
	free(buf);
	XXH64_freeState(xs);
	return ret;
}

/*
 * The file just opened against what its manifest promised, if it did:
 * 0 (a mismatch described as damage), or -1 (an error; a mismatch when
 * not tolerant).
 */
static int src_vet(struct rt_source *src, struct rt_error *err)
{
	const struct rt_promise *p = NULL;
	char why[160];
	uint64_t size, sum;
	struct stat st;

	src->vetted = true;
	for (unsigned int i = 0; i < src->nr_promises && !p; i++)
		if (!strcmp(src->promises[i].path, src->path))
			p = &src->promises[i];
	if (!p)
		return 0;
	if (fstat(src->fd, &st))
		return rt_fail(err, "%s: %s", src->path, strerror(errno));
	if ((uint64_t)st.st_size != p->size) {
		snprintf(why, sizeof(why), "has %llu bytes, its manifest says %" PRIu64,
			 (unsigned long long)st.st_size, p->size);
	} else if ((src->in_off || src->limit) &&
		   chunk_kind(src->fd) == CHUNK_KIND_PACKED) {
		return 0;	/* read from its index: frame by frame */
	} else {
		if (rt_file_xxh64(src->fd, &size, &sum))
			return rt_fail(err, "%s: %s", src->path, strerror(errno));
		if (size == p->size && sum == p->xxh64)
			return 0;
		snprintf(why, sizeof(why), "its XXH64 is %016" PRIx64 ", its manifest says %016" PRIx64,
			 sum, p->xxh64);
	}
	if (!src->tolerant)
		return rt_fail(err, "%s: %s", src->path, why);
	rt_msgs_add(src->damage, "%s: %s: its frames and packets are read, each checked as always",
		    src->path, why);
	return 0;
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += r;
	}
	return got;
}

/* @n bytes of @buf in front of what is left of src->pb. */
static int pb_prepend(struct rt_source *src, const uint8_t *buf, size_t n)
{
	size_t left = src->pb_len - src->pb_pos;

	/* The feeder's own bytes, given back as they were: step back over them. */
	if (src->pb_lent && n <= src->pb_pos &&
	    !memcmp(src->pb + src->pb_pos - n, buf, n)) {
		src->pb_pos -= n;
		return 0;
	}
	/* Anything else goes into a buffer of ours: a lent one is never written. */
	if (n > src->pb_pos || src->pb_lent) {
		if (n + left > src->pb_cap || src->pb_lent) {
			size_t cap = n + left > 2 * src->pb_cap ? n + left : 2 * src->pb_cap;
			uint8_t *pb = malloc(cap);

			if (!pb)
				return -1;
			if (left)
				memcpy(pb + n, src->pb + src->pb_pos, left);
			if (!src->pb_lent)
				free(src->pb);
			src->pb_lent = false;
			src->pb = pb;
			src->pb_cap = cap;
		} else if (left) {
			memmove(src->pb + n, src->pb + src->pb_pos, left);
		}
		src->moved += left;
		src->pb_len = n + left;
		src->pb_pos = n;
	}
	src->pb_pos -= n;
	memcpy(src->pb + src->pb_pos, buf, n);
	src->moved += n;
	return 0;
}

int rt_src_unread(struct rt_source *src, const uint8_t *buf, size_t n)
{
	if (!n)
		return 0;
	/* Read through: nothing before the new bytes to go back to. */
	if (src->pb_pos == src->pb_len)
		src->pb_pos = src->pb_len = 0;
	if (pb_prepend(src, buf, n))
		return -1;
	src->out_off -= n;
	return 0;
}

/*
 * Reading goes back over what it took last, most recent first: from the
 * file (plain: any byte it read is still there) or the frame being read
 * (zstd), and from the bytes handed back before, which come right before
 * the frame's first byte (src->pb is emptied when a frame is decoded).
 * Only bytes of earlier frames are copied (src->pb).  So resynchronising
 * costs what it reads, however often it hands bytes back.
 */
int rt_src_giveback(struct rt_source *src, const uint8_t *buf, size_t n)
{
	size_t k;

	if (src->pb_pos == src->pb_len && src->fd >= 0) {
		if (!src->zst) {
			if (lseek(src->fd, -(off_t)n, SEEK_CUR) < 0)
				return -1;
			src->out_off -= n;
			return 0;
		}
		k = n < src->frame_pos ? n : src->frame_pos;
		src->frame_pos -= k;
		src->out_off -= k;
		n -= k;
	}
	k = n < src->pb_pos ? n : src->pb_pos;
	src->pb_pos -= k;
	src->out_off -= k;
	n -= k;
	return rt_src_unread(src, buf, n);
}

/*
 * More compressed bytes: src->in keeps only the last @keep bytes it had,
 * in front, and src->in_pos goes back to 0.  How many bytes came, 0 at the
 * end of the file, -1 on error.
 */
static ssize_t zst_read_in(struct rt_source *src, size_t keep,
			   struct rt_error *err)
{
	size_t want;
	ssize_t r;

	if (keep > src->in_len)
		keep = src->in_len;
	memmove(src->in, src->in + src->in_len - keep, keep);
	src->in_off += src->in_len - keep;
	src->in_len = keep;
	src->in_pos = 0;
	if (src->eof)
		return 0;
	want = IN_BUF_SIZE - keep;
	if (src->limit && src->limit - (src->in_off + keep) < want)
		want = src->limit - (src->in_off + keep);
	if (!want) {
		src->eof = true;	/* at the limit */
		return 0;
	}
	r = read_full(src->fd, src->in + keep, want);
	if (r < 0)
		return rt_fail(err, "%s: %s", src->path, strerror(errno));
	if ((size_t)r < want)
		src->eof = true;
	src->in_len += (size_t)r;
	return r;
}

/*
 * The frame that started at src->frame_start is damage (@what): skip to
 * file offset @to, where a frame was found inside it, or (UINT64_MAX) to
 * the next frame magic after its first byte; and describe what was
 * skipped.  Decoding goes on from there (or the file ends).
 */
static int zst_skip_frame(struct rt_source *src, const char *what, uint64_t to,
			  struct rt_error *err)
{
	uint64_t from = src->frame_start;
	bool search = to == UINT64_MAX, at_end = false;

	if (search)
		to = from + 1;
	if (lseek(src->fd, (off_t)to, SEEK_SET) < 0)
		return rt_fail(err, "%s: %s", src->path, strerror(errno));
	src->in_off = to;
	src->in_len = src->in_pos = 0;
	src->eof = false;
	ZSTD_DCtx_reset(src->zds, ZSTD_reset_session_only);
	while (search) {
		const uint8_t *hit = memmem(src->in, src->in_len, zstd_magic,
					    sizeof(zstd_magic));
		ssize_t r;

		if (hit) {
			src->in_pos = (size_t)(hit - src->in);
			break;
		}
		/* Keep 3 bytes: the magic may straddle two reads. */
		r = zst_read_in(src, sizeof(zstd_magic) - 1, err);
		if (r < 0)
			return -1;
		if (r == 0) {
			src->in_pos = src->in_len;
			at_end = true;
			break;
		}
	}
	to = src->in_off + src->in_pos;
	src->frames_skipped++;
	rt_msgs_add(src->damage, "%s: zstd: %s in the frame at compressed offset %" PRIu64 ": skipped %" PRIu64 " compressed bytes, %s",
		    src->path, what, from, to - from,
		    at_end ? "to the end of the file" : "to the next frame");
	return 0;
}

/* Room for more of the frame: false when it would exceed FRAME_MAX. */
static int zst_grow_frame(struct rt_source *src, struct rt_error *err)
{
	size_t cap = src->frame_cap ? 2 * src->frame_cap : FRAME_FIRST;
	uint8_t *n;

	/* One byte more than FRAME_MAX tells a frame that is too big. */
	if (src->frame_cap == FRAME_MAX + 1)
		return 1;
	if (cap > FRAME_MAX + 1)
		cap = FRAME_MAX + 1;
	n = realloc(src->frame, cap);
	if (!n)
		return rt_fail(err, "%s: out of memory", src->path);
	src->frame = n;
	src->frame_cap = cap;
	return 0;
}

/*
 * Whether the frame starting at src->in_pos declares a size or a window
 * beyond FRAME_MAX: 1 (@what says so), 0, -1 on a read error.  Up to its
 * whole header is read first; anything the header does not tell is left to
 * libzstd.  Notes whether it carries a checksum (src->frame_checked).
 */
static int zst_frame_too_big(struct rt_source *src, char *what, size_t size,
			     struct rt_error *err)
{
	ZSTD_frameHeader h;

	if (src->in_len - src->in_pos < ZSTD_FRAMEHEADERSIZE_MAX &&
	    zst_read_in(src, src->in_len - src->in_pos, err) < 0)
		return -1;
	src->frame_checked = false;
	if (ZSTD_getFrameHeader(&h, src->in + src->in_pos,
				src->in_len - src->in_pos) ||
	    h.frameType != ZSTD_frame)
		return 0;
	src->frame_checked = h.checksumFlag;
	if (h.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN &&
	    h.frameContentSize > FRAME_MAX)
		snprintf(what, size, "declares %llu bytes, more than the %zu a frame holds",
			 h.frameContentSize, FRAME_MAX);
	else if (h.windowSize > FRAME_MAX)
		snprintf(what, size, "declares a window of %llu bytes, more than the %zu a frame holds",
			 h.windowSize, FRAME_MAX);
	else
		return 0;
	return 1;
}

/* @n bytes at file offset @at: 1, 0 when the file has fewer, -1 on error. */
static int zst_pread(struct rt_source *src, void *buf, size_t n, uint64_t at,
		     struct rt_error *err)
{
	errno = 0;
	if (!rt_pread_full(src->fd, buf, n, at))
		return 1;
	return errno ? rt_fail(err, "%s: %s", src->path, strerror(errno)) : 0;
}

/*
 * Whether a stored frame of ringtraced's starts at file offset @at of a
 * file of @size bytes: a whole stored-frame header (lib/chunk.c's), a
 * first block header that agrees with it, the frame within the file, and
 * its content the start of a packet (src->sig).  1, 0, -1 on a read error.
 */
static int zst_stored_at(struct rt_source *src, uint64_t at, uint64_t size,
			 struct rt_error *err)
{
	uint8_t h[CHUNK_STORED_FRAME_HEADER + 3 + RT_SIG_MAX];
	size_t want = CHUNK_STORED_FRAME_HEADER + 3 + src->siglen;
	uint32_t content, first, bh;
	int r;

	if (at > size || size - at < want)
		return 0;
	r = zst_pread(src, h, want, at, err);
	if (r <= 0)
		return r;
	if (!chunk_stored_header(h, &content) ||
	    chunk_stored_size(content) > size - at)
		return 0;
	/* One raw block, or the first of several (chunk_stored_iov()). */
	first = content < CHUNK_RAW_BLOCK_MAX ? content : CHUNK_RAW_BLOCK_MAX;
	bh = rt_get_le(h + CHUNK_STORED_FRAME_HEADER, 3);
	return bh == (first << 3 | (content <= CHUNK_RAW_BLOCK_MAX)) &&
	       content >= src->siglen &&
	       !memcmp(h + CHUNK_STORED_FRAME_HEADER + 3, src->sig, src->siglen);
}

/*
 * Whether a frame with a content checksum starts at file offset @at of a
 * file of @size bytes, its blocks -- walked, not decoded, at most as many
 * as FRAME_MAX bytes take -- and its checksum within the file.  1, 0, -1.
 */
static int zst_checked_at(struct rt_source *src, uint64_t at, uint64_t size,
			  struct rt_error *err)
{
	uint8_t h[ZSTD_FRAMEHEADERSIZE_MAX];
	ZSTD_frameHeader fh;
	uint64_t pos;
	int r;

	if (at >= size)
		return 0;
	r = zst_pread(src, h, size - at < sizeof(h) ? size - at : sizeof(h), at, err);
	if (r <= 0)
		return r;
	if (ZSTD_getFrameHeader(&fh, h, size - at < sizeof(h) ? size - at : sizeof(h)) ||
	    fh.frameType != ZSTD_frame || !fh.checksumFlag)
		return 0;
	pos = at + fh.headerSize;
	for (size_t i = 0; i <= FRAME_MAX / ZSTD_BLOCKSIZE_MAX; i++) {
		uint8_t b[3];
		uint32_t bh, len;

		if (pos > size || size - pos < sizeof(b))
			return 0;
		r = zst_pread(src, b, sizeof(b), pos, err);
		if (r <= 0)
			return r;
		bh = rt_get_le(b, 3);
		len = (bh >> 1 & 3) == 1 ? 1 : bh >> 3;	/* RLE: one byte */
		if ((bh >> 1 & 3) == 3 || bh >> 3 > ZSTD_BLOCKSIZE_MAX)
			return 0;
		pos += sizeof(b) + len;
		if (bh & 1)
			return pos <= size && size - pos >= 4;
	}
	return 0;
}

/*
 * Whether a frame starts inside the frame at src->frame_start, at a file
 * offset from @from on, before @to: 1 with *@at set, 0, -1 on error.  A
 * frame magic is no sign of one -- a stored frame's bytes are its
 * packet's, which a payload may give any value -- a stored frame of
 * ringtraced's is (zst_stored_at()), and, with @checked, a frame with a
 * checksum whose blocks fit in the file.
 */
static int zst_frame_inside(struct rt_source *src, uint64_t from, uint64_t to,
			    bool checked, uint64_t *at, struct rt_error *err)
{
	uint8_t buf[65536];
	struct stat st;

	if (fstat(src->fd, &st))
		return rt_fail(err, "%s: %s", src->path, strerror(errno));
	if (to > (uint64_t)st.st_size)
		to = (uint64_t)st.st_size;
	while (from < to) {
		/* The bytes of every magic that starts before @to. */
		uint64_t end = to + sizeof(zstd_magic) - 1;
		size_t want, i = 0;
		const uint8_t *hit;
		ssize_t n;

		if (end > (uint64_t)st.st_size)
			end = (uint64_t)st.st_size;
		want = end - from < sizeof(buf) ? (size_t)(end - from) : sizeof(buf);
		n = pread(src->fd, buf, want, (off_t)from);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rt_fail(err, "%s: %s", src->path, strerror(errno));
		if ((size_t)n < sizeof(zstd_magic))
			return 0;
		while ((hit = memmem(buf + i, (size_t)n - i, zstd_magic, sizeof(zstd_magic))) &&
		       from + (uint64_t)(hit - buf) < to) {
			uint64_t o = from + (uint64_t)(hit - buf);
			int r = zst_stored_at(src, o, (uint64_t)st.st_size, err);

			if (!r && checked)
				r = zst_checked_at(src, o, (uint64_t)st.st_size, err);
			if (r < 0)
				return -1;
			if (r) {
				*at = o;
				return 1;
			}
			i = (size_t)(hit - buf) + 1;
		}
		from += (uint64_t)n - (sizeof(zstd_magic) - 1);
	}
	return 0;
}

/*
 * Decodes the frame at src->in_pos, whole, into src->frame: 1 once libzstd
 * reached its end (and verified its checksum, if it has one); 0 when the
 * file ends first (a frame begun is noted); 2 for damage, @what saying
 * what, *@resume where a frame found inside it starts (else UINT64_MAX);
 * -1 on a read error.
 */
static int zst_decode_frame(struct rt_source *src, char *what, size_t size,
			    uint64_t *resume, struct rt_error *err)
{
	bool started = false;
	size_t ret;
	int r;

	*resume = UINT64_MAX;
	src->frame_len = src->frame_pos = 0;
	r = zst_frame_too_big(src, what, size, err);
	src->frame_start = src->in_off + src->in_pos;
	if (r)
		return r < 0 ? -1 : 2;
	do {
		ZSTD_outBuffer out;
		ZSTD_inBuffer in;

		if (src->in_pos == src->in_len) {
			ssize_t got = zst_read_in(src, 0, err);

			if (got < 0)
				return -1;
			if (got == 0 && started) {
				/*
				 * A killed writer's frame is the last thing in
				 * the file: no frame starts after it began
				 * (zst_frame_inside(): a stored one's bytes
				 * are not frames, whatever they hold).
				 */
				r = zst_frame_inside(src, src->frame_start + 1, UINT64_MAX,
						     src->frame_checked, resume, err);
				if (r < 0)
					return -1;
				if (r) {
					snprintf(what, size, "the file ends inside the frame, and another frame starts inside it, at compressed offset %" PRIu64,
						 *resume);
					return 2;
				}
				rt_msgs_add(src->notes, "%s: ends inside the zstd frame at compressed offset %" PRIu64 " (%" PRIu64 " bytes; writer killed?): dropped, it cannot be checked",
					    src->path, src->frame_start,
					    src->in_off + src->in_len - src->frame_start);
			}
			if (got == 0)
				return 0;
		}
		if (src->frame_len == src->frame_cap) {
			r = zst_grow_frame(src, err);
			if (r < 0)
				return -1;
			if (r) {
				snprintf(what, size, "more than the %zu bytes a frame holds",
					 FRAME_MAX);
				return 2;
			}
		}
		in = (ZSTD_inBuffer){ src->in, src->in_len, src->in_pos };
		out = (ZSTD_outBuffer){ src->frame, src->frame_cap, src->frame_len };
		ret = ZSTD_decompressStream(src->zds, &out, &in);
		started |= in.pos > src->in_pos;
		src->in_pos = in.pos;
		src->frame_len = out.pos;
		if (ZSTD_isError(ret)) {
			snprintf(what, size, "%s", ZSTD_getErrorName(ret));
			return 2;
		}
	} while (ret);
	/* A frame of no bytes (skippable: an index, a table, records) decodes nothing. */
	if (src->frame_len)
		src->frames++;
	return 1;
}

/*
 * The frame at the reading position from the frame cache (rtdecode.h,
 * rt_frame_cache_start()), its compressed bytes stepped over: true, or
 * false when the cache does not hold it (or is off).
 */
static bool zst_cached_frame(struct rt_source *src)
{
	uint64_t at = src->in_off + src->in_pos;
	const struct rt_cframe *f;

	if (!src->fkeyed || !(f = rt_fcache_find(&src->fkey, at)))
		return false;
	if (src->limit && at + f->clen > src->limit)
		return false;
	if (f->clen <= src->in_len - src->in_pos) {
		src->in_pos += f->clen;
	} else {
		/* Past what was read in: the file goes on (else it would be in). */
		if (lseek(src->fd, (off_t)(at + f->clen), SEEK_SET) < 0)
			return false;
		src->in_off = at + f->clen;
		src->in_len = src->in_pos = 0;
	}
	src->frame_start = at;
	src->frame_checked = true;
	src->frame_data = f->data;
	src->frame_len = f->len;
	src->frame_pos = 0;
	return true;
}

/*
 * The next frame with bytes, decoded and checked whole into src->frame (or
 * the frame cache's copy of it, src->frame_data either way): 1, or 0 at
 * the end of the file, -1 on an error (a damaged frame, unless tolerant:
 * then it is skipped and described).
 */
static int zst_next_frame(struct rt_source *src, struct rt_error *err)
{
	char what[160];
	uint64_t at;

	for (;;) {
		int r;

		if (zst_cached_frame(src))
			return 1;
		r = zst_decode_frame(src, what, sizeof(what), &at, err);
		src->frame_data = src->frame;

		if (r == 2 && !src->tolerant)
			return rt_fail(err, "%s: zstd: %s (frame at compressed offset %" PRIu64 ")",
				       src->path, what, src->frame_start);
		if (r == 2) {
			src->frame_len = 0;
			if (zst_skip_frame(src, what, at, err))
				return -1;
			continue;
		}
		if (r <= 0)
			return r;
		/* An empty or skippable frame: on to the next. */
		if (!src->frame_len)
			continue;
		if (src->frame_checked) {
			if (src->fkeyed)
				rt_fcache_add(&src->fkey, src->frame_start,
					      src->in_off + src->in_pos - src->frame_start,
					      src->frame, src->frame_len);
			return 1;
		}
		/*
		 * Nothing checks a stored frame's bytes: they are its
		 * packet's, and a payload may hold a frame magic.  What
		 * libzstd cannot see is a frame whose end is missing (cut
		 * short; its block size damaged alone fails its content size
		 * check): the bytes it lacks come from the frames after it,
		 * the next one's header swallowed.  So a stored frame of
		 * ringtraced's inside it (zst_frame_inside()) is the sign,
		 * and reading takes up there; anything else is handed up,
		 * for the packet checks to judge.
		 */
		r = zst_frame_inside(src, src->frame_start + 1,
				     src->in_off + src->in_pos, false, &at, err);
		if (r < 0)
			return -1;
		if (!r)
			return 1;
		snprintf(what, sizeof(what), "a stored frame starts inside it, at compressed offset %" PRIu64 " (it has no checksum): its end is missing",
			 at);
		if (!src->tolerant)
			return rt_fail(err, "%s: zstd: %s (frame at compressed offset %" PRIu64 ")",
				       src->path, what, src->frame_start);
		src->frame_len = 0;
		if (zst_skip_frame(src, what, at, err))
			return -1;
	}
}

ssize_t rt_src_read(struct rt_source *src, void *buf, size_t n,
		    struct rt_error *err)
{
	uint8_t *p = buf;
	size_t got = 0;

	if (!src->vetted && src->fd >= 0 && src_vet(src, err))
		return -1;
	while (got < n) {
		size_t k;

		if (src->pb_pos < src->pb_len) {
			k = src->pb_len - src->pb_pos;
			k = k < n - got ? k : n - got;
			memcpy(p + got, src->pb + src->pb_pos, k);
			src->pb_pos += k;
		} else if (src->fd < 0) {
			break;		/* fed (rt_stream_feed()): no more */
		} else if (!src->zst) {
			size_t want = n - got;
			ssize_t r;

			if (src->limit && src->limit - src->out_off - got < want)
				want = src->limit - src->out_off - got;
			r = read_full(src->fd, p + got, want);

			if (r < 0)
				return rt_fail(err, "%s: %s", src->path, strerror(errno));
			got += (size_t)r;
			break;		/* all of it, or the end of the file */
		} else {
			if (src->frame_pos == src->frame_len) {
				int r;

				/* What it held came before this frame's bytes. */
				src->pb_len = src->pb_pos = 0;
				r = zst_next_frame(src, err);

				if (r < 0)
					return -1;
				if (!r)
					break;
			}
			k = src->frame_len - src->frame_pos;
			k = k < n - got ? k : n - got;
			memcpy(p + got, src->frame_data + src->frame_pos, k);
			src->frame_pos += k;
		}
		got += k;
	}
	src->out_off += got;
	src->moved += got;
	return (ssize_t)got;
}

int rt_src_seek(struct rt_source *src, uint64_t coff, uint64_t uoff,
		uint64_t limit, struct rt_error *err)
{
	if (lseek(src->fd, (off_t)coff, SEEK_SET) < 0)
		return rt_fail(err, "%s: %s", src->path, strerror(errno));
	src->in_off = coff;
	src->out_off = uoff;
	src->limit = limit;
	return 0;
}

void rt_src_unlimit(struct rt_source *src)
{
	if (!src->limit)
		return;
	src->limit = 0;
	/* zst_read_in() stopped at the limit; what it kept is whole frames. */
	src->eof = false;
}
