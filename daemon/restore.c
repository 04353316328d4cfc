// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced's part in putting back what `ringtrace record` changed in the
 * control files (the restore file, lib/ctlsave.h).
 *
 * record starts ringtraced with --restore-fd=FD: the restore file, open
 * and locked, which ringtraced holds as long as it runs.  When ringtraced
 * stops and record, its parent, is gone -- killed: the SIGTERM of
 * PR_SET_PDEATHSIG is what stopped it -- it writes the file's values back
 * and empties it: after it turned tracing off, drained, and closed its
 * buffers, since the mode and geometry change only then.  With record
 * still there it leaves them to record.  Gone means our parent is no
 * longer the record the file names: record may have died before we could
 * ask who our parent was (its SIGTERM then waited, blocked, since before
 * our exec: tools/cli/daemon.c).
 *
 * Started for a recording of its own (not --once), ringtraced first puts
 * back what a record left owed when it and its ringtraced were both
 * killed (kill -9 of the lot): the file is stale then, locked by nobody.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/ctlsave.h"
#include "ringtraced.h"

static int restore_fd = -1;

void restore_option(const char *arg)
{
	struct stat st;
	int fd;

	if (!parse_int(arg, &fd) || fd < 3 || fstat(fd, &st) ||
	    !S_ISREG(st.st_mode))
		usage_error("--restore-fd: '%s' is not an open restore file (ringtrace record passes it)",
			    arg);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	restore_fd = fd;
}

void restore_stale(void)
{
	if (restore_fd < 0 && !opt.once)
		ctlsave_restore_stale(&ctl);
}

void restore_at_stop(void)
{
	pid_t owner;

	if (restore_fd < 0)
		return;
	/* Emptied by record, the file names nobody (0): nothing is owed. */
	owner = ctlsave_owner(restore_fd);
	if (owner && getppid() != owner)
		ctlsave_pay(restore_fd, &ctl);
}
