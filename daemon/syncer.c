// SPDX-License-Identifier: GPL-2.0
/*
 * Durability off the drain path: one thread that does the fdatasync()s.
 *
 * At every flush tick, once every drain thread has drained what the tick
 * closed (main.c), main hands syncer_request() a dup() of each CPU's
 * current chunk, and the drain threads have handed over (syncer_adopt())
 * the fds of the chunks they closed since the last round.  This thread
 * syncs all of them, then the trace directory (the chunks' names), and
 * closes them.  The fds are the thread's own: a drain thread that closes a
 * chunk and opens the next meanwhile changes nothing for it.
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
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

/* A growable list of fds. */
struct fds {
	int *fd;
	unsigned int nr, cap;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stop, busy;
	struct fds round;		/* being synced: files, then the dir */
	struct fds adopted;		/* closed chunks, for the next round */
	/* Written by the thread, read by main (statistics). */
	uint64_t rounds, failures;
	int last_err;
} sy = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* Room for @more fds in @l. */
static int fds_reserve(struct fds *l, unsigned int more)
{
	unsigned int cap = l->cap ? l->cap : 16;
	int *n;

	while (cap < l->nr + more)
		cap *= 2;
	if (cap == l->cap)
		return 0;
	n = realloc(l->fd, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->fd = n;
	l->cap = cap;
	return 0;
}

static int fds_add(struct fds *l, int fd)
{
	int err = fds_reserve(l, 1);

	if (!err)
		l->fd[l->nr++] = fd;
	return err;
}

/* Sync and close every fd of @l, the last one (the directory) with fsync. */
static int sync_all(struct fds *l)
{
	int err = 0;

	for (unsigned int i = 0; i < l->nr; i++) {
		if ((i + 1 < l->nr ? fdatasync(l->fd[i]) : fsync(l->fd[i])) < 0 &&
		    !err)
			err = errno;
		close(l->fd[i]);
	}
	l->nr = 0;
	return err;
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

		int err = sync_all(&sy.round);

		pthread_mutex_lock(&sy.lock);
		sy.rounds++;
		if (err) {
			sy.failures++;
			sy.last_err = err;
		}
		sy.busy = false;
		pthread_cond_broadcast(&sy.cond);
	}
	pthread_mutex_unlock(&sy.lock);
	return NULL;
}

int syncer_start(void)
{
	int err;

	sy.stop = sy.busy = false;
	err = pthread_create(&sy.thread, NULL, syncer_main, NULL);

	if (err)
		return -err;
	sy.running = true;
	return 0;
}

static void close_fds(int *fds, unsigned int nr)
{
	while (nr)
		close(fds[--nr]);
}

int syncer_request(int *fds, unsigned int nr, int dirfd)
{
	unsigned int i;
	int err, d;

	pthread_mutex_lock(&sy.lock);
	if (!sy.running || sy.busy) {
		err = sy.running ? -EBUSY : -ENOTCONN;
		goto refuse;
	}
	/* The round is empty: room for all, then nothing can fail. */
	err = fds_reserve(&sy.round, nr + sy.adopted.nr + 1);
	if (err)
		goto refuse;
	d = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (d < 0) {
		err = -errno;
		goto refuse;
	}
	for (i = 0; i < nr; i++)
		sy.round.fd[sy.round.nr++] = fds[i];
	for (i = 0; i < sy.adopted.nr; i++)
		sy.round.fd[sy.round.nr++] = sy.adopted.fd[i];
	sy.adopted.nr = 0;
	sy.round.fd[sy.round.nr++] = d;
	sy.busy = true;
	pthread_cond_signal(&sy.cond);
	pthread_mutex_unlock(&sy.lock);
	return 0;

refuse:
	/* The adopted fds wait for the next round; these are not needed. */
	pthread_mutex_unlock(&sy.lock);
	close_fds(fds, nr);
	return err;
}

void syncer_adopt(int fd)
{
	int err;

	pthread_mutex_lock(&sy.lock);
	err = fds_add(&sy.adopted, fd);
	pthread_mutex_unlock(&sy.lock);
	if (err) {
		/* No memory for the list: sync it here, rather than never. */
		fdatasync(fd);
		close(fd);
	}
}

void syncer_status(uint64_t *rounds, uint64_t *failures, int *last_err)
{
	pthread_mutex_lock(&sy.lock);
	*rounds = sy.rounds;
	*failures = sy.failures;
	*last_err = sy.last_err;
	pthread_mutex_unlock(&sy.lock);
}

int syncer_stop(int dirfd)
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
	err = fds_add(&sy.adopted, fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
	if (!err)
		err = -sync_all(&sy.adopted);
	free(sy.adopted.fd);
	free(sy.round.fd);
	memset(&sy.adopted, 0, sizeof(sy.adopted));
	memset(&sy.round, 0, sizeof(sy.round));
	return err;
}
