/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rt_fuzz: the markers the fuzzer writes, and how the consumer knows them.
 *
 *   "FZ<writer>:<seq>:<len>:" then byte i (from the start) = fz_marker_byte()
 *
 * <len> is the whole write, so a marker cut short or grown shows.  Markers
 * written from a buffer that faults part-way start with FZ_MARKER_POISON in
 * the bytes the kernel could read: the write must fail and record nothing.
 */
#ifndef _RT_FUZZ_MARKER_H
#define _RT_FUZZ_MARKER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FZ_MARKER_POISON	"FZBAD"

static inline uint8_t fz_marker_byte(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 31 + i * 7 + (i >> 8));
}

/*
 * Fill @n bytes (n >= 1): the prefix, then the pattern.  A marker too
 * short for the prefix is all pattern after "fz": the consumer checks
 * only markers that start with "FZ".  Returns the prefix length.
 */
static inline int fz_marker_fill(uint8_t *b, size_t n, unsigned int writer,
				 uint64_t seq)
{
	char pre[64];
	int len = snprintf(pre, sizeof(pre), "FZ%u:%llu:%zu:", writer,
			   (unsigned long long)seq, n);
	size_t i;

	if ((size_t)len > n) {
		len = n < 2 ? n : 2;
		memcpy(b, "fz", len);
	} else {
		memcpy(b, pre, len);
	}
	for (i = len; i < n; i++)
		b[i] = fz_marker_byte(seq, i);
	return len;
}

static inline bool fz_marker_intact(const uint8_t *b, size_t n, uint64_t seq,
				    int prefix)
{
	size_t i;

	for (i = prefix; i < n; i++)
		if (b[i] != fz_marker_byte(seq, i))
			return false;
	return true;
}

#endif /* _RT_FUZZ_MARKER_H */
