/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stack index: a member's distinct stacks and frames (stackrows.h's
 * ids), in the order one pass over its stack pairs first meets them, so
 * that the stack and frame tables answer from it -- every row, or a stack
 * or a frame by its id (stack_id = X, frame_id IN (...), the inner side
 * of a join) -- without reading the member again.  Built on first need by
 * one pass (scan_stats row "stack index"), kept by the database for the
 * run and on disk for the next runs (sqlcache.h, *.stacks.rtidx).
 *
 * A program's stacks differ near the leaf and share their outer frames,
 * so a stack is kept as a chain of call sites: a node is a frame and the
 * node of the frame that called it (toward the root), each such pair
 * kept once, and a stack is its innermost node.  Walking a stack from
 * that node to the root gives its frames innermost first: depth 0, 1...
 */
#ifndef RINGTRACE_SQL_STACKIDX_H
#define RINGTRACE_SQL_STACKIDX_H

#include "stackrows.h"

#define SI_NONE		UINT32_MAX	/* no node: past the outermost frame */
#define SI_NOSTR	UINT32_MAX	/* no string: NULL */

/*
 * A frame (named_frame's), its strings offsets in the index's pool, each
 * distinct string kept once (a module's path is the module of each of
 * its frames).
 */
struct si_frame {
	int64_t id;
	uint64_t rel_pc;
	uint32_t name, module, symbol;	/* SI_NOSTR: NULL */
	bool user;
};

struct si_node {
	uint32_t frame;			/* index in frames */
	uint32_t caller;		/* the node toward the root, or SI_NONE */
};

struct si_stack {
	int64_t id;
	uint32_t leaf;			/* its innermost frame's node */
	uint32_t depth;			/* frames, at least one */
};

/* A table of indexes + 1 (0: a free slot), by id. */
struct si_slots {
	uint32_t *v;
	size_t cap;			/* a power of two, or 0 */
};

struct stack_index {
	struct si_frame *frames;	/* first met first */
	size_t nr_frames, cap_frames;
	char *pool;			/* the frames' strings, each once */
	size_t pool_len, pool_cap, nr_strs;
	struct si_node *nodes;
	size_t nr_nodes, cap_nodes;
	struct si_stack *stacks;	/* those with a frame, first met first */
	size_t nr_stacks, cap_stacks;
	struct si_slots frame_by_id, node_by_pair, stack_by_id, str_by_text;
	/*
	 * What its pass depended on besides the trace's files: debuginfod's
	 * lookups before it, whether it made any; whether it read past
	 * damage or a note (sqldb.read_past).
	 */
	unsigned long lookups;
	bool asked, read_past;
};

/*
 * Member @m's index: the database's, else from the cache (scan_stats row
 * "stack index", plan "cache", no frame read), else built by one pass
 * and kept.  NULL with c->err set.
 */
const struct stack_index *stackidx_get(struct sql_cursor *c, unsigned int m);
/*
 * The next member the cursor's spec asks for from *@next on: 1 with its
 * index in *@ix and its number in *@member, *@next past it; 0 none is
 * left; -1 (c->err).
 */
int stackidx_next_member(struct sql_cursor *c, unsigned int *next, unsigned int *member,
			 const struct stack_index **ix);
/* The stack or frame of id @id, or NULL. */
const struct si_stack *stackidx_stack(const struct stack_index *ix, int64_t id);
const struct si_frame *stackidx_frame(const struct stack_index *ix, int64_t id);
/* A frame's string, or NULL. */
static inline const char *stackidx_str(const struct stack_index *ix, uint32_t s)
{
	return s == SI_NOSTR ? NULL : ix->pool + s;
}
void stackidx_free(struct stack_index *ix);

#endif /* RINGTRACE_SQL_STACKIDX_H */
