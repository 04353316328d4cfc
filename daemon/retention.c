// SPDX-License-Identifier: GPL-2.0
/*
 * --max-total: a disk budget for the traces under the root directory in
 * which ringtraced makes one trace directory per start (--root, or
 * /var/lib/ringtrace with --service).
 *
 * The budget counts every trace directory there, the running one
 * included.  When the sum is over it, the oldest whole traces other than
 * the running one are removed, oldest first, until it is not; if the
 * running trace alone is still over, the caller removes its oldest closed
 * chunks (outdir.c).  Only directories
 * that ringtraced itself names (YYYYmmdd-HHMMSS, optionally with a .N
 * suffix or a "ringtrace-" prefix) and that hold a metadata file are ever
 * touched.  Called at start and then from the flush tick.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringtraced.h"

struct trace_dir {
	char name[NAME_MAX + 1];
	uint64_t bytes;
};

/* YYYYmmdd-HHMMSS[.N], optionally after "ringtrace-". */
static bool ours(const char *name)
{
	const char *p = name;

	if (!strncmp(p, "ringtrace-", 10))
		p += 10;
	for (int i = 0; i < 15; i++, p++)
		if (i == 8 ? *p != '-' : !isdigit((unsigned char)*p))
			return false;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return !*p;
}

/* The directory @name of @rootfd, for reading; NULL with errno. */
static DIR *open_at(int rootfd, const char *name)
{
	int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Bytes on disk of the files of one (flat) trace directory; -errno. */
static int64_t dir_bytes(int rootfd, const char *name)
{
	DIR *d = open_at(rootfd, name);
	struct dirent *de;
	struct stat st;
	uint64_t sum = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return (int64_t)sum;
}

/* Remove a flat trace directory: its files, then itself. */
static int remove_trace(int rootfd, const char *name)
{
	DIR *d = open_at(rootfd, name);
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 && !err)
			err = -errno;
	}
	closedir(d);
	if (!err && unlinkat(rootfd, name, AT_REMOVEDIR) < 0)
		err = -errno;
	return err;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct trace_dir *)a)->name,
		      ((const struct trace_dir *)b)->name);
}

int retention_prune(const char *root, const char *current, uint64_t max_total,
		    unsigned int *removed, uint64_t *over)
{
	struct trace_dir *t = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	struct stat st;
	int rootfd, err = 0;
	DIR *d;

	if (removed)
		*removed = 0;
	if (over)
		*over = 0;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	d = fdopendir(dup(rootfd));
	if (!d) {
		err = -errno;
		goto out;
	}
	while ((de = readdir(d))) {
		char meta[PATH_MAX];
		int64_t bytes;

		/* Not a trace (no metadata): neither counted nor removed. */
		snprintf(meta, sizeof(meta), "%s/metadata", de->d_name);
		if (!ours(de->d_name) ||
		    fstatat(rootfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || faccessat(rootfd, meta, F_OK, 0))
			continue;
		bytes = dir_bytes(rootfd, de->d_name);
		if (bytes < 0)
			continue;
		total += (uint64_t)bytes;
		/* The running trace counts, and stays. */
		if (!strcmp(de->d_name, current))
			continue;
		if (n == cap) {
			struct trace_dir *nt;

			cap = cap ? 2 * cap : 16;
			nt = realloc(t, cap * sizeof(*t));
			if (!nt) {
				err = -ENOMEM;
				closedir(d);
				goto out;
			}
			t = nt;
		}
		snprintf(t[n].name, sizeof(t[n].name), "%s", de->d_name);
		t[n].bytes = (uint64_t)bytes;
		n++;
	}
	closedir(d);
	/* Names are start times: the oldest sorts first. */
	qsort(t, n, sizeof(*t), by_name);
	for (i = 0; i < n && total > max_total; i++) {
		err = remove_trace(rootfd, t[i].name);
		if (err) {
			warn("--max-total: cannot remove %s/%s: %s", root,
			     t[i].name, strerror(-err));
			break;
		}
		total -= t[i].bytes;
		if (removed)
			(*removed)++;
		info("--max-total: removed the oldest trace %s/%s (%llu bytes)",
		     root, t[i].name, (unsigned long long)t[i].bytes);
	}
	if (i && fsync(rootfd) < 0 && !err)
		err = -errno;
	if (!err && total > max_total) {
		err = -ENOSPC;
		if (over)
			*over = total - max_total;
	}
out:
	free(t);
	close(rootfd);
	return err;
}
