/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringtrace.ko's walk of a task's user stack by frame pointers, and its
 * copy (ustack.c); not an API.
 */
#ifndef _RINGTRACE_USTACK_H
#define _RINGTRACE_USTACK_H

#include <linux/types.h>

struct pt_regs;

struct pt_regs *rtr_ustack_regs(void);
unsigned int rtr_ustack_walk(struct pt_regs *uregs, u64 *ips,
			     unsigned int max, u16 *flags);
unsigned int rtr_ustack_copy(struct pt_regs *uregs, void *dst,
			     unsigned int max, u16 *flags);

#endif /* _RINGTRACE_USTACK_H */
