// SPDX-License-Identifier: GPL-2.0
/*
 * rt-ctlsave: host tests of record's restore file (lib/ctlsave.c), on a
 * control directory of plain files and a restore file in a temporary
 * directory (never /run): what is stored is what is loaded and written
 * back, in order; a file cut short at any byte before its "end" owes
 * nothing (a kill while record wrote it, before it changed anything), cut
 * inside what record set it owes its writes; one for another module
 * (reloaded since) owes nothing; paid, it owes nothing more; a file that
 * is no restore file -- another version, a whole one with a wrong length
 * or a name record never writes -- is refused and left as it is; paid
 * after record's death, a file changed by hand since record set it stays
 * as it is, the others go back, tracing_on always; the lock: one holder,
 * who is named; the directory and file trusted only when the caller's own,
 * written by nobody else, no link, one name.
 *
 *   rt-ctlsave          ends with "rt-ctlsave: N passed, M failed"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/ctlsave.h"
#include "../../lib/msg.h"
#include "tap.h"

static void put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		die("%s: %s", path, strerror(errno));
}

static char *get(const char *dir, const char *name)
{
	char path[PATH_MAX], *buf = calloc(1, 4096);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!buf || !f)
		die("%s: %s", path, strerror(errno));
	if (!fread(buf, 1, 4095, f) && ferror(f))
		die("%s: read", path);
	fclose(f);
	return buf;
}

/* @name of control directory @dir holds @want. */
static bool holds(const char *dir, const char *name, const char *want)
{
	char *text = get(dir, name);
	bool ok = !strcmp(text, want);

	if (!ok)
		printf("# %s: '%s', not '%s'\n", name, text, want);
	free(text);
	return ok;
}

static void put_fd(int fd, const char *text)
{
	if (ftruncate(fd, 0) || pwrite(fd, text, strlen(text), 0) < 0)
		die("restore file: %s", strerror(errno));
}

static char *get_fd(int fd)
{
	struct stat st;
	char *text;

	if (fstat(fd, &st))
		die("fstat: %s", strerror(errno));
	text = calloc(1, (size_t)st.st_size + 1);
	if (!text || pread(fd, text, (size_t)st.st_size, 0) != st.st_size)
		die("restore file: read");
	return text;
}

#define UUID_A	"0b1c2d3e-0000-4000-8000-00000000000a"
#define UUID_B	"0b1c2d3e-0000-4000-8000-00000000000b"

static void module(const char *dir, const char *uuid)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "/* CTF 1.8 */\n\ntypealias integer { size = 8; } := uint8_t;\n\n"
		 "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n};\n\n"
		 "clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n};\n",
		 uuid, UUID_B);
	put(dir, "metadata", text);
}

/* The writes a record saves, with values of every shape. */
static const char *const names[] = {
	"tracing_on", "mode", "set_event", "set_event_pid",
	"events/e1/trigger", "set_event_cgroup",
};
static const char *const values[] = {
	"0", "none", "!sched_switch sched_wakeup !irq_handler_entry ",
	" ", "comm == \"a b\" && id == 3\nsecond line", "",
};

static void saved(struct ctlsave *s, const char *dir)
{
	memset(s, 0, sizeof(*s));
	s->pid = 4242;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		ctlsave_add(s, names[i], values[i]);
		put(dir, names[i], "x");
	}
	/* Control files exist: a write never creates one. */
	put(dir, "events/e1/filter", "x");
	put(dir, "num_subbufs", "x");
	ctlsave_add(s, "events/e1/filter", "id == 1");
	ctlsave_add(s, "num_subbufs", "2");
	ctlsave_add(s, "num_subbufs", "64");
}

/* The names record writes, and only those. */
static void test_names(void)
{
	static const char *const ok[] = {
		"tracing_on", "mode", "subbuf_size", "num_subbufs", "set_event",
		"set_event_stack", "set_event_pid", "set_event_cgroup",
		"event_fork", "stack_depth", "set_event_ustack", "ustack_depth",
		"ustack_mode", "ustack_size", "mmap_dump", "mmap_events", "sample_hz",
		"events/sched_switch/filter",
		"events/ringtrace_marker/trigger", "events/kprobe_foo.isra.0/filter",
	};
	static const char *const bad[] = {
		"f0", "metadata", "events/enable", "events/e1/enable",
		"events/../x/filter", "events/./filter", "events/../filter",
		"events//filter", "events/e1/filter/..", "events/e 1/filter",
		"/sys/kernel/debug/ringtrace/mode", "mode/../tracing_on",
		"events/e1/filter\n", "",
	};
	bool all = true;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!ctlsave_name_ok(ok[i])) {
			printf("# refused: %s\n", ok[i]);
			all = false;
		}
	check("names: every control file record writes is taken", all);
	all = true;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ctlsave_name_ok(bad[i])) {
			printf("# taken: '%s'\n", bad[i]);
			all = false;
		}
	check("names: any other is refused (other files, '..', '.', blanks, absolute)",
	      all);
}

