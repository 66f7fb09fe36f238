//! The environment variables, end to end: each case re-runs this test binary as a
//! child process with the variables set (the selection is made once per process).

use mwait::{Backend, Capabilities};
use std::process::Command;

/// Set in the child: which case to run.
const CHILD: &str = "MWAIT_TEST_ENV_CHILD";

/// Runs `case` in a child with `vars`; returns (success, stdout + stderr). The child
/// runs under `MWAIT_TEST_RUNNER` where set (see `crate::support::RUNNER_ENV`).
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
    let entry = crate::support::test_path(module_path!(), "child_entry");
    cmd.args(["--exact", &entry, "--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .env_remove("MWAIT_BACKEND")
        .env_remove("MWAIT_DISABLE")
        .env_remove("MWAIT_UNSAFE_FORCE")
        .env_remove("MWAIT_STRICT")
        .env_remove("MWAIT_LOG")
        .env_remove("MWAIT_MEMBARRIER")
        .env_remove("MWAIT_MOVE_APART");
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
        "waits" => waits_in_threads(&mwait::WaitPolicy::new()),
        "policy_backend" => {
            let b: Backend = std::env::var("MWAIT_TEST_POLICY_BACKEND")
                .unwrap()
                .parse()
                .unwrap();
            waits_in_threads(&mwait::WaitPolicy::new().backend(b));
        }
        "settings" => settings_from_code(),
        #[cfg(target_os = "linux")]
        "membarrier_denied" => membarrier_denied_after_registration(),
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        "registrations" => {
            // Before any wait of this process: what the program's loading did.
            // SAFETY: membarrier with GET_REGISTRATIONS reads no memory of ours.
            let r = unsafe {
                libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0)
            };
            // The notifier's path, so that this test binary links what a program that
            // notifies links.
            mwait::WaitCell::new(0).store(1);
            println!("registrations={r}");
        }
        other => panic!("unknown case {other}"),
    }
}

/// Waits under `policy` in four threads, each one that times out and one that parks
/// and is woken by a store (so that the `membarrier` registration runs too).
fn waits_in_threads(policy: &mwait::WaitPolicy) {
    use std::time::Duration;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let cell = mwait::WaitCell::new(0);
                let deadline = std::time::Instant::now() + Duration::from_micros(50);
                let r = cell.wait_until_deadline_with(|v| v == 1, deadline, policy);
                assert_eq!(r, mwait::WaitResult::TimedOut(0));
                std::thread::scope(|s| {
                    let waiter = s.spawn(|| cell.wait_until_with(|v| v == 2, policy));
                    std::thread::sleep(Duration::from_millis(5));
                    cell.store(2);
                    assert_eq!(waiter.join().unwrap(), 2);
                });
            });
        }
    });
    println!("waits: ok");
}

/// The child of [`settings_from_code_apply_before_the_first_wait_only`].
fn settings_from_code() {
    use mwait::platform::{NotifyMode, SettingsError};
    use mwait::Settings;
    let caps = Capabilities::detect();
    if let Some(&missing) = [Backend::Umwait, Backend::Mwaitx, Backend::Kernel]
        .iter()
        .find(|b| !caps.offers(**b))
    {
        let e = Settings::new().backend(missing).apply().unwrap_err();
        assert!(
            matches!(e, SettingsError::NotOffered { backend, .. } if backend == missing),
            "{e}"
        );
    }
    Settings::new()
        .backend(Backend::Futex)
        .disable(Backend::Umwait)
        .notify_mode(NotifyMode::Fenced)
        .apply()
        .unwrap();
    waits_in_threads(&mwait::WaitPolicy::new());
    let sel = mwait::selection();
    assert_eq!(sel.backend, Backend::Futex);
    assert!(
        sel.reason.contains("Settings::backend(futex)"),
        "{}",
        sel.reason
    );
    assert!(sel.disabled.contains(&Backend::Umwait));
    assert_eq!(
        Settings::new().disable(Backend::Kernel).apply(),
        Err(SettingsError::AlreadyChosen)
    );
    println!("settings: ok");
}

