// SPDX-License-Identifier: GPL-2.0
/*
 * The packers: worker threads that compress closed chunks behind the
 * drain threads, and the table of every chunk of the trace.
 *
 *   drain thread (chunks.c)          table + queue            packer thread
 *   close chunk k        ---------> QUEUED, oldest first  ---> PACKING
 *                                                              chunk_pack(): .tmp,
 *                                                              fdatasync
 *                                                              RENAMING: rename
 *                                                              over the chunk,
 *                                                              fsync(dir)
 *                                                              PACKED
 *
 * Crash safety comes from the rename: until it, the stored chunk is whole
 * and the hidden .tmp is nobody's (the trace readers never list it); after
 * it, the packed file is whole, because it was synced first.  A kill at any
 * moment leaves every chunk stored or packed, complete, never neither.
 *
 * Packers run at idle CPU and I/O priority while the trace is recorded:
 * the drain threads, and the workload being traced, always come first, so
 * a load that leaves no CPU idle makes the queue (stored bytes on disk)
 * grow instead of costing events.  Once recording stops they are raised
 * to normal priority (packer_boost()) to finish the backlog.
 *
 * Memory is bounded: each packer holds one zstd compressor whose window
 * and tables chunk.h caps, one packet, and one output buffer.
 *
 * Each packed chunk gets a thread table (lib/chunk_index.h) in front of its
 * time index: the packer decodes the packets it packs with the trace's
 * metadata (the directory's, which declares every event on disk:
 * metadata.c) and keeps, per frame, what they tell of threads
 * (tools/lib/facts.c), so that a window read later learns it without
 * decoding the frames before it.  Facts are local to the frame: a packer
 * sees one CPU's chunk, and chunks of one CPU may be packed at once.
 *
 * Locking: one mutex (pk.lock) for the table, the queue and the counters,
 * held only around pointer and state changes, never across I/O.  A drain
 * thread takes it when a chunk opens or closes (once per chunk); a packer
 * when it takes a chunk and when it is done with it.  --max-files and
 * --max-total may remove a chunk a packer holds: it is only marked, and
 * the packer, which owns it until it is done, removes its files and frees
 * it.  A packer that is done with a chunk says so (its state, the
 * counters, busy) in one section and never touches it again: from then on
 * the chunk is theirs to free.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/ioprio.h>

#include "ringtraced.h"
#include "../tools/lib/rtdecode.h"

struct cpu_chunks {
	struct chunk *oldest, *newest;
	unsigned int count;		/* chunks in the list, on disk */
};

struct worker {
	pthread_t thread;
	pid_t tid;			/* set by the thread, read by boost */
	struct chunk_packer *packer;
	struct rt_table_maker *table;	/* the packer's thread tables */
	bool started;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a chunk was queued, or stop */
	struct cpu_chunks *cpus;
	unsigned int ncpus;
	struct chunk *qhead, *qtail;	/* QUEUED chunks, oldest first */
	struct worker *workers;
	unsigned int nworkers;
	int dirfd;
	bool stop;			/* no new chunk will be taken */
	bool cancel;			/* ... and the ones in hand are dropped */
	struct packer_stats st;		/* but .workers */
	uint64_t closes;		/* chunks closed so far */
	bool running;			/* the workers have not been joined */
} pk = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
};

/* ---- the table ---------------------------------------------------------------- */

struct chunk *packer_chunk_new(unsigned int cpu_index, unsigned int cpu,
			       unsigned int seq)
{
	struct chunk *c = calloc(1, sizeof(*c));
	struct cpu_chunks *l = &pk.cpus[cpu_index];

	if (!c)
		return NULL;
	c->cpu_index = cpu_index;
	c->cpu = cpu;
	c->seq = seq;
	c->state = CHUNK_OPEN;
	pthread_mutex_lock(&pk.lock);
	if (l->newest)
		l->newest->next = c;
	else
		l->oldest = c;
	l->newest = c;
	l->count++;
	pthread_mutex_unlock(&pk.lock);
	return c;
}

unsigned int packer_chunks_on_disk(unsigned int cpu_index)
{
	unsigned int n;

	pthread_mutex_lock(&pk.lock);
	n = pk.cpus[cpu_index].count;
	pthread_mutex_unlock(&pk.lock);
	return n;
}

