// SPDX-License-Identifier: GPL-2.0
/*
 * Thread tables: what one CPU's frames tell of threads, frame by frame
 * (lib/chunk_index.h), so that a window learns it without decoding them.
 *
 * A collector is fed one CPU's items in order -- from a stream that hands
 * out only the events threads.c reads (rt_collector_filter(); the
 * packer's, also those its scheduler records read) --
 * threads.c turns them into the facts it would apply (rt_threads_facts()),
 * and the collector's journal keeps, for the frame being fed, the latest
 * name (and the latest of another name), thread group and parent of each
 * thread, every cgroup, rename and stale fact in order, and what became
 * of the CPU's thread (the composition of its switches, losses and state
 * dump).  The packer makes one per chunk from
 * the packets it packs (the table maker below, which feeds the chunk's
 * scheduler records, schedrec.c, the same items); a window's reader makes
 * one for a frame without a table (rtdecode.c), and turns records into
 * the facts it replays (rt_facts_record()).
 *
 * Why the latest is enough: a reader applies every frame's facts at their
 * own times, merged with what it reads, and reads (prints) a thread's
 * state only from the window on -- after every frame whose facts it
 * replays -- so a fact that a later one of the same frame overrides is
 * never seen.  A cgroup fact may be read earlier, by a fork that gives
 * its child its parent's cgroup: those are all kept.  Names: see S_OTHER.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "../../lib/chunk.h"

/*
 * The frame's latest fact of each kind per thread: its index + 1 in
 * cur.facts.  Of names (COMM), also the latest of another name than the
 * latest's (S_OTHER): a reader does not believe, for a while, the name
 * that the thread's last rename replaced (threads.c), which another CPU's
 * rename may tell.  Every name seen after that rename and not believed is
 * that one name, so the latest believed is the latest, or else the latest
 * of another name.  Renames and stale names are kept every one, as
 * cgroups.
 */
enum { S_NAME, S_OTHER, S_PID, S_PPID, S_SLOTS };

struct latest {
	int32_t tid;			/* first: the tidmap's key */
	uint32_t at[S_SLOTS];
};

/* The slot a fact of @kind overrides the frame's latest of, or -1: kept every one. */
static inline int slot_of(uint32_t kind)
{
	return kind == CHUNK_FACT_COMM ? S_NAME : kind == CHUNK_FACT_PID ? S_PID :
	       kind == CHUNK_FACT_PPID ? S_PPID : -1;
}

/*
 * @f about to be the latest of @slot in @l, @name the latest name if
 * there is one: the index + 1 of the fact it overrides, 0 none.  A name
 * other than the latest one leaves that one as the latest other name.
 */
static inline uint32_t overrides(struct latest *l, int slot, const struct chunk_fact *f,
				 const struct chunk_fact *name)
{
	uint32_t gone;

	if (slot != S_NAME || !name || !memcmp(name->v.comm, f->v.comm, CHUNK_COMM_LEN))
		return l->at[slot];
	gone = l->at[S_OTHER];
	l->at[S_OTHER] = l->at[S_NAME];
	return gone;
}

/* A fact moved from index + 1 @from to @to: @l's slots follow it. */
static inline void moved(struct latest *l, uint32_t from, uint32_t to)
{
	for (int s = 0; s < S_SLOTS; s++)
		if (l->at[s] == from)
			l->at[s] = to;
}

struct rt_collector {
	struct rt_threads *th;		/* makes the facts (nothing applied to it) */
	struct chunk_table_frame cur;	/* the frame being fed; kind 0: overridden */
	size_t cap;
	uint32_t overridden;		/* facts of kind 0 in cur */
	struct rt_tidmap latest;	/* struct latest */
	bool have_packet;
	bool oom;
};

static void drop_latest(struct rt_collector *c)
{
	rt_tidmap_free(&c->latest);
	rt_tidmap_init(&c->latest, sizeof(struct latest));
}

