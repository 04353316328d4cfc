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
 *   unlink       its files, the metadata last, its subdirectories (chunk
 *                sets, what a hook made in one) emptied alike; then the
 *                directory.  Nothing is followed: a symlink is removed
 *                itself, a mount point is not entered
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

/*
 * How deep counting and removal go below a trace directory: its sets, and
 * what a hook made inside one.  Nothing deeper is counted or removed.
 */
#define TREE_DEPTH	16

/* The subdirectory @name of @fd (whose stat is @up): opened if it is on @up's file system. */
static int open_subdir(int fd, const char *name, const struct stat *up)
{
	int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			 O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (sub < 0)
		return -errno;
	if (fstat(sub, &st) < 0 || st.st_dev != up->st_dev) {
		close(sub);
		return -EXDEV;		/* a mount point: not ours to enter */
	}
	return sub;
}

/*
 * Bytes on disk of what the directory @fd holds, @depth levels below its
 * trace: files at any depth up to TREE_DEPTH, no symlink followed, no
 * other file system entered.
 */
static uint64_t tree_bytes(int fd, unsigned int depth)
{
	DIR *d = open_at(fd, ".");
	struct stat up, st;
	struct dirent *de;
	uint64_t sum = 0;
	int sub;

	if (!d)
		return 0;
	if (fstat(fd, &up) < 0) {
		closedir(d);
		return 0;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
		else if (S_ISDIR(st.st_mode) && depth < TREE_DEPTH &&
			 (sub = open_subdir(fd, de->d_name, &up)) >= 0) {
			sum += tree_bytes(sub, depth + 1);
			close(sub);
		}
	}
	closedir(d);
	return sum;
}

/*
 * Bytes on disk of one trace directory: its files, its chunk sets and
 * whatever their hook left in them (tree_bytes()); -errno.
 */
int64_t retention_dir_bytes(int rootfd, const char *name)
{
	int fd = openat(rootfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t sum;

	if (fd < 0)
		return -errno;
	sum = tree_bytes(fd, 0);
	close(fd);
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

static bool is_tombstone(const char *name)
{
	return !strncmp(name, TOMBSTONE, strlen(TOMBSTONE)) &&
	       ours(name + strlen(TOMBSTONE));
}

static int empty_dir(int fd, unsigned int depth, const char *last);

/* The subdirectory @name of @fd (stat @up), emptied and removed; -errno. */
static int remove_subdir(int fd, const char *name, const struct stat *up,
			 unsigned int depth)
{
	int sub, err;

	if (depth >= TREE_DEPTH)
		return -ELOOP;
	sub = open_subdir(fd, name, up);
	if (sub < 0)
		return sub;
	err = empty_dir(sub, depth + 1, NULL);
	close(sub);
	if (!err && unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		err = -errno;
	return err;
}

/*
 * Everything the directory @fd holds (@depth levels below where the
 * removal began), @last (the metadata), if given, after all else: a file
 * or symlink is unlinked (never followed), a directory emptied the same
 * way and removed, none on another file system entered (-EXDEV) nor any
 * deeper than TREE_DEPTH (-ELOOP).  Until a pass over the listing finds
 * nothing more to remove: one removed while listing may hide another.
 * The first failure, or 0.
 */
static int empty_dir(int fd, unsigned int depth, const char *last)
{
	DIR *d = open_at(fd, ".");
	unsigned int removed;
	bool has_last = false;
	struct dirent *de;
	struct stat up;
	int err = 0, e;

	if (!d)
		return -errno;
	if (fstat(fd, &up) < 0) {
		err = -errno;
		goto out;
	}
	do {
		removed = 0;
		rewinddir(d);
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (last && !strcmp(de->d_name, last)) {
				has_last = true;
				continue;
			}
			if (!unlinkat(fd, de->d_name, 0)) {
				removed++;
				continue;
			}
			e = errno == EISDIR ?
			    remove_subdir(fd, de->d_name, &up, depth) : -errno;
			if (!e)
				removed++;
			else if (e != -ENOENT && !err)
				err = e;
		}
	} while (removed);
	if (!err && has_last && unlinkat(fd, last, 0) < 0 && errno != ENOENT)
		err = -errno;
out:
	closedir(d);
	return err;
}

int retention_remove_tree(int dirfd, const char *name)
{
	struct stat up;
	int err;

	if (fstat(dirfd, &up) < 0)
		return -errno;
	err = remove_subdir(dirfd, name, &up, 0);
	/* Not a directory (a symlink, a file): itself, not what it names. */
	if (err == -ENOTDIR || err == -ELOOP)
		err = unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
	return err == -ENOENT ? 0 : err;
}

/* The files of the trace directory @fd, its metadata last; -errno. */
static int remove_files(int fd)
{
	return empty_dir(fd, 0, "metadata");
}

/* ringtraced.h */
int open_locked(int rootfd, const char *name)
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
