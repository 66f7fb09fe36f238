//! Detection through CPUID: the [`Capabilities`] constructors that decode a reader
//! (this CPU's on x86-64, a recorded dump in tests on any target), and the fields
//! that take more than one CPUID bit.

use super::{sys, Capabilities, OsFacts, Vendor};

impl Capabilities {
    /// Decodes what the waits read ([`Capabilities::for_waits`]) from a CPUID
    /// reader and OS facts, from leaves 0, 1, 7 and 0x8000_0001; the fields that
    /// only describe the CPU are left empty, and [`Capabilities::with_details_from`]
    /// fills them. This is the pure part of detection: tests feed both recorded
    /// CPUID dumps.
    ///
    /// The leaves are decoded here rather than through raw-cpuid's `CpuId`, which
    /// reads leaf 0x8000_0000 as it is built: under a hypervisor each CPUID is an
    /// exit (4–10 µs apiece on the 2-vCPU guests), paid by a process's first wait,
    /// and that leaf is not needed: every CPU that runs 64-bit code has leaf
    /// 0x8000_0001, where it reports long mode (both vendors' manuals; Linux refuses
    /// to boot without it).
    pub(crate) fn waits_from_cpuid<R: raw_cpuid::CpuIdReader>(
        reader: R,
        os: OsFacts,
    ) -> Capabilities {
        let leaf0 = reader.cpuid1(0);
        let max_leaf = leaf0.eax;
        let leaf1 = (max_leaf >= 1).then(|| reader.cpuid1(1));
        let ecx1 = leaf1.map_or(0, |l| l.ecx);
        Capabilities {
            vendor: vendor(leaf0),
            family_model_stepping: leaf1.map_or((0, 0, 0), |l| family_model_stepping(l.eax)),
            hypervisor: ecx1 & HYPERVISOR != 0,
            monitor_mwait: ecx1 & MONITOR != 0,
            waitpkg: max_leaf >= 7 && reader.cpuid2(7, 0).ecx & WAITPKG != 0,
            monitorx: reader.cpuid1(0x8000_0001).ecx & MONITORX != 0,
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
}

use raw_cpuid::{CpuId, CpuIdReader, MonitorMwaitInfo};

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

/// CPUID.1:ECX\[3\], MONITOR/MWAIT (ring 0 only on Linux).
const MONITOR: u32 = 1 << 3;
/// CPUID.1:ECX\[31\], set by hypervisors for their guests.
const HYPERVISOR: u32 = 1 << 31;
/// CPUID.(EAX=7, ECX=0):ECX\[5\], WAITPKG (UMONITOR, UMWAIT, TPAUSE).
const WAITPKG: u32 = 1 << 5;
/// CPUID.8000_0001:ECX\[29\], MONITORX/MWAITX (AMD).
const MONITORX: u32 = 1 << 29;

/// The vendor named by leaf 0: the twelve bytes of EBX, EDX and ECX.
fn vendor(leaf0: raw_cpuid::CpuIdResult) -> Vendor {
    let mut b = [0u8; 12];
    for (i, w) in [leaf0.ebx, leaf0.edx, leaf0.ecx].into_iter().enumerate() {
        b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    match std::str::from_utf8(&b) {
        Ok("GenuineIntel") => Vendor::Intel,
        Ok("AuthenticAMD" | "HygonGenuine") => Vendor::Amd,
        Ok(other) => Vendor::Other(other.to_string()),
        Err(_) => Vendor::Other(String::from_utf8_lossy(&b).into_owned()),
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

/// Display family, model and stepping from leaf 1's EAX (Intel SDM vol. 2, CPUID
/// leaf 1; AMD's rule is the same): the extended family adds to a base family of
/// 0xf, the extended model prefixes the model for base families 6 and 0xf.
/// Computed in `u32`, so that any leaf 1 a reader returns gives a value (extended
/// families from 0xf1 overflow a `u8`: no real CPU has one, but
/// `Capabilities::waits_from_cpuid` takes any reader).
fn family_model_stepping(eax: u32) -> (u32, u32, u32) {
    let field = |shift: u32, bits: u32| (eax >> shift) & ((1 << bits) - 1);
    let base_family = field(8, 4);
    let family = if base_family == 0xf {
        base_family + field(20, 8)
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xf {
        (field(16, 4) << 4) | field(4, 4)
    } else {
        field(4, 4)
    };
    (family, model, field(0, 4))
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
