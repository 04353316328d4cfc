// SPDX-License-Identifier: GPL-2.0
/*
 * export -f perfetto: Perfetto's own protobuf trace, which ui.perfetto.dev
 * and trace_processor read natively, with their whole Linux view: CPU
 * tracks, thread states and their wakers, system calls on each thread,
 * IRQ and softirq tracks, processes and their threads, markers.
 *
 * The file is a Trace, a sequence of TracePackets (cli/perfetto.proto
 * declares the part of Perfetto's schema written here):
 *
 *   ClockSnapshot      BOOTTIME, MONOTONIC and REALTIME at the first event
 *   SystemInfo         utsname: "Linux" and the kernel release (how
 *                      Perfetto decodes prev_state), the machine (which
 *                      system call table names the ids)
 *   ProcessTree        processes and threads of the state dump, of forks
 *                      and of execs, as they come; a window from --begin
 *                      first says those known when it opens
 *   FtraceEventBundle  one CPU's events in time order, up to BUNDLE_EVENTS
 *                      of them; lost_events on the first bundle after a
 *                      loss on that CPU
 *   PerfSample         each event's stacks and each cpu_sample, on its
 *                      own sequence (see below)
 *   FtraceStats        at the end, START and END: per CPU, the events
 *                      lost before the first packet and in all
 *
 * Times.  Perfetto reads ftrace timestamps as CLOCK_BOOTTIME; ringtrace's
 * clock is CLOCK_MONOTONIC.  The metadata's env boottime_offset (BOOTTIME
 * - MONOTONIC in nanoseconds when the metadata was written, at trace
 * start) is added to every time; without it the offset is 0.  A time
 * past what Perfetto's signed 64-bit nanoseconds hold leaves its event
 * out (counted).
 *
 * A trace of an older ringtrace.ko lacks some of what this needs: env
 * boottime_offset and machine, events sched_waking and
 * sched_process_free.  What it has is exported as it is, and one line on
 * stderr says what is missing and what Perfetto will not show for it.
 *
 * Events (the kernel's ftrace events, with the kernel's values: ringtrace
 * records priorities as LTTng does, prio - 100, and they go back here):
 *
 *   sched_switch, sched_waking, sched_wakeup, sched_wakeup_new,
 *   sched_process_exec, sched_process_exit, sched_process_free,
 *   sched_migrate_task, task_rename, irq_handler_entry/exit   as they are
 *   irq_softirq_entry/exit       softirq_entry/exit
 *   syscall_entry/exit           sys_enter/sys_exit (id, args, ret)
 *   sched_process_fork           task_newtask, which Perfetto reads to
 *                                make processes and threads (it reads no
 *                                fork): a child of the parent's thread
 *                                group is a thread (CLONE_THREAD)
 *   ringtrace_marker             print: an atrace record (B|tgid|name,
 *                                E|tgid, C|..., I|...) as it is, any other
 *                                text as an instant on its thread,
 *                                "I|tgid|text", its '|' shown as U+00A6
 *   ringtrace_statedump_task     the ProcessTree, not an event
 *   ringtrace_statedump_cpu      nothing (the CPU's switches say it)
 *   cpu_sample                   a PerfSample (below), not an event
 *   stack_def, stack_ref,        the PerfSample of their event (below),
 *   user_stack_copy (and older   not events
 *   traces' kernel_stack,
 *   user_stack)
 *   any other event              generic: its name and its fields
 *
 * Stacks.  FtraceEvent has no place for a stack; what Perfetto reads as
 * stacks of a thread at an instant is the PerfSample (its own
 * profiler's): trace_processor puts each in its stack samples with the
 * thread, process and CPU, and the UI shows them on the process's and
 * the thread's "Callstacks" tracks, a flame graph for a selected span.
 * So an event's stacks (those its stack_ref names, or an older trace's
 * kernel_stack and user_stack; its user_stack_copy unwound;
 * tools/lib/stackrec.h joins them) become one
 * PerfSample at its time, on its thread, cpu_mode MODE_KERNEL (MODE_USER
 * for a uprobe's or a USDT probe's); a cpu_sample's, on the
 * sample's own thread, in the mode it says.  A sample without a frame
 * (an idle CPU's) is none.  Its callstack_iid names a Callstack interned
 * on the packets' sequence STACK_SEQUENCE_ID (interning works per
 * sequence), root first: the user frames, then the kernel's.  Frames and
 * callstacks are stacks.c's call tree, each interned in the packet of the
 * first sample that uses it: a kernel frame is a function of vmlinux
 * ("[kernel.kallsyms]") or of a module ("[name]"); a user frame is named
 * as report --folded names it (the trace's mappings, its symbol store,
 * debuginfod; a copy unwound with those and --binaries), under the
 * Mapping of its binary, one per build-id, path and file offset: the
 * build-id (InternedData.build_ids, the note's raw bytes, as Perfetto's
 * own profilers write it), the range of the first process seen mapping
 * it, its file offset and load bias; its rel_pc is the function's file
 * offset.  A user frame in no mapping known is its address, in
 * "[unknown]".  Every frame is named: the trace needs no symbolisation.
 * The first packet of that sequence clears its incremental state, every
 * one needs it.
 *
 * A window from --begin names the user frames by the mappings the trace
 * said inside it (a process mapped before it: addresses).
 *
 * Each event's FtraceEvent.pid is the thread that ran (rt_threads); an
 * event whose thread is not known yet is left out, as by the other
 * formats, and counted; so are those of CPUs from PERFETTO_MAX_CPUS on,
 * which trace_processor refuses (with the whole trace).
 *
 * Encoding.  protobuf-c packs every message, from the code protoc-c
 * generates from perfetto.proto at build time.  protobuf-c packs a
 * message from C structs that must all exist at once: a whole bundle
 * would mean keeping up to BUNDLE_EVENTS events' structs and their
 * strings.  Instead each event is packed when it comes, into its CPU's
 * buffer, as one `event` field of the bundle (tag, length, message); a
 * bundle is its cpu and lost_events fields then these (a message's
 * encoding is its fields' encodings one after another, in any order).
 * The tag and length of such length-delimited fields (Trace.packet,
 * TracePacket.ftrace_events, FtraceEventBundle.event) are the only bytes
 * written by hand, put_len_field().
 *
 * Memory: per CPU, its open bundle (BUNDLE_EVENTS events or BUNDLE_BYTES
 * at most); per process, its parent's pid; up to TREE_ENTRIES entries of
 * the state dump; one event's strings; the call tree of the stacks and
 * their binaries' mappings; the processes' mappings (umaps).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "export.h"
#include "perfetto.pb-c.h"

#define BUNDLE_EVENTS	256
#define BUNDLE_BYTES	(64 << 10)
#define TREE_ENTRIES	256
#define COMM_LEN	16
/* The kernel's flags of a thread's clone(): CLONE_THREAD needs these. */
#define CLONE_VM	0x00000100
#define CLONE_SIGHAND	0x00000800
#define CLONE_THREAD	0x00010000
/* trace_processor rejects a bundle of a CPU from this number on. */
#define PERFETTO_MAX_CPUS 1024
/* Field numbers of the length-delimited fields framed by hand. */
#define TRACE_PACKET		1	/* Trace.packet */
#define PACKET_FTRACE_EVENTS	1	/* TracePacket.ftrace_events */
#define BUNDLE_EVENT		2	/* FtraceEventBundle.event */
#define SEQUENCE_ID		1	/* every packet's trusted sequence... */
#define STACK_SEQUENCE_ID	2	/* ...but the stacks' */
#define KERNEL_MAPPING		"[kernel.kallsyms]"
#define UNKNOWN_MAPPING		"[unknown]"	/* a user frame in no mapping known */

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__FtraceEvent Event;

/* A growing byte buffer that protobuf-c packs into. */
struct pbuf {
	ProtobufCBuffer base;		/* first: append() gets its address */
	uint8_t *data;
	size_t len, cap;
	bool oom;			/* an append failed: the bytes are wrong */
};

/* One CPU of the trace (by its index in rt_trace.cpus). */
struct pcpu {
	struct pbuf events;		/* the open bundle's event fields */
	unsigned int nr;		/* events in it */
	bool lost;			/* events lost before the open bundle */
	uint64_t lost_first;		/* counted before the first packet */
	uint64_t lost_total;
};

