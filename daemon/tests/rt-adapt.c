// SPDX-License-Identifier: GPL-2.0
/*
 * rt-adapt: host tests of ringtraced's adaptive compression level
 * (adapt.c) and of level changes in its zstd streams (stream.c).
 *
 *   rt-adapt [DIR]     DIR for the stream files (default: a new directory
 *                      in /var/tmp, removed at the end)
 *
 * Prints one "ok N - ..." / "not ok N - ..." line per check and ends with
 * "adapt: N passed, M failed"; the exit status is 1 if any failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "../ringtraced.h"

#define ROOM		(3 * 262144ULL)	/* 4 sub-buffers of 256 KiB */
#define PACKET		65536
#define S		RT_LEVEL_STORE

static unsigned int passed, failed;

static void check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %u - ", ok ? "ok" : "not ok", passed + failed + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (ok)
		passed++;
	else
		failed++;
}

/* Feed @n packets with @waiting bytes behind each; return the levels. */
static void run(struct adapt *a, uint64_t waiting, int n, int *levels)
{
	int i;

	for (i = 0; i < n; i++)
		levels[i] = adapt_level(a, waiting, ROOM, 0);
}

static int same(const int *got, const int *want, int n)
{
	return !memcmp(got, want, (size_t)n * sizeof(*got));
}

static void test_ladder(void)
{
	static const int down[] = { -1, -4, -16, -64, -256, S, S };
	static const int up[] = { -256, -64, -16, -4, -1, 1, 1 };
	static const int odd_up[] = { -256, -64, -16, -4, -1, 1 };
	struct adapt a;
	int got[8];

	adapt_init(&a, 1, S, 0);
	check(adapt_level(&a, ROOM / 2 - 1, ROOM, 0) == 1,
	      "less than half the room waiting: stays at --level");
	run(&a, ROOM / 2, 7, got);
	check(same(got, down, 7),
	      "half the room waiting: one step faster per packet, 1 -> store (got %d %d %d %d %d %d %d)",
	      got[0], got[1], got[2], got[3], got[4], got[5], got[6]);
	run(&a, ROOM / 3, 2, got);
	check(got[0] == S && got[1] == S,
	      "a third of the room waiting: the level stays");
	run(&a, 0, 7, got);
	check(same(got, up, 7),
	      "nothing waiting: one step back per packet, store -> 1 (got %d %d %d %d %d %d %d)",
	      got[0], got[1], got[2], got[3], got[4], got[5], got[6]);

	adapt_init(&a, 1, S, 0);
	check(adapt_level(&a, ROOM, ROOM, 0) == S,
	      "the room full: the fastest level at once");
	check(adapt_level(&a, ROOM + 12345, ROOM, 0) == S,
	      "more than the room (an open packet too): the fastest level");

	adapt_init(&a, 1, S, 500);
	check(adapt_level(&a, 0, ROOM, 500) == 1,
	      "losses from before the daemon started do not count");
	check(adapt_level(&a, 0, ROOM, 501) == S,
	      "an event lost since the last packet: the fastest level at once, whatever the backlog");
	check(adapt_level(&a, 0, ROOM, 501) == -256,
	      "no new loss and nothing waiting: one step back");

	adapt_init(&a, 1, -1000, 0);
	run(&a, ROOM, 1, got);
	run(&a, 0, 6, got);
	check(same(got, odd_up, 6),
	      "a --min-level off the ladder (-1000) is left by the ladder's steps");

	adapt_init(&a, 9, S, 0);
	check(adapt_level(&a, ROOM / 2, ROOM, 0) == 1 &&
	      adapt_level(&a, ROOM / 2, ROOM, 0) == -1,
	      "--level 9: the first step faster is level 1, then -1");
	check(adapt_level(&a, 0, ROOM, 0) == 1 && adapt_level(&a, 0, ROOM, 0) == 9,
	      "--level 9: back from -1 through 1 to 9");

	adapt_init(&a, -5, -100, 0);
	run(&a, ROOM / 2, 4, got);
	check(got[0] == -16 && got[1] == -64 && got[2] == -100 &&
	      got[3] == -100,
	      "--level -5 --min-level -100: -16, -64, then clamped at -100");
	run(&a, 0, 4, got);
	check(got[0] == -64 && got[1] == -16 && got[2] == -5 && got[3] == -5,
	      "--level -5: back up, never above --level");

	adapt_init(&a, S, S, 0);
	check(adapt_level(&a, ROOM, ROOM, 0) == S &&
	      adapt_level(&a, 0, ROOM, 0) == S,
	      "--level store: always store");
	adapt_init(&a, 3, 3, 0);
	check(adapt_level(&a, ROOM, ROOM, 0) == 3 &&
	      adapt_level(&a, ROOM / 2, ROOM, 0) == 3,
	      "--min-level equal to --level: the level never changes");
	adapt_init(&a, 3, 7, 0);
	check(adapt_level(&a, ROOM, ROOM, 0) == 3,
	      "a --min-level above --level is taken as --level");
}

