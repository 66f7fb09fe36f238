//! Detection through CPUID, on the one architecture that has it: the
//! [`Capabilities`] constructors that read it, and the fields that take more than one
//! CPUID bit.

use super::{sys, Capabilities, OsFacts, Vendor};

impl Capabilities {
    /// Decodes what the waits read ([`Capabilities::for_waits`]) from a CPUID
    /// reader and OS facts, from leaves 0, 1, 7, 0x8000_0000 and 0x8000_0001; the
    /// fields that only describe the CPU are left empty, and
    /// [`Capabilities::with_details_from`] fills them. This is the pure part of
    /// detection: tests feed both recorded CPUID dumps.
    pub(crate) fn waits_from_cpuid<R: raw_cpuid::CpuIdReader>(
        reader: R,
        os: OsFacts,
    ) -> Capabilities {
        let r = Reading::new(reader);
        let feat = r.cpuid.get_feature_info();
        Capabilities {
            vendor: vendor(&r.cpuid),
            family_model_stepping: feat.as_ref().map_or((0, 0, 0), family_model_stepping),
            hypervisor: feat.as_ref().is_some_and(|f| f.has_hypervisor()),
            monitor_mwait: feat.as_ref().is_some_and(|f| f.has_monitor_mwait()),
            // Leaf 7 subleaf 0 ECX[5]; raw-cpuid's `get_extended_feature_info`
            // would read subleaf 1 too, one more CPUID for nothing here.
            waitpkg: r.max_leaf >= 7 && r.raw.cpuid2(7, 0).ecx & WAITPKG != 0,
            monitorx: r.max_ext >= 0x8000_0001
                && r.cpuid
                    .get_extended_processor_and_feature_identifiers()
                    .is_some_and(|f| f.has_monitorx_mwaitx()),
            ..Capabilities::without_cpuid(os)
        }
    }

    /// These capabilities with the fields that describe the CPU beside what the
    /// waits read: the brand string, the hypervisor's signature, leaf 5's monitor
    /// facts, the invariant TSC and the TSC rate (up to eight more CPUID leaves,
    /// each an exit to the hypervisor in a guest).
    pub(crate) fn with_details_from<R: raw_cpuid::CpuIdReader>(self, reader: R) -> Capabilities {
        let r = Reading::new(reader);
        let leaf5 = if r.max_leaf >= 5 {
            r.cpuid.get_monitor_mwait_info()
        } else {
            None
        };
        Capabilities {
            brand: brand(&r.cpuid, r.max_ext),
            hypervisor_vendor: if self.hypervisor {
                hypervisor_vendor(&r.raw)
            } else {
                None
            },
            monitor_line: leaf5.as_ref().and_then(monitor_line),
            mwait_substates: leaf5.as_ref().and_then(|m| mwait_substates(m, &r.raw)),
            mwait_interrupt_break: leaf5
                .as_ref()
                .is_some_and(|m| m.interrupts_as_break_event()),
            tsc_invariant: r.max_ext >= 0x8000_0007
                && r.cpuid
                    .get_advanced_power_mgmt_info()
                    .is_some_and(|p| p.has_invariant_tsc()),
            tsc_hz_cpuid: sys::x86::cpuid::tsc_hz_from_cpuid(&r.raw),
            ..self
        }
    }

    /// What the waits read of this CPU's capabilities.
    pub(super) fn native(os: OsFacts) -> Capabilities {
        Capabilities::waits_from_cpuid(sys::x86::cpuid::native_reader(), os)
    }

    /// This CPU's details beside what the waits read.
    pub(super) fn with_details(self) -> Capabilities {
        self.with_details_from(sys::x86::cpuid::native_reader())
    }
}

use raw_cpuid::{CpuId, CpuIdReader, FeatureInfo, MonitorMwaitInfo};

/// A reader, raw-cpuid's decoder over it, and the highest basic and extended
/// leaves it reports.
struct Reading<R: CpuIdReader> {
    raw: R,
    cpuid: CpuId<R>,
    max_leaf: u32,
    max_ext: u32,
}

