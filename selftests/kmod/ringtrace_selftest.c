// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace_selftest.ko: writers for the ringtrace selftests.
 *
 * A client of the public writer API only (include/linux/ringtrace.h), like
 * any other module that traces with ringtrace.  It produces self-checking
 * records (see ringtrace_selftest.h) from every context that can nest on a
 * CPU, so that the userspace stress test can prove that under load every
 * accepted event arrives intact, exactly once and in order, and that every
 * other one is counted as lost:
 *
 *   task      a kthread bound to each CPU, writing in a loop
 *   softirq   a pinned timer_list per CPU
 *   hardirq   a pinned hard hrtimer per CPU, an irq_work it queues, and
 *             IPIs sent to every other CPU by a sender kthread per CPU
 *
 * This mirrors the kernel's ring buffer startup test (one writer per CPU
 * plus IPI writers nesting over it), with more contexts.  Two deterministic
 * tests complete it: reservations nested one deeper than the API allows,
 * and an event too big for a sub-buffer.  The protocol with userspace is
 * described in ringtrace_selftest.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/reboot.h>
#include <linux/ringtrace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <asm/byteorder.h>
#ifdef CONFIG_X86_LOCAL_APIC
#include <asm/apic.h>
#include <asm/nmi.h>
#endif

#include "ringtrace_selftest.h"

/*
 * The hrtimer period is short so that hard interrupts often land inside a
 * task writer's reservation (the case the ring buffer must get right), but
 * long enough that a TCG guest still makes progress between them.
 */
#define RTST_HRTIMER_PERIOD_NS	(200 * NSEC_PER_USEC)
/*
 * Events per hard-interrupt callback (hrtimer, irq_work): consecutive
 * nested records.  A run may ask for more, up to RTST_MAX_IRQ_BURST, so
 * that one interrupt fills the whole ring of a small buffer while the
 * task writer it interrupted is in the middle of a sub-buffer switch.
 */
#define RTST_IRQ_BURST		2
#define RTST_MAX_IRQ_BURST	4096
/* The softirq timer fires once a jiffy: more per call to keep pace. */
#define RTST_SOFTIRQ_BURST	8
#define RTST_MAX_SECONDS	600

struct rtst_producer {
	u32 id;			/* cpu * RTST_NR_KINDS + kind */
	bool active;		/* writes in this run */
	bool done;		/* made max_per_producer attempts */
	u64 seq;		/* attempts so far: the next sequence number */
	u64 accepted;		/* attempts the ring buffer accepted */
	u64 nested;		/* accepted while another record was open here */
};

/*
 * Everything of one CPU.  A producer's counters are only touched from its
 * own context on its own CPU, and read after the run has been stopped
 * synchronously, so they need no atomics.
 */
struct rtst_cpu {
	struct task_struct *writer;	/* bound: task producer, arms timers */
	struct task_struct *ipi_sender;	/* bound: IPIs every other CPU */
	struct hrtimer hrtimer;
	struct timer_list timer;
	struct irq_work work;
	struct rtst_producer prod[RTST_NR_KINDS];
};

static struct rtst_cpu *rtst_cpus;	/* nr_cpu_ids entries */

/* Records of this module open (reserved, not committed) on this CPU. */
static DEFINE_PER_CPU(unsigned int, rtst_inflight);

static struct ringtrace_event rtst_record_ev = {
	.name = RTST_RECORD_NAME,
	.fields = RTST_RECORD_FIELDS,
};

static struct ringtrace_event rtst_nest_ev = {
	.name = RTST_NEST_NAME,
	.fields = RTST_NEST_FIELDS,
};

static struct ringtrace_event rtst_blob_ev = {
	.name = RTST_BLOB_NAME,
	.fields = RTST_BLOB_FIELDS,
};

/*
 * One run, nesting or oversize test at a time; also keeps the result files
 * from reading counters that are still moving.
 */
static DEFINE_MUTEX(rtst_lock);

/* Parameters of the current or last run, set before any writer starts. */
static struct cpumask rtst_run_cpus;
static unsigned int rtst_run_seconds;
static unsigned int rtst_run_flags;
static unsigned int rtst_run_burst = RTST_IRQ_BURST;
static u64 rtst_run_max;
static unsigned int rtst_nr_active;
static const char *rtst_run_state = "idle";

/* Writers stop at the next check once this is set. */
static bool rtst_stop;
/* Producers that made their max attempts, in all and per kind. */
static atomic_t rtst_nr_done;
static atomic_t rtst_kind_done[RTST_NR_KINDS];
static unsigned int rtst_kind_active[RTST_NR_KINDS];
/*
 * Completed by the producer that makes the last of them done.  Not a wait
 * queue: producers run in hard interrupt context (hrtimer, irq_work, IPI),
 * where a wait queue's spinlock_t must not be taken on PREEMPT_RT (it
 * sleeps there); a completion's lock is a raw one.
 */
static DECLARE_COMPLETION(rtst_done);

/* Outcome of the last nest / oversize write. */
static struct {
	int cpu;
	unsigned int accepted;
	unsigned int refused;
} rtst_nest_result = { .cpu = -1 };

static struct {
	int cpu;
	unsigned int len;
	bool accepted;
} rtst_oversize_result = { .cpu = -1 };

static struct dentry *rtst_dir;

static unsigned int rtst_context(void)
{
	unsigned int off = irqs_disabled() ? RTST_CTX_IRQS_OFF : 0;

	if (in_nmi())
		return RTST_CTX_NMI | off;
	if (in_hardirq())
		return RTST_CTX_HARDIRQ | off;
	if (in_serving_softirq())
		return RTST_CTX_SOFTIRQ | off;
	return RTST_CTX_TASK | off;
}

