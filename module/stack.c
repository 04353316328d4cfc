// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: kernel and user stacks on chosen events (set_event_stack,
 * set_event_ustack).
 *
 * A stack rides in the event's own reservation, as trailers (records
 * that are no events: ringtrace_put_trailer() in include/linux/ringtrace.h),
 * and is interned per packet:
 *
 *	| event header | payload | [stack_def k] | [stack_def u] | stack_ref |
 *
 * stack_def ("uint8_t kind; uint8_t flags; uint16_t depth; uint64_t
 * ips[depth];", kind 0 kernel, 1 user) holds a stack's frames; stack_ref
 * ("uint32_t kernel; uint32_t user;") names, for each of the event's two
 * stacks, the byte offset in the packet of the stack_def that holds it (0:
 * none; offset 0 is the packet header, never a record).  The reference's
 * header is untimed (ringtrace_put_untimed_trailer(), module/ctf.c): its
 * 27 bits repeat its id, where a timestamp would repeat its event's, so
 * the 12 bytes of a reference to the stacks used before are the same
 * 12 bytes again and cost a packed trace next to nothing, where the
 * timestamp's low bits cost it about 4 bytes an event.  A definition
 * only ever serves references in its own packet, so a packet decodes
 * alone: a lost, damaged or overwritten packet costs itself, as before.
 * A stack whose definition this CPU wrote earlier in the same packet, at
 * the same stack level (below), costs the reference alone; any other gets
 * its stack_def in this reservation, before the reference.
 *
 * Whether the definition is already in the packet is known only once the
 * reservation's place is: the choice is made inside the reserve loop,
 * attempt by attempt (rtr_stack_reserve_ring()), from a per-CPU,
 * per-level table of the definitions written (struct rtr_stack_seen):
 *
 *  [I1] A hit is taken only if the table names this packet (its
 *       free-running number: positions never go back within a buffer, and
 *       every trace start empties the tables, rtr_stack_start()) and the
 *       bytes at the offset it names equal our stack: a hash collision
 *       never gives a wrong stack.  Those bytes are compared before the
 *       attempt's cmpxchg, and trusted only when it succeeds: an
 *       unchanged offset means no reservation came between, so the
 *       packet is still open, was never closed, reused or handed to the
 *       consumer, and its committed bytes were read as they stand.  If a
 *       nested writer moved the offset (it may even have wrapped the ring
 *       and rewritten those bytes), the cmpxchg fails and the retry drops
 *       what was read.  The memory read is the ring's, always mapped.
 *  [I2] The tables of a level are written only by writers at that level
 *       on this CPU, one after another (an interrupting writer takes the
 *       next level, see below), after their reservation's defs are
 *       written: an entry always names a stack_def committed in full,
 *       needing no atomics.  A writer at another level has its own table
 *       and may define the same stack again: bytes, never a wrong ref.
 *  [I3] The slow path (a new packet, a ts that needs a full header, a
 *       drop) is given the length with both definitions: where it lands
 *       in a packet that already had them, they are written again, which
 *       is redundant and correct; a reference never lacks its def.
 *
 * A user_stack_copy (ustack_mode "copy") stays inline, after the
 * reference: its bytes differ every time.  So a stack always directly
 * follows its event in the CPU's stream, at its event's time, and
 * nothing else can come between them, not even a nested writer.  Events
 * of a probe without a stack keep their layout, byte for byte.
 * Documentation/ringtrace/design.rst ("Stack interning") says why per
 * packet; traces of older modules carry kernel_stack and user_stack
 * trailers (the frames inline), which readers still read.
 *
 * The walks (the kernel's unwinder, rtr_kstack_save(): NMI-safe on x86-64
 * and arm64, no locks, no allocation; rtr_ustack_walk(): frame pointers read
 * with page faults off, ustack.c) must happen before the reservation,
 * whose size they decide; they land in a per-CPU scratch array, one per
 * nesting level (task < softirq < irq < NMI), and are copied into the
 * event at commit.  The level is a per-CPU counter taken with preemption
 * off: an interrupting writer takes the next level and gives it back
 * before the interrupted one resumes, so two walks never share an array.
 * A fifth level (or tracing off) writes the event without its stacks.
 * The copies have a scratch of their own, per CPU and level too, but of
 * up to RINGTRACE_USTACK_COPY_MAX bytes each: vmalloc()ed when ustack_mode
 * first becomes "copy", kept until the module goes.
 *
 * A stack starts at the code that hit the tracepoint: a tracepoint probe's
 * walk starts at its caller (rtr_kstack_save()); a probe's own frames, in
 * ringtrace.ko, where the walk starts here, are cut.  The
 * sampler's (sampler.c) walk starts in its timer's interrupt and crosses
 * the interrupt frame: there everything up to the interrupted ip is cut,
 * so its stack starts where the CPU was.  A task
 * without a user side (a kernel thread, an exiting task without its mm)
 * gets no user_stack: its event carries the kernel_stack alone, or no
 * trailer.
 */
#include <linux/hash.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/stacktrace.h>
#include <linux/vmalloc.h>
#ifdef CONFIG_X86_64
#include <asm/unwind.h>
#endif

#include "internal.h"
#include "probes.h"
#include "ustack.h"

/*
 * Room for the frames the walk cuts: a probe's own (probe, this file: at
 * most this many are looked at), or the sampler's timer interrupt (~8).
 */
#define RTR_STACK_OWN_FRAMES	16

struct rtr_stack_scratch {
	unsigned long ips[RINGTRACE_MAX_NESTING]
			 [RINGTRACE_STACK_MAX_DEPTH + RTR_STACK_OWN_FRAMES];
	u64 uips[RINGTRACE_MAX_NESTING][RINGTRACE_USTACK_MAX_DEPTH];
};

/*
 * Allocated at load (6.6 KB a CPU), not DEFINE_PER_CPU: a module's static
 * per-CPU data comes out of the kernel's small reserve for all modules
 * (PERCPU_MODULE_RESERVE, 8 KiB), where it left too little for another
 * tracer's modules (LTTng's lttng-tracer failed to load beside us).
 */
static struct rtr_stack_scratch __percpu *rtr_stack_scratch;
static DEFINE_PER_CPU(unsigned int, rtr_stack_level);

/* Frames kept per stack; under rtr_probes_lock, read by writers. */
unsigned int rtr_stack_depth = RINGTRACE_STACK_DEFAULT_DEPTH;
unsigned int rtr_ustack_depth = RINGTRACE_USTACK_DEFAULT_DEPTH;

/*
 * The interned stacks' records: registered after the probes' events, in
 * this order (compact ids, probes.c's rtr_compact_events[]).
 */
struct ringtrace_event rtr_stack_def_event = {
	.name = "stack_def",
	.fields = "uint8_t kind; uint8_t flags; uint16_t depth; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } ips[depth];",
};

struct ringtrace_event rtr_stack_ref_event = {
	.name = "stack_ref",
	.fields = "uint32_t kernel; uint32_t user;",
};

/* In copy mode, the user's: registered right after stack_ref. */
struct ringtrace_event rtr_ucopy_event = {
	.name = "user_stack_copy",
	.fields = "integer { size = 64; align = 8; signed = false; base = 16; } ip; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } sp; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } bp; "
		  "uint16_t size; uint16_t flags; uint8_t bytes[size];",
};

#define RTR_STACK_KERNEL	0	/* stack_def's kinds */
#define RTR_STACK_USER		1

struct rtr_stack_def_head {
	u8 kind;
	u8 flags;			/* user: RINGTRACE_USTACK_*; kernel: 0 */
	u16 depth;
	u64 ips[];
} __packed;

struct rtr_stack_ref {
	u32 kernel;			/* offset of the stack_def in the packet */
	u32 user;			/* 0: no such stack */
} __packed;

#define RTR_DEF_KERNEL		1	/* rtr_rsv.defs */
#define RTR_DEF_USER		2

/* A stack_def's record: compact header, head, frames. */
static inline unsigned int rtr_stack_def_len(unsigned int nr)
{
	return RINGTRACE_COMPACT_HEADER_SIZE +
	       sizeof(struct rtr_stack_def_head) + nr * sizeof(u64);
}

#define RTR_STACK_REF_LEN \
	(RINGTRACE_COMPACT_HEADER_SIZE + sizeof(struct rtr_stack_ref))

/*
 * The definitions a level wrote last, per kind, by hash (direct-mapped: a
 * newer stack takes an older one's place): the packet (free-running
 * number) and the offset in it of the stack_def record.  @off 0: empty.
 * [I2]
 */
#define RTR_STACK_SEEN_BITS	7

struct rtr_stack_seen {
	unsigned long pkt;
	u32 hash;
	u32 off;
};

struct rtr_stack_seen_cpu {
	struct rtr_stack_seen e[RINGTRACE_MAX_NESTING][2][1 << RTR_STACK_SEEN_BITS];
};

static struct rtr_stack_seen_cpu __percpu *rtr_stack_seen;

struct rtr_ucopy_head {
	u64 ip;
	u64 sp;
	u64 bp;
	u16 size;
	u16 flags;
	u8 bytes[];
} __packed;

/*
 * Copy mode: on (ustack_mode "copy"), the bytes copied (ustack_size), and
 * the copies' scratch, NULL until copy mode is first asked for.  Written
 * under rtr_probes_lock, read by writers.
 */
bool rtr_ustack_copy_on;
unsigned int rtr_ustack_size = RINGTRACE_USTACK_COPY_DEFAULT;
static u8 *rtr_ucopy_scratch;

/* One scratch slot: a whole user_stack_copy payload. */
#define RTR_UCOPY_SLOT	ALIGN(sizeof(struct rtr_ucopy_head) + \
			      RINGTRACE_USTACK_COPY_MAX, 8)

