/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LTTng's description of ringtrace_bench's tracepoint bench_rate
 * (../ringtrace_bench_trace.h), in lttng-modules' event macros: the same
 * four fields, recorded as the LTTng event "ringtrace_bench_rate".  Built
 * only by tools/bench/build-lttng, against Debian's lttng-modules source.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ringtrace_bench

#if !defined(LTTNG_TRACE_RINGTRACE_BENCH_H) || defined(TRACE_HEADER_MULTI_READ)
#define LTTNG_TRACE_RINGTRACE_BENCH_H

#include <lttng/tracepoint-event.h>

LTTNG_TRACEPOINT_EVENT_MAP(bench_rate,

	ringtrace_bench_rate,

	TP_PROTO(u32 tid, s32 ret, u64 addr, u64 value),

	TP_ARGS(tid, ret, addr, value),

	TP_FIELDS(
		ctf_integer(uint32_t, tid, tid)
		ctf_integer(int32_t, ret, ret)
		ctf_integer_hex(uint64_t, addr, addr)
		ctf_integer(uint64_t, value, value)
	)
)

#endif /* LTTNG_TRACE_RINGTRACE_BENCH_H */

/* Outside the guard: lttng/define_trace.h reads this file again. */
#include <lttng/define_trace.h>
