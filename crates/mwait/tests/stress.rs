//! Stress: ping-pong and many-waiter handoffs with each tier forced, counting every
//! handoff. A lost wake-up shows as a hang, which the watchdog turns into a failure
//! with the tier's name and the handoff count reached.
//!
//! `cargo test` runs a short version; `cargo xtask stress [N]` runs N handoffs per
//! test (default 10^8) in release mode (`MWAIT_STRESS_HANDOFFS=N`).

use mwait::{Backend, WaitCell, WaitPolicy};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Handoffs per test in a plain `cargo test` run.
const SHORT_HANDOFFS: u64 = 20_000;
/// How long a test may go without progress before the watchdog fails it.
const STALL_LIMIT: Duration = Duration::from_secs(60);

fn handoffs() -> u64 {
    std::env::var("MWAIT_STRESS_HANDOFFS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SHORT_HANDOFFS)
}

/// The ladders every machine has, forced one by one.
fn policies() -> Vec<(&'static str, WaitPolicy)> {
    vec![
        (
            "futex (park at once)",
            WaitPolicy::new().backend(Backend::Futex),
        ),
        (
            "futex with 1 µs spin",
            WaitPolicy::new()
                .backend(Backend::Futex)
                .spin(Duration::from_micros(1)),
        ),
        (
            "spin (never park)",
            WaitPolicy::new().backend(Backend::Spin),
        ),
        ("default ladder", WaitPolicy::new()),
    ]
}

/// Runs `body` with a watchdog that fails the test if `progress` stops moving.
fn watched(name: &str, progress: &AtomicU64, body: impl FnOnce() + Send) {
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            body();
            done.store(true, Ordering::Release);
        });
        let mut last = (progress.load(Ordering::Relaxed), Instant::now());
        while !done.load(Ordering::Acquire) {
            thread::sleep(Duration::from_millis(20));
            let p = progress.load(Ordering::Relaxed);
            if p != last.0 {
                last = (p, Instant::now());
            } else if last.1.elapsed() > STALL_LIMIT {
                eprintln!("{name}: no progress for {STALL_LIMIT:?} at handoff {p}: lost wake-up");
                std::process::abort();
            }
        }
    });
}

#[test]
fn ping_pong_every_tier() {
    let n = handoffs();
    for (name, policy) in policies() {
        let cell = Arc::new(WaitCell::new(0));
        let progress = AtomicU64::new(0);
        let start = Instant::now();
        watched(name, &progress, || {
            let c = cell.clone();
            let pong = thread::spawn(move || {
                // Odd values are pings, the next even value the pong.
                let mut seen = 0u64;
                loop {
                    let v = c.wait_until_with(|v| v % 2 == 1, &policy);
                    if v == u32::MAX {
                        return seen;
                    }
                    seen += 1;
                    c.store(v + 1);
                }
            });
            for i in 0..n {
                let ping = (2 * i + 1) as u32;
                cell.store(ping);
                let got = cell.wait_until_with(|v| v == ping + 1, &policy);
                assert_eq!(got, ping + 1);
                progress.fetch_add(1, Ordering::Relaxed);
            }
            cell.store(u32::MAX);
            assert_eq!(pong.join().unwrap(), n, "{name}: pongs counted");
        });
        assert_eq!(cell.parked_waiters(), 0, "{name}");
        println!(
            "{name}: {n} round trips in {:?} ({:?} each)",
            start.elapsed(),
            start.elapsed() / n.max(1) as u32
        );
    }
}

#[test]
fn many_waiters_token_handoff() {
    // A token passes round a ring of threads: thread k waits for the value k mod T,
    // then stores k+1. Every handoff wakes T-1 threads whose predicate stays false,
    // so the test also exercises spurious wake-ups and re-parking.
    const THREADS: u32 = 8;
    let n = (handoffs() / 4).max(u64::from(THREADS));
    for (name, policy) in policies() {
        if name.starts_with("spin") {
            // Eight spinners on two CPUs make no progress worth measuring.
            continue;
        }
        let cell = Arc::new(WaitCell::new(0));
        let progress = AtomicU64::new(0);
        let counts: Vec<AtomicU64> = (0..THREADS).map(|_| AtomicU64::new(0)).collect();
        watched(name, &progress, || {
            thread::scope(|s| {
                for k in 0..THREADS {
                    let (cell, counts, progress) = (&cell, &counts, &progress);
                    s.spawn(move || loop {
                        let v =
                            cell.wait_until_with(|v| v as u64 >= n || v % THREADS == k, &policy);
                        if v as u64 >= n {
                            return;
                        }
                        counts[k as usize].fetch_add(1, Ordering::Relaxed);
                        progress.fetch_add(1, Ordering::Relaxed);
                        cell.store(v + 1);
                    });
                }
            });
        });
        let total: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, n, "{name}: every handoff happened exactly once");
        for (k, c) in counts.iter().enumerate() {
            let expect = n / u64::from(THREADS) + u64::from((k as u64) < n % u64::from(THREADS));
            assert_eq!(c.load(Ordering::Relaxed), expect, "{name}: thread {k}");
        }
        assert_eq!(cell.parked_waiters(), 0, "{name}");
    }
}

