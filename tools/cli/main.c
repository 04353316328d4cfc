// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: record, read and export ringtrace traces, and drive the
 * tracer.  `ringtrace COMMAND --help` for each command; the commands are
 * in the other files of this directory, one each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct command *const commands[] = {
	&cmd_record, &cmd_snapshot, &cmd_recover, &cmd_list, &cmd_report, &cmd_export,
	&cmd_check, &cmd_sql, &cmd_ship, &cmd_unpack, &cmd_compress, &cmd_stats, &cmd_start,
	&cmd_stop, &cmd_symbols,
};

static void usage(FILE *f)
{
	int i;

	fputs("Usage: ringtrace [--help|--version] COMMAND [OPTIONS] [ARGS]\n"
	      "\n"
	      "Record a command or the whole system with ringtrace.ko, read the\n"
	      "trace, export it to viewers.\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\n"
	      "'ringtrace COMMAND --help' tells more.  Exit status: 0 done,\n"
	      "1 error, 2 usage error, 3 trace read but damage skipped (record:\n"
	      "its command's status; sql: 130 after Ctrl-C).\n"
	      "Documentation/ringtrace/cli.rst has it all.\n",
	      f);
}

void find_control(struct ctl *c, const char *debugfs)
{
	char why[512];

	if (ctl_find(c, debugfs, why, sizeof(why)))
		die("%s", why);
}

int main(int argc, char **argv)
{
	static char prog[64];
	const char *name;
	int i;

	msg_prog = "ringtrace";
	if (argc < 2)
		usage_error("a command is needed");
	name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") ||
	    !strcmp(name, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("ringtrace %s\n", RINGTRACE_VERSION);
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(name, commands[i]->name))
			continue;
		current_cmd = commands[i];
		snprintf(prog, sizeof(prog), "ringtrace %s", name);
		msg_prog = prog;
		/* The command's options and arguments start at argv[1]. */
		optind = 1;
		return current_cmd->run(argc - 1, argv + 1);
	}
	usage_error("unknown command '%s'", name);
}
