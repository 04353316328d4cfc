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
 * sentence naming what is wrong.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	check("rt:tick has 3 operands: -4@REG -8@REG 8@REG",
	      ok && spec.nargs == 3 && spec.args[0].kind == USDT_REG &&
	      spec.args[0].size == 4 && spec.args[0].is_signed &&
	      spec.args[1].size == 8 && spec.args[1].is_signed &&
	      spec.args[2].size == 8 && !spec.args[2].is_signed);
	check("rt:tick's site and semaphore are file offsets (not 0)",
	      ok && spec.offset && spec.ref_offset);
	ok = !usdt_spec(path, "rt", "forms", &spec, why, sizeof(why));
	check("rt:forms: $5, rt_global(%rip) made relative to the site, -8(%rsp)",
	      ok && spec.nargs == 3 && !spec.ref_offset &&
	      spec.args[0].kind == USDT_IMM && spec.args[0].disp == 5 &&
	      spec.args[1].kind == USDT_MEM && !strcmp(spec.args[1].reg, "ip") &&
	      spec.args[1].disp > 0 &&
	      spec.args[2].kind == USDT_MEM && !strcmp(spec.args[2].reg, "sp") &&
	      spec.args[2].disp == -8);
	if (!ok)
		printf("# %s\n", why);

	ok = usdt_spec(path, "rt", "nosuch", &spec, why, sizeof(why)) &&
	     strstr(why, "no USDT probe rt:nosuch (it has rt:bad, rt:forms, rt:start, rt:tick)");
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: rt-usdt WORKLOAD\n");
		return 2;
	}
	operands();
	workload(argv[1]);
	printf("rt-usdt: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