/* ustack_stats: walks, and those that faulted or were cut by the depth. */
struct rtr_ustack_stats {
	unsigned long walks;
	unsigned long faults;
	unsigned long truncated;
};

static DEFINE_PER_CPU(struct rtr_ustack_stats, rtr_ustack_stats);

void rtr_ustack_stats_show(struct seq_file *m)
{
	struct rtr_ustack_stats sum = {};
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		const struct rtr_ustack_stats *s =
			per_cpu_ptr(&rtr_ustack_stats, cpu);

		sum.walks += READ_ONCE(s->walks);
		sum.faults += READ_ONCE(s->faults);
		sum.truncated += READ_ONCE(s->truncated);
	}
	seq_printf(m, "walks %lu\nfaults %lu\ntruncated %lu\n",
		   sum.walks, sum.faults, sum.truncated);
}

/*
 * The current task's user stack into @ips: its frames, 0 for none.
 * @mode RTR_USTACK_ENTRY: the task stopped at a function's first
 * instruction (a uprobe there), its caller is read at [sp].
 */
static unsigned int rtr_ustack_save(u64 *ips, u16 *flags, u8 mode)
{
	struct pt_regs *uregs = rtr_ustack_regs();
	unsigned int nr;

	*flags = mode == RTR_USTACK_ENTRY ? RINGTRACE_USTACK_ENTRY : 0;
	if (!uregs)
		return 0;
	nr = rtr_ustack_walk(uregs, ips, READ_ONCE(rtr_ustack_depth), flags);
	if (!nr)
		return 0;
	this_cpu_inc(rtr_ustack_stats.walks);
	if (*flags & RINGTRACE_USTACK_FAULT)
		this_cpu_inc(rtr_ustack_stats.faults);
	if (*flags & RINGTRACE_USTACK_TRUNCATED)
		this_cpu_inc(rtr_ustack_stats.truncated);
	return nr;
}

