// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace export: a trace directory in the formats viewers read.
 *
 *   systrace     ftrace's text, as the kernel's own `trace` file prints the
 *                same tracepoints (each event's "print fmt"): Perfetto
 *                (ui.perfetto.dev, trace_processor) builds CPU scheduling
 *                and thread-state tracks from it.
 *   chrome-json  the Trace Event Format (chrome://tracing, Perfetto):
 *                threads named, system calls as complete slices per
 *                thread, markers as instant events.
 *
 * Both stream in time order with the thread of every event (rt_threads):
 * memory follows the number of threads, never the size of the trace.  An
 * event whose CPU has not said yet which thread runs there (before its
 * first sched_switch, when the trace has no state dump) is left out, and
 * counted on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum format { SYSTRACE, CHROME_JSON };

/* Softirq names of include/linux/interrupt.h, as show_softirq_name(). */
static const char *const softirq_names[] = {
	"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET",
	"SCHED", "HRTIMER", "RCU",
};

/* An integer field's value; 0 when the event has no such integer field. */
static int64_t fint(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? rt_field_s64(v, 0) : 0;
}

/* A text field as a C string (up to its first NUL). */
static const char *ftext(const struct rt_item *it, const char *name,
			 char *buf, size_t size)
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

/* ---- systrace ----------------------------------------------------------------- */

/* prev_state as ftrace prints it: S, D|W, R, R+ ... */
static void state_letters(char *buf, size_t size, int64_t state)
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < 8; i++)
		if (state & (1 << i))
			n += (size_t)snprintf(buf + n, size - n, "%s%c",
					      n ? "|" : "", letters[i]);
	if (!n)
		n = (size_t)snprintf(buf, size, "R");
	if (state & 256)
		snprintf(buf + n, size - n, "+");
}

static const char *ftrace_name(const char *name)
{
	if (!strcmp(name, "irq_softirq_entry"))
		return "softirq_entry";
	if (!strcmp(name, "irq_softirq_exit"))
		return "softirq_exit";
	if (!strcmp(name, "syscall_entry"))
		return "sys_enter";
	if (!strcmp(name, "syscall_exit"))
		return "sys_exit";
	if (!strcmp(name, "ringtrace_marker"))
		return "tracing_mark_write";
	return name;
}

/* Events ftrace has a counterpart of; the others are left out. */
static bool systrace_known(const char *name)
{
	static const char *const known[] = {
		"sched_switch", "sched_wakeup", "sched_wakeup_new",
		"sched_process_fork", "sched_process_exec", "sched_process_exit",
		"irq_handler_entry", "irq_handler_exit", "irq_softirq_entry",
		"irq_softirq_exit", "syscall_entry", "syscall_exit",
		"ringtrace_marker", "task_rename",
	};

	for (int i = 0; i < ARRAY_SIZE(known); i++)
		if (!strcmp(name, known[i]))
			return true;
	return false;
}

/*
 * The body of @it as the kernel's TP_printk prints its tracepoint.
 * Priorities go back to the kernel's (ringtrace records LTTng's, prio -
 * 100).
 */
