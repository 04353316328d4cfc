/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's text symbols, kept in a trace directory so that its stacks
 * can be read on another machine (Documentation/ringtrace/design.rst).
 *
 * KSYMS_FILE, zstd-compressed text, a hidden name so that CTF readers do
 * not take it for a stream:
 *
 *	ringtrace-ksyms 1
 *	K <_text, hex>                    the kernel: vmlinux, KASLR base
 *	<delta, hex> <name>               its text symbols, ascending
 *	M <module> <base, hex> <size, hex>
 *	<delta, hex> <name>               the module's, ascending
 *	...
 *
 * A symbol's delta is its offset from the previous symbol of its section
 * (the first one's: from the section's base): a frame is function+offset
 * in vmlinux or in a module, whatever the load addresses were, and the
 * small numbers compress well (Debian's 6.12 with six modules: 109000
 * symbols, 3.4 MB of text, 580 KB at zstd level 3; 800 KB with offsets
 * from the base).  The writer (ringtraced, when
 * a trace with stacks starts) reads /proc/kallsyms and /proc/modules; the
 * reader (ringtrace report) never looks at the running kernel.
 */
#ifndef RINGTRACE_KSYMS_H
#define RINGTRACE_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KSYMS_FILE	".ringtrace-ksyms.zst"

/* Writes dirfd/KSYMS_FILE from this kernel: 0 or -errno. */
int ksyms_save(int dirfd);
/*
 * The same in two steps, for a caller that puts the bytes in two places
 * (the trace directory and the module's persistent region): this kernel's
 * KSYMS_FILE bytes, malloc()ed into *@out; then dirfd/KSYMS_FILE, synced.
 */
int ksyms_build(void **out, size_t *len);
int ksyms_write(int dirfd, const void *z, size_t len);

struct ksyms;

/*
 * Reads dir/KSYMS_FILE.  -ENOENT: the trace has none; another -errno or
 * -EINVAL (damage) with @why saying what.  A trace is untrusted input.
 */
int ksyms_load(const char *dir, struct ksyms **out, char *why, size_t size);
void ksyms_free(struct ksyms *ks);

/* A frame, resolved. */
struct ksym_frame {
	const char *name;		/* NULL: no symbol covers the address */
	const char *module;		/* NULL: vmlinux */
	uint64_t offset;		/* from the symbol */
	uint64_t start;			/* the symbol's, from vmlinux's or the module's base */
};

void ksyms_lookup(const struct ksyms *ks, uint64_t ip, struct ksym_frame *f);
/* The address of vmlinux's symbol @name (as recorded): true, or false if none. */
bool ksyms_addr(const struct ksyms *ks, const char *name, uint64_t *addr);
/* "function+0xoff [module]", "function+0xoff", or "0xADDR". */
void ksyms_format(const struct ksyms *ks, uint64_t ip, char *buf, size_t size);

#endif /* RINGTRACE_KSYMS_H */
