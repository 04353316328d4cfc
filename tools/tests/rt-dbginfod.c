// SPDX-License-Identifier: GPL-2.0
/*
 * cli/debuginfod.c driven from tools/tests/debuginfod-host.sh:
 *
 *   rt-dbginfod [--no-debuginfod] {debuginfo|executable}:BUILDID...
 *
 * asks for each in turn, in one process (so a build-id asked twice shows
 * the kept answer: one warning), and prints a line for each:
 * "KIND BUILDID PATH" found, "KIND BUILDID error -ERRNO" not.
 * The file found is read back through the descriptor returned, so a
 * descriptor that does not match the path fails here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/msg.h"
#include "../cli/debuginfod.h"

static int parse_hex(const char *s, uint8_t *id, size_t max, size_t *len)
{
	size_t n = strlen(s);

	if (!n || n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		id[i] = (uint8_t)b;
	}
	*len = n / 2;
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	msg_prog = "rt-dbginfod";
	if (i < argc && !strcmp(argv[i], "--no-debuginfod")) {
		dbginfo_disable();
		i++;
	}
	if (i == argc) {
		fprintf(stderr, "usage: rt-dbginfod [--no-debuginfod] {debuginfo|executable}:BUILDID...\n");
		return 2;
	}
	for (; i < argc; i++) {
		const char *hex = strchr(argv[i], ':');
		uint8_t id[64];
		struct stat by_fd, by_path;
		char *path;
		size_t len;
		bool exe;
		int fd;

		if (!hex || parse_hex(hex + 1, id, sizeof(id), &len)) {
			fprintf(stderr, "rt-dbginfod: bad argument %s\n", argv[i]);
			return 2;
		}
		exe = !strncmp(argv[i], "executable:", 11);
		if (!exe && strncmp(argv[i], "debuginfo:", 10)) {
			fprintf(stderr, "rt-dbginfod: bad kind in %s\n", argv[i]);
			return 2;
		}
		fd = exe ? dbginfo_find_executable(id, len, &path) :
			   dbginfo_find(id, len, &path);
		if (fd < 0) {
			printf("%s %s error %d\n", exe ? "executable" : "debuginfo", hex + 1, fd);
			if (path) {
				fprintf(stderr, "rt-dbginfod: a path with an error\n");
				return 1;
			}
			continue;
		}
		if (fstat(fd, &by_fd) || stat(path, &by_path) || by_fd.st_ino != by_path.st_ino ||
		    by_fd.st_dev != by_path.st_dev) {
			fprintf(stderr, "rt-dbginfod: descriptor %d is not %s\n", fd, path);
			return 1;
		}
		printf("%s %s %s\n", exe ? "executable" : "debuginfo", hex + 1, path);
		close(fd);
		free(path);
	}
	dbginfo_end();
	return 0;
}
