//! `cargo xtask bench [--quick]`: runs the report runner of `benches/` (every scenario,
//! every mechanism, side by side in one run, then the latency scenarios again as cold
//! starts in fresh processes) and leaves `target/mwait-bench/report.md`,
//! `summary.json`, `pingpong.svg` and `latency_cpu.svg`, then appends the rayon part
//! of the clients section (`rayon_bench.rs`: two builds of rayon-core, run in
//! turns). `--quick` takes about two minutes; the full run about ten (and a minute
//! of rayon).

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
    step("clients: rayon-core stock and on a WaitCell per worker");
    crate::rayon_bench::run(if quick { 5 } else { 13 }, &out.join("report.md"))
}
