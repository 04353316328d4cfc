// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit cases of module/elfnote.h, the build-id parser of ringtrace.ko
 * (the fuzzer, fuzz_elfnote.c, looks for crashes; these say what comes
 * out): ELF files made here, well-formed and damaged, and -- with FILE
 * arguments -- real files, whose build-id must be the one given after
 * each ("FILE=HEX", HEX from readelf -n; "FILE=" for none).  One
 * "ok - ..."/"not ok - ..." line per case, then "rt-elfnote: N passed,
 * M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../module/elfnote.h"

static int passed, failed;

static void check(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	if (cond)
		passed++;
	else
		failed++;
}

struct file {
	u8 *data;
	size_t size;
	int fail_reads;		/* the read callback fails */
	int reads;
};

static int read_file(void *ctx, u8 *buf, u64 off, u64 len)
{
	struct file *f = ctx;

	f->reads++;
	if (f->fail_reads || off > f->size || len > f->size - off)
		return -1;
	memcpy(buf, f->data + off, len);
	return 0;
}

static int parse(struct file *f, u8 *id)
{
	static u8 notes[RTR_ELF_NOTES_MAX];
	size_t head = f->size < RTR_ELF_HEAD_MAX ? f->size : RTR_ELF_HEAD_MAX;

	return rtr_elf_build_id(f->data, head, f->size, read_file, f, notes, id);
}

static void put(u8 *p, u64 v, int n)
{
	while (n--) {
		*p++ = v & 0xff;
		v >>= 8;
	}
}

static const u8 bid[20] = {
	0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16,
};

/* A note at @p: name "GNU", type @type, @descsz bytes of bid; its size. */
static size_t note(u8 *p, u32 type, u32 descsz, u32 align)
{
	size_t desc = (16 + align - 1) & ~(size_t)(align - 1);

	put(p, 4, 4);
	put(p + 4, descsz, 4);
	put(p + 8, type, 4);
	memcpy(p + 12, "GNU", 4);
	memcpy(p + desc, bid, descsz < sizeof(bid) ? descsz : sizeof(bid));
	return (desc + descsz + align - 1) & ~(size_t)(align - 1);
}

/*
 * An ELF file of @size bytes, 64-bit unless @elf32: a PT_LOAD, then a
 * PT_NOTE at @note_off holding a build-id note (20 bytes, 4-aligned).
 */
static struct file make(size_t size, size_t note_off, int elf32)
{
	struct file f = { .data = calloc(1, size), .size = size };
	u8 *h = f.data, *ph;
	size_t n;

	memcpy(h, "\177ELF", 4);
	h[4] = elf32 ? 1 : 2;
	h[5] = 1;
	h[6] = 1;
	if (elf32) {
		put(h + 28, 52, 4);		/* e_phoff */
		put(h + 42, 32, 2);		/* e_phentsize */
		put(h + 44, 2, 2);		/* e_phnum */
		ph = h + 52;
		put(ph, 1, 4);			/* PT_LOAD */
		ph += 32;
		n = note(h + note_off, RTR_ELF_NT_GNU_BUILD_ID, 20, 4);
		put(ph, RTR_ELF_PT_NOTE, 4);
		put(ph + 4, note_off, 4);
		put(ph + 16, n, 4);
		put(ph + 28, 4, 4);
	} else {
		put(h + 32, 64, 8);
		put(h + 54, 56, 2);
		put(h + 56, 2, 2);
		ph = h + 64;
		put(ph, 1, 4);
		ph += 56;
		n = note(h + note_off, RTR_ELF_NT_GNU_BUILD_ID, 20, 4);
		put(ph, RTR_ELF_PT_NOTE, 4);
		put(ph + 8, note_off, 8);
		put(ph + 32, n, 8);
		put(ph + 48, 4, 8);
	}
	return f;
}

/* The second program header of a 64-bit make(): the PT_NOTE. */
#define NOTE_PH(f)	((f).data + 64 + 56)