/*
 * The current task's stack copied into this CPU's scratch slot of @level,
 * behind its head, for @w; returns the bytes its trailer adds to the
 * reservation, 0 for none (no user side, or no scratch yet).  The copy is
 * bounded by ustack_size and by a quarter of a sub-buffer (ustack_size is
 * checked against it when written, but subbuf_size may shrink later).
 */
static unsigned int rtr_ucopy_save(struct rtr_rsv *w, unsigned int level)
{
	/* Partner: the smp_store_release() in rtr_stack_set_mode(). */
	u8 *scratch = READ_ONCE(rtr_ucopy_scratch);
	struct pt_regs *uregs = rtr_ustack_regs();
	struct rtr_ucopy_head *h;
	unsigned int max;

	if (!scratch || !uregs)
		return 0;
	h = (struct rtr_ucopy_head *)(scratch + RTR_UCOPY_SLOT *
		(smp_processor_id() * RINGTRACE_MAX_NESTING + level));
	max = min_t(unsigned long, READ_ONCE(rtr_ustack_size),
		    READ_ONCE(rtr_trace.subbuf_size) / 4);
	h->size = rtr_ustack_copy(uregs, h->bytes, max, &h->flags);
	h->ip = instruction_pointer(uregs);
	h->sp = user_stack_pointer(uregs);
	h->bp = frame_pointer(uregs);
	this_cpu_inc(rtr_ustack_stats.walks);
	if (h->flags & RINGTRACE_USTACK_FAULT)
		this_cpu_inc(rtr_ustack_stats.faults);
	if (h->flags & RINGTRACE_USTACK_TRUNCATED)
		this_cpu_inc(rtr_ustack_stats.truncated);
	w->ucopy = h;
	return RINGTRACE_COMPACT_HEADER_SIZE + sizeof(*h) + h->size;
}

/*
 * True when a return address on current's stack may have been replaced
 * by a trampoline's (the function graph tracer's, a kretprobe's or an
 * fprobe's rethook), which the unwinder maps back and a probe's frame
 * gives as is.  Only the probe's own return matters, but any one of the
 * task's sends the walk the long way: cheaper to tell.
 */
static __always_inline bool rtr_ret_hooked(void)
{
#ifdef CONFIG_FUNCTION_GRAPH_TRACER
	if (READ_ONCE(current->curr_ret_depth) >= 0)
		return true;
#endif
#ifdef CONFIG_RETHOOK
	if (!llist_empty(&current->rethooks))
		return true;
#endif
#if defined(CONFIG_KRETPROBES) && !defined(CONFIG_KRETPROBE_ON_RETHOOK)
	if (!llist_empty(&current->kretprobe_instances))
		return true;
#endif
	return false;
}

