use super::super::{process_counts, PARK, SPIN};
use super::*;

/// How many blocks of `r` are claimed.
fn live(r: &ThreadBlocks) -> u32 {
    r.first
        .chain()
        .map(|c| c.claimed.load(Relaxed).count_ones())
        .sum()
}

#[test]
fn a_registry_keeps_the_counts_of_exited_threads() {
    let r = ThreadBlocks::new();
    let a = r.register();
    let b = r.register();
    a.block().0.bump(SPIN);
    a.block().0.bump(SPIN);
    b.block().0.bump(PARK);
    assert_eq!(r.sum()[SPIN], 2);
    assert_eq!(r.sum()[PARK], 1);
    r.retire(&a);
    b.block().0.bump(PARK);
    let s = r.sum();
    assert_eq!((s[SPIN], s[PARK]), (2, 2));
    assert_eq!(live(&r), 1);
    r.retire(&b);
    assert_eq!(r.sum(), {
        let mut want = [0; COUNTERS];
        want[SPIN] = 2;
        want[PARK] = 2;
        want
    });
    assert_eq!(live(&r), 0);
}

/// More live threads than a chunk holds spill into a second chunk; a retired block is
/// handed out again, emptied, and the sum stays exact throughout.
#[test]
fn a_registry_grows_past_a_chunk_and_reuses_retired_blocks() {
    let r = ThreadBlocks::new();
    let claims: Vec<_> = (0..=CHUNK_BLOCKS).map(|_| r.register()).collect();
    assert_eq!(live(&r), CHUNK_BLOCKS as u32 + 1);
    let last = claims[CHUNK_BLOCKS];
    assert!(
        !std::ptr::eq(last.chunk, &r.first),
        "the last claim is in a new chunk"
    );
    assert_eq!(r.first.chain().count(), 2);
    for (k, c) in claims.iter().enumerate() {
        for _ in 0..k {
            c.block().0.bump(PARK);
        }
    }
    let total = (CHUNK_BLOCKS * (CHUNK_BLOCKS + 1) / 2) as u64;
    assert_eq!(r.sum()[PARK], total);
    // Block 5 of the first chunk leaves; the next claim gets it back, empty.
    r.retire(&claims[5]);
    assert_eq!(r.sum()[PARK], total);
    let again = r.register();
    assert!(std::ptr::eq(again.chunk, &r.first) && again.index == claims[5].index);
    assert_eq!(again.block().0.read(), [0; COUNTERS]);
    again.block().0.bump(PARK);
    assert_eq!(r.sum()[PARK], total + 1);
    assert_eq!(r.first.chain().count(), 2, "no third chunk");
}

/// Threads that claim, count and retire at once lose no count and claim no block
/// twice.
#[test]
fn racing_threads_claim_distinct_blocks_and_lose_no_count() {
    static R: ThreadBlocks = ThreadBlocks::new();
    const THREADS_N: usize = 8;
    const ROUNDS: u64 = 200;
    let before = R.sum()[SPIN];
    let seen: Vec<_> = (0..THREADS_N)
        .map(|_| {
            std::thread::spawn(|| {
                for n in 0..ROUNDS {
                    let c = R.register();
                    // A block another live thread holds would not start at zero.
                    assert_eq!(c.block().0.read()[SPIN], 0);
                    for _ in 0..=n % 3 {
                        c.block().0.bump(SPIN);
                    }
                    R.retire(&c);
                }
            })
        })
        .collect();
    for t in seen {
        t.join().unwrap();
    }
    let per_thread: u64 = (0..ROUNDS).map(|n| n % 3 + 1).sum();
    assert_eq!(R.sum()[SPIN] - before, per_thread * THREADS_N as u64);
    assert_eq!(live(&R), 0);
}

/// A thread whose wait ends in the park tier claims no block (and so never makes the
/// thread state, whose first use registers a destructor), and its park reaches the
/// process's sum.
#[test]
fn a_thread_that_only_parks_claims_no_block() {
    let cell = std::sync::Arc::new(crate::WaitCell::new_parker(0));
    let before = process_counts()[PARK];
    let c = cell.clone();
    let waiter = std::thread::spawn(move || {
        c.wait_until(|v| v == 1);
        THREAD.with(|t| t.stats.0.get().is_none())
    });
    while cell.parked_waiters() == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    cell.swap(1);
    assert!(waiter.join().unwrap(), "the park claimed a block");
    assert!(process_counts()[PARK] > before);
}
