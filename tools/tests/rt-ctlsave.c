// SPDX-License-Identifier: GPL-2.0
/*
 * rt-ctlsave: host tests of record's restore file (lib/ctlsave.c), on a
 * control directory of plain files and a restore file in a temporary
 * directory (never /run): what is stored is what is loaded and written
 * back, in order; a file cut short at any byte owes nothing (a kill while
 * record wrote it, before it changed anything); one for another module
 * (reloaded since) owes nothing; paid, it owes nothing more; a file that
 * is no restore file is left as it is.
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

static unsigned int passed, failed;

static void check(const char *what, bool ok)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (ok)
		passed++;
	else
		failed++;
}

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

int main(void)
{
	char tmp[] = "/tmp/rt-ctlsave.XXXXXX", path[PATH_MAX], *text, *v;
	static const char *const values[] = {
		"0", "none", "!sched_switch sched_wakeup !irq_handler_entry ",
		" ", "comm == \"a b\" && id == 3\nsecond line", "",
	};
	struct ctlsave s = { 0 }, l;
	struct ctl c;
	struct stat st;
	int fd, owed;
	off_t full;
	bool all;

	msg_prog = "rt-ctlsave";
	if (!mkdtemp(tmp))
		die("mkdtemp: %s", strerror(errno));
	snprintf(c.dir, sizeof(c.dir), "%s", tmp);
	c.dev = false;
	module(tmp, UUID_A);
	mkdir(strcat(strcpy(path, tmp), "/events"), 0755);
	mkdir(strcat(strcpy(path, tmp), "/events/e1"), 0755);
	snprintf(path, sizeof(path), "%s/restore", tmp);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));

	s.pid = 4242;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%zu", i);
		ctlsave_add(&s, name, values[i]);
		put(tmp, name, "x");
	}
	/* Control files exist: a write never creates one. */
	put(tmp, "events/e1/filter", "x");
	put(tmp, "n", "x");
	ctlsave_add(&s, "events/e1/filter", "id == 1");
	ctlsave_add(&s, "n", "2");
	ctlsave_add(&s, "n", "64");
	check("store", !ctlsave_store(fd, &c, &s));
	check("the module's uuid is the trace's, not the clock's",
	      !strcmp(s.module, UUID_A));
	owed = ctlsave_load(fd, &c, &l);
	all = owed == 1 && l.n == s.n && l.pid == 4242;
	for (size_t i = 0; all && i < s.n; i++)
		all = !strcmp(l.w[i].name, s.w[i].name) &&
		      !strcmp(l.w[i].value, s.w[i].value);
	check("loaded: every write, in order, values with blanks, newlines and nothing",
	      all);
	check("applied: no failure", owed == 1 && !ctlsave_apply(&c, &l));
	text = get(tmp, "f4");
	check("applied: a value with a newline, whole", !strcmp(text, values[4]));
	free(text);
	text = get(tmp, "n");
	check("applied: in order (the last write of a file stays)",
	      !strcmp(text, "64"));
	free(text);
	text = get(tmp, "events/e1/filter");
	check("applied: a file under events/", !strcmp(text, "id == 1"));
	free(text);
	if (owed == 1)
		ctlsave_free(&l);

	/* Cut short at every byte: owes nothing, never part of the list. */
	fstat(fd, &st);
	full = st.st_size;
	all = true;
	for (off_t len = 0; len < full; len++) {
		ctlsave_store(fd, &c, &s);
		if (ftruncate(fd, len))
			die("ftruncate: %s", strerror(errno));
		if (ctlsave_load(fd, &c, &l) != 0) {
			printf("# cut at %lld of %lld: owed\n", (long long)len,
			       (long long)full);
			all = false;
			break;
		}
	}
	check("cut short at any byte: nothing owed", all);

	/* Bytes changed: a length past the end, a missing newline. */
	ctlsave_store(fd, &c, &s);
	text = get(tmp, "restore");
	v = strstr(text, "write f1 4\n");
	all = v != NULL;
	if (v) {
		v[9] = '9';
		if (pwrite(fd, text, strlen(text), 0) < 0)
			die("pwrite: %s", strerror(errno));
		all = ctlsave_load(fd, &c, &l) == 0;
	}
	check("a length that does not match its value: nothing owed", all);
	free(text);

	/* A name out of the control directory: the whole file refused. */
	ctlsave_store(fd, &c, &s);
	text = get(tmp, "restore");
	v = strstr(text, "write events/e1/filter");
	all = v != NULL;
	if (v) {
		memcpy(v + 6, "../e1/filter", 12);
		if (pwrite(fd, text, strlen(text), 0) < 0)
			die("pwrite: %s", strerror(errno));
		all = ctlsave_load(fd, &c, &l) == 0;
	}
	check("a name out of the control directory (..): nothing owed", all);
	free(text);

	ctlsave_store(fd, &c, &s);
	module(tmp, UUID_B);
	check("another module (reloaded since): nothing owed",
	      ctlsave_load(fd, &c, &l) == 0);
	module(tmp, UUID_A);

	put(tmp, "n", "8");
	check("pay: owed, written back", ctlsave_pay(fd, &c) == 1);
	text = get(tmp, "n");
	check("pay: the values are back", !strcmp(text, "64"));
	free(text);
	fstat(fd, &st);
	check("pay: the file is empty after", st.st_size == 0);
	check("pay again: nothing owed", ctlsave_pay(fd, &c) == 0);

	/* Someone else's file (a wrong --restore-fd): read, never emptied. */
	put(tmp, "restore", "precious\n");
	check("no restore file: refused, left whole",
	      ctlsave_pay(fd, &c) == -1 && !strcmp(text = get(tmp, "restore"),
						     "precious\n"));
	free(text);

	ctlsave_free(&s);
	close(fd);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	if (system(path))
		fprintf(stderr, "rt-ctlsave: %s left\n", tmp);
	printf("rt-ctlsave: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
