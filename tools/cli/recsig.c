// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace record's signals (recsig.h).
 *
 * Taken.  Every signal whose default action terminates a process
 * (with or without a core) is blocked and read from a signalfd, but
 * SIGKILL and SIGSTOP, which cannot be, and those record was started
 * with ignored (nohup's SIGHUP stays ignored).  A signal other than the
 * stop signals that record was started with blocked stays blocked too.
 * A fault of record's own (SIGSEGV at a bad address) is forced through
 * the block by the kernel and ends it: ringtraced then puts the control
 * files back, as after SIGKILL.
 *
 * Stop signals, SIGINT, SIGTERM, SIGHUP and SIGQUIT, ask the recording
 * to stop; with a command, it goes on until the command has exited, and
 * the command gets the signal: once.  Every other terminating signal is
 * record's own: record stops the recording at once, puts the tracer
 * back and ends by that signal, leaving a running command untraced.
 *
 * Passed on.  The command is in record's process group (a terminal's
 * job), so that it reads the terminal and Ctrl-C, Ctrl-\ and Ctrl-Z reach
 * it as they would without ringtrace.  What reached the whole group --
 * the terminal's signals, `kill -- -PGID`, the command's own kill(0) --
 * or the whole cgroup (systemd's KillMode=control-group signals each of
 * its processes) reached the command already; what was sent to record
 * alone (`kill PID`, systemd's KillMode=mixed) did not, and is passed on.
 * The siginfo tells a signal from the terminal (SI_KERNEL) from one a
 * process sent, but not a group's kill from one to record alone: both are
 * SI_USER with the sender's pid.  So a witness tells: a child of record
 * that does nothing but sit in record's process group and cgroup beside
 * the command, take the stop signals and report each (signal, sender) on
 * a pipe.  A stop signal from another process is passed on unless the
 * witness got the same one from the same sender within WITNESS_MS, or has
 * it pending still (not yet read: the witness may not have run since).  A
 * group's kill queues it for every member within its one system call, so
 * the pending set answers at once, however late the witness runs; systemd
 * signals the cgroup's processes one after the other, at once, and the
 * window covers that.  A signal to record alone thus reaches the command
 * WITNESS_MS late.  One from the command itself is not sent back to it;
 * if the witness is gone (killed), every one sent to record is passed on,
 * as before it existed.  The witness reads as rt-witness in
 * /proc/PID/cmdline (proctitle.c): pkill -f 'ringtrace record' signals
 * record alone, where it would signal both from one sender, the group's
 * pattern, and the command would get nothing.  What defeats it (cli.rst
 * says so): a signal that reaches the witness, or its report record,
 * more than WITNESS_MS late (passed on twice), and a witness signalled by
 * its pid (not passed on).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "recsig.h"

/* How long a witness report may lag record's own signal. */
#define WITNESS_MS	250
/* Undecided signals and witness reports kept at most. */
#define MAX_PENDING	16

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* Every signal whose default action ends the process, but SIGKILL. */
static const int term_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
	SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGSTKFLT,
	SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS,
};

/* A signal, who sent it, when record (or the witness) read it. */
struct sent {
	int sig;
	pid_t from;
	double at;
};

static struct {
	sigset_t given;		/* the mask record was started with */
	bool chld_ignored;	/* and SIGCHLD ignored, which waitpid() cannot use */
	int sfd;		/* the signals taken, and SIGCHLD */
	pid_t witness;
	int wfd;		/* its reports; -1 once it is gone */
	int own, stop;		/* the first of each taken, or 0 */
	struct sent pend[MAX_PENDING];	/* stop signals to pass on, maybe */
	unsigned int npend;
	struct sent seen[MAX_PENDING];	/* what the witness got */
	unsigned int nseen;
	struct sent due[MAX_PENDING];	/* matched pending: reports to drop */
	unsigned int ndue;
} rs = { .sfd = -1, .wfd = -1 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool is_stop(int sig)
{
	for (int i = 0; i < ARRAY_SIZE(stop_signals); i++)
		if (stop_signals[i] == sig)
			return true;
	return false;
}

/* Reports what it gets until record is gone; never returns. */
__attribute__((noreturn))
static void witness_main(pid_t parent, const sigset_t *stops, int out)
{
	struct signalfd_siginfo si;
	struct sent s;
	int fd, null;

	/* pkill -f 'ringtrace record' must not signal us too (proctitle.c). */
	proc_title("rt-witness");
	/* Checked after the prctl: record may be gone before it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(0);
	/* Nothing of record's held open: a pipe's reader sees EOF without us. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	fd = signalfd(-1, stops, SFD_CLOEXEC);
	if (fd < 0)
		_exit(1);
	for (;;) {
		if (read(fd, &si, sizeof(si)) != sizeof(si))
			continue;
		s = (struct sent){ .sig = (int)si.ssi_signo,
				   .from = (pid_t)si.ssi_pid };
		/* EPIPE (SIGPIPE is blocked): record is gone. */
		if (write(out, &s, sizeof(s)) != sizeof(s))
			_exit(0);
	}
}

