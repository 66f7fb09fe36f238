//! The park tier on Windows: `WaitOnAddress` / `WakeByAddressSingle` / `WakeByAddressAll`
//! (Windows 8 and later), and `FlushProcessWriteBuffers` as the heavy half of the
//! asymmetric barrier.
//!
//! What wakes a waiter: `WakeByAddress*` on the word (a notifier that saw a parked
//! waiter), its millisecond timeout, or nothing at all (`WaitOnAddress` may return
//! spuriously); the caller re-checks in every case. `WaitOnAddress` compares the word
//! with `expected` under the lock of its address-keyed wait queue before it sleeps, and
//! `WakeByAddress*` takes the same lock, which makes the park race-free in the same way
//! as a futex: a store that lands after the waiter's last check makes the comparison
//! fail, and the call returns at once.
//!
//! Process-shared cells: `WaitOnAddress` is process-private (its wait queues are keyed
//! by virtual address in the calling process, and no flag makes them global), so a
//! notifier in another process cannot wake a waiter. A shared cell's waiter therefore
//! never sleeps longer than [`SHARED_POLL_MS`] per park: it still sleeps, a notifier in
//! its own process still wakes it at once, and a store from another process is seen
//! within one poll period (rounded up to the timer resolution, 15.6 ms by default).

use crate::sys::contract::Parked;
use crate::sys::counters::{self, Counter};
use crate::primitive::AtomicU32;
use core::ffi::c_void;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::OnceLock;
use windows_sys::Win32::Foundation::{GetLastError, ERROR_TIMEOUT};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
use windows_sys::Win32::System::Threading::{
    FlushProcessWriteBuffers, WaitOnAddress, WakeByAddressAll, WakeByAddressSingle, INFINITE,
};

// Windows tells nothing the ladder reads about CPUs or load here, and there is
// nothing to keep beside the word: Windows keys its waiters by address.
pub(crate) use super::plain::{
    current_cpu, end_light_store, fork_generation, light_fence, running_threads, usable_cpus,
    Queue, ThreadCpus,
};

/// The longest one `WaitOnAddress` may sleep on a process-shared cell, since a
/// notifier in another process cannot wake it (see the module docs).
pub(crate) const SHARED_POLL_MS: u32 = 1;

/// The longest finite timeout one `WaitOnAddress` call takes: `INFINITE` (`u32::MAX`)
/// means "no timeout", so a longer deadline sleeps in slices of this length.
const MAX_FINITE_TIMEOUT_MS: u32 = INFINITE - 1;

const NS_PER_MS: u64 = 1_000_000;

/// The `WaitOnAddress` timeout for a deadline `remaining_ns` away: rounded *up* to
/// whole milliseconds, so that a wait never ends before its deadline because of the
/// rounding (an early return costs a second park; a late one only overshoots by less
/// than a millisecond), and capped below `INFINITE`.
pub(crate) fn timeout_ms(remaining_ns: u64) -> u32 {
    let ms = remaining_ns.div_ceil(NS_PER_MS);
    u32::try_from(ms).map_or(MAX_FINITE_TIMEOUT_MS, |ms| ms.min(MAX_FINITE_TIMEOUT_MS))
}

/// Sleeps while `*word == expected`, until woken or `deadline_ns` (absolute, on the
/// crate's monotonic clock, [`crate::sys::clock::now_ns`]).
pub(crate) fn wait(
    _queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    if super::plain::changed(word, expected) {
        return Parked::Changed;
    }
    let mut ms = match deadline_ns {
        Some(d) => {
            let now = crate::sys::clock::now_ns();
            if now >= d {
                return Parked::TimedOut;
            }
            timeout_ms(d - now)
        }
        None => INFINITE,
    };
    if shared {
        ms = ms.min(SHARED_POLL_MS);
    }
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call, and
    // `expected` is a u32 on our stack that outlives it; the size passed (4) is one of
    // the sizes WaitOnAddress accepts and matches both.
    let ok = unsafe {
        WaitOnAddress(
            word.as_ptr().cast::<c_void>().cast_const(),
            (&expected as *const u32).cast::<c_void>(),
            core::mem::size_of::<u32>(),
            ms,
        )
    };
    if ok == 0 {
        // SAFETY: GetLastError only reads this thread's last-error value.
        let err = unsafe { GetLastError() };
        debug_assert_eq!(err, ERROR_TIMEOUT, "WaitOnAddress failed: {err}");
    }
    // A timeout of a slice (a long deadline, a shared cell's poll) is not the
    // deadline: the clock decides, and the caller re-parks on `Woken`.
    match deadline_ns {
        Some(d) if crate::sys::clock::now_ns() >= d => Parked::TimedOut,
        _ => Parked::Woken,
    }
}

/// Wakes one (`n == 1`) or all threads parked on `word`. Windows does not say how
/// many it woke: the result is 0, a lower bound, as the caller never needs more.
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, _shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let addr = word.as_ptr().cast::<c_void>().cast_const();
    if n == 1 {
        // SAFETY: WakeByAddressSingle only uses the address as a key; `word` is valid.
        unsafe { WakeByAddressSingle(addr) };
    } else {
        // SAFETY: as above.
        unsafe { WakeByAddressAll(addr) };
    }
    0
}

