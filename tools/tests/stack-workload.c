// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of cli_guest.sh's stack tests: three threads that block in
 * known kernel places, ROUNDS times MS milliseconds each, and say how long
 * they were blocked, as measured around each blocking call:
 *
 *	st-sleep   nanosleep()                  do_nanosleep, hrtimer_nanosleep
 *	st-pipe    read() of an empty pipe      pipe_read
 *	st-futex   FUTEX_WAIT                   futex_wait
 *
 * The main thread (st-main) wakes the pipe and futex readers after MS
 * milliseconds of its own sleep.  Output, one line per thread, once all
 * are done:
 *	COMM TID BLOCKED_NS
 *
 * Usage: stack-workload ROUNDS MS
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int rounds, ms;
/*
 * Each thread's tid and blocked time, printed by the main thread once all
 * are done: a thread printing itself could wait for stdout's lock (a
 * futex) outside the time it measures.
 */
static struct { const char *comm; long tid; uint64_t ns; } result[3];
static int pipefd[2];
static _Atomic uint32_t futex_word;
static _Atomic int ready;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int n)
{
	struct timespec ts = { n / 1000, (long)(n % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void report(int i, const char *comm, uint64_t ns)
{
	result[i].comm = comm;
	result[i].tid = (long)syscall(SYS_gettid);
	result[i].ns = ns;
}

static void *sleeper(void *arg)
{
	uint64_t total = 0, t;

	prctl(PR_SET_NAME, "st-sleep");
	for (int i = 0; i < rounds; i++) {
		t = now_ns();
		sleep_ms(ms);
		total += now_ns() - t;
	}
	report(0, "st-sleep", total);
	return arg;
}

static void *piper(void *arg)
{
	uint64_t total = 0, t;
	char c;

	prctl(PR_SET_NAME, "st-pipe");
	ready++;
	for (int i = 0; i < rounds; i++) {
		t = now_ns();
		if (read(pipefd[0], &c, 1) != 1)
			exit(2);
		total += now_ns() - t;
	}
	report(1, "st-pipe", total);
	return arg;
}

static void *futexer(void *arg)
{
	uint64_t total = 0, t;

	prctl(PR_SET_NAME, "st-futex");
	ready++;
	for (int i = 0; i < rounds; i++) {
		t = now_ns();
		/* Woken when the main thread moves the word past i. */
		while (atomic_load(&futex_word) == (uint32_t)i)
			syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, i,
				NULL, NULL, 0);
		total += now_ns() - t;
	}
	report(2, "st-futex", total);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t th[3];

	if (argc != 3 || (rounds = atoi(argv[1])) <= 0 || (ms = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: stack-workload ROUNDS MS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	prctl(PR_SET_NAME, "st-main");
	if (pipe(pipefd))
		return 1;
	pthread_create(&th[0], NULL, sleeper, NULL);
	pthread_create(&th[1], NULL, piper, NULL);
	pthread_create(&th[2], NULL, futexer, NULL);
	while (ready < 2)
		sleep_ms(1);
	for (int i = 0; i < rounds; i++) {
		sleep_ms(ms);
		if (write(pipefd[1], "x", 1) != 1)
			return 1;
		atomic_fetch_add(&futex_word, 1);
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 3; i++)
		printf("%s %ld %" PRIu64 "\n", result[i].comm, result[i].tid,
		       result[i].ns);
	return 0;
}
