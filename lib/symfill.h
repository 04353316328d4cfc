/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filling a trace's symbol store (usyms.h) with the binaries its user
 * stacks ran in: shared by ringtraced, which does it when a recording
 * stops, and `ringtrace symbols DIR`, which does it later by hand.
 *
 * symfill_scan() walks the trace once in time order: each build-id its
 * user_mmap events name becomes a candidate (the latest mapping of it: a
 * process and range for /proc/PID/map_files/, and its path), and each
 * user frame counts for the binary it is in (a stack copy's ip, and each
 * word of the copy that points into a mapping: what unwinding it needs).  symfill_store() then keeps them, the most hit
 * first, up to a bound: the exact file a process mapped while that
 * process lives, else the path, only if its build-id is the trace's.
 * What a stack hit but is not stored is listed in USYMS_DIR/missing
 * (usyms.h) with the reason, for report to say why a frame has no name.
 */
#ifndef RINGTRACE_SYMFILL_H
#define RINGTRACE_SYMFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bound of what is stored by default (--symbols-max, symbols --max). */
#define SYMFILL_DEFAULT_MAX	(256ULL << 20)

struct rt_trace;
struct symfill;

struct symfill *symfill_new(void);
void symfill_free(struct symfill *sf);

/*
 * One walk over @t's items from where its streams are.  0, or -1 with
 * @why saying what ended the walk (out of memory, an unreadable trace);
 * damage the streams read past is theirs to report.
 */
int symfill_scan(struct symfill *sf, struct rt_trace *t, char *why, size_t size);

/* Keep the binaries no stack hit too (after those it did). */
#define SYMFILL_ALL	0x1U

struct symfill_result {
	unsigned int stored;		/* put now */
	unsigned int had;		/* already there */
	unsigned int missing;		/* hit (or SYMFILL_ALL), not stored */
	unsigned int pruned;		/* no stack hit them: not tried */
	uint64_t bytes;			/* stored now */
	int err;			/* the store's own failure (-ENOSPC...), 0 */
};

/*
 * The candidates into the store of the trace directory @dirfd, up to
 * @max bytes stored now (the option @bound sets, for the reason given:
 * "--max 1 bytes reached"), each left out warned about once (warn()) and
 * listed in USYMS_DIR/missing (rewritten: the list of this run).  0, or
 * the store's own failure (a full disk, say) as r->err, the rest tried.
 */
int symfill_store(struct symfill *sf, int dirfd, uint64_t max, const char *bound,
		  unsigned int flags, struct symfill_result *r);

#endif /* RINGTRACE_SYMFILL_H */