/*
 * The current kernel stack into @ips, at most @depth frames and the ones
 * of ours rtr_stack_cut() will cut: what stack_trace_save() stores,
 * unwound from this function's caller's frame (inlined:
 * rtr_stack_reserve_at()).  On x86-64 the unwinder is driven here as
 * arch_stack_walk() drives it, which spares the unwinding of
 * arch_stack_walk()'s and stack_trace_save()'s own frames and a
 * callback per frame.
 *
 * With @frame, a tracepoint probe's (RTR_PROBE_FRAME()), and ORC (the
 * unwinder of every kernel ringtrace is tested on), the walk starts at
 * the probe's caller instead, from the registers it had at its call of
 * the probe, given as an interrupt's: ip the call instruction (ORC looks
 * a signal frame's ip up as is, a return address at ip - 1: the same
 * entry), sp past the return address, bp as the probe saved it; the
 * other registers zero (ORC reads one only where a stack is realigned,
 * never at a call, which clobbers them).  Then no frame of ours is
 * unwound (module text, whose ORC entry is found by a __module_address()
 * search: 41 % of a sched_switch's walk went there) nor cut.  The frames
 * stored are those of the walk from the probe: the probe's return
 * address first (a tracepoint's call site, or the BPF trampoline that
 * called the probe: kernel text either way), then what the unwinder
 * finds from there.  @frame is on the stack we run on, above our frame:
 * nothing else writes it while we run, in any context, preempted or not.
 * Returns the frames stored; *@cut says whether rtr_stack_cut() is due.
 */
static __always_inline unsigned int rtr_kstack_save(unsigned long *ips,
						    unsigned int depth,
						    const unsigned long *frame,
						    bool *cut)
{
#ifdef CONFIG_X86_64
	struct unwind_state state;
	unsigned int max = depth + RTR_STACK_OWN_FRAMES, nr = 0;
	unsigned long addr;

	*cut = true;
	/*
	 * A probe that tail-called rtr_stack_reserve_at() (no frame of its
	 * own left) would give this function's frame: then the long way.
	 */
	if (IS_ENABLED(CONFIG_UNWINDER_ORC) && frame &&
	    frame > (unsigned long *)__builtin_frame_address(0) &&
	    !rtr_ret_hooked()) {
		struct pt_regs regs = {
			.ip = READ_ONCE_NOCHECK(frame[1]) - 1,
			.sp = (unsigned long)(frame + 2),
			.bp = READ_ONCE_NOCHECK(frame[0]),
			.cs = __KERNEL_CS,
			.flags = X86_EFLAGS_FIXED,
		};

		*cut = false;
		max = depth;
		ips[nr++] = regs.ip + 1;
		unwind_start(&state, current, &regs, NULL);
	} else {
		unwind_start(&state, current, NULL, NULL);
	}
	for (; nr < max && !unwind_done(&state); unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		ips[nr++] = addr;
	}
	return nr;
#else
	*cut = true;
	return stack_trace_save(ips, depth + RTR_STACK_OWN_FRAMES, 0);
#endif
}

/*
 * Cut the kernel walk @ips[0..*@nr): our frames, or with @cut_ip
 * everything before the first frame at @cut_ip, the interrupted ip.  An
 * ip the walk did not see (an unwinder that did not cross the interrupt
 * frame) is kept alone: a stack of one true frame rather than the
 * interrupt's.  Returns where the stack starts; *@nr becomes its length.
 */
static unsigned int rtr_stack_cut(unsigned long *ips, unsigned int *nr,
				  unsigned long cut_ip)
{
	unsigned int skip = 0;

	if (cut_ip) {
		while (skip < *nr && ips[skip] != cut_ip)
			skip++;
		if (skip == *nr) {
			ips[0] = cut_ip;
			*nr = 1;
			return 0;
		}
	} else {
		while (skip < *nr && skip < RTR_STACK_OWN_FRAMES &&
		       within_module(ips[skip], THIS_MODULE))
			skip++;
	}
	*nr -= skip;
	return skip;
}

/*
 * A stack's hash: its head and frames, a multiply per frame.  It only
 * picks a table entry, whose hit is checked byte for byte [I1]: a
 * collision costs a definition, never a wrong stack, so a cheap hash
 * beats a strong one (jhash2 cost four times as much).  The entry's index
 * is taken from the low bits of the product's upper half, which every
 * bit of every frame reaches.
 */
static u32 rtr_stack_hash(const struct rtr_stack_def_head *h, const u64 *ips)
{
	unsigned int i;
	u32 head;
	u64 x;

	memcpy(&head, h, sizeof(head));
	x = head;
	for (i = 0; i < h->depth; i++)
		x = (x ^ ips[i]) * GOLDEN_RATIO_64;
	return x >> 32;
}

