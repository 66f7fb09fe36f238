//! The rules of a choice: from the capabilities and the environment to a backend,
//! its hardware tier and the default budgets. [`plan`] reads nothing else and
//! touches no hardware, so the tests plan on recorded CPUID dumps of other CPUs;
//! [`select`] then builds the chosen tier on this CPU, with what only this process
//! can give: its own environment's word on an unsafe force, and the self-test of a
//! forced tier.

use super::{Defaults, EnvConfig, SelectError, Selection};
use crate::backend;
use crate::backend::kind::Backend;
use crate::detect::Capabilities;

/// The backends with a hardware tier, which `MWAIT_DISABLE=hw` turns off.
const HARDWARE: [Backend; 4] = [
    Backend::Umwait,
    Backend::Mwaitx,
    Backend::Wfe,
    Backend::Kernel,
];

/// `MWAIT_DISABLE`'s backends, in its order.
fn parse_disable(s: Option<&str>) -> Result<Vec<Backend>, SelectError> {
    let mut out = Vec::new();
    for item in s
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match item.to_ascii_lowercase().as_str() {
            "hw" | "hardware" | "all" => out.extend(HARDWARE),
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
pub(crate) fn plan(caps: &Capabilities, env: &EnvConfig) -> Result<Selection, SelectError> {
    plan_without(caps, env, &[])
}

/// [`plan`] with the backends of `off` turned off beside `MWAIT_DISABLE`'s: the
/// tiers that [`select`] could not build.
fn plan_without(
    caps: &Capabilities,
    env: &EnvConfig,
    off: &[Backend],
) -> Result<Selection, SelectError> {
    let mut disabled = parse_disable(env.disable.as_deref())?;
    disabled.extend_from_slice(off);
    let defaults = Defaults::for_caps(caps);
    let forced = parse_backend(env.backend.as_deref())?;
    let base = Selection {
        backend: Backend::Spin,
        reason: String::new(),
        disabled,
        forced: false,
        unsafe_forced: false,
        rejected: Vec::new(),
        demoted: None,
        defaults,
        hw: None,
        spin_pause: None,
    };
    match forced {
        Some(b) => plan_forced(caps, env, b, base),
        None => Ok(plan_auto(caps, base)),
    }
}

/// The backend `MWAIT_BACKEND` names, or `None` for `auto` (or unset).
fn parse_backend(s: Option<&str>) -> Result<Option<Backend>, SelectError> {
    match s.map(str::trim) {
        None => Ok(None),
        Some(s) if s.eq_ignore_ascii_case("auto") => Ok(None),
        Some(s) => s
            .parse::<Backend>()
            .map(Some)
            .map_err(|e| SelectError(format!("MWAIT_BACKEND: {e}"))),
    }
}

/// [`plan`] with `MWAIT_BACKEND=b`: `base` with `b`, or why `b` cannot be had.
fn plan_forced(
    caps: &Capabilities,
    env: &EnvConfig,
    b: Backend,
    base: Selection,
) -> Result<Selection, SelectError> {
    if base.disabled.contains(&b) {
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
    Ok(Selection {
        backend: b,
        reason: if env.backend_from_code {
            format!("forced by Settings::backend({b})")
        } else if offered {
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
    })
}

/// [`plan`] without `MWAIT_BACKEND`: `base` with the best backend offered and not
/// turned off by `MWAIT_DISABLE`, the offered ones turned off in `rejected`.
fn plan_auto(caps: &Capabilities, base: Selection) -> Selection {
    let mut rejected = Vec::new();
    for b in Backend::ALL {
        if !caps.offers(b) {
            continue;
        }
        if base.disabled.contains(&b) {
            rejected.push((b, "turned off by MWAIT_DISABLE".to_string()));
            continue;
        }
        return Selection {
            backend: b,
            reason: auto_reason(b, &rejected),
            rejected,
            ..base
        };
    }
    unreachable!("Backend::Spin is always offered")
}

/// Why [`plan_auto`] chose `b`, the offered backends before it being `rejected`.
fn auto_reason(b: Backend, rejected: &[(Backend, String)]) -> String {
    if b.is_hardware() {
        format!("best offered: {}", offered_reason(b))
    } else if rejected.is_empty() {
        match b {
            Backend::Futex => "no hardware wait is offered (no WAITPKG, no MONITORX, \
                               no usable /dev/mwait, no WFE bounded by the event \
                               stream or WFET)"
                .to_string(),
            _ => "no hardware wait, and parking is turned off".to_string(),
        }
    } else {
        let list: Vec<String> = rejected.iter().map(|(b, e)| format!("{b}: {e}")).collect();
        format!("no usable hardware wait ({})", list.join("; "))
    }
}

/// Chooses the backend ([`plan`]) and builds its hardware tier: opens the device,
/// runs the tier's self-test. A tier that cannot be built is skipped (auto) or, when
/// forced, replaced by the best non-hardware ladder, with the reason in
/// [`Selection::demoted`] and [`Selection::reason`].
///
/// Only this CPU's own capabilities (equal to [`Capabilities::detect`]) build a tier.
/// Capabilities that differ from them (a recorded dump of another CPU, or a copy
/// with a field changed) are only planned: `select` then returns what [`plan`]
/// returns, and no instruction runs, no device is opened, no self-test is made.
/// Executing an instruction on the word of such capabilities could fault on a CPU
/// that lacks it. For the same reason an `env` with [`EnvConfig::unsafe_force`] set
/// is only planned unless this process's own environment has
/// `MWAIT_UNSAFE_FORCE=1`.
pub(crate) fn select(caps: &Capabilities, env: &EnvConfig) -> Result<Selection, SelectError> {
    // A caller's `unsafe_force` counts only when the process's environment, set by
    // its operator, says so too: a struct field set in safe code must not let an
    // instruction past CPUID.
    if !caps.are_this_cpus() || (env.unsafe_force && !EnvConfig::from_env().unsafe_force) {
        return plan(caps, env);
    }
    let mut env = env.clone();
    let mut demoted: Option<(Backend, String)> = None;
    let mut failed: Vec<(Backend, String)> = Vec::new();
    // The tiers that could not be built, turned off for the next plan.
    let mut off: Vec<Backend> = Vec::new();
    loop {
        let mut sel = plan_without(caps, &env, &off)?;
        sel.demoted = demoted.clone();
        sel.rejected.splice(0..0, failed.iter().cloned());
        sel.spin_pause = backend::spin::pause_token(
            caps,
            !sel.disabled.contains(&Backend::Umwait),
            sel.unsafe_forced && sel.backend == Backend::Umwait,
        );
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
                    off.extend(HARDWARE);
                } else {
                    failed.push((b, e.to_string()));
                }
                off.push(b);
            }
        }
    }
}

/// Why this machine does not offer `b`.
pub(crate) fn missing_reason(caps: &Capabilities, b: Backend) -> String {
    match b {
        Backend::Umwait => "CPUID.7.0:ECX[5] WAITPKG is 0".into(),
        Backend::Mwaitx => "CPUID.8000_0001:ECX[29] MONITORX is 0".into(),
        Backend::Kernel if !caps.monitor_mwait => "CPUID.1:ECX[3] MONITOR is 0".into(),
        Backend::Kernel => "/dev/mwait does not exist (load kmod/mwait.ko)".into(),
        Backend::Wfe => caps.wfe_missing().unwrap_or("offered").into(),
        Backend::Futex | Backend::Spin => "always offered".into(),
    }
}

fn offered_reason(b: Backend) -> &'static str {
    match b {
        Backend::Umwait => "CPUID reports WAITPKG (UMONITOR/UMWAIT)",
        Backend::Mwaitx => "CPUID reports MONITORX (MONITORX/MWAITX)",
        Backend::Kernel => "CPUID reports MONITOR/MWAIT and /dev/mwait is loaded",
        Backend::Wfe => "AT_HWCAP reports the event stream or AT_HWCAP2 WFET (LDAXR + WFE)",
        Backend::Futex | Backend::Spin => "",
    }
}

