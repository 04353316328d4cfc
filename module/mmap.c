// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: user_mmap, the executable mappings of traced processes, each
 * with its file's GNU build-id, so that a reader can name user addresses
 * (user stacks, samples) from the very binary that ran.
 *
 *   /sys/kernel/debug/ringtrace/   (and the same under /dev/ringtrace/)
 *     mmap_dump     1: each start of tracing writes the executable
 *                   mappings of every process the pid filter keeps, flagged
 *                   DUMP (statedump.c)
 *     mmap_events   1: mappings made while tracing are written too, from a
 *                   kprobe on perf_event_mmap (-EOPNOTSUPP on a kernel
 *                   without kprobes: there, the dump's alone)
 *     mmap_stats    the counters below, "name value" per line
 *
 * One event per file-backed VM_EXEC mapping, and one for [vdso] (no file:
 * pgoff 0, path "[vdso]", no build-id), through the pid filter.
 *
 * Later mappings.  perf_event_mmap(vma) is the kernel's own hook for a new
 * mapping -- mmap_region() calls it with the VMA set up, so does the
 * install of a special mapping ([vdso]) -- and there is no tracepoint
 * there.  Its kprobe handler runs with preemption off and mmap_lock held
 * for write: it may not sleep, nor read the file, nor even d_path() (on
 * PREEMPT_RT, d_path()'s read of rename_lock may take a sleeping lock).
 * So the handler takes an entry of a preallocated pool (a free list under
 * a raw spinlock: no allocation, RT-safe), a reference to the file and one
 * to the module, and queues the entry as a task_work (TWA_RESUME) of the
 * mapping task.  The callback runs in that task before it returns to user
 * space -- before any instruction of the new mapping runs -- or from
 * exit_task_work() if it dies first; sleepable either way.  It resolves
 * the path, reads the build-id, writes the event, and drops the entry and
 * its references.  The event's time is the callback's, a little after
 * the mmap()'s.  With no entry free (RTR_MMAP_POOL in flight), or a task
 * past exit_task_work(), the handler writes the event at once with
 * NO_PATH|NO_BUILD_ID (dev and ino still name the file) and counts it.
 *
 * A process may be both in the dump and mapping as tracing starts: its
 * mapping may then be written twice, once with DUMP.
 *
 * Build-ids (elfnote.h parses): up to RTR_ELF_HEAD_MAX + RTR_ELF_NOTES_MAX
 * bytes of the file read from its page cache (rtr_bid_read()), regular
 * files only, and kept in a small cache keyed by the inode's identity and
 * ctime, so that libc is read once, not once per process.
 *
 * Unload [M1].  Each entry in flight holds a module reference: the module
 * cannot begin to unload while a callback is pending.  The callback's
 * last act is module_put(); the instructions after it (its return into
 * task_work_run()) are waited for by rtr_mmap_exit()'s
 * synchronize_rcu_tasks(), which returns once every task has been in user
 * space or switched out voluntarily since -- neither of which a task does
 * inside the callback.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/highmem.h>
#include <linux/kdev_t.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/path.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/task_work.h>

#include "compat.h"
#include "elfnote.h"
#include "internal.h"
#include "mmap.h"
#include "probes.h"

#define RTR_USER_MMAP_FIELDS						\
	"int32_t pid; uint32_t flags; "					\
	"integer { size = 64; align = 8; signed = false; base = 16; } start; " \
	"integer { size = 64; align = 8; signed = false; base = 16; } end; " \
	"integer { size = 64; align = 8; signed = false; base = 16; } pgoff; " \
	"uint64_t dev; uint64_t ino; uint8_t build_id_len; "		\
	"integer { size = 8; align = 8; signed = false; base = 16; } build_id[build_id_len]; " \
	"uint16_t path_len; utf8_t path[path_len];"

struct ringtrace_event rtr_mmap_event = {
	.name = "user_mmap",
	.fields = RTR_USER_MMAP_FIELDS,
};

/* The largest event: fixed part, build-id, path_len, path. */
#define RTR_MMAP_EVENT_MAX						\
	(sizeof(struct rtr_user_mmap) + RTR_BUILD_ID_MAX + sizeof(u16) + \
	 RTR_MMAP_PATH_MAX)

/* Entries in flight at most: a process's exec maps ~5, ld.so ~2 per library. */
#define RTR_MMAP_POOL		512

/* --- counters ------------------------------------------------------------ */

/*
 * One list makes the enum and the names mmap_stats prints (checkpatch's
 * COMPLEX_MACRO on the two element macros below: each expands to a list
 * item, which parentheses would break).
 */
#define RTR_MMAP_STATS(X)						\
	X(dump)			/* events the state dump wrote */	\
	X(mapped)		/* events of mappings made while tracing */ \
	X(no_path)		/* of those, no path nor build-id: no entry, no task_work, no memory */ \
	X(no_build_id)		/* written without a build-id */	\
	X(lost)			/* refused by the buffer (full, tracing off) */

#define RTR_MMAP_STAT_ENUM(name)	RTR_MMAP_ST_##name,
enum { RTR_MMAP_STATS(RTR_MMAP_STAT_ENUM) RTR_MMAP_NR_STATS };
#define RTR_MMAP_STAT_NAME(name)	#name,
static const char *const rtr_mmap_stat_names[] = {
	RTR_MMAP_STATS(RTR_MMAP_STAT_NAME)
};
static_assert(ARRAY_SIZE(rtr_mmap_stat_names) == RTR_MMAP_NR_STATS);

static atomic_long_t rtr_mmap_stats[RTR_MMAP_NR_STATS];
/* Pool entries taken and not yet given back. */
static atomic_t rtr_mmap_in_flight;

static void rtr_mmap_count(unsigned int which)
{
	atomic_long_inc(&rtr_mmap_stats[which]);
}

/*
 * Fault injection for the selftests: with inject_mmap_pool_empty=1 the
 * kprobe handler finds the pool empty, as RTR_MMAP_POOL mappings in flight
 * would leave it.
 */
static unsigned int rtr_inject_mmap_pool_empty;
module_param_named(inject_mmap_pool_empty, rtr_inject_mmap_pool_empty, uint,
		   0600);
MODULE_PARM_DESC(inject_mmap_pool_empty,
		 "test only: 1 = user_mmap's pool is always empty (events written without path)");

/* --- the build-id cache -------------------------------------------------- */

/* An inode as it was when read: a file rewritten in place has a new ctime. */
struct rtr_bid_key {
	dev_t dev;
	u32 gen;
	unsigned long ino;
	s64 ctime_sec;
	long ctime_nsec;
};

struct rtr_bid_slot {
	struct rtr_bid_key key;
	bool valid;
	u8 len;				/* 0: the file has none */
	u8 id[RTR_BUILD_ID_MAX];
};

#define RTR_BID_CACHE_BITS	8
static struct rtr_bid_slot rtr_bid_cache[1 << RTR_BID_CACHE_BITS];
static DEFINE_SPINLOCK(rtr_bid_lock);

static void rtr_bid_key(struct rtr_bid_key *k, struct inode *inode)
{
	struct timespec64 ct = inode_get_ctime(inode);

	memset(k, 0, sizeof(*k));
	k->dev = inode->i_sb->s_dev;
	k->gen = inode->i_generation;
	k->ino = inode->i_ino;
	k->ctime_sec = ct.tv_sec;
	k->ctime_nsec = ct.tv_nsec;
}

static struct rtr_bid_slot *rtr_bid_slot(const struct rtr_bid_key *k)
{
	return &rtr_bid_cache[hash_64((u64)k->ino ^ ((u64)k->dev << 32) ^
				      k->gen, RTR_BID_CACHE_BITS)];
}

/* The cached build-id of @k into @id: its length, or -ENOENT if not cached. */
static int rtr_bid_lookup(const struct rtr_bid_key *k, u8 *id)
{
	struct rtr_bid_slot *s = rtr_bid_slot(k);
	int ret = -ENOENT;

	spin_lock(&rtr_bid_lock);
	if (s->valid && !memcmp(&s->key, k, sizeof(*k))) {
		memcpy(id, s->id, s->len);
		ret = s->len;
	}
	spin_unlock(&rtr_bid_lock);
	return ret;
}

static void rtr_bid_store(const struct rtr_bid_key *k, const u8 *id,
			  unsigned int len)
{
	struct rtr_bid_slot *s = rtr_bid_slot(k);

	spin_lock(&rtr_bid_lock);
	s->key = *k;
	s->len = len;
	memcpy(s->id, id, len);
	s->valid = true;
	spin_unlock(&rtr_bid_lock);
}

/* --- the event ----------------------------------------------------------- */

struct rtr_mmap_scratch {
	char path[PATH_MAX];
	u8 head[RTR_ELF_HEAD_MAX];
	u8 notes[RTR_ELF_NOTES_MAX];
	u8 event[RTR_MMAP_EVENT_MAX];
};

struct rtr_mmap_scratch *rtr_mmap_scratch_alloc(void)
{
	return kvmalloc(sizeof(struct rtr_mmap_scratch), GFP_KERNEL);
}

void rtr_mmap_scratch_free(struct rtr_mmap_scratch *s)
{
	kvfree(s);
}

/*
 * Page @index of @file, uptodate and referenced, or an ERR_PTR.  A file
 * system that reads its pages in (->read_folio) is asked to; one without
 * it (tmpfs: its pages are in the page cache or in swap) gives only a
 * page already there, and a swapped-out one is -EIO, as a read error is.
 */
static struct page *rtr_bid_page(struct file *file, pgoff_t index)
{
	struct address_space *mapping = file->f_mapping;
	struct page *page;

	if (mapping->a_ops->read_folio)
		return read_cache_page(mapping, index, NULL, file);
	page = find_get_page(mapping, index);
	if (!page)
		return ERR_PTR(-EIO);
	if (!PageUptodate(page)) {
		put_page(page);
		return ERR_PTR(-EIO);
	}
	return page;
}

/*
 * @len bytes of @file at @off, from the page cache (rtr_bid_page()):
 * 0, or -EIO.  Not kernel_read(), whose permission hooks would have a
 * fanotify permission listener that maps a file wait for itself, and
 * which would update the file's atime and send inotify's IN_ACCESS: the
 * tracer reads what the kernel already mapped, unseen.  The caller keeps
 * @off + @len within i_size; a file truncated meanwhile reads zeroes or
 * fails, and a damaged ELF file is the parser's to refuse.
 */
static int rtr_bid_read(void *ctx, u8 *buf, u64 off, u64 len)
{
	unsigned int in, n;
	struct page *page;
	void *p;

	while (len) {
		page = rtr_bid_page(ctx, off >> PAGE_SHIFT);
		if (IS_ERR(page))
			return -EIO;
		in = offset_in_page(off);
		n = min_t(u64, len, PAGE_SIZE - in);
		p = kmap_local_page(page);
		memcpy(buf, p + in, n);
		kunmap_local(p);
		put_page(page);
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* @file's build-id into @id: its length, 0 if none (or unreadable). */
static int rtr_build_id(struct rtr_mmap_scratch *s, struct file *file, u8 *id)
{
	struct inode *inode = file_inode(file);
	struct rtr_bid_key key;
	loff_t size;
	u64 head;
	int ret;

	/* A regular file (not a device's, whose read could have effects), not DAX. */
	if (!S_ISREG(inode->i_mode) || IS_DAX(inode))
		return 0;
	rtr_bid_key(&key, inode);
	ret = rtr_bid_lookup(&key, id);
	if (ret >= 0)
		return ret;
	size = i_size_read(inode);
	head = min_t(loff_t, size, RTR_ELF_HEAD_MAX);
	if (rtr_bid_read(file, s->head, 0, head))
		return 0;		/* not cached: it may read next time */
	ret = rtr_elf_build_id(s->head, head, size, rtr_bid_read, file,
			       s->notes, id);
	if (ret == -EIO)
		return 0;		/* a note unread: not cached either */
	if (ret < 0)
		ret = 0;
	rtr_bid_store(&key, id, ret);
	return ret;
}

static bool rtr_vma_is_vdso(struct vm_area_struct *vma)
{
	const char *name;

	if (vma->vm_file || !vma->vm_ops || !vma->vm_ops->name)
		return false;
	/* A special mapping's name is its struct vm_special_mapping's. */
	name = vma->vm_ops->name(vma);
	return name && !strcmp(name, "[vdso]");
}

bool rtr_mmap_wanted(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_EXEC) &&
	       (vma->vm_file || rtr_vma_is_vdso(vma));
}

void rtr_mmap_head(struct rtr_user_mmap *h, pid_t pid,
		   const struct vm_area_struct *vma, u32 flags)
{
	const struct inode *inode = vma->vm_file ?
				    rtr_file_user_inode(vma->vm_file) : NULL;

	h->pid = pid;
	h->flags = flags;
	h->start = vma->vm_start;
	h->end = vma->vm_end;
	h->pgoff = inode ? (u64)vma->vm_pgoff << PAGE_SHIFT : 0;
	h->dev = inode ? new_encode_dev(inode->i_sb->s_dev) : 0;
	h->ino = inode ? inode->i_ino : 0;
	h->build_id_len = 0;
}

/* Any context: @h without build-id, as [vdso] or with no path. */
static void rtr_mmap_write_now(struct rtr_user_mmap *h, bool vdso)
{
	static const char vdso_name[] = "[vdso]";
	struct {
		struct rtr_user_mmap h;
		u16 path_len;
		char path[sizeof(vdso_name) - 1];
	} __packed e;
	unsigned int len = vdso ? sizeof(e.path) : 0;

	e.h = *h;
	e.h.build_id_len = 0;
	e.h.flags |= RTR_MMAP_NO_BUILD_ID | (vdso ? 0 : RTR_MMAP_NO_PATH);
	e.path_len = len;
	memcpy(e.path, vdso_name, sizeof(e.path));
	rtr_mmap_count(RTR_MMAP_ST_no_build_id);
	if (!ringtrace_write(rtr_mmap_event.id, &e,
			     offsetof(typeof(e), path) + len))
		rtr_mmap_count(RTR_MMAP_ST_lost);
	else
		rtr_mmap_count(RTR_MMAP_ST_mapped);
}

void rtr_mmap_emit(struct rtr_mmap_scratch *s, struct rtr_user_mmap *h,
		   struct file *file)
{
	u8 *p = s->event + sizeof(*h);
	const char *path = "[vdso]";
	unsigned int len;
	u16 path_len;
	int n = 0;

	if (file) {
		n = rtr_build_id(s, file, p);
		path = d_path(rtr_file_user_path(file), s->path,
			      sizeof(s->path));
	}
	h->build_id_len = n;
	if (!n) {
		h->flags |= RTR_MMAP_NO_BUILD_ID;
		rtr_mmap_count(RTR_MMAP_ST_no_build_id);
	}
	p += n;
	if (IS_ERR(path)) {
		h->flags |= RTR_MMAP_NO_PATH;
		len = 0;
	} else {
		len = strlen(path);
		if (len > RTR_MMAP_PATH_MAX) {
			h->flags |= RTR_MMAP_PATH_CUT;
			len = RTR_MMAP_PATH_MAX;
		}
	}
	path_len = len;
	memcpy(p, &path_len, sizeof(path_len));
	memcpy(p + sizeof(path_len), path, len);
	memcpy(s->event, h, sizeof(*h));
	if (!ringtrace_write(rtr_mmap_event.id, s->event,
			     p + sizeof(path_len) + len - s->event))
		rtr_mmap_count(RTR_MMAP_ST_lost);
	else
		rtr_mmap_count(h->flags & RTR_MMAP_DUMP ? RTR_MMAP_ST_dump :
				RTR_MMAP_ST_mapped);
}

/* --- later mappings: kprobe, pool, task_work ------------------------------ */

struct rtr_mmap_work {
	struct callback_head cb;	/* queued; on the free list, its link */
	struct file *file;		/* a reference */
	struct rtr_user_mmap h;
};

static struct rtr_mmap_work rtr_mmap_pool[RTR_MMAP_POOL];
static struct callback_head *rtr_mmap_free;
static DEFINE_RAW_SPINLOCK(rtr_mmap_pool_lock);

static struct rtr_mmap_work *rtr_mmap_get(void)
{
	struct callback_head *cb;
	unsigned long flags;

	if (READ_ONCE(rtr_inject_mmap_pool_empty))
		return NULL;
	raw_spin_lock_irqsave(&rtr_mmap_pool_lock, flags);
	cb = rtr_mmap_free;
	if (cb)
		rtr_mmap_free = cb->next;
	raw_spin_unlock_irqrestore(&rtr_mmap_pool_lock, flags);
	if (!cb)
		return NULL;
	atomic_inc(&rtr_mmap_in_flight);
	return container_of(cb, struct rtr_mmap_work, cb);
}

static void rtr_mmap_put(struct rtr_mmap_work *w)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&rtr_mmap_pool_lock, flags);
	w->cb.next = rtr_mmap_free;
	rtr_mmap_free = &w->cb;
	raw_spin_unlock_irqrestore(&rtr_mmap_pool_lock, flags);
	atomic_dec(&rtr_mmap_in_flight);
}

static void rtr_mmap_pool_init(void)
{
	unsigned int i;

	for (i = 0; i < RTR_MMAP_POOL; i++)
		rtr_mmap_pool[i].cb.next = i + 1 < RTR_MMAP_POOL ?
					   &rtr_mmap_pool[i + 1].cb : NULL;
	rtr_mmap_free = &rtr_mmap_pool[0].cb;
}

/* The mapping task, returning to user space or exiting: sleepable. */
static void rtr_mmap_work_fn(struct callback_head *cb)
{
	struct rtr_mmap_work *w = container_of(cb, struct rtr_mmap_work, cb);
	struct rtr_mmap_scratch *s = rtr_mmap_scratch_alloc();
	struct rtr_user_mmap h = w->h;
	struct file *file = w->file;

	if (s) {
		rtr_mmap_emit(s, &h, file);
		rtr_mmap_scratch_free(s);
	} else {
		rtr_mmap_count(RTR_MMAP_ST_no_path);
		rtr_mmap_write_now(&h, false);
	}
	fput(file);
	rtr_mmap_put(w);
	/* [M1] Our last use of the module's text is the return below. */
	module_put(THIS_MODULE);
}

/*
 * perf_event_mmap(vma): preemption off, the caller holds mmap_lock for
 * write (or is installing a special mapping of its own mm).
 */
static int rtr_mmap_kprobe(struct kprobe *kp, struct pt_regs *regs)
{
	struct vm_area_struct *vma =
		(struct vm_area_struct *)regs_get_kernel_argument(regs, 0);
	struct rtr_mmap_work *w;
	struct rtr_user_mmap h;
	struct file *file;

	if (!(vma->vm_flags & VM_EXEC) || !READ_ONCE(ringtrace_tracing) ||
	    vma->vm_mm != current->mm ||
	    (current->flags & (PF_KTHREAD | PF_IO_WORKER)) ||
	    !rtr_task_traced(current))
		return 0;
	file = vma->vm_file;
	rtr_mmap_head(&h, current->tgid, vma, 0);
	if (!file) {
		if (rtr_vma_is_vdso(vma))
			rtr_mmap_write_now(&h, true);
		return 0;
	}
	w = rtr_mmap_get();
	if (!w)
		goto now;
	/* Fails only once the module is unloading. */
	if (!try_module_get(THIS_MODULE))
		goto put_entry;
	w->file = get_file(file);
	w->h = h;
	init_task_work(&w->cb, rtr_mmap_work_fn);
	if (!task_work_add(current, &w->cb, TWA_RESUME))
		return 0;
	/* -ESRCH: past exit_task_work().  The VMA holds the file still. */
	fput(file);
	module_put(THIS_MODULE);
put_entry:
	rtr_mmap_put(w);
now:
	rtr_mmap_count(RTR_MMAP_ST_no_path);
	rtr_mmap_write_now(&h, false);
	return 0;
}

/* Serialises the kprobe's registration and mmap_dump. */
static DEFINE_MUTEX(rtr_mmap_lock);
static struct kprobe rtr_mmap_kp;
static bool rtr_mmap_kp_on;		/* registered; under rtr_mmap_lock */
static bool rtr_mmap_dump;		/* WRITE_ONCE under rtr_mmap_lock */

bool rtr_mmap_dump_on(void)
{
	return READ_ONCE(rtr_mmap_dump);
}

static int rtr_mmap_events_set(bool on)
{
	int ret = 0;

	mutex_lock(&rtr_mmap_lock);
	if (on == rtr_mmap_kp_on)
		goto out;
	if (on) {
		/* A kprobe once unregistered is registered anew from scratch. */
		rtr_mmap_kp = (struct kprobe){
			.symbol_name = "perf_event_mmap",
			.pre_handler = rtr_mmap_kprobe,
		};
		/* -EOPNOTSUPP from the stub without CONFIG_KPROBES. */
		ret = register_kprobe(&rtr_mmap_kp);
		if (ret)
			goto out;
	} else {
		/* Returns once no handler runs: queued callbacks run on. */
		unregister_kprobe(&rtr_mmap_kp);
	}
	rtr_mmap_kp_on = on;
out:
	mutex_unlock(&rtr_mmap_lock);
	return ret;
}

/* --- control files ----------------------------------------------------------- */

enum { RTR_MMAP_CTL_EVENTS, RTR_MMAP_CTL_DUMP };

static int rtr_mmap_ctl_show(struct seq_file *m, void *unused)
{
	bool on;

	mutex_lock(&rtr_mmap_lock);
	on = (unsigned long)m->private == RTR_MMAP_CTL_EVENTS ?
	     rtr_mmap_kp_on : rtr_mmap_dump;
	mutex_unlock(&rtr_mmap_lock);
	seq_printf(m, "%d\n", on);
	return 0;
}

static int rtr_mmap_ctl_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_mmap_ctl_show);
}

