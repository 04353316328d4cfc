// SPDX-License-Identifier: GPL-2.0
/*
 * rt-markers: write COUNT ringtrace marker events from one CPU.
 *
 *   rt-markers [-f MARKER_FILE] [-s SIZE] [-r] [-d DELAY_US] CPU COUNT TAG
 *
 * Pins itself to CPU (sched_setaffinity) and writes COUNT times
 * "TAG cpu=<CPU> seq=<k>" (k = 0..COUNT-1), padded to SIZE bytes when SIZE
 * is larger: a space, then '.' or, with -r, pseudo-random printable
 * characters (no space, '"' or '\\', so babeltrace2 prints them unescaped)
 * that zstd cannot squeeze much.  One write() per marker, so that each becomes one
 * ringtrace_marker event on CPU.  The tests read the payloads back from the
 * recorded trace.  Exit 1 on any failed or short write.
 *
 *   rt-markers [-f MARKER_FILE] -F RECORDS CPU
 *
 * Replay: write, pinned to CPU, the payload of every record of RECORDS
 * (u16 cpu, u16 length, payload; see ftrace2rt.py) whose cpu is CPU, in
 * file order, one marker each.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ringtrace.h>

static void usage(void)
{
	fprintf(stderr, "usage: rt-markers [-f MARKER_FILE] [-s SIZE] [-r] [-d DELAY_US] CPU COUNT TAG\n"
			"       rt-markers [-f MARKER_FILE] -F RECORDS CPU\n");
	exit(2);
}

/* Replay the records of @cpu from @path; returns the exit status. */
static int replay(int fd, const char *path, unsigned long cpu)
{
	unsigned char hdr[4], buf[65536];
	unsigned long n = 0;
	size_t len;
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "rt-markers: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (fread(hdr, sizeof(hdr), 1, f) == 1) {
		len = hdr[2] | (size_t)hdr[3] << 8;
		if (fread(buf, 1, len, f) != len) {
			fprintf(stderr, "rt-markers: %s: truncated record\n", path);
			return 1;
		}
		if ((hdr[0] | (unsigned long)hdr[1] << 8) != cpu || !len)
			continue;
		if (len > RINGTRACE_MARKER_MAX || write(fd, buf, len) != (ssize_t)len) {
			fprintf(stderr, "rt-markers: CPU %lu: record %lu: %s\n",
				cpu, n, strerror(errno));
			return 1;
		}
		n++;
	}
	fclose(f);
	printf("rt-markers: CPU %lu: %lu records replayed\n", cpu, n);
	return 0;
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !*s || *end)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	const char *file = "/sys/kernel/debug/ringtrace/marker";
	const char *records = NULL;
	unsigned long cpu, count, size = 0, delay = 0, k;
	char buf[RINGTRACE_MARKER_MAX];
	unsigned long long x;
	bool random = false;
	cpu_set_t set;
	int c, fd, len;

	while ((c = getopt(argc, argv, "f:F:s:rd:")) != -1) {
		switch (c) {
		case 'f':
			file = optarg;
			break;
		case 'F':
			records = optarg;
			break;
		case 's':
			size = number(optarg);
			break;
		case 'r':
			random = true;
			break;
		case 'd':
			delay = number(optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != (records ? 1 : 3))
		usage();
	cpu = number(argv[optind]);
	count = records ? 0 : number(argv[optind + 1]);
	if (size > sizeof(buf))
		usage();

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "rt-markers: CPU %lu: sched_setaffinity: %s\n",
			cpu, strerror(errno));
		return 1;
	}
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "rt-markers: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (records)
		return replay(fd, records, cpu);
	for (k = 0; k < count; k++) {
		len = snprintf(buf, sizeof(buf), "%s cpu=%lu seq=%lu",
			       argv[optind + 2], cpu, k);
		if (len < 0 || (size_t)len >= sizeof(buf)) {
			fprintf(stderr, "rt-markers: TAG too long\n");
			return 1;
		}
		/* A space ends the seq number before any padding. */
		if ((unsigned long)len < size)
			buf[len++] = ' ';
		if ((unsigned long)len < size && !random) {
			memset(buf + len, '.', size - (unsigned long)len);
			len = (int)size;
		}
		/* xorshift64, seeded per marker: printable, never '"' or '\\'. */
		x = (cpu + 1) * 0x9e3779b97f4a7c15ULL ^ (k + 1);
		for (; random && (unsigned long)len < size; len++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[len] = (char)('#' + x % ('[' - '#'));
		}
		if (write(fd, buf, (size_t)len) != len) {
			fprintf(stderr, "rt-markers: CPU %lu: marker %lu: %s\n",
				cpu, k, strerror(errno));
			return 1;
		}
		if (sched_getcpu() != (int)cpu) {
			fprintf(stderr, "rt-markers: running on CPU %d, not %lu\n",
				sched_getcpu(), cpu);
			return 1;
		}
		if (delay)
			usleep(delay);
	}
	close(fd);
	return 0;
}
