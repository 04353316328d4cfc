// SPDX-License-Identifier: GPL-2.0
/*
 * Stack pairs into frame ids and stack ids (stackrows.h).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "stackrows.h"

#define ID_MASK		INT64_MAX

int64_t sr_frame_id(const struct named_frame *f)
{
	uint8_t buf[1 + 8 + 1 + UMAP_BUILD_ID_MAX + 4096];
	size_t n = 0, len = f->module ? strnlen(f->module, 4095) : 0;
	uint8_t bl = f->build_id_len <= UMAP_BUILD_ID_MAX ? f->build_id_len : 0;

	buf[n++] = f->user ? 'u' : 'k';
	memcpy(buf + n, &f->rel_pc, 8);
	n += 8;
	buf[n++] = bl;
	if (bl)
		memcpy(buf + n, f->build_id, bl);
	n += bl;
	/* A path longer than 4095 bytes: its start (PATH_MAX is 4096). */
	if (f->module)
		memcpy(buf + n, f->module, len);
	n += len;
	buf[n++] = f->module ? 1 : 0;
	return (int64_t)(XXH3_64bits(buf, n) & ID_MASK);
}

int64_t sr_stack_id(const int64_t *ids, uint32_t nr)
{
	return (int64_t)(XXH3_64bits(ids, nr * sizeof(*ids)) & ID_MASK);
}

bool sr_pair_present(const struct stack_pair *p)
{
	/* An idle CPU's sample: no stack recorded (report counts none). */
	return p->kernel.present || p->user.present || p->copy.present;
}

static void one_frame(void *arg, const struct named_frame *f)
{
	struct sr_stack *st = arg;

	if (st->nr == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 64;
		st->ids = reallocarray(st->ids, st->cap, sizeof(*st->ids));
		if (!st->ids)
			die("out of memory");
	}
	st->ids[st->nr++] = sr_frame_id(f);
}

void sr_stack_read(struct sr_stack *st, struct scan *scan, const struct scan_row *row)
{
	const struct stack_pair *p = row->pair;

	st->nr = 0;
	st->present = sr_pair_present(p);
	if (!st->present)
		return;
	stack_pair_frames(scan_names(scan), p, row->pid, one_frame, st);
	st->id = sr_stack_id(st->ids, st->nr);
}

void sr_stack_free(struct sr_stack *st)
{
	free(st->ids);
	memset(st, 0, sizeof(*st));
}
