//! Process-wide online estimates of what waiting costs on this machine, and the rule
//! that sizes the spin budgets from them.
//!
//! # What is measured, and when
//!
//! - **The wake-up latency**: from a notifier's call to `futex_wake` to the woken
//!   waiter running again. The notifier stamps the clock into the cell's
//!   [`WakeStamp`] on its slow path, the one that makes the system call anyway; the
//!   waiter reads the clock when its `futex_wait` returns woken and takes the
//!   difference ([`WakeStamp::sample`]). A sample is refused when the stamp is older
//!   than the park (another wake's stamp), when the clock went backwards, and when it
//!   lies outside [`WAKE_SAMPLE_MIN_NS`]`..=`[`WAKE_SAMPLE_MAX_NS`]. Timeouts and
//!   returns that never slept are not offered at all.
//! - **The cost of one spin round**: [`LOADS_PER_CLOCK_READ`] loads and pauses plus
//!   one clock read, from the clock readings the spin tier makes anyway: the time
//!   between its first and last reading over the rounds in between. Each thread
//!   offers one spin in [`SPIN_SAMPLE_EVERY`], so that a ping-pong that spins on
//!   every wait does not write the process-wide line on every wait.
//!
//! Neither is ever touched on the notify fast path: the stamp is taken only where a
//! notifier already calls `futex_wake`, and the estimates are written by waiters.
//!
//! # The filter
//!
//! Each estimate is an exponentially weighted mean of the samples' base-2 logarithms
//! (in 1/256 octave), packed with its sample count into one `AtomicU64` and updated
//! with a single compare-exchange that gives up when another thread got there first
//! (a lost sample, never a wait). The first sample replaces the prior; the next ones
//! weigh `1/(n+1)` until the weight reaches [`EWMA_WEIGHT`], a running geometric
//! mean that settles within a handful of samples. From the fourth sample on, each
//! sample is first clamped to within one octave of the estimate, so one outlier (a
//! waiter that was preempted right after its wake-up) moves the estimate by at most
//! `1/EWMA_WEIGHT` octave (9 %), while a lasting change still moves it by that much
//! per sample, an octave in eight.
//!
//! # The rule
//!
//! Spinning is the ski-rental problem: spin as long as parking would cost, and the
//! total never exceeds twice the best choice made with hindsight. What parking costs
//! a waiter is mostly the wake-up latency, so:
//!
//! - the **spin budget** is the wake-up latency, at least [`SPIN_FLOOR_NS`] and
//!   [`SPIN_FLOOR_ROUNDS`] spin rounds (a shorter spin cannot catch even a nearby
//!   partner's reply), at most [`SPIN_CEILING_NS`], or [`SPIN_CEILING_HYPERVISOR_NS`]
//!   under a hypervisor (a partner's vCPU may be descheduled, and then spinning only
//!   burns our own time slice);
//! - the **hand-off spin**, after this thread woke the partner whose answer it now
//!   waits for, is [`HANDOFF_WAKES`] wake-up latencies (the partner's wake-up, then the
//!   window of the rule), at least the spin budget, at most [`HANDOFF_CEILING_NS`].
//!
//! The ceilings win over the floors. Until the first samples exist the prior is
//! [`WAKE_PRIOR_NS`] and [`SPIN_ROUND_PRIOR_NS`]. Budgets are in time, never in
//! iterations: a PAUSE costs 10 cycles on some cores and 140 on others.
//!
//! [`LOADS_PER_CLOCK_READ`]: crate::backend::spin::LOADS_PER_CLOCK_READ

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The wake-up latency assumed until one is measured: between the wake-ups measured
/// on the machine kinds seen so far (about 5 µs on the KVM guest with 10 µs futex
/// round trips, about 25 µs on the Firecracker guest with 50 µs ones), so that the
/// first hand-off spin is 20 µs, as the fixed constant it replaces was.
pub(crate) const WAKE_PRIOR_NS: u64 = 10_000;
/// The spin-round cost assumed until one is measured: eight PAUSEs of 27 ns (the
/// development guest's AMD core) and a vDSO clock read.
pub(crate) const SPIN_ROUND_PRIOR_NS: u64 = 250;

/// The shortest wake-up sample believed: a `futex_wake` plus a return from
/// `futex_wait` cannot be faster than two system calls and a context switch.
pub(crate) const WAKE_SAMPLE_MIN_NS: u64 = 200;
/// The longest wake-up sample believed: beyond this the waiter was not merely woken
/// but kept off the CPU (preempted, a descheduled vCPU), which says nothing about
/// the next wake-up.
pub(crate) const WAKE_SAMPLE_MAX_NS: u64 = 10_000_000;
/// The longest spin-round sample believed: one round is a few hundred ns; a
/// longer one contains a preemption.
pub(crate) const SPIN_ROUND_SAMPLE_MAX_NS: u64 = 100_000;
/// Each thread offers one spin in this many to the spin-round estimate.
pub(crate) const SPIN_SAMPLE_EVERY: u32 = 64;

