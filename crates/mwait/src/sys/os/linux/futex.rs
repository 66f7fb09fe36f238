//! The futex park: `FUTEX_WAIT_BITSET` with an absolute monotonic deadline and
//! `FUTEX_WAKE` (made by `syscall.rs`), and the failures the unit tests inject into
//! it.

use super::barrier::{sliced, SLICE_NS};
use super::syscall;
use crate::primitive::AtomicU32;
use crate::sys::contract::Parked;
use crate::sys::counters::{self, Counter};
use crate::sys::stamp::{self, Point};
use crate::sys::os::plain::Queue;

#[inline(always)]
fn futex_op(base: libc::c_int, shared: bool) -> libc::c_int {
    if shared {
        base
    } else {
        base | libc::FUTEX_PRIVATE_FLAG
    }
}

/// `FUTEX_WAIT_BITSET` with an absolute `CLOCK_MONOTONIC` deadline. What wakes it:
/// `FUTEX_WAKE` on the word, a signal, the deadline, or nothing at all. The kernel
/// compares the word with `expected` under its hash-bucket lock before sleeping, which
/// is what makes the park race-free: a store that lands after our caller's last check
/// makes the comparison fail (`EAGAIN`).
///
/// An error the kernel does not document for this call (`ENOSYS` from a seccomp
/// policy, say) cannot be fixed by retrying at once: the wait sleeps instead, for a
/// time that doubles with each consecutive failure of this thread up to
/// [`FUTEX_FAILED_SLEEP_MAX_US`] (never past the deadline), and reports a wake-up, so
/// the caller re-checks its predicate a few hundred times a second at most instead of
/// spinning on the failing call.
///
/// Inline, as the park that calls it: a sleep is the system call (after the
/// deadline's conversion, for a timed one) and the look at its result, with a sleep
/// in slices and an unexpected error out of line.
#[inline(always)]
pub(crate) fn wait(
    _queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    if deadline_ns.is_some() {
        return wait_with_deadline(word, expected, deadline_ns, shared);
    }
    if sliced() {
        return wait_in_slices(word, expected, shared);
    }
    sleep_until(word, expected, None, false, shared)
}

/// A wait that the kernel ended as expected (a wake-up, a signal, a changed value):
/// the run of unexpected errors ends.
#[inline(always)]
fn woken(parked: Parked) -> Parked {
    FUTEX_FAILURES.with(|f| f.set(0));
    parked
}

/// [`wait`] without a deadline where it sleeps in slices (see [`slice()`]).
#[cold]
#[inline(never)]
fn wait_in_slices(word: &AtomicU32, expected: u32, shared: bool) -> Parked {
    wait_with_deadline(word, expected, None, shared)
}

/// [`wait`] with a deadline, the caller's or a slice's (see [`slice()`]).
#[inline(always)]
fn wait_with_deadline(
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    let (deadline_ns, sliced) = slice(deadline_ns);
    sleep_until(word, expected, deadline_ns, sliced, shared)
}

/// One `FUTEX_WAIT_BITSET` until `deadline_ns` (`sliced`: a slice's end, reported as
/// a wake-up), and what its result says.
#[inline(always)]
fn sleep_until(
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    sliced: bool,
    shared: bool,
) -> Parked {
    let ts = deadline_ns.map(timespec_of);
    let ts_ptr = ts
        .as_ref()
        .map_or(core::ptr::null(), |t| t as *const libc::timespec);
    stamp::mark(Point::Syscall);
    let r = match inject::futex_wait_errno() {
        Some(e) => Err(e),
        // SAFETY: `word` is a valid, aligned u32 for the duration of the call; the
        // timespec (when given) outlives the call; FUTEX_WAIT_BITSET with MATCH_ANY
        // takes an absolute CLOCK_MONOTONIC timeout, as passed.
        None => match unsafe {
            syscall::futex(
                word.as_ptr(),
                futex_op(libc::FUTEX_WAIT_BITSET, shared),
                expected,
                ts_ptr,
                core::ptr::null(),
                libc::FUTEX_BITSET_MATCH_ANY as u32,
            )
        } {
            r if r < 0 => Err(i32::try_from(-r).unwrap_or(0)),
            _ => Ok(()),
        },
    };
    stamp::mark(Point::Returned);
    match r {
        // Woken, or a signal.
        Ok(()) | Err(libc::EINTR) => woken(Parked::Woken),
        // The value changed before we slept: no wake-up to measure.
        Err(libc::EAGAIN) => woken(Parked::Changed),
        Err(libc::ETIMEDOUT) if sliced => Parked::Woken,
        Err(libc::ETIMEDOUT) => Parked::TimedOut,
        Err(_) => sleep_after_failure(deadline_ns),
    }
}

/// The deadline of one sleep, and whether it is a slice's end: without any
/// process-wide barrier, a wait sleeps in slices (see `barrier::sliced`), and a
/// slice that ends before the caller's deadline is reported as a wake-up, so the
/// caller re-checks.
#[inline(always)]
fn slice(deadline_ns: Option<u64>) -> (Option<u64>, bool) {
    match sliced() {
        false => (deadline_ns, false),
        true => {
            let slice_end = crate::sys::clock::now_ns().saturating_add(SLICE_NS);
            match deadline_ns {
                Some(d) if d <= slice_end => (Some(d), false),
                _ => (Some(slice_end), true),
            }
        }
    }
}

