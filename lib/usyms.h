/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The symbol store: the user-space binaries a trace's stacks ran in, kept
 * in the trace directory so that its user frames are named on any machine
 * (Documentation/ringtrace/design.rst, "Symbols that travel").
 *
 * USYMS_DIR, a hidden directory (CTF readers skip it: babeltrace2 2.0.4
 * reads a trace holding one unchanged), one file per build-id as perf
 * lays out ~/.debug/.build-id: the id in lower-case hex, its first byte
 * the subdirectory, the rest the file name:
 *
 *	.ringtrace-buildid/8f/3a12cd...
 *
 * A file is one header line, then one zstd frame (content size and
 * checksum in its header) of the whole binary as it was mapped:
 *
 *	ringtrace-buildid 1 <size> <mtime> <path>\n
 *
 * size: the binary's bytes, decimal; mtime: its modification time,
 * seconds since the epoch; path: where it was mapped, as the user_mmap
 * event said ('\\' written "\\\\", a newline "\\n").  Whole binaries,
 * not symbol tables: the same file answers names today and unwinding or
 * line numbers later, and its build-id is checked on every open.
 *
 * USYMS_DIR/missing lists the binaries a trace's stacks ran in that are
 * not stored, one a line, so that report can say why a frame has no name:
 *
 *	<build-id in hex>\t<reason>\t<path>\n
 *
 * the reason free text without tabs or newlines, the path escaped as in
 * a store file's header.
 */
#ifndef RINGTRACE_USYMS_H
#define RINGTRACE_USYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USYMS_DIR		".ringtrace-buildid"
#define USYMS_BUILD_ID_MAX	20	/* NT_GNU_BUILD_ID: SHA-1 at most */
/* The largest binary kept, and the largest a reader decompresses. */
#define USYMS_MAX_SIZE		(1ULL << 30)

/*
 * The build-id of the ELF image @buf (@len bytes): its first
 * NT_GNU_BUILD_ID note of a PT_NOTE segment.  Its length (1..20) or
 * -EINVAL with @why saying why (not ELF, no note, damage).
 */
int usyms_build_id(const void *buf, size_t len, uint8_t id[USYMS_BUILD_ID_MAX],
		   char *why, size_t size);

/* "8f3a12cd...": @len bytes in hex into @hex (2 * len + 1). */
void usyms_hex(const uint8_t *id, size_t len, char *hex);

/*
 * Puts the binary open at @fd (read from its start, at most
 * USYMS_MAX_SIZE bytes) into the store of the trace directory @dirfd
 * under @id, if its build-id is @id: the file is written under a
 * temporary name and renamed.  1 stored (*@written: the file's bytes),
 * 0 already there, -ESTALE its build-id is another (or it has none),
 * -EFBIG over USYMS_MAX_SIZE, another -errno; @why says what.
 */
int usyms_put(int dirfd, const uint8_t *id, size_t id_len, int fd,
	      const char *path, uint64_t *written, char *why, size_t size);

/* A stored binary, decompressed. */
struct usyms_file {
	void *image;
	size_t size;
	char *path;			/* where it was mapped */
	uint64_t mtime;
};

/*
 * Opens @id's file in the store of the trace directory @dir: its image,
 * checked to be an ELF file of that build-id.  0; -ENOENT none stored;
 * -EINVAL damage (a bad header, a cut or corrupt frame, not ELF, another
 * build-id) or another -errno, with @why saying what.  A trace is
 * untrusted input.
 */
int usyms_open(const char *dir, const uint8_t *id, size_t id_len,
	       struct usyms_file *out, char *why, size_t size);
void usyms_close(struct usyms_file *f);

/*
 * The missing list of a store, written whole (symfill.c): begun in
 * memory, each binary added, then put in place by usyms_missing_end()
 * (under a temporary name, renamed), or removed when nothing is missing.
 * _begin() NULL out of memory; _end() 0 or -errno.
 */
#define USYMS_MISSING		"missing"
struct usyms_missing;
struct usyms_missing *usyms_missing_begin(void);
void usyms_missing_add(struct usyms_missing *ms, const uint8_t *id, size_t id_len,
		       const char *path, const char *reason);
int usyms_missing_end(struct usyms_missing *ms, int dirfd);
/*
 * Why @id is not in the store of the trace directory @dir, as its missing
 * list says ("reason"), into @out: true, or false if it says nothing.
 */
bool usyms_missing_why(const char *dir, const uint8_t *id, size_t id_len,
		       char *out, size_t size);

#endif /* RINGTRACE_USYMS_H */
