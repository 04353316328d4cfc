// SPDX-License-Identifier: GPL-2.0
/*
 * Where a stream file's frames start and the times they hold: what lets a
 * reader asked for a time window (report --begin/--end) decode only the
 * frames that can hold it.
 *
 * A packed chunk carries its own index as its last, skippable frame
 * (lib/chunk_index.h, written by the packer).  It is untrusted: parsed
 * against the file's size and its checksum, and each entry a reader seeks
 * to is checked against the frame there (rt_index_check()) -- a bad one is
 * ignored with a note and the file read whole.
 *
 * A file without an index gets one built here, in memory only, never
 * written back: a reader may be reading a copy it does not own, a chunk
 * ringtraced is still writing, or a set a shipper is moving, and the
 * packer writes the index anyway once the chunk is closed.  Building one
 * reads no event:
 *   - a zstd file: its frame and block headers are walked (a pread of 3
 *     bytes a block) and the first packet header of each frame decoded
 *     (one block).  A frame's end time is then the next frame's start
 *     (packets never go back in time), the last one's unknown.  A frame
 *     that does not start with a packet (a file compressed by hand, packets
 *     across frames) or whose size is not in its header: no index.
 *   - a plain file (`ringtrace unpack`, `zstd -d`): its packet headers are
 *     hopped, one pread of a header per packet.  Packets are of any length,
 *     so there is no offset to bisect on without reading headers, and a
 *     search for the next packet's signature could be fooled by an event's
 *     payload: a header walk is exact and reads 88 bytes a packet.
 *
 * What a hostile file can make this allocate is bounded: an index frame
 * that claims more than INDEX_MAX_ENTRIES entries is ignored before a
 * byte is allocated for it, a built index stops there (the file is read
 * whole), and a build holds one decompression context and one probe
 * buffer, made once: a stored frame's first packet header is read as it
 * lies in the file (a raw block), a packed one's decoded from the start
 * of the frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_getFrameHeader() */
#include <zstd.h>

#include <linux/ringtrace.h>
#include "internal.h"

#define HDR_SIZE	sizeof(struct ringtrace_packet_header)
#define PROBE_IN	(64 * 1024)
/*
 * Frames a chunk's index may have: 1 TiB of packets in the packer's 4 MiB
 * frames, a stored chunk of 262144 packets; 8 MiB of entries.
 */
#define INDEX_MAX_ENTRIES	(1U << 18)
#define INDEX_MAX_BYTES		(CHUNK_INDEX_HEADER + (uint64_t)INDEX_MAX_ENTRIES * \
				 CHUNK_INDEX_ENTRY + CHUNK_INDEX_FOOTER)
/*
 * A thread table's frame, at most: a record per frame of the largest
 * index and the facts of a state dump of a million threads, with room to
 * spare.  A footer that claims more is not believed before anything is
 * allocated for it: the frames are decoded instead (rt_table_get()).
 */
#define TABLE_MAX_BYTES		(64ULL << 20)

