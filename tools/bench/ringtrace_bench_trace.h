/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ftrace twin of ringtrace_bench's rate event: the same 24-byte payload,
 * written by the same generator (ringtrace_bench.c, run key target=ftrace),
 * so that `trace-cmd record -e ringtrace_bench:bench_rate` and ringtraced
 * record exactly the same load.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ringtrace_bench

#if !defined(_RINGTRACE_BENCH_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RINGTRACE_BENCH_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(bench_rate,

	TP_PROTO(u32 tid, s32 ret, u64 addr, u64 value),

	TP_ARGS(tid, ret, addr, value),

	TP_STRUCT__entry(
		__field(u32, tid)
		__field(s32, ret)
		__field(u64, addr)
		__field(u64, value)
	),

	TP_fast_assign(
		__entry->tid = tid;
		__entry->ret = ret;
		__entry->addr = addr;
		__entry->value = value;
	),

	TP_printk("tid=%u ret=%d addr=0x%llx value=%llu", __entry->tid,
		  __entry->ret, __entry->addr, __entry->value)
);

#endif /* _RINGTRACE_BENCH_TRACE_H */

/*
 * define_trace.h includes this header again as
 * "TRACE_INCLUDE_PATH/TRACE_INCLUDE_FILE.h".  The top-level Kbuild gives
 * -I$(src)/include, and the build mirror has this header in
 * $(src)/tools/bench/, hence a path relative to that include directory.
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH ../tools/bench
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ringtrace_bench_trace
#include <trace/define_trace.h>