/* What an event is to Perfetto, by its position in md->events. */
enum kind {
	K_GENERIC, K_SWITCH, K_WAKING, K_WAKEUP, K_WAKEUP_NEW, K_FORK, K_EXEC,
	K_EXIT, K_FREE, K_MIGRATE, K_RENAME, K_IRQ_ENTRY, K_IRQ_EXIT,
	K_SOFTIRQ_ENTRY, K_SOFTIRQ_EXIT, K_SYS_ENTER, K_SYS_EXIT, K_MARKER,
	K_DUMP_TASK, K_DUMP_CPU, K_SAMPLE,
};

/* A mapping of the interned data (iid - 1): the kernel's, a module's, a binary's. */
struct pmap {
	bool user;
	const char *module;		/* kernel: NULL for vmlinux */
	uint32_t map;			/* user: stack_tree_map()'s, 0 none known */
};

/* A process's parent, as the state dump or its fork said. */
struct parent {
	int32_t pid;			/* first: the tidmap's key */
	int32_t ppid;
};

/* ProcessTree entries not written yet (the state dump's, batched). */
struct tree {
	Perfetto__Protos__ProcessTree__Process procs[TREE_ENTRIES];
	Perfetto__Protos__ProcessTree__Process *procp[TREE_ENTRIES];
	Perfetto__Protos__ProcessTree__Thread threads[TREE_ENTRIES];
	Perfetto__Protos__ProcessTree__Thread *threadp[TREE_ENTRIES];
	char *argv0[TREE_ENTRIES];	/* each process's one cmdline element */
	size_t nr_procs, nr_threads;
	uint64_t ts;			/* BOOTTIME, of the packet */
};

struct perfetto {
	enum kind *kinds;
	struct pcpu *cpus;		/* t->nr_cpus */
	struct rt_tidmap parents;	/* struct parent by pid */
	struct tree tree;
	int64_t boottime_offset;	/* ns */
	bool started;			/* ClockSnapshot and SystemInfo written */
	uint64_t first_ts, last_ts;	/* BOOTTIME of the events written */
	uint64_t out_of_range;		/* events left out: time too big */
	uint64_t high_cpu;		/* events left out: CPU >= 1024 */
	/*
	 * One event's strings, and where each goes once all are in (the
	 * buffer moves while it grows); a generic event's fields.
	 */
	struct pbuf text;
	struct fixup {
		char **dst;
		size_t off;
	} *fixups;
	unsigned int nr_fixups;
	Perfetto__Protos__GenericFtraceEvent__Field *fields, **fieldp;
	/*
	 * The stacks: each event's joined (stackrec), user frames named
	 * through the mappings (umaps) as report names them; what of their
	 * call tree the sequence has interned.
	 */
	struct stackrec *sr;
	struct umaps *um;
	struct stack_names *names;
	int64_t sample_mode;		/* the last cpu_sample's, its pair next */
	struct stack_tree *stacks;
	uint32_t frames_interned;	/* frames 1.. of the tree */
	bool *callstack_interned;	/* by node, those that were a leaf */
	uint32_t callstacks_cap;
	struct pmap *mappings;		/* iid - 1 */
	uint32_t nr_mappings;
	bool stack_sequence_started;
	bool window_said;		/* a window's processes, said first */
};

static const struct {
	const char *name;
	enum kind kind;
} kind_names[] = {
	{ "sched_switch", K_SWITCH }, { "sched_waking", K_WAKING },
	{ "sched_wakeup", K_WAKEUP }, { "sched_wakeup_new", K_WAKEUP_NEW },
	{ "sched_process_fork", K_FORK }, { "sched_process_exec", K_EXEC },
	{ "sched_process_exit", K_EXIT }, { "sched_process_free", K_FREE },
	{ "sched_migrate_task", K_MIGRATE }, { "task_rename", K_RENAME },
	{ "irq_handler_entry", K_IRQ_ENTRY }, { "irq_handler_exit", K_IRQ_EXIT },
	{ "irq_softirq_entry", K_SOFTIRQ_ENTRY },
	{ "irq_softirq_exit", K_SOFTIRQ_EXIT },
	{ "syscall_entry", K_SYS_ENTER }, { "syscall_exit", K_SYS_EXIT },
	{ "ringtrace_marker", K_MARKER },
	{ "ringtrace_statedump_task", K_DUMP_TASK },
	{ "ringtrace_statedump_cpu", K_DUMP_CPU },
	{ "cpu_sample", K_SAMPLE },
};

/* ---- bytes ------------------------------------------------------------------------- */

static void pbuf_append(ProtobufCBuffer *base, size_t len, const uint8_t *data)
{
	struct pbuf *b = (struct pbuf *)base;

	if (b->oom || !len)
		return;		/* nothing to copy: data may be NULL */
	if (len > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap - b->len < len)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

static void pbuf_init(struct pbuf *b)
{
	*b = (struct pbuf){ .base.append = pbuf_append };
}

/* A base-128 varint at @p (10 bytes at most): its length. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* The tag and length of length-delimited field @field: its length. */
static size_t put_len_field(uint8_t *p, uint32_t field, uint64_t len)
{
	size_t n = put_varint(p, (uint64_t)field << 3 | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED);

	return n + put_varint(p + n, len);
}

static int write_error(struct export_ctx *x)
{
	error_line("%s: %s", x->out ? x->out : "stdout", strerror(errno));
	return -1;
}

/*
 * Trace.packet: @pkt, whose last @more bytes (more of its fields) the
 * caller writes right after.
 */
static int put_packet(struct export_ctx *x, const Packet *pkt, size_t more)
{
	uint8_t head[16], stack[256], *buf = stack;
	size_t len = perfetto__protos__trace_packet__get_packed_size(pkt), n;
	int err = 0;

	if (len > sizeof(stack) && !(buf = malloc(len))) {
		error_line("out of memory");
		return -1;
	}
	perfetto__protos__trace_packet__pack(pkt, buf);
	n = put_len_field(head, TRACE_PACKET, len + more);
	if (fwrite(head, 1, n, x->f) != n || fwrite(buf, 1, len, x->f) != len)
		err = write_error(x);
	if (buf != stack)
		free(buf);
	return err;
}

/* ---- times --------------------------------------------------------------------------- */

/* BOOTTIME of @cycles; false when it is past INT64_MAX ns (Perfetto's). */
static bool boottime(const struct export_ctx *x, uint64_t cycles, uint64_t *ns)
{
	const struct perfetto *p = x->priv;
	ex_ns_t t = ex_ns(x->md, cycles) + (ex_ns_t)p->boottime_offset;

	if (t > INT64_MAX)
		return false;
	*ns = (uint64_t)t;
	return true;
}

/*
 * The env's boottime_offset: nanoseconds, BOOTTIME - MONOTONIC, never
 * negative.  0 when it is absent (older_module() says so) or is not such
 * a number (said here).
 */
static int64_t boottime_offset(const struct rt_metadata *md)
{
	const char *s = rt_metadata_env(md, "boottime_offset");
	char *end;
	long long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		warn("the trace's boottime_offset '%s' is not a number of nanoseconds: taken as 0", s);
		return 0;
	}
	return v;
}

/*
 * What a trace of an older ringtrace.ko lacks and Perfetto's view needs,
 * said in one line: the env's boottime_offset and machine, the events
 * sched_waking and sched_process_free (the metadata declares every event
 * the module has, recorded or not).
 */
static void older_module(const struct rt_metadata *md, const enum kind *kinds)
{
	static const struct {
		const char *env;	/* an env field, or */
		enum kind event;	/* an event of this kind */
		const char *what;
	} needs[] = {
		{ "boottime_offset", K_GENERIC,
		  "no env boottime_offset (its CLOCK_MONOTONIC times are written as BOOTTIME)" },
		{ "machine", K_GENERIC, "no env machine (system calls are named as x86_64's)" },
		{ NULL, K_WAKING,
		  "no event sched_waking (Perfetto shows no wakers and no runnable time)" },
		{ NULL, K_FREE, "no event sched_process_free (Perfetto ends no thread)" },
	};
	char line[512];
	size_t n = 0;

	for (int i = 0; i < ARRAY_SIZE(needs); i++) {
		bool has = needs[i].env && rt_metadata_env(md, needs[i].env);

		for (unsigned int e = 0; !needs[i].env && e < md->nr_events; e++)
			has = has || kinds[e] == needs[i].event;
		if (!has)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s",
					      n ? ", " : "", needs[i].what);
	}
	if (n)
		warn("the trace is of an older ringtrace.ko: %s", line);
}

/* ---- the packets that are not events --------------------------------------------------- */

