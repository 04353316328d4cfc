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

void control_setup(void)
{
	char why[512], v[32];

	if (ctl_find(&ctl, opt.debugfs, why, sizeof(why)))
		die("%s", why);
	if (ctl.dev)
		info("using %s (debugfs is not mounted or refuses: lockdown?)",
		     ctl.dir);
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
