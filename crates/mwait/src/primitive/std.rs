//! The real build's primitives: core's atomics, std's mutex, the CPU's spin hint.

pub(crate) use core::sync::atomic::{compiler_fence, fence, AtomicU32, AtomicU64, Ordering};

/// Wraps functions that are `const fn` in the real build (and plain `fn` in the loom
/// model, whose atomics and mutexes have no `const` constructors).
macro_rules! const_fn_unless_loom {
    ($($(#[$meta:meta])* $vis:vis fn $name:ident ($($args:tt)*) -> $ret:ty $body:block)*) => {
        $($(#[$meta])* $vis const fn $name($($args)*) -> $ret $body)*
    };
}
pub(crate) use const_fn_unless_loom;

/// `N` values of `$value`, built in a constant context (`$value` a constant
/// expression here; the loom world builds its array at run time).
macro_rules! array_of {
    ($value:expr; $n:expr) => {
        [const { $value }; $n]
    };
}
pub(crate) use array_of;

/// A `static` that lives as long as the process: a plain `static` with a constant
/// initialiser (the loom world makes one per execution of a model).
macro_rules! process_static {
    ($(#[$meta:meta])* static $name:ident: $ty:ty = $init:expr;) => {
        $(#[$meta])* static $name: $ty = $init;
    };
}
pub(crate) use process_static;

/// Items of the unit tests that run on real threads (the simulated monitor, the
/// ladder's test entry): compiled for `cargo test`; the loom world leaves them out.
macro_rules! thread_tests {
    ($($item:item)*) => {
        $(#[cfg(test)] $item)*
    };
}
pub(crate) use thread_tests;

/// Items that only the loom models use: none in this world.
macro_rules! model_tests {
    ($($item:item)*) => {};
}
pub(crate) use model_tests;

/// The most loads a spin round makes between two looks at the clock: unbounded (the
/// tier's own count).
pub(crate) const SPIN_ROUND_LOADS_CAP: u32 = u32::MAX;

/// How many notifies in a row must find a `FENCED` cell with nobody parked before the
/// last of them clears the bit (`protocol.rs`, "A cell that parks often"): 32 (the
/// rule is there; the count has five bits).
pub(crate) const FENCED_IDLE_NOTIFIES: u32 = 32;

/// Sleepers a notifier wakes itself when it wakes every sleeper of a cell with more
/// parked, and that each woken sleeper then wakes in turn (`protocol.rs`, "A wake
/// tree"): a binary tree, so the last of N sleepers wakes after about 2·log2(N)
/// wakes one after the other in the kernel instead of N.
pub(crate) const RELAY_FANOUT: u32 = 2;

/// Buckets of the atomic waiter table (`atomic/table.rs`): 256 of 128 bytes, 32 KiB.
pub(crate) const TABLE_BUCKETS: usize = 256;

/// One step of a busy-wait: PAUSE on x86, YIELD on Arm.
#[inline]
pub(crate) fn spin_hint() {
    core::hint::spin_loop();
}

/// Gives the CPU back to the scheduler for one round.
#[inline]
pub(crate) fn yield_now() {
    std::thread::yield_now();
}

/// Nothing: the real build relies on the `SeqCst` accesses of the protocol's
/// store/load pairs alone, which the C++/Rust memory model guarantees to be enough
/// (a single total order over all four accesses). The loom world adds a fence here.
#[inline(always)]
pub(crate) fn loom_sc_fence() {}

/// A mutex whose poisoning is ignored: its users keep their data consistent at every
/// point a panic could leave it (a few field writes per update).
#[derive(Debug)]
pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

/// The guard of [`Mutex`].
pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Mutex<T> {
        Mutex(std::sync::Mutex::new(value))
    }

    /// Locks, ignoring poison.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
