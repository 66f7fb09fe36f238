//! The self-test's helper thread and the mailbox it shares with the waiter: the
//! stores of check (a) and the watchdog of checks (b) and (c).

use super::{current_cpu, pause};
use crate::primitive::AtomicU32;
use crate::sys::clock::now_ns;
use crate::sys::ThreadCpus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A line of its own for the armed word, so that no neighbour's write ends a wait.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Line(pub(super) AtomicU32);

/// What the waiter and the helper share, and the protocol of one try `id`:
///
/// 1. the waiter writes `armed(id)` to the word and the try's parameters, then
///    `request = id` (Release);
/// 2. the helper writes `acked = id` (Release);
/// 3. for a store try, the waiter, once it sees the acknowledgement, writes
///    `begun_ns`, then `begun = id` (Release), and waits; the helper, if it saw that
///    within `slack_ns`, stores `armed(id) + 1` `store_after_ns` after `begun_ns`
///    (a waiter that saw no acknowledgement voids the try by storing
///    `armed(id) + 1` itself). For a no-store try the waiter
///    does not wait for the helper, which stores (the watchdog) `store_after_ns` after
///    its acknowledgement;
/// 4. the waiter ends the try with its own compare-exchange `armed(id)` to
///    `armed(id) + 1`; when that fails the helper's store won, and its timestamps
///    follow (`stored = id`, Release).
///
/// The helper's stores are compare-exchanges from `armed(id)`, so a store meant for
/// one try can never land in another.
#[derive(Default)]
pub(super) struct Mailbox {
    pub(super) word: Line,
    pub(super) request: AtomicU64,
    pub(super) store_after_ns: AtomicU64,
    pub(super) from_begin: AtomicBool,
    pub(super) waiter_cpu: AtomicUsize,
    pub(super) slack_ns: AtomicU64,
    pub(super) acked: AtomicU64,
    pub(super) begun_ns: AtomicU64,
    pub(super) begun: AtomicU64,
    pub(super) store_t0_ns: AtomicU64,
    pub(super) store_t1_ns: AtomicU64,
    pub(super) stored: AtomicU64,
    pub(super) skipped: AtomicU64,
    pub(super) apart: AtomicBool,
    pub(super) quit: AtomicBool,
}

/// The value the word holds during try `id`.
pub(super) fn armed(id: u64) -> u32 {
    (id as u32).wrapping_mul(2)
}

impl Mailbox {
    /// The helper thread: serves each try announced until `quit`.
    pub(super) fn serve(&self) {
        let cpus = ThreadCpus::of_this_thread();
        let mut apart = false;
        let mut served = 0;
        let mut round = 0;
        while !self.quit.load(Ordering::Acquire) {
            let id = self.request.load(Ordering::Acquire);
            if id == served {
                // Tries come back to back: spin, unless this thread may be keeping
                // the waiter off a shared CPU.
                if apart {
                    core::hint::spin_loop();
                } else {
                    pause(&mut round);
                }
                continue;
            }
            served = id;
            // Run on another CPU than the waiter's, where the process has one, so
            // that the scheduler cannot keep the two threads on one CPU.
            let waiter_cpu = self.waiter_cpu.load(Ordering::Relaxed);
            if !apart || current_cpu() == Some(waiter_cpu) {
                apart = cpus.as_ref().is_some_and(|c| c.move_off(waiter_cpu));
                self.apart.store(apart, Ordering::Relaxed);
            }
            if let Some((t0, t1)) = self.serve_one(id, apart) {
                self.store_t0_ns.store(t0, Ordering::Relaxed);
                self.store_t1_ns.store(t1, Ordering::Relaxed);
                self.stored.store(id, Ordering::Release);
            }
        }
    }

    /// Serves try `id`: its store's timestamps, or `None` when the waiter ended the
    /// try first (or the test is over).
    fn serve_one(&self, id: u64, apart: bool) -> Option<(u64, u64)> {
        let value = armed(id);
        let store_after_ns = self.store_after_ns.load(Ordering::Relaxed);
        let from_begin = self.from_begin.load(Ordering::Relaxed);
        let ack_ns = now_ns();
        self.acked.store(id, Ordering::Release);
        let live =
            || self.word.0.load(Ordering::Relaxed) == value && !self.quit.load(Ordering::Acquire);
        let mut at = ack_ns + store_after_ns;
        if from_begin {
            // Spin for the waiter's start (on a CPU of its own; on a shared one, yield
            // now and then after a while, so that the waiter can run).
            let mut round = 0;
            while self.begun.load(Ordering::Acquire) != id {
                if !live() {
                    return None;
                }
                if apart || now_ns() < at {
                    core::hint::spin_loop();
                } else {
                    pause(&mut round);
                }
            }
            let begun_ns = self.begun_ns.load(Ordering::Relaxed);
            // Seen late, this thread was not running when the wait began, and may
            // not be when it should store: no store, which voids the try.
            if now_ns() > begun_ns + self.slack_ns.load(Ordering::Relaxed) {
                self.skipped.store(id, Ordering::Release);
                return None;
            }
            at = begun_ns + store_after_ns;
        }
        // A store try never yields from here to the store: on a loaded machine a
        // yield can cost a whole time slice. The watchdog of a no-store try needs no
        // precision, and yields so as not to take a CPU from others for nothing.
        let mut round = 0;
        while now_ns() < at {
            if !live() {
                return None;
            }
            if from_begin {
                core::hint::spin_loop();
            } else {
                pause(&mut round);
            }
        }
        let t0 = now_ns();
        let ok = self
            .word
            .0
            .compare_exchange(value, value + 1, Ordering::Release, Ordering::Relaxed)
            .is_ok();
        let t1 = now_ns();
        ok.then_some((t0, t1))
    }
}
