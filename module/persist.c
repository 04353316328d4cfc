// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the persistent region -- per-CPU rings in memory that
 * outlives the module (and, where the memory does, the kernel).
 *
 * The region is one physical range the kernel reserved at boot:
 *
 *   persist=NAME                   a reserve_mem=SIZE:ALIGN:NAME region
 *                                  (6.11+): RAM the kernel kept out of its
 *                                  allocator, in the direct map
 *   persist_addr=PHYS persist_size=BYTES
 *                                  a memmap=SIZE$PHYS range: e820
 *                                  "Reserved", outside the direct map,
 *                                  claimed with request_mem_region()
 *
 * It is checked before anything is written (page aligned, reserved memory
 * the kernel does not use, struct pages for the buffer files' mmap, room
 * for one ring per possible CPU): a region that does not pass fails the
 * load, with one line saying why.  It is mapped once, write-back (memremap()).
 *
 * Then its header decides (rtr_persist_classify()):
 *
 *   no magic        no image (a cold boot; or an image armed by a load
 *                   that failed, lifecycle EMPTY): the region is zeroed
 *                   and armed, and the rings live in it (LIVE)
 *   a valid image   the previous load's or boot's trace: kept untouched,
 *                   readable through persist/image, until persist/release
 *                   names its uuid; meanwhile this load's rings use pages
 *   anything else   kept too (damaged, or another layout), said in
 *                   persist/info; release clears it the same way
 *
 * Layout (<linux/ringtrace_persist.h>): header page, state, slice table,
 * two metadata and two ksyms copies, then one slice per possible CPU, each
 * its counters and its ring.  A slice goes to a CPU at the CPU's first
 * buffer, in the order they come (rtr_persist_slice()); a CPU past the
 * last slice gets pages.  The writers use a slice's counters and pages in
 * place: the fast path is the same code, over other addresses.
 *
 * A geometry change or a clear re-carves every slice within the region
 * (rtr_persist_commit()), under the same preconditions as without one:
 * tracing off, no buffer file open, the new set allocated before the old
 * one is dropped.  rmmod marks the region UNLOADED after the last flush; the
 * next load then finds it as a previous image.
 *
 * While LIVE the region also describes its trace, so that a reader of
 * the image needs nothing of the machine that wrote it (struct
 * ringtrace_persist_blob): two copies of the trace's TSDL, rendered at
 * arming, at every event registration and at every whole read of the
 * metadata file (so the image holds, byte for byte, what a consumer last
 * copied); two copies of the kernel's symbols, .ringtrace-ksyms.zst as
 * ringtraced writes it (persist/ksyms); and in the header the boot id and
 * build id, which only userspace can read (persist/identity).  A copy is
 * written while the other one holds the newest generation: a crash in the
 * middle of a write leaves that one.
 *
 * Locking: the state below changes under cpus_read_lock() and
 * rtr_control_lock (control files), or under the hotplug lock's write side
 * (a CPU's first slice), or at init and exit, when nothing else runs.
 * The copies are written under rtr_persist_blob_lock, which the region's
 * arming takes too (inside the control lock), and which takes
 * rtr_events_lock (ctf.c) inside it: the event set changes, and the
 * metadata file is read, without the control lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/kernel.h>	/* hex2bin() */
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>
#include <linux/uuid.h>
#include <linux/xxhash.h>

#include "compat.h"
#include "internal.h"

static char *rtr_persist_name;
module_param_named(persist, rtr_persist_name, charp, 0444);
MODULE_PARM_DESC(persist,
		 "keep the rings in the reserve_mem= region of this name");

static unsigned long rtr_persist_addr;
module_param_named(persist_addr, rtr_persist_addr, ulong, 0444);
MODULE_PARM_DESC(persist_addr,
		 "keep the rings in the memmap=SIZE$ADDR range at this address");

static unsigned long rtr_persist_size;
module_param_named(persist_size, rtr_persist_size, ulong, 0444);
MODULE_PARM_DESC(persist_size, "bytes of the persist_addr= range");

/* What persist/info says of the region. */
enum rtr_persist_state {
	RTR_PERSIST_NONE,		/* no region */
	RTR_PERSIST_LIVE,		/* armed: the rings are in it */
	RTR_PERSIST_PREVIOUS,		/* a valid image, kept */
	RTR_PERSIST_DAMAGED,		/* magic, but a check failed: kept */
	RTR_PERSIST_FOREIGN,		/* another layout version: kept */
};

static const char *const rtr_persist_state_name[] = {
	[RTR_PERSIST_NONE] = "none",
	[RTR_PERSIST_LIVE] = "live",
	[RTR_PERSIST_PREVIOUS] = "previous",
	[RTR_PERSIST_DAMAGED] = "damaged",
	[RTR_PERSIST_FOREIGN] = "foreign",
};

/* The two-copy areas (struct ringtrace_persist_blob). */
enum rtr_persist_blob_kind {
	RTR_PERSIST_METADATA,
	RTR_PERSIST_KSYMS,
	RTR_PERSIST_NR_BLOBS,
};

static const char *const rtr_persist_blob_name[] = {
	[RTR_PERSIST_METADATA] = "metadata",
	[RTR_PERSIST_KSYMS] = "ksyms",
};

static DEFINE_MUTEX(rtr_persist_blob_lock);

static struct {
	/* Set at load, then read-only. */
	phys_addr_t base;
	size_t size;
	u32 source;			/* RINGTRACE_PERSIST_SRC_* */
	void *va;			/* the whole region, write-back */
	struct resource *res;		/* memmap=: our claim on it */
	int *slice_of;			/* per CPU: its slice, or -1 */

	/* Control lock (see the top). */
	enum rtr_persist_state state;
	const char *damage;		/* the first check that failed */
	bool armed_here;		/* this load armed it */
	unsigned int next_slice;	/* slices given so far */
	struct rtr_persist_layout layout;	/* while LIVE */

	/*
	 * rtr_persist_blob_lock: per kind, the newest generation written
	 * since arming (0: none) and the copy that holds it.
	 */
	struct {
		u64 gen;
		unsigned int newest;
	} blob[RTR_PERSIST_NR_BLOBS];
	u64 metadata_events_gen;	/* the event set the newest TSDL has */
} rtr_persist;

static struct ringtrace_persist_header *rtr_persist_header(void)
{
	return rtr_persist.va;
}

static void *rtr_persist_at(u64 offset)
{
	return (u8 *)rtr_persist.va + offset;
}

/* The slice table and the state, of the header's layout. */
static struct ringtrace_persist_slice *rtr_persist_slices(u64 offset)
{
	return rtr_persist_at(offset);
}

static struct ringtrace_persist_state *rtr_persist_state_at(u64 offset)
{
	return rtr_persist_at(offset);
}

/* Zero [@offset, @offset + @len) of the region, a MiB at a time. */
static void rtr_persist_zero(u64 offset, u64 len)
{
	u64 chunk;

	while (len) {
		chunk = min_t(u64, len, SZ_1M);
		memset(rtr_persist_at(offset), 0, chunk);
		offset += chunk;
		len -= chunk;
		cond_resched();
	}
}

/*
 * The layout of @nr_slices slices of @num_subbufs x @subbuf_size in a
 * region of @size bytes: 0, or -ENOSPC if they do not fit.  One function
 * for the arming and for the check of an image, so that the two agree.
 */
static int rtr_persist_layout_of(struct rtr_persist_layout *l, u64 size,
				 unsigned long subbuf_size,
				 unsigned int num_subbufs,
				 unsigned int nr_slices)
{
	u64 off = RINGTRACE_PERSIST_HEADER_SIZE;

	l->subbuf_size = subbuf_size;
	l->num_subbufs = num_subbufs;
	l->nr_slices = nr_slices;
	/* The crash path's area: entries, then a snapshot per slice. */
	l->state_offset = off;
	l->state_size = PAGE_ALIGN(RINGTRACE_PERSIST_SNAP_OFFSET +
				   (u64)RINGTRACE_PERSIST_SNAP_SIZE * nr_slices);
	off += l->state_size;
	l->slices_offset = off;
	l->slices_size = PAGE_ALIGN((u64)nr_slices *
				    sizeof(struct ringtrace_persist_slice));
	off += l->slices_size;
	l->metadata_size = RINGTRACE_PERSIST_METADATA_SIZE;
	l->metadata_offset[0] = off;
	l->metadata_offset[1] = off + l->metadata_size;
	off += 2 * l->metadata_size;
	l->ksyms_size = RINGTRACE_PERSIST_KSYMS_SIZE;
	l->ksyms_offset[0] = off;
	l->ksyms_offset[1] = off + l->ksyms_size;
	off += 2 * l->ksyms_size;
	l->counters_size = rtr_buffer_counters_size(num_subbufs);
	l->slice_size = l->counters_size +
			rtr_buffer_pages(subbuf_size, num_subbufs) * PAGE_SIZE;
	l->rings_offset = off;
	/* An image's header may ask for anything: no overflow either. */
	if (check_mul_overflow(l->slice_size, (u64)nr_slices, &l->rings_size) ||
	    check_add_overflow(off, l->rings_size, &off))
		return -ENOSPC;
	return off > size ? -ENOSPC : 0;
}

/*
 * The layout for the current region, geometry @subbuf_size x
 * @num_subbufs, a slice per possible CPU; -ENOSPC, with the numbers in
 * the log, if it does not fit.
 */
int rtr_persist_fit(struct rtr_persist_layout *l, unsigned long subbuf_size,
		    unsigned int num_subbufs)
{
	int ret;

	ret = rtr_persist_layout_of(l, rtr_persist.size, subbuf_size,
				    num_subbufs, num_possible_cpus());
	if (ret)
		pr_info("persistent region of %zu bytes cannot hold %u rings of %lu x %u bytes: they need %llu\n",
			rtr_persist.size, l->nr_slices, subbuf_size,
			num_subbufs, l->rings_offset + l->rings_size);
	return ret;
}

/*
 * Arming's geometry (D9 of the design): sub-buffers of @subbuf_size, as
 * many as fit (a power of two), quietly; -ENOSPC if not even the fewest.
 */
static int rtr_persist_fit_most(struct rtr_persist_layout *l,
				unsigned long subbuf_size)
{
	unsigned int num;

	for (num = RINGTRACE_MAX_SUBBUFS; num >= RINGTRACE_MIN_SUBBUFS; num /= 2)
		if (!rtr_persist_layout_of(l, rtr_persist.size, subbuf_size,
					   num, num_possible_cpus()))
			return 0;
	return rtr_persist_fit(l, subbuf_size, RINGTRACE_MIN_SUBBUFS);
}

/* The layout the rings use, while the region is LIVE; else NULL. */
const struct rtr_persist_layout *rtr_persist_current(void)
{
	return rtr_persist.state == RTR_PERSIST_LIVE ? &rtr_persist.layout :
						       NULL;
}

bool rtr_persist_live(void)
{
	return rtr_persist.state == RTR_PERSIST_LIVE;
}

static void rtr_persist_write_slice(const struct rtr_persist_layout *l,
				    unsigned int i, int cpu)
{
	struct ringtrace_persist_slice *s = rtr_persist_slices(l->slices_offset) + i;

	s->counters_offset = l->rings_offset + i * l->slice_size;
	s->ring_offset = s->counters_offset + l->counters_size;
	s->ring_size = l->slice_size - l->counters_size;
	s->cpu = cpu < 0 ? 0 : cpu;
	s->flags = cpu < 0 ? 0 : RINGTRACE_PERSIST_SLICE_USED;
}

/*
 * @cpu's slice in layout @l, in *@slice: false if the region has none for
 * it.  A CPU keeps the slice it is first given (re-carving moves it, the
 * index stays).  Given in the live layout, the slice table says so at once.
 */
bool rtr_persist_slice(const struct rtr_persist_layout *l, unsigned int cpu,
		       struct rtr_slice *slice)
{
	int i = rtr_persist.slice_of ? rtr_persist.slice_of[cpu] : -1;
	u64 counters;

	if (!l)
		return false;
	if (i < 0) {
		if (rtr_persist.next_slice >= l->nr_slices)
			return false;
		i = rtr_persist.next_slice++;
		rtr_persist.slice_of[cpu] = i;
		if (l == rtr_persist_current())
			rtr_persist_write_slice(l, i, cpu);
	}
	counters = l->rings_offset + (u64)i * l->slice_size;
	slice->counters = rtr_persist_at(counters);
	slice->ring = rtr_persist_at(counters + l->counters_size);
	slice->ring_pfn = PHYS_PFN(rtr_persist.base + counters +
				   l->counters_size);
	return true;
}

/* --- the metadata and ksyms copies ------------------------------------ */

/*
 * Copy @copy of @kind, where a live region's or a valid image's header
 * puts it (rtr_persist_check() held the image's to the layout), and the
 * bytes it can hold in *@room.
 */
static struct ringtrace_persist_blob *
rtr_persist_blob(enum rtr_persist_blob_kind kind, unsigned int copy,
		 size_t *room)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	u64 offset, size;

	if (kind == RTR_PERSIST_METADATA) {
		offset = h->metadata_offset[copy];
		size = h->metadata_size;
	} else {
		offset = h->ksyms_offset[copy];
		size = h->ksyms_size;
	}
	*room = size - sizeof(struct ringtrace_persist_blob);
	return rtr_persist_at(offset);
}

