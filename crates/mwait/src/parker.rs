//! [`Parker`] and [`Unparker`]: a thread parker on one [`WaitCell`], and
//! [`block_on`], the executor loop on top of it.
//!
//! The cell holds the token: [`EMPTY`] or [`NOTIFIED`]. An unpark is the cell's
//! waking `swap` to `NOTIFIED`, which is one atomic exchange and one load while the
//! parker is awake (no lock, no system call) and wakes it when it is parked in the
//! kernel. A park waits on the cell until it holds `NOTIFIED`, climbing the same
//! ladder as every other wait (spin, hardware monitor, futex), then takes the token
//! back with an exchange to `EMPTY`. Only the parker's own thread writes `EMPTY`, so
//! a token, once set, stays set until that thread takes it: no unpark is lost, and
//! a park that returns has always taken one.
//!
//! The cell is a [`WaitCell::new_parker`] cell, which differs from a plain one in two
//! ways:
//! - It is written only by those two exchanges, never by a plain store, and its
//!   parks announce themselves without the `membarrier` that a cell's light stores
//!   would need (a fresh parker's first park, and each park after a run of unparks
//!   that found the parker awake, would otherwise pay one).
//! - A park spins only on evidence that a token is near: this thread unparked
//!   someone (or changed a cell with a read-modify-write) since its last wait (a
//!   ping-pong, a request and its answer, an executor handing work on), or the
//!   parker's last park was caught by its spin or ended before it slept. Without it (an idle worker that waits for whoever
//!   brings work) the park goes straight to the kernel, reading neither the clock
//!   nor the run queue, and costs what a futex wait costs.

use crate::cell::WaitCell;
use crate::policy::WaitPolicy;
use crate::primitive::Ordering;
use crate::thread::THREAD;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// No token: the next park waits.
const EMPTY: u32 = 0;
/// A token: the next park returns at once and takes it.
const NOTIFIED: u32 = 1;

/// The state a parker shares with its unparkers: the token's cell.
struct Token {
    cell: WaitCell,
}

impl Token {
    fn new(policy: WaitPolicy) -> Token {
        Token {
            cell: WaitCell::parker_with_policy(EMPTY, policy),
        }
    }

    /// Sets the token and wakes the parker if it is parked in the kernel. Always an
    /// exchange, never a load that sees a token and returns: the parker's taking
    /// exchange reads the last exchange in the cell's modification order, so every
    /// unpark's writes before it are visible to the park that returns after it.
    #[inline]
    fn unpark(&self) -> bool {
        self.cell.swap(NOTIFIED) == EMPTY
    }

    /// Takes the token if there is one (`Acquire`, pairing with the unparks'
    /// exchanges). Emptying the cell changes nothing any other thread waits for,
    /// so it wakes nobody: a plain exchange on the value.
    #[inline]
    fn take(&self) -> bool {
        self.cell.as_atomic().swap(EMPTY, Ordering::Acquire) == NOTIFIED
    }

    fn park(&self) {
        self.cell.wait_parker(|v| v == NOTIFIED);
        let took = self.take();
        debug_assert!(took, "only the parker's thread empties the cell");
    }

    /// Ends a timed park: takes the token if there is one when the wait ended, even
    /// one that came just after the deadline (the park then reports it, and the
    /// token is not left for the next park as well).
    fn after_timed_wait(&self, timed_out: bool) -> bool {
        if timed_out && self.cell.load() == EMPTY {
            return false;
        }
        self.take()
    }
}

impl Wake for Token {
    fn wake(self: Arc<Self>) {
        self.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.unpark();
    }
}