static void start_witness(const sigset_t *stops)
{
	pid_t parent = getpid(), pid;
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(p[0]);
		close(rs.sfd);
		/* Blocking writes: a report is never dropped. */
		fcntl(p[1], F_SETFL, 0);
		witness_main(parent, stops, p[1]);
	}
	close(p[1]);
	rs.witness = pid;
	rs.wfd = p[0];
}

void recsig_setup(void)
{
	struct sigaction sa;
	sigset_t mask, stops;

	/* Ignored, SIGCHLD would reap the children before waitpid() could. */
	if (!sigaction(SIGCHLD, NULL, &sa) && sa.sa_handler == SIG_IGN) {
		rs.chld_ignored = true;
		signal(SIGCHLD, SIG_DFL);
	}
	if (sigprocmask(SIG_SETMASK, NULL, &rs.given))
		die("sigprocmask: %s", strerror(errno));
	sigemptyset(&mask);
	sigemptyset(&stops);
	sigaddset(&mask, SIGCHLD);
	for (int sig = 1; sig <= SIGRTMAX; sig++) {
		bool term = sig >= SIGRTMIN;

		for (int i = 0; !term && i < ARRAY_SIZE(term_signals); i++)
			term = term_signals[i] == sig;
		if (!term || sigaction(sig, NULL, &sa) ||
		    sa.sa_handler == SIG_IGN)
			continue;
		/* Blocked by whoever started record: not for record. */
		if (!is_stop(sig) && sigismember(&rs.given, sig) == 1)
			continue;
		sigaddset(&mask, sig);
		if (is_stop(sig))
			sigaddset(&stops, sig);
	}
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		die("sigprocmask: %s", strerror(errno));
	rs.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (rs.sfd < 0)
		die("signalfd: %s", strerror(errno));
	start_witness(&stops);
}

void recsig_close(void)
{
	if (rs.sfd >= 0)
		close(rs.sfd);
	if (rs.wfd >= 0)
		close(rs.wfd);
	rs.sfd = rs.wfd = -1;
}

void recsig_child(void)
{
	recsig_close();
	if (rs.chld_ignored)
		signal(SIGCHLD, SIG_IGN);
	sigprocmask(SIG_SETMASK, &rs.given, NULL);
}

void recsig_pollfds(struct pollfd *pfd)
{
	pfd[0] = (struct pollfd){ .fd = rs.sfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = rs.wfd, .events = POLLIN };
}

int recsig_timeout(int timeout)
{
	double now = now_s();

	for (unsigned int i = 0; i < rs.npend; i++) {
		double left = rs.pend[i].at + WITNESS_MS / 1e3 - now;
		int ms = left <= 0 ? 0 : (int)(left * 1000) + 1;

		if (timeout < 0 || ms < timeout)
			timeout = ms;
	}
	return timeout;
}

static void add(struct sent *list, unsigned int *n, int sig, pid_t from)
{
	/* Full: the oldest goes (recsig_take() passes a pending one on first). */
	if (*n == MAX_PENDING)
		memmove(list, list + 1, --*n * sizeof(*list));
	list[(*n)++] = (struct sent){ .sig = sig, .from = from, .at = now_s() };
}

static void drop(struct sent *list, unsigned int *n, unsigned int i)
{
	memmove(list + i, list + i + 1, (--*n - i) * sizeof(*list));
}

/* A report matched already, by the witness's pending set: dropped. */
static bool was_due(const struct sent *s)
{
	for (unsigned int i = 0; i < rs.ndue; i++) {
		if (rs.due[i].sig != s->sig || rs.due[i].from != s->from)
			continue;
		drop(rs.due, &rs.ndue, i);
		return true;
	}
	return false;
}

