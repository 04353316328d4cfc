// SPDX-License-Identifier: GPL-2.0
/*
 * The process of tools/tests/profile.d/umap.sh: its executable mappings,
 * as it sees them, to compare with the user_mmap events of a trace.
 *
 *   umap-workload run LIB OUT   dlopen()s LIB, calls its umap_lib_answer(),
 *                               writes "pid N" and the executable lines of
 *                               /proc/self/maps to OUT, and exits: all
 *                               within a few ms of the exec
 *   umap-workload sleep N OUT   writes the same (no LIB), then sleeps N s
 *   umap-workload orphan N OUT  starts a thread that sleeps N s and exits
 *                               the process, writes the same, and ends its
 *                               main thread by pthread_exit(): the group
 *                               leader is gone (a zombie, no mm) while
 *                               the process lives on
 *
 * OUT is complete (closed) before the exit or the sleep.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int print_maps(const char *path)
{
	char line[4096], perms[8];
	FILE *f = fopen("/proc/self/maps", "r"), *out;

	if (!f) {
		perror("umap-workload: /proc/self/maps");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		fclose(f);
		return -1;
	}
	fprintf(out, "pid %d\n", (int)getpid());
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %7s", perms) == 1 && strchr(perms, 'x'))
			fputs(line, out);
	fclose(f);
	return fclose(out) ? -1 : 0;
}

static void *sleeper(void *seconds)
{
	sleep((unsigned int)(long)seconds);
	exit(0);
}

int main(int argc, char **argv)
{
	int (*answer)(void);
	pthread_t th;
	void *lib;

	if (argc == 4 && !strcmp(argv[1], "run")) {
		lib = dlopen(argv[2], RTLD_NOW);
		if (!lib) {
			fprintf(stderr, "umap-workload: %s\n", dlerror());
			return 1;
		}
		answer = (int (*)(void))dlsym(lib, "umap_lib_answer");
		if (!answer || answer() != 42) {
			fprintf(stderr, "umap-workload: umap_lib_answer missing or wrong\n");
			return 1;
		}
		return print_maps(argv[3]) ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "sleep")) {
		if (print_maps(argv[3]))
			return 1;
		sleep((unsigned int)atoi(argv[2]));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "orphan")) {
		if (pthread_create(&th, NULL, sleeper, (void *)(long)atoi(argv[2]))) {
			fprintf(stderr, "umap-workload: pthread_create failed\n");
			return 1;
		}
		if (print_maps(argv[3]))
			return 1;
		pthread_exit(NULL);
	}
	fprintf(stderr, "usage: umap-workload run LIB OUT | sleep SECONDS OUT | orphan SECONDS OUT\n");
	return 2;
}
