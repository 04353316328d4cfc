/* SPDX-License-Identifier: GPL-2.0 */
/*
 * usymbols.c: user frames named from the trace's symbol store
 * (lib/usyms.h), never from the running machine's files; then, for what
 * the store cannot name, from the debug file debuginfod has for the
 * build-id (debuginfod.h: off without $DEBUGINFOD_URLS).  A binary is
 * opened on its first frame, checked (store header, zstd frame, ELF,
 * build-id) and kept open; one that is missing or bad says so once, on
 * stderr, and its frames stay unresolved.
 */
#ifndef RINGTRACE_USYMBOLS_H
#define RINGTRACE_USYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/umaps.h"

struct usym_store;

/* The store of trace directory @dir (read on the first frame asked). */
struct usym_store *usym_store_new(const char *dir);
void usym_store_free(struct usym_store *st);

/*
 * The binary @build_id as the store holds it, for the unwinder's libdwfl
 * (unwind.h): the path of a memfd holding the very bytes the namer reads,
 * decompressed and checked once for the whole report, valid until
 * usym_store_free(); NULL when the store lacks it or it is damaged (said
 * once, on stderr).
 */
const char *usym_store_path(struct usym_store *st, const uint8_t *build_id,
			    size_t len);

struct usym_frame {
	const char *name;		/* the function; NULL: not resolved */
	uint64_t offset;		/* from the function's start */
};

/*
 * The function holding @file_off of the binary @build_id: its .symtab,
 * else its .dynsym, the offset turned into an address through its
 * PT_LOAD segments; failing that (a stripped binary, one not stored), its
 * debug file's .symtab from debuginfod.  0, or -1 (f->name NULL) when
 * neither names it.
 */
int usym_resolve(struct usym_store *st, const uint8_t *build_id, size_t len,
		 uint64_t file_off, struct usym_frame *f);

/*
 * The load bias of binary @build_id where @file_off is: p_vaddr -
 * p_offset of its PT_LOAD holding it (the store's binary, else
 * debuginfod's executable).  0, or -1 (*@bias untouched) when neither has it.
 */
int usym_load_bias(struct usym_store *st, const uint8_t *build_id, size_t len,
		   uint64_t file_off, uint64_t *bias);

/* How usym_format() writes a frame. */
enum usym_style {
	USYM_LINE,		/* report: "function+0xoff (binary)" */
	USYM_FOLDED,		/* report --folded: "function" */
	USYM_NAME,		/* report --stat: "function (binary)" */
};

/*
 * The user frame @ip of process @pid, as the mappings @um say now:
 * resolved as @style says; else "binary+0xFILEOFF [bid:xxxxxxxx]" (the
 * build-id's first 4 bytes); else, in no mapping known, "0xADDR [user]"
 * (USYM_LINE) or "0xADDR".  True when resolved.
 */
bool usym_format(struct usym_store *st, const struct umaps *um, int32_t pid,
		 uint64_t ip, enum usym_style style, char *buf, size_t size);

#endif /* RINGTRACE_USYMBOLS_H */
