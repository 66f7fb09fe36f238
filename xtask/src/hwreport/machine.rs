//! What the report says about the machine: the CPUID dump of
//! `examples/cpuid_dump.rs` decoded, `/proc/cpuinfo`, the kernel, `umwait_control`
//! and `/dev/mwait`, and from them which hardware tier the machine offers.

use std::collections::BTreeMap;

/// A CPUID dump in the format of `crates/mwait/tests/cpuid/*.txt`: one line per
/// leaf, `leaf subleaf eax ebx ecx edx` in hex, `#` comments.
#[derive(Debug, Default, Clone)]
pub struct Cpuid {
    leaves: BTreeMap<(u32, u32), [u32; 4]>,
}

/// Register indexes of a leaf, in the dump's order.
const EAX: usize = 0;
const EBX: usize = 1;
const ECX: usize = 2;
const EDX: usize = 3;

impl Cpuid {
    /// Reads a dump; lines that are not six hex words are skipped.
    pub fn parse(text: &str) -> Cpuid {
        let mut leaves = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            let w: Vec<u32> = line
                .split_whitespace()
                .filter_map(|t| u32::from_str_radix(t, 16).ok())
                .collect();
            if let [leaf, sub, a, b, c, d] = w[..] {
                leaves.insert((leaf, sub), [a, b, c, d]);
            }
        }
        Cpuid { leaves }
    }

    /// Whether the dump holds any leaf.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    fn reg(&self, leaf: u32, reg: usize) -> Option<u32> {
        self.leaves.get(&(leaf, 0)).map(|r| r[reg])
    }

    /// Bit `bit` of register `reg` of `leaf` (subleaf 0); `None` when the leaf is
    /// not in the dump (the CPU does not report it).
    fn bit(&self, leaf: u32, reg: usize, bit: u32) -> Option<bool> {
        self.reg(leaf, reg).map(|v| (v >> bit) & 1 == 1)
    }

    /// The vendor string of leaf 0 (`GenuineIntel`, `AuthenticAMD`).
    pub fn vendor(&self) -> Option<String> {
        let r = self.leaves.get(&(0, 0))?;
        Some(ascii(&[r[EBX], r[EDX], r[ECX]]))
    }

    /// The brand string of leaves 0x8000_0002..=0x8000_0004, trimmed; `None` when
    /// absent or empty (some hypervisors leave it blank).
    pub fn brand(&self) -> Option<String> {
        let mut regs = Vec::new();
        for leaf in 0x8000_0002..=0x8000_0004 {
            regs.extend_from_slice(self.leaves.get(&(leaf, 0))?);
        }
        Some(ascii(&regs)).filter(|s| !s.is_empty())
    }

    /// Family, model and stepping as the CPU's documentation numbers them: the
    /// extended family is added to a base family of 0xF, and the extended model is
    /// the high nibble of the model for families 6 and 0xF and up.
    pub fn family_model_stepping(&self) -> Option<(u32, u32, u32)> {
        let a = self.reg(1, EAX)?;
        let base_family = (a >> 8) & 0xF;
        let family = if base_family == 0xF {
            base_family + ((a >> 20) & 0xFF)
        } else {
            base_family
        };
        let base_model = (a >> 4) & 0xF;
        let model = if base_family == 6 || base_family == 0xF {
            base_model | (((a >> 16) & 0xF) << 4)
        } else {
            base_model
        };
        Some((family, model, a & 0xF))
    }

    /// `CPUID.1:ECX[3]`: MONITOR/MWAIT (what the kernel tier executes in ring 0).
    pub fn monitor(&self) -> Option<bool> {
        self.bit(1, ECX, 3)
    }

    /// `CPUID.(7,0):ECX[5]`: WAITPKG (UMONITOR/UMWAIT/TPAUSE).
    pub fn waitpkg(&self) -> Option<bool> {
        self.bit(7, ECX, 5)
    }

    /// `CPUID.8000_0001:ECX[29]`: MONITORX (MONITORX/MWAITX).
    pub fn monitorx(&self) -> Option<bool> {
        self.bit(0x8000_0001, ECX, 29)
    }

    /// `CPUID.8000_0007:EDX[8]`: invariant TSC.
    pub fn invariant_tsc(&self) -> Option<bool> {
        self.bit(0x8000_0007, EDX, 8)
    }

    /// `CPUID.1:ECX[31]`: running under a hypervisor.
    pub fn hypervisor_bit(&self) -> Option<bool> {
        self.bit(1, ECX, 31)
    }

    /// The hypervisor's signature in leaf 0x4000_0000 (`KVMKVMKVM`, `Microsoft Hv`,
    /// `VMwareVMware`, ...), when the hypervisor bit is set and the dump has it.
    pub fn hypervisor_vendor(&self) -> Option<String> {
        if self.hypervisor_bit() != Some(true) {
            return None;
        }
        let r = self.leaves.get(&(0x4000_0000, 0))?;
        Some(ascii(&[r[EBX], r[ECX], r[EDX]])).filter(|s| !s.is_empty())
    }
}

