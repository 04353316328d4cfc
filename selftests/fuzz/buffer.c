// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: the CPU buffer files -- ioctls and mmap.
 *
 * ioctl thread.  A session on a buffer of its own (or, when the consumer
 * holds the only free one, the consumer's file on loan, for calls that do
 * not GET or PUT) makes valid calls, calls with every field of the
 * argument wrong in turn, calls whose argument sits at a bad address, and
 * unknown command numbers.  fz_ioc_model() says what include/uapi/linux/
 * ringtrace.h promises for each; the session tracks whether it holds a
 * packet, and GET_POSITIONS must agree after every refused call: a call
 * that fails leaves no packet held that was not held before.  It also
 * forks a child that does GET/PUT on the same file as the parent (two
 * consumers of one file), and opens what cannot be opened.
 *
 * mmap thread.  A session maps its own buffer file while a helper thread
 * does GET/PUT on it, and throws random mmap() lengths, offsets,
 * protections and flags at it, mprotect() to writable or executable,
 * mremap() to grow, shrink and move, partial munmap(), madvise(), and
 * fork(): the mapping must never become writable or grow, and a child
 * must not inherit it.
 */
#include "fuzz.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Arguments and the model of an ioctl                                 */
/* ------------------------------------------------------------------ */

enum fz_cmd { C_GET, C_PUT, C_FLUSH, C_POS, C_STATS, C_NR };

static const unsigned int fz_cmds[C_NR] = {
	[C_GET] = RINGTRACE_IOC_GET_SUBBUF,
	[C_PUT] = RINGTRACE_IOC_PUT_SUBBUF,
	[C_FLUSH] = RINGTRACE_IOC_FLUSH,
	[C_POS] = RINGTRACE_IOC_GET_POSITIONS,
	[C_STATS] = RINGTRACE_IOC_GET_STATS,
};

static const char *const fz_cmd_names[C_NR] = {
	"GET", "PUT", "FLUSH", "POSITIONS", "STATS",
};

static size_t fz_ksize(enum fz_cmd c)
{
	switch (c) {
	case C_GET:
	case C_PUT:
		return sizeof(struct ringtrace_subbuf);
	case C_POS:
		return sizeof(struct ringtrace_positions);
	case C_STATS:
		return sizeof(struct ringtrace_stats);
	default:
		return 0;
	}
}

/* The argument as built: @len bytes, the struct first. */
struct fz_arg {
	uint8_t b[2 * 4096];
	size_t len;
	uint32_t usize, flags;
	bool tail_dirty, reserved_dirty;
	size_t dirty_at;		/* the tail's nonzero byte */
};

/*
 * Where the input alone decides (rtr_arg_in(), in its order), the errno;
 * 0 when the call gets to the buffer.  @p says what the kernel can read.
 */
static long fz_ioc_input(enum fz_cmd c, const struct fz_arg *a,
			 const struct fz_ptr *p)
{
	size_t ksize = fz_ksize(c);

	if (c == C_FLUSH)
		return 0;
	if (p->readable < 8)
		return -EFAULT;
	if (a->usize < ksize)			/* *_SIZE_VER0 == sizeof */
		return -EINVAL;
	if (a->usize > 4096)
		return -E2BIG;
	/*
	 * The tail is scanned from its start (check_zeroed_user()): a nonzero
	 * byte found before the first unreadable one is EINVAL, else a fault
	 * is EFAULT.  (The unreadable part starts on a page boundary, so
	 * word-sized reads see every readable byte.)
	 */
	if (a->usize > ksize) {
		if (a->tail_dirty && a->dirty_at < p->readable)
			return -EINVAL;
		if (p->readable < a->usize)
			return -EFAULT;
		if (a->tail_dirty)
			return -EINVAL;
	}
	if (p->readable < ksize)
		return -EFAULT;
	if (a->flags)
		return -EINVAL;
	if (c == C_STATS && a->reserved_dirty)
		return -EINVAL;
	return 0;
}

/* A valid argument for @c (PUT of @pos), maybe with one thing wrong. */
static void fz_arg_build(struct fz_rng *r, enum fz_cmd c, uint64_t pos,
			 bool corrupt, struct fz_arg *a)
{
	static const uint32_t sizes[] = {
		0, 1, 7, 8, 39, 40, 41, 55, 56, 57, 64, 111, 112, 113, 120,
		4095, 4096, 4097, 65536, 0x80000000U, 0xffffffffU,
	};
	size_t ksize = fz_ksize(c);

	memset(a, 0, sizeof(*a));
	a->usize = ksize;
	if (c == C_PUT)
		memcpy(a->b + offsetof(struct ringtrace_subbuf, pos), &pos, 8);
	if (c == C_GET && fz_chance(r, 30))	/* out fields: ignored on input */
		memset(a->b + 8, 0xa5, ksize - 8);
	if (corrupt) {
		switch (fz_below(r, 5)) {
		case 0:
			a->usize = fz_pick(r, sizes);
			break;
		case 1:
			a->flags = 1U << fz_below(r, 32);
			break;
		case 2:
			if (c == C_STATS) {
				a->reserved_dirty = true;
				a->b[offsetof(struct ringtrace_stats, reserved) +
				     fz_below(r, 32)] = 1;
			} else {
				a->flags = fz_next(r) | 1;
			}
			break;
		default:
			/* A longer struct: a zero tail is fine, a dirty one not. */
			a->usize = ksize + 8 * fz_range(r, 1, 64);
			if (fz_chance(r, 50)) {
				a->tail_dirty = true;
				a->dirty_at = ksize + fz_below(r, a->usize - ksize);
				a->b[a->dirty_at] = 0x5a;
			}
		}
	}
	memcpy(a->b, &a->usize, 4);
	memcpy(a->b + 4, &a->flags, 4);
	a->len = a->usize > ksize ? a->usize : ksize;
	if (a->len > sizeof(a->b))
		a->len = sizeof(a->b);
}

