/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace in-kernel writer API.
 *
 * Any kernel code (tracepoint probes in ringtrace.ko, other modules) writes
 * events with an inline reserve/commit pair:
 *
 *	struct ringtrace_reservation r __uninitialized;
 *	struct my_payload *p = ringtrace_reserve(&r, my_event.id, sizeof(*p));
 *	if (p) {
 *		p->field = ...;
 *		ringtrace_commit(&r);
 *	}
 *
 * or with the one-call ringtrace_write().  Between reserve and commit the
 * caller runs with preemption disabled and must not sleep; reservations
 * nest (task < softirq < irq < NMI, or the same context reserving again)
 * up to RINGTRACE_MAX_NESTING deep.  An event type is described to the
 * trace (CTF metadata) with ringtrace_event_register().
 *
 * What this header exports, and why: reserve and commit are inline so that
 * an event costs no function call, so they need the tracing flag, the
 * per-CPU buffer pointer and the writer's part of a buffer (struct
 * ringtrace_buffer below: positions, counters, geometry).  Everything else
 * -- the sub-buffer switch, drops, the consumer side -- stays inside
 * ringtrace.ko behind three exported functions of the slow path.
 *
 * The design, the diagram and the memory-ordering argument are in
 * module/ring.c and Documentation/ringtrace/design.rst.  Barriers are
 * labelled [Bn] here and there and in include/uapi/linux/ringtrace.h.
 */
#ifndef _LINUX_RINGTRACE_H
#define _LINUX_RINGTRACE_H

#include <linux/compiler.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/types.h>
#include <asm/bitsperlong.h>
#include <asm/byteorder.h>
#include <asm/local.h>
#include <uapi/linux/ringtrace.h>

/*
 * Where ringtrace may run.  Positions are free-running unsigned longs that
 * must never wrap within a trace, and every byte of a packet is written in
 * the little-endian layout the metadata declares: refuse to build where
 * either would silently break (i386, armhf, big-endian machines).
 */
#if BITS_PER_LONG != 64
#error "ringtrace needs a 64-bit kernel: its buffer positions are unsigned long and would wrap after 4 GiB"
#endif
#ifdef __BIG_ENDIAN
#error "ringtrace writes little-endian CTF packets in native byte order: big-endian kernels are not supported"
#endif

#define RINGTRACE_MAX_NESTING		4
#define RINGTRACE_PACKET_HEADER_SIZE	sizeof(struct ringtrace_packet_header)

/*
 * The writer counters of one sub-buffer slot: touched by the inline fast
 * path, so they are part of this header.  Only writers on the owning CPU
 * modify them (local_t); others only read them.
 */
struct ringtrace_slot {
	/*
	 * Bytes committed to this slot since the buffer was allocated:
	 * header, events and end padding of every generation.  Generation g
	 * of the slot is complete when it reaches (g + 1) * subbuf_size.
	 */
	local_t commit;
	/*
	 * Events committed to this slot since the buffer was allocated, a
	 * stack trailer not counted (ringtrace_put_trailer()).  A generation
	 * holds the difference to the count at which the previous generation
	 * was retired (module/ring.c keeps that count).
	 */
	local_t events;
};

/*
 * The part of a CPU buffer that inline writers touch, and nothing else:
 * the consumer side (locks, wait queue, pages, loss counters) lives in
 * ringtrace.ko (struct rtr_buffer in module/internal.h), around this one.
 * Everything here is written only by writers running on the owning CPU;
 * the geometry below it is set at allocation and read-only afterwards.
 */
struct ringtrace_buffer {
	/*
	 * Hot: every event, owning CPU only.  There is no count of reserve
	 * attempts here: every attempt ends as one slot's @events or one
	 * lost_* count, and ringtrace.ko adds those up when asked
	 * ("Counting" in module/ring.c).
	 */
	local_t offset;			/* free-running reserve position */
	local_t nesting;		/* reservations not yet committed */
	u64 last_ts;			/* clock floor: latest event or close */

