//! `futex(2)` made with the architecture's system-call instruction where the crate
//! knows its convention (x86-64 and AArch64), and through libc's `syscall()`
//! elsewhere and under Miri (which models that function, not the instruction).
//!
//! A waiter fed every few milliseconds runs its park with cold caches: each code
//! line and each page its path touches costs a miss then. libc's wrapper is a call
//! through the GOT into a page of libc's own, and reports a failure through `errno`,
//! a thread-local that another of libc's functions finds; the instruction in line
//! needs none of that, and returns the error as a negative number (the figures:
//! `docs/design-notes.md`).
//!
//! Where it ran: the x86-64 call timed on the 2-vCPU AMD guest (KVM) and run by every
//! test there; the AArch64 call executed under `qemu-aarch64 -cpu max` by `cargo
//! xtask aarch64-test` (the crate's tests, these included), never timed on Arm
//! hardware; the libc path under Miri.

use libc::{c_int, timespec};

/// `futex(uaddr, op, val, timeout, uaddr2, val3)`: what the kernel returned, or the
/// negated `errno` when it failed.
///
/// # Safety
///
/// The arguments must be valid for `op` (futex(2)): `uaddr` an aligned address
/// that stays mapped for the call, `timeout` null or a `timespec` that outlives it,
/// `uaddr2` whatever `op` reads there.
#[inline(always)]
pub(super) unsafe fn futex(
    uaddr: *const u32,
    op: c_int,
    val: u32,
    timeout: *const timespec,
    uaddr2: *const u32,
    val3: u32,
) -> isize {
    #[cfg(any(
        all(target_arch = "x86_64", target_pointer_width = "64", not(miri)),
        all(target_arch = "aarch64", not(miri)),
    ))]
    {
        // Registers carry the integer arguments zero-extended, as the C
        // prototype's `int` and `uint32_t` reach the kernel.
        let args = [
            uaddr as usize,
            op as u32 as usize,
            val as usize,
            timeout as usize,
            uaddr2 as usize,
            val3 as usize,
        ];
        // SAFETY: the caller's contract is futex(2)'s, which is all the kernel reads.
        unsafe { syscall6(libc::SYS_futex, args) }
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_pointer_width = "64", not(miri)),
        all(target_arch = "aarch64", not(miri)),
    )))]
    {
        // SAFETY: the caller's contract is futex(2)'s; each argument has the type of
        // the C prototype, as the variadic call passes it.
        let r = unsafe { libc::syscall(libc::SYS_futex, uaddr, op, val, timeout, uaddr2, val3) };
        if r == -1 {
            -(std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as isize)
        } else {
            r as isize
        }
    }
}

/// A system call of six arguments with the `syscall` instruction: the number in
/// `rax`, the arguments in `rdi`, `rsi`, `rdx`, `r10`, `r8`, `r9`, the result in
/// `rax`; the instruction overwrites `rcx` and `r11`.
///
/// # Safety
///
/// The arguments must be valid for system call `nr`.
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64", not(miri)))]
#[inline(always)]
unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
    let r: isize;
    // SAFETY: the caller vouches for the arguments; the kernel preserves every
    // register but `rax`, `rcx` and `r11` and uses no user stack. No `nomem`: the
    // call may read and write memory, so the compiler keeps it in order with the
    // accesses around it.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => r,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    r
}

/// A system call of six arguments with `svc #0`: the number in `x8`, the arguments
/// in `x0` to `x5`, the result in `x0`.
///
/// # Safety
///
/// The arguments must be valid for system call `nr`.
#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
    let r: isize;
    // SAFETY: the caller vouches for the arguments; the kernel preserves every
    // register but `x0` and uses no user stack. No `nomem`, as on x86-64.
    unsafe {
        core::arch::asm!(
            "svc #0",
            in("x8") nr,
            inlateout("x0") a[0] => r,
            in("x1") a[1],
            in("x2") a[2],
            in("x3") a[3],
            in("x4") a[4],
            in("x5") a[5],
            options(nostack),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    const PRIVATE: c_int = libc::FUTEX_PRIVATE_FLAG;

    /// A wait whose word no longer holds the expected value returns `EAGAIN`.
    #[test]
    fn a_changed_word_returns_eagain() {
        let word = AtomicU32::new(1);
        // SAFETY: an aligned word of ours; no timeout.
        let r = unsafe {
            futex(
                word.as_ptr(),
                libc::FUTEX_WAIT | PRIVATE,
                0,
                core::ptr::null(),
                core::ptr::null(),
                0,
            )
        };
        assert_eq!(r, -(libc::EAGAIN as isize));
    }

    /// A deadline already passed returns `ETIMEDOUT`; a wake of nobody returns 0.
    #[test]
    fn a_passed_deadline_times_out_and_a_wake_of_nobody_wakes_0() {
        let word = AtomicU32::new(0);
        let past = timespec {
            tv_sec: 0,
            tv_nsec: 1,
        };
        // SAFETY: an aligned word of ours and a timespec that outlives the call
        // (an absolute CLOCK_MONOTONIC time, long past).
        let r = unsafe {
            futex(
                word.as_ptr(),
                libc::FUTEX_WAIT_BITSET | PRIVATE,
                0,
                &past,
                core::ptr::null(),
                libc::FUTEX_BITSET_MATCH_ANY as u32,
            )
        };
        assert_eq!(r, -(libc::ETIMEDOUT as isize));
        // SAFETY: FUTEX_WAKE only reads the address.
        let woke = unsafe {
            futex(
                word.as_ptr(),
                libc::FUTEX_WAKE | PRIVATE,
                i32::MAX as u32,
                core::ptr::null(),
                core::ptr::null(),
                0,
            )
        };
        assert_eq!(woke, 0);
    }

    /// An unknown operation returns `ENOSYS`, a misaligned address `EINVAL`.
    #[test]
    #[cfg_attr(miri, ignore = "Miri stops at a futex operation it does not model")]
    fn the_kernels_refusals_come_back_as_negative_errnos() {
        let word = AtomicU32::new(0);
        // SAFETY: an aligned word of ours; the kernel refuses the operation before
        // it reads anything.
        let unknown = unsafe {
            futex(
                word.as_ptr(),
                0x7f | PRIVATE,
                0,
                core::ptr::null(),
                core::ptr::null(),
                0,
            )
        };
        assert_eq!(unknown, -(libc::ENOSYS as isize));
        let words = [0u32; 2];
        let misaligned = words.as_ptr().cast::<u8>().wrapping_add(1).cast::<u32>();
        // SAFETY: the kernel checks the alignment before it reads the word, and
        // refuses it; the address lies inside our array either way.
        let r = unsafe {
            futex(
                misaligned,
                libc::FUTEX_WAKE | PRIVATE,
                1,
                core::ptr::null(),
                core::ptr::null(),
                0,
            )
        };
        assert_eq!(r, -(libc::EINVAL as isize));
    }
}
