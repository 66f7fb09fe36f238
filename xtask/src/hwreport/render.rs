//! The report's data and its two renderings: Markdown in the shape of
//! `docs/hardware-results.md` (machine, selection, per tier, benchmark) and the
//! same facts as JSON.

use super::json::Json;
use super::machine::{Offer, OfferFacts, Tier};
use super::parse::{ProbeSelection, SuiteSelection, TestCounts};
use std::fmt::Write as _;

/// Lines of a failed sub-step's output the report keeps (per stream).
pub const TAIL_LINES: usize = 15;

/// One command the report ran, as the report records it.
#[derive(Debug, Clone, Default)]
pub struct StepRecord {
    /// What it was for.
    pub name: String,
    /// The command line.
    pub command: String,
    /// `exit 0`, `exit 101`, `timed out after 300 s`, `could not start: ...`.
    pub status: String,
    /// Whether it exited with 0.
    pub ok: bool,
    /// Wall-clock seconds.
    pub secs: f64,
    /// The last lines of its output when it failed (empty when it succeeded).
    pub tail: String,
}

/// The machine: the decoded CPUID dump and `/proc/cpuinfo` (in `facts`), and the
/// OS facts.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// CPUID, `/proc/cpuinfo`, `/dev/mwait`.
    pub facts: OfferFacts,
    /// `uname -r`.
    pub kernel: Option<String>,
    /// `/sys/devices/system/cpu/umwait_control/*`: (file, value); `None` when absent.
    pub umwait_control: Option<Vec<(String, String)>>,
    /// `/sys/module/mwait` exists.
    pub module_loaded: bool,
    /// CPUs this process may run on.
    pub usable_cpus: usize,
}

/// One run of the `hw_tiers` suite.
#[derive(Debug, Clone, Default)]
pub struct SuiteRun {
    /// The environment it ran with (`MWAIT_BACKEND=...`).
    pub env: Vec<(String, String)>,
    /// The index of its [`StepRecord`].
    pub step: usize,
    /// Its totals, when libtest got as far as printing them.
    pub counts: Option<TestCounts>,
    /// The tests that failed.
    pub failed_tests: Vec<String>,
}

/// What the self-test made of a tier in a process that asked for it.
#[derive(Debug, Clone, PartialEq)]
pub enum SelfTest {
    /// The tier is the process's backend: the self-test passed.
    Kept,
    /// The self-test demoted the tier; the text is the demotion as printed.
    Demoted(String),
    /// Another backend was selected for another reason (a refusal).
    Other { backend: String, reason: String },
    /// The selection could not be read (the run failed before printing it).
    Unknown,
}

impl SelfTest {
    /// Reads the suite's selection line for a run that asked for `tier`.
    pub fn of(tier: &str, sel: Option<&SuiteSelection>) -> SelfTest {
        match sel {
            None => SelfTest::Unknown,
            Some(s) if s.demoted.is_some() => {
                SelfTest::Demoted(s.demoted.clone().unwrap_or_default())
            }
            Some(s) if s.backend == tier => SelfTest::Kept,
            Some(s) => SelfTest::Other {
                backend: s.backend.clone(),
                reason: s.reason.clone(),
            },
        }
    }

    fn describe(&self) -> String {
        match self {
            SelfTest::Kept => "passed (tier kept)".into(),
            SelfTest::Demoted(d) => format!("demoted: {d}"),
            SelfTest::Other { backend, reason } => format!("not selected: {backend} ({reason})"),
            SelfTest::Unknown => "unknown (the run failed; see sub-steps)".into(),
        }
    }
}

/// One hardware tier: offered or not, and when offered, what its runs showed.
#[derive(Debug, Clone)]
pub struct TierResult {
    /// Whether the machine offers it, and why.
    pub offer: Offer,
    /// The selection run (`MWAIT_BACKEND=<tier>`, self-test on); `None` when the
    /// tier is not offered.
    pub selection: Option<SuiteSelection>,
    /// What the self-test did.
    pub self_test: Option<SelfTest>,
    /// The whole suite with the tier (with the self-test off when it demoted the
    /// tier, so that the tier's code still runs on a CPU that has it).
    pub suite: Option<SuiteRun>,
}

impl TierResult {
    /// Offered, kept by the self-test and every suite test passed.
    pub fn usable(&self, steps: &[StepRecord]) -> bool {
        self.offer.offered
            && self.self_test == Some(SelfTest::Kept)
            && self.suite.as_ref().is_some_and(|s| {
                steps.get(s.step).is_some_and(|st| st.ok)
                    && s.counts.is_some_and(|c| c.failed == 0 && c.passed > 0)
            })
    }
}

