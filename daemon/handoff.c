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
 *                  then queued for the hook (at most --on-chunk-queue; a
 *                  set finding the queue full stays on disk, counted),
 *                  and the hook runs, one at a time:
 *                    /bin/sh -c CMD ringtraced-on-chunk SETDIR MANIFEST
 *                  in a process group of its own, stdin /dev/null, its
 *                  stdout on our stderr, signals as a new process has
 *                  them; watched through a pidfd; after --on-chunk-timeout
 *                  SIGTERM to its group, HOOK_KILL_MS later SIGKILL.
 *
 * Nothing here is on a drain thread's path: a drain thread only appends a
 * chunk's facts under hs.lock (held for a realloc at most).  A hook that
 * fails, hangs or is slow delays only the next hook; the sets pile up on
 * disk (bounded by --max-total, which never takes one that is queued or
 * in the hook's hands: handoff_take_oldest()).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringtraced.h"

extern char **environ;

#define HOOK_KILL_MS	5000		/* from SIGTERM to SIGKILL */

enum set_state {
	SET_PENDING,			/* its chunks are in the trace dir */
	SET_QUEUED,			/* assembled, waiting for the hook */
	SET_HOOKED,			/* the hook has it */
	SET_DONE,			/* the hook is done with it (or never) */
};

struct set {
	struct set *next;		/* by seq */
	unsigned int seq;		/* 0: a recovered set, first in line */
	char *path;			/* a recovered set's directory (recover.c) */
	enum set_state state;
	struct chunk_facts *f;
	unsigned int nf, cap;
};

static struct {
	pthread_mutex_t lock;
	struct set *head;		/* every set not forgotten, oldest first */
	unsigned int closed;		/* sets up to this one are closed */
	bool stopping;
	struct handoff_stats st;
	/* The thread's own. */
	pthread_t thread;
	bool started;
	int evfd;
} hs = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.evfd = -1,
};

/* ---- what the other threads call ---------------------------------------------- */

/* Where set @s is: outdir's chunk-NNNNNN, or a recovered set's own. */
static const char *set_dir(const struct set *s, char *buf, size_t size)
{
	if (s->path)
		return s->path;
	snprintf(buf, size, "%s/chunk-%06u", outdir, s->seq);
	return buf;
}

void handoff_recovered(const char *dir)
{
	struct set *s = calloc(1, sizeof(*s)), **pp;

	if (s)
		s->path = strdup(dir);
	if (!s || !s->path) {
		free(s);
		warn("%s: recovered, but not handed to --on-chunk: %s (it stays on disk)",
		     dir, strerror(ENOMEM));
		return;
	}
	s->state = SET_QUEUED;
	pthread_mutex_lock(&hs.lock);
	/* After the sets recovered before it, ahead of this trace's. */
	for (pp = &hs.head; *pp && (*pp)->path; pp = &(*pp)->next)
		;
	s->next = *pp;
	*pp = s;
	hs.st.queued++;
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
}

/* The set @seq, made if new; hs.lock held. */
static struct set *set_of(unsigned int seq)
{
	struct set *s, **pp;

	for (pp = &hs.head; *pp && (*pp)->seq <= seq; pp = &(*pp)->next)
		if ((*pp)->seq == seq)
			return *pp;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->seq = seq;
	s->next = *pp;
	*pp = s;
	return s;
}

