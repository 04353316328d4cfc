// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: module init/exit, CPU hotplug, and the global state the
 * control files change: tracing on/off, mode, geometry.
 *
 * Buffers exist for the CPUs that have been online since the module
 * loaded: one is allocated when a CPU comes up (or at load for the online
 * ones) and kept when it goes down, so that what it wrote stays readable.
 *
 * Locks, outermost first; writers take none of them:
 *
 *   buf->consumer_lock	one consumer's ioctls on its buffer file
 *   cpus_read_lock()	the set of online CPUs (hotplug callbacks run
 *			under its write side and take nothing below)
 *   rtr_control_lock	tracing on/off, mode, geometry, open files
 *   buf->flush_lock	one flush of a buffer at a time
 *   rtr_persist_blob_lock  the persistent region's metadata and ksyms
 *			copies (persist.c); also taken without the ones
 *			above, and takes rtr_events_lock (ctf.c) inside
 *
 * Every change of geometry or mode holds cpus_read_lock(), so the hotplug
 * prepare callback reads them without the control lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/oom.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>

#include "internal.h"
#include "probes.h"

int ringtrace_tracing;
EXPORT_SYMBOL_GPL(ringtrace_tracing);

DEFINE_PER_CPU(struct ringtrace_buffer *, ringtrace_cpu_buffer);
EXPORT_PER_CPU_SYMBOL_GPL(ringtrace_cpu_buffer);

DEFINE_MUTEX(rtr_control_lock);

struct rtr_trace_state rtr_trace = {
	.subbuf_size = RTR_DEFAULT_SUBBUF_SIZE,
	.num_subbufs = RTR_DEFAULT_NUM_SUBBUFS,
};

bool rtr_stopped = true;

/* Dynamic hotplug states, for their removal at exit. */
static int rtr_cpuhp_prepare;
static int rtr_cpuhp_online;

/* Stop every writer and wait for those in flight [R3]. */
static void rtr_quiesce(void)
{
	WRITE_ONCE(ringtrace_tracing, 0);
	synchronize_rcu();
	/* [B4] Pairs with smp_load_acquire() in GET, poll and flush. */
	smp_store_release(&rtr_stopped, true);
}

int rtr_set_tracing(bool on)
{
	struct rtr_buffer *buf;
	unsigned int cpu;

	lockdep_assert_held(&rtr_control_lock);
	if (on == rtr_trace.tracing_on)
		return 0;
	if (on) {
		WRITE_ONCE(rtr_stopped, false);
		/*
		 * A remote flush that saw rtr_stopped set is done once its
		 * flush_lock is free; later ones see it clear [R4].
		 */
		for_each_rtr_buffer(cpu, buf) {
			mutex_lock(&buf->flush_lock);
			mutex_unlock(&buf->flush_lock);
		}
		rtr_trace.tracing_on = true;
		rtr_stack_start();
		/*
		 * [B6] The tables rtr_stack_start() emptied, before any writer
		 * sees tracing on.  Pairs with smp_load_acquire() in
		 * rtr_stack_reserve_at().
		 */
		smp_store_release(&ringtrace_tracing, 1);
		rtr_statedump();
		return 0;
	}
	rtr_quiesce();
	rtr_trace.tracing_on = false;
	/* No writer anywhere: close every open packet for the consumer. */
	for_each_rtr_buffer(cpu, buf)
		rtr_buffer_flush(buf);
	return 0;
}

int rtr_set_mode(bool overwrite)
{
	struct rtr_buffer *buf;
	unsigned int cpu;

	lockdep_assert_held(&rtr_control_lock);
	if (rtr_trace.tracing_on)
		return -EBUSY;
	rtr_trace.overwrite = overwrite;
	for_each_rtr_buffer(cpu, buf)
		rtr_buffer_set_mode(buf, overwrite);
	return 0;
}

static void rtr_free_buffers(struct rtr_buffer **bufs)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		rtr_buffer_free(bufs[cpu]);
	kfree(bufs);
}

