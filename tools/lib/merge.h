/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Items of every CPU of a trace merged by time (losses included; packet
 * items when asked), for the readers that want one ordered walk: the
 * CLI's commands and ringtraced's symbol store (lib/symfill.c).
 */
#ifndef RINGTRACE_MERGE_H
#define RINGTRACE_MERGE_H

#include <stdbool.h>

#include "rtdecode.h"

struct merge;

/* Over @t's streams from where they are; NULL out of memory. */
struct merge *merge_open(struct rt_trace *t, bool packets);
/*
 * The next item of all CPUs in time order, or NULL at the end or at the
 * first error (merge_error() says it).  Its pointers stay valid until the
 * next call (the stream keeps its packet).
 */
const struct rt_item *merge_next(struct merge *m);
const char *merge_error(const struct merge *m);
void merge_close(struct merge *m);

#endif /* RINGTRACE_MERGE_H */
