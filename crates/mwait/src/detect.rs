//! What this machine offers: CPUID, the OS's UMWAIT limits, the kernel shim, CPUs;
//! on AArch64, the auxiliary vector's `AT_HWCAP`/`AT_HWCAP2` and the MIDR.
//!
//! Detection runs once per process and is cached: what the waits read first
//! ([`Capabilities::for_waits`]), the rest when a caller asks for all of it
//! ([`Capabilities::detect`]). The CPUID part is a pure function of a
//! [`CpuIdReader`](raw_cpuid::CpuIdReader) ([`Capabilities::waits_from_cpuid`], then
//! [`Capabilities::with_details_from`]), so the selection logic is unit-tested on
//! recorded CPUID dumps of other CPUs (`select/tests.rs`).
//!
//! The AArch64 part is a pure function of the recorded words too
//! ([`Capabilities::from_hwcaps`] of a [`Hwcaps`]), so that the rule that offers the
//! WFE tier is tested on any machine.
//!
//! Only CPUID (on AArch64, the auxiliary vector) decides whether an instruction may
//! be used. A SIGILL probe is not trusted: some guests *execute* MWAITX although
//! CPUID hides it, and trap it (`docs/hardware-results.md`).

use crate::sys;
use std::fmt;
use std::sync::OnceLock;

/// CPU vendor, from CPUID leaf 0.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD` (or `HygonGenuine`, which shares AMD's extensions).
    Amd,
    /// Anything else, with its vendor string.
    Other(String),
}

/// The Linux limits on UMWAIT/TPAUSE, from `/sys/devices/system/cpu/umwait_control/`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UmwaitControl {
    /// `max_time`: the longest UMWAIT/TPAUSE the OS allows, in TSC ticks (0: no limit).
    pub max_time_tsc: u32,
    /// `enable_c02`: whether C0.2 may be entered; when false, a C0.2 request gets C0.1.
    pub c02_enabled: bool,
}

/// Facts that come from the operating system rather than from CPUID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OsFacts {
    /// `umwait_control` when the kernel exposes it.
    pub umwait_control: Option<UmwaitControl>,
    /// Whether `/dev/mwait` (the kernel shim) exists.
    pub dev_mwait: bool,
    /// How many CPUs this process may use: the online CPUs within its cgroup's cpuset
    /// (`cpuset.cpus.effective`), at most its CPU quota (`cpu.max`, rounded up to
    /// whole CPUs), at least 1. Not any thread's affinity mask: a thread that pinned
    /// itself before the first wait does not make the process a one-CPU process.
    pub usable_cpus: usize,
}

impl OsFacts {
    /// Reads the facts of the running system but `umwait_control`, which is `None`
    /// here: [`detect_now`] reads it where CPUID reports WAITPKG.
    pub(crate) fn read() -> OsFacts {
        OsFacts {
            umwait_control: None,
            dev_mwait: sys::host::exists("/dev/mwait"),
            usable_cpus: usable_cpus(),
        }
    }
}

/// Everything the backend choice and the default policy depend on.
///
/// # Examples
///
/// ```
/// let caps = mwait::Capabilities::detect();
/// println!("{caps}");
/// assert!(caps.usable_cpus >= 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// CPU vendor.
    pub vendor: Vendor,
    /// Brand string (CPUID 0x8000_0002..4), trimmed; empty when absent.
    pub brand: String,
    /// Display family, model and stepping (CPUID leaf 1).
    pub family_model_stepping: (u32, u32, u32),
    /// CPUID leaf 1 ECX\[31\]: running under a hypervisor.
    pub hypervisor: bool,
    /// The hypervisor's vendor signature (leaf 0x4000_0000), e.g. `KVMKVMKVM`.
    pub hypervisor_vendor: Option<String>,
    /// CPUID leaf 1 ECX\[3\]: MONITOR/MWAIT (ring 0 only on Intel).
    pub monitor_mwait: bool,
    /// CPUID leaf 5: smallest and largest monitor line size in bytes.
    pub monitor_line: Option<(u16, u16)>,
    /// CPUID leaf 5 EDX: MWAIT sub-states per C-state, C0 to C7 (4 bits each).
    pub mwait_substates: Option<[u8; 8]>,
    /// CPUID leaf 5 ECX\[1\]: MWAIT can treat interrupts as break events even when masked.
    pub mwait_interrupt_break: bool,
    /// CPUID leaf 7.0 ECX\[5\]: UMONITOR/UMWAIT/TPAUSE.
    pub waitpkg: bool,
    /// CPUID 0x8000_0001 ECX\[29\]: MONITORX/MWAITX (AMD).
    pub monitorx: bool,
    /// CPUID 0x8000_0007 EDX\[8\]: the TSC runs at a constant rate in all states.
    pub tsc_invariant: bool,
    /// TSC frequency in Hz from CPUID leaf 0x15 (or 0x16's base frequency); `None`
    /// when the CPU does not say (AMD never does): then it is calibrated.
    pub tsc_hz_cpuid: Option<u64>,
    /// The OS's UMWAIT limits.
    pub umwait_control: Option<UmwaitControl>,
    /// Whether `/dev/mwait` exists.
    pub dev_mwait: bool,
    /// CPUs this process may use: the online CPUs within the cgroup's cpuset and
    /// CPU quota, not the calling thread's affinity mask.
    pub usable_cpus: usize,
    /// AArch64 `AT_HWCAP` `HWCAP_EVTSTRM`: the kernel runs the generic timer's event
    /// stream, so every WFE ends within its period (about 100 µs).
    pub event_stream: bool,
    /// AArch64 `AT_HWCAP2` `HWCAP2_WFXT`: WFET, a WFE with a deadline (Armv8.7).
    pub wfxt: bool,
    /// AArch64 `MIDR_EL1` of CPU 0 (implementer, part, revision), from sysfs; `None`
    /// elsewhere or where the kernel does not expose it.
    pub midr: Option<u64>,
}