/* The same instant, @mono ns of CLOCK_MONOTONIC, on the three clocks. */
static int put_clocks(struct export_ctx *x, uint64_t mono)
{
	const struct perfetto *p = x->priv;
	const struct rt_metadata *md = x->md;
	Perfetto__Protos__ClockSnapshot snap = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Perfetto__Protos__ClockSnapshot__Clock clocks[3], *clockp[3];
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	/* Wall time of monotonic zero: the metadata clock's offset. */
	__int128 wall = (__int128)md->clock_offset_s * 1000000000 +
			(__int128)md->clock_offset * 1000000000 / (__int128)md->clock_freq;
	__int128 values[3] = {
		(__int128)mono + p->boottime_offset, mono, wall + mono,
	};
	const uint32_t ids[3] = {
		PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME,
		PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC,
		PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME,
	};

	for (int i = 0; i < 3; i++) {
		/* A wall time before 1970 or past 2262 is left out. */
		if (values[i] < 0 || values[i] > INT64_MAX)
			continue;
		perfetto__protos__clock_snapshot__clock__init(&clocks[snap.n_clocks]);
		clocks[snap.n_clocks].has_clock_id = true;
		clocks[snap.n_clocks].clock_id = ids[i];
		clocks[snap.n_clocks].has_timestamp = true;
		clocks[snap.n_clocks].timestamp = (uint64_t)values[i];
		clockp[snap.n_clocks] = &clocks[snap.n_clocks];
		snap.n_clocks++;
	}
	snap.clocks = clockp;
	pkt.has_timestamp = true;
	pkt.timestamp = (uint64_t)values[0];
	pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	pkt.clock_snapshot = &snap;
	pkt.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	pkt.trusted_packet_sequence_id = SEQUENCE_ID;
	return put_packet(x, &pkt, 0);
}

static int put_system_info(struct export_ctx *x, uint64_t ts)
{
	Perfetto__Protos__SystemInfo info = PERFETTO__PROTOS__SYSTEM_INFO__INIT;
	Perfetto__Protos__Utsname uts = PERFETTO__PROTOS__UTSNAME__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	unsigned int nr_cpus = 0;

	/*
	 * Perfetto decodes prev_state by the release (without it, as
	 * Linux 4.4's) and names system calls by the machine.  A trace of a
	 * module that does not write `machine` yet (older_module() says so)
	 * is taken for x86_64, the
	 * architecture ringtrace has been built for so far.
	 */
	uts.sysname = "Linux";
	uts.release = (char *)rt_metadata_env(x->md, "kernel_release");
	uts.version = (char *)rt_metadata_env(x->md, "kernel_version");
	uts.machine = (char *)rt_metadata_env(x->md, "machine");
	if (!uts.machine)
		uts.machine = "x86_64";
	for (unsigned int i = 0; i < x->t->nr_cpus; i++)
		if ((unsigned int)x->t->cpus[i].cpu + 1 > nr_cpus)
			nr_cpus = (unsigned int)x->t->cpus[i].cpu + 1;
	info.utsname = &uts;
	info.tracing_service_version = "ringtrace " RINGTRACE_VERSION;
	info.has_num_cpus = true;
	info.num_cpus = nr_cpus;
	pkt.has_timestamp = true;
	pkt.timestamp = ts;
	pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_SYSTEM_INFO;
	pkt.system_info = &info;
	pkt.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	pkt.trusted_packet_sequence_id = SEQUENCE_ID;
	return put_packet(x, &pkt, 0);
}

/* Once, before the first event: the clocks at @mono, then the system. */
static int start(struct export_ctx *x, uint64_t mono)
{
	struct perfetto *p = x->priv;

	if (p->started)
		return 0;
	p->started = true;
	p->first_ts = mono + (uint64_t)p->boottime_offset;
	if (put_clocks(x, mono))
		return -1;
	return put_system_info(x, p->first_ts);
}

static void tree_reset(struct tree *tr)
{
	for (size_t i = 0; i < tr->nr_procs; i++)
		free(tr->argv0[i]);
	tr->nr_procs = 0;
	tr->nr_threads = 0;
}

static int tree_flush(struct export_ctx *x)
{
	struct perfetto *p = x->priv;
	struct tree *tr = &p->tree;
	Perfetto__Protos__ProcessTree pt = PERFETTO__PROTOS__PROCESS_TREE__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	int err;

	if (!tr->nr_procs && !tr->nr_threads)
		return 0;
	pt.n_processes = tr->nr_procs;
	pt.processes = tr->procp;
	pt.n_threads = tr->nr_threads;
	pt.threads = tr->threadp;
	pkt.has_timestamp = true;
	pkt.timestamp = tr->ts;
	pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_PROCESS_TREE;
	pkt.process_tree = &pt;
	pkt.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	pkt.trusted_packet_sequence_id = SEQUENCE_ID;
	err = put_packet(x, &pkt, 0);
	tree_reset(tr);
	return err;
}

/*
 * A process, named @name (its one cmdline element: Perfetto ignores a
 * process without one), at @ts.  No thread names: Perfetto would prefer
 * them to every later name the trace's events give.
 */
static int tree_process(struct export_ctx *x, uint64_t ts, int32_t pid,
			int32_t ppid, const char *name)
{
	struct tree *tr = &((struct perfetto *)x->priv)->tree;
	Perfetto__Protos__ProcessTree__Process *pr;
	char *s;

	if (tr->nr_procs == TREE_ENTRIES && tree_flush(x))
		return -1;
	s = strdup(name);
	if (!s) {
		error_line("out of memory");
		return -1;
	}
	pr = &tr->procs[tr->nr_procs];
	perfetto__protos__process_tree__process__init(pr);
	pr->has_pid = true;
	pr->pid = pid;
	pr->has_ppid = ppid >= 0;
	pr->ppid = ppid;
	tr->argv0[tr->nr_procs] = s;
	pr->n_cmdline = 1;
	pr->cmdline = &tr->argv0[tr->nr_procs];
	tr->procp[tr->nr_procs++] = pr;
	tr->ts = ts;
	return 0;
}

static int tree_thread(struct export_ctx *x, uint64_t ts, int32_t tid, int32_t tgid)
{
	struct tree *tr = &((struct perfetto *)x->priv)->tree;
	Perfetto__Protos__ProcessTree__Thread *th;

	if (tr->nr_threads == TREE_ENTRIES && tree_flush(x))
		return -1;
	th = &tr->threads[tr->nr_threads];
	perfetto__protos__process_tree__thread__init(th);
	th->has_tid = true;
	th->tid = tid;
	th->has_tgid = true;
	th->tgid = tgid;
	tr->threadp[tr->nr_threads++] = th;
	tr->ts = ts;
	return 0;
}

static int set_parent(struct export_ctx *x, int32_t pid, int32_t ppid)
{
	struct perfetto *p = x->priv;
	struct parent *pa;
	bool created;

	if (pid < 0)
		return 0;
	pa = rt_tidmap_get(&p->parents, pid, &created);
	if (!pa) {
		error_line("out of memory");
		return -1;
	}
	pa->ppid = ppid;
	return 0;
}

static int32_t parent_of(const struct export_ctx *x, int32_t pid)
{
	const struct parent *pa = pid < 0 ? NULL :
		rt_tidmap_find(&((const struct perfetto *)x->priv)->parents, pid);

	return pa ? pa->ppid : -1;
}

/* ---- bundles ------------------------------------------------------------------------ */

/*
 * CPU @c's open bundle as one packet (also one with no event but a loss;
 * none for a CPU Perfetto does not read).
 */
static int bundle_flush(struct export_ctx *x, unsigned int c)
{
	struct perfetto *p = x->priv;
	struct pcpu *pc = &p->cpus[c];
	Perfetto__Protos__FtraceEventBundle bundle = PERFETTO__PROTOS__FTRACE_EVENT_BUNDLE__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	uint8_t head[64];
	size_t n, blen;
	int err;

	if ((!pc->nr && !pc->lost) || x->t->cpus[c].cpu >= PERFETTO_MAX_CPUS)
		return 0;
	if (pc->events.oom) {
		error_line("out of memory");
		return -1;
	}
	bundle.has_cpu = true;
	bundle.cpu = (uint32_t)x->t->cpus[c].cpu;
	if (pc->lost) {
		bundle.has_lost_events = true;
		bundle.lost_events = true;
	}
	/* TracePacket.ftrace_events: the bundle's own fields, then its events. */
	blen = perfetto__protos__ftrace_event_bundle__get_packed_size(&bundle);
	n = put_len_field(head, PACKET_FTRACE_EVENTS, blen + pc->events.len);
	n += perfetto__protos__ftrace_event_bundle__pack(&bundle, head + n);
	pkt.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	pkt.trusted_packet_sequence_id = SEQUENCE_ID;
	err = put_packet(x, &pkt, n + pc->events.len);
	if (!err && (fwrite(head, 1, n, x->f) != n ||
		     (pc->events.len &&
		      fwrite(pc->events.data, 1, pc->events.len, x->f) != pc->events.len)))
		err = write_error(x);
	pc->events.len = 0;
	pc->nr = 0;
	pc->lost = false;
	return err;
}