static bool rtst_want(const struct rtst_producer *p)
{
	return p->active && !p->done && !READ_ONCE(rtst_stop);
}

/* Called after every attempt: counts the producer done at its limit. */
static void rtst_attempted(struct rtst_producer *p)
{
	if (!rtst_run_max || p->done || p->seq < rtst_run_max)
		return;
	p->done = true;
	atomic_inc(&rtst_kind_done[p->id % RTST_NR_KINDS]);
	if (atomic_inc_return(&rtst_nr_done) == rtst_nr_active)
		complete(&rtst_done);
}

/*
 * Fill a whole record at @rec (in the ring or on the stack).  Runs with
 * preemption disabled, so the CPU number is the one of the buffer.
 */
static void rtst_fill(u8 *rec, const struct rtst_producer *p, u64 seq,
		      unsigned int len, u64 h)
{
	__le32 producer = cpu_to_le32(p->id), sum;
	__le16 cpu = cpu_to_le16(smp_processor_id());
	__le16 plen = cpu_to_le16(len);
	__le64 lseq = cpu_to_le64(seq);
	unsigned int i;

	memcpy(rec + RTST_OFF_PRODUCER, &producer, sizeof(producer));
	rec[RTST_OFF_CONTEXT] = rtst_context();
	rec[RTST_OFF_KIND] = p->id % RTST_NR_KINDS;
	memcpy(rec + RTST_OFF_CPU, &cpu, sizeof(cpu));
	memcpy(rec + RTST_OFF_SEQ, &lseq, sizeof(lseq));
	memcpy(rec + RTST_OFF_LEN, &plen, sizeof(plen));
	for (i = 0; i < len; i++)
		rec[RTST_RECORD_HEAD + i] = rtst_payload_byte(h, i);
	sum = cpu_to_le32(rtst_checksum(rec, RTST_RECORD_HEAD + len));
	memcpy(rec + RTST_RECORD_HEAD + len, &sum, sizeof(sum));
}

/* One attempt with reserve/commit, writing the record in place. */
static void rtst_emit(struct rtst_producer *p)
{
	struct ringtrace_reservation r;
	u64 seq = p->seq++;
	u64 h = rtst_hash(p->id, seq);
	unsigned int len = rtst_payload_len(p->id, h);
	u8 *rec;

	rec = ringtrace_reserve(&r, rtst_record_ev.id, RTST_RECORD_FIXED + len);
	if (rec) {
		/* Preemption is off until the commit: this_cpu ops are safe. */
		if (this_cpu_inc_return(rtst_inflight) > 1)
			p->nested++;
		rtst_fill(rec, p, seq, len, h);
		this_cpu_dec(rtst_inflight);
		ringtrace_commit(&r);
		p->accepted++;
	}
	rtst_attempted(p);
}

/* One attempt with ringtrace_write(): the record is built on the stack. */
static void rtst_emit_copy(struct rtst_producer *p)
{
	u8 rec[RTST_RECORD_FIXED + 48];
	u64 seq = p->seq++;
	u64 h = rtst_hash(p->id, seq);
	unsigned int len = rtst_payload_len(p->id, h);
	bool nested = this_cpu_read(rtst_inflight) > 0;

	/* rtst_max_payload() of interrupt kinds bounds len; checked anyway. */
	if (!WARN_ON_ONCE(RTST_RECORD_FIXED + len > sizeof(rec))) {
		rtst_fill(rec, p, seq, len, h);
		if (ringtrace_write(rtst_record_ev.id, rec,
				    RTST_RECORD_FIXED + len)) {
			p->accepted++;
			p->nested += nested;
		}
	}
	rtst_attempted(p);
}

static struct rtst_cpu *rtst_this_cpu(void)
{
	return &rtst_cpus[smp_processor_id()];
}

static enum hrtimer_restart rtst_hrtimer_fn(struct hrtimer *t)
{
	struct rtst_cpu *c = container_of(t, struct rtst_cpu, hrtimer);
	struct rtst_producer *p = &c->prod[RTST_KIND_HRTIMER];
	unsigned int i;

	if (READ_ONCE(rtst_stop))
		return HRTIMER_NORESTART;
	for (i = 0; i < rtst_run_burst && rtst_want(p); i++)
		rtst_emit(p);
	/* Raised here, it runs right after this handler, in hard irq. */
	if (rtst_want(&c->prod[RTST_KIND_IRQ_WORK]))
		irq_work_queue(&c->work);
	hrtimer_forward_now(t, ns_to_ktime(RTST_HRTIMER_PERIOD_NS));
	return HRTIMER_RESTART;
}

static void rtst_irq_work_fn(struct irq_work *w)
{
	struct rtst_cpu *c = container_of(w, struct rtst_cpu, work);
	struct rtst_producer *p = &c->prod[RTST_KIND_IRQ_WORK];
	unsigned int i;

	for (i = 0; i < rtst_run_burst && rtst_want(p); i++)
		rtst_emit(p);
}

static void rtst_timer_fn(struct timer_list *t)
{
	struct rtst_cpu *c = from_timer(c, t, timer);
	struct rtst_producer *p = &c->prod[RTST_KIND_SOFTIRQ];
	unsigned int i;

	if (READ_ONCE(rtst_stop))
		return;
	for (i = 0; i < RTST_SOFTIRQ_BURST && rtst_want(p); i++)
		rtst_emit(p);
	/* TIMER_PINNED: re-armed on this CPU. */
	mod_timer(t, jiffies + 1);
}

