//! The process-wide choice of backend: detection → environment → the backend, its
//! hardware tier and the default budgets. The rules that make it are in
//! `select/plan.rs` ([`plan::plan`], [`plan::select`]); this file holds what they
//! take and give, and the process's one choice ([`selection`]). The tests
//! (`select/tests.rs`) plan on recorded CPUID dumps of other CPUs.

pub(crate) mod plan;

use crate::backend::kind::Backend;
use crate::backend::spin::SpinPause;
use crate::backend::{self, HwTier};
use crate::detect::{process_cpus, Capabilities};
use crate::sys::settings::{self, Applied};
use plan::{missing_reason, select, select_leniently};
use std::fmt;
use std::sync::OnceLock;

/// The spin budget on bare metal of a wait that does not adapt (`WaitPolicy::adaptive(false)`
/// with the automatic budget): about one cache-line round trip between sockets plus
/// the partner's reaction time, and what libc++ uses for `atomic::wait`. Adaptive
/// waits (the default) size their spin from this process's measured wake-up latency
/// instead, between 0.5 and 20 µs (5 µs under a hypervisor), and their hand-off spin
/// at two wake-up latencies, at most 100 µs; `mwait::stats()` shows the budgets in
/// force (docs/default-policy.md).
pub const SPIN_BUDGET_NS: u64 = 4_000;
/// The same under a hypervisor: shorter, because the partner's vCPU may be
/// descheduled (lock-holder preemption) and spinning for it only burns our time slice.
pub const SPIN_BUDGET_HYPERVISOR_NS: u64 = 1_500;
/// Default hardware-wait budget before parking: long enough to cover a futex
/// round trip (tens of µs), short enough that a waiter that the scheduler could use
/// elsewhere gives the CPU back soon.
pub const HW_BUDGET_NS: u64 = 50_000;

/// The default budgets of this process, derived from detection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// Spin budget in ns (0: never spin, as on a process with one CPU). A wait that
    /// does not adapt spins this long; an adaptive one (the default) spins when this
    /// is not 0, for a budget sized from the measured wake-up latency.
    pub spin_ns: u64,
    /// Hardware-wait budget in ns.
    pub hw_ns: u64,
}

impl Defaults {
    /// The defaults for a machine with these capabilities: where their count of
    /// usable CPUs is 0 (not read, as in the waits' own copy), those of a process
    /// with more than one ([`Defaults::on_cpus`]).
    pub(crate) fn for_caps(caps: &Capabilities) -> Defaults {
        let spin_ns = if caps.hypervisor {
            SPIN_BUDGET_HYPERVISOR_NS
        } else {
            SPIN_BUDGET_NS
        };
        Defaults {
            spin_ns,
            hw_ns: HW_BUDGET_NS,
        }
        .on_cpus(caps.usable_cpus)
    }

    /// These defaults in a process that may use `cpus` CPUs (0: not known): no
    /// spin on one.
    pub(crate) fn on_cpus(self, cpus: usize) -> Defaults {
        Defaults {
            // Spinning on the only CPU we have delays the very thread we wait for.
            spin_ns: if cpus == 1 { 0 } else { self.spin_ns },
            ..self
        }
    }
}

/// The environment's say in the choice: `MWAIT_BACKEND`, `MWAIT_DISABLE`,
/// `MWAIT_UNSAFE_FORCE`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EnvConfig {
    /// `MWAIT_BACKEND`: `auto` (or unset) or a backend name.
    pub backend: Option<String>,
    /// `MWAIT_DISABLE`: a comma-separated list of backend names, or `hw`/`all` for
    /// every hardware backend: the kill switch.
    pub disable: Option<String>,
    /// `MWAIT_UNSAFE_FORCE=1`: a *test-only* override that lets `MWAIT_BACKEND` force a
    /// hardware backend that CPUID does not offer. Executing an instruction the CPU
    /// lacks raises SIGILL; use it only where the instruction is known to execute.
    /// [`select`] honours it only when the process's environment has
    /// `MWAIT_UNSAFE_FORCE=1` as well (else it only plans).
    pub unsafe_force: bool,
    /// Whether `backend` came from [`Settings::backend`](crate::Settings::backend),
    /// not from `MWAIT_BACKEND`.
    pub backend_from_code: bool,
}

