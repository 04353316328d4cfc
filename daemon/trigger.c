// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced --trigger: the flight recorder that saves itself.
 *
 *   setup:  the triggers checked (each EVENT has a trigger file, named
 *           once) and written to events/EVENT/trigger, all or none: the
 *           module parses them, and a refused one is the only line
 *           printed, with nothing changed yet; then the directory of the
 *           snapshots, the mode (overwrite) and geometry, the triggered
 *           file reset, tracing on.  No buffer is opened: nobody drains,
 *           so the buffers hold the newest events.
 *   loop:   poll over the signalfd and the triggered file (POLLPRI: the
 *           kernel latched a hit at the event, module/trigger.c), its
 *           timeout the end of --after or the next STATUS= (every 10 s):
 *             a hit          -> wait --after; meanwhile the file is not
 *                               watched (the hit stays latched until the
 *                               rearm; the kernel counts hits as missed)
 *             --after over   -> trigger_save() (lib/trigger.c, as
 *                               record --trigger does): the kernel's
 *                               marker naming the hit, what the buffers
 *                               hold written by `ringtraced --once` into
 *                               DIR/YYYYmmdd-HHMMSS.mmm-EVENT, the trigger
 *                               rearmed; --max-total; at --max the
 *                               triggers are put back (no more hits)
 *             SIGUSR1        -> the counts; SIGHUP: no chunks to close
 *             SIGINT/SIGTERM -> a snapshot waiting for --after is saved
 *                               at once; stop
 *   stop:   tracing off; the triggers, the triggered file and the mode
 *           put back as they were; the summary.
 *
 * A snapshot is this program run with --once, the drain every recording
 * uses, waited for here: it fsyncs its chunks, metadata and directory as
 * any recording does before it exits 0, so a snapshot reported is on
 * disk.  A signal that comes while it runs is read once it is done (what
 * the buffers hold: seconds at most).  A snapshot that fails (a full
 * disk) is logged and counted, the trigger is armed again, and recording
 * goes on; the exit status is then 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/trigger.h"
#include "ringtraced.h"

#define STATUS_MS	10000

static char snapdir[PATH_MAX];		/* where the snapshots go */
static char saved_mode[16];		/* the mode before, put back at exit */
static bool tracing_started;		/* tracing_on 1 is ours to undo */

static struct {
	unsigned int saved, failed;
	char last[PATH_MAX];		/* the newest snapshot's name */
	bool done;			/* --max reached */
} snaps;

/* ---- setup and restore --------------------------------------------------------- */

/*
 * -o DIR (made if need be: a restarted service adds to it); --root, or
 * the service's directory, where --max-total counts the snapshots with
 * any other trace; else ./ringtrace-YYYYmmdd-HHMMSS.
 */
static void make_snapshot_dir(void)
{
	time_t now = time(NULL);
	struct tm tm;

	if (opt.output) {
		snprintf(snapdir, sizeof(snapdir), "%s", opt.output);
	} else if (opt.root || msg_service) {
		if (!opt.root)
			opt.root = SERVICE_DIR;
		snprintf(snapdir, sizeof(snapdir), "%s", opt.root);
	} else {
		localtime_r(&now, &tm);
		strftime(snapdir, sizeof(snapdir), "ringtrace-%Y%m%d-%H%M%S", &tm);
	}
	if (mkdir(snapdir, 0750) < 0 && errno != EEXIST)
		die("%s: %s", snapdir, strerror(errno));
}

/* An EVENT not enabled never fires: said, not refused (it may be later). */
static void warn_disabled(void)
{
	char path[256], on[8];

	for (size_t i = 0; i < opt.triggers.n; i++) {
		const char *event = opt.triggers.f[i].event;

		snprintf(path, sizeof(path), "events/%s/enable", event);
		/* The marker has no switch: it is always recorded. */
		if (ctl_read(&ctl, path, on, sizeof(on)) >= 0 && !strcmp(on, "0"))
			warn("--trigger '%s': %s is not enabled, its trigger fires once it is (echo 1 > %s/%s)",
			     opt.triggers.f[i].spec, event, ctl.dir, path);
	}
}

/* At exit, after die() too: what setup changed, put back. */
static void restore(void)
{
	int err;

	if (tracing_started) {
		err = ctl_write(&ctl, "tracing_on", "0");
		if (err)
			warn("%s/tracing_on: %s", ctl.dir, strerror(-err));
		tracing_started = false;
	}
	filters_restore(&opt.triggers, &ctl);
	err = trigger_reset(&ctl);
	if (err)
		warn("%s/triggered: reset: %s", ctl.dir, strerror(-err));
	if (saved_mode[0] && strcmp(saved_mode, opt.mode)) {
		err = ctl_write(&ctl, "mode", saved_mode);
		if (err)
			warn("%s/mode: cannot put back '%s': %s", ctl.dir,
			     saved_mode, strerror(-err));
	}
	saved_mode[0] = '\0';
}