static void systrace_body(FILE *f, const struct rt_item *it)
{
	const char *n = it->event->name;
	char a[64], b[64], st[48];

	if (!strcmp(n, "sched_switch")) {
		state_letters(st, sizeof(st), fint(it, "prev_state"));
		fprintf(f, "prev_comm=%s prev_pid=%" PRId64 " prev_prio=%" PRId64
			" prev_state=%s ==> next_comm=%s next_pid=%" PRId64
			" next_prio=%" PRId64,
			ftext(it, "prev_comm", a, sizeof(a)), fint(it, "prev_tid"),
			fint(it, "prev_prio") + 100, st,
			ftext(it, "next_comm", b, sizeof(b)), fint(it, "next_tid"),
			fint(it, "next_prio") + 100);
	} else if (!strcmp(n, "sched_wakeup") || !strcmp(n, "sched_wakeup_new")) {
		fprintf(f, "comm=%s pid=%" PRId64 " prio=%" PRId64 " target_cpu=%03" PRId64,
			ftext(it, "comm", a, sizeof(a)), fint(it, "tid"),
			fint(it, "prio") + 100, fint(it, "target_cpu"));
	} else if (!strcmp(n, "sched_process_fork")) {
		fprintf(f, "comm=%s pid=%" PRId64 " child_comm=%s child_pid=%" PRId64,
			ftext(it, "parent_comm", a, sizeof(a)), fint(it, "parent_tid"),
			ftext(it, "child_comm", b, sizeof(b)), fint(it, "child_tid"));
	} else if (!strcmp(n, "sched_process_exec")) {
		const struct rt_field_value *v = rt_item_field(it, "filename", RT_USE_TEXT);

		fputs("filename=", f);
		if (v)
			fwrite(v->data, 1, v->count, f);
		fprintf(f, " pid=%" PRId64 " old_pid=%" PRId64, fint(it, "tid"),
			fint(it, "old_tid"));
	} else if (!strcmp(n, "sched_process_exit")) {
		fprintf(f, "comm=%s pid=%" PRId64 " prio=%" PRId64,
			ftext(it, "comm", a, sizeof(a)), fint(it, "tid"),
			fint(it, "prio") + 100);
	} else if (!strcmp(n, "task_rename")) {
		fprintf(f, "pid=%" PRId64 " oldcomm=%s newcomm=%s oom_score_adj=%" PRId64,
			fint(it, "tid"), ftext(it, "oldcomm", a, sizeof(a)),
			ftext(it, "newcomm", b, sizeof(b)), fint(it, "oom_score_adj"));
	} else if (!strcmp(n, "irq_handler_entry")) {
		const struct rt_field_value *v = rt_item_field(it, "name", RT_USE_TEXT);

		fprintf(f, "irq=%" PRId64 " name=", fint(it, "irq"));
		if (v)
			fwrite(v->data, 1, v->count, f);
	} else if (!strcmp(n, "irq_handler_exit")) {
		fprintf(f, "irq=%" PRId64 " ret=%s", fint(it, "irq"),
			fint(it, "ret") ? "handled" : "unhandled");
	} else if (!strcmp(n, "irq_softirq_entry") ||
		   !strcmp(n, "irq_softirq_exit")) {
		int64_t vec = fint(it, "vec");

		fprintf(f, "vec=%" PRId64 " [action=%s]", vec,
			vec >= 0 && vec < ARRAY_SIZE(softirq_names) ?
			softirq_names[vec] : "UNKNOWN");
	} else if (!strcmp(n, "syscall_entry")) {
		const struct rt_field_value *v = rt_item_field(it, "args", RT_USE_INTS);

		fprintf(f, "NR %" PRId64 " (", fint(it, "id"));
		for (uint64_t i = 0; v && i < 6 && i < v->count; i++)
			fprintf(f, "%s%" PRIx64, i ? ", " : "", rt_field_u64(v, i));
		fputc(')', f);
	} else if (!strcmp(n, "syscall_exit")) {
		fprintf(f, "NR %" PRId64 " = %" PRId64, fint(it, "id"),
			fint(it, "ret"));
	} else if (!strcmp(n, "ringtrace_marker")) {
		const struct rt_field_value *v = rt_item_field(it, "data", RT_USE_TEXT);
		uint64_t len = v ? v->count : 0;

		/* Its trailing newline ends the line, as in ftrace. */
		while (len && v->data[len - 1] == '\n')
			len--;
		if (len)
			fwrite(v->data, 1, len, f);
	}
}

static void systrace_header(FILE *f, unsigned int nr_cpus)
{
	fprintf(f,
		"# tracer: nop\n"
		"#\n"
		"# exported by ringtrace %s   #P:%u\n"
		"#\n"
		"#                                _-----=> irqs-off/BH-disabled\n"
		"#                               / _----=> need-resched\n"
		"#                              | / _---=> hardirq/softirq\n"
		"#                              || / _--=> preempt-depth\n"
		"#                              ||| / _-=> migrate-disable\n"
		"#                              |||| /     delay\n"
		"#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		"#              | |         |   |||||     |         |\n",
		RINGTRACE_VERSION, nr_cpus);
}

/* "  comm-tid  [cpu] ..... sec.usec: event: body": trace_print_context(). */
static void systrace_line(FILE *f, const struct rt_metadata *md,
			  const struct rt_item *it, const char *comm,
			  int32_t tid)
{
	/* In integers: a slow clock's 64-bit times overflow a double's cast. */
	unsigned __int128 ns = (unsigned __int128)it->timestamp * 1000000000 /
			       md->clock_freq;

	if (!systrace_known(it->event->name))
		return;
	fprintf(f, "%16s-%-7" PRId32 " [%03u] ..... %5" PRIu64 ".%06" PRIu64
		": %s: ", tid == 0 ? "<idle>" : comm ? comm : "<...>", tid,
		it->cpu, (uint64_t)(ns / 1000000000),
		(uint64_t)(ns % 1000000000 / 1000),
		ftrace_name(it->event->name));
	systrace_body(f, it);
	fputc('\n', f);
}

