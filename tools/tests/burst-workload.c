// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of tools/tests/profile.d/park.sh: one thread that runs in
 * bursts of BURST_US microseconds of CPU time, each followed by a sleep
 * as long, until it has used CPU_MS milliseconds of CPU.  Bursts shorter
 * than the sampler's period: a sampler that counted each burst from
 * zero would never sample it.  Then it prints
 *	pid PID
 *	cpu_ns NS	(its CPU time, CLOCK_PROCESS_CPUTIME_ID)
 *	bursts N
 *
 * Usage: burst-workload CPU_MS BURST_US
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t total, burst, start, end;
	struct timespec nap;
	unsigned long bursts = 0;
	volatile unsigned long sink = 0;

	if (argc != 3 || atol(argv[1]) <= 0 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: burst-workload CPU_MS BURST_US\n");
		return 2;
	}
	total = (uint64_t)atol(argv[1]) * 1000000u;
	burst = (uint64_t)atol(argv[2]) * 1000u;
	nap.tv_sec = (time_t)(burst / 1000000000u);
	nap.tv_nsec = (long)(burst % 1000000000u);
	start = cpu_ns();
	while ((end = cpu_ns()) - start < total) {
		uint64_t b = end;

		while (cpu_ns() - b < burst)
			sink++;
		bursts++;
		nanosleep(&nap, NULL);
	}
	printf("pid %d\ncpu_ns %llu\nbursts %lu\n", (int)getpid(),
	       (unsigned long long)cpu_ns(), bursts);
	return 0;
}