static size_t rtr_persist_blob_room(enum rtr_persist_blob_kind kind)
{
	size_t room;

	rtr_persist_blob(kind, 0, &room);
	return room;
}

/*
 * Start writing @kind: the copy that does not hold the newest generation,
 * marked unwritten before any of its bytes change.  Its bytes follow the
 * returned header, *@room of them at most.
 */
static struct ringtrace_persist_blob *
rtr_persist_blob_begin(enum rtr_persist_blob_kind kind, size_t *room)
{
	struct ringtrace_persist_blob *b;

	lockdep_assert_held(&rtr_persist_blob_lock);
	b = rtr_persist_blob(kind, !rtr_persist.blob[kind].newest, room);
	WRITE_ONCE(b->gen, 0);
	/*
	 * The copy reads as unwritten before any of its bytes change.  The
	 * reader is not a CPU running now (no read barrier pairs with this)
	 * but whoever reads the region after a crash stopped this one: the
	 * order of the stores is all it has.
	 */
	smp_wmb();
	return b;
}

/* The @len bytes after @b are written: make them the newest copy. */
static void rtr_persist_blob_end(enum rtr_persist_blob_kind kind,
				 struct ringtrace_persist_blob *b, size_t len)
{
	lockdep_assert_held(&rtr_persist_blob_lock);
	b->len = len;
	b->checksum = xxh64(b + 1, len, 0);
	b->reserved = 0;
	/*
	 * Bytes, length and checksum before the generation that makes them
	 * the newest: a crash (or an NMI that stops this CPU) between the
	 * two leaves the other copy the newest valid one for the reader of
	 * the image -- the same reader as rtr_persist_blob_begin()'s.
	 */
	smp_wmb();
	WRITE_ONCE(b->gen, rtr_persist.blob[kind].gen + 1);
	rtr_persist.blob[kind].gen++;
	rtr_persist.blob[kind].newest ^= 1;
}

