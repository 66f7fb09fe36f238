//! What `WaitCell::stats` and `mwait::stats` count: every wait once, by where it ended.

use mwait::{Backend, WaitCell, WaitPolicy};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_timeout_and_a_park_are_counted_on_the_cell_and_in_the_process() {
    let before = mwait::stats().waits;
    let cell = Arc::new(WaitCell::new(0));
    // A wait whose predicate holds at once is no wait.
    assert_eq!(cell.wait_until(|v| v == 0), 0);
    assert_eq!(cell.stats().waits(), 0);
    let r = cell.wait_until_timeout(|v| v == 1, Duration::from_millis(1));
    assert!(r.is_timed_out());
    assert_eq!((cell.stats().waits(), cell.stats().timeout), (1, 1));

    // A waiter that goes straight to the futex (no spin), woken by a store made
    // only once it is parked.
    let policy = WaitPolicy::new()
        .backend(Backend::Futex)
        .spin(Duration::ZERO);
    let waiter = {
        let cell = cell.clone();
        std::thread::spawn(move || cell.wait_until_with(|v| v == 1, &policy))
    };
    assert!(mwait_support::poll_until(Duration::from_secs(10), || {
        cell.parked_waiters() == 1
    }));
    cell.store(1);
    assert_eq!(waiter.join().unwrap(), 1);
    let s = cell.stats();
    assert_eq!((s.waits(), s.park, s.timeout), (2, 1, 1), "{s}");
    assert_eq!(s.shares(), (0.0, 0.0, 50.0));
    assert!(format!("{cell:?}").contains("stats"), "{cell:?}");

    // The process counts them too (the waiter's thread has exited: its counts stay).
    let d = mwait::stats().waits.since(&before);
    assert!(d.timeout >= 1 && d.park >= 1, "{d}");
}

/// A zero timeout, or a deadline that has passed, is one look at the value (or
/// values): on a cell, a bare atomic, over several words and on a parker, a miss
/// returns the value seen, and it is a poll, not a wait: the cell does not count it.
#[test]
fn a_wait_whose_time_is_up_is_one_uncounted_look() {
    use mwait::atomic::{self, Member};
    use mwait::WaitResult;
    use std::sync::atomic::{AtomicU32, AtomicU64};

    let (a, b) = (AtomicU64::new(5), AtomicU32::new(1));
    assert_eq!(
        atomic::wait_timeout(&a, 5, Duration::ZERO),
        WaitResult::TimedOut(5)
    );
    assert_eq!(
        atomic::wait_until_timeout(&a, |v| v > 5, Duration::ZERO),
        WaitResult::TimedOut(5)
    );
    let m = [Member::atomic(&b, 1), Member::atomic_u64(&a, 5)];
    assert_eq!(
        atomic::wait_any_timeout(&m, Duration::ZERO),
        WaitResult::TimedOut((0, 1))
    );
    let past = std::time::Instant::now();
    assert_eq!(atomic::wait_deadline(&a, 5, past), WaitResult::TimedOut(5));
    let p = mwait::Parker::new();
    assert!(!p.park_timeout(Duration::ZERO), "no token yet");
    assert!(!p.park_deadline(past), "no token, the deadline passed");
    p.unpark();
    assert!(p.park_timeout(Duration::ZERO), "the token is taken at once");
    let cell = WaitCell::new(2);
    assert_eq!(
        cell.wait_until_timeout(|v| v == 1, Duration::ZERO),
        WaitResult::TimedOut(2)
    );
    assert_eq!(
        cell.wait_until_deadline(|v| v == 1, past),
        WaitResult::TimedOut(2)
    );
    assert_eq!(cell.stats().waits(), 0, "{}", cell.stats());
}

/// Parks that slept and were woken feed the process's wake-up latency estimate: the
/// waiter says that it measures, and the notifier that wakes it stamps the wake.
#[test]
fn woken_parks_feed_the_wake_latency_estimate() {
    let cell = Arc::new(WaitCell::new(0));
    let waiter = {
        let cell = cell.clone();
        std::thread::spawn(move || {
            for i in 1..=40 {
                cell.wait_until(|v| v >= i);
            }
        })
    };
    for i in 1..=40 {
        // The waiter has ended its last park and sleeps in the next.
        assert!(mwait_support::poll_until(Duration::from_secs(10), || {
            cell.stats().park == u64::from(i - 1) && cell.parked_waiters() == 1
        }));
        cell.store(i);
    }
    waiter.join().unwrap();
    let parked = cell.stats().park;
    assert!(parked >= 40, "{parked} parks");
    let s = mwait::stats();
    assert!(s.wake_latency.is_some(), "{s:?}");
}
