// SPDX-License-Identifier: GPL-2.0
/*
 * cli-workload: a process tree with known thread ids, for the tests of
 * `ringtrace record` and `ringtrace export` (tools/tests/cli_guest.sh).
 *
 *   cli-workload N TIDFILE [STATUS]
 *
 * Every thread below makes exactly N getppid() calls, then appends one line
 * "tid pid comm" to TIDFILE (O_APPEND: the lines of different threads do not
 * mix).  The main thread, renamed "rtw-main", starts two threads, "rtw-t1"
 * and "rtw-t2", and forks a child, "rtw-child"; the child execs this binary
 * again ("cli-workload exec ..."), which keeps the child's tid and takes the
 * binary's name as comm.  Exits with STATUS (default 0) once all are done.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long calls;
static const char *tidfile;

/* N getppid() calls under @comm, then one line in the tid file. */
static void work(const char *comm)
{
	char line[64], name[16] = "";
	int fd, len;

	if (comm)
		prctl(PR_SET_NAME, comm, 0, 0, 0);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	len = snprintf(line, sizeof(line), "%ld %d %s\n",
		       (long)syscall(SYS_gettid), (int)getpid(), name);
	fd = open(tidfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)len) != len) {
		fprintf(stderr, "cli-workload: %s: %s\n", tidfile, strerror(errno));
		exit(1);
	}
	close(fd);
}

static void *thread(void *arg)
{
	work(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	char self[4096];
	pthread_t t[2];
	int status, code;
	ssize_t n;
	pid_t child;

	if (argc == 4 && !strcmp(argv[1], "exec")) {
		/* The exec'd child: comm is the binary's name now. */
		calls = atol(argv[2]);
		tidfile = argv[3];
		work(NULL);
		return 0;
	}
	if (argc < 3 || argc > 4 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: cli-workload N TIDFILE [STATUS]\n");
		return 2;
	}
	calls = atol(argv[1]);
	tidfile = argv[2];
	code = argc == 4 ? atoi(argv[3]) : 0;

	/* exec by the real path: comm becomes "cli-workload", not "exe". */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("cli-workload: /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	prctl(PR_SET_NAME, "rtw-main", 0, 0, 0);
	if (pthread_create(&t[0], NULL, thread, "rtw-t1") ||
	    pthread_create(&t[1], NULL, thread, "rtw-t2")) {
		fprintf(stderr, "cli-workload: pthread_create failed\n");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("cli-workload: fork");
		return 1;
	}
	if (!child) {
		char *args[] = { self, "exec", argv[1], argv[2], NULL };

		work("rtw-child");
		execv(self, args);
		perror("cli-workload: exec");
		_exit(1);
	}
	work(NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "cli-workload: the child failed\n");
		return 1;
	}
	return code;
}
