/* SPDX-License-Identifier: GPL-2.0 */
/* The trace formats are little-endian whatever the host: what reads and
 * writes them (the decoder, the packer, the time index) shares these. */
#ifndef RINGTRACE_LIB_LE_H
#define RINGTRACE_LIB_LE_H

#include <stdint.h>
#include <string.h>

/* Little-endian loads and stores, possibly unaligned. */
static inline uint64_t rt_get_le(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The host's order: one load (the decoder's hot path). */
	uint32_t v32;
	uint16_t v16;

	switch (bytes) {
	case 1:
		return p[0];
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	case 8:
		memcpy(&v, p, 8);
		return v;
	}
#endif
	while (bytes--)
		v = (v << 8) | p[bytes];
	return v;
}

static inline void rt_put_le(uint8_t *p, uint64_t v, unsigned int bytes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* The host's order: one store (ship's row encoder, a value or more a row). */
	uint32_t v32 = (uint32_t)v;
	uint16_t v16 = (uint16_t)v;

	switch (bytes) {
	case 2:
		memcpy(p, &v16, 2);
		return;
	case 4:
		memcpy(p, &v32, 4);
		return;
	case 8:
		memcpy(p, &v, 8);
		return;
	}
#endif
	for (unsigned int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

#endif
