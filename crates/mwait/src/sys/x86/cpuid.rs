//! Decoding CPUID leaves that both detection and the TSC code read, and this CPU's
//! reader. The decoding is pure data and builds on every target (tests decode
//! recorded dumps anywhere); only x86-64 has a CPU to read.

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

/// This CPU's CPUID reader, where the architecture has the instruction: x86-64's
/// [`native_reader`]; `None` elsewhere (AArch64 detects through the auxiliary
/// vector).
#[cfg(target_arch = "x86_64")]
pub(crate) fn this_cpu() -> Option<impl raw_cpuid::CpuIdReader> {
    Some(native_reader())
}

/// No CPUID on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn this_cpu() -> Option<fn(u32, u32) -> raw_cpuid::CpuIdResult> {
    None
}

#[cfg(target_arch = "x86_64")]
pub(crate) use native::native_reader;

/// The instruction's reader, memoized: x86-64 only.
#[cfg(target_arch = "x86_64")]
mod native {
    /// A CPUID reader that asks `inner` once per leaf and subleaf and answers repeats
    /// from `seen`, which its clones share. Under a hypervisor every CPUID instruction
    /// exits to it (4–10 µs apiece on the 2-vCPU guests), and detection, the
    /// barrier's checks, the details and the TSC code ask for some of the same leaves
    /// (raw-cpuid's decoder, which the details use, reads leaves 0 and 0x8000_0000 for
    /// itself), the first two in the first wait of a process, on the waiting thread's
    /// time (the figures: `docs/design-notes.md` and
    /// `docs/benchmarks.md`).
    #[derive(Clone)]
    pub(crate) struct Memo<'a, R> {
        inner: R,
        seen: &'a std::sync::Mutex<Vec<Answer>>,
    }

    /// A leaf and subleaf, and what the CPU answered.
    type Answer = ((u32, u32), raw_cpuid::CpuIdResult);

    impl<'a, R: raw_cpuid::CpuIdReader> Memo<'a, R> {
        pub(crate) fn new(inner: R, seen: &'a std::sync::Mutex<Vec<Answer>>) -> Memo<'a, R> {
            Memo { inner, seen }
        }
    }

    impl<R: raw_cpuid::CpuIdReader> raw_cpuid::CpuIdReader for Memo<'_, R> {
        fn cpuid2(&self, eax: u32, ecx: u32) -> raw_cpuid::CpuIdResult {
            // The list holds plain answers that no panic can leave half-written.
            let mut seen = self
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((_, r)) = seen.iter().find(|(k, _)| *k == (eax, ecx)) {
                return *r;
            }
            let r = self.inner.cpuid2(eax, ecx);
            seen.push(((eax, ecx), r));
            r
        }
    }

    /// This CPU's CPUID, each leaf and subleaf executed once per process (a [`Memo`]
    /// over the instruction). The leaves read are the same on every CPU: none of their
    /// per-CPU fields, such as leaf 1's APIC ID, is read.
    #[cfg(not(miri))]
    pub(crate) fn native_reader() -> impl raw_cpuid::CpuIdReader {
        static SEEN: std::sync::Mutex<Vec<Answer>> = std::sync::Mutex::new(Vec::new());
        Memo::new(raw_cpuid::CpuIdReaderNative, &SEEN)
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
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::native::Memo;
    use raw_cpuid::{CpuIdReader, CpuIdResult};
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn a_memo_asks_each_leaf_once_and_answers_as_its_reader() {
        let asked = Rc::new(Cell::new(0));
        let a = asked.clone();
        let reader = move |leaf: u32, sub: u32| {
            a.set(a.get() + 1);
            CpuIdResult {
                eax: leaf,
                ebx: sub,
                ecx: leaf ^ sub,
                edx: 7,
            }
        };
        let seen = std::sync::Mutex::new(Vec::new());
        let memo = Memo::new(reader.clone(), &seen);
        let clone = memo.clone();
        for (leaf, sub) in [(0, 0), (1, 0), (0, 0), (7, 1), (7, 0), (7, 1)] {
            assert_eq!(memo.cpuid2(leaf, sub), reader.cpuid2(leaf, sub));
            assert_eq!(clone.cpuid2(leaf, sub), reader.cpuid2(leaf, sub));
        }
        // Four distinct leaves through the memo, six direct reads above.
        assert_eq!(asked.get(), 4 + 6 * 2);
    }
}
