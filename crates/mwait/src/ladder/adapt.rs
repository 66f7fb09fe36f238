//! Per-cell adaptive spinning: stop spinning on cells where spinning keeps failing.
//!
//! Spinning pays off only when the partner answers within the spin budget. When it
//! does not (a slow producer, a partner that cannot run because the CPUs are
//! oversubscribed or it shares our CPU), every spin is a pure loss: CPU time taken
//! from other threads and nothing gained. Each cell keeps a score in `0..=SCORE_MAX`:
//! a spin that succeeds moves it up by a quarter of the distance to the top, one that
//! fails halves it, and the second in a row whose change came more than
//! `FAR_FAILURE_BUDGETS` spin budgets later (learned where the wait ends) takes it
//! below the threshold, or the first on a cell that no spin has paid off on yet.
//! Below `SCORE_SPIN_MIN` the cell skips its spin, except on a
//! probe, which asks once more whether a spin would catch the change, to notice a
//! change of pattern. A probe that would otherwise park at once parks: it measures
//! when the change came (the notifier stamps its wake) and scores as a spin of the
//! budget would have (`park::probe`); one with a hardware tier to try, or after a
//! hand-off, spins. The first probe comes a whole gap (`PROBE_MIN` waits) after the
//! failures that brought the score down; each failed one doubles the gap before the
//! next, up to `PROBE_MAX`, and a success brings it back, so a consumer fed every
//! millisecond stops paying for probes (which, at a fixed one in 32 waits, would be
//! a sizeable share of what the default policy adds to a futex wait's CPU time). A
//! wait that skipped the spin but finished soon enough anyway (so a spin would have
//! caught it) also counts as a success.
//!
//! Until a spin has paid off on a cell ([`PAID_OFF`]) its spin is the unproven one,
//! and the rest of its budget is judged from the notifier's stamp of the wake
//! (`estimate.rs`, "The rule"); every failed spin that parks learns from that stamp
//! when the change came (the ladder's `Climb::finish`).
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
//!   that wake counts as a failed spin, and, where the policy opts in, the notifier's
//!   next wait leaves the CPU where another one is free (`apart.rs`).
//!
//! These are heuristics, not protocol: relaxed std atomics, racy read-modify-write
//! is fine, and loom does not track them.

use crate::protocol::OnWake;
use crate::sys;
use std::cell::Cell;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering::Relaxed};

mod caught;
pub(crate) use caught::Caught;

const SCORE_MAX: u32 = 1024;
/// Below this score the spin is skipped: after 4 straight failures from the top, or
/// 2 by far (a new cell's first waits on a slow producer, each a whole spin budget of
/// CPU for nothing), and one success lifts it again.
const SCORE_SPIN_MIN: u32 = 128;
/// While skipping, the first probe comes after this many waits...
const PROBE_MIN: u32 = 32;
/// ...and each failed probe doubles the gap, up to this many waits.
const PROBE_MAX: u32 = 1024;
/// A failed spin whose change came more than this many spin budgets after the spin
/// gave up (the notifier's stamp of the wake says when) failed by far: spins two,
/// four and eight times as long would have failed too. The halving of an ordinary
/// failure assumes the next spin may well succeed; [`FAR_FAILURES_TO_STOP`] far ones
/// in a row say the cell's changes come far apart (a producer every millisecond is
/// two hundred 5 µs budgets away).
pub(crate) const FAR_FAILURE_BUDGETS: u64 = 8;
/// This many far failures in a row stop the spinning of a cell that a spin has paid
/// off on before (the score drops below [`SCORE_SPIN_MIN`]), where four ordinary
/// ones do. One alone is an ordinary failure there: a gap before a burst of values,
/// or a partner preempted once for a time slice, is followed by waits that a spin
/// catches, and a cell whose score fell at the first far failure would park at the
/// start of every burst (a ping-pong whose partner stalls 3 ms every 200 round trips
/// parked 1.0 % of its waits so, 0.5 % with the row: `mwait-experiments
/// stalled-pingpong 200`).
///
/// A cell that no spin has paid off on yet ([`PAID_OFF`] unset) stops at its first
/// far failure: nothing says its changes ever come near, and a new cell fed every
/// millisecond then pays one unproven spin for nothing
/// (`estimate::UNPROVEN_SPIN_NS`) instead of two whole budgets (the figures:
/// `docs/design-notes.md`). A pair whose first wait failed far only because its
/// partner started late gets spinning back at its first wait that ends before it
/// sleeps (see [`Adaptive::record_unspun_wait`] and the ladder's `finish`).
pub(crate) const FAR_FAILURES_TO_STOP: u32 = 2;

