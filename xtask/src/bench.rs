//! `cargo xtask bench [--quick]`: runs the report runner of `benches/` (every scenario,
//! every mechanism, side by side in one run, then the latency scenarios again as cold
//! starts in fresh processes) and leaves `target/mwait-bench/report.md`,
//! `summary.json`, `pingpong.svg` and `latency_cpu.svg`, then appends the parts of
//! the clients section on patched clients (`client_bench.rs`: two builds each of
//! rayon-core, tokio and async-io, run in turns). `--quick` takes about two minutes;
//! the full run about ten (and a few minutes of the clients). `cargo xtask bench
//! --client NAME [ROUNDS]` runs only that client's part (13 rounds unless told) and
//! appends it to `target/mwait-bench/NAME.md`; `--rayon [ROUNDS]` is rayon-core's,
//! appended to `target/mwait-bench/rayon.md`.

use crate::util::{self, cargo, project_root, step, Res};

/// The client parts' rounds in a full run (a quick run has 5).
const CLIENT_ROUNDS: usize = 13;

/// `cargo xtask bench [--quick]`, `cargo xtask bench --client NAME [ROUNDS]`, or
/// `cargo xtask bench --rayon [ROUNDS]` (rayon-core's).
pub fn run(args: &[String]) -> Res {
    let client = match args.first().map(String::as_str) {
        Some("--rayon") => Some(("rayon-core", &args[1..])),
        Some("--client") => match args.get(1) {
            Some(name) => Some((name.as_str(), &args[2..])),
            None => return Err("bench --client takes a client's name".into()),
        },
        _ => None,
    };
    if let Some((name, rest)) = client {
        let rounds = match rest {
            [] => CLIENT_ROUNDS,
            [n] => n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("bench: {name} takes a number of rounds, got `{n}`"))?,
            _ => return Err(format!("bench: {name} takes at most one number of rounds")),
        };
        let out = project_root().join("target/mwait-bench");
        std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let file = if name == "rayon-core" { "rayon" } else { name };
        return crate::client_bench::run(rounds, &out.join(format!("{file}.md")), Some(name));
    }
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
    crate::client_bench::run(
        if quick { 5 } else { CLIENT_ROUNDS },
        &out.join("report.md"),
        None,
    )
}
