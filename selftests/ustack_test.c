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
 *              is followed by its stack_ref, naming its kernel and user
 *              stacks' stack_defs (user ips[0] a user address, at most
 *              ustack_depth frames, only known flags), while no switch-out
 *              of a kernel thread (the idle task, a kworker...) has a user
 *              stack; ustack_stats counted at least those walks
 *   interned   the same with 4 KiB packets and 1500 sleeps from one place:
 *              every ref names a def of its kind earlier in its packet;
 *              this thread's stacks are one kernel and one user stack,
 *              user ips[0] in an executable mapping of this process; a
 *              stack is defined again in a packet only after another
 *              stack of its kind could have taken its place in the table
 *              or by an event with a full header (the slow path); every
 *              ref's header is untimed (the metadata's `untimed` id, its
 *              27 bits the id again), read at its switch's time; and
 *              there are far fewer defs than refs
 *   stress     stacks on system calls, switches, interrupts and softirqs
 *              (nested levels), 4 KiB packets, children on every CPU:
 *              written == delivered + lost, the records read are the
 *              delivered events and their stacks' trailers, every ref
 *              resolves
 *   forged     getpriority() made with rsp and rbp pointing at frame
 *              records this test laid out, with both stacks on
 *              syscall_entry: a chain of 200 records gives the ip and
 *              then exactly the first 126 return addresses in order
 *              (ustack_depth 127, TRUNCATED, no FAULT); a record whose
 *              next frame lies in the kernel's text, or in a page never
 *              touched, ends the walk with FAULT after its return address,
 *              and that page is still not resident (mincore): the walk
 *              never faults a page in; each event's kernel stack starts
 *              outside ringtrace.ko and reaches do_syscall_64
 *
 * Runs from tools/tests/profile.d/ustack.sh (single-threaded TCG: it
 * switches a tracepoint), or by hand as root with ringtrace.ko loaded.
 */
#include "ringtrace_test.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>

#define NR_SLEEPS	20
#define MAX_SWITCHES	4096
#define USER_TOP	(1ULL << 47)	/* x86-64's user half, 4-level */
#define PF_KTHREAD	0x00200000	/* include/linux/sched.h */
#define KNOWN_FLAGS	(RINGTRACE_USTACK_TRUNCATED | RINGTRACE_USTACK_FAULT | \
			 RINGTRACE_USTACK_COMPAT | RINGTRACE_USTACK_ENTRY)

/* A sched_switch and the stacks its stack_ref named. */
struct switch_rec {
	int prev_tid;
	bool ref;			/* a stack_ref followed it */
	bool kstack, ustack;
	unsigned int udepth;
	uint16_t uflags;
	uint64_t uip0;
};

