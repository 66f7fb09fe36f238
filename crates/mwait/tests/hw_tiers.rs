//! The hardware tiers' suite: wake on store, deadline, hand-over to park, many
//! waiters, every C-state, and a ping-pong stress, all through the process's backend.
//!
//! `cargo test` runs it with the machine's own choice (here: futex, so the assertions
//! take their "no hardware tier" branch). `cargo xtask hw-test` runs it again with a
//! hardware tier forced: UMWAIT under `qemu-x86_64-static -cpu max` (where the WAITPKG
//! instructions execute as no-ops) and MWAITX natively (where it executes although
//! CPUID hides it), both with `MWAIT_SELFTEST=0` so that the no-op tiers are not
//! demoted; and once more with the self-test on, expecting the demotion.
//!
//! Environment read here: `MWAIT_HW_EXPECT=<backend>` (the tier that must be active)
//! and `MWAIT_HW_EXPECT_DEMOTED=<backend>` (the forced tier that the self-test must
//! have demoted).

use mwait::{Backend, CState, WaitCell, WaitPolicy, WaitResult};
use mwait_support::{poll_until, SETTLE_LIMIT};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// A hardware budget long enough that a hardware tier does the whole wait.
const LONG_HW: Duration = Duration::from_secs(30);

fn hardware_active() -> bool {
    mwait::selection().backend.is_hardware()
}

/// Spin off, a long hardware budget, then park.
fn hw_policy() -> WaitPolicy {
    WaitPolicy::new().spin(Duration::ZERO).hardware(LONG_HW)
}

#[test]
fn selection_is_what_the_runner_expects() {
    let sel = mwait::selection();
    println!(
        "backend {} ({}); demoted {:?}",
        sel.backend, sel.reason, sel.demoted
    );
    if let Ok(want) = std::env::var("MWAIT_HW_EXPECT") {
        let want: Backend = want.parse().unwrap();
        assert_eq!(sel.backend, want, "{}", sel.reason);
        assert!(sel.demoted.is_none());
    }
    if let Ok(want) = std::env::var("MWAIT_HW_EXPECT_DEMOTED") {
        let want: Backend = want.parse().unwrap();
        let (b, why) = sel.demoted.clone().expect("the forced tier was demoted");
        assert_eq!(b, want);
        assert!(why.contains("self-test"), "{why}");
        // The reason names the check that failed: (a) store wake, (b) timer or (c)
        // early return.
        assert!(
            [
                "check (a) store wake",
                "check (b) timer",
                "check (c) early return"
            ]
            .iter()
            .any(|c| why.contains(c)),
            "{why}"
        );
        assert!(!sel.backend.is_hardware(), "fell back to {}", sel.backend);
        assert!(sel.reason.contains("demoted"), "{}", sel.reason);
    }
    if sel.backend.is_hardware() {
        assert!(sel.forced || mwait::Capabilities::detect().offers(sel.backend));
    }
}

#[test]
fn wake_on_store_without_parking() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let t = thread::spawn(move || c.wait_until_with(|v| v == 7, &hw_policy()));
    thread::sleep(Duration::from_millis(20));
    let parked = cell.parked_waiters();
    cell.store(7);
    assert_eq!(t.join().unwrap(), 7);
    if hardware_active() {
        assert_eq!(parked, 0, "the hardware tier waited, nobody parked");
    } else {
        assert_eq!(parked, 1, "without a hardware tier the waiter parks");
    }
}

#[test]
fn deadline_is_honoured_inside_the_hardware_tier() {
    let cell = WaitCell::new(1);
    let t0 = Instant::now();
    let r = cell.wait_until_deadline_with(|v| v == 2, t0 + Duration::from_millis(30), &hw_policy());
    let took = t0.elapsed();
    assert_eq!(r, WaitResult::TimedOut(1));
    assert!(took >= Duration::from_millis(30), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn the_tier_hands_over_to_park_when_its_budget_ends() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let policy = WaitPolicy::new()
        .spin(Duration::ZERO)
        .hardware(Duration::from_millis(2));
    let t = thread::spawn(move || c.wait_until_with(|v| v == 1, &policy));
    assert!(
        poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1),
        "the waiter parked after its budget"
    );
    cell.store(1);
    assert_eq!(t.join().unwrap(), 1);
}

#[test]
fn every_cstate_wakes_on_store() {
    for cstate in [CState::C0_1, CState::C0_2, CState::C1] {
        let cell = Arc::new(WaitCell::new(0));
        let c = cell.clone();
        let policy = hw_policy().cstate(cstate);
        let t = thread::spawn(move || c.wait_until_with(|v| v == 3, &policy));
        thread::sleep(Duration::from_millis(5));
        cell.store(3);
        assert_eq!(t.join().unwrap(), 3, "{cstate:?}");
    }
}

#[test]
fn many_waiters_on_one_cell_and_on_many_cells() {
    const WAITERS: usize = 16;
    let one = Arc::new(WaitCell::new(0));
    let many: Arc<Vec<WaitCell>> = Arc::new((0..WAITERS).map(|_| WaitCell::new(0)).collect());
    let threads: Vec<_> = (0..WAITERS)
        .map(|i| {
            let (one, many) = (one.clone(), many.clone());
            thread::spawn(move || {
                let a = one.wait_until_with(|v| v == 1, &hw_policy());
                let b = many[i].wait_until_with(|v| v == i as u32 + 1, &hw_policy());
                (a, b)
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(10));
    one.store(1);
    for (i, c) in many.iter().enumerate() {
        c.store(i as u32 + 1);
    }
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), (1, i as u32 + 1));
    }
}

#[test]
fn ping_pong_stress_loses_no_wakeup() {
    const ROUND_TRIPS: u32 = 5_000;
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let pong = thread::spawn(move || {
        let mut n = 0;
        loop {
            let v = c.wait_until_with(|v| v % 2 == 1, &hw_policy());
            if v == u32::MAX {
                return n;
            }
            n += 1;
            c.store(v + 1);
        }
    });
    for i in 0..ROUND_TRIPS {
        let ping = 2 * i + 1;
        cell.store(ping);
        assert_eq!(
            cell.wait_until_with(|v| v == ping + 1, &hw_policy()),
            ping + 1
        );
    }
    cell.store(u32::MAX);
    assert_eq!(pong.join().unwrap(), ROUND_TRIPS);
}

#[test]
fn spin_tier_then_hardware_tier_ping_pong() {
    // A spin budget first: with WAITPKG (or UMWAIT forced) the spin pauses with
    // TPAUSE, which this exercises; then the hardware tier, then park.
    const ROUND_TRIPS: u32 = 2_000;
    let policy = WaitPolicy::new()
        .spin(Duration::from_micros(5))
        .hardware(Duration::from_millis(1));
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let pong = thread::spawn(move || loop {
        let v = c.wait_until_with(|v| v % 2 == 1, &policy);
        if v == u32::MAX {
            return;
        }
        c.store(v + 1);
    });
    for i in 0..ROUND_TRIPS {
        let ping = 2 * i + 1;
        cell.store(ping);
        assert_eq!(cell.wait_until_with(|v| v == ping + 1, &policy), ping + 1);
    }
    cell.store(u32::MAX);
    pong.join().unwrap();
}
