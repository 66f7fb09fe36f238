//! Detection and backend choice on recorded CPUID dumps (`tests/cpuid/*.txt`): the pure
//! half of selection ([`mwait::plan`]), so no instruction of another CPU runs here.
#![cfg(target_arch = "x86_64")]

use mwait::raw_cpuid::CpuIdResult;
use mwait::{plan, Backend, Capabilities, EnvConfig, OsFacts, Vendor};
use std::collections::HashMap;

/// The text of dump `tests/cpuid/{name}.txt`, compiled in: the tests then read no
/// file, so that they also run under Miri with its isolation on (`cargo xtask miri`).
fn dump_text(name: &str) -> &'static str {
    macro_rules! dumps {
        ($($n:literal),* $(,)?) => {
            match name {
                $($n => include_str!(concat!("cpuid/", $n, ".txt")),)*
                other => panic!("no CPUID dump named {other}"),
            }
        };
    }
    dumps!(
        "amd-epyc-kvm-guest-this-machine",
        "amd-zen3-epyc",
        "intel-kvm-guest",
        "intel-sapphire-rapids",
        "intel-xeon-firecracker-guest-device",
    )
}

/// A dump: `(leaf, subleaf) -> registers`; leaves not in the dump read as zeros.
fn load(name: &str) -> HashMap<(u32, u32), CpuIdResult> {
    let path = format!("tests/cpuid/{name}.txt");
    let text = dump_text(name);
    let mut map = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<u32> = line
            .split_whitespace()
            .map(|x| u32::from_str_radix(x, 16).unwrap_or_else(|e| panic!("{line}: {e}")))
            .collect();
        assert_eq!(f.len(), 6, "{path}: {line}");
        map.insert(
            (f[0], f[1]),
            CpuIdResult {
                eax: f[2],
                ebx: f[3],
                ecx: f[4],
                edx: f[5],
            },
        );
    }
    map
}

fn caps_from(dump: &HashMap<(u32, u32), CpuIdResult>, os: OsFacts) -> Capabilities {
    let dump = dump.clone();
    let reader = move |leaf: u32, sub: u32| {
        dump.get(&(leaf, sub))
            .or_else(|| dump.get(&(leaf, 0)).filter(|_| leaf != 7))
            .copied()
            .unwrap_or(CpuIdResult {
                eax: 0,
                ebx: 0,
                ecx: 0,
                edx: 0,
            })
    };
    Capabilities::from_cpuid(reader, os)
}

fn os(dev_mwait: bool) -> OsFacts {
    OsFacts {
        umwait_control: None,
        dev_mwait,
        usable_cpus: 8,
    }
}

fn auto(caps: &Capabilities) -> Backend {
    plan(caps, &EnvConfig::default()).unwrap().backend
}

#[test]
fn intel_with_waitpkg_chooses_umwait() {
    let caps = caps_from(&load("intel-sapphire-rapids"), os(false));
    assert_eq!(caps.vendor, Vendor::Intel);
    assert!(caps.waitpkg && caps.monitor_mwait && !caps.monitorx && !caps.hypervisor);
    assert_eq!(caps.monitor_line, Some((64, 64)));
    // Leaf 0x15: 24 MHz crystal x 216 / 2 (leaf 0x16's 2600 MHz base is not used).
    assert_eq!(caps.tsc_hz_cpuid, Some(2_592_000_000));
    assert!(caps.tsc_invariant);
    assert_eq!(auto(&caps), Backend::Umwait);
    let sel = plan(&caps, &EnvConfig::default()).unwrap();
    assert!(sel.reason.contains("WAITPKG"), "{}", sel.reason);
    assert_eq!(sel.defaults.spin_ns, mwait::SPIN_BUDGET_NS);
}

#[test]
fn amd_with_monitorx_chooses_mwaitx() {
    let caps = caps_from(&load("amd-zen3-epyc"), os(false));
    assert_eq!(caps.vendor, Vendor::Amd);
    assert!(caps.monitorx && !caps.waitpkg && caps.tsc_invariant);
    assert_eq!(
        caps.tsc_hz_cpuid, None,
        "AMD states no TSC rate: calibrated"
    );
    assert_eq!(auto(&caps), Backend::Mwaitx);
}

#[test]
fn kvm_guest_without_either_chooses_futex_with_a_short_spin() {
    let caps = caps_from(&load("intel-kvm-guest"), os(false));
    assert!(caps.hypervisor);
    assert_eq!(caps.hypervisor_vendor.as_deref(), Some("KVMKVMKVM"));
    assert!(!caps.waitpkg && !caps.monitorx && !caps.monitor_mwait);
    assert_eq!(
        caps.tsc_hz_cpuid, None,
        "leaves 0x15/0x16 are zero: calibrated"
    );
    let sel = plan(&caps, &EnvConfig::default()).unwrap();
    assert_eq!(sel.backend, Backend::Futex);
    assert_eq!(sel.defaults.spin_ns, mwait::SPIN_BUDGET_HYPERVISOR_NS);
}

