/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ringtrace user ABI: the per-CPU buffer files under
 * /sys/kernel/debug/ringtrace/cpu/<N>/buffer, their mmap layout, their
 * ioctls, and the byte layout of what the consumer copies out (CTF 1.8
 * packets).  Shared verbatim by the module, ringtraced, the tools and the
 * selftests.
 *
 * Every file of /sys/kernel/debug/ringtrace/ also exists, with the same
 * behaviour, as a character device of the same relative path under
 * /dev/ringtrace/ (for kernels in Secure Boot's lockdown=integrity, where
 * debugfs refuses writable, mappable and ioctl files).  A CPU that has not
 * been online since the module loaded has no buffer: its file fails to
 * open with ENODEV.
 *
 * Mapping of a CPU buffer file (read-only, MAP_SHARED, offset 0):
 *
 *   0                  meta_page_size
 *   +------------------+-----------+-----------+-----+-----------+
 *   | ringtrace_meta   | subbuf 0  | subbuf 1  | ... | subbuf N-1|
 *   +------------------+-----------+-----------+-----+-----------+
 *                       <-subbuf_size->
 *
 * The length must be exactly meta_page_size + num_subbufs * subbuf_size
 * (read both from the meta page, which can be mapped alone first).
 *
 * Consumer protocol, two syscalls per sub-buffer:
 *
 *   ioctl(fd, RINGTRACE_IOC_GET_SUBBUF, &sb)   -> sb.pos, sb.offset, sb.content_size
 *   copy map[sb.offset .. sb.offset + sb.content_size)   (a whole CTF packet)
 *   ioctl(fd, RINGTRACE_IOC_PUT_SUBBUF, &sb)   -> the slot may be reused
 *
 * Memory ordering, userspace half (labels as in module/ring.c):
 *  - Bytes of a sub-buffer returned by GET_SUBBUF may be read as soon as the
 *    ioctl returns: the kernel read the sub-buffer's commit count and then
 *    issued smp_rmb() [B1], pairing with the smp_wmb() every writer issues
 *    before adding to that count (ringtrace_commit_slot()), and the syscall
 *    return orders the caller's later loads.
 *  - All reads of the sub-buffer must be done before PUT_SUBBUF: the kernel
 *    publishes the new consumed position with atomic_long_set_release()
 *    [B2], which pairs with the atomic_long_read_acquire() a writer does
 *    before it reuses the slot.  Reading after PUT may observe new data (a
 *    torn packet).
 *  - Fields of struct ringtrace_meta are written by the kernel with
 *    WRITE_ONCE() at sub-buffer switch, GET, PUT and FLUSH time.
 *  - events_gen changes whenever an event is registered or unregistered
 *    (another module's, through the writer API).  An id belongs to one
 *    declaration while the module is loaded (the same name and fields
 *    registered again take it back), and the metadata file keeps every
 *    declaration, unregistered ones too: a consumer that sees events_gen
 *    change after a GET appends the metadata's new event declarations to
 *    its copy before it writes that sub-buffer, and every event of it has
 *    a declaration.  Read them
 *    with one 64-bit load each (__atomic_load_n(p, __ATOMIC_ACQUIRE)); the
 *    kernel updates consumed_pos with a release store after the data it
 *    guards.  They are a snapshot for monitoring, never a substitute for
 *    GET_SUBBUF.
 *
 * Rules for every ioctl argument struct: the caller sets @size to
 * sizeof(struct) as it knows it (at least the *_SIZE_VER0 below) and zeroes
 * @flags, every reserved field and every byte past the kernel's struct;
 * otherwise -EINVAL.  A @size above the page size fails with -E2BIG.  The
 * kernel fills at most @size bytes and writes back the size it knows.
 * Unknown commands fail with -ENOTTY.
 *
 * poll()/epoll on a buffer file:
 *   EPOLLIN   GET_SUBBUF has a sub-buffer (or, tracing stopped, a last
 *             partly filled one to close and hand out)
 *   EPOLLHUP  tracing is stopped and everything has been consumed; until
 *             tracing starts again (a consumer that stays should stop
 *             polling the file and look again later)
 *   EPOLLERR  the buffer was disabled after a broken invariant (GET: -EIO)
 */
#ifndef _UAPI_LINUX_RINGTRACE_H
#define _UAPI_LINUX_RINGTRACE_H

#include <linux/types.h>
#include <linux/ioctl.h>	/* _IOWR() and friends; no libc types */

#define RINGTRACE_ABI_VERSION		1

/* ------------------------------------------------------------------ */
/* CTF 1.8 packet header at the start of every sub-buffer              */
/* ------------------------------------------------------------------ */

#define RINGTRACE_CTF_MAGIC		0xC1FC1FC1U
#define RINGTRACE_STREAM_ID		0

/*
 * trace.packet.header followed by stream.packet.context, little endian,
 * naturally aligned, exactly as the TSDL in the `metadata` file declares.
 * timestamp_* are nanoseconds of the trace clock (CLOCK_MONOTONIC via the
 * NMI-safe fast accessor); sizes are in bits as CTF wants them.
 * packet_seq_num and events_discarded count from the start of the
 * recording: packets before this one and events lost so far, on this CPU.
 * The difference between two consecutive packets is what was lost between
 * them.  A recording starts when a consumer opens a CPU's buffer file with
 * tracing off and nothing left in the buffer (as ringtraced does); one
 * that opens it while tracing is on, or with packets left, reads on in the
 * numbering of the recording before, and its first packet counts what
 * that one took or lost.
 * packet_size equals content_size: a packet is exactly the content_size
 * bytes GET_SUBBUF reports, with no padding to copy or store.
 */
struct ringtrace_packet_header {
	/* trace.packet.header */
	__u32 magic;			/* RINGTRACE_CTF_MAGIC */
	__u8  uuid[16];			/* trace uuid, as in metadata */
	__u32 stream_id;		/* RINGTRACE_STREAM_ID */
	__u64 stream_instance_id;	/* == cpu_id */
	/* stream.packet.context */
	__u64 timestamp_begin;		/* first event's timestamp */
	__u64 timestamp_end;		/* >= last event's timestamp */
	__u64 content_size;		/* bits of header + events */
	__u64 packet_size;		/* bits: == content_size, see below */
	__u64 packet_seq_num;		/* packets before it, see above */
	__u64 events_discarded;		/* cumulative lost events, see above */
	__u32 cpu_id;
	__u32 events;			/* records: events, stack trailers */
};

/* ------------------------------------------------------------------ */
/* Event records                                                        */
/* ------------------------------------------------------------------ */

/*
 * Every event starts at a byte boundary with one little-endian u32:
 *
 *    bits 0..4   event id (0..30), or 31 = extended header follows
 *    bits 5..31  low 27 bits of the timestamp (ns)
 *
 * The compact form is used when the id is below 31 and less than 2^27 ns
 * passed since the previous event of the same buffer (or since the packet's
 * timestamp_begin); a reader rebuilds the full time by replacing the low 27
 * bits of the previous timestamp, adding 2^27 if the value went backwards.
 * Otherwise the extended form is used: the u32 holds 31 in bits 0..4 and
 * the event id in bits 5..31, then the full u64 timestamp follows, unaligned
 * (12 bytes in all).
 * The payload follows, byte aligned, in the layout the metadata gives.
 */
#define RINGTRACE_EVENT_ID_BITS		5
#define RINGTRACE_EVENT_ID_EXTENDED	31
#define RINGTRACE_COMPACT_TS_BITS	27
#define RINGTRACE_COMPACT_HEADER_SIZE	4
#define RINGTRACE_EXTENDED_HEADER_SIZE	12

struct ringtrace_extended_header {
	__u32 word;			/* RINGTRACE_EVENT_ID_EXTENDED | id << 5 */
	__u32 timestamp_lo;		/* full timestamp, low half */
	__u32 timestamp_hi;		/* full timestamp, high half */
};

/* Event ids that never change. */
#define RINGTRACE_EVENT_MARKER		0	/* payload: u16 len, u8 data[len] */

/* ------------------------------------------------------------------ */
/* Meta page: first page(s) of the mapping                             */
/* ------------------------------------------------------------------ */

#define RINGTRACE_MODE_DISCARD		0	/* drop new events when full */
#define RINGTRACE_MODE_OVERWRITE	1	/* flight recorder */

/* Bit set in consumed_pos while the consumer holds a sub-buffer. */
#define RINGTRACE_POS_HELD		1ULL

struct ringtrace_meta {
	__u32 meta_size;		/* sizeof(struct ringtrace_meta) */
	__u32 meta_page_size;		/* offset of sub-buffer 0 */
	__u32 subbuf_size;		/* bytes, power of two */
	__u32 num_subbufs;		/* power of two */
	__u32 cpu;
	__u32 mode;			/* RINGTRACE_MODE_* */
	__u64 events_gen;		/* the event set's generation, below */
	/* Snapshots; see "Memory ordering" above. */
	__u64 write_pos;		/* bytes ever reserved (free running) */
	__u64 consumed_pos;		/* next sub-buffer to consume | HELD */
	__u64 written;			/* events offered while tracing on */
	__u64 delivered;		/* events in sub-buffers put back */
	__u64 lost;			/* events lost, all causes */
	__u64 features;			/* RINGTRACE_FEATURE_*, fixed per load */
	__u64 reserved1[2];
};

/*
 * features: what this module offers beyond the ioctls below (0 on a
 * module older than the field, which kept it zero).
 *
 * RINGTRACE_FEATURE_SPLICE: splice(2) from the buffer file into a pipe
 * hands the held sub-buffer's pages to the pipe, no copy.  The source
 * offset (off_in, required) is a mapping offset inside the held packet,
 * from GET_SUBBUF's offset up to offset + content_size (0 bytes at that
 * end); anything else, or no packet held by this opener: -EINVAL.  While
 * a pipe holds any page of the packet, PUT_SUBBUF says -EBUSY (drain the
 * pipe, or close it, then PUT again); a consumer that closes the file
 * with pages still in a pipe hands the packet back unconsumed once the
 * last of them leaves the pipe, and the module cannot be unloaded, nor
 * the buffers replaced (geometry, clear: -EBUSY), before then.
 */
#define RINGTRACE_FEATURE_SPLICE	0x1ULL

/* ------------------------------------------------------------------ */
/* ioctls on a CPU buffer file                                          */
/* ------------------------------------------------------------------ */

#define RINGTRACE_IOC_TYPE		0xB9

/* GET_SUBBUF (out) and PUT_SUBBUF (in: size, flags, pos). */
struct ringtrace_subbuf {
	__u32 size;			/* in: sizeof; out: kernel's sizeof */
	__u32 flags;			/* in: must be 0 */
	__u64 pos;			/* position: hand back to PUT */
	__u64 offset;			/* offset of the packet in the mapping */
	__u64 content_size;		/* bytes to copy (header + events) */
	__u64 packet_size;		/* bytes of the sub-buffer */
	__u64 events;			/* the packet's records, as above */
	__u64 events_discarded;		/* the packet's cumulative count */
};
#define RINGTRACE_SUBBUF_SIZE_VER0	56

/*
 * Read and write positions of one CPU: two separate reads, consistent only
 * while no writer runs (tracing stopped).
 */
struct ringtrace_positions {
	__u32 size;
	__u32 flags;			/* in: must be 0 */
	__u64 write_pos;		/* next reservation */
	__u64 consumed_pos;		/* RINGTRACE_POS_HELD may be set */
	__u64 subbuf_size;
	__u64 num_subbufs;
};
#define RINGTRACE_POSITIONS_SIZE_VER0	40

/*
 * Per-CPU counters of events (an event and its stack trailer are one).
 * Once tracing is off and the buffer has been drained,
 *   written == delivered + lost_full + lost_overrun + lost_held +
 *              lost_nested + lost_too_big
 * holds exactly.
 */
struct ringtrace_stats {
	__u32 size;
	__u32 flags;			/* in: must be 0 */
	__u64 written;			/* reserve attempts while tracing on */
	__u64 delivered;		/* events in sub-buffers put back */
	__u64 lost_full;		/* discard mode: no free sub-buffer */
	__u64 lost_overrun;		/* overwrite mode: overwritten unread */
	__u64 lost_held;		/* overwrite mode: next slot held by reader */
	__u64 lost_nested;		/* nesting too deep, or slot in use */
	__u64 lost_too_big;		/* event larger than a sub-buffer */
	__u64 subbufs_delivered;	/* sub-buffers put back */
	__u64 bytes_delivered;		/* their content bytes */
	__u64 reserved[4];
};
#define RINGTRACE_STATS_SIZE_VER0	112

/*
 * SET_WAKEUP (in): wake this consumer -- poll() says POLLIN, the wait
 * queue is woken -- only once @packets complete packets wait, 1 (every
 * packet, the default at each open) to num_subbufs / 2.  Fewer than that
 * wait for the consumer's own FLUSH and GETs (until -EAGAIN), or for
 * tracing to stop, when poll() reports any packet again.
 */
struct ringtrace_wakeup {
	__u32 size;
	__u32 flags;			/* must be 0 */
	__u32 packets;			/* 1 .. num_subbufs / 2 */
	__u32 reserved;			/* must be 0 */
};
#define RINGTRACE_WAKEUP_SIZE_VER0	16

/*
 * GET_SUBBUF: hand the oldest complete sub-buffer to the caller.
 *   -EAGAIN   none complete yet (poll for POLLIN)
 *   -ENODATA  tracing is off and everything has been consumed
 *   -EBUSY    the caller already holds one (PUT it first)
 *   -EIO      the buffer was disabled after a broken invariant
 * PUT_SUBBUF: give it back; @pos must be the held position, else -EINVAL.
 * FLUSH: close the partly filled sub-buffer of this CPU so that it becomes
 *   available to GET (as a writer on that CPU while tracing, else from the
 *   caller's).  With nothing open but events lost since the last sub-buffer
 *   closed, it emits an empty sub-buffer that reports them.  With neither,
 *   it does nothing at all: no interrupt to that CPU, no sub-buffer.
 */
#define RINGTRACE_IOC_GET_SUBBUF	_IOWR(RINGTRACE_IOC_TYPE, 0x01, struct ringtrace_subbuf)
#define RINGTRACE_IOC_PUT_SUBBUF	_IOW(RINGTRACE_IOC_TYPE, 0x02, struct ringtrace_subbuf)
#define RINGTRACE_IOC_FLUSH		_IO(RINGTRACE_IOC_TYPE, 0x03)
#define RINGTRACE_IOC_GET_POSITIONS	_IOWR(RINGTRACE_IOC_TYPE, 0x04, struct ringtrace_positions)
#define RINGTRACE_IOC_GET_STATS		_IOWR(RINGTRACE_IOC_TYPE, 0x05, struct ringtrace_stats)
#define RINGTRACE_IOC_SET_WAKEUP	_IOW(RINGTRACE_IOC_TYPE, 0x06, struct ringtrace_wakeup)

/* Limits of the control files. */
#define RINGTRACE_MIN_SUBBUFS		2
#define RINGTRACE_MAX_SUBBUFS		4096
#define RINGTRACE_MAX_SUBBUF_SIZE	(64U << 20)
#define RINGTRACE_MARKER_MAX		4096	/* bytes per marker write */
#define RINGTRACE_STACK_MAX_DEPTH	64	/* frames: stack_depth */
#define RINGTRACE_STACK_DEFAULT_DEPTH	32
#define RINGTRACE_USTACK_MAX_DEPTH	127	/* frames: ustack_depth */
#define RINGTRACE_USTACK_DEFAULT_DEPTH	64
#define RINGTRACE_USTACK_COPY_MIN	512	/* bytes: ustack_size */
#define RINGTRACE_USTACK_COPY_MAX	(32U << 10)
#define RINGTRACE_USTACK_COPY_DEFAULT	(8U << 10)

/*
 * user_stack's flags (Documentation/ringtrace/events.rst); others are 0.
 * user_stack_copy (ustack_mode "copy") has TRUNCATED (ustack_size cut the
 * copy), FAULT (a page faulted: the copy ends before it) and COMPAT.
 */
#define RINGTRACE_USTACK_TRUNCATED	0x1	/* the depth cut the chain */
#define RINGTRACE_USTACK_FAULT		0x2	/* a read failed mid-chain */
#define RINGTRACE_USTACK_COMPAT		0x4	/* a 32-bit task: ip only */
#define RINGTRACE_USTACK_ENTRY		0x8	/* ips[1] was read at [sp] */
#define RINGTRACE_SAMPLE_MAX_HZ		10000	/* sample_hz: 0 (off) to this */

#endif /* _UAPI_LINUX_RINGTRACE_H */
