/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rt_files.h - reading and writing whole small files (control files,
 * sysfs, /proc), for the harness selftests (ringtrace_test.h), rt_fuzz
 * and faultinject alike: no harness here.
 */
#ifndef RT_FILES_H
#define RT_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

/* One write() of @len bytes: its return value, or -errno. */
static inline ssize_t rt_write_file(const char *path, const void *buf,
				    size_t len)
{
	ssize_t ret;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, buf, len);
	if (ret < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Read a whole file into a NUL-terminated buffer: length or -errno. */
static inline ssize_t rt_read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		len += n;
	}
	buf[len] = '\0';
	close(fd);
	return len;
}

/* Read a file of any size into a malloc()ed string, or NULL. */
static inline char *rt_slurp(const char *path)
{
	size_t size = 1 << 16, len = 0;
	char *buf = malloc(size), *nbuf;
	ssize_t n;
	int fd;

	if (!buf)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto err;
	for (;;) {
		if (len + 1 >= size) {
			size *= 2;
			nbuf = realloc(buf, size);
			if (!nbuf)
				goto err_close;
			buf = nbuf;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0)
			goto err_close;
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
err_close:
	close(fd);
err:
	free(buf);
	return NULL;
}

#endif /* RT_FILES_H */
