// SPDX-License-Identifier: GPL-2.0
/*
 * Draining: one thread per recorded CPU, each on its own buffer file.
 *
 *   loop:  poll(buffer fd, request eventfd)
 *          readable -> GET_SUBBUF, write the packet as a stored frame
 *                      (chunks.c: spliced, or one pwritev() from the
 *                      mapping),
 *                      PUT_SUBBUF; until GET says -EAGAIN.  After a PUT,
 *                      close the chunk if it is full (between sub-buffers,
 *                      never while one is held)
 *          request  -> FLUSH:  close the open packet (GET_POSITIONS first:
 *                              an idle CPU gets no IPI), drain, acknowledge
 *                      ROTATE: the same, then close the chunk, acknowledge
 *                      STOP:   drain to the end, close the chunk, exit
 *                      ABORT:  close the chunk, exit
 *          POLLHUP  -> tracing stopped and all read: stop polling the
 *                      buffer ("parked": it would report POLLHUP at once,
 *                      again and again) and look again after 100 ms, then
 *                      less often up to every second while tracing stays
 *                      off, or at the next request: main's REQ_WAKE as
 *                      soon as it turned tracing on itself.  Every thread
 *                      parks at start, before tracing is on, so that wake
 *                      is what lets a fast writer's first packets out.
 *
 * Two ioctls and one frame per sub-buffer, never an event parsed, never a
 * compressor: draining costs what copying the packet out costs, whatever
 * the level the packers use.  Threads rather than one loop over every CPU
 * because a loop drains nothing while its one thread does not run, and a
 * thread per CPU drains each buffer as soon as any CPU is free (measured:
 * Documentation/ringtrace/benchmarks.rst).
 *
 * Priority: the drain threads run SCHED_FIFO at priority DRAIN_RT_PRIO,
 * above every SCHED_OTHER thread, each started on its buffer's CPU.
 * Between a packet's completion and the writer running out of sub-buffers
 * there is the rest of the ring: 4 MiB at the defaults, ~0.4 s of a
 * system-call loop under TCG (benchmarks.rst, the storm), 1 MiB and ~40 ms
 * in the pipeline benchmark.  A woken drain thread must run within that
 * time whatever runs on every CPU.  At nice 0 it waited its turn behind a
 * busy loop (issue 19).  At nice -10, still SCHED_OTHER, it was preempted
 * by its own writer, a thread that sleeps often (CFS before EEVDF credits
 * a waking thread with half a latency, whatever the nice of the one it
 * preempts), and moved by wake-affinity to the other CPU, where its writer
 * ran on unhindered: 6.1 lost events from 650000 per second per CPU with
 * its drain threads 13 % busy (issue 34; ringtrace's own trace of it in
 * benchmarks.rst).  A SCHED_FIFO thread wakes on the CPU it last ran on
 * and preempts the SCHED_OTHER thread there at its next preemption point,
 * and moves only away from a real-time thread that it may not preempt
 * there (another drain thread; on PREEMPT_RT the irq_work/N thread that
 * wakes it).  Started on its buffer's CPU, a drain thread is woken there
 * by its writer's irq_work [W1] (on PREEMPT_RT, on a CPU running no
 * real-time thread), and its writer waits while it drains.
 * The wakeups are the same (the irq_work, the flush tick): the idle-CPU
 * rules are unchanged.  Its CPU time is what copying the packets out
 * costs.  Real-time threads above DRAIN_RT_PRIO still come first; on
 * PREEMPT_RT the kernel's ktimers/N and irq_work/N share priority 1 with
 * it and wait for a batch to end.  Where SCHED_FIFO is refused (no
 * CAP_SYS_NICE, RLIMIT_RTPRIO 0, systemd's RestrictRealtime=) it runs at
 * nice DRAIN_NICE, where that is refused too at nice 0, and says so once.
 *
 * Errors end the thread, not the process: it records what failed in
 * cpu->err/errmsg, closes its chunk and tells main, which decides.  The
 * sub-buffer held when a write failed is not given back, so it stays in the
 * kernel for the next consumer.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ringtraced.h"

struct cpu *cpus;
unsigned int ncpus;
unsigned int set_rotation_wanted;

static int notify_fd = -1;

/* The drain threads' priority, and their nice value where it is refused. */
#define DRAIN_RT_PRIO	1
#define DRAIN_NICE	-10

