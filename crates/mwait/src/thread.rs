//! What mwait keeps per thread and gives back when the thread exits, in one
//! thread-local.
//!
//! Each thread-local with a destructor costs a thread a registration on its first
//! use (glibc's `__cxa_thread_atexit_impl`: an allocation, the dynamic linker's lock
//! and a search of the loaded objects), which a new thread runs cold. A thread that
//! both runs `block_on` and spins needs the `block_on` slot and the wait statistics'
//! block; one thread-local for both registers once. A thread whose waits all park
//! (a raw `Parker`, an idle `block_on`) never needs the block: the park tier's
//! endings count without it (`ladder/stats.rs`), so its `Parker::park` registers
//! nothing, and its `block_on` once, as futures-lite's does.

use crate::ladder::stats::threads::ThreadBlock;
use crate::parker::BlockOnSlot;
use std::cell::RefCell;

/// The state a thread keeps from one wait to the next.
pub(crate) struct ThreadState {
    /// The block the thread's waits are counted in (`ladder/stats/threads.rs`).
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