/// The shortest spin budget: a cache line's round trip between sockets (about
/// 0.2–0.3 µs) plus the partner's reaction; below that a spin catches nothing.
pub(crate) const SPIN_FLOOR_NS: u64 = 500;
/// The fewest spin rounds in a budget: the first round runs before the clock is
/// read at all, so a spin needs a few to wait at all.
pub(crate) const SPIN_FLOOR_ROUNDS: u64 = 4;
/// The longest spin budget on bare metal: 1 % of a 2 ms scheduler slice, so that a
/// waiter never holds a CPU long that another thread could use.
pub(crate) const SPIN_CEILING_NS: u64 = 20_000;
/// The longest spin budget under a hypervisor, where the partner's vCPU may not be
/// running at all.
pub(crate) const SPIN_CEILING_HYPERVISOR_NS: u64 = 5_000;
/// The hand-off spin in wake-up latencies.
pub(crate) const HANDOFF_WAKES: u64 = 2;
/// The longest hand-off spin: 5 % of a 2 ms scheduler slice; it covers two wake-ups
/// of 50 µs, the slowest seen (Firecracker), and the adaptive score turns it off
/// where the partner still takes longer.
pub(crate) const HANDOFF_CEILING_NS: u64 = 100_000;

/// The weight of a new sample once warmed up: `1/EWMA_WEIGHT`.
const EWMA_WEIGHT: i64 = 8;
/// From this many samples on, a sample is clamped to within [`CLAMP_OCTAVES_Q8`] of
/// the estimate before it is averaged in.
const CLAMP_AFTER_SAMPLES: u32 = 3;
/// How far from the estimate a sample may pull, in 1/256 octave: one octave.
const CLAMP_OCTAVES_Q8: i64 = 256;

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

/// A filtered estimate of a duration: see "The filter" in the module docs.
pub(crate) struct LogEstimate {
    /// The low 32 bits: the estimate in 1/256 octave of ns; the high 32: the number of
    /// samples taken (saturating). 0: no sample yet.
    packed: AtomicU64,
}

impl LogEstimate {
    pub(crate) const fn new() -> LogEstimate {
        LogEstimate {
            packed: AtomicU64::new(0),
        }
    }

    /// The estimate in ns, `None` before the first sample.
    pub(crate) fn get(&self) -> Option<u64> {
        let (est, n) = unpack(self.packed.load(Relaxed));
        (n > 0).then(|| exp2_q8(est))
    }

    /// How many samples have been taken.
    pub(crate) fn samples(&self) -> u32 {
        unpack(self.packed.load(Relaxed)).1
    }

    /// Averages in one sample (in ns). A sample that races with another thread's is
    /// dropped.
    pub(crate) fn record(&self, sample_ns: u64) {
        let old = self.packed.load(Relaxed);
        let new = next(old, log2_q8(sample_ns.max(1)));
        let _ = self.packed.compare_exchange(old, new, Relaxed, Relaxed);
    }
}

fn unpack(p: u64) -> (u32, u32) {
    (p as u32, (p >> 32) as u32)
}

/// The packed state after a sample of `x` (1/256 octave).
fn next(packed: u64, x: u32) -> u64 {
    let (est, n) = unpack(packed);
    let est_new = if n == 0 {
        x
    } else {
        let (e, mut x) = (i64::from(est), i64::from(x));
        if n >= CLAMP_AFTER_SAMPLES {
            x = x.clamp(e - CLAMP_OCTAVES_Q8, e + CLAMP_OCTAVES_Q8);
        }
        let w = i64::from(n + 1).min(EWMA_WEIGHT);
        u32::try_from(e + (x - e) / w).unwrap_or(0)
    };
    (u64::from(n.saturating_add(1)) << 32) | u64::from(est_new)
}

/// This process's wake-up latency estimate.
pub(crate) static WAKE: LogEstimate = LogEstimate::new();
/// This process's spin-round cost estimate.
pub(crate) static SPIN_ROUND: LogEstimate = LogEstimate::new();

/// Where a notifier leaves the time of its `futex_wake` for the waiters it wakes: one
/// per cell, in the line that only waiters write otherwise (the notifier writes it
/// only on its slow path, which also makes a system call).
pub(crate) struct WakeStamp(AtomicU64);

impl WakeStamp {
    pub(crate) const fn new() -> WakeStamp {
        WakeStamp(AtomicU64::new(0))
    }

    /// Notifier, slow path: the clock reading taken right before `futex_wake`.
    pub(crate) fn stamp(&self, now_ns: u64) {
        self.0.store(now_ns, Relaxed);
    }

