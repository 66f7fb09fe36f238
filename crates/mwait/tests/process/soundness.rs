//! Soundness from every safe call and wholeness after every panic: one test per
//! property, each with a comment on the failure it rules out. The two that count
//! system calls need `--features test-counters`.
//!
//! Cases that would take the test harness down (SIGILL, `fork`, a seccomp filter
//! that parks a thread for good) run in a child process: the test re-runs its own
//! binary with only itself selected (`support::run_child`). Cases that can hang run
//! under a watchdog, so that a regression fails instead of stalling the run.
//!
//! Properties that the public API cannot reach from outside are tested in part here
//! (see each test's comment for what stays for a unit test inside the crate).

// Linux only: its cases need `fork`, `MAP_SHARED` memory, seccomp and `membarrier`.
#![cfg(target_os = "linux")]

use crate::support::{armed_futures, counting_waker, no_hang, poll_with, NEVER};
use mwait::{Backend, WaitCell, WaitPolicy, WaitResult};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// Parks at once: the properties below are about the park tier and the registry.
const PARK_AT_ONCE: WaitPolicy = WaitPolicy::new().backend(Backend::Futex);

/// The tests of this file take turns: some count process-wide system calls, and
/// every other one makes some.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether this process is the child of test `name`, which then runs the test's
/// body; the harness's process runs that child in its turn (`serial`).
fn in_child(name: &str) -> bool {
    crate::support::in_child(module_path!(), name, serial)
}

/// Forks a child that ends with `_exit(body())` (`body` runs on the forked copy of
/// the calling thread) and waits up to `limit` for it (`wait_child`).
fn fork_and_wait(limit: Duration, body: impl FnOnce() -> i32) -> Option<i32> {
    wait_child(fork_child(body), limit)
}

/// Forks a child that ends with `_exit(body())`; returns its pid.
fn fork_child(body: impl FnOnce() -> i32) -> libc::pid_t {
    // SAFETY: fork duplicates this process; the child runs `body` and leaves with
    // `_exit`, never returning into the test harness's frames. The callers fork
    // while their other threads sleep, wait in a join or sit in a signal handler,
    // holding no lock that `body` needs.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = catch_unwind(AssertUnwindSafe(body)).unwrap_or(100);
        // SAFETY: `_exit` ends the forked child without running the parent's
        // atexit handlers or the harness.
        unsafe { libc::_exit(code) };
    }
    pid
}

