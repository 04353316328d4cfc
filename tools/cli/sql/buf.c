// SPDX-License-Identifier: GPL-2.0
/* A growing byte buffer (buf.h). */
#include <stdlib.h>
#include <string.h>

#include "../../../lib/msg.h"
#include "buf.h"

void buf_room(struct buf *b, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			die("out of memory");
		b->cap = cap;
	}
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_room(b, len);
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

void buf_u8(struct buf *b, uint8_t v)
{
	buf_add(b, &v, 1);
}
