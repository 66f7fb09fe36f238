//! The x86-64 instructions and their capability tokens (`x86_64.rs`; stand-ins in
//! `none.rs`, whose tokens cannot be built, elsewhere and in the loom model), RDTSC
//! and the TSC rate (`tsc.rs`), CPUID decoding and this CPU's CPUID reader
//! (`cpuid.rs`, on every target: decoding is pure data), and the `/dev/mwait`
//! calls ([`dev_mwait`]: `dev_mwait.rs` on Linux x86-64, `no_dev_mwait.rs`
//! elsewhere).

pick! {
    #[cfg(all(target_arch = "x86_64", not(mwait_loom)))] x86_64,
    _ => none,
}

pub(crate) mod cpuid;
#[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
pub(crate) mod tsc;

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(mwait_loom)))]
pub(crate) mod dev_mwait;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(mwait_loom))))]
pub(crate) mod no_dev_mwait;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(mwait_loom))))]
pub(crate) use no_dev_mwait as dev_mwait;
