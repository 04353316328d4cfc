// SPDX-License-Identifier: GPL-2.0
/*
 * export -f chrome-json: the Trace Event Format (chrome://tracing,
 * Perfetto): threads named ("M" events whenever a name is new or
 * changes), system calls as complete slices ("X") on their thread,
 * markers as instant events ("i"), and an event with a kernel stack as an
 * instant of its name on its thread whose "sf" names the stack's leaf in
 * the stackFrames dictionary, written after the events: a frame
 * {name, category: vmlinux or the module, parent}, one per function under
 * the same caller (stacks.c's call tree).  Times in microseconds, as the
 * format has them.  Memory: one entry per thread (its name, its open
 * system call), and the call tree of the stacks.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "export.h"

/* Threads already named in the output, and their open system call. */
struct jthread {
	int32_t tid;			/* first: the tidmap's key */
	char named[17];
	int64_t sc_id;			/* -1: none */
	uint64_t sc_start;
};

struct json {
	struct rt_tidmap t;		/* struct jthread by tid */
	struct stack_tree *stacks;
	bool first;
};

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

/*
 * Microseconds with three decimals, from integer nanoseconds (beyond 2^64
 * us, a clock no kernel has, the figure wraps: it stays a number).
 */
static void json_us(FILE *f, const char *key, ex_ns_t ns)
{
	fprintf(f, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, (uint64_t)(ns / 1000),
		(uint64_t)(ns % 1000));
}

static void sep(struct export_ctx *x)
{
	struct json *j = x->priv;

	fputs(j->first ? "\n" : ",\n", x->f);
	j->first = false;
}

static int32_t pid_of(const struct export_ctx *x, int32_t tid)
{
	int32_t pid = rt_threads_pid(x->th, tid);

	return pid >= 0 ? pid : tid;
}

/* thread_name metadata whenever a thread's name is new or changed. */
/*
 * The idle tasks of every CPU share one tid, 0, so one track: named
 * "<idle>" as ftrace names it, not after one of the CPUs.
 */
static void name(struct export_ctx *x, struct jthread *t, int32_t tid)
{
	const char *comm = tid ? rt_threads_comm(x->th, tid, 0) : "<idle>";

	if (!comm || !strcmp(t->named, comm))
		return;
	snprintf(t->named, sizeof(t->named), "%s", comm);
	sep(x);
	fprintf(x->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId32
		",\"tid\":%" PRId32 ",\"args\":{\"name\":", pid_of(x, tid), tid);
	json_str(x->f, comm, strlen(comm));
	fputs("}}", x->f);
}

static int begin(struct export_ctx *x)
{
	struct json *j = calloc(1, sizeof(*j));

	if (!j) {
		error_line("out of memory");
		return -1;
	}
	rt_tidmap_init(&j->t, sizeof(struct jthread));
	j->first = true;
	x->priv = j;
	j->stacks = stack_tree_new(x->t);
	if (!j->stacks) {
		error_line("out of memory");
		return -1;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", x->f);
	return 0;
}

static void syscall_slice(struct export_ctx *x, struct jthread *t,
			  const struct rt_item *it, int32_t tid)
{
	const char *sc = ex_syscall_name(x, t->sc_id);
	char num[32];

	if (!sc) {
		snprintf(num, sizeof(num), "syscall %" PRId64, t->sc_id);
		sc = num;
	}
	sep(x);
	fputs("{\"ph\":\"X\",\"cat\":\"syscall\",\"name\":", x->f);
	json_str(x->f, sc, strlen(sc));
	json_us(x->f, "ts", ex_ns(x->md, t->sc_start));
	json_us(x->f, "dur", ex_ns(x->md, it->timestamp) - ex_ns(x->md, t->sc_start));
	fprintf(x->f, ",\"pid\":%" PRId32 ",\"tid\":%" PRId32
		",\"args\":{\"nr\":%" PRId64 ",\"ret\":%" PRId64 "}}",
		pid_of(x, tid), tid, t->sc_id, ex_int(it, "ret"));
}

/* The stack @ips of the event before it on its CPU: an instant with "sf". */
static int stack(struct export_ctx *x, const struct rt_item *it,
		 const struct rt_field_value *ips)
{
	struct json *j = x->priv;
	const struct stack_owner *o = stack_tree_owner(j->stacks, it);
	int64_t leaf;

	/* Its event left out (thread unknown, counted) or lost with a packet. */
	if (!o || o->tid < 0)
		return 0;
	leaf = stack_tree_add(j->stacks, ips);
	if (leaf < 0) {
		error_line("out of memory");
		return -1;
	}
	sep(x);
	fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"stack\",\"name\":", x->f);
	json_str(x->f, o->event->name, strlen(o->event->name));
	json_us(x->f, "ts", ex_ns(x->md, it->timestamp));
	fprintf(x->f, ",\"pid\":%" PRId32 ",\"tid\":%" PRId32, pid_of(x, o->tid),
		o->tid);
	if (leaf)
		fprintf(x->f, ",\"sf\":%" PRId64, leaf);
	fputs("}", x->f);
	return 0;
}

