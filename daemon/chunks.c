// SPDX-License-Identifier: GPL-2.0
/*
 * One CPU's chunk files, written by that CPU's drain thread (drain.c).
 *
 * Every packet becomes one stored zstd frame (lib/chunk.c) appended to the
 * current chunk before the sub-buffer goes back to the kernel: with one
 * pwritev() from the kernel's mapping, or with --splice, where the module
 * offers it (RINGTRACE_FEATURE_SPLICE), spliced from the held packet's
 * pages through a pipe (its headers written into the pipe, the pipe
 * spliced into the chunk).  Either way the page cache gets one copy of
 * each byte; splice saves the read through the user mapping but costs
 * more on 6.12 and 6.12-rt (Documentation/ringtrace/benchmarks.rst), so
 * it is not the default.  So at
 * any instant:
 *
 *   - every packet the kernel counts as delivered is in a chunk as a whole
 *     frame (a SIGKILL loses nothing the module did not count);
 *   - a chunk ends on a frame boundary, except for a write cut short by a
 *     kill itself (the readers drop a trailing partial frame).
 *
 * A chunk closes when the next packet might not fit under --max-size, when
 * it has held packets for --chunk-time, at SIGHUP and at stop.  Closing is
 * cheap by design, because it happens between a PUT and the next GET:
 * the fd goes to the syncer (which fdatasync()s and closes it in its next
 * round), the chunk to the packers' queue (packer.c), and the next chunk is
 * created.  Nothing here waits for a disk sync or for a packer.
 *
 * --max-files is applied once a new chunk holds its first packet, after
 * that packet's PUT: the oldest chunks of the CPU beyond the limit are
 * removed, the new one counted (packer.c decides, under its lock, what a
 * packer still holds).  Not when the chunk is created: a recording that
 * stops before a packet reaches it removes it again, and the chunk pruned
 * for it would be gone for nothing.
 *
 * With --on-chunk a CPU never closes a chunk on its own: a rotation closes
 * every CPU's chunk together, so that chunk k of every CPU is set k
 * (handoff.c).  A full or old chunk asks main for one (drain.c) and keeps
 * taking packets until its request arrives, a few packets at most.  The
 * facts of each chunk's packets (timestamps, events, losses: read from
 * the packet header the kernel wrote, never from its events) go to the
 * set's manifest when it closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringtraced.h"

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

double thread_cpu_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double pthread_cpu_s(pthread_t t)
{
	struct timespec ts;
	clockid_t clk;

	if (pthread_getcpuclockid(t, &clk) || clock_gettime(clk, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * pwritev() all of it at @off, or -errno with the file possibly extended
 * in part.
 */