/* @cpu's buffer, in its slice of @l when the region has one for it. */
static struct rtr_buffer *rtr_alloc_cpu(unsigned int cpu,
					unsigned long subbuf_size,
					unsigned int num_subbufs, bool killable,
					const struct rtr_persist_layout *l)
{
	struct rtr_slice slice;
	struct rtr_buffer *buf;

	buf = rtr_buffer_alloc(cpu, subbuf_size, num_subbufs,
			       rtr_trace.overwrite, killable,
			       rtr_persist_slice(l, cpu, &slice) ? &slice : NULL);
	if (buf)
		buf->irq_wakeup = cpu_online(cpu);
	return buf;
}

#define RTR_PAGES_KIB(pages)	((pages) << (PAGE_SHIFT - 10))

/*
 * Refuse what memory cannot hold, the way the kernel's own ring buffer
 * does: the new buffers are allocated before the old ones are freed (a
 * failure must leave the trace as it was), so they must fit in what is
 * available now, beside them.  The log line gives the very numbers
 * compared: every ENOMEM of a geometry change says why in the kernel log
 * (here, or in rtr_replace_buffers() when the allocation itself fails),
 * and rt_fuzz holds the module to it.
 */
static int rtr_check_memory(unsigned long subbuf_size,
			    unsigned int num_subbufs, unsigned int nr_bufs)
{
	unsigned long need = rtr_buffer_pages(subbuf_size, num_subbufs) *
			     nr_bufs;
	long avail = si_mem_available();

	if (need > (unsigned long)avail) {
		pr_info("%u buffers of %lu x %u bytes would need %lu KiB, %lu KiB are available\n",
			nr_bufs, subbuf_size, num_subbufs, RTR_PAGES_KIB(need),
			RTR_PAGES_KIB((unsigned long)avail));
		return -ENOMEM;
	}
	return 0;
}

/*
 * All or nothing: on failure nothing changed.  With a layout @l of the
 * persistent region (persist.c), the buffers that get a slice live in it:
 * once every new buffer is allocated, the old ones are idle and the region
 * is re-carved (@arm: zeroed and armed first) under them.
 */
