//! The AArch64 exclusive-monitor wait (LDAXR, WFE, WFET, CLREX) and its capability
//! token, with the generic timer's counter (`aarch64.rs`, Linux only, where the
//! auxiliary vector says what the CPU offers; stand-ins in `none.rs` elsewhere and in
//! the loom model).

pick! {
    #[cfg(all(target_arch = "aarch64", target_os = "linux", not(mwait_loom)))] aarch64,
    _ => none,
}
