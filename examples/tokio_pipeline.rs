//! `cargo run --release --example tokio_pipeline`: a three-stage pipeline whose stages
//! are tokio tasks, a plain OS thread and a blocking waiter, all handing work over
//! through `WaitCell`s.
//!
//! Stage 1 (a tokio task) produces sequence numbers into `produced`; stage 2 (an OS
//! thread, blocking waits) transforms them and publishes into `transformed`; stage 3
//! (another tokio task, async waits) consumes them. Each cell holds the count of
//! items published; the consumer of a cell waits until the count passes what it has
//! seen. The run prints the items per second and checks that nothing was lost.

use mwait::WaitCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Items sent through the pipeline.
const ITEMS: u32 = 200_000;
/// Capacity of each stage's ring.
const RING: usize = 1024;

struct Stage {
    /// Items published so far.
    published: WaitCell,
    /// Items consumed so far (the producer waits on it when the ring is full).
    consumed: WaitCell,
    ring: Vec<AtomicU64>,
}

impl Stage {
    fn new() -> Stage {
        Stage {
            published: WaitCell::new(0),
            consumed: WaitCell::new(0),
            ring: (0..RING).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = Arc::new(Stage::new());
    let b = Arc::new(Stage::new());
    let t0 = Instant::now();

    let producer = {
        let a = a.clone();
        tokio::spawn(async move {
            for i in 0..ITEMS {
                // Wait (async) for room in the ring.
                a.consumed.wait_until_async(|c| i - c < RING as u32).await;
                a.ring[i as usize % RING].store(u64::from(i), Ordering::Relaxed);
                a.published.store(i + 1);
            }
        })
    };

    let transformer = {
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            for i in 0..ITEMS {
                a.published.wait_until(|p| p > i);
                let x = a.ring[i as usize % RING].load(Ordering::Relaxed);
                a.consumed.store(i + 1);
                b.consumed.wait_until(|c| i - c < RING as u32);
                b.ring[i as usize % RING].store(x * 2 + 1, Ordering::Relaxed);
                b.published.store(i + 1);
            }
        })
    };

    let consumer = {
        let b = b.clone();
        tokio::spawn(async move {
            let mut sum = 0u64;
            for i in 0..ITEMS {
                b.published.wait_until_async(|p| p > i).await;
                sum += b.ring[i as usize % RING].load(Ordering::Relaxed);
                b.consumed.store(i + 1);
            }
            sum
        })
    };

    producer.await.unwrap();
    let sum = consumer.await.unwrap();
    transformer.join().unwrap();
    let n = u64::from(ITEMS);
    assert_eq!(sum, n * (n - 1) + n, "every item arrived exactly once");
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{ITEMS} items through 3 stages in {:.1} ms: {:.2} M items/s (backend {})",
        secs * 1e3,
        f64::from(ITEMS) / secs / 1e6,
        mwait::selection().backend
    );
}