/// The quick benchmark's results.
#[derive(Debug, Clone, Default)]
pub struct Bench {
    /// `summary.json`, parsed.
    pub summary: Option<Json>,
    /// Why `summary.json` could not be read.
    pub summary_error: Option<String>,
    /// The targets section of `report.md`.
    pub targets: Vec<String>,
}

/// Everything the report says.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// When it was made (UTC, ISO 8601).
    pub generated_utc: String,
    /// The checkout's commit, with `+ local changes` when the tree is dirty.
    pub commit: String,
    /// The whole run's wall-clock seconds.
    pub total_secs: f64,
    /// The machine.
    pub machine: Machine,
    /// The probe's sections (`== title ==` and body), in order.
    pub probe_sections: Vec<(String, String)>,
    /// The probe's backend section, read.
    pub probe_selection: Option<ProbeSelection>,
    /// One per hardware tier, in [`Tier::ALL`] order.
    pub tiers: Vec<TierResult>,
    /// The output of `benches/c/insn_probe.c`; `None` when it did not run.
    pub insn_probe: Option<String>,
    /// The suite with the machine's own choice (no variables set).
    pub default_suite: Option<(Option<SuiteSelection>, SuiteRun)>,
    /// The quick benchmark; `None` when skipped (`--no-bench`).
    pub bench: Option<Bench>,
    /// Every command run, in order.
    pub steps: Vec<StepRecord>,
    /// The CPUID dump as `examples/cpuid_dump.rs` printed it.
    pub cpuid_dump: Option<String>,
}

/// Where the report is written, relative to the workspace root.
pub const MD_PATH: &str = "target/mwait-hw-report.md";
/// The JSON twin of [`MD_PATH`].
pub const JSON_PATH: &str = "target/mwait-hw-report.json";

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn bit(b: Option<bool>) -> String {
    b.map_or("?".into(), |b| (b as u8).to_string())
}

/// A Markdown table cell: pipes escaped, newlines folded.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The rows of the report's machine table: (label, value).
fn machine_rows(m: &Machine) -> [(&'static str, String); 11] {
    let c = &m.facts.cpuid;
    let i = &m.facts.cpuinfo;
    let unknown = || "unknown".to_string();
    let brand = c.brand().or_else(|| i.model_name.clone());
    let flags = format!(
        "MONITOR {}, WAITPKG {}, MONITORX {}, invariant TSC {}, hypervisor {}",
        bit(c.monitor()),
        bit(c.waitpkg()),
        bit(c.monitorx()),
        bit(c.invariant_tsc()),
        bit(c.hypervisor_bit())
    );
    let dev_mwait = format!(
        "{}; module {}",
        if m.facts.dev_mwait {
            "present"
        } else {
            "absent"
        },
        if m.module_loaded {
            "loaded"
        } else {
            "not loaded"
        }
    );
    [
        ("CPU (CPUID brand)", cell(&brand.unwrap_or_else(unknown))),
        ("vendor", c.vendor().unwrap_or_else(unknown)),
        ("family / model / stepping", family_model_stepping_md(m)),
        (
            "microcode",
            i.microcode.clone().unwrap_or_else(|| "not readable".into()),
        ),
        ("CPUID flags that matter", flags),
        ("/proc/cpuinfo flags", cpuinfo_flags_md(m)),
        ("hypervisor", hypervisor_md(m)),
        (
            "kernel (`uname -r`)",
            m.kernel.clone().unwrap_or_else(unknown),
        ),
        ("usable CPUs", m.usable_cpus.to_string()),
        ("umwait_control", umwait_control_md(m)),
        ("/dev/mwait", dev_mwait),
    ]
}

/// Family, model and stepping: from CPUID in hex, else from `/proc/cpuinfo` in
/// decimal.
fn family_model_stepping_md(m: &Machine) -> String {
    match (
        m.facts.cpuid.family_model_stepping(),
        m.facts.cpuinfo.family_model_stepping,
    ) {
        (Some((f, mo, s)), _) => format!("family {f:#x}, model {mo:#x}, stepping {s}"),
        (None, Some((f, mo, s))) => format!("family {f}, model {mo}, stepping {s} (decimal)"),
        (None, None) => "unknown".into(),
    }
}

/// Which of the flags of interest `/proc/cpuinfo` lists and which it does not.
fn cpuinfo_flags_md(m: &Machine) -> String {
    let (have, lack): (Vec<&str>, Vec<&str>) = super::machine::FLAGS_OF_INTEREST
        .iter()
        .partition(|f| m.facts.cpuinfo.has(f));
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(" ")
        }
    };
    format!("listed: {}; not listed: {}", list(have), list(lack))
}

