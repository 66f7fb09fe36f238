//! The hardware tiers' self-test: does this tier behave like a monitor?
//!
//! A real monitor wait has three properties, and each has a check here, named in the
//! reason of a demotion (`Selection::demoted`):
//!
//! - **(a) store wake**: it ends within a few µs of a store to the armed line by
//!   another thread, well before its timer. A wait that sleeps until its timer and
//!   ignores stores (an emulation) fails this one.
//! - **(b) timer**: without a store it lasts about its timer, so waits of `T` and `8T`
//!   last in proportion. A trapped instruction that returns after a fixed cost
//!   whatever its timer (MWAITX on the AMD EPYC Firecracker guests: ~25 000 TSC
//!   cycles), or an emulated no-op that returns at once (UMWAIT under qemu-user),
//!   fails this one; so does a wait that ignores its timer (the helper's watchdog
//!   store ends it).
//! - **(c) rare early return**: without a store it rarely returns before half its
//!   timer (an interrupt may end a real wait, but seldom in a few tens of µs).
//!
//! Every check judges medians (or counts) over several tries, never the shortest,
//! because preemption and interrupts can push a single try either way.
//!
//! # The helper thread, and what a loaded machine does to it
//!
//! The stores come from a helper thread started for the test (it also serves as a
//! watchdog during the no-store tries: it stores once a wait has run for
//! [`Plan::watchdog_ns`], so no tier can hang the test by ignoring its timer; only a
//! wait that ignores both stores and its timer could, and an interrupt ends that).
//! The helper timestamps each store from its own side, before and after the
//! compare-exchange that performs it, so the latency (a) measures is
//! `waiter's end - helper's store`, not a guess from the waiter's side. A store try
//! counts only when
//!
//! - the helper performed the store, and the two timestamps around it are within
//!   [`Plan::store_slack_ns`] (the helper was not preempted around its store);
//! - the store came no later than half the wait's timer after the waiter began (the
//!   helper was running promptly; a late store tells nothing, since a real monitor and
//!   a sleeper would both have reached their timer);
//! - the wait was still running at the store (a wait that ended before it, by an
//!   interrupt or a `Yield`, tells nothing about stores).
//!
//! Other tries are void and retried, up to [`ATTEMPTS_PER_TRY`] times as many
//! attempts as tries wanted. With fewer than [`MIN_VALID_TRIES`] valid tries check (a)
//! is inconclusive, and an inconclusive check demotes the tier: the futex ladder it
//! falls back to is always correct, while keeping a tier that was never seen to wake
//! on a store could make every wait last its whole hardware budget. That is the case
//! of a process confined to one CPU, where the store can never land during the wait
//! and a monitor cannot help anyway, and of a machine so overloaded that the helper
//! did not run promptly in [`ATTEMPTS_PER_TRY`]` × `[`STORE_TRIES`] attempts.
//!
//! A fake passes (a) only if the *majority* of valid tries saw a prompt wake; a
//! sleeper can show one only when the waiter was preempted between its announcement
//! and arming the monitor for longer than the store delay, so that the store landed
//! before the arm and the re-check returned at once: possible in one try, not in most.
//!
//! # Cost
//!
//! With [`SHORT_WAIT_NS`] = 10 µs: five waits of 10 µs and five of 80 µs (0.45 ms),
//! five store tries of about 10 µs each, and starting the helper: under 1 ms for a
//! real monitor, about 1 ms for a sleeper (each store try lasts its 80 µs timer).
//!
//! # Simulated monitors
//!
//! The checks are generic over [`HardwareWait`], so the unit tests feed them the
//! simulated monitors of `backend/sim.rs` (a real one, a trapped no-op, a sleeper...).