static void rtst_ipi_fn(void *info)
{
	struct rtst_producer *p = &rtst_this_cpu()->prod[RTST_KIND_IPI];
	unsigned int i;

	for (i = 0; i < RTST_IRQ_BURST && rtst_want(p); i++)
		rtst_emit_copy(p);
}

/* Sleep until kthread_stop(). */
static void rtst_park(void)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
}

/* Bound to its CPU: arms the CPU's timers, then is the task producer. */
static int rtst_writer_fn(void *data)
{
	struct rtst_cpu *c = data;
	struct rtst_producer *p = &c->prod[RTST_KIND_TASK];

	/*
	 * Armed from the CPU they must fire on (pinned).  A stop that comes
	 * first makes the first expiry a no-op; the run's teardown cancels
	 * them only after this thread has exited.
	 */
	if (c->prod[RTST_KIND_HRTIMER].active || c->prod[RTST_KIND_IRQ_WORK].active)
		hrtimer_start(&c->hrtimer, ns_to_ktime(RTST_HRTIMER_PERIOD_NS),
			      HRTIMER_MODE_REL_PINNED_HARD);
	if (c->prod[RTST_KIND_SOFTIRQ].active)
		mod_timer(&c->timer, jiffies + 1);

	while (!kthread_should_stop() && rtst_want(p)) {
		rtst_emit(p);
		cond_resched();
	}
	rtst_park();
	return 0;
}

/* Bound to its CPU: interrupts every other CPU, which then writes. */
static int rtst_ipi_sender_fn(void *data)
{
	while (!kthread_should_stop() && !READ_ONCE(rtst_stop) &&
	       atomic_read(&rtst_kind_done[RTST_KIND_IPI]) <
	       rtst_kind_active[RTST_KIND_IPI]) {
		/* smp_call_function_many() wants preemption off; skips us. */
		preempt_disable();
		smp_call_function_many(&rtst_run_cpus, rtst_ipi_fn, NULL, true);
		preempt_enable();
		usleep_range(50, 100);
	}
	rtst_park();
	return 0;
}

/*
 * Stop every writer of the run and wait until none can run any more.
 * Threads go first: the writer thread arms the timers, so once it has
 * exited a cancel cannot be followed by a late start.
 */
static void rtst_stop_run(void)
{
	unsigned int cpu;

	WRITE_ONCE(rtst_stop, true);
	for_each_cpu(cpu, &rtst_run_cpus) {
		struct rtst_cpu *c = &rtst_cpus[cpu];

		if (c->ipi_sender)
			kthread_stop(c->ipi_sender);
		c->ipi_sender = NULL;
	}
	for_each_cpu(cpu, &rtst_run_cpus) {
		struct rtst_cpu *c = &rtst_cpus[cpu];

		if (c->writer)
			kthread_stop(c->writer);
		c->writer = NULL;
	}
	for_each_cpu(cpu, &rtst_run_cpus) {
		struct rtst_cpu *c = &rtst_cpus[cpu];

		hrtimer_cancel(&c->hrtimer);
		/* The hrtimer queues the irq_work: sync it after the cancel. */
		irq_work_sync(&c->work);
		timer_delete_sync(&c->timer);
	}
}

static int rtst_run(unsigned int seconds, u64 max, unsigned int flags,
		    unsigned int burst)
{
	unsigned int cpu, kind, nr_cpus;
	long left;
	int ret = 0;

	cpumask_copy(&rtst_run_cpus, cpu_online_mask);
	nr_cpus = cpumask_weight(&rtst_run_cpus);
	rtst_run_seconds = seconds;
	rtst_run_max = max;
	rtst_run_flags = flags;
	rtst_run_burst = burst;
	rtst_nr_active = 0;
	atomic_set(&rtst_nr_done, 0);
	reinit_completion(&rtst_done);
	for (kind = 0; kind < RTST_NR_KINDS; kind++) {
		atomic_set(&rtst_kind_done[kind], 0);
		rtst_kind_active[kind] = 0;
	}
	WRITE_ONCE(rtst_stop, false);

	for_each_possible_cpu(cpu) {
		struct rtst_cpu *c = &rtst_cpus[cpu];

		for (kind = 0; kind < RTST_NR_KINDS; kind++) {
			struct rtst_producer *p = &c->prod[kind];

			p->seq = 0;
			p->accepted = 0;
			p->nested = 0;
			p->done = false;
			/* An IPI needs another CPU to come from. */
			p->active = cpumask_test_cpu(cpu, &rtst_run_cpus) &&
				    (flags & RTST_FLAG(kind)) &&
				    (kind != RTST_KIND_IPI || nr_cpus > 1);
			if (p->active) {
				rtst_nr_active++;
				rtst_kind_active[kind]++;
			}
		}
	}
	rtst_run_state = "running";

	for_each_cpu(cpu, &rtst_run_cpus) {
		struct rtst_cpu *c = &rtst_cpus[cpu];
		struct task_struct *t;

		t = kthread_create_on_cpu(rtst_writer_fn, c, cpu, "rtst_writer/%u");
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			goto stop;
		}
		c->writer = t;
		if (!rtst_kind_active[RTST_KIND_IPI])
			continue;
		t = kthread_create_on_cpu(rtst_ipi_sender_fn, c, cpu, "rtst_ipi/%u");
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			goto stop;
		}
		c->ipi_sender = t;
	}
	for_each_cpu(cpu, &rtst_run_cpus) {
		wake_up_process(rtst_cpus[cpu].writer);
		if (rtst_cpus[cpu].ipi_sender)
			wake_up_process(rtst_cpus[cpu].ipi_sender);
	}

	/* Killable so that a test harness timing out can end the run. */
	if (!rtst_run_max || rtst_nr_active) {
		left = wait_for_completion_killable_timeout(&rtst_done,
							    (long)seconds * HZ);
		if (left < 0)
			ret = -EINTR;
	}
