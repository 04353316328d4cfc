/* SPDX-License-Identifier: GPL-2.0 */
/*
 * recsig.c: `ringtrace record`'s signals -- which stop the recording,
 * which are passed on to the traced command, and how record ends after
 * one.  Every signal whose default action ends a process is taken through
 * a signalfd (blocked), so that none ends record before it has put the
 * control files back; SIGKILL alone cannot be, and ringtraced puts them
 * back then (daemon/restore.c).
 */
#ifndef RINGTRACE_CLI_RECSIG_H
#define RINGTRACE_CLI_RECSIG_H

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * Before anything is changed and before any child exists: blocks the
 * signals record takes and starts the witness (recsig.c).  Dies on error.
 */
void recsig_setup(void);
/*
 * In a child that will exec the traced command: the signal mask and the
 * SIGCHLD disposition record was started with; recsig_close() too.
 */
void recsig_child(void);
/* In any child: record's signal fds closed (the mask stays). */
void recsig_close(void);

/* The fds to poll for signals: fills @pfd[0..1] (fd -1: none). */
void recsig_pollfds(struct pollfd *pfd);
/* @timeout (ms, -1 none) cut to when a decision to pass one on is due. */
int recsig_timeout(int timeout);
/*
 * Reads what came: the number of signals that ask record to stop (a stop
 * signal, or one of its own, below).  A stop signal the running command
 * @cmd (0: none yet, or no more) did not get itself is passed on to it.
 */
unsigned int recsig_take(pid_t cmd);
/*
 * A terminating signal that is record's own -- not a stop signal (SIGPIPE,
 * SIGUSR1, SIGALRM, ...): it ends record at once -- or 0.
 */
int recsig_own(void);
/* The first stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) taken, or 0. */
int recsig_stop(void);

/*
 * record's end.  When a terminating signal decides it, record ends by
 * that signal (raised with its default action, so that the parent's wait
 * sees it, but never with a core: record put the tracer back, nothing in
 * it failed): record's own signal; else, with a command that ran
 * (@cmd_status, NULL: none), the signal that ended the command, if one
 * did; else, without one and when @status is 0 (not a failure), the stop
 * signal.  Else it exits with @status.
 */
__attribute__((noreturn))
void recsig_exit(int status, const int *cmd_status);

#endif /* RINGTRACE_CLI_RECSIG_H */