use super::{Backend, HardwareWait, HwWake};
use crate::clock::now_ns;
use crate::primitive::AtomicU32;
use crate::CState;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The short timer `T` of check (b), and the store delay of check (a).
pub(crate) const SHORT_WAIT_NS: u64 = 10_000;
/// The long timer of check (b) is this many times the short one; check (a) waits
/// with the long timer.
pub(crate) const LONG_FACTOR: u64 = 8;
/// Check (b) passes when the long waits' median is at least this many times the
/// short waits' median (a real monitor: about [`LONG_FACTOR`], less the fixed cost of
/// an episode; a fixed-cost no-op: 1).
pub(crate) const MIN_TIMER_RATIO: u64 = 3;
/// Tries of each timer of check (b), whose durations also feed check (c).
pub(crate) const TIMER_TRIES: usize = 5;
/// Valid tries wanted by check (a).
pub(crate) const STORE_TRIES: usize = 5;
/// Fewer valid tries than this leave a check inconclusive.
pub(crate) const MIN_VALID_TRIES: usize = 3;
/// Each check makes at most this many attempts per try wanted (void tries retried).
pub(crate) const ATTEMPTS_PER_TRY: usize = 3;
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
    pub(crate) fn for_tier(backend: Backend, caps: &crate::Capabilities) -> Plan {
        let plan = Plan::new(SHORT_WAIT_NS);
        match (backend, caps.umwait_control) {
            #[cfg(target_arch = "x86_64")]
            (Backend::Umwait, Some(c)) if c.max_time_tsc != 0 => {
                let hz = crate::tsc::rate().hz.max(1);
                plan.under_cap(u64::from(c.max_time_tsc) * 1_000_000_000 / hz)
            }
            _ => plan,
        }
    }

    /// The long timer: check (b)'s second wait and check (a)'s wait.
    pub(crate) const fn long_ns(self) -> u64 {
        self.short_ns * LONG_FACTOR
    }

    /// Check (a) passes when the median latency from store to wake is at most this:
    /// a quarter of the long timer (a real monitor: a few µs; a sleeper: the timer
    /// less the store delay, seven eighths of it).
    pub(crate) const fn wake_within_ns(self) -> u64 {
        self.long_ns() / 4
    }

    /// A store try is void when the helper stored later than this after the waiter
    /// began: half the long timer.
    pub(crate) const fn store_late_ns(self) -> u64 {
        self.long_ns() / 2
    }

    /// A store try is void when the helper's timestamps around its store are further
    /// apart than this (it was preempted there).
    pub(crate) const fn store_slack_ns(self) -> u64 {
        self.short_ns / 2
    }

    /// During a no-store try the helper stores once the wait has run this long, so
    /// that a wait that ignores its timer still ends.
    pub(crate) const fn watchdog_ns(self) -> u64 {
        self.long_ns() * 4
    }
}

/// What a passed self-test measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    /// Check (b): the medians of the short and the long waits, in ns.
    pub(crate) timer_medians_ns: (u64, u64),
    /// Check (c): no-store waits that ended before half their timer, of how many.
    pub(crate) early: (usize, usize),
    /// Check (a): the median latency from store to wake, in ns, and the valid tries.
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
pub(crate) fn run<W: HardwareWait + Sync>(hw: &W, plan: Plan) -> Result<Report, String> {
    let t0 = now_ns();
    let mailbox = Mailbox::default();
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("mwait-selftest".into())
            .spawn_scoped(s, || mailbox.serve());
        if let Err(e) = helper {
            return Err(format!(
                "check (a) store wake: inconclusive: cannot start the storing thread: {e}"
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
    })
}

/// A line of its own for the armed word, so that no neighbour's write ends a wait.
#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU32);

/// What the waiter and the helper share. The waiter announces try `id` by writing
/// `begun_ns` and `store_after_ns`, then `request = id` (Release); the armed word then
/// holds `armed(id)`. The helper stores `armed(id) + 1` with a compare-exchange, so a
/// store meant for an old try can never land in a newer one; the waiter ends a try by
/// its own compare-exchange to `armed(id) + 1`, and when that fails the helper's
/// store won and its timestamps follow (`stored = id`, Release).
#[derive(Default)]
struct Mailbox {
    word: Line,
    request: AtomicU64,
    begun_ns: AtomicU64,
    store_after_ns: AtomicU64,
    store_t0_ns: AtomicU64,
    store_t1_ns: AtomicU64,
    stored: AtomicU64,
    quit: AtomicBool,
}

/// The value the word holds during try `id`.
fn armed(id: u64) -> u32 {
    (id as u32).wrapping_mul(2)
}

/// Spin-waits a little, giving the CPU back now and then, so that on a loaded machine
/// the thread waited for can run.
fn pause(round: &mut u32) {
    *round = round.wrapping_add(1);
    if *round % 64 == 0 {
        std::thread::yield_now();
    } else {
        core::hint::spin_loop();
    }
}

impl Mailbox {
    /// The helper thread: serves each try announced until `quit`.
    fn serve(&self) {
        let mut served = 0;
        let mut round = 0;
        while !self.quit.load(Ordering::Acquire) {
            let id = self.request.load(Ordering::Acquire);
            if id == served {
                pause(&mut round);
                continue;
            }
            served = id;
            let at =
                self.begun_ns.load(Ordering::Relaxed) + self.store_after_ns.load(Ordering::Relaxed);
            let value = armed(id);
            // Wait for the store time, unless the waiter ends the try first.
            while now_ns() < at && self.word.0.load(Ordering::Relaxed) == value {
                if self.quit.load(Ordering::Acquire) {
                    return;
                }
                pause(&mut round);
            }
            let t0 = now_ns();
            let ok = self
                .word
                .0
                .compare_exchange(value, value + 1, Ordering::Release, Ordering::Relaxed)
                .is_ok();
            let t1 = now_ns();
            if ok {
                self.store_t0_ns.store(t0, Ordering::Relaxed);
                self.store_t1_ns.store(t1, Ordering::Relaxed);
                self.stored.store(id, Ordering::Release);
            }
        }
    }
}

/// One try as the waiter saw it.
struct Try {
    /// When the waiter announced it and when its wait returned.
    begun_ns: u64,
    ended_ns: u64,
    wake: HwWake,
    /// The helper's timestamps around its store, if it stored.
    store_ns: Option<(u64, u64)>,
}

impl Try {
    fn lasted_ns(&self) -> u64 {
        self.ended_ns.saturating_sub(self.begun_ns)
    }
}

struct Tester<'a, W> {
    hw: &'a W,
    plan: Plan,
    mailbox: &'a Mailbox,
    next_id: u64,
}