/* How long a parked thread waits before it looks at its buffer again. */
#define PARKED_MIN_MS	100
#define PARKED_MAX_MS	1000

/* ---- setup ---------------------------------------------------------------------- */

/*
 * The module's wakeup watermark for @c's buffer (module/ring.c [W3]):
 * each wakeup of the thread then takes several packets while the ring has
 * room, and every completion wakes it once half the ring waits.  The
 * flush tick drains what waits below the watermark; without a tick
 * (-f 0) nothing would, so every packet wakes then.
 */
static void set_wakeup(struct cpu *c)
{
	static bool said_clamp, said_old;
	unsigned int half = (unsigned int)(c->buf.num_subbufs / 2);
	unsigned int n = opt.wakeup ? opt.wakeup : half / 2;
	int err;

	if (!opt.flush_ms || n < 2 || !half)
		return;
	if (n > half) {
		if (!said_clamp)
			info("--wakeup %u: at most half the ring of %u sub-buffers: %u",
			     n, (unsigned int)c->buf.num_subbufs, half);
		said_clamp = true;
		n = half;
	}
	err = buffer_set_wakeup(&c->buf, n);
	if (err == -ENOTTY) {
		if (!said_old)
			info("this ringtrace.ko wakes the drain for every sub-buffer (no SET_WAKEUP)");
		said_old = true;
		return;
	}
	if (err)
		die("%s: SET_WAKEUP %u: %s", c->buf.path, n, strerror(-err));
}

/* The CPUs that have a buffer (numeric entries of <ctl.dir>/cpu), sorted. */
static unsigned int *cpu_ids;
static unsigned int ncpu_ids;
static bool *cpu_wanted;		/* indexed like cpu_ids */

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

static void list_cpus(void)
{
	char path[PATH_MAX + 8];
	unsigned int cap = 0, cpu;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cpu", ctl.dir);
	d = opendir(path);
	if (!d)
		die("%s: %s", path, strerror(errno));
	while ((de = readdir(d))) {
		if (!parse_uint(de->d_name, &cpu))
			continue;
		if (ncpu_ids == cap) {
			cap = cap ? 2 * cap : 64;
			cpu_ids = realloc(cpu_ids, cap * sizeof(*cpu_ids));
			if (!cpu_ids)
				die("%s", strerror(ENOMEM));
		}
		cpu_ids[ncpu_ids++] = cpu;
	}
	closedir(d);
	if (!ncpu_ids)
		die("%s: no CPU buffers", path);
	qsort(cpu_ids, ncpu_ids, sizeof(*cpu_ids), cmp_uint);
}

static void want_cpu(unsigned int cpu, void *unused __attribute__((unused)))
{
	unsigned int i;

	for (i = 0; i < ncpu_ids; i++) {
		if (cpu_ids[i] == cpu) {
			cpu_wanted[i] = true;
			return;
		}
	}
	die("CPU %u: no buffer in %s/cpu (CPUs with a buffer: %u-%u)", cpu,
	    ctl.dir, cpu_ids[0], cpu_ids[ncpu_ids - 1]);
}

