// SPDX-License-Identifier: GPL-2.0
/*
 * --on-chunk: every rotation becomes a chunk set that can be read on its
 * own, and a command of the user's takes it away.
 *
 *   drain threads: chunk k of a CPU closed  --facts-->  set k (pending)
 *   main:          every CPU closed chunk k --------->  sets <= k closed
 *   packers:       a chunk packed           --kick--->  look again
 *   this thread:   the oldest closed set whose chunks are all settled
 *                  (packed, or kept stored) is assembled:
 *                    mkdir .chunk-k.tmp; rename its chunks into it (each
 *                    read for its checksum and fdatasync()ed); the
 *                    metadata as it is now (it declares every event on
 *                    disk: metadata.c); .ringtrace-ksyms.zst if any;
 *                    manifest.json (manifest.c); fsync; rename to
 *                    chunk-k; fsync the trace directory
 *                  then queued for the hook (at most --on-chunk-queue of
 *                  this trace's; a set finding the queue full waits on
 *                  disk, queued once one leaves it), and the hook runs,
 *                  one at a time (hook_argv()), in a process group of its
 *                  own, stdin /dev/null, its stdout on our stderr, signals
 *                  as a new process has them, an inherited descriptor of
 *                  the set's directory holding its flock() (held while
 *                  anything of the hook runs: recover.c and --max-total
 *                  leave a set so held alone); watched through a pidfd;
 *                  after --on-chunk-timeout SIGTERM to its group,
 *                  --on-chunk-kill-after later SIGKILL; what it left
 *                  running said.
 *
 * The queue is durable: a set is shipped once its hook exited 0, and only
 * then marked so, by .chunk-k.shipped beside it (synced; none when the
 * hook took the set away).  Every other set stays on disk unmarked, and
 * the next start with --on-chunk hands it over again (recover.c), with
 * RINGTRACE_CHUNK_RETRY=1: queued, waiting for room, or in a hook's hands
 * at a kill, a crash or the stop's deadline, or its hook failed.  So a
 * set reaches the hook at least once, and a retry is said.  Those sets of
 * earlier traces come first, their traces locked while any of their sets
 * is ours (--max-total leaves a locked trace alone).
 *
 * Nothing here is on a drain thread's path: a drain thread only appends a
 * chunk's facts under hs.lock (held for a realloc at most).  A hook that
 * fails, hangs or is slow delays only the next hook; the sets pile up on
 * disk (bounded by --max-total, which never takes one that is queued or
 * in the hook's hands, and takes shipped ones first:
 * handoff_take_oldest()).
 *
 * The stop (handoff_deadline(), handoff_finish()): the sets left are
 * assembled and their hooks run until the deadline (--stop-timeout);
 * no hook starts in its last --on-chunk-kill-after, a hook still running
 * then gets SIGTERM, and SIGKILL at the deadline; what is left is said
 * and stays for the next start.  The stop waits for this thread
 * GIVE_UP_MS past the deadline at most: stuck in a call, it is left to
 * itself (what it was doing said), and the exit ends it.
 *
 * Sets are assembled in order: set k+1 waits for set k.  A set is one
 * rotation: chunk k of every CPU that wrote one (a CPU whose chunk stayed
 * empty while it had another on disk has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringtraced.h"

extern char **environ;

#define HOOK_GONE_MS	1000		/* after SIGKILL at the deadline: given up */
/*
 * Past the stop's deadline, the stop waits this long for the thread, which
 * by then starts nothing and gives a killed hook HOOK_GONE_MS: one stuck
 * in a call (a wedged disk's fsync, a large set's checksums) is left to
 * itself, and the exit ends it.
 */
#define GIVE_UP_MS	(HOOK_GONE_MS + 1000)

enum set_state {
	SET_RECOVER,			/* an earlier trace's rotation, to assemble */
	SET_PENDING,			/* its chunks are in the trace dir */
	SET_QUEUED,			/* assembled, waiting for the hook */
	SET_WAITING,			/* this trace's queue was full: on disk,
					   queued once there is room */
	SET_HOOKED,			/* the hook has it */
	SET_DONE,			/* the hook is done with it (or never) */
};

/* An earlier trace whose sets we hand over: locked while any is ours. */
struct old_trace {
	struct old_trace *next;
	int fd;				/* holds its flock(); -1 once let go */
	char *path;
	unsigned int sets;		/* not yet DONE */
};

struct set {
	struct set *next;		/* earlier traces' first; then by seq */
	unsigned int seq;
	struct old_trace *old;		/* NULL: this trace's */
	enum set_state state;
	bool assembled;			/* chunk-NNNNNN/ is on disk */
	bool retry;			/* an earlier ringtraced may have handed it */
	bool shipped;			/* its hook exited 0 */
	bool removing;			/* --max-total removes it now */
	bool kept;			/* ... could not: not tried again */
	uint64_t busy_ms;		/* ... held by a hook's process: not
					   tried again before */
	struct chunk_facts *f;
	unsigned int nf, cap;
};

static struct {
	pthread_mutex_t lock;
	struct set *head;		/* every set not forgotten, in order */
	struct old_trace *olds;		/* the earlier traces they name */
	unsigned int closed;		/* sets up to this one are closed */
	unsigned int queued_own;	/* of them this trace's: --on-chunk-queue */
	bool stopping;
	uint64_t deadline_ms;		/* the stop's; UINT64_MAX: none */
	struct handoff_stats st;
	char doing[PATH_MAX + 64];	/* what the thread does now, or "" */
	/* The thread's own. */
	pthread_t thread;
	bool started;
	int evfd;
	int donefd;			/* written once the thread is over */
} hs = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.deadline_ms = UINT64_MAX,
	.evfd = -1,
	.donefd = -1,
};

void shipped_name(char *buf, size_t size, unsigned int seq)
{
	snprintf(buf, size, ".chunk-%06u.shipped", seq);
}

/* ---- what the other threads call ---------------------------------------------- */

