// SPDX-License-Identifier: GPL-2.0
/*
 * An event's trailers into one stack pair (stackrec.h).  One pair is open
 * at a time: the last event's, until an item that is not its trailer.  The
 * frames are copied, since an item's fields live until the next item.
 */
#include <stdlib.h>
#include <string.h>

#include "stackrec.h"

enum kind { K_OTHER, K_KSTACK, K_USTACK, K_UCOPY, K_SAMPLE };

struct ips_buf {
	uint64_t *v;
	uint32_t cap;
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
};

int stackrec_set_metadata(struct stackrec *sr, const struct rt_metadata *md)
{
	uint8_t *k = calloc(md->nr_events + 1, 1);

	if (!k)
		return -1;
	for (unsigned int i = 0; i < md->nr_events; i++) {
		const char *name = md->events[i].name;

		k[i] = !strcmp(name, "kernel_stack") ? K_KSTACK :
		       !strcmp(name, "user_stack") ? K_USTACK :
		       !strcmp(name, "user_stack_copy") ? K_UCOPY :
		       !strcmp(name, "cpu_sample") ? K_SAMPLE : K_OTHER;
	}
	free(sr->kinds);
	sr->kinds = k;
	sr->md = md;
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
	free(sr);
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

bool stackrec_is_trailer(const struct stackrec *sr, const struct rt_item *it)
{
	enum kind k = kind_of(sr, it);

	return k == K_KSTACK || k == K_USTACK || k == K_UCOPY;
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

	if (!v || v->count > UINT16_MAX)
		return false;
	if (v->count > b->cap) {
		uint64_t *p = realloc(b->v, v->count * sizeof(*p));

		if (!p)
			return false;
		b->v = p;
		b->cap = (uint32_t)v->count;
	}
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
	bool user;

	if (k != K_KSTACK && k != K_USTACK && k != K_UCOPY) {
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
	user = k == K_USTACK;
	/* Not the open event's: its event was lost; the open pair is done. */
	if (!sr->open || it->cpu != sr->pair.cpu || it->timestamp != sr->pair.timestamp)
		return close_pair(sr);
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
