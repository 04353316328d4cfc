// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace record: trace a command, or the whole system, in one command.
 *
 *   check    root; ringtrace.ko (loaded here if needed: the installed one,
 *            else the one `make` built); debugfs (mounted if needed); the
 *            events asked for.  A failure here changes nothing.
 *   save     what it will change: tracing_on, mode, geometry, enabled
 *            events, pid filter, event_fork.
 *   set      the events (and those that say who did what: sched_switch,
 *            fork, exec, exit and the state dump), geometry, mode, the pid
 *            filter (-p, or -F: the command's pid, following its forks).
 *   record   with ringtraced as a child: the one drain loop, the same as
 *            the service's.  It turns tracing on; the command, held at a
 *            pipe until then, runs; a status line shows progress.
 *   stop     when the command exits, on Ctrl-C or SIGTERM, or after
 *            --duration: ringtraced turns tracing off, drains, prints the
 *            per-CPU summary.  Everything saved is put back -- after an
 *            error too -- and record exits with the command's status.
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
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* What record needs for who-did-what, enabled whatever -e says. */
static const char *const attribution[] = {
	"sched_switch", "sched_process_fork", "sched_process_exec",
	"sched_process_exit", "task_rename", "ringtrace_statedump_task",
	"ringtrace_statedump_cpu",
};

#define DEFAULT_EVENTS	"sched,syscalls"
#define MAX_PIDS	256

struct saved {
	char tracing_on[8], mode[16], subbuf_size[32], num_subbufs[32];
	char *set_event, *set_event_pid, event_fork[8];
	bool have_event_fork;
};

static struct {
	const char *events, *cpus, *mode, *outdir, *level;
	uint64_t buffer_size, duration_ms;
	int pids[MAX_PIDS];
	unsigned int nr_pids;
	bool follow, verbose;
	char **cmd;
} opt;

static struct ctl ctl;
static struct saved saved;
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
	saved_valid = true;
}

/* set_event: "name" on, "!name" off, for every available event. */
static int write_events(const bool *on)
{
	size_t len = 1;
	char *buf, *p;
	int err;

	for (size_t i = 0; i < nr_switchable; i++)
		len += strlen(names[i]) + 2;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	*buf = '\0';
	p = buf;
	for (size_t i = 0; i < nr_switchable; i++)
		p += sprintf(p, "%s%s ", on[i] ? "" : "!", names[i]);
	err = ctl_write(&ctl, "set_event", buf);
	free(buf);
	return err;
}

static void restore_one(const char *name, const char *value)
{
	int err = ctl_write(&ctl, name, value);

	if (err)
		warn("could not restore %s/%s to '%s': %s", ctl.dir, name,
		     value, strerror(-err));
}

/* Everything saved goes back; each failure is a warning, not an exit. */
static void restore_state(void)
{
	bool *on;

	if (!saved_valid)
		return;
	saved_valid = false;
	restore_one("tracing_on", "0");
	on = calloc(nr_names + 1, sizeof(*on));
	if (on) {
		for (size_t i = 0; i < nr_names; i++)
			on[i] = has_line(saved.set_event, names[i]);
		if (write_events(on))
			warn("could not restore the enabled events");
		free(on);
	}
	if (saved.have_event_fork)
		restore_one("event_fork", saved.event_fork);
	/* A blank write clears the filter. */
	restore_one("set_event_pid", *saved.set_event_pid ?
		    saved.set_event_pid : " ");
	restore_one("mode", saved.mode);
	restore_one("subbuf_size", saved.subbuf_size);
	restore_one("num_subbufs", saved.num_subbufs);
	if (strcmp(saved.tracing_on, "0"))
		restore_one("tracing_on", saved.tracing_on);
}

/* die(): put the tracer back as it was, then what this run itself did. */
static void cleanup(void)
{
	fputs("\r\033[K", stderr);
	restore_state();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
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
	char why[512];

	if (!on)
		die("out of memory");
	for (size_t i = 0; i < nr_names; i++)
		for (int a = 0; a < ARRAY_SIZE(attribution); a++)
			if (!strcmp(names[i], attribution[a]))
				on[i] = true;
	if (select_events(opt.events, (const char *const *)names, nr_names, on,
			  why, sizeof(why)))
		refuse("%s", why);
	return on;
}

