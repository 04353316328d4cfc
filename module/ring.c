// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: lockless per-CPU ring buffer of CTF packets.
 *
 * Each possible CPU owns one buffer: a meta page followed by num_subbufs
 * sub-buffers ("slots") of subbuf_size bytes, all powers of two.  Writers
 * run only on the owning CPU and may nest (task < softirq < irq < NMI).
 * One consumer per buffer, on any CPU, takes whole sub-buffers.
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
 * Writer state is local_t, touched only on the owning CPU: no locked
 * instruction on the fast path.  The fast path (include/linux/ringtrace.h)
 * is one local_cmpxchg() on @offset; a record never straddles slots.
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
 * queues the consumer's wakeup through irq_work [W1]; nothing is woken
 * from the writer's own context.
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
 * Counting.  Every reserve attempt while tracing counts in @written; it
 * ends as an event committed to a slot or in a lost_* counter.  A slot's
 * @events is retired by subtraction (see struct ringtrace_slot) and added
 * to @delivered (PUT) or lost_overrun (push), so once drained
 * written == delivered + all lost_* exactly.
 *
 * Timestamps.  The clock is read inside the reserve retry loop, after the
 * offset: a nested reservation makes the outer cmpxchg fail and re-read the
 * clock, so timestamps never decrease in buffer order, timestamp_begin is
 * the first event's time and timestamp_end (read by the closer) is not
 * earlier than any event of the packet.  events_discarded is snapshotted
 * in the same loop, so it never decreases from packet to packet.
 *
 * Memory ordering (the userspace half is in the uapi header):
 *  [B1] writer: record/header stores, smp_wmb(), commit count add
 *       consumer: read commit count, smp_rmb(), read the packet
 *  [B2] consumer: reads of the packet (kernel and user), retire its events,
 *       atomic_long_set_release(consumed)
 *       writer: atomic_long_read_acquire(consumed), then reuse the slot
 *  [B3] consumer cmpxchg(consumed, c, c | HELD) vs overwrite push
 *       cmpxchg(consumed, c, c + subbuf_size): fully ordered, one wins
 *
 * Race windows:
 *  [R1] An interrupt between a writer's offset cmpxchg and its header
 *       writes may fill and close the packet first: header fields are
 *       split between opener and closer and completion waits for both.
 *  [R2] A push may succeed and the writer's offset cmpxchg then fail
 *       because a nested writer moved the offset: the pushed packet is
 *       counted lost and gone either way, and the slot is free for
 *       whoever opens it next.
 *  [R3] Stopping clears ringtrace_tracing, then synchronize_rcu() waits
 *       for every writer (they run with preemption off from before the
 *       flag test), so the stop flush runs with no writer anywhere.
 */

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
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

static unsigned long rtr_buf_size(const struct ringtrace_buffer *buf)
{
	return buf->buf_mask + 1;
}

static struct ringtrace_packet_header *
rtr_packet(const struct ringtrace_buffer *buf, unsigned long pos)
{
	return (void *)(buf->data + (pos & buf->buf_mask & ~buf->subbuf_mask));
}

static local_t *rtr_lost_counter(struct ringtrace_buffer *buf, enum rtr_lost why)
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
static u64 rtr_lost_dropped(struct ringtrace_buffer *buf)
{
	return local_read(&buf->lost_full) + local_read(&buf->lost_held) +
	       local_read(&buf->lost_nested) + local_read(&buf->lost_too_big);
}

/* Is the generation of @pos's slot fully committed? */
static bool rtr_slot_complete(const struct ringtrace_buffer *buf,
			     unsigned long pos)
{
	unsigned long commit = local_read(&ringtrace_pos_slot(buf, pos)->commit);

	/* [B1] Pairs with smp_wmb() in ringtrace_commit_bytes(). */
	smp_rmb();
	return commit == ringtrace_commit_target(buf, pos);
}

/*
 * May a packet open at boundary @pos?  In overwrite mode (and when
 * @may_overwrite) make room by retiring the oldest packet.
 */
