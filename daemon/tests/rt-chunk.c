// SPDX-License-Identifier: GPL-2.0
/*
 * rt-chunk: host tests of chunk files: the stored frames and packing of
 * lib/chunk.c, and ringtraced's chunk writer and packers (chunks.c,
 * packer.c, with the syncer) as its drain threads use them.  Built with
 * those files under AddressSanitizer (../Makefile): a use after free is
 * an abort, not luck.
 *
 *   rt-chunk [DIR]     DIR for the files (default: a new directory in
 *                      /var/tmp, removed at the end)
 *
 * Prints one "ok N - ..." / "not ok N - ..." line per check and ends with
 * "chunk: N passed, M failed"; the exit status is 1 if any failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../ringtraced.h"
#include "../../lib/chunk_index.h"
#include "../../tools/lib/internal.h"

/* What the daemon's other files would define. */
struct options opt;
char outdir[PATH_MAX];
/* handoff.c's, never called: opt.on_chunk stays NULL here. */
void handoff_chunk_closed(const struct chunk_facts *f __attribute__((unused))) {}
void handoff_kick(void) {}

static unsigned int passed, failed;
static char dir[PATH_MAX];
static int dfd;

__attribute__((format(printf, 2, 3)))
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

/* ---- packets --------------------------------------------------------------------- */

/*
 * A CTF packet of @len bytes (>= the header): header fields set, then
 * event-like bytes that compress (a counter, a few random bits).
 */
static uint8_t *make_packet(size_t len, uint64_t seq, unsigned int cpu)
{
	struct ringtrace_packet_header h = {
		.magic = RINGTRACE_CTF_MAGIC,
		.stream_instance_id = cpu,
		.content_size = len * 8,
		.packet_size = len * 8,
		.packet_seq_num = seq,
		.cpu_id = cpu,
	};
	uint8_t *p = malloc(len);
	uint32_t x = (uint32_t)(seq * 2654435761U + 1);

	memcpy(p, &h, sizeof(h));
	for (size_t i = sizeof(h); i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		uint64_t v = (i / 8) << 8 | (x & 0x3);

		memcpy(p + i, &v, 8);
	}
	return p;
}

/* Write @n packets of @len bytes as stored frames into @name; their bytes. */
static uint8_t *write_stored(const char *name, unsigned int n, size_t len,
			     size_t *total)
{
	struct chunk_stored_hdrs h;
	struct iovec iov[64];
	uint8_t blocks[64][3], *all = malloc((size_t)n * len + 1);
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	h.blocks = blocks;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *p = make_packet(len, i, 0);
		unsigned int cnt = chunk_stored_iov(iov, &h, p, len);

		if (writev(fd, iov, (int)cnt) < 0)
			perror("writev");
		memcpy(all + (size_t)i * len, p, len);
		free(p);
	}
	close(fd);
	*total = (size_t)n * len;
	return all;
}

