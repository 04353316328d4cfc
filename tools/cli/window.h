/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --begin/--end: a time window of a trace, for report and export.
 */
#ifndef RINGTRACE_CLI_WINDOW_H
#define RINGTRACE_CLI_WINDOW_H

#include "traceset.h"

/* The window in the trace's clock cycles; no begin (end): from the start (to the end). */
struct window {
	bool has_begin, has_end;
	uint64_t begin, end;
};

/* --begin or --end counts from the trace's first event (+DURATION). */
bool window_from_start(const char *begin, const char *end);

/*
 * @w from --begin @begin and --end @end (either NULL): seconds as report
 * prints them (with @wall, since the epoch), or +DURATION from @start, the
 * trace's first event.  A bad time, or an end before the begin, is a
 * usage error.
 */
void window_parse(struct window *w, const char *begin, const char *end,
		  const struct rt_metadata *md, uint64_t start, bool wall);

static inline bool window_holds(const struct window *w, uint64_t ts)
{
	return (!w->has_begin || ts >= w->begin) && (!w->has_end || ts <= w->end);
}

/*
 * Member @member of @ts reads only what @w needs (tset_window(), seeking
 * with the chunks' time indexes unless RINGTRACE_SEEK=0); nothing when
 * @w is the whole trace.  Before tset_merge_open(); 0, or -1 said.
 */
int window_apply(struct tset *ts, unsigned int member, const struct window *w);

/*
 * What the frames a window of member @member does not read tell of threads
 * (rt_threads_learn_window()), into @th: after window_apply(), before the
 * first item.  0, or -1 said.
 */
int window_threads(struct tset *ts, unsigned int member, struct rt_threads *th);

#endif
