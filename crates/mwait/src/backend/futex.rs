//! The park tier: sleep in the kernel on the cell's value word.
//!
//! What wakes it: `FUTEX_WAKE` on the word (a notifier that saw a parked waiter), a
//! signal, the absolute `CLOCK_MONOTONIC` deadline, or nothing at all (spurious); the
//! caller re-checks in every case. The kernel compares the word with `expected` under
//! its hash-bucket lock before sleeping, which is what makes the park race-free: a
//! store that lands after our last check makes the comparison fail (`EAGAIN`).
//!
//! Other operating systems park through their own file in `src/sys/` (`windows.rs`,
//! `macos.rs`, `freebsd.rs`, and `parking.rs` for every other target), each with the
//! same four functions: `wait`, `wake`, `waiter_barrier` and `light_notify`.

/// How a park ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Woken, value changed before we slept, signal, or spurious: re-check.
    Woken,
    /// The deadline passed.
    TimedOut,
}

/// Whether notifiers may use the light half of the asymmetric barrier: set once,
/// when this process has registered for `membarrier(PRIVATE_EXPEDITED)`, never reset.
/// Read (`Relaxed`) on every uncontended notify; written once.
#[cfg(all(target_os = "linux", not(loom)))]
static LIGHT_NOTIFY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether a notifier may order its store before its load of `state` with a
/// compiler barrier only (the waiter side then pays with `membarrier`). See the
/// "Notes about memory ordering" in `cell.rs`.
#[cfg(all(target_os = "linux", not(loom)))]
#[inline(always)]
pub(crate) fn light_notify() -> bool {
    LIGHT_NOTIFY.load(core::sync::atomic::Ordering::Relaxed)
}

/// The waiter's heavy barrier, between announcing itself in `state` and its final
/// re-check of the value: `membarrier(PRIVATE_EXPEDITED)` where this process could
/// register for it (then notifiers use the light path), else a `SeqCst` fence (then
/// they never do). The first call registers; every waiter blocks on that one-time
/// registration, so no waiter can take the fence path once a notifier may take the
/// light one.
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn waiter_barrier() {
    use std::sync::OnceLock;
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let light = *REGISTERED.get_or_init(|| {
        let ok = membarrier_wanted() && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        if ok {
            LIGHT_NOTIFY.store(true, core::sync::atomic::Ordering::SeqCst);
        }
        ok
    });
    if !light {
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        return;
    }
    if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 {
        // EPERM: this memory map is not registered (a child after fork() inherits
        // our flag but, on some kernels, not the registration). Register and retry;
        // the notifiers of this process rely on it, so failing here is fatal.
        let again = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
            && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
        assert!(
            again,
            "mwait: membarrier(PRIVATE_EXPEDITED) failed after registration: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// The symmetric barrier, for the platforms that have no process-wide barrier to
/// lean on (macOS, FreeBSD, the parking table) and for the loom model: notifiers never
/// take the light path, and a `SeqCst` fence is the waiter's whole barrier (every
/// notifier fences too).
#[cfg(any(
    loom,
    all(test, target_os = "linux"),
    not(any(target_os = "linux", windows))
))]
pub(crate) mod symmetric {
    /// Always `false`: the light path needs a process-wide barrier.
    #[inline(always)]
    pub(crate) fn light_notify() -> bool {
        false
    }

    /// The waiter's whole barrier: a `SeqCst` fence.
    #[inline]
    pub(crate) fn waiter_barrier() {
        crate::primitive::fence(crate::primitive::Ordering::SeqCst);
    }
}

