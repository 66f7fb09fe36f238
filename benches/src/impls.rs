//! Every mechanism as a [`Signal`], with the names the report uses.

use crate::{AsyncSignal, Signal};
use mwait::{Backend, WaitCell, WaitPolicy};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::Thread;

/// Raw spin on a load. Its word, like PAUSE's, sits alone on a 128-byte pair of
/// lines, as a `WaitCell`'s value does: two flags allocated side by side could share
/// a line (or a prefetched pair) in one run and not in the next, which moved a PAUSE
/// ping-pong's round trip by a quarter between two pairs in one process.
#[derive(Default)]
#[repr(align(128))]
pub struct Spin(AtomicU32);
impl Signal for Spin {
    fn set(&self, v: u32) {
        self.0.store(v, Ordering::Release);
    }
    fn wait_ge(&self, v: u32) -> u32 {
        loop {
            let cur = self.0.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
        }
    }
}

/// Spin with PAUSE (alone on a 128-byte pair of lines: see [`Spin`]).
#[derive(Default)]
#[repr(align(128))]
pub struct Pause(AtomicU32);
impl Signal for Pause {
    fn set(&self, v: u32) {
        self.0.store(v, Ordering::Release);
    }
    fn wait_ge(&self, v: u32) -> u32 {
        loop {
            let cur = self.0.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
            std::hint::spin_loop();
        }
    }
}

