// SPDX-License-Identifier: GPL-2.0
/*
 * A child that runs on without exec()ing another program -- record's
 * witness and guard -- names itself (cli.h: proc_title()).
 *
 * Such a child shows its parent's command line in /proc/PID/cmdline, so
 * `pkill -f 'ringtrace record'`, `kill $(pgrep -f ...)` and
 * `kill $(pidof ringtrace)` would signal it too, from the one sender that
 * signals record: the witness would then report the signal as one the
 * whole group got, and record would never pass it on.  The kernel shows
 * the argument area of the process, [arg_start, arg_end) of its memory
 * (/proc/self/stat's fields 48 and 49); the child zeroes it and writes its
 * name there, and into its comm (PR_SET_NAME), which pidof and ps read.
 * The area stays NUL-terminated, so the kernel reads no further (into the
 * environment, as it does for a title longer than the area).  The child
 * must not read its argv's strings after that: they are gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli.h"

/* The argument area from /proc/self/stat: true when found. */
static bool arg_area(char **start, size_t *len)
{
	unsigned long long from = 0, to = 0;
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	int field;

	if (f)
		fclose(f);
	buf[n] = '\0';
	/* The comm, field 2, may hold spaces and parentheses: after its ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return false;
	for (field = 2; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu", &from, &to) != 2 || !from ||
	    to <= from)
		return false;
	*start = (char *)(uintptr_t)from;
	*len = (size_t)(to - from);
	return true;
}

void proc_title(const char *name)
{
	size_t len;
	char *area;

	prctl(PR_SET_NAME, name);
	if (!arg_area(&area, &len))
		return;
	memset(area, 0, len);
	memcpy(area, name, strnlen(name, len - 1));
}
