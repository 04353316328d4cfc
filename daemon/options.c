// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced's command line: --help, and getopt_long() into `opt`.
 * Usage errors print one line and exit 2.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "../lib/ctlsave.h"
#include "../lib/symfill.h"
#include "../lib/usyms.h"
#include "ringtraced.h"

#define DEFAULT_FLUSH_MS	1000
#define DEFAULT_MAX_SIZE	(64ULL << 20)
#define DEFAULT_HOOK_MS		(10 * 60 * 1000)
#define DEFAULT_HOOK_KILL_MS	5000
#define DEFAULT_MAX_TOTAL_MS	10000
#define DEFAULT_HOOK_QUEUE	16
/* Under ringtraced.service's TimeoutStopSec=60: 10 s for the summary, exit. */
#define SERVICE_STOP_MS		(50 * 1000)
#define MAX_WORKERS		64

enum { EXIT_USAGE = 2 };

struct options opt = {
	.level = CHUNK_DEFAULT_LEVEL,
	.flush_ms = DEFAULT_FLUSH_MS,
	.max_size = DEFAULT_MAX_SIZE,
	.start = true,
	.hook_ms = DEFAULT_HOOK_MS,
	.hook_kill_ms = DEFAULT_HOOK_KILL_MS,
	.max_total_ms = DEFAULT_MAX_TOTAL_MS,
	.hook_queue = DEFAULT_HOOK_QUEUE,
	.symbols_max = SYMFILL_DEFAULT_MAX,
};

struct level_name level_name(int level)
{
	struct level_name n;

	if (level == RT_LEVEL_STORE)
		snprintf(n.s, sizeof(n.s), "store");
	else
		snprintf(n.s, sizeof(n.s), "%d", level);
	return n;
}

/* One packer per online CPU, at most four: they only use idle time. */
static unsigned int default_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 4 ? 4 : (unsigned int)n;
}

/*
 * "1: 1.5  3: 3.7 ..." MiB per packer, from libzstd's own estimate, four
 * levels to a line of --help.
 */
static void memory_table(char *buf, size_t size)
{
	static const int levels[] = { 1, 3, 6, 9, 12, 15, 19, 22 };
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < ARRAY_SIZE(levels) && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%3d: %4.1f",
					 !i ? "" : i % 4 ? "   " :
					 "\n                             ",
					 levels[i],
					 (double)chunk_pack_memory(levels[i]) /
					 (1 << 20));
}

