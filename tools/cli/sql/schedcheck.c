// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler records against the walk (schedpack.h's check): what a
 * reader of the records would get at each of a member's checkpoints,
 * compared with what the walk that builds them has there.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedpack.h"
#include "sql.h"

#define SHOWN	5			/* differences described */

/* One CPU: its records, and the record of its frame being read. */
struct spc_cpu {
	struct sp_cpu_records r;
	char *const *paths;
	struct rt_schedrec *acc;
	size_t cur;			/* the frame @acc is of; SIZE_MAX: none yet */
	struct chunk_sched_frame *made;	/* made of the items, per frame read */
	bool *have_made;
	struct sp_events *events;	/* what each frame read holds (nr + 1) */
	const struct chunk_sched_frame **in;	/* the input: records, made ones for unlearnt */
};

struct sp_check {
	struct sql_cursor *c;
	unsigned int member;
	struct spc_cpu *cpus;
	size_t nr_cpus;
	struct sp_input *in;
	uint64_t points, equal, decode, differ;
	uint64_t decoded, decoded_max;	/* frames the records needed decoded */
	uint64_t frames, frames_differ, unlearnt;
	unsigned int shown;
};

struct sp_check *spcheck_open(struct sql_cursor *c, unsigned int m)
{
	const struct rt_trace *t = c->db->ts->m[m].t;
	struct sp_check *k;
	char why[512];

	if (!getenv("RINGTRACE_SQL_SCHEDREC_CHECK"))
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		die("out of memory");
	k->c = c;
	k->member = m;
	k->cpus = calloc(t->nr_cpus + 1, sizeof(*k->cpus));
	k->in = calloc(t->nr_cpus + 1, sizeof(*k->in));
	if (!k->cpus || !k->in)
		die("out of memory");
	for (unsigned int i = 0; i < t->nr_cpus; i++, k->nr_cpus++) {
		struct spc_cpu *x = &k->cpus[i];

		if (sp_cpu_load(&x->r, (uint32_t)t->cpus[i].cpu, t->cpus[i].paths,
				t->cpus[i].nr_paths, why, sizeof(why))) {
			fprintf(stderr, "schedrec check: member %u: %s\n", m, why);
			spcheck_close(k);
			return NULL;
		}
		x->paths = t->cpus[i].paths;
		x->cur = SIZE_MAX;
		x->acc = rt_schedrec_new();
		x->made = calloc(x->r.nr + 1, sizeof(*x->made));
		x->have_made = calloc(x->r.nr + 1, sizeof(*x->have_made));
		x->events = calloc(x->r.nr + 1, sizeof(*x->events));
		x->in = calloc(x->r.nr + 1, sizeof(*x->in));
		if (!x->acc || !x->made || !x->have_made || !x->events || !x->in)
			die("out of memory");
		rt_schedrec_keep_events(x->acc);
	}
	return k;
}

static bool same_thread(const struct chunk_sched_thread *a, const struct chunk_sched_thread *b)
{
	return a->tid == b->tid && a->flags == b->flags && a->switch_ts == b->switch_ts &&
	       a->state == b->state && a->mark_ts == b->mark_ts && a->mark_last == b->mark_last &&
	       a->wake_ts == b->wake_ts && a->wake_last == b->wake_last &&
	       a->target_cpu == b->target_cpu && a->waker == b->waker &&
	       a->wake_irq.reset == b->wake_irq.reset && a->wake_irq.drop == b->wake_irq.drop &&
	       a->wake_irq.add == b->wake_irq.add;
}

/*
 * A record made of a frame's items against the packer's: the same but
 * for the sequence numbers (a packet without events gives the check no
 * item) and the flags' bits that only say what the fields say.
 */
static bool same_record(const struct chunk_sched_frame *a, const struct chunk_sched_frame *b)
{
	uint32_t mask = CHUNK_SCHED_UNLEARNT | CHUNK_SCHED_SWITCHED;

	if ((a->flags & mask) != (b->flags & mask) || a->nr_threads != b->nr_threads ||
	    a->first_switch != b->first_switch || a->last_switch != b->last_switch ||
	    a->prev_tid != b->prev_tid || a->next_tid != b->next_tid ||
	    a->next_prio != b->next_prio || a->irq.reset != b->irq.reset ||
	    a->irq.drop != b->irq.drop || a->irq.add != b->irq.add ||
	    a->owner_change != b->owner_change || a->owner != b->owner)
		return false;
	for (uint32_t i = 0; i < a->nr_threads; i++) {
		struct chunk_sched_thread x = a->threads[i], y = b->threads[i];

		x.flags &= ~CHUNK_SCHED_T_WAKE_IRQ_RESET;
		y.flags &= ~CHUNK_SCHED_T_WAKE_IRQ_RESET;
		if (!same_thread(&x, &y))
			return false;
	}
	return true;
}