/*
 * The newest valid copy of @kind in the region as it is: its generation
 * (0: none valid) and length.  The same rules as any reader of the image.
 */
static u64 rtr_persist_blob_newest(enum rtr_persist_blob_kind kind,
				   u64 *len)
{
	struct ringtrace_persist_blob *b;
	unsigned int copy;
	u64 gen = 0;
	size_t room;

	for (copy = 0; copy < 2; copy++) {
		b = rtr_persist_blob(kind, copy, &room);
		if (!b->gen || b->gen <= gen || b->reserved || b->len > room ||
		    xxh64(b + 1, b->len, 0) != b->checksum)
			continue;
		gen = b->gen;
		*len = b->len;
	}
	return gen;
}

/*
 * Render the trace's TSDL into the inactive metadata copy, in place: a
 * seq_file over the copy's bytes, which seq_printf() and friends fill and
 * mark overflowed (count == size) when they do not fit.  A text over the
 * copy leaves the older copy the newest; said in the log, rate limited.
 */
static void rtr_persist_metadata_render(void)
{
	struct ringtrace_persist_blob *b;
	struct seq_file m = {};
	u64 events_gen;
	size_t room;

	lockdep_assert_held(&rtr_persist_blob_lock);
	if (rtr_persist.state != RTR_PERSIST_LIVE)
		return;
	b = rtr_persist_blob_begin(RTR_PERSIST_METADATA, &room);
	m.buf = (char *)(b + 1);
	m.size = room;
	events_gen = rtr_metadata_print(&m);
	if (seq_has_overflowed(&m)) {
		pr_warn_ratelimited("the metadata does not fit the persistent region's %zu bytes: its image keeps an older copy\n",
				    room);
		return;
	}
	rtr_persist_blob_end(RTR_PERSIST_METADATA, b, m.count);
	rtr_persist.metadata_events_gen = events_gen;
}

/* An event was registered (ctf.c, no lock of its held): render again. */
void rtr_persist_events_changed(void)
{
	mutex_lock(&rtr_persist_blob_lock);
	rtr_persist_metadata_render();
	mutex_unlock(&rtr_persist_blob_lock);
}

/*
 * The metadata file rendered @text whole, of event set @events_gen, for a
 * reader: that text becomes the image's, the very bytes the consumer
 * copies into its trace (the clock's offset is read at each render).
 * Unless an event was registered since: the copy rendered for it
 * stays, the reader's text lacks its declarations.
 */
