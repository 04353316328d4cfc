// SPDX-License-Identifier: GPL-2.0
/*
 * ringtraced: record ringtrace's per-CPU buffers into a trace directory.
 *
 *   setup:  block signals -> signalfd; raise the open-file limit; find
 *           ringtrace (what a killed record left changed put back first:
 *           restore.c) and set the mode and geometry asked for; open and
 *           map every CPU buffer to record; create the trace directory
 *           and copy the metadata; start the packers, the syncer and a
 *           drain thread per CPU (each with its first chunk); turn
 *           tracing on (--start).
 *   loop:   this thread only steers (epoll over the signalfd, the flush
 *           timer and the drain threads' eventfd):
 *             timer    -> every drain thread: close the open packet, drain
 *                         (REQ_FLUSH); once all have, a sync round;
 *                         systemd's STATUS=
 *             a timer of its own -> --max-total (every
 *                         --max-total-interval)
 *             SIGHUP   -> every drain thread: close the chunk (REQ_ROTATE)
 *             SIGUSR1  -> statistics
 *             a drain thread failed, a sync failed, SIGINT/SIGTERM -> stop
 *   stop:   tracing off (if we started it) or a flush; every drain thread
 *           drains to the end and closes its chunk; the last sync; then the
 *           packers compress what is left, with progress, and --on-chunk's
 *           last sets are handed off, until done, --stop-timeout or a
 *           second SIGINT/SIGTERM; the summary; the buffers closed, the
 *           control files a record now gone changed put back (restore.c).
 *
 * Errors print one line "ringtraced: <what>: <why>" and exit 1; usage
 * errors exit 2.  After the threads started, an error of a drain thread,
 * or a sync that failed (the data may be gone: syncer.c), stops the drain
 * threads where they are, and its line is the last one printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../lib/clockfile.h"
#include "ringtraced.h"

/* epoll tags */
enum { TAG_SIGNAL, TAG_TIMER, TAG_RETENTION, TAG_NOTIFY };

enum run_end { RUN_STOP, RUN_FAILED };

static int sigfd = -1, timerfd = -1, retentionfd = -1, notifyfd = -1;
static int epfd = -1;

static void setup_signals(void)
{
	sigset_t set;

	/* Blocked before any thread exists (they inherit it), read here. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		die("sigprocmask: %s", strerror(errno));
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0)
		die("signalfd: %s", strerror(errno));
	/* A closed stdout must give EPIPE, not kill us mid-trace. */
	signal(SIGPIPE, SIG_IGN);
	/* Past a file size limit, write() fails with EFBIG: a clean error. */
	signal(SIGXFSZ, SIG_IGN);
	/*
	 * Ignored by whoever started us, our children would reap themselves
	 * and waitpid() could not tell a hook's exit status (ECHILD).
	 */
	signal(SIGCHLD, SIG_DFL);
}

/*
 * A trace whose events carry kernel stacks (set_event_stack's, or the
 * sampler's: sample_hz) keeps the kernel's text symbols, to name their
 * frames on any machine later (lib/ksyms.h).  Without stacks it keeps
 * nothing (~0.5 MB compressed); stacks switched on after the start are
 * not named.  A live persistent region gets the same bytes, stacks or
 * not (a crash's stack is named from them), and this boot's identity
 * (region.c).
 */
static void save_ksyms(void)
{
	char *stacks = ctl_read_alloc(&ctl, "set_event_stack");
	bool region = region_live(&ctl);
	char hz[16] = "0";
	bool want;
	size_t len;
	void *z;
	int err;

	/* A module without the sampler has no sample_hz: "0" stays. */
	ctl_read(&ctl, "sample_hz", hz, sizeof(hz));
	want = (stacks && *stacks) || strcmp(hz, "0");
	free(stacks);
	if (region) {
		err = region_identity(&ctl);
		if (err)
			warn("%s/persist/identity: %s: the persistent region's image will not name this boot and build",
			     ctl.dir, strerror(-err));
	}
	if (!want && !region)
		return;
	err = ksyms_build(&z, &len);
	if (err) {
		warn("the kernel's symbols: %s: the stacks will print as addresses",
		     strerror(-err));
		return;
	}
	if (want) {
		err = ksyms_write(outdirfd, z, len);
		if (err)
			warn("%s/" KSYMS_FILE ": %s: the stacks will print as addresses",
			     outdir, strerror(-err));
	}
	if (region) {
		err = region_ksyms(&ctl, z, len);
		if (err)
			warn("%s/persist/ksyms: %s: the persistent region's image will print its stacks as addresses",
			     ctl.dir, strerror(-err));
	}
	free(z);
}