/*
 * True when @e names a stack_def of @h and @ips in packet @pkt of @buf:
 * trusted only if the caller's cmpxchg then succeeds [I1].
 */
static bool rtr_stack_seen_in(const struct ringtrace_buffer *buf,
			      const struct rtr_stack_seen *e, unsigned long pkt,
			      u32 hash, const struct rtr_stack_def_head *h,
			      const u64 *ips)
{
	const u8 *def;
	unsigned int i;

	if (e->pkt != pkt || e->hash != hash || !e->off)
		return false;
	def = buf->data + ((pkt << buf->subbuf_order) & buf->buf_mask) +
	      e->off + RINGTRACE_COMPACT_HEADER_SIZE;
	if (memcmp(def, h, sizeof(*h)))
		return false;
	/* Inline: a call to memcmp() cost more than a short stack's loop. */
	def += sizeof(*h);
	for (i = 0; i < h->depth; i++) {
		u64 ip;

		memcpy(&ip, def + i * sizeof(ip), sizeof(ip));
		if (ip != ips[i])
			return false;
	}
	return true;
}

/*
 * ringtrace_reserve() for an event with interned stacks: @len bytes of
 * payload, then the stack_defs this packet lacks, the stack_ref, and
 * @tail bytes more (a user_stack_copy).  The defs are chosen per attempt,
 * once the attempt's packet is known [I1], [I3].  Sets @w's reservation,
 * defs, refs, packet and reserved length; returns the payload, or NULL
 * (tracing off, or dropped and counted; nesting and preemption undone).
 */
static void *rtr_stack_reserve_ring(struct rtr_rsv *w, unsigned int id,
				    unsigned int len, unsigned int tail,
				    const struct rtr_stack_def_head *kh,
				    const struct rtr_stack_def_head *uh)
{
	struct rtr_stack_seen (*seen)[1 << RTR_STACK_SEEN_BITS];
	struct rtr_stack_seen *ke = NULL, *ue = NULL;
	struct ringtrace_slow_reservation s;
	struct ringtrace_buffer *buf;
	unsigned long old, off, rec, pkt;
	unsigned int hlen, plen;
	u64 ts, last;

	if (unlikely(!ringtrace_enter(&buf)))
		return NULL;
	seen = this_cpu_ptr(rtr_stack_seen)->e[w->level];
	if (kh)
		ke = &seen[RTR_STACK_KERNEL]
			  [w->khash & ((1 << RTR_STACK_SEEN_BITS) - 1)];
	if (uh)
		ue = &seen[RTR_STACK_USER]
			  [w->uhash & ((1 << RTR_STACK_SEEN_BITS) - 1)];
	do {
		old = local_read(&buf->offset);
		ts = ringtrace_buffer_clock(buf, &last);
		hlen = ringtrace_header_len(id, ts, last);
		off = old & buf->subbuf_mask;
		/* Opening a packet: it has no definitions yet. */
		if (unlikely(!off))
			goto slow;
		pkt = old >> buf->subbuf_order;
		plen = len + RTR_STACK_REF_LEN + tail;
		w->defs = 0;
		if (kh) {
			if (rtr_stack_seen_in(buf, ke, pkt, w->khash, kh,
					      (const u64 *)w->ips)) {
				w->kref = ke->off;
			} else {
				w->defs |= RTR_DEF_KERNEL;
				plen += rtr_stack_def_len(kh->depth);
			}
		}
		if (uh) {
			if (rtr_stack_seen_in(buf, ue, pkt, w->uhash, uh,
					      w->uips)) {
				w->uref = ue->off;
			} else {
				w->defs |= RTR_DEF_USER;
				plen += rtr_stack_def_len(uh->depth);
			}
		}
		/* As in ringtrace_reserve_hlen(): a byte to spare. */
		if (unlikely(off + hlen + plen >= buf->subbuf_size))
			goto slow;
	} while (unlikely(local_cmpxchg(&buf->offset, old,
					old + hlen + plen) != old));

	w->pkt = pkt;
	w->reserved = plen;
	return ringtrace_reserved(&w->r, buf, old, hlen, plen, id, ts);

slow:
	/* Whatever packet it lands in, with both definitions [I3]. */
	w->defs = (kh ? RTR_DEF_KERNEL : 0) | (uh ? RTR_DEF_USER : 0);
	plen = len + RTR_STACK_REF_LEN + tail +
	       (kh ? rtr_stack_def_len(kh->depth) : 0) +
	       (uh ? rtr_stack_def_len(uh->depth) : 0);
	s = ringtrace_reserve_slow(buf, id, plen, old, ts, last);
	if (!s.payload)
		return NULL;
	rec = s.pos & buf->buf_mask;
	w->r.buf = buf;
	w->r.slot = ringtrace_rec_slot(buf, rec);
	w->r.len = (u8 *)s.payload - (buf->data + rec) + plen;
	w->pkt = s.pos >> buf->subbuf_order;
	w->reserved = plen;
	return s.payload;
}