/* @ev, one more event field of CPU @c's open bundle. */
static int bundle_add(struct export_ctx *x, unsigned int c, const Event *ev)
{
	struct pcpu *pc = &((struct perfetto *)x->priv)->cpus[c];
	uint8_t head[16];
	size_t len = perfetto__protos__ftrace_event__get_packed_size(ev);

	pbuf_append(&pc->events.base, put_len_field(head, BUNDLE_EVENT, len), head);
	perfetto__protos__ftrace_event__pack_to_buffer(ev, &pc->events.base);
	if (pc->events.oom) {
		error_line("out of memory");
		return -1;
	}
	if (++pc->nr >= BUNDLE_EVENTS || pc->events.len >= BUNDLE_BYTES)
		return bundle_flush(x, c);
	return 0;
}

/* ---- events ------------------------------------------------------------------------- */

/* The kernel's prio of ringtrace's (LTTng's prio - MAX_RT_PRIO). */
static int32_t kprio(const struct rt_item *it, const char *name)
{
	return (int32_t)ex_int(it, name) + 100;
}

/* The text from @off on (NUL-terminated) is *@dst's, once all are in. */
static void text_for(struct perfetto *p, size_t off, char **dst)
{
	pbuf_append(&p->text.base, 1, (const uint8_t *)"");
	p->fixups[p->nr_fixups++] = (struct fixup){ .dst = dst, .off = off };
}

/* Up to the first NUL of @n bytes at @s, as *@dst. */
static void text_copy(struct perfetto *p, const void *s, size_t n, char **dst)
{
	size_t off = p->text.len;

	pbuf_append(&p->text.base, strnlen(s, n), s);
	text_for(p, off, dst);
}

/* Text field @name of @it as *@dst ("" if the event has no such field). */
static void text(struct perfetto *p, const struct rt_item *it, const char *name,
		 char **dst)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_TEXT);

	text_copy(p, v ? v->data : (const uint8_t *)"", v ? v->count : 0, dst);
}

/* Points every string of the event at its place in p->text. */
static void fix_strings(struct perfetto *p)
{
	for (unsigned int i = 0; i < p->nr_fixups; i++)
		*p->fixups[i].dst = (char *)p->text.data + p->fixups[i].off;
}

/* An atrace record (Perfetto's systrace parser reads it), @n bytes. */
static bool is_atrace(const char *s, size_t n)
{
	size_t i = 2;

	if (!n || !strchr("BEICSFNGH", s[0]))
		return false;
	if (s[0] == 'E' && n == 1)
		return true;
	if (n < 3 || s[1] != '|')
		return false;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	return i > 2 && (i == n || s[i] == '|');
}

/*
 * The marker's text for PrintFtraceEvent.buf: an atrace record as it is,
 * other text as an instant on the thread, "I|tgid|text" (tgid 0 when
 * unknown: Perfetto then binds the thread to no process).  An instant's
 * name ends at a '|': each becomes U+00A6 (broken bar).
 */
static void marker(struct perfetto *p, const struct rt_item *it, int32_t tgid,
		   char **dst)
{
	const struct rt_field_value *v = rt_item_field(it, "data", RT_USE_TEXT);
	const char *s = v ? (const char *)v->data : "";
	size_t n = v ? strnlen(s, v->count) : 0, end = n, off = p->text.len;
	char head[32];

	while (end && s[end - 1] == '\n')
		end--;
	if (!end || is_atrace(s, end)) {
		pbuf_append(&p->text.base, n, (const uint8_t *)s);
	} else {
		pbuf_append(&p->text.base,
			    (size_t)snprintf(head, sizeof(head), "I|%" PRId32 "|", tgid),
			    (const uint8_t *)head);
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '|')
				pbuf_append(&p->text.base, 2, (const uint8_t *)"\xc2\xa6");
			else
				pbuf_append(&p->text.base, 1, (const uint8_t *)&s[i]);
		}
	}
	text_for(p, off, dst);
}

/* "[1, 2, 3]": an integer array or sequence as text, as *@dst. */
static void int_list(struct perfetto *p, const struct rt_field_value *v, char **dst)
{
	size_t off = p->text.len;
	char num[32];

	pbuf_append(&p->text.base, 1, (const uint8_t *)"[");
	for (uint64_t i = 0; i < v->count; i++) {
		int n = v->desc->is_signed ?
			snprintf(num, sizeof(num), "%s%" PRId64, i ? ", " : "", rt_field_s64(v, i)) :
			snprintf(num, sizeof(num), "%s%" PRIu64, i ? ", " : "", rt_field_u64(v, i));

		pbuf_append(&p->text.base, (size_t)n, (const uint8_t *)num);
	}
	pbuf_append(&p->text.base, 1, (const uint8_t *)"]");
	text_for(p, off, dst);
}

/* An event Perfetto has no message for: its name and every field. */
static void generic(struct perfetto *p, const struct rt_item *it,
		    Perfetto__Protos__GenericFtraceEvent *g)
{
	const char *name = it->event->name;

	text_copy(p, name, strlen(name), &g->event_name);
	for (unsigned int i = 0; i < it->nr_fields; i++) {
		const struct rt_field_value *v = &it->fields[i];
		Perfetto__Protos__GenericFtraceEvent__Field *f = &p->fields[i];

		perfetto__protos__generic_ftrace_event__field__init(f);
		text_copy(p, v->desc->name, strlen(v->desc->name), &f->name);
		if (v->desc->is_text) {
			f->value_case = PERFETTO__PROTOS__GENERIC_FTRACE_EVENT__FIELD__VALUE_STR_VALUE;
			text_copy(p, v->data, v->count, &f->str_value);
		} else if (v->desc->kind != RT_FIELD_INT) {
			f->value_case = PERFETTO__PROTOS__GENERIC_FTRACE_EVENT__FIELD__VALUE_STR_VALUE;
			int_list(p, v, &f->str_value);
		} else if (v->desc->is_signed) {
			f->value_case = PERFETTO__PROTOS__GENERIC_FTRACE_EVENT__FIELD__VALUE_INT_VALUE;
			f->int_value = rt_field_s64(v, 0);
		} else {
			f->value_case = PERFETTO__PROTOS__GENERIC_FTRACE_EVENT__FIELD__VALUE_UINT_VALUE;
			f->uint_value = rt_field_u64(v, 0);
		}
		p->fieldp[i] = f;
	}
	g->n_field = it->nr_fields;
	g->field = p->fieldp;
}

/* Every payload, one at a time. */
union payload {
	Perfetto__Protos__PrintFtraceEvent print;
	Perfetto__Protos__SchedSwitchFtraceEvent sched_switch;
	Perfetto__Protos__SchedWakingFtraceEvent waking;
	Perfetto__Protos__SchedWakeupFtraceEvent wakeup;
	Perfetto__Protos__SchedWakeupNewFtraceEvent wakeup_new;
	Perfetto__Protos__TaskNewtaskFtraceEvent newtask;
	Perfetto__Protos__TaskRenameFtraceEvent rename;
	Perfetto__Protos__SchedProcessExecFtraceEvent exec;
	Perfetto__Protos__SchedProcessExitFtraceEvent exit;
	Perfetto__Protos__SchedProcessFreeFtraceEvent free;
	Perfetto__Protos__SchedMigrateTaskFtraceEvent migrate;
	Perfetto__Protos__IrqHandlerEntryFtraceEvent irq_entry;
	Perfetto__Protos__IrqHandlerExitFtraceEvent irq_exit;
	Perfetto__Protos__SoftirqEntryFtraceEvent softirq_entry;
	Perfetto__Protos__SoftirqExitFtraceEvent softirq_exit;
	struct {
		Perfetto__Protos__SysEnterFtraceEvent m;
		uint64_t args[6];
	} sys_enter;
	Perfetto__Protos__SysExitFtraceEvent sys_exit;
	Perfetto__Protos__GenericFtraceEvent generic;
};

