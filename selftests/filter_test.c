// SPDX-License-Identifier: GPL-2.0
/*
 * events/<name>/filter (module/filter.c): every operator decides what is
 * written, counted by the `written` counter of the CPU a child workload
 * runs on; malformed expressions are refused with the predicate in force
 * kept and the reason read back; a predicate is replaced and cleared.
 *
 * The child names itself "rtflt-child" (prctl) and then makes exactly
 * NR_GETPID getpid(), NR_GETPPID getppid() and one exit_group() calls:
 * with "comm == rtflt-child && ..." nothing else on the machine can
 * match, and the count of events written is known for every predicate.
 *
 * Switches tracepoints on and off: run under single-threaded TCG
 * (selftests/probes/run_guest.sh runs it), like the probes' suite.
 */
#include "ringtrace_test.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define NR_GETPID	5
#define NR_GETPPID	7
#define NR_SLEEPS	3
#define CHILD_COMM	"rtflt-child"

static const char *const filter_file = "events/syscall_entry/filter";

FIXTURE(filter) {
	int cpu;
};

FIXTURE_SETUP(filter)
{
	RT_REQUIRE();
	if (access(rt_path(filter_file), F_OK))
		SKIP(return, "this ringtrace.ko has no %s", filter_file);
	ASSERT_EQ(0, rt_reset());
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
}

FIXTURE_TEARDOWN(filter)
{
	rt_ctl_write("events/syscall_entry/filter", "0");
	rt_ctl_write("events/sched_switch/filter", "0");
	rt_reset();
}

/* The child's calls; it inherits the CPU the parent is pinned to. */
static void child(int sleeps)
{
	/* Long enough that the timer never fires before the task sleeps. */
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int i;

	prctl(PR_SET_NAME, CHILD_COMM);
	for (i = 0; i < NR_GETPID; i++)
		syscall(SYS_getpid);
	for (i = 0; i < NR_GETPPID; i++)
		syscall(SYS_getppid);
	for (i = 0; i < sleeps; i++)
		syscall(SYS_nanosleep, &ts, NULL);
	syscall(SYS_exit_group, 0);
}

/*
 * @event enabled with predicate @expr, tracing on: the events written
 * on the test CPU while the child runs; -1 if something failed.
 */
static long long written_by_child(struct __test_metadata *_metadata,
				  int cpu, const char *event, const char *expr,
				  int sleeps)
{
	char file[128];
	struct rt_stats a, b;
	pid_t pid;
	int status;

	snprintf(file, sizeof(file), "events/%s/filter", event);
	EXPECT_EQ(0, rt_ctl_write(file, expr)) {
		TH_LOG("%s: '%s' refused", file, expr);
		return -1;
	}
	snprintf(file, sizeof(file), "events/%s/enable", event);
	EXPECT_EQ(0, rt_ctl_write(file, "1"));
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(0, rt_read_stats(cpu, &a));
	pid = fork();
	if (!pid)
		child(sleeps);
	EXPECT_LT(0, pid);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, rt_read_stats(cpu, &b));
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(0, rt_ctl_write(file, "0"));
	EXPECT_EQ(0, rt_stats_lost(&b));
	return (long long)(b.written - a.written);
}

/* The child's system calls with "comm == CHILD_COMM && @pred". */
static long long child_calls(struct __test_metadata *_metadata, int cpu,
			     const char *pred)
{
	char expr[256];

	snprintf(expr, sizeof(expr), "comm == \"%s\" && (%s)", CHILD_COMM,
		 pred);
	return written_by_child(_metadata, cpu, "syscall_entry", expr, 0);
}

/* Out of line: GCC's -Wformat-overflow misreads the harness's TH_LOG in loops. */
static void __attribute__((noinline))
expect_count(struct __test_metadata *_metadata, long long want, long long got,
	     const char *expr)
{
	EXPECT_EQ(want, got) {
		TH_LOG("'%s'", expr);
	}
}

/*
 * Each comparison against getppid's number, whose calls sit between
 * getpid's (lower on every architecture we build for: x86-64 39 < 110)
 * and exit_group's (higher: 231).
 */
