/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rt_fuzz: what the threads of the fuzzer share.
 *
 * Reproducibility.  Thread i's k-th operation draws every choice (which
 * operation, which file, which bytes, which pointer) from a generator
 * seeded with mix(seed, i, k), and nothing an operation learns feeds the
 * draws of the next one.  So one seed always replays the same operation
 * stream per thread, and --only/--ops narrow a replay to the threads and
 * the length that matter.  What no seed fixes: how the threads interleave,
 * what the kernel answers at that moment (tracing on or off, a sub-buffer
 * ready or not, a file busy), what the rest of the system traces, and how
 * many operations a thread gets through in --seconds.
 *
 * Assertions.  Each operation states what the ABI (include/uapi/linux/
 * ringtrace.h, Documentation/ringtrace/abi.rst) promises for its input:
 * the exact error when the input decides it, the set of possible results
 * when the state of the moment decides it.  Claims about state that other
 * threads change (a value read back, a refused write that changed nothing)
 * are checked only in a window where no other thread wrote a control file
 * (struct fz_window).  A failed assertion is printed with the thread's
 * recent operations and counted; the run goes on.
 */
#ifndef _RT_FUZZ_H
#define _RT_FUZZ_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <linux/ringtrace.h>

#include "../kmod/ringtrace_selftest.h"

#define FZ_MAX_CPUS		64
#define FZ_HIST			32	/* recent operations kept per thread */
#define FZ_DESC_MAX		240
#define FZ_MAX_EVENTS		64
/* Packet header (88) + extended event header (12) + the spare byte. */
#define FZ_PAYLOAD_OVERHEAD	(sizeof(struct ringtrace_packet_header) + \
				 RINGTRACE_EXTENDED_HEADER_SIZE + 1)
/* Above every user address on x86-64 (TASK_SIZE_MAX is one page less). */
#define FZ_USER_TOP		0x00007ffffffff000ULL

/* ------------------------------------------------------------------ */
/* Random numbers                                                      */
/* ------------------------------------------------------------------ */

static inline uint64_t fz_mix(uint64_t x)
{
	return rtst_mix(x);
}

/* splitmix64: one add and a mix per draw, good enough to fuzz with. */
struct fz_rng {
	uint64_t s;
};

