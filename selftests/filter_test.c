// SPDX-License-Identifier: GPL-2.0
/*
 * events/<name>/filter (module/filter.c): every operator decides what is
 * written, counted by the `written` counter of the CPU a child workload
 * runs on; malformed expressions are refused with the predicate in force
 * kept and the reason read back; a predicate is replaced and cleared.
 * System call arguments and return values, and the marker's text, as
 * fields (each with a child or writes of its own, counted the same way);
 * a glob sees a string's first 256 bytes; an event with its kernel stack
 * counts once.
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

#include <fcntl.h>
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
	rt_ctl_write("set_event_stack", "!syscall_entry");
	rt_ctl_write("events/syscall_entry/filter", "0");
	rt_ctl_write("events/sched_switch/filter", "0");
	rt_ctl_write("events/syscall_exit/filter", "0");
	rt_ctl_write("events/ringtrace_marker/filter", "0");
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
 * on the test CPU while a child runs @run(@arg); -1 if something failed.
 */
static long long written_by(struct __test_metadata *_metadata, int cpu,
			    const char *event, const char *expr,
			    void (*run)(int), int arg)
{
	char file[128];
	struct rt_stats a, b;
	pid_t pid;
	int status = -1;

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
		run(arg);
	EXPECT_LT(0, pid);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, rt_read_stats(cpu, &b));
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(0, rt_ctl_write(file, "0"));
	EXPECT_EQ(0, rt_stats_lost(&b));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	return (long long)(b.written - a.written);
}

