// SPDX-License-Identifier: GPL-2.0
/*
 * mmap() of a CPU buffer file: only the meta page alone or the exact whole
 * buffer, only read-only and shared, never made writable later; the meta
 * page describes the buffer as the control files set it up.
 */
#include "ringtrace_test.h"

#include <signal.h>
#include <sys/wait.h>


FIXTURE(map) {
	int cpu;
	int fd;
	size_t page;
	size_t full;			/* meta page + every sub-buffer */
};

FIXTURE_VARIANT(map) {
	const char *mode;
	unsigned int subbuf_size;	/* 0: one page */
	unsigned int num_subbufs;
};

FIXTURE_VARIANT_ADD(map, page_x2_discard) {
	.mode = "discard",
	.subbuf_size = 0,
	.num_subbufs = 2,
};

FIXTURE_VARIANT_ADD(map, 16k_x8_overwrite) {
	.mode = "overwrite",
	.subbuf_size = 16384,
	.num_subbufs = 8,
};

FIXTURE_VARIANT_ADD(map, 256k_x4_discard) {
	.mode = "discard",
	.subbuf_size = 262144,
	.num_subbufs = 4,
};

static unsigned int variant_subbuf(const FIXTURE_VARIANT(map) *variant)
{
	return variant->subbuf_size ? variant->subbuf_size :
				      (unsigned int)sysconf(_SC_PAGESIZE);
}

FIXTURE_SETUP(map)
{
	self->fd = -1;
	RT_REQUIRE();
	self->page = sysconf(_SC_PAGESIZE);
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_prepare(variant->mode, variant_subbuf(variant),
				variant->num_subbufs));
	self->full = self->page +
		     (size_t)variant_subbuf(variant) * variant->num_subbufs;
	self->fd = rt_buf_open_fd(self->cpu, O_RDONLY);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(map)
{
	if (self->fd >= 0)
		close(self->fd);
	rt_reset();
}

/* mmap() that must fail with @err; unmaps if it unexpectedly worked. */
static void expect_map_fails(struct __test_metadata *_metadata, int fd,
			     size_t len, int prot, int flags, off_t off,
			     int err)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	EXPECT_EQ(MAP_FAILED, p) {
		TH_LOG("mmap(len %zu, prot %#x, flags %#x, off %lld) worked",
		       len, prot, flags, (long long)off);
	}
	if (p != MAP_FAILED) {
		munmap(p, len);
		return;
	}
	EXPECT_EQ(err, errno) {
		TH_LOG("mmap(len %zu, prot %#x, flags %#x, off %lld): %s",
		       len, prot, flags, (long long)off, strerror(errno));
	}
}

TEST_F(map, meta_page_alone)
{
	const struct ringtrace_meta *meta;
	unsigned int i;
	void *p;

	p = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	meta = p;
	EXPECT_EQ(sizeof(struct ringtrace_meta), meta->meta_size);
	EXPECT_EQ(self->page, meta->meta_page_size);
	/* What the control files say, and what the variant asked for. */
	EXPECT_EQ(rt_ctl_read_num("subbuf_size"), meta->subbuf_size);
	EXPECT_EQ(rt_ctl_read_num("num_subbufs"), meta->num_subbufs);
	EXPECT_EQ(variant_subbuf(variant), meta->subbuf_size);
	EXPECT_EQ(variant->num_subbufs, meta->num_subbufs);
	EXPECT_EQ(self->cpu, meta->cpu);
	EXPECT_EQ(strcmp(variant->mode, "overwrite") ? RINGTRACE_MODE_DISCARD :
		  RINGTRACE_MODE_OVERWRITE, meta->mode);
	/* The marker and the probes were registered: one change each. */
	EXPECT_LT(0, meta->events_gen);
	for (i = 0; i < RT_ARRAY_SIZE(meta->reserved1); i++)
		EXPECT_EQ(0, meta->reserved1[i]);
	/* A fresh trace: nothing written, nothing consumed. */
	EXPECT_EQ(0, rt_meta_load(&meta->write_pos));
	EXPECT_EQ(0, rt_meta_load(&meta->consumed_pos));
	EXPECT_EQ(0, rt_meta_load(&meta->written));
	EXPECT_EQ(0, rt_meta_load(&meta->delivered));
	EXPECT_EQ(0, rt_meta_load(&meta->lost));
	/* The rest of the meta page reads as zero: no kernel data leaks. */
	for (i = sizeof(*meta); i < self->page; i++)
		if (((const uint8_t *)p)[i])
			break;
	EXPECT_EQ(self->page, i);
	munmap(p, self->page);
}

TEST_F(map, full_size)
{
	const volatile uint8_t *b;
	unsigned long sum = 0;
	size_t i;
	void *p;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* Every page is there: no SIGBUS anywhere in the mapping. */
	b = p;
	for (i = 0; i < self->full; i += self->page)
		sum += b[i] + b[i + self->page - 1];
	EXPECT_EQ(self->full, i);
	TH_LOG("mapped %zu bytes (checksum %lu)", self->full, sum);
	munmap(p, self->full);

	/* Twice at once is fine too. */
	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	b = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, b);
	EXPECT_EQ(0, memcmp(p, (const void *)b, sizeof(struct ringtrace_meta)));
	munmap((void *)b, self->page);
	munmap(p, self->full);
}

