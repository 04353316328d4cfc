/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace, the command-line tool: one file per command, this header for
 * what they share.  main.c dispatches argv[1] to a struct command.
 *
 * Exit statuses, the same for every command (and ringtraced's usage
 * errors): 0 done; 1 error; 2 usage error; 3 a trace was read but damage
 * was skipped (report, export, check, unpack, sql, ship and symbols, read
 * past without --strict; recover, damaged packets left out).  `record`
 * exits with its command's status instead, once the recording is done;
 * `sql` with 130 when Ctrl-C stopped a statement.
 */
#ifndef RINGTRACE_CLI_H
#define RINGTRACE_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "../../lib/ctl.h"
#include "../../lib/ksyms.h"
#include "../../lib/msg.h"
#include "../../lib/parse.h"
#include "../lib/merge.h"
#include "../lib/rtdecode.h"
#include "../lib/stackrec.h"
#include "../lib/umaps.h"

#define EXIT_USAGE	2
#define EXIT_DAMAGED	3

struct command {
	const char *name;
	const char *summary;		/* one line for `ringtrace --help` */
	const char *help;		/* `ringtrace NAME --help` */
	void (*help_fn)(FILE *f);	/* or this, for a text made of parts */
	int (*run)(int argc, char **argv);
};

extern const struct command cmd_record, cmd_snapshot, cmd_list, cmd_report,
	cmd_export, cmd_check, cmd_unpack, cmd_compress, cmd_stats, cmd_start,
	cmd_stop, cmd_symbols, cmd_sql, cmd_recover, cmd_ship;

/*
 * Room for element @n of @arr, an array of *@cap elements of @size bytes:
 * @arr itself, or @arr grown to twice *@cap (@first elements the first
 * time) and *@cap updated.  NULL out of memory, @arr left as it was.
 */
static inline void *grow_array(void *arr, size_t *cap, size_t n, size_t size,
			       size_t first)
{
	size_t want = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return arr;
	p = reallocarray(arr, want, size);
	if (p)
		*cap = want;
	return p;
}

/* The command being run, for messages and --help. */
extern const struct command *current_cmd;

/*
 * getopt_long() for a command: --help prints its help and exits 0; a bad
 * option exits 2 with a hint.  Stops at the first non-option when @stop.
 */
int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts);
__attribute__((noreturn, format(printf, 1, 2)))
void usage_error(const char *fmt, ...);

/* trace.c: reading trace directories. */
/*
 * The commands that read traces never exit on what a trace holds: errors
 * are returned to their loop, which prints them last and exits 1, after
 * freeing what it took (the fuzzer, tools/tests/fuzz_decoder.c, runs the
 * commands in one process).
 *
 * Opens a trace directory, or prints the decoder's reason and returns
 * NULL.  Not @strict: its streams read past damage
 * (rt_stream_set_tolerant()).
 */
struct rt_trace *open_trace(const char *dir, bool strict);
/* Each damaged place read past, on stderr; how many. */
unsigned int damage_report(const struct rt_trace *t);
/*
 * The end of a command that printed a trace on stdout: stdout flushed
 * (dies on a write error), the damage reported, then @error (NULL: none)
 * as the last line.  The exit status: 1 after an error, EXIT_DAMAGED
 * after damage, else 0.
 */
int print_end(const struct rt_trace *t, const char *error);
/*
 * Where CPU @cpu is in t->cpus, or -1: per-CPU state is kept by that
 * index, never sized by a CPU number.
 */
int trace_cpu_index(const struct rt_trace *t, uint32_t cpu);
/* merge_open() (../lib/merge.h) of the commands: dies out of memory. */
struct merge *merge_trace(struct rt_trace *t, bool packets);

/*
 * follow.c: a trace directory ringtraced is writing, followed as it grows
 * (report --follow, record --live): the items of every CPU merged by time
 * as they reach the disk, from what comes next, or from the first chunks
 * with FOLLOW_FROM_START.  An item waits at most @hold_ms (of the trace
 * clock) for the CPUs that have written nothing past it.  SIGINT and
 * SIGTERM (blocked from follow_open() on; SIGTERM alone with
 * FOLLOW_TERM_ONLY) end the view: follow_next() returns NULL once what
 * was read (after SIGTERM: all that is on disk) is handed out, or at the
 * first error (follow_error()).
 * An item stays valid until the next call; its event points into
 * follow_metadata(), which is replaced when the trace's metadata grows.
 * follow_late(): items that came after a later item of another CPU was
 * handed out (handed out all the same).
 */