/* The directory holding set @s, as a path and as an fd. */
static const char *set_parent(const struct set *s)
{
	return s->old ? s->old->path : outdir;
}

static int set_parent_fd(const struct set *s)
{
	return s->old ? s->old->fd : outdirfd;
}

/* Where set @s is: DIR/chunk-NNNNNN. */
static const char *set_dir(const struct set *s, char *buf, size_t size)
{
	snprintf(buf, size, "%s/chunk-%06u", set_parent(s), s->seq);
	return buf;
}

/* What the thread does now, for a stop that cannot wait for it ("" when idle). */
__attribute__((format(printf, 1, 2)))
static void doing(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&hs.lock);
	va_start(ap, fmt);
	vsnprintf(hs.doing, sizeof(hs.doing), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&hs.lock);
}

/* @s is done with, @shipped or not; hs.lock held.  Its old trace let go. */
static void set_done(struct set *s, bool shipped)
{
	s->state = SET_DONE;
	s->shipped = shipped;
	if (s->old && !--s->old->sets) {
		close(s->old->fd);	/* and its lock */
		s->old->fd = -1;
	}
}

void handoff_recovered(int fd, const char *path, const struct recovered *r,
		       unsigned int n)
{
	struct old_trace *t = calloc(1, sizeof(*t));
	struct set **tail;
	unsigned int i;

	if (t)
		t->path = strdup(path);
	if (!t || !t->path) {
		warn("%s: %u chunk sets not handed to --on-chunk: %s (they stay on disk)",
		     path, n, strerror(ENOMEM));
		free(t);
		close(fd);
		return;
	}
	t->fd = fd;
	pthread_mutex_lock(&hs.lock);
	t->next = hs.olds;
	hs.olds = t;
	/* After the earlier traces' sets, ahead of this trace's. */
	for (tail = &hs.head; *tail && (*tail)->old; tail = &(*tail)->next)
		;
	for (i = 0; i < n; i++) {
		struct set *s = calloc(1, sizeof(*s));

		if (!s) {
			warn("%s/chunk-%06u: not handed to --on-chunk: %s (it stays on disk)",
			     path, r[i].seq, strerror(ENOMEM));
			continue;
		}
		s->seq = r[i].seq;
		s->old = t;
		/* A rotation still to assemble was never whole: never handed. */
		s->retry = !r[i].finish;
		s->assembled = !r[i].finish;
		s->state = r[i].finish ? SET_RECOVER : SET_QUEUED;
		if (!r[i].finish)
			hs.st.queued++;
		hs.st.recovered++;
		t->sets++;
		s->next = *tail;
		*tail = s;
		tail = &s->next;
	}
	if (!t->sets) {
		close(t->fd);
		t->fd = -1;
	}
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
}

/* This trace's set @seq, made if new; hs.lock held. */
static struct set *set_of(unsigned int seq)
{
	struct set *s, **pp;

	for (pp = &hs.head; *pp && (*pp)->old; pp = &(*pp)->next)
		;
	for (; *pp && (*pp)->seq <= seq; pp = &(*pp)->next)
		if ((*pp)->seq == seq)
			return *pp;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->seq = seq;
	s->state = SET_PENDING;
	s->next = *pp;
	*pp = s;
	return s;
}

void handoff_kick(void)
{
	uint64_t one = 1;

	if (write(hs.evfd, &one, sizeof(one)) < 0) {
		/* Non-zero already, or no thread yet: it will look. */
	}
}

void handoff_chunk_closed(const struct chunk_facts *f)
{
	struct chunk_facts *n;
	struct set *s;

	pthread_mutex_lock(&hs.lock);
	s = set_of(f->seq);
	if (s && s->nf == s->cap) {
		n = realloc(s->f, (s->cap ? 2 * s->cap : 8) * sizeof(*n));
		if (n) {
			s->f = n;
			s->cap = s->cap ? 2 * s->cap : 8;
		}
	}
	if (s && s->nf < s->cap)
		s->f[s->nf++] = *f;
	else
		/* The chunk stays in the trace directory, outside any set. */
		warn("%s/cpu%u-%06u.zst: %s: not in a chunk set", outdir,
		     f->cpu, f->seq, strerror(ENOMEM));
	pthread_mutex_unlock(&hs.lock);
}

void handoff_sets_closed(unsigned int seq)
{
	pthread_mutex_lock(&hs.lock);
	if (seq > hs.closed)
		hs.closed = seq;
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
}

void handoff_status(struct handoff_stats *st)
{
	pthread_mutex_lock(&hs.lock);
	*st = hs.st;
	pthread_mutex_unlock(&hs.lock);
}

bool handoff_take_oldest(char *name, size_t size, unsigned int *seq,
			 bool *shipped)
{
	struct set *s, **pp;
	struct stat sb;

	pthread_mutex_lock(&hs.lock);
	/* Shipped sets first: the others are still to reach the hook. */
	for (int pass = 0; pass < 2; pass++) {
		for (pp = &hs.head; (s = *pp);) {
			/* One waiting for room in the queue: not shipped. */
			if ((s->state != SET_DONE && s->state != SET_WAITING) ||
			    s->old || s->removing || s->kept ||
			    s->busy_ms > now_ms() ||
			    (s->assembled && !pass && !s->shipped)) {
				pp = &s->next;
				continue;
			}
			snprintf(name, size, "chunk-%06u", s->seq);
			if (fstatat(outdirfd, name, &sb, AT_SYMLINK_NOFOLLOW)) {
				/* Not on disk (the hook took it): forgotten. */
				*pp = s->next;
				free(s->f);
				free(s);
				continue;
			}
			/* Known until it is gone: handoff_removed(). */
			s->removing = true;
			*seq = s->seq;
			*shipped = s->shipped;
			pthread_mutex_unlock(&hs.lock);
			return true;
		}
	}
	pthread_mutex_unlock(&hs.lock);
	return false;
}

