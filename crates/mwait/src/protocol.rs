//! The protocol between notifiers and parked waiters: the state word beside the
//! value on the monitor line, the notify half (one store and one load when nobody is
//! parked) and the park half (announce, barrier, re-check, sleep, withdraw).
//!
//! # Notes about memory ordering
//!
//! Three kinds of waiter share one cell: spinners and hardware waiters, which need
//! nothing from the notifier but its store (a spinner re-loads the line; a monitor armed
//! on the line is woken by the write itself), and parked waiters, which sleep in the
//! kernel and need a `futex_wake`. The notifier must not pay for that system call when
//! nobody is parked, so parked waiters announce themselves in `state`, which sits on
//! the line after `value`'s: one store and one load when nobody is parked, and the
//! load hits a line the notifier only reads, which stays in its cache while nobody
//! parks, and a hardware monitor armed on `value`'s line is not woken by
//! announcements (what the shared line cost, measured with the `hop_cost` example:
//! `docs/design-notes.md`).
//!
//! The protocol is the classic store-buffering (Dekker) pair:
//!
//! ```text
//! notifier                          parking waiter
//! value.store(new, SeqCst)     (1)  state.fetch_add(1, SeqCst)       (3)
//! if state.load(SeqCst) != 0   (2)  v = value.load(SeqCst)           (4)
//!     futex_wake(value)             if !pred(v) { futex_wait(value, v) }
//! ```
//!
//! All four accesses are `SeqCst`, so they lie in one total order. If (2) reads 0, then
//! (2) precedes (3), hence (1) precedes (4) and (4) sees `new` (or later): the waiter
//! does not sleep. Otherwise the notifier calls `futex_wake`; if the waiter has not
//! yet reached `futex_wait`, the kernel's own check of `value == v` under its bucket
//! lock fails and the waiter returns at once. Either way no wake-up is lost. Weaker
//! orderings (`Release` store, `Acquire` load) would allow both sides to read the old
//! values (store buffering), and the waiter could sleep forever.
//!
//! Writers that are read-modify-writes (`swap`, `fetch_*`, `compare_exchange`) are
//! `SeqCst` as well. [`notify_one`](crate::WaitCell::notify_one) and
//! [`notify_all`](crate::WaitCell::notify_all) are for callers who changed the value
//! through [`as_atomic`](crate::WaitCell::as_atomic) with any ordering: they issue a
//! `SeqCst` fence before their load of `state`, which pairs with (3)/(4) the same way.
//!
//! ## The asymmetric barrier: `store` without a locked instruction
//!
//! On x86 a `SeqCst` store is an `xchg`, a full barrier that costs about ten plain
//! stores (the figures: `docs/design-notes.md`). Notifiers are the
//! hot side and parkers the cold one (a park costs a system call anyway), so once the
//! process has registered for `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`,
//! [`WaitCell::store`](crate::WaitCell::store) takes the *light* path, and the parking
//! waiter the *heavy* one:
//!
//! ```text
//! notifier (light)                  parking waiter (heavy)
//! value.store(new, Release)    (1)  state.fetch_add(1, SeqCst)       (3)
//! compiler_fence(SeqCst)            membarrier(PRIVATE_EXPEDITED)
//! if state.load(Relaxed) != 0  (2)  v = value.load(SeqCst)           (4)
//! ```
//!
//! `membarrier` returns only after every CPU running a thread of this process has
//! executed a full memory barrier (or is not running one of its threads, and a
//! context switch is a barrier too). That barrier lands on a notifier's CPU at a
//! point P of its program: before (1), between (1) and (2), or after (2). If (1)
//! precedes P, (1) is visible to everything ordered after the barrier's end, so (4)
//! sees `new`; if (2) follows P, (2) sees everything ordered before the barrier's
//! start, so it sees the count (3). This is the pairing that membarrier(2) documents
//! (a compiler barrier on the fast path, membarrier on the slow path, in place of a
//! full barrier on both).
//!
//! On Linux x86-64 the light notifier first issues a PREFETCHW on `value`'s line,
//! where the CPU has it (`sys::park::begin_light_store`): a hint that orders nothing
//! and writes nothing, so the argument is unchanged (it may end a hardware wait on
//! the line early, which every hardware wait tolerates; see `sys/x86/x86_64.rs`).
//!
//! On Windows `FlushProcessWriteBuffers` plays the part of `membarrier`: it
//! interrupts every CPU running a thread of this process and returns once each has
//! taken the interrupt, a full barrier there, which gives the same three positions (the
//! argument is in `sys/os/windows.rs`; Wine 8 implements it as a no-op, so under Wine the
//! light path stays off). macOS, FreeBSD and the parking-table fallback have no such
//! call and keep the symmetric protocol.
//!
//! The light path is taken only while `sys::park::begin_light_store` says so: a flag set
//! once, when registration succeeded. Every waiter blocks on that one-time
//! registration before choosing its barrier, so no waiter uses a mere fence while a
//! notifier may use the light path; where registration fails (old kernel, seccomp)
//! both sides keep the `SeqCst` protocol above. The flag is one more load on the
//! notify path, of a read-only global that stays in L1.
//!
//! Linux turns the flag off again if `membarrier` fails after registration (a seccomp
//! filter installed since): new notifies fence, but a light notify that read the flag
//! before may still be between (1) and (2), for as long as its thread is preempted
//! there, so a waiter that announces itself later still needs a process-wide
//! barrier, not a fence. Its barrier from then on is a TLB shootdown: it takes the
//! write permission from a page of its own, and the kernel interrupts every CPU
//! running a thread of the process to flush that page's translation before
//! `mprotect` returns, the guarantee `membarrier` gives (`sys/os/linux/barrier.rs`). The
//! light path is offered only where that fallback exists: on x86-64 CPUs without
//! INVLPGB (which flushes without interrupts). The loom model of the fallback
//! (`sys/os/loom.rs`) deadlocks on a future with a mere fence there, and passes with
//! the shootdown's interrupts.
//!
//! `membarrier` reaches only this process's threads. A process-shared cell
//! ([`WaitCell::new_shared`](crate::WaitCell::new_shared)) therefore carries a
//! permanent bit in `state`, `SHARED_SLOW`, that sends every light store to the slow
//! path, which issues a `SeqCst` fence and looks at `state` again. Its waiters, facing
//! fenced notifiers only, run no barrier at all (their announcement is a `SeqCst`
//! read-modify-write, their re-check a `SeqCst` load: the symmetric protocol above),
//! and never set `FENCED`. No waker is ever armed on such a cell (a waker points into
//! one process's memory), and its notifiers never look at its registry. A notify
//! that follows a `SeqCst` read-modify-write, store or fence (`swap`, `fetch_*`,
//! `compare_exchange`, `notify_*`) ignores the bit: its write (1) and load (2) and
//! the waiter's announcement (3) and re-check (4) are all in the one total order, so
//! the symmetric protocol holds without a second look.
//!
//! A parker's cell ([`WaitCell::new_parker`](crate::WaitCell::new_parker), the token
//! of `mwait::Parker`) carries the same bit, for the same reason: its waiters skip
//! `membarrier`, since a parker's state is written with read-modify-writes, and a
//! store on it, which is allowed, takes the fenced slow path. Its waiters never set
//! `FENCED`, so the unparks that find the parker awake stay on the fast path.
//!
//! ## A cell that parks often: the `FENCED` bit
//!
//! `membarrier` costs a system call, a look at every CPU's run queue and an
//! interrupt to each CPU running one of our threads: on a waiter that parks for every
//! value (a consumer fed every millisecond), it is most of the cost mwait adds to a
//! futex wait. So a parking waiter, once its barrier is done, sets a sticky bit
//! `FENCED` in `state`; a notifier that finds anything in `state` in its load (2)
//! takes the slow path, which issues a `SeqCst` fence and loads `state` again (as for
//! a shared cell); and a waiter whose announcement (3) returns a state with `FENCED`
//! skips `membarrier`.
//!
//! ## Who may skip the barrier
//!
//! Two rules make the skip safe:
//!
//! - **The setter stays announced.** A waiter sets `FENCED` only after its own
//!   barrier has ended, and only while its own announcement still stands in `state`.
//!   A parked thread is counted until its guard withdraws it, after it set the bit.
//!   A future's announcement is `ASYNC_REGISTERED`, which the registry keeps set while
//!   any slot is armed; a notify may take the future's waker (and clear the bit)
//!   while the future's barrier runs, so the future sets `FENCED` under the registry's
//!   lock, and only if its slot is still armed.
//! - **A notifier that finds anything fences.** Whatever its load (2) found in
//!   `state`, the slow path issues a `SeqCst` fence and looks at `state` again before
//!   it decides whom to wake.
//!
//! Let W be a waiter whose (3) read `FENCED`, and S the waiter whose write of the
//! bit W read (the last one before W's (3) in `state`'s modification order). S set
//! it after its barrier, which put a full barrier at a point P of every notifier N
//! (as above). If N's (1) precedes P, (1) is ordered before S's write of the bit,
//! hence before W's (3) and (4): W sees the value. Otherwise N's (2) follows P and
//! reads S's announcement (3) or a later state. Up to S's write of the bit, every
//! state holds S's announcement (first rule); from that write up to W's (3), every
//! state holds `FENCED` (no clearing came between, or W would not have read the
//! bit). So if (2) reads a state before W's (3), it finds something, and N fences
//! and looks again (second rule): by the Dekker pair of that fence and second look
//! with W's (3) and (4), either N sees W's announcement and wakes W, or W's (4) sees
//! N's value. If (2) reads W's (3) or a later state, it finds W's announcement
//! while W is still announced, and N wakes W; once W has withdrawn, that wait of W's
//! is over, and its next one announces itself again.
//!
//! Both rules matter, and each alone fails in the loom models. Without the first, a
//! future whose waker a notify took during the future's barrier left `state` empty
//! and then set `FENCED`: a notifier that ran wholly after P and before that write
//! found `state` empty on its light path, and a thread that parked next skipped its
//! barrier and slept through that notifier's value. Without the second, a notifier
//! that found only a parked thread's count (or only an armed future) woke that
//! waiter and missed a future (or thread) that had just announced itself on the
//! strength of `FENCED`.
//!
//! The bit costs notifiers a fence while it is set, so notifiers that find nobody
//! parked (and no async waiter armed) in their second look clear it, but only once
//! [`FENCED_IDLE_NOTIFIES`](crate::primitive::FENCED_IDLE_NOTIFIES) of them have in a
//! row: each such notify counts itself in `IDLE` bits of `state` with a
//! compare-exchange from exactly the state it read, and the last one of the run
//! replaces `FENCED` and the count by 0; a notify that wakes a parked waiter resets the
//! count. A compare-exchange fails if a waiter has announced itself meanwhile, and a
//! waiter that announces itself after the clearing sees no `FENCED` and runs
//! `membarrier` again. (The count only delays the clearing: the argument above reads
//! nothing but the `FENCED` bit and the announcements.)
//!
//! Why a run and not the first such notify: a waiter that has just been woken is
//! often not parked again by the time its partner answers it, and with the bit
//! cleared at the first of those the next park pays `membarrier` again. The rule: the
//! bit costs each notify a fence, a load and a compare-exchange (about 25 ns), a
//! `membarrier` 0.1 us (no other thread of the process running) to 5 us (an interrupt
//! to each CPU running one; the crate docs), so the bit goes after about as many
//! needless fences as one barrier costs: 32 of them, about 0.8 us. A cell whose
//! waiter is always parked when the value changes keeps the bit and never pays
//! `membarrier` again; a cell that is mostly stored to with nobody parked loses it
//! within that many stores and goes back to the light path.
//!
//! ## A new cell starts `FENCED`
//!
//! A cell that is not process-shared and not a parker's is made with `FENCED` set and
//! an idle count of 0, as if a waiter had parked on it and left: its first park skips
//! `membarrier`, and its first [`FENCED_IDLE_NOTIFIES`](crate::primitive::FENCED_IDLE_NOTIFIES)
//! notifies that find nobody take the fenced slow path, the last of them clearing the
//! bit as above. The argument above holds with the cell's creation in the place of
//! S's write of the bit: creating the cell happens before any notifier or waiter can
//! reach it, so every state from it up to W's (3) holds `FENCED` (no clearing came
//! between), and a notifier's (2) finds either that or W's announcement. What this
//! saves: a new cell's first park runs no barrier, which cost about as much of its
//! waiter's CPU as the futex wait itself (`docs/design-notes.md`); what it costs: the
//! first notifies of a cell that is stored to with nobody parked fence, about 25 ns
//! each, once per cell.
//!
//! A waiter that skips the barrier on a `FENCED` cell still settles the process's
//! one-time registration (`park::prepare`), as the first barrier would: the light
//! notify depends on it, and a cell that starts `FENCED` may never run a barrier.
//!
//! ## A wake tree
//!
//! The kernel wakes the sleepers of one `futex_wake` one after the other, so with N
//! parked waiters the last wakes N wakes after the notify. A notifier that wakes
//! every sleeper of a cell (not a process-shared one, where a process that dies
//! mid-tree would strand the rest), on a machine where the tree's turns can run at
//! once (`trees_help`), with more than `RELAY_FANOUT` parked adds the
//! others to `Sleepers::relay` and wakes `RELAY_FANOUT` itself; each waiter that
//! returns from a wake takes up to `RELAY_FANOUT` from `relay` and wakes as many,
//! before anything else, and the one that takes the last wakes every sleeper. The
//! notifier goes on taking turns of `RELAY_FANOUT` beside the woken waiters until
//! `relay` is empty: a woken waiter starts its turn only a whole wake-up after the
//! wake that woke it, which on a virtual machine is several times what a wake costs
//! its waker, so a notifier that stopped after its first turn would leave the tree's
//! first levels to wait on wake-ups alone, and its last waiter would wake later than
//! after one wake of all (the figures: `docs/design-notes.md`). Its thread makes at most one
//! wake call per `RELAY_FANOUT` sleepers, and fewer the sooner woken waiters join.
//! Nobody is left asleep: `relay` drops to 0 only in a read-modify-write whose thread
//! then wakes every sleeper, and while it is above 0 some woken waiter is still to
//! take its turn, because a wake that woke fewer than it asked for (the count held
//! waiters not yet asleep, or gone) takes all of `relay` and wakes every sleeper
//! itself. A thread counted by the kernel as woken returns from its wait as woken
//! (the kernel reports a wake over a signal or a timeout), so every turn is taken.
//! A sleeper that parked after the notify may be woken by the tree instead of an
//! older one: it re-checks and parks again, and the older one is woken by the last
//! turn's wake of every sleeper. A platform that does not say how many it woke
//! (0) never starts a tree: the first wake falls back to waking every sleeper.
//!
//! ## Counts left by a fork
//!
//! A child of `fork()` inherits a copy of every private cell, parked count included,
//! but none of the parent's parked threads, with one exception: the thread that
//! called `fork()` goes on in the child, and it may have been counted itself (a
//! predicate that forks inside the park, or a signal handler that forks while the
//! thread sleeps in an `SA_RESTART` futex wait). So a non-zero count carries a tag,
//! the fork generation of the process whose waiters it counts
//! (`sys::park::fork_generation`, one more in each child), and each waiter keeps the
//! tag it announced itself under:
//!
//! - a waiter's announcement (3) that finds a count under another tag replaces it by
//!   its own 1 and wakes every sleeper of the cell once; a notifier whose second look
//!   finds one removes it with a compare-exchange and wakes every sleeper once too.
//!   A forked thread asleep under the old tag is among them: it wakes, re-checks,
//!   and announces itself under this process's tag;
//! - a waiter that finds, after its re-check (4), that its process's generation is no
//!   longer the one it announced under (its predicate forked) does not sleep: it
//!   returns and announces itself again;
//! - a withdrawal takes one from the count only when the count stands under the
//!   withdrawing waiter's own tag, never from another tag's count nor from 0.
//!
//! No live waiter is lost: every waiter of this process sleeps counted under this
//! process's tag, or is woken by the wake that removed its old count; a waiter that
//! announces itself after a notifier's second look is covered by the Dekker pair as
//! usual. The tag has 6 bits, so a descendant 64 forks down cannot tell its
//! ancestor's counts from its own (it then wakes nobody, as before). A process-shared
//! cell's counts carry no tag: its waiters belong to several processes by design, and
//! one killed while parked leaves its count behind (its only cost is a wake of nobody
//! on each later notify).
//!
//! ## Async waiters
//!
//! A future that arms a waker is a parking waiter whose (3) is the registry's
//! `fetch_or(ASYNC_REGISTERED, SeqCst)` and whose sleep is returning `Pending`; it
//! follows the same rules, `FENCED` included. A notifier clears `FENCED` only from a
//! state of exactly `FENCED` (and idle count), so never while a future is armed: a
//! future re-polled with its slot still armed, or re-armed by a consumer that is
//! always armed when the value changes, pays no `membarrier` after the first.
//!
//! ## The loom models
//!
//! The models (`src/tests/`) run the protocol as it runs on Linux: the light
//! notify, and `membarrier` as an interrupt that lands at the notifier's points
//! before (1), between (1) and (2), or after (2), with a fence and an
//! acknowledgement (`sys/os/loom.rs`). Loom models `SeqCst` accesses as `AcqRel`, so the
//! loom build adds the `SeqCst` fences it does model between (1) and (2) of the
//! fenced notify and between (3) and (4) (see `primitive::loom_sc_fence`).
//!
//! A parked waiter that wakes decrements `state` (`Relaxed`: it orders nothing; a
//! notifier that still sees the old count and no `WOKEN` makes one unneeded
//! `futex_wake`, no more).
//!
//! ## A wake on its way: the `WOKEN` bit
//!
//! A woken waiter stays counted until it runs and withdraws, which on a busy machine
//! can be many microseconds after the wake. A writer that stores on every step (the two
//! positions of a ring buffer, one store per message) would find the count on each of
//! those stores and call `futex_wake` each time: a system call per message for sleepers
//! that are already awake. So a notifier N that wakes every sleeper first sets `WOKEN`
//! (and clears `SKIPPED`) with a compare-exchange on the state of its second look, then
//! wakes. A notify M that finds `WOKEN` sets `SKIPPED` with a `SeqCst`
//! read-modify-write that still finds `WOKEN`, and then makes no call; where its first
//! look found the bit, that read-modify-write is its second look (it orders M's store
//! before it and reads the latest state), with no fence before it. Every announcement
//! (3) clears `WOKEN` in the read-modify-write that counts the waiter, and the last
//! withdrawal clears both bits with the count.
//!
//! Why no wake is lost. Only the cell's parked waiters sleep on the value's address,
//! and each is counted while it sleeps (a child of `fork()` and a process-shared cell
//! are the exceptions, and never set the bit: `counts_every_sleeper`). Take a notify
//! M that skipped, and a waiter W counted when M found `WOKEN` (one counted later
//! cleared the bit, and M did not skip). W was counted at the exchange of the N
//! that set the bit, and M's read-modify-write comes after that exchange in
//! `state`'s modification order. Every later read-modify-write of `state` reads M's
//! or a later one of that chain, so M's store (1) happens before whatever follows
//! such a read-modify-write in its thread.
//!
//! - If W sleeps again later, it does so after a new announcement, a read-modify-write
//!   after M's: its re-check (4) sees M's value (or a later one).
//! - Otherwise W sleeps on this announcement. N's wake tells how many it woke (the
//!   platform says; where it does not, 0). As many as the count at the exchange: W
//!   was asleep, and is awake now. Fewer: N clears both bits with a read-modify-write
//!   after M's; if it finds `SKIPPED` it wakes every sleeper once more, after M's
//!   store, and W is asleep and woken, or enters `futex_wait` after that wake and
//!   finds M's value there (the futex pairing the whole protocol rests on). If it
//!   does not, `SKIPPED` was cleared after M's mark by the last withdrawal (then W
//!   withdrew: the case above) or by the exchange of a later notifier N' that set
//!   `WOKEN` anew, whose own wake comes after M's store and covers W the same way.

