/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtraced: declarations shared by its files.
 *
 *   main.c       startup, the control loop (signals, the flush tick, what
 *                the drain threads report), stop and exit status
 *   options.c    --help, and the command line into `opt`
 *   control.c    ringtrace's control files: mode, geometry, tracing_on
 *   outdir.c     the trace directory: create it, --max-total
 *   drain.c      one thread per CPU: GET, write, PUT; flush, roll, stop
 *   buffer.c     one CPU buffer file of ringtrace.ko: mmap and the ioctls
 *   chunks.c     one CPU's chunk files: stored frames, rolling, --max-files
 *   packer.c     the worker threads that pack closed chunks, and their queue
 *   syncer.c     the thread that makes written data durable
 *   nofile.c     RLIMIT_NOFILE: raised, checked, the syncer's share
 *   metadata.c   the trace's copy of the metadata, following the event set
 *   retention.c  removing the oldest traces of --root
 *   report.c     the summary, SIGUSR1's statistics, systemd's STATUS=
 *   handoff.c    --on-chunk: closed rotations into chunk sets, the hook
 *   manifest.c   --on-chunk: a chunk set's manifest.json
 *   trigger.c    --trigger: no drain; a snapshot (ringtraced --once) per hit
 *   restore.c    ringtrace record's restore file: what it changed, put back
 *
 * and, shared with the ringtrace CLI, ../lib/: messages (msg.c), parsers
 * (parse.c), the control files (ctl.c), chunks and packing (chunk.c),
 * trigger conditions (filters.c) and the snapshots of their hits
 * (trigger.c).
 *
 * Threads, and what they share:
 *
 *   main ---- requests (flush, rotate, stop) ----> drain thread, one per CPU
 *        <--- acknowledgements, errors (eventfd) --
 *   drain threads --- closed chunks ---> packer queue ---> packer threads
 *   drain threads --- closed chunk fds --> syncer <--- rounds --- main
 *   drain threads --- closed chunks' facts --> handoff thread <--- sets
 *        closed (main), chunks packed (packers) --- hook processes
 *
 * A drain thread never waits for a packer, the syncer or another CPU: it
 * takes at most a mutex held for a pointer swap or a dup().
 */
#ifndef RINGTRACED_H
#define RINGTRACED_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <linux/ringtrace.h>

#include "../lib/chunk.h"
#include "../lib/ctl.h"
#include "../lib/filters.h"
#include "../lib/ksyms.h"
#include "../lib/msg.h"
#include "../lib/parse.h"

#define PROG "ringtraced"

/* A level below every zstd level: chunks stay stored, nothing is packed. */
#define RT_LEVEL_STORE		INT_MIN

/* Counters one thread writes and others read: whole 64-bit loads/stores. */
#define COUNTER_READ(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define COUNTER_ADD(x, v)	__atomic_store_n(&(x), (x) + (v), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------ */
/* options.c                                                            */
/* ------------------------------------------------------------------ */

#define SERVICE_DIR		"/var/lib/ringtrace"

struct options {
	const char *debugfs;
	const char *output;
	const char *cpus;
	int level;			/* zstd level, or RT_LEVEL_STORE */
	unsigned int workers;		/* packer threads */
	unsigned int flush_ms;
	uint64_t max_size;		/* bytes per chunk */
	bool max_size_given;		/* ... by the user */
	uint64_t chunk_ms;		/* close a chunk this old; 0: never */
	unsigned int max_files;		/* chunks kept per CPU; 0: all */
	bool start;
	bool stop_on_exit;
	bool once;			/* drain what is there, then exit */
	uint64_t subbuf_size;		/* 0: leave as is */
	uint64_t num_subbufs;		/* 0: leave as is */
	const char *mode;		/* NULL: leave as is */
	const char *root;		/* a trace directory per start in it */
	uint64_t max_total;		/* 0: no budget for root's traces */
	uint64_t max_total_ms;		/* --max-total-interval */
	unsigned int delay_us;		/* testing: slow consumer */
	unsigned int wakeup;		/* --wakeup: packets; 0: a quarter */
	const char *on_chunk;		/* --on-chunk: chunk sets, this hook */
	uint64_t hook_ms;		/* --on-chunk-timeout */
	uint64_t hook_kill_ms;		/* --on-chunk-kill-after */
	unsigned int hook_queue;	/* --on-chunk-queue */
	uint64_t stop_ms;		/* --stop-timeout; 0: none */
	/* --trigger: the flight recorder that saves itself (trigger.c) */
	struct filters triggers;	/* --trigger 'EVENT: EXPR', in order */
	uint64_t after_ms;		/* --after */
	unsigned int max_snapshots;	/* --max; 0: no bound */
	uint64_t symbols_max;		/* --symbols-max, bytes */
	bool no_symbols;		/* --no-symbols */
	bool splice;			/* --splice: splice, not pwritev() */
	/* --recover: the persistent region's trace (prevboot.c) */
	bool recover;
	const char *image;		/* --image: a file, not persist/image */
	bool force;			/* --force: another build's image */
	bool keep;			/* --keep: no release */
	bool discard;			/* --discard: release, write nothing */
};
extern struct options opt;

