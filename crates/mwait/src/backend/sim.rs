//! Simulated monitors: test-only [`HardwareWait`]s that model the hardware we cannot
//! reach, so that the self-test (`selftest/`) and, through `HardwareWait`, the tier
//! ladder can be tested against each kind of monitor on any machine.
//!
//! - [`SimMonitor::real`]: a real monitor. It wakes a set latency after the armed
//!   word changes, honours its timer, returns at once every `n`-th episode (an
//!   interrupt), and can cap each episode like Linux's `umwait_control` max_time
//!   (UMWAIT's CF=1: the episode ends early, reported as `Woken`).
//! - [`SimMonitor::trapped_noop`]: a trapped instruction of fixed cost whatever its
//!   timer, ignoring stores (the trapped MWAITX of `docs/hardware-results.md`).
//! - [`SimMonitor::sleeper`]: an emulation that sleeps until its timer and ignores
//!   stores (it does re-check the word after arming, as the contract asks).
//! - [`SimMonitor::ignores_timer`]: a monitor that wakes on stores but has no timer.
//! - [`SimMonitor::scripted`]: for the ladder's tests, no timing at all: every
//!   episode returns one set [`HwWake`] at once, and one chosen episode first
//!   stores a value, as a writer on another CPU would.
//!
//! The simulations run in real time, so they are built to keep each self-test
//! verdict far from its threshold on a loaded machine: the waits sleep instead of
//! spinning (a sleeping waiter leaves the CPU to the storing thread), and their
//! latencies (tens of µs plus the scheduler's) are small against [`TEST_PLAN`]'s
//! timers (5 ms and 40 ms; a wake is allowed within about 17 ms of the store). Early returns are counted, not
//! random, so check (c) sees the same episodes every run.

use super::selftest::Plan;
use super::{HardwareWait, HwWake};
use crate::backend::CState;
use crate::primitive::{AtomicU32, Ordering};
use crate::sys::clock::now_ns;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The self-test plan for simulated monitors: timers long against the scheduling
/// noise of a loaded machine.
pub(crate) const TEST_PLAN: Plan = Plan::new(5_000_000);

/// The fixed cost of a simulated trapped no-op, in ns: that of the trapped MWAITX
/// of `docs/hardware-results.md`.
pub(crate) const TRAPPED_COST_NS: u64 = 7_000;

/// How often a sleeping simulation looks at the word.
const POLL: Duration = Duration::from_micros(50);

/// The kinds of simulated monitor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Wakes `wake_latency_ns` after the word changes; honours its timer.
    Real { wake_latency_ns: u64 },
    /// Returns after `cost_ns` of busy work, whatever the word and the timer.
    TrappedNoop { cost_ns: u64 },
    /// Sleeps until its timer; ignores stores.
    Sleeper,
    /// Wakes on stores; ignores its timer.
    IgnoresTimer,
    /// Returns `wake` at once; episode `store_at` (counted from 1) first stores
    /// `value` to the word.
    Scripted {
        store_at: u64,
        value: u32,
        wake: HwWake,
    },
}

/// A simulated monitor (see the module docs).
#[derive(Debug)]
pub(crate) struct SimMonitor {
    pub(crate) kind: Kind,
    /// Every `early_every`-th episode returns at once (0: never).
    pub(crate) early_every: u64,
    /// The OS cap on one episode, if any (`umwait_control` max_time, in ns).
    pub(crate) cap_ns: Option<u64>,
    /// Episodes begun so far.
    pub(crate) episodes: AtomicU64,
}

impl SimMonitor {
    fn new(kind: Kind) -> SimMonitor {
        SimMonitor {
            kind,
            early_every: 0,
            cap_ns: None,
            episodes: AtomicU64::new(0),
        }
    }

    /// A real monitor: wakes 20 µs after a store (far under the test plan's 17 ms),
    /// and returns early once every 7 episodes (once in the self-test's ten waits
    /// without a store).
    pub(crate) fn real() -> SimMonitor {
        SimMonitor::new(Kind::Real {
            wake_latency_ns: 20_000,
        })
        .early_every(7)
    }

    /// A trapped instruction: [`TRAPPED_COST_NS`] per episode.
    pub(crate) fn trapped_noop() -> SimMonitor {
        SimMonitor::new(Kind::TrappedNoop {
            cost_ns: TRAPPED_COST_NS,
        })
    }

    /// An emulation that sleeps until its timer.
    pub(crate) fn sleeper() -> SimMonitor {
        SimMonitor::new(Kind::Sleeper)
    }

    /// A monitor with no timer.
    pub(crate) fn ignores_timer() -> SimMonitor {
        SimMonitor::new(Kind::IgnoresTimer)
    }

    /// A monitor that takes no time: every episode returns `wake`, and the
    /// `store_at`-th first stores `value`.
    pub(crate) fn scripted(store_at: u64, value: u32, wake: HwWake) -> SimMonitor {
        SimMonitor::new(Kind::Scripted {
            store_at,
            value,
            wake,
        })
    }

    /// This monitor, returning at once every `n`-th episode (0: never).
    pub(crate) fn early_every(mut self, n: u64) -> SimMonitor {
        self.early_every = n;
        self
    }

    /// This monitor, with each episode capped at `cap_ns`.
    pub(crate) fn with_cap(mut self, cap_ns: u64) -> SimMonitor {
        self.cap_ns = Some(cap_ns);
        self
    }
}

impl HardwareWait for SimMonitor {
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, _: CState) -> HwWake {
        let n = self.episodes.fetch_add(1, Ordering::Relaxed) + 1;
        if let Kind::Scripted {
            store_at,
            value,
            wake,
        } = self.kind
        {
            return scripted_episode(word, old, n == store_at, value, wake);
        }
        let start = now_ns();
        if let Kind::TrappedNoop { cost_ns } = self.kind {
            while now_ns() < start + cost_ns {
                core::hint::spin_loop();
            }
            return HwWake::Woken;
        }
        if start >= deadline_ns {
            return HwWake::Deadline;
        }
        // Armed; the store may have landed before the arm.
        if word.load(Ordering::Acquire) != old
            || (self.early_every != 0 && n % self.early_every == 0)
        {
            return HwWake::Woken;
        }
        let timer_ns = match self.kind {
            Kind::IgnoresTimer => u64::MAX,
            _ => deadline_ns,
        };
        let cap_ns = self.cap_ns.map_or(u64::MAX, |c| start.saturating_add(c));
        loop {
            let now = now_ns();
            if now >= timer_ns {
                return HwWake::Deadline;
            }
            if now >= cap_ns {
                return HwWake::Woken;
            }
            if word.load(Ordering::Acquire) != old {
                match self.kind {
                    Kind::Real { wake_latency_ns } => {
                        std::thread::sleep(Duration::from_nanos(wake_latency_ns));
                        return HwWake::Woken;
                    }
                    Kind::IgnoresTimer => return HwWake::Woken,
                    _ => {}
                }
            }
            let left = timer_ns.min(cap_ns) - now;
            std::thread::sleep(POLL.min(Duration::from_nanos(left)));
        }
    }
}

/// A scripted episode: starts on `old`, stores `value` when it is the scripted one,
/// and ends as scripted.
fn scripted_episode(word: &AtomicU32, old: u32, store: bool, value: u32, wake: HwWake) -> HwWake {
    assert_eq!(
        word.load(Ordering::Relaxed),
        old,
        "an episode starts on `old`"
    );
    if store {
        word.store(value, Ordering::Release);
    }
    wake
}
