// SPDX-License-Identifier: GPL-2.0
/*
 * faultinject - fail the 1st, 2nd, ... Nth allocation of one ringtrace
 * operation, until the operation succeeds without consuming the fault,
 * and check after every injected failure that the operation failed
 * cleanly and changed nothing.  Run by selftests/faultinject_guest.sh on a
 * kernel with CONFIG_FAULT_INJECTION (tools/vm/build-debug-kernel), as
 * root, with the failslab and fail_page_alloc attributes set up to fail
 * any allocation (ignore-gfp-wait=N, min-order=0, verbose=0).
 *
 *   faultinject -m RINGTRACE_KO -s SPLAT_REGEX [-e MAX_EXHAUSTIVE]
 *               [-n SAMPLE] [-S SEED] [PATH...]
 *
 * One system call per PATH (the "op") runs with
 * /proc/self/task/<tid>/fail-nth set to N, which fails the Nth allocation
 * in this task.  Reading the file back tells whether that fault was
 * consumed, and how many allocations the op made when it was not.  Every
 * one of them is failed in turn when there are at most MAX_EXHAUSTIVE
 * (default 300); past that, the first 16, the last 8 and SAMPLE (default
 * 50) drawn at random between, with SEED (default: a random one, printed
 * first as "# faultinject: seed=SEED sample=SAMPLE": -S SEED repeats a
 * run's draws), so that each run fails other allocations (see sweep()).
 * Without PATHs, every path but "unload" (see on_request).  Per injected
 * fault:
 *
 *   - the op failed with ENOMEM, or it succeeded anyway (the kernel fell
 *     back, as kvmalloc() does) and then did all it should;
 *   - after a failure, every control file reads what it read before (the
 *     "state"), and what the path checks besides (the module absent after
 *     a failed load, the CPU still down after a failed online, ...);
 *   - tracing still records and delivers: a marker written now comes out
 *     of cpu0's buffer through GET/PUT, together with a marker written
 *     before the op when the op could have dropped the buffers' data;
 *   - the kernel logged nothing that matches SPLAT_REGEX (the patterns
 *     tools/vm/vmtest fails a run on).
 *
 * Paths marked "module" below count only the allocations made while
 * ringtrace.ko's code is on the stack (the fault attributes' stack filter,
 * CONFIG_FAULT_INJECTION_STACKTRACE_FILTER): a module load and a CPU
 * coming up make hundreds of allocations in the module loader and the
 * hotplug core, whose unwinding is not ringtrace's.  The others count
 * every allocation of the system call, the VFS's included: a failure
 * after ringtrace's open() has run must not leave the buffer busy.
 *
 * Prints one "ok"/"not ok" line per path and per bad fault, then
 * "# faultinject: passed=N failed=M" (one check per injected fault and
 * per path's final success) for the suite script to count.  Exits 1 if
 * anything failed, 4 (kselftest's SKIP) if the kernel has no fail-nth.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/ringtrace.h>

#include "rt_files.h"

#define DEBUGFS		"/sys/kernel/debug"
#define ROOT		DEBUGFS "/ringtrace"
#define DEVROOT		"/dev/ringtrace"
#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"
/* Where x86-64's module mapping area ends (MODULES_END). */
#define MODULES_END	0xffffffffff000000UL
#define KSFT_SKIP	4

static const char *ko_path;
static void *ko_image;
static size_t ko_size;
static regex_t splat_re;
static unsigned int max_exhaustive = 300;
/* Faults drawn between the head and the tail of a sampled op, and how. */
static unsigned int sample_middle = 50;
static unsigned short sample_state[3];	/* erand48()'s, from the seed */
static int nth_fd = -1, kmsg_fd = -1;
static long page_size;
static unsigned long modules_start;	/* kernel image end: modules above */
static unsigned int passed, failed;
static unsigned int seq;		/* makes every marker unique */

/* The files of a freshly loaded module, for the load path. */
static char *ref_tree;
/* The loaded module's metadata, without its clock offset. */
static char *ref_metadata;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("# ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

/* One write() of all of @s: 0 or -errno. */
static int write_str(const char *path, const char *s)
{
	ssize_t n = rt_write_file(path, s, strlen(s));

	return n < 0 ? n : n == (ssize_t)strlen(s) ? 0 : -EIO;
}

static int ctl_write(const char *name, const char *s)
{
	char path[256];

	snprintf(path, sizeof(path), ROOT "/%s", name);
	return write_str(path, s);
}

static ssize_t ctl_read(const char *name, char *buf, size_t size)
{
	char path[256];

	snprintf(path, sizeof(path), ROOT "/%s", name);
	return rt_read_file(path, buf, size);
}

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* ------------------------------------------------------------------ */
/* fail-nth, the fault attributes' stack filter, the kernel log        */
/* ------------------------------------------------------------------ */

/*
 * Arm the Nth allocation of this task to fail.  Nothing between here and
 * fault_left() may allocate in the kernel but the op: no stdio, no new
 * memory (mlockall() and -z now keep page faults and lazy binding out).
 */
static int fault_arm(unsigned int n)
{
	char num[16];
	int len = snprintf(num, sizeof(num), "%u", n);

	return pwrite(nth_fd, num, len, 0) == len ? 0 : -errno;
}

/*
 * After the op: disarm, and return what fail-nth had left to count (0:
 * the fault was injected).
 */
static unsigned int fault_left(void)
{
	char num[16] = "";
	ssize_t n;

	n = pread(nth_fd, num, sizeof(num) - 1, 0);
	if (pwrite(nth_fd, "0", 1, 0) != 1 || n <= 0) {
		diag("fail-nth: %s", strerror(errno));
		exit(1);
	}
	return strtoul(num, NULL, 10);
}

/* Count only allocations made with a module's code on the stack, or all. */
static int fault_filter(bool module_frames)
{
	static const char *const attrs[] = { "failslab", "fail_page_alloc" };
	char path[128], num[32];
	unsigned int i;
	int ret;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), DEBUGFS "/%s/require-start",
			 attrs[i]);
		snprintf(num, sizeof(num), "%lu",
			 module_frames ? modules_start : 0);
		ret = write_str(path, num);
		if (ret)
			return ret;
		snprintf(path, sizeof(path), DEBUGFS "/%s/require-end",
			 attrs[i]);
		snprintf(num, sizeof(num), "%lu",
			 module_frames ? MODULES_END : ~0UL);
		ret = write_str(path, num);
		if (ret)
			return ret;
	}
	return 0;
}