TEST_F(filter, operators)
{
	static const struct {
		const char *pred;
		long long want;
	} cases[] = {
		{ "id == getppid", NR_GETPPID },
		{ "id != getppid", NR_GETPID + 1 },
		{ "id < getppid", NR_GETPID },
		{ "id <= getppid", NR_GETPID + NR_GETPPID },
		{ "id > getppid", 1 },
		{ "id >= getppid", NR_GETPPID + 1 },
		{ "id == getpid || id == exit_group", NR_GETPID + 1 },
		{ "!(id == getpid || id == exit_group)", NR_GETPPID },
		{ "!id == getpid", NR_GETPPID + 1 },
		{ "id > 0 && id < getppid", NR_GETPID },
		{ "nr_args == 0", NR_GETPID + NR_GETPPID },
		{ "nr_args == 1", 1 },
		{ "id == 12345", 0 },
		{ "id >= -1", NR_GETPID + NR_GETPPID + 1 },
	};
	unsigned int i;

	ASSERT_LT(SYS_getpid, SYS_getppid);
	ASSERT_LT(SYS_getppid, SYS_exit_group);
	for (i = 0; i < RT_ARRAY_SIZE(cases); i++)
		expect_count(_metadata, cases[i].want,
			     child_calls(_metadata, self->cpu, cases[i].pred),
			     cases[i].pred);
}

/* Masks: alone a test for any bit set, or compared. */
TEST_F(filter, masks)
{
	char pred[64];
	long long want;
	int bit;

	/* The lowest bit where getppid's number differs from getpid's. */
	for (bit = 0; !((SYS_getpid ^ SYS_getppid) & (1 << bit)); bit++)
		;
	snprintf(pred, sizeof(pred), "id & %#x", 1 << bit);
	want = (SYS_getpid & (1 << bit) ? NR_GETPID : 0) +
	       (SYS_getppid & (1 << bit) ? NR_GETPPID : 0) +
	       (SYS_exit_group & (1 << bit) ? 1 : 0);
	EXPECT_EQ(want, child_calls(_metadata, self->cpu, pred)) {
		TH_LOG("'%s'", pred);
	}
	snprintf(pred, sizeof(pred), "id & %d == %d", 0xff, SYS_getppid & 0xff);
	want = NR_GETPPID + ((SYS_getpid & 0xff) == (SYS_getppid & 0xff) ?
			     NR_GETPID : 0) +
	       ((SYS_exit_group & 0xff) == (SYS_getppid & 0xff));
	EXPECT_EQ(want, child_calls(_metadata, self->cpu, pred)) {
		TH_LOG("'%s'", pred);
	}
}

/* comm against globs, quoted and bare; the child's calls alone match. */
TEST_F(filter, comm_globs)
{
	static const struct {
		const char *expr;
		long long want;
	} cases[] = {
		{ "comm == rtflt-child", NR_GETPID + NR_GETPPID + 1 },
		{ "comm == \"rtflt-*\" && id == getppid", NR_GETPPID },
		{ "comm == 'rtflt-?hild' && id == getpid", NR_GETPID },
		{ "comm == \"*-chil[cd]\" && id == getpid", NR_GETPID },
		{ "comm == rtflt && id == getpid", 0 },
		{ "comm != \"rtflt-*\" && comm == \"*flt-child\"", 0 },
	};
	unsigned int i;

	for (i = 0; i < RT_ARRAY_SIZE(cases); i++)
		expect_count(_metadata, cases[i].want,
			     written_by_child(_metadata, self->cpu,
					      "syscall_entry", cases[i].expr, 0),
			     cases[i].expr);
}

/*
 * sched_switch's prev_state: each nanosleep() switches the child out in
 * TASK_INTERRUPTIBLE (1); its last switch, after exit, is another state.
 */
TEST_F(filter, sched_switch_prev_state)
{
	EXPECT_EQ(NR_SLEEPS,
		  written_by_child(_metadata, self->cpu, "sched_switch",
				   "prev_comm == rtflt-child && prev_state == 1",
				   NR_SLEEPS));
	EXPECT_EQ(0,
		  written_by_child(_metadata, self->cpu, "sched_switch",
				   "prev_comm == rtflt-child && prev_state & 2",
				   NR_SLEEPS));
}

