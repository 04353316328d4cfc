// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: triggers, the flight recorder's "save it now".
 *
 *   events/<name>/trigger   "none", or the condition in force: the same
 *                           grammar and fields as events/<name>/filter
 *                           (filter.c compiles and verifies it; the same
 *                           program runs; the same rtr_pred_fops serve
 *                           the file).  Every tracepoint event with a
 *                           filter file, every dynamic probe's event
 *                           (dynprobes.c), and ringtrace_marker, on its
 *                           fields "data" and "comm".
 *   triggered               the hit: "state armed" or "state hit" and
 *                           what fired (event, trigger, cpu, timestamp),
 *                           and the counts; poll: EPOLLIN | EPOLLPRI
 *                           while a hit waits.  Writes: "rearm", "reset",
 *                           "mark" (below).
 *
 * The decision is the writer's, at the event: a probe runs the trigger's
 * program on the values its filter sees (rtr_filtered(), after the filter
 * passed), the marker file on the marker's text.  A match whose event is
 * then written -- reserved and committed: not dropped as full, held,
 * nested or too big -- is a hit: counted once the event is committed,
 * and, if the one slot is armed, latched there (which event, on which
 * CPU, when) and the consumer is woken.  So every hit's event is in the
 * buffer when the hit is seen, the latched one included, and a snapshot
 * taken then holds it (in overwrite mode, until the ring wraps past it:
 * tracing goes on after a hit, and the flight recorder keeps its last
 * buffer's worth of events, the hit's as any other).  The
 * consumer -- ringtrace record --trigger, ringtraced --trigger -- waits
 * as long as it was told, writes "mark" (the kernel writes a marker
 * "ringtrace trigger: ..." naming the hit into the buffers: it ends the
 * snapshot), takes what the buffers hold as a trace directory of its own
 * (the drain of `ringtrace snapshot`), and writes "rearm".  Hits while the
 * slot is latched are counted as "missed": never lost silently.
 *
 * The slot, written from any context (NMI included) with no lock and no
 * allocation:
 *
 *   state  ARMED --cmpxchg (a writer)--> FILLING --release [T1]--> HIT
 *          HIT --"rearm"/"reset" (the consumer)--> ARMED
 *
 * Only the writer that won the cmpxchg fills the slot's fields, and only
 * the consumer, after it saw HIT with an acquire load [T1], reads them and
 * moves the state back.  A writer that finds FILLING or HIT counts a miss.
 * Nested writers (an interrupt or NMI inside a probe) latch in the order
 * their events commit: an inner event that hits between the outer one's
 * commit and its latch takes the slot, and the outer one counts as
 * missed.  Whichever latches, its event is written.
 *
 * The wakeup goes through irq_work [T2]: a waitqueue cannot be woken from
 * NMI, nor, on PREEMPT_RT, from hard interrupt context (the irq_work runs
 * in a thread there).  As for the buffers' wakeup (ring.c [W1]), only
 * while the CPU that latches is up (its buffer's irq_wakeup): an irq_work
 * queued on a CPU past its last run of them would stay pending for good
 * (and irq_work_sync() at unload would wait forever).  A hit on a CPU
 * while it comes up, before its online callback, queues nothing: the
 * callback wakes the waiters (rtr_trigger_cpu_online()).  A CPU going
 * down runs the one it may hold (rtr_trigger_cpu_offline()); a hit on it
 * after that is woken for once it is dead (rtr_trigger_cpu_dead()).
 *
 * The slot's readers (the triggered file, "mark") and the consumer's
 * moves back to ARMED ("rearm", "reset") hold rtr_probes_lock: while a
 * reader holds it the state stays HIT, so no writer refills the fields
 * under it [T3].
 *
 * [T4] Every writer evaluates its condition, reserves, commits and fires
 * its hit in one preempt-off section: a probe's is its tracepoint's or
 * its handler's, the marker file's is the reservation's, kept off past
 * the commit until the hit is fired.  Stopping tracing waits for every
 * such section (ring.c [R3]) before anything is reset, cleared or
 * freed, so a hit belongs to the trace its event was committed to: none
 * latches after a stop, or in the next trace, and rtr_trigger_hit()'s
 * buffer is not replaced under it.
 *
 * The conditions are replaced under rtr_probes_lock and RCU exactly as the
 * filters are (filter.c [F1]), and read, the marker's too, in the
 * writer's preempt-off section.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "internal.h"
#include "probes.h"

/* [T2] irq_work: wakes the consumer's poll. */
static void rtr_trigger_wakeup(struct irq_work *work);

enum {
	RTR_TRIG_ARMED,
	RTR_TRIG_FILLING,
	RTR_TRIG_HIT,
};

static struct {
	/* Written by the writer that latched the hit, read after [T1]. */
	atomic_t state;
	u32 event;			/* the event's id */
	u32 cpu;
	u64 ts;				/* trace clock, as the event's */
	/* Any writer. */
	atomic64_t hits;		/* every match whose event was committed */
	atomic64_t missed;		/* of them, while a hit was latched */
	/* The consumer side. */
	struct irq_work wakeup;
	wait_queue_head_t waitq;
} rtr_trig = {
	.state = ATOMIC_INIT(RTR_TRIG_ARMED),
	.wakeup = IRQ_WORK_INIT(rtr_trigger_wakeup),
	.waitq = __WAIT_QUEUE_HEAD_INITIALIZER(rtr_trig.waitq),
};

/* The marker's condition, and its file events/ringtrace_marker/trigger. */
static struct rtr_filter __rcu *rtr_marker_cond;
static char *rtr_marker_cond_err;

static struct rtr_pred_file rtr_marker_cond_file = {
	.prog = &rtr_marker_cond,
	.err = &rtr_marker_cond_err,
	.ff = rtr_ff_marker,
	.nff = RTR_NR_FF_MARKER,
};


/* --- the writer's side (any context) ------------------------------------ */

static void rtr_trigger_wakeup(struct irq_work *work)
{
	wake_up_all(&rtr_trig.waitq);
}

/*
 * The event @event_id that matched its trigger was written on @cpu: a hit.
 * Called after the event's commit, in the preempt-off section of the
 * writer that reserved and committed it [T4].  The time is the trace
 * clock's now: at or after the event's own timestamp.
 */
void rtr_trigger_hit(unsigned int event_id, unsigned int cpu)
{
	struct rtr_buffer *buf;

	atomic64_inc(&rtr_trig.hits);
	if (atomic_cmpxchg(&rtr_trig.state, RTR_TRIG_ARMED,
			   RTR_TRIG_FILLING) != RTR_TRIG_ARMED) {
		atomic64_inc(&rtr_trig.missed);
		return;
	}
	rtr_trig.event = event_id;
	rtr_trig.cpu = cpu;
	rtr_trig.ts = ringtrace_clock();
	/* [T1] Pairs with atomic_read_acquire() in rtr_trigger_latched(). */
	atomic_set_release(&rtr_trig.state, RTR_TRIG_HIT);
	/* [T2] This CPU's irq_work, if it still (or already) runs them. */
	buf = rtr_cpu_buffer(raw_smp_processor_id());
	if (likely(buf && READ_ONCE(buf->irq_wakeup)))
		irq_work_queue(&rtr_trig.wakeup);
}

/*
 * Does the marker @data (its text, NUL-terminated) match the marker's
 * trigger?  From the marker file's write(), in the preempt-off section
 * that then reserves and commits the marker: the condition is read under
 * RCU-sched as the probes' are [F1], and the write fires the hit after
 * its commit, in the same section [T4].
 */
bool rtr_marker_matched(const char *data)
{
	const union rtr_fval v[] = { RTR_FS(data), RTR_FS(current->comm) };
	const struct rtr_filter *t = rcu_dereference_sched(rtr_marker_cond);

	static_assert(ARRAY_SIZE(v) == ARRAY_SIZE(rtr_ff_marker));
	return unlikely(t) && rtr_filter_match(t, v);
}

/* --- triggered ------------------------------------------------------------ */

static bool rtr_trigger_latched(void)
{
	/* [T1] Pairs with atomic_set_release() in rtr_trigger_hit(). */
	return atomic_read_acquire(&rtr_trig.state) == RTR_TRIG_HIT;
}

/*
 * The readers' lock [T3]: rtr_probes_lock, which also keeps every
 * trigger's text, and, outside it, rtr_dynprobes_lock, which keeps the
 * dynamic probes (dynprobes.c says why in that order).
 */
static void rtr_trigger_lock(void)
{
	mutex_lock(&rtr_dynprobes_lock);
	mutex_lock(&rtr_probes_lock);
}

static void rtr_trigger_unlock(void)
{
	mutex_unlock(&rtr_probes_lock);
	mutex_unlock(&rtr_dynprobes_lock);
}

/*
 * The event's name (its declaration's: dynamic probes' events too, also
 * once removed) and its trigger's text; under rtr_trigger_lock().
 */
static void rtr_trigger_describe(u32 id, const char **name, const char **text)
{
	struct rtr_filter __rcu **slot = NULL;
	const struct rtr_filter *t = NULL;
	unsigned int i;

	*name = rtr_event_name(id) ?: "(unknown)";
	if (id == RINGTRACE_EVENT_MARKER)
		slot = &rtr_marker_cond;
	for (i = 0; !slot && i < RTR_NR_PROBES; i++)
		if (rtr_probe_available(&rtr_probes[i]) &&
		    rtr_probes[i].event.id == id)
			slot = &rtr_probes[i].trigger;
	if (!slot)
		slot = rtr_dynprobe_trigger(id);
	if (slot)
		t = rcu_dereference_protected(*slot,
					      lockdep_is_held(&rtr_probes_lock));
	/*
	 * Cleared, or the probe removed, since the hit: say so.  A dynamic
	 * probe removed and made again took its id back: the new one's.
	 */
	*text = t ? rtr_filter_text(t) : slot ? "(cleared since)" :
		"(probe removed since)";
}

/*
 * Fault injection for the selftests: with inject_triggered_read_delay=N,
 * a read of triggered that finds a hit sleeps N ms between the hit's cpu
 * and its timestamp, holding rtr_probes_lock: the read of the slot's
 * fields, a few instructions, in which "rearm" must not let a writer
 * refill the slot [T3].  Off (0) by default; at most
 * RTR_INJECT_DELAY_MAX ms.
 */

static unsigned int rtr_inject_triggered_read_delay;
module_param_named(inject_triggered_read_delay,
		   rtr_inject_triggered_read_delay, uint, 0600);
MODULE_PARM_DESC(inject_triggered_read_delay,
		 "test only: ms a read of triggered sleeps inside the hit it reads (0.."
		 __stringify(RTR_INJECT_DELAY_MAX) ")");

static int rtr_triggered_show(struct seq_file *m, void *unused)
{
	const char *name, *text;
	unsigned int delay;
	u32 cpu;

	rtr_trigger_lock();
	if (rtr_trigger_latched()) {
		rtr_trigger_describe(rtr_trig.event, &name, &text);
		cpu = rtr_trig.cpu;
		delay = READ_ONCE(rtr_inject_triggered_read_delay);
		if (unlikely(delay))
			msleep(min(delay, RTR_INJECT_DELAY_MAX));
		seq_printf(m, "state hit\nevent %s\ntrigger %s\ncpu %u\ntimestamp %llu\n",
			   name, text, cpu, rtr_trig.ts);
	} else {
		seq_puts(m, "state armed\n");
	}
	seq_printf(m, "hits %lld\nmissed %lld\n",
		   (s64)atomic64_read(&rtr_trig.hits),
		   (s64)atomic64_read(&rtr_trig.missed));
	rtr_trigger_unlock();
	return 0;
}

static int rtr_triggered_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_triggered_show);
}