/*
 * The end of a reservation with stacks: @pl the payload of @len bytes, its
 * trailers after it; NULL undoes the level and the preemption taken.  A
 * drop here is the event's (counted once, as any drop): it is not retried
 * without its stacks, which would count it twice.
 */
static __always_inline void *rtr_stack_reserved(struct rtr_rsv *w, void *pl,
						unsigned int len)
{
	if (unlikely(!pl)) {
		this_cpu_dec(rtr_stack_level);
		preempt_enable_notrace();
		return NULL;
	}
	w->slow |= RTR_RSV_STACK;
	w->trailer = (u8 *)pl + len;
	w->payload = pl;
	return pl;
}

/*
 * Reserve @len bytes of payload for event @id, plus this CPU's stacks as
 * trailers: the kernel's with @kstack (cut at @cut_ip when not 0, see
 * rtr_stack_cut(); or walked from the caller of the probe whose @frame
 * this is, see rtr_kstack_save()), the user's as @ustack says
 * (RTR_USTACK_*).
 * RTR_RSV_STACK in @w->slow when there is a trailer to commit.  Returns
 * the payload, or NULL (nothing to commit).
 */
void *rtr_stack_reserve_at(struct rtr_rsv *w, unsigned int id,
			   unsigned int len, bool kstack, u8 ustack,
			   unsigned long cut_ip, const unsigned long *frame)
{
	struct rtr_stack_def_head kh = {}, uh = {};
	unsigned int depth = READ_ONCE(rtr_stack_depth);
	unsigned int level, nr, skip, tail = 0;
	unsigned long *ips;
	bool cut;
	void *pl;

	preempt_disable_notrace();
	/*
	 * No walk for an event that reserve would refuse anyway.  [B6] The
	 * acquire pairs with the release that starts tracing, after
	 * rtr_stack_start() emptied the tables of definitions.
	 */
	if (unlikely(!smp_load_acquire(&ringtrace_tracing)))
		goto plain;
	level = this_cpu_inc_return(rtr_stack_level) - 1;
	if (unlikely(level >= RINGTRACE_MAX_NESTING))
		goto plain_level;
	w->level = level;
	w->ips = NULL;
	w->nr = 0;
	if (kstack) {
		ips = this_cpu_ptr(rtr_stack_scratch)->ips[level];
		nr = rtr_kstack_save(ips, depth, frame, &cut);
		skip = cut ? rtr_stack_cut(ips, &nr, cut_ip) : 0;
		if (nr) {
			w->ips = ips + skip;
			w->nr = min(nr, depth);
			kh = (struct rtr_stack_def_head){
				.kind = RTR_STACK_KERNEL, .depth = w->nr,
			};
			w->khash = rtr_stack_hash(&kh, (const u64 *)w->ips);
		}
	}
	w->unr = 0;
	w->ucopy = NULL;
	if (ustack && READ_ONCE(rtr_ustack_copy_on)) {
		tail = rtr_ucopy_save(w, level);
	} else if (ustack) {
		w->uips = this_cpu_ptr(rtr_stack_scratch)->uips[level];
		w->unr = rtr_ustack_save(w->uips, &w->uflags, ustack);
		if (w->unr) {
			uh = (struct rtr_stack_def_head){
				.kind = RTR_STACK_USER, .flags = w->uflags,
				.depth = w->unr,
			};
			w->uhash = rtr_stack_hash(&uh, w->uips);
		}
	}
	w->kref = w->uref = 0;
	if (w->nr || w->unr) {
		pl = rtr_stack_reserve_ring(w, id, len, tail,
					    w->nr ? &kh : NULL,
					    w->unr ? &uh : NULL);
	} else if (tail) {
		/* A copy alone: inline, as it always is. */
		w->reserved = len + tail;
		w->defs = 0;
		pl = ringtrace_reserve(&w->r, id, w->reserved);
	} else {
		goto plain_level;
	}
	return rtr_stack_reserved(w, pl, len);

plain_level:
	this_cpu_dec(rtr_stack_level);
plain:
	pl = ringtrace_reserve(&w->r, id, len);
	preempt_enable_notrace();
	return pl;
}

/*
 * rtr_stack_reserve_at() with a kernel stack the caller walked: @nr
 * frames at @ips (RINGTRACE_STACK_MAX_DEPTH at most, not cut to
 * stack_depth: the crash path's kernel_panic carries the stack its crash
 * entry has, crash.c), which must not change until the commit.  No user
 * stack.  Returns the payload, or NULL (nothing to commit).
 */
