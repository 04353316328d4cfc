// SPDX-License-Identifier: GPL-2.0
/*
 * filter-workload: known numbers of system calls, for record --filter
 * (tools/tests/cli_guest.sh).
 *
 *   filter-workload GETPPID OPENAT WRITE [CREAT BADCLOSE [MARKER KEEP DROP]]
 *
 * Renames itself "rtflt-wl", then makes exactly GETPPID getppid(), OPENAT
 * (at least 1) openat() of /dev/null and WRITE write() calls (one byte
 * each, to the last one opened); then CREAT openat() of /tmp/rtflt-wl
 * with O_CREAT, BADCLOSE close(-1) (each failing with -EBADF), and KEEP
 * markers "rtflt-keep N" and DROP markers "rtflt-drop N", interleaved,
 * written to the marker file MARKER; and exits 0.  The loader's calls
 * before the rename are under the binary's name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int creat_files(long n)
{
	long i;
	int fd;

	for (i = 0; i < n; i++) {
		fd = (int)syscall(SYS_openat, AT_FDCWD, "/tmp/rtflt-wl",
				  O_CREAT | O_WRONLY, 0600);
		if (fd < 0)
			return -1;
		syscall(SYS_close, fd);
	}
	return 0;
}

static int bad_closes(long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (syscall(SYS_close, -1) != -1 || errno != EBADF)
			return -1;
	return 0;
}

/* KEEP "rtflt-keep N" and DROP "rtflt-drop N", one write() each. */
static int markers(const char *path, long keep, long drop)
{
	char text[32];
	long i, k = 0, d = 0;
	int fd, n;

	fd = open(path, O_WRONLY);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	for (i = 0; k < keep || d < drop; i++) {
		if ((i & 1 && k < keep) || d == drop)
			n = snprintf(text, sizeof(text), "rtflt-keep %ld", k++);
		else
			n = snprintf(text, sizeof(text), "rtflt-drop %ld", d++);
		/* A marker the filter drops is still a whole write. */
		if (write(fd, text, (size_t)n) != n) {
			perror(path);
			return -1;
		}
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	long getppids, openats, writes, i;
	int fd = -1;

	if ((argc != 4 && argc != 6 && argc != 9) || atol(argv[2]) < 1) {
		fprintf(stderr, "usage: filter-workload GETPPID OPENAT WRITE [CREAT BADCLOSE [MARKER KEEP DROP]]\n");
		return 2;
	}
	getppids = atol(argv[1]);
	openats = atol(argv[2]);
	writes = atol(argv[3]);
	prctl(PR_SET_NAME, "rtflt-wl", 0, 0, 0);
	for (i = 0; i < getppids; i++)
		syscall(SYS_getppid);
	for (i = 0; i < openats; i++) {
		if (i)
			syscall(SYS_close, fd);
		fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY);
		if (fd < 0)
			return 1;
	}
	for (i = 0; i < writes; i++)
		if (syscall(SYS_write, fd, "x", 1) != 1)
			return 1;
	if (argc >= 6 && (creat_files(atol(argv[4])) ||
			  bad_closes(atol(argv[5]))))
		return 1;
	if (argc == 9 && markers(argv[6], atol(argv[7]), atol(argv[8])))
		return 1;
	syscall(SYS_exit_group, 0);
	return 0;
}
