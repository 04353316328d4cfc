// SPDX-License-Identifier: GPL-2.0
/* The restore file of `ringtrace record` (ctlsave.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctlsave.h"
#include "msg.h"

#define MAGIC		"ringtrace-restore 2\n"
/* A restore file is a few KiB; anything near this is not ours. */
#define MAX_FILE	(16 << 20)

/* The control files record writes (ctlsave_name_ok()). */
static const char *const names[] = {
	"tracing_on", "mode", "subbuf_size", "num_subbufs", "set_event",
	"set_event_stack", "set_event_pid", "set_event_cgroup", "event_fork",
	"stack_depth", "set_event_ustack", "ustack_depth", "ustack_mode",
	"ustack_size", "mmap_dump", "mmap_events", "sample_hz",
};

bool ctlsave_name_ok(const char *name)
{
	const char *ev, *slash;
	size_t len;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	/* events/EVENT/filter or trigger: EVENT one component, no ".." */
	if (strncmp(name, "events/", 7))
		return false;
	ev = name + 7;
	slash = strchr(ev, '/');
	if (!slash || (strcmp(slash, "/filter") && strcmp(slash, "/trigger")))
		return false;
	len = (size_t)(slash - ev);
	if (!len || (len <= 2 && !strncmp(ev, "..", len)))
		return false;
	for (const char *p = ev; p < slash; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *p))
			return false;
	return true;
}

static void add_to(struct ctlsave_write **list, size_t *n, const char *name,
		   const char *value)
{
	struct ctlsave_write *more = realloc(*list, (*n + 1) * sizeof(**list));

	if (!more)
		die("out of memory");
	*list = more;
	more[*n].name = strdup(name);
	more[*n].value = strdup(value);
	if (!more[*n].name || !more[*n].value)
		die("out of memory");
	(*n)++;
}

static void free_list(struct ctlsave_write **list, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free((*list)[i].name);
		free((*list)[i].value);
	}
	free(*list);
	*list = NULL;
	*n = 0;
}

void ctlsave_add(struct ctlsave *s, const char *name, const char *value)
{
	if (!ctlsave_name_ok(name))
		die("the restore file cannot hold '%s'", name);
	add_to(&s->w, &s->n, name, value);
}

void ctlsave_free(struct ctlsave *s)
{
	free_list(&s->w, &s->n);
	free_list(&s->set, &s->nset);
}

/*
 * The trace uuid of the module's metadata: a new one at every load, so
 * it tells the module record changed from one loaded since.
 */
static int module_uuid(const struct ctl *c, char *uuid, size_t size)
{
	char *text = ctl_read_alloc(c, "metadata"), *t, *u, *end;
	int err = -EPROTO;

	if (!text)
		return -errno;
	t = strstr(text, "\ntrace {");
	u = t ? strstr(t, "uuid = \"") : NULL;
	end = u ? strchr(u + 8, '"') : NULL;
	if (end && (size_t)(end - u - 8) < size) {
		snprintf(uuid, size, "%.*s", (int)(end - u - 8), u + 8);
		err = 0;
	}
	free(text);
	return err;
}

static int read_all(int fd, char **text, size_t *len)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_size > MAX_FILE)
		return -EFBIG;
	*text = malloc((size_t)st.st_size + 1);
	if (!*text)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		n = pread(fd, *text + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	(*text)[got] = '\0';
	*len = got;
	return 0;
}

pid_t ctlsave_owner(int fd)
{
	char *text, *p;
	size_t len;
	long pid = 0;

	if (read_all(fd, &text, &len))
		return 0;
	p = strstr(text, "\npid ");
	if (p)
		pid = strtol(p + 5, NULL, 10);
	free(text);
	return pid > 0 ? (pid_t)pid : 0;
}

/* Root's own, written by nobody else: else a sentence in @why. */
static bool trusted(const struct stat *st, const char *what, char *why,
		    size_t size)
{
	if (st->st_uid != geteuid())
		snprintf(why, size, "%s belongs to uid %u, not %u", what,
			 (unsigned int)st->st_uid, (unsigned int)geteuid());
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, size, "%s is writable by others (mode %04o)",
			 what, (unsigned int)(st->st_mode & 07777));
	else
		return true;
	return false;
}

