// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced: one CPU's compressed output.
 *
 * Packets go verbatim into a zstd frame (streaming API, one compression
 * context per CPU).  Each packet is compressed with ZSTD_e_flush and its
 * compressed bytes are written before the caller gives the sub-buffer back
 * to the kernel, so at any instant:
 *
 *   - every packet the kernel counts as delivered is in the file as whole
 *     zstd blocks (a SIGKILL loses nothing the module did not count);
 *   - the file ends on a block boundary that is also a packet boundary,
 *     except for a write cut short by the kill itself (the decoder drops a
 *     trailing partial block or packet).
 *
 * The frame is ended (ZSTD_e_end) at every periodic flush, rotation and
 * stop, so files are plain concatenations of complete zstd frames whenever
 * the daemon is idle or gone cleanly; `zstd -d` reads them as they are.
 * It is also ended when the level changes (adapt.c), because zstd applies
 * a new level only to a new frame; that epilogue goes out in the same
 * write() as the next packet, so adapting costs no system call.
 *
 * At RT_LEVEL_STORE zstd is not called at all: each packet becomes a frame
 * of its own made of raw blocks, written with one writev() straight from
 * the mapping (stream_store_packet()), so the only copy is the kernel's
 * into the file.
 * The frame checksum is off on purpose: the error path below ends a frame
 * after dropping the blocks of a packet that could not be written, which a
 * content checksum would then reject.
 *
 * Files: cpu<N>.zst, or cpu<N>-<seq>.zst (seq from 000001) when rotating
 * by size or count.  Rotation ends the frame, fdatasync()s and closes the
 * file, opens the next one and removes the oldest beyond max_files.
 * Without numbered files a rotation (SIGHUP) reopens cpu<N>.zst for append,
 * which continues a file that is still there or starts a new one if
 * logrotate moved it away: concatenated frames are a valid zstd file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "ringtraced.h"

/* Output of one packet: big enough for ZSTD_e_flush to finish in one call. */
static uint8_t *obuf;
static size_t obuf_cap;

/*
 * A stored packet (RFC 8878, 3.1.1): the frame header -- magic, then a
 * descriptor saying Single_Segment with a 4-byte Frame_Content_Size and no
 * checksum or dictionary, then that size -- and blocks of at most 128 KiB,
 * each behind a 3-byte header (Last_Block, Block_Type 0 = raw, Block_Size).
 */
#define ZSTD_FRAME_MAGIC	0xFD2FB528U
#define STORE_DESCRIPTOR	0xA0	/* FCS_Field_Size 2 (4 bytes), Single_Segment */
#define STORE_FRAME_HEADER	9
#define RAW_BLOCK_MAX		(128U << 10)

static uint8_t (*block_headers)[3];
static struct iovec *store_iov;
static size_t store_blocks_max;

int stream_init(size_t max_packet)
{
	free(obuf);
	free(block_headers);
	free(store_iov);
	obuf_cap = ZSTD_compressBound(max_packet) + ZSTD_CStreamOutSize();
	obuf = malloc(obuf_cap);
	store_blocks_max = (max_packet + RAW_BLOCK_MAX - 1) / RAW_BLOCK_MAX;
	if (!store_blocks_max)
		store_blocks_max = 1;
	block_headers = calloc(store_blocks_max, sizeof(*block_headers));
	/* the end of a frame, the frame header, a header and data per block */
	store_iov = calloc(2 + 2 * store_blocks_max, sizeof(*store_iov));
	return obuf && block_headers && store_iov ? 0 : -ENOMEM;
}

static void stream_file_name(const struct stream *s, unsigned int seq,
			     char *name, size_t size)
{
	if (s->cfg->numbered)
		snprintf(name, size, "cpu%u-%06u.zst", s->cpu, seq);
	else
		snprintf(name, size, "cpu%u.zst", s->cpu);
}

/* Open the file for s->seq: new files are created, cpuN.zst is appended. */
static int stream_open_file(struct stream *s, bool excl)
{
	struct stat st;
	int fd;

	stream_file_name(s, s->seq, s->name, sizeof(s->name));
	fd = openat(s->dirfd, s->name,
		    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
		    (excl ? O_EXCL : 0), 0640);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	s->fd = fd;
	s->file_size = st.st_size;
	s->frame_open = false;
	return 0;
}

