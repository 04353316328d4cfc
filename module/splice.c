// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: splice(2) from a CPU buffer file, the held packet's pages
 * handed to a pipe without a copy (RINGTRACE_FEATURE_SPLICE in the uapi
 * header says what a consumer sees).
 *
 *   GET_SUBBUF                       packet k held
 *   splice(buffer, &off, pipe, n)    pipe buffers -> pages of packet k
 *   splice(pipe, file)               the file's write_iter reads them,
 *                                    each buffer released once consumed
 *   PUT_SUBBUF                       -EBUSY until the last is released
 *
 * The pages are the ring's own: the writers fill them again once the
 * packet is retired.  So a pipe buffer is a reference on the packet, not
 * only on its page, and the packet stays held -- no writer can open its
 * slot, in either mode ([B3] in ring.c) -- until every pipe buffer of it
 * is gone, whoever reads the pipe and whenever.
 *
 * Owners [S1].  buf->splice_refs counts the held packet's owners:
 * RTR_SPLICE_OWNER for its consumer, from GET until PUT or until the
 * consumer lets it go (closes the file), and one per pipe buffer.  GET,
 * PUT and splice change it under consumer_lock; a pipe buffer's release
 * drops its one from any task, without that lock, and may be the last
 * owner: a consumer that closed its file (or died) with pages of the
 * packet in a pipe.  Both the consumer's drop (rtr_buffer_unhold()) and
 * the release use a fully ordered atomic, so exactly one of them sees
 * zero and hands the packet back to the writers, unconsumed, as a closing
 * consumer always has.  Until then the packet is nobody's: HELD stays,
 * and a consumer that opens the file meanwhile gets -EBUSY from GET and
 * PUT, as for any packet it does not hold.
 *
 * Ordering [S2].  The pipe's reader reads a page (copy to the user, a
 * file's write_iter) before it releases the buffer; the release's
 * fully ordered decrement comes after those reads.  PUT's acquire read of
 * the count, which must find only the consumer's RTR_SPLICE_OWNER left,
 * pairs with it, so the pipe's reads are done before PUT's release of
 * @consumed ([B2]) lets a writer reuse the slot; the hand-back after the
 * last release is ordered by its own decrement.
 *
 * Lifetimes [S3].  A pipe buffer outlives the file, the consumer and its
 * pipe's writer: it lives as long as the pipe (or a tee of it) keeps it.
 *   - The page: each buffer holds a page reference (get_page()), so the
 *     buffer's pages outlive the buffer itself, as a mapping's do.
 *   - The buffer: rtr_spliced counts the pipe buffers of every buffer,
 *     and nothing replaces the buffers (geometry, clear, the persistent
 *     region's arm) while it is not zero: rtr_buffers_idle().  The count
 *     only grows under consumer_lock of an open file, which itself keeps
 *     the buffers (open_buffers), so a zero read under the control lock
 *     with no file open stays zero.  The release's decrement of
 *     rtr_spliced is its last access to the buffer (release ordering,
 *     paired with the acquire read in rtr_splice_busy()).
 *   - The module: the ops below are its code.  Each pipe buffer holds a
 *     module reference, so rmmod is refused while one exists.  The
 *     release's module_put() is its last act; the instructions after it
 *     (its return into the pipe's code) are waited for by the exit's
 *     synchronize_rcu_tasks() (rtr_mmap_exit(), [M1] in mmap.c): a task
 *     does not pass a voluntary switch or user space inside them.
 *
 * The buffers never carry PIPE_BUF_FLAG_CAN_MERGE (splice_to_pipe()
 * clears flags): a write to the pipe never lands in a ring page.  They
 * cannot be stolen either (no try_steal): the page stays the ring's.
 * A tee() of a buffer takes the same three references (->get).
 */
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pipe_fs_i.h>
#include <linux/slab.h>
#include <linux/splice.h>

#include "internal.h"

/* Pipe buffers of every buffer's packets [S3]. */
static atomic_long_t rtr_spliced = ATOMIC_LONG_INIT(0);

bool rtr_splice_busy(void)
{
	lockdep_assert_held(&rtr_control_lock);
	/* [S3] Pairs with the release decrement in rtr_splice_put(). */
	return atomic_long_read_acquire(&rtr_spliced) != 0;
}

/* A pipe buffer's three references: page, packet, module. */
static void rtr_splice_get(struct rtr_buffer *buf, struct page *page)
{
	get_page(page);
	atomic_inc(&buf->splice_refs);
	atomic_long_inc(&rtr_spliced);
	/* The file, or the pipe buffer tee() copies, holds one already. */
	__module_get(THIS_MODULE);
}

static void rtr_splice_put(struct rtr_buffer *buf, struct page *page)
{
	put_page(page);
	/* [S1][S2] The packet's last owner: back to the writers. */
	if (atomic_dec_and_test(&buf->splice_refs))
		rtr_buffer_hand_back(buf);
	/* [S3] The last access to @buf; pairs with rtr_splice_busy(). */
	atomic_long_dec_return_release(&rtr_spliced);
	/* [S3] The last act: rtr_mmap_exit() waits for our return. */
	module_put(THIS_MODULE);
}

static void rtr_pipe_buf_release(struct pipe_inode_info *pipe,
				 struct pipe_buffer *pb)
{
	rtr_splice_put((struct rtr_buffer *)pb->private, pb->page);
}

static bool rtr_pipe_buf_get(struct pipe_inode_info *pipe,
			     struct pipe_buffer *pb)
{
	rtr_splice_get((struct rtr_buffer *)pb->private, pb->page);
	return true;
}

static const struct pipe_buf_operations rtr_pipe_buf_ops = {
	.release = rtr_pipe_buf_release,
	.get = rtr_pipe_buf_get,
};

/* splice_to_pipe() gives back what did not fit in the pipe. */
static void rtr_spd_release(struct splice_pipe_desc *spd, unsigned int i)
{
	rtr_splice_put((struct rtr_buffer *)spd->partial[i].private,
		       spd->pages[i]);
}

/*
 * Up to @len bytes of the held packet from mapping offset *@ppos into
 * @pipe: a pipe buffer per page, as many as the pipe has room for.
 */
ssize_t rtr_buffer_splice_read(struct file *file, loff_t *ppos,
			       struct pipe_inode_info *pipe, size_t len,
			       unsigned int flags)
{
	struct rtr_buffer *buf = file->private_data;
	struct partial_page *partial;
	struct splice_pipe_desc spd;
	unsigned long cons, start, end, off;
	struct page **pages;
	unsigned int nr, i;
	ssize_t ret;

	mutex_lock(&buf->consumer_lock);
	cons = atomic_long_read(&buf->consumed);
	/* Held by this consumer: a packet it got and did not put [S1]. */
	if (!(cons & RTR_POS_HELD) ||
	    atomic_read(&buf->splice_refs) < RTR_SPLICE_OWNER) {
		ret = -EINVAL;
		goto unlock;
	}
	cons &= ~RTR_POS_HELD;
	start = PAGE_SIZE + (cons & buf->w.buf_mask);
	/* Checked by GET: below subbuf_size. */
	end = start + rtr_buffer_held_content(buf, cons);
	if (*ppos < start || *ppos > end) {
		ret = -EINVAL;
		goto unlock;
	}
	off = *ppos;
	len = min_t(size_t, len, end - off);
	ret = 0;
	if (!len)
		goto unlock;
	nr = min_t(unsigned int, DIV_ROUND_UP((off & ~PAGE_MASK) + len,
					      PAGE_SIZE), pipe->max_usage);
	pages = kmalloc_array(nr, sizeof(*pages), GFP_KERNEL);
	partial = kmalloc_array(nr, sizeof(*partial), GFP_KERNEL);
	if (!pages || !partial) {
		ret = -ENOMEM;
		goto free;
	}
	for (i = 0; i < nr && len; i++) {
		unsigned int poff = off & ~PAGE_MASK;
		unsigned int plen = min_t(size_t, PAGE_SIZE - poff, len);

		pages[i] = buf->pages[off >> PAGE_SHIFT];
		partial[i] = (struct partial_page){
			.offset = poff,
			.len = plen,
			.private = (unsigned long)buf,
		};
		rtr_splice_get(buf, pages[i]);
		off += plen;
		len -= plen;
	}
	spd = (struct splice_pipe_desc){
		.pages = pages,
		.partial = partial,
		.nr_pages = i,
		.nr_pages_max = nr,
		.ops = &rtr_pipe_buf_ops,
		.spd_release = rtr_spd_release,
	};
	ret = splice_to_pipe(pipe, &spd);
	if (ret > 0)
		*ppos += ret;
free:
	kfree(partial);
	kfree(pages);
unlock:
	mutex_unlock(&buf->consumer_lock);
	return ret;
}
