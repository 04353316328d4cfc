/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace.ko's user_mmap event (mmap.c), and what the state dump
 * (statedump.c) uses of it; not an API.  Documentation/ringtrace/events.rst
 * says what a user sees.
 */
#ifndef _RINGTRACE_MMAP_H
#define _RINGTRACE_MMAP_H

#include <linux/ringtrace.h>
#include <linux/types.h>

struct file;
struct vm_area_struct;

/* flags */
#define RTR_MMAP_DUMP		0x1	/* from the state dump */
#define RTR_MMAP_NO_BUILD_ID	0x2	/* none found (or none read) */
#define RTR_MMAP_PATH_CUT	0x4	/* path cut at RTR_MMAP_PATH_MAX */
#define RTR_MMAP_NO_PATH	0x8	/* path not resolved: dev and ino only */

/* Longer paths are cut: an event must fit in the smallest sub-buffer. */
#define RTR_MMAP_PATH_MAX	1024

/*
 * The payload's fixed part; build_id[build_id_len], path_len and
 * path[path_len] follow (RTR_USER_MMAP_FIELDS).
 */
struct rtr_user_mmap {
	s32 pid;
	u32 flags;
	u64 start;
	u64 end;
	u64 pgoff;			/* bytes, as /proc/PID/maps prints it */
	u64 dev;			/* new_encode_dev(s_dev), as stat(2) */
	u64 ino;
	u8 build_id_len;
} __packed;
static_assert(sizeof(struct rtr_user_mmap) == 49);

extern struct ringtrace_event rtr_mmap_event;

/* What the dump writes one event of (file-backed VM_EXEC, or [vdso]). */
bool rtr_mmap_wanted(struct vm_area_struct *vma);
void rtr_mmap_head(struct rtr_user_mmap *h, pid_t pid,
		   const struct vm_area_struct *vma, u32 flags);

/* Scratch for rtr_mmap_emit(): the path, the ELF reads, the event. */
struct rtr_mmap_scratch;
struct rtr_mmap_scratch *rtr_mmap_scratch_alloc(void);
void rtr_mmap_scratch_free(struct rtr_mmap_scratch *s);
/* Sleepable: @h's event, with @file's path and build-id ([vdso]: NULL). */
void rtr_mmap_emit(struct rtr_mmap_scratch *s, struct rtr_user_mmap *h,
		   struct file *file);

/* mmap_dump: the state dump writes mappings. */
bool rtr_mmap_dump_on(void);

int rtr_mmap_files_init(void);
void rtr_mmap_exit(void);

/* statedump.c: the mappings of the kept processes; process context. */
void rtr_statedump_mmaps(void);

#endif /* _RINGTRACE_MMAP_H */