/* Trace-like packets: records with small counters and repeated fields. */
static void fill_packet(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i + 16 <= len; i += 16) {
		uint32_t rec[4] = { seed + (uint32_t)i / 16, 0x1234,
				    (uint32_t)(i / 64) & 0xff, 7 };

		memcpy(p + i, rec, sizeof(rec));
	}
}

static int read_file(int dirfd, const char *name, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	*len = (size_t)st.st_size;
	*data = malloc(*len ? *len : 1);
	if (!*data || read(fd, *data, *len) != (ssize_t)*len) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void test_stream(const char *dir)
{
	static const int levels[] = { 1, 1, S, S, -4, 1, 1 };
	enum { N = sizeof(levels) / sizeof(levels[0]) };
	struct stream_config cfg = { .level = 1 };
	uint64_t out_at[N + 1];
	uint8_t *in, *file, *dec;
	size_t flen, dlen, cap = (size_t)N * PACKET;
	struct stream s;
	int dirfd, i, err, bad = 0;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	in = malloc(cap);
	dec = malloc(cap + 1);
	if (dirfd < 0 || !in || !dec || stream_init(PACKET) ||
	    stream_open(&s, &cfg, dirfd, 0)) {
		check(0, "stream set-up in %s: %s", dir, strerror(errno));
		return;
	}
	for (i = 0; i < N; i++) {
		fill_packet(in + (size_t)i * PACKET, PACKET, 1000u * (unsigned int)i);
		out_at[i] = s.bytes_out;
		err = stream_set_level(&s, levels[i]);
		if (!err)
			err = stream_packet(&s, in + (size_t)i * PACKET, PACKET);
		if (err)
			bad = err;
	}
	out_at[N] = s.bytes_out;
	check(!bad, "7 packets written at levels 1 1 store store -4 1 1 (%s)",
	      bad ? strerror(-bad) : "no error");
	check(s.packets_faster == 3 && s.lowest_level == S,
	      "the stream counts 3 packets below --level, lowest store (got %llu, %d)",
	      (unsigned long long)s.packets_faster, s.lowest_level);
	/*
	 * Stored: the end of the level-1 frame (3 bytes), a 9-byte frame
	 * header and one 3-byte raw block header around the 64 KiB; the
	 * next stored packet the same without the 3 bytes before it.
	 */
	check(out_at[3] - out_at[2] == PACKET + 15 &&
	      out_at[4] - out_at[3] == PACKET + 12,
	      "a stored packet is its bytes plus 12 (+3 ending the frame before) (%llu, %llu)",
	      (unsigned long long)(out_at[3] - out_at[2] - PACKET),
	      (unsigned long long)(out_at[4] - out_at[3] - PACKET));
	/*
	 * The level took effect: -4 and 1 compress (a level set mid-frame
	 * would be ignored by zstd, which is why stream_set_level() ends the
	 * frame), and level 1 more than -4.
	 */
	check(out_at[6] - out_at[5] < out_at[5] - out_at[4] &&
	      out_at[5] - out_at[4] < PACKET / 4,
	      "after store, -4 and then 1 compress again, 1 more (%llu, %llu bytes)",
	      (unsigned long long)(out_at[5] - out_at[4]),
	      (unsigned long long)(out_at[6] - out_at[5]));
	stream_close(&s);

	if (read_file(dirfd, "cpu0.zst", &file, &flen)) {
		check(0, "read %s/cpu0.zst: %s", dir, strerror(errno));
		return;
	}
	dlen = ZSTD_decompress(dec, cap + 1, file, flen);
	check(!ZSTD_isError(dlen) && dlen == cap && !memcmp(dec, in, cap),
	      "the file (%zu bytes, several frames, stored ones too) decompresses to the 7 packets exactly",
	      flen);
	free(file);
	unlinkat(dirfd, "cpu0.zst", 0);
	close(dirfd);
	free(in);
	free(dec);
}

/* Packets zstd cannot shrink at any level: whatever the level, ~PACKET bytes. */
static void fill_random(uint8_t *p, size_t len, uint64_t *x)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		memcpy(p + i, x, 8);
	}
}

/*
 * The file system refuses a packet (EFBIG from a file size limit, like
 * ENOSPC) right after a level change: the file still ends with complete
 * frames holding exactly the packets written before, and stays so when
 * the stream is closed.
 */
