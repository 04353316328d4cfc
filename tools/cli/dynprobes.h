/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record's dynamic probes: the kprobe:FUNC[+OFF], kretprobe:FUNC and
 * uprobe:PATH:SYMBOL[+OFF] elements of -e, made through ringtrace.ko's
 * probe_events file
 * (module/dynprobes.c).  The probes belong to the open file: closing it
 * removes them, and so does the kernel when record dies, however.
 */
#ifndef RINGTRACE_CLI_DYNPROBES_H
#define RINGTRACE_CLI_DYNPROBES_H

#include <stdbool.h>
#include <stddef.h>

#include "../../lib/ctl.h"

struct dynprobes {
	char **specs;		/* as given: "kprobe:do_sys_openat2" */
	char **cmds;		/* for probe_events: "p:do_sys_openat2" */
	char **events;		/* once made: "kprobe_do_sys_openat2" */
	bool *at_entry;		/* a uprobe at its symbol's first instruction */
	const char **opts;	/* NULL, or " ustack" (" ustack entry"): --ustack */
	size_t n;
	int fd;			/* probe_events, open while they exist; -1 */
};

/*
 * Moves the probe elements of the -e list @events into @dp and returns the
 * rest (malloc'd, maybe empty); NULL with one sentence in @why for a
 * malformed probe, or a uprobe whose file or symbol is not there.
 */
char *dynprobes_split(struct dynprobes *dp, const char *events, char *why,
		      size_t size);
/*
 * --ustack's probe elements (@list, the syntax of -e): each must be a
 * probe of @dp, which is then made with " ustack" (" ustack entry" for a
 * uprobe at a symbol's first instruction, whose caller the module reads
 * at [sp]).  Returns the rest of @list (malloc'd, maybe empty), or NULL
 * with one sentence in @why.
 */
char *dynprobes_ustack(struct dynprobes *dp, const char *list, char *why,
		       size_t size);
/*
 * Makes every probe, all or none, and learns their events' names
 * (@dp->events): -1 with one sentence in @why, nothing left registered.
 */
int dynprobes_add(struct dynprobes *dp, const struct ctl *c, char *why,
		  size_t size);
/* Removes them (closes the file); idempotent. */
void dynprobes_remove(struct dynprobes *dp);

#endif /* RINGTRACE_CLI_DYNPROBES_H */
