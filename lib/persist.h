/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A persistent region's image (<linux/ringtrace_persist.h>), read back:
 * what persist/image gives after a reboot or a module reload, or a copy of
 * it in a file.  An image is untrusted input -- RAM that a firmware may
 * have scribbled on, or noise after a cold boot -- so nothing of it is
 * used before it is checked: the header (magic, layout, checksum, every
 * size and offset inside the image and as the module lays them out,
 * reserved fields zero), the slice table, each metadata and ksyms copy's
 * framing and xxh64, and each slot's counters against the geometry.
 *
 * What is here knows the region's layout and the slots' counters, and no
 * event: the records of a packet are the decoder's to read
 * (rt_packet_walk(), tools/lib/rtdecode.h), in ringtraced's recovery
 * (daemon/prevboot.c).  Nothing here prints or exits.
 */
#ifndef RINGTRACE_LIB_PERSIST_H
#define RINGTRACE_LIB_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/ringtrace_persist.h>

/* What an image is. */
enum persist_kind {
	PERSIST_NONE,		/* no magic, or armed and never used: nothing */
	PERSIST_IMAGE,		/* a header that checks: a previous trace */
	PERSIST_DAMAGED,	/* magic, but a check failed (why says which) */
	PERSIST_OTHER_LAYOUT,	/* another layout version */
};

struct persist_image {
	const uint8_t *buf;	/* the image, the caller's */
	uint64_t size;
	struct ringtrace_persist_header h;	/* a copy, checked */
	uint32_t lifecycle;	/* RINGTRACE_PERSIST_* */
};

/*
 * Checks the image @buf, @size bytes, into @img: its kind.  For
 * PERSIST_DAMAGED and PERSIST_OTHER_LAYOUT, @why (of @len bytes) names
 * the field, its byte offset in the image, and what is wrong.
 */
enum persist_kind persist_check(const uint8_t *buf, uint64_t size,
				struct persist_image *img, char *why,
				size_t len);

/* One slice of the table: 0, or -1 with @why when its entry is wrong. */
struct persist_slice {
	unsigned int index;
	bool used;		/* a CPU's ring lives here */
	uint32_t cpu;
	const uint8_t *counters, *ring;	/* into the image */
};
int persist_slice(const struct persist_image *img, unsigned int i,
		  struct persist_slice *s, char *why, size_t len);

/*
 * The newest valid copy of the metadata (@ksyms false) or of the ksyms
 * blob: 1 with *@data and *@n set, 0 when neither copy was ever written
 * (both gen 0), -1 when no copy is valid (@why says what each is).
 */
int persist_blob(const struct persist_image *img, bool ksyms,
		 const uint8_t **data, uint64_t *n, char *why, size_t len);

/*
 * A slot's packet, by its counters alone (include/linux/ringtrace.h:
 * generation g of a slot is complete when its commit count reaches
 * (g + 1) * subbuf_size).
 */
struct persist_packet {
	unsigned int slot;
	uint64_t seq;		/* the writer's number: gen * num_subbufs + slot */
	bool complete;
	uint64_t committed;	/* bytes of this generation committed */
	uint64_t records;	/* records committed (counters), this generation */
	uint64_t discarded;	/* slot_info.discarded: the count at its close */
	const uint8_t *raw;	/* the sub-buffer, subbuf_size bytes */
	bool ok;		/* its header agrees with its counters */
	bool stale;		/* outside the ring's span (damaged counters) */
};

/*
 * The packets of slice @s in the writer's order (by seq): each slot's
 * newest generation, complete or open, the slots never written left out.
 * Those outside the ring's span of num_subbufs packets -- the span where
 * most headers agree with their counters -- are marked stale (a damaged
 * counter) and counted in *@stale.  *@out is malloc()ed (free() it); 0,
 * or -1 out of memory.
 */
int persist_packets(const struct persist_image *img,
		    const struct persist_slice *s,
		    struct persist_packet **out, size_t *n, size_t *stale);

/*
 * The crash path's entry @i (module/crash.c): 1 with *@e filled when it
 * was written whole (claimed, valid, its xxh64 right), 0 when no hook
 * claimed it, -1 when a hook was cut short writing it (or it is damaged).
 */
int persist_crash(const struct persist_image *img, unsigned int i,
		  struct ringtrace_persist_crash *e);
/* The hooks that ran (entries past RINGTRACE_PERSIST_CRASH_MAX: counted only). */
uint32_t persist_crash_claimed(const struct persist_image *img);
/* Slice @slice's writer snapshot into *@s: whether a hook took one. */
bool persist_snap(const struct persist_image *img, unsigned int slice,
		  struct ringtrace_persist_snap *s);

/* The header's identity as text: build-id in hex ("" when unset). */
void persist_build_id_hex(const struct persist_image *img, char *buf,
			  size_t len);

#endif /* RINGTRACE_LIB_PERSIST_H */
