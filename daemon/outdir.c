// SPDX-License-Identifier: GPL-2.0
/*
 * The trace directory: a new one per start (-o, or a time-stamped name in
 * --root), its entry made durable in its parent; and --max-total, the disk
 * budget of the traces in --root (retention.c removes them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ringtraced.h"

char outdir[PATH_MAX];
const char *outname;
int outdirfd = -1;

/* The directory @fd holds nothing. */
static bool dir_is_empty(int fd)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *de;
	bool empty = true;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/*
 * The trace directory @dir, open, if it is this user's and written by no
 * one else; else the start dies, before anything is written into it.  The
 * hook and --max-total work with the paths of what is inside (as root,
 * under the service): where another user may rename an entry, a set swapped
 * for a symlink to a secret would be read by the hook and marked shipped,
 * a chunk swapped for a FIFO would hang its packer.  A new directory is
 * made 0750, so one the daemon just made passes; an existing one given
 * with -o must be the daemon's user's own, like ssh's ~/.ssh.
 */
static int open_trusted(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && !lstat(dir, &st))
		die("%s: %s", dir, S_ISLNK(st.st_mode) ?
		    "a symbolic link: -o names the trace directory itself" :
		    "exists and is not an empty directory");
	if (fd < 0)
		die("%s: %s", dir, strerror(errno));
	if (fstat(fd, &st) < 0)
		die("%s: %s", dir, strerror(errno));
	if (st.st_uid != geteuid())
		die("%s: owned by uid %u, not by this daemon's user (uid %u): a trace directory must be its own, written by no one else",
		    dir, (unsigned int)st.st_uid, (unsigned int)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		die("%s: written by others (mode %04o): a trace directory must be its user's alone (chmod go-w, or a new directory)",
		    dir, (unsigned int)(st.st_mode & 07777));
	return fd;
}

/* The directory entry of @path survives a power loss once this returns. */
static void sync_parent(const char *path)
{
	char parent[PATH_MAX];
	char *slash;
	int fd;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		warn("%s: %s (the trace directory may not survive a power loss)",
		     parent, strerror(errno));
	if (fd >= 0)
		close(fd);
}

void outdir_create(void)
{
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	unsigned int i;

	if (opt.output) {
		size_t len = strlen(opt.output);
		bool made;

		/* Its name in its parent: "DIR/" is DIR. */
		while (len > 1 && opt.output[len - 1] == '/')
			len--;
		snprintf(outdir, sizeof(outdir), "%.*s", (int)len, opt.output);
		made = mkdir(outdir, 0750) == 0;
		if (!made && errno != EEXIST)
			die("%s: %s", outdir, strerror(errno));
		outdirfd = open_trusted(outdir);
		if (!made && !dir_is_empty(outdirfd))
			die("%s: exists and is not an empty directory", outdir);
	} else {
		const char *base = opt.root ? opt.root :
				   msg_service ? SERVICE_DIR : ".";
		const char *prefix = opt.root || msg_service ? "" : "ringtrace-";

		opt.root = base;
		if (strcmp(base, ".") && mkdir(base, 0750) < 0 && errno != EEXIST)
			die("%s: %s", base, strerror(errno));
		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		for (i = 0;; i++) {
			if (i)
				snprintf(outdir, sizeof(outdir), "%s/%s%s.%u",
					 base, prefix, stamp, i);
			else
				snprintf(outdir, sizeof(outdir), "%s/%s%s",
					 base, prefix, stamp);
			if (mkdir(outdir, 0750) == 0)
				break;
			if (errno != EEXIST || i == 1000)
				die("%s: %s", outdir, strerror(errno));
		}
		outdirfd = open_trusted(outdir);
	}
	/*
	 * Ours while we run (the kernel drops it when we die, SIGKILL too):
	 * `ringtrace compress` must not pack a chunk still being written.
	 */
	if (flock(outdirfd, LOCK_EX | LOCK_NB) < 0)
		die("%s: %s", outdir, errno == EWOULDBLOCK ?
		    "in use (ringtrace compress?)" : strerror(errno));
	outname = strrchr(outdir, '/') ? strrchr(outdir, '/') + 1 : outdir;
	sync_parent(outdir);
}

bool due_every_10s(time_t *last)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (*last && now.tv_sec - *last < 10)
		return false;
	*last = now.tv_sec;
	return true;
}

/*
 * The running trace alone is over the budget by @over bytes: its oldest
 * closed chunks go, oldest first whatever their CPU, as a flight recorder
 * on disk.  The chunks being written are never removed.
 */
