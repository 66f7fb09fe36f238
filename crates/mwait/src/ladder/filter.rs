//! [`LogEstimate`]: a duration estimated online from samples, robust to outliers.
//!
//! Each estimate is the median of the last [`WINDOW`] samples, each kept as its
//! base-2 logarithm in 1/8 octave (9 % steps), one byte, so that the window and its
//! sample count pack into one `AtomicU64`, updated with a single compare-exchange
//! that gives up when another thread got there first (a lost sample, never a
//! wait). The median of the window is computed by the writer and kept beside it,
//! so a reader makes one load. Before the window is full the median is taken over
//! the samples there are (the lower one of an even count: the shorter spin), and
//! before the first sample the prior counts. A median ignores up to three wild
//! samples in seven (a waiter preempted right after its wake-up, a first wake-up
//! that found the other vCPU halted), which matters because wake-ups are rare in a
//! process whose spins succeed (one in a thousand waits in a pinned ping-pong: a
//! mean would carry a cold start's outlier for a long time), while a lasting change
//! wins after four samples.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// How many recent samples an estimate keeps: its median is the estimate.
pub(crate) const WINDOW: usize = 7;

/// `log2(x)` in 1/256 octave (`x >= 1`; 0 for 0): the integer part exactly, the
/// fraction linear between powers of two (at most 0.086 octave, 6 %, low).
pub(crate) fn log2_q8(x: u64) -> u32 {
    if x == 0 {
        return 0;
    }
    let i = 63 - x.leading_zeros();
    let frac = if i >= 8 { x >> (i - 8) } else { x << (8 - i) } & 0xff;
    (i << 8) | frac as u32
}

/// The inverse of [`log2_q8`] (the same linear interpolation), saturating.
pub(crate) fn exp2_q8(q: u32) -> u64 {
    let (i, frac) = (q >> 8, u64::from(q & 0xff));
    if i >= 55 {
        return u64::MAX;
    }
    ((256 + frac) << i) >> 8
}

/// A filtered estimate of a duration: see the module docs. Each on
/// its own 128-byte pair of lines: one estimate's writes do not take the other's
/// line, or `estimate::INLINE_LOADS`, from the waiters that read them.
#[repr(align(128))]
pub(crate) struct LogEstimate {
    /// Bytes 0..WINDOW: the last samples, newest first, as `log2(ns)` in 1/8 octave;
    /// byte 7: how many samples have been taken (saturating at 255). 0: none yet.
    window: AtomicU64,
    /// The median of the window in ns; 0 before the first sample.
    median_ns: AtomicU64,
}

impl LogEstimate {
    pub(crate) const fn new() -> LogEstimate {
        LogEstimate {
            window: AtomicU64::new(0),
            median_ns: AtomicU64::new(0),
        }
    }

    /// The estimate in ns, `None` before the first sample.
    pub(crate) fn get(&self) -> Option<u64> {
        Some(self.median_ns.load(Relaxed)).filter(|&m| m != 0)
    }

    /// Whether the window is not full yet (fewer than [`WINDOW`] samples taken).
    #[inline]
    pub(crate) fn young(&self) -> bool {
        ((self.window.load(Relaxed) >> 56) as usize) < WINDOW
    }

    /// How many samples have been taken (saturating at 255).
    #[cfg(test)]
    pub(crate) fn samples(&self) -> u32 {
        (self.window.load(Relaxed) >> 56) as u32
    }

    /// Takes in one sample (in ns). A sample that races with another thread's is
    /// dropped.
    pub(crate) fn record(&self, sample_ns: u64) {
        let old = self.window.load(Relaxed);
        let new = push(old, log2_q3(sample_ns));
        if self
            .window
            .compare_exchange(old, new, Relaxed, Relaxed)
            .is_ok()
        {
            self.median_ns
                .store(exp2_q8(u32::from(median(new)) << 5).max(1), Relaxed);
        }
    }
}

/// `log2(ns)` in 1/8 octave, saturating at one byte (2^31.9 ns, 4 s).
fn log2_q3(ns: u64) -> u8 {
    u8::try_from(log2_q8(ns.max(1)) >> 5).unwrap_or(u8::MAX)
}

