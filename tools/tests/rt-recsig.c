// SPDX-License-Identifier: GPL-2.0
/*
 * rt-recsig: host tests of `ringtrace record`'s signals (tools/cli/recsig.c)
 * and of how it signals and starts ringtraced (tools/cli/daemon.c): what
 * needs processes and signals, not ringtrace.ko.
 *
 *   rt-recsig                 the tests; ends "rt-recsig: N passed, M failed"
 *   rt-recsig record DIR [-- CMD...]
 *                             record's signal handling, as record.c drives
 *                             it: a stop signal with a command waits for the
 *                             command (passed on if it did not get it), one
 *                             without ends it; it ends as record does
 *                             (recsig_exit()); DIR/ready once it runs
 *   rt-recsig count FILE SIG  a traced command: counts the SIGs it gets
 *                             for 1 s after the first (4 x the witness's
 *                             window: one passed on late is in), up to 3 s
 *                             for one; the count into FILE; FILE.ready once
 *                             it counts, FILE.got at the first
 *   rt-recsig daemon FILE     what start_daemon() runs as ringtraced here:
 *                             waits 300 ms, as a slow start does, then takes
 *                             SIGTERM as ringtraced does (blocked, signalfd);
 *                             FILE.ready at its start, FILE "SIGTERM" if one
 *                             was pending, and its mask and ignored set
 *
 * The cases, each against what a user would see:
 *   - a stop signal reaches the command exactly once, sent to record alone,
 *     to its process group, and as `pkill -f 'rt-recsig record'` sends it
 *     (every process whose command line matches, from one sender): the
 *     witness reads as rt-witness, so that only record matches;
 *   - SIGQUIT (a stop signal) and SIGABRT (record's own) end a system-wide
 *     record by that signal without a core, cores allowed;
 *   - daemon_stop() then daemon_hurry() are two stops for ringtraced's
 *     loop, every time (two SIGINTs merge when the first is pending);
 *   - ringtraced starts with SIGINT, SIGTERM, SIGHUP, SIGUSR1 blocked and
 *     SIGTTOU ignored: a PDEATHSIG SIGTERM before it blocks them is read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../cli/recsig.h"
#include "tap.h"

static char self[PATH_MAX], tmp[] = "/tmp/rt-recsig.XXXXXX";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool exists(const char *path)
{
	return !access(path, F_OK);
}

/* Up to @s seconds for @path. */
static bool wait_file(const char *path, double s)
{
	double end = now_s() + s;

	while (!exists(path) && now_s() < end)
		sleep_ms(10);
	return exists(path);
}

static void put(const char *path, const char *text)
{
	char t[PATH_MAX + 8];
	FILE *f;

	snprintf(t, sizeof(t), "%s.tmp", path);
	f = fopen(t, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(t, path))
		die("%s: %s", path, strerror(errno));
}

static char *get(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

/* ---- the traced command ---------------------------------------------------------- */

static volatile sig_atomic_t counted;

static void count_one(int sig __attribute__((unused)))
{
	counted++;
}

static int count_main(const char *file, const char *signame)
{
	struct sigaction sa = { .sa_handler = count_one };
	char path[PATH_MAX], n[16];
	int sig = !strcmp(signame, "INT") ? SIGINT : SIGTERM;
	double end;

	sigaction(sig, &sa, NULL);
	snprintf(path, sizeof(path), "%s.ready", file);
	put(path, "");
	for (end = now_s() + 3; !counted && now_s() < end;)
		sleep_ms(10);
	if (counted) {
		snprintf(path, sizeof(path), "%s.got", file);
		put(path, "");
		for (end = now_s() + 1; now_s() < end;)
			sleep_ms(10);
	}
	snprintf(n, sizeof(n), "%d", (int)counted);
	put(file, n);
	return 0;
}

/* ---- record's loop ------------------------------------------------------------- */

/* As record.c's record_loop() and finish(), without the tracer. */
static int record_main(const char *dir, char **cmd)
{
	char path[PATH_MAX];
	unsigned int stops = 0;
	double end = now_s() + 15;
	pid_t pid = 0;
	int st;

	recsig_setup();
	if (cmd) {
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (!pid) {
			recsig_child();
			execv(cmd[0], cmd);
			_exit(127);
		}
	}
	snprintf(path, sizeof(path), "%s/ready", dir);
	put(path, "");
	for (;;) {
		struct pollfd pfd[2];

		recsig_pollfds(pfd);
		poll(pfd, 2, recsig_timeout(200));
		stops += recsig_take(pid);
		if (pid && waitpid(pid, &st, WNOHANG) == pid)
			recsig_exit(0, &st);
		if (recsig_own() || stops > (pid ? 1 : 0) || now_s() > end) {
			/* Never left behind by a test that failed. */
			if (pid)
				kill(pid, SIGKILL);
			recsig_exit(stops > (pid ? 1 : 0) || recsig_own() ? 0 : 3,
				    NULL);
		}
	}
}

/* ---- ringtraced as start_daemon() starts it ------------------------------------ */

static int daemon_main(const char *file)
{
	char path[PATH_MAX], line[256], out[512] = "";
	struct signalfd_siginfo si;
	sigset_t set;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s.ready", file);
	put(path, "");
	/* Its start: the SIGTERM comes meanwhile. */
	sleep_ms(300);
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7))
			strncat(out, line, sizeof(out) - strlen(out) - 1);
	if (f)
		fclose(f);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_NONBLOCK);
	if (fd >= 0 && read(fd, &si, sizeof(si)) == sizeof(si) &&
	    si.ssi_signo == SIGTERM)
		strncat(out, "SIGTERM\n", sizeof(out) - strlen(out) - 1);
	put(file, out);
	return 0;
}

