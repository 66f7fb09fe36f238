//! The park tier's endings of the whole process (see the parent's docs): 16 sets on
//! lines of their own, each thread counting in the one the address of a constant
//! thread-local picks, with a locked add.

use super::{COUNTERS, PARK, TIMEOUT};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// How many process-wide sets the park tier's endings are counted in: threads that
/// park at once write lines of their own, unless their hashes meet.
pub(super) const PARK_SHARDS: usize = 16;

/// The park tier's endings ([`PARK`] and [`TIMEOUT`]) of the whole process, in
/// [`PARK_SHARDS`] sets on lines of their own.
pub(super) struct ParkCounts([ParkShard; PARK_SHARDS]);

/// One set of [`ParkCounts`]: the park count, then the timeout count.
#[repr(align(128))]
struct ParkShard([AtomicU64; 2]);

impl ParkCounts {
    const fn new() -> ParkCounts {
        ParkCounts([const { ParkShard([const { AtomicU64::new(0) }; 2]) }; PARK_SHARDS])
    }

    /// Adds one to counter `i` ([`PARK`] or [`TIMEOUT`]) in the calling thread's set:
    /// a locked add, as threads share the sets.
    #[inline]
    pub(super) fn bump(&self, i: usize) {
        let slot = usize::from(i == TIMEOUT);
        self.0[park_shard()].0[slot].fetch_add(1, Relaxed);
    }

    /// The sums over the sets, as counters.
    pub(super) fn sum(&self) -> [u64; COUNTERS] {
        let mut s = [0u64; COUNTERS];
        for shard in &self.0 {
            s[PARK] = s[PARK].wrapping_add(shard.0[0].load(Relaxed));
            s[TIMEOUT] = s[TIMEOUT].wrapping_add(shard.0[1].load(Relaxed));
        }
        s
    }
}

/// This process's counts of the park tier's endings.
pub(super) static PARKS: ParkCounts = ParkCounts::new();

std::thread_local! {
    /// Its address, which differs between live threads, picks the calling thread's
    /// set of [`PARKS`]. A constant without a destructor: reading it registers
    /// nothing, and no shared line is written to deal the sets.
    static PARK_KEY: u8 = const { 0 };
}

/// The calling thread's set of [`PARKS`]: the address of its [`PARK_KEY`], hashed
/// (Fibonacci hashing of the whole address: on Linux thread-local blocks lie a
/// stack apart, whatever the stacks' size, and on Windows the loader allocates
/// them from the heap, several to a page; the product's top bits differ for either
/// spacing).
#[inline]
pub(super) fn park_shard() -> usize {
    const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
    // PARK_SHARDS is a power of two: its bits are the product's top ones.
    const BITS: u32 = PARK_SHARDS.trailing_zeros();
    let key = PARK_KEY.with(|k| std::ptr::from_ref(k) as usize as u64);
    (key.wrapping_mul(GOLDEN) >> (u64::BITS - BITS)) as usize
}

// The hash yields PARK_SHARDS values only for a power of two.
const _: () = assert!(PARK_SHARDS.is_power_of_two());