/// Waits up to `limit` for the child `pid`. Returns its exit code, or `None` when
/// it hung (it is then killed) or died of a signal (printed).
fn wait_child(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-parameter.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return Some(libc::WEXITSTATUS(status));
            }
            eprintln!("forked child ended with wait status {status:#x}");
            return None;
        }
        if start.elapsed() > limit {
            kill_child(pid);
            eprintln!("forked child hung for {limit:?}; killed");
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Kills the child `pid` with `SIGKILL` and reaps it.
fn kill_child(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: `pid` is our own child, not yet reaped; `status` is a valid
    // out-parameter.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
}

/// The shared page of the shared-cell async test: a process-shared cell and a stage word.
#[repr(C)]
struct SharedPage {
    cell: WaitCell,
    /// 1 once the async waiter has armed its future.
    armed: AtomicU32,
}

/// Exit codes of the shared-cell async waiter.
const WOKEN: i32 = 0;
const CLEAR_PANIC: i32 = 10;
const NEVER_WOKEN: i32 = 11;
const OTHER_PANIC: i32 = 12;

// An async wait on a process-shared cell must never fault or hang. The
// waker slab, with pointers into the waiter's heap, would sit in the shared page,
// where a notifier in the other process faults on them or wakes nobody; so making
// the future on a shared cell panics, with a message that names the shared cell.
// The test runs the waiter in a forked process, so that it would show a hang or a
// fault too.
#[test]
fn async_wait_on_a_shared_cell_neither_hangs_nor_faults() {
    if !in_child("async_wait_on_a_shared_cell_neither_hangs_nor_faults") {
        return;
    }
    let size = std::mem::size_of::<SharedPage>();
    // SAFETY: an anonymous shared mapping of `size` bytes, checked below; mmap
    // returns page-aligned memory, enough for the cell's 128-byte alignment.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    let page = page.cast::<SharedPage>();
    // SAFETY: the mapping is writable, aligned and large enough; it is never
    // unmapped while this process runs, so the reference lives as long as we use it.
    let shared: &SharedPage = unsafe {
        page.write(SharedPage {
            cell: WaitCell::new_shared(0),
            armed: AtomicU32::new(0),
        });
        &*page
    };
    let notifier = thread::spawn(move || {
        let start = Instant::now();
        while shared.armed.load(Ordering::SeqCst) == 0
            && start.elapsed() < crate::support::HANG_LIMIT
        {
            thread::sleep(Duration::from_millis(1));
        }
        shared.cell.store(1);
    });
    let code = fork_and_wait(crate::support::HANG_LIMIT, || {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let (wakes, waker) = counting_waker();
            let mut fut = shared.cell.wait_until_async(|v| v == 1);
            if poll_with(&mut fut, &waker).is_ready() {
                return WOKEN;
            }
            shared.armed.store(1, Ordering::SeqCst);
            let start = Instant::now();
            while wakes.wakes() == 0 {
                if start.elapsed() > Duration::from_secs(5) {
                    return NEVER_WOKEN;
                }
                thread::sleep(Duration::from_millis(1));
            }
            match poll_with(&mut fut, &waker) {
                Poll::Ready(1) => WOKEN,
                _ => NEVER_WOKEN,
            }
        }));
        r.unwrap_or_else(|e| {
            let msg = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if msg.contains("shared") {
                CLEAR_PANIC
            } else {
                OTHER_PANIC
            }
        })
    });
    // The waiter may have refused before arming: let the notifier go on.
    shared.armed.store(1, Ordering::SeqCst);
    notifier.join().expect("the notifier's store");
    assert_eq!(
        code,
        Some(CLEAR_PANIC),
        "the async waiter in the other process ended with {code:?} \
         (0 woken, 10 clear panic, 11 never woken, 12 other panic, None hung or signal)"
    );
}

// A predicate that panics in the re-check made after the waiter announced
// its park must not leave the announcement behind (a drop guard in the park half
// withdraws it); left behind, `parked_waiters()` stays 1 with nobody waiting. (The same leak
// through the `assert!` in the waiter barrier and a failing futex wait needs an
// injected failure: unit tests in protocol.rs, through sys/os/linux/futex.rs's injection.)
#[test]
fn a_panicking_predicate_leaves_no_parked_waiter() {
    let _g = serial();
    let cell = WaitCell::with_policy(0, PARK_AT_ONCE);
    let r = catch_unwind(AssertUnwindSafe(|| {
        cell.wait_until(|_| {
            // Only the re-check after the announcement sees a parked count.
            assert!(
                cell.parked_waiters() == 0,
                "the predicate panics while counted"
            );
            false
        })
    }));
    assert!(r.is_err(), "the predicate's panic propagates");
    assert_eq!(
        cell.parked_waiters(),
        0,
        "the panicked waiter is still counted"
    );
}

/// A waker whose `wake` panics.
struct PanickingWaker;
impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics");
    }
}

// A waker that panics when woken must not strand the other wakers taken in
// the same batch: a notifier's loop that unwound at the first one would drop the
// rest unwoken. (The other half of the property, wakers cloned and
// dropped under the registry lock, is `tokio_4129_*` in conformance.rs.)
#[test]
fn a_panicking_waker_does_not_strand_its_batch() {
    let _g = serial();
    let cell = WaitCell::new(0);
    let bad = Waker::from(Arc::new(PanickingWaker));
    let (good_wakes, good) = counting_waker();
    let mut first = cell.wait_until_async(|v| v == NEVER);
    let mut second = cell.wait_until_async(|v| v == NEVER);
    assert!(poll_with(&mut first, &bad).is_pending());
    assert!(poll_with(&mut second, &good).is_pending());
    let _ = catch_unwind(AssertUnwindSafe(|| cell.store(1)));
    assert_eq!(
        good_wakes.wakes(),
        1,
        "the future after the panicking waker was not woken"
    );
}

