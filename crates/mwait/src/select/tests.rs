//! Detection and backend choice: on recorded CPUID dumps of other CPUs
//! (`tests/cpuid/*.txt`, compiled in, so that Miri runs these with its isolation
//! on), where only [`plan`] runs, and on capabilities built by hand.

use super::plan::plan;
use super::*;
use crate::detect::OsFacts;

/// Capabilities without CPUID, with `cpus` usable CPUs, under a hypervisor or not.
fn caps_with(cpus: usize, hypervisor: bool) -> Capabilities {
    let mut c = Capabilities::without_cpuid(OsFacts {
        umwait_control: None,
        dev_mwait: false,
        usable_cpus: cpus,
    });
    c.hypervisor = hypervisor;
    c
}

#[test]
fn without_cpuid_no_hardware_wait_is_offered() {
    let caps = Capabilities::without_cpuid(OsFacts::read());
    // The count is read apart, when first needed.
    assert_eq!(caps.usable_cpus, 0);
    assert!(Capabilities::detect().usable_cpus >= 1);
    assert!(caps.offered().iter().all(|b| !b.is_hardware()));
    assert_eq!(caps.offered(), [Backend::Futex, Backend::Spin]);
}

#[test]
fn the_defaults_never_spin_longer_than_on_bare_metal() {
    let d = Defaults::for_caps(Capabilities::detect());
    assert!(d.spin_ns <= SPIN_BUDGET_NS);
    assert_eq!(d.hw_ns, HW_BUDGET_NS);
}

#[test]
fn defaults_spin_less_under_a_hypervisor_and_not_at_all_on_one_cpu() {
    let env = EnvConfig::default();
    let bare = select(&caps_with(8, false), &env).unwrap().defaults;
    let vm = select(&caps_with(8, true), &env).unwrap().defaults;
    let one = select(&caps_with(1, false), &env).unwrap().defaults;
    assert_eq!(bare.spin_ns, SPIN_BUDGET_NS);
    assert_eq!(vm.spin_ns, SPIN_BUDGET_HYPERVISOR_NS);
    assert!(vm.spin_ns < bare.spin_ns);
    assert_eq!(one.spin_ns, 0);
    // Not read yet (0): the defaults of more than one CPU, until the count applies.
    let unread = select(&caps_with(0, true), &env).unwrap().defaults;
    assert_eq!(unread, vm);
    assert_eq!(unread.on_cpus(1).spin_ns, 0);
    assert_eq!(unread.on_cpus(8), vm);
}

#[test]
fn auto_selection_without_hardware_is_futex_and_says_why() {
    let sel = select(&caps_with(2, true), &EnvConfig::default()).unwrap();
    assert_eq!(sel.backend, Backend::Futex);
    assert!(sel.reason.contains("no hardware wait"), "{}", sel.reason);
    assert!(!sel.forced);
}

#[test]
fn env_forcing_a_missing_backend_is_refused_with_the_cpuid_bit() {
    let env = EnvConfig {
        backend: Some("umwait".into()),
        ..EnvConfig::default()
    };
    let err = select(&caps_with(2, false), &env).unwrap_err().to_string();
    assert!(err.contains("WAITPKG"), "{err}");
    assert!(err.contains("MWAIT_UNSAFE_FORCE"), "{err}");
}

#[test]
fn env_errors_name_the_variable() {
    let bad = EnvConfig {
        backend: Some("turbo".into()),
        ..EnvConfig::default()
    };
    let e = select(&caps_with(2, false), &bad).unwrap_err().to_string();
    assert!(e.starts_with("MWAIT_BACKEND"), "{e}");
    let bad = EnvConfig {
        disable: Some("futex,warp".into()),
        ..EnvConfig::default()
    };
    let e = select(&caps_with(2, false), &bad).unwrap_err().to_string();
    assert!(e.starts_with("MWAIT_DISABLE"), "{e}");
    let conflict = EnvConfig {
        backend: Some("futex".into()),
        disable: Some("futex".into()),
        ..EnvConfig::default()
    };
    let e = select(&caps_with(2, false), &conflict)
        .unwrap_err()
        .to_string();
    assert!(e.contains("conflicts"), "{e}");
}

