//! The loom model's primitives: loom's atomics and mutex, a model yield for the spin
//! hint, and the constants that keep the model's state space small.

pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
pub(crate) use std::sync::atomic::compiler_fence;

/// Wraps functions that are `const fn` in the real build and plain `fn` in the loom
/// model, whose atomics and mutexes have no `const` constructors.
macro_rules! const_fn_unless_loom {
    ($($(#[$meta:meta])* $vis:vis fn $name:ident ($($args:tt)*) -> $ret:ty $body:block)*) => {
        $($(#[$meta])* $vis fn $name($($args)*) -> $ret $body)*
    };
}
pub(crate) use const_fn_unless_loom;

/// `N` values of `$value`, built at run time (loom's atomics have no `const`
/// constructors).
macro_rules! array_of {
    ($value:expr; $n:expr) => {
        core::array::from_fn::<_, { $n }, _>(|_| $value)
    };
}
pub(crate) use array_of;

/// A `static` made afresh for each execution of a model, whose objects cannot
/// outlive an execution.
macro_rules! process_static {
    ($(#[$meta:meta])* static $name:ident: $ty:ty = $init:expr;) => {
        loom::lazy_static! {
            $(#[$meta])* static ref $name: $ty = $init;
        }
    };
}
pub(crate) use process_static;

/// Items of the unit tests that run on real threads: none in the model.
macro_rules! thread_tests {
    ($($item:item)*) => {};
}
pub(crate) use thread_tests;

/// Items that only the loom models use (`crate::tests` and the accessors its models
/// read): compiled for `cargo test` in this world.
macro_rules! model_tests {
    ($($item:item)*) => {
        $(#[cfg(test)] $item)*
    };
}
pub(crate) use model_tests;

/// The most loads a spin round makes between two looks at the clock: one, the model
/// needs only to see the path.
pub(crate) const SPIN_ROUND_LOADS_CAP: u32 = 1;

/// How many notifies in a row must find a `FENCED` cell with nobody parked before the
/// last of them clears the bit: 2 in the model, so that its few stores both count
/// (the idle bits) and clear, racing a waiter's announcement.
pub(crate) const FENCED_IDLE_NOTIFIES: u32 = 2;

/// Sleepers a notifier wakes itself in a wake tree (`protocol.rs`, "A wake tree"):
/// one in the model, so that two waiters make a tree.
pub(crate) const RELAY_FANOUT: u32 = 1;

/// Buckets of the atomic waiter table: one, so that every two words collide.
pub(crate) const TABLE_BUCKETS: usize = 1;

/// One step of a busy-wait: a model yield.
#[inline]
pub(crate) fn spin_hint() {
    loom::thread::yield_now();
}

/// Gives the CPU back to the scheduler for one round: a model yield.
#[inline]
pub(crate) fn yield_now() {
    loom::thread::yield_now();
}

/// Loom models `SeqCst` loads, stores and read-modify-writes as `AcqRel` (its
/// documented limitation), which would report false lost wake-ups in the protocol's
/// store/load pair. It does model `fence(SeqCst)`, so the model adds one between
/// the two halves of each pair.
#[inline(always)]
pub(crate) fn loom_sc_fence() {
    fence(Ordering::SeqCst);
}

/// A mutex whose poisoning is ignored, as the real build's.
#[derive(Debug)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

/// The guard of [`Mutex`].
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// Locks (a model never poisons).
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
}
