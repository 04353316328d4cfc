// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace recover: the trace the persistent region kept across a crash,
 * a reboot or a module reload, written as an ordinary trace directory.
 * ringtraced --recover does the work (daemon/prevboot.c: the same code the
 * service runs at boot); this passes the options on and its exit status
 * back.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "image", required_argument, NULL, 'i' },
		{ "debugfs", required_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "keep", no_argument, NULL, 'k' },
		{ "discard", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *args[16];
	int n = 0, c, status;
	pid_t pid;

	args[n++] = "--recover";
	while ((c = cmd_getopt(argc, argv, "o:d:h", opts)) != -1) {
		switch (c) {
		case 'o':
			args[n++] = "--output";
			args[n++] = optarg;
			break;
		case 'i':
			args[n++] = "--image";
			args[n++] = optarg;
			break;
		case 'd':
			args[n++] = "--debugfs";
			args[n++] = optarg;
			break;
		case 'f':
			args[n++] = "--force";
			break;
		case 'k':
			args[n++] = "--keep";
			break;
		case 'x':
			args[n++] = "--discard";
			break;
		}
		if (n > 12)
			usage_error("an option given more than once");
	}
	if (optind != argc)
		usage_error("no arguments are taken (-o names the directory)");
	args[n] = NULL;
	pid = start_daemon(args);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	die("ringtraced --recover was killed by signal %d", WTERMSIG(status));
}

const struct command cmd_recover = {
	.name = "recover",
	.summary = "write the trace the persistent region kept across a crash",
	.help =
"Usage: ringtrace recover [-o DIR] [--image FILE] [--force] [--keep]\n"
"       ringtrace recover --discard\n"
"\n"
"With ringtrace.ko loaded with a persistent region (persist=NAME, or\n"
"persist_addr= and persist_size=), the per-CPU rings live in memory that\n"
"outlives the module and, where the memory does, the kernel.  After a\n"
"crash and a reboot (or a module reload) the module keeps what the region\n"
"holds as an image, until it is released; recover writes it as an\n"
"ordinary trace directory that report, export and sql read (babeltrace2\n"
"after unpack): the image's metadata and kernel symbols, a stream per\n"
"CPU (after a panic, an emergency restart or a shutdown, the CPU that\n"
"ran the crash hook ends with a kernel_panic event, its stack with it),\n"
"and .ringtrace-crash.json with the crash path's entries and the\n"
"accounting (packets and events kept, records dropped in flight, partial\n"
"and damaged packets per CPU).  Once the directory is synced, the region\n"
"is released: the next recording uses it.\n"
"\n"
"Everything is checked before it is believed.  A region with no image\n"
"(a cold boot: zeros or noise) says \"no previous trace\", writes\n"
"nothing, exit 0.  A damaged header is refused, naming the field.  An\n"
"image of another kernel build is refused, naming both builds, unless\n"
"--force.  A packet that was being written at the crash keeps what was\n"
"committed of it; the records in flight are dropped and counted.  A\n"
"packet that fails a check is left out, named on stderr and saved under\n"
"DIR/.ringtrace-damaged/: exit 3, the rest of the trace intact.\n"
"\n"
"  -o, --output DIR     the trace directory, new or empty (default\n"
"                       ./ringtrace-YYYYmmdd-HHMMSS-previous-boot, when\n"
"                       the region was armed)\n"
"      --image FILE     read FILE, a copy of persist/image, instead of the\n"
"                       module's image (nothing is released)\n"
"      --force          read an image of another kernel build, with the\n"
"                       image's own metadata and symbols\n"
"      --keep           do not release the region\n"
"      --discard        release the region without writing anything\n"
"  -d, --debugfs DIR    debugfs is mounted on DIR\n"
"  -h, --help           this text\n"
"\n"
"Runs ringtraced --recover (the service does at boot).  Exit status: 0\n"
"written, or no previous trace; 1 refused or an error (the region is kept);\n"
"3 written with damaged packets left out.\n",
	.run = run,
};
