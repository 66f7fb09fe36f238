//! Time stamps at fixed points of a parked wait, for `mwait-experiments
//! park-segments`, which splits the user-space part of a long wait into segments.
//! Compiled in only with the `stamps` feature: each point then stores a reading of
//! the cycle counter (the TSC on x86-64, else the monotonic clock) into a
//! thread-local slot. Without the feature [`mark`] is empty and inlined away.
//!
//! The points in the order a wait that parks at once passes them; the segment
//! between two points is what the path between them costs.

/// A point of a parked wait. `Syscall` and `Returned` are passed on Linux only
/// (around the futex call, which the loom model does not make); elsewhere a wait
/// passes the others.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(any(mwait_loom, not(target_os = "linux")), allow(dead_code))]
pub(crate) enum Point {
    /// `WaitCell::wait_until_with` begins.
    Entry = 0,
    /// The ladder's entry, after the first look and the inline spin.
    Ladder,
    /// The policy resolved and the start decided (`ladder::Start`).
    Decided,
    /// The protocol's park begins (`MonitorLine::park`).
    Park,
    /// Announced, fenced and re-checked: the futex wrapper is called next.
    Rechecked,
    /// Right before the `futex` system call.
    Syscall,
    /// Right after it returned.
    Returned,
    /// The park's end: relayed a wake tree's turn, withdrawn the announcement.
    Withdrawn,
    /// The ladder returned to `wait_until_with`.
    Ended,
}

/// Stamps `p` on the calling thread (with the `stamps` feature).
#[inline(always)]
pub(crate) fn mark(p: Point) {
    #[cfg(feature = "stamps")]
    imp::SLOTS.with(|s| s[p as usize].set(imp::now()));
    #[cfg(not(feature = "stamps"))]
    let _ = p;
}

/// `mwait::stamps` (hidden from the docs): readings of the cycle counter at the
/// points of the calling thread's last parked wait, for `mwait-experiments
/// park-segments`. Empty without the `stamps` feature.
pub mod public {
    #[cfg(feature = "stamps")]
    pub use super::imp::{now, read, ticks_to_ns, NAMES, POINTS};
}

#[cfg(feature = "stamps")]
mod imp {
    use super::Point;
    use std::cell::Cell;

    /// How many points a parked wait stamps.
    pub const POINTS: usize = Point::Ended as usize + 1;

    /// The points' names, in the order a wait that parks at once passes them.
    pub const NAMES: [&str; POINTS] = [
        "entry",
        "ladder",
        "decided",
        "park",
        "rechecked",
        "syscall",
        "returned",
        "withdrawn",
        "ended",
    ];

    std::thread_local! {
        /// The calling thread's last reading at each point (0: never passed).
        pub(super) static SLOTS: [Cell<u64>; POINTS] = const { [const { Cell::new(0) }; POINTS] };
    }

    /// A reading of the counter the points stamp (the TSC on x86-64, else the
    /// monotonic clock in ns), for the caller's own stamps around a wait.
    #[inline(always)]
    pub fn now() -> u64 {
        #[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
        return crate::sys::x86::tsc::rdtsc();
        #[cfg(not(all(target_arch = "x86_64", not(mwait_loom))))]
        return crate::sys::clock::now_ns();
    }

    /// The calling thread's last reading at each point, in [`NAMES`] order (0 for a
    /// point it never passed).
    pub fn read() -> [u64; POINTS] {
        SLOTS.with(|s| std::array::from_fn(|i| s[i].get()))
    }

    /// A difference of two readings, in nanoseconds.
    pub fn ticks_to_ns(ticks: u64) -> f64 {
        #[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
        return ticks as f64 * 1e9 / crate::sys::x86::tsc::rate().hz as f64;
        #[cfg(not(all(target_arch = "x86_64", not(mwait_loom))))]
        return ticks as f64;
    }
}

// `Syscall` and `Returned` are passed on Linux only.
#[cfg(all(test, feature = "stamps", target_os = "linux", not(mwait_loom)))]
mod tests {
    use super::imp::{now, read, ticks_to_ns, POINTS};
    use crate::WaitCell;
    use std::sync::Arc;
    use std::time::Duration;

    /// A wait that parks passes every point once, in order, after its call.
    #[test]
    fn a_parked_wait_passes_every_point_in_order() {
        let cell = Arc::new(WaitCell::new_parker(0));
        let c = cell.clone();
        let waiter = std::thread::spawn(move || {
            let call = now();
            c.wait_until(|v| v == 1);
            let back = now();
            let mut all = vec![call];
            all.extend_from_slice(&read());
            all.push(back);
            all
        });
        while cell.parked_waiters() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        cell.store(1);
        let all = waiter.join().unwrap();
        assert!(all.windows(2).all(|w| w[0] <= w[1]), "{all:?}");
        assert!(ticks_to_ns(all[POINTS + 1] - all[0]) > 0.0);
    }

    /// A wait with a zero timeout, or one whose deadline has passed, is its first
    /// look: it passes none of the ladder's points, where a wait with a timeout of
    /// 1 µs passes the ladder's entry.
    #[test]
    fn a_wait_whose_time_is_up_never_reaches_the_ladder() {
        let points = |wait: fn(&WaitCell) -> bool| {
            std::thread::spawn(move || {
                assert!(wait(&WaitCell::new(0)), "the wait timed out");
                read()
            })
            .join()
            .unwrap()
        };
        let zero = |c: &WaitCell| {
            c.wait_until_timeout(|v| v == 1, Duration::ZERO)
                .is_timed_out()
        };
        let passed = |c: &WaitCell| {
            let deadline = std::time::Instant::now();
            c.wait_until_deadline(|v| v == 1, deadline).is_timed_out()
        };
        let short = |c: &WaitCell| {
            let timeout = Duration::from_micros(1);
            c.wait_until_timeout(|v| v == 1, timeout).is_timed_out()
        };
        assert_eq!(points(zero), [0; POINTS]);
        assert_eq!(points(passed), [0; POINTS]);
        let ladder = super::Point::Ladder as usize;
        assert_ne!(points(short)[ladder], 0);
    }
}
