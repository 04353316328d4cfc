// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace export: a trace directory in the formats viewers read, one
 * file per format (export.h): systrace (export_systrace.c), chrome-json
 * (export_chrome.c), perfetto (export_perfetto.c).
 *
 * Every format streams: the CPUs merged in time order, each event with its
 * thread (rt_threads), the format's memory following the number of
 * threads, never the size of the trace.  What the trace says was lost
 * while recording, and damage read past, are reported on stderr; damage
 * makes the exit status 3, as for report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "debuginfod.h"
#include "export.h"
#include "traceset.h"
#include "unwind.h"
#include "window.h"

static const struct export_format *const formats[] = {
	&export_systrace, &export_chrome_json, &export_lttng,
	&export_perfetto,
};

/* ---- what the formats share ------------------------------------------------------- */

int64_t ex_int(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : 0;
}

const char *ex_text(const struct rt_item *it, const char *name, char *buf,
		    size_t size)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_TEXT);
	size_t n = 0;

	if (v)
		n = strnlen((const char *)v->data, v->count);
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(buf, v->data, n);
	buf[n] = '\0';
	return buf;
}

ex_ns_t ex_ns(const struct rt_metadata *md, uint64_t cycles)
{
	return (ex_ns_t)cycles * 1000000000 / md->clock_freq;
}

const char *ex_softirq_name(int64_t vec)
{
	/* include/linux/interrupt.h, as show_softirq_name() prints them. */
	static const char *const names[] = {
		"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
		"TASKLET", "SCHED", "HRTIMER", "RCU",
	};

	return vec >= 0 && vec < ARRAY_SIZE(names) ? names[vec] : NULL;
}

const char *ex_syscall_name(const struct export_ctx *x, int64_t id)
{
	return x->syscall_id ? rt_field_label(x->syscall_id, id) : NULL;
}

static int cmp_tid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int32_t *ex_known_threads(const struct rt_threads *th, size_t *n)
{
	size_t pos = 0, cap = 256;
	int32_t *v = malloc(cap * sizeof(*v)), tid;

	*n = 0;
	while (v && (tid = rt_threads_next(th, &pos)) >= 0) {
		if (*n == cap) {
			int32_t *g = realloc(v, 2 * cap * sizeof(*v));

			if (!g) {
				free(v);
				v = NULL;
				break;
			}
			v = g;
			cap *= 2;
		}
		v[(*n)++] = tid;
	}
	if (!v) {
		error_line("out of memory");
		return NULL;
	}
	/* The table's order is its hash's: a window must not depend on it. */
	qsort(v, *n, sizeof(*v), cmp_tid);
	return v;
}

/* ---- the command ----------------------------------------------------------------- */

/* syscall_entry's id field, whose enum names the system calls. */
static const struct rt_field_desc *syscall_id_field(const struct rt_metadata *md)
{
	for (unsigned int i = 0; i < md->nr_events; i++) {
		const struct rt_event_desc *ev = &md->events[i];
		int k;

		if (strcmp(ev->name, "syscall_entry") || ev->unsupported)
			continue;
		k = rt_event_field(ev, "id", RT_USE_INT);
		if (k >= 0)
			return &ev->fields[k];
	}
	return NULL;
}

/*
 * Feeds the merged items in @w to the format; -1 on its error or the
 * merge's.  Threads are learnt from everything read, as report's are.
 */
static int feed(struct export_ctx *x, const struct export_format *fmt,
		struct rt_trace *t, const struct window *w, uint64_t *lost)
{
	struct rt_threads *th = (struct rt_threads *)x->th;
	const struct rt_item *it;
	const char *error;
	struct merge *m;
	int err = 0;

	m = merge_trace(t, false);
	if (!m) {
		error_line("out of memory");
		return -1;
	}
	while (!err && (it = merge_next(m))) {
		int32_t tid;
		bool keep;

		/*
		 * Stacks.  The formats that take user stacks join each
		 * event's themselves (tools/lib/stackrec.h) and are given
		 * every trailer, a stack_def even out of the window (a
		 * definition before it serves refs in it).  The others are
		 * given an event's kernel stack alone: a kernel_stack, or a
		 * stack_ref that gave one (export_stack_ips()).
		 */
		if (fmt->user_stacks) {
			keep = window_holds(w, it->timestamp) ||
			       stackrec_is_def(x->sr, it);
		} else {
			stackrec_feed(x->sr, it);
			keep = window_holds(w, it->timestamp) &&
			       !stackrec_is_def(x->sr, it) &&
			       !(stackrec_is_trailer(x->sr, it) && !stack_ips(it) &&
				 !export_stack_ips(x, it));
		}
		if (keep) {
			tid = rt_threads_owner(th, it);
			if (it->type == RT_ITEM_LOST)
				*lost += it->lost_events;
			err = fmt->item(x, it, tid);
		}
		rt_threads_feed(th, it);
	}
	error = merge_error(m);
	if (!err && error) {
		error_line("%s", error);
		err = -1;
	}
	merge_close(m);
	return err;
}

