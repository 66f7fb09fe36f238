//! Helpers shared by the integration tests (a module of `api`, `process`,
//! `no_syscall` and `stress`): counting wakers, a waker with hooks on clone and drop,
//! a watchdog that turns a hang into a failure, re-running one test of the current
//! binary in a child process (`process/soundness.rs`, `process/footprint.rs`,
//! `process/env.rs`), and a cell whose next park runs the barrier.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// How long a case that may hang is given before it counts as hung: far beyond
/// what any of them needs on a loaded 2-vCPU VM (milliseconds), short enough that
/// a hang fails the run instead of stalling it.
pub const HANG_LIMIT: Duration = Duration::from_secs(20);

/// A value no predicate of the tests accepts: futures that wait for it stay pending.
pub const NEVER: u32 = u32::MAX;

/// How many notifies in a row that find nobody parked clear a cell's `FENCED` bit
/// (`protocol.rs`, "A cell that parks often"; the crate's constant is private).
pub const FENCED_IDLE_NOTIFIES: u32 = 32;

/// Clears the `FENCED` bit that `cell` starts with (`protocol.rs`, "A new cell starts
/// `FENCED`") by a run of stores of its value with nobody parked, so that its next
/// park or arm runs the barrier.
pub fn clear_fenced(cell: &mwait::WaitCell) {
    let v = cell.load();
    for _ in 0..FENCED_IDLE_NOTIFIES {
        cell.store(v);
    }
}

/// A future on a cell whose predicate never holds.
pub type Pending<'a> = mwait::platform::WaitUntil<'a, fn(u32) -> bool>;

/// `n` futures on `cell` that wait for [`NEVER`], each polled once (armed, in this
/// order) with a counting waker of its own: the future, its counter, its waker.
pub fn armed_futures(cell: &mwait::WaitCell, n: usize) -> Vec<(Pending<'_>, Arc<Counter>, Waker)> {
    (0..n)
        .map(|_| {
            let (counter, waker) = counting_waker();
            let never: fn(u32) -> bool = |v| v == NEVER;
            let mut fut = cell.wait_until_async(never);
            assert!(poll_with(&mut fut, &waker).is_pending());
            (fut, counter, waker)
        })
        .collect()
}

/// A waker that counts how often it was woken.
#[derive(Default)]
pub struct Counter(AtomicUsize);

impl Counter {
    /// Wake-ups so far.
    pub fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker and the counter it feeds.
pub fn counting_waker() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter::default());
    (c.clone(), Waker::from(c))
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Runs `body` on a thread of its own and fails the test (naming `what`) if it has
/// not finished within [`HANG_LIMIT`]. A hung body's thread is left behind; the test
/// binary exits anyway once every test has reported.
pub fn no_hang<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || {
        let r = body();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(HANG_LIMIT) {
        Ok(()) => t.join().unwrap(),
        // The body panicked: report its panic, not a hang.
        Err(mpsc::RecvTimeoutError::Disconnected) => match t.join() {
            Ok(r) => r,
            Err(e) => std::panic::resume_unwind(e),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {HANG_LIMIT:?} (hung)")
        }
    }
}

/// What the hooks of a [`hook_waker`] do.
pub struct Hooks {
    /// Runs on every clone of the waker.
    pub on_clone: Box<dyn Fn() + Send + Sync>,
    /// Runs on every drop of a waker (not on `wake` by value, which counts as a wake).
    pub on_drop: Box<dyn Fn() + Send + Sync>,
    /// Wake-ups so far.
    pub wakes: AtomicUsize,
}

/// A waker that runs `hooks.on_clone` when cloned and `hooks.on_drop` when dropped:
/// the wakers of tokio issue 4129, whose clone or drop touch the very primitive that
/// holds them.
pub fn hook_waker(hooks: Arc<Hooks>) -> Waker {
    // SAFETY: the data pointer is an `Arc<Hooks>` turned into a raw pointer; every
    // function of the vtable keeps the strong count equal to the number of live
    // wakers (clone adds one, wake and drop remove one), as `RawWaker` requires.
    unsafe { Waker::from_raw(raw_hook_waker(Arc::into_raw(hooks))) }
}

fn raw_hook_waker(p: *const Hooks) -> RawWaker {
    RawWaker::new(p.cast(), &HOOK_VTABLE)
}

static HOOK_VTABLE: RawWakerVTable =
    RawWakerVTable::new(hook_clone, hook_wake, hook_wake_by_ref, hook_drop);