static void test_salvage(const char *dir)
{
	enum { N = 6 };
	struct stream_config cfg = { .level = 1 };
	struct rlimit old, lim;
	uint8_t *in, *file, *dec;
	size_t flen, dlen, cap = (size_t)N * PACKET;
	uint64_t x = 88172645463325252ULL;
	int dirfd, i, err, failed_at = -1, fail_err = 0;
	struct stream s;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	in = malloc(cap);
	dec = malloc(cap + 1);
	if (dirfd < 0 || !in || !dec || stream_init(PACKET) ||
	    stream_open(&s, &cfg, dirfd, 1) || getrlimit(RLIMIT_FSIZE, &old)) {
		check(0, "salvage set-up in %s: %s", dir, strerror(errno));
		return;
	}
	fill_random(in, cap, &x);
	/* Room for 3 packets and their frame headers and ends, not 4. */
	lim = old;
	lim.rlim_cur = 3 * (PACKET + 64) + 200;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim)) {
		check(0, "setrlimit: %s", strerror(errno));
		return;
	}
	for (i = 0; i < N && failed_at < 0; i++) {
		err = stream_set_level(&s, i % 2 ? S : 1);
		if (!err)
			err = stream_packet(&s, in + (size_t)i * PACKET, PACKET);
		if (err) {
			failed_at = i;
			fail_err = err;
		}
	}
	check(failed_at == 3 && fail_err == -EFBIG,
	      "the 4th packet (stored, after a level-1 frame) fails with EFBIG (at %d: %s)",
	      failed_at, strerror(-fail_err));
	check(s.packets == 3 && s.packets_unsaved == 1,
	      "3 packets counted written, 1 unsaved (%llu, %llu)",
	      (unsigned long long)s.packets,
	      (unsigned long long)s.packets_unsaved);
	stream_close(&s);
	setrlimit(RLIMIT_FSIZE, &old);

	if (read_file(dirfd, "cpu1.zst", &file, &flen)) {
		check(0, "read %s/cpu1.zst: %s", dir, strerror(errno));
		return;
	}
	dlen = ZSTD_decompress(dec, cap + 1, file, flen);
	check(!ZSTD_isError(dlen) && dlen == 3 * PACKET &&
	      !memcmp(dec, in, 3 * PACKET),
	      "the file (%zu bytes) is complete frames holding exactly the 3 packets (%s)",
	      flen, ZSTD_isError(dlen) ? ZSTD_getErrorName(dlen) : "decoded");
	free(file);
	unlinkat(dirfd, "cpu1.zst", 0);
	close(dirfd);
	free(in);
	free(dec);
}

/* A stored packet larger than a block: 3 raw blocks, the last one short. */
static void test_store_blocks(const char *dir)
{
	enum { BIG = 300000 };
	struct stream_config cfg = { .level = RT_LEVEL_STORE };
	uint64_t x = 2463534242ULL;
	uint8_t *in, *file, *dec;
	size_t flen, dlen;
	struct stream s;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	in = malloc(BIG);
	dec = malloc(BIG + 1);
	if (dirfd < 0 || !in || !dec || stream_init(BIG) ||
	    stream_open(&s, &cfg, dirfd, 2)) {
		check(0, "store set-up in %s: %s", dir, strerror(errno));
		return;
	}
	fill_random(in, BIG, &x);
	err = stream_packet(&s, in, BIG);
	check(!err && s.bytes_out == BIG + 9 + 3 * 3 && !s.packets_faster,
	      "--level store: a %d-byte packet is one frame of 3 raw blocks (%llu bytes out, %llu faster)",
	      BIG, (unsigned long long)s.bytes_out,
	      (unsigned long long)s.packets_faster);
	err = stream_packet(&s, in, 0);
	check(!err && s.bytes_out == BIG + 9 + 3 * 3 + 9 + 3,
	      "an empty packet is a frame with one empty last block (%llu bytes out)",
	      (unsigned long long)s.bytes_out);
	stream_close(&s);
	if (read_file(dirfd, "cpu2.zst", &file, &flen)) {
		check(0, "read %s/cpu2.zst: %s", dir, strerror(errno));
		return;
	}
	dlen = ZSTD_decompress(dec, BIG + 1, file, flen);
	check(!ZSTD_isError(dlen) && dlen == BIG && !memcmp(dec, in, BIG) &&
	      ZSTD_getFrameContentSize(file, flen) == BIG,
	      "libzstd reads both back exactly, content size in the frame header");
	free(file);
	unlinkat(dirfd, "cpu2.zst", 0);
	close(dirfd);
	free(in);
	free(dec);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/var/tmp/rt-adapt.XXXXXX";
	const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpl);

	if (!dir) {
		perror("rt-adapt: mkdtemp");
		return 1;
	}
	test_ladder();
	test_stream(dir);
	test_salvage(dir);
	test_store_blocks(dir);
	if (argc <= 1)
		rmdir(dir);
	printf("adapt: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
