// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: event lists as people write them (-e of record and report):
 * names, globs, groups, "all", comma separated.  An unknown name is an
 * error that proposes the closest known names.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *group;
	const char *glob;
} groups[] = {
	{ "sched", "sched_*" },
	{ "task", "task_*" },
	{ "irq", "irq_handler_*" },
	{ "softirq", "irq_softirq_*" },
	{ "syscalls", "syscall_*" },
	{ "statedump", "ringtrace_statedump_*" },
	{ "marker", "ringtrace_marker" },
	{ "all", "*" },
};

/* Levenshtein distance, capped: good enough to suggest a spelling. */
static unsigned int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned int row[64], prev, tmp;

	if (la >= 64 || lb >= 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

/* "unknown event 'x' (closest: a, b, c)" into @why. */
static void unknown(const char *word, const char *const *names, size_t n,
		    char *why, size_t size)
{
	char hint[256] = "";
	size_t used = 0;
	unsigned int best = 99;

	for (size_t i = 0; i < n; i++) {
		unsigned int d = distance(word, names[i]);

		if (strstr(names[i], word))
			d = d < 2 ? d : 2;
		if (d < best)
			best = d;
	}
	for (size_t i = 0; i < n && best <= 4; i++) {
		unsigned int d = distance(word, names[i]);

		if (strstr(names[i], word))
			d = d < 2 ? d : 2;
		if (d == best && used < sizeof(hint) - 64)
			used += (size_t)snprintf(hint + used, sizeof(hint) - used,
						 "%s%s", used ? ", " : "", names[i]);
	}
	if (used)
		snprintf(why, size, "unknown event '%s' (closest: %s; groups: %s)",
			 word, hint, EVENT_GROUPS);
	else
		snprintf(why, size, "unknown event '%s' (groups: %s; 'ringtrace list' names them all)",
			 word, EVENT_GROUPS);
}

int select_events(const char *spec, const char *const *names, size_t n,
		  bool *sel, char *why, size_t size)
{
	char *copy = strdup(spec), *word, *save = NULL;

	if (!copy)
		die("out of memory");
	for (word = strtok_r(copy, ", \t", &save); word;
	     word = strtok_r(NULL, ", \t", &save)) {
		const char *glob = word;
		bool hit = false;

		for (int g = 0; g < ARRAY_SIZE(groups); g++)
			if (!strcmp(word, groups[g].group))
				glob = groups[g].glob;
		for (size_t i = 0; i < n; i++) {
			if (!fnmatch(glob, names[i], 0)) {
				sel[i] = true;
				hit = true;
			}
		}
		if (!hit) {
			unknown(word, names, n, why, size);
			free(copy);
			return -1;
		}
	}
	free(copy);
	return 0;
}

bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p; ) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len == n && !strncmp(p, line, n))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}
