// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced: one CPU buffer file of ringtrace.ko
 * (<debugfs>/ringtrace/cpu/<N>/buffer): read-only shared mapping of the
 * meta page and the sub-buffers, and the consumer ioctls.  The protocol
 * and its memory ordering are in include/uapi/linux/ringtrace.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ringtraced.h"

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The module's counts since its load (GET_STATS). */
static int stats_raw(struct rt_buffer *b, struct ringtrace_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return ioctl(b->fd, RINGTRACE_IOC_GET_STATS, st) < 0 ? -errno : 0;
}

/*
 * Map the meta page alone to learn the geometry, then the whole buffer;
 * keep the module's counts as the recording's base.  The kernel serves
 * the meta page as one page; the geometry cannot change while the file
 * is open (-EBUSY for writers of subbuf_size/num_subbufs).
 */
int buffer_open(struct rt_buffer *b, const char *rtdir, unsigned int cpu)
{
	long page = sysconf(_SC_PAGESIZE);
	const struct ringtrace_meta *m;
	size_t len;
	void *p;
	int err;

	memset(b, 0, sizeof(*b));
	b->cpu = cpu;
	snprintf(b->path, sizeof(b->path), "%s/cpu/%u/buffer", rtdir, cpu);
	b->fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0)
		return -errno;

	p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto close_fd;
	}
	m = p;
	b->meta_page_size = m->meta_page_size;
	b->subbuf_size = m->subbuf_size;
	b->num_subbufs = m->num_subbufs;
	err = m->meta_size < offsetof(struct ringtrace_meta, reserved1) ?
	      -EPROTO : 0;
	munmap(p, (size_t)page);
	if (err)
		goto close_fd;
	/* A kernel we do not understand: refuse rather than misread. */
	if (b->meta_page_size != (uint32_t)page ||
	    !is_pow2(b->subbuf_size) || b->subbuf_size < (uint32_t)page ||
	    b->subbuf_size > RINGTRACE_MAX_SUBBUF_SIZE ||
	    !is_pow2(b->num_subbufs) || b->num_subbufs < RINGTRACE_MIN_SUBBUFS ||
	    b->num_subbufs > RINGTRACE_MAX_SUBBUFS) {
		err = -EPROTO;
		goto close_fd;
	}

	len = b->meta_page_size + (size_t)b->subbuf_size * b->num_subbufs;
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto close_fd;
	}
	b->map = p;
	b->map_len = len;
	b->meta = p;
	err = stats_raw(b, &b->base);
	if (err)
		buffer_close(b);
	return err;

close_fd:
	close(b->fd);
	b->fd = -1;
	return err;
}

void buffer_close(struct rt_buffer *b)
{
	if (b->map)
		munmap((void *)b->map, b->map_len);
	b->map = NULL;
	b->meta = NULL;
	/* A sub-buffer still held goes back to the kernel unconsumed. */
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

/*
 * The sub-buffer's bytes may be read as soon as the ioctl returns: the
 * kernel checked completeness with an acquire on the commit count [B1] and
 * the syscall boundary orders our later loads after it.
 */
int buffer_get(struct rt_buffer *b, struct ringtrace_subbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->size = sizeof(*sb);
	if (ioctl(b->fd, RINGTRACE_IOC_GET_SUBBUF, sb) < 0)
		return -errno;
	/* Never let a bad answer make us read outside the mapping. */
	if (sb->offset < b->meta_page_size || sb->offset > b->map_len ||
	    sb->content_size < sizeof(struct ringtrace_packet_header) ||
	    sb->content_size > b->subbuf_size ||
	    sb->content_size > b->map_len - sb->offset)
		return -EPROTO;
	return 0;
}

/*
 * Every read of the sub-buffer (the compressor's copy) is done before this
 * call: the kernel's release store of the consumed position [B2] lets
 * writers reuse the slot, and a read after it could see new bytes.
 */
int buffer_put(struct rt_buffer *b, const struct ringtrace_subbuf *sb)
{
	struct ringtrace_subbuf put = {
		.size = sizeof(put),
		.pos = sb->pos,
	};

	return ioctl(b->fd, RINGTRACE_IOC_PUT_SUBBUF, &put) < 0 ? -errno : 0;
}

int buffer_flush(struct rt_buffer *b)
{
	return ioctl(b->fd, RINGTRACE_IOC_FLUSH) < 0 ? -errno : 0;
}

/* Be woken once @packets complete packets wait, not for each (SET_WAKEUP). */
int buffer_set_wakeup(struct rt_buffer *b, unsigned int packets)
{
	struct ringtrace_wakeup wk = {
		.size = sizeof(wk),
		.packets = packets,
	};

	return ioctl(b->fd, RINGTRACE_IOC_SET_WAKEUP, &wk) < 0 ? -errno : 0;
}

int buffer_positions(struct rt_buffer *b, struct ringtrace_positions *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	return ioctl(b->fd, RINGTRACE_IOC_GET_POSITIONS, p) < 0 ? -errno : 0;
}

int buffer_stats(struct rt_buffer *b, struct ringtrace_stats *st)
{
	const struct ringtrace_stats *o = &b->base;
	int err = stats_raw(b, st);

	if (err)
		return err;
	st->written -= o->written;
	st->delivered -= o->delivered;
	st->lost_full -= o->lost_full;
	st->lost_overrun -= o->lost_overrun;
	st->lost_held -= o->lost_held;
	st->lost_nested -= o->lost_nested;
	st->lost_too_big -= o->lost_too_big;
	st->subbufs_delivered -= o->subbufs_delivered;
	st->bytes_delivered -= o->bytes_delivered;
	return 0;
}

/* The write position sits on a sub-buffer boundary exactly when no packet is open. */
bool positions_packet_open(const struct ringtrace_positions *p)
{
	return p->subbuf_size && (p->write_pos & (p->subbuf_size - 1));
}

uint64_t buffer_lost(const struct rt_buffer *b)
{
	const struct ringtrace_stats *o = &b->base;

	return __atomic_load_n(&b->meta->lost, __ATOMIC_ACQUIRE) -
	       (o->lost_full + o->lost_overrun + o->lost_held +
		o->lost_nested + o->lost_too_big);
}

uint64_t buffer_events_gen(const struct rt_buffer *b)
{
	return __atomic_load_n(&b->meta->events_gen, __ATOMIC_ACQUIRE);
}
