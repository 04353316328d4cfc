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
 * suffix or a "ringtrace-" prefix; --trigger's snapshots,
 * YYYYmmdd-HHMMSS.mmm-EVENT) and that hold a metadata file are ever
 * touched.  Called at start and then from the flush tick.
 *
 * A trace is removed so that no moment of it leaves a half trace that
 * looks whole, or one that is never removed:
 *
 *   flock()      a trace locked by its ringtraced or by `ringtrace
 *                compress` is in use: skipped (still counted); the lock
 *                is ours until it is gone
 *   rename       to its tombstone, .removing-NAME: from here on nobody
 *                reads it as a trace, and a kill leaves only the tombstone
 *   unlink       its files, the metadata last; then the directory
 *
 * Tombstones that a kill left are removed at the next pass, the first one
 * at start.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringtraced.h"

struct trace_dir {
	char name[NAME_MAX + 1];
	uint64_t bytes;
};

#define TOMBSTONE	".removing-"

/*
 * YYYYmmdd-HHMMSS[.N], optionally after "ringtrace-"; or a --trigger
 * snapshot, YYYYmmdd-HHMMSS.mmm-EVENT (lib/trigger.c).
 */
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
		/* An event's name: kprobe names hold ':'. */
		if (*p == '-' && p[1])
			for (p++; isalnum((unsigned char)*p) || *p == '_' ||
				  *p == ':'; p++)
				;
	}
	return !*p;
}

/*
 * The directory @name of @rootfd, for reading; NULL with errno.  A new
 * open file each time ("." for @rootfd itself): a dup() would share the
 * offset, and a second walk would start where the first one ended.
 */