/// The bit of [`Adaptive`]'s `far` word that says a spin of the cell has paid off
/// once (a spin caught the change, or a wait that skipped it ended soon enough for
/// one to have): from then on [`FAR_FAILURES_TO_STOP`] far failures in a row stop
/// the spinning, before it one does. Set once, never cleared.
const PAID_OFF: u16 = 0x8000;

/// The bit of [`Adaptive`]'s `far` word that says a notifier on the CPU that the
/// cell's parked waiter slept on woke it (`parked_woken`), since the last probe
/// that parked began ([`Adaptive::probe_begins`]).
const BESIDE: u16 = 0x4000;

// The score and the row of far failures are 16-bit, the row below the flags.
const _: () = assert!(SCORE_MAX <= u16::MAX as u32);
const _: () = assert!(FAR_FAILURES_TO_STOP < BESIDE as u32);

/// What a cell's score grants its next wait ([`Adaptive::grant`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// A spin: the score allows it, or a hand-off's probe is due.
    Spin,
    /// A probe of a cell whose spins stopped. A wait that would otherwise park at
    /// once parks and measures when the change came instead of spinning
    /// (`park::probe`); one with a hardware tier to try, or that does not park,
    /// spins it.
    Probe,
    /// No spin.
    No,
}

/// The per-cell learning state (on the waiter line: written by waiters, and by a
/// notifier whose wake finds the waiter asleep on its own CPU, `parked_woken`).
#[derive(Debug)]
pub(crate) struct Adaptive {
    /// In `0..=SCORE_MAX`; 16 bits, so that it and `far` take one word and the cell
    /// stays 256 bytes.
    score: AtomicU16,
    /// Waits left to skip before the next probe.
    skips: AtomicU32,
    /// The current gap between probes (`PROBE_MIN..=PROBE_MAX`).
    probe_every: AtomicU32,
    /// The CPU the last waiter to park went to sleep on.
    parked_cpu: AtomicU32,
    /// Far failures in a row (`FAR_FAILURE_BUDGETS`), up to `FAR_FAILURES_TO_STOP`,
    /// and the [`PAID_OFF`] and [`BESIDE`] bits.
    far: AtomicU16,
}

impl Adaptive {
    pub(crate) const fn new() -> Adaptive {
        Adaptive {
            score: AtomicU16::new(SCORE_MAX as u16),
            skips: AtomicU32::new(0),
            probe_every: AtomicU32::new(PROBE_MIN),
            parked_cpu: AtomicU32::new(u32::MAX),
            far: AtomicU16::new(0),
        }
    }

    /// Whether a spin has paid off on this cell ([`PAID_OFF`]): until then its spin
    /// is the unproven one (`estimate::UNPROVEN_SPIN_NS`).
    #[inline]
    pub(crate) fn paid_off(&self) -> bool {
        self.far.load(Relaxed) & PAID_OFF != 0
    }

    /// The score, in `0..=SCORE_MAX`.
    #[inline]
    fn score(&self) -> u32 {
        u32::from(self.score.load(Relaxed))
    }

