// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced: record ringtrace's per-CPU buffers into a trace directory.
 *
 *   setup:  block signals -> signalfd; open and map every selected CPU
 *           buffer; create the output directory, copy `metadata`, open one
 *           zstd stream per CPU; epoll over the CPU fds, the signalfd and a
 *           timerfd; turn tracing on (--start).
 *   loop:   a CPU fd is readable -> GET_SUBBUF, write the packet, PUT_SUBBUF,
 *           one packet per ready CPU per round (two ioctls per sub-buffer,
 *           never an event parsed; the level adapts to the backlog);
 *           timer -> FLUSH CPUs with an open packet, drain, end the frames;
 *           SIGHUP -> rotate; SIGUSR1 -> statistics; SIGINT/SIGTERM -> stop.
 *   stop:   tracing off (if we started it) or FLUSH, drain to the end, end
 *           the frames, fsync files and directory, print the summary.
 *
 * Errors print one line "ringtraced: <what>: <why>" and exit 1 after
 * ending what frames can be ended; usage errors exit 2.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "ringtraced.h"

#define DEFAULT_LEVEL		1
#define DEFAULT_MIN_LEVEL	RT_LEVEL_STORE
#define DEFAULT_FLUSH_MS	1000
#define SERVICE_DIR		"/var/lib/ringtrace"

enum { EXIT_USAGE = 2 };

/* epoll tags besides CPU indexes. */
#define TAG_SIGNAL	(UINT32_MAX - 1)
#define TAG_TIMER	(UINT32_MAX - 2)

struct cpu {
	struct rt_buffer buf;
	struct stream out;
	struct adapt adapt;
	/* Tracing stopped and all read (EPOLLHUP): out of the epoll set. */
	bool parked;
};

static struct {
	const char *debugfs;
	const char *output;
	const char *cpus;
	int level;
	int min_level;
	bool min_level_set;
	unsigned int flush_ms;
	uint64_t max_size;
	unsigned int max_files;
	bool start;
	bool stop_on_exit;
	bool once;			/* drain what is there, then exit */
	uint64_t subbuf_size;		/* 0: leave as is */
	uint64_t num_subbufs;		/* 0: leave as is */
	const char *mode;		/* NULL: leave as is */
	const char *root;		/* a trace directory per start in it */
	uint64_t max_total;		/* 0: no budget for root's traces */
	unsigned int delay_us;		/* testing: slow consumer */
} opt = {
	.level = DEFAULT_LEVEL,
	.min_level = DEFAULT_MIN_LEVEL,
	.flush_ms = DEFAULT_FLUSH_MS,
	.start = true,
};

static struct stream_config stream_cfg;
static struct ctl ctl;			/* where ringtrace's files are */
static char outdir[PATH_MAX];
static const char *outname;		/* outdir's name in its root */
static int outdirfd = -1;
static struct cpu *cpus;
static unsigned int ncpus;
static int epfd = -1, sigfd = -1, timerfd = -1;

