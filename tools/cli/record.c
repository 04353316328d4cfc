// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace record: trace a command, or the whole system, in one command.
 *
 *   check    root; ringtrace.ko (loaded here if needed: the installed one,
 *            else the one `make` built); debugfs (mounted if needed); the
 *            events asked for; the dynamic probes of -e made (they go
 *            when record's open of probe_events closes, however record
 *            ends).  A failure here changes nothing.
 *   save     what it will change -- tracing_on, mode, geometry, enabled
 *            events and stacks (kernel and user), stack depths, filters,
 *            triggers, pid filter, event_fork, cgroup filter, mmap_dump
 *            and mmap_events, the sampler's rate -- as the writes that
 *            put it back, into the
 *            restore file (lib/ctlsave.h), locked: one record at a time.
 *            What a killed record left owed there goes back first.
 *   set      the events (and those that say who did what: sched_switch,
 *            fork, exec, exit and the state dump), geometry, mode, the pid
 *            filter (-p, or -F: the command's pid, following its forks),
 *            the cgroup filter (--cgroup: paths resolved to ids here).
 *   record   with ringtraced as a child: the one drain loop, the same as
 *            the service's.  It turns tracing on; the command, held at a
 *            pipe until then, runs; a status line shows progress.
 *   stop     when the command exits, on a signal (recsig.c), or after
 *            --duration: ringtraced turns tracing off, drains, prints the
 *            per-CPU summary.  Everything saved is put back -- after an
 *            error too -- and record ends as the command did, or by the
 *            signal that stopped it.
 *
 * Signals: recsig.h.  The command gets the mask and dispositions record
 * was given, as if it had been started without ringtrace; a stop signal
 * reaches it once, and recording goes on until it has exited, so that its
 * end is in the trace.  ringtraced, in a process group of its own, is
 * stopped by record -- on every exit path, before the control files are
 * put back -- or, when record is killed outright, by the kernel
 * (PR_SET_PDEATHSIG, daemon.c); it then puts them back itself, from the
 * restore file it was handed (daemon/restore.c).  With --trigger, no
 * ringtraced runs throughout: a guard process does that (start_guard()).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/ringtrace.h>

#include "cgroups.h"
#include "cli.h"
#include "dynprobes.h"
#include "recsig.h"
#include "../../lib/ctlsave.h"
#include "../../lib/filters.h"
#include "../../lib/trigger.h"

/* What record needs for who-did-what, enabled whatever -e says. */
static const char *const attribution[] = {
	"sched_switch", "sched_process_fork", "sched_process_exec",
	"sched_process_exit", "task_rename", "ringtrace_statedump_task",
	"ringtrace_statedump_cpu",
};

#define DEFAULT_EVENTS	"sched,syscalls"
#define MAX_PIDS	256
/* RTR_CGROUP_FILTER_MAX in module/probes.h */
#define MAX_CGROUPS	64

/* What record reads before it changes anything (ctlsave.h: what goes back). */
struct saved {
	char tracing_on[8], mode[16], subbuf_size[32], num_subbufs[32];
	char *set_event, *set_event_pid, event_fork[8];
	bool have_event_fork;
	char *set_event_stack, stack_depth[16];	/* NULL: a module without */
	char *set_event_ustack, ustack_depth[16];	/* the same */
	char ustack_mode[16], ustack_size[16];	/* "": a module without */
	char *set_event_cgroup;			/* NULL: a module without */
	char mmap_dump[8], mmap_events[8];	/* with --mmap */
	char sample_hz[16];			/* with --sample */
};

static struct {
	const char *events, *cpus, *mode, *outdir, *level, *stack, *ustack;
	const char *ustack_mode;		/* "fp", "copy", NULL: not given */
	uint64_t buffer_size, duration_ms, after_ms;
	unsigned int stack_depth, ustack_depth, max_snapshots, start_timeout_s;
	unsigned int sample_hz;			/* --sample, 0: none */
	unsigned int ustack_size;		/* --ustack-size, 0: not given */
	int pids[MAX_PIDS];
	unsigned int nr_pids;
	const char *cgroups[MAX_CGROUPS];	/* --cgroup, as given */
	uint64_t cgroup_ids[MAX_CGROUPS];	/* and resolved */
	unsigned int nr_cgroups;
	bool follow, verbose, live, mmap;
	const char *symbols_max;		/* --symbols-max, for ringtraced */
	bool no_symbols;			/* --no-symbols, for ringtraced */
	char **cmd;
} opt;

/* ringtraced's flush interval with --live: a packet on disk every 100 ms. */
#define LIVE_FLUSH_MS	"100"

/*
 * How long ringtraced has to turn tracing on (its buffers mapped, its
 * threads started) before record gives up; $RINGTRACE_START_TIMEOUT, in
 * seconds, replaces it (the tests shorten it, a slow machine may need more).
 */
#define START_TIMEOUT_S	"30"

static struct {
	pid_t cmd;		/* the command, until reaped */
	int go;			/* holds the command until tracing is on */
	bool cmd_ran;		/* let go, and reaped: cmd_status is its */
	int cmd_status;
	pid_t daemon;		/* ringtraced, until reaped */
	int daemon_status;
	pid_t live;		/* --live: report --follow of the trace */
	pid_t guard;		/* --trigger: puts the tracer back if we are killed */
	int guard_fd;		/* its pipe: EOF when we and our ringtraceds are gone */
} run_state = { .go = -1, .guard_fd = -1 };

static struct ctl ctl;
static struct saved saved;
/* What goes back, in order; and the restore file, locked (ctlsave.h). */
static struct ctlsave undo;
static int undo_fd = -1;
static struct dynprobes probes = { .fd = -1 };
static struct filters filters = { .file = "filter", .option = "--filter" };
static struct filters triggers = { .file = "trigger", .option = "--trigger" };
static bool saved_valid, loaded_here, mounted_here;
/*
 * available_events, then the events that cannot be switched (the marker):
 * -e may name them, set_event never does.
 */
static char **names;
static size_t nr_names, nr_switchable;

/* ---- state: save, restore ---------------------------------------------------- */

static void save_state(void)
{
	int err;

	err = ctl_read(&ctl, "tracing_on", saved.tracing_on,
		       sizeof(saved.tracing_on));
	if (err >= 0)
		err = ctl_read(&ctl, "mode", saved.mode, sizeof(saved.mode));
	if (err >= 0)
		err = ctl_read(&ctl, "subbuf_size", saved.subbuf_size,
			       sizeof(saved.subbuf_size));
	if (err >= 0)
		err = ctl_read(&ctl, "num_subbufs", saved.num_subbufs,
			       sizeof(saved.num_subbufs));
	if (err < 0)
		die("%s: %s", ctl.dir, strerror(-err));
	saved.set_event = ctl_read_alloc(&ctl, "set_event");
	saved.set_event_pid = ctl_read_alloc(&ctl, "set_event_pid");
	if (!saved.set_event || !saved.set_event_pid)
		die("%s: %s", ctl.dir, strerror(errno));
	saved.have_event_fork = ctl_read(&ctl, "event_fork", saved.event_fork,
					 sizeof(saved.event_fork)) >= 0;
	saved.set_event_stack = ctl_read_alloc(&ctl, "set_event_stack");
	saved.set_event_cgroup = ctl_read_alloc(&ctl, "set_event_cgroup");
	if (saved.set_event_stack &&
	    (err = ctl_read(&ctl, "stack_depth", saved.stack_depth,
			    sizeof(saved.stack_depth))) < 0)
		die("%s/stack_depth: %s", ctl.dir, strerror(-err));
	saved.set_event_ustack = ctl_read_alloc(&ctl, "set_event_ustack");
	if (saved.set_event_ustack &&
	    (err = ctl_read(&ctl, "ustack_depth", saved.ustack_depth,
			    sizeof(saved.ustack_depth))) < 0)
		die("%s/ustack_depth: %s", ctl.dir, strerror(-err));
	if (saved.set_event_ustack &&
	    ctl_read(&ctl, "ustack_mode", saved.ustack_mode,
		     sizeof(saved.ustack_mode)) >= 0 &&
	    (err = ctl_read(&ctl, "ustack_size", saved.ustack_size,
			    sizeof(saved.ustack_size))) < 0)
		die("%s/ustack_size: %s", ctl.dir, strerror(-err));
	if (opt.mmap &&
	    ((err = ctl_read(&ctl, "mmap_dump", saved.mmap_dump,
			     sizeof(saved.mmap_dump))) < 0 ||
	     (err = ctl_read(&ctl, "mmap_events", saved.mmap_events,
			     sizeof(saved.mmap_events))) < 0))
		die("%s/mmap_*: %s", ctl.dir, strerror(-err));
	if (opt.sample_hz &&
	    (err = ctl_read(&ctl, "sample_hz", saved.sample_hz,
			    sizeof(saved.sample_hz))) < 0)
		die("%s/sample_hz: %s", ctl.dir, strerror(-err));
}

/* "name" on, "!name" off, for every available event: set_event's text. */
static char *event_set_text(const bool *on)
{
	size_t len = 1;
	char *buf, *p;

	for (size_t i = 0; i < nr_switchable; i++)
		len += strlen(names[i]) + 2;
	buf = malloc(len);
	if (!buf)
		die("out of memory");
	*buf = '\0';
	p = buf;
	for (size_t i = 0; i < nr_switchable; i++)
		p += sprintf(p, "%s%s ", on[i] ? "" : "!", names[i]);
	return buf;
}

static int write_event_set(const char *file, const bool *on)
{
	char *text = event_set_text(on);
	int err = ctl_write(&ctl, file, text);

	free(text);
	return err;
}

static int write_events(const bool *on)
{
	return write_event_set("set_event", on);
}

/* @file as it was: the events of @text (its lines) on, the others off. */
static void undo_event_set(const char *file, const char *text)
{
	bool *on = calloc(nr_names + 1, sizeof(*on));
	char *value;

	if (!on)
		die("out of memory");
	for (size_t i = 0; i < nr_names; i++)
		on[i] = has_line(text, names[i]);
	value = event_set_text(on);
	ctlsave_add(&undo, file, value);
	free(value);
	free(on);
}

static void undo_filters(const struct filters *fs)
{
	char path[256];

	for (size_t i = 0; i < fs->n; i++) {
		/*
		 * A probe's goes with the probe, which goes when record's open
		 * of probe_events closes, killed too (no child keeps it open).
		 */
		if (!fs->f[i].saved || fs->f[i].probe)
			continue;
		snprintf(path, sizeof(path), "events/%s/%s", fs->f[i].event,
			 fs->file);
		ctlsave_add(&undo, path, fs->f[i].saved);
	}
}

/*
 * What goes back at the end, in this order: tracing off first (nothing is
 * written meanwhile), the sampler's rate, the filters and triggers, the
 * events and their stacks, event_fork, the stack depths, the mappings'
 * switches, the pid and cgroup filters, then
 * the mode and the geometry (which need tracing off; the count through 2,
 * the smaller intermediate geometry).  Only what record changes.  Into
 * the restore file before anything is changed: if record is killed, its
 * ringtraced (or the next start) writes it back.
 */
static void plan_restore(void)
{
	char why[512];
	int err;

	if (filters_save(&filters, &ctl, why, sizeof(why)) ||
	    filters_save(&triggers, &ctl, why, sizeof(why)))
		die("%s", why);
	undo.pid = getpid();
	ctlsave_add(&undo, "tracing_on", "0");
	if (opt.sample_hz)
		ctlsave_add(&undo, "sample_hz", saved.sample_hz);
	undo_filters(&filters);
	undo_filters(&triggers);
	undo_event_set("set_event", saved.set_event);
	if (saved.set_event_stack)
		undo_event_set("set_event_stack", saved.set_event_stack);
	if (saved.set_event_ustack)
		undo_event_set("set_event_ustack", saved.set_event_ustack);
	if (opt.follow && saved.have_event_fork)
		ctlsave_add(&undo, "event_fork", saved.event_fork);
	if ((opt.stack || opt.sample_hz) && saved.set_event_stack)
		ctlsave_add(&undo, "stack_depth", saved.stack_depth);
	if (opt.ustack && saved.set_event_ustack)
		ctlsave_add(&undo, "ustack_depth", saved.ustack_depth);
	if (opt.mmap) {
		ctlsave_add(&undo, "mmap_events", saved.mmap_events);
		ctlsave_add(&undo, "mmap_dump", saved.mmap_dump);
	}
	/* A blank write clears the filter. */
	ctlsave_add(&undo, "set_event_pid", *saved.set_event_pid ?
		    saved.set_event_pid : " ");
	if (saved.set_event_cgroup)
		ctlsave_add(&undo, "set_event_cgroup",
			    *saved.set_event_cgroup ? saved.set_event_cgroup : " ");
	if (opt.mode)
		ctlsave_add(&undo, "mode", saved.mode);
	if (opt.buffer_size) {
		ctlsave_add(&undo, "num_subbufs", "2");
		ctlsave_add(&undo, "subbuf_size", saved.subbuf_size);
		ctlsave_add(&undo, "num_subbufs", saved.num_subbufs);
	}
	/* After the geometry: ustack_size is bounded by subbuf_size. */
	if (opt.ustack && *saved.ustack_mode) {
		ctlsave_add(&undo, "ustack_mode", saved.ustack_mode);
		ctlsave_add(&undo, "ustack_size", saved.ustack_size);
	}
	err = undo_fd >= 0 ? ctlsave_store(undo_fd, &ctl, &undo) : 0;
	if (err)
		die("%s: %s", CTLSAVE_PATH, strerror(-err));
	saved_valid = true;
}

/*
 * Everything set: each file as it reads now goes into the restore file,
 * so that after our death only those still as we set them go back (what
 * someone set by hand since stays).  Failing, they all go back.
 */
static void mark_set(void)
{
	int err;

	if (undo_fd < 0)
		return;
	err = ctlsave_mark_set(undo_fd, &ctl, &undo);
	if (err)
		warn("%s: %s (after a SIGKILL every file goes back, changed since or not)",
		     CTLSAVE_PATH, strerror(-err));
}

/* Everything saved goes back; each failure is a warning, not an exit. */
static void restore_state(void)
{
	if (!saved_valid)
		return;
	saved_valid = false;
	ctlsave_apply(&ctl, &undo);
	/* Nothing is owed any more, to ringtraced or to the next start. */
	if (undo_fd >= 0)
		ctlsave_clear(undo_fd);
}

/*
 * The restore file, locked for the run: one record at a time.  What a
 * killed one left in it goes back first.  One that is not ours, or that
 * cannot be read, stops us: we would write over it.  Where none can be
 * made (a read-only or missing /run), record goes on without: nothing
 * puts the tracer back after a SIGKILL then.
 */
static void lock_restore_file(void)
{
	char why[PATH_MAX + 128];
	struct ctlsave old;
	pid_t owner;
	int err;

	undo_fd = ctlsave_lock(true, &owner, why, sizeof(why));
	if (undo_fd == -EWOULDBLOCK && owner)
		die("another ringtrace record (pid %d), or the ringtraced it started, is running: one at a time",
		    (int)owner);
	if (undo_fd == -EWOULDBLOCK)
		die("another ringtrace record is starting: one at a time");
	if (undo_fd == -EROFS || undo_fd == -ENOENT || undo_fd == -EACCES ||
	    undo_fd == -ENOSPC || undo_fd == -EDQUOT) {
		warn("no restore after SIGKILL: %s", why);
		undo_fd = -1;
		return;
	}
	if (undo_fd < 0)
		die("%s%s", why, undo_fd == -EPERM ?
		    ": not to be trusted with what goes back as root" : "");
	err = ctlsave_load(undo_fd, &ctl, &old);
	if (err < 0)
		die("%s: %s", CTLSAVE_PATH, err == -EPROTO ?
		    "not a restore file of this ringtrace: left as it is (remove it to record)" :
		    strerror(-err));
	ctlsave_free(&old);
	ctlsave_pay(undo_fd, &ctl);
}

/*
 * --trigger: no ringtraced outlives record to put the tracer back if
 * record is killed; a guard does.  A child in a process group of its own
 * (what signals record's group or the terminal's does not reach it), with
 * record's signals blocked, that holds the restore file's lock and waits
 * for EOF on a pipe whose other end record and each ringtraced --once it
 * starts hold (daemon_keep_fd()): then it writes back what the file still
 * owes -- nothing, when record ended by itself.
 */
static void start_guard(void)
{
	int p[2], null;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		set_die_hook(NULL);
		recsig_close();
		close(p[1]);
		/* The probes go with record's open of probe_events alone. */
		if (probes.fd >= 0)
			close(probes.fd);
		setpgid(0, 0);
		/* Not found by pkill -f 'ringtrace record' (proctitle.c). */
		proc_title("rt-guard");
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		/*
		 * Its notes go to record's stderr, a terminal maybe, whose
		 * background job it is: `stty tostop` would stop it there.
		 */
		signal(SIGTTOU, SIG_IGN);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(ctlsave_pay(undo_fd, &ctl) < 0);
	}
	close(p[0]);
	run_state.guard = pid;
	run_state.guard_fd = p[1];
	daemon_keep_fd(p[1]);
}