void handoff_removed(unsigned int seq, int err)
{
	struct set *s, **pp;

	pthread_mutex_lock(&hs.lock);
	for (pp = &hs.head; (s = *pp); pp = &s->next) {
		if (s->old || s->seq != seq || !s->removing)
			continue;
		s->removing = false;
		if (err == -EBUSY) {
			/* The next pass of --max-total looks again. */
			s->busy_ms = now_ms() + opt.max_total_ms;
		} else if (err) {
			s->kept = true;
		} else {
			*pp = s->next;
			free(s->f);
			free(s);
		}
		break;
	}
	pthread_mutex_unlock(&hs.lock);
}

/* ---- assembling a set ------------------------------------------------------------ */

/* Write @len bytes as @dirfd/@name, synced; -errno. */
static int write_synced(int dirfd, const char *name, const void *buf, size_t len)
{
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	int err;

	if (fd < 0)
		return -errno;
	err = write_all(fd, buf, len);
	if (!err && fdatasync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
}

/*
 * @dirfd/@name whole into @setfd/@name, synced; 1 if there is none.  A new
 * set (@replace false) gets a new file.  Finishing what an earlier daemon
 * left (recover.c, @replace true) replaces a partial copy.  Only a regular
 * file, no symlink followed, nothing waited on (a FIFO would hang the
 * hand-off thread, and the stop with it): -EINVAL for anything else.
 */
int copy_synced(int dirfd, int setfd, const char *name, bool replace)
{
	char buf[1 << 16];
	ssize_t n;
	int in, out, err = 0;

	in = rt_open_regular(dirfd, name, NULL);
	if (in < 0)
		return in == -ENOENT ? 1 : in;
	out = openat(setfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
		     (replace ? O_TRUNC : O_EXCL), 0640);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while (!err && (n = read(in, buf, sizeof(buf))) != 0)
		err = n < 0 ? (errno == EINTR ? 0 : -errno) :
		      write_all(out, buf, (size_t)n);
	if (!err && fdatasync(out) < 0)
		err = -errno;
	close(in);
	close(out);
	return err;
}

/* Put back what assemble() moved, after it failed: the trace stays whole. */
static void move_back(int setfd, const struct set *s, unsigned int moved)
{
	char name[CHUNK_NAME_MAX];

	for (unsigned int i = 0; i < moved; i++) {
		chunk_name(name, sizeof(name), s->f[i].cpu, s->seq);
		renameat(setfd, name, outdirfd, name);
	}
}

/*
 * Set @s into chunk-NNNNNN/, durable when this returns 0; else -errno,
 * what failed in @what, its chunks back where they were.
 */
static int assemble(struct set *s, char *what, size_t wsize)
{
	char name[SET_NAME_MAX], tmp[SET_NAME_MAX + 8], cname[CHUNK_NAME_MAX];
	struct manifest_file *files;
	unsigned int i, nfiles = 0, moved = 0;
	char *meta = NULL;
	size_t meta_len = 0;
	int setfd = -1, err;

	snprintf(name, sizeof(name), "chunk-%06u", s->seq);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	snprintf(what, wsize, "%s", tmp);
	files = calloc(s->nf + 2, sizeof(*files));
	if (!files)
		return -ENOMEM;
	if (mkdirat(outdirfd, tmp, 0750) < 0) {
		err = -errno;
		goto out;
	}
	setfd = openat(outdirfd, tmp,
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (setfd < 0) {
		err = -errno;
		goto out_rmdir;
	}
	for (i = 0; i < s->nf; i++) {
		chunk_name(cname, sizeof(cname), s->f[i].cpu, s->seq);
		snprintf(what, wsize, "%s", cname);
		if (renameat(outdirfd, cname, setfd, cname) < 0) {
			err = -errno;
			goto out_back;
		}
		moved++;
		/* Read whole for its checksum, and synced: it may be stored. */
		err = manifest_file_sum(setfd, cname, &files[nfiles++]);
		if (err)
			goto out_back;
	}
	snprintf(what, wsize, "%s/metadata", tmp);
	meta = metadata_snapshot(&meta_len);
	err = meta ? write_synced(setfd, "metadata", meta, meta_len) : -ENOMEM;
	if (!err)
		err = manifest_file_sum(setfd, "metadata", &files[nfiles++]);
	if (err)
		goto out_back;
	snprintf(what, wsize, "%s/" KSYMS_FILE, tmp);
	/* The kernel's symbols, when the trace keeps them (main.c). */
	err = copy_synced(outdirfd, setfd, KSYMS_FILE, false);
	if (!err)
		err = manifest_file_sum(setfd, KSYMS_FILE, &files[nfiles++]);
	if (err < 0)
		goto out_back;
	snprintf(what, wsize, "%s/manifest.json", tmp);
	err = manifest_write(setfd, s->seq, s->f, s->nf, files, nfiles, meta,
			     NULL);
	if (err)
		goto out_back;
	snprintf(what, wsize, "%s", name);
	if (fsync(setfd) < 0 ||
	    renameat(outdirfd, tmp, outdirfd, name) < 0 ||
	    fsync(outdirfd) < 0) {
		err = -errno;
		goto out_back;
	}
	err = 0;
	goto out_close;

out_back:
	move_back(setfd, s, moved);
	unlinkat(setfd, "metadata", 0);
	unlinkat(setfd, KSYMS_FILE, 0);
	unlinkat(setfd, "manifest.json", 0);
out_rmdir:
	unlinkat(outdirfd, tmp, AT_REMOVEDIR);
out_close:
	if (setfd >= 0)
		close(setfd);
out:
	free(meta);
	free(files);
	return err;
}

/* The oldest closed set not yet assembled, if its chunks are all settled. */
static struct set *next_ready(void)
{
	struct set *s;
	bool settled = true;

	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->state != SET_PENDING; s = s->next)
		;
	if (s && s->seq > hs.closed)
		s = NULL;
	pthread_mutex_unlock(&hs.lock);
	if (!s)
		return NULL;
	/* Closed: no drain thread adds to s->f any more. */
	for (unsigned int i = 0; i < s->nf; i++) {
		unsigned int idx;

		for (idx = 0; idx < ncpus && cpus[idx].buf.cpu != s->f[i].cpu; idx++)
			;
		if (idx < ncpus && !packer_chunk_settle(idx, s->seq))
			settled = false;
	}
	return settled ? s : NULL;
}

/* The stop's deadline is here, less @early ms: nothing new begins. */
static bool past_deadline(uint64_t early)
{
	uint64_t d;

	pthread_mutex_lock(&hs.lock);
	d = hs.deadline_ms;
	pthread_mutex_unlock(&hs.lock);
	return d != UINT64_MAX && now_ms() + early >= d;
}

/*
 * This trace's set @s queued for the hook, or, with its queue full
 * (--on-chunk-queue: the sets an earlier trace left are not counted), left
 * waiting on disk until there is room; hs.lock held.  False when it waits.
 */
static bool enqueue(struct set *s)
{
	if (hs.queued_own < opt.hook_queue) {
		s->state = SET_QUEUED;
		hs.queued_own++;
		hs.st.queued++;
		return true;
	}
	s->state = SET_WAITING;
	hs.st.not_handed++;
	return false;
}

/*
 * One of this trace's queued sets went to the hook: the oldest set waiting
 * on disk, if any, takes its place; hs.lock held.  That set, or NULL.
 */
static struct set *make_room(void)
{
	struct set *s;

	hs.queued_own--;
	for (s = hs.head; s && (s->state != SET_WAITING || s->removing);
	     s = s->next)
		;
	if (!s)
		return NULL;
	hs.st.not_handed--;
	enqueue(s);
	return s;
}

static void assemble_ready(void)
{
	char what[SET_NAME_MAX + CHUNK_NAME_MAX + 16];
	struct set *s;
	int err;

	while (!past_deadline(0) && (s = next_ready())) {
		unsigned int seq = s->seq;
		bool left_out = false;

		doing("assembling chunk set %u in %s", seq, outdir);
		err = s->nf ? assemble(s, what, sizeof(what)) : -ENOENT;
		doing("%s", "");
		/* Once DONE, --max-total may free it (main): not touched after. */
		pthread_mutex_lock(&hs.lock);
		if (!err) {
			hs.st.sets++;
			s->assembled = true;
			left_out = !enqueue(s);
		} else {
			/* Its chunks stay in the trace directory. */
			set_done(s, false);
			if (err != -ENOENT)
				hs.st.failed_sets++;
		}
		pthread_mutex_unlock(&hs.lock);
		if (err && err != -ENOENT)
			warn("%s/%s: chunk set %u not assembled: %s (its chunks stay in %s for the next start)",
			     outdir, what, seq, strerror(-err), outdir);
		else if (left_out)
			warn("%s/chunk-%06u: --on-chunk's queue is full (--on-chunk-queue %u): the set waits on disk, queued once there is room (--max-total may remove it meanwhile)",
			     outdir, seq, opt.hook_queue);
	}
}

/*
 * An earlier trace's rotation that a kill left unassembled, assembled now
 * (recover.c); one a call: the hooks are looked after in between.  True
 * when there may be more.
 */
static bool finish_recovered(void)
{
	char what[SET_NAME_MAX + CHUNK_NAME_MAX + 32], dir[PATH_MAX + SET_NAME_MAX];
	struct set *s;
	int err;

	if (past_deadline(0))
		return false;
	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->old && s->state != SET_RECOVER; s = s->next)
		;
	if (s && !s->old)
		s = NULL;
	pthread_mutex_unlock(&hs.lock);
	if (!s)
		return false;
	/* SET_RECOVER: nobody else looks at it, its trace is locked. */
	doing("assembling chunk set %u an earlier ringtraced left in %s",
	      s->seq, s->old->path);
	err = recover_finish(s->old->fd, s->old->path, s->seq, what, sizeof(what));
	doing("%s", "");
	set_dir(s, dir, sizeof(dir));
	if (err)
		warn("%s/%s: chunk set %u left unassembled by an earlier ringtraced, not assembled: %s",
		     s->old->path, what, s->seq, strerror(-err));
	else
		info("%s: chunk set left unassembled by an earlier ringtraced (killed, crashed or stopped), assembled now (\"recovered\" in its manifest)",
		     dir);
	pthread_mutex_lock(&hs.lock);
	if (err) {
		set_done(s, false);
		hs.st.failed_sets++;
	} else {
		s->assembled = true;
		s->state = SET_QUEUED;
		hs.st.queued++;
	}
	pthread_mutex_unlock(&hs.lock);
	return true;
}

