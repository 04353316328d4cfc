// SPDX-License-Identifier: GPL-2.0
/*
 * ringtrace: the user stack of the current task, by its frame pointers
 * (or its top copied raw for an offline unwinder: rtr_ustack_copy(), at
 * the end).
 *
 * Code built with frame pointers keeps, at the address in its frame
 * pointer (x86-64's rbp, arm64's x29), the caller's frame pointer and then
 * the return address into the caller:
 *
 *	fp -> | next fp | return address |
 *
 * so the chain from the task's user registers names its callers: ips[0]
 * is the interrupted (or trapping) instruction, then one return address
 * per frame.  Every frame is read with page faults disabled: a read
 * never sleeps and never faults a page in, so the walk is safe with the
 * rq lock held, with interrupts off, in hardirq and in NMI.  A page not
 * present ends it (FAULT): a stack being walked is almost always
 * resident.  How the reads are made, and why that is safe: rtr_ufetch().
 *
 * The walk stops at a zero fp (the chain's end, as _start leaves it), at
 * an fp below the user sp for the first frame or not above the previous
 * frame after it (stacks grow down, so callers' frames lie higher; this
 * also ends any loop, and most garbage: code without frame pointers uses
 * the register for anything, and heap pointers lie below the stack), at
 * an fp not 8-aligned, at a zero return address, on a read fault, or at
 * the depth asked (TRUNCATED, when more frames seemed to follow).
 *
 * Its limits are those of frame pointers: a function built without them
 * (Debian's libc) hides its caller, or ends the walk with a garbage fp;
 * a task stopped in a function's prologue, before "push rbp; mov rbp, rsp"
 * ran, shows its caller's caller as the second frame and misses its
 * caller.  At a uprobe on a function's first instruction that is always
 * so; the caller asks then (ENTRY in *flags) for the return address at
 * [sp] as the second frame, as perf does.  A 32-bit task gets its ip
 * alone (COMPAT): its frames hold 4-byte words.
 */
#include <linux/compat.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <linux/ringtrace.h>
#include <asm/ptrace.h>

#include "ustack.h"

struct rtr_uframe {
	u64 next;			/* the caller's frame pointer */
	u64 ret;			/* the return address into the caller */
};

/*
 * The walk's reads of user memory, as perf's callchain walk makes them.
 *
 * The first read of a walk goes through copy_from_user_nmi() (x86; other
 * architectures: copy_from_user_nofault()): besides checking that the
 * range is user memory, it refuses when the mm loaded on this CPU is not
 * current's (nmi_uaccess_okay(): a probe between switch_mm_irqs_off()
 * and switch_to(), or in text_poke()'s temporary mm), whose
 * cpu_tlbstate is not exported to modules.  Unlike
 * copy_from_user_nofault(), it skips the hardened usercopy check of the
 * destination (check_object_size()), of no use for our kernel-stack or
 * scratch destinations.
 *
 * [U1] Once that read succeeded, the mm loaded stays current's for the
 * rest of the walk: preemption is off (no context switch), and nothing
 * that can interrupt the walk switches mm without switching back before
 * it returns (text_poke() runs with interrupts off; a TLB flush moves a
 * lazy CPU to init_mm, and a lazy CPU runs a kernel thread, which has no
 * user stack to walk).  So the later reads are __get_user()s, each after
 * __access_ok() of its range, inside one pagefault_disable() section:
 * perf's reads, instead of a copy through the checks above per frame.
 */
static bool rtr_ufetch_first(void *dst, unsigned long src, unsigned int n)
{
#ifdef CONFIG_X86_64
	return !copy_from_user_nmi(dst, (const void __user *)src, n);
#else
	return !copy_from_user_nofault(dst, (const void __user *)src, n);
#endif
}

/* A frame record after the first read [U1]; page faults are off. */
static bool rtr_ufetch(struct rtr_uframe *f, unsigned long fp)
{
	const struct rtr_uframe __user *uf = (const void __user *)fp;

	return __access_ok(uf, sizeof(*uf)) &&
	       !__get_user(f->next, &uf->next) &&
	       !__get_user(f->ret, &uf->ret);
}

static bool rtr_ustack_compat(struct pt_regs *uregs)
{
#ifdef CONFIG_X86_64
	return !user_64bit_mode(uregs);
#else
	return in_compat_syscall();
#endif
}

/*
 * The user registers of the current task: those saved at its entry to
 * the kernel (task_pt_regs(), which are also what an interrupt of user
 * mode was given).  NULL for a kernel thread or a task without an mm
 * (exiting), which have no user stack.
 */