void *rtr_stack_reserve_ips(struct rtr_rsv *w, unsigned int id,
			    unsigned int len, unsigned long *ips,
			    unsigned int nr)
{
	struct rtr_stack_def_head kh;
	unsigned int level;
	void *pl;

	preempt_disable_notrace();
	/* [B6] As in rtr_stack_reserve_at(): pairs with the tracing start. */
	if (unlikely(!smp_load_acquire(&ringtrace_tracing)) || !nr)
		goto plain;
	level = this_cpu_inc_return(rtr_stack_level) - 1;
	if (unlikely(level >= RINGTRACE_MAX_NESTING))
		goto plain_level;
	w->level = level;
	w->ips = ips;
	w->nr = min(nr, RINGTRACE_STACK_MAX_DEPTH);
	kh = (struct rtr_stack_def_head){
		.kind = RTR_STACK_KERNEL, .depth = w->nr,
	};
	w->khash = rtr_stack_hash(&kh, (const u64 *)w->ips);
	w->unr = 0;
	w->ucopy = NULL;
	w->kref = w->uref = 0;
	pl = rtr_stack_reserve_ring(w, id, len, 0, &kh, NULL);
	return rtr_stack_reserved(w, pl, len);

plain_level:
	this_cpu_dec(rtr_stack_level);
plain:
	pl = ringtrace_reserve(&w->r, id, len);
	preempt_enable_notrace();
	return pl;
}

/*
 * True when this CPU has no scratch left: a walk now would go without its
 * stacks.  Exact with interrupts off (a nested writer gives its level
 * back before it returns).
 */
bool rtr_stack_busy(void)
{
	return this_cpu_read(rtr_stack_level) >= RINGTRACE_MAX_NESTING;
}

/*
 * A stack_def of @nr frames @ips at @at, in @w's reservation; the table
 * of @w's level names it from now on [I2].  Returns its offset in the
 * packet.
 */
static u32 rtr_stack_put_def(struct rtr_rsv *w, u8 *at, u8 kind, u8 flags,
			     const u64 *ips, unsigned int nr, u32 hash)
{
	struct ringtrace_buffer *buf = w->r.buf;
	struct rtr_stack_def_head *h;
	struct rtr_stack_seen *e;
	u32 off = (at - buf->data) & buf->subbuf_mask;

	h = ringtrace_put_trailer(&w->r, w->payload, w->reserved, at,
				  rtr_stack_def_event.id);
	h->kind = kind;
	h->flags = flags;
	h->depth = nr;
	memcpy(h->ips, ips, nr * sizeof(u64));
	e = &this_cpu_ptr(rtr_stack_seen)->e[w->level][kind]
		[hash & ((1 << RTR_STACK_SEEN_BITS) - 1)];
	e->pkt = w->pkt;
	e->hash = hash;
	e->off = off;
	return off;
}

/*
 * The trailers go in after the payload: the definitions the reservation
 * has room for (kernel, user), the reference, then a user_stack_copy;
 * then the whole is committed (from rtr_commit_slow()).
 */
void rtr_stack_commit(struct rtr_rsv *w)
{
	struct rtr_stack_ref *ref;
	u8 *at = w->trailer;

	if (w->defs & RTR_DEF_KERNEL) {
		w->kref = rtr_stack_put_def(w, at, RTR_STACK_KERNEL, 0,
					    (const u64 *)w->ips, w->nr,
					    w->khash);
		at += rtr_stack_def_len(w->nr);
	}
	if (w->defs & RTR_DEF_USER) {
		w->uref = rtr_stack_put_def(w, at, RTR_STACK_USER, w->uflags,
					    w->uips, w->unr, w->uhash);
		at += rtr_stack_def_len(w->unr);
	}
	if (w->nr || w->unr) {
		ref = ringtrace_put_untimed_trailer(&w->r, at,
						    rtr_stack_ref_event.id);
		ref->kernel = w->kref;
		ref->user = w->uref;
		at = (u8 *)(ref + 1);
	}
	if (w->ucopy) {
		void *t = ringtrace_put_trailer(&w->r, w->payload, w->reserved,
						at, rtr_ucopy_event.id);

		memcpy(t, w->ucopy, sizeof(*w->ucopy) + w->ucopy->size);
	}
	ringtrace_commit(&w->r);
	this_cpu_dec(rtr_stack_level);
	preempt_enable_notrace();
}

/*
 * The compact id whose event header carries no time (module/ctf.c):
 * stack_ref's, registered at load before any trace can start
 * (rtr_probes_init()), or -1 when it is not.
 */
int rtr_stack_untimed_id(void)
{
	unsigned int id = READ_ONCE(rtr_stack_ref_event.id);

	return id && id < RINGTRACE_EVENT_ID_EXTENDED ? id : -1;
}

/* The stack's walk uses unsigned long, the record u64: the same here. */
static_assert(sizeof(unsigned long) == sizeof(u64));

/*
 * Set the kernel (@user false) or user stack of every event in @mask to
 * its bit in @on, all or nothing: -EINVAL for one that cannot carry a
 * stack (rtr_probe_can_stack()).
 */
