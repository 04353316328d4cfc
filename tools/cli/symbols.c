// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace symbols: fills a trace's symbol store (lib/usyms.h) with the
 * binaries its user_mmap events name, while they still exist on this
 * machine: the exact file a process mapped through /proc/PID/map_files/
 * while it lives, else the path.  A file is kept only if its build-id is
 * the event's; the binaries the trace's user stacks ran in go first, then
 * the others in the order they were mapped, up to --max bytes stored.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../../lib/usyms.h"

#define DEFAULT_MAX	(256ULL << 20)

/* A binary to store: the first mapping of its build-id. */
struct cand {
	uint8_t id[UMAP_BUILD_ID_MAX];
	uint8_t id_len;
	int32_t pid;
	uint64_t start, end;
	char *path;
	uint64_t hits;			/* user frames in it */
	size_t order;			/* first mapped */
};

struct cands {
	struct cand *v;
	size_t nr, cap;
};

static struct cand *find(struct cands *c, const uint8_t *id, size_t len)
{
	for (size_t i = 0; i < c->nr; i++)
		if (c->v[i].id_len == len && !memcmp(c->v[i].id, id, len))
			return &c->v[i];
	return NULL;
}

/* A user_mmap event's binary, if it names a new build-id. */
static void add_mmap(struct cands *c, const struct rt_item *it)
{
	const struct rt_field_value *bid = rt_item_field(it, "build_id", RT_USE_INTS);
	const struct rt_field_value *path = rt_item_field(it, "path", RT_USE_TEXT);
	const struct rt_field_value *pid = rt_item_field(it, "pid", RT_USE_INT);
	const struct rt_field_value *start = rt_item_field(it, "start", RT_USE_INT);
	const struct rt_field_value *end = rt_item_field(it, "end", RT_USE_INT);
	uint8_t id[UMAP_BUILD_ID_MAX];
	struct cand *n;

	if (!bid || !path || !pid || !start || !end || !bid->count ||
	    bid->count > UMAP_BUILD_ID_MAX)
		return;
	for (uint64_t i = 0; i < bid->count; i++)
		id[i] = (uint8_t)rt_field_u64(bid, i);
	if (find(c, id, bid->count))
		return;
	if (c->nr == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 32;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		if (!c->v)
			die("out of memory");
	}
	n = &c->v[c->nr];
	*n = (struct cand){
		.id_len = (uint8_t)bid->count, .pid = (int32_t)rt_field_s64(pid, 0),
		.start = rt_field_u64(start, 0), .end = rt_field_u64(end, 0),
		.order = c->nr,
	};
	memcpy(n->id, id, bid->count);
	n->path = strndup((const char *)path->data,
			  strnlen((const char *)path->data, path->count));
	if (!n->path)
		die("out of memory");
	c->nr++;
}

/* The user frames of a stack pair (a copy's ip), counted to their binaries. */
static void count_hits(struct cands *c, const struct umaps *um,
		       const struct stack_pair *p, int32_t pid)
{
	struct umap_hit h;
	struct cand *k;

	for (uint32_t i = 0; p->user.present && i < p->user.nr; i++)
		if (umaps_lookup(um, pid, p->user.ips[i], &h) && h.build_id &&
		    (k = find(c, h.build_id, h.build_id_len)))
			k->hits++;
	/* A stack copy, not unwound here: the binary its ip is in. */
	if (p->copy.present && umaps_lookup(um, pid, p->copy.ip, &h) &&
	    h.build_id && (k = find(c, h.build_id, h.build_id_len)))
		k->hits++;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->hits != y->hits)
		return x->hits < y->hits ? 1 : -1;
	return (x->order > y->order) - (x->order < y->order);
}

/* One pass over the trace: its binaries, and how often its stacks hit each. */
static int collect(const char *dir, struct cands *c)
{
	struct stackrec *sr = NULL;
	struct umaps *um = NULL;
	const struct stack_pair *p;
	const struct rt_item *it;
	struct rt_threads *th;
	struct rt_trace *t;
	const char *error;
	struct merge *m;
	int32_t tid = -1, status;

	t = open_trace(dir, false);
	if (!t)
		return 1;
	th = rt_threads_new(t->md);
	sr = stackrec_new(t->md);
	um = umaps_new(t->md);
	if (!sr || !um || !th)
		die("out of memory");
	m = merge_open(t, false);
	while ((it = merge_next(m))) {
		if ((p = stackrec_feed(sr, it)))
			count_hits(c, um, p, stack_pair_pid(p, th, tid));
		if (stackrec_is_trailer(sr, it))
			continue;
		if (it->type == RT_ITEM_EVENT) {
			tid = rt_threads_owner(th, it);
			if (!strcmp(it->event->name, "user_mmap"))
				add_mmap(c, it);
		}
		rt_threads_feed(th, it);
		if (umaps_feed(um, it))
			die("out of memory");
	}
	if ((p = stackrec_flush(sr)))
		count_hits(c, um, p, stack_pair_pid(p, th, tid));
	error = merge_error(m);
	if (error)
		error_line("%s", error);
	status = error ? 1 : damage_report(t) ? EXIT_DAMAGED : 0;
	merge_close(m);
	rt_threads_free(th);
	umaps_free(um);
	stackrec_free(sr);
	rt_trace_close(t);
	return status;
}

