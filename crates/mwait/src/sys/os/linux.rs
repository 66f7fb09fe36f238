//! Linux: futex, `membarrier`, `sched_getcpu`, `/proc/loadavg`, `sched_getaffinity`.

use super::contract::Parked;
use super::counters::{self, Counter};
use crate::primitive::AtomicU32;
use std::sync::atomic::{fence, AtomicBool, AtomicU32 as AtomicU32Std, AtomicU8, Ordering};
use std::sync::OnceLock;

/// Nothing to keep beside the word: the kernel keys futex sleepers by address.
pub(crate) use super::plain::{end_light_store, light_fence, Queue};

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
///
/// An error the kernel does not document for this call (`ENOSYS` from a seccomp
/// policy, say) cannot be fixed by retrying at once: the wait sleeps instead, for a
/// time that doubles with each consecutive failure of this thread up to
/// [`FUTEX_FAILED_SLEEP_MAX_US`] (never past the deadline), and reports a wake-up, so
/// the caller re-checks its predicate a few hundred times a second at most instead of
/// spinning on the failing call.
pub(crate) fn wait(
    _queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    // Without any process-wide barrier, sleep in slices (see `SLICED`): a slice that
    // ends before the caller's deadline is reported as a wake-up, and the caller
    // re-checks.
    let (deadline_ns, sliced) = match SLICED.load(Ordering::Relaxed) {
        false => (deadline_ns, false),
        true => {
            let slice_end = super::clock::now_ns().saturating_add(SLICE_NS);
            match deadline_ns {
                Some(d) if d <= slice_end => (Some(d), false),
                _ => (Some(slice_end), true),
            }
        }
    };
    let ts = deadline_ns.map(timespec_of);
    let ts_ptr = ts
        .as_ref()
        .map_or(core::ptr::null(), |t| t as *const libc::timespec);
    let r = match inject::futex_wait_errno() {
        Some(e) => Err(e),
        // SAFETY: `word` is a valid, aligned u32 for the duration of the call; the
        // timespec (when given) outlives the call; FUTEX_WAIT_BITSET with MATCH_ANY
        // takes an absolute CLOCK_MONOTONIC timeout, as passed.
        None => match unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                futex_op(libc::FUTEX_WAIT_BITSET, shared),
                expected,
                ts_ptr,
                core::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)),
        },
    };
    match r {
        Ok(()) | Err(libc::EINTR) => {
            // Woken, or a signal.
            FUTEX_FAILURES.with(|f| f.set(0));
            Parked::Woken
        }
        Err(libc::EAGAIN) => {
            // The value changed before we slept: no wake-up to measure.
            FUTEX_FAILURES.with(|f| f.set(0));
            Parked::Changed
        }
        Err(libc::ETIMEDOUT) if sliced => Parked::Woken,
        Err(libc::ETIMEDOUT) => Parked::TimedOut,
        Err(_) => sleep_after_failure(deadline_ns),
    }
}

/// The longest sleep in place of a futex wait that failed with an unexpected error:
/// the latency a store has for such a waiter.
pub(crate) const FUTEX_FAILED_SLEEP_MAX_US: u64 = 1_000;