use crate::primitive::{
    const_fn_unless_loom, fence, loom_sc_fence, AtomicU32, Ordering, RELAY_FANOUT,
};
use crate::registry::ASYNC_REGISTERED;
use crate::sys::park::{self, Parked};
use crate::sys::stamp::{self, Point};
use sleepers::Sleepers;
use state::{
    announced, fenced_after_idle_notify, replaces_foreign_count, withdrawn, EPOCH_MASK,
    EPOCH_SHIFT, FENCED, IDLE_MASK, PARKED_MASK, SHARED_SLOW, SKIPPED, WOKEN,
};
use std::task::Waker;

pub(crate) mod sleepers;
mod state;

// Bit 31 of `state`, `ASYNC_REGISTERED`, says async waiters have armed wakers; the
// registry owns it (`registry.rs`).

/// The cache line the monitor watches, with the value alone on it, so that only
/// writes that matter wake a hardware waiter, and the waiter-state word at the start
/// of the next line (see "Notes about memory ordering" for why not on the same one).
/// The cell aligns it to 128 bytes; the rest of the next line is the cell's waiter
/// line.
#[repr(C)]
pub(crate) struct MonitorLine {
    /// The cell's value.
    pub(crate) value: AtomicU32,
    /// The rest of `value`'s 64-byte line (the line size every current x86 CPU
    /// reports in CPUID leaf 5).
    _rest_of_line: [u32; 15],
    /// Parked waiters (`PARKED_MASK`) and the `FENCED`, `SHARED_SLOW` and
    /// `ASYNC_REGISTERED` bits.
    state: AtomicU32,
}