    /// Waiter, after a `futex_wait` that returned woken (not a timeout, not a return
    /// that never slept): offers the wake-up latency to [`WAKE`]. `parked_ns` is the
    /// clock reading taken before the waiter announced itself, `now_ns` the one after
    /// its wake. Returns the sample when it was believed.
    pub(crate) fn sample(&self, parked_ns: u64, now_ns: u64) -> Option<u64> {
        let s = wake_sample(self.0.load(Relaxed), parked_ns, now_ns)?;
        WAKE.record(s);
        Some(s)
    }
}

/// The wake-up latency that a stamp gives, or `None` when it is not believable: the
/// stamp predates the park (it belongs to an earlier wake), the clock went backwards,
/// or the latency lies outside `WAKE_SAMPLE_MIN_NS..=WAKE_SAMPLE_MAX_NS`.
pub(crate) fn wake_sample(stamp_ns: u64, parked_ns: u64, now_ns: u64) -> Option<u64> {
    if stamp_ns < parked_ns {
        return None;
    }
    let lat = now_ns.checked_sub(stamp_ns)?;
    (WAKE_SAMPLE_MIN_NS..=WAKE_SAMPLE_MAX_NS)
        .contains(&lat)
        .then_some(lat)
}

std::thread_local! {
    /// Spins this thread has ended since it last offered a spin-round sample.
    static SPINS_SINCE_SAMPLE: Cell<u32> = const { Cell::new(0) };
}

/// The spin tier, at the end of a spin that read the clock more than once: `rounds`
/// rounds took `elapsed_ns` between the first and the last reading. Offered to
/// [`SPIN_ROUND`] by one spin in [`SPIN_SAMPLE_EVERY`] of each thread (its first
/// included).
pub(crate) fn offer_spin_rounds(rounds: u32, elapsed_ns: u64) {
    let due = SPINS_SINCE_SAMPLE
        .try_with(|c| {
            let k = c.get();
            c.set(if k + 1 >= SPIN_SAMPLE_EVERY { 0 } else { k + 1 });
            k == 0
        })
        .unwrap_or(false);
    if due {
        if let Some(s) = spin_round_sample(rounds, elapsed_ns) {
            SPIN_ROUND.record(s);
        }
    }
}

/// The cost of one round from a spin's readings, or `None` when not believable.
pub(crate) fn spin_round_sample(rounds: u32, elapsed_ns: u64) -> Option<u64> {
    let per = elapsed_ns.checked_div(u64::from(rounds))?;
    (1..=SPIN_ROUND_SAMPLE_MAX_NS).contains(&per).then_some(per)
}

/// The budgets in force, in ns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Budgets {
    /// The ordinary spin budget.
    pub(crate) spin_ns: u64,
    /// The spin right after this thread woke its partner.
    pub(crate) handoff_ns: u64,
}

/// The rule of the module docs: budgets from a wake-up latency and a spin-round cost
/// (`None`: not measured yet, the prior counts).
pub(crate) fn budgets(wake_ns: Option<u64>, round_ns: Option<u64>, hypervisor: bool) -> Budgets {
    let wake = wake_ns.unwrap_or(WAKE_PRIOR_NS);
    let round = round_ns.unwrap_or(SPIN_ROUND_PRIOR_NS);
    let ceiling = if hypervisor {
        SPIN_CEILING_HYPERVISOR_NS
    } else {
        SPIN_CEILING_NS
    };
    let floor = SPIN_FLOOR_NS
        .max(round.saturating_mul(SPIN_FLOOR_ROUNDS))
        .min(ceiling);
    let spin_ns = wake.clamp(floor, ceiling);
    let handoff_ns = wake
        .saturating_mul(HANDOFF_WAKES)
        .clamp(spin_ns, HANDOFF_CEILING_NS.max(spin_ns));
    Budgets {
        spin_ns,
        handoff_ns,
    }
}

