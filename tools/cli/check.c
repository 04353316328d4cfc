// SPDX-License-Identifier: GPL-2.0
/* ringtrace check: validate every packet and event of a trace directory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/chunk.h"
#include "cli.h"

/*
 * "chunks: N compressed, M stored": what `ringtrace compress` would do.  A
 * stored chunk of one empty frame (a CPU that recorded nothing) is not
 * counted: there is nothing in it to compress.
 */
static void chunk_summary(const struct rt_trace *t, const char *dir)
{
	unsigned int packed = 0, stored = 0;
	struct stat st;

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		for (unsigned int j = 0; j < t->cpus[i].nr_paths; j++) {
			int fd = open(t->cpus[i].paths[j], O_RDONLY | O_CLOEXEC);

			if (fd < 0)
				continue;
			switch (chunk_kind(fd)) {
			case CHUNK_KIND_PACKED:
				packed++;
				break;
			case CHUNK_KIND_STORED:
				stored += !fstat(fd, &st) &&
					  (uint64_t)st.st_size > chunk_stored_size(0);
				break;
			}
			close(fd);
		}
	}
	if (stored)
		printf("chunks: %u compressed, %u stored: 'ringtrace compress %s' compresses them\n",
		       packed, stored, dir);
	else if (packed)
		printf("chunks: %u compressed\n", packed);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "strict", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool verbose = false, bad = false, strict = false;
	unsigned int damaged;
	struct rt_trace *t;
	int c;

	while ((c = cmd_getopt(argc, argv, "vh", opts)) != -1) {
		if (c == 'v')
			verbose = true;
		else if (c == 's')
			strict = true;
	}
	if (argc - optind != 1)
		usage_error("one trace directory is needed");
	t = open_trace(argv[optind], strict);
	if (!t)
		return 1;
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		struct rt_trace_cpu *tc = &t->cpus[i];
		struct rt_error err;
		struct rt_item it;
		int r;

		while ((r = rt_stream_next(tc->stream, &it, &err)) > 0) {
			const struct rt_packet_info *p = it.packet;
			char b[48], e[48];

			if (!verbose || it.type != RT_ITEM_PACKET)
				continue;
			rt_format_ts(b, sizeof(b), t->md, p->timestamp_begin, false);
			rt_format_ts(e, sizeof(e), t->md, p->timestamp_end, false);
			printf("  %s offset=%" PRIu64 " seq=%" PRIu64 " events=%u discarded=%" PRIu64
			       " content=%" PRIu64 " size=%" PRIu64 " begin=%s end=%s\n",
			       p->file, p->offset, p->seq, p->events, p->events_discarded,
			       p->content_bytes, p->packet_bytes, b, e);
		}
		if (r < 0) {
			warn("%s", err.msg);
			bad = true;
			continue;
		}
		print_cpu_summary(t, tc, stdout);
	}
	damaged = damage_report(t);
	chunk_summary(t, argv[optind]);
	rt_trace_close(t);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	return bad ? 1 : damaged ? EXIT_DAMAGED : 0;
}

const struct command cmd_check = {
	.name = "check",
	.summary = "validate every packet and event of a trace directory",
	.help =
"Usage: ringtrace check [-v] [--strict] DIR\n"
"\n"
"Validate every packet and every event of the trace directory DIR.  Damage\n"
"(a corrupt packet, a zero-filled or garbage tail, a corrupt zstd frame) is\n"
"read past: stderr says what was skipped (file, offset, bytes) and the exit\n"
"status is 3; with --strict it is an error (exit 1).  Prints per CPU:\n"
"packets, events, discarded (the last packet's events_discarded: lost\n"
"since the recording began),\n"
"lost_packets (sequence numbers missing), the first and last event time,\n"
"and what a killed writer cut; then how many chunks are compressed and\n"
"how many are still stored (uncompressed).\n"
"\n"
"  -v, --verbose   also list every packet\n"
"      --strict    any damage is an error\n"
"  -h, --help      this text\n",
	.run = run,
};
