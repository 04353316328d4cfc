// SPDX-License-Identifier: GPL-2.0
/*
 * splice(2) from a CPU buffer file (RINGTRACE_FEATURE_SPLICE): the held
 * packet's pages in a pipe are the bytes GET's mapping shows; the packet
 * stays held, PUT refused, until every pipe buffer of it is gone,
 * whoever holds the pipe and whatever the writers do meanwhile; a
 * consumer that dies with pages in a pipe leaves the packet to the next
 * consumer once the pipe lets go; neither rmmod nor a geometry change nor
 * clear can free what a pipe still holds.
 */
#include "ringtrace_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SUBBUF	16384U
#define NSUBBUF	4U

FIXTURE(spl) {
	int cpu;
	int marker;
	int pfd[2];
	struct rt_buf b;
};

FIXTURE_VARIANT(spl) {
	const char *mode;
};

FIXTURE_VARIANT_ADD(spl, discard) {
	.mode = "discard",
};

FIXTURE_VARIANT_ADD(spl, overwrite) {
	.mode = "overwrite",
};

FIXTURE_SETUP(spl)
{
	self->marker = -1;
	self->b.fd = -1;
	self->pfd[0] = self->pfd[1] = -1;
	RT_REQUIRE();
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_prepare(variant->mode, SUBBUF, NSUBBUF));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	self->marker = rt_marker_open();
	ASSERT_LE(0, self->marker);
	ASSERT_EQ(0, pipe(self->pfd));
	/* Room for a whole packet: 4 pages and more. */
	ASSERT_LE(0, fcntl(self->pfd[1], F_SETPIPE_SZ, 16 * 4096));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(spl)
{
	rt_ctl_write("tracing_on", "0");
	if (self->pfd[0] >= 0)
		close(self->pfd[0]);
	if (self->pfd[1] >= 0)
		close(self->pfd[1]);
	if (self->marker >= 0)
		close(self->marker);
	rt_buf_close(&self->b);
	rt_reset();
}

/* Markers until a packet is nearly full (over three pages), flushed. */
static void fill_one(struct __test_metadata *_metadata,
		     FIXTURE_DATA(spl) *self, unsigned int tag)
{
	unsigned int i;

	for (i = 0; i < 55; i++)
		ASSERT_EQ(250, rt_write_seq_marker(self->marker, tag * 1000 + i,
						   250));
	ASSERT_EQ(0, rt_flush(self->b.fd));
}

/* Markers enough to wrap the ring several times (or fill it). */
static void flood(struct __test_metadata *_metadata, FIXTURE_DATA(spl) *self)
{
	unsigned int i;

	for (i = 0; i < 8 * NSUBBUF * SUBBUF / 256; i++)
		ASSERT_EQ(250, rt_write_seq_marker(self->marker, i, 250));
}

static ssize_t splice_at(int fd, uint64_t off, int pipe_w, size_t len)
{
	loff_t o = (loff_t)off;
	ssize_t n = splice(fd, &o, pipe_w, NULL, len, SPLICE_F_NONBLOCK);

	return n < 0 ? -errno : n;
}

