// SPDX-License-Identifier: GPL-2.0
/*
 * Triggers, the consumer's side (record --trigger, ringtraced --trigger):
 * see trigger.h.  The kernel decides, at the event; the consumer only
 * waits for its word, waits --after, and saves with this.
 *
 * The triggered file reads
 *
 *   state hit | state armed
 *   event NAME        \
 *   trigger EXPR       | with "state hit"
 *   cpu N              |
 *   timestamp NS      /
 *   hits N
 *   missed N
 *
 * and takes "mark" (the kernel writes the marker "ringtrace trigger: ..."
 * that ends the snapshot), "rearm" and "reset".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trigger.h"

int trigger_watch(const struct ctl *c)
{
	char path[sizeof(c->dir) + sizeof("/triggered")];

	snprintf(path, sizeof(path), "%s/triggered", c->dir);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int trigger_reset(const struct ctl *c)
{
	return ctl_write(c, "triggered", "reset");
}

int trigger_read(const struct ctl *c, struct trigger_hit *h)
{
	char *text = ctl_read_alloc(c, "triggered"), *line, *save = NULL;

	if (!text)
		return -errno;
	memset(h, 0, sizeof(*h));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ' ');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(line, "state"))
			h->hit = !strcmp(v, "hit");
		else if (!strcmp(line, "event"))
			snprintf(h->event, sizeof(h->event), "%s", v);
		else if (!strcmp(line, "trigger"))
			snprintf(h->trigger, sizeof(h->trigger), "%s", v);
		else if (!strcmp(line, "cpu"))
			h->cpu = (unsigned int)strtoul(v, NULL, 10);
		else if (!strcmp(line, "timestamp"))
			h->ts = strtoull(v, NULL, 10);
		else if (!strcmp(line, "hits"))
			h->hits = strtoull(v, NULL, 10);
		else if (!strcmp(line, "missed"))
			h->missed = strtoull(v, NULL, 10);
	}
	free(text);
	return 0;
}

/*
 * PARENT/YYYYmmdd-HHMMSS.mmm-EVENT, the hit's wall-clock time: the trace
 * clock is CLOCK_MONOTONIC, shifted by the realtime clock's offset now.
 */
static void snapshot_name(const struct trigger_hit *h, const char *parent,
			  char *dir, size_t size)
{
	struct timespec mono, real;
	char stamp[32];
	int64_t ns;
	time_t sec;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec -
	     ((int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - (int64_t)h->ts);
	sec = (time_t)(ns / 1000000000);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&sec));
	snprintf(dir, size, "%s/%s.%03d-%s", parent, stamp,
		 (int)(ns % 1000000000 / 1000000), h->event);
}

int trigger_save(const struct ctl *c, const struct trigger_hit *h,
		 const char *parent, trigger_write_fn write, void *arg,
		 char *dir, size_t dir_size, char *why, size_t why_size)
{
	int err;

	snapshot_name(h, parent, dir, dir_size);
	err = ctl_write(c, "triggered", "mark");
	if (err) {
		snprintf(why, why_size, "%s/triggered: mark: %s", c->dir,
			 strerror(-err));
		return -1;
	}
	if (write(dir, arg)) {
		snprintf(why, why_size, "ringtraced failed (see above): no snapshot in %s",
			 dir);
		return -1;
	}
	err = ctl_write(c, "triggered", "rearm");
	if (err) {
		snprintf(why, why_size, "%s/triggered: rearm: %s", c->dir,
			 strerror(-err));
		return -1;
	}
	return 0;
}
