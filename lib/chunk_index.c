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

int chunk_index_add(struct chunk_index *ix, const struct chunk_index_entry *e)
{
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 64;
		struct chunk_index_entry *n = realloc(ix->e, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ix->e = n;
		ix->cap = cap;
	}
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