/// The lines mwait wrote about its settings.
fn warnings(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("mwait: ")).collect()
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
    // A new cell starts `FENCED` and its first park runs no barrier: clear the bit,
    // so that the first park (or arm) of the cell runs one.
    let needing_the_barrier = || {
        let cell = WaitCell::new(0);
        crate::support::clear_fenced(&cell);
        cell
    };
    let round = |value: u32| {
        let cell = needing_the_barrier();
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
        let cell = needing_the_barrier();
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
    let cell = needing_the_barrier();
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

/// A backend the machine lacks, forced by `MWAIT_BACKEND`, is reported in one line
/// (the variable, its value, what is used instead) and the waits use the automatic
/// choice; under `MWAIT_STRICT=1` the first wait panics with the reason.
#[test]
fn forcing_a_backend_the_cpu_lacks_warns_once_and_waits() {
    let caps = Capabilities::detect();
    for b in Backend::ALL.into_iter().filter(|b| b.is_hardware()) {
        let (ok, out) = child("waits", &[("MWAIT_BACKEND", b.name())]);
        assert!(ok, "{b}: {out}");
        if caps.offers(b) {
            assert!(warnings(&out).is_empty(), "{b} is offered here: {out}");
            continue;
        }
        let lines = warnings(&out);
        assert_eq!(lines.len(), 1, "one line per process: {out}");
        assert!(
            lines[0].contains(&format!(
                "MWAIT_BACKEND={b}: this machine does not offer it"
            )) && lines[0].contains("waits use"),
            "{out}"
        );
        let (ok, out) = child(
            "wait",
            &[("MWAIT_BACKEND", b.name()), ("MWAIT_STRICT", "1")],
        );
        assert!(
            !ok,
            "{b} is not offered here, MWAIT_STRICT=1 must refuse it: {out}"
        );
        assert!(
            out.contains(&format!(
                "mwait: MWAIT_BACKEND={b}: this machine does not offer it"
            )),
            "{out}"
        );
    }
}

/// A typo in the kill switch is reported in one line and left out; the waits work.
#[test]
fn a_typo_in_mwait_disable_warns_once_and_waits() {
    let (ok, out) = child("waits", &[("MWAIT_DISABLE", "umwiat")]);
    assert!(ok, "{out}");
    assert!(out.contains("waits: ok"), "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "one line per process: {out}");
    assert!(
        lines[0].starts_with("mwait: MWAIT_DISABLE=umwiat: unknown backend `umwiat`"),
        "{out}"
    );
    // The known names of the list still count.
    let (ok, out) = child("report", &[("MWAIT_DISABLE", "umwiat,futex")]);
    assert!(ok, "{out}");
    assert!(!out.contains("backend=futex "), "{out}");
    assert_eq!(warnings(&out).len(), 1, "{out}");
}

/// A slip in a variable's name is reported in one line naming the variable meant;
/// the waits work, with the setting left out. Other names that share the prefix
/// are not mwait's business. `MWAIT_STRICT=1` makes the slip a panic.
#[test]
fn a_typo_in_a_variables_name_warns_once_and_waits() {
    let (ok, out) = child(
        "waits",
        &[("MWAIT_DISABEL", "umwait"), ("MWAIT_OF_MY_OWN", "1")],
    );
    assert!(ok, "{out}");
    assert!(out.contains("waits: ok"), "{out}");
    assert_eq!(
        warnings(&out),
        [
            "mwait: MWAIT_DISABEL is not a variable mwait reads (did you mean MWAIT_DISABLE?); \
          it is ignored"
        ],
        "{out}"
    );
    let (ok, out) = child("wait", &[("MWAIT_BAKCEND", "spin"), ("MWAIT_STRICT", "1")]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(
            "mwait: MWAIT_BAKCEND is not a variable mwait reads (did you mean MWAIT_BACKEND?)"
        ) && out.contains("MWAIT_STRICT=1"),
        "{out}"
    );
}

/// `MWAIT_STRICT=1` keeps the refusal: the first wait panics with the rule.
#[test]
fn strict_mode_refuses_a_bad_setting_at_the_first_wait() {
    let (ok, out) = child(
        "wait",
        &[("MWAIT_DISABLE", "umwiat"), ("MWAIT_STRICT", "1")],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains("mwait: MWAIT_DISABLE: unknown backend `umwiat`")
            && out.contains("MWAIT_STRICT=1"),
        "{out}"
    );
    let (ok, out) = child(
        "waits",
        &[("MWAIT_MEMBARRIER", "yes"), ("MWAIT_STRICT", "1")],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("MWAIT_MEMBARRIER=yes: not one of"), "{out}");
}

/// A policy that asks for a hardware backend this machine lacks waits with the
/// process's backend, after one line on stderr; `MWAIT_STRICT=1` makes it a panic.
#[test]
fn a_policy_backend_the_cpu_lacks_warns_once_and_waits() {
    let caps = Capabilities::detect();
    let Some(b) = [Backend::Mwaitx, Backend::Umwait, Backend::Kernel]
        .into_iter()
        .find(|b| !caps.offers(*b))
    else {
        return; // every hardware backend is offered here
    };
    let (ok, out) = child("policy_backend", &[("MWAIT_TEST_POLICY_BACKEND", b.name())]);
    assert!(ok, "{out}");
    assert!(out.contains("waits: ok"), "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "one line per process: {out}");
    assert!(
        lines[0].contains(&format!(
            "WaitPolicy::backend({b}): this machine does not offer it"
        )),
        "{out}"
    );
    let (ok, out) = child(
        "policy_backend",
        &[
            ("MWAIT_TEST_POLICY_BACKEND", b.name()),
            ("MWAIT_STRICT", "1"),
        ],
    );
    assert!(!ok, "{out}");
    assert!(out.contains(&format!("WaitPolicy::backend({b})")), "{out}");
}

/// A value of `MWAIT_MEMBARRIER` that is not a yes or a no is reported once and
/// the default used; `off` is a no.
#[test]
fn a_bad_membarrier_value_warns_once_and_waits() {
    let (ok, out) = child("waits", &[("MWAIT_MEMBARRIER", "yes")]);
    assert!(ok, "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "one line per process: {out}");
    assert!(
        lines[0].contains("MWAIT_MEMBARRIER=yes: not one of 0, 1, false, true, off, on; using 1"),
        "{out}"
    );
    let (ok, out) = child("waits", &[("MWAIT_MEMBARRIER", "off"), ("MWAIT_LOG", "1")]);
    assert!(ok, "{out}");
    assert!(out.contains("notify: fenced"), "{out}");
}

/// `membarrier(2)`'s `MEMBARRIER_CMD_GET_REGISTRATIONS` (Linux 6.3 and later) and
/// the bit it sets for `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const MEMBARRIER_CMD_GET_REGISTRATIONS: libc::c_int = 1 << 9;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const REGISTERED_PRIVATE_EXPEDITED: i64 = 1 << 4;

/// The process is registered for `membarrier(PRIVATE_EXPEDITED)` when its program
/// is loaded, before any wait (so that no first park waits out the kernel's grace
/// period), and not where `MWAIT_MEMBARRIER` says no. Kernels before 6.3 cannot say
/// what a process registered: there the case only checks that the child runs.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_membarrier_registration_is_made_at_load_unless_turned_off() {
    let registrations = |vars: &[(&str, &str)]| {
        let (ok, out) = child("registrations", vars);
        assert!(ok, "{out}");
        // The harness prints the test's name on the same line.
        let value = out.split("registrations=").nth(1);
        value
            .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
            .unwrap_or_else(|| panic!("no registrations line: {out}"))
    };
    let on = registrations(&[]);
    let off = registrations(&[("MWAIT_MEMBARRIER", " Off ")]);
    if on < 0 {
        assert!(off < 0, "the kernel answered one query only: {on} {off}");
        eprintln!("this kernel cannot list a process's registrations (before 6.3)");
        return;
    }
    assert_ne!(on & REGISTERED_PRIVATE_EXPEDITED, 0, "{on:#x}");
    assert_eq!(off & REGISTERED_PRIVATE_EXPEDITED, 0, "{off:#x}");
    let typo = registrations(&[("MWAIT_MEMBARRIER", "of")]);
    assert_ne!(
        typo & REGISTERED_PRIVATE_EXPEDITED,
        0,
        "a typo is not a no: {typo:#x}"
    );
}

/// `MWAIT_MOVE_APART`, another yes-or-no variable, is read the same way: a bad value
/// is reported once and leaves moving apart off; `MWAIT_STRICT=1` makes it a panic.
#[test]
fn a_bad_move_apart_value_warns_once_and_waits() {
    let (ok, out) = child("waits", &[("MWAIT_MOVE_APART", "maybe")]);
    assert!(ok, "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "one line per process: {out}");
    assert!(
        lines[0].starts_with("mwait: MWAIT_MOVE_APART=maybe: not one of 0, 1, false"),
        "{out}"
    );
    let (ok, out) = child(
        "waits",
        &[("MWAIT_MOVE_APART", "maybe"), ("MWAIT_STRICT", "1")],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("MWAIT_MOVE_APART=maybe"), "{out}");
}

/// `MWAIT_LOG=1` writes the choice once: the backend, why, the budgets.
#[test]
fn mwait_log_writes_the_choice_once() {
    let (ok, out) = child("waits", &[("MWAIT_LOG", "1")]);
    assert!(ok, "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "{out}");
    let sel = mwait::selection();
    assert!(
        lines[0].starts_with(&format!("mwait: backend {} (", sel.backend))
            && lines[0].contains("spin budget")
            && lines[0].contains("hardware budget"),
        "{out}"
    );
    let (ok, out) = child("waits", &[]);
    assert!(ok, "{out}");
    assert!(warnings(&out).is_empty(), "silent without MWAIT_LOG: {out}");
}

/// Settings from code apply before the first wait and are refused after it.
#[test]
fn settings_from_code_apply_before_the_first_wait_only() {
    let (ok, out) = child("settings", &[]);
    assert!(ok, "{out}");
    assert!(out.contains("settings: ok"), "{out}");
    assert!(warnings(&out).is_empty(), "{out}");
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
    assert!(ok, "{out}");
    let lines = warnings(&out);
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].contains("MWAIT_BACKEND=warp-drive: unknown backend `warp-drive`"),
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