static enum rtr_lost rtr_make_room(struct ringtrace_buffer *buf,
				 unsigned long pos, bool may_overwrite)
{
	struct ringtrace_slot *slot;
	unsigned long cons;
	long events;

	for (;;) {
		/* [B2] Pairs with atomic_long_set_release() in rtr_buffer_put(). */
		cons = atomic_long_read_acquire(&buf->consumed);
		if (pos - (cons & ~RTR_POS_HELD) < rtr_buf_size(buf))
			return RTR_ROOM;
		if (!buf->overwrite || !may_overwrite)
			return RTR_LOST_FULL;
		if (cons & RTR_POS_HELD)
			return RTR_LOST_HELD;
		if (!rtr_slot_complete(buf, cons))
			return RTR_LOST_NESTED;
		slot = ringtrace_pos_slot(buf, cons);
		/* Stable: the slot cannot reopen before the push below. */
		events = local_read(&slot->events);
		/* [B3] Pairs with the cmpxchg in rtr_buffer_get(). */
		if (atomic_long_cmpxchg(&buf->consumed, cons,
					cons + buf->subbuf_size) != cons)
			continue;
		/*
		 * A nested writer may already have reopened the slot and
		 * counted new events [R2]: subtract, never reset.
		 */
		local_sub(events, &slot->events);
		local_add(events, &buf->lost_overrun);
		return RTR_ROOM;
	}
}

static void rtr_open_packet(struct ringtrace_buffer *buf, unsigned long pos,
			   u64 ts)
{
	struct ringtrace_packet_header *ph = rtr_packet(buf, pos);

	/* End fields belong to the closer, who may already have run [R1]. */
	ph->magic = RINGTRACE_CTF_MAGIC;
	memcpy(ph->uuid, rtr_trace.uuid, sizeof(ph->uuid));
	ph->stream_id = RINGTRACE_STREAM_ID;
	ph->stream_instance_id = buf->cpu;
	ph->timestamp_begin = ts;
	ph->packet_seq_num = pos >> buf->subbuf_order;
	ph->cpu_id = buf->cpu;
	ringtrace_commit_bytes(buf, pos, RINGTRACE_PACKET_HEADER_SIZE);
}

/*
 * Close the packet whose content ends at @end (never on a boundary).
 * The packet is exactly its content: packet_size == content_size, so the
 * consumer writes content_size bytes and has a whole CTF packet.
 */
static void rtr_close_packet(struct ringtrace_buffer *buf, unsigned long end,
			    u64 ts, u64 discarded)
{
	unsigned long used = end & buf->subbuf_mask;
	struct ringtrace_packet_header *ph = rtr_packet(buf, end);

	ph->timestamp_end = ts;
	ph->content_size = (u64)used * 8;
	ph->packet_size = (u64)used * 8;
	ph->events_discarded = discarded;
	ringtrace_pos_slot(buf, end)->discarded = discarded;
	WRITE_ONCE(buf->lost_reported, discarded);
	ringtrace_commit_bytes(buf, end, buf->subbuf_size - used);
}

/*
 * The fast path hands over the offset it read and the clock it read after
 * it: a valid pair for the first attempt (a drop then costs one clock
 * read).  Every retry reads both again, offset first.
 */