impl EnvConfig {
    /// Reads the variables of this process.
    pub(crate) fn from_env() -> EnvConfig {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        EnvConfig {
            backend: var("MWAIT_BACKEND"),
            disable: var("MWAIT_DISABLE"),
            unsafe_force: var("MWAIT_UNSAFE_FORCE").is_some_and(|v| v.trim() == "1"),
            backend_from_code: false,
        }
    }

    /// The variables of this process, and what code applied: its backend where
    /// `MWAIT_BACKEND` is unset (the operator's word comes first), its disabled
    /// backends beside `MWAIT_DISABLE`'s.
    pub(crate) fn for_process(code: &Applied) -> EnvConfig {
        let mut env = EnvConfig::from_env();
        if let (None, Some(b)) = (&env.backend, code.backend) {
            env.backend = Some(b.to_string());
            env.backend_from_code = true;
        }
        if !code.disable.is_empty() {
            let mut list: Vec<&str> = env.disable.as_deref().into_iter().collect();
            list.extend(&code.disable);
            env.disable = Some(list.join(","));
        }
        env
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

/// The process's choice: what [`select`] made of the settings, and, where it refused
/// them and `MWAIT_STRICT=1` is not set, the choice the waits use instead.
struct Choice {
    made: Result<Selection, SelectError>,
    instead: Option<Selection>,
}

/// The waits' choice, made without the count of usable CPUs ([`for_waits`]).
static SELECTION: OnceLock<Choice> = OnceLock::new();
/// The same with the count read: what [`try_selection`] and [`selection`] show.
static COUNTED: OnceLock<Choice> = OnceLock::new();

impl Choice {
    /// The choice to use: the one made, or the one used instead.
    fn used(&self) -> &Selection {
        match (&self.made, &self.instead) {
            (Ok(s), _) | (Err(_), Some(s)) => s,
            (Err(e), None) => panic!("mwait: {e} (MWAIT_STRICT=1 makes a bad setting an error)"),
        }
    }
}

/// The waits' choice: [`selection`]'s, but with the defaults of a process with more
/// than one CPU until the count of usable CPUs is read (`detect::process_cpus`),
/// which the choice does not wait for; `WaitPolicy::resolve` turns the automatic
/// spin off once the count turns out to be one.
pub(crate) fn for_waits() -> &'static Selection {
    SELECTION.get_or_init(choose).used()
}

/// The choice with the count of usable CPUs read and applied to its defaults.
fn counted() -> &'static Choice {
    COUNTED.get_or_init(|| {
        let c = SELECTION.get_or_init(choose);
        let cpus = process_cpus();
        Choice {
            made: c
                .made
                .as_ref()
                .map(|s| s.on_cpus(cpus))
                .map_err(Clone::clone),
            instead: c.instead.as_ref().map(|s| s.on_cpus(cpus)),
        }
    })
}

/// Makes the process's choice, reports each setting it left out, and with
/// `MWAIT_LOG=1` writes the choice to stderr.
fn choose() -> Choice {
    let caps = Capabilities::for_waits();
    let env = EnvConfig::for_process(&settings::freeze());
    // Every setting is read with the choice, so that a bad one is reported at the
    // first wait that climbs, whether or not this process ever registers for the
    // barrier (no light notify off x86-64, none before a first park).
    let _ = settings::membarrier_wanted();
    let made = select(caps, &env);
    let instead = match &made {
        Err(_) if !settings::strict() => {
            let (sel, problems) = select_leniently(caps, &env);
            for p in problems {
                settings::warn(&format!(
                    "{p}; waits use {} instead ({}); MWAIT_STRICT=1 makes this an error",
                    sel.backend, sel.reason
                ));
            }
            Some(sel)
        }
        _ => None,
    };
    if settings::log() {
        match instead.as_ref().map_or(made.as_ref(), Ok) {
            Ok(sel) => settings::warn(&sel.on_cpus(process_cpus()).describe()),
            Err(e) => settings::warn(&format!("refused: {e} (MWAIT_STRICT=1)")),
        }
    }
    Choice { made, instead }
}

impl Selection {
    /// This choice with its defaults for a process that may use `cpus` CPUs
    /// ([`Defaults::on_cpus`]).
    fn on_cpus(&self, cpus: usize) -> Selection {
        Selection {
            defaults: self.defaults.on_cpus(cpus),
            ..self.clone()
        }
    }

