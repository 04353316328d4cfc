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
 *                                once rt:forms and rt:start; then, if
 *                                rt:multi's semaphore is raised, its
 *                                three sites (below); writes "PID SEM
 *                                FIRED MSEM MFIRED" to OUTFILE: rt:tick's
 *                                semaphore seen first, the ticks fired,
 *                                rt:multi's semaphore seen, its hits
 *   usdt-workload watch OUTFILE  writes "TICK MULTI", the two semaphores'
 *                                values, to OUTFILE (replaced whole)
 *                                every 20 ms, until killed
 *
 * rt:tick is guarded by its semaphore (rt_tick_semaphore, in .probes, as
 * `dtrace -G` would make it): a tracer that attaches raises it, and the
 * workload fires only while it is non-zero.  rt:forms has none and
 * passes an immediate, a global in memory and a stack slot: its values
 * are 5, -77 and 1234567890123; rt:start, after it, has no argument.  rt:bad's note, written by hand, has
 * operands no tracer can fetch (%ah, %xmm0): it is never fired.
 *
 * rt:multi(SITE, VALUE) is one probe at three sites (three callers of
 * the macro), behind rt_multi_semaphore, each site's VALUE an operand of
 * another kind and size: site 1 a register (4 bytes, signed), 7 * i for
 * i = 0..9; site 2 a stack slot (8 bytes), 1000000000000 + i for i =
 * 0..19; site 3 a global by %rip (2 bytes, signed), -1 - i for i =
 * 0..29: 60 hits, SITE an immediate 1, 2 or 3.  rt:mixed has two sites
 * with one and two arguments: no tracer takes it; never fired.  rt:full
 * has 32 sites, rt:many 33 (ringtrace takes 32).
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

__extension__ unsigned short rt_multi_semaphore
	__attribute__((unused, section(".probes")));

volatile int64_t rt_global = -77;
volatile int16_t rt_multi_global;

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

static unsigned short semaphore(void)
{
	return *(volatile unsigned short *)&rt_tick_semaphore;
}

static unsigned short multi_semaphore(void)
{
	return *(volatile unsigned short *)&rt_multi_semaphore;
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

/* rt:multi's three sites, out of line: one note each. */
__attribute__((noinline)) static void multi_reg(int32_t i)
{
	DTRACE_PROBE2(rt, multi, 1, 7 * i);
}

__attribute__((noinline)) static void multi_stack(int64_t i)
{
	volatile int64_t slot = 1000000000000 + i;

	DTRACE_PROBE2(rt, multi, 2, slot);
}

__attribute__((noinline)) static void multi_global(int i)
{
	rt_multi_global = (int16_t)(-1 - i);
	DTRACE_PROBE2(rt, multi, 3, rt_multi_global);
}

/* Each site fired 10, 20 and 30 times while the semaphore is raised. */
static int multi(void)
{
	int fired = 0;

	if (!multi_semaphore())
		return 0;
	for (int i = 0; i < 10; i++, fired++)
		multi_reg(i);
	for (int i = 0; i < 20; i++, fired++)
		multi_stack(i);
	for (int i = 0; i < 30; i++, fired++)
		multi_global(i);
	return fired;
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

/* rt:mixed: two sites that disagree on the argument count. */
__attribute__((noinline)) static void mixed(int a, int b)
{
	STAP_PROBE1(rt, mixed, a);
	STAP_PROBE2(rt, mixed, a, b);
}

/*
 * rt:full at 32 sites, as many as ringtrace takes, rt:many at 33: one
 * too many.  No argument, no semaphore: nops, never recorded firing.
 */
#define SITES4(n)	STAP_PROBE(rt, n); STAP_PROBE(rt, n); \
			STAP_PROBE(rt, n); STAP_PROBE(rt, n)
#define SITES16(n)	SITES4(n); SITES4(n); SITES4(n); SITES4(n)

__attribute__((noinline)) static void full(void)
{
	SITES16(full);
	SITES16(full);
}

__attribute__((noinline)) static void many(void)
{
	SITES16(many);
	SITES16(many);
	STAP_PROBE(rt, many);
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
	char line[96];
	unsigned short sem, msem;
	int fired = 0, mfired;

	if (argc != 3 || (strcmp(argv[1], "fire") && strcmp(argv[1], "watch"))) {
		fprintf(stderr, "usage: usdt-workload fire|watch OUTFILE\n");
		return 2;
	}
	if (!strcmp(argv[1], "watch")) {
		for (;;) {
			snprintf(line, sizeof(line), "%u %u\n", semaphore(),
				 multi_semaphore());
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
	mixed(argc, argc + 1);
	full();
	many();
	msem = multi_semaphore();
	mfired = multi();
	snprintf(line, sizeof(line), "%d %u %d %u %d\n", getpid(), sem, fired,
		 msem, mfired);
	return write_file(argv[2], line) ? 1 : 0;
}