/// The hypervisor: CPUID's signature where the hypervisor bit is set, else what
/// `/proc/cpuinfo` says.
fn hypervisor_md(m: &Machine) -> String {
    let c = &m.facts.cpuid;
    match (c.hypervisor_bit(), c.hypervisor_vendor()) {
        (Some(true), Some(v)) => format!("`{v}` (CPUID 0x4000_0000)"),
        (Some(true), None) => "yes, signature not read".into(),
        (Some(false), _) => "none (CPUID.1:ECX[31] = 0)".into(),
        (None, _) if m.facts.cpuinfo.has("hypervisor") => "yes (/proc/cpuinfo)".into(),
        (None, _) => "unknown".into(),
    }
}

/// The `umwait_control` files and their values, or why there are none.
fn umwait_control_md(m: &Machine) -> String {
    match &m.umwait_control {
        Some(v) if !v.is_empty() => v
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "absent (no /sys/devices/system/cpu/umwait_control)".into(),
    }
}

impl Report {
    /// The tiers that are usable on this machine.
    pub fn usable_tiers(&self) -> Vec<Tier> {
        self.tiers
            .iter()
            .filter(|t| t.usable(&self.steps))
            .map(|t| t.offer.tier)
            .collect()
    }

    /// The sub-steps that failed.
    pub fn failed_steps(&self) -> Vec<&StepRecord> {
        self.steps.iter().filter(|s| !s.ok).collect()
    }

    /// The one-sentence verdict at the top of the report.
    pub fn verdict(&self) -> String {
        let usable = self.usable_tiers();
        if !usable.is_empty() {
            let names: Vec<&str> = usable.iter().map(|t| t.name()).collect();
            return format!(
                "**Usable hardware tiers: {}** (offered, kept by the self-test, suite passed).",
                names.join(", ")
            );
        }
        let offered: Vec<&TierResult> = self.tiers.iter().filter(|t| t.offer.offered).collect();
        if offered.is_empty() {
            "**No hardware tier is usable on this machine: it offers none** \
             (see the tiers below for the CPUID bits); mwait waits by spinning and parking."
                .to_string()
        } else {
            let names: Vec<&str> = offered.iter().map(|t| t.offer.tier.name()).collect();
            format!(
                "**No hardware tier is usable on this machine.** Offered: {}; \
                 the self-test or the suite rejected each (see below).",
                names.join(", ")
            )
        }
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let w = &mut o;
        let _ = writeln!(w, "# mwait hardware report\n");
        let _ = writeln!(
            w,
            "Made by `cargo xtask hw-report` on {} at commit {}, in {:.0} s.\n",
            self.generated_utc, self.commit, self.total_secs
        );
        let _ = writeln!(w, "{}\n", self.verdict());
        let failed = self.failed_steps();
        if !failed.is_empty() {
            let names: Vec<&str> = failed.iter().map(|s| s.name.as_str()).collect();
            let _ = writeln!(
                w,
                "{} sub-step(s) failed: {} (their exit status and last lines are under \
                 \"Sub-steps\").\n",
                failed.len(),
                names.join("; ")
            );
        }
        self.machine_md(w);
        self.selection_md(w);
        self.tiers_md(w);
        self.insn_probe_md(w);
        self.probe_md(w);
        self.bench_md(w);
        self.steps_md(w);
        if let Some(d) = &self.cpuid_dump {
            let _ = writeln!(
                w,
                "## CPUID dump\n\n`cargo run --example cpuid_dump`; to become \
                 `crates/mwait/tests/cpuid/<machine>.txt`:\n\n```\n{}\n```\n",
                d.trim_end()
            );
        }
        let _ = writeln!(w, "{}", SEND_FOOTER);
        o
    }

    fn machine_md(&self, w: &mut String) {
        let _ = writeln!(w, "## Machine\n\n| | |\n| --- | --- |");
        for (label, value) in machine_rows(&self.machine) {
            let _ = writeln!(w, "| {label} | {value} |");
        }
        let _ = writeln!(w);
    }

