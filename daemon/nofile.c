// SPDX-License-Identifier: GPL-2.0
/*
 * Open files.  ringtraced holds a few per CPU, and RLIMIT_NOFILE's soft
 * limit (1024 under systemd and in most shells) is far below what a large
 * machine needs, while the hard one (systemd: 524288) is not: the soft
 * limit is raised to it at start, and what is needed is checked before any
 * CPU is opened, so that a machine too large for the limit is told so
 * instead of failing half way.
 *
 *   per CPU:     its buffer file, its request eventfd, its current chunk,
 *                and that chunk's dup() during a sync round
 *   per packer:  the chunk it reads and the file it writes
 *   fixed:       stdin/out/err, the signalfd, timerfd, eventfd and epoll
 *                fd, the trace directory; and what is open for a moment,
 *                possibly all at once: a control file, the module's
 *                metadata and the trace's metadata.new, the file the
 *                syncer opens by name, --max-total's walk (the root, a
 *                trace, and a directory stream of each), sd_notify's
 *                socket, the C library's own (the time zone file)
 *
 * What is left over is the budget of closed chunks' fds that the syncer
 * may hold until its next round (syncer.c); beyond it, it opens them by
 * name when it syncs them.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>

#include "ringtraced.h"

#define NOFILE_FIXED		24
#define NOFILE_PER_CPU		4
#define NOFILE_PER_PACKER	2
/* The kernel's default fs.nr_open: what an "unlimited" hard limit allows. */
#define NOFILE_NR_OPEN		(1U << 20)

void nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? NOFILE_NR_OPEN :
		      rl.rlim_max;
	/* Never refused up to the hard limit; the check below tells. */
	setrlimit(RLIMIT_NOFILE, &rl);
}

unsigned int nofile_budget(unsigned int ncpus)
{
	unsigned int packers = opt.level == RT_LEVEL_STORE ? 0 : opt.workers;
	unsigned long long need, have;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	need = NOFILE_FIXED + (unsigned long long)NOFILE_PER_CPU * ncpus +
	       NOFILE_PER_PACKER * packers;
	have = rl.rlim_cur;
	if (have < need)
		die("%u CPU%s and %u compression thread%s need %llu open files; RLIMIT_NOFILE allows %llu (hard limit %llu): raise it (ulimit -n, or LimitNOFILE= in the unit)",
		    ncpus, ncpus == 1 ? "" : "s", packers,
		    packers == 1 ? "" : "s", need, have,
		    rl.rlim_max == RLIM_INFINITY ?
		    (unsigned long long)NOFILE_NR_OPEN :
		    (unsigned long long)rl.rlim_max);
	return have - need > UINT_MAX ? UINT_MAX : (unsigned int)(have - need);
}