/*
 * The trace's metadata (metadata.c), as of the newest event set any
 * buffer's meta page shows: a stale page only makes the first GET refresh
 * the copy for nothing.
 */
static void copy_metadata(void)
{
	uint64_t gen = 0;
	unsigned int i;
	int err;

	for (i = 0; i < ncpus; i++)
		if (buffer_events_gen(&cpus[i].buf) > gen)
			gen = buffer_events_gen(&cpus[i].buf);
	err = metadata_start(&ctl, outdirfd, gen);
	if (err == -EPROTO)
		die("%s/metadata: not CTF 1.8 metadata", ctl.dir);
	if (err)
		die("%s/metadata: %s", outdir, strerror(-err));
	save_ksyms();
}

static void epoll_add(int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/* A timer that fires every @ms, in the loop as @tag. */
static int periodic_timer(uint64_t ms, uint32_t tag)
{
	struct itimerspec its = {
		.it_interval.tv_sec = (time_t)(ms / 1000),
		.it_interval.tv_nsec = (long)(ms % 1000) * 1000000,
	};
	int fd;

	its.it_value = its.it_interval;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		die("timerfd_create: %s", strerror(errno));
	if (timerfd_settime(fd, 0, &its, NULL) < 0)
		die("timerfd_settime: %s", strerror(errno));
	epoll_add(fd, tag);
	return fd;
}

static void setup_loop(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	epoll_add(sigfd, TAG_SIGNAL);
	epoll_add(notifyfd, TAG_NOTIFY);
	if (opt.flush_ms && !opt.once)
		timerfd = periodic_timer(opt.flush_ms, TAG_TIMER);
	/* Its own: checked with -f 0 too, at its own pace. */
	if (opt.max_total && opt.root && !opt.once)
		retentionfd = periodic_timer(opt.max_total_ms, TAG_RETENTION);
}

static bool cpu_exited(const struct cpu *c)
{
	/* Pairs with the release in drain_main(): err and errmsg are set. */
	return __atomic_load_n(&c->exited, __ATOMIC_ACQUIRE);
}

/* The first drain thread that failed, if any. */
static struct cpu *failed_cpu(void)
{
	for (unsigned int i = 0; i < ncpus; i++)
		if (cpu_exited(&cpus[i]) && cpus[i].err)
			return &cpus[i];
	return NULL;
}

/* ---- the flush tick and its sync round ----------------------------------------- */

static uint64_t flush_gen;		/* the tick's generation */
static uint64_t sync_gen;		/* the tick whose round is due, or 0 */
static uint64_t synced_bytes;		/* written when the last round began */
static struct sync_file *round_files;	/* one per CPU */
uint64_t sync_skipped;			/* rounds a failed dup() cost */

static void tick(void)
{
	uint64_t ticks;

	if (read(timerfd, &ticks, sizeof(ticks)) < 0)
		return;
	flush_gen++;
	for (unsigned int i = 0; i < ncpus; i++) {
		/* Pairs with the acquire in flush_request(). */
		__atomic_store_n(&cpus[i].flush_gen, flush_gen, __ATOMIC_RELEASE);
		drain_request(&cpus[i], REQ_FLUSH);
	}
	/*
	 * The round waits for every CPU's flush of this tick; while one is
	 * awaited, a later tick does not take its place: a CPU whose drain
	 * outlasts a tick would never have flushed for the newest one.
	 */
	if (!sync_gen)
		sync_gen = flush_gen;
	report_status();
}

/* Every CPU has drained what tick @gen closed. */
static bool all_flushed(uint64_t gen)
{
	for (unsigned int i = 0; i < ncpus; i++)
		if (__atomic_load_n(&cpus[i].flush_done, __ATOMIC_ACQUIRE) < gen)
			return false;
	return true;
}

/*
 * Make what the tick drained durable, on the syncer's thread.  Every CPU
 * or none: a round that left a CPU out would not cover what a completed
 * round promises, so a failed dup() (no fd left) skips it, and says so.
 */
static void sync_round(void)
{
	static bool dup_failing;
	char name[CHUNK_NAME_MAX];
	uint64_t bytes = 0;
	unsigned int i, n = 0;
	int err;

	/* Nothing written since the last round: an idle disk stays idle. */
	for (i = 0; i < ncpus; i++)
		bytes += COUNTER_READ(cpus[i].out.bytes_out);
	if (bytes == synced_bytes)
		return;
	for (i = 0; i < ncpus; i++) {
		err = chunks_dup(&cpus[i].out, &round_files[n]);
		/* Between two chunks: the closed one was adopted already. */
		if (err == -EBADF)
			continue;
		if (err) {
			while (n)
				close(round_files[--n].fd);
			sync_skipped++;
			chunks_current_name(&cpus[i].out, name, sizeof(name));
			if (!dup_failing)
				warn("%s/%s: no sync round at this tick: dup: %s (tried again at every tick)",
				     outdir, name, strerror(-err));
			dup_failing = true;
			return;
		}
		n++;
	}
	if (dup_failing)
		info("sync rounds again, after %llu skipped",
		     (unsigned long long)sync_skipped);
	dup_failing = false;
	err = syncer_request(round_files, n);
	if (!err)
		synced_bytes = bytes;
	else if (err != -EBUSY)
		warn("%s: cannot sync: %s", outdir, strerror(-err));
}

/* True when the syncer could not make a file durable. */
static bool sync_failed(void)
{
	struct syncer_stats ss;

	syncer_status(&ss);
	return ss.failed;
}

/* ---- SIGHUP, and --on-chunk's rotations -------------------------------------------- */

static uint64_t rotations;		/* asked for */
static bool rotate_pending;		/* --on-chunk: asked during one */

/* Some CPU has not acknowledged the last rotation yet. */
static bool rotation_in_flight(void)
{
	for (unsigned int i = 0; i < ncpus; i++)
		if (__atomic_load_n(&cpus[i].rotate_done, __ATOMIC_ACQUIRE) <
		    rotations)
			return true;
	return false;
}

/*
 * With --on-chunk one rotation at a time: each CPU closes exactly one
 * chunk per rotation, so that chunk k of every CPU is chunk set k.
 */
static void rotate(void)
{
	if (opt.on_chunk && rotation_in_flight()) {
		rotate_pending = true;
		return;
	}
	rotations++;
	for (unsigned int i = 0; i < ncpus; i++)
		drain_request(&cpus[i], REQ_ROTATE);
}

static void check_rotated(void)
{
	static uint64_t said;
	char name[CHUNK_NAME_MAX];

	if (rotation_in_flight())
		return;
	if (said != rotations) {
		said = rotations;
		if (opt.on_chunk)
			handoff_sets_closed((unsigned int)rotations);
		/* CPU 0's thread may be opening its next chunk by now. */
		chunks_current_name(&cpus[0].out, name, sizeof(name));
		info("rotated: every CPU's chunk closed, now writing %s/%s ...",
		     outdir, name);
	}
	/* A CPU's chunk is full or old: the next set begins for all. */
	if (opt.on_chunk &&
	    (rotate_pending ||
	     __atomic_load_n(&set_rotation_wanted, __ATOMIC_RELAXED) > rotations)) {
		rotate_pending = false;
		rotate();
	}
}

/* ---- the loop -------------------------------------------------------------------- */

/* RUN_STOP when asked to stop; RUN_FAILED when a drain thread failed. */
static enum run_end run(void)
{
	struct signalfd_siginfo si;
	struct epoll_event evs[8];
	uint64_t v;
	int n, i;

	for (;;) {
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			switch (evs[i].data.u32) {
			case TAG_SIGNAL:
				while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGINT ||
					    si.ssi_signo == SIGTERM)
						return RUN_STOP;
					if (si.ssi_signo == SIGHUP)
						rotate();
					else if (si.ssi_signo == SIGUSR1)
						report_print("ringtraced: statistics");
				}
				break;
			case TAG_TIMER:
				tick();
				break;
			case TAG_RETENTION:
				if (read(retentionfd, &v, sizeof(v)) > 0)
					outdir_retention();
				break;
			case TAG_NOTIFY:
				if (read(notifyfd, &v, sizeof(v)) < 0)
					break;
				if (failed_cpu() || sync_failed())
					return RUN_FAILED;
				if (sync_gen && all_flushed(sync_gen)) {
					sync_round();
					sync_gen = 0;
				}
				check_rotated();
				break;
			}
		}
	}
}

