// SPDX-License-Identifier: GPL-2.0
/*
 * What ringtraced tells: the summary at stop and on SIGUSR1 (stdout),
 * systemd's STATUS= line, and the progress of the compression backlog.
 *
 * The summary, per CPU then in all:
 *   CPU n: P sub-buffers, B bytes in, S bytes stored, C chunks
 *   CPU n: L events lost (full .., overrun .., held .., nested .., too big ..); W written, D delivered
 *   total: P sub-buffers, B bytes in, S bytes stored, L events lost
 *   chunks: N closed: K compressed (I -> O bytes, ratio R), Q waiting (..
 *           bytes stored), U uncompressed; W workers, X busy
 *   sync: R rounds, S skipped, F failed[ (first: DIR/FILE: why)]
 *   cpu time: drain D s, compression C s
 *   on-chunk: S sets, H handed off, F hooks failed (T timed out, K ended
 *             by the stop), Q waiting, R running; N not handed (queue
 *             full), A not assembled; E of earlier traces
 *
 * The module's counters (written, delivered, lost) are this recording's:
 * since the daemon opened the buffers (buffer_stats(), buffer_lost()),
 * not since the module loaded.
 *
 * STATUS= every 10 s, and at the tick after an --on-chunk hook failed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

static double mib(uint64_t bytes)
{
	return (double)bytes / (1 << 20);
}

static double ratio(uint64_t in, uint64_t out)
{
	return out ? (double)in / (double)out : 0.0;
}

/* The drain threads' CPU time: their own once exited. */
static double drain_cpu_s(void)
{
	double s = 0;

	for (unsigned int i = 0; i < ncpus; i++)
		s += __atomic_load_n(&cpus[i].exited, __ATOMIC_ACQUIRE) ?
		     cpus[i].cpu_s : cpus[i].started ?
		     pthread_cpu_s(cpus[i].thread) : 0;
	return s;
}

void report_print(const char *title)
{
	uint64_t packets = 0, in = 0, out = 0, lost_all = 0, spliced = 0;
	char first[PATH_MAX + 128];
	struct syncer_stats ss;
	struct packer_stats ps;
	struct ringtrace_stats st;
	unsigned int i;
	int err;

	report("%s", title);
	for (i = 0; i < ncpus; i++) {
		struct chunk_writer *w = &cpus[i].out;
		uint64_t lost;

		report("CPU %u: %llu sub-buffers, %llu bytes in, %llu bytes stored, %llu chunks",
		       w->cpu, (unsigned long long)COUNTER_READ(w->packets),
		       (unsigned long long)COUNTER_READ(w->bytes_in),
		       (unsigned long long)COUNTER_READ(w->bytes_out),
		       (unsigned long long)COUNTER_READ(w->chunks));
		packets += COUNTER_READ(w->packets);
		spliced += COUNTER_READ(w->spliced);
		in += COUNTER_READ(w->bytes_in);
		out += COUNTER_READ(w->bytes_out);

		err = buffer_stats(&cpus[i].buf, &st);
		if (err) {
			report("CPU %u: GET_STATS: %s", w->cpu, strerror(-err));
			continue;
		}
		lost = st.lost_full + st.lost_overrun + st.lost_held +
		       st.lost_nested + st.lost_too_big;
		lost_all += lost;
		report("CPU %u: %llu events lost (full %llu, overrun %llu, held %llu, nested %llu, too big %llu); %llu written, %llu delivered",
		       w->cpu, (unsigned long long)lost,
		       (unsigned long long)st.lost_full,
		       (unsigned long long)st.lost_overrun,
		       (unsigned long long)st.lost_held,
		       (unsigned long long)st.lost_nested,
		       (unsigned long long)st.lost_too_big,
		       (unsigned long long)st.written,
		       (unsigned long long)st.delivered);
	}
	report("total: %llu sub-buffers, %llu bytes in, %llu bytes stored, %llu events lost",
	       (unsigned long long)packets, (unsigned long long)in,
	       (unsigned long long)out, (unsigned long long)lost_all);
	report("stored by splice: %llu sub-buffers (the others with pwritev)",
	       (unsigned long long)spliced);
	packer_stats(&ps);
	report("chunks: %llu compressed (%llu -> %llu bytes, ratio %.2f), %llu waiting (%llu bytes stored), %llu uncompressed (%llu bytes); %u workers, %u busy",
	       (unsigned long long)ps.packed, (unsigned long long)ps.packed_in,
	       (unsigned long long)ps.packed_out,
	       ratio(ps.packed_in, ps.packed_out),
	       (unsigned long long)ps.queued + ps.busy,
	       (unsigned long long)ps.queued_bytes + ps.packing_bytes,
	       (unsigned long long)ps.kept,
	       (unsigned long long)ps.kept_bytes, ps.workers, ps.busy);
	syncer_status(&ss);
	first[0] = '\0';
	if (ss.failed)
		snprintf(first, sizeof(first), " (first: %s%s%s: %s)", outdir,
			 strcmp(ss.fail_name, ".") ? "/" : "",
			 strcmp(ss.fail_name, ".") ? ss.fail_name : "",
			 strerror(-ss.fail_err));
	report("sync: %llu rounds, %llu skipped, %llu failed%s",
	       (unsigned long long)ss.rounds, (unsigned long long)sync_skipped,
	       (unsigned long long)ss.failed, first);
	report("cpu time: drain %.3f s, compression %.3f s", drain_cpu_s(),
	       ps.cpu_s);
	if (opt.on_chunk) {
		struct handoff_stats hs;

		handoff_status(&hs);
		report("on-chunk: %llu sets, %llu handed off, %llu hooks failed (%llu timed out, %llu ended by the stop), %u waiting, %s; %llu not handed (queue full), %llu not assembled; %llu of earlier traces",
		       (unsigned long long)hs.sets,
		       (unsigned long long)hs.hooks_ok,
		       (unsigned long long)hs.hooks_failed,
		       (unsigned long long)hs.hooks_timed_out,
		       (unsigned long long)hs.hooks_stopped, hs.queued,
		       hs.running ? "1 running" : "none running",
		       (unsigned long long)hs.not_handed,
		       (unsigned long long)hs.failed_sets,
		       (unsigned long long)hs.recovered);
	}
}

