//! What the waits did: where each one ended, how the hand-off spins fared, and the
//! estimates and budgets in force.
//!
//! The counters live with the waiters and are never touched by a notifier. Each wait
//! is counted twice:
//!
//! - **per cell**, in the cell's waiter line ([`CellStats`]), with a relaxed load and
//!   a relaxed store (a plain `mov` pair on x86, no locked instruction): a count can
//!   be lost when two waiters of one cell finish at the same instant, which a
//!   statistic can afford, a locked add on every wait it cannot;
//! - **for the process**, which [`stats`](crate::stats()) sums on read. A single
//!   process-wide set of counters would be one cache line written by every waiting
//!   thread of the process: on a machine with many cores it would bounce between
//!   them on every wait. So a wait that ended before the park tier counts in a block
//!   of its thread's own (`stats/threads.rs`), with relaxed stores (one writer:
//!   exact); a thread claims a block of a fixed table with one compare-exchange at
//!   its first such count (no allocation, no lock), and folds it into the retired
//!   totals when it exits, so the counts of threads that are gone stay in the sum.
//!   A wait that ended in the park tier (a park, a timeout) instead counts with a
//!   locked add in one of 16 process-wide sets (`stats/parks.rs`), picked by its
//!   thread: its wait cost a system call already, beside which the add is noise,
//!   and a thread that only parks (an executor's idle worker, a raw `Parker`) then
//!   never makes the thread's state, whose first use registers a thread-local
//!   destructor (glibc's `__cxa_thread_atexit_impl`: an allocation, the dynamic
//!   linker's lock, a search of the loaded objects) on code that an idle spell left
//!   cold.

mod parks;
pub(crate) mod threads;

use super::{estimate, Ended};
use crate::sys::counters::WAIT_STATS;
use parks::PARKS;
use std::fmt;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use threads::bump_thread;

/// The counters, by index.
const INLINE_SPIN: usize = 0;
const SPIN: usize = 1;
const HARDWARE: usize = 2;
const PARK: usize = 3;
const TIMEOUT: usize = 4;
const HANDOFF_SPINS: usize = 5;
const HANDOFF_CAUGHT: usize = 6;
const SPURIOUS_HARDWARE: usize = 7;
/// How many counters there are.
const COUNTERS: usize = 8;

/// The counter of a wait that ended at `ended`; `None` for a wait whose predicate held
/// at the first look (no wait at all: not counted, so that the fast path stays one
/// load). The spin-and-yield rounds of a waiter that never parks count as a park (they
/// stand in for one), and so does a park whose deadline passed as the value arrived.
const fn index(ended: Ended) -> Option<usize> {
    match ended {
        Ended::Entry => None,
        Ended::Inline => Some(INLINE_SPIN),
        Ended::Spin => Some(SPIN),
        Ended::Hardware => Some(HARDWARE),
        Ended::Park | Ended::NoPark | Ended::AtDeadline => Some(PARK),
        Ended::TimedOut => Some(TIMEOUT),
    }
}

/// What the waits on one cell (or of the whole process) did. All counts start at zero
/// and only grow; subtract two snapshots to see what happened in between.
///
/// # Examples
///
/// ```
/// let s = mwait::stats().waits;
/// println!("{s}");
/// assert_eq!(s.waits(), s.inline_spin + s.spin + s.hardware + s.park + s.timeout);
/// assert!(s.handoff_caught <= s.handoff_spins);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WaitStats {
    /// Waits that ended in the loads spun inline, before the ladder. A cell counts
    /// them in batches of 64 per waiting thread (the process-wide count is exact):
    /// a cell's count may lag by up to 63 per thread that waits on it.
    pub inline_spin: u64,
    /// Waits that ended in the spin tier.
    pub spin: u64,
    /// Waits that ended in the hardware tier.
    pub hardware: u64,
    /// Waits that ended after a futex park.
    pub park: u64,
    /// Waits whose deadline passed first. A wait whose time was up before it began
    /// (a zero timeout, a deadline already passed) is a poll and is not counted.
    pub timeout: u64,
    /// Spins taken right after the waiting thread woke a parked partner (the
    /// hand-off spin), however the wait ended.
    pub handoff_spins: u64,
    /// Hand-off spins that caught the change.
    pub handoff_caught: u64,
    /// Hardware wait episodes that returned without the value having changed (a
    /// timer, an interrupt, another write to the line, a trapped instruction).
    pub spurious_hardware: u64,
}

