//! What mwait keeps per thread and gives back when the thread exits, in one
//! thread-local.
//!
//! Each thread-local with a destructor costs a thread a registration on its first
//! use (glibc's `__cxa_thread_atexit_impl`: an allocation, the dynamic linker's lock
//! and a search of the loaded objects). A new thread whose first wait is an idle
//! `block_on` runs that code cold. It needs both the `block_on` slot (before the
//! park) and the wait statistics' block (after the wake-up); kept apart they would
//! register twice, where futures-lite's `block_on` registers once. One thread-local
//! for both registers once (`docs/clients.md`, "A fresh thread's first idle
//! `block_on`").

use crate::ladder::stats::ThreadBlock;
use crate::parker::BlockOnSlot;
use std::cell::RefCell;

/// The state a thread keeps from one wait to the next.
pub(crate) struct ThreadState {
    /// The block the thread's waits are counted in (`ladder/stats.rs`).
    pub(crate) stats: ThreadBlock,
    /// The parker and waker of the thread's `block_on` (`parker.rs`).
    pub(crate) block_on: BlockOnSlot,
}

std::thread_local! {
    pub(crate) static THREAD: ThreadState = const {
        ThreadState {
            stats: ThreadBlock::new(),
            block_on: RefCell::new(None),
        }
    };
}
