// SPDX-License-Identifier: GPL-2.0
/* ringtrace: what the commands that read trace directories share. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "traceset.h"

/*
 * A trace directory as traceset.c reads one: with the chunk sets a daemon
 * made under it, checked against their manifests.
 */
struct rt_trace *open_trace(const char *dir, bool strict)
{
	char *dirs[1] = { (char *)dir };
	struct tset *ts = tset_open(dirs, 1, strict);
	struct rt_trace *t;

	if (!ts)
		return NULL;
	if (ts->nr != 1) {
		error_line("%s: holds %u recordings: read each one's directories on their own",
			   dir, ts->nr);
		tset_close(ts);
		return NULL;
	}
	t = ts->m[0].t;
	ts->m[0].t = NULL;
	tset_close(ts);
	return t;
}

int trace_cpu_index(const struct rt_trace *t, uint32_t cpu)
{
	unsigned int lo = 0, hi = t->nr_cpus;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if ((uint32_t)t->cpus[mid].cpu == cpu)
			return (int)mid;
		if ((uint32_t)t->cpus[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

unsigned int damage_report(const struct rt_trace *t)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		const struct rt_stream *s = t->cpus[i].stream;
		unsigned int nr = rt_stream_nr_damage(s), shown = 0;

		/* Not damage: a window read a file whole instead of seeking. */
		for (unsigned int j = 0; j < rt_stream_nr_index_notes(s); j++)
			if (rt_stream_index_note(s, j))
				warn("note: %s", rt_stream_index_note(s, j));

		for (unsigned int j = 0; j < nr; j++) {
			const char *d = rt_stream_damage(s, j);

			if (d) {
				warn("damaged: %s", d);
				shown++;
			}
		}
		if (shown < nr)
			warn("damaged: cpu%d: %u more damaged place%s, not described",
			     t->cpus[i].cpu, nr - shown, nr - shown == 1 ? "" : "s");
		n += nr;
	}
	if (n)
		warn("%u damaged place%s read past (--strict fails instead)",
		     n, n == 1 ? "" : "s");
	return n;
}

int print_end(const struct rt_trace *t, const char *error)
{
	int status;

	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	status = damage_report(t) ? EXIT_DAMAGED : 0;
	if (error) {
		error_line("%s", error);
		status = 1;
	}
	return status;
}

void print_cpu_summary(const struct rt_trace *t, const struct rt_trace_cpu *c,
		       FILE *f)
{
	const struct rt_stream_stats *st = rt_stream_stats(c->stream);
	unsigned int nr = rt_stream_nr_notes(c->stream);
	char first[48] = "-", last[48] = "-";

	if (st->events) {
		rt_format_ts(first, sizeof(first), t->md, st->first_ts, false);
		rt_format_ts(last, sizeof(last), t->md, st->last_ts, false);
	}
	fprintf(f, "cpu%d: packets=%" PRIu64 " events=%" PRIu64 " discarded=%" PRIu64
		" lost_packets=%" PRIu64 " first=%s last=%s\n", c->cpu, st->packets,
		st->events, st->discarded, st->lost_packets, first, last);
	for (unsigned int i = 0; i < nr; i++) {
		const char *note = rt_stream_note(c->stream, i);

		if (!note) {
			fprintf(f, "cpu%d: truncated: %u more, not described\n",
				c->cpu, nr - i);
			break;
		}
		fprintf(f, "cpu%d: truncated: %s\n", c->cpu, note);
	}
}

struct merge *merge_trace(struct rt_trace *t, bool packets)
{
	struct merge *m = merge_open(t, packets);

	if (!m)
		die("out of memory");
	return m;
}
