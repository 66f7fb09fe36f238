//! Raw ABI of the `/dev/mwait` kernel shim, mirroring
//! `kmod/include/uapi/linux/mwait.h`.
//!
//! The structures and constants are generated from that header by bindgen
//! (`cargo xtask codegen`) and checked in as `src/bindings.rs`, so building this
//! crate needs neither bindgen nor libclang; `cargo xtask codegen --check` (a
//! step of `cargo xtask test`) fails when the checked-in file drifts from the
//! header. bindgen cannot expand the
//! `_IOR`/`_IOWR` ioctl macros (rust-bindgen #753), so the opcodes are computed
//! here by hand from the generated struct sizes. The test `tests/abi.rs` checks
//! every constant, struct size, field offset and opcode against what a C
//! compiler computes from the header.
#![no_std]

// The generated names follow C (`mwait_info`, `__u32`), and bindgen documents
// only what the header documents: the structures, not the fields or macros. The
// items are re-exported one by one below, with documentation; an item that a
// new header adds is unused until it is re-exported here, and the `dead_code`
// lint (an error under CI's `-D warnings`) points at it.
#[allow(non_camel_case_types, missing_docs)]
mod bindings;

/// The uapi `__u32`: `u32` on every target.
pub use bindings::__u32;
/// The uapi `__u64`: `u64` on every target.
pub use bindings::__u64;

/// The ABI version this crate speaks.
pub use bindings::MWAIT_ABI_VERSION;
/// `mwait_info.flags` bit: MONITOR/MWAIT is usable on this machine.
pub use bindings::MWAIT_INFO_USABLE;
/// The ioctl type byte (0xE7).
pub use bindings::MWAIT_IOC_MAGIC;
/// The word changed.
pub use bindings::MWAIT_REASON_CHANGED;
/// The deadline passed.
pub use bindings::MWAIT_REASON_DEADLINE;
/// The scheduler needs the CPU: park on a futex instead of calling again.
pub use bindings::MWAIT_REASON_RESCHED;
/// A signal is pending: written back, and the ioctl is restarted after a stop or
/// an `SA_RESTART` handler, or fails with `EINTR` after a handler without it.
pub use bindings::MWAIT_REASON_SIGNAL;
/// Every flag `MWAIT_IOC_WAIT` accepts (none yet).
pub use bindings::MWAIT_WAIT_FLAGS_ALL;

pub use bindings::mwait_info;
pub use bindings::mwait_wait;

// The Linux generic ioctl encoding used on x86: nr in bits 0..8, type in
// 8..16, size in 16..30, direction (1 = write, 2 = read) in 30..32.
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | (MWAIT_IOC_MAGIC << 8) | nr
}

/// `MWAIT_IOC_INFO`: `_IOR(MWAIT_IOC_MAGIC, 0, struct mwait_info)`.
pub const MWAIT_IOC_INFO: u32 = ioc(IOC_READ, 0, core::mem::size_of::<mwait_info>());
/// `MWAIT_IOC_WAIT`: `_IOWR(MWAIT_IOC_MAGIC, 1, struct mwait_wait)`.
pub const MWAIT_IOC_WAIT: u32 = ioc(IOC_READ | IOC_WRITE, 1, core::mem::size_of::<mwait_wait>());
