// SPDX-License-Identifier: GPL-2.0
/*
 * Deterministic writer-API tests driven through ringtrace_selftest.ko:
 * reservations nested one deeper than RINGTRACE_MAX_NESTING, events too
 * big for a sub-buffer, a writer whose position goes stale under nested
 * ones, and the clock floor a close leaves.  Each outcome is checked in
 * the module's report, in ringtrace's counters and in the packets.
 */
#include "ringtrace_test.h"


#define SUBBUF	16384U

FIXTURE(kmod) {
	int cpu;
	struct rt_buf b;
	struct rt_meta *m;
	int nest_id, blob_id, record_id;
};

FIXTURE_SETUP(kmod)
{
	self->b.fd = -1;
	RTST_REQUIRE();
	self->cpu = rt_test_cpu();
	ASSERT_LE(0, self->cpu);
	/* The module's tests run on the CPU of the writing thread. */
	ASSERT_EQ(0, rt_pin(self->cpu));
	ASSERT_EQ(0, rt_prepare("discard", SUBBUF, 4));
	ASSERT_EQ(0, rt_buf_open(&self->b, self->cpu));
	self->m = rt_meta_load_file();
	ASSERT_NE(NULL, self->m);
	self->nest_id = rt_meta_find(self->m, RTST_NEST_NAME);
	self->blob_id = rt_meta_find(self->m, RTST_BLOB_NAME);
	self->record_id = rt_meta_find(self->m, RTST_RECORD_NAME);
	ASSERT_LE(0, self->nest_id);
	ASSERT_LE(0, self->blob_id);
	ASSERT_LE(0, self->record_id);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(kmod)
{
	rt_ctl_write("tracing_on", "0");
	rt_buf_close(&self->b);
	free(self->m);
	rt_reset();
}

static ssize_t rtst_write(const char *file, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), RTST_DIR "/%s", file);
	return rt_write_file(path, text, strlen(text));
}

static int rtst_read(const char *file, char *buf, size_t size)
{
	char path[256];

	snprintf(path, sizeof(path), RTST_DIR "/%s", file);
	return rt_read_file(path, buf, size) < 0 ? -1 : 0;
}

/* The module's events are in the metadata with the layout it writes. */
TEST_F(kmod, events_in_metadata)
{
	const struct rt_event_desc *d;
	char text[512], name[RT_NAME_MAX];
	int id, n, off = 0, seen = 0;

	ASSERT_EQ(0, rtst_read("events", text, sizeof(text)));
	while (sscanf(text + off, "%63s %d\n%n", name, &id, &n) == 2) {
		EXPECT_EQ(id, rt_meta_find(self->m, name)) TH_LOG("%s", name);
		off += n;
		seen++;
	}
	EXPECT_EQ(3, seen);

	d = &self->m->ev[self->record_id];
	ASSERT_TRUE(d->decodable);
	ASSERT_EQ(8, d->nfields);
	EXPECT_EQ(RT_SEQUENCE, d->field[6].kind);
	d = &self->m->ev[self->nest_id];
	ASSERT_TRUE(d->decodable);
	EXPECT_EQ(2, d->nfields);
	d = &self->m->ev[self->blob_id];
	ASSERT_TRUE(d->decodable);
	EXPECT_EQ(RT_SEQUENCE, d->field[1].kind);
}

struct nest_events {
	int nest_id;
	unsigned int count;
	uint32_t level[16];
	uint64_t token[16];
	unsigned int other;
};

static int collect_nest(void *arg, const struct rt_event *ev, char *msg,
			size_t msg_size)
{
	struct nest_events *n = arg;

	if ((int)ev->id != n->nest_id) {
		n->other++;
		return 0;
	}
	if (ev->payload_len != RTST_NEST_SIZE)
		RT_FAIL("nest event of %zu bytes", ev->payload_len);
	if (n->count < RT_ARRAY_SIZE(n->level)) {
		n->level[n->count] = rt_le(ev->payload, 4);
		n->token[n->count] = rt_le(ev->payload + 4, 8);
	}
	n->count++;
	return 0;
}