static DIR *open_at(int rootfd, const char *name)
{
	int fd = openat(rootfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static bool is_set_dir(const char *name);
static int64_t set_bytes(int fd, const char *name);

/*
 * Bytes on disk of the files of one trace directory and of its chunk sets
 * (--on-chunk: subdirectories one level deep, what their hook left);
 * -errno.
 */
int64_t retention_dir_bytes(int rootfd, const char *name)
{
	DIR *d = open_at(rootfd, name);
	struct dirent *de;
	struct stat st;
	uint64_t sum = 0;
	int64_t sub;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
		else if (S_ISDIR(st.st_mode) && is_set_dir(de->d_name) &&
			 (sub = set_bytes(dirfd(d), de->d_name)) > 0)
			sum += (uint64_t)sub;
	}
	closedir(d);
	return (int64_t)sum;
}

/* chunk-NNNNNN, or .chunk-NNNNNN.tmp being assembled (handoff.c). */
static bool is_set_dir(const char *name)
{
	const char *p = name + (*name == '.');

	if (strncmp(p, "chunk-", 6))
		return false;
	for (p += 6; isdigit((unsigned char)*p); p++)
		;
	return !*p || (*name == '.' && !strcmp(p, ".tmp"));
}

/* Bytes of the files of the set @name of @fd; -errno. */
static int64_t set_bytes(int fd, const char *name)
{
	DIR *d = open_at(fd, name);
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

static bool is_tombstone(const char *name)
{
	return !strncmp(name, TOMBSTONE, strlen(TOMBSTONE)) &&
	       ours(name + strlen(TOMBSTONE));
}

/*
 * The files of the directory @fd, its metadata last, and its chunk sets
 * (--on-chunk: files only, one level deep); -errno.
 */
static int remove_files(int fd)
{
	DIR *d = open_at(fd, ".");
	bool meta = false;
	struct dirent *de;
	int err = 0, sub;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "metadata")) {
			meta = true;
			continue;
		}
		if (is_set_dir(de->d_name) &&
		    (sub = openat(fd, de->d_name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
			int e = remove_files(sub);

			close(sub);
			if (e && !err)
				err = e;
			if (unlinkat(fd, de->d_name, AT_REMOVEDIR) < 0 &&
			    errno != ENOENT && !err)
				err = -errno;
			continue;
		}
		if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	if (!err && meta && unlinkat(fd, "metadata", 0) < 0 && errno != ENOENT)
		err = -errno;
	return err;
}

/*
 * The directory @name of @rootfd, open and locked: -EBUSY when its
 * ringtraced or a `ringtrace compress` holds it.
 */
static int open_locked(int rootfd, const char *name)
{
	int fd = openat(rootfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A tombstone's files, then itself; -EBUSY if another one removes it. */
static int remove_tombstone(int rootfd, const char *tomb)
{
	int fd = open_locked(rootfd, tomb), err;

	if (fd < 0)
		return fd;
	err = remove_files(fd);
	if (!err && unlinkat(rootfd, tomb, AT_REMOVEDIR) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Rotation @seq added to @seqs (@n of them, at most @max; @more beyond) if new. */
static void add_seq(unsigned int *seqs, unsigned int *n, unsigned int max,
		    unsigned int *more, unsigned int seq)
{
	for (unsigned int i = 0; i < *n; i++)
		if (seqs[i] == seq)
			return;
	if (*n < max)
		seqs[(*n)++] = seq;
	else
		(*more)++;
}

/*
 * --on-chunk: what of the trace @fd (@root/@name) no hook has shipped,
 * said set by set before it goes (--max-total is the one thing that
 * removes it): each chunk-NNNNNN/ not marked shipped, and in a trace made
 * with --on-chunk each rotation not assembled yet.
 */
static void say_unshipped(int fd, const char *root, const char *name)
{
	char mark[SHIPPED_NAME_MAX];
	unsigned int seqs[256], n = 0, more = 0, seq, cpu;
	struct dirent *de;
	struct stat st;
	bool handoff;
	DIR *d;

	handoff = !fstatat(fd, HANDOFF_MARKER, &st, AT_SYMLINK_NOFOLLOW);
	d = open_at(fd, ".");
	while (d && (de = readdir(d))) {
		if (!strncmp(de->d_name, "chunk-", 6) && is_set_dir(de->d_name) &&
		    sscanf(de->d_name, "chunk-%u", &seq) == 1) {
			shipped_name(mark, sizeof(mark), seq);
			if (fstatat(fd, mark, &st, AT_SYMLINK_NOFOLLOW))
				warn("--max-total: removing %s/%s/%s, a chunk set no --on-chunk hook has shipped",
				     root, name, de->d_name);
		} else if (handoff && (chunk_parse_name(de->d_name, &cpu, &seq) ||
				       (is_set_dir(de->d_name) &&
					sscanf(de->d_name, ".chunk-%u", &seq) == 1))) {
			add_seq(seqs, &n, ARRAY_SIZE(seqs), &more, seq);
		}
	}
	if (d)
		closedir(d);
	for (unsigned int i = 0; i < n; i++)
		warn("--max-total: removing %s/%s's rotation %u, never assembled into a chunk set nor shipped",
		     root, name, seqs[i]);
	/* Beyond those: counted by entry, a rotation's chunks each. */
	if (more)
		warn("--max-total: removing %s/%s's other rotations never assembled into a chunk set nor shipped (%u more chunks or staging directories)",
		     root, name, more);
}

/*
 * Remove the trace @name of @root: locked (-EBUSY: in use, left alone),
 * what it holds unshipped said, renamed to its tombstone (made durable),
 * emptied metadata last, removed.
 */
static int remove_trace(int rootfd, const char *root, const char *name)
{
	char tomb[NAME_MAX + 1];
	int fd, err;

	if (snprintf(tomb, sizeof(tomb), TOMBSTONE "%s", name) >=
	    (int)sizeof(tomb))
		return -ENAMETOOLONG;
	fd = open_locked(rootfd, name);
	if (fd < 0)
		return fd;
	say_unshipped(fd, root, name);
	err = renameat(rootfd, name, rootfd, tomb) < 0 ? -errno : 0;
	/* A tombstone of the same name (the clock set back): that one first. */
	if ((err == -EEXIST || err == -ENOTEMPTY) &&
	    !(err = remove_tombstone(rootfd, tomb)))
		err = renameat(rootfd, name, rootfd, tomb) < 0 ? -errno : 0;
	if (!err && fsync(rootfd) < 0)
		err = -errno;
	if (!err)
		err = remove_files(fd);
	if (!err && unlinkat(rootfd, tomb, AT_REMOVEDIR) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The tombstones of @rootfd that a kill left: removed now; how many. */
static unsigned int remove_tombstones(int rootfd, const char *root)
{
	char (*names)[NAME_MAX + 1] = NULL;
	unsigned int n = 0, cap = 0, gone = 0;
	DIR *d = open_at(rootfd, ".");
	struct dirent *de;
	int err;

	if (!d)
		return 0;
	/* Their names first: removing while reading may skip entries. */
	while ((de = readdir(d))) {
		if (!is_tombstone(de->d_name))
			continue;
		if (n == cap) {
			void *more = realloc(names, (cap ? 2 * cap : 4) *
						    sizeof(*names));

			if (!more)
				break;
			names = more;
			cap = cap ? 2 * cap : 4;
		}
		snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
	}
	closedir(d);
	for (unsigned int i = 0; i < n; i++) {
		err = remove_tombstone(rootfd, names[i]);
		if (!err) {
			gone++;
			info("--max-total: removed %s/%s, a removal that was cut short",
			     root, names[i]);
		} else if (err != -EBUSY) {
			warn("--max-total: cannot remove %s/%s: %s", root,
			     names[i], strerror(-err));
		}
	}
	free(names);
	return gone;
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
	unsigned int gone;
	uint64_t total = 0, busy = 0;
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
	gone = remove_tombstones(rootfd, root);
	d = open_at(rootfd, ".");
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
		bytes = retention_dir_bytes(rootfd, de->d_name);
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
		err = remove_trace(rootfd, root, t[i].name);
		if (err == -EBUSY) {
			/* Recorded into, or being compressed: not now. */
			info("--max-total: %s/%s is in use (ringtrace compress, or its chunk sets being handed to --on-chunk): kept for now",
			     root, t[i].name);
			busy += t[i].bytes;
			err = 0;
			continue;
		}
		if (err) {
			warn("--max-total: cannot remove %s/%s: %s", root,
			     t[i].name, strerror(-err));
			break;
		}
		total -= t[i].bytes;
		gone++;
		if (removed)
			(*removed)++;
		info("--max-total: removed the oldest trace %s/%s (%llu bytes)",
		     root, t[i].name, (unsigned long long)t[i].bytes);
	}
	if (gone && fsync(rootfd) < 0 && !err)
		err = -errno;
	/* Not the running trace's to make up for a trace in use. */
	if (!err && total - busy > max_total) {
		err = -ENOSPC;
		if (over)
			*over = total - busy - max_total;
	}
out:
	free(t);
	close(rootfd);
	return err;
}
