// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace_bench.ko: what one 16-byte event costs the writer.
 *
 * Three ways to record the same 16-byte payload, each timed with the same
 * loop on one CPU and then on every online CPU at once:
 *
 *   ringtrace   ringtrace_reserve() + memcpy + ringtrace_commit() into the
 *               live ringtrace buffers (tracing must be on).
 *   kernel-rb   ring_buffer_lock_reserve() + memcpy + unlock_commit() into a
 *               private kernel ring buffer allocated here with the same
 *               bytes per CPU and the same mode (overwrite or discard) as
 *               ringtrace's buffers.
 *   floor       the same clock read and the same 20 bytes (4-byte header +
 *               payload) stored into a small per-CPU array: no
 *               synchronisation at all, the least any tracer can cost.
 *
 * Nobody consumes either buffer during the run, so in overwrite mode both
 * writers go round their ring again and again: the figures are the
 * steady-state writer path, sub-buffer (page) switches and overwriting of
 * old data included.  A warm-up batch that wraps every buffer at least once
 * runs before anything is timed.
 *
 * With profile=1 seven more loops take the ringtrace fast path apart.
 * p-preempt .. p-commit each add a step of ringtrace_reserve() /
 * ringtrace_commit() to the one before, built from the same inline helpers
 * of <linux/ringtrace.h> but on a private "shadow" struct ringtrace_buffer
 * per CPU that ringtrace.ko never sees.  The shadow's sub-buffer switch is
 * a bare offset jump, so ringtrace minus p-commit is what the real code
 * pays beyond these steps: its slow path (packet header, delivery,
 * overwrite push) and code-generation differences.
 *
 *   p-store        the floor without the clock read
 *   p-localclock   the floor with the kernel ring buffer's clock
 *                  (trace_clock_local) instead of ringtrace's
 *   p-preempt      floor + preempt off/on + tracing flag + this_cpu_read
 *   p-counters     + nesting/events local_t updates
 *   p-reserve      + the compact header's id and delta tests,
 *                  local_cmpxchg on the offset, record stored into the
 *                  shadow buffer (as big as ringtrace's) instead of the
 *                  small array
 *   p-commit       + smp_wmb() + local_add_return() on the slot commit count
 *   p-noclock      p-commit without the clock read (timestamp = last + 1):
 *                  what the fast path costs besides the clock
 *
 * Rate mode (run key rate=N) is a load generator for the pipeline benchmark
 * instead: one kthread per CPU writes N events per second for a fixed time,
 * each event a 24-byte payload that looks like trace data (a tid, a small
 * return value, a cache-line aligned kernel address, a growing offset; see
 * bench_rate_next()).  target=ringtrace writes them as the ringtrace event
 * "ringtrace_bench_rate" through ringtrace's API; target=tracepoint fires
 * the module's own tracepoint ringtrace_bench:bench_rate
 * (ringtrace_bench_trace.h) with the same payload, for every tracer to
 * record the way it records any kernel tracepoint: ftrace's trace event
 * (trace-cmd), perf, LTTng (tools/bench/lttng/, built by build-lttng) and
 * ringtrace, through a probe of this module attached while the file
 * rt_probe reads 1 (the same reserve + commit as ringtrace's own tracepoint
 * probes in module/probes.c).  Every millisecond each thread writes
 * the events that are due and sleeps to the next millisecond boundary
 * (absolute deadlines: a late wakeup is caught up), so the CPU is free in
 * between for whoever consumes the buffers.
 *
 * Interface, /sys/kernel/debug/ringtrace_bench/ (root only):
 *   run      write "key=value ..." (all optional) to run a benchmark; the
 *            write returns when it is done (seconds to minutes under TCG).
 *              iterations=N   events per timed batch     (default 100000)
 *              reps=N         timed batches per method   (default 9)
 *              profile=0|1    also run the p-* loops     (default 1)
 *              cpus=one|all|both                         (default both)
 *              mode=discard|overwrite  kernel-rb's mode: pass ringtrace's
 *                                      (default discard)
 *            or, for a rate run:
 *              rate=N         events per second per CPU, 1000..100000000
 *              duration_ms=N  how long, 100..60000       (default 2000)
 *              target=ringtrace|tracepoint               (default ringtrace)
 *              cpus=one|all                              (default all)
 *            (mixing the keys of the two kinds is EINVAL).
 *   rt_probe write 1 to attach ringtrace's probe to the tracepoint bench_rate,
 *            0 to detach it (waits for running probes); reads 0 or 1.
 *   result   read the last run's results (-ENODATA before the first run):
 *              config ...                      the setup, one line
 *              result cpus=1|all method=M ns_per_op=X min=X max=X nulls=N
 *              check krb_entries=N krb_overruns=N
 *              raw cpus=1|all method=M rep=R cpu=C batch_ns=N
 *            ns_per_op is the median over reps of the per-writer cost
 *            (batch time / iterations, averaged over the writers of the
 *            batch); nulls counts reserves that returned NULL.  cpus=1 is
 *            the first online CPU.
 *            After a rate run:
 *              rateconfig kernel=K online_cpus=N target=T rate=N
 *                         duration_ms=N payload=24 event_id=N tick_us=N
 *              rate cpu=C events=N nulls=N elapsed_ns=N achieved=N
 *            events is what the thread offered (rate x duration), nulls the
 *            ringtrace reserves that returned NULL (dropped; a tracepoint gives no
 *            such answer), elapsed_ns from start to the last event written,
 *            achieved = events per second over elapsed_ns: below rate when
 *            the generator could not keep up.
 */

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/ring_buffer.h>
#include <linux/ringtrace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/trace_clock.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <asm/local.h>

#include "bench_compat.h"

#define CREATE_TRACE_POINTS
#include "ringtrace_bench_trace.h"

struct bench_payload {
	u64 seq;
	u64 value;
};

#define BENCH_RECORD_SIZE	(RINGTRACE_COMPACT_HEADER_SIZE + \
				 sizeof(struct bench_payload))
#define BENCH_FLOOR_BYTES	4096	/* the floor's per-CPU array */

