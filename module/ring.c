// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: lockless per-CPU ring buffer of CTF packets.
 *
 * Each CPU that has been online since the module loaded owns one buffer: a
 * meta page followed by num_subbufs sub-buffers ("slots") of subbuf_size
 * bytes, all powers of two.  Writers run only on the owning CPU and may
 * nest (task < softirq < irq < NMI).  One consumer per buffer, on any CPU,
 * takes whole sub-buffers.
 *
 *   pages:  [meta][ slot 0 ][ slot 1 ][ slot 2 ][ slot 3 ]
 *                  |hdr|ev|ev|ev|....pad|
 *
 *   positions (free running, bytes):
 *
 *     consumed                                 offset
 *        |                                       |
 *   ... [ packet k ][ packet k+1 ][ packet k+2 ][ packet k+3 ...
 *        ^ held or next for GET   complete      ^ open, being written
 *
 * A position p lives in slot (p / subbuf_size) % num_subbufs, generation
 * p / (subbuf_size * num_subbufs).  A packet is a slot's generation: a CTF
 * packet header (struct ringtrace_packet_header), events, and padding.
 *
 * Writer state is local_t, modified only on the owning CPU: no locked
 * instruction on the fast path.  The fast path (include/linux/ringtrace.h)
 * is one local_cmpxchg() on @offset; a record never straddles slots.  The
 * few places that modify a buffer from another CPU say why nothing else
 * can touch it at that moment ([R4]).
 *
 * Open and close.  @offset sits on a slot boundary exactly when no packet
 * is open (the fast path keeps one spare byte so an event never ends on a
 * boundary).  Every transition is one local_cmpxchg() on @offset:
 *
 *   open:        boundary P          -> P + header + event
 *   close:       inside packet at X  -> next boundary       (flush, full)
 *   close+open:  inside packet at X  -> next boundary + header + event
 *
 * After its cmpxchg, the opener writes the header's begin fields and
 * commits the header bytes; the closer writes the end fields and commits
 * the padding.  Opener and closer may be different, nested, writers.
 *
 * Commit and delivery.  Each slot counts committed bytes cumulatively.
 * Generation g of a slot is complete when the count reaches
 * (g + 1) * subbuf_size: header + events + padding, whatever order the
 * nested writers committed in.  Whoever makes the count reach that value
 * -- the one add that leaves it a multiple of subbuf_size, as
 * ringtrace_commit_slot() argues -- queues the consumer's wakeup through
 * irq_work [W1]; nothing is woken from the writer's own context.
 *
 * Space.  A packet may open at P only if the slot's previous generation
 * was retired: P - consumed < buffer size.  In discard mode the event is
 * dropped otherwise (lost_full).  In overwrite mode the writer retires the
 * oldest packet itself by advancing @consumed with a cmpxchg (lost_overrun,
 * all its events); it cannot while the consumer holds that packet
 * (RINGTRACE_POS_HELD set in @consumed: lost_held), nor while a writer it
 * interrupted still has an uncommitted record there (lost_nested).  The
 * consumer sets HELD with a cmpxchg on the same word, so exactly one side
 * takes a packet [B3].
 *
 * Counting.  Every reserve attempt while tracing ends exactly once: as an
 * event committed to a slot (its @events) or in one of lost_full,
 * lost_held, lost_nested, lost_too_big.  The fast path counts nothing
 * else: "written", the attempts, is the sum of those (rtr_written()),
 * taken when the ABI asks for it.  A slot's @events only grows; a
 * generation holds the difference to the count at which the slot was last
 * retired (rtr_slot_info.retired).  Retiring a generation -- PUT, or the
 * overwrite push -- adds that difference to @delivered or lost_overrun and
 * moves @retired up to the count, before any writer may open the slot
 * again ([B2] for PUT, [R2] for the push); the slot's @events stays as it
 * is, so the sum does not change.  So once drained,
 * written == delivered + all lost_* exactly.  All of them count events:
 * a stack trailer (ringtrace_put_trailer()) is part of its event's
 * attempt, and goes to the slot's @trailers instead, retired alongside
 * (retired_trailers) only for the packet's events field, which counts
 * the records a reader finds in the packet: events and trailers.
 *
 * Timestamps.  The clock is read inside the reserve retry loop, after the
 * offset: a nested reservation makes the outer cmpxchg fail and re-read the
 * clock, so timestamps never decrease in buffer order, timestamp_begin is
 * the first event's time and timestamp_end (read by the closer) is not
 * earlier than any event of the packet.  Each read is clamped to
 * @last_ts, the clock floor, which every successful cmpxchg publishes
 * after it: an event's time, a flush's empty packet's, and a close's
 * (rtr_close_packet(): event, flush or drop), its packet's
 * timestamp_end, so the next packet's timestamp_begin is no earlier
 * (ktime_get_mono_fast_ns() may step back across a timekeeper update).
 * Window: a writer nesting between a cmpxchg and that store (an NMI)
 * reads the older floor.  events_discarded is snapshotted in the same
 * loop, so it never decreases from packet to packet.
 *
 * Recordings.  The writers number a packet by its position, pos /
 * subbuf_size, and snapshot the losses counted since the buffer was
 * allocated.  A consumer's packets say what happened since its recording
 * began: GET rewrites packet_seq_num and events_discarded relative to
 * @origin, which a consumer opening a drained buffer with tracing off
 * moves to the write position (rtr_buffer_rebase()).  So a second
 * recording in one module load starts at packet 0 with no loss, while a
 * consumer that takes over a trace in progress (tracing on, or packets
 * left) reads on in the numbering of the one before, and its first packet
 * still counts what was lost or taken before it.  A packet handed back
 * unconsumed gets the writer's number again (rtr_buffer_unhold()).
 *
 * Memory ordering (the userspace half is in the uapi header):
 *  [B1] writer: record/header stores, smp_wmb(), commit count add
 *       consumer: read commit count, smp_rmb(), read the packet
 *  [B2] consumer: reads of the packet (kernel and user), retire its events,
 *       atomic_long_set_release(consumed)
 *       writer: atomic_long_read_acquire(consumed), then reuse the slot
 *  [B3] consumer cmpxchg(consumed, c, c | HELD) vs overwrite push
 *       cmpxchg(consumed, c, c + subbuf_size): fully ordered, one wins
 *  [B4] stop: writers gone (synchronize_rcu()), smp_store_release(stopped)
 *       GET, poll: smp_load_acquire(stopped), then flush from any CPU
 *  [B5] push: retiring = 1, cmpxchg(consumed), add lost_overrun,
 *       smp_store_release(retiring, 0)
 *       GET: cmpxchg(consumed), smp_load_acquire(retiring) until 0, read
 *       lost_overrun
 *  [B6] start: rtr_stack_start() empties the stack tables,
 *       smp_store_release(ringtrace_tracing, 1); a stack writer:
 *       smp_load_acquire(ringtrace_tracing), then reads its table
 *
 *  [S1] [S2] splice.c: the held packet's pipe buffers, and the one
 *       of them or the consumer that hands it back
 *
 * Race windows:
 *  [R1] An interrupt between a writer's offset cmpxchg and its header
 *       writes may fill and close the packet first: header fields are
 *       split between opener and closer and completion waits for both.
 *  [R2] An overwrite push frees the slot with its cmpxchg on @consumed and
 *       retires the slot's events just after.  A writer nested in between
 *       could open the freed slot, wrap the whole ring and push the same
 *       slot again, retiring old and new events together.  So the pusher
 *       raises @retiring first, and every writer nested inside the window
 *       that would open a packet drops its event (lost_nested) instead.
 *       The push may then succeed and the writer's own offset cmpxchg
 *       fail because a nested writer closed the open packet: the pushed
 *       packet is counted lost either way, and the slot is free for whoever
 *       opens it next.
 *  [R3] Stopping clears ringtrace_tracing, then synchronize_rcu() waits
 *       for every writer (they run with preemption off from before the
 *       flag test, a trigger's hit after the commit included: trigger.c
 *       [T4]), so the stop flush runs with no writer anywhere.
 *  [R4] A flush runs as a writer on the owning CPU (IPI) while writers may
 *       run there, else from the caller's CPU: when the owner is offline
 *       (cpus_read_lock() keeps it so) or tracing is stopped [B4].  One
 *       flush at a time per buffer (flush_lock), so such a remote flush
 *       is the only one modifying the buffer's local_t.
 *  [R5] A writer reads @offset, then checks the room at the boundary it
 *       would open against @consumed.  Writers nested in between may fill
 *       the ring and push @consumed past that boundary (overwrite mode),
 *       or complete packets that the consumer takes meanwhile.  The
 *       boundary is then behind @consumed: rtr_make_room() reports room
 *       instead of pushing a packet that does not stand in the way (or of
 *       dropping the event), and the writer's cmpxchg on @offset, which
 *       has moved, fails and retries with the new offset.
 *  [W1] Completed packets wake the consumer through irq_work, queued by
 *       the writer only on its own CPU while that CPU is up (irq_wakeup,
 *       set by the online callback and cleared by the offline one).  A
 *       packet completed while it is clear -- a CPU being brought up
 *       already runs interrupts and threads before its online callback,
 *       a dying one still does after its offline callback -- queued
 *       nothing: the online and the dead callbacks wake the consumer.
 *  [W3] Wakeup watermark.  A consumer may ask (SET_WAKEUP) to be woken
 *       only once @wakeup_packets packets wait, at most half the ring,
 *       so that one wakeup takes several packets while the ring has room
 *       and every completion wakes it once the ring is half full.  The
 *       completion and poll count the waiting packets from two
 *       unsynchronised reads (rtr_waiting()): @consumed only grows, so a
 *       stale one counts more, never fewer -- an early wakeup, and GET
 *       says -EAGAIN for a packet a nested writer has not committed yet.
 *       Fewer than the watermark wake no one: the consumer flushes on its
 *       own clock (FLUSH, then GET until -EAGAIN), as ringtraced's tick
 *       does.  poll()'s stale @offset may count fewer, but the completion
 *       that brings the count to the watermark reads its own CPU's offset
 *       and wakes the queue after poll_wait() registered the reader, as
 *       for any packet.  When tracing stops, poll reports any packet.
 *  [W2] The meta page is refreshed by the wakeup irq_work, GET, PUT and
 *       flushes, unserialised.  A refresh that read the counters, then
 *       stalled before its stores, would store them over a newer
 *       refresh's: the consumer could read, after GET, an events_gen
 *       older than the packet's events.  On PREEMPT_RT the irq_work runs
 *       in a preemptible per-CPU thread, where the stall is a preemption
 *       by any higher-priority thread, while the writers of that CPU go
 *       on.  So each refresh is one critical section of meta_lock, a raw
 *       spinlock that the hard-interrupt irq_work (no PREEMPT_RT) may
 *       take too.
 */

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/vmalloc.h>

#include "internal.h"

/* Why a reservation failed: indexes the lost_* counters. */
enum rtr_lost {
	RTR_ROOM,
	RTR_LOST_FULL,
	RTR_LOST_HELD,
	RTR_LOST_NESTED,
	RTR_LOST_TOO_BIG,
};

static unsigned long rtr_buf_size(const struct rtr_buffer *buf)
{
	return buf->w.buf_mask + 1;
}

static unsigned int rtr_slot_index(const struct rtr_buffer *buf,
				   unsigned long pos)
{
	return (pos & buf->w.buf_mask) >> buf->w.subbuf_order;
}

static struct ringtrace_packet_header *
rtr_packet(const struct rtr_buffer *buf, unsigned long pos)
{
	return (void *)(buf->w.data +
			(pos & buf->w.buf_mask & ~buf->w.subbuf_mask));
}

static local_t *rtr_lost_counter(struct rtr_buffer *buf, enum rtr_lost why)
{
	switch (why) {
	case RTR_LOST_HELD:
		return &buf->lost_held;
	case RTR_LOST_NESTED:
		return &buf->lost_nested;
	case RTR_LOST_TOO_BIG:
		return &buf->lost_too_big;
	default:
		return &buf->lost_full;
	}
}

/* Lost events a packet header reports; overruns are added at GET. */
static u64 rtr_lost_dropped(const struct rtr_buffer *buf)
{
	return local_read(&buf->lost_full) + local_read(&buf->lost_held) +
	       local_read(&buf->lost_nested) + local_read(&buf->lost_too_big);
}

/*
 * Reserve attempts while tracing ("Counting" above): the events ever
 * committed to the slots plus the events dropped before reaching one.
 * Overruns are not added: a pushed packet's events were committed, and
 * stay in its slot's count.  Counts only what has finished, so a writer
 * on the owning CPU between its flag test and its commit or drop is not
 * in it yet; once the writers are gone it is the number of attempts.
 * Every term only grows, so two calls in a row (the refreshes under
 * meta_lock [W2]) never go back.  One read per slot: 64 at the defaults,
 * RINGTRACE_MAX_SUBBUFS at most.
 */
static u64 rtr_written(const struct rtr_buffer *buf)
{
	unsigned int i, n = rtr_buf_size(buf) >> buf->w.subbuf_order;
	u64 events = 0;

	for (i = 0; i < n; i++)
		events += local_read(&buf->w.slots[i].events);
	return events + rtr_lost_dropped(buf);
}

/* Is the generation of @pos's slot fully committed? */
static bool rtr_slot_complete(const struct rtr_buffer *buf, unsigned long pos)
{
	unsigned long commit =
		local_read(&ringtrace_pos_slot(&buf->w, pos)->commit);

	/* [B1] Pairs with smp_wmb() in ringtrace_commit_slot(). */
	smp_rmb();
	return commit == ringtrace_commit_target(&buf->w, pos);
}

/*
 * Records of the generation at @pos, its events and their trailers: the
 * packet's events field.  Exact once that generation is complete and no
 * writer can open the slot again.
 */
static unsigned long rtr_slot_records(const struct rtr_buffer *buf,
				      unsigned long pos)
{
	unsigned int i = rtr_slot_index(buf, pos);

	return local_read(&buf->w.slots[i].events) - buf->slot_info[i].retired +
	       local_read(&buf->w.trailers[i]) -
	       buf->slot_info[i].retired_trailers;
}

/*
 * Retire the generation of slot @i, complete and closed to writers: its
 * events, which the caller counts as delivered or overrun.
 */
static unsigned long rtr_slot_retire(struct rtr_buffer *buf, unsigned int i)
{
	struct rtr_slot_info *info = &buf->slot_info[i];
	unsigned long total = local_read(&buf->w.slots[i].events);
	unsigned long events = total - info->retired;

	info->retired = total;
	info->retired_trailers = local_read(&buf->w.trailers[i]);
	return events;
}

/*
 * Fault injection for the selftests: with inject_push_nesting=N, an
 * outermost overwrite push writes N markers of 1500 bytes inside its
 * window, exactly as interrupts nesting there would [R2] -- a window of a
 * few instructions that real interrupts hit too rarely for a test to
 * rely on.  Off (0) by default; at most RTR_INJECT_MAX.
 */
#define RTR_INJECT_MAX		16
#define RTR_INJECT_LEN		1500

static unsigned int rtr_inject_push_nesting;
module_param_named(inject_push_nesting, rtr_inject_push_nesting, uint, 0600);
MODULE_PARM_DESC(inject_push_nesting,
		 "test only: markers written inside each overwrite push (0..16)");

static const struct {
	u16 len;
	u8 data[RTR_INJECT_LEN];
} __packed rtr_inject_marker = {
	.len = RTR_INJECT_LEN,
	.data = "ringtrace: nested in an overwrite push",
};

static void rtr_inject_push_window(struct rtr_buffer *buf)
{
	unsigned int n = min(READ_ONCE(rtr_inject_push_nesting),
			     RTR_INJECT_MAX);

	if (likely(!n) || local_read(&buf->w.nesting) != 1)
		return;
	while (n--)
		ringtrace_write(rtr_marker_event.id, &rtr_inject_marker,
				sizeof(rtr_inject_marker));
}

/*
 * Overwrite push: retire the oldest packet, at @cons, to make room.  Runs
 * only on the owning CPU, as a writer.  The window between the cmpxchg
 * that frees the slot and the retirement of its events is closed to
 * nested writers that would open a packet [R2].
 */
static bool rtr_push(struct rtr_buffer *buf, unsigned long cons)
{
	bool pushed;

	WRITE_ONCE(buf->retiring, 1);
	/*
	 * [B3] Pairs with the cmpxchg in rtr_buffer_get().  The counts
	 * retired below are stable: the generation is complete, and no
	 * writer opens the slot again before the window closes [R2].
	 */
	pushed = atomic_long_cmpxchg(&buf->consumed, cons,
				     cons + buf->w.subbuf_size) == cons;
	if (pushed) {
		rtr_inject_push_window(buf);
		local_add(rtr_slot_retire(buf, rtr_slot_index(buf, cons)),
			  &buf->lost_overrun);
	}
	/* [B5] Pairs with smp_load_acquire() in rtr_buffer_get(). */
	smp_store_release(&buf->retiring, 0);
	return pushed;
}

/*
 * May a packet open at boundary @pos?  In overwrite mode (and when
 * @may_overwrite) make room by retiring the oldest packet.
 *
 * @pos comes from the caller's read of @offset, and writers nested since
 * may have moved @consumed past it [R5]: then @pos is stale, and the
 * caller's cmpxchg on @offset will fail and retry with a fresh one.  Say
 * there is room rather than push or drop for a position that is gone.
 */
static enum rtr_lost rtr_make_room(struct rtr_buffer *buf, unsigned long pos,
				   bool may_overwrite)
{
	unsigned long cons, oldest;

	/* Nested inside a push's window: the slot being retired is ours [R2]. */
	if (READ_ONCE(buf->retiring))
		return RTR_LOST_NESTED;
	for (;;) {
		/* [B2] Pairs with atomic_long_set_release() in rtr_buffer_put(). */
		cons = atomic_long_read_acquire(&buf->consumed);
		oldest = cons & ~RTR_POS_HELD;
		/* Free running: "behind @consumed" is a negative difference. */
		if ((long)(pos - oldest) < 0 ||
		    pos - oldest < rtr_buf_size(buf))
			return RTR_ROOM;
		if (!buf->overwrite || !may_overwrite)
			return RTR_LOST_FULL;
		if (cons & RTR_POS_HELD)
			return RTR_LOST_HELD;
		if (!rtr_slot_complete(buf, cons))
			return RTR_LOST_NESTED;
		if (rtr_push(buf, cons))
			return RTR_ROOM;
		/* The consumer took or released a packet meanwhile: look again. */
	}
}

static void rtr_open_packet(struct rtr_buffer *buf, unsigned long pos, u64 ts)
{
	struct ringtrace_packet_header *ph = rtr_packet(buf, pos);

	/* End fields belong to the closer, who may already have run [R1]. */
	ph->magic = RINGTRACE_CTF_MAGIC;
	memcpy(ph->uuid, rtr_trace.uuid, sizeof(ph->uuid));
	ph->stream_id = RINGTRACE_STREAM_ID;
	ph->stream_instance_id = buf->cpu;
	ph->timestamp_begin = ts;
	ph->packet_seq_num = pos >> buf->w.subbuf_order;
	ph->cpu_id = buf->cpu;
	ringtrace_commit_bytes(&buf->w, pos, RINGTRACE_PACKET_HEADER_SIZE);
}

/*
 * lost_reported only grows: a closer interrupted after its snapshot of the
 * lost count must not write it over a nested closer's newer one, or a
 * later flush would emit an empty packet for losses already reported.
 */
static void rtr_report_lost(struct rtr_buffer *buf, u64 discarded)
{
	long old = local_read(&buf->lost_reported), cur;

	while ((u64)old < discarded) {
		cur = local_cmpxchg(&buf->lost_reported, old, discarded);
		if (cur == old)
			break;
		old = cur;
	}
}

/*
 * Close the packet whose content ends at @end (never on a boundary).
 * The packet is exactly its content: packet_size == content_size, so the
 * consumer writes content_size bytes and has a whole CTF packet.
 */
static void rtr_close_packet(struct rtr_buffer *buf, unsigned long end,
			     u64 ts, u64 discarded)
{
	unsigned long used = end & buf->w.subbuf_mask;
	struct ringtrace_packet_header *ph = rtr_packet(buf, end);

	/* The clock floor: the next packet begins no earlier than this end. */
	WRITE_ONCE(buf->w.last_ts, ts);
	ph->timestamp_end = ts;
	ph->content_size = (u64)used * 8;
	ph->packet_size = (u64)used * 8;
	ph->events_discarded = discarded;
	buf->slot_info[rtr_slot_index(buf, end)].discarded = discarded;
	rtr_report_lost(buf, discarded);
	ringtrace_commit_bytes(&buf->w, end, buf->w.subbuf_size - used);
}

/*
 * The fast path hands over the offset it read and the clock it read after
 * it: a valid pair for the first attempt (a drop then costs one clock
 * read).  Every retry reads both again, offset first.
 */
struct ringtrace_slow_reservation
ringtrace_reserve_slow(struct ringtrace_buffer *w, unsigned int id,
		       unsigned int payload_len, unsigned long old,
		       u64 ts, u64 last)
{
	struct rtr_buffer *buf = rtr_buf(w);
	unsigned long off, begin, next = 0;
	bool close, open;
	enum rtr_lost why;
	unsigned int hlen;
	u64 lost;

	if (unlikely(payload_len > buf->max_payload)) {
		why = RTR_LOST_TOO_BIG;
		goto drop;
	}

	for (;; old = local_read(&w->offset),
		ts = ringtrace_buffer_clock(w, &last)) {
		lost = rtr_lost_dropped(buf);
		off = old & w->subbuf_mask;
		hlen = ringtrace_header_len(id, ts, last);
		close = off && off + hlen + payload_len >= w->subbuf_size;
		open = !off || close;
		begin = old;
		if (open) {
			next = close ? old - off + w->subbuf_size : old;
			why = READ_ONCE(buf->disabled) ? RTR_LOST_FULL :
			      rtr_make_room(buf, next, true);
			if (why != RTR_ROOM) {
				/* No room: still close, so the consumer gets it. */
				if (close && local_cmpxchg(&w->offset, old,
							   next) != old)
					continue;
				if (close)
					rtr_close_packet(buf, old, ts, lost);
				goto drop;
			}
			/* First event: its time is timestamp_begin. */
			hlen = ringtrace_header_len(id, ts, ts);
			begin = next + RINGTRACE_PACKET_HEADER_SIZE;
		}
		if (local_cmpxchg(&w->offset, old,
				  begin + hlen + payload_len) == old)
			break;
	}

	if (close)
		rtr_close_packet(buf, old, ts, lost);
	if (open)
		rtr_open_packet(buf, next, ts);
	WRITE_ONCE(w->last_ts, ts);
	return (struct ringtrace_slow_reservation) {
		.payload = ringtrace_put_header(w->data + (begin & w->buf_mask),
						hlen, id, ts),
		.pos = begin,
	};
drop:
	local_inc(rtr_lost_counter(buf, why));
	local_dec(&w->nesting);
	preempt_enable_notrace();
	return (struct ringtrace_slow_reservation) { };
}
EXPORT_SYMBOL_GPL(ringtrace_reserve_slow);

/* Too deep: ringtrace_reserve() did not add itself to @nesting. */
void ringtrace_drop_nested(struct ringtrace_buffer *w)
{
	local_inc(&rtr_buf(w)->lost_nested);
}
EXPORT_SYMBOL_GPL(ringtrace_drop_nested);

/*
 * Packets between @consumed and the writer's slot, complete or about to
 * be [W3]; the held one included.
 */
unsigned long rtr_waiting(struct rtr_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed) & ~RTR_POS_HELD;
	unsigned long off = local_read(&buf->w.offset) & ~buf->w.subbuf_mask;

	return (off - cons) >> buf->w.subbuf_order;
}