/* The first line of the filter file, and whether it says @err. */
static void expect_filter(struct __test_metadata *_metadata,
			  const char *want, const char *err)
{
	char buf[1024], *nl, *e;

	ASSERT_LT(0, rt_ctl_read(filter_file, buf, sizeof(buf)));
	nl = strchr(buf, '\n');
	ASSERT_NE(NULL, nl);
	*nl = '\0';
	EXPECT_STREQ(want, buf);
	e = strstr(nl + 1, "# error: ");
	if (!err) {
		EXPECT_EQ(NULL, e) {
			TH_LOG("unexpected %s", nl + 1);
		}
		return;
	}
	ASSERT_NE(NULL, e);
	EXPECT_NE(NULL, strstr(e, err)) {
		TH_LOG("wanted '%s' in: %s", err, e);
	}
}

TEST_F(filter, malformed_refused)
{
	static const struct {
		const char *expr, *why;
	} bad[] = {
		{ "foo == 1", "unknown field 'foo'" },
		{ "id == opnat", "unknown system call 'opnat'" },
		{ "id = 1", "expected a comparison after 'id'" },
		{ "id == ", "expected a number for 'id'" },
		{ "id == 12x", "'12x' is not a number" },
		{ "nr_args == read", "'read' is not a number (for 'nr_args')" },
		{ "id == 1 &&", "expected a field name, not the end" },
		{ "id == 1 ||| id == 2", "expected a field name" },
		{ "(id == 1", "expected ')', not the end" },
		{ "id == 1)", "unexpected ')'" },
		{ "comm < abc", "'comm' is a string" },
		{ "comm == \"abc", "unterminated string" },
		{ "comm ==", "expected a string for 'comm'" },
		{ "id", "expected a comparison after 'id'" },
		{ "== 1", "expected a field name, not '='" },
		{ "((((((((((((((((((id == 1))))))))))))))))))",
		  "nested deeper than" },
		{ "!!!!!!!!!!!!!!!!!!!id == 1", "nested deeper than" },
	};
	char big[2048];
	unsigned int i;
	size_t n = 0;

	ASSERT_EQ(0, rt_ctl_write(filter_file, "id == getppid\n"));
	expect_filter(_metadata, "id == getppid", NULL);
	for (i = 0; i < RT_ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, rt_ctl_write(filter_file, bad[i].expr)) {
			TH_LOG("'%s' taken", bad[i].expr);
		}
		expect_filter(_metadata, "id == getppid", bad[i].why);
	}
	/* 65 comparisons: one more than a program holds. */
	for (i = 0; i < 65; i++)
		n += snprintf(big + n, sizeof(big) - n, "%sid == %u",
			      i ? " || " : "", i);
	EXPECT_EQ(-EINVAL, rt_ctl_write(filter_file, big));
	expect_filter(_metadata, "id == getppid", "too long");
	/* The predicate in force still decides. */
	EXPECT_EQ(NR_GETPPID,
		  written_by_child(_metadata, self->cpu, "syscall_entry",
				   "comm == rtflt-child && id == getppid", 0));
	/* Events without fields to name have no filter file. */
	EXPECT_NE(0, access(rt_path("events/ringtrace_statedump_task/filter"),
			    F_OK));
}

TEST_F(filter, replace_and_clear)
{
	ASSERT_EQ(0, rt_ctl_write(filter_file, "none"));
	expect_filter(_metadata, "none", NULL);
	ASSERT_EQ(-EINVAL, rt_ctl_write(filter_file, "bogus"));
	ASSERT_EQ(0, rt_ctl_write(filter_file, "id == getpid"));
	/* A write that works forgets the last refused one's error. */
	expect_filter(_metadata, "id == getpid", NULL);
	ASSERT_EQ(0, rt_ctl_write(filter_file, "  id != getpid  \n"));
	expect_filter(_metadata, "id != getpid", NULL);
	/* Read back on one line, to be written back as it reads. */
	ASSERT_EQ(0, rt_ctl_write(filter_file, "id == 1\n||\tid == 2\n"));
	expect_filter(_metadata, "id == 1 || id == 2", NULL);
	ASSERT_EQ(0, rt_ctl_write(filter_file, "0"));
	expect_filter(_metadata, "none", NULL);
	ASSERT_EQ(0, rt_ctl_write(filter_file, "id == 1"));
	ASSERT_EQ(0, rt_ctl_write(filter_file, " \n"));
	expect_filter(_metadata, "none", NULL);
}

TEST_HARNESS_MAIN
