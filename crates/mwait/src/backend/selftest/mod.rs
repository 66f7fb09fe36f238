//! The hardware tiers' self-test: does this tier behave like a monitor?
//!
//! A real monitor wait has three properties, and each has a check here, named in the
//! reason of a demotion (`Selection::demoted`):
//!
//! - **(b) timer**: without a store it lasts about its timer, so waits of `T` and `8T`
//!   last in proportion: the long waits' median must reach half its timer and exceed
//!   the short waits' median by half the timers' difference (a difference, so that
//!   the fixed cost of an episode, a system call for the kernel tier, cancels out). A
//!   trapped instruction that returns after a fixed cost whatever its timer (the
//!   trapped MWAITX of `docs/hardware-results.md`), or an emulated no-op
//!   that returns at once (UMWAIT under qemu-user), fails this one; so does a wait
//!   that ignores its timer (the helper's watchdog store ends it).
//! - **(c) rare early return**: without a store, at most a quarter of the waits end
//!   before half their timer (an interrupt may end a real wait, but seldom within
//!   a few tens of µs).
//! - **(a) store wake**: it ends soon after another thread's store to the armed line,
//!   well before its timer: the median latency from the store to the end of the wait
//!   must be at most half of what a wait that ignored the store would have had left
//!   (the long no-store median less the store delay). An emulation that sleeps until
//!   its timer and ignores stores fails this one.
//!
//! They run in that order and the first that fails is reported. Every check judges
//! medians (or counts) over several tries, never the shortest, because preemption
//! and interrupts can push a single try either way. Timers stay under the OS cap on
//! one episode, which [`Plan::for_tier`] reads (`umwait_control` max_time for UMWAIT).
//!
//! # The helper thread, and what a loaded machine does to it
//!
//! The stores come from a helper thread started for the test and left to end on its
//! own (it is not joined, so a helper the scheduler keeps waiting cannot make the
//! test wait). During the no-store tries it is a watchdog: it stores once a wait has
//! run for [`Plan::watchdog_ns`], so a tier that ignores its timer cannot hang the
//! test (only one that ignores both stores and its timer could, and an interrupt
//! ends that).
//!
//! Check (a) needs the two threads running at once on two CPUs. So the helper moves
//! itself off the waiter's CPU (its affinity: the process's CPUs but the waiter's);
//! a store try begins only once the helper has acknowledged it, and the helper,
//! spinning meanwhile, must see the wait's start within [`Plan::store_slack_ns`]
//! (else it was not running then, and it does not store: the try is void); the
//! helper does not yield from the wait's start to its store (on a loaded machine a
//! yield can cost a whole time slice), which it makes [`Plan::short_ns`] after the
//! wait began, timestamping it from its own side, before and after the
//! compare-exchange that performs it. The latency is `waiter's end - helper's store`. A store try
//! counts only when the helper performed the store, its two timestamps are within
//! [`Plan::store_slack_ns`] (it was not preempted around the store), the store came
//! after the wait began and within half the wait's timer (a late store tells
//! nothing: a real monitor and a sleeper would both have reached their timer), and
//! the wait was still running at the store (one that ended before, by an interrupt
//! or a `Yield`, tells nothing about stores). Other tries are void and retried until
//! [`STORE_TRIES`] are valid or [`Plan::store_budget_ns`] has passed.
//!
//! The rule when the machine does not let the helper run: with fewer than
//! [`MIN_VALID_TRIES`] valid tries check (a) is inconclusive, and an inconclusive
//! check demotes the tier, as does a process confined to one CPU (where no store can
//! land during a wait, and a monitor cannot help anyway). The futex ladder the tier
//! falls back to is always correct, while keeping a tier never seen to wake on a
//! store could make every wait last its whole hardware budget. A fake passes (a) only
//! if most valid tries saw a prompt wake; a sleeper shows one only when the waiter
//! was preempted between publishing its start and arming the monitor for longer than
//! the store delay (the store then lands before the arm and the re-check returns at
//! once): possible in one try, not in most.
//!
//! # Cost
//!
//! With [`SHORT_WAIT_NS`] = 20 µs: five waits of 20 µs and five of 160 µs (0.9 ms),
//! five store tries of about 20 µs each, and starting the helper: about 1 ms for a
//! real monitor, about 1.7 ms for a sleeper (each store try lasts its 160 µs timer),
//! 0.1 ms for a fixed-cost no-op (it fails check (b) before check (a) runs). On an
//! overloaded machine check (a) may take up to [`STORE_CHECK_BUDGET_NS`] (50 ms)
//! more, several scheduler time slices in which the helper gets to run.
//!
//! # Simulated monitors
//!
//! The checks are generic over [`HardwareWait`], so the unit tests feed them the
//! simulated monitors of `backend/sim.rs` (a real one, a trapped no-op, a sleeper,
//! one that ignores its timer).

