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
 *   rt_workload --sched N
 *	the scheduler events: the main thread, named "rt_waker" and pinned
 *	to CPU 0, wakes a thread "rt_sleeper" pinned to the last online CPU
 *	N times, each time only once it sleeps in read(); then moves itself
 *	to the sleeper's CPU and back N times; then two threads sleep
 *	NAPS times 2 ms in clock_nanosleep(), "rt_napper" at SCHED_OTHER and
 *	"rt_fifonap" at SCHED_FIFO 1, woken by nothing but their timers;
 *	then forks a child that names itself "rt_reaped" and exits, and
 *	reaps it.  Prints "rt_workload sched waker=W sleeper=S waker_cpu=0
 *	sleeper_cpu=L napper=P fifonap=F naps=NAPS reaped=C rounds=N".
 *
 * getppid() goes through syscall(2) so that no C library can answer it
 * without entering the kernel.  The last call of each run of them sets
 * a bit above the low 32 of the number: the kernel dispatches on the low
 * 32 alone (do_syscall_64() takes an int), runs getppid(), and the trace
 * must name getppid too (the syscall events' id is what the call ran as).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* Set in the last call's number: ignored by the kernel's dispatch. */
#define HIGH_BITS	(1L << 32)

static long calls_getppid(long n)
{
	long i, ppid = -1;

	for (i = 0; i < n; i++)
		ppid = syscall(i == n - 1 ? HIGH_BITS | SYS_getppid : SYS_getppid);
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

/* Pin the calling thread to @cpu. */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

struct sleeper {
	int cpu;
	int wake[2];		/* the waker writes, the sleeper reads */
	int done[2];		/* the sleeper answers */
	pid_t tid;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	char c;

	prctl(PR_SET_NAME, "rt_sleeper");
	pin(s->cpu);
	s->tid = syscall(SYS_gettid);
	for (;;) {
		if (write(s->done[1], "r", 1) != 1)
			die("sleeper: write");
		if (read(s->wake[0], &c, 1) != 1)
			die("sleeper: read");
		if (c == 'q')
			return NULL;
	}
}

/* Until @tid sleeps ('S' in its stat): then a write wakes it. */
static void wait_sleeping(pid_t tid)
{
	char path[64], buf[256], *state;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (;;) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			die(path);
		buf[len] = '\0';
		/* "tid (comm) S ...": the comm may hold anything but ')'. */
		state = strrchr(buf, ')');
		if (state && state[1] == ' ' && state[2] == 'S')
			return;
		sched_yield();
	}
}

#define NAPS 10

struct napper {
	const char *name;
	int policy;
	pid_t tid;
};

/* Sleeps that only its timer ends: the timer's context wakes it. */
static void *napper_main(void *arg)
{
	struct napper *n = arg;
	struct sched_param sp = {
		.sched_priority = n->policy == SCHED_FIFO ? 1 : 0,
	};
	struct timespec t = { .tv_nsec = 2 * 1000 * 1000 };
	int i, err;

	prctl(PR_SET_NAME, n->name);
	n->tid = syscall(SYS_gettid);
	err = pthread_setschedparam(pthread_self(), n->policy, &sp);
	if (err) {
		errno = err;
		die("napper: pthread_setschedparam");
	}
	for (i = 0; i < NAPS; i++) {
		err = clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
		if (err) {
			errno = err;
			die("napper: clock_nanosleep");
		}
	}
	return NULL;
}

static void naps(struct napper *n, int nr)
{
	pthread_t threads[2];
	int i, err;

	for (i = 0; i < nr; i++) {
		err = pthread_create(&threads[i], NULL, napper_main, &n[i]);
		if (err) {
			errno = err;
			die("napper");
		}
	}
	for (i = 0; i < nr; i++)
		if (pthread_join(threads[i], NULL))
			die("napper: join");
}

static int sched_events(long rounds)
{
	struct sleeper s = { .cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1 };
	struct napper n[2] = {
		{ .name = "rt_napper", .policy = SCHED_OTHER },
		{ .name = "rt_fifonap", .policy = SCHED_FIFO },
	};
	pthread_t thread;
	pid_t waker, child;
	char c;
	long i;
	int err;

	if (s.cpu < 0 || pipe(s.wake) || pipe(s.done))
		die("sched: setup");
	prctl(PR_SET_NAME, "rt_waker");
	pin(0);
	waker = syscall(SYS_gettid);
	err = pthread_create(&thread, NULL, sleeper_main, &s);
	if (err) {
		errno = err;
		die("thread");
	}
	for (i = 0; i < rounds; i++) {
		if (read(s.done[0], &c, 1) != 1)
			die("waker: read");
		wait_sleeping(s.tid);
		if (write(s.wake[1], "w", 1) != 1)
			die("waker: write");
	}
	if (read(s.done[0], &c, 1) != 1)
		die("waker: read");
	wait_sleeping(s.tid);
	if (write(s.wake[1], "q", 1) != 1 || pthread_join(thread, NULL))
		die("sleeper: stop");

	/* Each change of affinity moves the running thread. */
	for (i = 0; i < rounds; i++) {
		pin(s.cpu);
		pin(0);
	}

	naps(n, 2);

	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		prctl(PR_SET_NAME, "rt_reaped");
		_exit(0);
	}
	wait_child(child);
	printf("rt_workload sched waker=%d sleeper=%d waker_cpu=0 sleeper_cpu=%d napper=%d fifonap=%d naps=%d reaped=%d rounds=%ld\n",
	       waker, s.tid, s.cpu, n[0].tid, n[1].tid, NAPS, child, rounds);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "child", no_argument, NULL, 'c' },
		{ "load", required_argument, NULL, 'l' },
		{ "forks", required_argument, NULL, 'f' },
		{ "sched", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char n[32], self[PATH_MAX];
	long calls = 1000, ppid;
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
		case 's':
			return sched_events(strtol(optarg, NULL, 10));
		default:
			fprintf(stderr, "usage: %s [-n CALLS] | --load SECONDS | --forks N | --sched N\n",
				prog);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (calls < 1) {
		fprintf(stderr, "%s: bad call count\n", prog);
		return 2;
	}
	/*
	 * Exactly CALLS getppid() per thread, the test counts them: the ppid
	 * printed is the calls' own answer, not one more call's.
	 */
	if (child)
		return calls_getppid(calls) < 0;

	/* Exec the real path: the child's comm becomes "rt_workload". */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		die("readlink /proc/self/exe");
	self[len] = '\0';
	ppid = calls_getppid(calls);
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
	printf("rt_workload parent=%d ppid=%ld thread=%d child=%d calls=%ld nr=%d\n",
	       getpid(), ppid, tid, pid, calls, SYS_getppid);
	return 0;
}
