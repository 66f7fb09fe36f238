//! Reading the output of the report's sub-steps: the probe's sections, the
//! `hw_tiers` suite's selection line and test counts, and the bench report's
//! targets. Every reader is lenient: what it cannot find is `None` or empty, and
//! the report then shows the raw output instead.

/// The probe's `== title ==` sections, in order, each with its body (trimmed).
pub fn probe_sections(out: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        if let Some(title) = t
            .strip_prefix("== ")
            .and_then(|r| r.strip_suffix(" =="))
            .filter(|_| t.len() > 6)
        {
            sections.push((title.to_string(), String::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (_, body) in &mut sections {
        *body = body.trim_matches('\n').to_string();
    }
    sections
}

/// The backend choice as the probe prints it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeSelection {
    /// `chosen:` (the backend).
    pub chosen: Option<String>,
    /// `why:`.
    pub why: Option<String>,
    /// `skipped:` lines: `backend: reason`.
    pub skipped: Vec<String>,
    /// `default policy:`.
    pub policy: Option<String>,
}

/// Reads the probe's `backend` section.
pub fn probe_selection(body: &str) -> ProbeSelection {
    let mut s = ProbeSelection::default();
    for line in body.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k.trim() {
            "chosen" => s.chosen = Some(v),
            "why" => s.why = Some(v),
            "skipped" => s.skipped.push(v),
            "default policy" => s.policy = Some(v),
            _ => {}
        }
    }
    s
}

/// The selection as `hw_tiers`' `selection_is_what_the_runner_expects` prints it:
/// `backend <name> (<reason>); demoted <Debug of Option<..>>`.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteSelection {
    /// The backend the process selected.
    pub backend: String,
    /// Why.
    pub reason: String,
    /// Why the self-test demoted the tier (the message of
    /// `Some((Backend, "message"))`, which names the failed check), or what was
    /// printed if it is not in that form; `None` when nothing was demoted.
    pub demoted: Option<String>,
}

/// Finds the selection line in a suite run's output. Under `--nocapture` libtest
/// prints `test <name> ... ` before the test's own output, on the same line.
pub fn suite_selection(out: &str) -> Option<SuiteSelection> {
    let line = out.lines().find_map(|l| {
        let rest = &l[l.find("backend ")? + "backend ".len()..];
        rest.contains("; demoted ").then_some(rest)
    })?;
    let (head, demoted) = line.rsplit_once("; demoted ")?;
    let (backend, reason) = match head.split_once(" (") {
        Some((b, r)) => (b, r.strip_suffix(')').unwrap_or(r)),
        None => (head, ""),
    };
    let demoted = demoted.trim();
    Some(SuiteSelection {
        backend: backend.trim().to_string(),
        reason: reason.to_string(),
        demoted: (demoted != "None" && !demoted.is_empty()).then(|| {
            let inner = demoted
                .strip_prefix("Some(")
                .and_then(|d| d.strip_suffix(')'))
                .unwrap_or(demoted);
            demotion_message(inner).unwrap_or(inner).to_string()
        }),
    })
}

/// The message of a printed `(Backend, "message")`. The messages hold no quotes or
/// backslashes, so the Debug form is the text itself between its quotes.
fn demotion_message(pair: &str) -> Option<&str> {
    let (_, quoted) = pair.strip_prefix('(')?.split_once(", \"")?;
    quoted.strip_suffix("\")")
}

/// A libtest run's totals, summed over its `test result:` lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestCounts {
    pub passed: u32,
    pub failed: u32,
    pub ignored: u32,
}

/// Sums the `test result: ok. 7 passed; 0 failed; 0 ignored; ...` lines; `None`
/// when there is none (the binary did not get that far).
pub fn test_counts(out: &str) -> Option<TestCounts> {
    let mut total: Option<TestCounts> = None;
    for line in out.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        let t = total.get_or_insert_with(TestCounts::default);
        for part in rest.split(';') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let Some(n) = words
                .iter()
                .rev()
                .nth(1)
                .and_then(|w| w.parse::<u32>().ok())
            else {
                continue;
            };
            match words.last() {
                Some(&"passed") => t.passed += n,
                Some(&"failed") => t.failed += n,
                Some(&"ignored") => t.ignored += n,
                _ => {}
            }
        }
    }
    total
}

/// The names of the tests a libtest run reports as failed (`test x ... FAILED`).
pub fn failed_tests(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("test ")?
                .strip_suffix(" ... FAILED")
                .map(str::to_string)
        })
        .collect()
}