/* Record put the tracer back itself: the guard finds nothing owed. */
static void end_guard(void)
{
	if (run_state.guard <= 0)
		return;
	close(run_state.guard_fd);
	run_state.guard_fd = -1;
	while (waitpid(run_state.guard, NULL, 0) < 0 && errno == EINTR)
		;
	run_state.guard = 0;
}

static void drop_held_cmd(void);
static void stop_daemon(bool now);
static bool end_live(void);

/*
 * die(): a command not yet let go ends; ringtraced stops and is reaped
 * (tracing off, its files finished); then the tracer is put back as it
 * was, and what this run itself did.  A command already running is left
 * to run, as it would without ringtrace.
 */
static void cleanup(void)
{
	fputs("\r\033[K", stderr);
	drop_held_cmd();
	stop_daemon(false);
	end_live();
	dynprobes_remove(&probes);
	restore_state();
	end_guard();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
	if (run_state.cmd > 0)
		warn("%s (pid %d) goes on, no longer traced", opt.cmd[0],
		     (int)run_state.cmd);
}

/* A failure before anything was changed but the module load: undo it. */
__attribute__((noreturn, format(printf, 1, 2)))
static void refuse(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Nothing owed: what filters_apply() wrote it put back itself. */
	if (undo_fd >= 0)
		ctlsave_clear(undo_fd);
	if (loaded_here)
		ctl_unload_module();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
	usage_error("%s", line);
}