impl WaitStats {
    /// How many waits ended, however they ended.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = mwait::WaitStats::default();
    /// assert_eq!(s.waits(), 0);
    /// ```
    pub fn waits(&self) -> u64 {
        self.inline_spin + self.spin + self.hardware + self.park + self.timeout
    }

    /// The counts from `earlier` to `self` (each saturating at zero).
    ///
    /// # Examples
    ///
    /// ```
    /// let before = mwait::stats().waits;
    /// let cell = mwait::WaitCell::new(1);
    /// cell.wait_until(|v| v == 1);
    /// let delta = mwait::stats().waits.since(&before);
    /// assert!(delta.waits() <= mwait::stats().waits.waits());
    /// ```
    pub fn since(&self, earlier: &WaitStats) -> WaitStats {
        WaitStats::from_counts(std::array::from_fn(|i| {
            self.counts()[i].saturating_sub(earlier.counts()[i])
        }))
    }

    /// The shares of the waits that ended in a spin (inline or the spin tier), the
    /// hardware tier and a park, in per cent (0 when no wait ended).
    ///
    /// # Examples
    ///
    /// ```
    /// let (spin, hw, park) = mwait::WaitStats::default().shares();
    /// assert_eq!((spin, hw, park), (0.0, 0.0, 0.0));
    /// ```
    pub fn shares(&self) -> (f64, f64, f64) {
        let n = self.waits();
        if n == 0 {
            return (0.0, 0.0, 0.0);
        }
        let pct = |k: u64| 100.0 * k as f64 / n as f64;
        (
            pct(self.inline_spin + self.spin),
            pct(self.hardware),
            pct(self.park),
        )
    }

    fn counts(&self) -> [u64; COUNTERS] {
        let mut c = [0; COUNTERS];
        c[INLINE_SPIN] = self.inline_spin;
        c[SPIN] = self.spin;
        c[HARDWARE] = self.hardware;
        c[PARK] = self.park;
        c[TIMEOUT] = self.timeout;
        c[HANDOFF_SPINS] = self.handoff_spins;
        c[HANDOFF_CAUGHT] = self.handoff_caught;
        c[SPURIOUS_HARDWARE] = self.spurious_hardware;
        c
    }

    fn from_counts(c: [u64; COUNTERS]) -> WaitStats {
        WaitStats {
            inline_spin: c[INLINE_SPIN],
            spin: c[SPIN],
            hardware: c[HARDWARE],
            park: c[PARK],
            timeout: c[TIMEOUT],
            handoff_spins: c[HANDOFF_SPINS],
            handoff_caught: c[HANDOFF_CAUGHT],
            spurious_hardware: c[SPURIOUS_HARDWARE],
        }
    }
}

impl fmt::Display for WaitStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.waits();
        let pct = |k: u64| {
            if n == 0 {
                0.0
            } else {
                100.0 * k as f64 / n as f64
            }
        };
        write!(
            f,
            "{n} waits: inline spin {:.1} %, spin {:.1} %, hardware {:.1} %, park {:.1} %, \
             timeout {:.1} %; hand-off spins {} ({} caught); spurious hardware returns {}",
            pct(self.inline_spin),
            pct(self.spin),
            pct(self.hardware),
            pct(self.park),
            pct(self.timeout),
            self.handoff_spins,
            self.handoff_caught,
            self.spurious_hardware
        )
    }
}