// `notify_one` must not starve an armed future while another keeps
// re-arming. Two futures, ten `notify_one`s, the woken one re-polled (re-armed) after
// each, as its task would: both must be woken, not the lowest slot ten times.
#[test]
fn notify_one_does_not_starve_an_armed_future() {
    const NOTIFIES: usize = 10;
    let _g = serial();
    let cell = WaitCell::new(0);
    let mut futs = armed_futures(&cell, 2);
    let [(a, a_wakes, a_waker), (b, b_wakes, b_waker)] = &mut futs[..] else {
        unreachable!()
    };
    for _ in 0..NOTIFIES {
        let before = (a_wakes.wakes(), b_wakes.wakes());
        cell.notify_one();
        if a_wakes.wakes() > before.0 {
            assert!(poll_with(a, a_waker).is_pending());
        }
        if b_wakes.wakes() > before.1 {
            assert!(poll_with(b, b_waker).is_pending());
        }
    }
    assert_eq!(a_wakes.wakes() + b_wakes.wakes(), NOTIFIES);
    assert!(
        a_wakes.wakes() > 0 && b_wakes.wakes() > 0,
        "starved: {} and {} wakes",
        a_wakes.wakes(),
        b_wakes.wakes()
    );
}

/// Whether `MWAIT_MEMBARRIER=0` turned the asymmetric barrier off.
#[cfg(feature = "test-counters")]
fn membarrier_off() -> bool {
    std::env::var("MWAIT_MEMBARRIER").is_ok_and(|v| v.trim() == "0")
}

// Re-polling a pending future with the same waker must not run
// `membarrier` each time (arming follows the FENCED rule of parks): 100 re-polls
// must not make 100 calls. Needs `--features test-counters`.
#[cfg(feature = "test-counters")]
#[test]
fn repolls_do_not_run_membarrier_each_time() {
    use mwait::test_counters::membarrier_calls;
    const REPOLLS: u64 = 100;
    let _g = serial();
    if membarrier_off() {
        return;
    }
    let cell = WaitCell::new(0);
    // A new cell starts FENCED, and its arms run no barrier at all: clear the bit,
    // so that the first arm runs one.
    crate::support::clear_fenced(&cell);
    let (_, waker) = counting_waker();
    let mut fut = cell.wait_until_async(|v| v == NEVER);
    // The first poll arms, runs the barrier and marks the cell FENCED (and registers
    // for membarrier if nothing has yet).
    let armed = membarrier_calls();
    assert!(poll_with(&mut fut, &waker).is_pending());
    let before = membarrier_calls();
    assert!(
        before > armed,
        "the first arm on the cleared cell ran the barrier"
    );
    for _ in 0..REPOLLS {
        assert!(poll_with(&mut fut, &waker).is_pending());
    }
    let calls = membarrier_calls() - before;
    assert!(
        calls <= 1,
        "{REPOLLS} re-polls ran membarrier {calls} times"
    );
}

/// Classic BPF opcodes (linux/filter.h) for the seccomp filters below: load a word at
/// an absolute offset (`BPF_LD | BPF_W | BPF_ABS`), jump if equal to a constant
/// (`BPF_JMP | BPF_JEQ | BPF_K`), return a constant (`BPF_RET | BPF_K`).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
/// `AUDIT_ARCH_X86_64` (linux/audit.h).
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// Offsets in `struct seccomp_data`: the syscall number, the arch, the low half of
/// the second argument.
const SECCOMP_NR: u32 = 0;
const SECCOMP_ARCH: u32 = 4;
const SECCOMP_ARG1_LO: u32 = 24;

/// Installs on the calling thread (only) a seccomp filter that answers `action` to
/// system call `nr` when its second argument's low half is `arg1` (any second
/// argument when `arg1` is `None`), and allows everything else.
fn install_seccomp(nr: libc::c_long, arg1: Option<u32>, action: u32) {
    let stmt = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k, jt, jf| libc::sock_filter {
        code: BPF_JEQ_K,
        jt,
        jf,
        k,
    };
    let allow = stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW);
    let act = stmt(BPF_RET_K, action);
    let mut prog = vec![
        stmt(BPF_LD_W_ABS, SECCOMP_ARCH),
        jeq(AUDIT_ARCH_X86_64, 1, 0),
        allow,
        stmt(BPF_LD_W_ABS, SECCOMP_NR),
        jeq(nr as u32, 1, 0),
        allow,
    ];
    if let Some(a) = arg1 {
        prog.extend([stmt(BPF_LD_W_ABS, SECCOMP_ARG1_LO), jeq(a, 1, 0), allow]);
    }
    prog.push(act);
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: prctl with these options takes integers and a pointer to a valid
    // `sock_fprog`, which the kernel copies before returning.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        let r = libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        );
        assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
}