/* Command numbers ringtrace must not know (families, see below). */
static unsigned int fz_unknown_cmd(struct fz_rng *r)
{
	/* Types the VFS answers itself (fs/ioctl.c): FIONBIO, FICLONE, ... */
	static const unsigned int vfs_types[] = { 0x00, 0x15, 0x54, 0x58, 0x66, 0x94 };
	unsigned int cmd, i;

	for (;;) {
		switch (fz_below(r, 3)) {
		case 0:	/* our type, any number, size and direction */
			cmd = _IOC(fz_below(r, 4), RINGTRACE_IOC_TYPE,
				   fz_below(r, 256), fz_below(r, 1 << 14));
			break;
		case 1:	/* our numbers with another direction or size */
			cmd = _IOC(fz_below(r, 4), RINGTRACE_IOC_TYPE,
				   fz_range(r, 1, 5),
				   fz_pick(r, ((const unsigned int[]){ 0, 4, 8, 40, 56, 112, 113 })));
			break;
		default:
			cmd = fz_next(r);
		}
		for (i = 0; i < C_NR; i++)
			if (cmd == fz_cmds[i])
				break;
		if (i < C_NR || cmd == RINGTRACE_IOC_SET_WAKEUP)
			continue;
		for (i = 0; i < sizeof(vfs_types) / sizeof(vfs_types[0]); i++)
			if (_IOC_TYPE(cmd) == vfs_types[i])
				break;
		if (i == sizeof(vfs_types) / sizeof(vfs_types[0]))
			return cmd;
	}
}

/* ------------------------------------------------------------------ */
/* The ioctl thread                                                    */
/* ------------------------------------------------------------------ */

struct fz_ioc {
	bool open;
	unsigned int cpu;
	int fd;
	uint64_t token;
	bool held;
	uint64_t held_pos;
	uint32_t subbuf_size;
	double end;
	unsigned int ops_left;
};

static struct fz_ioc fz_ioc;

void fz_ioctl_end(struct fz_thread *t)
{
	struct fz_ioc *s = &fz_ioc;

	if (!s->open)
		return;
	fz_buf_close(s->cpu, s->fd, s->token);
	s->open = false;
	pthread_rwlock_unlock(&fz.buf_lock);
	t->in_session = false;
}

/* The held bit GET_POSITIONS reports, or -errno. */
static int fz_held_bit(int fd, uint64_t *pos)
{
	struct ringtrace_positions p = { .size = sizeof(p) };

	if (ioctl(fd, RINGTRACE_IOC_GET_POSITIONS, &p))
		return -errno;
	*pos = p.consumed_pos & ~RINGTRACE_POS_HELD;
	return !!(p.consumed_pos & RINGTRACE_POS_HELD);
}

/* After a call: the kernel holds a packet exactly when we think we do. */
static void fz_ioc_check_held(struct fz_thread *t, struct fz_ioc *s,
			      const char *after)
{
	uint64_t pos = 0;
	int held = fz_held_bit(s->fd, &pos);

	if (!FZ_CHECK(t, held >= 0, "GET_POSITIONS: %s", fz_err(held)))
		return;
	FZ_CHECK(t, held == s->held && (!held || pos == s->held_pos),
		 "after %s the kernel %s a packet (at %" PRIu64
		 "), the caller %s", after, held ? "holds" : "holds no",
		 pos, s->held ? "holds one" : "holds none");
	s->held = held;
	s->held_pos = pos;
}

/*
 * One call of a buffer command through @p; judged against the input and
 * the session's state.  @own: the session's file (else a lent one, where
 * GET and PUT are not made).
 */
static void fz_ioc_call(struct fz_thread *t, struct fz_ioc *s, int fd,
			enum fz_cmd c, struct fz_arg *a, enum fz_ptr_kind kind,
			bool own)
{
	size_t ksize = fz_ksize(c);
	struct fz_ptr p;
	long in, ret;
	uint32_t size_back;

	p = fz_place(t, kind, a->b, a->len, a->len);
	in = fz_ioc_input(c, a, &p);
	fz_desc(t, "%s size=%u flags=%#x%s%s at %s", fz_cmd_names[c], a->usize,
		a->flags, a->tail_dirty ? " tail" : "",
		a->reserved_dirty ? " reserved" : "", fz_ptr_name(kind));
	ret = ioctl(fd, fz_cmds[c], p.p) ? -errno : 0;
	fz_desc(t, " -> %s", fz_err(ret));
	if (ret)
		fz_refused(t);
	if (in) {
		FZ_EXPECT(t, "ioctl with this argument", ret, in);
		return;
	}
	switch (c) {
	case C_GET:
		if (s->held) {
			FZ_EXPECT(t, "GET while holding", ret, -EBUSY);
			break;
		}
		if (p.writable < ksize) {
			/* Took a packet, cannot say which: must give it back. */
			FZ_EXPECT(t, "GET into unwritable memory", ret, -EFAULT,
				  -EAGAIN, -ENODATA);
			break;
		}
		FZ_EXPECT(t, "GET", ret, 0, -EAGAIN, -ENODATA);
		if (!ret) {
			struct ringtrace_subbuf sb;

			memcpy(&sb, p.p, sizeof(sb));
			memcpy(&size_back, p.p, 4);
			FZ_CHECK(t, size_back == ksize,
				 "GET wrote size %u", size_back);
			FZ_CHECK(t, sb.content_size >= sizeof(struct ringtrace_packet_header) &&
				    sb.content_size < sb.packet_size &&
				    sb.packet_size == s->subbuf_size &&
				    sb.offset >= fz.page &&
				    sb.pos % s->subbuf_size == 0,
				 "GET: pos %llu offset %llu content %llu packet %llu",
				 (unsigned long long)sb.pos,
				 (unsigned long long)sb.offset,
				 (unsigned long long)sb.content_size,
				 (unsigned long long)sb.packet_size);
			if (a->usize > ksize)
				FZ_CHECK(t, !memcmp((uint8_t *)p.p + ksize,
						    a->b + ksize, a->usize - ksize),
					 "GET wrote past its struct");
			s->held = true;
			s->held_pos = sb.pos;
		}
		break;
	case C_PUT: {
		uint64_t pos;

		memcpy(&pos, a->b + offsetof(struct ringtrace_subbuf, pos), 8);
		if (s->held && pos == s->held_pos) {
			FZ_EXPECT(t, "PUT of the held packet", ret, 0);
			s->held = false;
		} else {
			FZ_EXPECT(t, "PUT of a packet not held", ret, -EINVAL);
		}
		break;
	}
	case C_FLUSH:
		FZ_EXPECT(t, "FLUSH", ret, 0);
		break;
	default:
		if (p.writable < ksize) {
			FZ_EXPECT(t, "ioctl into unwritable memory", ret, -EFAULT);
			break;
		}
		FZ_EXPECT(t, "ioctl", ret, 0);
		memcpy(&size_back, p.p, 4);
		FZ_CHECK(t, ret || size_back == ksize, "%s wrote size %u",
			 fz_cmd_names[c], size_back);
		if (!ret && a->usize > ksize)
			FZ_CHECK(t, !memcmp((uint8_t *)p.p + ksize, a->b + ksize,
					    a->usize - ksize),
				 "%s wrote past its struct", fz_cmd_names[c]);
	}
	if (own)
		fz_ioc_check_held(t, s, fz_cmd_names[c]);
}

