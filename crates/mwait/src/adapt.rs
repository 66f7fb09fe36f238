//! Per-cell adaptive spinning: stop spinning on cells where spinning keeps failing.
//!
//! Spinning pays off only when the partner answers within the spin budget. When it
//! does not (a slow producer, a partner that cannot run because the CPUs are
//! oversubscribed or it shares our CPU), every spin is a pure loss: CPU time taken
//! from other threads and nothing gained. Each cell keeps a score in `0..=SCORE_MAX`:
//! a spin that succeeds moves it up by a quarter of the distance to the top, one that
//! fails moves it down by a quarter. Below `SCORE_SPIN_MIN` the cell skips its spin,
//! except on every `PROBE_EVERY`-th wait, which spins once more to notice a change of
//! pattern; a wait that skipped the spin but finished within the budget anyway (so a
//! spin would have caught it) also counts as a success.
//!
//! These are heuristics, not protocol: relaxed std atomics, racy read-modify-write
//! is fine, and loom does not track them.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

const SCORE_MAX: u32 = 1024;
/// Below this score the spin is skipped (after 8 straight failures from the top).
const SCORE_SPIN_MIN: u32 = 128;
/// While skipping, one wait in this many spins anyway.
const PROBE_EVERY: u32 = 32;

pub(crate) struct Adaptive {
    score: AtomicU32,
    skips: AtomicU32,
}

impl Adaptive {
    pub(crate) const fn new() -> Adaptive {
        Adaptive {
            score: AtomicU32::new(SCORE_MAX),
            skips: AtomicU32::new(0),
        }
    }

    /// The spin budget for the next wait: `base`, or 0 while spinning keeps failing.
    #[inline]
    pub(crate) fn spin_budget(&self, base: u64) -> u64 {
        if base == 0 || self.score.load(Relaxed) >= SCORE_SPIN_MIN {
            return base;
        }
        if self.skips.fetch_add(1, Relaxed) % PROBE_EVERY == 0 {
            base
        } else {
            0
        }
    }

    /// Records whether a spin caught the change.
    #[inline]
    pub(crate) fn record_spin(&self, success: bool) {
        let s = self.score.load(Relaxed);
        let n = if success {
            s + (SCORE_MAX - s) / 4
        } else {
            s - s / 4
        };
        self.score.store(n, Relaxed);
    }

    /// Records a wait that ended past the spin tier without having spun: if it took
    /// less than the spin budget, a spin would have caught it.
    #[inline]
    pub(crate) fn record_unspun_wait(&self, start_ns: u64, now_ns: u64, spin_ns: u64) {
        if now_ns.saturating_sub(start_ns) <= spin_ns {
            self.record_spin(true);
        }
    }

    /// The current score (tests and reports).
    #[allow(dead_code)]
    pub(crate) fn score(&self) -> u32 {
        self.score.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_spins_stop_spinning_and_probes_continue() {
        let a = Adaptive::new();
        assert_eq!(a.spin_budget(1000), 1000);
        for _ in 0..8 {
            a.record_spin(false);
        }
        assert!(a.score() < SCORE_SPIN_MIN, "score {}", a.score());
        let spins = (0..PROBE_EVERY * 4)
            .filter(|_| a.spin_budget(1000) > 0)
            .count();
        assert_eq!(spins, 4, "one probe per {PROBE_EVERY} waits");
    }

    #[test]
    fn successes_restore_spinning() {
        let a = Adaptive::new();
        for _ in 0..20 {
            a.record_spin(false);
        }
        assert_eq!(a.spin_budget(0), 0);
        a.record_spin(true);
        a.record_spin(true);
        assert!(a.score() >= SCORE_SPIN_MIN);
        assert_eq!(a.spin_budget(1000), 1000);
    }

    #[test]
    fn a_short_unspun_wait_counts_as_success() {
        let a = Adaptive::new();
        for _ in 0..20 {
            a.record_spin(false);
        }
        let before = a.score();
        a.record_unspun_wait(100, 600, 1000);
        assert!(a.score() > before);
        let mid = a.score();
        a.record_unspun_wait(100, 5000, 1000);
        assert_eq!(a.score(), mid);
    }
}
