// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: kernel stacks on chosen events (set_event_stack).
 *
 * A stack rides as a trailer, a second record inside the event's own
 * reservation (ringtrace_put_trailer() in include/linux/ringtrace.h):
 *
 *	| event header | event payload | kernel_stack header | depth | ips |
 *
 * so it always directly follows its event in the CPU's stream, with the
 * same timestamp, and nothing else can come between them, not even a
 * nested writer.  Events of a probe without a stack keep their layout,
 * byte for byte: the stack is a record of its own (id rtr_stack_event.id,
 * "uint16_t depth; uint64_t ips[depth];"), not a field every event
 * carries.  Documentation/ringtrace/design.rst weighs this inline form
 * against stacks deduplicated per packet.
 *
 * The walk (stack_trace_save(): the unwinder, NMI-safe on x86-64 and
 * arm64, no locks, no allocation) must happen before the reservation,
 * whose size it decides; it lands in a per-CPU scratch array, one per
 * nesting level (task < softirq < irq < NMI), and is copied into the
 * event at commit.  The level is a per-CPU counter taken with preemption
 * off: an interrupting writer takes the next level and gives it back
 * before the interrupted one resumes, so two walks never share an array.
 * A fifth level (or tracing off) writes the event without its stack.
 *
 * The first frames are the probe's own, in ringtrace.ko: they are cut, so
 * a stack starts at the code that hit the tracepoint.  The sampler's
 * (sampler.c) walk starts in its timer's interrupt and crosses the
 * interrupt frame: there everything up to the interrupted ip is cut, so
 * its stack starts where the CPU was.
 */
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/stacktrace.h>

#include "probes.h"

/*
 * Room for the frames the walk cuts: a probe's own (probe, this file: at
 * most this many are looked at), or the sampler's timer interrupt (~8).
 */
#define RTR_STACK_OWN_FRAMES	16

struct rtr_stack_scratch {
	unsigned long ips[RINGTRACE_MAX_NESTING]
			 [RINGTRACE_STACK_MAX_DEPTH + RTR_STACK_OWN_FRAMES];
};

static DEFINE_PER_CPU(struct rtr_stack_scratch, rtr_stack_scratch);
static DEFINE_PER_CPU(unsigned int, rtr_stack_level);

/* Frames kept per stack; under rtr_probes_lock, read by writers. */
unsigned int rtr_stack_depth = RINGTRACE_STACK_DEFAULT_DEPTH;

/* The trailer: registered after the probes' events (a compact id). */
struct ringtrace_event rtr_stack_event = {
	.name = "kernel_stack",
	.fields = "uint16_t depth; "
		  "integer { size = 64; align = 8; signed = false; base = 16; } ips[depth];",
};

struct rtr_stack_head {
	u16 depth;
	u64 ips[];
} __packed;

/*
 * Cut the walk @ips[0..*@nr): our frames, or with @cut_ip everything
 * before the first frame at @cut_ip, the interrupted ip.  An ip the walk
 * did not see (an unwinder that did not cross the interrupt frame) is
 * kept alone: a stack of one true frame rather than the interrupt's.
 * Returns where the stack starts; *@nr becomes its length.
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
 * Reserve @len bytes of payload for event @id, plus this CPU's stack as a
 * trailer (RTR_RSV_STACK in @w->slow, which rtr_filtered() set), cut at
 * @cut_ip when not 0 (rtr_stack_cut()).  Returns the payload, or NULL
 * (nothing to commit).
 */
void *rtr_stack_reserve_at(struct rtr_rsv *w, unsigned int id,
			   unsigned int len, unsigned long cut_ip)
{
	unsigned int depth = READ_ONCE(rtr_stack_depth);
	unsigned int level, nr, skip;
	unsigned long *ips;
	void *p;

	preempt_disable_notrace();
	/* No walk for an event that reserve would refuse anyway. */
	if (unlikely(!READ_ONCE(ringtrace_tracing)))
		goto plain;
	level = this_cpu_inc_return(rtr_stack_level) - 1;
	if (unlikely(level >= RINGTRACE_MAX_NESTING))
		goto plain_level;
	ips = this_cpu_ptr(&rtr_stack_scratch)->ips[level];
	nr = stack_trace_save(ips, depth + RTR_STACK_OWN_FRAMES, 0);
	skip = rtr_stack_cut(ips, &nr, cut_ip);
	nr = min(nr, depth);

	/*
	 * A drop here is the event's (counted once, as any drop): it is not
	 * retried without its stack, which would count it twice.
	 */
	w->reserved = len + RINGTRACE_COMPACT_HEADER_SIZE +
		      sizeof(struct rtr_stack_head) + nr * sizeof(u64);
	p = ringtrace_reserve(&w->r, id, w->reserved);
	if (unlikely(!p)) {
		this_cpu_dec(rtr_stack_level);
		preempt_enable_notrace();
		return NULL;
	}
	w->slow |= RTR_RSV_STACK;
	w->ips = ips + skip;
	w->nr = nr;
	w->trailer = (u8 *)p + len;
	w->payload = p;
	return p;

plain_level:
	this_cpu_dec(rtr_stack_level);
plain:
	p = ringtrace_reserve(&w->r, id, len);
	preempt_enable_notrace();
	return p;
}

/*
 * True when this CPU has no scratch left: a walk now would go without its
 * stack.  Exact with interrupts off (a nested writer gives its level back
 * before it returns).
 */
bool rtr_stack_busy(void)
{
	return this_cpu_read(rtr_stack_level) >= RINGTRACE_MAX_NESTING;
}

/*
 * The trailer goes in after the payload, then the whole is committed
 * (from rtr_commit_slow()).
 */
void rtr_stack_commit(struct rtr_rsv *w)
{
	struct rtr_stack_head *h;

	h = ringtrace_put_trailer(&w->r, w->payload, w->reserved, w->trailer,
				  rtr_stack_event.id);
	h->depth = w->nr;
	memcpy(h->ips, w->ips, w->nr * sizeof(u64));
	ringtrace_commit(&w->r);
	this_cpu_dec(rtr_stack_level);
	preempt_enable_notrace();
}

/* The stack's walk uses unsigned long, the record u64: the same here. */
static_assert(sizeof(unsigned long) == sizeof(u64));

/*
 * Set the stack of every event in @mask to its bit in @on, all or nothing:
 * -EINVAL for one that cannot carry a stack (rtr_probe_can_stack()).
 */
int rtr_stack_set(const unsigned long *mask, const unsigned long *on)
{
	unsigned int i;

	lockdep_assert_held(&rtr_probes_lock);
	for_each_set_bit(i, mask, RTR_NR_PROBES)
		if (test_bit(i, on) && !rtr_probe_can_stack(&rtr_probes[i]))
			return -EINVAL;
	for_each_set_bit(i, mask, RTR_NR_PROBES)
		WRITE_ONCE(rtr_probes[i].stack, test_bit(i, on));
	return 0;
}

int rtr_stack_set_depth(unsigned int depth)
{
	if (!depth || depth > RINGTRACE_STACK_MAX_DEPTH)
		return -EINVAL;
	mutex_lock(&rtr_probes_lock);
	WRITE_ONCE(rtr_stack_depth, depth);
	mutex_unlock(&rtr_probes_lock);
	return 0;
}
