/* SPDX-License-Identifier: GPL-2.0 */
/* The trace formats are little-endian whatever the host: what reads and
 * writes them (the decoder, the packer, the time index) shares these. */
#ifndef RINGTRACE_LIB_LE_H
#define RINGTRACE_LIB_LE_H

#include <stdint.h>

/* Little-endian loads and stores, possibly unaligned. */
static inline uint64_t rt_get_le(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = (v << 8) | p[bytes];
	return v;
}

static inline void rt_put_le(uint8_t *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

#endif
