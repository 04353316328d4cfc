// SPDX-License-Identifier: GPL-2.0
/*
 * What every command's run() uses to read its command line: the command
 * being run, getopt_long() with --help, and usage errors.  Apart from
 * main.c so that the fuzzer (tools/tests/fuzz_decoder.c) runs the reading
 * commands as they are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const struct command *current_cmd;

/* One line: what is wrong, and where to read more. */
void usage_error(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (current_cmd)
		fprintf(stderr, "ringtrace %s: %s (see ringtrace %s --help)\n",
			current_cmd->name, line, current_cmd->name);
	else
		fprintf(stderr, "ringtrace: %s (see ringtrace --help)\n", line);
	exit(EXIT_USAGE);
}

/*
 * getopt_long, with --help handled and getopt's own messages replaced by
 * usage_error()'s single line.  Options and arguments may mix, except for
 * record's "+" optstring (its command's options are the command's).
 */
int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	if (c == 'h') {
		if (current_cmd->help_fn)
			current_cmd->help_fn(stdout);
		else
			fputs(current_cmd->help, stdout);
		exit(0);
	}
	if (c == '?') {
		const struct option *o;

		/* optopt: the option whose argument is missing, or 0. */
		for (o = longopts; optopt && o && o->name; o++)
			if (o->val == optopt && !o->flag &&
			    o->has_arg == required_argument)
				usage_error("--%s needs an argument", o->name);
		if (optopt && optopt < 256 && strchr(shortopts, optopt))
			usage_error("-%c needs an argument", optopt);
		if (optopt)
			usage_error("unknown option -%c", optopt);
		usage_error("unknown option %s", argv[optind - 1]);
	}
	return c;
}