/*
 * A packet is complete: wake the consumer later, from irq_work [W1], if
 * enough of them wait [W3].
 * Only on the owning CPU, and only while it is up: an irq_work queued on a
 * CPU past the point where it runs its last ones would stay pending for
 * good, and irq_work_sync() in rtr_buffer_free() would wait for it forever.
 * A flush from another CPU wakes the consumer itself (rtr_buffer_wake()),
 * and so does the CPU hotplug callback for a CPU that went down.
 */
void ringtrace_subbuf_done(struct ringtrace_buffer *w)
{
	struct rtr_buffer *buf = rtr_buf(w);

	if (likely(READ_ONCE(buf->irq_wakeup)) &&
	    buf->cpu == smp_processor_id() &&
	    rtr_waiting(buf) >= READ_ONCE(buf->wakeup_packets))
		irq_work_queue(&buf->wakeup);
}
EXPORT_SYMBOL_GPL(ringtrace_subbuf_done);

/*
 * Snapshot the counters into the meta page.  Reads and stores are one
 * section under meta_lock, so that the last snapshot written is the
 * newest [W2].
 */
static void rtr_meta_update(struct rtr_buffer *buf)
{
	struct ringtrace_meta *meta = buf->meta;
	unsigned long flags;

	raw_spin_lock_irqsave(&buf->meta_lock, flags);
	WRITE_ONCE(meta->write_pos, local_read(&buf->w.offset));
	WRITE_ONCE(meta->written, rtr_written(buf));
	WRITE_ONCE(meta->lost, rtr_lost_dropped(buf) +
			       local_read(&buf->lost_overrun));
	WRITE_ONCE(meta->delivered, READ_ONCE(buf->delivered));
	WRITE_ONCE(meta->mode, READ_ONCE(buf->overwrite) ?
			       RINGTRACE_MODE_OVERWRITE :
			       RINGTRACE_MODE_DISCARD);
	WRITE_ONCE(meta->events_gen, READ_ONCE(rtr_events_gen));
	/* Pairs with the reader's acquire load (uapi header). */
	smp_store_release(&meta->consumed_pos,
			  (u64)atomic_long_read(&buf->consumed));
	raw_spin_unlock_irqrestore(&buf->meta_lock, flags);
}

