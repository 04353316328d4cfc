// SPDX-License-Identifier: GPL-2.0
/*
 * lttng-probe-ringtrace-bench.ko: lets LTTng record ringtrace_bench.ko's
 * tracepoint bench_rate, the load of `make bench`'s pipeline part, the way
 * lttng-modules records any kernel tracepoint (one probe module per
 * subsystem).  LTTng finds the tracepoint by name when ringtrace_bench.ko
 * is loaded, before or after this module.
 */
#include <linux/module.h>
#include <lttng/tracer.h>

/* The kernel-side declaration: the probe's prototype is checked against it. */
#include "ringtrace_bench_trace.h"

/* That header left its own include path behind: ours is the -I'd "." */
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define LTTNG_PACKAGE_BUILD
#define CREATE_TRACE_POINTS
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE ringtrace_bench
#include "ringtrace_bench.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("LTTng probe for ringtrace_bench:bench_rate (make bench)");
