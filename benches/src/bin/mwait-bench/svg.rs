//! The report's pictures: round-trip distributions as cumulative curves
//! (`pingpong.svg`), and wake-up latency against the waiter's CPU share
//! (`latency_cpu.svg`).

use mwait_benches::tradeoff::Point;
use std::fmt::Write as _;

const W: f64 = 900.0;
const H: f64 = 480.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 200.0;
const COLOURS: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#000000", "#aa3377",
];

/// A log axis from `lo` to `hi` onto `from..to` (either way round).
fn log_axis(lo: f64, hi: f64, from: f64, to: f64) -> impl Fn(f64) -> f64 {
    let (lo, hi) = (lo.ln(), hi.ln());
    move |v: f64| from + (v.max(lo.exp()).min(hi.exp()).ln() - lo) / (hi - lo) * (to - from)
}

/// The picture's frame and title.
fn open(title: &str) -> String {
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"20\" font-size=\"14\">{title}</text>\n")
}

/// Grid lines and labels of the time axis, horizontal (`x`) or vertical (`y`).
fn time_grid(s: &mut String, at: &dyn Fn(f64) -> f64, vertical_lines: bool) {
    let marks = [10.0, 100.0, 1e3, 1e4, 1e5, 1e6];
    let labels = ["10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms"];
    for (ns, label) in marks.iter().zip(labels) {
        let p = at(*ns);
        let _ = if vertical_lines {
            writeln!(s, "<line x1=\"{p:.1}\" y1=\"{:.1}\" x2=\"{p:.1}\" y2=\"30\" stroke=\"#ddd\"/><text x=\"{p:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>", H - 40.0, H - 20.0)
        } else {
            writeln!(s, "<line x1=\"{LEFT}\" y1=\"{p:.1}\" x2=\"{:.1}\" y2=\"{p:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{p:.1}\" text-anchor=\"end\">{label}</text>", W - RIGHT, LEFT - 5.0)
        };
    }
}

/// One curve through `pts` with its name in the legend.
fn curve(s: &mut String, i: usize, name: &str, pts: &[String]) {
    let c = COLOURS[i % COLOURS.len()];
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\" points=\"{}\"/>",
        pts.join(" ")
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{c}\">{name}</text>",
        W - RIGHT + 10.0,
        50.0 + 16.0 * i as f64
    );
}

/// The round-trip distributions as cumulative curves on a log time axis.
pub fn svg(series: &[(String, Vec<u64>)]) -> String {
    let x = log_axis(10.0, 1e6, LEFT, W - RIGHT);
    let y = |q: f64| H - 40.0 - q * (H - 70.0);
    let mut s = open("Round-trip latency, two CPUs: cumulative distribution (log time)");
    time_grid(&mut s, &x, true);
    for q in [0.0, 0.5, 0.99, 1.0] {
        let _ = writeln!(s, "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{0:.1}\" text-anchor=\"end\">p{3}</text>", y(q), W - RIGHT, LEFT - 5.0, (q * 100.0) as u32);
    }
    for (i, (name, samples)) in series.iter().enumerate() {
        let mut v = samples.clone();
        v.sort_unstable();
        if v.is_empty() {
            continue;
        }
        let steps = 200usize;
        let pts: Vec<String> = (0..=steps)
            .map(|k| {
                let q = k as f64 / steps as f64;
                let idx = ((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1);
                format!("{:.1},{:.1}", x(v[idx] as f64), y(q))
            })
            .collect();
        curve(&mut s, i, name, &pts);
    }
    s.push_str("</svg>\n");
    s
}

/// Wake-up p50 (log axis) against the waiter's CPU share (log axis), one curve per
/// mechanism through its idle gaps, each point marked with its gap.
pub fn latency_cpu(curves: &[(String, Vec<Point>)]) -> String {
    let x = log_axis(1e-4, 1.0, LEFT, W - RIGHT);
    let y = log_axis(10.0, 1e6, H - 40.0, 30.0);
    let mut s =
        open("Wake-up p50 (log) against the waiter's CPU share (log), idle gaps 1 µs to 10 ms");
    time_grid(&mut s, &y, false);
    for (share, label) in [
        (1e-4, "0.01 %"),
        (1e-3, "0.1 %"),
        (1e-2, "1 %"),
        (0.1, "10 %"),
        (1.0, "100 %"),
    ] {
        let _ = writeln!(s, "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"30\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{label}</text>", x(share), H - 40.0, H - 20.0);
    }
    for (i, (name, pts)) in curves.iter().enumerate() {
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.cpu.is_finite() && p.wake_p50.is_finite())
            .map(|p| (x(p.cpu), y(p.wake_p50)))
            .collect();
        let text: Vec<String> = xy.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        curve(&mut s, i, name, &text);
        let c = COLOURS[i % COLOURS.len()];
        for (p, (a, b)) in pts.iter().zip(&xy) {
            let _ = writeln!(s, "<circle cx=\"{a:.1}\" cy=\"{b:.1}\" r=\"3\" fill=\"{c}\"><title>{name}, gap {:?}: CPU {:.4}, wake p50 {:.0} ns</title></circle>", p.gap, p.cpu, p.wake_p50);
        }
    }
    s.push_str("</svg>\n");
    s
}