/*
 * "mark": the marker that ends a snapshot, written into the caller's
 * CPU's buffer: "ringtrace trigger: EVENT: TRIGGER (cpu C, timestamp T,
 * missed M)".  Written with ringtrace_write(), not through the marker
 * file: it does not run the marker's trigger.
 */
struct rtr_trigger_marker {
	u16 len;
	char data[RTR_FILTER_ERR_MAX + 160];
} __packed;

static int rtr_trigger_mark(void)
{
	struct rtr_trigger_marker *p;
	const char *name, *text;
	int ret = 0, n;

	p = kmalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	rtr_trigger_lock();
	if (!rtr_trigger_latched()) {
		ret = -ENOENT;
		goto unlock;
	}
	rtr_trigger_describe(rtr_trig.event, &name, &text);
	n = scnprintf(p->data, sizeof(p->data),
		      "ringtrace trigger: %s: %s (cpu %u, timestamp %llu, missed %lld)",
		      name, text, rtr_trig.cpu, rtr_trig.ts,
		      (s64)atomic64_read(&rtr_trig.missed));
	p->len = n;
	if (!ringtrace_write(rtr_marker_event.id, p, sizeof(p->len) + n))
		ret = -ENOSPC;
unlock:
	rtr_trigger_unlock();
	kfree(p);
	return ret;
}