    fn selection_md(&self, w: &mut String) {
        let _ = writeln!(w, "## Selection\n");
        match &self.probe_selection {
            Some(s) => {
                let _ = writeln!(
                    w,
                    "The probe's process (no variables set) chose **{}**: {}.\n",
                    s.chosen.as_deref().unwrap_or("?"),
                    s.why.as_deref().unwrap_or("no reason printed")
                );
                for sk in &s.skipped {
                    let _ = writeln!(w, "- skipped {sk}");
                }
                if let Some(p) = &s.policy {
                    let _ = writeln!(w, "- default policy: {p}");
                }
                let _ = writeln!(w);
            }
            None => {
                let _ = writeln!(w, "The probe did not report a selection (see sub-steps).\n");
            }
        }
        let demotions: Vec<String> = self
            .tiers
            .iter()
            .filter_map(|t| match &t.self_test {
                Some(SelfTest::Demoted(d)) => Some(format!("- {}: {d}", t.offer.tier.name())),
                _ => None,
            })
            .collect();
        if demotions.is_empty() {
            let _ = writeln!(w, "Demotions by the self-test: none.\n");
        } else {
            let _ = writeln!(
                w,
                "Demotions by the self-test:\n\n{}\n",
                demotions.join("\n")
            );
        }
    }

