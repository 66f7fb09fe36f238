//! The report's records and its Markdown, in the shape of
//! `docs/hardware-results.md`: the verdict, the machine, the probe's own
//! sections, the tiers, the instruction probe, the bench's own report, the
//! sub-steps and the CPUID dump.

use std::fmt::Write as _;

/// Lines of a failed sub-step's output the report keeps (per stream).
pub const TAIL_LINES: usize = 15;

/// Where the report is written, relative to the workspace root.
pub const MD_PATH: &str = "target/mwait-hw-report.md";

/// The `/proc/cpuinfo` flags that bear on the tiers, as the kernel names them:
/// `monitor` (MONITOR/MWAIT), `mwaitx` (AMD's MONITORX), `waitpkg` (UMWAIT),
/// the TSC's, and `hypervisor`.
const FLAGS_OF_INTEREST: [&str; 6] = [
    "monitor",
    "mwaitx",
    "waitpkg",
    "constant_tsc",
    "nonstop_tsc",
    "hypervisor",
];

/// The same on arm64, whose `/proc/cpuinfo` lists them as `Features`: the event
/// stream (`evtstrm`) and WFET (`wfxt`), which the wfe tier needs one of.
const ARM_FLAGS_OF_INTEREST: [&str; 2] = ["evtstrm", "wfxt"];

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
    /// The last lines of its output when it did not exit with 0.
    pub tail: String,
    /// Its exit status answers a question (is the tier selected?): a non-zero
    /// exit is an answer, not a failed sub-step.
    pub answer: bool,
}

/// What the self-test made of a tier asked for with `MWAIT_BACKEND`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SelfTest {
    /// Selected, and the self-test passed.
    Kept,
    /// Offered, and demoted by the self-test.
    Demoted,
    /// Neither: the machine does not offer the tier, or the run failed; the
    /// sub-step `step` says which.
    NotSelected { step: usize },
}

/// One hardware tier's runs.
#[derive(Debug, Clone)]
pub struct TierRun {
    /// The tier, as `MWAIT_BACKEND` names it.
    pub tier: &'static str,
    /// What the selection runs showed.
    pub self_test: SelfTest,
    /// The whole suite with the tier (index of its [`StepRecord`]); `None` when
    /// the tier was not selected.
    pub suite: Option<usize>,
}

/// The OS facts beside the probe's CPU description.
#[derive(Debug, Clone, Default)]
pub struct Os {
    /// `uname -r`.
    pub kernel: Option<String>,
    /// The first processor's `microcode` and `flags` (arm64: `Features`) lines of
    /// `/proc/cpuinfo`.
    pub cpuinfo: (Option<String>, Vec<String>),
    /// The architecture the report ran on (`std::env::consts::ARCH`); it picks the
    /// flags of interest (empty: x86-64's).
    pub arch: &'static str,
    /// `/sys/module/mwait` exists.
    pub module_loaded: bool,
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
    /// The OS facts.
    pub os: Os,
    /// The probe's Markdown sections (`probe --markdown`).
    pub probe: Option<String>,
    /// One per hardware tier; empty when the suite did not build.
    pub tiers: Vec<TierRun>,
    /// The suite with the machine's own choice (index of its [`StepRecord`]).
    pub default_suite: Option<usize>,
    /// The output of `benches/c/insn_probe.c`; `None` when it did not run.
    pub insn_probe: Option<String>,
    /// The quick benchmark's `report.md`: `None` when skipped (`--no-bench`),
    /// `Some(None)` when it wrote none.
    pub bench: Option<Option<String>>,
    /// Every command run, in order.
    pub steps: Vec<StepRecord>,
    /// The CPUID dump as `examples/cpuid_dump.rs` printed it.
    pub cpuid_dump: Option<String>,
}

/// The `microcode` value and the `flags` (on arm64 `Features`) of the first
/// processor of a `/proc/cpuinfo` text.
pub fn first_processor(cpuinfo: &str) -> (Option<String>, Vec<String>) {
    let (mut microcode, mut flags) = (None, Vec::new());
    for (key, value) in cpuinfo
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_once(':'))
    {
        match key.trim() {
            "microcode" => microcode = Some(value.trim().to_string()),
            "flags" | "Features" => flags = value.split_whitespace().map(str::to_string).collect(),
            _ => {}
        }
    }
    (microcode, flags)
}