/* ---- stop ------------------------------------------------------------------------ */

/* A second SIGINT/SIGTERM came: the stop's deadline is now. */
static bool hurried(uint64_t *deadline)
{
	struct signalfd_siginfo si;
	bool again = false;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si))
		again |= si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM;
	if (again) {
		*deadline = now_ms();
		if (opt.on_chunk)
			handoff_deadline(*deadline);
	}
	return again;
}

/*
 * The packers finish what the recording left uncompressed, now at normal
 * priority.  Progress every 5 s (every second on a terminal); the stop's
 * @deadline (--stop-timeout), or a second SIGINT/SIGTERM, leaves the rest
 * stored.  True when all of it was done.  The drain threads are gone and
 * the tick is over: only the signals are waited for here.
 */
static bool finish_packing(uint64_t *deadline)
{
	int every = isatty(STDERR_FILENO) ? 1000 : 5000;
	uint64_t start = now_ms(), said = 0, now;

	packer_boost();
	while (!packer_idle()) {
		struct pollfd p = { .fd = sigfd, .events = POLLIN };

		now = now_ms();
		if (now >= *deadline)
			return false;
		if (now - start >= 1000 && now - said >= (uint64_t)every) {
			report_backlog(said ? NULL :
				       "SIGINT or SIGTERM leaves the rest uncompressed");
			said = now;
		}
		if (poll(&p, 1, *deadline - now < 200 ? (int)(*deadline - now) : 200) <= 0)
			continue;
		if (hurried(deadline))
			return false;
	}
	return true;
}

