//! Per-cell adaptive spinning: stop spinning on cells where spinning keeps failing.
//!
//! Spinning pays off only when the partner answers within the spin budget. When it
//! does not (a slow producer, a partner that cannot run because the CPUs are
//! oversubscribed or it shares our CPU), every spin is a pure loss: CPU time taken
//! from other threads and nothing gained. Each cell keeps a score in `0..=SCORE_MAX`:
//! a spin that succeeds moves it up by a quarter of the distance to the top, one that
//! fails halves it. Below `SCORE_SPIN_MIN` the cell skips its spin,
//! except on a probe, which spins once more to notice a change of pattern. Probes
//! start every `PROBE_MIN`-th wait; each failed one doubles the gap, up to
//! `PROBE_MAX`, and a success brings it back, so a consumer fed every millisecond
//! stops paying for probes (which, at a fixed one in 32 waits, would be a sizeable
//! share of what the default policy adds to a futex wait's CPU time). A wait that
//! skipped the spin but finished soon enough anyway (so a spin would have caught it)
//! also counts as a success.
//!
//! Two facts about the moment of the wait override the score:
//!
//! - **We just unparked our partner.** A thread that stored into a cell, found a
//!   parked waiter and woke it, and now waits for the answer, on that cell or
//!   another (a ping-pong over one cell or two, a barrier, a request and its
//!   response), will wait at least the partner's
//!   futex wake-up latency. A normal spin is shorter than that, fails, and parks us
//!   too, so both sides would stay in the slow futex mode for ever. That wait spins
//!   for the hand-off spin instead, two measured wake-up latencies within bounds
//!   (`estimate.rs`; still scored, so a partner that takes longer than that to answer
//!   turns it off again).
//! - **Spinning cannot help.** On a machine with more runnable threads than CPUs a
//!   spinner burns a CPU that the partner may need: waits whose cell's last spin
//!   failed skip the spin and the hardware tier while that lasts (`load.rs`). And
//!   when a notifier wakes a parked waiter that went to sleep on the notifier's own
//!   CPU, the pair shares a CPU: a spin of either would only delay the other, so
//!   that wake counts as a failed spin, and the notifier's next wait leaves the CPU
//!   where another one is free (`apart.rs`).
//!
//! These are heuristics, not protocol: relaxed std atomics, racy read-modify-write
//! is fine, and loom does not track them.

use crate::protocol::OnWake;
use crate::sys;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

const SCORE_MAX: u32 = 1024;
/// Below this score the spin is skipped: after 4 straight failures from the top (a
/// new cell's first 4 waits on a slow producer, each a whole spin budget of CPU for
/// nothing: with a quarter per failure it took 8), and one success lifts it again.
const SCORE_SPIN_MIN: u32 = 128;
/// While skipping, the first probe comes after this many waits...
const PROBE_MIN: u32 = 32;
/// ...and each failed probe doubles the gap, up to this many waits.
const PROBE_MAX: u32 = 1024;

/// The per-cell learning state (on the waiter line: written by waiters only).
#[derive(Debug)]
pub(crate) struct Adaptive {
    score: AtomicU32,
    /// Waits left to skip before the next probe.
    skips: AtomicU32,
    /// The current gap between probes (`PROBE_MIN..=PROBE_MAX`).
    probe_every: AtomicU32,
    /// The CPU the last waiter to park went to sleep on.
    parked_cpu: AtomicU32,
    /// 1 while the last spin of the ladder caught the change (and no wait parked
    /// since): the next untimed wait may then spin its first loads inline, see
    /// [`Adaptive::quick_spin_ok`].
    caught: AtomicU32,
}

impl Adaptive {
    pub(crate) const fn new() -> Adaptive {
        Adaptive {
            score: AtomicU32::new(SCORE_MAX),
            skips: AtomicU32::new(0),
            probe_every: AtomicU32::new(PROBE_MIN),
            parked_cpu: AtomicU32::new(u32::MAX),
            caught: AtomicU32::new(0),
        }
    }

    /// The spin budget for the next wait: `base`, or 0 while spinning keeps failing.
    #[inline]
    pub(crate) fn spin_budget(&self, base: u64, handoff: bool) -> u64 {
        if base == 0 || self.score.load(Relaxed) >= SCORE_SPIN_MIN {
            return base;
        }
        let mut left = self.skips.load(Relaxed);
        if handoff {
            // We just woke the partner whose answer we wait for: probe at the
            // fastest rate, the backoff is for waits nobody is about to answer.
            left = left.min(PROBE_MIN);
        }
        if left == 0 {
            self.skips.store(self.probe_every.load(Relaxed), Relaxed);
            base
        } else {
            self.skips.store(left - 1, Relaxed);
            0
        }
    }

