/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ringtrace persistent region: the byte layout of the memory that
 * ringtrace.ko keeps its per-CPU rings in when it is loaded with
 * persist=NAME (a reserve_mem= region) or persist_addr=/persist_size= (a
 * memmap= range), so that the rings outlive the module and, where the
 * memory does, the kernel.  What persist/image reads is this layout, byte
 * for byte; the readers check it before they believe any of it.
 *
 * Every integer is little endian; every offset is in bytes from the start
 * of the region; every area is page aligned.  Reserved fields are zero
 * when written and must be zero when read.
 *
 *   0                  struct ringtrace_persist_header (one page)
 *   state_offset       struct ringtrace_persist_state, then the crash
 *                      path's entries (state_size bytes)
 *   slices_offset      nr_slices x struct ringtrace_persist_slice
 *   metadata_offset[2] two copies of the trace's TSDL metadata, each a
 *                      struct ringtrace_persist_blob and its bytes
 *   ksyms_offset[2]    two copies of .ringtrace-ksyms.zst (the same)
 *   rings_offset       nr_slices slices of slice_size bytes, each:
 *                        counters  num_subbufs x ringtrace_persist_slot,
 *                                  then x __u64 trailers,
 *                                  then x ringtrace_persist_slot_info
 *                                  (page rounded)
 *                        ring      the CPU buffer file's mapping: its
 *                                  struct ringtrace_meta page, then
 *                                  num_subbufs sub-buffers of subbuf_size
 *                                  bytes (CTF packets, as the buffer file
 *                                  hands them out)
 *
 * The header is written in process context only (arming, a geometry
 * change, a release, persist/identity) and carries an xxh64 of itself; the state area is
 * the one the crash path writes.  A header whose magic is not
 * RINGTRACE_PERSIST_MAGIC is no image (a cold boot leaves zeros or noise).
 */
#ifndef _UAPI_LINUX_RINGTRACE_PERSIST_H
#define _UAPI_LINUX_RINGTRACE_PERSIST_H

#include <linux/types.h>

/* "RTPERSIS", as the first 8 bytes of the region (little endian). */
#define RINGTRACE_PERSIST_MAGIC		0x5349535245505452ULL
#define RINGTRACE_PERSIST_LAYOUT	1

#define RINGTRACE_PERSIST_HEADER_SIZE	4096	/* the header's page */
#define RINGTRACE_PERSIST_UTS_LEN	72	/* utsname's 65, padded */
#define RINGTRACE_PERSIST_BUILD_ID_MAX	20

/* header.source: where the module found the region. */
#define RINGTRACE_PERSIST_SRC_RESERVE_MEM	1	/* persist=NAME */
#define RINGTRACE_PERSIST_SRC_MEMMAP		2	/* persist_addr= */

/* state.lifecycle */
#define RINGTRACE_PERSIST_EMPTY		0	/* zeroed, never armed */
#define RINGTRACE_PERSIST_LIVE		1	/* a loaded module writes it */
#define RINGTRACE_PERSIST_UNLOADED	2	/* the module was removed */

/*
 * The region's header.  @checksum is xxh64(seed 0) of the
 * RINGTRACE_PERSIST_HEADER_SIZE bytes of the header page with @checksum
 * itself zero.
 */
struct ringtrace_persist_header {
	__u64 magic;			/* RINGTRACE_PERSIST_MAGIC */
	__u32 layout;			/* RINGTRACE_PERSIST_LAYOUT */
	__u32 header_size;		/* sizeof(struct ...header) */
	__u64 region_base;		/* physical address when armed */
	__u64 region_size;		/* bytes */
	__u32 source;			/* RINGTRACE_PERSIST_SRC_* */
	__u32 page_size;		/* the kernel's PAGE_SIZE */
	__u8 trace_uuid[16];		/* the packets' uuid */
	/* Who wrote it: init_utsname()'s release and version, NUL padded. */
	char release[RINGTRACE_PERSIST_UTS_LEN];
	char version[RINGTRACE_PERSIST_UTS_LEN];
	/* Filled by userspace (the kernel cannot read them); zero until. */
	__u8 build_id[RINGTRACE_PERSIST_BUILD_ID_MAX];
	__u32 build_id_len;
	__u8 boot_id[16];
	__u64 armed_realtime_ns;	/* CLOCK_REALTIME at arming */
	__u64 armed_mono_ns;		/* CLOCK_MONOTONIC at arming */

