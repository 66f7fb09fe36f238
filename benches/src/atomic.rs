//! Waits on bare atomics (`mwait::atomic`) against their peers: the cost of a wake
//! of an unwaited word (alone in its bucket, and beside a parked waiter of another
//! word of the bucket), ping-pong on two `AtomicU32`s interleaved with a WaitCell's
//! and PAUSE's on the same words, and beside atomic-wait's, the memory a parked
//! waiter costs, and the wake-up of a `wait_any` over eight words against a wait on
//! one.

use crate::scenarios::{per_call_ns, round_trips, PingPong, Rounds, SLICE};
use mwait::atomic::{self, Member};
use mwait_support::sample_batches_for;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The report name of `mwait::atomic`'s ping-pong (a store and `wake_all`, a
/// `wait_until`, on a word).
pub const NAME: &str = "mwait-atomic";

/// Samples of ns per store-and-wake, per case: `unwaited` (nobody parked in the
/// word's bucket), `bucket-parked` (a thread parked on another word of the bucket
/// for the whole measurement), and `atomic-wait` (a store and its `wake_one`, as in
/// the notify scenario).
pub fn wake_costs(budget: Duration) -> Vec<(String, Vec<f64>)> {
    let words: Vec<AtomicU32> = (0..4096).map(|_| AtomicU32::new(0)).collect();
    let (parked_on, beside) = sharing_a_bucket(&words);
    let lone = words
        .iter()
        .find(|w| {
            let b = atomic::bucket_index(*w);
            b != atomic::bucket_index(parked_on)
        })
        .expect("a word outside the parked waiter's bucket");
    // Park once first, so that the process takes the light notify path (as any
    // process that has parked a waiter does).
    let _ = atomic::wait_timeout(lone, 0, Duration::from_millis(1));
    let mut out = vec![(
        "unwaited".to_string(),
        per_call_ns(budget, |i| {
            lone.store(i, Ordering::Release);
            atomic::wake_one(std::hint::black_box(lone));
        }),
    )];
    thread::scope(|s| {
        let t = s.spawn(|| atomic::wait(parked_on, 0));
        while atomic::parked_waiters(parked_on) == 0 {
            thread::sleep(Duration::from_micros(100));
        }
        out.push((
            "bucket-parked".to_string(),
            per_call_ns(budget, |i| {
                beside.store(i, Ordering::Release);
                atomic::wake_one(std::hint::black_box(beside));
            }),
        ));
        parked_on.store(1, Ordering::Release);
        atomic::wake_all(parked_on);
        t.join().unwrap();
    });
    out.push((
        "atomic-wait".to_string(),
        crate::scenarios::atomic_wait_wakes(budget),
    ));
    out
}

/// Two distinct words of `words` in one bucket of mwait's waiter table.
fn sharing_a_bucket(words: &[AtomicU32]) -> (&AtomicU32, &AtomicU32) {
    let mut seen = std::collections::HashMap::new();
    for w in words {
        if let Some(first) = seen.insert(atomic::bucket_index(w), w) {
            return (first, w);
        }
    }
    panic!("no two of {} words share a bucket", words.len());
}

/// The mechanisms of [`pingpong_rounds`], in the order of its columns.
pub const PINGPONG_MECHANISMS: [&str; 4] = [NAME, "waitcell", "pause", "atomic-wait"];

/// `rounds` rounds, each a [`SLICE`] of ping-pong of every mechanism of
/// [`PINGPONG_MECHANISMS`] in turn on CPUs 0 and 1; per round, the p50 round trip
/// (ns) of each, in that order. The first three run on one pair of threads and the
/// words of one pair of fresh `WaitCell`s (`mwait::atomic` on the cells' words
/// through [`WaitCell::as_atomic`](mwait::WaitCell::as_atomic), the cells' own
/// waits, PAUSE loops: see [`PingPong::set_rounds`]), since a round trip depends on
/// where its two lines live as well as on the mechanism; atomic-wait, which waits on
/// words of its own, on a fresh pair. Comparisons are made within a round: the host
/// moves the vCPUs between placements faster than a whole run.
pub fn pingpong_rounds(rounds: usize) -> Vec<[f64; 4]> {
    let known = |n: &str| crate::impls::by_name(n).expect("a known mechanism");
    let (waitcell, atomic_wait) = (known("waitcell"), known("atomic-wait"));
    // The columns the shared pair runs, in `PINGPONG_MECHANISMS` order.
    let modes = [Rounds::Atomic, Rounds::Signal, Rounds::Pause];
    (0..rounds)
        .map(|r| {
            let mut row = [f64::NAN; 4];
            let warm = |pp: &mut PingPong| {
                // The first round trips of a fresh pair include thread start-up.
                for _ in 0..crate::scenarios::WARMUP_ROUND_TRIPS {
                    pp.round_trip();
                }
            };
            let mut pp = PingPong::start_with(waitcell, Some((0, 1)), Duration::ZERO);
            warm(&mut pp);
            for i in crate::round_order(modes.len(), r) {
                pp.set_rounds(modes[i]);
                let mut samples =
                    sample_batches_for(SLICE, 1_000_000, crate::ROUND_TRIP_BATCH, || {
                        match modes[i] {
                            Rounds::Atomic => pp.atomic_round_trip(),
                            Rounds::Signal => pp.round_trip(),
                            Rounds::Pause => pp.pause_round_trip(),
                        }
                    });
                row[i] = crate::stats(&mut samples).p50;
            }
            drop(pp);
            let mut pp = PingPong::start_with(atomic_wait, Some((0, 1)), Duration::ZERO);
            warm(&mut pp);
            row[3] = crate::stats(&mut round_trips(&mut pp, SLICE, 1_000_000)).p50;
            row
        })
        .collect()
}

