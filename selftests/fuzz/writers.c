// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: the writers -- marker writes of every size, from buffers that
 * fault part-way, through write(), pwrite() and writev(); and
 * ringtrace_selftest.ko's writers (every context on every CPU), its
 * nested and oversized reservations, and its event that is registered and
 * unregistered with two layouts.
 *
 * A marker write must return its count or the error the ABI gives for its
 * size and pointer (abi.rst "marker"): EINVAL for 0 and for more than
 * RINGTRACE_MARKER_MAX or what fits in a sub-buffer, EFAULT for bytes the
 * kernel cannot read -- and then record nothing, which the consumer checks
 * (FZ_MARKER_POISON never arrives).
 */
#include "fuzz.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "marker.h"
#include "../kmod/ringtrace_selftest.h"

#define FZ_KMOD_DIR		"/sys/kernel/debug/ringtrace_selftest"

/* The sizes every marker thread sweeps in turn, and its sequence. */
struct fz_writer {
	uint64_t seq;
	size_t sweep;
};

static struct fz_writer fz_writers[FZ_NR_ROLES];

/* Largest marker a sub-buffer of @subbuf bytes takes. */
static size_t fz_marker_limit(uint64_t subbuf)
{
	uint64_t fit = subbuf - FZ_PAYLOAD_OVERHEAD - 2;	/* u16 len */

	return fit < RINGTRACE_MARKER_MAX ? fit : RINGTRACE_MARKER_MAX;
}

/*
 * What write(marker, p, count) must return with sub-buffers of @subbuf
 * bytes: the count, or the error for its size, then for its pointer.
 */
static long fz_marker_model(const struct fz_ptr *p, size_t count,
			    uint64_t subbuf)
{
	if (p->not_user || (uintptr_t)p->p + count > FZ_USER_TOP)
		return -EFAULT;
	if (!count || count > fz_marker_limit(subbuf))
		return -EINVAL;
	if (p->readable < count)
		return -EFAULT;
	return count;
}

static size_t fz_marker_size(struct fz_thread *t, struct fz_writer *w)
{
	struct fz_rng *r = &t->rng;
	size_t lim = fz_marker_limit(atomic_load(&fz.subbuf_hint));

	switch (fz_below(r, 10)) {
	case 0:
	case 1:
	case 2:
		/* Every size from 1 to the maximum, in turn. */
		return w->sweep++ % RINGTRACE_MARKER_MAX + 1;
	case 3:
		return fz_pick(r, ((const size_t[]){
			0, 1, 2, 3, lim - 1, lim, lim + 1, 3992, 3993, 3994,
			4095, 4096, 4097, 8192, 1U << 20, 1U << 30 }));
	case 4:
		return fz_range(r, 1, 64);
	default:
		return fz_range(r, 1, RINGTRACE_MARKER_MAX);
	}
}

