// SPDX-License-Identifier: GPL-2.0
/*
 * Integrity under load.  ringtrace_selftest.ko writes self-checking records
 * on every CPU from a bound kthread, a pinned softirq timer, a hard hrtimer,
 * an irq_work and IPIs, so that interrupt writers nest inside task and
 * softirq reservations; meanwhile one consumer thread per CPU sleeps in
 * poll() and takes packets with GET/PUT, as ringtraced does.  Every record
 * is decoded and checked:
 *
 *   - its checksum, its length and every payload byte (they follow from
 *     producer and sequence number), its CPU and its context;
 *   - per producer, sequence numbers strictly increase: no duplicate, no
 *     reordering, and every gap is an attempt that was refused or lost;
 *   - per CPU, written == delivered + every lost_* counter, delivered is
 *     exactly what the consumer decoded, the module's attempts are exactly
 *     ringtrace's written count, and its refused attempts are exactly the
 *     lost_full/held/nested/too_big counts;
 *   - in discard mode every accepted record is read, exactly once; in
 *     overwrite mode the accepted records not read are exactly lost_overrun.
 *
 * The variants cover a buffer that holds everything (no loss allowed), a
 * live consumer with a medium buffer, a tiny buffer the writers overflow,
 * and the flight recorder.  This is the bar of the kernel ring buffer's
 * startup test (writers per CPU plus nested IPI writers, then
 * read + lost == written), with more contexts and per-record checks.
 */
#include "ringtrace_test.h"

#include <pthread.h>
#include <time.h>


/* Consumer errors kept verbatim; the rest are only counted. */
#define MAX_MSGS	5

struct producer_state {
	bool seen;
	uint64_t last_seq;
	uint64_t read;			/* records read */
	uint64_t gaps;			/* sequence numbers skipped */
};

struct consumer {
	pthread_t thread;
	int cpu;
	struct rt_buf b;
	const struct rt_meta *m;
	int record_id;
	unsigned int nr_producers;
	struct producer_state *prod;	/* indexed by producer id */
	const bool *go, *stop;		/* set by the main thread */
	int final;			/* last rt_drain() result */

	struct rt_drain dr;		/* packets, events, headers */
	uint64_t records, foreign;
	uint64_t bad_checksum, bad_payload, bad_place, bad_context;
	uint64_t duplicates, reordered;
	unsigned int nmsgs;
	char msgs[MAX_MSGS][256];
};

struct result {
	unsigned int producer, cpu, kind;
	uint64_t attempted, accepted, nested;
};

static bool load(const bool *flag)
{
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static void store(bool *flag, bool v)
{
	__atomic_store_n(flag, v, __ATOMIC_RELEASE);
}

static void consumer_msg(struct consumer *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nmsgs >= MAX_MSGS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->msgs[c->nmsgs++], sizeof(c->msgs[0]), fmt, ap);
	va_end(ap);
}

/* Does a record of @kind written in context @ctx come from where it should? */
static bool context_ok(unsigned int kind, unsigned int ctx)
{
	switch (kind) {
	case RTST_KIND_TASK:
		return ctx == RTST_CTX_TASK;
	case RTST_KIND_SOFTIRQ:
		return ctx == RTST_CTX_SOFTIRQ;
	case RTST_KIND_IPI:
		/* Run by the idle loop when the target was polling: no IPI. */
		if (ctx == (RTST_CTX_TASK | RTST_CTX_IRQS_OFF))
			return true;
		/* fall through */
	default:
		return ctx == (RTST_CTX_HARDIRQ | RTST_CTX_IRQS_OFF);
	}
}

