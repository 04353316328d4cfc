// SPDX-License-Identifier: GPL-2.0
/*
 * Triggers (module/trigger.c): events/<name>/trigger and the triggered
 * file.  A child named "rttrg-child" makes a known number of getppid()
 * calls on the test CPU: a trigger on them latches one hit (that event,
 * that CPU), counts every match, the ones after the first as missed; poll
 * on triggered wakes with EPOLLPRI; "rearm" lets the next one latch;
 * "mark" writes the marker that names the hit; nothing counts while
 * tracing is off, nor when the event is dropped (a full buffer): a hit's
 * event is always written; the marker's trigger fires on its text; a hit
 * on a CPU coming online wakes the poll; a marker's hit delayed past its
 * commit still lands before tracing stops; "rearm" waits for a read of
 * triggered in progress; malformed conditions and words are refused with
 * nothing changed.
 *
 * Switches tracepoints on and off: run under single-threaded TCG
 * (selftests/probes/run_guest.sh runs it), like filter_test.
 */
#include "ringtrace_test.h"

#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define NR_GETPPID	7
#define CHILD_COMM	"rttrg-child"

static const char *const trigger_file = "events/syscall_entry/trigger";
static const char *const marker_trigger = "events/ringtrace_marker/trigger";

struct hit {
	bool hit;
	char event[64];
	char trigger[256];
	int cpu;
	unsigned long long ts;
	long long hits, missed;
};

FIXTURE(trigger) {
	int cpu;
	int upped;	/* a CPU the test brought online, or -1 */
};

FIXTURE_SETUP(trigger)
{
	RT_REQUIRE();
	if (access(rt_path("triggered"), F_OK))
		SKIP(return, "this ringtrace.ko has no triggers");
	self->upped = -1;
	ASSERT_EQ(0, rt_reset());
	ASSERT_EQ(0, rt_ctl_write("triggered", "reset"));
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
}

static int set_online(int cpu, bool on);

FIXTURE_TEARDOWN(trigger)
{
	rt_ctl_write("events/sched_switch/trigger", "none");
	rt_ctl_write(trigger_file, "none");
	rt_ctl_write(marker_trigger, "none");
	rt_ctl_write("triggered", "reset");
	rt_reset();
	if (self->upped >= 0)
		set_online(self->upped, false);
}

static int read_hit(struct hit *h)
{
	char buf[1024], *line, *save = NULL;

	memset(h, 0, sizeof(*h));
	h->cpu = -1;
	if (rt_ctl_read("triggered", buf, sizeof(buf)) <= 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "state hit"))
			h->hit = true;
		sscanf(line, "event %63s", h->event);
		if (!strncmp(line, "trigger ", 8))
			snprintf(h->trigger, sizeof(h->trigger), "%s", line + 8);
		sscanf(line, "cpu %d", &h->cpu);
		sscanf(line, "timestamp %llu", &h->ts);
		sscanf(line, "hits %lld", &h->hits);
		sscanf(line, "missed %lld", &h->missed);
	}
	return 0;
}

/* The child's calls, on the CPU the parent is pinned to. */
static void run_child(void)
{
	pid_t pid = fork();
	int i, status;

	if (!pid) {
		prctl(PR_SET_NAME, CHILD_COMM);
		for (i = 0; i < NR_GETPPID; i++)
			syscall(SYS_getppid);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
}

/* 1 if triggered polls readable within @ms, 0 if not, -1 on error. */
static int poll_triggered(int ms)
{
	struct pollfd pfd = { .events = POLLPRI };
	int ret;

	pfd.fd = open(rt_path("triggered"), O_RDONLY);
	if (pfd.fd < 0)
		return -1;
	ret = poll(&pfd, 1, ms);
	close(pfd.fd);
	if (ret > 0 && !(pfd.revents & POLLPRI))
		return -1;
	return ret;
}

static void arm_syscalls(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, rt_ctl_write(trigger_file,
				  "comm == " CHILD_COMM " && id == getppid"));
	ASSERT_EQ(0, rt_ctl_write("events/syscall_entry/enable", "1"));
}

