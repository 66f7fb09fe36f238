//! The synchronization primitives the protocol uses, swapped for loom's under
//! `cfg(loom)` so that the model checker sees every access (the crossbeam-utils
//! pattern): the atomics, the mutex of the async registry, the spin hint, and the
//! constructors that are `const` outside the model (loom's are not).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, Ordering};
#[cfg(loom)]
pub(crate) use std::sync::atomic::compiler_fence;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{compiler_fence, fence, AtomicU32, Ordering};

/// Wraps functions that are `const fn` in the real build and plain `fn` in the loom
/// model, whose atomics and mutexes have no `const` constructors.
#[cfg(not(loom))]
macro_rules! const_fn_unless_loom {
    ($($(#[$meta:meta])* $vis:vis fn $name:ident ($($args:tt)*) -> $ret:ty $body:block)*) => {
        $($(#[$meta])* $vis const fn $name($($args)*) -> $ret $body)*
    };
}
#[cfg(loom)]
macro_rules! const_fn_unless_loom {
    ($($(#[$meta:meta])* $vis:vis fn $name:ident ($($args:tt)*) -> $ret:ty $body:block)*) => {
        $($(#[$meta])* $vis fn $name($($args)*) -> $ret $body)*
    };
}
pub(crate) use const_fn_unless_loom;

/// The most loads a spin round makes between two looks at the clock: one in the
/// model, which needs only to see the path, unbounded (the tier's own count) outside.
pub(crate) const SPIN_ROUND_LOADS_CAP: u32 = if cfg!(loom) { 1 } else { u32::MAX };

/// How many notifies in a row must find a `FENCED` cell with nobody parked before the
/// last of them clears the bit (`protocol.rs`, "A cell that parks often"): 32 (the
/// rule is there; the count has five bits), and 2 in the model, so that its few
/// stores both count (the idle bits) and clear, racing a waiter's announcement.
pub(crate) const FENCED_IDLE_NOTIFIES: u32 = if cfg!(loom) { 2 } else { 32 };

/// One step of a busy-wait: PAUSE on x86, YIELD on Arm, a model yield under loom.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Gives the CPU back to the scheduler for one round.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// Loom models `SeqCst` loads, stores and read-modify-writes as `AcqRel` (its
/// documented limitation), which would report false lost wake-ups in the protocol's
/// store/load pair. It does model `fence(SeqCst)`. So the loom build adds a SeqCst
/// fence between the two halves of each pair; the real build relies on the SeqCst
/// accesses alone, which the C++/Rust memory model guarantees to be enough (a single
/// total order over all four accesses), and which cost one `xchg` on x86.
#[inline(always)]
pub(crate) fn loom_sc_fence() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}

/// A mutex whose poisoning is ignored: its users keep their data consistent at every
/// point a panic could leave it (a few field writes per update).
#[derive(Debug)]
pub(crate) struct Mutex<T> {
    #[cfg(not(loom))]
    inner: std::sync::Mutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

/// The guard of [`Mutex`].
#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;
/// The guard of [`Mutex`].
#[cfg(loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    const_fn_unless_loom! {
        pub(crate) fn new(value: T) -> Mutex<T> {
            Mutex {
                #[cfg(not(loom))]
                inner: std::sync::Mutex::new(value),
                #[cfg(loom)]
                inner: loom::sync::Mutex::new(value),
            }
        }
    }

    /// Locks, ignoring poison.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(loom))]
        {
            self.inner.lock().unwrap_or_else(|e| e.into_inner())
        }
        #[cfg(loom)]
        {
            self.inner.lock().unwrap()
        }
    }
}