void report_status(void)
{
	static time_t last;
	uint64_t packets = 0, bytes = 0, lost = 0;
	struct syncer_stats ss;
	struct packer_stats ps;
	char status[768];
	struct handoff_stats hs = { 0 };
	char sets[192] = "";
	static uint64_t hooks_failed;
	unsigned int i;

	if (!msg_service)
		return;
	/* A hook that failed is news: said at this tick, not in 10 s. */
	if (opt.on_chunk)
		handoff_status(&hs);
	if (hs.hooks_failed != hooks_failed)
		hooks_failed = hs.hooks_failed;
	else if (!due_every_10s(&last))
		return;
	for (i = 0; i < ncpus; i++) {
		packets += COUNTER_READ(cpus[i].out.packets);
		bytes += COUNTER_READ(cpus[i].out.bytes_out);
		lost += buffer_lost(&cpus[i].buf);
	}
	packer_stats(&ps);
	syncer_status(&ss);
	if (opt.on_chunk) {
		snprintf(sets, sizeof(sets), "; %llu sets, %llu handed off, %llu hooks failed, %u waiting, %llu not handed",
			 (unsigned long long)hs.sets,
			 (unsigned long long)hs.hooks_ok,
			 (unsigned long long)hs.hooks_failed, hs.queued,
			 (unsigned long long)hs.not_handed);
	}
	snprintf(status, sizeof(status),
		 "STATUS=%s: %llu packets, %.1f MiB written, %llu events lost, %llu syncs%s%s%s%s; %llu chunks compressed, %llu waiting (%.1f MiB stored)%s",
		 outname, (unsigned long long)packets, mib(bytes),
		 (unsigned long long)lost, (unsigned long long)ss.rounds,
		 ss.failed ? ", sync failed: " : "",
		 ss.failed ? ss.fail_name : "", ss.failed ? ": " : "",
		 ss.failed ? strerror(-ss.fail_err) : "",
		 (unsigned long long)ps.packed,
		 (unsigned long long)ps.queued + ps.busy,
		 mib(ps.queued_bytes + ps.packing_bytes), sets);
	notify_systemd(status);
}

/*
 * Progress of the compression left at stop.  On a terminal it is shown
 * even with --quiet: `ringtrace record` runs the daemon quietly, and a
 * user waiting at a prompt wants to know why.
 */
void report_backlog(const char *what)
{
	struct packer_stats ps;

	if (msg_quiet && !isatty(STDERR_FILENO))
		return;
	packer_stats(&ps);
	fprintf(stderr, "%s: compressing: %llu chunks (%.1f MiB) left, %u of %u workers busy%s%s\n",
		PROG, (unsigned long long)ps.queued + ps.busy,
		mib(ps.queued_bytes + ps.packing_bytes), ps.busy, ps.workers,
		what ? "; " : "", what ? what : "");
}
