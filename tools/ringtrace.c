// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: read ringtrace trace directories and drive the tracer.
 *
 *   ringtrace report DIR          events of all CPUs merged by time
 *   ringtrace check DIR           validate everything, per-CPU summary
 *   ringtrace unpack DIR [OUT]    plain CTF for babeltrace2
 *   ringtrace stats|start|stop    the debugfs control files
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/rtdecode.h"

#define DEFAULT_DEBUGFS	"/sys/kernel/debug"
#define DEV_RINGTRACE	"/dev/ringtrace"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static void vwarn(const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs("ringtrace: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(1);
}

static const char usage_text[] =
	"Usage: ringtrace [-h] COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Commands on a trace directory written by ringtraced (metadata plus\n"
	"cpuN, cpuN.zst or rotated cpuN-K.zst streams):\n"
	"  report [-w] DIR        print every event, all CPUs merged by time:\n"
	"                         [seconds.nanoseconds] cpuN name: field=value, ...\n"
	"                         (text as \"...\" up to its first NUL), losses as\n"
	"                         [seconds.nanoseconds] cpuN -- lost events=N packets=M\n"
	"                         then one summary line per CPU (as check prints)\n"
	"      -w, --wall         add the clock offset: seconds since the epoch\n"
	"                         (default: seconds of CLOCK_MONOTONIC)\n"
	"  check [-v] DIR         validate every packet and event; exit 1 on\n"
	"                         corruption; per CPU: packets, events,\n"
	"                         discarded (events_discarded of the last packet:\n"
	"                         lost since the module was loaded or cleared),\n"
	"                         lost_packets (sequence numbers missing), first\n"
	"                         and last event time, and what a killed writer cut\n"
	"      -v, --verbose      also list every packet\n"
	"  unpack [-f] DIR [OUT]  write plain CTF (metadata + cpuN, whole packets\n"
	"                         only) to OUT (default DIR-ctf), then:\n"
	"                         babeltrace2 OUT\n"
	"      -f, --force        reuse an existing OUT, replacing its streams\n"
	"\n"
	"Commands on the running tracer (root):\n"
	"  stats                  per-CPU counters of ringtrace.ko\n"
	"  start | stop           write 1 or 0 to tracing_on\n"
	"      -d, --debugfs DIR  where debugfs is mounted (default " DEFAULT_DEBUGFS ");\n"
	"                         the files are in DIR/ringtrace.  Without -d,\n"
	"                         " DEV_RINGTRACE " when debugfs refuses them (Secure\n"
	"                         Boot lockdown) or is not mounted\n"
	"\n"
	"  -h, --help             this text (also after a command)\n";

static void usage(int status)
{
	fputs(usage_text, status ? stderr : stdout);
	exit(status);
}

/* Options of one command; exits on --help and on bad usage. */
static int parse_opts(int argc, char **argv, const char *shortopts,
		      const struct option *longopts, int *idx)
{
	int c = getopt_long(argc, argv, shortopts, longopts, idx);

	if (c == 'h')
		usage(0);
	if (c == '?')
		die("bad usage of '%s' (see ringtrace --help)", argv[0]);
	return c;
}

static struct rt_trace *open_trace(const char *dir)
{
	struct rt_error err;
	struct rt_trace *t;

	if (rt_trace_open(dir, &t, &err))
		die("%s", err.msg);
	return t;
}

static void print_summary(const struct rt_trace *t, const struct rt_trace_cpu *c,
			  FILE *f)
{
	const struct rt_stream_stats *st = rt_stream_stats(c->stream);
	char first[48] = "-", last[48] = "-";

	if (st->events) {
		rt_format_ts(first, sizeof(first), t->md, st->first_ts, false);
		rt_format_ts(last, sizeof(last), t->md, st->last_ts, false);
	}
	fprintf(f, "cpu%d: packets=%" PRIu64 " events=%" PRIu64 " discarded=%" PRIu64
		" lost_packets=%" PRIu64 " first=%s last=%s\n", c->cpu, st->packets,
		st->events, st->discarded, st->lost_packets, first, last);
	for (unsigned int i = 0; i < rt_stream_nr_notes(c->stream); i++)
		fprintf(f, "cpu%d: truncated: %s\n", c->cpu,
			rt_stream_note(c->stream, i));
}

