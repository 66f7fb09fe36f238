//! The waiter table: a fixed array of buckets, each with one announcement word that
//! notifiers read, a queue of the parked waiters whose words hash to it, and the
//! adaptive state and counters that the ladder keeps for the waits of the bucket.
//!
//! A parked waiter is an entry `(address, doorbell)` in its bucket's queue; the
//! doorbell is a word of its own that it sleeps on (a futex on Linux, the platform's
//! wait elsewhere) and that a notifier rings. So a wake of one waiter wakes exactly
//! one waiter of that address, whatever else shares the bucket, and the park tier
//! never asks the kernel to compare the waited word itself, which is what lets a
//! 64-bit word wait there (see "Notes about memory ordering" in `mod.rs`).
//!
//! Memory: [`BUCKETS`] buckets of 128 bytes (32 KiB), and per parked waiter one
//! doorbell (a reference-counted allocation of a few words) and one queue entry
//! (two words; a bucket's queue keeps the capacity its most crowded moment needed).
//! A bucket keeps the doorbells of the last waits on one word that parked in it, for
//! the next: at most [`SPARES`] spare doorbells per bucket that ever held a waiter.
//! Nothing per word.

use crate::ladder::adapt::{Adaptive, Caught};
use crate::ladder::stats::CellStats;
use crate::ladder::Learning;
use crate::primitive::{
    array_of, const_fn_unless_loom, fence, loom_sc_fence, process_static, AtomicU32, Mutex,
    Ordering, FENCED_IDLE_NOTIFIES, TABLE_BUCKETS,
};
use crate::protocol::OnWake;
use crate::sys::park;
use std::sync::Arc;

mod doorbell;
mod queued;
pub(crate) use doorbell::Doorbell;
use doorbell::Entry;
pub(crate) use queued::Queued;

/// How many buckets the table has (`primitive::TABLE_BUCKETS`: 256, one in the loom
/// model, where every pair of words then collides, the case the models check).
pub(crate) const BUCKETS: usize = TABLE_BUCKETS;

const _: () = assert!(BUCKETS.is_power_of_two());

/// The bit of the announcement word that lets the waiters of its tag skip the
/// waiter barrier: set by a waiter of that tag once its own barrier is done, while it
/// is still queued and every queued waiter waits on the tag, and kept (with the tag)
/// while the queue holds only waiters of the tag or nobody (see "A word that parks
/// often" in `mod.rs`).
const FENCED: u32 = 1 << 31;
/// The tag bits of the announcement word.
const TAG: u32 = FENCED - 1;

/// The tag bits of a bucket with nobody parked.
const EMPTY: u32 = 0;
/// The tag bits of a bucket whose parked waiters wait on more than one address (or
/// on one whose tag is this value): every wake of the bucket's words looks at the
/// queue.
const MANY: u32 = TAG;

/// Most doorbells one notifier rings per pass over a bucket's queue: the bells are
/// rung after the bucket's lock is released, so that no system call runs under it.
const RING_BATCH: usize = 8;

/// The table: [`BUCKETS`] buckets, 32 KiB in all.
pub(crate) struct Table {
    buckets: [Bucket; BUCKETS],
}

impl Table {
    const_fn_unless_loom! {
        fn new() -> Table {
            Table {
                buckets: array_of![Bucket::new(); BUCKETS],
            }
        }
    }
}

process_static! {
    /// The table, as long as the process lives.
    static TABLE: Table = Table::new();
}

/// The bucket of the word at `addr`: the top bits of a Fibonacci hash of the
/// address, so that neighbouring words (a ring's slots) fall in different buckets.
#[inline(always)]
pub(crate) fn bucket(addr: usize) -> &'static Bucket {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    const SHIFT: u32 = u64::BITS - BUCKETS.trailing_zeros();
    // One bucket (the loom model): a shift by 64, which `checked_shr` makes 0.
    let h = (addr as u64)
        .wrapping_mul(K)
        .checked_shr(SHIFT)
        .unwrap_or(0);
    &TABLE.buckets[h as usize]
}

/// The index of the bucket of `addr` (tests and benches look for words that share
/// one).
pub(crate) fn bucket_index(addr: usize) -> usize {
    let b: *const Bucket = bucket(addr);
    (b as usize - TABLE.buckets.as_ptr() as usize) / core::mem::size_of::<Bucket>()
}

/// The tag of `addr` in an announcement word: the address in 4-byte units, cut to
/// the 31 [`TAG`] bits, never [`EMPTY`]. Two addresses of one bucket may share a tag
/// (they are 8 GiB apart); their notifiers then look at the queue, which tells them
/// apart.
#[inline(always)]
fn tag(addr: usize) -> u32 {
    match ((addr >> 2) as u32).wrapping_add(1) & TAG {
        EMPTY => MANY,
        t => t,
    }
}

