// SPDX-License-Identifier: GPL-2.0
/* A packed chunk's time index: its format, both ways (chunk_index.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "chunk_index.h"
#include "le.h"

/* Room in *@v (*@cap elements of @elem bytes) for element @n: 0, or -ENOMEM. */
static int grow(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return 0;
	p = reallocarray(*v, c, elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/*
 * The thread table and the scheduler records are frames of one shape:
 * magic and length, @len bytes of records, then a 32-byte footer -- XXH64
 * of the records, their number, a record's and an item's size, the
 * version, the records' bytes, the tag.
 */
struct trailer {
	uint32_t magic, tag, version, record, item;
	uint32_t min_version;		/* the oldest still read */
	const char *what;
};

_Static_assert(CHUNK_SCHED_FOOTER == CHUNK_TABLE_FOOTER, "one footer for both frames");

static const struct trailer table_trailer = {
	CHUNK_TABLE_MAGIC, CHUNK_TABLE_TAG, CHUNK_TABLE_VERSION, CHUNK_TABLE_RECORD,
	CHUNK_TABLE_FACT, CHUNK_TABLE_VERSION_MIN, "a thread table",
};

static const struct trailer sched_trailer = {
	CHUNK_SCHED_MAGIC, CHUNK_SCHED_TAG, CHUNK_SCHED_VERSION, CHUNK_SCHED_RECORD,
	CHUNK_SCHED_THREAD, CHUNK_SCHED_VERSION, "scheduler records",
};

/* @buf's magic and length, and its footer at @p after @len bytes of @n records. */
static void trailer_put(const struct trailer *t, uint8_t *buf, uint8_t *p, size_t len, size_t n)
{
	rt_put_le(buf, t->magic, 4);
	rt_put_le(buf + 4, len + CHUNK_TABLE_FOOTER, 4);
	rt_put_le(p, XXH64(buf + CHUNK_INDEX_HEADER, len, 0), 8);
	rt_put_le(p + 8, n, 4);
	rt_put_le(p + 12, t->record, 4);
	rt_put_le(p + 16, t->item, 4);
	rt_put_le(p + 20, t->version, 4);
	rt_put_le(p + 24, len, 4);
	rt_put_le(p + 28, t->tag, 4);
}

/* The frame in front of @room bytes whose footer is @footer: its bytes, 0 none. */
static uint64_t trailer_size(const struct trailer *t, const uint8_t *footer, uint64_t room)
{
	uint64_t n = CHUNK_INDEX_HEADER + rt_get_le(footer + 24, 4) + CHUNK_TABLE_FOOTER;

	if (rt_get_le(footer + 28, 4) != t->tag)
		return 0;
	/* Whatever it says, no more than there is: the parse says what is wrong. */
	return n <= room ? n : room;
}

/*
 * @buf, @len bytes, is such a frame of @n records, whole (its checksum):
 * 0, or -1 with the reason in @why.
 */
static int trailer_check(const struct trailer *t, const uint8_t *buf, size_t len, size_t n,
			 char *why, size_t size)
{
	const uint8_t *f = buf + len - CHUNK_TABLE_FOOTER;

	if (len < CHUNK_INDEX_HEADER + CHUNK_TABLE_FOOTER || rt_get_le(f + 28, 4) != t->tag)
		goto bad_size;
	if (rt_get_le(f + 20, 4) < t->min_version || rt_get_le(f + 20, 4) > t->version ||
	    rt_get_le(f + 12, 4) != t->record ||
	    rt_get_le(f + 16, 4) != t->item) {
		if (t->min_version == t->version)
			snprintf(why, size, "not %s of version %u", t->what, t->version);
		else
			snprintf(why, size, "not %s of versions %u to %u", t->what,
				 t->min_version, t->version);
		return -1;
	}
	if (rt_get_le(buf, 4) != t->magic ||
	    rt_get_le(buf + 4, 4) != len - CHUNK_INDEX_HEADER ||
	    rt_get_le(f + 24, 4) != len - CHUNK_INDEX_HEADER - CHUNK_TABLE_FOOTER ||
	    rt_get_le(f + 8, 4) != n)
		goto bad_size;
	if (XXH64(buf + CHUNK_INDEX_HEADER, len - CHUNK_INDEX_HEADER - CHUNK_TABLE_FOOTER, 0) !=
	    rt_get_le(f, 8)) {
		snprintf(why, size, "its checksum does not match its records");
		return -1;
	}
	return 0;
bad_size:
	snprintf(why, size, "its sizes disagree with the index's %zu frames", n);
	return -1;
}

int chunk_index_add(struct chunk_index *ix, const struct chunk_index_entry *e)
{
	if (grow((void **)&ix->e, &ix->cap, ix->n, sizeof(*e), 64))
		return -ENOMEM;
	ix->e[ix->n++] = *e;
	return 0;
}

void chunk_index_free(struct chunk_index *ix)
{
	free(ix->e);
	memset(ix, 0, sizeof(*ix));
}

size_t chunk_index_size(const struct chunk_index *ix)
{
	return CHUNK_INDEX_HEADER + ix->n * CHUNK_INDEX_ENTRY + CHUNK_INDEX_FOOTER;
}

void chunk_index_encode(const struct chunk_index *ix, uint8_t *buf)
{
	uint8_t *p = buf + CHUNK_INDEX_HEADER;

	rt_put_le(buf, CHUNK_INDEX_MAGIC, 4);
	rt_put_le(buf + 4, chunk_index_size(ix) - CHUNK_INDEX_HEADER, 4);
	for (size_t i = 0; i < ix->n; i++, p += CHUNK_INDEX_ENTRY) {
		rt_put_le(p, ix->e[i].coff, 8);
		rt_put_le(p + 8, ix->e[i].uoff, 8);
		rt_put_le(p + 16, ix->e[i].ts_begin, 8);
		rt_put_le(p + 24, ix->e[i].ts_end, 8);
	}
	rt_put_le(p, ix->data_bytes, 8);
	rt_put_le(p + 8, ix->content_bytes, 8);
	rt_put_le(p + 16, XXH64(buf + CHUNK_INDEX_HEADER, ix->n * CHUNK_INDEX_ENTRY, 0), 8);
	rt_put_le(p + 24, ix->n, 4);
	rt_put_le(p + 28, CHUNK_INDEX_ENTRY, 4);
	rt_put_le(p + 32, CHUNK_INDEX_VERSION, 4);
	rt_put_le(p + 36, CHUNK_INDEX_TAG, 4);
}

uint64_t chunk_index_frame_size(const uint8_t *footer, uint64_t file_size)
{
	uint64_t n = rt_get_le(footer + 24, 4);

	if (rt_get_le(footer + 36, 4) != CHUNK_INDEX_TAG)
		return 0;
	/* Whatever N says, no more than the file: the parse says what is wrong. */
	n = CHUNK_INDEX_HEADER + n * CHUNK_INDEX_ENTRY + CHUNK_INDEX_FOOTER;
	return n <= file_size ? n : file_size;
}

int chunk_index_parse(const uint8_t *buf, size_t len, uint64_t file_size,
		      struct chunk_index *ix, char *why, size_t size)
{
	const uint8_t *f = buf + len - CHUNK_INDEX_FOOTER;
	uint64_t n, data, content;

	memset(ix, 0, sizeof(*ix));
	if (len < CHUNK_INDEX_HEADER + CHUNK_INDEX_FOOTER || len > file_size)
		goto bad_size;
	n = rt_get_le(f + 24, 4);
	data = rt_get_le(f, 8);
	content = rt_get_le(f + 8, 8);
	if (rt_get_le(f + 36, 4) != CHUNK_INDEX_TAG ||
	    rt_get_le(f + 32, 4) != CHUNK_INDEX_VERSION ||
	    rt_get_le(f + 28, 4) != CHUNK_INDEX_ENTRY) {
		snprintf(why, size, "not an index of version %u", CHUNK_INDEX_VERSION);
		return -1;
	}
	if (rt_get_le(buf, 4) != CHUNK_INDEX_MAGIC ||
	    rt_get_le(buf + 4, 4) != len - CHUNK_INDEX_HEADER ||
	    len != CHUNK_INDEX_HEADER + n * CHUNK_INDEX_ENTRY + CHUNK_INDEX_FOOTER ||
	    data != file_size - len || !n)
		goto bad_size;
	if (XXH64(buf + CHUNK_INDEX_HEADER, n * CHUNK_INDEX_ENTRY, 0) != rt_get_le(f + 16, 8)) {
		snprintf(why, size, "its checksum does not match its entries");
		return -1;
	}
	ix->e = calloc(n, sizeof(*ix->e));
	if (!ix->e) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	ix->n = ix->cap = n;
	ix->data_bytes = data;
	ix->content_bytes = content;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + CHUNK_INDEX_HEADER + i * CHUNK_INDEX_ENTRY;
		struct chunk_index_entry *e = &ix->e[i], *prev = e - 1;

		e->coff = rt_get_le(p, 8);
		e->uoff = rt_get_le(p + 8, 8);
		e->ts_begin = rt_get_le(p + 16, 8);
		e->ts_end = rt_get_le(p + 24, 8);
		if (e->coff >= data || e->uoff >= content ||
		    (!i && (e->coff || e->uoff)) ||
		    (i && (e->coff <= prev->coff || e->uoff <= prev->uoff))) {
			snprintf(why, size, "entry %zu: offsets not increasing within the file", i);
			goto bad;
		}
		if (e->ts_end < e->ts_begin || (i && e->ts_begin < prev->ts_end)) {
			snprintf(why, size, "entry %zu: its times go back", i);
			goto bad;
		}
	}
	return 0;
bad_size:
	snprintf(why, size, "its sizes disagree with the file's %" PRIu64 " bytes",
		 file_size);
	return -1;
bad:
	chunk_index_free(ix);
	return -1;
}

/* ---- the thread table ------------------------------------------------------------ */

int chunk_table_add(struct chunk_table *t, struct chunk_table_frame *f)
{
	if (grow((void **)&t->f, &t->cap, t->n, sizeof(*f), 16))
		return -ENOMEM;
	t->f[t->n++] = *f;
	f->facts = NULL;
	f->nr_facts = 0;
	return 0;
}

void chunk_table_free(struct chunk_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->f[i].facts);
	free(t->f);
	memset(t, 0, sizeof(*t));
}

