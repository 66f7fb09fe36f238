//! Async waits under tokio: current-thread and multi-thread runtimes, many tasks on one
//! cell, notify_all, cancellation, mixed async and blocking waiters, the timer form.

use mwait::{Backend, WaitCell, WaitPolicy, WaitResult};
use mwait_support::{poll_until, SETTLE_LIMIT};
use std::sync::Arc;
use std::time::Duration;

/// Many tasks with different predicates on one cell; a writer steps the value.
async fn many_tasks(cell: Arc<WaitCell>, tasks: u32) {
    let handles: Vec<_> = (1..=tasks)
        .map(|want| {
            let c = cell.clone();
            tokio::spawn(async move { c.wait_until_async(move |v| v >= want).await })
        })
        .collect();
    tokio::task::yield_now().await;
    for v in 1..=tasks {
        cell.store(v);
        tokio::task::yield_now().await;
    }
    for (i, h) in handles.into_iter().enumerate() {
        assert!(h.await.unwrap() > i as u32);
    }
    assert_eq!(cell.armed_async_waiters(), 0);
}

#[test]
fn many_tasks_current_thread() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(many_tasks(Arc::new(WaitCell::new(0)), 200));
}

#[test]
fn many_tasks_multi_thread_with_a_blocking_notifier() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let cell = Arc::new(WaitCell::new(0));
    let handles: Vec<_> = (0..100u32)
        .map(|i| {
            let c = cell.clone();
            rt.spawn(async move { c.wait_until_async(move |v| v > i).await })
        })
        .collect();
    // A plain thread (not a task) increments the value: the same notify path as
    // for blocking waiters.
    let c = cell.clone();
    let writer = std::thread::spawn(move || {
        for _ in 0..100 {
            c.fetch_add(1);
            std::thread::sleep(Duration::from_micros(50));
        }
    });
    rt.block_on(async {
        for (i, h) in handles.into_iter().enumerate() {
            assert!(h.await.unwrap() > i as u32);
        }
    });
    writer.join().unwrap();
    assert_eq!(cell.armed_async_waiters(), 0);
}

#[tokio::test]
async fn notify_all_after_as_atomic_change() {
    let cell = Arc::new(WaitCell::new(0));
    let hs: Vec<_> = (0..10)
        .map(|_| {
            let c = cell.clone();
            tokio::spawn(async move { c.wait_until_async(|v| v == 9).await })
        })
        .collect();
    while cell.armed_async_waiters() < 10 {
        tokio::task::yield_now().await;
    }
    cell.as_atomic()
        .store(9, std::sync::atomic::Ordering::Relaxed);
    cell.notify_all();
    for h in hs {
        assert_eq!(h.await.unwrap(), 9);
    }
}

#[tokio::test]
async fn cancelled_waits_deregister() {
    let cell = WaitCell::new(0);
    for _ in 0..50 {
        let r = tokio::time::timeout(
            Duration::from_micros(200),
            cell.wait_until_async(|v| v == 1),
        )
        .await;
        assert!(r.is_err(), "timed out");
    }
    assert_eq!(cell.armed_async_waiters(), 0, "every dropped future left");
    // And a later wait still works.
    cell.store(1);
    assert_eq!(cell.wait_until_async(|v| v == 1).await, 1);
}

#[test]
fn mixed_async_blocking_and_spinning_waiters_on_one_cell() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let cell = Arc::new(WaitCell::new(0));
    let parked = {
        let c = cell.clone();
        std::thread::spawn(move || {
            c.wait_until_with(|v| v == 1, &WaitPolicy::new().backend(Backend::Futex))
        })
    };
    let spinning = {
        let c = cell.clone();
        std::thread::spawn(move || {
            c.wait_until_with(
                |v| v == 1,
                &WaitPolicy::new()
                    .park(false)
                    .spin(Duration::from_micros(10)),
            )
        })
    };
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let c = cell.clone();
            rt.spawn(async move { c.wait_until_async(|v| v == 1).await })
        })
        .collect();
    assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1
        && cell.armed_async_waiters() == 8));
    cell.store(1);
    assert_eq!(parked.join().unwrap(), 1);
    assert_eq!(spinning.join().unwrap(), 1);
    rt.block_on(async {
        for t in tasks {
            assert_eq!(t.await.unwrap(), 1);
        }
    });
}

#[tokio::test]
async fn timer_form_times_out_and_succeeds() {
    let cell = Arc::new(WaitCell::new(1));
    let r = cell
        .wait_until_async_with_timer(|v| v == 2, tokio::time::sleep(Duration::from_millis(5)))
        .await;
    assert_eq!(r, WaitResult::TimedOut(1));
    assert_eq!(cell.armed_async_waiters(), 0);
    let c = cell.clone();
    let t = tokio::spawn(async move {
        c.wait_until_async_with_timer(|v| v == 2, tokio::time::sleep(Duration::from_secs(30)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(2)).await;
    cell.store(2);
    assert_eq!(t.await.unwrap(), WaitResult::Ready(2));
}

#[tokio::test]
async fn prewait_catches_a_quick_answer_without_arming() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_micros(100));
        c.store(1);
    });
    let v = cell
        .wait_until_async(|v| v == 1)
        .prewait(Duration::from_millis(500))
        .await;
    assert_eq!(v, 1);
    writer.join().unwrap();
    assert_eq!(cell.armed_async_waiters(), 0);
}