/* Two consumers of one file: a child GETs and PUTs with the parent. */
static void fz_ioc_fork(struct fz_thread *t, struct fz_ioc *s)
{
	struct ringtrace_subbuf sb;
	int i, status = 0, ret;
	uint64_t pos = 0;
	pid_t pid;

	fz_op(t, FZ_OP_IOC_SHARED);
	atomic_fetch_add(&fz.children, 1);
	atomic_fetch_add(&fz.forks, 1);
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		for (i = 0; i < 50; i++) {
			memset(&sb, 0, sizeof(sb));
			sb.size = sizeof(sb);
			ret = ioctl(s->fd, RINGTRACE_IOC_GET_SUBBUF, &sb) ? errno : 0;
			if (ret && ret != EAGAIN && ret != ENODATA && ret != EBUSY)
				bad |= 1;
			if (!ret && ioctl(s->fd, RINGTRACE_IOC_PUT_SUBBUF, &sb) &&
			    errno != EINVAL)
				bad |= 2;
		}
		_exit(bad);
	}
	for (i = 0; pid > 0 && i < 50; i++) {
		memset(&sb, 0, sizeof(sb));
		sb.size = sizeof(sb);
		ret = ioctl(s->fd, RINGTRACE_IOC_GET_SUBBUF, &sb) ? -errno : 0;
		FZ_EXPECT(t, "GET on a shared file", ret, 0, -EAGAIN, -ENODATA,
			  -EBUSY);
		if (!ret) {
			ret = ioctl(s->fd, RINGTRACE_IOC_PUT_SUBBUF, &sb) ? -errno : 0;
			/* The child may have put it back in between: EINVAL. */
			FZ_EXPECT(t, "PUT on a shared file", ret, 0, -EINVAL);
		}
	}
	if (pid > 0) {
		waitpid(pid, &status, 0);
		FZ_CHECK(t, WIFEXITED(status) && !WEXITSTATUS(status),
			 "child consumer of the shared file: status %#x", status);
	} else {
		FZ_CHECK(t, false, "fork: %s", fz_err(-errno));
	}
	atomic_fetch_sub(&fz.children, 1);
	/* Whoever took the last packet: give it back, start clean. */
	if (fz_held_bit(s->fd, &pos) == 1)
		FZ_EXPECT(t, "PUT of a packet left held", (long)(ioctl(s->fd,
			  RINGTRACE_IOC_PUT_SUBBUF, &(struct ringtrace_subbuf){
				  .size = sizeof(sb), .pos = pos }) ? -errno : 0), 0);
	s->held = false;
	fz_desc(t, "fork: parent and child GET/PUT one file");
}

/* Opens that must fail, and buffer opens that race with everything. */
static void fz_ioc_opens(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	struct fz_open_result o;
	unsigned int cpu;
	bool dev = fz_chance(r, 50);
	int flags = fz_pick(r, ((const int[]){ O_RDONLY, O_RDWR, O_WRONLY,
					      O_RDONLY | O_NONBLOCK }));

	fz_op(t, FZ_OP_IOC_OPEN);
	if (fz_chance(r, 30)) {
		/* No such CPU: no such file. */
		cpu = fz.ncpus + fz_below(r, 4096);
		o = fz_buf_open(t, cpu, dev, O_RDONLY, false);
		fz_desc(t, "open cpu%u -> %s", cpu, fz_err(o.fd));
		if (o.fd >= 0)
			close(o.fd);
		FZ_EXPECT(t, "open of a CPU that does not exist", o.fd, -ENOENT);
		fz_refused(t);
		return;
	}
	/* Outside buf_lock: races with geometry changes and sessions. */
	cpu = fz_below(r, fz.ncpus);
	o = fz_buf_open(t, cpu, dev, flags, true);
	fz_desc(t, "racing open %scpu%u flags %#x -> %s", dev ? "dev:" : "",
		cpu, flags, fz_err(o.fd));
	if (o.fd < 0) {
		FZ_EXPECT(t, "open of a buffer file", o.fd, -EBUSY, -ENODEV);
		fz_refused(t);
		return;
	}
	if (fz_chance(r, 50)) {
		struct ringtrace_stats st = { .size = sizeof(st) };
		long ret = ioctl(o.fd, RINGTRACE_IOC_GET_STATS, &st) ? -errno : 0;

		FZ_EXPECT(t, "GET_STATS", ret, 0);
	}
	fz_buf_close(cpu, o.fd, o.token);
}

static void fz_ioc_session_open(struct fz_thread *t, struct fz_ioc *s)
{
	struct fz_rng *r = &t->rng;
	struct ringtrace_positions p = { .size = sizeof(p) };
	struct fz_open_result o;
	unsigned int cpu = fz_below(r, fz.ncpus);
	bool dev = fz_chance(r, 50);

	fz_op(t, FZ_OP_IOC_OPEN);
	pthread_rwlock_rdlock(&fz.buf_lock);
	o = fz_buf_open(t, cpu, dev, O_RDONLY, true);
	fz_desc(t, "session %scpu%u -> %s", dev ? "dev:" : "", cpu,
		fz_err(o.fd));
	if (o.fd < 0) {
		FZ_EXPECT(t, "open of a buffer file", o.fd, -EBUSY, -ENODEV);
		fz_refused(t);
		pthread_rwlock_unlock(&fz.buf_lock);
		return;
	}
	s->open = true;
	s->cpu = cpu;
	s->fd = o.fd;
	s->token = o.token;
	s->held = false;
	t->in_session = true;
	if (!FZ_CHECK(t, !ioctl(o.fd, RINGTRACE_IOC_GET_POSITIONS, &p),
		      "GET_POSITIONS: %s", fz_err(-errno))) {
		fz_ioctl_end(t);
		return;
	}
	s->subbuf_size = p.subbuf_size;
	/* A packet left held by a previous session was given back at close. */
	FZ_CHECK(t, !(p.consumed_pos & RINGTRACE_POS_HELD),
		 "a freshly opened buffer holds a packet");
	s->end = fz_now() + 0.2 + fz_below(r, 1500) / 1000.0;
	s->ops_left = fz_range(r, 10, 200);
}