    /// Whether a wait may spin its first loads inline, before the ladder: the last spin
    /// of the ladder on this cell caught the change and no wait has parked since (a
    /// spin that catches its partner is not stopped by the run queue's length, see
    /// `load.rs`). One load, no clock.
    #[inline(always)]
    pub(crate) fn quick_spin_ok(&self) -> bool {
        self.caught()
    }

    /// Whether the cell's last spin caught the change (and no park came since).
    #[inline(always)]
    pub(crate) fn caught(&self) -> bool {
        self.caught.load(Relaxed) != 0
    }

    /// Notes whether the ladder's spin caught the change (`false` also when a wait
    /// parks). Stores only on a change.
    #[inline]
    pub(crate) fn note_caught(&self, caught: bool) {
        if (self.caught.load(Relaxed) != 0) != caught {
            self.caught.store(u32::from(caught), Relaxed);
        }
    }

    /// Records whether a spin caught the change.
    #[inline]
    pub(crate) fn record_spin(&self, success: bool) {
        self.record(success, true);
    }

    /// Records whether a spin right after waking our partner caught the answer; a
    /// failure does not slow the probes down.
    #[inline]
    pub(crate) fn record_handoff_spin(&self, success: bool) {
        self.record(success, false);
    }

    /// Moves the score a quarter of the way up (success) or halves it, and resets or
    /// backs off the probing.
    ///
    /// Every store is made only when it changes the value: in the steady state of a
    /// cell whose spins succeed (score at the top, probes at the fastest rate) a wait
    /// writes nothing here. A store, even of the same value, needs the line in this
    /// core's cache exclusively; if another core has read it since (a prefetch of the
    /// adjacent line, a waiter of the same cell on another CPU), taking it back costs
    /// a coherence round trip, and since x86 makes stores visible in order, the next
    /// store, the one that answers our partner, would wait behind it.
    #[inline]
    fn record(&self, success: bool, back_off: bool) {
        let s = self.score.load(Relaxed);
        let n = if success {
            s + (SCORE_MAX - s) / 4
        } else {
            s / 2
        };
        if n != s {
            self.score.store(n, Relaxed);
        }
        let gap = self.probe_every.load(Relaxed);
        if success {
            if gap != PROBE_MIN {
                self.probe_every.store(PROBE_MIN, Relaxed);
            }
            if self.skips.load(Relaxed) > PROBE_MIN {
                self.skips.store(PROBE_MIN, Relaxed);
            }
        } else if back_off && s < SCORE_SPIN_MIN && gap < PROBE_MAX {
            // A failed probe (we were already below the spin threshold).
            self.probe_every.store(gap * 2, Relaxed);
        }
    }

    /// Records a wait that ended past the spin tier without having spun: if it took
    /// less than the spin budget, a spin would have caught it.
    #[inline]
    pub(crate) fn record_unspun_wait(&self, start_ns: u64, now_ns: u64, spin_ns: u64) {
        if now_ns.saturating_sub(start_ns) <= spin_ns {
            self.record_spin(true);
        }
    }

    /// Notes the CPU of a waiter about to park. Stores only on a change: the notifier
    /// reads it on every wake (`waking_on_same_cpu`), and a store would take the line
    /// back from it on every park of a waiter that stays on one CPU.
    #[inline]
    pub(crate) fn note_parking(&self) {
        let cpu = sys::current_cpu();
        if self.parked_cpu.load(Relaxed) != cpu {
            self.parked_cpu.store(cpu, Relaxed);
        }
    }

    /// Called by a notifier that is waking parked waiters: the notifier's CPU if the
    /// (last) parked waiter slept on it (the pair shares a CPU), else `None`.
    #[inline]
    pub(crate) fn waking_on_same_cpu(&self) -> Option<u32> {
        let cpu = sys::current_cpu();
        (cpu != u32::MAX && self.parked_cpu.load(Relaxed) == cpu).then_some(cpu)
    }
}

impl OnWake for Adaptive {
    /// Remembers the hand-off (the answer we may wait for next comes after the
    /// partner's wake-up). A partner that slept on our CPU shares it with us: a spin
    /// would only delay it, so the wake counts as a failed spin, and our next wait
    /// decides whether to leave the CPU ([`Woke::Beside`]). After the wake, not
    /// before: this bookkeeping (the CPU number, the cell's score) is not on the
    /// woken waiter's path then.
    fn parked_woken(&self) {
        match self.waking_on_same_cpu() {
            Some(cpu) => {
                self.record_spin(false);
                note_woke(Woke::Beside(cpu));
            }
            None => note_woke(Woke::Partner),
        }
    }
}