/// Whether notifiers may use the light half of the asymmetric barrier: set once, when
/// the first parking waiter found `FlushProcessWriteBuffers` trustworthy, never reset.
static LIGHT_NOTIFY: AtomicBool = AtomicBool::new(false);

/// Whether a notifier may order its store before its load of `state` with a compiler
/// barrier only (the waiter side then pays with `FlushProcessWriteBuffers`). See the
/// contract in [`park`](crate::sys::park) and the "Notes about memory ordering" in `protocol.rs`.
#[inline(always)]
pub(crate) fn light_notify() -> bool {
    LIGHT_NOTIFY.load(Ordering::Relaxed)
}

/// See the contract in [`park`](crate::sys::park). No PREFETCHW here: the Linux light path's
/// was measured on Linux only.
#[inline(always)]
pub(crate) fn begin_light_store(_word: &AtomicU32) -> bool {
    light_notify()
}

/// See the contract in [`park`](crate::sys::park).
#[inline(always)]
pub(crate) fn begin_light_check() -> bool {
    light_notify()
}

/// The waiter's heavy barrier, between announcing itself in `state` and its final
/// re-check of the value.
///
/// `FlushProcessWriteBuffers` is the Windows twin of Linux's
/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, and holds the guarantee the light
/// notify path needs: it issues a full barrier on the calling CPU and then an
/// inter-processor interrupt to every CPU running a thread of this process, and returns
/// once each has taken it. An interrupt is a full barrier on the interrupted CPU
/// (serializing on x86, a `DMB` in the handler on Arm), so every notifier has either
/// completed both its store (1) and its load (2) before that point, and then (1) is
/// visible to our re-check (4), or performs its load (2) after it, and then (2) sees
/// our announcement (3): the same two cases as with `membarrier` (a thread not running
/// on any CPU has passed through a context switch, also a full barrier). The .NET
/// runtime's garbage collector and folly's `asymmetricHeavyBarrier` rely on the same
/// guarantee.
///
/// Wine implemented `FlushProcessWriteBuffers` as a no-op until 2024 (Wine 8.0,
/// Debian 12's, logs `NtFlushProcessWriteBuffers stub` and returns); under Wine this
/// process therefore keeps the symmetric protocol (a `SeqCst` fence here, a full
/// barrier in every notify), whatever the Wine version, since a program cannot tell a
/// stub from a real barrier by calling it. The first call decides and every
/// waiter blocks on that one-time decision, so no waiter uses a mere fence once a
/// notifier may take the light path.
pub(crate) fn waiter_barrier() {
    if light() {
        // SAFETY: FlushProcessWriteBuffers takes no arguments and cannot fail.
        unsafe { FlushProcessWriteBuffers() };
    } else {
        fence(Ordering::SeqCst);
    }
}

/// Whether waiters use `FlushProcessWriteBuffers` (and notifiers the light path): the
/// first call decides, every call blocks until that decision is made.
fn light() -> bool {
    static LIGHT: OnceLock<bool> = OnceLock::new();
    *LIGHT.get_or_init(|| {
        let ok = membarrier_wanted() && !under_wine();
        if ok {
            LIGHT_NOTIFY.store(true, Ordering::SeqCst);
        }
        ok
    })
}

/// Settles the one-time choice of the waiter barrier (see [`park`](crate::sys::park)).
pub(crate) fn prepare() {
    light();
}

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER=0` turns it off, as on
/// Linux.
fn membarrier_wanted() -> bool {
    crate::sys::settings::membarrier_wanted()
}

/// Whether this process runs under Wine, whose `ntdll.dll` exports `wine_get_version`
/// (Windows' own does not).
fn under_wine() -> bool {
    // SAFETY: both names are NUL-terminated static strings; GetModuleHandleA does not
    // take a reference on the module, and ntdll.dll stays loaded for the whole life of
    // every Windows process, so the handle stays valid for GetProcAddress.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_and_stay_finite() {
        assert_eq!(timeout_ms(0), 0);
        assert_eq!(timeout_ms(1), 1);
        assert_eq!(timeout_ms(NS_PER_MS), 1);
        assert_eq!(timeout_ms(NS_PER_MS + 1), 2);
        assert_eq!(timeout_ms(u64::from(INFINITE) * NS_PER_MS), INFINITE - 1);
        assert_eq!(timeout_ms(u64::MAX), INFINITE - 1);
    }

    /// `cargo xtask wine-test` sets `MWAIT_TEST_UNDER_WINE=1`; a run on Windows itself
    /// leaves it unset. Under Wine the light path must stay off (see
    /// `waiter_barrier`).
    #[test]
    fn wine_is_recognised_and_keeps_the_symmetric_barrier() {
        let wine = std::env::var_os("MWAIT_TEST_UNDER_WINE").is_some();
        assert_eq!(under_wine(), wine);
        waiter_barrier();
        assert_eq!(light_notify(), !wine && membarrier_wanted());
    }
}
