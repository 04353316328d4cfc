// SPDX-License-Identifier: GPL-2.0
/*
 * usdt-workload: known USDT probes (<sys/sdt.h>), for the USDT part of
 * tools/tests/profile_guest.sh (profile.d/usdt.sh) and the host test of
 * `ringtrace list --usdt`.
 *
 *   usdt-workload fire OUTFILE   waits (10 s at most) for rt:tick's
 *                                semaphore to be raised, then fires
 *                                rt:tick(i, -3 * i, name) for i = 0..999,
 *                                each while the semaphore is raised, and
 *                                once rt:forms and rt:start; writes "PID SEM FIRED" to
 *                                OUTFILE: the semaphore's value seen
 *                                first, the ticks fired
 *   usdt-workload watch OUTFILE  writes the semaphore's value to OUTFILE
 *                                (replaced whole) every 20 ms, until
 *                                killed
 *
 * rt:tick is guarded by its semaphore (rt_tick_semaphore, in .probes, as
 * `dtrace -G` would make it): a tracer that attaches raises it, and the
 * workload fires only while it is non-zero.  rt:forms has none and
 * passes an immediate, a global in memory and a stack slot: its values
 * are 5, -77 and 1234567890123; rt:start, after it, has no argument.  rt:bad's note, written by hand, has
 * operands no tracer can fetch (%ah, %xmm0): it is never fired.
 */
#define _SDT_HAS_SEMAPHORES 1

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

__extension__ unsigned short rt_tick_semaphore
	__attribute__((unused, section(".probes")));

volatile int64_t rt_global = -77;

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

static unsigned short semaphore(void)
{
	return *(volatile unsigned short *)&rt_tick_semaphore;
}

/* Out of line: rt:tick has one site, one probe. */
__attribute__((noinline)) static int tick(int32_t i, const char *name)
{
	int64_t neg = -3 * (int64_t)i;

	if (!semaphore())
		return 0;
	DTRACE_PROBE3(rt, tick, i, neg, name);
	return 1;
}

/*
 * rt:forms without a semaphore: sdt.h's macros for the note's semaphore
 * word, expanded where a probe is written, redefined as with
 * _SDT_HAS_SEMAPHORES unset.
 */
#undef _SDT_NOTE_SEMAPHORE_USE
#define _SDT_NOTE_SEMAPHORE_USE(provider, name)
#undef _SDT_SEMAPHORE
#define _SDT_SEMAPHORE(p, n) _SDT_ASM_1(_SDT_ASM_ADDR 0)

__attribute__((noinline)) static void forms(void)
{
	volatile int64_t slot = 1234567890123;

	STAP_PROBE3(rt, forms, 5, rt_global, slot);
	/* And one without arguments: its event has the field faults alone. */
	STAP_PROBE(rt, start);
}

/* A note as sdt.h writes one (sdt.h:283-300), with operands not handled. */
__attribute__((noinline)) static void bad(void)
{
	__asm__ volatile("990:	nop\n"
			 ".pushsection .note.stapsdt,\"\",\"note\"\n"
			 ".balign 4\n"
			 ".4byte 992f-991f, 994f-993f, 3\n"
			 "991:	.asciz \"stapsdt\"\n"
			 "992:	.balign 4\n"
			 "993:	.8byte 990b, _.stapsdt.base, 0\n"
			 ".asciz \"rt\"\n"
			 ".asciz \"bad\"\n"
			 ".asciz \"-1@%ah 8@%xmm0\"\n"
			 "994:	.balign 4\n"
			 ".popsection\n");
}

static int write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char line[64];
	unsigned short sem;
	int fired = 0;

	if (argc != 3 || (strcmp(argv[1], "fire") && strcmp(argv[1], "watch"))) {
		fprintf(stderr, "usage: usdt-workload fire|watch OUTFILE\n");
		return 2;
	}
	if (!strcmp(argv[1], "watch")) {
		for (;;) {
			snprintf(line, sizeof(line), "%u\n", semaphore());
			if (write_file(argv[2], line))
				return 1;
			sleep_ms(20);
		}
	}
	for (int t = 0; t < 500 && !semaphore(); t++)
		sleep_ms(20);
	sem = semaphore();
	for (int32_t i = 0; i < 1000; i++)
		fired += tick(i, "usdt-workload");
	forms();
	bad();
	snprintf(line, sizeof(line), "%d %u %d\n", getpid(), sem, fired);
	return write_file(argv[2], line) ? 1 : 0;
}
