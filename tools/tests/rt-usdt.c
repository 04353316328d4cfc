// SPDX-License-Identifier: GPL-2.0
/*
 * rt-usdt: host tests of the USDT notes' reader and operand parser
 * (tools/cli/usdt.c): what needs an ELF file, not ringtrace.ko.
 *
 *   rt-usdt WORKLOAD    the tests, WORKLOAD being tools/tests/usdt-workload;
 *                       ends "rt-usdt: N passed, M failed"
 *
 * The cases: each operand form gcc prints for x86-64 (a register of each
 * width, an immediate, a displacement from a base register, with an
 * index and a scale, a symbol relative to %rip) parses into what the
 * module fetches; each form that is not handled is refused with a
 * sentence naming the operand; the workload's rt:tick becomes the
 * command its note and readelf's section table say (site and semaphore
 * as file offsets); an unknown probe, a file without probes and an
 * operand not handled (the workload's rt:bad) are refused in one
 * sentence naming what is wrong.  A probe at several sites (rt:multi)
 * becomes one command with an at= per site after the first, each site's
 * own operands; 32 sites are taken (rt:full), 33 (rt:many) and sites
 * that disagree on the argument count (rt:mixed) refused in a sentence.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include "../cli/elfsym.h"
#include "../cli/usdt.h"
#include "tap.h"

/* @text parses into @want (the fields that matter for its kind). */
static void parses(const char *text, struct usdt_arg want)
{
	struct usdt_arg a;
	char why[512], what[700];
	bool ok;

	ok = !usdt_parse_arg(text, &a, why, sizeof(why)) && a.kind == want.kind &&
	     a.size == want.size && a.is_signed == want.is_signed;
	if (ok && (want.kind == USDT_REG || want.kind == USDT_MEM))
		ok = (!a.reg && !want.reg) ||
		     (a.reg && want.reg && !strcmp(a.reg, want.reg));
	if (ok && want.kind == USDT_MEM)
		ok = a.disp == want.disp && a.scale == want.scale &&
		     ((!a.index && !want.index) ||
		      (a.index && want.index && !strcmp(a.index, want.index)));
	if (ok && want.kind == USDT_IMM)
		ok = a.disp == want.disp;
	if (ok && want.kind == USDT_SYM)
		ok = a.disp == want.disp && !strcmp(a.sym, want.sym);
	snprintf(what, sizeof(what), "'%s' parses", text);
	check(what, ok);
}

/* @text is refused with a sentence containing @says. */
static void refused(const char *text, const char *says)
{
	struct usdt_arg a;
	char why[512] = "", what[700];
	bool ok = usdt_parse_arg(text, &a, why, sizeof(why)) && strstr(why, says);

	snprintf(what, sizeof(what), "'%s' refused, saying '%s'", text, says);
	check(what, ok);
	if (!ok)
		printf("# said: %s\n", why);
}