TEST_F(kmod, nesting_limit)
{
	struct nest_events ev = { .nest_id = self->nest_id };
	struct rt_stats before, after;
	int cpu, max, accepted, refused;
	struct rt_drain dr = { 0 };
	char text[256];
	int i;

	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &before));
	ASSERT_EQ(6, rtst_write("nest", "424242"));
	ASSERT_EQ(0, rtst_read("nest", text, sizeof(text)));
	ASSERT_EQ(4, sscanf(text, "cpu=%d max_nesting=%d accepted=%d refused=%d",
			    &cpu, &max, &accepted, &refused)) TH_LOG("%s", text);
	EXPECT_EQ(self->cpu, cpu);
	ASSERT_LT(0, max);
	/* All the allowed levels went in, the one past the limit did not... */
	EXPECT_EQ(max, accepted);
	EXPECT_EQ(1, refused);
	/* ...and was counted as exactly one nested loss. */
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_EQ(before.written + max + 1, after.written);
	EXPECT_EQ(before.lost_nested + 1, after.lost_nested);
	EXPECT_EQ(rt_stats_lost(&before) + 1, rt_stats_lost(&after));

	/* The accepted ones, committed in reverse, read back in order. */
	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(-EAGAIN, rt_drain(self->m, &self->b, collect_nest, &ev, &dr,
				    text, sizeof(text))) TH_LOG("%s", text);
	ASSERT_EQ((unsigned int)max, ev.count);
	EXPECT_EQ(0, ev.other);
	for (i = 0; i < max && i < 16; i++) {
		EXPECT_EQ(i, ev.level[i]);
		EXPECT_EQ(424242, ev.token[i]);
	}
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_EQ(before.delivered + max, after.delivered);
	EXPECT_EQ(after.written, after.delivered + rt_stats_lost(&after));

	/* Bad tokens are refused by the module itself. */
	EXPECT_EQ(-EINVAL, rtst_write("nest", "x"));
	EXPECT_EQ(-EINVAL, rtst_write("nest", ""));
}

/* Tracing off: every reservation returns NULL and nothing is counted. */
TEST_F(kmod, nesting_tracing_off)
{
	struct rt_stats before, after;
	int cpu, max, accepted, refused;
	char text[256];

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &before));
	ASSERT_EQ(1, rtst_write("nest", "7"));
	ASSERT_EQ(0, rtst_read("nest", text, sizeof(text)));
	ASSERT_EQ(4, sscanf(text, "cpu=%d max_nesting=%d accepted=%d refused=%d",
			    &cpu, &max, &accepted, &refused)) TH_LOG("%s", text);
	EXPECT_EQ(0, accepted);
	EXPECT_EQ(max + 1, refused);
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_TRUE(rt_stats_equal(&before, &after));
}

/* Run "oversize <n>": 1 if accepted, 0 if refused, -1 on error. */
static int oversize(int expect_cpu, unsigned int n)
{
	char text[128];
	int cpu, accepted;
	unsigned int len;

	snprintf(text, sizeof(text), "%u", n);
	if (rtst_write("oversize", text) != (ssize_t)strlen(text) ||
	    rtst_read("oversize", text, sizeof(text)) ||
	    sscanf(text, "cpu=%d len=%u accepted=%d", &cpu, &len,
		   &accepted) != 3 || cpu != expect_cpu || len != n)
		return -1;
	return accepted;
}

struct blobs {
	int blob_id;
	unsigned int count, bad;
	size_t len[8];
};

static int collect_blob(void *arg, const struct rt_event *ev, char *msg,
			size_t msg_size)
{
	struct blobs *b = arg;
	size_t n, i;

	if ((int)ev->id != b->blob_id)
		RT_FAIL("unexpected event id %u", ev->id);
	n = rt_le(ev->payload, 4);
	if (ev->payload_len != 4 + n)
		RT_FAIL("blob of %zu bytes says %zu", ev->payload_len, n);
	for (i = 0; i < n; i++)
		if (ev->payload[4 + i] != rtst_blob_byte(i))
			b->bad++;
	if (b->count < RT_ARRAY_SIZE(b->len))
		b->len[b->count] = n;
	b->count++;
	return 0;
}