stop:
	rtst_stop_run();
	rtst_run_state = ret ? "failed" : "done";
	return ret;
}

/* Copy a short command from userspace, NUL-terminated. */
static int rtst_copy_cmd(char *buf, size_t size, const char __user *ubuf,
			 size_t count)
{
	if (!count || count >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	return 0;
}

static ssize_t rtst_run_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	unsigned int seconds, flags, burst = RTST_IRQ_BURST;
	char buf[64], extra;
	int ret, n;
	u64 max;

	ret = rtst_copy_cmd(buf, sizeof(buf), ubuf, count);
	if (ret)
		return ret;
	/* Three or four numbers; the %c catches trailing garbage. */
	n = sscanf(buf, "%u %llu %u %u %c", &seconds, &max, &flags, &burst,
		   &extra);
	if (n != 3 && n != 4)
		return -EINVAL;
	if (!seconds || seconds > RTST_MAX_SECONDS || !flags ||
	    (flags & ~RTST_FLAGS_ALL) || !burst || burst > RTST_MAX_IRQ_BURST)
		return -EINVAL;
	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	ret = rtst_run(seconds, max, flags, burst);
	mutex_unlock(&rtst_lock);
	return ret ? ret : count;
}

static int rtst_run_show(struct seq_file *m, void *v)
{
	if (!mutex_trylock(&rtst_lock)) {
		seq_puts(m, "state=running\n");
		return 0;
	}
	seq_printf(m, "state=%s seconds=%u max=%llu flags=%#x burst=%u cpus=%*pbl\n",
		   rtst_run_state, rtst_run_seconds, rtst_run_max,
		   rtst_run_flags, rtst_run_burst,
		   cpumask_pr_args(&rtst_run_cpus));
	mutex_unlock(&rtst_lock);
	return 0;
}

static int rtst_result_show(struct seq_file *m, void *v)
{
	unsigned int cpu, kind;

	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	for_each_possible_cpu(cpu) {
		for (kind = 0; kind < RTST_NR_KINDS; kind++) {
			const struct rtst_producer *p = &rtst_cpus[cpu].prod[kind];

			if (!p->active)
				continue;
			seq_printf(m, "producer=%u cpu=%u kind=%u attempted=%llu accepted=%llu nested=%llu\n",
				   p->id, cpu, kind, p->seq, p->accepted,
				   p->nested);
		}
	}
	mutex_unlock(&rtst_lock);
	return 0;
}

static int rtst_events_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%s %u\n", rtst_record_ev.name, rtst_record_ev.id);
	seq_printf(m, "%s %u\n", rtst_nest_ev.name, rtst_nest_ev.id);
	seq_printf(m, "%s %u\n", rtst_blob_ev.name, rtst_blob_ev.id);
	return 0;
}

static void rtst_fill_nest(u8 *rec, u32 level, u64 token)
{
	__le32 l = cpu_to_le32(level);
	__le64 t = cpu_to_le64(token);

	memcpy(rec, &l, sizeof(l));
	memcpy(rec + sizeof(l), &t, sizeof(t));
}

/*
 * RINGTRACE_MAX_NESTING + 1 reservations, each nested in the previous one,
 * with interrupts off so that nothing else on this CPU nests in between and
 * the outcome is exact: all but the last accepted, the last refused and
 * counted in lost_nested.  Commit order is the reverse, as a real nesting
 * stack unwinds.
 */
static ssize_t rtst_nest_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	struct ringtrace_reservation r[RINGTRACE_MAX_NESTING + 1];
	void *rec[RINGTRACE_MAX_NESTING + 1];
	unsigned int accepted = 0, refused = 0;
	unsigned long irqflags;
	u64 token;
	int i, ret;

	ret = kstrtou64_from_user(ubuf, count, 0, &token);
	if (ret)
		return ret;
	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	local_irq_save(irqflags);
	for (i = 0; i <= RINGTRACE_MAX_NESTING; i++) {
		rec[i] = ringtrace_reserve(&r[i], rtst_nest_ev.id,
					   RTST_NEST_SIZE);
		if (rec[i]) {
			rtst_fill_nest(rec[i], i, token);
			accepted++;
		} else {
			refused++;
		}
	}
	for (i = RINGTRACE_MAX_NESTING; i >= 0; i--)
		if (rec[i])
			ringtrace_commit(&r[i]);
	rtst_nest_result.cpu = smp_processor_id();
	local_irq_restore(irqflags);
	rtst_nest_result.accepted = accepted;
	rtst_nest_result.refused = refused;
	mutex_unlock(&rtst_lock);
	return count;
}

static int rtst_nest_show(struct seq_file *m, void *v)
{
	mutex_lock(&rtst_lock);
	seq_printf(m, "cpu=%d max_nesting=%d accepted=%u refused=%u\n",
		   rtst_nest_result.cpu, RINGTRACE_MAX_NESTING,
		   rtst_nest_result.accepted, rtst_nest_result.refused);
	mutex_unlock(&rtst_lock);
	return 0;
}

