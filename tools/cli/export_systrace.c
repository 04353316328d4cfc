// SPDX-License-Identifier: GPL-2.0
/*
 * export -f systrace: ftrace's text, as the kernel's own `trace` file
 * prints the same tracepoints (each event's "print fmt"), with the TGID
 * column (`trace_options` record-tgid) and nanosecond timestamps.
 *
 * What Perfetto takes from it (ui.perfetto.dev, trace_processor's
 * systrace importer): sched_switch (CPU tracks, thread states),
 * sched_waking (runnable states and their wakers), task_newtask and
 * task_rename (threads and names), the TGID column (threads grouped into
 * processes) and tracing_mark_write (atrace slices).  It leaves
 * sched_wakeup, sys_enter/sys_exit, IRQs and softirqs out: for those, the
 * protobuf export (-f perfetto).  The other tools that read ftrace text
 * (trace-cmd's text readers, scripts) get every event ftrace has.
 */
#include <inttypes.h>

#include "export.h"

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

/* ftrace's name of each event ftrace has; NULL: left out. */
static const char *ftrace_name(const char *name)
{
	static const char *const names[][2] = {
		{ "sched_switch", NULL }, { "sched_wakeup", NULL },
		{ "sched_wakeup_new", NULL }, { "sched_waking", NULL },
		{ "sched_process_fork", NULL }, { "sched_process_exec", NULL },
		{ "sched_process_exit", NULL }, { "sched_process_free", NULL },
		{ "sched_migrate_task", NULL }, { "task_newtask", NULL },
		{ "task_rename", NULL },
		{ "irq_handler_entry", NULL }, { "irq_handler_exit", NULL },
		{ "irq_softirq_entry", "softirq_entry" },
		{ "irq_softirq_exit", "softirq_exit" },
		{ "syscall_entry", "sys_enter" }, { "syscall_exit", "sys_exit" },
		{ "ringtrace_marker", "tracing_mark_write" },
	};

	for (int i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i][0]))
			return names[i][1] ? names[i][1] : names[i][0];
	return NULL;
}

/* A text field's bytes as they are (up to its end or first NUL). */
static void put_text(FILE *f, const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_TEXT);

	if (v)
		fwrite(v->data, 1, strnlen((const char *)v->data, v->count), f);
}

/*
 * The body of @it as the kernel's TP_printk prints its tracepoint.
 * Priorities go back to the kernel's (ringtrace records LTTng's, prio -
 * 100).
 */
static void body(FILE *f, const struct rt_item *it)
{
	char a[64], b[64], st[48];

	if (ex_is(it, "sched_switch")) {
		state_letters(st, sizeof(st), ex_int(it, "prev_state"));
		fprintf(f, "prev_comm=%s prev_pid=%" PRId64 " prev_prio=%" PRId64
			" prev_state=%s ==> next_comm=%s next_pid=%" PRId64
			" next_prio=%" PRId64,
			ex_text(it, "prev_comm", a, sizeof(a)), ex_int(it, "prev_tid"),
			ex_int(it, "prev_prio") + 100, st,
			ex_text(it, "next_comm", b, sizeof(b)), ex_int(it, "next_tid"),
			ex_int(it, "next_prio") + 100);
	} else if (ex_is(it, "sched_wakeup") || ex_is(it, "sched_wakeup_new") ||
		   ex_is(it, "sched_waking")) {
		fprintf(f, "comm=%s pid=%" PRId64 " prio=%" PRId64 " target_cpu=%03" PRId64,
			ex_text(it, "comm", a, sizeof(a)), ex_int(it, "tid"),
			ex_int(it, "prio") + 100, ex_int(it, "target_cpu"));
	} else if (ex_is(it, "sched_process_fork")) {
		fprintf(f, "comm=%s pid=%" PRId64 " child_comm=%s child_pid=%" PRId64,
			ex_text(it, "parent_comm", a, sizeof(a)), ex_int(it, "parent_tid"),
			ex_text(it, "child_comm", b, sizeof(b)), ex_int(it, "child_tid"));
	} else if (ex_is(it, "sched_process_exec")) {
		fputs("filename=", f);
		put_text(f, it, "filename");
		fprintf(f, " pid=%" PRId64 " old_pid=%" PRId64, ex_int(it, "tid"),
			ex_int(it, "old_tid"));
	} else if (ex_is(it, "sched_process_exit") ||
		   ex_is(it, "sched_process_free")) {
		fprintf(f, "comm=%s pid=%" PRId64 " prio=%" PRId64,
			ex_text(it, "comm", a, sizeof(a)), ex_int(it, "tid"),
			ex_int(it, "prio") + 100);
	} else if (ex_is(it, "sched_migrate_task")) {
		fprintf(f, "comm=%s pid=%" PRId64 " prio=%" PRId64
			" orig_cpu=%" PRId64 " dest_cpu=%" PRId64,
			ex_text(it, "comm", a, sizeof(a)), ex_int(it, "tid"),
			ex_int(it, "prio") + 100, ex_int(it, "orig_cpu"),
			ex_int(it, "dest_cpu"));
	} else if (ex_is(it, "task_newtask")) {
		fprintf(f, "pid=%" PRId64 " comm=%s clone_flags=%" PRIx64
			" oom_score_adj=%" PRId64, ex_int(it, "tid"),
			ex_text(it, "comm", a, sizeof(a)),
			(uint64_t)ex_int(it, "clone_flags"),
			ex_int(it, "oom_score_adj"));
	} else if (ex_is(it, "task_rename")) {
		fprintf(f, "pid=%" PRId64 " oldcomm=%s newcomm=%s oom_score_adj=%" PRId64,
			ex_int(it, "tid"), ex_text(it, "oldcomm", a, sizeof(a)),
			ex_text(it, "newcomm", b, sizeof(b)), ex_int(it, "oom_score_adj"));
	} else if (ex_is(it, "irq_handler_entry")) {
		fprintf(f, "irq=%" PRId64 " name=", ex_int(it, "irq"));
		put_text(f, it, "name");
	} else if (ex_is(it, "irq_handler_exit")) {
		fprintf(f, "irq=%" PRId64 " ret=%s", ex_int(it, "irq"),
			ex_int(it, "ret") ? "handled" : "unhandled");
	} else if (ex_is(it, "irq_softirq_entry") ||
		   ex_is(it, "irq_softirq_exit")) {
		int64_t vec = ex_int(it, "vec");
		const char *name = ex_softirq_name(vec);

		fprintf(f, "vec=%" PRId64 " [action=%s]", vec,
			name ? name : "UNKNOWN");
	} else if (ex_is(it, "syscall_entry")) {
		const struct rt_field_value *v = rt_item_field(it, "args", RT_USE_INTS);

		fprintf(f, "NR %" PRId64 " (", ex_int(it, "id"));
		for (uint64_t i = 0; v && i < 6 && i < v->count; i++)
			fprintf(f, "%s%" PRIx64, i ? ", " : "", rt_field_u64(v, i));
		fputc(')', f);
	} else if (ex_is(it, "syscall_exit")) {
		fprintf(f, "NR %" PRId64 " = %" PRId64, ex_int(it, "id"),
			ex_int(it, "ret"));
	} else if (ex_is(it, "ringtrace_marker")) {
		const struct rt_field_value *v = rt_item_field(it, "data", RT_USE_TEXT);
		uint64_t len = v ? v->count : 0;

		/* Its trailing newline ends the line, as in ftrace. */
		while (len && v->data[len - 1] == '\n')
			len--;
		if (len)
			fwrite(v->data, 1, len, f);
	}
}