/* ------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"Record ringtrace's per-CPU buffers into a trace directory: the CTF metadata\n"
"and one zstd-compressed stream of packets per CPU, copied verbatim.\n"
"`ringtrace unpack DIR OUT` (or `zstd -d` on each .zst file) gives a CTF 1.8\n"
"trace that babeltrace2 reads.\n"
"\n"
"Output:\n"
"  -o, --output=DIR          trace directory to create; it must not exist or be\n"
"                            empty (default ./ringtrace-YYYYmmdd-HHMMSS, or\n"
"                            " SERVICE_DIR "/YYYYmmdd-HHMMSS with --service)\n"
"  -l, --level=N             zstd level, %d..%d; negative is faster, 0 means\n"
"                            zstd's default, 3; 'store' writes packets\n"
"                            uncompressed in zstd frames (default %d)\n"
"  -L, --min-level=N         when a CPU writes faster than zstd compresses at\n"
"                            --level, compress its packets at faster levels, down\n"
"                            to N, until the daemon has caught up, rather than\n"
"                            let the buffer fill and lose events (default store;\n"
"                            N equal to --level keeps the level fixed)\n"
"  -s, --max-size=SIZE       start a new file per CPU once the current one has\n"
"                            SIZE bytes (suffix K, M, G); files are then named\n"
"                            cpuN-000001.zst, cpuN-000002.zst, ...\n"
"  -n, --max-files=N         keep at most N files per CPU, removing the oldest\n"
"                            (numbered files as with --max-size)\n"
"      --root=DIR            make the trace directory in DIR, a new one per\n"
"                            start, named YYYYmmdd-HHMMSS (default with\n"
"                            --service: " SERVICE_DIR ")\n"
"      --max-total=SIZE      keep the traces in --root's directory under SIZE\n"
"                            bytes together, removing the oldest whole traces\n"
"                            first (the running one is bounded by --max-size x\n"
"                            --max-files per CPU)\n"
"  -f, --flush-interval=MS   every MS milliseconds close the CPUs' open packets,\n"
"                            end the zstd frames and start an fdatasync of the\n"
"                            files on a thread of its own; 0 = only at rotation\n"
"                            and stop (default %d).  What survives: a kill of\n"
"                            the daemon (even SIGKILL) loses nothing the module\n"
"                            counts as delivered; a power loss loses at most\n"
"                            the last MS milliseconds and one sync's time\n"
"\n"
"What to record:\n"
"  -c, --cpus=LIST           CPUs to record, e.g. 0-3,8 (default: all)\n"
"      --start               turn tracing on at start and off at exit (default)\n"
"      --no-start            leave tracing_on alone: record whatever is traced\n"
"      --stop-on-exit        turn tracing off at exit even with --no-start\n"
"      --once                record what the buffers hold now, then exit\n"
"                            (a snapshot: implies --no-start, tracing goes on)\n"
"      --subbuf-size=SIZE    set the module's sub-buffer size first\n"
"      --num-subbufs=N       set the number of sub-buffers per CPU first\n"
"      --mode=MODE           set the buffer mode first: discard or overwrite\n"
"                            (these three are written only when they differ\n"
"                            from the current values: a change drops unread data\n"
"                            and needs tracing off)\n"
"      --debugfs=DIR         where debugfs is mounted (default /sys/kernel/debug);\n"
"                            without it, /dev/ringtrace when debugfs refuses\n"
"                            ringtrace's files (Secure Boot lockdown) or is\n"
"                            not mounted\n"
"\n"
"Running:\n"
"      --service             run under systemd (Type=notify): log with syslog\n"
"                            priorities, notify readiness, default output dir\n"
"                            under " SERVICE_DIR "; without it the daemon also\n"
"                            stays in the foreground and logs to stderr\n"
"  -q, --quiet               no notes on stderr (errors and warnings still)\n"
"      --test-delay-us=US    testing: sleep US microseconds per sub-buffer to\n"
"                            play a slow disk (losses are counted by the module)\n"
"  -h, --help                print this help and exit\n"
"  -V, --version             print the version and exit\n"
"\n"
"Signals: SIGINT/SIGTERM stop (flush, drain, fsync, print the summary),\n"
"SIGHUP rotates the files now, SIGUSR1 prints statistics.\n"
"Exit status: 0 after a clean stop, 1 on an error, 2 on a usage error.\n",
		ZSTD_minCLevel(), ZSTD_maxCLevel(), DEFAULT_LEVEL,
		DEFAULT_FLUSH_MS);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry '" PROG " --help' for more information.\n", stderr);
	exit(EXIT_USAGE);
}

/* A zstd level, 0 meaning zstd's default as it does, or "store". */
static bool parse_level(const char *s, int *out)
{
	if (!strcmp(s, "store")) {
		*out = RT_LEVEL_STORE;
		return true;
	}
	if (!parse_int(s, out) || *out < ZSTD_minCLevel() ||
	    *out > ZSTD_maxCLevel())
		return false;
	if (!*out)
		*out = ZSTD_CLEVEL_DEFAULT;
	return true;
}

struct level_name {
	char s[16];
};

static struct level_name level_name(int level)
{
	struct level_name n;

	if (level == RT_LEVEL_STORE)
		snprintf(n.s, sizeof(n.s), "store");
	else
		snprintf(n.s, sizeof(n.s), "%d", level);
	return n;
}

enum {
	OPT_START = 256,
	OPT_NO_START,
	OPT_ONCE,
	OPT_STOP_ON_EXIT,
	OPT_SUBBUF_SIZE,
	OPT_NUM_SUBBUFS,
	OPT_MODE,
	OPT_DEBUGFS,
	OPT_SERVICE,
	OPT_ROOT,
	OPT_MAX_TOTAL,
	OPT_TEST_DELAY,
};

