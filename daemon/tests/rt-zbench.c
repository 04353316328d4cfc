// SPDX-License-Identifier: GPL-2.0
/*
 * rt-zbench: how ringtraced's packers compress recorded packets.
 *
 *   rt-zbench [-f FRAME[,FRAME...]] [-r ROUNDS] [-d DIR] LEVEL[,LEVEL...] STREAM...
 *
 * STREAM files are decompressed ringtrace streams (whole CTF packets, as
 * `ringtrace unpack` writes them).  Each is written as a stored chunk into
 * DIR (default a new directory under /dev/shm), exactly as a drain thread
 * writes it, then packed at every LEVEL and packed-frame size FRAME
 * (bytes, suffix K/M; default the packers' own) by lib/chunk.c, the code
 * the packers run.  For each it prints the packets' bytes, the packed
 * bytes, the ratio and the packer's speed in MB of packets per CPU second
 * (the best of ROUNDS, default 3), all streams together; every packed
 * chunk is decompressed and compared with the packets.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include <linux/ringtrace.h>

#include "../../lib/chunk.h"
#include "../../lib/parse.h"

struct input {
	uint8_t *data;
	size_t len;
	char name[CHUNK_NAME_MAX];
};

static struct input *inputs;
static int ninputs;
static int dirfd = -1;

__attribute__((noreturn)) static void fail(const char *what, int err)
{
	fprintf(stderr, "rt-zbench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Read STREAM and write it as stored chunk number @i. */
static void load(struct input *in, const char *path, int i)
{
	struct ringtrace_packet_header h;
	struct chunk_stored_hdrs hdrs;
	struct iovec *iov;
	struct stat st;
	size_t off = 0, n;
	int fd = open(path, O_RDONLY), out;

	if (fd < 0 || fstat(fd, &st) < 0)
		fail(path, errno);
	in->len = (size_t)st.st_size;
	in->data = malloc(in->len + 1);
	if (!in->data || read(fd, in->data, in->len) != (ssize_t)in->len)
		fail(path, errno ? errno : EIO);
	close(fd);
	chunk_name(in->name, sizeof(in->name), (unsigned int)i, 1);
	out = openat(dirfd, in->name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		fail(in->name, errno);
	while (in->len - off >= sizeof(h)) {
		memcpy(&h, in->data + off, sizeof(h));
		n = h.packet_size / 8;
		if (h.magic != RINGTRACE_CTF_MAGIC || n < sizeof(h) ||
		    n > in->len - off) {
			fprintf(stderr, "rt-zbench: %s: bad packet at %zu\n", path, off);
			exit(1);
		}
		iov = calloc(chunk_stored_iovcnt(n), sizeof(*iov));
		hdrs.blocks = calloc(chunk_stored_iovcnt(n), 3);
		if (!iov || !hdrs.blocks)
			fail("calloc", ENOMEM);
		if (writev(out, iov, (int)chunk_stored_iov(iov, &hdrs,
							   in->data + off, n)) < 0)
			fail(in->name, errno);
		free(iov);
		free(hdrs.blocks);
		off += n;
	}
	in->len = off;
	close(out);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The packed chunk decompresses to exactly the packets. */
static void verify(const struct input *in, const char *tmp)
{
	struct stat st;
	uint8_t *z, *d = malloc(in->len + 1);
	size_t got;
	int fd = openat(dirfd, tmp, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0 || !d)
		fail(tmp, errno);
	z = malloc((size_t)st.st_size);
	if (!z || read(fd, z, (size_t)st.st_size) != st.st_size)
		fail(tmp, EIO);
	close(fd);
	got = ZSTD_decompress(d, in->len + 1, z, (size_t)st.st_size);
	if (ZSTD_isError(got) || got != in->len || memcmp(d, in->data, in->len)) {
		fprintf(stderr, "rt-zbench: %s: does not decompress to its packets\n", tmp);
		exit(1);
	}
	free(z);
	free(d);
}

static void run(int level, size_t frame, int rounds)
{
	struct chunk_packer *p = chunk_packer_new(level);
	struct chunk_pack_result res;
	uint64_t in = 0, out = 0;
	double best = 0;
	char tmp[64];
	int r, i, err;

	if (!p)
		fail("chunk_packer_new", ENOMEM);
	chunk_packer_set_frame_bytes(p, frame);
	for (r = 0; r < rounds; r++) {
		double t = cpu_s();

		in = out = 0;
		for (i = 0; i < ninputs; i++) {
			snprintf(tmp, sizeof(tmp), "packed-%d", i);
			err = chunk_pack(p, dirfd, inputs[i].name, tmp, NULL, &res);
			if (err)
				fail(inputs[i].name, -err);
			in += res.content;
			out += res.out;
			if (!r)
				verify(&inputs[i], tmp);
		}
		t = cpu_s() - t;
		if (!r || t < best)
			best = t;
	}
	printf("%6d %9zu %12llu %12llu %7.3f %9.1f\n", level, frame,
	       (unsigned long long)in, (unsigned long long)out,
	       out ? (double)in / (double)out : 0.0,
	       best > 0 ? (double)in / best / 1e6 : 0.0);
	chunk_packer_free(p);
}

int main(int argc, char **argv)
{
	char dir[] = "/dev/shm/rt-zbench.XXXXXX", *levels, *frames = NULL, *tok, *save;
	const char *d = NULL;
	int c, i, rounds = 3;

	while ((c = getopt(argc, argv, "f:r:d:")) != -1) {
		switch (c) {
		case 'f': frames = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		case 'd': d = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind < 2 || rounds < 1)
		goto usage;
	if (!d && !(d = mkdtemp(dir)))
		fail("mkdtemp", errno);
	dirfd = open(d, O_RDONLY | O_DIRECTORY);
	if (dirfd < 0)
		fail(d, errno);
	levels = argv[optind++];
	ninputs = argc - optind;
	inputs = calloc((size_t)ninputs, sizeof(*inputs));
	for (i = 0; i < ninputs; i++)
		load(&inputs[i], argv[optind + i], i);
	printf(" level     frame     bytes in    bytes out   ratio      MB/s\n");
	for (tok = strtok_r(levels, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *f = frames ? strdup(frames) : NULL, *fs = NULL, *ft;

		if (!f) {
			run(atoi(tok), CHUNK_PACK_FRAME_BYTES, rounds);
			continue;
		}
		for (ft = strtok_r(f, ",", &fs); ft; ft = strtok_r(NULL, ",", &fs)) {
			uint64_t bytes;

			if (!parse_size(ft, &bytes))
				goto usage;
			run(atoi(tok), (size_t)bytes, rounds);
		}
		free(f);
	}
	printf("rt-zbench: chunks in %s\n", d);
	return 0;
usage:
	fprintf(stderr, "usage: rt-zbench [-f FRAME[,FRAME...]] [-r ROUNDS] [-d DIR] LEVEL[,LEVEL...] STREAM...\n");
	return 2;
}