/// What the notify half tells the layer above once it has woken parked waiters (the
/// ladder notes the hand-off: the answer this thread may wait for next comes after
/// the partner's wake-up).
pub(crate) trait OnWake {
    /// Called after a wake of parked waiters, off the woken waiter's path.
    fn parked_woken(&self);
}

impl MonitorLine {
    const_fn_unless_loom! {
        /// `fenced_stores`: the cell's waiters skip `membarrier` (a process-shared
        /// cell, a parker's), so its light stores must take the slow path. Any
        /// other cell starts `FENCED` (see "A new cell starts `FENCED`").
        pub(crate) fn new(value: u32, fenced_stores: bool) -> MonitorLine {
            MonitorLine {
                value: AtomicU32::new(value),
                _rest_of_line: [0; 15],
                state: AtomicU32::new(if fenced_stores { SHARED_SLOW } else { FENCED }),
            }
        }
    }

    /// How many waiters are parked right now (a snapshot).
    #[inline]
    pub(crate) fn parked(&self) -> u32 {
        self.state.load(Ordering::Relaxed) & PARKED_MASK
    }

    crate::primitive::model_tests! {
        /// Whether the cell is `FENCED` right now (a snapshot), for the models that
        /// start from either side of the bit.
        pub(crate) fn fenced(&self) -> bool {
            self.state.load(Ordering::Relaxed) & FENCED != 0
        }
    }

