//! The hardware tiers' self-test: does this tier behave like a monitor?
//!
//! A real monitor wait has three properties, and each has a check here, named in the
//! reason of a demotion (`Selection::demoted`):
//!
//! - **(b) timer**: without a store it lasts about its timer, so waits of `T` and `8T`
//!   last in proportion: the long waits' median must reach half its timer and exceed
//!   the short waits' median by half the timers' difference (a difference, so that
//!   the fixed cost of an episode, a system call for the kernel tier, cancels out). A
//!   trapped instruction that returns after a fixed cost whatever its timer (MWAITX
//!   on the AMD EPYC Firecracker guests: ~25 000 TSC cycles), or an emulated no-op
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
//! more: a software monitor (a loop on the word and the clock) passed 9 runs of 9 at
//! a load of 9 to 11 on 2 vCPUs, taking 1.2 ms to 11 ms; the kernel tier in the
//! 2-vCPU QEMU TCG guest of `cargo xtask vm-test` passed on a quiet host and was
//! found inconclusive (no acknowledgement from the helper) on a host at load 3 to 7
//! with a 20 ms budget.
//!
//! # Simulated monitors
//!
//! The checks are generic over [`HardwareWait`], so the unit tests feed them the
//! simulated monitors of `backend/sim.rs` (a real one, a trapped no-op, a sleeper,
//! one that ignores its timer).

use super::{Backend, HardwareWait, HwWake};
use crate::backend::CState;
use crate::primitive::AtomicU32;
use crate::sys::clock::now_ns;
use crate::sys::{self, ThreadCpus};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// A line of its own for the armed word, so that no neighbour's write ends a wait.
#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU32);

/// What the waiter and the helper share, and the protocol of one try `id`:
///
/// 1. the waiter writes `armed(id)` to the word and the try's parameters, then
///    `request = id` (Release);
/// 2. the helper writes `acked = id` (Release);
/// 3. for a store try, the waiter, once it sees the acknowledgement, writes
///    `begun_ns`, then `begun = id` (Release), and waits; the helper, if it saw that
///    within `slack_ns`, stores `armed(id) + 1` `store_after_ns` after `begun_ns`
///    (a waiter that saw no acknowledgement voids the try by storing
///    `armed(id) + 1` itself). For a no-store try the waiter
///    does not wait for the helper, which stores (the watchdog) `store_after_ns` after
///    its acknowledgement;
/// 4. the waiter ends the try with its own compare-exchange `armed(id)` to
///    `armed(id) + 1`; when that fails the helper's store won, and its timestamps
///    follow (`stored = id`, Release).
///
/// The helper's stores are compare-exchanges from `armed(id)`, so a store meant for
/// one try can never land in another.
#[derive(Default)]
struct Mailbox {
    word: Line,
    request: AtomicU64,
    store_after_ns: AtomicU64,
    from_begin: AtomicBool,
    waiter_cpu: AtomicUsize,
    slack_ns: AtomicU64,
    acked: AtomicU64,
    begun_ns: AtomicU64,
    begun: AtomicU64,
    store_t0_ns: AtomicU64,
    store_t1_ns: AtomicU64,
    stored: AtomicU64,
    skipped: AtomicU64,
    apart: AtomicBool,
    quit: AtomicBool,
}