    fn tiers_md(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "## Per tier\n\nEach offered tier: the `hw_tiers` suite's selection test with \
             `MWAIT_BACKEND=<tier>` (self-test on), then the whole suite with the tier \
             (self-test off if it demoted the tier). A tier the machine does not offer is \
             not forced.\n"
        );
        let _ = writeln!(
            w,
            "| tier | offered | why | self-test | suite (hw_tiers) |\n| --- | --- | --- | --- | --- |"
        );
        for t in &self.tiers {
            let st = t
                .self_test
                .as_ref()
                .map_or("not run".into(), SelfTest::describe);
            let suite = t
                .suite
                .as_ref()
                .map_or("not run".into(), |s| self.suite_cell(s));
            let _ = writeln!(
                w,
                "| {} | {} | {} | {} | {} |",
                t.offer.tier.name(),
                yes_no(t.offer.offered),
                cell(&t.offer.why),
                cell(&st),
                cell(&suite)
            );
        }
        if let Some((sel, run)) = &self.default_suite {
            let chosen = sel
                .as_ref()
                .map_or("?".to_string(), |s| format!("{} ({})", s.backend, s.reason));
            let _ = writeln!(
                w,
                "| the machine's own choice: {} | n/a | no variables set | n/a | {} |",
                cell(&chosen),
                cell(&self.suite_cell(run))
            );
        }
        let _ = writeln!(w);
    }

    fn suite_cell(&self, s: &SuiteRun) -> String {
        let env: Vec<String> = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let step = self.steps.get(s.step);
        let mut out = match s.counts {
            Some(c) => format!("{} passed, {} failed", c.passed, c.failed),
            None => format!(
                "no result ({})",
                step.map_or("not run", |st| st.status.as_str())
            ),
        };
        if !s.failed_tests.is_empty() {
            let _ = write!(out, ": {}", s.failed_tests.join(", "));
        }
        if !env.is_empty() {
            let _ = write!(out, " [{}]", env.join(" "));
        }
        if let Some(st) = step {
            let _ = write!(out, " in {:.1} s", st.secs);
        }
        out
    }

    fn insn_probe_md(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "## Each wait instruction in a child process\n\n`benches/c/insn_probe.c` tries \
             UMWAIT, TPAUSE and MWAITX whatever CPUID says (a SIGILL ends only its child) \
             and times what executes: a real monitor lasts about its timer and wakes on \
             the store; a trapped or emulated one lasts the same whatever the timer.\n"
        );
        match &self.insn_probe {
            Some(out) => {
                let _ = writeln!(w, "```\n{}\n```\n", out.trim_end());
            }
            None => {
                let _ = writeln!(w, "Not run (see sub-steps).\n");
            }
        }
    }

    fn probe_md(&self, w: &mut String) {
        let _ = writeln!(w, "## Probe\n\n`cargo run --release --example probe`:\n");
        if self.probe_sections.is_empty() {
            let _ = writeln!(w, "No output (see sub-steps).\n");
        }
        for (title, body) in &self.probe_sections {
            let _ = writeln!(w, "{title}:\n\n```\n{body}\n```\n");
        }
    }

    fn bench_md(&self, w: &mut String) {
        let _ = writeln!(w, "## Quick benchmark\n");
        let Some(b) = &self.bench else {
            let _ = writeln!(w, "Skipped (`--no-bench`).\n");
            return;
        };
        let _ = writeln!(
            w,
            "`cargo xtask bench --quick` (one run on this machine: a shared or virtual \
             machine's timings are noisy; compare rows with each other).\n"
        );
        if let Some(m) = b.summary.as_ref().and_then(|s| s.get("machine")) {
            let _ = writeln!(
                w,
                "Its backend: {}.\n",
                m.get("backend").and_then(Json::as_str).unwrap_or("?")
            );
        }
        if !b.targets.is_empty() {
            let _ = writeln!(w, "Targets:\n");
            for t in &b.targets {
                let _ = writeln!(w, "- {t}");
            }
            let _ = writeln!(w);
        }
        match (&b.summary, &b.summary_error) {
            (Some(s), _) => {
                if let Some(Json::Arr(rows)) = s.get("results") {
                    let _ = writeln!(
                        w,
                        "Results (`summary.json`):\n\n| bench | mechanism | figures |\n| --- | --- | --- |"
                    );
                    for r in rows {
                        let figures: Vec<String> = match r {
                            Json::Obj(m) => m
                                .iter()
                                .filter(|(k, _)| k != "bench" && k != "impl")
                                .map(|(k, v)| format!("{k} {}", v.display()))
                                .collect(),
                            other => vec![other.to_string()],
                        };
                        let _ = writeln!(
                            w,
                            "| {} | {} | {} |",
                            cell(&r.get("bench").map_or(String::new(), Json::display)),
                            cell(&r.get("impl").map_or(String::new(), Json::display)),
                            cell(&figures.join(", "))
                        );
                    }
                    let _ = writeln!(w);
                }
            }
            (None, Some(e)) => {
                let _ = writeln!(w, "No summary: {e}.\n");
            }
            (None, None) => {
                let _ = writeln!(w, "No summary.\n");
            }
        }
    }

    fn steps_md(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "## Sub-steps\n\n| step | result | seconds |\n| --- | --- | ---: |"
        );
        for s in &self.steps {
            let _ = writeln!(
                w,
                "| {} | {} | {:.1} |",
                cell(&s.name),
                cell(&s.status),
                s.secs
            );
        }
        let _ = writeln!(w);
        for s in self.failed_steps() {
            let _ = writeln!(
                w,
                "### Failed: {} ({})\n\n`{}`\n\n```\n{}\n```\n",
                s.name,
                s.status,
                s.command,
                s.tail.trim_end()
            );
        }
    }

    /// The JSON report: the same facts, machine-readable.
    pub fn json(&self) -> Json {
        let usable = self
            .usable_tiers()
            .iter()
            .map(|t| Json::str(t.name()))
            .collect();
        let tiers = self.tiers.iter().map(|t| self.tier_json(t)).collect();
        let default_suite = Json::opt(self.default_suite.as_ref(), |(sel, run)| {
            Json::obj([
                ("selection", selection_json(sel)),
                ("suite", self.suite_json(run)),
            ])
        });
        Json::obj([
            ("generated_utc", Json::str(&self.generated_utc)),
            ("commit", Json::str(&self.commit)),
            ("total_secs", Json::Num(self.total_secs.round())),
            ("usable_tiers", Json::Arr(usable)),
            ("machine", machine_json(&self.machine)),
            ("tiers", Json::Arr(tiers)),
            ("default_suite", default_suite),
            ("insn_probe", opt_str(self.insn_probe.clone())),
            ("probe", self.probe_json()),
            ("bench", Json::opt(self.bench.as_ref(), bench_json)),
            (
                "steps",
                Json::Arr(self.steps.iter().map(step_json).collect()),
            ),
            ("cpuid_dump", opt_str(self.cpuid_dump.clone())),
        ])
    }

    /// One tier: its offer, its runs and whether it is usable.
    fn tier_json(&self, t: &TierResult) -> Json {
        Json::obj([
            ("tier", Json::str(t.offer.tier.name())),
            ("offered", Json::Bool(t.offer.offered)),
            ("why", Json::str(&t.offer.why)),
            ("selection", selection_json(&t.selection)),
            (
                "self_test",
                Json::opt(t.self_test.as_ref(), |st| Json::str(st.describe())),
            ),
            ("suite", Json::opt(t.suite.as_ref(), |r| self.suite_json(r))),
            ("usable", Json::Bool(t.usable(&self.steps))),
        ])
    }

    /// One suite run, with the status of its step.
    fn suite_json(&self, r: &SuiteRun) -> Json {
        let st = self.steps.get(r.step);
        Json::obj([
            (
                "env",
                Json::obj(r.env.iter().map(|(k, v)| (k.clone(), Json::str(v)))),
            ),
            ("status", opt_str(st.map(|s| s.status.clone()))),
            (
                "passed",
                Json::opt(r.counts, |c| Json::Num(f64::from(c.passed))),
            ),
            (
                "failed",
                Json::opt(r.counts, |c| Json::Num(f64::from(c.failed))),
            ),
            (
                "failed_tests",
                Json::Arr(r.failed_tests.iter().map(Json::str).collect()),
            ),
        ])
    }

    /// The probe's selection, read, and its sections as printed.
    fn probe_json(&self) -> Json {
        let selection = Json::opt(self.probe_selection.as_ref(), |p| {
            Json::obj([
                ("chosen", opt_str(p.chosen.clone())),
                ("why", opt_str(p.why.clone())),
                (
                    "skipped",
                    Json::Arr(p.skipped.iter().map(Json::str).collect()),
                ),
                ("default_policy", opt_str(p.policy.clone())),
            ])
        });
        let sections = self
            .probe_sections
            .iter()
            .map(|(t, b)| (t.clone(), Json::str(b)));
        Json::obj([("selection", selection), ("sections", Json::obj(sections))])
    }
}