/// The bytes of `regs` (little-endian, as CPUID stores text) up to the first NUL,
/// trimmed.
fn ascii(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

/// The fields of the first processor of `/proc/cpuinfo` the report shows.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CpuInfo {
    /// `model name`.
    pub model_name: Option<String>,
    /// `cpu family`, `model`, `stepping`, in decimal as the kernel prints them.
    pub family_model_stepping: Option<(u32, u32, u32)>,
    /// `microcode` (missing in many guests and when not readable).
    pub microcode: Option<String>,
    /// The `flags` word list.
    pub flags: Vec<String>,
}

/// The `/proc/cpuinfo` flags that bear on the tiers, as the kernel names them:
/// `monitor` (MONITOR/MWAIT), `mwaitx` (AMD's MONITORX), `waitpkg` (UMWAIT),
/// the TSC's, and `hypervisor`.
pub const FLAGS_OF_INTEREST: &[&str] = &[
    "monitor",
    "mwaitx",
    "waitpkg",
    "constant_tsc",
    "nonstop_tsc",
    "hypervisor",
];

impl CpuInfo {
    /// Reads the first processor's block.
    pub fn parse(text: &str) -> CpuInfo {
        let mut info = CpuInfo::default();
        let mut fms = [None; 3];
        for line in text.lines() {
            if line.trim().is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "model name" => info.model_name = Some(v.to_string()),
                "cpu family" => fms[0] = v.parse().ok(),
                "model" => fms[1] = v.parse().ok(),
                "stepping" => fms[2] = v.parse().ok(),
                "microcode" => info.microcode = Some(v.to_string()),
                "flags" => info.flags = v.split_whitespace().map(str::to_string).collect(),
                _ => {}
            }
        }
        if let [Some(f), Some(m), Some(s)] = fms {
            info.family_model_stepping = Some((f, m, s));
        }
        info
    }

    /// Whether the kernel lists `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// A hardware tier of the ladder, as `MWAIT_BACKEND` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Umwait,
    Mwaitx,
    Kernel,
}

impl Tier {
    /// Every hardware tier, in the order the report lists them.
    pub const ALL: [Tier; 3] = [Tier::Umwait, Tier::Mwaitx, Tier::Kernel];

    /// The `MWAIT_BACKEND` value.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Umwait => "umwait",
            Tier::Mwaitx => "mwaitx",
            Tier::Kernel => "kernel",
        }
    }
}

/// Whether the machine offers a tier, and the facts that decide it.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The tier.
    pub tier: Tier,
    /// CPUID (or, without a dump, `/proc/cpuinfo`) reports the instructions, and for
    /// the kernel tier `/dev/mwait` exists.
    pub offered: bool,
    /// The facts, e.g. `CPUID.(7,0):ECX[5] WAITPKG = 0`.
    pub why: String,
}

/// The facts that decide the offers; a CPUID bit missing from the dump falls back
/// to the kernel's flag.
#[derive(Debug, Clone, Default)]
pub struct OfferFacts {
    /// The decoded CPUID dump (empty when the dump could not be taken).
    pub cpuid: Cpuid,
    /// `/proc/cpuinfo`.
    pub cpuinfo: CpuInfo,
    /// Whether `/dev/mwait` exists.
    pub dev_mwait: bool,
}

impl OfferFacts {
    /// One CPUID bit: from the dump, else from the kernel's flag, described.
    fn bit(&self, from_cpuid: Option<bool>, cpuid_name: &str, flag: &str) -> (bool, String) {
        match from_cpuid {
            Some(b) => (b, format!("{cpuid_name} = {}", b as u8)),
            None => {
                let b = self.cpuinfo.has(flag);
                (
                    b,
                    format!(
                        "no CPUID dump; /proc/cpuinfo {} `{flag}`",
                        if b { "lists" } else { "lacks" }
                    ),
                )
            }
        }
    }