/* The triggered file, for poll(); dies with nothing changed on bad input. */
static int setup(void)
{
	char why[1024], on[8];
	int err, fd;

	if (filters_check(&opt.triggers, &ctl, NULL, NULL, 0, false, why,
			  sizeof(why)))
		die("%s", why);
	fd = trigger_watch(&ctl);
	if (fd < 0)
		die("%s/triggered: %s (a ringtrace.ko without triggers?)",
		    ctl.dir, strerror(errno));
	err = ctl_read(&ctl, "tracing_on", on, sizeof(on));
	if (err >= 0)
		err = ctl_read(&ctl, "mode", saved_mode, sizeof(saved_mode));
	if (err < 0)
		die("%s: %s", ctl.dir, strerror(-err));
	if (strcmp(on, "0"))
		die("tracing is on already (another ringtraced, or ringtrace record?): --trigger needs the buffers to itself");
	/* The module parses them: a refused one leaves every trigger as it was. */
	if (filters_apply(&opt.triggers, &ctl, why, sizeof(why)))
		die("%s", why);
	set_die_hook(restore);
	warn_disabled();
	make_snapshot_dir();
	control_setup();
	err = trigger_reset(&ctl);
	if (err)
		die("%s/triggered: reset: %s", ctl.dir, strerror(-err));
	err = ctl_write(&ctl, "tracing_on", "1");
	if (err)
		die("%s/tracing_on: %s", ctl.dir, strerror(-err));
	tracing_started = true;
	return fd;
}

/* ---- a snapshot ------------------------------------------------------------------ */

/*
 * trigger_save()'s writer: this program with --once into @dir, as
 * `ringtrace snapshot` runs it, and its options for chunks.  Its lines go
 * where ours do; it must not speak to systemd as the service.
 */
static int write_snapshot(const char *dir,
			  void *unused __attribute__((unused)))
{
	struct level_name level = level_name(opt.level);
	char workers[16], size[32], *args[20];
	int n = 0, status;
	pid_t pid;

	snprintf(workers, sizeof(workers), "%u", opt.workers);
	snprintf(size, sizeof(size), "%" PRIu64, opt.max_size);
	args[n++] = PROG;
	args[n++] = "--once";
	args[n++] = "--quiet";
	args[n++] = "-o";
	args[n++] = (char *)dir;
	args[n++] = "--level";
	args[n++] = level.s;
	args[n++] = "--workers";
	args[n++] = workers;
	args[n++] = "--max-size";
	args[n++] = size;
	/* No symbol store: its walk of the snapshot would delay the re-arm. */
	args[n++] = "--no-symbols";
	if (opt.debugfs) {
		args[n++] = "--debugfs";
		args[n++] = (char *)opt.debugfs;
	}
	if (msg_service)
		args[n++] = "--service";
	args[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		warn("fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		/* The signals stay blocked: its own signalfd reads them. */
		unsetenv("NOTIFY_SOCKET");
		execv("/proc/self/exe", args);
		fprintf(stderr, PROG ": /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* --max-total over the snapshots (and any other trace) of --root. */
static void retention(void)
{
	int err;

	if (!opt.max_total || !opt.root)
		return;
	/* No trace of ours is running: one being written is locked. */
	err = retention_prune(opt.root, "", opt.max_total, NULL, NULL);
	if (err && err != -ENOSPC)
		warn("--max-total: %s: %s", opt.root, strerror(-err));
}

/* "flight recorder: 2 snapshots in DIR (last NAME), 3 trigger hits, 1 missed" */
static void status_line(char *buf, size_t size)
{
	struct trigger_hit h = { 0 };
	size_t n;

	trigger_read(&ctl, &h);
	n = (size_t)snprintf(buf, size, "flight recorder: %u snapshot%s in %s",
			     snaps.saved, snaps.saved == 1 ? "" : "s", snapdir);
	if (n < size && snaps.saved)
		n += (size_t)snprintf(buf + n, size - n, " (last %s)", snaps.last);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n,
				      ", %" PRIu64 " trigger hit%s, %" PRIu64 " missed",
				      h.hits, h.hits == 1 ? "" : "s", h.missed);
	if (n < size && snaps.failed)
		n += (size_t)snprintf(buf + n, size - n, ", %u failed",
				      snaps.failed);
	if (n < size && snaps.done)
		snprintf(buf + n, size - n,
			 "; --max %u reached: recording, saving no more",
			 opt.max_snapshots);
}

static void status(void)
{
	char line[PATH_MAX + 512];

	memcpy(line, "STATUS=", 7);
	status_line(line + 7, sizeof(line) - 7);
	notify_systemd(line);
}

static void save(const struct trigger_hit *h)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	const char *name;
	int err;

	if (trigger_save(&ctl, h, snapdir, write_snapshot, NULL, dir,
			 sizeof(dir), why, sizeof(why))) {
		snaps.failed++;
		/* Still latched if it failed before the rearm: armed again. */
		err = ctl_write(&ctl, "triggered", "rearm");
		if (err)
			die("%s (and %s/triggered: rearm: %s)", why, ctl.dir,
			    strerror(-err));
		error_line("%s; the trigger is armed again", why);
		status();
		return;
	}
	snaps.saved++;
	name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	snprintf(snaps.last, sizeof(snaps.last), "%s", name);
	report("snapshot %u in %s: %s: %s", snaps.saved, dir, h->event,
	       h->trigger);
	retention();
	if (snaps.saved == opt.max_snapshots) {
		/* No more hits: the conditions in force before, "none". */
		filters_restore(&opt.triggers, &ctl);
		snaps.done = true;
		info("--max %u: no more snapshots; tracing goes on, saving nothing",
		     opt.max_snapshots);
	}
	status();
}

/* ---- the loop ----------------------------------------------------------------------- */

/* True on SIGINT/SIGTERM. */
static bool take_signals(int sigfd)
{
	struct signalfd_siginfo si;
	char line[PATH_MAX + 512];
	bool stop = false;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
			stop = true;
		} else if (si.ssi_signo == SIGUSR1) {
			status_line(line, sizeof(line));
			report("ringtraced: %s", line);
		} else if (si.ssi_signo == SIGHUP) {
			info("SIGHUP: with --trigger nothing is drained, no chunk to close");
		}
	}
	return stop;
}