void drain_open_buffers(void)
{
	unsigned int i, n;
	int err;

	list_cpus();
	cpu_wanted = calloc(ncpu_ids, sizeof(*cpu_wanted));
	cpus = calloc(ncpu_ids, sizeof(*cpus));
	if (!cpu_wanted || !cpus)
		die("%s", strerror(ENOMEM));
	if (opt.cpus)
		parse_cpu_list(opt.cpus, want_cpu, NULL);
	else
		memset(cpu_wanted, true, ncpu_ids * sizeof(*cpu_wanted));
	/* Too many CPUs for RLIMIT_NOFILE: said now, not half way. */
	for (i = 0, n = 0; i < ncpu_ids; i++)
		n += cpu_wanted[i];
	nofile_budget(n);

	for (i = 0; i < ncpu_ids; i++) {
		struct cpu *c = &cpus[ncpus];

		if (!cpu_wanted[i])
			continue;
		c->buf.fd = -1;
		c->out.fd = -1;
		c->evfd = -1;
		err = buffer_open(&c->buf, ctl.dir, cpu_ids[i]);
		/* A CPU not online since the module loaded has no buffer. */
		if (err == -ENODEV && !opt.cpus) {
			info("CPU %u: no buffer (not online since ringtrace.ko loaded): not recorded",
			     cpu_ids[i]);
			continue;
		}
		if (err == -EPROTO)
			die("%s: unexpected meta page (module and daemon from different versions?)",
			    c->buf.path);
		if (err)
			die("%s: %s%s", c->buf.path, strerror(-err),
			    err == -EBUSY ? " (another consumer has it open)" :
			    err == -EACCES ? " (ringtrace needs root)" :
			    err == -EPERM ? " (refused by kernel lockdown: see /sys/kernel/security/lockdown)" : "");
		set_wakeup(c);
		ncpus++;
	}
	free(cpu_wanted);
	free(cpu_ids);
}

/* ---- the thread --------------------------------------------------------------------- */


enum drain_result {
	DRAIN_EMPTY,		/* -EAGAIN: nothing complete right now */
	DRAIN_MORE,		/* budget used up, more may be ready */
	DRAIN_END,		/* -ENODATA: tracing off and all consumed */
	DRAIN_FAILED,		/* c->err and c->errmsg say what */
};

static void notify_main(void)
{
	uint64_t one = 1;

	if (write(notify_fd, &one, sizeof(one)) < 0) {
		/* A full counter still wakes main: nothing is lost. */
	}
}

/*
 * chunks_roll_if_due(); with --on-chunk a full or old chunk asks main to
 * rotate every CPU (main.c), and goes on until that request comes.
 */
