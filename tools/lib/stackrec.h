/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stacks of an event: the trailers the module writes right after it
 * in the same reservation (module/stack.c): the stack_defs its packet
 * lacked, then a stack_ref naming the defs (by offset in the packet) of
 * its kernel and user stacks, then, recorded with --ustack-mode copy, a
 * user_stack_copy; each with the event's timestamp on the event's CPU.
 * Traces of older modules carry the frames inline: kernel_stack then
 * user_stack (or user_stack_copy), either or both.
 * Merged by time (ties by CPU), an event's trailers are the items right
 * after it: its stacks are complete at the first item that is not one of
 * them.  Fed every item in that order, stackrec_feed() hands out each
 * event's stack pair once complete, before the item that completes it is
 * used by its reader (so what the reader keeps of the event, and its
 * tables of threads and mappings, are still at the event's time).
 */
#ifndef RINGTRACE_STACKREC_H
#define RINGTRACE_STACKREC_H

#include <stdbool.h>
#include <stdint.h>

#include "rtdecode.h"

/* user_stack's flags. */
#define USTACK_TRUNCATED	0x1U	/* the depth was reached */
#define USTACK_FAULT		0x2U	/* a read failed before the chain ended */
#define USTACK_COMPAT		0x4U	/* a 32-bit task: ip alone */
#define USTACK_ENTRY		0x8U	/* the first return address from [sp] */

struct stack_ips {
	bool present;
	uint32_t nr;
	const uint64_t *ips;		/* leaf first, as recorded */
};

/*
 * A user_stack_copy: the registers and the stack's top, to be unwound
 * (tools/cli/unwind.h) into the pair's user stack by its reader.
 */
struct stack_copy {
	bool present;
	uint64_t ip, sp, bp;
	uint16_t size;			/* bytes at @bytes, from sp up */
	uint16_t flags;			/* the record's (USTACK_FAULT, _COMPAT) */
	const uint8_t *bytes;		/* the pair's own copy */
};

/*
 * An event's stacks; an event without trailers has none handed out,
 * except a cpu_sample (counted under its thread with no stack).
 * With a copy, @user is not present until a reader unwinds it, and
 * @user_note then says why the unwind ended early (NULL: it did not).
 */
struct stack_pair {
	const struct rt_event_desc *event;
	uint32_t cpu;
	uint64_t timestamp;
	int32_t tid, pid;		/* the event's own (cpu_sample's), else -1 */
	struct stack_ips kernel, user;
	uint16_t user_flags;
	struct stack_copy copy;
	const char *user_note;
};

struct stackrec;

/*
 * Items of @md's events (each event's kind is found by its name once).
 * stackrec_set_metadata(): of @md from now on (a follower reloaded it);
 * NULL / -1 out of memory (nothing changed).
 */
struct stackrec *stackrec_new(const struct rt_metadata *md);
int stackrec_set_metadata(struct stackrec *sr, const struct rt_metadata *md);
void stackrec_free(struct stackrec *sr);
/*
 * Whether an event named @name can make a pair: a cpu_sample, or a
 * trailer with frames (kernel_stack, user_stack, user_stack_copy,
 * stack_ref).  Items of none of them give no pair.
 */
bool stackrec_pair_event(const char *name);
/*
 * Whether @it is a trailer (stack_def, stack_ref, kernel_stack, user_stack,
 * user_stack_copy): no event of its own.  The item just fed is answered
 * from what stackrec_feed() found.
 */
bool stackrec_is_trailer(const struct stackrec *sr, const struct rt_item *it);
/*
 * Stacks lost so far: a stack_ref's that named no stack_def of its kind
 * before it in its packet (damage; the pair goes without that stack).
 */
uint64_t stackrec_lost(const struct stackrec *sr);
/*
 * The next item in time order: the pair it completes, or NULL.  A pair
 * stays valid until the next call.  A trailer that follows no event of
 * its CPU and time (its event lost with a packet), or a second one of a
 * kind, is left out.  Out of memory: the pair loses that stack.
 */
const struct stack_pair *stackrec_feed(struct stackrec *sr, const struct rt_item *it);
/*
 * For item-level readers (the exporters): when @it, the item just fed, is
 * a stack_ref that gave its event a kernel stack, that stack; else NULL.
 * Whether @it is a stack_def (a definition, to be left out).
 */
const struct stack_ips *stackrec_ref_kernel(const struct stackrec *sr,
					    const struct rt_item *it);
bool stackrec_is_def(const struct stackrec *sr, const struct rt_item *it);
/* At the end (or before items of another trace): the pair still open, or NULL. */
const struct stack_pair *stackrec_flush(struct stackrec *sr);

/*
 * The process a pair's user stack is of, -1 unknown: a cpu_sample's own,
 * else that of @tid, the thread its event belongs to (rt_threads_owner()),
 * as @th says when the pair is handed out, else @tid itself (a main
 * thread's is its pid).
 */
int32_t stack_pair_pid(const struct stack_pair *p, const struct rt_threads *th,
		       int32_t tid);

#endif /* RINGTRACE_STACKREC_H */