#define FOLLOW_HOLD_MS		300
#define FOLLOW_FROM_START	1U
#define FOLLOW_TERM_ONLY	2U
struct follow;
struct follow *follow_open(const char *dir, unsigned int flags,
			   unsigned int hold_ms, bool strict);
const struct rt_item *follow_next(struct follow *f);
const struct rt_metadata *follow_metadata(const struct follow *f);
uint64_t follow_late(const struct follow *f);
/* record --live: report --follow of @dir from its start; the exit status. */
int report_live(const char *dir);
/* Each damaged place read past and each note, on stderr; how many damaged. */
unsigned int follow_damage_report(const struct follow *f);
const char *follow_error(const struct follow *f);
void follow_close(struct follow *f);

/* "cpuN: packets=... events=..." and the stream's notes. */
void print_cpu_summary(const struct rt_trace *t, const struct rt_trace_cpu *c,
		       FILE *f);

/*
 * events.c: "-e" lists of event names, globs ("sched_*"), groups (sched,
 * irq, softirq, syscalls, statedump, marker) and "all", resolved against
 * the @n names known: sets sel[i] for each match.  An element matching
 * nothing: -1, with a sentence naming the closest known names in @why.
 */
/* True if @text (a control file's lines, set_event say) has the line @line. */
bool has_line(const char *text, const char *line);
int select_events(const char *spec, const char *const *names, size_t n,
		  bool *sel, char *why, size_t size);
/*
 * stacks.c: an event's stacks (module/stack.c), the stack_ref right after
 * it on the same CPU naming stack_defs of its packet, or in older traces
 * kernel_stack and user_stack records: one pair an event
 * (tools/lib/stackrec.h).  stack_ips(): an older kernel_stack's frames,
 * leaf first, or NULL when @it is no kernel stack.  stack_symbols(): the
 * trace's kernel symbols, or NULL (said on stderr) to print addresses.
 */
const struct rt_field_value *stack_ips(const struct rt_item *it);
/* On stderr: the stacks @sr lost to refs without their def, if any. */
void stack_lost_warn(const struct stackrec *sr);
/*
 * The user_stack records (module/ustack.c), after their event and its
 * kernel_stack: the frames, leaf first, addresses not yet named, and
 * the record's flags (RINGTRACE_USTACK_*) in *@flags; NULL when @it is
 * no user stack.
 */
const struct rt_field_value *ustack_ips(const struct rt_item *it,
					uint16_t *flags);
struct ksyms *stack_symbols(const char *dir);
/*
 * What names a pair's frames: the kernel symbols of trace directory @dir
 * and its symbol store, both read on their first frame, and the mappings
 * @um (fed by the caller in time order).  A pair's user stack copy is
 * unwound (unwind.h) with the binaries of the store, then of @bindir
 * (report --binaries, or NULL), then debuginfod's, before it is named.
 */
struct stack_names;
struct stack_names *stack_names_new(const char *dir, const char *bindir,
				    const struct umaps *um);
void stack_names_free(struct stack_names *n);
/*
 * Under its event, leaf first, one frame a line: the kernel's
 * "    function+0xoff [module]", then the user's
 * "    function+0xoff (binary)" of process @pid (usymbols.h), then a line
 * "    (user stack: ...)" for each of its flags (what cut it short), or,
 * after an unwound copy's frames, "    (user stack: NOTE)" when its
 * unwind ended early.
 */
void stack_pair_print(FILE *f, struct stack_names *n, const struct stack_pair *p,
		      int32_t pid);
/*
 * report --stat's top functions: per function named (kernel
 * "function [module]", [vmlinux] for the kernel's own; user
 * "function (binary)"), the stacks it is innermost in (self) and the
 * stacks it is in at all (total); the @top first by self, then total.
 */
struct top_fns;
struct top_fns *top_fns_new(void);
void top_fns_free(struct top_fns *t);
void top_fns_add(struct top_fns *t, struct stack_names *n,
		 const struct stack_pair *p, int32_t pid);
