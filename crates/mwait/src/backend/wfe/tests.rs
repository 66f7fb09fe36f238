use super::*;
use crate::backend::Backend;
use crate::detect::{Capabilities, Hwcaps, OsFacts, HWCAP2_WFXT, HWCAP_EVTSTRM};
use crate::select::plan::plan;
use crate::select::EnvConfig;
use crate::sys;

fn os() -> OsFacts {
    OsFacts {
        umwait_control: None,
        dev_mwait: false,
        usable_cpus: 4,
    }
}

/// Recorded auxiliary vectors: every combination of the two bits, among others
/// (`HWCAP_FP | HWCAP_ASIMD | HWCAP_CPUID`, as a Neoverse N1 reports, and
/// `HWCAP2`'s low bits).
fn recorded(event_stream: bool, wfxt: bool) -> Capabilities {
    let other = 0b11 | (1 << 11);
    Capabilities::from_hwcaps(
        Hwcaps {
            hwcap: other | if event_stream { HWCAP_EVTSTRM } else { 0 },
            hwcap2: 0b10 | if wfxt { HWCAP2_WFXT } else { 0 },
            midr: Some(0x413f_d0c1),
        },
        os(),
    )
}

#[test]
fn the_tier_is_offered_only_where_a_wait_is_bounded() {
    for (event_stream, wfxt) in [(false, false), (true, false), (false, true), (true, true)] {
        let caps = recorded(event_stream, wfxt);
        assert_eq!((caps.event_stream, caps.wfxt), (event_stream, wfxt));
        let bounded = event_stream || wfxt;
        assert_eq!(caps.wfe_wait_bounded(), bounded, "{caps:?}");
        assert_eq!(
            caps.offers(Backend::Wfe),
            bounded && sys::HAS_ARM_WAITS,
            "{caps:?}"
        );
        let auto = plan(&caps, &EnvConfig::default()).unwrap();
        assert_eq!(auto.backend == Backend::Wfe, bounded && sys::HAS_ARM_WAITS);
    }
}

#[test]
fn without_the_event_stream_and_wfet_the_tier_is_never_offered() {
    let caps = recorded(false, false);
    assert!(!caps.offers(Backend::Wfe));
    assert!(!caps.offered().contains(&Backend::Wfe));
    let why = caps.wfe_missing().unwrap();
    assert!(why.contains("HWCAP_EVTSTRM") && why.contains("HWCAP2_WFXT"));
    assert!(caps.to_string().contains("wfe tier:          not offered"));
}

#[test]
fn forcing_it_without_them_is_refused_naming_the_missing_bits() {
    let env = EnvConfig {
        backend: Some("wfe".into()),
        ..EnvConfig::default()
    };
    let err = plan(&recorded(false, false), &env).unwrap_err().to_string();
    assert!(err.starts_with("MWAIT_BACKEND=wfe"), "{err}");
    assert!(err.contains("HWCAP_EVTSTRM"), "{err}");
    assert!(err.contains("HWCAP2_WFXT"), "{err}");
    let env = EnvConfig {
        backend: Some("wfe".into()),
        ..EnvConfig::default()
    };
    let with_stream = plan(&recorded(true, false), &env);
    assert_eq!(with_stream.is_ok(), sys::HAS_ARM_WAITS, "{with_stream:?}");
}

#[test]
fn the_kill_switch_names_it() {
    let env = EnvConfig {
        disable: Some("hw".into()),
        ..EnvConfig::default()
    };
    let sel = plan(&recorded(true, true), &env).unwrap();
    assert!(sel.disabled.contains(&Backend::Wfe));
    assert_ne!(sel.backend, Backend::Wfe);
    let env = EnvConfig {
        disable: Some("wfe".into()),
        ..EnvConfig::default()
    };
    assert_ne!(
        plan(&recorded(true, true), &env).unwrap().backend,
        Backend::Wfe
    );
    assert_eq!("WFE".parse::<Backend>(), Ok(Backend::Wfe));
}

#[test]
fn the_midr_is_decoded_for_the_report() {
    let text = recorded(true, false).to_string();
    assert!(
        text.contains("MIDR_EL1:          0x413fd0c1 (implementer 0x41 Arm, part 0xd0c"),
        "{text}"
    );
    assert!(text.contains("event stream:      yes"), "{text}");
    assert!(text.contains("WFET:              no"), "{text}");
    // The CPU line names the architecture, and the x86 rows, which a CPU without
    // CPUID could only fill with "no", are left to builds that have the x86 waits.
    assert!(
        text.starts_with(&format!("cpu:               {}\n", std::env::consts::ARCH)),
        "{text}"
    );
    assert_eq!(text.contains("WAITPKG:"), sys::HAS_X86_WAITS, "{text}");
    assert_eq!(text.contains("invariant TSC:"), sys::HAS_X86_WAITS, "{text}");
}

#[test]
fn an_episode_waits_for_the_events_its_deadline_allows() {
    assert_eq!(events_budget(0), EXTRA_EVENTS);
    // A 20 µs wait: no tick of a 50 µs stream is certain in it.
    assert_eq!(events_budget(20_000), EXTRA_EVENTS);
    assert_eq!(events_budget(1_000_000), 20 + EXTRA_EVENTS);
    assert_eq!(
        events_budget(u64::MAX),
        u64::MAX / EVENT_STREAM_MIN_PERIOD_NS + EXTRA_EVENTS
    );
}