TEST_F(kmod, too_big)
{
	const unsigned int hdr = sizeof(struct ringtrace_packet_header);
	/* Payload = 4-byte length + data; a blob of n data bytes needs 4 + n. */
	const unsigned int never_fits = SUBBUF - hdr;	/* no room for any event header */
	const unsigned int fits = SUBBUF - hdr - RINGTRACE_EXTENDED_HEADER_SIZE - 1 - 4;
	struct blobs got = { .blob_id = self->blob_id };
	struct rt_stats before, after;
	char msg[256];

	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &before));
	EXPECT_EQ(0, oversize(self->cpu, SUBBUF));
	EXPECT_EQ(0, oversize(self->cpu, never_fits));
	EXPECT_EQ(0, oversize(self->cpu, RINGTRACE_MAX_SUBBUF_SIZE));
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_EQ(before.written + 3, after.written);
	EXPECT_EQ(before.lost_too_big + 3, after.lost_too_big);
	EXPECT_EQ(rt_stats_lost(&before) + 3, rt_stats_lost(&after));

	/* The largest event that fits behind any event header is taken... */
	EXPECT_EQ(1, oversize(self->cpu, fits));
	/* ...and so is an empty one. */
	EXPECT_EQ(1, oversize(self->cpu, 0));
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_EQ(before.lost_too_big + 3, after.lost_too_big);

	ASSERT_EQ(0, rt_flush(self->b.fd));
	ASSERT_EQ(-EAGAIN, rt_drain(self->m, &self->b, collect_blob, &got, NULL,
				    msg, sizeof(msg))) TH_LOG("%s", msg);
	ASSERT_EQ(2, got.count);
	EXPECT_EQ(fits, got.len[0]);
	EXPECT_EQ(0, got.len[1]);
	EXPECT_EQ(0, got.bad);
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &after));
	EXPECT_EQ(after.written, after.delivered + rt_stats_lost(&after));

	/* Sizes no sub-buffer can hold are refused by the module itself. */
	EXPECT_EQ(-EINVAL, rtst_write("oversize", "67108865"));
	EXPECT_EQ(-EINVAL, rtst_write("oversize", "-1"));
}

/*
 * A writer's position goes stale under nested writers [R5 in
 * module/ring.c]: overwrite mode, a fresh buffer, and the module's stale
 * write -- an outer writer that read the offset at a boundary, nested
 * blobs that wrap the whole ring and open the packet after it (pushing
 * the first packet, the one overrun there must be), then the outer
 * writer's slow path with the offset it read.  That position is behind
 * the consumed one now: it must retry at the new offset, not push the
 * second packet too.
 */
TEST_F(kmod, stale_position_pushes_nothing)
{
	struct blobs got = { .blob_id = self->blob_id };
	struct rt_drain dr = { 0 };
	unsigned int first, nested;
	int cpu, accepted;
	struct rt_stats st;
	char text[128];

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(0, rt_ctl_write("mode", "overwrite"));
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	ASSERT_EQ(3, rtst_write("stale", "200"));
	ASSERT_EQ(0, rtst_read("stale", text, sizeof(text)));
	ASSERT_EQ(4, sscanf(text, "cpu=%d first=%u nested=%u accepted=%d",
			    &cpu, &first, &nested, &accepted)) TH_LOG("%s", text);
	EXPECT_EQ(self->cpu, cpu);
	ASSERT_LT(0, first);
	ASSERT_LT(first, nested);
	EXPECT_EQ(1, accepted);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(-ENODATA, rt_drain(self->m, &self->b, collect_blob, &got,
				     &dr, text, sizeof(text))) TH_LOG("%s", text);
	ASSERT_EQ(0, rt_ioctl_stats(self->b.fd, &st));
	/* The first packet was overrun, and only it. */
	EXPECT_EQ(first, st.lost_overrun);
	EXPECT_EQ(first, rt_stats_lost(&st));
	EXPECT_EQ(nested + 1, st.written);
	EXPECT_EQ(nested + 1 - first, got.count);
	EXPECT_EQ(0, got.bad);
	/* Packets 1..4 of the 4-slot ring: none skipped. */
	EXPECT_EQ(4, dr.packets);
	EXPECT_EQ(1, dr.first.packet_seq_num);
	EXPECT_EQ(0, dr.seq_gaps);
}

