// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the CPU sampler (sample_hz, sample_stats), a profile's events.
 *
 * Each online CPU runs one hrtimer, pinned and hard (its callback runs in
 * hardirq, on PREEMPT_RT too), every NSEC_PER_SEC / sample_hz.  Its
 * callback writes a cpu_sample about what the timer interrupted:
 *
 *	int32_t tid; int32_t pid; uint8_t mode;	0 user, 1 kernel, 2 idle
 *
 * with the kernel stack as a trailer (stack.c) in kernel mode, walked from
 * the callback and cut at the interrupted ip (get_irq_regs()), so that it
 * starts where the CPU was, and the user stack (ustack.c, frame pointers
 * from the task's user registers) of a task with an mm, in either mode.
 * The idle task's samples carry no stack.  The tid and pid are in the
 * event because a profile may have no sched_switch to say who ran.  The
 * pid and cgroup filters (and -F's following of forks) apply to current,
 * as they do to the tracepoints' events.
 *
 * Starting and stopping: rtr_sampler_set_hz() sets the period, attaches
 * the sampler's own sched_switch probe (below), then adds a dynamic cpuhp
 * state whose online callback starts the timer on its CPU (the callbacks
 * of an AP state run on the CPU concerned) and whose offline callback
 * cancels it; 0 removes the state, which cancels every timer, then
 * detaches the probe.  So a CPU taken offline stops sampling and one
 * brought online starts, and no timer outlives the state.  Under
 * rtr_sampler_lock.
 *
 * Parking.  A timer that fires on a task the pid and cgroup filters drop
 * (under -p, -F or --cgroup: the idle task among them) writes nothing, and
 * nothing is written on that CPU until a kept task runs there: the timer
 * is not re-armed (parked).  rtr_sampler_switch(), the sampler's probe on
 * sched_switch, starts it again when a kept task is switched in on its
 * CPU, as the scheduler's hrtick starts its timer from __schedule(): a
 * pinned hard hrtimer of this CPU, the rq lock held and interrupts off.
 * So a CPU where nothing kept runs takes one tick, not sample_hz a
 * second.  Without a filter every task is kept (idle samples included)
 * and nothing parks.
 *
 * The rate: sample_hz samples a second of the CPU time kept tasks run.
 * Each CPU's timer counts kept time only: the probe notes when a dropped
 * stretch begins (a kept task switched out for a dropped one, @out) and
 * adds its length to @gap when it ends without the timer having fired; a
 * timer that fires on a kept task samples and delays its next expiry by
 * the dropped time it counted (owed = expiry - now + gap, at most one
 * period); one that fires on a dropped task parks, owing @left = expiry -
 * out + gap of kept time, and restarts with that much.  So a task that
 * runs in bursts shorter than the period is sampled as often as one that
 * runs them back to back.
 *
 * Who touches the per-CPU state (struct rtr_sampler_cpu): its timer's
 * callback (hardirq, on PREEMPT_RT too: the hard mode), the switch probe
 * (in __schedule(), interrupts off) and the cpuhp callbacks' sections
 * with interrupts off, all on that CPU.  None interrupts another
 * mid-update, so the fields need no atomics; sample_stats reads the
 * counters from anywhere (READ_ONCE, possibly a moment stale).
 *
 * Race windows:
 *   [S1] stop, or the CPU going offline, while the timer is parked or the
 *        probe is about to restart it: the offline callback clears @on
 *        (interrupts off) before hrtimer_cancel(); the probe restarts only
 *        when @on, on the same CPU with interrupts off, so after that
 *        store no restart happens and the cancel is the last word.  A
 *        callback re-arming itself meanwhile is what hrtimer_cancel()
 *        waits out.  Without [S1] a task switched in on a dying CPU after
 *        the offline callback would re-arm a timer the hotplug core then
 *        migrates off the CPU (hrtimers_cpu_dying()), after the state is
 *        gone.
 *   [S2] the probe racing the callback on one CPU: impossible, both run
 *        with interrupts off there (the timer is pinned), so one sees
 *        the other's writes whole: a switch-in sees @parked set by a
 *        callback that returned HRTIMER_NORESTART, and the callback never
 *        runs on a timer the probe is starting.
 *   [S3] a stale probe: tracepoint_probe_unregister() returns while the
 *        probe may still run on another CPU.  It reads that CPU's @on,
 *        cleared by the offline callback; if a new rate's online
 *        callback already ran there, it sees that callback's state whole
 *        (same CPU, interrupts off) and acts as the new probe would.
 *        The unload waits for it in rtr_probes_exit()
 *        (tracepoint_synchronize_unregister(), partner of this
 *        unregister).
 *   [S4] a filter changed while a CPU is parked: a task running there
 *        that the new filter keeps is sampled from its next switch-in
 *        (-F adds a child at its fork, before it first runs, so a
 *        followed task is never missed); a task dropped by the new
 *        filter parks the timer at its next tick.  Likewise a task
 *        moved into a kept cgroup while it runs.
 *   [S5] the period: written before the state is added and constant
 *        while it exists; an online callback reads it after the cpuhp
 *        core woke its thread (the wakeup orders the write before it),
 *        and the timer's callback after that online callback started
 *        it.  The probe does not read it: a parked timer owes @left.
 *
 * A timer whose CPU has no stack scratch left (a writer at every nesting
 * level below) skips its sample, counted as dropped_nesting.
 */
#include <linux/cpuhotplug.h>
#include <linux/hrtimer.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>
#include <asm/irq_regs.h>
#include <asm/ptrace.h>

#include "internal.h"
#include "probes.h"

enum rtr_sample_mode {
	RTR_SAMPLE_USER,
	RTR_SAMPLE_KERNEL,
	RTR_SAMPLE_IDLE,
};

struct rtr_cpu_sample {
	s32 tid;
	s32 pid;
	u8 mode;			/* enum rtr_sample_mode */
} __packed;
static_assert(sizeof(struct rtr_cpu_sample) == 9);

/* Registered after kernel_stack (probes.c): a compact id. */
struct ringtrace_event rtr_sample_event = {
	.name = "cpu_sample",
	.fields = "int32_t tid; int32_t pid; uint8_t mode;",
};

struct rtr_sampler_cpu {
	struct hrtimer timer;
	/* On its CPU only, interrupts off (the design comment). */
	bool on;			/* online callback done, offline not [S1] */
	bool parked;			/* fired on a dropped task, not re-armed */
	bool kept;			/* a kept task runs, as of the last switch */
	u64 out;			/* !kept: when the dropped stretch began */
	u64 gap;			/* dropped ns the armed timer counted */
	u64 left;			/* parked: kept ns owed to the next sample */
	/* Written on its CPU only; read by sample_stats. */
	unsigned long samples;
	unsigned long dropped_nesting;
	unsigned long ticks;		/* callbacks run */
	unsigned long parks;
};

static DEFINE_PER_CPU(struct rtr_sampler_cpu, rtr_sampler_cpu);

/* Serialises sample_hz's writes and the unload; the timers never take it. */
static DEFINE_MUTEX(rtr_sampler_lock);
static unsigned int rtr_sample_hz;		/* 0: off; under the lock */
static int rtr_sampler_state;			/* the cpuhp state, while on */
/* Set before the state is added, constant while it exists [S5]. */
static u64 rtr_sample_period_ns;
/* The kernel's sched_switch (probes.c found it); NULL: no parking. */
static struct tracepoint *rtr_sampler_tp;

/* @t is current and kept (rtr_task_traced()). */
static void rtr_sample(struct rtr_sampler_cpu *sc, struct task_struct *t)
{
	struct pt_regs *regs = get_irq_regs();
	struct rtr_cpu_sample *p;
	struct rtr_rsv w;
	u8 mode;

	if (unlikely(!regs))
		return;
	if (is_idle_task(t))
		mode = RTR_SAMPLE_IDLE;
	else
		mode = user_mode(regs) ? RTR_SAMPLE_USER : RTR_SAMPLE_KERNEL;
	if (mode != RTR_SAMPLE_IDLE && unlikely(rtr_stack_busy())) {
		WRITE_ONCE(sc->dropped_nesting, sc->dropped_nesting + 1);
		return;
	}
	w.slow = 0;
	if (mode == RTR_SAMPLE_IDLE)
		p = ringtrace_reserve(&w.r, rtr_sample_event.id, sizeof(*p));
	else	/* no user stack for a kernel thread (rtr_ustack_regs()) */
		p = rtr_stack_reserve_at(&w, rtr_sample_event.id, sizeof(*p),
					 mode == RTR_SAMPLE_KERNEL,
					 RTR_USTACK_ON,
					 instruction_pointer(regs), NULL);
	if (!p)
		return;
	p->tid = t->pid;
	p->pid = t->tgid;
	p->mode = mode;
	rtr_commit(&w);
	WRITE_ONCE(sc->samples, sc->samples + 1);
}

static enum hrtimer_restart rtr_sampler_fire(struct hrtimer *timer)
{
	struct rtr_sampler_cpu *sc = container_of(timer, struct rtr_sampler_cpu,
						  timer);
	struct task_struct *t = current;
	bool kept = rtr_task_traced(t);
	u64 period = rtr_sample_period_ns;
	s64 owed = 0;

	WRITE_ONCE(sc->ticks, sc->ticks + 1);
	if (unlikely(!rtr_sampler_tp)) {	/* no probe: a fixed rate */
		if (kept)
			rtr_sample(sc, t);
		hrtimer_forward_now(timer, ns_to_ktime(period));
		return HRTIMER_RESTART;
	}
	if (!kept) {
		/* A filter change dropped current while it ran [S4]. */
		if (sc->kept) {
			sc->kept = false;
			sc->out = ktime_get_ns();
		}
		owed = hrtimer_get_expires_ns(timer) - sc->out + sc->gap;
		sc->left = clamp_t(s64, owed, 0, period);
		sc->parked = true;
		WRITE_ONCE(sc->parks, sc->parks + 1);
		return HRTIMER_NORESTART;
	}
	if (unlikely(!sc->kept)) {	/* kept since a filter change [S4] */
		sc->kept = true;
		sc->gap += ktime_get_ns() - sc->out;
	}
	if (sc->gap) {			/* it counted dropped time: owed */
		owed = hrtimer_get_expires_ns(timer) - ktime_get_ns() +
		       sc->gap;
		sc->gap = 0;
	}
	rtr_sample(sc, t);
	hrtimer_forward_now(timer, ns_to_ktime(period));
	if (owed > 0)
		hrtimer_add_expires_ns(timer, min_t(u64, owed, period));
	return HRTIMER_RESTART;
}

/*
 * The sampler's sched_switch probe: in __schedule(), the rq lock held and
 * interrupts off, on the CPU switching.  A switch between two kept or two
 * dropped tasks costs two loads and a branch here (no filter: every task
 * is kept); the clock is read only where kept time starts or stops.
 */
static void rtr_sampler_switch(void *data, bool preempt,
			       struct task_struct *prev,
			       struct task_struct *next,
			       unsigned int prev_state)
{
	struct rtr_sampler_cpu *sc = this_cpu_ptr(&rtr_sampler_cpu);
	bool kept;
	u64 now;

	if (!READ_ONCE(sc->on))		/* [S1], [S3] */
		return;
	kept = rtr_task_traced(next);
	if (kept == sc->kept)
		return;
	sc->kept = kept;
	now = ktime_get_ns();
	if (!kept) {
		sc->out = now;
		return;
	}
	if (!sc->parked) {
		sc->gap += now - sc->out;
		return;
	}
	sc->parked = false;
	sc->gap = 0;
	/* As hrtick_start(): a pinned hard timer of this CPU, rq lock held. */
	hrtimer_start(&sc->timer, ns_to_ktime(sc->left),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

/* On @cpu itself (an AP state's callback), preemptible. */
static int rtr_sampler_online(unsigned int cpu)
{
	struct rtr_sampler_cpu *sc = &per_cpu(rtr_sampler_cpu, cpu);

	hrtimer_init(&sc->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	sc->timer.function = rtr_sampler_fire;
	/* The probe may run at any preemption point: state first, @on last. */
	local_irq_disable();
	sc->kept = rtr_task_traced(current);
	sc->out = ktime_get_ns();
	sc->gap = 0;
	sc->parked = false;
	WRITE_ONCE(sc->on, true);
	hrtimer_start(&sc->timer, ns_to_ktime(rtr_sample_period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
	local_irq_enable();
	return 0;
}

/* Waits for a callback running on @cpu; none runs, none starts, after. */
static int rtr_sampler_offline(unsigned int cpu)
{
	struct rtr_sampler_cpu *sc = &per_cpu(rtr_sampler_cpu, cpu);

	/* [S1]: read by the probe on this CPU, interrupts off. */
	WRITE_ONCE(sc->on, false);
	hrtimer_cancel(&sc->timer);
	return 0;
}

static void rtr_sampler_detach(void)
{
	if (rtr_sampler_tp)
		tracepoint_probe_unregister(rtr_sampler_tp, rtr_sampler_switch,
					    NULL);
	rtr_sampler_tp = NULL;
}

static void rtr_sampler_stop(void)
{
	lockdep_assert_held(&rtr_sampler_lock);
	if (!rtr_sample_hz)
		return;
	cpuhp_remove_state(rtr_sampler_state);
	/* [S3]: a probe may still run; the unload waits for it. */
	rtr_sampler_detach();
	rtr_sample_hz = 0;
}

/*
 * 0 stops the sampler; 1..RINGTRACE_SAMPLE_MAX_HZ (re)starts it at that
 * rate on every online CPU.  Anything else is -EINVAL, nothing changed.
 * A new rate stops the old timers first; if the new state cannot be added
 * (no dynamic cpuhp state left, no memory) the sampler stays off.
 */
int rtr_sampler_set_hz(unsigned int hz)
{
	int ret = 0;

	if (hz > RINGTRACE_SAMPLE_MAX_HZ)
		return -EINVAL;
	mutex_lock(&rtr_sampler_lock);
	if (hz == rtr_sample_hz)
		goto out;
	rtr_sampler_stop();
	if (!hz)
		goto out;
	rtr_sample_period_ns = div_u64(NSEC_PER_SEC, hz);
	/* Without the probe the timers never park (rtr_sampler_fire()). */
	check_trace_callback_type_sched_switch(rtr_sampler_switch);
	rtr_sampler_tp = rtr_probes[RTR_PROBE_SCHED_SWITCH].tp;
	if (rtr_sampler_tp) {
		ret = tracepoint_probe_register(rtr_sampler_tp,
						rtr_sampler_switch, NULL);
		if (ret) {
			rtr_sampler_tp = NULL;
			goto out;
		}
	}
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "ringtrace:sampler",
				rtr_sampler_online, rtr_sampler_offline);
	if (ret < 0) {
		rtr_sampler_detach();
		goto out;
	}
	rtr_sampler_state = ret;
	rtr_sample_hz = hz;
	ret = 0;
out:
	mutex_unlock(&rtr_sampler_lock);
	return ret;
}

/* At unload, before the event goes: no timer runs after this. */
void rtr_sampler_exit(void)
{
	mutex_lock(&rtr_sampler_lock);
	rtr_sampler_stop();
	mutex_unlock(&rtr_sampler_lock);
}

/* --- sample_hz, sample_stats ------------------------------------------- */

static int rtr_sample_hz_show(struct seq_file *m, void *unused)
{
	mutex_lock(&rtr_sampler_lock);
	seq_printf(m, "%u\n", rtr_sample_hz);
	mutex_unlock(&rtr_sampler_lock);
	return 0;
}

static int rtr_sample_hz_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_sample_hz_show);
}

static ssize_t rtr_sample_hz_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	unsigned int hz;
	char word[12];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (!ret)
		ret = kstrtouint(word, 10, &hz) ? -EINVAL :
		      rtr_sampler_set_hz(hz);
	return ret ?: count;
}

static const struct file_operations rtr_sample_hz_fops = {
	.owner = THIS_MODULE,
	.open = rtr_sample_hz_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_sample_hz_write,
};

/*
 * Since the load: the totals over every CPU, then each possible CPU's
 * timer: its callbacks (ticks) and how often it parked.
 */
static int rtr_sample_stats_show(struct seq_file *m, void *unused)
{
	unsigned long samples = 0, dropped = 0, ticks = 0, parks = 0;
	struct rtr_sampler_cpu *sc;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		sc = &per_cpu(rtr_sampler_cpu, cpu);
		samples += READ_ONCE(sc->samples);
		dropped += READ_ONCE(sc->dropped_nesting);
		ticks += READ_ONCE(sc->ticks);
		parks += READ_ONCE(sc->parks);
	}
	seq_printf(m, "samples %lu\ndropped_nesting %lu\nticks %lu\nparks %lu\n",
		   samples, dropped, ticks, parks);
	for_each_possible_cpu(cpu) {
		sc = &per_cpu(rtr_sampler_cpu, cpu);
		seq_printf(m, "cpu%u ticks %lu parks %lu\n", cpu,
			   READ_ONCE(sc->ticks), READ_ONCE(sc->parks));
	}
	return 0;
}

static int rtr_sample_stats_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_sample_stats_show);
}

static const struct file_operations rtr_sample_stats_fops = {
	.owner = THIS_MODULE,
	.open = rtr_sample_stats_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

int rtr_sampler_files_init(void)
{
	return rtr_file_create(rtr_dir, "sample_hz", 0600, NULL,
			       &rtr_sample_hz_fops) ?:
	       rtr_file_create(rtr_dir, "sample_stats", 0400, NULL,
			       &rtr_sample_stats_fops);
}