#[test]
fn env_forces_spin_and_futex() {
    for (name, want) in [("spin", Backend::Spin), ("FUTEX", Backend::Futex)] {
        let env = EnvConfig {
            backend: Some(name.into()),
            ..EnvConfig::default()
        };
        let sel = select(&caps_with(2, false), &env).unwrap();
        assert_eq!(sel.backend, want);
        assert!(sel.forced);
        assert!(sel.reason.contains("MWAIT_BACKEND"), "{}", sel.reason);
    }
    // Planning alone says the same on this CPU.
    let env = EnvConfig {
        backend: Some("futex".into()),
        ..EnvConfig::default()
    };
    let sel = plan(Capabilities::detect(), &env).unwrap();
    assert_eq!(sel.backend, Backend::Futex);
    assert!(sel.forced);
}

#[test]
fn the_selection_of_this_cpu_builds_what_it_offers() {
    let sel = select(Capabilities::detect(), &EnvConfig::default()).unwrap();
    assert!(Capabilities::detect().offers(sel.backend));
    assert_eq!(sel.hw.is_some(), sel.backend.is_hardware());
}

/// `select` with capabilities that claim an instruction this CPU lacks plans
/// without executing anything: it returns what `plan` returns. Were it to build
/// the tier and run its self-test, this test process would die of SIGILL
/// (UMONITOR on a CPU without WAITPKG).
/// What the waits read of this CPU and the whole detection are both its own, and
/// offer the same backends.
#[test]
fn this_cpus_two_detections_agree_on_what_the_waits_read() {
    let (waits, whole) = (Capabilities::for_waits(), Capabilities::detect());
    assert!(waits.are_this_cpus() && whole.are_this_cpus());
    assert_eq!(waits.offered(), whole.offered());
    // The waits' copy leaves the count of CPUs unread; applied, it gives the
    // defaults of the whole detection, which are the selection's.
    assert_eq!(waits.usable_cpus, 0);
    assert_eq!(whole.usable_cpus, process_cpus());
    let counted = Defaults::for_caps(waits).on_cpus(whole.usable_cpus);
    assert_eq!(counted, Defaults::for_caps(whole));
    assert_eq!(selection().defaults, counted);
    assert_eq!(for_waits().defaults, Defaults::for_caps(waits));
    assert_eq!(for_waits().backend, selection().backend);
    // The waits look for /dev/mwait only where the kernel tier could use it.
    assert_eq!(waits.dev_mwait, whole.dev_mwait && whole.monitor_mwait);
}

#[test]
fn select_on_foreign_capabilities_only_plans() {
    let mut caps = Capabilities::detect().clone();
    let foreign = if caps.waitpkg { "mwaitx" } else { "umwait" };
    if !caps.waitpkg {
        caps.waitpkg = true;
    } else if !caps.monitorx {
        caps.monitorx = true;
    } else {
        // This CPU has both WAITPKG and MONITORX: nothing foreign to claim.
        return;
    }
    let env = EnvConfig::default();
    let outcome =
        |r: Result<Selection, SelectError>| r.map(|s| (s.backend, s.reason, s.hw.is_some()));
    assert_eq!(outcome(select(&caps, &env)), outcome(plan(&caps, &env)));
    // The same instruction forced past this CPU's own CPUID by a struct field, not
    // by the operator's environment: planned only as well.
    if std::env::var("MWAIT_UNSAFE_FORCE").is_err() {
        let env = EnvConfig {
            backend: Some(foreign.into()),
            unsafe_force: true,
            ..EnvConfig::default()
        };
        let detected = Capabilities::detect();
        assert_eq!(
            outcome(select(detected, &env)),
            outcome(plan(detected, &env))
        );
    }
}

/// The recorded dumps, read as [`Capabilities::detect`] reads this CPU: what the
/// waits read, then the details. The dumps are of x86-64 CPUs: a build for another
/// architecture decodes them alike, and its plan offers none of their tiers.
mod dumps {
    use super::*;
    use crate::detect::Vendor;
    use crate::sys;
    use raw_cpuid::CpuIdResult;
    use std::collections::HashMap;

