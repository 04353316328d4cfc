// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the ringtrace CLI's whole read path, on a trace
 * directory made of each input.  Built with clang, ASan and UBSan
 * (make -C tools fuzz); tools/tests/fuzz-decoder.sh runs it.
 *
 * An input is a trace directory, packed as entries one after another
 * (tools/tests/fuzz_corpus.py packs and unpacks them):
 *
 *	u8 name length, name, u32 little-endian data length, data
 *
 * A data length past the end takes what is left; the entries end at a
 * name length of 0 or past the end.  A name a trace directory would not
 * hold (a slash, a leading dot but for the kernel symbols' KSYMS_FILE,
 * more than NAME_LEN bytes) leaves its entry out, but for a file of the
 * symbol store, USYMS_DIR/xx/yyyy... (lib/usyms.h), written there: the
 * user frames of report are named from it.  The files are written into one temporary directory, and the
 * commands that read traces run on it, in this process, exactly as they run
 * from the command line (their run()): report, report --stat, report
 * --begin/--end (seeking with the chunks' time indexes, and learning the
 * frames before from their thread tables, or decoding them), export -f systrace (whole, and from --begin), report --folded [--off-cpu], export -f chrome-json, export -f lttng (into a directory
 * beside, removed after each input), export -f perfetto, check -v and
 * three ringtrace sql queries (event_count and lost, a window of raw with
 * threads and fields, IN lists) --
 * the metadata parser, the packet walk, thread attribution, the reports,
 * --stat and every export format.  Their output goes to /dev/null.
 *
 * Before them, each CPU's stream is read three ways at once, tolerant
 * and strict (diffread.h): the decoder's fast paths against the
 * reference reader, and a filtered reader.
 *
 * A failure: any sanitizer report or leak, a command that exits (die(),
 * usage_error()) instead of returning its status, or returns anything but
 * 0 (read), 1 (an error, said on stderr) or 3 (damage read past); or the
 * three readings differ.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../../lib/usyms.h"
#include "diffread.h"

#define NAME_LEN	64
#define MAX_FILES	32

static char dir[PATH_MAX];
/* export -f lttng's output: OUT/kernel/{metadata,channel0_N}. */
static char out[PATH_MAX + 8];

/* What @top holds, the store's two levels of directories included. */
static void remove_under(const char *top, int depth)
{
	char path[PATH_MAX + NAME_MAX + 2];
	struct dirent *de;
	DIR *d = opendir(top);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", top, de->d_name);
		if (unlink(path) && depth) {
			remove_under(path, depth - 1);
			rmdir(path);
		}
	}
	closedir(d);
}

static void remove_files(void)
{
	remove_under(dir, 2);
}

/* What export -f lttng wrote, if it wrote anything. */
static void remove_out(void)
{
	char kernel[PATH_MAX + 16], path[PATH_MAX + NAME_MAX + 32];
	struct dirent *de;
	DIR *d;

	snprintf(kernel, sizeof(kernel), "%s/kernel", out);
	d = opendir(kernel);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", kernel, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(kernel);
	rmdir(out);
}

static void remove_dir(void)
{
	remove_out();
	remove_files();
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/rt-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		exit(2);
	}
	snprintf(out, sizeof(out), "%s-lttng", dir);
	atexit(remove_dir);
	if (!freopen("/dev/null", "w", stdout)) {
		perror("/dev/null");
		exit(2);
	}
	msg_prog = "ringtrace";
	/* A user frame the store cannot name would be asked of a server. */
	unsetenv("DEBUGINFOD_URLS");
	/* sql's checkpoints and run lists: none kept on disk per input. */
	setenv("RINGTRACE_SQL_CACHE", "", 1);
	return 0;
}

