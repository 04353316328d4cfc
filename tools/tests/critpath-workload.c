// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of the critical-path test (tools/tests/profile.d/critpath.sh,
 * checked on the host by tools/tests/sql.d/critpath.py): three threads,
 * named cp-A, cp-B and cp-C, start together on a barrier, then
 *	cp-A read()s a pipe,
 *	cp-B waits on a futex (FUTEX_WAIT), then write()s the pipe,
 *	cp-C sleeps 100 ms (clock_nanosleep), then wakes the futex (FUTEX_WAKE),
 * so that cp-A waits on cp-B, which waits on cp-C, which sleeps: cp-A's
 * critical path over its read is cp-A <- cp-B <- cp-C's 100 ms sleep.
 * cp-C sleeps only once cp-A and cp-B said they go to block (a flag set
 * right before the call) and /proc says both sleep (S), yielding
 * meanwhile, so that the whole sleep lies inside cp-A's read even when
 * cp-A reaches it late (6.12-rt under TCG: 17 ms after the barrier).
 * The futex word is set before the wake, and cp-B waits only while it is
 * 0: a wake that comes before the wait is not lost.  Prints
 *	A TID / B TID / C TID
 *	sleep T0 T1	(CLOCK_MONOTONIC ns, the trace's clock: cp-C's
 *			 clock_nanosleep() called at T0, returned at T1)
 * and exits 0 once cp-A read the byte.  Under TCG a loaded host makes
 * the sleep longer than 100 ms; T0 and T1 say how long it was.
 *
 * Usage: critpath-workload
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t start;
static int pipefd[2];
static _Atomic int word;
static pid_t tids[3];
static long long slept[2];
static _Atomic int blocking;		/* cp-A and cp-B about to block */

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void begin(int who, const char *name)
{
	prctl(PR_SET_NAME, name);
	tids[who] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start);
}

static void *thread_a(void *arg)
{
	char c;

	(void)arg;
	begin(0, "cp-A");
	atomic_fetch_add(&blocking, 1);
	if (read(pipefd[0], &c, 1) != 1) {
		perror("cp-A: read");
		exit(1);
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	begin(1, "cp-B");
	atomic_fetch_add(&blocking, 1);
	while (!atomic_load(&word))
		if (syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0) &&
		    errno != EAGAIN && errno != EINTR) {
			perror("cp-B: futex wait");
			exit(1);
		}
	if (write(pipefd[1], "x", 1) != 1) {
		perror("cp-B: write");
		exit(1);
	}
	return NULL;
}

/* Whether thread @tid of this process sleeps (S), as /proc says. */
static int sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold anything, ')' last. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static void *thread_c(void *arg)
{
	struct timespec nap = { 0, 100 * 1000 * 1000 };

	(void)arg;
	begin(2, "cp-C");
	for (long long until = now_ns() + 10000000000LL;
	     atomic_load(&blocking) < 2 || !sleeping(tids[0]) || !sleeping(tids[1]);)
		if (now_ns() > until) {
			fprintf(stderr, "cp-C: cp-A and cp-B not asleep after 10 s\n");
			break;
		} else {
			sched_yield();
		}
	slept[0] = now_ns();
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, &nap) == EINTR)
		;
	slept[1] = now_ns();
	atomic_store(&word, 1);
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fn[3])(void *) = { thread_a, thread_b, thread_c };
	pthread_t t[3];

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: critpath-workload\n");
		return 2;
	}
	if (pipe(pipefd) || pthread_barrier_init(&start, NULL, 3)) {
		perror("critpath-workload");
		return 1;
	}
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, fn[i], NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("A %d\nB %d\nC %d\nsleep %lld %lld\n", tids[0], tids[1], tids[2],
	       slept[0], slept[1]);
	return 0;
}
