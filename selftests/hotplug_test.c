// SPDX-License-Identifier: GPL-2.0
/*
 * CPU hotplug.  Buffers exist for the CPUs that have been online since the
 * module loaded: run_guest.sh loads ringtrace.ko with the highest CPU
 * offline, so that this test sees a CPU come up for the first time.
 *
 *   - a CPU that has never been online has no buffer (ENODEV, no stats);
 *   - one that comes up gets one, and records;
 *   - one that goes down keeps it: what it wrote is still delivered;
 *   - CPUs going up and down while they write never leave a wakeup
 *     pending that would hang clear, a geometry change or rmmod;
 *   - packets a CPU completes while it comes up wake the consumer (with
 *     ringtrace_selftest.ko, which run_guest.sh loads for this test).
 */
#include "ringtrace_test.h"

#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>

#define SUBBUF		4096U

FIXTURE(hotplug) {
	int cpu;		/* the CPU that comes and goes */
	int marker;
};

static int cpu_online_path(int cpu, char *path, size_t size)
{
	return snprintf(path, size, "/sys/devices/system/cpu/cpu%d/online", cpu);
}

static int set_online(int cpu, bool on)
{
	char path[64];

	cpu_online_path(cpu, path, sizeof(path));
	return rt_write_file(path, on ? "1" : "0", 1) == 1 ? 0 : -1;
}

static bool is_online(int cpu)
{
	char path[64], buf[8];

	cpu_online_path(cpu, path, sizeof(path));
	return rt_read_file(path, buf, sizeof(buf)) > 0 && buf[0] == '1';
}

/* Does the stats file have a line for @cpu? */
static bool has_stats(int cpu)
{
	char *text = rt_slurp(rt_path("stats")), line[16];
	bool found;

	if (!text)
		return false;
	/* Lines start "cpu<N> written=". */
	snprintf(line, sizeof(line), "\ncpu%d ", cpu);
	found = !strncmp(text, line + 1, strlen(line + 1)) ||
		strstr(text, line) != NULL;
	free(text);
	return found;
}

/* Write @n markers on @cpu, from a child pinned there. */
static int markers_on(int cpu, int n)
{
	pid_t pid = fork();
	int status, fd;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (rt_pin(cpu))
			_exit(2);
		fd = rt_marker_open();
		if (fd < 0)
			_exit(3);
		while (n--)
			if (write(fd, "hotplug", 7) != 7)
				_exit(4);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

FIXTURE_SETUP(hotplug)
{
	char possible[256];
	cpu_set_t cpus;
	int cpu;

	self->marker = -1;
	RT_REQUIRE();
	ASSERT_LT(0, rt_read_file("/sys/devices/system/cpu/possible", possible,
				  sizeof(possible)));
	ASSERT_LT(0, rt_parse_cpulist(possible, &cpus));
	self->cpu = -1;
	for (cpu = CPU_SETSIZE - 1; cpu > 0 && self->cpu < 0; cpu--)
		if (CPU_ISSET(cpu, &cpus))
			self->cpu = cpu;
	if (self->cpu < 0 || access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "no CPU that can go offline");
	ASSERT_EQ(0, rt_prepare("discard", SUBBUF, 4));
}

FIXTURE_TEARDOWN(hotplug)
{
	if (self->cpu > 0)
		set_online(self->cpu, true);
	rt_reset();
}

/* Runs first (harness order): the CPU is still offline since the load. */
TEST_F(hotplug, a_no_buffer_before_first_online)
{
	char path[64];
	int fd;

	if (is_online(self->cpu))
		SKIP(return, "cpu%d was online when the module loaded", self->cpu);
	EXPECT_FALSE(has_stats(self->cpu));
	snprintf(path, sizeof(path), "cpu/%d/buffer", self->cpu);
	fd = open(rt_path(path), O_RDONLY | O_CLOEXEC);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENODEV, errno);
	if (fd >= 0)
		close(fd);
	/* Coming up gives it a buffer that records. */
	ASSERT_EQ(0, set_online(self->cpu, true));
	EXPECT_TRUE(has_stats(self->cpu));
}

/* What a CPU wrote before it went down is delivered, whole. */
TEST_F(hotplug, offline_data_stays_readable)
{
	struct rt_markers c = { 0 };
	struct rt_drain dr = { 0 };
	struct rt_meta *m;
	struct rt_stats s;
	struct rt_buf b;
	char msg[256];
	size_t i;

	ASSERT_EQ(0, set_online(self->cpu, true));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(0, markers_on(self->cpu, 20));
	ASSERT_EQ(0, set_online(self->cpu, false));
	/* The stop flush closes the offline CPU's packet from here. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(-ENODATA, rt_drain(m, &b, rt_collect_marker, &c, &dr, msg,
				     sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(20, c.count);
	for (i = 0; i < c.count; i++)
		EXPECT_EQ(0, memcmp(c.m[i].data, "hotplug", 7));
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	EXPECT_EQ(20, s.written);
	EXPECT_EQ(20, s.delivered);
	rt_markers_free(&c);
	rt_buf_close(&b);
	free(m);
}

/*
 * Up and down while writing, with packets completing on the way down, then
 * everything that frees buffers: none of it may wait for a wakeup that a
 * dead CPU still holds.  A hang here is the harness's timeout.
 */
TEST_F_TIMEOUT(hotplug, churn_then_free, 300)
{
	int round;

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (round = 0; round < 20; round++) {
		ASSERT_EQ(0, set_online(self->cpu, true));
		/* A packet of 4 KiB completes every ~500 markers. */
		ASSERT_EQ(0, markers_on(self->cpu, 300 + 37 * round));
		ASSERT_EQ(0, set_online(self->cpu, false));
	}
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_ctl_write("clear", "1"));
	ASSERT_EQ(0, rt_set_geometry(8192, 4));
	ASSERT_EQ(0, set_online(self->cpu, true));
	ASSERT_EQ(0, rt_set_geometry(SUBBUF, 4));
}

