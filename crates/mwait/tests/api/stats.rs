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
