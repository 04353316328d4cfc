// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: cpu/<N>/buffer, the consumer's file: read-only mmap of the
 * meta page and the sub-buffers, poll, splice of the held packet
 * (splice.c), and the GET/PUT/FLUSH/positions/stats ioctls of
 * include/uapi/linux/ringtrace.h.  One opener at a time.
 * Nothing here takes the global control lock on the read path: consumers
 * of different CPUs never wait for each other.
 */
#include <linux/cpu.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "internal.h"

/* Pages mapped between two chances to reschedule. */
#define RTR_MMAP_BATCH		512

static struct rtr_buffer *rtr_file_buffer(struct file *file)
{
	return file->private_data;
}

static int rtr_buffer_open(struct inode *inode, struct file *file)
{
	unsigned long cpu = (unsigned long)rtr_file_data(inode);
	struct rtr_buffer *buf;
	int ret;

	ret = rtr_file_open();
	if (ret)
		return ret;
	mutex_lock(&rtr_control_lock);
	/* No buffer yet: this CPU has not been online since the load. */
	buf = rtr_cpu_buffer(cpu);
	if (!buf) {
		ret = -ENODEV;
		goto unlock;
	}
	if (buf->open) {
		ret = -EBUSY;
		goto unlock;
	}
	/* Tracing off: a new consumer may begin a new recording (ring.c). */
	if (!rtr_trace.tracing_on)
		rtr_buffer_rebase(buf);
	buf->open = true;
	rtr_trace.open_buffers++;
	file->private_data = buf;
unlock:
	mutex_unlock(&rtr_control_lock);
	if (ret)
		return ret;
	nonseekable_open(inode, file);
	/* No lseek; splice's off_in (RINGTRACE_FEATURE_SPLICE) wants PREAD. */
	file->f_mode |= FMODE_PREAD;
	return 0;
}

static int rtr_buffer_release(struct inode *inode, struct file *file)
{
	struct rtr_buffer *buf = rtr_file_buffer(file);

	mutex_lock(&buf->consumer_lock);
	rtr_buffer_unhold(buf);
	/* The next consumer starts with a wakeup for every packet [W3]. */
	WRITE_ONCE(buf->wakeup_packets, 1);
	mutex_unlock(&buf->consumer_lock);

	mutex_lock(&rtr_control_lock);
	buf->open = false;
	rtr_trace.open_buffers--;
	mutex_unlock(&rtr_control_lock);
	return 0;
}

/*
 * The mapping is the meta page alone or the whole buffer, read-only and
 * shared.  VM_MAYWRITE goes so that mprotect() cannot add write later.
 * VM_DONTCOPY keeps it out of forked children unless the owner asks for
 * them with madvise(MADV_DOFORK): the child's copy then holds page
 * references and the file, so the buffer stays busy (no geometry change)
 * until the child unmaps or exits, as with the parent's own mapping.
 *
 * Not VM_IO, although that would make VM_DONTCOPY sticky: VM_IO turns
 * get_user_pages() away, and writing the mapping to a file on 9p,
 * virtiofs, FUSE or with O_DIRECT pins the user pages -- ringtraced
 * writes its stored frames straight from here (EFAULT otherwise).
 */
static int rtr_buffer_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rtr_buffer *buf = rtr_file_buffer(file);
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long i, nr, batch, left;
	int ret;

	if (vma->vm_flags & (VM_WRITE | VM_EXEC) ||
	    !(vma->vm_flags & VM_MAYSHARE))
		return -EPERM;
	if (vma->vm_pgoff)
		return -EINVAL;
	if (len == PAGE_SIZE)
		nr = 1;
	else if (len == (unsigned long)buf->nr_pages << PAGE_SHIFT)
		nr = buf->nr_pages;
	else
		return -EINVAL;

	rtr_vm_flags_mod(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP,
			VM_MAYWRITE | VM_MAYEXEC);
	/* In batches, with a chance to reschedule: a map may be 256 GiB. */
	for (i = 0; i < nr; i += batch) {
		batch = min_t(unsigned long, nr - i, RTR_MMAP_BATCH);
		left = batch;
		ret = vm_insert_pages(vma, vma->vm_start + i * PAGE_SIZE,
				      buf->pages + i, &left);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}