int rt_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (uint8_t *)buf + got, n - got,
				  (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static uint64_t hdr_u64(const uint8_t *h, size_t at)
{
	return rt_get_le(h + at, 8);
}

#define HDR_FIELD(h, f) \
	rt_get_le((h) + offsetof(struct ringtrace_packet_header, f), \
		  sizeof(((struct ringtrace_packet_header *)0)->f))

/* A packet header as ringtrace.ko writes one: magic and sizes. */
static bool header_ok(const uint8_t *h)
{
	uint64_t csize = HDR_FIELD(h, content_size);

	return HDR_FIELD(h, magic) == RINGTRACE_CTF_MAGIC && !(csize % 8) &&
	       csize >= HDR_SIZE * 8 &&
	       csize <= (uint64_t)RINGTRACE_MAX_SUBBUF_SIZE * 8 &&
	       HDR_FIELD(h, timestamp_end) >= HDR_FIELD(h, timestamp_begin);
}

/* What reading first packet headers needs, made once for many: probe_free(). */
struct probe {
	ZSTD_DCtx *z;
	uint8_t *in;
};

static void probe_free(struct probe *p)
{
	free(p->in);
	ZSTD_freeDCtx(p->z);
}

/*
 * The first packet header of the frame at @off (zstd) or the packet at
 * @off (plain) into @hdr: 0, or -1 when there is none.  A stored frame
 * (one raw block first) is read as it lies; anything else is decoded.
 */
static int first_header(int fd, bool zst, uint64_t off, uint8_t *hdr,
			struct probe *p)
{
	uint8_t h[ZSTD_FRAMEHEADERSIZE_MAX + 3];
	size_t left = 1, hlen;
	ZSTD_outBuffer out = { hdr, HDR_SIZE, 0 };
	ZSTD_frameHeader fh;
	ssize_t n;

	if (!zst)
		return rt_pread_full(fd, hdr, HDR_SIZE, off) || !header_ok(hdr) ? -1 : 0;
	do
		n = pread(fd, h, sizeof(h), (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n <= 0 || ZSTD_getFrameHeader(&fh, h, (size_t)n) ||
	    fh.frameType != ZSTD_frame)
		return -1;
	hlen = fh.headerSize;
	if ((size_t)n >= hlen + 3 && ((h[hlen] >> 1) & 3) == 0 &&
	    (h[hlen] >> 3 | h[hlen + 1] << 5 | (uint32_t)h[hlen + 2] << 13) >= HDR_SIZE)
		/* A raw block that holds the whole header. */
		return rt_pread_full(fd, hdr, HDR_SIZE, off + hlen + 3) ||
		       !header_ok(hdr) ? -1 : 0;
	if (!p->z && !(p->z = ZSTD_createDCtx()))
		return -1;
	if (!p->in && !(p->in = malloc(PROBE_IN)))
		return -1;
	ZSTD_DCtx_reset(p->z, ZSTD_reset_session_only);
	while (out.pos < out.size && left) {
		ZSTD_inBuffer ib;

		do
			n = pread(fd, p->in, PROBE_IN, (off_t)off);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			break;
		ib = (ZSTD_inBuffer){ p->in, (size_t)n, 0 };
		while (ib.pos < ib.size && out.pos < out.size && left) {
			left = ZSTD_decompressStream(p->z, &out, &ib);
			if (ZSTD_isError(left))
				return -1;
		}
		off += ib.pos;
	}
	return out.pos == out.size && header_ok(hdr) ? 0 : -1;
}

/* The zstd frame at @off: its size in the file, its content size. */
static int frame_sizes(int fd, uint64_t off, uint64_t file_size,
		       uint64_t *fsize, uint64_t *content, bool *skippable)
{
	uint8_t h[ZSTD_FRAMEHEADERSIZE_MAX];
	size_t hlen = file_size - off < sizeof(h) ? (size_t)(file_size - off) : sizeof(h);
	ZSTD_frameHeader fh;
	uint64_t pos;

	if (rt_pread_full(fd, h, hlen, off) || ZSTD_getFrameHeader(&fh, h, hlen))
		return -1;
	*skippable = fh.frameType == ZSTD_skippableFrame;
	if (*skippable) {
		/* Its 8-byte header (libzstd may say headerSize 0 for it). */
		*fsize = 8 + fh.frameContentSize;
		*content = 0;
		return *fsize <= file_size - off ? 0 : -1;
	}
	if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ||
	    fh.frameContentSize == ZSTD_CONTENTSIZE_ERROR)
		return -1;
	for (pos = off + fh.headerSize;;) {
		uint8_t b[3];
		uint32_t bh, type, bsize;

		if (file_size - pos < 3 || rt_pread_full(fd, b, 3, pos))
			return -1;
		bh = b[0] | b[1] << 8 | (uint32_t)b[2] << 16;
		type = (bh >> 1) & 3;
		bsize = bh >> 3;
		if (type == 3)
			return -1;
		pos += 3 + (type == 1 ? 1 : bsize);
		if (pos > file_size)
			return -1;
		if (bh & 1)
			break;
	}
	pos += fh.checksumFlag ? 4 : 0;
	if (pos > file_size)
		return -1;
	*fsize = pos - off;
	*content = fh.frameContentSize;
	return 0;
}

/*
 * A frame (packet) that starts before the one before it ends is a damaged
 * header: no index, the file is read whole (and the reading says what is
 * damaged) rather than from where a damaged time says.
 */
static int add(struct chunk_index *ix, uint64_t coff, uint64_t uoff,
	       uint64_t begin, uint64_t end)
{
	struct chunk_index_entry e = { coff, uoff, begin, end };

	if (ix->n && (begin < ix->e[ix->n - 1].ts_begin ||
		      begin < ix->e[ix->n - 1].ts_end))
		return -1;
	return chunk_index_add(ix, &e);
}

/* An index of the zstd file @fd, frame by frame. */
static int build_zst(int fd, uint64_t size, struct chunk_index *ix)
{
	uint64_t off = 0, uoff = 0, fsize, content;
	struct probe p = { 0 };
	uint8_t hdr[HDR_SIZE];
	bool skippable;
	int ret = -1;

	while (off < size) {
		if (frame_sizes(fd, off, size, &fsize, &content, &skippable))
			goto out;
		if (content) {
			if (ix->n == INDEX_MAX_ENTRIES ||
			    first_header(fd, true, off, hdr, &p))
				goto out;
			if (ix->n)
				ix->e[ix->n - 1].ts_end = HDR_FIELD(hdr, timestamp_begin);
			if (add(ix, off, uoff, HDR_FIELD(hdr, timestamp_begin), UINT64_MAX))
				goto out;
		}
		off += fsize;
		uoff += content;
	}
	ix->data_bytes = size;
	ix->content_bytes = uoff;
	ret = 0;
out:
	probe_free(&p);
	return ret;
}

/* An index of the plain file @fd, packet by packet. */
static int build_plain(int fd, uint64_t size, struct chunk_index *ix)
{
	uint8_t hdr[HDR_SIZE];
	uint64_t off = 0;

	while (off < size) {
		uint64_t len;

		if (size - off < HDR_SIZE || ix->n == INDEX_MAX_ENTRIES ||
		    first_header(fd, false, off, hdr, NULL))
			return -1;
		len = HDR_FIELD(hdr, content_size) / 8;
		if (len > size - off ||
		    add(ix, off, off, HDR_FIELD(hdr, timestamp_begin),
			HDR_FIELD(hdr, timestamp_end)))
			return -1;
		off += len;
	}
	ix->data_bytes = ix->content_bytes = size;
	return 0;
}

/*
 * The frame of ours that ends at @end of @fd (the index, or the thread
 * table before it), measured by its footer of @fsize bytes: into *@buf
 * (malloc()ed) and *@len.  1 none there, 0, -1 bad (said in @why).
 * Whatever a footer claims, nothing beyond @max is allocated.
 */
static int read_before(int fd, uint64_t end, size_t fsize,
		       uint64_t (*frame_size)(const uint8_t *, uint64_t),
		       uint64_t max, const char *what, uint8_t **buf,
		       uint64_t *len, char *why, size_t wsize)
{
	uint8_t foot[CHUNK_INDEX_FOOTER > CHUNK_TABLE_FOOTER ?
		     CHUNK_INDEX_FOOTER : CHUNK_TABLE_FOOTER];

	if (end < fsize || rt_pread_full(fd, foot, fsize, end - fsize))
		return 1;
	*len = frame_size(foot, end);
	if (!*len)
		return 1;
	if (*len > max) {
		snprintf(why, wsize, "%s claims %" PRIu64 " bytes, more than %" PRIu64,
			 what, *len, max);
		return -1;
	}
	*buf = malloc(*len);
	if (!*buf || rt_pread_full(fd, *buf, *len, end - *len)) {
		free(*buf);
		snprintf(why, wsize, "cannot be read");
		return -1;
	}
	return 0;
}

/* The index frame at the end of the zstd file @fd: 1 none, 0, -1 bad. */
static int read_own(int fd, uint64_t size, struct chunk_index *ix, char *why,
		    size_t wsize)
{
	uint8_t *buf;
	uint64_t len;
	int r;

	r = read_before(fd, size, CHUNK_INDEX_FOOTER, chunk_index_frame_size,
			INDEX_MAX_BYTES, "it", &buf, &len, why, wsize);
	if (r)
		return r;
	r = chunk_index_parse(buf, len, size, ix, why, wsize);
	free(buf);
	return r;
}

int rt_index_get(int fd, bool zst, struct chunk_index *ix, bool *own,
		 char *why, size_t size)
{
	struct stat st;
	int r = 1;

	memset(ix, 0, sizeof(*ix));
	*own = false;
	*why = '\0';
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -1;
	if (zst) {
		r = read_own(fd, (uint64_t)st.st_size, ix, why, size);
		*own = !r;
		if (!r)
			return 0;
	}
	/* No index, or a bad one (said in @why): one of our own. */
	if (!(zst ? build_zst : build_plain)(fd, (uint64_t)st.st_size, ix) && ix->n)
		return 0;
	chunk_index_free(ix);
	return -1;
}

int rt_index_check(int fd, bool zst, const struct chunk_index_entry *e)
{
	struct probe p = { 0 };
	uint8_t hdr[HDR_SIZE];
	int r = first_header(fd, zst, e->coff, hdr, &p);

	probe_free(&p);
	return r ||
	       hdr_u64(hdr, offsetof(struct ringtrace_packet_header, timestamp_begin)) !=
	       e->ts_begin ? -1 : 0;
}

int rt_file_first_ts(const char *path, uint64_t *ts)
{
	bool zst = rt_is_zst(path);
	struct probe p = { 0 };
	uint8_t hdr[HDR_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = first_header(fd, zst, 0, hdr, &p);
	probe_free(&p);
	close(fd);
	if (!r)
		*ts = HDR_FIELD(hdr, timestamp_begin);
	return r;
}

int rt_table_get(int fd, const struct chunk_index *ix, struct chunk_table *t,
		 char *why, size_t size)
{
	uint8_t *buf;
	uint64_t len;
	int r;

	memset(t, 0, sizeof(*t));
	if (ix->data_bytes < CHUNK_INDEX_HEADER + CHUNK_TABLE_FOOTER)
		return 1;
	r = read_before(fd, ix->data_bytes, CHUNK_TABLE_FOOTER,
			chunk_table_frame_size, TABLE_MAX_BYTES,
			"its thread table", &buf, &len, why, size);
	if (r)
		return r;
	r = chunk_table_parse(buf, len, ix, t, why, size);
	free(buf);
	return r;
}

int rt_sched_get(int fd, const struct chunk_index *ix, struct chunk_sched *s,
		 char *why, size_t size)
{
	uint8_t foot[CHUNK_TABLE_FOOTER];
	uint64_t end = ix->data_bytes, len;
	uint8_t *buf;
	int r;

	memset(s, 0, sizeof(*s));
	/* In front of the thread table, if there is one. */
	if (end >= CHUNK_TABLE_FOOTER &&
	    !rt_pread_full(fd, foot, CHUNK_TABLE_FOOTER, end - CHUNK_TABLE_FOOTER))
		end -= chunk_table_frame_size(foot, end);
	if (end < CHUNK_INDEX_HEADER + CHUNK_SCHED_FOOTER)
		return 1;
	r = read_before(fd, end, CHUNK_SCHED_FOOTER, chunk_sched_frame_size, TABLE_MAX_BYTES,
			"its scheduler records", &buf, &len, why, size);
	if (r)
		return r;
	r = chunk_sched_parse(buf, len, ix, s, why, size);
	free(buf);
	return r;
}

int rt_file_sched(const char *path, struct chunk_sched *s, struct chunk_index *out,
		  char *why, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct chunk_index ix;
	bool own;
	int r = 1;

	memset(s, 0, sizeof(*s));
	if (out)
		memset(out, 0, sizeof(*out));
	*why = '\0';
	if (fd < 0) {
		snprintf(why, size, "%s", strerror(errno));
		return -1;
	}
	if (rt_is_zst(path) && !rt_index_get(fd, true, &ix, &own, why, size)) {
		if (own)
			r = rt_sched_get(fd, &ix, s, why, size);
		if (!r && out)
			*out = ix;
		else
			chunk_index_free(&ix);
	}
	close(fd);
	return r;
}

int rt_index_first_packet(int fd, bool zst, uint64_t coff,
			  struct rt_packet_info *pi)
{
	struct probe p = { 0 };
	uint8_t hdr[HDR_SIZE];
	int r = first_header(fd, zst, coff, hdr, &p);

	probe_free(&p);
	if (r)
		return -1;
	memset(pi, 0, sizeof(*pi));
	pi->timestamp_begin = HDR_FIELD(hdr, timestamp_begin);
	pi->timestamp_end = HDR_FIELD(hdr, timestamp_end);
	pi->seq = HDR_FIELD(hdr, packet_seq_num);
	pi->events_discarded = HDR_FIELD(hdr, events_discarded);
	pi->cpu = (uint32_t)HDR_FIELD(hdr, cpu_id);
	return 0;
}