/* The CPU's thread after the frame: @f composed after what the frame did. */
static void compose(struct chunk_table_frame *r, const struct rt_fact *f)
{
	if (f->f.kind == RT_FACT_CPU_SET) {
		r->cpu_change = CHUNK_CPU_SET;
		r->cpu_tid = f->f.tid;
	} else if (r->cpu_change == CHUNK_CPU_SAME) {
		r->cpu_change = CHUNK_CPU_FILL;
		r->cpu_tid = f->f.tid;
	} else if (r->cpu_tid < 0) {
		/* Unknown after a loss, or a fill of nothing: this fills it. */
		r->cpu_tid = f->f.tid;
	}
}

/*
 * The overridden facts out of the frame being fed, and the latest's
 * indexes with them: what rt_collector_end_frame() would do, done when
 * they are most of it, so that its list follows the threads, not the
 * events (a switch names two threads; a frame holds a hundred thousand).
 */
static void drop_overridden(struct rt_collector *c)
{
	struct chunk_table_frame *r = &c->cur;
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nr_facts; i++) {
		struct chunk_fact *f = &r->facts[i];
		struct latest *l;

		if (!f->kind)
			continue;
		r->facts[n++] = *f;
		if (slot_of(f->kind) >= 0 && (l = rt_tidmap_find(&c->latest, f->tid)))
			moved(l, i + 1, n);
	}
	r->nr_facts = n;
	c->overridden = 0;
}

/*
 * @f, just made (threads.c's extract() stores its fields one by one, a
 * comm as two words), copied the way it was stored: a wider load over
 * stores still in flight waits for them to be written (a store-forwarding
 * stall, a tenth of the table's time).  The empty asm keeps each value in
 * a register of its own size: the compiler would merge the loads.
 */
static inline void copy_fact(struct chunk_fact *d, const struct chunk_fact *f)
{
	uint64_t ts = f->ts, w0, w1;
	uint32_t kind = f->kind;
	int32_t tid = f->tid;

	memcpy(&w0, f->v.comm, 8);
	memcpy(&w1, f->v.comm + 8, 8);
	__asm__("" : "+r"(ts), "+r"(kind), "+r"(tid), "+r"(w0), "+r"(w1));
	d->ts = ts;
	d->kind = kind;
	d->tid = tid;
	memcpy(d->v.comm, &w0, 8);
	memcpy(d->v.comm + 8, &w1, 8);
}

static void journal(struct rt_collector *c, const struct rt_fact *f)
{
	struct chunk_table_frame *r = &c->cur;
	struct latest *l = NULL;
	uint32_t gone;
	bool created;
	int slot;

	if (f->f.kind == RT_FACT_CPU_SET || f->f.kind == RT_FACT_CPU_FILL) {
		compose(r, f);
		return;
	}
	/* What threads.c ignores: no thread, or the idle task's pid and cgroup. */
	if (f->f.tid < 0 || (!f->f.tid && f->f.kind != CHUNK_FACT_COMM))
		return;
	slot = slot_of(f->f.kind);
	if (slot >= 0) {
		l = rt_tidmap_get_inline(&c->latest, f->f.tid, &created);
		if (!l) {
			c->oom = true;
			return;
		}
		gone = overrides(l, slot, &f->f,
				 l->at[S_NAME] ? &r->facts[l->at[S_NAME] - 1] : NULL);
		if (gone) {
			r->facts[gone - 1].kind = 0;
			c->overridden++;
		}
	}
	/* Three in four gone: each fact is moved once or twice at most. */
	if (r->nr_facts == c->cap && c->overridden >= c->cap - c->cap / 4)
		drop_overridden(c);
	if (r->nr_facts == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct chunk_fact *n = realloc(r->facts, cap * sizeof(*n));

		if (!n) {
			c->oom = true;
			return;
		}
		r->facts = n;
		c->cap = cap;
	}
	copy_fact(&r->facts[r->nr_facts++], &f->f);
	if (l)
		l->at[slot] = r->nr_facts;
}

struct rt_collector *rt_collector_new(const struct rt_metadata *md)
{
	struct rt_collector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->th = rt_threads_new(md);
	if (!c->th) {
		free(c);
		return NULL;
	}
	rt_tidmap_init(&c->latest, sizeof(struct latest));
	return c;
}

