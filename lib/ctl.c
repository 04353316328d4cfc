// SPDX-License-Identifier: GPL-2.0
/* The running tracer's control files (ctl.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "parse.h"

#define DEBUGFS_MAGIC	0x64626720

static bool is_debugfs(const char *path)
{
	struct statfs sfs;

	return !statfs(path, &sfs) && (unsigned long)sfs.f_type == DEBUGFS_MAGIC;
}

/* 0 if @dir's tracing_on opens for reading, else -errno. */
static int probe_dir(const char *dir)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int ctl_find(struct ctl *c, const char *debugfs, char *why, size_t size)
{
	const char *root = debugfs ? debugfs : CTL_DEBUGFS;
	int err, dev_err;

	snprintf(c->dir, sizeof(c->dir), "%s/ringtrace", root);
	c->dev = false;
	/* A given directory is taken as it is (a copy of the tree, say). */
	err = debugfs || is_debugfs(root) ? probe_dir(c->dir) : -ENOENT;
	if (!err || debugfs) {
		if (err == -ENOENT && !is_debugfs(root))
			snprintf(why, size, "%s: debugfs is not mounted there (mount -t debugfs none %s)",
				 root, root);
		else if (err)
			snprintf(why, size, "%s: %s%s", c->dir, strerror(-err),
				 err == -ENOENT ? " (is ringtrace.ko loaded, and debugfs mounted there?)" :
				 err == -EACCES ? " (ringtrace needs root)" :
				 err == -EPERM ? " (debugfs refuses it under kernel lockdown: use /dev/ringtrace)" : "");
		return err;
	}
	dev_err = probe_dir(CTL_DEV);
	if (!dev_err) {
		snprintf(c->dir, sizeof(c->dir), "%s", CTL_DEV);
		c->dev = true;
		return 0;
	}
	if (dev_err == -EACCES || err == -EACCES)
		snprintf(why, size, "ringtrace's control files need root");
	else if (dev_err == -EPERM)
		snprintf(why, size, "%s: %s (kernel lockdown refuses tracing: see /sys/kernel/security/lockdown)",
			 CTL_DEV, strerror(-dev_err));
	else if (err == -EPERM)
		snprintf(why, size, "%s: %s (debugfs refuses it under kernel lockdown) and %s is missing: load a ringtrace.ko that provides it",
			 c->dir, strerror(-err), CTL_DEV);
	else if (!ctl_module_loaded())
		snprintf(why, size, "ringtrace.ko is not loaded (no %s, no %s)",
			 c->dir, CTL_DEV);
	else
		snprintf(why, size, "%s: %s, and debugfs is not mounted on %s (mount -t debugfs none %s)",
			 CTL_DEV, strerror(-dev_err), CTL_DEBUGFS, CTL_DEBUGFS);
	return dev_err;
}

int ctl_read(const struct ctl *c, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	size_t len = 0;
	int fd;

	if (!size)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len + 1 < size &&
	       (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		len += (size_t)n;
	}
	close(fd);
	while (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return (int)len;
}

char *ctl_read_alloc(const struct ctl *c, const char *name)
{
	char path[PATH_MAX + 64], *buf = NULL, *bigger;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 16384;
			bigger = realloc(buf, cap);
			if (!bigger)
				goto fail;
			buf = bigger;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
fail:
	n = errno;
	free(buf);
	close(fd);
	errno = (int)n;
	return NULL;
}

int ctl_write(const struct ctl *c, const char *name, const char *value)
{
	char path[PATH_MAX + 64];
	size_t len = strlen(value);
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* One write: the module takes a value whole or not at all. */
	n = write(fd, value, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

bool ctl_module_loaded(void)
{
	return !access("/sys/module/ringtrace", F_OK);
}

bool ctl_debugfs_mounted(void)
{
	return is_debugfs(CTL_DEBUGFS);
}

int ctl_mount_debugfs(void)
{
	if (ctl_debugfs_mounted())
		return 0;
	return mount("debugfs", CTL_DEBUGFS, "debugfs", 0, NULL) ? -errno : 0;
}

/* Run modprobe quietly: true if it loaded the module. */
static bool modprobe(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (!pid) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execlp("modprobe", "modprobe", "-q", "ringtrace", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && !WEXITSTATUS(status) && ctl_module_loaded();
}

int ctl_load_module(char *what, size_t size)
{
	const char *build = getenv("BUILD"), *cache = getenv("RT_CACHE");
	char path[PATH_MAX];
	struct utsname u;
	int fd, err;

	if (ctl_module_loaded()) {
		snprintf(what, size, "ringtrace.ko was already loaded");
		return 0;
	}
	if (modprobe()) {
		snprintf(what, size, "loaded the installed ringtrace.ko (modprobe)");
		return 0;
	}
	if (uname(&u))
		return -errno;
	if (build && *build)
		snprintf(path, sizeof(path), "%s/%s/ringtrace.ko", build, u.release);
	else
		snprintf(path, sizeof(path), "%s/build/%s/ringtrace.ko",
			 cache && *cache ? cache : "/var/cache/ringtrace",
			 u.release);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(what, size, "no ringtrace.ko for kernel %s: not installed (modprobe ringtrace failed) and not built (%s: %s); install ringtrace-dkms or run make",
			 u.release, path, strerror(-err));
		return err;
	}
	err = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	if (err)
		snprintf(what, size, "%s: cannot load: %s%s", path,
			 strerror(-err),
			 err == -EPERM ? " (root? or the kernel refuses unsigned modules)" :
			 err == -ENOEXEC || err == -EINVAL ?
			 " (built for another kernel?)" : "");
	else
		snprintf(what, size, "loaded %s", path);
	return err;
}

int ctl_unload_module(void)
{
	return syscall(SYS_delete_module, "ringtrace", O_NONBLOCK) ? -errno : 0;
}