const struct rt_field_value *export_stack_ips(struct export_ctx *x,
					      const struct rt_item *it)
{
	const struct rt_field_value *v = stack_ips(it);
	const struct stack_ips *k;

	if (v || !x->sr || !(k = stackrec_ref_kernel(x->sr, it)))
		return v;
	if (k->nr * 8 > x->ref_cap) {
		uint8_t *p = realloc(x->ref_bytes, k->nr * 8);

		if (!p)
			return NULL;
		x->ref_bytes = p;
		x->ref_cap = k->nr * 8;
	}
	/* Little endian, as a field's elements are (rt_field_u64()). */
	for (uint32_t i = 0; i < k->nr; i++)
		for (unsigned int b = 0; b < 8; b++)
			x->ref_bytes[i * 8 + b] = (uint8_t)(k->ips[i] >> (8 * b));
	x->ref_desc = (struct rt_field_desc){
		.name = "ips", .kind = RT_FIELD_SEQUENCE, .bits = 64, .align = 1,
		.base = 16,
	};
	x->ref_ips = (struct rt_field_value){
		.desc = &x->ref_desc, .count = k->nr, .data = x->ref_bytes,
	};
	return &x->ref_ips;
}

/*
 * The recording the directories hold, or NULL said: every format here
 * writes one machine's kernel trace (one clock, one set of CPUs and
 * threads), so several are refused rather than folded into one.
 */
static struct tset *open_one(char *const *dirs, unsigned int n, bool strict)
{
	struct tset *ts = tset_open(dirs, n, strict);

	if (ts && ts->nr > 1) {
		error_line("the directories hold %u recordings (%s%s%s%s): a format writes one machine's trace; export each recording's directories on their own",
			   ts->nr, *ts->m[0].host ? ts->m[0].host : "-",
			   ts->nr > 1 ? ", " : "", *ts->m[1].host ? ts->m[1].host : "-",
			   ts->nr > 2 ? ", ..." : "");
		tset_close(ts);
		return NULL;
	}
	for (unsigned int g = 0; ts && g < ts->m[0].nr_gaps; g++) {
		const struct tset_gap *gap = &ts->m[0].gaps[g];

		warn("chunk sets %u-%u not given: the export has a hole there",
		     gap->first, gap->last);
	}
	return ts;
}

/* The directories @dirs as @fmt into @out (NULL: stdout): the exit status. */
static int export_trace(char *const *dirs, unsigned int n,
			const struct export_format *fmt, const char *out,
			const char *begin, const char *end, const char *binaries,
			bool strict)
{
	struct export_ctx x = { .out = out, .f = stdout, .binaries = binaries };
	struct rt_threads *th = NULL;
	struct window w;
	struct rt_trace *t;
	struct tset *ts;
	uint64_t lost = 0;
	int err = -1, status;

	ts = open_one(dirs, n, strict);
	if (!ts)
		return 1;
	t = ts->m[0].t;
	window_parse(&w, begin, end, t->md,
		     window_from_start(begin, end) ? tset_first_event(&ts->m[0]) : 0,
		     false);
	if (window_apply(ts, 0, &w))
		goto close_trace;
	x.t = t;
	x.md = t->md;
	x.syscall_id = syscall_id_field(t->md);
	if (out && !fmt->directory && !(x.f = fopen(out, "we"))) {
		error_line("%s: %s", out, strerror(errno));
		goto close_trace;
	}
	th = rt_threads_new(t->md);
	if (!th) {
		error_line("out of memory");
		goto close_out;
	}
	x.th = th;
	x.sr = stackrec_new(t->md);
	if (!x.sr) {
		error_line("out of memory");
		goto free_threads;
	}
	x.windowed = w.has_begin;
	if (window_threads(ts, 0, th))
		goto free_threads;
	err = fmt->begin(&x);
	if (!err)
		err = feed(&x, fmt, t, &w, &lost);
	if (fmt->end(&x, !err))
		err = -1;
	if (!err && !fmt->directory && (fflush(x.f) || ferror(x.f))) {
		error_line("%s: %s", out ? out : "stdout", strerror(errno));
		err = -1;
	}
	if (x.unknown)
		warn("%" PRIu64 " events left out: their thread is unknown (before their CPU's state dump or first sched_switch, or after a loss there)",
		     x.unknown);
	if (lost)
		warn("the trace reports %" PRIu64 " events lost while recording",
		     lost);
free_threads:
	stack_lost_warn(x.sr);
	stackrec_free(x.sr);
	free(x.ref_bytes);
	rt_threads_free(th);
close_out:
	if (x.f != stdout && fclose(x.f) && !err) {
		error_line("%s: %s", out, strerror(errno));
		err = -1;
	}
close_trace:
	status = damage_report(t) ? EXIT_DAMAGED : 0;
	tset_close(ts);
	return err ? 1 : status;
}

