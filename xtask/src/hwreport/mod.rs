//! `cargo xtask hw-report [--no-bench]`: one command that tells the project what a
//! machine can do, for a user on bare metal to run and send.
//!
//! It runs the CPUID dump (`examples/cpuid_dump.rs`), the probe, the instruction
//! probe (`benches/c/insn_probe.c`, built with the system's `cc`), the `hw_tiers`
//! suite once with the machine's own choice and, for each hardware tier the
//! machine offers (CPUID, and `/dev/mwait` for the kernel tier; a tier not offered
//! is never forced), once for the self-test's verdict and once whole, and the quick
//! benchmark (`cargo xtask bench --quick`, about a minute). It writes
//! `target/mwait-hw-report.md` in the shape of `docs/hardware-results.md` and
//! `target/mwait-hw-report.json`.
//!
//! A sub-step that fails, crashes or hangs (each has a time limit) is recorded
//! with its exit status and last lines, and the report goes on: the command fails
//! only when it cannot write the report. On the 2-vCPU development VM a run took
//! 57 s and 90 s once built (the quick benchmark 52 s and 81 s of it); a cold
//! `target/` adds about 45 s of builds.

mod json;
mod machine;
mod parse;
mod render;

use crate::util::{self, capture, project_root, step, Captured, Res};
use machine::{CpuInfo, Cpuid, Offer, OfferFacts};
use render::{Bench, Machine, Report, SelfTest, StepRecord, SuiteRun, TierResult, TAIL_LINES};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Limit of a `cargo run` of an example, its build included.
const EXAMPLE_LIMIT: Duration = Duration::from_secs(600);
/// Limit of the suite's build.
const BUILD_LIMIT: Duration = Duration::from_secs(900);
/// Limit of one run of the suite (it takes seconds; a hang must not stop the report).
const SUITE_LIMIT: Duration = Duration::from_secs(300);
/// Limit of the quick benchmark, its build included.
const BENCH_LIMIT: Duration = Duration::from_secs(900);
/// Limit of building and of running `benches/c/insn_probe.c` (it runs for about a
/// second where the instructions trap, and for well under a minute where they wait).
const INSN_PROBE_LIMIT: Duration = Duration::from_secs(180);
/// Limit of the small commands (`uname`, `git`, `date`).
const SMALL_LIMIT: Duration = Duration::from_secs(30);

/// The variables that choose a backend; cleared for every suite run so that the
/// caller's environment does not leak into the report.
const BACKEND_VARS: [&str; 6] = [
    "MWAIT_BACKEND",
    "MWAIT_DISABLE",
    "MWAIT_UNSAFE_FORCE",
    "MWAIT_SELFTEST",
    "MWAIT_HW_EXPECT",
    "MWAIT_HW_EXPECT_DEMOTED",
];

/// `cargo xtask hw-report`.
pub fn run(args: &[String]) -> Res {
    let with_bench = parse_args(args)?;
    let t0 = Instant::now();
    let root = project_root();
    let mut rep = Report::default();
    let mut steps = Steps::default();

    step("hw-report: machine");
    rep.generated_utc = small(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]))
        .unwrap_or_else(|| "unknown date".into());
    rep.commit = commit();
    let (cpuid, dump) = steps.cpuid_dump();
    rep.cpuid_dump = dump;
    rep.machine = machine(cpuid);

    step("hw-report: probe (about 10 s after its build)");
    (rep.probe_sections, rep.probe_selection) = steps.probe();

    step("hw-report: each wait instruction in a child process (benches/c/insn_probe.c)");
    rep.insn_probe = steps.insn_probe(&root);

    step("hw-report: hardware-tier suites");
    let bin = steps.suite_binary();
    if let Some(bin) = &bin {
        let default = steps.suite(bin, "hw_tiers, the machine's own choice", &[], None);
        rep.default_suite = Some(default);
    }
    for offer in rep.machine.facts.offers() {
        rep.tiers.push(steps.tier(bin.as_deref(), offer));
    }

    if with_bench {
        step("hw-report: quick benchmark (about a minute after its build)");
        rep.bench = Some(steps.bench(&root));
    }

    rep.steps = steps.0;
    rep.total_secs = t0.elapsed().as_secs_f64();
    write_report(&rep, &root)
}

/// Whether to run the quick benchmark (no `--no-bench`).
fn parse_args(args: &[String]) -> Res<bool> {
    let mut with_bench = true;
    for a in args {
        match a.as_str() {
            "--no-bench" => with_bench = false,
            other => return Err(format!("hw-report takes only --no-bench, got `{other}`")),
        }
    }
    Ok(with_bench)
}

