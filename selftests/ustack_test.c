// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks on tracepoint events (module/ustack.c, module/stack.c):
 * set_event_ustack, ustack_depth and ustack_stats.
 *
 *   controls   bad writes (ustack_depth 0, 128, a word, an empty write;
 *              set_event_ustack naming the state dump or an unknown
 *              event) are refused and change nothing; 1 and 127 are taken
 *   switches   sched_switch with its kernel and user stacks, on this
 *              test's CPU while it sleeps: each switch-out of this thread
 *              is followed by its kernel_stack then its user_stack (ips[0]
 *              a user address, at most ustack_depth frames, only known
 *              flags), while no switch-out of a kernel thread (the idle
 *              task, a kworker...) carries a user_stack; ustack_stats
 *              counted at least those walks
 *
 * Runs from tools/tests/profile.d/ustack.sh (single-threaded TCG: it
 * switches a tracepoint), or by hand as root with ringtrace.ko loaded.
 */
#include "ringtrace_test.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <time.h>

#define NR_SLEEPS	20
#define MAX_SWITCHES	4096
#define USER_TOP	(1ULL << 47)	/* x86-64's user half, 4-level */
#define PF_KTHREAD	0x00200000	/* include/linux/sched.h */
#define KNOWN_FLAGS	(RINGTRACE_USTACK_TRUNCATED | RINGTRACE_USTACK_FAULT | \
			 RINGTRACE_USTACK_COMPAT | RINGTRACE_USTACK_ENTRY)

/* A sched_switch and the trailers that followed it. */
struct switch_rec {
	int prev_tid;
	bool kstack, ustack;
	bool ustack_first;		/* user_stack came before kernel_stack */
	unsigned int udepth;
	uint16_t uflags;
	uint64_t uip0;
};

struct switches {
	int switch_id, kstack_id, ustack_id;
	unsigned int n;
	unsigned int stray;		/* a trailer after no switch */
	struct switch_rec rec[MAX_SWITCHES];
};

static int collect(void *arg, const struct rt_event *ev,
		   char *msg __attribute__((unused)),
		   size_t msg_size __attribute__((unused)))
{
	struct switches *s = arg;
	struct switch_rec *r = s->n ? &s->rec[s->n - 1] : NULL;

	if ((int)ev->id == s->switch_id) {
		if (s->n == MAX_SWITCHES)
			return 0;
		r = &s->rec[s->n++];
		memset(r, 0, sizeof(*r));
		/* char prev_comm[16]; int32_t prev_tid; ... */
		r->prev_tid = (int32_t)rt_le(ev->payload + 16, 4);
	} else if ((int)ev->id == s->kstack_id) {
		if (!r || r->kstack || r->ustack)
			s->stray++;
		else
			r->kstack = true;
	} else if ((int)ev->id == s->ustack_id) {
		if (!r || r->ustack) {
			s->stray++;
			return 0;
		}
		r->ustack = true;
		r->ustack_first = !r->kstack;
		r->udepth = rt_le(ev->payload, 2);
		r->uflags = rt_le(ev->payload + 2, 2);
		r->uip0 = r->udepth ? rt_le(ev->payload + 4, 8) : 0;
	}
	return 0;
}

/* Whether task @tid (a thread of any process) is a kernel thread now. */
static bool is_kthread(int tid)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	FILE *f;
	int i;

	if (!tid)
		return true;		/* the idle task */
	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	f = fopen(path, "re");
	if (!f)
		return false;		/* gone: unknown, not counted */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return false;
	/* ") S ppid pgrp session tty tpgid flags": flags is the 7th after. */
	for (i = 0; i < 7 && p; i++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p, "%lu", &flags) == 1 && flags & PF_KTHREAD;
}

