/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Protocol between ringtrace_selftest.ko and the userspace selftests: the
 * debugfs files, the event layouts and the functions that make every record
 * checkable on its own.  Included by the kernel module and by userspace, so
 * it uses only <linux/types.h> and plain C.
 *
 * debugfs: /sys/kernel/debug/ringtrace_selftest/
 *
 *   run       write "<seconds> <max_per_producer> <flags> [<burst>]": start the
 *             writers, block until every producer has made max_per_producer
 *             attempts (0 = no limit) or <seconds> passed, stop them, return.
 *             <burst> (default 2, at most 4096) is the number of records
 *             each hrtimer and irq_work callback writes back to back.
 *             -EBUSY while another run is active; a fatal signal stops the
 *             run early (-EINTR).  read: parameters and state of the last run.
 *   result    read: "producer=<p> cpu=<c> kind=<k> attempted=<n>
 *             accepted=<n> nested=<n>" per producer of the last run; -EBUSY
 *             while a run is active.
 *   events    read: "<event name> <id>" per registered event.
 *   nest      write "<token>": on the calling CPU with interrupts off,
 *             reserve rt_selftest_nest events nested RINGTRACE_MAX_NESTING + 1
 *             deep without committing, then commit the accepted ones in
 *             reverse order.  read: "cpu=<c> max_nesting=<n> accepted=<n>
 *             refused=<n>" of the last write.
 *   oversize  write "<n>": on the calling CPU with interrupts off, try to
 *             write one rt_selftest_blob with n data bytes.  read: "cpu=<c>
 *             len=<n> accepted=<0|1>" of the last write.
 *
 *   dyn       write "register a" / "register b": register rt_selftest_dyn
 *             with layout a or b (one at a time); "write <n>": write n of
 *             it from the calling CPU, seq counting on across both;
 *             "unregister".  read: "registered=0", or "registered=1
 *             layout=<a|b> id=<id> seq=<next seq>".
 *   stale     write "<n>": on the calling CPU with interrupts off, an
 *             outer rt_selftest_blob writer reads the offset at a
 *             sub-buffer boundary, nested blobs of n data bytes wrap the
 *             whole ring and open the packet after it, then the outer
 *             writer takes the slow path with the offset it read.
 *             -EAGAIN unless tracing is on and the buffer is at a
 *             boundary.  read: "cpu=<c> first=<nested blobs in the first
 *             packet> nested=<n> accepted=<0|1>" of the last write.
 *   online_burst
 *             write "<cpu> <events> <len>": wait (up to 60 s) for offline
 *             <cpu> to come online, then write <events> blobs of <len>
 *             bytes there from an IPI at once.  read: "cpu=<c> ran=<0|1>
 *             active=<cpu_active() in the IPI> accepted=<n>".
 *   floor     read: "cpu=<c> last_ts=<ns>" per CPU with a buffer: the
 *             clock floor the next event of that CPU is dated against.
 *
 * Producers: each online CPU has one producer of each kind below; its id is
 * cpu * RTST_NR_KINDS + kind.  Each numbers its attempts (calls of
 * ringtrace_reserve()/ringtrace_write()) from 0 in the record's seq field,
 * whether or not the attempt was accepted, so a reader sees every refused or
 * lost event as a gap in the sequence.
 */
#ifndef _RINGTRACE_SELFTEST_H
#define _RINGTRACE_SELFTEST_H

#include <linux/types.h>

#define RTST_DEBUGFS_DIR	"ringtrace_selftest"

/* Producer kinds: where the writer runs, and the run flag that enables it. */
#define RTST_KIND_TASK		0	/* kthread bound to the CPU */
#define RTST_KIND_SOFTIRQ	1	/* pinned timer_list */
#define RTST_KIND_HRTIMER	2	/* pinned hard hrtimer */
#define RTST_KIND_IRQ_WORK	3	/* irq_work queued by the hrtimer */
#define RTST_KIND_IPI		4	/* smp_call_function_many() target */
#define RTST_NR_KINDS		5

#define RTST_FLAG(kind)		(1U << (kind))
#define RTST_FLAGS_ALL		((1U << RTST_NR_KINDS) - 1)

/*
 * Context a record was written in, as seen by the writer: one of the
 * first four, plus RTST_CTX_IRQS_OFF if interrupts were disabled.  An IPI
 * function normally runs in hard irq; when its target CPU is idle and
 * polling, the kernel skips the interrupt and the idle task runs it with
 * interrupts off (TASK | IRQS_OFF).
 */