static uint8_t *read_file(const char *name, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = openat(dfd, name, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* The file decompresses (libzstd, any frame kind) to exactly @want. */
static bool decompresses_to(const char *name, const uint8_t *want, size_t len)
{
	size_t zlen, got;
	uint8_t *z = read_file(name, &zlen), *d = malloc(len + 1);
	bool ok;

	if (!z || !d)
		return false;
	got = ZSTD_decompress(d, len + 1, z, zlen);
	ok = !ZSTD_isError(got) && got == len && !memcmp(d, want, len);
	free(z);
	free(d);
	return ok;
}

static int kind_of(const char *name)
{
	int fd = openat(dfd, name, O_RDONLY), k;

	if (fd < 0)
		return -errno;
	k = chunk_kind(fd);
	close(fd);
	return k;
}

static bool exists(const char *name)
{
	return !faccessat(dfd, name, F_OK, 0);
}

/* ---- lib/chunk.c ----------------------------------------------------------------- */

static void test_names(void)
{
	unsigned int c, s;
	char name[CHUNK_NAME_MAX], tmp[CHUNK_NAME_MAX + 8];

	chunk_name(name, sizeof(name), 3, 17);
	chunk_tmp_name(tmp, sizeof(tmp), name);
	check(!strcmp(name, "cpu3-000017.zst") && !strcmp(tmp, ".cpu3-000017.zst.tmp"),
	      "names: %s, %s", name, tmp);
	check(chunk_parse_name("cpu12-000345.zst", &c, &s) && c == 12 && s == 345,
	      "cpu12-000345.zst parses as CPU 12, chunk 345");
	check(!chunk_parse_name("cpu1.zst", &c, &s) &&
	      !chunk_parse_name("cpu1-.zst", &c, &s) &&
	      !chunk_parse_name("cpu-1-2.zst", &c, &s) &&
	      !chunk_parse_name("cpu1-+2.zst", &c, &s) &&
	      !chunk_parse_name("cpu1-2.zst.tmp", &c, &s) &&
	      !chunk_parse_name(".cpu1-2.zst.tmp", &c, &s) &&
	      !chunk_parse_name("cpu1-99999999999.zst", &c, &s),
	      "unnumbered, signed, hidden, temporary and overflowing names do not parse");
}

static void test_stored(void)
{
	size_t total;
	uint8_t *all;

	check(chunk_stored_size(0) == 12 && chunk_stored_size(65536) == 65536 + 12 &&
	      chunk_stored_size(300000) == 300000 + 9 + 3 * 3,
	      "stored frame sizes: 12 bytes for an empty packet, 12 more per packet up to 128 KiB, 3 more per further block");
	check(chunk_stored_iovcnt(0) == 2 && chunk_stored_iovcnt(65536) == 3 &&
	      chunk_stored_iovcnt(300000) == 7,
	      "stored frame iovecs: header, then header+data per block");
	all = write_stored("stored-1.zst", 40, 65536, &total);
	check(decompresses_to("stored-1.zst", all, total),
	      "40 stored 64 KiB packets decompress to themselves with libzstd");
	check(kind_of("stored-1.zst") == CHUNK_KIND_STORED, "chunk_kind(): stored");
	free(all);
	all = write_stored("stored-2.zst", 3, 300000, &total);
	check(decompresses_to("stored-2.zst", all, total),
	      "stored packets of three raw blocks each decompress to themselves");
	free(all);
}

/*
 * The packed frames end on packet boundaries and carry checksums; the last
 * frame is the time index (lib/chunk_index.h), an entry for each of them.
 */
static bool frames_on_packet_boundaries(const char *name, size_t packet,
					unsigned int *frames)
{
	size_t len, off = 0;
	uint8_t *z = read_file(name, &len);
	bool ok = z != NULL;
	struct chunk_index ix;
	char why[128];
	uint64_t ilen;

	*frames = 0;
	ilen = ok && len >= CHUNK_INDEX_FOOTER ?
	       chunk_index_frame_size(z + len - CHUNK_INDEX_FOOTER, len) : 0;
	ok = ok && ilen && !chunk_index_parse(z + len - ilen, ilen, len, &ix, why,
					      sizeof(why));
	if (!ok) {
		free(z);
		return false;
	}
	len -= ilen;
	while (ok && off < len) {
		size_t n = ZSTD_findFrameCompressedSize(z + off, len - off);
		unsigned long long cs = ZSTD_isError(n) ? ZSTD_CONTENTSIZE_ERROR :
					ZSTD_getFrameContentSize(z + off, n);

		ok = !ZSTD_isError(n) && cs != ZSTD_CONTENTSIZE_ERROR &&
		     cs != ZSTD_CONTENTSIZE_UNKNOWN && cs % packet == 0 &&
		     (z[off + 4] & 0x04);	/* Content_Checksum_flag */
		ok = ok && *frames < ix.n && ix.e[*frames].coff == off;
		off += ZSTD_isError(n) ? len : n;
		(*frames)++;
	}
	ok = ok && *frames == ix.n;
	chunk_index_free(&ix);
	free(z);
	return ok;
}

static void test_pack(void)
{
	struct chunk_packer *p = chunk_packer_new(3);
	struct chunk_pack_result res;
	unsigned int frames;
	size_t total, len;
	uint8_t *all, *z;
	struct rlimit rl, old;
	bool cancel = true, ok;
	int err, fd;

	all = write_stored("cpu0-000001.zst", 200, 65536, &total);
	err = chunk_pack(p, dfd, "cpu0-000001.zst", ".cpu0-000001.zst.tmp", NULL, &res);
	check(!err && res.packets == 200 && res.content == total &&
	      res.in == chunk_stored_size(65536) * 200 && res.out < total / 2,
	      "pack 200 packets at level 3: %d, %llu packets, %llu -> %llu bytes", err,
	      (unsigned long long)res.packets, (unsigned long long)res.in,
	      (unsigned long long)res.out);
	check(decompresses_to(".cpu0-000001.zst.tmp", all, total),
	      "the packed file decompresses to the same packets, byte for byte");
	check(kind_of(".cpu0-000001.zst.tmp") == CHUNK_KIND_PACKED &&
	      kind_of("cpu0-000001.zst") == CHUNK_KIND_STORED,
	      "chunk_kind() tells the packed file from the stored chunk it came from");
	ok = frames_on_packet_boundaries(".cpu0-000001.zst.tmp", 65536, &frames);
	check(ok && frames == (total + CHUNK_PACK_FRAME_BYTES - 1) / CHUNK_PACK_FRAME_BYTES,
	      "%u packed frames of %u MiB of packets, each on a packet boundary, with its content size and a checksum, then the time index of them",
	      frames, CHUNK_PACK_FRAME_BYTES >> 20);
	err = chunk_pack(p, dfd, ".cpu0-000001.zst.tmp", "again.tmp", NULL, &res);
	check(err == -EBADMSG && !exists("again.tmp"),
	      "a packed chunk is not packed again (-EBADMSG, nothing left behind)");

	/* Cut short: a kill mid-write leaves a partial frame at the end. */
	z = read_file("cpu0-000001.zst", &len);
	fd = openat(dfd, "cut.zst", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (write(fd, z, len - 1000) < 0)
		perror("write");
	close(fd);
	err = chunk_pack(p, dfd, "cut.zst", "cut.tmp", NULL, &res);
	check(err == -EBADMSG && !exists("cut.tmp") && kind_of("cut.zst") == CHUNK_KIND_STORED,
	      "a stored chunk cut short stays as it is (-EBADMSG, no temporary file)");
	free(z);

	err = chunk_pack(p, dfd, "cpu0-000001.zst", "cancel.tmp", &cancel, &res);
	check(err == -ECANCELED && !exists("cancel.tmp"),
	      "a cancelled pack leaves no temporary file (%d)", err);

	/* A write that fails: EFBIG past RLIMIT_FSIZE (SIGXFSZ ignored). */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	rl = old;
	rl.rlim_cur = 100000;
	setrlimit(RLIMIT_FSIZE, &rl);
	err = chunk_pack(p, dfd, "cpu0-000001.zst", "full.tmp", NULL, &res);
	setrlimit(RLIMIT_FSIZE, &old);
	check(err == -EFBIG && !exists("full.tmp") &&
	      decompresses_to("cpu0-000001.zst", all, total),
	      "a write that fails (EFBIG) leaves the stored chunk whole and no temporary file (%d)",
	      err);

	fd = openat(dfd, "empty.zst", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	check(kind_of("empty.zst") == CHUNK_KIND_EMPTY &&
	      chunk_pack(p, dfd, "empty.zst", "empty.tmp", NULL, &res) == -ENODATA,
	      "an empty file is neither stored nor packed, and not packed (-ENODATA)");
	check(chunk_pack_memory(22) < (32U << 20) && chunk_pack_memory(1) < (2U << 20),
	      "packer memory: level 1 %.1f MiB, level 22 %.1f MiB (window capped)",
	      chunk_pack_memory(1) / 1048576.0, chunk_pack_memory(22) / 1048576.0);
	chunk_packer_free(p);
	free(all);
}

/*
 * The crash guarantee of packing: a packer killed at any moment leaves the
 * chunk stored or packed, whole.  A child packs the chunk, then renames,
 * as a packer does; it is killed at moments spread over twice what a
 * whole pack takes here (measured first: the host may be busy); every
 * time the chunk must decompress to its packets.
 */
static void pack_and_rename(void)
{
	struct chunk_packer *p = chunk_packer_new(6);
	struct chunk_pack_result res;

	if (!chunk_pack(p, dfd, "cpu1-000001.zst", ".cpu1-000001.zst.tmp",
			NULL, &res))
		renameat(dfd, ".cpu1-000001.zst.tmp", dfd, "cpu1-000001.zst");
	chunk_packer_free(p);
}

static void test_kill_while_packing(void)
{
	unsigned int kills = 0, stored = 0, packed = 0, bad = 0, tmps = 0;
	struct timespec ts;
	uint64_t whole, ns;
	size_t total;
	uint8_t *all;

	srand((unsigned int)time(NULL));
	/* A whole pack, in a child as below: fork and page faults included. */
	free(write_stored("cpu1-000001.zst", 48, 65536, &total));
	whole = now_ms();
	if (!fork()) {
		pack_and_rename();
		_exit(0);
	}
	wait(NULL);
	whole = now_ms() - whole + 1;
	for (int round = 0; round < 24; round++) {
		pid_t pid;

		all = write_stored("cpu1-000001.zst", 48, 65536, &total);
		pid = fork();
		if (!pid) {
			pack_and_rename();
			_exit(0);
		}
		/* Spread over twice a whole pack: before, during and after. */
		ns = (uint64_t)round * whole * 2000000 / 24 +
		     (uint64_t)(rand() % 1000) * whole;
		ts.tv_sec = (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		nanosleep(&ts, NULL);
		if (!kill(pid, SIGKILL))
			kills++;
		waitpid(pid, NULL, 0);
		tmps += exists(".cpu1-000001.zst.tmp");
		switch (kind_of("cpu1-000001.zst")) {
		case CHUNK_KIND_STORED: stored++; break;
		case CHUNK_KIND_PACKED: packed++; break;
		default: bad++;
		}
		if (!decompresses_to("cpu1-000001.zst", all, total))
			bad++;
		unlinkat(dfd, ".cpu1-000001.zst.tmp", 0);
		free(all);
	}
	check(!bad, "%u kills while packing at level 6 (%llu ms a pack): every time the chunk was whole (%u stored, %u packed, %u left a temporary file)",
	      kills, (unsigned long long)whole, stored, packed, tmps);
	check(tmps > 0 && stored > 0 && packed > 0,
	      "kills landed before, during and after packing (%u of %u left a temporary file)",
	      tmps, kills);
}

/* ---- ringtraced's chunks.c and packer.c ------------------------------------------ */

/* Names of the chunk files of @cpu on disk, as "1 2 3". */
static void chunk_list(unsigned int cpu, char *buf, size_t size)
{
	unsigned int seqs[256], n = 0, c, s;
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t used = 0;

	while (d && (de = readdir(d)))
		if (chunk_parse_name(de->d_name, &c, &s) && c == cpu && n < 256)
			seqs[n++] = s;
	if (d)
		closedir(d);
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = i + 1; j < n; j++)
			if (seqs[j] < seqs[i]) {
				s = seqs[i];
				seqs[i] = seqs[j];
				seqs[j] = s;
			}
	buf[0] = '\0';
	for (unsigned int i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%u",
					 i ? " " : "", seqs[i]);
}

/* As the daemon at stop: packers at normal priority (the host may be busy). */
static void wait_idle(void)
{
	packer_boost();
	for (int i = 0; i < 6000 && !packer_idle(); i++)
		usleep(10000);
}

static void test_writer(void)
{
	struct chunk_writer w;
	struct packer_stats ps;
	char list[256], name[CHUNK_NAME_MAX];
	uint8_t *pkt, *all;
	size_t off = 0;
	bool ok = true;
	int err = 0, dd = open(dir, O_RDONLY | O_DIRECTORY);

	/* 16 KiB packets, chunks of at most 100 KiB: 6 packets per chunk. */
	opt.max_size = 100 * 1024;
	opt.max_files = 0;
	check(!packer_start(2, 2, 3, dd) && !syncer_start(dd, -1, 64) &&
	      !chunks_open(&w, 5, 0, dd, 16384), "writer of CPU 5 and two packers start");
	all = malloc(60 * 16384);
	for (unsigned int i = 0; i < 60 && !err; i++) {
		pkt = make_packet(16384, i, 5);
		err = chunks_write(&w, pkt, 16384);
		memcpy(all + (size_t)i * 16384, pkt, 16384);
		free(pkt);
		if (!err)
			err = chunks_roll_if_due(&w, now_ms());
	}
	check(!err, "60 packets written, rolling by size");
	check(w.size <= opt.max_size && w.seq == 11,
	      "chunks close before the next packet could pass --max-size: chunk %u open, %llu bytes",
	      w.seq, (unsigned long long)w.size);
	chunks_finish(&w);
	wait_idle();
	packer_stats(&ps);
	check(ps.packed == 10 && !ps.queued && !ps.busy && ps.kept == 0,
	      "the packers compressed the 10 closed chunks (%llu packed, %llu queued, %llu kept)",
	      (unsigned long long)ps.packed, (unsigned long long)ps.queued,
	      (unsigned long long)ps.kept);
	/* Chunk 11 was open and empty at the end: gone, the 10 others packed. */
	chunk_list(5, list, sizeof(list));
	check(!strcmp(list, "1 2 3 4 5 6 7 8 9 10"),
	      "files: chunks 1..10, the empty last one removed (%s)", list);
	for (unsigned int s = 1; s <= 10; s++) {
		chunk_name(name, sizeof(name), 5, s);
		ok &= kind_of(name) == CHUNK_KIND_PACKED;
		ok &= decompresses_to(name, all + off, 6 * 16384);
		off += 6 * 16384;
	}
	check(ok, "every chunk is packed and holds its 6 packets in order");
	packer_stop(false);
	syncer_stop();
	free(all);

	/* --max-files 3: only the newest three chunks stay, packed or not. */
	opt.max_files = 3;
	check(!packer_start(2, 1, 19, dd) && !syncer_start(dd, -1, 64) &&
	      !chunks_open(&w, 6, 1, dd, 16384), "writer of CPU 6, one level-19 packer");
	for (unsigned int i = 0; i < 60 && !err; i++) {
		pkt = make_packet(16384, i, 6);
		err = chunks_write(&w, pkt, 16384);
		free(pkt);
		if (!err)
			err = chunks_roll_if_due(&w, now_ms());
	}
	chunks_finish(&w);
	wait_idle();
	chunk_list(6, list, sizeof(list));
	check(!err && !strcmp(list, "8 9 10"),
	      "--max-files 3 keeps chunks 8, 9, 10 while a packer works (%s)", list);
	check(!exists(".cpu6-000001.zst.tmp") && !exists(".cpu6-000007.zst.tmp"),
	      "no temporary file of a removed chunk is left");
	packer_stop(false);
	syncer_stop();

	/* --level store: nothing is packed, everything stays whole. */
	opt.max_files = 0;
	check(!packer_start(1, 0, RT_LEVEL_STORE, dd) &&
	      !syncer_start(dd, -1, 64) &&
	      !chunks_open(&w, 7, 0, dd, 16384), "writer of CPU 7 with --level store");
	for (unsigned int i = 0; i < 12 && !err; i++) {
		pkt = make_packet(16384, i, 7);
		err = chunks_write(&w, pkt, 16384);
		free(pkt);
		if (!err)
			err = chunks_roll_if_due(&w, now_ms());
	}
	chunks_finish(&w);
	packer_stats(&ps);
	chunk_list(7, list, sizeof(list));
	check(!err && !ps.packed && ps.kept == 2 && !strcmp(list, "1 2") &&
	      kind_of("cpu7-000001.zst") == CHUNK_KIND_STORED,
	      "--level store: two chunks, both stored (%s)", list);
	packer_stop(false);
	syncer_stop();

	/* A CPU that recorded nothing keeps one empty frame: zstd -d reads it. */
	check(!packer_start(1, 1, 3, dd) && !syncer_start(dd, -1, 64) &&
	      !chunks_open(&w, 8, 0, dd, 16384), "writer of CPU 8");
	chunks_finish(&w);
	check(decompresses_to("cpu8-000001.zst", (const uint8_t *)"", 0) &&
	      kind_of("cpu8-000001.zst") == CHUNK_KIND_STORED,
	      "a CPU without packets has one chunk of one empty frame");
	packer_stop(false);
	syncer_stop();
	close(dd);
}

/*
 * The store path over splice (chunks_source()): packets spliced from a
 * source's pages through a pipe make the very bytes that pwritev() from
 * the mapping makes, whatever their size against the frame's blocks and
 * the pipe (a packet larger than the pipe goes in parts).  A memfd
 * stands for the module's buffer file: it splices from its page cache
 * as the module does from the ring (the module's side has its own tests,
 * selftests/splice_test.c).
 */
static void test_splice_writer(void)
{
	/* Below a page, a page, three raw blocks and a bit, one block. */
	static const size_t lens[] = { 3000, 4096, 300000, 65536, 200 };
	long page = sysconf(_SC_PAGESIZE);
	size_t at[ARRAY_SIZE(lens)], map_len = (size_t)page, len, plen;
	struct ringtrace_meta *meta;
	struct chunk_writer w;
	struct rt_buffer src;
	uint8_t *map, *a, *b;
	unsigned int i, pass;
	bool same;
	int dd = open(dir, O_RDONLY | O_DIRECTORY), mfd, err = 0;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		at[i] = map_len;
		map_len += (lens[i] + (size_t)page - 1) / (size_t)page * (size_t)page;
	}
	mfd = memfd_create("rt-chunk-splice", MFD_CLOEXEC);
	check(mfd >= 0 && !ftruncate(mfd, (off_t)map_len), "a memfd as the buffer file");
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (map == MAP_FAILED) {
		check(0, "mmap of the memfd: %s", strerror(errno));
		return;
	}
	meta = (struct ringtrace_meta *)map;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		uint8_t *pkt = make_packet(lens[i], i, 12);

		memcpy(map + at[i], pkt, lens[i]);
		free(pkt);
	}
	src = (struct rt_buffer){ .fd = mfd, .map = map, .map_len = map_len,
				  .meta = meta };

	opt.max_size = 64 << 20;
	opt.max_files = 0;
	opt.splice = true;	/* --splice */
	/* An older module: no feature bit, no splice. */
	meta->features = 0;
	check(!packer_start(1, 0, RT_LEVEL_STORE, dd) && !syncer_start(dd, -1, 64) &&
	      !chunks_open(&w, 12, 0, dd, 512 << 10) && !chunks_source(&w, &src) &&
	      !w.src_map, "a module without RINGTRACE_FEATURE_SPLICE: pwritev()");
	for (i = 0; i < ARRAY_SIZE(lens) && !err; i++)
		err = chunks_write(&w, map + at[i], lens[i]);
	check(!err && !COUNTER_READ(w.spliced), "%d packets written, none spliced",
	      ARRAY_SIZE(lens));
	chunks_finish(&w);

	/* 13: a pipe of the packets' size; 14: of 4 pages, in parts. */
	meta->features = RINGTRACE_FEATURE_SPLICE;
	for (pass = 0; pass < 2; pass++) {
		check(!chunks_open(&w, 13 + pass, 0, dd, 512 << 10) &&
		      !chunks_source(&w, &src) && w.src_map,
		      "CPU %u splices from the module's pages", 13 + pass);
		if (pass && fcntl(w.pipe[1], F_SETPIPE_SZ, 4 * (int)page) >= 0)
			w.pipe_slots = w.pipe_free = 4;
		for (i = 0, err = 0; i < ARRAY_SIZE(lens) && !err; i++)
			err = chunks_write(&w, map + at[i], lens[i]);
		check(!err && COUNTER_READ(w.spliced) == ARRAY_SIZE(lens) &&
		      (!pass || w.pipe_slots == 4),
		      "CPU %u: %llu of %d packets spliced (pipe of %u pages): %s",
		      13 + pass, (unsigned long long)COUNTER_READ(w.spliced),
		      ARRAY_SIZE(lens), w.pipe_slots, strerror(-err));
		chunks_finish(&w);
	}
	/* Without --splice, the default: pwritev() where the module could splice. */
	opt.splice = false;
	check(!chunks_open(&w, 15, 0, dd, 512 << 10) && !chunks_source(&w, &src) &&
	      !w.src_map, "without --splice: pwritev() though the module can splice");
	chunks_finish(&w);
	packer_stop(false);
	syncer_stop();

	a = read_file("cpu12-000001.zst", &len);
	for (pass = 0; pass < 2; pass++) {
		char name[64];

		snprintf(name, sizeof(name), "cpu%u-000001.zst", 13 + pass);
		b = read_file(name, &plen);
		same = a && b && len == plen && !memcmp(a, b, len);
		check(same, "%s: the bytes pwritev() stored (%zu and %zu bytes)",
		      name, len, plen);
		free(b);
	}
	plen = 0;
	b = malloc(map_len);
	for (i = 0; b && i < ARRAY_SIZE(lens); i++) {
		memcpy(b + plen, map + at[i], lens[i]);
		plen += lens[i];
	}
	check(b && decompresses_to("cpu13-000001.zst", b, plen),
	      "zstd -d of the spliced chunk gives the %zu packets' bytes", plen);
	free(a);
	free(b);
	munmap(map, map_len);
	close(mfd);
	close(dd);
}

/*
 * A chunk that a packer has just finished is --max-files' and --max-total's
 * to remove and free, at once: the packer must not touch it after its
 * counters say it is done.  The window between the two is widened from
 * outside the code under test: the link wraps pthread_mutex_unlock() (see
 * the Makefile), and a packer thread sleeps after each unlock while
 * unlock_delay_us is set.  Under AddressSanitizer a use after free ends
 * the process: in a child, so that it fails a check.
 */
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
static unsigned int unlock_delay_us;

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	int ret = __real_pthread_mutex_unlock(m);
	char name[16];

	if (__atomic_load_n(&unlock_delay_us, __ATOMIC_RELAXED) &&
	    !pthread_getname_np(pthread_self(), name, sizeof(name)) &&
	    !strncmp(name, "rtd-pack/", 9))
		usleep(__atomic_load_n(&unlock_delay_us, __ATOMIC_RELAXED));
	return ret;
}

/* The child: 0 when the packer left the chunk alone and the counters agree. */
static int remove_just_packed(void)
{
	int dd = open(dir, O_RDONLY | O_DIRECTORY);
	char name[CHUNK_NAME_MAX];
	struct packer_stats ps = { 0 };
	struct chunk_writer w;
	unsigned int cpu, seq;
	uint8_t *pkt;

	/* Two 16 KiB packets fill a chunk of 40 KiB: chunk 1 closes. */
	opt.max_size = 40 * 1024;
	opt.max_files = 0;
	if (packer_start(1, 1, 1, dd) || syncer_start(dd, -1, 64) ||
	    chunks_open(&w, 9, 0, dd, 16384))
		return 10;
	__atomic_store_n(&unlock_delay_us, 100000, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < 2; i++) {
		pkt = make_packet(16384, i, 9);
		if (chunks_write(&w, pkt, 16384) ||
		    chunks_roll_if_due(&w, now_ms()))
			return 11;
		free(pkt);
	}
	/* As --max-total: the oldest closed chunk goes once it is packed. */
	for (int i = 0; i < 5000 && !ps.packed; i++) {
		usleep(1000);
		packer_stats(&ps);
	}
	if (!ps.packed)
		return 12;
	if (!packer_take_oldest(&cpu, &seq) || cpu != 9 || seq != 1)
		return 13;
	chunk_name(name, sizeof(name), cpu, seq);
	unlinkat(dd, name, 0);
	/* The packer wakes up within 100 ms and is done. */
	for (int i = 0; i < 5000 && !packer_idle(); i++)
		usleep(1000);
	__atomic_store_n(&unlock_delay_us, 0, __ATOMIC_RELAXED);
	packer_stats(&ps);
	chunks_finish(&w);
	packer_stop(false);
	syncer_stop();
	close(dd);
	return ps.busy || ps.packing_bytes || ps.packed != 1 ? 14 : 0;
}

static void test_remove_just_packed(void)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(remove_just_packed());
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && !WEXITSTATUS(status),
	      "a chunk removed (--max-total) right after its packer counted it packed: the packer leaves it alone (child: %s %d)",
	      WIFEXITED(status) ? "exit" : "signal",
	      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/*
 * A CPU whose first packet finds the disk full: the write fails (EFBIG
 * here, from RLIMIT_FSIZE 0: a real refusal of the kernel), the chunk is
 * cut back to nothing, and the one empty frame a CPU without packets gets
 * at the close fails too.  A file of no bytes is no zstd file (zstd -t
 * fails on it): none may be left.  In a child, for its file size limit.
 */
static int full_disk_first_packet(void)
{
	struct rlimit none = { 0, 0 };
	int dd = open(dir, O_RDONLY | O_DIRECTORY);
	struct chunk_writer w;
	uint8_t *pkt;
	int err;

	signal(SIGXFSZ, SIG_IGN);
	opt.max_size = 100 * 1024;
	opt.max_files = 0;
	if (setrlimit(RLIMIT_FSIZE, &none) || packer_start(1, 1, 3, dd) ||
	    syncer_start(dd, -1, 64) || chunks_open(&w, 11, 0, dd, 16384))
		return 10;
	pkt = make_packet(16384, 0, 11);
	err = chunks_write(&w, pkt, 16384);
	free(pkt);
	chunks_finish(&w);
	packer_stop(false);
	syncer_stop();
	close(dd);
	if (err != -EFBIG)
		return 11;
	return exists("cpu11-000001.zst") ? 12 : 0;
}

static void test_full_disk(void)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(full_disk_first_packet());
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && !WEXITSTATUS(status),
	      "the first packet and the empty frame both refused (a full disk): no empty chunk file is left (child: %s %d)",
	      WIFEXITED(status) ? "exit" : "signal",
	      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/*
 * The packers' thread tables (lib/chunk_index.h): a chunk of real events,
 * with the trace's metadata beside it, packed by ringtraced's packer (two
 * frames), gets a table in front of its time index: a record per frame, in
 * the first what the state dump and the first switch told (the worker's
 * pid, name and cgroup; the CPU runs it), in the second the next switch
 * and no loss between.  Without the metadata no table is written, the
 * index still is.
 */
static const char table_metadata[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := utf8_t;\n"
	"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;\n"
	"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
	"typealias integer { size = 64; align = 1; signed = false; map = clock.monotonic.value; } := uint64_bits_clock_monotonic_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"\tpacket.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; }; };\n"
	"clock { name = \"monotonic\"; freq = 1000000000; offset_s = 0; offset = 0; absolute = TRUE; };\n"
	"stream { id = 0;\n"
	"\tpacket.context := struct { uint64_clock_monotonic_t timestamp_begin; uint64_clock_monotonic_t timestamp_end;\n"
	"\t\tuint64_t content_size; uint64_t packet_size; uint64_t packet_seq_num; uint64_t events_discarded;\n"
	"\t\tuint32_t cpu_id; uint32_t events; };\n"
	"\tevent.header := struct { enum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
	"\t\tvariant <id> { struct { uint27_clock_monotonic_t timestamp; } compact;\n"
	"\t\t\tstruct { uint27_t id; uint64_bits_clock_monotonic_t timestamp; } extended; } v; }; };\n"
	"event { name = \"ringtrace_marker\"; id = 0; stream_id = 0;\n"
	"\tfields := struct { uint16_t len; utf8_t data[len]; }; };\n"
	"event { name = \"sched_switch\"; id = 1; stream_id = 0;\n"
	"\tfields := struct { utf8_t prev_comm[16]; int32_t prev_tid; int32_t prev_prio; int64_t prev_state;\n"
	"\t\tutf8_t next_comm[16]; int32_t next_tid; int32_t next_prio; }; };\n"
	"event { name = \"ringtrace_statedump_task\"; id = 13; stream_id = 0;\n"
	"\tfields := struct { int32_t tid; int32_t pid; int32_t ppid; utf8_t comm[16]; uint64_t cgroup_id; }; };\n";

