/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Field predicates, written to ringtrace.ko's events/EVENT/filter
 * (module/filter.c), which parses and refuses them: record --filter
 * 'EVENT: EXPR'.  The predicates in force before are saved and put back
 * at the end.  record --trigger and ringtraced --trigger 'EVENT: EXPR'
 * are the same for events/EVENT/trigger (module/trigger.c): one set of
 * each, told apart by @file and @option.
 */
#ifndef RINGTRACE_LIB_FILTERS_H
#define RINGTRACE_LIB_FILTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl.h"

struct filter {
	char *spec;		/* as given, for messages */
	char *event;		/* "syscall_entry" */
	const char *expr;	/* in @spec, after "EVENT: " */
	char *saved;		/* the predicate before, "none": none; NULL */
	bool probe;		/* on a dynamic probe of -e: saved as "none" */
};

struct filters {
	const char *file;	/* "filter": events/EVENT/filter */
	const char *option;	/* "--filter", for messages */
	struct filter *f;
	size_t n;
};

/* Adds one --filter; -1 with one sentence in @why if it is no 'EVENT: EXPR'. */
int filters_add(struct filters *fs, const char *spec, char *why, size_t size);
/*
 * Every EVENT is among the @n @names with @on set (any event when @names
 * is NULL), is named once, and has a filter file: -1 with one sentence in
 * @why if not.  With @probes, an EVENT not among @names at all is left for
 * filters_check_probes(), once they exist.
 */
int filters_check(struct filters *fs, const struct ctl *c,
		  const char *const *names, const bool *on, size_t n,
		  bool probes, char *why, size_t size);
/*
 * The EVENTs filters_check() left are among the @n events of the dynamic
 * probes just made, @names, and have a filter file (-1 and @why if not).
 * Their predicates came with the probes ("none") and go with them: put
 * back to "none" while the probe exists, nothing to put back after.
 */
int filters_check_probes(struct filters *fs, const struct ctl *c,
			 const char *const *names, size_t n, char *why,
			 size_t size);
/*
 * Saves each event's predicate (in filter.saved), as filters_apply()
 * does first: -1 with @why when one cannot be read.
 */
int filters_save(struct filters *fs, const struct ctl *c, char *why,
		 size_t size);
/*
 * Saves each event's predicate and writes the new one, all or none: -1
 * with the module's reason in @why ("--filter 'EVENT: EXPR': unknown field
 * 'foo' at column 1"), every predicate as it was.
 */
int filters_apply(struct filters *fs, const struct ctl *c, char *why,
		  size_t size);
/* Puts the saved predicates back; each failure is a warning.  Idempotent. */
void filters_restore(struct filters *fs, const struct ctl *c);

#endif /* RINGTRACE_LIB_FILTERS_H */