static void fz_marker_one(struct fz_thread *t, struct fz_writer *w, int fd,
			  bool fault)
{
	static __thread uint8_t b[RINGTRACE_MARKER_MAX + 64];
	struct fz_rng *r = &t->rng;
	size_t count = fz_marker_size(t, w), have;
	enum fz_ptr_kind kind = FZ_PTR_GOOD;
	long small, big, ret, size0 = 0, size1;
	struct fz_window win = { 0 };
	struct fz_ptr p;

	fz_op(t, fault ? FZ_OP_MARKER_FAULT : FZ_OP_MARKER);
	have = count < sizeof(b) ? count : sizeof(b);
	if (fault) {
		/* Readable up to a point, then PROT_NONE (or worse). */
		if (count < 2 || count > RINGTRACE_MARKER_MAX)
			count = fz_range(r, 2, RINGTRACE_MARKER_MAX);
		have = count;
		memset(b, 'x', have);
		memcpy(b, FZ_MARKER_POISON, 5);
		kind = fz_chance(r, 70) ? FZ_PTR_EDGE : fz_pick_ptr(r);
		/* Readable whole: not a faulting buffer (it would be recorded). */
		if (kind == FZ_PTR_GOOD || kind == FZ_PTR_RO)
			kind = FZ_PTR_EDGE;
	} else if (have) {
		fz_marker_fill(b, have, t->idx, w->seq++);
	}
	p = fz_place(t, kind, b, have, count);
	/*
	 * The verdict with the smallest and the largest sub-buffers; where
	 * they differ, the size of the moment decides, if it held still.
	 */
	small = fz_marker_model(&p, count, fz.page);
	big = fz_marker_model(&p, count, RINGTRACE_MAX_SUBBUF_SIZE);
	if (small != big) {
		fz_window_open(&win);
		size0 = fz_read_num(false, "subbuf_size");
	}
	ret = fz_chance(r, 20) ? pwrite(fd, p.p, count, fz_next(r) >> 20) :
				 write(fd, p.p, count);
	ret = ret < 0 ? -errno : ret;
	fz_desc(t, "%zu@%s -> %s ", count, fz_ptr_name(kind), fz_err(ret));
	if (ret < 0)
		fz_refused(t);
	if (fault && ret == -EFAULT)
		atomic_fetch_add(&fz.poison_written, 1);
	if (small != big) {
		size1 = fz_read_num(false, "subbuf_size");
		if (fz_window_solo(&win, 0) && size0 == size1 && size0 > 0)
			small = big = fz_marker_model(&p, count, size0);
	}
	if (small == big) {
		FZ_EXPECT(t, "marker write", ret, small < 0 ? small : 0);
		if (small >= 0)
			FZ_CHECK(t, ret == small, "marker write of %zu returned %ld",
				 count, ret);
	} else {
		FZ_EXPECT(t, "marker write near the sub-buffer limit", ret,
			  small < 0 ? small : 0, big < 0 ? big : 0);
		if (ret >= 0)
			FZ_CHECK(t, (size_t)ret == count,
				 "marker write of %zu returned %ld", count, ret);
	}
}

/* 2-4 markers in one writev(): each a write of its own, in order. */
static void fz_marker_vec(struct fz_thread *t, struct fz_writer *w, int fd)
{
	static __thread uint8_t b[4][1024];
	struct fz_rng *r = &t->rng;
	unsigned int n = fz_range(r, 2, 4), i, bad = n;
	struct iovec iov[4];
	long want = 0, ret;

	fz_op(t, FZ_OP_MARKER_VEC);
	if (fz_chance(r, 30))
		bad = fz_below(r, n);	/* this one from a faulting buffer */
	for (i = 0; i < n; i++) {
		size_t len = fz_range(r, 1, sizeof(b[0]));

		if (i == bad) {
			/* The unreadable page after the edge page. */
			iov[i].iov_base = t->mem.none;
			iov[i].iov_len = len;
			continue;
		}
		fz_marker_fill(b[i], len, t->idx, w->seq++);
		iov[i].iov_base = b[i];
		iov[i].iov_len = len;
	}
	/* Written until the first failure; that one's error if it is first. */
	for (i = 0; i < n; i++) {
		if (i == bad) {
			if (!want)
				want = -EFAULT;
			break;
		}
		want += iov[i].iov_len;
	}
	ret = writev(fd, iov, n);
	ret = ret < 0 ? -errno : ret;
	fz_desc(t, "writev %u iovecs%s -> %s", n, bad < n ? " one faulting" : "",
		fz_err(ret));
	FZ_EXPECT(t, "writev of markers", ret, want < 0 ? want : 0);
	if (want >= 0)
		FZ_CHECK(t, ret == want, "writev returned %ld, expected %ld", ret,
			 want);
	if (ret < 0)
		fz_refused(t);
}

/* The marker has no splice_write: splice() and sendfile() refuse it. */
static void fz_marker_splice(struct fz_thread *t, int fd)
{
	int pipefd[2];
	long ret;

	fz_op(t, FZ_OP_MARKER_SPLICE);
	if (pipe2(pipefd, O_CLOEXEC))
		return;
	if (write(pipefd[1], "spliced marker", 14) == 14) {
		ret = splice(pipefd[0], NULL, fd, NULL, 14, 0);
		ret = ret < 0 ? -errno : ret;
		fz_desc(t, "splice -> %s ", fz_err(ret));
		FZ_EXPECT(t, "splice into the marker", ret, -EINVAL);
		fz_refused(t);
	}
	close(pipefd[0]);
	close(pipefd[1]);
}

