// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace list: the events the running ringtrace.ko offers, with their
 * fields and types (from its metadata) and whether each is enabled; or,
 * with --usdt PATH, the USDT probes of an ELF file (usdt.c), no module
 * needed.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "usdt.h"

static void print_type(const struct rt_field_desc *f)
{
	if (f->kind == RT_FIELD_STRING) {
		fputs("string", stdout);
		return;
	}
	if (f->is_text)
		fputs("text", stdout);
	else
		printf("%sint%u", f->is_signed ? "" : "u", f->bits);
	if (f->nr_labels)
		printf(" enum (%u names)", f->nr_labels);
	if (f->kind == RT_FIELD_ARRAY)
		printf("[%" PRIu64 "]", f->length);
}

/* True if a line of @text starts with @prefix. */
static bool line_starts(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, prefix, strlen(prefix)))
			return true;
	return false;
}

/* Each probe's sites, counted in a first walk of the notes. */
struct usdt_count {
	size_t n;
	struct usdt_probe_sites {
		char *key;		/* "PROVIDER:NAME" */
		unsigned int sites, shown;
	} *p;
};

static struct usdt_probe_sites *usdt_find(struct usdt_count *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->p[i].key, key))
			return &c->p[i];
	return NULL;
}

static int usdt_count_cb(const struct usdt_probe *p, void *arg)
{
	struct usdt_count *c = arg;
	struct usdt_probe_sites *ps, *grown;
	char *key;

	if (asprintf(&key, "%s:%s", p->provider, p->name) < 0)
		die("out of memory");
	ps = usdt_find(c, key);
	if (ps) {
		free(key);
		ps->sites++;
		return 0;
	}
	grown = realloc(c->p, (c->n + 1) * sizeof(*c->p));
	if (!grown)
		die("out of memory");
	c->p = grown;
	c->p[c->n++] = (struct usdt_probe_sites){ .key = key, .sites = 1 };
	return 0;
}

/*
 * One line per probe site: "PROVIDER:NAME<tab>ARGS<tab>SEMAPHORE<tab>site
 * K of N", N the probe's sites (record -e usdt: probes all N).
 */
static int usdt_line(const struct usdt_probe *p, void *arg)
{
	struct usdt_count *c = arg;
	struct usdt_probe_sites *ps;
	char key[1024];

	snprintf(key, sizeof(key), "%s:%s", p->provider, p->name);
	ps = usdt_find(c, key);
	printf("%s:%s\t%s\t", p->provider, p->name, p->args);
	if (p->semaphore)
		printf("semaphore 0x%" PRIx64, p->semaphore);
	else
		fputs("no semaphore", stdout);
	printf("\tsite %u of %u\n", ps ? ++ps->shown : 0, ps ? ps->sites : 0);
	return 0;
}

