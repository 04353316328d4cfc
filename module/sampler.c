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
 * Starting and stopping: rtr_sampler_set_hz() sets the period, then adds a
 * dynamic cpuhp state whose online callback starts the timer on its CPU
 * (the callbacks of an AP state run on the CPU concerned) and whose
 * offline callback cancels it; 0 removes the state, which cancels every
 * timer.  So a CPU taken offline stops sampling and one brought online
 * starts, and no timer outlives the state.  Under rtr_sampler_lock.
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
	/* Written by the timer on its CPU only; read by sample_stats. */
	unsigned long samples;
	unsigned long dropped_nesting;
};

static DEFINE_PER_CPU(struct rtr_sampler_cpu, rtr_sampler_cpu);

/* Serialises sample_hz's writes and the unload; the timers never take it. */
static DEFINE_MUTEX(rtr_sampler_lock);
static unsigned int rtr_sample_hz;		/* 0: off; under the lock */
static int rtr_sampler_state;			/* the cpuhp state, while on */
/* Set before the state is added, constant while it exists. */
static u64 rtr_sample_period_ns;

static void rtr_sample(struct rtr_sampler_cpu *sc)
{
	struct pt_regs *regs = get_irq_regs();
	struct task_struct *t = current;
	struct rtr_cpu_sample *p;
	struct rtr_rsv w;
	u8 mode;

	if (unlikely(!regs) || !rtr_task_traced(t))
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
					 instruction_pointer(regs));
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

	rtr_sample(sc);
	hrtimer_forward_now(timer, ns_to_ktime(rtr_sample_period_ns));
	return HRTIMER_RESTART;
}

/* On @cpu itself (an AP state's callback), preemptible. */
static int rtr_sampler_online(unsigned int cpu)
{
	struct hrtimer *timer = &per_cpu(rtr_sampler_cpu, cpu).timer;

	hrtimer_init(timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	timer->function = rtr_sampler_fire;
	hrtimer_start(timer, ns_to_ktime(rtr_sample_period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
	return 0;
}

/* Waits for a callback running on @cpu; none runs after. */
static int rtr_sampler_offline(unsigned int cpu)
{
	hrtimer_cancel(&per_cpu(rtr_sampler_cpu, cpu).timer);
	return 0;
}

static void rtr_sampler_stop(void)
{
	lockdep_assert_held(&rtr_sampler_lock);
	if (!rtr_sample_hz)
		return;
	cpuhp_remove_state(rtr_sampler_state);
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
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "ringtrace:sampler",
				rtr_sampler_online, rtr_sampler_offline);
	if (ret < 0)
		goto out;
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

/* Since the load, over every CPU; each CPU's counts are its timer's. */
static int rtr_sample_stats_show(struct seq_file *m, void *unused)
{
	unsigned long samples = 0, dropped = 0;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		samples += READ_ONCE(per_cpu(rtr_sampler_cpu, cpu).samples);
		dropped += READ_ONCE(per_cpu(rtr_sampler_cpu,
					     cpu).dropped_nesting);
	}
	seq_printf(m, "samples %lu\ndropped_nesting %lu\n", samples, dropped);
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