#[cfg(loom)]
pub(crate) use symmetric::{light_notify, waiter_barrier};

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER=0` turns it off (then
/// every notify is a locked `xchg` and every park a plain fence).
#[cfg(all(target_os = "linux", not(loom)))]
fn membarrier_wanted() -> bool {
    std::env::var("MWAIT_MEMBARRIER").map_or(true, |v| v.trim() != "0")
}

/// `membarrier(2)` commands (linux/membarrier.h; not in the libc crate).
#[cfg(all(target_os = "linux", not(loom)))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
#[cfg(all(target_os = "linux", not(loom)))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

#[cfg(all(target_os = "linux", not(loom)))]
fn membarrier(cmd: libc::c_int) -> libc::c_long {
    #[cfg(feature = "test-counters")]
    MEMBARRIER_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: membarrier takes two integers and a cpu id (unused without the
    // CPU flag) and touches no user memory.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

#[cfg(feature = "test-counters")]
pub(crate) static MEMBARRIER_CALLS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

#[cfg(feature = "test-counters")]
pub(crate) static FUTEX_WAKE_CALLS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

#[cfg(all(target_os = "linux", not(loom)))]
mod imp {
    use super::Parked;
    use crate::primitive::AtomicU32;

    fn op(base: libc::c_int, shared: bool) -> libc::c_int {
        if shared {
            base
        } else {
            base | libc::FUTEX_PRIVATE_FLAG
        }
    }

    /// Sleeps while `*word == expected`, until woken or `deadline_ns` (absolute,
    /// `CLOCK_MONOTONIC`).
    pub(crate) fn wait(
        word: &AtomicU32,
        expected: u32,
        deadline_ns: Option<u64>,
        shared: bool,
    ) -> Parked {
        let ts;
        let ts_ptr = match deadline_ns {
            Some(d) => {
                ts = libc::timespec {
                    tv_sec: (d / 1_000_000_000) as libc::time_t,
                    tv_nsec: (d % 1_000_000_000) as libc::c_long,
                };
                &ts as *const libc::timespec
            }
            None => core::ptr::null(),
        };
        // SAFETY: `word` is a valid, aligned u32 for the duration of the call; the
        // timespec (when given) outlives the call; FUTEX_WAIT_BITSET with
        // MATCH_ANY takes an absolute CLOCK_MONOTONIC timeout, as passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op(libc::FUTEX_WAIT_BITSET, shared),
                expected,
                ts_ptr,
                core::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
        if r == 0 {
            return Parked::Woken;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ETIMEDOUT) => Parked::TimedOut,
            // EAGAIN: the value changed before we slept. EINTR: a signal.
            Some(libc::EAGAIN) | Some(libc::EINTR) => Parked::Woken,
            e => {
                debug_assert!(false, "futex wait failed: {e:?}");
                Parked::Woken
            }
        }
    }

    /// Wakes up to `n` threads parked on `word`; returns how many were woken.
    pub(crate) fn wake(word: &AtomicU32, n: i32, shared: bool) -> usize {
        #[cfg(feature = "test-counters")]
        super::FUTEX_WAKE_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only reads its address.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op(libc::FUTEX_WAKE, shared),
                n,
            )
        };
        debug_assert!(r >= 0, "futex wake failed");
        r.max(0) as usize
    }
}

#[cfg(all(windows, not(loom)))]
#[path = "../sys/windows.rs"]
mod os;
#[cfg(all(target_os = "macos", not(loom)))]
#[path = "../sys/macos.rs"]
mod os;
#[cfg(all(target_os = "freebsd", not(loom)))]
#[path = "../sys/freebsd.rs"]
mod os;
#[cfg(all(
    not(any(
        target_os = "linux",
        windows,
        target_os = "macos",
        target_os = "freebsd"
    )),
    not(loom)
))]
#[path = "../sys/parking.rs"]
mod os;

/// The fallback table runs its own unit tests on Linux too, where it can be executed.
#[cfg(all(test, target_os = "linux", not(loom)))]
#[path = "../sys/parking.rs"]
mod parking;

#[cfg(all(not(target_os = "linux"), not(loom)))]
mod imp {
    pub(crate) use super::os::{light_notify, wait, waiter_barrier};
    use crate::primitive::AtomicU32;

    /// Wakes up to `n` threads parked on `word` (through the OS's call, counted).
    pub(crate) fn wake(word: &AtomicU32, n: i32, shared: bool) -> usize {
        #[cfg(feature = "test-counters")]
        super::FUTEX_WAKE_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        super::os::wake(word, n, shared)
    }
}

/// Loom's futex: a mutex plays the kernel's hash-bucket lock and a condvar its
/// sleep queue. Timed waits never sleep in the model (a timeout may fire at any
/// moment, so returning at once is one of the behaviours a real timed wait has).
#[cfg(loom)]
mod imp {
    use super::Parked;
    use crate::primitive::{AtomicU32, Ordering};

    #[derive(Debug, Default)]
    pub(crate) struct ParkModel {
        lock: loom::sync::Mutex<()>,
        cv: loom::sync::Condvar,
    }

    impl ParkModel {
        pub(crate) fn new() -> Self {
            Self::default()
        }

        pub(crate) fn wait(
            &self,
            word: &AtomicU32,
            expected: u32,
            deadline_ns: Option<u64>,
        ) -> Parked {
            let g = self.lock.lock().unwrap();
            if word.load(Ordering::SeqCst) != expected {
                return Parked::Woken;
            }
            if deadline_ns.is_some() {
                return Parked::TimedOut;
            }
            drop(self.cv.wait(g).unwrap());
            Parked::Woken
        }

        pub(crate) fn wake(&self) {
            let _g = self.lock.lock().unwrap();
            self.cv.notify_all();
        }
    }
}

pub(crate) use imp::*;
