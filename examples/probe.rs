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
//! estimates and budgets (`mwait::stats`).

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
    let caps = Capabilities::detect();
    println!("== capabilities ==\n{caps}\n");
    let sel = match mwait::try_selection() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mwait: the environment's choice was refused: {e}");
            std::process::exit(2);
        }
    };
    print_backend(sel);
    let cpus = caps.usable_cpus;
    let pin = cpus >= 2;
    println!(
        "\n== round trip between two threads ({}; {:?} per row) ==",
        if pin {
            "pinned to CPUs 0 and 1".to_string()
        } else {
            format!("{cpus} usable CPU: not pinned")
        },
        PER_ROW
    );
    print_table(&measure_rows(caps, sel, pin));
    println!(
        "\n== this process's waits, estimates and budgets ==\n{}",
        mwait::stats()
    );
    println!(
        "\nNoise: one run on a shared machine; compare rows with each other, not with \
         other runs. Full suite: cargo xtask bench."
    );
}

/// The backend section: the choice, why, what was skipped and the default policy.
fn print_backend(sel: &Selection) {
    println!("== backend ==");
    println!("chosen:  {}", sel.backend);
    println!("why:     {}", sel.reason);
    for (b, why) in &sel.rejected {
        println!("skipped: {b}: {why}");
    }
    println!(
        "default policy: spin {} ns, hardware {} ns, then park",
        sel.defaults.spin_ns, sel.defaults.hw_ns
    );
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
    for b in [Backend::Umwait, Backend::Mwaitx, Backend::Kernel] {
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

/// The latency table: p50, p99, samples, p50 against the condvar row's, and the
/// share of waits per tier.
fn print_table(rows: &[(String, Row)]) {
    let base = rows
        .iter()
        .find(|r| r.0.starts_with("std"))
        .map(|r| percentile(&r.1 .0, 50.0))
        .unwrap_or(1);
    println!(
        "{:<36} {:>10} {:>10} {:>10} {:>12}  spin / hw / park",
        "mechanism", "p50 ns", "p99 ns", "samples", "p50 vs condvar"
    );
    for (name, (s, tiers)) in rows {
        let p50 = percentile(s, 50.0);
        let tiers = tiers.map_or("n/a".to_string(), |t| {
            let (spin, hw, park) = t.shares();
            format!("{spin:.0} % / {hw:.0} % / {park:.0} %")
        });
        println!(
            "{:<36} {:>10} {:>10} {:>10} {:>11.2}x  {}",
            name,
            p50,
            percentile(s, 99.0),
            s.len(),
            p50 as f64 / base.max(1) as f64,
            tiers
        );
    }
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