/* ---- the hook ------------------------------------------------------------------- */

struct hook {
	struct set *set;
	pid_t pid;
	int pidfd;
	int lockfd;			/* the set's directory, flock()ed; the
					   hook inherits it */
	uint64_t start_ms;
	uint64_t term_ms;		/* SIGTERM due: its timeout */
	uint64_t kill_ms;		/* SIGKILL due; UINT64_MAX: not yet */
	uint64_t gone_ms;		/* killed at the deadline: given up */
	bool termed, killed, stopped;	/* stopped: by the stop's deadline */
};

/* A word a shell takes as it is: no blank, quote, expansion or operator. */
static bool plain_word(const char *cmd)
{
	return *cmd && !cmd[strcspn(cmd, " \t\n|&;<>()$`\\\"'")];
}

/* @p is an executable regular file. */
static bool executable_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

/* @cmd names an executable file: a path to one, or a name found in PATH. */
static bool executable(const char *cmd)
{
	char dir[PATH_MAX], p[2 * PATH_MAX + 2];
	const char *path = getenv("PATH"), *at, *end;

	if (strchr(cmd, '/'))
		return executable_file(cmd);
	if (!path) {
		confstr(_CS_PATH, dir, sizeof(dir));
		path = dir[0] ? strdupa(dir) : "/bin:/usr/bin";
	}
	for (at = path;; at = end + 1) {
		end = strchrnul(at, ':');
		/* An empty entry is the working directory, as sh reads it. */
		snprintf(p, sizeof(p), "%.*s/%s", end > at ? (int)(end - at) : 1,
			 end > at ? at : ".", cmd);
		if (executable_file(p))
			return true;
		if (!*end)
			return false;
	}
}

