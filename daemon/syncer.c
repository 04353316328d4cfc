// SPDX-License-Identifier: GPL-2.0
/*
 * Durability off the drain path: one thread that does the fdatasync()s.
 *
 * At every flush tick, once every drain thread has drained what the tick
 * closed (main.c), main hands syncer_request() a dup() of each CPU's
 * current chunk, and the drain threads have handed over (syncer_adopt())
 * the chunks they closed since the last round.  This thread syncs all of
 * them, then the trace directory (the chunks' names), and closes them.
 * The fds are the thread's own: a drain thread that closes a chunk and
 * opens the next meanwhile changes nothing for it.
 *
 *   main                     drain threads             syncer thread
 *   tick: REQ_FLUSH -------> FLUSH, drain, ack
 *   all acked: dup(current)                       --->  fdatasync(each),
 *                            close chunk: adopt(fd) -->  adopted too,
 *                                                       fsync(dir), close
 *
 * A request while the previous round still runs (a slow disk) is refused
 * and main tries again at the next tick: requests never pile up, and what
 * is on disk after a power loss is everything written before the last
 * completed round began: at most one flush interval plus one round old.
 * Nobody waits for a disk sync but this thread, and main at stop.
 *
 * A closed chunk is adopted with its fd while fewer than the budget that
 * main set from RLIMIT_NOFILE (nofile.c) are held, and by name beyond
 * it: the drain thread closes the fd and this thread opens the name when
 * its turn comes.  An fd is better (the file's writeback errors cannot go
 * with its inode while it is held open) but not worth running out of fds
 * for: with -f 0, or a disk slower than the chunks close, they add up.
 *
 * A failed sync is not retried: after a writeback error the kernel marks
 * the pages clean, so what was written since the last sync may be lost
 * and a second fdatasync() would say nothing.  The first failure is kept
 * (which file, why), every one is counted, and main is told: it stops the
 * recording as it does for a failed write, the file's name the last line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

/* A growable list of files to sync. */
struct files {
	struct sync_file *f;
	unsigned int nr, cap;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	/* Set by syncer_start(), before any chunk exists to sync. */
	int dirfd;
	int notify_fd;			/* main's eventfd, or -1 */
	unsigned int max_fds;		/* closed chunks' fds, at most */
	/* Under @lock. */
	bool running, stop, busy;
	unsigned int held;		/* closed chunks' fds held now */
	struct files round;		/* being synced */
	struct files adopted;		/* closed chunks, next round's */
	uint64_t rounds;		/* completed */
	uint64_t failed;		/* files whose sync failed */
	int fail_err;			/* the first failure */
	char fail_name[CHUNK_NAME_MAX];
} sy = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.dirfd = -1,
	.notify_fd = -1,
};

