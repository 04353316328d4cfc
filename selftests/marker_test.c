// SPDX-License-Identifier: GPL-2.0
/*
 * The marker file: each write() is one event on the writing CPU holding
 * the bytes verbatim; bad sizes fail with -EINVAL and record nothing, and
 * with tracing off a write succeeds and records nothing.
 */
#include "ringtrace_test.h"

#include <pthread.h>


#define SUBBUF	16384U		/* a maximal marker fits */

FIXTURE(marker) {
	int cpu;
	int fd;
	struct rt_buf b;
	struct rt_meta *m;
};

FIXTURE_SETUP(marker)
{
	self->fd = -1;
	self->b.fd = -1;
	RT_REQUIRE();
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_prepare("discard", SUBBUF, 4));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	self->m = rt_meta_load_file();
	ASSERT_NE(NULL, self->m);
	self->fd = rt_marker_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(marker)
{
	rt_ctl_write("tracing_on", "0");
	if (self->fd >= 0)
		close(self->fd);
	rt_buf_close(&self->b);
	free(self->m);
	rt_reset();
}

/* Stop, then read back every marker of the fixture's CPU. */
static void stop_and_collect(struct __test_metadata *_metadata,
			     FIXTURE_DATA(marker) *self, struct rt_markers *c)
{
	char msg[256];

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(-ENODATA, rt_drain(self->m, &self->b, rt_collect_marker, c,
				     NULL, msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(0, c->other);
}

static void fill_random(uint8_t *p, size_t n, unsigned int *seed)
{
	while (n--)
		*p++ = rand_r(seed);
}

TEST_F(marker, bytes_verbatim)
{
	static const size_t lens[] = {
		1, 2, 3, 7, 64, 255, 256, 1000, RINGTRACE_MARKER_MAX - 1,
		RINGTRACE_MARKER_MAX,
	};
	uint8_t *data[RT_ARRAY_SIZE(lens) + 1];
	size_t n = RT_ARRAY_SIZE(lens), i;
	unsigned int seed = 0x5eed;
	struct rt_markers c = { 0 };
	struct rt_stats s;

	for (i = 0; i < n; i++) {
		data[i] = malloc(lens[i]);
		ASSERT_NE(NULL, data[i]);
		fill_random(data[i], lens[i], &seed);
		ASSERT_EQ((ssize_t)lens[i], write(self->fd, data[i], lens[i]));
	}
	/* Every byte value, NUL and newline included. */
	data[n] = malloc(256);
	ASSERT_NE(NULL, data[n]);
	for (i = 0; i < 256; i++)
		data[n][i] = 255 - i;
	ASSERT_EQ(256, write(self->fd, data[n], 256));

	stop_and_collect(_metadata, self, &c);
	ASSERT_EQ(n + 1, c.count);
	for (i = 0; i <= n; i++) {
		size_t len = i < n ? lens[i] : 256;

		EXPECT_EQ(len, c.m[i].len);
		EXPECT_EQ(0, memcmp(data[i], c.m[i].data, len)) {
			TH_LOG("marker %zu (%zu bytes) differs", i, len);
		}
		free(data[i]);
	}
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	EXPECT_EQ(n + 1, s.written);
	EXPECT_EQ(n + 1, s.delivered);
	EXPECT_EQ(0, rt_stats_lost(&s));
	rt_markers_free(&c);
}

/* Invalid sizes fail and record nothing at all. */
TEST_F(marker, bad_sizes)
{
	static uint8_t big[RINGTRACE_MARKER_MAX * 16 + 1];
	const size_t bad[] = {
		0, RINGTRACE_MARKER_MAX + 1, RINGTRACE_MARKER_MAX * 2,
		sizeof(big),
	};
	struct rt_stats before, after;
	struct rt_markers c = { 0 };
	void *inaccessible;
	size_t i;

	memset(big, 'b', sizeof(big));
	ASSERT_EQ(0, rt_read_stats(self->cpu, &before));
	for (i = 0; i < RT_ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-1, write(self->fd, big, bad[i]));
		EXPECT_EQ(EINVAL, errno) TH_LOG("%zu bytes", bad[i]);
	}
	ASSERT_EQ(0, rt_read_stats(self->cpu, &after));
	EXPECT_TRUE(rt_stats_equal(&before, &after));
	EXPECT_EQ(0, after.written);
	/* A buffer that faults records nothing either. */
	inaccessible = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	ASSERT_NE(MAP_FAILED, inaccessible);
	EXPECT_EQ(-1, write(self->fd, inaccessible, 100));
	EXPECT_EQ(EFAULT, errno);
	munmap(inaccessible, 4096);
	ASSERT_EQ(0, rt_read_stats(self->cpu, &after));
	EXPECT_EQ(0, after.written);

	stop_and_collect(_metadata, self, &c);
	EXPECT_EQ(0, c.count);
	rt_markers_free(&c);
}

TEST_F(marker, tracing_off_records_nothing)
{
	struct rt_markers c = { 0 };
	struct rt_stats s;

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(3, write(self->fd, "off", 3));
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	EXPECT_EQ(0, s.written);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(2, write(self->fd, "on", 2));
	stop_and_collect(_metadata, self, &c);
	ASSERT_EQ(1, c.count);
	EXPECT_EQ(2, c.m[0].len);
	EXPECT_EQ(0, memcmp("on", c.m[0].data, 2));
	rt_markers_free(&c);
}

/*
 * With one-page sub-buffers a maximal marker cannot fit.  It must not be
 * recorded in part: either refused with -EINVAL and not counted at all, or
 * accepted by write() and counted as lost_too_big.  The largest marker
 * that fits even behind an extended event header is recorded intact.
 */
TEST_F(marker, too_big_for_subbuf)
{
	const size_t page = sysconf(_SC_PAGESIZE);
	const size_t fits = page - sizeof(struct ringtrace_packet_header) -
			    RINGTRACE_EXTENDED_HEADER_SIZE - 1 - 2;
	static uint8_t buf[RINGTRACE_MARKER_MAX];
	struct rt_stats s;
	struct rt_markers c = { 0 };
	ssize_t ret;

	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_prepare("discard", page, 4));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));

	memset(buf, 'T', sizeof(buf));
	ret = write(self->fd, buf, RINGTRACE_MARKER_MAX);
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	if (ret < 0) {
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(0, s.written);
		EXPECT_EQ(0, s.lost_too_big);
	} else {
		EXPECT_EQ(RINGTRACE_MARKER_MAX, ret);
		EXPECT_EQ(1, s.written);
		EXPECT_EQ(1, s.lost_too_big);
	}
	ASSERT_GE(RINGTRACE_MARKER_MAX, fits);
	ASSERT_EQ((ssize_t)fits, write(self->fd, buf, fits));

	stop_and_collect(_metadata, self, &c);
	ASSERT_EQ(1, c.count);
	EXPECT_EQ(fits, c.m[0].len);
	EXPECT_EQ(0, memcmp(buf, c.m[0].data, fits));
	rt_markers_free(&c);
}

