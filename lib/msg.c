// SPDX-License-Identifier: GPL-2.0
/*
 * Messages of ringtraced and ringtrace (msg.h).  Errors and notes go to
 * stderr as one line "<program>: ..." each; under systemd the line starts
 * with a syslog priority "<N>" that journald turns into its priority.
 * The summary and statistics go to stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "msg.h"

const char *msg_prog = "ringtrace";
bool msg_service;
bool msg_quiet;

static void (*die_hook)(void);

void set_die_hook(void (*hook)(void))
{
	die_hook = hook;
}

static void vlog(int prio, const char *fmt, va_list ap)
{
	char line[1024];

	/* One write per line so that concurrent writers do not interleave. */
	vsnprintf(line, sizeof(line), fmt, ap);
	/* What went to stdout so far comes first, in a terminal too. */
	fflush(stdout);
	if (msg_service)
		fprintf(stderr, "<%d>%s: %s\n", prio, msg_prog, line);
	else
		fprintf(stderr, "%s: %s\n", msg_prog, line);
}

void die(const char *fmt, ...)
{
	void (*hook)(void) = die_hook;
	va_list ap;

	va_start(ap, fmt);
	vlog(3, fmt, ap);
	va_end(ap);
	die_hook = NULL;
	if (hook)
		hook();
	exit(1);
}

void error_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(3, fmt, ap);
	va_end(ap);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(4, fmt, ap);
	va_end(ap);
}

void info(const char *fmt, ...)
{
	va_list ap;

	if (msg_quiet)
		return;
	va_start(ap, fmt);
	vlog(6, fmt, ap);
	va_end(ap);
}

/* Flushed per line: under systemd stdout is a pipe, fully buffered. */
void report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/*
 * sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET.  A
 * leading '@' names an abstract socket.  Failures are ignored: systemd
 * then times the start out, which says more than we could.  Hand-written
 * because the protocol is one of systemd's documented stable interfaces
 * and this is all of it: libsystemd would be a dependency of a daemon
 * (and a CLI, which shares this file) that mostly runs without systemd.
 */
void notify_systemd(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd, saved = errno;

	if (!msg_service || !path || !*path)
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		       (const struct sockaddr *)&sa,
		       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
		close(fd);
	}
	errno = saved;
}