/* ---- report ----------------------------------------------------------------- */

struct head {
	struct rt_trace_cpu *c;
	struct rt_item item;
};

static bool head_less(const struct head *a, const struct head *b)
{
	if (a->item.timestamp != b->item.timestamp)
		return a->item.timestamp < b->item.timestamp;
	return a->c->cpu < b->c->cpu;
}

static void sift_down(struct head *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct head tmp;

		if (l < n && head_less(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && head_less(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* Next item worth printing; false at the end of the stream. */
static bool advance(struct head *h)
{
	struct rt_error err;
	int r;

	do {
		r = rt_stream_next(h->c->stream, &h->item, &err);
		if (r < 0)
			die("%s", err.msg);
	} while (r > 0 && h->item.type == RT_ITEM_PACKET);
	return r > 0;
}

static void print_item(const struct rt_trace *t, const struct rt_item *it,
		       bool wall)
{
	char ts[48];

	rt_format_ts(ts, sizeof(ts), t->md, it->timestamp, wall);
	if (it->type == RT_ITEM_LOST) {
		printf("%s cpu%u -- lost events=%" PRIu64 " packets=%" PRIu64 "%s\n",
		       ts, it->cpu, it->lost_events, it->lost_packets,
		       it->lost_first ? " before the first packet" : "");
		return;
	}
	printf("%s cpu%u %s:", ts, it->cpu, it->event->name);
	if (it->nr_fields) {
		putchar(' ');
		rt_print_fields(stdout, it);
	}
	putchar('\n');
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wall", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct head *heap;
	struct rt_trace *t;
	bool wall = false;
	size_t n = 0;
	int c;

	while ((c = parse_opts(argc, argv, "+wh", opts, NULL)) != -1)
		if (c == 'w')
			wall = true;
	if (argc - optind != 1)
		die("report needs one trace directory (see ringtrace --help)");
	t = open_trace(argv[optind]);
	heap = calloc(t->nr_cpus, sizeof(*heap));
	if (!heap)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		heap[n].c = &t->cpus[i];
		if (advance(&heap[n]))
			n++;
	}
	for (size_t i = n / 2; i-- > 0; )
		sift_down(heap, n, i);
	while (n) {
		print_item(t, &heap[0].item, wall);
		if (!advance(&heap[0]))
			heap[0] = heap[--n];
		sift_down(heap, n, 0);
	}
	putchar('\n');
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		print_summary(t, &t->cpus[i], stdout);
	free(heap);
	rt_trace_close(t);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	return 0;
}

/* ---- check -------------------------------------------------------------------- */

static int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool verbose = false, bad = false;
	struct rt_trace *t;
	int c;

	while ((c = parse_opts(argc, argv, "+vh", opts, NULL)) != -1)
		if (c == 'v')
			verbose = true;
	if (argc - optind != 1)
		die("check needs one trace directory (see ringtrace --help)");
	t = open_trace(argv[optind]);
	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		struct rt_trace_cpu *tc = &t->cpus[i];
		struct rt_error err;
		struct rt_item it;
		int r;

		while ((r = rt_stream_next(tc->stream, &it, &err)) > 0) {
			const struct rt_packet_info *p = it.packet;
			char b[48], e[48];

			if (!verbose || it.type != RT_ITEM_PACKET)
				continue;
			rt_format_ts(b, sizeof(b), t->md, p->timestamp_begin, false);
			rt_format_ts(e, sizeof(e), t->md, p->timestamp_end, false);
			printf("  %s offset=%" PRIu64 " seq=%" PRIu64 " events=%u discarded=%" PRIu64
			       " content=%" PRIu64 " size=%" PRIu64 " begin=%s end=%s\n",
			       p->file, p->offset, p->seq, p->events, p->events_discarded,
			       p->content_bytes, p->packet_bytes, b, e);
		}
		if (r < 0) {
			warn("%s", err.msg);
			bad = true;
			continue;
		}
		print_summary(t, tc, stdout);
	}
	rt_trace_close(t);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	return bad;
}

/* ---- unpack ---------------------------------------------------------------- */

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die("%s: %s", path, strerror(errno));
		buf = (const uint8_t *)buf + w;
		len -= w;
	}
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out;
	ssize_t r;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("%s: %s", from, strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		die("%s: %s", to, strerror(errno));
	while ((r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("%s: %s", from, strerror(errno));
		write_all(out, buf, r, to);
	}
	if (close(out))
		die("%s: %s", to, strerror(errno));
	close(in);
}

/* OUT must be new or empty, unless --force: then its old streams go. */
static void prepare_outdir(const char *in, const char *out, bool force)
{
	struct stat si, so;
	struct dirent *de;
	DIR *d;

	if (mkdir(out, 0755) && errno != EEXIST)
		die("%s: %s", out, strerror(errno));
	if (stat(in, &si) || stat(out, &so))
		die("%s: %s", out, strerror(errno));
	if (!S_ISDIR(so.st_mode))
		die("%s: not a directory", out);
	if (si.st_dev == so.st_dev && si.st_ino == so.st_ino)
		die("%s: output must not be the trace directory itself", out);
	d = opendir(out);
	if (!d)
		die("%s: %s", out, strerror(errno));
	while ((de = readdir(d))) {
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!force)
			die("%s: exists and is not empty (use --force to reuse it)", out);
		if (strncmp(de->d_name, "cpu", 3) && strcmp(de->d_name, "metadata"))
			continue;
		if (asprintf(&p, "%s/%s", out, de->d_name) < 0)
			die("out of memory");
		if (unlink(p))
			die("%s: %s", p, strerror(errno));
		free(p);
	}
	closedir(d);
}

