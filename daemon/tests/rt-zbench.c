// SPDX-License-Identifier: GPL-2.0
/*
 * rt-zbench: compression levels of ringtraced on recorded packets.
 *
 *   rt-zbench [-e PACKETS] [-d DIR] LEVEL[,LEVEL...] STREAM...
 *
 * A LEVEL of "store" is the daemon's uncompressed raw-block frames.
 *
 * STREAM files are decompressed ringtrace streams (whole CTF packets, as
 * `ringtrace unpack` writes them).  For each level, every stream is written
 * again through the daemon's own stream.c (one zstd context per stream,
 * ZSTD_e_flush per packet, frame ended every PACKETS packets and at the end)
 * into DIR (default a new directory in /dev/shm), and rt-zbench prints
 * bytes in, bytes out, ratio, and the compressor's throughput in MB/s of
 * input per CPU second (best of 3 rounds).  The same is done with
 * ZSTD_e_continue per packet (what the daemon would do without its per-
 * packet crash guarantee) to show what that guarantee costs.  Every output
 * is decompressed and compared with its input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../ringtraced.h"

struct input {
	uint8_t *data;
	size_t len;
	size_t *offs;		/* packet starts, then len */
	size_t npackets;
};

static struct input *inputs;
static int ninputs;

static void fail(const char *what)
{
	fprintf(stderr, "rt-zbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void load(struct input *in, const char *path)
{
	struct ringtrace_packet_header h;
	struct stat st;
	size_t off = 0, cap = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		fail(path);
	in->len = (size_t)st.st_size;
	in->data = malloc(in->len + 1);
	if (!in->data || read(fd, in->data, in->len) != (ssize_t)in->len)
		fail(path);
	close(fd);
	while (in->len - off >= sizeof(h)) {
		memcpy(&h, in->data + off, sizeof(h));
		if (h.magic != RINGTRACE_CTF_MAGIC || h.packet_size / 8 < sizeof(h) ||
		    h.packet_size / 8 > in->len - off) {
			fprintf(stderr, "rt-zbench: %s: bad packet at %zu\n", path, off);
			exit(1);
		}
		if (in->npackets + 2 > cap) {
			cap = cap ? 2 * cap : 256;
			in->offs = realloc(in->offs, cap * sizeof(*in->offs));
			if (!in->offs)
				fail("realloc");
		}
		in->offs[in->npackets++] = off;
		off += h.packet_size / 8;
	}
	in->len = off;
	in->offs[in->npackets] = off;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Decompress @path and compare it with @in. */
static void verify(int dirfd, const char *name, const struct input *in)
{
	int fd = openat(dirfd, name, O_RDONLY);
	struct stat st;
	uint8_t *z, *out;
	size_t n;

	if (fd < 0 || fstat(fd, &st) < 0)
		fail(name);
	z = malloc((size_t)st.st_size + 1);
	out = malloc(in->len + 1);
	if (!z || !out || read(fd, z, (size_t)st.st_size) != st.st_size)
		fail(name);
	close(fd);
	n = ZSTD_decompress(out, in->len + 1, z, (size_t)st.st_size);
	if (ZSTD_isError(n) || n != in->len || memcmp(out, in->data, n)) {
		fprintf(stderr, "rt-zbench: %s does not decompress to its input\n", name);
		exit(1);
	}
	free(z);
	free(out);
}

/* The daemon's path: stream.c. */
static double run_daemon(int dirfd, int level, size_t every, uint64_t *out)
{
	struct stream_config cfg = { .level = level };
	struct stream s;
	char name[64];
	double t, best = 1e30;
	int i, err, round;

	for (round = 0; round < 3; round++) {
		*out = 0;
		t = 0;
		for (i = 0; i < ninputs; i++) {
			struct input *in = &inputs[i];
			double t0;

			snprintf(name, sizeof(name), "cpu%d.zst", i);
			unlinkat(dirfd, name, 0);
			err = stream_open(&s, &cfg, dirfd, (unsigned int)i);
			if (err) {
				errno = -err;
				fail("stream_open");
			}
			t0 = cpu_seconds();
			for (size_t p = 0; p < in->npackets; p++) {
				err = stream_packet(&s, in->data + in->offs[p],
						    in->offs[p + 1] - in->offs[p]);
				if (!err && every && (p + 1) % every == 0)
					err = stream_end_frame(&s);
				if (err) {
					errno = -err;
					fail("stream_packet");
				}
			}
			err = stream_end_frame(&s);
			t += cpu_seconds() - t0;
			if (err) {
				errno = -err;
				fail("stream_end_frame");
			}
			*out += s.bytes_out;
			stream_close(&s);
			verify(dirfd, name, in);
		}
		if (t < best)
			best = t;
	}
	return best;
}

/* Without the per-packet flush: ZSTD_e_continue, written as it comes. */
static double run_continue(int dirfd, int level, size_t every, uint64_t *out)
{
	size_t cap = ZSTD_CStreamOutSize();
	uint8_t *buf = malloc(cap);
	double t, best = 1e30;
	char name[64];
	int i, round;

	for (round = 0; round < 3; round++) {
		*out = 0;
		t = 0;
		for (i = 0; i < ninputs; i++) {
			struct input *in = &inputs[i];
			ZSTD_CCtx *cctx = ZSTD_createCCtx();
			double t0;
			int fd;

			snprintf(name, sizeof(name), "cont%d.zst", i);
			fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0 || !cctx || !buf)
				fail(name);
			ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
			t0 = cpu_seconds();
			for (size_t p = 0; p <= in->npackets; p++) {
				bool last = p == in->npackets;
				bool end = last || (every && (p + 1) % every == 0);
				ZSTD_inBuffer zin = { in->data + (last ? in->len : in->offs[p]),
					last ? 0 : in->offs[p + 1] - in->offs[p], 0 };
				size_t left;

				do {
					ZSTD_outBuffer zo = { buf, cap, 0 };

					left = ZSTD_compressStream2(cctx, &zo, &zin,
								    end ? ZSTD_e_end : ZSTD_e_continue);
					if (ZSTD_isError(left))
						fail("ZSTD_compressStream2");
					if (zo.pos && write(fd, buf, zo.pos) != (ssize_t)zo.pos)
						fail(name);
					*out += zo.pos;
				} while (end ? left != 0 : zin.pos < zin.size);
			}
			t += cpu_seconds() - t0;
			close(fd);
			ZSTD_freeCCtx(cctx);
			verify(dirfd, name, in);
			unlinkat(dirfd, name, 0);
		}
		if (t < best)
			best = t;
	}
	free(buf);
	return best;
}

int main(int argc, char **argv)
{
	char tmpl[] = "/dev/shm/rt-zbench.XXXXXX";
	const char *dir = NULL;
	size_t every = 0, maxp = 0, packets = 0;
	uint64_t in = 0, out_d, out_c;
	char *levels, *tok;
	int c, dirfd, i;

	while ((c = getopt(argc, argv, "e:d:")) != -1) {
		switch (c) {
		case 'e':
			every = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind < 2)
		goto usage;
	levels = argv[optind++];
	ninputs = argc - optind;
	inputs = calloc((size_t)ninputs, sizeof(*inputs));
	for (i = 0; i < ninputs; i++) {
		load(&inputs[i], argv[optind + i]);
		in += inputs[i].len;
		packets += inputs[i].npackets;
		for (size_t p = 0; p < inputs[i].npackets; p++)
			if (inputs[i].offs[p + 1] - inputs[i].offs[p] > maxp)
				maxp = inputs[i].offs[p + 1] - inputs[i].offs[p];
	}
	if (!dir) {
		dir = mkdtemp(tmpl);
		if (!dir)
			fail("mkdtemp");
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dirfd < 0 || stream_init(maxp))
		fail(dir);

	printf("%zu packets, %llu bytes in %d streams; frame ended every %zu packets%s\n",
	       packets, (unsigned long long)in, ninputs, every,
	       every ? "" : " (only at the end)");
	printf("%6s %12s %8s %10s | %12s %8s %10s\n", "level", "flush/pkt", "ratio",
	       "MB/s", "continue", "ratio", "MB/s");
	for (tok = strtok(levels, ","); tok; tok = strtok(NULL, ",")) {
		/* "store": the daemon's raw frames; nothing to continue. */
		bool store = !strcmp(tok, "store");
		int level = store ? RT_LEVEL_STORE : atoi(tok);
		double td = run_daemon(dirfd, level, every, &out_d);
		double tc;

		printf("%6s %12llu %8.2f %10.0f | ", tok,
		       (unsigned long long)out_d, (double)in / out_d, in / td / 1e6);
		if (store) {
			printf("%12s %8s %10s\n", "-", "-", "-");
			continue;
		}
		tc = run_continue(dirfd, level, every, &out_c);
		printf("%12llu %8.2f %10.0f\n", (unsigned long long)out_c,
		       (double)in / out_c, in / tc / 1e6);
	}
	for (i = 0; i < ninputs; i++) {
		char name[64];

		snprintf(name, sizeof(name), "cpu%d.zst", i);
		unlinkat(dirfd, name, 0);
	}
	if (dir == tmpl)
		rmdir(tmpl);
	return 0;
usage:
	fprintf(stderr, "usage: rt-zbench [-e PACKETS] [-d DIR] LEVEL[,LEVEL...] STREAM...\n");
	return 2;
}
