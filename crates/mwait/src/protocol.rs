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

use crate::primitive::{const_fn_unless_loom, AtomicU32, Ordering};
use crate::sys::park;
use sleepers::Sleepers;
use state::{EPOCH_MASK, EPOCH_SHIFT, FENCED, PARKED_MASK, SHARED_SLOW};

mod notify;
mod parking;
pub(crate) mod sleepers;
mod state;
mod tree;

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
