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
use std::sync::OnceLock;

mod display;
mod leaves;

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
    /// whole CPUs), at least 1; 0 where it was not read ([`OsFacts::read`]). Not any
    /// thread's affinity mask: a thread that pinned itself before the first wait
    /// does not make the process a one-CPU process.
    pub usable_cpus: usize,
}

impl OsFacts {
    /// Reads the facts of the running system but three, left absent here:
    /// `umwait_control`, which [`detect_now`] reads where CPUID reports WAITPKG,
    /// `dev_mwait`, which it looks up where CPUID reports MONITOR, and
    /// `usable_cpus`, left 0, which [`process_cpus`] reads when something first
    /// needs it.
    pub(crate) fn read() -> OsFacts {
        OsFacts {
            umwait_control: None,
            dev_mwait: false,
            usable_cpus: 0,
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
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hwcaps {
    /// `getauxval(AT_HWCAP)`.
    pub hwcap: u64,
    /// `getauxval(AT_HWCAP2)`.
    pub hwcap2: u64,
    /// `MIDR_EL1` from sysfs.
    pub midr: Option<u64>,
}

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
fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).ok()
}

static FOR_WAITS: OnceLock<Capabilities> = OnceLock::new();
static DETECTED: OnceLock<Capabilities> = OnceLock::new();

impl Capabilities {
    /// Detects this machine's capabilities once and returns the cached result.
    pub fn detect() -> &'static Capabilities {
        DETECTED.get_or_init(|| {
            let mut caps = Capabilities::for_waits().clone().with_details();
            caps.usable_cpus = process_cpus();
            // The waits looked for it where CPUID has MONITOR; the report wants it
            // everywhere.
            if !caps.monitor_mwait {
                caps.dev_mwait = dev_mwait_exists();
            }
            caps
        })
    }

    /// What the waits read of [`Capabilities::detect`], detected once: every field
    /// the backend choice, the budgets and the ladder read is the same, and the
    /// fields that only describe the CPU (the brand string, the hypervisor's
    /// signature, leaf 5's facts, the invariant TSC, the TSC rate) are left empty.
    /// A fresh process's first wait thus executes four CPUID leaves for detection
    /// (0, 1, 7 and 0x8000_0001) instead of up to thirteen (in a guest each one
    /// exits to the hypervisor); `detect` reads the rest when a caller asks for
    /// them. The count of usable CPUs is not read here either: it is 0 in this copy,
    /// and [`process_cpus`] reads it when a wait first needs it.
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
    pub(crate) fn from_hwcaps(h: Hwcaps, os: OsFacts) -> Capabilities {
        Capabilities {
            event_stream: h.hwcap & HWCAP_EVTSTRM != 0,
            wfxt: h.hwcap2 & HWCAP2_WFXT != 0,
            midr: h.midr,
            ..Capabilities::without_cpuid(os)
        }
    }
}

/// The running system's capabilities, with two look-ups only where CPUID makes them
/// matter, each a file a fresh process's first wait would otherwise look for in vain:
///
/// - `umwait_control`, where CPUID reports WAITPKG: Linux makes the directory only
///   on such CPUs (`arch/x86/kernel/cpu/umwait.c`);
/// - `/dev/mwait`, where CPUID reports MONITOR: the kernel tier needs both (on a CPU
///   without MONITOR the module loads but fails every wait with `EOPNOTSUPP`:
///   `kmod/mwait.c`, `mwait_unusable`). [`Capabilities::detect`] looks it up
///   everywhere, to report it.
fn detect_now() -> Capabilities {
    let mut caps = Capabilities::native(OsFacts::read());
    if caps.waitpkg {
        caps.umwait_control = read_umwait_control();
    }
    if caps.monitor_mwait {
        caps.dev_mwait = dev_mwait_exists();
    }
    caps
}

/// Whether the kernel shim's device node exists.
fn dev_mwait_exists() -> bool {
    sys::host::exists("/dev/mwait")
}

impl Capabilities {
    /// What the waits read of this CPU's capabilities: CPUID where the architecture
    /// has it, else the auxiliary vector (AArch64 Linux; all zero elsewhere), read
    /// whole.
    fn native(os: OsFacts) -> Capabilities {
        match sys::x86::cpuid::this_cpu() {
            Some(reader) => Capabilities::waits_from_cpuid(reader, os),
            None => Capabilities::from_hwcaps(Hwcaps::read(), os),
        }
    }

    /// This CPU's details beside what the waits read: CPUID's descriptive leaves,
    /// where there is CPUID (the auxiliary vector was read whole).
    fn with_details(self) -> Capabilities {
        match sys::x86::cpuid::this_cpu() {
            Some(reader) => self.with_details_from(reader),
            None => self,
        }
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

/// How many CPUs this process may use (at least 1): the online CPUs within its
/// cgroup's cpuset and CPU quota, never the calling thread's affinity mask
/// (`sys::usable_cpus`), read at the first call and kept. It is read apart from the
/// rest of detection because it is most of what detection costs (the kernel's open
/// and read of the cgroup's files: 40–70 µs of a fresh process's CPU in a guest,
/// `docs/benchmarks.md`), and a process whose waits rarely spin and never catch (a
/// consumer fed every millisecond) never needs it. What needs it: the first spin
/// that catches its partner (a cell that catches spins whatever the run-queue gate
/// says, `ladder/adapt.rs`, `Caught::note`); the gate's first reading, which a
/// process takes only once its waits spin often enough for a reading to pay
/// (`ladder/load.rs`); a policy that spins without adapting; a waiter that parks
/// beside a wake tree's fan-out of others (`MonitorLine::park`); moving a thread
/// apart; [`Capabilities::detect`], [`selection`](crate::selection) and
/// [`prepare`](crate::prepare). The waits ask through `policy::usable_cpus`, which
/// turns the automatic spin off from then on where the count is one.
pub(crate) fn process_cpus() -> usize {
    *CPUS.get_or_init(|| {
        sys::usable_cpus()
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// [`process_cpus`] if it has been read, else `None`: nothing is read.
pub(crate) fn process_cpus_if_read() -> Option<usize> {
    CPUS.get().copied()
}

static CPUS: OnceLock<usize> = OnceLock::new();

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