    // ---- The notify half ----

    /// Stores `value` and wakes every parked waiter, through the light half of the
    /// asymmetric barrier where the platform allows it. `on_woke` hears of a wake of
    /// parked waiters.
    #[inline(always)]
    pub(crate) fn store(&self, s: &Sleepers, value: u32, on_woke: &impl OnWake) {
        // One load of the platform's notify mode; where it is light, the line may
        // be asked for exclusively first, so that the load of `state` does not
        // fetch it shared for the store to fetch it again.
        if park::begin_light_store(&self.value) {
            // The asymmetric barrier: parking waiters run membarrier(), so a
            // compiler barrier orders our store before our load of `state`.
            self.value.store(value, Ordering::Release); // (1)
            park::light_fence();
            let state = self.state.load(Ordering::Relaxed); // (2)
            park::end_light_store();
            if state != 0 {
                self.wake_slow(s, park::ALL, on_woke, state);
            }
        } else {
            self.value.store(value, Ordering::SeqCst); // (1)
            self.notify(s, park::ALL, on_woke);
        }
    }

    /// The notifier's second half, after a `SeqCst` write (1) or fence: one load of
    /// `state` (2), and the cold path only when somebody is parked or registered.
    /// Wakes up to `n` parked waiters (and as many async ones).
    #[inline(always)]
    pub(crate) fn notify(&self, s: &Sleepers, n: u32, on_woke: &impl OnWake) {
        loom_sc_fence();
        // `SHARED_SLOW` is for light stores only: after a `SeqCst` write or fence the
        // symmetric protocol needs no second look (see the notes).
        let state = self.state.load(Ordering::SeqCst); // (2)
        if state & !SHARED_SLOW != 0 {
            self.wake_slow(s, n, on_woke, state);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_slow(&self, s: &Sleepers, n: u32, on_woke: &impl OnWake, first: u32) {
        let tag = epoch_tag(s);
        if first & WOKEN != 0 && first & EPOCH_MASK == tag {
            // A wake on its way, by the first look: the mark of our skip is our second
            // look, a `SeqCst` read-modify-write that orders our store before it and
            // reads the latest state, so it needs no fence before it (see "A wake on
            // its way"). If the bit has gone, the full second look below decides.
            let skipped = self
                .state
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |st| {
                    (st & WOKEN != 0 && st & EPOCH_MASK == tag).then_some(st | SKIPPED)
                });
            if let Ok(state) = skipped {
                self.wake_async(s, n, state);
                return;
            }
        }
        let mut state = self.second_look(s, tag);
        let mut wake_parked = state & PARKED_MASK != 0;
        if state & WOKEN != 0 {
            // A wake is on its way to every counted waiter: say that we skipped
            // ours, in a read-modify-write that still finds the bit (see "A wake on
            // its way"); if it is gone, go on with the state as it is now.
            match self
                .state
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |st| {
                    (st & WOKEN != 0).then_some(st | SKIPPED)
                }) {
                Ok(_) => wake_parked = false,
                Err(now) => {
                    state = now;
                    wake_parked = state & PARKED_MASK != 0;
                }
            }
        }
        if wake_parked {
            self.wake_parked(s, n, state);
            on_woke.parked_woken();
        }
        self.wake_async(s, n, state);
    }

