// SPDX-License-Identifier: GPL-2.0
/*
 * An event's trailers into one stack pair (stackrec.h).  One pair is open
 * at a time: the last event's, until an item that is not its trailer.  The
 * frames are copied, since an item's fields live until the next item.
 * Interned stacks: each CPU's stack_defs of its current packet are kept,
 * by offset, until a record of another packet of that CPU comes; a
 * stack_ref takes its frames from there.
 */
#include <stdlib.h>
#include <string.h>

#include "stackrec.h"

enum kind { K_OTHER, K_KSTACK, K_USTACK, K_UCOPY, K_SAMPLE, K_DEF, K_REF };

/* stack_def's kinds (module/stack.c). */
#define DEF_KERNEL	0
#define DEF_USER	1

struct ips_buf {
	uint64_t *v;
	uint32_t cap;
};

/* A stack_def of a CPU's current packet; its frames in the CPU's pool. */
struct def {
	uint64_t off;			/* of its record in the packet */
	uint8_t kind;			/* DEF_* */
	uint16_t flags;
	uint32_t nr;
	size_t at;			/* its first frame in pool */
};

/* The stack_defs read in one CPU's packet, in the order of their offsets. */
struct cpu_defs {
	const char *file;		/* the packet: file, offset in it, seq */
	uint64_t pkt_off, seq;
	bool valid;
	struct def *v;
	size_t nr, cap;
	uint64_t *pool;
	size_t pool_nr, pool_cap;
};

struct stackrec {
	const struct rt_metadata *md;
	uint8_t *kinds;			/* enum kind, by position in md->events */
	bool open;			/* pair is the last event's, its stacks to come */
	bool has_stack;			/* it has one: handed out when complete */
	struct stack_pair pair;
	struct stack_pair done;		/* handed out; its frames in the bufs */
	struct ips_buf kbuf, ubuf;
	uint8_t *cbuf;			/* a user_stack_copy's bytes */
	uint32_t ccap;
	struct cpu_defs *cpus;		/* by CPU number */
	uint32_t nr_cpus;
	uint64_t lost;			/* refs without their def */
	/* The last item fed and its kind, for stackrec_is_trailer(). */
	const struct rt_item *last;
	const struct rt_event_desc *last_event;
	uint64_t last_offset;
	enum kind last_kind;
};

static enum kind kind_named(const char *name)
{
	return !strcmp(name, "kernel_stack") ? K_KSTACK :
	       !strcmp(name, "user_stack") ? K_USTACK :
	       !strcmp(name, "user_stack_copy") ? K_UCOPY :
	       !strcmp(name, "cpu_sample") ? K_SAMPLE :
	       !strcmp(name, "stack_def") ? K_DEF :
	       !strcmp(name, "stack_ref") ? K_REF : K_OTHER;
}

bool stackrec_pair_event(const char *name)
{
	/* What sets has_stack in stackrec_feed(); a stack_def alone does not. */
	enum kind k = kind_named(name);

	return k != K_OTHER && k != K_DEF;
}

int stackrec_set_metadata(struct stackrec *sr, const struct rt_metadata *md)
{
	uint8_t *k = calloc(md->nr_events + 1, 1);

	if (!k)
		return -1;
	for (unsigned int i = 0; i < md->nr_events; i++)
		k[i] = kind_named(md->events[i].name);
	free(sr->kinds);
	sr->kinds = k;
	sr->md = md;
	sr->last = NULL;
	return 0;
}

struct stackrec *stackrec_new(const struct rt_metadata *md)
{
	struct stackrec *sr = calloc(1, sizeof(*sr));

	if (sr && stackrec_set_metadata(sr, md)) {
		free(sr);
		return NULL;
	}
	return sr;
}

void stackrec_free(struct stackrec *sr)
{
	if (!sr)
		return;
	free(sr->kinds);
	free(sr->kbuf.v);
	free(sr->ubuf.v);
	free(sr->cbuf);
	for (uint32_t i = 0; i < sr->nr_cpus; i++) {
		free(sr->cpus[i].v);
		free(sr->cpus[i].pool);
	}
	free(sr->cpus);
	free(sr);
}

uint64_t stackrec_lost(const struct stackrec *sr)
{
	return sr->lost;
}

/* The kind of @it's event: a look-up by its position in the metadata. */
static enum kind kind_of(const struct stackrec *sr, const struct rt_item *it)
{
	const struct rt_event_desc *ev = it->event, *evs = sr->md->events;