void rtr_persist_metadata_read(const char *text, size_t len, u64 events_gen)
{
	struct ringtrace_persist_blob *b;
	size_t room;

	mutex_lock(&rtr_persist_blob_lock);
	if (rtr_persist.state != RTR_PERSIST_LIVE ||
	    events_gen < rtr_persist.metadata_events_gen)
		goto unlock;
	if (len > rtr_persist_blob_room(RTR_PERSIST_METADATA)) {
		pr_warn_ratelimited("the metadata does not fit the persistent region's %zu bytes: its image keeps an older copy\n",
				    rtr_persist_blob_room(RTR_PERSIST_METADATA));
		goto unlock;
	}
	b = rtr_persist_blob_begin(RTR_PERSIST_METADATA, &room);
	memcpy(b + 1, text, len);
	rtr_persist_blob_end(RTR_PERSIST_METADATA, b, len);
	rtr_persist.metadata_events_gen = events_gen;
unlock:
	mutex_unlock(&rtr_persist_blob_lock);
}

static void rtr_persist_checksum(struct ringtrace_persist_header *h)
{
	h->checksum = 0;
	h->checksum = xxh64(h, RINGTRACE_PERSIST_HEADER_SIZE, 0);
}

/*
 * Make @l the rings' layout.  @arm: the region held no live trace (a cold
 * region, or a released image): zero it whole and write a new header.
 * Otherwise (a geometry change, a clear) the header keeps its identity and
 * only the rings and counters are zeroed.  Every buffer that used the
 * region is idle (rtr_buffer_idle()) and about to be freed; the caller
 * carves the new ones next.  Cannot fail: all or nothing holds because
 * the new buffers were allocated before this.
 */
void rtr_persist_commit(const struct rtr_persist_layout *l, bool arm)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	struct ringtrace_persist_state *st;
	unsigned int i, cpu;

	BUILD_BUG_ON(sizeof(*h) != RINGTRACE_PERSIST_HEADER_SIZE_VER1);
	BUILD_BUG_ON(sizeof(*h) > RINGTRACE_PERSIST_HEADER_SIZE);
	/* No copy is written while the region is zeroed or carved. */
	mutex_lock(&rtr_persist_blob_lock);
	if (arm) {
		/* [C2] of crash.c: no hook writes while it is zeroed. */
		rtr_crash_disarm();
		rtr_persist_zero(0, rtr_persist.size);
		h->magic = RINGTRACE_PERSIST_MAGIC;
		h->layout = RINGTRACE_PERSIST_LAYOUT;
		h->header_size = sizeof(*h);
		h->region_base = rtr_persist.base;
		h->region_size = rtr_persist.size;
		h->source = rtr_persist.source;
		h->page_size = PAGE_SIZE;
		memcpy(h->trace_uuid, rtr_trace.uuid, sizeof(h->trace_uuid));
		strscpy(h->release, init_utsname()->release, sizeof(h->release));
		strscpy(h->version, init_utsname()->version, sizeof(h->version));
		h->armed_realtime_ns = ktime_get_real_ns();
		h->armed_mono_ns = ktime_get_ns();
	} else {
		rtr_persist_zero(l->rings_offset,
				 rtr_persist.size - l->rings_offset);
		rtr_persist_zero(l->slices_offset, l->slices_size);
	}
	h->subbuf_size = l->subbuf_size;
	h->num_subbufs = l->num_subbufs;
	h->nr_slices = l->nr_slices;
	h->slice_size = l->slice_size;
	h->counters_size = l->counters_size;
	h->state_offset = l->state_offset;
	h->state_size = l->state_size;
	h->slices_offset = l->slices_offset;
	h->slices_size = l->slices_size;
	for (i = 0; i < 2; i++) {
		h->metadata_offset[i] = l->metadata_offset[i];
		h->ksyms_offset[i] = l->ksyms_offset[i];
	}
	h->metadata_size = l->metadata_size;
	h->ksyms_size = l->ksyms_size;
	h->rings_offset = l->rings_offset;
	h->rings_size = l->rings_size;
	rtr_persist_checksum(h);

	for (i = 0; i < l->nr_slices; i++)
		rtr_persist_write_slice(l, i, -1);
	for_each_possible_cpu(cpu)
		if (rtr_persist.slice_of[cpu] >= 0)
			rtr_persist_write_slice(l, rtr_persist.slice_of[cpu],
						cpu);
	st = rtr_persist_state_at(l->state_offset);
	WRITE_ONCE(st->lifecycle, RINGTRACE_PERSIST_LIVE);
	rtr_crash_arm(st, l->nr_slices);
	rtr_persist.layout = *l;
	rtr_persist.state = RTR_PERSIST_LIVE;
	rtr_persist.damage = NULL;
	if (arm) {
		rtr_persist.armed_here = true;
		/* Zeroed: no copy is valid, the first write goes to copy 0. */
		for (i = 0; i < RTR_PERSIST_NR_BLOBS; i++) {
			rtr_persist.blob[i].gen = 0;
			rtr_persist.blob[i].newest = 1;
		}
		rtr_persist.metadata_events_gen = 0;
		rtr_persist_metadata_render();
	}
	mutex_unlock(&rtr_persist_blob_lock);
}

/* --- finding and checking the region --------------------------------- */

/* Walks "Reserved" resources: how far from the start they cover. */
static int rtr_persist_reserved_cb(struct resource *res, void *arg)
{
	u64 *covered = arg;

	if (res->start <= *covered && res->end + 1 > *covered)
		*covered = res->end + 1;
	return 0;
}