    /// The notifier's second look at `state`, after a full fence, with the
    /// bookkeeping it owes on the way: a count left by an ancestor process goes (and
    /// its sleepers are woken to announce themselves again), and the run of idle
    /// notifies on a `FENCED` cell is counted or ended. Returns the state to act on.
    fn second_look(&self, s: &Sleepers, tag: u32) -> u32 {
        // Whatever the first look found, order our store before a second look with a
        // full fence: a waiter may be announcing itself right now without
        // `membarrier` (in another process, on a `FENCED` cell, or relying on an
        // announcement that this first look saw), and only the second look is sure
        // to see it (see "Who may skip the barrier" in the notes).
        fence(Ordering::SeqCst);
        let mut state = self.state.load(Ordering::SeqCst);
        if state & PARKED_MASK != 0 && state & EPOCH_MASK != tag {
            // Counted under the tag of an ancestor process: none of those waiters
            // runs here, but the thread that called `fork()` may have been one of
            // them (a predicate or a signal handler that forked during its park). The
            // count goes, and a wake of every sleeper makes such a thread re-check
            // and announce itself under this process's tag.
            let repaired = state & !(PARKED_MASK | EPOCH_MASK | WOKEN | SKIPPED);
            state = match self.state.compare_exchange(
                state,
                repaired,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    park::wake(&s.queue, &self.value, park::ALL, s.shared);
                    repaired
                }
                Err(now) => now,
            };
        }
        if state & !IDLE_MASK == FENCED {
            // Nobody parked or armed: one more such notify in a row, and after
            // enough of them back to the light path. Fails (harmlessly) if a waiter
            // announced itself since our load.
            let _ = self.state.compare_exchange(
                state,
                fenced_after_idle_notify(state),
                Ordering::SeqCst,
                Ordering::Relaxed,
            );
        } else if state & PARKED_MASK != 0 && state & IDLE_MASK != 0 {
            // The run of idle notifies ends: the waiters still park.
            state = self.state.fetch_and(!IDLE_MASK, Ordering::Relaxed) & !IDLE_MASK;
        }
        state
    }

    /// Wakes up to `n` of the parked waiters that `state` counts: by a wake tree
    /// where it helps, else by one wake that, when it is for every sleeper, first
    /// marks the wake as on its way (`WOKEN`, see "A wake on its way").
    fn wake_parked(&self, s: &Sleepers, n: u32, state: u32) {
        let count = state & PARKED_MASK;
        if n == park::ALL && !s.shared && count > RELAY_FANOUT && trees_help() {
            // A wake tree: wake a few, who wake the rest, while this thread goes on
            // taking turns beside them (see "A wake tree").
            s.relay.fetch_add(count - RELAY_FANOUT, Ordering::SeqCst);
            self.relay_wake(s, RELAY_FANOUT);
            while self.relay(s) {}
            return;
        }
        s.stamp_wake();
        // A wake of every sleeper reaches every waiter counted now that sleeps: the
        // bit says so to the notifies that follow, which then make no call (see "A
        // wake on its way"). A change since our look fails the exchange.
        let claimed = n == park::ALL
            && counts_every_sleeper(s)
            && self
                .state
                .compare_exchange(
                    state,
                    (state | WOKEN) & !SKIPPED,
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok();
        let woke = park::wake(&s.queue, &self.value, n, s.shared);
        if claimed && woke < count as usize {
            // A counted waiter was not asleep yet: the bit goes, and if a notify
            // skipped its wake meanwhile, one more wake covers it.
            let before = self.state.fetch_and(!(WOKEN | SKIPPED), Ordering::SeqCst);
            if before & SKIPPED != 0 {
                park::wake(&s.queue, &self.value, park::ALL, s.shared);
            }
        }
    }

    /// Wakes the armed async waiters that `state` says there are (`n` of them, or
    /// all). A process-shared cell never arms a waker (its entries refuse async
    /// waits), so the bit there can only come from another process: its registry,
    /// with pointers into that process's memory, is never touched.
    fn wake_async(&self, s: &Sleepers, n: u32, state: u32) {
        if state & ASYNC_REGISTERED != 0 && !s.shared {
            s.registry
                .wake(&self.state, if n == 1 { 1 } else { usize::MAX });
        }
    }

    // ---- The park half ----

    /// One park: announce, barrier, re-check, sleep, withdraw. `Ok(v)` when the
    /// re-check found the predicate true (the waiter did not sleep).
    ///
    /// Inline, generic over the predicate: a wait that parks without the climb runs
    /// it in its caller's own body (`ladder::park::without_climb`), and a waiter that
    /// slept long comes back to the few lines of that body instead of a chain of
    /// frames its sleep took from the caches. What an idle cell's park does not
    /// need (a count left by a fork, the barrier, a wake tree's turns) is a call
    /// out of line.
    #[inline(always)]
    pub(crate) fn park<P: FnMut(u32) -> bool + ?Sized>(
        &self,
        s: &Sleepers,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<u32, Parked> {
        // From here the waiter is counted: the guard withdraws it however this
        // function ends, a panic of the barrier, the predicate or the sleep included
        // (a count left behind would send every later notify to the slow path and
        // keep `FENCED` set for ever).
        stamp::mark(Point::Park);
        let tag = epoch_tag(s);
        let old = self.announce(s, tag); // (3)
        let counted = Announced {
            line: self,
            tag,
            // What a lone waiter's withdrawal most likely finds: its own
            // announcement, and the mark of the notify that woke it.
            guess: announced(old, tag) | WOKEN,
        };
        if replaces_foreign_count(old, tag) {
            self.wake_foreign_sleepers(s);
        }
        if self.barrier_unless_fenced(s, old) {
            // Still counted: the bit is set while our announcement stands.
            self.state.fetch_or(FENCED, Ordering::SeqCst);
        }
        if old & PARKED_MASK >= RELAY_FANOUT && !s.shared {
            ask_whether_trees_help();
        }
        let v = self.value.load(Ordering::SeqCst); // (4)
        let parked = if pred(v) {
            Ok(v)
        } else if epoch_tag(s) != tag {
            // The predicate forked, and this is the child: the announcement counts
            // this thread under the parent's tag, which this process's notifiers
            // drop. Announce again under this process's own.
            Err(Parked::Changed)
        } else {
            stamp::mark(Point::Rechecked);
            let slept = park::wait(&s.queue, &self.value, v, deadline_ns, s.shared);
            if slept == Parked::Woken {
                // Before anything else (the predicate may panic): a wake tree may
                // count on this waiter to wake the next ones.
                let _ = self.relay(s);
            }
            Err(slept)
        };
        counted.withdraw();
        parked
    }

    /// After an announcement that replaced a count an ancestor process left: a
    /// thread of that count may be asleep here (it forked during its park), and
    /// its count is gone, so it must re-check and announce itself again (see
    /// "Counts left by a fork").
    #[cold]
    #[inline(never)]
    fn wake_foreign_sleepers(&self, s: &Sleepers) {
        park::wake(&s.queue, &self.value, park::ALL, s.shared);
    }

    /// The announcement (3) of a parking waiter under the fork tag `tag`: a
    /// `SeqCst` read-modify-write that counts it; returns the state before it.
    ///
    /// The compare-exchanges start from a guess, the state of an idle cell between
    /// two parks (nobody counted; `FENCED`, or `SHARED_SLOW` on a cell whose
    /// notifiers always fence), not from a load: after a long sleep the line is no
    /// longer in this core's cache, and a load would fetch it shared before the
    /// exchange fetched it again to write. A wrong guess costs one exchange that
    /// fails, with the line then in this core's cache for the next; the exchanges
    /// that succeed are those of a plain read-modify-write loop, so nothing of the
    /// protocol changes.
    #[inline(always)]
    fn announce(&self, s: &Sleepers, tag: u32) -> u32 {
        let mut st = if s.notifiers_fence() {
            SHARED_SLOW
        } else {
            FENCED
        };
        loop {
            match self.state.compare_exchange_weak(
                st,
                announced(st, tag),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(old) => return old,
                Err(now) => st = now,
            }
        }
    }

    /// A turn in a wake tree (see "A wake tree"), a woken waiter's or the notifier's:
    /// takes up to [`RELAY_FANOUT`] of the sleepers left to wake and wakes them, or
    /// every sleeper if it takes the last ones. Returns whether some may be left for
    /// another turn.
    #[inline(always)]
    fn relay(&self, s: &Sleepers) -> bool {
        let left = s.relay.load(Ordering::Relaxed);
        left > 0 && self.relay_from(s, left)
    }

    /// [`relay`](Self::relay) once its load found `left` sleepers to wake.
    #[cold]
    #[inline(never)]
    fn relay_from(&self, s: &Sleepers, mut left: u32) -> bool {
        while left > 0 {
            let take = left.min(RELAY_FANOUT);
            match s.relay.compare_exchange_weak(
                left,
                left - take,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) if left == take => {
                    park::wake(&s.queue, &self.value, park::ALL, s.shared);
                    return false;
                }
                Ok(_) => {
                    self.relay_wake(s, take);
                    return true;
                }
                Err(now) => left = now,
            }
        }
        false
    }

    /// Wakes `k` sleepers of a wake tree; if fewer were asleep, nobody may be left to
    /// go on with the tree: the sleepers left to wake are taken, and every sleeper is
    /// woken.
    fn relay_wake(&self, s: &Sleepers, k: u32) {
        s.stamp_wake();
        if park::wake(&s.queue, &self.value, k, s.shared) < k as usize {
            s.relay.swap(0, Ordering::SeqCst);
            park::wake(&s.queue, &self.value, park::ALL, s.shared);
        }
    }

    /// The waiter's barrier after its announcement (3), which returned `old`: none
    /// when `old` has `FENCED` (see "Who may skip the barrier"), else the barrier.
    /// Returns whether it ran the barrier: then the caller marks the cell `FENCED`
    /// for those that come after it, while its own announcement still stands.
    #[inline(always)]
    fn barrier_unless_fenced(&self, s: &Sleepers, old: u32) -> bool {
        loom_sc_fence();
        if s.notifiers_fence() {
            // Every notifier of such a cell orders its write (1) before its load (2)
            // with a `SeqCst` read-modify-write or fence (a light store goes to the
            // fenced slow path by the `SHARED_SLOW` bit), and the announcement (3) is
            // a `SeqCst` read-modify-write before the `SeqCst` re-check (4): no
            // barrier is needed (the fence-to-access rule of the `SeqCst` total
            // order). `FENCED`, which would send the notifies that find the waiter
            // awake to the slow path to count themselves, stays off.
            return false;
        }
        let run = old & FENCED == 0;
        if run {
            self.waiter_barrier(s);
        } else {
            // The registration the first barrier would have settled (a new cell
            // starts `FENCED` and may never run one): a no-op once it is settled.
            park::prepare();
        }
        run
    }

    /// The heavy half of the barrier between announcing a waiter in `state` and the
    /// re-check of the value (see "Notes about memory ordering"). A process-shared
    /// cell never gets here (its notifiers always fence, by its `SHARED_SLOW` bit),
    /// which also keeps a child of `fork()` that waits on one off the one-time
    /// registration, whose lock another thread of the parent may have held at the
    /// fork.
    #[cold]
    #[inline(never)]
    fn waiter_barrier(&self, s: &Sleepers) {
        debug_assert!(!s.shared, "a shared cell's waiters run no barrier");
        park::waiter_barrier();
    }

    /// The async waiter's announcement: arms `waker` in the registry, which sets
    /// `ASYNC_REGISTERED` with a `SeqCst` read-modify-write (the (3) of an async
    /// waiter), then runs the same barrier as a parking thread, skipped on a `FENCED`
    /// cell as a park's is (see "Async waiters" in the notes). The caller then
    /// re-checks the value with a `SeqCst` load, its (4).
    pub(crate) fn arm_async(&self, s: &Sleepers, key: &mut Option<usize>, waker: &Waker) {
        let old = s.registry.arm(&self.state, key, waker); // (3)
        if self.barrier_unless_fenced(s, old) {
            // Only while our slot is still armed, under the registry's lock: a notify
            // may have taken our waker during the barrier, and with it the
            // announcement that kept `ASYNC_REGISTERED` set.
            let k = key.expect("arm allocates a slot");
            s.registry.set_while_armed(&self.state, k, FENCED);
        }
    }

    /// The announcement of a waiter over several words ([`wait_any`]), which runs one
    /// barrier for all of them: arms `waker` as [`arm_async`](Self::arm_async) does,
    /// without the barrier. Returns whether this cell needs the caller's barrier
    /// (not on a parker's cell, nor on a `FENCED` one); the caller then runs it and
    /// calls [`fenced_by_caller`](Self::fenced_by_caller).
    ///
    /// [`wait_any`]: crate::atomic::wait_any
    pub(crate) fn arm_async_without_barrier(
        &self,
        s: &Sleepers,
        key: &mut Option<usize>,
        waker: &Waker,
    ) -> bool {
        debug_assert!(!s.shared, "no waker is armed on a shared cell");
        let old = s.registry.arm(&self.state, key, waker); // (3)
        if s.parker {
            return false;
        }
        if old & FENCED != 0 {
            // As in `barrier_unless_fenced`: the registration a barrier would settle.
            park::prepare();
            return false;
        }
        true
    }

    /// After the barrier that the caller of
    /// [`arm_async_without_barrier`](Self::arm_async_without_barrier) ran for this
    /// cell: marks it `FENCED` while the slot `key` is still armed.
    pub(crate) fn fenced_by_caller(&self, s: &Sleepers, key: usize) {
        s.registry.set_while_armed(&self.state, key, FENCED);
    }

    /// Releases an async waiter's slot (`forward`: pass an unconsumed `notify_one`
    /// on to another armed waiter).
    pub(crate) fn disarm_async(&self, s: &Sleepers, key: usize, forward: bool) {
        s.registry.disarm(&self.state, key, forward);
    }
}