	if (it->type != RT_ITEM_EVENT || (uintptr_t)ev < (uintptr_t)evs ||
	    (uintptr_t)ev >= (uintptr_t)(evs + sr->md->nr_events))
		return K_OTHER;
	return (enum kind)sr->kinds[ev - evs];
}

static bool is_trailer(enum kind k)
{
	return k == K_KSTACK || k == K_USTACK || k == K_UCOPY || k == K_DEF ||
	       k == K_REF;
}

/* Whether @it is the item fed last. */
static bool fed_last(const struct stackrec *sr, const struct rt_item *it)
{
	return it == sr->last && it->event == sr->last_event &&
	       it->offset == sr->last_offset;
}

/* The item just fed is not classified again. */
bool stackrec_is_trailer(const struct stackrec *sr, const struct rt_item *it)
{
	return is_trailer(fed_last(sr, it) ? sr->last_kind : kind_of(sr, it));
}

/*
 * The stack_defs of @it's CPU, emptied when @it is of another packet than
 * theirs; NULL out of memory.
 */
static struct cpu_defs *defs_of(struct stackrec *sr, const struct rt_item *it)
{
	const struct rt_packet_info *pi = it->packet;
	struct cpu_defs *c;

	if (it->cpu >= sr->nr_cpus) {
		uint32_t n = it->cpu + 1;
		struct cpu_defs *p = realloc(sr->cpus, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + sr->nr_cpus, 0, (n - sr->nr_cpus) * sizeof(*p));
		sr->cpus = p;
		sr->nr_cpus = n;
	}
	c = &sr->cpus[it->cpu];
	if (!c->valid || c->file != pi->file || c->pkt_off != pi->offset ||
	    c->seq != pi->seq) {
		c->valid = true;
		c->file = pi->file;
		c->pkt_off = pi->offset;
		c->seq = pi->seq;
		c->nr = c->pool_nr = 0;
	}
	return c;
}

/*
 * Keep @it, a stack_def, for the refs after it in its packet.  One that
 * does not check (a kind that is none, frames that disagree with its
 * depth) is left out: refs to it lose their stack.  Out of memory too.
 */
static void keep_def(struct stackrec *sr, const struct rt_item *it)
{
	const struct rt_field_value *kind, *flags, *ips;
	struct cpu_defs *c;
	struct def *d;

	kind = rt_item_field(it, "kind", RT_USE_INT);
	flags = rt_item_field(it, "flags", RT_USE_INT);
	ips = rt_item_field(it, "ips", RT_USE_INTS);
	if (!kind || !flags || !ips || rt_field_u64(kind, 0) > DEF_USER ||
	    ips->count > UINT16_MAX || !it->packet || it->offset < it->packet->offset)
		return;
	c = defs_of(sr, it);
	if (!c)
		return;
	if (c->nr == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct def *p = realloc(c->v, cap * sizeof(*p));

		if (!p)
			return;
		c->v = p;
		c->cap = cap;
	}
	if (c->pool_nr + ips->count > c->pool_cap) {
		size_t cap = c->pool_cap ? c->pool_cap : 1024;
		uint64_t *p;

		while (cap < c->pool_nr + ips->count)
			cap *= 2;
		p = realloc(c->pool, cap * sizeof(*p));
		if (!p)
			return;
		c->pool = p;
		c->pool_cap = cap;
	}
	d = &c->v[c->nr++];
	*d = (struct def){
		.off = it->offset - it->packet->offset,
		.kind = (uint8_t)rt_field_u64(kind, 0),
		.flags = (uint16_t)rt_field_u64(flags, 0),
		.nr = (uint32_t)ips->count,
		.at = c->pool_nr,
	};
	for (uint64_t i = 0; i < ips->count; i++)
		c->pool[c->pool_nr++] = rt_field_u64(ips, i);
}