/// The value the word holds during try `id`.
fn armed(id: u64) -> u32 {
    (id as u32).wrapping_mul(2)
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

impl Mailbox {
    /// The helper thread: serves each try announced until `quit`.
    fn serve(&self) {
        let cpus = ThreadCpus::of_this_thread();
        let mut apart = false;
        let mut served = 0;
        let mut round = 0;
        while !self.quit.load(Ordering::Acquire) {
            let id = self.request.load(Ordering::Acquire);
            if id == served {
                // Tries come back to back: spin, unless this thread may be keeping
                // the waiter off a shared CPU.
                if apart {
                    core::hint::spin_loop();
                } else {
                    pause(&mut round);
                }
                continue;
            }
            served = id;
            // Run on another CPU than the waiter's, where the process has one, so
            // that the scheduler cannot keep the two threads on one CPU.
            let waiter_cpu = self.waiter_cpu.load(Ordering::Relaxed);
            if !apart || current_cpu() == Some(waiter_cpu) {
                apart = cpus.as_ref().is_some_and(|c| c.move_off(waiter_cpu));
                self.apart.store(apart, Ordering::Relaxed);
            }
            if let Some((t0, t1)) = self.serve_one(id, apart) {
                self.store_t0_ns.store(t0, Ordering::Relaxed);
                self.store_t1_ns.store(t1, Ordering::Relaxed);
                self.stored.store(id, Ordering::Release);
            }
        }
    }

    /// Serves try `id`: its store's timestamps, or `None` when the waiter ended the
    /// try first (or the test is over).
    fn serve_one(&self, id: u64, apart: bool) -> Option<(u64, u64)> {
        let value = armed(id);
        let store_after_ns = self.store_after_ns.load(Ordering::Relaxed);
        let from_begin = self.from_begin.load(Ordering::Relaxed);
        let ack_ns = now_ns();
        self.acked.store(id, Ordering::Release);
        let live =
            || self.word.0.load(Ordering::Relaxed) == value && !self.quit.load(Ordering::Acquire);
        let mut at = ack_ns + store_after_ns;
        if from_begin {
            // Spin for the waiter's start (on a CPU of its own; on a shared one, yield
            // now and then after a while, so that the waiter can run).
            let mut round = 0;
            while self.begun.load(Ordering::Acquire) != id {
                if !live() {
                    return None;
                }
                if apart || now_ns() < at {
                    core::hint::spin_loop();
                } else {
                    pause(&mut round);
                }
            }
            let begun_ns = self.begun_ns.load(Ordering::Relaxed);
            // Seen late, this thread was not running when the wait began, and may
            // not be when it should store: no store, which voids the try.
            if now_ns() > begun_ns + self.slack_ns.load(Ordering::Relaxed) {
                self.skipped.store(id, Ordering::Release);
                return None;
            }
            at = begun_ns + store_after_ns;
        }
        // A store try never yields from here to the store: on a loaded machine a
        // yield can cost a whole time slice. The watchdog of a no-store try needs no
        // precision, and yields so as not to take a CPU from others for nothing.
        let mut round = 0;
        while now_ns() < at {
            if !live() {
                return None;
            }
            if from_begin {
                core::hint::spin_loop();
            } else {
                pause(&mut round);
            }
        }
        let t0 = now_ns();
        let ok = self
            .word
            .0
            .compare_exchange(value, value + 1, Ordering::Release, Ordering::Relaxed)
            .is_ok();
        let t1 = now_ns();
        ok.then_some((t0, t1))
    }
}

/// One try as the waiter saw it.
struct Try {
    /// When the wait began and when it returned.
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
    /// Announces try `self.next_id` to the helper.
    fn announce(&self, store_after_ns: u64, from_begin: bool) {
        let mb = self.mailbox;
        mb.word.0.store(armed(self.next_id), Ordering::Relaxed);
        mb.store_after_ns.store(store_after_ns, Ordering::Relaxed);
        mb.from_begin.store(from_begin, Ordering::Relaxed);
        mb.slack_ns
            .store(self.plan.store_slack_ns(), Ordering::Relaxed);
        let cpu = current_cpu().unwrap_or(usize::MAX);
        mb.waiter_cpu.store(cpu, Ordering::Relaxed);
        mb.request.store(self.next_id, Ordering::Release);
    }

    /// One wait with timer `timer_ns`. With `store_after_ns`, a store try: the wait
    /// begins once the helper has acknowledged the try (`None` if it did not within
    /// [`Plan::watchdog_ns`]), and the helper stores that long after the wait began
    /// if it saw the start in time. Without, a no-store try, ended by the watchdog's
    /// store at the latest.
    fn attempt(&mut self, timer_ns: u64, store_after_ns: Option<u64>) -> Option<Try> {
        self.next_id += 1;
        let (id, mb) = (self.next_id, self.mailbox);
        let value = armed(id);
        self.announce(
            store_after_ns.unwrap_or(self.plan.watchdog_ns()),
            store_after_ns.is_some(),
        );
        let mut begun_ns = now_ns();
        if store_after_ns.is_some() {
            // The helper must be running: wait for its acknowledgement (it then waits
            // for this thread's start, so this thread may yield meanwhile).
            let give_up = begun_ns + self.plan.watchdog_ns();
            let mut round = 0;
            while mb.acked.load(Ordering::Acquire) != id {
                if now_ns() >= give_up {
                    // Void. The helper's store for this try, if any, now fails.
                    mb.word.0.store(value + 1, Ordering::Relaxed);
                    return None;
                }
                pause(&mut round);
            }
            begun_ns = now_ns();
            mb.begun_ns.store(begun_ns, Ordering::Relaxed);
            mb.begun.store(id, Ordering::Release);
        }
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
        Some(Try {
            begun_ns,
            ended_ns,
            wake,
            store_ns,
        })
    }

    /// Checks (b), (c) and (a), in that order; the first that fails ends the test.
    /// `t0` is when the test began, for [`Report::cost_ns`].
    fn checks(mut self, t0: u64) -> Result<Report, String> {
        // Checks (b) and (c): no store (bar the watchdog); short and long waits
        // interleaved, so that a burst of load hits both alike.
        let mut timers = self.timer_tries();
        let (m_short, m_long) = timers.check_timer(self.plan)?;
        timers.check_early_return()?;
        // Check (a): the helper stores `short_ns` into a wait of `long_ns`.
        check_two_cpus()?;
        let mut stores = self.store_tries();
        let m_wake = self.check_store_wake(&mut stores, m_long)?;
        Ok(Report {
            timer_medians_ns: (m_short, m_long),
            early: (timers.early, timers.valid()),
            wake_median_ns: m_wake,
            store_tries: (stores.latencies.len(), stores.attempts),
            cost_ns: now_ns() - t0,
        })
    }

    /// The no-store waits of checks (b) and (c): [`TIMER_TRIES`] of each timer,
    /// short and long alternating, in at most `2 * TIMER_TRIES * ATTEMPTS_PER_TRY`
    /// attempts.
    fn timer_tries(&mut self) -> TimerTries {
        let plan = self.plan;
        let mut tries = TimerTries::default();
        while (tries.short.len() < TIMER_TRIES || tries.long.len() < TIMER_TRIES)
            && tries.attempts < 2 * TIMER_TRIES * ATTEMPTS_PER_TRY
        {
            tries.attempts += 1;
            let timer_ns =
                if tries.short.len() <= tries.long.len() && tries.short.len() < TIMER_TRIES {
                    plan.short_ns
                } else {
                    plan.long_ns()
                };
            let Some(t) = self.attempt(timer_ns, None) else {
                continue;
            };
            // `Yield` (the kernel tier: the scheduler wants the CPU) is no verdict on
            // the monitor.
            if t.wake == HwWake::Yield {
                continue;
            }
            if t.lasted_ns() < timer_ns / 2 {
                tries.early += 1;
            }
            if timer_ns == plan.short_ns {
                tries.short.push(t.lasted_ns());
            } else {
                tries.long.push(t.lasted_ns());
            }
        }
        tries
    }

    /// The tries of check (a), until [`STORE_TRIES`] are valid or
    /// [`Plan::store_budget_ns`] has passed.
    fn store_tries(&mut self) -> StoreTries {
        let give_up = now_ns() + self.plan.store_budget_ns();
        let mut tries = StoreTries::default();
        while tries.latencies.len() < STORE_TRIES && now_ns() < give_up {
            tries.attempts += 1;
            if let Some(latency) = self.store_try(&mut tries.voids) {
                tries.latencies.push(latency);
            }
        }
        tries
    }

    /// One try of check (a): the latency from the helper's store to the end of the
    /// wait, or `None` with the reason counted in `voids` when the try is void.
    fn store_try(&mut self, voids: &mut Voids) -> Option<u64> {
        let plan = self.plan;
        let Some(t) = self.attempt(plan.long_ns(), Some(plan.short_ns)) else {
            voids.no_ack += 1;
            return None;
        };
        let Some((s0, s1)) = t.store_ns else {
            if self.mailbox.skipped.load(Ordering::Acquire) == self.next_id {
                voids.helper_late += 1;
            } else {
                voids.ended_first += 1;
            }
            return None;
        };
        if t.wake == HwWake::Yield {
            voids.yielded += 1;
        } else if s1 - s0 > plan.store_slack_ns() {
            voids.wide_store += 1;
        } else if !(t.begun_ns..=t.begun_ns + plan.store_late_ns()).contains(&s0) {
            voids.late_store += 1;
        } else if t.ended_ns < s0 {
            voids.ended_first += 1;
        } else {
            return Some(t.ended_ns - s0);
        }
        None
    }

    /// Check (a)'s verdict on `tries`: the median latency from store to wake, or why
    /// the check failed or was inconclusive. `m_long` is check (b)'s long median.
    fn check_store_wake(&self, tries: &mut StoreTries, m_long: u64) -> Result<u64, String> {
        let plan = self.plan;
        if tries.latencies.len() < MIN_VALID_TRIES {
            let (attempts_a, voids) = (tries.attempts, &tries.voids);
            return Err(format!(
                "check (a) store wake: inconclusive: in {attempts_a} attempts over {} ms \
                 only {} had the storing thread running with the waiter and storing during \
                 the wait (an overloaded machine), {MIN_VALID_TRIES} needed; void: {voids}; \
                 the helper {} on a CPU of its own",
                plan.store_budget_ns() / 1_000_000,
                tries.latencies.len(),
                if self.mailbox.apart.load(Ordering::Relaxed) {
                    "ran"
                } else {
                    "did not run"
                }
            ));
        }
        let valid = tries.latencies.len();
        let m_wake = median(&mut tries.latencies);
        let wake_within_ns = plan.wake_within_ns(m_long);
        if m_wake > wake_within_ns {
            return Err(format!(
                "check (a) store wake: a wait with a {} ns timer ended {m_wake} ns after \
                 another thread's store to its line (median of {valid} tries; at most \
                 {wake_within_ns} ns allowed): it does not wake on stores",
                plan.long_ns(),
            ));
        }
        Ok(m_wake)
    }
}

/// The no-store waits of checks (b) and (c).
#[derive(Default)]
struct TimerTries {
    /// How long the waits with the short timer lasted, in ns.
    short: Vec<u64>,
    /// How long the waits with the long timer lasted, in ns.
    long: Vec<u64>,
    /// Waits that ended before half their timer.
    early: usize,
    /// Attempts made, void ones included.
    attempts: usize,
}

impl TimerTries {
    /// The waits that count (not void, not ended by a `Yield`).
    fn valid(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// Check (b)'s verdict: the medians of the short and the long waits, or why the
    /// check failed or was inconclusive.
    fn check_timer(&mut self, plan: Plan) -> Result<(u64, u64), String> {
        if self.short.len() < MIN_VALID_TRIES || self.long.len() < MIN_VALID_TRIES {
            let (tried, attempts) = (self.valid(), self.attempts);
            return Err(format!(
                "check (b) timer: inconclusive: {tried} of {attempts} waits ended by a \
                 yield to the scheduler"
            ));
        }
        let (m_short, m_long) = (median(&mut self.short), median(&mut self.long));
        if m_long < plan.long_ns() / 2 || m_long < m_short + plan.min_timer_gap_ns() {
            return Err(format!(
                "check (b) timer: waits of {} ns and {} ns with no store lasted {m_short} ns \
                 and {m_long} ns (medians of {} and {}): not in proportion to their timer \
                 (the long one must last at least half its timer and {} ns more than the \
                 short one)",
                plan.short_ns,
                plan.long_ns(),
                self.short.len(),
                self.long.len(),
                plan.min_timer_gap_ns()
            ));
        }
        Ok((m_short, m_long))
    }

    /// Check (c)'s verdict: a quarter of the waits at most returned early (with ten
    /// tries, two).
    fn check_early_return(&self) -> Result<(), String> {
        let (early, tried) = (self.early, self.valid());
        if early * 4 > tried {
            return Err(format!(
                "check (c) early return: {early} of {tried} waits with no store returned \
                 before half their timer (at most a quarter may)"
            ));
        }
        Ok(())
    }
}

/// Check (a) cannot be made in a process confined to one CPU, where no other thread
/// can store during a wait (nor can a monitor help).
fn check_two_cpus() -> Result<(), String> {
    if ThreadCpus::of_this_thread().is_some_and(|c| c.count() <= 1) {
        return Err(
            "check (a) store wake: cannot be measured: this process may run on \
             one CPU only, where no other thread can store during a wait (nor can a \
             monitor help)"
                .to_string(),
        );
    }
    Ok(())
}

/// The tries of check (a).
#[derive(Default)]
struct StoreTries {
    /// The latency from the helper's store to the end of the wait of each valid try,
    /// in ns.
    latencies: Vec<u64>,
    /// Attempts made, void ones included.
    attempts: usize,
    /// Why the void ones were void.
    voids: Voids,
}

/// Why store tries were void, for the message of an inconclusive check (a).
#[derive(Default)]
struct Voids {
    /// The helper did not acknowledge the try in time.
    no_ack: u32,
    /// The helper saw the wait's start too late, and did not store.
    helper_late: u32,
    /// The wait ended before the store (an early return, or a no-op).
    ended_first: u32,
    /// The helper's timestamps around its store were too far apart.
    wide_store: u32,
    /// The store came too late in the wait.
    late_store: u32,
    /// The wait ended with `Yield`.
    yielded: u32,
}

impl fmt::Display for Voids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} not acknowledged, {} with the helper late at the start, {} ended before \
             the store, {} with the store preempted, {} stored too late, {} yielded",
            self.no_ack,
            self.helper_late,
            self.ended_first,
            self.wide_store,
            self.late_store,
            self.yielded
        )
    }
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

