//! `cargo xtask hw-report [--no-bench]`: one command that tells the project what a
//! machine can do, for a user on bare metal to run and send.
//!
//! It runs the tools that describe a machine and puts their output side by side
//! in `target/mwait-hw-report.md`, in the shape of `docs/hardware-results.md`: the
//! CPUID dump (`examples/cpuid_dump.rs`), the probe (which prints its own Markdown
//! sections), the instruction probe (`benches/c/insn_probe.c`, built with the
//! system's `cc`), the `hw_tiers` suite, and the quick benchmark
//! (`cargo xtask bench --quick`, whose `target/mwait-bench/report.md` it includes). It reads no output
//! back to decide anything except through exit statuses: each hardware tier is
//! asked for with `MWAIT_BACKEND=<tier>`, which the crate refuses where the machine
//! does not offer the tier (nothing is forced), and the suite's selection test
//! passes or fails on what the selection did with it.
//!
//! A sub-step that fails, crashes or hangs (each has a time limit) is recorded
//! with its exit status and last lines, and the report goes on: the command fails
//! only when it cannot write the report.

mod report;

use crate::util::{self, capture, project_root, step, Captured, Res};
use report::{Os, Report, SelfTest, StepRecord, TierRun, TAIL_LINES};
use std::path::{Path, PathBuf};
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

/// The hardware tiers, as `MWAIT_BACKEND` names them.
const TIERS: [&str; 3] = ["umwait", "mwaitx", "kernel"];

/// The suite's test that checks the selection against `MWAIT_HW_EXPECT` and
/// `MWAIT_HW_EXPECT_DEMOTED`.
const SELECTION_TEST: &str = "selection_is_what_the_runner_expects";

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
    rep.os = os();
    rep.cpuid_dump = steps.example("CPUID dump", "cpuid_dump", &[]);

    step("hw-report: probe (about 10 s after its build)");
    rep.probe = steps.example("probe", "probe", &["--markdown"]);

    step("hw-report: each wait instruction in a child process (benches/c/insn_probe.c)");
    rep.insn_probe = steps.insn_probe(&root);

    step("hw-report: hardware-tier suites");
    if let Some(bin) = steps.suite_binary() {
        let all = steps.suite(&bin, "hw_tiers, the machine's own choice", &[], None);
        rep.default_suite = Some(all);
        rep.tiers = TIERS.iter().map(|tier| steps.tier(&bin, tier)).collect();
    }

    if with_bench {
        step("hw-report: quick benchmark (about a minute after its build)");
        rep.bench = Some(steps.bench(&root));
    }

    rep.steps = steps.0;
    rep.total_secs = t0.elapsed().as_secs_f64();
    let md = rep.markdown();
    let path = root.join(report::MD_PATH);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, &md).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("\n{}\n", rep.verdict().replace("**", ""));
    for s in rep.failed_steps() {
        println!("sub-step failed: {} ({})", s.name, s.status);
    }
    println!(
        "hw-report: wrote {} in {:.0} s; see its last section for how to send it",
        path.display(),
        rep.total_secs
    );
    Ok(())
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

/// What the OS says beside the probe's CPU description: the kernel, the first
/// processor of `/proc/cpuinfo`, whether the mwait module is loaded.
fn os() -> Os {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    Os {
        kernel: small(Command::new("uname").arg("-r")),
        cpuinfo: report::first_processor(&cpuinfo),
        module_loaded: Path::new("/sys/module/mwait").exists(),
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
            answer: false,
        });
        c
    }

    /// Runs an example in release mode with the caller's backend choice cleared;
    /// its output when it succeeded and printed something.
    fn example(&mut self, name: &str, example: &str, args: &[&str]) -> Option<String> {
        let mut cmd = util::cargo();
        cmd.args(["run", "--quiet", "--release", "--example", example, "--"])
            .args(args);
        for v in BACKEND_VARS {
            cmd.env_remove(v);
        }
        let c = self.run(name, &mut cmd, EXAMPLE_LIMIT);
        Some(c.stdout).filter(|o| c.ok && !o.trim().is_empty())
    }

    /// One hardware tier, asked for with `MWAIT_BACKEND` (refused where not
    /// offered): the selection test expecting the tier kept by the self-test, else
    /// expecting it demoted; then the whole suite with the tier, with the
    /// self-test off when it demoted the tier, so that the tier's code still runs
    /// on a CPU that has it.
    fn tier(&mut self, bin: &Path, tier: &'static str) -> TierRun {
        let asked = ("MWAIT_BACKEND", tier);
        let (kept, ok) = self.selection(bin, tier, "MWAIT_HW_EXPECT", "kept by");
        let self_test = if ok {
            SelfTest::Kept
        } else if self
            .selection(bin, tier, "MWAIT_HW_EXPECT_DEMOTED", "demoted by")
            .1
        {
            SelfTest::Demoted
        } else {
            SelfTest::NotSelected { step: kept }
        };
        let mut env = vec![asked, ("MWAIT_HW_EXPECT", tier)];
        let suite = match self_test {
            SelfTest::NotSelected { .. } => None,
            SelfTest::Demoted => {
                env.push(("MWAIT_SELFTEST", "0"));
                Some(self.suite(bin, &format!("hw_tiers {tier}: suite"), &env, None))
            }
            SelfTest::Kept => Some(self.suite(bin, &format!("hw_tiers {tier}: suite"), &env, None)),
        };
        TierRun {
            tier,
            self_test,
            suite,
        }
    }

    /// The suite's selection test with `tier` asked for and `expect` set to it:
    /// the index of its record, and whether it passed (a failure is an answer).
    fn selection(&mut self, bin: &Path, tier: &str, expect: &str, what: &str) -> (usize, bool) {
        let name = format!("hw_tiers {tier}: selection, {what} the self-test");
        let env = [("MWAIT_BACKEND", tier), (expect, tier)];
        let i = self.suite(bin, &name, &env, Some(SELECTION_TEST));
        self.0[i].answer = true;
        (i, self.0[i].ok)
    }

    /// Builds the `hw_tiers` suite; its test binary's path.
    fn suite_binary(&mut self) -> Option<PathBuf> {
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

    /// One run of the suite (or of one test) with `env` and nothing else of the
    /// caller's backend variables; the index of its record.
    fn suite(&mut self, bin: &Path, name: &str, env: &[(&str, &str)], only: Option<&str>) -> usize {
        let mut cmd = Command::new(bin);
        cmd.args(["--test-threads=1", "--nocapture"]);
        if let Some(t) = only {
            cmd.args(["--exact", t]);
        }
        for v in BACKEND_VARS {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        self.run(name, &mut cmd, SUITE_LIMIT);
        self.0.len() - 1
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

    /// `cargo xtask bench --quick` in a child (this same binary); the `report.md`
    /// it wrote, or `None` when it wrote none.
    fn bench(&mut self, root: &Path) -> Option<String> {
        let report = root.join("target/mwait-bench/report.md");
        // A report left by an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(&report);
        let exe = std::env::current_exe().unwrap_or_else(|_| "xtask".into());
        let mut cmd = Command::new(exe);
        cmd.args(["bench", "--quick"]).current_dir(root);
        for v in BACKEND_VARS {
            cmd.env_remove(v);
        }
        self.run("quick benchmark", &mut cmd, BENCH_LIMIT);
        std::fs::read_to_string(report).ok()
    }
}