static size_t records_size(const struct chunk_table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += CHUNK_TABLE_RECORD + (size_t)t->f[i].nr_facts * CHUNK_TABLE_FACT;
	return n;
}

size_t chunk_table_size(const struct chunk_table *t)
{
	return CHUNK_INDEX_HEADER + records_size(t) + CHUNK_TABLE_FOOTER;
}

/* A fact's value as its kind keeps it, in 16 bytes. */
static void put_value(uint8_t *p, const struct chunk_fact *f)
{
	memset(p, 0, CHUNK_COMM_LEN);
	if (f->kind == CHUNK_FACT_COMM || f->kind == CHUNK_FACT_RENAME ||
	    f->kind == CHUNK_FACT_STALE)
		memcpy(p, f->v.comm, CHUNK_COMM_LEN);
	else if (f->kind == CHUNK_FACT_CGROUP)
		rt_put_le(p, f->v.cgroup, 8);
	else
		rt_put_le(p, (uint32_t)f->v.id, 4);
}

void chunk_table_encode(const struct chunk_table *t, uint8_t *buf)
{
	size_t len = records_size(t);
	uint8_t *p = buf + CHUNK_INDEX_HEADER;

	for (size_t i = 0; i < t->n; i++) {
		const struct chunk_table_frame *f = &t->f[i];

		rt_put_le(p, f->first_seq, 8);
		rt_put_le(p + 8, f->first_discarded, 8);
		rt_put_le(p + 16, f->last_seq, 8);
		rt_put_le(p + 24, f->last_discarded, 8);
		rt_put_le(p + 32, f->flags, 4);
		rt_put_le(p + 36, f->cpu_change, 4);
		rt_put_le(p + 40, (uint32_t)f->cpu_tid, 4);
		rt_put_le(p + 44, f->nr_facts, 4);
		p += CHUNK_TABLE_RECORD;
		for (uint32_t k = 0; k < f->nr_facts; k++, p += CHUNK_TABLE_FACT) {
			rt_put_le(p, f->facts[k].ts, 8);
			rt_put_le(p + 8, f->facts[k].kind, 4);
			rt_put_le(p + 12, (uint32_t)f->facts[k].tid, 4);
			put_value(p + 16, &f->facts[k]);
		}
	}
	trailer_put(&table_trailer, buf, p, len, t->n);
}