void rt_collector_free(struct rt_collector *c)
{
	if (!c)
		return;
	rt_threads_free(c->th);
	free(c->cur.facts);
	rt_tidmap_free(&c->latest);
	free(c);
}

static bool collector_wants(void *arg, const struct rt_event_desc *ev)
{
	const struct rt_collector *c = arg;

	return rt_threads_reads(c->th, ev);
}

int rt_collector_filter(struct rt_collector *c, struct rt_stream *s)
{
	return rt_stream_set_wanted(s, collector_wants, c);
}

void rt_collector_item(struct rt_collector *c, const struct rt_item *it)
{
	struct rt_fact f[RT_ITEM_FACTS];
	unsigned int n;

	if (it->type == RT_ITEM_PACKET) {
		if (!c->have_packet) {
			c->cur.first_seq = it->packet->seq;
			c->cur.first_discarded = it->packet->events_discarded;
		}
		c->cur.last_seq = it->packet->seq;
		c->cur.last_discarded = it->packet->events_discarded;
		c->have_packet = true;
		return;
	}
	n = rt_threads_facts(c->th, it, f);
	for (unsigned int i = 0; i < n; i++)
		journal(c, &f[i]);
}

void rt_collector_unlearnt(struct rt_collector *c)
{
	c->cur.flags |= CHUNK_FRAME_UNLEARNT;
}

int rt_collector_end_frame(struct rt_collector *c, struct chunk_table_frame *f)
{
	struct chunk_table_frame *r = &c->cur;
	bool oom = c->oom;
	uint32_t n = 0;

	if (!c->have_packet || r->first_seq > r->last_seq ||
	    r->first_discarded > r->last_discarded)
		r->flags |= CHUNK_FRAME_UNLEARNT;
	if (r->flags & CHUNK_FRAME_UNLEARNT) {
		free(r->facts);
		*f = (struct chunk_table_frame){ .flags = CHUNK_FRAME_UNLEARNT };
	} else {
		for (uint32_t i = 0; i < r->nr_facts; i++)
			if (r->facts[i].kind)
				r->facts[n++] = r->facts[i];
		r->nr_facts = n;
		*f = *r;
	}
	memset(r, 0, sizeof(*r));
	c->cap = 0;
	c->overridden = 0;
	c->have_packet = false;
	c->oom = false;
	drop_latest(c);
	if (oom) {
		free(f->facts);
		f->facts = NULL;
		return -1;
	}
	return 0;
}

/* ---- records into a window's facts --------------------------------------------------- */

void rt_facts_init(struct rt_facts *b, uint32_t cpu)
{
	memset(b, 0, sizeof(*b));
	b->cpu = cpu;
	b->cur = -1;
	rt_tidmap_init(&b->latest, sizeof(struct latest));
}

void rt_facts_release(struct rt_facts *b)
{
	rt_tidmap_free(&b->latest);
}

/* The dropped facts out, and the latest's indexes with them. */
static void compact(struct rt_facts *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct latest *l;

		if (!b->v[i].f.kind)
			continue;
		b->v[n] = b->v[i];
		if (slot_of(b->v[n].f.kind) >= 0 &&
		    (l = rt_tidmap_find(&b->latest, b->v[n].f.tid)))
			moved(l, (uint32_t)i + 1, (uint32_t)n + 1);
		n++;
	}
	b->n = n;
	b->dropped = 0;
}