/*
 * A buffer file has no read or write method and cannot seek: EINVAL for
 * read and pread (it takes offsets, for splice's off_in: FMODE_PREAD),
 * EBADF for write on a read-only fd, ESPIPE for lseek.
 */
static void fz_ioc_file_ops(struct fz_thread *t, struct fz_ioc *s)
{
	uint8_t buf[64];
	long ret;

	fz_op(t, FZ_OP_IOC_FILE_OPS);
	ret = read(s->fd, buf, sizeof(buf));
	FZ_EXPECT(t, "read of a buffer file", ret < 0 ? -errno : ret, -EINVAL);
	ret = write(s->fd, buf, sizeof(buf));
	FZ_EXPECT(t, "write to a read-only buffer fd", ret < 0 ? -errno : ret,
		  -EBADF);
	ret = lseek(s->fd, 4096, SEEK_SET);
	FZ_EXPECT(t, "lseek of a buffer file", ret < 0 ? -errno : ret, -ESPIPE);
	ret = pread(s->fd, buf, sizeof(buf), 0);
	FZ_EXPECT(t, "pread of a buffer file", ret < 0 ? -errno : ret, -EINVAL);
	fz_desc(t, "read/write/lseek/pread refused");
	fz_refused(t);
	fz_ioc_check_held(t, s, "read/write/lseek");
}

/*
 * An epoll set that outlives the files in it: the consumer's file goes in
 * and is closed later by its session; the set is waited on throughout.
 */
static void fz_ioc_epoll(struct fz_thread *t, int fd)
{
	static int ep = -1;
	struct epoll_event ev[4] = { { .events = EPOLLIN | EPOLLPRI } };
	long ret;

	fz_op(t, FZ_OP_IOC_EPOLL);
	if (ep < 0)
		ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return;
	if (fd >= 0) {
		ret = epoll_ctl(ep, EPOLL_CTL_ADD, fd, ev) ? -errno : 0;
		/* The same fd number may already be there, for this file. */
		FZ_EXPECT(t, "EPOLL_CTL_ADD of a buffer file", ret, 0, -EEXIST);
	}
	ret = epoll_wait(ep, ev, 4, 0);
	fz_desc(t, "epoll_wait -> %ld", ret < 0 ? -errno : ret);
	FZ_CHECK(t, ret >= 0, "epoll_wait: %s", fz_err(-errno));
	for (int i = 0; i < ret; i++)
		FZ_CHECK(t, !(ev[i].events & EPOLLERR),
			 "a buffer file polls EPOLLERR (%#x)", ev[i].events);
}

/*
 * SET_WAKEUP on the consumer's file while it drains: 1 .. num_subbufs / 2
 * is taken, anything else refused; the consumer's own GETs after its
 * FLUSHes and at the end do not depend on it.
 */
static void fz_ioc_wakeup(struct fz_thread *t, int fd)
{
	struct fz_rng *r = &t->rng;
	struct ringtrace_positions pos = { .size = sizeof(pos) };
	struct ringtrace_wakeup wk = { .size = sizeof(wk) };
	long ret, want;

	fz_op(t, FZ_OP_IOC_WAKEUP);
	if (ioctl(fd, RINGTRACE_IOC_GET_POSITIONS, &pos))
		return;
	wk.packets = fz_chance(r, 70) ? fz_range(r, 1, pos.num_subbufs / 2) :
		     fz_below(r, pos.num_subbufs + 2);
	if (fz_chance(r, 10))
		wk.reserved = 1;
	want = wk.packets && wk.packets <= pos.num_subbufs / 2 &&
	       !wk.reserved ? 0 : -EINVAL;
	ret = ioctl(fd, RINGTRACE_IOC_SET_WAKEUP, &wk) ? -errno : 0;
	fz_desc(t, "SET_WAKEUP %u of %llu -> %s", wk.packets,
		(unsigned long long)pos.num_subbufs, fz_err(ret));
	FZ_EXPECT(t, "SET_WAKEUP", ret, want);
	if (ret)
		fz_refused(t);
}

/* Calls on the consumer's file, lent: no GET or PUT there. */
static void fz_ioc_lent(struct fz_thread *t)
{
	struct fz_rng *r = &t->rng;
	struct fz_ioc lent = { 0 };
	struct fz_arg a;
	enum fz_cmd c = fz_pick(r, ((const enum fz_cmd[]){ C_FLUSH, C_POS,
							   C_STATS }));
	unsigned int cmd;
	long ret;

	fz_op(t, FZ_OP_IOC_SHARED);
	if (pthread_rwlock_tryrdlock(&fz.lend_lock))
		return;
	if (fz.lend_fd < 0) {
		pthread_rwlock_unlock(&fz.lend_lock);
		fz_desc(t, "nothing lent");
		return;
	}
	fz_desc(t, "lent cpu%d: ", fz.lend_cpu);
	if (fz_chance(r, 20)) {
		fz_ioc_epoll(t, fz.lend_fd);
	} else if (fz_chance(r, 15)) {
		fz_ioc_wakeup(t, fz.lend_fd);
	} else if (fz_chance(r, 20)) {
		cmd = fz_unknown_cmd(r);
		ret = ioctl(fz.lend_fd, cmd, fz_place(t, fz_pick_ptr(r), NULL, 0,
						      64).p) ? -errno : 0;
		fz_desc(t, "cmd %#x -> %s", cmd, fz_err(ret));
		FZ_EXPECT(t, "unknown ioctl", ret, -ENOTTY);
		fz_refused(t);
	} else {
		fz_arg_build(r, c, 0, fz_chance(r, 40), &a);
		fz_ioc_call(t, &lent, fz.lend_fd, c, &a,
			    fz_chance(r, 70) ? FZ_PTR_GOOD : fz_pick_ptr(r),
			    false);
	}
	pthread_rwlock_unlock(&fz.lend_lock);
}