struct pt_regs *rtr_ustack_regs(void)
{
	if (current->flags & PF_KTHREAD || !current->mm)
		return NULL;
	return task_pt_regs(current);
}

/*
 * Walk the current task's user stack from @uregs, its user registers,
 * into @ips (at most @max, at least 1); returns the frames stored.  @flags
 * is in and out: in, RINGTRACE_USTACK_ENTRY asks for the return address at
 * [sp] as the second frame (@uregs stopped at a function's first
 * instruction); out, the record's flags (RINGTRACE_USTACK_*), ENTRY kept
 * when that frame was read.  Returns 0 (and no flags) for a kernel thread
 * or a task without an mm, or a zero ip.  Never sleeps, never faults.
 */
unsigned int rtr_ustack_walk(struct pt_regs *uregs, u64 *ips,
			     unsigned int max, u16 *flags)
{
	bool entry = *flags & RINGTRACE_USTACK_ENTRY;
	bool first = true;
	unsigned long fp, lo;
	struct rtr_uframe f;
	unsigned int nr = 0;

	*flags = 0;
	if (!uregs || !max || current->flags & PF_KTHREAD || !current->mm)
		return 0;
	ips[nr++] = instruction_pointer(uregs);
	if (!ips[0])
		return 0;
	if (rtr_ustack_compat(uregs)) {
		*flags = RINGTRACE_USTACK_COMPAT;
		return nr;
	}
	lo = user_stack_pointer(uregs);
	if (entry && nr < max) {
		u64 ret;

		if (!rtr_ufetch_first(&ret, lo, sizeof(ret))) {
			*flags |= RINGTRACE_USTACK_FAULT;
			return nr;
		}
		if (!ret)
			return nr;
		*flags |= RINGTRACE_USTACK_ENTRY;
		ips[nr++] = ret;
		lo += sizeof(ret);
		first = false;
	}
	fp = frame_pointer(uregs);
	pagefault_disable();
	while (fp) {
		if (!IS_ALIGNED(fp, sizeof(u64)) || fp < lo)
			break;
		if (nr == max) {
			*flags |= RINGTRACE_USTACK_TRUNCATED;
			break;
		}
		if (first ? !rtr_ufetch_first(&f, fp, sizeof(f)) :
			    !rtr_ufetch(&f, fp)) {
			*flags |= RINGTRACE_USTACK_FAULT;
			break;
		}
		first = false;
		if (!f.ret)
			break;
		ips[nr++] = f.ret;
		/* The caller's frame lies above this one's record. */
		lo = fp + sizeof(f);
		fp = f.next;
	}
	pagefault_enable();
	return nr;
}

/*
 * Copy mode (ustack_mode "copy"): the raw stack instead of its frames.
 *
 * Copy up to @max bytes of the current task's user stack, from its user
 * sp in @uregs upwards, into @dst; returns the bytes copied.  Page by
 * page, each as a walk's first read (rtr_ufetch_first(): page faults
 * off, the mm checked, no check of @dst): a page not present ends the copy
 * there (FAULT in *@flags), as does @max (TRUNCATED: the stack may go
 * on).  There is no bound by the stack's VMA: find_vma() needs mmap_lock,
 * which this context (rq lock held, hardirq, NMI) cannot take, and a
 * thread's stack is an anonymous VMA like any other; the first absent
 * page is the bound instead.  A reader unwinds the bytes offline with the
 * binaries' CFI (tools/cli/unwind.c), from ip, sp and bp.  *@flags gets
 * COMPAT for a 32-bit task (the bytes are copied all the same).  Returns
 * 0 and no flags for a kernel thread or a task without an mm.  Never
 * sleeps, never faults.
 */
unsigned int rtr_ustack_copy(struct pt_regs *uregs, void *dst,
			     unsigned int max, u16 *flags)
{
	unsigned long sp, n;
	unsigned int done = 0;

	*flags = 0;
	if (!uregs || current->flags & PF_KTHREAD || !current->mm)
		return 0;
	if (rtr_ustack_compat(uregs))
		*flags |= RINGTRACE_USTACK_COMPAT;
	sp = user_stack_pointer(uregs);
	while (done < max) {
		n = min_t(unsigned long, max - done,
			  PAGE_SIZE - offset_in_page(sp + done));
		/* Checks the range is user memory (a wrap fails too). */
		if (!rtr_ufetch_first((u8 *)dst + done, sp + done, n)) {
			*flags |= RINGTRACE_USTACK_FAULT;
			return done;
		}
		done += n;
	}
	*flags |= RINGTRACE_USTACK_TRUNCATED;
	return done;
}