/* ---- setup ---------------------------------------------------------------------- */

static void read_names(void)
{
	char *text = ctl_read_alloc(&ctl, "available_events"), *line, *save = NULL;

	if (!text)
		die("%s/available_events: %s", ctl.dir, strerror(errno));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		names = realloc(names, (nr_names + 1) * sizeof(*names));
		if (!names || !(names[nr_names] = strdup(sp + 1)))
			die("out of memory");
		nr_names++;
	}
	free(text);
	nr_switchable = nr_names;
	names = realloc(names, (nr_names + 1) * sizeof(*names));
	if (!names || !(names[nr_names++] = strdup("ringtrace_marker")))
		die("out of memory");
}

/* The events to enable: -e, plus attribution's; refuses unknown names. */
static bool *choose_events(void)
{
	bool *on = calloc(nr_names + 1, sizeof(*on));
	char why[512], *rest;

	if (!on)
		die("out of memory");
	/* kprobe:, kretprobe: and uprobe:...: made by dynprobes_add() in run(). */
	rest = dynprobes_split(&probes, opt.events, why, sizeof(why));
	if (!rest)
		refuse("%s", why);
	for (size_t i = 0; i < nr_names; i++)
		for (int a = 0; a < ARRAY_SIZE(attribution); a++)
			if (!strcmp(names[i], attribution[a]))
				on[i] = true;
	if (select_events(rest, (const char *const *)names, nr_names, on,
			  why, sizeof(why)))
		refuse("%s", why);
	free(rest);
	return on;
}

/*
 * --stack (@list, kernel stacks: @user false) or --ustack (user stacks):
 * which events carry that stack, enabled too.  Only tracepoints' events
 * can: the marker and the state dump are written by ringtrace itself,
 * their stack would be its own.  --ustack also takes probes of -e (the
 * probe is made with its option, dynprobes_ustack()).
 */
static bool *choose_stacks(bool *on, const char *list, bool user)
{
	const char *opt_name = user ? "--ustack" : "--stack";
	const char *depth = user ? "ustack_depth" : "stack_depth";
	bool *st = calloc(nr_names + 1, sizeof(*st));
	char why[512], probe[8], *rest = NULL;

	if (!st)
		die("out of memory");
	if (!list)
		return st;
	if (ctl_read(&ctl, depth, probe, sizeof(probe)) < 0)
		refuse("%s: this ringtrace.ko records no %s stacks (%s has no %s)",
		       opt_name, user ? "user" : "kernel", ctl.dir, depth);
	if (user) {
		rest = dynprobes_ustack(&probes, list, why, sizeof(why));
		if (!rest)
			refuse("%s", why);
		list = rest;
	}
	if (*list && select_events(list, (const char *const *)names, nr_names,
				   st, why, sizeof(why)))
		refuse("%s: %s", opt_name, why);
	free(rest);
	for (size_t i = 0; i < nr_names; i++) {
		if (st[i] && (i >= nr_switchable ||
			      !strncmp(names[i], "ringtrace_", 10)))
			refuse("%s: %s cannot carry a stack (ringtrace writes it, no tracepoint does)",
			       opt_name, names[i]);
		on[i] |= st[i];
		if (st[i] && user && opt.ustack_mode && !strcmp(opt.ustack_mode, "copy") &&
		    (!strcmp(names[i], "sched_switch") ||
		     !strncmp(names[i], "syscall_", 8)))
			warn("--ustack-mode copy on %s: each event copies up to %u bytes of stack, a busy system fills the buffer and loses events (raise -b, or lower --ustack-size)",
			     names[i], opt.ustack_size ?:
			     RINGTRACE_USTACK_COPY_DEFAULT);
	}
	if (user && opt.ustack_mode &&
	    ctl_read(&ctl, "ustack_mode", probe, sizeof(probe)) < 0)
		refuse("--ustack-mode: this ringtrace.ko only walks frame pointers (%s has no ustack_mode)",
		       ctl.dir);
	return st;
}

/* --mmap: a module that writes user_mmap. */
static void check_mmap(void)
{
	char probe[8];

	if (opt.mmap && ctl_read(&ctl, "mmap_events", probe, sizeof(probe)) < 0)
		refuse("--mmap: this ringtrace.ko records no mappings (%s has no mmap_events)",
		       ctl.dir);
}

/*
 * --mmap: the state dump's mappings, and the later ones.  A kernel
 * without kprobes has no hook for the later ones (-EOPNOTSUPP): the
 * recording goes on with the dump's.
 */
static void apply_mmap(void)
{
	int err;

	if (!opt.mmap)
		return;
	err = ctl_write(&ctl, "mmap_dump", "1");
	if (err)
		die("%s/mmap_dump: %s", ctl.dir, strerror(-err));
	err = ctl_write(&ctl, "mmap_events", "1");
	if (err == -EOPNOTSUPP)
		warn("--mmap: mappings after the start are not recorded on this kernel (no kprobes): only those of the state dump");
	else if (err)
		die("%s/mmap_events: %s", ctl.dir, strerror(-err));
}

/*
 * -b SIZE per CPU: at least 16 sub-buffers of a power of two, at least a
 * page each.  Sub-buffers grow to the module's default 64 KiB first, then
 * their number (so -b 4M is the default 64 x 64 KiB), then their size
 * again once there are the most the module takes.
 */
static void geometry_for(uint64_t size, char *sb, size_t sbl, char *nb, size_t nbl)
{
	uint64_t sub = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned int num = 16;

	while (sub * 2 * num <= size && sub < (64ULL << 10))
		sub *= 2;
	while (sub * num * 2 <= size && num < 4096)
		num *= 2;
	while (sub * 2 * num <= size && sub < (64ULL << 20))
		sub *= 2;
	snprintf(sb, sbl, "%" PRIu64, sub);
	snprintf(nb, nbl, "%u", num);
}

/*
 * --cgroup's ids (resolved by check_cgroups()), or none: a filter left
 * by someone else does not scope this recording.  The module takes the
 * set whole or refuses it (a cgroup removed since: -ENOENT).
 */
static void apply_cgroups(void)
{
	char ids[MAX_CGROUPS * 21 + 2] = " ";
	size_t used = 0;
	int err;

	if (!saved.set_event_cgroup)
		return;
	for (unsigned int i = 0; i < opt.nr_cgroups; i++)
		used += (size_t)snprintf(ids + used, sizeof(ids) - used,
					 "%" PRIu64 " ", opt.cgroup_ids[i]);
	err = ctl_write(&ctl, "set_event_cgroup", ids);
	if (err)
		die("--cgroup %s: %s/set_event_cgroup refused it: %s",
		    opt.nr_cgroups == 1 ? opt.cgroups[0] : "...", ctl.dir,
		    strerror(-err));
}

/* --sample: a module with the sampler. */
static void check_sampler(void)
{
	char probe[16];

	if (opt.sample_hz && ctl_read(&ctl, "sample_hz", probe, sizeof(probe)) < 0)
		refuse("--sample: this ringtrace.ko has no sampler (%s has no sample_hz)",
		       ctl.dir);
}

/* --cgroup: each a cgroup v2 directory here, and a module that filters. */
static void check_cgroups(void)
{
	char path[PATH_MAX], why[PATH_MAX + 256], probe[8];

	for (unsigned int i = 0; i < opt.nr_cgroups; i++)
		if (cgroup_resolve(opt.cgroups[i], path, &opt.cgroup_ids[i], why,
				   sizeof(why)))
			refuse("%s", why);
	if (opt.nr_cgroups &&
	    ctl_read(&ctl, "set_event_cgroup", probe, sizeof(probe)) < 0)
		refuse("--cgroup: this ringtrace.ko has no cgroup filter (%s has no set_event_cgroup)",
		       ctl.dir);
}

/*
 * --ustack-mode and --ustack-size, once the geometry is set (a copy may
 * take at most a quarter of a sub-buffer): fp unless copy is asked for.
 */
static void apply_ustack_mode(void)
{
	const char *mode = opt.ustack_mode ?: "fp";
	char sb[16];
	int err;

	if (!strcmp(mode, "copy")) {
		snprintf(sb, sizeof(sb), "%u", opt.ustack_size ?:
			 RINGTRACE_USTACK_COPY_DEFAULT);
		err = ctl_write(&ctl, "ustack_size", sb);
		if (err == -EINVAL)
			die("--ustack-size %s: more than a quarter of a sub-buffer (%s/subbuf_size): raise -b",
			    sb, ctl.dir);
		if (err)
			die("%s/ustack_size: %s", ctl.dir, strerror(-err));
	}
	err = ctl_write(&ctl, "ustack_mode", mode);
	if (err)
		die("%s/ustack_mode: %s", ctl.dir, strerror(-err));
}