/* A wakeup's four fields, the same in its three messages. */
#define WAKE(m, it, p) do {						\
	(m).has_pid = (m).has_prio = (m).has_target_cpu = true;		\
	(m).pid = (int32_t)ex_int(it, "tid");				\
	(m).prio = kprio(it, "prio");					\
	(m).target_cpu = (int32_t)ex_int(it, "target_cpu");		\
	text(p, it, "comm", &(m).comm);					\
} while (0)

#define SET(m, f, v)	do { (m).has_##f = true; (m).f = (v); } while (0)
#define CASE(ev, c)	((ev)->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_##c)

/*
 * The FtraceEvent of @it (kind @k) into @ev, its payload in @u, its
 * strings in p->text (fix_strings() makes them pointers).
 */
static void fill(struct export_ctx *x, const struct rt_item *it, int32_t tid,
		 enum kind k, Event *ev, union payload *u)
{
	struct perfetto *p = x->priv;
	const struct rt_field_value *v;

	switch (k) {
	case K_SWITCH:
		perfetto__protos__sched_switch_ftrace_event__init(&u->sched_switch);
		text(p, it, "prev_comm", &u->sched_switch.prev_comm);
		text(p, it, "next_comm", &u->sched_switch.next_comm);
		SET(u->sched_switch, prev_pid, (int32_t)ex_int(it, "prev_tid"));
		SET(u->sched_switch, prev_prio, kprio(it, "prev_prio"));
		/* The kernel's TASK_REPORT encoding, as ringtrace records it. */
		SET(u->sched_switch, prev_state, ex_int(it, "prev_state"));
		SET(u->sched_switch, next_pid, (int32_t)ex_int(it, "next_tid"));
		SET(u->sched_switch, next_prio, kprio(it, "next_prio"));
		CASE(ev, SCHED_SWITCH);
		ev->sched_switch = &u->sched_switch;
		break;
	case K_WAKING:
		perfetto__protos__sched_waking_ftrace_event__init(&u->waking);
		WAKE(u->waking, it, p);
		CASE(ev, SCHED_WAKING);
		ev->sched_waking = &u->waking;
		break;
	case K_WAKEUP:
		perfetto__protos__sched_wakeup_ftrace_event__init(&u->wakeup);
		WAKE(u->wakeup, it, p);
		CASE(ev, SCHED_WAKEUP);
		ev->sched_wakeup = &u->wakeup;
		break;
	case K_WAKEUP_NEW:
		perfetto__protos__sched_wakeup_new_ftrace_event__init(&u->wakeup_new);
		WAKE(u->wakeup_new, it, p);
		CASE(ev, SCHED_WAKEUP_NEW);
		ev->sched_wakeup_new = &u->wakeup_new;
		break;
	case K_FORK:
		/* The kernel's task_newtask, in the parent, names the child. */
		perfetto__protos__task_newtask_ftrace_event__init(&u->newtask);
		SET(u->newtask, pid, (int32_t)ex_int(it, "child_tid"));
		text(p, it, "child_comm", &u->newtask.comm);
		SET(u->newtask, clone_flags,
		    ex_int(it, "child_pid") == ex_int(it, "parent_pid") ?
		    CLONE_VM | CLONE_SIGHAND | CLONE_THREAD : 0);
		CASE(ev, TASK_NEWTASK);
		ev->task_newtask = &u->newtask;
		break;
	case K_EXEC:
		perfetto__protos__sched_process_exec_ftrace_event__init(&u->exec);
		text(p, it, "filename", &u->exec.filename);
		SET(u->exec, pid, (int32_t)ex_int(it, "tid"));
		SET(u->exec, old_pid, (int32_t)ex_int(it, "old_tid"));
		CASE(ev, SCHED_PROCESS_EXEC);
		ev->sched_process_exec = &u->exec;
		break;
	case K_EXIT: {
		int32_t pid = (int32_t)ex_int(it, "tid");
		int32_t tgid = rt_threads_pid(x->th, pid);

		perfetto__protos__sched_process_exit_ftrace_event__init(&u->exit);
		text(p, it, "comm", &u->exit.comm);
		SET(u->exit, pid, pid);
		if (tgid >= 0)
			SET(u->exit, tgid, tgid);
		SET(u->exit, prio, kprio(it, "prio"));
		CASE(ev, SCHED_PROCESS_EXIT);
		ev->sched_process_exit = &u->exit;
		break;
	}
	case K_FREE:
		perfetto__protos__sched_process_free_ftrace_event__init(&u->free);
		text(p, it, "comm", &u->free.comm);
		SET(u->free, pid, (int32_t)ex_int(it, "tid"));
		SET(u->free, prio, kprio(it, "prio"));
		CASE(ev, SCHED_PROCESS_FREE);
		ev->sched_process_free = &u->free;
		break;
	case K_MIGRATE:
		perfetto__protos__sched_migrate_task_ftrace_event__init(&u->migrate);
		text(p, it, "comm", &u->migrate.comm);
		SET(u->migrate, pid, (int32_t)ex_int(it, "tid"));
		SET(u->migrate, prio, kprio(it, "prio"));
		SET(u->migrate, orig_cpu, (int32_t)ex_int(it, "orig_cpu"));
		SET(u->migrate, dest_cpu, (int32_t)ex_int(it, "dest_cpu"));
		CASE(ev, SCHED_MIGRATE_TASK);
		ev->sched_migrate_task = &u->migrate;
		break;
	case K_RENAME:
		perfetto__protos__task_rename_ftrace_event__init(&u->rename);
		SET(u->rename, pid, (int32_t)ex_int(it, "tid"));
		text(p, it, "oldcomm", &u->rename.oldcomm);
		text(p, it, "newcomm", &u->rename.newcomm);
		SET(u->rename, oom_score_adj, (int32_t)ex_int(it, "oom_score_adj"));
		CASE(ev, TASK_RENAME);
		ev->task_rename = &u->rename;
		break;
	case K_IRQ_ENTRY:
		perfetto__protos__irq_handler_entry_ftrace_event__init(&u->irq_entry);
		SET(u->irq_entry, irq, (int32_t)ex_int(it, "irq"));
		text(p, it, "name", &u->irq_entry.name);
		CASE(ev, IRQ_HANDLER_ENTRY);
		ev->irq_handler_entry = &u->irq_entry;
		break;
	case K_IRQ_EXIT:
		perfetto__protos__irq_handler_exit_ftrace_event__init(&u->irq_exit);
		SET(u->irq_exit, irq, (int32_t)ex_int(it, "irq"));
		SET(u->irq_exit, ret, (int32_t)ex_int(it, "ret"));
		CASE(ev, IRQ_HANDLER_EXIT);
		ev->irq_handler_exit = &u->irq_exit;
		break;
	case K_SOFTIRQ_ENTRY:
		perfetto__protos__softirq_entry_ftrace_event__init(&u->softirq_entry);
		SET(u->softirq_entry, vec, (uint32_t)ex_int(it, "vec"));
		CASE(ev, SOFTIRQ_ENTRY);
		ev->softirq_entry = &u->softirq_entry;
		break;
	case K_SOFTIRQ_EXIT:
		perfetto__protos__softirq_exit_ftrace_event__init(&u->softirq_exit);
		SET(u->softirq_exit, vec, (uint32_t)ex_int(it, "vec"));
		CASE(ev, SOFTIRQ_EXIT);
		ev->softirq_exit = &u->softirq_exit;
		break;
	case K_SYS_ENTER:
		perfetto__protos__sys_enter_ftrace_event__init(&u->sys_enter.m);
		SET(u->sys_enter.m, id, ex_int(it, "id"));
		/* The six argument registers (unpacked: Perfetto's decoder). */
		v = rt_item_field(it, "args", RT_USE_INTS);
		while (v && u->sys_enter.m.n_args < v->count &&
		       u->sys_enter.m.n_args < ARRAY_SIZE(u->sys_enter.args)) {
			u->sys_enter.args[u->sys_enter.m.n_args] =
				rt_field_u64(v, u->sys_enter.m.n_args);
			u->sys_enter.m.n_args++;
		}
		u->sys_enter.m.args = u->sys_enter.args;
		CASE(ev, SYS_ENTER);
		ev->sys_enter = &u->sys_enter.m;
		break;
	case K_SYS_EXIT:
		perfetto__protos__sys_exit_ftrace_event__init(&u->sys_exit);
		SET(u->sys_exit, id, ex_int(it, "id"));
		SET(u->sys_exit, ret, ex_int(it, "ret"));
		CASE(ev, SYS_EXIT);
		ev->sys_exit = &u->sys_exit;
		break;
	case K_MARKER: {
		int32_t tgid = rt_threads_pid(x->th, tid);

		perfetto__protos__print_ftrace_event__init(&u->print);
		marker(p, it, tgid > 0 ? tgid : 0, &u->print.buf);
		CASE(ev, PRINT);
		ev->print = &u->print;
		break;
	}
	case K_GENERIC:
		perfetto__protos__generic_ftrace_event__init(&u->generic);
		generic(p, it, &u->generic);
		CASE(ev, GENERIC);
		ev->generic = &u->generic;
		break;
	case K_DUMP_TASK:
	case K_DUMP_CPU:
	case K_SAMPLE:			/* not events: event() says what they are */
		break;
	}
}

