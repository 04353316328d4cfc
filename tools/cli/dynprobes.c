// SPDX-License-Identifier: GPL-2.0
/*
 * record -e kprobe:FUNC[+OFF] and -e kretprobe:FUNC: checked here, made by
 * ringtrace.ko through its probe_events file ("p:FUNC+OFF", "r:FUNC"),
 * each an event of its own (kprobe_FUNC with arg0..arg5, kretprobe_FUNC
 * with ret).  The file stays open while recording: the module removes the
 * probes when it closes, on every exit path of record, SIGKILL included.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynprobes.h"

static const struct {
	const char *prefix;	/* in -e */
	char cmd;		/* in probe_events */
	bool offset;		/* +OFF allowed */
} kinds[] = {
	{ "kprobe:", 'p', true },
	{ "kretprobe:", 'r', false },
};

static int kind_of(const char *word)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strncmp(word, kinds[k].prefix, strlen(kinds[k].prefix)))
			return (int)k;
	return -1;
}

/* Kernel symbols: letters, digits, '_' and '.'; an offset: a number. */
static bool valid(const char *word, int k)
{
	const char *s = word + strlen(kinds[k].prefix), *plus = strchr(s, '+');
	size_t len = plus ? (size_t)(plus - s) : strlen(s);
	char *end;

	if (!len || len > 200)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.')
			return false;
	if (!plus)
		return true;
	if (!kinds[k].offset || !isdigit((unsigned char)plus[1]))
		return false;
	errno = 0;
	strtoul(plus + 1, &end, 0);
	return !errno && !*end;
}

char *dynprobes_split(struct dynprobes *dp, const char *events, char *why,
		      size_t size)
{
	char *copy = strdup(events), *rest = calloc(1, strlen(events) + 1);
	char *word, *save = NULL;
	int k;

	dp->fd = -1;
	if (!copy || !rest)
		goto nomem;
	for (word = strtok_r(copy, ", \t", &save); word;
	     word = strtok_r(NULL, ", \t", &save)) {
		k = kind_of(word);
		if (k < 0) {
			if (*rest)
				strcat(rest, ",");
			strcat(rest, word);
			continue;
		}
		if (!valid(word, k)) {
			snprintf(why, size, "-e %s: not %sFUNCTION%s", word,
				 kinds[k].prefix, kinds[k].offset ? "[+OFFSET]" : "");
			goto fail;
		}
		dp->specs = realloc(dp->specs, (dp->n + 1) * sizeof(*dp->specs));
		if (!dp->specs || !(dp->specs[dp->n] = strdup(word)))
			goto nomem;
		dp->n++;
	}
	free(copy);
	return rest;
nomem:
	snprintf(why, size, "out of memory");
fail:
	free(copy);
	free(rest);
	return NULL;
}

/* One sentence for what the module said to @spec. */
static void explain(const char *spec, int err, char *why, size_t size)
{
	const char *func = strchr(spec, ':') + 1;

	switch (err) {
	case ENOENT:
		snprintf(why, size, "-e %s: no function %.*s in this kernel's symbols "
			 "(misspelt, or inlined into its callers)", spec,
			 (int)strcspn(func, "+"), func);
		break;
	case EINVAL:
		snprintf(why, size, "-e %s: the kernel refuses to probe %.*s "
			 "(on the kprobe blacklist, noinstr, or not a function)",
			 spec, (int)strcspn(func, "+"), func);
		break;
	case EILSEQ:
		snprintf(why, size, "-e %s: the offset is not at an instruction boundary",
			 spec);
		break;
	case EEXIST:
		snprintf(why, size, "-e %s: probed twice (or by another recording)", spec);
		break;
	case ENOSPC:
		snprintf(why, size, "-e %s: too many probes at once (ringtrace.ko takes 64)",
			 spec);
		break;
	case EOPNOTSUPP:
		snprintf(why, size, "-e %s: this kernel has no kprobes (CONFIG_KPROBES, "
			 "CONFIG_KRETPROBES)", spec);
		break;
	default:
		snprintf(why, size, "-e %s: %s", spec, strerror(err));
	}
}

int dynprobes_add(struct dynprobes *dp, const struct ctl *c, char *why,
		  size_t size)
{
	char path[PATH_MAX + 32], cmd[256];

	if (!dp->n)
		return 0;
	snprintf(path, sizeof(path), "%s/probe_events", c->dir);
	/* Close-on-exec: the probes must go with record, not with a child. */
	dp->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dp->fd < 0) {
		snprintf(why, size, "%s: %s%s", path, strerror(errno),
			 errno == ENOENT ? " (a ringtrace.ko without dynamic probes: "
			 "unload it, record loads the one built)" : "");
		return -1;
	}
	for (size_t i = 0; i < dp->n; i++) {
		int k = kind_of(dp->specs[i]);
		int len = snprintf(cmd, sizeof(cmd), "%c:%s", kinds[k].cmd,
				   dp->specs[i] + strlen(kinds[k].prefix));

		/* One write, one command: the module takes it whole or not. */
		if (write(dp->fd, cmd, (size_t)len) != len) {
			explain(dp->specs[i], errno, why, size);
			dynprobes_remove(dp);
			return -1;
		}
	}
	return 0;
}

void dynprobes_remove(struct dynprobes *dp)
{
	if (dp->fd >= 0)
		close(dp->fd);
	dp->fd = -1;
}
