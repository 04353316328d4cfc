/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace: the GNU build-id of an ELF file, from bytes already read.
 *
 * The kernel's build_id_parse() is not exported, so mmap.c reads a mapped
 * file's first bytes itself and hands them here: the ELF header and the
 * program headers must lie in those bytes, each PT_NOTE segment is then
 * read through @read (at most RTR_ELF_NOTES_MAX bytes of notes in all) and
 * searched for an NT_GNU_BUILD_ID note named "GNU".  A mapped file is
 * untrusted input: every offset and size is checked against the bytes at
 * hand and the file's size, in 64 bits, before it is used.
 *
 * Pure functions over buffers (the one effect is @read): the host compiles
 * this same file into tools/tests/fuzz_elfnote.c, a libFuzzer target, and
 * its unit cases.  Little-endian ELF only (32 and 64 bit), the byte order
 * of every architecture ringtrace runs on; fields are read byte by byte,
 * so the buffers need no alignment.
 */
#ifndef _RINGTRACE_ELFNOTE_H
#define _RINGTRACE_ELFNOTE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#endif

/* What the caller reads first: the ELF header and program headers. */
#define RTR_ELF_HEAD_MAX	4096
/* Note bytes read in all, over every PT_NOTE */
#define RTR_ELF_NOTES_MAX	4096
/* The longest build-id taken (the kernel's BUILD_ID_SIZE_MAX: SHA-1) */
#define RTR_BUILD_ID_MAX	20

#define RTR_ELF_PT_NOTE		4
#define RTR_ELF_NT_GNU_BUILD_ID	3

static inline u64 rtr_elf_le(const u8 *p, unsigned int n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * The build-id in the notes @buf[0..@len), laid out with @align (4 or 8,
 * the segment's p_align).  Returns its length (1..RTR_BUILD_ID_MAX), with
 * the bytes in @id, or 0 if the notes hold none (or a malformed one).
 */
static inline int rtr_elf_notes_build_id(const u8 *buf, u64 len, u64 align,
					 u8 *id)
{
	u64 pos = 0, namesz, descsz, type, name_end, desc_end;

	align = align == 8 ? 8 : 4;
	while (len - pos >= 12) {
		namesz = rtr_elf_le(buf + pos, 4);
		descsz = rtr_elf_le(buf + pos + 4, 4);
		type = rtr_elf_le(buf + pos + 8, 4);
		/* Each at most 2^32: the sums below cannot wrap. */
		name_end = pos + 12 + namesz;
		desc_end = ((name_end + align - 1) & ~(align - 1)) + descsz;
		if (desc_end > len)
			return 0;
		if (type == RTR_ELF_NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(buf + pos + 12, "GNU", 4)) {
			if (!descsz || descsz > RTR_BUILD_ID_MAX)
				return 0;
			memcpy(id, buf + desc_end - descsz, descsz);
			return (int)descsz;
		}
		pos = (desc_end + align - 1) & ~(align - 1);
		if (pos >= len)
			return 0;
	}
	return 0;
}

/*
 * Reads @len bytes at file offset @off into @buf; 0 when all were read.
 * (the page cache in the module, a copy out of the input on the host.)
 */
typedef int (*rtr_elf_read_fn)(void *ctx, u8 *buf, u64 off, u64 len);

/*
 * The build-id of the ELF file of @file_size bytes that begins with @head
 * (@head_len bytes of it, at most RTR_ELF_HEAD_MAX); @notes is
 * RTR_ELF_NOTES_MAX bytes of scratch for segments outside @head.  Returns
 * the id's length with the bytes in @id, 0 if the file has none, -EIO if
 * it may have one in a note segment @read could not read (not known yet:
 * a page that may read next time), or -ENOEXEC if it is not an ELF file
 * this parser reads (an extended program header count, e_phnum 0xffff,
 * included: executables and libraries never have one).
 */
static inline int rtr_elf_build_id(const u8 *head, u64 head_len, u64 file_size,
				   rtr_elf_read_fn read, void *ctx, u8 *notes,
				   u8 *id)
{
	u64 phoff, phentsize, phnum, i, type, off, sz, align, budget;
	bool is64, unread = false;
	const u8 *ph, *p;
	int ret;

	if (head_len > file_size)
		head_len = file_size;
	if (head_len < 52 || memcmp(head, "\177ELF", 4) || head[5] != 1 ||
	    (head[4] != 1 && head[4] != 2))
		return -ENOEXEC;
	is64 = head[4] == 2;
	if (is64 && head_len < 64)
		return -ENOEXEC;
	phoff = rtr_elf_le(head + (is64 ? 32 : 28), is64 ? 8 : 4);
	phentsize = rtr_elf_le(head + (is64 ? 54 : 42), 2);
	phnum = rtr_elf_le(head + (is64 ? 56 : 44), 2);
	if (phnum == 0xffff || phentsize < (is64 ? 56 : 32))
		return -ENOEXEC;
	/* phnum * phentsize < 2^32: no wrap unless phoff is near 2^64. */
	if (phoff > head_len || phnum * phentsize > head_len - phoff)
		return -ENOEXEC;
	budget = RTR_ELF_NOTES_MAX;
	for (i = 0; i < phnum; i++) {
		ph = head + phoff + i * phentsize;
		type = rtr_elf_le(ph, 4);
		if (type != RTR_ELF_PT_NOTE)
			continue;
		off = rtr_elf_le(ph + (is64 ? 8 : 4), is64 ? 8 : 4);
		sz = rtr_elf_le(ph + (is64 ? 32 : 16), is64 ? 8 : 4);
		align = rtr_elf_le(ph + (is64 ? 48 : 28), is64 ? 8 : 4);
		if (off > file_size || sz > file_size - off || sz > budget)
			continue;
		if (off <= head_len && sz <= head_len - off) {
			p = head + off;
		} else {
			if (read(ctx, notes, off, sz)) {
				unread = true;
				continue;
			}
			budget -= sz;
			p = notes;
		}
		ret = rtr_elf_notes_build_id(p, sz, align, id);
		if (ret)
			return ret;
	}
	return unread ? -EIO : 0;
}

#endif /* _RINGTRACE_ELFNOTE_H */