static void note(struct sp_check *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct sp_check *k, const char *fmt, ...)
{
	va_list ap;

	if (k->shown++ >= SHOWN)
		return;
	fprintf(stderr, "schedrec check: member %u: ", k->member);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* CPU @x's frame being read is over: its record made of the items is kept and checked. */
static void frame_done(struct sp_check *k, struct spc_cpu *x)
{
	const struct chunk_sched_frame *file;
	const struct rt_sched_event *ev;
	struct chunk_sched_frame *made;
	size_t n;

	if (x->cur == SIZE_MAX)
		return;
	made = &x->made[x->cur];
	ev = rt_schedrec_events(x->acc, &n);
	x->events[x->cur].ev = calloc(n + 1, sizeof(*ev));
	if (!x->events[x->cur].ev)
		die("out of memory");
	memcpy((void *)x->events[x->cur].ev, ev, n * sizeof(*ev));
	x->events[x->cur].nr = n;
	if (rt_schedrec_end_frame(x->acc, made))
		die("out of memory");
	x->have_made[x->cur] = true;
	file = x->r.rec[x->cur];
	k->frames++;
	if (file->flags & CHUNK_SCHED_UNLEARNT) {
		k->unlearnt++;
	} else if (!same_record(made, file)) {
		k->frames_differ++;
		note(k, "cpu %u frame %zu: the packer's record is not the one its items make",
		     x->r.cpu, x->cur);
	}
}

void spcheck_item(struct sp_check *k, const struct rt_item *it)
{
	struct spc_cpu *x = NULL;
	size_t f, file = SIZE_MAX;

	for (size_t i = 0; i < k->nr_cpus && !x; i++)
		if (k->cpus[i].r.cpu == it->cpu)
			x = &k->cpus[i];
	if (!x || !it->packet)
		return;
	for (size_t i = 0; i < x->r.nr_files; i++)
		if (it->packet->file == x->paths[i] || !strcmp(it->packet->file, x->paths[i]))
			file = i;
	/* The file's last frame that starts at or before the packet. */
	for (f = x->r.nr; f-- > 0;)
		if (x->r.file[f] == file && x->r.uoff[f] <= it->packet->offset)
			break;
	if (f == SIZE_MAX) {
		note(k, "cpu %u: an item at %s:%" PRIu64 " in no frame", x->r.cpu,
		     it->packet->file, it->packet->offset);
		return;
	}
	if (f != x->cur) {
		frame_done(k, x);
		x->cur = f;
		/*
		 * The loss in front of a chunk's first packet: its packer read
		 * the chunk alone, the records' reader judges it (follows()).
		 */
		if (it->type == RT_ITEM_LOST && x->r.chunk_start[f])
			return;
	}
	rt_schedrec_item(x->acc, it);
}

static bool same_state(struct sp_check *k, const struct sp_state *a, const struct sp_state *w)
{
	const struct sqldb *d = k->c->db;
	size_t i, j;

	/* CPUs: those with a thread or an interrupt depth to tell (the others are as new). */
	for (i = j = 0; i < a->nr_cpus || j < w->nr_cpus;) {
		const struct sp_cpu_state *x = i < a->nr_cpus ? &a->cpus[i] : NULL;
		const struct sp_cpu_state *y = j < w->nr_cpus ? &w->cpus[j] : NULL;

		if (x && x->tid < 0 && !x->irqs) {
			i++;
			continue;
		}
		if (y && y->tid < 0 && !y->irqs) {
			j++;
			continue;
		}
		if (!x || !y || x->cpu != y->cpu || x->tid != y->tid || x->irqs != y->irqs ||
		    (x->tid >= 0 &&
		     ((int64_t)y->since != sqldb_ns(d, k->member, x->since) || x->prio != y->prio ||
		      (int64_t)y->switch_ts != sqldb_ns(d, k->member, x->switch_ts) ||
		      x->switch_prev != y->switch_prev))) {
			note(k, "cpu %d: records say tid %d irqs %u, the walk tid %d irqs %u",
			     x ? (int)x->cpu : y ? (int)y->cpu : -1, x ? x->tid : -2,
			     x ? x->irqs : 0, y ? y->tid : -2, y ? y->irqs : 0);
			return false;
		}
		i++;
		j++;
	}
	if (a->nr_threads != w->nr_threads) {
		note(k, "%zu threads running or off CPU from the records, %zu from the walk",
		     a->nr_threads, w->nr_threads);
		return false;
	}
	for (i = 0; i < a->nr_threads; i++) {
		const struct sp_thread_state *x = &a->threads[i], *y = &w->threads[i];

		if (x->tid != y->tid || x->running != y->running || x->open != y->open ||
		    (x->open && (x->state != y->state ||
				 sqldb_ns(d, k->member, x->since) != (int64_t)y->since ||
				 x->cpu != y->cpu || x->waker != y->waker || x->irq != y->irq))) {
			note(k, "tid %d: records say running %d open %d state %" PRId64
			     " cpu %d waker %d irq %d, the walk running %d open %d state %" PRId64
			     " cpu %d waker %d irq %d", x->tid, x->running, x->open, x->state,
			     x->cpu, x->waker, x->irq, y->running, y->open, y->state, y->cpu,
			     y->waker, y->irq);
			return false;
		}
	}
	return true;
}

void spcheck_state(struct sp_check *k, const struct sp_state *walk)
{
	struct chunk_sched_frame *partial = calloc(k->nr_cpus + 1, sizeof(*partial));
	struct sp_state st;
	size_t decoded;
	int r;

	if (!partial)
		die("out of memory");
	for (size_t i = 0; i < k->nr_cpus; i++) {
		struct spc_cpu *x = &k->cpus[i];
		size_t n = x->cur == SIZE_MAX ? 0 : x->cur;

		/* An unlearnt frame is decoded: its record is the one its items make. */
		for (size_t f = 0; f < n; f++)
			x->in[f] = (x->r.rec[f]->flags & CHUNK_SCHED_UNLEARNT) && x->have_made[f] ?
				   &x->made[f] : x->r.rec[f];
		k->in[i] = (struct sp_input){ .cpu = x->r.cpu, .rec = x->in,
					      .chunk_start = x->r.chunk_start, .nr = n,
					      .events = x->events };
		if (x->cur != SIZE_MAX) {
			if (rt_schedrec_peek(x->acc, &partial[i]))
				die("out of memory");
			k->in[i].partial = &partial[i];
			k->in[i].partial_start = x->r.chunk_start[x->cur];
			x->events[x->cur].ev = rt_schedrec_events(x->acc, &x->events[x->cur].nr);
		}
	}
	r = schedpack_state(k->in, k->nr_cpus, &st, &decoded, NULL);
	if (r < 0)
		die("out of memory");
	k->points++;
	k->decoded += decoded;
	if (decoded > k->decoded_max)
		k->decoded_max = decoded;
	if (r)
		k->decode++;
	else if (same_state(k, &st, walk))
		k->equal++;
	else
		k->differ++;
	if (!r)
		sp_state_free(&st);
	for (size_t i = 0; i < k->nr_cpus; i++) {
		free(partial[i].threads);
		/* The current frame's are the record maker's, not a copy. */
		if (k->cpus[i].cur != SIZE_MAX)
			k->cpus[i].events[k->cpus[i].cur] = (struct sp_events){ 0 };
	}
	free(partial);
}

void spcheck_close(struct sp_check *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr_cpus; i++)
		frame_done(k, &k->cpus[i]);
	if (k->points)
		fprintf(stderr, "schedrec check: member %u: %" PRIu64 " points: %" PRIu64
			" equal, %" PRIu64 " not told, %" PRIu64 " differ; frames decoded for"
			" them: %.2f a point, at most %" PRIu64 "; %" PRIu64 " frames read: %"
			PRIu64 " differ, %" PRIu64 " unlearnt\n", k->member, k->points, k->equal,
			k->decode, k->differ, (double)k->decoded / (double)k->points,
			k->decoded_max, k->frames, k->frames_differ, k->unlearnt);
	for (size_t i = 0; i < k->nr_cpus; i++) {
		struct spc_cpu *x = &k->cpus[i];

		for (size_t f = 0; x->made && f < x->r.nr; f++) {
			free(x->made[f].threads);
			free((void *)x->events[f].ev);
		}
		free(x->made);
		free(x->events);
		free(x->have_made);
		free(x->in);
		rt_schedrec_free(x->acc);
		sp_cpu_free(&x->r);
	}
	free(k->cpus);
	free(k->in);
	free(k);
}
