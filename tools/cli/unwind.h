/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks recorded in copy mode (record --ustack-mode copy): each a
 * user_stack_copy record, the user registers ip, sp and bp and the top of
 * the stack, unwound here with libdwfl and the binaries' CFI.  The
 * binaries are those the mappings (user_mmap, umaps.h) name, found by
 * build-id in the trace's symbol store, a directory given to report
 * (--binaries) or debuginfod; never the running machine's files.
 */
#ifndef RINGTRACE_UNWIND_H
#define RINGTRACE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/ringtrace.h>

#include "../lib/rtdecode.h"
#include "../lib/stackrec.h"
#include "../lib/umaps.h"
#include "usymbols.h"

/* Whether @it is a user_stack_copy (stackrec.h makes it a pair's copy). */
bool ucopy_is(const struct rt_item *it);

/* One per report: the binaries by build-id, a libdwfl session per process. */
struct unwinder;
/*
 * A binary is looked for by build-id in the trace's symbol store @store
 * (usymbols.h: the namer's, whose decompressed images are shared; it
 * outlives the unwinder), then in @bindir, the binaries' directory
 * (its files and its subdirectories' files, found by their build-ids; NULL
 * for none), then from debuginfod (debuginfod.h); a stack whose binaries
 * none has is its ip alone.  NULL with *@why said when @bindir is
 * unreadable.
 */
struct unwinder *unwinder_new(struct usym_store *store, const char *bindir,
			      char *why, size_t len);
void unwinder_free(struct unwinder *u);

/*
 * Unwinds @c, a stack copied from process @pid, with the mappings @m
 * holds now, into @ips (at most @max, at least 1): the ip first, then
 * for each caller its return address minus 1 (an address inside the
 * call, for a lookup).  Returns the frames stored, at least the ip.
 * *@note: why the stack ends before its outermost frame, or NULL.
 */
unsigned int unwind_copy(struct unwinder *u, const struct stack_copy *c,
			 int32_t pid, const struct umaps *m, uint64_t *ips,
			 unsigned int max, const char **note);

#endif
