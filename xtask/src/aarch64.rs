//! `cargo xtask aarch64-test`: the `mwait` test suites built for
//! `aarch64-unknown-linux-gnu` and run under `qemu-aarch64 -cpu max` (user mode):
//! the futex park tier of AArch64 Linux and the WFE tier, executed rather than only
//! built.
//!
//! The runs, each a line of the closing `N passed, N failed` count:
//!
//! 1. the unit tests and the integration suites that qemu-user can run, with the
//!    machine's own choice (futex: qemu reports neither `HWCAP_EVTSTRM` nor
//!    `HWCAP2_WFXT`, so the WFE tier is not offered);
//! 2. `no_syscall` with the `test-counters` feature (no futex wake on an
//!    uncontended notify);
//! 3. the hardware-tier suite with the WFE tier forced past the auxiliary vector
//!    (`MWAIT_UNSAFE_FORCE=1`; qemu executes WFE as a no-op, so every wait ends)
//!    and its self-test off, so that the tier's loops, deadlines and re-checks run;
//! 4. the same with the self-test on, which must demote the no-op WFE.
//!
//! What is left out, and why: [`SKIPPED`] (tests that install a seccomp filter,
//! which qemu-user refuses with EINVAL), the `stress` suite (10^6 handoffs per tier
//! take minutes natively, far longer emulated; `cargo xtask stress` runs it on
//! x86-64), and the loom suites (models of the protocol, independent of the target,
//! run natively by `cargo xtask test`).
//!
//! The linker is clang driving binutils for `aarch64-linux-gnu`, with Debian's
//! cross libc and libgcc: Debian's `gcc-aarch64-linux-gnu` would do as well, but it
//! conflicts with `gcc-multilib`, and a machine that builds 32-bit C loses one or
//! the other. The children that some tests start run under the emulator too
//! (`MWAIT_TEST_RUNNER`): qemu-user does not follow an exec of another binary.

use crate::ports::echo_and_count;
use crate::util::{cargo, ensure_apt, ensure_rust_target, step, Res};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The target the suites are built for.
const TARGET: &str = "aarch64-unknown-linux-gnu";

/// The emulator and its options: `-cpu max` decodes every instruction QEMU knows,
/// `-L` finds the dynamic loader and libc of Debian's cross packages.
const RUNNER: &str = "qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu";

/// The Debian packages: the emulator, the linker driver with its binutils, and the
/// target's libc and libgcc to link against.
const PACKAGES: [&str; 5] = [
    "qemu-user",
    "clang",
    "binutils-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
    "libgcc-12-dev-arm64-cross",
];

/// The integration suites of run 1.
const SUITES: [&str; 3] = ["api", "hw_tiers", "process"];

/// Tests left out of run 1: each installs a seccomp filter (to fail `membarrier`
/// or a futex call), and qemu-user refuses `PR_SET_SECCOMP` with EINVAL. The
/// fallbacks they check are the same code on every Linux target; they run on
/// x86-64.
pub const SKIPPED: [&str; 4] = [
    "a_process_that_loses_membarrier_falls_back_to_fenced_notifies",
    "an_unexpected_futex_errno_neither_panics_nor_spins",
    "fork_during_registration_leaves_the_child_able_to_park",
    "the_default_policy_never_calls_sched_setaffinity",
];

/// The variables that choose a backend, cleared before each run.
const BACKEND_VARS: [&str; 5] = [
    "MWAIT_BACKEND",
    "MWAIT_DISABLE",
    "MWAIT_UNSAFE_FORCE",
    "MWAIT_SELFTEST",
    "MWAIT_STRESS_HANDOFFS",
];

/// One run: its name, the arguments of `cargo test` and of the test binaries, and
/// the variables it sets.
struct Run {
    name: &'static str,
    cargo_args: Vec<&'static str>,
    test_args: Vec<&'static str>,
    vars: &'static [(&'static str, &'static str)],
}