/* An rt_selftest_blob of @n data bytes at @rec. */
static void rtst_fill_blob(u8 *rec, unsigned int n)
{
	__le32 len = cpu_to_le32(n);
	unsigned int i;

	memcpy(rec, &len, sizeof(len));
	for (i = 0; i < n; i++)
		rec[sizeof(len) + i] = rtst_blob_byte(i);
}

/* One blob of @n data bytes on this CPU, with the writer API. */
static bool rtst_blob(unsigned int n)
{
	struct ringtrace_reservation r;
	u8 *rec;

	rec = ringtrace_reserve(&r, rtst_blob_ev.id, sizeof(__le32) + n);
	if (!rec)
		return false;
	rtst_fill_blob(rec, n);
	ringtrace_commit(&r);
	return true;
}

/* One blob of n data bytes; sizes past a sub-buffer must be refused. */
static ssize_t rtst_oversize_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	struct ringtrace_reservation r;
	unsigned long irqflags;
	unsigned int n;
	bool accepted;
	u8 *rec;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &n);
	if (ret)
		return ret;
	/* Keeps 4 + n far from overflowing; nothing larger can ever fit. */
	if (n > RINGTRACE_MAX_SUBBUF_SIZE)
		return -EINVAL;
	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	local_irq_save(irqflags);
	rec = ringtrace_reserve(&r, rtst_blob_ev.id, sizeof(__le32) + n);
	accepted = rec;
	if (rec) {
		rtst_fill_blob(rec, n);
		ringtrace_commit(&r);
	}
	rtst_oversize_result.cpu = smp_processor_id();
	local_irq_restore(irqflags);
	rtst_oversize_result.len = n;
	rtst_oversize_result.accepted = accepted;
	mutex_unlock(&rtst_lock);
	return count;
}

static int rtst_oversize_show(struct seq_file *m, void *v)
{
	mutex_lock(&rtst_lock);
	seq_printf(m, "cpu=%d len=%u accepted=%d\n", rtst_oversize_result.cpu,
		   rtst_oversize_result.len, rtst_oversize_result.accepted);
	mutex_unlock(&rtst_lock);
	return 0;
}

/* Outcome of the last stale write. */
static struct {
	int cpu;
	unsigned int first;		/* nested blobs in the first packet */
	unsigned int nested;		/* nested blobs in all */
	bool accepted;			/* the outer blob */
} rtst_stale_result = { .cpu = -1 };

/*
 * A writer whose open position goes stale under nested writers, made
 * exact: with interrupts off, do what ringtrace_reserve() does up to its
 * slow-path call at a sub-buffer boundary, then -- as an interrupt there
 * would -- write nested blobs of @n bytes until they have wrapped the
 * whole ring and opened the packet after it (in overwrite mode, pushing
 * the packet at that boundary), then take the slow path with the
 * position read before.  Needs the buffer at a boundary (fresh): -EAGAIN
 * otherwise.  ringtrace must retry at the new position: no second push.
 */
static ssize_t rtst_stale_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	struct ringtrace_reservation r;
	struct ringtrace_buffer *w;
	unsigned long irqflags, old, size;
	unsigned int n, first = 0, nested = 0;
	u64 ts, last;
	u8 *rec;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &n);
	if (ret)
		return ret;
	if (n > 1024)
		return -EINVAL;
	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	ret = count;
	local_irq_save(irqflags);
	/* ringtrace_reserve(), up to the slow path. */
	preempt_disable_notrace();
	w = this_cpu_read(ringtrace_cpu_buffer);
	if (!READ_ONCE(ringtrace_tracing) || !w ||
	    (local_read(&w->offset) & w->subbuf_mask)) {
		preempt_enable_notrace();
		ret = -EAGAIN;
		goto out;
	}
	local_inc(&w->nesting);
	old = local_read(&w->offset);
	ts = ringtrace_buffer_clock(w, &last);
	/* The "interrupt": past the whole ring, into the packet after it. */
	size = w->buf_mask + 1;
	while (local_read(&w->offset) - old <= size && nested < 100000) {
		if (!rtst_blob(n))
			break;
		nested++;
		if (local_read(&w->offset) - old < w->subbuf_size)
			first++;
	}
	/* Back in the outer writer, with its stale offset. */
	rec = ringtrace_reserve_switch(&r, w, rtst_blob_ev.id,
				       sizeof(__le32) + n, old, ts, last);
	if (rec) {
		rtst_fill_blob(rec, n);
		ringtrace_commit(&r);
	}
	rtst_stale_result.cpu = smp_processor_id();
	rtst_stale_result.first = first;
	rtst_stale_result.nested = nested;
	rtst_stale_result.accepted = rec;
out:
	local_irq_restore(irqflags);
	mutex_unlock(&rtst_lock);
	return ret;
}

static int rtst_stale_show(struct seq_file *m, void *v)
{
	mutex_lock(&rtst_lock);
	seq_printf(m, "cpu=%d first=%u nested=%u accepted=%d\n",
		   rtst_stale_result.cpu, rtst_stale_result.first,
		   rtst_stale_result.nested, rtst_stale_result.accepted);
	mutex_unlock(&rtst_lock);
	return 0;
}

/* Outcome of the last online_burst write. */
static struct {
	int cpu;
	bool ran;			/* the IPI ran there */
	bool active;			/* cpu_active() in the IPI */
	unsigned int accepted;
	unsigned int events, len;	/* what to write */
} rtst_burst = { .cpu = -1 };

static void rtst_burst_ipi(void *unused)
{
	unsigned int i;

	rtst_burst.ran = true;
	rtst_burst.active = cpu_active(smp_processor_id());
	for (i = 0; i < rtst_burst.events; i++)
		rtst_burst.accepted += rtst_blob(rtst_burst.len);
}

