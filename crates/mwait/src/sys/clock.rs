//! Monotonic time in nanoseconds: the one clock of the tier ladder.
//!
//! Deadlines travel as `u64` nanoseconds on `CLOCK_MONOTONIC`, the clock that `Instant`
//! uses on Linux and the clock the kernel shim's `WAIT` ioctl takes, so a deadline
//! crosses from the caller to every tier without conversion.

use std::time::{Duration, Instant};

/// Nanoseconds on the monotonic clock.
#[cfg(all(not(mwait_loom), unix))]
#[inline]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on
    // the unix targets we build for, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Nanoseconds since the first call (targets without `clock_gettime`: Windows, wasm).
///
/// `Instant` is monotonic on every target (on Windows it reads
/// `QueryPerformanceCounter`, which counts through sleep and never steps back), and
/// nothing outside this process sees these readings: every deadline is converted
/// into them by [`after`] or [`instant_to_ns`] and compared with them again, and each
/// park tier turns one into a relative timeout against a fresh reading.
#[cfg(all(not(mwait_loom), not(unix)))]
#[inline]
pub(crate) fn now_ns() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Model time (see `loom.rs`).
#[cfg(mwait_loom)]
pub(crate) use super::os::now_ns;

/// `now + d`, saturating.
#[inline]
pub(crate) fn after(d: Duration) -> u64 {
    now_ns().saturating_add(duration_ns(d))
}

/// A duration in nanoseconds, saturating at `u64::MAX`.
#[inline]
pub(crate) const fn duration_ns(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// The monotonic-clock nanosecond reading at which `deadline` falls.
pub(crate) fn instant_to_ns(deadline: Instant) -> u64 {
    let now_i = Instant::now();
    let now = now_ns();
    match deadline.checked_duration_since(now_i) {
        Some(ahead) => now.saturating_add(duration_ns(ahead)),
        None => now.saturating_sub(duration_ns(now_i - deadline)),
    }
}

#[cfg(all(test, not(mwait_loom)))]
mod tests {
    use super::*;

    #[test]
    fn readings_never_step_back() {
        let mut last = now_ns();
        for _ in 0..10_000 {
            let t = now_ns();
            assert!(t >= last, "{t} < {last}");
            last = t;
        }
    }

    #[test]
    fn an_instant_deadline_lands_between_two_readings_plus_its_offset() {
        let ahead = Duration::from_millis(250);
        let before = now_ns();
        let deadline = instant_to_ns(Instant::now() + ahead);
        let after_ = now_ns();
        let ahead_ns = duration_ns(ahead);
        assert!(deadline >= before + ahead_ns && deadline <= after_ + ahead_ns);
        // A deadline in the past lands at or before now (saturating at 0).
        assert!(instant_to_ns(Instant::now()) <= now_ns());
        assert_eq!(duration_ns(Duration::MAX), u64::MAX);
        assert_eq!(after(Duration::MAX), u64::MAX);
    }
}
