/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A growing byte buffer (buf.c), kept and emptied (len = 0) between uses
 * so that its room is allocated once: ship's RowBinary batches, raw's
 * args and --json's rows.  Out of memory ends the run (die()).
 */
#ifndef RINGTRACE_SQL_BUF_H
#define RINGTRACE_SQL_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* Room for @len more bytes. */
void buf_room(struct buf *b, size_t len);
void buf_add(struct buf *b, const void *data, size_t len);
void buf_u8(struct buf *b, uint8_t v);

#endif /* RINGTRACE_SQL_BUF_H */