struct switches {
	int switch_id;
	unsigned int n;
	unsigned int stray;		/* a ref after no switch, or a second */
	struct rt_stacks st;
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
		s->st.last_offset = ev->offset;
		return 0;
	}
	if (rt_stacks_feed(&s->st, ev) != 2)
		return 0;
	if (!r || r->ref) {
		s->stray++;
		return 0;
	}
	r->ref = true;
	r->kstack = s->st.kernel;
	if (s->st.user) {
		r->ustack = true;
		r->udepth = s->st.user->depth;
		r->uflags = s->st.user->flags;
		r->uip0 = r->udepth ? s->st.user->ips[0] : 0;
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

/*
 * Kernel and user stacks (at most @depth user frames) on sched_switch,
 * the buffer of @cpu open in @b: returns the metadata (the caller frees
 * it) and the ids of sched_switch, stack_def and stack_ref.
 */
static struct rt_meta *stacks_on_switch(struct __test_metadata *_metadata,
					int cpu, const char *depth,
					struct rt_buf *b, int *switch_id,
					struct rt_stacks *st)
{
	struct rt_meta *m;

	ASSERT_EQ(0, rt_ctl_write("ustack_depth", depth));
	ASSERT_EQ(0, rt_ctl_write("set_event_ustack", "sched_switch"));
	ASSERT_EQ(0, rt_ctl_write("set_event_stack", "sched_switch"));
	ASSERT_EQ(0, rt_ctl_write("events/sched_switch/enable", "1"));
	ASSERT_EQ(0, rt_buf_open(b, cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	*switch_id = rt_meta_find(m, "sched_switch");
	st->def_id = rt_meta_find(m, "stack_def");
	st->ref_id = rt_meta_find(m, "stack_ref");
	ASSERT_LE(0, *switch_id);
	ASSERT_LE(0, st->def_id);
	ASSERT_LE(0, st->ref_id);
	return m;
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
	m = stacks_on_switch(_metadata, self->cpu, "5", &b, &s->switch_id,
			     &s->st);
	/* Compact ids: a trailer's header has no room for more. */
	EXPECT_GT(RINGTRACE_EVENT_ID_EXTENDED, s->st.def_id);
	EXPECT_GT(RINGTRACE_EVENT_ID_EXTENDED, s->st.ref_id);
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
	EXPECT_EQ(0, s->st.bad);
	for (i = 0; i < s->n; i++) {
		const struct switch_rec *r = &s->rec[i];

		EXPECT_TRUE(r->kstack) {
			TH_LOG("switch %u (prev %d) without its kernel stack", i,
			       r->prev_tid);
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

/* ---- interned ---------------------------------------------------------- */

#define NR_INTERNED	1500
#define MAX_CONTENTS	64

/* A stack's frames, as a number: equal stacks give equal ones. */
static uint64_t stack_sum(const struct rt_stack_def *d)
{
	uint64_t h = 1469598103934665603ULL ^ ((uint64_t)d->kind << 8 | d->flags);
	unsigned int i;

	for (i = 0; i < d->depth; i++)
		h = (h ^ d->ips[i]) * 1099511628211ULL;
	return h ^ d->depth;
}

struct interned {
	int switch_id, tid;
	bool event_extended;		/* the last event's header */
	struct rt_stacks st;
	unsigned int mine, mine_kernel, mine_user;
	unsigned int redefined;		/* again, with no reason (below) */
	unsigned int other_stray;	/* a ref not right after its switch */
	unsigned int timed;		/* a ref whose header carries a time */
	uint64_t switch_ts;		/* the last switch's */
	bool last_was_switch, last_mine;
	/* This thread's stacks: distinct contents and how often each. */
	uint64_t sum[2][MAX_CONTENTS];
	unsigned int count[2][MAX_CONTENTS], nsum[2];
	uint64_t uip0[NR_INTERNED * 2];
	unsigned int nuip0;
};

static void count_content(struct interned *c, unsigned int kind, uint64_t sum)
{
	unsigned int i;

	for (i = 0; i < c->nsum[kind]; i++)
		if (c->sum[kind][i] == sum) {
			c->count[kind][i]++;
			return;
		}
	if (i < MAX_CONTENTS) {
		c->sum[kind][i] = sum;
		c->count[kind][i] = 1;
		c->nsum[kind]++;
	}
}

/*
 * A def of a stack its packet already defined: interning only does that
 * after the table's entry may have gone to another stack of its kind (a
 * def of one came in between) or from the slow path (an event with a
 * full header: it may land in a packet with the def, stack.c [I3]).
 */
static bool redefined_without_reason(const struct interned *c)
{
	const struct rt_stack_def *d = &c->st.def[c->st.ndefs - 1];
	uint64_t sum = stack_sum(d);
	int i, last = -1;

	for (i = 0; i < (int)c->st.ndefs - 1; i++)
		if (c->st.def[i].kind == d->kind && stack_sum(&c->st.def[i]) == sum)
			last = i;
	if (last < 0 || c->event_extended)
		return false;
	for (i = last + 1; i < (int)c->st.ndefs - 1; i++)
		if (c->st.def[i].kind == d->kind)
			return false;
	return true;
}

static int collect_interned(void *arg, const struct rt_event *ev,
			    char *msg __attribute__((unused)),
			    size_t msg_size __attribute__((unused)))
{
	struct interned *c = arg;
	unsigned int defs = c->st.ndefs;
	int kind;

	if ((int)ev->id == c->switch_id) {
		if (ev->offset <= c->st.last_offset)
			c->st.ndefs = 0;
		c->st.last_offset = ev->offset;
		c->event_extended = ev->extended;
		c->switch_ts = ev->ts;
		c->last_was_switch = true;
		c->last_mine = (int32_t)rt_le(ev->payload + 16, 4) == c->tid;
		return 0;
	}
	kind = rt_stacks_feed(&c->st, ev);
	if (kind == 1) {
		if (c->st.ndefs > defs && redefined_without_reason(c))
			c->redefined++;
		return 0;
	}
	if (kind != 2)
		return 0;
	if (!c->last_was_switch) {
		c->other_stray++;
		return 0;
	}
	c->last_was_switch = false;
	/* Untimed (module/ctf.c): the ref is read at its switch's time. */
	if (!ev->untimed || ev->ts != c->switch_ts)
		c->timed++;
	if (!c->last_mine)
		return 0;
	c->mine++;
	if (c->st.kernel) {
		c->mine_kernel++;
		count_content(c, 0, stack_sum(c->st.kernel));
	}
	if (c->st.user) {
		c->mine_user++;
		count_content(c, 1, stack_sum(c->st.user));
		if (c->nuip0 < NR_INTERNED * 2 && c->st.user->depth)
			c->uip0[c->nuip0++] = c->st.user->ips[0];
	}
	return 0;
}

/* Whether @ip lies in an executable mapping of this process. */
static bool in_my_text(uint64_t ip)
{
	char line[512], perms[8];
	unsigned long long lo, hi;
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 &&
		    perms[2] == 'x' && ip >= lo && ip < hi)
			found = true;
	fclose(f);
	return found;
}

/* The share (percent) of the most frequent content of @kind. */
static unsigned int top_share(const struct interned *c, unsigned int kind,
			      unsigned int of)
{
	unsigned int i, top = 0;

	for (i = 0; i < c->nsum[kind]; i++)
		if (c->count[kind][i] > top)
			top = c->count[kind][i];
	return of ? top * 100 / of : 0;
}

TEST_F(ustack, interned)
{
	const struct timespec sleep = { 0, 100000 };
	struct interned *c = calloc(1, sizeof(*c));
	struct rt_drain dr = { 0 };
	struct rt_meta *m;
	struct rt_stats st;
	struct rt_buf b;
	unsigned int i;
	char msg[512];
	int ret;

	ASSERT_NE(NULL, c);
	c->tid = (int)syscall(SYS_gettid);
	ASSERT_EQ(0, rt_set_geometry(4096, 256));
	m = stacks_on_switch(_metadata, self->cpu, "8", &b, &c->switch_id,
			     &c->st);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < NR_INTERNED; i++)
		nanosleep(&sleep, NULL);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_flush(b.fd));
	ret = rt_drain(m, &b, collect_interned, c, &dr, msg, sizeof(msg));
	EXPECT_EQ(-ENODATA, ret) {
		TH_LOG("%s", msg);
	}
	ASSERT_EQ(0, rt_read_stats(self->cpu, &st));
	TH_LOG("%u packets, %u defs, %u refs; this thread: %u switch-outs, "
	       "%u kernel and %u user stack contents", dr.packets, c->st.defs,
	       c->st.refs, c->mine, c->nsum[0], c->nsum[1]);
	EXPECT_EQ(0, rt_stats_lost(&st));
	EXPECT_EQ(0, dr.seq_gaps);
	/* Every ref names defs of its kind earlier in its packet. */
	EXPECT_EQ(0, c->st.bad);
	EXPECT_EQ(0, c->other_stray);
	EXPECT_EQ(0, c->timed);
	EXPECT_EQ(0, c->redefined);
	/* A sleep whose timer expired before it blocked switches nothing. */
	EXPECT_LE(NR_INTERNED * 9 / 10, c->mine);
	EXPECT_EQ(c->mine, c->mine_kernel);
	EXPECT_EQ(c->mine, c->mine_user);
	/* One place sleeps: one kernel and one user stack, nearly always. */
	EXPECT_LE(90, top_share(c, 0, c->mine_kernel));
	EXPECT_LE(90, top_share(c, 1, c->mine_user));
	for (i = 0; i < c->nuip0; i++)
		if (!in_my_text(c->uip0[i]))
			break;
	EXPECT_EQ(c->nuip0, i) {
		TH_LOG("user ips[0] 0x%llx is in no executable mapping",
		       (unsigned long long)c->uip0[i]);
	}
	/* Many packets, each defining its few stacks once. */
	EXPECT_LE(20, dr.packets);
	EXPECT_GE(c->st.refs, 4 * c->st.defs);
	free(m);
	free(c);
	rt_buf_close(&b);
}

/* ---- stress: stacks at every level, on every CPU ------------------------ */

#define STRESS_MS	1500

/* A child: system calls and short sleeps until killed. */
static void stress_child(void)
{
	const struct timespec us = { 0, 50000 };

	for (;;) {
		for (int i = 0; i < 50; i++)
			getppid();
		nanosleep(&us, NULL);
	}
}

/*
 * Stacks on system calls, switches, interrupts and softirqs (task and
 * nested levels), 4 KiB packets, on every CPU: written == delivered +
 * lost, every record read is a delivered event or a stack's trailer, and
 * every ref names defs of its kind earlier in its packet.
 */
TEST_F(ustack, stress)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), c, i;
	pid_t kids[8];
	struct rt_stacks *st = calloc(1, sizeof(*st));
	struct rt_meta *m;
	char msg[512];

	ASSERT_NE(NULL, st);
	ASSERT_LT(0, ncpu);
	ASSERT_EQ(0, rt_set_geometry(4096, 512));
	ASSERT_EQ(0, rt_ctl_write("set_event_stack",
				  "sched_switch syscall_entry irq_handler_entry irq_softirq_entry"));
	ASSERT_EQ(0, rt_ctl_write("set_event_ustack", "sched_switch syscall_entry"));
	ASSERT_EQ(0, rt_ctl_write("events/sched_switch/enable", "1"));
	ASSERT_EQ(0, rt_ctl_write("events/syscall_entry/enable", "1"));
	ASSERT_EQ(0, rt_ctl_write("events/irq_handler_entry/enable", "1"));
	ASSERT_EQ(0, rt_ctl_write("events/irq_softirq_entry/enable", "1"));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < 2 * ncpu && i < 8; i++) {
		kids[i] = fork();
		if (!kids[i]) {
			rt_pin(i % ncpu);
			stress_child();
		}
	}
	usleep(STRESS_MS * 1000);
	for (c = 0; c < i; c++)
		kill(kids[c], SIGKILL);
	for (c = 0; c < i; c++)
		waitpid(kids[c], NULL, 0);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	for (c = 0; c < ncpu; c++) {
		struct rt_drain dr = { 0 };
		struct rt_stats s;
		struct rt_buf b;
		int ret;

		memset(st, 0, sizeof(*st));
		st->def_id = rt_meta_find(m, "stack_def");
		st->ref_id = rt_meta_find(m, "stack_ref");
		ASSERT_EQ(0, rt_buf_open(&b, c));
		ASSERT_EQ(0, rt_flush(b.fd));
		ret = rt_drain(m, &b, (rt_event_fn)rt_stacks_drain_fn, st, &dr,
			       msg, sizeof(msg));
		EXPECT_EQ(-ENODATA, ret) {
			TH_LOG("cpu %d: %s", c, msg);
		}
		ASSERT_EQ(0, rt_read_stats(c, &s));
		TH_LOG("cpu %d: written %llu delivered %llu lost %llu; %u packets, "
		       "%u refs, %u defs", c, (unsigned long long)s.written,
		       (unsigned long long)s.delivered,
		       (unsigned long long)rt_stats_lost(&s), dr.packets,
		       st->refs, st->defs);
		EXPECT_EQ(s.written, s.delivered + rt_stats_lost(&s));
		EXPECT_EQ(dr.events - st->refs - st->defs, s.delivered);
		EXPECT_EQ(0, st->bad);
		EXPECT_LT(0, st->refs);
		EXPECT_LT(st->defs, st->refs);
		rt_buf_close(&b);
	}
	free(m);
	free(st);
}

