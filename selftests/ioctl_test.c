// SPDX-License-Identifier: GPL-2.0
/*
 * The consumer ioctls of a CPU buffer file: GET/PUT/FLUSH hand out whole
 * CTF packets whose every header field is checked, with the documented
 * error codes for every misuse; GET_POSITIONS and GET_STATS; one opener;
 * each recording's packets numbered from its start.
 */
#include "ringtrace_test.h"

#include <time.h>


#define SUBBUF	4096U
#define NSUBBUF	4U
#define SLACK_NS	10000

FIXTURE(ioc) {
	int cpu;
	int marker;
	struct rt_buf b;
	struct rt_meta *m;
};

FIXTURE_SETUP(ioc)
{
	self->marker = -1;
	self->b.fd = -1;
	RT_REQUIRE();
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_prepare("discard", SUBBUF, NSUBBUF));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	self->m = rt_meta_load_file();
	ASSERT_NE(NULL, self->m);
	self->marker = rt_marker_open();
	ASSERT_LE(0, self->marker);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(ioc)
{
	rt_ctl_write("tracing_on", "0");
	if (self->marker >= 0)
		close(self->marker);
	rt_buf_close(&self->b);
	free(self->m);
	rt_reset();
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Write a marker and flush: one complete packet holding it. */
static void one_packet(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ioc) *self, const char *text)
{
	ASSERT_EQ((ssize_t)strlen(text), write(self->marker, text, strlen(text)));
	ASSERT_EQ(0, rt_flush(self->b.fd));
}

TEST_F(ioc, get_nothing_complete)
{
	struct ringtrace_subbuf sb;

	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));
	/* An open, partly filled packet is not complete either. */
	ASSERT_EQ(3, write(self->marker, "abc", 3));
	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));
	/* FLUSH with nothing open changes nothing. */
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));
}

/* Markers, plus the bytes their event headers take. */
struct counted {
	struct rt_markers c;
	unsigned int header_bytes;
	bool first_extended;
	uint64_t last_ts;
};

static int count_headers(void *arg, const struct rt_event *ev, char *msg,
			 size_t msg_size)
{
	struct counted *h = arg;

	if (!h->c.count)
		h->first_extended = ev->extended;
	h->last_ts = ev->ts;
	h->header_bytes += ev->extended ? RINGTRACE_EXTENDED_HEADER_SIZE :
					  RINGTRACE_COMPACT_HEADER_SIZE;
	return rt_collect_marker(&h->c, ev, msg, msg_size);
}

