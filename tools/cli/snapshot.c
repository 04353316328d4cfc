// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace snapshot: the flight recorder's take.  With the buffers in
 * overwrite mode and tracing on, nobody drains them: they hold the newest
 * events.  A snapshot writes what they hold now into a trace directory
 * (ringtraced --once: the same drain loop as everywhere) while tracing goes
 * on.  What it writes leaves the buffers; the next snapshot starts after it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/*
 * What the buffers hold now into the new trace directory @outdir, with
 * ringtraced --once; tracing goes on.  0, or -1 when ringtraced failed
 * (it said why).  Also record --trigger's, with its --symbols-max or
 * --no-symbols as @symbols (NULL: none), for ringtraced.
 */
int snapshot_write(const char *outdir, const char *debugfs,
		   char *const *symbols)
{
	char *args[12];
	int n = 0, status;
	pid_t pid;

	args[n++] = "--once";
	args[n++] = "--quiet";
	args[n++] = "-o";
	args[n++] = (char *)outdir;
	if (debugfs) {
		args[n++] = "--debugfs";
		args[n++] = (char *)debugfs;
	}
	for (; symbols && *symbols && n < 11; symbols++)
		args[n++] = *symbols;
	args[n] = NULL;
	pid = start_daemon(args);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "debugfs", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *outdir = NULL, *debugfs = NULL;
	char name[64], mode[16], on[8];
	struct ctl ctl;
	int c;

	while ((c = cmd_getopt(argc, argv, "o:d:h", opts)) != -1) {
		if (c == 'o')
			outdir = optarg;
		else if (c == 'd')
			debugfs = optarg;
	}
	if (optind != argc)
		usage_error("no arguments are taken (-o names the directory)");
	if (geteuid())
		die("needs root: it reads ringtrace's buffers");
	find_control(&ctl, debugfs);
	if (ctl_read(&ctl, "mode", mode, sizeof(mode)) < 0 ||
	    ctl_read(&ctl, "tracing_on", on, sizeof(on)) < 0)
		die("%s: %s", ctl.dir, strerror(errno));
	if (strcmp(mode, "overwrite"))
		warn("the buffers are in %s mode: they hold the oldest events, not the newest (set overwrite mode for a flight recorder)",
		     mode);
	if (strcmp(on, "1"))
		warn("tracing is off: writing what the buffers hold");
	if (!outdir) {
		time_t t = time(NULL);

		strftime(name, sizeof(name), "ringtrace-snapshot-%Y%m%d-%H%M%S",
			 localtime(&t));
		outdir = name;
	}
	if (!access(outdir, F_OK))
		usage_error("%s exists: -o names a new directory", outdir);
	if (snapshot_write(outdir, debugfs, NULL))
		die("ringtraced failed (see above): no snapshot");
	printf("snapshot in %s: ringtrace report %s\n", outdir, outdir);
	return 0;
}

const struct command cmd_snapshot = {
	.name = "snapshot",
	.summary = "write what the flight recorder holds now, while tracing goes on",
	.help =
"Usage: ringtrace snapshot [-o DIR] [-d DEBUGFS]\n"
"\n"
"The flight recorder: with the buffers in overwrite mode, tracing on and\n"
"no ringtraced draining them, they hold the newest events.  snapshot\n"
"writes what they hold now into the trace directory DIR (default\n"
"./ringtrace-snapshot-YYYYmmdd-HHMMSS) while tracing goes on.  What it\n"
"writes leaves the buffers.  Set it up once:\n"
"\n"
"  ringtrace stop; echo overwrite > /sys/kernel/debug/ringtrace/mode\n"
"  echo 1 > /sys/kernel/debug/ringtrace/events/enable; ringtrace start\n"
"\n"
"and take a snapshot when the incident happens (by hand, from a\n"
"monitoring check, or an OnFailure= unit):\n"
"\n"
"  ringtrace snapshot -o /var/tmp/incident-$(date +%s)\n"
"\n"
"  -o, --output DIR     the trace directory, new\n"
"  -d, --debugfs DIR    debugfs is mounted on DIR (default: debugfs, or\n"
"                       /dev/ringtrace when debugfs refuses)\n"
"  -h, --help           this text\n",
	.run = run,
};