static int begin(struct export_ctx *x)
{
	unsigned int nr_cpus = 0;

	for (unsigned int i = 0; i < x->t->nr_cpus; i++)
		if ((unsigned int)x->t->cpus[i].cpu + 1 > nr_cpus)
			nr_cpus = (unsigned int)x->t->cpus[i].cpu + 1;
	fprintf(x->f,
		"# tracer: nop\n"
		"#\n"
		"# exported by ringtrace %s   #P:%u\n"
		"#\n"
		"#                                          _-----=> irqs-off/BH-disabled\n"
		"#                                         / _----=> need-resched\n"
		"#                                        | / _---=> hardirq/softirq\n"
		"#                                        || / _--=> preempt-depth\n"
		"#                                        ||| / _-=> migrate-disable\n"
		"#                                        |||| /     delay\n"
		"#           TASK-PID     TGID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		"#              | |         |        |   |||||     |         |\n",
		RINGTRACE_VERSION, nr_cpus);
	return 0;
}

/*
 * "comm-tid (tgid) [cpu] ..... sec.nsec: event: body": trace_print_context()
 * with record-tgid; an unknown tgid prints as "-------", as the kernel's.
 */
static int item(struct export_ctx *x, const struct rt_item *it, int32_t tid)
{
	const char *name, *comm;
	char tgid[16] = "-------";
	int32_t pid;
	ex_ns_t ns;

	if (it->type != RT_ITEM_EVENT || !(name = ftrace_name(it->event->name)))
		return 0;
	if (tid < 0) {
		x->unknown++;
		return 0;
	}
	/* ftrace's own name of tid 0 on every CPU (trace_find_cmdline()). */
	comm = tid ? rt_threads_comm(x->th, tid, it->cpu) : "<idle>";
	pid = tid ? rt_threads_pid(x->th, tid) : 0;
	if (pid >= 0)
		snprintf(tgid, sizeof(tgid), "%7" PRId32, pid);
	ns = ex_ns(x->md, it->timestamp);
	fprintf(x->f, "%16s-%-7" PRId32 " (%s) [%03u] ..... %5" PRIu64 ".%09" PRIu64
		": %s: ", comm ? comm : "<...>", tid, tgid, it->cpu,
		(uint64_t)(ns / 1000000000), (uint64_t)(ns % 1000000000), name);
	body(x->f, it);
	fputc('\n', x->f);
	return 0;
}

static int end(struct export_ctx *x, bool ok)
{
	(void)x;
	(void)ok;
	return 0;
}

const struct export_format export_systrace = {
	.name = "systrace",
	.help =
"  systrace      ftrace's text (`# tracer: nop`, then\n"
"                `comm-tid (tgid) [cpu] flags seconds: event: fields`, in\n"
"                nanoseconds), each event printed as the kernel's own\n"
"                ftrace prints that tracepoint.  Perfetto takes\n"
"                sched_switch, sched_waking, task_newtask, task_rename and\n"
"                markers from it (CPU tracks, thread states, processes),\n"
"                not system calls or IRQs.\n",
	.begin = begin,
	.item = item,
	.end = end,
};
