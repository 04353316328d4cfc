// SPDX-License-Identifier: GPL-2.0
/*
 * A window's first state from the scheduler records (schedpack.h's
 * schedpack_at()): instead of the walk of every item before the window
 * that builds a member's checkpoints, each CPU's records of the frames
 * that end before the window are composed with a record made of the
 * items of the frame it is in at the window's start, read up to there
 * (about a frame a CPU).  Where the records cannot tell (damage: an
 * unlearnt frame; wakeups on both sides of a switch elsewhere) that frame
 * is decoded too and the composition done again; where decoding would not
 * tell either (a tie of times between CPUs) the answer is "not told", and
 * the walk takes today's path (its checkpoints).
 */
#include <stdlib.h>
#include <string.h>

#include "schedpack.h"
#include "sql.h"

/* A member's records (sqldb.sched_rec), loaded at its first window. */
struct sp_member {
	bool ok;			/* every CPU's files carry trusted records */
	struct sp_cpu_records *cpus;	/* in the trace's CPU order */
	size_t nr_cpus;
};

void schedpack_member_free(struct sp_member *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->nr_cpus; i++)
		sp_cpu_free(&pm->cpus[i]);
	free(pm->cpus);
	free(pm);
}

/*
 * Member @m's records, or NULL: a file without records (not packed, or
 * packed before them), bad ones (a checksum, a size, a time out of its
 * frame: the member is read as without), RINGTRACE_SQL_SCHEDREC=0, or a
 * database that does not seek (RINGTRACE_SEEK=0).
 */
static const struct sp_member *member_records(struct sqldb *d, unsigned int m)
{
	const struct rt_trace *t = d->ts->m[m].t;
	const char *env = getenv("RINGTRACE_SQL_SCHEDREC");
	struct sp_member *pm;
	char why[512];

	if (!d->seek || (env && !strcmp(env, "0")))
		return NULL;
	if (!d->sched_rec) {
		d->sched_rec = calloc(d->ts->nr + 1, sizeof(*d->sched_rec));
		if (!d->sched_rec)
			die("out of memory");
	}
	pm = d->sched_rec[m];
	if (!pm) {
		pm = calloc(1, sizeof(*pm));
		if (!pm)
			die("out of memory");
		pm->cpus = calloc(t->nr_cpus + 1, sizeof(*pm->cpus));
		if (!pm->cpus)
			die("out of memory");
		pm->ok = true;
		for (unsigned int i = 0; pm->ok && i < t->nr_cpus; i++, pm->nr_cpus++)
			pm->ok = !sp_cpu_load(&pm->cpus[i], t->cpus[i].cpu, t->cpus[i].paths,
					      t->cpus[i].nr_paths, why, sizeof(why));
		d->sched_rec[m] = pm;
	}
	return pm->ok ? pm : NULL;
}

/* One CPU's share: its records before the window, and the frames decoded. */
struct at_cpu {
	const struct sp_cpu_records *r;
	char *const *paths;
	size_t n;			/* frames wholly before the window */
	bool partial;			/* frames n..last may hold items before it */
	size_t last;
	struct rt_schedrec *acc;	/* their items before the window, one record */
	struct chunk_sched_frame part;
	bool part_started;
	const struct chunk_sched_frame **in;	/* the input: records, or made ones */
	struct chunk_sched_frame *made;		/* by frame, once decoded */
	struct sp_events *events;		/* by frame (n + 1): decoded ones */
	bool *decoded;
};

/* Whether @it lies in CPU @x's frame @f (its packet, by file and offset). */
static bool in_frame(const struct at_cpu *x, size_t f, const struct rt_item *it)
{
	const struct sp_cpu_records *r = x->r;
	const char *path = x->paths[r->file[f]];

	if (!it->packet || (it->packet->file != path && strcmp(it->packet->file, path)))
		return false;
	return r->uoff[f] <= it->packet->offset &&
	       (f + 1 == r->nr || r->file[f + 1] != r->file[f] ||
		it->packet->offset < r->uoff[f + 1]);
}

