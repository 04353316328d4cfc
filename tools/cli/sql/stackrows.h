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

/* One frame of a stack, its strings its own. */
struct sr_frame {
	int64_t id;
	bool user;
	char *name, *module, *symbol;	/* NULL: none (named_frame's) */
	uint64_t rel_pc;
};

struct sr_stack {
	bool present;			/* a stack was recorded */
	int64_t id;
	uint32_t nr;
	int64_t *ids;			/* frame ids, innermost first */
	/* @keep_frames: the frames too (the frame table). */
	bool keep_frames;
	struct sr_frame *frames;
	uint32_t cap;
};

/* @row's pair (scan_row.pair) into @st, its ids computed. */
void sr_stack_read(struct sr_stack *st, struct scan *scan, const struct scan_row *row);
void sr_stack_free(struct sr_stack *st);

/* A set of ids (distinct rows of stack and frame), per member. */
struct sr_seen {
	int64_t *v;			/* 0: empty slot (id 0 kept apart) */
	size_t cap, nr;
	bool zero;
	unsigned int member;
};
/* Whether @id of @member was not in @s (it is now); another member empties it. */
bool sr_seen_add(struct sr_seen *s, unsigned int member, int64_t id);
void sr_seen_free(struct sr_seen *s);

#endif /* RINGTRACE_SQL_STACKROWS_H */