void parse_options(int argc, char **argv);
/* A usage error: one line, a hint at --help, exit 2. */
__attribute__((noreturn, format(printf, 1, 2)))
void usage_error(const char *fmt, ...);
/* "3", "-5", "store". */
struct level_name {
	char s[16];
};
struct level_name level_name(int level);

/* ------------------------------------------------------------------ */
/* control.c                                                            */
/* ------------------------------------------------------------------ */

extern struct ctl ctl;			/* where ringtrace's files are */

/* Find ringtrace's control files; dies on error. */
void control_find(void);
/* Apply --mode/--subbuf-size/--num-subbufs; dies on error. */
void control_setup(void);

/* ------------------------------------------------------------------ */
/* outdir.c                                                             */
/* ------------------------------------------------------------------ */

extern char outdir[PATH_MAX];
extern const char *outname;		/* outdir's name in its root */
extern int outdirfd;

/*
 * Create the trace directory, or take -o's if it is empty, this user's
 * and written by no one else (dies otherwise); its parent is synced.
 */
void outdir_create(void);
/* --max-total, at most every 10 s (the first call at once). */
void outdir_retention(void);
/* After ENOSPC: remove every older trace --max-total may remove; how many. */
unsigned int outdir_make_room(void);
/* True the first time, then once 10 s have passed since it last was. */
bool due_every_10s(time_t *last);

/* ------------------------------------------------------------------ */
/* buffer.c                                                             */
/* ------------------------------------------------------------------ */

struct rt_buffer {
	unsigned int cpu;
	int fd;
	const uint8_t *map;		/* meta page + sub-buffers, read-only */
	size_t map_len;
	const struct ringtrace_meta *meta;
	uint32_t meta_page_size;
	uint32_t subbuf_size;
	uint32_t num_subbufs;
	char path[96];
	/*
	 * The module's counts (since its load) when the buffer was opened:
	 * buffer_stats() and buffer_lost() say what came since, this
	 * recording's, as its packets do (the uapi header).
	 */
	struct ringtrace_stats base;
};

/* All return 0 or -errno; @b->path names the file for messages. */
int buffer_open(struct rt_buffer *b, const char *rtdir, unsigned int cpu);
void buffer_close(struct rt_buffer *b);
int buffer_get(struct rt_buffer *b, struct ringtrace_subbuf *sb);
int buffer_put(struct rt_buffer *b, const struct ringtrace_subbuf *sb);
int buffer_flush(struct rt_buffer *b);
int buffer_positions(struct rt_buffer *b, struct ringtrace_positions *p);
/* The module's counts since the buffer was opened (@b->base). */
int buffer_stats(struct rt_buffer *b, struct ringtrace_stats *st);
int buffer_set_wakeup(struct rt_buffer *b, unsigned int packets);

/* The module splices held packets into pipes (an older one: 0 here). */
static inline bool buffer_can_splice(const struct rt_buffer *b)
{
	return b->meta->features & RINGTRACE_FEATURE_SPLICE;
}
/* True when the positions say a packet is open (being written). */
bool positions_packet_open(const struct ringtrace_positions *p);
/* Events lost since the open, all causes, as the meta page last showed. */
uint64_t buffer_lost(const struct rt_buffer *b);
/* The event set's generation, as the meta page last showed. */
uint64_t buffer_events_gen(const struct rt_buffer *b);

/* ------------------------------------------------------------------ */
/* packer.c: the chunk table and the workers                            */
/* ------------------------------------------------------------------ */

