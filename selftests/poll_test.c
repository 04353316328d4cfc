// SPDX-License-Identifier: GPL-2.0
/*
 * poll() and epoll on a CPU buffer file: readable exactly when a complete
 * sub-buffer waits for GET_SUBBUF (or as many as SET_WAKEUP asked for),
 * and a sleeping consumer is woken when a writer completes one or FLUSH
 * closes one.
 */
#include "ringtrace_test.h"

#include <pthread.h>
#include <sys/epoll.h>


#define SUBBUF		4096U
/*
 * Markers of this size put three in a packet and the fourth in the next:
 * header 88 + 3 * (event header <= 16 + 2 + 1000) < 4095 < 88 + 4 * 1006.
 */
#define BIG_MARKER	1000

FIXTURE(poll) {
	int cpu;
	int marker;
	struct rt_buf b;
};

FIXTURE_SETUP(poll)
{
	self->marker = -1;
	self->b.fd = -1;
	RT_REQUIRE();
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_prepare("discard", SUBBUF, 4));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	self->marker = rt_marker_open();
	ASSERT_LE(0, self->marker);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(poll)
{
	rt_ctl_write("tracing_on", "0");
	if (self->marker >= 0)
		close(self->marker);
	rt_buf_close(&self->b);
	rt_reset();
}

static int poll_in(int fd, int timeout_ms, short *revents)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDNORM };
	int ret = poll(&pfd, 1, timeout_ms);

	*revents = pfd.revents;
	return ret;
}

static void write_big(struct __test_metadata *_metadata,
		      FIXTURE_DATA(poll) *self, int n)
{
	char buf[BIG_MARKER];

	memset(buf, 'p', sizeof(buf));
	while (n--)
		ASSERT_EQ(BIG_MARKER, write(self->marker, buf, sizeof(buf)));
}

TEST_F(poll, empty_times_out)
{
	short rev;

	EXPECT_EQ(0, poll_in(self->b.fd, 200, &rev));
	EXPECT_EQ(0, rev);
	/* A packet that is open but not complete is not readable. */
	write_big(_metadata, self, 3);
	EXPECT_EQ(0, poll_in(self->b.fd, 200, &rev));
	EXPECT_EQ(0, rev);
}

TEST_F(poll, readable_when_subbuf_completes)
{
	struct ringtrace_subbuf sb;
	short rev;

	write_big(_metadata, self, 3);
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	/* The fourth does not fit: the first packet is complete. */
	write_big(_metadata, self, 1);
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(3, sb.events);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	/* Consumed: not readable any more. */
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
}

TEST_F(poll, readable_after_flush)
{
	struct ringtrace_subbuf sb;
	short rev;

	ASSERT_EQ(5, write(self->marker, "flush", 5));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(1, sb.events);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
}

/* Stopping tracing closes the open packet: the reader sees it. */
TEST_F(poll, readable_after_stop)
{
	short rev;

	ASSERT_EQ(4, write(self->marker, "stop", 4));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
}

/*
 * Stopped and drained: POLLHUP (end of data) with GET giving -ENODATA;
 * tracing on again: no longer.
 */
TEST_F(poll, hup_when_stopped_and_drained)
{
	struct ringtrace_subbuf sb;
	short rev;

	ASSERT_EQ(4, write(self->marker, "tail", 4));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(1, sb.events);
	/* Held: not drained yet, nothing to get either. */
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLHUP, rev);
	EXPECT_EQ(-ENODATA, rt_get(self->b.fd, &sb));

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	EXPECT_EQ(0, rev);
}

/* Events lost since the last packet: a stopped buffer still has a tail. */
TEST_F(poll, readable_when_stopped_with_losses)
{
	struct ringtrace_subbuf sb;
	short rev;
	int n;

	/*
	 * Three markers fill a packet: twelve fill the four packets of the
	 * buffer, the next two are lost (discard mode, no consumer yet).
	 */
	write_big(_metadata, self, 14);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	/* Drain, then the loss-only packet, then end of data. */
	for (n = 0; n < 16; n++) {
		ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
		if (rev & POLLHUP)
			break;
		EXPECT_EQ(POLLIN | POLLRDNORM, rev);
		ASSERT_EQ(0, rt_get(self->b.fd, &sb));
		ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	}
	EXPECT_EQ(POLLHUP, rev);
	EXPECT_LT(0, sb.events_discarded);
	EXPECT_EQ(0, sb.events) TH_LOG("the last packet only reports losses");
}

struct sleeper {
	int fd;
	int ret;
	short revents;
};

static void *sleep_in_poll(void *arg)
{
	struct sleeper *s = arg;

	int ret = poll_in(s->fd, 20000, &s->revents);

	/* Read while it sleeps (wakeup_watermark): revents first. */
	__atomic_store_n(&s->ret, ret, __ATOMIC_RELEASE);
	return NULL;
}

