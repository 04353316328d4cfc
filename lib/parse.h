/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Parsers of command-line values shared by ringtraced and ringtrace, and
 * small helpers both need.  Every parser returns false on anything but a
 * whole, valid value, and then leaves *out alone.
 */
#ifndef RINGTRACE_LIB_PARSE_H
#define RINGTRACE_LIB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a)	((int)(sizeof(a) / sizeof((a)[0])))

/* Unsigned decimal with an optional K/M/G suffix (powers of 1024). */
bool parse_size(const char *s, uint64_t *out);
bool parse_uint(const char *s, unsigned int *out);
bool parse_int(const char *s, int *out);
/*
 * A duration: a number with a unit, ms, s, m or h ("1.5s", "200ms",
 * "10m"); a bare number is seconds.  In milliseconds.
 */
bool parse_duration_ms(const char *s, uint64_t *out);
/*
 * "0-3,8": calls @fn(cpu, @arg) for every CPU in it; false on a syntax
 * error.  With @fn NULL only the syntax is checked.
 */
bool parse_cpu_list(const char *list, void (*fn)(unsigned int cpu, void *arg),
		    void *arg);

/* write(2) until done: 0, or -errno. */
int write_all(int fd, const void *buf, size_t len);

#endif /* RINGTRACE_LIB_PARSE_H */
