//! What `parking`'s documentation promises, as tests that `cargo xtask clients` runs
//! against the published crate and against this drop-in, requiring the same results:
//! a notification is a token that does not accumulate, an unpark before a park is
//! kept, timed parks say whether they were notified, and the handles know their
//! parker.

use parking::{pair, Parker, Unparker};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen (a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(20);

#[test]
fn an_unpark_before_the_park_is_kept() {
    let p = Parker::new();
    let u = p.unparker();
    assert!(u.unpark());
    let start = Instant::now();
    p.park();
    assert!(start.elapsed() < PATIENCE);
}

#[test]
fn notifications_do_not_accumulate() {
    let p = Parker::new();
    assert!(p.unpark(), "the first unpark notifies");
    assert!(!p.unpark(), "a second one finds it notified");
    assert!(p.park_timeout(Duration::from_secs(5)), "the token is taken");
    assert!(
        !p.park_timeout(Duration::from_millis(20)),
        "only one token: the next park times out"
    );
    assert!(
        p.unpark(),
        "after the park took it, an unpark notifies again"
    );
    p.park();
}

#[test]
fn a_timed_park_without_a_notification_times_out_after_its_duration() {
    let p = Parker::new();
    let start = Instant::now();
    assert!(!p.park_timeout(Duration::from_millis(30)));
    assert!(start.elapsed() >= Duration::from_millis(30));
    let deadline = Instant::now() + Duration::from_millis(30);
    assert!(!p.park_deadline(deadline));
    assert!(Instant::now() >= deadline);
    // A deadline in the past returns at once, unnotified.
    assert!(!p.park_deadline(Instant::now() - Duration::from_millis(1)));
    assert!(!p.park_timeout(Duration::ZERO));
}

#[test]
fn a_timed_park_with_a_token_returns_true_at_once() {
    let p = Parker::new();
    p.unpark();
    assert!(p.park_timeout(Duration::ZERO));
    p.unpark();
    assert!(p.park_deadline(Instant::now() - Duration::from_millis(1)));
}

#[test]
fn an_unpark_from_another_thread_ends_a_park() {
    let (p, u) = pair();
    for _ in 0..50 {
        let u = u.clone();
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_micros(200));
            u.unpark()
        });
        assert!(p.park_timeout(PATIENCE), "woken before the timeout");
        t.join().unwrap();
    }
}

#[test]
fn an_unpark_ends_a_park_deadline_before_it() {
    let (p, u) = pair();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        u.unpark();
    });
    assert!(p.park_deadline(Instant::now() + PATIENCE));
    t.join().unwrap();
}

#[test]
fn a_waker_from_an_unparker_unparks() {
    let p = Parker::new();
    let waker: Waker = p.unparker().into();
    let w2 = waker.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        w2.wake();
    });
    assert!(p.park_timeout(PATIENCE));
    t.join().unwrap();
    waker.wake_by_ref();
    assert!(p.park_timeout(Duration::ZERO));
}

#[test]
fn the_handles_know_their_parker() {
    let p = Parker::new();
    let q = Parker::default();
    let u1: Unparker = p.unparker();
    let u2 = u1.clone();
    assert!(u1.will_unpark(&p));
    assert!(!u1.will_unpark(&q));
    assert!(u1.same_parker(&u2));
    assert!(!u1.same_parker(&q.unparker()));
    assert_eq!(format!("{p:?}"), "Parker { .. }");
    assert_eq!(format!("{u1:?}"), "Unparker { .. }");
}

#[test]
fn a_parker_moves_to_another_thread() {
    let p = Parker::new();
    let u = p.unparker();
    let t = thread::spawn(move || p.park_timeout(PATIENCE));
    thread::sleep(Duration::from_millis(5));
    u.unpark();
    assert!(t.join().unwrap());
}