/*
 * EPOLLIN: GET has a packet (or, tracing stopped, a tail to close).
 * EPOLLHUP: tracing is stopped and everything has been consumed; it lasts
 * until tracing starts again.  EPOLLERR: the buffer was disabled (GET
 * gives -EIO).  The stop path and every completed packet wake the queue.
 */
static __poll_t rtr_buffer_poll(struct file *file, poll_table *wait)
{
	struct rtr_buffer *buf = rtr_file_buffer(file);

	poll_wait(file, &buf->waitq, wait);
	/* [W3] Below the watermark, only a stopped trace's packets count. */
	if (rtr_buffer_ready(buf) &&
	    (rtr_waiting(buf) >= READ_ONCE(buf->wakeup_packets) ||
	     rtr_is_stopped()))
		return EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(buf->disabled))
		return EPOLLERR;
	if (rtr_is_stopped()) {
		if (rtr_buffer_flush_wanted(buf))
			return EPOLLIN | EPOLLRDNORM;
		if (rtr_buffer_drained(buf))
			return EPOLLHUP;
	}
	return 0;
}

/*
 * Copy in an argument struct that starts with {__u32 size; __u32 flags;}:
 * at least @min bytes, any bytes we do not know must be zero, flags zero.
 */
static int rtr_arg_in(void *karg, size_t ksize, size_t min,
		     const void __user *uarg, u32 *usize)
{
	u32 hdr[2];
	int ret;

	if (copy_from_user(hdr, uarg, sizeof(hdr)))
		return -EFAULT;
	if (hdr[0] < min)
		return -EINVAL;
	/*
	 * Like perf_event_open() and sched_setattr(): a struct larger than a
	 * page is not a newer version of ours, and checking that its tail is
	 * zero could scan gigabytes of user memory.
	 */
	if (hdr[0] > PAGE_SIZE)
		return -E2BIG;
	ret = copy_struct_from_user(karg, ksize, uarg, hdr[0]);
	if (ret)
		return ret == -E2BIG ? -EINVAL : ret;
	if (hdr[1])
		return -EINVAL;
	*usize = hdr[0];
	return 0;
}

static int rtr_arg_out(void __user *uarg, void *karg, size_t ksize, u32 usize)
{
	*(u32 *)karg = ksize;
	return copy_to_user(uarg, karg, min_t(size_t, ksize, usize)) ?
	       -EFAULT : 0;
}

