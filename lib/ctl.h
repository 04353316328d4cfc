/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The running tracer's control files, for ringtraced and ringtrace: where
 * they are (debugfs, or /dev/ringtrace where Secure Boot's lockdown makes
 * debugfs refuse them), reading and writing them, and what `ringtrace
 * record` does to get there (mount debugfs, load ringtrace.ko).  Every
 * function returns 0 or a length, or -errno; none of them exits.
 */
#ifndef RINGTRACE_LIB_CTL_H
#define RINGTRACE_LIB_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define CTL_DEBUGFS	"/sys/kernel/debug"
#define CTL_DEV		"/dev/ringtrace"

struct ctl {
	char dir[PATH_MAX];		/* .../ringtrace, no trailing slash */
	bool dev;			/* the /dev/ringtrace tree */
};

/*
 * Where ringtrace's files are: <@debugfs>/ringtrace when @debugfs is given
 * (no fallback), else /sys/kernel/debug/ringtrace when debugfs is mounted
 * and opens its files, else /dev/ringtrace.  On failure @why says what is
 * wrong and what to do, in one sentence.
 */
int ctl_find(struct ctl *c, const char *debugfs, char *why, size_t size);

/* A control file's text without its trailing newlines: its length. */
int ctl_read(const struct ctl *c, const char *name, char *buf, size_t size);
/* The same for files of any size; NULL with errno set on failure. */
char *ctl_read_alloc(const struct ctl *c, const char *name);
/* One write(2) of @value, as `echo -n` would: the module's all or nothing. */
int ctl_write(const struct ctl *c, const char *name, const char *value);

bool ctl_module_loaded(void);
bool ctl_debugfs_mounted(void);
int ctl_mount_debugfs(void);
/*
 * Load ringtrace.ko: the installed module (modprobe), else the one `make`
 * built for the running kernel ($BUILD, else $RT_CACHE/build, else
 * /var/cache/ringtrace/build, then <release>/ringtrace.ko).  @what says
 * which one was loaded, or why none could be.
 */
int ctl_load_module(char *what, size_t size);
int ctl_unload_module(void);

#endif /* RINGTRACE_LIB_CTL_H */
