/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stacks of ringtrace sql's sample, stack and frame tables: each
 * event's stack pair (scan.c, SCAN_STACKS) as frames named the way report
 * names them (stack_pair_frames()), innermost first -- the kernel's, then
 * the user's -- with ids made of what the frames are, not of when they
 * were read, so the same frames have the same ids in any window, cursor
 * or run of the same trace:
 *
 *   frame_id  XXH3 of the frame: kernel or user, its module (vmlinux, the
 *             module, or the mapping's path and build-id) and rel_pc, its
 *             offset there (an address no symbol or mapping covers: the
 *             address);
 *   stack_id  XXH3 of its frames' ids, innermost first (a stack recorded
 *             with no frame has one too; no stack recorded: none).
 *
 * Both are 63-bit (non-negative SQLite integers).
 */
#ifndef RINGTRACE_SQL_STACKROWS_H
#define RINGTRACE_SQL_STACKROWS_H

#include "sql.h"

struct sr_stack {
	bool present;			/* a stack was recorded */
	int64_t id;
	uint32_t nr;
	int64_t *ids;			/* frame ids, innermost first */
	uint32_t cap;
};

/* A frame's id: its kind, module (with a user frame's build-id) and rel_pc. */
int64_t sr_frame_id(const struct named_frame *f);
/* The id of the stack of frames @ids, innermost first. */
int64_t sr_stack_id(const int64_t *ids, uint32_t nr);
/* Whether @p holds a stack (an idle CPU's sample holds none). */
bool sr_pair_present(const struct stack_pair *p);
/* @row's pair (scan_row.pair) into @st, its ids computed. */
void sr_stack_read(struct sr_stack *st, struct scan *scan, const struct scan_row *row);
void sr_stack_free(struct sr_stack *st);

#endif /* RINGTRACE_SQL_STACKROWS_H */
