//! The 64-bit atomic that waits on `AtomicU64` words use: loom's in the model, so
//! that the model checker sees every access to such a word, core's elsewhere. It
//! stands beside `primitive::AtomicU32` and belongs with it.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::AtomicU64;