/* ---- forged ------------------------------------------------------------ */

#define FORGE_WHICH	0x7a11		/* getpriority()'s which: EINVAL */
#define FORGE_DEEP	200		/* records of the deep chain */
#define FORGE_RET	0x10000000ULL	/* return addresses: FORGE_RET + i */

enum { FORGE_CHAIN, FORGE_KERNEL, FORGE_ABSENT, FORGE_CASES };

/*
 * getpriority(FORGE_WHICH, @tag) entered with rsp = @sp and rbp = @fp:
 * the user registers the kernel saves, and so the user stack it walks.
 * Both are put back before anything else runs here.
 */
static long forged_syscall(uint64_t sp, uint64_t fp, long tag)
{
	register long nr asm("rax") = SYS_getpriority;
	register long which asm("rdi") = FORGE_WHICH;
	register long arg asm("rsi") = tag;
	register uint64_t fsp asm("r8") = sp;
	register uint64_t ffp asm("r9") = fp;

	asm volatile("mov %%rsp, %%r12\n\t"
		     "mov %%rbp, %%r13\n\t"
		     "mov %%r8, %%rsp\n\t"
		     "mov %%r9, %%rbp\n\t"
		     "syscall\n\t"
		     "mov %%r13, %%rbp\n\t"
		     "mov %%r12, %%rsp"
		     : "+r"(nr)
		     : "r"(which), "r"(arg), "r"(fsp), "r"(ffp)
		     : "rcx", "r11", "r12", "r13", "memory");
	return nr;
}