/* Refresh the meta page and wake the consumer's poll. */
void rtr_buffer_wake(struct rtr_buffer *buf)
{
	rtr_meta_update(buf);
	wake_up_all(&buf->waitq);
}

/* [W1] irq_work: runs after the writer that completed a packet returned. */
static void rtr_wakeup(struct irq_work *work)
{
	rtr_buffer_wake(container_of(work, struct rtr_buffer, wakeup));
}

/*
 * Called on the owning CPU by its hotplug callbacks: with @on false (the
 * CPU is going down), writers stop queueing the irq_work, and the one
 * already queued has run when this returns; with @on true (the CPU came
 * up), they queue it again, and what completed before is woken for.
 */
void rtr_buffer_set_irq_wakeup(struct rtr_buffer *buf, bool on)
{
	WRITE_ONCE(buf->irq_wakeup, on);
	if (!on) {
		irq_work_sync(&buf->wakeup);
		return;
	}
	/*
	 * [W1] Packets completed on this CPU before irq_wakeup was set queued
	 * no wakeup.  Their writers ran here, before the store above in
	 * this CPU's order, so the wake below refreshes the meta page after
	 * them, and a consumer that polls afterwards finds them ready;
	 * later ones queue their own irq_work.
	 */
	rtr_buffer_wake(buf);
}