/* Take @c out of its CPU's list; the lock is held. */
static void unlist(struct chunk *c)
{
	struct cpu_chunks *l = &pk.cpus[c->cpu_index];
	struct chunk **pp;

	for (pp = &l->oldest; *pp; pp = &(*pp)->next) {
		if (*pp != c)
			continue;
		*pp = c->next;
		if (l->newest == c) {
			struct chunk *p;

			l->newest = NULL;
			for (p = l->oldest; p; p = p->next)
				l->newest = p;
		}
		l->count--;
		return;
	}
}

/* Take @c out of the queue; the lock is held. */
static void dequeue(struct chunk *c)
{
	struct chunk **pp, *prev = NULL;

	for (pp = &pk.qhead; *pp; prev = *pp, pp = &(*pp)->qnext) {
		if (*pp != c)
			continue;
		*pp = c->qnext;
		if (pk.qtail == c)
			pk.qtail = prev;
		pk.st.queued--;
		pk.st.queued_bytes -= c->stored;
		return;
	}
}

void packer_chunk_closed(struct chunk *c, uint64_t bytes, bool pack)
{
	pthread_mutex_lock(&pk.lock);
	c->stored = bytes;
	c->closed = ++pk.closes;
	if (!pack || !pk.nworkers) {
		c->state = CHUNK_KEPT;
		if (pack) {
			pk.st.kept++;		/* --level store */
			pk.st.kept_bytes += bytes;
		}
	} else {
		c->state = CHUNK_QUEUED;
		if (pk.qtail)
			pk.qtail->qnext = c;
		else
			pk.qhead = c;
		pk.qtail = c;
		pk.st.queued++;
		pk.st.queued_bytes += bytes;
		pthread_cond_signal(&pk.work);
	}
	pthread_mutex_unlock(&pk.lock);
}

void packer_chunk_drop(struct chunk *c)
{
	pthread_mutex_lock(&pk.lock);
	unlist(c);
	pthread_mutex_unlock(&pk.lock);
	free(c);
}

bool packer_take_oldest(unsigned int *cpu, unsigned int *seq)
{
	struct chunk *c, *old = NULL;
	unsigned int i;

	if (!pk.cpus)
		return false;		/* before packer_start() */
	pthread_mutex_lock(&pk.lock);
	for (i = 0; i < pk.ncpus; i++) {
		/* Oldest first in each list: the first closed one of each. */
		for (c = pk.cpus[i].oldest; c && c->state == CHUNK_OPEN; c = c->next)
			;
		if (c && (!old || c->closed < old->closed))
			old = c;
	}
	if (!old) {
		pthread_mutex_unlock(&pk.lock);
		return false;
	}
	unlist(old);
	*cpu = old->cpu;
	*seq = old->seq;
	switch (old->state) {
	case CHUNK_PACKING:
	case CHUNK_RENAMING:
		old->removed = true;	/* its packer removes the files */
		*cpu = UINT_MAX;
		pthread_mutex_unlock(&pk.lock);
		return true;
	case CHUNK_QUEUED:
		dequeue(old);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&pk.lock);
	free(old);
	return true;
}

unsigned int packer_prune(unsigned int cpu_index, unsigned int keep,
			  unsigned int *gone, unsigned int max)
{
	struct cpu_chunks *l = &pk.cpus[cpu_index];
	unsigned int n = 0;
	struct chunk *c;

	pthread_mutex_lock(&pk.lock);
	while (l->count > keep && n < max) {
		c = l->oldest;
		unlist(c);
		switch (c->state) {
		case CHUNK_PACKING:
		case CHUNK_RENAMING:
			/* Its packer removes the files and frees it. */
			c->removed = true;
			continue;
		case CHUNK_QUEUED:
			dequeue(c);
			break;
		default:
			break;
		}
		gone[n++] = c->seq;
		free(c);
	}
	pthread_mutex_unlock(&pk.lock);
	return n;
}

bool packer_chunk_settle(unsigned int cpu_index, unsigned int seq)
{
	bool settled = true;
	struct chunk *c;

	pthread_mutex_lock(&pk.lock);
	/* After packer_stop() no chunk changes any more. */
	for (c = pk.cpus ? pk.cpus[cpu_index].oldest : NULL; c; c = c->next) {
		if (c->seq != seq)
			continue;
		settled = c->state == CHUNK_PACKED || c->state == CHUNK_KEPT;
		if (settled) {
			unlist(c);
			free(c);
		}
		break;
	}
	pthread_mutex_unlock(&pk.lock);
	return settled;
}

/* ---- the workers -------------------------------------------------------------- */

