//! The self-test on the simulated monitors of `backend/sim.rs`.

use super::*;
use crate::backend::sim::{SimMonitor, TEST_PLAN};

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

/// How many times a test that expects a monitor to be kept runs the self-test while
/// its verdict is inconclusive.
const KEPT_TRIES: usize = 5;

/// Runs the self-test on `sim` with `plan` until its verdict is conclusive, at most
/// [`KEPT_TRIES`] times, and expects the monitor to be kept. An inconclusive check
/// says that the storing thread did not run when the plan needed it (the machine,
/// or Miri's scheduler, which any change to the code before a test moves), and
/// nothing about the monitor; the self-test demotes on it, rightly for a process,
/// which cannot tell. A conclusive demotion fails at once.
fn kept(sim: &SimMonitor, plan: Plan) -> Report {
    let mut why = String::new();
    for _ in 0..KEPT_TRIES {
        match run_alone(sim, plan) {
            Ok(r) => return r,
            Err(w) if w.split(": ").nth(1) == Some("inconclusive") => why = w,
            Err(w) => panic!("{sim:?} is demoted: {w}"),
        }
    }
    panic!("{sim:?}: inconclusive in {KEPT_TRIES} runs, the last: {why}");
}

fn assert_demoted_by(sim: &SimMonitor, check: &str) {
    let why = verdict(sim).expect_err("the self-test demotes it");
    assert!(why.starts_with(check), "expected {check}, got: {why}");
}

#[test]
fn simulated_real_monitor_is_kept() {
    let r = kept(&SimMonitor::real(), TEST_PLAN);
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
    kept(&sim, plan);
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
