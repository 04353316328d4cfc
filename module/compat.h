/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Differences between the kernels ringtrace supports (6.1 .. 6.12), and
 * between kernel configurations, as static inline wrappers.  This is the
 * only place that tests versions (checkpatch's LINUX_VERSION_CODE
 * warnings here are the point of the file: an out-of-tree module has no
 * single version to be merged into).
 */
#ifndef _RINGTRACE_COMPAT_H
#define _RINGTRACE_COMPAT_H

#include <linux/cgroup.h>
#include <linux/device.h>
#include <linux/kmsg_dump.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/stringify.h>
#include <linux/uprobes.h>
#include <linux/version.h>
#ifdef CONFIG_X86
#include <asm/cacheflush.h>
#endif

/*
 * The kernels ringtrace.ko is known to build and run on: 6.1 to 6.12, the
 * test matrix.  Outside them the build stops here, unless Kbuild was
 * given RINGTRACE_ALLOW_UNTESTED=1: what changed after 6.12 is not
 * covered below, the preemptible system-call tracepoints of 6.13 first
 * (their probes run under Tasks Trace RCU; ours read their predicates
 * under RCU-sched: probes.h, rtr_task_traced()), nor what 6.1 lacks.
 * These four lines are the one statement of the range: debian/rules
 * makes DKMS's BUILD_EXCLUSIVE_KERNEL from them (debian/dkms-kernels),
 * so that DKMS skips other kernels instead of failing to build.
 */
#define RTR_OLDEST_VERSION	6
#define RTR_OLDEST_PATCHLEVEL	1
#define RTR_NEWEST_VERSION	6
#define RTR_NEWEST_PATCHLEVEL	12

#define RTR_UNTESTED_MSG(than, est, v, p)				\
	"ringtrace: Linux " __stringify(LINUX_VERSION_MAJOR) "."	\
	__stringify(LINUX_VERSION_PATCHLEVEL) " is " than " "		\
	__stringify(v) "." __stringify(p) ", the " est " kernel "	\
	"ringtrace.ko is known to build and run on; "			\
	"RINGTRACE_ALLOW_UNTESTED=1 builds it anyway, untested"

#if !RINGTRACE_ALLOW_UNTESTED
static_assert(LINUX_VERSION_CODE <
	      KERNEL_VERSION(RTR_NEWEST_VERSION, RTR_NEWEST_PATCHLEVEL + 1, 0),
	      RTR_UNTESTED_MSG("newer than", "newest", RTR_NEWEST_VERSION,
			       RTR_NEWEST_PATCHLEVEL));
static_assert(LINUX_VERSION_CODE >=
	      KERNEL_VERSION(RTR_OLDEST_VERSION, RTR_OLDEST_PATCHLEVEL, 0),
	      RTR_UNTESTED_MSG("older than", "oldest", RTR_OLDEST_VERSION,
			       RTR_OLDEST_PATCHLEVEL));
#endif

/* vm_flags became read-only behind vm_flags_{set,clear,mod}() in 6.3. */
static inline void rtr_vm_flags_mod(struct vm_area_struct *vma,
				   vm_flags_t set, vm_flags_t clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/*
 * struct class's devnode() takes a const struct device from 6.2.  A
 * typedef (checkpatch's NEW_TYPEDEFS warning) because the difference is in
 * a callback's prototype, which no inline wrapper can hide.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
typedef const struct device rtr_devnode_device;
#else
typedef struct device rtr_devnode_device;
#endif

/*
 * References to @mod, the loader's own during init included.  Without
 * CONFIG_MODULE_UNLOAD the kernel keeps no count: rtr_files_abort() then
 * cannot see a /dev open still in flight when a failed load frees the
 * module (every kernel ringtrace is tested on has the count).
 */
static inline int rtr_module_refs(struct module *mod)
{
#ifdef CONFIG_MODULE_UNLOAD
	return module_refcount(mod);
#else
	return 0;
#endif
}

/*
 * get_kretprobe() exists only with CONFIG_KRETPROBES (the debug kernel has
 * no kprobes at all); without it register_kretprobe() fails with
 * -EOPNOTSUPP, so no return handler ever runs.
 */
static inline struct kretprobe *
rtr_get_kretprobe(struct kretprobe_instance *ri)
{
#ifdef CONFIG_KRETPROBES
	return get_kretprobe(ri);
#else
	return NULL;
#endif
}

/*
 * The path and inode a mapped file shows its user, as /proc/PID/maps
 * prints them.  6.8 made overlayfs map its real file through a backing
 * file whose f_path is the real one: maps shows the overlay's path and
 * inode (file_user_path(), file_user_inode()).  6.1 maps the real file
 * itself, and maps shows its f_path and inode.
 */
static inline const struct path *rtr_file_user_path(const struct file *f)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	return file_user_path(f);
#else
	return &f->f_path;
#endif
}

