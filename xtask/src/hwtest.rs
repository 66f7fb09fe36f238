//! `cargo xtask hw-test`: the hardware tiers' suite (`crates/mwait/tests/hw_tiers.rs`)
//! with each user-mode tier forced, where this machine can execute it:
//!
//! - UMWAIT under `qemu-x86_64-static -cpu max`, whose CPUID does not report WAITPKG
//!   but which executes UMONITOR/UMWAIT/TPAUSE as no-ops: forced past CPUID
//!   (`MWAIT_UNSAFE_FORCE=1`), self-test off (`MWAIT_SELFTEST=0`) so the no-op tier
//!   runs; then once with the self-test on, which must demote it (check (b): the
//!   no-op returns at once whatever its timer).
//! - MWAITX natively, on AMD CPUs only: if CPUID reports MONITORX, the suite runs with
//!   the tier and its self-test as they are; if it hides MONITORX (guests that trap
//!   MWAITX, `docs/hardware-results.md`), forced past CPUID with the self-test off,
//!   then once with it on, which must demote it (check (b): waits of 20 µs and
//!   160 µs last the same there).
//!
//! The demotion runs assert that the reason names the failed check.
//!
//! Each run is one line of the closing `N passed, N failed` count.

use crate::util::{self, cargo, ensure_apt, step, Res};
use std::path::PathBuf;
use std::process::Command;

/// `cargo xtask hw-test`.
pub fn run(_args: &[String]) -> Res {
    let bin = build_suite()?;
    let mwaitx = mwaitx_runs();
    ensure_apt(&["qemu-user-static"])?;
    let mut results: Vec<(&str, Res)> = Vec::new();
    for r in &UMWAIT_RUNS {
        results.push(r.run(&bin));
    }
    match mwaitx {
        None => println!("\nMWAITX: skipped, this is not an AMD CPU (MONITORX would raise SIGILL)"),
        Some(runs) => results.extend(runs.iter().map(|r| r.run(&bin))),
    }
    summary(&results)
}

/// The wrapper that runs the suite under qemu-user with a CPU that executes the
/// WAITPKG instructions.
const QEMU: &[&str] = &["qemu-x86_64-static", "-cpu", "max"];

/// The suite's test that checks the selection (and the demotion) against
/// `MWAIT_HW_EXPECT` and `MWAIT_HW_EXPECT_DEMOTED`.
const SELECTION_TEST: &str = "selection_is_what_the_runner_expects";

/// One run of the suite: its step banner, its name in the summary, the wrapper it
/// runs under (none: natively), its variables and the one test it is limited to.
struct Run {
    banner: &'static str,
    name: &'static str,
    wrapper: &'static [&'static str],
    vars: &'static [(&'static str, &'static str)],
    only: Option<&'static str>,
}

impl Run {
    /// Prints the banner and runs the suite; the run's name and result.
    fn run(&self, bin: &PathBuf) -> (&'static str, Res) {
        step(self.banner);
        (self.name, suite(bin, self.wrapper, self.vars, self.only))
    }
}

/// UMWAIT under qemu-user: the tier forced with the self-test off, then the
/// self-test, which must demote the no-op.
const UMWAIT_RUNS: [Run; 2] = [
    Run {
        banner: "UMWAIT tier under qemu-user (forced, self-test off)",
        name: "umwait suite (qemu-user)",
        wrapper: QEMU,
        vars: &[
            ("MWAIT_BACKEND", "umwait"),
            ("MWAIT_UNSAFE_FORCE", "1"),
            ("MWAIT_SELFTEST", "0"),
            ("MWAIT_HW_EXPECT", "umwait"),
        ],
        only: None,
    },
    Run {
        banner: "UMWAIT self-test under qemu-user (must demote the no-op)",
        name: "umwait demotion (qemu-user)",
        wrapper: QEMU,
        vars: &[
            ("MWAIT_BACKEND", "umwait"),
            ("MWAIT_UNSAFE_FORCE", "1"),
            ("MWAIT_HW_EXPECT_DEMOTED", "umwait"),
        ],
        only: Some(SELECTION_TEST),
    },
];

/// MWAITX natively where CPUID reports MONITORX: the tier and its self-test as
/// they are.
const MWAITX_REPORTED_RUNS: [Run; 1] = [Run {
    banner: "MWAITX tier natively (CPUID reports MONITORX; self-test on)",
    name: "mwaitx suite (native)",
    wrapper: &[],
    vars: &[("MWAIT_BACKEND", "mwaitx"), ("MWAIT_HW_EXPECT", "mwaitx")],
    only: None,
}];

/// MWAITX natively where CPUID hides MONITORX: forced with the self-test off, then
/// the self-test, which must demote the trapped instruction.
const MWAITX_FORCED_RUNS: [Run; 2] = [
    Run {
        banner: "MWAITX tier natively (forced past CPUID, self-test off)",
        name: "mwaitx suite (native, forced)",
        wrapper: &[],
        vars: &[
            ("MWAIT_BACKEND", "mwaitx"),
            ("MWAIT_UNSAFE_FORCE", "1"),
            ("MWAIT_SELFTEST", "0"),
            ("MWAIT_HW_EXPECT", "mwaitx"),
        ],
        only: None,
    },
    Run {
        banner: "MWAITX self-test natively (must demote: trapped, its timer is ignored here)",
        name: "mwaitx demotion (native)",
        wrapper: &[],
        vars: &[
            ("MWAIT_BACKEND", "mwaitx"),
            ("MWAIT_UNSAFE_FORCE", "1"),
            ("MWAIT_HW_EXPECT_DEMOTED", "mwaitx"),
        ],
        only: Some(SELECTION_TEST),
    },
];

/// The MWAITX runs this CPU takes: none on a CPU that is not AMD's (MONITORX would
/// raise SIGILL), else as CPUID reports or hides MONITORX.
fn mwaitx_runs() -> Option<&'static [Run]> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !cpuinfo.contains("AuthenticAMD") {
        return None;
    }
    // The kernel lists CPUID.8000_0001:ECX[29] (MONITORX) as `mwaitx`
    // (X86_FEATURE_MWAITX); there is no `monitorx` flag.
    let monitorx_in_cpuid = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "mwaitx"));
    Some(if monitorx_in_cpuid {
        &MWAITX_REPORTED_RUNS
    } else {
        &MWAITX_FORCED_RUNS
    })
}

/// Prints one line per run and the totals; fails when a run failed.
fn summary(results: &[(&str, Res)]) -> Res {
    println!();
    let failed: Vec<&str> = results
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|_| *n))
        .collect();
    for (n, r) in results {
        println!("hw-test: {n}: {}", if r.is_ok() { "ok" } else { "FAILED" });
    }
    println!(
        "hw-test: {} passed, {} failed",
        results.len() - failed.len(),
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
