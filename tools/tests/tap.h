/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The checks of the host test programs (rt-ctlsave, rt-recsig, rt-usdt):
 * one "ok - ..." / "not ok - ..." line each, counted for the program's
 * last line, "NAME: N passed, M failed" (tools/tests/check.sh reads the
 * same lines from the shell suites).
 */
#ifndef RINGTRACE_TESTS_TAP_H
#define RINGTRACE_TESTS_TAP_H

#include <stdbool.h>
#include <stdio.h>

static unsigned int passed, failed;

static inline void check(const char *what, bool ok)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (ok)
		passed++;
	else
		failed++;
}

#endif /* RINGTRACE_TESTS_TAP_H */
