// SPDX-License-Identifier: GPL-2.0
/* Command-line values and small helpers of ringtraced and ringtrace. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

bool parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	case 'T':
		shift = 40;
		end++;
		break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

bool parse_uint(const char *s, unsigned int *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT_MAX)
		return false;
	*out = (unsigned int)v;
	return true;
}

bool parse_int(const char *s, int *out)
{
	long v;
	char *end;

	if (!*s)
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < INT_MIN || v > INT_MAX)
		return false;
	*out = (int)v;
	return true;
}

bool parse_duration_ms(const char *s, uint64_t *out)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1e3 }, { "", 1e3 }, { "m", 60e3 },
		{ "h", 3600e3 },
	};
	double v, ms;
	char *end;
	int i;

	if (!isdigit((unsigned char)*s) && *s != '.')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return false;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		ms = v * units[i].ms;
		/* A year is plenty; beyond that it is a typo. */
		if (ms > (double)DURATION_MAX_MS)
			return false;
		*out = (uint64_t)(ms + 0.5);
		return true;
	}
	return false;
}

int poll_timeout_ms(uint64_t ms)
{
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

bool parse_cpu_list(const char *list, void (*fn)(unsigned int cpu, void *arg),
		    void *arg)
{
	const char *p = list;
	unsigned long a, b;
	char *end;

	if (!*p)
		return false;
	for (;;) {
		if (!isdigit((unsigned char)*p))
			return false;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return false;
			b = strtoul(p, &end, 10);
		}
		if (a > b || b >= 1U << 20)
			return false;
		for (; fn && a <= b; a++)
			fn((unsigned int)a, arg);
		if (!*end)
			return true;
		if (*end != ',')
			return false;
		p = end + 1;
	}
}

int write_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf = (const char *)buf + w;
		len -= (size_t)w;
	}
	return 0;
}