/* The witness's reports, until it has none; it may be gone. */
static void read_witness(void)
{
	struct sent s;
	ssize_t n;

	while (rs.wfd >= 0) {
		n = read(rs.wfd, &s, sizeof(s));
		if (n == sizeof(s)) {
			if (!was_due(&s))
				add(rs.seen, &rs.nseen, s.sig, s.from);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* EOF: killed.  Reaped at record's end. */
		close(rs.wfd);
		rs.wfd = -1;
	}
}

/* @sig is pending for the witness: sent to it, not read yet. */
static bool witness_pending(int sig)
{
	unsigned long long mask;
	char path[64], line[256];
	bool pending = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)rs.witness);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "ShdPnd: %llx", &mask) == 1 ||
		    sscanf(line, "SigPnd: %llx", &mask) == 1)
			pending |= (mask >> (sig - 1)) & 1;
	if (f)
		fclose(f);
	return pending;
}

/* A pending signal the witness got too went to the group: not passed on. */
static void decide(pid_t cmd)
{
	double now = now_s();

	for (unsigned int i = 0; i < rs.npend;) {
		const struct sent *p = &rs.pend[i];
		bool seen = false;

		for (unsigned int j = 0; j < rs.nseen && !seen; j++) {
			if (rs.seen[j].sig != p->sig || rs.seen[j].from != p->from)
				continue;
			drop(rs.seen, &rs.nseen, j);
			seen = true;
		}
		/* Its report is yet to come: the one to drop then. */
		if (!seen && rs.wfd >= 0 && witness_pending(p->sig)) {
			add(rs.due, &rs.ndue, p->sig, p->from);
			seen = true;
		}
		if (!seen && cmd > 0 && rs.wfd >= 0 &&
		    now < p->at + WITNESS_MS / 1e3) {
			i++;
			continue;
		}
		if (!seen && cmd > 0)
			kill(cmd, p->sig);
		drop(rs.pend, &rs.npend, i);
	}
	/* A report nothing matched: a signal to the group record missed. */
	while (rs.nseen && now - rs.seen[0].at > 2 * WITNESS_MS / 1e3)
		drop(rs.seen, &rs.nseen, 0);
}

unsigned int recsig_take(pid_t cmd)
{
	struct signalfd_siginfo si;
	unsigned int n = 0;
	int sig;

	while (read(rs.sfd, &si, sizeof(si)) == sizeof(si)) {
		sig = (int)si.ssi_signo;
		if (sig == SIGCHLD)
			continue;
		n++;
		if (!is_stop(sig)) {
			if (!rs.own)
				rs.own = sig;
			continue;
		}
		if (!rs.stop)
			rs.stop = sig;
		/*
		 * From the kernel (the terminal's keys, its hangup), from
		 * record itself or from the command: the command has it.
		 * Only what a process sent is a question for the witness.
		 */
		if (cmd > 0 && (si.ssi_code == SI_USER ||
				si.ssi_code == SI_QUEUE ||
				si.ssi_code == SI_TKILL) &&
		    (pid_t)si.ssi_pid != getpid() && (pid_t)si.ssi_pid != cmd) {
			/* No room to wait on the oldest: it is passed on now. */
			if (rs.npend == MAX_PENDING) {
				kill(cmd, rs.pend[0].sig);
				drop(rs.pend, &rs.npend, 0);
			}
			add(rs.pend, &rs.npend, sig, (pid_t)si.ssi_pid);
		}
	}
	read_witness();
	decide(cmd);
	return n;
}

int recsig_own(void)
{
	return rs.own;
}

int recsig_stop(void)
{
	return rs.stop;
}

void recsig_exit(int status, const int *cmd_status)
{
	sigset_t one;
	int sig = rs.own;

	if (rs.witness > 0) {
		kill(rs.witness, SIGKILL);
		while (waitpid(rs.witness, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (!sig && cmd_status && WIFSIGNALED(*cmd_status))
		sig = WTERMSIG(*cmd_status);
	else if (!sig && !cmd_status && !status)
		sig = rs.stop;
	fflush(NULL);
	if (sig) {
		/*
		 * No core: nothing failed in record, which put the tracer back
		 * (and with core_pattern "core", ours would replace the
		 * command's).  The parent's wait still sees the signal.
		 */
		prctl(PR_SET_DUMPABLE, 0);
		signal(sig, SIG_DFL);
		raise(sig);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
	}
	exit(status);
}