static void operands(void)
{
	parses("-4@%eax", (struct usdt_arg){ .kind = USDT_REG, .size = 4,
					     .is_signed = true, .reg = "ax" });
	parses("8@%rdx", (struct usdt_arg){ .kind = USDT_REG, .size = 8, .reg = "dx" });
	parses("2@%r9w", (struct usdt_arg){ .kind = USDT_REG, .size = 2, .reg = "r9" });
	parses("-1@%sil", (struct usdt_arg){ .kind = USDT_REG, .size = 1,
					     .is_signed = true, .reg = "si" });
	parses("4@%r15d", (struct usdt_arg){ .kind = USDT_REG, .size = 4, .reg = "r15" });
	parses("1@%bpl", (struct usdt_arg){ .kind = USDT_REG, .size = 1, .reg = "bp" });
	parses("4@$5", (struct usdt_arg){ .kind = USDT_IMM, .size = 4, .disp = 5 });
	parses("-4@$-3", (struct usdt_arg){ .kind = USDT_IMM, .size = 4,
					    .is_signed = true, .disp = -3 });
	parses("8@$0x10", (struct usdt_arg){ .kind = USDT_IMM, .size = 8, .disp = 16 });
	parses("8@-16(%rbp)", (struct usdt_arg){ .kind = USDT_MEM, .size = 8,
						 .reg = "bp", .disp = -16 });
	parses("-8@-8(%rsp)", (struct usdt_arg){ .kind = USDT_MEM, .size = 8,
						 .is_signed = true, .reg = "sp",
						 .disp = -8 });
	parses("4@(%rax)", (struct usdt_arg){ .kind = USDT_MEM, .size = 4, .reg = "ax" });
	parses("2@8(%rax,%rdx,4)", (struct usdt_arg){ .kind = USDT_MEM, .size = 2,
						      .reg = "ax", .index = "dx",
						      .scale = 4, .disp = 8 });
	parses("1@(%r12,%r13)", (struct usdt_arg){ .kind = USDT_MEM, .size = 1,
						   .reg = "r12", .index = "r13",
						   .scale = 1 });
	parses("8@0x20(,%rcx,8)", (struct usdt_arg){ .kind = USDT_MEM, .size = 8,
						     .index = "cx", .scale = 8,
						     .disp = 32 });
	parses("8@foo(%rip)", (struct usdt_arg){ .kind = USDT_SYM, .size = 8,
						 .sym = "foo" });
	parses("-4@bar.lto_priv.0+12(%rip)",
	       (struct usdt_arg){ .kind = USDT_SYM, .size = 4, .is_signed = true,
				  .sym = "bar.lto_priv.0", .disp = 12 });
	parses("4@baz-4(%rip)", (struct usdt_arg){ .kind = USDT_SYM, .size = 4,
						   .sym = "baz", .disp = -4 });
	parses("8@qux", (struct usdt_arg){ .kind = USDT_SYM, .size = 8, .sym = "qux" });

	refused("%eax", "is not SIZE@OPERAND");
	refused("3@%eax", "is not SIZE@OPERAND");
	refused("x@%eax", "is not SIZE@OPERAND");
	refused("4@%ah", "operand '%ah' is not handled");
	refused("16@%xmm0", "size of 1, 2, 4 or 8");
	refused("8@%xmm1", "operand '%xmm1' is not handled");
	refused("4@%eip", "operand '%eip' is not handled");
	refused("4@$foo", "operand '$foo' is not handled");
	refused("4@$", "operand '$' is not handled");
	refused("8@%fs:0x28", "operand '%fs:0x28' is not handled");
	refused("8@8(%eax)", "operand '8(%eax)' is not handled");
	refused("8@8(%rax,%rsp,2)", "operand '8(%rax,%rsp,2)' is not handled");
	refused("8@8(%rax,%rdx,3)", "operand '8(%rax,%rdx,3)' is not handled");
	refused("8@8(%rax", "operand '8(%rax' is not handled");
	refused("8@foo(%rax)", "operand 'foo(%rax)' is not handled");
	refused("8@16(%rip)", "operand '16(%rip)' is not handled");
	refused("8@foo@GOTPCREL(%rip)", "operand 'foo@GOTPCREL(%rip)' is not handled");
	refused("8@1234", "operand '1234' is not handled");
	refused("8@", "operand '' is not handled");
}