// A futex wait that fails with an errno the ladder does not expect (here
// ENOSYS, as under a seccomp policy; the same path as the EINVAL of a far deadline
// with a 32-bit `time_t`) must neither panic nor spin until its deadline: a loop on
// the failing call would re-check the predicate tens of thousands of times in the
// 200 ms. A waiter that sleeps (or gives up) re-checks it a handful of
// times; the bound below allows one re-check per 200 µs. The filter fails only
// process-shared FUTEX_WAIT_BITSET, which std never uses, on one thread. (The
// 32-bit `time_t` clamp itself is a unit test of the timespec conversion in the
// crate's sys layer: a deadline of `u64::MAX` ns gives a non-negative `tv_sec` on
// every target, checked on i686 too.)
#[test]
fn an_unexpected_futex_errno_neither_panics_nor_spins() {
    const TIMEOUT: Duration = Duration::from_millis(200);
    const MAX_RECHECKS: u32 = 1_000;
    let _g = serial();
    let (r, rechecks) = no_hang("a wait whose futex fails", || {
        install_seccomp(
            libc::SYS_futex,
            Some(libc::FUTEX_WAIT_BITSET as u32),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        );
        let cell = WaitCell::new_shared(0);
        let mut rechecks = 0u32;
        let r = catch_unwind(AssertUnwindSafe(|| {
            let deadline = Instant::now() + TIMEOUT;
            cell.wait_until_deadline_with(
                |v| {
                    rechecks += 1;
                    v == 1
                },
                deadline,
                &PARK_AT_ONCE,
            )
        }));
        (r, rechecks)
    });
    let r = r.unwrap_or_else(|_| panic!("the wait panicked on ENOSYS"));
    assert_eq!(r, WaitResult::TimedOut(0));
    assert!(
        rechecks <= MAX_RECHECKS,
        "{rechecks} re-checks in {TIMEOUT:?}: the wait spins on the failing futex"
    );
}

/// Set by the SIGSYS handler of the fork test once its thread is stuck in it.
static TRAPPED: AtomicBool = AtomicBool::new(false);

/// Holds the thread that made the trapped system call in the handler for good, so
/// that it stays inside whatever it was initialising.
extern "C" fn hold_forever(_: libc::c_int) {
    TRAPPED.store(true, Ordering::SeqCst);
    loop {
        // SAFETY: pause is async-signal-safe and takes no arguments.
        unsafe { libc::pause() };
    }
}

// `fork()` while another thread is inside the one-time membarrier
// registration. A seccomp filter traps that thread's `membarrier` call and holds it
// in the SIGSYS handler, so that the registration's `OnceLock` is mid-initialisation
// when the main thread forks; the forked child's first park on a private cell must
// still return. Without `mwait::prepare()` before the trapped thread starts, it
// blocks for ever on the `OnceLock`; with it, the registration is settled and the
// child parks normally.
#[test]
fn fork_during_registration_leaves_the_child_able_to_park() {
    if !in_child("fork_during_registration_leaves_the_child_able_to_park") {
        return;
    }
    if std::env::var("MWAIT_MEMBARRIER").is_ok_and(|v| v.trim() == "0") {
        println!("MWAIT_MEMBARRIER=0: no registration to interrupt");
        return;
    }
    mwait::prepare();
    // SAFETY: installs a handler that only stores to an atomic and calls pause(),
    // both async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = hold_forever as extern "C" fn(libc::c_int) as libc::sighandler_t;
        assert_eq!(libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut()), 0);
    }
    thread::spawn(|| {
        install_seccomp(libc::SYS_membarrier, None, libc::SECCOMP_RET_TRAP);
        let cell = WaitCell::with_policy(0, PARK_AT_ONCE);
        // A new cell starts FENCED: clear it, so that this park runs `membarrier`.
        crate::support::clear_fenced(&cell);
        let _ = cell.wait_until_timeout(|v| v == 1, Duration::from_millis(1));
    });
    let start = Instant::now();
    while !TRAPPED.load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < crate::support::HANG_LIMIT,
            "membarrier never trapped"
        );
        thread::sleep(Duration::from_millis(1));
    }
    let code = fork_and_wait(Duration::from_secs(5), || {
        let cell = WaitCell::with_policy(0, PARK_AT_ONCE);
        let r = cell.wait_until_timeout(|v| v == 1, Duration::from_millis(10));
        i32::from(r != WaitResult::TimedOut(0))
    });
    assert_eq!(
        code,
        Some(0),
        "the forked child's first park (None: it hung)"
    );
}