TEST_F(ioc, packet_after_flush)
{
	static const char *const text[] = { "a", "bb", "ccc" };
	const struct ringtrace_meta *meta = rt_buf_meta(&self->b);
	struct rt_packet_info info;
	struct counted h = { 0 };
	struct rt_markers *c = &h.c;
	struct rt_event_desc *d;
	struct ringtrace_subbuf sb;
	uint64_t t0, t1;
	char msg[256];
	unsigned int i;

	t0 = mono_ns();
	for (i = 0; i < 3; i++)
		ASSERT_EQ((ssize_t)strlen(text[i]),
			  write(self->marker, text[i], strlen(text[i])));
	t1 = mono_ns();
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));

	EXPECT_EQ(sizeof(sb), sb.size);
	EXPECT_EQ(0, sb.flags);
	/* The first packet of a fresh buffer. */
	EXPECT_EQ(0, sb.pos);
	EXPECT_EQ(self->b.meta_page_size, sb.offset);
	EXPECT_EQ(SUBBUF, sb.packet_size);
	EXPECT_EQ(3, sb.events);
	EXPECT_EQ(0, sb.events_discarded);
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, count_headers,
				     &h, &info, msg, sizeof(msg))) {
		TH_LOG("%s", msg);
	}
	/* Header, event headers, u16 lengths and the text: nothing else. */
	EXPECT_EQ(sizeof(struct ringtrace_packet_header) + h.header_bytes +
		  3 * 2 + 6, sb.content_size);
	/* The first event's time is timestamp_begin: always compact. */
	EXPECT_FALSE(h.first_extended);
	EXPECT_EQ(RINGTRACE_CTF_MAGIC, info.h.magic);
	EXPECT_EQ(0, memcmp(info.h.uuid, self->m->uuid, 16));
	EXPECT_EQ(RINGTRACE_STREAM_ID, info.h.stream_id);
	EXPECT_EQ(self->cpu, info.h.cpu_id);
	EXPECT_EQ(self->cpu, info.h.stream_instance_id);
	EXPECT_EQ(sb.content_size * 8, info.h.content_size);
	EXPECT_EQ(info.h.content_size, info.h.packet_size);
	EXPECT_EQ(0, info.h.packet_seq_num);
	EXPECT_EQ(3, info.h.events);
	/*
	 * The trace clock is CLOCK_MONOTONIC: stamps fall inside the writes.
	 * The kernel's NMI-safe accessor may trail the vDSO's reading by a
	 * hair around a timekeeping update; 10 us of slack still tells the
	 * clock apart from any other.
	 */
	EXPECT_LE(t0, info.h.timestamp_begin + SLACK_NS);
	EXPECT_GE(t1 + SLACK_NS, h.last_ts);
	EXPECT_LE(info.h.timestamp_begin, info.h.timestamp_end);

	ASSERT_EQ(3, c->count);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(strlen(text[i]), c->m[i].len);
		EXPECT_EQ(0, memcmp(text[i], c->m[i].data, c->m[i].len));
	}
	/* The marker event is what the metadata calls it. */
	d = &self->m->ev[RINGTRACE_EVENT_MARKER];
	EXPECT_STREQ("ringtrace_marker", d->name);

	/* Held: the meta page says so after GET. */
	EXPECT_EQ(RINGTRACE_POS_HELD, rt_meta_load(&meta->consumed_pos));
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	EXPECT_EQ(SUBBUF, rt_meta_load(&meta->consumed_pos));
	EXPECT_EQ(3, rt_meta_load(&meta->delivered));
	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));

	/* The next packet has the next sequence number and position. */
	one_packet(_metadata, self, "next");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(SUBBUF, sb.pos);
	EXPECT_EQ(self->b.meta_page_size + SUBBUF, sb.offset);
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, NULL, NULL, &info,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(1, info.h.packet_seq_num);
	EXPECT_EQ(1, info.events);
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	rt_markers_free(c);
}

/*
 * A recording is numbered from its own start.  The consumer that opens
 * the buffer with tracing off and nothing left in it begins one: its
 * first packet is number 0 and counts no loss of the recording before,
 * which lost events and consumed packets.  One that opens it while
 * tracing is on goes on with the numbers: a packet left held by the
 * consumer before is handed out again as it was (no WARN, no EIO), and
 * the next one follows it.
 */
TEST_F(ioc, recording_starts_at_open)
{
	struct ringtrace_subbuf sb, again;
	struct rt_packet_info info;
	struct rt_drain dr = { 0 };
	struct rt_stats st;
	char msg[256];
	unsigned int i;

	/* Recording 1 fills the ring of 4 packets unconsumed: losses. */
	for (i = 0; i < 32; i++)
		ASSERT_EQ(1000, rt_write_seq_marker(self->marker, i, 1000));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(-ENODATA, rt_drain(self->m, &self->b, NULL, NULL, &dr, msg,
				     sizeof(msg))) TH_LOG("%s", msg);
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &st));
	ASSERT_LT(0, st.lost_full);
	ASSERT_LE(NSUBBUF, dr.packets);
	EXPECT_EQ(0, dr.first.packet_seq_num);
	EXPECT_EQ(rt_stats_lost(&st), dr.last.events_discarded);
	rt_buf_close(&self->b);

	/* Recording 2: its own numbers, from where the ring is. */
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	one_packet(_metadata, self, "second");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ((uint64_t)dr.packets * SUBBUF, sb.pos);
	EXPECT_EQ(0, sb.events_discarded);
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, NULL, NULL, &info,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(0, info.h.packet_seq_num);
	EXPECT_EQ(0, info.h.events_discarded);

	/* Closed holding it, tracing on: the next consumer takes over. */
	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	ASSERT_EQ(0, rt_get(self->b.fd, &again));
	EXPECT_EQ(sb.pos, again.pos);
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &again, NULL, NULL,
				     &info, msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(0, info.h.packet_seq_num);
	EXPECT_EQ(0, info.h.events_discarded);
	ASSERT_EQ(0, rt_put(self->b.fd, again.pos));
	one_packet(_metadata, self, "taken over");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, NULL, NULL, &info,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(1, info.h.packet_seq_num);
	EXPECT_EQ(0, info.h.events_discarded);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
}