uint64_t chunk_table_frame_size(const uint8_t *footer, uint64_t room)
{
	return trailer_size(&table_trailer, footer, room);
}

/* The fact at @p into @f: 0, or -1 when its bytes are not a fact's. */
static int get_fact(const uint8_t *p, struct chunk_fact *f)
{
	const uint8_t *v = p + 16;
	unsigned int used;

	memset(f, 0, sizeof(*f));
	f->ts = rt_get_le(p, 8);
	f->kind = (uint32_t)rt_get_le(p + 8, 4);
	f->tid = (int32_t)(uint32_t)rt_get_le(p + 12, 4);
	switch (f->kind) {
	case CHUNK_FACT_COMM:
	case CHUNK_FACT_RENAME:
	case CHUNK_FACT_STALE:
		memcpy(f->v.comm, v, CHUNK_COMM_LEN);
		return f->v.comm[0] ? 0 : -1;
	case CHUNK_FACT_CGROUP:
		f->v.cgroup = rt_get_le(v, 8);
		used = 8;
		break;
	case CHUNK_FACT_PID:
	case CHUNK_FACT_PPID:
	case CHUNK_FACT_CGROUP_OF:
		f->v.id = (int32_t)(uint32_t)rt_get_le(v, 4);
		used = 4;
		break;
	default:
		return -1;
	}
	for (; used < CHUNK_COMM_LEN; used++)
		if (v[used])
			return -1;
	return 0;
}

