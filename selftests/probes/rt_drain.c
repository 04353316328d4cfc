// SPDX-License-Identifier: GPL-2.0
/*
 * rt_drain: copy every CPU buffer of ringtrace into a CTF trace directory
 * until tracing is off and everything is consumed, for the probe tests.
 *
 *   rt_drain [-d DEBUGFS_DIR] OUTDIR
 *
 * Start it after tracing_on is 1; it returns once tracing_on went to 0 and
 * every CPU's GET_SUBBUF said -ENODATA.  OUTDIR gets `metadata` and one
 * stream file per CPU (cpuN), which babeltrace2 reads as they are.  It
 * prints "rt_drain: N packets, B bytes" at the end.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/ringtrace.h>

#define MAX_CPUS 1024

struct cpu_buf {
	int cpu;
	int fd;
	int out;
	const unsigned char *map;
	size_t map_len;
	int done;
};

static const char *prog = "rt_drain";

/* Prints "rt_drain: <what>: <errno text>" and exits. */
static void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	exit(1);
}

static void __attribute__((format(printf, 3, 4)))
path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		die("%s", fmt);
	}
}

static void write_all(int fd, const void *p, size_t len, const char *what)
{
	const char *c = p;
	ssize_t n;

	while (len) {
		n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write %s", what);
		}
		c += n;
		len -= n;
	}
}

static void open_cpu(struct cpu_buf *b, const char *root, const char *out)
{
	struct ringtrace_meta *meta;
	char path[4096];
	size_t len;

	path_fmt(path, sizeof(path), "%s/cpu/%d/buffer", root, b->cpu);
	b->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0)
		die("open %s", path);
	meta = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, b->fd, 0);
	if (meta == MAP_FAILED)
		die("mmap meta of %s", path);
	len = meta->meta_page_size +
	      (size_t)meta->num_subbufs * meta->subbuf_size;
	munmap(meta, getpagesize());
	b->map = mmap(NULL, len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED)
		die("mmap %s", path);
	b->map_len = len;
	path_fmt(path, sizeof(path), "%s/cpu%d", out, b->cpu);
	b->out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (b->out < 0)
		die("create %s", path);
}

/* Copies what is complete; returns packets copied. */
static unsigned long drain_cpu(struct cpu_buf *b, unsigned long long *bytes)
{
	struct ringtrace_subbuf sb;
	unsigned long n = 0;

	for (;;) {
		memset(&sb, 0, sizeof(sb));
		sb.size = sizeof(sb);
		if (ioctl(b->fd, RINGTRACE_IOC_GET_SUBBUF, &sb)) {
			if (errno == EAGAIN)
				return n;
			if (errno == ENODATA) {
				b->done = 1;
				return n;
			}
			die("GET_SUBBUF on cpu %d", b->cpu);
		}
		if (sb.offset + sb.content_size > b->map_len) {
			errno = ERANGE;
			die("cpu %d: packet outside the mapping", b->cpu);
		}
		write_all(b->out, b->map + sb.offset, sb.content_size, "stream");
		*bytes += sb.content_size;
		n++;
		sb.size = sizeof(sb);
		sb.flags = 0;
		if (ioctl(b->fd, RINGTRACE_IOC_PUT_SUBBUF, &sb))
			die("PUT_SUBBUF on cpu %d", b->cpu);
	}
}

static void copy_metadata(const char *root, const char *out)
{
	char path[4096], buf[65536];
	int in, fd;
	ssize_t n;

	path_fmt(path, sizeof(path), "%s/metadata", root);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("open %s", path);
	path_fmt(path, sizeof(path), "%s/metadata", out);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("create %s", path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		write_all(fd, buf, n, "metadata");
	if (n < 0)
		die("read metadata");
	close(in);
	close(fd);
}

int main(int argc, char **argv)
{
	static struct cpu_buf bufs[MAX_CPUS];
	static struct pollfd pfd[MAX_CPUS];
	const char *debugfs = "/sys/kernel/debug", *out;
	unsigned long long bytes = 0;
	unsigned long packets = 0;
	int i, n = 0, left, opt;
	char root[4096], path[4096];
	struct dirent *de;
	DIR *dir;

	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd') {
			fprintf(stderr, "usage: %s [-d DEBUGFS] OUTDIR\n", prog);
			return 2;
		}
		debugfs = optarg;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s [-d DEBUGFS] OUTDIR\n", prog);
		return 2;
	}
	out = argv[optind];
	if (mkdir(out, 0755) && errno != EEXIST)
		die("mkdir %s", out);
	path_fmt(root, sizeof(root), "%s/ringtrace", debugfs);
	path_fmt(path, sizeof(path), "%s/cpu", root);
	dir = opendir(path);
	if (!dir)
		die("opendir %s", path);
	while ((de = readdir(dir)) && n < MAX_CPUS) {
		if (de->d_name[0] == '.')
			continue;
		bufs[n].cpu = atoi(de->d_name);
		open_cpu(&bufs[n], root, out);
		pfd[n].fd = bufs[n].fd;
		pfd[n].events = POLLIN;
		n++;
	}
	closedir(dir);

	for (left = n; left;) {
		/* A timeout too: stopping may complete no packet to wake us. */
		if (poll(pfd, n, 100) < 0 && errno != EINTR)
			die("poll");
		for (i = 0, left = 0; i < n; i++) {
			if (!bufs[i].done)
				packets += drain_cpu(&bufs[i], &bytes);
			left += !bufs[i].done;
		}
	}
	copy_metadata(root, out);
	for (i = 0; i < n; i++) {
		if (close(bufs[i].out))
			die("close stream of cpu %d", bufs[i].cpu);
		close(bufs[i].fd);
	}
	printf("%s: %d cpus, %lu packets, %llu bytes\n", prog, n, packets,
	       bytes);
	return 0;
}
