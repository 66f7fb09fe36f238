//! The rayon part of the bench report's clients section: rayon-core 1.13.0 as
//! published (a `Mutex<bool>` + `Condvar` per sleeping worker) against the same
//! release with `integrations/rayon-core/sleep.patch` (a `WaitCell` per worker).
//!
//! The two cannot share a process (one crate name, two sources), so each side is a
//! small program built as an example of its copy of rayon-core (`cargo xtask
//! clients` prepares the copies) and run in turns, the first side alternating from
//! round to round. Each run times a join-heavy workload on a pool of two threads
//! (a recursive Fibonacci that splits every call with `rayon_core::join`: small tasks,
//! every one a possible steal and wake-up) and then the CPU time that the pool's
//! workers use over one idle second after it.

use crate::util::{self, Res};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The program each side runs, written into `examples/` of its copy.
const PROGRAM: &str = r#"//! Written by `cargo xtask bench` (xtask/src/rayon_bench.rs).
use std::time::{Duration, Instant};

const N: u32 = 25;
const RUNS: usize = 9;

fn fib(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon_core::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// CPU time (ns) of this process's threads other than the main one, from
/// /proc/self/task/*/schedstat (its first field: ns on a CPU).
fn workers_cpu_ns() -> u64 {
    let main = std::process::id().to_string();
    let mut sum = 0;
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if e.file_name().to_string_lossy() == main {
            continue;
        }
        let s = std::fs::read_to_string(e.path().join("schedstat")).unwrap_or_default();
        sum += s.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    }
    sum
}

fn main() {
    let pool = rayon_core::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for _ in 0..2 {
        assert_eq!(pool.install(|| fib(N)), 75025);
    }
    // The pool idles once before anything is measured: a worker's first sleep
    // pays the process's one-time set-up (mwait's detection and choice of
    // backend), which a long-running program pays once, not after each burst.
    std::thread::sleep(Duration::from_millis(100));
    let mut times: Vec<u128> = (0..RUNS)
        .map(|_| {
            let t0 = Instant::now();
            std::hint::black_box(pool.install(|| fib(N)));
            t0.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    println!("workload_ns {}", times[RUNS / 2]);
    let c0 = workers_cpu_ns();
    std::thread::sleep(Duration::from_secs(1));
    println!("idle_cpu_ns {}", workers_cpu_ns() - c0);
}
"#;

/// Writing to a `String` cannot fail.
const WRITE: &str = "writing to a String cannot fail";

/// The example's name.
const EXAMPLE: &str = "mwait_clients_bench";

/// One run's measures.
struct Run {
    workload_ns: f64,
    idle_cpu_ns: f64,
}

/// Runs `rounds` rounds and appends the section, with its targets, to `report`.
pub fn run(rounds: usize, report: &Path) -> Res {
    let sides = crate::clients::prepared("rayon-core")?;
    let mut binaries = Vec::new();
    for (name, dir, target_dir) in &sides {
        std::fs::create_dir_all(dir.join("examples")).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(format!("examples/{EXAMPLE}.rs")), PROGRAM)
            .map_err(|e| e.to_string())?;
        // A published manifest names its targets (autoexamples = false).
        let manifest = dir.join("Cargo.toml");
        let mut text = std::fs::read_to_string(&manifest).map_err(|e| e.to_string())?;
        text.push_str(&format!(
            "\n[[example]]\nname = \"{EXAMPLE}\"\npath = \"examples/{EXAMPLE}.rs\"\n"
        ));
        std::fs::write(&manifest, text).map_err(|e| e.to_string())?;
        util::run(
            Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .current_dir(dir)
                .env("CARGO_TARGET_DIR", target_dir)
                .env_remove("RUSTFLAGS")
                .args(["build", "--release", "--example", EXAMPLE]),
        )?;
        binaries.push((
            *name,
            target_dir.join(format!("release/examples/{EXAMPLE}")),
        ));
    }
    let mut runs: [Vec<Run>; 2] = Default::default();
    for round in 0..rounds {
        for i in [round % 2, 1 - round % 2] {
            let out = util::output(&mut Command::new(&binaries[i].1))?;
            runs[i].push(parse(&out)?);
        }
    }
    let ratio = |f: fn(&Run) -> f64| -> Vec<f64> {
        runs[1]
            .iter()
            .zip(&runs[0])
            .map(|(m, s)| f(m) / f(s))
            .collect()
    };
    let workload = ratio(|r| r.workload_ns);
    let idle = ratio(|r| r.idle_cpu_ns);
    let med = |f: fn(&Run) -> f64, side: usize| median(runs[side].iter().map(f).collect());
    let mut md = String::new();
    writeln!(
        md,
        "\n## Clients: rayon-core on a WaitCell per worker (`cargo xtask bench`)\n\n\
         rayon-core 1.13.0 as published against `integrations/rayon-core/sleep.patch`, \
         each a program of its own run in turns ({rounds} rounds, the first side \
         alternating); a pool of 2 threads. Workload: a recursive Fibonacci (25) split \
         by `rayon_core::join` at every call, the median of 9 runs; idle: the pool's \
         workers' CPU time over 1 s after it (the pool has idled once before, so that a \
         worker's first sleep, which sets up the process's mwait, is not measured).\n\n\
         | measure | stock | mwait | mwait / stock (range) |\n| --- | ---: | ---: | ---: |"
    )
    .expect(WRITE);
    for (what, f, ratios) in [
        (
            "join-heavy workload wall time",
            (|r: &Run| r.workload_ns) as fn(&Run) -> f64,
            &workload,
        ),
        ("idle pool CPU over 1 s", |r: &Run| r.idle_cpu_ns, &idle),
    ] {
        let (lo, hi) = min_max(ratios);
        writeln!(
            md,
            "| {what} | {:.0} ns | {:.0} ns | {:.3}x ({lo:.3}–{hi:.3}x) |",
            med(f, 0),
            med(f, 1),
            median(ratios.clone())
        )
        .expect(WRITE);
    }
    let target = |what: &str, ratios: &[f64], bound: f64| {
        let m = median(ratios.to_vec());
        let (lo, hi) = min_max(ratios);
        format!(
            "- {} clients: rayon {what} <= {bound}x stock's: {m:.2}x, the median of {} rounds (range {lo:.2}–{hi:.2}x)",
            if m <= bound { "HOLDS:" } else { "MISSED:" },
            ratios.len()
        )
    };
    writeln!(
        md,
        "\n{}\n{}",
        target("workload time", &workload, 1.0),
        target("idle pool CPU", &idle, 0.5)
    )
    .expect(WRITE);
    print!("{md}");
    let mut text = std::fs::read_to_string(report).unwrap_or_default();
    text.push_str(&md);
    std::fs::write(report, text).map_err(|e| format!("{}: {e}", report.display()))
}

fn parse(out: &str) -> Res<Run> {
    let field = |name: &str| -> Res<f64> {
        out.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .ok_or_else(|| format!("no `{name}` in the rayon bench's output: {out}"))
    };
    Ok(Run {
        workload_ns: field("workload_ns ")?,
        idle_cpu_ns: field("idle_cpu_ns ")?,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_read_from_its_two_lines() {
        let r = parse("workload_ns 1200\nidle_cpu_ns 35\n").unwrap();
        assert_eq!((r.workload_ns, r.idle_cpu_ns), (1200.0, 35.0));
        assert!(parse("workload_ns 1\n").is_err());
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
