/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * /dev/mwait: wait in ring 0 with MONITOR/MWAIT for a user word to change.
 *
 * Shared by the kernel module (kmod/mwait.c) and the Rust bindings
 * (crates/mwait-sys).  Only fixed-width fields; user addresses are __u64;
 * every pad field must be zero.  32-bit callers use the same layout.
 *
 * Who may call: whoever can open the node, which the kernel creates 0600
 * (root's); a udev rule may grant a group.  Hint 0x00 (C1) is open to
 * every caller; a deeper hint needs CAP_SYS_ADMIN, or a hint at most the
 * module parameter max_hint (default 0, set by root).
 *
 * MWAIT_IOC_WAIT fails, leaving the output fields as they were, with:
 *   EOPNOTSUPP  MWAIT is not usable: no MONITOR/MWAIT, X86_BUG_MONITOR,
 *               or the kernel booted with idle=nomwait (INFO's flags say);
 *   EINVAL      addr not 4-byte aligned, a flag or pad set, a hint above
 *               0x6f, a deeper hint than CPUID leaf 5 lists, or any hint
 *               but 0x00 when the kernel booted with idle=poll/halt;
 *   EPERM       a hint deeper than max_hint without CAP_SYS_ADMIN;
 *   ERANGE      a deadline more than max_wait_ns away;
 *   EFAULT      the argument or the word cannot be reached: a kernel or
 *               unmapped address, a mapping the caller cannot read, or a
 *               read-only one whose page cannot change (anonymous memory,
 *               the zero page);
 *   ENOMEM, ... the errno of the kernel's page pin, as it returned it.
 * A pending signal ends the wait with reason MWAIT_REASON_SIGNAL written
 * back; the call is then restarted after a stop or an SA_RESTART handler
 * (the deadline is absolute), and fails with EINTR otherwise.
 *
 * During a wait: every MWAIT wake-up looks the word up again, so a store
 * after MADV_DONTNEED, a copy-on-write (fork, a private file mapping) or
 * a page migration is seen; the zapped page's value may be seen first (0
 * after MADV_DONTNEED).  After munmap of the word the wait fails with
 * EFAULT.  A fork leaves the waiter watching its own address space.
 * x86 sends the waiting CPU an IPI when the mapping changes, which wakes
 * MWAIT; without one the next interrupt, at the latest the deadline's
 * timer, does.
 */
#ifndef _UAPI_LINUX_MWAIT_H
#define _UAPI_LINUX_MWAIT_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bumped on every incompatible change of the interface below. */
#define MWAIT_ABI_VERSION	2

/* mwait_info.flags: MONITOR/MWAIT is usable on this machine. */
#define MWAIT_INFO_USABLE	(1U << 0)

/**
 * struct mwait_info - what the module offers (MWAIT_IOC_INFO output)
 * @abi_version:	MWAIT_ABI_VERSION of the running module.
 * @flags:		MWAIT_INFO_* bits.
 * @substates:		CPUID leaf 5 EDX: four bits per C-state (C0 in bits
 *			3:0, C1 in 7:4, ...) giving its number of sub-states.
 *			A hint (c << 4 | s) is allowed when the nibble of
 *			C-state c + 1 is greater than s.
 * @line_size:		largest monitor line size in bytes (leaf 5 EBX).
 * @max_wait_ns:	longest wait, from now to the deadline, that
 *			MWAIT_IOC_WAIT accepts.
 */
struct mwait_info {
	__u32 abi_version;
	__u32 flags;
	__u32 substates;
	__u32 line_size;
	__u64 max_wait_ns;
};

/* Reasons in mwait_wait.reason. */
#define MWAIT_REASON_CHANGED	1	/* (*addr & mask) != expected */
#define MWAIT_REASON_DEADLINE	2	/* CLOCK_MONOTONIC passed deadline */
#define MWAIT_REASON_RESCHED	3	/* the scheduler wants the CPU */
#define MWAIT_REASON_SIGNAL	4	/* a signal is pending (EINTR) */

/* No flags are defined yet; any bit set is refused with EINVAL. */
#define MWAIT_WAIT_FLAGS_ALL	0U

/**
 * struct mwait_wait - one bounded kernel wait (MWAIT_IOC_WAIT in/out)
 * @addr:	in: user address of a naturally aligned __u32.
 * @deadline_ns: in: absolute CLOCK_MONOTONIC deadline in ns.
 * @mask:	in: bits of *addr that are compared.
 * @expected:	in: wait while (*addr & mask) == expected.
 * @hint:	in: MWAIT hint (EAX): 0x00 (C1) for every caller; deeper
 *		hints need privilege and CPUID leaf 5 (see above).
 * @flags:	in: must be zero (see MWAIT_WAIT_FLAGS_ALL).
 * @value:	out: last value of *addr seen.
 * @reason:	out: MWAIT_REASON_* that ended the wait.
 * @wakeups:	out: how many times MWAIT returned.
 * @pad:	must be zero.
 */
struct mwait_wait {
	__u64 addr;
	__u64 deadline_ns;
	__u32 mask;
	__u32 expected;
	__u32 hint;
	__u32 flags;
	__u32 value;
	__u32 reason;
	__u32 wakeups;
	__u32 pad;
};

/*
 * One ioctl type for the whole interface; 0xE7 is not taken in the
 * kernel's Documentation/userspace-api/ioctl/ioctl-number.rst.
 */
#define MWAIT_IOC_MAGIC		0xE7
#define MWAIT_IOC_INFO		_IOR(MWAIT_IOC_MAGIC, 0, struct mwait_info)
#define MWAIT_IOC_WAIT		_IOWR(MWAIT_IOC_MAGIC, 1, struct mwait_wait)

#endif /* _UAPI_LINUX_MWAIT_H */