/* Forget what the kernel logged so far. */
static void kmsg_skip(void)
{
	lseek(kmsg_fd, 0, SEEK_END);
}

/* Print and count the splat lines logged since kmsg_skip(). */
static unsigned int kmsg_splats(void)
{
	char rec[8192], *msg, *nl;
	unsigned int splats = 0;
	ssize_t n;

	for (;;) {
		n = read(kmsg_fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = '\0';
		if (!regexec(&splat_re, msg, 0, NULL, 0)) {
			diag("kernel: %s", msg);
			splats++;
		}
	}
	return splats;
}

/* ------------------------------------------------------------------ */
/* Module load and unload                                               */
/* ------------------------------------------------------------------ */

static bool module_loaded(void)
{
	return exists("/sys/module/ringtrace");
}

static long load_module(void)
{
	return syscall(SYS_init_module, ko_image, ko_size, "") ? -errno : 0;
}

static int unload_module(void)
{
	return syscall(SYS_delete_module, "ringtrace", O_NONBLOCK) ? -errno : 0;
}

/* Whether any file of @path (a /proc or /sys list) names ringtrace. */
static bool file_mentions(const char *path, const char *word)
{
	char buf[16384];

	if (rt_read_file(path, buf, sizeof(buf)) < 0)
		return false;
	return strstr(buf, word);
}

/*
 * /dev nodes are devtmpfs's, made and removed on the module's behalf with
 * allocations of their own (the node name, '!' replaced by '/') whose
 * failure devtmpfs ignores, as udev would miss a lost uevent: a node can
 * be missing after a load that consumed a fault, or left behind after an
 * unload that did.  That is the kernel's best effort, not ringtrace's
 * state; the device itself (/sys/class/ringtrace) is ringtrace's.  Stale
 * nodes are removed so that a later load gets its own.
 */
static unsigned int stale_nodes;	/* times, reported per path */

static void dev_nodes_stale(void)
{
	if (!exists(DEVROOT))
		return;
	if (!stale_nodes++)
		diag("devtmpfs left %s behind (its allocation failed): removed",
		     DEVROOT);
	if (system("rm -rf " DEVROOT))
		diag("rm -rf %s failed", DEVROOT);
}

/* Nothing of the module is left: no file, device, class or hotplug state. */
static bool module_gone(void)
{
	static const char *const paths[] = {
		"/sys/module/ringtrace", ROOT, "/sys/class/ringtrace",
	};
	bool gone = true;
	unsigned int i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (exists(paths[i])) {
			diag("%s is still there", paths[i]);
			gone = false;
		}
	}
	dev_nodes_stale();
	if (file_mentions("/proc/devices", "ringtrace")) {
		diag("/proc/devices still lists ringtrace");
		gone = false;
	}
	if (file_mentions("/sys/devices/system/cpu/hotplug/states",
			  "ringtrace")) {
		diag("a ringtrace CPU hotplug state is still registered");
		gone = false;
	}
	return gone;
}

/*
 * The tree listing: every file under ROOT (with its mode) and every
 * device of /sys/class/ringtrace.
 */
static char *tree;
static size_t tree_len, tree_size;