/// `HWCAP_EVTSTRM`, bit 2 of `AT_HWCAP` on arm64 (Linux
/// `arch/arm64/include/uapi/asm/hwcap.h`: `#define HWCAP_EVTSTRM (1 << 2)`).
pub(crate) const HWCAP_EVTSTRM: u64 = 1 << 2;
/// `HWCAP2_WFXT`, bit 31 of `AT_HWCAP2` on arm64 (same header, since Linux 5.19:
/// `#define HWCAP2_WFXT (1UL << 31)`); glibc's libc crate does not define it yet.
pub(crate) const HWCAP2_WFXT: u64 = 1 << 31;
/// Where Linux exposes CPU 0's `MIDR_EL1` (a hexadecimal number).
const MIDR_PATH: &str = "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1";

/// The AArch64 facts as read: the auxiliary vector's two capability words and the
/// MIDR. All zero (and no MIDR) off AArch64 Linux; tests build recorded ones.
// Read on every target but x86-64, whose detection is CPUID (its tests build them).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hwcaps {
    /// `getauxval(AT_HWCAP)`.
    pub hwcap: u64,
    /// `getauxval(AT_HWCAP2)`.
    pub hwcap2: u64,
    /// `MIDR_EL1` from sysfs.
    pub midr: Option<u64>,
}

// x86-64 detects with CPUID and never reads these.
#[cfg(not(target_arch = "x86_64"))]
impl Hwcaps {
    /// This process's words (zero off AArch64 Linux) and CPU 0's MIDR.
    pub(crate) fn read() -> Hwcaps {
        let (hwcap, hwcap2) = sys::arm::auxv_hwcaps();
        let midr = if sys::HAS_ARM_WAITS {
            sys::host::read(MIDR_PATH).and_then(|s| parse_hex(&s))
        } else {
            None
        };
        Hwcaps {
            hwcap,
            hwcap2,
            midr,
        }
    }
}

/// A hexadecimal number as sysfs writes it (`0x00000000410fd0c0`).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
}

static FOR_WAITS: OnceLock<Capabilities> = OnceLock::new();
static DETECTED: OnceLock<Capabilities> = OnceLock::new();

impl Capabilities {
    /// Detects this machine's capabilities once and returns the cached result.
    pub fn detect() -> &'static Capabilities {
        DETECTED.get_or_init(|| Capabilities::for_waits().clone().with_details())
    }

    /// What the waits read of [`Capabilities::detect`], detected once: every field
    /// the backend choice, the budgets and the ladder read is the same, and the
    /// fields that only describe the CPU (the brand string, the hypervisor's
    /// signature, leaf 5's facts, the invariant TSC, the TSC rate) are left empty.
    /// A fresh process's first wait thus executes five CPUID leaves for detection
    /// instead of up to thirteen (about 4 µs each in a guest, where each one exits
    /// to the hypervisor); `detect` reads the rest when a caller asks for them.
    pub(crate) fn for_waits() -> &'static Capabilities {
        FOR_WAITS.get_or_init(detect_now)
    }

    /// Capabilities of a target without CPUID: no hardware wait at all.
    pub(crate) fn without_cpuid(os: OsFacts) -> Capabilities {
        Capabilities {
            vendor: Vendor::Other(std::env::consts::ARCH.to_string()),
            brand: String::new(),
            family_model_stepping: (0, 0, 0),
            hypervisor: false,
            hypervisor_vendor: None,
            monitor_mwait: false,
            monitor_line: None,
            mwait_substates: None,
            mwait_interrupt_break: false,
            waitpkg: false,
            monitorx: false,
            tsc_invariant: false,
            tsc_hz_cpuid: None,
            umwait_control: os.umwait_control,
            dev_mwait: os.dev_mwait,
            usable_cpus: os.usable_cpus,
            event_stream: false,
            wfxt: false,
            midr: None,
        }
    }

    /// Capabilities of an AArch64 CPU from its auxiliary vector's words and MIDR.
    /// This is the pure part of AArch64 detection: tests feed it recorded words.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub(crate) fn from_hwcaps(h: Hwcaps, os: OsFacts) -> Capabilities {
        Capabilities {
            event_stream: h.hwcap & HWCAP_EVTSTRM != 0,
            wfxt: h.hwcap2 & HWCAP2_WFXT != 0,
            midr: h.midr,
            ..Capabilities::without_cpuid(os)
        }
    }
}