	/* Read-mostly geometry, set at allocation. */
	u8 *data;			/* sub-buffer 0 (kernel mapping) */
	struct ringtrace_slot *slots;
	unsigned long subbuf_size;
	unsigned long subbuf_mask;	/* subbuf_size - 1 */
	unsigned long buf_mask;		/* subbuf_size * num_subbufs - 1 */
	unsigned int subbuf_order;
	unsigned int num_order;		/* log2(num_subbufs) */
	/*
	 * Per slot, as @slots: the trailers committed there, records that
	 * are no events of their own (ringtrace_put_trailer()).  Beside the
	 * slots, not in them, so that a slot stays 16 bytes: its index is a
	 * shift on the fast path.  Last: the fields above keep the places
	 * they had before it came.
	 */
	local_t *trailers;
};

/* Describes one event type in the CTF metadata. */
struct ringtrace_event {
	const char *name;		/* CTF event name */
	const char *fields;		/* TSDL struct body, e.g. "uint64_t seq;" */
	/* Set by ringtrace_event_register(): */
	unsigned int id;
};

int ringtrace_event_register(struct ringtrace_event *ev);
void ringtrace_event_unregister(struct ringtrace_event *ev);

/*
 * Non-zero while tracing.  A plain flag rather than a static key: toggling
 * it must not patch kernel text (and the test against it is one load next
 * to a ~50 ns clock read).
 */
extern int ringtrace_tracing;
DECLARE_PER_CPU(struct ringtrace_buffer *, ringtrace_cpu_buffer);

/*
 * Filled by ringtrace_reserve(), consumed by ringtrace_commit().  Its
 * address never leaves the inline pair (the slow path returns what it
 * reserved), so the compiler keeps it in registers instead of storing it
 * and loading it back per event.  Declare it __uninitialized: reserve
 * sets every field before commit reads one, and the clearing that
 * CONFIG_INIT_STACK_ALL_ZERO adds otherwise is three stores per event
 * that GCC does not remove.
 */
struct ringtrace_reservation {
	struct ringtrace_buffer *buf;
	struct ringtrace_slot *slot;	/* where the record's bytes count */
	unsigned int len;		/* header + payload */
};

/*
 * What the slow path reserved, returned in two registers: the payload
 * area (NULL: dropped and counted, nesting and preemption undone) and the
 * record's position.
 */
struct ringtrace_slow_reservation {
	void *payload;
	unsigned long pos;
};

struct ringtrace_slow_reservation
ringtrace_reserve_slow(struct ringtrace_buffer *buf, unsigned int id,
		       unsigned int payload_len, unsigned long old,
		       u64 ts, u64 last);
void ringtrace_drop_nested(struct ringtrace_buffer *buf);
void ringtrace_subbuf_done(struct ringtrace_buffer *buf);

/* NMI-safe, monotonic, comparable across CPUs. */
static __always_inline u64 ringtrace_clock(void)
{
	return ktime_get_mono_fast_ns();
}

/*
 * The fast-path clock read, clamped so that time never goes back within a
 * buffer: the fast accessor may step back a little when an NMI hits a
 * timekeeper update, and the 27-bit compact encoding must never be read as
 * a wrap.
 */
static __always_inline u64 ringtrace_buffer_clock(struct ringtrace_buffer *buf,
						   u64 *last)
{
	u64 ts = ringtrace_clock();

	*last = READ_ONCE(buf->last_ts);
	if (unlikely((s64)(ts - *last) < 0))
		ts = *last;
	return ts;
}

static __always_inline unsigned int
ringtrace_header_len(unsigned int id, u64 ts, u64 last)
{
	if (likely(id < RINGTRACE_EVENT_ID_EXTENDED &&
		   ts - last < (1ULL << RINGTRACE_COMPACT_TS_BITS)))
		return RINGTRACE_COMPACT_HEADER_SIZE;
	return RINGTRACE_EXTENDED_HEADER_SIZE;
}

/* Writes the event header at @rec, returns where the payload goes. */
static __always_inline void *ringtrace_put_header(u8 *rec, unsigned int hlen,
						  unsigned int id, u64 ts)
{
	u32 word;

	if (likely(hlen == RINGTRACE_COMPACT_HEADER_SIZE)) {
		word = id | ((u32)ts << RINGTRACE_EVENT_ID_BITS);
		memcpy(rec, &word, sizeof(word));
	} else {
		struct ringtrace_extended_header ext = {
			.word = RINGTRACE_EVENT_ID_EXTENDED |
				id << RINGTRACE_EVENT_ID_BITS,
			.timestamp_lo = (u32)ts,
			.timestamp_hi = ts >> 32,
		};

		memcpy(rec, &ext, sizeof(ext));
	}
	return rec + hlen;
}

