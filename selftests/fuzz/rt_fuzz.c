// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: a seeded fuzzer of everything ringtrace.ko lets a user reach --
 * control files, buffer ioctls, mmap, markers, event switches, module
 * unload -- run by threads at once while writers fill the buffers and a
 * consumer checks every packet.  See fuzz.h for what a seed replays and how
 * results are judged, and Documentation/ringtrace/testing.rst for use.
 *
 *   rt_fuzz [--seed N] [--seconds S] [--ops N] [--toggle] [--only ROLES]
 *           [--log FILE] [--ko PATH --selftest-ko PATH] [--tmpdir DIR]
 *           [--own-pid N] [--pressure]
 *
 * --own-pid N: the pid the fuzzer writes where it names itself in
 * set_event_pid (default: its own, so that its writers stay traced);
 * replays that must issue the same bytes give the same N.
 *
 * --pressure: the geometry role's quiet changes ask for 256 KiB x 8 .. 64
 * per CPU (4 .. 32 MiB for two CPUs), for runs by hand with memory made
 * short on purpose, where many of them must be refused, each with its
 * reason (design.rst, "Memory").
 *
 * Prints its seed first and, last, "rt_fuzz: N operations, M assertion
 * failures"; exits 1 on any failure.
 */
#include "fuzz.h"
#include "../rt_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FZ_OP_NAME(id, name)	[FZ_OP_##id] = name,
const char *const fz_op_names[FZ_NR_OPS] = { FZ_OPS(FZ_OP_NAME) };
#undef FZ_OP_NAME

struct fz_global fz = {
	.dbgfs = "/sys/kernel/debug/ringtrace",
	.devdir = "/dev/ringtrace",
	.tmpdir = "/tmp",
	.seconds = 60,
	.only = (1U << FZ_NR_ROLES) - 1,
	.log_lock = PTHREAD_MUTEX_INITIALIZER,
	.hotplug_lock = PTHREAD_MUTEX_INITIALIZER,
	.lend_fd = -1,
};

/* Failure messages printed in full; the rest are only counted. */
#define FZ_MAX_PRINTED		40
#define FZ_LOG_FLUSH		(32U << 10)

static const struct {
	const char *name;
	void (*op)(struct fz_thread *t);
	void (*end)(struct fz_thread *t);	/* closes a session */
} fz_roles[FZ_NR_ROLES] = {
	[FZ_CTL0] = { "ctl0", fz_ctl_op },
	[FZ_CTL1] = { "ctl1", fz_ctl_op },
	[FZ_CHECK] = { "check", fz_check_op },
	[FZ_GEOM] = { "geometry", fz_geom_op },
	[FZ_CONSUMER] = { "consumer", fz_consumer_op, fz_consumer_end },
	[FZ_IOCTL] = { "ioctl", fz_ioctl_op, fz_ioctl_end },
	[FZ_MMAP] = { "mmap", fz_mmap_op, fz_mmap_end },
	[FZ_MARKER0] = { "marker0", fz_marker_op },
	[FZ_MARKER1] = { "marker1", fz_marker_op },
	[FZ_KMOD] = { "kmod", fz_kmod_op },
	[FZ_EVENTS] = { "events", fz_events_op },
	[FZ_MODULE] = { "module", fz_module_op },
};

static struct fz_thread fz_threads[FZ_NR_ROLES];

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

double fz_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void fz_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* "EBUSY" for -EBUSY, "ok" for 0, "ok:N" for N > 0. */
const char *fz_err(long ret)
{
	static __thread char buf[4][32];
	static __thread unsigned int n;
	const char *name;
	char *b = buf[n++ % 4];

	if (ret >= 0) {
		if (ret)
			snprintf(b, sizeof(buf[0]), "ok:%ld", ret);
		else
			snprintf(b, sizeof(buf[0]), "ok");
		return b;
	}
	name = strerrorname_np(-ret);
	if (name)
		return name;
	snprintf(b, sizeof(buf[0]), "E%ld", -ret);
	return b;
}