void fz_ioctl_op(struct fz_thread *t)
{
	struct fz_ioc *s = &fz_ioc;
	struct fz_rng *r = &t->rng;
	enum fz_cmd c;
	struct fz_arg a;
	unsigned int cmd;
	long ret;

	if (!s->open) {
		switch (fz_below(r, 10)) {
		case 0:
		case 1:
			fz_ioc_opens(t);
			return;
		case 2:
		case 3:
			fz_ioc_lent(t);
			return;
		default:
			fz_ioc_session_open(t, s);
			return;
		}
	}
	if (fz_now() > s->end || !s->ops_left--) {
		fz_op(t, FZ_OP_IOC_OPEN);
		fz_desc(t, "close cpu%u%s", s->cpu, s->held ? " holding" : "");
		fz_ioctl_end(t);
		return;
	}
	switch (fz_below(r, 22)) {
	case 20:
		fz_ioc_file_ops(t, s);
		return;
	case 21:
		fz_ioc_epoll(t, fz_chance(r, 50) ? s->fd : -1);
		return;
	case 0:
		fz_ioc_fork(t, s);
		return;
	case 1:
	case 2:
	case 3:
		fz_op(t, FZ_OP_IOC_CMD);
		cmd = fz_unknown_cmd(r);
		ret = ioctl(s->fd, cmd, fz_place(t, fz_pick_ptr(r), NULL, 0,
						 128).p) ? -errno : 0;
		fz_desc(t, "cmd %#x -> %s", cmd, fz_err(ret));
		FZ_EXPECT(t, "unknown ioctl", ret, -ENOTTY);
		fz_refused(t);
		fz_ioc_check_held(t, s, "an unknown command");
		return;
	case 4:
	case 5:
	case 6:
	case 7:
		fz_op(t, FZ_OP_IOC_ARGS);
		c = fz_below(r, C_NR);
		fz_arg_build(r, c, s->held ? s->held_pos : fz_next(r), true, &a);
		fz_ioc_call(t, s, s->fd, c, &a, FZ_PTR_GOOD, true);
		return;
	case 8:
	case 9:
	case 10:
	case 11:
		fz_op(t, FZ_OP_IOC_PTR);
		c = fz_below(r, C_NR);
		/* A GET that finds a packet and cannot say which one. */
		if (c == C_GET && fz_chance(r, 50)) {
			ret = ioctl(s->fd, RINGTRACE_IOC_FLUSH) ? -errno : 0;
			FZ_EXPECT(t, "FLUSH", ret, 0);
		}
		fz_arg_build(r, c, s->held ? s->held_pos : 0, false, &a);
		fz_ioc_call(t, s, s->fd, c, &a, fz_pick_ptr(r), true);
		return;
	default:
		fz_op(t, FZ_OP_IOC_VALID);
		/* GET and PUT in turn, with the other calls in between. */
		c = fz_chance(r, 50) ? (s->held ? C_PUT : C_GET) :
		    fz_below(r, C_NR);
		fz_arg_build(r, c, s->held && fz_chance(r, 90) ? s->held_pos :
				   fz_next(r) & ~4095ULL, false, &a);
		fz_ioc_call(t, s, s->fd, c, &a, FZ_PTR_GOOD, true);
	}
}

/* ------------------------------------------------------------------ */
/* The mmap thread                                                     */
/* ------------------------------------------------------------------ */

#define FZ_MAX_MAPS		8

/* One mapping, one vma: a hole punched in it makes two entries. */
struct fz_map {
	uint8_t *p;
	size_t len;
	size_t off;			/* of p in the file: 0 is the meta page */
	bool readable;			/* PROT_READ now, pages present */
};

struct fz_mm {
	bool open, rdwr;
	unsigned int cpu;
	int fd;
	uint64_t token;
	size_t full;			/* meta page + every sub-buffer */
	struct fz_map maps[FZ_MAX_MAPS];
	unsigned int nmaps;
	double end;
	unsigned int ops_left;
	/* The helper that GETs and PUTs while this thread maps. */
	pthread_t helper;
	bool helper_on;
	atomic_bool helper_stop;
	_Atomic uint64_t helper_ops, helper_bad;
	char helper_msg[160];
};

static struct fz_mm fz_mm;

static void *fz_mm_helper(void *arg)
{
	struct fz_mm *m = arg;
	struct ringtrace_subbuf sb;
	int ret;

	while (!atomic_load(&m->helper_stop)) {
		memset(&sb, 0, sizeof(sb));
		sb.size = sizeof(sb);
		ret = ioctl(m->fd, RINGTRACE_IOC_GET_SUBBUF, &sb) ? errno : 0;
		atomic_fetch_add(&m->helper_ops, 1);
		if (ret == EAGAIN || ret == ENODATA) {
			usleep(2000);
			continue;
		}
		if (!ret)
			ret = ioctl(m->fd, RINGTRACE_IOC_PUT_SUBBUF, &sb) ? errno : 0;
		if (ret && !atomic_fetch_add(&m->helper_bad, 1))
			snprintf(m->helper_msg, sizeof(m->helper_msg),
				 "GET/PUT beside mmap: %s", strerrorname_np(ret));
	}
	return NULL;
}

static void fz_mm_drop(struct fz_mm *m, unsigned int i)
{
	munmap(m->maps[i].p, m->maps[i].len);
	m->maps[i] = m->maps[--m->nmaps];
}

void fz_mmap_end(struct fz_thread *t)
{
	struct fz_mm *m = &fz_mm;

	if (!m->open)
		return;
	if (m->helper_on) {
		atomic_store(&m->helper_stop, true);
		pthread_join(m->helper, NULL);
		m->helper_on = false;
		t->stats[FZ_OP_MMAP_GETPUT].count += atomic_load(&m->helper_ops);
		if (atomic_load(&m->helper_bad)) {
			t->op = FZ_OP_MMAP_GETPUT;
			FZ_CHECK(t, false, "%" PRIu64 " bad GET/PUT results: %s",
				 atomic_load(&m->helper_bad), m->helper_msg);
		}
	}
	while (m->nmaps)
		fz_mm_drop(m, 0);
	fz_buf_close(m->cpu, m->fd, m->token);
	m->open = false;
	pthread_rwlock_unlock(&fz.buf_lock);
	t->in_session = false;
}

