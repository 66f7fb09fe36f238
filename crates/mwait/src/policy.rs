//! The tier ladder's knobs ([`WaitPolicy`], [`CState`]) and the process-wide backend
//! choice ([`Selection`]): detection → environment → the backend and its defaults.

use crate::backend::{self, Backend, HwTier};
use crate::detect::Capabilities;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

/// Default spin budget on bare metal: about one cache-line round trip between
/// sockets plus the partner's reaction time, and what libc++ uses for `atomic::wait`.
pub const SPIN_BUDGET_NS: u64 = 4_000;
/// Default spin budget under a hypervisor: shorter, because the partner's vCPU may be
/// descheduled (lock-holder preemption) and spinning for it only burns our time slice.
pub const SPIN_BUDGET_HYPERVISOR_NS: u64 = 1_500;
/// Default hardware-wait budget before parking: long enough to cover a futex
/// round trip (tens of µs), short enough that a waiter that the scheduler could use
/// elsewhere gives the CPU back soon.
pub const HW_BUDGET_NS: u64 = 50_000;

/// The power state a hardware wait asks for. Deeper states save more power and wake
/// later; the default is the shallowest, [`CState::C0_1`].
///
/// | state | UMWAIT/TPAUSE | MWAITX | kernel MWAIT | wake latency |
/// | --- | --- | --- | --- | --- |
/// | `C0_1` | ECX=1 (C0.1) | hint 0xF0 (C0) | hint 0x00 (C1) | lowest |
/// | `C0_2` | ECX=0 (C0.2, if the OS allows it) | hint 0xF0 (C0) | hint 0x00 (C1) | ~0.5 µs more (Intel) |
/// | `C1` | ECX=0 (C0.2) | hint 0x00 (C1) | hint 0x00 (C1) | highest |
///
/// # Examples
///
/// ```
/// use mwait::{CState, WaitPolicy};
/// let p = WaitPolicy::new().cstate(CState::C0_2);
/// assert_eq!(p.get_cstate(), CState::C0_2);
/// assert_eq!(CState::default(), CState::C0_1);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum CState {
    /// C0.1: a light sleep, the fastest wake-up. The default.
    #[default]
    C0_1,
    /// C0.2: a deeper sleep within C0; about 20x fewer spurious wake-ups and a few per
    /// cent less package power than PAUSE on Intel, 0.4–0.6 µs more wake latency.
    C0_2,
    /// C1 (MWAITX and kernel MWAIT): a halt-like state, the slowest wake-up.
    C1,
}

/// Below this wake-latency budget only C0.1 is fast enough.
pub const C0_2_MIN_LATENCY_NS: u64 = 1_000;
/// From this wake-latency budget on, C1 is acceptable: MWAIT C1 exits take about 1–2 µs
/// on current server cores; the margin covers a VM's slower interrupt path.
pub const C1_MIN_LATENCY_NS: u64 = 5_000;

impl CState {
    /// The deepest state whose wake-up fits in `budget`: under 1 µs C0.1, under 5 µs
    /// C0.2 (about 0.5 µs more than C0.1 on Intel), else C1.
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
        let ns = duration_ns(budget);
        if ns < C0_2_MIN_LATENCY_NS {
            CState::C0_1
        } else if ns < C1_MIN_LATENCY_NS {
            CState::C0_2
        } else {
            CState::C1
        }
    }
}

/// A budget that is either the detected default or fixed by the caller.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Budget {
    Auto,
    Fixed(u64),
}