/* The kernel's symbols, sorted, to name a kernel frame. */
struct ksym {
	uint64_t addr;
	char name[64];
	bool ours;			/* [ringtrace] */
};

struct ksyms {
	struct ksym *s;
	size_t n;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int ksyms_load(struct ksyms *k)
{
	char line[512], type, mod[64];
	unsigned long long addr;
	size_t cap = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct ksym e = { 0 };

		mod[0] = 0;
		if (sscanf(line, "%llx %c %63s %63s", &addr, &type, e.name, mod) < 3 ||
		    !addr || (type != 't' && type != 'T'))
			continue;
		if (k->n == cap) {
			struct ksym *n = realloc(k->s, (cap = cap ? 2 * cap : 65536) *
						 sizeof(*n));

			if (!n)
				break;
			k->s = n;
		}
		e.addr = addr;
		e.ours = !strcmp(mod, "[ringtrace]");
		k->s[k->n++] = e;
	}
	fclose(f);
	qsort(k->s, k->n, sizeof(*k->s), ksym_cmp);
	return k->n ? 0 : -1;
}

/* The address of text symbol @name, or 0. */
static uint64_t ksym_addr(const struct ksyms *k, const char *name)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (!strcmp(k->s[i].name, name))
			return k->s[i].addr;
	return 0;
}