static const struct export_format *find_format(const char *name)
{
	if (!strcmp(name, "json"))
		name = "chrome-json";
	for (int i = 0; i < ARRAY_SIZE(formats); i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "strict", no_argument, NULL, 's' },
		{ "begin", required_argument, NULL, 'b' },
		{ "end", required_argument, NULL, 'e' },
		{ "binaries", required_argument, NULL, 'B' },
		{ "no-debuginfod", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL, *out = NULL, *begin = NULL, *end = NULL;
	const char *binaries = NULL;
	struct stat st;
	const struct export_format *fmt;
	bool strict = false;
	int c;

	while ((c = cmd_getopt(argc, argv, "f:o:h", opts)) != -1) {
		if (c == 'f')
			format = optarg;
		else if (c == 'o')
			out = optarg;
		else if (c == 's')
			strict = true;
		else if (c == 'b')
			begin = optarg;
		else if (c == 'e')
			end = optarg;
		else if (c == 'B')
			binaries = optarg;
		else if (c == 'D')
			dbginfo_disable();
	}
	if (argc - optind < 1)
		usage_error("a trace directory is needed");
	if (!format)
		usage_error("-f FORMAT is needed: " EXPORT_FORMATS);
	fmt = find_format(format);
	if (!fmt)
		usage_error("-f: '%s' is not one of " EXPORT_FORMATS, format);
	if (fmt->directory && !out)
		usage_error("-f %s writes a directory: -o DIR names it", fmt->name);
	if (binaries && (stat(binaries, &st) || !S_ISDIR(st.st_mode)))
		usage_error("--binaries %s: not a directory", binaries);
	c = export_trace(argv + optind, (unsigned int)(argc - optind), fmt,
			 out, begin, end, binaries, strict);
	dbginfo_end();
	return c;
}

/* `export --help`: the fixed part, then each format's paragraph. */
static void help(FILE *f)
{
	fputs("Usage: ringtrace export -f FORMAT [-o OUT] DIR...\n"
	      "\n"
	      "Convert the trace directory DIR, streaming (memory stays flat);\n"
	      "a DIR that ringtraced --on-chunk made, with its chunk sets.\n"
	      "Several DIRs are the chunk sets of one recording (or their\n"
	      "directory, or the daemon's DIR), in any order: read as one trace,\n"
	      "a set found twice once, a missing set said on stderr.  Several\n"
	      "recordings (hosts) are refused: each format holds one machine's\n"
	      "trace; export each on its own.\n"
	      "\n", f);
	for (int i = 0; i < ARRAY_SIZE(formats); i++)
		fputs(formats[i]->help, f);
	fputs("\n"
	      "  -f, --format FORMAT   " EXPORT_FORMATS "\n"
	      "  -o, --output OUT      the file (or directory) to write (default:\n"
	      "                        standard output, for formats that are a file)\n"
	      "      --begin TIME      from TIME: seconds as report prints them, or\n"
	      "                        +DURATION from the first event (+1.5s)\n"
	      "      --end TIME        up to TIME, the same way; a window reads only\n"
	      "                        the frames of the chunks that hold it\n"
	      "      --strict          damage in the trace is an error (default: read\n"
	      "                        past it, say what was skipped, exit status 3)\n"
	      "      --binaries DIR    more binaries to unwind user stack copies with\n"
	      "                        (perfetto; as report --binaries)\n"
	      "      --no-debuginfod   no debug files from debuginfod for user frames\n"
	      "                        (perfetto; as report --no-debuginfod)\n"
	      "  -h, --help            this text\n", f);
}

const struct command cmd_export = {
	.name = "export",
	.summary = "convert a trace for viewers: " EXPORT_FORMATS,
	.help_fn = help,
	.run = run,
};