static void apply(const bool *on, const bool *stack, const bool *ustack,
		  pid_t child)
{
	char pids[MAX_PIDS * 12 + 16] = "", sb[32], nb[32];
	size_t used = 0;
	int err;

	err = write_events(on);
	if (err)
		die("%s/set_event: %s", ctl.dir, strerror(-err));
	if (saved.set_event_stack) {
		if (opt.stack || opt.sample_hz) {
			snprintf(sb, sizeof(sb), "%u", opt.stack_depth ?:
				 RINGTRACE_STACK_DEFAULT_DEPTH);
			err = ctl_write(&ctl, "stack_depth", sb);
			if (err)
				die("%s/stack_depth: %s", ctl.dir, strerror(-err));
		}
		err = write_event_set("set_event_stack", stack);
		if (err)
			die("%s/set_event_stack: %s", ctl.dir, strerror(-err));
	}
	if (saved.set_event_ustack) {
		if (opt.ustack) {
			snprintf(sb, sizeof(sb), "%u", opt.ustack_depth ?:
				 RINGTRACE_USTACK_DEFAULT_DEPTH);
			err = ctl_write(&ctl, "ustack_depth", sb);
			if (err)
				die("%s/ustack_depth: %s", ctl.dir, strerror(-err));
		}
		err = write_event_set("set_event_ustack", ustack);
		if (err)
			die("%s/set_event_ustack: %s", ctl.dir, strerror(-err));
	}
	if (opt.mode && (err = ctl_write(&ctl, "mode", opt.mode)))
		die("%s/mode: %s", ctl.dir, strerror(-err));
	if (opt.buffer_size) {
		geometry_for(opt.buffer_size, sb, sizeof(sb), nb, sizeof(nb));
		/* Count first: the smaller intermediate geometry. */
		err = ctl_write(&ctl, "num_subbufs", "2");
		if (!err)
			err = ctl_write(&ctl, "subbuf_size", sb);
		if (!err)
			err = ctl_write(&ctl, "num_subbufs", nb);
		if (err)
			die("-b: %s x %s bytes per CPU: %s%s", nb, sb, strerror(-err),
			    err == -ENOMEM ? " (more than this machine has)" : "");
	}
	if (opt.ustack && *saved.ustack_mode)
		apply_ustack_mode();
	for (unsigned int i = 0; i < opt.nr_pids; i++)
		used += (size_t)snprintf(pids + used, sizeof(pids) - used, "%d ",
					 opt.pids[i]);
	if (child > 0)
		used += (size_t)snprintf(pids + used, sizeof(pids) - used, "%d ",
					 (int)child);
	if (opt.follow && (err = ctl_write(&ctl, "event_fork", "1")))
		die("%s/event_fork: %s", ctl.dir, strerror(-err));
	err = ctl_write(&ctl, "set_event_pid", used ? pids : " ");
	if (err)
		die("%s/set_event_pid: %s", ctl.dir, strerror(-err));
	apply_cgroups();
	apply_mmap();
	if (opt.sample_hz) {
		snprintf(sb, sizeof(sb), "%u", opt.sample_hz);
		err = ctl_write(&ctl, "sample_hz", sb);
		if (err)
			die("--sample: %s/sample_hz: %s", ctl.dir, strerror(-err));
	}
}

/* ---- the traced command and ringtraced ------------------------------------------- */

/*
 * Forked now, held until release_cmd() (a socket: a command killed while
 * held is an EPIPE there, never a SIGPIPE of ours); an exec failure comes
 * back through @err (close-on-exec, so EOF means the exec worked).
 */
static void spawn(int *err)
{
	int gofd[2], errfd[2];
	pid_t pid;
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gofd) ||
	    pipe2(errfd, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		/* As if started without ringtrace. */
		recsig_child();
		close(gofd[1]);
		close(errfd[0]);
		if (read(gofd[0], &c, 1) != 1)
			_exit(126);
		execvp(opt.cmd[0], opt.cmd);
		c = (char)errno;
		if (write(errfd[1], &c, 1) < 0)
			_exit(127);
		_exit(127);
	}
	close(gofd[0]);
	close(errfd[1]);
	run_state.cmd = pid;
	run_state.go = gofd[1];
	*err = errfd[0];
}

/* A command never let go (an error before tracing was on) ends unrun. */
static void drop_held_cmd(void)
{
	if (run_state.go < 0)
		return;
	close(run_state.go);
	run_state.go = -1;
	if (run_state.cmd > 0)
		waitpid(run_state.cmd, NULL, 0);
	run_state.cmd = 0;
}

/* Reaps whichever child has exited; true if either did. */
static bool reap(void)
{
	bool any = false;

	if (run_state.cmd > 0 &&
	    waitpid(run_state.cmd, &run_state.cmd_status, WNOHANG) == run_state.cmd) {
		run_state.cmd = 0;
		/* Let go: its status is the one record ends with. */
		run_state.cmd_ran = run_state.go < 0;
		any = true;
	}
	if (run_state.daemon > 0 &&
	    waitpid(run_state.daemon, &run_state.daemon_status, WNOHANG) ==
	    run_state.daemon) {
		run_state.daemon = 0;
		any = true;
	}
	return any;
}

/*
 * Waits up to @ms for a signal or a child's exit; returns the signals
 * that ask record to stop (recsig.h), having passed on to the running
 * command those it did not get itself.
 */
static unsigned int wait_events(int ms)
{
	struct pollfd pfd[2];

	recsig_pollfds(pfd);
	if (poll(pfd, 2, recsig_timeout(ms)) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	return recsig_take(run_state.go < 0 ? run_state.cmd : 0);
}

/*
 * Stops ringtraced and reaps it: it turns tracing off, drains, compresses
 * what is still stored (progress on the terminal) and prints the summary.
 * A stop signal meanwhile hurries it: the rest is left uncompressed, as it
 * is at once when a signal of record's own ends it.  @now: it never
 * started tracing, kill it outright.
 */
static void stop_daemon(bool now)
{
	if (run_state.daemon <= 0)
		return;
	if (now)
		kill(run_state.daemon, SIGKILL);
	else
		daemon_stop(run_state.daemon);
	if (!now && recsig_own())
		daemon_hurry(run_state.daemon);
	while (run_state.daemon > 0) {
		reap();
		if (run_state.daemon > 0 && wait_events(200))
			daemon_hurry(run_state.daemon);
	}
}

/*
 * The recording is over: after it, the command runs on to its end, as it
 * would without ringtrace; its status is record's.  Stop signals are
 * passed on meanwhile (wait_events()); one of record's own ends the wait,
 * the command running on.
 */
static void wait_cmd(void)
{
	if (run_state.cmd <= 0 || recsig_own())
		return;
	info("waiting for %s (pid %d) to exit", opt.cmd[0], (int)run_state.cmd);
	while (run_state.cmd > 0 && !recsig_own()) {
		reap();
		if (run_state.cmd > 0)
			wait_events(200);
	}
}

/* ---- status line ------------------------------------------------------------------ */

struct cpu_count {
	unsigned int cpu;
	uint64_t written, lost;
};

/* Per CPU written and lost, from the stats file; the number of CPUs. */
static unsigned int read_counts(struct cpu_count *c, unsigned int max)
{
	char *text = ctl_read_alloc(&ctl, "stats"), *line, *save = NULL;
	unsigned int n = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v;
		char *tok, *save2 = NULL;

		tok = strtok_r(line, " ", &save2);
		if (!tok || sscanf(tok, "cpu%u", &c[n].cpu) != 1)
			continue;
		c[n].written = c[n].lost = 0;
		while ((tok = strtok_r(NULL, " ", &save2))) {
			if (sscanf(tok, "written=%llu", &v) == 1)
				c[n].written = v;
			else if (!strncmp(tok, "lost_", 5) &&
				 sscanf(strchr(tok, '=') + 1, "%llu", &v) == 1)
				c[n].lost += v;
		}
		n++;
	}
	free(text);
	return n;
}

static uint64_t dir_bytes(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	struct stat st;
	uint64_t sum = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!stat(path, &st) && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	return sum;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(char *buf, size_t size, double v, const char *unit)
{
	static const char *const k[] = { "", "k", "M", "G", "T" };
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, size, "%.1f %s%s", v, k[i], unit);
}