/* The workload's probes, and its rt:tick as a command. */
static void workload(const char *path)
{
	struct usdt_spec spec;
	char why[1024], what[1200], *cmd;
	bool ok;

	ok = !usdt_spec(path, "rt", "tick", &spec, why, sizeof(why));
	check("usdt_spec(rt:tick) of the workload", ok);
	if (!ok)
		printf("# %s\n", why);
	check("rt:tick has 1 site, 3 operands: -4@REG -8@REG 8@REG",
	      ok && spec.nsites == 1 && spec.nargs == 3 &&
	      spec.sites[0].args[0].kind == USDT_REG &&
	      spec.sites[0].args[0].size == 4 && spec.sites[0].args[0].is_signed &&
	      spec.sites[0].args[1].size == 8 && spec.sites[0].args[1].is_signed &&
	      spec.sites[0].args[2].size == 8 && !spec.sites[0].args[2].is_signed);
	check("rt:tick's site and semaphore are file offsets (not 0)",
	      ok && spec.sites[0].offset && spec.ref_offset);
	usdt_spec_free(&spec);
	ok = !usdt_spec(path, "rt", "forms", &spec, why, sizeof(why));
	check("rt:forms: $5, rt_global(%rip) made relative to the site, -8(%rsp)",
	      ok && spec.nargs == 3 && !spec.ref_offset &&
	      spec.sites[0].args[0].kind == USDT_IMM && spec.sites[0].args[0].disp == 5 &&
	      spec.sites[0].args[1].kind == USDT_MEM &&
	      !strcmp(spec.sites[0].args[1].reg, "ip") && spec.sites[0].args[1].disp > 0 &&
	      spec.sites[0].args[2].kind == USDT_MEM &&
	      !strcmp(spec.sites[0].args[2].reg, "sp") && spec.sites[0].args[2].disp == -8);
	if (!ok)
		printf("# %s\n", why);
	usdt_spec_free(&spec);

	ok = usdt_spec(path, "rt", "nosuch", &spec, why, sizeof(why)) &&
	     strstr(why, "no USDT probe rt:nosuch (it has rt:full, rt:many, rt:bad, rt:forms, "
		   "rt:start, rt:multi, rt:mixed, rt:tick)");
	snprintf(what, sizeof(what), "an unknown probe, refused listing the file's: \"%s\"",
		 why);
	check(what, ok);
	ok = usdt_spec(path, "rt", "bad", &spec, why, sizeof(why)) &&
	     strstr(why, ": USDT probe rt:bad: argument '-1@%ah': operand '%ah' is not handled");
	snprintf(what, sizeof(what), "rt:bad's first operand not handled, the probe named: \"%s\"",
		 why);
	check(what, ok);
	ok = usdt_spec("/bin/true", "rt", "tick", &spec, why, sizeof(why)) &&
	     !strcmp(why, "/bin/true has no USDT probes");
	snprintf(what, sizeof(what), "/bin/true: \"%s\"", why);
	check(what, ok);

	cmd = usdt_cmd("usdt:/nonexistent/x:rt:tick", why, sizeof(why));
	check("usdt:/nonexistent/x:rt:tick: the file named",
	      !cmd && strstr(why, "/nonexistent/x: No such file or directory"));
	free(cmd);
	cmd = usdt_cmd("usdt:rt:tick", why, sizeof(why));
	check("usdt:rt:tick: not usdt:PATH:PROVIDER:NAME",
	      !cmd && strstr(why, "not usdt:PATH:PROVIDER:NAME"));
	free(cmd);
	snprintf(what, sizeof(what), "usdt:%s:rt:tick", path);
	cmd = usdt_cmd(what, why, sizeof(why));
	check("usdt:WORKLOAD:rt:tick makes an s: command", cmd != NULL);
	if (cmd)
		printf("# %s\n", cmd);
	check("... labelled rt_tick, with ref= and a0..a2",
	      cmd && strstr(cmd, "@rt_tick ref=0x") && strstr(cmd, " a0=4s@") &&
	      strstr(cmd, " a1=8s@") && strstr(cmd, " a2=8@") && !strstr(cmd, " a3="));
	free(cmd);
}

/* The address of the symbol @name of @path (libelf), 0 if none. */
static uint64_t symbol(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	GElf_Sym sym;
	uint64_t v = 0;

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (elf && elfsym_find(elf, name, &sym))
		v = sym.st_value;
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return v;
}

struct nth { unsigned int want, seen; uint64_t pc; };

static int nth_multi(const struct usdt_probe *p, void *arg)
{
	struct nth *n = arg;

	if (!strcmp(p->name, "multi") && n->seen++ == n->want)
		n->pc = p->pc;
	return 0;
}

/* The address of rt:multi's site @k, from its note. */
static uint64_t multi_pc(const char *path, unsigned int k)
{
	struct nth n = { .want = k };
	char why[512];

	return usdt_probes(path, nth_multi, &n, why, sizeof(why)) ? 0 : n.pc;
}

/*
 * rt:multi, one probe at three sites with operands of other kinds and
 * sizes; rt:full at 32 sites; rt:mixed's sites disagreeing on the
 * argument count and rt:many's 33 sites refused.
 */
