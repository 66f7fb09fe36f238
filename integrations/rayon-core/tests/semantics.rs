//! What rayon-core documents about a pool's workers (they run what is spawned or
//! installed, `join` runs both closures, a scope ends when its spawns have, a
//! broadcast reaches every worker), checked after the workers have gone idle, so
//! that each test also needs a sleeping worker to wake: `cargo xtask clients
//! rayon-core` runs them against the published rayon-core and the patched one,
//! requiring the same results.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// How long a test waits for something that must happen (a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(20);
/// Long enough for an idle worker to go to sleep.
const IDLE: Duration = Duration::from_millis(30);

fn pool(threads: usize) -> rayon_core::ThreadPool {
    rayon_core::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn a_spawn_wakes_an_idle_worker() {
    let pool = pool(2);
    for i in 0..10 {
        thread::sleep(IDLE);
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(i).unwrap());
        assert_eq!(rx.recv_timeout(PATIENCE), Ok(i));
    }
}

#[test]
fn install_runs_on_a_worker_and_returns_its_value() {
    let pool = pool(2);
    for _ in 0..5 {
        thread::sleep(IDLE);
        let index = pool.install(rayon_core::current_thread_index);
        assert!(index.is_some_and(|i| i < 2), "{index:?}");
        assert_eq!(pool.install(|| 6 * 7), 42);
    }
}

#[test]
fn join_runs_both_closures() {
    let pool = pool(2);
    thread::sleep(IDLE);
    let (a, b) = pool.install(|| {
        rayon_core::join(
            || {
                thread::sleep(Duration::from_millis(2));
                1
            },
            || 2,
        )
    });
    assert_eq!((a, b), (1, 2));
}

#[test]
fn a_scope_ends_when_its_spawns_have() {
    let pool = pool(3);
    thread::sleep(IDLE);
    let count = AtomicUsize::new(0);
    pool.scope(|s| {
        for _ in 0..100 {
            s.spawn(|_| {
                count.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    assert_eq!(count.load(Ordering::SeqCst), 100);
}

#[test]
fn a_broadcast_reaches_every_worker() {
    let pool = pool(3);
    thread::sleep(IDLE);
    let mut seen = pool.broadcast(|ctx| ctx.index());
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2]);
}

#[test]
fn a_worker_that_waits_for_a_latch_set_from_outside_sees_it() {
    // A job that blocks its worker until a plain thread answers: the other worker
    // must stay able to run new work meanwhile.
    let pool = pool(2);
    let (answer_tx, answer_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    pool.spawn(move || {
        answer_rx.recv_timeout(PATIENCE).unwrap();
        done_tx.send("first").unwrap();
    });
    thread::sleep(IDLE);
    let (tx, rx) = mpsc::channel();
    pool.spawn(move || tx.send("second").unwrap());
    assert_eq!(rx.recv_timeout(PATIENCE), Ok("second"));
    answer_tx.send(()).unwrap();
    assert_eq!(done_rx.recv_timeout(PATIENCE), Ok("first"));
}
