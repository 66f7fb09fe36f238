//! `mwait-bench [--quick] [--out DIR] [--only BENCH]`: runs every scenario side by
//! side and writes `DIR/report.md`, `DIR/summary.json` (the measures, and every
//! target with its value, bound, range and verdict), `DIR/pingpong.svg` and
//! `DIR/latency_cpu.svg` (default DIR: `target/mwait-bench`). `cargo xtask bench`
//! runs it.
//!
//! The process measures its warm scenarios without asking mwait anything first:
//! mwait reads the machine and makes its selection at the first wait, which is a
//! pinned thread's, as in a program that pins its threads before they wait. The
//! machine and the selection are printed after the measurements. The binary also
//! serves as its own child processes, by hidden first arguments: the compute
//! workers of the interference scenario, the cold starts
//! ([`mwait_benches::cold`]), the busy processes of the scale section
//! ([`mwait_benches::scale`]), and `--waitcell-tiers`, which lists the WaitCell
//! tiers usable here as a fresh process's selection sees them.
//!
//! Each section of the report is a module with one `pub fn(&mut Out, &Ctx)` that
//! measures, appends its tables and JSON rows to the [`report::Out`] and judges
//! its targets there; [`SECTIONS`] lists them in the report's order, under the
//! names `--only` takes. A new section is a new module and one row of
//! [`SECTIONS`].

use mwait_benches::impls;
use std::time::Duration;

mod atomic;
mod clients;
mod cold;
mod interference;
mod judge;
mod latency;
mod report;
mod scale;
mod spsc;
mod svg;
mod tradeoff;

use cold::ColdBudget;
use report::Out;
use scale::ScaleBudget;

/// A section of the report: measures, then appends its tables, JSON rows and
/// judged targets to the report.
type Section = fn(&mut Out, &Ctx);

/// The report's sections in the report's order, each under the name `--only`
/// takes (a section that `--only` leaves out lists its targets alone, as not run).
const SECTIONS: [(&str, Section); 13] = [
    ("pingpong", latency::pingpong),
    ("same_cpu", latency::same_cpu),
    ("notify", latency::notify),
    ("atomic", atomic::run),
    ("long_wait", latency::long_wait),
    ("interference", interference::run),
    ("barrier", latency::barrier),
    ("cold", cold::run),
    ("scale", scale::run),
    ("latency_cpu", tradeoff::run),
    ("async", latency::async_pingpong),
    ("clients", clients::run),
    ("spsc", spsc::run),
];

/// The hidden argument of the child that lists the usable WaitCell tiers.
const TIERS_ARG: &str = "--waitcell-tiers";

/// Scale of every budget: 1 in quick mode, [`FULL_SCALE`] otherwise.
const FULL_SCALE: u32 = 6;

struct Budgets {
    pingpong: Duration,
    notify: Duration,
    long_wait: Duration,
    interference: Duration,
    barrier_episodes: u32,
    /// Rounds of the interleaved scenarios: each visits every implementation once
    /// with 1/rounds of its budget (see [`mwait_benches::round_order`]).
    rounds: u32,
    cold: ColdBudget,
    scale: ScaleBudget,
    /// Per idle gap and mechanism of `latency_cpu`.
    latency_cpu: Duration,
}

impl Budgets {
    fn new(scale: u32) -> Budgets {
        Budgets {
            pingpong: Duration::from_millis(400) * scale,
            notify: Duration::from_millis(150) * scale,
            long_wait: Duration::from_millis(800) * scale,
            interference: Duration::from_millis(800) * scale,
            barrier_episodes: 25_000 * scale,
            rounds: if scale == 1 { 5 } else { 13 },
            cold: ColdBudget {
                rounds: if scale == 1 { 3 } else { 7 },
                steady: Duration::from_millis(100) * scale,
                long_wait: Duration::from_millis(300) * scale,
                barrier_episodes: 3_000 * scale,
            },
            scale: ScaleBudget::new(scale),
            latency_cpu: Duration::from_millis(150) * scale,
        }
    }
}

/// The command line: `[--quick] [--out DIR] [--only BENCH]`.
#[derive(Debug)]
struct Options {
    quick: bool,
    out_dir: String,
    only: Option<String>,
}

impl Options {
    /// The options, or why the command line is not one: an unknown argument, a
    /// flag without its value, or a bench `--only` does not know (a full run takes
    /// minutes, so a typo must not start one).
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            quick: false,
            out_dir: "target/mwait-bench".into(),
            only: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--quick" => o.quick = true,
                "--out" => o.out_dir = value()?,
                "--only" => {
                    let b = value()?;
                    let known = |b: &str| SECTIONS.iter().any(|(name, _)| *name == b);
                    if !b.split(',').all(known) {
                        let names: Vec<&str> = SECTIONS.iter().map(|(name, _)| *name).collect();
                        return Err(format!(
                            "--only {b}: no such bench (one of {})",
                            names.join(", ")
                        ));
                    }
                    o.only = Some(b);
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(o)
    }
}

/// Whether `--only` (a comma-separated list of sections, or none) selects `bench`.
fn selects(only: Option<&str>, bench: &str) -> bool {
    only.map_or(true, |o| o.split(',').any(|o| o == bench))
}

/// What every section needs: the budgets, the implementations, the `--only` filter.
struct Ctx {
    b: Budgets,
    all: Vec<(String, impls::Make)>,
    only: Option<String>,
    /// The CPUs the process may use: the main thread's affinity mask at start,
    /// before anything is pinned.
    process_cpus: usize,
    /// The package energy counters, or why this machine has none to read.
    energy: Result<mwait_benches::energy::Meter, String>,
}