int chunk_table_parse(const uint8_t *buf, size_t len,
		      const struct chunk_index *ix, struct chunk_table *t,
		      char *why, size_t size)
{
	const uint8_t *p, *end = buf + len - CHUNK_TABLE_FOOTER;
	uint32_t version;

	memset(t, 0, sizeof(*t));
	if (trailer_check(&table_trailer, buf, len, ix->n, why, size))
		return -1;
	/* An older packer's facts do not say what this reader's apply needs. */
	version = (uint32_t)rt_get_le(end + 20, 4);
	if (version < CHUNK_TABLE_VERSION) {
		snprintf(why, size, "a thread table of version %u, not read", version);
		return 1;
	}
	t->f = calloc(ix->n ? ix->n : 1, sizeof(*t->f));
	if (!t->f) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	t->cap = ix->n;
	for (p = buf + CHUNK_INDEX_HEADER; t->n < ix->n; t->n++) {
		const struct chunk_index_entry *e = &ix->e[t->n];
		struct chunk_table_frame *r = &t->f[t->n];

		if ((size_t)(end - p) < CHUNK_TABLE_RECORD)
			goto bad_size;
		r->first_seq = rt_get_le(p, 8);
		r->first_discarded = rt_get_le(p + 8, 8);
		r->last_seq = rt_get_le(p + 16, 8);
		r->last_discarded = rt_get_le(p + 24, 8);
		r->flags = (uint32_t)rt_get_le(p + 32, 4);
		r->cpu_change = (uint32_t)rt_get_le(p + 36, 4);
		r->cpu_tid = (int32_t)(uint32_t)rt_get_le(p + 40, 4);
		r->nr_facts = (uint32_t)rt_get_le(p + 44, 4);
		p += CHUNK_TABLE_RECORD;
		if (r->flags & ~CHUNK_FRAME_UNLEARNT || r->cpu_change > CHUNK_CPU_FILL ||
		    r->last_seq < r->first_seq || r->last_discarded < r->first_discarded ||
		    ((r->flags & CHUNK_FRAME_UNLEARNT) && (r->nr_facts || r->cpu_change))) {
			snprintf(why, size, "record %zu: not a frame's", t->n);
			goto bad;
		}
		if (r->nr_facts > (size_t)(end - p) / CHUNK_TABLE_FACT)
			goto bad_size;
		if (r->nr_facts) {
			r->facts = calloc(r->nr_facts, sizeof(*r->facts));
			if (!r->facts) {
				snprintf(why, size, "out of memory");
				goto bad;
			}
		}
		for (uint32_t k = 0; k < r->nr_facts; k++, p += CHUNK_TABLE_FACT) {
			struct chunk_fact *c = &r->facts[k];

			if (get_fact(p, c) || c->ts < e->ts_begin || c->ts > e->ts_end ||
			    (k && c->ts < c[-1].ts)) {
				snprintf(why, size, "record %zu: fact %u is not one of the frame's",
					 t->n, k);
				t->n++;
				goto bad;
			}
		}
	}
	if (p != end)
		goto bad_size;
	return 0;
bad_size:
	snprintf(why, size, "its sizes disagree with the index's %zu frames", ix->n);
bad:
	chunk_table_free(t);
	return -1;
}

