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
 * by processes that are all gone: it is stale, and owed.  Its text is
 * written back as root: the directory and the file must be root's (the
 * caller's), written by nobody else, the file with one link.
 *
 * Its text, the writes written whole before the first change:
 *
 *   ringtrace-restore 2
 *   pid PID                  record's
 *   module UUID              the trace uuid of the module's metadata
 *   write NAME LEN           a control file (relative to the control
 *   VALUE                    directory) and the LEN bytes to write back,
 *   ...                      in the order they go back
 *   end
 *   set NAME LEN             appended once record has set everything:
 *   VALUE                    each file it writes back (but tracing_on) as
 *   ...                      it read then
 *
 * A file cut short before its "end" line (a kill while record wrote it,
 * before it changed anything) owes nothing.  A "set" entry cut short is
 * left out: its file is written back whatever it holds, as are those of a
 * file without "set" entries (record killed while it set them).  A module
 * reloaded since (another uuid) holds nothing of record's: nothing is
 * owed either.  A file that is not that text whole -- another version,
 * someone else's, a name record never writes -- is no restore file.
 *
 * Paid after record's death (ctlsave_pay()), a file that has a "set"
 * entry is written back only when it still reads as record set it: what
 * someone set by hand since stays.  record at its own end writes
 * everything back (ctlsave_apply()).
 */
#ifndef RINGTRACE_LIB_CTLSAVE_H
#define RINGTRACE_LIB_CTLSAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ctl.h"

#define CTLSAVE_DIR	"/run/ringtrace"
#define CTLSAVE_NAME	"record.restore"
#define CTLSAVE_PATH	CTLSAVE_DIR "/" CTLSAVE_NAME

struct ctlsave_write {
	char *name;			/* "mode", "events/sched_switch/filter" */
	char *value;			/* written as it is, one write(2) */
};

struct ctlsave {
	pid_t pid;			/* the record that wrote it */
	char module[40];		/* the module's trace uuid */
	struct ctlsave_write *w;	/* what goes back, in order */
	size_t n;
	struct ctlsave_write *set;	/* files as record set them */
	size_t nset;
};

/*
 * One more write, after those added before; dies out of memory, or for a
 * name ctlsave_name_ok() refuses (the file would not be read back).
 */
void ctlsave_add(struct ctlsave *s, const char *name, const char *value);
void ctlsave_free(struct ctlsave *s);
/*
 * The control files record writes, the only names a restore file may
 * hold: tracing_on, mode, subbuf_size, num_subbufs, set_event,
 * set_event_stack, set_event_pid, set_event_cgroup, event_fork,
 * stack_depth, set_event_ustack, ustack_depth, ustack_mode, ustack_size,
 * mmap_dump, mmap_events, sample_hz, and events/EVENT/filter and
 * events/EVENT/trigger.
 */
bool ctlsave_name_ok(const char *name);

/*
 * Opens @dir/CTLSAVE_NAME (created, with @dir, when @create) and locks it:
 * the fd (close-on-exec), or -errno with a sentence in @why: -EWOULDBLOCK
 * when a live record or its ringtraced holds it (*@owner: the pid in it,
 * or 0); -EPERM when @dir or the file is not to be trusted (a link, not
 * the caller's, writable by others, more than one link); -ENOENT without
 * @create when there is none; else what making or opening them failed
 * with (-EROFS, -ENOENT: no /run, ...).  ctlsave_lock(): in CTLSAVE_DIR.
 */
int ctlsave_lock_at(const char *dir, bool create, pid_t *owner, char *why,
		    size_t size);
int ctlsave_lock(bool create, pid_t *owner, char *why, size_t size);
/* The pid the file names (the record that wrote it), or 0. */
pid_t ctlsave_owner(int fd);
/* Replaces the file's text with @s (for module @c): 0 or -errno. */
int ctlsave_store(int fd, const struct ctl *c, struct ctlsave *s);
/*
 * Once record has set them: each file @s writes back (but tracing_on,
 * which record's recording turns on: it goes off whatever) as it reads
 * now, into @s and appended to the file ("set" entries).  0 or -errno.
 */
int ctlsave_mark_set(int fd, const struct ctl *c, struct ctlsave *s);
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
 * Owed (ctlsave_load()): the writes go back, said in a note -- those of a
 * file that no longer reads as record set it left out, each said -- and
 * the file is emptied.  1 when something was owed, 0 when nothing was,
 * -EIO when a write failed (warned; emptied all the same: tried once),
 * -EPROTO when the file is no restore file, -errno when it could not be
 * read (warned; those two are left as they are).
 */
int ctlsave_pay(int fd, const struct ctl *c);
/*
 * What a start does first: ctlsave_pay() when the file is stale; 0 when
 * there is none, or someone live holds it.
 */
int ctlsave_restore_stale(const struct ctl *c);

#endif /* RINGTRACE_LIB_CTLSAVE_H */