/// Writes the Markdown and the JSON report, then prints the verdict, the failed
/// sub-steps and where the files are.
fn write_report(rep: &Report, root: &Path) -> Res {
    let md = rep.markdown();
    let md_path = root.join(render::MD_PATH);
    let json_path = root.join(render::JSON_PATH);
    write(&md_path, &md)?;
    write(&json_path, &format!("{}\n", rep.json().pretty()))?;
    println!("\n{}\n", rep.verdict().replace("**", ""));
    for s in rep.failed_steps() {
        println!("sub-step failed: {} ({})", s.name, s.status);
    }
    println!(
        "hw-report: wrote {} and {} in {:.0} s; see their last section for how to send them",
        md_path.display(),
        json_path.display(),
        rep.total_secs
    );
    Ok(())
}

fn write(path: &Path, text: &str) -> Res {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The output of a small command, trimmed, when it succeeds.
fn small(cmd: &mut Command) -> Option<String> {
    let c = capture(cmd, SMALL_LIMIT);
    c.ok.then(|| c.stdout.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The checkout's commit, marked when the tree has local changes.
fn commit() -> String {
    let git = |args: &[&str]| {
        let mut c = Command::new("git");
        c.args(args).current_dir(project_root());
        capture(&mut c, SMALL_LIMIT)
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"]);
    if !head.ok {
        return "unknown (not a git checkout)".into();
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]);
    format!(
        "{}{}",
        head.stdout.trim(),
        if dirty.ok && !dirty.stdout.trim().is_empty() {
            " + local changes"
        } else {
            ""
        }
    )
}

/// The OS facts and the CPU as `/proc/cpuinfo` and the dump describe it.
fn machine(cpuid: Cpuid) -> Machine {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let umwait_dir = Path::new("/sys/devices/system/cpu/umwait_control");
    let umwait_control = umwait_dir.is_dir().then(|| {
        ["enable_c02", "max_time"]
            .iter()
            .map(|f| {
                let v = std::fs::read_to_string(umwait_dir.join(f))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|e| format!("unreadable: {e}"));
                (f.to_string(), v)
            })
            .collect()
    });
    Machine {
        facts: OfferFacts {
            cpuid,
            cpuinfo: read("/proc/cpuinfo")
                .map(|t| CpuInfo::parse(&t))
                .unwrap_or_default(),
            dev_mwait: Path::new("/dev/mwait").exists(),
        },
        kernel: small(Command::new("uname").arg("-r")),
        umwait_control,
        module_loaded: Path::new("/sys/module/mwait").exists(),
        usable_cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
    }
}

/// The sub-steps run so far, in order.
#[derive(Default)]
struct Steps(Vec<StepRecord>);

impl Steps {
    /// Runs `cmd` under `limit`, records it, prints one line about it. Backtraces
    /// are off, so that a panic's message, not its frames, ends the output.
    fn run(&mut self, name: &str, cmd: &mut Command, limit: Duration) -> Captured {
        let c = capture(cmd.env("RUST_BACKTRACE", "0"), limit);
        println!("{name}: {} in {:.1} s", c.status, c.secs);
        let tail = if c.ok {
            String::new()
        } else {
            format!(
                "{}\n--- stderr ---\n{}",
                util::tail(&c.stdout, TAIL_LINES),
                util::tail(&c.stderr, TAIL_LINES)
            )
        };
        self.0.push(StepRecord {
            name: name.to_string(),
            command: c.command.clone(),
            status: c.status.clone(),
            ok: c.ok,
            secs: c.secs,
            tail,
        });
        c
    }

    /// Runs `examples/cpuid_dump.rs`; the CPUID it decodes to (empty when it failed)
    /// and its output when that holds any leaf.
    fn cpuid_dump(&mut self) -> (Cpuid, Option<String>) {
        let dump = self.run(
            "CPUID dump",
            util::cargo().args(["run", "--quiet", "--release", "--example", "cpuid_dump"]),
            EXAMPLE_LIMIT,
        );
        let cpuid = if dump.ok {
            Cpuid::parse(&dump.stdout)
        } else {
            Cpuid::default()
        };
        let text = (!cpuid.is_empty()).then(|| dump.stdout.clone());
        (cpuid, text)
    }

    /// Runs the probe with the caller's backend choice cleared; its sections and
    /// its backend section, read.
    fn probe(&mut self) -> (Vec<(String, String)>, Option<parse::ProbeSelection>) {
        let probe = self.run(
            "probe",
            util::cargo()
                .args(["run", "--quiet", "--release", "--example", "probe"])
                .env_remove("MWAIT_BACKEND")
                .env_remove("MWAIT_DISABLE"),
            EXAMPLE_LIMIT,
        );
        let sections = parse::probe_sections(&probe.stdout);
        let selection = sections
            .iter()
            .find(|(t, _)| t == "backend")
            .map(|(_, b)| parse::probe_selection(b));
        (sections, selection)
    }

    /// One hardware tier: never forced when the machine does not offer it; else
    /// the suite's selection test with the tier and the self-test on, then the
    /// whole suite with the tier (the self-test off when it demoted the tier).
    fn tier(&mut self, bin: Option<&Path>, offer: Offer) -> TierResult {
        let tier = offer.tier.name();
        let mut t = TierResult {
            offer,
            selection: None,
            self_test: None,
            suite: None,
        };
        match (bin, t.offer.offered) {
            (_, false) => println!("{tier}: not offered ({}); not forced", t.offer.why),
            (None, true) => println!("{tier}: offered, but the suite did not build"),
            (Some(bin), true) => {
                let env = [("MWAIT_BACKEND", tier)];
                let (sel, _) = self.suite(
                    bin,
                    &format!("hw_tiers {tier}: selection (self-test on)"),
                    &env,
                    Some("selection_is_what_the_runner_expects"),
                );
                let st = SelfTest::of(tier, sel.as_ref());
                let mut env = vec![("MWAIT_BACKEND", tier), ("MWAIT_HW_EXPECT", tier)];
                if matches!(st, SelfTest::Demoted(_)) {
                    env.push(("MWAIT_SELFTEST", "0"));
                }
                let (_, run) = self.suite(bin, &format!("hw_tiers {tier}: suite"), &env, None);
                t.selection = sel;
                t.self_test = Some(st);
                t.suite = Some(run);
            }
        }
        t
    }

    /// Builds the `hw_tiers` suite; its test binary's path.
    fn suite_binary(&mut self) -> Option<std::path::PathBuf> {
        let c = self.run(
            "build the hw_tiers suite",
            &mut crate::hwtest::build_suite_command(),
            BUILD_LIMIT,
        );
        let bin = crate::hwtest::suite_executable(&c.stdout);
        if c.ok && bin.is_none() {
            if let Some(s) = self.0.last_mut() {
                s.ok = false;
                s.status = "cargo did not report the hw_tiers test binary".into();
            }
        }
        bin.filter(|_| c.ok)
    }

    /// One run of the suite (or of one test) with `env`; the selection it printed
    /// and its record.
    fn suite(
        &mut self,
        bin: &Path,
        name: &str,
        env: &[(&str, &str)],
        only: Option<&str>,
    ) -> (Option<parse::SuiteSelection>, SuiteRun) {
        let mut cmd = Command::new(bin);
        cmd.args(["--test-threads=1", "--nocapture"]);
        if let Some(t) = only {
            cmd.args(["--exact", t]);
        }
        for v in BACKEND_VARS {
            cmd.env_remove(v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let c = self.run(name, &mut cmd, SUITE_LIMIT);
        let out = format!("{}\n{}", c.stdout, c.stderr);
        let run = SuiteRun {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            step: self.0.len() - 1,
            counts: parse::test_counts(&out),
            failed_tests: parse::failed_tests(&out),
        };
        (parse::suite_selection(&out), run)
    }

    /// Builds `benches/c/insn_probe.c` with the system's C compiler and runs it; its
    /// output. It tries each user-mode wait instruction in a child process whatever
    /// CPUID says (a SIGILL ends only the child) and times what executes, which is
    /// what tells a real monitor from a trapped or emulated one.
    fn insn_probe(&mut self, root: &Path) -> Option<String> {
        if std::env::consts::ARCH != "x86_64" {
            println!("instruction probe: skipped, not an x86-64 CPU");
            return None;
        }
        let dir = root.join("target/hw-report");
        let _ = std::fs::create_dir_all(&dir);
        let bin = dir.join("insn_probe");
        let built = self.run(
            "build benches/c/insn_probe.c",
            Command::new("cc")
                .args(["-O2", "-pthread", "-o"])
                .arg(&bin)
                .arg(root.join("benches/c/insn_probe.c")),
            INSN_PROBE_LIMIT,
        );
        if !built.ok {
            return None;
        }
        let ran = self.run(
            "instruction probe",
            &mut Command::new(&bin),
            INSN_PROBE_LIMIT,
        );
        Some(ran.stdout).filter(|o| !o.trim().is_empty())
    }

    /// `cargo xtask bench --quick` in a child (this same binary), then its files.
    fn bench(&mut self, root: &Path) -> Bench {
        let dir = root.join("target/mwait-bench");
        // A summary left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(dir.join("summary.json"));
        let _ = std::fs::remove_file(dir.join("report.md"));
        let exe = std::env::current_exe().unwrap_or_else(|_| "xtask".into());
        let mut cmd = Command::new(exe);
        cmd.args(["bench", "--quick"]).current_dir(root);
        for v in BACKEND_VARS {
            cmd.env_remove(v);
        }
        self.run("quick benchmark", &mut cmd, BENCH_LIMIT);
        let mut b = Bench::default();
        match std::fs::read_to_string(dir.join("summary.json")) {
            Ok(t) => match json::parse(&t) {
                Ok(v) => b.summary = Some(v),
                Err(e) => b.summary_error = Some(format!("summary.json does not parse: {e}")),
            },
            Err(e) => {
                b.summary_error = Some(format!("no {}: {e}", dir.join("summary.json").display()))
            }
        }
        if let Ok(md) = std::fs::read_to_string(dir.join("report.md")) {
            b.targets = parse::bench_targets(&md);
        }
        b
    }
}