#[test]
fn counter_many_producers_one_waiter() {
    // Producers add to the counter; the waiter waits for thresholds. Nothing lost:
    // the waiter ends at exactly the total.
    const PRODUCERS: u64 = 4;
    let per = (handoffs() / 4).max(1);
    for (name, policy) in policies() {
        if name.starts_with("spin") {
            continue;
        }
        let cell = WaitCell::new(0);
        let progress = AtomicU64::new(0);
        watched(name, &progress, || {
            thread::scope(|s| {
                for _ in 0..PRODUCERS {
                    s.spawn(|| {
                        for _ in 0..per {
                            cell.fetch_add(1);
                        }
                    });
                }
                let total = (PRODUCERS * per) as u32;
                let mut target = 0u32;
                while target < total {
                    target = (target + 1000).min(total);
                    let v = cell.wait_until_with(|v| v >= target, &policy);
                    assert!(v >= target);
                    progress.fetch_add(1, Ordering::Relaxed);
                }
            });
        });
        assert_eq!(u64::from(cell.load()), PRODUCERS * per, "{name}");
    }
}

#[test]
fn bare_atomics_hand_off_over_a_thousand_words() {
    // 32 pairs of threads ping-pong over 32 words each (1 024 words, 64 threads):
    // round r of a pair uses its word r mod 32, the ping storing 2r+1, the pong 2r+2,
    // each followed by a wake (of one in even rounds, of all in odd ones). The words
    // share the waiter table's 256 buckets with the other pairs' parked waiters.
    // Pairs of odd index use 64-bit words whose values are all in the high half.
    // `cargo xtask stress` runs 10^7 hand-offs (a tenth of its count), `cargo test`
    // 20 000.
    const PAIRS: usize = 32;
    const WORDS_PER_PAIR: usize = 32;
    let total = (handoffs() / 10).max(SHORT_HANDOFFS);
    let rounds = (total / (2 * PAIRS as u64)).max(1);
    let w32: Vec<std::sync::atomic::AtomicU32> = (0..PAIRS / 2 * WORDS_PER_PAIR)
        .map(|_| std::sync::atomic::AtomicU32::new(0))
        .collect();
    let w64: Vec<AtomicU64> = (0..PAIRS / 2 * WORDS_PER_PAIR)
        .map(|_| AtomicU64::new(0))
        .collect();
    let progress = AtomicU64::new(0);
    let start = Instant::now();
    watched("bare atomics", &progress, || {
        thread::scope(|s| {
            for pair in 0..PAIRS {
                let base = pair / 2 * WORDS_PER_PAIR;
                for ping in [true, false] {
                    let (w32, w64, progress) = (&w32, &w64, &progress);
                    s.spawn(move || {
                        for r in 0..rounds {
                            let slot = base + (r as usize % WORDS_PER_PAIR);
                            let all = r % 2 == 1;
                            let step = |send: u64, want: u64| {
                                if pair % 2 == 0 {
                                    hand_off(&w32[slot], send as u32, want as u32, all);
                                } else {
                                    hand_off(&w64[slot], send << 32, want << 32, all);
                                }
                            };
                            if ping {
                                step(2 * r + 1, 2 * r + 2);
                            } else {
                                step(0, 2 * r + 1);
                                step(2 * r + 2, 0);
                            }
                            // Each side counts the hand-off it received.
                            progress.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            }
        });
    });
    let handed = progress.load(Ordering::Relaxed);
    assert_eq!(handed, 2 * rounds * PAIRS as u64, "every hand-off arrived");
    for w in &w32 {
        assert_eq!(mwait::atomic::parked_waiters(w), 0);
    }
    for w in &w64 {
        assert_eq!(mwait::atomic::parked_waiters(w), 0);
    }
    println!(
        "bare atomics: {handed} hand-offs in {:?} ({:?} each)",
        start.elapsed(),
        start.elapsed() / handed.max(1) as u32
    );
}

/// One step of a hand-off on `word`: stores `send` and wakes (unless `send` is 0),
/// then waits for `want` (unless `want` is 0).
fn hand_off<A: HandOff>(word: &A, send: A::Value, want: A::Value, all: bool)
where
    A::Value: Default,
{
    if send != A::Value::default() {
        word.put(send);
        if all {
            mwait::atomic::wake_all(word);
        } else {
            mwait::atomic::wake_one(word);
        }
    }
    if want != A::Value::default() {
        let got = mwait::atomic::wait_until(word, |v| v == want, None);
        assert_eq!(got.ready(), Some(want));
    }
}

/// The store of a hand-off, for both widths.
trait HandOff: mwait::atomic::Atomic {
    fn put(&self, v: Self::Value);
}

impl HandOff for std::sync::atomic::AtomicU32 {
    fn put(&self, v: u32) {
        self.store(v, Ordering::Release);
    }
}

impl HandOff for AtomicU64 {
    fn put(&self, v: u64) {
        self.store(v, Ordering::Release);
    }
}
