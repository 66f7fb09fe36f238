//! The whole ladder with a simulated real monitor as its hardware tier
//! (`backend/sim.rs`): the waits run [`climb`] from start to end on a real
//! [`WaitCell`], and the writers use the cell's own `store`, so that the ladder's
//! contract is tested against a monitor this machine does not have: deadlines,
//! the hand-over to park when the hardware budget ends, early returns hidden
//! behind the predicate, no lost wake-up, and episodes cut short by an OS cap.
//! Each test also checks the cell's [`WaitCell::stats`]: where its waits ended,
//! and the hardware episodes that returned with nothing changed.
//!
//! The policies turn the adaptation off, so that whether the hardware tier runs
//! does not depend on how loaded the machine is. The few bounds on time are
//! orders of magnitude above what the wait should take: they tell "bounded by the
//! deadline" from "ran to the end of a 60 s budget", not fast from slow.

use crate::backend::sim::SimMonitor;
use crate::backend::CState;
use crate::cell::WaitCell;
use crate::ladder::climb;
use crate::ladder::outcome::{Ended, Outcome, WaitResult};
use crate::policy::Resolved;
use crate::sys::clock::now_ns;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A hardware budget no test reaches unless the ladder ignored its deadline.
const LONG_HW_BUDGET_NS: u64 = 60_000_000_000;
/// Far beyond any wait here that ends as it should, far below the long budget.
/// The waits' own deadlines and budgets are tens of ms, long against a time
/// slice, so that a waiter preempted at the wrong moment still runs an episode.
const NO_HANG: Duration = Duration::from_secs(20);
/// Ping-pong round trips of the stress test.
const ROUND_TRIPS: u32 = if cfg!(miri) { 20 } else { 2_000 };

/// No spin, no adaptation, hardware budget `hw_ns`, then park.
fn policy(hw_ns: u64) -> Resolved {
    Resolved {
        spin_ns: 0,
        hw_ns,
        hw: None,
        spin_pause: None,
        park: true,
        adaptive: false,
        cstate: CState::C0_1,
        handoff: true,
        apart: false,
    }
}

/// One whole wait on `cell` through the ladder, with `hw` as its hardware tier.
fn wait(
    cell: &WaitCell,
    hw: &SimMonitor,
    hw_ns: u64,
    deadline: Option<Instant>,
    mut pred: impl FnMut(u32) -> bool,
) -> Outcome {
    let deadline_ns = deadline.map(|d| {
        let left = d.saturating_duration_since(Instant::now()).as_nanos() as u64;
        now_ns() + left
    });
    climb(
        cell.waiter(),
        &mut pred,
        deadline_ns,
        policy(hw_ns),
        Some(hw),
    )
}

/// A wait on `cell` until it holds `target`, through the ladder with `hw` and no
/// deadline, on a thread of its own while `writer` runs on this one.
fn wait_on_a_thread(
    cell: &WaitCell,
    hw: &SimMonitor,
    hw_ns: u64,
    target: u32,
    writer: impl FnOnce(),
) -> Outcome {
    thread::scope(|s| {
        let waiter = s.spawn(|| wait(cell, hw, hw_ns, None, |v| v == target));
        writer();
        waiter.join().unwrap()
    })
}

/// Whether `hw` ran at least `n` episodes.
fn ran_episodes(hw: &SimMonitor, n: u64) -> bool {
    hw.episodes.load(Ordering::Relaxed) >= n
}

/// Waits until `hw` has begun at least `n` episodes (the writer's handshake with a
/// waiter in the hardware tier, so that what the test asserts does not depend on
/// when the scheduler runs the waiter).
fn await_episodes(hw: &SimMonitor, n: u64) {
    let t0 = Instant::now();
    while !ran_episodes(hw, n) {
        assert!(t0.elapsed() < NO_HANG, "the waiter never began episode {n}");
        thread::yield_now();
    }
}

#[test]
fn simulated_monitor_ladder_honours_the_deadline() {
    let cell = WaitCell::new(0);
    let hw = SimMonitor::real();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(100);
    let o = wait(&cell, &hw, LONG_HW_BUDGET_NS, Some(deadline), |v| v == 1);
    let took = t0.elapsed();
    assert_eq!(o.result(), WaitResult::TimedOut(0));
    assert_eq!(o.ended, Ended::TimedOut);
    assert!(Instant::now() >= deadline, "returned before its deadline");
    assert!(
        took < NO_HANG,
        "the deadline, not the 60 s hardware budget, ends the wait ({took:?})"
    );
    assert!(ran_episodes(&hw, 1), "the hardware tier ran");
    let st = cell.stats();
    assert_eq!((st.waits(), st.timeout, st.hardware), (1, 1, 0), "{st:?}");
}

#[test]
fn simulated_monitor_ladder_hands_over_to_park_when_the_budget_ends() {
    let cell = WaitCell::new(0);
    let hw = SimMonitor::real();
    let o = wait_on_a_thread(&cell, &hw, 20_000_000, 1, || {
        let t0 = Instant::now();
        while cell.waiter().line.parked() == 0 {
            assert!(t0.elapsed() < NO_HANG, "the waiter never parked");
            thread::sleep(Duration::from_millis(1));
        }
        // Give the announced waiter time to fall asleep, so that the store
        // usually has to wake it (whether it did is printed, not asserted).
        thread::sleep(Duration::from_millis(20));
        cell.store(1);
    });
    println!("handed over to park; slept in the kernel: {}", o.slept);
    assert_eq!(o.result(), WaitResult::Ready(1));
    assert_eq!(o.ended, Ended::Park);
    assert!(ran_episodes(&hw, 1), "the hardware tier ran");
    let st = cell.stats();
    assert_eq!((st.waits(), st.park, st.hardware), (1, 1, 0), "{st:?}");
}

