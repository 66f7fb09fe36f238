/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * /dev/mwait: wait in ring 0 with MONITOR/MWAIT for a user word to change.
 *
 * Shared by the kernel module (kmod/mwait.c) and the Rust bindings
 * (crates/mwait-sys).  Only fixed-width fields; user addresses are __u64;
 * every pad field must be zero.
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
#define MWAIT_REASON_SIGNAL	4	/* a signal is pending (-EINTR) */

/* No flags are defined yet; any bit set is refused with EINVAL. */
#define MWAIT_WAIT_FLAGS_ALL	0U

/**
 * struct mwait_wait - one bounded kernel wait (MWAIT_IOC_WAIT in/out)
 * @addr:	in: user address of a naturally aligned __u32.
 * @deadline_ns: in: absolute CLOCK_MONOTONIC deadline in ns.
 * @mask:	in: bits of *addr that are compared.
 * @expected:	in: wait while (*addr & mask) == expected.
 * @hint:	in: MWAIT hint (EAX), checked against CPUID leaf 5.
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
