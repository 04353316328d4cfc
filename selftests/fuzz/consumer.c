// SPDX-License-Identifier: GPL-2.0
/*
 * rt_fuzz: the consumer that must keep working through all of it.
 *
 * Sessions on one CPU buffer at a time (through either tree): map the
 * file, GET/check/PUT packets, poll, FLUSH, and watch the counters.  While
 * the file is open, nothing may reset them and the geometry cannot change,
 * so every counter only grows and the meta page, the ioctls and the
 * control files agree.  Every packet goes through the selftests' decoder
 * (rt_check_packet(): header fields, event layouts from the metadata,
 * timestamps); on top of that:
 *
 *   - the fuzzer's own markers are whole ("FZ<writer>:<seq>:<len>:" and a
 *     pattern that follows from seq), and each writer's sequence numbers
 *     only grow within one CPU's buffer;
 *   - no marker from a faulting buffer ("FZBAD") is ever delivered;
 *   - ringtrace_selftest's records have their checksum and bytes, and its
 *     event that changes layout reads right with the metadata of the
 *     moment (events_gen followed as the ABI says);
 *   - at ENODATA with tracing off, written == delivered + every lost_*.
 *
 * The file is lent (fz.lend_fd) to the ioctl and mmap threads for calls
 * that do not GET or PUT, so that they race with this consumer's.
 */
#include "fuzz.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../ringtrace_test.h"
#pragma GCC diagnostic pop

#include <inttypes.h>
#include <poll.h>
#include <sys/epoll.h>

#include "marker.h"

struct fz_cons {
	bool open;
	unsigned int cpu;
	uint64_t token;
	struct rt_buf b;
	struct rt_meta *m;		/* metadata as of m_gen/m_modgen */
	uint64_t m_gen, m_modgen;
	double end;
	unsigned int ops_left;
	struct ringtrace_stats st;	/* last counters seen */
	uint64_t last_pos, last_discarded;
	bool have_pos;
	int record_id;			/* rt_selftest_record, or -1 */
};

static struct fz_cons fz_cons;

/* Per CPU and writer thread: the last marker sequence number seen + 1. */
static uint64_t fz_marker_next[FZ_MAX_CPUS][FZ_NR_ROLES];

static struct {
	uint64_t packets, events, markers, records, dyn, poison, sessions;
	uint64_t nodata_books;
} fz_seen;

/* ------------------------------------------------------------------ */
/* Metadata                                                            */
/* ------------------------------------------------------------------ */

int fz_meta_check(const char *text)
{
	struct rt_meta *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	ret = rt_meta_parse(m, text) || !m->ctf18 || !m->have_uuid ||
	      rt_meta_find(m, "ringtrace_marker") != RINGTRACE_EVENT_MARKER;
	free(m);
	return ret ? -EPROTO : 0;
}