/* The text symbol @ip lies in (the last at or below it), or NULL. */
static const struct ksym *ksym_of(const struct ksyms *k, uint64_t ip)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k->s[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &k->s[lo - 1] : NULL;
}

struct forged {
	int entry_id;
	bool pending;			/* a forged call's entry, no ref yet */
	long tag;
	struct rt_stacks st;
	unsigned int seen[FORGE_CASES];
	struct rt_stack_def user[FORGE_CASES], kernel[FORGE_CASES];
	bool has_kernel[FORGE_CASES];
};

static int collect_forged(void *arg, const struct rt_event *ev,
			  char *msg __attribute__((unused)),
			  size_t msg_size __attribute__((unused)))
{
	struct forged *c = arg;

	if ((int)ev->id == c->entry_id) {
		/* int32_t id; uint8_t nr_args; uint64_t args[nr_args]; */
		c->pending = ev->payload_len >= 21 &&
			     rt_le(ev->payload, 4) == SYS_getpriority &&
			     rt_le(ev->payload + 5, 8) == FORGE_WHICH;
		c->tag = c->pending ? (long)rt_le(ev->payload + 13, 8) : -1;
		c->st.last_offset = ev->offset;
		return 0;
	}
	if (rt_stacks_feed(&c->st, ev) != 2 || !c->pending)
		return 0;
	c->pending = false;
	if (c->tag < 0 || c->tag >= FORGE_CASES || c->seen[c->tag]++)
		return 0;
	if (c->st.user)
		c->user[c->tag] = *c->st.user;
	if (c->st.kernel) {
		c->kernel[c->tag] = *c->st.kernel;
		c->has_kernel[c->tag] = true;
	}
	return 0;
}

