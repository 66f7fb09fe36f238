//! The thread blocks (see the parent's docs): a thread's counts of the waits that
//! ended before the park tier, in a block of its own that it claims from a fixed
//! table with one compare-exchange at its first count, and folds into the retired
//! totals when it exits.

use super::{Counters, COUNTERS};
use crate::thread::THREAD;
use std::cell::Cell;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Mutex, OnceLock, PoisonError};

/// A thread's counters, on lines of their own so that a neighbour's block does not
/// share them.
#[repr(align(128))]
pub(super) struct Block(pub(super) Counters);

/// Blocks per [`Chunk`]: the bits of its claim word.
const CHUNK_BLOCKS: usize = 64;

/// A fixed set of blocks, each claimed by a thread with one compare-exchange on the
/// chunk's claim word. The registry's first chunk is a static; a chunk whose blocks
/// are all claimed leads to the next, made once and kept for the life of the
/// process (so there are never more chunks than the most blocks ever claimed at
/// once need).
struct Chunk {
    /// Bit `i` is set while block `i` belongs to a live thread.
    claimed: AtomicU64,
    /// The chunk after this one, made by the first thread that found every block
    /// claimed.
    next: OnceLock<Box<Chunk>>,
    blocks: [Block; CHUNK_BLOCKS],
}

impl Chunk {
    const fn new() -> Chunk {
        Chunk {
            claimed: AtomicU64::new(0),
            next: OnceLock::new(),
            blocks: [const { Block(Counters::new()) }; CHUNK_BLOCKS],
        }
    }

    /// Claims a free block of this chunk, if it has one. A released block's counters
    /// were zeroed before its bit was cleared, and the `Acquire` here orders that
    /// before the new owner's counts.
    fn claim(&self) -> Option<usize> {
        let mut bits = self.claimed.load(Relaxed);
        while bits != u64::MAX {
            let i = (!bits).trailing_zeros();
            match self
                .claimed
                .compare_exchange_weak(bits, bits | 1 << i, Acquire, Relaxed)
            {
                Ok(_) => return Some(i as usize),
                Err(now) => bits = now,
            }
        }
        None
    }

    /// This chunk and the ones after it.
    fn chain(&self) -> impl Iterator<Item = &Chunk> {
        std::iter::successors(Some(self), |c| c.next.get().map(|b| &**b))
    }
}

/// The blocks of the live threads and the totals of the threads that exited.
///
/// A thread claims its block on its first count, which comes as its first wait ends,
/// often after an idle spell that left the code and data of an allocation and a lock
/// cold: a compare-exchange on a claim word instead, with neither. Only an exiting
/// thread and a reader of the sums take the lock:
/// a thread folds its counts into the retired totals and zeroes its block under it,
/// so a sum sees each count once, in the block or in the totals.
struct ThreadBlocks {
    first: Chunk,
    retired: Mutex<[u64; COUNTERS]>,
}

/// A thread's claim on its block.
#[derive(Clone, Copy)]
struct Claim<'a> {
    chunk: &'a Chunk,
    index: usize,
}

impl Claim<'_> {
    fn block(&self) -> &Block {
        &self.chunk.blocks[self.index]
    }
}

impl ThreadBlocks {
    const fn new() -> ThreadBlocks {
        ThreadBlocks {
            first: Chunk::new(),
            retired: Mutex::new([0; COUNTERS]),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [u64; COUNTERS]> {
        // The lock guards plain sums that no panic can leave half-updated.
        self.retired.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A free block, counted in the sum from now on: the first free one of the
    /// first chunk that has one, a new chunk after the last when none has.
    fn register(&self) -> Claim<'_> {
        let mut chunk = &self.first;
        loop {
            if let Some(index) = chunk.claim() {
                return Claim { chunk, index };
            }
            chunk = chunk.next.get_or_init(|| Box::new(Chunk::new()));
        }
    }

    /// Folds the claim's counts into the retired totals, zeroes its block and frees
    /// it for the next thread (its thread exits).
    fn retire(&self, c: &Claim<'_>) {
        let b = c.block();
        let mut g = self.lock();
        for (t, n) in g.iter_mut().zip(b.0.read()) {
            *t = t.wrapping_add(n);
        }
        b.0.clear();
        c.chunk.claimed.fetch_and(!(1 << c.index), Release);
    }

    /// The retired totals plus every claimed block.
    fn sum(&self) -> [u64; COUNTERS] {
        let g = self.lock();
        let mut s = *g;
        for chunk in self.first.chain() {
            let bits = chunk.claimed.load(Acquire);
            for (i, b) in chunk.blocks.iter().enumerate() {
                if bits & (1 << i) != 0 {
                    for (t, c) in s.iter_mut().zip(b.0.read()) {
                        *t = t.wrapping_add(c);
                    }
                }
            }
        }
        s
    }
}

/// This process's registry of thread blocks.
static THREADS: ThreadBlocks = ThreadBlocks::new();

/// A thread's handle on its block, kept in the thread's [`ThreadState`]: claims the
/// block at the thread's first count, retires it when the thread exits.
///
/// [`ThreadState`]: crate::thread::ThreadState
pub(crate) struct ThreadBlock(Cell<Option<Claim<'static>>>);

impl ThreadBlock {
    pub(crate) const fn new() -> ThreadBlock {
        ThreadBlock(Cell::new(None))
    }

    /// The thread's block, claimed now if this is its first count.
    #[inline]
    pub(super) fn block(&self) -> &'static Block {
        let claim = match self.0.get() {
            Some(c) => c,
            None => self.claim(),
        };
        &claim.chunk.blocks[claim.index]
    }

    #[cold]
    fn claim(&self) -> Claim<'static> {
        let c = THREADS.register();
        self.0.set(Some(c));
        c
    }
}

impl Drop for ThreadBlock {
    fn drop(&mut self) {
        if let Some(c) = self.0.get() {
            // A count after this one (a wait in a later thread-local destructor)
            // must not reach the block, which another thread may claim next.
            BLOCK.set(None);
            THREADS.retire(&c);
        }
    }
}

std::thread_local! {
    /// The calling thread's block once [`ThreadBlock`] has claimed it, until the
    /// thread's state is torn down: a thread-local with neither destructor nor lazy
    /// initialisation, so that a count (the hot path of a ping-pong, right after the
    /// inline spin caught its partner's answer) finds the block with one load,
    /// without the check of the thread's state that [`THREAD`] takes on each use.
    static BLOCK: Cell<Option<&'static Block>> = const { Cell::new(None) };
}

/// Counts `i` in the calling thread's block; returns the block's new count of `i`.
/// A count made while the thread's locals are being torn down is dropped (and 0
/// returned).
#[inline]
pub(super) fn bump_thread(i: usize) -> u64 {
    match BLOCK.get() {
        Some(b) => b.0.bump(i),
        None => bump_thread_first(i),
    }
}

/// [`bump_thread`] before the thread's block is known to [`BLOCK`]: claims it (on the
/// thread's first count) and notes it there.
#[cold]
#[inline(never)]
fn bump_thread_first(i: usize) -> u64 {
    THREAD
        .try_with(|t| {
            let b = t.stats.block();
            BLOCK.set(Some(b));
            b.0.bump(i)
        })
        .unwrap_or(0)
}

/// The counts of the live threads' blocks and of the threads that exited.
pub(super) fn sum() -> [u64; COUNTERS] {
    THREADS.sum()
}

#[cfg(test)]
mod tests;