static long long stat_of(const char *name)
{
	char buf[256], *p;

	if (rt_ctl_read("ustack_stats", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, name);
	return p ? strtoll(p + strlen(name) + 1, NULL, 10) : -1;
}

FIXTURE(ustack) {
	int cpu;
	char depth[32];
};

FIXTURE_SETUP(ustack)
{
	RT_REQUIRE();
	ASSERT_EQ(0, rt_reset());
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
	/* A module without user stacks fails here: the files are its ABI. */
	ASSERT_LT(0, rt_ctl_read("ustack_depth", self->depth, sizeof(self->depth)));
}

FIXTURE_TEARDOWN(ustack)
{
	rt_ctl_write("set_event_ustack", "!sched_switch");
	rt_ctl_write("set_event_stack", "!sched_switch");
	rt_ctl_write("ustack_depth", self->depth);
	rt_reset();
}

/* set_event_ustack and ustack_depth as they read now. */
static void controls(char *buf, size_t size)
{
	ssize_t n = rt_ctl_read("set_event_ustack", buf, size / 2);

	if (n < 0)
		n = 0;
	buf[n] = '|';
	n = rt_ctl_read("ustack_depth", buf + n + 1, size - n - 1);
}

TEST_F(ustack, controls)
{
	static const struct {
		const char *file, *text;
	} bad[] = {
		{ "ustack_depth", "0" },
		{ "ustack_depth", "128" },
		{ "ustack_depth", "deep" },
		{ "ustack_depth", "" },
		{ "ustack_depth", "-1" },
		{ "set_event_ustack", "sched_switch ringtrace_statedump_task" },
		{ "set_event_ustack", "nosuch" },
		{ "set_event_ustack", " " },
	};
	char before[512], after[512];
	unsigned int i;

	ASSERT_EQ(0, rt_ctl_write("set_event_ustack", "syscall_entry"));
	ASSERT_EQ(0, rt_ctl_write("ustack_depth", "33"));
	controls(before, sizeof(before));
	ASSERT_STREQ("syscall_entry\n|33\n", before);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, rt_ctl_write(bad[i].file, bad[i].text)) {
			TH_LOG("%s '%s' taken", bad[i].file, bad[i].text);
		}
		controls(after, sizeof(after));
		EXPECT_STREQ(before, after) {
			TH_LOG("after %s '%s'", bad[i].file, bad[i].text);
		}
	}
	EXPECT_EQ(0, rt_ctl_write("ustack_depth", "1"));
	EXPECT_EQ(1, rt_ctl_read_num("ustack_depth"));
	EXPECT_EQ(0, rt_ctl_write("ustack_depth", "127"));
	EXPECT_EQ(RINGTRACE_USTACK_MAX_DEPTH, rt_ctl_read_num("ustack_depth"));
	/* Independent of set_event_stack. */
	EXPECT_EQ(0, rt_ctl_write("set_event_ustack", "!syscall_entry"));
	controls(after, sizeof(after));
	EXPECT_STREQ("|127\n", after);
	/* Read-only. */
	EXPECT_GT(0, rt_ctl_write("ustack_stats", "0"));
}

TEST_F(ustack, switches)
{
	const struct timespec ms = { 0, 1000000 };
	struct switches *s = calloc(1, sizeof(*s));
	unsigned int mine = 0, kthreads = 0, i;
	int tid = (int)syscall(SYS_gettid);
	long long walks_before, walks;
	struct rt_meta *m;
	struct rt_buf b;
	char msg[512];
	int ret;

	ASSERT_NE(NULL, s);
	ASSERT_EQ(0, rt_ctl_write("ustack_depth", "5"));
	ASSERT_EQ(0, rt_ctl_write("set_event_ustack", "sched_switch"));
	ASSERT_EQ(0, rt_ctl_write("set_event_stack", "sched_switch"));
	ASSERT_EQ(0, rt_ctl_write("events/sched_switch/enable", "1"));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	s->switch_id = rt_meta_find(m, "sched_switch");
	s->kstack_id = rt_meta_find(m, "kernel_stack");
	s->ustack_id = rt_meta_find(m, "user_stack");
	ASSERT_LE(0, s->switch_id);
	ASSERT_LE(0, s->kstack_id);
	ASSERT_LE(0, s->ustack_id);
	/* A compact id: the trailer's header has no room for more. */
	EXPECT_GT(RINGTRACE_EVENT_ID_EXTENDED, s->ustack_id);
	walks_before = stat_of("walks");
	ASSERT_LE(0, walks_before);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < NR_SLEEPS; i++)
		nanosleep(&ms, NULL);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_flush(b.fd));
	ret = rt_drain(m, &b, collect, s, NULL, msg, sizeof(msg));
	EXPECT_EQ(-ENODATA, ret) {
		TH_LOG("%s", msg);
	}
	walks = stat_of("walks");

	EXPECT_EQ(0, s->stray);
	for (i = 0; i < s->n; i++) {
		const struct switch_rec *r = &s->rec[i];

		EXPECT_TRUE(r->kstack) {
			TH_LOG("switch %u (prev %d) without its kernel_stack", i,
			       r->prev_tid);
		}
		EXPECT_FALSE(r->ustack_first) {
			TH_LOG("switch %u: user_stack before kernel_stack", i);
		}
		if (r->prev_tid == tid) {
			mine++;
			EXPECT_TRUE(r->ustack) {
				TH_LOG("switch %u of this thread without its user_stack", i);
			}
			if (!r->ustack)
				continue;
			EXPECT_LE(1, r->udepth);
			EXPECT_GE(5, r->udepth);
			EXPECT_EQ(0, r->uflags & ~KNOWN_FLAGS);
			EXPECT_EQ(0, r->uflags & RINGTRACE_USTACK_COMPAT);
			EXPECT_TRUE(r->uip0 && r->uip0 < USER_TOP) {
				TH_LOG("switch %u: ips[0] 0x%llx is no user address", i,
				       (unsigned long long)r->uip0);
			}
		} else if (is_kthread(r->prev_tid)) {
			kthreads++;
			EXPECT_FALSE(r->ustack) {
				TH_LOG("switch %u of kernel thread %d with a user_stack",
				       i, r->prev_tid);
			}
		}
	}
	TH_LOG("%u switches: %u of this thread, %u of kernel threads",
	       s->n, mine, kthreads);
	/* Each sleep switches this thread out, and the idle task out again. */
	EXPECT_LE(NR_SLEEPS / 2, mine);
	EXPECT_LE(1, kthreads);
	EXPECT_LE(walks_before + mine, walks);
	free(m);
	free(s);
	rt_buf_close(&b);
}

TEST_HARNESS_MAIN