static long long written_by_child(struct __test_metadata *_metadata,
				  int cpu, const char *event, const char *expr,
				  int sleeps)
{
	return written_by(_metadata, cpu, event, expr, child, sleeps);
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

/*
 * System call arguments and return values: a child that makes
 * NR_CREAT openat(O_CREAT | O_WRONLY), NR_OPEN openat(O_RDONLY) and
 * NR_BADCLOSE close(-1) (each -EBADF).
 */
#define NR_CREAT	4
#define NR_OPEN		6
#define NR_BADCLOSE	3
#define CHILD_FILE	"/tmp/rtflt-child"

static void args_child(int unused)
{
	int i, fd;

	(void)unused;

	prctl(PR_SET_NAME, CHILD_COMM);
	for (i = 0; i < NR_CREAT + NR_OPEN; i++) {
		/*
		 * (long): an int through syscall()'s varargs leaves the
		 * register's upper half undefined; glibc's own wrappers
		 * sign-extend, as here.
		 */
		fd = syscall(SYS_openat, (long)AT_FDCWD, CHILD_FILE,
			     i < NR_CREAT ? O_CREAT | O_WRONLY : O_RDONLY, 0600);
		if (fd < 0)
			syscall(SYS_exit_group, 1);
		syscall(SYS_close, fd);
	}
	for (i = 0; i < NR_BADCLOSE; i++)
		syscall(SYS_close, -1L);
	syscall(SYS_exit_group, 0);
}

/* The events args_child() makes that pass "comm == CHILD_COMM && @pred". */
static long long written_by_args_child(struct __test_metadata *_metadata,
				       int cpu, const char *event,
				       const char *pred)
{
	char expr[256];

	snprintf(expr, sizeof(expr), "comm == \"%s\" && (%s)", CHILD_COMM,
		 pred);
	return written_by(_metadata, cpu, event, expr, args_child, 0);
}

/* syscall_entry's args[0..5] and syscall_exit's ret, signed. */
TEST_F(filter, syscall_args_and_ret)
{
	static const struct {
		const char *event, *pred;
		long long want;
	} cases[] = {
		{ "syscall_entry", "id == openat && args[2] & 0x40", NR_CREAT },
		{ "syscall_entry", "id == openat && !(args[2] & 0x40)", NR_OPEN },
		{ "syscall_entry", "id == openat && args[2] & 3 == 1", NR_CREAT },
		{ "syscall_entry", "id == openat && args[3] == 0600", NR_CREAT + NR_OPEN },
		/* AT_FDCWD: a negative number against the u64 recorded. */
		{ "syscall_entry", "id == openat && args[0] == -100",
		  NR_CREAT + NR_OPEN },
		/* An int argument's 32 bits, whatever the upper half holds. */
		{ "syscall_entry", "id == openat && args[0] & 0xffffffff == 0xffffff9c",
		  NR_CREAT + NR_OPEN },
		{ "syscall_entry", "id == close && args[0] == -1", NR_BADCLOSE },
		{ "syscall_entry", "id == close && args[0] < 0", NR_BADCLOSE },
		/* close has one argument: the others read 0. */
		{ "syscall_entry", "id == close && args[1] != 0", 0 },
		{ "syscall_exit", "id == close && ret == -9", NR_BADCLOSE },
		{ "syscall_exit", "id == close && ret < 0", NR_BADCLOSE },
		{ "syscall_exit", "id == close && ret >= 0", NR_CREAT + NR_OPEN },
		{ "syscall_exit", "id == close && ret == 0xfffffffffffffff7",
		  NR_BADCLOSE },
		{ "syscall_exit", "id == close && ret == 0xfffffff7", 0 },
		{ "syscall_exit", "id == openat && ret > 2", NR_CREAT + NR_OPEN },
	};
	unsigned int i;

	for (i = 0; i < RT_ARRAY_SIZE(cases); i++)
		expect_count(_metadata, cases[i].want,
			     written_by_args_child(_metadata, self->cpu,
						   cases[i].event,
						   cases[i].pred),
			     cases[i].pred);
	unlink(CHILD_FILE);
}

/* One marker write() of @text; its return value. */
static ssize_t write_marker(int fd, const char *text)
{
	return write(fd, text, strlen(text));
}

/*
 * events/ringtrace_marker/filter: the markers its predicate drops are not
 * written (the `written` counter does not move), and each write() still
 * returns its length.
 */
TEST_F(filter, marker_data)
{
	static const struct {
		const char *expr;
		unsigned int want;	/* bit i: text[i] is written */
	} cases[] = {
		{ "data == \"keep*\"", 0x5 },
		{ "data != \"keep*\"", 0xa },
		{ "data == '*[0-9]' && comm == \"" CHILD_COMM "\"", 0x3 },
		{ "data == drop-1 || data == keep-1", 0x3 },
		{ "comm == nobody", 0 },
		{ "none", 0xf },
	};
	static const char *const text[] = { "keep-1", "drop-1", "keep-x", "drop-x" };
	const char *file = "events/ringtrace_marker/filter";
	struct rt_stats a, b;
	unsigned int i, j, n;
	int fd;

	ASSERT_EQ(0, access(rt_path(file), F_OK));
	prctl(PR_SET_NAME, CHILD_COMM);
	fd = open(rt_path("marker"), O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < RT_ARRAY_SIZE(cases); i++) {
		EXPECT_EQ(0, rt_ctl_write(file, cases[i].expr)) {
			TH_LOG("'%s' refused", cases[i].expr);
		}
		ASSERT_EQ(0, rt_read_stats(self->cpu, &a));
		for (j = 0; j < RT_ARRAY_SIZE(text); j++)
			EXPECT_EQ((ssize_t)strlen(text[j]),
				  write_marker(fd, text[j]));
		ASSERT_EQ(0, rt_read_stats(self->cpu, &b));
		n = __builtin_popcount(cases[i].want);
		expect_count(_metadata, n, (long long)(b.written - a.written),
			     cases[i].expr);
	}
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "0"));
	close(fd);
	EXPECT_EQ(-EINVAL, rt_ctl_write(file, "data < 3"));
	EXPECT_EQ(-EINVAL, rt_ctl_write(file, "len == 3"));
	EXPECT_EQ(0, rt_ctl_write(file, "0"));
}

/* @len bytes of 'x' with @head at the start and @tail at the end. */
static void fill_text(char *text, size_t len, const char *head,
		      const char *tail)
{
	memset(text, 'x', len);
	memcpy(text, head, strlen(head));
	memcpy(text + len - strlen(tail), tail, strlen(tail));
}

/*
 * A glob is matched against the first 256 bytes of a string, as if it
 * ended there (module/filter.c, RTR_FILTER_GLOB_SPAN): a marker whose
 * TAIL ends at byte 256 matches "*TAIL", one whose TAIL ends at byte 257
 * or 4096 does not; "HEAD*" matches a marker of 4096 bytes.
 */