enum chunk_state {
	CHUNK_OPEN,			/* its drain thread appends to it */
	CHUNK_QUEUED,			/* closed, stored, waiting for a packer */
	CHUNK_PACKING,			/* a packer reads it */
	CHUNK_RENAMING,			/* the packed file is replacing it */
	CHUNK_PACKED,			/* packed, on disk */
	CHUNK_KEPT,			/* stays stored (--level store, or why) */
};

/* One chunk file; fields under the table's lock unless said. */
struct chunk {
	struct chunk *next;		/* its CPU's list, oldest first */
	struct chunk *qnext;		/* the packers' queue, oldest first */
	unsigned int cpu_index;		/* constant */
	unsigned int cpu;		/* constant */
	unsigned int seq;		/* constant */
	enum chunk_state state;
	bool removed;			/* --max-files took it from a packer */
	uint64_t closed;		/* the order in which chunks closed */
	uint64_t stored;		/* bytes when closed */
	uint64_t packed;		/* bytes once packed */
};

/* What a closed chunk's packets said (chunks.c), for its set's manifest. */
struct chunk_facts {
	unsigned int cpu;
	unsigned int seq;
	uint64_t packets;
	uint64_t events;		/* in its packets */
	uint64_t lost;			/* events_discarded grew by this */
	uint64_t ts_first;		/* first packet's timestamp_begin */
	uint64_t ts_last;		/* last packet's timestamp_end */
};

struct packer_stats {
	unsigned int workers, busy;
	uint64_t queued, queued_bytes;	/* closed, waiting for a packer */
	uint64_t packing_bytes;		/* stored bytes being packed now */
	uint64_t packed, packed_in, packed_out;
	uint64_t kept, kept_bytes;	/* stay stored: store, failed, stopped */
	uint64_t failed;		/* of them: packing failed */
	uint64_t left, left_bytes;	/* of them: a stop came first */
	double cpu_s;			/* the workers' CPU time */
};

/*
 * The table for @ncpus CPUs and, unless @level is RT_LEVEL_STORE,
 * @workers packer threads for @dirfd's chunks (they start at once, idle).
 */
int packer_start(unsigned int ncpus, unsigned int workers, int level,
		 int dirfd);
/* A new chunk of CPU @cpu_index; the CPU's drain thread owns it. */
struct chunk *packer_chunk_new(unsigned int cpu_index, unsigned int cpu,
			       unsigned int seq);
/* Chunks of CPU @cpu_index in the table: on disk, the open one included. */
unsigned int packer_chunks_on_disk(unsigned int cpu_index);
/* Closed at @bytes: queued for packing, or kept (store, or empty). */
void packer_chunk_closed(struct chunk *c, uint64_t bytes, bool pack);
/* Closed and empty: its file is gone, forget it. */
void packer_chunk_drop(struct chunk *c);
/*
 * --max-total: the oldest closed chunk of any CPU leaves the table.  True
 * with its CPU and number when the caller must unlink it; false when there
 * is none, or (*@cpu set to UINT_MAX) when its packer removes it.
 */
bool packer_take_oldest(unsigned int *cpu, unsigned int *seq);
/*
 * --max-files: the oldest chunks of @cpu_index beyond @keep leave the
 * table; their names go to @gone (up to @max, the caller unlinks them).
 * One that a packer holds is marked and its packer removes it.
 */
unsigned int packer_prune(unsigned int cpu_index, unsigned int keep,
			  unsigned int *gone, unsigned int max);
void packer_stats(struct packer_stats *st);
/* The recording is over: run at normal priority to finish sooner. */
void packer_boost(void);
/* Nothing queued and no packer busy. */
bool packer_idle(void);
/* Stop packing: the chunk in hand stays stored; join the threads. */
void packer_stop(bool abandon);
/*
 * --on-chunk: true when chunk @seq of CPU @cpu_index is what it will stay
 * (packed or kept stored, or no longer in the table); it then leaves the
 * table, so that it is no longer counted or removed as the trace's.
 */
bool packer_chunk_settle(unsigned int cpu_index, unsigned int seq);

struct sync_file;			/* syncer.c */

/* ------------------------------------------------------------------ */
/* chunks.c: one CPU's chunk files, used by its drain thread             */
/* ------------------------------------------------------------------ */