/* ---- scheduler records ------------------------------------------------------------ */

int chunk_sched_add(struct chunk_sched *s, struct chunk_sched_frame *f)
{
	if (grow((void **)&s->f, &s->cap, s->n, sizeof(*f), 64))
		return -ENOMEM;
	s->f[s->n++] = *f;
	f->threads = NULL;
	f->nr_threads = 0;
	return 0;
}

void chunk_sched_free(struct chunk_sched *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->f[i].threads);
	free(s->f);
	memset(s, 0, sizeof(*s));
}

static size_t sched_records_size(const struct chunk_sched *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += CHUNK_SCHED_RECORD + (size_t)s->f[i].nr_threads * CHUNK_SCHED_THREAD;
	return n;
}

size_t chunk_sched_size(const struct chunk_sched *s)
{
	return CHUNK_INDEX_HEADER + sched_records_size(s) + CHUNK_SCHED_FOOTER;
}

void chunk_sched_encode(const struct chunk_sched *s, uint8_t *buf)
{
	size_t len = sched_records_size(s);
	uint8_t *p = buf + CHUNK_INDEX_HEADER;

	for (size_t i = 0; i < s->n; i++) {
		const struct chunk_sched_frame *f = &s->f[i];

		rt_put_le(p, f->flags | (f->irq.reset ? CHUNK_SCHED_IRQ_RESET : 0), 4);
		rt_put_le(p + 4, f->nr_threads, 4);
		rt_put_le(p + 8, f->first_seq, 8);
		rt_put_le(p + 16, f->first_discarded, 8);
		rt_put_le(p + 24, f->last_seq, 8);
		rt_put_le(p + 32, f->last_discarded, 8);
		rt_put_le(p + 40, f->first_switch, 8);
		rt_put_le(p + 48, f->last_switch, 8);
		rt_put_le(p + 56, (uint32_t)f->prev_tid, 4);
		rt_put_le(p + 60, (uint32_t)f->next_tid, 4);
		rt_put_le(p + 64, (uint64_t)f->next_prio, 8);
		rt_put_le(p + 72, f->irq.drop, 4);
		rt_put_le(p + 76, f->irq.add, 4);
		rt_put_le(p + 80, f->owner_change, 4);
		rt_put_le(p + 84, (uint32_t)f->owner, 4);
		p += CHUNK_SCHED_RECORD;
		for (uint32_t k = 0; k < f->nr_threads; k++, p += CHUNK_SCHED_THREAD) {
			const struct chunk_sched_thread *t = &f->threads[k];

			rt_put_le(p, (uint32_t)t->tid, 4);
			rt_put_le(p + 4, t->flags |
				  (t->wake_irq.reset ? CHUNK_SCHED_T_WAKE_IRQ_RESET : 0), 4);
			rt_put_le(p + 8, t->switch_ts, 8);
			rt_put_le(p + 16, (uint64_t)t->state, 8);
			rt_put_le(p + 24, t->mark_ts, 8);
			rt_put_le(p + 32, t->mark_last, 8);
			rt_put_le(p + 40, t->wake_ts, 8);
			rt_put_le(p + 48, t->wake_last, 8);
			rt_put_le(p + 56, (uint32_t)t->target_cpu, 4);
			rt_put_le(p + 60, (uint32_t)t->waker, 4);
			rt_put_le(p + 64, t->wake_irq.drop, 4);
			rt_put_le(p + 68, t->wake_irq.add, 4);
		}
	}
	trailer_put(&sched_trailer, buf, p, len, s->n);
}

