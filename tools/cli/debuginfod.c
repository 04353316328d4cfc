// SPDX-License-Identifier: GPL-2.0
/*
 * Debug files by build-id from debuginfod (debuginfod.h).  One
 * libdebuginfod client for the process, begun on the first lookup (none
 * when lookups are off); each build-id and kind asked once, the answer
 * (a path in the client's cache, or an error) kept for the later asks,
 * so a report with a thousand frames of one missing binary asks once and
 * warns once.
 *
 * libdebuginfod returns -errno and nothing else on a failure.  What the
 * server said (its HTTP status line, or curl's error) is only in the
 * client's verbose log, so the log goes to a memfd, read back after each
 * failed lookup: its format is not an interface, and when nothing there is
 * recognised the reason is strerror()'s.
 *
 * A file that arrives is checked before it is handed out: ELF, with an
 * NT_GNU_BUILD_ID note equal to the build-id asked.  One that fails (a
 * server answering garbage, a truncated file, another binary's) is said
 * like a miss and removed from the client's cache, so that a later report
 * asks again.
 */
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../lib/usyms.h"
#include "cli.h"
#include "debuginfod.h"

/* Our bound on a build-id: GNU's are 20 bytes, the kernel takes up to 20. */
#define BUILD_ID_MAX	64
/* The verbose log of one lookup: a few dozen lines; more is not read. */
#define LOG_MAX		(64 * 1024)

enum kind { DEBUGINFO, EXECUTABLE };

static const char *const kind_name[] = {
	[DEBUGINFO] = "debug file",
	[EXECUTABLE] = "executable",
};

struct answer {
	enum kind kind;
	uint8_t id[BUILD_ID_MAX];
	size_t len;
	int err;			/* 0: found at path */
	char *path;
};

static struct {
	bool disabled, begun;
	debuginfod_client *client;
	int log_fd;			/* the client's verbose log, a memfd */
	struct answer *answers;
	size_t nr, cap;
	bool downloading;		/* this lookup's line printed */
	unsigned long lookups;		/* dbginfo_lookups() */
	const char *hex;		/* for the progress line */
	enum kind kind;
} dbg = { .log_fd = -1 };

void dbginfo_disable(void)
{
	dbg.disabled = true;
}

bool dbginfo_enabled(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return !dbg.disabled && urls && *urls;
}

/*
 * Called by libdebuginfod while it waits and while it receives: the line
 * goes out once a server has answered with the file (the client knows its
 * URL only then), so a 404 prints nothing.
 */
static int progress(debuginfod_client *c, long done, long total)
{
	const char *url = debuginfod_get_url(c);

	(void)done;
	(void)total;
	if (!dbg.downloading && url) {
		info("downloading the %s of build-id %s from %s", kind_name[dbg.kind],
		     dbg.hex, url);
		dbg.downloading = true;
	}
	return 0;
}

/* The client, begun on the first lookup; NULL if it cannot be. */
static debuginfod_client *client(void)
{
	if (dbg.begun)
		return dbg.client;
	dbg.begun = true;
	dbg.client = debuginfod_begin();
	if (!dbg.client) {
		warn("debuginfod: the client cannot start: user frames are named from the trace alone");
		return NULL;
	}
	dbg.log_fd = memfd_create("ringtrace-debuginfod", MFD_CLOEXEC);
	if (dbg.log_fd >= 0)
		debuginfod_set_verbose_fd(dbg.client, dbg.log_fd);
	if (isatty(STDERR_FILENO))
		debuginfod_set_progressfn(dbg.client, progress);
	return dbg.client;
}

/* @line after @prefix, or NULL when it does not start with it. */
static const char *after(const char *line, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(line, prefix, n) ? NULL : line + n;
}

/*
 * What the servers said, from the verbose log, into @why: the last HTTP
 * status line of an error (4xx, 5xx: "404 Not Found"), else the last
 * transfer error ("Failed to connect to ..."), else, for a miss no server
 * was asked about, the client cache's answer.  False if none of these.
 */
static bool server_reason(int err, char *why, size_t size)
{
	char *log, *line, *save = NULL;
	char status[256] = "", transfer[256] = "";
	bool asked = false;
	ssize_t n;

	if (dbg.log_fd < 0 || !(log = malloc(LOG_MAX + 1)))
		return false;
	n = pread(dbg.log_fd, log, LOG_MAX, 0);
	/* Emptied for the next lookup; the client writes at the file offset. */
	if (ftruncate(dbg.log_fd, 0) || lseek(dbg.log_fd, 0, SEEK_SET))
		n = -1;
	log[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *s;

		line[strcspn(line, "\r")] = '\0';
		if ((s = after(line, "header HTTP/"))) {
			/* "1.1 404 Not Found": the code and the reason. */
			s += strcspn(s, " ");
			s += strspn(s, " ");
			if (*s == '4' || *s == '5')
				snprintf(status, sizeof(status), "%s", s);
		} else if ((s = after(line, "url ")) && (s += strspn(s, "0123456789"), *s == ' ')) {
			/* "url 0 http://...": asked; "url 0 Failed to ...": an error. */
			if (strstr(s, "://") && !strchr(s + 1, ' '))
				asked = true;
			else
				snprintf(transfer, sizeof(transfer), "%s", s + 1);
		}
	}
	free(log);
	if (*status)
		snprintf(why, size, "the server answered %s", status);
	else if (*transfer)
		snprintf(why, size, "%s", transfer);
	else if (!asked && err == -ENOENT)
		snprintf(why, size, "not found (a miss the client's cache keeps from an earlier lookup)");
	else
		return false;
	return true;
}

