// SPDX-License-Identifier: GPL-2.0
/*
 * The known user stacks of tools/tests/profile.d/ustack.sh: built -O0
 * with frame pointers (tools/Makefile), so that each function below keeps
 * its frame and ringtrace.ko's frame-pointer walk sees every caller.
 *
 *   main thread   main -> c -> d -> nanosleep, made by d itself with the
 *                 `syscall` instruction: Debian's libc is built without
 *                 frame pointers, and its wrapper would hide d's frame
 *   spinner       a -> b -> spin, busy until the sleeps are done
 *
 * It prints its pid and threads' tids, then each function's address range
 * ("func NAME START END", END exclusive): at -O0 GCC emits functions in
 * source order, so a function ends where the next one starts (main where
 * end_of_main does); it checks the order (exit 1 otherwise).  Usage: ustack-workload [SLEEPS [NS]].
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef __x86_64__
#error "ustack-workload makes its system call with x86-64's syscall instruction"
#endif

static volatile int done;
static long sleep_ns = 2000000;

static void __attribute__((noinline)) spin(void)
{
	while (!done)
		;
}

static void __attribute__((noinline)) b(void)
{
	spin();
}

static void *__attribute__((noinline)) a(void *arg)
{
	b();
	return arg;
}

/* One nanosleep, the system call made here: this frame is the leaf's. */
static void __attribute__((noinline)) d(void)
{
	struct timespec ts = { 0, sleep_ns };
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
		     : "rcx", "r11", "memory");
	(void)ret;
}

static void __attribute__((noinline)) c(void)
{
	d();
}

/* Defined right after main: where main ends. */
static void end_of_main(void);

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		uintptr_t start;
	} f[] = {
		{ "spin", (uintptr_t)spin }, { "b", (uintptr_t)b },
		{ "a", (uintptr_t)a }, { "d", (uintptr_t)d },
		{ "c", (uintptr_t)c }, { "main", (uintptr_t)main },
		{ "end_of_main", (uintptr_t)end_of_main },
	};
	long sleeps = argc > 1 ? atol(argv[1]) : 300;
	pthread_t t;

	if (argc > 2)
		sleep_ns = atol(argv[2]);
	for (unsigned int i = 0; i + 1 < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].start >= f[i + 1].start) {
			fprintf(stderr, "ustack-workload: %s is not before %s\n",
				f[i].name, f[i + 1].name);
			return 1;
		}
	if (pthread_create(&t, NULL, a, NULL))
		return 1;
	printf("pid %d sleeper %ld\n", getpid(), (long)syscall(SYS_gettid));
	for (unsigned int i = 0; i + 1 < sizeof(f) / sizeof(f[0]); i++)
		printf("func %s 0x%lx 0x%lx\n", f[i].name,
		       (unsigned long)f[i].start, (unsigned long)f[i + 1].start);
	fflush(stdout);
	for (long i = 0; i < sleeps; i++)
		c();
	done = 1;
	pthread_join(t, NULL);
	end_of_main();
	return 0;
}

static void __attribute__((noinline)) end_of_main(void)
{
}