#[test]
fn this_machine_dump_chooses_neither() {
    let caps = caps_from(&load("amd-epyc-kvm-guest-this-machine"), os(false));
    assert_eq!(caps.vendor, Vendor::Amd);
    assert!(caps.hypervisor);
    assert!(!caps.waitpkg && !caps.monitorx && !caps.monitor_mwait);
    assert_eq!(auto(&caps), Backend::Futex);
}

#[test]
fn device_machine_dump_hides_every_wait_instruction() {
    // The 16-vCPU Intel Xeon (family 6, model 0xCF) Firecracker guest lent as the
    // device machine, recorded there with examples/cpuid_dump on 2026-11-22. Its
    // host has WAITPKG, but the guest's CPUID clears it (and UMWAIT raises #UD there:
    // docs/hardware-results.md).
    let caps = caps_from(&load("intel-xeon-firecracker-guest-device"), os(false));
    assert_eq!(caps.vendor, Vendor::Intel);
    assert_eq!(caps.family_model_stepping, (6, 0xcf, 2));
    assert!(caps.hypervisor);
    assert!(!caps.waitpkg && !caps.monitorx && !caps.monitor_mwait);
    assert!(caps.tsc_invariant);
    assert_eq!(auto(&caps), Backend::Futex);
}

#[test]
fn intel_without_waitpkg_uses_the_kernel_shim_only_when_loaded() {
    let mut dump = load("intel-sapphire-rapids");
    dump.get_mut(&(7, 0)).unwrap().ecx &= !(1 << 5);
    assert_eq!(auto(&caps_from(&dump, os(false))), Backend::Futex);
    assert_eq!(auto(&caps_from(&dump, os(true))), kernel_shim_or_futex());
}

/// What a machine whose `/dev/mwait` is loaded picks without UMWAIT: the shim on
/// Linux, and the park ladder on every other OS, which has no such module.
fn kernel_shim_or_futex() -> Backend {
    if cfg!(target_os = "linux") {
        Backend::Kernel
    } else {
        Backend::Futex
    }
}

#[test]
fn kill_switch_walks_down_the_ladder() {
    let caps = caps_from(&load("intel-sapphire-rapids"), os(true));
    let with = |disable: &str| {
        plan(
            &caps,
            &EnvConfig {
                disable: Some(disable.into()),
                ..EnvConfig::default()
            },
        )
        .unwrap()
    };
    assert_eq!(with("umwait").backend, kernel_shim_or_futex());
    let sel = with("hw");
    assert_eq!(sel.backend, Backend::Futex);
    assert!(sel.reason.contains("MWAIT_DISABLE"), "{}", sel.reason);
}

#[test]
fn forcing_past_cpuid_needs_the_unsafe_override() {
    let caps = caps_from(&load("amd-epyc-kvm-guest-this-machine"), os(false));
    let forced = |unsafe_force| EnvConfig {
        backend: Some("mwaitx".into()),
        unsafe_force,
        ..EnvConfig::default()
    };
    let err = plan(&caps, &forced(false)).unwrap_err().to_string();
    assert!(err.contains("MONITORX"), "{err}");
    let sel = plan(&caps, &forced(true)).unwrap();
    assert_eq!(sel.backend, Backend::Mwaitx);
    assert!(sel.unsafe_forced);
}

/// Leaf 1 as a reader may return it, each field at its extreme: display family and
/// model are computed without overflow (base family 0xf plus extended family 0xff is
/// 0x10e), and the recorded dumps keep their values.
#[test]
fn display_family_and_model_take_any_leaf_1() {
    let mut dump = load("amd-zen3-epyc");
    let caps = caps_from(&dump, os(false));
    assert_eq!(caps.family_model_stepping.0, 0x19);
    let zen3 = caps.family_model_stepping;
    let leaf1 = dump.get_mut(&(1, 0)).unwrap();
    // Extended family 0xff, extended model 0xf, base family 0xf, base model 0xf.
    leaf1.eax = 0x0fff_0fff;
    let caps = caps_from(&dump, os(false));
    assert_eq!(caps.family_model_stepping, (0x10e, 0xff, 0xf));
    assert_ne!(caps.family_model_stepping, zen3);
    let text = caps.to_string();
    assert!(text.contains("family 0x10e"), "{text}");
}