static void usage(FILE *f)
{
	char mem[256];

	memory_table(mem, sizeof(mem));
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"Record ringtrace's per-CPU buffers into a trace directory: the CTF metadata\n"
"and, per CPU, chunk files cpuN-000001.zst, cpuN-000002.zst, ... of whole\n"
"packets copied verbatim.  A thread per CPU writes each packet into its chunk\n"
"uncompressed, as fast as it can be copied (a 'stored' zstd frame); once a\n"
"chunk closes, a worker thread compresses it on idle CPU time and replaces it\n"
"in one rename.  Either kind is a zstd file: `ringtrace unpack DIR OUT` (or\n"
"`zstd -d` on each file, with the metadata) gives a CTF 1.8 trace that\n"
"babeltrace2 reads.\n"
"\n"
"Output:\n"
"  -o, --output=DIR          trace directory to create; it must not exist, or be\n"
"                            empty, this user's and written by no one else\n"
"                            (default ./ringtrace-YYYYmmdd-HHMMSS, or\n"
"                            " SERVICE_DIR "/YYYYmmdd-HHMMSS with --service)\n"
"  -l, --level=N             zstd level the workers compress closed chunks at,\n"
"                            %d..%d (negative is faster, 0 is zstd's default,\n"
"                            3), or 'store' to keep them uncompressed\n"
"                            (default %d).  Memory per worker in MiB, by level\n"
"                            (the zstd window is at most %u MiB):\n"
"                              %s\n"
"                            Draining needs no memory of its own per CPU: it\n"
"                            writes the kernel's pages into the chunks from\n"
"                            its mapping (or splices them: --splice)\n"
"      --splice              store each packet by splicing its pages from the\n"
"                            buffer file where the module can (a module older\n"
"                            than splice: pwritev() all the same); costs more\n"
"                            CPU than pwritev() on 6.12 (benchmarks.rst)\n"
"  -j, --workers=N           compression threads, 1..%d (default: one per\n"
"                            online CPU, at most 4, here %u); they run at idle\n"
"                            priority while recording, so a load that leaves\n"
"                            no CPU idle costs disk (chunks stay uncompressed\n"
"                            until it lets up), never events\n"
"  -s, --max-size=SIZE       close a chunk before it grows past SIZE bytes\n"
"                            (suffix K, M, G; default 64M), at least one\n"
"                            sub-buffer and its frame's few header bytes; a\n"
"                            compressed chunk is smaller still\n"
"  -t, --chunk-time=TIME     also close a chunk TIME after its first packet\n"
"                            (200ms, 10s, 5m; default: only by size)\n"
"  -n, --max-files=N         keep at most N chunks per CPU, removing the oldest\n"
"                            (default: all)\n"
"      --root=DIR            make the trace directory in DIR, a new one per\n"
"                            start, named YYYYmmdd-HHMMSS (default with\n"
"                            --service: " SERVICE_DIR ")\n"
"      --max-total=SIZE      keep the traces in --root's directory under SIZE\n"
"                            bytes together, checked at start and every\n"
"                            --max-total-interval: the oldest whole traces go\n"
"                            first (one in use, by ringtrace compress, waits),\n"
"                            then the running trace's oldest closed chunks,\n"
"                            whatever their CPU\n"
"      --max-total-interval=TIME  how often --max-total checks, 100ms to 1h\n"
"                            (default 10s): between two checks the traces may\n"
"                            grow past SIZE by what is written meanwhile\n"
"      --symbols-max=SIZE    when the recording stops, keep the binaries its\n"
"                            user stacks ran in, up to SIZE bytes compressed\n"
"                            (default 256M), in the trace's symbol store\n"
"                            (" USYMS_DIR "/: report names their frames on\n"
"                            any machine); what is left out is listed in\n"
"                            " USYMS_DIR "/missing with the reason\n"
"      --no-symbols          keep no binaries\n"
"  -f, --flush-interval=MS   every MS milliseconds close the CPUs' open packets\n"
"                            and have a thread of its own fdatasync the files\n"
"                            (0 = only at stop; default %d).  What survives: a\n"
"                            kill of the daemon (even SIGKILL) loses nothing\n"
"                            the module counts as delivered; a power loss\n"
"                            loses at most the last MS milliseconds and one\n"
"                            sync's time.  Each chunk is always whole, either\n"
"                            stored or compressed, never half.  A sync that\n"
"                            fails (EIO: the data may be gone) stops the\n"
"                            recording, as a failed write does\n"
"\n"
"What to record:\n"
"  -c, --cpus=LIST           CPUs to record, e.g. 0-3,8 (default: all)\n"
"      --start               turn tracing on at start and off at exit (default)\n"
"      --no-start            leave tracing_on alone: record whatever is traced\n"
"      --stop-on-exit        turn tracing off at exit even with --no-start\n"
"      --once                record what the buffers hold now, then exit\n"
"                            (a snapshot: implies --no-start, tracing goes on)\n"
"      --subbuf-size=SIZE    set the module's sub-buffer size first\n"
"      --num-subbufs=N       set the number of sub-buffers per CPU first\n"
"      --mode=MODE           set the buffer mode first: discard or overwrite\n"
"                            (these three are written only when they differ\n"
"                            from the current values: a change drops unread data\n"
"                            and needs tracing off)\n"
"      --debugfs=DIR         where debugfs is mounted (default /sys/kernel/debug);\n"
"                            without it, /dev/ringtrace when debugfs refuses\n"
"                            ringtrace's files (Secure Boot lockdown) or is\n"
"                            not mounted\n"
"\n"
"Handing chunks off:\n"
"      --on-chunk=CMD        every rotation closes every CPU's chunk together\n"
"                            (by size or age of any CPU's chunk, SIGHUP, stop)\n"
"                            into a chunk set: once compressed and synced, its\n"
"                            chunks, a copy of the metadata and manifest.json\n"
"                            (host, boot id, kernel, clocks, counts, checksums)\n"
"                            move into DIR/chunk-NNNNNN/, a trace directory of\n"
"                            its own, and CMD runs, one set at a time, never in\n"
"                            the drain's way; it may move the set away.  A CMD\n"
"                            that is a program alone (a word without blanks or\n"
"                            any of |&;<>()$`\\\"' naming an executable file: a\n"
"                            path, or a name in PATH, e.g.\n"
"                            /usr/local/sbin/ship-chunk) runs as\n"
"                            `CMD SETDIR MANIFEST`; any other CMD is shell\n"
"                            text, run by `/bin/sh -c CMD` with SETDIR as $1\n"
"                            and MANIFEST as $2 (warned about at start if it\n"
"                            uses neither, or ends in '&': what it leaves in\n"
"                            the background may read a set counted shipped).\n"
"                            Either way its environment has\n"
"                            RINGTRACE_CHUNK_DIR=SETDIR,\n"
"                            RINGTRACE_MANIFEST=SETDIR/manifest.json, and\n"
"                            RINGTRACE_CHUNK_RETRY=1 when an earlier ringtraced\n"
"                            may have handed it this set already (else 0).\n"
"                            Exit status 0 marks the set shipped; after any\n"
"                            other end it stays on disk, and the next start\n"
"                            with --on-chunk hands over every set not shipped\n"
"                            (also those a kill, a crash or the stop's deadline\n"
"                            left queued or unassembled) in the traces beside\n"
"                            its own.  Its exit status is logged\n"
"      --on-chunk-timeout=TIME  SIGTERM the hook's process group after TIME\n"
"                            (default 10m), SIGKILL --on-chunk-kill-after later\n"
"      --on-chunk-kill-after=TIME  from a hook's SIGTERM to its SIGKILL, 100ms\n"
"                            to 10m (default 5s): the time a hook has to clean\n"
"                            up after its timeout or before the stop's deadline\n"
"      --on-chunk-queue=N    at most N sets of this trace wait in the hook's\n"
"                            queue (default %d), where --max-total never takes\n"
"                            them; one more waits on disk (logged), queued\n"
"                            once there is room\n"
"\n"
"Flight recorder:\n"
"      --trigger='EVENT: EXPR'  the buffers in overwrite mode, never drained:\n"
"                            they hold the newest events.  When an EVENT whose\n"
"                            fields pass EXPR is written (the grammar of\n"
"                            events/EVENT/filter; ringtrace_marker, fields data\n"
"                            and comm, always), the kernel wakes ringtraced,\n"
"                            which waits --after, has the kernel write the\n"
"                            marker 'ringtrace trigger: EVENT: EXPR ...', saves\n"
"                            what the buffers hold (as --once does) as a trace\n"
"                            directory of its own, YYYYmmdd-HHMMSS.mmm-EVENT\n"
"                            (the hit's time), and arms the trigger again.\n"
"                            The snapshots go into -o DIR (created if need be),\n"
"                            --root (--max-total counts them), with --service\n"
"                            into " SERVICE_DIR ", else into\n"
"                            ./ringtrace-YYYYmmdd-HHMMSS.\n"
"                            One per EVENT; repeat it for several events.  At\n"
"                            exit the triggers and the mode are put back\n"
"      --after=TIME          save TIME after the hit (500ms, 2s; default 0),\n"
"                            so that what followed it is in too\n"
"      --max=N               at most N snapshots; then the triggers are put\n"
"                            back and tracing goes on, saving nothing more\n"
"                            (the log and STATUS= say so)\n"
"\n"
"Previous boot (the persistent region, ringtrace recover):\n"
"      --recover             write the trace the persistent region kept (of the\n"
"                            previous boot, or the previous module load) as a\n"
"                            trace directory (-o DIR; default, in --root, with\n"
"                            --service in " SERVICE_DIR ", else in .:\n"
"                            [ringtrace-]YYYYmmdd-HHMMSS-previous-boot, the time\n"
"                            the region was armed), then release the region,\n"
"                            and exit: 0 written or nothing to recover (\"no\n"
"                            previous trace\"), 1 refused or an error, 3 written\n"
"                            with damage left out (named on stderr, saved under\n"
"                            DIR/.ringtrace-damaged/)\n"
"      --image=FILE          with --recover: read FILE (a copy of persist/image)\n"
"                            instead of the module's image; nothing is released\n"
"      --force               with --recover: read an image of another kernel\n"
"                            build (with its own metadata and symbols)\n"
"      --keep                with --recover: do not release the region\n"
"      --discard             with --recover: release the region, write nothing\n"
"\n"
"Running:\n"
"      --service             run under systemd (Type=notify): log with syslog\n"
"                            priorities, notify readiness, default output dir\n"
"                            under " SERVICE_DIR "; without it the daemon also\n"
"                            stays in the foreground and logs to stderr\n"
"      --stop-timeout=TIME   a stop takes at most TIME from the signal (30s,\n"
"                            2m; 0: no bound): what is not compressed by then\n"
"                            stays stored, and with --on-chunk what is not\n"
"                            handed off stays for the next start (a hook\n"
"                            still running gets SIGTERM --on-chunk-kill-after\n"
"                            before TIME, at once if less is left, and SIGKILL\n"
"                            at TIME; no hook starts in that last stretch; a\n"
"                            hand-off stuck in a call is left 2 s after it).\n"
"                            The drain of the buffers and the last sync, which\n"
"                            come first, are not bounded.  Default: none; with\n"
"                            --service %llus, within ringtraced.service's\n"
"                            TimeoutStopSec=60\n"
"  -q, --quiet               no notes on stderr (errors and warnings still)\n"
"      --wakeup=N            wake a CPU's drain thread once N sub-buffers are\n"
"                            complete, not for each (at most half the ring;\n"
"                            default a quarter of it, 1 with -f 0): fewer\n"
"                            wakeups for the same data; the flush interval\n"
"                            still bounds how long a packet waits, and once\n"
"                            the ring is half full every packet wakes it\n"
"      --test-delay-us=US    testing: sleep US microseconds per sub-buffer to\n"
"                            play a slow disk (losses are counted by the module)\n"
"      --restore-fd=FD       how ringtrace record starts it: FD is record's\n"
"                            restore file (" CTLSAVE_PATH ",\n"
"                            open and locked): if record is gone when\n"
"                            ringtraced stops, the control files it changed\n"
"                            are written back from it (those that still\n"
"                            read as record set them).  Without it, a start\n"
"                            (not --once) first writes back what a record\n"
"                            and its ringtraced, both killed, left there\n"
"  -h, --help                print this help and exit\n"
"  -V, --version             print the version and exit\n"
"\n"
"Signals: SIGINT/SIGTERM stop: tracing off (or a flush), drain, fsync, then\n"
"compress what is left uncompressed, with progress every few seconds, and\n"
"with --on-chunk assemble and hand off the last sets; a second SIGINT/SIGTERM\n"
"(or --stop-timeout) leaves the rest uncompressed (readable as it is), and\n"
"the sets not handed off for the next start (a hook still running gets\n"
"SIGKILL at once), and exits.  SIGHUP closes every\n"
"CPU's chunk now; SIGUSR1 prints statistics.\n"
"Exit status: 0 after a clean stop, 1 on an error, 2 on a usage error\n"
"(--recover: above).\n",
		ZSTD_minCLevel(), ZSTD_maxCLevel(), CHUNK_DEFAULT_LEVEL,
		1U << (CHUNK_PACK_WINDOW_LOG - 20), mem, MAX_WORKERS,
		default_workers(), DEFAULT_FLUSH_MS, DEFAULT_HOOK_QUEUE,
		(unsigned long long)SERVICE_STOP_MS / 1000);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry '" PROG " --help' for more information.\n", stderr);
	exit(EXIT_USAGE);
}