static struct ringtrace_event bench_event = {
	.name = "ringtrace_bench",
	.fields = "uint64_t seq; uint64_t value;",
};

/* Rate mode's event; ringtrace_bench_trace.h has the same fields. */
struct bench_rate_payload {
	u32 tid;
	s32 ret;
	u64 addr;
	u64 value;
} __packed;
static_assert(sizeof(struct bench_rate_payload) == 24);

static struct ringtrace_event bench_rate_event = {
	.name = "ringtrace_bench_rate",
	.fields = "uint32_t tid; int32_t ret; uint64_t addr; uint64_t value;",
};

/* Per-CPU state of the floor and profile loops; ringtrace.ko never sees it. */
struct bench_cpu {
	struct ringtrace_buffer shadow;	/* only the writer fields are used */
	u8 *floor;
	unsigned int floor_off;
	unsigned long shadow_done;	/* keeps the commit test observable */
};

static DEFINE_PER_CPU(struct bench_cpu *, bench_cpu_ptr);

struct bench_run;

struct bench_thread {
	struct bench_run *run;
	struct task_struct *task;
	struct bench_cpu *bc;
	unsigned int cpu;
	u64 *ns;			/* [method * reps + rep]: batch time */
	unsigned long *nulls;		/* [method]: NULL reserves */
};

struct bench_run {
	unsigned long iters;
	unsigned long warmup;
	unsigned int reps;
	bool profile;
	struct trace_buffer *krb;

	/* One set of threads (one CPU or all of them). */
	unsigned int nthreads;
	struct bench_thread *threads;
	atomic_t barrier;		/* arrivals, counted up forever */
	atomic_t running;
	struct completion done;
	bool abort;			/* the writer of `run` was killed */
};

/*
 * The end of every bench kthread: the last one wakes the waiter, then each
 * stays until kthread_stop(), since module text must outlive the thread.
 */