mod checks;
mod helper;
// The simulated monitor is not in the loom build.
crate::primitive::thread_tests! {
    mod tests;
}

use super::{Backend, HardwareWait};
use crate::backend::CState;
use crate::sys;
use crate::sys::clock::now_ns;
use checks::Tester;
use helper::Mailbox;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The short timer `T` of check (b), and the store delay of check (a).
pub(crate) const SHORT_WAIT_NS: u64 = 20_000;
/// The long timer of check (b) is this many times the short one; check (a) waits
/// with the long timer.
pub(crate) const LONG_FACTOR: u64 = 8;
/// Tries of each timer of check (b), whose durations also feed check (c).
pub(crate) const TIMER_TRIES: usize = 5;
/// Valid tries wanted by check (a).
pub(crate) const STORE_TRIES: usize = 5;
/// Fewer valid tries than this leave a check inconclusive.
pub(crate) const MIN_VALID_TRIES: usize = 3;
/// Check (b) makes at most this many attempts per try wanted (a `Yield` voids one).
pub(crate) const ATTEMPTS_PER_TRY: usize = 3;
/// Check (a) goes on making attempts until it has [`STORE_TRIES`] valid ones, for at
/// most this long (or 20 long timers, if longer): on an idle machine the first five
/// attempts are valid (about 0.1 ms for a real monitor); on a loaded one the helper
/// thread runs only now and then, and this gives it several scheduler time slices.
pub(crate) const STORE_CHECK_BUDGET_NS: u64 = 50_000_000;
/// The shortest short timer the test uses, however low the OS cap (below this the
/// fixed cost of an episode swamps the timer).
const MIN_SHORT_WAIT_NS: u64 = 2_000;

/// The timers of one self-test. [`Plan::for_tier`] makes the production plan; the
/// simulated tests use longer timers, so that a loaded machine's scheduling noise is
/// small against them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The short timer `T` of check (b) and the store delay of check (a).
    pub(crate) short_ns: u64,
}

impl Plan {
    /// A plan whose short timer is `short_ns`.
    pub(crate) const fn new(short_ns: u64) -> Plan {
        Plan { short_ns }
    }

    /// This plan shortened so that its long wait fits in 90 % of `cap_ns`, the OS's
    /// cap on one episode (UMWAIT's `umwait_control` max_time), so that a real wait
    /// is not cut short by the cap (which would look like an early return).
    pub(crate) fn under_cap(self, cap_ns: u64) -> Plan {
        let fit = cap_ns / 10 * 9 / LONG_FACTOR;
        Plan::new(self.short_ns.min(fit).max(MIN_SHORT_WAIT_NS))
    }

    /// The production plan for `backend`: [`SHORT_WAIT_NS`], under the OS cap for
    /// UMWAIT.
    pub(crate) fn for_tier(backend: Backend, caps: &crate::detect::Capabilities) -> Plan {
        let plan = Plan::new(SHORT_WAIT_NS);
        match os_cap_ns(backend, caps) {
            Some(cap_ns) => plan.under_cap(cap_ns),
            None => plan,
        }
    }

    /// The long timer: check (b)'s second wait and check (a)'s wait.
    pub(crate) const fn long_ns(self) -> u64 {
        self.short_ns * LONG_FACTOR
    }

    /// Check (b) passes when the long waits' median exceeds the short waits' by at
    /// least this: half the difference of their timers (a real monitor: about the
    /// whole difference, whatever the fixed cost of an episode, which cancels out; a
    /// fixed-cost no-op: nothing).
    pub(crate) const fn min_timer_gap_ns(self) -> u64 {
        (self.long_ns() - self.short_ns) / 2
    }

    /// Check (a) passes when the median latency from store to wake is at most this,
    /// given `m_long`, the median of the same tier's long waits with no store: half of
    /// what a wait that ignores the store would have left after it (`m_long` less the
    /// store delay). A real monitor wakes within a few µs plus the fixed cost of
    /// returning from an episode, which `m_long` includes too; a sleeper takes all of
    /// it.
    pub(crate) const fn wake_within_ns(self, m_long: u64) -> u64 {
        m_long.saturating_sub(self.short_ns) / 2
    }