#[cfg(test)]
mod tests {
    use super::super::sim::{SimMonitor, TEST_PLAN};
    use super::*;

    /// One simulated self-test at a time: each one's helper thread spins, and running
    /// them side by side would load the machine the verdicts are timed on.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Runs the self-test on `sim` with `plan`, one test at a time.
    fn run_alone(sim: &SimMonitor, plan: Plan) -> Result<Report, String> {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let r = run(sim, plan);
        println!("{sim:?}: {r:?}");
        r
    }

    /// Runs the self-test on `sim` with the test plan.
    fn verdict(sim: &SimMonitor) -> Result<Report, String> {
        run_alone(sim, TEST_PLAN)
    }

    fn assert_demoted_by(sim: &SimMonitor, check: &str) {
        let why = verdict(sim).expect_err("the self-test demotes it");
        assert!(why.starts_with(check), "expected {check}, got: {why}");
    }

    #[test]
    fn simulated_real_monitor_is_kept() {
        let r = verdict(&SimMonitor::real()).expect("a real monitor passes");
        // Its one early return (the 7th episode) is among the ten no-store waits, and
        // tolerated. It counts when it lasts under half its timer, which a return at
        // once may not under Miri, whose clock runs with the other tests' threads.
        assert!(r.early.0 <= 1, "{r:?}");
        assert_eq!(r.early.1, 2 * TIMER_TRIES);
    }