TEST_F(ustack, forged)
{
	long page = sysconf(_SC_PAGESIZE);
	struct forged *c = calloc(1, sizeof(*c));
	struct ksyms k = { 0 };
	uint64_t *rec, fp[FORGE_CASES], sp, kernel;
	unsigned char resident = 1;
	struct rt_meta *m;
	struct rt_buf b;
	char msg[512];
	unsigned int i, t;
	uint8_t *r;
	int ret;

	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, ksyms_load(&k));
	/* Mapped kernel memory: a read that skipped the range check works. */
	kernel = ksym_addr(&k, "do_syscall_64") & ~7ULL;
	ASSERT_NE(0, kernel);
	/* page 0: the sp and the deep chain; 1: a record; 2: never touched */
	r = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	sp = (uint64_t)r + 64;
	rec = (uint64_t *)(r + 128);
	for (i = 0; i < FORGE_DEEP; i++) {
		rec[2 * i] = i + 1 < FORGE_DEEP ? (uint64_t)&rec[2 * i + 2] : 0;
		rec[2 * i + 1] = FORGE_RET + i;
	}
	fp[FORGE_CHAIN] = (uint64_t)rec;
	rec = (uint64_t *)(r + page);
	rec[0] = kernel;
	rec[1] = FORGE_RET + 1000;
	rec[2] = (uint64_t)(r + 2 * page);
	rec[3] = FORGE_RET + 2000;
	fp[FORGE_KERNEL] = (uint64_t)&rec[0];
	fp[FORGE_ABSENT] = (uint64_t)&rec[2];

	ASSERT_EQ(0, rt_ctl_write("ustack_depth", "127"));
	ASSERT_EQ(0, rt_ctl_write("set_event_ustack", "syscall_entry"));
	ASSERT_EQ(0, rt_ctl_write("set_event_stack", "syscall_entry"));
	ASSERT_EQ(0, rt_ctl_write("events/syscall_entry/enable", "1"));
	ASSERT_EQ(0, rt_buf_open(&b, self->cpu));
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	c->entry_id = rt_meta_find(m, "syscall_entry");
	c->st.def_id = rt_meta_find(m, "stack_def");
	c->st.ref_id = rt_meta_find(m, "stack_ref");
	ASSERT_LE(0, c->entry_id);
	ASSERT_LE(0, c->st.def_id);
	ASSERT_LE(0, c->st.ref_id);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (t = 0; t < FORGE_CASES; t++)
		EXPECT_EQ(-EINVAL, forged_syscall(sp, fp[t], t));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	rt_ctl_write("set_event_ustack", "!syscall_entry");
	rt_ctl_write("set_event_stack", "!syscall_entry");
	rt_ctl_write("events/syscall_entry/enable", "0");
	ASSERT_EQ(0, rt_flush(b.fd));
	ret = rt_drain(m, &b, collect_forged, c, NULL, msg, sizeof(msg));
	EXPECT_EQ(-ENODATA, ret) {
		TH_LOG("%s", msg);
	}
	EXPECT_EQ(0, c->st.bad);
	/* The untouched page: the walk read it with page faults off. */
	EXPECT_EQ(0, mincore(r + 2 * page, page, &resident));
	EXPECT_EQ(0, resident & 1) {
		TH_LOG("the walk faulted in the page its last record pointed to");
	}

	for (t = 0; t < FORGE_CASES; t++) {
		const struct rt_stack_def *u = &c->user[t], *kd = &c->kernel[t];
		bool syscall64 = false;

		EXPECT_EQ(1, c->seen[t]) {
			TH_LOG("forged call %u: %u entries with a stack_ref", t,
			       c->seen[t]);
		}
		if (c->seen[t] != 1)
			continue;
		EXPECT_TRUE(u->depth && in_my_text(u->ips[0])) {
			TH_LOG("forged call %u: ips[0] not in this program", t);
		}
		if (t == FORGE_CHAIN) {
			EXPECT_EQ(RINGTRACE_USTACK_MAX_DEPTH, u->depth);
			EXPECT_EQ(RINGTRACE_USTACK_TRUNCATED, u->flags);
			for (i = 1; i < u->depth; i++)
				if (u->ips[i] != FORGE_RET + i - 1)
					break;
			EXPECT_EQ(u->depth, i) {
				TH_LOG("chain: frame %u is 0x%llx", i,
				       (unsigned long long)u->ips[i]);
			}
		} else {
			EXPECT_EQ(2, u->depth);
			EXPECT_EQ(RINGTRACE_USTACK_FAULT, u->flags);
			EXPECT_EQ(FORGE_RET + (t == FORGE_KERNEL ? 1000 : 2000),
				  u->depth > 1 ? u->ips[1] : 0);
		}
		EXPECT_TRUE(c->has_kernel[t]);
		if (!c->has_kernel[t])
			continue;
		EXPECT_LE(2, kd->depth);
		for (i = 0; i < kd->depth; i++) {
			const struct ksym *s = ksym_of(&k, kd->ips[i]);

			EXPECT_FALSE(s && s->ours) {
				TH_LOG("forged call %u: kernel frame %u is ringtrace's %s",
				       t, i, s->name);
			}
			if (s && !strcmp(s->name, "do_syscall_64"))
				syscall64 = true;
		}
		EXPECT_TRUE(syscall64) {
			TH_LOG("forged call %u: no frame in do_syscall_64", t);
		}
	}
	munmap(r, 3 * page);
	free(k.s);
	free(m);
	free(c);
	rt_buf_close(&b);
}

TEST_HARNESS_MAIN