#define RTST_CTX_TASK		0
#define RTST_CTX_SOFTIRQ	1
#define RTST_CTX_HARDIRQ	2
#define RTST_CTX_NMI		3
#define RTST_CTX_IRQS_OFF	0x10

/*
 * Event rt_selftest_record, byte for byte (little endian, no padding):
 *
 *   u32 producer; u8 context; u8 kind; u16 cpu; u64 seq;
 *   u16 len; u8 payload[len]; u32 checksum;
 *
 * checksum is rtst_checksum() over every byte before it.
 */
#define RTST_RECORD_NAME	"rt_selftest_record"
#define RTST_RECORD_FIELDS \
	"uint32_t producer; uint8_t context; uint8_t kind; uint16_t cpu; " \
	"uint64_t seq; uint16_t len; uint8_t payload[len]; uint32_t checksum;"
#define RTST_RECORD_HEAD	18	/* bytes before payload */
#define RTST_RECORD_FIXED	(RTST_RECORD_HEAD + 4)
#define RTST_OFF_PRODUCER	0
#define RTST_OFF_CONTEXT	4
#define RTST_OFF_KIND		5
#define RTST_OFF_CPU		6
#define RTST_OFF_SEQ		8
#define RTST_OFF_LEN		16

/* Event rt_selftest_nest: u32 level; u64 token. */
#define RTST_NEST_NAME		"rt_selftest_nest"
#define RTST_NEST_FIELDS	"uint32_t level; uint64_t token;"
#define RTST_NEST_SIZE		12

/* Event rt_selftest_blob: u32 len; u8 data[len], data[i] == rtst_blob_byte(i). */
#define RTST_BLOB_NAME		"rt_selftest_blob"
#define RTST_BLOB_FIELDS	"uint32_t len; uint8_t data[len];"

/*
 * Event rt_selftest_dyn, under one name with two layouts (little endian):
 *   a: u32 seq; u32 magic (RTST_DYN_A_MAGIC)
 *   b: u64 seq; u8 tag[4] ("dynB")
 * Read with the wrong layout, either one gives itself away.
 */
#define RTST_DYN_NAME		"rt_selftest_dyn"
#define RTST_DYN_A_FIELDS	"uint32_t seq; uint32_t magic;"
#define RTST_DYN_B_FIELDS	"uint64_t seq; utf8_t tag[4];"
#define RTST_DYN_A_MAGIC	0xda7aa0a0U
#define RTST_DYN_B_TAG		"dynB"

/* __attribute__((packed)), not __packed: userspace includes this too. */
struct rtst_dyn_a {
	__le32 seq;
	__le32 magic;
} __attribute__((packed));

struct rtst_dyn_b {
	__le64 seq;
	__u8 tag[4];
} __attribute__((packed));

/* Largest payload per kind: interrupt writers stay short, as real ones do. */
static inline unsigned int rtst_max_payload(unsigned int kind)
{
	return kind == RTST_KIND_TASK ? 240 : 48;
}

/* splitmix64's finaliser (also rt_fuzz's random numbers). */
static inline __u64 rtst_mix(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Every (producer, seq) gets its own length and bytes. */
static inline __u64 rtst_hash(__u32 producer, __u64 seq)
{
	return rtst_mix(seq * 0x9e3779b97f4a7c15ULL + ((__u64)producer << 40) +
			producer);
}

/* Length of the payload of (producer, seq), from h = rtst_hash(producer, seq). */
static inline unsigned int rtst_payload_len(__u32 producer, __u64 h)
{
	return (unsigned int)(h % (rtst_max_payload(producer % RTST_NR_KINDS) + 1));
}

/* payload[i] == rtst_payload_byte(h, i) */
static inline __u8 rtst_payload_byte(__u64 h, unsigned int i)
{
	return (__u8)((h >> 32) + i * 13);
}

static inline __u8 rtst_blob_byte(unsigned int i)
{
	return (__u8)(i * 7 + 3);
}

/* 32-bit FNV-1a: cheap enough for hard interrupt context. */
#define RTST_FNV_INIT		0x811c9dc5U

static inline __u32 rtst_checksum_update(__u32 h, const __u8 *p, unsigned int n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x01000193U;
	}
	return h;
}

static inline __u32 rtst_checksum(const void *p, unsigned int n)
{
	return rtst_checksum_update(RTST_FNV_INIT, p, n);
}

#endif /* _RINGTRACE_SELFTEST_H */