/// A parked waiter's announcement in `state` under the fork tag `tag`, withdrawn
/// where the park returns ([`withdraw`](Self::withdraw)), or on drop if it unwinds:
/// `Relaxed`, it orders nothing (a notifier that still sees the old count makes one
/// unneeded wake, no more).
struct Announced<'a> {
    line: &'a MonitorLine,
    tag: u32,
    /// The state the withdrawal's first compare-exchange expects, instead of a load
    /// (as in [`MonitorLine::announce`]: the notifier that woke us last wrote the
    /// line, and a load would fetch it from the notifier's cache only for the
    /// exchange to fetch it again).
    guess: u32,
}

impl Announced<'_> {
    /// The withdrawal where the park returns: in the park's own body, where the
    /// drop on an unwind is a call of its own.
    #[inline(always)]
    fn withdraw(self) {
        self.take_count();
        std::mem::forget(self);
    }

    /// One less in the count. The last one out takes the count's fork tag with it;
    /// a count under another tag (or none left) is not ours to take from.
    #[inline(always)]
    fn take_count(&self) {
        let (state, tag) = (&self.line.state, self.tag);
        let mut st = self.guess;
        let mut guessed = true;
        loop {
            let Some(new) = withdrawn(st, tag) else {
                if guessed {
                    // The guess says there is nothing to take: only the state
                    // itself may say so.
                    st = state.load(Ordering::Relaxed);
                    guessed = false;
                    continue;
                }
                return;
            };
            match state.compare_exchange_weak(st, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => {
                    st = now;
                    guessed = false;
                }
            }
        }
    }
}