static int item(struct export_ctx *x, const struct rt_item *it, int32_t tid)
{
	const struct rt_field_value *ips;
	struct json *j = x->priv;
	struct jthread *t;
	bool created;

	if (it->type != RT_ITEM_EVENT)
		return 0;
	ips = export_stack_ips(x, it);
	if (ips)
		return stack(x, it, ips);
	stack_tree_event(j->stacks, it, tid);
	if (tid < 0) {
		x->unknown++;
		return 0;
	}
	t = rt_tidmap_get(&j->t, tid, &created);
	if (!t) {
		error_line("out of memory");
		return -1;
	}
	if (created)
		t->sc_id = -1;
	name(x, t, tid);
	if (ex_is(it, "syscall_entry")) {
		t->sc_id = ex_int(it, "id");
		t->sc_start = it->timestamp;
	} else if (ex_is(it, "syscall_exit")) {
		if (t->sc_id >= 0 && t->sc_id == ex_int(it, "id"))
			syscall_slice(x, t, it, tid);
		t->sc_id = -1;
	} else if (ex_is(it, "ringtrace_marker")) {
		const struct rt_field_value *v = rt_item_field(it, "data", RT_USE_TEXT);
		uint64_t len = v ? v->count : 0;

		while (len && v->data[len - 1] == '\n')
			len--;
		sep(x);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"marker\",\"name\":", x->f);
		json_str(x->f, v ? v->data : (const uint8_t *)"", len);
		json_us(x->f, "ts", ex_ns(x->md, it->timestamp));
		fprintf(x->f, ",\"pid\":%" PRId32 ",\"tid\":%" PRId32 "}",
			pid_of(x, tid), tid);
	}
	return 0;
}

/* "stackFrames": {"id": {"name", "category", "parent"}, ...}: the call tree. */
static void stack_frames(struct export_ctx *x, const struct stack_tree *st)
{
	uint32_t n = stack_tree_nodes(st);

	fputs(",\n\"stackFrames\":{", x->f);
	for (uint32_t id = 1; id <= n; id++) {
		const struct stack_node *node = stack_tree_node(st, id);
		const struct stack_frame *f = stack_tree_frame(st, node->frame);
		const char *cat = f->module ? f->module : "vmlinux";

		fprintf(x->f, "%s\n\"%" PRIu32 "\":{\"name\":", id > 1 ? "," : "", id);
		json_str(x->f, f->name, strlen(f->name));
		fputs(",\"category\":", x->f);
		json_str(x->f, cat, strlen(cat));
		if (node->parent)
			fprintf(x->f, ",\"parent\":\"%" PRIu32 "\"", node->parent);
		fputs("}", x->f);
	}
	fputs("\n}", x->f);
}

static int end(struct export_ctx *x, bool ok)
{
	struct json *j = x->priv;

	if (ok) {
		fputs("\n]", x->f);
		if (stack_tree_nodes(j->stacks))
			stack_frames(x, j->stacks);
		fputs("}\n", x->f);
	}
	if (j) {
		stack_tree_free(j->stacks);
		rt_tidmap_free(&j->t);
		free(j);
	}
	return 0;
}

const struct export_format export_chrome_json = {
	.name = "chrome-json",
	.help =
"  chrome-json   the Trace Event Format: threads named, system calls as\n"
"                complete slices on their thread, markers as instant\n"
"                events, events with a kernel stack as instants with\n"
"                their stack (stackFrames, shown by chrome://tracing).\n"
"                Open it in ui.perfetto.dev or chrome://tracing.\n",
	.begin = begin,
	.item = item,
	.end = end,
};
