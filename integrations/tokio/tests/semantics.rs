//! What tokio documents about the waits that park a thread (`block_on`, the blocking
//! channel operations, idle workers that a spawn or a timer wakes), as tests that
//! `cargo xtask clients tokio` runs against the published tokio and against the
//! patched one, requiring the same results: a wake from another thread ends a
//! `block_on`, a wake that comes before the park is kept, a timeout elapses, and
//! idle workers wake for new work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen (a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(20);

fn multi_thread(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn block_on_is_woken_by_a_send_from_a_plain_thread() {
    for rt in [current_thread(), multi_thread(2)] {
        for _ in 0..20 {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let t = thread::spawn(move || {
                thread::sleep(Duration::from_micros(300));
                tx.send(7).unwrap();
            });
            assert_eq!(rt.block_on(rx).unwrap(), 7);
            t.join().unwrap();
        }
    }
}

#[test]
fn a_wake_before_the_park_is_kept() {
    // A future that wakes itself and returns Pending once: block_on must poll it
    // again (the unpark came before the park) instead of sleeping for ever.
    struct WakeThenReady(bool);
    impl std::future::Future for WakeThenReady {
        type Output = ();
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            if self.0 {
                return std::task::Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
    for rt in [current_thread(), multi_thread(2)] {
        let start = Instant::now();
        rt.block_on(WakeThenReady(false));
        assert!(start.elapsed() < PATIENCE);
    }
}

#[test]
fn blocking_receives_end_on_a_send_and_on_the_last_sender_dropped() {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        tx.blocking_send(1).unwrap();
        thread::sleep(Duration::from_millis(5));
        drop(tx);
    });
    assert_eq!(rx.blocking_recv(), Some(1));
    assert_eq!(rx.blocking_recv(), None);
    t.join().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        drop(tx);
    });
    assert!(rx.blocking_recv().is_err());
    t.join().unwrap();
}

#[test]
fn a_notify_before_the_wait_is_kept_as_a_permit() {
    let rt = multi_thread(2);
    let notify = Arc::new(tokio::sync::Notify::new());
    notify.notify_one();
    rt.block_on(async {
        tokio::time::timeout(PATIENCE, notify.notified())
            .await
            .expect("the stored permit ends the wait");
    });
}

#[test]
fn a_timeout_elapses_and_a_sleep_lasts_its_duration() {
    for rt in [current_thread(), multi_thread(2)] {
        rt.block_on(async {
            let start = Instant::now();
            let r =
                tokio::time::timeout(Duration::from_millis(20), std::future::pending::<()>()).await;
            assert!(r.is_err(), "a pending future times out");
            assert!(start.elapsed() >= Duration::from_millis(20));
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(start.elapsed() >= Duration::from_millis(10));
        });
    }
}

#[test]
fn idle_workers_wake_for_work_spawned_from_outside() {
    let rt = multi_thread(2);
    let done = Arc::new(AtomicUsize::new(0));
    for round in 1..=10 {
        // Let every worker go idle and park.
        thread::sleep(Duration::from_millis(20));
        let (tx, rx) = std::sync::mpsc::channel();
        let d = done.clone();
        rt.spawn(async move {
            d.fetch_add(1, Ordering::SeqCst);
            tx.send(()).unwrap();
        });
        rx.recv_timeout(PATIENCE)
            .expect("a parked worker ran the task");
        assert_eq!(done.load(Ordering::SeqCst), round);
    }
}

#[test]
fn spawn_blocking_and_block_in_place_return_their_values() {
    let rt = multi_thread(2);
    rt.block_on(async {
        let v = tokio::task::spawn_blocking(|| {
            thread::sleep(Duration::from_millis(5));
            5
        })
        .await
        .unwrap();
        assert_eq!(v, 5);
        let w = tokio::task::block_in_place(|| 6);
        assert_eq!(w, 6);
    });
}

#[test]
fn handle_block_on_from_another_thread_runs_on_the_runtime() {
    let rt = multi_thread(2);
    let handle = rt.handle().clone();
    let t = thread::spawn(move || {
        handle.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                tx.send(9).unwrap();
            });
            rx.await.unwrap()
        })
    });
    assert_eq!(t.join().unwrap(), 9);
}