/* A packet being built: its events appended with extended headers. */
struct tpacket {
	uint8_t buf[65536];
	size_t len;
	unsigned int events;
	uint64_t ts;
};

static void tp_event(struct tpacket *p, unsigned int id, const void *payload, size_t n)
{
	uint32_t word = 31 | id << 5;

	p->ts += 1000;
	memcpy(p->buf + p->len, &word, 4);
	memcpy(p->buf + p->len + 4, &p->ts, 8);
	memcpy(p->buf + p->len + 12, payload, n);
	p->len += 12 + n;
	p->events++;
}

static void tp_switch(struct tpacket *p, const char *prev, int32_t ptid,
		      const char *next, int32_t ntid)
{
	uint8_t e[56] = { 0 };
	int32_t prio = 120;
	int64_t state = 1;

	strncpy((char *)e, prev, 16);
	memcpy(e + 16, &ptid, 4);
	memcpy(e + 20, &prio, 4);
	memcpy(e + 24, &state, 8);
	strncpy((char *)e + 32, next, 16);
	memcpy(e + 48, &ntid, 4);
	memcpy(e + 52, &prio, 4);
	tp_event(p, 1, e, sizeof(e));
}

/* Packet @seq of CPU @cpu: @what 0 a state dump and a switch, 1 a switch, 2 markers. */
static size_t tp_make(struct tpacket *p, unsigned int cpu, uint64_t seq, int what)
{
	struct ringtrace_packet_header h = {
		.magic = RINGTRACE_CTF_MAGIC,
		.stream_instance_id = cpu,
		.packet_seq_num = seq,
		.cpu_id = cpu,
	};
	uint8_t mk[2 + 60000];
	uint16_t n = 60000;

	p->len = sizeof(h);
	p->events = 0;
	p->ts = 1000000000ULL + seq * 1000000;
	h.timestamp_begin = p->ts;
	if (what == 0) {
		uint8_t d[36] = { 0 };
		int32_t v[3] = { 42, 40, 1 };
		uint64_t cg = 7;

		memcpy(d, v, 12);
		strcpy((char *)d + 12, "worker");
		memcpy(d + 28, &cg, 8);
		tp_event(p, 13, d, sizeof(d));
		tp_switch(p, "swapper/12", 0, "worker", 42);
	} else if (what == 1) {
		tp_switch(p, "worker", 42, "helper", 43);
	}
	memcpy(mk, &n, 2);
	memset(mk + 2, 'm', n);
	tp_event(p, 0, mk, sizeof(mk));
	h.timestamp_end = p->ts;
	h.content_size = h.packet_size = p->len * 8;
	h.events = p->events;
	memcpy(p->buf, &h, sizeof(h));
	return p->len;
}

