//! The TSC rate, for turning nanosecond budgets into the TSC deadlines and counts that
//! UMWAIT/TPAUSE (absolute) and MWAITX (relative) take.
//!
//! Where CPUID leaf 0x15 states the rate (crystal × ratio; most Intel CPUs since
//! Skylake) it is exact; leaf 0x16's base frequency is used next. Otherwise (AMD, most
//! VMs) the rate is calibrated once against `CLOCK_MONOTONIC`: two readings of both
//! clocks [`CALIBRATION_NS`] apart, each TSC reading bracketed by clock reads and the
//! tightest bracket of [`CALIBRATION_TRIES`] kept. The bracket is under 1 µs, so the
//! rate's error is below 1 µs / 2 ms = 0.05 %: a 50 µs budget is off by under 25 ns.
//! The TSC must be invariant (CPUID 0x8000_0007 EDX\[8\]) for a single rate to hold;
//! every CPU with WAITPKG or MONITORX has one.

use crate::sys::clock::now_ns;
use std::sync::OnceLock;

/// Reads the time-stamp counter. Every x86-64 CPU has RDTSC.
#[inline]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU and only reads the counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Time between the two calibration readings.
pub(crate) const CALIBRATION_NS: u64 = 2_000_000;
/// Readings per calibration point; the one with the narrowest clock bracket is kept.
const CALIBRATION_TRIES: usize = 5;

/// TSC ticks per second, and where the number came from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct TscRate {
    pub hz: u64,
    pub calibrated: bool,
}

static RATE: OnceLock<TscRate> = OnceLock::new();

/// The TSC rate of this machine (CPUID or a one-time calibration).
pub(crate) fn rate() -> TscRate {
    *RATE.get_or_init(
        || match super::cpuid::tsc_hz_from_cpuid(&super::cpuid::native_reader()) {
            Some(hz) if hz > 0 => TscRate {
                hz,
                calibrated: false,
            },
            _ => TscRate {
                hz: calibrate(),
                calibrated: true,
            },
        },
    )
}

/// One (monotonic ns, TSC) pair whose TSC reading is bracketed as tightly as possible.
fn paired_reading() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..CALIBRATION_TRIES {
        let a = now_ns();
        let t = rdtsc();
        let b = now_ns();
        if b - a < best.0 {
            best = (b - a, a + (b - a) / 2, t);
        }
    }
    (best.1, best.2)
}

fn calibrate() -> u64 {
    let (n0, t0) = paired_reading();
    std::thread::sleep(std::time::Duration::from_nanos(CALIBRATION_NS));
    let (n1, t1) = paired_reading();
    let dn = (n1 - n0).max(1);
    ((t1.wrapping_sub(t0)) as u128 * 1_000_000_000 / dn as u128) as u64
}

/// `ns` nanoseconds in TSC ticks (saturating).
#[inline]
pub(crate) fn ns_to_ticks(ns: u64) -> u64 {
    let hz = rate().hz;
    u64::try_from(ns as u128 * hz as u128 / 1_000_000_000).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_agrees_with_the_monotonic_clock() {
        let hz = calibrate();
        assert!(hz > 100_000_000, "a TSC slower than 100 MHz: {hz}");
        // Time 20 ms with both clocks: the calibrated rate must predict the TSC
        // delta within 1 % (the bound is loose for noisy shared machines; the
        // calibration's own error is far smaller).
        let (n0, t0) = paired_reading();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (n1, t1) = paired_reading();
        let predicted = (n1 - n0) as f64 * hz as f64 / 1e9;
        let actual = (t1 - t0) as f64;
        assert!(
            (predicted / actual - 1.0).abs() < 0.01,
            "predicted {predicted} ticks, counted {actual}"
        );
    }

    #[test]
    fn conversion_saturates() {
        assert_eq!(ns_to_ticks(0), 0);
        let ms = ns_to_ticks(1_000_000);
        assert!(ms > 0);
        assert!(ns_to_ticks(2_000_000).abs_diff(2 * ms) <= 1);
        assert!(ns_to_ticks(u64::MAX) >= u64::MAX / 20);
    }
}