	/* Geometry of the rings, all slices alike. */
	__u64 subbuf_size;		/* bytes, power of two */
	__u32 num_subbufs;		/* power of two */
	__u32 nr_slices;		/* slices carved (possible CPUs) */
	__u64 slice_size;		/* bytes of one slice, page aligned */
	__u64 counters_size;		/* bytes of a slice's counters */

	/* Areas: offset and size of each, page aligned, inside the region. */
	__u64 state_offset;
	__u64 state_size;
	__u64 slices_offset;
	__u64 slices_size;
	__u64 metadata_offset[2];
	__u64 metadata_size;		/* of each copy */
	__u64 ksyms_offset[2];
	__u64 ksyms_size;		/* of each copy */
	__u64 rings_offset;		/* slice 0 */
	__u64 rings_size;		/* nr_slices * slice_size */

	__u64 reserved[16];		/* zero */
	__u64 checksum;			/* xxh64 of the page, this zero */
};
#define RINGTRACE_PERSIST_HEADER_SIZE_VER1	520

/*
 * The mutable state, at state_offset: @lifecycle, written in process
 * context at arming, unload and release; the rest by the crash path of a
 * dying kernel (module/crash.c), on whichever CPU hit it, with no lock:
 *
 *   state_offset + 0                          this struct
 *   state_offset + RINGTRACE_PERSIST_CRASH_OFFSET
 *                                             crash[RINGTRACE_PERSIST_CRASH_MAX]
 *   state_offset + RINGTRACE_PERSIST_SNAP_OFFSET
 *                                             snap[nr_slices], by slice index
 *
 * @crash_claimed counts the hooks that ran (a hook claims entry
 * crash_claimed - 1; past the last entry it is only counted), so two CPUs
 * oopsing at once write different entries.  A reader believes an entry
 * whose @valid is RINGTRACE_PERSIST_CRASH_VALID and whose @checksum
 * matches; anything else in it is a hook cut short.
 */
struct ringtrace_persist_state {
	__u32 lifecycle;		/* RINGTRACE_PERSIST_{EMPTY,LIVE,UNLOADED} */
	__u32 crash_claimed;		/* crash hooks run (entries claimed) */
	__u32 terminal;			/* of them PANIC, EMERG, SHUTDOWN */
	__u32 reserved0;		/* zero */
	__u64 reserved[6];		/* zero */
};

#define RINGTRACE_PERSIST_CRASH_OFFSET	256
#define RINGTRACE_PERSIST_CRASH_MAX	8
#define RINGTRACE_PERSIST_CRASH_VALID	0x48534152	/* "RASH" */
#define RINGTRACE_PERSIST_CRASH_MSG	1024
#define RINGTRACE_PERSIST_CRASH_IPS	64
/* The snapshots, after the 8 entries; 128 bytes each. */
#define RINGTRACE_PERSIST_SNAP_OFFSET	16384

/* crash.reason */
#define RINGTRACE_PERSIST_PANIC		1	/* panic(): the notifier */
#define RINGTRACE_PERSIST_OOPS		2	/* die(): DIE_OOPS */
#define RINGTRACE_PERSIST_EMERG_RESTART	3	/* emergency_restart() (sysrq b) */
#define RINGTRACE_PERSIST_SHUTDOWN	4	/* reboot, halt, power off */

/* crash.flags */
#define RINGTRACE_PERSIST_CRASH_NMI	1U	/* the hook ran in NMI context */
#define RINGTRACE_PERSIST_CRASH_IRQ	2U	/* in hard interrupt context */
/*
 * OOPS only: the same kernel_panic event (reason oops, this entry's
 * message, cpu, tid, pid, comm, ip and stack) went into the CPU's ring
 * too, through the writer, at the oops's place in time: a recovery leaves
 * it there and appends nothing for this entry.
 */
#define RINGTRACE_PERSIST_CRASH_LIVE	4U

/*
 * One crash entry.  @checksum is xxh64(seed 0) of the entry with @valid
 * and @checksum zero; @valid is written last.
 */
