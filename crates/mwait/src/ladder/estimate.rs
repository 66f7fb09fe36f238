//! Process-wide online estimates of what waiting costs on this machine, and the rule
//! that sizes the spin budgets from them.
//!
//! # What is measured, and when
//!
//! - **The wake-up latency**: from a notifier's call to `futex_wake` to the woken
//!   waiter running again. The notifier stamps the clock into the cell's wake stamp
//!   on its slow path, the one that makes the system call anyway
//!   (`protocol::MonitorLine::wake_slow`), while a parked waiter measures (it says
//!   so before it announces itself: `Sleepers::measure_wake`); the waiter reads the
//!   clock when its `futex_wait` returns after sleeping and takes the difference
//!   ([`offer_wake`]), on every park until the estimate has a full window and then
//!   on one park in [`WAKE_SAMPLE_EVERY`] of each thread ([`wake_sample_due`])
//!   among the ladder's parks. A wait that parks without the ladder on a cell
//!   whose spins stopped (a slow producer's consumer) sizes no spin and measures
//!   only while the window fills ([`wake_young`]); a cell's probes, and the parks
//!   after a failed spin, have every wake stamped, since they judge a spin by it
//!   (`adapt.rs`), and sample as the ladder's parks do. A sample is refused when the
//!   stamp is older than the park (another wake's stamp), when the clock went
//!   backwards, and when it lies outside
//!   [`WAKE_SAMPLE_MIN_NS`]`..=`[`WAKE_SAMPLE_MAX_NS`].
//!   Timeouts and returns that never slept (`futex_wait`'s `EAGAIN`,
//!   `Parked::Changed`) are not offered at all.
//! - **The cost of one spin round**: [`LOADS_PER_CLOCK_READ`] loads and pauses plus
//!   one clock read, from the clock readings the spin tier makes anyway: the time
//!   between its first and last reading over the rounds in between. Where the
//!   run-queue gate reads `/proc/loadavg` between the spin's first clock reading and
//!   its rounds (`load.rs`), the rounds count from the end of that reading, which
//!   would otherwise pass for one round of several µs. Each thread
//!   offers one spin in [`SPIN_SAMPLE_EVERY`], so that a ping-pong that spins on
//!   every wait does not write the process-wide line on every wait.
//!
//! Each is a [`LogEstimate`] (`ladder/filter.rs`): the median of the last
//! [`WINDOW`](super::filter::WINDOW) samples on a log scale.
//!
//! The inline spin is sized from the second: [`INLINE_SPIN_NS`] worth of loads
//! ([`inline_spin_loads`]).
//!
//! Neither is ever touched on the notify fast path: the stamp is taken only where a
//! notifier already calls `futex_wake`, and the estimates are written by waiters.
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
//!   window of the rule), at least the spin budget, at most [`HANDOFF_CEILING_NS`];
//! - a cell that no spin has paid off on yet spins the **unproven spin**,
//!   [`UNPROVEN_SPIN_NS`] (at least the floor, at most the spin budget), and judges
//!   the rest of the budget instead of spinning it: its park has the notifier stamp
//!   the change, and a change within the budget counts as a spin that caught it
//!   (`adapt.rs`, and the ladder's `Climb::finish`).
//!
//! The ceilings win over the floors. Until the first samples exist the prior is
//! [`WAKE_PRIOR_NS`] and [`SPIN_ROUND_PRIOR_NS`]. Budgets are in time, never in
//! iterations: a PAUSE costs 10 cycles on some cores and 140 on others.
//!
//! [`LOADS_PER_CLOCK_READ`]: crate::backend::spin::LOADS_PER_CLOCK_READ

use super::filter::LogEstimate;
use crate::backend::spin::LOADS_PER_CLOCK_READ;
use crate::primitive::SPIN_ROUND_LOADS_CAP;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The wake-up latency assumed until one is measured: between the wake-ups of the
/// machine kinds in `docs/default-policy.md` (section 4), so that the first
/// hand-off spin is 20 µs.
pub(crate) const WAKE_PRIOR_NS: u64 = 10_000;
/// The spin-round cost assumed until one is measured: eight PAUSEs and a vDSO clock
/// read, about what `docs/default-policy.md` (section 4) measured.
pub(crate) const SPIN_ROUND_PRIOR_NS: u64 = 250;