/// A string, or `null` when absent.
fn opt_str(v: Option<String>) -> Json {
    Json::opt(v, Json::Str)
}

/// A boolean, or `null` when unknown.
fn opt_bool(v: Option<bool>) -> Json {
    Json::opt(v, Json::Bool)
}

/// The machine: CPU identity, the CPUID and `/proc/cpuinfo` flags, the OS facts.
fn machine_json(m: &Machine) -> Json {
    let c = &m.facts.cpuid;
    let i = &m.facts.cpuinfo;
    let cpuid = Json::obj([
        ("monitor", opt_bool(c.monitor())),
        ("waitpkg", opt_bool(c.waitpkg())),
        ("monitorx", opt_bool(c.monitorx())),
        ("invariant_tsc", opt_bool(c.invariant_tsc())),
        ("hypervisor", opt_bool(c.hypervisor_bit())),
    ]);
    let cpuinfo_flags = super::machine::FLAGS_OF_INTEREST
        .iter()
        .map(|f| (*f, Json::Bool(i.has(f))));
    let umwait_control = Json::opt(m.umwait_control.clone(), |v| {
        Json::obj(v.into_iter().map(|(k, v)| (k, Json::Str(v))))
    });
    Json::obj([
        ("brand", opt_str(c.brand().or_else(|| i.model_name.clone()))),
        ("vendor", opt_str(c.vendor())),
        ("family_model_stepping", family_model_stepping_json(m)),
        ("microcode", opt_str(i.microcode.clone())),
        ("cpuid", cpuid),
        ("cpuinfo_flags", Json::obj(cpuinfo_flags)),
        ("hypervisor_vendor", opt_str(c.hypervisor_vendor())),
        ("kernel", opt_str(m.kernel.clone())),
        ("usable_cpus", Json::Num(m.usable_cpus as f64)),
        ("umwait_control", umwait_control),
        ("dev_mwait", Json::Bool(m.facts.dev_mwait)),
        ("module_loaded", Json::Bool(m.module_loaded)),
    ])
}

/// Family, model and stepping from CPUID, else from `/proc/cpuinfo`; `null` when
/// neither has them.
fn family_model_stepping_json(m: &Machine) -> Json {
    let num = |v: u32| Json::Num(f64::from(v));
    let fms = m
        .facts
        .cpuid
        .family_model_stepping()
        .or(m.facts.cpuinfo.family_model_stepping);
    Json::opt(fms, |(f, mo, st)| {
        Json::obj([
            ("family", num(f)),
            ("model", num(mo)),
            ("stepping", num(st)),
        ])
    })
}

/// A `hw_tiers` selection line, read; `null` when there was none.
fn selection_json(sel: &Option<SuiteSelection>) -> Json {
    Json::opt(sel.as_ref(), |s| {
        Json::obj([
            ("backend", Json::str(&s.backend)),
            ("reason", Json::str(&s.reason)),
            ("demoted", Json::opt(s.demoted.clone(), Json::Str)),
        ])
    })
}

/// The quick benchmark: its targets and `summary.json` as read.
fn bench_json(b: &Bench) -> Json {
    Json::obj([
        (
            "targets",
            Json::Arr(b.targets.iter().map(Json::str).collect()),
        ),
        ("summary", b.summary.clone().unwrap_or(Json::Null)),
        ("summary_error", opt_str(b.summary_error.clone())),
    ])
}

/// One sub-step, its seconds rounded to a tenth.
fn step_json(st: &StepRecord) -> Json {
    Json::obj([
        ("name", Json::str(&st.name)),
        ("command", Json::str(&st.command)),
        ("status", Json::str(&st.status)),
        ("ok", Json::Bool(st.ok)),
        ("secs", Json::Num((st.secs * 10.0).round() / 10.0)),
        ("tail", Json::str(&st.tail)),
    ])
}

