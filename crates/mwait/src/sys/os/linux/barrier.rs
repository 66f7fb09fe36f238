//! The asymmetric barrier: `membarrier(PRIVATE_EXPEDITED)` for waiters and the light
//! notify it allows, the TLB-shootdown barrier it falls back to once lost, and the
//! count of `fork()`s a waiter tells a parent's counts apart by.

use super::line::LINE;
use crate::primitive::AtomicU32;
use crate::sys::counters::{self, Counter};
use crate::sys::anon_map::AnonMap;
use std::sync::atomic::{fence, Ordering};
use std::sync::OnceLock;

/// The symmetric protocol: a `SeqCst` store and load.
pub(super) const NOTIFY_FENCED: u8 = 0;
/// The light half of the asymmetric barrier.
const NOTIFY_LIGHT: u8 = 1;
/// The light half, the line asked for exclusively first (PREFETCHW).
const NOTIFY_LIGHT_PREFETCH: u8 = 2;

/// See the contract in [`park`](crate::sys::park): one load of the mode, and a PREFETCHW on
/// `word` where the CPU has it.
#[inline(always)]
pub(crate) fn begin_light_store(word: &AtomicU32) -> bool {
    match LINE.notify_mode.load(Ordering::Relaxed) {
        NOTIFY_FENCED => false,
        NOTIFY_LIGHT => true,
        _ => {
            // SAFETY: the mode is NOTIFY_LIGHT_PREFETCH only where
            // `prefetchw_supported` found PREFETCHW.
            unsafe { crate::sys::x86::prefetch_for_write(word) };
            true
        }
    }
}

/// See the contract in [`park`](crate::sys::park): one load of the mode, nothing else (the
/// line looked at is only read).
#[inline(always)]
pub(crate) fn begin_light_check() -> bool {
    LINE.notify_mode.load(Ordering::Relaxed) != NOTIFY_FENCED
}

/// `membarrier(PRIVATE_EXPEDITED)` where this process could register for it (then
/// notifiers use the light path), else a `SeqCst` fence (then they never do). The
/// first call settles the registration (the kernel's part is made while the program
/// is loaded, see `REGISTER_AT_LOAD`); every waiter blocks until it is settled, so
/// no waiter can take the fence path once a notifier may take the light one.
///
/// Where the call fails after registration and registering again does not help (a
/// seccomp filter installed since, say, in a child after `fork()`), the process falls
/// back to the fenced notify for good, and its waiters to the TLB-shootdown barrier
/// (see [`fall_back_to_fenced_notifies`]).
pub(crate) fn waiter_barrier() {
    if !registered() {
        fence(Ordering::SeqCst);
        return;
    }
    if LINE.barrier_lost.load(Ordering::Relaxed) {
        lost_barrier();
        return;
    }
    if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 {
        // EPERM: this memory map is not registered (a child after fork() inherits
        // our flag but, on some kernels, not the registration). Register and retry.
        let again = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
            && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
        if !again {
            fall_back_to_fenced_notifies();
            lost_barrier();
        }
    }
}

/// Whether every park sleeps in slices of at most [`SLICE_NS`]: the shootdown
/// barrier has failed too.
#[inline(always)]
pub(super) fn sliced() -> bool {
    LINE.sliced.load(Ordering::Relaxed)
}

/// The longest sleep of a park once no process-wide barrier is left: what a light
/// notify that was under way at the switch can delay a parked thread by.
pub(super) const SLICE_NS: u64 = 1_000_000;

/// Turns the light notify off for good. New notifies fence (the symmetric protocol),
/// but a notifier that read the light mode before the switch may still be between
/// its store (1) and its load (2), for as long as it is preempted there: only a
/// process-wide barrier on the waiter's side orders it. Waiters therefore run
/// [`shootdown_barrier`] from now on, which is one: a thread parked or a future armed
/// after the switch is ordered against such a notifier as with `membarrier`.
#[cold]
fn fall_back_to_fenced_notifies() {
    LINE.notify_mode.store(NOTIFY_FENCED, Ordering::SeqCst);
    LINE.barrier_lost.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
}

