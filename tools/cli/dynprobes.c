// SPDX-License-Identifier: GPL-2.0
/*
 * record -e kprobe:FUNC[+OFF], -e kretprobe:FUNC, -e
 * uprobe:PATH:SYMBOL[+OFF] and -e usdt:PATH:PROVIDER:NAME: checked here,
 * made by ringtrace.ko through its probe_events file ("p:FUNC+OFF",
 * "r:FUNC", "u:/ABS/PATH:0xFILEOFF@LABEL", "s:/ABS/PATH:0xFILEOFF@LABEL
 * ref=... a0=..."), each an event of its own (kprobe_FUNC and
 * uprobe_BASE_SYMBOL with arg0..arg5, kretprobe_FUNC with ret,
 * usdt_PROVIDER_NAME with the probe's arguments).  A uprobe's symbol
 * becomes a file offset here (elfsym.c), a USDT probe's note a command
 * (usdt.c), before anything is set up.  The file stays open
 * while recording: the module removes the probes when it closes, on every
 * exit path of record, SIGKILL included.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynprobes.h"
#include "elfsym.h"
#include "usdt.h"

enum kind { KPROBE, KRETPROBE, UPROBE, USDT };

static const struct {
	const char *prefix;	/* in -e */
	char cmd;		/* in probe_events */
	const char *syntax;	/* for errors */
} kinds[] = {
	[KPROBE] = { "kprobe:", 'p', "kprobe:FUNCTION[+OFFSET]" },
	[KRETPROBE] = { "kretprobe:", 'r', "kretprobe:FUNCTION" },
	[UPROBE] = { "uprobe:", 'u', "uprobe:PATH:SYMBOL[+OFFSET]" },
	[USDT] = { "usdt:", 's', "usdt:PATH:PROVIDER:NAME" },
};

static int kind_of(const char *word)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strncmp(word, kinds[k].prefix, strlen(kinds[k].prefix)))
			return (int)k;
	return -1;
}

/*
 * SYMBOL[+OFFSET] at @s: symbols are letters, digits, '_' and '.' (kernel
 * and C or mangled C++ names alike); the offset a number.
 */
static bool valid_symbol(const char *s, bool offset, unsigned long *off)
{
	const char *plus = strchr(s, '+');
	size_t len = plus ? (size_t)(plus - s) : strlen(s);
	char *end;

	*off = 0;
	if (!len || len > 200)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.')
			return false;
	if (!plus)
		return true;
	if (!offset || !isdigit((unsigned char)plus[1]))
		return false;
	errno = 0;
	*off = strtoul(plus + 1, &end, 0);
	return !errno && !*end;
}

/*
 * uprobe:PATH:SYMBOL[+OFF] into "u:/ABS/PATH:0xOFFSET@SYMBOL[_0xOFF]": the
 * ELF file read now, so that a missing file or symbol stops record before
 * it changes anything.  NULL with one sentence in @why.
 */
static char *uprobe_cmd(const char *spec, bool *at_entry, char *why,
			size_t size)
{
	const char *arg = spec + strlen(kinds[UPROBE].prefix);
	const char *colon = strrchr(arg, ':'), *sym;
	char *file = NULL, *abs = NULL, *cmd = NULL, label[256];
	unsigned long add;
	uint64_t offset;

	if (!colon || colon == arg || !valid_symbol(colon + 1, true, &add)) {
		snprintf(why, size, "-e %s: not %s", spec, kinds[UPROBE].syntax);
		return NULL;
	}
	sym = colon + 1;
	file = strndup(arg, (size_t)(colon - arg));
	if (!file)
		goto nomem;
	abs = elfsym_probe_path(spec, file, why, size);
	if (!abs)
		goto out;
	snprintf(label, sizeof(label), "%.*s", (int)strcspn(sym, "+"), sym);
	if (elfsym_offset(abs, label, add, &offset, why, size)) {
		/* elfsym's sentence, after the spec it is about. */
		char *msg = strdup(why);

		if (msg)
			snprintf(why, size, "-e %s: %s", spec, msg);
		free(msg);
		goto out;
	}
	*at_entry = !add;
	if (add)
		snprintf(label + strlen(label), sizeof(label) - strlen(label),
			 "_0x%lx", add);
	if (asprintf(&cmd, "u:%s:0x%" PRIx64 "@%s", abs, offset, label) < 0) {
		cmd = NULL;
		goto nomem;
	}
	goto out;
nomem:
	snprintf(why, size, "out of memory");
out:
	free(file);
	free(abs);
	return cmd;
}

/* The probe_events command of the kernel probe @spec, or NULL (@why). */
static char *kprobe_cmd(const char *spec, int k, char *why, size_t size)
{
	const char *arg = spec + strlen(kinds[k].prefix);
	unsigned long off;
	char *cmd;

	if (!valid_symbol(arg, k == KPROBE, &off)) {
		snprintf(why, size, "-e %s: not %s", spec, kinds[k].syntax);
		return NULL;
	}
	/* As probe_events reads it back: "+0x10", none for "+0". */
	if ((off ? asprintf(&cmd, "%c:%.*s+0x%lx", kinds[k].cmd,
			    (int)strcspn(arg, "+"), arg, off) :
		   asprintf(&cmd, "%c:%.*s", kinds[k].cmd,
			    (int)strcspn(arg, "+"), arg)) < 0) {
		snprintf(why, size, "out of memory");
		return NULL;
	}
	return cmd;
}

