// SPDX-License-Identifier: GPL-2.0
/*
 * An event's trailers into one stack pair (stackrec.h).  One pair is open
 * at a time: the last event's, until an item that is not its trailer.  The
 * frames are copied, since an item's fields live until the next item.
 */
#include <stdlib.h>
#include <string.h>

#include "stackrec.h"

#define KSTACK_EVENT	"kernel_stack"
#define USTACK_EVENT	"user_stack"

struct ips_buf {
	uint64_t *v;
	uint32_t cap;
};

struct stackrec {
	bool open;			/* pair is the last event's, its stacks to come */
	bool has_stack;			/* it has one: handed out when complete */
	struct stack_pair pair;
	struct stack_pair done;		/* handed out; its frames in the bufs */
	struct ips_buf kbuf, ubuf;
};

struct stackrec *stackrec_new(void)
{
	return calloc(1, sizeof(struct stackrec));
}

void stackrec_free(struct stackrec *sr)
{
	if (!sr)
		return;
	free(sr->kbuf.v);
	free(sr->ubuf.v);
	free(sr);
}

bool stackrec_is_trailer(const struct rt_item *it)
{
	return it->type == RT_ITEM_EVENT &&
	       (!strcmp(it->event->name, KSTACK_EVENT) ||
		!strcmp(it->event->name, USTACK_EVENT));
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

/* The open pair, closed: handed out if it has a stack. */
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
	const struct stack_pair *done;
	bool user;

	if (!stackrec_is_trailer(it)) {
		done = close_pair(sr);
		if (it->type == RT_ITEM_EVENT) {
			sr->open = true;
			sr->pair = (struct stack_pair){
				.event = it->event, .cpu = it->cpu,
				.timestamp = it->timestamp,
			};
		}
		return done;
	}
	user = !strcmp(it->event->name, USTACK_EVENT);
	/* Not the open event's: its event was lost; the open pair is done. */
	if (!sr->open || it->cpu != sr->pair.cpu || it->timestamp != sr->pair.timestamp)
		return close_pair(sr);
	if (user) {
		/* The last trailer: the pair is complete. */
		if (!sr->pair.user.present &&
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