/* The packed chunk @name's index and thread table (none: t->n == 0). */
static bool read_table(const char *name, struct chunk_index *ix, struct chunk_table *t)
{
	size_t len;
	uint8_t *z = read_file(name, &len);
	uint64_t ilen, tlen;
	char why[128];
	bool ok;

	memset(t, 0, sizeof(*t));
	ilen = z && len >= CHUNK_INDEX_FOOTER ?
	       chunk_index_frame_size(z + len - CHUNK_INDEX_FOOTER, len) : 0;
	ok = ilen && !chunk_index_parse(z + len - ilen, ilen, len, ix, why, sizeof(why));
	if (ok && ix->data_bytes >= CHUNK_TABLE_FOOTER) {
		tlen = chunk_table_frame_size(z + ix->data_bytes - CHUNK_TABLE_FOOTER,
					      ix->data_bytes);
		if (tlen && chunk_table_parse(z + ix->data_bytes - tlen, tlen, ix, t,
					      why, sizeof(why))) {
			printf("# %s: %s\n", name, why);
			ok = false;
		}
	}
	free(z);
	return ok;
}

/* The packed chunk @name's scheduler records: rt_file_sched()'s 0, 1 or -1. */
static int sched_of(const char *name, struct chunk_sched *s)
{
	char path[PATH_MAX + CHUNK_NAME_MAX + 1], why[128];
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	r = rt_file_sched(path, s, NULL, why, sizeof(why));
	if (r < 0)
		printf("# %s: %s\n", name, why);
	return r;
}