TEST_F(ioc, put_wrong_pos)
{
	struct ringtrace_subbuf sb;

	/* Nothing held. */
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, 0));
	one_packet(_metadata, self, "x");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, sb.pos + SUBBUF));
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, sb.pos + 1));
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, sb.pos | RINGTRACE_POS_HELD));
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, sb.pos - SUBBUF));
	/* Still held after the failures: the right position works once. */
	EXPECT_EQ(-EBUSY, rt_get(self->b.fd, &sb));
	EXPECT_EQ(0, rt_put(self->b.fd, 0));
	EXPECT_EQ(-EINVAL, rt_put(self->b.fd, 0));
}

TEST_F(ioc, double_get)
{
	struct ringtrace_subbuf sb, sb2;

	one_packet(_metadata, self, "first");
	one_packet(_metadata, self, "second");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	/* Another packet is complete, but one is held. */
	EXPECT_EQ(-EBUSY, rt_get(self->b.fd, &sb2));
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb2));
	EXPECT_EQ(sb.pos + SUBBUF, sb2.pos);
	EXPECT_EQ(0, rt_put(self->b.fd, sb2.pos));
}

/* Argument structs: size, flags and reserved rules of the uapi header. */
/*
 * A size larger than a page is refused at once with E2BIG, even when
 * every byte of it is there and zero (a newer struct that large cannot be
 * ours; checking it would scan user memory of any size).
 */
static void expect_size_capped(struct __test_metadata *_metadata, int fd)
{
	const long page = sysconf(_SC_PAGESIZE);
	const uint32_t sizes[] = { page + 8, 64 * page, UINT32_MAX };
	struct ringtrace_subbuf *sb;
	unsigned int i;
	void *zeros;

	zeros = mmap(NULL, 64 * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, zeros);
	sb = zeros;
	for (i = 0; i < RT_ARRAY_SIZE(sizes); i++) {
		sb->size = sizes[i];
		EXPECT_EQ(-1, ioctl(fd, RINGTRACE_IOC_GET_SUBBUF, sb));
		EXPECT_EQ(E2BIG, errno) TH_LOG("size %u", sizes[i]);
		EXPECT_EQ(-1, ioctl(fd, RINGTRACE_IOC_GET_STATS, sb));
		EXPECT_EQ(E2BIG, errno) TH_LOG("size %u", sizes[i]);
	}
	/* The largest size that is accepted: a page, zero past our struct. */
	sb->size = page;
	EXPECT_EQ(0, ioctl(fd, RINGTRACE_IOC_GET_POSITIONS, sb));
	munmap(zeros, 64 * page);
}

/*
 * A GET whose argument can be read but not written back fails with EFAULT
 * and holds nothing: the caller never learnt the position to PUT.  Before
 * the fix it kept the packet held, and every later GET gave EBUSY (found
 * by rt_fuzz).
 */
TEST_F(ioc, get_into_readonly_memory)
{
	struct ringtrace_positions p;
	struct ringtrace_subbuf *ro, sb;
	long page = sysconf(_SC_PAGESIZE);

	one_packet(_metadata, self, "kept");
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->size = sizeof(*ro);
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));

	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, ro));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	EXPECT_EQ(0, p.consumed_pos & RINGTRACE_POS_HELD);
	/* The meta page does not go on saying it is held either. */
	EXPECT_EQ(p.consumed_pos,
		  rt_meta_load(&rt_buf_meta(&self->b)->consumed_pos));
	/* The packet is still the next one, and GET works. */
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(p.consumed_pos, sb.pos);
	EXPECT_EQ(1, sb.events);
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
	/* PUT only reads its argument: read-only memory is fine there. */
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_PUT_SUBBUF, ro));
	EXPECT_EQ(EINVAL, errno);
	munmap(ro, page);
}