/// The shortest wake-up sample believed: a wake-up is a context switch at least
/// (a few µs, `docs/default-policy.md`); a shorter one is a waiter that was woken
/// before it slept (`futex_wait` returns 0 then too).
pub(crate) const WAKE_SAMPLE_MIN_NS: u64 = 1_000;
/// The longest wake-up sample believed: beyond this the waiter was not merely woken
/// but kept off the CPU (preempted, a descheduled vCPU), which says nothing about
/// the next wake-up.
pub(crate) const WAKE_SAMPLE_MAX_NS: u64 = 10_000_000;
/// The longest spin-round sample believed: one round is a few hundred ns; a
/// longer one contains a preemption.
pub(crate) const SPIN_ROUND_SAMPLE_MAX_NS: u64 = 100_000;
/// Each thread offers one spin in this many to the spin-round estimate.
pub(crate) const SPIN_SAMPLE_EVERY: u32 = 64;
/// Each thread measures the wake-up of one park in this many (once the estimate has a
/// full window), among the ladder's parks. The rule: a measured park costs its
/// waiter two clock reads and the estimate's update, about 0.1 µs warm and up to
/// 0.4 µs after a long sleep (the clock's pages, the estimate's line and their code
/// all cold: a consumer fed every 5 ms), and the flag and stamp lines it shares with
/// the notifier; whole, 0.9–1.2 µs more than another park at 1 ms on the 2-vCPU
/// guest (`docs/design-notes.md`). One in 32 keeps that near 1 % of a futex
/// wake-up's CPU time (2–3 µs on the machines of `docs/hardware-results.md`, more
/// elsewhere), where one in 4 made it 3–4 %. A lasting change of the wake-up latency
/// still moves the median within 4 samples, 128 parks of one thread (0.1 s of a
/// consumer fed every millisecond).
pub(crate) const WAKE_SAMPLE_EVERY: u32 = 32;

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
/// of 50 µs, the slowest in `docs/default-policy.md`, and the adaptive score turns it off
/// where the partner still takes longer.
pub(crate) const HANDOFF_CEILING_NS: u64 = 100_000;

/// The spin of a cell that no spin has paid off on yet (`adapt.rs`): long enough for
/// a partner on another core that answers at once (a cache line's round trip,
/// 0.1–0.5 µs, and its reaction, as [`INLINE_SPIN_NS`]), where the spin budget is
/// sized for a partner that takes up to a wake-up latency. Nothing says yet that the
/// cell's changes come near, and the first wait of a cell fed every millisecond
/// would spin a whole budget for nothing (5 µs under a hypervisor, more than the
/// futex wait itself on the 2-vCPU guest); the rest of the budget is judged from
/// the notifier's stamp of the wake, so a partner that answers within the budget
/// costs one park, after which the cell spins its whole budget.
pub(crate) const UNPROVEN_SPIN_NS: u64 = 1_000;

/// How long the inline spin (the loads a wait makes in the caller's frame, before the
/// ladder, on cells whose last spin caught the change) lasts: long enough for a
/// partner on another core to see our store and answer (a cache line's round trip,
/// 0.1–0.5 µs, and its reaction), and no longer than twice the shortest spin
/// budget ([`SPIN_FLOOR_NS`]), so that a miss costs about what the spin tier, which
/// follows, would have spent anyway.
pub(crate) const INLINE_SPIN_NS: u64 = 1_000;
/// The fewest loads of the inline spin: two rounds.
pub(crate) const INLINE_LOADS_MIN: u32 = 2 * LOADS_PER_CLOCK_READ;
/// The most loads of the inline spin, whatever the round estimate says (a PAUSE of
/// 10 cycles at 4 GHz: 1 µs is about 300 loads).
pub(crate) const INLINE_LOADS_MAX: u32 = 256;

/// How many loads the inline spin makes: [`INLINE_SPIN_NS`] at the measured cost of a
/// load (a spin round over [`LOADS_PER_CLOCK_READ`]), within
/// [`INLINE_LOADS_MIN`]`..=`[`INLINE_LOADS_MAX`]. Kept up to date by the writer of
/// [`SPIN_ROUND`] (a store only when the count changes), read with one relaxed load
/// on every inline spin: on a line of its own, so that the writes of the estimates
/// do not take it from the readers.
static INLINE_LOADS: InlineLoads = InlineLoads(AtomicU32::new(inline_loads(SPIN_ROUND_PRIOR_NS)));

/// [`INLINE_LOADS`] on its own 128-byte pair of lines (x86 prefetches lines in pairs).
#[repr(align(128))]
struct InlineLoads(AtomicU32);

/// The inline spin's loads for a spin round of `round_ns`.
pub(crate) const fn inline_loads(round_ns: u64) -> u32 {
    let per_round = if round_ns == 0 { 1 } else { round_ns };
    let n = INLINE_SPIN_NS * LOADS_PER_CLOCK_READ as u64 / per_round;
    if n < INLINE_LOADS_MIN as u64 {
        INLINE_LOADS_MIN
    } else if n > INLINE_LOADS_MAX as u64 {
        INLINE_LOADS_MAX
    } else {
        n as u32
    }
}

