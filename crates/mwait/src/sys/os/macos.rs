//! The park tier on macOS: `os_sync_wait_on_address` and `os_sync_wake_by_address_*`
//! where the OS has them (macOS 14.4 and later, found at run time), else the private
//! but long-stable `__ulock_wait` / `__ulock_wake` that they are built on (what libc++'s
//! `std::atomic::wait` and Rust's std have used).
//!
//! What wakes a waiter: a wake on the word (a notifier that saw a parked waiter), the
//! timeout, a signal, or nothing at all (spurious); the caller re-checks in every case.
//! Both interfaces compare the word with `expected` under the kernel's wait-queue lock
//! before sleeping, which makes the park race-free as a futex's is: a store that lands
//! after the waiter's last check makes the comparison fail, and the call returns.
//!
//! Both take *relative* timeouts, so a deadline on the crate's clock is converted on
//! each call, and an early return (the timeout slice ended before the deadline) is
//! reported as `Woken`: the caller re-checks and parks again. Process-shared cells
//! use the `SHARED` flags (`UL_COMPARE_AND_WAIT_SHARED`), which key the wait on the
//! physical page, so a notifier in another process wakes them.
//!
//! macOS has no `membarrier`: waiters order with a `SeqCst` fence and notifiers never
//! take the light path.

use crate::sys::contract::Parked;
use crate::sys::counters::{self, Counter};
use crate::primitive::AtomicU32;
use core::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// `__ulock_wait` operation: compare a 32-bit word and wait (`sys/ulock.h`).
const UL_COMPARE_AND_WAIT: u32 = 1;
/// The same, keyed on the physical page for memory shared between processes.
const UL_COMPARE_AND_WAIT_SHARED: u32 = 3;
/// `__ulock_wake` flag: wake every waiter, not one.
const ULF_WAKE_ALL: u32 = 0x0000_0100;
/// Flag: return `-errno` instead of setting `errno`.
const ULF_NO_ERRNO: u32 = 0x0100_0000;

const NS_PER_US: u64 = 1_000;

extern "C" {
    // Exported by libsystem_kernel (part of libSystem, which every program links)
    // since macOS 10.12; declared in the private `sys/ulock.h`.
    fn __ulock_wait(operation: u32, addr: *mut c_void, value: u64, timeout_us: u32) -> c_int;
    fn __ulock_wake(operation: u32, addr: *mut c_void, wake_value: u64) -> c_int;
}

// No process-wide barrier (notifiers never take the light path, waiters fence),
// nothing the ladder reads about CPUs or load, and nothing to keep beside the word:
// the kernel keys its waiters by address.
pub(crate) use super::plain::{
    begin_light_check, begin_light_store, current_cpu, end_light_store, fork_generation,
    light_fence, prepare, running_threads, usable_cpus, waiter_barrier, Queue, ThreadCpus,
};

type OsWaitFn = unsafe extern "C" fn(*mut c_void, u64, usize, u32) -> c_int;
type OsWaitTimeoutFn = unsafe extern "C" fn(*mut c_void, u64, usize, u32, u32, u64) -> c_int;
type OsWakeFn = unsafe extern "C" fn(*mut c_void, usize, u32) -> c_int;

/// The `os_sync` functions of macOS 14.4+, all or none.
struct OsSync {
    wait: OsWaitFn,
    wait_with_timeout: OsWaitTimeoutFn,
    wake_any: OsWakeFn,
    wake_all: OsWakeFn,
}

/// Looks the `os_sync` functions up once per process.
fn os_sync() -> Option<&'static OsSync> {
    static FNS: OnceLock<Option<OsSync>> = OnceLock::new();
    FNS.get_or_init(|| {
        // SAFETY: each symbol, when the OS exports it, has the C signature declared in
        // `os/os_sync_wait_on_address.h` that its function-pointer type spells out;
        // a null result (an OS before 14.4) becomes `None` before any transmute.
        unsafe {
            let wait = lookup(c"os_sync_wait_on_address")?;
            let wait_with_timeout = lookup(c"os_sync_wait_on_address_with_timeout")?;
            let wake_any = lookup(c"os_sync_wake_by_address_any")?;
            let wake_all = lookup(c"os_sync_wake_by_address_all")?;
            Some(OsSync {
                wait: core::mem::transmute::<*mut c_void, OsWaitFn>(wait),
                wait_with_timeout: core::mem::transmute::<*mut c_void, OsWaitTimeoutFn>(
                    wait_with_timeout,
                ),
                wake_any: core::mem::transmute::<*mut c_void, OsWakeFn>(wake_any),
                wake_all: core::mem::transmute::<*mut c_void, OsWakeFn>(wake_all),
            })
        }
    })
    .as_ref()
}

/// The address of `name` in the loaded images, or `None`.
fn lookup(name: &core::ffi::CStr) -> Option<*mut c_void> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches every loaded image.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Nanoseconds left until `deadline_ns`, or `None` when it has passed.
fn remaining_ns(deadline_ns: u64) -> Option<u64> {
    deadline_ns
        .checked_sub(crate::sys::clock::now_ns())
        .filter(|&r| r > 0)
}

