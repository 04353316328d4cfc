/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version differences for ringtrace_bench.ko, as static inline
 * wrappers.  The only place under tools/bench/ that tests versions.
 * checkpatch warns about LINUX_VERSION_CODE: out of tree, one source
 * builds for every supported kernel, so the test is the point.
 */
#ifndef _RINGTRACE_BENCH_COMPAT_H
#define _RINGTRACE_BENCH_COMPAT_H

#include <linux/ring_buffer.h>
#include <linux/version.h>

/* ring_buffer_unlock_commit() lost its event argument in 6.2. */
static __always_inline void
bench_rb_unlock_commit(struct trace_buffer *buffer,
		       struct ring_buffer_event *event)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	ring_buffer_unlock_commit(buffer);
#else
	ring_buffer_unlock_commit(buffer, event);
#endif
}

#endif /* _RINGTRACE_BENCH_COMPAT_H */