enum {
	OPT_START = 256,
	OPT_NO_START,
	OPT_ONCE,
	OPT_STOP_ON_EXIT,
	OPT_SUBBUF_SIZE,
	OPT_NUM_SUBBUFS,
	OPT_MODE,
	OPT_DEBUGFS,
	OPT_SERVICE,
	OPT_ROOT,
	OPT_MAX_TOTAL,
	OPT_MAX_TOTAL_INTERVAL,
	OPT_TEST_DELAY,
	OPT_ON_CHUNK,
	OPT_ON_CHUNK_TIMEOUT,
	OPT_ON_CHUNK_KILL_AFTER,
	OPT_ON_CHUNK_QUEUE,
	OPT_STOP_TIMEOUT,
	OPT_WAKEUP,
	OPT_TRIGGER,
	OPT_AFTER,
	OPT_MAX,
	OPT_RESTORE_FD,
	OPT_SYMBOLS_MAX,
	OPT_NO_SYMBOLS,
	OPT_SPLICE,
	OPT_RECOVER,
	OPT_IMAGE,
	OPT_FORCE,
	OPT_KEEP,
	OPT_DISCARD,
};

/*
 * --trigger: the buffers are the flight recorder, in overwrite mode and
 * never drained; what a drained recording's options steer does not apply.
 */
