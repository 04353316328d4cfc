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
 * "10m"); a bare number is seconds.  In milliseconds, at most
 * DURATION_MAX_MS: a longer one is refused (false), as a typo.
 */
#define DURATION_MAX_MS		(365ULL * 24 * 3600 * 1000)
bool parse_duration_ms(const char *s, uint64_t *out);
/*
 * The timeout for poll() or epoll_wait() of a wait that ends in @ms
 * milliseconds: at most INT_MAX (24.8 days).  A parsed duration may be
 * longer, and a plain (int) cast would make it negative, which those
 * calls take as "wait forever".  A caller whose deadline is further away
 * than that is woken early, finds it not reached and waits again.
 */
int poll_timeout_ms(uint64_t ms);
/*
 * "0-3,8": calls @fn(cpu, @arg) for every CPU in it; false on a syntax
 * error.  With @fn NULL only the syntax is checked.
 */
bool parse_cpu_list(const char *list, void (*fn)(unsigned int cpu, void *arg),
		    void *arg);

/* write(2) until done: 0, or -errno. */
int write_all(int fd, const void *buf, size_t len);

#endif /* RINGTRACE_LIB_PARSE_H */