#[test]
fn simulated_monitor_ladder_hides_early_returns() {
    // Every second episode returns at once, and the writer passes through values
    // the predicate rejects: the wait must return only the value it accepts.
    // Odd episodes end on a store; the writer stores `v` once episode `2v - 1`
    // has begun, so even episodes 2 and 4 return at once with nothing changed
    // (two spurious returns) and episode 5 sees the accepted value.
    let cell = WaitCell::new(0);
    let hw = SimMonitor::real().early_every(2);
    let o = wait_on_a_thread(&cell, &hw, LONG_HW_BUDGET_NS, 3, || {
        for v in 1..=3 {
            await_episodes(&hw, 2 * u64::from(v) - 1);
            cell.store(v);
        }
    });
    assert_eq!(o.result(), WaitResult::Ready(3));
    assert_eq!(o.ended, Ended::Hardware);
    let st = cell.stats();
    assert_eq!(
        (st.waits(), st.hardware, st.spurious_hardware),
        (1, 1, 2),
        "{st:?}"
    );
}

#[test]
fn simulated_monitor_ladder_rearms_after_capped_episodes() {
    // umwait_control's cap (CF=1): each episode ends after 1 ms, reported as a
    // wake; the ladder must re-arm until the store, and until the deadline.
    let cap_ns = 1_000_000;
    let cell = WaitCell::new(0);
    let hw = SimMonitor::real().with_cap(cap_ns);
    let o = wait_on_a_thread(&cell, &hw, LONG_HW_BUDGET_NS, 1, || {
        // Only the cap can end episode 1: the store comes after episode 3 began.
        await_episodes(&hw, 3);
        cell.store(1);
    });
    assert_eq!(o.result(), WaitResult::Ready(1));
    assert_eq!(o.ended, Ended::Hardware);
    let st = cell.stats();
    assert_eq!((st.waits(), st.hardware), (1, 1), "{st:?}");
    assert!(
        st.spurious_hardware >= 2,
        "episodes 1 and 2 ended at the cap: {st:?}"
    );

    let hw = SimMonitor::real().with_cap(cap_ns);
    let deadline = Instant::now() + Duration::from_millis(50);
    let o = wait(&cell, &hw, LONG_HW_BUDGET_NS, Some(deadline), |v| v == 2);
    assert_eq!(o.result(), WaitResult::TimedOut(1));
    assert!(Instant::now() >= deadline);
    assert!(ran_episodes(&hw, 1), "the hardware tier ran");
    let st = cell.stats();
    assert_eq!((st.waits(), st.hardware, st.timeout), (2, 1, 1), "{st:?}");
}

/// The hardware budget of ping-pong round trip `i`: every third one shorter than
/// the partner's wake latency, the others one of a few round trips.
fn ping_pong_hw_ns(i: u32) -> u64 {
    if i % 3 == 0 {
        10_000
    } else {
        300_000
    }
}

/// Where the ping-pong's waits ended, counted from their outcomes.
#[derive(Default)]
struct EndedCounts {
    in_hw: AtomicU32,
    parked: AtomicU32,
}

impl EndedCounts {
    /// Wait `i` of `who` (`"pinger"` or `"ponger"`) on `cell` through the ladder with
    /// `hw`, with a deadline so that a lost wake-up fails the test instead of hanging
    /// it; asserts that it saw `i`, and counts where it ended.
    fn wait_for(&self, who: &str, cell: &WaitCell, hw: &SimMonitor, i: u32) {
        let o = wait(
            cell,
            hw,
            ping_pong_hw_ns(i),
            Some(Instant::now() + NO_HANG),
            |v| v == i,
        );
        assert_eq!(o.result(), WaitResult::Ready(i), "{who}: lost wake-up");
        let count = match o.ended {
            Ended::Hardware => &self.in_hw,
            Ended::Park => &self.parked,
            _ => return,
        };
        count.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn simulated_monitor_ladder_ping_pong_loses_no_wake_up() {
    // Two threads, each waiting through the ladder with its own simulated monitor.
    // The hardware budgets (`ping_pong_hw_ns`) make waits end both in the hardware
    // tier and after the hand-over to park, the windows where a wake-up could be
    // lost (how many ended where is printed).
    let (ping, pong) = (WaitCell::new(0), WaitCell::new(0));
    let (ping_hw, pong_hw) = (SimMonitor::real(), SimMonitor::real());
    let ended = EndedCounts::default();
    thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=ROUND_TRIPS {
                ended.wait_for("ponger", &ping, &ping_hw, i);
                pong.store(i);
            }
        });
        for i in 1..=ROUND_TRIPS {
            ping.store(i);
            ended.wait_for("pinger", &pong, &pong_hw, i);
        }
    });
    let (hw, parked) = (
        ended.in_hw.load(Ordering::Relaxed),
        ended.parked.load(Ordering::Relaxed),
    );
    println!("{ROUND_TRIPS} round trips: {hw} waits ended in the hardware tier, {parked} parked");
    assert_eq!(ping.load(), ROUND_TRIPS);
    assert_eq!(pong.load(), ROUND_TRIPS);
    // The cells' counts agree with the outcomes, wait for wait.
    let (a, b) = (ping.stats(), pong.stats());
    assert_eq!(
        (a.waits(), b.waits()),
        (u64::from(ROUND_TRIPS), u64::from(ROUND_TRIPS))
    );
    assert_eq!(a.hardware + b.hardware, u64::from(hw), "{a:?} {b:?}");
    assert_eq!(a.park + b.park, u64::from(parked), "{a:?} {b:?}");
}