static int bench_thread_done(atomic_t *running, struct completion *done)
{
	if (atomic_dec_and_test(running))
		complete(done);
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * Wait for a set of kthreads.  Short timed sleeps keep the hung-task
 * detector quiet on slow guests; a fatal signal sets *abort so that the
 * threads finish early (they still pass every barrier).
 */
static void bench_wait_done(struct completion *done, bool *abort)
{
	long ret;

	for (;;) {
		ret = wait_for_completion_killable_timeout(done, HZ);
		if (ret > 0)
			return;
		if (ret < 0)
			break;
	}
	WRITE_ONCE(*abort, true);
	while (!wait_for_completion_timeout(done, HZ))
		;
}


/*
 * The loops.  Every method is one __always_inline "op" that records one
 * payload and says whether it was recorded; BENCH_BATCH wraps each op in the
 * same loop, so all methods pay the same loop, payload set-up and call.
 */
static __always_inline void bench_floor_store(struct bench_cpu *bc, u64 ts,
					      const struct bench_payload *pl)
{
	unsigned int off = bc->floor_off;
	void *payload;

	if (unlikely(off > BENCH_FLOOR_BYTES - BENCH_RECORD_SIZE))
		off = 0;
	payload = ringtrace_put_header(bc->floor + off,
				       RINGTRACE_COMPACT_HEADER_SIZE,
				       bench_event.id, ts);
	memcpy(payload, pl, sizeof(*pl));
	bc->floor_off = off + BENCH_RECORD_SIZE;
}

static __always_inline bool op_ringtrace(struct bench_thread *t,
					 const struct bench_payload *pl)
{
	struct ringtrace_reservation r __uninitialized;
	void *p = ringtrace_reserve(&r, bench_event.id, sizeof(*pl));

	if (unlikely(!p))
		return false;
	memcpy(p, pl, sizeof(*pl));
	ringtrace_commit(&r);
	return true;
}

static __always_inline bool op_kernel_rb(struct bench_thread *t,
					 const struct bench_payload *pl)
{
	struct trace_buffer *rb = t->run->krb;
	struct ring_buffer_event *ev = ring_buffer_lock_reserve(rb, sizeof(*pl));

	if (unlikely(!ev))
		return false;
	memcpy(ring_buffer_event_data(ev), pl, sizeof(*pl));
	bench_rb_unlock_commit(rb, ev);
	return true;
}

/* A bound kthread: t->bc is this CPU's, no per-CPU access needed. */
static __always_inline bool op_floor(struct bench_thread *t,
				     const struct bench_payload *pl)
{
	bench_floor_store(t->bc, ringtrace_clock(), pl);
	return true;
}

static __always_inline bool op_p_store(struct bench_thread *t,
				       const struct bench_payload *pl)
{
	bench_floor_store(t->bc, pl->seq, pl);
	return true;
}

static __always_inline bool op_p_localclock(struct bench_thread *t,
					    const struct bench_payload *pl)
{
	bench_floor_store(t->bc, trace_clock_local(), pl);
	return true;
}

static __always_inline bool op_p_preempt(struct bench_thread *t,
					 const struct bench_payload *pl)
{
	struct bench_cpu *bc;

	preempt_disable_notrace();
	if (unlikely(!READ_ONCE(ringtrace_tracing))) {
		preempt_enable_notrace();
		return false;
	}
	bc = this_cpu_read(bench_cpu_ptr);
	bench_floor_store(bc, ringtrace_clock(), pl);
	preempt_enable_notrace();
	return true;
}

/* The shadow "slow path": jump to the next sub-buffer, past its header. */
static noinline void bench_shadow_switch(struct ringtrace_buffer *b,
					 unsigned long old)
{
	unsigned long start = (old + b->subbuf_mask) & ~b->subbuf_mask;

	local_set(&b->offset, start + RINGTRACE_PACKET_HEADER_SIZE);
}

/*
 * The shadow's other slow path: a timestamp the compact header cannot
 * carry (the first event after ~134 ms).  ringtrace's writes an extended
 * header; the shadow only moves its last timestamp on.
 */
static noinline void bench_shadow_resync(struct ringtrace_buffer *b, u64 ts)
{
	if ((s64)(ts - b->last_ts) > 0)
		WRITE_ONCE(b->last_ts, ts);
}

/*
 * The profile steps above the floor.  @reserve, @commit and @clock are
 * constants at every call site, so each p-* loop compiles to exactly its
 * steps.  Without @clock the timestamp is the previous one plus one: no
 * clock read at all, everything else the same.  The reservation is that
 * of ringtrace_reserve()'s compact expansion (bench_event's id is below
 * RINGTRACE_EVENT_ID_EXTENDED): the header is 4 bytes, a constant.
 */
static __always_inline bool op_p_steps(const struct bench_payload *pl,
				       bool reserve, bool commit, bool clock)
{
	const unsigned int len = sizeof(*pl);
	const unsigned int hlen = RINGTRACE_COMPACT_HEADER_SIZE;
	struct ringtrace_buffer *b;
	struct ringtrace_slot *slot;
	struct bench_cpu *bc;
	unsigned long old, off;
	u64 ts, last;
	void *p;

	preempt_disable_notrace();
	if (unlikely(!READ_ONCE(ringtrace_tracing)))
		goto off;
	bc = this_cpu_read(bench_cpu_ptr);
	b = &bc->shadow;
	if (unlikely(local_read(&b->nesting) >= RINGTRACE_MAX_NESTING))
		goto off;
	local_inc(&b->nesting);
	if (!reserve) {
		bench_floor_store(bc, ringtrace_clock(), pl);
		local_inc(&b->slots[0].events);
		local_dec(&b->nesting);
		preempt_enable_notrace();
		return true;
	}
	/* As ringtrace_reserve()'s choice of the compact expansion. */
	if (unlikely(bench_event.id >= RINGTRACE_EVENT_ID_EXTENDED)) {
		local_dec(&b->nesting);
		goto off;
	}
	for (;;) {
		old = local_read(&b->offset);
		if (clock) {
			ts = ringtrace_clock();
			last = READ_ONCE(b->last_ts);
		} else {
			last = READ_ONCE(b->last_ts);
			ts = last + 1;
		}
		if (unlikely(ts - last >= (1ULL << RINGTRACE_COMPACT_TS_BITS))) {
			bench_shadow_resync(b, ts);
			continue;
		}
		off = old & b->subbuf_mask;
		if (unlikely(off == 0 || off + hlen + len >= b->subbuf_size)) {
			bench_shadow_switch(b, old);
			continue;
		}
		if (likely(local_cmpxchg(&b->offset, old,
					 old + hlen + len) == old))
			break;
	}
	WRITE_ONCE(b->last_ts, ts);
	p = ringtrace_put_header(b->data + (old & b->buf_mask), hlen,
				 bench_event.id, ts);
	memcpy(p, pl, len);
	slot = ringtrace_pos_slot(b, old);
	local_inc(&slot->events);
	if (commit) {
		unsigned long mask = b->subbuf_mask;

		/* As ringtrace_commit_slot() [B1]; nobody reads the shadow. */
		smp_wmb();
		if (unlikely(!((unsigned long)local_add_return(hlen + len,
							       &slot->commit) &
			       mask)))
			bc->shadow_done++;
	}
	local_dec(&b->nesting);
	preempt_enable_notrace();
	return true;
off:
	preempt_enable_notrace();
	return false;
}

static __always_inline bool op_p_counters(struct bench_thread *t,
					  const struct bench_payload *pl)
{
	return op_p_steps(pl, false, false, true);
}

static __always_inline bool op_p_reserve(struct bench_thread *t,
					 const struct bench_payload *pl)
{
	return op_p_steps(pl, true, false, true);
}

static __always_inline bool op_p_commit(struct bench_thread *t,
					const struct bench_payload *pl)
{
	return op_p_steps(pl, true, true, true);
}

static __always_inline bool op_p_noclock(struct bench_thread *t,
					 const struct bench_payload *pl)
{
	return op_p_steps(pl, true, true, false);
}

#define BENCH_BATCH(op)							\
static noinline unsigned long batch_##op(struct bench_thread *t,	\
					 unsigned long n)		\
{									\
	unsigned long i, nulls = 0;					\
									\
	for (i = 0; i < n; i++) {					\
		struct bench_payload pl = { .seq = i, .value = t->cpu }; \
									\
		if (unlikely(!op_##op(t, &pl)))				\
			nulls++;					\
	}								\
	return nulls;							\
}

BENCH_BATCH(ringtrace)
BENCH_BATCH(kernel_rb)
BENCH_BATCH(floor)
BENCH_BATCH(p_store)
BENCH_BATCH(p_localclock)
BENCH_BATCH(p_preempt)
BENCH_BATCH(p_counters)
BENCH_BATCH(p_reserve)
BENCH_BATCH(p_commit)
BENCH_BATCH(p_noclock)

struct bench_method {
	const char *name;
	unsigned long (*batch)(struct bench_thread *t, unsigned long n);
	bool profile;
};

static const struct bench_method bench_methods[] = {
	{ "ringtrace",		batch_ringtrace,	false },
	{ "kernel-rb",		batch_kernel_rb,	false },
	{ "floor",		batch_floor,		false },
	{ "p-store",		batch_p_store,		true },
	{ "p-localclock",	batch_p_localclock,	true },
	{ "p-preempt",		batch_p_preempt,	true },
	{ "p-counters",		batch_p_counters,	true },
	{ "p-reserve",		batch_p_reserve,	true },
	{ "p-commit",		batch_p_commit,		true },
	{ "p-noclock",		batch_p_noclock,	true },
};

#define NR_METHODS	ARRAY_SIZE(bench_methods)

static bool bench_method_on(const struct bench_run *run, unsigned int m)
{
	return run->profile || !bench_methods[m].profile;
}

/*
 * Every thread of the set arrives before any leaves, so the batches of all
 * CPUs run at the same time.  The counter only grows: barrier k is passed
 * when it reaches k * nthreads.
 */
static void bench_barrier(struct bench_run *run, unsigned int *phase)
{
	int target = ++*phase * (int)run->nthreads;

	atomic_inc(&run->barrier);
	while (atomic_read(&run->barrier) < target) {
		cpu_relax();
		cond_resched();
	}
}

static int bench_thread_fn(void *arg)
{
	struct bench_thread *t = arg;
	struct bench_run *run = t->run;
	unsigned int phase = 0, m, rep;
	u64 start;

	/*
	 * Methods interleave within a repetition so that a slow period of the
	 * host (TCG) hits all of them alike.  Warm-up first: every buffer
	 * wraps at least once before anything is timed.
	 */
	for (m = 0; m < NR_METHODS; m++) {
		if (!bench_method_on(run, m))
			continue;
		bench_barrier(run, &phase);
		if (!READ_ONCE(run->abort))
			t->nulls[m] += bench_methods[m].batch(t, run->warmup);
		cond_resched();
	}
	for (rep = 0; rep < run->reps; rep++) {
		for (m = 0; m < NR_METHODS; m++) {
			if (!bench_method_on(run, m))
				continue;
			bench_barrier(run, &phase);
			if (READ_ONCE(run->abort))
				continue;
			start = ktime_get_ns();
			t->nulls[m] += bench_methods[m].batch(t, run->iters);
			t->ns[m * run->reps + rep] = ktime_get_ns() - start;
			cond_resched();
		}
	}

	/*
	 * A value-returning atomic is fully ordered: the last thread's
	 * complete() comes after every thread's results, and the waiter reads
	 * them after wait_for_completion().
	 */
	return bench_thread_done(&run->running, &run->done);
}

/*
 * Wait for the set.  Short timed sleeps keep the hung-task detector quiet
 * on slow guests; a fatal signal makes the threads skip the remaining
 * batches (they still pass every barrier, so none is left waiting).
 */
static void bench_wait(struct bench_run *run)
{
	bench_wait_done(&run->done, &run->abort);
}

/* Run every method on the CPUs of @mask at once; results in run->threads. */
static int bench_run_set(struct bench_run *run, const struct cpumask *mask)
{
	struct bench_thread *t;
	unsigned int cpu, i = 0, created = 0;
	int ret = 0;

	run->nthreads = cpumask_weight(mask);
	atomic_set(&run->barrier, 0);
	atomic_set(&run->running, run->nthreads);
	init_completion(&run->done);

	for_each_cpu(cpu, mask) {
		t = &run->threads[i++];
		t->run = run;
		t->cpu = cpu;
		t->bc = per_cpu(bench_cpu_ptr, cpu);
		memset(t->ns, 0, NR_METHODS * run->reps * sizeof(*t->ns));
		memset(t->nulls, 0, NR_METHODS * sizeof(*t->nulls));
		t->task = kthread_create_on_node(bench_thread_fn, t,
						 cpu_to_node(cpu),
						 "rt_bench/%u", cpu);
		if (IS_ERR(t->task)) {
			ret = PTR_ERR(t->task);
			goto stop_created;
		}
		kthread_bind(t->task, cpu);
		created++;
	}
	for (i = 0; i < created; i++)
		wake_up_process(run->threads[i].task);
	bench_wait(run);
	if (READ_ONCE(run->abort))
		ret = -EINTR;

stop_created:
	/* A thread never woken returns at once without running its function. */
	for (i = 0; i < created; i++)
		kthread_stop(run->threads[i].task);
	return ret;
}

/* Text of the last successful run, under bench_lock. */
static DEFINE_MUTEX(bench_lock);
static char *bench_result;
static size_t bench_result_len;

struct bench_text {
	char *buf;
	size_t size;
	size_t len;
	bool overflow;
};

static __printf(2, 3) void bench_printf(struct bench_text *txt,
					const char *fmt, ...)
{
	va_list args;
	int n;

	va_start(args, fmt);
	n = vsnprintf(txt->buf + txt->len, txt->size - txt->len, fmt, args);
	va_end(args);
	if (n < 0 || (size_t)n >= txt->size - txt->len) {
		txt->overflow = true;
		txt->len = txt->size - 1;
	} else {
		txt->len += n;
	}
}

static int bench_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Hundredths of a nanosecond per op, printed as "12.34". */
struct bench_centi {
	char s[24];
};

static struct bench_centi bench_centi(u64 x)
{
	struct bench_centi c;

	snprintf(c.s, sizeof(c.s), "%llu.%02u", x / 100, (unsigned int)(x % 100));
	return c;
}

static void bench_report_set(struct bench_run *run, const char *label,
			     u64 *scratch, struct bench_text *txt)
{
	unsigned int m, rep, i, reps = run->reps;
	unsigned long nulls;
	u64 sum, med;

	for (m = 0; m < NR_METHODS; m++) {
		if (!bench_method_on(run, m))
			continue;
		nulls = 0;
		for (rep = 0; rep < reps; rep++) {
			sum = 0;
			for (i = 0; i < run->nthreads; i++)
				sum += run->threads[i].ns[m * reps + rep];
			/* Per-writer cost of one op, in 1/100 ns. */
			scratch[rep] = div64_u64(sum * 100,
						 (u64)run->iters * run->nthreads);
		}
		for (i = 0; i < run->nthreads; i++)
			nulls += run->threads[i].nulls[m];
		sort(scratch, reps, sizeof(*scratch), bench_cmp_u64, NULL);
		med = reps & 1 ? scratch[reps / 2] :
			(scratch[reps / 2 - 1] + scratch[reps / 2]) / 2;
		bench_printf(txt, "result cpus=%s method=%s ns_per_op=%s min=%s max=%s nulls=%lu\n",
			     label, bench_methods[m].name, bench_centi(med).s,
			     bench_centi(scratch[0]).s,
			     bench_centi(scratch[reps - 1]).s, nulls);
	}
	for (m = 0; m < NR_METHODS; m++) {
		if (!bench_method_on(run, m))
			continue;
		for (rep = 0; rep < reps; rep++)
			for (i = 0; i < run->nthreads; i++)
				bench_printf(txt, "raw cpus=%s method=%s rep=%u cpu=%u batch_ns=%llu\n",
					     label, bench_methods[m].name, rep,
					     run->threads[i].cpu,
					     run->threads[i].ns[m * reps + rep]);
	}
}

/* What the benchmark copies from ringtrace's buffers (the same on all CPUs). */
struct bench_geometry {
	unsigned long subbuf_size;
	unsigned long subbuf_mask;
	unsigned long buf_mask;
	unsigned int subbuf_order;
	unsigned int num_order;
};

/*
 * ringtrace must be tracing, or its reserve is the "off" early exit.  The
 * buffers and their geometry stay put while tracing is on, and stopping
 * waits for preempt-off sections (synchronize_rcu(), see ringtrace_reserve())
 * before it frees anything: the same protection its writers rely on.  If
 * tracing stops during the run, reserves return NULL and `nulls` shows it.
 */
static int bench_read_geometry(const struct cpumask *online,
			       struct bench_geometry *geo)
{
	struct ringtrace_buffer *rt = NULL;
	unsigned int cpu;
	int ret = -ENODATA;

	preempt_disable();
	if (!READ_ONCE(ringtrace_tracing))
		goto out;
	for_each_cpu(cpu, online) {
		rt = per_cpu(ringtrace_cpu_buffer, cpu);
		if (!rt)
			goto out;
	}
	if (!rt)
		goto out;
	geo->subbuf_size = rt->subbuf_size;
	geo->subbuf_mask = rt->subbuf_mask;
	geo->buf_mask = rt->buf_mask;
	geo->subbuf_order = rt->subbuf_order;
	geo->num_order = rt->num_order;
	ret = 0;
out:
	preempt_enable();
	return ret;
}

static void bench_free_cpus(const struct cpumask *mask)
{
	struct bench_cpu *bc;
	unsigned int cpu;

	for_each_cpu(cpu, mask) {
		bc = per_cpu(bench_cpu_ptr, cpu);
		if (!bc)
			continue;
		per_cpu(bench_cpu_ptr, cpu) = NULL;
		vfree(bc->shadow.data);
		kfree(bc->shadow.slots);
		kfree(bc->floor);
		kfree(bc);
	}
}

/* Floor array and shadow buffer per CPU, shaped like ringtrace's buffers. */
static int bench_alloc_cpus(const struct cpumask *mask,
			    const struct bench_geometry *rt, bool profile)
{
	unsigned long bytes = rt->subbuf_size << rt->num_order;
	struct ringtrace_buffer *b;
	struct bench_cpu *bc;
	unsigned int cpu;
	int node;

	for_each_cpu(cpu, mask) {
		node = cpu_to_node(cpu);
		bc = kzalloc_node(sizeof(*bc), GFP_KERNEL, node);
		if (!bc)
			goto free_cpus;
		per_cpu(bench_cpu_ptr, cpu) = bc;
		bc->floor = kzalloc_node(BENCH_FLOOR_BYTES, GFP_KERNEL, node);
		if (!bc->floor)
			goto free_cpus;
		if (!profile)
			continue;
		b = &bc->shadow;
		b->subbuf_size = rt->subbuf_size;
		b->subbuf_mask = rt->subbuf_mask;
		b->buf_mask = rt->buf_mask;
		b->subbuf_order = rt->subbuf_order;
		b->num_order = rt->num_order;
		b->data = vzalloc_node(bytes, node);
		b->slots = kcalloc_node(1UL << rt->num_order,
					sizeof(*b->slots), GFP_KERNEL, node);
		if (!b->data || !b->slots)
			goto free_cpus;
	}
	return 0;

free_cpus:
	bench_free_cpus(mask);
	return -ENOMEM;
}

struct bench_args {
	unsigned long iters;
	unsigned int reps;
	bool profile;
	bool one;
	bool all;
	/* Rate mode. */
	bool rate_mode;
	bool tracepoint;
	/* ringtrace's mode, which the kernel ring buffer copies. */
	bool overwrite;
	u64 rate;
	unsigned int duration_ms;
};

/* Which kind of run the keys of a `run` line ask for. */
#define BENCH_KEYS_BATCH	1
#define BENCH_KEYS_RATE		2

static int bench_parse(char *line, struct bench_args *a)
{
	unsigned int kinds = 0;
	const char *cpus = NULL;
	char *tok, *val;
	int ret = 0;

	while ((tok = strsep(&line, " \t\n")) != NULL) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(tok, "iterations")) {
			kinds |= BENCH_KEYS_BATCH;
			ret = kstrtoul(val, 10, &a->iters);
			if (!ret && (a->iters < 1000 || a->iters > 100000000))
				ret = -EINVAL;
		} else if (!strcmp(tok, "reps")) {
			kinds |= BENCH_KEYS_BATCH;
			ret = kstrtouint(val, 10, &a->reps);
			if (!ret && (a->reps < 1 || a->reps > 101))
				ret = -EINVAL;
		} else if (!strcmp(tok, "profile")) {
			kinds |= BENCH_KEYS_BATCH;
			ret = kstrtobool(val, &a->profile);
		} else if (!strcmp(tok, "rate")) {
			kinds |= BENCH_KEYS_RATE;
			ret = kstrtou64(val, 10, &a->rate);
			if (!ret && (a->rate < 1000 || a->rate > 100000000))
				ret = -EINVAL;
		} else if (!strcmp(tok, "duration_ms")) {
			kinds |= BENCH_KEYS_RATE;
			ret = kstrtouint(val, 10, &a->duration_ms);
			if (!ret && (a->duration_ms < 100 ||
				     a->duration_ms > 60000))
				ret = -EINVAL;
		} else if (!strcmp(tok, "target")) {
			kinds |= BENCH_KEYS_RATE;
			a->tracepoint = !strcmp(val, "tracepoint");
			if (!a->tracepoint && strcmp(val, "ringtrace"))
				ret = -EINVAL;
		} else if (!strcmp(tok, "mode")) {
			a->overwrite = !strcmp(val, "overwrite");
			if (!a->overwrite && strcmp(val, "discard"))
				ret = -EINVAL;
		} else if (!strcmp(tok, "cpus")) {
			cpus = val;
			if (strcmp(val, "one") && strcmp(val, "all") &&
			    strcmp(val, "both"))
				ret = -EINVAL;
		} else {
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	if (kinds == (BENCH_KEYS_BATCH | BENCH_KEYS_RATE))
		return -EINVAL;
	a->rate_mode = kinds == BENCH_KEYS_RATE;
	if (a->rate_mode && !a->rate)
		return -EINVAL;		/* duration or target without a rate */
	if (a->rate_mode && !cpus)
		cpus = "all";
	if (cpus) {
		a->one = !strcmp(cpus, "one") || !strcmp(cpus, "both");
		a->all = !strcmp(cpus, "all") || !strcmp(cpus, "both");
		/* A rate run has one set of writers. */
		if (a->rate_mode && a->one && a->all)
			return -EINVAL;
	}
	return 0;
}

/* Allocate everything, run the CPU sets, publish the text.  bench_lock held. */
static int bench_run(const struct bench_args *a)
{
	struct bench_run run = {
		.iters = a->iters,
		.reps = a->reps,
		.profile = a->profile,
	};
	struct bench_geometry geo;
	struct bench_text txt = { };
	cpumask_var_t online, one;
	unsigned long bytes;
	unsigned int n, i;
	u64 *scratch;
	int ret;

	if (!zalloc_cpumask_var(&online, GFP_KERNEL))
		return -ENOMEM;
	if (!zalloc_cpumask_var(&one, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto free_online;
	}
	cpus_read_lock();
	cpumask_copy(online, cpu_online_mask);
	cpus_read_unlock();
	cpumask_set_cpu(cpumask_first(online), one);
	n = cpumask_weight(online);

	ret = bench_read_geometry(online, &geo);
	if (ret)
		goto free_one;
	bytes = geo.subbuf_size << geo.num_order;
	/* Enough to wrap each buffer at least once, and never less than a batch. */
	run.warmup = max_t(unsigned long, a->iters,
			   DIV_ROUND_UP(2 * bytes, BENCH_RECORD_SIZE));

	run.krb = ring_buffer_alloc(bytes, a->overwrite ? RB_FL_OVERWRITE : 0);
	if (!run.krb) {
		ret = -ENOMEM;
		goto free_one;
	}
	ret = bench_alloc_cpus(online, &geo, a->profile);
	if (ret)
		goto free_krb;

	ret = -ENOMEM;
	run.threads = kcalloc(n, sizeof(*run.threads), GFP_KERNEL);
	scratch = kcalloc(a->reps, sizeof(*scratch), GFP_KERNEL);
	if (!run.threads || !scratch)
		goto free_threads;
	for (i = 0; i < n; i++) {
		run.threads[i].ns = kcalloc(NR_METHODS * a->reps,
					    sizeof(u64), GFP_KERNEL);
		run.threads[i].nulls = kcalloc(NR_METHODS,
					       sizeof(unsigned long),
					       GFP_KERNEL);
		if (!run.threads[i].ns || !run.threads[i].nulls)
			goto free_threads;
	}
	txt.size = 1024 + NR_METHODS * (a->reps * (n + 1) + 4) * 128;
	txt.buf = kvmalloc(txt.size, GFP_KERNEL);
	if (!txt.buf)
		goto free_threads;

	bench_printf(&txt, "config kernel=%s online_cpus=%u iterations=%lu reps=%u warmup=%lu payload=%zu event_id=%u mode=%s rt_subbuf_size=%lu rt_num_subbufs=%lu rt_bytes_per_cpu=%lu krb_bytes_per_cpu=%lu krb_clock=trace_clock_local rt_clock=ktime_get_mono_fast_ns\n",
		     utsname()->release, n, a->iters, a->reps, run.warmup,
		     sizeof(struct bench_payload), bench_event.id,
		     a->overwrite ? "overwrite" : "discard", geo.subbuf_size,
		     1UL << geo.num_order, bytes,
		     ring_buffer_size(run.krb, cpumask_first(online)));

	if (a->one) {
		ret = bench_run_set(&run, one);
		if (ret)
			goto free_text;
		bench_report_set(&run, "1", scratch, &txt);
	}
	if (a->all) {
		ret = bench_run_set(&run, online);
		if (ret)
			goto free_text;
		bench_report_set(&run, "all", scratch, &txt);
	}
	bench_printf(&txt, "check krb_entries=%lu krb_overruns=%lu\n",
		     ring_buffer_entries(run.krb), ring_buffer_overruns(run.krb));
	if (txt.overflow) {
		ret = -EOVERFLOW;
		goto free_text;
	}

	kvfree(bench_result);
	bench_result = txt.buf;
	bench_result_len = txt.len;
	txt.buf = NULL;
	ret = 0;

free_text:
	kvfree(txt.buf);
free_threads:
	if (run.threads) {
		for (i = 0; i < n; i++) {
			kfree(run.threads[i].nulls);
			kfree(run.threads[i].ns);
		}
	}
	kfree(scratch);
	kfree(run.threads);
	bench_free_cpus(online);
free_krb:
	ring_buffer_free(run.krb);
free_one:
	free_cpumask_var(one);
free_online:
	free_cpumask_var(online);
	return ret;
}

/* --- rate mode ----------------------------------------------------------- */

#define RATE_TICK_NS		NSEC_PER_MSEC
#define RATE_SLACK_NS		(20 * NSEC_PER_USEC)

/* What one generator thread writes; the same sequence for both targets. */
struct rate_gen {
	u64 prng;			/* xorshift64 state, never 0 */
	u64 value;
	u32 tid;
};

/*
 * Fields with the spread of real trace data: one task per CPU, a return
 * value of 0..255, a cache-line aligned address in a 4 GiB window of the
 * direct map, an offset that grows by 0..4095.  About 46 random bits per
 * event, so a compressor cannot make it vanish.
 */
static __always_inline void bench_rate_next(struct rate_gen *g,
					    struct bench_rate_payload *p)
{
	u64 x = g->prng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	g->prng = x;
	g->value += (x >> 40) & 0xfff;
	p->tid = g->tid;
	p->ret = x & 0xff;
	p->addr = 0xffff888000000000ULL | ((x >> 8) & 0x3ffffff) << 6;
	p->value = g->value;
}

static __always_inline bool rate_write_ringtrace(const struct bench_rate_payload *p)
{
	return ringtrace_write(bench_rate_event.id, p, sizeof(*p));
}

static __always_inline bool rate_write_tracepoint(const struct bench_rate_payload *p)
{
	trace_bench_rate(p->tid, p->ret, p->addr, p->value);
	return true;
}

#define RATE_BATCH(target)						\
static noinline u64 rate_batch_##target(struct rate_gen *g, u64 n)	\
{									\
	struct bench_rate_payload p;					\
	u64 i, nulls = 0;						\
									\
	for (i = 0; i < n; i++) {					\
		bench_rate_next(g, &p);					\
		if (unlikely(!rate_write_##target(&p)))			\
			nulls++;					\
		/* A catch-up burst can be long: let others run. */	\
		if (unlikely((i & 255) == 255))				\
			cond_resched();					\
	}								\
	return nulls;							\
}

RATE_BATCH(ringtrace)
RATE_BATCH(tracepoint)

/*
 * ringtrace's probe on the tracepoint bench_rate, for target=tracepoint:
 * what the probes of module/probes.c do for the kernel's tracepoints, so
 * that ringtrace pays the same tracepoint call as the other tracers.
 */
static void bench_rate_rt_probe(void *data, u32 tid, s32 ret, u64 addr,
				u64 value)
{
	struct ringtrace_reservation r __uninitialized;
	struct bench_rate_payload *p;

	p = ringtrace_reserve(&r, bench_rate_event.id, sizeof(*p));
	if (!p)
		return;
	p->tid = tid;
	p->ret = ret;
	p->addr = addr;
	p->value = value;
	ringtrace_commit(&r);
}

/* Whether bench_rate_rt_probe is attached; rt_probe_lock serialises it. */
static DEFINE_MUTEX(rt_probe_lock);
static bool rt_probe_attached;

static int bench_rt_probe_set(bool on)
{
	int ret = 0;

	mutex_lock(&rt_probe_lock);
	if (on == rt_probe_attached)
		goto unlock;
	if (on) {
		ret = register_trace_bench_rate(bench_rate_rt_probe, NULL);
	} else {
		ret = unregister_trace_bench_rate(bench_rate_rt_probe, NULL);
		/* A probe may still run on another CPU until this returns. */
		tracepoint_synchronize_unregister();
	}
	if (!ret)
		rt_probe_attached = on;
unlock:
	mutex_unlock(&rt_probe_lock);
	return ret;
}

struct rate_run;

struct rate_thread {
	struct rate_run *run;
	struct task_struct *task;
	unsigned int cpu;
	u64 events;
	u64 nulls;
	u64 elapsed_ns;
};

struct rate_run {
	u64 rate;			/* events per second per thread */
	u64 duration_ns;
	bool tracepoint;
	unsigned int nthreads;
	struct rate_thread *threads;
	atomic_t arrived;
	atomic_t running;
	struct completion done;
	bool abort;
};

/* Events due @elapsed ns after the start; rate <= 1e8, elapsed <= 6e10. */
static u64 rate_due(const struct rate_run *run, u64 elapsed)
{
	return div64_u64(run->rate * elapsed, NSEC_PER_SEC);
}

static int rate_thread_fn(void *arg)
{
	struct rate_thread *t = arg;
	struct rate_run *run = t->run;
	struct rate_gen g = {
		.prng = 0x9e3779b97f4a7c15ULL * (t->cpu + 1),
		.tid = task_pid_nr(current),
	};
	u64 start, end, now, want, done = 0;
	ktime_t next;
	bool last;

	/* Start together: every thread has arrived before any writes. */
	atomic_inc(&run->arrived);
	while (atomic_read(&run->arrived) < (int)run->nthreads) {
		cpu_relax();
		cond_resched();
	}
	start = ktime_get_ns();
	end = start + run->duration_ns;
	for (;;) {
		now = ktime_get_ns();
		last = now >= end || READ_ONCE(run->abort);
		want = rate_due(run, min(now, end) - start);
		t->nulls += run->tracepoint ? rate_batch_tracepoint(&g, want - done) :
			    rate_batch_ringtrace(&g, want - done);
		done = want;
		if (last)
			break;
		/* Sleep to the next tick boundary after the start. */
		next = ns_to_ktime(start + (div64_u64(now - start, RATE_TICK_NS) + 1) *
				   RATE_TICK_NS);
		set_current_state(TASK_INTERRUPTIBLE);
		schedule_hrtimeout_range(&next, RATE_SLACK_NS, HRTIMER_MODE_ABS);
	}
	t->elapsed_ns = ktime_get_ns() - start;
	t->events = done;

	/* Ordered like bench_thread_fn()'s results. */
	return bench_thread_done(&run->running, &run->done);
}

/* bench_wait() for a rate run: a fatal signal ends the run early. */
static void rate_wait(struct rate_run *run)
{
	bench_wait_done(&run->done, &run->abort);
}

/* One rate run on the first online CPU or on all of them.  bench_lock held. */
static int bench_rate_run(const struct bench_args *a)
{
	struct rate_run run = {
		.rate = a->rate,
		.duration_ns = (u64)a->duration_ms * NSEC_PER_MSEC,
		.tracepoint = a->tracepoint,
	};
	struct bench_text txt = { };
	struct rate_thread *t;
	cpumask_var_t mask;
	unsigned int cpu, i = 0, created = 0;
	int ret;

	/* Checked once: if tracing stops during the run, nulls show it. */
	if (!a->tracepoint && !READ_ONCE(ringtrace_tracing))
		return -ENODATA;
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	cpus_read_lock();
	if (a->all)
		cpumask_copy(mask, cpu_online_mask);
	else
		cpumask_set_cpu(cpumask_first(cpu_online_mask), mask);
	cpus_read_unlock();

	ret = -ENOMEM;
	run.nthreads = cpumask_weight(mask);
	run.threads = kcalloc(run.nthreads, sizeof(*run.threads), GFP_KERNEL);
	txt.size = 512 + run.nthreads * 128;
	txt.buf = kvmalloc(txt.size, GFP_KERNEL);
	if (!run.threads || !txt.buf)
		goto free;

	atomic_set(&run.arrived, 0);
	atomic_set(&run.running, run.nthreads);
	init_completion(&run.done);
	for_each_cpu(cpu, mask) {
		t = &run.threads[i++];
		t->run = &run;
		t->cpu = cpu;
		t->task = kthread_create_on_node(rate_thread_fn, t,
						 cpu_to_node(cpu),
						 "rt_rate/%u", cpu);
		if (IS_ERR(t->task)) {
			ret = PTR_ERR(t->task);
			goto stop_created;
		}
		kthread_bind(t->task, cpu);
		created++;
	}
	for (i = 0; i < created; i++)
		wake_up_process(run.threads[i].task);
	rate_wait(&run);
	ret = READ_ONCE(run.abort) ? -EINTR : 0;

stop_created:
	/* A thread never woken returns at once without running its function. */
	for (i = 0; i < created; i++)
		kthread_stop(run.threads[i].task);
	if (ret)
		goto free;

	bench_printf(&txt, "rateconfig kernel=%s online_cpus=%u target=%s rate=%llu duration_ms=%u payload=%zu event_id=%u tick_us=%lu\n",
		     utsname()->release, num_online_cpus(),
		     a->tracepoint ? "tracepoint" : "ringtrace", a->rate,
		     a->duration_ms, sizeof(struct bench_rate_payload),
		     bench_rate_event.id, RATE_TICK_NS / NSEC_PER_USEC);
	for (i = 0; i < run.nthreads; i++) {
		t = &run.threads[i];
		bench_printf(&txt, "rate cpu=%u events=%llu nulls=%llu elapsed_ns=%llu achieved=%llu\n",
			     t->cpu, t->events, t->nulls, t->elapsed_ns,
			     t->elapsed_ns ?
			     div64_u64(t->events * NSEC_PER_SEC, t->elapsed_ns) : 0);
	}
	if (txt.overflow) {
		ret = -EOVERFLOW;
		goto free;
	}
	kvfree(bench_result);
	bench_result = txt.buf;
	bench_result_len = txt.len;
	txt.buf = NULL;

free:
	kvfree(txt.buf);
	kfree(run.threads);
	free_cpumask_var(mask);
	return ret;
}

static ssize_t bench_run_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	struct bench_args a = {
		.iters = 100000,
		.reps = 9,
		.profile = true,
		.one = true,
		.all = true,
		.duration_ms = 2000,
	};
	char line[128];
	int ret;

	if (count >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, ubuf, count))
		return -EFAULT;
	line[count] = '\0';
	ret = bench_parse(line, &a);
	if (ret)
		return ret;

	ret = mutex_lock_interruptible(&bench_lock);
	if (ret)
		return ret;
	ret = a.rate_mode ? bench_rate_run(&a) : bench_run(&a);
	mutex_unlock(&bench_lock);
	return ret ? ret : count;
}

static ssize_t bench_result_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	ssize_t ret;

	ret = mutex_lock_interruptible(&bench_lock);
	if (ret)
		return ret;
	if (bench_result)
		ret = simple_read_from_buffer(ubuf, count, ppos, bench_result,
					      bench_result_len);
	else
		ret = -ENODATA;
	mutex_unlock(&bench_lock);
	return ret;
}

static const struct file_operations bench_run_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = bench_run_write,
	.llseek = noop_llseek,
};

static const struct file_operations bench_result_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = bench_result_read,
	.llseek = default_llseek,
};