struct chunk_writer {
	unsigned int cpu;		/* constant */
	unsigned int cpu_index;		/* constant */
	int dirfd;			/* constant */
	/* The current chunk; @fd and @name change under @fd_lock. */
	pthread_mutex_t fd_lock;
	int fd;
	char name[CHUNK_NAME_MAX];
	struct chunk *cur;
	unsigned int seq;
	uint64_t size;			/* bytes in it */
	uint64_t first_ms;		/* CLOCK_MONOTONIC, its first packet */
	bool prune_due;			/* --max-files once it holds a packet */
	bool set_asked;			/* --on-chunk: rotation asked for it */
	struct chunk_facts facts;	/* of the current chunk */
	uint64_t discarded;		/* the last packet's events_discarded */
	uint64_t discarded_base;	/* ... when the current chunk opened */
	/* Scratch for one stored frame. */
	struct iovec *iov;
	struct chunk_stored_hdrs hdrs;
	size_t max_packet;
	/* Written by the drain thread, read by reports (COUNTER_*). */
	uint64_t packets;
	uint64_t bytes_in;		/* packet bytes */
	uint64_t bytes_out;		/* stored bytes written */
	uint64_t chunks;		/* chunks opened */
	uint64_t packets_unsaved;	/* cut back after a failed write */
	uint64_t spliced;		/* of @packets, stored by splice */
	/* Splicing (chunks_source()): the buffer file, a pipe's room. */
	int src_fd;
	const uint8_t *src_map;		/* NULL: pwritev() from the mapping */
	size_t src_len;
	int pipe[2];
	size_t page;
	unsigned int pipe_slots;	/* pages the pipe holds */
	unsigned int pipe_free;		/* ... still free */
	size_t pipe_bytes;		/* in it, not yet in the chunk */
};

/* Chunk 1 of CPU @cpu, for packets of at most @max_packet bytes. */
int chunks_open(struct chunk_writer *w, unsigned int cpu,
		unsigned int cpu_index, int dirfd, size_t max_packet);
/*
 * Splice @src's held packets into the chunks (with --splice, when the
 * module offers it): chunks_write()'s data in @src's mapping then
 * comes from the module's pages; 0 or -errno.  chunks_unsource() stops.
 */
int chunks_source(struct chunk_writer *w, const struct rt_buffer *src);
void chunks_unsource(struct chunk_writer *w);
/* One packet as a stored frame: whole, or -errno with the file cut back. */
int chunks_write(struct chunk_writer *w, const void *data, size_t len);
/*
 * After a PUT: apply --max-files if this chunk just got its first packet;
 * close the chunk if full or old enough, open the next.  With --on-chunk
 * a CPU never rolls alone: 1 asks main for a rotation of every CPU (once
 * per chunk).
 */
int chunks_roll_if_due(struct chunk_writer *w, uint64_t now_ms);
/* Close the chunk now (SIGHUP) and open the next. */
int chunks_roll(struct chunk_writer *w);
/* At stop: close the last chunk for packing; never fails. */
void chunks_finish(struct chunk_writer *w);
/*
 * For a sync round: a dup() of the current chunk's fd, and its name.
 * -EBADF when there is none (closed, the next not yet open), or -errno.
 */
int chunks_dup(struct chunk_writer *w, struct sync_file *f);
/* The current chunk's name, as another thread sees it. */
void chunks_current_name(struct chunk_writer *w, char *buf, size_t size);
/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t now_ms(void);
/* The calling thread's CPU time, and another running thread's. */
double thread_cpu_s(void);
double pthread_cpu_s(pthread_t t);

/* ------------------------------------------------------------------ */
/* drain.c                                                              */
/* ------------------------------------------------------------------ */

/* Requests of main to a drain thread (bits of cpu->req). */
#define REQ_FLUSH	0x1		/* close the open packet, drain, ack */
#define REQ_ROTATE	0x2		/* flush, then start a new chunk, ack */
#define REQ_STOP	0x4		/* drain to the end, finish, exit */
#define REQ_ABORT	0x8		/* finish at once, exit */
#define REQ_WAKE	0x10		/* tracing was turned on: stop parking */

struct cpu {
	struct rt_buffer buf;
	struct chunk_writer out;
	pthread_t thread;
	bool started;
	int evfd;			/* main -> thread: look at @req */
	/* Written by main, read by the thread. */
	unsigned int req;		/* REQ_* (atomic or/exchange) */
	uint64_t flush_gen;		/* the generation REQ_FLUSH asks for */
	bool tracing_off;		/* REQ_STOP: main turned tracing off */
	/* Written by the thread, read by main (acquire/release). */
	uint64_t flush_done;		/* flush_gen last acknowledged */
	uint64_t rotate_done;		/* rotations acknowledged */
	bool exited;
	int err;			/* what ended the thread, or 0 */
	char errmsg[PATH_MAX + 128];
	double cpu_s;			/* its CPU time, once exited */
};

