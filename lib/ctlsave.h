/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The restore file: what `ringtrace record` is about to change in the
 * control files, written before it changes anything, so that whoever
 * outlives record puts the old values back -- record itself at its end,
 * its ringtraced when record is killed (ringtraced --restore-fd), or the
 * next record or ringtraced start when both were (kill -9 of the lot).
 *
 * One file, CTLSAVE_PATH, on /run (a tmpfs: a reboot, which resets the
 * module too, empties it).  Empty, it owes nothing.  It is locked
 * (flock) through record's open of it, which record's ringtraced (and its
 * guard, record.c) inherit: while one of them lives the lock is held, and
 * the file is theirs; a file that can be locked and is not empty was left
 * by processes that are all gone: it is stale, and owed.
 *
 * Its text, written whole before the first change:
 *
 *   ringtrace-restore 1
 *   pid PID                  record's
 *   module UUID              the trace uuid of the module's metadata
 *   write NAME LEN           a control file (relative to the control
 *   VALUE                    directory) and the LEN bytes to write back,
 *   ...                      in the order they go back
 *   end
 *
 * A file without its "end" line was cut short by a kill before record
 * changed anything: nothing is owed.  A module reloaded since (another
 * uuid) holds nothing of record's: nothing is owed either.
 */
#ifndef RINGTRACE_LIB_CTLSAVE_H
#define RINGTRACE_LIB_CTLSAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ctl.h"

#define CTLSAVE_DIR	"/run/ringtrace"
#define CTLSAVE_PATH	CTLSAVE_DIR "/record.restore"

struct ctlsave_write {
	char *name;			/* "mode", "events/sched_switch/filter" */
	char *value;			/* written as it is, one write(2) */
};

struct ctlsave {
	pid_t pid;			/* the record that wrote it */
	char module[40];		/* the module's trace uuid */
	struct ctlsave_write *w;
	size_t n;
};

/* One more write, after those added before; dies out of memory. */
void ctlsave_add(struct ctlsave *s, const char *name, const char *value);
void ctlsave_free(struct ctlsave *s);

/*
 * Opens CTLSAVE_PATH (created, with its directory, when @create) and
 * locks it: the fd (close-on-exec), or -errno: -EWOULDBLOCK when a live
 * record or its ringtraced holds it (*@owner: the pid in it, or 0), and
 * -ENOENT without @create when there is none.
 */
int ctlsave_lock(bool create, pid_t *owner);
/* Replaces the file's text with @s (for module @c): 0 or -errno. */
int ctlsave_store(int fd, const struct ctl *c, struct ctlsave *s);
/*
 * Reads it: 1 and @s when something is owed to the module of @c, 0
 * when nothing is (empty, cut short, another module), -EPROTO when it is
 * no restore file at all, -errno.
 */
int ctlsave_load(int fd, const struct ctl *c, struct ctlsave *s);
/*
 * Writes every value back, in order; each failure a warning naming the
 * file.  The number of failures.
 */
unsigned int ctlsave_apply(const struct ctl *c, const struct ctlsave *s);
/* Nothing owed any more (the file emptied): 0 or -errno. */
int ctlsave_clear(int fd);
/*
 * Owed (ctlsave_load()): every write goes back (ctlsave_apply()), said in
 * a note, and the file is emptied.  1 when something was put back, 0 when
 * nothing was owed, -1 when a write or the read failed, or the file is no
 * restore file (warned; that one is left as it is).
 */
int ctlsave_pay(int fd, const struct ctl *c);
/*
 * What a start does first: ctlsave_pay() when the file is stale; 0 when
 * there is none, or someone live holds it.
 */
int ctlsave_restore_stale(const struct ctl *c);

#endif /* RINGTRACE_LIB_CTLSAVE_H */