static void say_recording(void)
{
	char triggers[1024], sub[32] = "?", num[32] = "?";
	size_t n = 0;

	triggers[0] = '\0';
	for (size_t i = 0; i < opt.triggers.n && n < sizeof(triggers); i++)
		n += (size_t)snprintf(triggers + n, sizeof(triggers) - n,
				      "%s'%s'", i ? ", " : "",
				      opt.triggers.f[i].spec);
	ctl_read(&ctl, "subbuf_size", sub, sizeof(sub));
	ctl_read(&ctl, "num_subbufs", num, sizeof(num));
	info("recording in overwrite mode (%s x %s bytes per CPU, not drained): a snapshot in %s at each trigger %s, --after %" PRIu64 " ms%s",
	     num, sub, snapdir, triggers, opt.after_ms,
	     opt.max_snapshots ? ", up to --max" : "");
}

int trigger_main(int sigfd)
{
	uint64_t due = 0, status_at = 0, retention_at, now;
	bool pending = false, stopping = false;
	struct trigger_hit hit;
	int fd, timeout;

	fd = setup();
	retention();
	retention_at = now_ms() + opt.max_total_ms;
	say_recording();
	notify_systemd("READY=1");
	while (!stopping) {
		struct pollfd pfd[2] = {
			{ .fd = sigfd, .events = POLLIN },
			/* Latched until rearmed; none after --max. */
			{ .fd = pending || snaps.done ? -1 : fd, .events = POLLPRI },
		};
		uint64_t next;

		now = now_ms();
		if (now >= status_at) {
			status();
			status_at = now + STATUS_MS;
		}
		if (opt.max_total && now >= retention_at) {
			retention();
			retention_at = now + opt.max_total_ms;
		}
		next = pending && due < status_at ? due : status_at;
		if (opt.max_total && retention_at < next)
			next = retention_at;
		timeout = next <= now ? 0 : next - now > INT_MAX ? INT_MAX :
			  (int)(next - now);
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (pfd[0].revents)
			stopping = take_signals(sigfd);
		if (pfd[1].revents) {
			if (trigger_read(&ctl, &hit))
				die("%s/triggered: %s", ctl.dir, strerror(errno));
			if (hit.hit) {
				pending = true;
				due = now_ms() + opt.after_ms;
				info("trigger: %s: %s (cpu %u): saving in %" PRIu64 " ms",
				     hit.event, hit.trigger, hit.cpu, opt.after_ms);
			}
		}
		if (pending && (stopping || now_ms() >= due)) {
			save(&hit);
			pending = false;
		}
	}

	notify_systemd("STOPPING=1");
	if (!trigger_read(&ctl, &hit) && hit.missed)
		warn("%" PRIu64 " trigger hit%s while a snapshot was waiting or being saved: not saved",
		     hit.missed, hit.missed == 1 ? "" : "s");
	close(fd);
	set_die_hook(NULL);
	restore();
	report("ringtraced: stopped: %u snapshot%s in %s", snaps.saved,
	       snaps.saved == 1 ? "" : "s", snapdir);
	if (snaps.failed) {
		error_line("%u snapshot%s failed (see above)", snaps.failed,
			   snaps.failed == 1 ? "" : "s");
		return 1;
	}
	return 0;
}