/* A consumer asleep in poll() is woken by the writer's completion. */
TEST_F(poll, wakes_sleeper)
{
	struct sleeper s = { .fd = self->b.fd, .ret = -2 };
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_poll, &s));
	/* Give it time to go to sleep; the test holds either way. */
	usleep(200000);
	write_big(_metadata, self, 4);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, s.ret);
	EXPECT_EQ(POLLIN | POLLRDNORM, s.revents);
}

/* A consumer asleep in poll() learns that tracing stopped. */
TEST_F(poll, stop_wakes_sleeper)
{
	struct sleeper s = { .fd = self->b.fd, .ret = -2 };
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_poll, &s));
	usleep(200000);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, s.ret);
	EXPECT_EQ(POLLHUP, s.revents);
}

/* SET_WAKEUP with every field given; returns 0 or -errno. */
static int set_wakeup(int fd, uint32_t size, uint32_t flags,
		      uint32_t packets, uint32_t reserved)
{
	struct ringtrace_wakeup wk = {
		.size = size, .flags = flags,
		.packets = packets, .reserved = reserved,
	};

	return ioctl(fd, RINGTRACE_IOC_SET_WAKEUP, &wk) ? -errno : 0;
}

/*
 * A watermark of two packets (half of this ring): one complete packet
 * neither makes poll() readable nor wakes a sleeper; GET still hands it
 * out; the second does both; a stopped trace is readable with one.
 */
TEST_F(poll, wakeup_watermark)
{
	struct sleeper s = { .fd = self->b.fd, .ret = -2 };
	struct ringtrace_subbuf sb;
	pthread_t t;
	short rev;

	ASSERT_EQ(0, set_wakeup(self->b.fd, sizeof(struct ringtrace_wakeup), 0, 2, 0));
	/* A flushed packet: not readable, but there for GET. */
	ASSERT_EQ(5, write(self->marker, "flush", 5));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(1, sb.events);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));

	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_poll, &s));
	usleep(200000);
	/* The fourth marker completes one packet: the sleeper sleeps on. */
	write_big(_metadata, self, 4);
	usleep(300000);
	EXPECT_EQ(-2, __atomic_load_n(&s.ret, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, poll_in(self->b.fd, 0, &rev));
	/* The eighth completes the second: woken, readable. */
	write_big(_metadata, self, 4);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, s.ret);
	EXPECT_EQ(POLLIN | POLLRDNORM, s.revents);

	/*
	 * Both taken, the last markers open; stopping closes that packet: one
	 * waiting, readable since no writer will add a second.
	 */
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	EXPECT_EQ(0, poll_in(self->b.fd, 100, &rev));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
}

/* Every malformed SET_WAKEUP is refused and changes nothing. */
TEST_F(poll, wakeup_watermark_refused)
{
	const uint32_t sz = sizeof(struct ringtrace_wakeup);
	short rev;

	EXPECT_EQ(-EINVAL, set_wakeup(self->b.fd, sz, 0, 0, 0));
	EXPECT_EQ(-EINVAL, set_wakeup(self->b.fd, sz, 0, 3, 0));	/* > 4 / 2 */
	EXPECT_EQ(-EINVAL, set_wakeup(self->b.fd, sz, 0, 2, 1));
	EXPECT_EQ(-EINVAL, set_wakeup(self->b.fd, sz, 1, 2, 0));
	EXPECT_EQ(-EINVAL, set_wakeup(self->b.fd, RINGTRACE_WAKEUP_SIZE_VER0 - 1, 0, 2, 0));
	EXPECT_EQ(-EFAULT, ioctl(self->b.fd, RINGTRACE_IOC_SET_WAKEUP, (void *)8) ? -errno : 0);
	/* Still one packet a wakeup. */
	write_big(_metadata, self, 4);
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
}

/* The watermark is the opener's: the next opener starts at one. */
TEST_F(poll, wakeup_watermark_ends_with_the_file)
{
	short rev;

	ASSERT_EQ(0, set_wakeup(self->b.fd, sizeof(struct ringtrace_wakeup), 0, 2, 0));
	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	write_big(_metadata, self, 4);
	ASSERT_EQ(1, poll_in(self->b.fd, 5000, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
}

TEST_F(poll, epoll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	struct ringtrace_subbuf sb;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ev.data.u32 = self->cpu;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->b.fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, out, 2, 100));

	write_big(_metadata, self, 4);
	ASSERT_EQ(1, epoll_wait(ep, out, 2, 5000));
	EXPECT_TRUE(out[0].events & EPOLLIN);
	EXPECT_EQ(self->cpu, out[0].data.u32);
	/* Level-triggered: still ready until consumed. */
	ASSERT_EQ(1, epoll_wait(ep, out, 2, 0));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	EXPECT_EQ(0, epoll_wait(ep, out, 2, 100));

	/* FLUSH wakes an epoll waiter too. */
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(1, epoll_wait(ep, out, 2, 5000));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(1, sb.events);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	close(ep);
}

TEST_HARNESS_MAIN
