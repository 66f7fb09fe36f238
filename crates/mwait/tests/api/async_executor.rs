//! Async waits under a minimal std-only executor (no runtime): block_on with a
//! thread-unpark waker, a tiny task queue, and hand-polled futures to check the
//! registry's bookkeeping and the cancellation rule of `notify_one`.

use mwait::WaitCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// Wakes a parked thread.
struct Unpark(Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// Counts its wake-ups.
#[derive(Default)]
struct Counter(AtomicUsize);
impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn block_on_wakes_on_store_from_another_thread() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        c.store(4);
    });
    assert_eq!(block_on(cell.wait_until_async(|v| v == 4)), 4);
    t.join().unwrap();
}

#[test]
fn a_tiny_task_queue_runs_many_waiters_to_completion() {
    type Task = Pin<Box<dyn Future<Output = ()> + Send>>;
    // A static rather than a leaked box: Miri's leak check counts what a static holds
    // as reachable (`cargo xtask miri`).
    static CELL: WaitCell = WaitCell::new(0);
    let cell: &'static WaitCell = &CELL;
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks: Vec<Option<Task>> = (1..=64u32)
        .map(|want| {
            let done = done.clone();
            Some(Box::pin(async move {
                let v = cell.wait_until_async(move |v| v >= want).await;
                assert!(v >= want);
                done.fetch_add(1, Ordering::SeqCst);
            }) as Task)
        })
        .collect();
    let writer = thread::spawn(move || {
        for _ in 0..64 {
            thread::sleep(Duration::from_micros(100));
            cell.fetch_add(1);
        }
    });
    // Poll every unfinished task whenever the main thread is unparked.
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    while done.load(Ordering::SeqCst) < 64 {
        for slot in tasks.iter_mut() {
            if let Some(t) = slot {
                if t.as_mut().poll(&mut cx).is_ready() {
                    *slot = None;
                }
            }
        }
        thread::park_timeout(Duration::from_millis(50));
    }
    writer.join().unwrap();
    assert_eq!(cell.armed_async_waiters(), 0);
}

#[test]
fn registry_bookkeeping_by_hand() {
    let cell = WaitCell::new(0);
    let counter = Arc::new(Counter::default());
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut a = cell.wait_until_async(|v| v == 1);
    let mut b = cell.wait_until_async(|v| v == 1);
    assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut b).poll(&mut cx).is_pending());
    assert_eq!(cell.armed_async_waiters(), 2);
    // Re-polling does not arm twice.
    assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
    assert_eq!(cell.armed_async_waiters(), 2);
    // A store that does not satisfy them still wakes both (predicates are theirs).
    cell.store(5);
    assert_eq!(counter.0.load(Ordering::SeqCst), 2);
    assert_eq!(cell.armed_async_waiters(), 0);
    // They re-arm on their next poll, and complete when the value is right.
    assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
    cell.store(1);
    assert_eq!(Pin::new(&mut a).poll(&mut cx), Poll::Ready(1));
    assert_eq!(Pin::new(&mut b).poll(&mut cx), Poll::Ready(1));
    assert_eq!(cell.armed_async_waiters(), 0);
}

#[test]
fn notify_one_picked_future_dropped_passes_the_wake_on() {
    let cell = WaitCell::new(0);
    let ca = Arc::new(Counter::default());
    let cb = Arc::new(Counter::default());
    let (wa, wb) = (Waker::from(ca.clone()), Waker::from(cb.clone()));
    let mut a = cell.wait_until_async(|v| v > 0);
    let mut b = cell.wait_until_async(|v| v > 0);
    assert!(Pin::new(&mut a)
        .poll(&mut Context::from_waker(&wa))
        .is_pending());
    assert!(Pin::new(&mut b)
        .poll(&mut Context::from_waker(&wb))
        .is_pending());
    cell.as_atomic().fetch_add(1, Ordering::SeqCst);
    cell.notify_one();
    let (woke_a, woke_b) = (ca.0.load(Ordering::SeqCst), cb.0.load(Ordering::SeqCst));
    assert_eq!(woke_a + woke_b, 1, "notify_one wakes one future");
    // Drop whichever was chosen before it runs: the other must be woken instead.
    if woke_a == 1 {
        drop(a);
        assert_eq!(cb.0.load(Ordering::SeqCst), 1, "the wake moved to b");
        assert_eq!(
            Pin::new(&mut b).poll(&mut Context::from_waker(&wb)),
            Poll::Ready(1)
        );
    } else {
        drop(b);
        assert_eq!(ca.0.load(Ordering::SeqCst), 1, "the wake moved to a");
        assert_eq!(
            Pin::new(&mut a).poll(&mut Context::from_waker(&wa)),
            Poll::Ready(1)
        );
    }
    assert_eq!(cell.armed_async_waiters(), 0);
}

#[test]
fn a_future_that_consumed_its_wake_does_not_pass_it_on() {
    let cell = WaitCell::new(0);
    let ca = Arc::new(Counter::default());
    let cb = Arc::new(Counter::default());
    let (wa, wb) = (Waker::from(ca.clone()), Waker::from(cb.clone()));
    let mut a = cell.wait_until_async(|v| v > 0);
    let mut b = cell.wait_until_async(|v| v > 5);
    assert!(Pin::new(&mut a)
        .poll(&mut Context::from_waker(&wa))
        .is_pending());
    assert!(Pin::new(&mut b)
        .poll(&mut Context::from_waker(&wb))
        .is_pending());
    cell.as_atomic().store(1, Ordering::SeqCst);
    cell.notify_one();
    assert_eq!(
        ca.0.load(Ordering::SeqCst),
        1,
        "the first armed future is chosen"
    );
    assert_eq!(
        Pin::new(&mut a).poll(&mut Context::from_waker(&wa)),
        Poll::Ready(1)
    );
    drop(a);
    assert_eq!(cb.0.load(Ordering::SeqCst), 0, "nothing to pass on");
    drop(b);
    assert_eq!(cell.armed_async_waiters(), 0);
}