/* The def of @kind at offset @off of @c's packet, or NULL. */
static const struct def *find_def(const struct cpu_defs *c, uint64_t off,
				  uint8_t kind)
{
	size_t lo = 0, hi = c->nr;

	/* Offsets grow along the packet: a binary search. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == c->nr || c->v[lo].off != off || c->v[lo].kind != kind)
		return NULL;
	return &c->v[lo];
}

/* Room for @n frames in @b; false out of memory. */
static bool ips_room(struct ips_buf *b, uint32_t n)
{
	uint64_t *p;

	if (n <= b->cap)
		return true;
	p = realloc(b->v, n * sizeof(*p));
	if (!p)
		return false;
	b->v = p;
	b->cap = n;
	return true;
}

/*
 * Frames of the def that @it's field @name (a stack_ref's) names, into @b
 * and @s; a field of 0 names none.  One that names no def of its kind in
 * the packet before it (damage) loses that stack, counted.
 */
static const struct def *take_ref(struct stackrec *sr, const struct rt_item *it,
				  const char *name, uint8_t kind,
				  struct ips_buf *b, struct stack_ips *s)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);
	const struct cpu_defs *c;
	const struct def *d;
	uint64_t off;

	if (!v || !(off = rt_field_u64(v, 0)))
		return NULL;
	c = it->packet ? defs_of(sr, it) : NULL;
	d = c ? find_def(c, off, kind) : NULL;
	if (!d || d->off >= it->offset - it->packet->offset) {
		sr->lost++;
		return NULL;
	}
	if (!ips_room(b, d->nr))
		return NULL;
	memcpy(b->v, c->pool + d->at, d->nr * sizeof(*b->v));
	*s = (struct stack_ips){ .present = true, .nr = d->nr, .ips = b->v };
	return d;
}

/* A cpu_sample's own tid or pid field, else -1. */
static int32_t own_id(const struct rt_item *it, const char *name)
{
	const struct rt_field_value *v = rt_item_field(it, name, RT_USE_INT);

	return v ? (int32_t)rt_field_s64(v, 0) : -1;
}

/* @it's ips into @b and @s; false when it has none or out of memory. */
static bool take_ips(const struct rt_item *it, struct ips_buf *b,
		     struct stack_ips *s)
{
	const struct rt_field_value *v = rt_item_field(it, "ips", RT_USE_INTS);

	if (!v || v->count > UINT16_MAX || !ips_room(b, (uint32_t)v->count))
		return false;
	for (uint64_t i = 0; i < v->count; i++)
		b->v[i] = rt_field_u64(v, i);
	*s = (struct stack_ips){ .present = true, .nr = (uint32_t)v->count, .ips = b->v };
	return true;
}

/*
 * @it's user_stack_copy into @sr's pair (its bytes into sr->cbuf); false
 * when a field is missing or its size disagrees with its bytes (damage),
 * or out of memory.
 */
static bool take_copy(struct stackrec *sr, const struct rt_item *it)
{
	const struct rt_field_value *ip, *sp, *bp, *size, *flags, *bytes;
	struct stack_copy *c = &sr->pair.copy;

	ip = rt_item_field(it, "ip", RT_USE_INT);
	sp = rt_item_field(it, "sp", RT_USE_INT);
	bp = rt_item_field(it, "bp", RT_USE_INT);
	size = rt_item_field(it, "size", RT_USE_INT);
	flags = rt_item_field(it, "flags", RT_USE_INT);
	bytes = rt_item_field(it, "bytes", RT_USE_INTS);
	if (!ip || !sp || !bp || !size || !flags || !bytes ||
	    bytes->desc->bits != 8 || bytes->count != rt_field_u64(size, 0) ||
	    bytes->count > UINT16_MAX)
		return false;
	if (bytes->count > sr->ccap) {
		uint8_t *p = realloc(sr->cbuf, bytes->count);

		if (!p)
			return false;
		sr->cbuf = p;
		sr->ccap = (uint32_t)bytes->count;
	}
	memcpy(sr->cbuf, bytes->data, bytes->count);
	*c = (struct stack_copy){
		.present = true,
		.ip = rt_field_u64(ip, 0),
		.sp = rt_field_u64(sp, 0),
		.bp = rt_field_u64(bp, 0),
		.size = (uint16_t)bytes->count,
		.flags = (uint16_t)rt_field_u64(flags, 0),
		.bytes = sr->cbuf,
	};
	sr->pair.user_flags = c->flags;
	return true;
}

/* The open pair, closed: handed out if it has a stack, or is a sample's. */
static const struct stack_pair *close_pair(struct stackrec *sr)
{
	bool had = sr->open && sr->has_stack;

	sr->open = false;
	sr->has_stack = false;
	if (!had)
		return NULL;
	/* The next event's pair starts now; its frames come with later items. */
	sr->done = sr->pair;
	return &sr->done;
}