std::thread_local! {
    /// Consecutive futex waits of this thread that failed with an unexpected error.
    static FUTEX_FAILURES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The bounded sleep of a futex wait that failed with an unexpected error: 1 µs,
/// doubling with each consecutive failure up to [`FUTEX_FAILED_SLEEP_MAX_US`], cut at
/// the deadline.
#[cold]
fn sleep_after_failure(deadline_ns: Option<u64>) -> Parked {
    let failures = FUTEX_FAILURES.with(|f| {
        let n = f.get();
        f.set(n.saturating_add(1));
        n
    });
    let mut sleep_ns = (1_000u64 << failures.min(10)).min(FUTEX_FAILED_SLEEP_MAX_US * 1_000);
    if let Some(d) = deadline_ns {
        let now = super::clock::now_ns();
        if now >= d {
            return Parked::TimedOut;
        }
        sleep_ns = sleep_ns.min(d - now);
    }
    std::thread::sleep(std::time::Duration::from_nanos(sleep_ns));
    Parked::Woken
}

/// An absolute deadline in ns as a `timespec`, its seconds clamped to `time_t` (a
/// deadline past 2038 with a 32-bit `time_t` would otherwise wrap negative, which the
/// kernel refuses with `EINVAL`); a clamped deadline is still centuries away.
fn timespec_of(deadline_ns: u64) -> libc::timespec {
    const NS_PER_S: u64 = 1_000_000_000;
    match libc::time_t::try_from(deadline_ns / NS_PER_S) {
        Ok(tv_sec) => libc::timespec {
            tv_sec,
            // Below 10^9: fits every `c_long`.
            tv_nsec: (deadline_ns % NS_PER_S) as libc::c_long,
        },
        Err(_) => libc::timespec {
            tv_sec: libc::time_t::MAX,
            tv_nsec: 0,
        },
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

/// Which notify this process's notifiers use, in one byte read (`Relaxed`) on every
/// notify: [`NOTIFY_FENCED`] until this process has registered for
/// `membarrier(PRIVATE_EXPEDITED)`, then [`NOTIFY_LIGHT`], or
/// [`NOTIFY_LIGHT_PREFETCH`] where the CPU has PREFETCHW. Set once, never reset.
static NOTIFY_MODE: AtomicU8 = AtomicU8::new(NOTIFY_FENCED);
/// The symmetric protocol: a `SeqCst` store and load.
const NOTIFY_FENCED: u8 = 0;
/// The light half of the asymmetric barrier.
const NOTIFY_LIGHT: u8 = 1;
/// The light half, the line asked for exclusively first (PREFETCHW).
const NOTIFY_LIGHT_PREFETCH: u8 = 2;

/// See the contract in [`super::park`]: one load of the mode, and a PREFETCHW on
/// `word` where the CPU has it.
#[inline(always)]
pub(crate) fn begin_light_store(word: &AtomicU32) -> bool {
    match NOTIFY_MODE.load(Ordering::Relaxed) {
        NOTIFY_FENCED => false,
        NOTIFY_LIGHT => true,
        _ => {
            // SAFETY: the mode is NOTIFY_LIGHT_PREFETCH only where
            // `prefetchw_supported` found PREFETCHW.
            unsafe { super::x86::prefetch_for_write(word) };
            true
        }
    }
}

/// See the contract in [`super::park`]: one load of the mode, nothing else (the
/// line looked at is only read).
#[inline(always)]
pub(crate) fn begin_light_check() -> bool {
    NOTIFY_MODE.load(Ordering::Relaxed) != NOTIFY_FENCED
}

/// `membarrier(PRIVATE_EXPEDITED)` where this process could register for it (then
/// notifiers use the light path), else a `SeqCst` fence (then they never do). The
/// first call registers; every waiter blocks on that one-time registration, so no
/// waiter can take the fence path once a notifier may take the light one.
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
    if BARRIER_LOST.load(Ordering::Relaxed) {
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

/// Set once `membarrier` has failed after registration: from then on notifiers fence
/// ([`NOTIFY_FENCED`]) and waiters run [`shootdown_barrier`].
static BARRIER_LOST: AtomicBool = AtomicBool::new(false);

/// Set once the shootdown barrier has failed too (`mprotect` refused): from then on
/// every park sleeps in slices of at most [`SLICE_NS`].
static SLICED: AtomicBool = AtomicBool::new(false);

/// The longest sleep of a park once no process-wide barrier is left: what a light
/// notify that was under way at the switch can delay a parked thread by.
const SLICE_NS: u64 = 1_000_000;

/// Turns the light notify off for good. New notifies fence (the symmetric protocol),
/// but a notifier that read the light mode before the switch may still be between
/// its store (1) and its load (2), for as long as it is preempted there: only a
/// process-wide barrier on the waiter's side orders it. Waiters therefore run
/// [`shootdown_barrier`] from now on, which is one: a thread parked or a future armed
/// after the switch is ordered against such a notifier as with `membarrier`.
#[cold]
fn fall_back_to_fenced_notifies() {
    NOTIFY_MODE.store(NOTIFY_FENCED, Ordering::SeqCst);
    BARRIER_LOST.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
}

/// The waiter's barrier once `membarrier` is lost: the shootdown barrier, or, should
/// that fail too, a fence and sleeps in slices (a future armed then relies on the
/// notifies that follow; a refused `mprotect` of our own page is not known to
/// happen).
#[cold]
fn lost_barrier() {
    if !shootdown_barrier() {
        SLICED.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }
}

/// A page of this process's own, private and anonymous, whose protection the
/// shootdown barrier changes; mapped at registration, so that the fallback needs no
/// memory when it comes.
struct ShootdownPage {
    addr: usize,
    len: usize,
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
            // SAFETY: a fresh private anonymous mapping at an address of the
            // kernel's choice touches no memory of ours; checked below.
            let p = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            (p != libc::MAP_FAILED).then(|| ShootdownPage {
                addr: p as usize,
                len,
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
    let ptr = page.addr as *mut libc::c_void;
    // SAFETY: `ptr` and `len` are the page this process mapped and never unmaps; the
    // write goes to it only while it is writable (under the lock, between the
    // two calls), and nothing else of ours lives there.
    unsafe {
        if libc::mprotect(ptr, page.len, libc::PROT_READ | libc::PROT_WRITE) != 0 {
            return false;
        }
        core::ptr::write_volatile(ptr.cast::<u8>(), 1);
        libc::mprotect(ptr, page.len, libc::PROT_READ) == 0
    }
}

/// Whether this process is registered for `membarrier(PRIVATE_EXPEDITED)`: the first
/// call tries to register, every call blocks until that try has ended.
fn registered() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // Miri has no membarrier: its waiters fence, its notifiers never take the
        // light path.
        // The light notify needs a barrier to fall back on should `membarrier` be
        // lost later (a seccomp filter installed since): the shootdown barrier,
        // where the CPU's shootdowns interrupt and its page is mapped.
        let ok = !cfg!(miri)
            && membarrier_wanted()
            && super::x86::shootdown_interrupts()
            && shootdown_page().is_some()
            && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        if ok {
            let mode = if super::x86::prefetchw_supported() {
                NOTIFY_LIGHT_PREFETCH
            } else {
                NOTIFY_LIGHT
            };
            NOTIFY_MODE.store(mode, Ordering::SeqCst);
        }
        ok
    })
}

/// How many `fork()`s lie between the process that first parked through mwait and
/// this one: 0 there, one more in each child (a `pthread_atfork` child handler,
/// installed by the first call). See "Counts left by a fork" in `protocol.rs`.
pub(crate) fn fork_generation() -> u32 {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    // Miri cannot fork: the handler is not installed there.
    INSTALLED.get_or_init(|| {
        if cfg!(miri) {
            return;
        }
        extern "C" fn in_the_child() {
            FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the handler is a plain function for the whole life of the process;
        // it only increments an atomic, which is async-signal-safe, as a child
        // handler of a multi-threaded parent must be.
        let r = unsafe { libc::pthread_atfork(None, None, Some(in_the_child)) };
        debug_assert_eq!(r, 0, "pthread_atfork failed");
    });
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// See [`fork_generation`].
static FORK_GENERATION: AtomicU32Std = AtomicU32Std::new(0);

/// Settles the one-time `membarrier` registration (see [`super::park`]).
pub(crate) fn prepare() {
    registered();
    fork_generation();
}

/// Whether the asymmetric barrier is wanted: `MWAIT_MEMBARRIER=0` turns it off (then
/// every notify is a locked `xchg` and every park a plain fence).
fn membarrier_wanted() -> bool {
    super::settings::membarrier_wanted()
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
    if cfg!(miri) {
        // Miri has no sched_getcpu: unknown.
        return u32::MAX;
    }
    // SAFETY: sched_getcpu takes no arguments and only reads the vDSO/rseq data.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// How many threads are runnable right now, machine-wide (the fourth field of
/// `/proc/loadavg`, `running/total`; the reading thread counts itself); `None` when
/// unreadable.
pub(crate) fn running_threads() -> Option<usize> {
    let mut buf = [0u8; LOADAVG_BYTES];
    let s = read_loadavg(&mut buf)?;
    let field = s.split_whitespace().nth(3)?;
    field.split('/').next()?.parse::<usize>().ok()
}

/// Room for `/proc/loadavg`: five fields of at most about 20 characters each.
const LOADAVG_BYTES: usize = 128;

/// `/proc/loadavg` into `buf`. The file stays open after the first reading (one
/// descriptor per process, close-on-exec) and each reading is one `pread` at offset
/// 0, which has procfs write the text afresh: a sparse wait's reading comes after an
/// idle spell, when the path lookup, open and close of a fresh read would cost it
/// over ten times the `pread` (`docs/default-policy.md`, "The load reading").
/// Under Miri, which refuses host files, there is no reading.
fn read_loadavg(buf: &mut [u8]) -> Option<&str> {
    use std::os::unix::fs::FileExt;
    static LOADAVG: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    if cfg!(miri) {
        return None;
    }
    let file = LOADAVG
        .get_or_init(|| std::fs::File::open("/proc/loadavg").ok())
        .as_ref()?;
    let n = file.read_at(buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()
}

/// How many CPUs this process may use: the online CPUs within its cgroup's cpuset, at
/// most its CPU quota (`cpus.rs`), never the calling thread's affinity mask (a thread
/// that pinned itself before the first wait does not make a one-CPU process).
pub(crate) fn usable_cpus() -> Option<usize> {
    Some(super::cpus::process_cpus_from(
        &super::host::read,
        online_cpus,
    ))
}

/// `sysconf(_SC_NPROCESSORS_ONLN)` (at least 1): the online count where the sysfs list
/// cannot be read. Not the affinity mask.
fn online_cpus() -> usize {
    // SAFETY: sysconf takes a constant and reads no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0).max(1)
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
        set_affinity(&self.without(cpu).0)
    }

    /// These CPUs but `cpu`.
    pub(crate) fn without(&self, cpu: usize) -> ThreadCpus {
        let mut set = self.0;
        if cpu < libc::CPU_SETSIZE as usize {
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
            unsafe { libc::CPU_CLR(cpu, &mut set) };
        }
        ThreadCpus(set)
    }

    /// Whether the calling thread's mask is exactly these CPUs now.
    pub(crate) fn is_this_thread_s(&self) -> bool {
        ThreadCpus::of_this_thread().is_some_and(|now| {
            // SAFETY: CPU_EQUAL only reads both sets.
            unsafe { libc::CPU_EQUAL(&now.0, &self.0) }
        })
    }

    /// Gives the calling thread these CPUs again; false if the kernel refused.
    pub(crate) fn apply(&self) -> bool {
        set_affinity(&self.0)
    }
}

/// Restricts the calling thread to `set`; false when it is empty or the kernel refused.
fn set_affinity(set: &libc::cpu_set_t) -> bool {
    // SAFETY: CPU_COUNT only reads the set.
    if unsafe { libc::CPU_COUNT(set) } == 0 {
        return false;
    }
    let n = core::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `n` bytes; pid 0 is this thread.
    unsafe { libc::sched_setaffinity(0, n, set) == 0 }
}

/// Failures that the crate's unit tests inject into this thread's futex waits, to
/// test the paths that only a broken kernel or a seccomp policy would take (a
/// `membarrier` refused by a real seccomp filter is tested in `tests/env.rs`). Outside
/// `cfg(test)` they are constants that inject nothing.
pub(crate) mod inject {
    #[cfg(test)]
    std::thread_local! {
        static FUTEX_WAIT_ERRNO: std::cell::Cell<Option<i32>> =
            const { std::cell::Cell::new(None) };
    }

    /// The error this thread's futex waits fail with, if any.
    #[inline(always)]
    pub(super) fn futex_wait_errno() -> Option<i32> {
        #[cfg(test)]
        return FUTEX_WAIT_ERRNO.with(|f| f.get());
        #[cfg(not(test))]
        None
    }

    /// Makes this thread's futex waits fail with `errno` (`None`: call the kernel).
    #[cfg(test)]
    pub(crate) fn set_futex_wait_errno(errno: Option<i32>) {
        FUTEX_WAIT_ERRNO.with(|f| f.set(errno));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept descriptor reads the file afresh each time: the same text as a
    /// fresh open's, field for field (the load averages and the count of threads
    /// move between two readings, the fields stay).
    #[test]
    #[cfg_attr(miri, ignore = "Miri refuses host files")]
    fn the_kept_loadavg_reads_what_a_fresh_open_reads() {
        for _ in 0..3 {
            let mut buf = [0u8; LOADAVG_BYTES];
            let kept = read_loadavg(&mut buf).expect("/proc/loadavg is readable");
            let fresh = std::fs::read_to_string("/proc/loadavg").unwrap();
            assert_eq!(
                kept.split_whitespace().count(),
                fresh.split_whitespace().count()
            );
            assert!(running_threads().is_some_and(|n| n >= 1));
        }
    }

    #[test]
    fn a_far_deadline_gives_a_non_negative_tv_sec() {
        let ts = timespec_of(u64::MAX);
        assert!(ts.tv_sec > 0, "tv_sec {}", ts.tv_sec);
        assert!((0..1_000_000_000).contains(&ts.tv_nsec));
        let ts = timespec_of(1_500_000_000);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (1, 500_000_000));
    }

    #[test]
    fn an_unexpected_futex_error_sleeps_and_reports_a_wake_up() {
        let word = AtomicU32::new(0);
        inject::set_futex_wait_errno(Some(libc::ENOSYS));
        let far = super::super::clock::now_ns() + 10_000_000_000;
        let r = wait(&Queue, &word, 0, Some(far), false);
        let past = wait(&Queue, &word, 0, Some(0), false);
        inject::set_futex_wait_errno(None);
        assert_eq!(r, Parked::Woken);
        assert_eq!(past, Parked::TimedOut, "a passed deadline ends the wait");
        assert!(
            FUTEX_FAILURES.with(|f| f.get()) >= 1,
            "failures are counted"
        );
        let _ = wait(&Queue, &word, 1, None, false);
        assert_eq!(
            FUTEX_FAILURES.with(|f| f.get()),
            0,
            "EAGAIN resets the count"
        );
    }
}
