// SPDX-License-Identifier: GPL-2.0
/*
 * Known user stacks without frame pointers, for record --ustack-mode copy
 * (profile.d/ucopy.sh): built -O2 -fomit-frame-pointer (tools/Makefile),
 * so that only the binary's CFI unwinds it.  main calls c, c calls d, d
 * sleeps with a raw nanosleep system call (inline asm: the switch-out's
 * user ip is in d itself, not in libc), SLEEPS times for NS each.  Each
 * function is noipa (never inlined, cloned or renamed) with an empty asm
 * after its call (never a tail call).  It prints "pid PID tid TID" and
 * "main 0xADDR", main's run-time address (the test places the symbol
 * table's functions with it).
 *
 * Usage: ucopy-workload [SLEEPS [NS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct timespec ts = { 0, 2000000 };

__attribute__((noipa)) static void d(void)
{
	long ret;

	asm volatile("syscall" : "=a"(ret)
		     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
		     : "rcx", "r11", "memory");
}

__attribute__((noipa)) static void c(void)
{
	d();
	asm volatile("");
}

int main(int argc, char **argv)
{
	long sleeps = argc > 1 ? atol(argv[1]) : 300;

	if (argc > 2)
		ts.tv_nsec = atol(argv[2]);
	printf("pid %d tid %ld\nmain 0x%lx\n", getpid(),
	       (long)syscall(SYS_gettid), (unsigned long)main);
	fflush(stdout);
	for (long i = 0; i < sleeps; i++) {
		c();
		asm volatile("");
	}
	return 0;
}
