// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace symbols: fills a trace's symbol store (lib/usyms.h) with the
 * binaries its user_mmap events name, while they still exist on this
 * machine: the exact file a process mapped through /proc/PID/map_files/
 * while it lives, else the path.  A file is kept only if its build-id is
 * the event's; the binaries the trace's user stacks ran in go first, then
 * the others in the order they were mapped, up to --max bytes stored.
 * ringtraced does the same when a recording stops (lib/symfill.h), the
 * binaries no stack hit left out.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../../lib/symfill.h"
#include "../../lib/usyms.h"

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct symfill *sf = symfill_new();
	struct symfill_result r;
	uint64_t max = SYMFILL_DEFAULT_MAX;
	struct rt_trace *t;
	const char *dir;
	char why[256];
	int o, dirfd, status;

	if (!sf)
		die("out of memory");
	while ((o = cmd_getopt(argc, argv, "m:h", opts)) != -1)
		if (o == 'm' && !parse_size(optarg, &max))
			usage_error("--max: '%s' is not a size like 512M", optarg);
	if (argc - optind != 1)
		usage_error("a trace directory is needed");
	dir = argv[optind];
	t = open_trace(dir, false);
	if (!t) {
		status = 1;
		goto out;
	}
	if (symfill_scan(sf, t, why, sizeof(why))) {
		error_line("%s", why);
		rt_trace_close(t);
		status = 1;
		goto out;
	}
	status = damage_report(t) ? EXIT_DAMAGED : 0;
	rt_trace_close(t);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		error_line("%s: %s", dir, strerror(errno));
		status = 1;
		goto out;
	}
	/* Not the binaries' fault: the store's (a full disk, say). */
	if (symfill_store(sf, dirfd, max, "--max", SYMFILL_ALL, &r))
		status = 1;
	close(dirfd);
	printf("stored %u binar%s (%" PRIu64 " bytes) in %s/" USYMS_DIR "; %u already there, %u not stored\n",
	       r.stored, r.stored == 1 ? "y" : "ies", r.bytes, dir, r.had, r.missing);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
out:
	symfill_free(sf);
	return status;
}

const struct command cmd_symbols = {
	.name = "symbols",
	.summary = "keep the binaries a trace's user stacks ran in, for report on any machine",
	.help =
"Usage: ringtrace symbols [-m SIZE] DIR\n"
"\n"
"Copy into the trace directory DIR's symbol store (DIR/" USYMS_DIR "/, one\n"
"zstd-compressed file per build-id) each binary its user_mmap events\n"
"name, so that report names user frames on any machine, after the\n"
"binaries are gone.  A process that still lives gives the very file it\n"
"mapped (/proc/PID/map_files/, which takes root); else the path is read.\n"
"A file whose build-id is not the trace's is left out (it changed since).\n"
"The binaries the user stacks ran in go first, then the others in the\n"
"order they were mapped.  Run it on the recording machine, soon after\n"
"the recording: what is deleted or upgraded by then cannot be kept.\n"
"ringtraced (and so record) does this by itself when a recording stops,\n"
"with the binaries the stacks hit only (--symbols-max, --no-symbols).\n"
"What is not stored is listed in " USYMS_DIR "/missing with the reason.\n"
"\n"
"  -m, --max SIZE  stop storing past SIZE bytes (K, M, G; default 256M)\n"
"  -h, --help      this text\n",
	.run = run,
};