static int push(struct rt_facts *b, const struct chunk_fact *c)
{
	struct latest *l = NULL;
	uint32_t gone;
	bool created;
	int slot;

	/* Any tid a table says (INT32_MIN is no key, and no thread either). */
	slot = slot_of(c->kind);
	if (slot >= 0 && c->tid != RT_TIDMAP_FREE) {
		l = rt_tidmap_get(&b->latest, c->tid, &created);
		if (!l)
			return -1;
		gone = overrides(l, slot, c, l->at[S_NAME] ? &b->v[l->at[S_NAME] - 1].f : NULL);
		if (gone) {
			b->v[gone - 1].f.kind = 0;
			b->dropped++;
		}
	}
	if (b->n == b->cap && b->dropped > b->n / 2)
		compact(b);
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct rt_fact *p = realloc(b->v, cap * sizeof(*p));

		if (!p)
			return -1;
		b->v = p;
		b->cap = cap;
	}
	memset(&b->v[b->n], 0, sizeof(b->v[b->n]));
	b->v[b->n].f = *c;
	b->v[b->n].cpu = b->cpu;
	b->n++;
	if (l)
		l->at[slot] = (uint32_t)b->n;
	return 0;
}

/* A packet of @seq, @disc after one of @pseq, @pdisc: nothing lost between. */
static bool follows(uint64_t seq, uint64_t disc, uint64_t pseq, uint64_t pdisc)
{
	return seq == pseq + 1 && disc == pdisc;
}

int rt_facts_record(struct rt_facts *b, const struct chunk_table_frame *r)
{
	/* Frames decoded that held no packet: nothing there, the gap is the next one's. */
	if (r->flags & CHUNK_FRAME_UNLEARNT)
		return 0;
	/* A loss between two frames: as the LOST item a full pass reads. */
	if (b->have_prev && !follows(r->first_seq, r->first_discarded,
				     b->last_seq, b->last_discarded))
		b->cur = -1;
	for (uint32_t k = 0; k < r->nr_facts; k++)
		if (push(b, &r->facts[k]))
			return -1;
	if (r->cpu_change == CHUNK_CPU_SET ||
	    (r->cpu_change == CHUNK_CPU_FILL && b->cur < 0))
		b->cur = r->cpu_tid;
	b->have_prev = true;
	b->last_seq = r->last_seq;
	b->last_discarded = r->last_discarded;
	return 0;
}

int rt_facts_end(struct rt_facts *b, const struct rt_packet_info *next)
{
	struct chunk_fact f = { .kind = RT_FACT_CPU_SET };

	compact(b);
	if (!b->have_prev || !next)
		return 0;
	if (!follows(next->seq, next->events_discarded, b->last_seq, b->last_discarded))
		b->cur = -1;
	f.ts = next->timestamp_begin;
	f.tid = b->cur;
	return push(b, &f);
}

/* ---- the table maker: a packer's ------------------------------------------------------- */

struct rt_table_maker {
	struct chunk_table_ops ops;
	struct rt_metadata *md;
	struct stat mst;		/* of the metadata file @md is */
	struct rt_stream *s;		/* the chunk's packets, fed */
	struct rt_collector *c;
	struct rt_schedrec *r;		/* its scheduler records (schedrec.c) */
	char name[CHUNK_NAME_MAX];
	unsigned int damage, notes;	/* the stream's, so far */
	bool dead;			/* it failed: nothing more is learnt */
	bool reference;			/* rt_table_maker_set_reference() */
};

/*
 * The trace's metadata, @dirfd's "metadata", parsed again only when the
 * file changed (ringtraced replaces it when the event set grows, and it
 * declares every event of every chunk on disk: metadata.c).
 */
static int load_metadata(struct rt_table_maker *m, int dirfd)
{
	int fd = openat(dirfd, "metadata", O_RDONLY | O_CLOEXEC);
	struct rt_metadata *md = NULL;
	struct rt_error err;
	struct stat st;
	char *text = NULL;
	int ret = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > (64 << 20))
		goto out;
	if (m->md && st.st_ino == m->mst.st_ino && st.st_dev == m->mst.st_dev &&
	    st.st_size == m->mst.st_size &&
	    st.st_mtim.tv_sec == m->mst.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == m->mst.st_mtim.tv_nsec) {
		ret = 0;
		goto out;
	}
	text = malloc((size_t)st.st_size);
	if (!text || rt_pread_full(fd, text, (size_t)st.st_size, 0))
		goto out;
	if (rt_metadata_parse(text, (size_t)st.st_size, "metadata", &md, &err))
		goto out;
	rt_metadata_free(m->md);
	m->md = md;
	m->mst = st;
	ret = 0;