/* @cpu's clock floor, from the module's floor file; 0 if not found. */
static uint64_t floor_of(int cpu)
{
	char text[4096], *line, *save = NULL;
	unsigned long long ts;
	int c;

	if (rtst_read("floor", text, sizeof(text)))
		return 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "cpu=%d last_ts=%llu", &c, &ts) == 2 && c == cpu)
			return ts;
	return 0;
}

/*
 * [R6] A close dates the packet's end and publishes that time as the
 * CPU's clock floor, as an event does: the next packet begins no
 * earlier, even where the fast clock steps back (an NMI's).  Closed by
 * FLUSH 2 ms after its one marker, and by the write that found no room
 * left in discard mode (the close on the drop path): each time the floor
 * is at least the closed packet's timestamp_end.  (Before, both closes
 * left the floor at the last event's time.)
 */
TEST_F(kmod, close_publishes_floor)
{
	static char blob[2000];
	struct ringtrace_subbuf sb;
	struct rt_packet_info info;
	uint64_t floor, end = 0;
	struct rt_stats st;
	char msg[256];
	int fd, i;

	ASSERT_EQ(0, rt_ctl_write("marker", "one"));
	usleep(2000);
	ASSERT_EQ(0, rt_flush(self->b.fd));
	floor = floor_of(self->cpu);
	ASSERT_EQ(0, rt_get(self->b.fd, &sb));
	ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, NULL, NULL, &info,
				     msg, sizeof(msg))) TH_LOG("%s", msg);
	ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	EXPECT_EQ(1, info.h.events);
	EXPECT_LE(info.h.timestamp_end, floor) {
		TH_LOG("flushed packet ends at %llu, the floor is %llu",
		       (unsigned long long)info.h.timestamp_end,
		       (unsigned long long)floor);
	}

	/* Fill the 4 packets; the write that finds no room closes the last. */
	fd = rt_marker_open();
	ASSERT_LE(0, fd);
	memset(blob, 'd', sizeof(blob));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ((ssize_t)sizeof(blob), write(fd, blob, sizeof(blob)));
		ASSERT_EQ(0, rt_read_stats(self->cpu, &st));
		if (st.lost_full)
			break;
	}
	close(fd);
	ASSERT_LT(0, st.lost_full);
	floor = floor_of(self->cpu);
	while (!rt_get(self->b.fd, &sb)) {
		ASSERT_EQ(0, rt_check_packet(self->m, &self->b, &sb, NULL, NULL,
					     &info, msg, sizeof(msg))) TH_LOG("%s", msg);
		end = info.h.timestamp_end;
		ASSERT_EQ(0, rt_put(self->b.fd, sb.pos));
	}
	ASSERT_LT(0, end);
	EXPECT_LE(end, floor) {
		TH_LOG("packet closed by a drop ends at %llu, the floor is %llu",
		       (unsigned long long)end, (unsigned long long)floor);
	}
}

/* The dyn file's view: registered, its layout, id and next seq. */
static int dyn_state(char *layout, int *id, uint64_t *seq)
{
	char text[128];

	if (rtst_read("dyn", text, sizeof(text)))
		return -1;
	if (!strncmp(text, "registered=0", 12))
		return 0;
	return sscanf(text, "registered=1 layout=%c id=%d seq=%" SCNu64,
		      layout, id, seq) == 3 ? 1 : -1;
}

struct dyn_events {
	int id_a, id_b;
	unsigned int a, b, bad, other;
	uint64_t next_seq;
};

/* Layout a: u32 seq, u32 magic; layout b: u64 seq, "dynB". */
static int collect_dyn(void *arg, const struct rt_event *ev, char *msg,
		       size_t msg_size)
{
	struct dyn_events *d = arg;
	const uint8_t *p = ev->payload;

	(void)msg;
	(void)msg_size;
	if ((int)ev->id == d->id_a) {
		if (ev->payload_len != 8 || rt_le(p, 4) != d->next_seq ||
		    rt_le(p + 4, 4) != RTST_DYN_A_MAGIC)
			d->bad++;
		d->a++;
	} else if ((int)ev->id == d->id_b) {
		if (ev->payload_len != 12 || rt_le(p, 8) != d->next_seq ||
		    memcmp(p + 8, RTST_DYN_B_TAG, 4))
			d->bad++;
		d->b++;
	} else {
		d->other++;
		return 0;
	}
	d->next_seq++;
	return 0;
}

