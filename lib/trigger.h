/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Triggers, the consumer's side, shared by `ringtrace record --trigger`
 * and `ringtraced --trigger`: the hits ringtrace.ko's triggers latch (the
 * triggered file, module/trigger.c) and the snapshot each one makes.  The
 * conditions themselves are written by filters.c, to events/EVENT/trigger.
 */
#ifndef RINGTRACE_LIB_TRIGGER_H
#define RINGTRACE_LIB_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl.h"

struct trigger_hit {
	bool hit;		/* false: armed, nothing latched */
	char event[64];		/* what fired */
	char trigger[512];	/* its condition */
	unsigned int cpu;
	uint64_t ts;		/* the trace clock (CLOCK_MONOTONIC) */
	uint64_t hits, missed;	/* since the reset */
};

/* The triggered file, opened for poll() (POLLPRI: a hit waits); or -1. */
int trigger_watch(const struct ctl *c);
/* "reset": no hit latched, the counts at 0; 0 or -errno. */
int trigger_reset(const struct ctl *c);
/* The hit, if one is latched, and the counts: 0 or -errno. */
int trigger_read(const struct ctl *c, struct trigger_hit *h);

/*
 * Writes what the buffers hold now into the new trace directory @dir
 * (ringtraced --once); 0, or -1 when that failed and said why.
 */
typedef int (*trigger_write_fn)(const char *dir, void *arg);

/*
 * The snapshot of @h: the kernel's marker naming the hit at the end of
 * the buffers, what they hold written by @write (with @arg) into a new
 * trace directory under @parent named after the hit's time and event,
 * PARENT/YYYYmmdd-HHMMSS.mmm-EVENT (its path in @dir), then the trigger
 * rearmed.  0, or -1 with one sentence in @why.
 */
int trigger_save(const struct ctl *c, const struct trigger_hit *h,
		 const char *parent, trigger_write_fn write, void *arg,
		 char *dir, size_t dir_size, char *why, size_t why_size);

#endif /* RINGTRACE_LIB_TRIGGER_H */
