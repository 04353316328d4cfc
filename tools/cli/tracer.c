// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace stats, start, stop: the running tracer's counters and its
 * switch, through its control files (debugfs, or /dev/ringtrace).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* -d/--debugfs DIR, and no arguments. */
static void control_opts(int argc, char **argv, struct ctl *dir)
{
	static const struct option opts[] = {
		{ "debugfs", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *debugfs = NULL;
	int c;

	while ((c = cmd_getopt(argc, argv, "d:h", opts)) != -1)
		if (c == 'd')
			debugfs = optarg;
	if (optind != argc)
		usage_error("no arguments are taken");
	find_control(dir, debugfs);
}

#define MAX_COLS 32

struct row {
	char name[32];
	uint64_t v[MAX_COLS];
	bool has[MAX_COLS];
};

static int col_index(char cols[][32], unsigned int *nr, const char *key)
{
	for (unsigned int i = 0; i < *nr; i++)
		if (!strcmp(cols[i], key))
			return i;
	if (*nr == MAX_COLS || strlen(key) >= sizeof(cols[0]))
		return -1;
	memcpy(cols[*nr], key, strlen(key) + 1);
	return (*nr)++;
}

static int run_stats(int argc, char **argv)
{
	static const char *const lost[] = {
		"lost_full", "lost_overrun", "lost_held", "lost_nested", "lost_too_big",
	};
	char cols[MAX_COLS][32], *text, *line, *save = NULL;
	static const char *const ctl[] = {
		"tracing_on", "mode", "subbuf_size", "num_subbufs",
	};
	unsigned int nr_cols = 0, nr_rows = 0, width[MAX_COLS + 2];
	struct row *rows = NULL, total = { .name = "total" };
	int w_idx = -1, d_idx = -1, l_idx[5];
	bool pending = true;
	struct ctl dir;
	char v[64];

	control_opts(argc, argv, &dir);
	for (int i = 0; i < ARRAY_SIZE(ctl); i++)
		if (ctl_read(&dir, ctl[i], v, sizeof(v)) >= 0)
			printf("%s%s=%s", i ? " " : "", ctl[i], v);
	putchar('\n');

	text = ctl_read_alloc(&dir, "stats");
	if (!text)
		die("%s/stats: %s", dir.dir, strerror(errno));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok, *save2 = NULL;
		struct row *r;

		r = realloc(rows, (nr_rows + 1) * sizeof(*r));
		if (!r)
			die("out of memory");
		rows = r;
		r += nr_rows++;
		memset(r, 0, sizeof(*r));
		tok = strtok_r(line, " \t", &save2);
		snprintf(r->name, sizeof(r->name), "%s", tok ? tok : "?");
		while ((tok = strtok_r(NULL, " \t", &save2))) {
			char *eq = strchr(tok, '='), *end;
			unsigned long long v;
			int ci;

			if (!eq)
				die("stats: cannot parse '%s'", tok);
			*eq = '\0';
			errno = 0;
			v = strtoull(eq + 1, &end, 10);
			if (errno || *end || end == eq + 1)
				die("stats: bad value for %s: '%s'", tok, eq + 1);
			ci = col_index(cols, &nr_cols, tok);
			if (ci < 0)
				die("stats: too many columns");
			r->v[ci] = v;
			r->has[ci] = true;
			total.v[ci] += v;
			total.has[ci] = true;
		}
	}
	free(text);

	/* Events reserved but neither delivered nor lost: still in the buffers. */
	for (unsigned int i = 0; i < nr_cols; i++) {
		if (!strcmp(cols[i], "written"))
			w_idx = i;
		if (!strcmp(cols[i], "delivered"))
			d_idx = i;
	}
	for (int i = 0; i < 5; i++) {
		l_idx[i] = -1;
		for (unsigned int j = 0; j < nr_cols; j++)
			if (!strcmp(cols[j], lost[i]))
				l_idx[i] = j;
		if (l_idx[i] < 0)
			pending = false;
	}
	if (w_idx < 0 || d_idx < 0)
		pending = false;

	width[0] = 5;
	for (unsigned int i = 0; i < nr_rows; i++)
		if (strlen(rows[i].name) > width[0])
			width[0] = strlen(rows[i].name);
	for (unsigned int j = 0; j < nr_cols; j++) {
		char b[32];

		width[j + 1] = strlen(cols[j]);
		snprintf(b, sizeof(b), "%" PRIu64, total.v[j]);
		if (strlen(b) > width[j + 1])
			width[j + 1] = strlen(b);
	}
	width[nr_cols + 1] = strlen("in_buffer");

	printf("%-*s", width[0], "");
	for (unsigned int j = 0; j < nr_cols; j++)
		printf("  %*s", width[j + 1], cols[j]);
	if (pending)
		printf("  %*s", width[nr_cols + 1], "in_buffer");
	putchar('\n');
	for (unsigned int i = 0; i <= nr_rows; i++) {
		const struct row *r = i < nr_rows ? &rows[i] : &total;

		if (i == nr_rows && nr_rows < 2)
			break;
		printf("%-*s", width[0], r->name);
		for (unsigned int j = 0; j < nr_cols; j++) {
			if (r->has[j])
				printf("  %*" PRIu64, width[j + 1], r->v[j]);
			else
				printf("  %*s", width[j + 1], "-");
		}
		if (pending) {
			int64_t p = r->v[w_idx] - r->v[d_idx];

			for (int k = 0; k < 5; k++)
				p -= r->v[l_idx[k]];
			printf("  %*" PRId64, width[nr_cols + 1], p);
		}
		putchar('\n');
	}
	free(rows);
	return 0;
}

static int set_tracing(int argc, char **argv, const char *value)
{
	struct ctl dir;
	int err;

	control_opts(argc, argv, &dir);
	err = ctl_write(&dir, "tracing_on", value);
	if (err)
		die("%s/tracing_on: %s%s", dir.dir, strerror(-err),
		    err == -EPERM ? " (kernel lockdown?)" : "");
	return 0;
}

static int run_start(int argc, char **argv)
{
	return set_tracing(argc, argv, "1\n");
}

static int run_stop(int argc, char **argv)
{
	return set_tracing(argc, argv, "0\n");
}

#define CONTROL_OPTIONS \
"  -d, --debugfs DIR   debugfs is mounted on DIR: the files are in\n" \
"                      DIR/ringtrace.  Without it: /sys/kernel/debug/ringtrace,\n" \
"                      or /dev/ringtrace when debugfs refuses them (Secure\n" \
"                      Boot lockdown) or is not mounted\n" \
"  -h, --help          this text\n"

const struct command cmd_stats = {
	.name = "stats",
	.summary = "the running tracer's per-CPU counters",
	.help =
"Usage: ringtrace stats [-d DIR]\n"
"\n"
"The settings (tracing_on, mode, geometry) and, per CPU, the counters of\n"
"ringtrace.ko: written, delivered, lost by cause, sub-buffers and bytes\n"
"delivered, and in_buffer (written but neither delivered nor lost yet).\n"
"\n"
CONTROL_OPTIONS,
	.run = run_stats,
};

const struct command cmd_start = {
	.name = "start",
	.summary = "turn tracing on (tracing_on = 1)",
	.help =
"Usage: ringtrace start [-d DIR]\n"
"\n"
"Turn tracing on.  Nothing is recorded to disk unless a consumer runs\n"
"(ringtraced, or ringtrace record).\n"
"\n"
CONTROL_OPTIONS,
	.run = run_start,
};

const struct command cmd_stop = {
	.name = "stop",
	.summary = "turn tracing off (tracing_on = 0)",
	.help =
"Usage: ringtrace stop [-d DIR]\n"
"\n"
"Turn tracing off: every writer stops and every open sub-buffer is closed\n"
"for the consumers to drain.\n"
"\n"
CONTROL_OPTIONS,
	.run = run_stop,
};