impl<R: CpuIdReader> Reading<R> {
    fn new(reader: R) -> Reading<R> {
        let raw = reader.clone();
        Reading {
            max_leaf: raw.cpuid1(0).eax,
            max_ext: raw.cpuid1(0x8000_0000).eax,
            cpuid: CpuId::with_cpuid_reader(reader),
            raw,
        }
    }
}

/// CPUID.(EAX=7, ECX=0):ECX\[5\], WAITPKG (UMONITOR, UMWAIT, TPAUSE).
const WAITPKG: u32 = 1 << 5;

/// The vendor named by leaf 0.
pub(super) fn vendor<R: CpuIdReader>(cpuid: &CpuId<R>) -> Vendor {
    let vendor_str = cpuid
        .get_vendor_info()
        .map(|v| v.as_str().to_string())
        .unwrap_or_default();
    match vendor_str.as_str() {
        "GenuineIntel" => Vendor::Intel,
        "AuthenticAMD" | "HygonGenuine" => Vendor::Amd,
        _ => Vendor::Other(vendor_str.clone()),
    }
}

/// The brand string of leaves 0x8000_0002..4, trimmed; empty when the CPU has
/// fewer extended leaves (`max_ext`).
pub(super) fn brand<R: CpuIdReader>(cpuid: &CpuId<R>, max_ext: u32) -> String {
    if max_ext >= 0x8000_0004 {
        cpuid
            .get_processor_brand_string()
            .map(|b| b.as_str().trim().to_string())
            .unwrap_or_default()
    } else {
        String::new()
    }
}

/// Display family, model and stepping from leaf 1 (Intel SDM vol. 2, CPUID
/// leaf 1; AMD's rule is the same): the extended family adds to a base family of
/// 0xf, the extended model prefixes the model for base families 6 and 0xf.
/// Computed here in `u32`, so that any leaf 1 a reader returns gives a value:
/// `FeatureInfo::family_id` adds in `u8`, which overflows for extended families
/// from 0xf1 (no real CPU, but `Capabilities::waits_from_cpuid` takes any reader).
pub(super) fn family_model_stepping(feat: &FeatureInfo) -> (u32, u32, u32) {
    let base_family = u32::from(feat.base_family_id());
    let family = if base_family == 0xf {
        base_family + u32::from(feat.extended_family_id())
    } else {
        base_family
    };
    let base_model = u32::from(feat.base_model_id());
    let model = if base_family == 0x6 || base_family == 0xf {
        (u32::from(feat.extended_model_id()) << 4) | base_model
    } else {
        base_model
    };
    (family, model, u32::from(feat.stepping_id()))
}

/// The hypervisor's vendor signature from leaf 0x4000_0000, or `None` when it is
/// blank.
pub(super) fn hypervisor_vendor<R: CpuIdReader>(raw: &R) -> Option<String> {
    let r = raw.cpuid1(0x4000_0000);
    let mut b = Vec::with_capacity(12);
    for w in [r.ebx, r.ecx, r.edx] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let s: String = String::from_utf8_lossy(&b)
        .trim_end_matches('\0')
        .trim()
        .to_string();
    (!s.is_empty()).then_some(s)
}

/// The smallest and largest monitor line of leaf 5, when it reports them.
pub(super) fn monitor_line(leaf5: &MonitorMwaitInfo) -> Option<(u16, u16)> {
    (leaf5.largest_monitor_line() != 0)
        .then(|| (leaf5.smallest_monitor_line(), leaf5.largest_monitor_line()))
}

/// The MWAIT sub-states per C-state of leaf 5 EDX, when leaf 5 has its
/// extensions.
pub(super) fn mwait_substates<R: CpuIdReader>(
    leaf5: &MonitorMwaitInfo,
    raw: &R,
) -> Option<[u8; 8]> {
    if !leaf5.extensions_supported() {
        return None;
    }
    let edx = raw.cpuid1(5).edx;
    let mut s = [0u8; 8];
    for (i, v) in s.iter_mut().enumerate() {
        *v = ((edx >> (4 * i)) & 0xf) as u8;
    }
    Some(s)
}