/* Blobs of 400 bytes in one burst: two packets of SUBBUF. */
#define BURST		20

struct burst {
	int cpu;
	ssize_t ret;			/* of the write to online_burst */
	char report[128];		/* what online_burst read back */
};

/* Arms ringtrace_selftest's burst for @b->cpu; returns once it ran. */
static void *burst_thread(void *arg)
{
	struct burst *b = arg;
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%d %d %d", b->cpu, BURST, 400);
	b->ret = rt_write_file(RTST_DIR "/online_burst", cmd, strlen(cmd));
	if (rt_read_file(RTST_DIR "/online_burst", b->report,
			 sizeof(b->report)) < 0)
		b->report[0] = '\0';
	return NULL;
}

/*
 * poll()'s timeout.  At its end poll() looks once more and reports the
 * packet ready either way: what tells a wakeup from none is whether it
 * returned long before that.
 */
#define POLL_TIMEOUT_MS	30000

struct sleeper {
	int fd;
	int ready;			/* poll()'s count */
	short revents;
	struct timespec slept, woke;
};

static void *poll_thread(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd pfd = { .fd = s->fd, .events = POLLIN };

	clock_gettime(CLOCK_MONOTONIC, &s->slept);
	s->ready = poll(&pfd, 1, POLL_TIMEOUT_MS);
	s->revents = pfd.revents;
	clock_gettime(CLOCK_MONOTONIC, &s->woke);
	return NULL;
}

static double ms_since(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1e3 + (b->tv_nsec - a->tv_nsec) / 1e6;
}

/*
 * A CPU that comes up runs interrupts and kernel threads before its
 * online callback: packets it completes then queue no wakeup (the writer
 * only queues one while the CPU is up, [W1] in module/ring.c), so the
 * online callback must wake the consumer for them.  ringtrace_selftest
 * writes ~8 KiB (two packets) on the CPU from an IPI as soon as it
 * counts as online; a consumer already asleep in poll() must wake up,
 * although nothing is written there afterwards.  (Without the online
 * callback's wakeup it slept until poll()'s timeout, in every round.)
 * Rounds whose burst came after the CPU was fully up (cpu_active()
 * already) would pass through the irq_work: the log says how many did.
 */
TEST_F_TIMEOUT(hotplug, wakes_for_packets_before_online, 600)
{
	struct ringtrace_subbuf sb;
	struct timespec up;
	struct sleeper sl;
	struct burst bu;
	pthread_t pt, bt;
	struct rt_buf b;
	int round, early = 0, ran, active, accepted, cpu, ret;

	if (rtst_unavailable())
		SKIP(return, "%s", rtst_unavailable());
	ASSERT_EQ(0, set_online(self->cpu, true));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (round = 0; round < 5; round++) {
		ASSERT_EQ(0, set_online(self->cpu, false));
		/* Whatever is complete now is not what this round tests. */
		while (!(ret = rt_get(b.fd, &sb)))
			ASSERT_EQ(0, rt_put(b.fd, sb.pos));
		ASSERT_EQ(-EAGAIN, ret);

		bu = (struct burst){ .cpu = self->cpu };
		sl = (struct sleeper){ .fd = b.fd };
		ASSERT_EQ(0, pthread_create(&pt, NULL, poll_thread, &sl));
		ASSERT_EQ(0, pthread_create(&bt, NULL, burst_thread, &bu));
		/* Both asleep, in poll() and in the burst's wait. */
		usleep(200000);
		ASSERT_EQ(0, set_online(self->cpu, true));
		clock_gettime(CLOCK_MONOTONIC, &up);
		ASSERT_EQ(0, pthread_join(bt, NULL));
		ASSERT_EQ(0, pthread_join(pt, NULL));
		TH_LOG("round %d: %s, poll woke %.0f ms after the online write returned",
		       round, bu.report, ms_since(&up, &sl.woke));
		ASSERT_LT(0, bu.ret) TH_LOG("online_burst: %s",
					      strerror(-bu.ret));
		ASSERT_EQ(4, sscanf(bu.report, "cpu=%d ran=%d active=%d accepted=%d",
				    &cpu, &ran, &active, &accepted))
			TH_LOG("online_burst reads \"%s\"", bu.report);
		EXPECT_EQ(self->cpu, cpu);
		EXPECT_EQ(1, ran);
		EXPECT_EQ(BURST, accepted);
		early += !active;
		EXPECT_EQ(1, sl.ready);
		EXPECT_TRUE(sl.revents & POLLIN);
		/* Woken, not timed out: half the timeout is miles away. */
		EXPECT_GT(POLL_TIMEOUT_MS / 2, ms_since(&sl.slept, &sl.woke))
			TH_LOG("round %d: no wakeup for cpu%d's packets, burst %s it was active",
			       round, self->cpu, active ? "after" : "before");
	}
	TH_LOG("%d of 5 bursts before cpu%d was active", early, self->cpu);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	rt_buf_close(&b);
}

TEST_HARNESS_MAIN