/* Whether @it lies in one of CPU @x's frames n..last (the partial record's). */
static bool in_partial(const struct at_cpu *x, const struct rt_item *it)
{
	for (size_t f = x->n; f <= x->last; f++)
		if (in_frame(x, f, it))
			return true;
	return false;
}

/*
 * @it, the next item of CPU @x's frame @f, fed to @acc (*@started: one
 * was already).  A loss in front of a chunk's first packet is not the
 * records' (the composition judges it: schedpack.h).
 */
static void feed(const struct at_cpu *x, size_t f, struct rt_schedrec *acc, bool *started,
		 const struct rt_item *it)
{
	bool first = !*started;

	*started = true;
	if (first && it->type == RT_ITEM_LOST && x->r->chunk_start[f])
		return;
	rt_schedrec_item(acc, it);
}


/*
 * Each item of member @m's CPU @cpu over [@begin, @end] ns (INT64_MAX: to
 * the end) to @fn, in order: 0, -1 (c->err).
 */
static int read_cpu(struct sql_cursor *c, unsigned int m, uint32_t cpu, int64_t begin,
		    int64_t end, void (*fn)(const struct scan_row *row, void *arg), void *arg)
{
	struct scan_spec rd = { .limit = -1, .members_set = true, .cpus_set = true,
				.nr_cpus = 1, .has_begin = true, .begin = begin,
				.has_end = end != INT64_MAX, .end = end };
	struct scan_row row;
	struct scan *s;
	int r;

	rd.members = calloc(c->db->ts->nr + 1, sizeof(*rd.members));
	rd.cpus = calloc(1, sizeof(*rd.cpus));
	if (!rd.members || !rd.cpus)
		die("out of memory");
	rd.members[m] = true;
	rd.cpus[0] = cpu;
	s = scan_open_spec(c, SCAN_EVENTS | SCAN_LOSSES, &rd);
	while ((r = scan_next(s, &row)) > 0)
		if (row.it)
			fn(&row, arg);
	scan_close(s);
	sql_spec_free(&rd);
	return r < 0 ? -1 : 0;
}

/*
 * A record made of a frame's items takes its sequence numbers from the
 * packer's @file, who read every packet (a packet without events gives a
 * reader no item): they say whether a loss comes in front of a chunk.
 */
static void seq_of(struct chunk_sched_frame *made, const struct chunk_sched_frame *file)
{
	made->first_seq = file->first_seq;
	made->first_discarded = file->first_discarded;
	made->last_seq = file->last_seq;
	made->last_discarded = file->last_discarded;
}

/* A frame being decoded (decode()). */
struct frame_read {
	const struct at_cpu *x;
	size_t f;
	struct rt_schedrec *acc;
	bool started;
};

static void frame_item(const struct scan_row *row, void *arg)
{
	struct frame_read *fr = arg;

	if (in_frame(fr->x, fr->f, row->it))
		feed(fr->x, fr->f, fr->acc, &fr->started, row->it);
}

/* CPU @x's frame @f decoded: the record its items make and its events (0, -1 c->err). */
static int decode(struct sql_cursor *c, unsigned int m, struct at_cpu *x, size_t f)
{
	const struct sqldb *d = c->db;
	struct frame_read fr = { .x = x, .f = f, .acc = rt_schedrec_new() };
	const struct rt_sched_event *ev;
	struct rt_schedrec *acc = fr.acc;
	size_t n;

	if (!acc)
		die("out of memory");
	rt_schedrec_keep_events(acc);
	if (read_cpu(c, m, x->r->cpu, sqldb_ns(d, m, x->r->ts_begin[f]),
		     sqldb_ns(d, m, x->r->ts_end[f]), frame_item, &fr) < 0) {
		rt_schedrec_free(acc);
		return -1;
	}
	ev = rt_schedrec_events(acc, &n);
	x->events[f].ev = calloc(n + 1, sizeof(*ev));
	if (!x->events[f].ev)
		die("out of memory");
	memcpy((void *)x->events[f].ev, ev, n * sizeof(*ev));
	x->events[f].nr = n;
	if (rt_schedrec_end_frame(acc, &x->made[f]))
		die("out of memory");
	seq_of(&x->made[f], x->r->rec[f]);
	rt_schedrec_free(acc);
	x->decoded[f] = true;
	return 0;
}