static ssize_t bench_rt_probe_write(struct file *file,
				    const char __user *ubuf, size_t count,
				    loff_t *ppos)
{
	bool on;
	int ret;

	ret = kstrtobool_from_user(ubuf, count, &on);
	if (ret)
		return ret;
	ret = bench_rt_probe_set(on);
	return ret ? ret : count;
}

static ssize_t bench_rt_probe_read(struct file *file, char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char buf[2] = { READ_ONCE(rt_probe_attached) ? '1' : '0', '\n' };

	return simple_read_from_buffer(ubuf, count, ppos, buf, sizeof(buf));
}

static const struct file_operations bench_rt_probe_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = bench_rt_probe_read,
	.write = bench_rt_probe_write,
	.llseek = default_llseek,
};

static struct dentry *bench_dir;

static int __init ringtrace_bench_init(void)
{
	int ret;

	ret = ringtrace_event_register(&bench_event);
	if (ret)
		return ret;
	ret = ringtrace_event_register(&bench_rate_event);
	if (ret)
		goto unregister_event;
	bench_dir = debugfs_create_dir("ringtrace_bench", NULL);
	if (IS_ERR(bench_dir)) {
		ret = PTR_ERR(bench_dir);
		goto unregister_rate_event;
	}
	debugfs_create_file("run", 0200, bench_dir, NULL, &bench_run_fops);
	debugfs_create_file("result", 0400, bench_dir, NULL,
			    &bench_result_fops);
	debugfs_create_file("rt_probe", 0600, bench_dir, NULL,
			    &bench_rt_probe_fops);
	return 0;

unregister_rate_event:
	ringtrace_event_unregister(&bench_rate_event);
unregister_event:
	ringtrace_event_unregister(&bench_event);
	return ret;
}

static void __exit ringtrace_bench_exit(void)
{
	/* Waits for every reader and writer of the files to leave. */
	debugfs_remove_recursive(bench_dir);
	bench_rt_probe_set(false);
	ringtrace_event_unregister(&bench_rate_event);
	ringtrace_event_unregister(&bench_event);
	kvfree(bench_result);
}

module_init(ringtrace_bench_init);
module_exit(ringtrace_bench_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ringtrace writer cost against the kernel ring buffer");