unsafe fn hook_clone(p: *const ()) -> RawWaker {
    let p = p.cast::<Hooks>();
    // SAFETY: `p` came from `Arc::into_raw` and the waker being cloned holds a count.
    unsafe { Arc::increment_strong_count(p) };
    // SAFETY: as above: the waker being cloned keeps the `Hooks` alive.
    (unsafe { &*p }.on_clone)();
    raw_hook_waker(p)
}

unsafe fn hook_wake(p: *const ()) {
    let p = p.cast::<Hooks>();
    // SAFETY: wake by value consumes the waker's count, which `from_raw` takes over.
    let hooks = unsafe { Arc::from_raw(p) };
    hooks.wakes.fetch_add(1, Ordering::SeqCst);
}

unsafe fn hook_wake_by_ref(p: *const ()) {
    // SAFETY: the waker woken by reference holds a count for the whole call.
    unsafe { &*p.cast::<Hooks>() }
        .wakes
        .fetch_add(1, Ordering::SeqCst);
}

unsafe fn hook_drop(p: *const ()) {
    let p = p.cast::<Hooks>();
    // SAFETY: the dropped waker's count is given back here, once.
    let hooks = unsafe { Arc::from_raw(p) };
    (hooks.on_drop)();
}

/// The environment variable that tells a re-executed test binary which test body to
/// run as the child.
pub const CHILD_ENV: &str = "MWAIT_TEST_CHILD";

/// The variable that names a program (with its arguments, split at spaces) to run a
/// re-executed test binary under: `cargo xtask aarch64-test` sets it to its
/// qemu-user command, because qemu-user runs the binary it was given but not one its
/// guest executes.
pub const RUNNER_ENV: &str = "MWAIT_TEST_RUNNER";

/// A command that runs this test binary again, under [`RUNNER_ENV`] where set.
pub fn this_binary() -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let runner = std::env::var(RUNNER_ENV).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(prog) => {
            let mut c = Command::new(prog);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    }
}

/// The name the test harness knows test `name` of module `module` by (the value of
/// `module_path!()` there, whose first segment is the test binary's crate): what
/// [`run_child`] selects the child's test with.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// Whether this process is the child that `run_child(name)` started.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == name)
}

/// Whether this process is the child that runs test `name` of `module` (its
/// `module_path!()`), which then runs the test's body. In the test harness's own
/// process it runs that child while it holds what `turn` returns, checks that the
/// child succeeded, and says no.
#[cfg(unix)]
pub fn in_child<G>(module: &str, name: &str, turn: impl FnOnce() -> G) -> bool {
    let test = test_path(module, name);
    if is_child(&test) {
        return true;
    }
    let _turn = turn();
    assert_child_succeeded(&run_child(&test));
    false
}

/// Fails with the child's status and output unless it exited with status 0.
#[cfg(unix)]
pub fn assert_child_succeeded(out: &ChildOutcome) {
    use std::os::unix::process::ExitStatusExt;
    match out.status {
        // A name the harness does not know would select no test and exit 0.
        Some(s) if s.success() => assert!(
            out.output.contains("test result: ok. 1 passed"),
            "the child ran no test:\n{}",
            out.output
        ),
        Some(s) => match s.signal() {
            Some(sig) => panic!("the child died of signal {sig}:\n{}", out.output),
            None => panic!("the child failed with {s}:\n{}", out.output),
        },
        None => panic!(
            "the child hung (killed after its time limit):\n{}",
            out.output
        ),
    }
}

/// How a child run of one test ended.
#[derive(Debug)]
pub struct ChildOutcome {
    /// Its exit status; `None` when it was killed for running past [`HANG_LIMIT`].
    pub status: Option<ExitStatus>,
    /// Its standard error (and standard output), for the failure message.
    pub output: String,
}

/// Runs test `name` of this test binary again, alone, in a child process with
/// [`CHILD_ENV`] set to `name`, so that the test's body can do what would take the
/// test harness down with it (execute an instruction that raises SIGILL, fork, install
/// a seccomp filter). Kills the child after [`HANG_LIMIT`].
pub fn run_child(name: &str) -> ChildOutcome {
    let mut child = this_binary()
        .args([name, "--exact", "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD_ENV, name)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("re-running the test binary");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for the child") {
            break Some(s);
        }
        if start.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let out = child.wait_with_output().expect("the child's output");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ChildOutcome { status, output }
}