static int fz_meta_reload(struct fz_thread *t, struct fz_cons *c)
{
	char path[256], *text;
	struct rt_meta *m;

	text = rt_slurp(fz_path(path, sizeof(path), false, "metadata"));
	m = calloc(1, sizeof(*m));
	if (!text || !m || rt_meta_parse(m, text)) {
		FZ_CHECK(t, false, "metadata unreadable or unparsable");
		free(text);
		free(m);
		return -1;
	}
	free(text);
	free(c->m);
	c->m = m;
	c->m_modgen = atomic_load(&fz.mod_gen);
	c->record_id = rt_meta_find(m, RTST_RECORD_NAME);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static int fz_check_marker(struct fz_cons *c, const struct rt_event *ev,
			   char *msg, size_t msg_size)
{
	const uint8_t *data;
	unsigned int writer, len;
	unsigned long long seq;
	size_t n;
	int prefix;

	if (rt_marker_data(ev, &data, &n))
		RT_FAIL("marker payload of %zu bytes is not {len, data[len]}",
			ev->payload_len);
	fz_seen.markers++;
	if (n >= 5 && !memcmp(data, FZ_MARKER_POISON, 5)) {
		fz_seen.poison++;
		RT_FAIL("a marker whose write faulted was recorded (%zu bytes)", n);
	}
	if (n < 2 || memcmp(data, "FZ", 2))
		return 0;
	if (sscanf((const char *)data, "FZ%u:%llu:%u:%n", &writer, &seq, &len,
		   &prefix) != 3 || writer >= FZ_NR_ROLES || len != n)
		RT_FAIL("marker \"%.24s\" (%zu bytes) is not one the fuzzer wrote",
			(const char *)data, n);
	if (!fz_marker_intact(data, n, seq, prefix))
		RT_FAIL("marker of writer %u seq %llu: bytes differ", writer, seq);
	if (seq < fz_marker_next[c->cpu][writer])
		RT_FAIL("cpu%u: marker of writer %u seq %llu after seq %" PRIu64,
			c->cpu, writer, seq, fz_marker_next[c->cpu][writer] - 1);
	fz_marker_next[c->cpu][writer] = seq + 1;
	return 0;
}

static int fz_check_record(struct fz_cons *c, const struct rt_event *ev,
			   char *msg, size_t msg_size)
{
	const uint8_t *p = ev->payload;
	unsigned int len, producer, i;
	uint64_t seq, h;

	fz_seen.records++;
	if (ev->payload_len < RTST_RECORD_FIXED)
		RT_FAIL("rt_selftest_record of %zu bytes", ev->payload_len);
	producer = rt_le(p + RTST_OFF_PRODUCER, 4);
	seq = rt_le(p + RTST_OFF_SEQ, 8);
	len = rt_le(p + RTST_OFF_LEN, 2);
	if (ev->payload_len != RTST_RECORD_FIXED + len ||
	    rt_le(p + RTST_RECORD_HEAD + len, 4) !=
	    rtst_checksum(p, RTST_RECORD_HEAD + len))
		RT_FAIL("rt_selftest_record producer %u seq %" PRIu64
			": length or checksum wrong", producer, seq);
	h = rtst_hash(producer, seq);
	if (len != rtst_payload_len(producer, h))
		RT_FAIL("rt_selftest_record producer %u seq %" PRIu64 ": len %u",
			producer, seq, len);
	for (i = 0; i < len; i++)
		if (p[RTST_RECORD_HEAD + i] != rtst_payload_byte(h, i))
			RT_FAIL("rt_selftest_record producer %u seq %" PRIu64
				": byte %u", producer, seq, i);
	if (rt_le(p + RTST_OFF_CPU, 2) != c->cpu ||
	    producer / RTST_NR_KINDS != c->cpu)
		RT_FAIL("rt_selftest_record of cpu %u (producer %u) in cpu%u's buffer",
			(unsigned int)rt_le(p + RTST_OFF_CPU, 2), producer, c->cpu);
	return 0;
}

/* rt_selftest_dyn: layout a or b, as the metadata of its id says. */
static int fz_check_dyn(const struct rt_event_desc *d,
			const struct rt_event *ev, char *msg, size_t msg_size)
{
	fz_seen.dyn++;
	if (d->nfields == 2 && !strcmp(d->field[1].name, "magic")) {
		if (ev->payload_len != sizeof(struct rtst_dyn_a) ||
		    rt_le(ev->payload + 4, 4) != RTST_DYN_A_MAGIC)
			RT_FAIL("rt_selftest_dyn read with layout a is not one");
	} else if (d->nfields == 2 && !strcmp(d->field[1].name, "tag")) {
		if (ev->payload_len != sizeof(struct rtst_dyn_b) ||
		    memcmp(ev->payload + 8, RTST_DYN_B_TAG, 4))
			RT_FAIL("rt_selftest_dyn read with layout b is not one");
	} else {
		RT_FAIL("rt_selftest_dyn with an unknown layout");
	}
	return 0;
}

static int fz_cons_event(void *arg, const struct rt_event *ev, char *msg,
			 size_t msg_size)
{
	struct fz_cons *c = arg;
	const struct rt_event_desc *d = &c->m->ev[ev->id];

	fz_seen.events++;
	if (ev->id == RINGTRACE_EVENT_MARKER)
		return fz_check_marker(c, ev, msg, msg_size);
	if ((int)ev->id == c->record_id)
		return fz_check_record(c, ev, msg, msg_size);
	if (!strcmp(d->name, RTST_DYN_NAME))
		return fz_check_dyn(d, ev, msg, msg_size);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sessions                                                            */
/* ------------------------------------------------------------------ */

static void fz_lend(int fd, unsigned int cpu)
{
	pthread_rwlock_wrlock(&fz.lend_lock);
	fz.lend_fd = fd;
	fz.lend_cpu = cpu;
	pthread_rwlock_unlock(&fz.lend_lock);
}

void fz_consumer_end(struct fz_thread *t)
{
	struct fz_cons *c = &fz_cons;

	if (!c->open)
		return;
	fz_lend(-1, 0);
	if (c->b.map)
		munmap(c->b.map, c->b.map_len);
	c->b.map = NULL;
	fz_buf_close(c->cpu, c->b.fd, c->token);
	c->b.fd = -1;
	c->open = false;
	pthread_rwlock_unlock(&fz.buf_lock);
	t->in_session = false;
}

/* The meta page, the positions ioctl and the control files agree. */
static void fz_session_geometry(struct fz_thread *t, struct fz_cons *c)
{
	const struct ringtrace_meta *meta = rt_buf_meta(&c->b);
	struct ringtrace_positions p;
	long size, num;
	int ret;

	FZ_CHECK(t, meta->meta_size == sizeof(*meta) &&
		    meta->meta_page_size == fz.page && meta->cpu == c->cpu &&
		    meta->mode <= RINGTRACE_MODE_OVERWRITE,
		 "meta page: size %u page %u cpu %u mode %u", meta->meta_size,
		 meta->meta_page_size, meta->cpu, meta->mode);
	/* The file is open: no geometry change can succeed now. */
	size = fz_read_num(t->rng.s & 1, "subbuf_size");
	num = fz_read_num(t->rng.s & 2, "num_subbufs");
	FZ_CHECK(t, size == meta->subbuf_size && num == meta->num_subbufs,
		 "control files say %ld x %ld, cpu%u's meta page %u x %u", size,
		 num, c->cpu, meta->subbuf_size, meta->num_subbufs);
	ret = rt_positions(c->b.fd, &p);
	FZ_CHECK(t, !ret && p.size == sizeof(p) &&
		    p.subbuf_size == meta->subbuf_size &&
		    p.num_subbufs == meta->num_subbufs,
		 "GET_POSITIONS: %s, %llu x %llu", fz_err(ret),
		 (unsigned long long)p.subbuf_size,
		 (unsigned long long)p.num_subbufs);
}

/* Map @fd's buffer into @b: the meta page alone, then everything. */
static int fz_map_buffer(struct rt_buf *b, int fd, unsigned int cpu)
{
	const struct ringtrace_meta *meta;
	void *p;

	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->cpu = cpu;
	p = mmap(NULL, fz.page, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	meta = p;
	b->meta_page_size = meta->meta_page_size;
	b->subbuf_size = meta->subbuf_size;
	b->num_subbufs = meta->num_subbufs;
	munmap(p, fz.page);
	b->map_len = b->meta_page_size + (size_t)b->subbuf_size * b->num_subbufs;
	p = mmap(NULL, b->map_len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	b->map = p;
	return 0;
}

static void fz_session_open(struct fz_thread *t, struct fz_cons *c)
{
	struct fz_rng *r = &t->rng;
	struct fz_open_result o, o2;
	bool dev = fz_chance(r, 30);
	unsigned int cpu = fz_below(r, fz.ncpus);
	uint64_t gen;
	int ret;

	fz_op(t, FZ_OP_CONS_SESSION);
	fz_desc(t, "open %scpu%u", dev ? "dev:" : "", cpu);
	pthread_rwlock_rdlock(&fz.buf_lock);
	o = fz_buf_open(t, cpu, dev, O_RDONLY, true);
	if (o.fd < 0) {
		fz_desc(t, " -> %s", fz_err(o.fd));
		FZ_EXPECT(t, "open of a buffer file", o.fd, -EBUSY, -ENODEV);
		fz_refused(t);
		pthread_rwlock_unlock(&fz.buf_lock);
		fz_sleep_ms(20);
		return;
	}
	c->cpu = cpu;
	c->token = o.token;
	c->open = true;
	t->in_session = true;
	fz_seen.sessions++;
	ret = fz_map_buffer(&c->b, o.fd, cpu);
	if (!FZ_CHECK(t, !ret, "mmap of cpu%u's buffer: %s", cpu, fz_err(ret))) {
		fz_consumer_end(t);
		return;
	}
	fz_session_geometry(t, c);
	/* events_gen first, then the metadata: it has at least that much. */
	gen = rt_meta_load(&rt_buf_meta(&c->b)->events_gen);
	if (!c->m || c->m_modgen != atomic_load(&fz.mod_gen) || gen != c->m_gen)
		fz_meta_reload(t, c);
	c->m_gen = gen;
	memset(&c->st, 0, sizeof(c->st));
	c->have_pos = false;
	c->last_discarded = 0;
	c->end = fz_now() + 0.2 + fz_below(r, 2000) / 1000.0;
	c->ops_left = fz_range(r, 10, 300);
	fz_lend(o.fd, cpu);

	/* Two consumers on one CPU: the second open must be refused. */
	fz_op(t, FZ_OP_CONS_SECOND);
	o2 = fz_buf_open(t, cpu, !dev, O_RDONLY, false);
	fz_desc(t, "; second open -> %s", fz_err(o2.fd));
	if (o2.fd >= 0)
		close(o2.fd);
	FZ_EXPECT(t, "second open of a held buffer", o2.fd, -EBUSY);
	t->op = FZ_OP_CONS_SESSION;
}

/* ------------------------------------------------------------------ */
/* Operations in a session                                             */
/* ------------------------------------------------------------------ */

static void fz_cons_counters(struct fz_thread *t, struct fz_cons *c)
{
	const struct ringtrace_meta *meta = rt_buf_meta(&c->b);
	struct ringtrace_stats st = { .size = sizeof(st) };
	struct ringtrace_positions p;
	const __u64 *now, *was;
	uint64_t w, d, cons;
	unsigned int i;

	fz_op(t, FZ_OP_CONS_COUNTERS);
	/*
	 * The meta page holds snapshots, refreshed by whoever gets there
	 * (the owner's irq_work, GET, PUT, a flush): nothing promises that
	 * its fields grow.  They are never ahead of the counters, though.
	 */
	w = rt_meta_load(&meta->written);
	d = rt_meta_load(&meta->delivered);
	cons = rt_meta_load(&meta->consumed_pos) & ~RINGTRACE_POS_HELD;
	if (!FZ_CHECK(t, !ioctl(c->b.fd, RINGTRACE_IOC_GET_STATS, &st),
		      "GET_STATS: %s", fz_err(-errno)) ||
	    !FZ_CHECK(t, !rt_positions(c->b.fd, &p), "GET_POSITIONS: %s",
		      fz_err(-errno)))
		return;
	FZ_CHECK(t, (p.consumed_pos & ~RINGTRACE_POS_HELD) >= cons &&
		    p.write_pos >= p.consumed_pos - (p.consumed_pos & 1),
		 "positions: consumed %llu (meta %" PRIu64 "), write %llu",
		 (unsigned long long)p.consumed_pos, cons,
		 (unsigned long long)p.write_pos);
	/* Every counter only grows while the file is open. */
	now = &st.written;
	was = &c->st.written;
	for (i = 0; i < 9; i++)
		FZ_CHECK(t, now[i] >= was[i],
			 "cpu%u: counter %u of struct ringtrace_stats went from %llu to %llu",
			 c->cpu, i, (unsigned long long)was[i],
			 (unsigned long long)now[i]);
	FZ_CHECK(t, st.written >= w && st.delivered >= d,
		 "GET_STATS (written %llu delivered %llu) behind the meta page "
		 "(%" PRIu64 ", %" PRIu64 ")", (unsigned long long)st.written,
		 (unsigned long long)st.delivered, w, d);
	c->st = st;
	fz_desc(t, "written=%llu delivered=%llu", (unsigned long long)st.written,
		(unsigned long long)st.delivered);
}

/* With tracing off and the buffer drained: the books balance. */
static void fz_cons_books(struct fz_thread *t, struct fz_cons *c,
			  const struct fz_window *w)
{
	struct ringtrace_stats st = { .size = sizeof(st) };
	struct ringtrace_positions p;
	uint64_t lost;
	long tr;

	if (ioctl(c->b.fd, RINGTRACE_IOC_GET_STATS, &st) ||
	    rt_positions(c->b.fd, &p))
		return;
	tr = fz_read_num(false, "tracing_on");
	if (!fz_window_solo(w, 0) || tr != 0 || p.consumed_pos != p.write_pos)
		return;
	lost = st.lost_full + st.lost_overrun + st.lost_held + st.lost_nested +
	       st.lost_too_big;
	fz_seen.nodata_books++;
	FZ_CHECK(t, st.written == st.delivered + lost,
		 "cpu%u drained and stopped: written %llu != delivered %llu + lost %"
		 PRIu64, c->cpu, (unsigned long long)st.written,
		 (unsigned long long)st.delivered, lost);
}

static void fz_cons_get(struct fz_thread *t, struct fz_cons *c)
{
	struct ringtrace_subbuf sb;
	struct rt_packet_info info;
	struct fz_window w;
	char msg[512];
	uint64_t gen;
	int ret, n = fz_range(&t->rng, 1, 16);

	fz_op(t, FZ_OP_CONS_GET);
	while (n--) {
		fz_window_open(&w);
		ret = rt_get(c->b.fd, &sb);
		if (ret == -ENODATA)
			fz_cons_books(t, c, &w);
		if (ret) {
			fz_desc(t, "GET %s ", fz_err(ret));
			FZ_EXPECT(t, "GET_SUBBUF", ret, -EAGAIN, -ENODATA);
			return;
		}
		fz_seen.packets++;
		FZ_CHECK(t, sb.size == sizeof(sb), "GET wrote size %u", sb.size);
		FZ_CHECK(t, !c->have_pos || sb.pos >= c->last_pos + c->b.subbuf_size,
			 "GET returned position %llu after %" PRIu64,
			 (unsigned long long)sb.pos, c->last_pos);
		FZ_CHECK(t, sb.events_discarded >= c->last_discarded,
			 "events_discarded went back from %" PRIu64 " to %llu",
			 c->last_discarded, (unsigned long long)sb.events_discarded);
		c->last_pos = sb.pos;
		c->have_pos = true;
		c->last_discarded = sb.events_discarded;

		/* New events registered: the metadata has them now [ABI]. */
		gen = rt_meta_load(&rt_buf_meta(&c->b)->events_gen);
		if (gen != c->m_gen) {
			fz_meta_reload(t, c);
			c->m_gen = gen;
		}
		if (c->m && rt_check_packet(c->m, &c->b, &sb, fz_cons_event, c,
					    &info, msg, sizeof(msg)))
			FZ_CHECK(t, false, "cpu%u packet at %llu: %s", c->cpu,
				 (unsigned long long)sb.pos, msg);
		ret = rt_put(c->b.fd, sb.pos);
		FZ_EXPECT(t, "PUT_SUBBUF of the held packet", ret, 0);
		if (fz_chance(&t->rng, 5)) {
			ret = rt_put(c->b.fd, sb.pos);
			FZ_EXPECT(t, "PUT_SUBBUF twice", ret, -EINVAL);
		}
	}
	fz_desc(t, "pos=%" PRIu64, c->last_pos);
}

static void fz_cons_poll(struct fz_thread *t, struct fz_cons *c)
{
	struct pollfd pfd = { .fd = c->b.fd, .events = POLLIN };
	struct epoll_event ev = { .events = EPOLLIN };
	int ret, ep;

	fz_op(t, FZ_OP_CONS_POLL);
	if (fz_chance(&t->rng, 30)) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			return;
		epoll_ctl(ep, EPOLL_CTL_ADD, c->b.fd, &ev);
		ret = epoll_wait(ep, &ev, 1, fz_below(&t->rng, 50));
		close(ep);
		if (ret > 0)
			pfd.revents = ev.events;
	} else {
		ret = poll(&pfd, 1, fz_below(&t->rng, 50));
	}
	fz_desc(t, "poll -> %d revents %#x", ret, pfd.revents);
	FZ_CHECK(t, ret >= 0, "poll: %s", fz_err(-errno));
	FZ_CHECK(t, !(pfd.revents & (POLLERR | POLLNVAL)),
		 "cpu%u buffer polls %#x: disabled?", c->cpu, pfd.revents);
}

void fz_consumer_op(struct fz_thread *t)
{
	struct fz_cons *c = &fz_cons;
	struct fz_rng *r = &t->rng;
	int ret;

	if (!c->open) {
		fz_session_open(t, c);
		return;
	}
	if (fz_now() > c->end || !c->ops_left--) {
		fz_op(t, FZ_OP_CONS_SESSION);
		fz_desc(t, "close cpu%u", c->cpu);
		fz_consumer_end(t);
		return;
	}
	switch (fz_below(r, 10)) {
	case 0:
	case 1:
		fz_cons_poll(t, c);
		break;
	case 2:
		fz_op(t, FZ_OP_CONS_FLUSH);
		ret = ioctl(c->b.fd, RINGTRACE_IOC_FLUSH) ? -errno : 0;
		fz_desc(t, "FLUSH %s", fz_err(ret));
		FZ_EXPECT(t, "FLUSH", ret, 0);
		break;
	case 3:
	case 4:
		fz_cons_counters(t, c);
		break;
	default:
		fz_cons_get(t, c);
	}
}

/* ------------------------------------------------------------------ */
/* The end                                                             */
/* ------------------------------------------------------------------ */

/*
 * Every thread has stopped: tracing off, then each CPU drained to ENODATA
 * with every packet checked, and its books must balance exactly.
 */
int fz_final_drain(struct fz_thread *t)
{
	struct fz_cons *c = &fz_cons;
	struct ringtrace_stats st = { .size = sizeof(st) };
	struct fz_open_result o;
	unsigned int cpu, packets;
	uint64_t lost;
	long ret;

	t->op = FZ_OP_CONS_SESSION;
	ret = fz_write(false, "tracing_on", "0", 1, 0);
	if (!FZ_CHECK(t, ret == 1, "tracing_on 0 at the end: %s", fz_err(ret)))
		return -1;
	fz_meta_reload(t, c);
	for (cpu = 0; cpu < fz.ncpus; cpu++) {
		o = fz_buf_open(t, cpu, false, O_RDONLY, true);
		if (o.fd == -ENODEV)
			continue;
		if (!FZ_CHECK(t, o.fd >= 0, "final open of cpu%u: %s", cpu,
			      fz_err(o.fd)))
			continue;
		ret = fz_map_buffer(&c->b, o.fd, cpu);
		if (!FZ_CHECK(t, !ret, "final mmap of cpu%u: %s", cpu,
			      fz_err(ret))) {
			fz_buf_close(cpu, o.fd, o.token);
			continue;
		}
		c->cpu = cpu;
		c->have_pos = false;
		c->last_discarded = 0;
		for (packets = 0;; packets++) {
			struct ringtrace_subbuf sb;
			char msg[512];

			ret = rt_get(o.fd, &sb);
			if (ret)
				break;
			if (rt_check_packet(c->m, &c->b, &sb, fz_cons_event, c,
					    NULL, msg, sizeof(msg)))
				FZ_CHECK(t, false, "final drain, cpu%u: %s", cpu, msg);
			rt_put(o.fd, sb.pos);
		}
		FZ_EXPECT(t, "final GET", ret, -ENODATA);
		if (!ioctl(o.fd, RINGTRACE_IOC_GET_STATS, &st)) {
			lost = st.lost_full + st.lost_overrun + st.lost_held +
			       st.lost_nested + st.lost_too_big;
			printf("# cpu%u: written=%llu delivered=%llu lost=%" PRIu64
			       " (drained %u packets at the end)\n", cpu,
			       (unsigned long long)st.written,
			       (unsigned long long)st.delivered, lost, packets);
			FZ_CHECK(t, st.written == st.delivered + lost,
				 "cpu%u at the end: written %llu != delivered %llu + lost %"
				 PRIu64, cpu, (unsigned long long)st.written,
				 (unsigned long long)st.delivered, lost);
		}
		if (c->b.map)
			munmap(c->b.map, c->b.map_len);
		c->b.map = NULL;
		fz_buf_close(cpu, o.fd, o.token);
	}
	return 0;
}

void fz_consumer_report(void)
{
	printf("# consumer: %" PRIu64 " sessions, %" PRIu64 " packets, %" PRIu64
	       " events (%" PRIu64 " fuzzer markers, %" PRIu64
	       " selftest records, %" PRIu64 " dyn), %" PRIu64
	       " balanced books at ENODATA, %" PRIu64 " faulting markers refused\n",
	       fz_seen.sessions, fz_seen.packets, fz_seen.events,
	       fz_seen.markers, fz_seen.records, fz_seen.dyn,
	       fz_seen.nodata_books, atomic_load(&fz.poison_written));
}