int rtr_replace_buffers(unsigned long subbuf_size, unsigned int num_subbufs,
			const struct rtr_persist_layout *l, bool arm)
{
	struct rtr_buffer **bufs, *buf;
	unsigned int cpu, nr = 0;
	int ret;

	for_each_rtr_buffer(cpu, buf)
		nr++;
	/* Those past the region's slices take pages. */
	if (l)
		nr -= min(nr, l->nr_slices);
	ret = rtr_check_memory(subbuf_size, num_subbufs, nr);
	if (ret)
		return ret;
	/* Small: the allocator warns if it fails. */
	bufs = kcalloc(nr_cpu_ids, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return -ENOMEM;
	/*
	 * Make the OOM killer pick us, not a bystander, if memory runs out
	 * (si_mem_available() is an estimate, and others allocate too); the
	 * allocation stops at the first page after a fatal signal.
	 */
	set_current_oom_origin();
	for_each_rtr_buffer(cpu, buf) {
		bufs[cpu] = rtr_alloc_cpu(cpu, subbuf_size, num_subbufs, true,
					  l);
		if (!bufs[cpu] && fatal_signal_pending(current)) {
			ret = -EINTR;
			goto free_new;
		}
		if (!bufs[cpu]) {
			pr_info("cpu%u: out of memory for %lu x %u bytes (%lu KiB available)\n",
				cpu, subbuf_size, num_subbufs,
				RTR_PAGES_KIB((unsigned long)si_mem_available()));
			ret = -ENOMEM;
			goto free_new;
		}
	}
	clear_current_oom_origin();
	if (l) {
		/* No meta page update of an old buffer lands in a new one. */
		for_each_rtr_buffer(cpu, buf)
			rtr_buffer_idle(buf);
		rtr_persist_commit(l, arm);
		for_each_possible_cpu(cpu)
			if (bufs[cpu] && bufs[cpu]->persist)
				rtr_buffer_carve(bufs[cpu]);
	}
	/* Writers are stopped [R3]; swap, then free the old set. */
	for_each_possible_cpu(cpu) {
		if (!bufs[cpu])
			continue;
		buf = rtr_cpu_buffer(cpu);
		/*
		 * The buffer is whole before it is seen: pairs with the
		 * address dependency of READ_ONCE() in rtr_cpu_buffer().
		 */
		smp_store_release(per_cpu_ptr(&ringtrace_cpu_buffer, cpu),
				  &bufs[cpu]->w);
		bufs[cpu] = buf;
	}
	/* [C1] of crash.c: the crash path's snapshot reads them under RCU. */
	if (l)
		synchronize_rcu();
	rtr_free_buffers(bufs);
	rtr_trace.subbuf_size = subbuf_size;
	rtr_trace.num_subbufs = num_subbufs;
	return 0;

free_new:
	clear_current_oom_origin();
	rtr_free_buffers(bufs);
	return ret;
}

/* A new set of buffers, in the region's slices while it is live. */
static int rtr_new_buffers(unsigned long subbuf_size, unsigned int num_subbufs)
{
	struct rtr_persist_layout l;
	int ret;

	if (!rtr_persist_live())
		return rtr_replace_buffers(subbuf_size, num_subbufs, NULL, false);
	ret = rtr_persist_fit(&l, subbuf_size, num_subbufs);
	return ret ?: rtr_replace_buffers(subbuf_size, num_subbufs, &l, false);
}

int rtr_set_geometry(unsigned long subbuf_size, unsigned int num_subbufs)
{
	lockdep_assert_held(&rtr_control_lock);
	if (subbuf_size < PAGE_SIZE || !is_power_of_2(subbuf_size) ||
	    subbuf_size > RINGTRACE_MAX_SUBBUF_SIZE ||
	    num_subbufs < RINGTRACE_MIN_SUBBUFS ||
	    !is_power_of_2(num_subbufs) ||
	    num_subbufs > RINGTRACE_MAX_SUBBUFS)
		return -EINVAL;
	if (rtr_trace.tracing_on || !rtr_buffers_idle())
		return -EBUSY;
	return rtr_new_buffers(subbuf_size, num_subbufs);
}

int rtr_clear(void)
{
	lockdep_assert_held(&rtr_control_lock);
	if (rtr_trace.tracing_on || !rtr_buffers_idle())
		return -EBUSY;
	return rtr_new_buffers(rtr_trace.subbuf_size, rtr_trace.num_subbufs);
}

/*
 * CPU hotplug.  A CPU that comes up for the first time gets its buffer
 * before it runs anything (on the CPU bringing it up; a failure keeps it
 * down, as for the kernel's ring buffer).  A CPU that goes down keeps its
 * buffer: its consumer drains it, and it is used again if the CPU returns.
 */
static int rtr_cpu_prepare(unsigned int cpu)
{
	struct rtr_buffer *buf;

	if (rtr_cpu_buffer(cpu))
		return 0;
	/*
	 * Geometry, mode and the region change only with cpus_read_lock()
	 * held.  Not killable: a CPU coming up is not the caller's to abort.
	 * A slice given now was zeroed when it was carved, and is no other
	 * buffer's.
	 */
	buf = rtr_alloc_cpu(cpu, rtr_trace.subbuf_size, rtr_trace.num_subbufs,
			    false, rtr_persist_current());
	if (!buf)
		return -ENOMEM;
	if (buf->persist)
		rtr_buffer_carve(buf);
	/* Pairs with READ_ONCE() in rtr_cpu_buffer(), as above. */
	smp_store_release(per_cpu_ptr(&ringtrace_cpu_buffer, cpu), &buf->w);
	return 0;
}

/*
 * On the CPU, when it has come up and when it starts going down.  Coming
 * up, the CPU ran interrupts and threads before this callback, whose
 * completed packets and trigger hits queued no wakeup:
 * rtr_buffer_set_irq_wakeup() wakes the consumer for the packets [W1],
 * rtr_trigger_cpu_online() the trigger's waiters for a hit [T2].
 */
static int rtr_cpu_online(unsigned int cpu)
{
	rtr_buffer_set_irq_wakeup(rtr_cpu_buffer(cpu), true);
	rtr_trigger_cpu_online();
	return 0;
}

static int rtr_cpu_offline(unsigned int cpu)
{
	rtr_buffer_set_irq_wakeup(rtr_cpu_buffer(cpu), false);
	rtr_trigger_cpu_offline();
	return 0;
}

/*
 * On another CPU once the CPU is dead: packets it completed after its
 * offline callback queued no wakeup (ringtrace_subbuf_done()), nor did a
 * trigger's hit there (trigger.c).
 */
static int rtr_cpu_dead(unsigned int cpu)
{
	rtr_buffer_wake(rtr_cpu_buffer(cpu));
	rtr_trigger_cpu_dead();
	return 0;
}

static void rtr_free_percpu_buffers(void)
{
	struct rtr_buffer *buf;
	unsigned int cpu;

	for_each_rtr_buffer(cpu, buf) {
		per_cpu(ringtrace_cpu_buffer, cpu) = NULL;
		rtr_buffer_free(buf);
	}
}

static int rtr_hotplug_init(void)
{
	int ret;

	ret = cpuhp_setup_state(CPUHP_BP_PREPARE_DYN, "ringtrace:prepare",
				rtr_cpu_prepare, rtr_cpu_dead);
	if (ret < 0)
		return ret;
	rtr_cpuhp_prepare = ret;
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "ringtrace:online",
				rtr_cpu_online, rtr_cpu_offline);
	if (ret < 0) {
		cpuhp_remove_state_nocalls(rtr_cpuhp_prepare);
		return ret;
	}
	rtr_cpuhp_online = ret;
	return 0;
}