/*
 * Close the open packet, or, if losses happened since the last packet was
 * closed, emit an empty packet that reports them (when there is room; the
 * consumer retries once it has drained).  Runs as a writer on the owning
 * CPU, or where no writer can run [R4].
 */
static void rtr_buffer_flush_local(struct rtr_buffer *buf)
{
	struct ringtrace_buffer *w = &buf->w;
	unsigned long old, off, next;
	u64 ts, last, lost;

	for (;;) {
		old = local_read(&w->offset);
		ts = ringtrace_buffer_clock(w, &last);
		lost = rtr_lost_dropped(buf);
		off = old & w->subbuf_mask;
		if (off) {
			next = old - off + w->subbuf_size;
			if (local_cmpxchg(&w->offset, old, next) != old)
				continue;
			rtr_close_packet(buf, old, ts, lost);
			return;
		}
		if (lost == (u64)local_read(&buf->lost_reported) ||
		    READ_ONCE(buf->disabled) ||
		    rtr_make_room(buf, old, false) != RTR_ROOM)
			return;
		next = old + RINGTRACE_PACKET_HEADER_SIZE;
		if (local_cmpxchg(&w->offset, old, next) != old)
			continue;
		WRITE_ONCE(w->last_ts, ts);
		rtr_open_packet(buf, old, ts);
		/* Re-enter the close path for the now open, empty packet. */
	}
}

