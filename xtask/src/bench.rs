//! `cargo xtask bench [--quick]`: runs the report runner of `benches/` (every scenario,
//! every mechanism, side by side in one run, then the latency scenarios again as cold
//! starts in fresh processes) and leaves `target/mwait-bench/report.md`,
//! `summary.json`, `pingpong.svg` and `latency_cpu.svg`, then appends the parts of
//! the clients section on patched clients (`client_bench.rs`: two builds each of
//! rayon-core and tokio, run in turns). `--quick` takes about two minutes; the full
//! run about ten (and a few minutes of the clients).

use crate::util::{self, cargo, project_root, step, Res};

/// `cargo xtask bench [--quick]`.
pub fn run(args: &[String]) -> Res {
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(bad) = args.iter().find(|a| *a != "--quick") {
        return Err(format!("bench takes only --quick, got `{bad}`"));
    }
    let out = project_root().join("target/mwait-bench");
    step(&format!(
        "benchmark suite ({}) -> {}",
        if quick { "quick" } else { "full" },
        out.display()
    ));
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "mwait-benches",
        "--bin",
        "mwait-bench",
        "--",
        "--out",
    ])
    .arg(&out);
    if quick {
        cmd.arg("--quick");
    }
    util::run(&mut cmd)?;
    crate::client_bench::run(if quick { 5 } else { 13 }, &out.join("report.md"))
}