/// The running system's capabilities. `umwait_control` is read only where CPUID
/// reports WAITPKG: Linux makes the directory only on such CPUs
/// (`arch/x86/kernel/cpu/umwait.c`), and elsewhere the failed look-up would cost a
/// fresh process's first wait about 7 µs on the 2-vCPU guest.
fn detect_now() -> Capabilities {
    let mut caps = Capabilities::native(OsFacts::read());
    if caps.waitpkg {
        caps.umwait_control = read_umwait_control();
    }
    caps
}

/// Detection through CPUID, on the one architecture that has it: the
/// [`Capabilities`] constructors that read it, and the fields that take more than one
/// CPUID bit.
#[cfg(target_arch = "x86_64")]
mod leaves {
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
        pub(crate) fn with_details_from<R: raw_cpuid::CpuIdReader>(
            self,
            reader: R,
        ) -> Capabilities {
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
}

/// No CPUID here: the auxiliary vector (AArch64 Linux; all zero elsewhere), read
/// whole for the waits.
#[cfg(not(target_arch = "x86_64"))]
impl Capabilities {
    fn native(os: OsFacts) -> Capabilities {
        Capabilities::from_hwcaps(Hwcaps::read(), os)
    }

    fn with_details(self) -> Capabilities {
        self
    }
}

const UMWAIT_CONTROL: &str = "/sys/devices/system/cpu/umwait_control";

fn read_umwait_control() -> Option<UmwaitControl> {
    let read = |f: &str| -> Option<u64> {
        sys::host::read(&format!("{UMWAIT_CONTROL}/{f}"))?
            .trim()
            .parse()
            .ok()
    };
    Some(UmwaitControl {
        max_time_tsc: u32::try_from(read("max_time")?).unwrap_or(u32::MAX),
        c02_enabled: read("enable_c02")? != 0,
    })
}

/// CPUs this process may use (at least 1): the online CPUs within its cgroup's cpuset
/// and CPU quota, never the calling thread's affinity mask (`sys::usable_cpus`).
pub(crate) fn usable_cpus() -> usize {
    sys::usable_cpus()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl Capabilities {
    /// Whether these are this CPU's own capabilities, as [`Capabilities::detect`]
    /// or [`Capabilities::for_waits`] found them (the fields are public: a caller
    /// may build or edit any).
    pub(crate) fn are_this_cpus(&self) -> bool {
        let waits = Capabilities::for_waits();
        std::ptr::eq(self, waits) || self == waits || self == Capabilities::detect()
    }
}

/// The capability tokens' proof: an instruction is reported only when these
/// capabilities are this CPU's detected ones, never on the word of a caller's copy.
#[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
impl sys::CpuidWaits for Capabilities {
    fn waitpkg(&self) -> bool {
        self.waitpkg && self.are_this_cpus()
    }

    fn monitorx(&self) -> bool {
        self.monitorx && self.are_this_cpus()
    }
}

/// The same proof for the AArch64 token, from the auxiliary vector.
#[cfg(all(target_arch = "aarch64", target_os = "linux", not(mwait_loom)))]
impl sys::HwcapWaits for Capabilities {
    fn event_stream(&self) -> bool {
        self.event_stream && self.are_this_cpus()
    }

    fn wfxt(&self) -> bool {
        self.wfxt && self.are_this_cpus()
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_cpu(f)?;
        self.fmt_monitor(f)?;
        self.fmt_tsc(f)?;
        if sys::HAS_ARM_WAITS || self.event_stream || self.wfxt || self.midr.is_some() {
            self.fmt_arm(f)?;
        }
        self.fmt_os(f)
    }
}

/// The sections of the [`Capabilities`] display, one line per fact.
impl Capabilities {
    /// The CPU, the hypervisor and the usable CPUs.
    fn fmt_cpu(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vendor = match &self.vendor {
            Vendor::Intel => "Intel".to_string(),
            Vendor::Amd => "AMD".to_string(),
            Vendor::Other(s) => s.clone(),
        };
        let (fam, model, step) = self.family_model_stepping;
        writeln!(
            f,
            "cpu:               {vendor} {:?} (family {fam:#x}, model {model:#x}, stepping {step})",
            self.brand
        )?;
        writeln!(
            f,
            "hypervisor:        {}{}",
            yes_no(self.hypervisor),
            self.hypervisor_vendor
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default()
        )?;
        writeln!(f, "usable cpus:       {}", self.usable_cpus)
    }

    /// The monitor instructions: MONITOR/MWAIT with leaf 5, WAITPKG, MONITORX.
    fn fmt_monitor(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "MONITOR/MWAIT:     {} (CPUID.1:ECX[3]; ring 0 only)",
            yes_no(self.monitor_mwait)
        )?;
        match self.monitor_line {
            Some((lo, hi)) => writeln!(f, "monitor line:      {lo}..{hi} bytes (CPUID.5)")?,
            None => writeln!(f, "monitor line:      not reported (CPUID.5)")?,
        }
        if let Some(s) = self.mwait_substates {
            writeln!(f, "MWAIT sub-states:  C0..C7 = {s:?}")?;
        }
        writeln!(
            f,
            "WAITPKG:           {} (CPUID.7.0:ECX[5]; UMONITOR/UMWAIT/TPAUSE)",
            yes_no(self.waitpkg)
        )?;
        writeln!(
            f,
            "MONITORX:          {} (CPUID.8000_0001:ECX[29]; MONITORX/MWAITX)",
            yes_no(self.monitorx)
        )
    }

    /// Whether the TSC is invariant, and its rate where CPUID states it.
    fn fmt_tsc(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "invariant TSC:     {} (CPUID.8000_0007:EDX[8])",
            yes_no(self.tsc_invariant)
        )?;
        match self.tsc_hz_cpuid {
            Some(hz) => writeln!(f, "TSC rate (CPUID):  {:.3} MHz", hz as f64 / 1e6),
            None => writeln!(
                f,
                "TSC rate (CPUID):  not reported (calibrated when needed)"
            ),
        }
    }

