/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the files of tools/lib; not part of the API. */
#ifndef RTDECODE_INTERNAL_H
#define RTDECODE_INTERNAL_H

#include <stdarg.h>
#include "rtdecode.h"

/* Formats the message into @err (if any) and returns -1. */
int rt_fail(struct rt_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

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

#endif /* RTDECODE_INTERNAL_H */