/*
 * Closing the file while holding a packet gives it back: the next opener
 * finds it in the meta page as neither held nor consumed.
 */
TEST_F(ioc, close_while_held)
{
	const struct ringtrace_meta *meta;
	struct ringtrace_subbuf sb;

	one_packet(_metadata, self, "held at close");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	meta = rt_buf_meta(&self->b);
	EXPECT_EQ(sb.pos, rt_meta_load(&meta->consumed_pos));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	EXPECT_EQ(sb.pos | RINGTRACE_POS_HELD,
		  rt_meta_load(&meta->consumed_pos));
	EXPECT_EQ(1, sb.events);
	EXPECT_EQ(0, rt_put(self->b.fd, sb.pos));
}

TEST_F(ioc, bad_arguments)
{
	struct {
		struct ringtrace_subbuf sb;
		uint64_t extra;
	} big;
	struct ringtrace_positions p;
	struct ringtrace_stats st;
	struct ringtrace_subbuf sb;
	unsigned int i;

	one_packet(_metadata, self, "payload");

	memset(&sb, 0, sizeof(sb));
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	sb.size = RINGTRACE_SUBBUF_SIZE_VER0 - 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	sb.size = sizeof(sb);
	sb.flags = 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	sb.flags = 0x80000000;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	/* A bigger struct from a newer caller: unknown bytes must be zero. */
	memset(&big, 0, sizeof(big));
	big.sb.size = sizeof(big);
	big.extra = 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &big));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, NULL));
	EXPECT_EQ(EFAULT, errno);

	/* None of that took the packet: it is still there to GET. */
	expect_size_capped(_metadata, self->b.fd);
	big.extra = 0;
	ASSERT_EQ(0, ioctl(self->b.fd, RINGTRACE_IOC_GET_SUBBUF, &big));
	EXPECT_EQ(sizeof(struct ringtrace_subbuf), big.sb.size);
	EXPECT_EQ(0, big.extra);
	EXPECT_EQ(1, big.sb.events);

	/* PUT: the same rules, and the packet stays held on failure. */
	memset(&sb, 0, sizeof(sb));
	sb.size = sizeof(sb);
	sb.pos = big.sb.pos;
	sb.flags = 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_PUT_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	sb.flags = 0;
	sb.size = 8;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_PUT_SUBBUF, &sb));
	EXPECT_EQ(EINVAL, errno);
	sb.size = sizeof(sb);
	EXPECT_EQ(0, ioctl(self->b.fd, RINGTRACE_IOC_PUT_SUBBUF, &sb));

	/* GET_POSITIONS */
	memset(&p, 0, sizeof(p));
	p.size = RINGTRACE_POSITIONS_SIZE_VER0 - 8;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_POSITIONS, &p));
	EXPECT_EQ(EINVAL, errno);
	p.size = sizeof(p);
	p.flags = 2;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_POSITIONS, &p));
	EXPECT_EQ(EINVAL, errno);

	/* GET_STATS: reserved fields too. */
	memset(&st, 0, sizeof(st));
	st.size = RINGTRACE_STATS_SIZE_VER0 - 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.size = sizeof(st);
	st.flags = 1;
	EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.flags = 0;
	for (i = 0; i < RT_ARRAY_SIZE(st.reserved); i++) {
		st.reserved[i] = 1;
		EXPECT_EQ(-1, ioctl(self->b.fd, RINGTRACE_IOC_GET_STATS, &st));
		EXPECT_EQ(EINVAL, errno) TH_LOG("reserved[%u]", i);
		st.reserved[i] = 0;
	}
	ASSERT_EQ(0, ioctl(self->b.fd, RINGTRACE_IOC_GET_STATS, &st));
	EXPECT_EQ(sizeof(st), st.size);
	EXPECT_EQ(1, st.written);
	EXPECT_EQ(1, st.delivered);
}