uint64_t chunk_sched_frame_size(const uint8_t *footer, uint64_t room)
{
	return trailer_size(&sched_trailer, footer, room);
}

static bool in_frame(uint64_t ts, const struct chunk_index_entry *e)
{
	return ts >= e->ts_begin && ts <= e->ts_end;
}

/* Record @r of frame @e: whether what it says can be a frame's. */
static bool sched_record_ok(const struct chunk_sched_frame *r, const struct chunk_index_entry *e)
{
	if (r->flags & ~CHUNK_SCHED_FLAGS || r->owner_change > CHUNK_CPU_FILL ||
	    r->last_seq < r->first_seq || r->last_discarded < r->first_discarded ||
	    (r->owner_change == CHUNK_CPU_SAME && r->owner))
		return false;
	if (r->flags & CHUNK_SCHED_UNLEARNT)
		return r->flags == CHUNK_SCHED_UNLEARNT && !r->nr_threads && !r->irq.reset &&
		       !r->first_switch && !r->last_switch && !r->prev_tid && !r->next_tid &&
		       !r->next_prio && !r->irq.drop && !r->irq.add && !r->owner_change;
	if (r->flags & CHUNK_SCHED_SWITCHED)
		return in_frame(r->first_switch, e) && in_frame(r->last_switch, e) &&
		       r->first_switch <= r->last_switch;
	return !r->first_switch && !r->last_switch && !r->prev_tid && !r->next_tid &&
	       !r->next_prio;
}

/* Thread record @t of frame @e. */
static bool sched_thread_ok(const struct chunk_sched_thread *t, const struct chunk_index_entry *e)
{
	uint32_t f = t->flags;

	if (t->tid <= 0 || f & ~CHUNK_SCHED_T_FLAGS)
		return false;
	if (f & CHUNK_SCHED_T_SWITCH ? !in_frame(t->switch_ts, e) ||
				       (f & CHUNK_SCHED_T_IN && t->state) :
				       t->switch_ts || t->state || f & CHUNK_SCHED_T_IN)
		return false;
	if (f & CHUNK_SCHED_T_MARK ? !in_frame(t->mark_ts, e) || !in_frame(t->mark_last, e) ||
				     t->mark_ts > t->mark_last :
				     t->mark_ts || t->mark_last)
		return false;
	if (!(f & CHUNK_SCHED_T_WAKE))
		return !t->wake_ts && !t->wake_last && !t->target_cpu && !t->waker &&
		       !t->wake_irq.drop && !t->wake_irq.add &&
		       !(f & (CHUNK_SCHED_T_WAKE_IRQ_RESET | CHUNK_SCHED_T_WAKER_START |
			      CHUNK_SCHED_T_WAKER_FILL | CHUNK_SCHED_T_WAKE_CTX));
	return in_frame(t->wake_ts, e) && in_frame(t->wake_last, e) &&
	       t->wake_ts <= t->wake_last &&
	       !((f & CHUNK_SCHED_T_WAKER_START) && (f & CHUNK_SCHED_T_WAKER_FILL)) &&
	       (!(f & CHUNK_SCHED_T_WAKER_START) || !t->waker);
}

int chunk_sched_parse(const uint8_t *buf, size_t len, const struct chunk_index *ix,
		      struct chunk_sched *s, char *why, size_t size)
{
	const uint8_t *p, *end = buf + len - CHUNK_SCHED_FOOTER;
	bool bad;