/* A marker lands in the buffer of the CPU that wrote it, and only there. */
TEST_F(marker, on_writing_cpu)
{
	cpu_set_t cpus;
	char text[32], msg[256];
	int cpu;

	rt_buf_close(&self->b);
	ASSERT_LT(0, rt_usable_cpus(&cpus));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &cpus))
			continue;
		ASSERT_EQ(0, rt_pin(cpu));
		snprintf(text, sizeof(text), "cpu%d", cpu);
		ASSERT_EQ((ssize_t)strlen(text), write(self->fd, text, strlen(text)));
	}
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		struct rt_markers c = { 0 };
		struct rt_buf b;

		if (!CPU_ISSET(cpu, &cpus))
			continue;
		ASSERT_EQ(0, rt_buf_open(&b, cpu));
		EXPECT_EQ(-ENODATA, rt_drain(self->m, &b, rt_collect_marker, &c,
					     NULL, msg, sizeof(msg))) TH_LOG("%s", msg);
		snprintf(text, sizeof(text), "cpu%d", cpu);
		ASSERT_EQ(1, c.count) TH_LOG("cpu %d", cpu);
		EXPECT_EQ(strlen(text), c.m[0].len);
		EXPECT_EQ(0, memcmp(text, c.m[0].data, c.m[0].len));
		rt_markers_free(&c);
		rt_buf_close(&b);
	}
}

#define THREADS		4
#define PER_THREAD	300

struct writer {
	int cpu;
	int id;
	int fd;
	int errors;
};

static void *write_markers(void *arg)
{
	struct writer *w = arg;
	char text[32];
	int i, n;

	if (rt_pin(w->cpu))
		w->errors++;
	for (i = 0; i < PER_THREAD; i++) {
		n = snprintf(text, sizeof(text), "%d:t%d", i, w->id);
		if (write(w->fd, text, n) != n)
			w->errors++;
	}
	return NULL;
}

/*
 * Threads writing at once, several per CPU: every marker arrives once,
 * and each thread's markers in the order it wrote them.
 */
TEST_F(marker, concurrent_writers)
{
	struct writer w[THREADS];
	pthread_t t[THREADS];
	int next[THREADS] = { 0 }, ncpus, cpu, i, total = 0;
	int cpu_list[CPU_SETSIZE];
	cpu_set_t cpus;
	char msg[256];

	rt_buf_close(&self->b);
	ncpus = 0;
	ASSERT_LT(0, rt_usable_cpus(&cpus));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &cpus))
			cpu_list[ncpus++] = cpu;
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct writer){ .cpu = cpu_list[i % ncpus], .id = i,
					.fd = self->fd };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, write_markers, &w[i]));
	}
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].errors);
	}
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));

	for (i = 0; i < ncpus; i++) {
		struct rt_markers c = { 0 };
		struct rt_buf b;
		size_t k;

		ASSERT_EQ(0, rt_buf_open(&b, cpu_list[i]));
		EXPECT_EQ(-ENODATA, rt_drain(self->m, &b, rt_collect_marker, &c,
					     NULL, msg, sizeof(msg))) TH_LOG("%s", msg);
		for (k = 0; k < c.count; k++) {
			int seq, id, end = -1;
			char text[32] = "";

			ASSERT_GT(sizeof(text), c.m[k].len);
			memcpy(text, c.m[k].data, c.m[k].len);
			ASSERT_EQ(2, sscanf(text, "%d:t%d%n", &seq, &id, &end)) {
				TH_LOG("marker \"%s\"", text);
			}
			EXPECT_EQ((int)c.m[k].len, end);
			ASSERT_LE(0, id);
			ASSERT_GT(THREADS, id);
			/* Thread id wrote on this CPU, in order. */
			EXPECT_EQ(cpu_list[i], w[id].cpu);
			EXPECT_EQ(next[id], seq);
			next[id] = seq + 1;
			total++;
		}
		rt_markers_free(&c);
		rt_buf_close(&b);
	}
	for (i = 0; i < THREADS; i++)
		EXPECT_EQ(PER_THREAD, next[i]) TH_LOG("thread %d", i);
	EXPECT_EQ(THREADS * PER_THREAD, total);
}

TEST_HARNESS_MAIN