/// The longest sleep in place of a futex wait that failed with an unexpected error:
/// the latency a store has for such a waiter.
pub(crate) const FUTEX_FAILED_SLEEP_MAX_US: u64 = 1_000;

std::thread_local! {
    /// Consecutive futex waits of this thread that failed with an unexpected error.
    static FUTEX_FAILURES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The bounded sleep of a futex wait that failed with an unexpected error: 1 µs,
/// doubling with each consecutive failure up to [`FUTEX_FAILED_SLEEP_MAX_US`], cut at
/// the deadline.
#[cold]
fn sleep_after_failure(deadline_ns: Option<u64>) -> Parked {
    let failures = FUTEX_FAILURES.with(|f| {
        let n = f.get();
        f.set(n.saturating_add(1));
        n
    });
    let mut sleep_ns = (1_000u64 << failures.min(10)).min(FUTEX_FAILED_SLEEP_MAX_US * 1_000);
    if let Some(d) = deadline_ns {
        let now = crate::sys::clock::now_ns();
        if now >= d {
            return Parked::TimedOut;
        }
        sleep_ns = sleep_ns.min(d - now);
    }
    std::thread::sleep(std::time::Duration::from_nanos(sleep_ns));
    Parked::Woken
}

/// An absolute deadline in ns as a `timespec`, its seconds clamped to `time_t` (a
/// deadline past 2038 with a 32-bit `time_t` would otherwise wrap negative, which the
/// kernel refuses with `EINVAL`); a clamped deadline is still centuries away.
fn timespec_of(deadline_ns: u64) -> libc::timespec {
    const NS_PER_S: u64 = 1_000_000_000;
    match libc::time_t::try_from(deadline_ns / NS_PER_S) {
        Ok(tv_sec) => libc::timespec {
            tv_sec,
            // Below 10^9: fits every `c_long`.
            tv_nsec: (deadline_ns % NS_PER_S) as libc::c_long,
        },
        Err(_) => libc::timespec {
            tv_sec: libc::time_t::MAX,
            tv_nsec: 0,
        },
    }
}

/// `FUTEX_WAKE` of up to `n` sleepers (the kernel takes an `int`: more means all).
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let n = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only reads its address.
    let r = unsafe {
        syscall::futex(
            word.as_ptr(),
            futex_op(libc::FUTEX_WAKE, shared),
            n as u32,
            core::ptr::null(),
            core::ptr::null(),
            0,
        )
    };
    debug_assert!(r >= 0, "futex wake failed");
    r.max(0) as usize
}

/// Failures that the crate's unit tests inject into this thread's futex waits, to
/// test the paths that only a broken kernel or a seccomp policy would take (a
/// `membarrier` refused by a real seccomp filter is tested in `tests/process/env.rs`). Outside
/// `cfg(test)` they are constants that inject nothing.
pub(crate) mod inject {
    #[cfg(test)]
    std::thread_local! {
        static FUTEX_WAIT_ERRNO: std::cell::Cell<Option<i32>> =
            const { std::cell::Cell::new(None) };
    }

    /// The error this thread's futex waits fail with, if any.
    #[inline(always)]
    pub(super) fn futex_wait_errno() -> Option<i32> {
        #[cfg(test)]
        return FUTEX_WAIT_ERRNO.with(|f| f.get());
        #[cfg(not(test))]
        None
    }

    /// Makes this thread's futex waits fail with `errno` (`None`: call the kernel).
    #[cfg(test)]
    pub(crate) fn set_futex_wait_errno(errno: Option<i32>) {
        FUTEX_WAIT_ERRNO.with(|f| f.set(errno));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_deadline_gives_a_non_negative_tv_sec() {
        let ts = timespec_of(u64::MAX);
        assert!(ts.tv_sec > 0, "tv_sec {}", ts.tv_sec);
        assert!((0..1_000_000_000).contains(&ts.tv_nsec));
        let ts = timespec_of(1_500_000_000);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (1, 500_000_000));
    }

    #[test]
    fn an_unexpected_futex_error_sleeps_and_reports_a_wake_up() {
        let word = AtomicU32::new(0);
        inject::set_futex_wait_errno(Some(libc::ENOSYS));
        let far = crate::sys::clock::now_ns() + 10_000_000_000;
        let r = wait(&Queue, &word, 0, Some(far), false);
        let past = wait(&Queue, &word, 0, Some(0), false);
        inject::set_futex_wait_errno(None);
        assert_eq!(r, Parked::Woken);
        assert_eq!(past, Parked::TimedOut, "a passed deadline ends the wait");
        assert!(
            FUTEX_FAILURES.with(|f| f.get()) >= 1,
            "failures are counted"
        );
        let _ = wait(&Queue, &word, 1, None, false);
        assert_eq!(
            FUTEX_FAILURES.with(|f| f.get()),
            0,
            "EAGAIN resets the count"
        );
    }
}