/// Blocks the thread that owns it until an [`Unparker`] hands it a token.
///
/// A parker holds at most one token. [`unpark`](Unparker::unpark) sets it (several
/// unparks before a park leave one token); [`park`](Self::park) waits until it is
/// set and takes it. An unpark that comes before the park is not lost: the park
/// then returns at once. `park` never returns without a token, so a caller does not
/// need a loop of its own to hide spurious wake-ups (a timed park returns `false`
/// when its time ran out without one).
///
/// The wait is a [`WaitCell`] wait: it spins briefly, uses a hardware monitor where
/// the CPU offers one, then sleeps in the kernel, so a parker that waits long costs
/// no CPU, and an unpark while the parker is awake (the common case in an executor
/// whose worker is busy) is one atomic exchange and one load, with no system call.
///
/// A `Parker` is `Send` but not `Sync`: one thread parks on it at a time.
///
/// # Examples
///
/// ```
/// use mwait::Parker;
/// use std::thread;
///
/// let p = Parker::new();
/// let u = p.unparker();
///
/// // A token set before the park: the park returns at once.
/// u.unpark();
/// p.park();
///
/// let t = thread::spawn(move || u.unpark());
/// p.park(); // returns once the other thread's unpark has come
/// t.join().unwrap();
/// ```
pub struct Parker {
    unparker: Unparker,
    /// `!Sync`: parks from two threads at once would take each other's tokens.
    _not_sync: PhantomData<Cell<()>>,
}

impl Parker {
    /// A parker without a token.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = mwait::Parker::new();
    /// assert!(!p.park_timeout(Duration::ZERO), "no token yet");
    /// ```
    pub fn new() -> Parker {
        Parker::with_policy(WaitPolicy::new())
    }

    /// A parker without a token whose parks use `policy` (how long they spin, which
    /// hardware tier they use, whether they sleep in the kernel).
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{Parker, WaitPolicy};
    /// use std::time::Duration;
    ///
    /// // A worker that expects work within microseconds spins longer before it sleeps.
    /// let p = Parker::with_policy(WaitPolicy::new().spin(Duration::from_micros(50)));
    /// p.unpark();
    /// p.park();
    /// ```
    pub fn with_policy(policy: WaitPolicy) -> Parker {
        Parker {
            unparker: Unparker {
                token: Arc::new(Token::new(policy)),
            },
            _not_sync: PhantomData,
        }
    }

    /// Blocks until a token is there, and takes it.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = mwait::Parker::new();
    /// p.unpark();
    /// p.park(); // the token was there: returns at once
    /// ```
    pub fn park(&self) {
        self.unparker.token.park();
    }

    /// Blocks until a token is there or `timeout` has passed. Returns `true` when it
    /// took a token, `false` when the time ran out without one. A zero timeout is a
    /// poll: it takes a token that is there and returns at once, reading no clock.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = mwait::Parker::new();
    /// assert!(!p.park_timeout(Duration::from_millis(1)));
    /// p.unpark();
    /// assert!(p.park_timeout(Duration::from_secs(60)));
    /// assert!(!p.park_timeout(Duration::ZERO), "the token was taken");
    /// ```
    pub fn park_timeout(&self, timeout: Duration) -> bool {
        let token = &self.unparker.token;
        let r = token.cell.wait_until_timeout(|v| v == NOTIFIED, timeout);
        token.after_timed_wait(r.is_timed_out())
    }

    /// Blocks until a token is there or the clock reaches `deadline`. Returns `true`
    /// when it took a token, `false` when the deadline passed without one.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let p = mwait::Parker::new();
    /// assert!(!p.park_deadline(Instant::now() + Duration::from_millis(1)));
    /// ```
    pub fn park_deadline(&self, deadline: Instant) -> bool {
        let token = &self.unparker.token;
        let r = token.cell.wait_until_deadline(|v| v == NOTIFIED, deadline);
        token.after_timed_wait(r.is_timed_out())
    }

    /// Sets the token. Returns `true` if this call set it, `false` if it was
    /// already set.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = mwait::Parker::new();
    /// assert!(p.unpark());
    /// assert!(!p.unpark(), "one token at most");
    /// p.park();
    /// ```
    pub fn unpark(&self) -> bool {
        self.unparker.unpark()
    }

    /// An unparker for this parker; it can be cloned and sent to other threads.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = mwait::Parker::new();
    /// let u = p.unparker();
    /// std::thread::spawn(move || u.unpark()).join().unwrap();
    /// p.park();
    /// ```
    pub fn unparker(&self) -> Unparker {
        self.unparker.clone()
    }
}

