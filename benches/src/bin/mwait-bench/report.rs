//! The report: the markdown, the JSON rows and the ping-pong series every section
//! appends to, the targets they judge, and the files written at the end.

use crate::judge::{Target, Verdict};
use crate::svg::{self, svg};
use crate::{Ctx, Options};
use std::fmt::Write as _;

/// What the sections append to, in the report's order.
#[derive(Default)]
pub struct Out {
    pub json: Vec<String>,
    pub md: String,
    pub svg_series: Vec<(String, Vec<u64>)>,
    /// The curves of `latency_cpu.svg`.
    pub latency_cpu: Vec<(String, Vec<mwait_benches::tradeoff::Point>)>,
    /// The targets with their verdicts, judged by the sections that measure them.
    pub targets: Vec<Target>,
    /// The same targets as JSON objects for `summary.json`, once judged.
    pub targets_json: Vec<String>,
}

impl Out {
    /// Adds a judged target to the targets section.
    pub fn target(&mut self, target: Target) {
        self.targets.push(target);
    }
}

/// A JSON number, or `null` for a value that is not finite.
pub fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

/// Appends one line to the markdown report.
macro_rules! md {
    ($o:expr) => {
        md!($o, "")
    };
    ($o:expr, $($fmt:tt)*) => {
        writeln!($o.md, $($fmt)*).expect("writing to a String cannot fail")
    };
}
pub(crate) use md;

/// The title, the mode and the machine, put at the top of the report; written
/// last, because asking mwait for the machine and the selection before the
/// measurements would make its process-wide choice from an unpinned thread.
pub fn header(
    o: &mut Out,
    opts: &Options,
    ctx: &Ctx,
    caps: &mwait::Capabilities,
    sel: &mwait::Selection,
) {
    let body = std::mem::take(&mut o.md);
    md!(o, "# mwait benchmark report\n");
    md!(
        o,
        "Mode: {}. Every number below was measured in this one run, side by side; \
         compare ratios within the run, not with other runs. Machine, as mwait detected \
         it in this process at its first wait (a pinned thread's; `usable cpus` is what \
         mwait concluded), read after the measurements; the process may use {} CPUs:\n",
        if opts.quick { "quick" } else { "full" },
        ctx.process_cpus
    );
    md!(
        o,
        "```\n{caps}\nbackend: {} ({})\n```\n",
        sel.backend,
        sel.reason
    );
    o.md.push_str(&body);
}

/// How the interleaved rounds work, once for every scenario that uses them.
pub fn rounds_note(o: &mut Out, rounds: u32) {
    md!(
        o,
        "The latency, waiter-CPU and interference scenarios run in {rounds} interleaved rounds: \
         each round measures every implementation once, in an order rotated from round \
         to round, with 1/{rounds} of its budget. A value below is the median of its \
         rounds, and a target compares two implementations round by round (the median \
         of the per-round ratios), so that a machine whose speed drifts during the run \
         moves both sides of each ratio alike. The ranges show the spread across rounds.\n"
    );
}

/// The targets with their verdicts and the count that hold.
pub fn targets_section(o: &mut Out, only: Option<&str>) {
    let targets = std::mem::take(&mut o.targets);
    o.targets_json = targets.iter().map(Target::json).collect();
    let targets = &targets[..];
    md!(
        o,
        "## Targets (WaitCell default policy)\n\nWarm ones first, then the same targets \
         judged on the cold starts.\n"
    );
    for t in targets {
        let label = match t.verdict {
            Verdict::Holds => "HOLDS:",
            Verdict::Tie => "TIE (past the bound by no more than chance explains):",
            Verdict::Missed => "MISSED:",
            Verdict::NoMeasurement if only.is_some() => "NOT RUN (outside --only):",
            Verdict::NoMeasurement => "MISSED (no measurement: see the failed runs above):",
        };
        md!(o, "- {label} {}", t.text);
    }
    let count = |v: Verdict| targets.iter().filter(|t| t.verdict == v).count();
    let ties = count(Verdict::Tie);
    let not_run = if only.is_some() {
        count(Verdict::NoMeasurement)
    } else {
        0
    };
    md!(
        o,
        "\n{} of {} targets hold in this run{}{}.",
        count(Verdict::Holds),
        targets.len() - not_run,
        if ties > 0 {
            format!(
                "; {ties} more {}, not counted as holding",
                if ties == 1 { "is a tie" } else { "are ties" }
            )
        } else {
            String::new()
        },
        if not_run > 0 {
            format!(" ({not_run} more not run: outside --only)")
        } else {
            String::new()
        }
    );
}

/// Writes `report.md`, `summary.json` (the JSON rows and the judged targets),
/// `pingpong.svg` and `latency_cpu.svg`, and prints the report.
pub fn write_files(
    o: &Out,
    opts: &Options,
    ctx: &Ctx,
    caps: &mwait::Capabilities,
    sel: &mwait::Selection,
) {
    let out_dir = &opts.out_dir;
    std::fs::create_dir_all(out_dir).unwrap();
    std::fs::write(format!("{out_dir}/report.md"), &o.md).unwrap();
    let machine = format!(
        "{{\"cpu\": {:?}, \"hypervisor\": {}, \"usable_cpus\": {}, \"process_cpus\": {}, \"waitpkg\": {}, \"monitorx\": {}, \"monitor_mwait\": {}, \"backend\": \"{}\", \"quick\": {}}}",
        caps.brand, caps.hypervisor, caps.usable_cpus, ctx.process_cpus, caps.waitpkg, caps.monitorx, caps.monitor_mwait, sel.backend, opts.quick
    );
    let json = format!(
        "{{\"machine\": {machine},\n \"results\": [\n  {}\n ],\n \"targets\": [\n  {}\n ]}}\n",
        o.json.join(",\n  "),
        o.targets_json.join(",\n  ")
    );
    std::fs::write(format!("{out_dir}/summary.json"), json).unwrap();
    std::fs::write(format!("{out_dir}/pingpong.svg"), svg(&o.svg_series)).unwrap();
    std::fs::write(
        format!("{out_dir}/latency_cpu.svg"),
        svg::latency_cpu(&o.latency_cpu),
    )
    .unwrap();
    print!("{}", o.md);
    eprintln!("wrote {out_dir}/report.md, summary.json, pingpong.svg, latency_cpu.svg");
}