/*
 * An '&' of @cmd, outside quotes, that puts what precedes it in the
 * background: not "&&", nor a redirection's ">&", "<&", "&>", "|&".
 */
static bool runs_in_background(const char *cmd)
{
	char quote = 0;

	for (const char *c = cmd; *c; c++) {
		if (quote == '\'' ) {
			if (*c == '\'')
				quote = 0;
		} else if (*c == '\\' && c[1]) {
			c++;
		} else if (quote == '"') {
			if (*c == '"')
				quote = 0;
		} else if (*c == '\'' || *c == '"') {
			quote = *c;
		} else if (*c == '&' && c[1] == '&') {
			c++;
		} else if (*c == '&' && c[1] != '>' &&
			   (c == cmd || (c[-1] != '>' && c[-1] != '<' &&
					 c[-1] != '|'))) {
			return true;
		}
	}
	return false;
}

/*
 * `ringtrace ship ...` (the program by any path): it ships the set in
 * RINGTRACE_CHUNK_DIR when given no operand, so it knows its set.
 */
static bool ringtrace_ship(const char *cmd)
{
	size_t w = strcspn(cmd, " \t");
	const char *name = memrchr(cmd, '/', w);

	name = name ? name + 1 : cmd;
	return w - (size_t)(name - cmd) == 9 && !strncmp(name, "ringtrace", 9) &&
	       !strncmp(cmd + w + strspn(cmd + w, " \t"), "ship", 4) &&
	       strchr(" \t", cmd[w + strspn(cmd + w, " \t") + 4]);
}

void handoff_hook_option(const char *cmd)
{
	static const char *const uses[] = {
		"$1", "$2", "$@", "$*", "${1", "${2", "${@", "${*", "RINGTRACE_",
	};
	bool knows = false;

	if (plain_word(cmd) && executable(cmd))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(uses); i++)
		knows |= strstr(cmd, uses[i]) != NULL;
	if (!knows && !ringtrace_ship(cmd))
		warn("--on-chunk '%s' is shell text that uses none of $1, $2, $@, $* and RINGTRACE_*: it cannot know which set it is given%s",
		     cmd, plain_word(cmd) ?
		     " (a program alone gets SETDIR and MANIFEST as its arguments, but this names no executable file)" :
		     strchr(cmd, '/') && executable_file(cmd) ?
		     " (a program's path with a blank is split by the shell: quote it, and give it \"$1\" \"$2\")" :
		     "");
	if (runs_in_background(cmd))
		warn("--on-chunk '%s' runs something in the background ('&'): the set counts as shipped when the shell exits, while what it left running may still be reading it",
		     cmd);
}

/*
 * The hook's command line, run by /bin/sh -c (which finds a name in PATH
 * and runs a script without #! as a shell script).  A program alone runs
 * as `CMD SETDIR MANIFEST` (as find -exec, git's hooks and systemd's
 * ExecStart= run a path), its name in single quotes: a word of it that a
 * shell would read otherwise ('=', '*', '#') is taken as it is.  Any other
 * CMD is shell text whose $1 and $2 they are.  Decided at each run: a
 * program installed after the start is one.
 */
static void hook_argv(char **argv, char *text, size_t size, char *dir, char *man)
{
	if (plain_word(opt.on_chunk) && executable(opt.on_chunk))
		snprintf(text, size, "'%s' \"$@\"", opt.on_chunk);
	else
		snprintf(text, size, "%s", opt.on_chunk);
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = text;
	argv[3] = "ringtraced-on-chunk";	/* $0 */
	argv[4] = dir;
	argv[5] = man;
	argv[6] = NULL;
}

