//! The report's picture: round-trip distributions as cumulative curves.

use std::fmt::Write as _;

/// The round-trip distributions as cumulative curves on a log time axis.
pub fn svg(series: &[(String, Vec<u64>)]) -> String {
    const W: f64 = 900.0;
    const H: f64 = 480.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 200.0;
    let lo = 10f64.ln();
    let hi = 1e6f64.ln();
    let x = |ns: f64| LEFT + (ns.max(10.0).ln() - lo) / (hi - lo) * (W - LEFT - RIGHT);
    let y = |q: f64| H - 40.0 - q * (H - 70.0);
    let colours = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf", "#000000", "#aa3377",
    ];
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"20\" font-size=\"14\">Round-trip latency, two CPUs: cumulative distribution (log time)</text>\n");
    for (i, ns) in [10.0, 100.0, 1e3, 1e4, 1e5, 1e6].iter().enumerate() {
        let label = ["10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms"][i];
        let _ = writeln!(s, "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{label}</text>", x(*ns), y(0.0), y(1.0), H - 20.0);
    }
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
        let c = colours[i % colours.len()];
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
    s.push_str("</svg>\n");
    s
}