static inline const struct inode *rtr_file_user_inode(const struct file *f)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
	return file_user_inode(f);
#else
	return file_inode(f);
#endif
}

/*
 * A registered uprobe consumer, and how to take it out again.  6.12
 * returns the struct uprobe from uprobe_register() and splits the
 * removal into uprobe_unregister_nosync(), which unlinks the consumer,
 * and uprobe_unregister_sync(), which waits for the handlers still
 * running -- once for any number of consumers unlinked before it: the
 * handlers run under rcu_read_lock_trace() (handler_chain()), and the
 * sync is synchronize_rcu_tasks_trace();
 * 6.1 takes inode and offset back and removes under the
 * uprobe's register_rwsem, which every handler call holds for read, so
 * its uprobe_unregister() returns once no handler of @uc runs either,
 * with no grace period: its sync is nothing.
 * Without CONFIG_UPROBES the probe is refused with -EOPNOTSUPP, as kprobes
 * are without CONFIG_KPROBES (uprobes.h's stubs say -ENOSYS).
 */
struct rtr_uprobe_ref {
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	struct uprobe *uprobe;
#else
	struct inode *inode;
	loff_t offset;
#endif
};

/*
 * @ref_ctr_offset, if not 0, is the file offset of a USDT semaphore (a
 * 16-bit counter) in the same file: the core raises it in every mm that
 * maps the probe, as it installs the breakpoint (also in mms that map
 * the file later), and lowers it again at unregistering.  A second
 * consumer of the same uprobe with another one is refused (-EINVAL and a
 * pr_warn, no splat).  6.1 calls that uprobe_register_refctr(), 6.12
 * gives every uprobe_register() the offset.
 */
static inline int rtr_uprobe_register(struct rtr_uprobe_ref *ref,
				      struct inode *inode, loff_t offset,
				      loff_t ref_ctr_offset,
				      struct uprobe_consumer *uc)
{
#ifndef CONFIG_UPROBES
	return -EOPNOTSUPP;
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	ref->uprobe = uprobe_register(inode, offset, ref_ctr_offset, uc);
	return PTR_ERR_OR_ZERO(ref->uprobe);
#else
	ref->inode = inode;
	ref->offset = offset;
	return uprobe_register_refctr(inode, offset, ref_ctr_offset, uc);
#endif
}

/* Unlinks @uc: no new handler call; rtr_uprobe_unregister_sync() next. */
static inline void rtr_uprobe_unregister_nosync(struct rtr_uprobe_ref *ref,
						struct uprobe_consumer *uc)
{
#ifndef CONFIG_UPROBES
	/* Never registered. */
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	uprobe_unregister_nosync(ref->uprobe, uc);
#else
	uprobe_unregister(ref->inode, ref->offset, uc);
#endif
}

/* Returns once no handler of a consumer unlinked before runs anywhere. */
static inline void rtr_uprobe_unregister_sync(void)
{
#if defined(CONFIG_UPROBES) && LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	uprobe_unregister_sync();
#endif
}

/*
 * The cgroup v2 (default hierarchy) cgroup of a task, as the cgroup
 * filter (cgroupfilter.c) and the events' cgroup ids see it.  6.1 and
 * 6.12 agree: task->cgroups under RCU (task_css_set_check() takes
 * preemption off as a read side, so do the probes), ancestors[] by level,
 * cgroup_get_from_id()/cgroup_get_from_path() returning an ERR_PTR and
 * exported.  (6.12 resolves both within the writer's cgroup namespace.)
 * A kernel without CONFIG_CGROUPS (the debug kernel) has no cgroup at
 * all: every id is 0 and the filter cannot be set.
 */