TEST_F(trigger, latch_count_rearm)
{
	struct hit h;

	arm_syscalls(_metadata);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(0, poll_triggered(0));
	run_child();
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_TRUE(h.hit);
	EXPECT_STREQ("syscall_entry", h.event);
	EXPECT_STREQ("comm == " CHILD_COMM " && id == getppid", h.trigger);
	EXPECT_EQ(self->cpu, h.cpu);
	EXPECT_EQ(NR_GETPPID, h.hits);
	/* Latched by the first: the others waited in vain, and say so. */
	EXPECT_EQ(NR_GETPPID - 1, h.missed);
	EXPECT_EQ(1, poll_triggered(0));

	EXPECT_EQ(0, rt_ctl_write("triggered", "rearm"));
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit);
	EXPECT_EQ(0, poll_triggered(0));
	/* Rearming what is armed: nothing to rearm. */
	EXPECT_EQ(-ENOENT, rt_ctl_write("triggered", "rearm"));
	run_child();
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_TRUE(h.hit);
	EXPECT_EQ(2 * NR_GETPPID, h.hits);
	EXPECT_EQ(2 * (NR_GETPPID - 1), h.missed);

	EXPECT_EQ(0, rt_ctl_write("triggered", "reset"));
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit);
	EXPECT_EQ(0, h.hits);
	EXPECT_EQ(0, h.missed);
}

/*
 * A hit is an event written: with the test CPU's buffer full (discard
 * mode, nothing consumed), every call of the child is dropped, and not
 * one is counted, latched or woken for.
 */
TEST_F(trigger, dropped_event_is_no_hit)
{
	static char blob[1000];
	struct rt_stats a, b;
	struct hit h;
	int fd, i;

	ASSERT_EQ(0, rt_set_geometry(4096, 4));
	arm_syscalls(_metadata);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	fd = rt_marker_open();
	ASSERT_LE(0, fd);
	/* After the first loss the packet is closed: nothing fits after. */
	memset(blob, 'f', sizeof(blob));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ((ssize_t)sizeof(blob), write(fd, blob, sizeof(blob)));
		ASSERT_EQ(0, rt_read_stats(self->cpu, &a));
		if (a.lost_full)
			break;
	}
	close(fd);
	ASSERT_LT(0, a.lost_full);
	run_child();
	ASSERT_EQ(0, rt_read_stats(self->cpu, &b));
	/* Every event offered since was lost, the child's calls among them. */
	EXPECT_LE(NR_GETPPID, b.lost_full - a.lost_full);
	EXPECT_EQ(b.written - a.written, b.lost_full - a.lost_full);
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit);
	EXPECT_EQ(0, h.hits);
	EXPECT_EQ(0, h.missed);
	EXPECT_EQ(0, poll_triggered(0));
}

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

/*
 * A CPU other than @cpu, brought online for the test when all others are
 * offline (selftests/probes/run_guest.sh keeps CPU 0 alone while probes
 * are switched); *@upped names it, for the teardown to take down again.
 */
static int other_cpu(int cpu, int *upped)
{
	int other = rt_other_cpu(cpu), i;
	char possible[256];
	cpu_set_t cpus;

	if (other >= 0)
		return other;
	if (rt_read_file("/sys/devices/system/cpu/possible", possible,
			 sizeof(possible)) <= 0 ||
	    rt_parse_cpulist(possible, &cpus) <= 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (i == cpu || !CPU_ISSET(i, &cpus) || is_online(i) ||
		    set_online(i, true))
			continue;
		*upped = i;
		return i;
	}
	return -1;
}

/* poll()'s timeout: what tells a wakeup from none is how long it took. */
#define POLL_TIMEOUT_MS	30000

struct sleeper {
	int fd;
	int ready;
	struct timespec slept, woke;
};

static void *poll_thread(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd pfd = { .fd = s->fd, .events = POLLPRI };

	clock_gettime(CLOCK_MONOTONIC, &s->slept);
	s->ready = poll(&pfd, 1, POLL_TIMEOUT_MS);
	clock_gettime(CLOCK_MONOTONIC, &s->woke);
	return NULL;
}