static void sites(const char *path)
{
	const struct usdt_arg *a1[3];
	struct usdt_spec spec;
	char why[1024], what[1200], *cmd, *at;
	bool ok;

	ok = !usdt_spec(path, "rt", "multi", &spec, why, sizeof(why));
	check("usdt_spec(rt:multi) of the workload", ok);
	if (!ok)
		printf("# %s\n", why);
	check("rt:multi: 3 sites of 2 arguments, at 3 file offsets, one semaphore",
	      ok && spec.nsites == 3 && spec.nargs == 2 && spec.ref_offset &&
	      spec.sites[0].offset && spec.sites[0].offset != spec.sites[1].offset &&
	      spec.sites[1].offset != spec.sites[2].offset &&
	      spec.sites[0].offset != spec.sites[2].offset);
	for (unsigned int k = 0; k < 3; k++) {
		snprintf(what, sizeof(what), "rt:multi's site %u: arg0 is $%u", k + 1, k + 1);
		check(what, ok && spec.nsites == 3 &&
		      spec.sites[k].args[0].kind == USDT_IMM &&
		      spec.sites[k].args[0].disp == k + 1);
		a1[k] = ok && spec.nsites == 3 ? &spec.sites[k].args[1] : NULL;
	}
	check("rt:multi's site 1: arg1 -4@REG",
	      a1[0] && a1[0]->kind == USDT_REG && a1[0]->size == 4 && a1[0]->is_signed);
	check("rt:multi's site 2: arg1 -8@-8(%rsp)",
	      a1[1] && a1[1]->kind == USDT_MEM && a1[1]->size == 8 && a1[1]->is_signed &&
	      !strcmp(a1[1]->reg, "sp") && a1[1]->disp == -8);
	check("rt:multi's site 3: arg1 -2@rt_multi_global(%rip), from its own address",
	      a1[2] && a1[2]->kind == USDT_MEM && a1[2]->size == 2 && a1[2]->is_signed &&
	      !strcmp(a1[2]->reg, "ip") &&
	      a1[2]->disp == (int64_t)(symbol(path, "rt_multi_global") - multi_pc(path, 2)));
	usdt_spec_free(&spec);

	snprintf(what, sizeof(what), "usdt:%s:rt:multi", path);
	cmd = usdt_cmd(what, why, sizeof(why));
	check("usdt:WORKLOAD:rt:multi makes one s: command", cmd != NULL);
	if (cmd)
		printf("# %s\n", cmd);
	at = cmd ? strstr(cmd, " at=0x") : NULL;
	check("... labelled rt_multi, ref=, site 1's a0=4s@$1 a1=4s@REG before the first at=",
	      at && strstr(cmd, "@rt_multi ref=0x") && strstr(cmd, " a0=4s@$1 a1=4s@") < at);
	check("... then at=0x... a0=4s@$2 a1=8s@-8(sp), at=0x... a0=4s@$3 a1=2s@...(ip)",
	      at && strstr(at, " a0=4s@$2 a1=8s@-8(sp) at=0x") &&
	      strstr(at, " a0=4s@$3 a1=2s@") && strstr(at, "(ip)") &&
	      !strstr(strstr(at + 1, " at=0x") + 1, " at=0x"));
	free(cmd);

	ok = !usdt_spec(path, "rt", "full", &spec, why, sizeof(why));
	check("rt:full: its 32 sites taken, no argument",
	      ok && spec.nsites == 32 && spec.nargs == 0);
	usdt_spec_free(&spec);
	ok = usdt_spec(path, "rt", "many", &spec, why, sizeof(why)) &&
	     strstr(why, ": USDT probe rt:many has 33 sites, more than the 32 "
		    "ringtrace probes at once");
	snprintf(what, sizeof(what), "rt:many, 33 sites, refused: \"%s\"", why);
	check(what, ok);
	ok = usdt_spec(path, "rt", "mixed", &spec, why, sizeof(why)) &&
	     strstr(why, ": USDT probe rt:mixed: its sites disagree on the argument "
		    "count (1 at 0x") && strstr(why, ", 2 at 0x");
	snprintf(what, sizeof(what), "rt:mixed, 1 and 2 arguments, refused: \"%s\"", why);
	check(what, ok);
	snprintf(what, sizeof(what), "usdt:%s:rt:mixed", path);
	cmd = usdt_cmd(what, why, sizeof(why));
	check("usdt:WORKLOAD:rt:mixed: no command, the sentence says why",
	      !cmd && strstr(why, "its sites disagree on the argument count"));
	free(cmd);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: rt-usdt WORKLOAD\n");
		return 2;
	}
	operands();
	workload(argv[1]);
	sites(argv[1]);
	printf("rt-usdt: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
