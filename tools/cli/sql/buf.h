/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A growing byte buffer (buf.c), kept and emptied (len = 0) between uses
 * so that its room is allocated once: ship's RowBinary batches, raw's
 * args and --json's rows.  Out of memory ends the run (die()).  The calls
 * a row makes many of are inline; only growing is not.
 */
#ifndef RINGTRACE_SQL_BUF_H
#define RINGTRACE_SQL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* Room for @len more bytes, reallocated. */
void buf_grow(struct buf *b, size_t len);

/* Room for @len more bytes. */
static inline void buf_room(struct buf *b, size_t len)
{
	if (len > b->cap - b->len)
		buf_grow(b, len);
}

static inline void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_room(b, len);
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static inline void buf_u8(struct buf *b, uint8_t v)
{
	buf_room(b, 1);
	b->p[b->len++] = v;
}

/* @u in decimal, '-' in front if @neg (no printf: a value or more a row). */
void buf_dec(struct buf *b, uint64_t u, bool neg);

#endif /* RINGTRACE_SQL_BUF_H */