/* Every CPU stops queueing wakeups; buffers stay for the caller to free. */
static void rtr_hotplug_exit(void)
{
	cpuhp_remove_state(rtr_cpuhp_online);
	cpuhp_remove_state_nocalls(rtr_cpuhp_prepare);
}

static int __init ringtrace_init(void)
{
	int ret;

	generate_random_uuid(rtr_trace.uuid);
	ret = rtr_events_init();
	if (ret)
		return ret;
	/* Before any buffer: it may give them their slices and geometry. */
	ret = rtr_persist_init();
	if (ret)
		goto exit_events;
	ret = rtr_hotplug_init();
	if (ret)
		goto free_buffers;
	ret = rtr_probes_init();
	if (ret)
		goto exit_hotplug;
	ret = rtr_crash_event_init();
	if (ret)
		goto exit_probes;
	/*
	 * The files last, and nothing that can fail after them: they open
	 * only once published (files.c), and on failure they are gone with
	 * no open left in flight.  So no probe was attached either.
	 */
	ret = rtr_files_init();
	if (ret)
		goto exit_crash_event;
	rtr_files_publish();
	rtr_persist_hooks_init();
	pr_info("loaded: %u cpus online, %lu x %u bytes per cpu\n",
		num_online_cpus(), rtr_trace.subbuf_size, rtr_trace.num_subbufs);
	return 0;

exit_crash_event:
	rtr_crash_event_exit();
exit_probes:
	rtr_probes_init_undo();
exit_hotplug:
	rtr_hotplug_exit();
free_buffers:
	/* Also what a failed setup of the prepare state allocated. */
	rtr_free_percpu_buffers();
	rtr_persist_init_undo();
exit_events:
	rtr_events_exit();
	return ret;
}

static void __exit ringtrace_exit(void)
{
	/* No crash hook reads a buffer or the region from here on. */
	rtr_persist_hooks_exit();
	/* No timer writes cpu_sample once rtr_probes_exit() drops it. */
	rtr_sampler_exit();
	rtr_probes_exit();
	rtr_crash_event_exit();
	rtr_files_exit();
	rtr_quiesce();
	/* The image's packets closed, as a stop closes them for a consumer. */
	if (rtr_persist_live()) {
		struct rtr_buffer *buf;
		unsigned int cpu;

		for_each_rtr_buffer(cpu, buf)
			rtr_buffer_flush(buf);
	}
	rtr_hotplug_exit();
	rtr_free_percpu_buffers();
	rtr_persist_exit();
	rtr_events_exit();
}

module_init(ringtrace_init);
module_exit(ringtrace_exit);
MODULE_DESCRIPTION("ringtrace: lockless per-CPU CTF ring buffer tracer");
MODULE_AUTHOR("ringtrace developers");
MODULE_LICENSE("GPL");