static bool rtr_zero(const u64 *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static void rtr_ioctl_flush(struct rtr_buffer *buf)
{
	cpus_read_lock();
	rtr_buffer_flush(buf);
	cpus_read_unlock();
}

/* GET; when tracing is stopped, first close whatever is still open. */
static int rtr_ioctl_get(struct rtr_buffer *buf, void __user *uarg)
{
	struct ringtrace_subbuf sb;
	u32 usize;
	int ret;

	ret = rtr_arg_in(&sb, sizeof(sb), RINGTRACE_SUBBUF_SIZE_VER0, uarg,
			&usize);
	if (ret)
		return ret;
	ret = rtr_buffer_get(buf, &sb);
	if (ret == -EAGAIN && rtr_is_stopped()) {
		/* Writers are gone [R3]: finish the trace's tail. */
		rtr_ioctl_flush(buf);
		ret = rtr_buffer_get(buf, &sb);
		/* Drained, and still stopped: nothing can come any more. */
		if (ret == -EAGAIN && rtr_buffer_drained(buf) &&
		    rtr_is_stopped())
			ret = -ENODATA;
	}
	if (ret)
		return ret;
	ret = rtr_arg_out(uarg, &sb, sizeof(sb), usize);
	/*
	 * The caller cannot learn which packet it holds, so it could never
	 * PUT it: give it back, as if this GET had not happened.
	 */
	if (ret)
		rtr_buffer_unhold(buf);
	return ret;
}

static int rtr_ioctl_put(struct rtr_buffer *buf, void __user *uarg)
{
	struct ringtrace_subbuf sb;
	u32 usize;
	int ret;

	ret = rtr_arg_in(&sb, sizeof(sb), RINGTRACE_SUBBUF_SIZE_VER0, uarg,
			&usize);
	if (ret)
		return ret;
	return rtr_buffer_put(buf, sb.pos);
}

static int rtr_ioctl_positions(struct rtr_buffer *buf, void __user *uarg)
{
	struct ringtrace_positions p;
	u32 usize;
	int ret;

	ret = rtr_arg_in(&p, sizeof(p), RINGTRACE_POSITIONS_SIZE_VER0, uarg,
			&usize);
	if (ret)
		return ret;
	rtr_buffer_positions(buf, &p);
	return rtr_arg_out(uarg, &p, sizeof(p), usize);
}

static int rtr_ioctl_stats(struct rtr_buffer *buf, void __user *uarg)
{
	struct ringtrace_stats st;
	u32 usize;
	int ret;

	ret = rtr_arg_in(&st, sizeof(st), RINGTRACE_STATS_SIZE_VER0, uarg,
			&usize);
	if (ret)
		return ret;
	if (!rtr_zero(st.reserved, ARRAY_SIZE(st.reserved)))
		return -EINVAL;
	rtr_buffer_stats(buf, &st);
	return rtr_arg_out(uarg, &st, sizeof(st), usize);
}

/*
 * SET_WAKEUP [W3]: 1 .. half the ring.  A lower watermark may find enough
 * packets waiting already: the queue is woken to look again.
 */
static int rtr_ioctl_set_wakeup(struct rtr_buffer *buf, void __user *uarg)
{
	struct ringtrace_wakeup wk;
	u32 usize;
	int ret;

	ret = rtr_arg_in(&wk, sizeof(wk), RINGTRACE_WAKEUP_SIZE_VER0, uarg,
			&usize);
	if (ret)
		return ret;
	if (wk.reserved || !wk.packets ||
	    wk.packets > (1U << buf->w.num_order) / 2)
		return -EINVAL;
	/* Under consumer_lock (rtr_buffer_ioctl()), like release's reset. */
	WRITE_ONCE(buf->wakeup_packets, wk.packets);
	wake_up_all(&buf->waitq);
	return 0;
}

static long rtr_buffer_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct rtr_buffer *buf = rtr_file_buffer(file);
	void __user *uarg = (void __user *)arg;
	long ret;

	mutex_lock(&buf->consumer_lock);
	switch (cmd) {
	case RINGTRACE_IOC_GET_SUBBUF:
		ret = rtr_ioctl_get(buf, uarg);
		break;
	case RINGTRACE_IOC_PUT_SUBBUF:
		ret = rtr_ioctl_put(buf, uarg);
		break;
	case RINGTRACE_IOC_FLUSH:
		rtr_ioctl_flush(buf);
		ret = 0;
		break;
	case RINGTRACE_IOC_GET_POSITIONS:
		ret = rtr_ioctl_positions(buf, uarg);
		break;
	case RINGTRACE_IOC_GET_STATS:
		ret = rtr_ioctl_stats(buf, uarg);
		break;
	case RINGTRACE_IOC_SET_WAKEUP:
		ret = rtr_ioctl_set_wakeup(buf, uarg);
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&buf->consumer_lock);
	return ret;
}

const struct file_operations rtr_buffer_fops = {
	.owner = THIS_MODULE,
	.open = rtr_buffer_open,
	.release = rtr_buffer_release,
	.mmap = rtr_buffer_mmap,
	.splice_read = rtr_buffer_splice_read,
	.poll = rtr_buffer_poll,
	.unlocked_ioctl = rtr_buffer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