/* Idle CPU and I/O priority: only what nobody else wants. */
static void set_priority(pid_t tid, bool idle)
{
	struct sched_param sp = { .sched_priority = 0 };

	sched_setscheduler(tid, idle ? SCHED_IDLE : SCHED_OTHER, &sp);
	syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid,
		idle ? IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0) :
		       IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4));
}

/* A chunk's files once --max-files took it from a packer. */
static void remove_files(const char *name, const char *tmp)
{
	unlinkat(pk.dirfd, tmp, 0);
	if (unlinkat(pk.dirfd, name, 0) < 0 && errno != ENOENT)
		warn("%s/%s: cannot remove: %s", outdir, name, strerror(errno));
}

/* What became of a chunk a packer held, in the table's counters. */
static void account(struct chunk *c, int err, const struct chunk_pack_result *res)
{
	if (!err) {
		c->state = CHUNK_PACKED;
		c->packed = res->out;
		pk.st.packed++;
		pk.st.packed_in += res->in;
		pk.st.packed_out += res->out;
		return;
	}
	c->state = CHUNK_KEPT;
	pk.st.kept++;
	pk.st.kept_bytes += c->stored;
	if (err == -ECANCELED) {
		pk.st.left++;
		pk.st.left_bytes += c->stored;
	} else {
		pk.st.failed++;
	}
}

/*
 * Pack @c and replace it.  It counts as busy until its files are final
 * (packed, left stored, or removed for --max-files), so that
 * packer_idle() means every closed chunk is what it will stay.
 */
static void pack_one(struct worker *w, struct chunk *c)
{
	char name[CHUNK_NAME_MAX], tmp[CHUNK_NAME_MAX + 8];
	struct chunk_pack_result res;
	bool removed;
	int err;

	chunk_name(name, sizeof(name), c->cpu, c->seq);
	chunk_tmp_name(tmp, sizeof(tmp), name);
	err = chunk_pack(w->packer, pk.dirfd, name, tmp, &pk.cancel, &res);

	pthread_mutex_lock(&pk.lock);
	removed = c->removed;
	if (!err && !removed)
		c->state = CHUNK_RENAMING;
	pthread_mutex_unlock(&pk.lock);

	if (!err && !removed) {
		/* The packed file was synced: once renamed it is whole, on disk. */
		if (renameat(pk.dirfd, tmp, pk.dirfd, name) < 0) {
			err = -errno;
			unlinkat(pk.dirfd, tmp, 0);
			warn("%s/%s: not compressed, left as it is: rename: %s",
			     outdir, name, strerror(-err));
		} else if (fsync(pk.dirfd) < 0) {
			/* The rename may not be on disk: as any failed sync. */
			syncer_failure(".", -errno);
		}
	} else if (err && err != -ECANCELED && !removed) {
		warn("%s/%s: not compressed, left as it is: %s", outdir, name,
		     err == -EBADMSG ? "not whole stored frames (damaged?)" :
		     strerror(-err));
	}

	pthread_mutex_lock(&pk.lock);
	/* --max-files or --max-total may have taken it meanwhile. */
	removed = c->removed;
	if (!removed) {
		/*
		 * Done with it in this one section: once the lock is dropped,
		 * a PACKED or KEPT chunk is theirs to remove and free
		 * (packer_prune(), packer_take_oldest()) at any moment.
		 */
		account(c, err, &res);
		pk.st.busy--;
		pk.st.packing_bytes -= c->stored;
	}
	pthread_mutex_unlock(&pk.lock);
	if (!removed) {
		if (opt.on_chunk)
			handoff_kick();		/* its set may be complete */
		return;
	}

	/* Out of every list since it was taken: nobody else has it. */
	remove_files(name, tmp);
	pthread_mutex_lock(&pk.lock);
	pk.st.busy--;
	pk.st.packing_bytes -= c->stored;
	pthread_mutex_unlock(&pk.lock);
	free(c);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct chunk *c;
	char tname[16];

	snprintf(tname, sizeof(tname), "rtd-pack/%u",
		 (unsigned int)(w - pk.workers));
	pthread_setname_np(pthread_self(), tname);
	pthread_mutex_lock(&pk.lock);
	w->tid = (pid_t)syscall(SYS_gettid);
	set_priority(w->tid, true);
	for (;;) {
		while (!pk.qhead && !pk.stop)
			pthread_cond_wait(&pk.work, &pk.lock);
		if (pk.cancel || !pk.qhead)
			break;
		c = pk.qhead;
		pk.qhead = c->qnext;
		if (!pk.qhead)
			pk.qtail = NULL;
		c->qnext = NULL;
		pk.st.queued--;
		pk.st.queued_bytes -= c->stored;
		c->state = CHUNK_PACKING;
		pk.st.busy++;
		pk.st.packing_bytes += c->stored;
		pthread_mutex_unlock(&pk.lock);
		pack_one(w, c);
		pthread_mutex_lock(&pk.lock);
	}
	pk.st.cpu_s += thread_cpu_s();
	pthread_mutex_unlock(&pk.lock);
	return NULL;
}

