//! Every `asm!` of the crate, and the capability tokens that make them safe to call.

#[cfg(all(target_arch = "x86_64", not(loom)))]
pub(crate) mod x86_64;