impl Ctx {
    /// Whether the scenario `bench` runs (all do unless `--only` names others).
    fn runs(&self, bench: &str) -> bool {
        selects(self.only.as_deref(), bench)
    }

    /// The mechanism called `name` among the report's implementations.
    fn make(&self, name: &str) -> impls::Make {
        self.all
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, make)| *make)
            .unwrap_or_else(|| panic!("{name} is one of the report's implementations"))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if mwait_support::compute_worker_entry(&args) {
        return;
    }
    let child = mwait_benches::cold::child_entry(&args)
        .or_else(|| mwait_benches::scale::busy_child_entry(&args));
    if let Some(child) = child {
        match child {
            Ok(m) => println!("{m}"),
            Err(e) => {
                eprintln!("mwait-bench: {e}");
                std::process::exit(2);
            }
        }
        return;
    }
    if args == [TIERS_ARG] {
        for (name, _) in impls::waitcell_tiers() {
            println!("{name}");
        }
        return;
    }
    let opts = Options::parse(&args).unwrap_or_else(|e| {
        eprintln!(
            "mwait-bench: {e}\nusage: mwait-bench [--quick] [--out DIR] [--only BENCH[,BENCH...]] \
             (or {} SCENARIO IMPL AMOUNT, {} MODE MILLIS, {TIERS_ARG})",
            mwait_benches::cold::COLD_ARG,
            mwait_benches::scale::BUSY_ARG
        );
        std::process::exit(2);
    });
    let ctx = Ctx {
        b: Budgets::new(if opts.quick { 1 } else { FULL_SCALE }),
        all: implementations(),
        only: opts.only.clone(),
        process_cpus: mwait_support::affinity_cpus(),
        energy: mwait_benches::energy::Meter::system(),
    };
    let mut o = Out::default();
    report::rounds_note(&mut o, ctx.b.rounds);
    run_sections(&mut o, &ctx);
    report::targets_section(&mut o, ctx.only.as_deref());
    // Only now, after every measurement, is mwait asked what it detected and chose.
    let caps = mwait::Capabilities::detect();
    let sel = mwait::selection();
    report::header(&mut o, &opts, &ctx, caps, sel);
    report::write_files(&o, &opts, &ctx, caps, sel);
}

/// Runs the sections that `--only` selects, in the report's order. A section that
/// it leaves out measures nothing and writes no table or JSON row: its targets
/// alone go to the report, as not run.
fn run_sections(o: &mut Out, ctx: &Ctx) {
    for (name, section) in SECTIONS {
        if ctx.runs(name) {
            section(o, ctx);
        } else {
            let mut left_out = Out::default();
            section(&mut left_out, ctx);
            o.targets
                .extend(left_out.targets.into_iter().map(judge::Target::not_run));
        }
    }
}

/// The peers, the default WaitCell and the WaitCell tiers usable here. Which
/// tiers are usable is the selection's answer, asked of a child process so that
/// this one makes its own selection at its first wait, as a program would.
fn implementations() -> Vec<(String, impls::Make)> {
    let tiers = mwait_support::run_self(&[TIERS_ARG.to_string()])
        .unwrap_or_else(|e| panic!("listing the WaitCell tiers: {e}"));
    let mut all = impls::peers();
    all.extend(tiers.lines().map(|name| {
        let make = impls::by_name(name).unwrap_or_else(|| panic!("no mechanism {name}"));
        (name.to_string(), make)
    }));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_command_line_takes_its_flags_and_refuses_anything_else() {
        let o = parse(&["--quick", "--out", "d", "--only", "cold"]).unwrap();
        assert!(o.quick);
        assert_eq!((o.out_dir.as_str(), o.only.as_deref()), ("d", Some("cold")));
        let o = parse(&[]).unwrap();
        assert!(!o.quick && o.only.is_none());
        assert_eq!(o.out_dir, "target/mwait-bench");
        // A typo must not start a full run of several minutes.
        assert!(parse(&["--version"])
            .unwrap_err()
            .contains("unknown argument"));
        assert!(parse(&["--out"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--only", "pingpong-pinned"])
            .unwrap_err()
            .contains("no such bench"));
        // Several sections, in the report's order whatever the list's.
        let o = parse(&["--only", "spsc,clients"]).unwrap();
        assert_eq!(o.only.as_deref(), Some("spsc,clients"));
        let only = o.only.as_deref();
        assert!(selects(only, "clients") && selects(only, "spsc"));
        assert!(!selects(only, "cold") && !selects(only, "spsc,clients"));
        assert!(selects(None, "cold"));
        assert!(parse(&["--only", "spsc,nope"])
            .unwrap_err()
            .contains("no such bench"));
    }

    #[test]
    fn a_section_left_out_writes_nothing_and_lists_its_targets_as_not_run() {
        let ctx = Ctx {
            b: Budgets::new(1),
            all: impls::peers(),
            // A list that names no section leaves every one out.
            only: Some(String::new()),
            process_cpus: 2,
            energy: Err("none in this test".into()),
        };
        let mut o = Out::default();
        run_sections(&mut o, &ctx);
        assert_eq!(o.md, "", "no table of a section that did not run");
        assert!(o.json.is_empty() && o.svg_series.is_empty() && o.latency_cpu.is_empty());
        // Every section that judges targets lists them, none judged.
        for prefix in [
            "pingpong",
            "notify",
            "atomic:",
            "long_wait",
            "cold",
            "scale:",
            "clients: executor yield_now",
            "spsc:",
        ] {
            assert!(
                o.targets.iter().any(|t| t.text.starts_with(prefix)),
                "{prefix}"
            );
        }
        assert!(o
            .targets
            .iter()
            .all(|t| t.verdict == judge::Verdict::NoMeasurement));
    }
}