/// The target lines of the bench's `report.md` (`- HOLDS: ...`, `- MISSED: ...`,
/// `- TIE ...`) and its closing count line, in order.
pub fn bench_targets(report_md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_targets = false;
    for line in report_md.lines() {
        if line.starts_with("## ") {
            in_targets = line.starts_with("## Targets");
            continue;
        }
        let t = line.trim();
        if in_targets && !t.is_empty() {
            out.push(t.trim_start_matches("- ").to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROBE: &str = "== capabilities ==\nvendor AuthenticAMD\nwaitpkg no\n\n\
        == backend ==\nchosen:  futex\nwhy:     no hardware tier: MONITORX not in CPUID\n\
        skipped: umwait: CPUID.7.0:ECX[5] WAITPKG = 0\nskipped: mwaitx: no MONITORX\n\
        default policy: spin 1500 ns, hardware 50000 ns, then park\n\n\
        == round trip between two threads (pinned to CPUs 0 and 1; 1.5s per row) ==\n\
        mechanism   p50 ns\nwaitcell    600\n";

    #[test]
    fn probe_sections_split_on_titles() {
        let s = probe_sections(PROBE);
        let titles: Vec<&str> = s.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            titles,
            [
                "capabilities",
                "backend",
                "round trip between two threads (pinned to CPUs 0 and 1; 1.5s per row)"
            ]
        );
        assert_eq!(s[0].1, "vendor AuthenticAMD\nwaitpkg no");
        assert!(s[2].1.starts_with("mechanism"));
        assert!(probe_sections("no sections\n====\n").is_empty());
    }

    #[test]
    fn probe_selection_is_read() {
        let s = probe_selection(&probe_sections(PROBE)[1].1);
        assert_eq!(s.chosen.as_deref(), Some("futex"));
        assert_eq!(
            s.why.as_deref(),
            Some("no hardware tier: MONITORX not in CPUID")
        );
        assert_eq!(
            s.skipped,
            [
                "umwait: CPUID.7.0:ECX[5] WAITPKG = 0",
                "mwaitx: no MONITORX"
            ]
        );
        assert!(s.policy.unwrap().starts_with("spin 1500 ns"));
    }

    #[test]
    fn suite_selection_with_and_without_a_demotion() {
        // As printed by `cargo xtask hw-test`'s MWAITX run on the trapped EPYC guests.
        let why = "demoted by its self-test: check (b) timer: waits of 20000 ns and 160000 ns \
                   with no store lasted 7261 ns and 7361 ns (medians of 5 and 5): not in \
                   proportion to their timer (the long one must last at least half its timer \
                   and 70000 ns more than the short one)";
        let reason = format!("MWAIT_BACKEND=mwaitx was {why}; using futex");
        let out = format!(
            "running 1 test\ntest selection_is_what_the_runner_expects ... backend futex \
             ({reason}); demoted Some((Mwaitx, \"{why}\"))\ntest x ... ok\n"
        );
        let s = suite_selection(&out).unwrap();
        assert_eq!(s.backend, "futex");
        assert_eq!(s.reason, reason);
        assert_eq!(s.demoted.as_deref(), Some(why));
        let odd = suite_selection("backend futex (r); demoted Some(something else)\n").unwrap();
        assert_eq!(odd.demoted.as_deref(), Some("something else"));
        let kept = suite_selection("backend umwait (forced); demoted None\n").unwrap();
        assert_eq!(kept.backend, "umwait");
        assert_eq!(kept.demoted, None);
        assert_eq!(suite_selection("test x ... ok\n"), None);
        assert_eq!(suite_selection("the backend was not printed\n"), None);
    }

    #[test]
    fn test_counts_sum_every_result_line() {
        let out = "test a ... ok\ntest b ... FAILED\n\
                   test result: FAILED. 6 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1.02s\n\
                   test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 5 filtered out\n";
        assert_eq!(
            test_counts(out),
            Some(TestCounts {
                passed: 9,
                failed: 1,
                ignored: 2
            })
        );
        assert_eq!(failed_tests(out), ["b"]);
        assert_eq!(test_counts("error: could not compile\n"), None);
    }

    #[test]
    fn bench_targets_are_the_targets_section() {
        let md = "# bench\n## Latency\n- not a target\n## Targets (WaitCell default policy)\n\n\
                  - HOLDS: notify <= 5 ns: 1.14 ns\n- MISSED: same_cpu p50 <= 1.2x futex\n\
                  - TIE (past the bound by no more than chance explains): wake\n\n\
                  7 of 8 targets hold in this run.\n";
        assert_eq!(
            bench_targets(md),
            [
                "HOLDS: notify <= 5 ns: 1.14 ns",
                "MISSED: same_cpu p50 <= 1.2x futex",
                "TIE (past the bound by no more than chance explains): wake",
                "7 of 8 targets hold in this run."
            ]
        );
        assert!(bench_targets("# nothing\n").is_empty());
    }
}