static void trim_running(uint64_t over)
{
	static bool said;
	char name[CHUNK_NAME_MAX];
	unsigned int cpu, seq, n = 0;
	struct stat st;

	while (over && packer_take_oldest(&cpu, &seq)) {
		n++;
		if (cpu == UINT_MAX)
			continue;	/* its packer removes it */
		chunk_name(name, sizeof(name), cpu, seq);
		if (fstatat(outdirfd, name, &st, 0) == 0)
			over -= (uint64_t)st.st_blocks * 512 < over ?
				(uint64_t)st.st_blocks * 512 : over;
		if (unlinkat(outdirfd, name, 0) < 0 && errno != ENOENT)
			warn("%s/%s: cannot remove: %s", outdir, name,
			     strerror(errno));
	}
	if (n && !said)
		info("--max-total: the running trace alone is over %llu bytes: its oldest chunks are removed as new ones close",
		     (unsigned long long)opt.max_total);
	said |= n > 0;
	if (over && !n)
		warn("--max-total: the chunks being written alone are over %llu bytes: lower --max-size",
		     (unsigned long long)opt.max_total);
}

/*
 * The running trace's set @seq (named @name) gone: 0, or -errno with the
 * set as it was (-EBUSY: a process its hook left holds the set's lock,
 * handoff.c's).  A symlink or file a hook left at its name is removed
 * itself, never followed.  A directory is renamed to its tombstone,
 * .removing-chunk-NNNNNN, and that rename synced: from then on it is no
 * set (no start hands it over); its mark goes, then it is emptied, what a
 * hook made in it too (retention_remove_tree()), and removed.  A kill in
 * the middle leaves the tombstone, which the next start removes
 * (recover.c); so does a failure, said.
 */
static int remove_set(const char *name, unsigned int seq)
{
	char tomb[SET_NAME_MAX + 16], mark[SHIPPED_NAME_MAX];
	struct stat st;
	int fd, err;

	shipped_name(mark, sizeof(mark), seq);
	if (fstatat(outdirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(outdirfd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		unlinkat(outdirfd, mark, 0);
		return 0;
	}
	fd = open_locked(outdirfd, name);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	snprintf(tomb, sizeof(tomb), ".removing-%s", name);
	err = renameat(outdirfd, name, outdirfd, tomb) < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	/* Not durable: a power cut may bring it back, handed again. */
	if (fsync(outdirfd) < 0)
		warn("%s: %s (a chunk set removed by --max-total may be back after a power loss)",
		     outdir, strerror(errno));
	unlinkat(outdirfd, mark, 0);
	err = retention_remove_tree(outdirfd, tomb);
	if (err)
		warn("%s/%s: %s (what is left of a chunk set --max-total removed: the next start removes it)",
		     outdir, tomb, strerror(-err));
	return 0;
}

/*
 * --on-chunk: the running trace alone is over by @over: its oldest chunk
 * sets that the hook is done with, those it shipped (and left) first, then
 * those it failed or never got (waiting for room in the queue), each
 * said: never one queued for it or in its hands, nor chunks not yet in a
 * set.  A set whose removal fails stays, and is not tried again.
 */
static void trim_running_sets(uint64_t over)
{
	static bool said;
	char name[SET_NAME_MAX];
	unsigned int n = 0, seq;
	bool shipped;
	int err;

	while (over && handoff_take_oldest(name, sizeof(name), &seq, &shipped)) {
		int64_t bytes = retention_dir_bytes(outdirfd, name);

		err = remove_set(name, seq);
		handoff_removed(seq, err);
		if (err == -EBUSY) {
			info("%s/%s: kept for now: a process its --on-chunk hook left holds it",
			     outdir, name);
			continue;
		}
		if (err) {
			warn("%s/%s: cannot remove: %s (kept: --max-total leaves it)",
			     outdir, name, strerror(-err));
			continue;
		}
		if (!shipped)
			warn("--max-total: removed %s/%s, a chunk set never shipped (its --on-chunk hook failed or never got it): the running trace alone is over %llu bytes",
			     outdir, name, (unsigned long long)opt.max_total);
		n++;
		if (bytes > 0)
			over -= (uint64_t)bytes < over ? (uint64_t)bytes : over;
	}
	if (n && !said)
		info("--max-total: the running trace alone is over %llu bytes: its oldest chunk sets the --on-chunk hook left are removed",
		     (unsigned long long)opt.max_total);
	said |= n > 0;
}

/* --max-total's check: at start, then every --max-total-interval (main). */
void outdir_retention(void)
{
	uint64_t over;
	int err;

	if (!opt.max_total || !opt.root)
		return;
	err = retention_prune(opt.root, outname, opt.max_total, NULL, &over);
	if (err == -ENOSPC && opt.on_chunk)
		trim_running_sets(over);
	else if (err == -ENOSPC)
		trim_running(over);
	else if (err)
		warn("--max-total: %s: %s", opt.root, strerror(-err));
}

unsigned int outdir_make_room(void)
{
	unsigned int removed = 0;

	if (opt.max_total && opt.root && outname)
		retention_prune(opt.root, outname, 0, &removed, NULL);
	return removed;
}
