//! The bench report's parts on patched clients: rayon-core 1.13.0 and tokio 1.54.1
//! as published against the same releases with their patches under
//! `integrations/` (rayon-core: a `WaitCell` per sleeping worker; tokio: its
//! `block_on` parker and its workers' condvar park on a `WaitCell`), and async-io
//! 2.6.0 as published, built once with `parking` and once with the `parking`
//! drop-in in its place.
//!
//! The two sides of a client cannot share a process (one crate name, two sources),
//! so each side is a small program (`xtask/bench-programs/`) built as an example of
//! its copy of the client (`cargo xtask clients` prepares the copies) and run in
//! turns, the first side alternating from round to round. A program prints one
//! `name value` line per measure; the report gives each side's median over the
//! rounds and the median and range of the per-round ratios.

use crate::util::{self, Res};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// One measure a program prints.
struct Measure {
    /// The name of its output line.
    key: &'static str,
    /// Its row in the report's table.
    label: &'static str,
    /// A bound on the median mwait / stock ratio that the report judges, if any.
    target: Option<f64>,
}

/// One client's part of the section.
struct ClientBench {
    /// The row of `cargo xtask clients` whose two copies the program builds with.
    client: &'static str,
    /// The patch on the mwait side, named in the report.
    patch: &'static str,
    /// The copy's features the program needs.
    features: &'static [&'static str],
    program: &'static str,
    /// The section's heading and what the program does, after which side is which.
    heading: &'static str,
    what: &'static str,
    measures: &'static [Measure],
}

const BENCHES: &[ClientBench] = &[
    ClientBench {
        client: "rayon-core",
        patch: "integrations/rayon-core/sleep.patch",
        features: &[],
        program: include_str!("../bench-programs/rayon.rs"),
        heading: "rayon-core on a WaitCell per worker",
        what: "A pool of 2 threads. Workload: a recursive Fibonacci (25) split by \
               `rayon_core::join` at every call, the median of 9 runs; idle: the pool's \
               workers' CPU time over 1 s after it (the pool has idled once before, so \
               that a worker's first sleep, which sets up the process's mwait, is not \
               measured).",
        measures: &[
            Measure {
                key: "workload_ns",
                label: "rayon join-heavy workload wall time",
                target: Some(1.0),
            },
            Measure {
                key: "idle_cpu_ns",
                label: "rayon idle pool CPU over 1 s",
                target: Some(0.5),
            },
        ],
    },
    ClientBench {
        client: "tokio",
        patch: "integrations/tokio/park.patch",
        features: &["full"],
        program: include_str!("../bench-programs/tokio.rs"),
        heading: "tokio's parkers on a WaitCell",
        what: "Each measure over 20000 round trips after 2000 unmeasured ones; CPU is \
               the process's per round trip. Ping-pong: two plain threads hand a number \
               back and forth through two bounded(1) `tokio::sync::mpsc` channels with \
               `blocking_send` / `blocking_recv` (each wait parks on \
               `CachedParkThread`). Spawn: `block_on` on a multi-thread runtime of 2 \
               workers (I/O and time enabled) spawns a task and awaits it (the workers \
               park on the driver or their condvar path, `block_on`'s thread on \
               `CachedParkThread`), idling 200 µs every 1000 round trips.",
        measures: &[
            Measure {
                key: "pingpong_p50_ns",
                label: "tokio blocking ping-pong p50",
                target: None,
            },
            Measure {
                key: "pingpong_p99_ns",
                label: "tokio blocking ping-pong p99",
                target: None,
            },
            Measure {
                key: "pingpong_cpu_ns",
                label: "tokio blocking ping-pong CPU per round trip",
                target: None,
            },
            Measure {
                key: "spawn_p50_ns",
                label: "tokio spawn round trip p50",
                target: None,
            },
            Measure {
                key: "spawn_p99_ns",
                label: "tokio spawn round trip p99",
                target: None,
            },
            Measure {
                key: "spawn_cpu_ns",
                label: "tokio spawn round trip CPU per round trip",
                target: None,
            },
        ],
    },
    ClientBench {
        client: "async-io",
        patch: "integrations/parking",
        features: &[],
        program: include_str!("../bench-programs/async_io.rs"),
        heading: "async-io's `block_on` on the `parking` drop-in",
        what: "async-io's `block_on` on the calling thread, which polls its parker \
               with a zero timeout on every turn of its loop and once more at the \
               end: of a future that is ready at once, and of one that yields once \
               (it wakes itself, and the loop turns again). Each the median of 9 runs \
               of 200000 calls, after one call that makes the thread's parker.",
        measures: &[
            Measure {
                key: "ready_ns",
                label: "async-io block_on of a ready future",
                target: Some(1.1),
            },
            Measure {
                key: "yield_ns",
                label: "async-io block_on of a future that yields once",
                target: None,
            },
        ],
    },
];

/// The programs' `cpu` module: the CPU time of the process's threads.
const CPU_MODULE: &str = include_str!("../bench-programs/cpu.rs");

/// Writing to a `String` cannot fail.
const WRITE: &str = "writing to a String cannot fail";

/// The example's name.
const EXAMPLE: &str = "mwait_clients_bench";

