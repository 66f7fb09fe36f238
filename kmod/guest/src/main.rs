//! In-guest test of the `mwait` crate's kernel tier: run with
//! `MWAIT_BACKEND=kernel` inside the QEMU guest that has `/dev/mwait` loaded.
//! Prints one `ok`/`not ok` line per test.
use mwait::{Backend, WaitCell};
use std::{sync::Arc, thread, time::Duration};

/// Ping-pong round trips that must all complete (a lost wake-up hangs).
const PINGPONGS: u32 = 10_000;
/// Waiters on their own cells.
const WAITERS: u32 = 64;
/// A wait with no writer must last at least this long.
const DEADLINE: Duration = Duration::from_millis(20);

fn check(ok: bool, name: &str) -> bool {
    println!("{} rust {name}", if ok { "ok" } else { "not ok" });
    ok
}

fn main() {
    let sel = mwait::selection();
    let mut all = check(
        sel.backend == Backend::Kernel,
        &format!("kernel tier selected ({})", sel.reason),
    );

    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        c.store(1);
    });
    all &= check(
        cell.wait_until(|v| v != 0) == 1,
        "wake on store across threads",
    );
    t.join().unwrap();

    let t0 = std::time::Instant::now();
    let r = cell.wait_until_timeout(|v| v == 99, DEADLINE);
    all &= check(
        r.is_timed_out() && t0.elapsed() >= DEADLINE,
        "deadline honoured",
    );

    let cells: Arc<Vec<WaitCell>> = Arc::new((0..WAITERS).map(|_| WaitCell::new(0)).collect());
    let hs: Vec<_> = (0..WAITERS as usize)
        .map(|i| {
            let cs = cells.clone();
            thread::spawn(move || cs[i].wait_until(|v| v != 0))
        })
        .collect();
    for c in cells.iter() {
        c.store(1);
    }
    all &= check(
        hs.into_iter().all(|h| h.join().unwrap() == 1),
        "64 waiters on 64 cells (oversubscribed: resched path)",
    );

    let ping = Arc::new(WaitCell::new(0));
    let pong = Arc::new(WaitCell::new(0));
    let (pi, po) = (ping.clone(), pong.clone());
    let t = thread::spawn(move || {
        for i in 1..=PINGPONGS {
            pi.wait_until(|v| v == i);
            po.store(i);
        }
    });
    for i in 1..=PINGPONGS {
        ping.store(i);
        pong.wait_until(|v| v == i);
    }
    t.join().unwrap();
    all &= check(pong.load() == PINGPONGS, "10^4 ping-pongs, no lost wake");
    std::process::exit(if all { 0 } else { 1 });
}