static void rtr_flush_ipi(void *info)
{
	rtr_buffer_flush_local(info);
}

/*
 * Has a flush anything to do: a packet open, or losses that no packet
 * reported yet?  Read from any CPU: a packet that opens meanwhile is one
 * the flush did not promise to close.
 */
bool rtr_buffer_flush_wanted(struct rtr_buffer *buf)
{
	return (local_read(&buf->w.offset) & buf->w.subbuf_mask) ||
	       rtr_lost_dropped(buf) != (u64)local_read(&buf->lost_reported);
}

/*
 * Close the open packet for the consumer, from process context.  Decided
 * here first, so that an idle CPU gets no IPI and no empty packet.  The
 * caller holds cpus_read_lock(): an offline owner stays offline [R4].
 */
void rtr_buffer_flush(struct rtr_buffer *buf)
{
	mutex_lock(&buf->flush_lock);
	if (!rtr_buffer_flush_wanted(buf))
		goto unlock;
	if (cpu_online(buf->cpu) && !rtr_is_stopped()) {
		smp_call_function_single(buf->cpu, rtr_flush_ipi, buf, 1);
	} else {
		/*
		 * [R4] No writer can run on this buffer and flush_lock keeps
		 * other flushes off.  Preemption off, as for any writer, so
		 * that ringtrace_subbuf_done() knows where it runs.
		 */
		preempt_disable();
		rtr_buffer_flush_local(buf);
		preempt_enable();
	}
unlock:
	mutex_unlock(&buf->flush_lock);
	rtr_buffer_wake(buf);
}