/*
 * A hit on a CPU coming online, before ringtrace's online callback: the
 * CPU queues no irq_work yet, and the callback must wake the poll
 * (trigger.c [T2]).  The hit: sched_switch to the CPU's own cpuhp thread,
 * which runs there before the callbacks it then runs, ringtrace's
 * included.  Without that wakeup the poll sleeps until its timeout.
 */
TEST_F_TIMEOUT(trigger, hit_on_cpu_coming_online, 120)
{
	char possible[256], cond[64], name[16];
	struct sleeper sl = { 0 };
	bool was_online;
	cpu_set_t cpus;
	pthread_t pt;
	struct hit h;
	double ms;
	int cpu;

	ASSERT_LT(0, rt_read_file("/sys/devices/system/cpu/possible", possible,
				  sizeof(possible)));
	ASSERT_LT(0, rt_parse_cpulist(possible, &cpus));
	for (cpu = CPU_SETSIZE - 1; cpu > 0 && !CPU_ISSET(cpu, &cpus); cpu--)
		;
	snprintf(name, sizeof(name), "cpu%d", cpu);
	if (cpu <= 0)
		SKIP(return, "one CPU: none can come online");
	/* On CPU 0, which stays: the one that comes and goes is @cpu. */
	ASSERT_EQ(0, rt_pin(0));
	was_online = is_online(cpu);
	/* Down first: the tracepoint is switched on while it is down. */
	if (was_online)
		ASSERT_EQ(0, set_online(cpu, false));
	snprintf(cond, sizeof(cond), "next_comm == \"cpuhp/%d\"", cpu);
	ASSERT_EQ(0, rt_ctl_write("events/sched_switch/trigger", cond));
	ASSERT_EQ(0, rt_ctl_write("events/sched_switch/enable", "1"));
	ASSERT_EQ(0, rt_ctl_write("triggered", "reset"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	sl.fd = open(rt_path("triggered"), O_RDONLY);
	ASSERT_LE(0, sl.fd);
	ASSERT_EQ(0, pthread_create(&pt, NULL, poll_thread, &sl));
	usleep(200 * 1000);
	EXPECT_EQ(0, set_online(cpu, true));
	ASSERT_EQ(0, pthread_join(pt, NULL));
	close(sl.fd);
	ms = (sl.woke.tv_sec - sl.slept.tv_sec) * 1e3 +
	     (sl.woke.tv_nsec - sl.slept.tv_nsec) / 1e6;
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_TRUE(h.hit);
	EXPECT_STREQ("sched_switch", h.event);
	EXPECT_EQ(cpu, h.cpu);
	EXPECT_EQ(1, sl.ready);
	/* Woken, not timed out: half the timeout is miles away. */
	EXPECT_GT(POLL_TIMEOUT_MS / 2, ms) {
		TH_LOG("no wakeup for the hit on %s: the poll slept %.0f ms", name, ms);
	}
	/* Back as it was, the tracepoint switched off with it down. */
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "0"));
	if (!was_online)
		EXPECT_EQ(0, set_online(cpu, false));
	EXPECT_EQ(0, rt_ctl_write("events/sched_switch/enable", "0"));
}

TEST_F(trigger, nothing_while_tracing_off)
{
	struct hit h;

	arm_syscalls(_metadata);
	run_child();
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit);
	EXPECT_EQ(0, h.hits);
}