/* The slot of the record at @rec, its offset in the ring (pos & buf_mask). */
static __always_inline struct ringtrace_slot *
ringtrace_rec_slot(const struct ringtrace_buffer *buf, unsigned long rec)
{
	return &buf->slots[rec >> buf->subbuf_order];
}

static __always_inline struct ringtrace_slot *
ringtrace_pos_slot(const struct ringtrace_buffer *buf, unsigned long pos)
{
	return ringtrace_rec_slot(buf, pos & buf->buf_mask);
}

/*
 * Enter this CPU's buffer (*@bufp) as a writer, one nesting level deeper:
 * preemption off, tracing on.  False, preemption on again, when tracing
 * is off or the writer would nest too deep (dropped and counted).  Every
 * reservation begins here: ringtrace_reserve() and the interned stacks'
 * own loop (module/stack.c).  A bool, not a NULL buffer: this_cpu_read()
 * may be NULL for all the compiler knows, and the caller would test it
 * again on the fast path.
 */
static __always_inline bool ringtrace_enter(struct ringtrace_buffer **bufp)
{
	struct ringtrace_buffer *buf;

	/*
	 * Preemption goes off before the flag is tested: stopping tracing
	 * clears the flag and then waits for every preempt-off section with
	 * synchronize_rcu() before it flushes or frees buffers [R3].
	 */
	preempt_disable_notrace();
	if (unlikely(!READ_ONCE(ringtrace_tracing)))
		goto off;
	buf = this_cpu_read(ringtrace_cpu_buffer);
	/*
	 * local_cmpxchg() is only NMI-safe where the architecture says so;
	 * elsewhere an NMI writer could corrupt the interrupted one's update
	 * (compiled out on x86, arm64, ...).  Counted as lost_nested.
	 *
	 * The depth is read, then incremented: every writer that interrupts
	 * us between the two has undone its own increment before we go on
	 * (commit or drop), so what we read is still the depth we add to.
	 */
	if (unlikely(local_read(&buf->nesting) >= RINGTRACE_MAX_NESTING ||
		     (!IS_ENABLED(CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG) &&
		      in_nmi()))) {
		ringtrace_drop_nested(buf);
		goto off;
	}
	local_inc(&buf->nesting);
	*bufp = buf;
	return true;
off:
	preempt_enable_notrace();
	return false;
}

/*
 * The record of @hlen + @payload_len bytes at @old is ours (our cmpxchg
 * on @offset moved it past): publish its time as the clock floor, fill
 * @r for the commit and write the event header.  Returns the payload.
 */
static __always_inline void *
ringtrace_reserved(struct ringtrace_reservation *r,
		   struct ringtrace_buffer *buf, unsigned long old,
		   unsigned int hlen, unsigned int payload_len,
		   unsigned int id, u64 ts)
{
	unsigned long rec = old & buf->buf_mask;

	WRITE_ONCE(buf->last_ts, ts);
	r->buf = buf;
	r->slot = ringtrace_rec_slot(buf, rec);
	r->len = hlen + payload_len;
	return ringtrace_put_header(buf->data + rec, hlen, id, ts);
}

/*
 * The sub-buffer switch (and every drop but the nesting one), out of line.
 * The record's length is its header's plus the payload's: the header ends
 * where the payload begins.
 */
static __always_inline void *
ringtrace_reserve_switch(struct ringtrace_reservation *r,
			 struct ringtrace_buffer *buf, unsigned int id,
			 unsigned int payload_len, unsigned long old,
			 u64 ts, u64 last)
{
	struct ringtrace_slow_reservation s =
		ringtrace_reserve_slow(buf, id, payload_len, old, ts, last);
	unsigned long rec = s.pos & buf->buf_mask;

	if (s.payload) {
		r->buf = buf;
		r->slot = ringtrace_rec_slot(buf, rec);
		r->len = (u8 *)s.payload - (buf->data + rec) + payload_len;
	}
	return s.payload;
}

