// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced's use of ringtrace's control files at startup: where they
 * are, and the mode and geometry asked for on the command line.  The
 * tracing_on switch is main.c's (it pairs with the stop).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringtraced.h"

struct ctl ctl;

static void die_control(const char *name, int err)
{
	die("%s/%s: %s%s", ctl.dir, name, strerror(-err),
	    err == -EBUSY ? " (tracing is on or a buffer is open)" :
	    err == -EPERM ? " (refused by kernel lockdown: see /sys/kernel/security/lockdown)" : "");
}

/* Write @value to @name unless it already reads so. */
static void set_control(const char *name, const char *value)
{
	char cur[64];
	int err;

	err = ctl_read(&ctl, name, cur, sizeof(cur));
	if (err < 0)
		die_control(name, err);
	if (!strcmp(cur, value))
		return;
	err = ctl_write(&ctl, name, value);
	if (err)
		die_control(name, err);
	info("%s set to %s (was %s)", name, value, cur);
}

/*
 * A chunk closes before a packet might not fit under --max-size: one that
 * cannot hold a sub-buffer would give every packet a chunk of its own, each
 * over the size asked for.  Checked against the sub-buffer size about to
 * be used, before anything is changed; a default too small for
 * --subbuf-size grows to it.
 */
static void check_max_size(void)
{
	uint64_t sub = opt.subbuf_size, need;
	char cur[32];
	int err;

	if (!sub) {
		err = ctl_read(&ctl, "subbuf_size", cur, sizeof(cur));
		if (err < 0)
			die_control("subbuf_size", err);
		if (!parse_size(cur, &sub))
			die("%s/subbuf_size: '%s' is not a size", ctl.dir, cur);
	}
	need = chunk_stored_size(sub);
	if (opt.max_size >= need)
		return;
	if (!opt.max_size_given) {
		opt.max_size = need;
		return;
	}
	usage_error("--max-size: %llu bytes cannot hold a sub-buffer of %llu bytes (%llu with its frame header): a chunk holds whole packets",
		    (unsigned long long)opt.max_size, (unsigned long long)sub,
		    (unsigned long long)need);
}

void control_find(void)
{
	char why[512];

	if (ctl_find(&ctl, opt.debugfs, why, sizeof(why)))
		die("%s", why);
	if (ctl.dev)
		info("using %s (debugfs is not mounted or refuses: lockdown?)",
		     ctl.dir);
}

void control_setup(void)
{
	char v[32];

	check_max_size();
	if (opt.mode)
		set_control("mode", opt.mode);
	/* Both reallocate the buffers: their order does not matter. */
	if (opt.subbuf_size) {
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)opt.subbuf_size);
		set_control("subbuf_size", v);
	}
	if (opt.num_subbufs) {
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)opt.num_subbufs);
		set_control("num_subbufs", v);
	}
}