static int rtr_persist_find(void)
{
	phys_addr_t start, size;
	unsigned long pfn;
	u64 covered;
	int ret;

	if (rtr_persist_name && *rtr_persist_name) {
		if (rtr_persist_addr || rtr_persist_size) {
			pr_err("persist= and persist_addr=/persist_size= name two regions: give one\n");
			return -EINVAL;
		}
		ret = rtr_reserve_mem_find(rtr_persist_name, &start, &size);
		if (ret == -EOPNOTSUPP) {
			pr_err("persist=%s needs reserve_mem= (Linux 6.11+); on this kernel boot with memmap=SIZE$ADDR and load with persist_addr=ADDR persist_size=SIZE\n",
			       rtr_persist_name);
			return ret;
		}
		if (ret) {
			pr_err("persist=%s: no reserve_mem region of that name (boot with reserve_mem=SIZE:4096:%s)\n",
			       rtr_persist_name, rtr_persist_name);
			return ret;
		}
		rtr_persist.source = RINGTRACE_PERSIST_SRC_RESERVE_MEM;
	} else {
		if (!rtr_persist_addr && !rtr_persist_size)
			return 0;
		if (!rtr_persist_addr || !rtr_persist_size) {
			pr_err("persist_addr= and persist_size= go together\n");
			return -EINVAL;
		}
		start = rtr_persist_addr;
		size = rtr_persist_size;
		rtr_persist.source = RINGTRACE_PERSIST_SRC_MEMMAP;
	}
	if (!PAGE_ALIGNED(start) || !PAGE_ALIGNED(size) ||
	    start + size < start) {
		pr_err("persistent region %pa+%pa: start and size must be page aligned\n",
		       &start, &size);
		return -EINVAL;
	}
	if (rtr_persist.source == RINGTRACE_PERSIST_SRC_MEMMAP) {
		/* memremap() would map RAM the kernel allocates from. */
		if (region_intersects(start, size, IORESOURCE_SYSTEM_RAM,
				      IORES_DESC_NONE) != REGION_DISJOINT) {
			pr_err("persist_addr=%pa persist_size=%pa: overlaps System RAM the kernel uses; reserve it with memmap=SIZE$ADDR\n",
			       &start, &size);
			return -EINVAL;
		}
		covered = start;
		walk_iomem_res_desc(IORES_DESC_RESERVED, IORESOURCE_MEM, start,
				    start + size - 1, &covered,
				    rtr_persist_reserved_cb);
		if (covered < start + size) {
			pr_err("persist_addr=%pa persist_size=%pa: not reserved memory (a memmap=SIZE$ADDR range of /proc/iomem's \"Reserved\")\n",
			       &start, &size);
			return -EINVAL;
		}
	}
	/* The buffer files map the rings' struct pages (design D2). */
	for (pfn = PHYS_PFN(start); pfn < PHYS_PFN(start + size); pfn++) {
		if (!pfn_valid(pfn)) {
			pr_err("persistent region %pa+%pa has no struct pages: place it inside RAM's span\n",
			       &start, &size);
			return -EINVAL;
		}
	}
	rtr_persist.base = start;
	rtr_persist.size = size;
	return 1;
}

/* The first check of the image's header that fails, or NULL. */
static const char *rtr_persist_check(void)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	struct rtr_persist_layout l;
	u64 sum, stored;
	unsigned int i;
	u32 lifecycle;

	if (h->header_size != sizeof(*h))
		return "header_size";
	stored = h->checksum;
	h->checksum = 0;
	sum = xxh64(h, RINGTRACE_PERSIST_HEADER_SIZE, 0);
	h->checksum = stored;
	if (sum != stored)
		return "checksum";
	if (h->region_size != rtr_persist.size)
		return "region_size";
	if (h->region_base != rtr_persist.base)
		return "region_base";
	if (h->page_size != PAGE_SIZE)
		return "page_size";
	for (i = 0; i < ARRAY_SIZE(h->reserved); i++)
		if (h->reserved[i])
			return "reserved";
	if (h->subbuf_size < PAGE_SIZE || !is_power_of_2(h->subbuf_size) ||
	    h->subbuf_size > RINGTRACE_MAX_SUBBUF_SIZE)
		return "subbuf_size";
	if (h->num_subbufs < RINGTRACE_MIN_SUBBUFS ||
	    !is_power_of_2(h->num_subbufs) ||
	    h->num_subbufs > RINGTRACE_MAX_SUBBUFS)
		return "num_subbufs";
	if (!h->nr_slices || h->nr_slices > rtr_persist.size / PAGE_SIZE)
		return "nr_slices";
	if (rtr_persist_layout_of(&l, rtr_persist.size, h->subbuf_size,
				  h->num_subbufs, h->nr_slices))
		return "rings_size";
	if (h->slice_size != l.slice_size || h->counters_size != l.counters_size ||
	    h->state_offset != l.state_offset || h->state_size != l.state_size ||
	    h->slices_offset != l.slices_offset ||
	    h->slices_size != l.slices_size ||
	    h->metadata_offset[0] != l.metadata_offset[0] ||
	    h->metadata_offset[1] != l.metadata_offset[1] ||
	    h->metadata_size != l.metadata_size ||
	    h->ksyms_offset[0] != l.ksyms_offset[0] ||
	    h->ksyms_offset[1] != l.ksyms_offset[1] ||
	    h->ksyms_size != l.ksyms_size ||
	    h->rings_offset != l.rings_offset || h->rings_size != l.rings_size)
		return "areas";
	lifecycle = rtr_persist_state_at(h->state_offset)->lifecycle;
	if (lifecycle != RINGTRACE_PERSIST_EMPTY &&
	    lifecycle != RINGTRACE_PERSIST_LIVE &&
	    lifecycle != RINGTRACE_PERSIST_UNLOADED)
		return "lifecycle";
	return NULL;
}

/*
 * What the region holds: the state to keep it in, or NONE when nothing of
 * it is worth keeping (no magic, or an image armed but never used).
 */
static enum rtr_persist_state rtr_persist_classify(void)
{
	struct ringtrace_persist_header *h = rtr_persist_header();

