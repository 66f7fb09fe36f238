//! The park tier on FreeBSD: `_umtx_op(UMTX_OP_WAIT_UINT[_PRIVATE])` and
//! `_umtx_op(UMTX_OP_WAKE[_PRIVATE])`, FreeBSD's futex.
//!
//! What wakes a waiter: a wake on the word (a notifier that saw a parked waiter), a
//! signal, the absolute `CLOCK_MONOTONIC` deadline, or nothing at all (spurious); the
//! caller re-checks in every case. The kernel compares the word with `expected` under
//! its wait-queue lock before sleeping, which is what makes the park race-free: a store
//! that lands after the waiter's last check makes the comparison fail, and the call
//! returns at once. The `_PRIVATE` operations key the wait on this process's virtual
//! address; process-shared cells use the plain ones, keyed on the physical page, so a
//! notifier in another process wakes them.
//!
//! Waiters order with a `SeqCst` fence and notifiers never take the light path: the
//! asymmetric barrier is not used here.

use crate::sys::contract::Parked;
use crate::sys::counters::{self, Counter};
use crate::primitive::AtomicU32;
use core::ffi::c_void;

// No process-wide barrier (notifiers never take the light path, waiters fence),
// nothing the ladder reads about CPUs or load, and nothing to keep beside the word:
// the kernel keys its waiters by address.
pub(crate) use super::plain::{
    begin_light_check, begin_light_store, current_cpu, end_light_store, fork_generation,
    light_fence, prepare, running_threads, usable_cpus, waiter_barrier, Queue, ThreadCpus,
};

const NS_PER_S: u64 = 1_000_000_000;

/// Sleeps while `*word == expected`, until woken or `deadline_ns` (absolute, on the
/// crate's monotonic clock, [`crate::sys::clock::now_ns`], which is `CLOCK_MONOTONIC` here).
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
    let op = if shared {
        libc::UMTX_OP_WAIT_UINT
    } else {
        libc::UMTX_OP_WAIT_UINT_PRIVATE
    };
    let mut timeout = deadline_ns.map(|d| libc::_umtx_time {
        _timeout: libc::timespec {
            tv_sec: (d / NS_PER_S) as libc::time_t,
            tv_nsec: (d % NS_PER_S) as libc::c_long,
        },
        _flags: libc::UMTX_ABSTIME,
        _clockid: libc::CLOCK_MONOTONIC as u32,
    });
    // With a timeout, `uaddr` carries the size of the `_umtx_time` that `uaddr2`
    // points to (the kernel reads a bare timespec when the size says so).
    let (size, time) = match timeout.as_mut() {
        Some(t) => (
            core::mem::size_of::<libc::_umtx_time>() as *mut c_void,
            (t as *mut libc::_umtx_time).cast::<c_void>(),
        ),
        None => (core::ptr::null_mut(), core::ptr::null_mut()),
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call, which only
    // reads it; the `_umtx_time` (when given) lives on our stack until it returns, and
    // its size travels in `uaddr` as the kernel expects.
    let r = unsafe {
        libc::_umtx_op(
            word.as_ptr().cast::<c_void>(),
            op,
            libc::c_ulong::from(expected),
            size,
            time,
        )
    };
    if r == 0 {
        // Woken, or the value differed: re-check.
        return Parked::Woken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ETIMEDOUT) => Parked::TimedOut,
        Some(libc::EINTR) => Parked::Woken,
        e => {
            debug_assert!(false, "_umtx_op wait failed: {e:?}");
            Parked::Woken
        }
    }
}

/// Wakes up to `n` threads parked on `word`. FreeBSD does not say how many it woke:
/// the result is 0, a lower bound, as the caller never needs more.
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let op = if shared {
        libc::UMTX_OP_WAKE
    } else {
        libc::UMTX_OP_WAKE_PRIVATE
    };
    // The kernel takes an `int` count: more means all.
    let n = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    // SAFETY: UMTX_OP_WAKE only uses the address as a key; `n` is positive.
    let r = unsafe {
        libc::_umtx_op(
            word.as_ptr().cast::<c_void>(),
            op,
            n.max(1) as libc::c_ulong,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
        )
    };
    debug_assert_eq!(r, 0, "_umtx_op wake failed");
    0
}
