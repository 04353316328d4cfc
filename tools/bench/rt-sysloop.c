// SPDX-License-Identifier: GPL-2.0
/*
 * rt-sysloop: the getppid() load of `make bench` (tools/bench/guest-bench.sh).
 *
 *   rt-sysloop [-c CPU] -n CALLS
 *	CALLS getppid() calls back to back, timed with CLOCK_MONOTONIC:
 *	the per-syscall cost, untraced or traced (each syscall is one
 *	sys_enter and one sys_exit event).
 *   rt-sysloop [-c CPU] -r RATE -d SECONDS
 *	RATE getppid() calls per second for SECONDS: every millisecond the
 *	calls that are due, then sleep to the next millisecond (absolute
 *	deadlines, so a late wakeup is caught up).  A load of 2 x RATE
 *	raw_syscalls events per second on this CPU, idle in between, so a
 *	tracer's consumer can run.
 *
 * Prints one line:
 *	sysloop cpu=C calls=N elapsed_ns=T ns_per_call=X.XX rate=R
 * where rate is the calls per second achieved over the whole run (in rate
 * mode it falls short of RATE when the CPU cannot keep up).
 *
 * getppid() goes through syscall(2) so that no C library can answer it
 * without entering the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC	1000000000LL
#define TICK_NS		1000000LL	/* rate mode: one burst per ms */

static const char *prog = "rt-sysloop";

static void print_usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [-c CPU] -n CALLS\n"
		"       %s [-c CPU] -r RATE -d SECONDS\n", prog, prog);
	exit(status);
}

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static long long now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		die("clock_gettime");
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* A decimal number in @min..@max, or a usage error. */
static long long parse(const char *s, const char *what, long long min,
		       long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "%s: %s wants %lld..%lld, got '%s'\n", prog,
			what, min, max, s);
		print_usage(2);
	}
	return v;
}

static void calls(long long n)
{
	while (n-- > 0)
		syscall(SYS_getppid);
}

/* Calls that are due at @t: rate * (t - start), without overflow. */
static long long due(long long rate, long long elapsed)
{
	return elapsed / NSEC_PER_SEC * rate +
	       elapsed % NSEC_PER_SEC * rate / NSEC_PER_SEC;
}

static long long run_rate(long long rate, long long seconds, long long start)
{
	long long end = start + seconds * NSEC_PER_SEC, done = 0, t, want;
	struct timespec next;

	for (;;) {
		t = now_ns();
		if (t >= end)
			t = end;
		want = due(rate, t - start);
		calls(want - done);
		done = want;
		if (t >= end)
			return done;
		/* Sleep to the next ms boundary after start. */
		t = start + ((t - start) / TICK_NS + 1) * TICK_NS;
		next.tv_sec = t / NSEC_PER_SEC;
		next.tv_nsec = t % NSEC_PER_SEC;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
}

int main(int argc, char **argv)
{
	long long n = 0, rate = 0, seconds = 0, start, elapsed;
	int opt, cpu = -1;
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "c:n:r:d:h")) != -1) {
		switch (opt) {
		case 'c':
			cpu = parse(optarg, "-c", 0, CPU_SETSIZE - 1);
			break;
		case 'n':
			n = parse(optarg, "-n", 1, 1LL << 40);
			break;
		case 'r':
			rate = parse(optarg, "-r", 1, 1000000000);
			break;
		case 'd':
			seconds = parse(optarg, "-d", 1, 3600);
			break;
		case 'h':
			print_usage(0);
			break;
		default:
			print_usage(2);
		}
	}
	if (optind != argc || !n == !rate || !rate != !seconds)
		print_usage(2);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity");
	}

	start = now_ns();
	if (rate)
		n = run_rate(rate, seconds, start);
	else
		calls(n);
	elapsed = now_ns() - start;

	printf("sysloop cpu=%d calls=%lld elapsed_ns=%lld ns_per_call=%.2f rate=%.0f\n",
	       sched_getcpu(), n, elapsed, (double)elapsed / n,
	       n * 1e9 / elapsed);
	return 0;
}