static int roll_if_due(struct cpu *c)
{
	unsigned int seq = c->out.seq, old;
	int r = chunks_roll_if_due(&c->out, now_ms());

	if (r <= 0)
		return r;
	old = __atomic_load_n(&set_rotation_wanted, __ATOMIC_RELAXED);
	while (old < seq &&
	       !__atomic_compare_exchange_n(&set_rotation_wanted, &old, seq,
					    false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	notify_main();
	return 0;
}

__attribute__((format(printf, 3, 4)))
static enum drain_result fail(struct cpu *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	c->err = err;
	return DRAIN_FAILED;
}

/*
 * GET, write, PUT: two ioctls and one frame per sub-buffer.  With
 * @rotations, a rotation main asked for (--on-chunk) ends the batch, so
 * that a full chunk closes after a packet or two, not after a ring's worth.
 */
static enum drain_result drain(struct cpu *c, unsigned int budget,
			       bool rotations)
{
	struct ringtrace_subbuf sb;
	int err;

	while (budget--) {
		/* Pairs with the release in drain_request(). */
		if (rotations &&
		    (__atomic_load_n(&c->req, __ATOMIC_ACQUIRE) & REQ_ROTATE))
			return DRAIN_MORE;
		err = buffer_get(&c->buf, &sb);
		if (err == -EAGAIN)
			return DRAIN_EMPTY;
		if (err == -ENODATA)
			return DRAIN_END;
		if (err == -EPROTO)
			return fail(c, err, "%s: GET_SUBBUF: sub-buffer at offset %llu with %llu bytes is outside the mapping",
				    c->buf.path, (unsigned long long)sb.offset,
				    (unsigned long long)sb.content_size);
		if (err)
			return fail(c, err, "%s: GET_SUBBUF: %s%s", c->buf.path,
				    strerror(-err), err == -EIO ?
				    " (the module disabled this buffer, see dmesg)" : "");

		/*
		 * An event registered since: its declaration first.  Without
		 * it the packet's events could not be read: like a failed
		 * write, the packet stays in the kernel for the next consumer.
		 */
		err = metadata_follow(&ctl, outdirfd, buffer_events_gen(&c->buf));
		if (err)
			return fail(c, err, "%s/metadata: %s (the new events' declarations; their packets stay in the kernel)",
				    outdir, err == -EPROTO ?
				    "the module's metadata is not CTF 1.8" :
				    strerror(-err));

		err = chunks_write(&c->out, c->buf.map + sb.offset,
				   sb.content_size);
		if (err)	/* the packet stays in the kernel */
			return fail(c, err, "%s/%s: %s", outdir, c->out.name,
				    strerror(-err));
		if (opt.delay_us)
			usleep(opt.delay_us);

		err = buffer_put(&c->buf, &sb);
		if (err)
			return fail(c, err, "%s: PUT_SUBBUF: %s", c->buf.path,
				    strerror(-err));

		/* Between sub-buffers: a full chunk closes now, not later. */
		err = roll_if_due(c);
		if (err)
			return fail(c, err, "%s/cpu%u-%06u.zst: %s", outdir,
				    c->out.cpu, c->out.seq + 1, strerror(-err));
	}
	return DRAIN_MORE;
}

/* Everything complete now goes out; packets still open stay open. */
static unsigned int drain_budget(const struct cpu *c)
{
	return c->buf.num_subbufs + 2;
}

/* Close the open packet of @c, if any, so that it can be drained. */
static int flush_cpu(struct cpu *c, bool always)
{
	struct ringtrace_positions pos;
	int err;

	if (!always) {
		/* An idle CPU is not interrupted for nothing. */
		err = buffer_positions(&c->buf, &pos);
		if (err) {
			fail(c, err, "%s: GET_POSITIONS: %s", c->buf.path,
			     strerror(-err));
			return err;
		}
		if (!positions_packet_open(&pos))
			return 0;
	}
	err = buffer_flush(&c->buf);
	if (err)
		fail(c, err, "%s: FLUSH: %s", c->buf.path, strerror(-err));
	return err;
}

/*
 * With tracing off, GET itself closes what is still open and reports
 * -ENODATA once everything is consumed; a loss-report packet that found no
 * room earlier is emitted once the buffer has been drained, hence the
 * retries.  With tracing on, FLUSH closes the open packet and what is
 * complete then is drained; later events stay in the kernel for the next
 * consumer.
 */
static enum drain_result drain_for_stop(struct cpu *c, bool tracing_off)
{
	enum drain_result r = DRAIN_MORE;
	unsigned int round;

	if (!tracing_off) {
		if (flush_cpu(c, true))
			return DRAIN_FAILED;
		r = drain(c, drain_budget(c), false);
		return r == DRAIN_FAILED ? r : DRAIN_END;
	}
	for (round = 0; round < 8; round++) {
		r = drain(c, 2 * drain_budget(c), false);
		if (r == DRAIN_END || r == DRAIN_FAILED)
			return r;
	}
	warn("CPU %u: not drained to the end after tracing stopped (tracing turned on again?)",
	     c->buf.cpu);
	return DRAIN_END;
}

/* FLUSH or ROTATE: close the open packet, drain, maybe roll, acknowledge. */
static enum drain_result flush_request(struct cpu *c, unsigned int req)
{
	/*
	 * The tick this flush answers: read before it begins.  A tick that
	 * comes while it drains sets REQ_FLUSH again and is acknowledged by
	 * the flush that follows, never by this one.  Pairs with the release
	 * in main's tick().
	 */
	uint64_t gen = __atomic_load_n(&c->flush_gen, __ATOMIC_ACQUIRE);
	enum drain_result r;
	int err;

	if (flush_cpu(c, req & REQ_ROTATE))
		return DRAIN_FAILED;
	r = drain(c, drain_budget(c), false);
	if (r == DRAIN_FAILED)
		return r;
	err = req & REQ_ROTATE ? chunks_roll(&c->out) : roll_if_due(c);
	if (err)
		return fail(c, err, "%s/cpu%u-%06u.zst: %s", outdir, c->out.cpu,
			    c->out.seq + 1, strerror(-err));
	/* Pairs with main's acquire loads in all_flushed()/check_rotated(). */
	if (req & REQ_FLUSH)
		__atomic_store_n(&c->flush_done, gen, __ATOMIC_RELEASE);
	if (req & REQ_ROTATE)
		__atomic_store_n(&c->rotate_done, c->rotate_done + 1,
				 __ATOMIC_RELEASE);
	notify_main();
	return r;
}

/*
 * This thread at SCHED_FIFO DRAIN_RT_PRIO (see the top of this file), else
 * at nice DRAIN_NICE; each refusal said once.  Reset on fork: nothing a
 * drain thread starts inherits it.
 */
static void raise_priority(void)
{
	static bool told_rt, told_nice;
	struct sched_param sp = { .sched_priority = DRAIN_RT_PRIO };
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int rt_err;

	/* pid 0: the calling thread, not the process. */
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
		return;
	rt_err = errno;
	if (setpriority(PRIO_PROCESS, (id_t)tid, DRAIN_NICE) == 0) {
		if (!__atomic_exchange_n(&told_rt, true, __ATOMIC_RELAXED))
			info("drain threads at nice %d (SCHED_FIFO refused: %s): with a loop on every CPU they may be late, and events lost",
			     DRAIN_NICE, strerror(rt_err));
		return;
	}
	if (!__atomic_exchange_n(&told_nice, true, __ATOMIC_RELAXED))
		warn("drain threads stay at the workload's priority (SCHED_FIFO refused: %s; nice %d refused: %s): a busy system may make them late, and events lost",
		     strerror(rt_err), DRAIN_NICE, strerror(errno));
}

/*
 * Move this thread to its buffer's CPU, then give it back every CPU it was
 * allowed: a SCHED_FIFO thread wakes where it last ran, so it is woken
 * from then on where its writer's irq_work runs [W1], and its writer waits
 * while it drains (see the top of this file).  Not a pin: a CPU going down
 * or a real-time thread above it there still moves it.  Nothing to do
 * where the CPU is not allowed (taskset, cgroups) or the call fails.
 */
static void start_on_cpu(const struct cpu *c)
{
	cpu_set_t allowed, one;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) ||
	    c->buf.cpu >= CPU_SETSIZE || !CPU_ISSET(c->buf.cpu, &allowed))
		return;
	CPU_ZERO(&one);
	CPU_SET(c->buf.cpu, &one);
	/* Returns once the thread runs there. */
	if (sched_setaffinity(0, sizeof(one), &one) == 0)
		sched_setaffinity(0, sizeof(allowed), &allowed);
}