/*
 * Scheduler records are untrusted input: what is encoded parses back the
 * same; any byte changed, any length cut, and a record that says what no
 * frame can (a checksum made right) are refused.
 */
static void test_sched_parse(void)
{
	struct chunk_index_entry e[2] = { { 0, 0, 100, 199 }, { 50, 4096, 200, 299 } };
	struct chunk_index ix = { .e = e, .n = 2 };
	struct chunk_sched_thread th[2] = {
		{ .tid = 7, .flags = CHUNK_SCHED_T_SWITCH | CHUNK_SCHED_T_WAKE |
			  CHUNK_SCHED_T_WAKER_START, .switch_ts = 150, .state = 2,
		  .wake_ts = 160, .wake_last = 170, .target_cpu = 1,
		  .wake_irq = { .drop = 1, .add = 2 } },
		{ .tid = 9, .flags = CHUNK_SCHED_T_MARK, .mark_ts = 120, .mark_last = 190 },
	};
	struct chunk_sched in = { 0 }, out;
	struct chunk_sched_frame f[2] = {
		{ .flags = CHUNK_SCHED_SWITCHED, .first_seq = 3, .last_seq = 5,
		  .first_switch = 110, .last_switch = 150, .prev_tid = 7, .next_tid = 9,
		  .next_prio = -20, .irq = { .reset = true, .add = 1 },
		  .owner_change = CHUNK_CPU_SET, .owner = 9 },
		{ .flags = CHUNK_SCHED_UNLEARNT, .first_seq = 6, .last_seq = 9 },
	};
	struct chunk_sched_thread *tcopy = malloc(sizeof(th));
	size_t len, bad = 0, cut = 0;
	uint8_t *buf;
	char why[128];
	bool same;

	memcpy(tcopy, th, sizeof(th));
	f[0].threads = tcopy;
	f[0].nr_threads = 2;
	check(!chunk_sched_add(&in, &f[0]) && !chunk_sched_add(&in, &f[1]), "two records");
	len = chunk_sched_size(&in);
	buf = malloc(len);
	chunk_sched_encode(&in, buf);
	check(chunk_sched_frame_size(buf + len - CHUNK_SCHED_FOOTER, len) == len,
	      "the frame's size from its footer: %zu", len);
	same = !chunk_sched_parse(buf, len, &ix, &out, why, sizeof(why)) && out.n == 2 &&
	       out.f[0].nr_threads == 2 && out.f[0].next_prio == -20 &&
	       out.f[0].irq.reset && out.f[0].irq.add == 1 && out.f[0].owner == 9 &&
	       out.f[0].threads[0].wake_irq.drop == 1 && out.f[0].threads[0].wake_irq.add == 2 &&
	       out.f[0].threads[0].wake_last == 170 && out.f[0].threads[1].mark_last == 190 &&
	       out.f[1].flags == CHUNK_SCHED_UNLEARNT && out.f[1].last_seq == 9;
	check(same, "parsed back the same%s%s", same ? "" : ": ", same ? "" : why);
	chunk_sched_free(&out);
	for (size_t i = 0; i < len; i++)
		for (unsigned int bit = 0; bit < 8; bit++) {
			buf[i] ^= (uint8_t)(1 << bit);
			bad += !!chunk_sched_parse(buf, len, &ix, &out, why, sizeof(why));
			chunk_sched_free(&out);
			buf[i] ^= (uint8_t)(1 << bit);
		}
	for (size_t n = 0; n < len; n++) {
		cut += !!chunk_sched_parse(buf + len - n, n, &ix, &out, why, sizeof(why));
		chunk_sched_free(&out);
	}
	check(bad == 8 * len && cut == len, "%zu of %zu bit flips and %zu of %zu cuts refused",
	      bad, 8 * len, cut, len);
	/* Right checksum, wrong content: a wakeup after the frame's end, tid 0. */
	in.f[0].threads[0].wake_last = 250;
	chunk_sched_encode(&in, buf);
	check(chunk_sched_parse(buf, len, &ix, &out, why, sizeof(why)) == -1,
	      "a wakeup outside its frame's times is refused: %s", why);
	in.f[0].threads[0].wake_last = 170;
	in.f[0].threads[0].tid = 0;
	chunk_sched_encode(&in, buf);
	check(chunk_sched_parse(buf, len, &ix, &out, why, sizeof(why)) == -1,
	      "tid 0 is refused: %s", why);
	chunk_sched_free(&in);
	free(buf);
}