TEST_F(filter, glob_span)
{
	static const struct {
		size_t len;
		const char *head, *tail;
		unsigned int written;
	} cases[] = {
		{ 256, "", "TAIL", 1 },
		{ 257, "", "TAIL", 0 },
		{ 4096, "", "TAIL", 0 },
		{ 4096, "HEAD", "", 1 },
		{ 300, "HEAD", "TAIL", 1 },
		{ 300, "head", "TAIL", 0 },
	};
	const char *file = "events/ringtrace_marker/filter";
	static char text[4096];
	struct rt_stats a, b;
	unsigned int i;
	int fd;

	ASSERT_EQ(0, rt_ctl_write(file, "data == '*TAIL' || data == 'HEAD*'"));
	fd = open(rt_path("marker"), O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < RT_ARRAY_SIZE(cases); i++) {
		fill_text(text, cases[i].len, cases[i].head, cases[i].tail);
		ASSERT_EQ(0, rt_read_stats(self->cpu, &a));
		EXPECT_EQ((ssize_t)cases[i].len, write(fd, text, cases[i].len));
		ASSERT_EQ(0, rt_read_stats(self->cpu, &b));
		EXPECT_EQ(cases[i].written, b.written - a.written) {
			TH_LOG("a marker of %zu bytes, '%s...%s'", cases[i].len,
			       cases[i].head, cases[i].tail);
		}
	}
	EXPECT_EQ(0, rt_ctl_write("tracing_on", "0"));
	close(fd);
}

struct stack_records {
	int entry_id, ref_id, def_id;
	unsigned int entries, refs, defs;
};

static int count_stack_records(void *arg, const struct rt_event *ev,
			       char *msg __attribute__((unused)),
			       size_t msg_size __attribute__((unused)))
{
	struct stack_records *c = arg;

	c->entries += (int)ev->id == c->entry_id;
	c->refs += (int)ev->id == c->ref_id;
	c->defs += (int)ev->id == c->def_id;
	return 0;
}

/*
 * An event with its kernel stack is one event: `written` and `delivered`
 * count it once, while its packet holds more records -- the event, its
 * stack_ref trailer and, the first time in a packet, the stack's
 * stack_def -- and the packet's `events` counts them all.  The calls come
 * from one place: one stack, defined once per packet at most.
 */
TEST_F(filter, stack_counts_once)
{
	struct stack_records c = { 0 };
	struct rt_drain dr = { 0 };
	struct rt_meta *m;
	struct rt_stats s;
	struct rt_buf b;
	char msg[512];
	long long n;
	int ret;

	ASSERT_EQ(0, rt_ctl_write("set_event_stack", "syscall_entry"));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	c.entry_id = rt_meta_find(m, "syscall_entry");
	c.ref_id = rt_meta_find(m, "stack_ref");
	c.def_id = rt_meta_find(m, "stack_def");
	ASSERT_LE(0, c.entry_id);
	ASSERT_LE(0, c.ref_id);
	ASSERT_LE(0, c.def_id);
	n = written_by_child(_metadata, self->cpu, "syscall_entry",
			     "comm == " CHILD_COMM " && id == getppid", 0);
	EXPECT_EQ(NR_GETPPID, n);
	ret = rt_drain(m, &b, count_stack_records, &c, &dr, msg, sizeof(msg));
	EXPECT_EQ(-ENODATA, ret) {
		TH_LOG("%s", msg);
	}
	EXPECT_EQ(NR_GETPPID, c.entries);
	EXPECT_EQ(NR_GETPPID, c.refs);
	/* Interned: far fewer definitions than references. */
	EXPECT_LE(1, c.defs);
	EXPECT_GT(NR_GETPPID / 2, c.defs);
	ASSERT_EQ(0, rt_read_stats(self->cpu, &s));
	/* The state dump's events and the calls: every record but the stacks'. */
	EXPECT_EQ(dr.events - c.refs - c.defs, s.delivered);
	EXPECT_EQ(s.delivered, s.written);
	EXPECT_EQ(0, rt_stats_lost(&s));
	free(m);
	rt_buf_close(&b);
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
		{ "args[6] == 1", "unknown field 'args[6]'" },
		{ "args[0 == 1", "expected an index and ']' after 'args'" },
		{ "args[] == 1", "expected an index and ']' after 'args'" },
		{ "nr_args[0] == 1", "unknown field 'nr_args[0]'" },
		{ "args == 1", "unknown field 'args'" },
		{ "args[1] == foo", "'foo' is not a number (for 'args[1]')" },
		{ "args[1] == --5", "'--5' is not a number" },
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
