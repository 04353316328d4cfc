/* SPDX-License-Identifier: GPL-2.0 */
/* Declarations shared by the files of ringtrace.ko; not an API. */
#ifndef _RINGTRACE_INTERNAL_H
#define _RINGTRACE_INTERNAL_H

#include <linux/cache.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/ringtrace.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/stringify.h>
#include <linux/uuid.h>
#include <linux/wait.h>
#include <uapi/linux/ringtrace_persist.h>

/*
 * 4 MiB per CPU in 64 packets of 64 KiB.  A packet reaches the consumer
 * after 64 KiB, and while the consumer holds one the writers still have
 * 63/64 of the ring: room for a consumer that falls behind for a moment,
 * for ~0.5 ns per event of sub-buffer switches.  4 MiB rather than the
 * 1 MiB before: with a system-call loop on every CPU (then ~64 bytes a
 * syscall_entry + exit pair) 1 MiB lasted ~0.1 s, less than a drain
 * thread waited for a CPU at times, and events were lost where LTTng
 * (4 MiB per CPU by default) lost none.  The storm part of
 * Documentation/ringtrace/benchmarks.rst has the measurements.
 */
#define RTR_DEFAULT_SUBBUF_SIZE	(64UL << 10)
#define RTR_DEFAULT_NUM_SUBBUFS	64
#define RTR_POS_HELD		((unsigned long)RINGTRACE_POS_HELD)

/* The longest wait, in ms, a test's delay injection may ask for. */
#define RTR_INJECT_DELAY_MAX	3000

/* What the slow path and the consumer keep per slot, beside its counters. */
struct rtr_slot_info {
	/* Cumulative lost count (all but overruns) when the packet closed. */
	u64 discarded;
	/*
	 * slot->events and the slot's trailers when its last generation was
	 * retired: written only by whoever retires it (the consumer at PUT,
	 * the owning CPU's overwrite push), while no writer can open the
	 * slot [B2][B5].
	 */
	unsigned long retired;
	unsigned long retired_trailers;
};

/*
 * One CPU's buffer.  @w is what the inline writers of <linux/ringtrace.h>
 * see (ringtrace_cpu_buffer points at it); the rest is the slow path's and
 * the consumer's.  Fields are grouped by who touches them.
 */
struct rtr_buffer {
	struct ringtrace_buffer w;	/* first: the writers' view */

	/* Read-mostly, set at allocation (@overwrite: by the mode switch). */
	unsigned int max_payload;	/* largest payload that can fit */
	unsigned int cpu;
	bool overwrite;

	/* Writer slow path, owning CPU only (see "Counting" in ring.c). */
	local_t lost_full ____cacheline_aligned_in_smp;
	local_t lost_overrun;
	local_t lost_held;
	local_t lost_nested;
	local_t lost_too_big;
	local_t lost_reported;		/* discarded count of the newest close */
	int retiring;			/* an overwrite push is in its window [R2] */
	int disabled;			/* an invariant broke: no more writes */
	/* The owner CPU is up: completed packets wake through irq_work [W1]. */
	bool irq_wakeup;

	/* Shared between the writer slow path and the consumer. */
	atomic_long_t consumed ____cacheline_aligned_in_smp;
	struct rtr_slot_info *slot_info;
	/*
	 * Packets waiting before a completion wakes the consumer [W3]: 1
	 * (every packet) until the consumer's SET_WAKEUP; back to 1 when it
	 * closes the file.  Read by the writer's completion and by poll.
	 */
	unsigned int wakeup_packets;

	/* Consumer side, serialised by consumer_lock. */
	struct mutex consumer_lock ____cacheline_aligned_in_smp;
	u64 delivered;
	u64 subbufs_delivered;
	u64 bytes_delivered;
	bool open;			/* one consumer at a time; control lock */
	/*
	 * Where the recording began, which GET numbers packets and counts
	 * losses from: a position and the events lost before it.  Moved by
	 * rtr_buffer_rebase() alone, when a consumer opens the file.
	 */
	unsigned long origin;
	u64 discarded_origin;
	/*
	 * The held packet's owners (splice.c [S1]): RTR_SPLICE_OWNER while
	 * its consumer holds it, plus one per pipe buffer of its pages.  Set
	 * and tested by GET, PUT and splice under consumer_lock; dropped by
	 * the pipe's release, from anywhere.
	 */
	atomic_t splice_refs;
	/* Serialises flushes of this buffer that do not run as a writer. */
	struct mutex flush_lock;

	wait_queue_head_t waitq;
	struct irq_work wakeup;		/* deferred wakeup [W1] */
	/*
	 * Serialises the meta page's snapshots (rtr_meta_update()), whose
	 * writers nothing else serialises: the wakeup irq_work, GET and
	 * PUT, flushes from the control file and from hotplug [W2].  Raw:
	 * without PREEMPT_RT the irq_work runs in hard interrupt context.
	 */
	raw_spinlock_t meta_lock;