/* USYMS_DIR/xx/yyyy..., lower-case hex: a file of the symbol store. */
static bool store_name(const char *name)
{
	size_t n = sizeof(USYMS_DIR) - 1, h;

	if (strncmp(name, USYMS_DIR "/", n + 1))
		return false;
	name += n + 1;
	if (strspn(name, "0123456789abcdef") != 2 || name[2] != '/')
		return false;
	h = strspn(name + 3, "0123456789abcdef");
	return h >= 2 && !name[3 + h];
}

static bool good_name(const char *name)
{
	if (!strcmp(name, KSYMS_FILE))
		return true;
	if (store_name(name)) {
		char sub[PATH_MAX + 32];

		snprintf(sub, sizeof(sub), "%s/" USYMS_DIR, dir);
		mkdir(sub, 0700);
		snprintf(sub, sizeof(sub), "%s/%.*s", dir, (int)sizeof(USYMS_DIR) + 2, name);
		mkdir(sub, 0700);
		return true;
	}
	if (name[0] == '.' || !name[0])
		return false;
	for (const char *p = name; *p; p++)
		if (*p == '/')
			return false;
	return true;
}

/* The input's files, written into dir. */
static void unpack(const uint8_t *data, size_t size)
{
	unsigned int files = 0;

	while (size && files < MAX_FILES) {
		size_t nlen = data[0], len;
		char name[NAME_LEN + 1], path[PATH_MAX + NAME_LEN + 2];
		int fd;

		if (!nlen || size < 1 + nlen + 4)
			return;
		memcpy(name, data + 1, nlen < NAME_LEN ? nlen : NAME_LEN);
		name[nlen < NAME_LEN ? nlen : NAME_LEN] = '\0';
		len = (size_t)data[1 + nlen] | (size_t)data[2 + nlen] << 8 |
		      (size_t)data[3 + nlen] << 16 | (size_t)data[4 + nlen] << 24;
		data += 5 + nlen;
		size -= 5 + nlen;
		if (len > size)
			len = size;
		if (nlen <= NAME_LEN && strlen(name) == nlen && good_name(name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
				perror(path);
				abort();
			}
			close(fd);
			files++;
		}
		data += len;
		size -= len;
	}
}

/* `ringtrace NAME ARGS... DIR`, as main() runs it. */
static void run(const struct command *cmd, const char *a1, const char *a2,
		const char *a3, const char *a4)
{
	const char *args[] = { a1, a2, a3, a4 };
	char *argv[7];
	int argc = 0, status;

	argv[argc++] = (char *)cmd->name;
	for (int i = 0; i < 4 && args[i]; i++)
		argv[argc++] = (char *)args[i];
	argv[argc++] = dir;
	argv[argc] = NULL;
	current_cmd = cmd;
	optind = 0;		/* glibc: start afresh, as for a new argv */
	status = cmd->run(argc, argv);
	if (status != 0 && status != 1 && status != EXIT_DAMAGED) {
		fprintf(stderr, "fuzz_decoder: ringtrace %s %s %s %s %s: status %d\n",
			cmd->name, a1 ? a1 : "", a2 ? a2 : "", a3 ? a3 : "",
			a4 ? a4 : "", status);
		abort();
	}
}

/* `ringtrace sql DIR QUERY`: the query comes after the directory. */
/* ringtrace sql DIR QUERY, or with @query an option (--stat) before DIR. */
static void run_sql(const char *query)
{
	char *argv[] = { (char *)cmd_sql.name, dir, (char *)query, NULL };
	char *opt_argv[] = { (char *)cmd_sql.name, (char *)query, dir, NULL };
	int status;

	current_cmd = &cmd_sql;
	optind = 0;
	status = cmd_sql.run(3, query[0] == '-' ? opt_argv : argv);
	if (status != 0 && status != 1 && status != EXIT_DAMAGED) {
		fprintf(stderr, "fuzz_decoder: ringtrace sql %s: status %d\n", query, status);
		abort();
	}
}

/*
 * Each CPU's stream read three ways at once (diffread.h), tolerant and
 * strict: the decoder as readers use it, the reference reader and a
 * filtered one (which events, drawn from @seed) must agree item by item.
 */
