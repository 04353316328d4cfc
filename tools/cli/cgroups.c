// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup v2 paths and ids (cgroups.h): a directory of the cgroup2 file
 * system and its inode number, which is the kernel's cgroup id.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <linux/magic.h>

#include "cgroups.h"

int cgroup_resolve(const char *arg, char *path, uint64_t *id, char *why,
		   size_t size)
{
	struct statfs sfs;
	struct stat st;
	int n;

	if (!*arg) {
		snprintf(why, size, "--cgroup: an empty path");
		return -1;
	}
	n = snprintf(path, PATH_MAX, "%s%s%s", *arg == '/' ? "" : CGROUP_ROOT,
		     *arg == '/' ? "" : "/", arg);
	if (n >= PATH_MAX) {
		snprintf(why, size, "--cgroup %s: the path is too long", arg);
		return -1;
	}
	if (stat(path, &st)) {
		snprintf(why, size, "--cgroup %s: %s: %s", arg, path,
			 strerror(errno));
		return -1;
	}
	if (statfs(path, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC ||
	    !S_ISDIR(st.st_mode)) {
		snprintf(why, size, "--cgroup %s: %s is no cgroup v2 directory (cgroup2 is mounted on %s, usually)",
			 arg, path, CGROUP_ROOT);
		return -1;
	}
	*id = (uint64_t)st.st_ino;
	return 0;
}

int cgroup_ids_add(struct cgroup_ids *ids, uint64_t id)
{
	uint64_t *v;

	if (cgroup_ids_has(ids, id))
		return 0;
	v = realloc(ids->id, (ids->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[ids->n++] = id;
	ids->id = v;
	return 0;
}

int cgroup_ids_has(const struct cgroup_ids *ids, uint64_t id)
{
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i] == id)
			return 1;
	return 0;
}

void cgroup_ids_free(struct cgroup_ids *ids)
{
	free(ids->id);
	ids->id = NULL;
	ids->n = 0;
}

/* nftw() keeps no user pointer: the walk in progress. */
static struct cgroup_ids *walk_ids;
static struct cg_name {
	uint64_t id;
	char *path;
} *names;
static size_t nr_names;
static int walk_err;

static int add_dir(const char *path, const struct stat *st, int type,
		   struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_D && cgroup_ids_add(walk_ids, (uint64_t)st->st_ino)) {
		walk_err = -ENOMEM;
		return 1;
	}
	return 0;
}

int cgroup_ids_under(const char *path, struct cgroup_ids *ids)
{
	walk_ids = ids;
	walk_err = 0;
	/* A cgroup removed during the walk is just not there. */
	if (nftw(path, add_dir, 16, FTW_PHYS | FTW_MOUNT) < 0 && !walk_err)
		walk_err = -errno;
	return walk_err;
}

static int add_name(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	struct cg_name *v;
	const char *rel = path + strlen(CGROUP_ROOT);

	(void)ftw;
	if (type != FTW_D)
		return 0;
	v = realloc(names, (nr_names + 1) * sizeof(*v));
	if (!v)
		return 1;
	names = v;
	names[nr_names].id = (uint64_t)st->st_ino;
	names[nr_names].path = strdup(*rel ? rel : "/");
	if (!names[nr_names].path)
		return 1;
	nr_names++;
	return 0;
}

const char *cgroup_name(uint64_t id)
{
	static int walked;
	struct statfs sfs;

	if (!walked) {
		walked = 1;
		if (!statfs(CGROUP_ROOT, &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
			nftw(CGROUP_ROOT, add_name, 16, FTW_PHYS | FTW_MOUNT);
	}
	for (size_t i = 0; i < nr_names; i++)
		if (names[i].id == id)
			return names[i].path;
	return NULL;
}