/* Map a zstd failure (allocation, bad parameter) to an errno, and say it. */
static int zstd_fail(struct stream *s, size_t code)
{
	warn("%s: zstd: %s", s->name, ZSTD_getErrorName(code));
	return ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation ?
	       -ENOMEM : -EPROTO;
}

int stream_open(struct stream *s, const struct stream_config *cfg, int dirfd,
		unsigned int cpu)
{
	ZSTD_CCtx *cctx;
	size_t r;
	int err;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->dirfd = dirfd;
	s->fd = -1;
	s->cpu = cpu;
	s->seq = 1;
	s->oldest = 1;
	s->level = cfg->level;
	s->lowest_level = cfg->level;
	stream_file_name(s, s->seq, s->name, sizeof(s->name));

	cctx = ZSTD_createCCtx();
	if (!cctx)
		return -ENOMEM;
	r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
	if (!ZSTD_isError(r) && cfg->level != RT_LEVEL_STORE)
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel,
					   cfg->level);
	if (ZSTD_isError(r)) {
		err = zstd_fail(s, r);
		ZSTD_freeCCtx(cctx);
		return err;
	}
	s->cctx = cctx;

	err = stream_open_file(s, true);
	if (err) {
		ZSTD_freeCCtx(cctx);
		s->cctx = NULL;
	}
	return err;
}

/* writev() all of it, or -errno with the file possibly extended in part. */
static int writev_all(int fd, struct iovec *iov, int cnt)
{
	ssize_t n;

	while (cnt) {
		n = writev(fd, iov, cnt < IOV_MAX ? cnt : IOV_MAX);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (; cnt && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= (ssize_t)iov->iov_len;
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Write the pending end of the frame a level change closed, if any. */
static int stream_write_tail(struct stream *s)
{
	int err;

	if (!s->tail_len)
		return 0;
	err = write_all(s->fd, s->tail, s->tail_len);
	if (err) {
		/* Back to whole blocks; decoders drop a partial one if not. */
		int cut = ftruncate(s->fd, s->file_size);

		(void)cut;
		return err;
	}
	s->file_size += (off_t)s->tail_len;
	s->bytes_out += s->tail_len;
	s->tail_len = 0;
	return 0;
}

/*
 * A write failed (ENOSPC, EIO, EFBIG...) somewhere in the bytes of the
 * packet that started at @good.  Cut the file back to @good, which is a
 * block boundary after a whole packet, then try to end the frame there: the
 * epilogue is one empty last block (3 bytes, no checksum), valid after any
 * block.  If the frame header itself was never written whole, there is no
 * frame to end.  The compressor then starts a fresh frame, should the
 * caller ever write again.  The blocks dropped here held one packet the
 * caller had not given back yet, so it stays in the kernel; what was
 * already handed back and is in the file stays decodable.
 */
static void stream_salvage(struct stream *s, off_t good)
{
	ZSTD_inBuffer in = { NULL, 0, 0 };
	ZSTD_outBuffer out;
	size_t left;

	if (ftruncate(s->fd, good) < 0) {
		/* Cannot cut: leave a partial block, which decoders drop. */
		goto reset;
	}
	s->file_size = good;
	if (s->tail_len) {
		/*
		 * The packet was the first of a new frame, after a level
		 * change: end the frame before it after all.  Best effort;
		 * the failed packet's bytes just freed room for 3 bytes.
		 */
		stream_write_tail(s);
		goto reset;
	}
	if (!s->frame_open)
		goto reset;
	/* Discard what the compressor still holds for the dropped packet. */
	do {
		out = (ZSTD_outBuffer){ obuf, obuf_cap, 0 };
		left = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_flush);
	} while (left && !ZSTD_isError(left));
	if (ZSTD_isError(left))
		goto reset;
	out = (ZSTD_outBuffer){ obuf, obuf_cap, 0 };
	left = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_end);
	if (left || write_all(s->fd, obuf, out.pos) < 0) {
		if (ftruncate(s->fd, good) < 0)
			goto reset;
	} else {
		s->file_size += (off_t)out.pos;
		s->bytes_out += out.pos;
	}
reset:
	s->tail_len = 0;
	ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
	s->frame_open = false;
}

/*
 * Compress the next packets at @level.  Single-threaded zstd (1.5.x) takes
 * a new level only at the start of a frame: one set mid-frame is accepted
 * and silently ignored (measured), so the open frame is ended first.
 */
int stream_set_level(struct stream *s, int level)
{
	ZSTD_inBuffer in = { NULL, 0, 0 };
	ZSTD_outBuffer out = { s->tail, sizeof(s->tail), 0 };
	size_t r;
	int err;

	if (level == s->level)
		return 0;
	if (s->frame_open) {
		/*
		 * After the last packet's ZSTD_e_flush this is one empty last
		 * block: 3 bytes without the checksum.  Kept for the next
		 * packet's write; the file meanwhile ends after whole blocks,
		 * as after any packet.
		 */
		r = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_end);
		if (ZSTD_isError(r))
			return zstd_fail(s, r);
		s->tail_len = out.pos;
		s->frame_open = false;
		if (r) {
			/* More than the tail holds (never seen): write it all. */
			s->frame_open = true;
			err = stream_write_tail(s);
			if (!err)
				err = stream_end_frame(s);
			if (err)
				return err;
		}
	}
	if (level != RT_LEVEL_STORE) {
		/* No frame is open: the level applies from the next packet. */
		r = ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel,
					   level);
		if (ZSTD_isError(r))
			return zstd_fail(s, r);
	}
	s->level = level;
	return 0;
}