const struct stack_pair *stackrec_feed(struct stackrec *sr, const struct rt_item *it)
{
	enum kind k = kind_of(sr, it);
	const struct stack_pair *done;
	const struct def *d;
	bool user;

	sr->last = it;
	sr->last_event = it->event;
	sr->last_offset = it->offset;
	sr->last_kind = k;
	if (!is_trailer(k)) {
		done = close_pair(sr);
		if (it->type == RT_ITEM_EVENT) {
			/* Field by field: this runs for every event read. */
			sr->open = true;
			sr->pair.event = it->event;
			sr->pair.cpu = it->cpu;
			sr->pair.timestamp = it->timestamp;
			sr->pair.tid = sr->pair.pid = -1;
			sr->pair.kernel.present = sr->pair.user.present = false;
			sr->pair.kernel.nr = sr->pair.user.nr = 0;
			sr->pair.user_flags = 0;
			sr->pair.copy.present = false;
			sr->pair.user_note = NULL;
			/*
			 * A sample names its thread: the CPU's may not be
			 * known.  It is handed out even without a stack (an
			 * idle CPU's, a kernel thread's in user mode): a
			 * profile counts it under its thread's name.
			 */
			if (k == K_SAMPLE) {
				sr->pair.tid = own_id(it, "tid");
				sr->pair.pid = own_id(it, "pid");
				sr->has_stack = true;
			}
		}
		return done;
	}
	/* A definition serves the refs after it, whichever event it rides. */
	if (k == K_DEF) {
		keep_def(sr, it);
		return NULL;
	}
	user = k == K_USTACK;
	/* Not the open event's: its event was lost; the open pair is done. */
	if (!sr->open || it->cpu != sr->pair.cpu || it->timestamp != sr->pair.timestamp)
		return close_pair(sr);
	if (k == K_REF) {
		/*
		 * Both stacks, or none: a second ref, or one after inline
		 * stacks, is left out.  A user_stack_copy may follow.
		 */
		if (sr->pair.kernel.present || sr->pair.user.present ||
		    sr->pair.copy.present)
			return NULL;
		if (take_ref(sr, it, "kernel", DEF_KERNEL, &sr->kbuf,
			     &sr->pair.kernel))
			sr->has_stack = true;
		d = take_ref(sr, it, "user", DEF_USER, &sr->ubuf, &sr->pair.user);
		if (d) {
			sr->pair.user_flags = d->flags;
			sr->has_stack = true;
		}
		return NULL;
	}
	if (k == K_UCOPY) {
		/* The last trailer too, in place of user_stack. */
		if (!sr->pair.user.present && !sr->pair.copy.present &&
		    take_copy(sr, it))
			sr->has_stack = true;
		return close_pair(sr);
	}
	if (user) {
		/* The last trailer: the pair is complete. */
		if (!sr->pair.user.present && !sr->pair.copy.present &&
		    take_ips(it, &sr->ubuf, &sr->pair.user)) {
			const struct rt_field_value *f = rt_item_field(it, "flags", RT_USE_INT);

			sr->pair.user_flags = f ? (uint16_t)rt_field_u64(f, 0) : 0;
			sr->has_stack = true;
		}
		return close_pair(sr);
	}
	/* A kernel stack after the user's, or a second: left out. */
	if (!sr->pair.kernel.present && take_ips(it, &sr->kbuf, &sr->pair.kernel))
		sr->has_stack = true;
	return NULL;
}

const struct stack_ips *stackrec_ref_kernel(const struct stackrec *sr,
					    const struct rt_item *it)
{
	if (!fed_last(sr, it) || sr->last_kind != K_REF || !sr->open ||
	    !sr->pair.kernel.present)
		return NULL;
	return &sr->pair.kernel;
}

bool stackrec_is_def(const struct stackrec *sr, const struct rt_item *it)
{
	return (fed_last(sr, it) ? sr->last_kind : kind_of(sr, it)) == K_DEF;
}

const struct stack_pair *stackrec_flush(struct stackrec *sr)
{
	return close_pair(sr);
}

int32_t stack_pair_pid(const struct stack_pair *p, const struct rt_threads *th,
		       int32_t tid)
{
	int32_t pid;

	if (p->pid >= 0)
		return p->pid;
	if (tid <= 0)
		return -1;
	/* Not said yet (no state dump, no fork of it): a main thread's is its tid. */
	pid = rt_threads_pid(th, tid);
	return pid < 0 ? tid : pid;
}