/* ---- chrome-json ------------------------------------------------------------------- */

/* A JSON string of the bytes @s[0..n) (control and non-ASCII escaped). */
static void json_str(FILE *f, const void *s, size_t n)
{
	const unsigned char *p = s;

	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			fprintf(f, "\\u%04x", p[i]);
		else
			fputc(p[i], f);
	}
	fputc('"', f);
}

/* Threads already named in the output, and their open system call. */
struct jthread {
	int32_t tid;			/* first: the tidmap's key */
	char named[17];
	int64_t sc_id;			/* -1: none */
	uint64_t sc_start;
	const char *sc_name;		/* enum label, or NULL */
};

struct json {
	FILE *f;
	const struct rt_metadata *md;
	const struct rt_threads *th;
	struct rt_tidmap t;		/* struct jthread by tid */
	bool first;
	const struct rt_field_desc *idf;
};

static struct jthread *jthread(struct json *j, int32_t tid)
{
	bool created;
	struct jthread *t = rt_tidmap_get(&j->t, tid, &created);

	if (!t)
		die("out of memory");
	if (created)
		t->sc_id = -1;
	return t;
}

static double json_us(const struct json *j, uint64_t cycles)
{
	return (double)cycles * 1e6 / (double)j->md->clock_freq;
}

static void json_sep(struct json *j)
{
	fputs(j->first ? "\n" : ",\n", j->f);
	j->first = false;
}

static int32_t json_pid(const struct json *j, int32_t tid)
{
	int32_t pid = rt_threads_pid(j->th, tid);

	return pid >= 0 ? pid : tid;
}

/* thread_name metadata whenever a thread's name is new or changed. */
static void json_name(struct json *j, struct jthread *t, int32_t tid)
{
	const char *comm = tid ? rt_threads_comm(j->th, tid) : "<idle>";

	if (!comm || !strcmp(t->named, comm))
		return;
	snprintf(t->named, sizeof(t->named), "%s", comm);
	json_sep(j);
	fprintf(j->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId32
		",\"tid\":%" PRId32 ",\"args\":{\"name\":", json_pid(j, tid), tid);
	json_str(j->f, comm, strlen(comm));
	fputs("}}", j->f);
}

static void json_event(struct json *j, const struct rt_item *it, int32_t tid)
{
	const char *n = it->event->name;
	struct jthread *t = jthread(j, tid);

	json_name(j, t, tid);
	if (!strcmp(n, "syscall_entry")) {
		t->sc_id = fint(it, "id");
		t->sc_start = it->timestamp;
		t->sc_name = j->idf ? rt_field_label(j->idf, t->sc_id) : NULL;
	} else if (!strcmp(n, "syscall_exit")) {
		char num[24];

		if (t->sc_id < 0 || t->sc_id != fint(it, "id"))
			return;
		snprintf(num, sizeof(num), "syscall %" PRId64, t->sc_id);
		json_sep(j);
		fputs("{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":", j->f);
		json_str(j->f, t->sc_name ? t->sc_name : num,
			 strlen(t->sc_name ? t->sc_name : num));
		fprintf(j->f, ",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId32
			",\"tid\":%" PRId32 ",\"args\":{\"nr\":%" PRId64
			",\"ret\":%" PRId64 "}}",
			json_us(j, t->sc_start),
			json_us(j, it->timestamp - t->sc_start),
			json_pid(j, tid), tid, t->sc_id, fint(it, "ret"));
		t->sc_id = -1;
	} else if (!strcmp(n, "ringtrace_marker")) {
		const struct rt_field_value *v = rt_item_field(it, "data", RT_USE_TEXT);
		uint64_t len = v ? v->count : 0;

		while (len && v->data[len - 1] == '\n')
			len--;
		json_sep(j);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"marker\",\"name\":", j->f);
		json_str(j->f, v ? v->data : (const uint8_t *)"", len);
		fprintf(j->f, ",\"ts\":%.3f,\"pid\":%" PRId32 ",\"tid\":%" PRId32 "}",
			json_us(j, it->timestamp), json_pid(j, tid), tid);
	}
}

/* ---- the command ----------------------------------------------------------------- */