/* The line that says which file could not be made durable. */
static void sync_failure_line(const struct syncer_stats *ss)
{
	error_line("%s%s%s: %s (%llu failed sync%s: what was written to %s since the sync before may be lost)",
		   outdir, strcmp(ss->fail_name, ".") ? "/" : "",
		   strcmp(ss->fail_name, ".") ? ss->fail_name : "",
		   strerror(-ss->fail_err), (unsigned long long)ss->failed,
		   ss->failed == 1 ? "" : "s",
		   ss->failed == 1 ? "it" : "them");
}

/* The exit status: 1 after a failure, which is then the last line printed. */
static int stop(enum run_end end)
{
	uint64_t deadline = opt.stop_ms ? now_ms() + opt.stop_ms : UINT64_MAX;
	bool off = false, packed_all = false;
	char title[PATH_MAX + 64];
	struct packer_stats ps;
	struct syncer_stats ss;
	struct cpu *bad;
	unsigned int i;
	int err;

	notify_systemd("STOPPING=1");
	if (opt.on_chunk)
		handoff_deadline(deadline);
	if (end == RUN_STOP) {
		off = opt.start || opt.stop_on_exit;
		if (off && (err = ctl_write(&ctl, "tracing_on", "0"))) {
			warn("%s/tracing_on: %s (flushing instead)", ctl.dir,
			     strerror(-err));
			off = false;
		}
	}
	for (i = 0; i < ncpus; i++) {
		__atomic_store_n(&cpus[i].tracing_off, off, __ATOMIC_RELEASE);
		drain_request(&cpus[i], end == RUN_STOP ? REQ_STOP : REQ_ABORT);
	}
	drain_join();
	/*
	 * The recording's end, for the metadata's clock offset (its start);
	 * with --on-chunk each set's manifest has its own, and the directory
	 * keeps nothing of the data.
	 */
	err = opt.on_chunk ? 0 : clock_file_write(outdirfd);
	if (err)
		warn("%s/" CLOCK_FILE ": %s: the trace's clock drift will be unknown",
		     outdir, strerror(-err));
	bad = failed_cpu();
	if (opt.on_chunk) {
		unsigned int last = 0;

		/* A rotation cut short by the stop: its sets are closed too. */
		for (i = 0; i < ncpus; i++)
			if (cpus[i].out.seq > last)
				last = cpus[i].out.seq;
		handoff_sets_closed(last);
	}
	/* Its failures, if any, are counted and told below. */
	syncer_stop();

	snprintf(title, sizeof(title), "ringtraced: stopped, trace in %s", outdir);
	if (end == RUN_STOP && !bad && !sync_failed())
		packed_all = finish_packing(&deadline);
	packer_stop(!packed_all);
	if (opt.on_chunk)
		handoff_finish(sigfd, hurried, &deadline);
	else if (end == RUN_STOP && !bad && !opt.no_symbols)
		symbols_at_stop();
	report_print(title);
	packer_stats(&ps);
	if (ps.left)
		warn("%llu chunks (%.1f MiB) left uncompressed: readable as they are; `ringtrace compress %s` compresses them",
		     (unsigned long long)ps.left,
		     (double)ps.left_bytes / (1 << 20), outdir);
	for (i = 0; i < ncpus; i++)
		buffer_close(&cpus[i].buf);
	restore_at_stop();
	syncer_status(&ss);
	if (bad) {
		unsigned int removed = bad->err == -ENOSPC ? outdir_make_room() : 0;

		if (ss.failed)
			sync_failure_line(&ss);
		/* The line that says why: the last one. */
		error_line("%s%s", bad->errmsg, removed ?
			   " (older traces removed to make room: a restart goes on where this stopped)" : "");
		return 1;
	}
	if (ss.failed) {
		sync_failure_line(&ss);
		return 1;
	}
	return end == RUN_FAILED ? 1 : 0;
}