	if (h->magic != RINGTRACE_PERSIST_MAGIC)
		return RTR_PERSIST_NONE;
	if (h->layout != RINGTRACE_PERSIST_LAYOUT)
		return RTR_PERSIST_FOREIGN;
	rtr_persist.damage = rtr_persist_check();
	if (rtr_persist.damage)
		return RTR_PERSIST_DAMAGED;
	if (rtr_persist_state_at(h->state_offset)->lifecycle ==
	    RINGTRACE_PERSIST_EMPTY)
		return RTR_PERSIST_NONE;
	return RTR_PERSIST_PREVIOUS;
}

static void rtr_persist_unmap(void)
{
	if (rtr_persist.va)
		memunmap(rtr_persist.va);
	if (rtr_persist.res)
		release_mem_region(rtr_persist.base, rtr_persist.size);
	kfree(rtr_persist.slice_of);
	rtr_persist.va = NULL;
	rtr_persist.res = NULL;
	rtr_persist.slice_of = NULL;
	rtr_persist.state = RTR_PERSIST_NONE;
}

/*
 * At load, before any buffer exists: 0 with no region or with the region
 * armed (rtr_trace's geometry then fitted to it) or its image kept; an
 * error, said in the log, and nothing written, if the region is unusable.
 */
int rtr_persist_init(void)
{
	struct rtr_persist_layout l;
	enum rtr_persist_state state;
	unsigned int cpu;
	int ret;

	ret = rtr_persist_find();
	if (ret <= 0)
		return ret;
	ret = rtr_persist_layout_of(&l, rtr_persist.size,
				    RTR_DEFAULT_SUBBUF_SIZE,
				    RINGTRACE_MIN_SUBBUFS,
				    num_possible_cpus());
	if (ret) {
		pr_err("persistent region of %zu bytes is too small: %u CPUs need %llu bytes at least\n",
		       rtr_persist.size, num_possible_cpus(),
		       l.rings_offset + l.rings_size);
		return ret;
	}
	rtr_persist.slice_of = kmalloc_array(nr_cpu_ids, sizeof(int),
					     GFP_KERNEL);
	if (!rtr_persist.slice_of)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		rtr_persist.slice_of[cpu] = -1;
	if (rtr_persist.source == RINGTRACE_PERSIST_SRC_MEMMAP) {
		rtr_persist.res = request_mem_region(rtr_persist.base,
						     rtr_persist.size,
						     "ringtrace persist");
		if (!rtr_persist.res) {
			pr_err("persist_addr=%pa: the range is claimed by another driver\n",
			       &rtr_persist.base);
			ret = -EBUSY;
			goto unmap;
		}
	}
	rtr_persist.va = memremap(rtr_persist.base, rtr_persist.size,
				  MEMREMAP_WB);
	if (!rtr_persist.va) {
		pr_err("cannot map the persistent region %pa+%zu\n",
		       &rtr_persist.base, rtr_persist.size);
		ret = -ENOMEM;
		goto unmap;
	}

	state = rtr_persist_classify();
	if (state != RTR_PERSIST_NONE) {
		rtr_persist.state = state;
		pr_info("persistent region %pa+%zu holds a %s image: kept until persist/release\n",
			&rtr_persist.base, rtr_persist.size,
			rtr_persist_state_name[state]);
		return 0;
	}
	/* D9: today's sub-buffers, as many as the region holds. */
	ret = rtr_persist_fit_most(&l, RTR_DEFAULT_SUBBUF_SIZE);
	if (ret)
		goto unmap;
	rtr_persist_commit(&l, true);
	rtr_trace.subbuf_size = l.subbuf_size;
	rtr_trace.num_subbufs = l.num_subbufs;
	return 0;

unmap:
	rtr_persist_unmap();
	return ret;
}

/*
 * A load that failed after rtr_persist_init(), its buffers freed: a
 * region it armed holds nothing of use (EMPTY: the next load re-arms it).
 */
void rtr_persist_init_undo(void)
{
	const struct rtr_persist_layout *l = rtr_persist_current();

	if (l && rtr_persist.armed_here)
		WRITE_ONCE(rtr_persist_state_at(l->state_offset)->lifecycle,
			   RINGTRACE_PERSIST_EMPTY);
	rtr_persist_unmap();
}

/*
 * At load, once nothing can fail: the crash path's hooks (the die
 * notifier alone without a region: the live oops event).  At unload,
 * before anything is freed: without them.
 */
void rtr_persist_hooks_init(void)
{
	rtr_crash_init(rtr_persist.va, rtr_persist.size, rtr_persist.slice_of);
}

void rtr_persist_hooks_exit(void)
{
	rtr_crash_exit();
}

/* At unload, the buffers flushed and freed: the next load finds an image. */
void rtr_persist_exit(void)
{
	const struct rtr_persist_layout *l = rtr_persist_current();

	if (l)
		WRITE_ONCE(rtr_persist_state_at(l->state_offset)->lifecycle,
			   RINGTRACE_PERSIST_UNLOADED);
	rtr_persist_unmap();
}

/* --- persist/info, persist/image, persist/release ---------------------- */

static bool rtr_persist_kept(void)
{
	return rtr_persist.state == RTR_PERSIST_PREVIOUS ||
	       rtr_persist.state == RTR_PERSIST_DAMAGED ||
	       rtr_persist.state == RTR_PERSIST_FOREIGN;
}

static const char *rtr_persist_source_name(void)
{
	return rtr_persist.source == RINGTRACE_PERSIST_SRC_RESERVE_MEM ?
	       "reserve_mem" : "memmap";
}

static const char *rtr_persist_lifecycle_name(u32 lifecycle)
{
	switch (lifecycle) {
	case RINGTRACE_PERSIST_EMPTY:
		return "empty";
	case RINGTRACE_PERSIST_LIVE:
		return "live";
	case RINGTRACE_PERSIST_UNLOADED:
		return "unloaded";
	}
	return "unknown";
}

