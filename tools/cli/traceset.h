/* SPDX-License-Identifier: GPL-2.0 */
/*
 * traceset.c: several trace or chunk-set directories read as one -- what
 * a person has after a shipper collected a fleet's --on-chunk sets.
 *
 * Each directory is a trace directory (metadata and cpuN* streams) or a
 * chunk set (the same plus manifest.json, ringtraced --on-chunk).  The
 * chunk sets of one recording -- one host, trace name and trace uuid (a
 * module load) in their manifests, never two boot ids -- are one member:
 * ordered by their sequence numbers
 * (whatever order they were given in), each CPU's chunks read as one
 * stream, decoded with the newest set's metadata (it declares every event
 * the older ones do: checked).  A sequence number missing between two
 * given ones is a gap, with the time range it covers.  A plain trace
 * directory is a member of its own.
 *
 * Members are merged on wall-clock time: a member's clock offset is its
 * first set's manifest's realtime_offset_ns, or a plain trace's metadata
 * clock offset.  With one member the items come exactly as merge_next()
 * gives them (report's output is that of the whole trace).
 *
 * Everything read is untrusted: a manifest that does not parse, does not
 * say what a set holds, names a trace uuid its metadata does not have, or
 * sets that disagree, is an error naming the directory -- printed with
 * error_line(), never an exit.
 */
#ifndef RINGTRACE_TRACESET_H
#define RINGTRACE_TRACESET_H

#include "cli.h"

/* Chunk sets first..last of a member are missing: between these times. */
struct tset_gap {
	unsigned int first, last;	/* sequence numbers */
	bool leading;			/* before the first set given: no start */
	uint64_t from, to;		/* clock cycles of the member's trace */
};

/* A member's chunk file, and what its set's manifest says of it. */
struct tset_file {
	const char *path;		/* the one in its rt_trace_cpu's paths */
	int cpu;
	bool promised;			/* the manifest lists it: */
	uint64_t size, xxh64;		/* checked where it is opened */
	bool timed;			/* the manifest gives its first packet's */
	uint64_t first;			/* timestamp_begin (clock cycles) */
};

/* Damage found in a member's sets: said by CPU @cpu's stream (-1: any). */
struct tset_damage {
	int cpu;
	char *what;
};

struct tset_member {
	struct rt_trace *t;		/* its sets joined: one stream per CPU */
	char *host;			/* "" when the trace does not say */
	char *boot_id;			/* the manifests'; "" for a plain trace */
	unsigned int first_seq, last_seq;	/* its sets' sequence numbers */
	__int128 wall_offset_ns;	/* wall-clock = ns of a timestamp + this */
	/*
	 * The same measured as the recording began (the metadata's clock, as
	 * last copied) and, if @has_wall_end, as it ended: the directory's
	 * CLOCK_FILE (lib/clockfile.h), else its newest set's manifest that
	 * was not recovered.
	 */
	__int128 wall_start_ns, wall_end_ns;
	bool has_wall_end;
	unsigned int nr_sets;		/* 0: a plain trace directory */
	unsigned int nr_gaps;
	struct tset_gap *gaps;		/* by time */
	unsigned int nr_files;
	struct tset_file *files;	/* chunk sets' members only */
	unsigned int nr_damage;
	struct tset_damage *damage;	/* given to the streams as they open */
};

struct tset {
	bool strict;
	unsigned int nr;
	struct tset_member *m;
};

/* The directories as members, or NULL with the reason printed. */
struct tset *tset_open(char *const *dirs, unsigned int n, bool strict);
void tset_close(struct tset *ts);
/* The first event's time of a member (for +DURATION); 0 if none. */
uint64_t tset_first_event(const struct tset_member *m);
/* Nanoseconds of wall-clock time of a member's @cycles. */
__int128 tset_wall_ns(const struct tset_member *m, uint64_t cycles);

/*
 * Only [@begin, @end] (the member's clock cycles) of member @member is
 * needed: its streams get that window (rt_stream_set_window()); with
 * @seek, each CPU's chunks that its set's manifest puts after the window
 * are not opened at all, those before a later chunk that starts before it
 * only if the CPU's thread is looked for there (rt_stream_set_cold()),
 * and the rest read from the frames that can hold it.
 * Before tset_merge_open(); 0, or -1 said.
 */
int tset_window(struct tset *ts, unsigned int member, uint64_t begin,
		uint64_t end, bool seek);

/*
 * A view: member @member read by one reader of its own (ringtrace sql's
 * cursors, several at once), the member's streams untouched.  Fresh
 * streams of the CPUs @cpus says (by index in the member's t->cpus; NULL:
 * all), tolerant unless --strict, with what the manifests promise; with
 * @windowed only [@begin, @end] is needed, as tset_window() says.  The
 * trace it gives shares the member's metadata and paths, its cpus[] (and
 * so nr_cpus) the view's own: merge_open() and damage_report() read it.
 * NULL with @err set when a stream cannot be opened.
 */
struct tset_view;
struct tset_view *tset_view_open(struct tset *ts, unsigned int member,
				 const bool *cpus, bool windowed, uint64_t begin,
				 uint64_t end, bool seek, struct rt_error *err);
/*
 * tset_view_open() windowed, each CPU by a window of its own: [@begins[i],
 * @ends[i]] for the member's CPU of index i (as @cpus).
 */
struct tset_view *tset_view_open_cpus(struct tset *ts, unsigned int member,
				      const bool *cpus, const uint64_t *begins,
				      const uint64_t *ends, bool seek, struct rt_error *err);
struct rt_trace *tset_view_trace(struct tset_view *v);
void tset_view_close(struct tset_view *v);

/*
 * Every member's items (and gaps) merged on wall-clock time: NULL at the
 * end or at the first error (tset_merge_error()).  An item stays valid
 * until the next call.
 */
struct tset_item {
	unsigned int member;
	const struct rt_item *it;	/* NULL: a gap */
	const struct tset_gap *gap;
};
struct tset_merge;
struct tset_merge *tset_merge_open(struct tset *ts);
const struct tset_item *tset_merge_next(struct tset_merge *tm);
const char *tset_merge_error(const struct tset_merge *tm);
void tset_merge_close(struct tset_merge *tm);

/*
 * print_end() for several members: stdout flushed, every member's damage
 * reported, @error last; the exit status.
 */
int tset_print_end(const struct tset *ts, const char *error);

#endif /* RINGTRACE_TRACESET_H */