static int tree_add(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	size_t len = strlen(path) + 2;

	(void)ftw;
	/* Files of debugfs, device links of the class. */
	if (type != FTW_F && type != FTW_SL)
		return 0;
	if (tree_len + len + 16 > tree_size) {
		tree_size = (tree_size + len) * 2 + 4096;
		tree = realloc(tree, tree_size);
		if (!tree)
			return -1;
	}
	tree_len += sprintf(tree + tree_len, "%s %o\n", path,
			    st->st_mode & 07777);
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted listing of both trees, malloc()ed. */
static char *tree_list(void)
{
	char *lines[8192], *sorted, *line, *save;
	size_t n = 0, i, len = 0;

	free(tree);
	tree = NULL;
	tree_len = tree_size = 0;
	if (nftw(ROOT, tree_add, 16, FTW_PHYS) ||
	    nftw("/sys/class/ringtrace", tree_add, 16, FTW_PHYS) || !tree)
		return NULL;
	for (line = strtok_r(tree, "\n", &save); line && n < 8192;
	     line = strtok_r(NULL, "\n", &save))
		lines[n++] = line;
	qsort(lines, n, sizeof(lines[0]), cmp_lines);
	sorted = malloc(tree_len + 1);
	if (!sorted)
		return NULL;
	for (i = 0; i < n; i++)
		len += sprintf(sorted + len, "%s\n", lines[i]);
	sorted[len] = '\0';
	return sorted;
}

/* ------------------------------------------------------------------ */
/* State: what the control files read                                   */
/* ------------------------------------------------------------------ */

static const char *const state_files[] = {
	"tracing_on", "mode", "subbuf_size", "num_subbufs", "set_event",
	"set_event_pid", "event_fork", "events/enable",
};

/* The control files, and which CPUs have a buffer (the stats lines). */
static void state_read(char *buf, size_t size)
{
	char val[4096], *line, *save;
	size_t len = 0;
	unsigned int i;
	ssize_t n;

	buf[0] = '\0';
	for (i = 0; i < sizeof(state_files) / sizeof(state_files[0]); i++) {
		n = ctl_read(state_files[i], val, sizeof(val));
		len += snprintf(buf + len, size - len, "%s=%s", state_files[i],
				n < 0 ? strerror(-n) : val);
	}
	n = ctl_read("stats", val, sizeof(val));
	if (n < 0)
		val[0] = '\0';
	len += snprintf(buf + len, size - len, "stats:");
	for (line = strtok_r(val, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		len += snprintf(buf + len, size - len, " %.*s",
				(int)strcspn(line, " "), line);
	snprintf(buf + len, size - len, "\n");
}

static bool state_same(const char *before, const char *what)
{
	char after[8192];

	state_read(after, sizeof(after));
	if (!strcmp(before, after))
		return true;
	diag("%s changed the state:", what);
	diag("before: %s", before);
	diag("after:  %s", after);
	return false;
}

/* ------------------------------------------------------------------ */
/* The round trip: tracing records and delivers                         */
/* ------------------------------------------------------------------ */

/* Write marker @tag (tracing must be on to record it): 0 or -errno. */
static int marker(const char *tag)
{
	return ctl_write("marker", tag);
}

/*
 * Write a new marker, stop tracing, read cpu0's buffer to the end: the
 * new marker must be there, and @keep (if not NULL) too; @absent (if not
 * NULL) must not.  Tracing is left as it was.  Consumes what was there.
 */
static bool roundtrip(const char *keep, const char *absent)
{
	struct ringtrace_subbuf sb = { .size = sizeof(sb) };
	bool found = false, kept = !keep, clean = true;
	const struct ringtrace_meta *meta;
	size_t len = 0;
	char tag[64], on[8];
	void *map = MAP_FAILED;
	int fd, ret;

	snprintf(tag, sizeof(tag), "fi-roundtrip-%u", ++seq);
	if (ctl_read("tracing_on", on, sizeof(on)) < 0) {
		diag("roundtrip: tracing_on: %s", strerror(errno));
		return false;
	}
	fd = open(ROOT "/cpu/0/buffer", O_RDONLY);
	if (fd < 0) {
		diag("roundtrip: open cpu/0/buffer: %s", strerror(errno));
		return false;
	}
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED) {
		diag("roundtrip: mmap of the meta page: %s", strerror(errno));
		goto out;
	}
	len = meta->meta_page_size + (size_t)meta->subbuf_size * meta->num_subbufs;
	munmap((void *)meta, page_size);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		diag("roundtrip: mmap: %s", strerror(errno));
		goto out;
	}
	if ((on[0] == '0' && ctl_write("tracing_on", "1")) || marker(tag) ||
	    ctl_write("tracing_on", "0")) {
		diag("roundtrip: cannot trace: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		ret = ioctl(fd, RINGTRACE_IOC_GET_SUBBUF, &sb);
		if (ret && errno == ENODATA)
			break;
		if (ret) {
			diag("roundtrip: GET: %s", strerror(errno));
			goto out;
		}
		found |= !!memmem((char *)map + sb.offset, sb.content_size,
				  tag, strlen(tag));
		if (keep)
			kept |= !!memmem((char *)map + sb.offset,
					 sb.content_size, keep, strlen(keep));
		if (absent && memmem((char *)map + sb.offset, sb.content_size,
				     absent, strlen(absent)))
			clean = false;
		if (ioctl(fd, RINGTRACE_IOC_PUT_SUBBUF, &sb)) {
			diag("roundtrip: PUT: %s", strerror(errno));
			goto out;
		}
	}
	if (on[0] == '1' && ctl_write("tracing_on", "1"))
		diag("roundtrip: tracing_on 1: %s", strerror(errno));
	if (!found)
		diag("roundtrip: marker %s not delivered", tag);
	if (!kept)
		diag("roundtrip: marker %s, written before, is gone", keep);
	if (!clean)
		diag("roundtrip: marker %s recorded by a failed write", absent);
out:
	if (map != MAP_FAILED)
		munmap(map, len);
	close(fd);
	return found && kept && clean;
}

/* ------------------------------------------------------------------ */
/* The paths                                                            */
/* ------------------------------------------------------------------ */

/*
 * prepare() brings the precondition about (nothing armed) and opens what
 * op() needs; op() is the one system call under fault (>= 0 or -errno);
 * failed() and done() check the outcome and undo what needs undoing
 * before the next prepare().
 */
struct fi_path {
	const char *name;
	const char *what;
	bool module_frames;
	int (*prepare)(void);
	long (*op)(void);
	bool (*failed)(void);
	bool (*done)(void);
	/* The op may drop the buffers' data: check a marker survives. */
	bool keeps_data;
	/* The op writes marker_tag: a failed op must not record it. */
	bool writes_marker;
	/*
	 * Only when named: unloading has no error path (its faults all land
	 * in the driver core's uevents and devtmpfs, which carry on without),
	 * and each attempt costs a load and an unload.
	 */
	bool on_request;
};

static int op_fd = -1, op_fd2 = -1;
static char keep_tag[64];		/* written by prepare() */
static char op_tag[64];			/* what a marker op writes */
static bool dirty;			/* prepare() must start over */

static void close_op_fds(void)
{
	if (op_fd >= 0)
		close(op_fd);
	if (op_fd2 >= 0)
		close(op_fd2);
	op_fd = op_fd2 = -1;
}

static int open_op(const char *path, int flags)
{
	op_fd = open(path, flags);
	return op_fd < 0 ? -errno : 0;
}

static long write_op(const char *s)
{
	ssize_t n = write(op_fd, s, strlen(s));

	return n < 0 ? -errno : n;
}

/* Loaded, stopped, discard mode, no event, no filter, @sb x @nr. */
static int loaded(const char *sb, const char *nr)
{
	char val[32];
	int ret;

	if (!module_loaded()) {
		ret = load_module();
		if (ret)
			return ret;
	}
	ret = ctl_write("tracing_on", "0") ?: ctl_write("mode", "discard") ?:
	      ctl_write("events/enable", "0") ?: ctl_write("event_fork", "0") ?:
	      ctl_write("set_event_pid", " ");
	if (ret)
		return ret;
	/* Geometry writes reallocate: only what differs. */
	if (ctl_read("subbuf_size", val, sizeof(val)) < 0 ||
	    strtoul(val, NULL, 0) != strtoul(sb, NULL, 0))
		ret = ctl_write("subbuf_size", sb);
	if (!ret && (ctl_read("num_subbufs", val, sizeof(val)) < 0 ||
		     strtoul(val, NULL, 0) != strtoul(nr, NULL, 0)))
		ret = ctl_write("num_subbufs", nr);
	return ret;
}

static int loaded_default(void)
{
	return loaded("65536", "16");
}

/* A marker in cpu0's buffer that the op must not lose. */
static int keep_marker(void)
{
	snprintf(keep_tag, sizeof(keep_tag), "fi-keep-%u", ++seq);
	return ctl_write("tracing_on", "1") ?: marker(keep_tag) ?:
	       ctl_write("tracing_on", "0");
}

static bool ok_true(void)
{
	return true;
}

/* --- load ------------------------------------------------------------ */

/*
 * Each load races an opener: a thread that, while init_module() runs,
 * opens these files as soon as they exist, writes 1 to events/enable
 * (attaching every probe) once it has it, and keeps what it opened until
 * the load has returned.  A load that fails must have refused all of it:
 * the loader frees a module whose init failed, whatever still uses it.
 */
static const struct {
	const char *path;
	int flags;
} racer_files[] = {
	{ ROOT "/tracing_on", O_RDWR },
	{ ROOT "/events/enable", O_WRONLY },
	{ DEVROOT "/tracing_on", O_RDWR },
};
#define RACER_FILES	(sizeof(racer_files) / sizeof(racer_files[0]))

enum { RACER_IDLE, RACER_RACING, RACER_STOP, RACER_EXIT };

static struct {
	pthread_t thread;
	bool started;
	atomic_int state;		/* RACER_* */
	atomic_int stopped;		/* the thread saw RACER_STOP */
	int fd[RACER_FILES];		/* the thread's while racing */
	unsigned int tries;
} racer;

static void *racer_main(void *unused)
{
	/*
	 * A round of opens a millisecond: often enough to catch a file in
	 * the time a load takes to make the next one, not so often that
	 * the guest does little else.
	 */
	const struct timespec pause = { .tv_nsec = 1000000 },
			      idle = { .tv_nsec = 10000000 };
	unsigned int i;
	int state, fd;

	(void)unused;
	while ((state = atomic_load(&racer.state)) != RACER_EXIT) {
		if (state == RACER_STOP)
			atomic_store(&racer.stopped, 1);
		if (state != RACER_RACING) {
			nanosleep(&idle, NULL);
			continue;
		}
		for (i = 0; i < RACER_FILES; i++) {
			if (racer.fd[i] >= 0)
				continue;
			racer.tries++;
			fd = open(racer_files[i].path,
				  racer_files[i].flags | O_CLOEXEC);
			if (fd < 0)
				continue;
			racer.fd[i] = fd;
			if (racer_files[i].flags == O_WRONLY &&
			    write(fd, "1", 1) != 1)
				diag("racer: %s: %s", racer_files[i].path,
				     strerror(errno));
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Before the fault is armed: the thread's own setup allocates. */
static int racer_arm(void)
{
	unsigned int i;
	int ret;

	if (!racer.started) {
		ret = pthread_create(&racer.thread, NULL, racer_main, NULL);
		if (ret)
			return -ret;
		racer.started = true;
	}
	for (i = 0; i < RACER_FILES; i++)
		racer.fd[i] = -1;
	racer.tries = 0;
	return 0;
}

/* Stop racing; how many of the files it opened (now closed). */
static unsigned int racer_stop(void)
{
	unsigned int i, opened = 0;

	if (atomic_load(&racer.state) != RACER_RACING)
		return 0;
	atomic_store(&racer.stopped, 0);
	atomic_store(&racer.state, RACER_STOP);
	while (!atomic_load(&racer.stopped))
		sched_yield();
	atomic_store(&racer.state, RACER_IDLE);
	for (i = 0; i < RACER_FILES; i++) {
		if (racer.fd[i] < 0)
			continue;
		opened++;
		if (racer_files[i].flags == O_WRONLY &&
		    write(racer.fd[i], "0", 1) != 1)
			diag("racer: %s: %s", racer_files[i].path,
			     strerror(errno));
		close(racer.fd[i]);
		racer.fd[i] = -1;
	}
	return opened;
}

static void racer_exit(void)
{
	if (!racer.started)
		return;
	racer_stop();
	atomic_store(&racer.state, RACER_EXIT);
	pthread_join(racer.thread, NULL);
	racer.started = false;
}

static int load_prepare(void)
{
	int ret = module_loaded() ? unload_module() : 0;

	return ret ?: racer_arm();
}

static long load_op(void)
{
	atomic_store(&racer.state, RACER_RACING);
	return load_module();
}

static bool load_failed(void)
{
	/* racer_stop() first: the thread counts tries until it stops. */
	unsigned int opened = racer_stop(), tries = racer.tries;

	if (opened)
		diag("%u files opened during a load that failed (%u tries)",
		     opened, tries);
	return module_gone() && !opened;
}

static bool load_done(void)
{
	char *now;
	bool ok;

	racer_stop();
	now = tree_list();
	ok = now && ref_tree && !strcmp(now, ref_tree);
	if (!ok)
		diag("the loaded module's files differ from a normal load's");
	free(now);
	ok &= roundtrip(NULL, NULL);
	if (unload_module()) {
		diag("rmmod: %s", strerror(errno));
		return false;
	}
	return ok && module_gone();
}

/* --- unload ---------------------------------------------------------- */

static int unload_prepare(void)
{
	return module_loaded() ? 0 : load_module();
}

static long unload_op(void)
{
	return unload_module();
}

static bool unload_failed(void)
{
	/* Refused: the module must still work. */
	return module_loaded() && roundtrip(NULL, NULL);
}

static bool unload_done(void)
{
	return module_gone();
}

/* --- CPU online (the hotplug prepare callback allocates a buffer) ----- */

static bool cpu1_online(void)
{
	char val[8];

	return rt_read_file(CPU1_ONLINE, val, sizeof(val)) > 0 && val[0] == '1';
}

static int online_prepare(void)
{
	int ret;

	if (dirty || !module_loaded() || cpu1_online()) {
		if (module_loaded() && (ret = unload_module()))
			return ret;
		if (cpu1_online() && (ret = write_str(CPU1_ONLINE, "0")))
			return ret;
		ret = load_module();
		if (ret)
			return ret;
		dirty = false;
	}
	/* Small buffers: every page of the new CPU's is one more fault. */
	ret = loaded("4096", "4");
	return ret ?: open_op(CPU1_ONLINE, O_WRONLY);
}

static long online_op(void)
{
	return write_op("1");
}

static bool online_failed(void)
{
	int fd = open(ROOT "/cpu/1/buffer", O_RDONLY);

	if (fd >= 0 || errno != ENODEV) {
		diag("cpu/1/buffer after a failed online: %s",
		     fd >= 0 ? "opens" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (cpu1_online()) {
		diag("cpu1 is online after a failed online");
		return false;
	}
	return true;
}

static bool online_done(void)
{
	int fd = open(ROOT "/cpu/1/buffer", O_RDONLY);

	dirty = true;
	if (fd < 0) {
		diag("cpu/1/buffer after cpu1 came up: %s", strerror(errno));
		return false;
	}
	close(fd);
	return cpu1_online();
}

/* --- geometry and clear ---------------------------------------------- */

static int geometry_prepare(void)
{
	return loaded("4096", "4") ?: keep_marker() ?:
	       open_op(ROOT "/num_subbufs", O_WRONLY);
}

static long geometry_op(void)
{
	return write_op("8");
}

static bool geometry_done(void)
{
	char val[32];

	if (ctl_read("num_subbufs", val, sizeof(val)) < 0 || strcmp(val, "8\n")) {
		diag("num_subbufs reads %s after writing 8", val);
		return false;
	}
	return true;
}

/* A page array over a page: kvcalloc() goes to vmalloc(). */
static int geometry_big_prepare(void)
{
	return loaded("4096", "256") ?: keep_marker() ?:
	       open_op(ROOT "/num_subbufs", O_WRONLY);
}

static long geometry_big_op(void)
{
	return write_op("512");
}

static bool geometry_big_done(void)
{
	char val[32];

	if (ctl_read("num_subbufs", val, sizeof(val)) < 0 || strcmp(val, "512\n")) {
		diag("num_subbufs reads %s after writing 512", val);
		return false;
	}
	return true;
}

static int clear_prepare(void)
{
	return loaded("4096", "4") ?: keep_marker() ?:
	       open_op(ROOT "/clear", O_WRONLY);
}

static long clear_op(void)
{
	return write_op("1");
}

/* --- buffer open, mmap, epoll ----------------------------------------- */

static long open_op_debugfs(void)
{
	op_fd = open(ROOT "/cpu/0/buffer", O_RDONLY);
	return op_fd < 0 ? -errno : 0;
}

static long open_op_dev(void)
{
	op_fd = open(DEVROOT "/cpu/0/buffer", O_RDONLY);
	return op_fd < 0 ? -errno : 0;
}

static size_t map_len;
static void *map_addr = MAP_FAILED;

static int mmap_prepare(void)
{
	int ret = loaded_default() ?: open_op(ROOT "/cpu/0/buffer", O_RDONLY);

	map_len = page_size + 16 * 65536;
	return ret;
}

static long mmap_op(void)
{
	map_addr = mmap(NULL, map_len, PROT_READ, MAP_SHARED, op_fd, 0);
	return map_addr == MAP_FAILED ? -errno : 0;
}

static bool mmap_done(void)
{
	const struct ringtrace_meta *meta = map_addr;
	bool ok = meta->meta_size == sizeof(*meta) &&
		  meta->subbuf_size == 65536 && meta->num_subbufs == 16;

	if (!ok)
		diag("the mapped meta page says %u x %u, meta_size %u",
		     meta->subbuf_size, meta->num_subbufs, meta->meta_size);
	munmap(map_addr, map_len);
	map_addr = MAP_FAILED;
	return ok;
}

static int epoll_prepare(void)
{
	int ret = loaded_default() ?: open_op(ROOT "/cpu/0/buffer", O_RDONLY);

	if (ret)
		return ret;
	op_fd2 = epoll_create1(EPOLL_CLOEXEC);
	return op_fd2 < 0 ? -errno : 0;
}

static long epoll_op(void)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return epoll_ctl(op_fd2, EPOLL_CTL_ADD, op_fd, &ev) ? -errno : 0;
}

static int poll_prepare(void)
{
	return loaded_default() ?: open_op(ROOT "/cpu/0/buffer", O_RDONLY);
}

static long poll_op(void)
{
	struct pollfd p = { .fd = op_fd, .events = POLLIN };

	return poll(&p, 1, 1) < 0 ? -errno : 0;
}

static int flush_prepare(void)
{
	return loaded_default() ?: open_op(ROOT "/cpu/0/buffer", O_RDONLY) ?:
	       ctl_write("tracing_on", "1");
}

static long flush_op(void)
{
	return ioctl(op_fd, RINGTRACE_IOC_FLUSH) ? -errno : 0;
}

static bool tracing_off(void)
{
	return !ctl_write("tracing_on", "0");
}

/* --- events ------------------------------------------------------------ */

static bool read_is(const char *name, const char *want)
{
	char val[4096];

	if (ctl_read(name, val, sizeof(val)) < 0 || strcmp(val, want)) {
		diag("%s reads \"%s\", expected \"%s\"", name, val, want);
		return false;
	}
	return true;
}

static int enable_prepare(void)
{
	return loaded_default() ?:
	       open_op(ROOT "/events/sched_switch/enable", O_WRONLY);
}

static long enable_op(void)
{
	return write_op("1");
}

static bool enable_done(void)
{
	return read_is("events/sched_switch/enable", "1\n");
}

static int enable_all_prepare(void)
{
	return loaded_default() ?: open_op(ROOT "/events/enable", O_WRONLY);
}

static bool enable_all_done(void)
{
	return read_is("events/enable", "1\n");
}

static int set_event_prepare(void)
{
	return loaded_default() ?: open_op(ROOT "/set_event", O_WRONLY);
}

static long set_event_op(void)
{
	return write_op("sched_wakeup irq_handler_entry syscall_entry");
}

static bool set_event_done(void)
{
	return read_is("set_event", "sched_wakeup\nirq_handler_entry\nsyscall_entry\n");
}

/* --- the pid filter ----------------------------------------------------- */

static int pid_prepare(void)
{
	return loaded_default() ?: open_op(ROOT "/set_event_pid", O_WRONLY);
}

static long pid_op(void)
{
	return write_op("3 1 2");
}

static bool pid_done(void)
{
	return read_is("set_event_pid", "1 2 3\n");
}

/* Appending to a filter that follows forks copies its bitmap. */
static int pid_append_prepare(void)
{
	return loaded_default() ?: ctl_write("set_event_pid", "1") ?:
	       ctl_write("event_fork", "1") ?:
	       open_op(ROOT "/set_event_pid", O_WRONLY | O_APPEND);
}

static long pid_append_op(void)
{
	return write_op("5 4");
}

static bool pid_append_done(void)
{
	return read_is("set_event_pid", "1 4 5\n") && read_is("event_fork", "1\n");
}

static int fork_prepare(void)
{
	return loaded_default() ?: ctl_write("set_event_pid", "1") ?:
	       open_op(ROOT "/event_fork", O_WRONLY);
}

static long fork_op(void)
{
	return write_op("1");
}

static bool fork_done(void)
{
	return read_is("event_fork", "1\n") && read_is("set_event_pid", "1\n");
}

/* --- tracing_on (the state dump), marker ---------------------------------- */

static int tracing_prepare(void)
{
	return loaded_default() ?:
	       ctl_write("set_event", "ringtrace_statedump_task ringtrace_statedump_cpu") ?:
	       open_op(ROOT "/tracing_on", O_WRONLY);
}

static long tracing_op(void)
{
	return write_op("1");
}

static bool tracing_done(void)
{
	return read_is("tracing_on", "1\n") && tracing_off();
}

static int marker_prepare(void)
{
	snprintf(op_tag, sizeof(op_tag), "fi-op-marker-%u", ++seq);
	return loaded_default() ?: ctl_write("tracing_on", "1") ?:
	       open_op(ROOT "/marker", O_WRONLY);
}

static long marker_op(void)
{
	return write_op(op_tag);
}

static bool marker_done(void)
{
	return tracing_off();
}

/* --- metadata ------------------------------------------------------------ */

/* Drop the clock's offset lines, which follow the wall clock. */
static void strip_offset(char *s)
{
	char *p = s, *nl;

	while ((p = strstr(p, "\toffset"))) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		memmove(p, nl + 1, strlen(nl + 1) + 1);
	}
}

static char metadata_buf[1 << 16];

/*
 * What the metadata reads before the op (each load has its own uuid, so
 * a reference is only good for the load it was read from).
 */
static int metadata_ref(void)
{
	char buf[1 << 16];

	if (ctl_read("metadata", buf, sizeof(buf)) < 0)
		return -errno;
	strip_offset(buf);
	free(ref_metadata);
	ref_metadata = strdup(buf);
	return ref_metadata ? 0 : -ENOMEM;
}

static int metadata_open_prepare(void)
{
	return loaded_default() ?: metadata_ref();
}

static long metadata_open_op(void)
{
	op_fd = open(ROOT "/metadata", O_RDONLY);
	return op_fd < 0 ? -errno : 0;
}

static int metadata_read_prepare(void)
{
	return loaded_default() ?: metadata_ref() ?:
	       open_op(ROOT "/metadata", O_RDONLY);
}

static long metadata_read_op(void)
{
	ssize_t n = read(op_fd, metadata_buf, sizeof(metadata_buf) - 1);

	if (n >= 0)
		metadata_buf[n] = '\0';
	return n < 0 ? -errno : n;
}

static bool metadata_read_done(void)
{
	strip_offset(metadata_buf);
	if (!ref_metadata || strcmp(metadata_buf, ref_metadata)) {
		diag("the metadata read differs from a read without faults");
		return false;
	}
	return true;
}

static bool metadata_same(void)
{
	static char now[1 << 16];

	if (ctl_read("metadata", now, sizeof(now)) < 0)
		return false;
	strip_offset(now);
	if (!ref_metadata || strcmp(now, ref_metadata)) {
		diag("the metadata changed");
		return false;
	}
	return true;
}

static const struct fi_path paths[] = {
	{ .name = "load", .what = "init_module() of ringtrace.ko, racing opens",
	  .prepare = load_prepare, .op = load_op,
	  .failed = load_failed, .done = load_done,
	  .module_frames = true },
	{ .name = "unload", .what = "delete_module() of ringtrace",
	  .prepare = unload_prepare, .op = unload_op,
	  .failed = unload_failed, .done = unload_done,
	  .module_frames = true, .on_request = true },
	{ .name = "online", .what = "cpu1 up for the first time since the load",
	  .prepare = online_prepare, .op = online_op,
	  .failed = online_failed, .done = online_done,
	  .module_frames = true },
	{ .name = "geometry", .what = "num_subbufs 4 -> 8 (4 KiB sub-buffers)",
	  .prepare = geometry_prepare, .op = geometry_op,
	  .failed = ok_true, .done = geometry_done,
	  .keeps_data = true },
	{ .name = "geometry_big", .what = "num_subbufs 256 -> 512: a vmalloc()ed page array",
	  .prepare = geometry_big_prepare, .op = geometry_big_op,
	  .failed = ok_true, .done = geometry_big_done,
	  .keeps_data = true },
	{ .name = "clear", .what = "clear",
	  .prepare = clear_prepare, .op = clear_op,
	  .failed = ok_true, .done = ok_true,
	  .keeps_data = true },
	{ .name = "open", .what = "open() of cpu/0/buffer",
	  .prepare = loaded_default, .op = open_op_debugfs,
	  .failed = ok_true, .done = ok_true },
	{ .name = "open_dev", .what = "open() of /dev/ringtrace/cpu/0/buffer",
	  .prepare = loaded_default, .op = open_op_dev,
	  .failed = ok_true, .done = ok_true },
	{ .name = "mmap", .what = "mmap() of a whole buffer",
	  .prepare = mmap_prepare, .op = mmap_op,
	  .failed = ok_true, .done = mmap_done },
	{ .name = "epoll", .what = "epoll_ctl(ADD) of a buffer file",
	  .prepare = epoll_prepare, .op = epoll_op,
	  .failed = ok_true, .done = ok_true },
	{ .name = "poll", .what = "poll() of a buffer file",
	  .prepare = poll_prepare, .op = poll_op,
	  .failed = ok_true, .done = ok_true },
	{ .name = "flush", .what = "FLUSH while tracing",
	  .prepare = flush_prepare, .op = flush_op,
	  .failed = tracing_off, .done = tracing_off },
	{ .name = "enable", .what = "events/sched_switch/enable 1",
	  .prepare = enable_prepare, .op = enable_op,
	  .failed = ok_true, .done = enable_done },
	{ .name = "enable_all", .what = "events/enable 1",
	  .prepare = enable_all_prepare, .op = enable_op,
	  .failed = ok_true, .done = enable_all_done },
	{ .name = "set_event", .what = "set_event with three events",
	  .prepare = set_event_prepare, .op = set_event_op,
	  .failed = ok_true, .done = set_event_done },
	{ .name = "pid", .what = "set_event_pid \"3 1 2\"",
	  .prepare = pid_prepare, .op = pid_op,
	  .failed = ok_true, .done = pid_done },
	{ .name = "pid_append", .what = "set_event_pid >> \"5 4\" with event_fork 1",
	  .prepare = pid_append_prepare, .op = pid_append_op,
	  .failed = ok_true, .done = pid_append_done },
	{ .name = "event_fork", .what = "event_fork 1 with a filter",
	  .prepare = fork_prepare, .op = fork_op,
	  .failed = ok_true, .done = fork_done },
	{ .name = "tracing_on", .what = "tracing_on 1 with the state dump",
	  .prepare = tracing_prepare, .op = tracing_op,
	  .failed = ok_true, .done = tracing_done },
	{ .name = "marker", .what = "a marker write",
	  .prepare = marker_prepare, .op = marker_op,
	  .failed = ok_true, .done = marker_done,
	  .writes_marker = true },
	{ .name = "metadata_open", .what = "open() of metadata",
	  .prepare = metadata_open_prepare, .op = metadata_open_op,
	  .failed = metadata_same, .done = ok_true },
	{ .name = "metadata_read", .what = "read() of the whole metadata",
	  .prepare = metadata_read_prepare, .op = metadata_read_op,
	  .failed = metadata_same, .done = metadata_read_done },
};

/* ------------------------------------------------------------------ */
/* The sweep                                                            */
/* ------------------------------------------------------------------ */

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		passed++;
		return;
	}
	failed++;
	va_start(ap, fmt);
	fputs("not ok - ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

/* The module loaded normally: what its files look like. */
static int reference(void)
{
	if (module_loaded() && unload_module())
		return -errno;
	if (load_module())
		return -errno;
	ref_tree = tree_list();
	if (!ref_tree)
		return -ENOMEM;
	return roundtrip(NULL, NULL) ? 0 : -EIO;
}

/* How one path went. */
struct fi_counts {
	unsigned int faults, clean, tolerated, bad;
};

enum fi_attempt { FI_UNCONSUMED, FI_INJECTED, FI_ABORT };

/*
 * One attempt with the @n-th counted allocation failing (or, with @n
 * FI_COUNT_ARM, none: then *@left says how many were counted).
 */
static enum fi_attempt attempt(const struct fi_path *p, unsigned int n,
			       struct fi_counts *c, unsigned int *left)
{
	char before[8192];
	bool ok;
	long ret;

	ret = p->prepare();
	if (ret) {
		check(false, "%s: before fault %u: %s", p->name, n,
		      strerror(-ret));
		return FI_ABORT;
	}
	if (module_loaded())
		state_read(before, sizeof(before));
	else
		strcpy(before, "unloaded");
	kmsg_skip();
	if (fault_arm(n)) {
		check(false, "%s: arming fail-nth: %s", p->name,
		      strerror(errno));
		return FI_ABORT;
	}
	ret = p->op();
	*left = fault_left();
	if (*left) {
		/* Fewer than n allocations: the op's own success. */
		ok = ret >= 0;
		if (!ok)
			diag("%s without a fault: %s", p->name, strerror(-ret));
		ok = ok && p->done();
		close_op_fds();
		if (module_loaded())
			ok &= roundtrip(p->writes_marker ? op_tag : NULL, NULL);
		ok &= kmsg_splats() == 0;
		check(ok, "%s: success without a fault", p->name);
		return FI_UNCONSUMED;
	}
	c->faults++;
	if (ret < 0) {
		ok = ret == -ENOMEM;
		if (!ok)
			diag("%s: fault %u: %s, not ENOMEM", p->name, n,
			     strerror(-ret));
		close_op_fds();
		if (!strcmp(before, "unloaded"))
			ok &= !module_loaded();
		else
			ok &= state_same(before, p->name);
		ok &= p->failed();
		if (module_loaded())
			ok &= roundtrip(p->keeps_data ? keep_tag : NULL,
					p->writes_marker ? op_tag : NULL);
		c->clean += ok;
	} else {
		/* The kernel fell back: the op must have done it all. */
		ok = p->done();
		close_op_fds();
		if (module_loaded())
			ok &= roundtrip(p->writes_marker ? op_tag : NULL, NULL);
		c->tolerated += ok;
	}
	ok &= kmsg_splats() == 0;
	c->bad += !ok;
	check(ok, "%s: fault %u (%s)", p->name, n,
	      ret < 0 ? strerror(-ret) : "the op succeeded anyway");
	return FI_INJECTED;
}

/*
 * Count the op's allocations once (a success with fail-nth far out), then
 * fail each of them in turn: all of them when there are at most
 * max_exhaustive, else the first FI_HEAD, the last FI_TAIL and
 * sample_middle drawn at random between (a module load makes thousands,
 * most of them the same few dozen in debugfs and device_create() once per
 * file, and each attempt costs as much as the load up to its fault: under
 * KASAN 3.3 s each, 368 s of the debug kernel's boot for 113 faults).
 * The draw changes with the seed, so that runs together cover what one
 * run's sweep cannot.  Last, fail-nth one past the end: the op must
 * succeed without consuming it.
 */
#define FI_COUNT_ARM	(1U << 30)
#define FI_HEAD		16
#define FI_TAIL		8

/*
 * Whether to fail the middle allocation @n, the draw's @seen-th candidate
 * of @range, @picked of @want taken so far: selection sampling (Knuth's
 * Algorithm S), which takes exactly @want, in increasing order.
 */
static bool sample_pick(unsigned int seen, unsigned int range,
			unsigned int picked, unsigned int want)
{
	return (range - seen) * erand48(sample_state) < want - picked;
}

static void sweep(const struct fi_path *p)
{
	unsigned int n, total, left, max, range = 0, seen = 0, picked = 0;
	struct fi_counts c = { 0 };
	bool sampled = false;
	enum fi_attempt r;
	time_t start = time(NULL);

	if (fault_filter(p->module_frames)) {
		check(false, "%s: setting the stack filter: %s", p->name,
		      strerror(errno));
		return;
	}
	r = attempt(p, FI_COUNT_ARM, &c, &left);
	if (r != FI_UNCONSUMED) {
		check(false, "%s: counting its allocations", p->name);
		return;
	}
	total = FI_COUNT_ARM - left;
	if (total > max_exhaustive && total > FI_HEAD + FI_TAIL) {
		sampled = true;
		range = total - FI_HEAD - FI_TAIL;
	}
	/* Allocations can vary a little between runs (kmemleak's own). */
	max = total + 64;
	for (n = 1; n <= max; n++) {
		if (sampled && n > FI_HEAD && n + FI_TAIL <= total) {
			if (!sample_pick(seen++, range, picked, sample_middle))
				continue;
			picked++;
		}
		r = attempt(p, n, &c, &left);
		if (r != FI_INJECTED)
			break;
	}
	if (r == FI_INJECTED)
		check(false, "%s: still failing at fault %u of %u", p->name,
		      max, total);
	if (stale_nodes > 1)
		diag("%s: devtmpfs left stale nodes behind %u times", p->name,
		     stale_nodes);
	stale_nodes = 0;
	close_op_fds();
	printf("%s - %s: %s: %u allocations, %u faults injected (%s), %u failed cleanly with ENOMEM, %u succeeded through a fallback, %u bad, %lds\n",
	       r == FI_UNCONSUMED && !c.bad ? "ok" : "not ok", p->name,
	       p->what, total, c.faults,
	       sampled ? "sampled" : "every one", c.clean, c.tolerated,
	       c.bad, (long)(time(NULL) - start));
	fflush(stdout);
}

/* The draws' seed, erand48()'s 48 bits: @arg, else a random one. */
static unsigned long long sample_seed(const char *arg)
{
	unsigned long long seed;

	if (arg)
		seed = strtoull(arg, NULL, 0);
	else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (unsigned long long)time(NULL) ^ getpid();
	return seed & ((1ULL << 48) - 1);
}

static int setup(void)
{
	char path[64], sym[256], type;
	unsigned long addr;
	struct stat st;
	FILE *f;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	nth_fd = open(path, O_RDWR);
	if (nth_fd < 0) {
		printf("ok - faultinject # SKIP %s: %s (no CONFIG_FAULT_INJECTION)\n",
		       path, strerror(errno));
		exit(KSFT_SKIP);
	}
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg_fd < 0)
		return -errno;
	/* The kernel image ends where module space begins. */
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%lx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, "_end"))
			modules_start = addr;
	fclose(f);
	if (!modules_start) {
		diag("no _end in /proc/kallsyms (kptr_restrict?)");
		return -ENOENT;
	}
	fd = open(ko_path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return -errno;
	ko_size = st.st_size;
	ko_image = malloc(ko_size);
	if (!ko_image || read(fd, ko_image, ko_size) != (ssize_t)ko_size)
		return -EIO;
	close(fd);
	/* Every marker lands in cpu0's buffer. */
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: faultinject -m RINGTRACE_KO -s SPLAT_REGEX [-e MAX_EXHAUSTIVE] [-n SAMPLE] [-S SEED] [PATH...]\npaths:");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		fprintf(stderr, " %s", paths[i].name);
	fputc('\n', stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *re = NULL, *seed_arg = NULL;
	unsigned long long seed;
	size_t i;
	int opt, ret, arg;

	while ((opt = getopt(argc, argv, "m:s:e:n:S:")) != -1) {
		switch (opt) {
		case 'm':
			ko_path = optarg;
			break;
		case 's':
			re = optarg;
			break;
		case 'e':
			max_exhaustive = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			sample_middle = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			seed_arg = optarg;
			break;
		default:
			usage();
		}
	}
	if (!ko_path || !re)
		usage();
	if (regcomp(&splat_re, re, REG_EXTENDED | REG_NOSUB)) {
		fprintf(stderr, "faultinject: bad regex %s\n", re);
		return 2;
	}
	for (arg = optind; arg < argc; arg++) {
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
			if (!strcmp(argv[arg], paths[i].name))
				break;
		if (i == sizeof(paths) / sizeof(paths[0])) {
			fprintf(stderr, "faultinject: no path %s\n", argv[arg]);
			usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = sample_seed(seed_arg);
	sample_state[0] = seed;
	sample_state[1] = seed >> 16;
	sample_state[2] = seed >> 32;
	printf("# faultinject: seed=%llu sample=%u (-S %llu draws the same faults)\n",
	       seed, sample_middle, seed);
	ret = setup();
	if (ret) {
		printf("not ok - faultinject setup: %s\n", strerror(-ret));
		return 1;
	}
	ret = reference();
	check(!ret, "a load without faults: %s", strerror(-ret));
	if (ret)
		goto out;
	/* No page fault and no lazy binding while a fault is armed. */
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		printf("not ok - mlockall: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (optind < argc) {
			for (arg = optind; arg < argc; arg++)
				if (!strcmp(argv[arg], paths[i].name))
					break;
			if (arg == argc)
				continue;
		} else if (paths[i].on_request) {
			continue;
		}
		sweep(&paths[i]);
	}
	racer_exit();
	/* Leave the module loaded, in its default state, for the caller. */
	ret = loaded_default();
	check(!ret, "back to the defaults: %s", strerror(-ret));
out:
	printf("# faultinject: passed=%u failed=%u\n", passed, failed);
	return failed ? 1 : 0;
}
