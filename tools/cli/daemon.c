// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: ringtraced as a child process.  `record` and `snapshot` copy
 * the buffers out with the daemon's own drain loop (verbatim packets into
 * zstd files), never a second copy of it.
 *
 * It ends with its parent: PR_SET_PDEATHSIG sends it the SIGTERM that stops
 * it cleanly when the ringtrace that started it is killed (SIGKILL, or a
 * crash), so that tracing never goes on with nobody to stop it.
 *
 * Which ringtraced: $RINGTRACED if set; next to this program (installed:
 * /usr/sbin or the same bin directory) or in the source tree's daemon/
 * (tools/ringtrace -> daemon/ringtraced); else the first one in $PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"

static bool executable(const char *path)
{
	return !access(path, X_OK);
}

/* The ringtraced to run, in @path. */
static void find_daemon(char *path, size_t size)
{
	const char *env = getenv("RINGTRACED");
	static const char *const rel[] = {
		"../daemon/ringtraced", "ringtraced", "../sbin/ringtraced",
	};
	char self[PATH_MAX], *dir;
	ssize_t n;

	if (env && *env) {
		snprintf(path, size, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		dir = dirname(self);
		for (int i = 0; i < ARRAY_SIZE(rel); i++) {
			snprintf(path, size, "%s/%s", dir, rel[i]);
			if (executable(path))
				return;
		}
	}
	/* execvp() searches $PATH, with the sbin directories added. */
	snprintf(path, size, "ringtraced");
}

/* Open in every ringtraced: what record hands it (daemon_keep_fd()). */
static int kept[4];
static unsigned int nkept;

void daemon_keep_fd(int fd)
{
	if (nkept == ARRAY_SIZE(kept))
		die("daemon_keep_fd: too many");
	kept[nkept++] = fd;
}

pid_t start_daemon(char *const *args)
{
	char path[PATH_MAX], *argv[64];
	pid_t pid, parent = getpid();
	sigset_t mask;
	int i, n = 0;

	find_daemon(path, sizeof(path));
	argv[n++] = path;
	for (i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid)
		return pid;
	/*
	 * Its own process group: Ctrl-C in the terminal reaches the traced
	 * command, and record stops the daemon when that command is done.
	 */
	setpgid(0, 0);
	/*
	 * Killed outright, we cannot stop it: the kernel does, with the
	 * SIGTERM that stops it cleanly (tracing off, files finished).
	 * Checked again: we may have died before the prctl.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
		_exit(1);
	/*
	 * What it takes through its own signalfd stays blocked: one sent
	 * before it blocks them itself -- the SIGTERM above, when we die
	 * now -- stays pending through the exec for it to read, where
	 * unblocked it would end it before it put anything back.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	/*
	 * Its own process group is a background job of our terminal: with
	 * `stty tostop` its first line there (the summary) would stop it.
	 */
	signal(SIGTTOU, SIG_IGN);
	for (unsigned int k = 0; k < nkept; k++)
		fcntl(kept[k], F_SETFD, 0);
	if (!strchr(path, '/')) {
		const char *p = getenv("PATH");
		char *full;

		if (asprintf(&full, "%s:/usr/local/sbin:/usr/sbin:/sbin",
			     p && *p ? p : "/usr/local/bin:/usr/bin:/bin") > 0)
			setenv("PATH", full, 1);
	}
	execvp(path, argv);
	fprintf(stderr, "%s: cannot run %s: %s (set RINGTRACED to its path)\n",
		msg_prog, path, strerror(errno));
	_exit(127);
}

void daemon_stop(pid_t pid)
{
	kill(pid, SIGINT);
}

void daemon_hurry(pid_t pid)
{
	kill(pid, SIGTERM);
}