	/* Memory. */
	struct ringtrace_meta *meta;	/* page 0 of pages[] */
	struct page **pages;
	unsigned int nr_pages;
	bool persist;			/* counters and pages in a slice */
};

static inline struct rtr_buffer *rtr_buf(struct ringtrace_buffer *w)
{
	return container_of(w, struct rtr_buffer, w);
}

/* The buffer of @cpu, or NULL: only CPUs online since load have one. */
static inline struct rtr_buffer *rtr_cpu_buffer(unsigned int cpu)
{
	struct ringtrace_buffer *w = READ_ONCE(per_cpu(ringtrace_cpu_buffer, cpu));

	return w ? rtr_buf(w) : NULL;
}

/* The first CPU after @cpu that has a buffer (in *@buf), or nr_cpu_ids. */
static inline unsigned int rtr_next_buffer(int cpu, struct rtr_buffer **buf)
{
	unsigned int next = cpu;

	for (;;) {
		next = cpumask_next((int)next, cpu_possible_mask);
		if (next >= nr_cpu_ids)
			return next;
		*buf = rtr_cpu_buffer(next);
		if (*buf)
			return next;
	}
}

/* Every CPU that has a buffer, and its buffer. */
#define for_each_rtr_buffer(cpu, buf)					\
	for ((cpu) = rtr_next_buffer(-1, &(buf)); (cpu) < nr_cpu_ids;	\
	     (cpu) = rtr_next_buffer((cpu), &(buf)))

/* main.c: global state, changed only under rtr_control_lock. */
struct rtr_trace_state {
	unsigned long subbuf_size;
	unsigned int num_subbufs;
	bool overwrite;
	bool tracing_on;
	unsigned int open_buffers;	/* cpu buffer files open */
	u8 uuid[UUID_SIZE];		/* this trace's uuid */
};

extern struct rtr_trace_state rtr_trace;
extern struct mutex rtr_control_lock;
/*
 * Tracing is off and every writer that saw it on has finished [R3]: a
 * buffer may then be flushed from any CPU.  Written under rtr_control_lock,
 * read locklessly by the consumer's GET and poll.
 */
extern bool rtr_stopped;

static inline bool rtr_is_stopped(void)
{
	/* [B4] Pairs with smp_store_release() in rtr_quiesce(). */
	return smp_load_acquire(&rtr_stopped);
}

int rtr_set_tracing(bool on);
int rtr_set_mode(bool overwrite);
int rtr_set_geometry(unsigned long subbuf_size, unsigned int num_subbufs);
int rtr_clear(void);

/*
 * A slice of the persistent region (persist.c): where one CPU's counters
 * (slots, trailers, slot_info, in that order) and ring (meta page, then
 * the sub-buffers) live, mapped, and the ring's first page frame.
 */
struct rtr_slice {
	struct ringtrace_slot *counters;
	struct ringtrace_meta *ring;
	unsigned long ring_pfn;
};

/* ring.c: one CPU's buffer. */
struct rtr_buffer *rtr_buffer_alloc(unsigned int cpu, unsigned long subbuf_size,
				    unsigned int num_subbufs, bool overwrite,
				    bool killable, const struct rtr_slice *slice);
void rtr_buffer_carve(struct rtr_buffer *buf);
void rtr_buffer_idle(struct rtr_buffer *buf);
void rtr_buffer_free(struct rtr_buffer *buf);
unsigned long rtr_buffer_counters_size(unsigned int num_subbufs);
unsigned long rtr_buffer_pages(unsigned long subbuf_size,
			       unsigned int num_subbufs);
void rtr_buffer_flush(struct rtr_buffer *buf);
void rtr_buffer_wake(struct rtr_buffer *buf);
int rtr_buffer_get(struct rtr_buffer *buf, struct ringtrace_subbuf *sb);
int rtr_buffer_put(struct rtr_buffer *buf, u64 pos);
void rtr_buffer_unhold(struct rtr_buffer *buf);
void rtr_buffer_hand_back(struct rtr_buffer *buf);
unsigned long rtr_buffer_held_content(struct rtr_buffer *buf,
				      unsigned long cons);
void rtr_buffer_rebase(struct rtr_buffer *buf);
void rtr_buffer_set_mode(struct rtr_buffer *buf, bool overwrite);
unsigned long rtr_waiting(struct rtr_buffer *buf);
bool rtr_buffer_ready(struct rtr_buffer *buf);
bool rtr_buffer_flush_wanted(struct rtr_buffer *buf);
bool rtr_buffer_drained(struct rtr_buffer *buf);
void rtr_buffer_stats(struct rtr_buffer *buf, struct ringtrace_stats *st);
void rtr_buffer_positions(struct rtr_buffer *buf, struct ringtrace_positions *p);
void rtr_buffer_set_irq_wakeup(struct rtr_buffer *buf, bool on);

