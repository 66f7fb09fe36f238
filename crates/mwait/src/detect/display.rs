//! The text of [`Capabilities`]' `Display`: one line per fact, in sections.

use super::{Capabilities, Vendor, MIDR_PATH, UMWAIT_CONTROL};
use crate::sys;
use std::fmt;

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_cpu(f)?;
        if sys::HAS_X86_WAITS || self.read_from_cpuid() {
            self.fmt_monitor(f)?;
            self.fmt_tsc(f)?;
        }
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
        if self.read_from_cpuid() {
            let (fam, model, step) = self.family_model_stepping;
            writeln!(
                f,
                "cpu:               {vendor} {:?} (family {fam:#x}, model {model:#x}, stepping {step})",
                self.brand
            )?;
        } else {
            // No CPUID (another architecture): the name of the architecture; an
            // AArch64 CPU's identity is its MIDR, in its own section.
            writeln!(f, "cpu:               {vendor}")?;
        }
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

    /// Whether these capabilities name a CPU that CPUID described: a vendor, a
    /// brand, or a family, model and stepping. Not those of a CPU without CPUID
    /// ([`Capabilities::without_cpuid`]), whose x86 rows would all read "no" and
    /// "not reported" for an instruction set it does not have.
    fn read_from_cpuid(&self) -> bool {
        !matches!(self.vendor, Vendor::Other(_))
            || !self.brand.is_empty()
            || self.family_model_stepping != (0, 0, 0)
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