/*
 * "<cpu> <events> <len>": wait (up to a minute) for offline @cpu to come
 * up, and as soon as it counts as online -- while it still runs its
 * hotplug callbacks, before it takes ordinary tasks -- write @events
 * blobs of @len bytes there from an IPI.  The writer spins meanwhile:
 * bring the CPU up from another thread.
 */
static ssize_t rtst_online_burst_write(struct file *file,
				       const char __user *ubuf, size_t count,
				       loff_t *ppos)
{
	unsigned int cpu, events, len;
	unsigned long end;
	char buf[64];
	int ret;

	ret = rtst_copy_cmd(buf, sizeof(buf), ubuf, count);
	if (ret)
		return ret;
	if (sscanf(buf, "%u %u %u", &cpu, &events, &len) != 3 ||
	    cpu >= nr_cpu_ids || !cpu_possible(cpu) || events > 10000 ||
	    len > 4000)
		return -EINVAL;
	if (!mutex_trylock(&rtst_lock))
		return -EBUSY;
	rtst_burst.cpu = cpu;
	rtst_burst.ran = false;
	rtst_burst.active = false;
	rtst_burst.accepted = 0;
	rtst_burst.events = events;
	rtst_burst.len = len;
	ret = count;
	end = jiffies + 60 * HZ;
	while (!cpu_online(cpu)) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto unlock;
		}
		if (time_after(jiffies, end)) {
			ret = -ETIMEDOUT;
			goto unlock;
		}
		cond_resched();
	}
	if (smp_call_function_single(cpu, rtst_burst_ipi, NULL, 1))
		ret = -ENXIO;
unlock:
	mutex_unlock(&rtst_lock);
	return ret;
}

static int rtst_online_burst_show(struct seq_file *m, void *v)
{
	mutex_lock(&rtst_lock);
	seq_printf(m, "cpu=%d ran=%d active=%d accepted=%u\n", rtst_burst.cpu,
		   rtst_burst.ran, rtst_burst.active, rtst_burst.accepted);
	mutex_unlock(&rtst_lock);
	return 0;
}

/*
 * An event registered and unregistered at will, under one name with two
 * layouts, for the tests of events that come and go during a recording.
 */
static struct ringtrace_event rtst_dyn_ev[2] = {
	{ .name = RTST_DYN_NAME, .fields = RTST_DYN_A_FIELDS },
	{ .name = RTST_DYN_NAME, .fields = RTST_DYN_B_FIELDS },
};
static int rtst_dyn_layout = -1;	/* the one registered, or -1 */
static u64 rtst_dyn_seq;

static void rtst_dyn_emit(unsigned int layout)
{
	struct rtst_dyn_a a;
	struct rtst_dyn_b b;

	if (layout == 0) {
		a.seq = cpu_to_le32(rtst_dyn_seq);
		a.magic = cpu_to_le32(RTST_DYN_A_MAGIC);
		ringtrace_write(rtst_dyn_ev[0].id, &a, sizeof(a));
	} else {
		b.seq = cpu_to_le64(rtst_dyn_seq);
		memcpy(b.tag, RTST_DYN_B_TAG, sizeof(b.tag));
		ringtrace_write(rtst_dyn_ev[1].id, &b, sizeof(b));
	}
	rtst_dyn_seq++;
}

/* "register a", "register b", "unregister", or "write <n>". */
static ssize_t rtst_dyn_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	char buf[32], layout;
	unsigned int n;
	int ret = 0;

	ret = rtst_copy_cmd(buf, sizeof(buf), ubuf, count);
	if (ret)
		return ret;
	strim(buf);
	mutex_lock(&rtst_lock);
	if (sscanf(buf, "register %c", &layout) == 1 &&
	    (layout == 'a' || layout == 'b') && rtst_dyn_layout < 0) {
		ret = ringtrace_event_register(&rtst_dyn_ev[layout - 'a']);
		if (!ret)
			rtst_dyn_layout = layout - 'a';
	} else if (!strcmp(buf, "unregister") && rtst_dyn_layout >= 0) {
		ringtrace_event_unregister(&rtst_dyn_ev[rtst_dyn_layout]);
		rtst_dyn_layout = -1;
	} else if (sscanf(buf, "write %u", &n) == 1 && rtst_dyn_layout >= 0 &&
		   n <= 100000) {
		while (n--)
			rtst_dyn_emit(rtst_dyn_layout);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&rtst_lock);
	return ret ?: count;
}

static int rtst_dyn_show(struct seq_file *m, void *v)
{
	mutex_lock(&rtst_lock);
	if (rtst_dyn_layout < 0)
		seq_puts(m, "registered=0\n");
	else
		seq_printf(m, "registered=1 layout=%c id=%u seq=%llu\n",
			   'a' + rtst_dyn_layout,
			   rtst_dyn_ev[rtst_dyn_layout].id, rtst_dyn_seq);
	mutex_unlock(&rtst_lock);
	return 0;
}

/*
 * Each CPU's clock floor, the last_ts of its buffer (module/ring.c [R6]):
 * "cpu=<c> last_ts=<ns>" per CPU with a buffer.  The test reads it with
 * nothing replacing the buffers (no clear, no geometry change) meanwhile.
 */
static int rtst_floor_show(struct seq_file *m, void *v)
{
	struct ringtrace_buffer *w;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		w = READ_ONCE(per_cpu(ringtrace_cpu_buffer, cpu));
		if (w)
			seq_printf(m, "cpu=%u last_ts=%llu\n", cpu,
				   READ_ONCE(w->last_ts));
	}
	return 0;
}

