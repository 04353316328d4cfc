// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: module unload attempts throughout, and real unload/reload
 * cycles.
 *
 * While the thread holds a ringtrace file open -- or only a mapping of a
 * buffer file, its fd closed -- delete_module() must fail with
 * EWOULDBLOCK and leave everything working (abi.rst "Module lifetime"), as
 * it must for ringtrace_selftest while one of its files is open, and for
 * ringtrace while ringtrace_selftest uses it.  Loading a loaded module
 * again fails with EEXIST.
 *
 * Now and then (with --ko and --selftest-ko) the thread takes fz.mod_lock
 * for writing, so that no other thread holds a file, and unloads both
 * modules for real while a helper opens files as fast as it can; then it
 * loads them again and checks that both trees came back in their initial
 * state.  Opens that race with the unload fail cleanly (ENOENT, ENXIO,
 * ENODEV) or succeed and make that rmmod fail, which is retried.
 */
#include "fuzz.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FZ_KMOD_DIR		"/sys/kernel/debug/ringtrace_selftest"

static long fz_delete_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

static long fz_load_module(const char *path)
{
	long ret;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Write @on to cpu/<cpu>/online: 0 or -errno. */
static long fz_cpu_set(unsigned int cpu, bool on)
{
	char path[64];
	long ret;
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/online", cpu);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

static bool fz_loaded(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return !access(path, F_OK);
}

/* rmmod while we hold a file of the module: refused, nothing changes. */
static void fz_rmmod_busy(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	static const char *const rels[] = {
		"stats", "tracing_on", "marker", "metadata", "events/enable",
		"set_event", "available_events",
	};
	const char *rel = fz_pick(r, rels);
	char buf[256];
	long ret;
	int fd;

	fz_op(t, FZ_OP_RMMOD_BUSY);
	fd = fz_open(t, fz_chance(r, 30), rel, strcmp(rel, "marker") ?
		     O_RDONLY : O_WRONLY);
	if (!FZ_CHECK(t, fd >= 0, "open %s: %s", rel, fz_err(fd)))
		return;
	ret = fz_delete_module("ringtrace");
	fz_desc(t, "rmmod ringtrace holding %s -> %s", rel, fz_err(ret));
	FZ_EXPECT(t, "rmmod of a module in use", ret, -EWOULDBLOCK);
	FZ_CHECK(t, fz_loaded("ringtrace"), "ringtrace unloaded with %s open",
		 rel);
	close(fd);
	ret = fz_read(false, "tracing_on", buf, sizeof(buf));
	FZ_CHECK(t, ret == 2, "tracing_on after a refused rmmod: %s",
		 fz_err(ret));
	fz_refused(t);

	if (fz.have_kmod && fz_chance(r, 50)) {
		fd = open(FZ_KMOD_DIR "/result", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ret = fz_delete_module("ringtrace_selftest");
			fz_desc(t, "; rmmod ringtrace_selftest holding result -> %s",
				fz_err(ret));
			FZ_EXPECT(t, "rmmod of ringtrace_selftest in use", ret,
				  -EWOULDBLOCK);
			close(fd);
		}
	}
	/* Names that are not modules, or not strings. */
	ret = fz_delete_module(fz_pick(r, ((const char *const[]){
		"ringtrace_nope", "", "ringtrac",
		"ringtrace_with_a_name_longer_than_module_name_len_allows_it" })));
	FZ_EXPECT(t, "rmmod of no such module", ret, -ENOENT);
	ret = syscall(SYS_delete_module, NULL, O_NONBLOCK) ? -errno : 0;
	FZ_EXPECT(t, "rmmod with a NULL name", ret, -EFAULT);
}

/* Only a mapping of a buffer file left, its fd closed: still pinned. */
static void fz_rmmod_mapped(struct fz_thread *t)
{
	unsigned int cpu = fz_below(&t->rng, fz.ncpus);
	struct fz_open_result o;
	uint64_t expected;
	void *p;
	long ret;

	fz_op(t, FZ_OP_RMMOD_BUSY);
	pthread_rwlock_rdlock(&fz.buf_lock);
	o = fz_buf_open(t, cpu, fz_chance(&t->rng, 50), O_RDONLY, true);
	if (o.fd < 0) {
		fz_desc(t, "cpu%u busy", cpu);
		pthread_rwlock_unlock(&fz.buf_lock);
		return;
	}
	p = mmap(NULL, fz.page, PROT_READ, MAP_SHARED, o.fd, 0);
	close(o.fd);
	if (FZ_CHECK(t, p != MAP_FAILED, "mmap: %s", fz_err(-errno))) {
		ret = fz_delete_module("ringtrace");
		fz_desc(t, "rmmod holding only a mapping of cpu%u -> %s", cpu,
			fz_err(ret));
		FZ_EXPECT(t, "rmmod with a buffer mapped", ret, -EWOULDBLOCK);
		FZ_CHECK(t, ((const struct ringtrace_meta *)p)->cpu == cpu,
			 "the mapping after a refused rmmod");
	}
	/* The mapping is the last reference: no more "surely open" once... */
	expected = o.token;
	atomic_compare_exchange_strong(&fz.cpu[cpu].held, &expected, 0);
	/* ...it goes, and the file closes with it. */
	if (p != MAP_FAILED)
		munmap(p, fz.page);
	fz_buf_racy(cpu, -1);
	pthread_rwlock_unlock(&fz.buf_lock);
}

static void fz_insmod_loaded(struct fz_thread *t)
{
	long ret;

	fz_op(t, FZ_OP_INSMOD_DUP);
	ret = fz_load_module(fz.ko);
	fz_desc(t, "insmod ringtrace.ko again -> %s", fz_err(ret));
	FZ_EXPECT(t, "loading a loaded module", ret, -EEXIST);
	fz_refused(t);
}

/* ------------------------------------------------------------------ */
/* The cycle                                                           */
/* ------------------------------------------------------------------ */

struct fz_racer {
	pthread_t tid;
	atomic_bool stop;
	_Atomic uint64_t opens, refused, bad;
	char msg[192];
};

/* Opens files of both trees while the module goes away and comes back. */
static void *fz_racer_main(void *arg)
{
	static const char *const rels[] = {
		"tracing_on", "stats", "marker", "metadata", "cpu/0/buffer",
		"events/enable", "set_event_pid", "num_subbufs",
	};
	struct fz_racer *rc = arg;
	struct fz_rng r = { fz.seed ^ 0x5eed };
	char path[128], buf[64];
	unsigned int i;
	int fd, err;

	while (!atomic_load(&rc->stop)) {
		i = fz_below(&r, sizeof(rels) / sizeof(rels[0]));
		fz_path(path, sizeof(path), fz_chance(&r, 50), rels[i]);
		if (i == 4)
			fz_buf_racy(0, 1);
		fd = open(path, (i == 2 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
		err = fd < 0 ? errno : 0;
		atomic_fetch_add(&rc->opens, 1);
		if (fd >= 0) {
			if (i == 2)
				(void)!write(fd, "race", 4);
			else if (i != 4)
				(void)!read(fd, buf, sizeof(buf));
			close(fd);
		} else if (err == ENOENT || err == ENXIO || err == ENODEV ||
			   err == EBUSY) {
			atomic_fetch_add(&rc->refused, 1);
		} else if (!atomic_fetch_add(&rc->bad, 1)) {
			snprintf(rc->msg, sizeof(rc->msg), "open %s: %s", path,
				 strerrorname_np(err));
		}
		if (i == 4)
			fz_buf_racy(0, -1);
		/* Short holds: the rmmod it races must get its turn. */
		usleep(fz_below(&r, 2000));
	}
	return NULL;
}

static void fz_racer_start(struct fz_racer *rc)
{
	memset(rc, 0, sizeof(*rc));
	pthread_create(&rc->tid, NULL, fz_racer_main, rc);
}

static void fz_racer_stop(struct fz_thread *t, struct fz_racer *rc)
{
	atomic_store(&rc->stop, true);
	pthread_join(rc->tid, NULL);
	fz_desc(t, " [racer: %" PRIu64 " opens, %" PRIu64 " refused]",
		atomic_load(&rc->opens), atomic_load(&rc->refused));
	FZ_CHECK(t, !atomic_load(&rc->bad), "%" PRIu64
		 " opens racing the module failed oddly: %s",
		 atomic_load(&rc->bad), rc->msg);
}

/* rmmod, retried while the racer holds a file for a moment. */
static long fz_unload(const char *name)
{
	long ret;
	int i;

	for (i = 0; i < 500; i++) {
		ret = fz_delete_module(name);
		if (ret != -EWOULDBLOCK)
			return ret;
		usleep(2000);
	}
	return ret;
}

static void fz_cycle(struct fz_thread *t)
{
	struct fz_racer rc;
	char buf[64];
	long ret;

	fz_op(t, FZ_OP_RMMOD_CYCLE);
	fz_mod_release(t);
	pthread_rwlock_wrlock(&fz.mod_lock);
	if (fz_stopping()) {
		pthread_rwlock_unlock(&fz.mod_lock);
		return;
	}
	fz_ctl_begin();
	/* No other thread holds a file: only the racer will. */
	if (fz.have_kmod) {
		ret = fz_delete_module("ringtrace");
		FZ_EXPECT(t, "rmmod ringtrace under ringtrace_selftest", ret,
			  -EWOULDBLOCK);
		ret = fz_unload("ringtrace_selftest");
		fz_desc(t, "rmmod ringtrace_selftest -> %s; ", fz_err(ret));
		FZ_EXPECT(t, "rmmod ringtrace_selftest, unused", ret, 0);
	}
	fz_racer_start(&rc);
	ret = fz_unload("ringtrace");
	fz_racer_stop(t, &rc);
	fz_desc(t, " rmmod ringtrace -> %s;", fz_err(ret));
	FZ_EXPECT(t, "rmmod ringtrace, unused", ret, 0);
	if (!ret) {
		FZ_CHECK(t, !fz_loaded("ringtrace") && access(fz.dbgfs, F_OK) &&
			    access(fz.devdir, F_OK),
			 "ringtrace unloaded but its module or trees remain");
	}

	fz_racer_start(&rc);
	ret = fz_load_module(fz.ko);
	fz_racer_stop(t, &rc);
	fz_desc(t, " insmod -> %s", fz_err(ret));
	FZ_EXPECT(t, "insmod ringtrace", ret, 0, -EEXIST);
	if (fz.have_kmod) {
		ret = fz_load_module(fz.st_ko);
		FZ_EXPECT(t, "insmod ringtrace_selftest", ret, 0, -EEXIST);
	}
	atomic_fetch_add(&fz.mod_gen, 1);
	/* A fresh module: tracing off, discard, 16 x 64 KiB. */
	FZ_CHECK(t, fz_read(false, "tracing_on", buf, sizeof(buf)) == 2 &&
		    !strcmp(buf, "0\n") &&
		    fz_read(true, "mode", buf, sizeof(buf)) > 0 &&
		    !strcmp(buf, "discard\n") &&
		    fz_read_num(false, "subbuf_size") == 65536 &&
		    fz_read_num(true, "num_subbufs") == 64,
		 "the reloaded module is not in its initial state");
	atomic_store(&fz.subbuf_hint, 65536);
	/* Something to consume again. */
	fz_write(false, "tracing_on", "1", 1, 0);
	fz_ctl_end();
	pthread_rwlock_unlock(&fz.mod_lock);
}

/*
 * A CPU goes offline for a moment while everything runs, and comes back:
 * its buffer stays, readable and flushable from other CPUs.
 */
static void fz_cpu_hotplug(struct fz_thread *t)
{
	unsigned int cpu = 1 + fz_below(&t->rng, fz.ncpus - 1);
	long ret;
	int i;

	fz_op(t, FZ_OP_CPU_HOTPLUG);
	pthread_mutex_lock(&fz.hotplug_lock);
	ret = fz_cpu_set(cpu, false);
	fz_desc(t, "cpu%u offline -> %s", cpu, fz_err(ret));
	FZ_EXPECT(t, "CPU offline", ret, 0, -EBUSY);
	if (!ret)
		fz_sleep_ms(fz_below(&t->rng, 500));
	for (i = 0; i < 10; i++) {
		ret = fz_cpu_set(cpu, true);
		if (!ret)
			break;
		fz_sleep_ms(100);
	}
	fz_desc(t, ", online -> %s", fz_err(ret));
	FZ_EXPECT(t, "CPU online again", ret, 0);
	pthread_mutex_unlock(&fz.hotplug_lock);
}

void fz_module_op(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	unsigned int pick = fz_below(r, 100);

	if (pick < 2 && fz.ko && fz.st_ko) {
		fz_cycle(t);
		return;
	}
	fz_mod_hold(t);
	if (pick < 10 && fz.ncpus > 1)
		fz_cpu_hotplug(t);
	else if (pick < 50)
		fz_rmmod_busy(t);
	else if (pick < 85 || !fz.ko)
		fz_rmmod_mapped(t);
	else
		fz_insmod_loaded(t);
	fz_mod_release(t);
	fz_sleep_ms(fz_range(r, 50, 300));
}