void fz_desc(struct fz_thread *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->desc_len >= sizeof(t->desc) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->desc + t->desc_len, sizeof(t->desc) - t->desc_len,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		t->desc_len = t->desc_len + n < sizeof(t->desc) ?
			      t->desc_len + n : sizeof(t->desc) - 1;
}

void fz_fail(struct fz_thread *t, const char *file, int line,
	     const char *fmt, ...)
{
	char msg[512];
	uint64_t n, i, first;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	atomic_fetch_add(&fz.fails, 1);
	t->stats[t->op].fails++;
	n = atomic_fetch_add(&fz.printed, 1);
	pthread_mutex_lock(&fz.log_lock);
	if (fz.log)
		fprintf(fz.log, "FAIL %s #%" PRIu64 " %s:%d: %s\n", t->name,
			t->k, file, line, msg);
	if (n >= FZ_MAX_PRINTED) {
		pthread_mutex_unlock(&fz.log_lock);
		return;
	}
	printf("# FAIL %s #%" PRIu64 " %s (%s:%d): %s\n#   op: %s\n", t->name,
	       t->k, fz_op_names[t->op], file, line, msg, t->desc);
	/* What this thread did just before, oldest first. */
	first = t->k > 8 ? t->k - 8 : 0;
	for (i = first; i < t->k; i++)
		printf("#   before: %s\n", t->hist[i % FZ_HIST]);
	fflush(stdout);
	pthread_mutex_unlock(&fz.log_lock);
}

bool fz_expect_in(struct fz_thread *t, const char *file, int line,
		  const char *what, long got, const int *allowed, size_t n)
{
	char list[160];
	size_t i, len = 0;

	for (i = 0; i < n; i++)
		if (got == allowed[i] || (got > 0 && allowed[i] == 0))
			return true;
	for (i = 0; i < n && len < sizeof(list) - 1; i++)
		len += snprintf(list + len, sizeof(list) - len, "%s%s",
				i ? "|" : "", fz_err(allowed[i]));
	fz_fail(t, file, line, "%s: got %s, expected %s", what, fz_err(got),
		list);
	return false;
}

const char *fz_path(char *buf, size_t size, bool dev, const char *rel)
{
	snprintf(buf, size, "%s/%s", dev ? fz.devdir : fz.dbgfs, rel);
	return buf;
}

