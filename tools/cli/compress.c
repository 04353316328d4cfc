// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace compress: compress the chunks a recording left uncompressed.
 *
 * ringtraced writes every chunk stored first and compresses it once it is
 * closed; a recording stopped with a second Ctrl-C, killed, or cut by a
 * power loss leaves the rest stored.  This packs them with the daemon's own
 * code (lib/chunk.c), each into a hidden temporary file replaced by rename:
 * a chunk is stored or compressed at every moment, never half.  Temporary
 * files a killed packer left are removed first.
 *
 * A directory that ringtraced still records into is refused: the daemon
 * holds an flock() on it while it runs, and so does this command while it
 * works, so two of them never pack the same chunk either.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../../lib/chunk.h"
#include "cli.h"

struct job {
	char name[CHUNK_NAME_MAX];
	uint64_t bytes;
};

static struct {
	pthread_mutex_t lock;
	struct job *jobs;
	size_t njobs, next, done;
	uint64_t in, out, left;
	unsigned int failed;
	int dirfd, level;
	size_t frame_bytes;		/* 0: ringtraced's */
	const char *dir;
} w = { .lock = PTHREAD_MUTEX_INITIALIZER };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct chunk_packer *p = arg;
	char tmp[CHUNK_NAME_MAX + 8];
	struct chunk_pack_result res;
	struct job *j;
	int err;

	for (;;) {
		pthread_mutex_lock(&w.lock);
		j = w.next < w.njobs ? &w.jobs[w.next++] : NULL;
		pthread_mutex_unlock(&w.lock);
		if (!j)
			return NULL;
		chunk_tmp_name(tmp, sizeof(tmp), j->name);
		err = chunk_pack(p, w.dirfd, j->name, tmp, NULL, &res);
		if (!err && renameat(w.dirfd, tmp, w.dirfd, j->name) < 0) {
			err = -errno;
			unlinkat(w.dirfd, tmp, 0);
		}
		if (!err)
			fsync(w.dirfd);
		else
			warn("%s/%s: not compressed, left as it is: %s", w.dir,
			     j->name, err == -EBADMSG ?
			     "not whole stored frames (cut by a kill? `ringtrace check` reads it)" :
			     strerror(-err));
		pthread_mutex_lock(&w.lock);
		w.done++;
		w.left -= j->bytes;
		if (err) {
			w.failed++;
		} else {
			w.in += res.in;
			w.out += res.out;
		}
		pthread_mutex_unlock(&w.lock);
	}
}

/* ".cpuN-SSSSSS.zst.tmp": a packer's temporary file (chunk_tmp_name()). */
static bool is_chunk_tmp(const char *name)
{
	char chunk[CHUNK_NAME_MAX];
	size_t l = strlen(name);
	unsigned int cpu, seq;

	if (name[0] != '.' || l < 6 || l - 5 >= sizeof(chunk) ||
	    strcmp(name + l - 4, ".tmp"))
		return false;
	memcpy(chunk, name + 1, l - 5);
	chunk[l - 5] = '\0';
	return chunk_parse_name(chunk, &cpu, &seq);
}

/* The stored chunks of the directory into w.jobs; stale temporaries go. */
static void list_stored(DIR *d)
{
	size_t cap = 0;
	struct dirent *de;
	unsigned int cpu, seq;
	struct stat st;
	int fd, kind;

	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (is_chunk_tmp(de->d_name)) {
			if (unlinkat(w.dirfd, de->d_name, 0) == 0)
				info("%s/%s: removed (a killed packer's)", w.dir,
				     de->d_name);
			continue;
		}
		if (!chunk_parse_name(de->d_name, &cpu, &seq))
			continue;
		fd = openat(w.dirfd, de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			die("%s/%s: %s", w.dir, de->d_name, strerror(errno));
		kind = chunk_kind(fd);
		close(fd);
		if (kind != CHUNK_KIND_STORED ||
		    (uint64_t)st.st_size <= chunk_stored_size(0))
			continue;
		if (w.njobs == cap) {
			cap = cap ? 2 * cap : 64;
			w.jobs = realloc(w.jobs, cap * sizeof(*w.jobs));
			if (!w.jobs)
				die("%s", strerror(ENOMEM));
		}
		if (l >= sizeof(w.jobs[0].name))
			continue;	/* chunk_parse_name() accepted it: never */
		memcpy(w.jobs[w.njobs].name, de->d_name, l + 1);
		w.jobs[w.njobs].bytes = (uint64_t)st.st_size;
		w.left += (uint64_t)st.st_size;
		w.njobs++;
	}
}