static int spawn_hook(struct hook *h, struct set *s)
{
	char dir[PATH_MAX + SET_NAME_MAX], man[PATH_MAX + SET_NAME_MAX + 16],
	     edir[PATH_MAX + SET_NAME_MAX + 32],
	     eman[PATH_MAX + SET_NAME_MAX + 48],
	     eretry[] = "RINGTRACE_CHUNK_RETRY=0";
	char *argv[7], *text, name[SET_NAME_MAX];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	size_t n = 0, tsize = strlen(opt.on_chunk) + 16;
	sigset_t none, all;
	char **envp;
	int err;

	set_dir(s, dir, sizeof(dir));
	/*
	 * The set's lock, on a descriptor the hook inherits (close-on-exec
	 * cleared; only this thread starts processes): held while the hook, or
	 * anything it left running, keeps it open -- after a kill -9 of this
	 * daemon too, when a start's recovery finds it held.
	 */
	snprintf(name, sizeof(name), "chunk-%06u", s->seq);
	h->lockfd = open_locked(set_parent_fd(s), name);
	if (h->lockfd < 0)
		return h->lockfd;
	if (fcntl(h->lockfd, F_SETFD, 0) < 0) {
		err = -errno;
		close(h->lockfd);
		h->lockfd = -1;
		return err;
	}
	snprintf(man, sizeof(man), "%s/manifest.json", dir);
	snprintf(edir, sizeof(edir), "RINGTRACE_CHUNK_DIR=%s", dir);
	snprintf(eman, sizeof(eman), "RINGTRACE_MANIFEST=%s", man);
	eretry[sizeof(eretry) - 2] = s->retry ? '1' : '0';
	while (environ[n])
		n++;
	envp = calloc(n + 4, sizeof(*envp));
	text = malloc(tsize);
	if (!envp || !text) {
		free(envp);
		free(text);
		close(h->lockfd);
		return -ENOMEM;
	}
	/* Ours, not whatever of those names we were started with. */
	for (size_t i = n = 0; environ[i]; i++)
		if (strncmp(environ[i], "RINGTRACE_CHUNK_DIR=", 20) &&
		    strncmp(environ[i], "RINGTRACE_MANIFEST=", 19) &&
		    strncmp(environ[i], "RINGTRACE_CHUNK_RETRY=", 22))
			envp[n++] = environ[i];
	envp[n] = edir;
	envp[n + 1] = eman;
	envp[n + 2] = eretry;
	hook_argv(argv, text, tsize, dir, man);

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	/* Its own group, to end what it started too; signals as new. */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
				 POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
					 O_RDONLY, 0);
	/* Our stdout is the summary's. */
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	err = posix_spawn(&h->pid, "/bin/sh", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(envp);
	free(text);
	if (err) {
		close(h->lockfd);
		return -err;
	}
	/* Ours to wait for: it cannot exit and be reaped by anyone else. */
	h->pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
	if (h->pidfd < 0) {
		err = -errno;
		kill(-h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
		close(h->lockfd);
		return err;
	}
	h->set = s;
	h->start_ms = now_ms();
	h->term_ms = h->start_ms + opt.hook_ms;
	h->kill_ms = h->gone_ms = UINT64_MAX;
	h->termed = h->killed = h->stopped = false;
	return 0;
}

/* The oldest queued set to the hook, if none runs and the stop allows. */
static void start_hook(struct hook *h)
{
	char dir[PATH_MAX + SET_NAME_MAX];
	struct set *s, *more = NULL;
	unsigned int more_seq = 0;
	int err;

	/* In the stop's last seconds no hook starts: it would be killed. */
	if (h->set || past_deadline(opt.hook_kill_ms))
		return;
	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->state != SET_QUEUED; s = s->next)
		;
	if (s) {
		s->state = SET_HOOKED;
		hs.st.queued--;
		hs.st.running = true;
		if (!s->old)
			more = make_room();
		if (more)
			more_seq = more->seq;
	}
	pthread_mutex_unlock(&hs.lock);
	if (!s)
		return;
	if (more)
		info("%s/chunk-%06u: queued for --on-chunk, now that there is room",
		     outdir, more_seq);
	err = spawn_hook(h, s);
	if (!err)
		return;
	if (err == -EBUSY)
		warn("%s: not handed to --on-chunk: a process an earlier hook left still holds it (the set stays on disk for the next start)",
		     set_dir(s, dir, sizeof(dir)));
	else
		warn("%s: --on-chunk: cannot run the hook: %s (the set stays on disk for the next start)",
		     set_dir(s, dir, sizeof(dir)), strerror(-err));
	h->set = NULL;
	pthread_mutex_lock(&hs.lock);
	set_done(s, false);
	hs.st.hooks_failed++;
	hs.st.running = false;
	pthread_mutex_unlock(&hs.lock);
}

/*
 * The hook exited 0: the set is shipped.  Marked so when it is still
 * there: the mark synced, then its directory (a set the hook took away
 * needs no mark, and a rename of it that a crash undoes brings it back
 * unmarked, to be handed again).  A mark that cannot be made durable is
 * taken back: no mark, rather than one a power cut may or may not keep.
 * False when the set is not marked: the next start hands it again.
 */
static bool mark_shipped(const struct set *s)
{
	char name[SET_NAME_MAX], mark[SHIPPED_NAME_MAX];
	int pfd = set_parent_fd(s), fd, err = 0;
	struct stat st;

	snprintf(name, sizeof(name), "chunk-%06u", s->seq);
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return true;
	shipped_name(mark, sizeof(mark), s->seq);
	fd = openat(pfd, mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		warn("%s/%s: %s (not marked shipped: the next start hands it to the hook again)",
		     set_parent(s), mark, strerror(errno));
		return false;
	}
	if (fsync(fd) < 0)
		err = errno;
	close(fd);
	if (!err && fsync(pfd) < 0)
		err = errno;
	if (!err)
		return true;
	if (unlinkat(pfd, mark, 0) < 0 && errno != ENOENT)
		warn("%s/%s: %s (the mark may not survive a power loss: the next start may hand the set to the hook again)",
		     set_parent(s), mark, strerror(err));
	else
		warn("%s/%s: %s (not marked shipped: the next start hands it to the hook again)",
		     set_parent(s), mark, strerror(err));
	return false;
}

/*
 * The hook's leader is reaped: what it left running, said.  A process of
 * its group keeps the group's id (the leader reaped, nothing else does;
 * before, its zombie would); one that left the group (setsid) but keeps
 * the inherited descriptor keeps the set's lock: seen from a new open
 * file of the same directory once ours is closed.  A group we killed is
 * not looked at (its members may not be reaped yet).  NULL: nothing.
 */
