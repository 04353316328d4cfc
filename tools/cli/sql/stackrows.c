// SPDX-License-Identifier: GPL-2.0
/*
 * Stack pairs into frames and content ids (stackrows.h).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "stackrows.h"

#define ID_MASK		INT64_MAX

static char *dup_or_null(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		die("out of memory");
	return d;
}

static void frames_clear(struct sr_stack *st)
{
	for (uint32_t i = 0; st->keep_frames && i < st->nr; i++) {
		free(st->frames[i].name);
		free(st->frames[i].module);
		free(st->frames[i].symbol);
	}
	st->nr = 0;
}

/* What identifies a frame: kind, module (+ build-id), rel_pc. */
static int64_t frame_id(const struct named_frame *f)
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

static void one_frame(void *arg, const struct named_frame *f)
{
	struct sr_stack *st = arg;

	if (st->nr == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 64;
		st->ids = realloc(st->ids, st->cap * sizeof(*st->ids));
		st->frames = realloc(st->frames, st->cap * sizeof(*st->frames));
		if (!st->ids || !st->frames)
			die("out of memory");
	}
	st->ids[st->nr] = frame_id(f);
	if (st->keep_frames)
		st->frames[st->nr] = (struct sr_frame){
			.id = st->ids[st->nr],
			.user = f->user,
			.name = dup_or_null(f->name),
			.module = dup_or_null(f->module),
			.symbol = dup_or_null(f->symbol),
			.rel_pc = f->rel_pc,
		};
	st->nr++;
}

void sr_stack_read(struct sr_stack *st, struct scan *scan, const struct scan_row *row)
{
	const struct stack_pair *p = row->pair;

	frames_clear(st);
	/* An idle CPU's sample: no stack recorded (report counts none). */
	st->present = p->kernel.present || p->user.present || p->copy.present;
	if (!st->present)
		return;
	stack_pair_frames(scan_names(scan), p, row->pid, one_frame, st);
	st->id = (int64_t)(XXH3_64bits(st->ids, st->nr * sizeof(*st->ids)) & ID_MASK);
}

void sr_stack_free(struct sr_stack *st)
{
	frames_clear(st);
	free(st->ids);
	free(st->frames);
	memset(st, 0, sizeof(*st));
}

bool sr_seen_add(struct sr_seen *s, unsigned int member, int64_t id)
{
	size_t i;

	if (member != s->member) {
		free(s->v);
		memset(s, 0, sizeof(*s));
		s->member = member;
	}
	if (!id) {
		bool was = s->zero;

		s->zero = true;
		return !was;
	}
	if (2 * (s->nr + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		int64_t *v = calloc(cap, sizeof(*v));

		if (!v)
			die("out of memory");
		for (size_t k = 0; k < s->cap; k++) {
			if (!s->v[k])
				continue;
			for (i = (size_t)s->v[k] & (cap - 1); v[i]; i = (i + 1) & (cap - 1))
				;
			v[i] = s->v[k];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	/* The ids are hashes already. */
	for (i = (size_t)id & (s->cap - 1); s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == id)
			return false;
	s->v[i] = id;
	s->nr++;
	return true;
}

void sr_seen_free(struct sr_seen *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
