/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace export: one file per format behind this interface.
 *
 * export.c opens the trace and feeds every item of every CPU, merged in
 * time order, to the format: begin() once, item() for each event and each
 * loss (RT_ITEM_LOST), end() once.  It tells each item's thread first
 * (rt_threads, asked before the item is fed to it): @tid is -1 when the
 * CPU has not said yet who runs there, or since a loss there.  A format keeps memory flat: what
 * it holds grows with threads, CPUs or a bounded buffer, never with the
 * trace.  Errors are returned (-1 with the reason in the error_line()
 * printed), not exits: the command frees everything and says so.
 */
#ifndef RINGTRACE_EXPORT_H
#define RINGTRACE_EXPORT_H

#include <string.h>

#include "cli.h"

/* The -f names, for messages and --help; export.c's table holds them. */
#define EXPORT_FORMATS	"systrace, chrome-json, lttng, perfetto"

struct export_ctx {
	const char *out;		/* -o, or NULL: stdout */
	FILE *f;			/* the open -o file (file formats) */
	const struct rt_trace *t;
	const struct rt_metadata *md;
	const struct rt_threads *th;
	/*
	 * A window from --begin: what the trace said before it (processes,
	 * threads) is in @th, not in the items (the format says it first).
	 */
	bool windowed;
	/* syscall_entry's id field: its enum names the system calls. */
	const struct rt_field_desc *syscall_id;
	/* --binaries DIR (user stack copies' binaries), or NULL. */
	const char *binaries;
	/* Events left out because their thread is unknown: counted by item(). */
	uint64_t unknown;
	void *priv;			/* the format's own state */
	/*
	 * Interned stacks (stackrec.h) for a format without user_stacks,
	 * fed every item: a stack_ref with a kernel stack reaches it as a
	 * kernel_stack would, its frames from export_stack_ips(); stack_defs
	 * never do.  A format with user_stacks joins them itself, given
	 * every trailer (export.c's feed()).
	 */
	struct stackrec *sr;
	struct rt_field_desc ref_desc;
	struct rt_field_value ref_ips;
	uint8_t *ref_bytes;
	size_t ref_cap;
};

/*
 * The kernel stack @it carries: a kernel_stack's ips, or a stack_ref's
 * kernel stack (as a field value valid until the next item); else NULL.
 */
const struct rt_field_value *export_stack_ips(struct export_ctx *x,
					      const struct rt_item *it);

struct export_format {
	const char *name;
	const char *help;		/* its paragraph of `export --help` */
	/* Writes a directory at -o, not a file (nor standard output). */
	bool directory;
	/*
	 * Takes the user stacks too: every stack_def and stack_ref (a
	 * def even out of the window), user_stack and user_stack_copy item
	 * (tools/lib/stackrec.h joins them to their event), which the
	 * others are not given.
	 */
	bool user_stacks;
	int (*begin)(struct export_ctx *x);
	int (*item)(struct export_ctx *x, const struct rt_item *it, int32_t tid);
	/* Called after a failed begin() or item() too: frees what it holds. */
	int (*end)(struct export_ctx *x, bool ok);
};

extern const struct export_format export_systrace, export_chrome_json;
extern const struct export_format export_lttng, export_perfetto;

/* ---- what the formats share (export.c) ------------------------------------------- */

/* An integer field's value; 0 when the event has no such integer field. */
int64_t ex_int(const struct rt_item *it, const char *name);
/* A text field as a C string (up to its first NUL, cut to @size - 1). */
const char *ex_text(const struct rt_item *it, const char *name, char *buf,
		    size_t size);
/*
 * Nanoseconds of @cycles of the trace's clock, in integers: with a slow
 * clock they pass 2^64 (a double's cast would overflow); seconds
 * (ns / 10^9) always fit 64 bits.
 */
typedef unsigned __int128 ex_ns_t;
ex_ns_t ex_ns(const struct rt_metadata *md, uint64_t cycles);
/* The kernel's name of softirq @vec (show_softirq_name()), or NULL. */
const char *ex_softirq_name(int64_t vec);
/* The system call's name from the id field's enum, or NULL. */
const char *ex_syscall_name(const struct export_ctx *x, int64_t id);
/*
 * The threads @th knows (tid > 0), by tid: an array to free, *@n long;
 * NULL out of memory (said).  What a window's export says first.
 */
int32_t *ex_known_threads(const struct rt_threads *th, size_t *n);
/* True if the event @it is named @name. */
static inline bool ex_is(const struct rt_item *it, const char *name)
{
	return !strcmp(it->event->name, name);
}

#endif /* RINGTRACE_EXPORT_H */