/// The report's last section: how to send it.
pub const SEND_FOOTER: &str = "\
## How to send this report

Open an issue in the project's tracker (the `repository` of the workspace's
`Cargo.toml`) titled `hardware report: <CPU brand>`, and attach
`target/mwait-hw-report.md` and `target/mwait-hw-report.json` (or paste the
Markdown). The report holds the CPU's identity, CPUID, the kernel release, the
commit and the timings above; no host name, user name or path outside the
checkout. If the CPUID dump is of a CPU the tests do not cover yet, say so: it
becomes a detection test in `crates/mwait/tests/cpuid/`.
";

#[cfg(test)]
mod tests {
    use super::super::json;
    use super::super::machine::{CpuInfo, Cpuid};
    use super::*;
    use crate::util::project_root;

    fn facts(dump: &str, dev_mwait: bool) -> OfferFacts {
        let path = project_root().join(format!("crates/mwait/tests/cpuid/{dump}.txt"));
        OfferFacts {
            cpuid: Cpuid::parse(&std::fs::read_to_string(path).unwrap()),
            cpuinfo: CpuInfo::parse(
                "cpu family\t: 25\nmodel\t\t: 17\nstepping\t: 1\nflags\t\t: fpu hypervisor\n",
            ),
            dev_mwait,
        }
    }

    fn step(name: &str, ok: bool) -> StepRecord {
        StepRecord {
            name: name.into(),
            command: format!("run {name}"),
            status: if ok {
                "exit 0".into()
            } else {
                "exit 101".into()
            },
            ok,
            secs: 1.25,
            tail: if ok {
                String::new()
            } else {
                "line one\nthread 'x' panicked at the end".into()
            },
        }
    }

    /// The report of a machine that offers no tier (this development VM's kind).
    fn no_tier_report() -> Report {
        let f = facts("amd-epyc-kvm-guest-this-machine", false);
        let tiers = f
            .offers()
            .into_iter()
            .map(|offer| TierResult {
                offer,
                selection: None,
                self_test: None,
                suite: None,
            })
            .collect();
        Report {
            generated_utc: "2026-11-23T04:00:00Z".into(),
            commit: "abc1234".into(),
            total_secs: 95.0,
            machine: Machine {
                facts: f,
                kernel: Some("6.18.44-fc".into()),
                umwait_control: None,
                module_loaded: false,
                usable_cpus: 2,
            },
            tiers,
            insn_probe: Some("mwaitx: executes\numwait: child killed by signal 4".into()),
            steps: vec![step("probe", true), step("quick bench", false)],
            bench: Some(Bench {
                summary: Some(
                    json::parse(
                        r#"{"machine": {"backend": "futex"}, "results": [{"bench": "notify", "impl": "waitcell", "ns": 1.5}]}"#,
                    )
                    .unwrap(),
                ),
                summary_error: None,
                targets: vec!["HOLDS: notify <= 5 ns: 1.50 ns".into()],
            }),
            ..Report::default()
        }
    }

    #[test]
    fn a_machine_without_tiers_says_none_is_usable() {
        let r = no_tier_report();
        assert!(r.usable_tiers().is_empty());
        let md = r.markdown();
        assert!(md.contains("No hardware tier is usable on this machine: it offers none"));
        assert!(
            md.contains("| umwait | no | CPUID.(7,0):ECX[5] WAITPKG = 0 | not run | not run |"),
            "{md}"
        );
        assert!(md.contains("| mwaitx | no | CPUID.8000_0001h:ECX[29] MONITORX = 0 |"));
        assert!(md.contains("`KVMKVMKVM` (CPUID 0x4000_0000)"));
        assert!(md.contains("family 0x17, model 0x1, stepping 2"));
        assert!(md.contains("MONITOR 0, WAITPKG 0, MONITORX 0"));
        assert!(md.contains("| umwait_control | absent"));
        assert!(md.contains("| microcode | not readable |"));
        assert!(md.contains("Its backend: futex."));
        assert!(md.contains("| notify | waitcell | ns 1.5 |"));
        assert!(md.contains("- HOLDS: notify <= 5 ns"));
        assert!(md.contains("```\nmwaitx: executes\numwait: child killed by signal 4\n```"));
        assert!(md.ends_with(SEND_FOOTER) || md.ends_with(&format!("{SEND_FOOTER}\n")));
    }

