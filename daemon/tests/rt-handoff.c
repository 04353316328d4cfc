// SPDX-License-Identifier: GPL-2.0
/*
 * rt-handoff: host tests of ringtraced's --on-chunk hand-off, driven
 * through the daemon's own functions in the order main.c calls them
 * (parse_options, outdir_create, recover_mark_trace, recover_sets,
 * outdir_retention, handoff_start, the chunks' facts, handoff_finish),
 * with chunks written here in place of the drain threads': no module is
 * needed.  Built with the daemon's files (all but main.c) under
 * AddressSanitizer (../Makefile).
 *
 *   rt-handoff [CASE...]     the cases named (default: all), in a new
 *                            directory under /var/tmp, removed at the end
 *
 * The daemon's state is global, and a start may die(): each daemon runs in
 * a child process of its own (a "start"), its stderr -- its messages and
 * its hooks' output -- in a log that the checks read; a start that is
 * still there after its time is killed, and counts as hanging.  A kill -9
 * of the daemon is a start that _exit()s.  What a test cannot make happen
 * otherwise -- a disk that wedges or fails, a swap inside a race window --
 * is injected by wrapping libc calls (-Wl,--wrap, ../Makefile): the
 * wrappers below act only when a case asks them to.
 *
 * Prints one "ok N - ..." / "not ok N - ..." line per check and ends with
 * "handoff: N passed, M failed"; the exit status is 1 if any failed.
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

uint64_t sync_skipped;			/* main.c's */

/*
 * The daemon frees what it holds when it exits, not before: a start that
 * die()s (exit 1) would have LeakSanitizer report that and exit 23.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

static struct {
	unsigned int passed, failed;
} *counts;				/* shared with the children */
static char base[PATH_MAX];		/* this run's directory */
static char cdir[PATH_MAX];		/* the case's */
static const char *cname;		/* the case's name */
static unsigned int case_failed0;	/* failures before the case */
static struct ctl fctl;			/* the "module": a metadata file */

/* One line per check: what it quotes of a file shows its newlines as '|'. */
__attribute__((format(printf, 2, 3)))
static bool check(bool ok, const char *fmt, ...)
{
	char what[512], *nl;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	while ((nl = strchr(what, '\n')))
		*nl = '|';
	printf("%s %u - %s: %s\n", ok ? "ok" : "not ok",
	       __atomic_add_fetch(ok ? &counts->passed : &counts->failed, 1,
				  __ATOMIC_RELAXED) +
	       __atomic_load_n(ok ? &counts->failed : &counts->passed,
			       __ATOMIC_RELAXED), cname, what);
	fflush(stdout);
	return ok;
}