/* Check one event of a packet; structural errors end the walk. */
static int check_record(void *arg, const struct rt_event *ev, char *msg,
			size_t msg_size)
{
	struct consumer *c = arg;
	const uint8_t *p = ev->payload;
	struct producer_state *ps;
	uint32_t producer, sum;
	unsigned int len, kind, i;
	uint64_t seq, h;

	if ((int)ev->id != c->record_id) {
		c->foreign++;
		return 0;
	}
	c->records++;
	if (ev->payload_len < RTST_RECORD_FIXED)
		RT_FAIL("record of %zu bytes", ev->payload_len);
	producer = rt_le(p + RTST_OFF_PRODUCER, 4);
	kind = p[RTST_OFF_KIND];
	seq = rt_le(p + RTST_OFF_SEQ, 8);
	len = rt_le(p + RTST_OFF_LEN, 2);
	if (ev->payload_len != RTST_RECORD_FIXED + len)
		RT_FAIL("record of %zu bytes says len %u", ev->payload_len, len);
	sum = rt_le(p + RTST_RECORD_HEAD + len, 4);
	if (sum != rtst_checksum(p, RTST_RECORD_HEAD + len)) {
		c->bad_checksum++;
		consumer_msg(c, "cpu %d: bad checksum, producer %u seq %llu",
			     c->cpu, producer, (unsigned long long)seq);
		return 0;
	}
	if (producer >= c->nr_producers) {
		c->bad_place++;
		consumer_msg(c, "cpu %d: producer %u out of range", c->cpu,
			     producer);
		return 0;
	}
	/* Length and bytes follow from (producer, seq). */
	h = rtst_hash(producer, seq);
	if (len != rtst_payload_len(producer, h)) {
		c->bad_payload++;
		consumer_msg(c, "cpu %d: producer %u seq %llu: len %u, expected %u",
			     c->cpu, producer, (unsigned long long)seq, len,
			     rtst_payload_len(producer, h));
		return 0;
	}
	for (i = 0; i < len; i++) {
		if (p[RTST_RECORD_HEAD + i] != rtst_payload_byte(h, i)) {
			c->bad_payload++;
			consumer_msg(c, "cpu %d: producer %u seq %llu: byte %u",
				     c->cpu, producer, (unsigned long long)seq, i);
			return 0;
		}
	}
	/* In its own CPU's buffer, from the context its kind runs in. */
	if (kind != producer % RTST_NR_KINDS ||
	    producer / RTST_NR_KINDS != (unsigned int)c->cpu ||
	    rt_le(p + RTST_OFF_CPU, 2) != (uint64_t)c->cpu) {
		c->bad_place++;
		consumer_msg(c, "cpu %d: producer %u kind %u cpu %llu", c->cpu,
			     producer, kind, (unsigned long long)rt_le(p + RTST_OFF_CPU, 2));
		return 0;
	}
	if (!context_ok(kind, p[RTST_OFF_CONTEXT])) {
		c->bad_context++;
		consumer_msg(c, "cpu %d: producer %u kind %u written in context %u",
			     c->cpu, producer, kind, p[RTST_OFF_CONTEXT]);
	}

	ps = &c->prod[producer];
	if (ps->seen && seq <= ps->last_seq) {
		if (seq == ps->last_seq)
			c->duplicates++;
		else
			c->reordered++;
		consumer_msg(c, "cpu %d: producer %u seq %llu after %llu", c->cpu,
			     producer, (unsigned long long)seq,
			     (unsigned long long)ps->last_seq);
		return 0;
	}
	ps->gaps += ps->seen ? seq - ps->last_seq - 1 : seq;
	ps->seen = true;
	ps->last_seq = seq;
	ps->read++;
	return 0;
}