TEST_F(map, wrong_length)
{
	/* One page too many, one too few, and in between. */
	expect_map_fails(_metadata, self->fd, self->full + self->page,
			 PROT_READ, MAP_SHARED, 0, EINVAL);
	expect_map_fails(_metadata, self->fd, self->full - self->page,
			 PROT_READ, MAP_SHARED, 0, EINVAL);
	expect_map_fails(_metadata, self->fd, 2 * self->page, PROT_READ,
			 MAP_SHARED, 0, EINVAL);
	expect_map_fails(_metadata, self->fd, 2 * self->full, PROT_READ,
			 MAP_SHARED, 0, EINVAL);
}

TEST_F(map, wrong_offset)
{
	expect_map_fails(_metadata, self->fd, self->full - self->page,
			 PROT_READ, MAP_SHARED, self->page, EINVAL);
	expect_map_fails(_metadata, self->fd, self->page, PROT_READ,
			 MAP_SHARED, self->page, EINVAL);
	expect_map_fails(_metadata, self->fd, self->page, PROT_READ,
			 MAP_SHARED, self->full, EINVAL);
	expect_map_fails(_metadata, self->fd, self->full, PROT_READ,
			 MAP_SHARED, self->page, EINVAL);
}

/*
 * PROT_WRITE on a shared mapping of a read-only fd stops in the VFS
 * (EACCES); the driver's own -EPERM shows with a read-write fd, which root
 * can open.
 */
TEST_F(map, no_write)
{
	int fd;

	expect_map_fails(_metadata, self->fd, self->full,
			 PROT_READ | PROT_WRITE, MAP_SHARED, 0, EACCES);
	close(self->fd);
	self->fd = -1;
	fd = rt_buf_open_fd(self->cpu, O_RDWR);
	ASSERT_LE(0, fd);
	expect_map_fails(_metadata, fd, self->full, PROT_READ | PROT_WRITE,
			 MAP_SHARED, 0, EPERM);
	expect_map_fails(_metadata, fd, self->page, PROT_READ | PROT_WRITE,
			 MAP_SHARED, 0, EPERM);
	expect_map_fails(_metadata, fd, self->page, PROT_WRITE, MAP_SHARED, 0,
			 EPERM);
	close(fd);
}

TEST_F(map, no_exec)
{
	expect_map_fails(_metadata, self->fd, self->full, PROT_READ | PROT_EXEC,
			 MAP_SHARED, 0, EPERM);
	expect_map_fails(_metadata, self->fd, self->page, PROT_READ | PROT_EXEC,
			 MAP_SHARED, 0, EPERM);
}

TEST_F(map, no_private)
{
	expect_map_fails(_metadata, self->fd, self->full, PROT_READ,
			 MAP_PRIVATE, 0, EPERM);
	expect_map_fails(_metadata, self->fd, self->page, PROT_READ,
			 MAP_PRIVATE, 0, EPERM);
	/* A private writable copy would let a reader scribble on its view. */
	expect_map_fails(_metadata, self->fd, self->page,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE, 0, EPERM);
}

TEST_F(map, mprotect_write_fails)
{
	void *p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, self->full, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(p, self->page, PROT_WRITE));
	/* Still mapped and readable after the refusals. */
	EXPECT_EQ(0, mprotect(p, self->full, PROT_READ));
	EXPECT_EQ(sizeof(struct ringtrace_meta),
		  ((const struct ringtrace_meta *)p)->meta_size);
	munmap(p, self->full);
}

/* A store into the mapping kills the writer instead of reaching the page. */
TEST_F(map, store_faults)
{
	volatile uint8_t *p;
	int status;
	pid_t pid;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		p[self->page] = 0x5a;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	munmap((void *)p, self->full);
}

/* The mapping cannot grow past the buffer. */
TEST_F(map, no_mremap_grow)
{
	void *p, *q;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = mremap(p, self->full, self->full + self->page, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q);
	munmap(q == MAP_FAILED ? p : q,
	       q == MAP_FAILED ? self->full : self->full + self->page);
}

/* Can the kernel read a byte at @p?  (No signal when it cannot.) */
static bool readable(const void *p)
{
	int fds[2];
	bool ok;

	if (pipe(fds))
		return false;
	ok = write(fds[1], p, 1) == 1;
	close(fds[0]);
	close(fds[1]);
	return ok;
}