static ssize_t rtr_mmap_ctl_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	unsigned long which = (unsigned long)rtr_file_data(file_inode(file));
	char word[4];
	bool bit;
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word)) ?:
	      rtr_parse_bit(word, &bit);
	if (ret)
		return ret;
	if (which == RTR_MMAP_CTL_EVENTS)
		return rtr_mmap_events_set(bit) ?: count;
	mutex_lock(&rtr_mmap_lock);
	WRITE_ONCE(rtr_mmap_dump, bit);
	mutex_unlock(&rtr_mmap_lock);
	return count;
}

static const struct file_operations rtr_mmap_ctl_fops = {
	.owner = THIS_MODULE,
	.open = rtr_mmap_ctl_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = rtr_mmap_ctl_write,
};

static int rtr_mmap_stats_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	for (i = 0; i < RTR_MMAP_NR_STATS; i++)
		seq_printf(m, "%s %ld\n", rtr_mmap_stat_names[i],
			   atomic_long_read(&rtr_mmap_stats[i]));
	seq_printf(m, "in_flight %d\n", atomic_read(&rtr_mmap_in_flight));
	return 0;
}

static int rtr_mmap_stats_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_mmap_stats_show);
}

static const struct file_operations rtr_mmap_stats_fops = {
	.owner = THIS_MODULE,
	.open = rtr_mmap_stats_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

int rtr_mmap_files_init(void)
{
	rtr_mmap_pool_init();
	return rtr_file_create(rtr_dir, "mmap_events", 0600,
			       (void *)RTR_MMAP_CTL_EVENTS, &rtr_mmap_ctl_fops) ?:
	       rtr_file_create(rtr_dir, "mmap_dump", 0600,
			       (void *)RTR_MMAP_CTL_DUMP, &rtr_mmap_ctl_fops) ?:
	       rtr_file_create(rtr_dir, "mmap_stats", 0400, NULL,
			       &rtr_mmap_stats_fops);
}

/*
 * At unload: no file is open, so nobody registers the kprobe again, and
 * no callback is pending (each holds a module reference).
 */
void rtr_mmap_exit(void)
{
	rtr_mmap_events_set(false);
	/*
	 * [M1] The last callbacks have returned past module_put(); so have
	 * the last pipe buffer releases of splice.c [S3].
	 */
	synchronize_rcu_tasks();
}