/* Whether ELF @fd carries the build-id @id; else the reason in @why. */
static bool check_file(int fd, const uint8_t *id, size_t len, char *why, size_t size)
{
	const void *got;
	ssize_t got_len;
	bool match;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			snprintf(why, size, "not an ELF file");
		else
			snprintf(why, size, "not an ELF file (%s)", elf_errmsg(-1));
		elf_end(elf);
		return false;
	}
	/* elfutils' own reader: the note section, else the note segment. */
	got_len = dwelf_elf_gnu_build_id(elf, &got);
	match = got_len > 0 && (size_t)got_len == len && !memcmp(got, id, len);
	elf_end(elf);
	if (got_len <= 0)
		snprintf(why, size, "an ELF file without a build-id");
	else if (!match)
		snprintf(why, size, "the ELF file of another build-id");
	return match;
}

/*
 * Whether @path is where the client caches @kind of build-id @hex
 * (".../HEX/debuginfo"): only such a file is removed when it is bad.
 */
static bool in_cache(const char *path, const char *hex, enum kind kind)
{
	static const char *const file[] = {
		[DEBUGINFO] = "debuginfo",
		[EXECUTABLE] = "executable",
	};
	size_t n = path ? strlen(path) : 0, f = strlen(file[kind]), h = strlen(hex);

	return n > f + h + 1 && !strcmp(path + n - f, file[kind]) &&
	       path[n - f - 1] == '/' && !strncmp(path + n - f - 1 - h, hex, h) &&
	       path[n - f - h - 2] == '/';
}

/* @a filled by asking the servers: a checked path, or an error said once. */
static void ask(struct answer *a)
{
	char hex[2 * BUILD_ID_MAX + 1], why[512];
	debuginfod_client *c = client();
	char *path = NULL;
	int fd;

	if (!c) {
		a->err = -ENOSYS;
		return;
	}
	usyms_hex(a->id, a->len, hex);
	dbg.hex = hex;
	dbg.kind = a->kind;
	dbg.downloading = false;
	if (a->kind == DEBUGINFO)
		fd = debuginfod_find_debuginfo(c, a->id, (int)a->len, &path);
	else
		fd = debuginfod_find_executable(c, a->id, (int)a->len, &path);
	if (fd < 0) {
		if (!server_reason(fd, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-fd));
		warn("build-id %s: no %s from debuginfod: %s", hex, kind_name[a->kind], why);
		free(path);
		a->err = fd;
		return;
	}
	server_reason(0, why, sizeof(why));	/* empties the log */
	if (!check_file(fd, a->id, a->len, why, sizeof(why))) {
		bool cached = in_cache(path, hex, a->kind);

		warn("build-id %s: debuginfod's %s %s is %s%s", hex, kind_name[a->kind],
		     path ? path : "", why, cached && !unlink(path) ? ": removed from the cache" : "");
		close(fd);
		free(path);
		a->err = -EINVAL;
		return;
	}
	close(fd);
	a->path = path;
	a->err = path ? 0 : -ENOENT;
}

static int find(enum kind kind, const uint8_t *id, size_t len, char **path)
{
	struct answer *a = NULL;
	int fd;

	*path = NULL;
	if (!dbginfo_enabled())
		return -ENOSYS;
	dbg.lookups++;
	if (!len || len > BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < dbg.nr && !a; i++)
		if (dbg.answers[i].kind == kind && dbg.answers[i].len == len &&
		    !memcmp(dbg.answers[i].id, id, len))
			a = &dbg.answers[i];
	if (!a) {
		if (dbg.nr == dbg.cap) {
			size_t cap = dbg.cap ? 2 * dbg.cap : 16;
			struct answer *p = realloc(dbg.answers, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			dbg.answers = p;
			dbg.cap = cap;
		}
		a = &dbg.answers[dbg.nr++];
		*a = (struct answer){ .kind = kind, .len = len };
		memcpy(a->id, id, len);
		ask(a);
	}
	if (a->err)
		return a->err;
	fd = open(a->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*path = strdup(a->path);
	if (!*path) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

unsigned long dbginfo_lookups(void)
{
	return dbg.lookups;
}

int dbginfo_find(const uint8_t *build_id, size_t len, char **path)
{
	return find(DEBUGINFO, build_id, len, path);
}

int dbginfo_find_executable(const uint8_t *build_id, size_t len, char **path)
{
	return find(EXECUTABLE, build_id, len, path);
}

void dbginfo_end(void)
{
	for (size_t i = 0; i < dbg.nr; i++)
		free(dbg.answers[i].path);
	free(dbg.answers);
	if (dbg.client)
		debuginfod_end(dbg.client);
	if (dbg.log_fd >= 0)
		close(dbg.log_fd);
	dbg = (typeof(dbg)){ .log_fd = -1 };
}