/* The trace directory @dir as @fmt into @out (NULL: stdout): the exit status. */
static int export_trace(const char *dir, enum format fmt, const char *out,
			bool strict)
{
	struct json j = { .first = true };
	uint64_t unknown = 0, skipped = 0;
	const struct rt_item *it;
	struct rt_threads *th;
	struct rt_trace *t;
	const char *error;
	struct merge *m;
	unsigned int max_cpu = 0;
	FILE *f = stdout;
	int status;

	t = open_trace(dir, strict);
	if (!t)
		return 1;
	if (out && !(f = fopen(out, "we")))
		die("%s: %s", out, strerror(errno));
	th = rt_threads_new(t->md);
	if (!th)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		if ((unsigned int)t->cpus[i].cpu + 1 > max_cpu)
			max_cpu = (unsigned int)t->cpus[i].cpu + 1;

	rt_tidmap_init(&j.t, sizeof(struct jthread));
	j.f = f;
	j.md = t->md;
	j.th = th;
	for (unsigned int i = 0; i < t->md->nr_events; i++) {
		const struct rt_event_desc *ev = &t->md->events[i];
		int k;

		if (strcmp(ev->name, "syscall_entry") || ev->unsupported)
			continue;
		k = rt_event_field(ev, "id", RT_USE_INT);
		if (k >= 0)
			j.idf = &ev->fields[k];
	}
	if (fmt == SYSTRACE)
		systrace_header(f, max_cpu);
	else
		fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);

	m = merge_open(t, false);
	while ((it = merge_next(m))) {
		int32_t tid;

		if (it->type != RT_ITEM_EVENT) {
			skipped += it->lost_events;
			continue;
		}
		tid = rt_threads_owner(th, it);
		if (tid < 0)
			unknown++;
		else if (fmt == SYSTRACE)
			systrace_line(f, t->md, it, rt_threads_comm(th, tid), tid);
		else
			json_event(&j, it, tid);
		rt_threads_feed(th, it);
	}
	error = merge_error(m);
	if (fmt == CHROME_JSON)
		fputs("\n]}\n", f);
	if (fflush(f) || ferror(f) || (out && fclose(f)))
		die("%s: %s", out ? out : "stdout", strerror(errno));
	if (unknown)
		warn("%" PRIu64 " events left out: their thread is unknown (before their CPU's state dump or first sched_switch)",
		     unknown);
	if (skipped)
		warn("the trace reports %" PRIu64 " events lost while recording",
		     skipped);
	status = damage_report(t) ? EXIT_DAMAGED : 0;
	if (error) {
		error_line("%s", error);
		status = 1;
	}
	merge_close(m);
	rt_tidmap_free(&j.t);
	rt_threads_free(th);
	rt_trace_close(t);
	return status;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "strict", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL, *out = NULL;
	enum format fmt;
	bool strict = false;
	int c;

	while ((c = cmd_getopt(argc, argv, "f:o:h", opts)) != -1) {
		if (c == 'f')
			format = optarg;
		else if (c == 'o')
			out = optarg;
		else if (c == 's')
			strict = true;
	}
	if (argc - optind != 1)
		usage_error("one trace directory is needed");
	if (!format)
		usage_error("-f FORMAT is needed: systrace or chrome-json");
	if (!strcmp(format, "systrace"))
		fmt = SYSTRACE;
	else if (!strcmp(format, "chrome-json") || !strcmp(format, "json"))
		fmt = CHROME_JSON;
	else
		usage_error("-f: '%s' is not systrace or chrome-json", format);
	return export_trace(argv[optind], fmt, out, strict);
}

const struct command cmd_export = {
	.name = "export",
	.summary = "convert a trace for viewers: systrace (Perfetto) or chrome-json",
	.help =
"Usage: ringtrace export -f FORMAT [-o FILE] DIR\n"
"\n"
"Convert the trace directory DIR, streaming (memory stays flat):\n"
"\n"
"  systrace      ftrace's text (`# tracer: nop`, then\n"
"                `comm-tid [cpu] flags seconds: event: fields`), each event\n"
"                printed as the kernel's own ftrace prints that tracepoint:\n"
"                sched_switch, sched_wakeup(_new), sched_process_fork/exec/\n"
"                exit, irq_handler_entry/exit, softirq_entry/exit,\n"
"                sys_enter/sys_exit and markers (tracing_mark_write).\n"
"                Open it in ui.perfetto.dev or trace_processor.\n"
"  chrome-json   the Trace Event Format: threads named, system calls as\n"
"                complete slices on their thread, markers as instant\n"
"                events.  Open it in ui.perfetto.dev or chrome://tracing.\n"
"\n"
"  -f, --format FORMAT   systrace or chrome-json\n"
"  -o, --output FILE     write FILE (default: standard output)\n"
"      --strict          damage in the trace is an error (default: read\n"
"                        past it, say what was skipped, exit status 3)\n"
"  -h, --help            this text\n",
	.run = run,
};