bool rtr_buffer_ready(struct rtr_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	return !(cons & RTR_POS_HELD) && rtr_slot_complete(buf, cons);
}

/* Nothing left for the consumer (meaningful once writers are quiet). */
bool rtr_buffer_drained(struct rtr_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	return cons == (unsigned long)local_read(&buf->w.offset);
}

/* Caller holds buf->consumer_lock. */
int rtr_buffer_get(struct rtr_buffer *buf, struct ringtrace_subbuf *sb)
{
	struct ringtrace_packet_header *ph;
	unsigned long cons;
	u64 content;

	lockdep_assert_held(&buf->consumer_lock);
	if (READ_ONCE(buf->disabled))
		return -EIO;
	for (;;) {
		cons = atomic_long_read(&buf->consumed);
		if (cons & RTR_POS_HELD)
			return -EBUSY;
		if (!rtr_slot_complete(buf, cons))
			return -EAGAIN;
		/* [B3] Pairs with the push cmpxchg in rtr_push(). */
		if (atomic_long_cmpxchg(&buf->consumed, cons,
					cons | RTR_POS_HELD) == cons)
			break;
	}
	/*
	 * Ours now ([S1] in splice.c): no pipe buffer is left of an earlier
	 * packet, since HELD was clear.
	 */
	atomic_set(&buf->splice_refs, RTR_SPLICE_OWNER);

	ph = rtr_packet(buf, cons);
	content = ph->content_size / 8;
	if (WARN_ONCE(ph->magic != RINGTRACE_CTF_MAGIC ||
		      content < RINGTRACE_PACKET_HEADER_SIZE ||
		      content >= buf->w.subbuf_size ||
		      ph->packet_seq_num != cons >> buf->w.subbuf_order,
		      "ringtrace: cpu%u: corrupt packet at %lu, buffer disabled\n",
		      buf->cpu, cons)) {
		WRITE_ONCE(buf->disabled, 1);
		rtr_buffer_unhold(buf);
		return -EIO;
	}

	/*
	 * [B5] The push that freed the packet before this one may still be
	 * in its window, its overrun not yet counted.  The window is a few
	 * instructions of a writer that cannot be preempted: wait for it, so
	 * that this packet reports that overrun and not the next one.
	 */
	while (smp_load_acquire(&buf->retiring))
		cpu_relax();

	/*
	 * Exact now that the packet is complete and held; numbered and
	 * counted from the recording's origin ("Recordings" above).
	 */
	ph->events = rtr_slot_records(buf, cons);
	ph->events_discarded =
		buf->slot_info[rtr_slot_index(buf, cons)].discarded +
		local_read(&buf->lost_overrun) - buf->discarded_origin;
	ph->packet_seq_num = (cons - buf->origin) >> buf->w.subbuf_order;

	sb->size = sizeof(*sb);
	sb->pos = cons;
	sb->offset = PAGE_SIZE + (cons & buf->w.buf_mask);
	sb->content_size = content;
	sb->packet_size = buf->w.subbuf_size;
	sb->events = ph->events;
	sb->events_discarded = ph->events_discarded;
	rtr_meta_update(buf);
	return 0;
}

/* Bytes of the packet held at @cons (GET checked: below subbuf_size). */
unsigned long rtr_buffer_held_content(struct rtr_buffer *buf,
				      unsigned long cons)
{
	lockdep_assert_held(&buf->consumer_lock);
	return rtr_packet(buf, cons)->content_size / 8;
}

/* Caller holds buf->consumer_lock. */
int rtr_buffer_put(struct rtr_buffer *buf, u64 pos)
{
	unsigned long cons;

	lockdep_assert_held(&buf->consumer_lock);
	cons = atomic_long_read(&buf->consumed);
	if (!(cons & RTR_POS_HELD) || (cons & ~RTR_POS_HELD) != pos)
		return -EINVAL;
	/*
	 * [S2] A pipe still holds pages of the packet (or it is an earlier
	 * consumer's, waiting for its pipes).  The acquire pairs with the
	 * fully ordered decrement of the last pipe buffer's release: the
	 * pipe's reads of the packet are done before the release below.
	 */
	if (atomic_read_acquire(&buf->splice_refs) != RTR_SPLICE_OWNER)
		return -EBUSY;
	atomic_set(&buf->splice_refs, 0);

	/*
	 * The packet is held: no writer can open its slot, and every writer
	 * of this generation has committed, so the counts are stable and
	 * @retired is ours to move until the release below [B2].
	 */
	WRITE_ONCE(buf->delivered, buf->delivered +
				   rtr_slot_retire(buf, rtr_slot_index(buf, pos)));
	WRITE_ONCE(buf->subbufs_delivered, buf->subbufs_delivered + 1);
	WRITE_ONCE(buf->bytes_delivered, buf->bytes_delivered +
			rtr_packet(buf, pos)->content_size / 8);
	/* [B2] Pairs with atomic_long_read_acquire() in rtr_make_room(). */
	atomic_long_set_release(&buf->consumed, pos + buf->w.subbuf_size);
	rtr_meta_update(buf);
	return 0;
}

/*
 * The consumer went away holding a packet, or cannot learn that it holds
 * one: hand it back unconsumed -- at once, or, while a pipe still holds
 * pages of it, when the last of them is released ([S1] in splice.c).
 * Caller holds buf->consumer_lock.
 */
void rtr_buffer_unhold(struct rtr_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	if (!(cons & RTR_POS_HELD))
		return;
	/* An earlier consumer's packet, waiting for its pipes: not ours. */
	if (atomic_read(&buf->splice_refs) < RTR_SPLICE_OWNER)
		return;
	/* [S1] Fully ordered: exactly one of us and the last pipe buffer. */
	if (atomic_sub_return(RTR_SPLICE_OWNER, &buf->splice_refs))
		return;
	rtr_buffer_hand_back(buf);
}