/* Room for @more files in @l. */
static int files_reserve(struct files *l, unsigned int more)
{
	unsigned int cap = l->cap ? l->cap : 16;
	struct sync_file *n;

	while (cap < l->nr + more)
		cap *= 2;
	if (cap == l->cap)
		return 0;
	n = realloc(l->f, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->f = n;
	l->cap = cap;
	return 0;
}

/* @name's fd, or -1 to open it by name when synced. */
static int files_add(struct files *l, int fd, const char *name)
{
	int err = files_reserve(l, 1);

	if (err)
		return err;
	l->f[l->nr].fd = fd;
	l->f[l->nr].held = false;
	snprintf(l->f[l->nr].name, sizeof(l->f[l->nr].name), "%s", name);
	l->nr++;
	return 0;
}

static void files_free(struct files *l)
{
	free(l->f);
	memset(l, 0, sizeof(*l));
}

void syncer_failure(const char *name, int err)
{
	uint64_t one = 1;

	pthread_mutex_lock(&sy.lock);
	if (!sy.failed++) {
		sy.fail_err = err;
		snprintf(sy.fail_name, sizeof(sy.fail_name), "%s", name);
	}
	pthread_mutex_unlock(&sy.lock);
	if (sy.notify_fd >= 0 && write(sy.notify_fd, &one, sizeof(one)) < 0) {
		/* A full counter still wakes main. */
	}
}

/*
 * fdatasync() one file (fsync() for the directory, "."), then close it.
 * One adopted by name is opened first: gone means --max-files or
 * --max-total removed it, and there is nothing left to keep.
 */
static int sync_one(const struct sync_file *f)
{
	bool dir = !strcmp(f->name, ".");
	int fd = f->fd, err = 0;

	if (fd < 0) {
		fd = openat(sy.dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
	}
	if ((dir ? fsync(fd) : fdatasync(fd)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/*
 * Sync every file of @l, then the directory; the fds of closed chunks go
 * back to the budget.  The first failure, 0 if none; each one is recorded.
 */
static int sync_all(struct files *l)
{
	struct sync_file dir = { .fd = -1, .name = "." };
	unsigned int held = 0;
	int err, first = 0;

	for (unsigned int i = 0; i <= l->nr; i++) {
		const struct sync_file *f = i < l->nr ? &l->f[i] : &dir;

		held += f->held;
		err = sync_one(f);
		if (err) {
			syncer_failure(f->name, err);
			if (!first)
				first = err;
		}
	}
	l->nr = 0;
	pthread_mutex_lock(&sy.lock);
	sy.held -= held;
	pthread_mutex_unlock(&sy.lock);
	return first;
}

static void *syncer_main(void *unused)
{
	(void)unused;
	pthread_setname_np(pthread_self(), "rtd-sync");
	pthread_mutex_lock(&sy.lock);
	for (;;) {
		while (!sy.busy && !sy.stop)
			pthread_cond_wait(&sy.cond, &sy.lock);
		if (!sy.busy)
			break;
		pthread_mutex_unlock(&sy.lock);

		sync_all(&sy.round);

		pthread_mutex_lock(&sy.lock);
		sy.rounds++;
		sy.busy = false;
		pthread_cond_broadcast(&sy.cond);
	}
	pthread_mutex_unlock(&sy.lock);
	return NULL;
}

int syncer_start(int dirfd, int notify_fd, unsigned int max_fds)
{
	int err;

	sy.dirfd = dirfd;
	sy.notify_fd = notify_fd;
	sy.max_fds = max_fds;
	sy.stop = sy.busy = false;
	sy.held = 0;
	sy.rounds = sy.failed = 0;
	sy.fail_err = 0;
	sy.fail_name[0] = '\0';
	err = pthread_create(&sy.thread, NULL, syncer_main, NULL);
	if (err)
		return -err;
	sy.running = true;
	return 0;
}

static void close_files(struct sync_file *f, unsigned int nr)
{
	while (nr)
		close(f[--nr].fd);
}

int syncer_request(struct sync_file *files, unsigned int nr)
{
	unsigned int i;
	int err;

	pthread_mutex_lock(&sy.lock);
	if (!sy.running || sy.busy) {
		err = sy.running ? -EBUSY : -ENOTCONN;
		goto refuse;
	}
	/* The round is empty: room for all, then nothing can fail. */
	err = files_reserve(&sy.round, nr + sy.adopted.nr);
	if (err)
		goto refuse;
	for (i = 0; i < nr; i++) {
		files[i].held = false;
		sy.round.f[sy.round.nr++] = files[i];
	}
	for (i = 0; i < sy.adopted.nr; i++)
		sy.round.f[sy.round.nr++] = sy.adopted.f[i];
	sy.adopted.nr = 0;
	sy.busy = true;
	pthread_cond_signal(&sy.cond);
	pthread_mutex_unlock(&sy.lock);
	return 0;

refuse:
	/* The adopted files wait for the next round; these are not needed. */
	pthread_mutex_unlock(&sy.lock);
	close_files(files, nr);
	return err;
}

void syncer_adopt(int fd, const char *name)
{
	bool keep;
	int err;

	pthread_mutex_lock(&sy.lock);
	keep = sy.held < sy.max_fds;
	err = files_add(&sy.adopted, keep ? fd : -1, name);
	if (!err && keep) {
		sy.adopted.f[sy.adopted.nr - 1].held = true;
		sy.held++;
	}
	pthread_mutex_unlock(&sy.lock);
	if (!err && keep)
		return;
	if (err) {
		/* No memory for the list: sync it here, rather than never. */
		if (fdatasync(fd) < 0)
			syncer_failure(name, -errno);
	}
	close(fd);
}

void syncer_status(struct syncer_stats *st)
{
	pthread_mutex_lock(&sy.lock);
	st->rounds = sy.rounds;
	st->failed = sy.failed;
	st->fail_err = sy.fail_err;
	snprintf(st->fail_name, sizeof(st->fail_name), "%s", sy.fail_name);
	pthread_mutex_unlock(&sy.lock);
}

int syncer_stop(void)
{
	int err;

	if (sy.running) {
		pthread_mutex_lock(&sy.lock);
		sy.stop = true;
		pthread_cond_signal(&sy.cond);
		pthread_mutex_unlock(&sy.lock);
		/* A round in progress completes first: its data was asked for. */
		pthread_join(sy.thread, NULL);
		sy.running = false;
	}
	/* What was closed since: every chunk, at stop; then the directory. */
	err = sync_all(&sy.adopted);
	files_free(&sy.adopted);
	files_free(&sy.round);
	return err;
}
