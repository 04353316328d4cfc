// SPDX-License-Identifier: GPL-2.0
/*
 * filter-workload: known numbers of system calls, for record --filter
 * (tools/tests/cli_guest.sh).
 *
 *   filter-workload GETPPID OPENAT WRITE
 *
 * Renames itself "rtflt-wl", then makes exactly GETPPID getppid(), OPENAT
 * (at least 1) openat() of /dev/null and WRITE write() calls (one byte
 * each, to the last one opened), and exits 0.  The loader's calls before the rename
 * are under the binary's name.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long getppids, openats, writes, i;
	int fd = -1;

	if (argc != 4 || atol(argv[2]) < 1) {
		fprintf(stderr, "usage: filter-workload GETPPID OPENAT WRITE\n");
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
	syscall(SYS_exit_group, 0);
	return 0;
}