/// What the waits of this process did, and the estimates and budgets in force
/// ([`stats`](crate::stats())).
///
/// # Examples
///
/// ```
/// let s = mwait::stats();
/// println!("{s}");
/// assert!(s.handoff_spin >= s.spin_budget);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessStats {
    /// The waits of every thread of the process, those that have exited included.
    pub waits: WaitStats,
    /// The measured wake-up latency, from a notifier's `futex_wake` to the woken
    /// waiter running; `None` until a wake-up has been measured. Once it has its
    /// first samples it moves with the parks of waits that spin or just woke a
    /// partner, and with the probes of cells whose spins stopped: a process whose
    /// only waits are consumers of slow producers updates it at their probes only.
    pub wake_latency: Option<Duration>,
    /// The measured cost of one spin round (loads and pauses between two clock
    /// readings); `None` until one has been measured.
    pub spin_round: Option<Duration>,
    /// The spin budget that the measurements (or, before them, the prior) give.
    pub spin_budget: Duration,
    /// The spin right after waking a parked partner that they give.
    pub handoff_spin: Duration,
}

impl fmt::Display for ProcessStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let measured = |d: Option<Duration>| match d {
            Some(d) => format!("{} ns", d.as_nanos()),
            None => "not measured yet".to_string(),
        };
        writeln!(f, "{}", self.waits)?;
        write!(
            f,
            "wake-up latency {}, spin round {}; spin budget {} ns, hand-off spin {} ns",
            measured(self.wake_latency),
            measured(self.spin_round),
            self.spin_budget.as_nanos(),
            self.handoff_spin.as_nanos()
        )
    }
}

/// What the waits of this process did, summed over its threads (those that exited
/// included), with the wake-up and spin-round estimates and the budgets they give.
///
/// Reading sums one small block per thread that has waited, under a lock: meant for
/// reports and tests, not for a hot loop.
///
/// # Examples
///
/// ```
/// let before = mwait::stats();
/// // ... waits ...
/// let after = mwait::stats();
/// let (spin, hw, park) = after.waits.since(&before.waits).shares();
/// println!("spin {spin:.0} %, hardware {hw:.0} %, park {park:.0} %");
/// ```
pub fn stats() -> ProcessStats {
    process_stats(crate::detect::Capabilities::for_waits().hypervisor)
}

/// [`stats`] for a machine with or without a hypervisor.
pub(crate) fn process_stats(hypervisor: bool) -> ProcessStats {
    let b = estimate::current(hypervisor);
    ProcessStats {
        waits: WaitStats::from_counts(process_counts()),
        wake_latency: estimate::WAKE.get().map(Duration::from_nanos),
        spin_round: estimate::SPIN_ROUND.get().map(Duration::from_nanos),
        spin_budget: Duration::from_nanos(b.spin_ns),
        handoff_spin: Duration::from_nanos(b.handoff_ns),
    }
}

/// A set of counters with one writer at a time (or racing writers that may lose a
/// count): relaxed load and store, no locked instruction.
struct Counters([AtomicU64; COUNTERS]);

impl Counters {
    const fn new() -> Counters {
        Counters([const { AtomicU64::new(0) }; COUNTERS])
    }

    /// Adds one to counter `i`; returns its new value.
    #[inline]
    fn bump(&self, i: usize) -> u64 {
        let c = &self.0[i];
        let n = c.load(Relaxed).wrapping_add(1);
        c.store(n, Relaxed);
        n
    }

    fn read(&self) -> [u64; COUNTERS] {
        std::array::from_fn(|i| self.0[i].load(Relaxed))
    }

    fn clear(&self) {
        for c in &self.0 {
            c.store(0, Relaxed);
        }
    }
}

/// One cell's counters, in its waiter line: 32-bit, so that the eight of them take
/// 32 bytes and the cell stays 256 bytes. They wrap after 2^32 waits of one cell (a
/// snapshot's difference is then wrong once); the process-wide counts of
/// [`stats`](crate::stats()) are 64-bit. Waiters count through [`CellStats::record`]
/// and friends, which also count in the thread's block.
pub(crate) struct CellStats([AtomicU32; COUNTERS]);

impl CellStats {
    pub(crate) const fn new() -> CellStats {
        CellStats([const { AtomicU32::new(0) }; COUNTERS])
    }

