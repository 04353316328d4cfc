// SPDX-License-Identifier: GPL-2.0
/*
 * Durability off the drain path: one thread that does the fdatasync()s.
 *
 * At every flush tick the loop has ended each CPU's zstd frame (so the
 * files are whole frames); it then hands syncer_request() a dup() of each
 * CPU's file and of the trace directory, and goes back to draining.  This
 * thread syncs the files, then the directory (names made by rotations),
 * and closes the dups.  The dups are the thread's own: a rotation that
 * closes and replaces a file meanwhile changes nothing for it, and the
 * data written before the dup is what it makes durable.
 *
 *   loop (main thread)                    syncer thread
 *   flush_all(): frames ended
 *   syncer_request(dup(fd) per CPU)  --->  fdatasync(each), fsync(dir)
 *   drain, drain, ...                       close(each); round done
 *
 * A request while the previous round still runs (a slow disk) is refused
 * and the loop tries again at the next tick: requests never pile up, and
 * what is on disk after a power loss is everything written before the
 * last completed round began: at most one flush interval plus one round
 * old.  The loop never waits for a disk sync, except at rotation and stop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stop, busy;
	int *fds;			/* the round's files, then the directory */
	unsigned int nr;
	/* Written by the thread, read by the loop (statistics). */
	uint64_t rounds, failures;
	int last_err;
} sy = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static void *syncer_main(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&sy.lock);
	for (;;) {
		while (!sy.busy && !sy.stop)
			pthread_cond_wait(&sy.cond, &sy.lock);
		if (!sy.busy)
			break;
		pthread_mutex_unlock(&sy.lock);

		int err = 0;

		for (unsigned int i = 0; i < sy.nr; i++) {
			/* The last fd is the directory: fsync, not fdatasync. */
			if ((i + 1 < sy.nr ? fdatasync(sy.fds[i]) :
					     fsync(sy.fds[i])) < 0 && !err)
				err = errno;
			close(sy.fds[i]);
		}

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

int syncer_start(unsigned int max_files)
{
	int err;

	sy.fds = calloc(max_files + 1, sizeof(*sy.fds));
	if (!sy.fds)
		return -ENOMEM;
	err = pthread_create(&sy.thread, NULL, syncer_main, NULL);
	if (err) {
		free(sy.fds);
		sy.fds = NULL;
		return -err;
	}
	sy.running = true;
	return 0;
}

int syncer_request(const int *fds, unsigned int nr, int dirfd)
{
	unsigned int i, n = 0;
	int err = 0;

	if (!sy.running)
		return -ENOTCONN;
	pthread_mutex_lock(&sy.lock);
	if (sy.busy) {
		pthread_mutex_unlock(&sy.lock);
		return -EBUSY;
	}
	for (i = 0; i <= nr && !err; i++) {
		int fd = dup(i < nr ? fds[i] : dirfd);

		if (fd < 0)
			err = -errno;
		else
			sy.fds[n++] = fd;
	}
	if (err) {
		while (n)
			close(sy.fds[--n]);
	} else {
		sy.nr = n;
		sy.busy = true;
		pthread_cond_signal(&sy.cond);
	}
	pthread_mutex_unlock(&sy.lock);
	return err;
}

void syncer_status(uint64_t *rounds, uint64_t *failures, int *last_err)
{
	pthread_mutex_lock(&sy.lock);
	*rounds = sy.rounds;
	*failures = sy.failures;
	*last_err = sy.last_err;
	pthread_mutex_unlock(&sy.lock);
}

void syncer_stop(void)
{
	if (!sy.running)
		return;
	pthread_mutex_lock(&sy.lock);
	sy.stop = true;
	pthread_cond_signal(&sy.cond);
	pthread_mutex_unlock(&sy.lock);
	/* A round in progress completes first: its data was asked for. */
	pthread_join(sy.thread, NULL);
	sy.running = false;
	free(sy.fds);
	sy.fds = NULL;
}