extern struct cpu *cpus;
extern unsigned int ncpus;
/* --on-chunk: the newest chunk set whose CPU asked for a rotation. */
extern unsigned int set_rotation_wanted;

/* Open every CPU buffer to record (dies on error). */
void drain_open_buffers(void);
/* Start the threads; each writes main's @notify_fd when it has news. */
int drain_start(int notify_fd);
/* Ask @c for @req (REQ_*). */
void drain_request(struct cpu *c, unsigned int req);
/* Wait for every thread to exit. */
void drain_join(void);

/* ------------------------------------------------------------------ */
/* metadata.c                                                           */
/* ------------------------------------------------------------------ */

/* Copy the module's metadata to dirfd/metadata (new), as of @gen. */
/*
 * region.c: what the module's persistent region needs of userspace, when
 * it is live (persist/info): 0 or -errno.
 */
bool region_live(const struct ctl *c);
int region_identity(const struct ctl *c);
int region_ksyms(const struct ctl *c, const void *z, size_t len);

int metadata_start(const struct ctl *ctl, int dirfd, uint64_t gen);
/*
 * After a GET that showed @gen: bring the copy up to date if it is newer.
 * Called by every drain thread; the first to see a generation does it.
 */
int metadata_follow(const struct ctl *ctl, int dirfd, uint64_t gen);
void metadata_free(void);
/* A copy of the trace's metadata as it is now (malloc'd), or NULL. */
char *metadata_snapshot(size_t *len);

/* ------------------------------------------------------------------ */
/* syncer.c                                                             */
/* ------------------------------------------------------------------ */

/* A file of a sync round: a chunk, by fd or by name (fd -1), or ".". */
struct sync_file {
	int fd;
	bool held;			/* a closed chunk's fd: budgeted */
	char name[CHUNK_NAME_MAX];	/* in the trace directory */
};

struct syncer_stats {
	uint64_t rounds;		/* completed */
	uint64_t failed;		/* files whose sync failed */
	int fail_err;			/* the first failure: -errno */
	char fail_name[CHUNK_NAME_MAX];	/* its file ("." the dir) */
};

/*
 * The thread, for the files of @dirfd.  A failure is written to main's
 * @notify_fd (-1: none); at most @max_fds fds of closed chunks are held.
 */
int syncer_start(int dirfd, int notify_fd, unsigned int max_fds);
/*
 * A round: fdatasync each of @files (their fds taken over: closed by the
 * syncer), the closed chunks adopted since the last round, then fsync the
 * directory.  -EBUSY while the previous round runs (the fds are closed,
 * nothing taken).
 */
int syncer_request(struct sync_file *files, unsigned int nr);
/* A closed chunk's fd: synced and closed by the next round. */
void syncer_adopt(int fd, const char *name);
/* @name (in the trace directory) could not be made durable: -@err. */
void syncer_failure(const char *name, int err);
void syncer_status(struct syncer_stats *st);
/*
 * Waits for a round in progress, syncs what was adopted and the
 * directory, ends the thread: the first failure, or 0.
 */
int syncer_stop(void);

/* Rounds skipped because a dup() failed (main.c). */
extern uint64_t sync_skipped;

/* ------------------------------------------------------------------ */
/* nofile.c                                                             */
/* ------------------------------------------------------------------ */

/* The soft limit of open files up to the hard one. */
void nofile_raise(void);
/*
 * Dies unless the limit allows @ncpus CPUs and the packers; returns how
 * many fds of closed chunks the syncer may hold.
 */
unsigned int nofile_budget(unsigned int ncpus);

/* ------------------------------------------------------------------ */
/* retention.c                                                          */
/* ------------------------------------------------------------------ */

/*
 * Remove the oldest trace directories under @root, never @current (a name
 * in @root) nor one in use (locked), until all of them together take at
 * most @max_total bytes; how many went in *@removed (may be NULL).
 * -ENOSPC if @current alone is over, by *@over bytes (may be NULL), those
 * in use left out; other -errno on failure.
 */
int retention_prune(const char *root, const char *current, uint64_t max_total,
		    unsigned int *removed, uint64_t *over);