/*
 * What the process tree learns from @it: the state dump's tasks (batched),
 * a fork's child (after the fork: Perfetto's task_newtask makes the
 * process or thread first, at the fork's time; an entry at the same time
 * would come before it and make another), an exec's program as the
 * process's cmdline (when its parent is known: Perfetto links a process to
 * the one its ppid names).
 */
static int learn(struct export_ctx *x, const struct rt_item *it, enum kind k,
		 uint64_t ts)
{
	char name[COMM_LEN + 1], file[1025];
	int32_t tid, pid, ppid;

	switch (k) {
	case K_DUMP_TASK:
		tid = (int32_t)ex_int(it, "tid");
		pid = (int32_t)ex_int(it, "pid");
		if (tid != pid)
			return tree_thread(x, ts, tid, pid);
		ppid = (int32_t)ex_int(it, "ppid");
		return set_parent(x, pid, ppid) ||
		       tree_process(x, ts, pid, ppid, ex_text(it, "comm", name, sizeof(name)));
	case K_FORK:
		tid = (int32_t)ex_int(it, "child_tid");
		pid = (int32_t)ex_int(it, "child_pid");
		ppid = (int32_t)ex_int(it, "parent_pid");
		if (pid == ppid) {
			if (tree_thread(x, ts + 1, tid, pid))
				return -1;
		} else if (set_parent(x, pid, ppid) ||
			   tree_process(x, ts + 1, pid, ppid,
					ex_text(it, "child_comm", name, sizeof(name)))) {
			return -1;
		}
		return tree_flush(x);
	case K_EXEC:
		/* After exec the task leads its thread group. */
		pid = (int32_t)ex_int(it, "tid");
		ppid = parent_of(x, pid);
		if (ppid < 0)
			return 0;
		return tree_process(x, ts, pid, ppid,
				    ex_text(it, "filename", file, sizeof(file))) ||
		       tree_flush(x);
	default:
		return 0;
	}
}

/* ---- kernel stacks -------------------------------------------------------------------- */

/*
 * The mapping iid of frame @f: vmlinux's, a module's, or a user frame's
 * binary (stack_tree_map()); 0 out of memory.
 */
static uint32_t mapping_of(struct perfetto *p, const struct stack_frame *f,
			   bool *is_new)
{
	struct pmap *m;

	*is_new = false;
	for (uint32_t i = 0; i < p->nr_mappings; i++)
		if (p->mappings[i].user == f->user &&
		    (f->user ? p->mappings[i].map == f->map :
		     p->mappings[i].module == f->module))
			return i + 1;
	m = realloc(p->mappings, (p->nr_mappings + 1) * sizeof(*m));
	if (!m)
		return 0;
	p->mappings = m;
	m[p->nr_mappings++] = (struct pmap){
		.user = f->user, .module = f->module, .map = f->map,
	};
	*is_new = true;
	return p->nr_mappings;
}

/* What one PerfSample packet interns: arrays of the messages and their pointers. */
struct interning {
	Perfetto__Protos__InternedData data;
	Perfetto__Protos__InternedString *names, **namep;
	Perfetto__Protos__InternedString *paths, **pathp;
	Perfetto__Protos__InternedString *bids, **bidp;
	Perfetto__Protos__Frame *frames, **framep;
	Perfetto__Protos__Mapping *maps, **mapp;
	uint64_t *path_ids;
	char **path_text;
	Perfetto__Protos__Callstack callstack, *callstackp;
	uint64_t *frame_ids;
};

static void interning_free(struct interning *in, size_t n)
{
	for (size_t i = 0; in->path_text && i < n; i++)
		free(in->path_text[i]);
	free(in->names);
	free(in->namep);
	free(in->paths);
	free(in->pathp);
	free(in->bids);
	free(in->bidp);
	free(in->frames);
	free(in->framep);
	free(in->maps);
	free(in->mapp);
	free(in->path_ids);
	free(in->path_text);
	free(in->frame_ids);
}

/*
 * Mapping @iid of frame @f into @in's k-th place: its path ("[kernel.kallsyms]",
 * "[module]", a binary's path or "[unknown]"), and a user binary's
 * build-id (raw bytes, as Perfetto's profilers intern them), range, file
 * offset and load bias.  Every ELF file is mapped from its offset 0 (its
 * headers), where Perfetto's start_offset is; a frame's rel_pc is its file
 * offset.
 */
static int intern_mapping(struct perfetto *p, struct interning *in, size_t k,
			  uint32_t iid, const struct stack_frame *f)
{
	Perfetto__Protos__InternedString *path = &in->paths[k];
	Perfetto__Protos__Mapping *mp = &in->maps[k];
	const struct stack_map *um = f->user ? stack_tree_map(p->stacks, f->map) : NULL;
	char *text = NULL;

	if (um)
		text = strdup(*um->path ? um->path : UNKNOWN_MAPPING);
	else if (f->user)
		text = strdup(UNKNOWN_MAPPING);
	else if (f->module && (text = malloc(strlen(f->module) + 3)))
		sprintf(text, "[%s]", f->module);
	else if (!f->module)
		text = strdup(KERNEL_MAPPING);
	if (!text)
		return -1;
	in->path_text[k] = text;
	perfetto__protos__interned_string__init(path);
	SET(*path, iid, iid);
	SET(*path, str, ((ProtobufCBinaryData){ strlen(text), (uint8_t *)text }));
	perfetto__protos__mapping__init(mp);
	SET(*mp, iid, iid);
	in->path_ids[k] = iid;
	mp->n_path_string_ids = 1;
	mp->path_string_ids = &in->path_ids[k];
	if (um) {
		SET(*mp, start, um->start);
		SET(*mp, end, um->end);
		SET(*mp, exact_offset, um->pgoff);
		SET(*mp, start_offset, 0);
		SET(*mp, load_bias, um->load_bias);
	}
	if (um && um->build_id_len) {
		Perfetto__Protos__InternedString *bid = &in->bids[in->data.n_build_ids];

		perfetto__protos__interned_string__init(bid);
		SET(*bid, iid, iid);
		SET(*bid, str, ((ProtobufCBinaryData){ um->build_id_len,
						       (uint8_t *)um->build_id }));
		SET(*mp, build_id, iid);
		in->bidp[in->data.n_build_ids++] = bid;
	}
	in->pathp[k] = path;
	in->mapp[k] = mp;
	in->data.n_mappings = in->data.n_mapping_paths = k + 1;
	return 0;
}

/* The frames of the tree new since the last packet, and their mappings. */
static int intern_frames(struct perfetto *p, struct interning *in)
{
	uint32_t first = p->frames_interned + 1, last = stack_tree_frames(p->stacks);
	size_t n = last - p->frames_interned;

	if (!n)
		return 0;
	in->names = calloc(n, sizeof(*in->names));
	in->namep = calloc(n, sizeof(*in->namep));
	in->frames = calloc(n, sizeof(*in->frames));
	in->framep = calloc(n, sizeof(*in->framep));
	/* At most one new mapping (and build-id) per new frame. */
	in->paths = calloc(n, sizeof(*in->paths));
	in->pathp = calloc(n, sizeof(*in->pathp));
	in->bids = calloc(n, sizeof(*in->bids));
	in->bidp = calloc(n, sizeof(*in->bidp));
	in->maps = calloc(n, sizeof(*in->maps));
	in->mapp = calloc(n, sizeof(*in->mapp));
	in->path_ids = calloc(n, sizeof(*in->path_ids));
	in->path_text = calloc(n, sizeof(*in->path_text));
	if (!in->names || !in->namep || !in->frames || !in->framep || !in->paths ||
	    !in->pathp || !in->bids || !in->bidp || !in->maps || !in->mapp ||
	    !in->path_ids || !in->path_text)
		return -1;
	for (uint32_t id = first; id <= last; id++) {
		const struct stack_frame *f = stack_tree_frame(p->stacks, id);
		Perfetto__Protos__InternedString *name = &in->names[id - first];
		Perfetto__Protos__Frame *fr = &in->frames[id - first];
		bool new_map;
		uint32_t map = mapping_of(p, f, &new_map);

		if (!map || (new_map && intern_mapping(p, in, in->data.n_mappings, map, f)))
			return -1;
		perfetto__protos__interned_string__init(name);
		SET(*name, iid, id);
		SET(*name, str, ((ProtobufCBinaryData){ strlen(f->name), (uint8_t *)f->name }));
		perfetto__protos__frame__init(fr);
		SET(*fr, iid, id);
		SET(*fr, function_name_id, id);
		SET(*fr, mapping_id, map);
		SET(*fr, rel_pc, f->start);
		in->namep[id - first] = name;
		in->framep[id - first] = fr;
	}
	in->data.n_function_names = in->data.n_frames = n;
	in->data.function_names = in->namep;
	in->data.frames = in->framep;
	in->data.mapping_paths = in->pathp;
	in->data.mappings = in->mapp;
	in->data.build_ids = in->bidp;
	p->frames_interned = last;
	return 0;
}