static void *consume(void *arg)
{
	struct consumer *c = arg;
	struct pollfd pfd = { .fd = c->b.fd, .events = POLLIN };
	char msg[256];
	int ret, spins;

	while (!load(c->go) && !load(c->stop))
		usleep(1000);
	while (!load(c->stop)) {
		/* A timeout only re-checks stop: sleep until data, like a daemon. */
		poll(&pfd, 1, 100);
		ret = rt_drain(c->m, &c->b, check_record, c, &c->dr, msg, sizeof(msg));
		/* Tracing went off and all is read: the main thread stops us. */
		if (ret == -ENODATA) {
			c->final = ret;
			return NULL;
		}
		if (ret != -EAGAIN) {
			c->final = ret;
			consumer_msg(c, "cpu %d: %s", c->cpu, ret == -1 ? msg :
				     strerror(-ret));
			return NULL;
		}
	}
	/* Tracing is off: everything left, then -ENODATA. */
	for (spins = 0; spins < 1000; spins++) {
		ret = rt_drain(c->m, &c->b, check_record, c, &c->dr, msg, sizeof(msg));
		if (ret != -EAGAIN)
			break;
		usleep(1000);
	}
	c->final = ret;
	if (ret != -ENODATA)
		consumer_msg(c, "cpu %d: final drain: %s", c->cpu,
			     ret == -1 ? msg : strerror(-ret));
	return NULL;
}

struct run_arg {
	char cmd[64];
	ssize_t ret;
};

/* The run file blocks until the module's writers are done. */
static void *run_writers(void *arg)
{
	struct run_arg *r = arg;

	r->ret = rt_write_file(RTST_DIR "/run", r->cmd, strlen(r->cmd));
	return NULL;
}