/*
 * The partial records: every item before @lo of each CPU's frames
 * n..last, each CPU read from frame n's start (0, -1 c->err); *@last the
 * time of the last item before @lo read, INT64_MIN none.
 */
struct partial_read {
	struct at_cpu *k;
	int64_t last;
};

static void partial_item(const struct scan_row *row, void *arg)
{
	struct partial_read *pr = arg;

	pr->last = row->ts > pr->last ? row->ts : pr->last;
	/* Items of earlier frames are in their records. */
	if (in_partial(pr->k, row->it))
		feed(pr->k, pr->k->n, pr->k->acc, &pr->k->part_started, row->it);
}

static int partials(struct sql_cursor *c, unsigned int m, struct at_cpu *x, size_t nr,
		    int64_t lo, int64_t *last)
{
	struct partial_read pr = { .last = INT64_MIN };

	for (size_t i = 0; i < nr; i++) {
		pr.k = &x[i];
		if (x[i].partial &&
		    read_cpu(c, m, x[i].r->cpu, sqldb_ns(c->db, m, x[i].r->ts_begin[x[i].n]),
			     lo - 1, partial_item, &pr) < 0)
			return -1;
	}
	*last = pr.last;
	return 0;
}

static void at_free(struct at_cpu *x, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		for (size_t f = 0; x[i].decoded && f < x[i].n; f++) {
			if (!x[i].decoded[f])
				continue;
			free(x[i].made[f].threads);
			free((void *)x[i].events[f].ev);
		}
		free(x[i].part.threads);
		rt_schedrec_free(x[i].acc);
		free(x[i].in);
		free(x[i].made);
		free(x[i].events);
		free(x[i].decoded);
	}
	free(x);
}

int schedpack_at(struct sql_cursor *c, unsigned int m, int64_t lo, struct sp_state *st,
		 int64_t *last)
{
	const struct sqldb *d = c->db;
	const struct sp_member *pm = member_records(c->db, m);
	const struct rt_trace *t = d->ts->m[m].t;
	struct sp_input *in;
	struct at_cpu *x;
	struct sp_need need;
	int r = 1;

	if (!pm)
		return 1;
	x = calloc(pm->nr_cpus + 1, sizeof(*x));
	in = calloc(pm->nr_cpus + 1, sizeof(*in));
	if (!x || !in)
		die("out of memory");
	for (size_t i = 0; i < pm->nr_cpus; i++) {
		struct at_cpu *k = &x[i];
		const struct sp_cpu_records *cr = &pm->cpus[i];
		size_t n = 0;

		k->r = cr;
		k->paths = t->cpus[i].paths;
		/*
		 * The frames whose items are all before @lo (their packets end
		 * before it), then those that may hold some (they begin before
		 * it: packets of neighbour frames may overlap in time), read.
		 */
		while (n < cr->nr && sqldb_ns(d, m, cr->ts_end[n]) < lo)
			n++;
		k->n = n;
		while (n < cr->nr && sqldb_ns(d, m, cr->ts_begin[n]) < lo)
			n++;
		k->partial = n > k->n;
		k->last = n ? n - 1 : 0;
		k->acc = rt_schedrec_new();
		k->in = calloc(k->n + 1, sizeof(*k->in));
		k->made = calloc(k->n + 1, sizeof(*k->made));
		k->events = calloc(k->n + 2, sizeof(*k->events));
		k->decoded = calloc(k->n + 1, sizeof(*k->decoded));
		if (!k->acc || !k->in || !k->made || !k->events || !k->decoded)
			die("out of memory");
		rt_schedrec_keep_events(k->acc);
	}
	if (partials(c, m, x, pm->nr_cpus, lo, last) < 0) {
		r = -1;
		goto out;
	}
	for (size_t i = 0; i < pm->nr_cpus; i++) {
		struct at_cpu *k = &x[i];

		if (!k->partial)
			continue;
		if (rt_schedrec_peek(k->acc, &k->part))
			die("out of memory");
		/* Its first packet is frame n's (the last is not: what follows() needs). */
		k->part.first_seq = k->r->rec[k->n]->first_seq;
		k->part.first_discarded = k->r->rec[k->n]->first_discarded;
		k->events[k->n].ev = rt_schedrec_events(k->acc, &k->events[k->n].nr);
	}
	for (;;) {
		for (size_t i = 0; i < pm->nr_cpus; i++) {
			struct at_cpu *k = &x[i];

			/* An unlearnt frame decoded is the record its items make. */
			for (size_t f = 0; f < k->n; f++)
				k->in[f] = k->decoded[f] &&
					   (k->r->rec[f]->flags & CHUNK_SCHED_UNLEARNT) ?
					   &k->made[f] : k->r->rec[f];
			in[i] = (struct sp_input){
				.cpu = k->r->cpu, .rec = k->in, .chunk_start = k->r->chunk_start,
				.nr = k->n, .partial = k->partial ? &k->part : NULL,
				.partial_start = k->partial && k->r->chunk_start[k->n],
				.events = k->events };
		}
		r = schedpack_state(in, pm->nr_cpus, st, NULL, &need);
		if (r < 0)
			die("out of memory");
		if (!r)
			break;
		/* Decode what it asks for once; what it still cannot tell is not told. */
		if (!need.known || need.cpu >= pm->nr_cpus || need.frame >= x[need.cpu].n ||
		    x[need.cpu].decoded[need.frame])
			break;
		if (decode(c, m, &x[need.cpu], need.frame) < 0) {
			r = -1;
			break;
		}
	}
out:
	at_free(x, pm->nr_cpus);
	free(in);
	return r;
}