/// One bucket: the announcement word and the queue on the first 64-byte line,
/// which waiters write only when they park or withdraw and notifiers read, and what
/// the ladder learns and counts on the second, which waiters write on every wait.
#[repr(C, align(128))]
pub(crate) struct Bucket {
    /// [`EMPTY`]; the tag of the one address every queued waiter waits on; or
    /// [`MANY`]; with [`FENCED`] for a tag whose waiters may skip the barrier, which
    /// keeps the tag while nobody is queued. Written only under `queue`'s lock, from
    /// the queue's contents and the word itself ([`Bucket::settled`]): by a waiter's
    /// announcement (3), a `SeqCst` swap, by whoever removes an entry, and by a
    /// waiter that sets `FENCED`. Read by notifiers (2) without the lock.
    announced: AtomicU32,
    queue: Mutex<Waiters>,
    learned: Learned,
}

/// What a bucket's lock guards: the queue of parked waiters, and doorbells to reuse.
struct Waiters {
    /// The parked waiters, the oldest first.
    entries: Vec<Entry>,
    /// The doorbells of the last waits on one word that parked here
    /// ([`Bucket::announce_own`]): the next such park sleeps on one of them instead
    /// of allocating one, once nobody else holds it.
    spares: [Option<Arc<Doorbell>>; SPARES],
    /// Wakes in a row (no announcement between them) that found the announcement
    /// [`FENCED`] for their word's tag and no waiter of the word queued: the
    /// [`FENCED_IDLE_NOTIFIES`]th clears the bit.
    idle: u32,
}

/// Spare doorbells a bucket keeps. A notifier that took a waiter's entry holds its
/// doorbell until its ring returns, and the woken waiter may park again before
/// that: with two, its next park finds the one it slept on before that free (with
/// one, over a third of a slow producer's consumer's parks still allocated:
/// `docs/design-notes.md`).
const SPARES: usize = 2;

/// The second line of a bucket.
#[repr(C, align(64))]
struct Learned {
    adapt: Adaptive,
    caught: Caught,
    stats: CellStats,
    /// The clock reading of the last ring of a doorbell in this bucket (0: none yet),
    /// from which a woken waiter measures its wake-up latency. A statistic: relaxed.
    wake_stamp: std::sync::atomic::AtomicU64,
}

impl Bucket {
    const_fn_unless_loom! {
        /// An empty bucket (the table's, and the tests' own).
        pub(super) fn new() -> Bucket {
            Bucket {
                announced: AtomicU32::new(EMPTY),
                queue: Mutex::new(Waiters {
                    entries: Vec::new(),
                    spares: [const { None }; SPARES],
                    idle: 0,
                }),
                learned: Learned {
                    adapt: Adaptive::new(),
                    caught: Caught::new(),
                    stats: CellStats::new(),
                    wake_stamp: std::sync::atomic::AtomicU64::new(0),
                },
            }
        }
    }

