// SPDX-License-Identifier: GPL-2.0
/*
 * probe-workload: known calls from a known thread, for the dynamic probe
 * tests (tools/tests/dynprobes_guest.sh).
 *
 *   probe-workload N DIR OUTFILE
 *
 * A thread named "rtp-open" opens N new files DIR/f0 .. DIR/f<N-1>,
 * keeping each open, and makes no other open call: every do_sys_openat2()
 * of that tid is one of the N.  Then the main thread writes one line to
 * OUTFILE: the thread's tid and the N file descriptors it got.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long n;
static const char *dir;
static int *fds;
static long tid;

static void fail(const char *what)
{
	fprintf(stderr, "probe-workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *opener(void *arg)
{
	char path[4096];

	(void)arg;
	prctl(PR_SET_NAME, "rtp-open", 0, 0, 0);
	tid = syscall(SYS_gettid);
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fds[i] < 0)
			fail(path);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	FILE *f;

	if (argc != 4 || (n = strtol(argv[1], NULL, 10)) <= 0 || n > 1000) {
		fprintf(stderr, "usage: probe-workload N DIR OUTFILE\n");
		return 2;
	}
	dir = argv[2];
	fds = calloc((size_t)n, sizeof(*fds));
	if (!fds)
		fail("calloc");
	errno = pthread_create(&t, NULL, opener, NULL);
	if (errno)
		fail("pthread_create");
	pthread_join(t, NULL);
	f = fopen(argv[3], "w");
	if (!f)
		fail(argv[3]);
	fprintf(f, "%ld", tid);
	for (long i = 0; i < n; i++)
		fprintf(f, " %d", fds[i]);
	if (fprintf(f, "\n") < 0 || fclose(f))
		fail(argv[3]);
	return 0;
}