/*
 * The held packet has no owner left (no consumer, no pipe buffer): back
 * to the writers, unconsumed.  Under consumer_lock, or from the release
 * of the packet's last pipe buffer, which its consumer left: no consumer
 * can hold the packet then, a later one's GET and PUT see HELD and
 * refuse it until the release below.
 */
void rtr_buffer_hand_back(struct rtr_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	/* The writer's number again, which the next GET checks. */
	rtr_packet(buf, cons)->packet_seq_num = cons >> buf->w.subbuf_order;
	/*
	 * [B2] Pairs with atomic_long_read_acquire() in rtr_make_room(): an
	 * overwriting writer may push this packet once HELD is gone, and the
	 * consumer's reads of it must be done by then.
	 */
	atomic_long_set_release(&buf->consumed, cons & ~RTR_POS_HELD);
	/* The meta page must not go on saying the packet is held. */
	rtr_meta_update(buf);
}

/*
 * A consumer opens the buffer, tracing off: if nothing is left for it --
 * no packet to take, none open, no loss still to report -- whatever the
 * buffer held went to earlier consumers or was lost before this one came,
 * and its recording begins
 * here ("Recordings" above).  Otherwise it takes over where the last
 * recording began.  Under the control lock, with no consumer, no writer
 * [R3] and so no flush [R4].
 */
void rtr_buffer_rebase(struct rtr_buffer *buf)
{
	unsigned long off = local_read(&buf->w.offset);

	if ((unsigned long)atomic_long_read(&buf->consumed) != off ||
	    rtr_buffer_flush_wanted(buf))
		return;
	buf->origin = off;
	buf->discarded_origin = rtr_lost_dropped(buf) +
				local_read(&buf->lost_overrun);
}

/* Mode changes (tracing off): the meta page says which mode is on. */
void rtr_buffer_set_mode(struct rtr_buffer *buf, bool overwrite)
{
	WRITE_ONCE(buf->overwrite, overwrite);
	rtr_meta_update(buf);
}

void rtr_buffer_stats(struct rtr_buffer *buf, struct ringtrace_stats *st)
{
	st->written = rtr_written(buf);
	st->lost_full = local_read(&buf->lost_full);
	st->lost_overrun = local_read(&buf->lost_overrun);
	st->lost_held = local_read(&buf->lost_held);
	st->lost_nested = local_read(&buf->lost_nested);
	st->lost_too_big = local_read(&buf->lost_too_big);
	st->delivered = READ_ONCE(buf->delivered);
	st->subbufs_delivered = READ_ONCE(buf->subbufs_delivered);
	st->bytes_delivered = READ_ONCE(buf->bytes_delivered);
}

/* Two separate reads: consistent only while the writers are quiet. */
void rtr_buffer_positions(struct rtr_buffer *buf, struct ringtrace_positions *p)
{
	p->consumed_pos = atomic_long_read(&buf->consumed);
	p->write_pos = local_read(&buf->w.offset);
	p->subbuf_size = buf->w.subbuf_size;
	p->num_subbufs = rtr_buf_size(buf) >> buf->w.subbuf_order;
}

/* Pages of one buffer: the meta page and the sub-buffers. */
unsigned long rtr_buffer_pages(unsigned long subbuf_size,
			       unsigned int num_subbufs)
{
	return 1 + ((subbuf_size * num_subbufs) >> PAGE_SHIFT);
}

static void rtr_free_pages(struct page **pages, unsigned int nr)
{
	while (nr--) {
		__free_page(pages[nr]);
		cond_resched();
	}
	kvfree(pages);
}

/*
 * The counters of a slice (persist.c) are the writers' own, used in
 * place: the image's layout (<linux/ringtrace_persist.h>) is theirs.
 */
static void rtr_check_persist_layout(void)
{
	BUILD_BUG_ON(sizeof(struct ringtrace_slot) !=
		     sizeof(struct ringtrace_persist_slot));
	BUILD_BUG_ON(offsetof(struct ringtrace_slot, commit) !=
		     offsetof(struct ringtrace_persist_slot, commit));
	BUILD_BUG_ON(offsetof(struct ringtrace_slot, events) !=
		     offsetof(struct ringtrace_persist_slot, events));
	BUILD_BUG_ON(sizeof(local_t) != sizeof(__u64));
	BUILD_BUG_ON(sizeof(struct rtr_slot_info) !=
		     sizeof(struct ringtrace_persist_slot_info));
	BUILD_BUG_ON(offsetof(struct rtr_slot_info, discarded) !=
		     offsetof(struct ringtrace_persist_slot_info, discarded));
	BUILD_BUG_ON(offsetof(struct rtr_slot_info, retired) !=
		     offsetof(struct ringtrace_persist_slot_info, retired));
	BUILD_BUG_ON(offsetof(struct rtr_slot_info, retired_trailers) !=
		     offsetof(struct ringtrace_persist_slot_info,
			      retired_trailers));
}

/* Bytes of a slice's counters: slots, trailers, slot_info, page rounded. */
unsigned long rtr_buffer_counters_size(unsigned int num_subbufs)
{
	rtr_check_persist_layout();
	return PAGE_ALIGN((unsigned long)num_subbufs *
			  (sizeof(struct ringtrace_slot) + sizeof(local_t) +
			   sizeof(struct rtr_slot_info)));
}