/* Can the kernel read a byte at @p (without a signal here)? */
static bool fz_probe_read(const void *p)
{
	int pipefd[2];
	bool ok;
	char c;

	if (pipe2(pipefd, O_CLOEXEC))
		return false;
	ok = write(pipefd[1], p, 1) == 1;
	if (ok)
		ok = read(pipefd[0], &c, 1) == 1;
	close(pipefd[0]);
	close(pipefd[1]);
	return ok;
}

/* A mapping of the buffer: its meta page reads as one. */
static void fz_mm_check_map(struct fz_thread *t, const struct fz_map *mp,
			    unsigned int cpu)
{
	const struct ringtrace_meta *meta = (const void *)mp->p;

	if (!mp->readable)
		return;
	if (!mp->off)
		FZ_CHECK(t, meta->meta_size == sizeof(*meta) && meta->cpu == cpu,
			 "mapping at %p: meta_size %u cpu %u", mp->p,
			 meta->meta_size, meta->cpu);
	/* The last byte of a mapping is there (volatile: really read it). */
	(void)*(volatile const uint8_t *)(mp->p + mp->len - 1);
}

/*
 * mmap() of the buffer with random length, offset, protection and flags;
 * the ABI and mm/mmap.c order the refusals as fz_mm_expect() does.
 */
static void fz_mm_map(struct fz_thread *t, struct fz_mm *m, int fd,
		      unsigned int cpu, bool rdwr, bool keep)
{
	struct fz_rng *r = &t->rng;
	size_t page = fz.page, full = m->full;
	size_t len = fz_pick(r, ((const size_t[]){
		0, 1, page - 1, page, page + 1, 2 * page, full - page, full,
		full - 1, full + 1, full + page, 2 * full, 1ULL << 46 }));
	off_t off = fz_chance(r, 75) ? 0 :
		    fz_pick(r, ((const off_t[]){ 1, 4096, 8192, 65536, 1 << 20 }));
	int prot = fz_chance(r, 60) ? PROT_READ :
		   fz_pick(r, ((const int[]){ PROT_NONE, PROT_WRITE,
					     PROT_READ | PROT_WRITE,
					     PROT_READ | PROT_EXEC,
					     PROT_READ | PROT_WRITE | PROT_EXEC }));
	int flags = fz_chance(r, 50) ? MAP_SHARED :
		    fz_pick(r, ((const int[]){ MAP_PRIVATE, MAP_SHARED_VALIDATE,
					      MAP_SHARED | MAP_POPULATE,
					      MAP_SHARED | MAP_LOCKED,
					      MAP_SHARED | MAP_NORESERVE,
					      MAP_SHARED_VALIDATE | MAP_SYNC,
					      MAP_SHARED | MAP_HUGETLB,
					      MAP_SHARED | MAP_SYNC }));
	size_t alen = (len + page - 1) & ~(page - 1);
	int type = flags & MAP_TYPE;
	long want, ret;
	void *p;

	fz_op(t, FZ_OP_MMAP_MAP);
	if (off % page || !len || (flags & MAP_HUGETLB))
		want = -EINVAL;
	else if (type == MAP_SHARED_VALIDATE && (flags & MAP_SYNC))
		want = -EOPNOTSUPP;
	else if (type != MAP_PRIVATE && (prot & PROT_WRITE) && !rdwr)
		want = -EACCES;
	else if ((prot & (PROT_WRITE | PROT_EXEC)) || type == MAP_PRIVATE)
		want = -EPERM;
	else if (off || (alen != page && alen != full))
		want = -EINVAL;
	else
		want = 0;
	fz_desc(t, "mmap len=%zu off=%lld prot=%#x flags=%#x%s", len,
		(long long)off, prot, flags, rdwr ? " rdwr" : "");
	p = mmap(NULL, len, prot, flags, fd, off);
	ret = p == MAP_FAILED ? -errno : 0;
	fz_desc(t, " -> %s", fz_err(ret));
	/* 64 TiB may find no room first (ENOMEM), or get to the checks. */
	if (len == 1ULL << 46 && want)
		FZ_EXPECT(t, "mmap of 64 TiB", ret, want, -ENOMEM);
	else
		FZ_EXPECT(t, "mmap", ret, want);
	if (ret) {
		fz_refused(t);
		return;
	}
	if (want) {
		munmap(p, len);
		return;
	}
	if (!keep || m->nmaps == FZ_MAX_MAPS) {
		struct fz_map tmp = { p, alen, 0, prot & PROT_READ };

		fz_mm_check_map(t, &tmp, cpu);
		munmap(p, alen);
		return;
	}
	m->maps[m->nmaps] = (struct fz_map){ p, alen, 0, prot & PROT_READ };
	fz_mm_check_map(t, &m->maps[m->nmaps], cpu);
	m->nmaps++;
}

static void fz_mm_protect(struct fz_thread *t, struct fz_mm *m)
{
	struct fz_rng *r = &t->rng;
	struct fz_map *mp = &m->maps[fz_below(r, m->nmaps)];
	int prot = fz_pick(r, ((const int[]){ PROT_WRITE, PROT_READ | PROT_WRITE,
					     PROT_EXEC, PROT_READ | PROT_EXEC,
					     PROT_NONE, PROT_READ }));
	long ret;

	fz_op(t, FZ_OP_MMAP_PROTECT);
	ret = mprotect(mp->p, mp->len, prot) ? -errno : 0;
	fz_desc(t, "mprotect %p+%zu %#x -> %s", mp->p, mp->len, prot,
		fz_err(ret));
	/* VM_MAYWRITE and VM_MAYEXEC are gone: never writable or executable. */
	if (prot & (PROT_WRITE | PROT_EXEC)) {
		FZ_EXPECT(t, "mprotect to writable or executable", ret, -EACCES);
		fz_refused(t);
		return;
	}
	FZ_EXPECT(t, "mprotect", ret, 0);
	if (!ret)
		mp->readable = prot & PROT_READ;
	fz_mm_check_map(t, mp, m->cpu);
}