/* A poll that sleeps is woken by the hit (the irq_work's wakeup). */
TEST_F(trigger, poll_wakes)
{
	struct pollfd pfd = { .events = POLLPRI };
	pid_t pid;
	int status;

	ASSERT_EQ(0, rt_ctl_write(marker_trigger, "data == \"FAIL*\""));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	pfd.fd = open(rt_path("triggered"), O_RDONLY);
	ASSERT_LE(0, pfd.fd);
	pid = fork();
	if (!pid) {
		usleep(200 * 1000);
		_exit(rt_ctl_write("marker", "FAIL now") ? 1 : 0);
	}
	ASSERT_LT(0, pid);
	EXPECT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_TRUE(pfd.revents & POLLPRI);
	close(pfd.fd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
}

TEST_F(trigger, marker_and_mark)
{
	struct rt_stats a, b;
	struct hit h;

	ASSERT_EQ(0, rt_ctl_write(marker_trigger,
				  "data == \"*FAIL*\" && comm != nobody"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	/* Nothing latched: no marker to write. */
	EXPECT_EQ(-ENOENT, rt_ctl_write("triggered", "mark"));
	EXPECT_EQ(0, rt_ctl_write("marker", "all is well"));
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit);
	EXPECT_EQ(0, rt_ctl_write("marker", "a FAIL here"));
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_TRUE(h.hit);
	EXPECT_STREQ("ringtrace_marker", h.event);
	EXPECT_EQ(self->cpu, h.cpu);
	EXPECT_EQ(1, h.hits);
	/* The mark is one marker on this CPU, and fires nothing itself. */
	ASSERT_EQ(0, rt_read_stats(self->cpu, &a));
	EXPECT_EQ(0, rt_ctl_write("triggered", "mark"));
	ASSERT_EQ(0, rt_read_stats(self->cpu, &b));
	EXPECT_EQ(1, b.written - a.written);
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_EQ(1, h.hits);
	EXPECT_EQ(0, h.missed);
}

/*
 * A marker's hit belongs to the trace its event was committed to
 * (trigger.c [T4]): a marker that matched waits 1.5 s between its commit
 * and its hit (inject_marker_hit_delay), on another CPU, while this one
 * stops tracing, resets the trigger, clears the buffers and starts a new
 * trace.  Stopping must wait for that writer, so its hit lands in the
 * old trace, before the reset: the new trace, which does not hold the
 * marker, has no hit.  Latched after the reset, the hit would name an
 * event no snapshot of the new trace holds (and read a buffer the clear
 * freed).
 */
TEST_F_TIMEOUT(trigger, marker_hit_before_stop, 120)
{
	int other = other_cpu(self->cpu, &self->upped), ready[2], status;
	struct rt_stats st;
	struct hit h;
	pid_t pid;
	char c;

	if (other < 0)
		SKIP(return, "one CPU: the writer needs a CPU of its own");
	ASSERT_EQ(0, access(RT_INJECT_HIT_PARAM, F_OK)) {
		TH_LOG("this ringtrace.ko has no inject_marker_hit_delay");
	}
	ASSERT_EQ(0, rt_ctl_write(marker_trigger, "data == late"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(4, rt_write_file(RT_INJECT_HIT_PARAM, "1500", 4));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		if (rt_pin(other) || write(ready[1], "r", 1) != 1)
			_exit(2);
		_exit(rt_ctl_write("marker", "late") ? 1 : 0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	/* The writer is in its 1.5 s, past its commit. */
	usleep(400 * 1000);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	/* Its marker was committed to the trace just stopped. */
	ASSERT_EQ(0, rt_read_stats(other, &st));
	EXPECT_EQ(1, st.written);
	ASSERT_EQ(0, rt_ctl_write("triggered", "reset"));
	ASSERT_EQ(0, rt_ctl_write("clear", "1"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_EQ(0, read_hit(&h));
	EXPECT_FALSE(h.hit) {
		TH_LOG("a hit latched in the next trace: %s on cpu %d", h.event, h.cpu);
	}
	EXPECT_EQ(0, h.hits);
	EXPECT_EQ(0, poll_triggered(0));
}

/*
 * "rearm" waits for a read of triggered in progress (trigger.c [T3]): a
 * read that found hit one sleeps 1.5 s between the hit's cpu and its
 * timestamp (inject_triggered_read_delay) while this thread, on another
 * CPU, rearms and writes a marker that latches hit two there.  The read
 * describes hit one: its cpu and its timestamp.  A rearm that did not
 * wait let hit two refill the slot under the read, which then printed
 * hit one's cpu with hit two's timestamp, a hit that never was.
 */
TEST_F_TIMEOUT(trigger, rearm_waits_for_read, 120)
{
	int other = other_cpu(self->cpu, &self->upped), ready[2], out[2], status,
	    cpu = -1;
	unsigned long long ts = 0;
	struct hit one, two;
	char text[1024], *line, *save = NULL;
	ssize_t n;
	pid_t pid;
	char c;

	if (other < 0)
		SKIP(return, "one CPU: the second hit needs a CPU of its own");
	ASSERT_EQ(0, access(RT_INJECT_READ_PARAM, F_OK)) {
		TH_LOG("this ringtrace.ko has no inject_triggered_read_delay");
	}
	ASSERT_EQ(0, rt_ctl_write(marker_trigger, "data == \"hit*\""));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(0, rt_ctl_write("marker", "hit one"));
	ASSERT_EQ(0, read_hit(&one));
	ASSERT_TRUE(one.hit);
	ASSERT_EQ(self->cpu, one.cpu);
	ASSERT_EQ(4, rt_write_file(RT_INJECT_READ_PARAM, "1500", 4));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		close(out[0]);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		n = rt_ctl_read("triggered", text, sizeof(text));
		_exit(n > 0 && write(out[1], text, n) == n ? 0 : 1);
	}
	close(ready[1]);
	close(out[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	/* The read is in its 1.5 s, holding hit one's cpu. */
	usleep(400 * 1000);
	ASSERT_EQ(0, rt_pin(other));
	ASSERT_EQ(0, rt_ctl_write("triggered", "rearm"));
	ASSERT_EQ(0, rt_ctl_write("marker", "hit two"));
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(1, rt_write_file(RT_INJECT_READ_PARAM, "0", 1));
	n = read(out[0], text, sizeof(text) - 1);
	close(out[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_LT(0, n);
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		sscanf(line, "cpu %d", &cpu);
		sscanf(line, "timestamp %llu", &ts);
	}
	EXPECT_EQ(one.cpu, cpu);
	EXPECT_EQ(one.ts, ts) {
		TH_LOG("the read printed cpu %d timestamp %llu; hit one: cpu %d timestamp %llu",
		       cpu, ts, one.cpu, one.ts);
	}
	/* Hit two latched, after the read. */
	ASSERT_EQ(0, read_hit(&two));
	EXPECT_TRUE(two.hit);
	EXPECT_EQ(other, two.cpu);
	EXPECT_LT(one.ts, two.ts);
}

TEST_F(trigger, malformed_refused)
{
	static const char *const bad[] = {
		"nosuch == 1", "id == 1 &&", "(id == 1", "comm < x", "id == opnat",
	};
	char buf[512];
	unsigned int i;

	ASSERT_EQ(0, rt_ctl_write(trigger_file, "id == getppid"));
	for (i = 0; i < RT_ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, rt_ctl_write(trigger_file, bad[i])) {
			TH_LOG("'%s' taken", bad[i]);
		}
		ASSERT_LT(0, rt_ctl_read(trigger_file, buf, sizeof(buf)));
		EXPECT_EQ(0, strncmp(buf, "id == getppid\n# error: ", 23)) {
			TH_LOG("after '%s': %s", bad[i], buf);
		}
	}
	/* The marker names data and comm only. */
	EXPECT_EQ(-EINVAL, rt_ctl_write(marker_trigger, "len == 3"));
	ASSERT_LT(0, rt_ctl_read(marker_trigger, buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "none\n# error: unknown field 'len'", 33)) {
		TH_LOG("%s", buf);
	}
	EXPECT_EQ(-EINVAL, rt_ctl_write("triggered", "fire"));
	EXPECT_EQ(-EINVAL, rt_ctl_write("triggered", ""));
	/* Cleared, the file says none again, and the error is gone. */
	EXPECT_EQ(0, rt_ctl_write(trigger_file, "none"));
	ASSERT_LT(0, rt_ctl_read(trigger_file, buf, sizeof(buf)));
	EXPECT_STREQ("none\n", buf);
}

TEST_HARNESS_MAIN