static int cmd_unpack(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *out, *meta_in, *meta_out, *tmp = NULL;
	bool force = false;
	struct rt_trace *t;
	const char *in;
	int c;

	while ((c = parse_opts(argc, argv, "+fh", opts, NULL)) != -1)
		if (c == 'f')
			force = true;
	if (argc - optind < 1 || argc - optind > 2)
		die("unpack needs a trace directory and an optional output directory");
	in = argv[optind];
	if (argc - optind == 2) {
		out = strdup(argv[optind + 1]);
	} else {
		size_t l = strlen(in);

		while (l > 1 && in[l - 1] == '/')
			l--;
		if (asprintf(&out, "%.*s-ctf", (int)l, in) < 0)
			out = NULL;
	}
	if (!out)
		die("out of memory");
	t = open_trace(in);
	prepare_outdir(in, out, force);

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		struct rt_trace_cpu *tc = &t->cpus[i];
		struct rt_error err;
		struct rt_item it;
		char *final;
		int fd, r;

		if (asprintf(&tmp, "%s/.cpu%d.tmp", out, tc->cpu) < 0 ||
		    asprintf(&final, "%s/cpu%d", out, tc->cpu) < 0)
			die("out of memory");
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("%s: %s", tmp, strerror(errno));
		while ((r = rt_stream_next(tc->stream, &it, &err)) > 0)
			if (it.type == RT_ITEM_PACKET)
				write_all(fd, it.packet->raw, it.packet->packet_bytes, tmp);
		if (r < 0) {
			unlink(tmp);
			die("%s", err.msg);
		}
		if (close(fd))
			die("%s: %s", tmp, strerror(errno));
		if (rename(tmp, final))
			die("%s: %s", final, strerror(errno));
		for (unsigned int j = 0; j < rt_stream_nr_notes(tc->stream); j++)
			warn("note: %s", rt_stream_note(tc->stream, j));
		free(tmp);
		free(final);
	}
	if (asprintf(&meta_in, "%s/metadata", in) < 0 ||
	    asprintf(&meta_out, "%s/metadata", out) < 0)
		die("out of memory");
	copy_file(meta_in, meta_out);
	printf("unpacked %u stream%s into %s; read it with: babeltrace2 %s\n",
	       t->nr_cpus, t->nr_cpus == 1 ? "" : "s", out, out);
	free(meta_in);
	free(meta_out);
	free(out);
	rt_trace_close(t);
	return 0;
}

/* ---- control files ------------------------------------------------------------ */

