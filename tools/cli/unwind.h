/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks recorded in copy mode (record --ustack-mode copy): each a
 * user_stack_copy record, the user registers ip, sp and bp and the top of
 * the stack, unwound here with libdwfl and the binaries' CFI.  The
 * binaries come from where the mappings (user_mmap) say, by build-id,
 * from a directory of binaries given to report (--binaries); never from
 * the running machine's files.
 */
#ifndef RINGTRACE_UNWIND_H
#define RINGTRACE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/ringtrace.h>

#include "../lib/rtdecode.h"

/* A user_stack_copy record, as decoded; @bytes points into its packet. */
struct ustack_copy {
	uint64_t ip, sp, bp;
	uint16_t size;			/* bytes at @bytes, from sp up */
	uint16_t flags;			/* RINGTRACE_USTACK_* */
	const uint8_t *bytes;
};

/*
 * @it's user_stack_copy record in @c; false when @it is none (or is
 * damaged: its size disagrees with its bytes, its fields are missing).
 */
bool ucopy_get(const struct rt_item *it, struct ustack_copy *c);

/*
 * The executable mappings of each process, from the user_mmap events
 * read so far (fed in time order): a mapping replaces those of its
 * process it overlaps.
 */
struct umaps;
struct umaps *umaps_new(void);
void umaps_free(struct umaps *m);
/* Learns from @it if it is a user_mmap; true if it was one. */
bool umaps_feed(struct umaps *m, const struct rt_item *it);

/* One per report: the binaries by build-id, a libdwfl session per process. */
struct unwinder;
/*
 * @bindir: the binaries' directory (its files and its subdirectories'
 * files, found by their build-ids), or NULL for none: stacks are then
 * their ip alone.  NULL with *@why said when the directory is unreadable.
 */
struct unwinder *unwinder_new(const char *bindir, char *why, size_t len);
void unwinder_free(struct unwinder *u);

/*
 * Unwinds @c, a stack copied from process @pid, with the mappings @m
 * holds now, into @ips (at most @max, at least 1): the ip first, then
 * for each caller its return address minus 1 (an address inside the
 * call, for a lookup).  Returns the frames stored, at least the ip.
 * *@note: why the stack ends before its outermost frame, or NULL.
 */
unsigned int unwind_copy(struct unwinder *u, const struct ustack_copy *c,
			 int32_t pid, const struct umaps *m, uint64_t *ips,
			 unsigned int max, const char **note);

#endif