static int read_results(struct result *res, int max)
{
	char *text = rt_slurp(RTST_DIR "/result"), *line;
	int n = 0, end;

	if (!text)
		return -1;
	for (line = text; *line && n < max; line += end) {
		end = -1;
		if (sscanf(line, "producer=%u cpu=%u kind=%u attempted=%" SCNu64
			   " accepted=%" SCNu64 " nested=%" SCNu64 "\n%n",
			   &res[n].producer, &res[n].cpu, &res[n].kind,
			   &res[n].attempted, &res[n].accepted, &res[n].nested,
			   &end) != 6 || end <= 0) {
			n = -1;
			break;
		}
		n++;
	}
	free(text);
	return n;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

FIXTURE(stress) {
	struct rt_meta *m;
	int record_id;
	int ncons;
	struct consumer *cons;
	bool go, stop;
};

FIXTURE_VARIANT(stress) {
	const char *mode;
	unsigned int subbuf_size, num_subbufs;
	unsigned int seconds;		/* run length, or limit with max */
	unsigned int max_per_producer;	/* 0: run for @seconds */
	/*
	 * Start consuming only once every CPU has lost events of this kind
	 * (lost_full or lost_overrun), so that losses are certain.
	 */
	const char *wait_for_loss;
	bool no_loss;			/* the buffer holds the whole run */
	bool expect_nesting;
	/* Records per hrtimer/irq_work callback; 0: the module's default. */
	unsigned int irq_burst;
	/* No consumer while the writers run: it only drains after the stop. */
	bool consume_after_run;
};

/*
 * 3000 attempts per producer are < 1.1 MiB per CPU even unread (task
 * records average ~150 bytes, interrupt ones ~50): a 2 MiB buffer holds
 * them all, whatever the scheduling.
 */
FIXTURE_VARIANT_ADD(stress, discard_no_loss) {
	.mode = "discard",
	.subbuf_size = 256 << 10,
	.num_subbufs = 8,
	.seconds = 60,
	.max_per_producer = 3000,
	.no_loss = true,
};

FIXTURE_VARIANT_ADD(stress, discard_live) {
	.mode = "discard",
	.subbuf_size = 64 << 10,
	.num_subbufs = 4,
	.seconds = 6,
	.expect_nesting = true,
};

FIXTURE_VARIANT_ADD(stress, discard_tiny) {
	.mode = "discard",
	.subbuf_size = 4096,
	.num_subbufs = 4,
	.seconds = 5,
	.wait_for_loss = "lost_full",
};

FIXTURE_VARIANT_ADD(stress, overwrite) {
	.mode = "overwrite",
	.subbuf_size = 16 << 10,
	.num_subbufs = 4,
	.seconds = 6,
	.wait_for_loss = "lost_overrun",
	.expect_nesting = true,
};

/*
 * The overwrite push under nesting: the smallest ring (two pages), no
 * consumer, and hard-interrupt bursts of 400 records (~20 KiB, more than
 * twice the ring) over a task writer that switches sub-buffers every ~30
 * records.  An interrupt that lands while the task writer retires the
 * oldest packet reopens that slot, wraps the whole ring and retires the slot
 * again.  Every packet left at the end must hold exactly the records its
 * header counts, and the balance must be exact.
 */
FIXTURE_VARIANT_ADD(stress, overwrite_nested_push) {
	.mode = "overwrite",
	.subbuf_size = 4096,
	.num_subbufs = 2,
	.seconds = 8,
	.wait_for_loss = "lost_overrun",
	.expect_nesting = true,
	.irq_burst = 400,
	.consume_after_run = true,
};

/*
 * The same with a live consumer: GET and PUT of a slot the bursts just
 * reopened race with the task writer's retirement of its previous packet.
 */
FIXTURE_VARIANT_ADD(stress, overwrite_nested_live) {
	.mode = "overwrite",
	.subbuf_size = 4096,
	.num_subbufs = 2,
	.seconds = 8,
	.wait_for_loss = "lost_overrun",
	.expect_nesting = true,
	.irq_burst = 400,
};

FIXTURE_SETUP(stress)
{
	char online[256];
	cpu_set_t cpus;
	int cpu, max_cpu = 0;

	RTST_REQUIRE();
	ASSERT_EQ(0, rt_prepare(variant->mode, variant->subbuf_size,
				variant->num_subbufs));
	self->m = rt_meta_load_file();
	ASSERT_NE(NULL, self->m);
	self->record_id = rt_meta_find(self->m, RTST_RECORD_NAME);
	ASSERT_LE(0, self->record_id);

	/* The module writes on every online CPU. */
	ASSERT_LT(0, rt_read_file("/sys/devices/system/cpu/online", online,
				  sizeof(online)));
	ASSERT_LT(0, rt_parse_cpulist(online, &cpus));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &cpus))
			max_cpu = cpu;
	self->cons = calloc(CPU_COUNT(&cpus), sizeof(*self->cons));
	ASSERT_NE(NULL, self->cons);
	for (cpu = 0; cpu <= max_cpu; cpu++) {
		struct consumer *c = &self->cons[self->ncons];

		if (!CPU_ISSET(cpu, &cpus))
			continue;
		c->cpu = cpu;
		c->m = self->m;
		c->record_id = self->record_id;
		c->nr_producers = (max_cpu + 1) * RTST_NR_KINDS;
		c->prod = calloc(c->nr_producers, sizeof(*c->prod));
		ASSERT_NE(NULL, c->prod);
		c->go = &self->go;
		c->stop = &self->stop;
		/* In the test guest, bad packets come back to the host. */
		c->dr.dump_dir = getenv("RT_VM_OUT");
		ASSERT_EQ(0, rt_buf_open(&c->b, cpu));
		self->ncons++;
	}
}

FIXTURE_TEARDOWN(stress)
{
	int i;

	rt_ctl_write("tracing_on", "0");
	for (i = 0; i < self->ncons; i++) {
		rt_buf_close(&self->cons[i].b);
		free(self->cons[i].prod);
	}
	free(self->cons);
	free(self->m);
	rt_reset();
}

/* Wait until every CPU has lost events of kind @field, up to 20 s. */
static bool wait_for_loss(int ncons, const struct consumer *cons,
			  const char *field)
{
	uint64_t deadline = now_ms() + 20000;
	struct rt_stats s;
	int i, lossy;

	do {
		for (i = lossy = 0; i < ncons; i++) {
			if (rt_read_stats(cons[i].cpu, &s))
				return false;
			lossy += !strcmp(field, "lost_full") ? !!s.lost_full :
							       !!s.lost_overrun;
		}
		if (lossy == ncons)
			return true;
		usleep(20000);
	} while (now_ms() < deadline);
	return false;
}

