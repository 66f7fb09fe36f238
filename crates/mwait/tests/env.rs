//! The environment variables, end to end: each case re-runs this test binary as a
//! child process with the variables set (the selection is made once per process).

use mwait::{Backend, Capabilities};
use std::process::Command;

/// Set in the child: which case to run.
const CHILD: &str = "MWAIT_TEST_ENV_CHILD";

/// Runs `case` in a child with `vars`; returns (success, stdout + stderr). The child
/// runs under `MWAIT_TEST_RUNNER` where set (see `support::RUNNER_ENV`).
fn child(case: &str, vars: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let runner = std::env::var("MWAIT_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    let mut cmd = match words.next() {
        Some(prog) => {
            let mut c = Command::new(prog);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .env_remove("MWAIT_BACKEND")
        .env_remove("MWAIT_DISABLE")
        .env_remove("MWAIT_UNSAFE_FORCE");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The child side: does what `MWAIT_TEST_ENV_CHILD` says; a no-op in the parent run.
#[test]
fn child_entry() {
    let Ok(case) = std::env::var(CHILD) else {
        return;
    };
    match case.as_str() {
        "report" => {
            let sel = mwait::selection();
            println!("backend={} reason={}", sel.backend, sel.reason);
        }
        "wait" => {
            let cell = mwait::WaitCell::new(1);
            // A wait that must climb the ladder (timed out at once) resolves the
            // selection, which panics on a refused environment.
            let r = cell.wait_until_timeout(|v| v == 2, std::time::Duration::from_micros(1));
            println!("waited: {r:?}");
        }
        #[cfg(target_os = "linux")]
        "membarrier_denied" => membarrier_denied_after_registration(),
        other => panic!("unknown case {other}"),
    }
}

/// The child of [`a_process_that_loses_membarrier_falls_back_to_fenced_notifies`]:
/// registers for `membarrier` (a first park), then installs a seccomp filter that
/// refuses it, as a sandbox applied after `fork()` would, and parks on fresh cells,
/// each of which needs the barrier.
#[cfg(target_os = "linux")]
fn membarrier_denied_after_registration() {
    use mwait::{Backend, WaitCell, WaitPolicy, WaitResult};
    use std::time::{Duration, Instant};
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let round = |value: u32| {
        let cell = WaitCell::new(0);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| cell.wait_until_with(|v| v == value, &park_at_once));
            std::thread::sleep(Duration::from_millis(2));
            cell.store(value);
            assert_eq!(waiter.join().unwrap(), value);
        });
    };
    mwait::prepare();
    round(1);
    mwait_support::deny_syscall(libc::SYS_membarrier, libc::EPERM as u16)
        .expect("install the seccomp filter");
    for value in 2..20 {
        round(value);
    }
    // Futures armed after the switch: their barrier is the TLB shootdown now.
    for value in 20..30 {
        let cell = WaitCell::new(0);
        std::thread::scope(|s| {
            let storer = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(2));
                cell.store(value);
            });
            assert_eq!(
                mwait::block_on(cell.wait_until_async(|v| v == value)),
                value
            );
            storer.join().unwrap();
        });
    }
    // A park with nothing stored still ends at its deadline, not before.
    let cell = WaitCell::new(0);
    let start = Instant::now();
    let deadline = start + Duration::from_millis(20);
    let r = cell.wait_until_deadline_with(|v| v == 1, deadline, &park_at_once);
    assert_eq!(r, WaitResult::TimedOut(0));
    assert!(Instant::now() >= deadline);
    println!("parks after membarrier was refused: ok");
}

/// A process whose `membarrier` starts failing after registration (a seccomp filter
/// in a child) falls back to the fenced notify instead of panicking, and its waits
/// still end when the value is stored or the deadline passes.
#[cfg(target_os = "linux")]
#[test]
fn a_process_that_loses_membarrier_falls_back_to_fenced_notifies() {
    let (ok, out) = child("membarrier_denied", &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("parks after membarrier was refused: ok"),
        "{out}"
    );
}

#[test]
fn forced_spin_and_futex_are_used_and_reported() {
    for name in ["spin", "futex"] {
        if !Capabilities::detect().offers(name.parse().unwrap()) {
            continue;
        }
        let (ok, out) = child("report", &[("MWAIT_BACKEND", name)]);
        assert!(ok, "{out}");
        assert!(out.contains(&format!("backend={name} ")), "{out}");
        assert!(out.contains("MWAIT_BACKEND"), "{out}");
    }
}

#[test]
fn forcing_a_backend_the_cpu_lacks_fails_loudly_on_first_wait() {
    let caps = Capabilities::detect();
    for b in Backend::ALL.into_iter().filter(|b| b.is_hardware()) {
        let (ok, out) = child("wait", &[("MWAIT_BACKEND", b.name())]);
        if caps.offers(b) {
            assert!(ok, "{b} is offered here, forcing it must work: {out}");
        } else {
            assert!(!ok, "{b} is not offered here, forcing it must fail: {out}");
            assert!(
                out.contains(&format!(
                    "mwait: MWAIT_BACKEND={b}: this machine does not offer it"
                )),
                "{out}"
            );
        }
    }
}

#[test]
fn kill_switch_removes_hardware_backends_from_auto_selection() {
    let (ok, out) = child("report", &[("MWAIT_DISABLE", "hw")]);
    assert!(ok, "{out}");
    assert!(
        !out.contains("backend=umwait")
            && !out.contains("backend=mwaitx")
            && !out.contains("backend=kernel")
            && !out.contains("backend=wfe"),
        "{out}"
    );
}

#[test]
fn garbage_in_the_environment_names_the_variable() {
    let (ok, out) = child("wait", &[("MWAIT_BACKEND", "warp-drive")]);
    assert!(!ok);
    assert!(
        out.contains("MWAIT_BACKEND: unknown backend `warp-drive`"),
        "{out}"
    );
}

/// A child of `fork()` inherits a private cell's count of the parent's parked thread,
/// which does not run in the child: its first notify removes the count (instead of
/// sending every notify to the slow path for ever), while the parent's thread stays
/// parked and counted in the parent.
#[cfg(target_os = "linux")]
#[test]
fn a_child_of_fork_drops_the_parents_parked_count() {
    use mwait::{Backend, WaitCell, WaitPolicy};
    static CELL: WaitCell = WaitCell::new(0);
    let parked = std::thread::spawn(|| {
        CELL.wait_until_with(|v| v == 100, &WaitPolicy::new().backend(Backend::Futex))
    });
    assert!(mwait_support::poll_until(
        std::time::Duration::from_secs(10),
        || CELL.parked_waiters() == 1
    ));
    let status = mwait_support::in_forked_child(|| {
        if CELL.parked_waiters() != 1 {
            return 2;
        }
        CELL.store(1);
        i32::from(CELL.parked_waiters() != 0)
    });
    assert_eq!(status, 0, "the child's notify removed the parent's count");
    assert_eq!(
        CELL.parked_waiters(),
        1,
        "the parent's thread is still counted"
    );
    CELL.store(100);
    assert_eq!(parked.join().unwrap(), 100);
}