    /// What the next wait may do: spin while the score allows it, else probe when
    /// one is due (a hand-off's probe spins). Decided before the budget is looked
    /// up, so that a wait that parks at once (a slow producer's consumer) reads
    /// neither the estimates nor the CPU detection, whose lines an idle spell has
    /// taken from its cache.
    #[inline]
    pub(crate) fn grant(&self, handoff: bool) -> Grant {
        if self.score() >= SCORE_SPIN_MIN {
            return Grant::Spin;
        }
        let mut left = self.skips.load(Relaxed);
        if handoff {
            // We just woke the partner whose answer we wait for: probe at the
            // fastest rate, the backoff is for waits nobody is about to answer.
            left = left.min(PROBE_MIN);
        }
        if left == 0 {
            self.skips.store(self.probe_every.load(Relaxed), Relaxed);
            if handoff {
                Grant::Spin
            } else {
                Grant::Probe
            }
        } else {
            self.skips.store(left - 1, Relaxed);
            Grant::No
        }
    }

    /// Whether the next wait skips its spin, as [`grant`](Self::grant)`(false)`
    /// would answer [`Grant::No`], and with the same effect: the score is below the
    /// threshold and no probe is due, and one wait of the gap is counted. Where a
    /// probe is due (or the score allows a spin) it writes nothing and answers
    /// `false`, leaving the probe to the ladder's [`grant`](Self::grant).
    #[inline]
    pub(crate) fn skip(&self) -> bool {
        if self.score() >= SCORE_SPIN_MIN {
            return false;
        }
        match self.skips.load(Relaxed) {
            0 => false,
            left => {
                self.skips.store(left - 1, Relaxed);
                true
            }
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
        let s = self.score();
        let n = if success {
            s + (SCORE_MAX - s) / 4
        } else {
            s / 2
        };
        self.set_score(s, n);
        let gap = self.probe_every.load(Relaxed);
        if success {
            if self.far.load(Relaxed) != PAID_OFF {
                self.far.store(PAID_OFF, Relaxed);
            }
            if gap != PROBE_MIN {
                self.probe_every.store(PROBE_MIN, Relaxed);
            }
            if self.skips.load(Relaxed) > PROBE_MIN {
                self.skips.store(PROBE_MIN, Relaxed);
            }
        } else if back_off && s < SCORE_SPIN_MIN && gap < PROBE_MAX {
            // A failed probe (we were already below the spin threshold).
            let next = gap * 2;
            self.probe_every.store(next, Relaxed);
            // The probe's own failure: its grant set the waits to skip to the old
            // gap, and no wait has counted one since (a wait that skips counts
            // before it parks), so the gap after this probe is the doubled one.
            if self.skips.load(Relaxed) == gap {
                self.skips.store(next, Relaxed);
            }
        }
    }

    /// Records how a wait whose spin failed ended: `far` when the change came more
    /// than [`FAR_FAILURE_BUDGETS`] budgets after the spin gave up
    /// ([`failed_by_far`]). The [`FAR_FAILURES_TO_STOP`]th far one in a row takes the
    /// score below the spin threshold (the failure itself already halved it), the
    /// first where no spin has paid off yet; one that came nearer ends the row.
    #[inline]
    pub(crate) fn record_failed_wait(&self, far: bool) {
        let word = self.far.load(Relaxed);
        let (paid_off, row) = (word & PAID_OFF, u32::from(word & !(PAID_OFF | BESIDE)));
        if !far {
            if row != 0 {
                self.far.store(paid_off, Relaxed);
            }
            return;
        }
        let stop = if paid_off != 0 {
            FAR_FAILURES_TO_STOP
        } else {
            1
        };
        let row = (row + 1).min(stop);
        // At most FAR_FAILURES_TO_STOP, below PAID_OFF.
        self.far.store(row as u16 | paid_off, Relaxed);
        if row == stop {
            let s = self.score();
            self.set_score(s, s.min(SCORE_SPIN_MIN / 2));
        }
    }

    /// Moves the score from `old` to `new` (a store only on a change). A score that
    /// falls below [`SCORE_SPIN_MIN`] here starts the skipping with a whole gap
    /// before the first probe: the failures that brought it down were the cell's
    /// probes already.
    #[inline]
    fn set_score(&self, old: u32, new: u32) {
        if new == old {
            return;
        }
        // At most SCORE_MAX, which fits.
        self.score.store(new as u16, Relaxed);
        if old >= SCORE_SPIN_MIN && new < SCORE_SPIN_MIN {
            self.skips.store(self.probe_every.load(Relaxed), Relaxed);
        }
    }

    /// A park whose wait is judged from the notifier's stamp begins (a probe's, or
    /// the park after an unproven spin): forgets an earlier wake by a notifier on
    /// the waiter's CPU, so that [`record_probe`](Self::record_probe) sees only one
    /// made during this park's sleep.
    #[inline]
    pub(crate) fn probe_begins(&self) {
        let word = self.far.load(Relaxed);
        if word & BESIDE != 0 {
            self.far.store(word & !BESIDE, Relaxed);
        }
    }

    /// Records a probe that parked ([`Grant::Probe`]), or an unproven spin's park
    /// judged in time: `in_time` whether the change came within the spin budget, so
    /// that a spin would have caught it. A wait woken by a notifier on the CPU it
    /// slept on records nothing more: that wake counted as a failed spin already
    /// (`parked_woken`), and the partner answered only because the waiter gave up
    /// its CPU, which a spin does not.
    #[inline]
    pub(crate) fn record_probe(&self, in_time: bool) {
        if self.far.load(Relaxed) & BESIDE == 0 {
            self.record_spin(in_time);
        }
    }

    /// Notes a wake of this cell's parked waiter by a notifier on the CPU it slept
    /// on, for a probe that may be sleeping ([`record_probe`](Self::record_probe)).
    #[inline]
    fn note_beside(&self) {
        let word = self.far.load(Relaxed);
        if word & BESIDE == 0 {
            self.far.store(word | BESIDE, Relaxed);
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

/// Whether a spin judged against a budget of `spin_ns` failed by far: the change
/// came `after_ns` after the spin gave up, more than [`FAR_FAILURE_BUDGETS`]
/// budgets.
#[inline]
pub(crate) fn failed_by_far(after_ns: u64, spin_ns: u64) -> bool {
    after_ns > spin_ns.saturating_mul(FAR_FAILURE_BUDGETS)
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
                self.note_beside();
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
    /// It woke a waiter that slept on this thread's CPU, the one named: the pair shares
    /// it. Where the policy opts in, the next wait leaves that CPU where another one is
    /// free (`apart.rs`): a thread that goes on to wait (for its partner's answer, most
    /// likely) is a pair worth separating; one that goes on with other work (a producer
    /// that sleeps between values) is not moved.
    Beside(u32),
}

std::thread_local! {
    /// What this thread's wakes found since its last wait.
    static WOKE: Cell<Woke> = const { Cell::new(Woke::Nobody) };
    /// Whether this thread notified any cell or word since its last wait.
    static NOTIFIED: Cell<bool> = const { Cell::new(false) };
}

/// Notes that this thread changed a cell with a read-modify-write or called its
/// `notify_*` (every unpark is a `swap`): its next wait may be for the answer. One
/// byte store to a thread-local, beside a locked instruction or a fence; a plain
/// `store` and a bare atomic's wake, whose fast paths stay a store (or nothing) and
/// one load, note nothing unless they wake a parked waiter (`note_woke`).
#[inline(always)]
pub(crate) fn note_notified() {
    NOTIFIED.with(|c| c.set(true));
}

/// Whether this thread noted a notify ([`note_notified`]) since its last wait (and
/// forgets it).
#[inline]
pub(crate) fn take_notified() -> bool {
    NOTIFIED.with(|c| c.replace(false))
}

/// Whether this thread has a note for its next wait ([`note_notified`],
/// [`note_woke`]), without taking it: a wait without one may park through
/// [`park::without_climb`](super::park::without_climb), which has nothing to take.
#[inline(always)]
pub(crate) fn notes_pending() -> bool {
    NOTIFIED.with(Cell::get) || WOKE.with(|c| c.get() != Woke::Nobody)
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
mod tests;