#define RTST_RW_FOPS(name)						\
static int rtst_##name##_open(struct inode *inode, struct file *file)	\
{									\
	return single_open(file, rtst_##name##_show, NULL);		\
}									\
static const struct file_operations rtst_##name##_fops = {		\
	.owner = THIS_MODULE,						\
	.open = rtst_##name##_open,					\
	.read = seq_read,						\
	.write = rtst_##name##_write,					\
	.llseek = seq_lseek,						\
	.release = single_release,					\
}

RTST_RW_FOPS(run);
RTST_RW_FOPS(nest);
RTST_RW_FOPS(oversize);
RTST_RW_FOPS(dyn);
RTST_RW_FOPS(stale);
RTST_RW_FOPS(online_burst);
DEFINE_SHOW_ATTRIBUTE(rtst_result);
DEFINE_SHOW_ATTRIBUTE(rtst_events);
DEFINE_SHOW_ATTRIBUTE(rtst_floor);

/* A crash knob's input: 0 for "1" (kstrtobool's yes), EINVAL for a no, or -errno. */
static int rtst_crash_armed(const char __user *ubuf, size_t count)
{
	bool on;
	int ret = kstrtobool_from_user(ubuf, count, &on);

	if (ret)
		return ret;
	return on ? 0 : -EINVAL;
}

/*
 * crash_panic: writing "1" panics, as sysrq c does, for the crash chains
 * (tools/tests/crash_guest.sh) on kernels built without CONFIG_MAGIC_SYSRQ
 * (the debug kernel).  Anything else is EINVAL.
 */
static ssize_t rtst_crash_panic_write(struct file *file, const char __user *ubuf,
				      size_t count, loff_t *ppos)
{
	int ret = rtst_crash_armed(ubuf, count);

	if (ret)
		return ret;
	panic("ringtrace_selftest: crash_panic\n");
}

static const struct file_operations rtst_crash_panic_fops = {
	.owner = THIS_MODULE,
	.write = rtst_crash_panic_write,
	.llseek = noop_llseek,
};

/*
 * crash_restart: writing "1" restarts the machine through
 * emergency_restart(), as sysrq b does (no panic, no reboot path), for the
 * crash chains' oops case on kernels built without CONFIG_MAGIC_SYSRQ (the
 * debug kernel).  Anything else is EINVAL.
 */
static ssize_t rtst_crash_restart_write(struct file *file,
					const char __user *ubuf, size_t count,
					loff_t *ppos)
{
	int ret = rtst_crash_armed(ubuf, count);

	if (ret)
		return ret;
	emergency_restart();
	return count;	/* not reached: the machine was reset */
}

static const struct file_operations rtst_crash_restart_fops = {
	.owner = THIS_MODULE,
	.write = rtst_crash_restart_write,
	.llseek = noop_llseek,
};

/*
 * crash_lockup: writing N (1 to 300) spins on the writing CPU with
 * preemption off for N seconds, interrupts on: what the soft-lockup
 * detector reports (and, with kernel.softlockup_panic=1, panics on) once
 * the CPU's stopper thread has not run for 2 * kernel.watchdog_thresh
 * seconds.  For the crash chains' lockup case (tools/tests/crash_guest.sh).
 * A spin the watchdog let pass returns -ETIMEDOUT.  Anything else is
 * EINVAL.
 */
static ssize_t rtst_crash_lockup_write(struct file *file, const char __user *ubuf,
				       size_t count, loff_t *ppos)
{
	unsigned int secs;
	u64 end;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &secs);
	if (ret)
		return ret;
	if (!secs || secs > 300)
		return -EINVAL;
	preempt_disable();
	end = ktime_get_mono_fast_ns() + (u64)secs * NSEC_PER_SEC;
	while (ktime_get_mono_fast_ns() < end)
		cpu_relax();
	preempt_enable();
	return -ETIMEDOUT;
}

static const struct file_operations rtst_crash_lockup_fops = {
	.owner = THIS_MODULE,
	.write = rtst_crash_lockup_write,
	.llseek = noop_llseek,
};

/*
 * crash_oops: writing "1" oopses the writing task with a NULL pointer
 * store in this module (not ringtrace.ko, and outside any ringtrace
 * writer): with kernel.panic_on_oops=0 the task dies and the kernel goes
 * on, the die notifier's kernel_panic (reason oops) is in the CPU's ring.
 * For the crash chains' oops case (tools/tests/crash_guest.sh).  This
 * module cannot be unloaded afterwards (the dead task holds the file).
 * Anything else is EINVAL.
 */
static int *rtst_crash_null;

static ssize_t rtst_crash_oops_write(struct file *file, const char __user *ubuf,
				     size_t count, loff_t *ppos)
{
	unsigned int v;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &v);
	if (ret)
		return ret;
	if (v != 1)
		return -EINVAL;
	/* Through a variable: the compiler cannot make it a trap. */
	WRITE_ONCE(*READ_ONCE(rtst_crash_null), 1);
	return count;
}

static const struct file_operations rtst_crash_oops_fops = {
	.owner = THIS_MODULE,
	.write = rtst_crash_oops_write,
	.llseek = noop_llseek,
};

#ifdef CONFIG_X86_LOCAL_APIC
/*
 * crash_nmi: writing "1" sends the writing CPU an NMI whose handler (this
 * module's, armed for that one NMI) calls nmi_panic(): a panic in NMI
 * context, as the hard-lockup detector's, for the crash chains' nmi case
 * (tools/tests/crash_guest.sh).  An NMI that did not come within a second
 * returns -ETIMEDOUT.  Anything else is EINVAL.
 */