/* The lock, and what is trusted: in @tmp/run, the test's /run/ringtrace. */
static void test_lock(const char *tmp)
{
	char run[PATH_MAX], path[PATH_MAX + 32], other[PATH_MAX + 32];
	char why[PATH_MAX + 128];
	pid_t owner;
	int fd, fd2, err;

	snprintf(run, sizeof(run), "%s/run", tmp);
	fd = ctlsave_lock_at(run, false, NULL, why, sizeof(why));
	check("lock: none, without create: -ENOENT", fd == -ENOENT);
	fd = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	check("lock: made, with its directory", fd >= 0);
	if (fd < 0) {
		printf("# %s\n", why);
		return;
	}
	put_fd(fd, "ringtrace-restore 2\npid 4242\nmodule x\nend\n");
	fd2 = ctlsave_lock_at(run, true, &owner, why, sizeof(why));
	check("lock: a second holder is refused (-EWOULDBLOCK), naming the pid in it",
	      fd2 == -EWOULDBLOCK && owner == 4242);
	if (fd2 >= 0)
		close(fd2);
	close(fd);
	fd = ctlsave_lock_at(run, false, NULL, why, sizeof(why));
	check("lock: free once the holder closed it", fd >= 0);
	if (fd >= 0)
		close(fd);

	chmod(run, 0777);
	err = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	check("trust: a directory others may write: -EPERM", err == -EPERM);
	printf("# %s\n", why);
	chmod(run, 0700);

	/* Not the caller's: "/" is root's, so as root chown one to uid 1. */
	if (geteuid()) {
		err = ctlsave_lock_at("/", false, NULL, why, sizeof(why));
	} else {
		snprintf(other, sizeof(other), "%s/other", tmp);
		mkdir(other, 0700);
		if (chown(other, 1, 1))
			die("chown %s: %s", other, strerror(errno));
		err = ctlsave_lock_at(other, true, NULL, why, sizeof(why));
	}
	check("trust: a directory that is not the caller's: -EPERM", err == -EPERM);
	printf("# %s\n", why);

	snprintf(other, sizeof(other), "%s/run-link", tmp);
	if (symlink(run, other))
		die("symlink: %s", strerror(errno));
	err = ctlsave_lock_at(other, true, NULL, why, sizeof(why));
	check("trust: a directory that is a link: -EPERM", err == -EPERM);
	printf("# %s\n", why);

	snprintf(path, sizeof(path), "%s/%s", run, CTLSAVE_NAME);
	chmod(path, 0622);
	err = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	check("trust: a file others may write: -EPERM", err == -EPERM);
	printf("# %s\n", why);
	chmod(path, 0600);

	snprintf(other, sizeof(other), "%s/second-name", tmp);
	if (link(path, other))
		die("link: %s", strerror(errno));
	err = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	check("trust: a file with a second name (hard link): -EPERM", err == -EPERM);
	printf("# %s\n", why);
	unlink(other);

	unlink(path);
	snprintf(other, sizeof(other), "%s/elsewhere", tmp);
	put(tmp, "elsewhere", "precious\n");
	if (symlink(other, path))
		die("symlink: %s", strerror(errno));
	err = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	check("trust: a file that is a link: -EPERM, what it points at untouched",
	      err == -EPERM && holds(tmp, "elsewhere", "precious\n"));
	printf("# %s\n", why);
	unlink(path);

	snprintf(other, sizeof(other), "%s/no/such/dir", tmp);
	err = ctlsave_lock_at(other, true, NULL, why, sizeof(why));
	check("lock: a directory that cannot be made: its error (-ENOENT), not -EPERM",
	      err == -ENOENT);
}

/* Whole files that are not restore files: refused, left whole. */
static void refused(int fd, const struct ctl *c, const char *text,
		    const char *what)
{
	char desc[256], *now;
	int owed;

	put(c->dir, "mode", "as the admin set it");
	put_fd(fd, text);
	owed = ctlsave_pay(fd, c);
	now = get_fd(fd);
	snprintf(desc, sizeof(desc), "%s: no restore file (-EPROTO, got %d), left whole, nothing written",
		 what, owed);
	check(desc, owed == -EPROTO && !strcmp(now, text) &&
	      holds(c->dir, "mode", "as the admin set it"));
	free(now);
}

