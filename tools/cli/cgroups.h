/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 names for record --cgroup and report --cgroup: a cgroup's id
 * is the inode number of its directory in the cgroup2 file system (what
 * ringtrace.ko's set_event_cgroup takes and the events' cgroup ids carry,
 * the kernel's cgroup_id()).  Paths are absolute, in a cgroup2 mount, or
 * relative to /sys/fs/cgroup.
 */
#ifndef RINGTRACE_CLI_CGROUPS_H
#define RINGTRACE_CLI_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

#define CGROUP_ROOT	"/sys/fs/cgroup"

struct cgroup_ids {
	uint64_t *id;
	size_t n;
};

/*
 * @arg's directory and id; -1 with one sentence in @why if it is no
 * cgroup v2 directory on this machine.  @path (PATH_MAX) gets the path.
 */
int cgroup_resolve(const char *arg, char *path, uint64_t *id, char *why,
		   size_t size);
/* Adds the ids of @path's cgroup and of every cgroup below it: 0 or -errno. */
int cgroup_ids_under(const char *path, struct cgroup_ids *ids);
int cgroup_ids_add(struct cgroup_ids *ids, uint64_t id);
int cgroup_ids_has(const struct cgroup_ids *ids, uint64_t id);
void cgroup_ids_free(struct cgroup_ids *ids);
/*
 * The path under /sys/fs/cgroup of the cgroup with @id on this machine
 * ("/" for the root, "/system.slice/foo.service"), or NULL: looked up in
 * one walk of the hierarchy, the first time.
 */
const char *cgroup_name(uint64_t id);

#endif /* RINGTRACE_CLI_CGROUPS_H */