struct ringtrace_persist_crash {
	__u32 valid;			/* RINGTRACE_PERSIST_CRASH_VALID */
	__u32 reason;			/* RINGTRACE_PERSIST_{PANIC,...} */
	__u32 flags;			/* RINGTRACE_PERSIST_CRASH_* */
	__u32 cpu;			/* the CPU that ran the hook */
	__u64 mono_ns;			/* CLOCK_MONOTONIC (the packets' clock) */
	__u64 ip;			/* faulting instruction (OOPS), else 0 */
	__s32 tid;			/* current's, on that CPU */
	__s32 pid;
	char comm[16];			/* NUL padded */
	__u32 depth;			/* ips[] used */
	__u32 reserved0;		/* zero */
	__u64 ips[RINGTRACE_PERSIST_CRASH_IPS];	/* the hook's kernel stack */
	char message[RINGTRACE_PERSIST_CRASH_MSG];	/* NUL terminated */
	__u64 reserved[4];		/* zero */
	__u64 checksum;
};
#define RINGTRACE_PERSIST_CRASH_SIZE	1640

/*
 * One slice's writer state as the crash path found it (the writers'
 * counters not in the slice: they live in struct rtr_buffer).  A hint, not
 * the truth: a CPU that was not stopped may have written on; the slot
 * counters are what a reader trusts.  Rewritten by every hook.
 */
struct ringtrace_persist_snap {
	__u32 valid;			/* 1: taken */
	__u32 cpu;
	__u64 offset;			/* reserve position (w.offset) */
	__u64 nesting;			/* reservations open on the CPU */
	__u64 last_ts;			/* the writers' clock floor */
	__u64 consumed;			/* the consumer's position */
	__u64 lost_full;
	__u64 lost_held;
	__u64 lost_nested;
	__u64 lost_too_big;
	__u64 lost_overrun;
	__u64 lost_reported;
	__u64 delivered;
	__u64 reserved[4];		/* zero */
};
#define RINGTRACE_PERSIST_SNAP_SIZE	128

/* One slice: a CPU's ring, at rings_offset + index * slice_size. */
struct ringtrace_persist_slice {
	__u32 cpu;			/* valid when RINGTRACE_PERSIST_SLICE_USED */
	__u32 flags;			/* RINGTRACE_PERSIST_SLICE_* */
	__u64 counters_offset;		/* region offset of the slot counters */
	__u64 ring_offset;		/* region offset of its meta page */
	__u64 ring_size;		/* meta page + num_subbufs * subbuf_size */
};
#define RINGTRACE_PERSIST_SLICE_USED	1U	/* a CPU's buffer lives here */

/*
 * A slice's counters: the writers' own, used in place (the module checks
 * at build time that its counters have exactly these sizes).  Generation
 * g of slot i is complete when commit == (g + 1) * subbuf_size.
 */
struct ringtrace_persist_slot {
	__u64 commit;			/* bytes committed to the slot, ever */
	__u64 events;			/* events committed to it, ever */
};

struct ringtrace_persist_slot_info {
	__u64 discarded;		/* cumulative lost count at close */
	__u64 retired;			/* slot events at the last retirement */
	__u64 retired_trailers;		/* slot trailers at the same */
};

/*
 * A metadata or ksyms copy (metadata_size or ksyms_size bytes at
 * metadata_offset[i] or ksyms_offset[i]): this header, then @len bytes --
 * the TSDL text (no NUL), or .ringtrace-ksyms.zst as ringtraced writes it.
 *
 * A copy is valid when @gen != 0, @reserved == 0, @len <= the copy's size
 * minus sizeof(this), and @checksum == xxh64(seed 0) of the @len bytes.
 * The writer writes the copy that does not hold the newest valid
 * generation: bytes, len, checksum, then gen = newest + 1 last, so a write
 * cut short leaves the other copy the newest valid one.  A reader takes
 * the valid copy with the highest @gen; neither valid: none was written
 * (gen 0 in both), or both are damaged.
 */
struct ringtrace_persist_blob {
	__u64 gen;			/* 1, 2, ...; 0: never written */
	__u64 len;			/* bytes that follow */
	__u64 checksum;			/* xxh64(seed 0) of those bytes */
	__u64 reserved;			/* zero */
};

/*
 * Bytes of each of the two metadata copies and of each of the two ksyms
 * copies, their blob headers included.  With them, the region's fixed
 * areas take about 2.6 MiB; the rest is slices.  A region refused as too small says what it needs.
 */
#define RINGTRACE_PERSIST_METADATA_SIZE	(256U << 10)
#define RINGTRACE_PERSIST_KSYMS_SIZE	(1U << 20)

#endif /* _UAPI_LINUX_RINGTRACE_PERSIST_H */