/*
 * "rearm" and "reset": the consumer moves HIT back to ARMED under the
 * readers' rtr_probes_lock [T3], so that a read in progress keeps
 * describing the hit it found; writers move the state only from ARMED.
 * "rearm" with nothing latched: -ENOENT.  A writer half way through
 * filling keeps its slot.
 */
static int rtr_trigger_rearm(bool reset)
{
	int ret = 0;

	mutex_lock(&rtr_probes_lock);
	if (atomic_cmpxchg(&rtr_trig.state, RTR_TRIG_HIT,
			   RTR_TRIG_ARMED) != RTR_TRIG_HIT && !reset)
		ret = -ENOENT;
	if (reset) {
		atomic64_set(&rtr_trig.hits, 0);
		atomic64_set(&rtr_trig.missed, 0);
	}
	mutex_unlock(&rtr_probes_lock);
	return ret;
}

static ssize_t rtr_triggered_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char word[16];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (ret)
		return ret;
	if (!strcmp(word, "mark"))
		ret = rtr_trigger_mark();
	else if (!strcmp(word, "rearm"))
		ret = rtr_trigger_rearm(false);
	else if (!strcmp(word, "reset"))
		ret = rtr_trigger_rearm(true);
	else
		ret = -EINVAL;
	return ret ?: count;
}