// `Barrier::wait` must wake the parked parties once per generation (the
// last arrival's release), not on every arrival, which would make the parties
// re-park. Four parties on the park tier, the first three arriving one by one while
// the earlier ones are parked: each generation may make one futex wake. Needs `--features test-counters`.
#[cfg(feature = "test-counters")]
#[test]
fn barrier_wakes_once_per_generation() {
    use mwait::test_counters::futex_wake_calls;
    use mwait::Barrier;
    const PARTIES: u32 = 4;
    const GENERATIONS: u64 = 3;
    /// Long enough for an arrival to park before the next one comes (a few µs are
    /// needed): only the chance of showing a regression depends on it, not the pass.
    const STAGGER: Duration = Duration::from_millis(20);
    let _g = serial();
    let barrier = Barrier::with_policy(PARTIES, PARK_AT_ONCE);
    let before = futex_wake_calls();
    for _ in 0..GENERATIONS {
        thread::scope(|s| {
            for _ in 1..PARTIES {
                s.spawn(|| barrier.wait());
                thread::sleep(STAGGER);
            }
            barrier.wait();
        });
    }
    let wakes = futex_wake_calls() - before;
    assert!(
        wakes <= GENERATIONS,
        "{wakes} futex wakes for {GENERATIONS} generations"
    );
}

/// How a waiter in a forked child used a process-shared cell.
#[derive(Copy, Clone, Debug)]
enum SharedEntry {
    /// `wait_until`: woken by the parent's store.
    Blocking,
    /// `wait_until_deadline`: woken by the parent's `notify_all` after a write
    /// through `as_atomic`.
    Deadline,
    /// `wait_any` with the cell as a member: refused.
    WaitAny,
    /// `wait_until_async`: refused.
    Async,
}

/// The panic message of a caught panic ("" if it is not a string).
fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

// Every public entry that can reach a process-shared cell, from a forked child,
// while the parent writes to the cell through each writer: the blocking waits are
// woken, `wait_any` and the async wait are refused with a panic that names the rule
// before anything is written to the cell, and the notifying parent survives each
// one (a `wait_any` member once made the parent's store die of SIGSEGV in the
// registry, and leave the registry's lock held).
#[test]
fn every_entry_on_a_shared_cell_wakes_or_is_refused_and_the_notifier_survives() {
    if !in_child("every_entry_on_a_shared_cell_wakes_or_is_refused_and_the_notifier_survives") {
        return;
    }
    mwait::prepare();
    let cells = mwait::SharedCells::new(2).expect("a shared mapping");
    let cells: &'static mwait::SharedCells = Box::leak(Box::new(cells));
    let (cell, stage) = (&cells[0], &cells[1]);
    for entry in [
        SharedEntry::Blocking,
        SharedEntry::Deadline,
        SharedEntry::WaitAny,
        SharedEntry::Async,
    ] {
        cell.store(0);
        stage.store(0);
        let notifier = thread::spawn(move || {
            // The child says when it is about to wait (or has been refused).
            let _ = stage.wait_until_timeout(|v| v != 0, crate::support::HANG_LIMIT);
            thread::sleep(Duration::from_millis(20));
            cell.store(1);
            cell.swap(1);
            cell.as_atomic().store(1, Ordering::SeqCst);
            cell.notify_all();
            cell.fetch_add(0);
        });
        let code = fork_and_wait(crate::support::HANG_LIMIT, move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            let r = catch_unwind(AssertUnwindSafe(|| match entry {
                SharedEntry::Blocking => {
                    stage.store(1);
                    i32::from(cell.wait_until(|v| v == 1) != 1)
                }
                SharedEntry::Deadline => {
                    stage.store(1);
                    match cell.wait_until_deadline(|v| v == 1, deadline) {
                        WaitResult::Ready(1) => 0,
                        _ => 1,
                    }
                }
                SharedEntry::WaitAny => {
                    let m = [mwait::atomic::Member::cell(cell, 0)];
                    let _ = mwait::atomic::wait_any_deadline(&m, deadline);
                    NEVER_WOKEN
                }
                SharedEntry::Async => {
                    let (_, waker) = counting_waker();
                    let mut fut = cell.wait_until_async(|v| v == 1);
                    let _ = poll_with(&mut fut, &waker);
                    NEVER_WOKEN
                }
            }));
            let untouched = cell.armed_async_waiters() == 0 && cell.parked_waiters() == 0;
            stage.store(1);
            match r {
                Ok(code) => code,
                Err(e) if panic_text(&*e).contains("process-shared") && untouched => CLEAR_PANIC,
                Err(_) => OTHER_PANIC,
            }
        });
        notifier.join().expect("the notifier survives");
        let want = match entry {
            SharedEntry::Blocking | SharedEntry::Deadline => WOKEN,
            SharedEntry::WaitAny | SharedEntry::Async => CLEAR_PANIC,
        };
        assert_eq!(
            code,
            Some(want),
            "{entry:?}: the child ended with {code:?} (0 woken, 10 clear panic, \
             11 never woken, 12 other panic, None hung or signal)"
        );
        // The parent's notifies after the child ended: still no fault.
        cell.store(2);
        cell.notify_all();
    }
}