static int list_usdt(const char *path)
{
	struct usdt_count c = { 0 };
	char why[1024];

	if (usdt_probes(path, usdt_count_cb, &c, why, sizeof(why)) ||
	    usdt_probes(path, usdt_line, &c, why, sizeof(why)))
		die("%s", why);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	for (size_t i = 0; i < c.n; i++)
		free(c.p[i].key);
	free(c.p);
	return 0;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "debugfs", required_argument, NULL, 'd' },
		{ "usdt", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *debugfs = NULL, *pattern = NULL, *usdt = NULL;
	char *text, *set_event, *set_event_stack, *set_event_ustack, *avail, *dyn;
	struct rt_metadata *md;
	struct rt_error err;
	unsigned int shown = 0;
	struct ctl ctl;
	int c;

	while ((c = cmd_getopt(argc, argv, "d:u:h", opts)) != -1) {
		if (c == 'd')
			debugfs = optarg;
		else if (c == 'u')
			usdt = optarg;
	}
	if (usdt) {
		if (argc > optind)
			usage_error("--usdt PATH takes no pattern");
		return list_usdt(usdt);
	}
	if (argc - optind > 1)
		usage_error("at most one pattern is taken");
	if (argc - optind == 1)
		pattern = argv[optind];
	find_control(&ctl, debugfs);
	text = ctl_read_alloc(&ctl, "metadata");
	if (!text)
		die("%s/metadata: %s", ctl.dir, strerror(errno));
	if (rt_metadata_parse(text, strlen(text), "metadata", &md, &err))
		die("%s", err.msg);
	set_event = ctl_read_alloc(&ctl, "set_event");
	/* NULL: a module without stacks. */
	set_event_stack = ctl_read_alloc(&ctl, "set_event_stack");
	set_event_ustack = ctl_read_alloc(&ctl, "set_event_ustack");
	avail = ctl_read_alloc(&ctl, "available_events");
	if (!set_event || !avail)
		die("%s: %s (ringtrace.ko without its probes?)", ctl.dir,
		    strerror(errno));
	/* "<id> <name> <spec>" per dynamic probe; none on an older module. */
	dyn = ctl_read_alloc(&ctl, "probe_events");

	for (unsigned int i = 0; i < md->nr_events; i++) {
		const struct rt_event_desc *ev = &md->events[i];
		char line[600];
		bool probe, dynamic;

		if (pattern && fnmatch(pattern, ev->name, 0))
			continue;
		/* Switchable: listed in available_events ("<id> <name>"). */
		snprintf(line, sizeof(line), "%u %s\n", ev->id, ev->name);
		probe = strstr(avail, line) != NULL;
		snprintf(line, sizeof(line), "%u %s ", ev->id, ev->name);
		dynamic = dyn && line_starts(dyn, line);
		/* A removed probe's event stays in the metadata: not offered. */
		if (!dynamic && (!strncmp(ev->name, "kprobe_", 7) ||
				 !strncmp(ev->name, "kretprobe_", 10) ||
				 !strncmp(ev->name, "uprobe_", 7) ||
				 !strncmp(ev->name, "usdt_", 5)))
			continue;
		printf("%-28s id %-4u %s%s%s\n", ev->name, ev->id,
		       dynamic ? "(dynamic probe)" :
		       !strcmp(ev->name, "stack_ref") ?
		       "(follows each event of set_event_stack, set_event_ustack)" :
		       !strcmp(ev->name, "stack_def") ?
		       "(a stack, once per packet, before its first stack_ref)" :
		       !strcmp(ev->name, "kernel_stack") ?
		       "(follows each event of set_event_stack)" :
		       !strcmp(ev->name, "user_stack") ?
		       "(follows each event of set_event_ustack)" :
		       !strcmp(ev->name, "user_stack_copy") ?
		       "(the user stack, in ustack_mode copy)" :
		       !strcmp(ev->name, "user_mmap") ?
		       "(with mmap_dump and mmap_events: record --mmap)" :
		       !strcmp(ev->name, "cpu_sample") ?
		       "(the sampler's: record --sample HZ)" :
		       !probe ? "(always on)" :
		       has_line(set_event, ev->name) ? "enabled" : "disabled",
		       probe && set_event_stack &&
		       has_line(set_event_stack, ev->name) ? ", with its stack" : "",
		       probe && set_event_ustack &&
		       has_line(set_event_ustack, ev->name) ? ", with its user stack" : "");
		for (unsigned int j = 0; j < ev->nr_fields; j++) {
			printf("    %-24s ", ev->fields[j].name);
			print_type(&ev->fields[j]);
			putchar('\n');
		}
		if (ev->unsupported)
			printf("    (fields not decodable by ringtrace: %s)\n",
			       ev->unsupported);
		shown++;
	}
	if (pattern && !shown)
		die("no event matches '%s'", pattern);
	if (!pattern)
		puts("\ndynamic probes, made by 'record -e' for one recording:\n"
		     "    kprobe:FUNC[+OFF]        event kprobe_FUNC[_0xOFF]: arg0..arg5 uint64\n"
		     "    kretprobe:FUNC           event kretprobe_FUNC: ret uint64\n"
		     "    uprobe:PATH:SYMBOL[+OFF] event uprobe_FILE_SYMBOL[_0xOFF]: arg0..arg5 uint64\n"
		     "    usdt:PATH:PROVIDER:NAME  event usdt_PROVIDER_NAME: arg0..argN-1 int64, faults\n"
		     "                             (ringtrace list --usdt PATH: the probes of PATH)");
	free(dyn);
	free(text);
	free(set_event);
	free(set_event_stack);
	free(set_event_ustack);
	free(avail);
	rt_metadata_free(md);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
	return 0;
}

const struct command cmd_list = {
	.name = "list",
	.summary = "the events ringtrace.ko offers, their fields, and which are on",
	.help =
"Usage: ringtrace list [-d DIR] [PATTERN]\n"
"       ringtrace list --usdt PATH\n"
"\n"
"Every event the running ringtrace.ko describes (or those whose name\n"
"matches the glob PATTERN): its id, whether it is enabled, and its fields\n"
"with their types.  Events that other modules register through the\n"
"writer API are always on: they write when their module does.  An\n"
"event that carries its kernel stack (record --stack) says \"with its\n"
"stack\"; one that carries its user stack (record --ustack) says \"with\n"
"its user stack\".  A stack_ref after the event names its stacks, each a\n"
"stack_def written once per packet (before the first stack_ref of it).\n"
"user_mmap, the executable mappings of traced processes, is written\n"
"with record --mmap.  The dynamic probes of a recording running now\n"
"('record -e kprobe:FUNC[+OFF]',\n"
"'-e kretprobe:FUNC', '-e uprobe:PATH:SYMBOL[+OFF]',\n"
"'-e usdt:PATH:PROVIDER:NAME') are listed as such; the syntax ends the list.\n"
"\n"
"With --usdt PATH, the USDT probes (<sys/sdt.h>) of the ELF file PATH\n"
"instead, from its .note.stapsdt, one line per probe site with four\n"
"tab-separated columns: PROVIDER:NAME, the note's argument operands,\n"
"\"semaphore 0xADDR\" (the address of its semaphore) or \"no\n"
"semaphore\", and \"site K of N\", N the probe's sites (record probes\n"
"every one).  Needs no ringtrace.ko.\n"
"\n"
"  -d, --debugfs DIR   debugfs is mounted on DIR (default: debugfs, or\n"
"                      /dev/ringtrace when debugfs refuses)\n"
"  -u, --usdt PATH     the USDT probes of PATH, not the events\n"
"  -h, --help          this text\n",
	.run = run,
};