/// The budgets from this process's estimates.
pub(crate) fn current(hypervisor: bool) -> Budgets {
    budgets(WAKE.get(), SPIN_ROUND.get(), hypervisor)
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
        assert_eq!(e.samples() as usize, samples.len());
        e.get().unwrap()
    }

    fn near(x: u64, want: u64, pct: u64) -> bool {
        x.abs_diff(want) * 100 <= want * pct
    }

    #[test]
    fn the_first_sample_replaces_the_prior_and_a_steady_input_is_kept() {
        assert_eq!(LogEstimate::new().get(), None);
        assert_eq!(after(&[20_000]), exp2_q8(log2_q8(20_000)));
        assert!(near(after(&[20_000; 50]), 20_000, 1));
        // Two samples: their geometric mean.
        assert!(near(after(&[10_000, 40_000]), 20_000, 7));
    }

    #[test]
    fn one_outlier_moves_the_estimate_little_and_a_lasting_change_wins() {
        let mut s = vec![25_000u64; 20];
        s.push(9_000_000);
        let e = after(&s);
        // At most an eighth of an octave up (9 %), plus the approximation.
        assert!(e <= 25_000 * 110 / 100, "{e}");
        s.truncate(20);
        s.push(300);
        assert!(after(&s) >= 25_000 * 90 / 100);
        // The machine became 4x faster for good: within 10 % after 40 samples.
        s.extend([6_000u64; 40]);
        assert!(near(after(&s), 6_000, 10), "{}", after(&s));
    }

    #[test]
    fn wake_samples_from_other_wakes_or_absurd_clocks_are_refused() {
        // Parked at 1000, stamped at 5000, running at 30_000: 25 µs.
        assert_eq!(wake_sample(5_000, 1_000, 30_000), Some(25_000));
        // A stamp older than the park belongs to an earlier wake.
        assert_eq!(wake_sample(900, 1_000, 30_000), None);
        // The clock went backwards, or the wake is too fast or too slow to be one.
        assert_eq!(wake_sample(5_000, 1_000, 4_000), None);
        assert_eq!(wake_sample(5_000, 1_000, 5_100), None);
        assert_eq!(wake_sample(5_000, 1_000, 5_000 + 20_000_000), None);
        let stamp = WakeStamp::new();
        stamp.stamp(5_000);
        assert_eq!(stamp.sample(6_000, 30_000), None);
        assert_eq!(stamp.sample(1_000, 30_000), Some(25_000));
    }

    #[test]
    fn spin_round_samples_are_per_round_and_bounded() {
        assert_eq!(spin_round_sample(4, 1_000), Some(250));
        assert_eq!(spin_round_sample(0, 1_000), None);
        assert_eq!(spin_round_sample(1, 1_000_000), None);
        assert_eq!(spin_round_sample(100, 0), None);
    }

    #[test]
    fn one_spin_in_so_many_of_a_thread_is_offered() {
        // On a thread of its own, so that the count starts at zero.
        std::thread::spawn(|| {
            let before = SPIN_ROUND.samples();
            for _ in 0..2 * SPIN_SAMPLE_EVERY {
                offer_spin_rounds(4, 1_000);
            }
            let taken = SPIN_ROUND.samples() - before;
            // Two offered; another test thread may have raced one away, none added.
            assert!((1..=2).contains(&taken), "{taken}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_prior_gives_the_budgets_of_the_constants_it_replaces() {
        let b = budgets(None, None, false);
        assert_eq!(b.spin_ns, WAKE_PRIOR_NS);
        assert_eq!(b.handoff_ns, 20_000);
        let b = budgets(None, None, true);
        assert_eq!(b.spin_ns, SPIN_CEILING_HYPERVISOR_NS);
        assert_eq!(b.handoff_ns, 20_000);
    }

    #[test]
    fn budgets_follow_the_wake_latency_within_their_bounds() {
        // Firecracker: 25 µs wake-ups. The spin stops at the ceiling, the hand-off
        // covers two wake-ups.
        let b = budgets(Some(25_000), Some(250), true);
        assert_eq!(
            b,
            Budgets {
                spin_ns: 5_000,
                handoff_ns: 50_000
            }
        );
        // Bare metal, 3 µs wake-ups: spin 3 µs, hand-off 6 µs.
        let b = budgets(Some(3_000), Some(40), false);
        assert_eq!(
            b,
            Budgets {
                spin_ns: 3_000,
                handoff_ns: 6_000
            }
        );
        // Very fast wake-ups: the floor, and enough rounds for a slow PAUSE.
        assert_eq!(budgets(Some(300), Some(40), false).spin_ns, SPIN_FLOOR_NS);
        assert_eq!(budgets(Some(300), Some(400), false).spin_ns, 1_600);
        // Very slow ones: the ceilings.
        let b = budgets(Some(5_000_000), None, false);
        assert_eq!(
            b,
            Budgets {
                spin_ns: SPIN_CEILING_NS,
                handoff_ns: HANDOFF_CEILING_NS
            }
        );
        // An absurd round cost cannot push the floor past the ceiling.
        assert_eq!(
            budgets(Some(1_000), Some(50_000), true).spin_ns,
            SPIN_CEILING_HYPERVISOR_NS
        );
    }

    #[test]
    fn racing_recorders_lose_samples_but_never_corrupt_the_estimate() {
        let e = std::sync::Arc::new(LogEstimate::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let e = e.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        e.record(8_000);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!((1..=40_000).contains(&e.samples()));
        assert!(near(e.get().unwrap(), 8_000, 1));
    }
}