/* The callstack of @leaf, outermost frame first, unless interned already. */
static int intern_callstack(struct perfetto *p, struct interning *in, uint32_t leaf)
{
	const struct stack_node *node = stack_tree_node(p->stacks, leaf);
	uint32_t nodes = stack_tree_nodes(p->stacks);
	size_t n = node->depth + 1;

	if (nodes > p->callstacks_cap) {
		uint32_t cap = 2 * nodes;
		bool *b = realloc(p->callstack_interned, cap * sizeof(*b));

		if (!b)
			return -1;
		memset(b + p->callstacks_cap, 0, (cap - p->callstacks_cap) * sizeof(*b));
		p->callstack_interned = b;
		p->callstacks_cap = cap;
	}
	if (p->callstack_interned[leaf - 1])
		return 0;
	in->frame_ids = calloc(n, sizeof(*in->frame_ids));
	if (!in->frame_ids)
		return -1;
	for (uint32_t id = leaf; id; id = stack_tree_node(p->stacks, id)->parent)
		in->frame_ids[--n] = stack_tree_node(p->stacks, id)->frame;
	perfetto__protos__callstack__init(&in->callstack);
	SET(in->callstack, iid, leaf);
	in->callstack.n_frame_ids = node->depth + 1;
	in->callstack.frame_ids = in->frame_ids;
	in->callstackp = &in->callstack;
	in->data.n_callstacks = 1;
	in->data.callstacks = &in->callstackp;
	p->callstack_interned[leaf - 1] = true;
	return 0;
}

/*
 * Where the CPU was: a cpu_sample says (its mode: 0 user, 1 kernel); a
 * uprobe or USDT probe stopped user code; any other event is the kernel's.
 */
static Perfetto__Protos__Profiling__CpuMode cpu_mode(const struct stack_pair *sp,
						     int64_t mode, bool sample)
{
	static const char *const user[] = { "uprobe_", "usdt_" };
	bool in_user = false;

	for (int i = 0; !sample && i < ARRAY_SIZE(user); i++)
		in_user = in_user || !strncmp(sp->event->name, user[i], strlen(user[i]));
	if (sample ? mode == 1 : !in_user)
		return PERFETTO__PROTOS__PROFILING__CPU_MODE__MODE_KERNEL;
	return PERFETTO__PROTOS__PROFILING__CPU_MODE__MODE_USER;
}

/*
 * An event's stacks (a cpu_sample's, or those an event carried): a
 * PerfSample of its thread at its time, user frames then kernel frames,
 * with what its frames and callstack add to the sequence's interned data.
 * A stack without a frame (an idle CPU's sample) is left out.
 */
static int stack(struct export_ctx *x, const struct stack_pair *sp)
{
	struct perfetto *p = x->priv;
	/* The owner of the stacks at the event's CPU and time. */
	const struct rt_item at = { .cpu = sp->cpu, .timestamp = sp->timestamp };
	const struct stack_owner *o = stack_tree_owner(p->stacks, &at);
	Perfetto__Protos__PerfSample ps = PERFETTO__PROTOS__PERF_SAMPLE__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	struct interning in = { .data = PERFETTO__PROTOS__INTERNED_DATA__INIT };
	bool sample = sp->tid >= 0;
	int32_t tid = sample ? sp->tid : o ? o->tid : -1, pid;
	uint64_t ts;
	int64_t leaf;
	int err;

	/* Its event was left out (and counted), or lost with a packet. */
	if (!o || tid < 0 || sp->cpu >= PERFETTO_MAX_CPUS ||
	    !boottime(x, sp->timestamp, &ts))
		return 0;
	pid = stack_pair_pid(sp, x->th, tid);
	leaf = stack_tree_add_pair(p->stacks, p->names, sp, pid);
	if (leaf < 0 || intern_frames(p, &in) ||
	    (leaf && intern_callstack(p, &in, (uint32_t)leaf))) {
		interning_free(&in, in.data.n_mappings);
		error_line("out of memory");
		return -1;
	}
	if (!leaf) {
		interning_free(&in, in.data.n_mappings);
		return 0;
	}
	SET(ps, cpu, sp->cpu);
	SET(ps, pid, (uint32_t)(pid >= 0 ? pid : tid));
	SET(ps, tid, (uint32_t)tid);
	SET(ps, cpu_mode, cpu_mode(sp, p->sample_mode, sample));
	SET(ps, callstack_iid, (uint64_t)leaf);
	SET(pkt, timestamp, ts);
	pkt.optional_trusted_packet_sequence_id_case =
		PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
	pkt.trusted_packet_sequence_id = STACK_SEQUENCE_ID;
	SET(pkt, sequence_flags,
	    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE |
	    (p->stack_sequence_started ? 0 :
	     PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED));
	p->stack_sequence_started = true;
	if (in.data.n_frames || in.data.n_callstacks)
		pkt.interned_data = &in.data;
	pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_PERF_SAMPLE;
	pkt.perf_sample = &ps;
	err = put_packet(x, &pkt, 0);
	interning_free(&in, in.data.n_mappings);
	return err;
}

/*
 * A window from --begin: the processes and threads known when it opens,
 * which the trace said before it, as one ProcessTree at its first event
 * (by tid: the same bytes however the window was read).  A process is
 * named by its leader's comm (its exec'd path, if any, is not kept).
 */
static int window_tree(struct export_ctx *x, uint64_t ts)
{
	struct perfetto *p = x->priv;
	int32_t *tids;
	size_t n;
	int err = 0;

	p->window_said = true;
	tids = ex_known_threads(x->th, &n);
	if (!tids)
		return -1;
	for (size_t i = 0; i < n && !err; i++) {
		int32_t tid = tids[i], pid = rt_threads_pid(x->th, tid), ppid;
		const char *comm;

		if (pid < 0)
			continue;
		if (tid != pid) {
			err = tree_thread(x, ts, tid, pid);
			continue;
		}
		ppid = rt_threads_ppid(x->th, pid);
		comm = rt_threads_comm(x->th, pid, 0);
		err = set_parent(x, pid, ppid) ||
		      tree_process(x, ts, pid, ppid, comm ? comm : "");
	}
	free(tids);
	return err || tree_flush(x);
}

static int event(struct export_ctx *x, const struct rt_item *it, int32_t tid)
{
	struct perfetto *p = x->priv;
	enum kind k = p->kinds[it->event - x->md->events];
	int c = trace_cpu_index(x->t, it->cpu);
	Event ev = PERFETTO__PROTOS__FTRACE_EVENT__INIT;
	union payload u;
	uint64_t ts;

	if (c < 0)
		return 0;
	/* Left out or not, it owns the stack that may follow. */
	stack_tree_event(p->stacks, it, tid);
	if (k == K_SAMPLE)
		p->sample_mode = ex_int(it, "mode");
	if (!boottime(x, it->timestamp, &ts)) {
		p->out_of_range++;
		return 0;
	}
	if (start(x, ts - (uint64_t)p->boottime_offset))
		return -1;
	if (x->windowed && !p->window_said && window_tree(x, ts))
		return -1;
	if (k != K_DUMP_TASK && tree_flush(x))
		return -1;
	if (learn(x, it, k, ts))
		return -1;
	/* A sample is its stacks' PerfSample alone (stack()). */
	if (k == K_DUMP_TASK || k == K_DUMP_CPU || k == K_SAMPLE)
		return 0;
	if (it->cpu >= PERFETTO_MAX_CPUS) {
		p->high_cpu++;
		return 0;
	}
	if (tid < 0) {
		x->unknown++;
		return 0;
	}
	p->text.len = 0;
	p->nr_fixups = 0;
	fill(x, it, tid, k, &ev, &u);
	if (p->text.oom) {
		error_line("out of memory");
		return -1;
	}
	fix_strings(p);
	/* timestamp, pid, then the event: trace_processor's fast path. */
	ev.has_timestamp = true;
	ev.timestamp = ts;
	ev.has_pid = true;
	ev.pid = (uint32_t)tid;
	p->last_ts = ts;
	return bundle_add(x, (unsigned int)c, &ev);
}

