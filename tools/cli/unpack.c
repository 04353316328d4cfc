// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace unpack: a trace directory as plain CTF 1.8 for babeltrace2:
 * metadata plus one cpuN file per CPU, whole packets only.
 *
 * All of it is written into a temporary directory next to OUT and renamed
 * to OUT at the end: a failure leaves nothing behind.  OUT holds a list of
 * what unpack wrote (.ringtrace-unpack); --force replaces an OUT that
 * holds only those files, and nothing else.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "../../lib/chunk.h"
#include "../../lib/clockfile.h"
#include "../../lib/usyms.h"

#define LIST_NAME	".ringtrace-unpack"

struct unpack {
	const char *in, *out;
	char tmp[PATH_MAX];
	FILE *list;			/* the names written, in tmp */
};

/* Remove the temporary directory and what is in it (a failure's exit). */
static struct unpack *cleanup_on_die;

/* @dir and what is in it: files, and the symbol store's two levels. */
static void remove_depth(const char *dir, int depth)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (depth && !lstat(path, &st) && S_ISDIR(st.st_mode))
			remove_depth(path, depth - 1);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void remove_tree(const char *dir)
{
	remove_depth(dir, 2);
}

static void die_hook(void)
{
	if (cleanup_on_die && cleanup_on_die->tmp[0])
		remove_tree(cleanup_on_die->tmp);
}

static int create(struct unpack *u, const char *name, bool listed)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", u->tmp, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	if (listed)
		fprintf(u->list, "%s\n", name);
	return fd;
}

static void put(int fd, const void *buf, size_t len, const char *what)
{
	int err = write_all(fd, buf, len);

	if (err)
		die("%s: %s", what, strerror(-err));
}

/*
 * DIR/@name as it is; one that may be absent (@optional) may be; @listed:
 * its name goes in the list of what unpack wrote.
 */