    /// A CPU that answers only leaf 0 and leaf 1, with WAITPKG nowhere.
    #[test]
    fn two_leaves_are_enough_to_decode_an_intel_cpu() {
        let reader = |leaf: u32, _sub: u32| match leaf {
            0 => CpuIdResult {
                eax: 1,
                ebx: 0x756e_6547,
                ecx: 0x6c65_746e,
                edx: 0x4965_6e69,
            },
            1 => CpuIdResult {
                eax: 0x906ea,
                ebx: 0,
                ecx: 1 << 3,
                edx: 0,
            },
            _ => CpuIdResult {
                eax: 0,
                ebx: 0,
                ecx: 0,
                edx: 0,
            },
        };
        let os = OsFacts {
            umwait_control: None,
            dev_mwait: false,
            usable_cpus: 4,
        };
        let caps = Capabilities::waits_from_cpuid(reader, os).with_details_from(reader);
        assert_eq!(caps.vendor, Vendor::Intel);
        assert!(caps.monitor_mwait && !caps.waitpkg);
        assert_eq!(caps.usable_cpus, 4);
    }

    /// The recorded dumps: their names ([`DUMPS`]) and [`dump_text`].
    macro_rules! dumps {
        ($($n:literal),* $(,)?) => {
            /// The names of the recorded dumps.
            const DUMPS: &[&str] = &[$($n),*];

            /// The text of dump `tests/cpuid/{name}.txt`, compiled in: the tests then
            /// read no file, so that they also run under Miri with its isolation on
            /// (`cargo xtask miri`).
            fn dump_text(name: &str) -> &'static str {
                match name {
                    $($n => include_str!(concat!("../../tests/cpuid/", $n, ".txt")),)*
                    other => panic!("no CPUID dump named {other}"),
                }
            }
        };
    }

    dumps!(
        "amd-epyc-kvm-guest-this-machine",
        "amd-zen3-epyc",
        "intel-kvm-guest",
        "intel-sapphire-rapids",
        "intel-xeon-firecracker-guest-device",
    );

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

    /// A reader that answers from `dump`.
    fn reader_of(dump: &HashMap<(u32, u32), CpuIdResult>) -> impl raw_cpuid::CpuIdReader {
        let dump = dump.clone();
        move |leaf: u32, sub: u32| {
            dump.get(&(leaf, sub))
                .or_else(|| dump.get(&(leaf, 0)).filter(|_| leaf != 7))
                .copied()
                .unwrap_or(CpuIdResult {
                    eax: 0,
                    ebx: 0,
                    ecx: 0,
                    edx: 0,
                })
        }
    }

    fn caps_from(dump: &HashMap<(u32, u32), CpuIdResult>, os: OsFacts) -> Capabilities {
        let reader = reader_of(dump);
        Capabilities::waits_from_cpuid(reader.clone(), os).with_details_from(reader)
    }

    /// The waits read only what [`Capabilities::for_waits`] detects, which leaves the
    /// details out: on every recorded CPU, with and without the kernel shim, it
    /// offers what the whole detection offers, gives the same budgets and the same
    /// plan for every backend forced or turned off, and differs only in the details.
    #[test]
    fn what_the_waits_read_makes_the_choice_the_whole_detection_makes() {
        let envs = std::iter::once(EnvConfig::default())
            .chain(Backend::ALL.into_iter().flat_map(|b| {
                [
                    EnvConfig {
                        backend: Some(b.name().into()),
                        ..EnvConfig::default()
                    },
                    EnvConfig {
                        disable: Some(b.name().into()),
                        ..EnvConfig::default()
                    },
                ]
            }))
            .chain([EnvConfig {
                disable: Some("hw".into()),
                ..EnvConfig::default()
            }]);
        let envs: Vec<EnvConfig> = envs.collect();
        let outcome = |r: Result<Selection, SelectError>| {
            r.map(|s| (s.backend, s.reason, s.defaults, s.disabled))
        };
        for name in DUMPS {
            for dev in [false, true] {
                let dump = load(name);
                let waits = Capabilities::waits_from_cpuid(reader_of(&dump), os(dev));
                let whole = caps_from(&dump, os(dev));
                assert_eq!(waits.offered(), whole.offered(), "{name}");
                assert_eq!(waits.hypervisor, whole.hypervisor, "{name}");
                assert_eq!(Defaults::for_caps(&waits), Defaults::for_caps(&whole));
                for env in &envs {
                    assert_eq!(
                        outcome(plan(&waits, env)),
                        outcome(plan(&whole, env)),
                        "{name}, {env:?}"
                    );
                }
                assert_eq!(waits.brand, "", "{name}: the details are left out");
                assert_eq!(waits.with_details_from(reader_of(&dump)), whole, "{name}");
            }
        }
    }

    /// What the waits detect costs four CPUID instructions, each an exit to the
    /// hypervisor in a guest and all in a process's first wait: leaves 0, 1, 7 and
    /// 0x8000_0001, each once, and not 0x8000_0000 (every 64-bit CPU has
    /// 0x8000_0001).
    #[test]
    fn the_waits_execute_four_cpuid_leaves_each_once() {
        use raw_cpuid::CpuIdReader;
        for name in DUMPS {
            let dump = load(name);
            let inner = reader_of(&dump);
            let asked = std::cell::RefCell::new(Vec::new());
            let counting = |leaf: u32, sub: u32| {
                asked.borrow_mut().push((leaf, sub));
                inner.cpuid2(leaf, sub)
            };
            let waits = Capabilities::waits_from_cpuid(counting, os(false));
            let mut asked = asked.into_inner();
            asked.sort_unstable();
            assert_eq!(asked, [(0, 0), (1, 0), (7, 0), (0x8000_0001, 0)], "{name}");
            assert_eq!(waits, Capabilities::waits_from_cpuid(inner, os(false)));
        }
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
        assert_eq!(auto(&caps), built(Backend::Umwait));
        let sel = plan(&caps, &EnvConfig::default()).unwrap();
        let why = if sys::HAS_X86_WAITS {
            "WAITPKG"
        } else {
            NONE_BUILT
        };
        assert!(sel.reason.contains(why), "{}", sel.reason);
        assert_eq!(sel.defaults.spin_ns, SPIN_BUDGET_NS);
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
        assert_eq!(auto(&caps), built(Backend::Mwaitx));
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
        assert_eq!(sel.defaults.spin_ns, SPIN_BUDGET_HYPERVISOR_NS);
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
        // An Intel Xeon (family 6, model 0xCF) guest whose host has WAITPKG: the
        // guest's CPUID clears it (docs/hardware-results.md).
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
        assert_eq!(auto(&caps_from(&dump, os(true))), built(Backend::Kernel));
    }

    /// The reason of a plan on a build that has none of the dumps' tiers.
    const NONE_BUILT: &str = "no hardware wait is offered";

    /// What a recorded machine that chooses `backend` chooses on this build: the
    /// same where the build has the tier, else the park ladder (the x86 tiers exist
    /// on x86-64 only, the kernel shim's calls on Linux x86-64 only).
    fn built(backend: Backend) -> Backend {
        let has = match backend {
            Backend::Umwait | Backend::Mwaitx => sys::HAS_X86_WAITS,
            Backend::Kernel => sys::HAS_DEV_MWAIT,
            Backend::Wfe => sys::HAS_ARM_WAITS,
            Backend::Spin | Backend::Futex => true,
        };
        if has {
            backend
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
        assert_eq!(with("umwait").backend, built(Backend::Kernel));
        let sel = with("hw");
        assert_eq!(sel.backend, Backend::Futex);
        let why = if sys::HAS_X86_WAITS {
            "MWAIT_DISABLE"
        } else {
            NONE_BUILT
        };
        assert!(sel.reason.contains(why), "{}", sel.reason);
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
}

/// Without `MWAIT_STRICT=1` each refused setting is left out and named in one
/// problem (the variable and its value); the known names of the kill switch stay.
#[test]
fn a_refused_environment_is_chosen_leniently_one_problem_per_setting() {
    let env = EnvConfig {
        backend: Some("umwait".into()),
        disable: Some("umwiat,futex".into()),
        ..EnvConfig::default()
    };
    let caps = caps_with(2, false);
    assert!(select(&caps, &env).is_err());
    let (sel, problems) = select_leniently(&caps, &env);
    assert_eq!(sel.backend, Backend::Spin, "futex stays turned off");
    assert!(sel.disabled.contains(&Backend::Futex));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("MWAIT_DISABLE=umwiat,futex: unknown backend `umwiat`"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("MWAIT_BACKEND=umwait: this machine does not offer it"),
        "{problems:?}"
    );
    let typo = EnvConfig {
        backend: Some("fuutex".into()),
        ..EnvConfig::default()
    };
    let (sel, problems) = select_leniently(&caps, &typo);
    assert_eq!(sel.backend, Backend::Futex);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("MWAIT_BACKEND=fuutex: unknown backend"));
}