#ifdef CONFIG_CGROUPS
#define RTR_HAVE_CGROUPS	1

static inline u64 rtr_task_cgroup_id(const struct task_struct *t)
{
	return cgroup_id(task_dfl_cgroup((struct task_struct *)t));
}

/* @t is in @cg or below; with preemption off or under rcu_read_lock(). */
static inline bool rtr_task_under_cgroup(const struct task_struct *t,
					 struct cgroup *cg)
{
	return cgroup_is_descendant(task_dfl_cgroup((struct task_struct *)t),
				    cg);
}

static inline struct cgroup *rtr_cgroup_get_id(u64 id)
{
	return cgroup_get_from_id(id);
}

static inline struct cgroup *rtr_cgroup_get_path(const char *path)
{
	return cgroup_get_from_path(path);
}

static inline void rtr_cgroup_get(struct cgroup *cg)
{
	cgroup_get(cg);
}

static inline void rtr_cgroup_put(struct cgroup *cg)
{
	cgroup_put(cg);
}

static inline u64 rtr_cgroup_id(struct cgroup *cg)
{
	return cgroup_id(cg);
}
#else
#define RTR_HAVE_CGROUPS	0

static inline u64 rtr_task_cgroup_id(const struct task_struct *t)
{
	return 0;
}

static inline bool rtr_task_under_cgroup(const struct task_struct *t,
					 struct cgroup *cg)
{
	return false;
}

static inline struct cgroup *rtr_cgroup_get_id(u64 id)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline struct cgroup *rtr_cgroup_get_path(const char *path)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void rtr_cgroup_get(struct cgroup *cg)
{
}

static inline void rtr_cgroup_put(struct cgroup *cg)
{
}

static inline u64 rtr_cgroup_id(struct cgroup *cg)
{
	return 0;
}
#endif

/*
 * The reserve_mem=SIZE:ALIGN:NAME region called @name (6.11 added
 * reserve_mem= and reserve_mem_find_by_name()): 0 and its place, or
 * -ENOENT.  Older kernels have no such regions: -EOPNOTSUPP, and
 * persist.c says to use a memmap= range there.
 */
static inline int rtr_reserve_mem_find(const char *name, phys_addr_t *start,
				       phys_addr_t *size)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
	return reserve_mem_find_by_name(name, start, size) ? 0 : -ENOENT;
#else
	return -EOPNOTSUPP;
#endif
}

/*
 * The kmsg dumper's callback: the reason alone until 6.12, then a struct
 * kmsg_dump_detail that carries it (and the panic's description).  A
 * typedef for the second argument (checkpatch's NEW_TYPEDEFS warning): the
 * difference is in a callback's prototype, as for rtr_devnode_device.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
typedef struct kmsg_dump_detail *rtr_kmsg_dump_arg;

static inline enum kmsg_dump_reason rtr_kmsg_dump_reason(rtr_kmsg_dump_arg a)
{
	return a->reason;
}
#else
typedef enum kmsg_dump_reason rtr_kmsg_dump_arg;

static inline enum kmsg_dump_reason rtr_kmsg_dump_reason(rtr_kmsg_dump_arg a)
{
	return a;
}
#endif

/*
 * Write back (and drop) every cache line of [@addr, @addr + @size) to RAM,
 * from any CPU's cache of the coherence domain: x86's CLFLUSH, callable
 * with interrupts off and in NMI context.  Other architectures export no
 * such range operation to modules: there the crash path relies on the
 * reset keeping what the caches held (nothing ringtrace supports today).
 */
static inline void rtr_cache_writeback(void *addr, size_t size)
{
#ifdef CONFIG_X86
	/* clflush_cache_range() takes an unsigned int size. */
	while (size) {
		unsigned int n = min_t(size_t, size, SZ_1G);

		clflush_cache_range(addr, n);
		addr = (u8 *)addr + n;
		size -= n;
	}
#endif
}

#endif /* _RINGTRACE_COMPAT_H */