/* A packet of @len bytes is in the file, @done bytes with what preceded it. */
static void stream_account(struct stream *s, size_t len, size_t done)
{
	s->tail_len = 0;
	s->file_size += (off_t)done;
	s->bytes_out += done;
	s->bytes_in += len;
	s->packets++;
	if (s->level < s->cfg->level) {
		s->packets_faster++;
		if (s->level < s->lowest_level)
			s->lowest_level = s->level;
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* RT_LEVEL_STORE: one frame of raw blocks, one writev(), no copy here. */
static int stream_store_packet(struct stream *s, const uint8_t *data,
			       size_t len, off_t start)
{
	uint8_t frame[STORE_FRAME_HEADER];
	size_t off = 0, chunk, done = s->tail_len + sizeof(frame);
	struct iovec *iov = store_iov;
	unsigned int b = 0;
	uint32_t bh;
	int err;

	if (len > store_blocks_max * RAW_BLOCK_MAX || len > UINT32_MAX) {
		err = -EMSGSIZE;	/* larger than stream_init() was told */
		goto salvage;
	}
	if (s->tail_len)
		*iov++ = (struct iovec){ s->tail, s->tail_len };
	/* Little endian, whatever the host. */
	put_le32(frame, ZSTD_FRAME_MAGIC);
	frame[4] = STORE_DESCRIPTOR;
	put_le32(frame + 5, (uint32_t)len);
	*iov++ = (struct iovec){ frame, sizeof(frame) };
	/* At least one block: an empty packet is one empty last block. */
	do {
		chunk = len - off < RAW_BLOCK_MAX ? len - off : RAW_BLOCK_MAX;
		bh = (uint32_t)chunk << 3 | (off + chunk == len);
		block_headers[b][0] = (uint8_t)bh;
		block_headers[b][1] = (uint8_t)(bh >> 8);
		block_headers[b][2] = (uint8_t)(bh >> 16);
		*iov++ = (struct iovec){ block_headers[b], 3 };
		if (chunk)
			*iov++ = (struct iovec){ (void *)(data + off), chunk };
		done += 3 + chunk;
		off += chunk;
		b++;
	} while (off < len);
	err = writev_all(s->fd, store_iov, (int)(iov - store_iov));
	if (err)
		goto salvage;
	stream_account(s, len, done);
	return 0;

salvage:
	s->packets_unsaved++;
	stream_salvage(s, start);
	return err;
}

int stream_packet(struct stream *s, const void *data, size_t len)
{
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer out = { obuf, obuf_cap, 0 };
	off_t start = s->file_size;
	size_t left, done = 0;
	int err;

	if (s->cfg->numbered && s->cfg->max_size &&
	    (uint64_t)s->file_size >= s->cfg->max_size) {
		err = stream_rotate(s);
		if (err)
			return err;
		start = s->file_size;
	}
	if (s->level == RT_LEVEL_STORE)
		return stream_store_packet(s, data, len, start);
	/* The end of the previous frame, if a level change closed it. */
	memcpy(obuf, s->tail, s->tail_len);
	out.pos = s->tail_len;

	/*
	 * On return every byte of @data has been read (consumed into the
	 * compressor's window or emitted): the caller may PUT the sub-buffer.
	 */
	for (;;) {
		left = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_flush);
		if (ZSTD_isError(left)) {
			err = zstd_fail(s, left);
			goto salvage;
		}
		if (!left)
			break;
		/* Output buffer full (never with the size from stream_init). */
		err = write_all(s->fd, obuf, out.pos);
		if (err)
			goto salvage;
		done += out.pos;
		out.pos = 0;
	}
	err = write_all(s->fd, obuf, out.pos);
	if (err)
		goto salvage;
	done += out.pos;

	stream_account(s, len, done);
	s->frame_open = true;
	return 0;

salvage:
	s->packets_unsaved++;
	stream_salvage(s, start);
	return err;
}

int stream_end_frame(struct stream *s)
{
	ZSTD_inBuffer in = { NULL, 0, 0 };
	ZSTD_outBuffer out;
	off_t start = s->file_size;
	size_t left, done = 0;
	int err = 0;

	if (!s->frame_open)
		return stream_write_tail(s);
	do {
		out = (ZSTD_outBuffer){ obuf, obuf_cap, 0 };
		left = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_end);
		if (ZSTD_isError(left)) {
			err = zstd_fail(s, left);
			break;
		}
		err = write_all(s->fd, obuf, out.pos);
		if (err)
			break;
		done += out.pos;
	} while (left);
	if (err) {
		/* The frame stays unterminated after its last whole packet. */
		if (ftruncate(s->fd, start) == 0)
			s->file_size = start;
		ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
		s->frame_open = false;
		return err;
	}
	s->file_size += (off_t)done;
	s->bytes_out += done;
	s->frame_open = false;
	return 0;
}