static void differential(uint64_t seed)
{
	struct rt_trace *t;
	struct rt_error err;

	if (rt_trace_open(dir, &t, &err))
		return;
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		for (int strict = 0; strict < 2; strict++) {
			struct rt_trace_cpu *c = &t->cpus[i];
			struct diffread *d = dr_open(t->md, (const char *const *)c->paths,
						     c->nr_paths, c->cpu, seed + strict);
			const char *why;
			struct rt_item it;

			if (!d)
				abort();
			dr_set_tolerant(d, !strict);
			while (dr_next(d, &it, &err) > 0)
				;
			why = dr_finish(d);
			if (why) {
				fprintf(stderr, "fuzz_decoder: cpu%d read %s: the fast paths differ from the reference reader: %s\n",
					c->cpu, strict ? "strict" : "tolerant", why);
				abort();
			}
			dr_close(d);
		}
	}
	rt_trace_close(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t seed = size;

	remove_files();
	unpack(data, size);
	for (size_t i = 0; i < size; i += 61)
		seed = seed * 31 + data[i];
	differential(seed);
	run(&cmd_report, NULL, NULL, NULL, NULL);
	run(&cmd_report, "--stat", NULL, NULL, NULL);
	/* A window: the time indexes (each .zst's own, or built) and seeking. */
	run(&cmd_report, "--begin", "+1ms", "--end", "+3ms");
	/* From 2ms on: each CPU's last sched_switch before it looked for. */
	run(&cmd_export, "-f", "systrace", "--begin", "+2ms");
	run(&cmd_report, "--folded", NULL, NULL, NULL);
	run(&cmd_report, "--folded", "--off-cpu", NULL, NULL);
	run(&cmd_export, "-f", "systrace", NULL, NULL);
	run(&cmd_export, "-f", "chrome-json", NULL, NULL);
	run(&cmd_export, "-f", "lttng", "-o", out);
	remove_out();
	run(&cmd_export, "-f", "perfetto", "-o", "/dev/null");
	run(&cmd_check, "-v", NULL, NULL, NULL);
	/* SQL: counts and losses, a window with threads and fields, IN lists. */
	run_sql("SELECT name, cpu, count FROM event_count; SELECT * FROM lost");
	run_sql("SELECT ts, name, cpu, utid, args FROM raw WHERE ts BETWEEN "
		"(SELECT min(ts) FROM raw) + 1000000 AND (SELECT min(ts) FROM raw) + 3000000");
	run_sql("SELECT count(*) FROM raw WHERE cpu IN (0, 1) AND "
		"name IN ('sched_switch', 'ringtrace_marker'); SELECT * FROM scan_stats");
	run_sql("SELECT * FROM thread_state; SELECT * FROM sched_slice; "
		"SELECT * FROM thread; SELECT * FROM process");
	run_sql("SELECT * FROM syscall; SELECT * FROM wakeup; SELECT * FROM irq; "
		"SELECT * FROM softirq; SELECT * FROM marker");
	/* One thread's spans: the run lists, the stretches and CPUs naming it. */
	run_sql("SELECT * FROM thread_state WHERE utid = (SELECT max(utid) FROM sched_slice); "
		"SELECT * FROM sched_slice WHERE utid = (SELECT min(utid) FROM thread_state "
		"WHERE utid > 0); SELECT * FROM syscall WHERE utid = (SELECT max(utid) FROM raw); "
		"SELECT * FROM wakeup WHERE wakee_utid = (SELECT max(wakee_utid) FROM wakeup)");
	/* The critical path of a thread that slept, through its wakers. */
	run_sql("SELECT c.* FROM (SELECT utid FROM thread_state WHERE state = 'S' "
		"ORDER BY ts LIMIT 1) s, critical_path(s.utid) c");
	run(&cmd_report, "--critical-path", "1", "--folded", NULL);
	run_sql("--stat");
	return 0;
}