    /// Which tiers the machine offers, one per tier in [`Tier::ALL`] order.
    pub fn offers(&self) -> Vec<Offer> {
        Tier::ALL
            .iter()
            .map(|&tier| {
                let (offered, why) = match tier {
                    Tier::Umwait => self.bit(
                        self.cpuid.waitpkg(),
                        "CPUID.(7,0):ECX[5] WAITPKG",
                        "waitpkg",
                    ),
                    Tier::Mwaitx => self.bit(
                        self.cpuid.monitorx(),
                        "CPUID.8000_0001h:ECX[29] MONITORX",
                        "mwaitx",
                    ),
                    Tier::Kernel => {
                        let (m, why) =
                            self.bit(self.cpuid.monitor(), "CPUID.1:ECX[3] MONITOR", "monitor");
                        let dev = if self.dev_mwait {
                            "/dev/mwait present"
                        } else {
                            "/dev/mwait absent (module not loaded)"
                        };
                        (m && self.dev_mwait, format!("{why}, {dev}"))
                    }
                };
                Offer { tier, offered, why }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::project_root;

    fn dump(name: &str) -> Cpuid {
        let path = project_root().join(format!("crates/mwait/tests/cpuid/{name}.txt"));
        Cpuid::parse(&std::fs::read_to_string(&path).unwrap())
    }

    #[test]
    fn decodes_the_sapphire_rapids_dump() {
        let c = dump("intel-sapphire-rapids");
        assert_eq!(c.vendor().as_deref(), Some("GenuineIntel"));
        assert_eq!(c.family_model_stepping(), Some((6, 0x8F, 8)));
        assert_eq!(c.brand().as_deref(), Some("Intel(R) Xeon(R) w7-2475X"));
        assert_eq!(c.waitpkg(), Some(true));
        assert_eq!(c.monitor(), Some(true));
        assert_eq!(c.monitorx(), Some(false));
        assert_eq!(c.invariant_tsc(), Some(true));
        assert_eq!(c.hypervisor_vendor(), None);
    }

    #[test]
    fn decodes_the_amd_guest_dump() {
        let c = dump("amd-epyc-kvm-guest-this-machine");
        assert_eq!(c.vendor().as_deref(), Some("AuthenticAMD"));
        // 0x00800f12: base family 0xF + extended 0x8 = 0x17, model 0x01, stepping 2.
        assert_eq!(c.family_model_stepping(), Some((0x17, 0x01, 2)));
        assert_eq!(c.brand().as_deref(), Some("AMD EPYC"));
        assert_eq!(c.hypervisor_vendor().as_deref(), Some("KVMKVMKVM"));
        assert_eq!(
            (c.monitor(), c.waitpkg(), c.monitorx()),
            (Some(false), Some(false), Some(false))
        );
    }

    #[test]
    fn a_missing_leaf_is_unknown_not_zero() {
        let c = Cpuid::parse("# only leaf 0\n00000000 00 00000001 756e6547 6c65746e 49656e69\n");
        assert!(!c.is_empty());
        assert_eq!(c.waitpkg(), None);
        assert_eq!(c.brand(), None);
        assert_eq!(c.family_model_stepping(), None);
        assert!(Cpuid::parse("not a dump\n1 2 3\n").is_empty());
    }

    #[test]
    fn cpuinfo_first_processor_is_read() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\
                    model\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n\
                    microcode\t: 0x1000065\nflags\t\t: fpu monitor mwaitx hypervisor\n\n\
                    processor\t: 1\nmodel name\t: other\n";
        let i = CpuInfo::parse(text);
        assert_eq!(i.model_name.as_deref(), Some("AMD EPYC"));
        assert_eq!(i.family_model_stepping, Some((25, 17, 1)));
        assert_eq!(i.microcode.as_deref(), Some("0x1000065"));
        assert!(i.has("mwaitx") && i.has("hypervisor") && !i.has("waitpkg"));
    }

    #[test]
    fn offers_follow_cpuid_and_dev_mwait() {
        let mut f = OfferFacts {
            cpuid: dump("intel-sapphire-rapids"),
            cpuinfo: CpuInfo::default(),
            dev_mwait: false,
        };
        let o = f.offers();
        assert_eq!(
            o.iter().map(|o| o.offered).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert!(o[0].why.contains("WAITPKG = 1"), "{}", o[0].why);
        assert!(o[2].why.contains("/dev/mwait absent"), "{}", o[2].why);
        f.dev_mwait = true;
        assert!(
            f.offers()[2].offered,
            "MONITOR and /dev/mwait: the kernel tier"
        );

        let guest = OfferFacts {
            cpuid: dump("amd-epyc-kvm-guest-this-machine"),
            cpuinfo: CpuInfo::default(),
            dev_mwait: true,
        };
        assert!(guest.offers().iter().all(|o| !o.offered));
        assert!(guest.offers()[1].why.contains("MONITORX = 0"));
    }

    #[test]
    fn without_a_dump_the_kernel_flags_decide() {
        let f = OfferFacts {
            cpuid: Cpuid::default(),
            cpuinfo: CpuInfo::parse("flags\t: fpu mwaitx\n"),
            dev_mwait: false,
        };
        let o = f.offers();
        assert!(!o[0].offered && o[1].offered && !o[2].offered);
        assert!(o[1].why.contains("lists `mwaitx`"), "{}", o[1].why);
    }
}