static void parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output",		required_argument, NULL, 'o' },
		{ "level",		required_argument, NULL, 'l' },
		{ "min-level",		required_argument, NULL, 'L' },
		{ "max-size",		required_argument, NULL, 's' },
		{ "max-files",		required_argument, NULL, 'n' },
		{ "flush-interval",	required_argument, NULL, 'f' },
		{ "cpus",		required_argument, NULL, 'c' },
		{ "start",		no_argument,	   NULL, OPT_START },
		{ "no-start",		no_argument,	   NULL, OPT_NO_START },
		{ "stop-on-exit",	no_argument,	   NULL, OPT_STOP_ON_EXIT },
		{ "once",		no_argument,	   NULL, OPT_ONCE },
		{ "quiet",		no_argument,	   NULL, 'q' },
		{ "version",		no_argument,	   NULL, 'V' },
		{ "subbuf-size",	required_argument, NULL, OPT_SUBBUF_SIZE },
		{ "num-subbufs",	required_argument, NULL, OPT_NUM_SUBBUFS },
		{ "mode",		required_argument, NULL, OPT_MODE },
		{ "debugfs",		required_argument, NULL, OPT_DEBUGFS },
		{ "service",		no_argument,	   NULL, OPT_SERVICE },
		{ "root",		required_argument, NULL, OPT_ROOT },
		{ "max-total",		required_argument, NULL, OPT_MAX_TOTAL },
		{ "test-delay-us",	required_argument, NULL, OPT_TEST_DELAY },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "o:l:L:s:n:f:c:qhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				usage_error("--output: empty directory name");
			opt.output = optarg;
			break;
		case 'l':
			if (!parse_level(optarg, &opt.level))
				usage_error("--level: '%s' is not a zstd level (%d..%d) or 'store'",
					    optarg, ZSTD_minCLevel(),
					    ZSTD_maxCLevel());
			break;
		case 'L':
			if (!parse_level(optarg, &opt.min_level))
				usage_error("--min-level: '%s' is not a zstd level (%d..%d) or 'store'",
					    optarg, ZSTD_minCLevel(),
					    ZSTD_maxCLevel());
			opt.min_level_set = true;
			break;
		case 's':
			if (!parse_size(optarg, &opt.max_size) || !opt.max_size)
				usage_error("--max-size: '%s' is not a size in bytes (e.g. 64M)",
					    optarg);
			break;
		case 'n':
			if (!parse_uint(optarg, &opt.max_files) || !opt.max_files)
				usage_error("--max-files: '%s' is not a number of files >= 1",
					    optarg);
			break;
		case 'f':
			if (!parse_uint(optarg, &opt.flush_ms) ||
			    opt.flush_ms > 3600 * 1000)
				usage_error("--flush-interval: '%s' is not a number of milliseconds (0..3600000)",
					    optarg);
			break;
		case 'c':
			if (!parse_cpu_list(optarg, NULL, NULL))
				usage_error("--cpus: '%s' is not a CPU list (e.g. 0-3,8)",
					    optarg);
			opt.cpus = optarg;
			break;
		case OPT_START:
			opt.start = true;
			break;
		case OPT_NO_START:
			opt.start = false;
			break;
		case OPT_ONCE:
			opt.once = true;
			opt.start = false;
			break;
		case 'q':
			msg_quiet = true;
			break;
		case 'V':
			printf(PROG " %s\n", RINGTRACE_VERSION);
			exit(0);
		case OPT_STOP_ON_EXIT:
			opt.stop_on_exit = true;
			break;
		case OPT_SUBBUF_SIZE:
			if (!parse_size(optarg, &opt.subbuf_size) ||
			    !opt.subbuf_size)
				usage_error("--subbuf-size: '%s' is not a size in bytes",
					    optarg);
			break;
		case OPT_NUM_SUBBUFS:
			if (!parse_size(optarg, &opt.num_subbufs) ||
			    !opt.num_subbufs)
				usage_error("--num-subbufs: '%s' is not a number",
					    optarg);
			break;
		case OPT_MODE:
			if (strcmp(optarg, "discard") && strcmp(optarg, "overwrite"))
				usage_error("--mode: '%s' is neither discard nor overwrite",
					    optarg);
			opt.mode = optarg;
			break;
		case OPT_DEBUGFS:
			if (!*optarg)
				usage_error("--debugfs: empty directory name");
			opt.debugfs = optarg;
			break;
		case OPT_SERVICE:
			msg_service = true;
			break;
		case OPT_ROOT:
			if (!*optarg)
				usage_error("--root: empty directory name");
			opt.root = optarg;
			break;
		case OPT_MAX_TOTAL:
			if (!parse_size(optarg, &opt.max_total) || !opt.max_total)
				usage_error("--max-total: '%s' is not a size in bytes (e.g. 4G)",
					    optarg);
			break;
		case OPT_TEST_DELAY:
			if (!parse_uint(optarg, &opt.delay_us) ||
			    opt.delay_us > 10 * 1000 * 1000)
				usage_error("--test-delay-us: '%s' is not a number of microseconds (0..10000000)",
					    optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			/* getopt_long() already said what was wrong. */
			fputs("Try '" PROG " --help' for more information.\n",
			      stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (opt.output && opt.root)
		usage_error("--output and --root: one or the other");
	if (opt.max_total && (opt.output || opt.once))
		usage_error("--max-total budgets the traces of --root (or --service's %s), not --output's",
			    SERVICE_DIR);
	if (opt.max_total && !opt.root && !msg_service)
		usage_error("--max-total needs --root (or --service)");
	if (opt.min_level_set && opt.min_level > opt.level)
		usage_error("--min-level %s is above --level %s: it is the fastest level allowed",
			    level_name(opt.min_level).s, level_name(opt.level).s);

	stream_cfg.level = opt.level;
	stream_cfg.max_size = opt.max_size;
	stream_cfg.max_files = opt.max_files;
	stream_cfg.numbered = opt.max_size || opt.max_files;
}

/* ------------------------------------------------------------------ */
/* Control files                                                        */
/* ------------------------------------------------------------------ */

static void die_control(const char *name, int err)
{
	die("%s/%s: %s%s", ctl.dir, name, strerror(-err),
	    err == -EBUSY ? " (tracing is on or a buffer is open)" :
	    err == -EPERM ? " (refused by kernel lockdown: see /sys/kernel/security/lockdown)" : "");
}

/* Write @value to @name unless it already reads so. */
static void set_control(const char *name, const char *value)
{
	char cur[64];
	int err;

	err = ctl_read(&ctl, name, cur, sizeof(cur));
	if (err < 0)
		die_control(name, err);
	if (!strcmp(cur, value))
		return;
	err = ctl_write(&ctl, name, value);
	if (err)
		die_control(name, err);
	info("%s set to %s (was %s)", name, value, cur);
}

/* Where ringtrace lives, or a one-line reason why it cannot be used. */
static void check_ringtrace(void)
{
	char why[512];

	if (ctl_find(&ctl, opt.debugfs, why, sizeof(why)))
		die("%s", why);
	if (ctl.dev)
		info("using %s (debugfs is not mounted or refuses: lockdown?)",
		     ctl.dir);
	if (opt.mode)
		set_control("mode", opt.mode);
	if (opt.subbuf_size || opt.num_subbufs) {
		char v[32];

		/* num_subbufs first or last: both reallocate; order is moot. */
		if (opt.subbuf_size) {
			snprintf(v, sizeof(v), "%llu",
				 (unsigned long long)opt.subbuf_size);
			set_control("subbuf_size", v);
		}
		if (opt.num_subbufs) {
			snprintf(v, sizeof(v), "%llu",
				 (unsigned long long)opt.num_subbufs);
			set_control("num_subbufs", v);
		}
	}
}

/* ------------------------------------------------------------------ */
/* CPU buffers                                                          */
/* ------------------------------------------------------------------ */

/* The CPUs that have a buffer (numeric entries of <ctl.dir>/cpu), sorted. */
static unsigned int *cpu_ids;
static unsigned int ncpu_ids;
static bool *cpu_wanted;		/* indexed like cpu_ids */

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

static void list_cpus(void)
{
	char path[PATH_MAX + 8];
	unsigned int cap = 0, cpu;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cpu", ctl.dir);
	d = opendir(path);
	if (!d)
		die("%s: %s", path, strerror(errno));
	while ((de = readdir(d))) {
		if (!parse_uint(de->d_name, &cpu))
			continue;
		if (ncpu_ids == cap) {
			cap = cap ? 2 * cap : 64;
			cpu_ids = realloc(cpu_ids, cap * sizeof(*cpu_ids));
			if (!cpu_ids)
				die("%s", strerror(ENOMEM));
		}
		cpu_ids[ncpu_ids++] = cpu;
	}
	closedir(d);
	if (!ncpu_ids)
		die("%s: no CPU buffers", path);
	qsort(cpu_ids, ncpu_ids, sizeof(*cpu_ids), cmp_uint);
}

static void want_cpu(unsigned int cpu, void *unused __attribute__((unused)))
{
	unsigned int i;

	for (i = 0; i < ncpu_ids; i++) {
		if (cpu_ids[i] == cpu) {
			cpu_wanted[i] = true;
			return;
		}
	}
	die("CPU %u: no buffer in %s/cpu (CPUs with a buffer: %u-%u)", cpu,
	    ctl.dir, cpu_ids[0], cpu_ids[ncpu_ids - 1]);
}

static void open_buffers(void)
{
	unsigned int i;
	int err;

	list_cpus();
	cpu_wanted = calloc(ncpu_ids, sizeof(*cpu_wanted));
	cpus = calloc(ncpu_ids, sizeof(*cpus));
	if (!cpu_wanted || !cpus)
		die("%s", strerror(ENOMEM));
	if (opt.cpus)
		parse_cpu_list(opt.cpus, want_cpu, NULL);
	else
		memset(cpu_wanted, true, ncpu_ids * sizeof(*cpu_wanted));

	for (i = 0; i < ncpu_ids; i++) {
		struct cpu *c = &cpus[ncpus];

		if (!cpu_wanted[i])
			continue;
		c->buf.fd = -1;
		c->out.fd = -1;
		err = buffer_open(&c->buf, ctl.dir, cpu_ids[i]);
		/* A CPU not online since the module loaded has no buffer. */
		if (err == -ENODEV && !opt.cpus) {
			info("CPU %u: no buffer (not online since ringtrace.ko loaded): not recorded",
			     cpu_ids[i]);
			continue;
		}
		if (err == -EPROTO)
			die("%s: unexpected meta page (module and daemon from different versions?)",
			    c->buf.path);
		if (err)
			die("%s: %s%s", c->buf.path, strerror(-err),
			    err == -EBUSY ? " (another consumer has it open)" :
			    err == -EACCES ? " (ringtrace needs root)" :
			    err == -EPERM ? " (refused by kernel lockdown: see /sys/kernel/security/lockdown)" : "");
		ncpus++;
	}
}

/* ------------------------------------------------------------------ */
/* Output directory                                                     */
/* ------------------------------------------------------------------ */

static bool dir_is_empty(const char *path)
{
	struct dirent *de;
	bool empty = true;
	DIR *d = opendir(path);

	if (!d)
		return false;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* The directory entry of @path survives a power loss once this returns. */
static void sync_parent(const char *path)
{
	char parent[PATH_MAX];
	char *slash;
	int fd;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		warn("%s: %s (the trace directory may not survive a power loss)",
		     parent, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void make_outdir(void)
{
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	unsigned int i;

	if (opt.output) {
		snprintf(outdir, sizeof(outdir), "%s", opt.output);
		if (mkdir(outdir, 0750) < 0) {
			if (errno != EEXIST)
				die("%s: %s", outdir, strerror(errno));
			if (!dir_is_empty(outdir))
				die("%s: exists and is not an empty directory",
				    outdir);
		}
	} else {
		const char *base = opt.root ? opt.root :
				   msg_service ? SERVICE_DIR : ".";
		const char *prefix = opt.root || msg_service ? "" : "ringtrace-";

		opt.root = base;
		if (strcmp(base, ".") && mkdir(base, 0750) < 0 && errno != EEXIST)
			die("%s: %s", base, strerror(errno));
		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		for (i = 0;; i++) {
			if (i)
				snprintf(outdir, sizeof(outdir), "%s/%s%s.%u",
					 base, prefix, stamp, i);
			else
				snprintf(outdir, sizeof(outdir), "%s/%s%s",
					 base, prefix, stamp);
			if (mkdir(outdir, 0750) == 0)
				break;
			if (errno != EEXIST || i == 1000)
				die("%s: %s", outdir, strerror(errno));
		}
	}
	outdirfd = open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (outdirfd < 0)
		die("%s: %s", outdir, strerror(errno));
	outname = strrchr(outdir, '/') ? strrchr(outdir, '/') + 1 : outdir;
	sync_parent(outdir);
}

/* True the first time, then once 10 s have passed since it last was. */
static bool due_every_10s(time_t *last)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (*last && now.tv_sec - *last < 10)
		return false;
	*last = now.tv_sec;
	return true;
}

/*
 * --max-total, at start and then every 10 s from the flush tick.  The
 * running trace alone over the budget is said once, not at every tick.
 */
static void apply_retention(void)
{
	static time_t last;
	static bool said;
	int err;

	if (!opt.max_total || !opt.root)
		return;
	if (!due_every_10s(&last))
		return;
	err = retention_prune(opt.root, outname, opt.max_total, NULL);
	if (err == -ENOSPC && !said)
		warn("--max-total: the running trace alone is over %llu bytes: lower --max-size or --max-files",
		     (unsigned long long)opt.max_total);
	else if (err && err != -ENOSPC)
		warn("--max-total: %s: %s", opt.root, strerror(-err));
	said |= err == -ENOSPC;
}

/*
 * The trace's metadata (metadata.c), as of the newest event set any
 * buffer's meta page shows: a stale page only makes the first GET refresh
 * the copy for nothing.
 */
static void copy_metadata(void)
{
	uint64_t gen = 0;
	unsigned int i;
	int err;

	for (i = 0; i < ncpus; i++)
		if (buffer_events_gen(&cpus[i].buf) > gen)
			gen = buffer_events_gen(&cpus[i].buf);
	err = metadata_start(&ctl, outdirfd, gen);
	if (err == -EPROTO)
		die("%s/metadata: not CTF 1.8 metadata", ctl.dir);
	if (err)
		die("%s/metadata: %s", outdir, strerror(-err));
}

static void open_streams(void)
{
	uint32_t max = 0;
	unsigned int i;
	int err;

	for (i = 0; i < ncpus; i++)
		if (cpus[i].buf.subbuf_size > max)
			max = cpus[i].buf.subbuf_size;
	if (stream_init(max))
		die("%s", strerror(ENOMEM));
	for (i = 0; i < ncpus; i++) {
		adapt_init(&cpus[i].adapt, opt.level, opt.min_level,
			   buffer_lost(&cpus[i].buf));
		err = stream_open(&cpus[i].out, &stream_cfg, outdirfd,
				  cpus[i].buf.cpu);
		if (err)
			die("%s/%s: %s", outdir, cpus[i].out.name,
			    strerror(-err));
	}
	if (fsync(outdirfd) < 0)
		die("%s: %s", outdir, strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Draining                                                             */
/* ------------------------------------------------------------------ */

enum drain_result {
	DRAIN_EMPTY,		/* -EAGAIN: nothing complete right now */
	DRAIN_MORE,		/* budget used up, more may be ready */
	DRAIN_END,		/* -ENODATA: tracing off and all consumed */
};

/*
 * A write failed: the sub-buffer was not given back, so the next daemon
 * starts with it and the kernel counts whatever is lost meanwhile.  On a
 * full disk with --max-total, first remove every older trace (all the
 * budget allows removing), so that a restart (the unit's Restart=) has
 * room.
 */
static void die_output(struct cpu *c, int err)
{
	unsigned int removed = 0;

	if (err == -ENOSPC && opt.max_total && opt.root && outname)
		retention_prune(opt.root, outname, 0, &removed);
	die("%s/%s: %s%s", outdir, c->out.name, strerror(-err),
	    removed ? " (older traces removed to make room: a restart goes on where this stopped)" : "");
}

/* GET, write, PUT: two ioctls per sub-buffer besides the write. */
static enum drain_result drain(struct cpu *c, unsigned int budget)
{
	struct ringtrace_subbuf sb;
	int err;

	while (budget--) {
		err = buffer_get(&c->buf, &sb);
		if (err == -EAGAIN)
			return DRAIN_EMPTY;
		if (err == -ENODATA)
			return DRAIN_END;
		if (err == -EPROTO)
			die("%s: GET_SUBBUF: sub-buffer at offset %llu with %llu bytes is outside the mapping",
			    c->buf.path, (unsigned long long)sb.offset,
			    (unsigned long long)sb.content_size);
		if (err)
			die("%s: GET_SUBBUF: %s%s", c->buf.path, strerror(-err),
			    err == -EIO ? " (the module disabled this buffer, see dmesg)" : "");

		/* An event registered since: its declaration first. */
		err = metadata_follow(&ctl, outdirfd,
				      buffer_events_gen(&c->buf));
		if (err)
			warn("%s/metadata: the new events' declarations: %s",
			     outdir, strerror(-err));

		err = stream_set_level(&c->out, adapt_level(&c->adapt,
				buffer_waiting(&c->buf, &sb),
				(uint64_t)(c->buf.num_subbufs - 1) *
				c->buf.subbuf_size, buffer_lost(&c->buf)));
		if (!err)
			err = stream_packet(&c->out, c->buf.map + sb.offset,
					    sb.content_size);
		if (err)
			die_output(c, err);	/* the packet stays in the kernel */
		if (opt.delay_us)
			usleep(opt.delay_us);

		err = buffer_put(&c->buf, &sb);
		if (err)
			die("%s: PUT_SUBBUF: %s", c->buf.path, strerror(-err));
	}
	return DRAIN_MORE;
}

/* Everything complete now goes out; packets still open stay open. */
static unsigned int drain_budget(const struct cpu *c)
{
	return c->buf.num_subbufs + 2;
}

/* Close the open packet of @c, if any, so that it can be drained. */
static void flush_cpu(struct cpu *c, bool always)
{
	struct ringtrace_positions pos;
	int err;

	if (!always) {
		/* An idle CPU is not interrupted for nothing. */
		err = buffer_positions(&c->buf, &pos);
		if (err)
			die("%s: GET_POSITIONS: %s", c->buf.path, strerror(-err));
		if (!positions_packet_open(&pos))
			return;
	}
	err = buffer_flush(&c->buf);
	if (err)
		die("%s: FLUSH: %s", c->buf.path, strerror(-err));
}

/*
 * Periodic: whatever was traced so far becomes decodable in the files.
 * The packets the flush completed are drained one per CPU per round, as
 * in run(), so that a CPU slow to compress does not hold up the others.
 */
static void flush_all(void)
{
	unsigned int i, round, rounds = ncpus ? drain_budget(&cpus[0]) : 0;
	bool more = true;
	int err;

	for (i = 0; i < ncpus; i++)
		flush_cpu(&cpus[i], false);
	for (round = 0; more && round < rounds; round++) {
		more = false;
		for (i = 0; i < ncpus; i++)
			if (drain(&cpus[i], 1) == DRAIN_MORE)
				more = true;
	}
	for (i = 0; i < ncpus; i++) {
		err = stream_end_frame(&cpus[i].out);
		if (err)
			die_output(&cpus[i], err);
	}
}

static void rotate_all(void)
{
	unsigned int i;
	int err;

	flush_all();
	for (i = 0; i < ncpus; i++) {
		err = stream_rotate(&cpus[i].out);
		if (err)
			die_output(&cpus[i], err);
	}
	info("rotated: now writing %s/%s ...", outdir,
	     ncpus ? cpus[0].out.name : "");
}

/* ------------------------------------------------------------------ */
/* Reports                                                              */
/* ------------------------------------------------------------------ */

static double ratio(uint64_t in, uint64_t out)
{
	return out ? (double)in / (double)out : 0.0;
}

static void print_report(const char *title)
{
	uint64_t packets = 0, in = 0, out = 0, lost_all = 0, faster = 0;
	struct ringtrace_stats st;
	unsigned int i;
	int err;

	report("%s", title);
	for (i = 0; i < ncpus; i++) {
		struct cpu *c = &cpus[i];
		uint64_t lost;

		report("CPU %u: %llu sub-buffers, %llu bytes in, %llu bytes out, ratio %.2f",
		       c->buf.cpu, (unsigned long long)c->out.packets,
		       (unsigned long long)c->out.bytes_in,
		       (unsigned long long)c->out.bytes_out,
		       ratio(c->out.bytes_in, c->out.bytes_out));
		if (c->out.packets_faster)
			report("CPU %u: %llu sub-buffers compressed faster than level %s to keep up (down to %s%s)",
			       c->buf.cpu,
			       (unsigned long long)c->out.packets_faster,
			       level_name(opt.level).s,
			       c->out.lowest_level == RT_LEVEL_STORE ?
			       "" : "level ",
			       level_name(c->out.lowest_level).s);
		packets += c->out.packets;
		faster += c->out.packets_faster;
		in += c->out.bytes_in;
		out += c->out.bytes_out;

		err = buffer_stats(&c->buf, &st);
		if (err) {
			report("CPU %u: GET_STATS: %s", c->buf.cpu,
			       strerror(-err));
			continue;
		}
		lost = st.lost_full + st.lost_overrun + st.lost_held +
		       st.lost_nested + st.lost_too_big;
		lost_all += lost;
		report("CPU %u: %llu events lost (full %llu, overrun %llu, held %llu, nested %llu, too big %llu); %llu written, %llu delivered",
		       c->buf.cpu, (unsigned long long)lost,
		       (unsigned long long)st.lost_full,
		       (unsigned long long)st.lost_overrun,
		       (unsigned long long)st.lost_held,
		       (unsigned long long)st.lost_nested,
		       (unsigned long long)st.lost_too_big,
		       (unsigned long long)st.written,
		       (unsigned long long)st.delivered);
	}
	report("total: %llu sub-buffers, %llu bytes in, %llu bytes out, ratio %.2f, %llu events lost, %llu sub-buffers at faster levels",
	       (unsigned long long)packets, (unsigned long long)in,
	       (unsigned long long)out, ratio(in, out),
	       (unsigned long long)lost_all, (unsigned long long)faster);
}

/* ------------------------------------------------------------------ */
/* Stop                                                                 */
/* ------------------------------------------------------------------ */

/*
 * With tracing off, GET itself closes what is still open and reports
 * -ENODATA once everything is consumed; a loss-report packet that found no
 * room earlier is emitted once the buffer has been drained, hence the
 * retries.  With tracing on, FLUSH closes the open packet and what is
 * complete then is drained; later events stay in the kernel for the next
 * consumer.
 */
static void drain_for_stop(struct cpu *c, bool tracing_off)
{
	enum drain_result r;
	unsigned int round;

	if (!tracing_off) {
		flush_cpu(c, true);
		drain(c, drain_budget(c));
		return;
	}
	for (round = 0; round < 8; round++) {
		r = drain(c, 2 * drain_budget(c));
		if (r == DRAIN_END)
			return;
	}
	warn("CPU %u: not drained to the end after tracing stopped (tracing turned on again?)",
	     c->buf.cpu);
}

static void stop(void)
{
	bool off = opt.start || opt.stop_on_exit;
	char title[PATH_MAX + 64];
	unsigned int i;
	int err;

	notify_systemd("STOPPING=1");
	/* Its round, if any, completes; the syncs below make the rest durable. */
	syncer_stop();
	if (off) {
		err = ctl_write(&ctl, "tracing_on", "0");
		if (err) {
			warn("%s/tracing_on: %s (flushing instead)", ctl.dir,
			     strerror(-err));
			off = false;
		}
	}
	for (i = 0; i < ncpus; i++)
		drain_for_stop(&cpus[i], off);
	for (i = 0; i < ncpus; i++) {
		err = stream_sync(&cpus[i].out);
		if (err)
			die_output(&cpus[i], err);
	}
	if (fsync(outdirfd) < 0)
		die("%s: %s", outdir, strerror(errno));
	snprintf(title, sizeof(title), "ringtraced: stopped, trace in %s", outdir);
	print_report(title);
	for (i = 0; i < ncpus; i++) {
		stream_close(&cpus[i].out);
		buffer_close(&cpus[i].buf);
	}
}

/* die() hook: end the frames that can be ended; tracing is left as is. */
static void emergency_close(void)
{
	unsigned int i;

	for (i = 0; i < ncpus; i++) {
		stream_close(&cpus[i].out);
		buffer_close(&cpus[i].buf);
	}
	if (outdirfd >= 0)
		fsync(outdirfd);
}

/* ------------------------------------------------------------------ */
/* Main loop                                                            */
/* ------------------------------------------------------------------ */

static void setup_signals(void)
{
	sigset_t set;

	/* Blocked before anything else runs, then read from the signalfd. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		die("sigprocmask: %s", strerror(errno));
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0)
		die("signalfd: %s", strerror(errno));
	/* A closed stdout must give EPIPE, not kill us mid-trace. */
	signal(SIGPIPE, SIG_IGN);
	/* Past a file size limit, write() fails with EFBIG: a clean error. */
	signal(SIGXFSZ, SIG_IGN);
}

static void epoll_add(int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/*
 * A CPU buffer reports EPOLLHUP while tracing is stopped and all of it
 * was read, whatever the events asked for: such a CPU leaves the epoll set
 * and comes back at the next flush tick to see if tracing started again.
 */
static void park_cpu(unsigned int i)
{
	if (epoll_ctl(epfd, EPOLL_CTL_DEL, cpus[i].buf.fd, NULL) < 0)
		die("epoll_ctl: %s", strerror(errno));
	cpus[i].parked = true;
}

static void unpark_cpus(void)
{
	unsigned int i;

	for (i = 0; i < ncpus; i++) {
		if (!cpus[i].parked)
			continue;
		epoll_add(cpus[i].buf.fd, i);
		cpus[i].parked = false;
	}
}

static void setup_epoll(void)
{
	unsigned int i;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	for (i = 0; i < ncpus; i++)
		epoll_add(cpus[i].buf.fd, i);
	epoll_add(sigfd, TAG_SIGNAL);

	if (opt.flush_ms) {
		struct itimerspec its = {
			.it_interval.tv_sec = opt.flush_ms / 1000,
			.it_interval.tv_nsec = (long)(opt.flush_ms % 1000) * 1000000,
		};

		its.it_value = its.it_interval;
		timerfd = timerfd_create(CLOCK_MONOTONIC,
					 TFD_NONBLOCK | TFD_CLOEXEC);
		if (timerfd < 0)
			die("timerfd_create: %s", strerror(errno));
		if (timerfd_settime(timerfd, 0, &its, NULL) < 0)
			die("timerfd_settime: %s", strerror(errno));
		epoll_add(timerfd, TAG_TIMER);
	}
}

/*
 * After a flush tick's frames ended: make them durable on the syncer's
 * thread (syncer.c).  A round still running takes this tick's place.
 */
static void request_sync(void)
{
	static uint64_t synced_bytes;
	uint64_t bytes = 0;
	static int *fds;
	unsigned int i;
	int err;

	/* Nothing written since the last round: an idle disk stays idle. */
	for (i = 0; i < ncpus; i++)
		bytes += cpus[i].out.bytes_out;
	if (bytes == synced_bytes)
		return;
	if (!fds && !(fds = calloc(ncpus ? ncpus : 1, sizeof(*fds))))
		return;
	for (i = 0; i < ncpus; i++)
		fds[i] = cpus[i].out.fd;
	err = syncer_request(fds, ncpus, outdirfd);
	if (!err)
		synced_bytes = bytes;
	if (err && err != -EBUSY && err != -ENOTCONN)
		warn("%s: cannot sync: %s", outdir, strerror(-err));
}

/* systemd's STATUS=, every 10 s: what a `systemctl status` shows. */
static void service_status(void)
{
	static time_t last;
	uint64_t packets = 0, bytes = 0, lost = 0, rounds, failures;
	char status[512];
	int last_err;
	unsigned int i;

	if (!msg_service)
		return;
	if (!due_every_10s(&last))
		return;
	for (i = 0; i < ncpus; i++) {
		packets += cpus[i].out.packets;
		bytes += cpus[i].out.bytes_out;
		lost += buffer_lost(&cpus[i].buf);
	}
	syncer_status(&rounds, &failures, &last_err);
	snprintf(status, sizeof(status),
		 "STATUS=%s: %llu packets, %.1f MiB written, %llu events lost, %llu syncs%s%s",
		 outname, (unsigned long long)packets, (double)bytes / 1048576.0,
		 (unsigned long long)lost, (unsigned long long)rounds,
		 failures ? ", sync failed: " : "",
		 failures ? strerror(last_err) : "");
	notify_systemd(status);
}

/* Returns true when asked to stop. */
static bool handle_signals(void)
{
	struct signalfd_siginfo si;
	bool quit = false;
	ssize_t n;

	while ((n = read(sigfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGINT:
		case SIGTERM:
			quit = true;
			break;
		case SIGHUP:
			rotate_all();
			break;
		case SIGUSR1:
			print_report("ringtraced: statistics");
			break;
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		die("signalfd: %s", strerror(errno));
	return quit;
}

/* epoll_wait()'s timeout: parked CPUs need a tick when there is no timer. */
static int parked_wait_ms(void)
{
	unsigned int i;

	if (opt.flush_ms)
		return -1;
	for (i = 0; i < ncpus; i++)
		if (cpus[i].parked)
			return 1000;
	return -1;
}

static void run(void)
{
	struct epoll_event evs[64];
	uint64_t ticks;
	bool quit = false;
	int n, i;

	while (!quit) {
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), parked_wait_ms());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u32;

			if (tag == TAG_SIGNAL) {
				quit |= handle_signals();
			} else if (tag == TAG_TIMER) {
				if (read(timerfd, &ticks, sizeof(ticks)) > 0) {
					flush_all();
					request_sync();
				}
				unpark_cpus();
				apply_retention();
				service_status();
			} else if (tag < ncpus && (evs[i].events & EPOLLHUP) &&
				   !(evs[i].events & EPOLLIN)) {
				park_cpu(tag);
			} else if (tag < ncpus) {
				/*
				 * One packet per ready CPU per round, so that a
				 * CPU whose packets are slow to compress cannot
				 * keep the daemon from the others while their
				 * rings fill.  Level-triggered: a CPU left with
				 * more is in the next round.
				 */
				drain(&cpus[tag], 1);
			}
		}
		/* Without a flush timer, parked CPUs come back every second. */
		if (!n && !opt.flush_ms)
			unpark_cpus();
	}
}

int main(int argc, char **argv)
{
	char levels[48];
	int err;

	msg_prog = PROG;
	parse_options(argc, argv);
	setup_signals();
	set_die_hook(emergency_close);

	check_ringtrace();
	open_buffers();
	make_outdir();
	apply_retention();
	copy_metadata();
	open_streams();
	setup_epoll();
	if (opt.flush_ms && !opt.once) {
		err = syncer_start(ncpus);
		if (err)
			die("the sync thread: %s", strerror(-err));
	}

	if (opt.start) {
		err = ctl_write(&ctl, "tracing_on", "1");
		if (err)
			die("%s/tracing_on: %s", ctl.dir, strerror(-err));
	}
	snprintf(levels, sizeof(levels), opt.min_level < opt.level ?
		 " (down to %s when behind)" : "", level_name(opt.min_level).s);
	info("recording %u CPU%s (%u x %u bytes each) into %s, zstd level %s%s%s",
	     ncpus, ncpus == 1 ? "" : "s", cpus[0].buf.num_subbufs,
	     cpus[0].buf.subbuf_size, outdir, level_name(opt.level).s, levels,
	     opt.start ? ", tracing on" : "");
	notify_systemd("READY=1");

	if (!opt.once)
		run();
	stop();
	return 0;
}