static const char *hook_left(struct hook *h)
{
	char self[64];
	int probe;
	bool held;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", h->lockfd);
	probe = open(self, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	close(h->lockfd);
	h->lockfd = -1;
	held = probe >= 0 && flock(probe, LOCK_EX | LOCK_NB) < 0 &&
	       errno == EWOULDBLOCK;
	if (probe >= 0)
		close(probe);
	if (!h->termed && !h->killed && !kill(-h->pid, 0))
		return "in its process group";
	return held ? "holding the set's directory open" : NULL;
}

/* The hook exited (or cannot be waited for): its status said, the set done. */
static void reap_hook(struct hook *h)
{
	double secs = (double)(now_ms() - h->start_ms) / 1000;
	char dir[PATH_MAX + SET_NAME_MAX];
	bool ok, waited = true;
	const char *left;
	int st = 0, err = 0;

	set_dir(h->set, dir, sizeof(dir));
	/*
	 * Ended on our SIGTERM: what it started and left (a child ignoring
	 * SIGTERM) goes too.  Before the wait: the leader, a zombie until
	 * reaped, keeps its group's id ours.
	 */
	if (h->termed && !h->killed)
		kill(-h->pid, SIGKILL);
	while (waitpid(h->pid, &st, 0) < 0)
		if (errno != EINTR) {
			/*
			 * Not ours to wait for (main.c resets SIGCHLD, so
			 * only an unexpected error): the result is unknown.
			 */
			err = errno;
			waited = false;
			break;
		}
	close(h->pidfd);
	h->pidfd = -1;
	left = waited ? hook_left(h) : NULL;
	if (!waited) {
		close(h->lockfd);
		h->lockfd = -1;
	}
	ok = waited && WIFEXITED(st) && !WEXITSTATUS(st) && !h->termed;
	if (ok) {
		doing("marking %s shipped", dir);
		mark_shipped(h->set);
		doing("%s", "");
	}
	pthread_mutex_lock(&hs.lock);
	set_done(h->set, ok);
	hs.st.running = false;
	if (ok)
		hs.st.hooks_ok++;
	else
		hs.st.hooks_failed++;
	if (h->termed && !h->stopped)
		hs.st.hooks_timed_out++;
	if (h->stopped)
		hs.st.hooks_stopped++;
	pthread_mutex_unlock(&hs.lock);
	h->set = NULL;
	if (!waited)
		warn("%s: --on-chunk hook's exit status unknown: waitpid: %s (counted failed; the set stays on disk for the next start)",
		     dir, strerror(err));
	else if (h->stopped)
		warn("%s: --on-chunk hook ended at the stop's deadline (%s %d) after %.1f s (the set stays on disk for the next start)",
		     dir, WIFSIGNALED(st) ? "signal" : "exit status",
		     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), secs);
	else if (h->termed && WIFSIGNALED(st))
		warn("%s: --on-chunk hook timed out: ended by signal %d after %.1f s (the set stays on disk)",
		     dir, WTERMSIG(st), secs);
	else if (h->termed)
		warn("%s: --on-chunk hook timed out: exited %d after %.1f s (the set stays on disk)",
		     dir, WEXITSTATUS(st), secs);
	else if (ok && left)
		warn("%s: --on-chunk hook exited 0 but left processes running (%s) after %.1f s: the set counts as shipped while they may still read it",
		     dir, left, secs);
	else if (ok)
		info("%s: --on-chunk hook exited 0 after %.1f s",
		     dir, secs);
	else if (WIFEXITED(st))
		warn("%s: --on-chunk hook exited %d after %.1f s (the set stays on disk)",
		     dir, WEXITSTATUS(st), secs);
	else
		warn("%s: --on-chunk hook killed by signal %d after %.1f s (the set stays on disk)",
		     dir, WTERMSIG(st), secs);
	if (!ok && left)
		warn("%s: the --on-chunk hook left processes running (%s)",
		     dir, left);
}

/*
 * Its timeout: SIGTERM to its group, --on-chunk-kill-after later
 * SIGKILL.  The stop's deadline: SIGTERM that long before it, SIGKILL at
 * it.
 */
static void hook_overdue(struct hook *h)
{
	char dir[PATH_MAX + SET_NAME_MAX];
	uint64_t now = now_ms();
	bool deadline = past_deadline(0);

	set_dir(h->set, dir, sizeof(dir));
	if (h->killed) {
		/* Not gone yet (killed at its timeout): the stop waits a while. */
		if (deadline && h->gone_ms == UINT64_MAX)
			h->gone_ms = now + HOOK_GONE_MS;
	} else if (deadline) {
		warn("%s: --on-chunk hook still running at the stop's deadline: SIGKILL to its process group",
		     dir);
		kill(-h->pid, SIGKILL);
		h->killed = h->stopped = true;
		h->gone_ms = now + HOOK_GONE_MS;
	} else if (h->termed) {
		if (now < h->kill_ms)
			return;
		warn("%s: --on-chunk hook still running %.1f s after SIGTERM: SIGKILL to its process group",
		     dir, (double)opt.hook_kill_ms / 1000);
		kill(-h->pid, SIGKILL);
		h->killed = true;
	} else if (past_deadline(opt.hook_kill_ms)) {
		warn("%s: --on-chunk hook still running %.1f s before the stop's deadline: SIGTERM to its process group",
		     dir, (double)opt.hook_kill_ms / 1000);
		kill(-h->pid, SIGTERM);
		h->termed = h->stopped = true;
		h->kill_ms = now + opt.hook_kill_ms;
	} else if (now >= h->term_ms) {
		warn("%s: --on-chunk hook still running after %.1f s: SIGTERM to its process group",
		     dir, (double)opt.hook_ms / 1000);
		kill(-h->pid, SIGTERM);
		h->termed = true;
		h->kill_ms = now + opt.hook_kill_ms;
	}
}

/* When hook_overdue() has something to do; UINT64_MAX: nothing. */
static uint64_t hook_next_ms(const struct hook *h)
{
	uint64_t d, next;

	pthread_mutex_lock(&hs.lock);
	d = hs.deadline_ms;
	pthread_mutex_unlock(&hs.lock);
	if (h->killed)
		return h->gone_ms == UINT64_MAX ? d :
		       now_ms() < h->gone_ms ? h->gone_ms : UINT64_MAX;
	next = h->termed ? h->kill_ms : h->term_ms;
	if (d != UINT64_MAX) {
		uint64_t term = d > opt.hook_kill_ms ? d - opt.hook_kill_ms : 0;

		if (!h->termed && term < next)
			next = term;
		if (d < next)
			next = d;
	}
	return next;
}

/*
 * A stop may end here: every closed set assembled, none queued, no hook;
 * or no hook left in the stop's last --on-chunk-kill-after, when none
 * may start (one killed at the deadline and not gone HOOK_GONE_MS later
 * is left to itself).
 */
static bool all_done(const struct hook *h)
{
	struct set *s;
	bool done;

	if (h->set && !(h->killed && now_ms() >= h->gone_ms))
		return false;
	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->state == SET_DONE; s = s->next)
		;
	done = hs.stopping && (!s || (hs.deadline_ms != UINT64_MAX &&
				      now_ms() + opt.hook_kill_ms >= hs.deadline_ms));
	pthread_mutex_unlock(&hs.lock);
	return done;
}

/* Set @s is there (a hook that failed may have taken it all the same). */
static bool set_on_disk(const struct set *s)
{
	char dir[PATH_MAX + SET_NAME_MAX];
	struct stat st;

	return !lstat(set_dir(s, dir, sizeof(dir)), &st);
}