static void *drain_main(void *arg)
{
	struct cpu *c = arg;
	enum drain_result r = DRAIN_MORE;
	bool parked = false;
	int park_ms = PARKED_MIN_MS;
	unsigned int req;
	char tname[16];
	uint64_t v;

	snprintf(tname, sizeof(tname), "rtd-drain/%u", c->buf.cpu);
	pthread_setname_np(pthread_self(), tname);
	raise_priority();
	start_on_cpu(c);
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = c->evfd, .events = POLLIN },
			{ .fd = c->buf.fd, .events = POLLIN },
		};
		/* A parked CPU looks again soon: tracing may start any time. */
		int timeout = parked ? park_ms : -1;
		int n;

		/* --chunk-time: wake up to close a chunk that grew old. */
		if (opt.chunk_ms && c->out.size && !c->out.set_asked) {
			uint64_t now = now_ms(), due = c->out.first_ms + opt.chunk_ms;
			int left = poll_timeout_ms(due > now ? due - now : 0);

			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		n = poll(p, parked ? 1 : 2, timeout);
		if (n < 0 && errno != EINTR) {
			fail(c, -errno, "poll: %s", strerror(errno));
			break;
		}
		if (n == 0 && parked) {
			parked = false;
			/* Still off next time: look less often. */
			park_ms = park_ms * 2 > PARKED_MAX_MS ? PARKED_MAX_MS :
				  park_ms * 2;
		}
		if (p[0].revents & POLLIN) {
			if (read(c->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
				fail(c, -errno, "eventfd: %s", strerror(errno));
				break;
			}
		}
		req = __atomic_exchange_n(&c->req, 0, __ATOMIC_ACQUIRE);
		if (req & REQ_ABORT)
			break;
		if (req & REQ_WAKE) {
			parked = false;
			park_ms = PARKED_MIN_MS;
		}
		if (req & REQ_STOP) {
			r = drain_for_stop(c, __atomic_load_n(&c->tracing_off,
							      __ATOMIC_ACQUIRE));
			break;
		}
		if (req & (REQ_FLUSH | REQ_ROTATE)) {
			parked = false;
			r = flush_request(c, req);
		} else if (!parked && (p[1].revents & POLLHUP) &&
			   !(p[1].revents & POLLIN)) {
			parked = true;
		} else if (!parked && p[1].revents) {
			/* POLLIN, or POLLERR: GET says -EIO then. */
			r = drain(c, drain_budget(c), opt.on_chunk);
			park_ms = PARKED_MIN_MS;
		}
		if (r != DRAIN_FAILED && opt.chunk_ms) {
			int err = roll_if_due(c);

			if (err)
				r = fail(c, err, "%s/cpu%u-%06u.zst: %s", outdir,
					 c->out.cpu, c->out.seq + 1,
					 strerror(-err));
		}
		if (r == DRAIN_FAILED)
			break;
	}
	chunks_finish(&c->out);
	c->cpu_s = thread_cpu_s();
	/* Pairs with main's acquire: err, errmsg and cpu_s are set. */
	__atomic_store_n(&c->exited, true, __ATOMIC_RELEASE);
	notify_main();
	return NULL;
}

