// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe-workload: known calls of a known function, for the uprobe tests
 * of tools/tests/dynprobes_guest.sh.
 *
 *   uprobe-workload N OUTFILE
 *
 * Calls rtu_work(1000 + i) for i = 0 .. N-1, exactly N calls and no
 * other, then writes its pid to OUTFILE: a uprobe on rtu_work sees arg0
 * 1000 .. 1000+N-1 in that order, all from that pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Kept out of line and called for real: the probe's target. */
__attribute__((noinline, used)) long rtu_work(long v)
{
	__asm__ volatile("" : : "r"(v) : "memory");
	return v * 3;
}

int main(int argc, char **argv)
{
	long n, sum = 0;
	FILE *f;

	if (argc != 3 || (n = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: uprobe-workload N OUTFILE\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		sum += rtu_work(1000 + i);
	f = fopen(argv[2], "w");
	if (!f || fprintf(f, "%d %ld\n", getpid(), sum) < 0 || fclose(f)) {
		perror("uprobe-workload");
		return 1;
	}
	return 0;
}
