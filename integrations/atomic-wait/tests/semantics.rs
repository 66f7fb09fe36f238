//! What `atomic-wait`'s documentation promises, as tests that `cargo xtask clients`
//! runs against the published crate and against this drop-in, requiring the same
//! results: `wait` returns at once on another value, a wake ends a sleeping wait
//! whether or not the word changed, a wake of one ends at most one wait, and a wake
//! of a dangling or null pointer is harmless.
//!
//! A wake that comes before the waiter sleeps may be lost (on a futex as on mwait),
//! so the tests that wake a sleeper repeat the wake until it returns.

use atomic_wait::{wait, wake_all, wake_one};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen (a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(20);
/// Long enough for a waiter to be asleep (past every spin and hardware budget).
const ASLEEP: Duration = Duration::from_millis(50);

/// Runs `wake` every few milliseconds until `sleeper` (waiting on `a`) has returned;
/// fails after [`PATIENCE`], once it has let the sleeper go with a change.
fn wake_until_done(
    a: &AtomicU32,
    sleeper: &thread::ScopedJoinHandle<'_, ()>,
    mut wake: impl FnMut(),
) {
    let start = Instant::now();
    while !sleeper.is_finished() {
        if start.elapsed() > PATIENCE {
            a.store(u32::MAX, Ordering::Relaxed);
            wake_all(a);
            panic!("the sleeper was not woken within {PATIENCE:?}");
        }
        wake();
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn wait_on_another_value_returns_at_once() {
    let a = AtomicU32::new(1);
    wait(&a, 0);
    wait(&a, u32::MAX);
}

#[test]
fn a_wake_without_a_change_ends_a_sleeping_wait() {
    let a = AtomicU32::new(0);
    for wake in [wake_all as fn(*const AtomicU32), wake_one] {
        thread::scope(|s| {
            let sleeper = s.spawn(|| wait(&a, 0));
            thread::sleep(ASLEEP);
            wake_until_done(&a, &sleeper, || wake(&a));
        });
        assert_eq!(a.load(Ordering::Relaxed), 0);
    }
}

#[test]
fn a_change_undone_after_its_wake_still_ends_the_wait() {
    let a = AtomicU32::new(0);
    thread::scope(|s| {
        let sleeper = s.spawn(|| wait(&a, 0));
        thread::sleep(ASLEEP);
        wake_until_done(&a, &sleeper, || {
            a.store(1, Ordering::Relaxed);
            wake_all(&a);
            a.store(0, Ordering::Relaxed);
        });
    });
}

#[test]
fn a_change_and_a_wake_end_every_wait_loop() {
    let a = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while a.load(Ordering::Acquire) == 0 {
                    wait(&a, 0);
                }
            });
        }
        thread::sleep(ASLEEP);
        a.store(1, Ordering::Release);
        wake_all(&a);
    });
}

#[test]
fn a_wake_of_one_ends_one_of_two_sleeping_waits() {
    let a = AtomicU32::new(0);
    let returned = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                wait(&a, 0);
                returned.fetch_add(1, Ordering::SeqCst);
            });
        }
        thread::sleep(ASLEEP);
        wake_one(&a);
        let start = Instant::now();
        while returned.load(Ordering::SeqCst) == 0 && start.elapsed() < PATIENCE {
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(ASLEEP);
        let woken = returned.load(Ordering::SeqCst);
        // Let the other one go before judging.
        a.store(1, Ordering::Relaxed);
        wake_all(&a);
        assert_eq!(woken, 1, "a wake of one ended {woken} sleeping waits");
    });
}

#[test]
fn a_wake_of_a_dangling_or_null_pointer_is_harmless() {
    wake_one(std::ptr::null());
    wake_all(std::ptr::null());
    let dangling = {
        let a = Box::new(AtomicU32::new(0));
        &*a as *const AtomicU32
    };
    wake_one(dangling);
    wake_all(dangling);
}
