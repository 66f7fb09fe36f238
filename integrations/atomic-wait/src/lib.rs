//! A drop-in for the `atomic-wait` crate: the same three functions with the same
//! signatures, implemented on [`mwait::atomic`], so that a program or a library built
//! on `atomic-wait` (a lock, a channel, a condition variable) takes mwait's waits
//! through its `Cargo.toml` (`atomic-wait = { package = "mwait-atomic-wait", version =
//! "1.1.0" }`, or for a whole dependency tree a `[patch.crates-io]`: the README has
//! the lines to paste).
//!
//! What changes for such a program: a wake of a word nobody is parked on costs one
//! load and no system call, and a wait spins briefly and watches the word's line in
//! hardware (where the CPU offers it) before it sleeps. What does not: a wait still
//! ends only when the word holds another value or a wake reaches it, and `wake_one`
//! still wakes at most one parked thread of that word.
//!
//! `wait` returns, as `atomic-wait`'s does, when the word holds another value or a
//! `wake_one`/`wake_all` of it finds the waiter asleep, changed value or not. The one
//! difference: a wake that comes in the first tens of microseconds of a wait, while
//! the waiter still spins or watches the line instead of sleeping, ends it only if
//! the word changed.
//!
//! # Examples
//!
//! ```
//! use atomic_wait::{wait, wake_one};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! let a = AtomicU32::new(0);
//! std::thread::scope(|s| {
//!     s.spawn(|| {
//!         a.store(1, Ordering::Relaxed);
//!         wake_one(&a);
//!     });
//!     while a.load(Ordering::Relaxed) == 0 {
//!         wait(&a, 0);
//!     }
//! });
//! ```

use std::sync::atomic::AtomicU32;

/// If the value is `value`, waits until woken up: by a wake of this atomic, or by
/// its change to another value. Like `atomic-wait`'s, it may return spuriously.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// atomic_wait::wait(&AtomicU32::new(0), 1); // not 1: returns at once
/// ```
#[inline]
pub fn wait(atomic: &AtomicU32, value: u32) {
    mwait::atomic::wait_or_woken(atomic, value);
}

/// Wakes one thread that is waiting on this atomic.
///
/// It's okay if the pointer dangles or is null: only its address is used.
///
/// # Examples
///
/// ```
/// atomic_wait::wake_one(std::ptr::null::<std::sync::atomic::AtomicU32>());
/// ```
#[inline]
pub fn wake_one(atomic: *const AtomicU32) {
    mwait::atomic::wake_one(atomic);
}

/// Wakes all threads that are waiting on this atomic.
///
/// It's okay if the pointer dangles or is null: only its address is used.
///
/// # Examples
///
/// ```
/// let a = std::sync::atomic::AtomicU32::new(0);
/// atomic_wait::wake_all(&a);
/// ```
#[inline]
pub fn wake_all(atomic: *const AtomicU32) {
    mwait::atomic::wake_all(atomic);
}