void *ringtrace_reserve_slow(struct ringtrace_reservation *r,
			     struct ringtrace_buffer *buf, unsigned int id,
			     unsigned int payload_len, unsigned long old,
			     u64 ts, u64 last)
{
	unsigned long off, begin, next = 0;
	bool close, open;
	enum rtr_lost why;
	unsigned int hlen;
	u64 lost;

	if (unlikely(payload_len > buf->max_payload)) {
		why = RTR_LOST_TOO_BIG;
		goto drop;
	}

	for (;; old = local_read(&buf->offset),
		ts = ringtrace_buffer_clock(buf, &last)) {
		lost = rtr_lost_dropped(buf);
		off = old & buf->subbuf_mask;
		hlen = ringtrace_header_len(id, ts, last);
		close = off && off + hlen + payload_len >= buf->subbuf_size;
		open = !off || close;
		begin = old;
		if (open) {
			next = close ? old - off + buf->subbuf_size : old;
			why = READ_ONCE(buf->disabled) ? RTR_LOST_FULL :
			      rtr_make_room(buf, next, true);
			if (why != RTR_ROOM) {
				/* No room: still close, so the consumer gets it. */
				if (close && local_cmpxchg(&buf->offset, old,
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
		if (local_cmpxchg(&buf->offset, old,
				  begin + hlen + payload_len) == old)
			break;
	}

	if (close)
		rtr_close_packet(buf, old, ts, lost);
	if (open)
		rtr_open_packet(buf, next, ts);
	WRITE_ONCE(buf->last_ts, ts);
	r->buf = buf;
	r->pos = begin;
	r->len = hlen + payload_len;
	return ringtrace_put_header(buf->data + (begin & buf->buf_mask), hlen,
				    id, ts);
drop:
	local_inc(rtr_lost_counter(buf, why));
	local_dec(&buf->nesting);
	preempt_enable_notrace();
	return NULL;
}
EXPORT_SYMBOL_GPL(ringtrace_reserve_slow);

void ringtrace_drop_nested(struct ringtrace_buffer *buf)
{
	local_inc(&buf->lost_nested);
	local_dec(&buf->nesting);
}
EXPORT_SYMBOL_GPL(ringtrace_drop_nested);

/* A packet is complete: wake the consumer later, from irq_work [W1]. */
void ringtrace_subbuf_done(struct ringtrace_buffer *buf)
{
	irq_work_queue(&buf->wakeup);
}
EXPORT_SYMBOL_GPL(ringtrace_subbuf_done);

static void rtr_meta_update(struct ringtrace_buffer *buf)
{
	struct ringtrace_meta *meta = buf->meta;

	WRITE_ONCE(meta->write_pos, local_read(&buf->offset));
	WRITE_ONCE(meta->written, local_read(&buf->written));
	WRITE_ONCE(meta->lost, rtr_lost_dropped(buf) +
			       local_read(&buf->lost_overrun));
	WRITE_ONCE(meta->delivered, READ_ONCE(buf->delivered));
	WRITE_ONCE(meta->mode, buf->overwrite ? RINGTRACE_MODE_OVERWRITE :
						RINGTRACE_MODE_DISCARD);
	/* Pairs with the reader's acquire load (uapi header). */
	smp_store_release(&meta->consumed_pos,
			  (u64)atomic_long_read(&buf->consumed));
}

/* [W1] irq_work: runs after the writer that completed a packet returned. */
static void rtr_wakeup(struct irq_work *work)
{
	struct ringtrace_buffer *buf =
		container_of(work, struct ringtrace_buffer, wakeup);

	rtr_meta_update(buf);
	wake_up_all(&buf->waitq);
}

/*
 * Close the open packet, or, if losses happened since the last packet was
 * closed, emit an empty packet that reports them (when there is room; the
 * consumer retries once it has drained).  Runs on the owning CPU, or where
 * no writer can run (CPU offline, or tracing stopped [R3]).
 */
void rtr_buffer_flush_local(struct ringtrace_buffer *buf)
{
	unsigned long old, off, next;
	u64 ts, last, lost;

	for (;;) {
		old = local_read(&buf->offset);
		ts = ringtrace_buffer_clock(buf, &last);
		lost = rtr_lost_dropped(buf);
		off = old & buf->subbuf_mask;
		if (off) {
			next = old - off + buf->subbuf_size;
			if (local_cmpxchg(&buf->offset, old, next) != old)
				continue;
			rtr_close_packet(buf, old, ts, lost);
			return;
		}
		if (lost == READ_ONCE(buf->lost_reported) ||
		    READ_ONCE(buf->disabled) ||
		    rtr_make_room(buf, old, false) != RTR_ROOM)
			return;
		next = old + RINGTRACE_PACKET_HEADER_SIZE;
		if (local_cmpxchg(&buf->offset, old, next) != old)
			continue;
		rtr_open_packet(buf, old, ts);
		/* Re-enter the close path for the now open, empty packet. */
	}
}

static void rtr_flush_ipi(void *info)
{
	rtr_buffer_flush_local(info);
}

/*
 * Flush from process context.  Callers hold rtr_control_lock, which
 * serialises the local flush of an offline CPU's buffer: local_t is only
 * atomic against its own CPU.
 */
void rtr_buffer_flush(struct ringtrace_buffer *buf)
{
	lockdep_assert_held(&rtr_control_lock);
	cpus_read_lock();
	if (cpu_online(buf->cpu))
		smp_call_function_single(buf->cpu, rtr_flush_ipi, buf, 1);
	else
		rtr_buffer_flush_local(buf);
	cpus_read_unlock();
	rtr_meta_update(buf);
}

bool rtr_buffer_ready(struct ringtrace_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	return !(cons & RTR_POS_HELD) && rtr_slot_complete(buf, cons);
}

/* Nothing left for the consumer (meaningful once writers are quiet). */
bool rtr_buffer_drained(struct ringtrace_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	return cons == (unsigned long)local_read(&buf->offset);
}

/* Caller holds buf->consumer_lock. */
int rtr_buffer_get(struct ringtrace_buffer *buf, struct ringtrace_subbuf *sb)
{
	struct ringtrace_packet_header *ph;
	struct ringtrace_slot *slot;
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
		/* [B3] Pairs with the push cmpxchg in rtr_make_room(). */
		if (atomic_long_cmpxchg(&buf->consumed, cons,
					cons | RTR_POS_HELD) == cons)
			break;
	}

	ph = rtr_packet(buf, cons);
	slot = ringtrace_pos_slot(buf, cons);
	content = ph->content_size / 8;
	if (WARN_ONCE(ph->magic != RINGTRACE_CTF_MAGIC ||
		      content < RINGTRACE_PACKET_HEADER_SIZE ||
		      content >= buf->subbuf_size ||
		      ph->packet_seq_num != cons >> buf->subbuf_order,
		      "ringtrace: cpu%u: corrupt packet at %lu, buffer disabled\n",
		      buf->cpu, cons)) {
		WRITE_ONCE(buf->disabled, 1);
		rtr_buffer_unhold(buf);
		return -EIO;
	}

	/* Exact now that the packet is complete and held. */
	ph->events = local_read(&slot->events);
	ph->events_discarded = slot->discarded +
			       local_read(&buf->lost_overrun);

	sb->size = sizeof(*sb);
	sb->pos = cons;
	sb->offset = PAGE_SIZE + (cons & buf->buf_mask);
	sb->content_size = content;
	sb->packet_size = buf->subbuf_size;
	sb->events = ph->events;
	sb->events_discarded = ph->events_discarded;
	rtr_meta_update(buf);
	return 0;
}

/* Caller holds buf->consumer_lock. */
int rtr_buffer_put(struct ringtrace_buffer *buf, u64 pos)
{
	struct ringtrace_slot *slot;
	unsigned long cons;
	long events;

	lockdep_assert_held(&buf->consumer_lock);
	cons = atomic_long_read(&buf->consumed);
	if (!(cons & RTR_POS_HELD) || (cons & ~RTR_POS_HELD) != pos)
		return -EINVAL;

	slot = ringtrace_pos_slot(buf, pos);
	events = local_read(&slot->events);
	WRITE_ONCE(buf->delivered, buf->delivered + events);
	WRITE_ONCE(buf->subbufs_delivered, buf->subbufs_delivered + 1);
	WRITE_ONCE(buf->bytes_delivered, buf->bytes_delivered +
			rtr_packet(buf, pos)->content_size / 8);
	/* No writer touches the slot before the release below. */
	local_sub(events, &slot->events);
	/* [B2] Pairs with atomic_long_read_acquire() in rtr_make_room(). */
	atomic_long_set_release(&buf->consumed, pos + buf->subbuf_size);
	rtr_meta_update(buf);
	return 0;
}

/* The consumer went away holding a packet: hand it back unconsumed. */
void rtr_buffer_unhold(struct ringtrace_buffer *buf)
{
	unsigned long cons = atomic_long_read(&buf->consumed);

	/*
	 * [B2] Pairs with atomic_long_read_acquire() in rtr_make_room(): an
	 * overwriting writer may push this packet once HELD is gone, and the
	 * consumer's reads of it must be done by then.
	 */
	if (cons & RTR_POS_HELD)
		atomic_long_set_release(&buf->consumed, cons & ~RTR_POS_HELD);
}

void rtr_buffer_stats(struct ringtrace_buffer *buf, struct ringtrace_stats *st)
{
	st->written = local_read(&buf->written);
	st->lost_full = local_read(&buf->lost_full);
	st->lost_overrun = local_read(&buf->lost_overrun);
	st->lost_held = local_read(&buf->lost_held);
	st->lost_nested = local_read(&buf->lost_nested);
	st->lost_too_big = local_read(&buf->lost_too_big);
	st->delivered = READ_ONCE(buf->delivered);
	st->subbufs_delivered = READ_ONCE(buf->subbufs_delivered);
	st->bytes_delivered = READ_ONCE(buf->bytes_delivered);
}

void rtr_buffer_positions(struct ringtrace_buffer *buf,
			 struct ringtrace_positions *p)
{
	p->consumed_pos = atomic_long_read(&buf->consumed);
	p->write_pos = local_read(&buf->offset);
	p->subbuf_size = buf->subbuf_size;
	p->num_subbufs = rtr_buf_size(buf) >> buf->subbuf_order;
}

struct ringtrace_buffer *rtr_buffer_alloc(unsigned int cpu,
					 unsigned long subbuf_size,
					 unsigned int num_subbufs,
					 bool overwrite)
{
	const gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
			  __GFP_RETRY_MAYFAIL;
	int node = cpu_to_node(cpu);
	struct ringtrace_buffer *buf;
	struct ringtrace_meta *meta;
	unsigned int i;
	void *vaddr;

	buf = kzalloc_node(sizeof(*buf), GFP_KERNEL, node);
	if (!buf)
		return NULL;
	buf->slots = kcalloc_node(num_subbufs, sizeof(*buf->slots),
				  GFP_KERNEL, node);
	if (!buf->slots)
		goto free_buf;
	buf->nr_pages = 1 + ((subbuf_size * num_subbufs) >> PAGE_SHIFT);
	buf->pages = kvcalloc(buf->nr_pages, sizeof(*buf->pages), GFP_KERNEL);
	if (!buf->pages)
		goto free_slots;
	for (i = 0; i < buf->nr_pages; i++) {
		buf->pages[i] = alloc_pages_node(node, gfp, 0);
		if (!buf->pages[i])
			goto free_pages;
	}
	vaddr = vmap(buf->pages, buf->nr_pages, VM_MAP, PAGE_KERNEL);
	if (!vaddr)
		goto free_pages;

	buf->meta = vaddr;
	buf->data = (u8 *)vaddr + PAGE_SIZE;
	buf->subbuf_size = subbuf_size;
	buf->subbuf_mask = subbuf_size - 1;
	buf->buf_mask = subbuf_size * num_subbufs - 1;
	buf->subbuf_order = ilog2(subbuf_size);
	buf->num_order = ilog2(num_subbufs);
	buf->max_payload = subbuf_size - RINGTRACE_PACKET_HEADER_SIZE -
			   RINGTRACE_EXTENDED_HEADER_SIZE - 1;
	buf->cpu = cpu;
	buf->overwrite = overwrite;
	mutex_init(&buf->consumer_lock);
	init_waitqueue_head(&buf->waitq);
	init_irq_work(&buf->wakeup, rtr_wakeup);

	meta = buf->meta;
	meta->meta_size = sizeof(*meta);
	meta->meta_page_size = PAGE_SIZE;
	meta->subbuf_size = subbuf_size;
	meta->num_subbufs = num_subbufs;
	meta->cpu = cpu;
	rtr_meta_update(buf);
	return buf;

free_pages:
	while (i--)
		__free_page(buf->pages[i]);
	kvfree(buf->pages);
free_slots:
	kfree(buf->slots);
free_buf:
	kfree(buf);
	return NULL;
}

void rtr_buffer_free(struct ringtrace_buffer *buf)
{
	unsigned int i;

	if (!buf)
		return;
	irq_work_sync(&buf->wakeup);
	vunmap(buf->meta);
	for (i = 0; i < buf->nr_pages; i++)
		__free_page(buf->pages[i]);
	kvfree(buf->pages);
	kfree(buf->slots);
	kfree(buf);
}
