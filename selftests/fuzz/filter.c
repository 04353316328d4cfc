// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz, thread events: the field predicates of events/<name>/filter
 * (module/filter.c) and the triggers' conditions of events/<name>/trigger
 * (module/trigger.c, the same grammar) replaced while the probes run them
 * -- on every CPU with --toggle, where the events are switched on; the
 * marker's while the writer threads write markers -- by
 * known good and bad expressions and by token soup; the triggers' hits
 * rearmed and reset meanwhile.  Judged by reading the file back: a write
 * that worked shows its expression, a refused one (EINVAL only) the
 * predicate before and a "# error: " line.  Only this thread writes
 * predicates and triggers, and it holds the module: the file's before is
 * its own.
 */
#include "fuzz.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *event, *expr;
	bool good;
} fz_filters[] = {
	{ "syscall_entry", "id == getppid", true },
	{ "syscall_entry", "id != write && comm == 'rt_fuzz*'", true },
	{ "syscall_entry", "!(id >= 0 && id < 1000) || nr_args & 1", true },
	{ "syscall_exit", "ret < 0 || id == read", true },
	{ "sched_switch", "prev_state & 1 && next_comm != \"swap*\"", true },
	{ "sched_switch", "prev_tid > 1 || next_prio <= 100", true },
	{ "irq_handler_entry", "name == '*virt*' || irq != 0", true },
	{ "irq_softirq_entry", "vec == 1 || comm == rt_fuzz", true },
	{ "sched_waking", "comm != rt_fuzz && target_cpu >= 0", true },
	{ "syscall_entry", "id == openat && args[2] & 0x40", true },
	{ "syscall_entry", "args[0] == -1 || args[5] > 0x1000 && nr_args == 6", true },
	{ "syscall_exit", "ret == -9 || ret <= -4095", true },
	/* The fuzzer's markers: "FZ<writer>:..."; gaps in a sequence are fine. */
	{ "ringtrace_marker", "data == 'FZ1*' || data == \"fz*\"", true },
	{ "ringtrace_marker", "data != \"FZ?:*[02468]:*\" && comm == 'rt_fuzz*'", true },
	{ "ringtrace_marker", "none", true },
	{ "syscall_entry", "0", true },
	{ "sched_switch", "none", true },
	{ "syscall_entry", "idd == 1", false },
	{ "syscall_entry", "id == nosuchcall", false },
	{ "syscall_entry", "comm < 3", false },
	{ "sched_switch", "(prev_state == 1", false },
	{ "sched_switch", "prev_state == 1 &&", false },
	{ "irq_handler_entry", "name == 'unterminated", false },
	{ "syscall_exit", "ret === 1", false },
	{ "syscall_entry", "args[6] == 1", false },
	{ "syscall_entry", "args[0 == 1", false },
	{ "syscall_exit", "args[0] == 1", false },
	{ "ringtrace_marker", "data > 1", false },
	{ "ringtrace_marker", "id == 1", false },
};

static const char *const fz_filter_tokens[] = {
	"id", "comm", "nr_args", "ret", "==", "!=", "<", "<=", ">", ">=",
	"&", "&&", "||", "!", "(", ")", "0", "-1", "0x7fffffffffffffff",
	"99999999999999999999999", "getppid", "openat", "\"rt*\"", "'x",
	"[a-", "*", "?", "prev_state", "=", "|", "\t", "args[0]", "args[5]",
	"args[", "]", "[", "args[99999999999]", "-9", "data", "'FZ*'",
};

/* The first line of @event's filter (trigger) file @file, or -errno. */
static long fz_filter_read(bool dev, const char *event, const char *file,
			   char *buf, size_t size, bool *err_line)
{
	char rel[96], *nl;
	long ret;

	snprintf(rel, sizeof(rel), "events/%s/%s", event, file);
	ret = fz_read(dev, rel, buf, size);
	if (ret < 0)
		return ret;
	*err_line = strstr(buf, "\n# error: ");
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

/* @s without its leading and trailing blanks, as the module keeps it. */
static void fz_filter_trim(const char *s, char *out, size_t size)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= size)
		n = size - 1;
	/* The kernel reads a filter back as one line: each blank a space. */
	for (size_t i = 0; i < n; i++)
		out[i] = isspace((unsigned char)s[i]) ? ' ' : s[i];
	out[n] = '\0';
}