/*
 * Bytes on disk of the trace directory @name of @rootfd, its sets and what
 * a hook made in them too (no symlink followed, no mount entered).
 */
int64_t retention_dir_bytes(int rootfd, const char *name);
/*
 * @name of @dirfd removed with all it holds, subdirectories too (a set's
 * tombstone, what a hook made in it): never through a symlink (one is
 * removed itself), nor into another file system; 0 or -errno.
 */
int retention_remove_tree(int dirfd, const char *name);
/*
 * The directory @name of @rootfd (no symlink followed), open close-on-exec
 * with flock(LOCK_EX) taken: the descriptor, -EBUSY when another holds the
 * lock (a ringtraced, `ringtrace compress`, a hook), other -errno.
 */
int open_locked(int rootfd, const char *name);

/* ------------------------------------------------------------------ */
/* report.c                                                             */
/* ------------------------------------------------------------------ */

/* Per CPU and in all: packets, bytes, losses; chunks and packers. */
void report_print(const char *title);

/* symbols.c: the trace's symbol store, filled at a drained recording's stop. */
void symbols_at_stop(void);
/* systemd's STATUS=, every 10 s. */
void report_status(void);
/* One line on the packers' backlog, for the wait at stop. */
void report_backlog(const char *what);

/* ------------------------------------------------------------------ */
/* handoff.c, manifest.c: --on-chunk                                     */
/* ------------------------------------------------------------------ */

#define SET_NAME_MAX		32	/* chunk-NNNNNN */

/* @s as a JSON string: quotes, backslashes and control bytes escaped. */
void json_str(FILE *f, const char *s);

/*
 * In a trace directory made with --on-chunk: its sets are handed to the
 * hook, and those not marked shipped again by a later start (recover.c).
 */
#define HANDOFF_MARKER		".ringtrace-handoff"
/* Set @seq's hook exited 0 (the set still there): ".chunk-NNNNNN.shipped". */
#define SHIPPED_NAME_MAX	(SET_NAME_MAX + 16)
void shipped_name(char *buf, size_t size, unsigned int seq);

struct handoff_stats {
	uint64_t sets;			/* assembled into chunk-NNNNNN/ */
	uint64_t failed_sets;		/* could not be assembled */
	uint64_t recovered;		/* an earlier ringtraced's, handed again */
	uint64_t hooks_ok;		/* the hook exited 0 */
	uint64_t hooks_failed;		/* exited non-zero, or killed */
	uint64_t hooks_timed_out;	/* of them: killed after the timeout */
	uint64_t hooks_stopped;		/* of them: killed at the stop's deadline */
	uint64_t not_handed;		/* the queue was full: waiting on disk
					   for room, or never handed */
	unsigned int queued;		/* waiting for the hook */
	bool running;			/* a hook runs now */
	/* Once the thread is over: what the next start hands over. */
	uint64_t left_sets;		/* assembled, not shipped */
	uint64_t left_rotations;	/* chunks not in a set yet */
};

/*
 * --on-chunk @cmd (options.c): a program alone -- a word a shell takes as
 * it is, naming an executable file -- gets SETDIR MANIFEST as arguments;
 * anything else is shell text, warned about when it uses none of them or
 * runs something in the background.
 */
void handoff_hook_option(const char *cmd);
/* The thread that assembles sets and runs the hook; dies on error. */
void handoff_start(void);
/* A drain thread closed a chunk (not an empty one it removed). */
void handoff_chunk_closed(const struct chunk_facts *f);
/* Every CPU has closed its chunk of sets up to @seq (main). */
void handoff_sets_closed(unsigned int seq);
/* A file into a set's directory, synced (handoff.c; recover.c replaces). */
int copy_synced(int dirfd, int setfd, const char *name, bool replace);
/*
 * This start's trace directory marked as one whose sets are handed off
 * (HANDOFF_MARKER, synced): a later start trusts it (outdir_create() took
 * only a directory of this user's that no one else writes).
 */
void recover_mark_trace(void);
/*
 * recover.c, at start with --on-chunk, before handoff_start() and the first
 * --max-total: the traces beside outdir that an earlier ringtraced made
 * with --on-chunk and no process holds: every set there not marked
 * shipped, and every rotation a kill left unassembled, queued for the hook
 * (the traces stay locked while any of their sets is queued or hooked).
 */
