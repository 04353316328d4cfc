// SPDX-License-Identifier: GPL-2.0
/*
 * rt-spin: the CPU-bound load of `make bench`'s profile part
 * (tools/bench/guest-prof.sh).
 *
 *   rt-spin LOOPS [hold]
 *	LOOPS rounds of arithmetic in spin_leaf, called through
 *	main -> spin_a -> spin_b -> spin_leaf, timed with CLOCK_MONOTONIC.
 *	Prints one line
 *		spin pid=PID loops=N elapsed_ns=T
 *	With "hold" it then waits for a signal, so that a profiler that
 *	names user frames when it stops (bpftrace) still finds the process.
 *
 * A fixed amount of work, unlike tools/tests/spin-workload (which spins for
 * a time): what a profiler adds is the difference in elapsed time.  Built
 * -O0 with frame pointers (Makefile), as the tests' workloads are, so that
 * every sampler's frame-pointer walk sees the whole chain.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * checkpatch's VOLATILE and PREFER_DEFINED_ATTRIBUTE_MACRO warnings here
 * are kernel rules: this is a user-space program, without the kernel's
 * noinline, and the volatile sink only keeps the loop from being dropped.
 */
static volatile unsigned long sink;

static void __attribute__((noinline)) spin_leaf(unsigned long loops)
{
	unsigned long x = 1;

	for (unsigned long i = 0; i < loops; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

static void __attribute__((noinline)) spin_b(unsigned long loops)
{
	spin_leaf(loops);
}

static void __attribute__((noinline)) spin_a(unsigned long loops)
{
	spin_b(loops);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long loops;
	long long t0, t1;
	char *end;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "hold"))) {
		fprintf(stderr, "usage: rt-spin LOOPS [hold]\n");
		return 2;
	}
	loops = strtoul(argv[1], &end, 10);
	if (*end || !loops) {
		fprintf(stderr, "rt-spin: LOOPS must be a positive number, got '%s'\n", argv[1]);
		return 2;
	}
	t0 = now_ns();
	spin_a(loops);
	t1 = now_ns();
	printf("spin pid=%d loops=%lu elapsed_ns=%lld\n", (int)getpid(), loops, t1 - t0);
	fflush(stdout);
	if (argc == 3)
		pause();
	return 0;
}