static void check_trigger_options(bool no_start)
{
	if (opt.mode && strcmp(opt.mode, "overwrite"))
		usage_error("--trigger needs --mode overwrite (the default with it): the buffers are the flight recorder it saves");
	opt.mode = "overwrite";
	if (opt.once)
		usage_error("--once and --trigger: a snapshot now, or one at each trigger");
	if (no_start || opt.stop_on_exit)
		usage_error("--trigger turns tracing on at start and off at exit: no --no-start or --stop-on-exit");
	if (opt.cpus)
		usage_error("--cpus: --trigger's snapshots take every CPU's buffer");
	if (opt.on_chunk)
		usage_error("--on-chunk hands off the chunks of a drained recording; with --trigger each snapshot is a trace directory of its own");
	if (opt.max_files || opt.chunk_ms)
		usage_error("--max-files and --chunk-time shape a drained recording's chunks; with --trigger nothing is drained");
}

void parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output",		required_argument, NULL, 'o' },
		{ "level",		required_argument, NULL, 'l' },
		{ "workers",		required_argument, NULL, 'j' },
		{ "max-size",		required_argument, NULL, 's' },
		{ "chunk-time",		required_argument, NULL, 't' },
		{ "max-files",		required_argument, NULL, 'n' },
		{ "flush-interval",	required_argument, NULL, 'f' },
		{ "cpus",		required_argument, NULL, 'c' },
		{ "start",		no_argument,	   NULL, OPT_START },
		{ "no-start",		no_argument,	   NULL, OPT_NO_START },
		{ "stop-on-exit",	no_argument,	   NULL, OPT_STOP_ON_EXIT },
		{ "once",		no_argument,	   NULL, OPT_ONCE },
		{ "quiet",		no_argument,	   NULL, 'q' },
		{ "version",		no_argument,	   NULL, 'V' },
		{ "subbuf-size",	required_argument, NULL, OPT_SUBBUF_SIZE },
		{ "num-subbufs",	required_argument, NULL, OPT_NUM_SUBBUFS },
		{ "mode",		required_argument, NULL, OPT_MODE },
		{ "debugfs",		required_argument, NULL, OPT_DEBUGFS },
		{ "service",		no_argument,	   NULL, OPT_SERVICE },
		{ "root",		required_argument, NULL, OPT_ROOT },
		{ "max-total",		required_argument, NULL, OPT_MAX_TOTAL },
		{ "max-total-interval",	required_argument, NULL, OPT_MAX_TOTAL_INTERVAL },
		{ "test-delay-us",	required_argument, NULL, OPT_TEST_DELAY },
		{ "on-chunk",		required_argument, NULL, OPT_ON_CHUNK },
		{ "on-chunk-timeout",	required_argument, NULL, OPT_ON_CHUNK_TIMEOUT },
		{ "on-chunk-kill-after", required_argument, NULL, OPT_ON_CHUNK_KILL_AFTER },
		{ "on-chunk-queue",	required_argument, NULL, OPT_ON_CHUNK_QUEUE },
		{ "stop-timeout",	required_argument, NULL, OPT_STOP_TIMEOUT },
		{ "wakeup",		required_argument, NULL, OPT_WAKEUP },
		{ "trigger",		required_argument, NULL, OPT_TRIGGER },
		{ "after",		required_argument, NULL, OPT_AFTER },
		{ "max",		required_argument, NULL, OPT_MAX },
		{ "restore-fd",		required_argument, NULL, OPT_RESTORE_FD },
		{ "symbols-max",	required_argument, NULL, OPT_SYMBOLS_MAX },
		{ "no-symbols",		no_argument,	   NULL, OPT_NO_SYMBOLS },
		{ "splice",		no_argument,	   NULL, OPT_SPLICE },
		{ "recover",		no_argument,	   NULL, OPT_RECOVER },
		{ "image",		required_argument, NULL, OPT_IMAGE },
		{ "force",		no_argument,	   NULL, OPT_FORCE },
		{ "keep",		no_argument,	   NULL, OPT_KEEP },
		{ "discard",		no_argument,	   NULL, OPT_DISCARD },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool after = false, no_start = false, stop_timeout = false, symbols = false;
	bool max_total_interval = false, kill_after = false;
	char why[512];
	int c;

	opt.workers = default_workers();
	opt.triggers.file = "trigger";
	opt.triggers.option = "--trigger";
	while ((c = getopt_long(argc, argv, "o:l:j:s:t:n:f:c:qhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				usage_error("--output: empty directory name");
			opt.output = optarg;
			break;
		case 'l':
			if (!strcmp(optarg, "store"))
				opt.level = RT_LEVEL_STORE;
			else if (!chunk_parse_level(optarg, &opt.level))
				usage_error("--level: '%s' is not a zstd level (%d..%d) or 'store'",
					    optarg, ZSTD_minCLevel(),
					    ZSTD_maxCLevel());
			break;
		case 'j':
			if (!parse_uint(optarg, &opt.workers) || !opt.workers ||
			    opt.workers > MAX_WORKERS)
				usage_error("--workers: '%s' is not a number of threads (1..%d)",
					    optarg, MAX_WORKERS);
			break;
		case 's':
			if (!parse_size(optarg, &opt.max_size) || !opt.max_size)
				usage_error("--max-size: '%s' is not a size in bytes (e.g. 64M)",
					    optarg);
			opt.max_size_given = true;
			break;
		case 't':
			if (!parse_duration_ms(optarg, &opt.chunk_ms) ||
			    !opt.chunk_ms)
				usage_error("--chunk-time: '%s' is not a duration (e.g. 500ms, 10s)",
					    optarg);
			break;
		case 'n':
			if (!parse_uint(optarg, &opt.max_files) || !opt.max_files)
				usage_error("--max-files: '%s' is not a number of files >= 1",
					    optarg);
			break;
		case 'f':
			if (!parse_uint(optarg, &opt.flush_ms) ||
			    opt.flush_ms > 3600 * 1000)
				usage_error("--flush-interval: '%s' is not a number of milliseconds (0..3600000)",
					    optarg);
			break;
		case 'c':
			if (!parse_cpu_list(optarg, NULL, NULL))
				usage_error("--cpus: '%s' is not a CPU list (e.g. 0-3,8)",
					    optarg);
			opt.cpus = optarg;
			break;
		case OPT_START:
			opt.start = true;
			break;
		case OPT_NO_START:
			opt.start = false;
			no_start = true;
			break;
		case OPT_ONCE:
			opt.once = true;
			opt.start = false;
			break;
		case 'q':
			msg_quiet = true;
			break;
		case 'V':
			printf(PROG " %s\n", RINGTRACE_VERSION);
			exit(0);
		case OPT_STOP_ON_EXIT:
			opt.stop_on_exit = true;
			break;
		case OPT_SUBBUF_SIZE:
			if (!parse_size(optarg, &opt.subbuf_size) ||
			    !opt.subbuf_size)
				usage_error("--subbuf-size: '%s' is not a size in bytes",
					    optarg);
			break;
		case OPT_NUM_SUBBUFS:
			if (!parse_size(optarg, &opt.num_subbufs) ||
			    !opt.num_subbufs)
				usage_error("--num-subbufs: '%s' is not a number",
					    optarg);
			break;
		case OPT_MODE:
			if (strcmp(optarg, "discard") && strcmp(optarg, "overwrite"))
				usage_error("--mode: '%s' is neither discard nor overwrite",
					    optarg);
			opt.mode = optarg;
			break;
		case OPT_DEBUGFS:
			if (!*optarg)
				usage_error("--debugfs: empty directory name");
			opt.debugfs = optarg;
			break;
		case OPT_SERVICE:
			msg_service = true;
			break;
		case OPT_ROOT:
			if (!*optarg)
				usage_error("--root: empty directory name");
			opt.root = optarg;
			break;
		case OPT_MAX_TOTAL:
			if (!parse_size(optarg, &opt.max_total) || !opt.max_total)
				usage_error("--max-total: '%s' is not a size in bytes (e.g. 4G)",
					    optarg);
			break;
		case OPT_MAX_TOTAL_INTERVAL:
			if (!parse_duration_ms(optarg, &opt.max_total_ms) ||
			    opt.max_total_ms < 100 || opt.max_total_ms > 3600 * 1000)
				usage_error("--max-total-interval: '%s' is not a duration from 100ms to 1h (e.g. 2s)",
					    optarg);
			max_total_interval = true;
			break;
		case OPT_TEST_DELAY:
			if (!parse_uint(optarg, &opt.delay_us) ||
			    opt.delay_us > 10 * 1000 * 1000)
				usage_error("--test-delay-us: '%s' is not a number of microseconds (0..10000000)",
					    optarg);
			break;
		case OPT_ON_CHUNK:
			if (!*optarg)
				usage_error("--on-chunk: empty command");
			opt.on_chunk = optarg;
			break;
		case OPT_ON_CHUNK_TIMEOUT:
			if (!parse_duration_ms(optarg, &opt.hook_ms) ||
			    !opt.hook_ms)
				usage_error("--on-chunk-timeout: '%s' is not a duration (e.g. 30s, 10m)",
					    optarg);
			break;
		case OPT_ON_CHUNK_KILL_AFTER:
			if (!parse_duration_ms(optarg, &opt.hook_kill_ms) ||
			    opt.hook_kill_ms < 100 || opt.hook_kill_ms > 600 * 1000)
				usage_error("--on-chunk-kill-after: '%s' is not a duration from 100ms to 10m (e.g. 2s)",
					    optarg);
			kill_after = true;
			break;
		case OPT_ON_CHUNK_QUEUE:
			if (!parse_uint(optarg, &opt.hook_queue) ||
			    !opt.hook_queue || opt.hook_queue > 1024)
				usage_error("--on-chunk-queue: '%s' is not a number of sets (1..1024)",
					    optarg);
			break;
		case OPT_STOP_TIMEOUT:
			if (!parse_duration_ms(optarg, &opt.stop_ms))
				usage_error("--stop-timeout: '%s' is not a duration (e.g. 30s, 2m; 0: no bound)",
					    optarg);
			stop_timeout = true;
			break;
		case OPT_WAKEUP:
			if (!parse_uint(optarg, &opt.wakeup) || !opt.wakeup ||
			    opt.wakeup > RINGTRACE_MAX_SUBBUFS / 2)
				usage_error("--wakeup: '%s' is not a number of sub-buffers (1..%d)",
					    optarg, RINGTRACE_MAX_SUBBUFS / 2);
			break;
		case OPT_TRIGGER:
			if (filters_add(&opt.triggers, optarg, why, sizeof(why)))
				usage_error("%s", why);
			break;
		case OPT_AFTER:
			if (!parse_duration_ms(optarg, &opt.after_ms))
				usage_error("--after: '%s' is not a duration (e.g. 500ms, 2s)",
					    optarg);
			after = true;
			break;
		case OPT_MAX:
			if (!parse_uint(optarg, &opt.max_snapshots) ||
			    !opt.max_snapshots)
				usage_error("--max: '%s' is not a number of snapshots (1 or more)",
					    optarg);
			break;
		case OPT_RESTORE_FD:
			restore_option(optarg);
			break;
		case OPT_SYMBOLS_MAX:
			if (!parse_size(optarg, &opt.symbols_max))
				usage_error("--symbols-max: '%s' is not a size (e.g. 64M, 1G)",
					    optarg);
			symbols = true;
			break;
		case OPT_NO_SYMBOLS:
			opt.no_symbols = true;
			symbols = true;
			break;
		case OPT_SPLICE:
			opt.splice = true;
			break;
		case OPT_RECOVER:
			opt.recover = true;
			break;
		case OPT_IMAGE:
			opt.image = optarg;
			break;
		case OPT_FORCE:
			opt.force = true;
			break;
		case OPT_KEEP:
			opt.keep = true;
			break;
		case OPT_DISCARD:
			opt.discard = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			/* getopt_long() already said what was wrong. */
			fputs("Try '" PROG " --help' for more information.\n",
			      stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!stop_timeout && msg_service)
		opt.stop_ms = SERVICE_STOP_MS;
	if (opt.output && opt.root)
		usage_error("--output and --root: one or the other");
	if ((opt.image || opt.force || opt.keep || opt.discard) && !opt.recover)
		usage_error("--image, --force, --keep and --discard go with --recover");
	if (opt.recover && opt.discard && (opt.image || opt.keep || opt.output))
		usage_error("--discard releases the module's region and writes nothing: no --image, --keep or --output");
	if (opt.recover && (opt.once || opt.triggers.n || opt.on_chunk || opt.max_total))
		usage_error("--recover writes the region's trace and exits: no --once, --trigger, --on-chunk or --max-total");
	if (opt.max_total && (opt.output || opt.once))
		usage_error("--max-total budgets the traces of --root (or --service's %s), not --output's",
			    SERVICE_DIR);
	if (opt.max_total && !opt.root && !msg_service)
		usage_error("--max-total needs --root (or --service)");
	if (max_total_interval && !opt.max_total)
		usage_error("--max-total-interval needs --max-total");
	if (kill_after && !opt.on_chunk)
		usage_error("--on-chunk-kill-after needs --on-chunk");
	if ((after || opt.max_snapshots) && !opt.triggers.n)
		usage_error("--after and --max need --trigger");
	if (opt.triggers.n)
		check_trigger_options(no_start);
	if (opt.triggers.n && symbols)
		usage_error("--symbols-max and --no-symbols shape the symbol store a drained recording gets at its stop; --trigger's snapshots get none");
	if (opt.on_chunk && opt.max_files)
		usage_error("--max-files counts chunks per CPU; with --on-chunk they leave in sets: bound the disk with --max-total");
	if (opt.on_chunk)
		handoff_hook_option(opt.on_chunk);
}