/// The waiter's barrier once `membarrier` is lost: the shootdown barrier, or, should
/// that fail too, a fence and sleeps in slices (a future armed then relies on the
/// notifies that follow; a refused `mprotect` of our own page is not known to
/// happen).
#[cold]
fn lost_barrier() {
    if !shootdown_barrier() {
        LINE.sliced.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }
}

/// A page of this process's own, private and anonymous, whose protection the
/// shootdown barrier changes; mapped at registration, so that the fallback needs no
/// memory when it comes, and never unmapped (it lives in a static).
struct ShootdownPage {
    page: AnonMap,
    /// One change of protection at a time: the page must be present and writable
    /// before each downgrade.
    lock: std::sync::Mutex<()>,
}

static SHOOTDOWN_PAGE: OnceLock<Option<ShootdownPage>> = OnceLock::new();

/// Maps the shootdown page (once); `None` if `mmap` refused.
fn shootdown_page() -> Option<&'static ShootdownPage> {
    SHOOTDOWN_PAGE
        .get_or_init(|| {
            // SAFETY: sysconf takes a constant and reads no memory of ours.
            let len = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .ok()
                .filter(|&n| n > 0)?;
            let page = AnonMap::new(len, false).ok()?;
            Some(ShootdownPage {
                page,
                lock: std::sync::Mutex::new(()),
            })
        })
        .as_ref()
}

/// A process-wide barrier without `membarrier`: makes the shootdown page present and
/// writable, writes it, then takes the write permission away. The kernel must then
/// flush the page's translation from every CPU that may cache it, every CPU running
/// a thread of this process among them, and on x86-64 it does so with an
/// inter-processor interrupt whose handler executes a serializing instruction there
/// (a full barrier), and returns once each has answered: the guarantee `membarrier`
/// gives, and the one folly's `asymmetricHeavyBarrier` and .NET's
/// `FlushProcessWriteBuffers` rely on on Linux. Offered only where the CPU's
/// shootdowns interrupt (`x86::shootdown_interrupts`: not with INVLPGB, which
/// flushes without interrupts); false when there is no page or `mprotect` refused.
fn shootdown_barrier() -> bool {
    let Some(page) = shootdown_page() else {
        return false;
    };
    let _one_at_a_time = page.lock.lock().unwrap_or_else(|e| e.into_inner());
    counters::count(Counter::Membarrier);
    let (ptr, len) = (page.page.base().as_ptr(), page.page.len());
    // SAFETY: `ptr` and `len` are the page this process mapped and never unmaps; the
    // write goes to it only while it is writable (under the lock, between the
    // two calls), and nothing else of ours lives there.
    unsafe {
        if libc::mprotect(ptr.cast(), len, libc::PROT_READ | libc::PROT_WRITE) != 0 {
            return false;
        }
        core::ptr::write_volatile(ptr, 1);
        libc::mprotect(ptr.cast(), len, libc::PROT_READ) == 0
    }
}

/// Whether this process is registered for `membarrier(PRIVATE_EXPEDITED)`: the first
/// call tries to register (or takes the registration `REGISTER_AT_LOAD` made), every
/// call blocks until that try has ended.
fn registered() -> bool {
    *LINE.registered.get_or_init(|| {
        // Miri has no membarrier: its waiters fence, its notifiers never take the
        // light path.
        // The light notify needs a barrier to fall back on should `membarrier` be
        // lost later (a seccomp filter installed since): the shootdown barrier,
        // where the CPU's shootdowns interrupt and its page is mapped.
        let ok = !cfg!(miri)
            && membarrier_wanted()
            && crate::sys::x86::shootdown_interrupts()
            && shootdown_page().is_some()
            && (LINE.registered_at_load.load(Ordering::Relaxed)
                || membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0);
        if ok {
            let mode = if crate::sys::x86::prefetchw_supported() {
                NOTIFY_LIGHT_PREFETCH
            } else {
                NOTIFY_LIGHT
            };
            LINE.notify_mode.store(mode, Ordering::SeqCst);
        }
        ok
    })
}

