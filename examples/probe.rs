//! `cargo run --release --example probe`: what this CPU offers, which backend mwait
//! picked and why, and a round-trip latency table of every tier usable here beside
//! `std::sync::Condvar`, measured side by side in one run.
//!
//! Each row is a two-thread ping-pong on one cell (threads pinned to two CPUs when the
//! process may use two): the timed thread stores an odd value and waits for the next
//! even one, which the partner stores. One sample is one round trip. For the rows of
//! a `WaitCell`, the last column is the share of the timed waits (both threads') that
//! ended spinning, in the hardware tier and parked, from the cell's own counts
//! (`WaitCell::stats`), so that a row where everything parks shows at a glance. The
//! run takes about `ROWS x PER_ROW` (under 30 s in all), and ends with the process's
//! estimates and budgets (`mwait::stats`). With `--markdown` the sections are
//! Markdown, as `cargo xtask hw-report` puts them in its report.

use mwait::{Backend, Capabilities, Selection, WaitCell, WaitPolicy, WaitStats};
use mwait_support::{percentile, pin_to_cpu, sample_for};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// Time spent measuring one row.
const PER_ROW: Duration = Duration::from_millis(1500);
/// Round trips before timing starts (warms caches, adaptive spin, CPU frequency).
const WARMUP_ROUND_TRIPS: u32 = 2_000;
/// The most samples kept per row.
const MAX_SAMPLES: usize = 2_000_000;

fn main() {
    let markdown = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--markdown") => true,
        Some(other) => {
            eprintln!("probe: unknown argument `{other}` (usage: probe [--markdown])");
            std::process::exit(2);
        }
    };
    let caps = Capabilities::detect();
    section(markdown, "capabilities", &caps.to_string());
    let sel = match mwait::try_selection() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mwait: the environment's choice was refused: {e}");
            std::process::exit(2);
        }
    };
    section(markdown, "backend", &backend(sel));
    let cpus = caps.usable_cpus;
    let pin = cpus >= 2;
    let placement = if pin {
        "pinned to CPUs 0 and 1".to_string()
    } else {
        format!("{cpus} usable CPU: not pinned")
    };
    section(
        markdown,
        &format!("round trip between two threads ({placement}; {PER_ROW:?} per row)"),
        &table(&measure_rows(caps, sel, pin)),
    );
    section(
        markdown,
        "this process's waits, estimates and budgets",
        &mwait::stats().to_string(),
    );
    println!(
        "Noise: one run on a shared machine; compare rows with each other, not with \
         other runs. Full suite: cargo xtask bench."
    );
}

/// Prints one section: `== title ==` and its body, or with `--markdown` (which
/// `cargo xtask hw-report` concatenates into its report) a `## Title` heading
/// with the body in a code block.
fn section(markdown: bool, title: &str, body: &str) {
    let body = body.trim_end();
    if markdown {
        let mut chars = title.chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase());
        let title: String = first.into_iter().chain(chars).collect();
        println!("## {title}\n\n```\n{body}\n```\n");
    } else {
        println!("== {title} ==\n{body}\n");
    }
}

/// The backend section: the choice, why, what was skipped and the budgets.
fn backend(sel: &Selection) -> String {
    let mut out = format!("chosen:  {}\nwhy:     {}\n", sel.backend, sel.reason);
    for (b, why) in &sel.rejected {
        out += &format!("skipped: {b}: {why}\n");
    }
    out += &budgets(sel);
    out
}

/// The fixed budgets, which the default policy's spin does not use: it adapts.
fn budgets(sel: &Selection) -> String {
    let spin = match sel.defaults.spin_ns {
        0 => "no spin (one usable CPU)".to_string(),
        ns => format!(
            "spin {ns} ns under `WaitPolicy::adaptive(false)` (the default policy \
             sizes its spin from the measured wake-up latency: the last section)"
        ),
    };
    let hw = if sel.backend.is_hardware() {
        format!("{} for {} ns", sel.backend, sel.defaults.hw_ns)
    } else {
        "no hardware wait".to_string()
    };
    format!("budgets: {spin}; {hw}; then park")
}