    /// The one line `MWAIT_LOG=1` writes: the backend, why, the budgets, the kill
    /// switch's backends and the notify mode.
    fn describe(&self) -> String {
        let disabled: Vec<&str> = self.disabled.iter().map(|b| b.name()).collect();
        format!(
            "backend {} ({}); spin budget {} ns{}, hardware budget {} ns; disabled: {}; \
             notify: {}",
            self.backend,
            self.reason,
            self.defaults.spin_ns,
            if self.defaults.spin_ns > 0 {
                " (adaptive waits size theirs from the measured wake-up latency)"
            } else {
                ""
            },
            if self.hw.is_some() {
                self.defaults.hw_ns
            } else {
                0
            },
            if disabled.is_empty() {
                "none".to_string()
            } else {
                disabled.join(",")
            },
            if settings::membarrier_wanted() {
                "membarrier where the kernel offers it"
            } else {
                "fenced (MWAIT_MEMBARRIER=0)"
            }
        )
    }
}

/// The process's backend choice, made once from [`Capabilities::detect`], the
/// environment and the [`Settings`](crate::Settings) applied before it, or the
/// reason the choice they asked for was refused. Where it was refused, the waits use
/// the automatic choice instead ([`selection`]), unless `MWAIT_STRICT=1` is set.
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
    counted().made.as_ref()
}

/// The process's backend choice: the one the waits use.
///
/// A setting this machine cannot honour (an unknown name in `MWAIT_DISABLE`, a
/// `MWAIT_BACKEND` it does not offer) is reported once on stderr, with what is
/// used instead, and left out: the choice is then made as if it were unset.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting asks for something this machine cannot
/// do: for operators who want a wait never to use another mechanism than the one
/// they forced. Call [`try_selection`] at start-up to report that error yourself.
///
/// # Examples
///
/// ```
/// let sel = mwait::selection();
/// assert!(!sel.reason.is_empty());
/// ```
pub fn selection() -> &'static Selection {
    counted().used()
}

/// The hardware tier a [`WaitPolicy::backend`](crate::WaitPolicy::backend) asks for.
#[derive(Copy, Clone, Debug)]
pub(crate) enum ForcedTier {
    /// The backend's tier (`None`: it has none, or its self-test demoted it).
    Built(Option<HwTier>),
    /// This machine does not offer the backend: the waits use the process's choice.
    Unavailable,
}

/// The hardware tier of `b` for a per-call forced backend, built once per backend.
/// One this machine does not offer is reported once on stderr (a panic under
/// `MWAIT_STRICT=1`), and its waits use the process's choice.
pub(crate) fn backend_hw(b: Backend) -> ForcedTier {
    if !b.is_hardware() {
        return ForcedTier::Built(None);
    }
    // The model checker has no hardware: every hardware tier is loom's stand-in, an
    // episode that may end spuriously at any point.
    if let Some(m) = backend::model::Model::new() {
        return ForcedTier::Built(Some(HwTier::Model(m)));
    }
    {
        static CACHE: [OnceLock<Result<HwTier, backend::HwError>>; 4] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let i = match b {
            Backend::Umwait => 0,
            Backend::Mwaitx => 1,
            Backend::Wfe => 3,
            _ => 2,
        };
        let r = CACHE[i].get_or_init(|| {
            let caps = Capabilities::for_waits();
            let env = EnvConfig::from_env();
            let offered = caps.offers(b);
            let tier = if !offered && !env.unsafe_force {
                Err(backend::HwError::Unavailable(format!(
                    "this machine does not offer it ({})",
                    missing_reason(caps, b)
                )))
            } else {
                backend::hw_tier(b, caps, !offered)
            };
            if let Err(e @ backend::HwError::Unavailable(_)) = &tier {
                let problem = format!("WaitPolicy::backend({b}): {e}");
                settings::refuse_or_warn(
                    &format!(
                        "{problem}; these waits use the process's backend ({}) instead",
                        for_waits().backend
                    ),
                    &problem,
                );
            }
            tier
        });
        match r {
            Ok(t) => ForcedTier::Built(Some(*t)),
            // A tier that failed its self-test is a no-op here: these waits skip it.
            Err(backend::HwError::Demoted(_)) => ForcedTier::Built(None),
            Err(_) => ForcedTier::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests;
