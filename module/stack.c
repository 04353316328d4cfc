// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: kernel and user stacks on chosen events (set_event_stack,
 * set_event_ustack).
 *
 * A stack rides as a trailer, a second record inside the event's own
 * reservation (ringtrace_put_trailer() in include/linux/ringtrace.h):
 *
 *	| event header | payload | kernel_stack header | depth | ips |
 *	                         | user_stack header | depth | flags | ips |
 *
 * (either trailer, or both in that order; in ustack_mode "copy" the user
 * trailer is user_stack_copy, the raw stack: ip, sp, bp, size, flags and
 * size bytes from sp, unwound offline), so a stack always directly
 * follows its event in the CPU's stream, with the same timestamp, and
 * nothing else can come between them, not even a nested writer.  Events
 * of a probe without a stack keep their layout, byte for byte: a stack is
 * a record of its own (kernel_stack, "uint16_t depth; uint64_t
 * ips[depth];", and user_stack, which adds "uint16_t flags;"), not a
 * field every event carries.  Documentation/ringtrace/design.rst weighs
 * this inline form against stacks deduplicated per packet.
 *
 * The walks (stack_trace_save(): the unwinder, NMI-safe on x86-64 and
 * arm64, no locks, no allocation; rtr_ustack_walk(): frame pointers read
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
 * The first kernel frames are the probe's own, in ringtrace.ko: they are
 * cut, so a stack starts at the code that hit the tracepoint.  The
 * sampler's (sampler.c) walk starts in its timer's interrupt and crosses
 * the interrupt frame: there everything up to the interrupted ip is cut,
 * so its stack starts where the CPU was.  A task
 * without a user side (a kernel thread, an exiting task without its mm)
 * gets no user_stack: its event carries the kernel_stack alone, or no
 * trailer.
 */
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/stacktrace.h>
#include <linux/vmalloc.h>

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

static DEFINE_PER_CPU(struct rtr_stack_scratch, rtr_stack_scratch);
static DEFINE_PER_CPU(unsigned int, rtr_stack_level);

/* Frames kept per stack; under rtr_probes_lock, read by writers. */
unsigned int rtr_stack_depth = RINGTRACE_STACK_DEFAULT_DEPTH;
unsigned int rtr_ustack_depth = RINGTRACE_USTACK_DEFAULT_DEPTH;

/* The trailer: registered after the probes' events (a compact id). */
struct ringtrace_event rtr_stack_event = {
	.name = "kernel_stack",
	.fields = "uint16_t depth; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } ips[depth];",
};

/* The user's: registered right after kernel_stack (a compact id). */
struct ringtrace_event rtr_ustack_event = {
	.name = "user_stack",
	.fields = "uint16_t depth; uint16_t flags; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } ips[depth];",
};

/* Or, in copy mode, this one: registered right after user_stack. */
struct ringtrace_event rtr_ucopy_event = {
	.name = "user_stack_copy",
	.fields = "integer { size = 64; align = 8; signed = false; base = 16; } ip; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } sp; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } bp; "
		  "uint16_t size; uint16_t flags; uint8_t bytes[size];",
};

struct rtr_stack_head {
	u16 depth;
	u64 ips[];
} __packed;

struct rtr_ustack_head {
	u16 depth;
	u16 flags;
	u64 ips[];
} __packed;

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
 * Reserve @len bytes of payload for event @id, plus this CPU's stacks as
 * trailers: the kernel's with @kstack (cut at @cut_ip when not 0, see
 * rtr_stack_cut()), the user's as @ustack says (RTR_USTACK_*).
 * RTR_RSV_STACK in @w->slow when there is a trailer to commit.  Returns
 * the payload, or NULL (nothing to commit).
 */
void *rtr_stack_reserve_at(struct rtr_rsv *w, unsigned int id,
			   unsigned int len, bool kstack, u8 ustack,
			   unsigned long cut_ip)
{
	unsigned int depth = READ_ONCE(rtr_stack_depth);
	unsigned int level, nr, skip, extra = 0;
	unsigned long *ips;
	void *pl;

	preempt_disable_notrace();
	/* No walk for an event that reserve would refuse anyway. */
	if (unlikely(!READ_ONCE(ringtrace_tracing)))
		goto plain;
	level = this_cpu_inc_return(rtr_stack_level) - 1;
	if (unlikely(level >= RINGTRACE_MAX_NESTING))
		goto plain_level;
	w->ips = NULL;
	w->nr = 0;
	if (kstack) {
		ips = this_cpu_ptr(&rtr_stack_scratch)->ips[level];
		nr = stack_trace_save(ips, depth + RTR_STACK_OWN_FRAMES, 0);
		skip = rtr_stack_cut(ips, &nr, cut_ip);
		w->ips = ips + skip;
		w->nr = min(nr, depth);
		extra += RINGTRACE_COMPACT_HEADER_SIZE +
			 sizeof(struct rtr_stack_head) + w->nr * sizeof(u64);
	}
	w->unr = 0;
	w->ucopy = NULL;
	if (ustack && READ_ONCE(rtr_ustack_copy_on)) {
		extra += rtr_ucopy_save(w, level);
	} else if (ustack) {
		w->uips = this_cpu_ptr(&rtr_stack_scratch)->uips[level];
		w->unr = rtr_ustack_save(w->uips, &w->uflags, ustack);
		if (w->unr)
			extra += RINGTRACE_COMPACT_HEADER_SIZE +
				 sizeof(struct rtr_ustack_head) +
				 w->unr * sizeof(u64);
	}
	if (!extra)
		goto plain_level;

	/*
	 * A drop here is the event's (counted once, as any drop): it is not
	 * retried without its stacks, which would count it twice.
	 */
	w->reserved = len + extra;
	pl = ringtrace_reserve(&w->r, id, w->reserved);
	if (unlikely(!pl)) {
		this_cpu_dec(rtr_stack_level);
		preempt_enable_notrace();
		return NULL;
	}
	w->slow |= RTR_RSV_STACK;
	w->trailer = (u8 *)pl + len;
	w->payload = pl;
	return pl;

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
 * The trailers go in after the payload, the kernel's first, then the
 * user's (user_stack or user_stack_copy, never both), then the whole is
 * committed (from rtr_commit_slow()).
 */
void rtr_stack_commit(struct rtr_rsv *w)
{
	struct rtr_ustack_head *uh;
	struct rtr_stack_head *h;
	u8 *at = w->trailer;

	if (w->ips) {
		h = ringtrace_put_trailer(&w->r, w->payload, w->reserved, at,
					  rtr_stack_event.id);
		h->depth = w->nr;
		memcpy(h->ips, w->ips, w->nr * sizeof(u64));
		at = (u8 *)(h->ips + w->nr);
	}
	if (w->unr) {
		uh = ringtrace_put_trailer(&w->r, w->payload, w->reserved, at,
					   rtr_ustack_event.id);
		uh->depth = w->unr;
		uh->flags = w->uflags;
		memcpy(uh->ips, w->uips, w->unr * sizeof(u64));
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

/* At module exit, once no probe can run: the copies' scratch. */
void rtr_stack_exit(void)
{
	vfree(rtr_ucopy_scratch);
	rtr_ucopy_scratch = NULL;
}