int drain_start(int notify)
{
	unsigned int i;
	int err;

	notify_fd = notify;
	for (i = 0; i < ncpus; i++) {
		struct cpu *c = &cpus[i];

		c->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (c->evfd < 0)
			return -errno;
		err = chunks_open(&c->out, c->buf.cpu, i, outdirfd,
				  c->buf.subbuf_size);
		if (!err)
			err = chunks_source(&c->out, &c->buf);
		if (err) {
			snprintf(c->errmsg, sizeof(c->errmsg), "%s/cpu%u-%06u.zst: %s",
				 outdir, c->buf.cpu, 1U, strerror(-err));
			return err;
		}
	}
	for (i = 0; i < ncpus; i++) {
		err = pthread_create(&cpus[i].thread, NULL, drain_main, &cpus[i]);
		if (err)
			return -err;
		cpus[i].started = true;
	}
	return 0;
}

void drain_request(struct cpu *c, unsigned int req)
{
	uint64_t one = 1;

	__atomic_fetch_or(&c->req, req, __ATOMIC_RELEASE);
	if (write(c->evfd, &one, sizeof(one)) < 0) {
		/* The counter is already non-zero: the thread will look. */
	}
}

void drain_join(void)
{
	unsigned int i;

	for (i = 0; i < ncpus; i++) {
		if (cpus[i].started)
			pthread_join(cpus[i].thread, NULL);
		cpus[i].started = false;
	}
}