/* ---- the tests ------------------------------------------------------------------- */

/*
 * Starts `rt-recsig record DIR [-- ARGS]` as a terminal starts a job: a
 * process group of its own, the stop signals at their defaults, cores
 * allowed, in the test's directory (a core would land there).
 */
static pid_t start_record(char *const *cmd)
{
	char *argv[16] = { self, "record", tmp }, opts[512];
	const char *asan;
	struct rlimit rl;
	sigset_t none;
	int n = 3;
	pid_t pid;

	if (cmd) {
		argv[n++] = "--";
		while (*cmd && n < 15)
			argv[n++] = *cmd++;
	}
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid)
		return pid;
	setpgid(0, 0);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (!getrlimit(RLIMIT_CORE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_CORE, &rl);
	}
	/* ASan would set it to 0 again at the start. */
	asan = getenv("ASAN_OPTIONS");
	snprintf(opts, sizeof(opts), "%s%sdisable_coredump=0", asan ? asan : "",
		 asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	if (chdir(tmp))
		_exit(126);
	execv(self, argv);
	_exit(127);
}

/* Up to 10 s for @pid's end: its wait status, or -1 (then killed). */
static int wait_end(pid_t pid)
{
	double end = now_s() + 10;
	int st;

	while (now_s() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		sleep_ms(10);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static const char *status_text(int st, char *buf, size_t size)
{
	if (st == -1)
		snprintf(buf, size, "still running after 10 s");
	else if (WIFSIGNALED(st))
		snprintf(buf, size, "signal %d%s", WTERMSIG(st),
			 WCOREDUMP(st) ? " core" : "");
	else
		snprintf(buf, size, "exit %d", WEXITSTATUS(st));
	return buf;
}

/* /proc/PID/cmdline with its NULs as blanks, as pgrep -f reads it. */
static char *cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	n = f ? fread(buf, 1, size - 1, f) : 0;
	if (f)
		fclose(f);
	while (n && !buf[n - 1])
		n--;
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return buf;
}

/* The processes whose parent is @parent (up to @max). */
static unsigned int children(pid_t parent, pid_t *out, unsigned int max)
{
	char path[300], line[512], *p;
	unsigned int n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int ppid;
	FILE *f;

	while (d && (de = readdir(d)) && n < max) {
		if (*de->d_name < '0' || *de->d_name > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		if (p && sscanf(p, ") %*c %d", &ppid) == 1 && ppid == parent)
			out[n++] = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * What `pkill -f PATTERN` does, from this one process: every process but
 * this one whose command line holds @pattern gets @sig.  How many did.
 */
static unsigned int pkill_f(const char *pattern, int sig)
{
	pid_t pids[64];
	unsigned int n = 0;
	char line[4096];
	struct dirent *de;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d)) && n < 64) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid > 0 && pid != getpid() &&
		    strstr(cmdline(pid, line, sizeof(line)), pattern))
			pids[n++] = pid;
	}
	if (d)
		closedir(d);
	for (unsigned int i = 0; i < n; i++)
		kill(pids[i], sig);
	return n;
}

enum how { ALONE, GROUP, PKILL };