    /// Counts a wait that ended at `ended` (nothing for [`Ended::Entry`]).
    ///
    /// A wait that ended in the inline spin is counted in the cell in batches of
    /// [`INLINE_BATCH`]: when the calling thread's own inline count reaches a
    /// multiple of it, the cell gets the whole batch. The inline spin is the hot path
    /// of a ping-pong, where both threads often wait on the *same* cell: a count
    /// written into the cell on every wait would move the cell's counter line between
    /// the two cores on every hop, a cache miss on each round trip that a PAUSE loop
    /// does not pay. The process-wide counts stay exact; a cell's inline count is
    /// exact to within `INLINE_BATCH - 1` per thread that waits only on it, and for a
    /// thread that waits on several cells each batch goes to the cell of its last
    /// wait (an estimate of the split, exact in total).
    #[inline(always)]
    pub(crate) fn record(&self, ended: Ended) {
        match index(ended) {
            Some(INLINE_SPIN) => self.record_inline(),
            Some(i) => self.bump(i),
            None => {}
        }
    }

    /// [`record`](Self::record) for a wait that ended before the ladder: at its
    /// first look (not counted) or in the inline spin. The waits' fronts, which
    /// other crates compile, count through this: it names none of the ladder's
    /// counts, which then stay this crate's own (`docs/architecture.md`).
    #[inline(always)]
    pub(crate) fn record_before_ladder(&self, ended: Ended) {
        debug_assert!(matches!(ended, Ended::Entry | Ended::Inline), "{ended:?}");
        if ended == Ended::Inline {
            self.record_inline();
        }
    }

    /// Counts a wait that ended in the inline spin, in batches (see
    /// [`record`](Self::record)).
    #[inline(always)]
    fn record_inline(&self) {
        if !WAIT_STATS {
            return;
        }
        let n = bump_thread(INLINE_SPIN);
        if n != 0 && n % INLINE_BATCH == 0 {
            let c = &self.0[INLINE_SPIN];
            // The batch fits: INLINE_BATCH is far below u32::MAX.
            let batch = INLINE_BATCH as u32;
            c.store(c.load(Relaxed).wrapping_add(batch), Relaxed);
        }
    }

    /// Counts a hand-off spin and whether it caught the change.
    #[inline]
    pub(crate) fn record_handoff(&self, caught: bool) {
        self.bump(HANDOFF_SPINS);
        if caught {
            self.bump(HANDOFF_CAUGHT);
        }
    }

    /// Counts a hardware episode that returned woken with the value unchanged.
    #[inline]
    pub(crate) fn record_spurious_hardware(&self) {
        self.bump(SPURIOUS_HARDWARE);
    }

    /// A snapshot of the cell's counters.
    pub(crate) fn snapshot(&self) -> WaitStats {
        WaitStats::from_counts(std::array::from_fn(|i| u64::from(self.0[i].load(Relaxed))))
    }

    /// One relaxed load and store in the cell (a count can be lost to a waiter of the
    /// same cell finishing at the same instant), one in the thread's block. Built
    /// with `--cfg mwait_no_stats` it counts nothing: that build exists only to
    /// measure what counting costs (docs/default-policy.md).
    #[inline(always)]
    fn bump(&self, i: usize) {
        if !WAIT_STATS {
            return;
        }
        let c = &self.0[i];
        c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
        match i {
            PARK | TIMEOUT => PARKS.bump(i),
            _ => {
                bump_thread(i);
            }
        }
    }
}

/// How many inline-spin endings a thread counts before it adds them to a cell's
/// count in one write (see [`CellStats::record`]).
pub(crate) const INLINE_BATCH: u64 = 64;

/// The process's counts: the thread blocks (and the threads that exited) and the
/// park tier's sets.
fn process_counts() -> [u64; COUNTERS] {
    let mut s = threads::sum();
    for (t, p) in s.iter_mut().zip(PARKS.sum()) {
        *t = t.wrapping_add(p);
    }
    s
}

#[cfg(test)]
mod tests;
