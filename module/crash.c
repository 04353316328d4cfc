// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the crash path -- what a dying kernel writes into the
 * persistent region's state area (<linux/ringtrace_persist.h>) so that the
 * next boot knows how it died and where each CPU's writers stood.
 *
 * Three hooks, registered for the module's lifetime when it was loaded with
 * a region, and doing nothing while the region is not armed here
 * (rtr_crash.state NULL: a kept image is never written):
 *
 *   panic notifier     PANIC, message = panic()'s text.  On the panicking
 *                      CPU, irqs off, after the other CPUs were stopped;
 *                      possibly in NMI (nmi_panic()) or hardirq context.
 *   die notifier       OOPS (DIE_OOPS only; the chain also carries kprobes'
 *                      int3 traffic), ip = the faulting instruction.  The
 *                      other CPUs run on.  Registered at every load, region
 *                      or not: it also writes the oops into the live trace
 *                      (below).
 *   kmsg dumper        EMERG_RESTART (sysrq b; panic's own restart is
 *                      skipped once a PANIC entry was written) and
 *                      SHUTDOWN (reboot, halt, power off).  PANIC and OOPS
 *                      are the notifiers' (with their message on 6.1 too).
 *
 * Each claims a crash entry (atomic_inc_return() on the state's counter:
 * two CPUs oopsing at once write different entries; past the last one a
 * hook is only counted), fills it, then snapshots every slice's writer
 * state and writes the cache lines of the whole region back to RAM (a warm
 * reset does not write caches back).  All of it without a lock of any
 * kind, printk, allocation, irq_work, IPI or RCU wait: the CPU may have
 * died holding any of them.  No terminal hook writes into a ring: the next
 * boot's recovery appends the kernel_panic event from a PANIC or
 * EMERG_RESTART entry (a SHUTDOWN is listed only).  The die notifier alone
 * writes one, for an oops, as follows.
 *
 * An oops is not terminal: with panic_on_oops=0 the kernel lives on, and
 * the trace with it (design decision D7).  So the die notifier writes the
 * kernel_panic event (reason oops) into the oopsing CPU's ring at once,
 * through the ordinary writer (lock-free and NMI-safe, as any probe's),
 * where it belongs in time among that CPU's events: in a live recording
 * and in a later image alike.  Its message, cpu, task, ip and stack are
 * the entry's (one walk serves both), and the entry says LIVE so that the
 * recovery appends nothing for it.  The panic's event, not a distinct
 * one: a reader asks one event how this CPU's story ended, and its reason
 * tells an oops from a panic.  Written only when that cannot make things
 * worse:
 *   - the faulting ip is not in ringtrace.ko (our own consumer, control or
 *     writer code may have left a buffer inconsistent);
 *   - no reservation is open on this CPU (an oops inside a writer, e.g. a
 *     probe's: that ring's writer state is the one that failed);
 *   - tracing is on (the writer's own test).
 * Otherwise the entry alone says it (not LIVE), as before.  When the oops
 * turns into a panic (panic_on_oops=1, or in an interrupt), the live event
 * is in the ring and the panic's entry is appended after it.
 *
 * Races:
 *  [C1] A hook against a geometry change or release (rtr_replace_buffers()
 *       swaps and frees the buffers the snapshot reads): the hooks run
 *       inside RCU read-side sections (atomic notifier chains and the
 *       dumper list are walked under rcu_read_lock()), and the swap
 *       waits a grace period before freeing the old set.
 *  [C2] A hook against arming (rtr_persist_commit() zeroes the state area):
 *       arming unpublishes the state and waits a grace period first, so
 *       no hook writes into the area while it is zeroed.
 *  [C3] A hook that faults (or oopses) inside the crash path re-enters the
 *       die notifier on the same CPU: the per-CPU nesting count makes the
 *       inner one return at once.
 *  [C4] A CPU that was not stopped (an oops, reboot=force) writes on while
 *       the snapshot reads its counters: the snapshot is a hint, the slot
 *       counters stay the truth (the recovery trusts those).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/hardirq.h>
#include <linux/kdebug.h>
#include <linux/kmsg_dump.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/panic_notifier.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/xxhash.h>

#include "compat.h"
#include "internal.h"
#include "probes.h"

/*
 * The event a crash leaves in the trace: the next boot's recovery appends
 * it from the entry, in this layout, as its CPU's last record (a dying
 * kernel writes into no ring).  Registered at every load, region or not,
 * so that the metadata a trace directory gets declares it.  Readers find
 * it by name.  Its stack follows as trailers (stack_def, stack_ref), as
 * any event's.
 */
#define RTR_KERNEL_PANIC_FIELDS						\
	"enum : uint32_t { panic = 1, oops = 2, emerg_restart = 3, "	\
	"shutdown = 4 } reason; uint32_t cpu; "				\
	"integer { size = 64; align = 8; signed = false; base = 16; } ip; " \
	"int32_t tid; int32_t pid; utf8_t comm[16]; "			\
	"uint16_t message_len; utf8_t message[message_len];"

static struct ringtrace_event rtr_kernel_panic_event = {
	.name = "kernel_panic",
	.fields = RTR_KERNEL_PANIC_FIELDS,
};

static struct {
	/* Set before the hooks are registered, then read-only. */
	void *va;			/* the whole region */
	size_t size;
	const int *slice_of;		/* per CPU: its slice, or -1 */

	/*
	 * The armed state area, or NULL.  [C2] Published with
	 * smp_store_release() by rtr_crash_arm(), read with
	 * smp_load_acquire() by every hook; cleared by rtr_crash_disarm(),
	 * which waits for the hooks that still saw it.
	 */
	struct ringtrace_persist_state *state;
	unsigned int nr_slices;		/* written before @state */
	bool panicked;			/* a PANIC entry is written */
} rtr_crash;

/* [C3] Hooks running on this CPU. */
static DEFINE_PER_CPU(int, rtr_crash_nesting);

/*
 * The die notifier's walk, for the entry and the live event: off the
 * stack, which may be an exception stack of a few KiB.  [C3] keeps one
 * user per CPU.
 */
static DEFINE_PER_CPU(unsigned long [RINGTRACE_PERSIST_CRASH_IPS],
		      rtr_crash_ips);
/* The live event carries every frame of its entry. */
static_assert(RINGTRACE_PERSIST_CRASH_IPS <= RINGTRACE_STACK_MAX_DEPTH);

static struct ringtrace_persist_crash *rtr_crash_entry(
		struct ringtrace_persist_state *st, unsigned int i)
{
	return (void *)((u8 *)st + RINGTRACE_PERSIST_CRASH_OFFSET +
			(size_t)i * sizeof(struct ringtrace_persist_crash));
}

static struct ringtrace_persist_snap *rtr_crash_snap(
		struct ringtrace_persist_state *st, unsigned int slice)
{
	return (void *)((u8 *)st + RINGTRACE_PERSIST_SNAP_OFFSET +
			(size_t)slice * sizeof(struct ringtrace_persist_snap));
}

/* The state's counters, u32 in the uapi, updated as atomic_t. */
static atomic_t *rtr_crash_counter(__u32 *field)
{
	BUILD_BUG_ON(sizeof(atomic_t) != sizeof(__u32));
	return (atomic_t *)field;
}

/* Copy @msg without its trailing newlines (panic()'s text has one). */
static void rtr_crash_message(char *dst, const char *msg)
{
	size_t len;

	if (!msg)
		return;
	len = strnlen(msg, RINGTRACE_PERSIST_CRASH_MSG - 1);
	while (len && msg[len - 1] == '\n')
		len--;
	memcpy(dst, msg, len);
	dst[len] = '\0';
}

static void rtr_crash_fill(struct ringtrace_persist_crash *e, u32 reason,
			   const char *msg, unsigned long ip, u32 flags,
			   const unsigned long *ips, unsigned int depth)
{
	struct task_struct *task = current;

	/* A claimed entry is zero: armed regions start zeroed [C2]. */
	e->reason = reason;
	e->flags = flags;
	if (in_nmi())
		e->flags |= RINGTRACE_PERSIST_CRASH_NMI;
	else if (in_hardirq())
		e->flags |= RINGTRACE_PERSIST_CRASH_IRQ;
	e->cpu = raw_smp_processor_id();
	e->mono_ns = ktime_get_mono_fast_ns();
	e->ip = ip;
	e->tid = task_pid_nr(task);
	e->pid = task_tgid_nr(task);
	/* Not get_task_comm(): 6.1's takes the task lock. */
	strscpy(e->comm, task->comm, sizeof(e->comm));
	rtr_crash_message(e->message, msg);
	if (ips) {
		memcpy(e->ips, ips, depth * sizeof(*ips));
		e->depth = depth;
	} else {
		e->depth = stack_trace_save((unsigned long *)e->ips,
					    RINGTRACE_PERSIST_CRASH_IPS, 0);
	}
	e->checksum = xxh64(e, sizeof(*e), 0);
	/*
	 * @valid last: the next boot reads it first.  The reader is in
	 * another boot, so this orders the stores for the writeback in
	 * rtr_crash_flush() (and a reset at any point in between), not for a
	 * concurrent reader.
	 */
	smp_wmb();
	WRITE_ONCE(e->valid, RINGTRACE_PERSIST_CRASH_VALID);
}

/* Every slice's writer state, plain reads: a hint [C4]. */
static void rtr_crash_snapshot(struct ringtrace_persist_state *st)
{
	struct ringtrace_persist_snap *s;
	struct rtr_buffer *buf;
	unsigned int cpu;
	int slice;

	/* [C1] Inside the caller's RCU read-side section. */
	for_each_rtr_buffer(cpu, buf) {
		slice = READ_ONCE(rtr_crash.slice_of[cpu]);
		if (!buf->persist || slice < 0 ||
		    slice >= (int)rtr_crash.nr_slices)
			continue;
		s = rtr_crash_snap(st, slice);
		s->cpu = cpu;
		s->offset = local_read(&buf->w.offset);
		s->nesting = local_read(&buf->w.nesting);
		s->last_ts = READ_ONCE(buf->w.last_ts);
		s->consumed = atomic_long_read(&buf->consumed);
		s->lost_full = local_read(&buf->lost_full);
		s->lost_held = local_read(&buf->lost_held);
		s->lost_nested = local_read(&buf->lost_nested);
		s->lost_too_big = local_read(&buf->lost_too_big);
		s->lost_overrun = local_read(&buf->lost_overrun);
		s->lost_reported = local_read(&buf->lost_reported);
		/* Written under consumer_lock, which is not ours to take. */
		s->delivered = data_race(buf->delivered);
		WRITE_ONCE(s->valid, 1);
	}
}

/*
 * [C3] A hook's way in: on this CPU (the kmsg dumper's SHUTDOWN runs
 * preemptible), and false if a hook already runs here (a fault in the
 * crash path must not recurse).  rtr_crash_leave() either way.
 */
static bool rtr_crash_enter(void)
{
	preempt_disable();
	return this_cpu_inc_return(rtr_crash_nesting) == 1;
}

static void rtr_crash_leave(void)
{
	this_cpu_dec(rtr_crash_nesting);
	preempt_enable();
}

/*
 * One hook's work, between rtr_crash_enter() and rtr_crash_leave(): an
 * entry (its stack @ips, or walked here if NULL), the snapshots, the
 * writeback.  Returns whether it wrote an entry.
 */
static bool rtr_crash_record(u32 reason, const char *msg, unsigned long ip,
			     u32 flags, const unsigned long *ips,
			     unsigned int depth)
{
	struct ringtrace_persist_state *st;
	bool wrote = false;
	int n;

	/* [C2] Pairs with smp_store_release() in rtr_crash_arm(). */
	st = smp_load_acquire(&rtr_crash.state);
	if (!st)
		return false;
	n = atomic_inc_return(rtr_crash_counter(&st->crash_claimed));
	if (n <= RINGTRACE_PERSIST_CRASH_MAX) {
		rtr_crash_fill(rtr_crash_entry(st, n - 1), reason, msg, ip,
			       flags, ips, depth);
		wrote = true;
	}
	if (reason != RINGTRACE_PERSIST_OOPS)
		atomic_inc(rtr_crash_counter(&st->terminal));
	rtr_crash_snapshot(st);
	rtr_cache_writeback(rtr_crash.va, rtr_crash.size);
	return wrote;
}

/* The hooks that walk their stack in the entry. */
static bool rtr_crash_hook(u32 reason, const char *msg)
{
	bool wrote = false;

	if (rtr_crash_enter())
		wrote = rtr_crash_record(reason, msg, 0, 0, NULL, 0);
	rtr_crash_leave();
	return wrote;
}

/* kernel_panic's payload, as RTR_KERNEL_PANIC_FIELDS declares it. */
struct rtr_kernel_panic {
	u32 reason;
	u32 cpu;
	u64 ip;
	s32 tid;
	s32 pid;
	char comm[TASK_COMM_LEN];
	u16 message_len;
	char message[];
} __packed;
static_assert(sizeof(struct rtr_kernel_panic) == 42);

/*
 * The oops into this CPU's ring, now, when that is safe (see the top of
 * the file): @msg, the faulting @ip, the stack @ips[@depth].  Irqs are
 * off (oops_begin()).  Returns whether the event was committed.
 */
static bool rtr_crash_live(const char *msg, unsigned long ip,
			   unsigned long *ips, unsigned int depth)
{
	struct ringtrace_buffer *buf = this_cpu_read(ringtrace_cpu_buffer);
	struct task_struct *task = current;
	struct rtr_kernel_panic *p;
	struct rtr_rsv w;
	size_t len = 0;

	if (!buf || local_read(&buf->nesting) ||
	    (ip && within_module(ip, THIS_MODULE)))
		return false;
	if (msg) {
		len = strnlen(msg, RINGTRACE_PERSIST_CRASH_MSG - 1);
		while (len && msg[len - 1] == '\n')
			len--;
	}
	w.slow = 0;
	p = rtr_stack_reserve_ips(&w, rtr_kernel_panic_event.id,
				  sizeof(*p) + len, ips, depth);
	if (!p)
		return false;
	p->reason = RINGTRACE_PERSIST_OOPS;
	p->cpu = raw_smp_processor_id();
	p->ip = ip;
	p->tid = task_pid_nr(task);
	p->pid = task_tgid_nr(task);
	/* NUL padded, as the entry's comm (strscpy_pad(): no lock). */
	strscpy_pad(p->comm, task->comm, sizeof(p->comm));
	p->message_len = len;
	memcpy(p->message, msg, len);
	rtr_commit(&w);
	return true;
}

static int rtr_crash_panic(struct notifier_block *nb, unsigned long event,
			   void *msg)
{
	if (rtr_crash_hook(RINGTRACE_PERSIST_PANIC, msg))
		WRITE_ONCE(rtr_crash.panicked, true);
	return NOTIFY_DONE;
}

/*
 * One walk for the live event and the entry: the same frames in both.
 * The live event first, so that the entry can say it was written.
 */
static int rtr_crash_die(struct notifier_block *nb, unsigned long event,
			 void *data)
{
	struct die_args *args = data;
	unsigned long ip, *ips;
	unsigned int depth;
	u32 flags = 0;

	if (event != DIE_OOPS)
		return NOTIFY_DONE;
	if (rtr_crash_enter()) {
		ip = args->regs ? instruction_pointer(args->regs) : 0;
		ips = this_cpu_ptr(rtr_crash_ips);
		depth = stack_trace_save(ips, RINGTRACE_PERSIST_CRASH_IPS, 0);
		if (rtr_crash_live(args->str, ip, ips, depth))
			flags |= RINGTRACE_PERSIST_CRASH_LIVE;
		rtr_crash_record(RINGTRACE_PERSIST_OOPS, args->str, ip, flags,
				 ips, depth);
	}
	rtr_crash_leave();
	return NOTIFY_DONE;
}

static void rtr_crash_kmsg(struct kmsg_dumper *dumper, rtr_kmsg_dump_arg arg)
{
	switch (rtr_kmsg_dump_reason(arg)) {
	case KMSG_DUMP_EMERG:
		/* panic()'s restart: its entry says more. */
		if (!READ_ONCE(rtr_crash.panicked))
			rtr_crash_hook(RINGTRACE_PERSIST_EMERG_RESTART,
				       "emergency restart");
		break;
	case KMSG_DUMP_SHUTDOWN:
		rtr_crash_hook(RINGTRACE_PERSIST_SHUTDOWN, "shutdown");
		break;
	default:
		break;
	}
}

/* Before the other panic notifiers: some of them may hang. */
static struct notifier_block rtr_crash_panic_nb = {
	.notifier_call = rtr_crash_panic,
	.priority = INT_MAX,
};

static struct notifier_block rtr_crash_die_nb = {
	.notifier_call = rtr_crash_die,
	.priority = INT_MAX,
};

static struct kmsg_dumper rtr_crash_dumper = {
	.dump = rtr_crash_kmsg,
	.max_reason = KMSG_DUMP_SHUTDOWN,
};

static bool rtr_crash_dumping;

int rtr_crash_event_init(void)
{
	BUILD_BUG_ON(RINGTRACE_PERSIST_PANIC != 1 || RINGTRACE_PERSIST_OOPS != 2 ||
		     RINGTRACE_PERSIST_EMERG_RESTART != 3 ||
		     RINGTRACE_PERSIST_SHUTDOWN != 4);
	return ringtrace_event_register(&rtr_kernel_panic_event);
}

void rtr_crash_event_exit(void)
{
	ringtrace_event_unregister(&rtr_kernel_panic_event);
}

/*
 * At load, once nothing can fail any more: the die notifier (the live
 * oops event, with or without a region), and with a region at @va (@size
 * bytes, @slice_of per CPU; NULL: none) the other hooks.  No entry is
 * written until rtr_crash_arm().
 */
void rtr_crash_init(void *va, size_t size, const int *slice_of)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct ringtrace_persist_crash) !=
		     RINGTRACE_PERSIST_CRASH_SIZE);
	BUILD_BUG_ON(sizeof(struct ringtrace_persist_snap) !=
		     RINGTRACE_PERSIST_SNAP_SIZE);
	BUILD_BUG_ON(sizeof(struct ringtrace_persist_state) >
		     RINGTRACE_PERSIST_CRASH_OFFSET);
	BUILD_BUG_ON(RINGTRACE_PERSIST_CRASH_OFFSET + RINGTRACE_PERSIST_CRASH_MAX *
		     RINGTRACE_PERSIST_CRASH_SIZE > RINGTRACE_PERSIST_SNAP_OFFSET);
	register_die_notifier(&rtr_crash_die_nb);
	if (!va)
		return;
	rtr_crash.va = va;
	rtr_crash.size = size;
	rtr_crash.slice_of = slice_of;
	atomic_notifier_chain_register(&panic_notifier_list,
				       &rtr_crash_panic_nb);
	/* -EBUSY only if this dumper were registered already. */
	ret = kmsg_dump_register(&rtr_crash_dumper);
	if (ret)
		pr_err("no emergency-restart or shutdown entries: kmsg_dump_register: %d\n",
		       ret);
	rtr_crash_dumping = !ret;
}