    /// Where the ladder learns and counts the waits of this bucket's words.
    #[inline(always)]
    pub(crate) fn learning(&self) -> Learning<'_> {
        Learning {
            adapt: &self.learned.adapt,
            caught: &self.learned.caught,
            stats: &self.learned.stats,
            on_evidence: false,
        }
    }

    /// The counters of this bucket's waits.
    #[inline(always)]
    pub(crate) fn stats(&self) -> &CellStats {
        &self.learned.stats
    }

    /// The clock reading of the last ring in this bucket (0: none yet).
    #[inline]
    pub(crate) fn wake_stamp(&self) -> u64 {
        self.learned
            .wake_stamp
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many waiters of `addr` are queued right now (a snapshot).
    pub(crate) fn queued(&self, addr: usize) -> usize {
        self.queue
            .lock()
            .entries
            .iter()
            .filter(|e| e.addr == addr)
            .count()
    }

    // ---- The notify half ----

    /// Wakes up to `n` parked waiters of `addr` (`park::ALL`: all of them) after the
    /// caller changed the word there. Returns how many doorbells it rang. One load of
    /// the announcement word when no waiter of `addr` is announced in the bucket.
    #[inline(always)]
    pub(crate) fn wake(&self, addr: usize, n: u32) -> usize {
        let a = if park::begin_light_check() {
            // The asymmetric barrier: every waiter that announces itself runs the
            // waiter barrier (membarrier) after its announcement.
            park::light_fence();
            let a = self.announced.load(Ordering::Relaxed); // (2)
            park::end_light_store();
            a
        } else {
            fence(Ordering::SeqCst);
            loom_sc_fence();
            self.announced.load(Ordering::SeqCst) // (2)
        };
        let t = a & TAG;
        if t == EMPTY || (t != MANY && t != tag(addr)) {
            return 0;
        }
        self.wake_slow(addr, n)
    }

    /// The queue pass of [`wake`](Self::wake): takes the waiters of `addr` off the
    /// queue (the oldest first) under the lock, in batches of [`RING_BATCH`], and rings
    /// each batch after the lock is released. A wake of all rings at most the
    /// waiters queued at its first look, so waiters that park again meanwhile cannot
    /// keep it going.
    #[cold]
    #[inline(never)]
    fn wake_slow(&self, addr: usize, n: u32) -> usize {
        let mut left: Option<usize> = (n != park::ALL).then_some(n as usize);
        let mut rung = 0;
        loop {
            let mut batch: [Option<Arc<Doorbell>>; RING_BATCH] = Default::default();
            let mut got = 0;
            let more = {
                let mut guard = self.queue.lock();
                let q = &mut guard.entries;
                let left = left.get_or_insert_with(|| q.iter().filter(|e| e.addr == addr).count());
                let mut i = 0;
                while i < q.len() && got < RING_BATCH && *left > 0 {
                    if q[i].addr == addr {
                        batch[got] = Some(q.remove(i).take());
                        got += 1;
                        *left -= 1;
                    } else {
                        i += 1;
                    }
                }
                let mut next = self.settled(q);
                if got > 0 {
                    guard.idle = 0;
                } else if next == tag(addr) | FENCED {
                    // Nobody of the word to wake under a `FENCED` announcement: its
                    // waiter was not parked. A run of these clears the bit, so that
                    // a word mostly woken with nobody parked goes back to the
                    // notifies that take no lock.
                    guard.idle += 1;
                    if guard.idle >= FENCED_IDLE_NOTIFIES {
                        guard.idle = 0;
                        next = summary(&guard.entries);
                    }
                }
                self.announced.store(next, Ordering::SeqCst);
                let q = &guard.entries;
                *left > 0 && q[i..].iter().any(|e| e.addr == addr)
            };
            if got > 0 {
                self.learned.wake_stamp.store(
                    crate::sys::clock::now_ns(),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            for bell in batch.iter().flatten() {
                bell.ring();
            }
            if got > 0 {
                // The hand-off: the answer this thread may wait for next comes after
                // the woken waiter's wake-up (`ladder::adapt`).
                self.learned.adapt.parked_woken();
            }
            rung += got;
            if !more {
                return rung;
            }
        }
    }

    // ---- The park half ----

    /// The waiter's announcement (3): queues `bell` for `addr` and publishes the
    /// bucket's new summary with a `SeqCst` swap, under the queue's lock. The caller
    /// then runs the waiter barrier and re-checks its word (4); see the notes in
    /// `mod.rs`. The returned guard withdraws the entry however the park ends.
    pub(crate) fn announce(&self, addr: usize, bell: &Arc<Doorbell>) -> Queued<'_> {
        let mut q = self.queue.lock();
        self.push(&mut q, addr, Arc::clone(bell), false)
    }

    /// [`announce`](Self::announce) with a doorbell of the bucket's: a spare that an
    /// earlier park of one word left, armed again, where nobody else holds it, else a
    /// new one (allocated with the lock released: nothing that may call the kernel
    /// runs under it). The guard gives it back as a spare when it withdraws the
    /// entry.
    pub(crate) fn announce_own(&self, addr: usize) -> Queued<'_> {
        let mut q = self.queue.lock();
        // A spare that nobody else holds is one that nobody rings: a notifier that
        // took its entry lets go of it only once its ring has returned (`wake_slow`).
        let free = q.spares.iter_mut().find_map(|s| {
            if s.as_mut().and_then(Arc::get_mut).is_some() {
                s.take()
            } else {
                None
            }
        });
        let bell = match free {
            Some(bell) => {
                bell.rearm();
                bell
            }
            None => {
                drop(q);
                let bell = Arc::new(Doorbell::new());
                q = self.queue.lock();
                bell
            }
        };
        self.push(&mut q, addr, bell, true)
    }

    /// Queues `bell` for `addr` under the lock `q` and publishes the new summary
    /// (3); `own`: the guard gives the bell back as a spare of the bucket's.
    fn push<'a>(
        &'a self,
        q: &mut Waiters,
        addr: usize,
        bell: Arc<Doorbell>,
        own: bool,
    ) -> Queued<'a> {
        q.entries.push(Entry {
            addr,
            bell: Arc::clone(&bell),
        });
        // A park breaks a run of wakes that found nobody parked.
        q.idle = 0;
        let announced = self.settled(&q.entries);
        self.announced.swap(announced, Ordering::SeqCst); // (3)
        Queued {
            bucket: self,
            addr,
            bell: Some(bell),
            own,
            fenced: announced & FENCED != 0,
            consumed: false,
        }
    }

    /// The announcement word for the queue `q`, under its lock: the queue's
    /// [`summary`], with [`FENCED`] kept where the word has it for the tag of every
    /// waiter queued now, or for nobody queued (the bit then keeps its tag). A queue
    /// that now holds a waiter of another tag, or of several, drops the bit.
    fn settled(&self, q: &[Entry]) -> u32 {
        // Every write of the word is made under the lock the caller holds.
        let now = self.announced.load(Ordering::Relaxed);
        let s = summary(q);
        if now & FENCED != 0 && (s == EMPTY || s == now & TAG) {
            now
        } else {
            s
        }
    }
}

/// The announcement word for the queue `q`.
fn summary(q: &[Entry]) -> u32 {
    match q.split_first() {
        None => EMPTY,
        Some((first, rest)) if rest.iter().all(|e| e.addr == first.addr) => tag(first.addr),
        Some(_) => MANY,
    }
}