static __poll_t rtr_triggered_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &rtr_trig.waitq, wait);
	return rtr_trigger_latched() ? EPOLLIN | EPOLLRDNORM | EPOLLPRI : 0;
}

static const struct file_operations rtr_triggered_fops = {
	.owner = THIS_MODULE,
	.open = rtr_triggered_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_triggered_write,
	.poll = rtr_triggered_poll,
};

/* --- CPU hotplug ------------------------------------------------------------ */

/*
 * On a CPU that came up, once its buffer queues wakeups again
 * (rtr_buffer_set_irq_wakeup()): a hit on it before that -- from the
 * interrupts and threads it ran while coming up -- queued no wakeup [T2].
 * Such a hit ran on this CPU before the irq_wakeup store, so the acquire
 * load below sees it; a later one queues its own irq_work.
 */
void rtr_trigger_cpu_online(void)
{
	if (rtr_trigger_latched())
		wake_up_all(&rtr_trig.waitq);
}

/*
 * On a CPU going down, after its buffer stopped queueing wakeups: the
 * trigger's, if it is pending here, runs before the CPU stops running
 * them.
 */
void rtr_trigger_cpu_offline(void)
{
	irq_work_sync(&rtr_trig.wakeup);
}

/* On another CPU once one is dead: a hit there after its offline callback. */
void rtr_trigger_cpu_dead(void)
{
	if (rtr_trigger_latched())
		wake_up_all(&rtr_trig.waitq);
}

/* --- setup ------------------------------------------------------------------ */

/* @dir: events/ringtrace_marker/, where the marker's trigger goes. */
int rtr_triggers_init(struct dentry *dir)
{
	char path[80];

	snprintf(path, sizeof(path), "events/%s/trigger", rtr_marker_event.name);
	return rtr_file_create(dir, path, 0600, &rtr_marker_cond_file,
			       &rtr_pred_fops) ?:
	       rtr_file_create(rtr_dir, "triggered", 0600, NULL,
			       &rtr_triggered_fops);
}

/*
 * Once no probe runs and no file is open (module unload): the marker's
 * condition (filter.c [F2]), and the wakeup a last hit may have queued.
 */
void rtr_triggers_exit(void)
{
	irq_work_sync(&rtr_trig.wakeup);
	rtr_pred_free(&rtr_marker_cond, &rtr_marker_cond_err);
}