/// How a wait climbs the tier ladder: how long it spins, how long it waits in
/// hardware, whether it then parks in the kernel, and which backend it uses.
///
/// Budgets are in *time*, not iterations (PAUSE costs 10 cycles on some CPUs and 140 on
/// others). [`WaitPolicy::new`] (also `Default`) leaves every knob on *auto*: the
/// values come from detection when a wait starts ([`Selection::defaults`]): no spin at
/// all when the process can use only one CPU, a shorter spin under a hypervisor, and a
/// per-cell adaptive spin that stops spinning on cells where spinning keeps failing.
///
/// A policy can be set per cell ([`WaitCell::with_policy`](crate::WaitCell::with_policy))
/// or per call (`wait_*_with`).
///
/// # Examples
///
/// ```
/// use mwait::WaitPolicy;
/// use std::time::Duration;
/// // Latency-critical: spin up to 20 µs, skip the hardware tier, then park.
/// let p = WaitPolicy::new()
///     .spin(Duration::from_micros(20))
///     .hardware(Duration::ZERO);
/// assert_eq!(p.get_spin(), Some(Duration::from_micros(20)));
/// assert!(p.get_park());
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WaitPolicy {
    spin: Budget,
    hw: Budget,
    park: bool,
    adaptive: bool,
    cstate: CState,
    backend: Option<Backend>,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitPolicy {
    /// Every knob on auto; parks after the budgets; the process's backend.
    pub const fn new() -> WaitPolicy {
        WaitPolicy {
            spin: Budget::Auto,
            hw: Budget::Auto,
            park: true,
            adaptive: true,
            cstate: CState::C0_1,
            backend: None,
        }
    }

    /// Spin for at most `d` before the next tier (`Duration::ZERO`: never spin).
    /// A fixed spin budget turns the adaptive spin off.
    pub const fn spin(mut self, d: Duration) -> WaitPolicy {
        self.spin = Budget::Fixed(duration_ns(d));
        self.adaptive = false;
        self
    }

    /// Wait in hardware (UMWAIT, MWAITX, kernel MWAIT) for at most `d` before parking.
    pub const fn hardware(mut self, d: Duration) -> WaitPolicy {
        self.hw = Budget::Fixed(duration_ns(d));
        self
    }

    /// Whether to park (futex) once the budgets are spent. With `false` the waiter
    /// keeps spinning and yielding until the value changes or the deadline passes:
    /// it then occupies a CPU for the whole wait. Only for callers that own their CPUs.
    pub const fn park(mut self, park: bool) -> WaitPolicy {
        self.park = park;
        self
    }

    /// Whether the spin budget adapts per cell (on by default with an auto budget).
    pub const fn adaptive(mut self, on: bool) -> WaitPolicy {
        self.adaptive = on;
        self
    }

    /// The power state of hardware waits.
    pub const fn cstate(mut self, c: CState) -> WaitPolicy {
        self.cstate = c;
        self
    }

    /// The power state from a wake-latency budget: how much later than the store the
    /// waiter may wake ([`CState::for_wake_latency`]). Without it, the default is
    /// [`CState::C0_1`], the fastest wake-up.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{CState, WaitPolicy};
    /// use std::time::Duration;
    /// let p = WaitPolicy::new().wake_latency(Duration::from_micros(50));
    /// assert_eq!(p.get_cstate(), CState::C1);
    /// ```
    pub const fn wake_latency(self, budget: Duration) -> WaitPolicy {
        self.cstate(CState::for_wake_latency(budget))
    }

    /// Use `backend`'s ladder for these waits instead of the process's choice.
    /// `Backend::Futex` parks at once unless a spin budget is set; `Backend::Spin`
    /// never parks. A hardware backend must be offered here (or forced with the
    /// test-only `MWAIT_UNSAFE_FORCE=1`): a wait with one that is not panics with the
    /// reason. One that its self-test demoted is skipped: those waits spin, then park.
    pub const fn backend(mut self, backend: Backend) -> WaitPolicy {
        self.backend = Some(backend);
        self
    }

    /// The fixed spin budget, or `None` when it is auto.
    pub const fn get_spin(&self) -> Option<Duration> {
        match self.spin {
            Budget::Auto => None,
            Budget::Fixed(ns) => Some(Duration::from_nanos(ns)),
        }
    }

    /// The fixed hardware budget, or `None` when it is auto.
    pub const fn get_hardware(&self) -> Option<Duration> {
        match self.hw {
            Budget::Auto => None,
            Budget::Fixed(ns) => Some(Duration::from_nanos(ns)),
        }
    }

    /// Whether waits park after the budgets.
    pub const fn get_park(&self) -> bool {
        self.park
    }

    /// The power state of hardware waits.
    pub const fn get_cstate(&self) -> CState {
        self.cstate
    }

    /// The backend forced by this policy, if any.
    pub const fn get_backend(&self) -> Option<Backend> {
        self.backend
    }

    /// Whether this policy lets a wait spin before the ladder runs: only with the
    /// adaptive spin on (a fixed budget turns it off: the inline spin is part of the
    /// adaptation), not with a zero spin budget, nor on the futex ladder (which spins
    /// only when asked).
    #[inline(always)]
    pub(crate) const fn allows_quick_spin(&self) -> bool {
        self.is_adaptive() && !matches!(self.backend, Some(Backend::Futex))
    }

    /// Whether waits under this policy adapt their spin: asked for, and with the
    /// automatic budget (a fixed one, zero included, is taken as given).
    #[inline(always)]
    const fn is_adaptive(&self) -> bool {
        self.adaptive && matches!(self.spin, Budget::Auto)
    }

    /// Turns the policy into the numbers one wait uses. The default policy, which
    /// most waits use, resolves the same way for the life of the process: its
    /// result is kept in one small static instead of being rebuilt from the
    /// selection on every wait (a profile of a waiter fed every 200 µs showed the
    /// rebuild as a quarter of the ladder's own user time, mostly cache misses).
    #[inline]
    pub(crate) fn resolve(&self) -> Resolved {
        if *self == WaitPolicy::new() {
            static DEFAULT: OnceLock<Resolved> = OnceLock::new();
            return *DEFAULT.get_or_init(|| self.resolve_uncached());
        }
        self.resolve_uncached()
    }

    fn resolve_uncached(&self) -> Resolved {
        let sel = selection();
        let (backend, hw) = match self.backend {
            None => (sel.backend, sel.hw),
            Some(b) if b == sel.backend => (b, sel.hw),
            Some(b) => (b, backend_hw(b)),
        };
        let d = &sel.defaults;
        let auto_spin = match backend {
            // A forced futex ladder parks at once unless the caller asks for a spin.
            Backend::Futex if self.backend.is_some() => 0,
            _ => d.spin_ns,
        };
        let spin_ns = match self.spin {
            Budget::Auto => auto_spin,
            Budget::Fixed(ns) => ns,
        };
        let hw_ns = match (hw, self.hw) {
            (None, _) => 0,
            (Some(_), Budget::Auto) => d.hw_ns,
            (Some(_), Budget::Fixed(ns)) => ns,
        };
        Resolved {
            spin_ns,
            hw_ns,
            hw,
            spin_pause: sel.spin_pause,
            park: self.park && backend != Backend::Spin,
            adaptive: self.is_adaptive(),
            cstate: self.cstate,
        }
    }
}

const fn duration_ns(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

/// A policy resolved for one wait.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Resolved {
    pub spin_ns: u64,
    pub hw_ns: u64,
    pub hw: Option<HwTier>,
    pub spin_pause: Option<SpinPause>,
    pub park: bool,
    pub adaptive: bool,
    pub cstate: CState,
}

/// The default budgets of this process, derived from detection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// Spin budget in ns (0: never spin).
    pub spin_ns: u64,
    /// Hardware-wait budget in ns.
    pub hw_ns: u64,
}