/*
 * @k put in the store from @fd (named @from): usyms_put()'s result, the
 * reason in @why.
 */
static int put_from(int dirfd, const struct cand *k, int fd, const char *from,
		    uint64_t *written, char *why, size_t size)
{
	char w[512];
	int err;

	if (fd < 0) {
		err = -errno;
		snprintf(why, size, "%s: %s", from, strerror(errno));
		return err;
	}
	err = usyms_put(dirfd, k->id, k->id_len, fd, k->path, written, w, sizeof(w));
	close(fd);
	if (err < 0)
		snprintf(why, size, "%s: %s", from, w);
	return err;
}

/*
 * @k into the store: the file its process mapped if the process lives,
 * else (or if that is not it) the file at its path.
 */
static int store_binary(int dirfd, const struct cand *k, uint64_t *written,
			char *why, size_t size)
{
	char mf[96];
	int err = -ENOENT;

	snprintf(mf, sizeof(mf), "/proc/%" PRId32 "/map_files/%" PRIx64 "-%" PRIx64,
		 k->pid, k->start, k->end);
	if (k->pid > 0) {
		err = put_from(dirfd, k, open(mf, O_RDONLY | O_CLOEXEC), mf,
			       written, why, size);
		if (err >= 0)
			return err;
	}
	if (k->path[0] != '/') {
		if (err == -ENOENT)
			snprintf(why, size, "no file: the trace names none");
		return err;
	}
	return put_from(dirfd, k, open(k->path, O_RDONLY | O_CLOEXEC), k->path,
			written, why, size);
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t max = DEFAULT_MAX, total = 0;
	unsigned int stored = 0, had = 0, skipped = 0;
	struct cands c = { 0 };
	const char *dir;
	int o, dirfd, status;

	while ((o = cmd_getopt(argc, argv, "m:h", opts)) != -1)
		if (o == 'm' && !parse_size(optarg, &max))
			usage_error("--max: '%s' is not a size like 512M", optarg);
	if (argc - optind != 1)
		usage_error("a trace directory is needed");
	dir = argv[optind];
	status = collect(dir, &c);
	if (status == 1)
		goto out;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		error_line("%s: %s", dir, strerror(errno));
		status = 1;
		goto out;
	}
	if (c.nr)
		qsort(c.v, c.nr, sizeof(*c.v), cmp_cand);
	for (size_t i = 0; i < c.nr; i++) {
		char hex[2 * USYMS_BUILD_ID_MAX + 1], why[768];
		const struct cand *k = &c.v[i];
		uint64_t written;
		int err;

		usyms_hex(k->id, k->id_len, hex);
		if (total >= max) {
			warn("%s (%s): not stored, --max %" PRIu64 " bytes reached",
			     k->path, hex, max);
			skipped++;
			continue;
		}
		err = store_binary(dirfd, k, &written, why, sizeof(why));
		if (err < 0) {
			warn("%s (%s): not stored: %s", k->path, hex, why);
			skipped++;
			/* Not the binary's fault: the store's (a full disk, say). */
			if (err == -ENOSPC || err == -EIO || err == -ENOMEM ||
			    err == -EDQUOT || err == -EROFS)
				status = 1;
			continue;
		}
		if (err == 0) {
			had++;
			continue;
		}
		total += written;
		stored++;
	}
	close(dirfd);
	printf("stored %u binar%s (%" PRIu64 " bytes) in %s/" USYMS_DIR "; %u already there, %u not stored\n",
	       stored, stored == 1 ? "y" : "ies", total, dir, had, skipped);
	if (fflush(stdout) || ferror(stdout))
		die("write error: %s", strerror(errno));
out:
	for (size_t i = 0; i < c.nr; i++)
		free(c.v[i].path);
	free(c.v);
	return status;
}

const struct command cmd_symbols = {
	.name = "symbols",
	.summary = "keep the binaries a trace's user stacks ran in, for report on any machine",
	.help =
"Usage: ringtrace symbols [--max SIZE] DIR\n"
"\n"
"Copy into the trace directory DIR's symbol store (DIR/" USYMS_DIR "/, one\n"
"zstd-compressed file per build-id) each binary its user_mmap events\n"
"name, so that report names user frames on any machine, after the\n"
"binaries are gone.  A process that still lives gives the very file it\n"
"mapped (/proc/PID/map_files/, which takes root); else the path is read.\n"
"A file whose build-id is not the trace's is left out (it changed since).\n"
"The binaries the user stacks ran in go first, then the others in the\n"
"order they were mapped.  Run it on the recording machine, soon after\n"
"the recording: what is deleted or upgraded by then cannot be kept.\n"
"\n"
"      --max SIZE  stop storing past SIZE bytes (K, M, G; default 256M)\n"
"  -h, --help      this text\n",
	.run = run,
};