static inline uint64_t fz_next(struct fz_rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return fz_mix(r->s);
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t fz_below(struct fz_rng *r, uint64_t n)
{
	return fz_next(r) % n;
}

static inline uint64_t fz_range(struct fz_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + fz_below(r, hi - lo + 1);
}

static inline bool fz_chance(struct fz_rng *r, unsigned int percent)
{
	return fz_below(r, 100) < percent;
}

#define fz_pick(r, arr)	((arr)[fz_below((r), sizeof(arr) / sizeof((arr)[0]))])

/* ------------------------------------------------------------------ */
/* Operations and their accounting                                     */
/* ------------------------------------------------------------------ */

#define FZ_OPS(X)							\
	X(CTL_WRITE, "ctl.write")					\
	X(CTL_REFUSED, "ctl.refused_unchanged")				\
	X(CTL_READ, "ctl.read")						\
	X(CTL_DEVNODE, "ctl.devnode")					\
	X(CTL_NOT_FILE_OPS, "ctl.mmap_ioctl_refused")			\
	X(GEOM_QUIET, "geometry.quiesced")				\
	X(GEOM_RACE, "geometry.while_open")				\
	X(TRACING_FLIP, "tracing.flip")					\
	X(INJECT_PARAM, "geometry.inject_push_nesting")			\
	X(EVENT_TOGGLE, "events.toggle")				\
	X(EVENT_SAFE, "events.no_text_patch")				\
	X(PID_FILTER, "events.pid_filter")				\
	X(DYNPROBE, "events.dynprobe")					\
	X(EVENT_STACK, "events.stack")					\
	X(FILTER, "events.filter")					\
	X(CGROUP_FILTER, "events.cgroup_filter")			\
	X(CONS_SESSION, "consumer.session")				\
	X(CONS_GET, "consumer.get_put")					\
	X(CONS_POLL, "consumer.poll")					\
	X(CONS_FLUSH, "consumer.flush")					\
	X(CONS_COUNTERS, "consumer.counters")				\
	X(CONS_SECOND, "consumer.second_open")				\
	X(IOC_VALID, "ioctl.valid")					\
	X(IOC_ARGS, "ioctl.bad_args")					\
	X(IOC_PTR, "ioctl.bad_pointer")					\
	X(IOC_CMD, "ioctl.unknown_cmd")					\
	X(IOC_SHARED, "ioctl.shared_file")				\
	X(IOC_WAKEUP, "ioctl.set_wakeup")				\
	X(IOC_OPEN, "ioctl.open")					\
	X(IOC_FILE_OPS, "ioctl.read_write_seek")			\
	X(IOC_EPOLL, "ioctl.epoll_outlives_file")			\
	X(MMAP_MAP, "mmap.map")						\
	X(MMAP_PROTECT, "mmap.mprotect")				\
	X(MMAP_REMAP, "mmap.mremap")					\
	X(MMAP_UNMAP, "mmap.munmap")					\
	X(MMAP_ADVISE, "mmap.madvise")					\
	X(MMAP_FORK, "mmap.fork")					\
	X(MMAP_GETPUT, "mmap.racing_get_put")				\
	X(MARKER, "marker.write")					\
	X(MARKER_FAULT, "marker.faulting")				\
	X(MARKER_VEC, "marker.writev")					\
	X(MARKER_SPLICE, "marker.splice")				\
	X(KMOD_RUN, "kmod.run")						\
	X(KMOD_NEST, "kmod.nest")					\
	X(KMOD_OVERSIZE, "kmod.oversize")				\
	X(KMOD_DYN, "kmod.dyn")						\
	X(RMMOD_BUSY, "module.rmmod_refused")				\
	X(RMMOD_CYCLE, "module.unload_reload")				\
	X(INSMOD_DUP, "module.insmod_loaded")				\
	X(CPU_HOTPLUG, "module.cpu_hotplug")

#define FZ_OP_ENUM(id, name)	FZ_OP_##id,
enum fz_op { FZ_OPS(FZ_OP_ENUM) FZ_NR_OPS };
#undef FZ_OP_ENUM

extern const char *const fz_op_names[FZ_NR_OPS];

struct fz_op_stats {
	uint64_t count;			/* operations run */
	uint64_t refused;		/* ended in an error (expected ones) */
	uint64_t fails;			/* assertion failures */
};

/* The threads, by role: the index is part of each thread's seed. */
enum fz_role {
	FZ_CTL0, FZ_CTL1, FZ_CHECK, FZ_GEOM, FZ_CONSUMER, FZ_IOCTL, FZ_MMAP,
	FZ_MARKER0, FZ_MARKER1, FZ_KMOD, FZ_EVENTS, FZ_MODULE, FZ_NR_ROLES
};

/*
 * Pointers a thread hands to the kernel: its own pages, so that nothing
 * another thread does moves them.
 *   scratch  3 pages read-write
 *   edge     1 page read-write, followed by
 *   none     1 page PROT_NONE (faults like an unmapped page)
 *   ro       1 page PROT_READ (filled through a brief mprotect)
 */
struct fz_mem {
	uint8_t *scratch, *edge, *none, *ro;
};

enum fz_ptr_kind {
	FZ_PTR_GOOD, FZ_PTR_NULL, FZ_PTR_UNMAPPED, FZ_PTR_KERNEL,
	FZ_PTR_NONCANON, FZ_PTR_RO, FZ_PTR_EDGE, FZ_PTR_NONE, FZ_NR_PTR
};

/* Where a buffer of @len bytes was put, and what of it the kernel can use. */
struct fz_ptr {
	enum fz_ptr_kind kind;
	void *p;
	size_t readable;		/* leading bytes that can be read */
	size_t writable;		/* leading bytes that can be written */
	bool not_user;			/* fails access_ok(): kernel or non-canonical */
};

struct fz_thread {
	unsigned int idx;
	const char *name;
	pthread_t tid;
	uint64_t k;			/* operations started */
	struct fz_rng rng;		/* this operation's draws */
	enum fz_op op;
	char desc[FZ_DESC_MAX];
	size_t desc_len;
	char hist[FZ_HIST][FZ_DESC_MAX + 64];
	struct fz_op_stats stats[FZ_NR_OPS];
	struct fz_mem mem;
	bool holds_mod;			/* fz.mod_lock read side */
	bool in_session;		/* keeps holds_mod between operations */
	void *priv;			/* the role's own state */
	char *logbuf;			/* lines waiting for --log */
	size_t loglen;
};

/* ------------------------------------------------------------------ */
/* Global state                                                        */
/* ------------------------------------------------------------------ */

/*
 * Who may hold a CPU's buffer file, for the one-opener rule:
 *   held        token of the session whose file is open: set after open()
 *               returned, cleared before close() (so: surely open while set)
 *   maybe_open  opens attempted and not yet closed, the caller's included
 *   gen         bumped at every change of maybe_open
 */
struct fz_cpu_state {
	_Atomic uint64_t held;
	atomic_int maybe_open;
	_Atomic uint64_t gen;
};

struct fz_global {
	uint64_t seed;
	unsigned int seconds;
	uint64_t max_ops;		/* per thread; 0: no limit */
	bool toggle;			/* switch tracepoint-backed events */
	bool pressure;			/* quiet geometries of 4 .. 32 MiB */
	unsigned int only;		/* bitmask of roles that run */
	const char *dbgfs;		/* /sys/kernel/debug/ringtrace */
	const char *devdir;		/* /dev/ringtrace */
	const char *ko, *st_ko;		/* for the unload/reload cycle */
	const char *tmpdir;		/* for device nodes */
	int own_pid;			/* written where the fuzzer names itself */
	FILE *log;
	pthread_mutex_t log_lock;
	unsigned int page;
	unsigned int ncpus;		/* buffer files: cpu/0 .. cpu/ncpus-1 */
	double deadline;		/* CLOCK_MONOTONIC seconds */
	atomic_bool stop;

	/*
	 * Read side: held by every operation that opens a file of ringtrace
	 * or ringtrace_selftest, and across a buffer session.  Write side:
	 * the unload/reload cycle.  Writers first (a waiting cycle stops new
	 * readers), so a cycle waits at most for the longest session.
	 */
	pthread_rwlock_t mod_lock;
	/* Read: a buffer session.  Write: a geometry change that must work. */
	pthread_rwlock_t buf_lock;

	/* Control-file writers in flight, and writes completed (fz_window). */
	atomic_int ctl_active;
	_Atomic uint64_t ctl_gen;
	/* The same as struct fz_cpu_state's, summed over the CPUs. */
	atomic_int bufs_maybe_open;
	_Atomic uint64_t bufs_gen;
	/* Forked children alive, and forks ever: children hold every fd. */
	atomic_int children;
	_Atomic uint64_t forks;
	/*
	 * CPU hotplug and ringtrace_selftest's runs, one at a time: its
	 * writers are bound to the CPUs online when a run starts.
	 */
	pthread_mutex_t hotplug_lock;
	/* Module loads since the start (0: the one run_guest.sh made). */
	_Atomic uint64_t mod_gen;
	_Atomic uint64_t tokens;
	struct fz_cpu_state cpu[FZ_MAX_CPUS];

	/* The consumer lends its file to the ioctl and mmap threads. */
	pthread_rwlock_t lend_lock;
	int lend_fd;			/* -1: nothing lent */
	int lend_cpu;

	/* Events this kernel offers (available_events), statedump ones apart. */
	char events[FZ_MAX_EVENTS][48];
	bool event_has_tp[FZ_MAX_EVENTS];
	unsigned int nevents;

	bool have_kmod;			/* ringtrace_selftest.ko loaded */
	_Atomic uint64_t fails;
	_Atomic uint64_t printed;
	/* The subbuf_size a writer saw set last (for picking marker sizes). */
	_Atomic uint64_t subbuf_hint;
	/* Markers refused for faulting (the consumer must never see one). */
	_Atomic uint64_t poison_written;
};

extern struct fz_global fz;

/* ------------------------------------------------------------------ */
/* Windows without other control-file writers                          */
/* ------------------------------------------------------------------ */

/*
 * A write to a control file (or anything that changes what they read) is
 * bracketed by fz_ctl_begin()/fz_ctl_end().  A window opened with
 * fz_window_open() is "solo" if, from its start to fz_window_solo(), no
 * writer but the caller's own (@own: 1 inside its own bracket, else 0) was
 * in flight or finished: any write overlapping the window either was still
 * in flight at one end, or bumped ctl_gen.
 */
struct fz_window {
	int active;
	uint64_t gen;
};

static inline void fz_ctl_begin(void)
{
	atomic_fetch_add(&fz.ctl_active, 1);
}

static inline void fz_ctl_end(void)
{
	atomic_fetch_add(&fz.ctl_gen, 1);
	atomic_fetch_sub(&fz.ctl_active, 1);
}

static inline void fz_window_open(struct fz_window *w)
{
	w->active = atomic_load(&fz.ctl_active);
	w->gen = atomic_load(&fz.ctl_gen);
}

static inline bool fz_window_solo(const struct fz_window *w, int own)
{
	return w->active == own && atomic_load(&fz.ctl_active) == own &&
	       atomic_load(&fz.ctl_gen) == w->gen;
}

/* ------------------------------------------------------------------ */
/* Helpers (rt_fuzz.c)                                                 */
/* ------------------------------------------------------------------ */

static inline bool fz_stopping(void)
{
	return atomic_load_explicit(&fz.stop, memory_order_relaxed);
}

/* -errno of a failed syscall, or its result. */
static inline long fz_ret(long r)
{
	return r < 0 ? -errno : r;
}

double fz_now(void);
void fz_sleep_ms(unsigned int ms);
const char *fz_err(long ret);

void fz_desc(struct fz_thread *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Count an assertion failure and say what and where. */
void fz_fail(struct fz_thread *t, const char *file, int line,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define FZ_CHECK(t, cond, ...) ({					\
	bool __ok = (cond);						\
	if (!__ok)							\
		fz_fail((t), __FILE__, __LINE__, __VA_ARGS__);		\
	__ok;								\
})

/* @got (0 or -errno) must be one of the listed values. */
bool fz_expect_in(struct fz_thread *t, const char *file, int line,
		  const char *what, long got, const int *allowed, size_t n);
#define FZ_EXPECT(t, what, got, ...)					\
	fz_expect_in((t), __FILE__, __LINE__, (what), (got),		\
		     (const int[]){ __VA_ARGS__ },			\
		     sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int))

/* An operation of kind @op starts (one thread's operation may run several). */
static inline void fz_op(struct fz_thread *t, enum fz_op op)
{
	t->op = op;
	t->stats[op].count++;
}

/* Mark the current operation as having ended in an (expected) error. */
static inline void fz_refused(struct fz_thread *t)
{
	t->stats[t->op].refused++;
}

/* The two trees: debugfs and /dev/ringtrace; @dev picks one. */
const char *fz_path(char *buf, size_t size, bool dev, const char *rel);
/* open() of a file of either tree: fd or -errno. */
int fz_open(struct fz_thread *t, bool dev, const char *rel, int flags);
/* Whole file into @buf (NUL-terminated): length or -errno. */
long fz_read(bool dev, const char *rel, char *buf, size_t size);
/* One write(2) of @len bytes from @p: its result or -errno. */
long fz_write(bool dev, const char *rel, const void *p, size_t len, int flags);
long fz_read_num(bool dev, const char *rel);

/* Memory for bad pointers. */
int fz_mem_init(struct fz_mem *m);
/*
 * Put a buffer of @len bytes where @kind says, its first bytes copied from
 * the @have bytes of @src (NULL: zeroes), and tell what of it the kernel
 * can read and write there.
 */
struct fz_ptr fz_place(struct fz_thread *t, enum fz_ptr_kind kind,
		       const void *src, size_t have, size_t len);
enum fz_ptr_kind fz_pick_ptr(struct fz_rng *r);
const char *fz_ptr_name(enum fz_ptr_kind kind);

/* Session tokens and buffer opens with the EBUSY bookkeeping. */
struct fz_open_result {
	int fd;				/* or -errno */
	uint64_t token;			/* published holder token, if opened */
};
struct fz_open_result fz_buf_open(struct fz_thread *t, unsigned int cpu,
				  bool dev, int flags, bool publish);
void fz_buf_close(unsigned int cpu, int fd, uint64_t token);
/* An open of cpu's buffer outside fz_buf_open() begins (+1) or ends (-1). */
void fz_buf_racy(unsigned int cpu, int delta);

/* mod_lock read side for one operation or a session. */
void fz_mod_hold(struct fz_thread *t);
void fz_mod_release(struct fz_thread *t);

/* Thread bodies: one operation each (fz_op() says of what kind). */
void fz_ctl_op(struct fz_thread *t);
void fz_check_op(struct fz_thread *t);
void fz_geom_op(struct fz_thread *t);
void fz_events_op(struct fz_thread *t);
/* filter.c: events/<name>/filter replaced while the probes run. */
void fz_filter_op(struct fz_thread *t);
/* cgroup.c: set_event_cgroup replaced while the probes run. */
void fz_cgroup_op(struct fz_thread *t);
void fz_consumer_op(struct fz_thread *t);
void fz_ioctl_op(struct fz_thread *t);
void fz_mmap_op(struct fz_thread *t);
void fz_marker_op(struct fz_thread *t);
void fz_kmod_op(struct fz_thread *t);
void fz_module_op(struct fz_thread *t);
/* End a role's open session (at the deadline). */
void fz_consumer_end(struct fz_thread *t);
void fz_ioctl_end(struct fz_thread *t);
void fz_mmap_end(struct fz_thread *t);

/* consumer.c: after the threads, drain everything and check the books. */
int fz_final_drain(struct fz_thread *t);
/* consumer.c: what the consumer saw. */
void fz_consumer_report(void);
/* consumer.c: 0 if @text is metadata the selftests' decoder reads. */
int fz_meta_check(const char *text);

#endif /* _RT_FUZZ_H */
