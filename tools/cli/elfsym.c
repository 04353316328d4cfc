// SPDX-License-Identifier: GPL-2.0
/*
 * ELF symbols to file offsets, through libelf: find the symbol (the full
 * .symtab if the file has one, else the .dynsym a stripped file keeps),
 * then the PT_LOAD segment whose file bytes hold its address; the offset
 * is where those bytes sit in the file, the uprobe's position.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

/* The defined symbol @name in the first section of type @type; 1 found. */
static int find_symbol_in(Elf *elf, Elf64_Word type, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return 0;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*out = sym;
				return 1;
			}
		}
		return 0;
	}
	return 0;
}

int elfsym_find(Elf *elf, const char *name, GElf_Sym *sym)
{
	return find_symbol_in(elf, SHT_SYMTAB, name, sym) ||
	       find_symbol_in(elf, SHT_DYNSYM, name, sym);
}

int elfsym_vaddr_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

int elfsym_offset(const char *path, const char *symbol, uint64_t add,
		  uint64_t *offset, char *why, size_t size)
{
	GElf_Sym sym;
	int fd, ret = -1;
	Elf *elf;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, size, "%s: %s", path, strerror(errno));
		return -1;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(why, size, "%s: not an ELF file", path);
		goto out;
	}
	if (!elfsym_find(elf, symbol, &sym)) {
		snprintf(why, size, "%s: no symbol %s (in .symtab or .dynsym)",
			 path, symbol);
		goto out;
	}
	if (add && sym.st_size && add >= sym.st_size) {
		snprintf(why, size, "%s: +0x%llx is beyond the end of %s (%llu bytes)",
			 path, (unsigned long long)add, symbol,
			 (unsigned long long)sym.st_size);
		goto out;
	}
	if (elfsym_vaddr_offset(elf, sym.st_value + add, offset)) {
		snprintf(why, size, "%s: %s is not in a loaded segment "
			 "(not an executable or shared object?)", path, symbol);
		goto out;
	}
	ret = 0;
out:
	elf_end(elf);
	close(fd);
	return ret;
}

char *elfsym_probe_path(const char *spec, const char *file, char *why,
			size_t size)
{
	char *abs = realpath(file, NULL);
	struct stat st;

	if (!abs) {
		snprintf(why, size, "-e %s: %s: %s", spec, file, strerror(errno));
		return NULL;
	}
	if (stat(abs, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, size, "-e %s: %s: not a regular file", spec, file);
		free(abs);
		return NULL;
	}
	return abs;
}