int main(int argc, char **argv)
{
	enum run_end end = RUN_STOP;
	char levels[64];
	int err;

	msg_prog = PROG;
	parse_options(argc, argv);
	if (opt.recover)
		return prevboot_main();
	setup_signals();
	nofile_raise();

	control_find();
	restore_stale();
	if (opt.triggers.n)
		return trigger_main(sigfd);
	control_setup();
	drain_open_buffers();
	outdir_create();
	/* Earlier traces' sets locked before --max-total looks at them. */
	if (opt.on_chunk) {
		recover_mark_trace();
		recover_sets();
	}
	outdir_retention();
	copy_metadata();
	err = packer_start(ncpus, opt.workers, opt.level, outdirfd);
	if (err)
		die("the compression threads: %s", strerror(-err));
	if (opt.on_chunk)
		handoff_start();
	notifyfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (notifyfd < 0)
		die("eventfd: %s", strerror(errno));
	round_files = calloc(ncpus, sizeof(*round_files));
	if (!round_files)
		die("%s", strerror(ENOMEM));
	err = syncer_start(outdirfd, notifyfd, nofile_budget(ncpus));
	if (err)
		die("the sync thread: %s", strerror(-err));
	setup_loop();
	err = drain_start(notifyfd);
	if (err)
		die("%s", cpus[0].errmsg[0] ? cpus[0].errmsg :
		    "the drain threads: cannot start them");
	/* The first chunks' names survive a crash. */
	if (fsync(outdirfd) < 0)
		die("%s: %s", outdir, strerror(errno));

	if (opt.start) {
		err = ctl_write(&ctl, "tracing_on", "1");
		if (err) {
			stop(RUN_FAILED);
			error_line("%s/tracing_on: %s", ctl.dir, strerror(-err));
			return 1;
		}
		/* They parked on the stopped, empty buffers: drain now. */
		for (unsigned int i = 0; i < ncpus; i++)
			drain_request(&cpus[i], REQ_WAKE);
	}
	if (opt.level == RT_LEVEL_STORE)
		snprintf(levels, sizeof(levels), "uncompressed");
	else
		snprintf(levels, sizeof(levels), "compressed at zstd level %d by %u workers",
			 opt.level, opt.workers);
	info("recording %u CPU%s (%u x %u bytes each) into %s, chunks of %llu bytes %s%s",
	     ncpus, ncpus == 1 ? "" : "s", cpus[0].buf.num_subbufs,
	     cpus[0].buf.subbuf_size, outdir, (unsigned long long)opt.max_size,
	     levels, opt.start ? ", tracing on" : "");
	notify_systemd("READY=1");

	if (!opt.once)
		end = run();
	return stop(end);
}
