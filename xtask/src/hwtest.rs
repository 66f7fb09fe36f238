//! `cargo xtask hw-test`: the hardware tiers' suite (`crates/mwait/tests/hw_tiers.rs`)
//! with each user-mode tier forced, where this machine can execute it:
//!
//! - UMWAIT under `qemu-x86_64-static -cpu max`, whose CPUID does not report WAITPKG
//!   but which executes UMONITOR/UMWAIT/TPAUSE as no-ops: forced past CPUID
//!   (`MWAIT_UNSAFE_FORCE=1`), self-test off (`MWAIT_SELFTEST=0`) so the no-op tier
//!   runs; then once with the self-test on, which must demote it.
//! - MWAITX natively, on AMD CPUs only: if CPUID reports MONITORX, the suite runs with
//!   the tier and its self-test as they are; if it hides MONITORX (the EPYC guests
//!   here, which execute MWAITX as a ~2 µs no-op), forced past CPUID with the
//!   self-test off, then once with it on, which must demote it.
//!
//! Each run is one line of the closing `N passed, N failed` count.

use crate::util::{self, cargo, ensure_apt, step, Res};
use std::path::PathBuf;
use std::process::Command;

/// `cargo xtask hw-test`.
pub fn run(_args: &[String]) -> Res {
    let bin = build_suite()?;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let amd = cpuinfo.contains("AuthenticAMD");
    // The kernel lists CPUID.8000_0001:ECX[29] (MONITORX) as `mwaitx`
    // (X86_FEATURE_MWAITX); there is no `monitorx` flag.
    let monitorx_in_cpuid = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "mwaitx"));

    ensure_apt(&["qemu-user-static"])?;
    let qemu = ["qemu-x86_64-static", "-cpu", "max"];
    let mut runs: Vec<(String, Res)> = Vec::new();

    step("UMWAIT tier under qemu-user (forced, self-test off)");
    runs.push((
        "umwait suite (qemu-user)".into(),
        suite(
            &bin,
            &qemu,
            &[
                ("MWAIT_BACKEND", "umwait"),
                ("MWAIT_UNSAFE_FORCE", "1"),
                ("MWAIT_SELFTEST", "0"),
                ("MWAIT_HW_EXPECT", "umwait"),
            ],
            None,
        ),
    ));
    step("UMWAIT self-test under qemu-user (must demote the no-op)");
    runs.push((
        "umwait demotion (qemu-user)".into(),
        suite(
            &bin,
            &qemu,
            &[
                ("MWAIT_BACKEND", "umwait"),
                ("MWAIT_UNSAFE_FORCE", "1"),
                ("MWAIT_HW_EXPECT_DEMOTED", "umwait"),
            ],
            Some("selection_is_what_the_runner_expects"),
        ),
    ));

    if !amd {
        println!("\nMWAITX: skipped, this is not an AMD CPU (MONITORX would raise SIGILL)");
    } else if monitorx_in_cpuid {
        step("MWAITX tier natively (CPUID reports MONITORX; self-test on)");
        runs.push((
            "mwaitx suite (native)".into(),
            suite(
                &bin,
                &[],
                &[("MWAIT_BACKEND", "mwaitx"), ("MWAIT_HW_EXPECT", "mwaitx")],
                None,
            ),
        ));
    } else {
        step("MWAITX tier natively (forced past CPUID, self-test off)");
        runs.push((
            "mwaitx suite (native, forced)".into(),
            suite(
                &bin,
                &[],
                &[
                    ("MWAIT_BACKEND", "mwaitx"),
                    ("MWAIT_UNSAFE_FORCE", "1"),
                    ("MWAIT_SELFTEST", "0"),
                    ("MWAIT_HW_EXPECT", "mwaitx"),
                ],
                None,
            ),
        ));
        step("MWAITX self-test natively (must demote: it returns at once here)");
        runs.push((
            "mwaitx demotion (native)".into(),
            suite(
                &bin,
                &[],
                &[
                    ("MWAIT_BACKEND", "mwaitx"),
                    ("MWAIT_UNSAFE_FORCE", "1"),
                    ("MWAIT_HW_EXPECT_DEMOTED", "mwaitx"),
                ],
                Some("selection_is_what_the_runner_expects"),
            ),
        ));
    }

    println!();
    let failed: Vec<&String> = runs
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|_| n))
        .collect();
    for (n, r) in &runs {
        println!("hw-test: {n}: {}", if r.is_ok() { "ok" } else { "FAILED" });
    }
    println!(
        "hw-test: {} passed, {} failed",
        runs.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("hardware-tier runs failed: {failed:?}"))
    }
}

/// Builds the suite and returns the test binary's path.
fn build_suite() -> Res<PathBuf> {
    step("build the hardware-tier suite");
    let out = util::output(&mut build_suite_command())?;
    suite_executable(&out)
        .ok_or_else(|| "cargo did not report the hw_tiers test binary".to_string())
}

/// The cargo command that builds the suite without running it and reports its
/// executable (read it with [`suite_executable`]).
pub fn build_suite_command() -> Command {
    let mut c = cargo();
    c.args([
        "test",
        "-p",
        "mwait",
        "--test",
        "hw_tiers",
        "--no-run",
        "--message-format=json",
    ]);
    c
}

/// The suite's executable in the output of [`build_suite_command`].
pub fn suite_executable(cargo_json: &str) -> Option<PathBuf> {
    let target = "\"name\":\"hw_tiers\"";
    cargo_json
        .lines()
        .filter(|l| l.contains(target))
        .find_map(|l| {
            let i = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let j = l[i..].find('"')? + i;
            Some(PathBuf::from(&l[i..j]))
        })
}

/// Runs the suite (or one test) with `wrapper` (e.g. qemu-user) and `vars`.
fn suite(bin: &PathBuf, wrapper: &[&str], vars: &[(&str, &str)], only: Option<&str>) -> Res {
    let mut cmd = match wrapper.split_first() {
        Some((prog, args)) => {
            let mut c = Command::new(prog);
            c.args(args).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["--test-threads=1", "--nocapture"]);
    if let Some(t) = only {
        cmd.args(["--exact", t]);
    }
    for v in [
        "MWAIT_BACKEND",
        "MWAIT_DISABLE",
        "MWAIT_UNSAFE_FORCE",
        "MWAIT_SELFTEST",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
        print!("{k}={v} ");
    }
    println!();
    util::run(&mut cmd)
}