impl<W: HardwareWait> Tester<'_, W> {
    /// One wait with timer `timer_ns`; the helper stores `store_after_ns` after it
    /// began, if it is still running then.
    fn attempt(&mut self, timer_ns: u64, store_after_ns: u64) -> Try {
        self.next_id += 1;
        let (id, mb) = (self.next_id, self.mailbox);
        let value = armed(id);
        mb.word.0.store(value, Ordering::Relaxed);
        let begun_ns = now_ns();
        mb.begun_ns.store(begun_ns, Ordering::Relaxed);
        mb.store_after_ns.store(store_after_ns, Ordering::Relaxed);
        mb.request.store(id, Ordering::Release);
        let wake = self
            .hw
            .wait_episode(&mb.word.0, value, begun_ns + timer_ns, CState::C0_1);
        let ended_ns = now_ns();
        let cancelled = mb
            .word
            .0
            .compare_exchange(value, value + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        let store_ns = if cancelled {
            None
        } else {
            let mut round = 0;
            while mb.stored.load(Ordering::Acquire) != id {
                pause(&mut round);
            }
            Some((
                mb.store_t0_ns.load(Ordering::Relaxed),
                mb.store_t1_ns.load(Ordering::Relaxed),
            ))
        };
        Try {
            begun_ns,
            ended_ns,
            wake,
            store_ns,
        }
    }

    fn checks(mut self, t0: u64) -> Result<Report, String> {
        let plan = self.plan;
        // Checks (b) and (c): no store (bar the watchdog); short and long waits
        // interleaved, so that a burst of load hits both alike.
        let (mut short, mut long) = (Vec::new(), Vec::new());
        let mut early = 0;
        let mut attempts = 0;
        while (short.len() < TIMER_TRIES || long.len() < TIMER_TRIES)
            && attempts < 2 * TIMER_TRIES * ATTEMPTS_PER_TRY
        {
            attempts += 1;
            let timer_ns = if short.len() <= long.len() && short.len() < TIMER_TRIES {
                plan.short_ns
            } else {
                plan.long_ns()
            };
            let t = self.attempt(timer_ns, plan.watchdog_ns());
            // `Yield` (the kernel tier: the scheduler wants the CPU) is no verdict on
            // the monitor.
            if t.wake == HwWake::Yield {
                continue;
            }
            if t.lasted_ns() < timer_ns / 2 {
                early += 1;
            }
            if timer_ns == plan.short_ns {
                short.push(t.lasted_ns());
            } else {
                long.push(t.lasted_ns());
            }
        }
        let tried = short.len() + long.len();
        if short.len() < MIN_VALID_TRIES || long.len() < MIN_VALID_TRIES {
            return Err(format!(
                "check (b) timer: inconclusive: {tried} of {attempts} waits ended by a \
                 yield to the scheduler"
            ));
        }
        let (m_short, m_long) = (median(&mut short), median(&mut long));
        if m_long < plan.long_ns() / 2 || m_long < MIN_TIMER_RATIO * m_short {
            return Err(format!(
                "check (b) timer: waits of {} ns and {} ns with no store lasted {m_short} ns \
                 and {m_long} ns (medians of {} and {}): not in proportion to their timer \
                 (the long one must last at least half its timer and {MIN_TIMER_RATIO}x \
                 the short one)",
                plan.short_ns,
                plan.long_ns(),
                short.len(),
                long.len()
            ));
        }
        // A quarter at most: with ten tries, two.
        if early * 4 > tried {
            return Err(format!(
                "check (c) early return: {early} of {tried} waits with no store returned \
                 before half their timer (at most a quarter may)"
            ));
        }

        // Check (a): the helper stores `short_ns` into a wait of `long_ns`.
        let mut latencies = Vec::new();
        let mut attempts_a = 0;
        while latencies.len() < STORE_TRIES && attempts_a < STORE_TRIES * ATTEMPTS_PER_TRY {
            attempts_a += 1;
            let t = self.attempt(plan.long_ns(), plan.short_ns);
            let Some((s0, s1)) = t.store_ns else { continue };
            let valid = t.wake != HwWake::Yield
                && s1 - s0 <= plan.store_slack_ns()
                && s0 <= t.begun_ns + plan.store_late_ns()
                && t.ended_ns >= s0;
            if valid {
                latencies.push(t.ended_ns - s0);
            }
        }
        if latencies.len() < MIN_VALID_TRIES {
            return Err(format!(
                "check (a) store wake: inconclusive: in {attempts_a} attempts only {} had \
                 the storing thread store promptly while the wait ran (one usable CPU, \
                 or an overloaded machine), {MIN_VALID_TRIES} needed",
                latencies.len()
            ));
        }
        let valid = latencies.len();
        let m_wake = median(&mut latencies);
        if m_wake > plan.wake_within_ns() {
            return Err(format!(
                "check (a) store wake: a wait with a {} ns timer ended {m_wake} ns after \
                 another thread's store to its line (median of {valid} tries; at most {} \
                 ns allowed): it does not wake on stores",
                plan.long_ns(),
                plan.wake_within_ns()
            ));
        }
        Ok(Report {
            timer_medians_ns: (m_short, m_long),
            early: (early, tried),
            wake_median_ns: m_wake,
            store_tries: (valid, attempts_a),
            cost_ns: now_ns() - t0,
        })
    }
}

