// SPDX-License-Identifier: GPL-2.0
/* A growing byte buffer (buf.h). */
#include <stdlib.h>
#include <string.h>

#include "../../../lib/msg.h"
#include "buf.h"

void buf_grow(struct buf *b, size_t len)
{
	size_t cap = b->cap ? b->cap : 4096;

	while (cap < b->len + len)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (!b->p)
		die("out of memory");
	b->cap = cap;
}

void buf_dec(struct buf *b, uint64_t u, bool neg)
{
	char s[24], *p = s + sizeof(s);

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (neg)
		*--p = '-';
	buf_add(b, p, (size_t)(s + sizeof(s) - p));
}