    #[test]
    fn a_failed_step_is_recorded_with_status_and_last_lines() {
        let md = no_tier_report().markdown();
        assert!(md.contains("1 sub-step(s) failed: quick bench"), "{md}");
        assert!(
            md.contains("| quick bench | exit 101 | 1.2 |")
                || md.contains("| quick bench | exit 101 | 1.3 |")
        );
        assert!(md.contains("### Failed: quick bench (exit 101)"));
        assert!(md.contains("thread 'x' panicked at the end"));
        assert!(!md.contains("### Failed: probe"));
    }

    #[test]
    fn a_tier_is_usable_only_when_kept_and_its_suite_passed() {
        let mut r = no_tier_report();
        r.machine.facts = facts("intel-sapphire-rapids", false);
        let offer = r.machine.facts.offers()[0].clone();
        assert!(offer.offered);
        let passed = SuiteRun {
            env: vec![("MWAIT_BACKEND".into(), "umwait".into())],
            step: 0,
            counts: Some(TestCounts {
                passed: 8,
                failed: 0,
                ignored: 0,
            }),
            failed_tests: vec![],
        };
        r.tiers[0] = TierResult {
            offer: offer.clone(),
            selection: None,
            self_test: Some(SelfTest::Kept),
            suite: Some(passed.clone()),
        };
        assert_eq!(r.usable_tiers(), [Tier::Umwait]);
        assert!(r.markdown().contains("**Usable hardware tiers: umwait**"));

        let demoted = SelfTest::Demoted("(umwait, \"self-test: (b) failed\")".into());
        r.tiers[0].self_test = Some(demoted);
        assert!(r.usable_tiers().is_empty());
        let md = r.markdown();
        assert!(
            md.contains("Offered: umwait; the self-test or the suite rejected each"),
            "{md}"
        );
        assert!(md.contains("- umwait: (umwait, \"self-test: (b) failed\")"));

        r.tiers[0].self_test = Some(SelfTest::Kept);
        r.tiers[0].suite = Some(SuiteRun {
            counts: Some(TestCounts {
                passed: 7,
                failed: 1,
                ignored: 0,
            }),
            failed_tests: vec!["deadline_is_honoured_inside_the_hardware_tier".into()],
            ..passed
        });
        assert!(r.usable_tiers().is_empty());
        assert!(r
            .markdown()
            .contains("7 passed, 1 failed: deadline_is_honoured_inside_the_hardware_tier"));
    }

    #[test]
    fn self_test_reads_the_selection() {
        let sel = |backend: &str, demoted: Option<&str>| SuiteSelection {
            backend: backend.into(),
            reason: "r".into(),
            demoted: demoted.map(str::to_string),
        };
        assert_eq!(
            SelfTest::of("umwait", Some(&sel("umwait", None))),
            SelfTest::Kept
        );
        assert_eq!(
            SelfTest::of("umwait", Some(&sel("futex", Some("d")))),
            SelfTest::Demoted("d".into())
        );
        assert_eq!(
            SelfTest::of("kernel", Some(&sel("futex", None))),
            SelfTest::Other {
                backend: "futex".into(),
                reason: "r".into()
            }
        );
        assert_eq!(SelfTest::of("kernel", None), SelfTest::Unknown);
    }

    #[test]
    fn the_json_report_parses_back_with_the_same_facts() {
        let r = no_tier_report();
        let v = json::parse(&r.json().to_string()).unwrap();
        assert_eq!(v.get("usable_tiers"), Some(&Json::Arr(vec![])));
        let m = v.get("machine").unwrap();
        assert_eq!(m.get("vendor").unwrap().as_str(), Some("AuthenticAMD"));
        assert_eq!(
            m.get("hypervisor_vendor").unwrap().as_str(),
            Some("KVMKVMKVM")
        );
        assert_eq!(m.get("umwait_control"), Some(&Json::Null));
        assert!(v
            .get("insn_probe")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("signal 4"));
        let Some(Json::Arr(tiers)) = v.get("tiers") else {
            panic!("no tiers: {v}")
        };
        assert_eq!(tiers.len(), 3);
        assert_eq!(tiers[1].get("offered"), Some(&Json::Bool(false)));
        let Some(Json::Arr(steps)) = v.get("steps") else {
            panic!("no steps: {v}")
        };
        assert_eq!(steps[1].get("ok"), Some(&Json::Bool(false)));
        assert!(steps[1]
            .get("tail")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("panicked"));
        let summary = v.get("bench").unwrap().get("summary").unwrap();
        assert_eq!(
            summary
                .get("machine")
                .unwrap()
                .get("backend")
                .unwrap()
                .as_str(),
            Some("futex")
        );
    }

    #[test]
    fn table_cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
