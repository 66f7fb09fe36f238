//! `cargo run --example cpuid_dump > my-cpu.txt`: prints the CPUID leaves that mwait's
//! detection reads, in the format of `crates/mwait/tests/cpuid/*.txt`, so that a
//! machine's dump can be added to the detection tests.

fn main() {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid_count;
        // Only leaves up to the reported maxima are read.
        let leaf = |l: u32, s: u32| __cpuid_count(l, s);
        let max = leaf(0, 0).eax;
        let max_ext = leaf(0x8000_0000, 0).eax;
        let hv = (leaf(1, 0).ecx >> 31) & 1 == 1;
        println!("# leaf subleaf eax ebx ecx edx (hex); recorded by examples/cpuid_dump.rs");
        let mut leaves: Vec<(u32, u32)> = [0u32, 1, 5, 7, 0x15, 0x16]
            .into_iter()
            .filter(|&l| l <= max)
            .map(|l| (l, 0))
            .collect();
        if hv {
            leaves.push((0x4000_0000, 0));
        }
        leaves.extend(
            (0x8000_0000u32..=0x8000_0007)
                .filter(|&l| l <= max_ext)
                .map(|l| (l, 0)),
        );
        for (l, s) in leaves {
            let r = leaf(l, s);
            println!(
                "{l:08x} {s:02x} {:08x} {:08x} {:08x} {:08x}",
                r.eax, r.ebx, r.ecx, r.edx
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("no CPUID on this architecture");
}