static atomic_t rtst_crash_nmi_armed = ATOMIC_INIT(0);

static int rtst_crash_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	if (atomic_cmpxchg(&rtst_crash_nmi_armed, 1, 0) != 1)
		return NMI_DONE;
	nmi_panic(regs, "ringtrace_selftest: crash_nmi");
	return NMI_HANDLED;
}

static ssize_t rtst_crash_nmi_write(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	int ret = rtst_crash_armed(ubuf, count);

	if (ret)
		return ret;
	ret = register_nmi_handler(NMI_LOCAL, rtst_crash_nmi_handler, 0,
				   "rtst_crash_nmi");
	if (ret)
		return ret;
	atomic_set(&rtst_crash_nmi_armed, 1);
	preempt_disable();
	apic->send_IPI(smp_processor_id(), NMI_VECTOR);
	preempt_enable();
	msleep(1000);
	atomic_set(&rtst_crash_nmi_armed, 0);
	unregister_nmi_handler(NMI_LOCAL, "rtst_crash_nmi");
	return -ETIMEDOUT;
}

static const struct file_operations rtst_crash_nmi_fops = {
	.owner = THIS_MODULE,
	.write = rtst_crash_nmi_write,
	.llseek = noop_llseek,
};
#endif

static int __init rtst_init(void)
{
	unsigned int cpu, kind;
	int ret;

	rtst_cpus = kcalloc(nr_cpu_ids, sizeof(*rtst_cpus), GFP_KERNEL);
	if (!rtst_cpus)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct rtst_cpu *c = &rtst_cpus[cpu];

		hrtimer_init(&c->hrtimer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
		c->hrtimer.function = rtst_hrtimer_fn;
		timer_setup(&c->timer, rtst_timer_fn, TIMER_PINNED);
		/* Hard: runs in hard irq context on PREEMPT_RT too. */
		c->work = IRQ_WORK_INIT_HARD(rtst_irq_work_fn);
		for (kind = 0; kind < RTST_NR_KINDS; kind++)
			c->prod[kind].id = cpu * RTST_NR_KINDS + kind;
	}

	ret = ringtrace_event_register(&rtst_record_ev);
	if (ret)
		goto err_free;
	ret = ringtrace_event_register(&rtst_nest_ev);
	if (ret)
		goto err_unregister_record;
	ret = ringtrace_event_register(&rtst_blob_ev);
	if (ret)
		goto err_unregister_nest;

	rtst_dir = debugfs_create_dir(RTST_DEBUGFS_DIR, NULL);
	if (IS_ERR(rtst_dir)) {
		ret = PTR_ERR(rtst_dir);
		goto err_unregister_blob;
	}
	/* debugfs creation errors are not fatal by design (see debugfs.h). */
	debugfs_create_file("run", 0600, rtst_dir, NULL, &rtst_run_fops);
	debugfs_create_file("result", 0400, rtst_dir, NULL, &rtst_result_fops);
	debugfs_create_file("events", 0400, rtst_dir, NULL, &rtst_events_fops);
	debugfs_create_file("nest", 0600, rtst_dir, NULL, &rtst_nest_fops);
	debugfs_create_file("oversize", 0600, rtst_dir, NULL,
			    &rtst_oversize_fops);
	debugfs_create_file("dyn", 0600, rtst_dir, NULL, &rtst_dyn_fops);
	debugfs_create_file("stale", 0600, rtst_dir, NULL, &rtst_stale_fops);
	debugfs_create_file("online_burst", 0600, rtst_dir, NULL,
			    &rtst_online_burst_fops);
	debugfs_create_file("floor", 0400, rtst_dir, NULL, &rtst_floor_fops);
	debugfs_create_file("crash_panic", 0200, rtst_dir, NULL,
			    &rtst_crash_panic_fops);
	debugfs_create_file("crash_lockup", 0200, rtst_dir, NULL,
			    &rtst_crash_lockup_fops);
	debugfs_create_file("crash_oops", 0200, rtst_dir, NULL,
			    &rtst_crash_oops_fops);
	debugfs_create_file("crash_restart", 0200, rtst_dir, NULL,
			    &rtst_crash_restart_fops);
#ifdef CONFIG_X86_LOCAL_APIC
	debugfs_create_file("crash_nmi", 0200, rtst_dir, NULL,
			    &rtst_crash_nmi_fops);
#endif
	return 0;

err_unregister_blob:
	ringtrace_event_unregister(&rtst_blob_ev);
err_unregister_nest:
	ringtrace_event_unregister(&rtst_nest_ev);
err_unregister_record:
	ringtrace_event_unregister(&rtst_record_ev);
err_free:
	kfree(rtst_cpus);
	return ret;
}

/*
 * Every writer of this module is stopped synchronously before the write
 * that started it returns, and an open debugfs file holds a module
 * reference, so nothing of ours runs or is in a buffer reservation here.
 */
static void __exit rtst_exit(void)
{
	debugfs_remove_recursive(rtst_dir);
	if (rtst_dyn_layout >= 0)
		ringtrace_event_unregister(&rtst_dyn_ev[rtst_dyn_layout]);
	ringtrace_event_unregister(&rtst_blob_ev);
	ringtrace_event_unregister(&rtst_nest_ev);
	ringtrace_event_unregister(&rtst_record_ev);
	kfree(rtst_cpus);
}

module_init(rtst_init);
module_exit(rtst_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ringtrace selftest writers: every context, self-checking records");