char *dynprobes_split(struct dynprobes *dp, const char *events, char *why,
		      size_t size)
{
	char *copy = strdup(events), *rest = calloc(1, strlen(events) + 1);
	char *word, *save = NULL, *cmd;
	bool at_entry = false;
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
		cmd = k == UPROBE ? uprobe_cmd(word, &at_entry, why, size) :
		      k == USDT ? usdt_cmd(word, why, size) :
				  kprobe_cmd(word, k, why, size);
		if (!cmd)
			goto fail;
		dp->specs = realloc(dp->specs, (dp->n + 1) * sizeof(*dp->specs));
		dp->cmds = realloc(dp->cmds, (dp->n + 1) * sizeof(*dp->cmds));
		dp->at_entry = realloc(dp->at_entry, (dp->n + 1) * sizeof(*dp->at_entry));
		dp->opts = realloc(dp->opts, (dp->n + 1) * sizeof(*dp->opts));
		if (!dp->specs || !dp->cmds || !dp->at_entry || !dp->opts ||
		    !(dp->specs[dp->n] = strdup(word))) {
			free(cmd);
			goto nomem;
		}
		dp->at_entry[dp->n] = k == UPROBE && at_entry;
		dp->opts[dp->n] = NULL;
		dp->cmds[dp->n++] = cmd;
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

char *dynprobes_ustack(struct dynprobes *dp, const char *list, char *why,
		       size_t size)
{
	struct dynprobes us = { 0 };
	char *rest = dynprobes_split(&us, list, why, size);
	size_t i, j;

	for (i = 0; rest && i < us.n; i++) {
		for (j = 0; j < dp->n && strcmp(us.cmds[i], dp->cmds[j]); j++)
			;
		if (j == dp->n) {
			snprintf(why, size, "--ustack %s: not a probe of -e (give it there too)",
				 us.specs[i]);
			free(rest);
			rest = NULL;
			break;
		}
		dp->opts[j] = dp->at_entry[j] ? " ustack entry" : " ustack";
	}
	for (i = 0; i < us.n; i++) {
		free(us.specs[i]);
		free(us.cmds[i]);
	}
	free(us.specs);
	free(us.cmds);
	free(us.at_entry);
	free(us.opts);
	return rest;
}

/* One sentence for what the module said to the uprobe @spec. */
static void explain_uprobe(const char *spec, int err, char *why, size_t size)
{
	switch (err) {
	case ENOENT:
		snprintf(why, size, "-e %s: the file went away", spec);
		break;
	case EINVAL:
		snprintf(why, size, "-e %s: the kernel refuses a uprobe there "
			 "(not a regular file, or not an instruction it can probe)%s",
			 spec, kind_of(spec) == USDT ?
			 ", at one of the probe's sites or its semaphore; no site is left" :
			 "");
		break;
	case EOPNOTSUPP:
		snprintf(why, size, "-e %s: this kernel has no uprobes (CONFIG_UPROBES)",
			 spec);
		break;
	default:
		snprintf(why, size, "-e %s: %s", spec, strerror(err));
	}
}

/* One sentence for what the module said to @spec. */
static void explain(const char *spec, int err, char *why, size_t size)
{
	const char *func = strchr(spec, ':') + 1;

	if ((kind_of(spec) == UPROBE || kind_of(spec) == USDT) &&
	    err != EEXIST && err != ENOSPC) {
		explain_uprobe(spec, err, why, size);
		return;
	}
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
		snprintf(why, size, "-e %s: too many probes at once (ringtrace.ko takes 64), "
			 "or 1024 different events declared since ringtrace.ko was loaded",
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

/*
 * Each probe's event name, from probe_events ("<id> <name> <command>" per
 * probe, the command as written -- a USDT probe's has spaces: kprobe_cmd(),
 * uprobe_cmd() and usdt_cmd() write it that way).  -1 if one is missing.
 */
static int event_names(struct dynprobes *dp, const struct ctl *c)
{
	char *text = ctl_read_alloc(c, "probe_events"), *line, *save = NULL;
	char *name, *cmd;
	size_t found = 0;

	dp->events = calloc(dp->n, sizeof(*dp->events));
	if (!text || !dp->events) {
		free(text);
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* A multi-site USDT probe's command is long: no copy, cut in place. */
		name = strchr(line, ' ');
		cmd = name ? strchr(name + 1, ' ') : NULL;
		if (!cmd)
			continue;
		*cmd++ = '\0';
		name++;
		/* Listed as written: the command, then its options. */
		for (size_t i = 0; i < dp->n; i++) {
			size_t n = strlen(dp->cmds[i]);

			if (!dp->events[i] && !strncmp(cmd, dp->cmds[i], n) &&
			    !strcmp(cmd + n, dp->opts[i] ? dp->opts[i] : "")) {
				dp->events[i] = strdup(name);
				found += dp->events[i] != NULL;
			}
		}
	}
	free(text);
	return found == dp->n ? 0 : -1;
}

int dynprobes_add(struct dynprobes *dp, const struct ctl *c, char *why,
		  size_t size)
{
	char path[PATH_MAX + 32];

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
		char *line;
		int len = asprintf(&line, "%s%s", dp->cmds[i],
				   dp->opts[i] ? dp->opts[i] : "");

		if (len < 0) {
			snprintf(why, size, "out of memory");
			dynprobes_remove(dp);
			return -1;
		}
		/* One write, one command: the module takes it whole or not. */
		if (write(dp->fd, line, (size_t)len) != len) {
			explain(dp->specs[i], errno, why, size);
			free(line);
			dynprobes_remove(dp);
			return -1;
		}
		free(line);
	}
	if (event_names(dp, c)) {
		snprintf(why, size, "%s: our probes' events are not listed in it",
			 path);
		dynprobes_remove(dp);
		return -1;
	}
	return 0;
}

void dynprobes_remove(struct dynprobes *dp)
{
	if (dp->fd >= 0)
		close(dp->fd);
	dp->fd = -1;
}