	memset(s, 0, sizeof(*s));
	if (trailer_check(&sched_trailer, buf, len, ix->n, why, size))
		return -1;
	s->f = calloc(ix->n ? ix->n : 1, sizeof(*s->f));
	if (!s->f) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	s->cap = ix->n;
	for (p = buf + CHUNK_INDEX_HEADER; s->n < ix->n; s->n++) {
		const struct chunk_index_entry *e = &ix->e[s->n];
		struct chunk_sched_frame *r = &s->f[s->n];

		if ((size_t)(end - p) < CHUNK_SCHED_RECORD)
			goto bad_size;
		r->flags = (uint32_t)rt_get_le(p, 4);
		r->irq.reset = r->flags & CHUNK_SCHED_IRQ_RESET;
		r->nr_threads = (uint32_t)rt_get_le(p + 4, 4);
		r->first_seq = rt_get_le(p + 8, 8);
		r->first_discarded = rt_get_le(p + 16, 8);
		r->last_seq = rt_get_le(p + 24, 8);
		r->last_discarded = rt_get_le(p + 32, 8);
		r->first_switch = rt_get_le(p + 40, 8);
		r->last_switch = rt_get_le(p + 48, 8);
		r->prev_tid = (int32_t)(uint32_t)rt_get_le(p + 56, 4);
		r->next_tid = (int32_t)(uint32_t)rt_get_le(p + 60, 4);
		r->next_prio = (int64_t)rt_get_le(p + 64, 8);
		r->irq.drop = (uint32_t)rt_get_le(p + 72, 4);
		r->irq.add = (uint32_t)rt_get_le(p + 76, 4);
		r->owner_change = (uint32_t)rt_get_le(p + 80, 4);
		r->owner = (int32_t)(uint32_t)rt_get_le(p + 84, 4);
		p += CHUNK_SCHED_RECORD;
		/* In memory the depth's reset is irq.reset alone (and the same below). */
		r->flags &= ~CHUNK_SCHED_IRQ_RESET;
		if (!sched_record_ok(r, e)) {
			snprintf(why, size, "record %zu: not a frame's", s->n);
			goto bad;
		}
		if (r->nr_threads > (size_t)(end - p) / CHUNK_SCHED_THREAD)
			goto bad_size;
		if (r->nr_threads) {
			r->threads = calloc(r->nr_threads, sizeof(*r->threads));
			if (!r->threads) {
				snprintf(why, size, "out of memory");
				goto bad;
			}
		}
		for (uint32_t k = 0; k < r->nr_threads; k++, p += CHUNK_SCHED_THREAD) {
			struct chunk_sched_thread *t = &r->threads[k];

			t->tid = (int32_t)(uint32_t)rt_get_le(p, 4);
			t->flags = (uint32_t)rt_get_le(p + 4, 4);
			t->wake_irq.reset = t->flags & CHUNK_SCHED_T_WAKE_IRQ_RESET;
			t->switch_ts = rt_get_le(p + 8, 8);
			t->state = (int64_t)rt_get_le(p + 16, 8);
			t->mark_ts = rt_get_le(p + 24, 8);
			t->mark_last = rt_get_le(p + 32, 8);
			t->wake_ts = rt_get_le(p + 40, 8);
			t->wake_last = rt_get_le(p + 48, 8);
			t->target_cpu = (int32_t)(uint32_t)rt_get_le(p + 56, 4);
			t->waker = (int32_t)(uint32_t)rt_get_le(p + 60, 4);
			t->wake_irq.drop = (uint32_t)rt_get_le(p + 64, 4);
			t->wake_irq.add = (uint32_t)rt_get_le(p + 68, 4);
			bad = !sched_thread_ok(t, e) || (k && t->tid <= t[-1].tid);
			t->flags &= ~CHUNK_SCHED_T_WAKE_IRQ_RESET;
			if (bad) {
				snprintf(why, size, "record %zu: thread %u is not one of the frame's",
					 s->n, k);
				s->n++;
				goto bad;
			}
		}
	}
	if (p != end)
		goto bad_size;
	return 0;
bad_size:
	snprintf(why, size, "its sizes disagree with the index's %zu frames", ix->n);
bad:
	chunk_sched_free(s);
	return -1;
}