static void fz_filter_one(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	char expr[512], before[1024], after[1024], want[512], rel[96];
	const char *event, *file = fz_chance(r, 50) ? "trigger" : "filter";
	bool dev = fz_chance(r, 30), known, good = false, err_line;
	unsigned int i, n;
	size_t len = 0;
	long ret;

	known = fz_chance(r, 60);
	if (known) {
		i = fz_below(r, sizeof(fz_filters) / sizeof(fz_filters[0]));
		event = fz_filters[i].event;
		good = fz_filters[i].good;
		snprintf(expr, sizeof(expr), "%s%s", fz_filters[i].expr,
			 fz_chance(r, 50) ? "\n" : "");
	} else {
		event = fz_chance(r, 20) ? "ringtrace_marker" :
			fz_chance(r, 50) ? "syscall_exit" : "syscall_entry";
		n = fz_range(r, 1, 14);
		for (i = 0; i < n; i++)
			len += snprintf(expr + len, sizeof(expr) - len, "%s%s",
					i ? " " : "", fz_pick(r, fz_filter_tokens));
	}
	ret = fz_filter_read(dev, event, file, before, sizeof(before),
			     &err_line);
	/* A kernel or module without this event's filter: nothing to fuzz. */
	if (ret == -ENOENT)
		return;
	if (!FZ_CHECK(t, !ret, "read events/%s/%s: %s", event, file,
		      fz_err(ret)))
		return;
	snprintf(rel, sizeof(rel), "events/%s/%s", event, file);
	ret = fz_write(dev, rel, expr, strlen(expr), 0);
	fz_desc(t, "%s <- '%s' -> %s", rel, expr, fz_err(ret));
	if (ret < 0)
		fz_refused(t);
	if (known)
		FZ_EXPECT(t, good ? "a good predicate" : "a bad predicate",
			  ret < 0 ? ret : 0, good ? 0 : -EINVAL);
	else
		FZ_EXPECT(t, "a token soup predicate", ret < 0 ? ret : 0, 0,
			  -EINVAL);
	ret = ret < 0 ? ret : 0;
	if (!FZ_CHECK(t, !fz_filter_read(dev, event, file, after,
					 sizeof(after), &err_line),
		      "read events/%s/%s again", event, file))
		return;
	if (ret == -EINVAL) {
		FZ_CHECK(t, !strcmp(before, after) && err_line,
			 "refused '%s': the filter went from '%s' to '%s'%s",
			 expr, before, after, err_line ? "" : ", no error line");
		return;
	}
	if (ret)
		return;
	fz_filter_trim(expr, want, sizeof(want));
	if (!strcmp(want, "0") || !*want)
		strcpy(want, "none");
	FZ_CHECK(t, !strcmp(want, after) && !err_line,
		 "'%s' taken, but the file reads '%s'%s", expr, after,
		 err_line ? " and an error line" : "");
}

/*
 * The triggers' latch, let go while the probes hit it: "rearm" takes a
 * latched hit (-ENOENT when none is), "reset" always works.
 */
static void fz_trigger_release(struct fz_thread *t)
{
	bool dev = fz_chance(&t->rng, 30), rearm = fz_chance(&t->rng, 80);
	const char *word = rearm ? "rearm" : "reset";
	long ret;

	ret = fz_write(dev, "triggered", word, strlen(word), 0);
	fz_desc(t, "triggered <- %s -> %s", word, fz_err(ret));
	if (rearm)
		FZ_EXPECT(t, "a rearm", ret < 0 ? ret : 0, 0, -ENOENT);
	else
		FZ_EXPECT(t, "a reset", ret < 0 ? ret : 0, 0);
}

/* A few replacements in a row: the probes see one program after another. */
void fz_filter_op(struct fz_thread *t)
{
	unsigned int i, n = fz_range(&t->rng, 1, 8);

	fz_op(t, FZ_OP_FILTER);
	for (i = 0; i < n; i++) {
		fz_filter_one(t);
		if (fz_chance(&t->rng, 30))
			fz_trigger_release(t);
	}
}
