/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Messages of ringtraced and ringtrace: one line each on stderr,
 * "<program>: <message>"; under systemd (msg_service) with a "<N>" syslog
 * priority in front, which journald turns into the entry's priority.
 * Reports (summaries, statistics) go to stdout, unprefixed.
 */
#ifndef RINGTRACE_LIB_MSG_H
#define RINGTRACE_LIB_MSG_H

#include <stdbool.h>

/* Set once by main(): the program name of every line, and the mode. */
extern const char *msg_prog;
extern bool msg_service;
/* info() says nothing; warnings and errors still go out. */
extern bool msg_quiet;

/*
 * die() prints the message and exits 1 after running the hook set here
 * (for example: end what output can be ended so that it stays readable).
 * The hook runs at most once; an error inside it exits directly.
 */
void set_die_hook(void (*hook)(void));
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
/* die()'s line without the exit, for a program that ends by itself. */
__attribute__((format(printf, 1, 2))) void error_line(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void info(const char *fmt, ...);
/* To stdout, flushed per line (under systemd stdout is a pipe). */
__attribute__((format(printf, 1, 2))) void report(const char *fmt, ...);
/* sd_notify(3)'s datagram to $NOTIFY_SOCKET, when msg_service is set. */
void notify_systemd(const char *state);

#endif /* RINGTRACE_LIB_MSG_H */
