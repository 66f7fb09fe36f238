//! Thread parking and unparking, with the API of the `parking` crate (2.x), on
//! [`mwait::Parker`].
//!
//! A [`Parker`] holds at most one token. [`Unparker::unpark`] sets it; [`Parker::park`]
//! blocks until it is set, then takes it. An unpark that comes before the park is not
//! lost, and a park never returns without a token. Each parker has a token of its
//! own, so a function that parks and unparks internally cannot take a wake-up meant
//! for its caller (as `std::thread::park`, one token per thread, can).
//!
//! The wait is an mwait wait: a short spin, a hardware monitor where the CPU has one,
//! then a futex sleep; an unpark of a parker that is awake is one atomic exchange and
//! one load, with no lock and no system call.
//!
//! # Examples
//!
//! ```
//! use parking::Parker;
//! use std::thread;
//! use std::time::Duration;
//!
//! let p = Parker::new();
//! let u = p.unparker();
//!
//! // A token set before the park: the park returns at once.
//! u.unpark();
//! p.park();
//!
//! let t = thread::spawn(move || {
//!     thread::sleep(Duration::from_millis(10));
//!     u.unpark();
//! });
//! p.park(); // returns after the other thread's unpark
//! t.join().unwrap();
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

use std::fmt;
use std::task::Waker;
use std::time::{Duration, Instant};

/// A parker and an unparker for it.
///
/// # Examples
///
/// ```
/// let (p, u) = parking::pair();
/// u.unpark();
/// p.park();
/// ```
pub fn pair() -> (Parker, Unparker) {
    let p = Parker::new();
    let u = p.unparker();
    (p, u)
}

/// Blocks its thread until an [`Unparker`] hands it a token. `Send`, not `Sync`.
pub struct Parker {
    inner: mwait::Parker,
}

impl Parker {
    /// A parker without a token.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = parking::Parker::new();
    /// assert!(!p.park_timeout(Duration::ZERO));
    /// ```
    pub fn new() -> Parker {
        Parker {
            inner: mwait::Parker::new(),
        }
    }

    /// Blocks until the token is set, then takes it.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = parking::Parker::new();
    /// p.unparker().unpark();
    /// p.park(); // the token was set: returns at once
    /// ```
    pub fn park(&self) {
        self.inner.park();
    }

    /// Blocks until the token is set or `duration` has passed. Returns `true` if it
    /// took the token.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = parking::Parker::new();
    /// assert!(!p.park_timeout(Duration::from_millis(1)), "nobody unparked");
    /// ```
    pub fn park_timeout(&self, duration: Duration) -> bool {
        self.inner.park_timeout(duration)
    }

    /// Blocks until the token is set or the clock reaches `instant`. Returns `true`
    /// if it took the token.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let p = parking::Parker::new();
    /// p.unpark();
    /// assert!(p.park_deadline(Instant::now() + Duration::from_secs(1)));
    /// ```
    pub fn park_deadline(&self, instant: Instant) -> bool {
        self.inner.park_deadline(instant)
    }

    /// Sets the token. Returns `true` if this call set it, `false` if it was
    /// already set.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = parking::Parker::new();
    /// assert!(p.unpark());
    /// assert!(!p.unpark());
    /// p.park();
    /// ```
    pub fn unpark(&self) -> bool {
        self.inner.unpark()
    }

    /// An unparker for this parker, to clone and send to other threads.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = parking::Parker::new();
    /// let u = p.unparker();
    /// std::thread::spawn(move || u.unpark()).join().unwrap();
    /// p.park();
    /// ```
    pub fn unparker(&self) -> Unparker {
        Unparker {
            inner: self.inner.unparker(),
        }
    }
}

impl Default for Parker {
    fn default() -> Parker {
        Parker::new()
    }
}

impl fmt::Debug for Parker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Parker { .. }")
    }
}

/// Sets a [`Parker`]'s token, from any thread; converts into a [`Waker`].
pub struct Unparker {
    inner: mwait::Unparker,
}

impl Unparker {
    /// Sets the parker's token, waking it if it sleeps. Returns `true` if this call
    /// set the token, `false` if it was already set.
    ///
    /// # Examples
    ///
    /// ```
    /// let (p, u) = parking::pair();
    /// assert!(u.unpark());
    /// p.park();
    /// ```
    pub fn unpark(&self) -> bool {
        self.inner.unpark()
    }

    /// Whether this unparker sets `parker`'s token (so a caller can skip work when
    /// it would unpark itself).
    ///
    /// # Examples
    ///
    /// ```
    /// let (p, u) = parking::pair();
    /// assert!(u.will_unpark(&p));
    /// assert!(!u.will_unpark(&parking::Parker::new()));
    /// ```
    pub fn will_unpark(&self, parker: &Parker) -> bool {
        self.inner.will_unpark(&parker.inner)
    }

    /// Whether two unparkers set the same parker's token.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = parking::Parker::new();
    /// assert!(p.unparker().same_parker(&p.unparker()));
    /// ```
    pub fn same_parker(&self, other: &Unparker) -> bool {
        self.inner.same_parker(&other.inner)
    }
}

impl Clone for Unparker {
    fn clone(&self) -> Unparker {
        Unparker {
            inner: self.inner.clone(),
        }
    }
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Unparker { .. }")
    }
}

impl From<Unparker> for Waker {
    fn from(up: Unparker) -> Waker {
        Waker::from(up.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{RefUnwindSafe, UnwindSafe};

    /// The auto traits of parking 2.x: a dependent that sends an unparker to
    /// another thread, or holds one across `catch_unwind`, must still build.
    #[test]
    fn auto_traits_match_the_originals() {
        fn send<T: Send>() {}
        fn sync<T: Sync>() {}
        fn unwind<T: UnwindSafe>() {}
        fn ref_unwind<T: RefUnwindSafe>() {}
        send::<Parker>();
        unwind::<Parker>();
        send::<Unparker>();
        sync::<Unparker>();
        unwind::<Unparker>();
        ref_unwind::<Unparker>();
    }

    #[test]
    fn a_waker_sets_the_token() {
        let (p, u) = pair();
        Waker::from(u).wake();
        assert!(p.park_timeout(Duration::ZERO));
        assert!(!p.park_timeout(Duration::ZERO));
    }
}