/* A child of fork() has no mapping of the buffer (VM_DONTCOPY). */
TEST_F(map, not_inherited)
{
	int status;
	pid_t pid;
	void *p;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(readable(p) || readable((uint8_t *)p + self->page) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the child has the mapping");
	EXPECT_TRUE(readable(p));
	munmap(p, self->full);
}

/*
 * madvise(MADV_DOFORK) is the owner asking for the mapping in children
 * (abi.rst): the child reads the same meta page, and the buffer stays
 * busy while the child holds it.
 */
TEST_F(map, dofork_inherits)
{
	int status, go[2];
	pid_t pid;
	void *p;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, self->full, MADV_DOFORK));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 0)	/* until the parent closes it */
			_exit(3);
		_exit(((const struct ringtrace_meta *)p)->meta_size ==
		      sizeof(struct ringtrace_meta) ? 0 : 1);
	}
	close(go[0]);
	munmap(p, self->full);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	/* The child's copy holds the file: the buffer is still open. */
	EXPECT_EQ(-EBUSY, rt_ctl_write("num_subbufs", "8"));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the child could not read the meta page (status %#x)", status);
	/* Its exit closed it. */
	EXPECT_EQ(0, rt_ctl_write("num_subbufs", "8"));
}

/*
 * get_user_pages() works on the mapping: vmsplice() pins its pages, as a
 * write of the mapping to a 9p or O_DIRECT file does (ringtraced writes
 * its stored frames straight from the mapping).
 */
TEST_F(map, pinned_by_vmsplice)
{
	struct iovec iov;
	uint8_t copy[64];
	int fds[2];
	void *p;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, pipe(fds));
	iov.iov_base = p;
	iov.iov_len = sizeof(copy);
	ASSERT_EQ((ssize_t)sizeof(copy), vmsplice(fds[1], &iov, 1, 0))
		TH_LOG("vmsplice from the mapping: %s", strerror(errno));
	EXPECT_EQ((ssize_t)sizeof(copy), read(fds[0], copy, sizeof(copy)));
	EXPECT_EQ(0, memcmp(copy, p, sizeof(copy)));
	close(fds[0]);
	close(fds[1]);
	munmap(p, self->full);
}

/* Pages dropped by MADV_DONTNEED are gone; a new mapping has them. */
TEST_F(map, dontneed_then_map_again)
{
	void *p;

	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, self->full, MADV_DONTNEED));
	EXPECT_FALSE(readable(p));
	munmap(p, self->full);
	p = mmap(NULL, self->full, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(sizeof(struct ringtrace_meta),
		  ((const struct ringtrace_meta *)p)->meta_size);
	munmap(p, self->full);
}

/* What the kernel writes into the buffer shows in the mapping. */
TEST_F(map, data_visible)
{
	struct ringtrace_subbuf sb;
	struct rt_markers c = { 0 };
	struct rt_meta *m;
	struct rt_buf b;
	char msg[256];
	int fd;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	EXPECT_EQ(self->full, b.map_len);
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	fd = rt_marker_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(5, write(fd, "hello", 5));
	ASSERT_EQ(0, rt_flush(b.fd));
	ASSERT_EQ(0, rt_get(b.fd, &sb));
	EXPECT_EQ(0, rt_check_packet(m, &b, &sb, rt_collect_marker, &c, NULL,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	ASSERT_EQ(1, c.count);
	EXPECT_EQ(5, c.m[0].len);
	EXPECT_EQ(0, memcmp(c.m[0].data, "hello", 5));
	EXPECT_EQ(0, rt_put(b.fd, sb.pos));
	rt_markers_free(&c);
	close(fd);
	free(m);
	rt_buf_close(&b);
}

/* The markers' headers and timestamps, for gap_extended_header. */
struct marker_times {
	unsigned int count;
	uint64_t ts[2];
	bool extended[2];
};

static int collect_times(void *arg, const struct rt_event *ev, char *msg,
			 size_t msg_size)
{
	struct marker_times *t = arg;

	if (ev->id != RINGTRACE_EVENT_MARKER)
		return 0;
	if (t->count == 2)
		RT_FAIL("more than two markers");
	t->ts[t->count] = ev->ts;
	t->extended[t->count] = ev->extended;
	t->count++;
	return 0;
}

/*
 * An event more than 2^27 ns (~134 ms) after the buffer's last one cannot
 * carry its time in a compact header: the fast path hands it to the slow
 * path, which writes an extended header with the whole timestamp.
 */
TEST_F(map, gap_extended_header)
{
	struct marker_times t = { 0 };
	struct ringtrace_subbuf sb;
	struct rt_meta *m;
	struct rt_buf b;
	char msg[256];
	int fd;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	fd = rt_marker_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(1, write(fd, "a", 1));
	usleep(200000);		/* the gap is what is tested */
	ASSERT_EQ(1, write(fd, "b", 1));
	ASSERT_EQ(0, rt_flush(b.fd));
	ASSERT_EQ(0, rt_get(b.fd, &sb));
	EXPECT_EQ(0, rt_check_packet(m, &b, &sb, collect_times, &t, NULL,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	ASSERT_EQ(2, t.count);
	EXPECT_FALSE(t.extended[0]);
	EXPECT_TRUE(t.extended[1]);
	EXPECT_LE(t.ts[0] + 200000000ULL, t.ts[1]) {
		TH_LOG("markers at %llu and %llu ns, 200 ms apart",
		       (unsigned long long)t.ts[0], (unsigned long long)t.ts[1]);
	}
	EXPECT_EQ(0, rt_put(b.fd, sb.pos));
	close(fd);
	free(m);
	rt_buf_close(&b);
}

TEST_HARNESS_MAIN