/* ---- what can end a span after a window's end ----------------------------------------- */

static int tid_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static bool has_tid(const int32_t *v, size_t n, int32_t tid)
{
	return n && bsearch(&tid, v, n, sizeof(*v), tid_cmp);
}

bool sp_after_named(const struct sp_after *a, int32_t tid, bool blocked)
{
	return a->any || has_tid(a->switched, a->nr_switched, tid) ||
	       (blocked && has_tid(a->woken, a->nr_woken, tid));
}

void sp_after_free(struct sp_after *a)
{
	free(a->cpu_switches);
	free(a->switched);
	free(a->woken);
	memset(a, 0, sizeof(*a));
}

/* @tid appended to @v (@n of @cap). */
static void tid_add(int32_t **v, size_t *n, size_t *cap, int32_t tid)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		*v = reallocarray(*v, *cap, sizeof(**v));
		if (!*v)
			die("out of memory");
	}
	(*v)[(*n)++] = tid;
}

/*
 * The time of member @m's last item, each CPU's last frame read: 0, 1
 * none, -1 (c->err).
 */
static void last_of(const struct scan_row *row, void *arg)
{
	int64_t *last = arg;

	*last = row->ts > *last ? row->ts : *last;
}

static int last_item(struct sql_cursor *c, unsigned int m, const struct sp_member *pm,
		     int64_t *last)
{
	int64_t l = INT64_MIN;

	for (size_t i = 0; i < pm->nr_cpus; i++) {
		const struct sp_cpu_records *cr = &pm->cpus[i];

		if (cr->nr && read_cpu(c, m, cr->cpu, sqldb_ns(c->db, m, cr->ts_begin[cr->nr - 1]),
				       INT64_MAX, last_of, &l) < 0)
			return -1;
	}
	*last = l;
	return l == INT64_MIN;
}