/* Identity, and the newest valid metadata and ksyms copies. */
static void rtr_persist_info_identity(struct seq_file *m,
				      const struct ringtrace_persist_header *h)
{
	static const u8 unset[sizeof(h->boot_id)];
	unsigned int kind;
	u64 gen, len;

	if (memcmp(h->boot_id, unset, sizeof(unset)))
		seq_printf(m, "boot_id %pUb\n", h->boot_id);
	else
		seq_puts(m, "boot_id unset\n");
	if (h->build_id_len && h->build_id_len <= sizeof(h->build_id))
		seq_printf(m, "build_id %*phN\n", (int)h->build_id_len,
			   h->build_id);
	else
		seq_puts(m, "build_id unset\n");
	mutex_lock(&rtr_persist_blob_lock);
	for (kind = 0; kind < RTR_PERSIST_NR_BLOBS; kind++) {
		len = 0;
		gen = rtr_persist_blob_newest(kind, &len);
		seq_printf(m, "%s gen %llu bytes %llu\n",
			   rtr_persist_blob_name[kind], gen, len);
	}
	mutex_unlock(&rtr_persist_blob_lock);
}

static int rtr_persist_info_show(struct seq_file *m, void *unused)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	struct ringtrace_persist_slice *s;
	unsigned int i;

	/* A CPU's first slice is written under the hotplug lock alone. */
	cpus_read_lock();
	mutex_lock(&rtr_control_lock);
	seq_printf(m, "state %s\n", rtr_persist_state_name[rtr_persist.state]);
	seq_printf(m, "source %s", rtr_persist_source_name());
	if (rtr_persist.source == RINGTRACE_PERSIST_SRC_RESERVE_MEM)
		seq_printf(m, " %s", rtr_persist_name);
	seq_printf(m, "\nbase %pa\nsize %zu\n", &rtr_persist.base,
		   rtr_persist.size);
	seq_printf(m, "layout %u\nuuid %pUb\n", h->layout, h->trace_uuid);
	if (rtr_persist.state == RTR_PERSIST_DAMAGED)
		seq_printf(m, "damaged %s\n", rtr_persist.damage);
	if (rtr_persist.state != RTR_PERSIST_LIVE &&
	    rtr_persist.state != RTR_PERSIST_PREVIOUS)
		goto unlock;
	seq_printf(m, "lifecycle %s\n", rtr_persist_lifecycle_name(
		   rtr_persist_state_at(h->state_offset)->lifecycle));
	seq_printf(m, "release %.*s\n", (int)sizeof(h->release), h->release);
	seq_printf(m, "armed_realtime_ns %llu\n", h->armed_realtime_ns);
	rtr_persist_info_identity(m, h);
	seq_printf(m, "subbuf_size %llu\nnum_subbufs %u\nslices %u\n",
		   h->subbuf_size, h->num_subbufs, h->nr_slices);
	s = rtr_persist_slices(h->slices_offset);
	for (i = 0; i < h->nr_slices; i++, s++) {
		seq_printf(m, "slice %u", i);
		if (s->flags & RINGTRACE_PERSIST_SLICE_USED)
			seq_printf(m, " cpu %u", s->cpu);
		else
			seq_puts(m, " unused");
		seq_printf(m, " counters %llu ring %llu size %llu\n",
			   s->counters_offset, s->ring_offset, s->ring_size);
	}
unlock:
	mutex_unlock(&rtr_control_lock);
	cpus_read_unlock();
	return 0;
}

static int rtr_persist_info_open(struct inode *inode, struct file *file)
{
	return rtr_single_open(inode, file, rtr_persist_info_show);
}

static const struct file_operations rtr_persist_info_fops = {
	.owner = THIS_MODULE,
	.open = rtr_persist_info_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* The kept image's bytes (pread); ENODATA while no image is kept. */
static ssize_t rtr_persist_image_read(struct file *file, char __user *ubuf,
				      size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&rtr_control_lock);
	ret = -ENODATA;
	if (!rtr_persist_kept())
		goto unlock;
	ret = 0;
	if (*ppos < 0 || *ppos >= rtr_persist.size)
		goto unlock;
	count = min_t(size_t, count, rtr_persist.size - *ppos);
	ret = -EFAULT;
	if (copy_to_user(ubuf, rtr_persist_at(*ppos), count))
		goto unlock;
	*ppos += count;
	ret = count;
unlock:
	mutex_unlock(&rtr_control_lock);
	return ret;
}

static int rtr_persist_open(struct inode *inode, struct file *file)
{
	return rtr_file_open() ?: simple_open(inode, file);
}

static const struct file_operations rtr_persist_image_fops = {
	.owner = THIS_MODULE,
	.open = rtr_persist_open,
	.read = rtr_persist_image_read,
	.llseek = default_llseek,
};

/*
 * Release the kept image whose trace uuid is written: zero the region,
 * arm it, and move the rings into it -- a geometry change (EBUSY while
 * tracing is on, a buffer file is open or a pipe holds a buffer's pages).
 * The uuid makes a stale release unable to clear a newer image.
 */
static int rtr_persist_release_image(const char *word)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	struct rtr_persist_layout l;
	uuid_t uuid;
	int ret;

	lockdep_assert_held(&rtr_control_lock);
	if (uuid_parse(word, &uuid))
		return -EINVAL;
	if (!rtr_persist_kept())
		return -ENODATA;
	if (memcmp(&uuid, h->trace_uuid, sizeof(uuid)))
		return -EINVAL;
	if (rtr_trace.tracing_on || !rtr_buffers_idle())
		return -EBUSY;
	ret = rtr_persist_fit_most(&l, rtr_trace.subbuf_size);
	if (ret)
		return ret;
	return rtr_replace_buffers(l.subbuf_size, l.num_subbufs, &l, true);
}

static ssize_t rtr_persist_release_write(struct file *file,
					 const char __user *ubuf, size_t count,
					 loff_t *ppos)
{
	char word[UUID_STRING_LEN + 2];
	int ret;

	ret = rtr_read_word(ubuf, count, word, sizeof(word));
	if (ret)
		return ret;
	/* Lock order: see module/main.c. */
	cpus_read_lock();
	mutex_lock(&rtr_control_lock);
	ret = rtr_persist_release_image(word);
	mutex_unlock(&rtr_control_lock);
	cpus_read_unlock();
	return ret ?: count;
}