int fz_open(struct fz_thread *t, bool dev, const char *rel, int flags)
{
	char path[256];
	int fd;

	(void)t;
	fd = open(fz_path(path, sizeof(path), dev, rel), flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

long fz_read(bool dev, const char *rel, char *buf, size_t size)
{
	char path[256];

	return rt_read_file(fz_path(path, sizeof(path), dev, rel), buf, size);
}

long fz_write(bool dev, const char *rel, const void *p, size_t len, int flags)
{
	char path[256];
	long ret;
	int fd;

	fd = open(fz_path(path, sizeof(path), dev, rel),
		  O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	ret = fz_ret(write(fd, p, len));
	close(fd);
	return ret;
}

/* A file holding one decimal number and a newline: it, or -errno/-EPROTO. */
long fz_read_num(bool dev, const char *rel)
{
	char buf[64], *end;
	long ret = fz_read(dev, rel, buf, sizeof(buf));
	long v;

	if (ret < 0)
		return ret;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || strcmp(end, "\n") || v < 0)
		return -EPROTO;
	return v;
}

/* ------------------------------------------------------------------ */
/* Bad pointers                                                        */
/* ------------------------------------------------------------------ */

/* Nothing maps here: PIE programs and mmap() live far above. */
#define FZ_UNMAPPED_ADDR	0x100000UL

int fz_mem_init(struct fz_mem *m)
{
	size_t page = fz.page;
	uint8_t *base;

	/* scratch(3) edge(1) none(1) ro(1) none(1) */
	base = mmap(NULL, 7 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	m->scratch = base;
	m->edge = base + 3 * page;
	m->none = base + 4 * page;
	m->ro = base + 5 * page;
	if (mprotect(m->none, page, PROT_NONE) ||
	    mprotect(m->ro, page, PROT_READ) ||
	    mprotect(m->ro + page, page, PROT_NONE))
		return -errno;
	return 0;
}

enum fz_ptr_kind fz_pick_ptr(struct fz_rng *r)
{
	if (fz_chance(r, 40))
		return FZ_PTR_GOOD;
	return fz_range(r, FZ_PTR_NULL, FZ_NR_PTR - 1);
}

const char *fz_ptr_name(enum fz_ptr_kind kind)
{
	static const char *const names[FZ_NR_PTR] = {
		"good", "null", "unmapped", "kernel", "noncanonical",
		"readonly", "edge", "prot_none",
	};

	return names[kind];
}

/* Copy what there is of @src into @n bytes at @dst, zeroes after it. */
static void fz_fill(void *dst, const void *src, size_t have, size_t n)
{
	size_t k = have < n ? have : n;

	if (src && k)
		memcpy(dst, src, k);
	else
		k = 0;
	memset((uint8_t *)dst + k, 0, n - k);
}

struct fz_ptr fz_place(struct fz_thread *t, enum fz_ptr_kind kind,
		       const void *src, size_t have, size_t len)
{
	struct fz_mem *m = &t->mem;
	size_t page = fz.page, k;
	struct fz_ptr p = { .kind = kind };

	switch (kind) {
	case FZ_PTR_GOOD:
		/* scratch and edge are 4 contiguous pages, then PROT_NONE. */
		k = len < 4 * page ? len : 4 * page;
		p.p = m->scratch;
		p.readable = p.writable = k;
		fz_fill(p.p, src, have, k);
		break;
	case FZ_PTR_NULL:
		p.p = NULL;
		break;
	case FZ_PTR_UNMAPPED:
		p.p = (void *)FZ_UNMAPPED_ADDR;
		break;
	case FZ_PTR_KERNEL:
		p.p = (void *)0xffffffff81000000UL;
		p.not_user = true;
		break;
	case FZ_PTR_NONCANON:
		p.p = (void *)0x0000800000000000UL;
		p.not_user = true;
		break;
	case FZ_PTR_RO:
		k = len < page ? len : page;
		if (mprotect(m->ro, page, PROT_READ | PROT_WRITE) == 0) {
			fz_fill(m->ro, src, have, k);
			mprotect(m->ro, page, PROT_READ);
		}
		p.p = m->ro;
		p.readable = k;
		break;
	case FZ_PTR_EDGE:
		/* The first k bytes fit before the PROT_NONE page. */
		k = len ? fz_below(&t->rng, len) : 0;
		if (k > page)
			k = page;
		p.p = m->edge + page - k;
		p.readable = p.writable = k;
		fz_fill(p.p, src, have, k);
		break;
	case FZ_PTR_NONE:
		p.p = m->none;
		break;
	default:
		break;
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Buffer files: one opener at a time                                  */
/* ------------------------------------------------------------------ */

void fz_buf_racy(unsigned int cpu, int delta)
{
	atomic_fetch_add(&fz.cpu[cpu].maybe_open, delta);
	atomic_fetch_add(&fz.cpu[cpu].gen, 1);
	atomic_fetch_add(&fz.bufs_maybe_open, delta);
	atomic_fetch_add(&fz.bufs_gen, 1);
}

/*
 * Open cpu/<cpu>/buffer and judge the result against the one-opener rule:
 * success while another session held the file from before to after the
 * call is a failure; EBUSY while nothing could have held it (no other
 * attempt or close in the meantime, no forked child with copies of fds)
 * is one too.  With @publish, the caller's session token is published.
 */
struct fz_open_result fz_buf_open(struct fz_thread *t, unsigned int cpu,
				  bool dev, int flags, bool publish)
{
	struct fz_cpu_state *c = &fz.cpu[cpu < FZ_MAX_CPUS ? cpu : 0];
	struct fz_open_result r = { .fd = -EINVAL };
	uint64_t held0, gen0, forks0, expected = 0;
	int open0, kids0;
	char rel[64];

	snprintf(rel, sizeof(rel), "cpu/%u/buffer", cpu);
	if (cpu >= FZ_MAX_CPUS || cpu >= fz.ncpus) {
		r.fd = fz_open(t, dev, rel, flags);
		return r;
	}
	fz_buf_racy(cpu, 1);
	held0 = atomic_load(&c->held);
	open0 = atomic_load(&c->maybe_open);
	gen0 = atomic_load(&c->gen);
	kids0 = atomic_load(&fz.children);
	forks0 = atomic_load(&fz.forks);

	r.fd = fz_open(t, dev, rel, flags);

	if (r.fd >= 0) {
		FZ_CHECK(t, !held0 || atomic_load(&c->held) != held0,
			 "cpu%u: a second open() succeeded while session %" PRIu64
			 " held the file throughout", cpu, held0);
		if (publish) {
			r.token = atomic_fetch_add(&fz.tokens, 1) + 1;
			FZ_CHECK(t, atomic_compare_exchange_strong(&c->held,
								   &expected,
								   r.token),
				 "cpu%u: opened while session %" PRIu64
				 " says it holds the file", cpu, expected);
		}
		return r;
	}
	if (r.fd == -EBUSY)
		FZ_CHECK(t, open0 != 1 || atomic_load(&c->maybe_open) != 1 ||
			    atomic_load(&c->gen) != gen0 || kids0 ||
			    atomic_load(&fz.children) ||
			    atomic_load(&fz.forks) != forks0,
			 "cpu%u: open() gave EBUSY with no other opener", cpu);
	fz_buf_racy(cpu, -1);
	return r;
}

void fz_buf_close(unsigned int cpu, int fd, uint64_t token)
{
	uint64_t expected = token;

	if (cpu < FZ_MAX_CPUS && cpu < fz.ncpus && token)
		atomic_compare_exchange_strong(&fz.cpu[cpu].held, &expected, 0);
	close(fd);
	if (cpu < FZ_MAX_CPUS && cpu < fz.ncpus)
		fz_buf_racy(cpu, -1);
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

void fz_mod_hold(struct fz_thread *t)
{
	if (!t->holds_mod) {
		pthread_rwlock_rdlock(&fz.mod_lock);
		t->holds_mod = true;
	}
}

void fz_mod_release(struct fz_thread *t)
{
	if (t->holds_mod) {
		pthread_rwlock_unlock(&fz.mod_lock);
		t->holds_mod = false;
	}
}

static void fz_log_flush(struct fz_thread *t)
{
	if (!fz.log || !t->loglen)
		return;
	pthread_mutex_lock(&fz.log_lock);
	fwrite(t->logbuf, 1, t->loglen, fz.log);
	pthread_mutex_unlock(&fz.log_lock);
	t->loglen = 0;
}

static void fz_record(struct fz_thread *t)
{
	char *h = t->hist[t->k % FZ_HIST];
	int n;

	n = snprintf(h, sizeof(t->hist[0]), "%" PRIu64 " %s %s", t->k,
		     fz_op_names[t->op], t->desc);
	if (!fz.log || n < 0)
		return;
	if (t->loglen + n + 64 > FZ_LOG_FLUSH)
		fz_log_flush(t);
	t->loglen += snprintf(t->logbuf + t->loglen, FZ_LOG_FLUSH - t->loglen,
			      "%s %s\n", t->name, h);
}

/* The generator of operation @k of thread @idx: a function of the seed. */
static uint64_t fz_op_seed(unsigned int idx, uint64_t k)
{
	return fz_mix(fz_mix(fz.seed + 0x9e3779b97f4a7c15ULL * (idx + 1)) +
		      0xd1b54a32d192ed03ULL * (k + 1));
}

static void *fz_thread_main(void *arg)
{
	struct fz_thread *t = arg;

	while (!fz_stopping() && (!fz.max_ops || t->k < fz.max_ops)) {
		t->rng.s = fz_op_seed(t->idx, t->k);
		t->desc_len = 0;
		t->desc[0] = '\0';
		t->op = FZ_OP_CTL_READ;
		if (t->idx != FZ_MODULE)
			fz_mod_hold(t);
		fz_roles[t->idx].op(t);
		fz_record(t);
		t->k++;
		if (!t->in_session)
			fz_mod_release(t);
	}
	if (fz_roles[t->idx].end)
		fz_roles[t->idx].end(t);
	fz_mod_release(t);
	fz_log_flush(t);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Setup and report                                                    */
/* ------------------------------------------------------------------ */

static int fz_discover(void)
{
	char buf[4096], *line, *save = NULL, rel[64];
	unsigned int id;
	DIR *d;
	struct dirent *e;
	long n;

	fz.page = sysconf(_SC_PAGESIZE);
	d = opendir(fz_path(rel, sizeof(rel), false, "cpu"));
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' &&
		    (unsigned int)atoi(e->d_name) + 1 > fz.ncpus)
			fz.ncpus = atoi(e->d_name) + 1;
	closedir(d);
	if (fz.ncpus > FZ_MAX_CPUS)
		fz.ncpus = FZ_MAX_CPUS;

	n = fz_read(false, "available_events", buf, sizeof(buf));
	if (n < 0)
		return n;
	for (line = strtok_r(buf, "\n", &save);
	     line && fz.nevents < FZ_MAX_EVENTS;
	     line = strtok_r(NULL, "\n", &save)) {
		char *name = fz.events[fz.nevents];

		if (sscanf(line, "%u %47s", &id, name) != 2)
			return -EPROTO;
		/* The state dump's events attach nothing to a tracepoint. */
		fz.event_has_tp[fz.nevents] =
			strncmp(name, "ringtrace_statedump_", 20) != 0;
		fz.nevents++;
	}
	fz.have_kmod = !access("/sys/kernel/debug/ringtrace_selftest/run", W_OK);
	n = fz_read_num(false, "subbuf_size");
	atomic_store(&fz.subbuf_hint, n > 0 ? n : 65536);
	return 0;
}

static unsigned int fz_parse_roles(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int mask = 0, i;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < FZ_NR_ROLES; i++)
			if (!strcmp(tok, fz_roles[i].name))
				break;
		if (i == FZ_NR_ROLES) {
			fprintf(stderr, "rt_fuzz: unknown role %s\n", tok);
			exit(2);
		}
		mask |= 1U << i;
	}
	free(copy);
	return mask;
}

static void fz_report(uint64_t *total)
{
	struct fz_op_stats sum[FZ_NR_OPS] = { 0 };
	unsigned int i, o;

	for (i = 0; i < FZ_NR_ROLES; i++)
		for (o = 0; o < FZ_NR_OPS; o++) {
			sum[o].count += fz_threads[i].stats[o].count;
			sum[o].refused += fz_threads[i].stats[o].refused;
			sum[o].fails += fz_threads[i].stats[o].fails;
		}
	printf("# %-28s %10s %10s %8s\n", "operation", "count", "refused",
	       "failed");
	*total = 0;
	for (o = 0; o < FZ_NR_OPS; o++) {
		*total += sum[o].count;
		printf("# %-28s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 "\n",
		       fz_op_names[o], sum[o].count, sum[o].refused,
		       sum[o].fails);
	}
	printf("# per thread:");
	for (i = 0; i < FZ_NR_ROLES; i++)
		if (fz.only & (1U << i))
			printf(" %s=%" PRIu64, fz_roles[i].name, fz_threads[i].k);
	printf("\n");
}

static void fz_usage(FILE *f)
{
	fprintf(f,
		"usage: rt_fuzz [--seed N] [--seconds S] [--ops N] [--toggle]\n"
		"               [--only ROLE,...] [--log FILE] [--ko PATH --selftest-ko PATH]\n"
		"               [--tmpdir DIR] [--own-pid N] [--pressure]\n"
		"roles: ctl0 ctl1 check geometry consumer ioctl mmap marker0 marker1\n"
		"       kmod events module\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "toggle", no_argument, NULL, 'T' },
		{ "only", required_argument, NULL, 'o' },
		{ "log", required_argument, NULL, 'l' },
		{ "ko", required_argument, NULL, 'k' },
		{ "selftest-ko", required_argument, NULL, 'K' },
		{ "tmpdir", required_argument, NULL, 'd' },
		{ "own-pid", required_argument, NULL, 'p' },
		{ "pressure", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	pthread_rwlockattr_t wpref;
	struct fz_thread *t;
	bool seeded = false;
	uint64_t total;
	unsigned int i;
	int c, ret;

	while ((c = getopt_long(argc, argv, "s:t:n:To:l:k:K:d:h", opts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			fz.seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 't':
			fz.seconds = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			fz.max_ops = strtoull(optarg, NULL, 0);
			break;
		case 'T':
			fz.toggle = true;
			break;
		case 'o':
			fz.only = fz_parse_roles(optarg);
			break;
		case 'l':
			fz.log = fopen(optarg, "w");
			if (!fz.log) {
				perror(optarg);
				return 2;
			}
			break;
		case 'k':
			fz.ko = optarg;
			break;
		case 'K':
			fz.st_ko = optarg;
			break;
		case 'd':
			fz.tmpdir = optarg;
			break;
		case 'p':
			fz.own_pid = strtol(optarg, NULL, 10);
			break;
		case 'P':
			fz.pressure = true;
			break;
		case 'h':
			fz_usage(stdout);
			return 0;
		default:
			fz_usage(stderr);
			return 2;
		}
	}
	if (!seeded)
		fz.seed = fz_mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	if (!fz.own_pid)
		fz.own_pid = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("rt_fuzz: seed=%" PRIu64 " seconds=%u ops=%" PRIu64
	       " toggle=%d\n", fz.seed, fz.seconds, fz.max_ops, fz.toggle);
	ret = fz_discover();
	if (ret) {
		printf("rt_fuzz: ringtrace not usable under %s: %s\n", fz.dbgfs,
		       fz_err(ret));
		printf("rt_fuzz: 0 operations, 1 assertion failures\n");
		return 1;
	}
	printf("# cpus=%u events=%u ringtrace_selftest=%s unload_cycle=%s\n",
	       fz.ncpus, fz.nevents, fz.have_kmod ? "yes" : "no",
	       fz.ko && fz.st_ko ? "yes" : "no");

	pthread_rwlockattr_init(&wpref);
	pthread_rwlockattr_setkind_np(&wpref,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fz.mod_lock, &wpref);
	pthread_rwlock_init(&fz.buf_lock, &wpref);
	pthread_rwlock_init(&fz.lend_lock, &wpref);

	fz.deadline = fz_now() + fz.seconds;
	for (i = 0; i < FZ_NR_ROLES; i++) {
		t = &fz_threads[i];
		t->idx = i;
		t->name = fz_roles[i].name;
		if (fz_mem_init(&t->mem) ||
		    (fz.log && !(t->logbuf = malloc(FZ_LOG_FLUSH)))) {
			perror("rt_fuzz: memory");
			return 2;
		}
	}
	for (i = 0; i < FZ_NR_ROLES; i++)
		if (fz.only & (1U << i))
			pthread_create(&fz_threads[i].tid, NULL, fz_thread_main,
				       &fz_threads[i]);
	while (fz_now() < fz.deadline) {
		bool running = false;

		for (i = 0; i < FZ_NR_ROLES; i++)
			if ((fz.only & (1U << i)) &&
			    (!fz.max_ops || fz_threads[i].k < fz.max_ops))
				running = true;
		if (!running)
			break;
		fz_sleep_ms(100);
	}
	atomic_store(&fz.stop, true);
	for (i = 0; i < FZ_NR_ROLES; i++)
		if (fz.only & (1U << i))
			pthread_join(fz_threads[i].tid, NULL);

	/* The books, with every thread stopped: a thread of its own. */
	t = &fz_threads[FZ_CONSUMER];
	t->name = "final";
	t->desc_len = 0;
	t->desc[0] = '\0';
	fz_final_drain(t);

	fz_report(&total);
	fz_consumer_report();
	if (fz.log)
		fclose(fz.log);
	printf("rt_fuzz: seed %" PRIu64 ": %" PRIu64 " operations, %" PRIu64
	       " assertion failures\n", fz.seed, total, atomic_load(&fz.fails));
	return atomic_load(&fz.fails) ? 1 : 0;
}