impl Defaults {
    /// The defaults for a machine with these capabilities.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = mwait::Defaults::for_caps(mwait::Capabilities::detect());
    /// assert!(d.spin_ns <= mwait::SPIN_BUDGET_NS);
    /// ```
    pub fn for_caps(caps: &Capabilities) -> Defaults {
        let spin_ns = if caps.usable_cpus <= 1 {
            // Spinning on the only CPU we have delays the very thread we wait for.
            0
        } else if caps.hypervisor {
            SPIN_BUDGET_HYPERVISOR_NS
        } else {
            SPIN_BUDGET_NS
        };
        Defaults {
            spin_ns,
            hw_ns: HW_BUDGET_NS,
        }
    }
}

/// The environment's say in the choice: `MWAIT_BACKEND`, `MWAIT_DISABLE`,
/// `MWAIT_UNSAFE_FORCE`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvConfig {
    /// `MWAIT_BACKEND`: `auto` (or unset) or a backend name.
    pub backend: Option<String>,
    /// `MWAIT_DISABLE`: a comma-separated list of backend names, or `hw`/`all` for
    /// every hardware backend: the kill switch.
    pub disable: Option<String>,
    /// `MWAIT_UNSAFE_FORCE=1`: a *test-only* override that lets `MWAIT_BACKEND` force a
    /// hardware backend that CPUID does not offer. Executing an instruction the CPU
    /// lacks raises SIGILL; use it only where the instruction is known to execute.
    pub unsafe_force: bool,
}

impl EnvConfig {
    /// Reads the variables of this process.
    ///
    /// # Examples
    ///
    /// ```
    /// let env = mwait::EnvConfig::from_env();
    /// if env.backend.is_none() {
    ///     println!("MWAIT_BACKEND is unset: auto-selection");
    /// }
    /// ```
    pub fn from_env() -> EnvConfig {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        EnvConfig {
            backend: var("MWAIT_BACKEND"),
            disable: var("MWAIT_DISABLE"),
            unsafe_force: var("MWAIT_UNSAFE_FORCE").is_some_and(|v| v.trim() == "1"),
        }
    }
}

