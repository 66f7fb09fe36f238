//! Raw ABI of the `/dev/mwait` kernel shim: bindings generated from
//! `kmod/include/uapi/linux/mwait.h` and the ioctl opcodes.
//!
//! **Empty for now.** The kernel shim (its uapi header, the module, the generated
//! bindings and the kernel tier of `mwait`) is not built yet; this crate holds the
//! place the workspace layout gives it and exports nothing, and `mwait` does not
//! depend on it.
#![no_std]