/*
 * The reservation proper, for a header of @hlen bytes, a constant at each
 * of ringtrace_reserve()'s two expansions: the compiler drops the other
 * header's code, and for the compact header the record's length, the
 * fit test and the header store all become constants.  A compact header
 * only carries a timestamp delta of 0 .. 2^27 - 1 ns to the buffer's last
 * one: any other delta (more than ~134 ms since the last event, or a
 * clock that stepped back) is rare and goes to the slow path, clamped.
 */
static __always_inline void *
ringtrace_reserve_hlen(struct ringtrace_reservation *r,
		       struct ringtrace_buffer *buf, unsigned int id,
		       unsigned int payload_len, const unsigned int hlen)
{
	unsigned long old, off;
	u64 ts, last;

	/*
	 * A nested writer that reserves between our read of the offset and
	 * the cmpxchg makes the cmpxchg fail; the retry reads the clock again,
	 * so timestamps never decrease in buffer order.
	 */
	do {
		old = local_read(&buf->offset);
		if (hlen == RINGTRACE_COMPACT_HEADER_SIZE) {
			ts = ringtrace_clock();
			last = READ_ONCE(buf->last_ts);
			if (unlikely(ts - last >=
				     (1ULL << RINGTRACE_COMPACT_TS_BITS))) {
				if ((s64)(ts - last) < 0)
					ts = last;
				return ringtrace_reserve_switch(r, buf, id,
								payload_len,
								old, ts, last);
			}
		} else {
			ts = ringtrace_buffer_clock(buf, &last);
		}
		off = old & buf->subbuf_mask;
		/*
		 * Opening a packet, or not fitting with a byte to spare, is a
		 * sub-buffer switch.  Keeping the spare byte means the offset
		 * sits on a sub-buffer boundary exactly when no packet is open.
		 */
		if (unlikely(off == 0 ||
			     off + hlen + payload_len >= buf->subbuf_size))
			return ringtrace_reserve_switch(r, buf, id, payload_len,
							old, ts, last);
	} while (unlikely(local_cmpxchg(&buf->offset, old,
					old + hlen + payload_len) != old));

	return ringtrace_reserved(r, buf, old, hlen, payload_len, id, ts);
}

/*
 * Reserve room for one event of @payload_len bytes on this CPU.  Returns
 * the payload area, or NULL when tracing is off or the event was dropped
 * (and counted).  Only a non-NULL return must be followed by
 * ringtrace_commit().
 */
static __always_inline void *ringtrace_reserve(struct ringtrace_reservation *r,
					       unsigned int id,
					       unsigned int payload_len)
{
	struct ringtrace_buffer *buf;

	if (unlikely(!ringtrace_enter(&buf)))
		return NULL;
	/* Most events: an id that fits the compact header. */
	if (likely(id < RINGTRACE_EVENT_ID_EXTENDED))
		return ringtrace_reserve_hlen(r, buf, id, payload_len,
					      RINGTRACE_COMPACT_HEADER_SIZE);
	return ringtrace_reserve_hlen(r, buf, id, payload_len,
				      RINGTRACE_EXTENDED_HEADER_SIZE);
}

/* Commit count at which the generation holding @pos is complete. */
static __always_inline unsigned long
ringtrace_commit_target(const struct ringtrace_buffer *buf, unsigned long pos)
{
	return ((pos >> buf->num_order) & ~buf->subbuf_mask) + buf->subbuf_size;
}

/*
 * Account @len (> 0) committed bytes to @slot; the last one delivers the
 * packet.  The generation g being committed is complete when the count
 * reaches ringtrace_commit_target(), (g + 1) * subbuf_size.  Until then
 * it lies strictly between g * subbuf_size and that: every commit adds a
 * positive amount, a generation's header, events and padding add up to
 * exactly subbuf_size, and generation g + 1 cannot open before g is
 * complete and retired.  So the count is a multiple of subbuf_size
 * exactly when this add completed the packet: one test of the low bits,
 * with the mask read before the barrier below keeps it from being read
 * again.
 */