    /// The AArch64 facts: the event stream, WFET, the MIDR, and whether the WFE tier
    /// is offered (or why not).
    fn fmt_arm(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "event stream:      {} (AT_HWCAP HWCAP_EVTSTRM; ends every WFE within about 100 us)",
            yes_no(self.event_stream)
        )?;
        writeln!(
            f,
            "WFET:              {} (AT_HWCAP2 HWCAP2_WFXT; a WFE with a deadline)",
            yes_no(self.wfxt)
        )?;
        match self.midr {
            Some(m) => writeln!(
                f,
                "MIDR_EL1:          {m:#010x} (implementer {:#04x}{}, part {:#05x}, variant {}, revision {})",
                (m >> 24) & 0xff,
                implementer_name((m >> 24) & 0xff)
                    .map(|n| format!(" {n}"))
                    .unwrap_or_default(),
                (m >> 4) & 0xfff,
                (m >> 20) & 0xf,
                m & 0xf
            )?,
            None => writeln!(f, "MIDR_EL1:          not readable ({MIDR_PATH})")?,
        }
        match self.wfe_missing() {
            None => writeln!(f, "wfe tier:          offered"),
            Some(why) => writeln!(f, "wfe tier:          not offered: {why}"),
        }
    }

    /// The OS's facts: `umwait_control` and `/dev/mwait` (the last line, unterminated).
    fn fmt_os(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.umwait_control {
            Some(c) => writeln!(
                f,
                "umwait_control:    max_time {} TSC ticks, enable_c02 {}{}",
                c.max_time_tsc,
                c.c02_enabled as u8,
                if c.c02_enabled {
                    ""
                } else {
                    " (C0.2 requests become C0.1)"
                }
            )?,
            None => writeln!(f, "umwait_control:    absent ({UMWAIT_CONTROL})")?,
        }
        write!(f, "/dev/mwait:        {}", yes_no(self.dev_mwait))
    }
}

/// The MIDR implementer codes of the server and desktop CPUs that run Linux (Arm
/// ARM, "MIDR_EL1, Main ID Register").
fn implementer_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x41 => "Arm",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// `yes` or `no`.
fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