static void status(double start, struct cpu_count *prev, unsigned int *nprev,
		   double *tprev)
{
	struct cpu_count cur[256];
	unsigned int n = read_counts(cur, ARRAY_SIZE(cur));
	double t = now_s(), dt = t - *tprev;
	uint64_t w = 0, pw = 0, lost = 0;
	char rate[32], bytes[32], line[1024];
	size_t used;

	for (unsigned int i = 0; i < n; i++) {
		w += cur[i].written;
		lost += cur[i].lost;
	}
	for (unsigned int i = 0; i < *nprev; i++)
		pw += prev[i].written;
	human(rate, sizeof(rate), dt > 0 && w >= pw ? (double)(w - pw) / dt : 0,
	      "events/s");
	human(bytes, sizeof(bytes), (double)dir_bytes(opt.outdir), "B");
	used = (size_t)snprintf(line, sizeof(line),
				"ringtrace: %.0f s, %s, %s written, %" PRIu64 " lost",
				t - start, rate, bytes, lost);
	for (unsigned int i = 0; opt.verbose && i < n && used < sizeof(line) - 64; i++) {
		uint64_t p = 0;

		for (unsigned int j = 0; j < *nprev; j++)
			if (prev[j].cpu == cur[i].cpu)
				p = prev[j].written;
		human(rate, sizeof(rate), dt > 0 && cur[i].written >= p ?
		      (double)(cur[i].written - p) / dt : 0, "/s");
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 " | cpu%u %s lost %" PRIu64, cur[i].cpu,
					 rate, cur[i].lost);
	}
	fprintf(stderr, "\r\033[K%s", line);
	memcpy(prev, cur, n * sizeof(*cur));
	*nprev = n;
	*tprev = t;
}

/* ---- the command ------------------------------------------------------------------- */

/* $RINGTRACE_START_TIMEOUT, else START_TIMEOUT_S: through one parser. */
static void parse_start_timeout(void)
{
	const char *s = getenv("RINGTRACE_START_TIMEOUT");
	int v;

	if (!s)
		s = START_TIMEOUT_S;
	if (!parse_int(s, &v) || v < 1 || v > 3600)
		usage_error("RINGTRACE_START_TIMEOUT: '%s' is not a number of seconds from 1 to 3600", s);
	opt.start_timeout_s = (unsigned int)v;
}

static void parse(int argc, char **argv)
{
	enum {
		O_DURATION = 256, O_LEVEL, O_STACK, O_STACK_DEPTH, O_FILTER,
		O_LIVE, O_CGROUP, O_TRIGGER, O_AFTER, O_MAX, O_USTACK,
		O_USTACK_DEPTH, O_USTACK_MODE, O_USTACK_SIZE, O_MMAP, O_SAMPLE,
		O_SYMBOLS_MAX, O_NO_SYMBOLS,
	};
	static const struct option lopts[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "pid", required_argument, NULL, 'p' },
		{ "follow", no_argument, NULL, 'F' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "level", required_argument, NULL, O_LEVEL },
		{ "stack", required_argument, NULL, O_STACK },
		{ "stack-depth", required_argument, NULL, O_STACK_DEPTH },
		{ "ustack", required_argument, NULL, O_USTACK },
		{ "ustack-depth", required_argument, NULL, O_USTACK_DEPTH },
		{ "ustack-mode", required_argument, NULL, O_USTACK_MODE },
		{ "ustack-size", required_argument, NULL, O_USTACK_SIZE },
		{ "sample", required_argument, NULL, O_SAMPLE },
		{ "filter", required_argument, NULL, O_FILTER },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "trigger", required_argument, NULL, O_TRIGGER },
		{ "after", required_argument, NULL, O_AFTER },
		{ "max", required_argument, NULL, O_MAX },
		{ "verbose", no_argument, NULL, 'v' },
		{ "live", no_argument, NULL, O_LIVE },
		{ "mmap", no_argument, NULL, O_MMAP },
		{ "symbols-max", required_argument, NULL, O_SYMBOLS_MAX },
		{ "no-symbols", no_argument, NULL, O_NO_SYMBOLS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char why[512];
	bool after = false;
	uint64_t size;
	int c, pid;

	opt.events = DEFAULT_EVENTS;
	while ((c = cmd_getopt(argc, argv, "+e:p:Fc:b:m:o:vh", lopts)) != -1) {
		switch (c) {
		case 'e':
			opt.events = optarg;
			break;
		case 'p':
			if (!parse_int(optarg, &pid) || pid <= 0)
				usage_error("-p: '%s' is not a pid", optarg);
			if (opt.nr_pids == MAX_PIDS)
				usage_error("-p: at most %d pids", MAX_PIDS);
			opt.pids[opt.nr_pids++] = pid;
			break;
		case 'F':
			opt.follow = true;
			break;
		case 'c':
			if (!parse_cpu_list(optarg, NULL, NULL))
				usage_error("-c: '%s' is not a CPU list like 0-3,8", optarg);
			opt.cpus = optarg;
			break;
		case 'b':
			if (!parse_size(optarg, &opt.buffer_size) ||
			    opt.buffer_size < 2 * (uint64_t)sysconf(_SC_PAGESIZE))
				usage_error("-b: '%s' is not a size of at least 8K", optarg);
			break;
		case 'm':
			if (strcmp(optarg, "discard") && strcmp(optarg, "overwrite"))
				usage_error("-m: discard or overwrite, not '%s'", optarg);
			opt.mode = optarg;
			break;
		case 'o':
			opt.outdir = optarg;
			break;
		case O_DURATION:
			if (!parse_duration_ms(optarg, &opt.duration_ms) ||
			    !opt.duration_ms)
				usage_error("--duration: '%s' is not a duration like 10s", optarg);
			break;
		case O_LEVEL:
			opt.level = optarg;
			break;
		case O_STACK:
			opt.stack = optarg;
			break;
		case O_STACK_DEPTH:
			if (!parse_int(optarg, &pid) || pid < 1 ||
			    pid > RINGTRACE_STACK_MAX_DEPTH)
				usage_error("--stack-depth: '%s' is not a depth from 1 to %d frames",
					    optarg, RINGTRACE_STACK_MAX_DEPTH);
			opt.stack_depth = (unsigned int)pid;
			break;
		case O_USTACK:
			opt.ustack = optarg;
			break;
		case O_USTACK_DEPTH:
			if (!parse_int(optarg, &pid) || pid < 1 ||
			    pid > RINGTRACE_USTACK_MAX_DEPTH)
				usage_error("--ustack-depth: '%s' is not a depth from 1 to %d frames",
					    optarg, RINGTRACE_USTACK_MAX_DEPTH);
			opt.ustack_depth = (unsigned int)pid;
			break;
		case O_SAMPLE:
			if (!parse_int(optarg, &pid) || pid < 1 ||
			    pid > RINGTRACE_SAMPLE_MAX_HZ)
				usage_error("--sample: '%s' is not a rate from 1 to %d Hz",
					    optarg, RINGTRACE_SAMPLE_MAX_HZ);
			opt.sample_hz = (unsigned int)pid;
			break;
		case O_USTACK_MODE:
			if (strcmp(optarg, "fp") && strcmp(optarg, "copy"))
				usage_error("--ustack-mode: '%s' is not fp or copy", optarg);
			opt.ustack_mode = optarg;
			break;
		case O_USTACK_SIZE:
			if (!parse_int(optarg, &pid) ||
			    pid < RINGTRACE_USTACK_COPY_MIN ||
			    pid > (int)RINGTRACE_USTACK_COPY_MAX)
				usage_error("--ustack-size: '%s' is not a size from %d to %u bytes",
					    optarg, RINGTRACE_USTACK_COPY_MIN,
					    RINGTRACE_USTACK_COPY_MAX);
			opt.ustack_size = (unsigned int)pid;
			break;
		case O_FILTER:
			if (filters_add(&filters, optarg, why, sizeof(why)))
				usage_error("%s", why);
			break;
		case O_CGROUP:
			if (opt.nr_cgroups == MAX_CGROUPS)
				usage_error("--cgroup: at most %d cgroups", MAX_CGROUPS);
			opt.cgroups[opt.nr_cgroups++] = optarg;
			break;
		case O_TRIGGER:
			if (filters_add(&triggers, optarg, why, sizeof(why)))
				usage_error("%s", why);
			break;
		case O_AFTER:
			if (!parse_duration_ms(optarg, &opt.after_ms))
				usage_error("--after: '%s' is not a duration like 2s", optarg);
			after = true;
			break;
		case O_MAX:
			if (!parse_int(optarg, &pid) || pid < 1)
				usage_error("--max: '%s' is not a number of snapshots (1 or more)",
					    optarg);
			opt.max_snapshots = (unsigned int)pid;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case O_LIVE:
			opt.live = true;
			break;
		case O_MMAP:
			opt.mmap = true;
			break;
		case O_SYMBOLS_MAX:
			if (!parse_size(optarg, &size))
				usage_error("--symbols-max: '%s' is not a size like 64M", optarg);
			opt.symbols_max = optarg;
			break;
		case O_NO_SYMBOLS:
			opt.no_symbols = true;
			break;
		}
	}
	if (optind < argc)
		opt.cmd = argv + optind;
	parse_start_timeout();
	if (opt.follow && !opt.cmd)
		usage_error("-F traces a command: give it after --");
	if (opt.stack_depth && !opt.stack && !opt.sample_hz)
		usage_error("--stack-depth needs --stack or --sample");
	if (opt.ustack_depth && !opt.ustack)
		usage_error("--ustack-depth needs --ustack");
	if (opt.ustack_mode && !opt.ustack)
		usage_error("--ustack-mode needs --ustack");
	if (opt.ustack_size &&
	    (!opt.ustack_mode || strcmp(opt.ustack_mode, "copy")))
		usage_error("--ustack-size needs --ustack-mode copy");
	if ((after || opt.max_snapshots) && !triggers.n)
		usage_error("--after and --max need --trigger");
	if (opt.symbols_max && opt.no_symbols)
		usage_error("--symbols-max and --no-symbols: one or the other");
	/* User frames are named through the mappings (as --stack keeps ksyms). */
	if (opt.ustack || opt.sample_hz)
		opt.mmap = true;
	if (triggers.n && (!opt.mode || strcmp(opt.mode, "overwrite")))
		usage_error("--trigger needs --mode overwrite: the buffers are the flight recorder it saves");
	if (triggers.n && opt.level)
		usage_error("--level: --trigger's snapshots are stored as ringtraced --once stores them");
	if (triggers.n && opt.cpus)
		usage_error("-c: --trigger's snapshots take every CPU's buffer");
	if (triggers.n && opt.live)
		usage_error("--live follows what ringtraced writes; with --trigger nothing is drained until a trigger fires");
}