/// Runs `rounds` rounds of each client's program (or of `only`'s) and appends their
/// parts, with their targets, to `report`.
pub fn run(rounds: usize, report: &Path, only: Option<&str>) -> Res {
    if let Some(name) = only.filter(|n| !BENCHES.iter().any(|b| b.client == *n)) {
        let names: Vec<_> = BENCHES.iter().map(|b| b.client).collect();
        return Err(format!(
            "no bench program for the client `{name}` (there are: {})",
            names.join(", ")
        ));
    }
    for bench in BENCHES
        .iter()
        .filter(|b| only.map_or(true, |c| c == b.client))
    {
        util::step(&format!("clients: {}, stock and patched", bench.client));
        let md = run_one(bench, rounds)?;
        print!("{md}");
        let mut text = std::fs::read_to_string(report).unwrap_or_default();
        text.push_str(&md);
        std::fs::write(report, text).map_err(|e| format!("{}: {e}", report.display()))?;
    }
    Ok(())
}

/// One client's part of the report.
fn run_one(bench: &ClientBench, rounds: usize) -> Res<String> {
    let sides = crate::clients::prepared(bench.client)?;
    let version = crate::clients::version(bench.client).unwrap_or("?");
    let mut binaries = Vec::new();
    for (_, dir, target_dir) in &sides {
        std::fs::create_dir_all(dir.join("examples")).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(format!("examples/{EXAMPLE}.rs")), bench.program)
            .map_err(|e| e.to_string())?;
        // The program's `mod cpu;` (not an example of its own: a published
        // manifest names its targets, autoexamples = false).
        std::fs::write(dir.join("examples/cpu.rs"), CPU_MODULE).map_err(|e| e.to_string())?;
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
                .args(["build", "--release", "--example", EXAMPLE])
                .arg(format!("--features={}", bench.features.join(","))),
        )?;
        binaries.push(target_dir.join(format!("release/examples/{EXAMPLE}")));
    }
    // runs[side][round][measure]
    let mut runs: [Vec<Vec<f64>>; 2] = Default::default();
    for round in 0..rounds {
        for i in [round % 2, 1 - round % 2] {
            let out = util::output(&mut Command::new(&binaries[i]))?;
            runs[i].push(parse(&out, bench.measures)?);
        }
    }
    let mut md = String::new();
    writeln!(
        md,
        "\n## Clients: {} (`cargo xtask bench`)\n\n\
         {} {version} as published and on mwait (`{}`), each a program of its own run in \
         turns ({rounds} rounds, the first side alternating). {}\n\n\
         | measure | stock | mwait | mwait / stock (range) |\n| --- | ---: | ---: | ---: |",
        bench.heading, bench.client, bench.patch, bench.what
    )
    .expect(WRITE);
    let mut targets = String::new();
    for (m, measure) in bench.measures.iter().enumerate() {
        let side = |s: usize| median(runs[s].iter().map(|r| r[m]).collect());
        let ratios: Vec<f64> = runs[1]
            .iter()
            .zip(&runs[0])
            .map(|(w, s)| w[m] / s[m])
            .collect();
        let (lo, hi) = min_max(&ratios);
        let ratio = median(ratios.clone());
        writeln!(
            md,
            "| {} | {:.0} ns | {:.0} ns | {ratio:.3}x ({lo:.3}–{hi:.3}x) |",
            measure.label,
            side(0),
            side(1)
        )
        .expect(WRITE);
        if let Some(bound) = measure.target {
            writeln!(
                targets,
                "- {} clients: {} <= {bound}x stock's: {ratio:.2}x, the median of {} rounds (range {lo:.2}–{hi:.2}x)",
                if ratio <= bound { "HOLDS:" } else { "MISSED:" },
                measure.label,
                ratios.len()
            )
            .expect(WRITE);
        }
    }
    if !targets.is_empty() {
        write!(md, "\n{targets}").expect(WRITE);
    }
    Ok(md)
}

/// The value of each measure's line in a program's output.
fn parse(out: &str, measures: &[Measure]) -> Res<Vec<f64>> {
    measures
        .iter()
        .map(|m| {
            out.lines()
                .find_map(|l| {
                    l.strip_prefix(m.key)?
                        .strip_prefix(' ')?
                        .trim()
                        .parse()
                        .ok()
                })
                .ok_or_else(|| format!("no `{}` in the bench program's output: {out}", m.key))
        })
        .collect()
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
    fn a_run_is_read_from_its_lines() {
        let rayon = &BENCHES[0].measures;
        let r = parse("workload_ns 1200\nidle_cpu_ns 35\n", rayon).unwrap();
        assert_eq!(r, [1200.0, 35.0]);
        assert!(parse("workload_ns 1\n", rayon).is_err());
        // A key that is the start of another is not read from the longer one.
        let p50 = &[Measure {
            key: "spawn_p50_ns",
            label: "",
            target: None,
        }];
        assert!(parse("spawn_p50_ns_x 3\n", p50).is_err());
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn every_bench_names_a_client_row() {
        for b in BENCHES {
            assert!(crate::clients::version(b.client).is_some(), "{}", b.client);
        }
    }
}