/// The packed window after a sample `x`: the samples shift one place, the oldest
/// falls out, the count grows.
fn push(packed: u64, x: u8) -> u64 {
    let count = (packed >> 56).saturating_add(1).min(255);
    let samples = (packed << 8) & ((1u64 << (8 * WINDOW)) - 1);
    (count << 56) | samples | u64::from(x)
}

/// The median of the samples in a packed window (the lower one of an even count).
fn median(packed: u64) -> u8 {
    let n = ((packed >> 56) as usize).min(WINDOW);
    let mut v = [0u8; WINDOW];
    for (i, s) in v.iter_mut().enumerate().take(n) {
        *s = (packed >> (8 * i)) as u8;
    }
    let v = &mut v[..n.max(1)];
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_and_exp2_agree_and_are_close() {
        assert_eq!(log2_q8(1), 0);
        assert_eq!(log2_q8(1024), 10 << 8);
        assert_eq!(log2_q8(3), (1 << 8) | 128);
        for x in [
            1u64,
            2,
            3,
            7,
            100,
            999,
            10_000,
            123_456,
            10_000_000,
            1 << 40,
        ] {
            let back = exp2_q8(log2_q8(x));
            // The fraction keeps 8 bits: within 1/256 of the value.
            assert!(back <= x && x - back <= x / 256 + 1, "{x} -> {back}");
        }
        assert_eq!(exp2_q8(u32::MAX), u64::MAX);
        assert_eq!(log2_q8(0), 0);
    }

    /// The estimate after feeding `samples` into a fresh one.
    fn after(samples: &[u64]) -> u64 {
        let e = LogEstimate::new();
        for &s in samples {
            e.record(s);
        }
        assert_eq!(e.samples() as usize, samples.len().min(255));
        e.get().unwrap()
    }

    /// Whether `x` is within one step of the log scale (1/8 octave, 9 %) of `want`.
    fn near(x: u64, want: u64) -> bool {
        x.abs_diff(want) * 100 <= want * 10
    }

    #[test]
    fn the_first_sample_replaces_the_prior_and_a_steady_input_is_kept() {
        assert_eq!(LogEstimate::new().get(), None);
        assert!(near(after(&[20_000]), 20_000));
        assert!(near(after(&[20_000; 300]), 20_000));
        // Two samples: the lower one.
        assert!(near(after(&[10_000, 40_000]), 10_000));
        assert!(near(after(&[40_000, 10_000, 20_000]), 20_000));
    }

    #[test]
    fn outliers_do_not_move_the_estimate_and_a_lasting_change_wins() {
        // A cold start's wild first wake-up, then ordinary ones.
        assert!(near(after(&[958_000, 30_000, 30_000]), 30_000));
        // Three wild samples in the window of seven, high or low.
        let mut s = vec![25_000u64; 20];
        s.extend([9_000_000, 300, 9_000_000]);
        assert!(near(after(&s), 25_000), "{}", after(&s));
        // The machine became 4x faster for good: four samples suffice.
        s.extend([6_000u64; 4]);
        assert!(near(after(&s), 6_000), "{}", after(&s));
    }

    #[test]
    fn the_window_keeps_the_newest_samples() {
        let mut p = 0;
        for x in 1..=9u8 {
            p = push(p, x);
        }
        assert_eq!(p >> 56, 9);
        assert_eq!(p & 0xff, 9, "newest first");
        assert_eq!((p >> 48) & 0xff, 3, "the oldest kept");
        assert_eq!(median(p), 6);
        assert_eq!(median(0), 0);
        assert_eq!(log2_q3(u64::MAX), u8::MAX);
    }

    #[test]
    fn racing_recorders_lose_samples_but_never_corrupt_the_estimate() {
        let e = std::sync::Arc::new(LogEstimate::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let e = e.clone();
                std::thread::spawn(move || {
                    // Fewer under Miri, which runs them a thousand times slower.
                    for _ in 0..if cfg!(miri) { 100 } else { 10_000 } {
                        e.record(8_000);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!((1..=255).contains(&e.samples()));
        assert!(near(e.get().unwrap(), 8_000));
    }
}