TEST_F_TIMEOUT(stress, integrity, 240)
{
	const unsigned int kinds_per_cpu = RTST_NR_KINDS - (self->ncons < 2);
	const bool discard = !strcmp(variant->mode, "discard");
	struct result *res;
	struct run_arg run;
	pthread_t run_thread;
	uint64_t nested = 0, t0;
	int i, k, nres;

	res = calloc(self->ncons * RTST_NR_KINDS + 1, sizeof(*res));
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "1"));
	for (i = 0; i < self->ncons; i++)
		ASSERT_EQ(0, pthread_create(&self->cons[i].thread, NULL, consume,
					    &self->cons[i]));
	if (variant->irq_burst)
		snprintf(run.cmd, sizeof(run.cmd), "%u %u %u %u",
			 variant->seconds, variant->max_per_producer,
			 RTST_FLAGS_ALL, variant->irq_burst);
	else
		snprintf(run.cmd, sizeof(run.cmd), "%u %u %u", variant->seconds,
			 variant->max_per_producer, RTST_FLAGS_ALL);
	t0 = now_ms();
	ASSERT_EQ(0, pthread_create(&run_thread, NULL, run_writers, &run));
	if (variant->wait_for_loss) {
		EXPECT_TRUE(wait_for_loss(self->ncons, self->cons,
					  variant->wait_for_loss)) {
			TH_LOG("no %s on every CPU after 20 s", variant->wait_for_loss);
		}
	}
	if (!variant->consume_after_run)
		store(&self->go, true);
	ASSERT_EQ(0, pthread_join(run_thread, NULL));
	ASSERT_EQ((ssize_t)strlen(run.cmd), run.ret) {
		TH_LOG("run \"%s\": %s", run.cmd, strerror((int)-run.ret));
	}
	TH_LOG("%s: writers ran %llu ms", variant->mode,
	       (unsigned long long)(now_ms() - t0));
	/* Stop: every open packet is closed for the consumers to drain. */
	ASSERT_EQ(0, rt_ctl_write("tracing_on", "0"));
	store(&self->stop, true);
	for (i = 0; i < self->ncons; i++)
		ASSERT_EQ(0, pthread_join(self->cons[i].thread, NULL));

	nres = read_results(res, self->ncons * RTST_NR_KINDS + 1);
	ASSERT_EQ(self->ncons * (int)kinds_per_cpu, nres);

	for (i = 0; i < self->ncons; i++) {
		struct consumer *c = &self->cons[i];
		uint64_t attempted = 0, accepted = 0, gaps = 0, read = 0;
		struct rt_stats s, io;
		unsigned int m;

		for (m = 0; m < c->nmsgs; m++)
			TH_LOG("%s", c->msgs[m]);
		EXPECT_EQ(-ENODATA, c->final);
		EXPECT_EQ(0, c->bad_checksum);
		EXPECT_EQ(0, c->bad_payload);
		EXPECT_EQ(0, c->bad_place);
		EXPECT_EQ(0, c->bad_context);
		EXPECT_EQ(0, c->duplicates);
		EXPECT_EQ(0, c->reordered);
		/* Nothing but the module's records while it ran. */
		EXPECT_EQ(0, c->foreign);

		ASSERT_EQ(0, rt_read_stats(c->cpu, &s));
		ASSERT_EQ(0, rt_ioctl_stats(c->b.fd, &io));
		EXPECT_TRUE(rt_stats_equal(&s, &io));
		TH_LOG("cpu %d: written %llu delivered %llu lost full %llu overrun %llu "
		       "held %llu nested %llu too_big %llu, %u packets",
		       c->cpu, (unsigned long long)s.written,
		       (unsigned long long)s.delivered,
		       (unsigned long long)s.lost_full,
		       (unsigned long long)s.lost_overrun,
		       (unsigned long long)s.lost_held,
		       (unsigned long long)s.lost_nested,
		       (unsigned long long)s.lost_too_big, c->dr.packets);
		EXPECT_EQ(s.written, s.delivered + rt_stats_lost(&s));
		EXPECT_EQ(c->dr.events, s.delivered);
		EXPECT_EQ(c->records + c->foreign, s.delivered);
		EXPECT_EQ(c->dr.packets, s.subbufs);
		EXPECT_EQ(c->dr.content_bytes, s.bytes);
		EXPECT_EQ(0, s.lost_too_big);
		if (discard) {
			EXPECT_EQ(0, s.lost_overrun + s.lost_held);
			/* No packet is ever dropped whole in discard mode. */
			EXPECT_EQ(0, c->dr.seq_gaps);
			EXPECT_EQ(0, c->dr.first.packet_seq_num);
			/* The last packet reports every loss of the CPU. */
			if (c->dr.packets) {
				EXPECT_EQ(rt_stats_lost(&s),
					  c->dr.last.events_discarded);
			}
		}
		if (variant->wait_for_loss &&
		    !strcmp(variant->wait_for_loss, "lost_full")) {
			EXPECT_LT(0, s.lost_full);
		}
		if (variant->wait_for_loss &&
		    !strcmp(variant->wait_for_loss, "lost_overrun")) {
			EXPECT_LT(0, s.lost_overrun);
		}
		if (variant->no_loss) {
			EXPECT_EQ(0, rt_stats_lost(&s));
		}

		for (k = 0; k < nres; k++) {
			const struct result *r = &res[k];
			const struct producer_state *ps;

			if (r->cpu != (unsigned int)c->cpu)
				continue;
			ASSERT_GT(c->nr_producers, r->producer);
			ps = &c->prod[r->producer];
			EXPECT_EQ(r->cpu * RTST_NR_KINDS + r->kind, r->producer);
			/* Every context got to write. */
			EXPECT_LT(0, r->attempted) TH_LOG("producer %u", r->producer);
			EXPECT_LE(r->accepted, r->attempted);
			EXPECT_LE(ps->read, r->accepted) TH_LOG("producer %u", r->producer);
			if (ps->seen) {
				EXPECT_GT(r->attempted, ps->last_seq);
			}
			/* Discard mode never takes back an accepted record. */
			if (discard) {
				EXPECT_EQ(r->accepted, ps->read) {
					TH_LOG("producer %u: accepted %llu, read %llu",
					       r->producer,
					       (unsigned long long)r->accepted,
					       (unsigned long long)ps->read);
				}
			}
			if (variant->no_loss) {
				EXPECT_EQ(variant->max_per_producer, r->attempted);
				EXPECT_EQ(r->attempted, r->accepted);
				EXPECT_EQ(0, ps->gaps);
			}
			attempted += r->attempted;
			accepted += r->accepted;
			read += ps->read;
			/* Sequence numbers past the last one read count too. */
			gaps += ps->gaps + (r->attempted - (ps->seen ? ps->last_seq + 1 : 0));
			nested += r->nested;
		}
		/* ringtrace counted exactly the module's attempts... */
		EXPECT_EQ(attempted, s.written);
		/* ...every gap in the sequences is a counted loss... */
		EXPECT_EQ(gaps, rt_stats_lost(&s));
		EXPECT_EQ(read, c->records);
		/* ...refusals are the full/held/nested/too_big counts... */
		EXPECT_EQ(attempted - accepted,
			  s.lost_full + s.lost_held + s.lost_nested + s.lost_too_big);
		/* ...and accepted records were read or overwritten. */
		EXPECT_EQ(accepted, s.delivered + s.lost_overrun);
	}
	TH_LOG("records written while another was open on the CPU: %llu",
	       (unsigned long long)nested);
	if (variant->expect_nesting) {
		EXPECT_LT(0, nested);
	}
	free(res);
}

TEST_HARNESS_MAIN
