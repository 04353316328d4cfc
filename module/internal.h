/* SPDX-License-Identifier: GPL-2.0 */
/* Declarations shared by the files of ringtrace.ko; not an API. */
#ifndef _RINGTRACE_INTERNAL_H
#define _RINGTRACE_INTERNAL_H

#include <linux/mutex.h>
#include <linux/ringtrace.h>
#include <linux/seq_file.h>
#include <linux/uuid.h>

/*
 * 1 MiB per CPU in 16 packets: a packet reaches the consumer after 64 KiB,
 * and while the consumer holds one the writers still have 15/16 of the
 * ring (3/4 with 4 x 256 KiB, the default before): more room for a
 * consumer that falls behind for a moment, for ~0.5 ns per event of
 * sub-buffer switches (Documentation/ringtrace/benchmarks.rst).
 */
#define RTR_DEFAULT_SUBBUF_SIZE	(64UL << 10)
#define RTR_DEFAULT_NUM_SUBBUFS	16
#define RTR_POS_HELD		((unsigned long)RINGTRACE_POS_HELD)

/* main.c: global state, changed only under rtr_control_lock. */
struct rtr_trace_state {
	unsigned long subbuf_size;
	unsigned int num_subbufs;
	bool overwrite;
	bool tracing_on;
	unsigned int open_buffers;	/* cpu buffer files open */
	u8 uuid[UUID_SIZE];		/* this trace's uuid */
};

extern struct rtr_trace_state rtr_trace;
extern struct mutex rtr_control_lock;

int rtr_set_tracing(bool on);
int rtr_set_mode(bool overwrite);
int rtr_set_geometry(unsigned long subbuf_size, unsigned int num_subbufs);
int rtr_clear(void);

/* ring.c: one CPU's buffer. */
struct ringtrace_buffer *rtr_buffer_alloc(unsigned int cpu,
					 unsigned long subbuf_size,
					 unsigned int num_subbufs,
					 bool overwrite);
void rtr_buffer_free(struct ringtrace_buffer *buf);
void rtr_buffer_flush_local(struct ringtrace_buffer *buf);
void rtr_buffer_flush(struct ringtrace_buffer *buf);
int rtr_buffer_get(struct ringtrace_buffer *buf, struct ringtrace_subbuf *sb);
int rtr_buffer_put(struct ringtrace_buffer *buf, u64 pos);
void rtr_buffer_unhold(struct ringtrace_buffer *buf);
bool rtr_buffer_ready(struct ringtrace_buffer *buf);
bool rtr_buffer_drained(struct ringtrace_buffer *buf);
void rtr_buffer_stats(struct ringtrace_buffer *buf, struct ringtrace_stats *st);
void rtr_buffer_positions(struct ringtrace_buffer *buf,
			 struct ringtrace_positions *p);

/* ctf.c: event registry and TSDL metadata. */
int rtr_events_init(void);
void rtr_events_exit(void);
int rtr_metadata_show(struct seq_file *m, void *unused);
extern struct ringtrace_event rtr_marker_event;

/* buffer_file.c and control.c: debugfs. */
int rtr_debugfs_init(void);
void rtr_debugfs_exit(void);
extern const struct file_operations rtr_buffer_fops;
extern struct dentry *rtr_dir;

#endif /* _RINGTRACE_INTERNAL_H */