/// Measures every row, in table order: the default policy, spin forced, the
/// futex where offered, the selected hardware tier forced, then the condvar.
fn measure_rows(caps: &Capabilities, sel: &Selection, pin: bool) -> Vec<(String, Row)> {
    let mut rows: Vec<(String, Row)> = Vec::new();
    rows.push((
        format!("waitcell (default: {})", sel.backend),
        waitcell_rtt(WaitPolicy::new(), pin),
    ));
    rows.push((
        "waitcell, spin forced".into(),
        waitcell_rtt(WaitPolicy::new().backend(Backend::Spin), pin),
    ));
    if caps.offers(Backend::Futex) {
        rows.push((
            "waitcell, futex forced (no spin)".into(),
            waitcell_rtt(WaitPolicy::new().backend(Backend::Futex), pin),
        ));
    }
    for b in Backend::ALL.into_iter().filter(|b| b.is_hardware()) {
        if sel.backend == b {
            rows.push((
                format!("waitcell, {b} forced (no spin)"),
                waitcell_rtt(WaitPolicy::new().backend(b).spin(Duration::ZERO), pin),
            ));
        }
    }
    rows.push(("std Mutex + Condvar".into(), (condvar_rtt(pin), None)));
    rows
}

/// The latency table: p50, p99, samples, how many times faster than the condvar
/// row the p50 is, and the share of waits per tier.
fn table(rows: &[(String, Row)]) -> String {
    let condvar_p50 = rows
        .iter()
        .find(|r| r.0.starts_with("std"))
        .map_or(1, |r| percentile(&r.1 .0, 50.0));
    let mut out = format!(
        "{:<36} {:>10} {:>10} {:>10} {:>19}  spin / hw / park\n",
        "mechanism", "p50 ns", "p99 ns", "samples", "speed-up vs condvar"
    );
    for (name, (s, tiers)) in rows {
        let p50 = percentile(s, 50.0);
        let tiers = tiers.map_or("n/a".to_string(), |t| {
            let (spin, hw, park) = t.shares();
            format!("{spin:.0} % / {hw:.0} % / {park:.0} %")
        });
        out += &format!(
            "{:<36} {:>10} {:>10} {:>10} {:>18.1}x  {}\n",
            name,
            p50,
            percentile(s, 99.0),
            s.len(),
            condvar_p50 as f64 / p50.max(1) as f64,
            tiers
        );
    }
    out
}

/// One row's round-trip samples and, for a `WaitCell`, what its timed waits did.
type Row = (Vec<u64>, Option<WaitStats>);

/// Ping-pong on a `WaitCell` with `policy` on both sides; returns round-trip samples
/// and what the timed waits did (the cell's counts over the timed part).
fn waitcell_rtt(policy: WaitPolicy, pin: bool) -> Row {
    let cell = Arc::new(WaitCell::new(0));
    let partner = {
        let cell = cell.clone();
        thread::spawn(move || {
            if pin {
                pin_to_cpu(1);
            }
            loop {
                let v = cell.wait_until_with(|v| v % 2 == 1, &policy);
                if v == u32::MAX {
                    return;
                }
                cell.store(v.wrapping_add(1));
            }
        })
    };
    if pin {
        pin_to_cpu(0);
    }
    let mut next = 1u32;
    let mut round_trip = || {
        cell.store(next);
        let want = next + 1;
        cell.wait_until_with(|v| v == want, &policy);
        next = next.wrapping_add(2) % (u32::MAX - 3);
    };
    for _ in 0..WARMUP_ROUND_TRIPS {
        round_trip();
    }
    let before = cell.stats();
    let samples = sample_for(PER_ROW, MAX_SAMPLES, round_trip);
    let tiers = cell.stats().since(&before);
    cell.store(u32::MAX);
    partner.join().unwrap();
    (samples, Some(tiers))
}

/// The same ping-pong on `std::sync::Mutex` + `Condvar`.
fn condvar_rtt(pin: bool) -> Vec<u64> {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let partner = {
        let pair = pair.clone();
        thread::spawn(move || {
            if pin {
                pin_to_cpu(1);
            }
            let (m, cv) = &*pair;
            let mut g = m.lock().unwrap();
            loop {
                g = cv.wait_while(g, |v| *v % 2 == 0).unwrap();
                if *g == u32::MAX {
                    return;
                }
                *g += 1;
                cv.notify_all();
            }
        })
    };
    if pin {
        pin_to_cpu(0);
    }
    let (m, cv) = &*pair;
    let mut next = 1u32;
    let mut round_trip = || {
        let mut g = m.lock().unwrap();
        *g = next;
        cv.notify_all();
        let want = next + 1;
        drop(cv.wait_while(g, |v| *v != want).unwrap());
        next = next.wrapping_add(2) % (u32::MAX - 3);
    };
    for _ in 0..WARMUP_ROUND_TRIPS {
        round_trip();
    }
    let samples = sample_for(PER_ROW, MAX_SAMPLES, round_trip);
    *m.lock().unwrap() = u32::MAX;
    cv.notify_all();
    partner.join().unwrap();
    samples
}