// A waiter killed while parked on a process-shared cell leaves its count behind:
// nothing in the cell tells it from a live waiter between its announcement and its
// sleep. The waiters that remain, in another process and in the notifier's own,
// must still be woken, and the notifier must neither hang nor fault; the count
// stays, as `WaitCell::new_shared` documents.
#[test]
fn a_waiter_killed_while_parked_on_a_shared_cell_strands_nobody() {
    if !in_child("a_waiter_killed_while_parked_on_a_shared_cell_strands_nobody") {
        return;
    }
    mwait::prepare();
    let cells = mwait::SharedCells::new(1).expect("a shared mapping");
    let cell: &'static WaitCell = &Box::leak(Box::new(cells))[0];
    let parked = |n: u32| {
        let counted =
            mwait_support::poll_until(crate::support::HANG_LIMIT, || cell.parked_waiters() == n);
        assert!(
            counted,
            "{} parked waiters, never {n}",
            cell.parked_waiters()
        );
    };
    // Both children are forked while this process has no other thread.
    let victim = fork_child(|| {
        cell.wait_until(|v| v == NEVER);
        OTHER_PANIC
    });
    parked(1);
    kill_child(victim);
    assert_eq!(cell.parked_waiters(), 1, "the killed waiter's count stays");
    let live = fork_child(
        || match cell.wait_until_timeout(|v| v == 1, Duration::from_secs(10)) {
            WaitResult::Ready(1) => WOKEN,
            _ => NEVER_WOKEN,
        },
    );
    let local = thread::spawn(|| cell.wait_until_timeout(|v| v == 1, Duration::from_secs(10)));
    parked(3);
    cell.store(1);
    assert_eq!(
        local.join().expect("the local waiter"),
        WaitResult::Ready(1)
    );
    assert_eq!(wait_child(live, crate::support::HANG_LIMIT), Some(WOKEN));
    assert_eq!(cell.parked_waiters(), 1);
    // Later notifies each make a wake call that finds nobody, and return.
    for v in 2..100 {
        cell.store(v);
    }
    cell.notify_all();
}