/// Why the environment's choice was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectError(String);

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectError {}

/// The process's backend and why it was chosen.
///
/// # Examples
///
/// ```
/// let sel = mwait::selection();
/// println!("backend: {} ({})", sel.backend, sel.reason);
/// assert!(mwait::Capabilities::detect().offers(sel.backend) || sel.unsafe_forced);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Selection {
    /// The chosen backend.
    pub backend: Backend,
    /// Why it was chosen, in a sentence.
    pub reason: String,
    /// Backends the kill switch turned off.
    pub disabled: Vec<Backend>,
    /// Whether `MWAIT_BACKEND` chose it.
    pub forced: bool,
    /// Whether `MWAIT_UNSAFE_FORCE` let it past CPUID.
    pub unsafe_forced: bool,
    /// Hardware backends that were offered but could not be used, with the reason.
    pub rejected: Vec<(Backend, String)>,
    /// A forced hardware backend that failed its self-test, with the reason.
    pub demoted: Option<(Backend, String)>,
    /// The default budgets.
    pub defaults: Defaults,
    pub(crate) hw: Option<HwTier>,
    pub(crate) spin_pause: Option<SpinPause>,
}

fn parse_disable(s: Option<&str>) -> Result<Vec<Backend>, SelectError> {
    let mut out = Vec::new();
    for item in s
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match item.to_ascii_lowercase().as_str() {
            "hw" | "hardware" => out.extend([Backend::Umwait, Backend::Mwaitx, Backend::Kernel]),
            "all" => out.extend([Backend::Umwait, Backend::Mwaitx, Backend::Kernel]),
            _ => out.push(
                item.parse()
                    .map_err(|e| SelectError(format!("MWAIT_DISABLE: {e}")))?,
            ),
        }
    }
    Ok(out)
}

/// Chooses the backend from capabilities and the environment without touching the
/// hardware: no instruction runs, no device is opened. [`select`] then builds the
/// chosen tier; this is the part that tests run on recorded CPUID dumps of other CPUs.
///
/// # Examples
///
/// ```
/// use mwait::{plan, Backend, Capabilities, EnvConfig};
/// let env = EnvConfig { backend: Some("futex".into()), ..EnvConfig::default() };
/// let sel = plan(Capabilities::detect(), &env).unwrap();
/// assert_eq!(sel.backend, Backend::Futex);
/// assert!(sel.forced);
/// ```
pub fn plan(caps: &Capabilities, env: &EnvConfig) -> Result<Selection, SelectError> {
    let disabled = parse_disable(env.disable.as_deref())?;
    let defaults = Defaults::for_caps(caps);
    let forced = match env.backend.as_deref().map(str::trim) {
        None => None,
        Some(s) if s.eq_ignore_ascii_case("auto") => None,
        Some(s) => Some(
            s.parse::<Backend>()
                .map_err(|e| SelectError(format!("MWAIT_BACKEND: {e}")))?,
        ),
    };
    let base = Selection {
        backend: Backend::Spin,
        reason: String::new(),
        disabled: disabled.clone(),
        forced: false,
        unsafe_forced: false,
        rejected: Vec::new(),
        demoted: None,
        defaults,
        hw: None,
        spin_pause: None,
    };
    if let Some(b) = forced {
        if disabled.contains(&b) {
            return Err(SelectError(format!(
                "MWAIT_BACKEND={b} conflicts with MWAIT_DISABLE, which turns {b} off"
            )));
        }
        let offered = caps.offers(b);
        let allowed = offered || (env.unsafe_force && b.is_hardware());
        if !allowed {
            return Err(SelectError(format!(
                "MWAIT_BACKEND={b}: this machine does not offer it ({}); unset \
                 MWAIT_BACKEND, or for tests on a CPU known to execute it set \
                 MWAIT_UNSAFE_FORCE=1",
                missing_reason(caps, b)
            )));
        }
        return Ok(Selection {
            backend: b,
            reason: if offered {
                format!("forced by MWAIT_BACKEND={b}")
            } else {
                format!(
                    "forced by MWAIT_BACKEND={b} past CPUID with MWAIT_UNSAFE_FORCE=1 ({})",
                    missing_reason(caps, b)
                )
            },
            forced: true,
            unsafe_forced: !offered,
            ..base
        });
    }
    let mut rejected = Vec::new();
    for b in Backend::ALL {
        if !caps.offers(b) {
            continue;
        }
        if disabled.contains(&b) {
            rejected.push((b, "turned off by MWAIT_DISABLE".to_string()));
            continue;
        }
        let reason = if b.is_hardware() {
            format!("best offered: {}", offered_reason(b))
        } else if rejected.is_empty() {
            match b {
                Backend::Futex => "no hardware wait is offered (no WAITPKG, no MONITORX, \
                                   no usable /dev/mwait)"
                    .to_string(),
                _ => "no hardware wait, and parking is turned off".to_string(),
            }
        } else {
            let list: Vec<String> = rejected.iter().map(|(b, e)| format!("{b}: {e}")).collect();
            format!("no usable hardware wait ({})", list.join("; "))
        };
        return Ok(Selection {
            backend: b,
            reason,
            rejected,
            ..base
        });
    }
    unreachable!("Backend::Spin is always offered")
}