/*
 * persist.c: the persistent region, when the module was loaded with one.
 * Called under cpus_read_lock() (or the hotplug lock's write side) and,
 * but for init and exit, rtr_control_lock.
 */
struct rtr_persist_layout {
	unsigned long subbuf_size;
	unsigned int num_subbufs;
	unsigned int nr_slices;
	u64 counters_size;		/* of one slice */
	u64 slice_size;
	u64 state_offset, state_size;
	u64 slices_offset, slices_size;
	u64 metadata_offset[2], metadata_size;
	u64 ksyms_offset[2], ksyms_size;
	u64 rings_offset, rings_size;
};

int rtr_persist_init(void);
void rtr_persist_init_undo(void);
void rtr_persist_exit(void);
bool rtr_persist_live(void);
int rtr_persist_fit(struct rtr_persist_layout *l, unsigned long subbuf_size,
		    unsigned int num_subbufs);
bool rtr_persist_slice(const struct rtr_persist_layout *l, unsigned int cpu,
		       struct rtr_slice *slice);
const struct rtr_persist_layout *rtr_persist_current(void);
void rtr_persist_commit(const struct rtr_persist_layout *l, bool arm);
void rtr_persist_hooks_init(void);
void rtr_persist_hooks_exit(void);

/* crash.c: the kernel_panic event, and the crash path's hooks. */
int rtr_crash_event_init(void);
void rtr_crash_event_exit(void);
void rtr_crash_init(void *va, size_t size, const int *slice_of);
void rtr_crash_exit(void);
void rtr_crash_arm(struct ringtrace_persist_state *st, unsigned int nr_slices);
void rtr_crash_disarm(void);
int rtr_persist_files_init(void);
void rtr_persist_events_changed(void);
void rtr_persist_metadata_read(const char *text, size_t len, u64 events_gen);
/* main.c: a new set of buffers, in the region's slices when @l is given. */
int rtr_replace_buffers(unsigned long subbuf_size, unsigned int num_subbufs,
			const struct rtr_persist_layout *l, bool arm);

/* ctf.c: event registry and TSDL metadata. */
extern u64 rtr_events_gen;		/* see struct ringtrace_meta */
int rtr_events_init(void);
void rtr_events_exit(void);
int rtr_metadata_show(struct seq_file *m, void *unused);
u64 rtr_metadata_print(struct seq_file *m);
const char *rtr_event_name(unsigned int id);
extern struct ringtrace_event rtr_marker_event;

/*
 * files.c: every control and buffer file exists twice with the same
 * operations -- in debugfs under /sys/kernel/debug/ringtrace/, and as a
 * character device under /dev/ringtrace/, which Secure Boot's lockdown
 * does not refuse.  Open handlers find their file's data with
 * rtr_file_data() whichever tree the inode belongs to, and begin with
 * rtr_file_open() (or rtr_single_open(), which calls it).
 */
struct dentry;
extern struct dentry *rtr_dir;		/* /sys/kernel/debug/ringtrace */
int rtr_files_init(void);
void rtr_files_publish(void);
void rtr_files_exit(void);
void rtr_files_abort(void);
int rtr_file_open(void);
int rtr_single_open(struct inode *inode, struct file *file,
		    int (*show)(struct seq_file *, void *));
struct dentry *rtr_files_mkdir(struct dentry *parent, const char *name);
int rtr_file_create(struct dentry *dir, const char *path, umode_t mode,
		    void *data, const struct file_operations *fops);
void *rtr_file_data(const struct inode *inode);

/* control.c: the control files; buffer_file.c: cpu/<N>/buffer. */
int rtr_control_files_init(void);
extern const struct file_operations rtr_buffer_fops;

/*
 * splice.c: the held packet's pages handed to a pipe.  A consumer holds a
 * packet with RTR_SPLICE_OWNER references (large enough that pipe buffers
 * never reach it); rtr_splice_busy(): some pipe still holds pages of a
 * buffer, so the buffers must not be replaced.  Control lock held.
 */
#define RTR_SPLICE_OWNER	(1 << 30)
struct pipe_inode_info;
ssize_t rtr_buffer_splice_read(struct file *file, loff_t *ppos,
			       struct pipe_inode_info *pipe, size_t len,
			       unsigned int flags);
bool rtr_splice_busy(void);

/* No consumer and no pipe holds any buffer's pages.  Control lock held. */
static inline bool rtr_buffers_idle(void)
{
	return !rtr_trace.open_buffers && !rtr_splice_busy();
}
/* A short control word from userspace, NUL-terminated, blanks trimmed. */
int rtr_read_word(const char __user *ubuf, size_t count, char *word,
		  size_t size);
int rtr_parse_bit(const char *word, bool *bit);

#endif /* _RINGTRACE_INTERNAL_H */