/* A SIGTERM sent @how: the command counts it once; record exits as it did. */
static void relay_once(enum how how, const char *desc)
{
	char count[PATH_MAX], path[PATH_MAX + 8], what[256], buf[4096], st_text[64];
	char *cmd[] = { self, "count", count, "TERM", NULL };
	pid_t rec, kids[8];
	unsigned int n, matched = 0;
	int st;

	snprintf(count, sizeof(count), "%s/count-%d", tmp, (int)how);
	snprintf(path, sizeof(path), "%s.ready", count);
	rec = start_record(cmd);
	if (!wait_file(path, 10)) {
		check(desc, false);
		kill(-rec, SIGKILL);
		waitpid(rec, NULL, 0);
		return;
	}
	switch (how) {
	case ALONE:
		kill(rec, SIGTERM);
		break;
	case GROUP:
		/*
		 * record stopped until the command took the group's: passed on
		 * as well, a second would then be counted, where sent at once
		 * it could merge with the first, still pending.
		 */
		kill(rec, SIGSTOP);
		kill(-rec, SIGTERM);
		snprintf(path, sizeof(path), "%s.got", count);
		wait_file(path, 3);
		kill(rec, SIGCONT);
		break;
	case PKILL:
		n = children(rec, kids, 8);
		for (unsigned int i = 0; i < n; i++) {
			if (strcmp(cmdline(kids[i], buf, sizeof(buf)), "rt-witness"))
				continue;
			matched++;
		}
		snprintf(what, sizeof(what),
			 "the witness's /proc/PID/cmdline reads rt-witness (%u of record's %u children do)",
			 matched, n);
		check(what, matched == 1);
		/* This run's alone (its directory): others may run beside. */
		snprintf(buf, sizeof(buf), "rt-recsig record %s", tmp);
		n = pkill_f(buf, SIGTERM);
		snprintf(what, sizeof(what),
			 "pkill -f 'rt-recsig record DIR' signals record alone (%u processes matched)",
			 n);
		check(what, n == 1);
		break;
	}
	st = wait_end(rec);
	snprintf(what, sizeof(what), "%s: the command got it once (got %s)", desc,
		 exists(count) ? get(count, buf, sizeof(buf)) : "none");
	check(what, exists(count) && !strcmp(buf, "1"));
	snprintf(what, sizeof(what), "%s: record exits as the command did (exit 0, got %s)",
		 desc, status_text(st, st_text, sizeof(st_text)));
	check(what, st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A system-wide record ended by @sig: by that signal, no core. */
static void ends_without_core(int sig, const char *desc)
{
	char ready[PATH_MAX], what[256], st_text[64];
	struct rlimit rl;
	pid_t rec;
	int st;

	snprintf(ready, sizeof(ready), "%s/ready", tmp);
	unlink(ready);
	rec = start_record(NULL);
	if (!wait_file(ready, 10)) {
		check(desc, false);
		kill(-rec, SIGKILL);
		waitpid(rec, NULL, 0);
		return;
	}
	kill(rec, sig);
	st = wait_end(rec);
	snprintf(what, sizeof(what), "%s: record ends by it, without a core ('signal %d', got '%s')",
		 desc, sig, status_text(st, st_text, sizeof(st_text)));
	check(what, st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == sig &&
	      !WCOREDUMP(st));
	if (!getrlimit(RLIMIT_CORE, &rl) && !rl.rlim_max)
		printf("# cores are not allowed here (RLIMIT_CORE hard limit 0): the core check cannot fail\n");
}

/*
 * ringtraced's loop: stops at the first SIGINT or SIGTERM it reads, then
 * looks for a second one to hurry (daemon/main.c run(), finish_packing()).
 * Exits 0 when it saw a second one within @ms.
 */
static pid_t mock_daemon(int ready, int ms)
{
	struct signalfd_siginfo si;
	struct pollfd pfd;
	sigset_t set;
	pid_t pid;
	bool again = false;

	fflush(NULL);
	pid = fork();
	if (pid)
		return pid;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pfd = (struct pollfd){ .fd = signalfd(-1, &set, SFD_NONBLOCK),
			       .events = POLLIN };
	if (write(ready, "r", 1) != 1)
		_exit(2);
	for (;;) {
		poll(&pfd, 1, 5000);
		if (read(pfd.fd, &si, sizeof(si)) == sizeof(si))
			break;
	}
	poll(&pfd, 1, ms);
	while (read(pfd.fd, &si, sizeof(si)) == sizeof(si))
		again = true;
	_exit(again ? 0 : 1);
}

static void daemon_signals(void)
{
	unsigned int rounds = 20, seen = 0;
	char c, what[256];
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		die("pipe: %s", strerror(errno));
	for (unsigned int i = 0; i < rounds; i++) {
		pid = mock_daemon(p[1], 200);
		if (read(p[0], &c, 1) != 1)
			die("the mock daemon did not start");
		daemon_stop(pid);
		daemon_hurry(pid);
		waitpid(pid, &st, 0);
		seen += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	snprintf(what, sizeof(what),
		 "daemon_stop() then daemon_hurry() at once: ringtraced sees a second stop every time (%u of %u)",
		 seen, rounds);
	check(what, seen == rounds);
	pid = mock_daemon(p[1], 100);
	if (read(p[0], &c, 1) != 1)
		die("the mock daemon did not start");
	daemon_stop(pid);
	waitpid(pid, &st, 0);
	check("daemon_stop() alone: one stop, no hurry", WIFEXITED(st) &&
	      WEXITSTATUS(st) == 1);
	close(p[0]);
	close(p[1]);
}

/* start_daemon() as record calls it, ringtraced being rt-recsig daemon. */
static void daemon_start_signals(void)
{
	char file[PATH_MAX], ready[PATH_MAX + 8], buf[512], what[600];
	char *args[] = { "daemon", file, NULL };
	unsigned long long blk = 0, ign = 0;
	const char *p;
	pid_t pid;
	int st;

	snprintf(file, sizeof(file), "%s/daemon", tmp);
	snprintf(ready, sizeof(ready), "%s.ready", file);
	setenv("RINGTRACED", self, 1);
	pid = start_daemon(args);
	if (!wait_file(ready, 10))
		die("rt-recsig daemon did not start");
	/* What the kernel sends it when we die now (PR_SET_PDEATHSIG). */
	kill(pid, SIGTERM);
	st = wait_end(pid);
	get(file, buf, sizeof(buf));
	p = strstr(buf, "SigBlk:");
	if (p)
		blk = strtoull(p + 7, NULL, 16);
	p = strstr(buf, "SigIgn:");
	if (p)
		ign = strtoull(p + 7, NULL, 16);
#define BIT(sig)	(1ULL << ((sig) - 1))
	snprintf(what, sizeof(what),
		 "ringtraced starts with SIGINT, SIGTERM, SIGHUP and SIGUSR1 blocked (SigBlk %016llx)",
		 blk);
	check(what, (blk & (BIT(SIGINT) | BIT(SIGTERM) | BIT(SIGHUP) | BIT(SIGUSR1))) ==
	      (BIT(SIGINT) | BIT(SIGTERM) | BIT(SIGHUP) | BIT(SIGUSR1)));
	snprintf(what, sizeof(what),
		 "... and SIGTTOU ignored: `stty tostop` lets its lines out (SigIgn %016llx)",
		 ign);
	check(what, ign & BIT(SIGTTOU));
	snprintf(what, sizeof(what),
		 "a SIGTERM before it blocks it: not its end, read once it does (%s)",
		 status_text(st, buf, sizeof(buf)));
	check(what, st != -1 && WIFEXITED(st) && !WEXITSTATUS(st) &&
	      strstr(get(file, buf, sizeof(buf)), "SIGTERM"));
	unsetenv("RINGTRACED");
}

int main(int argc, char **argv)
{
	char rm[PATH_MAX + 16];
	ssize_t n;

	msg_prog = "rt-recsig";
	if (argc >= 3 && !strcmp(argv[1], "record"))
		return record_main(argv[2], argc > 4 && !strcmp(argv[3], "--") ?
				   argv + 4 : NULL);
	if (argc == 4 && !strcmp(argv[1], "count"))
		return count_main(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "daemon"))
		return daemon_main(argv[2]);
	if (argc != 1)
		die("usage: rt-recsig [record DIR [-- CMD...] | count FILE SIG | daemon FILE]");

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("/proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	if (!mkdtemp(tmp))
		die("mkdtemp: %s", strerror(errno));

	relay_once(ALONE, "SIGTERM to record alone");
	relay_once(GROUP, "SIGTERM to record's process group");
	relay_once(PKILL, "pkill -f 'rt-recsig record' (one sender: record and whatever matches)");
	ends_without_core(SIGQUIT, "SIGQUIT (a stop signal)");
	ends_without_core(SIGABRT, "SIGABRT (record's own)");
	daemon_signals();
	daemon_start_signals();

	snprintf(rm, sizeof(rm), "rm -rf '%s'", tmp);
	if (system(rm))
		fprintf(stderr, "rt-recsig: %s left\n", tmp);
	printf("rt-recsig: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