static const struct chunk_fact *find_fact(const struct chunk_table_frame *f,
					  uint32_t kind, int32_t tid)
{
	for (uint32_t i = 0; i < f->nr_facts; i++)
		if (f->facts[i].kind == kind && f->facts[i].tid == tid)
			return &f->facts[i];
	return NULL;
}

static void test_thread_table(void)
{
	int dd = open(dir, O_RDONLY | O_DIRECTORY), fd;
	const struct chunk_fact *pid, *comm, *cg, *c43;
	struct chunk_stored_hdrs h;
	struct iovec iov[8];
	uint8_t blocks[8][3];
	struct tpacket *p = malloc(sizeof(*p));
	struct chunk_index ix = { 0 };
	struct chunk_sched s;
	struct chunk_table t;
	struct chunk *c;
	size_t total = 0;
	bool ok;

	fd = openat(dfd, "metadata", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, table_metadata, strlen(table_metadata)) ==
			(ssize_t)strlen(table_metadata);
	close(fd);
	/* 100 packets of 60 KiB: more than a packed frame's 4 MiB. */
	h.blocks = blocks;
	for (unsigned int seq = 1; seq <= 2; seq++) {
		char name[CHUNK_NAME_MAX];

		chunk_name(name, sizeof(name), 12, seq);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		for (unsigned int i = 0; i < 100 && ok; i++) {
			size_t len = tp_make(p, 12, i, i == 0 ? 0 : i == 80 ? 1 : 2);
			unsigned int cnt = chunk_stored_iov(iov, &h, p->buf, len);

			ok = writev(fd, iov, (int)cnt) > 0;
			total += chunk_stored_size(len);
		}
		close(fd);
	}
	check(ok, "a stored chunk of CPU 12: a state dump, switches, 100 packets");
	opt.max_files = 0;
	check(!packer_start(1, 1, 1, dd), "a packer starts");
	c = packer_chunk_new(0, 12, 1);
	packer_chunk_closed(c, total / 2, true);
	wait_idle();
	packer_stop(false);
	ok = read_table("cpu12-000001.zst", &ix, &t);
	check(ok && ix.n == 2 && t.n == 2,
	      "the packed chunk: %zu frames in its index, %zu records in its thread table",
	      ix.n, t.n);
	if (t.n == 2) {
		pid = find_fact(&t.f[0], CHUNK_FACT_PID, 42);
		comm = find_fact(&t.f[0], CHUNK_FACT_COMM, 42);
		cg = find_fact(&t.f[0], CHUNK_FACT_CGROUP, 42);
		c43 = find_fact(&t.f[1], CHUNK_FACT_COMM, 43);
		check(pid && pid->v.id == 40 && comm && !strcmp(comm->v.comm, "worker") &&
		      cg && cg->v.cgroup == 7 && t.f[0].cpu_change == CHUNK_CPU_SET &&
		      t.f[0].cpu_tid == 42 && !t.f[0].flags && t.f[0].first_seq == 0,
		      "frame 1: worker 42 of process 40 in cgroup 7 runs on the CPU");
		check(c43 && !strcmp(c43->v.comm, "helper") && t.f[1].cpu_change == CHUNK_CPU_SET &&
		      t.f[1].cpu_tid == 43 && t.f[1].first_seq == t.f[0].last_seq + 1 &&
		      t.f[1].last_seq == 99 && !find_fact(&t.f[1], CHUNK_FACT_PID, 42),
		      "frame 2: the switch to helper 43, right after frame 1's last packet");
	}
	chunk_table_free(&t);
	chunk_index_free(&ix);
	ok = sched_of("cpu12-000001.zst", &s) == 0;
	check(ok && s.n == 2, "the packed chunk's scheduler records: %zu", s.n);
	if (s.n == 2) {
		const struct chunk_sched_frame *f = s.f;

		check(f[0].flags == CHUNK_SCHED_SWITCHED && f[0].prev_tid == 0 &&
		      f[0].next_tid == 42 && f[0].next_prio == 120 && f[0].nr_threads == 1 &&
		      f[0].threads[0].tid == 42 &&
		      f[0].threads[0].flags == (CHUNK_SCHED_T_SWITCH | CHUNK_SCHED_T_IN) &&
		      f[0].owner_change == CHUNK_CPU_SET && f[0].owner == 42 &&
		      f[0].irq.reset && !f[0].irq.add,
		      "frame 1: swapper switches to worker 42, which runs");
		check(f[1].flags == CHUNK_SCHED_SWITCHED && f[1].prev_tid == 42 &&
		      f[1].next_tid == 43 && f[1].nr_threads == 2 &&
		      f[1].first_switch == f[1].last_switch &&
		      f[1].threads[0].tid == 42 && f[1].threads[0].flags == CHUNK_SCHED_T_SWITCH &&
		      f[1].threads[0].state == 1 && f[1].threads[0].switch_ts == f[1].last_switch &&
		      f[1].threads[1].tid == 43 &&
		      f[1].threads[1].flags == (CHUNK_SCHED_T_SWITCH | CHUNK_SCHED_T_IN) &&
		      f[1].first_seq == f[0].last_seq + 1,
		      "frame 2: worker 42 leaves asleep (S), helper 43 runs");
	}
	chunk_sched_free(&s);
	/* No metadata: no table, the index all the same. */
	unlinkat(dfd, "metadata", 0);
	check(!packer_start(1, 1, 1, dd), "a packer starts (no metadata)");
	c = packer_chunk_new(0, 12, 2);
	packer_chunk_closed(c, total / 2, true);
	wait_idle();
	packer_stop(false);
	ok = read_table("cpu12-000002.zst", &ix, &t);
	check(ok && ix.n == 2 && !t.n && sched_of("cpu12-000002.zst", &s) == 1,
	      "without the trace's metadata: the index, no thread table (%zu records) "
	      "nor scheduler records", t.n);
	chunk_table_free(&t);
	chunk_index_free(&ix);
	free(p);
	close(dd);
}