/*
 * A file is never left empty when it is finished: a CPU that recorded
 * nothing gets one empty frame, so that `zstd -d` (which rejects a 0-byte
 * input) gives an empty stream file, which babeltrace2 skips.
 */
static int stream_finish_frame(struct stream *s)
{
	ZSTD_inBuffer in = { NULL, 0, 0 };
	ZSTD_outBuffer out = { obuf, obuf_cap, 0 };
	size_t left;
	int err;

	if (s->frame_open || s->tail_len || s->file_size)
		return stream_end_frame(s);
	left = ZSTD_compressStream2(s->cctx, &out, &in, ZSTD_e_end);
	if (ZSTD_isError(left) || left) {
		ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
		return ZSTD_isError(left) ? zstd_fail(s, left) : -EPROTO;
	}
	err = write_all(s->fd, obuf, out.pos);
	if (err) {
		if (ftruncate(s->fd, 0) == 0)
			s->file_size = 0;
		return err;
	}
	s->file_size += (off_t)out.pos;
	s->bytes_out += out.pos;
	return 0;
}

int stream_sync(struct stream *s)
{
	int err = stream_finish_frame(s);

	if (err)
		return err;
	return fdatasync(s->fd) < 0 ? -errno : 0;
}

/* Remove the oldest numbered files beyond max_files. */
static void stream_prune(struct stream *s)
{
	char name[64];

	while (s->cfg->max_files && s->seq - s->oldest + 1 > s->cfg->max_files) {
		stream_file_name(s, s->oldest, name, sizeof(name));
		if (unlinkat(s->dirfd, name, 0) < 0 && errno != ENOENT)
			warn("%s: cannot remove: %s", name, strerror(errno));
		s->oldest++;
	}
}

int stream_rotate(struct stream *s)
{
	int err = stream_sync(s);

	if (err)
		return err;
	close(s->fd);
	s->fd = -1;
	if (s->cfg->numbered)
		s->seq++;
	err = stream_open_file(s, s->cfg->numbered);
	if (err)
		return err;
	stream_prune(s);
	/* The new name and the removals survive a crash once this returns. */
	return fsync(s->dirfd) < 0 ? -errno : 0;
}

void stream_close(struct stream *s)
{
	if (s->fd >= 0) {
		stream_finish_frame(s);
		close(s->fd);
	}
	s->fd = -1;
	ZSTD_freeCCtx(s->cctx);
	s->cctx = NULL;
}