/// Chooses the backend ([`plan`]) and builds its hardware tier: opens the device,
/// runs the tier's self-test. A tier that cannot be built is skipped (auto) or, when
/// forced, replaced by the best non-hardware ladder, with the reason in
/// [`Selection::demoted`] and [`Selection::reason`].
///
/// # Examples
///
/// ```
/// use mwait::{select, Capabilities, EnvConfig};
/// let sel = select(Capabilities::detect(), &EnvConfig::default()).unwrap();
/// println!("{}: {}", sel.backend, sel.reason);
/// ```
pub fn select(caps: &Capabilities, env: &EnvConfig) -> Result<Selection, SelectError> {
    let mut env = env.clone();
    let mut demoted: Option<(Backend, String)> = None;
    let mut failed: Vec<(Backend, String)> = Vec::new();
    loop {
        let mut sel = plan(caps, &env)?;
        sel.demoted = demoted.clone();
        sel.rejected.splice(0..0, failed.iter().cloned());
        sel.spin_pause = spin_pause_token(caps, &sel);
        if !sel.backend.is_hardware() {
            if let Some((b, why)) = &demoted {
                sel.reason = format!("MWAIT_BACKEND={b} was {why}; using {}", sel.backend);
            }
            return Ok(sel);
        }
        match backend::hw_tier(sel.backend, caps, sel.unsafe_forced) {
            Ok(t) => {
                sel.hw = Some(t);
                return Ok(sel);
            }
            Err(e) => {
                let b = sel.backend;
                if sel.forced {
                    if matches!(e, backend::HwError::Unavailable(_)) {
                        return Err(SelectError(format!(
                            "MWAIT_BACKEND={b}: cannot use it: {e}"
                        )));
                    }
                    demoted = Some((b, e.to_string()));
                    env.backend = None;
                    // A forced tier that failed falls back to the ladders every
                    // machine has, not to another hardware tier.
                    let mut off = env.disable.take().unwrap_or_default();
                    off.push_str(",hw");
                    env.disable = Some(off);
                } else {
                    failed.push((b, e.to_string()));
                }
                let mut off = env.disable.take().unwrap_or_default();
                off.push_str(&format!(",{b}"));
                env.disable = Some(off);
            }
        }
    }
}

/// The WAITPKG token for TPAUSE in the spin tier, where the CPU has WAITPKG (or it is
/// forced) and the kill switch leaves UMWAIT on.
fn spin_pause_token(caps: &Capabilities, sel: &Selection) -> Option<SpinPause> {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        if sel.disabled.contains(&Backend::Umwait) {
            return None;
        }
        let token = crate::arch::x86_64::Waitpkg::new(caps).or_else(|| {
            // SAFETY: only with MWAIT_UNSAFE_FORCE=1 forcing UMWAIT, whose documented
            // contract is that the WAITPKG instructions execute here.
            (sel.unsafe_forced && sel.backend == Backend::Umwait)
                .then(|| unsafe { crate::arch::x86_64::Waitpkg::new_unchecked() })
        });
        if token.is_some() {
            // Resolve the TSC rate now (a calibration takes 2 ms), not in the
            // middle of the first spin.
            let _ = crate::tsc::rate();
        }
        token
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    {
        let _ = (caps, sel);
        None
    }
}