void recover_sets(void);
/* One set of an earlier trace: @finish: a rotation to assemble first. */
struct recovered {
	unsigned int seq;
	bool finish;
	bool skip;			/* recover.c's: there, not handed over */
};
/*
 * The sets @r (@n of them, in order) of the trace @path, open and locked as
 * @fd (handoff.c takes it over, closes it once they are done), queued.
 */
void handoff_recovered(int fd, const char *path, const struct recovered *r,
		       unsigned int n);
/*
 * On the handoff thread: rotation @seq of the earlier trace @tfd (@tpath)
 * made a set, chunk-NNNNNN/, as handoff.c would have (what failed in
 * @what); 0 or -errno.
 */
int recover_finish(int tfd, const char *tpath, unsigned int seq, char *what,
		   size_t wsize);
/* A packer settled a chunk: look again. */
void handoff_kick(void);
/*
 * The stop: whatever is not done by @deadline_ms (CLOCK_MONOTONIC ms;
 * UINT64_MAX: none) stays for the next start.  Called again to hurry.
 */
void handoff_deadline(uint64_t deadline_ms);
/*
 * The stop (main): the sets left assembled and the hooks queued run until
 * done or *@deadline; a signal on @sigfd makes @hurried() look (it may
 * bring *@deadline forward).  Then the thread is joined, its sets
 * forgotten, and what is left for the next start said.
 */
void handoff_finish(int sigfd, bool (*hurried)(uint64_t *deadline),
		    uint64_t *deadline);
void handoff_status(struct handoff_stats *st);
/*
 * --max-total: the oldest set of this trace on disk that no hook holds nor
 * will (not queued), those shipped first: named in @name, *@seq and
 * *@shipped said.  It stays known, handed to no hook, until the caller
 * says what became of it.  False when there is none.
 */
bool handoff_take_oldest(char *name, size_t size, unsigned int *seq,
			 bool *shipped);
/*
 * Set @seq taken is gone (@err 0): forgotten.  Held by a process its hook
 * left (-EBUSY): taken again no sooner than 10 s on.  Else it stays, and
 * --max-total does not take it again.
 */
void handoff_removed(unsigned int seq, int err);

struct manifest_file {
	char name[CHUNK_NAME_MAX];
	uint64_t size;
	uint64_t xxh64;
};

/*
 * Where a set comes from: this machine now (manifest_origin_now()), or,
 * for a set recover.c finishes, the recording it belongs to.
 */
struct manifest_origin {
	char host[256], boot_id[64], release[128];
	const char *trace;		/* the trace directory's name */
	int64_t mono, real, boot;	/* the three clocks, read together */
	bool recovered;
};
void manifest_origin_now(struct manifest_origin *o);

/*
 * Write @setfd/manifest.json (synced) for set @seq: the chunks' facts
 * (@nf of them), its files (@nfiles), and where it comes from.
 */
int manifest_write(int setfd, unsigned int seq, const struct chunk_facts *f,
		   unsigned int nf, const struct manifest_file *files,
		   unsigned int nfiles, const char *metadata,
		   const struct manifest_origin *o);
/* Size and XXH64 of @dirfd/@name, read whole; -errno. */
int manifest_file_sum(int dirfd, const char *name, struct manifest_file *mf);
/*
 * @dirfd/CLOCK_FILE (../lib/clockfile.h): the clocks now, as the
 * recording ends; synced, replaced whole.  -errno.
 */
int clock_file_write(int dirfd);

/* ------------------------------------------------------------------ */
/* trigger.c: --trigger                                                 */
/* ------------------------------------------------------------------ */

/*
 * The whole run with --trigger, from the control files found to the exit
 * status: the buffers in overwrite mode, not drained; a snapshot per hit.
 */
int trigger_main(int sigfd);

/* ------------------------------------------------------------------ */
/* restore.c: ringtrace record's restore file (../lib/ctlsave.h)         */
/* ------------------------------------------------------------------ */

/* --restore-fd=FD (options.c); usage error unless FD is an open file. */
void restore_option(const char *arg);
/* At start, once the control files are found: what killed ones owed. */
void restore_stale(void);
/* At the end of stop(), buffers closed: record gone, its values back. */
void restore_at_stop(void);

/* ------------------------------------------------------------------ */
/* prevboot.c: --recover                                                */
/* ------------------------------------------------------------------ */

/* The persistent region's trace into a directory; the exit status. */
int prevboot_main(void);

#endif /* RINGTRACED_H */