impl Default for Parker {
    fn default() -> Parker {
        Parker::new()
    }
}

impl fmt::Debug for Parker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parker")
            .field("notified", &(self.unparker.token.cell.load() == NOTIFIED))
            .finish()
    }
}

/// Hands a [`Parker`] its token, from any thread.
///
/// Converts into a [`Waker`] whose wake is [`unpark`](Self::unpark).
///
/// # Examples
///
/// ```
/// use mwait::Parker;
/// use std::task::Waker;
///
/// let p = Parker::new();
/// let waker = Waker::from(p.unparker());
/// waker.wake_by_ref();
/// p.park(); // the wake set the token
/// ```
pub struct Unparker {
    token: Arc<Token>,
}

impl Unparker {
    /// Sets the parker's token and wakes it if it sleeps. Returns `true` if this
    /// call set the token, `false` if it was already set. While the parker is
    /// awake this makes no system call.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = mwait::Parker::new();
    /// let u = p.unparker();
    /// assert!(u.unpark());
    /// assert!(!u.unpark());
    /// p.park();
    /// assert!(u.unpark(), "the park took the token");
    /// ```
    pub fn unpark(&self) -> bool {
        self.token.unpark()
    }

    /// Whether this unparker unparks `parker`.
    ///
    /// # Examples
    ///
    /// ```
    /// let (p, q) = (mwait::Parker::new(), mwait::Parker::new());
    /// let u = p.unparker();
    /// assert!(u.will_unpark(&p));
    /// assert!(!u.will_unpark(&q));
    /// ```
    pub fn will_unpark(&self, parker: &Parker) -> bool {
        Arc::ptr_eq(&self.token, &parker.unparker.token)
    }

    /// Whether two unparkers unpark the same parker.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = mwait::Parker::new();
    /// let (u1, u2) = (p.unparker(), p.unparker());
    /// assert!(u1.same_parker(&u2));
    /// assert!(!u1.same_parker(&mwait::Parker::new().unparker()));
    /// ```
    pub fn same_parker(&self, other: &Unparker) -> bool {
        Arc::ptr_eq(&self.token, &other.token)
    }
}

impl Clone for Unparker {
    fn clone(&self) -> Unparker {
        Unparker {
            token: self.token.clone(),
        }
    }
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unparker")
            .field("notified", &(self.token.cell.load() == NOTIFIED))
            .finish()
    }
}

impl From<Unparker> for Waker {
    fn from(u: Unparker) -> Waker {
        Waker::from(u.token)
    }
}

/// The thread's parker and its waker for [`block_on`], made on the first call; kept
/// in the thread's [`ThreadState`](crate::thread::ThreadState).
pub(crate) type BlockOnSlot = RefCell<Option<(Parker, Waker)>>;

/// Runs `future` to completion on this thread, parking on a [`Parker`] while it is
/// pending.
///
/// The thread keeps one parker and its waker for its calls (so a waker costs no
/// allocation per call); a `block_on` nested inside a future that another
/// `block_on` of this thread polls gets a parker of its own.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use mwait::WaitCell;
/// use std::sync::Arc;
///
/// let cell = Arc::new(WaitCell::new(0));
/// let c = cell.clone();
/// let t = std::thread::spawn(move || c.store(7));
/// let v = mwait::block_on(cell.wait_until_async(|v| v == 7));
/// assert_eq!(v, 7);
/// t.join().unwrap();
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    // Not nested: the thread's parker, made now if this is its first call, and put
    // back afterwards (a panic in the future drops it; the next call makes another).
    // Nested, or in a thread-local destructor: a parker of its own.
    let (parker, waker) = THREAD
        .try_with(|t| t.block_on.take())
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            let p = Parker::new();
            let w = Waker::from(p.unparker());
            (p, w)
        });
    let mut future = pin!(future);
    let mut cx = Context::from_waker(&waker);
    let out = loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            break out;
        }
        parker.park();
    };
    // In a thread-local destructor the slot is gone and the pair drops here.
    let _ = THREAD.try_with(|t| t.block_on.replace(Some((parker, waker))));
    out
}