int packer_start(unsigned int ncpus, unsigned int workers, int level,
		 int dirfd)
{
	unsigned int i;
	int err;

	/* From scratch: the host tests start and stop it more than once. */
	pk.qhead = pk.qtail = NULL;
	pk.nworkers = 0;
	pk.stop = pk.cancel = pk.running = false;
	memset(&pk.st, 0, sizeof(pk.st));
	pk.cpus = calloc(ncpus ? ncpus : 1, sizeof(*pk.cpus));
	if (!pk.cpus)
		return -ENOMEM;
	pk.ncpus = ncpus;
	pk.dirfd = dirfd;
	if (level == RT_LEVEL_STORE)
		return 0;
	pk.workers = calloc(workers, sizeof(*pk.workers));
	if (!pk.workers)
		return -ENOMEM;
	for (i = 0; i < workers; i++) {
		struct worker *w = &pk.workers[i];

		w->packer = chunk_packer_new(level);
		w->table = rt_table_maker_new();
		if (!w->packer || !w->table)
			return -ENOMEM;
		chunk_packer_set_table(w->packer, rt_table_maker_ops(w->table));
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err)
			return -err;
		w->started = true;
		pk.nworkers++;
		pk.running = true;
	}
	return 0;
}

/* Only from main, which alone starts and joins the workers. */
void packer_stats(struct packer_stats *st)
{
	unsigned int i;

	pthread_mutex_lock(&pk.lock);
	*st = pk.st;
	pthread_mutex_unlock(&pk.lock);
	st->workers = pk.nworkers;
	/* Exited workers added their own time (worker_main()). */
	if (pk.running) {
		st->cpu_s = 0;
		for (i = 0; i < pk.nworkers; i++)
			st->cpu_s += pthread_cpu_s(pk.workers[i].thread);
	}
}

void packer_boost(void)
{
	unsigned int i;
	pid_t tid;

	for (i = 0; i < pk.nworkers; i++) {
		pthread_mutex_lock(&pk.lock);
		tid = pk.workers[i].tid;
		pthread_mutex_unlock(&pk.lock);
		if (tid)
			set_priority(tid, false);
	}
}

bool packer_idle(void)
{
	bool idle;

	pthread_mutex_lock(&pk.lock);
	idle = !pk.qhead && !pk.st.busy;
	pthread_mutex_unlock(&pk.lock);
	return idle;
}

void packer_stop(bool abandon)
{
	struct chunk *c, *next;
	unsigned int i;

	pthread_mutex_lock(&pk.lock);
	pk.stop = true;
	if (abandon)
		__atomic_store_n(&pk.cancel, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&pk.work);
	pthread_mutex_unlock(&pk.lock);
	for (i = 0; i < pk.nworkers; i++) {
		pthread_join(pk.workers[i].thread, NULL);
		chunk_packer_free(pk.workers[i].packer);
		rt_table_maker_free(pk.workers[i].table);
	}
	pk.running = false;
	/* What no packer took stays stored. */
	for (c = pk.qhead; c; c = c->qnext) {
		c->state = CHUNK_KEPT;
		pk.st.kept++;
		pk.st.kept_bytes += c->stored;
		pk.st.left++;
		pk.st.left_bytes += c->stored;
	}
	pk.qhead = pk.qtail = NULL;
	pk.st.queued = pk.st.queued_bytes = 0;
	free(pk.workers);
	pk.workers = NULL;
	/* Under the lock: the handoff thread may look (packer_chunk_settle()). */
	pthread_mutex_lock(&pk.lock);
	for (i = 0; i < pk.ncpus; i++) {
		for (c = pk.cpus[i].oldest; c; c = next) {
			next = c->next;
			free(c);
		}
	}
	free(pk.cpus);
	pk.cpus = NULL;
	pthread_mutex_unlock(&pk.lock);
}