/* The daemon's arguments: into the trace directory, quiet, -c, --level. */
static pid_t launch_daemon(void)
{
	char *dargs[20], fd[16];
	int nd = 0;

	dargs[nd++] = "-o";
	dargs[nd++] = (char *)opt.outdir;
	dargs[nd++] = "--quiet";
	if (opt.cpus) {
		dargs[nd++] = "-c";
		dargs[nd++] = (char *)opt.cpus;
	}
	if (opt.level) {
		dargs[nd++] = "--level";
		dargs[nd++] = (char *)opt.level;
	}
	if (opt.live) {
		dargs[nd++] = "-f";
		dargs[nd++] = LIVE_FLUSH_MS;
	}
	if (opt.symbols_max) {
		dargs[nd++] = "--symbols-max";
		dargs[nd++] = (char *)opt.symbols_max;
	}
	if (opt.no_symbols)
		dargs[nd++] = "--no-symbols";
	/* What goes back if we are killed: it writes it back then. */
	if (undo_fd >= 0) {
		snprintf(fd, sizeof(fd), "%d", undo_fd);
		dargs[nd++] = "--restore-fd";
		dargs[nd++] = fd;
		daemon_keep_fd(undo_fd);
	}
	dargs[nd] = NULL;
	return start_daemon(dargs);
}

/* ringtraced turns tracing on once its buffers are open. */
static void wait_tracing_on(void)
{
	for (unsigned int i = 0; i < opt.start_timeout_s * 100; i++) {
		char v[8];

		if (ctl_read(&ctl, "tracing_on", v, sizeof(v)) >= 0 &&
		    !strcmp(v, "1"))
			return;
		if (reap() && !run_state.daemon)
			die("ringtraced failed (see above)");
		usleep(10000);
	}
	/* Stuck: it has recorded nothing worth a clean stop. */
	stop_daemon(true);
	die("ringtraced did not start tracing within %u s", opt.start_timeout_s);
}

/*
 * --live: report --follow of the trace from its start, in a child that
 * prints to record's stdout.  Ctrl-C is record's (the child keeps SIGINT
 * blocked and never reads it); end_live() lets it finish once ringtraced
 * has written the last event.
 */
static void start_live(void)
{
	pid_t pid, parent = getpid();

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid) {
		run_state.live = pid;
		return;
	}
	set_die_hook(NULL);
	recsig_close();
	if (undo_fd >= 0)
		close(undo_fd);
	/* The probes go with record's open of probe_events alone. */
	if (probes.fd >= 0)
		close(probes.fd);
	/*
	 * Killed outright, record cannot end the view: the kernel does.
	 * Checked after the prctl: record may be gone before it, and the
	 * view would follow a trace nobody records, for ever.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
		_exit(1);
	pid = report_live(opt.outdir);
	fflush(NULL);
	_exit(pid);
}

/* The live view, to the trace's end: false if it failed (said above). */
static bool end_live(void)
{
	int status;

	if (run_state.live <= 0)
		return true;
	kill(run_state.live, SIGTERM);
	while (waitpid(run_state.live, &status, 0) < 0 && errno == EINTR)
		;
	run_state.live = 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Lets the held command go; dies if it could not be run.  A stop signal,
 * or one of record's own, that came while record set up (a Ctrl-C during
 * a slow start) was meant for a command not yet running: it never runs,
 * and record ends by that signal (finish()).  So does a command a signal
 * ended while it was held.
 */
static void release_cmd(int execerr)
{
	char c = 'g', e;

	/* Nothing to pass on: the command has not run. */
	recsig_take(0);
	if (!run_state.cmd || recsig_stop() || recsig_own()) {
		drop_held_cmd();
		close(execerr);
		return;
	}
	if (send(run_state.go, &c, 1, MSG_NOSIGNAL) != 1) {
		if (errno != EPIPE && errno != ECONNRESET)
			die("cannot start %s: %s", opt.cmd[0], strerror(errno));
		/* Killed while held, just now: what killed it is ours too. */
		drop_held_cmd();
		close(execerr);
		recsig_take(0);
		return;
	}
	close(run_state.go);
	run_state.go = -1;
	/* EOF: the exec worked; a byte: its errno. */
	if (read(execerr, &e, 1) == 1) {
		waitpid(run_state.cmd, NULL, 0);
		run_state.cmd = 0;
		die("%s: %s", opt.cmd[0], strerror((unsigned char)e));
	}
	close(execerr);
}

/*
 * Records until the command exits (system-wide: until a stop signal),
 * --duration passes or ringtraced stops by itself.  The first stop signal
 * with a command running waits for the command (it got the signal too);
 * the second stops at once, as a signal of record's own does.
 */
static void record_loop(void)
{
	double start = now_s(), tprev = start, stopped_at = 0;
	/* No status line under the live view's events. */
	bool tty = isatty(STDERR_FILENO) && !opt.live, told = false;
	struct cpu_count prev[256];
	unsigned int nprev, stops = 0;

	nprev = read_counts(prev, ARRAY_SIZE(prev));
	if (!run_state.cmd)
		info("recording into %s: Ctrl-C stops%s", opt.outdir,
		     opt.duration_ms ? " (or --duration)" : "");
	for (;;) {
		int timeout = tty ? 1000 : -1;

		if (opt.duration_ms) {
			double left = start + (double)opt.duration_ms / 1e3 - now_s();

			if (left <= 0)
				break;
			/* Up to a year: far beyond what an int of ms holds. */
			if (timeout < 0 || left * 1000 < timeout)
				timeout = poll_timeout_ms((uint64_t)(left * 1000) + 1);
		}
		if (stops && !told) {
			double left = stopped_at + 2 - now_s();

			if (left <= 0) {
				fputs(tty ? "\r\033[K" : "", stderr);
				info("stopping: recording until %s (pid %d) exits; "
				     "a second Ctrl-C stops now", opt.cmd[0],
				     (int)run_state.cmd);
				told = true;
			} else if (timeout < 0 || left * 1000 < timeout) {
				timeout = (int)(left * 1000) + 1;
			}
		}
		if (wait_events(timeout) && !stops++)
			stopped_at = now_s();
		if (tty)
			status(start, prev, &nprev, &tprev);
		reap();
		if (!run_state.cmd && opt.cmd)
			break;			/* the command is done */
		if (!run_state.daemon)
			break;			/* ringtraced stopped by itself */
		if (stops > (opt.cmd ? 1 : 0) || recsig_own())
			break;
	}
	if (tty)
		fputs("\r\033[K", stderr);
}

/* trigger_save()'s writer: `ringtrace snapshot`'s, with --symbols-*. */
static int write_snapshot(const char *dir,
			  void *unused __attribute__((unused)))
{
	char *symbols[3] = { NULL };

	if (opt.symbols_max) {
		symbols[0] = "--symbols-max";
		symbols[1] = (char *)opt.symbols_max;
	} else if (opt.no_symbols) {
		symbols[0] = "--no-symbols";
	}
	return snapshot_write(dir, NULL, symbols);
}

/*
 * --trigger: nobody drains the buffers (they are the flight recorder);
 * tracing is on until the command exits, a stop signal or --duration.
 * The kernel latches a trigger's hit and wakes the triggered file's
 * poll; --after later the buffers are saved as a trace directory of their
 * own under -o, and the trigger is rearmed.  Hits while one is latched
 * (--after and the saving) are counted by the kernel as missed.  After
 * --max snapshots the triggers are put back as they were (none: no more
 * hits) and recording goes on.  A recording that ends during --after
 * saves at once.  Returns the number of snapshots.
 */