/* The counters and pages of a buffer, from the page allocator. */
static int rtr_buffer_alloc_pages(struct rtr_buffer *buf, unsigned int cpu,
				  unsigned int num_subbufs, bool killable)
{
	const gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
			  __GFP_RETRY_MAYFAIL;
	int node = cpu_to_node(cpu);
	unsigned int i;
	void *vaddr;

	buf->w.slots = kcalloc_node(num_subbufs, sizeof(*buf->w.slots),
				    GFP_KERNEL, node);
	buf->w.trailers = kcalloc_node(num_subbufs, sizeof(*buf->w.trailers),
				       GFP_KERNEL, node);
	buf->slot_info = kcalloc_node(num_subbufs, sizeof(*buf->slot_info),
				      GFP_KERNEL, node);
	if (!buf->w.slots || !buf->w.trailers || !buf->slot_info)
		goto free_slots;
	buf->pages = kvcalloc(buf->nr_pages, sizeof(*buf->pages), GFP_KERNEL);
	if (!buf->pages)
		goto free_slots;
	for (i = 0; i < buf->nr_pages; i++) {
		if (killable && fatal_signal_pending(current))
			goto free_pages;
		buf->pages[i] = alloc_pages_node(node, gfp, 0);
		if (!buf->pages[i])
			goto free_pages;
		cond_resched();
	}
	vaddr = vmap(buf->pages, buf->nr_pages, VM_MAP, PAGE_KERNEL);
	if (!vaddr)
		goto free_pages;
	buf->meta = vaddr;
	return 0;

free_pages:
	rtr_free_pages(buf->pages, i);
free_slots:
	kfree(buf->slot_info);
	kfree(buf->w.trailers);
	kfree(buf->w.slots);
	return -ENOMEM;
}

/*
 * The counters and pages of a buffer, in a slice of the persistent
 * region: already mapped (the region's one memremap()), only the array of
 * its struct pages, for the buffer file's mmap, is allocated.  Nothing of
 * the slice is written here: rtr_buffer_carve() does, once the caller
 * knows that every buffer of its set could be allocated.
 */
static int rtr_buffer_use_slice(struct rtr_buffer *buf,
				const struct rtr_slice *slice,
				unsigned int num_subbufs)
{
	unsigned int i;

	buf->pages = kvcalloc(buf->nr_pages, sizeof(*buf->pages), GFP_KERNEL);
	if (!buf->pages)
		return -ENOMEM;
	for (i = 0; i < buf->nr_pages; i++)
		buf->pages[i] = pfn_to_page(slice->ring_pfn + i);
	buf->w.slots = slice->counters;
	buf->w.trailers = (local_t *)(buf->w.slots + num_subbufs);
	buf->slot_info = (struct rtr_slot_info *)(buf->w.trailers +
						  num_subbufs);
	buf->meta = slice->ring;
	buf->persist = true;
	return 0;
}

/*
 * A buffer for @cpu, or NULL.  @killable: the caller is a task that asked
 * for it (a geometry change), and a fatal signal ends the allocation --
 * it may be the OOM killer's, for all the pages this loop took.  With a
 * @slice, the buffer lives in it and is not usable before
 * rtr_buffer_carve(); without, it is ready.
 */
struct rtr_buffer *rtr_buffer_alloc(unsigned int cpu, unsigned long subbuf_size,
				    unsigned int num_subbufs, bool overwrite,
				    bool killable, const struct rtr_slice *slice)
{
	struct rtr_buffer *buf;
	int ret;

	buf = kzalloc_node(sizeof(*buf), GFP_KERNEL, cpu_to_node(cpu));
	if (!buf)
		return NULL;
	buf->nr_pages = rtr_buffer_pages(subbuf_size, num_subbufs);
	if (slice)
		ret = rtr_buffer_use_slice(buf, slice, num_subbufs);
	else
		ret = rtr_buffer_alloc_pages(buf, cpu, num_subbufs, killable);
	if (ret) {
		kfree(buf);
		return NULL;
	}
	buf->wakeup_packets = 1;
	buf->w.data = (u8 *)buf->meta + PAGE_SIZE;
	buf->w.subbuf_size = subbuf_size;
	buf->w.subbuf_mask = subbuf_size - 1;
	buf->w.buf_mask = subbuf_size * num_subbufs - 1;
	buf->w.subbuf_order = ilog2(subbuf_size);
	buf->w.num_order = ilog2(num_subbufs);
	buf->max_payload = subbuf_size - RINGTRACE_PACKET_HEADER_SIZE -
			   RINGTRACE_EXTENDED_HEADER_SIZE - 1;
	buf->cpu = cpu;
	buf->overwrite = overwrite;
	mutex_init(&buf->consumer_lock);
	mutex_init(&buf->flush_lock);
	init_waitqueue_head(&buf->waitq);
	init_irq_work(&buf->wakeup, rtr_wakeup);
	raw_spin_lock_init(&buf->meta_lock);
	if (!slice)
		rtr_buffer_carve(buf);
	return buf;
}

/*
 * The meta page of a new buffer.  A slice's counters and pages are zero
 * (persist.c zeroes the rings it carves) and no one else uses them: the
 * buffer they belonged to before is freed or about to be, with no writer,
 * consumer or irq_work left (rtr_buffer_idle()).
 */
void rtr_buffer_carve(struct rtr_buffer *buf)
{
	struct ringtrace_meta *meta = buf->meta;

	meta->meta_size = sizeof(*meta);
	meta->meta_page_size = PAGE_SIZE;
	meta->subbuf_size = buf->w.subbuf_size;
	meta->num_subbufs = (buf->w.buf_mask + 1) >> buf->w.subbuf_order;
	meta->cpu = buf->cpu;
	meta->features = RINGTRACE_FEATURE_SPLICE;
	rtr_meta_update(buf);
}

/* No irq_work of @buf runs or is queued: it writes the meta page. */
void rtr_buffer_idle(struct rtr_buffer *buf)
{
	irq_work_sync(&buf->wakeup);
}

/*
 * The owning CPU queued its last irq_work before it went down, or is up
 * (rtr_buffer_set_irq_wakeup()): the sync below always ends.
 */
void rtr_buffer_free(struct rtr_buffer *buf)
{
	if (!buf)
		return;
	irq_work_sync(&buf->wakeup);
	if (buf->persist) {
		/* The slice stays as the writers left it: the image. */
		kvfree(buf->pages);
	} else {
		vunmap(buf->meta);
		rtr_free_pages(buf->pages, buf->nr_pages);
		kfree(buf->slot_info);
		kfree(buf->w.trailers);
		kfree(buf->w.slots);
	}
	kfree(buf);
}
