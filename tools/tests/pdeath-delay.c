// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for tools/tests/cli_guest.sh: widens the window between
 * a fork and the child's prctl(PR_SET_PDEATHSIG, SIGTERM), in which the
 * parent may die before the child asked to be told.  With
 * $RT_PDEATH_LOG set, each such call appends the caller's pid to that
 * file, then sleeps $RT_PDEATH_DELAY_MS (default 3000) before the real
 * prctl: the test kills the parent meanwhile, as a scheduler might.
 * Other prctl calls go through unchanged.
 *
 * With $RT_START_DELAY_LOG set, ringtraced (and only it) appends its pid
 * to that file before its main() and sleeps as long: record started it,
 * and the test kills record before ringtraced has asked who its parent is
 * or blocked its signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* Our pid appended to @log, then $RT_PDEATH_DELAY_MS of sleep. */
static void log_and_wait(const char *log)
{
	const char *ms = getenv("RT_PDEATH_DELAY_MS");
	long delay = ms ? atol(ms) : 3000;
	struct timespec ts = { delay / 1000, delay % 1000 * 1000000 };
	char line[32];
	int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0) {
		snprintf(line, sizeof(line), "%d\n", (int)getpid());
		if (write(fd, line, strlen(line)) < 0)
			perror(log);
		close(fd);
	}
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

__attribute__((constructor))
static void start_delay(void)
{
	const char *log = getenv("RT_START_DELAY_LOG");

	if (log && !strcmp(program_invocation_short_name, "ringtraced"))
		log_and_wait(log);
}

int prctl(int option, ...)
{
	const char *log = getenv("RT_PDEATH_LOG");
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_PDEATHSIG && a[0] == SIGTERM && log)
		log_and_wait(log);
	return (int)syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
}
