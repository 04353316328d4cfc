/* SPDX-License-Identifier: GPL-2.0 */
/*
 * USDT probes (<sys/sdt.h>'s STAP_PROBE, DTRACE_PROBE) of an x86-64 ELF
 * file: the probes its .note.stapsdt lists, and one of them as a
 * probe_events command of ringtrace.ko ("s:...", module/usdt.c).
 */
#ifndef RINGTRACE_CLI_USDT_H
#define RINGTRACE_CLI_USDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What sdt.h passes at most, and what the module takes (module/usdt.c). */
#define USDT_ARGS_MAX	12
/*
 * The sites of one probe the module takes at most (RTR_USDT_SITES_MAX,
 * module/dynprobes.h): a probe inlined or unrolled into more is refused.
 */
#define USDT_SITES_MAX	32

/* One probe site, as its note says (addresses corrected for prelink). */
struct usdt_probe {
	const char *provider;
	const char *name;
	const char *args;	/* "-4@%edi -8@%rax 8@%rdx", maybe "" */
	uint64_t pc;		/* the site's address */
	uint64_t semaphore;	/* its counter's address, 0 if none */
};

/*
 * An argument operand: @size bytes (1, 2, 4, 8), sign- or zero-extended
 * to 64 bits.  USDT_MEM reads @size bytes at base + index * scale + disp;
 * USDT_SYM, the note's `foo+8(%rip)` or `foo`, is the address of a symbol
 * of the file, @disp from it, and becomes a USDT_MEM on "ip" once the
 * probe's address is known (at the hit, ip is the probe's address in the
 * process).  Register names are the kernel's (struct pt_regs: "ax",
 * "r8"), NULL where none.
 */
enum usdt_kind { USDT_REG, USDT_MEM, USDT_SYM, USDT_IMM };

struct usdt_arg {
	enum usdt_kind kind;
	unsigned int size;
	bool is_signed;
	const char *reg;	/* REG; MEM's base (NULL: none) */
	const char *index;	/* MEM's index register, or NULL */
	unsigned int scale;	/* with index: 1, 2, 4 or 8 */
	int64_t disp;		/* MEM, SYM: displacement; IMM: the value */
	char sym[128];		/* SYM: the symbol */
};

/*
 * One operand of a note's argument string ("-4@%eax", "8@-16(%rbp)",
 * "8@foo(%rip)", "4@$5", "2@8(%rax,%rdx,4)") into @arg: 0, or -1 with
 * one sentence in @why saying what is not handled.
 */
int usdt_parse_arg(const char *text, struct usdt_arg *arg, char *why,
		   size_t size);

/*
 * Calls @cb for each probe of the ELF file @path, in the note's order,
 * until it returns non-zero (returned).  -1 with one sentence in @why: no
 * file, not ELF, not x86-64, no probes ("PATH has no USDT probes"), a
 * damaged note.
 */
int usdt_probes(const char *path,
		int (*cb)(const struct usdt_probe *p, void *arg), void *arg,
		char *why, size_t size);

/* One site of a probe made ready for the module: a file offset, operands resolved. */
struct usdt_site {
	uint64_t offset;	/* of the site's instruction in the file */
	struct usdt_arg args[USDT_ARGS_MAX];
};

/* A probe made ready for the module: every site, in the notes' order. */
struct usdt_spec {
	uint64_t ref_offset;	/* of its semaphore in the file, 0 if none */
	unsigned int nargs;	/* of every site */
	unsigned int nsites;	/* 1 .. USDT_SITES_MAX */
	struct usdt_site *sites;	/* malloc'd: usdt_spec_free() */
};

/*
 * The probe PROVIDER:NAME of @path into @spec, each of its sites (a note
 * each).  -1 with one sentence in @why: what usdt_probes() refuses, an
 * unknown probe (the sentence lists the file's), more than USDT_SITES_MAX
 * sites, sites with different argument counts or semaphores, an operand
 * not handled (the probe named), a symbol or a semaphore not in the file.
 * The sites' operands may differ in register, kind and size.
 */
int usdt_spec(const char *path, const char *provider, const char *name,
	      struct usdt_spec *spec, char *why, size_t size);
/* Frees what usdt_spec() allocated; @spec zeroed or filled by it. */
void usdt_spec_free(struct usdt_spec *spec);

/*
 * record's -e usdt:PATH:PROVIDER:NAME (@word) into the probe_events
 * command "s:/ABS/PATH:0xOFF@PROVIDER_NAME[ ref=0xOFF][ a0=SPEC...]
 * [ at=0xOFF a0=SPEC...]..." (an at= per site after the first),
 * malloc'd, as the module reads it back; NULL with one sentence in @why.
 */
char *usdt_cmd(const char *word, char *why, size_t size);

#endif /* RINGTRACE_CLI_USDT_H */