static const struct file_operations rtr_persist_release_fops = {
	.owner = THIS_MODULE,
	.open = rtr_persist_open,
	.write = rtr_persist_release_write,
	.llseek = noop_llseek,
};

/*
 * persist/identity: "boot_id=UUID build_id=HEX", what the kernel cannot
 * read of itself (the boot id is random's, the build id is in no export),
 * into the live region's header.  Anything else, or a kept image: the
 * header is left as it was.
 */
static int rtr_persist_set_identity(char *text)
{
	struct ringtrace_persist_header *h = rtr_persist_header();
	u8 build_id[RINGTRACE_PERSIST_BUILD_ID_MAX];
	bool have_boot_id = false, have_build_id = false;
	size_t build_id_len = 0;
	uuid_t boot_id;
	char *tok, *val;

	lockdep_assert_held(&rtr_control_lock);
	while ((tok = strsep(&text, " \t\n"))) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(tok, "boot_id") && !have_boot_id) {
			/* uuid_parse() reads 36 characters, not the end. */
			if (strlen(val) != UUID_STRING_LEN ||
			    uuid_parse(val, &boot_id))
				return -EINVAL;
			have_boot_id = true;
		} else if (!strcmp(tok, "build_id") && !have_build_id) {
			build_id_len = strlen(val) / 2;
			if (!build_id_len || strlen(val) % 2 ||
			    build_id_len > sizeof(build_id) ||
			    hex2bin(build_id, val, build_id_len))
				return -EINVAL;
			have_build_id = true;
		} else {
			return -EINVAL;
		}
	}
	if (!have_boot_id || !have_build_id)
		return -EINVAL;
	if (rtr_persist.state != RTR_PERSIST_LIVE)
		return -EBUSY;
	memset(h->build_id, 0, sizeof(h->build_id));
	memcpy(h->build_id, build_id, build_id_len);
	h->build_id_len = build_id_len;
	memcpy(h->boot_id, &boot_id, sizeof(h->boot_id));
	rtr_persist_checksum(h);
	return 0;
}

/* "boot_id=" 36 " build_id=" 40, a newline: 96 bytes; room to spare. */
#define RTR_PERSIST_IDENTITY_MAX	128

static ssize_t rtr_persist_identity_write(struct file *file,
					  const char __user *ubuf,
					  size_t count, loff_t *ppos)
{
	char *text;
	int ret;

	if (!count || count > RTR_PERSIST_IDENTITY_MAX)
		return -EINVAL;
	text = memdup_user_nul(ubuf, count);
	if (IS_ERR(text))
		return PTR_ERR(text);
	mutex_lock(&rtr_control_lock);
	ret = rtr_persist_set_identity(text);
	mutex_unlock(&rtr_control_lock);
	kfree(text);
	return ret ?: count;
}

static const struct file_operations rtr_persist_identity_fops = {
	.owner = THIS_MODULE,
	.open = rtr_persist_open,
	.write = rtr_persist_identity_write,
	.llseek = noop_llseek,
};

/*
 * persist/ksyms: one write() is the whole .ringtrace-ksyms.zst (a zstd
 * frame), copied into the inactive ksyms copy and made the newest.  Not a
 * zstd frame: EINVAL; over the copy: EFBIG; a kept image: EBUSY -- each
 * with the newest copy as it was.  A fault half way leaves the copy being
 * written invalid, the newest one untouched.
 */
static ssize_t rtr_persist_ksyms_write(struct file *file,
				       const char __user *ubuf, size_t count,
				       loff_t *ppos)
{
	static const u8 zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	struct ringtrace_persist_blob *b;
	u8 magic[sizeof(zstd_magic)];
	size_t room;
	ssize_t ret;

	if (count < sizeof(magic))
		return -EINVAL;
	if (copy_from_user(magic, ubuf, sizeof(magic)))
		return -EFAULT;
	if (memcmp(magic, zstd_magic, sizeof(magic)))
		return -EINVAL;
	mutex_lock(&rtr_persist_blob_lock);
	ret = -EBUSY;
	if (rtr_persist.state != RTR_PERSIST_LIVE)
		goto unlock;
	ret = -EFBIG;
	if (count > rtr_persist_blob_room(RTR_PERSIST_KSYMS))
		goto unlock;
	b = rtr_persist_blob_begin(RTR_PERSIST_KSYMS, &room);
	ret = -EFAULT;
	if (copy_from_user(b + 1, ubuf, count))
		goto unlock;
	rtr_persist_blob_end(RTR_PERSIST_KSYMS, b, count);
	ret = count;
unlock:
	mutex_unlock(&rtr_persist_blob_lock);
	return ret;
}

static const struct file_operations rtr_persist_ksyms_fops = {
	.owner = THIS_MODULE,
	.open = rtr_persist_open,
	.write = rtr_persist_ksyms_write,
	.llseek = noop_llseek,
};

/* persist/: only with a region. */
int rtr_persist_files_init(void)
{
	struct dentry *dir;

	if (!rtr_persist.va)
		return 0;
	dir = rtr_files_mkdir(rtr_dir, "persist");
	return rtr_file_create(dir, "persist/info", 0400, NULL,
			       &rtr_persist_info_fops) ?:
	       rtr_file_create(dir, "persist/image", 0400, NULL,
			       &rtr_persist_image_fops) ?:
	       rtr_file_create(dir, "persist/release", 0200, NULL,
			       &rtr_persist_release_fops) ?:
	       rtr_file_create(dir, "persist/identity", 0200, NULL,
			       &rtr_persist_identity_fops) ?:
	       rtr_file_create(dir, "persist/ksyms", 0200, NULL,
			       &rtr_persist_ksyms_fops);
}