/* A loss on @it's CPU: flagged on that CPU's next bundle. */
static int lost(struct export_ctx *x, const struct rt_item *it)
{
	struct perfetto *p = x->priv;
	int c = trace_cpu_index(x->t, it->cpu);

	if (c < 0)
		return 0;
	if (bundle_flush(x, (unsigned int)c))
		return -1;
	p->cpus[c].lost = true;
	if (it->lost_first)
		p->cpus[c].lost_first += it->lost_events;
	p->cpus[c].lost_total += it->lost_events;
	return 0;
}

/*
 * FtraceStats at the start and at the end: per CPU, the events lost
 * before the first packet (a recording that took over a trace in
 * progress counts them: include/uapi/linux/ringtrace.h), then all lost;
 * trace_processor shows the difference as ftrace_cpu_overrun_delta.
 */
static int put_stats(struct export_ctx *x)
{
	struct perfetto *p = x->priv;
	unsigned int n = x->t->nr_cpus;
	Perfetto__Protos__FtraceCpuStats *st = calloc(n ? n : 1, sizeof(*st));
	Perfetto__Protos__FtraceCpuStats **stp = calloc(n ? n : 1, sizeof(*stp));
	int err = 0;

	if (!st || !stp) {
		free(st);
		free(stp);
		error_line("out of memory");
		return -1;
	}
	for (int phase = 1; phase <= 2 && !err; phase++) {
		Perfetto__Protos__FtraceStats fs = PERFETTO__PROTOS__FTRACE_STATS__INIT;
		Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

		for (unsigned int i = 0; i < n; i++) {
			Perfetto__Protos__FtraceCpuStats *c = &st[fs.n_cpu_stats];

			if (x->t->cpus[i].cpu >= PERFETTO_MAX_CPUS)
				continue;
			perfetto__protos__ftrace_cpu_stats__init(c);
			SET(*c, cpu, (uint64_t)x->t->cpus[i].cpu);
			SET(*c, overrun, phase == 1 ? p->cpus[i].lost_first :
			    p->cpus[i].lost_total);
			stp[fs.n_cpu_stats++] = c;
		}
		SET(fs, phase, phase == 1 ? PERFETTO__PROTOS__FTRACE_STATS__PHASE__START_OF_TRACE :
		    PERFETTO__PROTOS__FTRACE_STATS__PHASE__END_OF_TRACE);
		fs.cpu_stats = stp;
		pkt.has_timestamp = true;
		pkt.timestamp = phase == 1 ? p->first_ts : p->last_ts;
		pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_FTRACE_STATS;
		pkt.ftrace_stats = &fs;
		pkt.optional_trusted_packet_sequence_id_case =
			PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
		pkt.trusted_packet_sequence_id = SEQUENCE_ID;
		err = put_packet(x, &pkt, 0);
	}
	free(st);
	free(stp);
	return err;
}

/* ---- the format ------------------------------------------------------------------------ */

static int begin(struct export_ctx *x)
{
	const struct rt_metadata *md = x->md;
	size_t nf = md->max_fields ? md->max_fields : 1;
	struct perfetto *p;

	if (!x->out && isatty(fileno(x->f))) {
		error_line("-f perfetto writes a binary file: -o FILE names it");
		return -1;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		error_line("out of memory");
		return -1;
	}
	x->priv = p;
	rt_tidmap_init(&p->parents, sizeof(struct parent));
	pbuf_init(&p->text);
	p->kinds = calloc(md->nr_events ? md->nr_events : 1, sizeof(*p->kinds));
	p->cpus = calloc(x->t->nr_cpus ? x->t->nr_cpus : 1, sizeof(*p->cpus));
	p->fields = calloc(nf, sizeof(*p->fields));
	p->fieldp = calloc(nf, sizeof(*p->fieldp));
	/* A generic event's name, and two strings per field at most. */
	p->fixups = calloc(2 * nf + 1, sizeof(*p->fixups));
	if (!p->kinds || !p->cpus || !p->fields || !p->fieldp || !p->fixups) {
		error_line("out of memory");
		return -1;
	}
	for (unsigned int i = 0; i < x->t->nr_cpus; i++)
		pbuf_init(&p->cpus[i].events);
	for (unsigned int i = 0; i < md->nr_events; i++)
		for (int j = 0; j < ARRAY_SIZE(kind_names); j++)
			if (!strcmp(md->events[i].name, kind_names[j].name))
				p->kinds[i] = kind_names[j].kind;
	p->boottime_offset = boottime_offset(md);
	older_module(md, p->kinds);
	p->stacks = stack_tree_new(x->t);
	p->sr = stackrec_new(md);
	p->um = umaps_new(md);
	if (p->um)
		p->names = stack_names_new(x->t->dir, x->binaries, p->um);
	if (!p->stacks || !p->sr || !p->um || !p->names) {
		error_line("out of memory");
		return -1;
	}
	return 0;
}

/*
 * An item: first the stacks of the event before it, if it completes them
 * (what is known of threads and mappings still at their time); a
 * trailer is no event of its own.
 */
static int item(struct export_ctx *x, const struct rt_item *it, int32_t tid)
{
	struct perfetto *p = x->priv;
	const struct stack_pair *sp = stackrec_feed(p->sr, it);
	int err = 0;

	if (sp && stack(x, sp))
		return -1;
	if (stackrec_is_trailer(p->sr, it))
		return 0;
	if (it->type == RT_ITEM_LOST)
		err = lost(x, it);
	else if (it->type == RT_ITEM_EVENT)
		err = event(x, it, tid);
	if (!err && umaps_feed(p->um, it)) {
		error_line("out of memory");
		err = -1;
	}
	return err;
}

static int end(struct export_ctx *x, bool ok)
{
	struct perfetto *p = x->priv;
	int err = 0;

	if (!p)
		return 0;
	if (ok) {
		const struct stack_pair *sp = stackrec_flush(p->sr);

		/* A trace with no event still says what it is. */
		err = (sp && stack(x, sp)) || start(x, 0) || tree_flush(x);
		for (unsigned int c = 0; c < x->t->nr_cpus && !err; c++)
			err = bundle_flush(x, c);
		if (!err)
			err = put_stats(x);
	}
	if (p->out_of_range)
		warn("%" PRIu64 " events left out: their time is past what Perfetto's nanoseconds hold (2^63)",
		     p->out_of_range);
	if (p->high_cpu)
		warn("%" PRIu64 " events left out: Perfetto reads CPUs below %d only",
		     p->high_cpu, PERFETTO_MAX_CPUS);
	tree_reset(&p->tree);
	for (unsigned int c = 0; p->cpus && c < x->t->nr_cpus; c++)
		free(p->cpus[c].events.data);
	rt_tidmap_free(&p->parents);
	stack_tree_free(p->stacks);
	stack_names_free(p->names);
	umaps_free(p->um);
	stack_lost_warn(p->sr);
	stackrec_free(p->sr);
	free(p->callstack_interned);
	free(p->mappings);
	free(p->text.data);
	free(p->fields);
	free(p->fieldp);
	free(p->fixups);
	free(p->cpus);
	free(p->kinds);
	free(p);
	x->priv = NULL;
	return err ? -1 : 0;
}

const struct export_format export_perfetto = {
	.name = "perfetto",
	.help =
"  perfetto      Perfetto's own protobuf trace (FILE.pftrace): open it in\n"
"                ui.perfetto.dev or trace_processor for CPU tracks, thread\n"
"                states with their wakers, system calls on each thread,\n"
"                IRQ and softirq tracks, processes and markers; the\n"
"                profile (--sample) and the stacks of --stack and\n"
"                --ustack events as callstack samples of their thread,\n"
"                user frames named as report names them (the symbol\n"
"                store, --binaries, debuginfod) with their binary's\n"
"                build-id.  Times are CLOCK_BOOTTIME, as Perfetto reads\n"
"                ftrace's.\n",
	.user_stacks = true,
	.begin = begin,
	.item = item,
	.end = end,
};
