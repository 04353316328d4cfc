// SPDX-License-Identifier: GPL-2.0
/*
 * --filter and --trigger: see filters.h.  The module is the one
 * parser of the expressions: what the filter (trigger) file takes from a
 * shell, --filter (--trigger) takes, and a refusal's reason is the file's
 * "# error: " line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "filters.h"

static void filter_path(const struct filters *fs, const struct filter *f,
			char *path, size_t size)
{
	snprintf(path, size, "events/%s/%s", f->event, fs->file);
}

int filters_add(struct filters *fs, const char *spec, char *why, size_t size)
{
	const char *colon = strchr(spec, ':'), *expr;
	struct filter *f, *more;

	/* Event names may hold ':' (kprobe:...): the one before a blank. */
	while (colon && colon[1] && !isspace((unsigned char)colon[1]))
		colon = strchr(colon + 1, ':');
	if (!colon || colon == spec) {
		snprintf(why, size, "%s: 'EVENT: EXPR', not '%s'", fs->option,
			 spec);
		return -1;
	}
	for (expr = colon + 1; isspace((unsigned char)*expr); expr++)
		;
	if (!*expr) {
		snprintf(why, size, "%s '%s': no expression after the event",
			 fs->option, spec);
		return -1;
	}
	more = realloc(fs->f, (fs->n + 1) * sizeof(*fs->f));
	if (!more)
		die("out of memory");
	fs->f = more;
	f = &fs->f[fs->n];
	f->spec = strdup(spec);
	f->event = strndup(spec, (size_t)(colon - spec));
	if (!f->spec || !f->event)
		die("out of memory");
	f->expr = f->spec + (expr - spec);
	f->saved = NULL;
	fs->n++;
	return 0;
}

/* @f's event has a filter file: -1 and @why if not. */
static int filter_file_exists(const struct filters *fs, const struct filter *f,
			      const struct ctl *c, char *why, size_t size)
{
	char path[256], buf[8];
	int err;

	filter_path(fs, f, path, sizeof(path));
	err = ctl_read(c, path, buf, sizeof(buf));
	if (err < 0) {
		snprintf(why, size, "%s '%s': %s has no %s file (%s/%s: %s)",
			 fs->option, f->spec, f->event, fs->file, c->dir,
			 path, strerror(-err));
		return -1;
	}
	return 0;
}

int filters_check(struct filters *fs, const struct ctl *c,
		  const char *const *names, const bool *on, size_t n,
		  bool probes, char *why, size_t size)
{
	for (size_t i = 0; i < fs->n; i++) {
		struct filter *f = &fs->f[i];
		size_t j;

		for (j = 0; j < n && strcmp(names[j], f->event); j++)
			;
		f->probe = names && j == n && probes;
		if (names && !f->probe && (j == n || !on[j])) {
			snprintf(why, size, "%s '%s': %s is not recorded (add it to -e)",
				 fs->option, f->spec, f->event);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(fs->f[j].event, f->event)) {
				snprintf(why, size, "%s '%s': a second one for %s (join them with && or ||)",
					 fs->option, f->spec, f->event);
				return -1;
			}
		if (!f->probe && filter_file_exists(fs, f, c, why, size))
			return -1;
	}
	return 0;
}

int filters_check_probes(struct filters *fs, const struct ctl *c,
			 const char *const *names, size_t n, char *why,
			 size_t size)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct filter *f = &fs->f[i];
		size_t j;

		if (!f->probe)
			continue;
		for (j = 0; j < n && strcmp(names[j], f->event); j++)
			;
		if (j == n) {
			snprintf(why, size, "%s '%s': %s is not recorded (add it to -e)",
				 fs->option, f->spec, f->event);
			return -1;
		}
		if (filter_file_exists(fs, f, c, why, size))
			return -1;
	}
	return 0;
}

/* The module's reason for refusing @f, from the file's "# error: " line. */
static void filter_reason(const struct filters *fs, const struct filter *f,
			  const struct ctl *c, int err, char *why, size_t size)
{
	char path[256], *text, *e, *nl;

	filter_path(fs, f, path, sizeof(path));
	text = ctl_read_alloc(c, path);
	e = text ? strstr(text, "# error: ") : NULL;
	if (err == -EINVAL && e) {
		e += strlen("# error: ");
		nl = strchr(e, '\n');
		if (nl)
			*nl = '\0';
		snprintf(why, size, "%s '%s': %s", fs->option, f->spec, e);
	} else {
		snprintf(why, size, "%s '%s': %s", fs->option, f->spec,
			 strerror(-err));
	}
	free(text);
}

int filters_save(struct filters *fs, const struct ctl *c, char *why,
		 size_t size)
{
	char path[256], *nl;

	for (size_t i = 0; i < fs->n; i++) {
		struct filter *f = &fs->f[i];

		if (f->saved)
			continue;
		if (f->probe) {
			/*
			 * Made with the probe ("none"), gone with it: put
			 * back while the probe lasts (record --max).
			 */
			f->saved = strdup("none");
			if (!f->saved) {
				snprintf(why, size, "%s '%s': %s", fs->option,
					 f->spec, strerror(errno));
				return -1;
			}
			continue;
		}
		filter_path(fs, f, path, sizeof(path));
		f->saved = ctl_read_alloc(c, path);
		if (!f->saved) {
			snprintf(why, size, "%s/%s: %s", c->dir, path,
				 strerror(errno));
			return -1;
		}
		/* The first line: a refused write's "# error: " line is no state. */
		nl = strchr(f->saved, '\n');
		if (nl)
			*nl = '\0';
	}
	return 0;
}

int filters_apply(struct filters *fs, const struct ctl *c, char *why,
		  size_t size)
{
	char path[256];
	int err;

	if (filters_save(fs, c, why, size))
		goto undo;
	for (size_t i = 0; i < fs->n; i++) {
		struct filter *f = &fs->f[i];

		filter_path(fs, f, path, sizeof(path));
		err = ctl_write(c, path, f->expr);
		if (err) {
			filter_reason(fs, f, c, err, why, size);
			/* Written back too: that clears the reason shown. */
			goto undo;
		}
	}
	return 0;
undo:
	filters_restore(fs, c);
	return -1;
}

void filters_restore(struct filters *fs, const struct ctl *c)
{
	char path[256];
	int err;

	for (size_t i = 0; i < fs->n; i++) {
		struct filter *f = &fs->f[i];

		if (!f->saved)
			continue;
		filter_path(fs, f, path, sizeof(path));
		err = ctl_write(c, path, f->saved);
		/* A probe's is gone with the probe: as good as put back. */
		if (err && !(f->probe && err == -ENOENT))
			warn("could not restore %s/%s to '%s'", c->dir, path,
			     f->saved);
		free(f->saved);
		f->saved = NULL;
	}
}