    #[test]
    fn simulated_real_monitor_under_an_os_cap_is_kept_with_a_plan_that_fits() {
        // The cap is shorter than the test plan's long wait; the plan reads it.
        let cap_ns = TEST_PLAN.long_ns() / 2;
        let plan = TEST_PLAN.under_cap(cap_ns);
        assert!(plan.long_ns() <= cap_ns);
        let sim = SimMonitor::real().with_cap(cap_ns);
        run_alone(&sim, plan).expect("a capped real monitor passes under its cap");
    }

    #[test]
    fn simulated_trapped_noop_is_demoted_by_check_b() {
        assert_demoted_by(&SimMonitor::trapped_noop(), "check (b) timer");
    }

    #[test]
    fn simulated_trapped_noop_with_the_production_plan_is_demoted_by_check_b() {
        // The machine's own numbers: a 10 µs no-op against 20 µs and 160 µs timers.
        let why = run_alone(&SimMonitor::trapped_noop(), Plan::new(SHORT_WAIT_NS)).unwrap_err();
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
        // The thresholds of each check sit far from both a real monitor and its fake:
        // a sleeper's latency (the long timer less the store delay) is twice the
        // allowance, and a real monitor's waits differ by twice the minimum gap.
        assert_eq!(2 * p.wake_within_ns(p.long_ns()), p.long_ns() - p.short_ns);
        assert_eq!(2 * p.min_timer_gap_ns(), p.long_ns() - p.short_ns);
        assert!(p.store_late_ns() < p.watchdog_ns());
    }

    #[test]
    fn median_is_the_middle_value() {
        assert_eq!(median(&mut [5, 1, 9]), 5);
        assert_eq!(median(&mut [4, 1, 3, 2]), 2);
    }
}