static __always_inline void ringtrace_commit_slot(struct ringtrace_buffer *buf,
						  struct ringtrace_slot *slot,
						  unsigned long len)
{
	unsigned long mask = buf->subbuf_mask;

	/*
	 * [B1] Every byte of the record (and of the packet header for the
	 * open/close paths) is stored before the commit count covers it.
	 * Pairs with the smp_rmb() after reading the count in
	 * rtr_slot_complete() (GET_SUBBUF, poll, overwrite push).
	 */
	smp_wmb();
	if (unlikely(!((unsigned long)local_add_return(len, &slot->commit) &
		       mask)))
		ringtrace_subbuf_done(buf);
}

static __always_inline void ringtrace_commit_bytes(struct ringtrace_buffer *buf,
						   unsigned long pos,
						   unsigned long len)
{
	ringtrace_commit_slot(buf, ringtrace_pos_slot(buf, pos), len);
}

/* Make the reserved event visible to the consumer. */
static __always_inline void ringtrace_commit(struct ringtrace_reservation *r)
{
	local_inc(&r->slot->events);
	ringtrace_commit_slot(r->buf, r->slot, r->len);
	local_dec(&r->buf->nesting);
	preempt_enable_notrace();
}

/*
 * A trailer: a second record inside the reservation, after the event's own
 * payload, that says more about that event (a kernel stack, module/stack.c).
 * The caller reserved @reserved bytes of payload (the event's own, then
 * RINGTRACE_COMPACT_HEADER_SIZE and the trailer's), got @payload back from
 * ringtrace_reserve(), and calls this before ringtrace_commit() with @at
 * the end of the event's own payload; the trailer's payload follows the
 * returned pointer.  @id must be below RINGTRACE_EVENT_ID_EXTENDED (a
 * compact header).
 *
 * The trailer carries the event's timestamp: the low 27 bits of the
 * header already written before @payload (the record is r->len bytes, its
 * header those before the @reserved), so a reader sees no time pass.  It
 * is a record of the packet, counted in the packet's events (what a
 * reader finds there), but no event: written, delivered and lost count
 * its event once, with or without it.  So it is counted apart, in the
 * slot's trailers, never in the slot's events.
 */
static __always_inline void *ringtrace_put_trailer(struct ringtrace_reservation *r,
						   const void *payload,
						   unsigned int reserved,
						   u8 *at, unsigned int id)
{
	const u8 *rec = (const u8 *)payload - (r->len - reserved);
	u32 word, ts;

	memcpy(&word, rec, sizeof(word));
	if ((word & ((1U << RINGTRACE_EVENT_ID_BITS) - 1)) ==
	    RINGTRACE_EVENT_ID_EXTENDED)
		memcpy(&ts, rec + offsetof(struct ringtrace_extended_header,
					   timestamp_lo), sizeof(ts));
	else
		ts = word >> RINGTRACE_EVENT_ID_BITS;
	local_inc(&r->buf->trailers[r->slot - r->buf->slots]);
	return ringtrace_put_header(at, RINGTRACE_COMPACT_HEADER_SIZE, id, ts);
}

/*
 * An untimed trailer (stack_ref, module/stack.c): as ringtrace_put_trailer(),
 * but its header's 27 bits repeat @id instead of carrying a time, as the
 * metadata's event header says for that id (module/ctf.c): a reader gives
 * it the time of the record before it, its event's.
 */
static __always_inline void *
ringtrace_put_untimed_trailer(struct ringtrace_reservation *r, u8 *at,
			      unsigned int id)
{
	u32 word = id | id << RINGTRACE_EVENT_ID_BITS;

	local_inc(&r->buf->trailers[r->slot - r->buf->slots]);
	memcpy(at, &word, sizeof(word));
	return at + RINGTRACE_COMPACT_HEADER_SIZE;
}

/* Reserve, copy @len bytes of @payload, commit.  False if not recorded. */
static __always_inline bool ringtrace_write(unsigned int id,
					    const void *payload,
					    unsigned int len)
{
	struct ringtrace_reservation r __uninitialized;
	void *p = ringtrace_reserve(&r, id, len);

	if (!p)
		return false;
	memcpy(p, payload, len);
	ringtrace_commit(&r);
	return true;
}

#endif /* _LINUX_RINGTRACE_H */