static void fz_mm_remap(struct fz_thread *t, struct fz_mm *m)
{
	struct fz_rng *r = &t->rng;
	unsigned int i = fz_below(r, m->nmaps);
	struct fz_map *mp = &m->maps[i];
	size_t page = fz.page;
	bool dontunmap;
	void *p, *to;
	long ret;

	fz_op(t, FZ_OP_MMAP_REMAP);
	switch (fz_below(r, 4)) {
	case 0:	/* grow, in place or moving: VM_DONTEXPAND */
		p = mremap(mp->p, mp->len, mp->len + page * fz_range(r, 1, 4),
			   fz_chance(r, 50) ? MREMAP_MAYMOVE : 0);
		ret = p == MAP_FAILED ? -errno : 0;
		fz_desc(t, "mremap grow %zu -> %s", mp->len, fz_err(ret));
		FZ_EXPECT(t, "mremap to grow", ret, -EFAULT);
		break;
	case 1:	/* the duplicate of a shared mapping (old_len 0) */
		p = mremap(mp->p, 0, page, MREMAP_MAYMOVE);
		ret = p == MAP_FAILED ? -errno : 0;
		fz_desc(t, "mremap duplicate -> %s", fz_err(ret));
		FZ_EXPECT(t, "mremap duplicate", ret, -EFAULT);
		break;
	case 2:	/* shrink */
		if (mp->len <= page) {
			fz_desc(t, "one page: no shrink");
			return;
		}
		p = mremap(mp->p, mp->len, page, 0);
		ret = p == MAP_FAILED ? -errno : 0;
		fz_desc(t, "mremap shrink %zu -> %s", mp->len, fz_err(ret));
		FZ_EXPECT(t, "mremap to shrink", ret, 0);
		if (!ret)
			mp->len = page;
		break;
	default: /* move elsewhere, same size */
		dontunmap = fz_chance(r, 20);
		to = mmap(NULL, mp->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
		if (to == MAP_FAILED)
			return;
		p = mremap(mp->p, mp->len, mp->len, MREMAP_MAYMOVE |
			   MREMAP_FIXED | (dontunmap ? MREMAP_DONTUNMAP : 0), to);
		ret = p == MAP_FAILED ? -errno : 0;
		fz_desc(t, "mremap move%s -> %s", dontunmap ? " dontunmap" : "",
			fz_err(ret));
		/* MREMAP_DONTUNMAP would leave an empty copy: VM_DONTEXPAND. */
		FZ_EXPECT(t, "mremap to move", ret, dontunmap ? -EINVAL : 0);
		if (ret) {
			munmap(to, mp->len);
			break;
		}
		mp->p = p;
	}
	if (ret)
		fz_refused(t);
	fz_mm_check_map(t, mp, m->cpu);
}

static void fz_mm_unmap(struct fz_thread *t, struct fz_mm *m)
{
	struct fz_rng *r = &t->rng;
	unsigned int i = fz_below(r, m->nmaps);
	struct fz_map *mp = &m->maps[i];
	size_t page = fz.page;
	long ret;

	fz_op(t, FZ_OP_MMAP_UNMAP);
	if (mp->len > 2 * page && m->nmaps < FZ_MAX_MAPS && fz_chance(r, 50)) {
		/* A hole after the first page: two vmas, two entries. */
		ret = munmap(mp->p + page, page) ? -errno : 0;
		fz_desc(t, "munmap second page -> %s", fz_err(ret));
		FZ_EXPECT(t, "munmap of a page", ret, 0);
		m->maps[m->nmaps++] = (struct fz_map){
			mp->p + 2 * page, mp->len - 2 * page, mp->off + 2 * page,
			mp->readable };
		mp->len = page;
		fz_mm_check_map(t, mp, m->cpu);
		fz_mm_check_map(t, &m->maps[m->nmaps - 1], m->cpu);
		return;
	}
	fz_desc(t, "munmap %zu", mp->len);
	fz_mm_drop(m, i);
}

/*
 * madvise(): whatever it answers, the kernel stays sound.  A mapping that
 * MADV_DOFORK accepted is inherited, one it refused is not (abi.rst).
 */
static void fz_mm_advise(struct fz_thread *t, struct fz_mm *m)
{
	static const int advice[] = {
		MADV_DOFORK, MADV_DOFORK, MADV_DONTFORK, MADV_DONTNEED,
		MADV_WILLNEED, MADV_SEQUENTIAL, MADV_RANDOM, MADV_DONTDUMP,
		MADV_DODUMP, MADV_MERGEABLE, MADV_HUGEPAGE, MADV_COLD,
		MADV_PAGEOUT, MADV_POPULATE_READ, MADV_POPULATE_WRITE,
		MADV_FREE, MADV_REMOVE, MADV_WIPEONFORK,
	};
	struct fz_rng *r = &t->rng;
	unsigned int i = fz_below(r, m->nmaps);
	struct fz_map *mp = &m->maps[i];
	int adv = fz_pick(r, advice), status;
	long ret;
	pid_t pid;

	fz_op(t, FZ_OP_MMAP_ADVISE);
	ret = madvise(mp->p, mp->len, adv) ? -errno : 0;
	fz_desc(t, "madvise %d -> %s", adv, fz_err(ret));
	if (ret)
		fz_refused(t);
	if (adv == MADV_POPULATE_WRITE)
		FZ_CHECK(t, ret < 0, "MADV_POPULATE_WRITE worked on a read-only mapping");
	if (adv == MADV_DONTNEED || adv == MADV_FREE || adv == MADV_REMOVE ||
	    adv == MADV_PAGEOUT) {
		/*
		 * Pages a user dropped do not come back (no fault handler):
		 * reading them would be SIGBUS.  Take the mapping away.
		 */
		if (mp->readable && !fz_probe_read(mp->p))
			fz_desc(t, " (pages gone)");
		fz_mm_drop(m, i);
		return;
	}
	if (adv != MADV_DOFORK)
		return;
	if (!mp->readable) {
		fz_mm_drop(m, i);
		return;
	}
	/* Is the mapping inherited now? The child tells. */
	atomic_fetch_add(&fz.children, 1);
	atomic_fetch_add(&fz.forks, 1);
	pid = fork();
	if (pid == 0)
		_exit(fz_probe_read(mp->p) ? 1 : 0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	atomic_fetch_sub(&fz.children, 1);
	fz_desc(t, "; child %s it", pid > 0 && WIFEXITED(status) &&
		WEXITSTATUS(status) == 1 ? "inherited" : "did not inherit");
	FZ_CHECK(t, pid > 0 && WIFEXITED(status) &&
		 WEXITSTATUS(status) == (ret ? 0 : 1),
		 "after madvise(MADV_DOFORK) %s, a child %s the buffer mapping "
		 "(status %#x)", fz_err(ret), ret ? "inherited" : "did not inherit",
		 pid > 0 ? status : -1);
	/* Whatever it did to the vma, the next fork must not see it. */
	fz_mm_drop(m, i);
}

/* fork() while the helper GETs and PUTs: nothing mapped in the child. */
static void fz_mm_fork(struct fz_thread *t, struct fz_mm *m)
{
	int status, i;
	pid_t pid;

	fz_op(t, FZ_OP_MMAP_FORK);
	atomic_fetch_add(&fz.children, 1);
	atomic_fetch_add(&fz.forks, 1);
	pid = fork();
	if (pid == 0) {
		struct ringtrace_stats st = { .size = sizeof(st) };
		int bad = 0;
		void *p;

		for (i = 0; i < (int)m->nmaps; i++)
			if (m->maps[i].readable && fz_probe_read(m->maps[i].p))
				bad |= 1;
		/* The file is the parent's too: it still works here. */
		if (ioctl(m->fd, RINGTRACE_IOC_GET_STATS, &st))
			bad |= 2;
		p = mmap(NULL, fz.page, PROT_READ, MAP_SHARED, m->fd, 0);
		if (p == MAP_FAILED ||
		    ((struct ringtrace_meta *)p)->meta_size !=
		    sizeof(struct ringtrace_meta))
			bad |= 4;
		_exit(bad);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	atomic_fetch_sub(&fz.children, 1);
	fz_desc(t, "fork with %u mappings: status %#x", m->nmaps,
		pid > 0 ? status : -1);
	FZ_CHECK(t, pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status),
		 "child after fork: %s%s%s (status %#x)",
		 pid > 0 && WEXITSTATUS(status) & 1 ? "mapping inherited " : "",
		 pid > 0 && WEXITSTATUS(status) & 2 ? "GET_STATS failed " : "",
		 pid > 0 && WEXITSTATUS(status) & 4 ? "own mmap failed" : "",
		 pid > 0 ? status : -1);
}

static bool fz_mm_session_open(struct fz_thread *t, struct fz_mm *m)
{
	struct fz_rng *r = &t->rng;
	struct ringtrace_positions p = { .size = sizeof(p) };
	unsigned int cpu = fz_below(r, fz.ncpus);
	struct fz_open_result o;

	m->rdwr = fz_chance(r, 30);
	fz_op(t, FZ_OP_MMAP_MAP);
	pthread_rwlock_rdlock(&fz.buf_lock);
	o = fz_buf_open(t, cpu, fz_chance(r, 50), m->rdwr ? O_RDWR : O_RDONLY,
			true);
	fz_desc(t, "session cpu%u%s -> %s", cpu, m->rdwr ? " rdwr" : "",
		fz_err(o.fd));
	if (o.fd < 0) {
		FZ_EXPECT(t, "open of a buffer file", o.fd, -EBUSY, -ENODEV);
		pthread_rwlock_unlock(&fz.buf_lock);
		return false;
	}
	m->open = true;
	m->cpu = cpu;
	m->fd = o.fd;
	m->token = o.token;
	m->nmaps = 0;
	t->in_session = true;
	if (ioctl(o.fd, RINGTRACE_IOC_GET_POSITIONS, &p)) {
		FZ_CHECK(t, false, "GET_POSITIONS: %s", fz_err(-errno));
		fz_mmap_end(t);
		return false;
	}
	m->full = fz.page + p.subbuf_size * p.num_subbufs;
	m->end = fz_now() + 0.3 + fz_below(r, 2000) / 1000.0;
	m->ops_left = fz_range(r, 10, 200);
	atomic_store(&m->helper_stop, false);
	atomic_store(&m->helper_ops, 0);
	atomic_store(&m->helper_bad, 0);
	m->helper_on = !pthread_create(&m->helper, NULL, fz_mm_helper, m);
	return true;
}

/* mmap of the consumer's lent file: the maps go before the loan ends. */
static void fz_mm_lent(struct fz_thread *t)
{
	struct fz_mm lent = { 0 };
	struct ringtrace_positions p = { .size = sizeof(p) };

	if (pthread_rwlock_tryrdlock(&fz.lend_lock))
		return;
	if (fz.lend_fd >= 0 &&
	    !ioctl(fz.lend_fd, RINGTRACE_IOC_GET_POSITIONS, &p)) {
		lent.full = fz.page + p.subbuf_size * p.num_subbufs;
		lent.cpu = fz.lend_cpu;
		fz_mm_map(t, &lent, fz.lend_fd, fz.lend_cpu, false, false);
		fz_desc(t, " (lent cpu%d, racing the consumer)", fz.lend_cpu);
	}
	pthread_rwlock_unlock(&fz.lend_lock);
}

void fz_mmap_op(struct fz_thread *t)
{
	struct fz_mm *m = &fz_mm;
	struct fz_rng *r = &t->rng;

	t->op = FZ_OP_MMAP_MAP;
	if (!m->open) {
		if (fz_chance(r, 30))
			fz_mm_lent(t);
		else
			fz_mm_session_open(t, m);
		return;
	}
	if (fz_now() > m->end || !m->ops_left--) {
		fz_desc(t, "close cpu%u with %u mappings", m->cpu, m->nmaps);
		fz_mmap_end(t);
		return;
	}
	switch (m->nmaps ? fz_below(r, 10) : 0) {
	case 0:
	case 1:
	case 2:
		fz_mm_map(t, m, m->fd, m->cpu, m->rdwr, true);
		break;
	case 3:
		fz_mm_protect(t, m);
		break;
	case 4:
		fz_mm_remap(t, m);
		break;
	case 5:
	case 6:
		fz_mm_unmap(t, m);
		break;
	case 7:
	case 8:
		fz_mm_advise(t, m);
		break;
	default:
		fz_mm_fork(t, m);
	}
}