    /// A store try is void when the helper stored later than this after the waiter
    /// began: half the long timer.
    pub(crate) const fn store_late_ns(self) -> u64 {
        self.long_ns() / 2
    }

    /// A store try is void when the helper's timestamps around its store are further
    /// apart than this (it was preempted there), or when the helper saw the wait's
    /// start later than this after it (it was not running then).
    pub(crate) const fn store_slack_ns(self) -> u64 {
        self.short_ns / 2
    }

    /// How long check (a) may go on making attempts.
    pub(crate) const fn store_budget_ns(self) -> u64 {
        let timers = 20 * self.long_ns();
        if timers > STORE_CHECK_BUDGET_NS {
            timers
        } else {
            STORE_CHECK_BUDGET_NS
        }
    }

    /// During a no-store try the helper stores once the wait has run this long, so
    /// that a wait that ignores its timer still ends.
    pub(crate) const fn watchdog_ns(self) -> u64 {
        self.long_ns() * 4
    }
}

/// The OS's cap on one episode of `backend`, in ns: UMWAIT's `umwait_control`
/// max_time (0 means none).
fn os_cap_ns(backend: Backend, caps: &crate::detect::Capabilities) -> Option<u64> {
    match (backend, caps.umwait_control) {
        (Backend::Umwait, Some(c)) if c.max_time_tsc != 0 => {
            sys::x86::tsc_ticks_to_ns(u64::from(c.max_time_tsc))
        }
        _ => None,
    }
}

/// What a passed self-test measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    /// Check (b): the medians of the short and the long waits, in ns.
    pub(crate) timer_medians_ns: (u64, u64),
    /// Check (c): no-store waits that ended before half their timer, of how many.
    pub(crate) early: (usize, usize),
    /// Check (a): the median latency from store to wake, in ns.
    pub(crate) wake_median_ns: u64,
    /// Check (a): valid tries, of how many attempts.
    pub(crate) store_tries: (usize, usize),
    /// How long the whole test took, in ns.
    pub(crate) cost_ns: u64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(a) woke {} ns after a store (median of {} valid of {} attempts); \
             (b) waits lasted {} ns and {} ns (medians); (c) {} of {} returned early; \
             {} ns in all",
            self.wake_median_ns,
            self.store_tries.0,
            self.store_tries.1,
            self.timer_medians_ns.0,
            self.timer_medians_ns.1,
            self.early.0,
            self.early.1,
            self.cost_ns
        )
    }
}

/// Whether the self-test runs (`MWAIT_SELFTEST=0` turns it off: test-only, so that the
/// tier's logic can be exercised where the instructions are no-ops).
pub(crate) fn enabled() -> bool {
    std::env::var("MWAIT_SELFTEST").map_or(true, |v| v.trim() != "0")
}

/// Runs checks (b), (c) and (a), in that order, on `hw` with the timers of `plan`.
/// `Err` names the first check that failed (`"check (b) timer: ..."`) and what it
/// measured. Never hangs: see the module docs.
pub(crate) fn run<W: HardwareWait>(hw: &W, plan: Plan) -> Result<Report, String> {
    let t0 = now_ns();
    let mailbox = Arc::new(Mailbox::default());
    let m = mailbox.clone();
    // Not joined: the helper ends at its next look at `quit`, and a helper that the
    // scheduler keeps waiting must not make the test wait.
    let helper = std::thread::Builder::new()
        .name("mwait-selftest".into())
        .spawn(move || m.serve());
    if let Err(e) = helper {
        return Err(format!(
            "check (a) store wake: cannot start the storing thread: {e}"
        ));
    }
    let r = Tester {
        hw,
        plan,
        mailbox: &mailbox,
        next_id: 0,
    }
    .checks(t0);
    mailbox.quit.store(true, Ordering::Release);
    r
}

/// The CPU this thread runs on now, where the platform says.
fn current_cpu() -> Option<usize> {
    let cpu = sys::current_cpu();
    (cpu != u32::MAX).then_some(cpu as usize)
}

/// The median of `v` (the lower one of an even count); `v` must not be empty.
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

/// Spin-waits a little, giving the CPU back now and then, so that a thread that
/// shares this CPU can run.
fn pause(round: &mut u32) {
    *round = round.wrapping_add(1);
    if *round % 64 == 0 {
        std::thread::yield_now();
    } else {
        core::hint::spin_loop();
    }
}