void top_fns_print(struct top_fns *t, FILE *f, unsigned int top);
/*
 * ringtrace sql's frames: each frame of pair @p of process @pid, innermost
 * first -- its kernel frames, then its user frames (a copy unwound) --
 * passed to @fn (the strings valid during the call); how many.  @symbol is
 * the name top_fns_add() counts the frame under (NULL: none, unresolved);
 * @name the function alone; @module "vmlinux" or the module for a kernel
 * frame, the mapping's path for a user frame (NULL: none known); @rel_pc
 * the frame's offset from the base of vmlinux or its module, or in its
 * binary's file, else (no symbol, no mapping) its address.
 */
struct named_frame {
	bool user;
	uint64_t ip;
	const char *symbol;
	const char *name;
	const char *module;
	const uint8_t *build_id;
	uint8_t build_id_len;
	uint64_t rel_pc;
};
typedef void (*stack_frame_fn)(void *arg, const struct named_frame *f);
unsigned int stack_pair_frames(struct stack_names *n, const struct stack_pair *p,
			       int32_t pid, stack_frame_fn fn, void *arg);
/*
 * The function a thread switched out in is blocked in: of kernel stack
 * @k (leaf first), the first frame that is no scheduler function, as the
 * kernel's __get_wchan() (what sched_blocked_reason reports) finds it --
 * outside .sched.text and .lock.text, whose bounds the trace's symbols
 * hold; a trace without them: a function not named __schedule*,
 * schedule*, io_schedule*, preempt_schedule*, __cond_resched* or
 * _cond_resched* -- after the first scheduler frame: those before it are
 * the tracepoint's and its probe's.  Its function's name (in @buf),
 * "0xADDR" when no symbol covers it; NULL when no frame is the
 * scheduler's, or none follows.
 */
const char *stack_blocked_function(struct stack_names *n, const struct stack_ips *k,
				   char *buf, size_t size);
/* report --folded [--off-cpu]: the exit status. */
int folded_report(const char *dir, const char *bindir, bool off_cpu, bool strict);
/*
 * tail.c: report --tail N, each CPU's last @n events of @t.  report prints
 * an item (and, after tail_keep(), its event's stacks) into tail_out();
 * tail_keep() files it under its CPU (@event: false for a loss),
 * tail_append() adds what was printed since to the last event filed;
 * tail_print() prints the CPUs one after another, those @sel (by CPU
 * number, @nr_sel of them; NULL: all) says.  NULL: out of memory.
 */
struct tail;
struct tail *tail_new(unsigned int n, const struct rt_trace *t);
FILE *tail_out(struct tail *tl);
void tail_keep(struct tail *tl, uint32_t cpu, bool event);
void tail_append(struct tail *tl);
void tail_print(const struct tail *tl, FILE *f, bool wall, const bool *sel,
		unsigned int nr_sel);
void tail_free(struct tail *tl);
/*
 * critical.c: report --critical-path WHO (a tid or a thread's name) of
 * the recording @dirs, from --begin @begin to --end @end (NULL: the
 * thread's life), as lines or (@folded) flame graph input; exit status.
 */
int critical_report(char *const *dirs, unsigned int n, const char *who,
		    const char *begin, const char *end, bool folded, bool strict);
/*
 * stacks.c, for the exporters: a trace's stacks as one call tree.  A node
 * is a frame (a function, or an address no symbol covers) under its
 * caller, the same frame under the same caller being one node: a stack is
 * its leaf's node, and what a format writes of the stacks grows with the
 * code paths seen, not with the trace.  Frames and nodes are numbered
 * from 1 in the order they first come, so that a format writes those past
 * the last it wrote.  stack_tree_event() is told every event with its
 * thread; stack_tree_owner() is the event a stack belongs to (the last of
 * its CPU, same time), or NULL, with its thread (a sched_switch's prev).  stack_tree_add(): the stack's leaf node
 * (0: no frames), -1 out of memory; the symbols are read on the first.
 * stack_tree_add_pair(): an event's stack pair (tools/lib/stackrec.h) as
 * one stack, its user frames (the copy unwound first) outermost, named
 * through @n as report names them for process @pid, then its kernel
 * frames; the leaf node or 0 or -1 the same way.  A user frame is a
 * function of a mapping (stack_tree_map()), numbered from 1 as they come:
 * one per binary (build-id and path) and file offset, as the first
 * process seen mapped it; a frame no mapping holds has none (0).
 */