/// What this thread's wakes of parked waiters since its last wait found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// It woke nobody.
    Nobody,
    /// It woke a waiter that slept on another CPU: the answer it may wait for next
    /// comes after that waiter's wake-up (a hand-off).
    Partner,
    /// It woke a waiter that slept on this thread's CPU, the one named: the pair
    /// shares it. The next wait leaves that CPU where another one is free
    /// (`apart.rs`): a thread that goes on to wait (for its partner's answer, most
    /// likely) is a pair worth separating; one that goes on with other work (a
    /// producer that sleeps between values) is not moved.
    Beside(u32),
}

std::thread_local! {
    /// What this thread's wakes found since its last wait.
    static WOKE: Cell<Woke> = const { Cell::new(Woke::Nobody) };
}

/// Notes what this thread's wake of a parked waiter (on any cell) found.
#[inline]
pub(crate) fn note_woke(w: Woke) {
    WOKE.with(|c| c.set(w));
}

/// What this thread's wakes of parked waiters found since its last wait (and
/// forgets it). Any cell counts: the answer to a wake often comes on another cell
/// (a ping-pong over two cells, a request and its response).
#[inline]
pub(crate) fn take_woke() -> Woke {
    WOKE.with(|c| c.replace(Woke::Nobody))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_spin_follows_the_last_ladder_spin() {
        let a = Adaptive::new();
        assert!(!a.quick_spin_ok(), "nothing caught yet");
        a.note_caught(true);
        assert!(a.quick_spin_ok(), "whatever the run queue says");
        a.note_caught(false);
        assert!(!a.quick_spin_ok(), "a failed spin or a park turns it off");
    }

    /// Indices of the waits that probe among `n`, every probe failing.
    fn failing_probes(a: &Adaptive, n: u32) -> Vec<u32> {
        (0..n)
            .filter(|_| {
                let probe = a.spin_budget(1000, false) > 0;
                if probe {
                    a.record_spin(false);
                }
                probe
            })
            .collect()
    }

    #[test]
    fn failing_spins_stop_spinning_and_probes_back_off() {
        let a = Adaptive::new();
        for _ in 0..3 {
            assert_eq!(a.spin_budget(1000, false), 1000);
            a.record_spin(false);
        }
        assert_eq!(
            a.spin_budget(1000, false),
            1000,
            "three failures still spin"
        );
        a.record_spin(false);
        assert!(
            a.score.load(Relaxed) < SCORE_SPIN_MIN,
            "score {}",
            a.score.load(Relaxed)
        );
        let probes = failing_probes(&a, 20_000);
        let gaps: Vec<u32> = probes.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(probes[0], 0, "the first skip-mode wait probes");
        assert_eq!(gaps[0], PROBE_MIN + 1);
        for w in gaps.windows(2) {
            assert!(
                w[1] == (w[0] - 1) * 2 + 1 || w[1] == PROBE_MAX + 1,
                "{gaps:?}"
            );
        }
        assert_eq!(*gaps.last().unwrap(), PROBE_MAX + 1, "capped: {gaps:?}");
    }

    #[test]
    fn a_successful_probe_brings_probing_back_to_its_fastest() {
        let a = Adaptive::new();
        for _ in 0..20 {
            a.record_spin(false);
        }
        let _ = failing_probes(&a, 10_000);
        a.record_spin(true);
        let probes = failing_probes(&a, 5_000);
        let first_gap = probes.windows(2).map(|w| w[1] - w[0]).find(|&g| g > 1);
        assert_eq!(first_gap, Some(PROBE_MIN + 1), "{probes:?}");
    }

    #[test]
    fn successes_restore_spinning() {
        let a = Adaptive::new();
        for _ in 0..20 {
            a.record_spin(false);
        }
        assert_eq!(a.spin_budget(0, false), 0);
        a.record_spin(true);
        a.record_spin(true);
        assert!(a.score.load(Relaxed) >= SCORE_SPIN_MIN);
        assert_eq!(a.spin_budget(1000, false), 1000);
    }

    #[test]
    fn a_wake_is_remembered_once() {
        assert_eq!(take_woke(), Woke::Nobody);
        note_woke(Woke::Partner);
        assert_eq!(take_woke(), Woke::Partner);
        assert_eq!(take_woke(), Woke::Nobody, "taken once");
        note_woke(Woke::Beside(3));
        assert_eq!(take_woke(), Woke::Beside(3));
    }

    #[test]
    fn a_short_unspun_wait_counts_as_success() {
        let a = Adaptive::new();
        for _ in 0..20 {
            a.record_spin(false);
        }
        let before = a.score.load(Relaxed);
        a.record_unspun_wait(100, 600, 1000);
        assert!(a.score.load(Relaxed) > before);
        let mid = a.score.load(Relaxed);
        a.record_unspun_wait(100, 5000, 1000);
        assert_eq!(a.score.load(Relaxed), mid);
    }
}