/// The `__ulock_wait` timeout for `remaining_ns`: microseconds rounded up (never
/// shorter than asked) and capped at `u32::MAX`, since 0 means "no timeout".
fn timeout_us(remaining_ns: u64) -> u32 {
    u32::try_from(remaining_ns.div_ceil(NS_PER_US)).unwrap_or(u32::MAX)
}

/// Sleeps while `*word == expected`, until woken or `deadline_ns` (absolute, on the
/// crate's monotonic clock, [`crate::sys::clock::now_ns`]).
pub(crate) fn wait(
    _queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    if super::plain::changed(word, expected) {
        return Parked::Changed;
    }
    let remaining = match deadline_ns {
        Some(d) => match remaining_ns(d) {
            Some(r) => Some(r),
            None => return Parked::TimedOut,
        },
        None => None,
    };
    let r = match os_sync() {
        Some(f) => os_sync_wait(f, word, expected, remaining, shared),
        None => ulock_wait(word, expected, remaining, shared),
    };
    match r {
        // Woken, value changed, a signal, or a timeout slice: the clock decides.
        0 | libc::EINTR | libc::ETIMEDOUT => {}
        e => debug_assert!(false, "wait on address failed: errno {e}"),
    }
    match deadline_ns {
        Some(d) if crate::sys::clock::now_ns() >= d => Parked::TimedOut,
        _ => Parked::Woken,
    }
}

/// One `os_sync_wait_on_address` call (with a timeout of `remaining` ns, if any):
/// 0, or the errno it failed with.
fn os_sync_wait(
    f: &OsSync,
    word: &AtomicU32,
    expected: u32,
    remaining: Option<u64>,
    shared: bool,
) -> c_int {
    let addr = word.as_ptr().cast::<c_void>();
    let flags = if shared {
        libc::OS_SYNC_WAIT_ON_ADDRESS_SHARED
    } else {
        libc::OS_SYNC_WAIT_ON_ADDRESS_NONE
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call and the
    // size passed (4) matches it; the timeout is non-zero and relative, on the
    // one clock the call accepts (mach absolute time).
    let r = unsafe {
        match remaining {
            Some(ns) => (f.wait_with_timeout)(
                addr,
                u64::from(expected),
                core::mem::size_of::<u32>(),
                flags,
                libc::OS_CLOCK_MACH_ABSOLUTE_TIME,
                ns,
            ),
            None => (f.wait)(
                addr,
                u64::from(expected),
                core::mem::size_of::<u32>(),
                flags,
            ),
        }
    };
    if r >= 0 {
        0
    } else {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }
}

/// One `__ulock_wait` call (with a timeout of `remaining` ns, if any): 0, or the
/// errno it failed with.
fn ulock_wait(word: &AtomicU32, expected: u32, remaining: Option<u64>, shared: bool) -> c_int {
    let addr = word.as_ptr().cast::<c_void>();
    let op = if shared {
        UL_COMPARE_AND_WAIT_SHARED
    } else {
        UL_COMPARE_AND_WAIT
    };
    // 0 asks for no timeout; a remaining time always rounds to at least 1 µs.
    let us = remaining.map_or(0, timeout_us);
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call, which
    // compares it with the low 32 bits of `value` (UL_COMPARE_AND_WAIT is a 32-bit
    // compare); with ULF_NO_ERRNO the call returns -errno and leaves errno alone.
    let r = unsafe { __ulock_wait(op | ULF_NO_ERRNO, addr, u64::from(expected), us) };
    (-r).max(0)
}

/// Wakes one (`n == 1`) or all threads parked on `word`. The OS says only whether it
/// woke somebody: the result is 1 then, and 0 when nobody was waiting.
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let addr = word.as_ptr().cast::<c_void>();
    let all = n != 1;
    let r = if let Some(f) = os_sync() {
        let flags = if shared {
            libc::OS_SYNC_WAKE_BY_ADDRESS_SHARED
        } else {
            libc::OS_SYNC_WAKE_BY_ADDRESS_NONE
        };
        let wake = if all { f.wake_all } else { f.wake_any };
        // SAFETY: the wake only uses the address as a key; `word` is valid and the
        // size (4) matches the waiters'.
        let r = unsafe { wake(addr, core::mem::size_of::<u32>(), flags) };
        if r == 0 {
            0
        } else {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        }
    } else {
        let mut op = if shared {
            UL_COMPARE_AND_WAIT_SHARED
        } else {
            UL_COMPARE_AND_WAIT
        };
        if all {
            op |= ULF_WAKE_ALL;
        }
        // SAFETY: the wake only uses the address as a key; with ULF_NO_ERRNO the call
        // returns -errno and leaves errno alone.
        let r = unsafe { __ulock_wake(op | ULF_NO_ERRNO, addr, 0) };
        (-r).max(0)
    };
    match r {
        0 => 1,
        // ENOENT: nobody was waiting (a waiter that saw the new value and left).
        libc::ENOENT => 0,
        e => {
            debug_assert!(false, "wake by address failed: errno {e}");
            0
        }
    }
}