/// The token the spin tier needs for TPAUSE.
#[cfg(all(target_arch = "x86_64", not(loom)))]
pub(crate) type SpinPause = crate::arch::x86_64::Waitpkg;
/// No TPAUSE off x86-64 (or in the loom model).
#[cfg(not(all(target_arch = "x86_64", not(loom))))]
pub(crate) type SpinPause = core::convert::Infallible;

fn missing_reason(caps: &Capabilities, b: Backend) -> String {
    match b {
        Backend::Umwait => "CPUID.7.0:ECX[5] WAITPKG is 0".into(),
        Backend::Mwaitx => "CPUID.8000_0001:ECX[29] MONITORX is 0".into(),
        Backend::Kernel if !caps.monitor_mwait => "CPUID.1:ECX[3] MONITOR is 0".into(),
        Backend::Kernel => "/dev/mwait does not exist (load kmod/mwait.ko)".into(),
        Backend::Futex | Backend::Spin => "always offered".into(),
    }
}

fn offered_reason(b: Backend) -> &'static str {
    match b {
        Backend::Umwait => "CPUID reports WAITPKG (UMONITOR/UMWAIT)",
        Backend::Mwaitx => "CPUID reports MONITORX (MONITORX/MWAITX)",
        Backend::Kernel => "CPUID reports MONITOR/MWAIT and /dev/mwait is loaded",
        Backend::Futex | Backend::Spin => "",
    }
}

static SELECTION: OnceLock<Result<Selection, SelectError>> = OnceLock::new();

/// The process's backend choice, made once from [`Capabilities::detect`] and the
/// environment, or the reason the environment's choice was refused.
///
/// # Examples
///
/// ```
/// match mwait::try_selection() {
///     Ok(sel) => println!("waiting with {}", sel.backend),
///     Err(e) => eprintln!("bad MWAIT_BACKEND: {e}"),
/// }
/// ```
pub fn try_selection() -> Result<&'static Selection, &'static SelectError> {
    SELECTION
        .get_or_init(|| select(Capabilities::detect(), &EnvConfig::from_env()))
        .as_ref()
}

/// The process's backend choice.
///
/// # Panics
///
/// When `MWAIT_BACKEND` or `MWAIT_DISABLE` asks for something this machine cannot do:
/// a wait must not silently use another mechanism than the one its operator forced.
/// Call [`try_selection`] at start-up to report that error yourself.
///
/// # Examples
///
/// ```
/// let sel = mwait::selection();
/// assert!(!sel.reason.is_empty());
/// ```
pub fn selection() -> &'static Selection {
    match try_selection() {
        Ok(s) => s,
        Err(e) => panic!("mwait: {e}"),
    }
}

/// The hardware tier of `b` for a per-call forced backend, built once per backend.
fn backend_hw(b: Backend) -> Option<HwTier> {
    if !b.is_hardware() {
        return None;
    }
    // The model checker has no hardware: every hardware tier is loom's stand-in, an
    // episode that may end spuriously at any point.
    #[cfg(loom)]
    {
        Some(HwTier::Model)
    }
    #[cfg(not(loom))]
    {
        static CACHE: [OnceLock<Result<HwTier, backend::HwError>>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let i = match b {
            Backend::Umwait => 0,
            Backend::Mwaitx => 1,
            _ => 2,
        };
        let r = CACHE[i].get_or_init(|| {
            let caps = Capabilities::detect();
            let env = EnvConfig::from_env();
            let offered = caps.offers(b);
            if !offered && !env.unsafe_force {
                return Err(backend::HwError::Unavailable(format!(
                    "this machine does not offer it ({})",
                    missing_reason(caps, b)
                )));
            }
            backend::hw_tier(b, caps, !offered)
        });
        match r {
            Ok(t) => Some(*t),
            // A tier that failed its self-test is a no-op here: these waits skip it.
            Err(backend::HwError::Demoted(_)) => None,
            Err(e) => panic!("mwait: WaitPolicy::backend({b}): {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_spin_respects_policies_that_do_not_spin() {
        assert!(WaitPolicy::new().allows_quick_spin());
        assert!(!WaitPolicy::new().spin(Duration::ZERO).allows_quick_spin());
        assert!(!WaitPolicy::new()
            .backend(Backend::Futex)
            .allows_quick_spin());
        // A fixed budget turns the adaptation, which decides the inline spin, off.
        assert!(!WaitPolicy::new()
            .spin(Duration::from_micros(3))
            .allows_quick_spin());
        assert!(!WaitPolicy::new().adaptive(false).allows_quick_spin());
    }
}
