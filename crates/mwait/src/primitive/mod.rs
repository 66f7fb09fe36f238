//! The synchronization primitives the protocol uses, in two whole worlds (the
//! crossbeam-utils and tokio pattern): `std.rs`, the real build's atomics, mutex,
//! spin hint and constants, and `loom.rs`, loom's, so that the model checker sees
//! every access. Each world provides the same items; nothing else in the crate
//! names loom.
//!
//! The switch is the crate's own `cfg(mwait_loom)` (as crossbeam has
//! `crossbeam_loom`), not the global `cfg(loom)`: a user crate that loom-tests its
//! own code with `--cfg loom` gets the real mwait, whose constructors stay `const fn`
//! (a `static` `WaitCell` compiles). The models run with
//! `RUSTFLAGS="--cfg mwait_loom" cargo test -p mwait --release --lib -- tests::loom_`.

#[cfg(not(mwait_loom))]
#[path = "std.rs"]
mod world;
#[cfg(mwait_loom)]
#[path = "loom.rs"]
mod world;

pub(crate) use world::{
    array_of, compiler_fence, const_fn_unless_loom, fence, loom_sc_fence, model_tests,
    process_static, spin_hint, thread_tests, yield_now, AtomicU32, AtomicU64, Mutex, Ordering,
    FENCED_IDLE_NOTIFIES, RELAY_FANOUT, SPIN_ROUND_LOADS_CAP, TABLE_BUCKETS,
};