static int pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	ssize_t n;

	while (cnt) {
		n = pwritev(fd, iov, cnt < IOV_MAX ? cnt : IOV_MAX, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (uint64_t)n;
		for (; cnt && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= (ssize_t)iov->iov_len;
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* The pipe's bytes into the chunk at *@at, all of them, or -errno. */
static int pipe_out(struct chunk_writer *w, uint64_t *at)
{
	loff_t off;
	ssize_t n;

	while (w->pipe_bytes) {
		off = (loff_t)*at;
		n = splice(w->pipe[0], NULL, w->fd, &off, w->pipe_bytes, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		*at += (uint64_t)n;
		w->pipe_bytes -= (size_t)n;
	}
	w->pipe_free = w->pipe_slots;
	return 0;
}

/*
 * Into the pipe: @len bytes of the held packet at mapping offset @src,
 * as page buffers of the module (a slot per page), as many as fit.
 */
static ssize_t pipe_in_packet(struct chunk_writer *w, uint64_t src, size_t len)
{
	size_t lead = (size_t)(src % w->page);
	size_t room = (size_t)w->pipe_free * w->page;
	loff_t off = (loff_t)src;
	ssize_t n;

	if (room <= lead)
		return -EAGAIN;
	if (len > room - lead)
		len = room - lead;
	n = splice(w->src_fd, &off, w->pipe[1], NULL, len, 0);
	if (n <= 0)
		return n ? -errno : -EIO;
	w->pipe_free -= (unsigned int)((lead + (size_t)n + w->page - 1) /
				       w->page);
	w->pipe_bytes += (size_t)n;
	return n;
}

/* Into the pipe: the frame's headers, @len bytes copied (one slot). */
static ssize_t pipe_in_bytes(struct chunk_writer *w, const void *p, size_t len)
{
	ssize_t n;

	if (!w->pipe_free)
		return -EAGAIN;
	n = write(w->pipe[1], p, len);
	if (n <= 0)
		return n ? -errno : -EIO;
	w->pipe_free--;
	w->pipe_bytes += (size_t)n;
	return n;
}

/*
 * One stored frame through the pipe: the headers written into it, the
 * data (@iov's pieces in the mapping) spliced from the held packet's
 * pages, and the pipe spliced into the chunk whenever the next piece does
 * not fit, and at the end.  Consecutive headers go in one write.
 */
static int splice_frame(struct chunk_writer *w, const struct iovec *iov,
			unsigned int cnt)
{
	const uint8_t *map = w->src_map;
	uint64_t at = w->size;
	uint8_t hdr[64];
	unsigned int i = 0;
	size_t done = 0;
	ssize_t n;
	int err;

	while (i < cnt) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (p >= map && p + len <= map + w->src_len) {
			n = pipe_in_packet(w, (uint64_t)(p - map) + done,
					   len - done);
		} else {
			size_t h = 0;
			unsigned int k;

			for (k = i; k < cnt && h + iov[k].iov_len <= sizeof(hdr); k++) {
				p = iov[k].iov_base;
				if (p >= map && p < map + w->src_len)
					break;
				memcpy(hdr + h, p, iov[k].iov_len);
				h += iov[k].iov_len;
			}
			n = pipe_in_bytes(w, hdr, h);
			if (n > 0 && (size_t)n == h) {
				i = k;
				continue;
			}
			if (n > 0)	/* a pipe takes a small write whole */
				return -EIO;
		}
		if (n == -EAGAIN || n == -EINTR) {
			err = n == -EAGAIN ? pipe_out(w, &at) : 0;
			if (err)
				return err;
			continue;
		}
		if (n < 0)
			return (int)n;
		done += (size_t)n;
		if (done == len) {
			i++;
			done = 0;
		}
	}
	return pipe_out(w, &at);
}

/*
 * Splice from @src's held packets when the user said --splice and the
 * module offers it: a pipe of up to a packet's pages (what the
 * system lets us have; a larger packet goes through it in parts).
 */
int chunks_source(struct chunk_writer *w, const struct rt_buffer *src)
{
	long page = sysconf(_SC_PAGESIZE);
	int size;

	w->pipe[0] = w->pipe[1] = -1;
	if (!opt.splice || !buffer_can_splice(src))
		return 0;
	if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	/* A page per slot; the headers need a few more. */
	size = fcntl(w->pipe[1], F_SETPIPE_SZ,
		     (int)(w->max_packet + 16 * (size_t)page));
	if (size < 0)
		size = fcntl(w->pipe[1], F_GETPIPE_SZ);
	if (size < 2 * page) {
		chunks_unsource(w);
		return size < 0 ? -errno : -ENOSPC;
	}
	w->page = (size_t)page;
	w->pipe_slots = (unsigned int)(size / page);
	w->pipe_free = w->pipe_slots;
	w->pipe_bytes = 0;
	w->src_fd = src->fd;
	w->src_map = src->map;
	w->src_len = src->map_len;
	return 0;
}

void chunks_unsource(struct chunk_writer *w)
{
	if (w->pipe[0] >= 0)
		close(w->pipe[0]);
	if (w->pipe[1] >= 0)
		close(w->pipe[1]);
	w->pipe[0] = w->pipe[1] = -1;
	w->src_map = NULL;
}

/* The oldest chunks beyond --max-files leave the table and the disk. */
static void prune(struct chunk_writer *w)
{
	unsigned int gone[16], n, i;
	char name[CHUNK_NAME_MAX];

	if (!opt.max_files)
		return;
	do {
		n = packer_prune(w->cpu_index, opt.max_files, gone,
				 ARRAY_SIZE(gone));
		for (i = 0; i < n; i++) {
			chunk_name(name, sizeof(name), w->cpu, gone[i]);
			if (unlinkat(w->dirfd, name, 0) < 0 && errno != ENOENT)
				warn("%s/%s: cannot remove: %s", outdir, name,
				     strerror(errno));
		}
	} while (n == ARRAY_SIZE(gone));
}

static int open_next(struct chunk_writer *w)
{
	char name[CHUNK_NAME_MAX];
	unsigned int seq = w->seq + 1;
	struct chunk *c;
	int fd;

	chunk_name(name, sizeof(name), w->cpu, seq);
	/* Not O_APPEND, which splice refuses: every write says where. */
	fd = openat(w->dirfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	c = packer_chunk_new(w->cpu_index, w->cpu, seq);
	if (!c) {
		close(fd);
		unlinkat(w->dirfd, name, 0);
		return -ENOMEM;
	}
	pthread_mutex_lock(&w->fd_lock);
	w->fd = fd;
	memcpy(w->name, name, sizeof(name));
	pthread_mutex_unlock(&w->fd_lock);
	w->cur = c;
	w->seq = seq;
	w->size = 0;
	w->first_ms = 0;
	w->prune_due = true;
	w->set_asked = false;
	memset(&w->facts, 0, sizeof(w->facts));
	w->facts.cpu = w->cpu;
	w->facts.seq = seq;
	w->discarded_base = w->discarded;
	COUNTER_ADD(w->chunks, 1);
	return 0;
}

/*
 * The current chunk is done: to the syncer and the packers.  An empty one
 * goes away, unless it would leave the CPU without a file (zstd -d needs a
 * frame: it gets one empty stored frame, which gives an empty stream file,
 * and babeltrace2 skips those).  On a full disk that frame cannot be
 * written either, and an empty file is no zstd file: it goes away too.
 */
static void close_current(struct chunk_writer *w)
{
	struct chunk_stored_hdrs h;
	uint8_t block[1][3];
	struct iovec iov[2];
	bool drop;
	int fd;

	if (!w->cur)
		return;
	pthread_mutex_lock(&w->fd_lock);
	fd = w->fd;
	w->fd = -1;
	pthread_mutex_unlock(&w->fd_lock);

	drop = !w->size && packer_chunks_on_disk(w->cpu_index) > 1;
	if (!w->size && !drop) {
		h.blocks = block;
		if (!pwritev_all(fd, iov, (int)chunk_stored_iov(iov, &h, NULL, 0), 0))
			w->size = chunk_stored_size(0);
		else
			drop = true;
	}
	if (drop) {
		close(fd);
		unlinkat(w->dirfd, w->name, 0);
		packer_chunk_drop(w->cur);
		w->cur = NULL;
		return;
	}
	packer_chunk_closed(w->cur, w->size, w->size > chunk_stored_size(0));
	w->cur = NULL;
	syncer_adopt(fd, w->name);
	if (opt.on_chunk) {
		w->facts.lost = w->discarded - w->discarded_base;
		handoff_chunk_closed(&w->facts);
	}
}

/* The packet header's facts, for the manifest (packets are whole). */
static void note_packet(struct chunk_writer *w, const void *data, size_t len)
{
	struct ringtrace_packet_header h;

	if (len < sizeof(h))
		return;
	memcpy(&h, data, sizeof(h));
	if (!w->facts.packets++)
		w->facts.ts_first = h.timestamp_begin;
	w->facts.ts_last = h.timestamp_end;
	w->facts.events += h.events;
	w->discarded = h.events_discarded;
}

int chunks_open(struct chunk_writer *w, unsigned int cpu,
		unsigned int cpu_index, int dirfd, size_t max_packet)
{
	unsigned int niov = chunk_stored_iovcnt(max_packet);

	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->fd_lock, NULL);
	w->cpu = cpu;
	w->cpu_index = cpu_index;
	w->dirfd = dirfd;
	w->fd = -1;
	w->pipe[0] = w->pipe[1] = -1;
	w->max_packet = max_packet;
	w->iov = calloc(niov, sizeof(*w->iov));
	w->hdrs.blocks = calloc(niov, sizeof(*w->hdrs.blocks));
	if (!w->iov || !w->hdrs.blocks)
		return -ENOMEM;
	return open_next(w);
}

int chunks_write(struct chunk_writer *w, const void *data, size_t len)
{
	uint64_t start = w->size;
	unsigned int cnt;
	int err;

	if (len > w->max_packet)
		return -EMSGSIZE;	/* larger than the geometry allows */
	cnt = chunk_stored_iov(w->iov, &w->hdrs, data, len);
	if (w->src_map) {
		err = splice_frame(w, w->iov, cnt);
		/* Whatever is left of it: the packet stays held, unput. */
		if (err)
			chunks_unsource(w);
	} else {
		err = pwritev_all(w->fd, w->iov, (int)cnt, w->size);
	}
	if (err) {
		/*
		 * ENOSPC, EIO, EFBIG... somewhere in this packet's frame: cut
		 * the chunk back to the frame before it.  The packet was not
		 * given back to the kernel, so it is not lost: it stays there
		 * for the next consumer.  If the cut fails, the partial frame
		 * stays at the end, which the readers drop.
		 */
		if (ftruncate(w->fd, (off_t)start) < 0)
			warn("%s/%s: cannot cut back to %llu bytes: %s", outdir,
			     w->name, (unsigned long long)start,
			     strerror(errno));
		COUNTER_ADD(w->packets_unsaved, 1);
		return err;
	}
	if (!w->size)
		w->first_ms = now_ms();
	note_packet(w, data, len);
	w->size += chunk_stored_size(len);
	COUNTER_ADD(w->packets, 1);
	COUNTER_ADD(w->bytes_in, len);
	COUNTER_ADD(w->bytes_out, chunk_stored_size(len));
	if (w->src_map)
		COUNTER_ADD(w->spliced, 1);
	return 0;
}

int chunks_roll(struct chunk_writer *w)
{
	close_current(w);
	return open_next(w);
}

int chunks_roll_if_due(struct chunk_writer *w, uint64_t now)
{
	bool full, old;

	if (!w->size)
		return 0;
	if (w->prune_due) {
		prune(w);
		w->prune_due = false;
	}
	/* Full: the largest packet might not fit, so it never has to. */
	full = w->size + chunk_stored_size(w->max_packet) > opt.max_size;
	old = opt.chunk_ms && now - w->first_ms >= opt.chunk_ms;
	if (!full && !old)
		return 0;
	if (!opt.on_chunk)
		return chunks_roll(w);
	if (w->set_asked)
		return 0;
	w->set_asked = true;
	return 1;
}

void chunks_finish(struct chunk_writer *w)
{
	close_current(w);
	chunks_unsource(w);
	free(w->iov);
	free(w->hdrs.blocks);
	w->iov = NULL;
	w->hdrs.blocks = NULL;
}

int chunks_dup(struct chunk_writer *w, struct sync_file *f)
{
	int err = 0;

	pthread_mutex_lock(&w->fd_lock);
	if (w->fd < 0)
		err = -EBADF;
	else if ((f->fd = fcntl(w->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		err = -errno;
	else
		memcpy(f->name, w->name, sizeof(f->name));
	pthread_mutex_unlock(&w->fd_lock);
	return err;
}

void chunks_current_name(struct chunk_writer *w, char *buf, size_t size)
{
	pthread_mutex_lock(&w->fd_lock);
	snprintf(buf, size, "%s", w->name);
	pthread_mutex_unlock(&w->fd_lock);
}
