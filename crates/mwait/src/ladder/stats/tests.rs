use super::parks::{park_shard, PARK_SHARDS};
use super::*;
use crate::thread::THREAD;

#[test]
fn a_cell_counts_each_outcome_and_the_hand_offs() {
    let c = CellStats::new();
    // A thread of its own, whose inline count starts at zero: its first inline
    // ending is counted in the cell with the batch it starts (see below).
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..INLINE_BATCH {
                c.record(Ended::Inline);
            }
        });
    });
    for e in [
        Ended::Entry,
        Ended::Spin,
        Ended::Spin,
        Ended::Hardware,
        Ended::Park,
        Ended::TimedOut,
    ] {
        c.record(e);
    }
    c.record_handoff(true);
    c.record_handoff(false);
    c.record_spurious_hardware();
    let s = c.snapshot();
    assert_eq!(
        s,
        WaitStats {
            inline_spin: INLINE_BATCH,
            spin: 2,
            hardware: 1,
            park: 1,
            timeout: 1,
            handoff_spins: 2,
            handoff_caught: 1,
            spurious_hardware: 1,
        }
    );
    let waits = INLINE_BATCH + 5;
    assert_eq!(s.waits(), waits);
    let share = |n: u64| n as f64 * 100.0 / waits as f64;
    let (spin, hw, park) = s.shares();
    assert_eq!(
        (spin, hw, park),
        (share(INLINE_BATCH + 2), share(1), share(1))
    );
    assert_eq!(s.since(&s).waits(), 0);
    assert_eq!(s.since(&WaitStats::default()), s);
    let text = s.to_string();
    assert!(
        text.starts_with("69 waits: inline spin 92.8 %, spin 2.9 %"),
        "{text}"
    );
    assert!(text.contains("hand-off spins 2 (1 caught)"), "{text}");
}

#[test]
fn inline_endings_reach_the_cell_in_batches_and_the_thread_exactly() {
    let c = CellStats::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let thread = || THREAD.with(|t| t.stats.block().0.read()[INLINE_SPIN]);
            for _ in 0..INLINE_BATCH - 1 {
                c.record(Ended::Inline);
            }
            assert_eq!(c.snapshot().inline_spin, 0);
            assert_eq!(thread(), INLINE_BATCH - 1);
            c.record(Ended::Inline);
            assert_eq!(c.snapshot().inline_spin, INLINE_BATCH);
            for _ in 0..INLINE_BATCH + 1 {
                c.record(Ended::Inline);
            }
            assert_eq!(c.snapshot().inline_spin, 2 * INLINE_BATCH);
            assert_eq!(thread(), 2 * INLINE_BATCH + 1);
        });
    });
}

#[test]
fn the_cell_counters_take_32_bytes() {
    assert_eq!(std::mem::size_of::<CellStats>(), 32);
}

#[test]
fn the_process_sum_includes_threads_that_exited() {
    const PER_THREAD: u64 = 1000;
    const THREADS_N: u64 = 4;
    let before = process_counts();
    let workers: Vec<_> = (0..THREADS_N)
        .map(|_| {
            std::thread::spawn(|| {
                let c = CellStats::new();
                for _ in 0..PER_THREAD {
                    c.record(Ended::Spin);
                    c.record(Ended::TimedOut);
                }
                // This thread's own block saw every count before the park tier: one
                // writer, no loss.
                let own = THREAD.with(|t| t.stats.block().0.read());
                assert_eq!((own[SPIN], own[TIMEOUT]), (PER_THREAD, 0));
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // The threads are gone; their counts stay. (Other tests may count too, but
    // only ever up.)
    let after = process_counts();
    assert!(after[SPIN] - before[SPIN] >= PER_THREAD * THREADS_N);
    assert!(after[TIMEOUT] - before[TIMEOUT] >= PER_THREAD * THREADS_N);
    let s = process_stats(false);
    assert!(s.waits.spin >= PER_THREAD * THREADS_N);
    assert!(s.waits.timeout >= PER_THREAD * THREADS_N);
    assert!(s.handoff_spin >= s.spin_budget);
}

/// The park tier's endings count in the sets of [`PARKS`], each thread in the one its
/// key's address picks, with locked adds: threads that count at once lose no count,
/// a thread keeps its set, and threads spread over the sets.
#[test]
fn park_endings_count_in_their_threads_sets_and_lose_no_count() {
    // Under Miri, which interprets every add of 32 threads, fewer.
    const PER_THREAD: u64 = if cfg!(miri) { 50 } else { 2000 };
    const THREADS_N: usize = 2 * PARK_SHARDS;
    let before = PARKS.sum();
    let shards: Vec<usize> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS_N)
            .map(|_| {
                s.spawn(|| {
                    let c = CellStats::new();
                    let shard = park_shard();
                    for _ in 0..PER_THREAD {
                        c.record(Ended::Park);
                        c.record(Ended::AtDeadline);
                        c.record(Ended::TimedOut);
                    }
                    assert_eq!(park_shard(), shard, "a thread keeps its set");
                    shard
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let after = PARKS.sum();
    let n = PER_THREAD * THREADS_N as u64;
    assert!(after[PARK] - before[PARK] >= 2 * n);
    assert!(after[TIMEOUT] - before[TIMEOUT] >= n);
    let mut used: Vec<usize> = shards.clone();
    used.sort_unstable();
    used.dedup();
    assert!(used.iter().all(|&k| k < PARK_SHARDS));
    // Live threads' keys lie a stack apart: they spread over the sets.
    assert!(used.len() >= PARK_SHARDS / 2, "{shards:?}");
}