void fz_marker_op(struct fz_thread *t)
{
	struct fz_writer *w = &fz_writers[t->idx];
	struct fz_rng *r = &t->rng;
	unsigned int n = fz_range(r, 1, 20), i;
	int fd;

	t->op = FZ_OP_MARKER;
	fd = fz_open(t, fz_chance(r, 30), "marker", O_WRONLY);
	if (!FZ_CHECK(t, fd >= 0, "open marker: %s", fz_err(fd)))
		return;
	for (i = 0; i < n; i++) {
		if (fz_chance(r, 1))
			fz_marker_splice(t, fd);
		else if (fz_chance(r, 5))
			fz_marker_vec(t, w, fd);
		else
			fz_marker_one(t, w, fd, fz_chance(r, 8));
	}
	close(fd);
}

/* ------------------------------------------------------------------ */
/* ringtrace_selftest.ko                                               */
/* ------------------------------------------------------------------ */

static long fz_kmod_write(const char *file, const char *s)
{
	char path[128];
	long ret;
	int fd;

	snprintf(path, sizeof(path), FZ_KMOD_DIR "/%s", file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write(fd, s, strlen(s));
	ret = ret < 0 ? -errno : ret;
	close(fd);
	return ret;
}

static long fz_kmod_read(const char *file, char *buf, size_t size)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), FZ_KMOD_DIR "/%s", file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* Writers in every context on every CPU, for a second or two. */
static void fz_kmod_run(struct fz_thread *t)
{
	static const char *const bad[] = {
		"0 0 1", "1 0 0", "1 0 32", "1 0 1 0", "1 0 1 4097", "601 0 1",
		"1 0 1 2 x", "1", "", "x 0 1",
	};
	struct fz_rng *r = &t->rng;
	char cmd[64];
	long ret;

	fz_op(t, FZ_OP_KMOD_RUN);
	if (fz_chance(r, 15)) {
		snprintf(cmd, sizeof(cmd), "%s", fz_pick(r, bad));
		ret = fz_kmod_write("run", cmd);
		fz_desc(t, "run \"%s\" -> %s", cmd, fz_err(ret));
		FZ_EXPECT(t, "bad run command", ret, -EINVAL);
		fz_refused(t);
		return;
	}
	snprintf(cmd, sizeof(cmd), "1 %u %u %u",
		 fz_chance(r, 50) ? 0 : (unsigned int)fz_range(r, 100, 20000),
		 (unsigned int)fz_range(r, 1, RTST_FLAGS_ALL),
		 fz_chance(r, 10) ? 400 : (unsigned int)fz_range(r, 1, 64));
	pthread_mutex_lock(&fz.hotplug_lock);
	ret = fz_kmod_write("run", cmd);
	pthread_mutex_unlock(&fz.hotplug_lock);
	fz_desc(t, "run \"%s\" -> %s", cmd, fz_err(ret));
	FZ_EXPECT(t, "run", ret, 0);
}

static void fz_kmod_nest(struct fz_thread *t)
{
	unsigned int accepted, refused;
	char buf[128];
	int cpu, max;
	long ret;

	fz_op(t, FZ_OP_KMOD_NEST);
	ret = fz_kmod_write("nest", "0x1234");
	if (!FZ_EXPECT(t, "nest", ret, 0))
		return;
	ret = fz_kmod_read("nest", buf, sizeof(buf));
	if (ret < 0 || sscanf(buf, "cpu=%d max_nesting=%d accepted=%u refused=%u",
			      &cpu, &max, &accepted, &refused) != 4) {
		FZ_CHECK(t, false, "nest reads \"%s\"", ret < 0 ? fz_err(ret) : buf);
		return;
	}
	fz_desc(t, "nest: accepted=%u refused=%u", accepted, refused);
	/* One more than the nesting limit: the deepest is always refused. */
	FZ_CHECK(t, accepted + refused == (unsigned int)max + 1 &&
		    accepted <= (unsigned int)max,
		 "nest %d deep: accepted %u refused %u", max + 1, accepted,
		 refused);
}