/* At unload, before the buffers and the region go: no hook runs after. */
void rtr_crash_exit(void)
{
	/* It waited for the notifiers inside it. */
	unregister_die_notifier(&rtr_crash_die_nb);
	if (!rtr_crash.va)
		return;
	if (rtr_crash_dumping)
		kmsg_dump_unregister(&rtr_crash_dumper);
	atomic_notifier_chain_unregister(&panic_notifier_list,
					 &rtr_crash_panic_nb);
	/* Each unregistration waited for the hooks inside it. */
	rtr_crash.state = NULL;
	rtr_crash.va = NULL;
}

/*
 * The region is armed, @st its state area and @nr_slices its slices: the
 * hooks write there from now on.  Control lock (persist.c).
 */
void rtr_crash_arm(struct ringtrace_persist_state *st, unsigned int nr_slices)
{
	rtr_crash.nr_slices = nr_slices;
	rtr_crash.panicked = false;
	/* [C2] Pairs with smp_load_acquire() in rtr_crash_record(). */
	smp_store_release(&rtr_crash.state, st);
}

/*
 * No hook writes into the state area once this returns (it is about to be
 * zeroed, or unmapped).  Sleeps.  Control lock, or init and exit.
 */
void rtr_crash_disarm(void)
{
	if (!rtr_crash.state)
		return;
	WRITE_ONCE(rtr_crash.state, NULL);
	/* [C2] The hooks that saw it run under RCU. */
	synchronize_rcu();
}