impl Drop for Announced<'_> {
    /// The withdrawal of a park that unwinds (a panic of the barrier, the predicate
    /// or the sleep).
    fn drop(&mut self) {
        self.take_count();
    }
}

/// A waiter that parks beside [`RELAY_FANOUT`] others: a wake of every sleeper here
/// may now ask whether a tree helps, and the answer's one-time reading
/// ([`trees_help`]) is made on this thread, on its way to sleep, not on the
/// notifier's wake.
#[cold]
#[inline(never)]
fn ask_whether_trees_help() {
    let _ = trees_help();
}

/// Whether a wake tree can shorten a wake of every sleeper here: its turns run at
/// once only on CPUs of their own, the notifier's and one per sleeper it wakes at
/// least. With fewer (a 2-CPU machine), the woken wait for a CPU anyway and each
/// turn's system call only adds to the last one's wait (the measurement is in
/// `docs/design-notes.md`). The count is read once per process, by the first waiter
/// that parks beside [`RELAY_FANOUT`] others (`MonitorLine::park`).
/// The loom model takes the single marked wake unless a model asks for trees
/// (`sys::wake_trees`), so that both paths are checked.
#[inline]
fn trees_help() -> bool {
    crate::sys::wake_trees(|| crate::policy::usable_cpus() > RELAY_FANOUT as usize + 1)
}

/// Whether every thread asleep on this cell's value is in its parked count, so that a
/// wake that woke as many as the count woke them all (see "A wake on its way"). Not
/// in a child of `fork()` (a thread that forked from a signal handler during its park
/// sleeps on in the child, under a count the child drops), not on a process-shared
/// cell (the same thread may sleep in a parent and a child under one count), and
/// not where the platform does not tell a child of `fork()` apart (only Linux and
/// the loom model do).
#[inline]
fn counts_every_sleeper(s: &Sleepers) -> bool {
    cfg!(any(target_os = "linux", mwait_loom)) && !s.shared && park::fork_generation() == 0
}

/// `state`'s tag for the parked waiters of this process (0 for a process-shared cell,
/// whose waiters are of several processes by design).
#[inline(always)]
fn epoch_tag(s: &Sleepers) -> u32 {
    if s.shared {
        0
    } else {
        (park::fork_generation() << EPOCH_SHIFT) & EPOCH_MASK
    }
}

#[cfg(all(test, target_os = "linux", not(mwait_loom)))]
mod tests;
