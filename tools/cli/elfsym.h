/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A symbol of an ELF executable or shared object to the file offset of its
 * code, for uprobes (the kernel places them by inode and file offset).
 */
#ifndef RINGTRACE_CLI_ELFSYM_H
#define RINGTRACE_CLI_ELFSYM_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The file offset of @symbol + @add in the ELF file @path: the symbol is
 * looked up in .symtab, else in .dynsym, and its address mapped through
 * the PT_LOAD program headers.  0, or -1 with one sentence in @why (no
 * such file, not ELF, no such symbol, an offset beyond the symbol, not in
 * a loaded segment).
 */
int elfsym_offset(const char *path, const char *symbol, uint64_t add,
		  uint64_t *offset, char *why, size_t size);

/*
 * The file -e @spec probes, @file, as the module takes it: its absolute
 * path (malloc()ed; the module looks nothing up), a regular file.  NULL
 * with one sentence in @why, after @spec, when it is not one.
 */
char *elfsym_probe_path(const char *spec, const char *file, char *why,
			size_t size);

/* The defined symbol @name of @elf, from .symtab, else .dynsym: 1 found, 0 not. */
int elfsym_find(Elf *elf, const char *name, GElf_Sym *sym);

/* The file offset of @vaddr through the PT_LOAD headers; -1 if none holds it. */
int elfsym_vaddr_offset(Elf *elf, uint64_t vaddr, uint64_t *offset);

#endif /* RINGTRACE_CLI_ELFSYM_H */
