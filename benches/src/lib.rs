//! The harness behind both `cargo bench` (criterion) and `cargo xtask bench` (the report
//! runner, `src/bin/mwait-bench/`): one [`Signal`] per mechanism, and the scenarios.
//!
//! A [`Signal`] carries a `u32` from one thread to another: `set` publishes a value and
//! wakes the other side as that mechanism does; `wait_eq` blocks until the value is
//! seen. Every mechanism is measured through the same scenario code, side by side in
//! one run, so only ratios within a run are quoted.

pub mod atomic;
pub mod clients;
pub mod cold;
pub mod energy;
pub mod impls;
#[cfg(all(feature = "stamps", target_os = "linux"))]
pub mod park_segments;
pub mod scale;
pub mod scenarios;
pub mod spsc;
pub mod tradeoff;

use mwait_support::nearest_rank;
use std::future::Future;

/// Round trips per latency sample of the ping-pong scenarios (warm and cold): each
/// sample is the mean of this many consecutive round trips, with one pair of clock
/// readings around them. The rule: the readings cost at most a few % of a sample
/// whose round trips take ~100 ns, the fastest PAUSE ping-pong seen, and are work
/// the timed thread does between round trips that must not move the ratio to PAUSE
/// (the figures for 4, 16 and 64 per sample are in `docs/design-notes.md`). A
/// median over samples still ignores a rare slow round trip.
pub const ROUND_TRIP_BATCH: u32 = 16;

/// A one-way, one-waiter signal of a growing `u32` counter.
pub trait Signal: Send + Sync {
    /// Publishes `v` (larger than every earlier value) and wakes the waiter if that
    /// mechanism needs to.
    fn set(&self, v: u32);
    /// Blocks until the value is at least `v`; returns the value seen. (A waiter that
    /// waited for one exact value could miss it when the setter is faster.)
    fn wait_ge(&self, v: u32) -> u32;
    /// The word that holds the value, where `set` writes it there (a plain store to
    /// it publishes a value to a waiter that spins on it): the ping-pong's PAUSE
    /// baseline then runs on this very memory (see
    /// [`scenarios::interleaved_with_pause`]).
    fn word(&self) -> Option<&std::sync::atomic::AtomicU32> {
        None
    }
}

/// A growing `u32` that one async task raises and another awaits: the async
/// ping-pong's view of a mechanism.
pub trait AsyncSignal: Default + Send + Sync + 'static {
    /// Publishes `v` (larger than every earlier value) and wakes the awaiting task.
    fn set(&self, v: u32);
    /// Completes once the value is at least `v`, with the value seen.
    fn reach(&self, v: u32) -> impl Future<Output = u32> + Send + '_;
}

/// Summary statistics of a sample of nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Number of samples.
    pub n: usize,
}

/// p50/p99 of `samples` (nearest rank).
pub fn stats(samples: &mut [u64]) -> Stats {
    samples.sort_unstable();
    Stats {
        p50: nearest_rank(samples, 50.0) as f64,
        p99: nearest_rank(samples, 99.0) as f64,
        n: samples.len(),
    }
}

/// The order in which round `round` visits `n` implementations: rotated by the
/// round, so that no implementation always runs first, or always right after the
/// same neighbour. The report runner measures every implementation once per round
/// and compares implementations within a round: a machine whose speed drifts
/// between rounds (a shared VM) moves both sides of a ratio alike.
pub fn round_order(n: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + round) % n.max(1))
}

/// The median of `v` (the mean of the middle two for an even count); NaN if empty.
pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The smallest and largest of `v` (NaN, NaN if empty).
pub fn min_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// Per-round ratios `a[k] / b[k]` of two implementations measured in the same
/// rounds: (median, smallest, largest).
pub fn paired_ratio(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    let (lo, hi) = min_max(&r);
    (median(&r), lo, hi)
}

/// Per-round ratios `a / b` taken only between measures made under the same
/// condition: `a[k][c]` and `b[k][c]` are round `k`'s measures in condition `c` (NaN
/// where that condition did not occur often enough in that round). Used for the
/// wake latency of a parked waiter, which depends first on whether the scheduler
/// woke it on the producer's CPU or another: a choice that is a coin toss per round
/// and would otherwise decide a ratio between two mechanisms that park alike.
pub fn matched_ratios<const C: usize>(a: &[[f64; C]], b: &[[f64; C]]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(x, y)| x / y))
        .filter(|r| r.is_finite())
        .collect()
}

/// A round's single measure (a throughput) put in the slot of `matched_ratios` for
/// the round's main placement: slot 0 when at least half of the wakes ran on the
/// producer's CPU (`share`), slot 1 otherwise; NaN in the other slot.
pub fn in_main_placement(value: f64, share: f64) -> [f64; 2] {
    if share >= 0.5 {
        [value, f64::NAN]
    } else {
        [f64::NAN, value]
    }
}

/// One-sided sign test: the probability that at least `k` of `n` fair coin tosses
/// come up heads. A small value (under 0.05, say) means that `k` of `n` paired
/// rounds going one way is unlikely to be chance.
pub fn sign_test_p(k: usize, n: usize) -> f64 {
    // Sum of C(n, i) / 2^n for i >= k, with the binomial coefficients built up in
    // floating point (n is a few dozen rounds at most).
    let mut c = 1.0f64; // C(n, 0)
    let mut tail = 0.0;
    for i in 0..=n {
        if i >= k {
            tail += c;
        }
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    tail / 2f64.powi(n as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_and_cover_every_implementation() {
        let orders: Vec<Vec<usize>> = (0..3).map(|r| round_order(3, r).collect()).collect();
        assert_eq!(orders, vec![vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1]]);
    }

    #[test]
    fn paired_ratios_take_the_median_round() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // Round 2 ran on a slower machine: both sides doubled, the ratio did not.
        let (m, lo, hi) = paired_ratio(&[110.0, 220.0, 100.0], &[100.0, 200.0, 100.0]);
        assert_eq!((m, lo, hi), (1.1, 1.0, 1.1));
    }

    #[test]
    fn matched_ratios_compare_only_like_with_like() {
        let nan = f64::NAN;
        // Round 0: both woke on the other CPU. Round 1: `a` on the producer's CPU,
        // `b` elsewhere: no pair. Round 2: both saw both placements.
        let a = [[nan, 9.0], [2.5, nan], [2.0, 10.0]];
        let b = [[nan, 10.0], [nan, 9.0], [2.5, 8.0]];
        assert_eq!(matched_ratios(&a, &b), vec![0.9, 0.8, 1.25]);
    }

    #[test]
    fn sign_test_tails() {
        assert_eq!(sign_test_p(0, 5), 1.0);
        assert_eq!(sign_test_p(5, 5), 1.0 / 32.0);
        assert!((sign_test_p(4, 5) - 6.0 / 32.0).abs() < 1e-12);
        assert!((sign_test_p(7, 10) - 176.0 / 1024.0).abs() < 1e-12);
        assert_eq!(sign_test_p(6, 5), 0.0);
        // 10 of 13 rounds one way is significant at 5 %, 9 of 13 is not.
        assert!(sign_test_p(10, 13) < 0.05 && sign_test_p(9, 13) > 0.05);
    }

    #[test]
    fn stats_are_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = stats(&mut v);
        assert_eq!((s.p50, s.p99, s.n), (50.0, 99.0, 100));
    }
}
