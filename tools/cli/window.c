// SPDX-License-Identifier: GPL-2.0
/*
 * --begin/--end (window.h): times as report prints them, exactly, or
 * +DURATION from the first event; the window handed to the trace set,
 * which seeks with the chunks' time indexes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "window.h"

/* Clock cycles from a double: 0 below, UINT64_MAX past the clock's range. */
static uint64_t to_cycles(double c)
{
	if (!(c > 0))
		return 0;
	return c >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)c;
}

/*
 * Seconds as report prints them ("123.456789012") in clock cycles, exactly:
 * a double cannot hold every nanosecond of such a time (134.410262790 is
 * 134410262789.99998 ns), and --end would then leave out the very event
 * whose time was given.  Digits, at most one '.', at most 19 digits
 * before it and 18 after; the cycle nearest to the time.
 */
static bool parse_seconds(const char *s, uint64_t freq, unsigned __int128 *c)
{
	unsigned __int128 sec = 0, frac = 0, scale = 1;
	unsigned int nint = 0, nfrac = 0;

	for (; *s >= '0' && *s <= '9'; s++, nint++)
		sec = sec * 10 + (unsigned int)(*s - '0');
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, nfrac++) {
			frac = frac * 10 + (unsigned int)(*s - '0');
			scale *= 10;
		}
	if (*s || !(nint + nfrac) || nint > 19 || nfrac > 18)
		return false;
	*c = sec * freq + (frac * freq + scale / 2) / scale;
	return true;
}

/*
 * A time of --begin/--end: "+DURATION" from the trace's first event, or
 * seconds as report prints them ("123.456789"; with --wall, epoch seconds).
 */
static uint64_t parse_time(const char *s, const char *what,
			   const struct rt_metadata *md, uint64_t start,
			   bool wall)
{
	unsigned __int128 c;
	double secs, cycles;
	__int128 off;
	uint64_t ms;
	char *end;

	if (*s == '+') {
		if (!parse_duration_ms(s + 1, &ms))
			usage_error("%s: '%s' is not +DURATION (like +1.5s, +200ms)",
				    what, s);
		cycles = (double)ms / 1e3 * (double)md->clock_freq;
		return to_cycles(cycles) > UINT64_MAX - start ? UINT64_MAX :
		       start + to_cycles(cycles);
	}
	if (!parse_seconds(s, md->clock_freq, &c)) {
		/* Other forms strtod() takes (1e3), to the nearest cycle. */
		errno = 0;
		secs = strtod(s, &end);
		if (errno || end == s || *end || secs < 0)
			usage_error("%s: '%s' is neither +DURATION nor seconds",
				    what, s);
		cycles = secs * (double)md->clock_freq + 0.5;
		c = cycles >= 18446744073709551616.0 ? UINT64_MAX :
		    (unsigned __int128)to_cycles(cycles);
	}
	if (wall) {
		/* The clock's offset from the epoch (either sign), in cycles. */
		off = (__int128)md->clock_offset_s * (__int128)md->clock_freq +
		      md->clock_offset;
		if (off <= 0)
			c += (unsigned __int128)-off;
		else
			c = c > (unsigned __int128)off ? c - (unsigned __int128)off : 0;
	}
	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

bool window_from_start(const char *begin, const char *end)
{
	return (begin && *begin == '+') || (end && *end == '+');
}

void window_parse(struct window *w, const char *begin, const char *end,
		  const struct rt_metadata *md, uint64_t start, bool wall)
{
	memset(w, 0, sizeof(*w));
	if (begin) {
		w->has_begin = true;
		w->begin = parse_time(begin, "--begin", md, start, wall);
	}
	if (end) {
		w->has_end = true;
		w->end = parse_time(end, "--end", md, start, wall);
	}
	if (w->has_begin && w->has_end && w->end < w->begin)
		usage_error("--end is before --begin");
}

/*
 * RINGTRACE_SEEK=0: a window is found by reading the whole trace, not by
 * seeking with the time indexes (the tests and `make bench` compare both).
 */
static bool seek_allowed(void)
{
	const char *e = getenv("RINGTRACE_SEEK");

	return !e || strcmp(e, "0");
}

int window_apply(struct tset *ts, unsigned int member, const struct window *w)
{
	if (!w->has_begin && !w->has_end)
		return 0;
	return tset_window(ts, member, w->has_begin ? w->begin : 0,
			   w->has_end ? w->end : UINT64_MAX, seek_allowed());
}

int window_threads(struct tset *ts, unsigned int member, struct rt_threads *th)
{
	const struct rt_trace *t = ts->m[member].t;
	struct rt_error err;

	for (unsigned int i = 0; i < t->nr_cpus; i++) {
		if (rt_threads_learn_window(th, t->cpus[i].stream, &err)) {
			error_line("%s", err.msg);
			return -1;
		}
	}
	return 0;
}
