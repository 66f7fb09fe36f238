//! Loom model of the async registry: register vs notify, notify_one vs a dropped
//! future, two futures and notify_all.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p mwait --test
//! loom_async --release` (`cargo xtask test` does). A lost wake-up shows as a
//! deadlock of `block_on`, which loom reports.
#![cfg(loom)]

mod common;
use common::model;

use loom::future::block_on;
use loom::sync::Arc;
use loom::thread;
use mwait::WaitCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Wake, Waker};

/// A waker that does nothing (the dropped future never needs waking).
struct Noop;
impl Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

fn noop_waker() -> Waker {
    Waker::from(std::sync::Arc::new(Noop))
}

#[test]
fn register_vs_store() {
    model(|| {
        let cell = Arc::new(WaitCell::new(0));
        let c = cell.clone();
        let t = thread::spawn(move || block_on(c.wait_until_async(|v| v == 1)));
        cell.store(1);
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(cell.armed_async_waiters(), 0);
    });
}

#[test]
fn two_futures_notify_all() {
    model(|| {
        let cell = Arc::new(WaitCell::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let c = cell.clone();
                thread::spawn(move || block_on(c.wait_until_async(|v| v == 1)))
            })
            .collect();
        cell.as_atomic()
            .store(1, loom::sync::atomic::Ordering::Relaxed);
        cell.notify_all();
        for t in ts {
            assert_eq!(t.join().unwrap(), 1);
        }
    });
}

#[test]
fn notify_one_racing_a_dropped_future() {
    model(|| {
        let cell = Arc::new(WaitCell::new(0));
        // A future that is polled once (it may arm) and then dropped, racing the
        // notify: if notify_one chose it, its drop must pass the wake on. Its
        // predicate never holds, so it can never consume the wake itself (a future
        // whose predicate holds may: that is notify_one's contract, as for threads).
        let dropper = {
            let c = cell.clone();
            thread::spawn(move || {
                let waker = noop_waker();
                let mut f = c.wait_until_async(|v| v == 2);
                let _ = Pin::new(&mut f).poll(&mut Context::from_waker(&waker));
                drop(f);
            })
        };
        let waiter = {
            let c = cell.clone();
            thread::spawn(move || block_on(c.wait_until_async(|v| v == 1)))
        };
        cell.as_atomic()
            .store(1, loom::sync::atomic::Ordering::Relaxed);
        cell.notify_one();
        dropper.join().unwrap();
        assert_eq!(waiter.join().unwrap(), 1);
        assert_eq!(cell.armed_async_waiters(), 0);
    });
}
