/* SPDX-License-Identifier: GPL-2.0 */
/*
 * export -f lttng: the CTF writer (export_lttng_ctf.c) behind the event
 * mapping (export_lttng.c).
 *
 * The writer lays a trace out as LTTng 2.13's kernel tracer does on
 * x86_64 (Documentation/ringtrace/viewers.rst): DIR/kernel/metadata, plain
 * TSDL text, and DIR/kernel/channel0_<cpu> per CPU, made of packets it
 * builds itself -- LTTng's packet header and context (84 bytes), events
 * with LTTng's large event header, the stream's event context (the
 * callstack_kernel and callstack_user contexts of `lttng add-context -k
 * -t callstack-kernel -t callstack-user`), byte-packed payloads, each packet
 * padded to 4 KiB as LTTng's sub-buffers are.  Packets end at 1 MiB of
 * content (LTTng's default kernel sub-buffer) and where the trace says
 * events were lost; every CPU's stream spans the whole trace, from the
 * first event of any CPU to the last packet end of any (lttng-analyses
 * analyses only what all streams cover).
 *
 * Memory: per CPU a 64 KiB write buffer (an open packet's header is
 * written in place once it is known, pwrite() when it already left the
 * buffer); the event classes, which the metadata lists at the end.
 * Everything is written into a temporary directory beside DIR, renamed to
 * DIR by lw_finish(): a failed export leaves nothing.
 */
#ifndef RINGTRACE_EXPORT_LTTNG_H
#define RINGTRACE_EXPORT_LTTNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The field types of LTTng's kernel events, as lttng-modules prints them. */
enum ltype {
	L_U8, L_U16, L_S32, L_U32, L_S64, L_U64,
	L_X64,		/* unsigned 64, base 16 */
	L_COMM,		/* char[16], NUL-padded text */
	L_STR,		/* NUL-terminated string */
	L_MSG,		/* unsigned long _<name>_length, then that much text */
	L_VTIDS,	/* uint8 _<name>_length, then that many int32 */
	L_ARGS,		/* unsigned long[6] */
};

/* A payload being built: bytes in LTTng's order, little endian, packed. */
struct lbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;			/* a put failed: the payload is incomplete */
};

void lb_reset(struct lbuf *b);
void lb_free(struct lbuf *b);
void lb_put(struct lbuf *b, const void *data, size_t len);
/* An integer field of type @t (L_U8 ... L_X64): its low bytes. */
void lb_int(struct lbuf *b, enum ltype t, uint64_t v);
/* @len bytes of text as an L_COMM (cut or NUL-padded to 16). */
void lb_comm(struct lbuf *b, const void *text, size_t len);
/* @len bytes of text up to the first NUL, as an L_STR. */
void lb_str(struct lbuf *b, const void *text, size_t len);

/*
 * TSDL of an integer type as lttng-modules prints it: align 8 (bits),
 * x86_64's byte packing.
 */
void lb_tsdl_int(struct lbuf *b, unsigned int bits, bool is_signed, bool text,
		 unsigned int base);
/* TSDL of the field @name of type @t, one line, appended to @b. */
void lb_tsdl_field(struct lbuf *b, const char *name, enum ltype t);

/* What the metadata says of the trace. */
struct lw_info {
	uint8_t clock_uuid[16];
	uint64_t clock_freq;
	int64_t clock_offset_s;		/* as the source trace's clock block */
	int64_t clock_offset;		/* cycles */
	/* env: NULL leaves a key out. */
	const char *hostname, *sysname, *kernel_release, *kernel_version;
	const char *trace_name;
	const char *comment;		/* a TSDL comment line after the first */
};

/*
 * An event's stack, leaf first, as the stream's event context carries it
 * (lttng-context-callstack.c): a uint32 count, then that many 64-bit
 * addresses; nr 0 for an event without one.  @incomplete appends
 * LTTng's own delimiter, an address of all ones, after them: the stack
 * was cut at its depth.
 */
struct lw_stack {
	const uint64_t *ips;
	uint32_t nr;
	bool incomplete;
};

/* The stream event context: kernel, then user (LTTng's order of the two). */
enum { LW_STACK_KERNEL, LW_STACK_USER, LW_NR_STACKS };

struct lwriter;

/*
 * Starts writing the trace @uuid that becomes @dir (which must not exist,
 * or be an empty directory), with one stream per CPU of @cpus (@nr of
 * them).  NULL after printing the reason.
 */
struct lwriter *lw_create(const char *dir, const uint8_t *uuid,
			  const uint32_t *cpus, unsigned int nr);
/*
 * An event class: its name and the TSDL of its fields (lb_tsdl_field()
 * lines).  Its id, or -1 (out of memory, said).
 */
int lw_class(struct lwriter *w, const char *name, const char *fields);
/*
 * One event of class @id at @ts (cycles of the source clock) on the
 * stream of @cpus[@i], with the stacks @stacks[LW_NR_STACKS] (NULL: none);
 * -1 on a write error, said.  Times of a stream never go back: an
 * earlier @ts is written as the stream's last.
 */
int lw_event(struct lwriter *w, unsigned int i, uint64_t ts, int id,
	     const struct lw_stack *stacks, const struct lbuf *payload);
/* The trace reports @n events lost on stream @i before @ts. */
int lw_lost(struct lwriter *w, unsigned int i, uint64_t ts, uint64_t n);
/*
 * A time of the trace, written or not: streams start at the first one
 * (every item is told, in time order).
 */
void lw_start_at(struct lwriter *w, uint64_t ts);
/* The latest time of the trace (packet ends included): where streams end. */
void lw_end_at(struct lwriter *w, uint64_t ts);
/*
 * Ends every stream, writes the metadata and renames the directory into
 * place; 0, or -1 after saying why (nothing is left then).
 */
int lw_finish(struct lwriter *w, const struct lw_info *info);
/* Frees @w; without a successful lw_finish(), removes what it wrote. */
void lw_free(struct lwriter *w);

#endif /* RINGTRACE_EXPORT_LTTNG_H */
