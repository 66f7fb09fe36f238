//! The trade-off picture: what a waiter pays in CPU time for its wake-up latency,
//! per mechanism, across idle gaps from 1 µs to 10 ms (the report's
//! `latency_cpu.svg`). A waiting primitive trades one for the other; this shows
//! the trade instead of describing it.

use crate::impls::Make;
use crate::scenarios::slow_producer_paced;
use crate::stats;
use std::thread;
use std::time::{Duration, Instant};

/// The idle gaps between two stores.
pub const GAPS: [Duration; 5] = [
    Duration::from_micros(1),
    Duration::from_micros(10),
    Duration::from_micros(100),
    Duration::from_millis(1),
    Duration::from_millis(10),
];

/// The mechanisms drawn, by report name.
pub const MECHANISMS: [&str; 5] = [
    "waitcell",
    "futex",
    "pause",
    "parking-lot",
    "crossbeam-parker",
];

/// The fewest stores measured at one gap.
pub const MIN_STORES: u32 = 50;

/// Below this much of a gap the producer spins instead of sleeping: a sleep
/// overshoots by tens of µs (the timer slack and the wake-up).
const SPIN_TAIL: Duration = Duration::from_micros(200);

/// One point of a curve: at one gap, the waiter's CPU time per second of wall
/// time and the p50 of its wake-ups (store to waiter running, ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The idle gap between two stores.
    pub gap: Duration,
    /// The waiter's CPU share (1.0: a whole CPU).
    pub cpu: f64,
    /// The wake-up p50, ns.
    pub wake_p50: f64,
}

/// Waits `gap` from now: a sleep for all but the last [`SPIN_TAIL`], then a spin,
/// so that short gaps are as long as asked.
fn wait_out(gap: Duration) {
    let end = Instant::now() + gap;
    if let Some(sleep) = gap.checked_sub(SPIN_TAIL) {
        thread::sleep(sleep);
    }
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// The curve of `make`: a producer pinned to CPU 0 stores after each gap of
/// [`GAPS`], a waiter pinned to CPU 1 waits for every store, for `budget` per gap
/// (at least [`MIN_STORES`] gaps).
pub fn curve(make: Make, budget: Duration) -> Vec<Point> {
    GAPS.iter()
        .map(|&gap| {
            let d = budget.max(gap * MIN_STORES);
            let mut r = slow_producer_paced(make, d, Some((0, 1)), || wait_out(gap));
            Point {
                gap,
                cpu: r.waiter_cpu,
                wake_p50: stats(&mut r.wake_ns).p50,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_is_as_long_as_asked() {
        for gap in [Duration::from_micros(5), Duration::from_micros(300)] {
            let t0 = Instant::now();
            wait_out(gap);
            assert!(t0.elapsed() >= gap);
        }
    }

    #[test]
    fn a_spinning_waiter_pays_a_whole_cpu_and_a_parked_one_little() {
        let pause = crate::impls::by_name("pause").unwrap();
        let futex = crate::impls::by_name("futex").unwrap();
        let budget = Duration::from_millis(30);
        let spin = curve(pause, budget);
        let park = curve(futex, budget);
        assert_eq!(spin.len(), GAPS.len());
        // At the longest gap the PAUSE waiter spins the whole time it gets the CPU,
        // the futex waiter sleeps nearly all of it (0.3 % of a CPU here).
        let (s, p) = (spin.last().unwrap(), park.last().unwrap());
        assert!(s.cpu > 2.0 * p.cpu, "pause {s:?}, futex {p:?}");
        // A thread's CPU time cannot exceed the wall time by more than the clocks'
        // granularity.
        assert!(spin
            .iter()
            .chain(&park)
            .all(|pt| (0.0..1.05).contains(&pt.cpu)));
    }
}