/*
 * An event that is unregistered and registered again with another layout
 * gets a new id, and the metadata keeps both declarations: a trace that
 * holds both decodes each with its own layout.  Registered again with
 * its first layout, it takes its first id back: that declaration
 * describes it already.  events_gen in the meta page follows every
 * change.
 */
TEST_F(kmod, event_id_per_declaration)
{
	const struct ringtrace_meta *meta = rt_buf_meta(&self->b);
	struct dyn_events d = { 0 };
	struct rt_drain dr = { 0 };
	uint64_t gen0, gen1, gen2, seq;
	char layout, msg[256];
	struct rt_meta *m;
	int id, n;

	if (dyn_state(&layout, &id, &seq) == 1)
		ASSERT_LT(0, rtst_write("dyn", "unregister"));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	gen0 = __atomic_load_n(&meta->events_gen, __ATOMIC_ACQUIRE);

	ASSERT_LT(0, rtst_write("dyn", "register a"));
	ASSERT_EQ(1, dyn_state(&layout, &d.id_a, &d.next_seq));
	EXPECT_EQ('a', layout);
	ASSERT_LT(0, rtst_write("dyn", "write 5"));
	ASSERT_LT(0, rtst_write("dyn", "unregister"));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	gen1 = __atomic_load_n(&meta->events_gen, __ATOMIC_ACQUIRE);
	EXPECT_EQ(gen0 + 2, gen1);

	ASSERT_LT(0, rtst_write("dyn", "register b"));
	ASSERT_EQ(1, dyn_state(&layout, &d.id_b, &seq));
	EXPECT_EQ('b', layout);
	EXPECT_NE(d.id_a, d.id_b);
	ASSERT_LT(0, rtst_write("dyn", "write 5"));
	ASSERT_EQ(0, rt_flush(self->b.fd));
	gen2 = __atomic_load_n(&meta->events_gen, __ATOMIC_ACQUIRE);
	EXPECT_EQ(gen1 + 1, gen2);

	/* Both declarations, each with its layout. */
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	ASSERT_TRUE(m->ev[d.id_a].present && m->ev[d.id_b].present);
	EXPECT_STREQ(RTST_DYN_NAME, m->ev[d.id_a].name);
	EXPECT_STREQ(RTST_DYN_NAME, m->ev[d.id_b].name);
	EXPECT_EQ(2, m->ev[d.id_a].nfields);
	EXPECT_EQ(2, m->ev[d.id_b].nfields);

	/* Layout a again: its own id back, no third declaration. */
	ASSERT_LT(0, rtst_write("dyn", "unregister"));
	ASSERT_LT(0, rtst_write("dyn", "register a"));
	ASSERT_EQ(1, dyn_state(&layout, &id, &seq));
	EXPECT_EQ('a', layout);
	EXPECT_EQ(d.id_a, id);
	ASSERT_EQ(0, rt_flush(self->b.fd));
	EXPECT_EQ(gen2 + 2,
		  __atomic_load_n(&meta->events_gen, __ATOMIC_ACQUIRE));
	free(m);
	m = rt_meta_load_file();
	ASSERT_NE(NULL, m);
	for (id = 0, n = 0; id < RT_MAX_IDS; id++)
		n += m->ev[id].present && !strcmp(m->ev[id].name, RTST_DYN_NAME);
	EXPECT_EQ(2, n);

	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	ASSERT_EQ(-ENODATA, rt_drain(m, &self->b, collect_dyn, &d, &dr, msg,
				     sizeof(msg))) TH_LOG("%s", msg);
	EXPECT_EQ(5, d.a);
	EXPECT_EQ(5, d.b);
	EXPECT_EQ(0, d.bad);
	ASSERT_LT(0, rtst_write("dyn", "unregister"));
	free(m);
}

TEST_HARNESS_MAIN