/// `cargo xtask aarch64-test`.
pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("aarch64-test takes no arguments, got `{a}`"));
    }
    let t0 = Instant::now();
    step("qemu-user, clang and the aarch64 cross libc (Debian), rustup target");
    ensure_apt(&PACKAGES)?;
    ensure_rust_target(TARGET)?;

    let mut run1_cargo = vec!["--lib"];
    for s in SUITES {
        run1_cargo.extend(["--test", s]);
    }
    let mut run1_args = Vec::new();
    for s in SKIPPED {
        run1_args.extend(["--skip", s]);
    }
    let runs = [
        Run {
            name: "unit and integration tests (the machine's choice)",
            cargo_args: run1_cargo,
            test_args: run1_args,
            vars: &[],
        },
        Run {
            name: "no_syscall (test-counters)",
            cargo_args: vec!["--features", "test-counters", "--test", "no_syscall"],
            test_args: Vec::new(),
            vars: &[],
        },
        Run {
            name: "hw_tiers, wfe forced (self-test off)",
            cargo_args: vec!["--test", "hw_tiers"],
            test_args: vec!["--test-threads=1"],
            vars: &[
                ("MWAIT_BACKEND", "wfe"),
                ("MWAIT_UNSAFE_FORCE", "1"),
                ("MWAIT_SELFTEST", "0"),
                ("MWAIT_HW_EXPECT", "wfe"),
            ],
        },
        Run {
            name: "hw_tiers, wfe self-test (must demote the no-op WFE)",
            cargo_args: vec!["--test", "hw_tiers"],
            test_args: vec!["--exact", "selection_is_what_the_runner_expects"],
            vars: &[
                ("MWAIT_BACKEND", "wfe"),
                ("MWAIT_UNSAFE_FORCE", "1"),
                ("MWAIT_HW_EXPECT_DEMOTED", "wfe"),
            ],
        },
    ];
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut broken = Vec::new();
    for r in &runs {
        step(&format!("{TARGET} under qemu-aarch64: {}", r.name));
        let mut cmd = cargo();
        cmd.args(["test", "-p", "mwait", "--target", TARGET])
            .args(&r.cargo_args)
            .arg("--")
            .args(&r.test_args);
        let (p, f, ok) = run_counted(&mut cmd, r.vars)?;
        println!("{}: {p} passed, {f} failed", r.name);
        passed += p;
        failed += f;
        if !ok {
            broken.push(r.name);
        }
    }
    println!("\naarch64-test: skipped under qemu-user (seccomp): {SKIPPED:?}");
    println!("aarch64-test: not run: stress (too slow emulated), loom (run natively)");
    println!(
        "aarch64-test: {passed} passed, {failed} failed ({} runs for {TARGET} under {RUNNER}; {:.0} s)",
        runs.len(),
        t0.elapsed().as_secs_f64()
    );
    if broken.is_empty() && failed == 0 {
        Ok(())
    } else {
        Err(format!("runs failed under qemu-aarch64: {broken:?}"))
    }
}

/// Runs `cmd` (a `cargo test` for [`TARGET`]) with the cross linker and the
/// emulator set, and `vars`; echoes its output and returns the passed and failed
/// counts of its `test result:` lines and whether it succeeded.
fn run_counted(cmd: &mut Command, vars: &[(&str, &str)]) -> Res<(u64, u64, bool)> {
    let key = TARGET.to_uppercase().replace('-', "_");
    cmd.env(format!("CARGO_TARGET_{key}_LINKER"), "clang")
        .env(
            format!("CARGO_TARGET_{key}_RUSTFLAGS"),
            "-C link-arg=--target=aarch64-linux-gnu",
        )
        .env(format!("CARGO_TARGET_{key}_RUNNER"), RUNNER)
        .env("MWAIT_TEST_RUNNER", RUNNER)
        .stdout(Stdio::piped());
    for v in BACKEND_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
        print!("{k}={v} ");
    }
    println!("$ {cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start cargo: {e}"))?;
    let (passed, failed, status) = echo_and_count(&mut child)?;
    Ok((passed, failed, status.success()))
}
