//! Raw ABI of the `/dev/mwait` kernel shim (`kmod/include/uapi/linux/mwait.h`).
//!
//! The bindings are generated offline by `cargo xtask codegen` and checked in.
#![no_std]
