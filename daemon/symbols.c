// SPDX-License-Identifier: GPL-2.0
/*
 * The trace's symbol store, filled when a drained recording stops
 * (lib/symfill.h): the binaries its user stacks ran in, so that report
 * names their frames on a machine that never had them, or after they are
 * gone from this one.
 *
 * It runs once every chunk is final (packer_stop()), over the trace
 * directory as any reader sees it: one walk learns each build-id the
 * user_mmap events name and the user frames in each.  A binary no stack
 * hit is not stored (a trace without user stacks keeps none: it has no
 * frame to name).  The others are copied from /proc/PID/map_files/ of
 * the latest process that mapped them, if it still lives (the very file
 * it mapped, even deleted or replaced since), else from their path,
 * each only if its build-id is the trace's, the most hit first, up to
 * --symbols-max; those left out are listed in .ringtrace-buildid/missing.
 *
 * Not done for --on-chunk (the chunks left in sets) nor for --trigger's
 * snapshots.  The walk decodes the whole trace once: its cost is a
 * report's, paid at the stop, and --no-symbols skips it.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "ringtraced.h"
#include "../lib/symfill.h"
#include "../lib/usyms.h"
#include "../tools/lib/rtdecode.h"

void symbols_at_stop(void)
{
	struct symfill *sf = symfill_new();
	struct symfill_result r;
	struct rt_trace *t = NULL;
	struct rt_error e;
	char why[256];

	if (!sf) {
		warn("symbols: not stored: out of memory");
		return;
	}
	if (rt_trace_open(outdir, &t, &e)) {
		warn("symbols: not stored: %s", e.msg);
		goto out;
	}
	/* What a damaged packet held is lost; the rest is read past it. */
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		rt_stream_set_tolerant(t->cpus[i].stream, true);
	if (symfill_scan(sf, t, why, sizeof(why))) {
		warn("symbols: not stored: %s", why);
		goto out;
	}
	if (symfill_store(sf, outdirfd, opt.symbols_max, "--symbols-max", 0, &r))
		warn("%s/" USYMS_DIR ": %s", outdir, strerror(-r.err));
	if (r.stored || r.had || r.missing)
		info("symbols: %u binar%s in %s/" USYMS_DIR " (%.1f MiB stored now), %u left out%s",
		     r.stored + r.had, r.stored + r.had == 1 ? "y" : "ies", outdir,
		     (double)r.bytes / (1 << 20), r.missing,
		     r.missing ? ": see " USYMS_DIR "/" USYMS_MISSING : "");
out:
	if (t)
		rt_trace_close(t);
	symfill_free(sf);
}