/* Read exactly @len bytes of the pipe (non-blocking: they must be there). */
static int read_pipe(int fd, uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static long long module_refs(void)
{
	char buf[32];

	if (rt_read_file("/sys/module/ringtrace/refcnt", buf, sizeof(buf)) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

TEST_F(spl, feature_advertised)
{
	EXPECT_TRUE(rt_buf_meta(&self->b)->features & RINGTRACE_FEATURE_SPLICE);
}

/* The data spliced is the data the mapping shows, in any pieces. */
TEST_F(spl, spliced_equals_mapped)
{
	struct ringtrace_subbuf sb;
	uint8_t *got;
	size_t done = 0, piece;
	unsigned int k = 0;
	ssize_t n;

	fill_one(_metadata, self, 1);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_LT(3 * 4096, sb.content_size);	/* more than three pages */
	got = malloc(sb.content_size);
	ASSERT_NE(NULL, got);
	/* Pieces of 1, 4095, 4097, 5000... bytes: unaligned both ends. */
	while (done < sb.content_size) {
		static const size_t pieces[] = { 1, 4095, 4097, 5000, 100000 };

		piece = pieces[k++ % 5];
		n = splice_at(self->b.fd, sb.offset + done, self->pfd[1], piece);
		ASSERT_LT(0, n);
		ASSERT_EQ(0, read_pipe(self->pfd[0], got + done, (size_t)n));
		done += (size_t)n;
	}
	EXPECT_EQ(sb.content_size, done);
	EXPECT_EQ(0, memcmp(got, self->b.map + sb.offset, sb.content_size));
	/* At the packet's end: nothing more (0), past it: EINVAL. */
	EXPECT_EQ(0, splice_at(self->b.fd, sb.offset + sb.content_size,
			       self->pfd[1], 10));
	EXPECT_EQ(-EINVAL, splice_at(self->b.fd, sb.offset + sb.content_size + 1,
				     self->pfd[1], 10));
	EXPECT_EQ(-EINVAL, splice_at(self->b.fd, sb.offset - 1, self->pfd[1], 10));
	/* Drained pipe: PUT goes through. */
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	/* Nothing held: nothing to splice. */
	EXPECT_EQ(-EINVAL, splice_at(self->b.fd, sb.offset, self->pfd[1], 10));
	free(got);
}

/* Without GET, and without an offset (f_pos 0: the meta page). */
TEST_F(spl, nothing_held)
{
	fill_one(_metadata, self, 2);
	EXPECT_EQ(-EINVAL, splice_at(self->b.fd, self->b.meta_page_size,
				     self->pfd[1], 4096));
	EXPECT_EQ(-1, splice(self->b.fd, NULL, self->pfd[1], NULL, 4096, 0));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * Pages in a pipe keep the packet held: PUT says EBUSY and the writers,
 * wrapping the ring meanwhile, leave the pages alone.  A tee() of the
 * buffers holds it too.
 */
TEST_F(spl, held_while_in_pipe)
{
	struct ringtrace_subbuf sb;
	uint8_t *copy, *got;
	int tfd[2];

	fill_one(_metadata, self, 3);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	copy = malloc(sb.content_size);
	got = malloc(sb.content_size);
	ASSERT_TRUE(copy && got);
	memcpy(copy, self->b.map + sb.offset, sb.content_size);
	ASSERT_EQ((ssize_t)sb.content_size,
		  splice_at(self->b.fd, sb.offset, self->pfd[1], sb.content_size));
	EXPECT_EQ(-EBUSY, rt_put(self->b.fd, sb.pos));
	flood(_metadata, self);
	/* The pipe's buffers duplicated, the first pipe's emptied. */
	ASSERT_EQ(0, pipe(tfd));
	ASSERT_LE(0, fcntl(tfd[1], F_SETPIPE_SZ, 16 * 4096));
	ASSERT_EQ((ssize_t)sb.content_size,
		  tee(self->pfd[0], tfd[1], sb.content_size, 0));
	ASSERT_EQ(0, read_pipe(self->pfd[0], got, sb.content_size));
	EXPECT_EQ(0, memcmp(copy, got, sb.content_size));
	EXPECT_EQ(-EBUSY, rt_put(self->b.fd, sb.pos));
	flood(_metadata, self);
	memset(got, 0, sb.content_size);
	ASSERT_EQ(0, read_pipe(tfd[0], got, sb.content_size));
	EXPECT_EQ(0, memcmp(copy, got, sb.content_size));
	close(tfd[0]);
	close(tfd[1]);
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	free(copy);
	free(got);
}

/*
 * A consumer killed with pages in a pipe it shared: the packet stays held
 * (a new consumer's GET: EBUSY) and intact while the writers wrap the
 * ring, and goes back to the writers unconsumed once the pipe is closed:
 * the next consumer gets that very packet.
 */
TEST_F(spl, consumer_dies_with_pages_in_pipe)
{
	struct ringtrace_subbuf *shared, sb;
	uint8_t *copy, *got;
	struct rt_buf b2;
	int status;
	pid_t pid;

	fill_one(_metadata, self, 4);
	/* The child is the consumer: the fixture's file goes. */
	rt_buf_close(&self->b);
	shared = mmap(NULL, sizeof(*shared) + SUBBUF, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, shared);
	copy = (uint8_t *)(shared + 1);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rt_buf cb;

		if (rt_buf_open(&cb, self->cpu) || rt_get(cb.fd, shared) ||
		    shared->content_size > SUBBUF)
			_exit(1);
		memcpy(copy, cb.map + shared->offset, shared->content_size);
		if (splice_at(cb.fd, shared->offset, self->pfd[1],
			      shared->content_size) !=
		    (ssize_t)shared->content_size)
			_exit(2);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(SIGKILL, WTERMSIG(status));

	ASSERT_EQ(0, rt_buf_open(&b2, self->cpu));
	EXPECT_EQ(-EBUSY, rt_get(b2.fd, &sb));
	EXPECT_EQ(-EBUSY, rt_put(b2.fd, shared->pos));
	EXPECT_EQ(-EINVAL, splice_at(b2.fd, shared->offset, self->pfd[1], 10));
	flood(_metadata, self);
	got = malloc(shared->content_size);
	ASSERT_NE(NULL, got);
	/* Read, the pipe still holds its buffers' references until closed. */
	ASSERT_EQ(0, read_pipe(self->pfd[0], got, shared->content_size));
	EXPECT_EQ(0, memcmp(copy, got, shared->content_size));
	close(self->pfd[0]);
	close(self->pfd[1]);
	self->pfd[0] = self->pfd[1] = -1;
	/* Back to the writers unconsumed: the next GET is that packet. */
	ASSERT_EQ(0, rt_get(b2.fd, &sb));
	EXPECT_EQ(shared->pos, sb.pos);
	EXPECT_EQ(0, rt_put(b2.fd, sb.pos));
	rt_buf_close(&b2);
	free(got);
	munmap(shared, sizeof(*shared) + SUBBUF);
}

/*
 * Pages in a pipe, the consumer gone: rmmod is refused (a module
 * reference per pipe buffer), and so are a geometry change and clear
 * (the buffer must outlive them); once the pipe is closed, all three
 * references go and both control writes work.
 */
TEST_F(spl, pipe_pins_module_and_buffers)
{
	struct ringtrace_subbuf sb;
	long long refs;

	fill_one(_metadata, self, 5);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ((ssize_t)sb.content_size,
		  splice_at(self->b.fd, sb.offset, self->pfd[1], sb.content_size));
	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	refs = module_refs();
	ASSERT_LE(4, refs);		/* four pages at least */
	EXPECT_EQ(-1, syscall(__NR_delete_module, "ringtrace", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(-EBUSY, rt_ctl_write_num("num_subbufs", 2 * NSUBBUF));
	EXPECT_EQ(-EBUSY, rt_ctl_write("clear", "1"));
	close(self->pfd[0]);
	close(self->pfd[1]);
	self->pfd[0] = self->pfd[1] = -1;
	EXPECT_GT(refs, module_refs());
	EXPECT_EQ(0, rt_ctl_write_num("num_subbufs", 2 * NSUBBUF));
	EXPECT_EQ(0, rt_ctl_write("clear", "1"));
}

TEST_HARNESS_MAIN