int schedpack_after(struct sql_cursor *c, unsigned int m, int64_t hi, struct sp_after *a)
{
	const struct sp_member *pm = member_records(c->db, m);
	size_t cap_s = 0, cap_w = 0;

	memset(a, 0, sizeof(*a));
	if (!pm)
		return 1;
	a->cpu_switches = calloc(pm->nr_cpus + 1, sizeof(*a->cpu_switches));
	if (!a->cpu_switches)
		die("out of memory");
	for (size_t i = 0; i < pm->nr_cpus; i++) {
		const struct sp_cpu_records *cr = &pm->cpus[i];

		for (size_t f = 0; f < cr->nr; f++) {
			const struct chunk_sched_frame *x = cr->rec[f];

			/* Its items are at or before its packets' end. */
			if (sqldb_ns(c->db, m, cr->ts_end[f]) < hi)
				continue;
			if (x->flags & CHUNK_SCHED_UNLEARNT)
				a->any = true;
			if (x->flags & (CHUNK_SCHED_UNLEARNT | CHUNK_SCHED_SWITCHED))
				a->cpu_switches[i] = true;
			for (uint32_t k = 0; k < x->nr_threads; k++) {
				const struct chunk_sched_thread *t = &x->threads[k];

				if (t->flags & CHUNK_SCHED_T_SWITCH)
					tid_add(&a->switched, &a->nr_switched, &cap_s, t->tid);
				if (t->flags & CHUNK_SCHED_T_WAKE)
					tid_add(&a->woken, &a->nr_woken, &cap_w, t->tid);
			}
		}
	}
	qsort(a->switched, a->nr_switched, sizeof(*a->switched), tid_cmp);
	qsort(a->woken, a->nr_woken, sizeof(*a->woken), tid_cmp);
	return 0;
}

int schedpack_last(struct sql_cursor *c, unsigned int m, int64_t *last)
{
	const struct sp_member *pm = member_records(c->db, m);

	return pm ? last_item(c, m, pm, last) : 1;
}

static int open_cmp(const void *a, const void *b)
{
	const struct sp_open_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Whether frame @x may end one of @open's spans (CPU @k's). */
static bool may_end(const struct chunk_sched_frame *x, size_t k, const struct sp_open *open)
{
	if (x->flags & CHUNK_SCHED_UNLEARNT)
		return true;
	if ((x->flags & CHUNK_SCHED_SWITCHED) && open->cpus[k])
		return true;
	for (uint32_t i = 0; open->nr_threads && i < x->nr_threads; i++) {
		const struct chunk_sched_thread *t = &x->threads[i];
		struct sp_open_thread key = { .tid = t->tid };
		const struct sp_open_thread *o;

		if (!(t->flags & (CHUNK_SCHED_T_SWITCH | CHUNK_SCHED_T_WAKE)))
			continue;
		o = bsearch(&key, open->threads, open->nr_threads, sizeof(key), open_cmp);
		if (o && ((t->flags & CHUNK_SCHED_T_SWITCH) || o->blocked))
			return true;
	}
	return false;
}

int schedpack_next(struct sql_cursor *c, unsigned int m, int64_t pos,
		   const struct sp_open *open, int64_t *b, int64_t *e, bool *cpus)
{
	const struct sp_member *pm = member_records(c->db, m);
	int64_t *first;
	bool found = false;

	if (!pm)
		return 1;
	first = calloc(pm->nr_cpus + 1, sizeof(*first));
	if (!first)
		die("out of memory");
	/* Each CPU's first frame from @pos on that may end one. */
	for (size_t k = 0; k < pm->nr_cpus; k++) {
		const struct sp_cpu_records *cr = &pm->cpus[k];

		first[k] = INT64_MAX;
		for (size_t f = 0; f < cr->nr; f++) {
			int64_t fb = sqldb_ns(c->db, m, cr->ts_begin[f]);
			int64_t fe = sqldb_ns(c->db, m, cr->ts_end[f]);

			/* Its items lie between its packets' begin and end. */
			if (fe < pos || !may_end(cr->rec[f], k, open))
				continue;
			first[k] = fb < pos ? pos : fb;
			if (!found || first[k] < *b) {
				*b = first[k];
				*e = fe;
			}
			found = true;
			break;
		}
	}
	/* The CPUs whose own such frame starts by then are read with it. */
	for (size_t k = 0; found && k < pm->nr_cpus; k++)
		cpus[k] = first[k] <= *e;
	free(first);
	return found ? 0 : 1;
}