/// [`select`] once the settings it refused are left out, each reported in a line
/// (the variable, its value, why it was refused): the choice the waits use when
/// `MWAIT_STRICT=1` is not set. An unknown name in `MWAIT_DISABLE` is left out of the
/// list, an unknown or unusable `MWAIT_BACKEND` leaves the choice to detection.
pub(super) fn select_leniently(caps: &Capabilities, env: &EnvConfig) -> (Selection, Vec<String>) {
    let mut problems = Vec::new();
    let mut env = env.clone();
    if let Some(list) = env.disable.take() {
        let mut kept = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse_disable(Some(item)) {
                Ok(_) => kept.push(item),
                Err(e) => problems.push(format!(
                    "MWAIT_DISABLE={list}: {}, left out",
                    e.0.trim_start_matches("MWAIT_DISABLE: ")
                )),
            }
        }
        env.disable = (!kept.is_empty()).then(|| kept.join(","));
    }
    if let Err(e) = parse_backend(env.backend.as_deref()) {
        problems.push(format!(
            "MWAIT_BACKEND={}: {}",
            env.backend.take().unwrap_or_default(),
            e.0.trim_start_matches("MWAIT_BACKEND: ")
        ));
    }
    let sel = match select(caps, &env) {
        Ok(sel) => sel,
        Err(e) => {
            problems.push(e.0);
            env.backend = None;
            // Without a forced backend and with known names only, nothing is
            // refused: `plan_auto` always finds a backend (spin at the least).
            select(caps, &env).expect("an automatic choice is never refused")
        }
    };
    (sel, problems)
}
