// SPDX-License-Identifier: GPL-2.0
/*
 * In-process mutation fuzzer for tools/lib (built with ASan + UBSan by
 * `make -C tools asan`).
 *
 *   fuzz_decoder TRACE_DIR WORK_DIR ITERATIONS [SEED]
 *
 * Each iteration copies TRACE_DIR's files into WORK_DIR with one of them
 * mutated (bit flips, special values, cuts, insertions, or a packet header
 * field overwritten), then opens the trace and decodes every stream to the
 * end, printing every event to /dev/null.  Decoding errors are expected;
 * any memory or undefined-behaviour error aborts through the sanitizers.
 * Half of the iterations also feed a mutated metadata text straight to
 * rt_metadata_parse().
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/rtdecode.h"

struct file {
	char *name;
	unsigned char *data;
	size_t len;
};

static struct file files[256];
static unsigned int nr_files;
static unsigned long long rng_state;

static unsigned int rnd(unsigned int n)
{
	/* xorshift64*: deterministic per seed, good enough for mutations */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (unsigned int)((rng_state * 2685821657736338717ULL) >> 33) % (n ? n : 1);
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "fuzz_decoder: %s %s: %s\n", what, path, strerror(errno));
	exit(2);
}

static void load(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		fail("cannot open", dir);
	while ((de = readdir(d))) {
		struct file *f;
		char *path;
		FILE *fp;
		long len;

		if (de->d_name[0] == '.' || nr_files == 256)
			continue;
		f = &files[nr_files++];
		f->name = strdup(de->d_name);
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0 || !f->name)
			fail("out of memory", dir);
		fp = fopen(path, "rb");
		if (!fp || fseek(fp, 0, SEEK_END))
			fail("cannot read", path);
		len = ftell(fp);
		if (len < 0)
			fail("cannot read", path);
		rewind(fp);
		f->data = malloc(len + 1);
		if (!f->data || fread(f->data, 1, len, fp) != (size_t)len)
			fail("cannot read", path);
		f->len = len;
		fclose(fp);
		free(path);
	}
	closedir(d);
}

static void put(const char *dir, const struct file *f, const unsigned char *data,
		size_t len)
{
	char *path;
	FILE *fp;

	if (asprintf(&path, "%s/%s", dir, f->name) < 0)
		fail("out of memory", dir);
	fp = fopen(path, "wb");
	if (!fp || fwrite(data, 1, len, fp) != len || fclose(fp))
		fail("cannot write", path);
	free(path);
}

/* Mutates buf (capacity cap) in place; returns the new length. */
static size_t mutate(unsigned char *buf, size_t len, size_t cap, bool stream)
{
	static const unsigned char special[] = { 0, 0xff, 0x7f, 0x80, 31, 1, 0xc1 };
	unsigned int n = 1 + rnd(6);

	while (n--) {
		size_t i = len ? rnd(len) : 0, k;

		switch (rnd(stream ? 7 : 6)) {
		case 0:
		case 1:
			if (len)
				buf[i] ^= 1u << rnd(8);
			break;
		case 2:
			if (len)
				buf[i] = special[rnd(sizeof(special))];
			break;
		case 3:
			k = 1 + rnd(64);
			if (i + k > len)
				k = len - i;
			memmove(buf + i, buf + i + k, len - i - k);
			len -= k;
			break;
		case 4:
			k = 1 + rnd(16);
			if (len + k > cap)
				break;
			memmove(buf + i + k, buf + i, len - i);
			for (size_t j = 0; j < k; j++)
				buf[i + j] = rnd(256);
			len += k;
			break;
		case 5:
			if (!rnd(4))
				len = i;
			break;
		case 6: {
			/*
			 * A packet header field (packets start 512-byte
			 * aligned or anywhere: try both) gets a random value.
			 */
			size_t at = rnd(2) ? (i & ~(size_t)511) : i;
			size_t off = 4 * rnd(22);
			unsigned long long v = ((unsigned long long)rnd(1u << 31) << 33) ^ rnd(1u << 31);

			if (rnd(2))
				v = rnd(4096);
			for (unsigned int b = 0; b < 8 && at + off + b < len; b++)
				buf[at + off + b] = v >> (8 * b);
			break;
		}
		}
	}
	return len;
}

static void decode(const char *dir, FILE *null)
{
	struct rt_error err;
	struct rt_trace *t;

	if (rt_trace_open(dir, &t, &err))
		return;
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		struct rt_stream *s = t->cpus[i].stream;
		struct rt_item it;
		char ts[64];

		while (rt_stream_next(s, &it, &err) > 0) {
			rt_format_ts(ts, sizeof(ts), t->md, it.timestamp, true);
			if (it.type == RT_ITEM_EVENT)
				rt_print_fields(null, &it);
		}
		for (unsigned int j = 0; j < rt_stream_nr_notes(s); j++)
			fputs(rt_stream_note(s, j), null);
	}
	rt_trace_close(t);
}

int main(int argc, char **argv)
{
	unsigned long iterations;
	unsigned char *buf;
	size_t cap = 0;
	FILE *null;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: fuzz_decoder TRACE_DIR WORK_DIR ITERATIONS [SEED]\n");
		return 2;
	}
	iterations = strtoul(argv[3], NULL, 10);
	rng_state = argc == 5 ? strtoull(argv[4], NULL, 10) | 1 : 88172645463325252ULL;
	load(argv[1]);
	if (!nr_files)
		fail("no files in", argv[1]);
	for (unsigned int i = 0; i < nr_files; i++) {
		put(argv[2], &files[i], files[i].data, files[i].len);
		if (files[i].len > cap)
			cap = files[i].len;
	}
	cap += 1024;
	buf = malloc(cap);
	null = fopen("/dev/null", "w");
	if (!buf || !null)
		fail("cannot set up", argv[2]);

	for (unsigned long it = 0; it < iterations; it++) {
		struct file *f = &files[rnd(nr_files)];
		bool stream = strcmp(f->name, "metadata");
		size_t len;

		memcpy(buf, f->data, f->len);
		len = mutate(buf, f->len, cap, stream);
		put(argv[2], f, buf, len);
		decode(argv[2], null);
		put(argv[2], f, f->data, f->len);

		if (it % 2) {
			struct rt_metadata *md;
			struct rt_error err;
			struct file *m = NULL;

			for (unsigned int i = 0; i < nr_files; i++)
				if (!strcmp(files[i].name, "metadata"))
					m = &files[i];
			if (!m)
				continue;
			memcpy(buf, m->data, m->len);
			len = mutate(buf, m->len, cap, false);
			if (!rt_metadata_parse((char *)buf, len, "metadata", &md, &err))
				rt_metadata_free(md);
		}
	}
	printf("fuzz_decoder: %lu iterations over %u files\n", iterations, nr_files);
	free(buf);
	fclose(null);
	return 0;
}
