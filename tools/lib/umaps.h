/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Executable mappings of the traced processes, as the trace tells them:
 * user_mmap events (module/umap.c: the state dump's, then each mmap),
 * sched_process_exec (a new image: the process's mappings go) and
 * sched_process_fork (a new process starts with its parent's).  Fed every
 * item in time order, umaps_lookup() answers for the time of the last
 * item fed: which file, at which offset, an address of a process ran in.
 * Memory grows with the mappings and processes, not with the events.
 */
#ifndef RINGTRACE_UMAPS_H
#define RINGTRACE_UMAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "rtdecode.h"

#define UMAP_BUILD_ID_MAX	20

/* user_mmap's flags. */
#define UMAP_DUMP		0x1U	/* from the state dump */
#define UMAP_NO_BUILD_ID	0x2U
#define UMAP_PATH_CUT		0x4U
#define UMAP_NO_PATH		0x8U

/* A mapping, as umaps_add() takes it (user_mmap's fields). */
struct umap_mapping {
	uint64_t start, end;		/* [start, end) */
	uint64_t pgoff;			/* file offset of start, bytes */
	uint64_t dev, ino;
	uint32_t flags;
	uint8_t build_id_len;		/* 0: none */
	uint8_t build_id[UMAP_BUILD_ID_MAX];
	const char *path;		/* "" when none */
};

/* What an address is: where in which file. */
struct umap_hit {
	const uint8_t *build_id;	/* NULL: none known */
	uint8_t build_id_len;
	uint64_t file_off;		/* ip - start + pgoff */
	const char *path;		/* "" when the trace has none */
	uint32_t flags;
	uint64_t start, end;		/* the mapping's */
};

struct umaps;

/*
 * Fed items of @md's events (each event's kind found by its name once);
 * umaps_set_metadata(): of @md from now on.  NULL / -1 out of memory.
 */
struct umaps *umaps_new(const struct rt_metadata *md);
int umaps_set_metadata(struct umaps *um, const struct rt_metadata *md);
void umaps_free(struct umaps *um);
/*
 * An item, in time order: a user_mmap event adds its mapping (cutting
 * what it overlaps, as mmap does), a sched_process_exec clears the pid's,
 * a sched_process_fork of a new process copies the parent's.  Other items
 * change nothing.  0, or -1 out of memory (nothing changed).
 */
int umaps_feed(struct umaps *um, const struct rt_item *it);
/* @pid maps @m now (umaps_feed()'s user_mmap): 0, or -1 out of memory. */
int umaps_add(struct umaps *um, int32_t pid, const struct umap_mapping *m);
/*
 * The mapping of @pid that holds @ip now: true with @hit filled (valid
 * until the next umaps_feed() or umaps_add()), or false.
 */
bool umaps_lookup(const struct umaps *um, int32_t pid, uint64_t ip,
		  struct umap_hit *hit);

/*
 * For the unwinder (tools/cli/unwind.c), which reports a process's
 * mappings whole: @pid's @i-th mapping by start now, or NULL past the
 * last (valid until the next umaps_feed() or umaps_add()); and
 * umaps_gen(), a number that changes whenever @pid's mappings do, never
 * reused (0: none known).
 */
const struct umap_mapping *umaps_nth(const struct umaps *um, int32_t pid,
				     uint32_t i);
uint64_t umaps_gen(const struct umaps *um, int32_t pid);

/*
 * The mapping the last umaps_feed() added and its process (@pid), or
 * NULL if that item added none; valid until the next umaps_feed().  So a
 * reader that wants user_mmap's fields (lib/symfill.c) parses none.
 */
const struct umap_mapping *umaps_last(const struct umaps *um, int32_t *pid);

#endif /* RINGTRACE_UMAPS_H */