out:
	free(text);
	close(fd);
	return ret;
}

static void maker_end(void *arg)
{
	struct rt_table_maker *m = arg;

	rt_stream_close(m->s);
	rt_collector_free(m->c);
	rt_schedrec_free(m->r);
	m->s = NULL;
	m->c = NULL;
	m->r = NULL;
}

/* What the table and the scheduler records read (the stream hands out no other event). */
static bool maker_wants(void *arg, const struct rt_event_desc *ev)
{
	struct rt_table_maker *m = arg;

	return rt_threads_reads(m->c->th, ev) || rt_schedrec_reads(ev);
}

static int maker_begin(void *arg, int dirfd, const char *name)
{
	struct rt_table_maker *m = arg;
	unsigned int cpu, seq;
	struct rt_error err;

	maker_end(m);
	m->dead = false;
	m->damage = m->notes = 0;
	if (!chunk_parse_name(name, &cpu, &seq) || cpu >= RT_MAX_CPUS ||
	    load_metadata(m, dirfd))
		return -1;
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->c = rt_collector_new(m->md);
	m->r = rt_schedrec_new();
	/* No event of the trace tells of threads: a window learns nothing. */
	if (!m->c || !m->r || !rt_threads_reads_any(m->c->th) ||
	    rt_stream_open_fed(&m->s, m->md, (int)cpu, &err) ||
	    (!m->reference && rt_stream_set_wanted(m->s, maker_wants, m))) {
		maker_end(m);
		return -1;
	}
	rt_stream_set_tolerant(m->s, true);
	rt_stream_set_reference(m->s, m->reference);
	return 0;
}

static void maker_packet(void *arg, const uint8_t *pkt, size_t len, uint64_t offset)
{
	struct rt_table_maker *m = arg;
	struct rt_error err;
	struct rt_item it;
	int r = 0;

	if (m->dead)
		return;
	/* Read dry below, before the packer's buffer changes: no copy. */
	if (rt_stream_feed_lent(m->s, m->name, offset, pkt, len, &err))
		r = -1;
	else
		while ((r = rt_stream_next(m->s, &it, &err)) > 0) {
			rt_collector_item(m->c, &it);
			rt_schedrec_item(m->r, &it);
		}
	/* Damage read past (or dropped): the frame is what a reader decodes. */
	if (r < 0 || rt_stream_nr_damage(m->s) != m->damage ||
	    rt_stream_nr_notes(m->s) != m->notes) {
		rt_collector_unlearnt(m->c);
		rt_schedrec_unlearnt(m->r);
	}
	m->damage = rt_stream_nr_damage(m->s);
	m->notes = rt_stream_nr_notes(m->s);
	m->dead = r < 0;
}

static int maker_frame_end(void *arg, struct chunk_table_frame *f)
{
	struct rt_table_maker *m = arg;

	if (m->dead)
		rt_collector_unlearnt(m->c);
	return rt_collector_end_frame(m->c, f);
}

static int maker_sched_end(void *arg, struct chunk_sched_frame *f)
{
	struct rt_table_maker *m = arg;

	if (m->dead)
		rt_schedrec_unlearnt(m->r);
	return rt_schedrec_end_frame(m->r, f);
}

struct rt_table_maker *rt_table_maker_new(void)
{
	struct rt_table_maker *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ops = (struct chunk_table_ops){
		.begin = maker_begin,
		.packet = maker_packet,
		.frame_end = maker_frame_end,
		.sched_end = maker_sched_end,
		.end = maker_end,
		.arg = m,
	};
	return m;
}

void rt_table_maker_free(struct rt_table_maker *m)
{
	if (!m)
		return;
	maker_end(m);
	rt_metadata_free(m->md);
	free(m);
}

const struct chunk_table_ops *rt_table_maker_ops(struct rt_table_maker *m)
{
	return &m->ops;
}

void rt_table_maker_set_reference(struct rt_table_maker *m, bool on)
{
	m->reference = on;
}
