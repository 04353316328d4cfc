// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz, thread events: set_event_cgroup (module/cgroupfilter.c)
 * replaced while the probes run it -- on every CPU with --toggle -- by
 * the root cgroup (id 1, or "/": every task passes, data keeps coming),
 * by nothing, and by words that name no cgroup.  Judged by reading the
 * file back: a write that worked shows the ids, a refused one (EINVAL for
 * a malformed word, ENOENT for no such cgroup) the set before.  Only this
 * thread writes the file, so its before is its own.  A kernel without
 * CONFIG_CGROUPS (no /proc/self/cgroup) refuses every cgroup with
 * EOPNOTSUPP.
 */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *text;
	const char *reads;	/* the file after it, or NULL: refused */
	int err;		/* the write's result with cgroups */
	int nocg_err;		/* and without: the first word decides */
} fz_cgroups[] = {
	{ "", "", 0, 0 },
	{ "\n", "", 0, 0 },
	{ "1", "1", 0, -EOPNOTSUPP },
	{ "/", "1", 0, -EOPNOTSUPP },
	{ "1 / 1\n", "1", 0, -EOPNOTSUPP },
	{ "\t1\t", "1", 0, -EOPNOTSUPP },
	{ "abc", NULL, -EINVAL, -EINVAL },
	{ "-1", NULL, -EINVAL, -EINVAL },
	{ "1 x", NULL, -EINVAL, -EOPNOTSUPP },
	{ "0x1", NULL, -EINVAL, -EINVAL },
	{ "18446744073709551616", NULL, -EINVAL, -EINVAL },
	{ "0", NULL, -ENOENT, -EOPNOTSUPP },
	{ "4294967296000", NULL, -ENOENT, -EOPNOTSUPP },
	{ "/rt_fuzz_no_such_cgroup", NULL, -ENOENT, -EOPNOTSUPP },
	{ "1 /rt_fuzz_no_such_cgroup", NULL, -ENOENT, -EOPNOTSUPP },
};

static void fz_cgroup_one(struct fz_thread *t, bool cgroups)
{
	struct fz_rng *r = &t->rng;
	char before[256], after[256], *nl;
	bool dev = fz_chance(r, 30);
	unsigned int i = fz_below(r, sizeof(fz_cgroups) / sizeof(fz_cgroups[0]));
	const char *text = fz_cgroups[i].text;
	const char *want = fz_cgroups[i].reads;
	int err = cgroups ? fz_cgroups[i].err : fz_cgroups[i].nocg_err;
	long ret;

	ret = fz_read(dev, "set_event_cgroup", before, sizeof(before));
	/* A module without the file: nothing to fuzz. */
	if (ret == -ENOENT)
		return;
	if (!FZ_CHECK(t, ret >= 0, "read set_event_cgroup: %s", fz_err(ret)))
		return;
	if (err)
		want = NULL;
	ret = fz_write(dev, "set_event_cgroup", text, strlen(text), 0);
	fz_desc(t, "set_event_cgroup <- '%s' -> %s", text, fz_err(ret));
	ret = ret < 0 ? ret : 0;
	if (ret)
		fz_refused(t);
	FZ_EXPECT(t, "a set_event_cgroup write", ret, err);
	if (!FZ_CHECK(t, fz_read(dev, "set_event_cgroup", after,
				 sizeof(after)) >= 0,
		      "read set_event_cgroup again"))
		return;
	nl = strchr(after, '\n');
	if (nl)
		*nl = '\0';
	if (!want) {
		nl = strchr(before, '\n');
		if (nl)
			*nl = '\0';
		FZ_CHECK(t, !strcmp(before, after),
			 "refused '%s': set_event_cgroup went from '%s' to '%s'",
			 text, before, after);
		return;
	}
	if (!ret)
		FZ_CHECK(t, !strcmp(want, after),
			 "'%s' taken, but set_event_cgroup reads '%s', not '%s'",
			 text, after, want);
}

/* A few replacements in a row; the filter is left empty or the root. */
void fz_cgroup_op(struct fz_thread *t)
{
	bool cgroups = !access("/proc/self/cgroup", F_OK);
	unsigned int i, n = fz_range(&t->rng, 1, 6);

	fz_op(t, FZ_OP_CGROUP_FILTER);
	for (i = 0; i < n; i++)
		fz_cgroup_one(t, cgroups);
}