/// A hand-written futex with a waiter flag: the textbook way to skip the wake call
/// when nobody sleeps (SeqCst on both sides).
#[derive(Default)]
pub struct Futex {
    value: AtomicU32,
    waiters: AtomicU32,
}
impl Futex {
    fn futex(&self, op: libc::c_int, val: u32) {
        // SAFETY: the word is a valid aligned u32; no timeout is passed.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.value.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }
}
impl Signal for Futex {
    fn set(&self, v: u32) {
        self.value.store(v, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) != 0 {
            self.futex(libc::FUTEX_WAKE, i32::MAX as u32);
        }
    }
    fn wait_ge(&self, v: u32) -> u32 {
        self.wait_ge_around(v, |_| {})
    }
}

impl Futex {
    /// [`Signal::wait_ge`], calling `around(true)` right before each `FUTEX_WAIT`
    /// and `around(false)` right after it returns (`park-segments` stamps there).
    #[inline(always)]
    pub fn wait_ge_around(&self, v: u32, mut around: impl FnMut(bool)) -> u32 {
        loop {
            let cur = self.value.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
            self.waiters.fetch_add(1, Ordering::SeqCst);
            if self.value.load(Ordering::SeqCst) == cur {
                around(true);
                self.futex(libc::FUTEX_WAIT, cur);
                around(false);
            }
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The atomic-wait crate: wait/wake on the word, wake always a system call.
#[derive(Default)]
pub struct AtomicWait(AtomicU32);
impl Signal for AtomicWait {
    fn set(&self, v: u32) {
        self.0.store(v, Ordering::Release);
        atomic_wait::wake_all(&self.0);
    }
    fn wait_ge(&self, v: u32) -> u32 {
        loop {
            let cur = self.0.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
            atomic_wait::wait(&self.0, cur);
        }
    }
}

/// `mwait::atomic` on a bare word: a store and `wake_all`, and `wait` on the value
/// seen (the report name [`crate::atomic::NAME`]).
#[derive(Default)]
pub struct MwaitAtomic(AtomicU32);
impl Signal for MwaitAtomic {
    fn set(&self, v: u32) {
        self.0.store(v, Ordering::Release);
        mwait::atomic::wake_all(&self.0);
    }
    fn wait_ge(&self, v: u32) -> u32 {
        loop {
            let cur = self.0.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
            mwait::atomic::wait(&self.0, cur);
        }
    }
    fn word(&self) -> Option<&AtomicU32> {
        Some(&self.0)
    }
}

/// std `Mutex` + `Condvar`.
#[derive(Default)]
pub struct StdCondvar(Mutex<u32>, Condvar);
impl Signal for StdCondvar {
    fn set(&self, v: u32) {
        *self.0.lock().unwrap() = v;
        self.1.notify_all();
    }
    fn wait_ge(&self, v: u32) -> u32 {
        *self
            .1
            .wait_while(self.0.lock().unwrap(), |x| *x < v)
            .unwrap()
    }
}

/// parking_lot `Mutex` + `Condvar`.
#[derive(Default)]
pub struct ParkingLot(parking_lot::Mutex<u32>, parking_lot::Condvar);
impl Signal for ParkingLot {
    fn set(&self, v: u32) {
        *self.0.lock() = v;
        self.1.notify_all();
    }
    fn wait_ge(&self, v: u32) -> u32 {
        let mut g = self.0.lock();
        while *g < v {
            self.1.wait(&mut g);
        }
        *g
    }
}

/// std `thread::park` / `Thread::unpark`: the waiter registers its handle first.
#[derive(Default)]
pub struct Park {
    value: AtomicU32,
    waiter: Mutex<Option<Thread>>,
}
impl Signal for Park {
    fn set(&self, v: u32) {
        self.value.store(v, Ordering::SeqCst);
        if let Some(t) = &*self.waiter.lock().unwrap() {
            t.unpark();
        }
    }
    fn wait_ge(&self, v: u32) -> u32 {
        {
            let mut w = self.waiter.lock().unwrap();
            if w.is_none() {
                *w = Some(std::thread::current());
            }
        }
        loop {
            let cur = self.value.load(Ordering::SeqCst);
            if cur >= v {
                return cur;
            }
            std::thread::park();
        }
    }
}

/// crossbeam-utils `Parker`: the waiter parks, the setter unparks.
pub struct CrossbeamParker {
    value: AtomicU32,
    parker: Mutex<crossbeam_utils::sync::Parker>,
    unparker: crossbeam_utils::sync::Unparker,
}
impl Default for CrossbeamParker {
    fn default() -> Self {
        let parker = crossbeam_utils::sync::Parker::new();
        let unparker = parker.unparker().clone();
        CrossbeamParker {
            value: AtomicU32::new(0),
            parker: Mutex::new(parker),
            unparker,
        }
    }
}
impl Signal for CrossbeamParker {
    fn set(&self, v: u32) {
        self.value.store(v, Ordering::SeqCst);
        self.unparker.unpark();
    }
    fn wait_ge(&self, v: u32) -> u32 {
        let p = self.parker.lock().unwrap();
        loop {
            let cur = self.value.load(Ordering::SeqCst);
            if cur >= v {
                return cur;
            }
            p.park();
        }
    }
}

/// A `WaitCell` with a policy (the default, or one tier forced).
pub struct Cell(pub WaitCell, pub WaitPolicy);
impl Cell {
    /// The default policy.
    pub fn default_policy() -> Cell {
        Cell(WaitCell::new(0), WaitPolicy::new())
    }
    /// One backend forced, no spin unless it is the spin backend.
    pub fn forced(b: Backend) -> Cell {
        let p = WaitPolicy::new().backend(b);
        let p = if b == Backend::Spin {
            p
        } else {
            p.spin(std::time::Duration::ZERO)
        };
        Cell(WaitCell::new(0), p)
    }
}
impl Signal for Cell {
    fn set(&self, v: u32) {
        self.0.store(v);
    }
    fn wait_ge(&self, v: u32) -> u32 {
        self.0.wait_until_with(|x| x >= v, &self.1)
    }
    fn word(&self) -> Option<&AtomicU32> {
        Some(self.0.as_atomic())
    }
}

/// A `WaitCell` awaited with `wait_until_async`.
#[derive(Default)]
pub struct AsyncCell(WaitCell);
impl AsyncSignal for AsyncCell {
    fn set(&self, v: u32) {
        self.0.store(v);
    }
    async fn reach(&self, v: u32) -> u32 {
        self.0.wait_until_async(|x| x >= v).await
    }
}

/// tokio's `Notify` beside the value: the awaiting task takes a `notified()` future
/// before it checks the value, so that a `notify_one` between the check and the
/// await is kept.
#[derive(Default)]
pub struct TokioNotify {
    notify: tokio::sync::Notify,
    value: AtomicU32,
}
impl AsyncSignal for TokioNotify {
    fn set(&self, v: u32) {
        self.value.store(v, Ordering::Release);
        self.notify.notify_one();
    }
    async fn reach(&self, v: u32) -> u32 {
        loop {
            let notified = self.notify.notified();
            let cur = self.value.load(Ordering::Acquire);
            if cur >= v {
                return cur;
            }
            notified.await;
        }
    }
}

/// A constructor of fresh signals, by report name.
pub type Make = fn() -> Box<dyn Signal>;

fn mk<T: Signal + Default + 'static>() -> Box<dyn Signal> {
    Box::new(T::default())
}

/// The peers and the default WaitCell, in report order. Building them, or a signal
/// of theirs, reads nothing of mwait's process-wide state: the first wait does.
pub fn peers() -> Vec<(String, Make)> {
    vec![
        ("spin".into(), mk::<Spin>),
        ("pause".into(), mk::<Pause>),
        ("futex".into(), mk::<Futex>),
        ("atomic-wait".into(), mk::<AtomicWait>),
        ("std-condvar".into(), mk::<StdCondvar>),
        ("parking-lot".into(), mk::<ParkingLot>),
        ("park".into(), mk::<Park>),
        ("crossbeam-parker".into(), mk::<CrossbeamParker>),
        ("waitcell".into(), || Box::new(Cell::default_policy())),
    ]
}

/// The peers, the default WaitCell and every tier usable here, in report order.
/// This asks mwait's selection which tiers are usable: a process that measures
/// cold starts must not call it (see [`by_name`]).
pub fn all() -> Vec<(String, Make)> {
    let mut v = peers();
    v.extend(waitcell_tiers());
    v
}

/// `waitcell-<tier>` for every tier usable on this machine: spin, futex where
/// offered, and the hardware tier the selection kept (offered and not demoted by
/// its self-test). Asks the selection.
pub fn waitcell_tiers() -> Vec<(String, Make)> {
    let caps = mwait::Capabilities::detect();
    let sel = mwait::selection();
    let mut tiers = vec![Backend::Spin];
    if caps.offers(Backend::Futex) {
        tiers.push(Backend::Futex);
    }
    if sel.backend.is_hardware() {
        tiers.push(sel.backend);
    }
    tiers
        .into_iter()
        .filter_map(|b| Some((format!("waitcell-{b}"), forced(b)?)))
        .collect()
}

/// The mechanism with the report name `name` (a peer, `waitcell`, `waitcell-<tier>`
/// for any tier, usable here or not, `mwait-parker`, the raw parker of the clients
/// section, for the ping-pongs only, or `mwait-atomic`, a wait on a bare word
/// through `mwait::atomic`), built without asking the selection.
pub fn by_name(name: &str) -> Option<Make> {
    if let Some((_, make)) = peers().into_iter().find(|(n, _)| n == name) {
        return Some(make);
    }
    if name == "mwait-parker" {
        return Some(crate::clients::parker_signal);
    }
    if name == crate::atomic::NAME {
        return Some(mk::<MwaitAtomic>);
    }
    forced(name.strip_prefix("waitcell-")?.parse().ok()?)
}

/// A WaitCell with the tier `b` forced (see [`Cell::forced`]); `None` for a
/// backend this harness does not know yet.
fn forced(b: Backend) -> Option<Make> {
    let make: Make = match b {
        Backend::Spin => || Box::new(Cell::forced(Backend::Spin)),
        Backend::Futex => || Box::new(Cell::forced(Backend::Futex)),
        Backend::Umwait => || Box::new(Cell::forced(Backend::Umwait)),
        Backend::Mwaitx => || Box::new(Cell::forced(Backend::Mwaitx)),
        Backend::Kernel => || Box::new(Cell::forced(Backend::Kernel)),
        _ => return None,
    };
    Some(make)
}