// A predicate that forks inside the park: the child goes on as the waiter,
// counted under the parent's fork tag. A store in the child must wake it (it once
// slept to its deadline, the child's notify having dropped the parent's count), and
// its withdrawal must not underflow the count (it read 262143 parked waiters).
#[test]
fn a_predicate_that_forks_inside_the_park_leaves_a_waiter_that_wakes() {
    if !in_child("a_predicate_that_forks_inside_the_park_leaves_a_waiter_that_wakes") {
        return;
    }
    mwait::prepare();
    static CELL: WaitCell = WaitCell::with_policy(0, PARK_AT_ONCE);
    static FORKED: AtomicBool = AtomicBool::new(false);
    static CHILD: AtomicU32 = AtomicU32::new(0);
    let waited = Instant::now();
    let v = CELL.wait_until_timeout(
        |v| {
            // The re-check inside the park: the announcement stands.
            if v == 0 && CELL.parked_waiters() == 1 && !FORKED.swap(true, Ordering::SeqCst) {
                // SAFETY: this process has no other thread (the harness's child
                // runs this test alone; the calls below run in the child only after
                // fork returns 0, and spawn a thread there, as a fresh process may).
                let pid = unsafe { libc::fork() };
                assert!(pid >= 0);
                if pid == 0 {
                    CHILD.store(1, Ordering::SeqCst);
                    thread::spawn(|| {
                        thread::sleep(Duration::from_millis(50));
                        CELL.store(1);
                    });
                } else {
                    CHILD.store(pid as u32, Ordering::SeqCst);
                    // The parent goes on waiting: its own store ends it.
                    CELL.store(1);
                }
            }
            v == 1
        },
        Duration::from_secs(10),
    );
    let in_child = CHILD.load(Ordering::SeqCst) == 1;
    let took = waited.elapsed();
    let parked = CELL.parked_waiters();
    if in_child {
        let ok = v == WaitResult::Ready(1) && took < Duration::from_secs(5) && parked == 0;
        if !ok {
            eprintln!("child: {v:?} after {took:?}, {parked} parked");
        }
        // SAFETY: leaves the forked child without running the harness's exit path.
        unsafe { libc::_exit(i32::from(!ok)) };
    }
    assert_eq!(v, WaitResult::Ready(1));
    assert_eq!(parked, 0);
    let pid = CHILD.load(Ordering::SeqCst) as libc::pid_t;
    let mut status = 0;
    // SAFETY: `pid` is our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked waiter: wait status {status:#x}"
    );
}

static AFFINITY_CALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_affinity_call(_: libc::c_int) {
    AFFINITY_CALLED.store(true, Ordering::SeqCst);
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity`).
fn set_cpus(cpus: &[usize]) {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET stays within it for
    // CPU numbers below CPU_SETSIZE; sched_setaffinity reads `size` bytes of it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(libc::sched_setaffinity(0, size, &set), 0);
    }
}

// The default policy never changes its caller's affinity: a pair of threads
// that the scheduler put on one CPU ping-pongs 2000 times, each thread under a
// seccomp filter that traps `sched_setaffinity` once the test's own set-up is done.
// (The library once narrowed and restored the mask of such a thread at every
// hand-off, 18 calls in a plain producer/consumer under `strace -f -c`.) The opt-in
// (`WaitPolicy::move_apart`) is tested in the crate's `ladder/apart.rs`.
#[test]
fn the_default_policy_never_calls_sched_setaffinity() {
    if !in_child("the_default_policy_never_calls_sched_setaffinity") {
        return;
    }
    let all: Vec<usize> =
        (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    // SAFETY: sched_getcpu takes no arguments.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = note_affinity_call as extern "C" fn(libc::c_int) as libc::sighandler_t;
        assert_eq!(libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut()), 0);
    }
    mwait::prepare();
    const ROUNDS: u32 = 2_000;
    let cells: &'static [WaitCell; 2] = Box::leak(Box::new([WaitCell::new(0), WaitCell::new(0)]));
    let ready = Arc::new(std::sync::Barrier::new(2));
    let side = |first: bool| {
        let all = all.clone();
        let ready = ready.clone();
        thread::spawn(move || {
            // Start together on one CPU, then give the mask back: the scheduler
            // tends to leave such a pair where it is.
            set_cpus(&[cpu]);
            ready.wait();
            set_cpus(&all);
            install_seccomp(libc::SYS_sched_setaffinity, None, libc::SECCOMP_RET_TRAP);
            for i in 1..=ROUNDS {
                if first {
                    cells[0].store(i);
                    cells[1].wait_until(|v| v == i);
                } else {
                    cells[0].wait_until(|v| v == i);
                    cells[1].store(i);
                }
            }
        })
    };
    let a = side(true);
    let b = side(false);
    a.join().unwrap();
    b.join().unwrap();
    assert!(
        !AFFINITY_CALLED.load(Ordering::SeqCst),
        "the library called sched_setaffinity on its caller's thread"
    );
}