/* One trace directory: 0, or 1 when a chunk could not be compressed. */
static int compress_dir(const char *dir, unsigned int nthreads, bool tty)
{
	struct chunk_packer **packers;
	struct rt_table_maker **tables;
	pthread_t *threads;
	uint64_t total;
	double said = now_s();
	unsigned int i, started = 0;
	DIR *d;

	w.dir = dir;
	w.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.dirfd < 0)
		die("%s: %s", dir, strerror(errno));
	if (faccessat(w.dirfd, "metadata", F_OK, 0))
		die("%s: not a trace directory (no metadata)", dir);
	if (flock(w.dirfd, LOCK_EX | LOCK_NB) < 0)
		die("%s: %s", dir, errno == EWOULDBLOCK ?
		    "ringtraced is recording into it (or another compress runs): wait for it to stop" :
		    strerror(errno));
	d = fdopendir(dup(w.dirfd));
	if (!d)
		die("%s: %s", dir, strerror(errno));
	w.njobs = w.next = w.done = 0;
	w.in = w.out = w.left = 0;
	w.failed = 0;
	list_stored(d);
	closedir(d);
	total = w.left;
	if (!w.njobs) {
		info("%s: nothing to compress", dir);
		close(w.dirfd);
		return 0;
	}
	if (nthreads > w.njobs)
		nthreads = (unsigned int)w.njobs;
	packers = calloc(nthreads, sizeof(*packers));
	tables = calloc(nthreads, sizeof(*tables));
	threads = calloc(nthreads, sizeof(*threads));
	if (!packers || !tables || !threads)
		die("%s", strerror(ENOMEM));
	for (i = 0; i < nthreads; i++) {
		packers[i] = chunk_packer_new(w.level);
		tables[i] = rt_table_maker_new();
		if (!packers[i] || !tables[i])
			die("%s", strerror(ENOMEM));
		chunk_packer_set_frame_bytes(packers[i], w.frame_bytes);
		/* Each chunk's thread table, as ringtraced's packers write it. */
		chunk_packer_set_table(packers[i], rt_table_maker_ops(tables[i]));
		if (pthread_create(&threads[i], NULL, worker, packers[i]))
			break;
		started++;
	}
	if (!started)
		die("cannot start a thread");
	/* Progress: on a terminal every second, otherwise every 10 s. */
	for (;;) {
		size_t done;
		uint64_t left;

		usleep(100000);
		pthread_mutex_lock(&w.lock);
		done = w.done;
		left = w.left;
		pthread_mutex_unlock(&w.lock);
		if (done == w.njobs)
			break;
		if (now_s() - said >= (tty ? 1 : 10)) {
			fprintf(stderr, tty ? "\r\033[K%s: %zu of %zu chunks, %.1f MiB left" :
				"%s: %zu of %zu chunks, %.1f MiB left\n",
				dir, done, w.njobs, (double)left / (1 << 20));
			said = now_s();
		}
	}
	if (tty)
		fputs("\r\033[K", stderr);
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < nthreads; i++) {
		chunk_packer_free(packers[i]);
		rt_table_maker_free(tables[i]);
	}
	free(packers);
	free(tables);
	free(threads);
	printf("%s: %zu chunks compressed, %.1f MiB -> %.1f MiB (ratio %.2f)%s\n",
	       dir, w.njobs - w.failed, (double)total / (1 << 20),
	       (double)w.out / (1 << 20), w.out ? (double)w.in / (double)w.out : 0,
	       w.failed ? "; some left as they were (see above)" : "");
	free(w.jobs);
	w.jobs = NULL;
	close(w.dirfd);
	return w.failed ? 1 : 0;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "frame-size", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int jobs = ncpu > 0 ? (unsigned int)ncpu : 1;
	uint64_t frame;
	int c, status = 0;

	w.level = CHUNK_DEFAULT_LEVEL;
	while ((c = cmd_getopt(argc, argv, "l:j:h", opts)) != -1) {
		switch (c) {
		case 'l':
			if (!chunk_parse_level(optarg, &w.level))
				usage_error("--level: '%s' is not a zstd level (%d..%d; 0 is zstd's default, 3)",
					    optarg, ZSTD_minCLevel(), ZSTD_maxCLevel());
			break;
		case 'j':
			if (!parse_uint(optarg, &jobs) || !jobs || jobs > 64)
				usage_error("--jobs: '%s' is not a number of threads (1..64)",
					    optarg);
			break;
		case 'F':
			if (!parse_size(optarg, &frame) || frame < 4096 ||
			    frame > CHUNK_PACK_FRAME_BYTES)
				usage_error("--frame-size: '%s' is not a size from 4K to %uM",
					    optarg, CHUNK_PACK_FRAME_BYTES >> 20);
			w.frame_bytes = (size_t)frame;
			break;
		}
	}
	if (optind >= argc)
		usage_error("a trace directory is needed");
	for (; optind < argc; optind++)
		status |= compress_dir(argv[optind], jobs, isatty(STDERR_FILENO));
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	return status;
}

const struct command cmd_compress = {
	.name = "compress",
	.summary = "compress the chunks a recording left uncompressed",
	.help =
"Usage: ringtrace compress [-l LEVEL] [-j N] [--frame-size SIZE] DIR...\n"
"\n"
"ringtraced writes each chunk uncompressed ('stored') and compresses it once\n"
"it is closed.  A recording stopped by a second Ctrl-C, killed, or cut by a\n"
"power loss leaves the rest stored: readable as it is, but larger.  This\n"
"compresses those chunks, each into a temporary file that then replaces it\n"
"(a chunk is stored or compressed at every moment, never half), and removes\n"
"the temporary files a killed compression left.  A directory ringtraced is\n"
"still recording into is refused.  A chunk cut short by a kill stays as it\n"
"is (ringtrace reads it; exit status 1).\n"
"\n"
"  -l, --level LEVEL  zstd level (default 6, ringtraced's)\n"
"  -j, --jobs N       threads (default: one per online CPU)\n"
"      --frame-size SIZE  bytes of packets per zstd frame, 4K to 4M\n"
"                     (default 4M, ringtraced's): a frame ends with the\n"
"                     packet that brings it to SIZE; smaller frames\n"
"                     let report --begin/--end and sql read less\n"
"                     around a window (each chunk keeps a time index of\n"
"                     its frames), at some cost in compression\n"
"  -h, --help         this text\n",
	.run = run,
};
