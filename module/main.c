// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: module init/exit and the global state the control files
 * change: tracing on/off, mode, geometry.  Every change happens under
 * rtr_control_lock; writers never take it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rcupdate.h>

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

/* Stop every writer and wait for those in flight [R3]. */
static void rtr_quiesce(void)
{
	WRITE_ONCE(ringtrace_tracing, 0);
	synchronize_rcu();
}

int rtr_set_tracing(bool on)
{
	unsigned int cpu;

	lockdep_assert_held(&rtr_control_lock);
	if (on == rtr_trace.tracing_on)
		return 0;
	if (on) {
		rtr_trace.tracing_on = true;
		WRITE_ONCE(ringtrace_tracing, 1);
		return 0;
	}
	rtr_quiesce();
	rtr_trace.tracing_on = false;
	/* No writer anywhere: close every open packet for the consumer. */
	for_each_possible_cpu(cpu)
		rtr_buffer_flush(per_cpu(ringtrace_cpu_buffer, cpu));
	return 0;
}

int rtr_set_mode(bool overwrite)
{
	unsigned int cpu;

	lockdep_assert_held(&rtr_control_lock);
	if (rtr_trace.tracing_on)
		return -EBUSY;
	rtr_trace.overwrite = overwrite;
	for_each_possible_cpu(cpu)
		per_cpu(ringtrace_cpu_buffer, cpu)->overwrite = overwrite;
	return 0;
}

static void rtr_free_buffers(struct ringtrace_buffer **bufs)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		rtr_buffer_free(bufs[cpu]);
	kfree(bufs);
}

/* All or nothing: on failure nothing changed. */
static int rtr_replace_buffers(unsigned long subbuf_size,
			      unsigned int num_subbufs)
{
	struct ringtrace_buffer **bufs;
	unsigned int cpu;

	bufs = kcalloc(nr_cpu_ids, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		bufs[cpu] = rtr_buffer_alloc(cpu, subbuf_size, num_subbufs,
					    rtr_trace.overwrite);
		if (!bufs[cpu]) {
			rtr_free_buffers(bufs);
			return -ENOMEM;
		}
	}
	/* Writers are stopped [R3]; swap, then free the old set. */
	for_each_possible_cpu(cpu)
		swap(bufs[cpu], per_cpu(ringtrace_cpu_buffer, cpu));
	rtr_free_buffers(bufs);
	rtr_trace.subbuf_size = subbuf_size;
	rtr_trace.num_subbufs = num_subbufs;
	return 0;
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
	if (rtr_trace.tracing_on || rtr_trace.open_buffers)
		return -EBUSY;
	return rtr_replace_buffers(subbuf_size, num_subbufs);
}

int rtr_clear(void)
{
	lockdep_assert_held(&rtr_control_lock);
	if (rtr_trace.tracing_on || rtr_trace.open_buffers)
		return -EBUSY;
	return rtr_replace_buffers(rtr_trace.subbuf_size, rtr_trace.num_subbufs);
}

static void rtr_free_percpu_buffers(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		rtr_buffer_free(per_cpu(ringtrace_cpu_buffer, cpu));
		per_cpu(ringtrace_cpu_buffer, cpu) = NULL;
	}
}

static int __init ringtrace_init(void)
{
	int ret;

	generate_random_uuid(rtr_trace.uuid);
	ret = rtr_events_init();
	if (ret)
		return ret;
	mutex_lock(&rtr_control_lock);
	ret = rtr_replace_buffers(rtr_trace.subbuf_size, rtr_trace.num_subbufs);
	mutex_unlock(&rtr_control_lock);
	if (ret)
		goto exit_events;
	ret = rtr_debugfs_init();
	if (ret)
		goto free_buffers;
	ret = rtr_probes_init();
	if (ret)
		goto exit_debugfs;
	pr_info("loaded: %u cpus, %lu x %u bytes per cpu\n", num_possible_cpus(),
		rtr_trace.subbuf_size, rtr_trace.num_subbufs);
	return 0;

exit_debugfs:
	rtr_debugfs_exit();
free_buffers:
	rtr_free_percpu_buffers();
exit_events:
	rtr_events_exit();
	return ret;
}

static void __exit ringtrace_exit(void)
{
	rtr_probes_exit();
	rtr_debugfs_exit();
	rtr_quiesce();
	rtr_free_percpu_buffers();
	rtr_events_exit();
}

module_init(ringtrace_init);
module_exit(ringtrace_exit);
MODULE_DESCRIPTION("ringtrace: lockless per-CPU CTF ring buffer tracer");
MODULE_AUTHOR("ringtrace developers");
MODULE_LICENSE("GPL");
