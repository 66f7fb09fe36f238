//! Linux: futex, `membarrier`, `sched_getcpu`, `/proc/loadavg`, `sched_getaffinity`.

use super::contract::Parked;
use super::counters::{self, Counter};
use crate::primitive::AtomicU32;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::OnceLock;

/// Nothing to keep beside the word: the kernel keys futex sleepers by address.
#[derive(Debug, Default)]
pub(crate) struct Queue;

impl Queue {
    pub(crate) const fn new() -> Queue {
        Queue
    }
}

fn futex_op(base: libc::c_int, shared: bool) -> libc::c_int {
    if shared {
        base
    } else {
        base | libc::FUTEX_PRIVATE_FLAG
    }
}

/// `FUTEX_WAIT_BITSET` with an absolute `CLOCK_MONOTONIC` deadline. What wakes it:
/// `FUTEX_WAKE` on the word, a signal, the deadline, or nothing at all. The kernel
/// compares the word with `expected` under its hash-bucket lock before sleeping, which
/// is what makes the park race-free: a store that lands after our caller's last check
/// makes the comparison fail (`EAGAIN`).
pub(crate) fn wait(
    _queue: &Queue,
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
    // timespec (when given) outlives the call; FUTEX_WAIT_BITSET with MATCH_ANY takes
    // an absolute CLOCK_MONOTONIC timeout, as passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            futex_op(libc::FUTEX_WAIT_BITSET, shared),
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

/// `FUTEX_WAKE` of up to `n` sleepers (the kernel takes an `int`: more means all).
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let n = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only reads its address.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            futex_op(libc::FUTEX_WAKE, shared),
            n,
        )
    };
    debug_assert!(r >= 0, "futex wake failed");
    r.max(0) as usize
}

/// Whether notifiers may use the light half of the asymmetric barrier: set once,
/// when this process has registered for `membarrier(PRIVATE_EXPEDITED)`, never reset.
/// Read (`Relaxed`) on every uncontended notify; written once.
static LIGHT_NOTIFY: AtomicBool = AtomicBool::new(false);

/// See the contract in [`super::park`].
#[inline(always)]
pub(crate) fn light_notify() -> bool {
    LIGHT_NOTIFY.load(Ordering::Relaxed)
}

/// `membarrier(PRIVATE_EXPEDITED)` where this process could register for it (then
/// notifiers use the light path), else a `SeqCst` fence (then they never do). The
/// first call registers; every waiter blocks on that one-time registration, so no
/// waiter can take the fence path once a notifier may take the light one.
pub(crate) fn waiter_barrier() {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let light = *REGISTERED.get_or_init(|| {
        let ok = membarrier_wanted() && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        if ok {
            LIGHT_NOTIFY.store(true, Ordering::SeqCst);
        }
        ok
    });
    if !light {
        fence(Ordering::SeqCst);
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

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER=0` turns it off (then
/// every notify is a locked `xchg` and every park a plain fence).
fn membarrier_wanted() -> bool {
    std::env::var("MWAIT_MEMBARRIER").map_or(true, |v| v.trim() != "0")
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

/// The CPU the calling thread runs on (`u32::MAX` where unknown).
#[inline]
pub(crate) fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu takes no arguments and only reads the vDSO/rseq data.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// How many threads are runnable right now, machine-wide (the fourth field of
/// `/proc/loadavg`, `running/total`; the reading thread counts itself); `None` when
/// unreadable.
pub(crate) fn running_threads() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let field = s.split_whitespace().nth(3)?;
    field.split('/').next()?.parse::<usize>().ok()
}

/// CPUs in this process's affinity mask, `None` if the kernel does not say.
pub(crate) fn usable_cpus() -> Option<usize> {
    ThreadCpus::of_this_thread()
        .map(|c| c.count())
        .filter(|&n| n > 0)
}

/// The CPUs a thread may run on (its affinity mask).
pub(crate) struct ThreadCpus(libc::cpu_set_t);

impl ThreadCpus {
    /// The calling thread's affinity mask.
    pub(crate) fn of_this_thread() -> Option<ThreadCpus> {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity writes
        // at most `size_of::<cpu_set_t>()` bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            let n = core::mem::size_of::<libc::cpu_set_t>();
            (libc::sched_getaffinity(0, n, &mut set) == 0).then_some(ThreadCpus(set))
        }
    }

    /// How many CPUs.
    pub(crate) fn count(&self) -> usize {
        // SAFETY: CPU_COUNT only reads the set.
        unsafe { libc::CPU_COUNT(&self.0) as usize }
    }

    /// Restricts the calling thread to these CPUs but `cpu`; false when that leaves
    /// none (or the kernel refused).
    pub(crate) fn move_off(&self, cpu: usize) -> bool {
        let mut set = self.0;
        if cpu < libc::CPU_SETSIZE as usize {
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
            unsafe { libc::CPU_CLR(cpu, &mut set) };
        }
        // SAFETY: CPU_COUNT only reads the set.
        if unsafe { libc::CPU_COUNT(&set) } == 0 {
            return false;
        }
        let n = core::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `set` is a valid cpu_set_t of `n` bytes; pid 0 is this thread.
        unsafe { libc::sched_setaffinity(0, n, &set) == 0 }
    }
}