int rtr_stack_set(const unsigned long *mask, const unsigned long *on,
		  bool user)
{
	unsigned int i;

	lockdep_assert_held(&rtr_probes_lock);
	for_each_set_bit(i, mask, RTR_NR_PROBES)
		if (test_bit(i, on) && !rtr_probe_can_stack(&rtr_probes[i]))
			return -EINVAL;
	for_each_set_bit(i, mask, RTR_NR_PROBES) {
		if (user)
			WRITE_ONCE(rtr_probes[i].ustack, test_bit(i, on));
		else
			WRITE_ONCE(rtr_probes[i].stack, test_bit(i, on));
	}
	return 0;
}

/* stack_depth (@user false) or ustack_depth; -EINVAL out of range. */
int rtr_stack_set_depth(unsigned int depth, bool user)
{
	unsigned int max = user ? RINGTRACE_USTACK_MAX_DEPTH :
			   RINGTRACE_STACK_MAX_DEPTH;

	if (!depth || depth > max)
		return -EINVAL;
	mutex_lock(&rtr_probes_lock);
	WRITE_ONCE(*(user ? &rtr_ustack_depth : &rtr_stack_depth), depth);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

/*
 * ustack_mode: @copy selects user_stack_copy for the events of
 * set_event_ustack, else user_stack.  The first switch to copy allocates
 * the scratch (-ENOMEM, nothing changed, if it cannot).
 */
int rtr_stack_set_mode(bool copy)
{
	u8 *scratch;

	mutex_lock(&rtr_probes_lock);
	if (copy && !rtr_ucopy_scratch) {
		scratch = vmalloc(array3_size(nr_cpu_ids, RINGTRACE_MAX_NESTING,
					      RTR_UCOPY_SLOT));
		if (!scratch) {
			mutex_unlock(&rtr_probes_lock);
			return -ENOMEM;
		}
		/* Partner: the READ_ONCE() in rtr_ucopy_save(). */
		smp_store_release(&rtr_ucopy_scratch, scratch);
	}
	WRITE_ONCE(rtr_ustack_copy_on, copy);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

/*
 * ustack_size: RINGTRACE_USTACK_COPY_MIN..MAX bytes, and no more than a
 * quarter of a sub-buffer, so that a copy leaves room for other events in
 * its packet; -EINVAL otherwise.
 */
int rtr_stack_set_size(unsigned int size)
{
	if (size < RINGTRACE_USTACK_COPY_MIN ||
	    size > RINGTRACE_USTACK_COPY_MAX ||
	    size > READ_ONCE(rtr_trace.subbuf_size) / 4)
		return -EINVAL;
	mutex_lock(&rtr_probes_lock);
	WRITE_ONCE(rtr_ustack_size, size);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}

/* At module load: the tables of definitions (-ENOMEM). */
int rtr_stack_init(void)
{
	/* user_stack's flags fit stack_def's. */
	BUILD_BUG_ON((RINGTRACE_USTACK_TRUNCATED | RINGTRACE_USTACK_FAULT |
		      RINGTRACE_USTACK_COMPAT | RINGTRACE_USTACK_ENTRY) > U8_MAX);
	BUILD_BUG_ON(RINGTRACE_USTACK_MAX_DEPTH > U16_MAX);
	BUILD_BUG_ON(RINGTRACE_STACK_MAX_DEPTH > U16_MAX);
	/* Offsets in a packet fit a stack_ref's fields. */
	BUILD_BUG_ON(RINGTRACE_MAX_SUBBUF_SIZE > U32_MAX);
	rtr_stack_scratch = alloc_percpu(struct rtr_stack_scratch);
	rtr_stack_seen = alloc_percpu(struct rtr_stack_seen_cpu);
	if (rtr_stack_scratch && rtr_stack_seen)
		return 0;
	free_percpu(rtr_stack_seen);
	free_percpu(rtr_stack_scratch);
	rtr_stack_seen = NULL;
	rtr_stack_scratch = NULL;
	return -ENOMEM;
}

/*
 * Before tracing starts (no writer runs: the last stop waited for them
 * [R3]): every table empty, since a new trace's buffers number their
 * packets from 0 again.  [B6] Ordered before the writers' reads by the
 * store-release that starts tracing (main.c).
 */
void rtr_stack_start(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(rtr_stack_seen, cpu), 0,
		       sizeof(struct rtr_stack_seen_cpu));
}

/* At module exit, once no probe can run: the copies' scratch, the tables. */
void rtr_stack_exit(void)
{
	vfree(rtr_ucopy_scratch);
	rtr_ucopy_scratch = NULL;
	free_percpu(rtr_stack_seen);
	rtr_stack_seen = NULL;
	free_percpu(rtr_stack_scratch);
	rtr_stack_scratch = NULL;
}