int ctlsave_lock_at(const char *dir, bool create, pid_t *owner, char *why,
		    size_t size)
{
	char path[PATH_MAX];
	struct stat st;
	int dfd, fd, err;

	if (owner)
		*owner = 0;
	if (create && mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		snprintf(why, size, "%s: %s", dir, strerror(-err));
		return err;
	}
	/* Not through a link: whoever made one could point it anywhere. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		err = errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
		snprintf(why, size, "%s: %s", dir, err == -EPERM ?
			 "not a directory (a link?)" : strerror(-err));
		return err;
	}
	if (fstat(dfd, &st) || !trusted(&st, dir, why, size)) {
		close(dfd);
		return -EPERM;
	}
	fd = openat(dfd, CTLSAVE_NAME, O_RDWR | O_CLOEXEC | O_NOFOLLOW |
		    (create ? O_CREAT : 0), 0600);
	err = fd < 0 ? -errno : 0;
	close(dfd);
	if (err == -ELOOP) {
		snprintf(why, size, "%s/%s is a link", dir, CTLSAVE_NAME);
		return -EPERM;
	}
	if (err) {
		snprintf(why, size, "%s/%s: %s", dir, CTLSAVE_NAME, strerror(-err));
		return err;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, CTLSAVE_NAME);
	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, size, "%s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    !trusted(&st, path, why, size)) {
		if (!S_ISREG(st.st_mode))
			snprintf(why, size, "%s is not a file", path);
		else if (st.st_nlink != 1)
			snprintf(why, size, "%s has %lu links, not 1", path,
				 (unsigned long)st.st_nlink);
		close(fd);
		return -EPERM;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EINTR)
			continue;
		if (err == -EWOULDBLOCK && owner)
			*owner = ctlsave_owner(fd);
		snprintf(why, size, "%s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

int ctlsave_lock(bool create, pid_t *owner, char *why, size_t size)
{
	return ctlsave_lock_at(CTLSAVE_DIR, create, owner, why, size);
}

/* @list as "KEY NAME LEN\nVALUE\n" entries, at @text + *@used. */
static void put_list(char *text, size_t len, size_t *used, const char *key,
		     const struct ctlsave_write *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*used += (size_t)snprintf(text + *used, len - *used,
					  "%s %s %zu\n%s\n", key, list[i].name,
					  strlen(list[i].value), list[i].value);
}

static size_t list_len(const struct ctlsave_write *list, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += strlen(list[i].name) + strlen(list[i].value) + 32;
	return len;
}

static int write_at(int fd, const char *text, size_t len, off_t at)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = pwrite(fd, text + off, len - off, at + (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

int ctlsave_store(int fd, const struct ctl *c, struct ctlsave *s)
{
	size_t len = strlen(MAGIC) + 128 + list_len(s->w, s->n) +
		     list_len(s->set, s->nset), used;
	char *text;
	int err;

	err = module_uuid(c, s->module, sizeof(s->module));
	if (err)
		return err;
	text = malloc(len);
	if (!text)
		return -ENOMEM;
	used = (size_t)snprintf(text, len, MAGIC "pid %d\nmodule %s\n",
				(int)s->pid, s->module);
	put_list(text, len, &used, "write", s->w, s->n);
	used += (size_t)snprintf(text + used, len - used, "end\n");
	put_list(text, len, &used, "set", s->set, s->nset);
	/* Without its "end", what a kill leaves half written owes nothing. */
	err = ftruncate(fd, 0) ? -errno : 0;
	if (!err)
		err = write_at(fd, text, used, 0);
	free(text);
	return err;
}

int ctlsave_mark_set(int fd, const struct ctl *c, struct ctlsave *s)
{
	size_t len, used = 0, first = s->nset;
	struct stat st;
	char *text;
	int err;

	for (size_t i = 0; i < s->n; i++) {
		const char *name = s->w[i].name;
		bool seen = !strcmp(name, "tracing_on");
		char *now;

		for (size_t j = 0; j < s->nset && !seen; j++)
			seen = !strcmp(s->set[j].name, name);
		if (seen)
			continue;
		/* Unread, it goes back whatever it holds. */
		now = ctl_read_alloc(c, name);
		if (!now)
			continue;
		add_to(&s->set, &s->nset, name, now);
		free(now);
	}
	len = list_len(s->set + first, s->nset - first) + 1;
	text = malloc(len);
	if (!text)
		return -ENOMEM;
	put_list(text, len, &used, "set", s->set + first, s->nset - first);
	/*
	 * Appended after "end": the writes stay whole whenever a kill cuts
	 * this short, and an entry cut short is left out.
	 */
	err = fstat(fd, &st) ? -errno : write_at(fd, text, used, st.st_size);
	free(text);
	return err;
}

/* How far an element of the text got: whole, cut short by its end, wrong. */
enum took { TOOK, CUT, BAD };

/* The text at *@p, before @end, being read. */
struct rd {
	char *p, *end;
};

/*
 * A "KEY REST\n" line: REST in *@rest (its newline made a NUL), the cursor
 * past it.  CUT when the text ends inside it; BAD when it is another line.
 */
static enum took key_line(struct rd *r, const char *key, char **rest)
{
	size_t k = strlen(key), left = (size_t)(r->end - r->p);
	char *nl;

	if (left <= k)
		return !strncmp(r->p, key, left) ? CUT : BAD;
	if (strncmp(r->p, key, k) || r->p[k] != ' ')
		return BAD;
	nl = memchr(r->p + k + 1, '\n', left - k - 1);
	if (!nl)
		return CUT;
	*nl = '\0';
	*rest = r->p + k + 1;
	r->p = nl + 1;
	return TOOK;
}

/* An entry "KEY NAME LEN\nVALUE\n": its name and value, NUL-terminated. */
static enum took entry(struct rd *r, const char *key, char **name,
		       char **value)
{
	unsigned long long n;
	char *rest, *sp, *end;
	enum took t = key_line(r, key, &rest);

	if (t != TOOK)
		return t;
	sp = strrchr(rest, ' ');
	if (!sp || sp == rest)
		return BAD;
	*sp = '\0';
	if (!ctlsave_name_ok(rest))
		return BAD;
	errno = 0;
	n = strtoull(sp + 1, &end, 10);
	if (errno || *end || sp[1] < '0' || sp[1] > '9')
		return BAD;
	if (n >= (unsigned long long)(r->end - r->p))
		return CUT;
	if (r->p[n] != '\n')
		return BAD;
	r->p[n] = '\0';
	*name = rest;
	*value = r->p;
	r->p += n + 1;
	return TOOK;
}

/*
 * Parses @text into @s: TOOK when its writes are whole ("end" read), CUT
 * when the text ends before, BAD where it is not a restore file.
 */
static enum took parse(char *text, size_t len, struct ctlsave *s)
{
	struct rd r = { text, text + len };
	char *v, *name, *end;
	enum took t;
	long pid;

	if (len < strlen(MAGIC))
		return !strncmp(text, MAGIC, len) ? CUT : BAD;
	if (strncmp(text, MAGIC, strlen(MAGIC)))
		return BAD;
	r.p += strlen(MAGIC);
	if ((t = key_line(&r, "pid", &v)) != TOOK)
		return t;
	errno = 0;
	pid = strtol(v, &end, 10);
	if (errno || pid <= 0 || *end || pid != (pid_t)pid)
		return BAD;
	s->pid = (pid_t)pid;
	if ((t = key_line(&r, "module", &v)) != TOOK)
		return t;
	if (strlen(v) >= sizeof(s->module))
		return BAD;
	snprintf(s->module, sizeof(s->module), "%s", v);
	while ((t = entry(&r, "write", &name, &v)) == TOOK)
		add_to(&s->w, &s->n, name, v);
	if (t == CUT)
		return CUT;
	/* Not a write: the end of them. */
	if ((size_t)(r.end - r.p) < 4)
		return !strncmp(r.p, "end\n", (size_t)(r.end - r.p)) ? CUT : BAD;
	if (strncmp(r.p, "end\n", 4))
		return BAD;
	r.p += 4;
	/*
	 * The files as record set them: one entry each, of a file written
	 * back.  One cut short is left out: its file goes back whatever it
	 * holds.
	 */
	while (r.p < r.end) {
		bool written = false;

		t = entry(&r, "set", &name, &v);
		if (t == CUT)
			break;
		if (t == BAD)
			return BAD;
		for (size_t i = 0; i < s->n && !written; i++)
			written = !strcmp(s->w[i].name, name);
		for (size_t i = 0; i < s->nset && written; i++)
			written = strcmp(s->set[i].name, name) != 0;
		if (!written)
			return BAD;
		add_to(&s->set, &s->nset, name, v);
	}
	return TOOK;
}

int ctlsave_load(int fd, const struct ctl *c, struct ctlsave *s)
{
	char *text, uuid[sizeof(s->module)];
	enum took t;
	size_t len;
	int err;

	memset(s, 0, sizeof(*s));
	err = read_all(fd, &text, &len);
	if (err)
		return err;
	/* NULs inside: not text, not ours. */
	t = strlen(text) != len ? BAD : parse(text, len, s);
	free(text);
	if (t != TOOK) {
		ctlsave_free(s);
		/* Empty, or cut short before record changed anything. */
		return t == CUT ? 0 : -EPROTO;
	}
	/* Reloaded since: what record set went with the old module. */
	if (module_uuid(c, uuid, sizeof(uuid)) || strcmp(uuid, s->module)) {
		ctlsave_free(s);
		return 0;
	}
	return 1;
}

/*
 * The writes of @s; with @compare, not those of a file that no longer
 * reads as record set it, each said (all read before any is written: the
 * writes change what the files read).  The number that failed.
 */
static unsigned int apply(const struct ctl *c, const struct ctlsave *s,
			  bool compare)
{
	bool *changed = calloc(s->nset + 1, sizeof(*changed));
	unsigned int failed = 0;
	int err;

	if (!changed)
		die("out of memory");
	/* Unread, it is written (and its failure said). */
	for (size_t j = 0; compare && j < s->nset; j++) {
		char *now = ctl_read_alloc(c, s->set[j].name);

		changed[j] = now && strcmp(now, s->set[j].value);
		free(now);
		if (changed[j])
			info("%s/%s changed since ringtrace record set it: left as it is",
			     c->dir, s->set[j].name);
	}
	for (size_t i = 0; i < s->n; i++) {
		bool left = false;

		for (size_t j = 0; j < s->nset && !left; j++)
			left = changed[j] &&
			       !strcmp(s->set[j].name, s->w[i].name);
		if (left)
			continue;
		err = ctl_write(c, s->w[i].name, s->w[i].value);
		if (!err)
			continue;
		warn("could not restore %s/%s to '%s': %s", c->dir,
		     s->w[i].name, s->w[i].value, strerror(-err));
		failed++;
	}
	free(changed);
	return failed;
}

unsigned int ctlsave_apply(const struct ctl *c, const struct ctlsave *s)
{
	return apply(c, s, false);
}

int ctlsave_clear(int fd)
{
	return ftruncate(fd, 0) ? -errno : 0;
}

int ctlsave_pay(int fd, const struct ctl *c)
{
	struct ctlsave s;
	int owed = ctlsave_load(fd, c, &s);

	if (owed < 0) {
		warn("%s: %s", CTLSAVE_PATH, owed == -EPROTO ?
		     "not a restore file of this ringtrace: left as it is" :
		     strerror(-owed));
		return owed;
	}
	if (owed) {
		info("ringtrace record (pid %d) ended without putting the control files back: writing back the values it saved in %s",
		     (int)s.pid, CTLSAVE_PATH);
		/* Tried once: a value refused now is refused next time too. */
		if (apply(c, &s, true))
			owed = -EIO;
		ctlsave_free(&s);
	}
	ctlsave_clear(fd);
	return owed;
}

int ctlsave_restore_stale(const struct ctl *c)
{
	char why[PATH_MAX + 128];
	int fd = ctlsave_lock(false, NULL, why, sizeof(why)), owed;

	if (fd == -ENOENT || fd == -EWOULDBLOCK)
		return 0;
	if (fd < 0) {
		warn("%s", why);
		return fd;
	}
	owed = ctlsave_pay(fd, c);
	close(fd);
	return owed;
}