/// A Markdown table cell: pipes escaped, newlines folded.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `text` with every Markdown heading `levels` deeper, to nest another tool's
/// report under a section of this one.
fn nest_headings(text: &str, levels: usize) -> String {
    let deeper = "#".repeat(levels);
    text.lines()
        .map(|l| {
            if l.starts_with('#') {
                format!("{deeper}{l}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

impl TierRun {
    /// Kept by the self-test, and the whole suite passed with it.
    fn usable(&self, steps: &[StepRecord]) -> bool {
        self.self_test == SelfTest::Kept
            && self.suite.and_then(|i| steps.get(i)).is_some_and(|s| s.ok)
    }
}

impl Report {
    /// The tiers that are usable on this machine.
    pub fn usable_tiers(&self) -> Vec<&'static str> {
        self.tiers
            .iter()
            .filter(|t| t.usable(&self.steps))
            .map(|t| t.tier)
            .collect()
    }

    /// The sub-steps that failed (a selection run that answered no is not one).
    pub fn failed_steps(&self) -> Vec<&StepRecord> {
        self.steps.iter().filter(|s| !s.ok && !s.answer).collect()
    }

    /// The one-sentence verdict at the top of the report.
    pub fn verdict(&self) -> String {
        let usable = self.usable_tiers();
        if !usable.is_empty() {
            return format!(
                "**Usable hardware tiers: {}** (selected, kept by the self-test, suite passed).",
                usable.join(", ")
            );
        }
        let offered: Vec<&str> = self
            .tiers
            .iter()
            .filter(|t| !matches!(t.self_test, SelfTest::NotSelected { .. }))
            .map(|t| t.tier)
            .collect();
        if offered.is_empty() {
            "**No hardware tier is usable on this machine: none was selected** \
             (see the tiers below); mwait waits by spinning and parking."
                .to_string()
        } else {
            format!(
                "**No hardware tier is usable on this machine.** Offered: {}; \
                 the self-test or the suite rejected each (see below).",
                offered.join(", ")
            )
        }
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut w = String::new();
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
        self.machine_md(&mut w);
        self.tiers_md(&mut w);
        block(
            &mut w,
            "Each wait instruction in a child process",
            "`benches/c/insn_probe.c` tries UMWAIT, TPAUSE and MWAITX whatever CPUID says \
             (a SIGILL ends only its child) and times what executes: a real monitor lasts \
             about its timer and wakes on the store; a trapped or emulated one lasts the \
             same whatever the timer.",
            self.insn_probe.as_deref(),
        );
        self.bench_md(&mut w);
        self.steps_md(&mut w);
        block(
            &mut w,
            "CPUID dump",
            "`cargo run --example cpuid_dump`; to become a dump of the detection tests \
             (`crates/mwait/tests/cpuid/<machine>.txt`):",
            self.cpuid_dump.as_deref(),
        );
        w.push_str(SEND_FOOTER);
        w
    }

    /// The OS facts, then the probe's own sections: the CPU as mwait detects it,
    /// the selection, a round trip per tier, the process's estimates.
    fn machine_md(&self, w: &mut String) {
        let (microcode, flags) = &self.os.cpuinfo;
        let interest: &[&str] = if self.os.arch == "aarch64" {
            &ARM_FLAGS_OF_INTEREST
        } else {
            &FLAGS_OF_INTEREST
        };
        let (have, lack): (Vec<&str>, Vec<&str>) =
            interest.iter().partition(|f| flags.iter().any(|g| g == *f));
        let list = |v: Vec<&str>| {
            if v.is_empty() {
                "none".into()
            } else {
                v.join(" ")
            }
        };
        let _ = writeln!(w, "## Machine\n\n| | |\n| --- | --- |");
        let rows = [
            ("kernel (`uname -r`)", self.os.kernel.as_deref()),
            ("microcode", microcode.as_deref()),
        ];
        for (label, value) in rows {
            let _ = writeln!(w, "| {label} | {} |", cell(value.unwrap_or("unknown")));
        }
        let _ = writeln!(
            w,
            "| /proc/cpuinfo flags | listed: {}; not listed: {} |",
            list(have),
            list(lack)
        );
        let loaded = if self.os.module_loaded {
            "loaded"
        } else {
            "not loaded"
        };
        let _ = writeln!(w, "| mwait module | {loaded} |\n");
        let _ = writeln!(
            w,
            "The CPU as mwait detects it, the selection and a round trip per tier follow, \
             as `cargo run --release --example probe -- --markdown` printed them.\n"
        );
        let probe = self.probe.as_deref();
        w.push_str(probe.map_or("The probe printed nothing (see sub-steps).", str::trim_end));
        w.push_str("\n\n");
    }

    fn tiers_md(&self, w: &mut String) {
        let _ = writeln!(
            w,
            "## Per tier\n\nEach tier is asked for with `MWAIT_BACKEND=<tier>`, which mwait \
             refuses where the machine does not offer it (nothing is forced). The \
             `hw_tiers` suite's selection test says whether the tier was selected and kept \
             by the self-test, else whether the self-test demoted it; then the whole suite \
             runs with the tier (with the self-test off if it demoted the tier).\n"
        );
        let _ = writeln!(
            w,
            "| tier | self-test | suite (hw_tiers) |\n| --- | --- | --- |"
        );
        let suite = |i: Option<usize>| {
            i.and_then(|i| self.steps.get(i))
                .map_or("not run".into(), |s| {
                    let verdict = if s.ok { "passed" } else { "failed" };
                    format!("{verdict} ({}) in {:.1} s", s.status, s.secs)
                })
        };
        for t in &self.tiers {
            let self_test = match t.self_test {
                SelfTest::Kept => "passed (tier kept)".to_string(),
                SelfTest::Demoted => "demoted the tier".to_string(),
                SelfTest::NotSelected { step } => format!(
                    "not selected: see \"{}\" under Sub-steps",
                    self.steps.get(step).map_or("", |s| s.name.as_str())
                ),
            };
            let _ = writeln!(
                w,
                "| {} | {} | {} |",
                t.tier,
                cell(&self_test),
                suite(t.suite)
            );
        }
        if self.tiers.is_empty() {
            let _ = writeln!(
                w,
                "| every tier | not run: the suite did not build | not run |"
            );
        }
        let _ = writeln!(
            w,
            "| the machine's own choice (no variables set) | n/a | {} |\n",
            suite(self.default_suite)
        );
    }

    fn bench_md(&self, w: &mut String) {
        let _ = writeln!(w, "## Quick benchmark\n");
        match &self.bench {
            None => w.push_str("Skipped (`--no-bench`).\n\n"),
            Some(None) => w.push_str("It wrote no report (see sub-steps).\n\n"),
            Some(Some(md)) => {
                let _ = writeln!(
                    w,
                    "`cargo xtask bench --quick` (one run on this machine: a shared or virtual \
                     machine's timings are noisy; compare rows with each other). Its \
                     `report.md`:\n"
                );
                w.push_str(&nest_headings(md.trim_end(), 2));
                w.push('\n');
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
        for s in self.steps.iter().filter(|s| !s.ok) {
            let _ = writeln!(
                w,
                "### {}: {} ({})\n\n`{}`\n\n```\n{}\n```\n",
                if s.answer { "Answered no" } else { "Failed" },
                s.name,
                s.status,
                s.command,
                s.tail.trim_end()
            );
        }
    }
}

/// A section whose body is one tool's output in a code block.
fn block(w: &mut String, title: &str, intro: &str, output: Option<&str>) {
    let _ = writeln!(w, "## {title}\n\n{intro}\n");
    match output {
        Some(out) => {
            let _ = writeln!(w, "```\n{}\n```\n", out.trim_end());
        }
        None => {
            let _ = writeln!(w, "Not run (see sub-steps).\n");
        }
    }
}

/// The report's last section: how to send it.
pub const SEND_FOOTER: &str = "\
## How to send this report

Open an issue in the project's tracker titled `hardware report: <CPU brand>`,
and attach
`target/mwait-hw-report.md` (or paste it). The report holds the CPU's identity,
CPUID, the kernel release, the commit and the timings above; no host name, user
name or path outside the checkout. If the CPUID dump is of a CPU the tests do
not cover yet, say so: it becomes a detection test.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, ok: bool) -> StepRecord {
        StepRecord {
            name: name.into(),
            command: format!("run {name}"),
            status: if ok { "exit 0" } else { "exit 101" }.into(),
            ok,
            secs: 1.25,
            tail: if ok {
                String::new()
            } else {
                "line one\nthread 'x' panicked at the end".into()
            },
            answer: false,
        }
    }

    /// The report of a machine that selects no tier:
    /// each tier's selection answered no, the bench failed.
    fn no_tier_report() -> Report {
        let mut steps = vec![step("probe", true), step("hw_tiers, own choice", true)];
        let mut tiers = Vec::new();
        for tier in ["umwait", "mwaitx", "kernel"] {
            for what in ["kept", "demoted"] {
                steps.push(StepRecord {
                    answer: true,
                    ..step(&format!("hw_tiers {tier}: selection, {what}"), false)
                });
            }
            tiers.push(TierRun {
                tier,
                self_test: SelfTest::NotSelected {
                    step: steps.len() - 2,
                },
                suite: None,
            });
        }
        steps.push(step("quick benchmark", false));
        Report {
            generated_utc: "2026-11-23T04:00:00Z".into(),
            commit: "abc1234".into(),
            total_secs: 95.0,
            os: Os {
                kernel: Some("6.18.44-fc".into()),
                cpuinfo: first_processor(
                    "processor\t: 0\nmicrocode\t: 0xa0011d1\nflags\t\t: fpu hypervisor constant_tsc\n\n\
                     processor\t: 1\nflags\t\t: fpu monitor\n",
                ),
                module_loaded: false,
                ..Os::default()
            },
            probe: Some("## Capabilities\n\n```\nWAITPKG: no\n```\n".into()),
            tiers,
            default_suite: Some(1),
            insn_probe: Some("mwaitx: executes\numwait: child killed by signal 4".into()),
            bench: Some(Some(
                "# mwait benchmark report\n\n## Targets\n\n- HOLDS: notify\n".into(),
            )),
            steps,
            ..Report::default()
        }
    }

    #[test]
    fn an_arm64_cpuinfo_lists_the_event_stream_and_wfet() {
        let mut r = no_tier_report();
        r.os.arch = "aarch64";
        r.os.cpuinfo =
            first_processor("processor\t: 0\nFeatures\t: fp asimd evtstrm aes cpuid\n\n");
        let md = r.markdown();
        assert!(
            md.contains("| /proc/cpuinfo flags | listed: evtstrm; not listed: wfxt |"),
            "{md}"
        );
    }

    #[test]
    fn a_machine_without_tiers_says_none_is_usable() {
        let r = no_tier_report();
        assert!(r.usable_tiers().is_empty());
        let md = r.markdown();
        assert!(md.contains("No hardware tier is usable on this machine: none was selected"));
        assert!(
            md.contains("| umwait | not selected: see \"hw_tiers umwait: selection, kept\""),
            "{md}"
        );
        assert!(md.contains("| the machine's own choice (no variables set) | n/a | passed"));
        assert!(md.contains("| kernel (`uname -r`) | 6.18.44-fc |"));
        assert!(md.contains("| microcode | 0xa0011d1 |"));
        // The first processor's flags only.
        assert!(md.contains(
            "listed: constant_tsc hypervisor; not listed: monitor mwaitx waitpkg nonstop_tsc"
        ));
        assert!(md.contains("## Capabilities\n\n```\nWAITPKG: no\n```"));
        assert!(md.contains("```\nmwaitx: executes\numwait: child killed by signal 4\n```"));
        assert!(md.contains("### mwait benchmark report\n\n#### Targets\n\n- HOLDS: notify\n"));
        assert!(md.ends_with(SEND_FOOTER));
    }

    #[test]
    fn a_failed_step_is_recorded_with_status_and_last_lines() {
        let md = no_tier_report().markdown();
        // A selection that answered no is not a failure.
        assert!(md.contains("1 sub-step(s) failed: quick bench"), "{md}");
        assert!(md.contains("| quick benchmark | exit 101 | 1.2 |"));
        assert!(md.contains("### Failed: quick benchmark (exit 101)"));
        assert!(md.contains("### Answered no: hw_tiers kernel: selection, demoted (exit 101)"));
        assert!(md.contains("thread 'x' panicked at the end"));
        assert!(!md.contains("### Failed: probe"));
    }

    #[test]
    fn a_tier_is_usable_only_when_kept_and_its_suite_passed() {
        let mut r = no_tier_report();
        r.steps.push(step("hw_tiers umwait: suite", true));
        r.tiers[0].self_test = SelfTest::Kept;
        r.tiers[0].suite = Some(r.steps.len() - 1);
        assert_eq!(r.usable_tiers(), ["umwait"]);
        assert!(r.markdown().contains("**Usable hardware tiers: umwait**"));
        assert!(r
            .markdown()
            .contains("| umwait | passed (tier kept) | passed (exit 0) in 1.2 s |"));

        r.tiers[0].self_test = SelfTest::Demoted;
        assert!(r.usable_tiers().is_empty());
        let md = r.markdown();
        assert!(
            md.contains("Offered: umwait; the self-test or the suite rejected each"),
            "{md}"
        );

        r.tiers[0].self_test = SelfTest::Kept;
        let suite = r.steps.last_mut().unwrap();
        (suite.ok, suite.status) = (false, "exit 101".into());
        assert!(r.usable_tiers().is_empty());
        assert!(r
            .markdown()
            .contains("| umwait | passed (tier kept) | failed (exit 101) in 1.2 s |"));
    }

    #[test]
    fn a_skipped_bench_and_a_missing_probe_say_so() {
        let mut r = no_tier_report();
        r.bench = None;
        r.probe = None;
        r.tiers.clear();
        let md = r.markdown();
        assert!(md.contains("## Quick benchmark\n\nSkipped (`--no-bench`)."));
        assert!(md.contains("The probe printed nothing (see sub-steps)."));
        assert!(md.contains("| every tier | not run: the suite did not build | not run |"));
    }

    #[test]
    fn nested_headings_go_deeper_and_nothing_else_changes() {
        assert_eq!(
            nest_headings("# a\ntext # not\n## b", 2),
            "### a\ntext # not\n#### b\n"
        );
    }

    #[test]
    fn table_cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