/// The inline spin's loads now (the primitives' cap where it is lower: one load in the
/// loom model, which needs only to see the path).
#[inline(always)]
pub(crate) fn inline_spin_loads() -> u32 {
    INLINE_LOADS.0.load(Relaxed).min(INLINE_LOADS_CAP)
}

/// [`INLINE_LOADS_MAX`], or the primitives' cap where it is lower.
const INLINE_LOADS_CAP: u32 = if INLINE_LOADS_MAX < SPIN_ROUND_LOADS_CAP {
    INLINE_LOADS_MAX
} else {
    SPIN_ROUND_LOADS_CAP
};

/// This process's wake-up latency estimate.
pub(crate) static WAKE: LogEstimate = LogEstimate::new();
/// This process's spin-round cost estimate.
pub(crate) static SPIN_ROUND: LogEstimate = LogEstimate::new();

/// The park tier, after a `futex_wait` that slept and returned woken (not a timeout,
/// not a return that never slept): offers the wake-up latency to [`WAKE`].
/// `stamp_ns` is the cell's wake stamp (the notifier's clock reading right before its
/// `futex_wake`, `protocol::Sleepers::wake_stamp`), `parked_ns` the waiter's reading
/// before it announced itself, `now_ns` the one after its wake. Returns the sample
/// when it was believed.
pub(crate) fn offer_wake(stamp_ns: u64, parked_ns: u64, now_ns: u64) -> Option<u64> {
    let s = wake_sample(stamp_ns, parked_ns, now_ns)?;
    WAKE.record(s);
    Some(s)
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
    /// Parks this thread has made since the last one that measured its wake-up.
    static PARKS_SINCE_SAMPLE: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread has seen [`WAKE`]'s window full (it never empties again).
    static WAKE_FULL_SEEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the park about to start measures its wake-up latency (reads the clock
/// before it and after it): every park while [`WAKE`] has fewer than
/// [`WINDOW`](super::filter::WINDOW) samples, then one in [`WAKE_SAMPLE_EVERY`] of
/// each thread. The other parks read no clock, and the notifiers that wake them
/// none either; once a thread has seen the window full, its parks no longer read
/// [`WAKE`]'s line (which every measured park of the process writes).
#[inline]
pub(crate) fn wake_sample_due() -> bool {
    one_in(&PARKS_SINCE_SAMPLE, WAKE_SAMPLE_EVERY) || wake_young()
}

/// Whether [`WAKE`]'s window is not full yet, as this thread knows it: the window
/// only fills, so one look that finds it full is remembered.
#[inline]
pub(crate) fn wake_young() -> bool {
    WAKE_FULL_SEEN
        .try_with(|seen| {
            if seen.get() {
                return false;
            }
            let young = WAKE.young();
            seen.set(!young);
            young
        })
        .unwrap_or_else(|_| WAKE.young())
}

/// Counts one event in `count`, a thread's count since its last sampled event:
/// whether this one is sampled (the first, then one in `every`). False once the
/// thread's locals are gone (a wait in a thread-local destructor).
#[inline]
fn one_in(count: &'static std::thread::LocalKey<Cell<u32>>, every: u32) -> bool {
    count
        .try_with(|c| {
            let k = c.get();
            c.set(if k + 1 >= every { 0 } else { k + 1 });
            k == 0
        })
        .unwrap_or(false)
}

/// The spin tier, at the end of a spin that read the clock more than once: `rounds`
/// rounds took `elapsed_ns` between the first and the last reading. Offered to
/// [`SPIN_ROUND`] by one spin in [`SPIN_SAMPLE_EVERY`] of each thread (its first
/// included).
pub(crate) fn offer_spin_rounds(rounds: u32, elapsed_ns: u64) {
    if one_in(&SPINS_SINCE_SAMPLE, SPIN_SAMPLE_EVERY) {
        if let Some(s) = spin_round_sample(rounds, elapsed_ns) {
            SPIN_ROUND.record(s);
            if let Some(r) = SPIN_ROUND.get() {
                let n = inline_loads(r);
                if INLINE_LOADS.0.load(Relaxed) != n {
                    INLINE_LOADS.0.store(n, Relaxed);
                }
            }
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
    /// The spin of a cell that no spin has paid off on yet.
    pub(crate) unproven_ns: u64,
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
        unproven_ns: spin_ns.min(floor.max(UNPROVEN_SPIN_NS)),
    }
}

/// The budgets from this process's estimates.
pub(crate) fn current(hypervisor: bool) -> Budgets {
    budgets(WAKE.get(), SPIN_ROUND.get(), hypervisor)
}

#[cfg(test)]
mod tests;