/// The registration, made while the program is loaded (an `.init_array` entry, as
/// std's own argument set-up on Linux is), so that the first park does not make it.
///
/// The kernel registers a process in one step while it has a single thread, and
/// otherwise waits for an RCU grace period first (`synchronize_rcu` in
/// `kernel/sched/membarrier.c`): milliseconds, during which a first park that made
/// the registration in [`registered`] could not be woken. Without this entry a fresh
/// process's first wait returns about 13 ms after the store that should wake it on
/// the 2-vCPU guest (`mwait-experiments first-wake`, or the cold `first_wake` row of
/// `mwait-bench`). Registering here, before `main` has started a thread, costs one
/// system call, and [`registered`] then makes none. Registering makes nothing happen
/// by itself: no barrier is ever issued unless a park asks for one.
///
/// Not where `MWAIT_MEMBARRIER` says no (the environment is the only setting that
/// exists this early), and not under Miri or loom. A library loaded later with
/// `dlopen` registers then, as its first park would have (the process then has
/// other threads, and the grace period is paid by `dlopen`, not by a wait).
#[cfg(all(target_arch = "x86_64", not(miri), not(mwait_loom)))]
#[used]
#[link_section = ".init_array"]
static REGISTER_AT_LOAD: extern "C" fn() = register_at_load;

#[cfg(all(target_arch = "x86_64", not(miri), not(mwait_loom)))]
extern "C" fn register_at_load() {
    let said_no = std::env::var_os("MWAIT_MEMBARRIER")
        .and_then(|v| crate::sys::settings::parse_bool(v.to_str()?))
        == Some(false);
    if !said_no && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 {
        LINE.registered_at_load.store(true, Ordering::Relaxed);
    }
}

/// How many `fork()`s lie between the process that first parked through mwait and
/// this one: 0 there, one more in each child (a `pthread_atfork` child handler,
/// installed by the first call). See "Counts left by a fork" in `protocol.rs`.
/// Inline, as the park that reads it: after the first call, two loads of the state
/// line.
#[inline(always)]
pub(crate) fn fork_generation() -> u32 {
    if LINE.fork_handler.get().is_none() {
        install_fork_handler();
    }
    LINE.fork_generation.load(Ordering::Relaxed)
}

/// The first call of [`fork_generation`]: installs the child handler that counts.
#[cold]
#[inline(never)]
fn install_fork_handler() {
    // Miri cannot fork: the handler is not installed there.
    LINE.fork_handler.get_or_init(|| {
        if cfg!(miri) {
            return;
        }
        extern "C" fn in_the_child() {
            LINE.fork_generation.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the handler is a plain function for the whole life of the process;
        // it only increments an atomic, which is async-signal-safe, as a child
        // handler of a multi-threaded parent must be.
        let r = unsafe { libc::pthread_atfork(None, None, Some(in_the_child)) };
        debug_assert_eq!(r, 0, "pthread_atfork failed");
    });
}

/// Settles the one-time `membarrier` registration (see [`park`](crate::sys::park)).
/// Inline, as the park that calls it: once settled, a load of the state line.
#[inline(always)]
pub(crate) fn prepare() {
    if LINE.registered.get().is_none() {
        let _ = registered();
    }
    fork_generation();
}

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER=0` turns it off (then
/// every notify is a locked `xchg` and every park a plain fence).
fn membarrier_wanted() -> bool {
    crate::sys::settings::membarrier_wanted()
}

/// `membarrier(2)` commands (linux/membarrier.h; not in the libc crate).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    counters::count(Counter::Membarrier);
    // SAFETY: membarrier takes two integers and a cpu id (unused without the CPU
    // flag) and touches no user memory.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}
