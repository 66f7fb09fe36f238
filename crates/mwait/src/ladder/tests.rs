use super::*;
use crate::backend::sim::SimMonitor;
use crate::backend::CState;

/// Runs the hardware tier on a fresh cell holding 0 with `hw`, until `target`.
/// Returns what the tier returned, whether it recorded its start, and how many
/// spurious returns it counted.
fn run_hardware_tier(hw: &SimMonitor, target: u32) -> (Option<u32>, bool, u64) {
    let parts = Parts::new(0);
    let pol = Resolved {
        spin_ns: 0,
        hw_ns: 60_000_000_000,
        hw: None,
        spin_pause: None,
        park: true,
        adaptive: false,
        cstate: CState::C0_1,
    };
    let cell = parts.waiter();
    let mut c = Climb::start(cell, pol, None);
    let r = hardware_tier(&mut c, hw, &mut |v| v == target);
    (
        r,
        c.hw_start.is_some(),
        parts.stats.snapshot().spurious_hardware,
    )
}

/// What a cell gives the ladder, each part on its own.
struct Parts {
    line: MonitorLine,
    sleepers: Sleepers,
    adapt: Adaptive,
    caught: Caught,
    stats: CellStats,
}

impl Parts {
    fn new(value: u32) -> Parts {
        Parts {
            line: MonitorLine::new(value, false),
            sleepers: Sleepers::new(false),
            adapt: Adaptive::new(),
            caught: Caught::new(),
            stats: CellStats::new(),
        }
    }

    /// The ladder's view of these parts.
    fn waiter(&self) -> Waiter<'_> {
        Waiter {
            line: &self.line,
            sleepers: &self.sleepers,
            adapt: &self.adapt,
            caught: &self.caught,
            stats: &self.stats,
        }
    }
}

#[test]
fn a_wait_that_finds_the_change_in_the_park_tier_counts_as_caught() {
    let parts = Parts::new(1);
    let (cell, caught) = (parts.waiter(), &parts.caught);
    // An adaptive wait whose spin is skipped (as the run-queue gate skips it),
    // on a cell whose last spin did not catch the change.
    let pol = Resolved {
        spin_ns: 0,
        hw_ns: 0,
        hw: None,
        spin_pause: None,
        park: true,
        adaptive: true,
        cstate: CState::C0_1,
    };
    assert!(!caught.get());
    let hw: Option<&SimMonitor> = None;
    let o = climb(cell, &mut |v| v == 1, None, pol, hw);
    assert_eq!((o.value, o.ended, o.slept), (1, Ended::Park, false));
    assert!(caught.get(), "the next wait may spin inline again");
    // A wait that times out in the park tier does not.
    caught.note(false);
    let o = climb(cell, &mut |v| v == 2, Some(0), pol, hw);
    assert_eq!(o.ended, Ended::TimedOut);
    assert!(!caught.get());
}

#[test]
fn the_hardware_tier_rechecks_after_every_episode() {
    let hw = SimMonitor::scripted(3, 7, HwWake::Woken);
    assert_eq!(
        run_hardware_tier(&hw, 7),
        (Some(7), true, 2),
        "two episodes woke with the value unchanged"
    );
    assert_eq!(
        hw.episodes.load(Ordering::Relaxed),
        3,
        "two spurious episodes, then the store"
    );
}

#[test]
fn a_monitor_that_yields_sends_the_wait_on_to_park() {
    let hw = SimMonitor::scripted(u64::MAX, 0, HwWake::Yield);
    assert_eq!(run_hardware_tier(&hw, 1), (None, true, 0));
    assert_eq!(hw.episodes.load(Ordering::Relaxed), 1);
}

#[test]
fn only_a_timeout_reads_as_timed_out_and_end_counts_every_wait_but_the_first_look() {
    let stats = CellStats::new();
    for ended in [
        Ended::Entry,
        Ended::Spin,
        Ended::Hardware,
        Ended::Park,
        Ended::NoPark,
        Ended::AtDeadline,
    ] {
        let o = Outcome::before_ladder(5, ended);
        assert_eq!(end(&stats, o).result(), WaitResult::Ready(5), "{ended:?}");
    }
    let o = Outcome::before_ladder(5, Ended::TimedOut);
    assert_eq!(end(&stats, o).result(), WaitResult::TimedOut(5));
    let s = stats.snapshot();
    // Entry is no wait; the yield rounds and a park that met its deadline as the
    // value arrived count as parks. (Inline endings reach a cell in batches:
    // `stats.rs` tests them.)
    assert_eq!(
        (s.inline_spin, s.spin, s.hardware, s.park, s.timeout),
        (0, 1, 1, 3, 1)
    );
}