static unsigned int trigger_loop(void)
{
	double start = now_s(), due = 0;
	struct trigger_hit hit;
	unsigned int stops = 0, saved_n = 0;
	bool pending = false, ending = false;
	char dir[PATH_MAX], why[PATH_MAX + 128];
	int fd = trigger_watch(&ctl);

	if (fd < 0)
		die("%s/triggered: %s", ctl.dir, strerror(errno));
	info("recording into %s: a snapshot at each trigger; %s stops",
	     opt.outdir, run_state.cmd ? "the command's exit" :
	     opt.duration_ms ? "Ctrl-C or --duration" : "Ctrl-C");
	for (;;) {
		struct pollfd pfd[3] = {
			[2] = {
				/* Latched until rearmed: not watched meanwhile. */
				.fd = pending ? -1 : fd, .events = POLLPRI,
			},
		};
		int timeout = -1;
		double left;

		if (opt.duration_ms) {
			left = start + (double)opt.duration_ms / 1e3 - now_s();
			if (left <= 0)
				ending = true;
			else
				timeout = poll_timeout_ms((uint64_t)(left * 1000) + 1);
		}
		if (pending) {
			left = due - now_s();
			if (left <= 0)
				timeout = 0;
			else if (timeout < 0 || left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (!ending) {
			recsig_pollfds(pfd);
			if (poll(pfd, 3, recsig_timeout(timeout)) < 0 &&
			    errno != EINTR)
				die("poll: %s", strerror(errno));
			stops += recsig_take(run_state.cmd);
			reap();
			if ((!run_state.cmd && opt.cmd) || recsig_own() ||
			    stops > (opt.cmd ? 1 : 0))
				ending = true;
		}
		if (!pending && pfd[2].revents) {
			if (trigger_read(&ctl, &hit))
				die("%s/triggered: %s", ctl.dir, strerror(errno));
			if (hit.hit) {
				pending = true;
				due = now_s() + (double)opt.after_ms / 1e3;
			}
		}
		if (pending && (ending || now_s() >= due)) {
			if (trigger_save(&ctl, &hit, opt.outdir, write_snapshot,
					 NULL, dir, sizeof(dir), why, sizeof(why)))
				die("%s", why);
			pending = false;
			saved_n++;
			printf("snapshot %u in %s: %s: %s\n", saved_n, dir,
			       hit.event, hit.trigger);
			fflush(stdout);
			if (saved_n == opt.max_snapshots) {
				filters_restore(&triggers, &ctl);
				info("--max %u: no more snapshots, recording goes on",
				     saved_n);
			}
		}
		if (ending)
			break;
	}
	close(fd);
	if (!trigger_read(&ctl, &hit) && hit.missed)
		warn("%" PRIu64 " trigger hits while a snapshot was being taken: not saved",
		     hit.missed);
	return saved_n;
}

/* With --trigger: -o is the directory of the snapshots; tracing on. */
static void trigger_start(void)
{
	int err;

	if (mkdir(opt.outdir, 0755))
		die("%s: %s", opt.outdir, strerror(errno));
	err = trigger_reset(&ctl);
	if (!err)
		err = ctl_write(&ctl, "tracing_on", "1");
	if (err)
		die("%s: starting: %s", ctl.dir, strerror(-err));
}

/* The command's status as record's exit status. */
static int cmd_exit_status(void)
{
	int status = run_state.cmd_status;

	if (!opt.cmd)
		return 0;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/*
 * record's end, once the tracer is put back (recsig_exit()): after a
 * signal of record's own the command, if it runs, runs on untraced.
 * @failed: the recording failed, record exits 1.
 */
__attribute__((noreturn))
static void finish(bool failed)
{
	int status = failed ? 1 : cmd_exit_status();

	if (run_state.cmd > 0)
		warn("%s (pid %d) goes on, no longer traced", opt.cmd[0],
		     (int)run_state.cmd);
	/* A command that never ran: record ends by what stopped it. */
	if (!failed && opt.cmd && !run_state.cmd_ran &&
	    (recsig_stop() || recsig_own()))
		status = 0;
	recsig_exit(status, !failed && run_state.cmd_ran ?
		    &run_state.cmd_status : NULL);
}

/* record --trigger from the start of tracing to the end. */
static int run_triggered(int execerr)
{
	unsigned int n;

	trigger_start();
	if (opt.cmd)
		release_cmd(execerr);
	/* Stopped before the command could run: nothing to wait for. */
	n = opt.cmd && !run_state.cmd ? 0 : trigger_loop();
	set_die_hook(NULL);
	dynprobes_remove(&probes);
	restore_state();
	end_guard();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
	printf("%u snapshot%s in %s%s\n", n, n == 1 ? "" : "s", opt.outdir,
	       n ? ": ringtrace report DIR for each" : "");
	fflush(stdout);
	wait_cmd();
	finish(false);
}

static int run(int argc, char **argv)
{
	char outdir[64], why[512], what[512];
	int execerr = -1;
	bool *on, *stack, *ustack, daemon_failed;

	parse(argc, argv);
	if (geteuid())
		die("needs root: it loads ringtrace.ko and writes its control files");
	if (!opt.outdir) {
		time_t t = time(NULL);

		strftime(outdir, sizeof(outdir), "ringtrace-%Y%m%d-%H%M%S",
			 localtime(&t));
		opt.outdir = outdir;
	}
	if (!access(opt.outdir, F_OK))
		usage_error("%s exists: -o names a new directory", opt.outdir);

	if (!ctl_module_loaded()) {
		if (ctl_load_module(what, sizeof(what)))
			die("%s", what);
		loaded_here = true;
		info("%s", what);
	}
	if (!ctl_debugfs_mounted() && access(CTL_DEV, F_OK) &&
	    !ctl_mount_debugfs())
		mounted_here = true;
	if (ctl_find(&ctl, NULL, why, sizeof(why)))
		refuse("%s", why);
	/* Before any child exists: each child puts the mask back itself. */
	recsig_setup();
	lock_restore_file();
	read_names();
	on = choose_events();
	stack = choose_stacks(on, opt.stack, false);
	ustack = choose_stacks(on, opt.ustack, true);
	/* The marker (the last name) is recorded whatever -e says. */
	on[nr_names - 1] = true;
	/* Those of dynamic probes: once the probes exist, below. */
	if (filters_check(&filters, &ctl, (const char *const *)names, on,
			  nr_names, probes.n, why, sizeof(why)))
		refuse("%s", why);
	check_cgroups();
	check_mmap();
	check_sampler();
	if (filters_check(&triggers, &ctl, (const char *const *)names, on,
			  nr_names, probes.n, why, sizeof(why)))
		refuse("%s", why);
	/*
	 * Before anything is changed: a probe refused leaves nothing behind.
	 * They exist while probes.fd is open: to record's end, however it
	 * ends (the kernel closes it after a SIGKILL too).  The guard and
	 * the live view close their copy; ringtraced's and the command's go
	 * at their exec (close-on-exec), a held command's when it ends.
	 */
	if (dynprobes_add(&probes, &ctl, why, sizeof(why)))
		refuse("%s", why);
	if (filters_check_probes(&filters, &ctl,
				 (const char *const *)probes.events, probes.n,
				 why, sizeof(why)) ||
	    filters_check_probes(&triggers, &ctl,
				 (const char *const *)probes.events, probes.n,
				 why, sizeof(why))) {
		dynprobes_remove(&probes);
		refuse("%s", why);
	}
	save_state();
	if (strcmp(saved.tracing_on, "0"))
		die("tracing is on already (ringtraced, or another record?): 'ringtrace stop' ends it");
	plan_restore();
	/* Without a restore file there is nothing for it to write back. */
	if (triggers.n && undo_fd >= 0)
		start_guard();
	/* The module parses them: a refused one leaves every filter as it was. */
	if (filters_apply(&filters, &ctl, why, sizeof(why)))
		refuse("%s", why);
	if (filters_apply(&triggers, &ctl, why, sizeof(why))) {
		filters_restore(&filters, &ctl);
		refuse("%s", why);
	}
	set_die_hook(cleanup);

	if (opt.cmd)
		spawn(&execerr);
	apply(on, stack, ustack, opt.follow ? run_state.cmd : 0);
	mark_set();
	if (triggers.n)
		return run_triggered(execerr);
	run_state.daemon = launch_daemon();
	wait_tracing_on();
	if (opt.live)
		start_live();
	if (opt.cmd)
		release_cmd(execerr);
	/* Stopped before the command could run: the recording is over. */
	if (!opt.cmd || run_state.cmd)
		record_loop();

	daemon_failed = !run_state.daemon;
	if (daemon_failed)
		error_line("ringtraced stopped (status %d): the recording ended early",
			   WIFEXITED(run_state.daemon_status) ?
			   WEXITSTATUS(run_state.daemon_status) :
			   128 + WTERMSIG(run_state.daemon_status));
	stop_daemon(false);
	if (!daemon_failed && (!WIFEXITED(run_state.daemon_status) ||
			       WEXITSTATUS(run_state.daemon_status))) {
		error_line("ringtraced did not stop cleanly (see above): the trace may be short");
		daemon_failed = true;
	}
	if (!end_live()) {
		error_line("the live view failed (see above): the trace is complete");
		daemon_failed = true;
	}
	set_die_hook(NULL);
	dynprobes_remove(&probes);
	restore_state();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
	printf("trace in %s: ringtrace report %s\n", opt.outdir, opt.outdir);
	fflush(stdout);
	wait_cmd();
	finish(daemon_failed);
}

const struct command cmd_record = {
	.name = "record",
	.summary = "record a command, or the whole system, into a trace directory",
	.help =
"Usage: ringtrace record [OPTIONS] [-- CMD [ARGS]]\n"
"\n"
"Record the kernel's events into a trace directory (the same format as\n"
"ringtraced's: metadata and per-CPU zstd files; 'ringtrace report DIR'\n"
"reads it).  With CMD: tracing starts, CMD runs, recording stops when CMD\n"
"exits, and record ends as CMD did: its exit status, or killed by the same\n"
"signal (1 if the recording failed).  Without: until Ctrl-C, SIGTERM,\n"
"SIGHUP, SIGQUIT or --duration, and after a signal record ends by it, once\n"
"the trace is finished.  CMD gets the signal mask and ignored signals\n"
"record was given, and each stop signal once: one sent to record alone is\n"
"passed on (what the terminal, CMD's process group or its cgroup got\n"
"reached CMD already), and recording goes on until CMD exits (a second\n"
"one stops it at once).  Any other signal that would end record (SIGPIPE,\n"
"SIGUSR1, SIGALRM, ...) stops the recording at once and ends record by\n"
"it; CMD runs on, untraced.\n"
"\n"
"Needs root.  Loads ringtrace.ko if it is not loaded (the installed\n"
"module, else the one 'make' built) and mounts debugfs if it is not\n"
"mounted; everything else it changes -- enabled events, tracing_on,\n"
"geometry, mode, pid filter, event filters -- is put back at exit, after a\n"
"signal or an error too.  It is saved first in " CTLSAVE_PATH ":\n"
"killed (SIGKILL), record leaves it to its ringtraced to put back, or,\n"
"when that was killed too, to the next record or ringtraced start (a file\n"
"set by hand since stays as it is).  One record at a time.  Records with\n"
"ringtraced, as a child process: a thread per CPU writes the packets\n"
"uncompressed as fast as they can be copied, and worker threads compress\n"
"them behind, on idle CPU time.  What is left when the recording stops is\n"
"compressed then, with progress on the terminal; a Ctrl-C meanwhile leaves\n"
"it uncompressed ('ringtrace compress DIR' later).\n"
"\n"
"  -e, --events LIST     events: names, globs (sched_*) and groups, comma\n"
"                        separated (default " DEFAULT_EVENTS "); groups:\n"
"                        " EVENT_GROUPS ".\n"
"                        sched_switch, sched_process_fork/exec/exit,\n"
"                        task_rename and the state dump are always added:\n"
"                        they say which thread did what.  Dynamic probes,\n"
"                        made for this recording and removed at its end:\n"
"                        kprobe:FUNC[+OFF] (event kprobe_FUNC, the first six\n"
"                        argument registers arg0..arg5), kretprobe:FUNC\n"
"                        (event kretprobe_FUNC, the return value ret) and\n"
"                        uprobe:PATH:SYMBOL[+OFF] (event uprobe_FILE_SYMBOL,\n"
"                        arg0..arg5 of that function of a program or\n"
"                        library, SYMBOL from its .symtab or .dynsym),\n"
"                        usdt:PATH:PROVIDER:NAME (event usdt_PROVIDER_NAME,\n"
"                        the USDT probe's arguments arg0..argN-1 as int64\n"
"                        and faults, a bit per argument not readable;\n"
"                        every site of the probe, 32 at most, each with\n"
"                        its own operands; its semaphore raised while\n"
"                        recording; 'list --usdt PATH' lists a file's\n"
"                        probes and counts their sites)\n"
"  -p, --pid PID         only events of this process (repeatable)\n"
"  -F, --follow          only CMD and its descendants (the pid filter,\n"
"                        following forks)\n"
"      --cgroup PATH     only events of tasks in this cgroup v2 or below it\n"
"                        (a container, a service; repeatable), decided in\n"
"                        the kernel: PATH absolute, or under /sys/fs/cgroup\n"
"  -c, --cpus LIST       only these CPUs (0-3,8)\n"
"  -b, --buffer-size SIZE  ring buffer per CPU (K, M, G, T): 16 sub-buffers or\n"
"                        more, a power of two each (default: as it is)\n"
"  -m, --mode MODE       discard (keep the oldest when full) or overwrite\n"
"                        (flight recorder; default: as it is)\n"
"  -o, --output DIR      the trace directory, new (default\n"
"                        ./ringtrace-YYYYmmdd-HHMMSS)\n"
"      --duration TIME   stop after TIME (10s, 500ms, 2m)\n"
"      --level N         the zstd level of the compressed chunks, or store\n"
"                        (see ringtraced --help)\n"
"      --stack LIST      these events (as -e; enabled too) carry the kernel\n"
"                        stack they were hit at; the trace keeps the\n"
"                        kernel's symbols to name its frames\n"
"      --stack-depth N   frames kept per stack (of --stack and --sample), 1\n"
"                        to 64 (default 32)\n"
"      --sample HZ       a profile: every CPU writes a cpu_sample HZ times a\n"
"                        second (1 to 10000) saying which thread ran, in user\n"
"                        or kernel mode or idle, with the kernel stack (of\n"
"                        --stack-depth frames) when in the kernel and the user\n"
"                        stack (as --ustack's) of a process; -p, -F and\n"
"                        --cgroup keep only their tasks' samples, HZ a second\n"
"                        of their CPU time (no tick where they do not run).\n"
"                        'ringtrace report --folded' makes a flame graph's\n"
"                        input of them; implies --mmap\n"
"      --ustack LIST     these events (as -e; enabled too) carry the user\n"
"                        stack of the task that hit them, walked by frame\n"
"                        pointers (code built without them hides frames);\n"
"                        a kprobe: or uprobe: of -e may be named too;\n"
"                        implies --mmap\n"
"      --ustack-depth N  frames kept per user stack, 1 to 127 (default 64)\n"
"      --ustack-mode fp|copy  fp (the default) walks frame pointers; copy\n"
"                        records the stack's top bytes instead, which report\n"
"                        unwinds with the binaries' CFI (code built without\n"
"                        frame pointers too, from the binaries kept at the\n"
"                        stop, or report --binaries); costly on hot events\n"
"      --ustack-size BYTES  bytes copied per stack, 512 to 32768 (default\n"
"                        8192), at most a quarter of a sub-buffer (-b)\n"
"      --mmap            record the executable mappings of the traced\n"
"                        processes (user_mmap: address range, file offset,\n"
"                        path, build-id), those at the start and those made\n"
"                        while recording (the latter not on a kernel\n"
"                        without kprobes); --ustack and --sample imply it\n"
"      --symbols-max SIZE  at the stop, ringtraced keeps the binaries the\n"
"                        user stacks ran in (from the processes that mapped\n"
"                        them if they live, else their path, if the build-id\n"
"                        is the trace's) in the trace's symbol store, up to\n"
"                        SIZE (default 256M), so that report names their\n"
"                        frames on any machine; what is left out is listed\n"
"                        in DIR/.ringtrace-buildid/missing\n"
"      --no-symbols      keep no binaries\n"
"      --filter 'EVENT: EXPR'  record only the EVENTs (of -e) whose fields\n"
"                        pass EXPR, decided in the kernel before the event\n"
"                        is written (repeatable, one per event):\n"
"                        'syscall_entry: id == openat && comm == \"my*\"'.\n"
"                        Integer fields compare with == != < <= > >= and\n"
"                        masks (&), strings with == != and globs; && || !\n"
"                        and parentheses.  The fields are the event's\n"
"                        (ringtrace list; an array's as args[0]), and\n"
"                        comm; the marker's is data\n"
"                        ('ringtrace_marker: data == \"FAIL*\"'); see\n"
"                        Documentation/ringtrace/cli.rst\n"
"      --live            print the events as they are recorded, as\n"
"                        'ringtrace report --follow DIR' does (ringtraced\n"
"                        flushes every " LIVE_FLUSH_MS " ms for it: a second behind at\n"
"                        most), from the first; no status line then.  The\n"
"                        trace on disk is the same as without\n"
"      --trigger 'EVENT: EXPR'  with --mode overwrite: nothing is drained;\n"
"                        when an EVENT passing EXPR (the --filter grammar;\n"
"                        decided in the kernel, at the event) is written,\n"
"                        what the buffers hold -- the newest events -- plus\n"
"                        --after is saved as a trace directory of its own,\n"
"                        -o DIR/YYYYmmdd-HHMMSS.mmm-EVENT, ending with a\n"
"                        marker 'ringtrace trigger: EVENT: EXPR ...'; and\n"
"                        recording goes on (repeatable, one per event; the\n"
"                        marker too: 'ringtrace_marker: data == \"*FAIL*\"';\n"
"                        a probe of -e too: 'kretprobe_vfs_read: ret < 0')\n"
"      --after TIME      what happens TIME after the trigger goes in too\n"
"                        (default 0)\n"
"      --max N           at most N snapshots; then the triggers go and\n"
"                        recording goes on until it stops\n"
"  -v, --verbose         the status line per CPU too\n"
"  -h, --help            this text\n"
"\n"
"RINGTRACE_START_TIMEOUT=SECONDS in the environment: how long ringtraced\n"
"has to turn tracing on before record gives up (1 to 3600, default " START_TIMEOUT_S ").\n"
"\n"
"On a terminal a status line shows events/s, bytes written and events\n"
"lost so far; at the end ringtraced prints the per-CPU summary, with a\n"
"\"CPU n: N events lost\" line each.\n",
	.run = run,
};