static void copy_file(struct unpack *u, const char *name, bool optional,
		      bool listed)
{
	char from[PATH_MAX + 32], buf[65536];
	int in, out;
	ssize_t r;

	snprintf(from, sizeof(from), "%s/%s", u->in, name);
	/* A regular file only: a FIFO in its place would hang the copy. */
	in = rt_open_regular(AT_FDCWD, from, NULL);
	if (in == -ENOENT && optional)
		return;
	if (in < 0)
		die("%s: %s", from, in == -EINVAL ? "not a regular file" : strerror(-in));
	out = create(u, name, listed);
	while ((r = read(in, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("%s: %s", from, strerror(errno));
		put(out, buf, (size_t)r, name);
	}
	if (fsync(out) || close(out))
		die("%s: %s", name, strerror(errno));
	close(in);
}

static bool all_hex(const char *s, size_t min, size_t max)
{
	size_t n = strspn(s, "0123456789abcdef");

	return !s[n] && n >= min && n <= max;
}

/*
 * The symbol store (lib/usyms.h), its files as they are (ours, not CTF:
 * readers check them): only names of its layout, no temporary file.
 */
static void copy_store(struct unpack *u)
{
	char from[PATH_MAX + 96], to[PATH_MAX + 96], sub[32];
	struct dirent *de, *fe;
	struct stat sst;
	DIR *d, *f;

	snprintf(from, sizeof(from), "%s/" USYMS_DIR, u->in);
	if (lstat(from, &sst) || !S_ISDIR(sst.st_mode))
		return;			/* none (a link is not followed) */
	d = opendir(from);
	if (!d)
		die("%s: %s", from, strerror(errno));
	snprintf(to, sizeof(to), "%s/" USYMS_DIR, u->tmp);
	if (mkdir(to, 0755))
		die("%s: %s", to, strerror(errno));
	fprintf(u->list, "%s\n", USYMS_DIR);
	while ((de = readdir(d))) {
		if (!all_hex(de->d_name, 2, 2))
			continue;
		snprintf(sub, sizeof(sub), USYMS_DIR "/%.2s", de->d_name);
		snprintf(from, sizeof(from), "%s/%s", u->in, sub);
		f = opendir(from);
		if (!f)
			continue;		/* not a directory */
		if (lstat(from, &sst) || !S_ISDIR(sst.st_mode)) {
			closedir(f);
			continue;		/* a link: not followed */
		}
		snprintf(to, sizeof(to), "%s/%s", u->tmp, sub);
		if (mkdir(to, 0755))
			die("%s: %s", to, strerror(errno));
		while ((fe = readdir(f))) {
			char name[96];

			struct stat st;

			if (!all_hex(fe->d_name, 2, 2 * USYMS_BUILD_ID_MAX - 2) ||
			    fstatat(dirfd(f), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISREG(st.st_mode))
				continue;	/* not a store file: no link followed */
			snprintf(name, sizeof(name), "%s/%.40s", sub, fe->d_name);
			copy_file(u, name, false, false);
		}
		closedir(f);
	}
	closedir(d);
}

/* Every packet of one CPU, verbatim: a damaged one is never written. */
static void unpack_cpu(struct unpack *u, const struct rt_trace *t,
		       struct rt_trace_cpu *tc)
{
	char name[32];
	struct rt_error err;
	struct rt_item it;
	int fd, r;

	snprintf(name, sizeof(name), "cpu%d", tc->cpu);
	fd = create(u, name, true);
	while ((r = rt_stream_next(tc->stream, &it, &err)) > 0)
		if (it.type == RT_ITEM_PACKET)
			put(fd, it.packet->raw, it.packet->content_bytes, name);
	if (r < 0)
		die("%s", err.msg);
	if (fsync(fd) || close(fd))
		die("%s: %s", name, strerror(errno));
	for (unsigned int j = 0; j < rt_stream_nr_notes(tc->stream); j++) {
		const char *note = rt_stream_note(tc->stream, j);

		if (!note) {
			warn("note: %s: %u more, not described",
			     name, rt_stream_nr_notes(tc->stream) - j);
			break;
		}
		warn("note: %s", note);
	}
	(void)t;
}

/*
 * What to do with an existing OUT: nothing if it does not exist; with
 * --force, remove it if it holds only what an earlier unpack listed.
 */
static void clear_previous(const char *out, bool force)
{
	char path[PATH_MAX + 256], line[256];
	struct dirent *de;
	struct stat st;
	unsigned int listed = 0, other = 0;
	FILE *f;
	DIR *d;

	if (lstat(out, &st)) {
		if (errno == ENOENT)
			return;
		die("%s: %s", out, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		die("%s: exists and is not a directory", out);
	if (!force)
		die("%s: exists (--force replaces an earlier unpack)", out);
	snprintf(path, sizeof(path), "%s/%s", out, LIST_NAME);
	f = fopen(path, "re");
	d = opendir(out);
	if (!d)
		die("%s: %s", out, strerror(errno));
	/* Only names in the list, and the list itself. */
	while ((de = readdir(d))) {
		bool found = false;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, LIST_NAME))
			continue;
		if (f) {
			rewind(f);
			while (!found && fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = '\0';
				found = !strcmp(line, de->d_name);
			}
		}
		if (found)
			listed++;
		else
			other++;
	}
	closedir(d);
	if (f)
		fclose(f);
	if (other)
		die("%s: holds %u file%s that unpack did not write: not replacing it",
		    out, other, other == 1 ? "" : "s");
	remove_tree(out);
	if (!access(out, F_OK))
		die("%s: could not remove the earlier unpack", out);
	(void)listed;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "strict", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct unpack u = { 0 };
	char *dflt = NULL, *slash;
	bool force = false, strict = false;
	unsigned int damaged;
	struct rt_trace *t;
	int c, dirfd;

	while ((c = cmd_getopt(argc, argv, "fh", opts)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == 's')
			strict = true;
	}
	if (argc - optind < 1 || argc - optind > 2)
		usage_error("a trace directory and an optional output directory are needed");
	u.in = argv[optind];
	if (argc - optind == 2) {
		u.out = argv[optind + 1];
	} else {
		size_t l = strlen(u.in);

		while (l > 1 && u.in[l - 1] == '/')
			l--;
		if (asprintf(&dflt, "%.*s-ctf", (int)l, u.in) < 0)
			die("out of memory");
		u.out = dflt;
	}
	t = open_trace(u.in, strict);
	if (!t) {
		free(dflt);
		return 1;
	}

	/* A sibling of OUT, so that the final rename stays in one file system. */
	snprintf(u.tmp, sizeof(u.tmp), "%s.unpack-XXXXXX", u.out);
	if (!mkdtemp(u.tmp))
		die("%s: %s", u.tmp, strerror(errno));
	cleanup_on_die = &u;
	set_die_hook(die_hook);
	{
		char list[PATH_MAX + 32];

		snprintf(list, sizeof(list), "%s/%s", u.tmp, LIST_NAME);
		u.list = fopen(list, "we");
		if (!u.list)
			die("%s: %s", list, strerror(errno));
	}
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		unpack_cpu(&u, t, &t->cpus[i]);
	copy_file(&u, "metadata", false, true);
	/*
	 * The kernel's symbols, the recording's end clock and the binaries,
	 * hidden from CTF readers, for report and sql.
	 */
	copy_file(&u, KSYMS_FILE, true, true);
	copy_file(&u, CLOCK_FILE, true, true);
	copy_store(&u);
	if (fflush(u.list) || fsync(fileno(u.list)) || fclose(u.list))
		die("%s: %s", LIST_NAME, strerror(errno));
	u.list = NULL;

	clear_previous(u.out, force);
	if (rename(u.tmp, u.out))
		die("%s: %s", u.out, strerror(errno));
	cleanup_on_die = NULL;
	/* The rename is durable once the parent directory is. */
	slash = strrchr(u.tmp, '/');
	if (slash) {
		*slash = '\0';
		dirfd = open(u.tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dirfd >= 0) {
		fsync(dirfd);
		close(dirfd);
	}
	printf("unpacked %u stream%s into %s; read it with: babeltrace2 %s\n",
	       t->nr_cpus, t->nr_cpus == 1 ? "" : "s", u.out, u.out);
	damaged = damage_report(t);
	rt_trace_close(t);
	free(dflt);
	return damaged ? EXIT_DAMAGED : 0;
}

const struct command cmd_unpack = {
	.name = "unpack",
	.summary = "write a trace as plain CTF 1.8 for babeltrace2",
	.help =
"Usage: ringtrace unpack [-f] DIR [OUT]\n"
"\n"
"Write the trace directory DIR as plain CTF 1.8 (metadata and one cpuN\n"
"file per CPU, whole packets only; the kernel symbols of a trace with\n"
"stacks and its symbol store of user binaries, hidden) to OUT (default\n"
"DIR-ctf), then:\n"
"babeltrace2 OUT.  Everything is written into a temporary directory next\n"
"to OUT and renamed at the end: a failure leaves nothing behind.\n"
"\n"
"  -f, --force     replace OUT if it holds an earlier unpack's files and\n"
"                  nothing else (never a directory with other files)\n"
"      --strict    damage in the trace is an error, and nothing is written\n"
"                  (default: damaged packets are left out, stderr says\n"
"                  what was skipped, exit status 3)\n"
"  -h, --help      this text\n",
	.run = run,
};
