// SPDX-License-Identifier: GPL-2.0
/*
 * The workload of tools/tests/profile.d/sample.sh (record --sample): two
 * threads busy for SECONDS each, one in user mode, one in the kernel:
 *
 *	sp-spin   spin_a -> spin_b -> spin_leaf, a loop of arithmetic
 *	sp-kern   read() of /dev/zero, 1 MiB at a time (read_zero)
 *
 * Built -O0 with frame pointers (tools/Makefile), so that a user stack
 * walk finds spin_leaf's callers, and GCC emits the functions in source
 * order: one ends where the next begins.  Once both threads are done the
 * main thread prints
 *	pid PID
 *	sp-spin TID
 *	sp-kern TID
 *	func NAME START END	(spin_leaf, spin_b, spin_a, spinner; END
 *				 exclusive; exit 1 if not in that order)
 *
 * Usage: spin-workload SECONDS
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static long tids[2];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The clock is read every 2^20 rounds: user mode nearly all the time. */
__attribute__((noinline)) static uint64_t spin_leaf(double end)
{
	volatile uint64_t x = 1;

	for (;;) {
		for (unsigned int i = 0; i < (1U << 20); i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (now() >= end)
			return x;
	}
}

__attribute__((noinline)) static uint64_t spin_b(double end)
{
	uint64_t x = spin_leaf(end);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return x + 1;
}

__attribute__((noinline)) static uint64_t spin_a(double end)
{
	uint64_t x = spin_b(end);

	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void *spinner(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "sp-spin");
	tids[0] = syscall(SYS_gettid);
	spin_a(now() + seconds);
	return NULL;
}

/* Where spinner ends: the next function in source order. */
__attribute__((noinline)) static void spinner_end(void)
{
	__asm__ volatile("");
}

static void *kernel_reader(void *arg)
{
	static char buf[1 << 20];
	double end = now() + seconds;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	(void)arg;
	prctl(PR_SET_NAME, "sp-kern");
	tids[1] = syscall(SYS_gettid);
	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	while (now() < end)
		if (read(fd, buf, sizeof(buf)) < 0) {
			perror("read /dev/zero");
			exit(1);
		}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct { const char *name; void *at; } text[] = {
		{ "spin_leaf", (void *)spin_leaf }, { "spin_b", (void *)spin_b },
		{ "spin_a", (void *)spin_a }, { "spinner", (void *)spinner },
		{ "spinner_end", (void *)spinner_end },
	};
	pthread_t t[2];

	if (argc != 2 || (seconds = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: spin-workload SECONDS\n");
		return 2;
	}
	if (pthread_create(&t[0], NULL, spinner, NULL) ||
	    pthread_create(&t[1], NULL, kernel_reader, NULL)) {
		fprintf(stderr, "spin-workload: pthread_create failed\n");
		return 1;
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("pid %d\nsp-spin %ld\nsp-kern %ld\n", (int)getpid(), tids[0],
	       tids[1]);
	for (unsigned int i = 0; i + 1 < sizeof(text) / sizeof(text[0]); i++) {
		if (text[i].at >= text[i + 1].at) {
			fprintf(stderr, "spin-workload: %s is not before %s\n",
				text[i].name, text[i + 1].name);
			return 1;
		}
		printf("func %s %p %p\n", text[i].name, text[i].at,
		       text[i + 1].at);
	}
	return 0;
}