/// The median of `v` (the lower one of an even count); `v` must not be empty.
fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::super::sim::{SimMonitor, TEST_PLAN};
    use super::*;

    /// Runs the self-test on `sim` with the test plan.
    fn verdict(sim: &SimMonitor) -> Result<Report, String> {
        let r = run(sim, TEST_PLAN);
        println!("{sim:?}: {r:?}");
        r
    }

    fn assert_demoted_by(sim: &SimMonitor, check: &str) {
        let why = verdict(sim).expect_err("the self-test demotes it");
        assert!(why.starts_with(check), "expected {check}, got: {why}");
    }

    #[test]
    fn simulated_real_monitor_is_kept() {
        let r = verdict(&SimMonitor::real()).expect("a real monitor passes");
        // Its one counted early return (the 7th episode) is among the ten no-store
        // waits, and tolerated.
        assert_eq!(r.early, (1, 2 * TIMER_TRIES));
    }

    #[test]
    fn simulated_real_monitor_under_an_os_cap_is_kept_with_a_plan_that_fits() {
        // The cap is shorter than the test plan's long wait; the plan reads it.
        let cap_ns = TEST_PLAN.long_ns() / 2;
        let plan = TEST_PLAN.under_cap(cap_ns);
        assert!(plan.long_ns() <= cap_ns);
        let sim = SimMonitor::real().with_cap(cap_ns);
        run(&sim, plan).expect("a capped real monitor passes under its cap");
    }

    #[test]
    fn simulated_trapped_noop_is_demoted_by_check_b() {
        assert_demoted_by(&SimMonitor::trapped_noop(), "check (b) timer");
    }

    #[test]
    fn simulated_trapped_noop_with_the_production_plan_is_demoted_by_check_b() {
        // The machine's own numbers: a 10 µs no-op against 10 µs and 80 µs timers.
        let why = run(&SimMonitor::trapped_noop(), Plan::new(SHORT_WAIT_NS)).unwrap_err();
        assert!(why.starts_with("check (b) timer"), "{why}");
    }

    #[test]
    fn simulated_sleeper_is_demoted_by_check_a() {
        assert_demoted_by(&SimMonitor::sleeper(), "check (a) store wake");
    }

    #[test]
    fn simulated_frequent_early_return_is_demoted_by_check_c() {
        // Every third episode returns at once: three of the ten no-store waits.
        assert_demoted_by(&SimMonitor::real().early_every(3), "check (c) early return");
    }

    #[test]
    fn simulated_wait_that_ignores_its_timer_ends_by_the_watchdog_and_fails_check_b() {
        assert_demoted_by(&SimMonitor::ignores_timer(), "check (b) timer");
    }

    #[test]
    fn a_plan_fits_under_the_os_cap_but_not_below_its_floor() {
        let p = Plan::new(SHORT_WAIT_NS);
        assert_eq!(p.under_cap(u64::MAX), p);
        assert_eq!(p.under_cap(40_000).long_ns(), 36_000);
        assert_eq!(p.under_cap(1_000).short_ns, MIN_SHORT_WAIT_NS);
        // The thresholds of each check sit far from both a real monitor and its fake.
        assert!(p.wake_within_ns() < p.long_ns() - p.short_ns);
        assert!(p.store_late_ns() < p.watchdog_ns());
    }

    #[test]
    fn median_is_the_middle_value() {
        assert_eq!(median(&mut [5, 1, 9]), 5);
        assert_eq!(median(&mut [4, 1, 3, 2]), 2);
    }
}