static void synthetic(void)
{
	struct file f;
	u8 id[RTR_BUILD_ID_MAX];
	int ret;

	f = make(8192, 0x200, 0);
	ret = parse(&f, id);
	check(ret == 20 && !memcmp(id, bid, 20) && !f.reads,
	      "ELF64, note in the first 4 KiB: the id, no read");
	free(f.data);

	f = make(8192, 0x200, 1);
	ret = parse(&f, id);
	check(ret == 20 && !memcmp(id, bid, 20), "ELF32: the id");
	free(f.data);

	f = make(3 * 4096, 2 * 4096 + 8, 0);
	ret = parse(&f, id);
	check(ret == 20 && !memcmp(id, bid, 20) && f.reads == 1,
	      "note past the first 4 KiB: read, the id");
	f.fail_reads = 1;
	check(parse(&f, id) == -EIO,
	      "note past the first 4 KiB, the read fails: -EIO (not known, not none)");
	free(f.data);

	/* An 8-aligned GNU property note (type 5, 16 bytes) before the id. */
	f = make(8192, 0x200, 0);
	{
		size_t n = note(f.data + 0x200, 5, 12, 8);

		n += note(f.data + 0x200 + n, RTR_ELF_NT_GNU_BUILD_ID, 20, 8);
		put(NOTE_PH(f) + 32, n, 8);
		put(NOTE_PH(f) + 48, 8, 8);
	}
	ret = parse(&f, id);
	check(ret == 20 && !memcmp(id, bid, 20), "8-aligned notes, another first: the id");
	free(f.data);

	f = make(8192, 0x200, 0);
	put(f.data + 56, 0xffff, 2);
	check(parse(&f, id) == -ENOEXEC, "e_phnum 65535 (PN_XNUM): refused");
	put(f.data + 56, 4000, 2);
	check(parse(&f, id) == -ENOEXEC, "program headers past the bytes at hand: refused");
	put(f.data + 56, 2, 2);
	put(f.data + 32, ~0ULL - 8, 8);
	check(parse(&f, id) == -ENOEXEC, "e_phoff near 2^64: refused");
	put(f.data + 32, 64, 8);
	put(f.data + 54, 20, 2);
	check(parse(&f, id) == -ENOEXEC, "e_phentsize smaller than a program header: refused");
	put(f.data + 54, 56, 2);
	f.data[5] = 2;
	check(parse(&f, id) == -ENOEXEC, "big-endian: refused");
	f.data[5] = 1;
	f.data[0] = 0;
	check(parse(&f, id) == -ENOEXEC, "no ELF magic: refused");
	f.data[0] = 0x7f;
	check(parse(&f, id) == 20, "the same file, repaired: the id");

	put(f.data + 0x200, 0xffffffff, 4);
	check(parse(&f, id) == 0, "a note name size of 2^32-1: none");
	put(f.data + 0x200, 4, 4);
	put(f.data + 0x204, 0xfffffff0, 4);
	check(parse(&f, id) == 0, "a note desc size overflowing the segment: none");
	put(f.data + 0x204, 21, 4);
	put(NOTE_PH(f) + 32, 16 + 24, 8);
	check(parse(&f, id) == 0, "a build-id of 21 bytes: none");
	put(f.data + 0x204, 0, 4);
	check(parse(&f, id) == 0, "a build-id of 0 bytes: none");
	put(f.data + 0x204, 20, 4);
	put(NOTE_PH(f) + 32, 36, 8);
	check(parse(&f, id) == 20, "repaired: the id");
	put(NOTE_PH(f) + 32, 35, 8);
	check(parse(&f, id) == 0, "the segment one byte short of the note: none");
	put(NOTE_PH(f) + 32, 36, 8);
	put(NOTE_PH(f) + 8, 8192 - 30, 8);
	check(parse(&f, id) == 0, "the segment past the file's end: none");
	put(NOTE_PH(f) + 8, ~0ULL - 10, 8);
	check(parse(&f, id) == 0, "a segment offset near 2^64: none");
	put(NOTE_PH(f) + 8, 0x200, 8);
	put(NOTE_PH(f) + 32, RTR_ELF_NOTES_MAX + 1, 8);
	check(parse(&f, id) == 0 && !f.reads, "a segment over the notes' budget: skipped, not read");
	put(NOTE_PH(f), 1, 4);
	put(NOTE_PH(f) + 32, 36, 8);
	check(parse(&f, id) == 0, "no PT_NOTE: none");
	put(NOTE_PH(f), RTR_ELF_PT_NOTE, 4);
	memcpy(f.data + 0x20c, "GNV", 4);
	check(parse(&f, id) == 0, "a build-id note not named GNU: none");
	free(f.data);

	f = make(8192, 0x200, 0);
	f.size = 40;
	check(parse(&f, id) == -ENOEXEC, "a file of 40 bytes: refused");
	free(f.data);
}

static void real(const char *arg)
{
	const char *eq = strrchr(arg, '=');
	char path[4096], want[64], got[2 * RTR_BUILD_ID_MAX + 1] = "", what[4400];
	u8 id[RTR_BUILD_ID_MAX];
	struct file f = { 0 };
	FILE *in;
	long size;
	int ret;

	if (!eq || (size_t)(eq - arg) >= sizeof(path) || strlen(eq + 1) >= sizeof(want)) {
		check(0, arg);
		return;
	}
	memcpy(path, arg, eq - arg);
	path[eq - arg] = '\0';
	strcpy(want, eq + 1);
	in = fopen(path, "rb");
	if (!in || fseek(in, 0, SEEK_END) || (size = ftell(in)) < 0 ||
	    fseek(in, 0, SEEK_SET) || !(f.data = malloc(size + 1)) ||
	    fread(f.data, 1, size, in) != (size_t)size) {
		snprintf(what, sizeof(what), "%s: read", path);
		check(0, what);
		return;
	}
	fclose(in);
	f.size = size;
	ret = parse(&f, id);
	for (int i = 0; i < ret; i++)
		sprintf(got + 2 * i, "%02x", id[i]);
	snprintf(what, sizeof(what), "%s: build-id '%s', readelf's '%s'", path, got, want);
	check(ret >= 0 && !strcmp(got, want), what);
	free(f.data);
}

int main(int argc, char **argv)
{
	synthetic();
	for (int i = 1; i < argc; i++)
		real(argv[i]);
	printf("rt-elfnote: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