static void test_foreign(int fd, const struct ctl *c, struct ctlsave *s)
{
	char *text, *v, *good;

	ctlsave_store(fd, c, s);
	good = get_fd(fd);

	refused(fd, c, "precious\n", "someone else's file");
	text = strdup(good);
	memcpy(text, "ringtrace-restore 3", 19);
	refused(fd, c, text, "a newer version");
	memcpy(text, "ringtrace-restore 1", 19);
	refused(fd, c, text, "the older version");
	free(text);

	text = strdup(good);
	v = strstr(text, "write mode 4\n");
	if (v) {
		v[11] = '9';
		refused(fd, c, text, "a length that does not match its value");
	} else {
		check("a length that does not match its value: 'write mode 4' stored", false);
	}
	free(text);

	text = strdup(good);
	v = strstr(text, "write events/e1/filter");
	if (v) {
		memcpy(v + 6, "../e1/filter", 12);
		refused(fd, c, text, "a name out of the control directory (..)");
	} else {
		check("a name out of the control directory: stored", false);
	}
	free(text);

	text = strdup(good);
	v = strstr(text, "write mode 4\n");
	if (v) {
		memcpy(v + 6, "node", 4);
		refused(fd, c, text, "a name record never writes");
	}
	free(text);

	if (asprintf(&text, "%sset events/e9/filter 1\nx\n", good) < 0)
		die("out of memory");
	refused(fd, c, text, "what record set, of a file it writes nothing to");
	free(text);
	if (asprintf(&text, "%sset mode 4\nnone\nset mode 4\nnone\n", good) < 0)
		die("out of memory");
	refused(fd, c, text, "what record set, twice for one file");
	free(text);
	if (asprintf(&text, "%sgarbage\n", good) < 0)
		die("out of memory");
	refused(fd, c, text, "a line that is no entry after the end");
	free(text);
	free(good);
}

/*
 * Paid after record's death: a file that no longer reads as record set
 * it is left; the others go back; tracing_on always.
 */
static void test_compare(int fd, const struct ctl *c)
{
	struct ctlsave s = { .pid = 4242 }, l;
	char *text;
	int owed;

	put(c->dir, "tracing_on", "0\n");
	put(c->dir, "mode", "discard\n");
	put(c->dir, "set_event", "irq_handler_entry\n");
	put(c->dir, "num_subbufs", "64\n");
	ctlsave_add(&s, "tracing_on", "0");
	ctlsave_add(&s, "set_event", "irq_handler_entry !sched_switch ");
	ctlsave_add(&s, "mode", "discard");
	ctlsave_add(&s, "num_subbufs", "2");
	ctlsave_add(&s, "num_subbufs", "64");
	check("compare: stored before anything is set", !ctlsave_store(fd, c, &s));
	/*
	 * What record sets (as the files read back; shorter than what goes
	 * back: a write to a plain file overwrites, it does not truncate).
	 */
	put(c->dir, "tracing_on", "1");
	put(c->dir, "mode", "o\n");
	put(c->dir, "set_event", "s\n");
	put(c->dir, "num_subbufs", "8\n");
	check("compare: what record set, appended", !ctlsave_mark_set(fd, c, &s));
	text = get_fd(fd);
	check("compare: one entry per file set, tracing_on none",
	      s.nset == 3 && strstr(text, "end\nset ") &&
	      !strstr(text, "set tracing_on") &&
	      strstr(text, "set num_subbufs 2\n8\n\n") &&
	      strstr(text, "set set_event 2\ns\n\n"));
	free(text);

	/* The admin since: mode by hand. */
	put(c->dir, "mode", "by hand\n");
	owed = ctlsave_pay(fd, c);
	check("compare: paid", owed == 1);
	check("compare: the file changed by hand since is left as it is",
	      holds(c->dir, "mode", "by hand\n"));
	check("compare: those still as record set them go back (the last write of a file stays)",
	      holds(c->dir, "set_event", "irq_handler_entry !sched_switch ") &&
	      holds(c->dir, "num_subbufs", "64"));
	check("compare: tracing_on goes off whatever", holds(c->dir, "tracing_on", "0"));

	/* Killed before it marked them: everything goes back. */
	ctlsave_free(&s);
	s = (struct ctlsave){ .pid = 4242 };
	ctlsave_add(&s, "mode", "discard");
	ctlsave_store(fd, c, &s);
	put(c->dir, "mode", "o\n");
	check("compare: no entry of what record set: written back whatever it holds",
	      ctlsave_pay(fd, c) == 1 && holds(c->dir, "mode", "discard"));

	/* Cut short inside what record set: the writes owed, the cut entry out. */
	ctlsave_free(&s);
	s = (struct ctlsave){ .pid = 4242 };
	ctlsave_add(&s, "mode", "discard");
	ctlsave_add(&s, "set_event", "x");
	ctlsave_store(fd, c, &s);
	text = get_fd(fd);
	put(c->dir, "mode", "o\n");
	put(c->dir, "set_event", "s\n");
	ctlsave_mark_set(fd, c, &s);
	{
		char *full = get_fd(fd);
		size_t from = strlen(text), to = strlen(full);
		bool all = true;

		for (size_t len = from; len < to && all; len++) {
			put_fd(fd, full);
			if (ftruncate(fd, (off_t)len))
				die("ftruncate: %s", strerror(errno));
			owed = ctlsave_load(fd, c, &l);
			/* Whole entries in, the one cut short out. */
			all = owed == 1 && l.n == 2 &&
			      l.nset == (len >= from + strlen("set mode 2\no\n\n") ? 1 : 0);
			if (!all)
				printf("# cut at %zu of %zu: owed %d, %zu set\n", len, to,
				       owed, owed == 1 ? l.nset : 0);
			if (owed == 1)
				ctlsave_free(&l);
		}
		check("compare: cut short at any byte after the end: the writes owed, whole entries in",
		      all);
		free(full);
	}
	free(text);
	ctlsave_free(&s);
	ctlsave_clear(fd);
}

