// SPDX-License-Identifier: GPL-2.0
/*
 * The trace's metadata: a copy of the module's TSDL, kept up to date with
 * the event set while recording.
 *
 * Another module may register an event (the writer API) or unregister one
 * during a recording.  ringtrace.ko never reuses an id while it is loaded
 * and its metadata keeps every declaration, so the module's metadata only
 * ever grows by event blocks at its end, and each change bumps events_gen
 * in every buffer's meta page (include/uapi/linux/ringtrace.h).  After
 * each GET, the drain loop compares that generation with the one the copy
 * was made at (metadata_follow()): a newer one makes it append what the
 * module's metadata gained before the sub-buffer is written, so every
 * event on disk has its declaration on disk first.
 *
 * Every CPU's drain thread asks.  The generation of the copy is read
 * without the lock (the common case: nothing new); the first thread that
 * sees a newer one brings the copy up to date under the lock, and the
 * others wait for it there: their packet may hold the new events too.
 * This is the one place a drain thread waits for a disk sync, and only
 * when the event set changed.
 *
 * The copy is replaced whole, never appended to: written to metadata.new,
 * synced, renamed over, the directory synced.  A crash at any moment leaves
 * the old copy or the new one, each a valid TSDL file; the old one lacks
 * only declarations of events that no packet on disk holds yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *copy;			/* what the trace's metadata holds */
static size_t copy_len;
/* The events_gen it is up to date with: written under @lock (release). */
static uint64_t copy_gen;

/* The module's metadata, whole (ctl_read_alloc()), checked to be TSDL. */
static int read_module(const struct ctl *ctl, char **text, size_t *len)
{
	char *buf = ctl_read_alloc(ctl, "metadata");

	if (!buf)
		return -errno;
	*len = strlen(buf);
	if (*len < 13 || memcmp(buf, "/* CTF 1.8 */", 13)) {
		free(buf);
		return -EPROTO;
	}
	*text = buf;
	return 0;
}

/* Write @len bytes as dirfd/@name (flags: O_EXCL or O_TRUNC) and sync. */
static int write_file(int dirfd, const char *name, int flags, const char *text,
		      size_t len)
{
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0640);
	int err;

	if (fd < 0)
		return -errno;
	err = write_all(fd, text, len);
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

int metadata_start(const struct ctl *ctl, int dirfd, uint64_t gen)
{
	int err = read_module(ctl, &copy, &copy_len);

	if (err)
		return err;
	copy_gen = gen;
	return write_file(dirfd, "metadata", O_EXCL, copy, copy_len);
}

int metadata_follow(const struct ctl *ctl, int dirfd, uint64_t gen)
{
	size_t len;
	char *text;
	int err;

	/* Pairs with the release below: a newer copy_gen means it is on disk. */
	if (gen <= __atomic_load_n(&copy_gen, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&lock);
	if (gen <= copy_gen) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	err = read_module(ctl, &text, &len);
	if (err)
		goto unlock;
	/* The module's metadata only grows: no change, nothing to write. */
	if (len == copy_len && !memcmp(text, copy, len))
		goto done;
	err = write_file(dirfd, "metadata.new", O_TRUNC, text, len);
	if (!err && renameat(dirfd, "metadata.new", dirfd, "metadata") < 0)
		err = -errno;
	if (!err && fsync(dirfd) < 0)
		err = -errno;
	if (err)
		goto out;
done:
	free(copy);
	copy = text;
	copy_len = len;
	__atomic_store_n(&copy_gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return 0;
out:
	free(text);
unlock:
	pthread_mutex_unlock(&lock);
	return err;
}

char *metadata_snapshot(size_t *len)
{
	char *s;

	pthread_mutex_lock(&lock);
	s = copy ? malloc(copy_len + 1) : NULL;
	if (s) {
		memcpy(s, copy, copy_len);
		s[copy_len] = '\0';
		*len = copy_len;
	}
	pthread_mutex_unlock(&lock);
	return s;
}

void metadata_free(void)
{
	free(copy);
	copy = NULL;
	copy_len = 0;
}