struct stack_frame {
	const char *name;		/* the function, or "0xADDR" */
	const char *module;		/* NULL: vmlinux (kernel frames) */
	uint64_t start;			/* the function's offset in vmlinux or module;
					   a user frame's file offset */
	bool owned;			/* name is the tree's own string */
	bool user;
	uint32_t map;			/* a user frame's mapping, 0 none */
};
struct stack_map {
	const char *path;		/* "" when the trace has none */
	uint8_t build_id[UMAP_BUILD_ID_MAX];
	uint8_t build_id_len;		/* 0: none */
	uint64_t start, end;		/* [start, end) in the first process */
	uint64_t pgoff;			/* file offset of start */
	uint64_t load_bias;		/* p_vaddr - p_offset of its PT_LOAD, 0 unknown */
};
struct stack_node {
	uint32_t parent;		/* 0: an outermost frame */
	uint32_t frame;
	uint32_t depth;			/* 0 for an outermost frame */
};
struct stack_owner {
	const struct rt_event_desc *event;	/* NULL: none */
	uint64_t timestamp;
	int32_t tid;			/* the event's thread, -1 unknown */
};
struct stack_tree;
struct stack_tree *stack_tree_new(const struct rt_trace *t);
void stack_tree_free(struct stack_tree *st);
void stack_tree_event(struct stack_tree *st, const struct rt_item *it, int32_t tid);
const struct stack_owner *stack_tree_owner(const struct stack_tree *st,
					   const struct rt_item *stack);
int64_t stack_tree_add(struct stack_tree *st, const struct rt_field_value *ips);
struct stack_names;
int64_t stack_tree_add_pair(struct stack_tree *st, struct stack_names *n,
			    const struct stack_pair *p, int32_t pid);
uint32_t stack_tree_maps(const struct stack_tree *st);
const struct stack_map *stack_tree_map(const struct stack_tree *st, uint32_t id);
uint32_t stack_tree_nodes(const struct stack_tree *st);
uint32_t stack_tree_frames(const struct stack_tree *st);
const struct stack_node *stack_tree_node(const struct stack_tree *st, uint32_t id);
const struct stack_frame *stack_tree_frame(const struct stack_tree *st, uint32_t id);
/* The groups, for --help texts. */
#define EVENT_GROUPS "sched, task, irq, softirq, syscalls, statedump, marker, all"

/*
 * daemon.c: start ringtraced with @args (NULL-terminated, without argv[0])
 * in its own process group; its pid.  daemon_keep_fd(): @fd (close-on-exec
 * here) stays open in every ringtraced started after (record's restore
 * file and guard pipe).
 */
pid_t start_daemon(char *const *args);
void daemon_keep_fd(int fd);
/*
 * Asks ringtraced @pid to stop (SIGINT): tracing off, drained, what is
 * stored compressed.  daemon_hurry(): a second stop, which leaves the rest
 * stored: SIGTERM, a signal other than the first, which it would merge
 * with while still pending (ordinary signals do not queue).
 */
void daemon_stop(pid_t pid);
void daemon_hurry(pid_t pid);

/*
 * proctitle.c: a child that does not exec names itself @name in
 * /proc/PID/cmdline and comm, so that pgrep -f, pkill -f and pidof find
 * its parent alone.  Its argv's strings are gone after.
 */
void proc_title(const char *name);

/*
 * snapshot.c: what the buffers hold now into the new trace directory
 * @outdir (ringtraced --once), tracing going on; 0, or -1 when ringtraced
 * failed (it said why).  @symbols: ringtraced's --symbols-max SIZE or
 * --no-symbols, NULL-terminated (NULL: none).
 */
int snapshot_write(const char *outdir, const char *debugfs,
		   char *const *symbols);

/*
 * The running tracer's control files: -d/--debugfs DIR if given, else
 * debugfs or /dev/ringtrace (lib/ctl.c); dies with the reason.
 */
void find_control(struct ctl *c, const char *debugfs);

#endif /* RINGTRACE_CLI_H */