/* The "Function call interrupts" a CPU has taken so far, or -1. */
static long long call_ipis(int cpu)
{
	char *text = rt_slurp("/proc/interrupts"), *line, *p, *end;
	long long n = -1;
	int col = -1, i;

	if (!text)
		return -1;
	/* Header: "CPU0 CPU1 ...": the column of @cpu. */
	for (p = text, i = 0; *p && *p != '\n'; i++) {
		while (*p == ' ')
			p++;
		if (strtol(p + 3, &end, 10) == cpu && !strncmp(p, "CPU", 3))
			col = i;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	line = strstr(text, "\n CAL:");
	if (!line)
		line = strstr(text, "\nCAL:");
	if (line && col >= 0) {
		p = strchr(line, ':') + 1;
		for (i = 0; i <= col; i++)
			n = strtoll(p, &p, 10);
	}
	free(text);
	return n;
}

/*
 * FLUSH of an idle CPU's buffer (tracing on, nothing open, nothing lost):
 * no packet, no position moved, and no interrupt sent to that CPU.
 */
TEST_F(ioc, flush_idle_cpu)
{
	struct ringtrace_positions before, after;
	struct ringtrace_subbuf sb;
	long long ipis0, ipis1;
	struct rt_buf other;
	int cpu, i;

	cpu = rt_other_cpu(self->cpu);
	if (cpu < 0)
		SKIP(return, "one CPU online: no other CPU to interrupt");
	ASSERT_EQ(0, rt_buf_open(&other, cpu));
	ASSERT_EQ(0, rt_positions(other.fd, &before));
	ipis0 = call_ipis(cpu);
	ASSERT_LE(0, ipis0);
	for (i = 0; i < 200; i++)
		ASSERT_EQ(0, rt_flush(other.fd));
	ipis1 = call_ipis(cpu);
	ASSERT_EQ(0, rt_positions(other.fd, &after));
	EXPECT_EQ(before.write_pos, after.write_pos);
	EXPECT_EQ(before.consumed_pos, after.consumed_pos);
	EXPECT_EQ(-EAGAIN, rt_get(other.fd, &sb));
	/* One IPI per FLUSH before; a few from elsewhere are tolerated. */
	EXPECT_GT(50, ipis1 - ipis0) {
		TH_LOG("cpu %d took %lld function-call IPIs during 200 FLUSHes",
		       cpu, ipis1 - ipis0);
	}
	rt_buf_close(&other);
}

TEST_F(ioc, unknown_command)
{
	const unsigned long cmds[] = {
		_IO(RINGTRACE_IOC_TYPE, 0x00),
		_IO(RINGTRACE_IOC_TYPE, 0x06),
		_IO(RINGTRACE_IOC_TYPE, 0xff),
		/* GET_SUBBUF's number with the wrong size or direction. */
		_IOWR(RINGTRACE_IOC_TYPE, 0x01, __u64),
		_IOR(RINGTRACE_IOC_TYPE, 0x01, struct ringtrace_subbuf),
		_IO(RINGTRACE_IOC_TYPE, 0x01),
		/* FLUSH with an argument. */
		_IOW(RINGTRACE_IOC_TYPE, 0x03, __u32),
		_IOWR('R', 0x20, __u64),
		0x5401,		/* TCGETS */
	};
	struct ringtrace_subbuf sb = { .size = sizeof(sb) };
	unsigned int i;

	for (i = 0; i < RT_ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(-1, ioctl(self->b.fd, cmds[i], &sb));
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", cmds[i]);
	}
}

TEST_F(ioc, enodata_after_stop)
{
	const struct ringtrace_meta *meta = rt_buf_meta(&self->b);
	struct rt_markers c = { 0 };
	struct ringtrace_subbuf sb;
	struct rt_drain dr = { 0 };
	struct rt_stats s;
	char msg[256];
	int i;

	for (i = 0; i < 5; i++)
		ASSERT_EQ(6, rt_write_seq_marker(self->marker, i, 6));
	/* Not complete yet: stopping closes it for the consumer. */
	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	EXPECT_EQ(-ENODATA, rt_drain(self->m, &self->b, rt_collect_marker, &c,
				     &dr, msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(1, dr.packets);
	ASSERT_EQ(5, c.count);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(i, rt_marker_seq(c.m[i].data, c.m[i].len));
	/* And it stays that way. */
	EXPECT_EQ(-ENODATA, rt_get(self->b.fd, &sb));
	EXPECT_EQ(-ENODATA, rt_get(self->b.fd, &sb));

	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &s));
	EXPECT_EQ(5, s.written);
	EXPECT_EQ(5, s.delivered);
	EXPECT_EQ(0, rt_stats_lost(&s));
	EXPECT_EQ(1, s.subbufs);
	EXPECT_EQ(dr.content_bytes, s.bytes);
	EXPECT_EQ(5, rt_meta_load(&meta->written));
	EXPECT_EQ(5, rt_meta_load(&meta->delivered));
	EXPECT_EQ(0, rt_meta_load(&meta->lost));
	EXPECT_EQ(rt_meta_load(&meta->write_pos),
		  rt_meta_load(&meta->consumed_pos));
	rt_markers_free(&c);

	/* Back on, the buffer takes data again and GET waits for it. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	EXPECT_EQ(-EAGAIN, rt_get(self->b.fd, &sb));
}

TEST_F(ioc, one_opener)
{
	struct ringtrace_subbuf sb, sb2;
	struct rt_packet_info info;
	char msg[256];
	int fd;

	EXPECT_EQ(-EBUSY, rt_buf_open_fd(self->cpu, O_RDONLY));
	EXPECT_EQ(-EBUSY, rt_buf_open_fd(self->cpu, O_RDWR));

	/* A consumer that goes away holding a packet gives it back. */
	one_packet(_metadata, self, "held");
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	rt_buf_close(&self->b);
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb2));
	EXPECT_EQ(sb.pos, sb2.pos);
	EXPECT_EQ(sb.content_size, sb2.content_size);
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb2, NULL, NULL, &info,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(1, info.events);
	EXPECT_EQ(0, rt_put(self->b.fd, sb2.pos));

	/* Other CPUs' files are independent. */
	fd = rt_buf_open_fd(self->cpu ? 0 : 1, O_RDONLY);
	if (fd != -ENOENT) {
		EXPECT_LE(0, fd);
		close(fd);
	}
}

