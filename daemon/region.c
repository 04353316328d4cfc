// SPDX-License-Identifier: GPL-2.0
/*
 * The module's persistent region (Documentation/ringtrace/design.rst,
 * "The persistent region"): when ringtrace.ko keeps its rings in one, the
 * image must also say what the kernel cannot know of itself, so that the
 * next boot reads it without this machine.  At the start of a recording,
 * after the metadata was copied (the module keeps the text a consumer
 * read as the image's):
 *
 *   persist/identity   "boot_id=UUID build_id=HEX": the boot id
 *                      (/proc/sys/kernel/random/boot_id) and the running
 *                      kernel's GNU build id (/sys/kernel/notes)
 *   persist/ksyms      .ringtrace-ksyms.zst, byte for byte the file the
 *                      trace directory gets when stacks are on
 *
 * Without a live region (no persist/, or a kept image waiting for
 * `ringtrace recover`) there is nothing to do.  A failure is a warning:
 * the recording goes on, the image says less.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringtraced.h"

#define NT_GNU_BUILD_ID	3
#define BUILD_ID_MAX	20

bool region_live(const struct ctl *c)
{
	char *info = ctl_read_alloc(c, "persist/info");
	bool live = info && !strncmp(info, "state live\n", 11);

	free(info);
	return live;
}

/* The GNU build id note among the kernel's notes: its length, or -errno. */
static int kernel_build_id(uint8_t *id, size_t size)
{
	uint8_t notes[4096];
	uint32_t namesz, descsz, type;
	size_t off = 0, len = 0;
	ssize_t n;
	int fd;

	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < sizeof(notes) &&
	       (n = read(fd, notes + len, sizeof(notes) - len)) > 0)
		len += (size_t)n;
	close(fd);
	/* Elf_Nhdr, then the name and the descriptor, each 4-aligned. */
	while (off + 12 <= len) {
		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		off += 12;
		if (namesz > len - off ||
		    ((namesz + 3) & ~3U) + (size_t)descsz > len - off)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(notes + off, "GNU", 4) && descsz &&
		    descsz <= size) {
			memcpy(id, notes + off + 4, descsz);
			return (int)descsz;
		}
		off += ((namesz + 3) & ~3U) + ((descsz + 3) & ~3U);
	}
	return -ENOENT;
}

/* This boot's id, the text of /proc/sys/kernel/random/boot_id. */
static int boot_id_read(char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* One write(2) of @len bytes: the module takes a control write whole. */
static int write_file(const struct ctl *c, const char *name, const void *p,
		      size_t len)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, p, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

int region_identity(const struct ctl *c)
{
	char boot_id[64], text[160];
	uint8_t id[BUILD_ID_MAX];
	int len, i, err;
	size_t off;

	len = kernel_build_id(id, sizeof(id));
	if (len < 0)
		return len;
	err = boot_id_read(boot_id, sizeof(boot_id));
	if (err)
		return err;
	off = (size_t)snprintf(text, sizeof(text), "boot_id=%s build_id=",
			       boot_id);
	for (i = 0; i < len && off + 3 <= sizeof(text); i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"%02x", id[i]);
	return write_file(c, "persist/identity", text, off);
}

int region_ksyms(const struct ctl *c, const void *z, size_t len)
{
	return write_file(c, "persist/ksyms", z, len);
}
