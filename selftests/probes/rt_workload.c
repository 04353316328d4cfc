// SPDX-License-Identifier: GPL-2.0
/*
 * rt_workload: a known workload for the probe tests.
 *
 *   rt_workload [-n CALLS]
 *	makes CALLS getppid() calls, then CALLS more from a second thread,
 *	forks a child that execs this program (as "rt_workload --child -n
 *	CALLS"), which makes CALLS getppid() calls too; waits for it and
 *	prints one line
 *	"rt_workload parent=P ppid=PP thread=T child=C calls=N nr=NR"
 *	where NR is getppid's syscall number.
 *   rt_workload --load SECONDS
 *	for SECONDS: bursts of getppid() calls and short-lived children,
 *	a writer load that goes through every probe.
 *   rt_workload --forks N
 *	N children, up to 8 at a time, each of which forks one grandchild
 *	that exits at once; prints "rt_workload forks parent=P children=N".
 *
 * getppid() goes through syscall(2) so that no C library can answer it
 * without entering the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "rt_workload";

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static long calls_getppid(long n)
{
	long i, ppid = -1;

	for (i = 0; i < n; i++)
		ppid = syscall(SYS_getppid);
	return ppid;
}

static void *thread_main(void *arg)
{
	long *calls = arg;

	calls_getppid(*calls);
	/* The thread id, for the test to find the thread's events. */
	*calls = syscall(SYS_gettid);
	return NULL;
}

static pid_t run_thread(long calls)
{
	pthread_t thread;
	int err;

	err = pthread_create(&thread, NULL, thread_main, &calls);
	if (!err)
		err = pthread_join(thread, NULL);
	if (err) {
		errno = err;
		die("thread");
	}
	return calls;
}

static pid_t wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: child %d failed (status %#x)\n", prog,
			pid, status);
		exit(1);
	}
	return pid;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int load(double seconds)
{
	double end = now() + seconds;
	pid_t pid;

	while (now() < end) {
		calls_getppid(1000);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid)
			_exit(calls_getppid(10) < 0);
		wait_child(pid);
	}
	return 0;
}

/* A child that forks one grandchild and reaps it. */
static void fork_grandchild(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		_exit(1);
	if (!pid)
		_exit(0);
	_exit(waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	      WEXITSTATUS(status));
}

static int forks(long n)
{
	long started = 0, reaped = 0;
	int status;
	pid_t pid;

	while (reaped < n) {
		for (; started < n && started - reaped < 8; started++) {
			pid = fork();
			if (pid < 0)
				die("fork");
			if (!pid)
				fork_grandchild();
		}
		pid = waitpid(-1, &status, 0);
		if (pid < 0)
			die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "%s: child %d failed (status %#x)\n",
				prog, pid, status);
			return 1;
		}
		reaped++;
	}
	printf("rt_workload forks parent=%d children=%ld\n", getpid(), n);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "child", no_argument, NULL, 'c' },
		{ "load", required_argument, NULL, 'l' },
		{ "forks", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char n[32], self[PATH_MAX];
	long calls = 1000;
	int opt, child = 0;
	pid_t pid, tid;
	ssize_t len;

	while ((opt = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			calls = strtol(optarg, NULL, 10);
			break;
		case 'c':
			child = 1;
			break;
		case 'l':
			return load(strtod(optarg, NULL));
		case 'f':
			return forks(strtol(optarg, NULL, 10));
		default:
			fprintf(stderr, "usage: %s [-n CALLS] | --load SECONDS | --forks N\n",
				prog);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (calls < 1) {
		fprintf(stderr, "%s: bad call count\n", prog);
		return 2;
	}
	if (child)
		return calls_getppid(calls) != getppid();

	/* Exec the real path: the child's comm becomes "rt_workload". */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		die("readlink /proc/self/exe");
	self[len] = '\0';
	calls_getppid(calls);
	tid = run_thread(calls);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		snprintf(n, sizeof(n), "%ld", calls);
		execl(self, "rt_workload", "--child", "-n", n, (char *)NULL);
		die("exec");
	}
	wait_child(pid);
	printf("rt_workload parent=%d ppid=%d thread=%d child=%d calls=%ld nr=%d\n",
	       getpid(), getppid(), tid, pid, calls, SYS_getppid);
	return 0;
}