static void fz_kmod_oversize(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	uint64_t subbuf = atomic_load(&fz.subbuf_hint);
	unsigned int n, len, acc;
	struct fz_window w;
	long ret, size0, size1;
	char buf[128], cmd[32];
	int cpu;

	fz_op(t, FZ_OP_KMOD_OVERSIZE);
	/* Around what fits in the current sub-buffer (4-byte len first). */
	n = fz_pick(r, ((const uint64_t[]){ 0, 10, subbuf, subbuf / 2,
		subbuf - FZ_PAYLOAD_OVERHEAD - 4, subbuf - FZ_PAYLOAD_OVERHEAD - 5,
		subbuf - FZ_PAYLOAD_OVERHEAD - 3, 4096, 65536 }));
	if (n > 128 * 1024)
		n = 128 * 1024;
	snprintf(cmd, sizeof(cmd), "%u", n);
	fz_window_open(&w);
	size0 = fz_read_num(false, "subbuf_size");
	ret = fz_kmod_write("oversize", cmd);
	size1 = fz_read_num(false, "subbuf_size");
	if (!FZ_EXPECT(t, "oversize", ret, 0))
		return;
	ret = fz_kmod_read("oversize", buf, sizeof(buf));
	if (ret < 0 || sscanf(buf, "cpu=%d len=%u accepted=%u", &cpu, &len,
			      &acc) != 3) {
		FZ_CHECK(t, false, "oversize reads \"%s\"",
			 ret < 0 ? fz_err(ret) : buf);
		return;
	}
	fz_desc(t, "blob of %u: accepted=%u (subbuf %ld)", n, acc, size0);
	/* Accepted only if it fits: payload <= subbuf - header - 13. */
	if (fz_window_solo(&w, 0) && size0 == size1 && size0 > 0 && acc)
		FZ_CHECK(t, 4 + (uint64_t)n <= (uint64_t)size0 - FZ_PAYLOAD_OVERHEAD,
			 "a blob of %u bytes was accepted in %ld-byte sub-buffers",
			 n, size0);
}

/* The event that comes and goes, with two layouts under one name. */
static void fz_kmod_dyn(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	char buf[128], cmd[32];
	int registered = 0;
	long ret;

	fz_op(t, FZ_OP_KMOD_DYN);
	ret = fz_kmod_read("dyn", buf, sizeof(buf));
	if (!FZ_CHECK(t, ret > 0, "read dyn: %s", fz_err(ret)))
		return;
	sscanf(buf, "registered=%d", &registered);
	switch (fz_below(r, 4)) {
	case 0:
		snprintf(cmd, sizeof(cmd), "register %c", fz_chance(r, 50) ? 'a' : 'b');
		ret = fz_kmod_write("dyn", cmd);
		/*
		 * Layouts a and b keep their ids once declared; a run that
		 * declared 1024 other events first finds none left.
		 */
		if (registered)
			FZ_EXPECT(t, "register twice", ret, -EINVAL);
		else
			FZ_EXPECT(t, "register", ret, 0, -ENOSPC);
		break;
	case 1:
		snprintf(cmd, sizeof(cmd), "unregister");
		ret = fz_kmod_write("dyn", cmd);
		FZ_EXPECT(t, "unregister", ret, registered ? 0 : -EINVAL);
		break;
	default:
		snprintf(cmd, sizeof(cmd), "write %u", (unsigned int)fz_range(r, 1, 500));
		ret = fz_kmod_write("dyn", cmd);
		FZ_EXPECT(t, "dyn write", ret, registered ? 0 : -EINVAL);
	}
	fz_desc(t, "dyn (registered=%d) \"%s\" -> %s", registered, cmd,
		fz_err(ret));
	if (ret < 0)
		fz_refused(t);
}

void fz_kmod_op(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;

	if (!fz.have_kmod || access(FZ_KMOD_DIR "/run", W_OK)) {
		t->op = FZ_OP_KMOD_RUN;
		fz_desc(t, "ringtrace_selftest not loaded");
		fz_sleep_ms(200);
		return;
	}
	switch (fz_below(r, 10)) {
	case 0:
	case 1:
	case 2:
		fz_kmod_run(t);
		break;
	case 3:
		fz_kmod_nest(t);
		break;
	case 4:
		fz_kmod_oversize(t);
		break;
	default:
		fz_kmod_dyn(t);
	}
}