/* -b SIZE per CPU: 16 sub-buffers of a power of two, at least a page. */
static void geometry_for(uint64_t size, char *sb, size_t sbl, char *nb, size_t nbl)
{
	uint64_t sub = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned int num = 16;

	while (sub * 2 * num <= size && sub < (64ULL << 20))
		sub *= 2;
	while (sub * num * 2 <= size && num < 4096)
		num *= 2;
	snprintf(sb, sbl, "%" PRIu64, sub);
	snprintf(nb, nbl, "%u", num);
}

static void apply(const bool *on, pid_t child)
{
	char pids[MAX_PIDS * 12 + 16] = "", sb[32], nb[32];
	size_t used = 0;
	int err;

	err = write_events(on);
	if (err)
		die("%s/set_event: %s", ctl.dir, strerror(-err));
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
}

/* ---- the traced command --------------------------------------------------------- */

/*
 * Forked now, held until go() writes to @go; an exec failure comes back
 * through @err (close-on-exec, so EOF means the exec worked).
 */
static pid_t spawn(int *go, int *err)
{
	int gofd[2], errfd[2];
	pid_t pid;
	char c;

	if (pipe2(gofd, O_CLOEXEC) || pipe2(errfd, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
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
	*go = gofd[1];
	*err = errfd[0];
	return pid;
}

/*
 * Wait for ringtraced to exit; SIGINT/SIGTERM that reach us meanwhile are
 * passed on (the daemon's second one leaves the rest uncompressed).
 */
static void wait_daemon(int sfd, pid_t daemon, int *status)
{
	struct signalfd_siginfo si;

	for (;;) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		pid_t r = waitpid(daemon, status, WNOHANG);

		if (r == daemon || (r < 0 && errno != EINTR)) {
			if (r < 0)
				*status = 1 << 8;	/* as exit(1) */
			return;
		}
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
				kill(daemon, SIGINT);
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

static void parse(int argc, char **argv)
{
	enum { O_DURATION = 256, O_LEVEL };
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
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
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
		case 'v':
			opt.verbose = true;
			break;
		}
	}
	if (optind < argc)
		opt.cmd = argv + optind;
	if (opt.follow && !opt.cmd)
		usage_error("-F traces a command: give it after --");
}

static int run(int argc, char **argv)
{
	char outdir[64], why[512], what[512];
	struct cpu_count prev[256];
	unsigned int nprev = 0;
	int go = -1, execerr = -1, sfd, cmd_status = 0, daemon_status;
	pid_t child = 0, daemon;
	double start, tprev;
	bool *on, stop = false, cmd_done, tty = isatty(STDERR_FILENO);
	char *dargs[16];
	int nd = 0, i;
	sigset_t mask;

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
	read_names();
	on = choose_events();
	save_state();
	if (strcmp(saved.tracing_on, "0")) {
		saved_valid = false;
		die("tracing is on already (ringtraced, or another record?): 'ringtrace stop' ends it");
	}
	set_die_hook(cleanup);

	/* Signals come through a signalfd: blocked before any child exists. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd: %s", strerror(errno));

	if (opt.cmd)
		child = spawn(&go, &execerr);
	apply(on, opt.follow ? child : 0);

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
	dargs[nd] = NULL;
	daemon = start_daemon(dargs);

	/* ringtraced turns tracing on once its buffers are open. */
	for (i = 0; i < 3000; i++) {
		char v[8];

		if (ctl_read(&ctl, "tracing_on", v, sizeof(v)) >= 0 &&
		    !strcmp(v, "1"))
			break;
		if (waitpid(daemon, &daemon_status, WNOHANG) == daemon) {
			if (child > 0)
				kill(child, SIGKILL);
			die("ringtraced failed (see above)");
		}
		usleep(10000);
	}
	if (i == 3000)
		die("ringtraced did not start tracing within 30 s");
	start = tprev = now_s();
	nprev = read_counts(prev, ARRAY_SIZE(prev));
	if (child > 0) {
		char c = 'g', e;

		if (write(go, &c, 1) != 1)
			die("cannot start %s", opt.cmd[0]);
		close(go);
		/* EOF: the exec worked; a byte: its errno. */
		if (read(execerr, &e, 1) == 1) {
			waitpid(child, NULL, 0);
			child = 0;
			kill(daemon, SIGINT);
			waitpid(daemon, NULL, 0);
			die("%s: %s", opt.cmd[0], strerror((unsigned char)e));
		}
		close(execerr);
	}
	if (!child)
		info("recording into %s: Ctrl-C stops%s", opt.outdir,
		     opt.duration_ms ? " (or --duration)" : "");

	cmd_done = !child;
	while (!stop) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo si;
		int timeout = tty ? 1000 : -1;

		if (opt.duration_ms) {
			double left = start + (double)opt.duration_ms / 1e3 - now_s();

			if (left <= 0)
				break;
			if (timeout < 0 || left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (tty)
			status(start, prev, &nprev, &tprev);
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
				stop = true;
		}
		if (child > 0 && waitpid(child, &cmd_status, WNOHANG) == child) {
			cmd_done = true;
			child = 0;
			stop = true;
		}
		if (waitpid(daemon, &daemon_status, WNOHANG) == daemon) {
			daemon = 0;
			die("ringtraced stopped (status %d): the recording ended early",
			    WIFEXITED(daemon_status) ? WEXITSTATUS(daemon_status) :
			    128 + WTERMSIG(daemon_status));
		}
	}
	if (tty)
		fputs("\r\033[K", stderr);

	/*
	 * ringtraced stops tracing, drains, compresses what is still stored
	 * (it shows progress on the terminal) and prints the summary.  A
	 * Ctrl-C meanwhile is passed on: the rest stays uncompressed.
	 */
	kill(daemon, SIGINT);
	wait_daemon(sfd, daemon, &daemon_status);
	if (!WIFEXITED(daemon_status) || WEXITSTATUS(daemon_status))
		warn("ringtraced did not stop cleanly: the trace may be short");
	restore_state();
	if (mounted_here)
		umount2(CTL_DEBUGFS, MNT_DETACH);
	/* Ctrl-C went to the command too; give it a moment to end. */
	for (i = 0; !cmd_done && i < 200; i++) {
		if (waitpid(child, &cmd_status, WNOHANG) == child)
			cmd_done = true;
		else
			usleep(10000);
	}
	printf("trace in %s: ringtrace report %s\n", opt.outdir, opt.outdir);
	if (!cmd_done) {
		warn("%s (pid %d) is still running", opt.cmd[0], (int)child);
		return 130;
	}
	if (!opt.cmd)
		return 0;
	if (WIFSIGNALED(cmd_status))
		return 128 + WTERMSIG(cmd_status);
	return WEXITSTATUS(cmd_status);
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
"exits, and record exits with CMD's status.  Without: until Ctrl-C or\n"
"--duration.  Needs root.  Loads ringtrace.ko if it is not loaded (the\n"
"installed module, else the one 'make' built) and mounts debugfs if it is\n"
"not mounted; everything else it changes -- enabled events, tracing_on,\n"
"geometry, mode, pid filter -- is put back at exit, after Ctrl-C or an\n"
"error too.  Records with ringtraced, as a child process: a thread per CPU\n"
"writes the packets uncompressed as fast as they can be copied, and worker\n"
"threads compress them behind, on idle CPU time.  What is left when the\n"
"recording stops is compressed then, with progress on the terminal; a\n"
"Ctrl-C meanwhile leaves it uncompressed ('ringtrace compress DIR' later).\n"
"\n"
"  -e, --events LIST     events: names, globs (sched_*) and groups, comma\n"
"                        separated (default " DEFAULT_EVENTS "); groups:\n"
"                        " EVENT_GROUPS ".\n"
"                        sched_switch, sched_process_fork/exec/exit,\n"
"                        task_rename and the state dump are always added:\n"
"                        they say which thread did what\n"
"  -p, --pid PID         only events of this process (repeatable)\n"
"  -F, --follow          only CMD and its descendants (the pid filter,\n"
"                        following forks)\n"
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
"  -v, --verbose         the status line per CPU too\n"
"  -h, --help            this text\n"
"\n"
"On a terminal a status line shows events/s, bytes written and events\n"
"lost so far; at the end ringtraced prints the per-CPU summary, with a\n"
"\"CPU n: N events lost\" line each.\n",
	.run = run,
};