/* tools/tests/real-trace, from the top of the tree or from daemon/. */
static struct rt_trace *open_real(void)
{
	static const char *const dirs[] = { "tools/tests/real-trace",
					    "../tools/tests/real-trace" };
	struct rt_error err;
	struct rt_trace *t;

	for (unsigned int i = 0; i < 2; i++)
		if (!rt_trace_open(dirs[i], &t, &err))
			return t;
	return NULL;
}

/* @name of @dirfd copied into the test's directory. */
static bool copy_in(int dirfd, const char *name)
{
	int in = openat(dirfd, name, O_RDONLY), out;
	char buf[65536];
	ssize_t n;
	bool ok;

	out = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = in >= 0 && out >= 0;
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t)n) == n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

/*
 * The real trace's packets of its last CPU as the stored chunk @name in
 * the test's directory, its metadata beside; with @damage, a bit of the
 * first event header of the middle packet flipped, and the magic of a
 * packet after it.  False when the trace cannot be read.
 */
static bool real_chunk(const char *name, bool damage, unsigned int *packets)
{
	struct rt_trace *t = open_real();
	uint8_t blocks[64][3];
	struct chunk_stored_hdrs h = { .blocks = blocks };
	struct iovec iov[65];
	uint8_t *pk[512];
	size_t len[512];
	unsigned int n = 0;
	struct rt_error err;
	struct rt_item it;
	bool ok = t != NULL;
	int fd, r = -1, dirfd;

	while (ok && n < 512 &&
	       (r = rt_stream_next(t->cpus[t->nr_cpus - 1].stream, &it, &err)) > 0) {
		if (it.type != RT_ITEM_PACKET)
			continue;
		len[n] = it.packet->content_bytes;
		pk[n] = malloc(len[n]);
		memcpy(pk[n++], it.packet->raw, it.packet->content_bytes);
	}
	ok = ok && !r && n > 8;
	if (ok && damage) {
		pk[n / 2][sizeof(struct ringtrace_packet_header) + 1] ^= 0x40;
		pk[n / 2 + 3][0] ^= 1;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (unsigned int k = 0; k < n; k++) {
		unsigned int cnt = chunk_stored_iov(iov, &h, pk[k], len[k]);

		ok = ok && fd >= 0 && writev(fd, iov, (int)cnt) > 0;
		free(pk[k]);
	}
	if (fd >= 0)
		close(fd);
	dirfd = t ? open(t->dir, O_RDONLY | O_DIRECTORY) : -1;
	ok = ok && dirfd >= 0 && copy_in(dirfd, "metadata");
	if (dirfd >= 0)
		close(dirfd);
	rt_trace_close(t);
	*packets = n;
	return ok;
}

/*
 * The thread tables a packer makes, decoding only the events threads
 * learn from, each header once (tools/lib/facts.c), are byte for byte the
 * ones it made decoding every event twice (the reference reader,
 * rt_table_maker_set_reference()): a real trace's chunk packed both ways,
 * in frames of a few packets (many records), and the same chunk with a
 * damaged event and a damaged packet header (frames not learnt).
 */
static void test_table_as_before(void)
{
	for (int damage = 0; damage < 2; damage++) {
		char name[CHUNK_NAME_MAX];
		struct rt_table_maker *m[2] = { rt_table_maker_new(), rt_table_maker_new() };
		struct chunk_packer *p[2] = { chunk_packer_new(3), chunk_packer_new(3) };
		static const char *const out[2] = { "fast.tmp", "reference.tmp" };
		struct chunk_pack_result res[2];
		struct chunk_index ix = { 0 };
		struct chunk_table t = { 0 };
		unsigned int packets = 0, facts = 0, unlearnt = 0;
		uint8_t *a = NULL, *b = NULL;
		size_t alen = 0, blen = 0;
		bool ok;
		int r[2] = { -1, -1 };

		chunk_name(name, sizeof(name), 1, 7 + damage);
		ok = real_chunk(name, damage, &packets);
		check(ok, "a stored chunk of the real trace's packets (%u)%s", packets,
		      damage ? ", an event header and a packet header damaged" : "");
		rt_table_maker_set_reference(m[1], true);
		for (int i = 0; ok && i < 2; i++) {
			chunk_packer_set_frame_bytes(p[i], 16384);
			chunk_packer_set_table(p[i], rt_table_maker_ops(m[i]));
			r[i] = chunk_pack(p[i], dfd, name, out[i], NULL, &res[i]);
		}
		if (!r[0] && !r[1]) {
			a = read_file(out[0], &alen);
			b = read_file(out[1], &blen);
		}
		if (a && b && read_table(out[0], &ix, &t)) {
			for (size_t i = 0; i < t.n; i++) {
				facts += t.f[i].nr_facts;
				unlearnt += !!(t.f[i].flags & CHUNK_FRAME_UNLEARNT);
			}
		}
		check(a && b && alen == blen && !memcmp(a, b, alen) && t.n > 4 && facts > 20 &&
		      (damage ? unlearnt > 0 : !unlearnt),
		      "packed with the filtered reader and with the reference: %zu and %zu bytes, %s; %zu records in the table, %u facts, %u frames not learnt",
		      alen, blen, a && b && alen == blen && !memcmp(a, b, alen) ?
		      "the same bytes" : "they differ", t.n, facts, unlearnt);
		chunk_table_free(&t);
		chunk_index_free(&ix);
		free(a);
		free(b);
		unlinkat(dfd, out[0], 0);
		unlinkat(dfd, out[1], 0);
		unlinkat(dfd, name, 0);
		for (int i = 0; i < 2; i++) {
			chunk_packer_free(p[i]);
			rt_table_maker_free(m[i]);
		}
	}
	unlinkat(dfd, "metadata", 0);
}

static void remove_dir(void)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		unlinkat(dfd, de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	bool own = argc < 2;

	msg_prog = "rt-chunk";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (own) {
		snprintf(dir, sizeof(dir), "/var/tmp/rt-chunk.XXXXXX");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	}
	snprintf(outdir, sizeof(outdir), "%s", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	test_names();
	test_stored();
	test_pack();
	test_kill_while_packing();
	test_writer();
	test_splice_writer();
	test_remove_just_packed();
	test_full_disk();
	test_sched_parse();
	test_thread_table();
	test_table_as_before();
	if (own)
		remove_dir();
	printf("chunk: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
