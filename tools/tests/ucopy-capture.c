// SPDX-License-Identifier: GPL-2.0
/*
 * What ringtrace.ko's copy mode (record --ustack-mode copy) records, taken
 * by a process of itself, for the host tests of the unwinder
 * (test_decoder.py's ucopy tests): built -O2 -fomit-frame-pointer, so
 * that only CFI unwinds it, with main -> a -> b -> leaf, each noipa (no
 * inlining, cloning or renaming) and an empty asm after each call (no
 * tail call).  leaf takes its own ip, sp and bp, copies the stack from sp
 * up (8 KiB, or to the top of [stack]) and writes, to PREFIX.txt:
 *
 *   ip 0x...  sp 0x...  bp 0x...  pid N  main 0x... (its run-time address)
 *   map START END PGOFF PATH          each executable mapping
 *   buildid PATH HEX                  each loaded object's GNU build-id
 *
 * (one item a line) and the stack's bytes to PREFIX.bin.
 *
 * Usage: ucopy-capture PREFIX
 */
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv);

#define COPY_MAX	8192

static uint8_t copy[COPY_MAX];		/* not on the stack being copied */
static const char *prefix;

/*
 * The end of the mapping holding @addr, from /proc/self/maps, or 0.  Not
 * inlined, as nothing leaf calls is: its frame stays small, well within
 * the copy.
 */
__attribute__((noipa)) static uint64_t mapping_end(uint64_t addr)
{
	char line[4096];
	uint64_t lo, hi, end = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 &&
		    addr >= lo && addr < hi)
			end = hi;
	fclose(f);
	return end;
}

__attribute__((noipa)) static void write_maps(FILE *out)
{
	char line[4096], perms[8], path[4096];
	uint64_t lo, hi, off;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		exit(1);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s",
			   &lo, &hi, perms, &off, path) == 5 &&
		    perms[2] == 'x' && path[0] == '/')
			fprintf(out, "map 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " %s\n",
				lo, hi, off, path);
	fclose(f);
}

/* Each object's NT_GNU_BUILD_ID, from its PT_NOTE segments in memory. */
__attribute__((noipa)) static int note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	char exe[4096];
	const char *name = info->dlpi_name;
	FILE *out = arg;

	(void)size;
	if (!name[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (n <= 0)
			return 0;
		exe[n] = 0;
		name = exe;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const uint8_t *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3U);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4)) {
				fprintf(out, "buildid %s ", name);
				for (unsigned int k = 0; k < nh->n_descsz; k++)
					fprintf(out, "%02x", desc[k]);
				fprintf(out, "\n");
			}
			p = desc + ((nh->n_descsz + 3) & ~3U);
		}
	}
	return 0;
}

__attribute__((noipa)) static void leaf(void)
{
	static char path[4096];
	uint64_t ip, sp, bp, top, n;
	FILE *f;

	asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
		     : "=r"(ip), "=r"(sp), "=r"(bp));
	top = mapping_end(sp);
	n = top > sp && top - sp < COPY_MAX ? top - sp : COPY_MAX;
	memcpy(copy, (const void *)sp, n);

	snprintf(path, sizeof(path), "%s.bin", prefix);
	f = fopen(path, "wb");
	if (!f || fwrite(copy, 1, n, f) != n || fclose(f))
		exit(1);
	snprintf(path, sizeof(path), "%s.txt", prefix);
	f = fopen(path, "w");
	if (!f)
		exit(1);
	fprintf(f, "ip 0x%" PRIx64 "\nsp 0x%" PRIx64 "\nbp 0x%" PRIx64 "\n"
		"pid %d\nmain 0x%" PRIx64 "\n", ip, sp, bp, (int)getpid(),
		(uint64_t)(uintptr_t)main);
	write_maps(f);
	dl_iterate_phdr(note_cb, f);
	if (fclose(f))
		exit(1);
}

__attribute__((noipa)) static void b(void)
{
	leaf();
	asm volatile("");
}

__attribute__((noipa)) static void a(void)
{
	b();
	asm volatile("");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ucopy-capture PREFIX\n");
		return 2;
	}
	prefix = argv[1];
	a();
	asm volatile("");
	return 0;
}