void handoff_kick(void)
{
	uint64_t one = 1;

	if (write(hs.evfd, &one, sizeof(one)) < 0) {
		/* Non-zero already: the thread will look. */
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

bool handoff_take_oldest(char *name, size_t size)
{
	struct set *s, **pp;
	struct stat sb;

	pthread_mutex_lock(&hs.lock);
	for (pp = &hs.head; (s = *pp);) {
		if (s->state != SET_DONE) {
			pp = &s->next;
			continue;
		}
		/* Forgotten either way: the hook moved it, or it is the caller's. */
		*pp = s->next;
		snprintf(name, size, "chunk-%06u", s->seq);
		free(s->f);
		if (s->path) {
			/* Recovered: in an older trace, not this one's to trim. */
			free(s->path);
			free(s);
			continue;
		}
		free(s);
		if (!fstatat(outdirfd, name, &sb, AT_SYMLINK_NOFOLLOW)) {
			pthread_mutex_unlock(&hs.lock);
			return true;
		}
	}
	pthread_mutex_unlock(&hs.lock);
	return false;
}

/* ---- assembling a set ------------------------------------------------------------ */

/* Write @len bytes as @dirfd/@name, synced; -errno. */
static int write_synced(int dirfd, const char *name, const void *buf, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			0640);
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
 * set (@replace false) gets a new file.  Finishing what a killed daemon
 * left (recover.c, @replace true) replaces a partial copy, and takes only
 * a regular file, opened without blocking: whatever stands there, the
 * start goes on.
 */
int copy_synced(int dirfd, int setfd, const char *name, bool replace)
{
	char buf[1 << 16];
	struct stat st;
	ssize_t n;
	int in, out, err = 0;

	in = openat(dirfd, name, O_RDONLY | O_CLOEXEC | (replace ? O_NONBLOCK : 0));
	if (in < 0)
		return errno == ENOENT ? 1 : -errno;
	if (replace && (fstat(in, &st) || !S_ISREG(st.st_mode))) {
		close(in);
		return -EINVAL;
	}
	out = openat(setfd, name, O_WRONLY | O_CREAT | O_CLOEXEC |
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
	setfd = openat(outdirfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

static void assemble_ready(void)
{
	char what[SET_NAME_MAX + CHUNK_NAME_MAX + 16];
	struct set *s;
	int err;

	while ((s = next_ready())) {
		unsigned int seq = s->seq;
		bool left_out = false;

		err = s->nf ? assemble(s, what, sizeof(what)) : -ENOENT;
		/* Once DONE, --max-total may free it (main): not touched after. */
		pthread_mutex_lock(&hs.lock);
		if (!err) {
			hs.st.sets++;
			if (hs.st.queued < opt.hook_queue) {
				s->state = SET_QUEUED;
				hs.st.queued++;
			} else {
				s->state = SET_DONE;
				hs.st.not_handed++;
				left_out = true;
			}
		} else {
			/* Its chunks stay in the trace directory. */
			s->state = SET_DONE;
			if (err != -ENOENT)
				hs.st.failed_sets++;
		}
		pthread_mutex_unlock(&hs.lock);
		if (err && err != -ENOENT)
			warn("%s/%s: chunk set %u not assembled: %s (its chunks stay in %s)",
			     outdir, what, seq, strerror(-err), outdir);
		else if (left_out)
			warn("%s/chunk-%06u: not handed to --on-chunk: its queue is full (%u sets wait; this one stays on disk)",
			     outdir, seq, opt.hook_queue);
	}
}

/* ---- the hook ------------------------------------------------------------------- */

struct hook {
	struct set *set;
	pid_t pid;
	int pidfd;
	uint64_t start_ms, deadline_ms;
	bool termed, killed;
};

static int spawn_hook(struct hook *h, struct set *s)
{
	char dir[PATH_MAX + SET_NAME_MAX], man[PATH_MAX + SET_NAME_MAX + 16],
	     edir[PATH_MAX + SET_NAME_MAX + 32],
	     eman[PATH_MAX + SET_NAME_MAX + 48];
	char *argv[] = { "/bin/sh", "-c", (char *)opt.on_chunk,
			 "ringtraced-on-chunk", dir, man, NULL };
	char buf[PATH_MAX + SET_NAME_MAX];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char **envp;
	size_t n = 0;
	int err;

	snprintf(dir, sizeof(dir), "%s", set_dir(s, buf, sizeof(buf)));
	snprintf(man, sizeof(man), "%s/manifest.json", dir);
	snprintf(edir, sizeof(edir), "RINGTRACE_CHUNK_DIR=%s", dir);
	snprintf(eman, sizeof(eman), "RINGTRACE_MANIFEST=%s", man);
	while (environ[n])
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	if (!envp)
		return -ENOMEM;
	memcpy(envp, environ, n * sizeof(*envp));
	envp[n] = edir;
	envp[n + 1] = eman;

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
	if (err)
		return -err;
	/* Ours to wait for: it cannot exit and be reaped by anyone else. */
	h->pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
	if (h->pidfd < 0) {
		err = -errno;
		kill(-h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
		return err;
	}
	h->set = s;
	h->start_ms = now_ms();
	h->deadline_ms = h->start_ms + opt.hook_ms;
	h->termed = h->killed = false;
	return 0;
}

/* The oldest queued set to the hook, if none runs. */
static void start_hook(struct hook *h)
{
	struct set *s;
	int err;

	if (h->set)
		return;
	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->state != SET_QUEUED; s = s->next)
		;
	if (s) {
		s->state = SET_HOOKED;
		hs.st.queued--;
		hs.st.running = true;
	}
	pthread_mutex_unlock(&hs.lock);
	if (!s)
		return;
	err = spawn_hook(h, s);
	if (!err)
		return;
	{
		char buf[PATH_MAX + SET_NAME_MAX];

		warn("%s: --on-chunk: cannot run the hook: %s (the set stays on disk)",
		     set_dir(s, buf, sizeof(buf)), strerror(-err));
	}
	h->set = NULL;
	pthread_mutex_lock(&hs.lock);
	s->state = SET_DONE;
	hs.st.hooks_failed++;
	hs.st.running = false;
	pthread_mutex_unlock(&hs.lock);
}

/* The hook exited: its status said, the set done. */
static void reap_hook(struct hook *h)
{
	double secs = (double)(now_ms() - h->start_ms) / 1000;
	char buf[PATH_MAX + SET_NAME_MAX], dir[PATH_MAX + SET_NAME_MAX];
	bool ok;
	int st;

	snprintf(dir, sizeof(dir), "%s", set_dir(h->set, buf, sizeof(buf)));
	while (waitpid(h->pid, &st, 0) < 0)
		if (errno != EINTR)
			return;
	close(h->pidfd);
	ok = WIFEXITED(st) && !WEXITSTATUS(st) && !h->termed;
	pthread_mutex_lock(&hs.lock);
	h->set->state = SET_DONE;
	hs.st.running = false;
	if (ok)
		hs.st.hooks_ok++;
	else
		hs.st.hooks_failed++;
	if (h->termed)
		hs.st.hooks_timed_out++;
	pthread_mutex_unlock(&hs.lock);
	h->set = NULL;
	if (h->termed && WIFSIGNALED(st))
		warn("%s: --on-chunk hook timed out: ended by signal %d after %.1f s (the set stays on disk)",
		     dir, WTERMSIG(st), secs);
	else if (h->termed)
		warn("%s: --on-chunk hook timed out: exited %d after %.1f s (the set stays on disk)",
		     dir, WEXITSTATUS(st), secs);
	else if (ok)
		info("%s: --on-chunk hook exited 0 after %.1f s",
		     dir, secs);
	else if (WIFEXITED(st))
		warn("%s: --on-chunk hook exited %d after %.1f s (the set stays on disk)",
		     dir, WEXITSTATUS(st), secs);
	else
		warn("%s: --on-chunk hook killed by signal %d after %.1f s (the set stays on disk)",
		     dir, WTERMSIG(st), secs);
}

/* Past its time: SIGTERM to its group, then SIGKILL. */
static void hook_overdue(struct hook *h)
{
	char buf[PATH_MAX + SET_NAME_MAX];

	if (!h->termed) {
		warn("%s: --on-chunk hook still running after %.1f s: SIGTERM to its process group",
		     set_dir(h->set, buf, sizeof(buf)), (double)opt.hook_ms / 1000);
		kill(-h->pid, SIGTERM);
		h->termed = true;
		h->deadline_ms = now_ms() + HOOK_KILL_MS;
	} else if (!h->killed) {
		warn("%s: --on-chunk hook still running %d s after SIGTERM: SIGKILL to its process group",
		     set_dir(h->set, buf, sizeof(buf)), HOOK_KILL_MS / 1000);
		kill(-h->pid, SIGKILL);
		h->killed = true;
		h->deadline_ms = UINT64_MAX;
	}
}

/* Every closed set assembled, none queued, no hook: a stop may end here. */
static bool all_done(const struct hook *h)
{
	struct set *s;
	bool done;

	if (h->set)
		return false;
	pthread_mutex_lock(&hs.lock);
	for (s = hs.head; s && s->state == SET_DONE; s = s->next)
		;
	done = hs.stopping && !s;
	pthread_mutex_unlock(&hs.lock);
	return done;
}

static void *handoff_main(void *arg __attribute__((unused)))
{
	struct hook h = { .set = NULL, .pidfd = -1 };
	uint64_t v, now;
	int timeout;

	pthread_setname_np(pthread_self(), "rtd-handoff");
	for (;;) {
		struct pollfd p[2];

		assemble_ready();
		start_hook(&h);
		if (all_done(&h))
			break;
		/* After start_hook(): the hook it started is watched too. */
		p[0] = (struct pollfd){ .fd = hs.evfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = h.set ? h.pidfd : -1,
					.events = POLLIN };
		timeout = -1;
		if (h.set) {
			now = now_ms();
			if (h.deadline_ms != UINT64_MAX)
				timeout = poll_timeout_ms(h.deadline_ms > now ?
							  h.deadline_ms - now : 0);
		}
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
		else if (now_ms() >= h.deadline_ms)
			hook_overdue(&h);
	}
	return NULL;
}

void handoff_start(void)
{
	int err;

	hs.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (hs.evfd < 0)
		die("eventfd: %s", strerror(errno));
	err = pthread_create(&hs.thread, NULL, handoff_main, NULL);
	if (err)
		die("the --on-chunk thread: %s", strerror(err));
	hs.started = true;
}

void handoff_stop(void)
{
	struct set *s;

	if (!hs.started)
		return;
	pthread_mutex_lock(&hs.lock);
	hs.stopping = true;
	pthread_mutex_unlock(&hs.lock);
	handoff_kick();
	pthread_join(hs.thread, NULL);
	hs.started = false;
	while ((s = hs.head)) {
		hs.head = s->next;
		free(s->f);
		free(s->path);
		free(s);
	}
}
