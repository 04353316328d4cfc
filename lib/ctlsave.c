// SPDX-License-Identifier: GPL-2.0
/* The restore file of `ringtrace record` (ctlsave.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctlsave.h"
#include "msg.h"

#define MAGIC		"ringtrace-restore 1\n"
/* A restore file is a few KiB; anything near this is not ours. */
#define MAX_FILE	(16 << 20)

void ctlsave_add(struct ctlsave *s, const char *name, const char *value)
{
	struct ctlsave_write *more = realloc(s->w, (s->n + 1) * sizeof(*s->w));

	if (!more)
		die("out of memory");
	s->w = more;
	more[s->n].name = strdup(name);
	more[s->n].value = strdup(value);
	if (!more[s->n].name || !more[s->n].value)
		die("out of memory");
	s->n++;
}

void ctlsave_free(struct ctlsave *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->w[i].name);
		free(s->w[i].value);
	}
	free(s->w);
	s->w = NULL;
	s->n = 0;
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

/* The pid of the "pid" line of @fd's text, or 0. */
static pid_t owner_of(int fd)
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

int ctlsave_lock(bool create, pid_t *owner)
{
	struct stat st;
	int fd, err;

	if (owner)
		*owner = 0;
	if (create && mkdir(CTLSAVE_DIR, 0700) && errno != EEXIST)
		return -errno;
	fd = open(CTLSAVE_PATH, O_RDWR | O_CLOEXEC | O_NOFOLLOW |
		  (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return -errno;
	/* Root's own file, or none: its text is written back as root. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EINTR)
			continue;
		if (err == -EWOULDBLOCK && owner)
			*owner = owner_of(fd);
		close(fd);
		return err;
	}
	return fd;
}

int ctlsave_store(int fd, const struct ctl *c, struct ctlsave *s)
{
	size_t len = strlen(MAGIC) + 128, used, off = 0;
	char *text;
	ssize_t n;
	int err;

	err = module_uuid(c, s->module, sizeof(s->module));
	if (err)
		return err;
	for (size_t i = 0; i < s->n; i++)
		len += strlen(s->w[i].name) + strlen(s->w[i].value) + 32;
	text = malloc(len);
	if (!text)
		return -ENOMEM;
	used = (size_t)snprintf(text, len, MAGIC "pid %d\nmodule %s\n",
				(int)s->pid, s->module);
	for (size_t i = 0; i < s->n; i++)
		used += (size_t)snprintf(text + used, len - used,
					 "write %s %zu\n%s\n", s->w[i].name,
					 strlen(s->w[i].value), s->w[i].value);
	used += (size_t)snprintf(text + used, len - used, "end\n");
	/* Without its "end", what a kill leaves half written owes nothing. */
	err = ftruncate(fd, 0) ? -errno : 0;
	while (!err && off < used) {
		n = pwrite(fd, text + off, used - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		else
			off += (size_t)n;
	}
	free(text);
	return err;
}

/* One "KEY VALUE\n" line at *@p, advancing it: VALUE, or NULL. */
static char *line_of(char **p, const char *key)
{
	size_t k = strlen(key);
	char *v, *nl;

	if (strncmp(*p, key, k) || (*p)[k] != ' ')
		return NULL;
	v = *p + k + 1;
	nl = strchr(v, '\n');
	if (!nl)
		return NULL;
	*nl = '\0';
	*p = nl + 1;
	return v;
}

/*
 * A control file's name: relative, inside the control directory (no ".."
 * component), of the characters the module's names use.
 */
static bool control_name(const char *name)
{
	if (!*name || *name == '/' || strstr(name, "..") ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") !=
	    strlen(name))
		return false;
	return true;
}

/* Parses @text into @s: 0, or -EPROTO where it is not a whole file. */
static int parse(char *text, size_t len, struct ctlsave *s)
{
	char *p = text, *end = text + len, *v, *sp, *value;
	unsigned long long n;
	long pid;

	if (strncmp(p, MAGIC, strlen(MAGIC)))
		return -EPROTO;
	p += strlen(MAGIC);
	v = line_of(&p, "pid");
	if (!v || (pid = strtol(v, &sp, 10)) <= 0 || *sp)
		return -EPROTO;
	s->pid = (pid_t)pid;
	v = line_of(&p, "module");
	if (!v || strlen(v) >= sizeof(s->module))
		return -EPROTO;
	snprintf(s->module, sizeof(s->module), "%s", v);
	while ((v = line_of(&p, "write"))) {
		sp = strrchr(v, ' ');
		if (!sp || sp == v)
			return -EPROTO;
		*sp = '\0';
		if (!control_name(v))
			return -EPROTO;
		errno = 0;
		n = strtoull(sp + 1, &value, 10);
		if (errno || *value || n > (unsigned long long)(end - p) ||
		    p[n] != '\n')
			return -EPROTO;
		p[n] = '\0';
		ctlsave_add(s, v, p);
		p += n + 1;
	}
	return strcmp(p, "end\n") ? -EPROTO : 0;
}

int ctlsave_load(int fd, const struct ctl *c, struct ctlsave *s)
{
	char *text, uuid[sizeof(s->module)];
	size_t len;
	int err;

	memset(s, 0, sizeof(*s));
	err = read_all(fd, &text, &len);
	if (err)
		return err;
	/* Not even the start of one: someone else's file, left alone. */
	if (strncmp(text, MAGIC, len < strlen(MAGIC) ? len : strlen(MAGIC))) {
		free(text);
		return -EPROTO;
	}
	err = len ? parse(text, len, s) : -EPROTO;
	free(text);
	/* Empty, or cut short before record changed anything. */
	if (err) {
		ctlsave_free(s);
		return 0;
	}
	/* Reloaded since: what record set went with the old module. */
	if (module_uuid(c, uuid, sizeof(uuid)) || strcmp(uuid, s->module)) {
		ctlsave_free(s);
		return 0;
	}
	return 1;
}

unsigned int ctlsave_apply(const struct ctl *c, const struct ctlsave *s)
{
	unsigned int failed = 0;
	int err;

	for (size_t i = 0; i < s->n; i++) {
		err = ctl_write(c, s->w[i].name, s->w[i].value);
		if (!err)
			continue;
		warn("could not restore %s/%s to '%s': %s", c->dir,
		     s->w[i].name, s->w[i].value, strerror(-err));
		failed++;
	}
	return failed;
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
		     "not a restore file: left as it is" : strerror(-owed));
		return -1;
	}
	if (owed) {
		info("ringtrace record (pid %d) ended without putting the control files back: writing back the %zu values it saved in %s",
		     (int)s.pid, s.n, CTLSAVE_PATH);
		/* Tried once: a value refused now is refused next time too. */
		if (ctlsave_apply(c, &s))
			owed = -1;
		ctlsave_free(&s);
	}
	ctlsave_clear(fd);
	return owed;
}

int ctlsave_restore_stale(const struct ctl *c)
{
	int fd = ctlsave_lock(false, NULL), owed;

	if (fd == -ENOENT || fd == -EWOULDBLOCK)
		return 0;
	if (fd < 0) {
		warn("%s: %s", CTLSAVE_PATH, strerror(-fd));
		return -1;
	}
	owed = ctlsave_pay(fd, c);
	close(fd);
	return owed;
}