int main(void)
{
	char tmp[] = "/tmp/rt-ctlsave.XXXXXX", path[PATH_MAX + 32], why[PATH_MAX + 128];
	char run[PATH_MAX];
	struct ctlsave s, l;
	struct ctl c;
	struct stat st;
	int fd, owed;
	off_t full;
	bool all;

	msg_prog = "rt-ctlsave";
	if (!mkdtemp(tmp))
		die("mkdtemp: %s", strerror(errno));
	snprintf(c.dir, sizeof(c.dir), "%s/ctl", tmp);
	mkdir(c.dir, 0755);
	c.dev = false;
	module(c.dir, UUID_A);
	mkdir(strcat(strcpy(path, c.dir), "/events"), 0755);
	mkdir(strcat(strcpy(path, c.dir), "/events/e1"), 0755);

	test_names();
	test_lock(tmp);
	snprintf(run, sizeof(run), "%s/run", tmp);
	fd = ctlsave_lock_at(run, true, NULL, why, sizeof(why));
	if (fd < 0)
		die("%s", why);

	saved(&s, c.dir);
	check("store", !ctlsave_store(fd, &c, &s));
	check("the module's uuid is the trace's, not the clock's",
	      !strcmp(s.module, UUID_A));
	owed = ctlsave_load(fd, &c, &l);
	all = owed == 1 && l.n == s.n && l.pid == 4242 && !l.nset;
	for (size_t i = 0; all && i < s.n; i++)
		all = !strcmp(l.w[i].name, s.w[i].name) &&
		      !strcmp(l.w[i].value, s.w[i].value);
	check("loaded: every write, in order, values with blanks, newlines and nothing",
	      all);
	check("applied: no failure", owed == 1 && !ctlsave_apply(&c, &l));
	check("applied: a value with a newline, whole",
	      holds(c.dir, "events/e1/trigger", values[4]));
	check("applied: in order (the last write of a file stays)",
	      holds(c.dir, "num_subbufs", "64"));
	check("applied: a file under events/", holds(c.dir, "events/e1/filter", "id == 1"));
	if (owed == 1)
		ctlsave_free(&l);

	/* Cut short at every byte before "end": owes nothing, never part. */
	fstat(fd, &st);
	full = st.st_size;
	all = true;
	for (off_t len = 0; len < full; len++) {
		ctlsave_store(fd, &c, &s);
		if (ftruncate(fd, len))
			die("ftruncate: %s", strerror(errno));
		owed = ctlsave_load(fd, &c, &l);
		if (owed != 0) {
			printf("# cut at %lld of %lld: %d\n", (long long)len,
			       (long long)full, owed);
			all = false;
			break;
		}
	}
	check("cut short at any byte before its end: nothing owed", all);

	test_foreign(fd, &c, &s);

	ctlsave_store(fd, &c, &s);
	module(c.dir, UUID_B);
	check("another module (reloaded since): nothing owed",
	      ctlsave_load(fd, &c, &l) == 0);
	module(c.dir, UUID_A);

	put(c.dir, "num_subbufs", "8");
	ctlsave_store(fd, &c, &s);
	check("pay: owed, written back", ctlsave_pay(fd, &c) == 1);
	check("pay: the values are back", holds(c.dir, "num_subbufs", "64"));
	fstat(fd, &st);
	check("pay: the file is empty after", st.st_size == 0);
	check("pay again: nothing owed", ctlsave_pay(fd, &c) == 0);
	ctlsave_store(fd, &c, &s);
	check("the owner: the pid the file names", ctlsave_owner(fd) == 4242);
	ctlsave_clear(fd);
	check("the owner: none once emptied", ctlsave_owner(fd) == 0);

	test_compare(fd, &c);

	ctlsave_free(&s);
	close(fd);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	if (system(path))
		fprintf(stderr, "rt-ctlsave: %s left\n", tmp);
	printf("rt-ctlsave: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
