//! Decoding CPUID leaves that both detection and the TSC code read (x86-64, the
//! loom model included: CPUID is pure data).

/// The TSC rate in Hz that CPUID states: leaf 0x15 (crystal × ratio; most Intel CPUs
/// since Skylake), else leaf 0x16's base frequency; `None` when the CPU does not say
/// (AMD never does).
pub(crate) fn tsc_hz_from_cpuid<R: raw_cpuid::CpuIdReader>(raw: &R) -> Option<u64> {
    let max_leaf = raw.cpuid1(0).eax;
    if max_leaf >= 0x15 {
        let r = raw.cpuid1(0x15);
        // EAX: denominator, EBX: numerator, ECX: crystal Hz (0 when not enumerated).
        if r.eax != 0 && r.ebx != 0 && r.ecx != 0 {
            return Some(u64::from(r.ecx) * u64::from(r.ebx) / u64::from(r.eax));
        }
    }
    if max_leaf >= 0x16 {
        // Leaf 0x16 EAX is the base frequency in MHz; on CPUs with an invariant TSC the
        // TSC runs at (about) the base frequency. Only a fallback: leaf 0x15 is exact.
        let mhz = raw.cpuid1(0x16).eax & 0xffff;
        if mhz != 0 {
            return Some(u64::from(mhz) * 1_000_000);
        }
    }
    None
}

/// This CPU's CPUID. Under Miri, which cannot execute the instruction, a CPU that
/// answers every leaf with zeros: no vendor, no leaves, so no hardware wait.
#[cfg(not(miri))]
pub(crate) fn native_reader() -> impl raw_cpuid::CpuIdReader {
    raw_cpuid::CpuIdReaderNative
}

/// This CPU's CPUID. Under Miri, which cannot execute the instruction, a CPU that
/// answers every leaf with zeros: no vendor, no leaves, so no hardware wait.
#[cfg(miri)]
pub(crate) fn native_reader() -> impl raw_cpuid::CpuIdReader {
    |_leaf: u32, _subleaf: u32| raw_cpuid::CpuIdResult {
        eax: 0,
        ebx: 0,
        ecx: 0,
        edx: 0,
    }
}
