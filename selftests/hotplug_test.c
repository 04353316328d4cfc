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
 *     pending that would hang clear, a geometry change or rmmod.
 */
#include "ringtrace_test.h"

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

TEST_HARNESS_MAIN
