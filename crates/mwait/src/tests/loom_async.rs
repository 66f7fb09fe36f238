//! Loom model of the async registry: register vs notify, notify_one vs a dropped
//! future, two futures and notify_all.
//!
//! Run with `RUSTFLAGS="--cfg mwait_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p mwait
//! --release --lib -- tests::loom_async` (`cargo xtask test` does). A lost wake-up shows as a
//! deadlock of `block_on`, which loom reports.

use super::model_from_both_starts;

use loom::future::block_on;
use loom::thread;
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
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let t = thread::spawn(move || block_on(c.wait_until_async(|v| v == 1)));
        cell.store(1);
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(cell.armed_async_waiters(), 0);
    });
}

#[test]
fn two_futures_notify_all() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
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
    model_from_both_starts(|start| {
        let cell = start.cell(0);
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

/// A notify inside an arm's barrier: a future arms and runs its barrier; meanwhile
/// the notifier's first store takes the future's waker (and with it the cell's
/// `ASYNC_REGISTERED` bit), and its second store, on the light path, finds the state
/// word empty. Then a blocking waiter parks on the same cell, here the future's own
/// thread. Whatever the future's arm leaves in the state word, the parked waiter must
/// not sleep through the second store.
#[test]
fn a_notify_inside_an_arms_barrier() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let notifier = thread::spawn(move || {
            c.store(1);
            c.store(2);
        });
        let waker = noop_waker();
        let mut f = cell.wait_until_async(|v| v == 2);
        let polled = Pin::new(&mut f).poll(&mut Context::from_waker(&waker));
        let v = cell.wait_until_with(|v| v == 2, &futex_only());
        assert_eq!(v, 2);
        if let std::task::Poll::Ready(v) = polled {
            assert_eq!(v, 2);
        }
        drop(f);
        notifier.join().unwrap();
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// Futures beside parked threads: a thread parks (and, after its barrier, marks the
/// cell `FENCED`), a future arms on the same cell and may skip its barrier because of
/// that mark, and one store satisfies both. The notifier's first look may find the
/// parked thread but not the future: it must still reach the future.
#[test]
fn a_future_on_a_cell_fenced_by_a_parked_thread() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let parked = {
            let c = cell.clone();
            thread::spawn(move || c.wait_until_with(|v| v == 1, &futex_only()))
        };
        let c = cell.clone();
        let notifier = thread::spawn(move || c.store(1));
        assert_eq!(block_on(cell.wait_until_async(|v| v == 1)), 1);
        assert_eq!(parked.join().unwrap(), 1);
        notifier.join().unwrap();
    });
}

/// Parks with the same waiter policy as the thread models: the park tier at once.
fn futex_only() -> crate::WaitPolicy {
    crate::WaitPolicy::new().backend(crate::Backend::Futex)
}