TEST_F(ioc, positions)
{
	const struct ringtrace_meta *meta = rt_buf_meta(&self->b);
	struct ringtrace_positions p;
	struct ringtrace_subbuf sb;

	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	EXPECT_EQ(sizeof(p), p.size);
	EXPECT_EQ(SUBBUF, p.subbuf_size);
	EXPECT_EQ(NSUBBUF, p.num_subbufs);
	EXPECT_EQ(0, p.write_pos);
	EXPECT_EQ(0, p.consumed_pos);

	ASSERT_EQ(4, write(self->marker, "posn", 4));
	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	/* Header, event header, u16 length, four bytes. */
	EXPECT_EQ(sizeof(struct ringtrace_packet_header) + 4 + 2 + 4, p.write_pos);
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	EXPECT_EQ(SUBBUF, p.write_pos);
	EXPECT_EQ(SUBBUF, rt_meta_load(&meta->write_pos));

	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	EXPECT_EQ(RINGTRACE_POS_HELD, p.consumed_pos);
	EXPECT_EQ(RINGTRACE_POS_HELD, rt_meta_load(&meta->consumed_pos));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(0, rt_positions(self->b.fd, &p));
	EXPECT_EQ(SUBBUF, p.consumed_pos);
	EXPECT_EQ(SUBBUF, rt_meta_load(&meta->consumed_pos));
}

TEST_F(ioc, stats_match_file)
{
	struct rt_stats io, file;
	struct ringtrace_subbuf sb;
	int i;

	for (i = 0; i < 9; i++)
		ASSERT_EQ(10, rt_write_seq_marker(self->marker, i, 10));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &io));
	ASSERT_EQ(0, rt_read_stats(self->cpu, &file));
	EXPECT_TRUE(rt_stats_equal(&io, &file));
	EXPECT_EQ(9, io.written);
	EXPECT_EQ(9, io.delivered);
	EXPECT_EQ(1, io.subbufs);
	EXPECT_EQ(sb.content_size, io.bytes);
	EXPECT_EQ(0, rt_stats_lost(&io));
}

TEST_HARNESS_MAIN