/*
 * What the next start finds to hand over; hs.lock held, the thread over
 * (or left to itself: @running says whether a hook still has a set).
 */
static void count_left(bool running)
{
	hs.st.left_sets = hs.st.left_rotations = 0;
	for (struct set *s = hs.head; s; s = s->next) {
		if (s->state == SET_RECOVER || (s->state == SET_PENDING && s->nf))
			hs.st.left_rotations++;
		else if (s->assembled && !s->shipped && set_on_disk(s))
			hs.st.left_sets++;
	}
	/* Those that failed to assemble: their chunks wait in the trace. */
	hs.st.left_rotations += hs.st.failed_sets;
	hs.st.running = running;
}

static void *handoff_main(void *arg __attribute__((unused)))
{
	struct hook h = { .set = NULL, .pidfd = -1, .lockfd = -1 };
	uint64_t v, now, next;
	bool more;

	pthread_setname_np(pthread_self(), "rtd-handoff");
	for (;;) {
		struct pollfd p[2];
		int timeout;

		more = finish_recovered();
		assemble_ready();
		start_hook(&h);
		if (all_done(&h))
			break;
		/* After start_hook(): the hook it started is watched too. */
		p[0] = (struct pollfd){ .fd = hs.evfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = h.set ? h.pidfd : -1,
					.events = POLLIN };
		next = h.set ? hook_next_ms(&h) : UINT64_MAX;
		now = now_ms();
		/* Stopping: its last seconds end the wait for sets to settle. */
		pthread_mutex_lock(&hs.lock);
		if (hs.stopping && hs.deadline_ms != UINT64_MAX) {
			uint64_t last = hs.deadline_ms > opt.hook_kill_ms ?
					hs.deadline_ms - opt.hook_kill_ms : 0;

			if (last > now && last < next)
				next = last;
		}
		pthread_mutex_unlock(&hs.lock);
		timeout = more ? 0 : next == UINT64_MAX ? -1 :
			  poll_timeout_ms(next > now ? next - now : 0);
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			if (read(hs.evfd, &v, sizeof(v)) < 0) {
				/* EAGAIN: someone else's wake-up was read. */
			}
		if (!h.set)
			continue;
		if (p[1].revents & POLLIN)
			reap_hook(&h);
		else if (now_ms() >= hook_next_ms(&h))
			hook_overdue(&h);
	}
	if (h.set) {
		char dir[PATH_MAX + SET_NAME_MAX];

		warn("%s: --on-chunk hook (pid %d) not gone %d s after SIGKILL: left to itself (the set stays on disk for the next start)",
		     set_dir(h.set, dir, sizeof(dir)), (int)h.pid,
		     HOOK_GONE_MS / 1000);
		close(h.pidfd);
		close(h.lockfd);
	}
	pthread_mutex_lock(&hs.lock);
	count_left(h.set != NULL);
	pthread_mutex_unlock(&hs.lock);
	v = 1;
	if (write(hs.donefd, &v, sizeof(v)) < 0) {
		/* An eventfd of ours: cannot fail. */
	}
	return NULL;
}

void handoff_start(void)
{
	int err;

	hs.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	hs.donefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (hs.evfd < 0 || hs.donefd < 0)
		die("eventfd: %s", strerror(errno));
	err = pthread_create(&hs.thread, NULL, handoff_main, NULL);
	if (err)
		die("the --on-chunk thread: %s", strerror(err));
	hs.started = true;
}

void handoff_deadline(uint64_t deadline_ms)
{
	pthread_mutex_lock(&hs.lock);
	hs.deadline_ms = deadline_ms;
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
}

static void handoff_stopping(void)
{
	pthread_mutex_lock(&hs.lock);
	hs.stopping = true;
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
}

/* The thread is over: joined, its sets and traces forgotten. */
static void handoff_join(void)
{
	struct old_trace *t;
	struct set *s;

	if (!hs.started)
		return;
	pthread_join(hs.thread, NULL);
	hs.started = false;
	while ((s = hs.head)) {
		hs.head = s->next;
		free(s->f);
		free(s);
	}
	while ((t = hs.olds)) {
		hs.olds = t->next;
		if (t->fd >= 0)
			close(t->fd);
		free(t->path);
		free(t);
	}
}

void handoff_finish(int sigfd, bool (*hurried)(uint64_t *deadline),
		    uint64_t *deadline)
{
	char busy[sizeof(hs.doing)];
	struct handoff_stats st;
	bool over = false;

	handoff_stopping();
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = sigfd, .events = POLLIN },
			{ .fd = hs.donefd, .events = POLLIN },
		};
		uint64_t now = now_ms(), until = *deadline;
		int timeout = -1;

		if (until != UINT64_MAX) {
			until += GIVE_UP_MS;
			if (now >= until)
				break;
			timeout = poll_timeout_ms(until - now);
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			over = true;
			break;
		}
		if (p[0].revents & POLLIN)
			hurried(deadline);
	}
	if (over) {
		handoff_join();
	} else {
		/* Not joined: what it holds stays as it is, the exit ends it. */
		pthread_mutex_lock(&hs.lock);
		count_left(hs.st.running);
		snprintf(busy, sizeof(busy), "%s", hs.doing[0] ? hs.doing :
			 hs.st.running ? "waiting for its hook" : "in a call");
		pthread_mutex_unlock(&hs.lock);
		warn("--on-chunk: the hand-off thread is still busy %d s after the stop's deadline (%s): left to itself, the exit ends it",
		     GIVE_UP_MS / 1000, busy);
	}
	handoff_status(&st);
	if (st.left_sets || st.left_rotations)
		warn("--on-chunk: left for the next start: %llu chunk sets not shipped, %llu rotations not assembled (ringtraced --on-chunk hands them to the hook when it starts again)",
		     (unsigned long long)st.left_sets,
		     (unsigned long long)st.left_rotations);
}