/* The ringtrace control directory; the caller frees it. */
static char *debugfs_opts(int argc, char **argv, const char *what)
{
	static const struct option opts[] = {
		{ "debugfs", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = DEFAULT_DEBUGFS;
	bool given = false;
	char *rtdir;
	int c, fd;

	while ((c = parse_opts(argc, argv, "+d:h", opts, NULL)) != -1)
		if (c == 'd') {
			dir = optarg;
			given = true;
		}
	if (optind != argc)
		die("%s takes no arguments (see ringtrace --help)", what);
	if (asprintf(&rtdir, "%s/ringtrace", dir) < 0)
		die("out of memory");
	/*
	 * Secure Boot's lockdown makes debugfs refuse ringtrace's writable
	 * files (EPERM even to read them); the module offers the same files
	 * under /dev/ringtrace.
	 */
	if (!given && access(DEV_RINGTRACE, F_OK) == 0) {
		char *probe;

		if (asprintf(&probe, "%s/tracing_on", rtdir) < 0)
			die("out of memory");
		fd = open(probe, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		free(probe);
		if (fd < 0) {
			free(rtdir);
			rtdir = strdup(DEV_RINGTRACE);
			if (!rtdir)
				die("out of memory");
		}
	}
	return rtdir;
}

static void control_error(const char *path)
{
	if (errno == ENOENT)
		die("%s: %s (is ringtrace.ko loaded and debugfs mounted?)", path,
		    strerror(errno));
	die("%s: %s", path, strerror(errno));
}

/* Contents of a small control file, without the trailing newline. */
static char *read_control(const char *dir, const char *name, bool must)
{
	char *path, *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		die("out of memory");
	f = fopen(path, "re");
	if (!f) {
		if (must)
			control_error(path);
		free(path);
		return NULL;
	}
	if (getdelim(&buf, &len, '\0', f) < 0) {
		if (ferror(f))
			die("%s: %s", path, strerror(errno));
		free(buf);
		buf = strdup("");
		if (!buf)
			die("out of memory");
	}
	fclose(f);
	free(path);
	len = strlen(buf);
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return buf;
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

static int cmd_stats(int argc, char **argv)
{
	static const char *const lost[] = {
		"lost_full", "lost_overrun", "lost_held", "lost_nested", "lost_too_big",
	};
	char *dir = debugfs_opts(argc, argv, "stats");
	char cols[MAX_COLS][32], *text, *line, *save = NULL;
	static const char *const ctl[] = {
		"tracing_on", "mode", "subbuf_size", "num_subbufs",
	};
	unsigned int nr_cols = 0, nr_rows = 0, width[MAX_COLS + 2];
	struct row *rows = NULL, total = { .name = "total" };
	int w_idx = -1, d_idx = -1, l_idx[5];
	bool pending = true;

	for (size_t i = 0; i < ARRAY_SIZE(ctl); i++) {
		char *v = read_control(dir, ctl[i], false);

		if (v)
			printf("%s%s=%s", i ? " " : "", ctl[i], v);
		free(v);
	}
	putchar('\n');

	text = read_control(dir, "stats", true);
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
	free(dir);
	return 0;
}

static int cmd_tracing(int argc, char **argv, const char *value)
{
	char *dir = debugfs_opts(argc, argv, argv[0]);
	char *path;
	int fd;

	if (asprintf(&path, "%s/tracing_on", dir) < 0)
		die("out of memory");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		control_error(path);
	if (write(fd, value, strlen(value)) < 0)
		die("%s: %s", path, strerror(errno));
	if (close(fd))
		die("%s: %s", path, strerror(errno));
	free(path);
	free(dir);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c;

	while ((c = parse_opts(argc, argv, "+h", opts, NULL)) != -1)
		;
	if (optind >= argc)
		usage(1);
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0;	/* restart getopt for the command's options */

	if (!strcmp(cmd, "report"))
		return cmd_report(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "unpack"))
		return cmd_unpack(argc, argv);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(argc, argv);
	if (!strcmp(cmd, "start"))
		return cmd_tracing(argc, argv, "1\n");
	if (!strcmp(cmd, "stop"))
		return cmd_tracing(argc, argv, "0\n");
	if (!strcmp(cmd, "help"))
		usage(0);
	die("unknown command '%s' (see ringtrace --help)", cmd);
}