/* ---- files --------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static char *path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return buf;
}
#define P(...)	path((char[PATH_MAX]){ 0 }, PATH_MAX, __VA_ARGS__)

static bool exists(const char *p)
{
	struct stat st;

	return !lstat(p, &st);
}

static void put(const char *p, const char *text, mode_t mode)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		printf("# %s: %s\n", p, strerror(errno));
	if (fd >= 0)
		close(fd);
	chmod(p, mode);
}

/* The file @p whole (malloc'd, NUL-terminated; "" if none). */
static char *slurp(const char *p)
{
	char *buf = calloc(1, 1);
	size_t len = 0;
	ssize_t n;
	char chunk[4096];
	int fd = open(p, O_RDONLY | O_NONBLOCK);

	while (fd >= 0 && (n = read(fd, chunk, sizeof(chunk))) > 0) {
		buf = realloc(buf, len + (size_t)n + 1);
		memcpy(buf + len, chunk, (size_t)n);
		len += (size_t)n;
		buf[len] = '\0';
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Lines of @p holding @needle. */
static unsigned int count(const char *p, const char *needle)
{
	char *text = slurp(p), *line, *save = NULL;
	unsigned int n = 0;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		n += strstr(line, needle) != NULL;
	free(text);
	return n;
}

static bool has(const char *p, const char *needle)
{
	return count(p, needle) > 0;
}

/* Until @p has @n lines holding @needle, at most @secs. */
static bool wait_count(const char *p, const char *needle, unsigned int n,
		       unsigned int secs)
{
	for (unsigned int i = 0; i < secs * 50; i++) {
		if (count(p, needle) >= n)
			return true;
		usleep(20000);
	}
	return false;
}

/* Entries of directory @p (not . and ..), -1 if it cannot be read. */
static int entries(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* The log's lines, for a check that failed. */
static void show(const char *log)
{
	char *text = slurp(log), *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		printf("#   %s\n", line);
	free(text);
	fflush(stdout);
}

/* ---- starts: the daemon in a child ---------------------------------------------------- */

/*
 * @fn in a child of its own process group, its stderr appended to @log:
 * its exit status (128 + the signal that ended it), or -1 when it was
 * still there after @secs (then killed, its group too).
 */
static int start(void (*fn)(void *), void *arg, const char *log,
		 unsigned int secs)
{
	int st, fd;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -2;
	if (!pid) {
		setpgid(0, 0);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		dup2(fd, STDERR_FILENO);
		msg_prog = "ringtraced";
		fn(arg);
		fflush(stdout);
		_exit(0);
	}
	setpgid(pid, pid);
	for (unsigned int i = 0; i < secs * 50; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(20000);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* The daemon's command line (parse_options()), then outdir_create() and the rest. */
static void d_options(const char *const *args)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = "ringtraced";
	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	optind = 1;
	parse_options(argc, argv);
}

static int hurry_fd[2] = { -1, -1 };

/* No second SIGTERM comes here. */
static bool no_hurry(uint64_t *deadline __attribute__((unused)))
{
	char buf[64];

	if (read(hurry_fd[0], buf, sizeof(buf)) < 0) {
		/* Empty. */
	}
	return false;
}

/* main.c's start, from the trace directory to the hand-off thread. */
static void d_start(const char *const *args, bool retention)
{
	int err;

	d_options(args);
	if (pipe2(hurry_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		die("pipe2: %s", strerror(errno));
	outdir_create();
	if (opt.on_chunk) {
		recover_mark_trace();
		recover_sets();
	}
	if (retention)
		outdir_retention();
	err = metadata_start(&fctl, outdirfd, 1);
	if (err)
		die("metadata_start: %s", strerror(-err));
	if (opt.on_chunk)
		handoff_start();
}

/* Rotation @seq closed: a chunk of CPU 0 with @bytes bytes (not zstd: nobody decodes it). */
static void d_set(unsigned int seq, size_t bytes)
{
	struct chunk_facts f = { .cpu = 0, .seq = seq, .packets = 1 };
	char name[CHUNK_NAME_MAX], *buf = calloc(1, bytes + 1);
	int fd;

	chunk_name(name, sizeof(name), 0, seq);
	memset(buf, 'x', bytes);
	fd = openat(outdirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0640);
	if (fd < 0 || write(fd, buf, bytes) != (ssize_t)bytes)
		warn("%s: %s", name, strerror(errno));
	close(fd);
	free(buf);
	handoff_chunk_closed(&f);
	handoff_sets_closed(seq);
}

/* The stop with a deadline @ms from now (0: none); its length in ms. */
static uint64_t d_stop(uint64_t ms)
{
	uint64_t deadline = ms ? now_ms() + ms : UINT64_MAX, t0 = now_ms();

	handoff_deadline(deadline);
	handoff_finish(hurry_fd[0], no_hurry, &deadline);
	return now_ms() - t0;
}

/* What the last stop left, as the summary counts it. */
static void d_status(const char *what)
{
	struct handoff_stats st;

	handoff_status(&st);
	fprintf(stderr, "STATUS %s: sets=%llu ok=%llu failed=%llu not_handed=%llu left_sets=%llu left_rotations=%llu failed_sets=%llu\n",
		what, (unsigned long long)st.sets,
		(unsigned long long)st.hooks_ok,
		(unsigned long long)st.hooks_failed,
		(unsigned long long)st.not_handed,
		(unsigned long long)st.left_sets,
		(unsigned long long)st.left_rotations,
		(unsigned long long)st.failed_sets);
}

/* A start of the daemon that makes sets @first..@last in -o @dir and stops. */
struct run {
	const char *const *args;
	unsigned int first, last;
	uint64_t stop_ms;
};

static void run_sets(void *arg)
{
	const struct run *r = arg;

	d_start(r->args, false);
	for (unsigned int k = r->first; k && k <= r->last; k++)
		d_set(k, 100);
	d_stop(r->stop_ms);
	d_status("stop");
}

/* Only a start and a stop: what recovery hands over. */
static void run_empty(void *arg)
{
	d_start(arg, false);
	d_stop(0);
	d_status("stop");
}

/* An executable shell script @p: its body @body. */
static void script(const char *p, const char *body)
{
	char *text = malloc(strlen(body) + 16);

	sprintf(text, "#!/bin/sh\n%s\n", body);
	put(p, text, 0755);
	free(text);
}

/* ---- faults: libc calls wrapped (-Wl,--wrap) ------------------------------------------ */

/* The path of @fd, "" if none. */
static const char *fd_path(int fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, size - 1);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static struct {
	const char *wedge;		/* fdatasync of a path holding it blocks */
	bool wedged;			/* ... and one did */
	const char *fsyncs;		/* a file: the path of each fsync()ed fd */
	const char *dirsync_fails;	/* while this file exists, fsync(outdir) fails */
	const char *swap_tmp;		/* a staging dir made is swapped for a symlink here */
	const char *opens;		/* a file: the path of each openat() */
	bool removal_fails;		/* --max-total's first step of a set's removal fails */
} fault;

/* @line appended to the file @p (one write: threads do not interleave). */
static void log_line(const char *p, const char *line)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, line, strlen(line))) {
			/* A log of the test's: best effort. */
		}
		close(fd);
	}
}

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd)
{
	char p[PATH_MAX];

	if (fault.wedge && strstr(fd_path(fd, p, sizeof(p)), fault.wedge)) {
		fault.wedged = true;
		for (;;)
			pause();	/* a disk that never answers */
	}
	return __real_fdatasync(fd);
}

int __real_fsync(int fd);
int __wrap_fsync(int fd)
{
	char p[PATH_MAX + 2];
	struct stat st;

	fd_path(fd, p, PATH_MAX);
	if (fault.fsyncs) {
		strcat(p, "\n");
		log_line(fault.fsyncs, p);
		p[strlen(p) - 1] = '\0';
	}
	if (fault.dirsync_fails && !access(fault.dirsync_fails, F_OK) &&
	    !fstat(fd, &st) && S_ISDIR(st.st_mode) && !strcmp(p, outdir)) {
		errno = EIO;
		return -1;
	}
	return __real_fsync(fd);
}

int __real_mkdirat(int dirfd, const char *name, mode_t mode);
int __wrap_mkdirat(int dirfd, const char *name, mode_t mode)
{
	char aside[NAME_MAX + 1];
	int r = __real_mkdirat(dirfd, name, mode);
	size_t len = strlen(name);

	/* Another user's swap, between the mkdir and the open. */
	if (!r && fault.swap_tmp && !strncmp(name, ".chunk-", 7) &&
	    len > 4 && !strcmp(name + len - 4, ".tmp")) {
		snprintf(aside, sizeof(aside), "aside%s", name);
		if (renameat(dirfd, name, dirfd, aside) ||
		    symlinkat(fault.swap_tmp, dirfd, name))
			printf("# the swap: %s\n", strerror(errno));
	}
	return r;
}

int __real_openat(int dirfd, const char *name, int flags, ...);
int __wrap_openat(int dirfd, const char *name, int flags, ...)
{
	char p[2 * PATH_MAX + 4];
	mode_t mode = 0;
	va_list ap;

	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (fault.opens) {
		if (dirfd == AT_FDCWD || *name == '/')
			snprintf(p, sizeof(p), "%s\n", name);
		else
			snprintf(p, sizeof(p), "%s/%s\n",
				 fd_path(dirfd, (char[PATH_MAX]){ 0 }, PATH_MAX), name);
		log_line(fault.opens, p);
	}
	return __real_openat(dirfd, name, flags, mode);
}

/* Set 1's removal: its rename to a tombstone, or the first unlink in it. */
int __real_renameat(int from, const char *fname, int to, const char *tname);
int __wrap_renameat(int from, const char *fname, int to, const char *tname)
{
	if (fault.removal_fails && !strncmp(tname, ".removing-chunk-", 16)) {
		errno = EIO;
		return -1;
	}
	return __real_renameat(from, fname, to, tname);
}

int __real_unlinkat(int dirfd, const char *name, int flags);
int __wrap_unlinkat(int dirfd, const char *name, int flags)
{
	char p[PATH_MAX];
	size_t len;

	fd_path(dirfd, p, sizeof(p));
	len = strlen(p);
	if (fault.removal_fails && len > 13 && !strcmp(p + len - 13, "/chunk-000001")) {
		errno = EIO;
		return -1;
	}
	return __real_unlinkat(dirfd, name, flags);
}

/* ---- the cases --------------------------------------------------------------------------- */

/* outdir_create() of @args, in a start: its exit status. */
static void just_create(void *arg)
{
	d_options(arg);
	outdir_create();
}

static int create(const char *dir, const char *log)
{
	const char *args[] = { "-o", dir, "--on-chunk", "true", NULL };

	return start(just_create, args, log, 20);
}

/*
 * The trace directory is trusted only when it is the daemon
 * user's and written by no one else: a new one, or an empty one of its
 * own; another user's, one others may write, or a symlink is refused
 * before anything is written into it.
 */
static void case_trust(void)
{
	const char *log = P("%s/log", cdir);
	struct stat st;
	int rc;

	rc = create(P("%s/new", cdir), log);
	check(rc == 0 && !stat(P("%s/new", cdir), &st) &&
	      (st.st_mode & 07777) == 0750, "a new -o directory is made, mode 0750 (exit %d)", rc);
	mkdir(P("%s/mine", cdir), 0700);
	rc = create(P("%s/mine", cdir), log);
	check(rc == 0, "an empty one of the daemon's user, mode 0700, is taken (exit %d)", rc);

	mkdir(P("%s/wide", cdir), 0700);
	chmod(P("%s/wide", cdir), 0777);
	rc = create(P("%s/wide", cdir), log);
	check(rc == 1 && entries(P("%s/wide", cdir)) == 0 &&
	      has(log, "wide: written by others (mode 0777)"),
	      "an empty one others may write (0777) is refused, nothing written (exit %d)", rc);
	mkdir(P("%s/group", cdir), 0700);
	chmod(P("%s/group", cdir), 0770);
	rc = create(P("%s/group", cdir), log);
	check(rc == 1 && entries(P("%s/group", cdir)) == 0 &&
	      has(log, "group: written by others (mode 0770)"),
	      "one its group may write (0770) is refused (exit %d)", rc);
	mkdir(P("%s/target", cdir), 0700);
	symlink(P("%s/target", cdir), P("%s/link", cdir));
	rc = create(P("%s/link", cdir), log);
	check(rc == 1 && entries(P("%s/target", cdir)) == 0 &&
	      has(log, "link: a symbolic link"),
	      "a symlink to an empty directory of its own is refused (exit %d)", rc);
	if (!geteuid()) {
		/* /var/tmp/mytrace made beforehand by another user. */
		mkdir(P("%s/theirs", cdir), 0755);
		if (chown(P("%s/theirs", cdir), 65534, 65534))
			printf("# chown: %s\n", strerror(errno));
		rc = create(P("%s/theirs", cdir), log);
		check(rc == 1 && entries(P("%s/theirs", cdir)) == 0 &&
		      has(log, "theirs: owned by uid 65534, not by this daemon's user (uid 0)"),
		      "another user's empty directory (0755) is refused (exit %d)", rc);
	}
	if (counts->failed > case_failed0)
		show(log);
}

/* A start with -o @dir and hook @hook that makes set 1, stops within @ms. */
struct one_set {
	const char *dir, *hook;
	uint64_t ms;
	void (*before)(void);		/* after the start, before the set */
};

static void run_one_set(void *arg)
{
	const struct one_set *o = arg;
	const char *args[] = { "-o", o->dir, "--on-chunk", o->hook, NULL };
	uint64_t took;

	d_start(args, false);
	if (o->before)
		o->before();
	d_set(1, 100);
	took = d_stop(o->ms);
	fprintf(stderr, "STOP took %llu ms\n", (unsigned long long)took);
	d_status("stop");
}

static void fifo_symbols(void)
{
	mkfifo(P("%s/" KSYMS_FILE, outdir), 0644);
}

/*
 * A FIFO where the symbols would be is not waited on (the
 * hand-off thread would hang, and the stop with it): the set is not
 * assembled, its chunk stays in the trace directory, and the stop ends.
 */
static void case_fifo(void)
{
	const char *log = P("%s/log", cdir), *dir = P("%s/t", cdir);
	struct one_set o = { dir, "true", 3000, fifo_symbols };
	int rc = start(run_one_set, &o, log, 20);

	check(rc == 0, "the stop ends (exit %d; -1: still there after 20 s)", rc);
	check(has(log, "chunk set 1 not assembled: Invalid argument"),
	      "the set is not assembled, said");
	check(exists(P("%s/cpu0-000001.zst", dir)) && !exists(P("%s/.chunk-000001.tmp", dir)),
	      "its chunk stays in the trace directory, no staging directory left");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * The staging directory swapped for a symlink between its
 * mkdir and its open is not followed: nothing is moved or written
 * elsewhere.
 */
static void case_tmpswap(void)
{
	const char *log = P("%s/log", cdir), *dir = P("%s/t", cdir);
	const char *elsewhere = P("%s/elsewhere", cdir);
	struct one_set o = { dir, "true", 0, NULL };
	int rc;

	mkdir(elsewhere, 0755);
	fault.swap_tmp = elsewhere;
	rc = start(run_one_set, &o, log, 20);
	fault.swap_tmp = NULL;
	check(rc == 0, "the daemon stops (exit %d)", rc);
	check(entries(elsewhere) == 0, "nothing moved or written where the symlink points (%d entries)",
	      entries(elsewhere));
	check(exists(P("%s/cpu0-000001.zst", dir)), "the chunk stays in the trace directory");
	check(has(log, "t/.chunk-000001.tmp: chunk set 1 not assembled: Not a directory"),
	      "the set is not assembled, said");
	if (counts->failed > case_failed0)
		show(log);
}

/* parse_options() of --on-chunk @cmd alone. */
static void just_options(void *arg)
{
	const char *args[] = { "--on-chunk", arg, NULL };

	d_options(args);
}

/*
 * A hook that is a program -- a path to an executable, even
 * with a '=' in it -- gets the set as its arguments; shell text that
 * cannot know the set, or runs something in the background, is warned
 * about at start.
 */
static void case_oneword(void)
{
	const char *log = P("%s/log", cdir), *dir = P("%s/t", cdir);
	const char *hooklog = P("%s/hook.log", cdir);
	char ship[PATH_MAX], body[PATH_MAX * 2], spaced[PATH_MAX];
	struct one_set o = { dir, ship, 0, NULL };
	int rc;

	mkdir(P("%s/opt", cdir), 0755);
	mkdir(P("%s/opt/ship=v2", cdir), 0755);
	path(ship, sizeof(ship), "%s/opt/ship=v2/ship", cdir);
	snprintf(body, sizeof(body), "echo \"$#|$1|$2\" >>%s\n[ -n \"${1:-}\" ] || exit 0\nexit 0", hooklog);
	script(ship, body);
	rc = start(run_one_set, &o, log, 20);
	check(rc == 0 && !strcmp(slurp(hooklog),
				 P("2|%s/chunk-000001|%s/chunk-000001/manifest.json\n", dir, dir)),
	      "--on-chunk .../ship=v2/ship runs with SETDIR and MANIFEST: '%s'", slurp(hooklog));

	/* At option time. */
	mkdir(P("%s/my hooks", cdir), 0755);
	path(spaced, sizeof(spaced), "%s/my hooks/ship", cdir);
	script(spaced, "exit 0");
	start(just_options, "ship-chunk --to s3", P("%s/opt1.log", cdir), 10);
	check(has(P("%s/opt1.log", cdir), "--on-chunk 'ship-chunk --to s3' is shell text that uses none of $1, $2, $@, $* and RINGTRACE_"),
	      "shell text that cannot know its set is warned about");
	start(just_options, spaced, P("%s/opt2.log", cdir), 10);
	check(has(P("%s/opt2.log", cdir), "is shell text that uses none of"),
	      "a program's path with a space is shell text, warned about");
	start(just_options, "mv \"$1\" /spool/ &", P("%s/opt3.log", cdir), 10);
	check(has(P("%s/opt3.log", cdir), "runs something in the background ('&')"),
	      "shell text ending in '&' is warned about");
	start(just_options, "echo \"$1\" >&2 && exit 3 || true", P("%s/opt4.log", cdir), 10);
	start(just_options, ship, P("%s/opt4.log", cdir), 10);
	start(just_options, "true", P("%s/opt4.log", cdir), 10);
	check(!strcmp(slurp(P("%s/opt4.log", cdir)), ""),
	      "no warning for >&, &&, a program's path or name: '%s'", slurp(P("%s/opt4.log", cdir)));
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * 20 sets an earlier trace left unshipped do not take this
 * trace's queue: its sets reach the hook after them, in the same start.
 */
static void case_queue(void)
{
	const char *log = P("%s/log", cdir), *hooklog = P("%s/hook.log", cdir);
	const char *hook = P("echo \"$1 RETRY=$RINGTRACE_CHUNK_RETRY\" >>%s", hooklog);
	const char *a1[] = { "-o", P("%s/p/t1", cdir), "--on-chunk", "exit 3", NULL };
	const char *a2[] = { "-o", P("%s/p/t2", cdir), "--on-chunk", hook, NULL };
	struct run r1 = { a1, 1, 20, 0 }, r2 = { a2, 1, 3, 0 };
	int rc;

	mkdir(P("%s/p", cdir), 0755);
	rc = start(run_sets, &r1, P("%s/log1", cdir), 60);
	check(rc == 0 && count(P("%s/log1", cdir), "--on-chunk hook exited 3") == 20,
	      "an earlier trace with 20 sets its hook failed (exit %d)", rc);
	rc = start(run_sets, &r2, log, 60);
	check(rc == 0 && count(hooklog, "/p/t1/chunk-") == 20 &&
	      count(hooklog, "RETRY=1") == 20,
	      "the next start hands them over, RINGTRACE_CHUNK_RETRY=1 (exit %d)", rc);
	check(count(hooklog, "/p/t2/chunk-") == 3 && count(hooklog, "/p/t2/chunk-000003 RETRY=0"),
	      "and this trace's 3 sets after them (%u)", count(hooklog, "/p/t2/chunk-"));
	check(!has(log, "queue is full"), "none found the queue full");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * A set that finds this trace's queue full (--on-chunk-queue
 * 1, a slow hook) waits on disk and is queued once there is room, in the
 * same start: every set shipped, none left for the next start.
 */
static void case_requeue(void)
{
	const char *log = P("%s/log", cdir), *hooklog = P("%s/hook.log", cdir);
	const char *hook = P("echo \"$1\" >>%s; sleep 0.3", hooklog);
	const char *args[] = { "-o", P("%s/t", cdir), "--on-chunk-queue", "1",
			       "--on-chunk", hook, NULL };
	struct run r = { args, 1, 4, 0 };
	int rc = start(run_sets, &r, log, 60);

	check(rc == 0, "the daemon stops (exit %d)", rc);
	check(has(log, "queue is full"), "a set found the queue full, said");
	check(count(hooklog, "/t/chunk-") == 4, "every set reached the hook (%u of 4)",
	      count(hooklog, "/t/chunk-"));
	check(has(log, "STATUS stop: sets=4 ok=4 failed=0 not_handed=0 left_sets=0"),
	      "all shipped, none left for the next start");
	if (counts->failed > case_failed0)
		show(log);
}

/* --max-total over budget once the hook is done with set 1, then the stop. */
struct budget {
	const char *root, *hook;
	bool fail;			/* the removal's first step fails */
};

static void run_budget(void *arg)
{
	const struct budget *b = arg;
	const char *args[] = { "--root", b->root, "--max-total", "1",
			       "--on-chunk", b->hook, NULL };

	d_start(args, false);
	d_set(1, 100);
	if (!wait_count(P("%s/log", cdir), "--on-chunk hook exited", 1, 20))
		warn("the hook did not run");
	fault.removal_fails = b->fail;
	outdir_retention();
	fault.removal_fails = false;
	fprintf(stderr, "RETENTION done\n");
	d_stop(0);
	d_status("stop");
}

/*
 * --max-total removes a set the hook left as a symlink to
 * where it moved it: the link goes, not what it points to.
 */
static void case_symlink(void)
{
	const char *log = P("%s/log", cdir), *spool = P("%s/spool", cdir);
	const char *hook = P("d=%s/$(basename \"$1\"); mv -T \"$1\" \"$d\" && ln -s \"$d\" \"$1\"",
			     spool);
	struct budget b = { P("%s/root", cdir), hook, false };
	int rc;

	mkdir(spool, 0755);
	mkdir(b.root, 0755);
	rc = start(run_budget, &b, log, 30);
	check(rc == 0, "the daemon stops (exit %d)", rc);
	check(entries(P("%s/chunk-000001", spool)) == 3,
	      "the spool's set is whole (%d files of 3)", entries(P("%s/chunk-000001", spool)));
	check(count(log, "chunk-000001: --on-chunk hook exited 0") == 1 &&
	      !has(log, "cannot remove"), "the link was removed, not followed");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * A set the hook left with a subdirectory of its own is
 * removed whole, through a tombstone; none is left.
 */
static void case_subdir(void)
{
	const char *log = P("%s/log", cdir), *root = P("%s/root", cdir);
	struct budget b = { root, "mkdir -p \"$1/sent/deeper\" && echo ok >\"$1/sent/deeper/receipt\"", false };
	int rc;

	mkdir(root, 0755);
	rc = start(run_budget, &b, log, 30);
	check(rc == 0, "the daemon stops (exit %d)", rc);
	{
		DIR *d = opendir(root);
		struct dirent *de;
		char trace[PATH_MAX] = "";

		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.')
				snprintf(trace, sizeof(trace), "%s/%s", root, de->d_name);
		if (d)
			closedir(d);
		check(*trace && !exists(P("%s/chunk-000001", trace)) &&
		      !exists(P("%s/.removing-chunk-000001", trace)) &&
		      !exists(P("%s/.chunk-000001.shipped", trace)),
		      "the set, its subdirectories and its mark are gone, no tombstone left");
	}
	check(!has(log, "cannot remove"), "no removal failed");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * A set is forgotten only once it is gone: one whose removal
 * fails stays known, and the stop counts it as left for the next start.
 */
static void case_forget(void)
{
	const char *log = P("%s/log", cdir), *root = P("%s/root", cdir);
	struct budget b = { root, "exit 3", true };
	int rc;

	mkdir(root, 0755);
	rc = start(run_budget, &b, log, 30);
	check(rc == 0, "the daemon stops (exit %d)", rc);
	check(has(log, "chunk-000001: cannot remove: Input/output error"), "the failed removal is said");
	check(has(log, "STATUS stop: sets=1 ok=0 failed=1 not_handed=0 left_sets=1"),
	      "the set still counts, left for the next start");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * Recovery hands over only whole sets -- a manifest, and every
 * file it lists there with its size -- and says which it skips; a
 * tombstone a removal cut short is removed.
 */
static void case_complete(void)
{
	const char *log = P("%s/log", cdir), *hooklog = P("%s/hook.log", cdir);
	const char *t1 = P("%s/p/t1", cdir);
	const char *hook = P("echo \"$1\" >>%s", hooklog);
	const char *a1[] = { "-o", t1, "--on-chunk", "exit 3", NULL };
	const char *a2[] = { "-o", P("%s/p/t2", cdir), "--on-chunk", hook, NULL };
	struct run r1 = { a1, 1, 5, 0 };
	int rc;

	mkdir(P("%s/p", cdir), 0755);
	rc = start(run_sets, &r1, log, 30);
	check(rc == 0 && count(log, "hook exited 3") == 5, "an earlier trace with 5 sets not shipped (exit %d)", rc);
	unlink(P("%s/chunk-000002/manifest.json", t1));
	unlink(P("%s/chunk-000003/cpu0-000003.zst", t1));
	truncate(P("%s/chunk-000004/metadata", t1), 3);
	/* A removal by --max-total cut short. */
	rename(P("%s/chunk-000005", t1), P("%s/.removing-chunk-000005", t1));
	rc = start(run_empty, (void *)a2, log, 30);
	check(rc == 0, "the next start stops (exit %d)", rc);
	check(!strcmp(slurp(hooklog), P("%s/chunk-000001\n", t1)),
	      "only the whole set is handed over: '%s'", slurp(hooklog));
	check(has(log, "chunk-000002: not handed to --on-chunk: incomplete (manifest.json: No such file or directory)") &&
	      has(log, "chunk-000003: not handed to --on-chunk: incomplete (cpu0-000003.zst: No such file or directory)") &&
	      has(log, "chunk-000004: not handed to --on-chunk: incomplete (metadata: 3 bytes, its manifest says"),
	      "each set skipped is said, with what it lacks");
	check(!exists(P("%s/.removing-chunk-000005", t1)), "the tombstone is removed");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * Recovery opens nothing beside its trace but this user's
 * directories that no one else writes: one others may write, a symlink,
 * a FIFO, another user's are looked at (statx), never opened.
 */
static void case_siblings(void)
{
	const char *log = P("%s/log", cdir), *opens = P("%s/opens", cdir);
	const char *p = P("%s/p", cdir), *hooklog = P("%s/hook.log", cdir);
	const char *hook = P("echo \"$1\" >>%s", hooklog);
	const char *a1[] = { "-o", P("%s/ours", p), "--on-chunk", "exit 3", NULL };
	const char *a2[] = { "-o", P("%s/new", p), "--on-chunk", hook, NULL };
	struct run r1 = { a1, 1, 1, 0 };
	/* A directory of ours without the marker is opened, to look for it. */
	const char *never[] = { "wide", "link", "fifo", "theirs" };
	char *text;
	int rc;
	bool opened = false;

	mkdir(p, 0755);
	rc = start(run_sets, &r1, log, 30);
	check(rc == 0, "a trace of ours with a set not shipped (exit %d)", rc);
	mkdir(P("%s/plain", p), 0755);
	mkdir(P("%s/wide", p), 0700);
	put(P("%s/wide/.ringtrace-handoff", p), "", 0640);
	chmod(P("%s/wide", p), 0777);
	symlink(P("%s/ours", p), P("%s/link", p));
	mkfifo(P("%s/fifo", p), 0644);
	if (!geteuid()) {
		mkdir(P("%s/theirs", p), 0755);
		put(P("%s/theirs/.ringtrace-handoff", p), "", 0640);
		if (chown(P("%s/theirs", p), 65534, 65534))
			printf("# chown: %s\n", strerror(errno));
	}
	fault.opens = opens;
	rc = start(run_empty, (void *)a2, log, 30);
	fault.opens = NULL;
	check(rc == 0 && !strcmp(slurp(hooklog), P("%s/ours/chunk-000001\n", p)),
	      "the trace of ours is handed over (exit %d)", rc);
	text = slurp(opens);
	for (unsigned int i = 0; i < ARRAY_SIZE(never); i++) {
		char *at = strstr(text, P("%s/%s", p, never[i]));

		if (at && (at[strlen(p) + 1 + strlen(never[i])] == '\n' ||
			   at[strlen(p) + 1 + strlen(never[i])] == '/')) {
			printf("# opened: %s/%s\n", p, never[i]);
			opened = true;
		}
	}
	check(!opened, "nothing else beside it is opened");
	free(text);
	if (counts->failed > case_failed0)
		show(log);
}

/* A start whose hook holds set 1, then a kill -9 of it (_exit). */
static void run_killed(void *arg)
{
	const struct one_set *o = arg;
	const char *args[] = { "-o", o->dir, "--on-chunk", o->hook, NULL };

	d_start(args, false);
	d_set(1, 100);
	if (!wait_count(P("%s/hook.log", cdir), "started", 1, 20))
		warn("the hook did not start");
	_exit(0);
}

/*
 * The hook holds its set's flock() through a descriptor it
 * inherits, and so does whatever it leaves running: the daemon says the
 * hook left processes, and after a kill -9 of the daemon the next start
 * does not hand a set over while an earlier hook still holds it.
 */
static void case_lock(void)
{
	const char *log = P("%s/log", cdir), *hooklog = P("%s/hook.log", cdir);
	const char *p = P("%s/p", cdir);
	struct one_set o1 = { P("%s/t0", cdir),
			      P("flock -n \"$1\" true && echo free >>%s || echo held >>%s", hooklog, hooklog),
			      0, NULL };
	struct one_set o2 = { P("%s/t3", cdir), "(sleep 2) & exit 0", 0, NULL };
	/* Gone from the group once the file is there: only its lock tells. */
	struct one_set o3 = { P("%s/t4", cdir),
			      P("setsid sh -c 'echo >%s/t4.up; exec sleep 2' & until [ -s %s/t4.up ]; do sleep 0.05; done",
				cdir, cdir), 0, NULL };
	struct one_set k = { P("%s/t1", p),
			     P("echo \"started $1 $RINGTRACE_CHUNK_RETRY\" >>%s; sleep 4", hooklog),
			     0, NULL };
	const char *a2[] = { "-o", P("%s/t2", p), "--on-chunk",
			     P("echo \"again $1 $RINGTRACE_CHUNK_RETRY\" >>%s", hooklog), NULL };
	const char *a3[] = { "-o", P("%s/t3", p), "--on-chunk", a2[3], NULL };
	int rc;

	rc = start(run_one_set, &o1, log, 20);
	check(rc == 0 && !strcmp(slurp(hooklog), "held\n"),
	      "the hook holds its set's lock: '%s'", slurp(hooklog));
	unlink(hooklog);
	rc = start(run_one_set, &o2, log, 20);
	check(rc == 0 && has(log, "t3/chunk-000001: --on-chunk hook exited 0 but left processes running (in its process group)"),
	      "a hook that left a child in its group: said (exit %d)", rc);
	rc = start(run_one_set, &o3, log, 20);
	check(rc == 0 && has(log, "t4/chunk-000001: --on-chunk hook exited 0 but left processes running (holding the set's directory open)"),
	      "a hook that left a child in a session of its own: said (exit %d)", rc);

	mkdir(p, 0755);
	rc = start(run_killed, &k, log, 20);
	check(rc == 0 && has(hooklog, "started"), "a daemon killed while its hook has set 1");
	rc = start(run_empty, (void *)a2, log, 20);
	check(rc == 0 && !has(hooklog, "again"),
	      "the next start does not hand it over while that hook runs: '%s'", slurp(hooklog));
	check(has(log, "t1/chunk-000001: not handed to --on-chunk now: a hook an earlier ringtraced started still holds it"),
	      "and says so");
	sleep(4);
	rc = start(run_empty, (void *)a3, log, 20);
	check(rc == 0 && has(hooklog, P("again %s/t1/chunk-000001 1", p)),
	      "once that hook is gone, a start hands it over (exit %d)", rc);
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * The shipped mark is synced itself, then its directory; when
 * the directory's sync fails the mark is taken back, and said: the set is
 * handed again at the next start.
 */
static void case_mark(void)
{
	const char *log = P("%s/log", cdir), *fsyncs = P("%s/fsyncs", cdir);
	const char *flag = P("%s/dirsync-fails", cdir), *t2 = P("%s/t2", cdir);
	struct one_set o1 = { P("%s/t1", cdir), "true", 0, NULL };
	struct one_set o2 = { t2, P("touch %s", flag), 0, NULL };
	int rc;

	fault.fsyncs = fsyncs;
	rc = start(run_one_set, &o1, log, 20);
	fault.fsyncs = NULL;
	check(rc == 0 && exists(P("%s/t1/.chunk-000001.shipped", cdir)) &&
	      has(fsyncs, P("%s/t1/.chunk-000001.shipped", cdir)),
	      "the mark is fsync()ed itself (exit %d)", rc);
	fault.dirsync_fails = flag;
	rc = start(run_one_set, &o2, log, 20);
	fault.dirsync_fails = NULL;
	check(rc == 0 && !exists(P("%s/.chunk-000001.shipped", t2)),
	      "a mark whose directory's sync failed is taken back (exit %d)", rc);
	check(has(log, "t2/.chunk-000001.shipped: Input/output error (not marked shipped: the next start hands it to the hook again)"),
	      "said");
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * A hand-off thread stuck in a call (a wedged disk's
 * fdatasync) does not hold the stop past its deadline: the stop says
 * what is left and returns; the process's exit ends the thread.
 */
static void case_stop(void)
{
	const char *log = P("%s/log", cdir), *dir = P("%s/t", cdir);
	struct one_set o = { dir, "true", 1000, NULL };
	int rc;

	fault.wedge = "/.chunk-000001.tmp/";
	rc = start(run_one_set, &o, log, 20);
	fault.wedge = NULL;
	check(rc == 0, "the stop returns (exit %d; -1: still there after 20 s)", rc);
	check(has(log, "--on-chunk: the hand-off thread is still busy") &&
	      has(log, "assembling chunk set 1"),
	      "what the thread is stuck in is said");
	{
		char *text = slurp(log), *at = strstr(text, "STOP took ");
		unsigned long long ms = at ? strtoull(at + 10, NULL, 10) : ~0ULL;

		check(ms < 5000, "within the deadline (1 s) and its margin: %llu ms", ms);
		free(text);
	}
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * Loose chunks of a number whose set is there (shipped) are
 * left alone, said, at every start: no failure, no staging directory.
 */
static void case_loose(void)
{
	const char *log = P("%s/log", cdir), *t1 = P("%s/p/t1", cdir);
	const char *a1[] = { "-o", t1, "--on-chunk", "true", NULL };
	const char *a2[] = { "-o", P("%s/p/t2", cdir), "--on-chunk", "true", NULL };
	const char *a3[] = { "-o", P("%s/p/t3", cdir), "--on-chunk", "true", NULL };
	struct run r1 = { a1, 1, 1, 0 };
	int rc;

	mkdir(P("%s/p", cdir), 0755);
	rc = start(run_sets, &r1, log, 20);
	check(rc == 0 && exists(P("%s/.chunk-000001.shipped", t1)), "set 1 shipped, left in place");
	put(P("%s/cpu1-000001.zst", t1), "x\n", 0640);
	start(run_empty, (void *)a2, log, 20);
	start(run_empty, (void *)a3, log, 20);
	check(!has(log, "not assembled") && !exists(P("%s/.chunk-000001.tmp", t1)),
	      "no start fails on it, no staging directory is left");
	check(count(log, "t1/chunk-000001: chunks of that number beside it") == 2 &&
	      exists(P("%s/cpu1-000001.zst", t1)), "the loose chunk is left as it is, said at each start");
	if (counts->failed > case_failed0)
		show(log);
}

/* recover_finish() of rotation 1 of the trace @arg, with its peak memory. */
static void finish_rotation(void *arg)
{
	char what[256];
	struct rusage before, after;
	int tfd = open(arg, O_RDONLY | O_DIRECTORY), err;

	getrusage(RUSAGE_SELF, &before);
	err = recover_finish(tfd, arg, 1, what, sizeof(what));
	getrusage(RUSAGE_SELF, &after);
	fprintf(stderr, "FINISH %d %s grew %ld KiB\n", err, what,
		after.ru_maxrss - before.ru_maxrss);
}

/*
 * A packet header whose content_size is beyond any sub-buffer
 * ends what recovery counts: it does not buffer the chunk's data waiting
 * for it.
 */
static void case_facts(void)
{
	const char *log = P("%s/log", cdir), *t = P("%s/t", cdir);
	struct ringtrace_packet_header h = {
		.magic = RINGTRACE_CTF_MAGIC,
		.content_size = 4096 * 8, .packet_size = 4096 * 8, .events = 7,
	};
	size_t zcap = ZSTD_CStreamOutSize();
	uint8_t *in = calloc(1, 1 << 20), *z = malloc(zcap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	char *text, *at;
	int fd;

	mkdir(t, 0750);
	put(P("%s/metadata", t), "/* CTF 1.8 */\ntrace { major = 1; };\n", 0640);
	fd = open(P("%s/cpu0-000001.zst", t), O_WRONLY | O_CREAT | O_TRUNC, 0640);
	/* A packet of 4 KiB, then one claiming 2^40 bytes: 96 MiB of zeros follow. */
	memcpy(in, &h, sizeof(h));
	h.content_size = h.packet_size = (1ULL << 40) * 8;
	memcpy(in + 4096, &h, sizeof(h));
	for (int i = 0; i < 96; i++) {
		ZSTD_inBuffer zi = { in, 1 << 20, 0 };

		while (zi.pos < zi.size) {
			ZSTD_outBuffer zo = { z, zcap, 0 };

			ZSTD_compressStream2(cc, &zo, &zi, ZSTD_e_continue);
			if (write(fd, z, zo.pos) != (ssize_t)zo.pos)
				printf("# write: %s\n", strerror(errno));
		}
		if (!i)
			memset(in, 0, 4096 + sizeof(h));
	}
	for (size_t left = 1; left;) {
		ZSTD_inBuffer zi = { in, 0, 0 };
		ZSTD_outBuffer zo = { z, zcap, 0 };

		left = ZSTD_compressStream2(cc, &zo, &zi, ZSTD_e_end);
		if (write(fd, z, zo.pos) != (ssize_t)zo.pos)
			printf("# write: %s\n", strerror(errno));
	}
	close(fd);
	ZSTD_freeCCtx(cc);
	free(in);
	free(z);
	start(finish_rotation, (void *)t, log, 60);
	text = slurp(log);
	at = strstr(text, "FINISH ");
	check(at && !strncmp(at, "FINISH 0 ", 9) && exists(P("%s/chunk-000001/manifest.json", t)),
	      "the rotation is assembled (%.*s)", at ? (int)strcspn(at, "\n") : 4,
	      at ? at : "none");
	check(at && strstr(at, "grew ") && strtol(strstr(at, "grew ") + 5, NULL, 10) < 48 * 1024,
	      "without buffering the chunk's 96 MiB (maxrss grew %ld KiB)",
	      at && strstr(at, "grew ") ? strtol(strstr(at, "grew ") + 5, NULL, 10) : -1L);
	check(has(P("%s/chunk-000001/manifest.json", t), "\"packets\": 1, \"events\": 7,"),
	      "its manifest counts the packet before the bad one");
	free(text);
	if (counts->failed > case_failed0)
		show(log);
}

/*
 * ringtrace ship as the hook (--on-chunk 'ringtrace ship --clickhouse
 * URL', the set from RINGTRACE_CHUNK_DIR), run by tools/tests/test_ship.py
 * with a real clickhouse-server, which then checks what the server holds;
 * only when named (rt-handoff ship), the environment saying:
 *   RT_SHIP_CLI       the ringtrace binary
 *   RT_SHIP_SRC       a trace: its metadata and cpu0.zst, cpu1.zst are
 *                     the module's metadata and every set's chunks
 *   RT_SHIP_DOWN_URL  a server that is down: the first start's hooks fail
 *   RT_SHIP_URL       the server: the next start hands the sets over again
 *   RT_SHIP_OUT       a new directory for the traces, left for the checks
 * A first start makes sets 1-3 while the server is down: three hooks
 * fail, nothing is marked shipped; the next start (the server up) hands
 * the three over again (RINGTRACE_CHUNK_RETRY=1) and they ship; a third
 * start hands nothing.
 */
static void d_set_from(unsigned int seq, const char *src)
{
	for (unsigned int cpu = 0; cpu < 2; cpu++) {
		struct chunk_facts f = { .cpu = cpu, .seq = seq, .packets = 1 };
		char name[CHUNK_NAME_MAX], data[65536];
		int in = open(P("%s/cpu%u.zst", src, cpu), O_RDONLY | O_CLOEXEC), fd;
		ssize_t n;

		chunk_name(name, sizeof(name), cpu, seq);
		fd = openat(outdirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (in < 0 || fd < 0)
			warn("%s: %s", name, strerror(errno));
		while (in >= 0 && fd >= 0 && (n = read(in, data, sizeof(data))) > 0)
			if (write(fd, data, (size_t)n) != n)
				warn("%s: %s", name, strerror(errno));
		close(in);
		close(fd);
		handoff_chunk_closed(&f);
	}
	handoff_sets_closed(seq);
}

static void run_ship_sets(void *arg)
{
	d_start(arg, false);
	for (unsigned int k = 1; k <= 3; k++)
		d_set_from(k, getenv("RT_SHIP_SRC"));
	d_stop(0);
	d_status("stop");
}

static void case_ship(void)
{
	const char *cli = getenv("RT_SHIP_CLI"), *src = getenv("RT_SHIP_SRC"),
		   *down = getenv("RT_SHIP_DOWN_URL"), *url = getenv("RT_SHIP_URL"),
		   *out = getenv("RT_SHIP_OUT");
	char hook1[PATH_MAX + 256], hook2[PATH_MAX + 256], *meta;
	const char *log = P("%s/log", cdir);
	int rc;

	if (!cli || !src || !down || !url || !out) {
		check(false, "RT_SHIP_CLI, RT_SHIP_SRC, RT_SHIP_DOWN_URL, RT_SHIP_URL and RT_SHIP_OUT are needed (tools/tests/test_ship.py sets them)");
		return;
	}
	snprintf(hook1, sizeof(hook1), "%s ship --clickhouse %s", cli, down);
	snprintf(hook2, sizeof(hook2), "%s ship --clickhouse %s", cli, url);
	const char *a1[] = { "-o", P("%s/t1", out), "--on-chunk", hook1, NULL };
	const char *a2[] = { "-o", P("%s/t2", out), "--on-chunk", hook2, NULL };
	const char *a3[] = { "-o", P("%s/t3", out), "--on-chunk", hook2, NULL };

	/* Every set's chunks are the source's: its metadata is the "module's". */
	meta = slurp(P("%s/metadata", src));
	put(P("%s/metadata", fctl.dir), meta, 0644);
	free(meta);
	mkdir(out, 0755);
	rc = start(run_ship_sets, (void *)a1, log, 60);
	check(rc == 0 && count(log, "--on-chunk hook exited 1 after") == 3 &&
	      count(log, "Couldn't connect to server") == 3,
	      "the server down: three hooks exit 1, libcurl's reason said (exit %d)", rc);
	check(!exists(P("%s/t1/.chunk-000001.shipped", out)) &&
	      !exists(P("%s/t1/.chunk-000003.shipped", out)) &&
	      exists(P("%s/t1/chunk-000003/manifest.json", out)),
	      "no set is marked shipped, each stays on disk");
	check(!has(log, "cannot know which set"), "ringtrace ship is not warned about: it reads RINGTRACE_CHUNK_DIR");
	rc = start(run_empty, (void *)a2, log, 120);
	check(rc == 0 && count(log, "--on-chunk hook exited 0 after") == 3 &&
	      exists(P("%s/t1/.chunk-000001.shipped", out)) &&
	      exists(P("%s/t1/.chunk-000002.shipped", out)) &&
	      exists(P("%s/t1/.chunk-000003.shipped", out)),
	      "the next start, the server up: the three sets shipped (exit %d)", rc);
	check(count(log, "t1/chunk-000001: set ") == 1 &&
	      count(log, "t1/chunk-000002: set ") == 1 &&
	      count(log, "t1/chunk-000003: set ") == 1 &&
	      count(log, "rows shipped") == 3,
	      "each set shipped once");
	rc = start(run_empty, (void *)a3, log, 60);
	check(rc == 0 && count(log, "--on-chunk hook exited 0 after") == 3 &&
	      count(log, "--on-chunk hook exited") == 6,
	      "a third start hands nothing over (exit %d)", rc);
	put(P("%s/metadata", fctl.dir), "/* CTF 1.8 */\ntrace { major = 1; };\n", 0644);
	if (counts->failed > case_failed0)
		show(log);
}

/* ---- main ----------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
	bool named;			/* only when named (needs a server) */
} cases[] = {
	{ "trust", case_trust, false },
	{ "fifo", case_fifo, false },
	{ "tmpswap", case_tmpswap, false },
	{ "oneword", case_oneword, false },
	{ "queue", case_queue, false },
	{ "requeue", case_requeue, false },
	{ "symlink", case_symlink, false },
	{ "subdir", case_subdir, false },
	{ "forget", case_forget, false },
	{ "complete", case_complete, false },
	{ "siblings", case_siblings, false },
	{ "lock", case_lock, false },
	{ "mark", case_mark, false },
	{ "stop", case_stop, false },
	{ "loose", case_loose, false },
	{ "facts", case_facts, false },
	{ "ship", case_ship, true },
};

static bool wanted(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	char cmd[PATH_MAX + 16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED)
		return 1;
	snprintf(base, sizeof(base), "/var/tmp/rt-handoff.XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(base, 0755);
	/* The module's metadata, as metadata_start() reads it. */
	path(fctl.dir, sizeof(fctl.dir), "%s/ctl", base);
	mkdir(fctl.dir, 0755);
	put(P("%s/metadata", fctl.dir), "/* CTF 1.8 */\ntrace { major = 1; };\n", 0644);
	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned int before = counts->failed;

		if (!wanted(argc, argv, cases[i].name) ||
		    (cases[i].named && argc < 2))
			continue;
		case_failed0 = before;
		cname = cases[i].name;
		path(cdir, sizeof(cdir), "%s/%s", base, cname);
		mkdir(cdir, 0755);
		cases[i].fn();
		if (counts->failed == before) {
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cdir);
			if (system(cmd)) {
				/* Left for a look. */
			}
		}
	}
	if (!counts->failed) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd)) {
			/* Left for a look. */
		}
	} else {
		printf("# the failed cases' files are in %s\n", base);
	}
	printf("handoff: %u passed, %u failed\n", counts->passed, counts->failed);
	return counts->failed ? 1 : 0;
}
