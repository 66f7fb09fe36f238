//! [`CState`]: the power state a hardware wait asks for, beside the tiers that map it
//! to their instructions' hints.

use crate::sys::clock;
use std::time::Duration;

/// The power state a hardware wait asks for. Deeper states save more power and wake
/// later; the default is the shallowest, [`CState::C0_1`].
///
/// | state | UMWAIT/TPAUSE | MWAITX | kernel MWAIT | wake latency |
/// | --- | --- | --- | --- | --- |
/// | `C0_1` | ECX=1 (C0.1) | hint 0xF0 (C0) | hint 0x00 (C1) | lowest |
/// | `C0_2` | ECX=0 (C0.2, if the OS allows it) | hint 0xF0 (C0) | hint 0x00 (C1) | 0.4–0.6 µs more (Intel Sapphire Rapids) |
/// | `C1` | ECX=0 (C0.2) | hint 0x00 (C1) | hint 0x00 (C1) | highest |
///
/// The figures are not this crate's measurements (no hardware tier has been timed on
/// real hardware yet: `docs/hardware-results.md`). The C0.2 figures are Google
/// Highway's, measured on Sapphire Rapids against a PAUSE loop and stated beside its
/// UMWAIT wait (`hwy/contrib/thread_pool/spin.cc`); the C1 figure is the exit latency
/// that Linux's `intel_idle` driver assumes for MWAIT C1 and C1E on Sapphire Rapids
/// (`drivers/idle/intel_idle.c`, `spr_cstates`: 1 µs and 2 µs).
///
/// # Examples
///
/// ```
/// use mwait::{CState, WaitPolicy};
/// let p = WaitPolicy::new().cstate(CState::C0_2);
/// assert_eq!(p.target_cstate(), CState::C0_2);
/// assert_eq!(CState::default(), CState::C0_1);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum CState {
    /// C0.1: a light sleep, the fastest wake-up. The default.
    #[default]
    C0_1,
    /// C0.2: a deeper sleep within C0; on Sapphire Rapids about 20x fewer spurious
    /// wake-ups and 4 % less package power than PAUSE, 0.4–0.6 µs more wake latency
    /// (Google Highway's figures, see above).
    C0_2,
    /// C1 (MWAITX and kernel MWAIT): a halt-like state, the slowest wake-up.
    C1,
}

/// Below this wake-latency budget only C0.1 is fast enough.
pub const C0_2_MIN_LATENCY_NS: u64 = 1_000;
/// From this wake-latency budget on, C1 is acceptable: Linux's `intel_idle` assumes
/// 1–2 µs for an MWAIT C1 or C1E exit on Sapphire Rapids (see [`CState`]); the margin
/// covers a VM's slower interrupt path.
pub const C1_MIN_LATENCY_NS: u64 = 5_000;

impl CState {
    /// The deepest state whose wake-up fits in `budget`: under 1 µs C0.1, under 5 µs
    /// C0.2 (0.4–0.6 µs more than C0.1 on Sapphire Rapids), else C1.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::CState;
    /// use std::time::Duration;
    /// assert_eq!(CState::for_wake_latency(Duration::from_nanos(300)), CState::C0_1);
    /// assert_eq!(CState::for_wake_latency(Duration::from_micros(2)), CState::C0_2);
    /// assert_eq!(CState::for_wake_latency(Duration::from_millis(1)), CState::C1);
    /// ```
    pub const fn for_wake_latency(budget: Duration) -> CState {
        let ns = clock::duration_ns(budget);
        if ns < C0_2_MIN_LATENCY_NS {
            CState::C0_1
        } else if ns < C1_MIN_LATENCY_NS {
            CState::C0_2
        } else {
            CState::C1
        }
    }
}