/// What [`rss_growth`] measured, in KiB.
#[derive(Clone, Debug)]
pub struct RssGrowth {
    /// The words in the array.
    pub words: usize,
    /// The threads parked on its words.
    pub parked: usize,
    /// Resident memory growth from the waiters' threads running (their stacks
    /// touched) to all of them parked.
    pub growth_kib: f64,
    /// The bound: the table's size and 1 KiB per parked thread.
    pub bound_kib: f64,
}

/// Resident set size of this process in KiB (`VmRSS` of `/proc/self/status`); 0
/// where unreadable.
fn rss_kib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .unwrap_or(0.0)
}

/// An array of `words` `AtomicU32`s (written, so resident) and `parked` threads:
/// the resident memory the threads add by parking on words spread over the array,
/// measured from the moment they all run (their stacks are resident by then).
pub fn rss_growth(words: usize, parked: usize) -> RssGrowth {
    let array: Vec<AtomicU32> = (0..words).map(|_| AtomicU32::new(0)).collect();
    for w in array.iter().step_by(1024) {
        w.store(0, Ordering::Relaxed);
    }
    let ready = AtomicU32::new(0);
    let go = AtomicBool::new(false);
    let stride = (words / parked.max(1)).max(1);
    let (mut before, mut after) = (0.0, 0.0);
    thread::scope(|s| {
        for k in 0..parked {
            let (array, ready, go) = (&array, &ready, &go);
            s.spawn(move || {
                ready.fetch_add(1, Ordering::AcqRel);
                while !go.load(Ordering::Acquire) {
                    thread::sleep(Duration::from_micros(200));
                }
                atomic::wait(&array[k * stride], 0);
            });
        }
        while ready.load(Ordering::Acquire) < parked as u32 {
            thread::sleep(Duration::from_millis(1));
        }
        before = rss_kib();
        go.store(true, Ordering::Release);
        let parked_all = || (0..parked).all(|k| atomic::parked_waiters(&array[k * stride]) == 1);
        while !parked_all() {
            thread::sleep(Duration::from_millis(1));
        }
        after = rss_kib();
        for k in 0..parked {
            array[k * stride].store(1, Ordering::Release);
            atomic::wake_all(&array[k * stride]);
        }
    });
    RssGrowth {
        words,
        parked,
        growth_kib: after - before,
        bound_kib: TABLE_KIB + parked as f64,
    }
}

/// The size of mwait's waiter table (256 buckets of 128 bytes).
pub const TABLE_KIB: f64 = 32.0;

/// `rounds` rounds of `per_round` wake-ups each of a parked waiter of one word and
/// of a parked `wait_any` over eight words (the last one changed), alternating;
/// per round, the p50 wake-up (ns, from the store to the waiter's return) of each:
/// `(any, one)`. The waiter runs on CPU 1, the waker on CPU 0, and it sleeps 200 µs
/// after the waiter is announced, so that the waiter is asleep.
pub fn any_vs_one_wakes(rounds: usize, per_round: usize) -> Vec<(f64, f64)> {
    (0..rounds)
        .map(|_| {
            let any = wake_samples(per_round, 8);
            let one = wake_samples(per_round, 1);
            (p50(any), p50(one))
        })
        .collect()
}

fn p50(mut v: Vec<u64>) -> f64 {
    crate::stats(&mut v).p50
}

/// `n` wake-ups of a waiter of `members` words (`wait_any` when more than one).
fn wake_samples(n: usize, members: usize) -> Vec<u64> {
    let words: Vec<AtomicU32> = (0..members).map(|_| AtomicU32::new(0)).collect();
    let stamp = AtomicU64::new(0);
    let took = AtomicU64::new(0);
    let round = AtomicU32::new(0);
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_nanos() as u64;
    let mut out = Vec::with_capacity(n);
    thread::scope(|s| {
        let (words, stamp, took, round) = (&words, &stamp, &took, &round);
        s.spawn(move || {
            mwait_support::pin_to_cpu(1);
            for i in 1..=n as u32 {
                // Wait for round i to be asked for, then for the change.
                while round.load(Ordering::Acquire) < i {
                    thread::yield_now();
                }
                let expected = i - 1;
                if words.len() == 1 {
                    atomic::wait(&words[0], expected);
                } else {
                    let m: Vec<Member> =
                        words.iter().map(|w| Member::atomic(w, expected)).collect();
                    atomic::wait_any(&m);
                }
                took.store(now() - stamp.load(Ordering::Acquire), Ordering::Release);
                for w in words.iter() {
                    w.store(i, Ordering::Relaxed);
                }
            }
        });
        mwait_support::pin_to_cpu(0);
        let last = &words[members - 1];
        for i in 1..=n as u32 {
            took.store(u64::MAX, Ordering::Release);
            round.store(i, Ordering::Release);
            while atomic::parked_waiters(last) == 0 {
                thread::yield_now();
            }
            thread::sleep(Duration::from_micros(200));
            stamp.store(now(), Ordering::Release);
            last.store(i, Ordering::Release);
            atomic::wake_one(last);
            loop {
                let t = took.load(Ordering::Acquire);
                if t != u64::MAX {
                    out.push(t);
                    break;
                }
                thread::yield_now();
            }
            // The waiter sets every word to i before its next round.
            while words.iter().any(|w| w.load(Ordering::Acquire) != i) {
                thread::yield_now();
            }
        }
        mwait_support::unpin();
    });
    out
}
